/**
 * The TIMELINE surface (DESIGN §7c): cuzk's `TIMELINE,<offset_ms>,<event>,<job_id>,<detail>`
 * lines, followed in its log file or on standard input: the only surface with exact
 * per-worker GPU intervals for every proof kind, PoSt included. How upstream writes each
 * line on every path, and how each is read here, is docs/upstream-conformance.md; in short:
 *
 *  - clock (timeline-clock.ts): offsets of one daemon run on one base; a restart when they
 *    go back; lines claiming to be ahead of real time refused and counted;
 *  - jobs and units (timeline-jobs.ts): one unit per partition instance (a retried or
 *    duplicated id gets new ones), monolithic jobs matched pickup → end by job and worker
 *    whatever `partition=` the end carries (WindowPoSt's does);
 *  - workers (timeline-workers.ts): busy from a pickup to the end of the latest unit picked
 *    up; a pickup is tentative until its GPU_START (a skip writes none); a unit with no end
 *    (GPU failures write none) is given up after `gpuTimeoutMs`, or ended where /status
 *    saw it end (the merge passes that on);
 *  - kinds (kind-evidence.ts): partitioned jobs never name their kind; until something
 *    does, their time waits unexposed and is flushed on a timer;
 *  - torn lines (timeline-scan.ts): a tracing line inside a TIMELINE line is cut out;
 *  - history: lines read by the start-up catch-up rebuild state only, never count.
 * A sweep every second (not only when a line arrives) ends what timed out.
 *
 * Past ~500 lines on purpose: the clock, jobs, workers, parser, follower, scan and kinds are
 * already their own files; what is left is the one line-dispatch state machine that ties them
 * together.
 */
import { KIND_SLOTS, OTHER_KIND_INDEX, PART_FINALIZING, PART_GPU, PART_SYNTHESIZING, PART_SYNTH_DONE, kindIndex } from '../../model/kinds';
import type { ErrorCounts } from '../../model/error-counts';
import { BOUNDS } from '../plausibility';
import type { Logger } from '../../../util/logger';
import { KindEvidence, KindResolutions, kindFromRequestId } from './kind-evidence';
import { FollowerSink, LogFollower } from './timeline-follower';
import { ownTimers, type Every } from '../timers';
import { TL_GPU_END, TL_GPU_PICKUP, TL_GPU_QUEUE, TL_GPU_START, TL_LIMITS, TL_SYNTH_END, TL_SYNTH_START, TimelineRecord, JobIdCache, newRecord, parseTimeline } from './timeline-parser';
import { TimelineClock, DEFAULT_MAX_LEAD_MS, STALE_HOLD_NS, type ClockVerdict } from './timeline-clock';
import {
  END_ABANDONED,
  END_DONE,
  END_FAILED,
  END_LOST,
  END_NONE,
  END_SKIPPED,
  END_UNSEEN,
  MONO,
  STATES_ON_GPU,
  STATES_SYNTH,
  STATES_WAITING,
  TimelineJobs,
  TlJob,
  TlUnit,
  UnitObserver,
} from './timeline-jobs';
import { TimelineScanner } from './timeline-scan';
import { TimelineWorkers } from './timeline-workers';
import { Surface, ThrottledLog, WorkerClaim, hrNowNs, quoteName } from './surface';

export const TIMELINE_ERRORS = [
  'timeline_malformed',
  'timeline_unknown_event',
  'timeline_worker_out_of_range',
  'timeline_line_too_long',
  'timeline_restart',
  'timeline_unresolved_kind',
  'timeline_missing',
  'timeline_read',
  'timeline_eof',
  'timeline_torn',
  'timeline_clock',
  'timeline_gpu_end_missing',
  'timeline_end_repeated',
  'timeline_skipped', 'timeline_rewritten', // timeline-follower.ts: a backlog past its bound, a rewrite in place
] as const;

export interface TimelineOptions {
  /** Log file, or '-' for standard input. */
  path: string;
  errors: ErrorCounts;
  logger: Logger;
  /** How often the file is looked at (default 100 ms). */
  pollMs?: number;
  /** Longest line kept (default 64 KiB); longer ones are dropped and counted if TIMELINE. */
  maxLineBytes?: number;
  /** How much of an existing file's tail the start-up catch-up reads (default 8 MiB). */
  catchUpBytes?: number;
  /** Standard input stand-in (tests, a fleet target's command). */
  stdin?: import('node:stream').Readable;
  /** What /status and logs call the source when it is a stream (e.g. the command feeding it). */
  label?: string;
  /** A pickup not followed by its GPU_START within this long was a skip (default 5 s). */
  confirmMs?: number;
  /** A GPU stage with no end line is given up after this long (default: max(60 s, 3x the longest seen for its kind)). */
  gpuTimeoutMs?: number;
  /** A job that ended with no kind known is counted under "other" after this long (default 60 s). */
  unresolvedMs?: number;
  /** How far ahead of real time a live line may claim to be (default 30 s). */
  maxClockLeadMs?: number;
  /** The sweep's period (default 1 s; 0: no timer, tests call sweep()). */
  sweepMs?: number;
  /** Periodic timers for the look and the sweep (default: its own; a fleet shares them). */
  every?: Every;
}

/** A job whose units have all ended and that saw no line for this long is forgotten. */
const ENDED_QUIET_MS = 60_000;
/** A job that saw no line for this long is forgotten whatever it holds (lines lost). */
const STALE_QUIET_MS = 600_000;
const MAX_JOBS = 10_000;
const MAX_UNITS = 200_000;
const MIN_GPU_TIMEOUT_MS = 60_000;
/** A started partition whose worker has since finished later ones is given up this long after (at least). */
const MIN_LOST_END_GRACE_MS = 2_000;
/** gpu_ms (synth_ms) over the span from a unit's GPU_PICKUP (SYNTH_START) line to its end line: the lines' whole-ms truncation (1 ms), and 1 ms more. */
const SPAN_SLACK_MS = 2;
const MIN_SYNTH_TIMEOUT_MS = 600_000;
/** Partition index from which a job can only be SnapDeals (PoRep C2 has 10 partitions). */
export const SNAP_MIN_PARTITION = 10;
const SNAP_UPDATE = kindIndex('snap-update');
const POREP = kindIndex('porep-c2');

