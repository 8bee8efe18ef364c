/**
 * Reads a growing log like `tail -F`: appends, truncation (copytruncate), rotation by
 * rename (the old file is read to its end, then the new one from its start), a file that
 * is not there yet (or for a while); or standard input (`-`). Hands whole lines on, never a
 * partial one, and never holds more than `maxLineBytes` of one line: a longer line is
 * dropped (and reported), however long it is.
 *
 * On start an existing file is caught up from its tail (at most `catchUpBytes`), marked as
 * history so the consumer can rebuild current state without counting old work again.
 *
 * Bounded whatever the file does (docs/hostile-inputs.md, issue 20):
 *  - every read is asynchronous, at most READ_CHUNK at a time, at most `readPerLookBytes` per
 *    look (the next look then comes at once): the event loop never waits on the file. The
 *    one exception is the first read of a look when at most SYNC_READ_MAX (64 KiB) is new
 *    (a prover's lines since the last look): that is a page-cache copy, cheaper in the
 *    look's own turn than a thread-pool round trip;
 *  - a backlog larger than `maxBacklogBytes` (a file rotated to, or `truncate -s` to, many
 *    GiB) is not read: the follower skips to its last `catchUpBytes`, reads those as
 *    history (as at start) and reports the skipped bytes (`timeline_skipped`);
 *  - a copytruncate after which more was written than before within one look (same inode,
 *    size not smaller) is told apart from an append by the bytes just before the read
 *    position, remembered from the last read and compared on the next: if they changed,
 *    the file is read again from its start (`timeline_rewritten`). A rewrite that leaves
 *    those bytes identical (a log of byte-identical lines) cannot be seen.
 */
import * as fs from 'node:fs';
import type { Readable } from 'node:stream';
import { TIMELINE_MARK } from './timeline-parser';
import { ownTimers, type Every } from '../timers';

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
  /**
   * What follows is read from the start of a file (opened, rotated, truncated, rewritten):
   * what caughtUp said so far vouches for nothing in it until its own end is found.
   */
  newFile?(): void;
  /** Readable or not (up), with an error reason when it changes or fails. */
  state(up: boolean, reason: string | null, message: string): void;
  /**
   * Bytes given up (`timeline_skipped`: a backlog past the bound) or a rewrite in place seen
   * (`timeline_rewritten`): counted by the consumer under that reason.
   */
  lost(reason: 'timeline_skipped' | 'timeline_rewritten', message: string): void;
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
  /** The periodic timer (default: one of its own; a fleet shares one among its targets). */
  every?: Every;
  /** Most bytes one look reads (default 4 MiB); the rest waits for the next look, at once. */
  readPerLookBytes?: number;
  /** A backlog past this is skipped to its last catchUpBytes (default max(catchUpBytes, 64 MiB)). */
  maxBacklogBytes?: number;
}

const hrNow = (): number => Number(process.hrtime.bigint());
/** One read (the event loop gets a turn between two). */
const READ_CHUNK = 1 << 20;
const READ_PER_LOOK = 4 << 20;
const MAX_BACKLOG = 64 << 20;
/** Bytes before the read position remembered to tell a rewrite from an append. */
const FINGERPRINT = 256;
const NL = 10;
const { O_RDONLY, O_NONBLOCK } = fs.constants;

function readAt(fd: number, buf: Buffer, len: number, at: number): Promise<number> {
  return new Promise((resolve, reject) => fs.read(fd, buf, 0, len, at, (err, n) => (err ? reject(err) : resolve(n))));
}

/**
 * A backlog this small (what a prover writes between two looks: a few KiB) is read in the
 * look's own turn, as the stat before it: a copy from the page cache of bytes just written,
 * microseconds. An asynchronous read costs a thread-pool round trip and a wake-up of the
 * event loop per look (a fleet of 100 logs looked at twice a second: ~0.8 % of a core).
 */
const SYNC_READ_MAX = 64 << 10;

