/**
 * GPU workers as cuzk's TIMELINE shows them: a worker is busy from a GPU_PICKUP until the
 * end of the partition it picked up last (cuzk's own /status semantics after its race fix:
 * status.rs partition_gpu_end clears a worker only if it still owns that partition; the
 * reference engine's scheduler.c does the same). Busy seconds are exact differences of the
 * daemon's offsets.
 *
 * What upstream writes that a naive reader gets wrong (engine.rs GPU worker loop):
 *  - a pickup may be a *skip*: a partition of a job that has already failed is picked up
 *    (GPU_PICKUP written, /status marks the worker proving) and dropped at once, with no
 *    GPU_START and no end. In split-proving mode every real pickup is followed by a
 *    GPU_START before the worker can loop, so a pickup stays *tentative* until its
 *    GPU_START: the stint is not exposed past the pickup meanwhile, and a tentative pickup
 *    followed by the same worker's next pickup, or by no GPU_START for `confirmMs`, was a
 *    skip: the worker goes back to what it owned before (or to idle), nothing counted;
 *  - a GPU failure writes no GPU_END (gpu_prove_finish's `?` returns before it; a
 *    gpu_prove_start error never reaches the finalizer): a unit with no end must not keep
 *    its worker busy forever. A stint's exposure is capped at its unit's pickup plus the
 *    longest GPU stage seen for that kind (`capFor`); an end line lifts the cap (the
 *    counter jumps forward, never back); with no end the unit is given up at the cap, or
 *    ended where another surface saw its end.
 */
import type { TlUnit } from './timeline-jobs';

export class TimelineWorkers {
  seen = new Uint8Array(0);
  /** A pickup of this worker was seen in this daemon run: its state is known. */
  known = new Uint8Array(0);
  busy = new Uint8Array(0);
  since = new Float64Array(0);
  busyNs = new Float64Array(0);
  parts = new Float64Array(0);
  change = new Float64Array(0);
  /** Exposure of the running stint stops here (run clock ns; Infinity: no cap). */
  cap = new Float64Array(0);
  /** What was exposed of the running stint so far: ends never land before it. */
  floor = new Float64Array(0);
  /** The owned unit is a pickup not yet confirmed by its GPU_START. */
  tentative = new Uint8Array(0);
  /** When the confirmed unit owned before a tentative pickup ended (NaN: not yet). */
  prevEndT = new Float64Array(0);
  own: (TlUnit | null)[] = [];
  prev: (TlUnit | null)[] = [];
  busyWorkers = 0;

  constructor(
    /** Where a confirmed unit's stint exposure stops until its end (run clock ns). */
    private readonly capFor: (u: TlUnit) => number,
  ) {}

  private grow(id: number): void {
    const n = Math.max(id + 1, this.seen.length * 2, 8);
    const g = <T extends Uint8Array | Float64Array>(a: T, fill = 0): T => {
      const b = new (a.constructor as { new (n: number): T })(n);
      if (fill !== 0) b.fill(fill as never);
      b.set(a as never);
      return b;
    };
    this.seen = g(this.seen);
    this.known = g(this.known);
    this.busy = g(this.busy);
    this.since = g(this.since);
    this.busyNs = g(this.busyNs);
    this.parts = g(this.parts);
    this.change = g(this.change);
    this.cap = g(this.cap, Infinity);
    this.floor = g(this.floor);
    this.tentative = g(this.tentative);
    this.prevEndT = g(this.prevEndT, NaN);
    for (let i = this.own.length; i < n; i++) {
      this.own.push(null);
      this.prev.push(null);
    }
  }

  /**
   * Goes up whenever the set of seen workers changes (a new one, or a restart forgetting
   * them): the merge composes the topology again only then. A count would not do: a restart
   * and as many other workers before the next compose would leave it equal.
   */
  seenVersion = 0;

  touch(w: number): void {
    if (w >= this.seen.length) this.grow(w);
    if (this.seen[w] === 0) this.seenVersion++;
    this.seen[w] = 1;
  }