/** What the lines say about split proving (CUZK_DISABLE_SPLIT_PROVE=1 writes no GPU_START/GPU_END). */
export type SplitMode = 'unknown' | 'on' | 'off';

export interface KindSource {
  /** The kind slot another surface gives this job id, and how, or null. */
  (jobId: string): { kind: number; evidence: KindEvidence } | null;
}

export class TimelineSurface implements Surface, FollowerSink {
  readonly name = 'timeline' as const;
  readonly target: string;
  private readonly follower: LogFollower;
  private readonly log: ThrottledLog;
  private readonly rec: TimelineRecord = newRecord();
  private readonly ids = new JobIdCache();
  private readonly errors: ErrorCounts;
  private readonly maxLineBytes: number;
  readonly clock: TimelineClock;
  readonly units = new TimelineJobs();
  readonly workers: TimelineWorkers;
  private readonly scanner: TimelineScanner;
  readonly kinds = new KindResolutions();
  private readonly confirmNs: number;
  private readonly fixedGpuTimeoutNs: number;
  private readonly unresolvedNs: number;
  private stopSweep: (() => void) | null = null;
  private lastSweepMs = 0;

  /** Resolves a job id to a kind from the other surfaces (set by the merge). */
  resolver: KindSource | null = null;
  splitMode: SplitMode = 'unknown';
  /** Longest GPU stage / synthesis seen per kind slot (ns); the last slot is any kind. */
  private readonly maxGpuNs = new Float64Array(KIND_SLOTS + 1);
  private readonly maxSynthNs = new Float64Array(KIND_SLOTS + 1);
  /** TIMELINE lines applied. */
  eventsTotal = 0;
  /** Pickups found to be skips (partitions of jobs that had failed). */
  skips = 0;
  /** A monolithic PoRep/SnapDeals job was seen in this daemon run: batched proving (max_batch_size > 1). */
  batchedSeen = false;
  private upNow = false;
  private wasUp = false;
  private lastReason: string | null = null;

  constructor(private readonly opts: TimelineOptions) {
    this.target = opts.label ?? (opts.path === '-' ? 'standard input' : opts.path);
    this.errors = opts.errors;
    for (const r of TIMELINE_ERRORS) this.errors.declare(r);
    this.errors.declare('implausible');
    this.errors.declare('unknown_proof_kind');
    this.maxLineBytes = opts.maxLineBytes ?? 64 * 1024;
    this.confirmNs = (opts.confirmMs ?? 5000) * 1e6;
    this.fixedGpuTimeoutNs = opts.gpuTimeoutMs !== undefined ? opts.gpuTimeoutMs * 1e6 : 0;
    this.unresolvedNs = (opts.unresolvedMs ?? 60_000) * 1e6;
    this.log = new ThrottledLog(opts.logger, { surface: 'timeline', source: this.target });
    this.follower = new LogFollower(
      { path: opts.path, pollMs: opts.pollMs ?? 100, maxLineBytes: this.maxLineBytes, catchUpBytes: opts.catchUpBytes ?? 8 * 1024 * 1024, stdin: opts.stdin, every: opts.every },
      this,
    );
    this.clock = new TimelineClock(() => this.follower.isStdin, hrNowNs, opts.maxClockLeadMs ?? DEFAULT_MAX_LEAD_MS);
    this.workers = new TimelineWorkers((u) => u.pickT + this.capSpanNs(u.job.kind));
    this.scanner = new TimelineScanner(
      {
        record: (s, a, b, history, readHr) => this.record(s, a, b, history, readHr),
        bad: (why, s, a, b) => this.badLine(why, s, a, b),
        torn: (head) => this.bad('timeline_torn', `a TIMELINE line torn by other output could not be put back together: ${quoteName(head.slice(0, 120))}`),
        overlong: () => this.bad('timeline_line_too_long', `a TIMELINE line longer than ${this.maxLineBytes} bytes was dropped`),
      },
      this.maxLineBytes,
    );
  }

  set observer(o: UnitObserver | null) {
    this.units.observer = o;
  }

  /** Whether the log was ever readable in this process (a file named but never written: not). */
  get everUp(): boolean {
    return this.wasUp;
  }

  get up(): boolean {
    return this.upNow;
  }

  start(): void {
    this.follower.start();
    const period = this.opts.sweepMs ?? 1000;
    if (period > 0) this.stopSweep = (this.opts.every ?? ownTimers)(period, () => this.sweep(), { unref: true });
  }

  async stop(): Promise<void> {
    this.stopSweep?.();
    this.stopSweep = null;
    await this.follower.stop();
  }

  /** Bytes of a partial line the reader holds now (bounded by maxLineBytes, twice). */
  get pendingBytes(): number {
    return this.follower.pendingBytes + this.scanner.pendingBytes;
  }

  /** One look at the file now (tests: no waiting for the poll timer). */
  poll(): Promise<void> {
    return this.follower.tick();
  }

  // ---- FollowerSink ----

  state(up: boolean, reason: string | null, message: string): void {
    const was = this.upNow;
    this.upNow = up;
    if (up) this.wasUp = true;
    if (reason && (was || reason !== this.lastReason)) this.errors.inc(reason, message);
    this.lastReason = up ? null : reason;
    if (!up) this.log.log('warn', message);
    else if (!was) this.log.log('info', message, true);
  }

  lost(reason: 'timeline_skipped' | 'timeline_rewritten', message: string): void {
    this.bad(reason, message);
  }

