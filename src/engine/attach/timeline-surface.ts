/**
 * The TIMELINE surface (DESIGN §7c): cuzk's `TIMELINE,<offset_ms>,<event>,<job_id>,<detail>`
 * lines, followed in its log file or on standard input. The only surface with exact
 * per-worker GPU intervals for every proof kind, PoSt included.
 *
 * Semantics (cuzk's own after its race fix; contracts "TIMELINE line format"):
 *  - a worker is busy from a GPU_PICKUP until the GPU_END of the partition it picked up
 *    last: a pickup while busy moves ownership and the stint goes on; the GPU_END of an
 *    older partition (its finalizer) does not end the stint; busy seconds are exact to the
 *    millisecond (both ends are offsets of the daemon's own clock);
 *  - a partition is `gpu` from its pickup, `finalizing` once its worker has picked up a
 *    newer one while its GPU_END has not come, ended at its GPU_END (gpu_ms = the whole GPU
 *    stage, as cuzk measures it);
 *  - partitioned jobs carry no kind: it is resolved from partition indexes (>= 10 can only
 *    be SnapDeals), or from the other surfaces (the resolver: /status pipelines, gRPC
 *    current_proof_kind). Until then the job's time waits, unexposed, and its live
 *    partitions show under proof_kind="other"; a job that ends and goes quiet without ever
 *    being resolved is counted under "other" (and in errors{reason="timeline_unresolved_kind"}),
 *    never under a guessed kind;
 *  - the offsets going back by more than a second is a daemon restart: the old process'
 *    stints end, its jobs are dropped, totals stay;
 *  - lines read by the start-up catch-up (history) rebuild state only: what ended before we
 *    attached is not counted.
 * The clock: each daemon run maps its offsets onto the exporter's clock at a fixed base, so
 * every interval is an exact difference of two offsets. The running stint of a busy worker
 * is exposed up to the last moment the log is known to have been read in full, less a lag
 * (>= 1 s, twice the recent worst lateness of lines), so a GPU_END still on its way does not
 * land before what was exposed: the busy-seconds counter never goes down and stays exact.
 */
import {
  KIND_SLOTS,
  LIVE_PARTITION_STATES,
  OTHER_KIND_INDEX,
  PART_DONE,
  PART_FINALIZING,
  PART_GPU,
  PART_SYNTHESIZING,
  PART_SYNTH_DONE,
  kindIndex,
  liveSlot,
} from '../kinds';
import type { ErrorCounts } from '../error-counts';
import { BOUNDS } from '../plausibility';
import type { Logger } from '../../util/logger';
import { FollowerSink, LogFollower } from './timeline-follower';
import {
  TIMELINE_MARK,
  TL_GPU_END,
  TL_GPU_PICKUP,
  TL_GPU_QUEUE,
  TL_GPU_START,
  TL_SYNTH_END,
  TL_LIMITS,
  TL_SYNTH_START,
  TimelineRecord,
  newRecord,
  parseTimeline,
} from './timeline-parser';
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
  /** Standard input stand-in (tests). */
  stdin?: import('node:stream').Readable;
}

/** Offsets going back by more than this is a new daemon process (eprintln order may jitter by a few ms). */
export const RESTART_BACK_MS = 1000;
/** A job whose partitions have all ended and that saw no line for this long is forgotten. */
const ENDED_QUIET_MS = 60_000;
/** A job with partitions still live that saw no line for this long is given up (a failed job: cuzk writes no GPU_END). */
const STALE_QUIET_MS = 600_000;
const MAX_JOBS = 10_000;
const MAX_PARTS = 200_000;
const MAX_PENDING_OBS = 4096;
/** Partition index from which a job can only be SnapDeals (PoRep C2 has 10 partitions). */
export const SNAP_MIN_PARTITION = 10;
const SNAP_UPDATE = kindIndex('snap-update');
/** Per line: the recent-worst lateness halves in ~7000 lines. */
const LAT_DECAY = 0.9999;
/** The running-stint clock stays at least this far behind what was read (ns). */
const MIN_LAG_NS = 1e9;

