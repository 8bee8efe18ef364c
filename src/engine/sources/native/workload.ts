/**
 * A proof workload for the reference engine: keeps `concurrency` proofs in flight, kinds
 * drawn from a weighted mix, with request ids shaped like cuzk's (a SnapDeals proof-share
 * id is long, which is the point: it must never be cut).
 */
import { randomUUID } from 'node:crypto';
import type { NativeEngine, ProofResult } from './native-engine';
import { PROOF_KINDS, ProofKind, isProofKind } from '../../model/kinds';

export type Mix = Partial<Record<ProofKind, number>>;

export const DEFAULT_MIX: Mix = { 'porep-c2': 1, 'snap-update': 3, 'window-post': 1, 'winning-post': 1 };

/** Parses "snap-update=3,porep-c2=1". Throws a readable Error. */
export function parseMix(text: string): Mix {
  const mix: Mix = {};
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^([a-z0-9-]+)=(\d+(?:\.\d+)?)$/.exec(part);
    if (!m) throw new Error(`workload mix "${part}" is not kind=weight (for example snap-update=3)`);
    if (!isProofKind(m[1])) throw new Error(`workload mix: unknown proof kind "${m[1]}" (expected one of ${PROOF_KINDS.join(', ')})`);
    mix[m[1]] = Number(m[2]);
  }
  const total = Object.values(mix).reduce((a, b) => a + (b ?? 0), 0);
  if (!(total > 0)) throw new Error('workload mix: the weights add up to zero');
  return mix;
}

export function requestIdFor(kind: ProofKind, n: number): string {
  switch (kind) {
    case 'snap-update':
      return `ps-snap-${randomUUID()}`;
    case 'porep-c2':
      return `porep-f01234-s${String(n).padStart(6, '0')}-${randomUUID().slice(0, 8)}`;
    case 'window-post':
      return `wpost-f01234-dl${n % 48}-${randomUUID().slice(0, 8)}`;
    case 'winning-post':
      return `winning-f01234-e${n}`;
  }
}

export interface WorkloadOptions {
  mix?: Mix;
  /** Proofs kept in flight. */
  concurrency?: number;
  /** Stop after this many proofs (0: until stopped). */
  count?: number;
  onSubmit?: (job: number, kind: ProofKind) => void;
  onResult?: (r: ProofResult) => void;
  onError?: (e: Error) => void;
}

export class Workload {
  private readonly kinds: ProofKind[] = [];
  private readonly cumulative: number[] = [];
  private submitted = 0;
  private inFlight = new Set<number>();
  private stopping = false;
  private idle: (() => void) | null = null;
  readonly results: ProofResult[] = [];

  constructor(
    private readonly engine: NativeEngine,
    private readonly opts: WorkloadOptions = {},
  ) {
    let acc = 0;
    for (const [k, w] of Object.entries(opts.mix ?? DEFAULT_MIX)) {
      if (!w) continue;
      acc += w;
      this.kinds.push(k as ProofKind);
      this.cumulative.push(acc);
    }
  }

  /** Resolves when `count` proofs finished (never, with count 0, until stop()). */
  run(): Promise<void> {
    const done = new Promise<void>((resolve) => (this.idle = resolve));
    this.fill();
    return done;
  }

  private pick(): ProofKind {
    const r = Math.random() * this.cumulative[this.cumulative.length - 1];
    return this.kinds[this.cumulative.findIndex((c) => r < c)] ?? this.kinds[0];
  }

  private fill(): void {
    const limit = this.opts.count ?? 0;
    const conc = Math.max(1, this.opts.concurrency ?? 4);
    while (!this.stopping && this.inFlight.size < conc && (limit === 0 || this.submitted < limit)) {
      const kind = this.pick();
      let job: number;
      try {
        job = this.engine.submit(kind, { requestId: requestIdFor(kind, this.submitted) });
      } catch (e) {
        this.opts.onError?.(e as Error);
        break; // queue full or engine closing: try again when a proof finishes
      }
      this.submitted++;
      this.inFlight.add(job);
      this.opts.onSubmit?.(job, kind);
      this.engine.awaitProof(job).then(
        (r) => {
          this.inFlight.delete(job);
          this.results.push(r);
          this.opts.onResult?.(r);
          this.fill();
        },
        (e: Error) => {
          this.inFlight.delete(job);
          if (!this.stopping) this.opts.onError?.(e);
          this.fill();
        },
      );
    }
    if (this.inFlight.size === 0 && (this.stopping || (limit > 0 && this.submitted >= limit))) this.idle?.();
  }

  get running(): number {
    return this.inFlight.size;
  }

  /**
   * Stops submitting; proofs in flight get `graceMs` to finish, then are cancelled.
   * Resolves when none is left.
   */
  async stop(graceMs: number): Promise<{ finished: number; cancelled: number }> {
    this.stopping = true;
    const left = () => this.inFlight.size;
    if (left() === 0) {
      this.idle?.();
      return { finished: 0, cancelled: 0 };
    }
    const before = left();
    // run() waits on the current resolver: keep it, so both settle when the last proof ends.
    const runDone = this.idle;
    const drained = new Promise<void>((resolve) => (this.idle = () => (runDone?.(), resolve())));
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
    if ((await Promise.race([drained, timer])) === 'timeout') {
      const cancelled = left();
      for (const job of this.inFlight) {
        try {
          this.engine.cancel(job);
        } catch {
          // already finished or engine closing: nothing to cancel
        }
      }
      await drained;
      return { finished: before - cancelled, cancelled };
    }
    return { finished: before, cancelled: 0 };
  }
}