  overlong(timeline: boolean): void {
    if (timeline) this.bad('timeline_line_too_long', `a TIMELINE line longer than ${this.maxLineBytes} bytes was dropped`);
  }

  caughtUp(hr: number): void {
    if (hr > this.clock.lastEofHr) this.clock.lastEofHr = hr;
    if (hr > this.clock.eofFactHr) this.clock.eofFactHr = hr;
  }

  newFile(): void {
    this.clock.eofFactHr = -Infinity;
  }

  /** Applies whole lines of log text (also used directly by tests and the benchmark). */
  lines(text: string, history: boolean, readHr: number): void {
    this.wasUp = true; // lines came: a log, however fed
    this.scanner.scan(text, history, readHr);
  }

  private record(s: string, a: number, b: number, history: boolean, readHr: number): string | null {
    const err = parseTimeline(s, a, b, this.rec, this.ids);
    if (err !== null) return err;
    this.apply(this.rec, !history, readHr);
    return null;
  }

  private badLine(why: string, s: string, a: number, b: number): void {
    const text = quoteName(s.slice(a, Math.min(b, a + 120)));
    if (why === 'unknown_event') this.bad('timeline_unknown_event', `a TIMELINE line has an unknown event: ${text}`);
    else if (why === 'worker_out_of_range') this.bad('timeline_worker_out_of_range', `a TIMELINE line names a worker id above ${TL_LIMITS.maxWorkerId}: ${text}`);
    else this.bad('timeline_malformed', `a TIMELINE line does not parse: ${text}`);
  }

  private bad(reason: string, message: string): void {
    this.errors.inc(reason, message);
    this.log.log('warn', message);
  }

  // ---- applying one record ----

  /**
   * A line the clock called `stale` (a new daemon's first, or the old one's printed late),
   * held until the next line says which: one also from before what the reads vouch for is
   * the new run's; otherwise, or after STALE_HOLD_NS of reads finding nothing more, it was
   * the old run's. Meanwhile running stints are exposed no further (clock.freeze).
   */
  private held: { r: TimelineRecord; readHr: number } | null = null;

  private apply(r: TimelineRecord, live: boolean, readHr: number): void {
    const off = r.offsetMs;
    let v = this.clock.check(off, live, readHr);
    if (this.held) {
      const newRun = v === 'stale' || v === 'restart' || this.clock.inVouchedPast(off, live);
      this.release(newRun);
      if (newRun) v = this.clock.check(off, live, readHr);
    }
    if (v === 'stale') {
      this.held = { r: { ...r }, readHr };
      this.clock.freeze();
      return;
    }
    this.applyAs(r, v, live, readHr);
  }

  private release(newRun: boolean): void {
    const h = this.held!;
    this.held = null;
    this.clock.unfreeze();
    if (newRun) this.restart(true, h.r.offsetMs);
    this.applyAs(h.r, 'ok', true, h.readHr);
  }

  /** A held line with nothing read after it for STALE_HOLD_NS: the old run's. */
  private releaseIfQuiet(): void {
    if (this.held && this.clock.lastEofHr - this.held.readHr >= STALE_HOLD_NS) this.release(false);
  }

  private applyAs(r: TimelineRecord, verdict: ClockVerdict, live: boolean, readHr: number): void {
    const off = r.offsetMs;
    let v = verdict;
    if (v === 'ahead') {
      this.bad('timeline_clock', `a TIMELINE line claims offset ${off} ms, more than ${this.clock.maxLeadMs} ms ahead of real time since its daemon started: refused (another daemon's log mixed in, or a clock running fast)`);
      return;
    }
    if (v === 'restart') {
      this.restart(live, off);
      v = this.clock.check(off, live, readHr);
    }
    const t = this.clock.accept(off, live, readHr);
    this.eventsTotal++;
    let counting = live;
    // Nothing took longer than the engine has been running (the offset is ms since its start).
    if ((r.event === TL_SYNTH_END || r.event === TL_GPU_END) && r.ms > off + BOUNDS.durationSlackMs) {
      if (counting) {
        const what = `TIMELINE: ${r.event === TL_GPU_END ? 'gpu_ms' : 'synth_ms'} ${r.ms} is longer than the engine has been up (${off} ms)`;
        this.errors.inc('implausible', what);
        this.log.log('warn', `${what}; not counted`);
      }
      counting = false;
    }
    const job = this.units.job(r.jobId, off);
    const key = r.partition >= 0 ? r.partition : MONO;
    switch (r.event) {
      case TL_SYNTH_START: {
        if (key === MONO && r.kind !== null && job.kind < 0) {
          let k = kindIndex(r.kind);
          if (k < 0) {
            this.unknownKind(r.kind);
            k = OTHER_KIND_INDEX;
          }
          this.setKind(job, k, 'timeline');
          if (k === POREP || k === SNAP_UPDATE) this.batchedSeen = true;
        }
        // A new instance of the job (a retry re-uses its id): what failed before is over.
        job.failed = false;
        const u = this.units.newUnit(job, key);
        u.synthT = t;
        this.units.setState(u, PART_SYNTHESIZING);
        break;
      }
      case TL_SYNTH_END: {
        let u = this.units.find(job, key, STATES_SYNTH);
        if (!u && this.repeatsEnd(false, job, key, t, r.ms, counting)) break;
        u ??= this.units.newUnit(job, key);
        this.units.setState(u, PART_SYNTH_DONE);
        u.readyT = t;
        // synth_ms is measured inside the synthesis call, after SYNTH_START is written
        // (engine.rs, pipeline.rs synth_start.elapsed()): no longer than the span, as gpu_ms.
        let synthMs = r.ms;
        if (synthMs > (t - u.synthT) / 1e6 + SPAN_SLACK_MS) {
          if (counting) this.overSpan('SYNTH_END', 'synth_ms', job, r.ms, t - u.synthT);
          synthMs = Math.max(0, (t - u.synthT) / 1e6);
        }
        u.synthMs = synthMs;
        if (!u.synthCounted) {
          u.synthCounted = true;
          if (counting) this.units.addSynth(job, synthMs * 1e6, key < 0 ? 0 : key);
        }
        this.observeMax(this.maxSynthNs, job.kind, synthMs * 1e6);
        break;
      }
      case TL_GPU_QUEUE: {
        const u = this.units.find(job, key, STATES_WAITING) ?? this.units.newUnit(job, key);
        if (u.state < PART_SYNTH_DONE) this.units.setState(u, PART_SYNTH_DONE);
        if (Number.isNaN(u.readyT)) u.readyT = t;
        break;
      }
      case TL_GPU_PICKUP:
        this.pickup(r.worker, job, key, t, counting, false);
        break;
      case TL_GPU_START:
        this.gpuStart(r.worker, job, key, t, counting);
        break;
      case TL_GPU_END:
        this.gpuEnd(r.worker, job, r.partition, t, r.ms, counting);
        break;
      default:
        break;
    }
    if (job.kind < 0) this.tryResolve(job);
    if (job.kind < 0 && key >= SNAP_MIN_PARTITION) this.setKind(job, SNAP_UPDATE, 'partition_index');
    if (off - this.lastSweepMs >= 1000 || this.units.jobs.size > MAX_JOBS || this.units.unitsTracked > MAX_UNITS) this.sweep();
  }