export interface TlPart {
  state: number; // PART_*
  worker: number;
  synthCounted: boolean;
  /** As the lines said; -1 until known. */
  synthMs: number;
  gpuMs: number;
}

export interface TlJob {
  id: string;
  handle: number;
  /** Kind slot; -1 while unresolved. */
  kind: number;
  /** Saw partition= lines (cuzk's partitioned path). */
  partitioned: boolean;
  parts: Map<number, TlPart>;
  /** Partitions in a live state. */
  live: number;
  /** Offset (ms) of its last line. */
  lastMs: number;
  /** Kind slot its live partitions are counted under (its kind, or other while unresolved). */
  liveSlot: number;
  /** Contributions waiting for the kind. */
  pend: { gpuNs: number; synthNs: number; parts: number; obs: number[] } | null;
  firstMs: number;
}

export class TimelineSurface implements Surface, FollowerSink {
  readonly name = 'timeline' as const;
  readonly target: string;
  private readonly follower: LogFollower;
  private readonly log: ThrottledLog;
  private readonly rec: TimelineRecord = newRecord();
  private readonly errors: ErrorCounts;
  private readonly maxLineBytes: number;

  /** Resolves a job id to a kind slot from the other surfaces (-1: unknown). Set by the merge. */
  resolver: ((jobId: string) => number) | null = null;
  /** Histogram observations (partition ends), forwarded by the merge. */
  observer: { partitionGpu(kind: number, s: number, job?: number, partition?: number): void; partitionSynthesis(kind: number, s: number, job?: number, partition?: number): void } | null = null;

  // Clock (ns). A run's offsets map to runBase + offset*1e6.
  private runBase = 0;
  private epochHr = Infinity;
  private maxOffset = -1;
  private lastLineNs = 0;
  private lastEofHr = 0;
  private lastExposed = 0;
  private runs = 0;
  /** Recent worst lateness of lines (ns), decaying. */
  private latMax = 0;

  // Workers, indexed by cuzk's worker id.
  wSeen = new Uint8Array(0);
  wBusy = new Uint8Array(0);
  wSince = new Float64Array(0);
  wPick = new Float64Array(0);
  wBusyNs = new Float64Array(0);
  wParts = new Float64Array(0);
  wChange = new Float64Array(0);
  /** The worker's state is known: a pickup of it was seen in this daemon run. */
  wKnown = new Uint8Array(0);
  wOwnPart = new Int32Array(0);
  wOwnJob: (TlJob | null)[] = [];
  busyWorkers = 0;

  // Per kind slot.
  readonly kGpuNs = new Float64Array(KIND_SLOTS);
  readonly kSynthNs = new Float64Array(KIND_SLOTS);
  readonly kParts = new Float64Array(KIND_SLOTS);
  readonly kLive = new Int32Array(KIND_SLOTS * LIVE_PARTITION_STATES);

  readonly jobs = new Map<string, TlJob>();
  private readonly unresolved = new Set<TlJob>();
  private partsTracked = 0;
  private nextHandle = 1;
  private lastSweepMs = 0;
  /** TIMELINE lines applied. */
  eventsTotal = 0;
  private upNow = false;
  private lastReason: string | null = null;

  constructor(private readonly opts: TimelineOptions) {
    this.target = opts.path === '-' ? 'standard input' : opts.path;
    this.errors = opts.errors;
    for (const r of TIMELINE_ERRORS) this.errors.declare(r);
    this.errors.declare('implausible');
    this.errors.declare('unknown_proof_kind');
    this.maxLineBytes = opts.maxLineBytes ?? 64 * 1024;
    this.log = new ThrottledLog(opts.logger, { surface: 'timeline', source: this.target });
    this.follower = new LogFollower(
      { path: opts.path, pollMs: opts.pollMs ?? 100, maxLineBytes: this.maxLineBytes, catchUpBytes: opts.catchUpBytes ?? 8 * 1024 * 1024, stdin: opts.stdin },
      this,
    );
  }

