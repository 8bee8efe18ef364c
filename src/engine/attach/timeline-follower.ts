/**
 * Reads a growing log like `tail -F`: appends, truncation (copytruncate), rotation by
 * rename (the old file is read to its end, then the new one from its start), a file that
 * is not there yet (or for a while); or standard input (`-`). Hands whole lines on, never a
 * partial one, and never holds more than `maxLineBytes` of one line: a longer line is
 * dropped (and reported), however long it is.
 *
 * On start an existing file is caught up from its tail (at most `catchUpBytes`), marked as
 * history so the consumer can rebuild current state without counting old work again.
 */
import * as fs from 'node:fs';
import type { Readable } from 'node:stream';
import { TIMELINE_MARK } from './timeline-parser';

export interface FollowerSink {
  /** Whole lines (each ended by \n); `history`: read by the start-up catch-up. */
  lines(text: string, history: boolean, readHr: number): void;
  /** A line longer than the limit was dropped; `timeline`: its kept start held `TIMELINE,`. */
  overlong(timeline: boolean): void;
  /**
   * Everything written before `hr` (the exporter's hrtime clock, ns) has been handed on
   * (file mode: a read issued at hr found the end of the file).
   */
  caughtUp(hr: number): void;
  /** Readable or not (up), with an error reason when it changes or fails. */
  state(up: boolean, reason: string | null, message: string): void;
}

export interface FollowerOptions {
  /** A path, or '-' for standard input. */
  path: string;
  /** How often to look for new data, truncation and rotation (file mode). */
  pollMs: number;
  maxLineBytes: number;
  catchUpBytes: number;
  /** Standard input stand-in (tests); default process.stdin. */
  stdin?: Readable;
}

const hrNow = (): number => Number(process.hrtime.bigint());
const READ_CHUNK = 1 << 20;
const NL = 10;

/** Splits byte chunks into whole lines, bounding the one partial line it carries. */
export class LineSplitter {
  private carry: Buffer | null = null;
  private skipping = false;
  private skipTimeline = false;

  constructor(
    private readonly sink: FollowerSink,
    private readonly maxLineBytes: number,
  ) {}

  reset(): void {
    this.carry = null;
    this.skipping = false;
  }

  /** Bytes of the partial line held (never more than maxLineBytes). */
  get pendingBytes(): number {
    return this.carry?.length ?? 0;
  }

  push(buf: Buffer, history: boolean, readHr: number): void {
    let start = 0;
    const end = buf.length;
    if (this.skipping) {
      const nl = buf.indexOf(NL);
      if (nl < 0) return;
      this.skipping = false;
      this.sink.overlong(this.skipTimeline);
      start = nl + 1;
    }
    const lastNl = buf.lastIndexOf(NL);
    if (lastNl < start) {
      this.keep(buf.subarray(start, end));
      return;
    }
    if (this.carry) {
      const nl = buf.indexOf(NL, start);
      const line = Buffer.concat([this.carry, buf.subarray(start, nl + 1)]);
      this.carry = null;
      if (line.length - 1 > this.maxLineBytes) this.sink.overlong(line.includes(TIMELINE_MARK));
      else this.sink.lines(line.toString('utf8'), history, readHr);
      start = nl + 1;
    }
    if (lastNl + 1 > start) this.sink.lines(buf.toString('utf8', start, lastNl + 1), history, readHr);
    if (lastNl + 1 < end) this.keep(buf.subarray(lastNl + 1, end));
  }

  /** Appends to the partial line; past the limit it is dropped and the rest skipped to its end. */
  private keep(part: Buffer): void {
    if (part.length === 0) return;
    const size = (this.carry?.length ?? 0) + part.length;
    if (size > this.maxLineBytes) {
      const head = this.carry ? Buffer.concat([this.carry, part.subarray(0, Math.min(part.length, 64))]) : part.subarray(0, Math.min(part.length, this.maxLineBytes));
      this.skipTimeline = head.includes(TIMELINE_MARK);
      this.carry = null;
      this.skipping = true;
      return;
    }
    this.carry = this.carry ? Buffer.concat([this.carry, part]) : Buffer.from(part);
  }
}

export class LogFollower {
  private readonly splitter: LineSplitter;
  private fd = -1;
  private ino = -1;
  private dev = -1;
  private pos = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private first = true;
  private readonly buf = Buffer.allocUnsafe(READ_CHUNK);
  private missingReported = false;
  private stdinListeners: { data: (b: Buffer) => void; end: () => void; error: (e: Error) => void } | null = null;
  up = false;

  constructor(
    private readonly opts: FollowerOptions,
    private readonly sink: FollowerSink,
  ) {
    this.splitter = new LineSplitter(sink, opts.maxLineBytes);
  }

  /** Bytes of a partial line held now. */
  get pendingBytes(): number {
    return this.splitter.pendingBytes;
  }

  get isStdin(): boolean {
    return this.opts.path === '-';
  }

