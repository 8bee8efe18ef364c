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
 */
import * as zlib from 'node:zlib';
import type { ExpositionFormat } from './negotiate';

export class CollectionBodies {
  private readonly texts = new Map<ExpositionFormat, string>();
  private readonly bytes = new Map<string, Buffer>();

  /** @param render the collection serialised in one format (called once per format) */
  constructor(private readonly render: (format: ExpositionFormat) => string) {}

  /** The body as text. */
  text(format: ExpositionFormat): string {
    let t = this.texts.get(format);
    if (t === undefined) {
      t = this.render(format);
      this.texts.set(format, t);
    }
    return t;
  }

  /** The body as sent: UTF-8, gzip-compressed at `gzipLevel` when one is given. */
  encoded(format: ExpositionFormat, gzipLevel?: number): Buffer {
    const key = `${format} ${gzipLevel ?? 'identity'}`;
    let b = this.bytes.get(key);
    if (b === undefined) {
      const text = this.text(format);
      b = gzipLevel === undefined ? Buffer.from(text, 'utf8') : zlib.gzipSync(text, { level: gzipLevel });
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
