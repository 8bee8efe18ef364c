/**
 * StateModel: what the exporter needs to know about a prover, kept in typed arrays and
 * updated from cuzk_event records (DESIGN §5 "Where the time goes": ~60 ns typed-array
 * updates on the hot path instead of ~1.2 µs OpenTelemetry records).
 *
 * Both sources feed it the same records: the native engine (batches drained over FFI) and
 * the attach source (records derived from successive /status snapshots). The exporter only
 * reads it. Counters only ever grow; gauges are exact once pending events are applied.
 *
 * Split proving (native ABI v2, cuzk's own design): a partition goes gpu -> finalizing (GPU
 * lock released, CPU epilogue running) -> done while its worker may already own the next
 * partition. A worker is busy from a pickup until the end of the LATEST partition it picked
 * up: an EV_WORKER busy record while already busy moves ownership (the stint continues).
 * Ownership is also tracked on its own, from hand-offs (EV_PARTITION into gpu with a
 * worker), so the mismatch check can be exact per worker where the source reports it
 * (mismatchReason / statusMismatch below).
 *
 * Past ~500 lines on purpose: one state machine over typed arrays: stint ownership, split-
 * proving hand-offs and monotonic totals are invariants across every record type, and
 * splitting the decoder would scatter them.
 */
import { ErrorCounts } from './error-counts';
import {
  EVENT_SIZE,
  EVF_ABANDONED,
  EVF_FIRST,
  EVF_RESYNC,
  EV_GPU_LOCK,
  EV_JOB_DONE,
  EV_JOB_EVICTED,
  EV_JOB_QUEUED,
  EV_JOB_STARTED,
  EV_MEMORY,
  EV_OFF_AUX,
  EV_OFF_FLAGS,
  EV_OFF_GPU,
  EV_OFF_JOB,
  EV_OFF_KIND,
  EV_OFF_PARTITION,
  EV_OFF_SEQ,
  EV_OFF_TYPE,
  EV_OFF_T_NS,
  EV_OFF_VALUE,
  EV_OFF_WORKER,
  EV_PARTITION,
  EV_QUEUE_DEPTH,
  EV_SYNTH_ACTIVE,
  EV_WORKER,
  EventRecord,
  encodeEvents,
  readU64,
} from './event-layout';
import {
  KIND_SLOTS,
  LIVE_FINALIZING,
  LIVE_GPU,
  LIVE_PARTITION_STATES,
  MISMATCH_REASONS,
  MM_IDLE_WITH_PARTITIONS,
  MM_OWNER_IDLE,
  MismatchReason,
  OTHER_KIND_INDEX,
  OUTCOME_CANCELLED,
  OUTCOME_COMPLETED,
  OUTCOME_FAILED,
  PART_DONE,
  PART_FAILED,
  PART_FINALIZING,
  PART_GPU,
  PART_PENDING,
  PART_STATE_COUNT,
  PART_SYNTH_DONE,
  liveSlot,
} from './kinds';
import { ModelHistograms } from './model-histograms';
import {
  OBS_GPU_IDLE_GAP,
  OBS_PARTITION_FINALIZE,
  OBS_PARTITION_GPU,
  OBS_PARTITION_SYNTHESIS,
  OBS_PROOF_DONE,
  OBS_QUEUE_WAIT,
  ObservationQueue,
} from './observation-queue';

export interface GpuInfo {
  ordinal: number;
  name: string;
  uuid?: string;
  pciBusId?: string;
}

export interface WorkerInfo {
  /** Worker id as the prover reports it (cuzk's global worker_id). */
  id: number;
  /** GPU ordinal it runs on. */
  gpu: number;
}

/**
 * GPUs and workers. Events address them by slot (index in these arrays); for the native
 * engine slot == ordinal / global worker id.
 */
export interface Topology {
  gpus: GpuInfo[];
  workers: WorkerInfo[];
  /** The source reports GPU-lock events (native engine); an attached cuzk does not. */
  lockEvents: boolean;
}

/** Histogram observations, emitted when partitions/proofs finish (never per scrape). */
export interface ModelObserver {
  // `job` (the model's job handle) and `partition` are for exemplars: observers that want
  // the job id look it up from the handle, only when they observe.
  partitionGpu(kind: number, seconds: number, job?: number, partition?: number): void;
  /** Time a partition spent finalizing (split proving), where the source knows it. */
  partitionFinalize?(kind: number, seconds: number): void;
  partitionSynthesis(kind: number, seconds: number, job?: number, partition?: number): void;
  proofDone(kind: number, outcome: number, seconds: number, job?: number): void;
  queueWait(kind: number, seconds: number, job?: number): void;
  gpuIdleGap(gpuSlot: number, seconds: number): void;
}

