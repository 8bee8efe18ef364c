/**
 * An exposition body written straight into UTF-8 bytes (the OpenMetrics body, openmetrics.ts).
 *
 * Why (issue 21, the scrape latency tail; bench/lib/tail-probe.ts): built as strings, a
 * 64-GPU box's body was ~2,300 lines joined with `+=`, i.e. ropes of ~7,000 small V8
 * strings that encoding to UTF-8 first had to flatten into copies: ~390 KiB of garbage per
 * collection (of ~510 KiB), a scavenge every ~25 collections, and ~0.4 ms of the ~1 ms a
 * collection costs. Here the parts that repeat from scrape to scrape (line starts: name and
 * labels) are cached as bytes and copied, numbers are written as digits, and the rest
 * (metadata, exemplars) is encoded once as it is appended. The bytes are the same as the
 * strings' UTF-8 (test/unit/body-writer.test.ts, test/golden).
 */
import { valueString } from './label-writer';

export class BodyWriter {
  private buf: Buffer;
  private at = 0;

  /** @param capacity initial size in bytes (grows by doubling) */
  constructor(capacity = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(Math.max(64, capacity));
  }

  /** Bytes written so far. */
  get length(): number {
    return this.at;
  }

  private ensure(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }

  /** Appends a string as UTF-8. */
  str(s: string): void {
    // A UTF-16 code unit takes at most 3 bytes of UTF-8 (a surrogate pair, 4 for 2 units).
    this.ensure(3 * s.length);
    this.at += this.buf.write(s, this.at, 'utf8');
  }

  /** Appends bytes (e.g. a cached line start). */
  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.at);
    this.at += b.length;
  }

  /** Appends one ASCII character code. */
  char(code: number): void {
    this.ensure(1);
    this.buf[this.at++] = code;
  }

  /** Appends a sample value as valueString writes it (non-negative integers as digits, without a string). */
  value(v: number): void {
    if (Number.isInteger(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER) {
      let digits = 1;
      for (let x = v; x >= 10; x = Math.floor(x / 10)) digits++;
      this.ensure(digits);
      let x = v;
      for (let i = this.at + digits - 1; i >= this.at; i--) {
        this.buf[i] = 48 + (x % 10);
        x = Math.floor(x / 10);
      }
      this.at += digits;
      return;
    }
    // Everything else (fractions, negatives, ±Inf, NaN) is ASCII: one byte per character.
    const s = valueString(v);
    this.ensure(s.length);
    this.at += this.buf.write(s, this.at, 'latin1');
  }

  /** The body written: the bytes, no copy. The writer must not be used after. */
  finish(): Buffer {
    return this.buf.subarray(0, this.at);
  }
}
