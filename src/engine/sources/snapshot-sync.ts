/**
 * Turns a status snapshot into the cuzk_event records that move a StateModel from what it
 * holds to what the snapshot shows. Two users:
 *  - the native engine after a sequence gap (records flagged EVF_RESYNC: state only; the
 *    totals then come from the native counters), and
 *  - the attach source, whose only view of a real cuzk is successive snapshots: there the
 *    records carry durations so each finished partition is counted exactly once.
 * One path from snapshot to model means one copy of the metric logic (DESIGN §7).
 */
import {
  EVF_ABANDONED,
  EVF_FIRST,
  EVF_RESYNC,
  EV_GPU_LOCK,
  EV_JOB_DONE,
  EV_JOB_EVICTED,
  EV_JOB_QUEUED,
  EV_MEMORY,
  EV_PARTITION,
  EV_QUEUE_DEPTH,
  EV_SYNTH_ACTIVE,
  EV_WORKER,
  EventRecord,
} from '../model/event-layout';
import {
  KIND_SLOTS,
  OTHER_KIND_INDEX,
  OUTCOME_CANCELLED,
  OUTCOME_COMPLETED,
  OUTCOME_FAILED,
  PART_DONE,
  PART_FAILED,
  PART_FINALIZING,
  PART_GPU,
  PART_PENDING,
  PART_RANK,
  PART_SYNTHESIZING,
  PART_SYNTH_DONE,
  partitionStateIndex,
} from '../model/kinds';
import type { StateModel } from '../model/state-model';
import type { CuzkPipeline, CuzkStatus, CuzkWorker } from './status-schema';

/** A snapshot normalised to model terms (slots, handles, state indexes). */
export interface SnapshotView {
  memoryUsedBytes: number;
  synthesisActive: number;
  queueDepthByKind: ArrayLike<number>; // per kind slot
  pipelines: PipelineView[];
  workers: WorkerView[];
  /** Per-GPU kernel-lock state, where the source reports it (the native engine). */
  gpus?: GpuView[];
}

export interface GpuView {
  slot: number;
  lockHeld: boolean;
  /** When the lock was taken, on the model's clock (ns). */
  lockSinceNs: number;
}

export interface PipelineView {
  handle: number;
  kind: number; // kind slot
  priority: number;
  /** States per partition index (PART_*). */
  states: ArrayLike<number>;
  /** Milliseconds as cuzk reports them; null before the stage started. */
  synthMs: ArrayLike<number | null>;
  gpuMs: ArrayLike<number | null>;
  /**
   * Per partition: failed because of its job (a sibling failed, the proof was cancelled),
   * not by its own error — our engine's `"abandoned": true`. Not a partition failure (one
   * meaning of cuzk_partitions_failed_total for every source).
   */
  abandoned?: ArrayLike<boolean>;
  /** When each partition entered finalizing, on the model's clock (native engine only). */
  finSinceNs?: ArrayLike<number | null>;
  /** The job has ended (all partitions done/failed, or the source says so). */
  outcome: number | null;
  /** Submit -> result, when the source knows it exactly. */
  durationNs?: number;
}

export interface WorkerView {
  slot: number;
  busy: boolean;
  handle: number;
  partition: number;
  kind: number;
  /** When the current stint started, on the model's clock (ns). */
  busySinceNs: number;
  /** busySinceNs is the source's exact stint start (the native engine's busy_since_ns). */
  exactSince?: boolean;
}

export interface SyncOptions {
  /** Timestamp for the records (ns, model clock). */
  tNs: number;
  /** State only (native re-sync): nothing is added to counters or histograms. */
  resync: boolean;
  /** Jobs that finished and aged out of the snapshot are evicted from the model. */
  evictMissing: boolean;
  /**
   * Count proofs (and their durations) from pipelines seen ending. Off for an attached
   * cuzk, whose own cumulative per-kind counters are exact where sampled pipelines are not.
   */
  countProofs: boolean;
  /**
   * Sampled sources (attach): running stints were known, and exposed by the busy-seconds
   * counters, up to this time (the previous snapshot). A stint seen ended is credited at
   * least that much, so the counter never goes down, and at most what the source reports
   * (the partition's final GPU time) or knew: time the source was not looked at is never
   * counted as busy. Without it (native re-sync) a stint ends at tNs.
   */
  stintFloorNs?: number;
  /** Handles of jobs absent from this snapshot that must not be treated as gone (their entry was unusable). */
  keep?: ReadonlySet<number>;
}

const MS_TO_NS = 1e6;