/** Slots of StateModel.jobOf's cache (a power of two). */
const JOB_CACHE_SIZE = 64;

export interface JobState {
  handle: number;
  kind: number;
  states: Uint8Array;
  /**
   * Per partition: when it entered FINALIZING (its record's timestamp: the GPU-lock release),
   * NaN where unknown (a state-only record); finalize time = its end's timestamp minus this,
   * as the engine's CTRK_FINALIZE_NS counts it.
   */
  finSinceNs: number[];
  /** Per partition: the worker slot that picked it up (last seen doing so), -1 if none. */
  ranBy: number[];
  submittedNs: number;
  finished: boolean;
}

/** Totals to adopt after a sequence gap (from the native counters). */
export interface CounterTotals {
  workerBusyNs: ArrayLike<number>;
  workerPartitions: ArrayLike<number>;
  gpuLockHeldNs: ArrayLike<number>;
  gpuStarvedNs: ArrayLike<number>;
  kindGpuNs: ArrayLike<number>;
  kindSynthNs: ArrayLike<number>;
  /** ns spent finalizing by partitions that left that state (ABI v2 CUZK_CTRK_FINALIZE_NS), where the source has it. */
  kindFinalizeNs?: ArrayLike<number>;
  kindPartsCompleted: ArrayLike<number>;
  kindPartsFailed: ArrayLike<number>;
  kindProofsCompleted: ArrayLike<number>;
  kindProofsFailed: ArrayLike<number>;
  kindProofsCancelled: ArrayLike<number>;
  /** Timestamp (ns) the totals were read at; running intervals restart from here. */
  nowNs: number;
}

/** ns -> s by division: correctly rounded, so 27e6 ns is exactly 0.027 (x 1e-9 is not). */
const NS_PER_S = 1e9;

export class StateModel {
  topology: Topology = { gpus: [], workers: [], lockEvents: false };
  /** Bumped whenever the set of GPUs/workers changes (series come and go). */
  topologyVersion = 0;

  // Per worker slot.
  wBusy = new Uint8Array(0);
  wSinceNs = new Float64Array(0);
  wBusyNs = new Float64Array(0);
  wPartitions = new Float64Array(0);
  wJob = new Float64Array(0);
  wPartition = new Int32Array(0);
  wKind = new Int16Array(0);
  /** When the worker picked up the partition it owns now (a stint may span several). */
  wPickNs = new Float64Array(0);
  /**
   * The running stint is exposed up to here at most (Infinity: no cap). An attached source
   * whose stint may turn out not to be real (a TIMELINE pickup not yet confirmed, a GPU
   * stage whose end line may never come) holds it back; the end lifts it.
   */
  wCapNs = new Float64Array(0);
  /**
   * Ownership from hand-offs, independent of the busy flag: the newest partition the worker
   * picked up that has not ended (job handle, partition index; -1 when none or unknown).
   */
  oJob = new Float64Array(0);
  oPart = new Int32Array(0);
  /** Workers with an owned partition (oPart >= 0): ends are matched only while some exist. */
  ownedCount = 0;

  // Per GPU slot.
  gLockHeld = new Uint8Array(0);
  gLockSinceNs = new Float64Array(0);
  gLockHeldNs = new Float64Array(0);
  gStarvedSinceNs = new Float64Array(0); // NaN when not starved
  gStarvedNs = new Float64Array(0);
  gLastReleaseNs = new Float64Array(0); // NaN before the first release

  // Per kind slot (PROOF_KINDS then OTHER_KIND).
  kLive = new Int32Array(KIND_SLOTS * LIVE_PARTITION_STATES);
  kGpuNs = new Float64Array(KIND_SLOTS);
  kSynthNs = new Float64Array(KIND_SLOTS);
  kFinalizeNs = new Float64Array(KIND_SLOTS);
  kPartsCompleted = new Float64Array(KIND_SLOTS);
  kPartsFailed = new Float64Array(KIND_SLOTS);
  kProofsCompleted = new Float64Array(KIND_SLOTS);
  kProofsFailed = new Float64Array(KIND_SLOTS);
  kProofsCancelled = new Float64Array(KIND_SLOTS);
  kQueueDepth = new Float64Array(KIND_SLOTS);

  synthActive = 0;
  synthMax = 0;
  memoryBudgetBytes = 0;
  memoryUsedBytes = 0;

  /** Partitions in the synth_done state, all kinds: the GPUs' work queue. */
  synthDoneTotal = 0;
  /** Jobs queued or running (not yet done): an engine with none is idle, not starved. */
  unfinishedJobs = 0;
  /** Workers busy now; kept incrementally so the mismatch check is O(1). */
  busyWorkers = 0;

  eventsTotal = 0;
  eventsDropped = 0;
  lastSeq = 0;

