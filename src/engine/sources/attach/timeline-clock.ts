/**
 * The TIMELINE clock: cuzk's offsets (ms since its engine started, engine.rs
 * `timeline_event`: `TIMELINE_EPOCH.elapsed().as_millis()`) mapped onto the exporter's
 * hrtime, one daemon run at a time.
 *
 *  - Each run maps its offsets onto a fixed base (`runBase + offset`), so every interval
 *    is an exact difference of two offsets.
 *  - Offsets going back by more than RESTART_BACK_MS is a new daemon process (eprintln!
 *    order may jitter by a few ms between threads). So is a live line of a file going back
 *    by more than STALE_BACK_MS that lands before what the reads of that file already vouch
 *    for (less the lag): a daemon that lived less than RESTART_BACK_MS longer than its
 *    successor's first line.
 *  - Plausibility (issue 20): a live line may not claim a time further ahead of the
 *    exporter's own clock than `maxLeadMs` (default 30 s): the run's epoch is estimated
 *    from the first live line, a line is written before it is read, so a line is never
 *    *earlier* than its offset says by more than the first line's lateness plus this
 *    tolerance. A log whose offsets run faster than real time, one line with a huge
 *    offset, or a second daemon's lines interleaved (`journalctl -u 'cuzk@*'`) are refused
 *    and counted, so busy seconds can never exceed elapsed time (plus the tolerance) per
 *    worker.
 *  - A restart (offsets back) is believed only when the new process can have started
 *    after the old run's latest line (its estimated start, read time less offset, not
 *    before that line's claimed time; less RESTART_SLACK_NS at most once a minute, as each
 *    such overlap is claimed twice): two processes alive at once are
 *    two daemons in one log, and offsets sent back to 0 again and again would otherwise
 *    start a new run each time and fabricate the stints between (1,450 busy seconds in
 *    2.5 s). Refused lines are `ahead` (counted); a new run consistent for REANCHOR is
 *    believed (the old run's first line was read late).
 *  - Exposure: running stints are exposed up to what the log is known to have been read
 *    to (file: the last read that found the end; stdin: now), less a lag of at least 1 s
 *    (twice the recent worst lateness of lines), so an end line still on its way never
 *    lands before what was exposed: counters never go down.
 */

/** Offsets going back by more than this is a new daemon process. */
export const RESTART_BACK_MS = 1000;
/** Offsets going back by more than this, on a line the reads show was not printed late, is a new daemon process. */
export const STALE_BACK_MS = 100;
/** A held `stale` line with no line after it for this long (the file read to its end) is the old run's (ns). */
export const STALE_HOLD_NS = 2e9;
/** Per line: the recent-worst lateness halves in ~7000 lines. */
const LAT_DECAY = 0.9999;
/** The running-stint clock stays at least this far behind what was read (ns). */
const MIN_LAG_NS = 1e9;
/** How far a live line may claim to be ahead of the exporter's clock (ms). */
export const DEFAULT_MAX_LEAD_MS = 30_000;

/** How much earlier than the old run's latest line a new process may seem to start (ns). */
export const RESTART_SLACK_NS = 5e9;

/** A restart whose claims overlap the old run's (within the slack) at most this often (ns). */
export const RESTART_OVERLAP_GAP_NS = 60e9;

/**
 * `stale`: a restart by the reads alone (offsets back by less than RESTART_BACK_MS); the
 * caller holds the line and decides on the next one (a new run's next line is behind the
 * old run too; a line of the old run printed late is followed by the old run's).
 */
export type ClockVerdict = 'ok' | 'restart' | 'ahead' | 'stale';

/**
 * A run whose every live line has been ahead by about the same amount for this long was
 * anchored on a late first line (a journal backlog, a stalled ssh pipe), not faked: it is
 * re-anchored as a new run (stints end, nothing spans the jump). Offsets running fast
 * (the lead grows) or a second daemon's lines mixed with good ones never qualify.
 */
const REANCHOR = { lines: 20, ns: 30e9, spreadNs: 5e9 } as const;

export class TimelineClock {
  /** A run's offsets map to runBase + offset*1e6 (ns on the exporter's hrtime scale). */
  runBase = 0;
  /** Earliest estimate of the run's epoch on hrtime (readHr - offset). */
  epochHr = Infinity;
  /** The first live line's estimate: the plausibility reference of this run. */
  private refEpochHr = Infinity;
  maxOffset = -1;
  lastLineNs = 0;
  lastEofHr = 0;
  /** The last end of the file now followed found by a read issued at this hrtime (-Infinity: none yet). */
  eofFactHr = -Infinity;
  lastExposed = 0;
  runs = 0;
  private latMax = 0;
  private lastRestartHr = -Infinity;
  private aheadN = 0;
  private aheadSinceHr = 0;
  private aheadMin = 0;
  private aheadMax = 0;

  constructor(
    private readonly isStdin: () => boolean,
    private readonly hrNow: () => number,
    readonly maxLeadMs = DEFAULT_MAX_LEAD_MS,
  ) {}