  get up(): boolean {
    return this.upNow;
  }

  start(): void {
    this.follower.start();
  }

  async stop(): Promise<void> {
    await this.follower.stop();
  }

  /** Bytes of a partial line the reader holds now (bounded by maxLineBytes). */
  get pendingBytes(): number {
    return this.follower.pendingBytes;
  }

  /** One look at the file now (tests: no waiting for the poll timer). */
  poll(): Promise<void> {
    return this.follower.tick();
  }

  // ---- FollowerSink ----

  state(up: boolean, reason: string | null, message: string): void {
    const was = this.upNow;
    this.upNow = up;
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
    if (hr > this.lastEofHr) this.lastEofHr = hr;
  }

  /** Applies whole lines of log text (also used directly by tests and the benchmark). */
  lines(text: string, history: boolean, readHr: number): void {
    const rec = this.rec;
    const n = text.length;
    const max = this.maxLineBytes;
    let m = text.indexOf(TIMELINE_MARK);
    while (m >= 0) {
      let e = text.indexOf('\n', m);
      if (e < 0) e = n;
      const s = text.lastIndexOf('\n', m) + 1;
      if (e - s > max) this.bad('timeline_line_too_long', `a TIMELINE line longer than ${max} bytes was dropped`);
      else {
        const err = parseTimeline(text, m, e, rec);
        if (err === null) this.apply(rec, !history, readHr);
        else if (err === 'malformed') this.bad('timeline_malformed', `a TIMELINE line does not parse: ${quoteName(text.slice(m, Math.min(e, m + 120)))}`);
        else if (err === 'unknown_event') this.bad('timeline_unknown_event', `a TIMELINE line has an unknown event: ${quoteName(text.slice(m, Math.min(e, m + 120)))}`);
        else this.bad('timeline_worker_out_of_range', `a TIMELINE line names a worker id above ${TL_LIMITS.maxWorkerId}: ${quoteName(text.slice(m, Math.min(e, m + 120)))}`);
      }
      m = e < n ? text.indexOf(TIMELINE_MARK, e + 1) : -1;
    }
  }

  private bad(reason: string, message: string): void {
    this.errors.inc(reason, message);
    this.log.log('warn', message);
  }

  // ---- state ----

  private growWorkers(id: number): void {
    const n = Math.max(id + 1, this.wSeen.length * 2, 8);
    const g = <T extends Uint8Array | Float64Array | Int32Array>(a: T, fill = 0): T => {
      const b = new (a.constructor as { new (n: number): T })(n);
      if (fill !== 0) b.fill(fill as never);
      b.set(a as never);
      return b;
    };
    this.wSeen = g(this.wSeen);
    this.wBusy = g(this.wBusy);
    this.wSince = g(this.wSince);
    this.wPick = g(this.wPick);
    this.wBusyNs = g(this.wBusyNs);
    this.wParts = g(this.wParts);
    this.wChange = g(this.wChange);
    this.wKnown = g(this.wKnown);
    this.wOwnPart = g(this.wOwnPart, -1);
    for (let i = this.wOwnJob.length; i < n; i++) this.wOwnJob.push(null);
  }

  private worker(id: number): void {
    if (id >= this.wSeen.length) this.growWorkers(id);
    this.wSeen[id] = 1;
  }