  private readonly jobMap = new Map<number, JobState>();
  /** Jobs by handle. Read-only outside: jobOf's cache follows the model's own changes only. */
  get jobs(): ReadonlyMap<number, JobState> {
    return this.jobMap;
  }
  /** Mismatch reasons set from outside the model (the attach merge), by MISMATCH_REASONS index. */
  private readonly externalReasons = new Uint8Array(MISMATCH_REASONS.length);
  /** Errors of the source and of collection, by reason. */
  readonly errors = new ErrorCounts();
  /** The source answered at the last refresh/poll (cuzk_up). */
  up = true;
  /**
   * The duration histograms as typed arrays (model-histograms.ts). They see observations
   * through `observer`: the exporter sets `observer = histograms` (Telemetry), and whoever
   * wants to see the observations too wraps it (the attach merge forwards a surface's
   * observations to `observer`; the scrape benchmark tees it).
   */
  readonly histograms: ModelHistograms = new ModelHistograms(this);
  /**
   * Receives histogram observations when partitions/proofs finish; null: nobody records them.
   * Those of a batch of events reach it at the batch's end (observation-queue.ts), before
   * applyEvents/applyRecords return.
   */
  observer: ModelObserver | null = null;
  /**
   * When an array (the native engine sets one), the job handle of every JOB_DONE record
   * applied and -1 - handle of every JOB_EVICTED one, in order, known jobs or not: the
   * engine settles awaited proofs and forgets request ids from it after each batch, instead
   * of reading every event of the batch again (~2 ns an event). Its reader empties it.
   */
  jobEnds: number[] | null = null;
  /** jobOf's cache: the handle in each slot (-1: empty) and its job. */
  private readonly jobCacheKey = new Float64Array(JOB_CACHE_SIZE).fill(-1);
  private readonly jobCacheVal: (JobState | undefined)[] = new Array<JobState | undefined>(JOB_CACHE_SIZE).fill(undefined);
  private readonly observations = new ObservationQueue();

  /** Replaces the topology; workers/GPUs that persist (same id) keep their totals. */
  setTopology(next: Topology, nowNs: number): void {
    const prev = this.topology;
    const same =
      prev.lockEvents === next.lockEvents &&
      prev.workers.length === next.workers.length &&
      prev.gpus.length === next.gpus.length &&
      next.workers.every((w, i) => prev.workers[i].id === w.id && prev.workers[i].gpu === w.gpu) &&
      next.gpus.every(
        (g, i) =>
          prev.gpus[i].ordinal === g.ordinal &&
          prev.gpus[i].name === g.name &&
          prev.gpus[i].uuid === g.uuid &&
          prev.gpus[i].pciBusId === g.pciBusId,
      );
    // Called on every compose (a fleet: 100 targets a second): nothing is built until it differs.
    if (same) return;

    const prevWorkerSlot = new Map(prev.workers.map((w, i) => [w.id, i]));
    const prevGpuSlot = new Map(prev.gpus.map((g, i) => [g.ordinal, i]));
    const nw = next.workers.length;
    const ng = next.gpus.length;
    const wBusy = new Uint8Array(nw);
    const wSinceNs = new Float64Array(nw);
    const wBusyNs = new Float64Array(nw);
    const wPartitions = new Float64Array(nw);
    const wJob = new Float64Array(nw);
    const wPartition = new Int32Array(nw).fill(-1);
    const wKind = new Int16Array(nw).fill(-1);
    const wPickNs = new Float64Array(nw);
    const wCapNs = new Float64Array(nw).fill(Infinity);
    const oJob = new Float64Array(nw);
    const oPart = new Int32Array(nw).fill(-1);
    next.workers.forEach((w, i) => {
      const j = prevWorkerSlot.get(w.id);
      if (j === undefined) return;
      wBusy[i] = this.wBusy[j];
      wSinceNs[i] = this.wSinceNs[j];
      wBusyNs[i] = this.wBusyNs[j];
      wPartitions[i] = this.wPartitions[j];
      wJob[i] = this.wJob[j];
      wPartition[i] = this.wPartition[j];
      wKind[i] = this.wKind[j];
      wPickNs[i] = this.wPickNs[j];
      wCapNs[i] = this.wCapNs[j];
      oJob[i] = this.oJob[j];
      oPart[i] = this.oPart[j];
    });
    const gLockHeld = new Uint8Array(ng);
    const gLockSinceNs = new Float64Array(ng);
    const gLockHeldNs = new Float64Array(ng);
    const gStarvedSinceNs = new Float64Array(ng).fill(NaN);
    const gStarvedNs = new Float64Array(ng);
    const gLastReleaseNs = new Float64Array(ng).fill(NaN);
    next.gpus.forEach((g, i) => {
      const j = prevGpuSlot.get(g.ordinal);
      if (j === undefined) {
        if (next.lockEvents && this.wantsWork()) gStarvedSinceNs[i] = nowNs;
        return;
      }
      gLockHeld[i] = this.gLockHeld[j];
      gLockSinceNs[i] = this.gLockSinceNs[j];
      gLockHeldNs[i] = this.gLockHeldNs[j];
      gStarvedSinceNs[i] = this.gStarvedSinceNs[j];
      gStarvedNs[i] = this.gStarvedNs[j];
      gLastReleaseNs[i] = this.gLastReleaseNs[j];
    });
    Object.assign(this, {
      wBusy, wSinceNs, wBusyNs, wPartitions, wJob, wPartition, wKind, wPickNs, wCapNs, oJob, oPart,
      gLockHeld, gLockSinceNs, gLockHeldNs, gStarvedSinceNs, gStarvedNs, gLastReleaseNs,
    });
    this.busyWorkers = wBusy.reduce((a, b) => a + b, 0);
    this.ownedCount = oPart.reduce((a, p) => a + (p >= 0 ? 1 : 0), 0);
    this.topology = {
      gpus: next.gpus.map((g) => ({ ...g })),
      workers: next.workers.map((w) => ({ ...w })),
      lockEvents: next.lockEvents,
    };
    this.topologyVersion++;
  }