  private pickup(w: number, job: TlJob, key: number, t: number, counting: boolean, fromStart: boolean): TlUnit {
    const ws = this.workers;
    ws.touch(w);
    let o = ws.own[w];
    if (o && ws.tentative[w]) {
      // The worker loops to its next pickup without having started the last one. In split
      // mode that was a skip; a long gap with no GPU_START ever seen is CUZK_DISABLE_SPLIT_PROVE.
      if (this.splitMode === 'unknown' && t - o.pickT > 50e6) this.setSplitMode('off', o);
      else this.skip(w, o, counting);
      o = ws.own[w];
    }
    let u = this.units.find(job, key, STATES_WAITING);
    if (!u) {
      // The same pickup line again (a duplicated log): nothing new.
      const again = this.units.find(job, key, STATES_ON_GPU, w);
      if (again && !fromStart && again.pickT === t) return again;
      u = this.units.newUnit(job, key);
    }
    u.worker = w;
    u.pickT = t;
    if (job.failed && !fromStart) {
      // A partition of a job that already failed: upstream picks it up and drops it.
      this.units.setState(u, PART_GPU);
      this.units.finish(u, END_SKIPPED, t);
      this.skips++;
      return u;
    }
    if (o && o !== u && !ws.tentative[w]) {
      // Split proving: the older partition's CPU tail runs on (finalizing). Without it the
      // worker proves synchronously: its next pickup means the older stage has ended.
      if (this.splitMode === 'off') this.units.finish(o, END_UNSEEN, t);
      else if (o.state === PART_GPU) this.units.setState(o, PART_FINALIZING);
    }
    this.units.setState(u, PART_GPU);
    const tentative = !fromStart && this.splitMode !== 'off';
    ws.pickup(w, u, t, tentative);
    if (fromStart) u.started = true;
    return u;
  }

  private gpuStart(w: number, job: TlJob, key: number, t: number, counting: boolean): void {
    if (this.splitMode !== 'on') this.setSplitMode('on', null);
    const ws = this.workers;
    ws.touch(w);
    const o = ws.own[w];
    if (o && o.job === job && (o.key === key || key === MONO)) {
      o.started = true;
      ws.confirm(w, o);
      return;
    }
    const u = this.units.find(job, key, STATES_ON_GPU, w);
    if (u) {
      u.started = true;
      return;
    }
    // Its pickup line was lost or torn beyond repair: the start stands for it.
    this.pickup(w, job, key, t, counting, true);
  }

  private gpuEnd(w: number, job: TlJob, partition: number, t: number, gpuMs: number, counting: boolean): void {
    const ws = this.workers;
    ws.touch(w);
    const o = ws.own[w];
    let u: TlUnit | null = null;
    // A monolithic unit's end may carry partition= (WindowPoSt's partition_index).
    if (o && o.job === job && (o.key === partition || o.key === MONO || partition < 0)) {
      u = o;
      // gpu_ms dates the stage from its pickup: one that began before the worker's current
      // unit was picked up is an older instance's of that key on this worker, still finalizing
      // (a duplicate in flight, docs/upstream-conformance.md: each line goes to the oldest unit
      // of its key in the state it follows).
      if (o.pickT > t - (gpuMs - SPAN_SLACK_MS) * 1e6) u = this.units.find(job, o.key, STATES_ON_GPU, w) ?? o;
    } else {
      const keys = partition >= 0 ? [partition, MONO] : [MONO];
      for (const k of keys) {
        u = this.units.find(job, k, STATES_ON_GPU, w) ?? this.units.find(job, k, STATES_ON_GPU);
        if (u) break;
      }
    }
    if (u && gpuMs > (t - u.pickT) / 1e6 + SPAN_SLACK_MS) {
      // gpu_ms runs from gpu_prove_start (pipeline.rs), after the GPU_PICKUP and GPU_START
      // lines (engine.rs): a stage is never longer than the span its lines show. A longer
      // claim (a hostile log's GPU_END 1 ms after its pickup claiming the engine's whole
      // uptime, which the uptime bound lets through) counts only that span.
      if (counting) this.overSpan('GPU_END', 'gpu_ms', job, gpuMs, t - u.pickT);
      gpuMs = Math.max(0, (t - u.pickT) / 1e6);
    }
    if (!u) {
      if (this.repeatsEnd(true, job, partition >= 0 && !job.mono ? partition : MONO, t, gpuMs, counting)) return;
      // Neither its pickup nor its start was seen: gpu_ms dates the stage (GPU_START is
      // written right after the pickup and gpu_ms is measured from there).
      u = this.units.newUnit(job, partition >= 0 && !job.mono ? partition : MONO);
      this.units.setState(u, PART_GPU);
      u.worker = w;
      u.pickT = t - gpuMs * 1e6;
      u.started = true;
      ws.creditUnseen(w, u.pickT, t, counting);
    }
    const owner = u.worker >= 0 ? u.worker : w;
    if (ws.own[owner] === u && ws.tentative[owner]) {
      u.started = true;
      ws.confirm(owner, u);
    }
    u.gpuMs = gpuMs;
    this.units.finish(u, END_DONE, t);
    if (counting) {
      this.units.addGpu(job, gpuMs * 1e6, u.key < 0 ? 0 : u.key, true);
      ws.parts[owner]++;
    }
    this.observeMax(this.maxGpuNs, job.kind, gpuMs * 1e6);
    ws.ended(owner, u, t, counting);
  }

