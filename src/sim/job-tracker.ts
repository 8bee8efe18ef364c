/**
 * A port of upstream cuzk's `JobTracker` (curio e0294b0f, extern/cuzk/cuzk-core/src/engine.rs,
 * `struct JobTracker` and the code that uses it): what GetStatus, GetMetrics, AwaitProof and
 * Prove answer from.
 *  - `workers[].current_job`: set by the GPU worker after the pickup and the failed-job check;
 *    cleared UNCONDITIONALLY by the split-prove finalizer ("Clear current job from worker"),
 *    by the synchronous path after its gpu_prove, and on a gpu_prove_start failure
 *    (`clearsOwnerOnly` is our fix: clear only if the worker still holds that partition);
 *  - `record_completion` / `record_failure`: total and per-kind maps (an entry exists once a
 *    kind was counted; HashMap order — here insertion order, one valid arbitrary order) and
 *    `recent_durations`, the last 1000 completions (kind, total);
 *  - `pending` (id -> the callers waiting) and `completed` (id -> the last result): a result
 *    goes to everyone waiting for that id (`pending.remove`), then `completed.insert`
 *    overwrites; AwaitProof answers `completed` first — so a duplicate id in flight gets the
 *    first completion, and AwaitProof after a retry gets the newest stored result;
 *  - `assemblers` (id -> partitioned job state): `failed` set by the first partition failure
 *    (synthesis or GPU finish) — siblings then skip; a second job with the same id replaces
 *    it (`HashMap::insert` in process_batch).
 * Bounds (ours; upstream's maps grow without end): `completed` keeps the newest
 * MAX_COMPLETED results; assemblers of failed jobs the newest MAX_COMPLETED.
 */
import { PROOF_KINDS } from '../engine/model/kinds';

export type AnswerStatus = 'COMPLETED' | 'FAILED' | 'CANCELLED';

/** engine.rs JobStatus as service.rs status_to_proto turns it into an AwaitProofResponse. */
export interface JobAnswer {
  job_id: string;
  status: AnswerStatus;
  proof: Buffer;
  error_message: string;
  queue_wait_ms: number;
  srs_load_ms: number;
  synthesis_ms: number;
  gpu_compute_ms: number;
  total_ms: number;
}

export type Waiter = (a: JobAnswer) => void;

export function failedAnswer(jobId: string, error: string, status: AnswerStatus = 'FAILED'): JobAnswer {
  return { job_id: jobId, status, proof: Buffer.alloc(0), error_message: error, queue_wait_ms: 0, srs_load_ms: 0, synthesis_ms: 0, gpu_compute_ms: 0, total_ms: 0 };
}

export interface CurrentJob {
  id: string;
  kind: number;
  /** Engine job handle and partition (-1: monolithic), for the owner-only fix. */
  handle: number;
  partition: number;
}

export interface Assembler {
  kind: number;
  total: number;
  filled: Uint8Array;
  nFilled: number;
  failed: boolean;
  /** Engine clock ns: process_batch's `start_time` and the request's `submitted_at`. */
  startTime: number;
  submittedAt: number;
  synthNs: number;
  gpuNs: number;
}

export const MAX_COMPLETED = 10_000;
export const RECENT_CAPACITY = 1000;

export class JobTracker {
  readonly workers: (CurrentJob | null)[];
  totalCompleted = 0;
  totalFailed = 0;
  /** kind index -> count, in the order kinds were first counted. */
  readonly completedByKind = new Map<number, number>();
  readonly failedByKind = new Map<number, number>();
  /** (kind, seconds), oldest first, at most RECENT_CAPACITY. */
  private readonly recentKind = new Uint8Array(RECENT_CAPACITY);
  private readonly recentSecs = new Float64Array(RECENT_CAPACITY);
  private recentHead = 0;
  private recentLen = 0;
  private readonly pending = new Map<string, Waiter[]>();
  private readonly completed = new Map<string, JobAnswer>();
  readonly assemblers = new Map<string, Assembler>();

  constructor(
    /** GPU ordinal of each worker (engine.rs start: tracker_worker_states). */
    readonly workerGpus: readonly number[],
    readonly clearsOwnerOnly = false,
  ) {
    this.workers = workerGpus.map(() => null);
  }

