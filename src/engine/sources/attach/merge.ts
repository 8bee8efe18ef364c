/**
 * The merge and cross-check of cuzk's attached surfaces (DESIGN §7): any non-empty
 * combination of `/status` (status-surface.ts), gRPC (grpc-surface.ts) and TIMELINE
 * (timeline-surface.ts) becomes the one StateModel the exporter reads.
 *
 * Each area of the model comes from ONE surface, chosen at start from what is attached and
 * never switched, so a proof or a partition seen by two surfaces is counted once and every
 * counter is a surface's own monotonic total (kept across daemon restarts and surface loss
 * by that surface):
 *
 *   area                                         best → fallback
 *   workers (busy, busy seconds, ownership)      timeline (exact) → status (sampled) → grpc (sampled, 5 s)
 *   partitions (states, GPU/synthesis seconds,   timeline (exact, every kind) → status (partitioned kinds only)
 *     completed, histograms)
 *   partitions failed                            status (TIMELINE has no failure line)
 *   proofs completed / failed                    grpc (cumulative, every kind) → status (partitioned kinds only)
 *   queue depth by kind                          grpc GetStatus → status
 *   synthesis slots, memory                      status
 *   GPU names                                    grpc
 *   topology (worker id → GPU)                   status → grpc → timeline (GPU unknown)
 *
 * Cross-check: a worker one surface says is proving while another says it is idle, both
 * claims holding over the same moment with `skewToleranceMs` to spare on each side, sets
 * cuzk_status_mismatch_reason{reason="surfaces_disagree"}. gRPC's idle is never taken as
 * such a claim: cuzk's finalizer clears current_job unconditionally there, so a worker on
 * its next partition can read idle (a known lie of that surface, not a contradiction).
 * /status saying idle while TIMELINE says a partition is proving — the historical bug — is
 * exactly what this exists to show. /status saying idle during a PoSt or a batch is not: cuzk's
 * status tracker sees partitioned jobs only (upstream status.rs call sites), so that is how a
 * healthy cuzk looks.
 *
 * Past ~500 lines on purpose: the choice of surface per area and the cross-check read the same
 * per-surface state on every composition (the table above); one file keeps that table and its
 * code side by side.
 */
import type { ErrorCounts } from '../../model/error-counts';
import { KIND_LABELS, KIND_SLOTS, OTHER_KIND_INDEX, PART_DONE, PART_FAILED, PART_FINALIZING, PARTITION_STATES, kindIndex } from '../../model/kinds';
import type { MetricsSource } from '../source';
import { GpuInfo, ModelObserver, StateModel, Topology } from '../../model/state-model';
import type { Logger } from '../../../util/logger';
import { GrpcSurface } from './grpc-surface';
import { StatusSurface } from './status-surface';
import { Surface, SurfaceName, ThrottledLog, hrNowNs } from './surface';
import { TimelineSurface } from './timeline-surface';
import { mergedStatusBody } from './merged-status';
import { EvidenceWatch } from './evidence-watch';

/** A TIMELINE never readable this long after start gives way to /status (or gRPC). */
const SILENT_AFTER_NS = 10e9;

export interface MergeOptions {
  statusUrl?: string;
  grpcAddress?: string;
  timelineFile?: string;
  pollIntervalMs: number;
  /** GetStatus interval (cuzk runs nvidia-smi per call). */
  grpcStatusIntervalMs: number;
  timeoutMs: number;
  maxBodyBytes: number;
  logger: Logger;
  /** Both contradicting claims must hold this long around a common moment (default max(2 s, 2 polls)). */
  skewToleranceMs?: number;
  /** Thresholds for what cuzk's /status never clears (status-stale.ts). */
  statusStale?: import('./status-stale').StaleOptions;
  /** TIMELINE file poll (default 100 ms), standard-input stand-in and limits (tests). */
  timeline?: Partial<Omit<import('./timeline-surface').TimelineOptions, 'path' | 'errors' | 'logger'>>;
}

export interface Disagreement {
  worker: number;
  gpu: number;
  /** The surface that says the worker proves, and the one that says idle. */
  busy_per: SurfaceName;
  idle_per: SurfaceName;
  /** Seconds both claims have held together. */
  overlap_secs: number;
}