/** The records that take `model` to `snap`, in an order the model can apply. */
export function snapshotToEvents(model: StateModel, snap: SnapshotView, opt: SyncOptions): EventRecord[] {
  const out: EventRecord[] = [];
  const flags = opt.resync ? EVF_RESYNC : 0;
  const t = opt.tNs;
  const ev = (r: Omit<EventRecord, 'seq' | 'tNs'>) => out.push({ seq: 0, tNs: t, flags, ...r });

  // Workers first go idle where the snapshot says so (their partition may finish below).
  for (const w of snap.workers) {
    if (w.slot >= model.wBusy.length) continue;
    const wasBusy = model.wBusy[w.slot] === 1;
    if (wasBusy && !sameStint(model, w) && !movedOn(model, w, opt)) {
      ev({
        type: EV_WORKER,
        worker: w.slot,
        gpu: model.topology.workers[w.slot]?.gpu,
        job: model.wJob[w.slot],
        partition: model.wPartition[w.slot],
        aux: 0,
        value: stintNs(model, snap, w.slot, t, opt.stintFloorNs),
      });
    }
  }

  const seen = new Set<number>();
  for (const p of snap.pipelines) {
    seen.add(p.handle);
    const job = model.jobs.get(p.handle);
    if (!job) {
      ev({ type: EV_JOB_QUEUED, job: p.handle, kind: p.kind, partition: p.states.length, value: Math.max(0, p.priority) });
    }
    const current = job?.states;
    for (let i = 0; i < p.states.length; i++) {
      const from = current ? current[i] : PART_PENDING;
      const to = p.states[i];
      if (from === to || from === PART_DONE || from === PART_FAILED) continue;
      if (PART_RANK[to] < PART_RANK[from]) {
        // Went back (a retried partition): state only (EVF_RESYNC), nothing finished: back
        // to synth_done is no synthesis to observe.
        ev({ type: EV_PARTITION, job: p.handle, partition: i, aux: to, flags: flags | EVF_RESYNC });
        continue;
      }
      // Walk the pipeline order so every stage that ended is accounted for once, even when
      // a partition skipped states between two snapshots.
      if (to === PART_PENDING) {
        ev({ type: EV_PARTITION, job: p.handle, partition: i, aux: PART_PENDING });
        continue;
      }
      if (from < PART_SYNTHESIZING && to === PART_SYNTHESIZING) {
        ev({ type: EV_PARTITION, job: p.handle, partition: i, aux: PART_SYNTHESIZING });
        continue;
      }
      if (from < PART_SYNTH_DONE && to >= PART_SYNTH_DONE) {
        const synth = p.synthMs[i];
        const reached = to === PART_FAILED && synth === null ? PART_FAILED : PART_SYNTH_DONE;
        ev({ type: EV_PARTITION, job: p.handle, partition: i, aux: reached, value: synth === null ? 0 : synth * MS_TO_NS, flags: reached === PART_FAILED && p.abandoned?.[i] ? flags | EVF_ABANDONED : flags });
        if (reached === PART_FAILED) continue;
      }
      if (to === PART_SYNTH_DONE) continue;
      const gpu = p.gpuMs[i];
      if (to === PART_GPU || to === PART_FINALIZING || gpu !== null) {
        if (from !== PART_GPU && from !== PART_FINALIZING) ev({ type: EV_PARTITION, job: p.handle, partition: i, aux: PART_GPU });
        if (to === PART_GPU) continue;
      }
      if (to === PART_FINALIZING) {
        // When the kernels ended: our engine's snapshot says (finalizing_since_ns, its
        // clock); then the record carries it and the finalize time is exact. Otherwise
        // (cuzk, or an attached engine on another clock) state only: unknown, not guessed.
        const since = p.finSinceNs?.[i];
        if (typeof since === 'number') {
          out.push({ seq: 0, tNs: since, flags: flags & ~EVF_RESYNC, type: EV_PARTITION, job: p.handle, partition: i, aux: PART_FINALIZING });
        } else {
          ev({ type: EV_PARTITION, job: p.handle, partition: i, aux: PART_FINALIZING, flags: flags | EVF_RESYNC });
        }
        continue;
      }
      ev({
        type: EV_PARTITION,
        job: p.handle,
        partition: i,
        aux: to,
        value: gpu === null ? 0 : gpu * MS_TO_NS,
        flags: to === PART_FAILED && p.abandoned?.[i] ? flags | EVF_ABANDONED : flags,
      });
    }
    if (p.outcome !== null && !job?.finished) {
      const f = opt.countProofs ? flags : flags | EVF_RESYNC;
      ev({ type: EV_JOB_DONE, job: p.handle, kind: p.kind, aux: p.outcome, value: p.durationNs ?? 0, flags: f });
    }
  }
  if (opt.evictMissing) {
    for (const [handle, job] of model.jobs) {
      if (seen.has(handle) || opt.keep?.has(handle)) continue;
      if (!job.finished) ev({ type: EV_JOB_DONE, job: handle, kind: job.kind, aux: inferOutcome(job.states), value: 0, flags: flags | EVF_RESYNC });
      ev({ type: EV_JOB_EVICTED, job: handle, kind: job.kind });
    }
  }

  // GPU kernel locks (native re-sync): restore who holds one, and since when.
  for (const g of snap.gpus ?? []) {
    if (g.slot >= model.gLockHeld.length) continue;
    const held = model.gLockHeld[g.slot] === 1;
    // Same state and, if held, the same hold (events of another hold may have been lost).
    if (held === g.lockHeld && (!held || model.gLockSinceNs[g.slot] === g.lockSinceNs)) continue;
    out.push({ seq: 0, tNs: g.lockHeld ? g.lockSinceNs : t, flags: flags | EVF_FIRST, type: EV_GPU_LOCK, gpu: g.slot, aux: g.lockHeld ? 1 : 0 });
  }

  // Workers that are busy in the snapshot and were not (or on another partition) start now;
  // one that moved on to a newer partition within its stint continues it (a hand-off seen
  // between polls: its pickup time is not known closer than this snapshot).
  for (const w of snap.workers) {
    if (w.slot >= model.wBusy.length || !w.busy) continue;
    if (sameStint(model, w)) continue;
    out.push({
      seq: 0,
      tNs: movedOn(model, w, opt) ? t : w.busySinceNs,
      flags,
      type: EV_WORKER,
      worker: w.slot,
      gpu: model.topology.workers[w.slot]?.gpu,
      job: w.handle,
      partition: w.partition,
      kind: w.kind,
      aux: 1,
    });
  }

  for (let k = 0; k < KIND_SLOTS; k++) {
    const depth = snap.queueDepthByKind[k] ?? 0;
    if (model.kQueueDepth[k] !== depth) ev({ type: EV_QUEUE_DEPTH, kind: k, value: depth });
  }
  if (model.synthActive !== snap.synthesisActive) ev({ type: EV_SYNTH_ACTIVE, value: snap.synthesisActive });
  if (model.memoryUsedBytes !== snap.memoryUsedBytes) ev({ type: EV_MEMORY, value: snap.memoryUsedBytes });
  return out;
}

