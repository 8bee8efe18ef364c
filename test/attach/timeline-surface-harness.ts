/**
 * The scripted harness of the TIMELINE surface's tests (timeline-surface-edges, -mut-a,
 * -mut-b): the surface built alone (no merge, no file, no timer), fed hand-written TIMELINE
 * lines with read times the test sets, and swept when the test says. Clock: a line written at
 * offset X is read at E + (X + 2) ms, so a run's time is its offsets; a quiet log read to
 * offset X exposes X - 1000 ms (the 1 s minimum lag).
 */
import { TimelineSurface, type TimelineOptions } from '../../src/engine/sources/attach/timeline-surface';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { kindIndex, OTHER_KIND_INDEX } from '../../src/engine/model/kinds';
import type { TlUnit } from '../../src/engine/sources/attach/timeline-jobs';
import type { Logger } from '../../src/util/logger';

export const PC2 = kindIndex('porep-c2');
export const SNAP = kindIndex('snap-update');
export const WPOST = kindIndex('window-post');
export const WIN = kindIndex('winning-post');
export const OTHER = OTHER_KIND_INDEX;
export const MS = 1e6;
export const E = 7_000_000_000_000; // hrtime of the daemon's offset 0 (ns)
export const LATE = 2; // ms between a line's offset and its read

export const tl = (off: number, ev: string, job: string, detail: string) => `TIMELINE,${off},${ev},${job},${detail}\n`;

interface Line {
  level: string;
  msg: string;
  fields?: Record<string, unknown>;
}

export class H {
  readonly errors = new ErrorCounts();
  readonly logs: Line[] = [];
  readonly s: TimelineSurface;
  nowMs = 0;

  constructor(o: Partial<TimelineOptions> = {}) {
    const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void this.logs.push({ level, msg, fields });
    const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as Logger;
    this.s = new TimelineSurface({ path: '/nonexistent/cuzk.log', errors: this.errors, logger, sweepMs: 0, ...o });
  }

  private readHr(): number {
    return E + (this.nowMs + LATE) * MS;
  }

  /** Lines written at the current offset, read LATE ms later; the file is read to its end there. */
  write(...lines: string[]): void {
    this.s.lines(lines.join(''), false, this.readHr());
    this.s.caughtUp(this.readHr());
  }

  /** Lines each written at its own offset (in order) and read LATE ms later. */
  feed(...lines: string[]): void {
    for (const l of lines) {
      const off = Number(l.split(',')[1]);
      if (off > this.nowMs) this.nowMs = off;
      this.write(l);
    }
  }

  /** Start-up catch-up lines: state only. */
  history(...lines: string[]): void {
    this.s.lines(lines.join(''), true, this.readHr());
    this.s.caughtUp(this.readHr());
  }

  /** The log read to offset ms, nothing new; then one sweep. */
  at(ms: number): void {
    this.nowMs = ms;
    this.s.caughtUp(this.readHr());
    this.s.sweep();
  }

  /** Moves the read clock only (no sweep). */
  readTo(ms: number): void {
    this.nowMs = ms;
    this.s.caughtUp(this.readHr());
  }

  err(r: string): number {
    return this.errors.get(r);
  }
  warns(): string[] {
    return this.logs.filter((l) => l.level === 'warn').map((l) => l.msg);
  }
  infos(): string[] {
    return this.logs.filter((l) => l.level === 'info').map((l) => l.msg);
  }
  gpuMs(k: number): number {
    return this.s.units.kGpuNs[k] / MS;
  }
  synthMs(k: number): number {
    return this.s.units.kSynthNs[k] / MS;
  }
  parts(k: number): number {
    return this.s.units.kParts[k];
  }
  failed(k: number): number {
    return this.s.units.kPartsFailed[k];
  }
  busyMs(w: number): number {
    return this.s.workers.busyNs[w] / MS;
  }
  unit(job: string, i = 0): TlUnit {
    return this.s.jobById(job)!.units[i];
  }
  /** A run-clock time (ns) as an offset (ms). */
  off(tNs: number): number {
    return this.s.clock.offsetOf(tNs);
  }
}

/** One partition's success path (engine.rs GPU worker + finalizer). */
export function part(job: string, p: number, w: number, pick: number, end: number): string[] {
  const d = `worker=${w},partition=${p}`;
  return [tl(pick, 'GPU_PICKUP', job, d), tl(pick, 'GPU_START', job, d), tl(end, 'GPU_END', job, `${d},gpu_ms=${end - pick}`)];
}
