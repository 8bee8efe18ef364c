import type { StateModel } from '../model/state-model';

/**
 * What the exporter reads from: the native engine in-process (`run`) or an attached cuzk
 * daemon (`attach`). Data flows one way: source -> model -> exporter.
 */
export interface MetricsSource {
  readonly model: StateModel;
  readonly source: 'run' | 'attach';
  readonly backend: string;
  /** Brings the model up to date now (pending events applied). Throws on failure. */
  refresh(): void;
  /** The model's clock in ns (running intervals are measured against it). */
  nowNs(): number;
  /** The status snapshot to serve at /status (cuzk shape), or null if none yet. */
  statusBody(): Record<string, unknown> | null;
  /** Age of that snapshot in seconds (0 for the in-process engine). */
  snapshotAgeSeconds(): number;
  /** Ready: the source answers and has at least one GPU. */
  ready(): { ok: boolean; reason: string };
  /**
   * Time totals including running intervals, read atomically from the source when it keeps
   * its own (the native engine's counters): exact and monotonic at any instant, where a
   * model clock read could land between an event's timestamp and its ingestion. Null or
   * absent: the model's event-derived totals are used.
   */
  runningTotals?(): RunningTotals | null;
  /**
   * The job id (the whole string the prover knows the job by) of a model job handle, or
   * undefined when it is not known (any more). Only called when a histogram is observed
   * (OpenMetrics exemplars), never per event.
   */
  jobId?(handle: number): string | undefined;
  /**
   * The surfaces the source reads, sorted by name, and whether each answered at its last
   * poll (attach: status, grpc, timeline). Absent: one surface, "engine" (run mode), up as
   * the model is.
   */
  surfaceStates?(): { name: string; up: boolean; degraded?: string[] }[];
  /** How attached jobs' proof kinds became known, by evidence (cuzk_exporter_kind_resolutions_total). */
  kindResolutions?(): Iterable<[string, number]>;
  /** Fields the source adds to the `exporter` object of /status (attach: surfaces, surfaces_disagree). */
  exporterStatus?(): Record<string, unknown>;
}

/** Per worker slot / GPU slot, ns, including intervals running at nowNs. */
export interface RunningTotals {
  nowNs: number;
  workerBusyNs: ArrayLike<number>;
  gpuLockHeldNs: ArrayLike<number>;
  gpuStarvedNs: ArrayLike<number>;
}
