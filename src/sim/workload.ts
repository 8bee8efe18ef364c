/**
 * simulate's workload: a Curio-like client of the simulated daemon. It keeps `concurrency`
 * proofs in flight through the same path as the gRPC `Prove` call (SimCore.prove), kinds
 * drawn from a weighted mix, ids as Curio makes them (request-ids.ts); a failed proof is
 * proved again under the SAME id up to `retries` times (Curio's task retry: ids are
 * deterministic), which is what upstream's id-keyed state has to live with.
 */
import type { Mix } from '../engine/sources/native/workload';
import { PROOF_KINDS } from '../engine/model/kinds';
import type { SimCore } from './core';
import type { JobAnswer } from './job-tracker';
import { GeneratedRequest, RequestIdGenerator } from './request-ids';
import { seededRandom } from './timeline-writer';

export interface SimWorkloadOptions {
  mix: Mix;
  concurrency: number;
  /** Stop after this many proofs (0: until stopped); retries do not count. */
  count: number;
  retries: number;
  ids: RequestIdGenerator;
  seed: number;
  onResult?: (req: GeneratedRequest, a: JobAnswer, attempt: number) => void;
  onError?: (e: Error) => void;
}

export class SimWorkload {
  private readonly kinds: number[] = [];
  private readonly cumulative: number[] = [];
  private readonly rand: () => number;
  private submitted = 0;
  private inFlight = 0;
  private stopping = false;
  private idle: (() => void) | null = null;
  finished = 0;
  failed = 0;
  retried = 0;

  constructor(
    private readonly core: SimCore,
    private readonly o: SimWorkloadOptions,
  ) {
    let acc = 0;
    for (const [k, w] of Object.entries(o.mix)) {
      if (!w) continue;
      acc += w;
      this.kinds.push(PROOF_KINDS.indexOf(k as (typeof PROOF_KINDS)[number]));
      this.cumulative.push(acc);
    }
    this.rand = seededRandom(o.seed ^ 0xc0ffee);
  }

  get running(): number {
    return this.inFlight;
  }

  /** Resolves when `count` proofs finished (never, with count 0, until stop()). */
  run(): Promise<void> {
    const done = new Promise<void>((resolve) => (this.idle = resolve));
    this.fill();
    return done;
  }

  private pick(): number {
    const r = this.rand() * this.cumulative[this.cumulative.length - 1];
    return this.kinds[this.cumulative.findIndex((c) => r < c)] ?? this.kinds[0];
  }

  private fill(): void {
    const conc = Math.max(1, this.o.concurrency);
    while (!this.stopping && this.inFlight < conc && (this.o.count === 0 || this.submitted < this.o.count)) {
      this.submitted++;
      this.prove(this.o.ids.next(this.pick()), 0);
    }
    if (this.inFlight === 0 && (this.stopping || (this.o.count > 0 && this.submitted >= this.o.count))) this.idle?.();
  }

  private prove(req: GeneratedRequest, attempt: number): void {
    this.inFlight++;
    this.core
      .prove({ id: req.id, kind: req.kind, partitionIndex: req.partitionIndex, sectorNumber: req.sectorNumber, minerId: req.minerId })
      .then(
        (a) => {
          this.inFlight--;
          this.o.onResult?.(req, a, attempt);
          if (a.status === 'FAILED' && attempt < this.o.retries && !this.stopping) {
            this.retried++;
            this.prove(req, attempt + 1);
            return;
          }
          if (a.status === 'COMPLETED') this.finished++;
          else this.failed++;
          this.fill();
        },
        (e: Error) => {
          this.inFlight--;
          if (!this.stopping) this.o.onError?.(e);
          this.fill();
        },
      );
  }

  /** Stops submitting; resolves when nothing is in flight or after `graceMs`. */
  async stop(graceMs: number): Promise<{ left: number }> {
    this.stopping = true;
    if (this.inFlight === 0) {
      this.idle?.();
      return { left: 0 };
    }
    const runDone = this.idle;
    const drained = new Promise<void>((resolve) => (this.idle = () => (runDone?.(), resolve())));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([drained, timeout]);
    clearTimeout(timer);
    return { left: this.inFlight };
  }
}
