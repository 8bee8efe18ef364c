/**
 * What cuzk's `/status` never clears (curio e0294b0f, cuzk-core/src/status.rs and the
 * engine.rs paths that call it), settled before a snapshot reaches the model, so a failed
 * job cannot leave phantom live partitions or a worker proving forever:
 *
 *  - a partitioned job that fails never gets `job_completed` (only an assembled job does),
 *    so it stays in `pipelines` for good: its failed partition (a synthesis failure:
 *    partition_failed), or its GPU-failed one shown `done` (partition_gpu_end marks Done
 *    whatever the result), with siblings left `pending` (skipped at synthesis dispatch),
 *    `synth_done`/`gpu` (picked up and skipped after the job failed), growing gpu_ms;
 *  - the worker that picked up a skipped partition stays `proving` (partition_gpu_start
 *    marks it; nothing clears it) until its next pickup; a gpu_prove_start failure leaves
 *    its partition `gpu` and its worker `proving` the same way.
 *
 * Rules (each certain or bounded; docs/upstream-conformance.md):
 *  1. a job with a `failed` partition failed: its `pending` partitions are never dispatched
 *     and its `synth_done` ones are picked up and skipped — both abandoned; those on the GPU
 *     or still synthesizing go on (upstream does not stop them) and end as they end;
 *  2. a `gpu` partition no worker owns, older than `unownedMs` (max(10 s, 3x the longest
 *     GPU stage seen done)): the split-proving tail it could be in is long over: abandoned,
 *     and its job failed (rule 1);
 *  3. a worker `proving` a partition older than `ownedMs` (max(60 s, 5x the longest); the
 *     partition's gpu_ms where listed, else busy_secs):
 *     stale, shown idle; the partition abandoned, its job failed;
 *  4. a job still holding `pending` partitions while a job registered at least 2 s later
 *     already has one past `pending` failed: the synthesis dispatcher takes the oldest job's
 *     lowest partition first, so its pending ones were skipped.
 * A partition abandoned while `synth_done` that a later snapshot shows `gpu` is its skip after
 * pickup while the job is the same registration (registeredAgain: no partition back to
 * `pending`, the same partition count and `failed` ones, no later start): abandoned still, its
 * worker shown idle. A retry of the id is a new job: its partitions are live.
 * Abandoned partitions are marked `state: "failed", abandoned: true` (the reference engine's
 * own marking): not live, not counted as partition failures. Each job inferred failed is
 * reported once (the caller counts it as a failed proof of its kind).
 */
import type { CuzkPartition, CuzkPipeline, CuzkStatus, CuzkWorker } from '../status-schema';

const MIN_UNOWNED_MS = 10_000;
const MIN_OWNED_MS = 60_000;
const REGISTRATION_GAP_S = 2;
const MAX_REMEMBERED = 10_000;

export interface StaleOptions {
  /** Floor of the unowned-partition threshold (default 10 s). */
  minUnownedMs?: number;
  /** Floor of the stale-worker threshold (default 60 s). */
  minOwnedMs?: number;
}

/** A job whose partitions were abandoned while `synth_done` (StaleStatus.skipped), as it was then. */
interface Skipped {
  /** The partitions abandoned while `synth_done`. */
  idx: Set<number>;
  /** Its partition count, the partitions cuzk showed `failed`, its registration (daemon uptime, s). */
  parts: number;
  failedIdx: number[];
  registeredS: number;
}

/**
 * The id registered again since (status.rs register_job replaces the JobState: a retry re-uses
 * the id): an abandoned partition back to `pending`; another partition count; a partition cuzk
 * showed `failed` moved (a failed partition never does within one registration); or a start
 * at least REGISTRATION_GAP_S later. A partition of the new job already on the GPU by the next
 * poll is then live, not the old job's skip.
 */
function registeredAgain(p: CuzkPipeline, sk: Skipped, uptimeSecs: number): boolean {
  if (p.partitions.length !== sk.parts) return true;
  if (uptimeSecs - p.started_secs_ago >= sk.registeredS + REGISTRATION_GAP_S) return true;
  for (const i of sk.failedIdx) if (p.partitions[i].state !== 'failed') return true;
  return p.partitions.some((x) => x.state === 'pending' && sk.idx.has(x.index));
}

export class StaleStatus {
  constructor(private readonly opts: StaleOptions = {}) {}

