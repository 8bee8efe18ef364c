/**
 * Periodic timers for the sources. A single attach runs its own (`ownTimers`). A fleet shares
 * one timer per period among all its targets (`SharedTimers`): 100 targets each looking at
 * their log every 500 ms, sweeping every second and being looked at by the fleet page every
 * second woke the process ~400 times a second at scattered instants, and every wake of the
 * event loop costs a round trip through the kernel and a turn of timers and microtasks,
 * whatever it then does (about half a percent of a core, measured in bench/fleet.ts). Shared,
 * the same work runs in 3 wakes a second, each target's callbacks one after another.
 */

/** Calls `fn` every `periodMs`; returns what stops it. */
export type Every = (periodMs: number, fn: () => void, opts?: { unref?: boolean }) => () => void;

/** A timer of one's own (a single attach: nothing to share with). */
export const ownTimers: Every = (periodMs, fn, opts) => {
  const t = setInterval(fn, periodMs);
  if (opts?.unref) t.unref();
  return () => clearInterval(t);
};

interface Group {
  timer: NodeJS.Timeout;
  fns: Set<() => void>;
  /** Callbacks that keep the process alive (not unref). */
  refs: number;
}

/** One interval per period, shared by every callback of that period. */
export class SharedTimers {
  private readonly groups = new Map<number, Group>();

  /**
   * `onError`: what a callback's throw becomes (the fleet counts and logs it). By default it
   * is thrown again on its own, after the other callbacks ran: uncaught, as with a timer of
   * one's own.
   */
  constructor(
    private readonly onError: (e: unknown) => void = (e) =>
      setImmediate(() => {
        throw e;
      }),
  ) {}

  readonly every: Every = (periodMs, fn, opts) => {
    let g = this.groups.get(periodMs);
    if (!g) {
      const fns = new Set<() => void>();
      const timer = setInterval(() => {
        // A callback that throws must not cost the others their turn.
        for (const f of fns) {
          try {
            f();
          } catch (e) {
            this.onError(e);
          }
        }
      }, periodMs);
      timer.unref();
      g = { timer, fns, refs: 0 };
      this.groups.set(periodMs, g);
    }
    // Wrapped: the same function registered twice is two registrations, each stopped once.
    const entry = () => fn();
    g.fns.add(entry);
    const keepsAlive = !opts?.unref;
    if (keepsAlive && g.refs++ === 0) g.timer.ref();
    const group = g;
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      group.fns.delete(entry);
      if (keepsAlive && --group.refs === 0) group.timer.unref();
      if (group.fns.size === 0) {
        clearInterval(group.timer);
        if (this.groups.get(periodMs) === group) this.groups.delete(periodMs);
      }
    };
  };

  /** Periods with a running timer (tests). */
  get periods(): number[] {
    return [...this.groups.keys()];
  }

  stop(): void {
    for (const g of this.groups.values()) clearInterval(g.timer);
    this.groups.clear();
  }
}
