/**
 * The telemetry path's answer: the format from the Accept header (negotiate.ts), gzip when
 * Accept-Encoding allows it and compression is on. Errors (a failed collection) are the
 * caller's: it answers them exactly as before, uncompressed.
 *
 * How, from the exposition benchmark (bench/exposition.ts; README "Benchmarks"): zlib level
 * 1 (GZIP_LEVEL), synchronously on the JS thread. Level 1 keeps ~97 % of level 6's saving
 * for a third of its CPU. Handing the body to libuv's thread pool (zlib.gzip) costs a fixed
 * ~0.5 ms of CPU more per scrape (stream and thread hand-offs) — more than compressing a
 * small box's body at all — to spare the JS thread ~0.4 ms on a 64-GPU box, less than the
 * collection before it takes.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { acceptsGzip, contentTypeOf, negotiateFormat } from './negotiate';
import type { Telemetry } from './telemetry';

export const COMPRESSIONS = ['gzip', 'none'] as const;
export type Compression = (typeof COMPRESSIONS)[number];
/** The default of --web.compression (bench/results: what gzip costs and saves per scrape). */
export const DEFAULT_COMPRESSION: Compression = 'gzip';
/** zlib level 1 (fastest); see above. */
export const GZIP_LEVEL = 1;

export interface MetricsReply {
  contentType: string;
  body: string | Buffer;
  headers: Record<string, string>;
}

export async function metricsReply(
  telemetry: Pick<Telemetry, 'collection'>,
  req: { method?: string; headers: IncomingHttpHeaders },
  compression: Compression = DEFAULT_COMPRESSION,
): Promise<MetricsReply> {
  const format = negotiateFormat(req.headers.accept);
  // Shared with the scrapes waiting beside this one; its bodies are encoded once per
  // collection, whoever asks first (shared-collection.ts).
  const c = await telemetry.collection();
  // The answer depends on both headers: caches must not mix them up.
  const headers: Record<string, string> = { Vary: 'Accept, Accept-Encoding' };
  if (compression === 'gzip' && acceptsGzip(req.headers['accept-encoding'])) {
    headers['Content-Encoding'] = 'gzip';
    // HEAD: the same headers as GET, without the work of a body nobody reads.
    const body = req.method === 'HEAD' ? '' : c.encoded(format, GZIP_LEVEL);
    return { contentType: contentTypeOf(format), body, headers };
  }
  return { contentType: contentTypeOf(format), body: req.method === 'HEAD' ? c.text(format) : c.encoded(format), headers };
}