  /**
   * An end line with nothing running for its partition that repeats the last one: upstream
   * writes one SYNTH_END per partition synthesis and one GPU_END per partition attempt
   * (engine.rs synthesis worker; the finalizer after gpu_prove_finish) and proves a partition
   * once per job instance (a retry re-submits the job: synthesis again, then a new pickup).
   * So an end of the same job and partition dated by its synth_ms / gpu_ms to begin before
   * that partition's last one ended (2 ms slack), or ending no later, is that line again (a
   * log fed twice, a forged one). Counting it would add its seconds (and, for GPU_END, a
   * completed partition) a second time, or leave a unit waiting for a GPU that never comes.
   * Not counted; its reason counted.
   */
  private repeatsEnd(gpu: boolean, job: TlJob, key: number, t: number, ms: number, counting: boolean): boolean {
    let lastEndT = NaN;
    for (let i = job.units.length - 1; i >= 0; i--) {
      const x = job.units[i];
      if (x.key !== key || !(gpu ? x.end === END_DONE : x.synthCounted)) continue;
      lastEndT = gpu ? x.endT : x.readyT;
      break;
    }
    if (Number.isNaN(lastEndT)) return false;
    if (t > lastEndT && t - ms * 1e6 >= lastEndT - SPAN_SLACK_MS * 1e6) return false;
    if (counting) {
      const [event, field, what] = gpu ? ['GPU_END', 'gpu_ms', 'proven'] : ['SYNTH_END', 'synth_ms', 'synthesized'];
      this.bad(
        'timeline_end_repeated',
        `a ${event} of job ${quoteName(job.id)}${key >= 0 ? ` partition ${key}` : ''} at offset ${this.clock.offsetOf(t)} ms (${field} ${ms}) repeats one that ended at ${this.clock.offsetOf(lastEndT)} ms: not counted (a partition is ${what} once per job instance; a log fed twice or a forged line)`,
      );
    }
    return true;
  }

  private overSpan(event: string, field: string, job: TlJob, ms: number, spanNs: number): void {
    const what = `TIMELINE: ${event} of job ${quoteName(job.id)} claims ${field} ${ms}, but its ${event === 'GPU_END' ? 'GPU_PICKUP' : 'SYNTH_START'} was ${Math.round(spanNs / 1e6)} ms earlier`;
    this.errors.inc('implausible', what);
    this.log.log('warn', `${what}; only that span counted`);
  }

  /** `u`, picked up by `w`, never started: a partition of a job that had failed. */
  private skip(w: number, u: TlUnit, counting: boolean): void {
    this.skips++;
    u.job.failed = true;
    this.units.finish(u, END_SKIPPED, u.pickT);
    this.workers.skipped(w, u, counting);
    const back = this.workers.own[w];
    if (back && back.state === PART_FINALIZING) this.units.setState(back, PART_GPU);
  }

  private setSplitMode(mode: SplitMode, pending: TlUnit | null): void {
    const was = this.splitMode;
    this.splitMode = mode;
    if (mode === 'off') {
      this.log.log('warn', 'GPU pickups are not followed by GPU_START lines: cuzk runs with CUZK_DISABLE_SPLIT_PROVE=1 (no GPU_START/GPU_END); worker busy time from TIMELINE is an upper bound and GPU seconds need --cuzk.status-url', true);
      // Pickups waiting for a GPU_START are real work in this mode.
      for (let w = 0; w < this.workers.own.length; w++) {
        const o = this.workers.own[w];
        if (o && this.workers.tentative[w]) this.workers.confirm(w, o);
      }
      if (pending) pending.started = true;
    } else if (was === 'off') this.log.log('info', 'GPU_START lines seen again: split proving is on', true);
  }

  // ---- kinds ----

  private setKind(job: TlJob, k: number, evidence: KindEvidence): void {
    if (job.kind >= 0) return;
    this.units.setKind(job, k, evidence);
    this.kinds.inc(evidence);
  }

  private tryResolve(job: TlJob): void {
    const r = this.resolver?.(job.id) ?? null;
    if (r && r.kind >= 0) return this.setKind(job, r.kind, r.evidence);
    const k = kindFromRequestId(job.id);
    if (k >= 0) this.setKind(job, k, 'request_id');
  }

  /** Resolves what the other surfaces now know (the merge calls this before it composes). */
  resolvePending(): void {
    if (this.units.unresolved.size === 0) return;
    for (const job of [...this.units.unresolved]) this.tryResolve(job);
  }

