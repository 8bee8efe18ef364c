/**
 * Gauges and counters of DESIGN §5, produced from the StateModel at each collection.
 *
 * They are an OpenTelemetry MetricProducer rather than observable instruments, on purpose:
 *  - exact values: an observable counter under cumulative temporality is rebuilt by the SDK
 *    as a sum of float differences (v1 + (v2 - v1) + ...), which drifts by ulps from the
 *    value we observed; a counter here is the model's own total, to the nanosecond;
 *  - series follow their subject: the SDK keeps every attribute set it ever saw, so a
 *    worker gone after a daemon restart would be exported forever; here a series exists
 *    exactly while the model's topology has its subject;
 *  - cost: no attribute hashing per data point (DESIGN §5 "Where the time goes").
 * The histograms come from the model's typed arrays too (histograms.ts), in a scope of
 * their own placed first, where the SDK put the instruments they replaced.
 */
import { DEGRADED_REASONS } from '../engine/sources/attach/evidence-watch';
import type { Attributes, HrTime } from '@opentelemetry/api';
import { ValueType } from '@opentelemetry/api';
import {
  AggregationTemporality,
  CollectionResult,
  DataPoint,
  DataPointType,
  MetricData,
  MetricProducer,
} from '@opentelemetry/sdk-metrics';
import type { Resource } from '@opentelemetry/resources';
import { KIND_LABELS, LIVE_PARTITION_STATES, LIVE_STATE_NAMES, MISMATCH_REASONS, OTHER_KIND_INDEX, PROOF_KINDS } from '../engine/model/kinds';
import type { RunningTotals } from '../engine/sources/source';
import type { StateModel } from '../engine/model/state-model';
import { histogramMetrics } from './histograms';

export interface SourceInfo {
  version: string;
  /** `run` (native engine) or `attach` (a cuzk daemon). */
  source: string;
  backend: string;
}

/** What the producer needs from the running source at collection time. */
export interface ProducerContext {
  model: StateModel;
  info: SourceInfo;
  /** Model clock (ns) at this collection: running intervals are counted up to it. */
  nowNs(): number;
  /** The source's own atomic totals, when it has them (see MetricsSource.runningTotals). */
  runningTotals(): RunningTotals | null;
  /** Seconds the previous collection took (cuzk_exporter_scrape_duration_seconds). */
  lastCollectSeconds(): number;
  resource: Resource;
  /** The source's surfaces (MetricsSource.surfaceStates); absent: [{engine, up as the model}]. */
  surfaces?(): { name: string; up: boolean; degraded?: string[] }[];
  /** Attach: how jobs' kinds became known, by evidence. */
  kindResolutions?(): Iterable<[string, number]>;
  /** Scope of the model's histograms (the meter the SDK instruments came from); absent: not exported. */
  histogramScope?: { name: string; version?: string; schemaUrl?: string };
}

/** ns -> s by division (correctly rounded; multiplying by 1e-9 is not). */
const NS_PER_S = 1e9;
const SCOPE = { name: 'cuzk-exporter' };

function hrNow(): HrTime {
  const ms = Date.now();
  return [Math.floor(ms / 1000), (ms % 1000) * 1e6];
}

type Point = DataPoint<number>;

/** The per-topology attribute objects, built once per topology version. */
interface Labels {
  version: number;
  workers: Attributes[];
  gpus: Attributes[];
  gpuInfo: Attributes[];
}

export class StateMetricProducer implements MetricProducer {
  private readonly startTime = hrNow();
  private labels: Labels | null = null;
  private readonly kindAttrs = KIND_LABELS.map((k) => ({ proof_kind: k }));
  private readonly kindStateAttrs = KIND_LABELS.map((k) =>
    LIVE_STATE_NAMES.map((s) => ({ proof_kind: k, state: s })),
  );
  private readonly reasonAttrs = MISMATCH_REASONS.map((reason) => ({ reason }));

  constructor(private readonly ctx: ProducerContext) {}

