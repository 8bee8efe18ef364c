/**
 * One attached surface of a cuzk daemon (DESIGN §7): its HTTP `/status`, its gRPC
 * `ProvingEngine` or the TIMELINE lines of its log. Each lives in its own file behind this
 * small interface, the way node_exporter keeps one collector per file; merge.ts combines
 * them into the one StateModel the exporter reads.
 */
import type { Fields, Logger } from '../../util/logger';

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
  /** The claim holds since (a lower bound of what the surface can vouch for). */
  sinceHr: number;
  /** ... until at least (the time the surface was last read). */
  untilHr: number;
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