  /**
   * GetMetrics says how many proofs of each kind ended since its previous answer. Jobs
   * whose lines ended before this answer are matched with them: those of known kinds first
   * (oldest first); if then exactly one kind still has unexplained ends and exactly that
   * many ended jobs have no kind, they are of that kind. Anything less certain infers
   * nothing (cuzk counts a proof a little after its last GPU_END: a job may be counted in
   * the next answer; it stays a candidate for 30 s).
   */
  proofsEnded(perKind: Float64Array, answerHr: number): void {
    if (this.clock.runs === 0) return;
    const rem = Float64Array.from(perKind);
    const unresolved: TlJob[] = [];
    const ended = [...this.units.jobs.values()]
      .filter((j) => !j.accounted && !Number.isNaN(j.endedT) && this.clock.toHr(j.endedT) <= answerHr && this.clock.toHr(j.endedT) > answerHr - 30e9)
      .sort((a, b) => a.endedT - b.endedT);
    for (const j of ended) {
      if (j.kind < 0) unresolved.push(j);
      else if (rem[j.kind] > 0) {
        rem[j.kind]--;
        j.accounted = true;
      }
    }
    let only = -1;
    for (let k = 0; k < rem.length; k++) {
      if (rem[k] <= 0) continue;
      if (only >= 0) return; // two kinds unexplained: cannot tell
      only = k;
    }
    if (only < 0 || unresolved.length === 0 || unresolved.length !== rem[only]) return;
    for (const j of unresolved) {
      j.accounted = true;
      this.setKind(j, only, 'grpc_metrics');
    }
  }

  private unknownKind(name: string): void {
    this.errors.inc('unknown_proof_kind', `unknown proof kind folded into "other": ${quoteName(name)}`);
    this.log.log('warn', `folded an unknown proof kind into proof_kind="other": ${quoteName(name)}`);
  }

  // ---- evidence from the other surfaces ----

  /**
   * /status says partition `key` of job `id` left the GPU with this gpu_ms (cuzk's
   * partition_gpu_end marks it done whatever the result). If no GPU_END comes for it, it
   * failed (upstream writes none on a GPU error); the sweep decides once the log has been
   * read well past that moment.
   */
  otherSurfaceEnded(id: string, key: number, gpuMs: number): void {
    const job = this.units.jobs.get(id);
    if (!job) return;
    // /status holds one JobState per id (a re-used id replaces it): its word is about the
    // newest instance of that partition only.
    let u: TlUnit | null = null;
    for (let i = job.units.length - 1; i >= 0; i--) {
      if (job.units[i].key === key) {
        u = job.units[i];
        break;
      }
    }
    this.endedByOther(job, u, key, gpuMs);
  }

  /**
   * otherSurfaceEnded for every partition of one /status pipeline that is done with a
   * gpu_ms, in their order: the job is looked up once and each key's newest unit found from
   * one pass over its units (each poll lists ~800 partitions, most of them done, of jobs with
   * up to 64 units: a search per partition was a quadratic walk every poll). The same
   * effects as one call per partition: nothing here adds or removes units.
   */
  otherSurfaceEndedParts(id: string, parts: readonly { index: number; state: string; gpu_ms?: number | null }[]): void {
    const job = this.units.jobs.get(id);
    if (!job) return;
    const units = job.units;
    // Newest unit per key 0..n-1 (the /status indices this pipeline can name); other keys
    // are searched as otherSurfaceEnded does.
    const n = parts.length;
    if (this.newestUnit.length < n) this.newestUnit.length = n;
    const newest = this.newestUnit;
    newest.fill(null, 0, n);
    for (let i = units.length - 1; i >= 0; i--) {
      const k = units[i].key;
      if (k >= 0 && k < n && newest[k] === null) newest[k] = units[i];
    }
    for (let j = 0; j < n; j++) {
      const part = parts[j];
      if (part.state !== 'done' || typeof part.gpu_ms !== 'number') continue;
      const key = part.index;
      if (key >= 0 && key < n && Number.isInteger(key)) this.endedByOther(job, newest[key] ?? null, key, part.gpu_ms);
      else this.otherSurfaceEnded(id, key, part.gpu_ms);
    }
    newest.fill(null, 0, n); // holds no unit past the call
  }

  /** Scratch of otherSurfaceEndedParts: the newest unit per partition index. */
  private readonly newestUnit: (TlUnit | null)[] = [];

  /** What /status' end of partition `key` (its newest unit `u`, null if none) means for the job. */
  private endedByOther(job: TlJob, newestOfKey: TlUnit | null, key: number, gpuMs: number): void {
    let u = newestOfKey;
    if (u && (u.end !== END_NONE || (u.state !== PART_GPU && u.state !== PART_FINALIZING))) u = null;
    if (u && u.otherEndMs < 0) u.otherEndMs = gpuMs;
    if (u || this.splitMode !== 'off') return;
    // Without split proving the stage ended at the worker's next pickup, unseen: /status
    // has its GPU time (a synchronous gpu_prove's result, done either way: counted done).
    const x = newestOfKey;
    if (x && x.end === END_UNSEEN && x.otherEndMs < 0) {
      x.otherEndMs = gpuMs;
      x.gpuMs = gpuMs;
      this.units.addGpu(job, gpuMs * 1e6, key < 0 ? 0 : key, true);
    }
  }

  // ---- time ----

  private observeMax(a: Float64Array, kind: number, ns: number): void {
    if (kind >= 0 && ns > a[kind]) a[kind] = ns;
    if (ns > a[KIND_SLOTS]) a[KIND_SLOTS] = ns;
  }

  private longest(a: Float64Array, kind: number): number {
    return kind >= 0 && a[kind] > 0 ? a[kind] : a[KIND_SLOTS];
  }

  /** How long a unit's stint is exposed without its end: 1.5x the longest GPU stage seen for its kind. */
  private capSpanNs(kind: number): number {
    const m = this.longest(this.maxGpuNs, kind);
    return m > 0 ? 1.5 * m : this.gpuTimeoutNs(kind);
  }

  private gpuTimeoutNs(kind: number): number {
    if (this.fixedGpuTimeoutNs > 0) return this.fixedGpuTimeoutNs;
    return Math.max(MIN_GPU_TIMEOUT_MS * 1e6, 3 * this.longest(this.maxGpuNs, kind));
  }

  private synthTimeoutNs(kind: number): number {
    return Math.max(MIN_SYNTH_TIMEOUT_MS * 1e6, 3 * this.longest(this.maxSynthNs, kind));
  }

