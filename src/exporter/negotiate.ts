/**
 * HTTP content negotiation for the telemetry path, as Prometheus' own client libraries do
 * it (client_golang's expfmt.Negotiate): OpenMetrics 1.0.0 when the Accept header asks for
 * `application/openmetrics-text` (version 1.0.0 or no version) with a quality at least as
 * high as anything else we can serve; the Prometheus text format 0.0.4 otherwise —
 * including a missing header, wildcards, unknown types and versions we do not write.
 * Compression: gzip when Accept-Encoding allows it (explicitly or through `*`) and does not
 * rank identity above it.
 *
 * Both parsers take untrusted header text: bounded work (at most MAX_RANGES entries are
 * looked at), never throw. Each remembers its last answer: a scraper sends the same header
 * with every scrape, so parsing it again (strings, Maps: garbage) bought nothing (issue 21).
 */

export type ExpositionFormat = 'text' | 'openmetrics';

export const TEXT_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

export function contentTypeOf(format: ExpositionFormat): string {
  return format === 'openmetrics' ? OPENMETRICS_CONTENT_TYPE : TEXT_CONTENT_TYPE;
}

/** Entries of a header list looked at; the rest are ignored (a hostile header costs nothing more). */
const MAX_RANGES = 64;

interface Range {
  /** Lower-cased `type/subtype` or coding. */
  name: string;
  params: Map<string, string>;
  q: number;
}

/** `a;p=1;q=0.5, b` -> entries; malformed entries are skipped, a malformed q counts as 0. */
function parseList(header: string | string[] | undefined): Range[] {
  if (header === undefined) return [];
  const text = Array.isArray(header) ? header.join(',') : header;
  const out: Range[] = [];
  for (const entry of text.split(',', MAX_RANGES)) {
    const parts = entry.split(';');
    const name = parts[0].trim().toLowerCase();
    if (name === '') continue;
    const params = new Map<string, string>();
    let q = 1;
    for (let i = 1; i < parts.length; i++) {
      const eq = parts[i].indexOf('=');
      if (eq < 0) continue;
      const key = parts[i].slice(0, eq).trim().toLowerCase();
      let value = parts[i].slice(eq + 1).trim();
      if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
      if (key === 'q') {
        // RFC 9110 qvalue: 0 to 1 with at most three decimals; anything else is unusable.
        q = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/.test(value) ? Number(value) : 0;
      } else params.set(key, value);
    }
    out.push({ name, params, q });
  }
  return out;
}

/**
 * The format to answer an Accept header with. OpenMetrics only when it is asked for by name
 * with a quality no lower than the best text/plain 0.0.4 or wildcard range; ties go to the
 * range listed first.
 */
export function negotiateFormat(accept: string | string[] | undefined): ExpositionFormat {
  if (typeof accept === 'string' && accept === lastAccept.header) return lastAccept.answer;
  const answer = negotiate(accept);
  if (typeof accept === 'string') lastAccept = { header: accept, answer };
  return answer;
}

/** The last Accept header given as one string, and its answer. */
let lastAccept: { header: string | undefined; answer: ExpositionFormat } = { header: undefined, answer: 'text' };
/** The last Accept-Encoding header given as one string, and its answer. */
let lastEncoding: { header: string | undefined; answer: boolean } = { header: undefined, answer: false };

function negotiate(accept: string | string[] | undefined): ExpositionFormat {
  let best: ExpositionFormat = 'text';
  let bestQ = 0;
  for (const r of parseList(accept)) {
    if (!(r.q > 0)) continue;
    let f: ExpositionFormat | null = null;
    const version = r.params.get('version');
    if (r.name === 'application/openmetrics-text') {
      if (version === undefined || version === '1.0.0') f = 'openmetrics';
    } else if (r.name === 'text/plain') {
      if (version === undefined || version === '0.0.4') f = 'text';
    } else if (r.name === '*/*' || r.name === 'text/*') f = 'text';
    if (f !== null && r.q > bestQ) {
      best = f;
      bestQ = r.q;
    }
  }
  return best;
}

/** Whether to gzip the answer to this Accept-Encoding header. */
export function acceptsGzip(acceptEncoding: string | string[] | undefined): boolean {
  if (typeof acceptEncoding === 'string' && acceptEncoding === lastEncoding.header) return lastEncoding.answer;
  const answer = gzipWanted(acceptEncoding);
  if (typeof acceptEncoding === 'string') lastEncoding = { header: acceptEncoding, answer };
  return answer;
}

function gzipWanted(acceptEncoding: string | string[] | undefined): boolean {
  let gzip: number | undefined;
  let star: number | undefined;
  let identity: number | undefined;
  for (const r of parseList(acceptEncoding)) {
    if (r.name === 'gzip' || r.name === 'x-gzip') gzip = Math.max(gzip ?? 0, r.q);
    else if (r.name === '*') star = r.q;
    else if (r.name === 'identity') identity = r.q;
  }
  const qGzip = gzip ?? star ?? 0;
  // Identity is always acceptable, but it is preferred only when the client says so.
  return qGzip > 0 && qGzip >= (identity ?? 0);
}
