/**
 * bcrypt off the event loop. A bcrypt comparison is deliberately slow (~65 ms at cost 10
 * with bcryptjs on this project's machines) and pure CPU: run on the main thread, even in
 * bcryptjs' "async" mode, 200 wrong passwords at once stall every other request for
 * seconds. Here comparisons run in one worker thread, one at a time (as the
 * exporter-toolkit serialises them behind a mutex), and the queue is bounded: a request
 * that would wait behind more than `maxPending` comparisons is refused at once (the
 * caller answers 429) instead of piling up.
 */
import { Worker } from 'node:worker_threads';

/** The worker's source: bcryptjs' compareSync on each message, answered by id. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const bcrypt = require(workerData.bcryptjs);
parentPort.on('message', (m) => {
  let ok = false;
  try { ok = bcrypt.compareSync(m.pass, m.hash); } catch { ok = false; }
  parentPort.postMessage({ id: m.id, ok });
});
`;

interface Job {
  resolve(ok: boolean): void;
  reject(e: Error): void;
  /** The worker asked: only its failure fails the job. */
  worker: Worker;
}

export class BcryptPool {
  private worker: Worker | null = null;
  private readonly jobs = new Map<number, Job>();
  private nextId = 1;
  private closed = false;

  constructor(readonly maxPending = 16) {}

  /** Comparisons queued or running now. */
  get pending(): number {
    return this.jobs.size;
  }

  /** False when the queue is full: the caller must not wait (answer 429). */
  hasRoom(): boolean {
    return !this.closed && this.jobs.size < this.maxPending;
  }

  compare(pass: string, hash: string): Promise<boolean> {
    if (this.closed) return Promise.reject(new Error('bcrypt pool closed'));
    const w = this.ensureWorker();
    const id = this.nextId++;
    return new Promise<boolean>((resolve, reject) => {
      this.jobs.set(id, { resolve, reject, worker: w });
      w.ref(); // keep the process alive while a comparison is owed to a request
      w.postMessage({ id, pass, hash });
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { bcryptjs: require.resolve('bcryptjs') } });
    w.on('message', (m: { id: number; ok: boolean }) => {
      const job = this.jobs.get(m.id);
      if (!job) return;
      this.jobs.delete(m.id);
      if (this.jobs.size === 0) w.unref();
      job.resolve(m.ok === true);
    });
    // A failed worker emits 'error' and then 'exit'; a comparison asked in between went to a
    // new worker, which the old one's exit must neither drop nor fail.
    const failAll = (why: Error) => {
      if (this.worker === w) this.worker = null;
      for (const [id, j] of this.jobs) {
        if (j.worker !== w) continue;
        this.jobs.delete(id);
        j.reject(why);
      }
    };
    w.on('error', (e) => failAll(new Error(`bcrypt worker failed: ${e.message}`)));
    w.on('exit', (code) => failAll(new Error(`bcrypt worker exited (${code})`)));
    w.unref();
    this.worker = w;
    return w;
  }

  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}