  /**
   * Ends what timed out, on the daemon's clock as the log has been read (it advances with
   * real time while the log is quiet): skips, GPU stages with no end, syntheses with no
   * end, quiet jobs, kinds that never became known.
   */
  sweep(): void {
    this.releaseIfQuiet();
    if (this.clock.runs === 0) return;
    this.lastSweepMs = this.clock.maxOffset;
    const now = this.clock.peekNs();
    const ws = this.workers;
    const counting = true;
    for (let w = 0; w < ws.own.length; w++) {
      const o = ws.own[w];
      if (!o || !ws.tentative[w] || now - o.pickT <= this.confirmNs) continue;
      if (this.splitMode === 'unknown') this.setSplitMode('off', o);
      else this.skip(w, o, counting);
    }
    const grace = 2 * this.clock.lagNs();
    for (const job of this.units.jobs.values()) {
      if (job.live === 0) continue;
      for (const u of job.units) {
        if (u.end !== END_NONE) continue;
        if (u.state === PART_GPU || u.state === PART_FINALIZING) {
          if (u.otherEndMs >= 0 && (this.splitMode === 'off' || now > u.pickT + u.otherEndMs * 1e6 + grace)) {
            const end = u.pickT + u.otherEndMs * 1e6;
            if (this.splitMode === 'off') {
              // No GPU_END is ever written in this mode: /status' word is the end, done.
              u.gpuMs = u.otherEndMs;
              this.units.finish(u, END_DONE, end);
              this.units.addGpu(job, u.otherEndMs * 1e6, u.key < 0 ? 0 : u.key, true);
            } else {
              // /status saw its GPU stage end; no GPU_END came: a GPU failure.
              job.failed = true;
              this.units.finish(u, END_FAILED, end);
              this.units.addGpu(job, u.otherEndMs * 1e6, u.key < 0 ? 0 : u.key, false);
            }
            ws.ended(u.worker, u, end, counting);
          } else if (
            u.started &&
            this.splitMode === 'on' &&
            u.worker >= 0 &&
            u.worker < ws.own.length &&
            ws.own[u.worker] !== u &&
            ws.busy[u.worker] === 0 &&
            now - ws.change[u.worker] > Math.max(MIN_LOST_END_GRACE_MS * 1e6, this.capSpanNs(job.kind))
          ) {
            // Its worker picked up later partitions and has ended them all, yet this one,
            // started before them, has no GPU_END: its end line was never written
            // (gpu_prove_finish failed, engine.rs finalizer) — finalizers of one worker end
            // out of order by far less than this. Given up now rather than after the GPU
            // timeout, so no partition sits "on the GPU" beside an idle box.
            this.bad('timeline_gpu_end_missing', `no GPU_END for job ${quoteName(job.id)}${u.key >= 0 ? ` partition ${u.key}` : ''} though its worker has finished the partitions it picked up after it: given up (cuzk writes no GPU_END when GPU proving fails)`);
            this.units.finish(u, END_LOST, now);
            ws.ended(u.worker, u, u.pickT + this.capSpanNs(job.kind), counting);
          } else if (
            now - u.pickT > this.gpuTimeoutNs(job.kind) &&
            // A pickup still tentative in split mode is settled by the skip rule instead. One
            // picked up while split proving read as off and never started (the mode turned on
            // after) is no longer tentative: it is timed out as any unit with no end.
            (u.started || this.splitMode !== 'on' || ws.own[u.worker] !== u || !ws.tentative[u.worker])
          ) {
            this.bad('timeline_gpu_end_missing', `no GPU_END for job ${quoteName(job.id)}${u.key >= 0 ? ` partition ${u.key}` : ''} within ${Math.round(this.gpuTimeoutNs(job.kind) / 1e9)} s of its pickup: given up (cuzk writes no GPU_END when GPU proving fails)`);
            job.failed = true;
            this.units.finish(u, END_LOST, now);
            ws.ended(u.worker, u, u.pickT + this.capSpanNs(job.kind), counting);
          }
        } else if (u.state === PART_SYNTHESIZING && !Number.isNaN(u.synthT) && now - u.synthT > this.synthTimeoutNs(job.kind)) {
          // No SYNTH_END: the synthesis failed (upstream writes no line for it).
          this.units.finish(u, END_ABANDONED, now);
        } else if (u.state === PART_SYNTH_DONE && !Number.isNaN(u.readyT) && now - u.readyT > this.synthTimeoutNs(job.kind)) {
          // Queued for the GPU and never picked up: dropped upstream (engine.rs
          // PriorityWorkQueue::push replaces an entry of the same key: a second monolithic
          // job queued before the first was picked up is lost without a line).
          this.units.finish(u, END_ABANDONED, now);
        }
      }
    }
    // Quiet jobs, kinds never resolved, floods.
    const nowMs = this.clock.offsetOf(now);
    const owned = new Set<TlJob>();
    for (const o of ws.own) if (o) owned.add(o.job);
    for (const job of [...this.units.jobs.values()]) {
      if (job.kind < 0) {
        this.tryResolve(job);
        if (job.kind < 0 && job.live === 0 && now - job.endedT >= this.unresolvedNs) this.unresolvedToOther(job);
      }
      const quiet = nowMs - job.lastMs;
      if ((job.live === 0 && quiet >= ENDED_QUIET_MS) || (quiet >= STALE_QUIET_MS && !owned.has(job))) this.evict(job);
    }
    if (this.units.jobs.size > MAX_JOBS || this.units.unitsTracked > MAX_UNITS) {
      const byAge = [...this.units.jobs.values()].filter((j) => !owned.has(j)).sort((a, b) => a.lastMs - b.lastMs);
      for (const job of byAge) {
        if (this.units.jobs.size <= MAX_JOBS * 0.9 && this.units.unitsTracked <= MAX_UNITS * 0.9) break;
        this.evict(job);
      }
    }
  }