/**
 * The model holds the stint the snapshot shows: busy on the same partition and, where the
 * source gives the stint's exact start, since then. (After a sequence gap, a hand-off
 * applied on top of a lost stint end looks to the model like a move within its old stint.)
 */
function sameStint(model: StateModel, w: WorkerView): boolean {
  return (
    w.busy &&
    model.wBusy[w.slot] === 1 &&
    model.wJob[w.slot] === w.handle &&
    model.wPartition[w.slot] === w.partition &&
    (!w.exactSince || model.wSinceNs[w.slot] === w.busySinceNs)
  );
}

/**
 * Split proving (cuzk's fixed semantics, our engine): a worker stays busy from a pickup until
 * the end of the latest partition it picked up, so one stint can span several partitions.
 * A sampled source sees a busy worker on another partition than last time; if the stint the
 * snapshot reports started before the previous snapshot (when the worker was seen busy on
 * the old partition), it is the same stint continuing, not one that ended and a new one.
 * (cuzk's own busy_secs restarts at each pickup: there this is false and the old stint ends.)
 */
function movedOn(model: StateModel, w: WorkerView, opt: SyncOptions): boolean {
  return w.busy && model.wBusy[w.slot] === 1 && opt.stintFloorNs !== undefined && w.busySinceNs <= opt.stintFloorNs;
}

/**
 * A stint that ended between snapshots. Known for certain: it lasted at least until the
 * last time it was seen (floorNs; without one, until t). Its partition's final GPU time,
 * when the snapshot shows it, is the better figure when larger.
 */
function stintNs(model: StateModel, snap: SnapshotView, slot: number, t: number, floorNs?: number): number {
  const seen = Math.max(0, (floorNs ?? t) - model.wSinceNs[slot]);
  const handle = model.wJob[slot];
  const part = model.wPartition[slot];
  const p = snap.pipelines.find((x) => x.handle === handle);
  const gpu = p && part >= 0 && part < p.gpuMs.length ? p.gpuMs[part] : null;
  if (gpu !== null && gpu !== undefined && p && p.states[part] !== PART_GPU && p.states[part] !== PART_FINALIZING) return floorNs === undefined ? gpu * MS_TO_NS : Math.max(gpu * MS_TO_NS, seen);
  return seen;
}

function inferOutcome(states: Uint8Array): number {
  for (const s of states) if (s === PART_FAILED) return OUTCOME_FAILED;
  return OUTCOME_COMPLETED;
}

