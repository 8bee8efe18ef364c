/**
 * Concurrent scrapes share one collection. A scrape joins the next collection: the first
 * scrape to find none pending schedules one for the next turn of the event loop
 * (setImmediate, after the I/O callbacks of this turn), and every scrape that arrives
 * before it starts gets its result. A scrape that arrives while a collection runs joins
 * the one after it, never the running one: the source drains its pending events when a
 * collection starts, so each answer reflects every event that happened before its request
 * arrived. N scrapers waiting at once cost one collection instead of N queued ones.
 *
 * The bodies of one collection (CollectionBodies) are rendered once per format and encoded
 * once per format and content encoding, on first use, and live only as long as that
 * collection: the next scrapes get the next collection's.
 *
 * A body is rendered in pieces (one per metric family) and written straight into one
 * Buffer: a large box's body as one string (129 KiB) is a V8 large object, and building
 * it (flattening the concatenation) then encoding it cost ~1 ms a scrape, more than the
 * collection and serialisation together (bench/README.md, scrape benchmark); writing the
 * pieces costs ~0.05 ms. The whole text is concatenated only for in-process callers and HEAD.
 * The OpenMetrics body (what Prometheus asks for) comes as bytes already (body-writer.ts):
 * flattening its pieces was most of the garbage a collection left (issue 21).
 */
import * as zlib from 'node:zlib';
import { concat } from './label-writer';
import type { ExpositionFormat } from './negotiate';

/** The pieces as one UTF-8 Buffer, without building their concatenation as a string. */
export function utf8Of(pieces: readonly string[]): Buffer {
  let size = 0;
  for (const p of pieces) size += Buffer.byteLength(p, 'utf8');
  // Every byte is written below (asserted), so the unzeroed allocation never leaks memory.
  const buf = Buffer.allocUnsafe(size);
  let at = 0;
  for (const p of pieces) at += buf.write(p, at, 'utf8');
  if (at !== size) throw new Error(`body encoding wrote ${at} of ${size} bytes`);
  return buf;
}

export class CollectionBodies {
  private readonly rendered = new Map<ExpositionFormat, readonly string[] | Buffer>();
  private readonly texts = new Map<ExpositionFormat, string>();
  private readonly bytes = new Map<string, Buffer>();

  /**
   * @param render the collection serialised in one format (called once per format): whole,
   *   in pieces, or as its UTF-8 bytes
   */
  constructor(private readonly render: (format: ExpositionFormat) => string | readonly string[] | Buffer) {}

  private renderedOf(format: ExpositionFormat): readonly string[] | Buffer {
    let p = this.rendered.get(format);
    if (p === undefined) {
      const r = this.render(format);
      p = typeof r === 'string' ? [r] : r;
      this.rendered.set(format, p);
    }
    return p;
  }

  /** The body as text. */
  text(format: ExpositionFormat): string {
    let t = this.texts.get(format);
    if (t === undefined) {
      const r = this.renderedOf(format);
      t = Buffer.isBuffer(r) ? r.toString('utf8') : concat(r as readonly string[]);
      this.texts.set(format, t);
    }
    return t;
  }

  /** The body as sent: UTF-8, gzip-compressed at `gzipLevel` when one is given. */
  encoded(format: ExpositionFormat, gzipLevel?: number): Buffer {
    const key = `${format} ${gzipLevel ?? 'identity'}`;
    let b = this.bytes.get(key);
    if (b === undefined) {
      if (gzipLevel !== undefined) b = zlib.gzipSync(this.encoded(format), { level: gzipLevel });
      else {
        const r = this.renderedOf(format);
        b = Buffer.isBuffer(r) ? r : utf8Of(r as readonly string[]);
      }
      this.bytes.set(key, b);
    }
    return b;
  }
}

/** Joins scrapes to the next collection (see the file comment). */
export class SharedCollections<C> {
  private next: Promise<C> | null = null;

  constructor(private readonly collect: () => Promise<C>) {}

  /** The next collection: the pending one if it has not started yet, else a new one. */
  join(): Promise<C> {
    this.next ??= new Promise<C>((resolve, reject) => {
      setImmediate(() => {
        // From here on, arrivals wait for the next collection.
        this.next = null;
        this.collect().then(resolve, reject);
      });
    });
    return this.next;
  }
}
