/**
 * What the 0.0.4 (fast-serializer.ts) and OpenMetrics (openmetrics.ts) writers share: the
 * exporter package's name/escape rules, the sum/gauge sample lines and a histogram's
 * `_count`/`_sum` lines (alike in both formats), and label sets written `k1="v1",k2="v2"` with label
 * names sanitised and values escaped once each, cached. Strings are immutable, so the caches
 * are keyed by the strings themselves and stay correct; each is bounded by CACHE_LIMIT
 * (cleared when full).
 */
import type { Attributes, AttributeValue } from '@opentelemetry/api';

export const CACHE_LIMIT = 10_000;
const NEEDS_SANITIZE = /[^a-z0-9_]/i;
export const NEEDS_ESCAPE = /[\\\n"]/;

export function escapeString(str: string): string {
  return str.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

export function sanitizeName(name: string): string {
  return name.replace(/[^a-z0-9_]/gi, '_').replace(/_{2,}/g, '_');
}

export function valueString(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return `${value}`;
}

/** Sets key in a bounded cache, clearing it first when full. */
export function cacheSet<K, V>(cache: Map<K, V>, key: K, value: V): void {
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(key, value);
}

/**
 * The package's _getPrometheusMetricName (counters end in `_total`); undefined where it
 * would refuse the name.
 */
export function sampleName(descriptorName: string, total: boolean): string | undefined {
  let name = sanitizeName(escapeString(descriptorName));
  if (name === '' || name === '_') return undefined;
  if (name[0] >= '0' && name[0] <= '9') name = `_${name}`;
  if (total && !name.endsWith('_total')) name += '_total';
  return name;
}

/** `name{labels} value` per data point (sums and gauges; the same line in both formats). */
export function sampleLines(name: string, dataPoints: ReadonlyArray<{ attributes: Attributes; value: number }>, labelWriter: LabelWriter): string {
  let text = '';
  for (const dp of dataPoints) text += `${labelWriter.lineStart(name, dp.attributes)}${valueString(dp.value)}\n`;
  return text;
}

/** A histogram data point's `_count` and `_sum` lines; `braced` is `{labels}` or ''. */
export function countSumLines(name: string, braced: string, h: { count?: number; sum?: number }): string {
  let text = '';
  if (h.count != null) text += `${name}_count${braced} ${valueString(h.count)}\n`;
  if (h.sum != null) text += `${name}_sum${braced} ${valueString(h.sum)}\n`;
  return text;
}

export class LabelWriter {
  private readonly keys = new Map<string, string>();
  private readonly values = new Map<string, string>();
  /**
   * The text of each attribute set written, by the set itself: the producers hand the same
   * objects to every collection (state-metrics.ts and histograms.ts cache them), so a
   * collection writes each label set once per exporter, not once per scrape. Attribute sets
   * are never changed once made (as the OpenTelemetry SDK treats them); a set no longer
   * used is collected with its entry.
   */
  private readonly written = new WeakMap<Attributes, string>();
  /** lineStart's text by sample name and attribute set. */
  private readonly starts = new Map<string, WeakMap<Attributes, string>>();
  /** lineStart's text as UTF-8, cached the same way (body-writer.ts). */
  private readonly startBytes = new Map<string, WeakMap<Attributes, Buffer>>();

  /** `k1="v1",k2="v2"` in attribute order, as the package writes them. */
  labels(attributes: Attributes): string {
    let out = this.written.get(attributes);
    if (out === undefined) {
      out = this.write(attributes);
      this.written.set(attributes, out);
    }
    return out;
  }

  /** `name{labels} ` (`name ` without labels): a sample line up to its value, cached as labels are. */
  lineStart(name: string, attributes: Attributes): string {
    let byAttributes = this.starts.get(name);
    if (byAttributes === undefined) {
      byAttributes = new WeakMap();
      cacheSet(this.starts, name, byAttributes);
    }
    let start = byAttributes.get(attributes);
    if (start === undefined) {
      const labels = this.labels(attributes);
      start = labels === '' ? `${name} ` : `${name}{${labels}} `;
      byAttributes.set(attributes, start);
    }
    return start;
  }

  /** lineStart as UTF-8 bytes, cached as lineStart is. */
  lineStartBytes(name: string, attributes: Attributes): Buffer {
    let byAttributes = this.startBytes.get(name);
    if (byAttributes === undefined) {
      byAttributes = new WeakMap();
      cacheSet(this.startBytes, name, byAttributes);
    }
    let b = byAttributes.get(attributes);
    if (b === undefined) {
      b = Buffer.from(this.lineStart(name, attributes), 'utf8');
      byAttributes.set(attributes, b);
    }
    return b;
  }

  private write(attributes: Attributes): string {
    let out = '';
    for (const key in attributes) {
      if (!Object.prototype.hasOwnProperty.call(attributes, key)) continue;
      const v = attributes[key];
      out += `${out.length > 0 ? ',' : ''}${this.key(key)}="${this.value(v)}"`;
    }
    return out;
  }

  private key(k: string): string {
    if (!NEEDS_SANITIZE.test(k) && !k.includes('__')) return k;
    let s = this.keys.get(k);
    if (s === undefined) {
      s = sanitizeName(k);
      cacheSet(this.keys, k, s);
    }
    return s;
  }

  private value(v: AttributeValue | undefined): string {
    const str = typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v);
    if (!NEEDS_ESCAPE.test(str)) return str;
    let s = this.values.get(str);
    if (s === undefined) {
      s = escapeString(str).replace(/"/g, '\\"');
      cacheSet(this.values, str, s);
    }
    return s;
  }
}

/**
 * The pieces as one string, concatenated (V8 links them, copying nothing until the string
 * is read), as the serialisers built it before: in-process callers pay no more than before.
 */
export function concat(pieces: readonly string[]): string {
  let out = '';
  for (const p of pieces) out += p;
  return out;
}