  start(): void {
    this.stopped = false;
    if (this.isStdin) return this.startStdin();
    const loop = () => {
      if (this.stopped) return;
      this.look();
      if (!this.stopped) this.timer = setTimeout(loop, this.opts.pollMs);
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.closeFd();
    if (this.stdinListeners) {
      const s = this.opts.stdin ?? process.stdin;
      s.off('data', this.stdinListeners.data);
      s.off('end', this.stdinListeners.end);
      s.off('error', this.stdinListeners.error);
      s.pause();
      this.stdinListeners = null;
    }
  }

  private closeFd(): void {
    if (this.fd >= 0) {
      try {
        fs.closeSync(this.fd);
      } catch {
        // already gone
      }
    }
    this.fd = -1;
  }

  private setUp(up: boolean, reason: string | null, message: string): void {
    this.up = up;
    this.sink.state(up, reason, message);
  }

  private startStdin(): void {
    const s = this.opts.stdin ?? process.stdin;
    const data = (b: Buffer | string) => this.splitter.push(typeof b === 'string' ? Buffer.from(b) : b, false, hrNow());
    const end = () => this.setUp(false, 'timeline_eof', 'standard input closed: no more TIMELINE lines (the feeding command ended)');
    const error = (e: Error) => this.setUp(false, 'timeline_read', `standard input: ${e.message}`);
    this.stdinListeners = { data, end, error };
    s.on('data', data);
    s.on('end', end);
    s.on('error', error);
    this.setUp(true, null, 'reading TIMELINE lines from standard input');
    s.resume();
  }

  /** One look at the file now (tests call it instead of waiting for the timer). */
  tick(): Promise<void> {
    this.look();
    return Promise.resolve();
  }

  /**
   * One look at the file: open, rotate, truncate, read what is new. Never throws.
   * Synchronous on purpose: a stat and a read of a local log in the page cache cost
   * microseconds, far less CPU than the thread-pool round trips of their async forms, ten
   * times a second (bench/attach-poll.ts).
   */
  private look(): void {
    const path = this.opts.path;
    // Taken before the stat: "caught up at lookHr" vouches only for what was written before it.
    const lookHr = hrNow();
    try {
      let st: fs.Stats | null = null;
      try {
        st = fs.statSync(path);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw e;
      }
      if (this.fd >= 0 && st && (st.ino !== this.ino || st.dev !== this.dev)) {
        // Rotated by rename: finish the old file, then follow the new one from its start.
        this.readToEnd();
        this.closeFd();
        this.splitter.reset();
      }
      if (this.fd < 0) {
        if (!st) {
          this.first = false;
          if (!this.missingReported) {
            this.missingReported = true;
            this.setUp(false, 'timeline_missing', `${path}: no such file (yet); waiting for it`);
          }
          return;
        }
        if (!st.isFile()) throw Object.assign(new Error('not a regular file (a pipe or a stream: use --cuzk.timeline-file - and feed it on standard input)'), { code: 'EINVAL' });
        this.fd = fs.openSync(path, 'r');
        const fst = fs.fstatSync(this.fd);
        this.ino = fst.ino;
        this.dev = fst.dev;
        this.missingReported = false;
        this.pos = 0;
        if (this.first) {
          // Present at start: catch up from its tail, as history.
          this.first = false;
          const size = fst.size;
          let from = Math.max(0, size - this.opts.catchUpBytes);
          if (from > 0) from = this.lineStartAfter(from, size);
          this.pos = from;
          this.setUp(true, null, `following ${path}`);
          this.readRange(size, true);
        } else this.setUp(true, null, `following ${path}`);
      } else if (st && st.size < this.pos) {
        // Truncated in place (copytruncate): what follows is new.
        this.pos = 0;
        this.splitter.reset();
      }
      // Nothing new since the last look: the stat said so, no read needed.
      if (st && st.size === this.pos && st.ino === this.ino && st.dev === this.dev) this.sink.caughtUp(lookHr);
      else this.readToEnd();
      if (!this.up) this.setUp(true, null, `following ${path}`);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      this.closeFd();
      this.first = false;
      this.setUp(false, 'timeline_read', `${path}: ${err.code === 'EACCES' ? 'permission denied' : err.code === 'EISDIR' ? 'is a directory' : err.message}`);
    }
  }

  /** The offset just after the first newline at or after `from` (the catch-up skips a partial line). */
  private lineStartAfter(from: number, size: number): number {
    let p = from - 1; // a newline just before `from` means `from` starts a line
    while (p < size) {
      const n = fs.readSync(this.fd, this.buf, 0, Math.min(READ_CHUNK, size - p), p);
      if (n <= 0) return size;
      const nl = this.buf.indexOf(NL, 0);
      if (nl >= 0 && nl < n) return p + nl + 1;
      p += n;
    }
    return size;
  }

  private readRange(until: number, history: boolean): void {
    while (this.pos < until && !this.stopped) {
      const readHr = hrNow();
      const n = fs.readSync(this.fd, this.buf, 0, Math.min(READ_CHUNK, until - this.pos), this.pos);
      if (n <= 0) return;
      this.pos += n;
      this.splitter.push(this.buf.subarray(0, n), history, readHr);
    }
  }

  private readToEnd(): void {
    while (this.fd >= 0 && !this.stopped) {
      const readHr = hrNow();
      const n = fs.readSync(this.fd, this.buf, 0, READ_CHUNK, this.pos);
      if (n <= 0) {
        this.sink.caughtUp(readHr);
        return;
      }
      this.pos += n;
      this.splitter.push(this.buf.subarray(0, n), false, readHr);
    }
  }
}