export interface SurfaceState {
  name: SurfaceName;
  target: string;
  up: boolean;
  /** Evidence this surface is missing because of how the daemon is configured (evidence-watch.ts). */
  degraded: string[];
}

type WorkerDriver = 'timeline' | 'status' | 'grpc';
const WINDOW_POST = kindIndex('window-post');
const WINNING_POST = kindIndex('winning-post');

/** Forwards one surface's histogram observations to the exporter's observer (set later by Telemetry). */
function forwardTo(model: StateModel): ModelObserver {
  return {
    partitionGpu: (k, s, j, p) => model.observer?.partitionGpu(k, s, j, p),
    partitionFinalize: (k, s) => model.observer?.partitionFinalize?.(k, s),
    partitionSynthesis: (k, s, j, p) => model.observer?.partitionSynthesis(k, s, j, p),
    proofDone: () => {},
    queueWait: () => {},
    gpuIdleGap: () => {},
  };
}

export class MergedAttachSource implements MetricsSource {
  readonly model = new StateModel();
  readonly source = 'attach' as const;
  readonly backend = 'cuzk';
  readonly status: StatusSurface | null;
  readonly grpc: GrpcSurface | null;
  readonly timeline: TimelineSurface | null;
  readonly surfaces: Surface[];
  readonly workerDriver: WorkerDriver;
  readonly partitionDriver: 'timeline' | 'status' | null;
  readonly proofsDriver: 'grpc' | 'status' | null;
  private readonly errors: ErrorCounts;
  private readonly tolNs: number;
  /** Margin between a sample and a continuous claim (clocks, cuzk's update order); <= tolNs. */
  private readonly tolPtNs: number;
  private readonly log: ThrottledLog;
  private disagreements: Disagreement[] = [];
  private readonly outOfRange = new Set<number>();
  private slotById = new Map<number, number>();
  private statusSlotById = new Map<number, number>();
  private statusTopoVersion = -1;
  private lastDriver: WorkerDriver | null = null;
  /** The partition driver in force at the last compose (partitionDriver unless TIMELINE writes nothing). */
  private lastPartDriver: 'timeline' | 'status' | null = null;
  /** Per counter and kind: what the model had above the driver's own totals when the driver changed. */
  private readonly partBase = { gpu: new Float64Array(KIND_SLOTS), synth: new Float64Array(KIND_SLOTS), fin: new Float64Array(KIND_SLOTS), done: new Float64Array(KIND_SLOTS), failed: new Float64Array(KIND_SLOTS) };
  private fwd: ModelObserver | null = null;
  private readonly startHr = hrNowNs();
  private readonly drvBase = new Map<number, number>();
  /** Per worker: the stint the driver switched away from was running (since, ns exposed of it then). */
  private readonly awayRun = new Map<number, { driver: WorkerDriver; since: number; ns: number }>();
  private lastNow = 0;
  /** Configurations that take a surface's evidence away (evidence-watch.ts). */
  readonly watch: EvidenceWatch;