  /**
   * Partitions on the GPU as cuzk's /status counts them: in the `gpu` state plus those
   * finalizing (kernels done, epilogue running), all kinds.
   */
  /**
   * Of partitionsOnGpu(), those TIMELINE does not vouch for (attach with TIMELINE sets it): a
   * pickup with no GPU_START yet (it may be a skip), or a partition whose worker has picked up
   * a later one since — its GPU stage is over (cuzk's worker loops only after gpu_prove_start
   * returns), what is left is the finalizer's CPU work or an end line never written (a GPU
   * failure). They are not "on the GPU" for idle_with_partitions_on_gpu.
   */
  supersededOnGpu = 0;

  partitionsOnGpu(): number {
    let n = 0;
    for (let k = 0; k < KIND_SLOTS; k++) {
      n += this.kLive[k * LIVE_PARTITION_STATES + LIVE_GPU] + this.kLive[k * LIVE_PARTITION_STATES + LIVE_FINALIZING];
    }
    return n;
  }

  /** Partitions finalizing (split proving: GPU lock released, CPU epilogue running), all kinds. */
  partitionsFinalizing(): number {
    let n = 0;
    for (let k = 0; k < KIND_SLOTS; k++) n += this.kLive[k * LIVE_PARTITION_STATES + LIVE_FINALIZING];
    return n;
  }

  /**
   * Whether one mismatch reason holds now (MISMATCH_REASONS index). Only certain
   * contradictions count; partitions in gpu/finalizing outnumbering busy workers is healthy
   * split proving and is not one. O(workers).
   */
  mismatchReason(reason: number): boolean {
    if (this.externalReasons[reason]) return true;
    switch (reason) {
      case MM_IDLE_WITH_PARTITIONS:
        // The seed's screenshot: partitions on the GPU while no worker at all is busy. A
        // worker is busy until the end of the latest partition it picked up, and partitions
        // end in pickup order, so on a correct prover every such partition has a busy worker.
        return this.busyWorkers === 0 && this.wBusy.length > 0 && this.partitionsOnGpu() - this.supersededOnGpu > 0;
      case MM_OWNER_IDLE: {
        // Exact per worker where hand-offs name their worker: its newest partition has not
        // ended, yet it is reported idle.
        if (this.ownedCount === 0) return false;
        const o = this.oPart;
        const b = this.wBusy;
        for (let w = 0; w < o.length; w++) if (o[w] >= 0 && b[w] === 0) return true;
        return false;
      }
      default:
        return false;
    }
  }

  /** cuzk_status_mismatch: any reason holds. */
  statusMismatch(): boolean {
    for (let r = 0; r < MISMATCH_REASONS.length; r++) if (this.mismatchReason(r)) return true;
    return false;
  }

  /** The reasons that hold now, by name. */
  mismatchReasons(): MismatchReason[] {
    return MISMATCH_REASONS.filter((_, r) => this.mismatchReason(r));
  }

  /**
   * Sets or clears a reason computed outside the model (the attach merge's
   * `surfaces_disagree`); it holds until cleared. Reasons the model computes itself are
   * OR-ed with it.
   */
  setMismatchReason(reason: MismatchReason, active: boolean): void {
    const r = MISMATCH_REASONS.indexOf(reason);
    if (r < 0) throw new Error(`unknown mismatch reason ${reason}`);
    this.externalReasons[r] = active ? 1 : 0;
  }