  private apply(r: TimelineRecord, counting: boolean, readHr: number): void {
    const off = r.offsetMs;
    if (this.maxOffset >= 0 && off + RESTART_BACK_MS < this.maxOffset) this.restart(counting, off);
    if (this.maxOffset < 0) this.newRun(readHr, off);
    if (off > this.maxOffset) this.maxOffset = off;
    const est = readHr - off * 1e6;
    if (est < this.epochHr) this.epochHr = est;
    // How late lines reach us (written after their offset, read after being written): the
    // running-stint clock keeps at least twice the recent worst behind what was read.
    // (Live lines only: history is read long after it was written.)
    if (counting) {
      const lat = est - this.epochHr;
      this.latMax = lat > this.latMax * LAT_DECAY ? lat : this.latMax * LAT_DECAY;
    }
    const t = this.runBase + off * 1e6;
    if (t > this.lastLineNs) this.lastLineNs = t;
    this.eventsTotal++;
    // Plausibility (plausibility.ts): nothing took longer than the engine has been running
    // (the offset is ms since engine start). Such a duration is counted, never added.
    if ((r.event === TL_SYNTH_END || r.event === TL_GPU_END) && r.ms > off + BOUNDS.durationSlackMs) {
      if (counting) {
        const what = `TIMELINE: ${r.event === TL_GPU_END ? 'gpu_ms' : 'synth_ms'} ${r.ms} is longer than the engine has been up (${off} ms)`;
        this.errors.inc('implausible', what);
        this.log.log('warn', `${what}; not counted`);
      }
      counting = false;
    }

    const job = this.job(r.jobId, off);
    switch (r.event) {
      case TL_SYNTH_START: {
        if (r.partition < 0 && r.kind !== null && job.kind < 0) {
          const k = kindIndex(r.kind);
          if (k < 0) this.unknownKind(r.kind);
          this.setKind(job, k < 0 ? OTHER_KIND_INDEX : k);
        }
        const part = this.part(job, r.partition);
        if (part.state < PART_SYNTHESIZING) this.setState(job, part, PART_SYNTHESIZING);
        break;
      }
      case TL_SYNTH_END: {
        const part = this.part(job, r.partition);
        if (part.state < PART_SYNTH_DONE) this.setState(job, part, PART_SYNTH_DONE);
        if (part.synthMs < 0) part.synthMs = r.ms;
        if (counting && !part.synthCounted && part.state !== PART_DONE) {
          part.synthCounted = true;
          this.addSynth(job, r.ms * 1e6, r.partition < 0 ? 0 : r.partition);
        }
        part.synthCounted = true;
        break;
      }
      case TL_GPU_QUEUE: {
        const part = this.part(job, r.partition);
        if (part.state < PART_SYNTH_DONE) this.setState(job, part, PART_SYNTH_DONE);
        break;
      }
      case TL_GPU_PICKUP:
        this.pickup(r.worker, job, r.partition, t);
        break;
      case TL_GPU_START: {
        // The worker took the GPU lock. If its pickup was missed (before the catch-up's
        // window, or never written), this is the earliest sign it owns the partition.
        const key = r.partition < 0 ? 0 : r.partition;
        if (r.worker >= this.wSeen.length || this.wOwnJob[r.worker] !== job || this.wOwnPart[r.worker] !== key) {
          const part = job.parts.get(key);
          if (!part || (part.state !== PART_DONE && part.worker !== r.worker)) this.pickup(r.worker, job, r.partition, t);
        }
        break;
      }
      case TL_GPU_END:
        this.end(r.worker, job, r.partition, t, r.ms, counting);
        break;
      default:
        break;
    }
    if (job.kind < 0) this.tryResolve(job);
    if (off - this.lastSweepMs >= 1000 || this.jobs.size > MAX_JOBS || this.partsTracked > MAX_PARTS) this.sweep();
  }

  private newRun(readHr: number, off: number): void {
    const floor = Math.max(this.lastLineNs, this.lastExposed) + 1e6;
    this.runBase = Math.max(readHr, this.runs === 0 ? 0 : floor + off * 1e6) - off * 1e6;
    this.epochHr = readHr - off * 1e6;
    this.maxOffset = off;
    this.lastSweepMs = off;
    this.runs++;
  }