  constructor(private readonly opts: MergeOptions) {
    this.errors = this.model.errors;
    const common = { errors: this.errors, logger: opts.logger };
    this.status = opts.statusUrl
      ? new StatusSurface({ url: opts.statusUrl, pollIntervalMs: opts.pollIntervalMs, timeoutMs: opts.timeoutMs, maxBodyBytes: opts.maxBodyBytes, stale: opts.statusStale, ...common })
      : null;
    this.grpc = opts.grpcAddress
      ? new GrpcSurface({
          address: opts.grpcAddress,
          pollIntervalMs: opts.pollIntervalMs,
          statusIntervalMs: opts.grpcStatusIntervalMs,
          timeoutMs: opts.timeoutMs,
          maxMessageBytes: opts.maxBodyBytes,
          ...common,
        })
      : null;
    this.timeline = opts.timelineFile !== undefined ? new TimelineSurface({ path: opts.timelineFile, ...common, ...(opts.timeline ?? {}) }) : null;
    this.surfaces = [this.grpc, this.status, this.timeline].filter((s): s is NonNullable<typeof s> => s !== null);
    if (this.surfaces.length === 0) throw new Error('attach needs at least one of --cuzk.status-url, --cuzk.grpc-address, --cuzk.timeline-file');
    this.workerDriver = this.timeline ? 'timeline' : this.status ? 'status' : 'grpc';
    this.partitionDriver = this.timeline ? 'timeline' : this.status ? 'status' : null;
    this.proofsDriver = this.grpc ? 'grpc' : this.status ? 'status' : null;
    this.tolNs = (opts.skewToleranceMs ?? Math.max(2000, 2 * opts.pollIntervalMs)) * 1e6;
    this.tolPtNs = Math.min(250e6, this.tolNs);
    this.watch = new EvidenceWatch(this);
    this.log = new ThrottledLog(opts.logger, { surface: 'merge' });

    const fwd = forwardTo(this.model);
    this.fwd = fwd;
    if (this.status) this.status.model.observer = this.partitionDriver === 'status' ? fwd : null;
    if (this.grpc && this.timeline) {
      const tl = this.timeline;
      this.grpc.onProofDeltas = (d, _ask, answer) => tl.proofsEnded(d, answer);
    }
    if (this.status && this.timeline) {
      // cuzk's /status marks a partition done when its GPU stage ends whatever the result
      // (status.rs partition_gpu_end): a TIMELINE unit /status saw end that never gets a
      // GPU_END failed on the GPU (timeline-surface.ts sweep).
      const tl = this.timeline;
      this.status.onPipelines = (pipelines) => {
        for (const p of pipelines) tl.otherSurfaceEndedParts(p.job_id, p.partitions);
      };
    }
    if (this.timeline) {
      this.timeline.observer = fwd;
      this.timeline.resolver = (id) => {
        const k = this.status?.kindOf(id) ?? -1;
        if (k >= 0) return { kind: k, evidence: 'status' };
        const g = this.grpc?.kindOf(id) ?? -1;
        return g >= 0 ? { kind: g, evidence: 'grpc_status' } : null;
      };
    }
    this.model.up = false;
    this.model.setTopology({ gpus: [], workers: [], lockEvents: false }, hrNowNs());
  }

