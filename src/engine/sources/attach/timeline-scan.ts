/**
 * Finds TIMELINE records in log text, whole or torn.
 *
 * cuzk writes TIMELINE lines with `eprintln!` (engine.rs `timeline_event`) on stderr, which
 * Rust does not buffer: one line goes out as several write(2) calls, one per format piece
 * (`TIMELINE,` offset `,` event `,` job_id `,` detail `\n`). Its tracing subscriber writes
 * whole ANSI-coloured lines to stdout. Where both reach one stream (a journal, `2>&1`), a
 * tracing line can land between two pieces of a TIMELINE line:
 *
 *     TIMELINE,8123,GPU_END,job-1\x1b[2m2026-12-01T…Z\x1b[0m \x1b[32m INFO\x1b[0m …\n
 *     ,worker=1,partition=3,gpu_ms=912\n
 *
 * The piece before the intruder ends at its ESC (or at an ISO timestamp when tracing runs
 * without colour); if what precedes is a complete record it is used as is (the detail is
 * one piece: a record with its detail is whole), otherwise it waits for the next line,
 * which must continue it (after a journal prefix like the head's, if any). A continuation
 * torn again waits once more; one that does not complete a record is counted
 * (`timeline_torn`) and the line is read on its own.
 */
import { TIMELINE_MARK } from './timeline-parser';

export interface ScanSink {
  /**
   * A candidate record text: s[a, b) starting at `TIMELINE,`. Applies it and returns null
   * if it parsed; otherwise returns why not, counting nothing (the scanner decides).
   */
  record(s: string, a: number, b: number, history: boolean, readHr: number, torn: boolean): string | null;
  /** A line that is not a usable record (`why` from record()). */
  bad(why: string, s: string, a: number, b: number): void;
  /** A torn line could not be put back together. */
  torn(head: string): void;
  /** A TIMELINE line longer than the limit was dropped. */
  overlong(): void;
}

const ESC = '\x1b';
const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/;
/** Pieces of one line a continuation may still be missing. */
const MAX_CONTINUATIONS = 8;

export class TimelineScanner {
  private head: string | null = null;
  private headPrefixTail = '';
  private headHistory = false;
  private headParts = 0;
  /**
   * The text being scanned and its next ESC at or after escFrom (-1: none). indexOf has no
   * end bound, so asking it afresh for every line of a 64 KiB piece without colour would
   * read to the piece's end each time (quadratic; 17 % of the surface's CPU in the bench).
   */
  private escText = '';
  private escFrom = 0;
  private escAt = -1;

  constructor(
    private readonly sink: ScanSink,
    private readonly maxLineBytes: number,
  ) {}

  /** Bytes of a torn head held (bounded by maxLineBytes). */
  get pendingBytes(): number {
    return this.head?.length ?? 0;
  }

  /** Scans whole lines of text. */
  scan(text: string, history: boolean, readHr: number): void {
    this.escText = text;
    this.escFrom = 0;
    this.escAt = text.indexOf(ESC);
    try {
      this.scanText(text, history, readHr);
    } finally {
      this.escText = ''; // not kept past the call
    }
  }

  /**
   * Index of the first intruding tracing text in text[a, b) (the text being scanned), or
   * -1. With allowIso, a colourless tracing timestamp counts too.
   */
  private intruder(text: string, a: number, b: number, allowIso: boolean): number {
    if (text !== this.escText || a < this.escFrom) {
      this.escText = text;
      this.escFrom = a;
      this.escAt = text.indexOf(ESC, a);
    } else if (this.escAt >= 0 && this.escAt < a) {
      this.escFrom = a;
      this.escAt = text.indexOf(ESC, a);
    }
    const e = this.escAt;
    if (e >= 0 && e < b) return e;
    if (!allowIso || b <= a) return -1;
    // Only on a line that did not parse: the slice bounds the search by the line.
    const m = ISO.exec(text.slice(a, b));
    return m ? a + m.index : -1;
  }