  /** The daemon restarted: its stints end (credited up to what was exposed), its jobs go. */
  private restart(counting: boolean, off: number): void {
    const endNs = Math.max(this.lastLineNs, this.lastExposed);
    for (let w = 0; w < this.wBusy.length; w++) {
      if (this.wBusy[w]) {
        if (counting) this.wBusyNs[w] += Math.max(0, endNs - this.wSince[w]);
        this.wBusy[w] = 0;
        this.busyWorkers--;
      }
      this.wOwnJob[w] = null;
      this.wOwnPart[w] = -1;
      this.wSeen[w] = 0; // workers come back as the new process uses them
      this.wKnown[w] = 0;
    }
    for (const job of [...this.jobs.values()]) this.evict(job);
    if (counting) {
      this.errors.inc('timeline_restart', `TIMELINE offsets went back (${this.maxOffset} ms -> ${off} ms): cuzk restarted`);
      this.log.log('warn', `cuzk restarted (TIMELINE offsets went back from ${this.maxOffset} ms to ${off} ms); keeping totals`, true);
    }
    this.maxOffset = -1;
  }

  private job(id: string, off: number): TlJob {
    let job = this.jobs.get(id);
    if (!job) {
      job = { id, handle: this.nextHandle++, kind: -1, partitioned: false, parts: new Map(), live: 0, lastMs: off, liveSlot: OTHER_KIND_INDEX, pend: null, firstMs: off };
      this.jobs.set(id, job);
      this.unresolved.add(job);
    }
    if (off > job.lastMs) job.lastMs = off;
    return job;
  }

  private part(job: TlJob, partition: number): TlPart {
    const key = partition < 0 ? 0 : partition;
    if (partition >= 0 && !job.partitioned) job.partitioned = true;
    let p = job.parts.get(key);
    if (!p) {
      p = { state: -1, worker: -1, synthCounted: false, synthMs: -1, gpuMs: -1 };
      job.parts.set(key, p);
      this.partsTracked++;
      if (job.kind < 0 && partition >= SNAP_MIN_PARTITION) this.setKind(job, SNAP_UPDATE);
    }
    return p;
  }

  /** Moves a partition between states, keeping the live counts per kind. */
  private setState(job: TlJob, part: TlPart, next: number): void {
    const from = part.state >= 0 ? liveSlot(part.state) : -1;
    const to = liveSlot(next);
    const base = job.liveSlot * LIVE_PARTITION_STATES;
    if (from >= 0) {
      this.kLive[base + from]--;
      job.live--;
    }
    if (to >= 0) {
      this.kLive[base + to]++;
      job.live++;
    }
    part.state = next;
  }

  private pickup(w: number, job: TlJob, partition: number, t: number): void {
    this.worker(w);
    const key = partition < 0 ? 0 : partition;
    const part = this.part(job, partition);
    if (part.state === PART_DONE) return; // a late duplicate
    const prevJob = this.wOwnJob[w];
    const prevKey = this.wOwnPart[w];
    if (prevJob && (prevJob !== job || prevKey !== key)) {
      const prev = prevJob.parts.get(prevKey);
      if (prev && prev.state === PART_GPU) this.setState(prevJob, prev, PART_FINALIZING);
    }
    if (part.state !== PART_GPU) this.setState(job, part, PART_GPU);
    part.worker = w;
    this.wKnown[w] = 1;
    this.wOwnJob[w] = job;
    this.wOwnPart[w] = key;
    this.wPick[w] = t;
    if (!this.wBusy[w]) {
      this.wBusy[w] = 1;
      this.busyWorkers++;
      this.wSince[w] = t;
      this.wChange[w] = t;
    }
  }

