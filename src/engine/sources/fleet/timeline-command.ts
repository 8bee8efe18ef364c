/**
 * A TIMELINE source that is a command whose standard output is cuzk's log, e.g.
 * `ssh gpu-17 journalctl -fu cuzk -o cat --lines=0`: run without a shell (argv), restarted
 * with exponential back-off whenever it exits, every exit or failure to start counted.
 *
 * Its output goes into one stream that lives as long as the target (`stream`), handed to the
 * target's attach source as its standard input: a restart is invisible to the log reader
 * except for the lines cuzk wrote while nothing was reading. A partial last line of an
 * exited command is ended with a newline, so it cannot glue onto the next run's first line.
 *
 * Bounds: the command's standard error is read and only its last 512 bytes kept (for the
 * log line); its standard input is /dev/null (ssh would otherwise read ours). Back-off:
 * 1 s, doubling to at most 60 s; back to 1 s once a run has lasted 60 s.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import type { Logger } from '../../../util/logger';

export interface TimelineCommandOptions {
  argv: string[];
  /** The target's name, for logs. */
  target: string;
  logger: Logger;
  /** Each exit or failure to start, with a readable line. */
  onFailure(message: string): void;
  /** Running (its output is the log) or not (nothing is read until it runs again). */
  onState(running: boolean, message: string): void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** A run this long resets the back-off. */
  stableMs?: number;
  /** Wait this long after SIGTERM before SIGKILL at stop. */
  killGraceMs?: number;
}

const STDERR_TAIL = 512;

export class TimelineCommand {
  /** The log: every run's standard output, in order. Never ended while the target lives. */
  readonly stream = new PassThrough({ highWaterMark: 64 * 1024 });
  /** Exits and failures to start, since the target was added. */
  failures = 0;
  /** Runs started (the first included). */
  starts = 0;
  running = false;
  /** Milliseconds of the back-off now in force (0 while running or before the first failure). */
  backoffMs = 0;
  lastFailure: string | null = null;

  private child: ChildProcess | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private consecutive = 0;
  private startedAt = 0;
  private endsWithNewline = true;
  private exited: Promise<void> = Promise.resolve();
  private readonly minMs: number;
  private readonly maxMs: number;
  private readonly stableMs: number;

  constructor(private readonly opts: TimelineCommandOptions) {
    this.minMs = opts.minBackoffMs ?? 1000;
    this.maxMs = opts.maxBackoffMs ?? 60_000;
    this.stableMs = opts.stableMs ?? 60_000;
  }

  /** The command line as shown in logs. */
  get display(): string {
    return this.opts.argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
  }

  start(): void {
    this.stopped = false;
    this.run();
  }

  private run(): void {
    this.timer = null;
    if (this.stopped) return;
    const [prog, ...args] = this.opts.argv;
    let child: ChildProcess;
    let settled = false;
    let resolveExit!: () => void;
    this.exited = new Promise((r) => (resolveExit = r));
    let stderrTail = '';
    const done = (how: string) => {
      if (settled) return;
      settled = true;
      this.child = null;
      this.running = false;
      resolveExit();
      if (!this.endsWithNewline) {
        this.stream.write('\n');
        this.endsWithNewline = true;
      }
      if (this.stopped) return;
      const ranMs = Date.now() - this.startedAt;
      if (ranMs >= this.stableMs) this.consecutive = 0;
      this.consecutive++;
      this.failures++;
      this.backoffMs = Math.min(this.maxMs, this.minMs * 2 ** Math.min(30, this.consecutive - 1));
      const tail = stderrTail.trim().split('\n').pop() ?? '';
      const msg = `timeline command of target ${this.opts.target} (${this.display}) ${how}${tail ? `: ${tail}` : ''}; restarting in ${this.backoffMs / 1000}s`;
      this.lastFailure = msg;
      this.opts.onFailure(msg);
      this.opts.onState(false, msg);
      this.timer = setTimeout(() => this.run(), this.backoffMs);
    };
    this.startedAt = Date.now();
    this.starts++;
    try {
      child = spawn(prog, args, { stdio: ['ignore', 'pipe', 'pipe'], shell: false, windowsHide: true });
    } catch (e) {
      // Synchronous spawn failures (bad arguments) are reported like an exit.
      this.exited = Promise.resolve();
      settled = false;
      return done(`could not start (${(e as Error).message})`);
    }
    this.child = child;
    child.stdout!.on('data', (b: Buffer) => {
      if (b.length === 0) return;
      this.endsWithNewline = b[b.length - 1] === 0x0a;
      this.stream.write(b);
    });
    child.stderr!.on('data', (b: Buffer) => {
      stderrTail = (stderrTail + b.toString('utf8')).slice(-STDERR_TAIL);
    });
    child.once('spawn', () => {
      if (this.stopped || settled) return;
      this.running = true;
      this.backoffMs = 0;
      this.opts.onState(true, `timeline command of target ${this.opts.target} running (${this.display})`);
    });
    child.once('error', (e: NodeJS.ErrnoException) => done(`could not start (${e.code ?? e.message})`));
    // 'close': the process has exited and its output has been read to the end. A process it
    // left behind holding the pipe (a backgrounded grandchild) must not keep it open: half a
    // second after the exit, what was not read is dropped.
    const how = (code: number | null, signal: NodeJS.Signals | null) => (signal ? `was ended by ${signal}` : `exited with code ${code}`);
    let linger: NodeJS.Timeout | null = null;
    child.once('exit', (code, signal) => {
      linger = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        done(how(code, signal));
      }, 500);
    });
    child.once('close', (code, signal) => {
      if (linger) clearTimeout(linger);
      done(how(code, signal));
    });
  }

  /** Stops the command (SIGTERM, then SIGKILL after the grace) and any pending restart. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), this.opts.killGraceMs ?? 2000);
      await this.exited;
      clearTimeout(kill);
    }
    this.running = false;
  }
}