  /** Busy ns of a worker including its running stint up to nowNs. */
  workerBusyNsAt(slot: number, nowNs: number): number {
    const running = this.wBusy[slot] ? Math.max(0, Math.min(nowNs, this.wCapNs[slot]) - this.wSinceNs[slot]) : 0;
    return this.wBusyNs[slot] + running;
  }

  /**
   * Seconds the worker has owned its current partition, since that partition's pickup (0
   * when idle). Not the stint: under full load a healthy worker's stint never ends.
   */
  workerStintSecondsAt(slot: number, nowNs: number): number {
    return this.wBusy[slot] ? Math.max(0, nowNs - this.wPickNs[slot]) / NS_PER_S : 0;
  }

  gpuLockHeldNsAt(slot: number, nowNs: number): number {
    const running = this.gLockHeld[slot] ? Math.max(0, nowNs - this.gLockSinceNs[slot]) : 0;
    return this.gLockHeldNs[slot] + running;
  }

  gpuStarvedNsAt(slot: number, nowNs: number): number {
    const since = this.gStarvedSinceNs[slot];
    return this.gStarvedNs[slot] + (since === since ? Math.max(0, nowNs - since) : 0);
  }

  /**
   * Applies `count` 48-byte records from `view` (starting at byte `offset`). Returns the
   * number of records that were skipped as already seen (seq <= lastSeq after a re-sync).
   */
  applyEvents(view: DataView, count: number, offset = 0): number {
    let skipped = 0;
    for (let i = 0; i < count; i++) {
      const off = offset + i * EVENT_SIZE;
      const seq = readU64(view, off + EV_OFF_SEQ);
      if (seq <= this.lastSeq) {
        skipped++;
        continue;
      }
      this.lastSeq = seq;
      this.eventsTotal++;
      // The gauge events (a third of a busy engine's) here: the call of applyOne and its
      // header decode cost more than the rest of such an event (~17 -> 10 ns an event).
      // (lastEventNs is read only inside applyOne, after applyOne has set it.)
      const type = view.getUint16(off + EV_OFF_TYPE, true);
      if (type === EV_SYNTH_ACTIVE) this.synthActive = readU64(view, off + EV_OFF_VALUE);
      else if (type === EV_MEMORY) this.memoryUsedBytes = readU64(view, off + EV_OFF_VALUE);
      else this.applyOne(view, off);
    }
    if (this.observations.n > 0) this.deliverObservations();
    return skipped;
  }

  /**
   * Applies records built in JS (attach source, re-sync). Sequenced records get the next
   * sequence numbers and count as events; unsequenced ones (re-sync) only move state.
   */
  applyRecords(records: EventRecord[], sequenced: boolean): void {
    if (records.length === 0) return;
    if (sequenced) records.forEach((r, i) => (r.seq = this.lastSeq + 1 + i));
    const view = encodeEvents(records);
    if (sequenced) this.applyEvents(view, records.length);
    else {
      for (let i = 0; i < records.length; i++) this.applyOne(view, i * EVENT_SIZE);
      if (this.observations.n > 0) this.deliverObservations();
    }
  }

  /** Hands the queued observations to the observer (none queued without one). */
  private deliverObservations(): void {
    if (this.observer !== null) this.observations.deliver(this.observer);
    else this.observations.n = 0;
  }