  private unresolvedToOther(job: TlJob): void {
    if (job.pend) {
      this.errors.inc('timeline_unresolved_kind', `proof kind of job ${quoteName(job.id)} never became known; its time is counted under proof_kind="other"`);
      this.log.log('warn', 'a partitioned job ended without its proof kind becoming known; counted under proof_kind="other" (attach --cuzk.status-url or --cuzk.grpc-address to resolve kinds)');
    }
    this.setKind(job, OTHER_KIND_INDEX, 'unresolved');
  }

  private evict(job: TlJob): void {
    if (job.kind < 0) {
      this.tryResolve(job);
      if (job.kind < 0) this.unresolvedToOther(job);
    }
    for (let w = 0; w < this.workers.own.length; w++) if (this.workers.own[w]?.job === job) return;
    this.units.evict(job);
  }

  /** The daemon restarted: its stints end (credited up to what was exposed), its jobs go. */
  private restart(counting: boolean, off: number): void {
    const endNs = Math.max(this.clock.lastLineNs, this.clock.lastExposed);
    this.workers.restart(endNs, counting);
    for (const job of [...this.units.jobs.values()]) {
      if (job.kind < 0) this.tryResolve(job);
      if (job.kind < 0) this.unresolvedToOther(job);
      this.units.evict(job);
    }
    if (counting) {
      this.errors.inc('timeline_restart', `TIMELINE offsets went back (${this.clock.maxOffset} ms -> ${off} ms): cuzk restarted`);
      this.log.log('warn', `cuzk restarted (TIMELINE offsets went back from ${this.clock.maxOffset} ms to ${off} ms); keeping totals`, true);
    }
    this.clock.endRun();
    this.splitMode = 'unknown';
    this.batchedSeen = false;
    this.lastSweepMs = 0;
  }

  // ---- what the merge reads ----

  nowNs(): number {
    this.releaseIfQuiet();
    const now = this.clock.nowNs();
    this.workers.expose(now);
    return now;
  }

  toHr(tNs: number): number {
    return this.clock.toHr(tNs);
  }

  readUntilHr(): number {
    return this.clock.readUntilHr();
  }

  /** What this surface says about worker `id` (null: not seen in this daemon run, or unconfirmed). */
  claim(id: number): WorkerClaim | null {
    const ws = this.workers;
    if (id >= ws.seen.length || !ws.known[id] || this.clock.runs === 0) return null;
    if (ws.tentative[id]) return null; // a pickup that may be a skip vouches for nothing yet
    // Without split proving no line says when a stage ends: busy here is an upper bound.
    if (this.splitMode === 'off') return null;
    const own = ws.own[id];
    // A stage /status already reported ended (done with gpu_ms) and no GPU_END read yet: a
    // gpu_prove_finish failure the sweep settles after 2x the read lag, or an end line still
    // unread. Busy here until then is not certain (cuzk's /status already cleared the worker).
    if (own && own.otherEndMs >= 0) return null;
    return {
      busy: ws.busy[id] === 1,
      sinceHr: this.clock.toHr(ws.change[id]),
      untilHr: this.clock.readUntilHr(),
      sample: false,
      kind: own ? own.job.kind : -1,
      job: own ? own.job.id : null,
      // -1: a monolithic job (PoSt, a batch), which cuzk's /status never shows.
      partition: own ? (own.key === MONO || own.job.mono ? -1 : own.key) : -1,
    };
  }

  workerIds(): number[] {
    return this.workers.ids();
  }

  /** Changes whenever workerIds() would (cheap: no array). */
  get workersVersion(): number {
    return this.workers.seenVersion;
  }

  jobById(id: string): TlJob | undefined {
    return this.units.jobs.get(id);
  }

  get jobs(): Map<string, TlJob> {
    return this.units.jobs;
  }

  get lastOffsetMs(): number {
    return this.clock.maxOffset;
  }

  /**
   * Whether another surface's "proving job/partition" is upstream's stale state: the newest
   * unit of that partition was skipped, given up, or failed (no end line), or its job failed.
   */
  /**
   * Live units on the GPU or finalizing not vouched for as on the GPU: a pickup still
   * tentative, or one whose worker has picked up another unit since: their
   * GPU stage is over (a worker loops for its next pickup only after gpu_prove_start returned,
   * upstream engine.rs gpu-worker loop), left to the finalizer (whose order between two
   * partitions of one worker is not fixed: spawn_blocking tasks) or to an end line never
   * written (gpu_prove_finish failed). StateModel.supersededOnGpu.
   */
  supersededOnGpu(): number {
    const own = this.workers.own;
    let n = 0;
    for (const job of this.units.jobs.values()) {
      if (job.live === 0) continue;
      for (const u of job.units) {
        if (u.end !== END_NONE || (u.state !== PART_GPU && u.state !== PART_FINALIZING)) continue;
        if (u.worker < 0 || u.worker >= own.length) continue;
        // Picked up since by its worker's later pickup, or a pickup still tentative (no
        // GPU_START yet: it may be a skip, which upstream writes no end for).
        if (own[u.worker] !== u || this.workers.tentative[u.worker]) n++;
      }
    }
    return n;
  }

  staleClaim(jobId: string | null, partition: number): boolean {
    if (jobId === null) return false;
    const job = this.units.jobs.get(jobId);
    if (!job) return false;
    if (job.failed) return true;
    const key = partition < 0 || job.mono ? MONO : partition;
    for (let i = job.units.length - 1; i >= 0; i--) {
      const u = job.units[i];
      if (u.key === key || (job.mono && u.key === MONO)) return TimelineSurface.staleEnd(u);
    }
    return false;
  }

  /** Whether the unit is over in a way that makes other surfaces' stale claims about it no contradiction. */
  static staleEnd(u: TlUnit): boolean {
    return u.end === END_SKIPPED || u.end === END_LOST || u.end === END_FAILED || u.end === END_ABANDONED;
  }
}