  start(): void {
    for (const s of this.surfaces) s.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.surfaces.map((s) => s.stop()));
  }

  /** Surfaces attached, sorted by name, with their state now. */
  surfaceStates(): SurfaceState[] {
    return this.surfaces.map((s) => ({ name: s.name, target: s.target, up: s.up, degraded: this.watch.reasons(s.name) }));
  }

  /**
   * The stream feeding TIMELINE (a fleet target's command) is up or not: the surface cannot
   * see a command's restarts itself, its standard input stays open across them.
   */
  timelineFeed(up: boolean, message: string): void {
    this.timeline?.state(up, null, message);
  }

  /** How each partitioned job's kind became known (cuzk_exporter_kind_resolutions_total). */
  kindResolutions(): Iterable<[string, number]> {
    return this.timeline ? this.timeline.kinds.counts.entries() : [];
  }

  /** The build_info `surfaces` label: names sorted and comma-joined. */
  surfaceNames(): string {
    return this.surfaces.map((s) => s.name).join(',');
  }

  // ---- composition ----

  /** Composes the model from the surfaces, as of now (cheap: O(workers + kinds)). */
  refresh(): void {
    const m = this.model;
    this.timeline?.resolvePending();
    this.watch.update(hrNowNs());
    this.composeTopology();
    this.composeWorkers();
    this.composePartitions();
    // Proofs.
    if (this.proofsDriver === 'grpc') {
      m.kProofsCompleted.set(this.grpc!.kProofsCompleted);
      m.kProofsFailed.set(this.grpc!.kProofsFailed);
    } else if (this.proofsDriver === 'status') {
      const s = this.status!.model;
      m.kProofsCompleted.set(s.kProofsCompleted);
      m.kProofsFailed.set(s.kProofsFailed);
      m.kProofsCancelled.set(s.kProofsCancelled);
    }
    // Queue depth, synthesis, memory.
    if (this.grpc) {
      if (this.grpc.queuesKnown) m.kQueueDepth.set(this.grpc.queueDepth);
    } else if (this.status) m.kQueueDepth.set(this.status.model.kQueueDepth);
    if (this.status) {
      const s = this.status.model;
      m.synthActive = s.synthActive;
      m.synthMax = s.synthMax;
      m.memoryBudgetBytes = s.memoryBudgetBytes;
      m.memoryUsedBytes = s.memoryUsedBytes;
      m.eventsDropped = s.eventsDropped;
    }
    m.eventsTotal = (this.timeline?.eventsTotal ?? 0) + (this.status?.model.eventsTotal ?? 0) + (this.grpc ? this.grpc.statusPolls + this.grpc.metricsPolls : 0);
    m.up = this.surfaces.every((s) => s.up);
    this.crossCheck();
  }

  /** What composeTopology read last time (unchanged: nothing to compose). */
  private topologyInputs: [number, number[] | null, number, number, number] = [-1, null, -1, -1, -1];

  private composeTopology(): void {
    const m = this.model;
    // Composed a hundred times a second in a fleet (fleet.ts looks at each target every
    // second); its inputs change when a surface reports another topology.
    const inputs = this.topologyInputs;
    const stVersion = this.status?.model.topologyVersion ?? -1;
    const grpcWorkers = this.grpc?.workerGpu ?? null;
    const grpcNames = this.grpc?.gpuNames.size ?? -1;
    const tlWorkers = this.timeline?.workersVersion ?? -1;
    if (inputs[0] === stVersion && inputs[1] === grpcWorkers && inputs[2] === grpcNames && inputs[3] === tlWorkers && inputs[4] === m.topologyVersion) return;
    let workers: { id: number; gpu: number }[] = [];
    const st = this.status?.model;
    if (st && st.topology.workers.length > 0) workers = st.topology.workers.map((w) => ({ id: w.id, gpu: w.gpu }));
    else if (this.grpc && this.grpc.workerGpu.length > 0) workers = this.grpc.workerGpu.map((gpu, id) => ({ id, gpu }));
    else if (this.timeline) workers = this.timeline.workerIds().map((id) => ({ id, gpu: -1 }));
    const authoritative = (st && st.topology.workers.length > 0) || (this.grpc && this.grpc.workerGpu.length > 0);
    if (authoritative && this.timeline) {
      // TIMELINE workers the daemon does not have: counted once, ignored.
      const ids = new Set(workers.map((w) => w.id));
      for (const id of this.timeline.workerIds()) {
        if (!ids.has(id) && !this.outOfRange.has(id) && this.outOfRange.size < 4096) {
          this.outOfRange.add(id);
          this.errors.inc('timeline_worker_out_of_range', `TIMELINE names worker ${id}, which the daemon does not report`);
          this.log.log('warn', `TIMELINE names worker ${id}, which the daemon does not report; ignored`);
        }
      }
    }
    const ordinals = new Set<number>();
    for (const w of workers) if (w.gpu >= 0) ordinals.add(w.gpu);
    const known = new Map<number, GpuInfo>();
    for (const g of st?.topology.gpus ?? []) known.set(g.ordinal, g);
    const gpus: GpuInfo[] = [...ordinals].sort((a, b) => a - b).map((o) => {
      const name = this.grpc?.gpuNames.get(o);
      const prev = known.get(o);
      return { ordinal: o, name: name ?? prev?.name ?? 'unknown', uuid: prev?.uuid, pciBusId: prev?.pciBusId };
    });
    const topology: Topology = { gpus, workers, lockEvents: false };
    const before = m.topologyVersion;
    m.setTopology(topology, hrNowNs());
    if (m.topologyVersion !== before || this.slotById.size !== m.topology.workers.length) {
      this.slotById = new Map(m.topology.workers.map((w, i) => [w.id, i]));
    }
    if (st && st.topologyVersion !== this.statusTopoVersion) {
      this.statusTopoVersion = st.topologyVersion;
      this.statusSlotById = new Map(st.topology.workers.map((w, i) => [w.id, i]));
    }
    this.topologyInputs = [stVersion, grpcWorkers, grpcNames, tlWorkers, m.topologyVersion];
  }

  /**
   * The surface workers come from now: the one chosen at start, except that TIMELINE gives
   * way to gRPC while the daemon writes no TIMELINE at all (pipeline.enabled = false,
   * evidence-watch.ts).
   */
  get currentDriver(): WorkerDriver {
    return this.lastDriver ?? this.workerDriver;
  }

  private currentWorkerDriver(): WorkerDriver {
    if (this.workerDriver !== 'timeline') return this.workerDriver;
    // Phase 1 (pipeline off) changes neither TIMELINE nor /status' gpu_workers: gRPC's
    // GetStatus is all there is.
    if (this.grpc && this.watch.degraded('timeline', 'no_lines')) return 'grpc';
    // A log never readable: /status' busy is continuous (cuzk's busy_secs), gRPC's a sample.
    if (this.timelineSilent()) return this.status ? 'status' : this.grpc ? 'grpc' : 'timeline';
    return 'timeline';
  }

  /** Partitions come from TIMELINE, except from /status while the daemon writes no TIMELINE at all (its file absent, pipeline off). */
  private currentPartitionDriver(): 'timeline' | 'status' | null {
    if (this.partitionDriver === 'timeline' && this.status && this.timelineSilent()) return 'status';
    return this.partitionDriver;
  }

  /**
   * The daemon writes no TIMELINE we can read: none at all while proofs end (pipeline off,
   * evidence-watch.ts), or its log never readable since we started (a file named that never
   * appears) for longer than SILENT_AFTER_NS. A log that was readable and goes away (rotation,
   * a restart) keeps TIMELINE in charge: what it writes meanwhile is read when it is back.
   */
  private timelineSilent(): boolean {
    if (this.watch.degraded('timeline', 'no_lines')) return true;
    const t = this.timeline;
    return t !== null && !t.everUp && hrNowNs() - this.startHr > SILENT_AFTER_NS;
  }

  private composeWorkers(): void {
    const m = this.model;
    const n = m.topology.workers.length;
    let busy = 0;
    let owned = 0;
    const driver = this.currentWorkerDriver();
    const prevDriver = this.lastDriver;
    const switched = driver !== prevDriver;
    this.lastDriver = driver;
    for (let i = 0; i < n; i++) {
      const id = m.topology.workers[i].id;
      let b = 0;
      let since = 0;
      let pick = 0;
      // The driver's own total: 0 for a worker it has not seen (TIMELINE before that worker's
      // first line). Not the model's total: a switch's base is added to it at every compose.
      let busyNs = 0;
      let parts = m.wPartitions[i];
      let job = 0;
      let part = -1;
      let kind = -1;
      let oJob = 0;
      let oPart = -1;
      let cap = Infinity;
      if (driver === 'timeline') {
        const t = this.timeline!.workers;
        if (id < t.seen.length) {
          b = t.busy[id];
          since = t.since[id];
          busyNs = t.busyNs[id];
          parts = t.parts[id];
          cap = t.cap[id];
          const own = t.own[id];
          if (own) {
            pick = own.pickT;
            job = own.job.handle;
            part = own.key < 0 ? 0 : own.key;
            kind = own.job.kind >= 0 ? own.job.kind : OTHER_KIND_INDEX;
            oJob = job;
            oPart = part;
          }
        }
      } else if (driver === 'status') {
        const s = this.status!.model;
        const j = this.statusSlotById.get(id);
        if (j !== undefined) {
          b = s.wBusy[j];
          since = s.wSinceNs[j];
          pick = s.wPickNs[j];
          busyNs = s.wBusyNs[j];
          parts = s.wPartitions[j];
          job = s.wJob[j];
          part = s.wPartition[j];
          kind = s.wKind[j];
          oJob = s.oJob[j];
          oPart = s.oPart[j];
        }
      } else {
        const g = this.grpc!;
        if (id < g.wBusy.length) {
          b = g.wBusy[id];
          since = g.wSince[id];
          pick = g.wSince[id];
          busyNs = g.wBusyNs[id];
          parts = g.wParts[id];
          if (b) {
            // Sampled: a running stint shows only up to the last sample that saw it (what gRPC
            // credits when it ends), not up to our clock, which another driver may have moved past it.
            cap = g.wSeenUntil[id];
            job = g.handle(g.wJob[id]);
            part = 0;
            kind = g.wKind[id];
          }
        }
      }
      // A driver switch: the new driver's totals continue from what was exposed (never back),
      // a stint still running then included: the old driver's ended stints alone would take
      // that running part back when the new driver says the worker idle. The new driver's
      // running stint is the old one's as far as that one went (one stint seen by both), the
      // rest of it new: all of it taken off would leave the ended total exposed above the
      // new driver's, and the running part counted on top of it would go when it ends.
      if (switched) {
        const now = this.lastNow;
        const exposed = m.workerBusyNsAt(i, now);
        const newRunning = b ? Math.max(0, Math.min(now, cap) - since) : 0;
        const oldRunning = exposed - m.wBusyNs[i];
        let seen = Math.min(newRunning, oldRunning);
        // Back to a driver whose stint has run on since we switched away from it: what it had
        // exposed of that stint then is in the base already (TIMELINE keeps its books meanwhile).
        const away = this.awayRun.get(id);
        if (away && away.driver === driver && b && away.since === since) seen += Math.min(newRunning - seen, away.ns);
        this.awayRun.delete(id);
        if (prevDriver !== null && m.wBusy[i]) this.awayRun.set(id, { driver: prevDriver, since: m.wSinceNs[i], ns: oldRunning });
        this.drvBase.set(id, Math.max(0, exposed - busyNs - seen));
      }
      busyNs += this.drvBase.get(id) ?? 0;
      m.wBusy[i] = b;
      m.wSinceNs[i] = since;
      m.wCapNs[i] = cap;
      m.wPickNs[i] = pick;
      // At a switch the ended part may go below the old driver's: the new driver's running
      // part makes up for it (exposed - seen + its running >= exposed), and is credited when it ends.
      if (switched || busyNs > m.wBusyNs[i]) m.wBusyNs[i] = busyNs;
      if (parts > m.wPartitions[i]) m.wPartitions[i] = parts;
      m.wJob[i] = job;
      m.wPartition[i] = part;
      m.wKind[i] = kind;
      m.oJob[i] = oJob;
      m.oPart[i] = oPart;
      busy += b;
      if (oPart >= 0) owned++;
    }
    m.busyWorkers = busy;
    m.ownedCount = owned;
  }

  private composePartitions(): void {
    const m = this.model;
    const driver = this.currentPartitionDriver();
    m.supersededOnGpu = driver === 'timeline' ? this.timeline!.supersededOnGpu() : 0;
    let src: { gpu: Float64Array; synth: Float64Array; fin: Float64Array | null; done: Float64Array; failed: Float64Array } | null = null;
    if (driver === 'timeline') {
      const t = this.timeline!.units;
      m.kLive.set(t.kLive);
      // Failed partitions: GPU failures TIMELINE saw end without a GPU_END (by /status'
      // word), plus what /status marks failed (synthesis failures; cuzk's /status marks a
      // GPU failure done, so the two never count the same partition).
      const failed = new Float64Array(KIND_SLOTS);
      const sf = this.status?.model.kPartsFailed;
      for (let k = 0; k < KIND_SLOTS; k++) failed[k] = t.kPartsFailed[k] + (sf ? sf[k] : 0);
      src = { gpu: t.kGpuNs, synth: t.kSynthNs, fin: null, done: t.kParts, failed };
    } else if (driver === 'status') {
      const s = this.status!.model;
      m.kLive.set(s.kLive);
      src = { gpu: s.kGpuNs, synth: s.kSynthNs, fin: s.kFinalizeNs, done: s.kPartsCompleted, failed: s.kPartsFailed };
    }
    if (driver !== this.lastPartDriver) {
      // A change of driver (TIMELINE silent, or back): counters go on from where they were,
      // moved by the new driver's increments only (never down, nothing counted twice).
      const b = this.partBase;
      // The first compose: the driver's totals are the counters (base 0).
      for (let k = 0; this.lastPartDriver !== null && k < KIND_SLOTS; k++) {
        b.gpu[k] = m.kGpuNs[k] - (src ? src.gpu[k] : 0);
        b.synth[k] = m.kSynthNs[k] - (src ? src.synth[k] : 0);
        b.fin[k] = m.kFinalizeNs[k] - (src?.fin ? src.fin[k] : 0);
        b.done[k] = m.kPartsCompleted[k] - (src ? src.done[k] : 0);
        b.failed[k] = m.kPartsFailed[k] - (src ? src.failed[k] : 0);
      }
      if (this.lastPartDriver !== null || driver !== this.partitionDriver) {
        this.log.log('info', `partitions now from ${driver ?? 'no surface'}${driver === 'status' ? ' (the daemon writes no TIMELINE)' : ''}`, true);
      }
      if (this.status) this.status.model.observer = driver === 'status' ? this.fwd : null;
      this.lastPartDriver = driver;
    }
    if (!src) return;
    const b = this.partBase;
    for (let k = 0; k < KIND_SLOTS; k++) {
      m.kGpuNs[k] = Math.max(m.kGpuNs[k], src.gpu[k] + b.gpu[k]);
      m.kSynthNs[k] = Math.max(m.kSynthNs[k], src.synth[k] + b.synth[k]);
      if (src.fin) m.kFinalizeNs[k] = Math.max(m.kFinalizeNs[k], src.fin[k] + b.fin[k]);
      m.kPartsCompleted[k] = Math.max(m.kPartsCompleted[k], src.done[k] + b.done[k]);
      m.kPartsFailed[k] = Math.max(m.kPartsFailed[k], src.failed[k] + b.failed[k]);
    }
  }

  // ---- cross-check ----

  /**
   * A worker one surface says is proving while another says it is idle, for certain. TIMELINE
   * claims are continuous (its state since its last transition, up to what the log is known to
   * be read to — a second or more back); /status' busy is continuous too (since cuzk's own
   * busy_secs); a /status snapshot or a GetStatus answer is a sample: the state held at some
   * instant of the request's window. A sample contradicts a continuous claim when the
   * continuous one covers the sample's whole window with `tolPtNs` to spare on both sides (the
   * newest sample the continuous claim reaches is compared); two continuous claims when they
   * overlap by 2 × `tolPtNs`. The margin covers the surfaces' clocks (TIMELINE's offsets mapped
   * onto ours) and the order in which cuzk updates them around a pickup or an end (its /status
   * marks a worker busy before the GPU_PICKUP line and idle after GPU_END). gRPC's idle is
   * never a claim: cuzk clears current_job unconditionally. Two samples never contradict for
   * certain. /status idle while a monolithic job (PoSt, a batch) runs is cuzk's normal state.
   */
  private crossCheck(): void {
    const m = this.model;
    if (this.surfaces.length < 2) {
      m.setMismatchReason('surfaces_disagree', false);
      return;
    }
    const out: Disagreement[] = [];
    const t = this.tolPtNs;
    const workers = m.topology.workers;
    for (let i = 0; i < workers.length; i++) {
      const id = workers[i].id;
      const gpu = workers[i].gpu;
      const tl = this.timeline?.claim(id) ?? null;
      const st = this.status?.claim(id, (x) => this.statusSlotById.get(x) ?? -1) ?? null;
      let found: Disagreement | null = null;
      const hit = (busyBy: SurfaceName, idleBy: SurfaceName, overlapNs: number) => {
        found = { worker: id, gpu, busy_per: busyBy, idle_per: idleBy, overlap_secs: overlapNs / 1e9 };
      };
      if (tl && tl.busy) {
        // TIMELINE proving a partition; the newest /status snapshot it reaches says idle. A
        // monolithic job (all PoSt, batches) never changes cuzk's gpu_workers
        // (upstream status.rs: only the partitioned path calls partition_gpu_start/end).
        const s = (tl.partition ?? -1) >= 0 ? this.status?.sampleUntil(id, tl.untilHr - t) : null;
        if (s && !s.busy && tl.sinceHr + t <= s.startHr) hit('timeline', 'status', tl.untilHr - tl.sinceHr);
      } else if (tl) {
        // TIMELINE idle; /status (continuously) or a GetStatus answer says proving.
        // Unless TIMELINE knows the partition /status has it on never ran or ended without an
        // end line: cuzk's /status leaves such a worker proving (a skip, a gpu_prove_start
        // failure) — upstream's known stale state, not a contradiction.
        if (st && st.busy && !this.timeline!.staleClaim(st.job ?? null, st.partition ?? -1)) {
          const o = Math.min(tl.untilHr, st.untilHr) - Math.max(tl.sinceHr, st.sinceHr);
          if (o >= 2 * t) hit('status', 'timeline', o);
        }
        const g = found ? null : this.grpc?.sampleUntil(id, tl.untilHr - t);
        if (g && g.busy && tl.sinceHr + t <= g.startHr) hit('grpc', 'timeline', tl.untilHr - tl.sinceHr);
      }
      if (found) out.push(found);
    }
    const was = this.disagreements.length > 0;
    this.disagreements = out;
    m.setMismatchReason('surfaces_disagree', out.length > 0);
    if (out.length > 0 && !was) {
      const d = out[0];
      this.log.log('warn', `surfaces disagree: worker ${d.worker} is proving per ${d.busy_per} but idle per ${d.idle_per}${out.length > 1 ? ` (+${out.length - 1} more workers)` : ''}`, true);
    }
  }

  /** The workers the surfaces disagree on now (for /status and the page). */
  currentDisagreements(): Disagreement[] {
    return this.disagreements;
  }

  // ---- MetricsSource ----

  nowNs(): number {
    const d = this.lastDriver ?? this.workerDriver;
    // Every surface's clock is on the exporter's hrtime scale; a driver switch never moves it back.
    const t = d === 'timeline' ? this.timeline!.nowNs() : d === 'status' ? this.status!.attach.nowNs() : this.grpc!.nowNs();
    if (this.timeline && d !== 'timeline') this.timeline.nowNs(); // TIMELINE keeps its own books while another surface drives (docs/attach.md §3)
    if (t > this.lastNow) this.lastNow = t;
    return this.lastNow;
  }

  jobId(handle: number): string | undefined {
    if (this.timeline && (this.lastPartDriver ?? this.partitionDriver) === 'timeline') {
      for (const j of this.timeline!.jobs.values()) if (j.handle === handle) return j.id;
      return undefined;
    }
    if (this.status) return this.status.attach.jobId(handle);
    return undefined;
  }

  snapshotAgeSeconds(): number {
    const now = hrNowNs();
    if (this.workerDriver === 'timeline') return Math.max(0, (now - this.timeline!.readUntilHr()) / 1e9);
    if (this.workerDriver === 'status') return this.status!.attach.snapshotAgeSeconds();
    const g = this.grpc!.lastStatusHr;
    return g > 0 ? (now - g) / 1e9 : 0;
  }

  ready(): { ok: boolean; reason: string } {
    this.refresh();
    const down = this.surfaces.filter((s) => !s.up);
    if (down.length > 0) return { ok: false, reason: `${down.map((s) => s.name).join(', ')} not up: ${this.errors.lastMessage ?? 'no answer yet'}` };
    const onlyTimeline = this.surfaces.length === 1 && this.timeline !== null;
    if (!onlyTimeline && this.model.topology.workers.length === 0) return { ok: false, reason: 'the daemon reports no GPU workers' };
    return { ok: true, reason: '' };
  }

  /**
   * The /status document: cuzk's own snapshot when /status drives the workers (attached
   * without TIMELINE); otherwise the same shape built from the merged model, with /status'
   * sections (memory, synthesis, counters...) where it is attached.
   */
  /** /status `exporter` additions: which surfaces are attached (and up), and what they disagree on. */
  exporterStatus(): Record<string, unknown> {
    return { surfaces: this.surfaceStates(), surfaces_disagree: this.disagreements };
  }

  statusBody(): Record<string, unknown> | null {
    if (this.currentDriver !== 'status') return mergedStatusBody(this, this.nowNs());
    // cuzk's own snapshot, plus each worker's busy seconds as /metrics has them (the page's
    // utilisation); the rest re-served as validated.
    const body = this.status!.attach.statusBody();
    if (!body || !Array.isArray(body.gpu_workers)) return body;
    const m = this.model;
    const now = this.nowNs();
    return {
      ...body,
      gpu_workers: (body.gpu_workers as Record<string, unknown>[]).map((w) => {
        const slot = this.slotById.get(w.worker_id as number);
        return slot === undefined ? w : { ...w, busy_total_secs: m.workerBusyNsAt(slot, now) / 1e9 };
      }),
    };
  }
}