  private applyOne(v: DataView, off: number): void {
    const type = v.getUint16(off + EV_OFF_TYPE, true);
    const t = readU64(v, off + EV_OFF_T_NS);
    const flags = v.getUint16(off + EV_OFF_FLAGS, true);
    const resync = (flags & EVF_RESYNC) !== 0;
    this.lastEventNs = t;
    switch (type) {
      case EV_PARTITION: {
        const job = this.jobOf(readU64(v, off + EV_OFF_JOB));
        if (!job) return;
        const p = v.getUint32(off + EV_OFF_PARTITION, true);
        if (p >= job.states.length) return;
        const next = v.getUint32(off + EV_OFF_AUX, true);
        const prev = job.states[p];
        if (next === prev || next >= PART_STATE_COUNT) return;
        this.moveLive(job.kind, prev, next);
        job.states[p] = next;
        const w = v.getUint16(off + EV_OFF_WORKER, true);
        if (next === PART_GPU) {
          // A hand-off names its worker (native engine): that worker's newest partition.
          if (w < this.oPart.length) {
            if (this.oPart[w] < 0) this.ownedCount++;
            this.oJob[w] = job.handle;
            this.oPart[w] = p;
            job.ranBy[p] = w;
          }
        } else if (next === PART_DONE || next === PART_FAILED) {
          if (this.ownedCount > 0) this.endOwned(job.handle, p, w);
        }
        if (next === PART_FINALIZING) {
          // State-only records (snapshots) do not know when the kernels ended.
          job.finSinceNs[p] = resync ? NaN : t;
          return;
        }
        if (resync) return;
        const ns = readU64(v, off + EV_OFF_VALUE);
        const k = job.kind;
        if (next === PART_SYNTH_DONE) {
          this.kSynthNs[k] += ns;
          if (this.observer !== null && this.observations.push(OBS_PARTITION_SYNTHESIS, k, ns, job.handle, p)) this.deliverObservations();
        } else if ((prev === PART_GPU || prev === PART_FINALIZING) && (next === PART_DONE || next === PART_FAILED)) {
          // The GPU stage includes the finalize tail (as cuzk's gpu_ms and CTRK_GPU_NS do).
          // The worker that ran it finished one more partition (as CTRW_PARTITIONS counts: at
          // the partition's end, whatever the worker owns by then). The end record names it
          // (native engine); otherwise the worker seen picking it up (snapshots).
          const ran = w < this.wPartitions.length ? w : job.ranBy[p];
          if (ran >= 0 && ran < this.wPartitions.length) this.wPartitions[ran]++;
          this.kGpuNs[k] += ns;
          if (this.observer !== null && this.observations.push(OBS_PARTITION_GPU, k, ns, job.handle, p)) this.deliverObservations();
          const since = job.finSinceNs[p];
          if (prev === PART_FINALIZING && since === since) {
            const fin = Math.max(0, t - since);
            this.kFinalizeNs[k] += fin;
            if (this.observer !== null && this.observations.push(OBS_PARTITION_FINALIZE, k, fin, 0, 0)) this.deliverObservations();
          }
        }
        if (next === PART_DONE) this.kPartsCompleted[k]++;
        else if (next === PART_FAILED && (flags & EVF_ABANDONED) === 0) this.kPartsFailed[k]++;
        return;
      }
      case EV_WORKER: {
        const w = v.getUint16(off + EV_OFF_WORKER, true);
        if (w >= this.wBusy.length) return;
        const busy = v.getUint32(off + EV_OFF_AUX, true) !== 0;
        if (busy) {
          if (!this.wBusy[w]) {
            this.busyWorkers++;
            this.wBusy[w] = 1;
            this.wSinceNs[w] = t;
          } else if (resync) {
            this.wSinceNs[w] = t;
          }
          // (busy while busy: ownership moves to the new partition, the stint continues,
          // busy_since unchanged)
          this.wPickNs[w] = t;
          this.wJob[w] = readU64(v, off + EV_OFF_JOB);
          const pp = v.getUint32(off + EV_OFF_PARTITION, true);
          this.wPartition[w] = pp;
          const picked = this.jobOf(this.wJob[w]);
          if (picked && pp < picked.ranBy.length) picked.ranBy[pp] = w;
          const kind = v.getUint8(off + EV_OFF_KIND);
          this.wKind[w] = kind < KIND_SLOTS ? kind : OTHER_KIND_INDEX;
        } else {
          if (this.wBusy[w]) this.busyWorkers--;
          this.wBusy[w] = 0;
          this.wPartition[w] = -1;
          this.wJob[w] = 0;
          this.wKind[w] = -1;
          if (resync) return;
          this.wBusyNs[w] += readU64(v, off + EV_OFF_VALUE);
        }
        return;
      }
      case EV_GPU_LOCK: {
        const g = v.getUint8(off + EV_OFF_GPU);
        if (g >= this.gLockHeld.length) return;
        // A re-sync record stands for holds we never saw: whatever the open starvation
        // interval would add is unknown, so it is dropped (the native total is adopted).
        if (resync) this.gStarvedSinceNs[g] = NaN;
        const acquired = v.getUint32(off + EV_OFF_AUX, true) !== 0;
        const value = readU64(v, off + EV_OFF_VALUE);
        if (acquired) {
          this.gLockHeld[g] = 1;
          this.gLockSinceNs[g] = t;
          if (!resync && (flags & EVF_FIRST) === 0 && this.observer !== null && this.observations.push(OBS_GPU_IDLE_GAP, g, value, 0, 0)) this.deliverObservations();
        } else {
          this.gLockHeld[g] = 0;
          this.gLastReleaseNs[g] = t;
          if (!resync) this.gLockHeldNs[g] += value;
        }
        this.updateStarved(g, t);
        return;
      }
      case EV_JOB_QUEUED:
        this.addJob(readU64(v, off + EV_OFF_JOB), v.getUint8(off + EV_OFF_KIND), v.getUint32(off + EV_OFF_PARTITION, true), t);
        return;
      case EV_JOB_STARTED: {
        const job = this.jobMap.get(readU64(v, off + EV_OFF_JOB));
        if (job && !resync && this.observer !== null && this.observations.push(OBS_QUEUE_WAIT, job.kind, readU64(v, off + EV_OFF_VALUE), job.handle, 0)) this.deliverObservations();
        return;
      }
      case EV_JOB_DONE: {
        const handle = readU64(v, off + EV_OFF_JOB);
        if (this.jobEnds !== null) this.jobEnds.push(handle);
        const job = this.jobMap.get(handle);
        if (!job || job.finished) return;
        job.finished = true;
        this.setUnfinished(this.unfinishedJobs - 1);
        // Partitions still live when the job ends (a failed/cancelled job) leave the gauges.
        for (let p = 0; p < job.states.length; p++) {
          if (liveSlot(job.states[p]) >= 0) {
            this.moveLive(job.kind, job.states[p], PART_FAILED);
            job.states[p] = PART_FAILED;
          }
        }
        if (this.ownedCount > 0) this.endOwnedJob(job.handle);
        if (resync) return;
        const outcome = v.getUint32(off + EV_OFF_AUX, true);
        if (outcome === OUTCOME_COMPLETED) this.kProofsCompleted[job.kind]++;
        else if (outcome === OUTCOME_FAILED) this.kProofsFailed[job.kind]++;
        else if (outcome === OUTCOME_CANCELLED) this.kProofsCancelled[job.kind]++;
        if (this.observer !== null && this.observations.push(OBS_PROOF_DONE, job.kind, readU64(v, off + EV_OFF_VALUE), job.handle, outcome)) this.deliverObservations();
        return;
      }
      case EV_JOB_EVICTED: {
        const handle = readU64(v, off + EV_OFF_JOB);
        if (this.jobEnds !== null) this.jobEnds.push(-1 - handle);
        const job = this.jobMap.get(handle);
        if (!job) return;
        this.jobCacheKey[handle & (JOB_CACHE_SIZE - 1)] = -1;
        for (let p = 0; p < job.states.length; p++) this.moveLive(job.kind, job.states[p], PART_FAILED);
        if (this.ownedCount > 0) this.endOwnedJob(handle);
        if (!job.finished) this.setUnfinished(this.unfinishedJobs - 1);
        this.jobMap.delete(handle);
        return;
      }
      case EV_QUEUE_DEPTH: {
        const kind = v.getUint8(off + EV_OFF_KIND);
        this.kQueueDepth[kind < KIND_SLOTS ? kind : OTHER_KIND_INDEX] = readU64(v, off + EV_OFF_VALUE);
        return;
      }
      case EV_SYNTH_ACTIVE:
        this.synthActive = readU64(v, off + EV_OFF_VALUE);
        return;
      case EV_MEMORY:
        this.memoryUsedBytes = readU64(v, off + EV_OFF_VALUE);
        return;
      default:
        return; // unknown types are skipped: a newer library may add some
    }
  }