  private topologyLabels(): Labels {
    const m = this.ctx.model;
    if (this.labels && this.labels.version === m.topologyVersion) return this.labels;
    const t = m.topology;
    this.labels = {
      version: m.topologyVersion,
      // An attached daemon seen only through TIMELINE does not say which GPU a worker is on.
      workers: t.workers.map((w) => ({ gpu: w.gpu < 0 ? 'unknown' : String(w.gpu), worker: String(w.id) })),
      gpus: t.gpus.map((g) => ({ gpu: String(g.ordinal) })),
      gpuInfo: t.gpus.map((g) => {
        const a: Attributes = { gpu: String(g.ordinal), name: g.name };
        if (g.uuid) a.uuid = g.uuid;
        if (g.pciBusId) a.pci_bus_id = g.pciBusId;
        return a;
      }),
    };
    return this.labels;
  }

  async collect(): Promise<CollectionResult> {
    const scopeMetrics = [{ scope: SCOPE, metrics: this.metrics() }];
    const hs = this.ctx.histogramScope;
    if (hs) {
      // Only histograms with a series, and no scope at all without one, as the SDK did.
      const h = histogramMetrics(this.ctx.model.histograms, hrNow());
      if (h.length > 0) scopeMetrics.unshift({ scope: hs, metrics: h });
    }
    return { resourceMetrics: { resource: this.ctx.resource, scopeMetrics }, errors: [] };
  }

