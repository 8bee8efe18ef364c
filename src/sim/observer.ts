/**
 * The one observer of the engine's drained events in `simulate` (NativeEngine.onEvents:
 * the engine has a single drain cursor, so nothing else may drain). It decodes each event
 * once with DataView reads into plain numbers (no per-event objects) and feeds what cuzk's
 * other surfaces are made of:
 *  - the TIMELINE lines (TimelineWriter);
 *  - GetStatus's per-worker current job, maintained as cuzk's tracker does it
 *    (GrpcWorkerView: set at every hand-off, cleared when a partition the worker ran ends);
 *  - GetMetrics' window of recent proof durations;
 *  - job handle <-> request id, and what the ground truth needs to know it is complete
 *    (last sequence number seen, jobs in flight, partitions in the GPU stage).
 * After a sequence gap (ring overflow) it re-syncs from the engine's snapshot and skips
 * the events that snapshot already reflects.
 */
import {
  EVENT_SIZE,
  EV_GPU_LOCK,
  EV_JOB_DONE,
  EV_JOB_EVICTED,
  EV_JOB_QUEUED,
  EV_OFF_AUX,
  EV_OFF_JOB,
  EV_OFF_KIND,
  EV_OFF_PARTITION,
  EV_OFF_T_NS,
  EV_OFF_TYPE,
  EV_OFF_VALUE,
  EV_OFF_WORKER,
  EV_PARTITION,
  NO_WORKER,
  readU64,
} from '../engine/event-layout';
import { OUTCOME_COMPLETED, PART_DONE, PART_FAILED, PART_GPU, PART_SYNTH_DONE, PART_SYNTHESIZING, PROOF_KINDS, kindIndex } from '../engine/kinds';
import type { NativeEngine } from '../engine/native-engine';
import type { CuzkStatus } from '../engine/status-schema';
import type { GrpcWorkerView } from './worker-view';
import { RecentDurations } from './metrics-text';
import type { TimelineWriter } from './timeline-writer';

/** cuzk proves WindowPoSt and WinningPoSt whole ("monolithic"), never as a partitioned pipeline. */
export const MONOLITHIC_KINDS: ReadonlySet<string> = new Set(['window-post', 'winning-post']);
const MONO = PROOF_KINDS.map((k) => MONOLITHIC_KINDS.has(k));
const isMonolithic = (kind: number): boolean => MONO[kind] === true;

/** Job handle <-> request id (cuzk's job id). Entries go when the engine evicts the job. */
export class JobDirectory {
  private readonly byHandle = new Map<number, string>();
  private readonly byId = new Map<string, number>();

  add(handle: number, id: string): void {
    this.byHandle.set(handle, id);
    this.byId.set(id, handle);
  }

  idOf(handle: number): string | undefined {
    return this.byHandle.get(handle);
  }

  handleOf(id: string): number | undefined {
    return this.byId.get(id);
  }

  forget(handle: number): void {
    const id = this.byHandle.get(handle);
    this.byHandle.delete(handle);
    if (id !== undefined && this.byId.get(id) === handle) this.byId.delete(id);
  }
}

export class SimObserver {
  readonly jobs = new JobDirectory();
  readonly recent = new RecentDurations();
  /** Sequence number of the last event seen. */
  lastSeq = 0;
  /** Sequence gaps seen (each one re-synced from a snapshot). */
  gaps = 0;
  /** Jobs queued and not yet done. */
  jobsInFlight = 0;
  /** Partitions handed to a worker whose GPU stage has not ended (gpu or finalizing). */
  gpuStagePartitions = 0;
  /** Events at or below this sequence number are already in the re-synced state. */
  private skipThrough = 0;

  constructor(
    private readonly engine: NativeEngine,
    readonly workers: GrpcWorkerView,
    readonly timeline: TimelineWriter | null,
  ) {}

  /** Becomes the engine's event observer. */
  install(): void {
    this.engine.onEvents = (view, n) => this.onEvents(view, n);
  }

  /** The request id of a job handle, asked of the engine once per job. */
  jobId(handle: number): string {
    let id = this.jobs.idOf(handle);
    if (id === undefined) {
      try {
        id = this.engine.requestId(handle);
      } catch {
        id = String(handle);
      }
      this.jobs.add(handle, id);
    }
    return id;
  }