  private end(w: number, job: TlJob, partition: number, t: number, gpuMs: number, counting: boolean): void {
    this.worker(w);
    const key = partition < 0 ? 0 : partition;
    const part = this.part(job, partition);
    if (part.state === PART_DONE) return; // counted already
    this.setState(job, part, PART_DONE);
    part.gpuMs = gpuMs;
    if (counting) {
      this.addGpu(job, gpuMs * 1e6, key);
      this.wParts[w]++;
    }
    if (this.wOwnJob[w] === job && this.wOwnPart[w] === key) {
      if (this.wBusy[w]) {
        // Exact: both ends are offsets of one run. Never less than was already exposed (a
        // line's offset is taken a moment before it is written, and lines of different
        // threads may come a few ms out of order).
        if (counting) this.wBusyNs[w] += Math.max(0, Math.max(t, this.lastExposed) - this.wSince[w]);
        this.wBusy[w] = 0;
        this.busyWorkers--;
        this.wChange[w] = t;
      }
      this.wOwnJob[w] = null;
      this.wOwnPart[w] = -1;
    }
  }

  private addGpu(job: TlJob, ns: number, partition: number): void {
    if (job.kind >= 0) {
      this.kGpuNs[job.kind] += ns;
      this.kParts[job.kind]++;
      this.observer?.partitionGpu(job.kind, ns / 1e9, job.handle, partition);
      return;
    }
    const p = (job.pend ??= { gpuNs: 0, synthNs: 0, parts: 0, obs: [] });
    p.gpuNs += ns;
    p.parts++;
    if (p.obs.length < MAX_PENDING_OBS) p.obs.push(0, ns, partition);
  }

  private addSynth(job: TlJob, ns: number, partition: number): void {
    if (job.kind >= 0) {
      this.kSynthNs[job.kind] += ns;
      this.observer?.partitionSynthesis(job.kind, ns / 1e9, job.handle, partition);
      return;
    }
    const p = (job.pend ??= { gpuNs: 0, synthNs: 0, parts: 0, obs: [] });
    p.synthNs += ns;
    if (p.obs.length < MAX_PENDING_OBS) p.obs.push(1, ns, partition);
  }

  private unknownKind(name: string): void {
    this.errors.inc('unknown_proof_kind', `unknown proof kind folded into "other": ${quoteName(name)}`);
    this.log.log('warn', `folded an unknown proof kind into proof_kind="other": ${quoteName(name)}`);
  }

  /** The job's kind is known: its live partitions move to it, its waiting time is counted. */
  private setKind(job: TlJob, k: number): void {
    if (job.kind >= 0) return;
    job.kind = k;
    this.unresolved.delete(job);
    if (job.liveSlot !== k) {
      const from = job.liveSlot * LIVE_PARTITION_STATES;
      const to = k * LIVE_PARTITION_STATES;
      for (const part of job.parts.values()) {
        const s = part.state >= 0 ? liveSlot(part.state) : -1;
        if (s < 0) continue;
        this.kLive[from + s]--;
        this.kLive[to + s]++;
      }
      job.liveSlot = k;
    }
    const p = job.pend;
    if (p) {
      job.pend = null;
      this.kGpuNs[k] += p.gpuNs;
      this.kSynthNs[k] += p.synthNs;
      this.kParts[k] += p.parts;
      for (let i = 0; i < p.obs.length; i += 3) {
        if (p.obs[i] === 0) this.observer?.partitionGpu(k, p.obs[i + 1] / 1e9, job.handle, p.obs[i + 2]);
        else this.observer?.partitionSynthesis(k, p.obs[i + 1] / 1e9, job.handle, p.obs[i + 2]);
      }
    }
  }

  private tryResolve(job: TlJob): void {
    const k = this.resolver?.(job.id) ?? -1;
    if (k >= 0) this.setKind(job, k);
  }

  /** Resolves what the other surfaces now know (called by the merge before it composes). */
  resolvePending(): void {
    if (this.unresolved.size === 0 || !this.resolver) return;
    for (const job of [...this.unresolved]) this.tryResolve(job);
  }