  /** Builds every gauge and counter from the model, synchronously. */
  metrics(): MetricData[] {
    const m = this.ctx.model;
    // Counters of time come from the source's atomic read when it has one (native engine);
    // otherwise from the model at the source's clock. Gauges always from the model.
    const totals = this.ctx.runningTotals();
    const now = totals ? totals.nowNs : this.ctx.nowNs();
    const nW = m.topology.workers.length;
    const nG = m.topology.gpus.length;
    const useW = totals !== null && totals.workerBusyNs.length === nW;
    const useG = totals !== null && totals.gpuLockHeldNs.length === nG && totals.gpuStarvedNs.length === nG;
    const busyNs = (w: number) => (useW ? totals!.workerBusyNs[w] : m.workerBusyNsAt(w, now));
    const heldNs = (g: number) => (useG ? totals!.gpuLockHeldNs[g] : m.gpuLockHeldNsAt(g, now));
    const starvedNs = (g: number) => (useG ? totals!.gpuStarvedNs[g] : m.gpuStarvedNsAt(g, now));
    const startTime = this.startTime;
    const endTime = hrNow();
    const L = this.topologyLabels();
    const out: MetricData[] = [];
    const pt = (attributes: Attributes, value: number): Point => ({ startTime, endTime, attributes, value });
    const gauge = (name: string, description: string, dataPoints: Point[]) =>
      out.push({
        descriptor: { name, description, unit: '', valueType: ValueType.DOUBLE },
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.GAUGE,
        dataPoints,
      });
    const counter = (name: string, description: string, dataPoints: Point[]) =>
      out.push({
        descriptor: { name, description, unit: '', valueType: ValueType.DOUBLE },
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.SUM,
        isMonotonic: true,
        dataPoints,
      });
    // Canonical kinds always (so failure/throughput queries have series at 0); the
    // overflow kind only once something was folded into it.
    const kinds: number[] = PROOF_KINDS.map((_, i) => i);
    if (this.kindUsed(OTHER_KIND_INDEX)) kinds.push(OTHER_KIND_INDEX);
    const perKind = (arr: ArrayLike<number>, divisor = 1) => kinds.map((k) => pt(this.kindAttrs[k], arr[k] / divisor));
    const nWorkers = m.topology.workers.length;
    const nGpus = m.topology.gpus.length;
    const perWorker = (f: (w: number) => number) => {
      const pts = new Array<Point>(nWorkers);
      for (let w = 0; w < nWorkers; w++) pts[w] = pt(L.workers[w], f(w));
      return pts;
    };
    const perGpu = (f: (g: number) => number) => {
      const pts = new Array<Point>(nGpus);
      for (let g = 0; g < nGpus; g++) pts[g] = pt(L.gpus[g], f(g));
      return pts;
    };

    const surfaces = this.ctx.surfaces?.() ?? [{ name: 'engine', up: m.up }];
    gauge('cuzk_up', 'Whether the source (native engine or attached cuzk daemon) answered at the last collection (1) or not (0); attached: 1 only while every attached surface is up.', [pt({}, m.up ? 1 : 0)]);
    gauge('cuzk_surface_up', 'Whether each surface of the source answered at its last poll (1) or not (0): status, grpc, timeline when attached; engine in run mode.', surfaces.map((s) => pt({ surface: s.name }, s.up ? 1 : 0)));
    if (this.ctx.surfaces) {
      // Attach: the fixed reasons a surface can be degraded for (evidence-watch.ts), 0 or 1.
      const deg: Point[] = [];
      for (const s of surfaces) for (const r of DEGRADED_REASONS[s.name] ?? []) deg.push(pt({ surface: s.name, reason: r }, s.degraded?.includes(r) ? 1 : 0));
      if (deg.length > 0) gauge('cuzk_surface_degraded', "Whether an attached surface lacks evidence because of how cuzk is configured (1): timeline no_lines (pipeline.enabled=false), split_prove_off (CUZK_DISABLE_SPLIT_PROVE=1), batched (max_batch_size > 1); status no_pipelines.", deg);
    }
    const kr = this.ctx.kindResolutions ? [...this.ctx.kindResolutions()] : [];
    if (kr.length > 0) counter('cuzk_exporter_kind_resolutions_total', 'Attached jobs whose proof kind became known, by evidence: timeline, status, grpc_status, request_id (Curio\'s id conventions), partition_index, grpc_metrics, unresolved (counted under "other").', kr.map(([e, n]) => pt({ evidence: e }, n)));
    gauge('cuzk_exporter_build_info', 'Build and source information of this exporter; always 1. surfaces: the surfaces read, comma-joined.', [
      pt({ version: this.ctx.info.version, source: this.ctx.info.source, backend: this.ctx.info.backend, surfaces: surfaces.map((s) => s.name).join(',') }, 1),
    ]);
    gauge('cuzk_gpu_info', 'GPU identity; always 1. Join on gpu for names/uuids; other metrics carry only gpu/worker.', L.gpuInfo.map((a) => pt(a, 1)));
    gauge('cuzk_gpu_worker_busy', 'Whether the GPU worker owns a partition now (1) or is idle (0), exact at collection time.', perWorker((w) => m.wBusy[w]));
    counter('cuzk_gpu_worker_busy_seconds_total', 'Seconds the GPU worker owned a partition, including the running partition up to the collection.', perWorker((w) => busyNs(w) / NS_PER_S));
    counter('cuzk_gpu_worker_partitions_total', 'Partitions the GPU worker finished (handed back).', perWorker((w) => m.wPartitions[w]));
    gauge('cuzk_gpu_worker_current_partition_seconds', 'Seconds since the GPU worker picked up the partition it owns now; 0 when idle.', perWorker((w) => m.workerStintSecondsAt(w, now)));
    if (m.topology.lockEvents) {
      counter('cuzk_gpu_busy_seconds_total', 'Seconds the per-GPU kernel lock was held, including a hold running at the collection.', perGpu((g) => heldNs(g) / NS_PER_S));
      counter('cuzk_gpu_starved_seconds_total', 'Seconds the GPU lock was free while proofs were outstanding but no synthesized partition was waiting (synthesis-bound).', perGpu((g) => starvedNs(g) / NS_PER_S));
    }
    const parts: Point[] = [];
    for (const k of kinds) {
      for (let s = 0; s < LIVE_PARTITION_STATES; s++) parts.push(pt(this.kindStateAttrs[k][s], m.kLive[k * LIVE_PARTITION_STATES + s]));
    }
    gauge('cuzk_partitions', 'Partitions of live proofs now in each state (pending, synthesizing, synth_done, gpu, finalizing: kernels done and GPU lock released, CPU epilogue running; a source that cannot tell reports those as gpu).', parts);
    counter('cuzk_partition_gpu_seconds_total', 'GPU-stage seconds of finished partitions.', perKind(m.kGpuNs, NS_PER_S));
    // Known only where the source reports the GPU-lock release (native engine): neither
    // cuzk's /status nor its TIMELINE says when a partition's kernels ended.
    if (m.topology.lockEvents) {
      counter('cuzk_partition_finalize_seconds_total', 'Seconds finished partitions spent finalizing (split proving: GPU lock released, CPU epilogue running); included in the GPU-stage seconds.', perKind(m.kFinalizeNs, NS_PER_S));
    }
    counter('cuzk_partition_synthesis_seconds_total', 'Synthesis seconds of finished partition syntheses.', perKind(m.kSynthNs, NS_PER_S));
    counter('cuzk_partitions_completed_total', 'Partitions that completed.', perKind(m.kPartsCompleted));
    counter('cuzk_partitions_failed_total', 'Partitions that failed (not counting partitions of cancelled proofs).', perKind(m.kPartsFailed));
    counter('cuzk_proofs_completed_total', 'Proofs that completed.', perKind(m.kProofsCompleted));
    counter('cuzk_proofs_failed_total', 'Proofs that failed.', perKind(m.kProofsFailed));
    counter('cuzk_proofs_cancelled_total', 'Proofs cancelled before they finished.', perKind(m.kProofsCancelled));
    gauge('cuzk_queue_depth', 'Proofs queued and not started.', perKind(m.kQueueDepth));
    gauge('cuzk_synthesis_active', 'Synthesis slots in use.', [pt({}, m.synthActive)]);
    gauge('cuzk_synthesis_max_concurrent', 'Synthesis slots available.', [pt({}, m.synthMax)]);
    gauge('cuzk_memory_budget_bytes', 'Memory budget of the prover in bytes.', [pt({}, m.memoryBudgetBytes)]);
    gauge('cuzk_memory_used_bytes', 'Memory budget in use in bytes.', [pt({}, m.memoryUsedBytes)]);
    // One pass over the reasons; the flag is their OR (never a separate computation).
    const reasons: Point[] = new Array(MISMATCH_REASONS.length);
    let mismatch = 0;
    for (let r = 0; r < MISMATCH_REASONS.length; r++) {
      const on = m.mismatchReason(r) ? 1 : 0;
      mismatch |= on;
      reasons[r] = pt(this.reasonAttrs[r], on);
    }
    gauge('cuzk_status_mismatch', "1 when the prover's own reports contradict each other for certain (see cuzk_status_mismatch_reason); partitions in gpu/finalizing outnumbering busy workers is healthy split proving, not a mismatch.", [pt({}, mismatch)]);
    gauge('cuzk_status_mismatch_reason', 'Which certain contradiction holds (1) or not (0): idle_with_partitions_on_gpu (partitions in gpu/finalizing while no worker is busy), owner_idle (a worker reported idle while its newest partition has not ended), surfaces_disagree (attached surfaces disagree on a worker).', reasons);
    counter('cuzk_exporter_events_total', 'State-change events ingested from the source.', [pt({}, m.eventsTotal)]);
    counter('cuzk_exporter_events_dropped_total', 'Events lost before ingestion (ring overflow); state and totals were re-synced.', [pt({}, m.eventsDropped)]);
    const errs: Point[] = [];
    for (const [reason, n] of m.errors.entries()) errs.push(pt({ reason }, n));
    counter('cuzk_exporter_errors_total', 'Errors of the source or of collection, by reason.', errs);
    gauge('cuzk_exporter_scrape_duration_seconds', 'Seconds the previous collection took.', [pt({}, this.ctx.lastCollectSeconds())]);
    return out.filter((d) => d.dataPoints.length > 0);
  }

  private kindUsed(k: number): boolean {
    const m = this.ctx.model;
    if (m.kGpuNs[k] || m.kSynthNs[k] || m.kFinalizeNs[k] || m.kPartsCompleted[k] || m.kPartsFailed[k]) return true;
    if (m.kProofsCompleted[k] || m.kProofsFailed[k] || m.kProofsCancelled[k] || m.kQueueDepth[k]) return true;
    for (let s = 0; s < LIVE_PARTITION_STATES; s++) if (m.kLive[k * LIVE_PARTITION_STATES + s]) return true;
    return false;
  }
}