  /**
   * A job queued (EV_JOB_QUEUED). Its own function, kept out of applyOne: its allocations
   * inlined there made the whole switch's code slower whenever an observer was set.
   */
  private addJob(handle: number, kind: number, n: number, t: number): void {
    if (this.jobMap.has(handle)) return;
    const job: JobState = {
      handle,
      kind: kind < KIND_SLOTS ? kind : OTHER_KIND_INDEX,
      states: new Uint8Array(n), // all PART_PENDING (0)
      // Plain arrays: a typed array past 64 bytes gets its own off-heap buffer, ~0.6 us each.
      finSinceNs: new Array<number>(n).fill(NaN),
      ranBy: new Array<number>(n).fill(-1),
      submittedNs: t,
      finished: false,
    };
    this.jobMap.set(handle, job);
    this.kLive[job.kind * LIVE_PARTITION_STATES + PART_PENDING] += n;
    this.setUnfinished(this.unfinishedJobs + 1);
  }

  /**
   * model.jobs.get(handle) through a direct-mapped cache (JOB_CACHE_SIZE slots by handle):
   * most events name a job, the jobs in flight are a few consecutive handles, and a Map
   * lookup costs several times a typed-array load. A slot is cleared when its job leaves.
   */
  private jobOf(handle: number): JobState | undefined {
    const c = handle & (JOB_CACHE_SIZE - 1);
    if (this.jobCacheKey[c] === handle) return this.jobCacheVal[c];
    const job = this.jobMap.get(handle);
    if (job !== undefined) {
      this.jobCacheKey[c] = handle;
      this.jobCacheVal[c] = job;
    }
    return job;
  }

  /** Moves one partition of `kind` between states, keeping live counts and the GPU queue. */
  private moveLive(kind: number, from: number, to: number): void {
    const a = liveSlot(from);
    const b = liveSlot(to);
    if (a >= 0) this.kLive[kind * LIVE_PARTITION_STATES + a]--;
    if (b >= 0) this.kLive[kind * LIVE_PARTITION_STATES + b]++;
    if (from === PART_SYNTH_DONE) this.setSynthDone(this.synthDoneTotal - 1);
    if (to === PART_SYNTH_DONE) this.setSynthDone(this.synthDoneTotal + 1);
  }