  /** Forgets quiet jobs: ended ones after a minute, stale ones (no GPU_END ever) after ten. */
  private sweep(): void {
    this.lastSweepMs = this.maxOffset;
    const now = this.maxOffset;
    const owned = new Set<TlJob>();
    for (let w = 0; w < this.wOwnJob.length; w++) if (this.wOwnJob[w]) owned.add(this.wOwnJob[w]!);
    for (const job of this.jobs.values()) {
      const quiet = now - job.lastMs;
      if ((job.live === 0 && quiet >= ENDED_QUIET_MS) || (quiet >= STALE_QUIET_MS && !owned.has(job))) this.evict(job);
    }
    // Hostile input (floods of job ids or partitions): the quietest go first.
    if (this.jobs.size > MAX_JOBS || this.partsTracked > MAX_PARTS) {
      const byAge = [...this.jobs.values()].filter((j) => !owned.has(j)).sort((a, b) => a.lastMs - b.lastMs);
      for (const job of byAge) {
        if (this.jobs.size <= MAX_JOBS * 0.9 && this.partsTracked <= MAX_PARTS * 0.9) break;
        this.evict(job);
      }
    }
  }

  private evict(job: TlJob): void {
    if (job.kind < 0) {
      this.tryResolve(job);
      if (job.kind < 0) {
        if (job.pend) {
          this.errors.inc('timeline_unresolved_kind', `proof kind of job ${quoteName(job.id)} never became known; its time is counted under proof_kind="other"`);
          this.log.log('warn', 'a partitioned job ended without its proof kind becoming known; counted under proof_kind="other" (attach --cuzk.status-url or --cuzk.grpc-address to resolve kinds)');
        }
        this.setKind(job, OTHER_KIND_INDEX);
      }
    }
    for (const part of job.parts.values()) if (part.state >= 0 && liveSlot(part.state) >= 0) this.setState(job, part, PART_DONE);
    this.partsTracked -= job.parts.size;
    this.jobs.delete(job.id);
    this.unresolved.delete(job);
  }

  // ---- what the merge reads ----

  /**
   * The clock the timeline's times are on, now: never past what has been read in full
   * (file: the last read that found the end; standard input: a second ago), never back.
   */
  nowNs(): number {
    if (this.runs === 0) return this.lastExposed;
    const est = this.runBase + (this.readUntilHr() - this.epochHr);
    const now = Math.max(this.lastExposed, this.lastLineNs, est);
    this.lastExposed = now;
    return now;
  }

  /**
   * A line's offset is taken before it is written, and a writer (a busy daemon, a journal)
   * may hand it on late: a running stint is exposed only up to a point that far behind
   * what was read, so a GPU_END still on its way cannot land before what was exposed.
   */
  private lagNs(): number {
    return Math.max(MIN_LAG_NS, 2 * this.latMax);
  }

  /** The exporter's hrtime (ns) of a time on this surface's clock. */
  toHr(tNs: number): number {
    return tNs - this.runBase + this.epochHr;
  }

  /** Until when (hrtime) the log is known to be read in full. */
  readUntilHr(): number {
    return (this.follower.isStdin ? hrNowNs() : this.lastEofHr) - this.lagNs();
  }

  /** What this surface says about worker `id` (null: never seen in this daemon run). */
  claim(id: number): WorkerClaim | null {
    if (id >= this.wSeen.length || !this.wKnown[id] || this.runs === 0) return null;
    const own = this.wOwnJob[id];
    return { busy: this.wBusy[id] === 1, sinceHr: this.toHr(this.wChange[id]), untilHr: this.readUntilHr(), sample: false, kind: own ? own.kind : -1 };
  }

  /** Worker ids seen in the current daemon run, ascending. */
  workerIds(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.wSeen.length; i++) if (this.wSeen[i]) out.push(i);
    return out;
  }

  /** Job handle -> id, for the status document. */
  jobById(id: string): TlJob | undefined {
    return this.jobs.get(id);
  }

  /** Offset of the newest line of the current run (ms), -1 before any. */
  get lastOffsetMs(): number {
    return this.maxOffset;
  }
}