  /**
   * Where a line with this offset falls: `ahead` (refused), `restart` (offsets went back:
   * the caller ends the old run, then calls again), or `ok`.
   */
  check(off: number, live: boolean, readHr: number): ClockVerdict {
    const checked = live && this.refEpochHr !== Infinity && this.maxLeadMs < Number.MAX_SAFE_INTEGER;
    const back = this.maxOffset >= 0 && off + RESTART_BACK_MS < this.maxOffset;
    // A live line of a file, going back by more than STALE_BACK_MS, that lands before what the
    // reads already vouch for (its end found at eofFactHr, less the lag for a line still on its
    // way): its process started after this run's epoch, a new daemon whose old run was too
    // short for the offsets to go back by RESTART_BACK_MS (a quick restart, a crash loop).
    // Lines in order never qualify (a log replayed slower than its offsets is one run), nor
    // does standard input (no such fact).
    const stale = !back && off + STALE_BACK_MS < this.maxOffset && this.inVouchedPast(off, live);
    if (back || stale) {
      if (back && !checked) return 'restart';
      // The new process's estimated start against the old run's latest claimed time.
      const ref = this.refEpochHr !== Infinity ? this.refEpochHr : this.epochHr;
      const overlap = ref + this.maxOffset * 1e6 - (readHr - off * 1e6);
      // By the reads alone: only a new process that started after the old run's latest claim.
      if (stale) return overlap <= 0 ? 'stale' : 'ok';
      // Within the slack (clock jitter, a late first line) at most once a minute: each such
      // restart may claim the overlap twice, so back-to-back ones would add it up. Not the
      // lag: a log can inflate that with one late line, and then claim that much each minute.
      if (overlap <= 0 || (overlap <= RESTART_SLACK_NS && readHr - this.lastRestartHr >= RESTART_OVERLAP_GAP_NS)) {
        this.aheadN = 0;
        if (overlap > 0) this.lastRestartHr = readHr;
        return 'restart';
      }
      return this.held(overlap, readHr);
    }
    if (checked) {
      const lead = this.refEpochHr - (readHr - off * 1e6);
      if (lead > this.maxLeadMs * 1e6) return this.held(lead, readHr);
    }
    this.aheadN = 0;
    return 'ok';
  }

  /** A refused line, `by` ns out of place: 'ahead', or 'restart' once REANCHOR says the run is a real one. */
  private held(by: number, readHr: number): ClockVerdict {
    if (this.aheadN === 0) {
      this.aheadSinceHr = readHr;
      this.aheadMin = this.aheadMax = by;
    }
    this.aheadN++;
    if (by < this.aheadMin) this.aheadMin = by;
    if (by > this.aheadMax) this.aheadMax = by;
    if (this.aheadN >= REANCHOR.lines && readHr - this.aheadSinceHr >= REANCHOR.ns && this.aheadMax - this.aheadMin <= REANCHOR.spreadNs) {
      this.aheadN = 0;
      return 'restart';
    }
    return 'ahead';
  }

  /** Takes a line in (after `check` said ok); returns its time on the run's clock (ns). */
  accept(off: number, live: boolean, readHr: number): number {
    if (this.maxOffset < 0) this.newRun(readHr, off);
    if (off > this.maxOffset) this.maxOffset = off;
    const est = readHr - off * 1e6;
    if (est < this.epochHr) this.epochHr = est;
    if (live) {
      if (this.refEpochHr === Infinity) this.refEpochHr = est;
      // How late lines reach us; live lines only (history is read long after it was written).
      const lat = est - this.epochHr;
      this.latMax = lat > this.latMax * LAT_DECAY ? lat : this.latMax * LAT_DECAY;
    }
    const t = this.runBase + off * 1e6;
    if (t > this.lastLineNs) this.lastLineNs = t;
    return t;
  }

  private newRun(readHr: number, off: number): void {
    const floor = Math.max(this.lastLineNs, this.lastExposed) + 1e6;
    this.runBase = Math.max(readHr, this.runs === 0 ? 0 : floor + off * 1e6) - off * 1e6;
    this.epochHr = readHr - off * 1e6;
    this.refEpochHr = Infinity;
    this.maxOffset = off;
    this.runs++;
  }

  /** The old run is over (a restart): the next line starts a new one. */
  endRun(): void {
    this.maxOffset = -1;
    this.refEpochHr = Infinity;
    this.aheadN = 0;
  }

  /** Until when (hrtime) the log is known to be read in full, less the lag. */
  readUntilHr(): number {
    return Math.min(this.frozenUntilHr, (this.isStdin() ? this.hrNow() : this.lastEofHr) - this.lagNs());
  }

  /** While a `stale` line is held, running stints are exposed no further than they were. */
  private frozenUntilHr = Infinity;

  freeze(): void {
    this.frozenUntilHr = this.readUntilHr();
  }

  unfreeze(): void {
    this.frozenUntilHr = Infinity;
  }

  /** A live line of a file at this offset lands before what the reads vouch for (less the lag). */
  inVouchedPast(off: number, live: boolean): boolean {
    return live && this.maxOffset >= 0 && !this.isStdin() && off * 1e6 < this.eofFactHr - this.lagNs() - this.epochHr;
  }

  lagNs(): number {
    return Math.max(MIN_LAG_NS, 2 * this.latMax);
  }

  /** Now on the run's clock, never past what has been read in full, never back. */
  nowNs(): number {
    if (this.runs === 0) return this.lastExposed;
    const est = this.runBase + (this.readUntilHr() - this.epochHr);
    const now = Math.max(this.lastExposed, this.lastLineNs, est);
    this.lastExposed = now;
    return now;
  }

  /** The run's clock (ns) now, without moving the exposure (sweeps, timeouts). */
  peekNs(): number {
    if (this.runs === 0) return this.lastExposed;
    return Math.max(this.lastExposed, this.lastLineNs, this.runBase + (this.readUntilHr() - this.epochHr));
  }

  /** The exporter's hrtime of a time on the run's clock. */
  toHr(tNs: number): number {
    return tNs - this.runBase + this.epochHr;
  }

  /** The daemon's offset (ms) of a time on the run's clock. */
  offsetOf(tNs: number): number {
    return (tNs - this.runBase) / 1e6;
  }
}