const allZero = (b: Buffer): boolean => b.every((x) => x === 0);

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
  /** Bytes before this offset are history (the catch-up from a tail). */
  private historyUntil = 0;
  /** The last bytes before `pos`, as read (compared on the next read: a rewrite?). */
  private readonly fp = Buffer.alloc(FINGERPRINT);
  private fpLen = 0;
  /** mtime/ctime of the file at the last look: unchanged with the same size, nothing new. */
  private mtimeMs = -1;
  private ctimeMs = -1;
  /** Stops the periodic look. */
  private cancelTick: (() => void) | null = null;
  private stopped = false;
  private first = true;
  /** The last look stopped at its read budget: more is waiting. */
  private behind = false;
  /** Looks run one at a time, in order. */
  private chain: Promise<void> = Promise.resolve();
  private readonly buf = Buffer.allocUnsafe(READ_CHUNK + FINGERPRINT);
  private readonly perLook: number;
  private readonly maxBacklog: number;
  private missingReported = false;
  private stdinListeners: { data: (b: Buffer) => void; end: () => void; error: (e: Error) => void } | null = null;
  up = false;

  constructor(
    private readonly opts: FollowerOptions,
    private readonly sink: FollowerSink,
  ) {
    this.splitter = new LineSplitter(sink, opts.maxLineBytes);
    this.perLook = Math.max(1, opts.readPerLookBytes ?? READ_PER_LOOK);
    this.maxBacklog = Math.max(opts.maxBacklogBytes ?? MAX_BACKLOG, opts.catchUpBytes);
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
    let looking = false;
    const run = async () => {
      looking = true;
      try {
        await this.enqueue();
        // Stopped at its read budget: the rest at once, a turn of the event loop between looks.
        while (this.behind && !this.stopped) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          await this.enqueue();
        }
      } finally {
        looking = false;
      }
    };
    // A tick while a look still runs (a slow disk) is skipped, not queued.
    this.cancelTick?.();
    this.cancelTick = (this.opts.every ?? ownTimers)(this.opts.pollMs, () => {
      if (!looking && !this.stopped) void run();
    });
    void run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTick?.();
    this.cancelTick = null;
    // A read in flight finishes first: its fd must not be closed (and reused) under it.
    await this.chain;
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
    this.fpLen = 0;
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

  private enqueue(): Promise<void> {
    this.chain = this.chain.then(() => this.look());
    return this.chain;
  }

  /**
   * Looks at the file now, and again while a look stopped at its read budget, so that
   * everything written before the call has been read (tests: no waiting for the timer).
   */
  async tick(): Promise<void> {
    await this.enqueue();
    while (this.behind && !this.stopped) await this.enqueue();
  }

  /**
   * One look at the file: open, rotate, truncate, read what is new (at most perLook bytes).
   * Never throws. The stat, open and fstat are synchronous (metadata, bounded, and the open
   * is non-blocking so a FIFO swapped in cannot hang it); every read is asynchronous.
   */
  private async look(): Promise<void> {
    if (this.stopped) return;
    const path = this.opts.path;
    // Taken before the stat: "caught up at lookHr" vouches only for what was written before it.
    const lookHr = hrNow();
    this.behind = false;
    try {
      let st: fs.Stats | null = null;
      try {
        st = fs.statSync(path);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw e;
      }
      if (this.fd >= 0 && st && (st.ino !== this.ino || st.dev !== this.dev)) {
        // Rotated by rename: finish the old file (what was written to it since the last
        // look: a GPU_END lost here would leave a worker busy for ever), then follow the new
        // one from its start.
        if (!(await this.drain())) {
          this.behind = true;
          return;
        }
        this.closeFd();
        this.splitter.reset();
        this.mtimeMs = this.ctimeMs = -1;
      }
      if (this.stopped) return;
      if (this.fd < 0) {
        if (!st) {
          this.first = false;
          if (!this.missingReported) {
            this.missingReported = true;
            this.setUp(false, 'timeline_missing', `${path}: no such file (yet); waiting for it`);
          }
          return;
        }
        await this.open(path, st);
      } else if (st && st.size < this.pos) {
        // Truncated in place (copytruncate): what follows is new.
        this.restartAt(0);
      }
      if (st && st.size === this.pos && st.mtimeMs === this.mtimeMs && st.ctimeMs === this.ctimeMs && st.ino === this.ino && st.dev === this.dev) {
        // Nothing new since the last look: the stat said so, no read needed.
        this.sink.caughtUp(lookHr);
      } else if (!(await this.drain(st && st.ino === this.ino && st.dev === this.dev ? st.size : -1))) this.behind = true;
      if (st) {
        this.mtimeMs = st.mtimeMs;
        this.ctimeMs = st.ctimeMs;
      }
      if (!this.up && this.fd >= 0) this.setUp(true, null, `following ${path}`);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      this.closeFd();
      this.first = false;
      this.setUp(false, 'timeline_read', `${path}: ${err.code === 'EACCES' ? 'permission denied' : err.code === 'EISDIR' ? 'is a directory' : err.message}`);
    }
  }

  private async open(path: string, st: fs.Stats): Promise<void> {
    const notFile = () => Object.assign(new Error('not a regular file (a pipe or a stream: use --cuzk.timeline-file - and feed it on standard input)'), { code: 'EINVAL' });
    if (!st.isFile()) throw notFile();
    // Non-blocking: a FIFO swapped in after the stat opens at once (and is refused below).
    this.fd = fs.openSync(path, O_RDONLY | O_NONBLOCK);
    const fst = fs.fstatSync(this.fd);
    if (!fst.isFile()) throw notFile();
    this.ino = fst.ino;
    this.dev = fst.dev;
    this.missingReported = false;
    this.restartAt(0);
    this.mtimeMs = this.ctimeMs = -1;
    if (this.first) {
      // Present at start: catch up from its tail, as history.
      this.first = false;
      const size = fst.size;
      let from = Math.max(0, size - this.opts.catchUpBytes);
      if (from > 0) from = await this.lineStartAfter(from, size);
      this.pos = from;
      this.historyUntil = size;
    }
    this.setUp(true, null, `following ${path}`);
  }

  /** Reads from a new position: nothing before it is remembered. */
  private restartAt(pos: number): void {
    if (pos === 0) this.sink.newFile?.();
    this.pos = pos;
    this.historyUntil = 0;
    this.fpLen = 0;
    this.splitter.reset();
  }

  /** The offset just after the first newline at or after `from` (the catch-up skips a partial line). */
  private async lineStartAfter(from: number, size: number): Promise<number> {
    let p = from - 1; // a newline just before `from` means `from` starts a line
    while (p < size && !this.stopped) {
      const n = await readAt(this.fd, this.buf, Math.min(READ_CHUNK, size - p), p);
      if (n <= 0) return size;
      const nl = this.buf.indexOf(NL, 0);
      if (nl >= 0 && nl < n) return p + nl + 1;
      p += n;
    }
    return size;
  }

  /** Keeps the last FINGERPRINT bytes before `pos`, `data` being what was just read up to it. */
  private remember(data: Buffer): void {
    if (data.length >= FINGERPRINT) {
      data.copy(this.fp, 0, data.length - FINGERPRINT);
      this.fpLen = FINGERPRINT;
      return;
    }
    const keep = Math.min(this.fpLen, FINGERPRINT - data.length);
    this.fp.copy(this.fp, 0, this.fpLen - keep, this.fpLen);
    data.copy(this.fp, keep);
    this.fpLen = keep + data.length;
  }

  /**
   * Reads from `pos` to the end of the file, at most perLook bytes; true when the end was
   * reached. A backlog past maxBacklog is skipped first; the bytes before `pos` are checked
   * against what was read there (a rewrite in place is read again from the start).
   */
  private async drain(statSize = -1): Promise<boolean> {
    const path = this.opts.path;
    // The look's stat of the path, when it is still our file: no second stat.
    const size = statSize >= 0 ? statSize : fs.fstatSync(this.fd).size;
    if (size - this.pos > this.maxBacklog) {
      const skipped = size - this.pos;
      const from = await this.lineStartAfter(Math.max(this.pos, size - this.opts.catchUpBytes), size);
      this.sink.lost(
        'timeline_skipped',
        `${path}: ${skipped} bytes arrived at once (more than ${this.maxBacklog} behind): skipped ${from - this.pos} to read only the last ${size - from} (as history, as at start); the work in the skipped part is not counted`,
      );
      this.restartAt(from);
      this.historyUntil = size;
    }
    let budget = this.perLook;
    let verify = this.fpLen > 0;
    // One synchronous read per look at most: a writer outpacing us gets the turns of the
    // asynchronous reads that follow.
    let syncLeft = 1;
    while (!this.stopped) {
      if (budget <= 0) return false;
      const back = verify ? this.fpLen : 0;
      let len = Math.min(READ_CHUNK, budget);
      const history = this.pos < this.historyUntil;
      if (history) len = Math.min(len, this.historyUntil - this.pos);
      const sync = syncLeft > 0 && size - this.pos <= SYNC_READ_MAX;
      if (sync) {
        syncLeft--;
        len = Math.min(len, SYNC_READ_MAX);
      }
      const readHr = hrNow();
      const n = sync ? fs.readSync(this.fd, this.buf, 0, back + len, this.pos - back) : await readAt(this.fd, this.buf, back + len, this.pos - back);
      if (verify) {
        verify = false;
        const before = this.buf.subarray(0, Math.min(n, back));
        if (n < back || !before.equals(this.fp.subarray(0, back))) {
          if (n >= back && allZero(before)) {
            // A hole: truncated, and the writer (not in append mode) kept its offset: what
            // is past our position is new, as before.
            this.fpLen = 0;
          } else {
            this.sink.lost('timeline_rewritten', `${path}: rewritten in place since the last look (a copytruncate, then more than before written): read again from its start`);
            this.restartAt(0);
            verify = false;
            continue;
          }
        }
      }
      const got = n - back;
      if (got <= 0) {
        this.sink.caughtUp(readHr);
        return true;
      }
      const data = this.buf.subarray(back, n);
      this.pos += got;
      budget -= got;
      this.remember(data);
      this.splitter.push(data, history, readHr);
      if (got < len) {
        // A short read of a regular file: its end, at readHr.
        this.sink.caughtUp(readHr);
        return true;
      }
    }
    return true;
  }
}