/** How a source names jobs, kinds and workers in model terms. */
export interface ViewMapping {
  /** Handle for a pipeline (native: job_handle; attach: assigned per job_id). */
  pipelineHandle(p: CuzkPipeline): number;
  /** Handle of the job a worker is on, or 0 if unknown. */
  workerJobHandle(w: CuzkWorker): number;
  kindSlot(name: string): number;
  /** Model slot of a worker, or -1 if not in the topology. */
  workerSlot(w: CuzkWorker): number;
  /** The model clock (ns) at the moment the snapshot was taken. */
  snapshotNs: number;
  /**
   * Use workers' busy_since_ns (the native engine's clock, which is the model's). Off for
   * an attached daemon, whose clock is not ours: busy_secs is used instead. Default on.
   */
  useBusySinceNs?: boolean;
}

/** Normalises a validated snapshot into model terms. */
export function viewFromStatus(s: CuzkStatus, m: ViewMapping): SnapshotView {
  const exactClock = m.useBusySinceNs !== false;
  const pipelines: PipelineView[] = s.pipelines.map((p) => {
    // One pass over the partitions (every partition of every poll in attach mode).
    const states: number[] = [];
    const synthMs: (number | null)[] = [];
    const gpuMs: (number | null)[] = [];
    const abandoned: boolean[] = [];
    const finSinceNs: (number | null)[] | undefined = exactClock ? [] : undefined;
    for (const x of p.partitions) {
      const y = x as { finalizing?: unknown; abandoned?: unknown; finalizing_since_ns?: unknown };
      // Our engine marks a partition whose kernels are done with `"finalizing": true` next to
      // cuzk's `"state": "gpu"`; cuzk's own /status cannot tell the two apart (both `gpu`).
      states.push(x.state === 'gpu' && y.finalizing === true ? PART_FINALIZING : partitionStateIndex(x.state));
      synthMs.push(x.synth_ms);
      gpuMs.push(x.gpu_ms);
      abandoned.push(y.abandoned === true);
      if (finSinceNs) {
        const v = y.finalizing_since_ns;
        finSinceNs.push(typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);
      }
    }
    return {
      handle: m.pipelineHandle(p),
      kind: m.kindSlot(p.proof_kind),
      priority: p.priority ?? 0,
      states,
      synthMs,
      gpuMs,
      abandoned,
      finSinceNs,
      outcome: pipelineOutcome(p, states),
    };
  });
  const workers: WorkerView[] = [];
  for (const w of s.gpu_workers) {
    const slot = m.workerSlot(w);
    if (slot < 0) continue;
    const busy = w.state === 'proving';
    // A stint cannot have started before the daemon did.
    const stintSecs = Math.min(w.busy_secs ?? 0, s.uptime_secs);
    const exactSince = m.useBusySinceNs !== false && typeof w.busy_since_ns === 'number';
    const since = exactSince ? (w.busy_since_ns as number) : m.snapshotNs - stintSecs * 1e9;
    workers.push({
      slot,
      busy,
      handle: busy ? m.workerJobHandle(w) : 0,
      partition: busy ? (w.current_partition ?? -1) : -1,
      kind: busy && w.current_kind ? m.kindSlot(w.current_kind) : OTHER_KIND_INDEX,
      busySinceNs: since,
      exactSince,
    });
  }
  const gpus: GpuView[] = [];
  if (m.useBusySinceNs !== false) {
    for (const g of s.gpus ?? []) {
      if (typeof g.lock_held !== 'boolean') continue;
      gpus.push({ slot: g.ordinal, lockHeld: g.lock_held, lockSinceNs: typeof g.lock_since_ns === 'number' ? g.lock_since_ns : m.snapshotNs });
    }
  }
  const queueDepthByKind = new Float64Array(KIND_SLOTS);
  const byKind = s.counters?.queue_depth_by_kind;
  if (byKind) for (const [k, n] of Object.entries(byKind)) queueDepthByKind[m.kindSlot(k)] += n;
  return {
    memoryUsedBytes: s.memory?.used_bytes ?? 0,
    synthesisActive: s.synthesis?.active ?? 0,
    queueDepthByKind,
    pipelines,
    workers,
    gpus,
  };
}

function pipelineOutcome(p: CuzkPipeline, states: number[]): number | null {
  switch (p.outcome) {
    case 'completed':
      return OUTCOME_COMPLETED;
    case 'failed':
      return OUTCOME_FAILED;
    case 'cancelled':
      return OUTCOME_CANCELLED;
    case 'running':
      return null;
    default:
      break;
  }
  // cuzk has no outcome field: a job whose partitions all ended has ended.
  let failed = false;
  for (const st of states) {
    if (st !== PART_DONE && st !== PART_FAILED) return null;
    if (st === PART_FAILED) failed = true;
  }
  return failed ? OUTCOME_FAILED : OUTCOME_COMPLETED;
}