  onEvents(view: DataView, n: number): void {
    let gap = false;
    const tl = this.timeline;
    for (let i = 0; i < n; i++) {
      const off = i * EVENT_SIZE;
      const seq = readU64(view, off);
      if (this.lastSeq !== 0 && seq !== this.lastSeq + 1) gap = true;
      this.lastSeq = seq;
      if (seq <= this.skipThrough) continue;
      const type = view.getUint16(off + EV_OFF_TYPE, true);
      switch (type) {
        case EV_PARTITION: {
          const state = view.getUint32(off + EV_OFF_AUX, true);
          const worker = view.getUint16(off + EV_OFF_WORKER, true);
          const leavesGpu = (state === PART_DONE || state === PART_FAILED) && worker !== NO_WORKER;
          if (state !== PART_SYNTHESIZING && state !== PART_SYNTH_DONE && state !== PART_GPU && !leavesGpu) break;
          const tNs = readU64(view, off + EV_OFF_T_NS);
          const job = readU64(view, off + EV_OFF_JOB);
          const part = view.getUint32(off + EV_OFF_PARTITION, true);
          const kind = view.getUint8(off + EV_OFF_KIND);
          const mono = isMonolithic(kind);
          const id = this.jobId(job);
          if (state === PART_SYNTHESIZING) {
            tl?.synthStart(tNs, id, part, mono, PROOF_KINDS[kind] ?? 'unknown');
          } else if (state === PART_SYNTH_DONE) {
            tl?.synthEnd(tNs, id, part, mono, readU64(view, off + EV_OFF_VALUE));
          } else if (state === PART_GPU) {
            this.gpuStagePartitions++;
            this.workers.pickup(worker, job, id, part, kind);
            tl?.pickup(tNs, id, part, mono, worker);
          } else {
            if (this.gpuStagePartitions > 0) this.gpuStagePartitions--;
            this.workers.end(worker, job, part);
            tl?.gpuEnd(tNs, id, part, mono, worker, readU64(view, off + EV_OFF_VALUE));
          }
          break;
        }
        case EV_GPU_LOCK:
          if (tl && view.getUint32(off + EV_OFF_AUX, true) === 1) {
            tl.lockAcquired(readU64(view, off + EV_OFF_T_NS), view.getUint16(off + EV_OFF_WORKER, true));
          }
          break;
        case EV_JOB_QUEUED:
          this.jobsInFlight++;
          this.jobId(readU64(view, off + EV_OFF_JOB));
          break;
        case EV_JOB_DONE:
          if (this.jobsInFlight > 0) this.jobsInFlight--;
          if (view.getUint32(off + EV_OFF_AUX, true) === OUTCOME_COMPLETED) {
            this.recent.push(view.getUint8(off + EV_OFF_KIND), readU64(view, off + EV_OFF_VALUE) / 1e9);
          }
          break;
        case EV_JOB_EVICTED:
          this.jobs.forget(readU64(view, off + EV_OFF_JOB));
          break;
      }
    }
    tl?.flush();
    if (gap) this.resync();
  }

  /** State from a snapshot after a gap; events it already reflects are skipped. */
  private resync(): void {
    this.gaps++;
    let status: CuzkStatus;
    try {
      status = this.engine.status();
    } catch {
      return; // closing: nothing left to observe
    }
    this.skipThrough = Math.max(this.lastSeq, status.last_seq ?? 0);
    let inFlight = 0;
    let onGpu = 0;
    for (const p of status.pipelines) {
      if (typeof p.job_handle === 'number') this.jobs.add(p.job_handle, p.job_id);
      if (p.outcome === 'running' || (p.outcome === undefined && p.finished_secs_ago == null)) inFlight++;
      for (const part of p.partitions) if (part.state === 'gpu') onGpu++;
    }
    this.jobsInFlight = inFlight;
    this.gpuStagePartitions = onGpu;
    this.timeline?.forgetWorkers();
    this.workers.clear();
    for (const w of status.gpu_workers) {
      if (w.current_job == null || w.current_partition == null) continue;
      const handle = w.current_job_handle ?? this.jobs.handleOf(w.current_job) ?? 0;
      const kind = w.current_kind ? kindIndex(w.current_kind) : -1;
      this.workers.pickup(w.worker_id, handle, w.current_job, w.current_partition, kind);
      this.timeline?.assign(w.worker_id, w.current_job, w.current_partition, kind >= 0 && isMonolithic(kind));
    }
  }
}
