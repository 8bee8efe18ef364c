/**
 * One attached surface of a cuzk daemon (DESIGN §7): its HTTP `/status`, its gRPC
 * `ProvingEngine` or the TIMELINE lines of its log. Each lives in its own file behind this
 * small interface, the way node_exporter keeps one collector per file; merge.ts combines
 * them into the one StateModel the exporter reads.
 */
import type { Fields, Logger } from '../../../util/logger';

export type SurfaceName = 'status' | 'grpc' | 'timeline';
/** Sorted: the order of the build_info `surfaces` label and of cuzk_surface_up series. */
export const SURFACE_NAMES: readonly SurfaceName[] = ['grpc', 'status', 'timeline'];

export interface Surface {
  readonly name: SurfaceName;
  /** The surface answered at its last poll / its log is readable. */
  readonly up: boolean;
  /** Human-readable target (URL, address, path) for logs and /status. */
  readonly target: string;
  start(): void;
  stop(): Promise<void>;
}

/** What one surface says about one worker, on the exporter's hrtime clock (ns). */
export interface WorkerClaim {
  busy: boolean;
  /**
   * Continuous claims (TIMELINE, /status' busy with cuzk's own busy_secs): the state held over
   * all of [sinceHr, untilHr]. Sampled claims (one /status snapshot or gRPC answer): the state
   * held at some instant of that window (the request's).
   */
  sinceHr: number;
  untilHr: number;
  sample: boolean;
  /** Kind slot of the job a busy worker runs, where the surface says it; else -1. */
  kind: number;
  /** The job id and partition a busy worker runs, where the surface says them. */
  job?: string | null;
  partition?: number;
}

/** One sampled answer about a worker: its state at some instant of [startHr, endHr]. */
export interface WorkerSample {
  startHr: number;
  endHr: number;
  busy: boolean;
  /** Kind slot of the job a busy worker runs, where the surface says it; else -1. */
  kind: number;
}

/**
 * Each worker's recent samples, oldest first: those of the last `maxAgeNs` (TIMELINE vouches
 * for a moment a second or more back, so older samples are what it is compared with), at most
 * `maxCount`.
 */
export class SampleHistory {
  private readonly byId = new Map<number, WorkerSample[]>();
  constructor(
    private readonly maxAgeNs = 30e9,
    private readonly maxCount = 256,
  ) {}

  add(id: number, s: WorkerSample): void {
    let a = this.byId.get(id);
    if (!a) this.byId.set(id, (a = []));
    // Kept in order of endHr (polls answer in order, so this is a push), which lets
    // newestUntil search instead of scan: the cross-check asks for every worker on every
    // refresh.
    let at = a.length;
    while (at > 0 && a[at - 1].endHr > s.endHr) at--;
    if (at === a.length) a.push(s);
    else a.splice(at, 0, s);
    const newest = a[a.length - 1].endHr;
    let drop = 0;
    while (drop < a.length - 1 && (a.length - drop > this.maxCount || a[drop].endHr < newest - this.maxAgeNs)) drop++;
    // One a poll in steady state: shift() trims in place, splice() would build the removed list.
    if (drop === 1) a.shift();
    else if (drop > 0) a.splice(0, drop);
  }

  /** The newest sample of `id` whose window ends at or before `t` (null if none). */
  newestUntil(id: number, t: number): WorkerSample | null {
    const a = this.byId.get(id);
    if (!a || a.length === 0 || a[0].endHr > t) return null;
    // Binary search for the last endHr <= t (a is ordered by endHr).
    let lo = 0;
    let hi = a.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (a[mid].endHr <= t) lo = mid;
      else hi = mid - 1;
    }
    return a[lo];
  }

  /** Forgets workers not in `ids` (a daemon restart with fewer workers). */
  retain(ids: Set<number>): void {
    for (const id of this.byId.keys()) if (!ids.has(id)) this.byId.delete(id);
  }
}

export const hrNowNs = (): number => Number(process.hrtime.bigint());

/** One log line per distinct problem, repeated at most once a minute. */
export class ThrottledLog {
  private last = '';
  private lastAt = 0;
  constructor(
    private readonly logger: Logger,
    private readonly fields: Fields,
  ) {}

  log(level: 'info' | 'warn', msg: string, force = false): void {
    const now = Date.now();
    if (!force && msg === this.last && now - this.lastAt < 60_000) return;
    this.last = msg;
    this.lastAt = now;
    this.logger[level](msg, this.fields);
  }
}

/** A proof kind name as it may appear in a log line: quoted, escaped, cut at 64 characters. */
export function quoteName(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}
