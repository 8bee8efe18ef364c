/**
 * Drives a TIMELINE surface (inside a MergedAttachSource, as attach runs it) with lines
 * whose offsets and read times the test sets: no files, no timers, no sleeps. `at(ms)`
 * moves the daemon's clock and the exporter's read clock together (a line written at
 * offset X is read at epoch + X plus a small lateness), so every figure is a difference
 * of offsets the test chose.
 */
import { MergedAttachSource } from '../../src/engine/sources/attach/merge';
import type { TimelineOptions } from '../../src/engine/sources/attach/timeline-surface';
import { KIND_LABELS } from '../../src/engine/model/kinds';
import { createLogger } from '../../src/util/logger';

export const tl = (off: number, ev: string, job: string, detail: string) => `TIMELINE,${off},${ev},${job},${detail}\n`;

export class TimelineDriver {
  readonly src: MergedAttachSource;
  readonly logs: string[] = [];
  /** hrtime (ns) of the daemon's offset 0, as the exporter sees it. */
  readonly epochHr: number;
  /** The daemon's clock (ms offset) now. */
  nowMs = 0;
  /** How late lines are read (ms). */
  latenessMs = 2;

  constructor(opts: Partial<TimelineOptions> = {}) {
    const logger = createLogger('debug', 'json', (line) => this.logs.push(line));
    this.src = new MergedAttachSource({
      timelineFile: '/nonexistent/cuzk.log',
      pollIntervalMs: 1000,
      grpcStatusIntervalMs: 5000,
      timeoutMs: 1000,
      maxBodyBytes: 1 << 20,
      logger,
      timeline: { sweepMs: 0, ...opts },
    });
    this.epochHr = Number(process.hrtime.bigint());
  }

  get tl() {
    return this.src.timeline!;
  }

  /** Lines written at the current offset, read `latenessMs` later; the log is read to there. */
  write(...lines: string[]): void {
    const readHr = this.epochHr + (this.nowMs + this.latenessMs) * 1e6;
    this.tl.lines(lines.join(''), false, readHr);
    this.tl.caughtUp(readHr);
  }

  /** Old lines (the start-up catch-up): state only. */
  history(...lines: string[]): void {
    const readHr = this.epochHr + (this.nowMs + this.latenessMs) * 1e6;
    this.tl.lines(lines.join(''), true, readHr);
    this.tl.caughtUp(readHr);
  }

  /** Time passes (the log is read, nothing new in it); the sweep runs. */
  at(ms: number): void {
    this.nowMs = ms;
    this.tl.caughtUp(this.epochHr + (ms + this.latenessMs) * 1e6);
    this.tl.sweep();
  }

  /** The model as a scrape sees it now. */
  view() {
    const m = this.src.model;
    this.src.refresh();
    const now = this.src.nowNs();
    const slot = (id: number) => m.topology.workers.findIndex((w) => w.id === id);
    const kind = (k: string) => KIND_LABELS.indexOf(k);
    return {
      busy: (id: number) => (slot(id) < 0 ? 0 : m.wBusy[slot(id)]),
      /** Busy seconds of worker id, exposed now. */
      busySecs: (id: number) => (slot(id) < 0 ? 0 : m.workerBusyNsAt(slot(id), now) / 1e9),
      gpuSecs: (k: string) => m.kGpuNs[kind(k)] / 1e9,
      synthSecs: (k: string) => m.kSynthNs[kind(k)] / 1e9,
      partsDone: (k: string) => m.kPartsCompleted[kind(k)],
      partsFailed: (k: string) => m.kPartsFailed[kind(k)],
      onGpu: () => m.partitionsOnGpu(),
      live: () => m.kLive.reduce((a, b) => a + b, 0),
      mismatch: () => m.mismatchReasons(),
      error: (r: string) => m.errors.get(r),
    };
  }
}