  /** Longest gpu_ms of a partition seen done (ms). */
  private longestGpuMs = 0;
  /** Jobs already inferred failed (their ids; bounded). */
  private readonly failed = new Set<string>();
  /**
   * Partitions abandoned while `synth_done` (job id -> indices; bounded): one shown `gpu`
   * later is the skip after pickup (engine.rs GPU worker: partition_gpu_start, then the
   * "already failed" return), dead like before. Taken as live again, its abandoned -> gpu
   * read as a re-registered job and counted the job's synthesis and failure twice.
   */
  private readonly skipped = new Map<string, Skipped>();

  /**
   * The snapshot as the model should take it: a settled copy (`status`), the jobs newly
   * inferred failed, with their kinds (`fresh`). The daemon's own snapshot is left as it
   * said it, re-served with our reading in new fields only: `abandoned: true` on a
   * partition, `stale: true` on a worker (DESIGN §6: additions in new fields).
   * Copy on write: only what settling changes is copied (a healthy box's snapshot, every
   * poll, is `status` as it is); the rest is shared and read only. Takes a validated
   * snapshot (status-schema.ts: unique job ids, a partition's index is its place).
   */
  settle(daemon: CuzkStatus): { status: CuzkStatus; fresh: { jobId: string; kind: string }[] } {
    const pipelines = daemon.pipelines;
    const workers = daemon.gpu_workers;
    for (const p of pipelines) for (const x of p.partitions) if (x.state === 'done' && typeof x.gpu_ms === 'number' && x.gpu_ms > this.longestGpuMs) this.longestGpuMs = x.gpu_ms;
    const unownedMs = Math.max(this.opts.minUnownedMs ?? MIN_UNOWNED_MS, 3 * this.longestGpuMs);
    const ownedMs = Math.max(this.opts.minOwnedMs ?? MIN_OWNED_MS, 5 * this.longestGpuMs);
    // Who proves what: job id -> partition indices a worker is proving. Asked only about a
    // partition on the GPU for longer than the lower of the two thresholds (below both the
    // answer changes nothing), so built at the first such question, not on every poll.
    let owner: Map<string, Set<number>> | null = null;
    const owned = (job: string, index: number): boolean => {
      if (owner === null) {
        owner = new Map();
        for (const w of workers) {
          if (w.state !== 'proving' || w.current_job == null || w.current_partition == null) continue;
          let byPart = owner.get(w.current_job);
          if (!byPart) owner.set(w.current_job, (byPart = new Set()));
          byPart.add(w.current_partition);
        }
      }
      return owner.get(job)?.has(index) === true;
    };
    const floorMs = Math.min(ownedMs, unownedMs);
    const overAge = (job: string, x: CuzkPartition, gpuMs: number): boolean => gpuMs > floorMs && gpuMs > (owned(job, x.index) ? ownedMs : unownedMs);

    const failedJobs = new Set<string>();
    for (const p of pipelines) {
      const sk = this.skipped.get(p.job_id);
      if (sk && registeredAgain(p, sk, daemon.uptime_secs)) this.skipped.delete(p.job_id);
      for (const x of p.partitions) {
        if (x.state === 'failed' || (x.state === 'gpu' && this.skipped.get(p.job_id)?.idx.has(x.index))) failedJobs.add(p.job_id);
        if (x.state !== 'gpu' || typeof x.gpu_ms !== 'number') continue;
        if (overAge(p.job_id, x, x.gpu_ms)) failedJobs.add(p.job_id);
      }
    }
    // Rule 4: skipped at dispatch.
    let newestStarted = Infinity; // started_secs_ago of the most recently registered job that progressed
    const byAge = [...pipelines].sort((a, b) => a.started_secs_ago - b.started_secs_ago); // newest first
    for (const p of byAge) {
      let pending = false;
      let progressed = false;
      for (const x of p.partitions) {
        if (x.state === 'pending') pending = true;
        else progressed = true;
      }
      if (pending && newestStarted + REGISTRATION_GAP_S <= p.started_secs_ago) failedJobs.add(p.job_id);
      if (progressed && p.started_secs_ago < newestStarted) newestStarted = p.started_secs_ago;
    }

    // The settled view: a failed job's dead partitions are copies marked failed and abandoned.
    const fresh: { jobId: string; kind: string }[] = [];
    let settledPipelines: CuzkPipeline[] = pipelines;
    const dead: CuzkPartition[] = []; // the daemon's own entries of the partitions copied
    if (failedJobs.size > 0) {
      pipelines.forEach((p, i) => {
        if (!failedJobs.has(p.job_id)) return;
        let parts: CuzkPartition[] | null = null;
        p.partitions.forEach((x, j) => {
          const isDead =
            x.state === 'pending' ||
            x.state === 'synth_done' ||
            (x.state === 'gpu' && ((typeof x.gpu_ms === 'number' && overAge(p.job_id, x, x.gpu_ms)) || this.skipped.get(p.job_id)?.idx.has(x.index) === true));
          if (!isDead) return;
          if (x.state === 'synth_done') this.rememberSkipped(p, x.index, daemon.uptime_secs);
          if (parts === null) parts = p.partitions.slice();
          parts[j] = { ...x, state: 'failed', abandoned: true } as CuzkPartition;
          dead.push(x);
        });
        if (parts !== null) {
          if (settledPipelines === pipelines) settledPipelines = pipelines.slice();
          settledPipelines[i] = { ...p, partitions: parts };
        }
        if (!this.failed.has(p.job_id)) {
          if (this.failed.size >= MAX_REMEMBERED) this.failed.delete(this.failed.values().next().value as string);
          this.failed.add(p.job_id);
          fresh.push({ jobId: p.job_id, kind: p.proof_kind });
        }
      });
    }
    // Workers proving what is now abandoned (or for too long) are shown idle.
    let settledWorkers: CuzkWorker[] = workers;
    let byId: Map<string, CuzkPipeline> | null = null;
    const stale: CuzkWorker[] = [];
    workers.forEach((w, i) => {
      if (w.state !== 'proving') return;
      let p: CuzkPipeline | undefined;
      if (w.current_job != null) {
        if (byId === null) {
          byId = new Map();
          for (const x of settledPipelines) if (!byId.has(x.job_id)) byId.set(x.job_id, x);
        }
        p = byId.get(w.current_job);
      }
      const cp = w.current_partition;
      const part = p && cp != null ? partitionAt(p, cp) : undefined;
      // The age of what it proves: its partition's gpu_ms where listed on the GPU (upstream's
      // gpu_ms and busy_secs both run from the pickup, status.rs partition_gpu_start), else
      // busy_secs. A daemon whose busy_secs is the whole stint (the reference engine's: not
      // reset at each pickup) is not read as stuck after a minute of back-to-back partitions.
      const ageMs = part && part.state === 'gpu' && typeof part.gpu_ms === 'number' ? part.gpu_ms : (w.busy_secs ?? 0) * 1000;
      if (!((part && (part as { abandoned?: boolean }).abandoned === true) || ageMs > ownedMs)) return;
      if (settledWorkers === workers) settledWorkers = workers.slice();
      settledWorkers[i] = { ...w, state: 'idle', current_job: null, current_partition: null, busy_secs: null };
      stale.push(w);
    });

    // The daemon's snapshot: our reading in new fields only.
    for (const x of dead) if (!(x as { abandoned?: boolean }).abandoned) (x as { abandoned?: boolean }).abandoned = true;
    for (const w of stale) (w as { stale?: boolean }).stale = true;
    const status = settledPipelines === pipelines && settledWorkers === workers ? daemon : { ...daemon, pipelines: settledPipelines, gpu_workers: settledWorkers };
    return { status, fresh };
  }

  private rememberSkipped(p: CuzkPipeline, index: number, uptimeSecs: number): void {
    let sk = this.skipped.get(p.job_id);
    if (!sk) {
      if (this.skipped.size >= MAX_REMEMBERED) this.skipped.delete(this.skipped.keys().next().value as string);
      const failedIdx: number[] = [];
      for (const x of p.partitions) if (x.state === 'failed') failedIdx.push(x.index);
      sk = { idx: new Set(), parts: p.partitions.length, failedIdx, registeredS: uptimeSecs - p.started_secs_ago };
      this.skipped.set(p.job_id, sk);
    }
    sk.idx.add(index);
  }

  /** A daemon restart: what was failed there is gone. */
  reset(): void {
    this.failed.clear();
    this.skipped.clear();
  }
}

/** Partition `index` of a pipeline: at its place (validated), else looked for. */
function partitionAt(p: CuzkPipeline, index: number): CuzkPartition | undefined {
  const x = p.partitions[index];
  return x !== undefined && x.index === index ? x : p.partitions.find((y) => y.index === index);
}
