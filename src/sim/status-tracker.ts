/**
 * A port of upstream cuzk's `StatusTracker` (curio e0294b0f, extern/cuzk/cuzk-core/src/status.rs),
 * the state behind `GET /status`, method for method, quirks included:
 *  - jobs keyed by the job id STRING (`HashMap::insert`): a second job with the same id
 *    overwrites the first's JobState (register_job);
 *  - partition_synth_start / partition_synth_end add and subtract `synth_active` saturating;
 *    a synthesis failure calls partition_failed only, so `synth_active` never comes down for
 *    it (upstream leak, engine.rs synthesis worker pool, `Ok(Err(e))` arm);
 *  - partition_gpu_end marks the partition `done` WHATEVER the GPU result (it runs first in
 *    engine.rs process_partition_result) and clears the worker only if it still holds that
 *    (job, partition) (`still_mine`);
 *  - job_completed counts success/failure (only PoRep's self-check fails a job here) and
 *    stamps `completed_at`; snapshot() drops jobs completed 30 s or more ago; a job that
 *    failed any other way is never completed, so it stays in `pipelines` forever;
 *  - snapshot(): `uptime_secs` f64, `busy_secs` f64 since the worker's last gpu start,
 *    `synth_ms`/`gpu_ms` whole ms (`as_millis`), running ones up to now.
 * Instants are the engine's CLOCK_MONOTONIC nanoseconds (event timestamps), so a state change
 * is stamped when the engine made it, not when `simulate` drained it.
 * Bound (ours, upstream has none): at most MAX_JOBS JobStates; beyond that the oldest
 * registered goes first (upstream's failed-job leak would grow without end).
 */

export const PHASES = ['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed'] as const;
export type Phase = (typeof PHASES)[number];

interface PartitionState {
  phase: Phase;
  synthStart: number | null;
  synthEnd: number | null;
  gpuStart: number | null;
  gpuEnd: number | null;
}

interface JobState {
  proofKind: string;
  startedAt: number;
  totalPartitions: number;
  partitions: PartitionState[];
  completedAt: number | null;
}

interface GpuWorkerState {
  workerId: number;
  gpuOrdinal: number;
  busy: boolean;
  currentJobId: string | null;
  currentPartition: number | null;
  busySince: number | null;
}

export interface PartitionSnapshot {
  index: number;
  state: Phase;
  synth_ms: number | null;
  gpu_ms: number | null;
}

export interface PipelineSnapshot {
  job_id: string;
  proof_kind: string;
  started_secs_ago: number;
  total_partitions: number;
  partitions_done: number;
  partitions: PartitionSnapshot[];
}

export interface GpuWorkerSnapshot {
  worker_id: number;
  gpu_ordinal: number;
  state: 'idle' | 'proving';
  current_job: string | null;
  current_partition: number | null;
  busy_secs: number | null;
}

export interface TrackerSnapshot {
  uptime_secs: number;
  synthesis_active: number;
  pipelines: PipelineSnapshot[];
  gpu_workers: GpuWorkerSnapshot[];
  counters: {
    total_completed: number;
    total_failed: number;
    completed_by_kind: Record<string, number>;
    failed_by_kind: Record<string, number>;
    queue_depth: number;
  };
}

export const MAX_JOBS = 10_000;
const GC_SECS = 30;
const wholeMs = (ns: number): number => Math.max(0, Math.floor(ns / 1e6));

export class StatusTracker {
  private readonly jobs = new Map<string, JobState>();
  private workers: GpuWorkerState[] = [];
  private synthActive = 0;
  private totalCompleted = 0;
  private totalFailed = 0;
  private readonly completedByKind = new Map<string, number>();
  private readonly failedByKind = new Map<string, number>();
  private queueDepth = 0;

  /** `startedAt`: the tracker's creation (uptime 0), engine clock ns. */
  constructor(private readonly startedAt: number) {}

  /** status.rs register_workers: (worker_id, gpu_ordinal) pairs, all idle. */
  registerWorkers(pairs: ReadonlyArray<readonly [number, number]>): void {
    this.workers = pairs.map(([workerId, gpuOrdinal]) => ({ workerId, gpuOrdinal, busy: false, currentJobId: null, currentPartition: null, busySince: null }));
  }

  /** status.rs register_job: a new JobState, all partitions pending (overwrites one with the same id). */
  registerJob(jobId: string, proofKind: string, numPartitions: number, t: number): void {
    this.jobs.delete(jobId); // re-inserted last: Map order = registration order
    this.jobs.set(jobId, {
      proofKind,
      startedAt: t,
      totalPartitions: numPartitions,
      partitions: Array.from({ length: numPartitions }, () => ({ phase: 'pending' as Phase, synthStart: null, synthEnd: null, gpuStart: null, gpuEnd: null })),
      completedAt: null,
    });
    while (this.jobs.size > MAX_JOBS) this.jobs.delete(this.jobs.keys().next().value as string);
  }

  private part(jobId: string, partition: number): PartitionState | undefined {
    return this.jobs.get(jobId)?.partitions[partition];
  }

