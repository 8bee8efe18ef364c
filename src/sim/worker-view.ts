/**
 * GetStatus's per-worker current job (cuzk's JobTracker.workers[].current_job), kept from the
 * engine's partition events by SimObserver: set at every hand-off, for every proof kind;
 * cleared when a partition the worker ran leaves the GPU stage — unconditionally, as cuzk's
 * split-proving finalizer does (a worker already on its next partition then shows idle), or,
 * with `clearsOwnerOnly`, only if the worker still runs that partition.
 */
export class GrpcWorkerView {
  readonly jobId: (string | null)[];
  readonly jobHandle: Float64Array;
  readonly part: Int32Array;
  /** Native kind index, -1 when idle or unknown. */
  readonly kind: Int8Array;

  constructor(
    workers: number,
    /** true: clear only if the worker still runs that partition (the fix cuzk's /status got, not GetStatus). */
    readonly clearsOwnerOnly: boolean,
  ) {
    this.jobId = new Array<string | null>(workers).fill(null);
    this.jobHandle = new Float64Array(workers);
    this.part = new Int32Array(workers).fill(-1);
    this.kind = new Int8Array(workers).fill(-1);
  }

  pickup(worker: number, job: number, jobId: string, part: number, kind: number): void {
    if (worker >= this.jobId.length) return;
    this.jobId[worker] = jobId;
    this.jobHandle[worker] = job;
    this.part[worker] = part;
    this.kind[worker] = kind;
  }

  /** A partition the worker ran ended (done or failed, out of the GPU stage). */
  end(worker: number, job: number, part: number): void {
    if (worker >= this.jobId.length) return;
    if (this.clearsOwnerOnly && (this.jobHandle[worker] !== job || this.part[worker] !== part)) return;
    this.clearWorker(worker);
  }

  clear(): void {
    for (let w = 0; w < this.jobId.length; w++) this.clearWorker(w);
  }

  private clearWorker(w: number): void {
    this.jobId[w] = null;
    this.jobHandle[w] = 0;
    this.part[w] = -1;
    this.kind[w] = -1;
  }

  get workers(): number {
    return this.jobId.length;
  }

  running(): number {
    let n = 0;
    for (const id of this.jobId) if (id !== null) n++;
    return n;
  }
}