  /** `u` is handed to worker `w` at `t`. The caller has resolved a tentative unit it owned. */
  pickup(w: number, u: TlUnit, t: number, tentative: boolean): void {
    this.touch(w);
    const o = this.own[w];
    if (tentative) {
      // What the worker really owns if this turns out to be a skip.
      if (o && o !== u && !this.tentative[w]) {
        this.prev[w] = o;
        this.prevEndT[w] = NaN;
      } else if (!o) this.prev[w] = null;
    } else {
      this.prev[w] = null;
      this.prevEndT[w] = NaN;
    }
    this.known[w] = 1;
    this.own[w] = u;
    this.tentative[w] = tentative ? 1 : 0;
    if (!this.busy[w]) {
      this.busy[w] = 1;
      this.busyWorkers++;
      this.since[w] = t;
      this.change[w] = t;
      this.floor[w] = t;
    }
    this.cap[w] = Math.max(this.floor[w], tentative ? t : this.capFor(u));
  }

  /** `u`'s GPU_START: a real partition, not a skip. */
  confirm(w: number, u: TlUnit): void {
    if (w >= this.seen.length || this.own[w] !== u) return;
    if (this.tentative[w]) {
      this.tentative[w] = 0;
      this.prev[w] = null;
      this.prevEndT[w] = NaN;
    }
    this.cap[w] = Math.max(this.floor[w], this.capFor(u));
  }

  /** `u`'s GPU stage ended at `t` (its GPU_END, or another surface's word). */
  ended(w: number, u: TlUnit, t: number, counting: boolean): void {
    if (w < 0 || w >= this.seen.length) return;
    if (this.own[w] === u) this.stop(w, t, counting);
    else if (this.tentative[w] && this.prev[w] === u) {
      this.prevEndT[w] = t;
      this.prev[w] = null;
    }
  }

  /** The worker's tentative unit `u` was a skip: back to what it owned before, or idle. */
  skipped(w: number, u: TlUnit, counting: boolean): void {
    if (w < 0 || w >= this.seen.length || this.own[w] !== u) return;
    const p = this.prev[w];
    this.tentative[w] = 0;
    this.prev[w] = null;
    if (p && p.end === 0) {
      this.own[w] = p;
      this.cap[w] = Math.max(this.floor[w], this.capFor(p));
    } else if (!Number.isNaN(this.prevEndT[w])) {
      this.stop(w, this.prevEndT[w], counting);
    } else {
      // Idle before the skip: the stint was never real (nothing past the pickup was exposed).
      this.stop(w, u.pickT, counting);
    }
    this.prevEndT[w] = NaN;
  }

  /** The running stint ends at `t` (never before what was exposed). */
  private stop(w: number, t: number, counting: boolean): void {
    if (!this.busy[w]) return;
    const end = Math.max(t, this.floor[w]);
    if (counting) this.busyNs[w] += Math.max(0, end - this.since[w]);
    this.busy[w] = 0;
    this.busyWorkers--;
    this.change[w] = end;
    this.own[w] = null;
    this.prev[w] = null;
    this.tentative[w] = 0;
    this.cap[w] = Infinity;
    this.floor[w] = end;
  }

  /** A GPU_END of a unit whose pickup was never seen, on an idle worker: [t - ms, t] was busy. */
  creditUnseen(w: number, startT: number, endT: number, counting: boolean): void {
    this.touch(w);
    if (this.busy[w] || !counting) return;
    const from = Math.max(startT, this.floor[w]);
    if (endT > from) this.busyNs[w] += endT - from;
    if (endT > this.floor[w]) this.floor[w] = endT;
  }

  /** The exporter exposed running stints up to `now`: ends land at or after it. */
  expose(now: number): void {
    for (let w = 0; w < this.busy.length; w++) {
      if (!this.busy[w]) continue;
      const e = Math.min(now, this.cap[w]);
      if (e > this.floor[w]) this.floor[w] = e;
    }
  }

  /** A daemon restart: every stint ends where it was exposed; state is forgotten. */
  restart(endNs: number, counting: boolean): void {
    for (let w = 0; w < this.busy.length; w++) {
      if (this.busy[w]) this.stop(w, Math.min(endNs, this.cap[w]), counting);
      this.own[w] = null;
      this.prev[w] = null;
      if (this.seen[w]) this.seenVersion++;
      this.seen[w] = 0;
      this.known[w] = 0;
      this.tentative[w] = 0;
      this.cap[w] = Infinity;
    }
  }

  ids(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.seen.length; i++) if (this.seen[i]) out.push(i);
    return out;
  }
}