  /** status.rs partition_synth_start. */
  partitionSynthStart(jobId: string, partition: number, t: number): void {
    this.synthActive = Math.min(0xffffffff, this.synthActive + 1);
    const p = this.part(jobId, partition);
    if (p) {
      p.phase = 'synthesizing';
      p.synthStart = t;
    }
  }

  /** status.rs partition_synth_end. */
  partitionSynthEnd(jobId: string, partition: number, t: number): void {
    this.synthActive = Math.max(0, this.synthActive - 1);
    const p = this.part(jobId, partition);
    if (p) {
      p.phase = 'synth_done';
      p.synthEnd = t;
    }
  }

  private worker(workerId: number): GpuWorkerState | undefined {
    return this.workers.find((w) => w.workerId === workerId);
  }

  /**
   * status.rs partition_gpu_start: partition `gpu`, worker `proving` since now.
   * `markWorker` false: the historical bug's `skip` mode (fault injection), the worker untouched.
   */
  partitionGpuStart(jobId: string, partition: number, workerId: number, t: number, markWorker = true): void {
    const p = this.part(jobId, partition);
    if (p) {
      p.phase = 'gpu';
      p.gpuStart = t;
    }
    const w = markWorker ? this.worker(workerId) : undefined;
    if (w) {
      w.busy = true;
      w.currentJobId = jobId;
      w.currentPartition = partition;
      w.busySince = t;
    }
  }

  /**
   * status.rs partition_gpu_end: `done` whatever the result; the worker cleared only if still
   * mine. `clobber`: the historical bug (fault injection) — cleared whatever it holds now.
   */
  partitionGpuEnd(jobId: string, partition: number, workerId: number, t: number, clobber = false): void {
    const p = this.part(jobId, partition);
    if (p) {
      p.phase = 'done';
      p.gpuEnd = t;
    }
    const w = this.worker(workerId);
    if (w && (clobber || (w.currentJobId === jobId && w.currentPartition === partition))) {
      w.busy = false;
      w.currentJobId = null;
      w.currentPartition = null;
      w.busySince = null;
    }
  }

  /** status.rs partition_failed (synthesis failure only, upstream). */
  partitionFailed(jobId: string, partition: number): void {
    const p = this.part(jobId, partition);
    if (p) p.phase = 'failed';
  }

  /** status.rs job_completed. */
  jobCompleted(jobId: string, proofKind: string, success: boolean, t: number): void {
    if (success) {
      this.totalCompleted++;
      this.completedByKind.set(proofKind, (this.completedByKind.get(proofKind) ?? 0) + 1);
    } else {
      this.totalFailed++;
      this.failedByKind.set(proofKind, (this.failedByKind.get(proofKind) ?? 0) + 1);
    }
    const job = this.jobs.get(jobId);
    if (job) job.completedAt = t;
  }

  /** status.rs set_queue_depth (engine.rs detailed_status calls it before each snapshot). */
  setQueueDepth(depth: number): void {
    this.queueDepth = depth;
  }

  /** status.rs snapshot, less what comes from elsewhere (memory, allocations, buffers). GCs. */
  snapshot(now: number): TrackerSnapshot {
    for (const [id, job] of this.jobs) {
      if (job.completedAt !== null && Math.floor((now - job.completedAt) / 1e9) >= GC_SECS) this.jobs.delete(id);
    }
    const since = (s: number | null, e: number | null): number | null => (s === null ? null : wholeMs((e ?? now) - s));
    const pipelines: PipelineSnapshot[] = [];
    for (const [id, job] of this.jobs) {
      pipelines.push({
        job_id: id,
        proof_kind: job.proofKind,
        started_secs_ago: Math.max(0, now - job.startedAt) / 1e9,
        total_partitions: job.totalPartitions,
        partitions_done: job.partitions.filter((p) => p.phase === 'done').length,
        partitions: job.partitions.map((p, i) => ({ index: i, state: p.phase, synth_ms: since(p.synthStart, p.synthEnd), gpu_ms: since(p.gpuStart, p.gpuEnd) })),
      });
    }
    return {
      uptime_secs: Math.max(0, now - this.startedAt) / 1e9,
      synthesis_active: this.synthActive,
      pipelines,
      gpu_workers: this.workers.map((w) => ({
        worker_id: w.workerId,
        gpu_ordinal: w.gpuOrdinal,
        state: w.busy ? 'proving' : 'idle',
        current_job: w.currentJobId,
        current_partition: w.currentPartition,
        busy_secs: w.busySince === null ? null : Math.max(0, now - w.busySince) / 1e9,
      })),
      counters: {
        total_completed: this.totalCompleted,
        total_failed: this.totalFailed,
        completed_by_kind: Object.fromEntries(this.completedByKind),
        failed_by_kind: Object.fromEntries(this.failedByKind),
        queue_depth: this.queueDepth,
      },
    };
  }

  /** Counters as upstream holds them (for the ground truth). */
  get counts(): { completedByKind: ReadonlyMap<string, number>; failedByKind: ReadonlyMap<string, number> } {
    return { completedByKind: this.completedByKind, failedByKind: this.failedByKind };
  }

  /** Jobs held (the leak is visible here). */
  get jobCount(): number {
    return this.jobs.size;
  }
}