  private scanText(text: string, history: boolean, readHr: number): void {
    const n = text.length;
    let p = this.continue(text, 0, history, readHr);
    let m = p < n ? text.indexOf(TIMELINE_MARK, p) : -1;
    while (m >= 0) {
      let e = text.indexOf('\n', m);
      if (e < 0) e = n;
      const s = text.lastIndexOf('\n', m) + 1;
      if (e - s > this.maxLineBytes) this.sink.overlong();
      else this.line(text, s, m, e, history, readHr);
      p = this.continue(text, e + 1, history, readHr);
      m = p < n ? text.indexOf(TIMELINE_MARK, p) : -1;
    }
  }

  /** While a torn head is held, the lines from p are its continuations. */
  private continue(text: string, p: number, history: boolean, readHr: number): number {
    while (this.head !== null && p < text.length) {
      const q = this.continuation(text, p, history, readHr);
      if (q === p) break;
      p = q;
    }
    return p;
  }

  private line(text: string, s: number, m: number, e: number, history: boolean, readHr: number): void {
    let end = e;
    if (end > m && text.charCodeAt(end - 1) === 13) end--; // CRLF
    const cut = this.intruder(text, m, end, false);
    if (cut < 0) {
      const why = this.sink.record(text, m, end, history, readHr, false);
      if (why === null) return;
      // Colourless tracing glued on: only if the part before it is a record or its head.
      const iso = this.intruder(text, m + TIMELINE_MARK.length, end, true);
      if (iso < 0 || why !== 'malformed') return this.sink.bad(why, text, m, end);
      if (this.sink.record(text, m, iso, history, readHr, true) === null) return;
      this.hold(text.slice(m, iso), text.slice(s, m), history);
      return;
    }
    if (this.sink.record(text, m, cut, history, readHr, true) === null) return;
    this.hold(text.slice(m, cut), text.slice(s, m), history);
  }

  private hold(head: string, prefix: string, history: boolean): void {
    this.head = head;
    this.headPrefixTail = prefix.length >= 2 ? prefix.slice(-2) : '';
    this.headHistory = history;
    this.headParts = 0;
  }

  /** The line at p continues the held head (or not). Returns where scanning goes on. */
  private continuation(text: string, p: number, history: boolean, readHr: number): number {
    const n = text.length;
    let e = text.indexOf('\n', p);
    if (e < 0) e = n;
    let end = e;
    if (end > p && text.charCodeAt(end - 1) === 13) end--;
    const head = this.head!;
    const mark = text.indexOf(TIMELINE_MARK, p);
    if (mark >= 0 && mark < end) {
      // A new record: the head never got its rest.
      this.drop();
      return p;
    }
    // After a prefix like the head's first: read from the line's start, a journal prefix
    // parses as the tail of the job id (`job-1Dec 01 10:00:00 host cuzk[42]: `).
    const starts: number[] = [];
    if (this.headPrefixTail !== '') {
      // Searched within this line only: indexOf would read on through the whole piece
      // whenever the line lacks it (a log of torn lines without a journal prefix).
      const t0 = this.headPrefixTail.charCodeAt(0);
      const t1 = this.headPrefixTail.charCodeAt(1);
      for (let i = p; i < end; i++) {
        if (text.charCodeAt(i) === t0 && text.charCodeAt(i + 1) === t1) {
          starts.push(i + 2);
          break;
        }
      }
    }
    starts.push(p);
    for (const a of starts) {
      const cut = this.intruder(text, a, end, false);
      const piece = text.slice(a, cut < 0 ? end : cut);
      const joined = head + piece;
      if (joined.length > this.maxLineBytes) break;
      if (cut >= 0) {
        if (++this.headParts > MAX_CONTINUATIONS) break;
        if (this.sink.record(joined, 0, joined.length, this.headHistory || history, readHr, true) === null) {
          this.head = null;
          return e + 1;
        }
        this.head = joined; // torn again: wait for the next piece
        return e + 1;
      }
      if (this.sink.record(joined, 0, joined.length, this.headHistory || history, readHr, true) === null) {
        this.head = null;
        return e + 1;
      }
    }
    this.drop();
    return p;
  }

  private drop(): void {
    const h = this.head;
    this.head = null;
    if (h !== null) this.sink.torn(h);
  }
}
