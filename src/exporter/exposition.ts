/**
 * The telemetry path's answer: the format from the Accept header (negotiate.ts), gzip when
 * Accept-Encoding allows it and compression is on. Errors (a failed collection) are the
 * caller's: it answers them exactly as before, uncompressed.
 *
 * gzip runs on libuv's thread pool (zlib.gzip), not on the JS thread, so ingestion and
 * other requests are not held up while a large body is compressed. The level is chosen
 * from the scrape benchmark (bench/scrape.ts, "gzip" rows): see GZIP_LEVEL.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { acceptsGzip, contentTypeOf, negotiateFormat } from './negotiate';
import type { Telemetry } from './telemetry';

export const COMPRESSIONS = ['gzip', 'none'] as const;
export type Compression = (typeof COMPRESSIONS)[number];
/** The default of --web.compression (bench/results: what gzip costs and saves per scrape). */
export const DEFAULT_COMPRESSION: Compression = 'gzip';
/**
 * zlib level 1 (fastest): on our bodies it keeps ~90 % of level 6's saving at well under
 * half its CPU (bench/results, "gzip" rows); client_golang uses the package default.
 */
export const GZIP_LEVEL = 1;

const gzip = promisify(zlib.gzip);

export interface MetricsReply {
  contentType: string;
  body: string | Buffer;
  headers: Record<string, string>;
}

export async function metricsReply(
  telemetry: Pick<Telemetry, 'scrape'>,
  req: { method?: string; headers: IncomingHttpHeaders },
  compression: Compression = DEFAULT_COMPRESSION,
): Promise<MetricsReply> {
  const format = negotiateFormat(req.headers.accept);
  const text = await telemetry.scrape(format);
  // The answer depends on both headers: caches must not mix them up.
  const headers: Record<string, string> = { Vary: 'Accept, Accept-Encoding' };
  if (compression === 'gzip' && acceptsGzip(req.headers['accept-encoding'])) {
    headers['Content-Encoding'] = 'gzip';
    // HEAD: the same headers as GET, without the work of a body nobody reads.
    const body = req.method === 'HEAD' ? '' : await gzip(text, { level: GZIP_LEVEL });
    return { contentType: contentTypeOf(format), body, headers };
  }
  return { contentType: contentTypeOf(format), body: text, headers };
}