  /** engine.rs JobTracker::record_completion. */
  recordCompletion(kind: number, totalSeconds: number): void {
    this.totalCompleted++;
    this.completedByKind.set(kind, (this.completedByKind.get(kind) ?? 0) + 1);
    const at = (this.recentHead + this.recentLen) % RECENT_CAPACITY;
    this.recentKind[at] = kind;
    this.recentSecs[at] = totalSeconds;
    if (this.recentLen < RECENT_CAPACITY) this.recentLen++;
    else this.recentHead = (this.recentHead + 1) % RECENT_CAPACITY;
  }

  /** engine.rs JobTracker::record_failure. */
  recordFailure(kind: number): void {
    this.totalFailed++;
    this.failedByKind.set(kind, (this.failedByKind.get(kind) ?? 0) + 1);
  }

  /** recent_durations grouped by kind (service.rs get_metrics), in first-seen order: [kind, count, sum]. */
  recentByKind(): Array<[number, number, number]> {
    const m = new Map<number, [number, number, number]>();
    for (let i = 0; i < this.recentLen; i++) {
      const j = (this.recentHead + i) % RECENT_CAPACITY;
      const k = this.recentKind[j];
      let e = m.get(k);
      if (!e) m.set(k, (e = [k, 0, 0]));
      e[1]++;
      e[2] += this.recentSecs[j];
    }
    return [...m.values()];
  }

  get recentLength(): number {
    return this.recentLen;
  }

  /** GPU worker, after the pickup and the failed-job check: "Mark as running on this GPU worker". */
  setCurrent(worker: number, job: CurrentJob): void {
    if (worker >= 0 && worker < this.workers.length) this.workers[worker] = job;
  }

  /** "Clear current job from worker" — unconditional upstream; owner-only with the fix. */
  clearCurrent(worker: number, handle: number, partition: number): void {
    if (worker < 0 || worker >= this.workers.length) return;
    const cur = this.workers[worker];
    if (this.clearsOwnerOnly && cur && (cur.handle !== handle || cur.partition !== partition)) return;
    this.workers[worker] = null;
  }

  /** Workers whose current_job is set (GetMetrics cuzk_running_jobs). */
  running(): number {
    let n = 0;
    for (const w of this.workers) if (w) n++;
    return n;
  }

  /** Engine::submit / Engine::prove: a completion channel pushed to `pending[id]`. */
  addWaiter(id: string, w: Waiter): void {
    const list = this.pending.get(id);
    if (list) list.push(w);
    else this.pending.set(id, [w]);
  }

  /**
   * Engine::await_proof: the stored result if any (even an old one: a retry's AwaitProof
   * gets the previous result until the new one lands), else a new listener if the id is
   * pending, else null (JobNotFound).
   */
  awaitProof(id: string): JobAnswer | Promise<JobAnswer> | null {
    const done = this.completed.get(id);
    if (done) return done;
    if (!this.pending.has(id)) return null;
    return new Promise<JobAnswer>((resolve) => this.addWaiter(id, resolve));
  }

  /** `if let Some(senders) = t.pending.remove(id) { send to all }; t.completed.insert(id, status)`. */
  deliver(id: string, answer: JobAnswer): void {
    const waiters = this.pending.get(id);
    this.pending.delete(id);
    this.completed.delete(id);
    this.completed.set(id, answer);
    if (this.completed.size > MAX_COMPLETED) this.completed.delete(this.completed.keys().next().value as string);
    if (waiters) for (const w of waiters) w(answer);
  }

  /** process_batch: `t.assemblers.insert(job_id, PartitionedJobState { .. })` (replaces). */
  registerAssembler(id: string, kind: number, total: number, t: number, submittedAt: number): Assembler {
    const a: Assembler = { kind, total, filled: new Uint8Array(total), nFilled: 0, failed: false, startTime: t, submittedAt, synthNs: 0, gpuNs: 0 };
    this.assemblers.delete(id);
    this.assemblers.set(id, a);
    if (this.assemblers.size > MAX_COMPLETED) {
      for (const [k, v] of this.assemblers) {
        if (this.assemblers.size <= MAX_COMPLETED) break;
        if (v.failed) this.assemblers.delete(k);
      }
    }
    return a;
  }

  /** The pending callers of an id (what a cancel of ours answers). */
  hasPending(id: string): boolean {
    return this.pending.has(id);
  }

  /** The kinds of engine.rs ProofKind Display, for GetStatus. */
  static kindName(kind: number): string {
    return PROOF_KINDS[kind] ?? 'unknown';
  }
}