  /**
   * A partition ended: the worker that owned it as its newest owns nothing now. The end
   * record names its worker on the native path; records without one (snapshots) are
   * matched against every worker.
   */
  private endOwned(handle: number, p: number, w: number): void {
    if (w < this.oPart.length) {
      if (this.oPart[w] === p && this.oJob[w] === handle) {
        this.oPart[w] = -1;
        this.ownedCount--;
      }
      return;
    }
    for (let x = 0; x < this.oPart.length; x++) {
      if (this.oPart[x] === p && this.oJob[x] === handle) {
        this.oPart[x] = -1;
        this.ownedCount--;
      }
    }
  }

  private endOwnedJob(handle: number): void {
    for (let x = 0; x < this.oPart.length; x++) {
      if (this.oPart[x] >= 0 && this.oJob[x] === handle) {
        this.oPart[x] = -1;
        this.ownedCount--;
      }
    }
  }

  // Starvation (DESIGN §5, as the native engine defines it): a GPU's lock is free, no
  // synthesized partition waits, and work is outstanding (an idle engine is not starved).
  // Edges are stamped with the time of the event that caused them.
  private lastEventNs = 0;
  private wantsWork(): boolean {
    return this.synthDoneTotal === 0 && this.unfinishedJobs > 0;
  }

  private setSynthDone(n: number): void {
    const was = this.wantsWork();
    this.synthDoneTotal = n;
    if (was !== this.wantsWork()) this.updateAllStarved();
  }

  private setUnfinished(n: number): void {
    const was = this.wantsWork();
    this.unfinishedJobs = Math.max(0, n);
    if (was !== this.wantsWork()) this.updateAllStarved();
  }

  private updateAllStarved(): void {
    if (!this.topology.lockEvents) return;
    for (let g = 0; g < this.gLockHeld.length; g++) this.updateStarved(g, this.lastEventNs);
  }

  private updateStarved(g: number, t: number): void {
    const starved = !this.gLockHeld[g] && this.wantsWork();
    const since = this.gStarvedSinceNs[g];
    const was = since === since;
    if (starved && !was) this.gStarvedSinceNs[g] = t;
    else if (!starved && was) {
      this.gStarvedNs[g] += Math.max(0, t - since);
      this.gStarvedSinceNs[g] = NaN;
    }
  }

  /**
   * Adopts authoritative totals read at c.nowNs (after a sequence gap, once the state has
   * been re-synced from a snapshot). The totals include running intervals up to c.nowNs;
   * the model keeps completed time plus a start timestamp, so the running part is taken
   * off using the start times the snapshot restored. Counters never go down.
   */
  adoptTotals(c: CounterTotals): void {
    const T = c.nowNs;
    const set = (dst: Float64Array, i: number, v: number) => {
      if (v > dst[i]) dst[i] = v;
    };
    for (let w = 0; w < this.wBusy.length && w < c.workerBusyNs.length; w++) {
      const running = this.wBusy[w] ? Math.max(0, T - this.wSinceNs[w]) : 0;
      set(this.wBusyNs, w, c.workerBusyNs[w] - running);
      set(this.wPartitions, w, c.workerPartitions[w] ?? 0);
    }
    for (let g = 0; g < this.gLockHeld.length && g < c.gpuLockHeldNs.length; g++) {
      const held = this.gLockHeld[g] ? Math.max(0, T - this.gLockSinceNs[g]) : 0;
      set(this.gLockHeldNs, g, c.gpuLockHeldNs[g] - held);
      const since = this.gStarvedSinceNs[g];
      const starved = since === since ? Math.max(0, T - since) : 0;
      set(this.gStarvedNs, g, (c.gpuStarvedNs[g] ?? 0) - starved);
    }
    for (let k = 0; k < KIND_SLOTS; k++) {
      set(this.kGpuNs, k, c.kindGpuNs[k] ?? 0);
      set(this.kSynthNs, k, c.kindSynthNs[k] ?? 0);
      if (c.kindFinalizeNs) set(this.kFinalizeNs, k, c.kindFinalizeNs[k] ?? 0);
      set(this.kPartsCompleted, k, c.kindPartsCompleted[k] ?? 0);
      set(this.kPartsFailed, k, c.kindPartsFailed[k] ?? 0);
      set(this.kProofsCompleted, k, c.kindProofsCompleted[k] ?? 0);
      set(this.kProofsFailed, k, c.kindProofsFailed[k] ?? 0);
      set(this.kProofsCancelled, k, c.kindProofsCancelled[k] ?? 0);
    }
  }
}
