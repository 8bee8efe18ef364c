/**
 * OpenMetrics 1.0.0 text serialisation of the same collection the 0.0.4 body is written
 * from (fast-serializer.ts): same series, same sample names, same label sets and values, so
 * a Prometheus that negotiates OpenMetrics stores exactly what it stored from 0.0.4. What
 * OpenMetrics adds or changes (https://prometheus.io/docs/specs/om/open_metrics_spec/):
 *
 *  - counters: the MetricFamily is named without `_total` (`# TYPE cuzk_proofs_completed
 *    counter`), its sample keeps it (`cuzk_proofs_completed_total`);
 *  - `# UNIT` for families whose name ends in a base unit (`_seconds`, `_bytes`), as the
 *    spec asks when the unit is known (it must be the name's suffix);
 *  - metadata in the spec's order TYPE, UNIT, HELP; HELP escapes `"` as well;
 *  - histogram buckets first, then `_count` and `_sum`; `le` values in the spec's canonical
 *    number form (Go's %g with ".0" added to integers: `le="1.0"`, `le="1e-05"`), which is
 *    also how Prometheus 3 normalises `le` from every format;
 *  - exemplars on the buckets of the duration histograms (exemplars.ts);
 *  - the body ends with `# EOF`.
 *
 * No `_created` samples, deliberately: the spec says SHOULD, but the Prometheus versions in
 * use (Debian's 2.42, and 3.x without the created-timestamp feature) store every
 * `_created` line as one more series per counter and histogram — ~140 extra series on a
 * 64-GPU box for a value that is the exporter's start time for all of them, and counter
 * resets are already detected from the values. client_golang leaves them out by default
 * for the same reason.
 *
 * `_info` metrics stay gauges (OpenMetrics allows it; the `info` type would change their
 * metadata family name to one without `_info` and buys nothing for queries).
 *
 * Shapes we never produce but must not crash on — two metrics with one name, exponential
 * histograms — are skipped (the first metric of a name wins), never written as an invalid
 * exposition: Prometheus rejects a whole OpenMetrics body for one bad line.
 */
import type { Attributes } from '@opentelemetry/api';
import { DataPointType, MetricData, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { BodyWriter } from './body-writer';
import type { ExemplarStore } from './exemplars';
import { cacheSet, LabelWriter, NEEDS_ESCAPE, sampleName } from './label-writer';

const UNIT_SUFFIXES = ['seconds', 'bytes'] as const;
const NEWLINE = 0x0a;

function escapeHelp(s: string): string {
  return NEEDS_ESCAPE.test(s) ? s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"') : s;
}

/**
 * A bucket bound as OpenMetrics' canonical numbers want it: Go's strconv 'g' with the
 * shortest precision (exponent form below 1e-4 and from 1e+6, with an exponent of at least
 * two digits), plus ".0" when the result has neither a point nor an exponent.
 */
export function canonicalNumber(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  if (v === 0) return Object.is(v, -0) ? '-0.0' : '0.0';
  const [mant, expText] = v.toExponential().split('e');
  const exp = Number(expText);
  if (exp < -4 || exp >= 6) {
    const sign = exp < 0 ? '-' : '+';
    const digits = String(Math.abs(exp)).padStart(2, '0');
    return `${mant}e${sign}${digits}`;
  }
  const fixed = String(v);
  return fixed.includes('.') ? fixed : `${fixed}.0`;
}

function typeOf(metric: MetricData): string {
  switch (metric.dataPointType) {
    case DataPointType.SUM:
      return metric.isMonotonic ? 'counter' : 'gauge';
    case DataPointType.GAUGE:
      return 'gauge';
    case DataPointType.HISTOGRAM:
      return 'histogram';
    default:
      return 'unknown';
  }
}

interface BucketStarts {
  /** The bounds and bucket count the starts were written for. */
  boundaries: readonly number[];
  buckets: number;
  /** `name_bucket{labels,le="…"} ` per bucket line, as UTF-8. */
  starts: Buffer[];
  /** `name_count{labels} ` and `name_sum{labels} `, as UTF-8. */
  count: Buffer;
  sum: Buffer;
}

interface Names {
  /** Sample name (as in 0.0.4: counters end in _total). */
  sample: string;
  /** MetricFamily name (counters without _total). */
  family: string;
  unit: string;
}

export class OpenMetricsSerializer {
  /** Label text as in 0.0.4 (OpenMetrics escapes label values by the same rules). */
  private readonly labelWriter = new LabelWriter();
  private readonly names = new Map<string, Names | undefined>();
  private readonly les = new Map<number, string>();
  /** Bucket line starts by family name and attribute set (bucketStarts). */
  private readonly starts = new Map<string, WeakMap<Attributes, BucketStarts>>();
  /** The last body's size: the next one is written into one allocation that size and a bit. */
  private lastSize = 0;

  serialize(resourceMetrics: ResourceMetrics, exemplars?: ExemplarStore | null): string {
    return this.serializeBody(resourceMetrics, exemplars).toString('utf8');
  }

  /**
   * The body as UTF-8, written straight into bytes (body-writer.ts: no rope of strings to
   * flatten and throw away; shared-collection.ts sends and compresses these bytes).
   */
  serializeBody(resourceMetrics: ResourceMetrics, exemplars?: ExemplarStore | null): Buffer {
    const out = new BodyWriter(this.lastSize + (this.lastSize >> 4) + 1024);
    const seen = new Set<string>();
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const metric of scope.metrics) {
        if (metric.dataPointType === DataPointType.EXPONENTIAL_HISTOGRAM) continue;
        const n = this.metricNames(metric);
        // One family per name, and no sample name of one family may be another's family name.
        if (n === undefined || seen.has(n.family) || seen.has(n.sample)) continue;
        seen.add(n.family);
        seen.add(n.sample);
        this.writeMetric(out, metric, n, exemplars ?? null);
      }
    }
    out.str('# EOF\n');
    const body = out.finish();
    this.lastSize = body.length;
    return body;
  }

  /** The 0.0.4 sample name (the exporter package's rules), its family and unit; cached. */
  private metricNames(metric: MetricData): Names | undefined {
    const total = metric.dataPointType === DataPointType.SUM && metric.isMonotonic;
    const key = (total ? '1' : '0') + metric.descriptor.name;
    if (this.names.has(key)) return this.names.get(key);
    let n: Names | undefined;
    const name = sampleName(metric.descriptor.name, total);
    if (name !== undefined) {
      const family = total ? name.slice(0, -'_total'.length) : name;
      const unit = family === '' ? undefined : UNIT_SUFFIXES.find((u) => family.endsWith(`_${u}`));
      if (family !== '') n = { sample: name, family, unit: unit ?? '' };
    }
    cacheSet(this.names, key, n);
    return n;
  }

  /** One family: metadata, then its samples (`name{labels} value`, buckets with exemplars, _count, _sum). */
  private writeMetric(out: BodyWriter, metric: MetricData, n: Names, exemplars: ExemplarStore | null): void {
    const { family, sample: name } = n;
    out.str(`# TYPE ${family} ${typeOf(metric)}\n`);
    if (n.unit) out.str(`# UNIT ${family} ${n.unit}\n`);
    out.str(`# HELP ${family} ${escapeHelp(metric.descriptor.description || 'description missing')}\n`);
    switch (metric.dataPointType) {
      case DataPointType.SUM:
      case DataPointType.GAUGE:
        for (const dp of metric.dataPoints) {
          out.bytes(this.labelWriter.lineStartBytes(name, dp.attributes));
          out.value(dp.value);
          out.char(NEWLINE);
        }
        break;
      case DataPointType.HISTOGRAM:
        for (const dp of metric.dataPoints) {
          const e = this.bucketStarts(name, dp.attributes, dp.value.buckets);
          const h = dp.value;
          const row = exemplars ? exemplars.row(name, dp.attributes) : null;
          const { counts } = h.buckets;
          let cumulative = 0;
          for (let i = 0; i < e.starts.length; i++) {
            cumulative += counts[i];
            out.bytes(e.starts[i]);
            out.value(cumulative);
            if (row) {
              const ex = exemplars!.text(row, i);
              if (ex !== '') out.str(ex);
            }
            out.char(NEWLINE);
          }
          // As in 0.0.4 (label-writer.ts countSumLines): _count, then _sum, each when set.
          if (h.count != null) {
            out.bytes(e.count);
            out.value(h.count);
            out.char(NEWLINE);
          }
          if (h.sum != null) {
            out.bytes(e.sum);
            out.value(h.sum);
            out.char(NEWLINE);
          }
        }
        break;
    }
  }

  /**
   * The start of each bucket line of a histogram series (`name_bucket{labels,le="…"} `) and
   * of its `_count` and `_sum` lines, as UTF-8, written once per family, attribute set and
   * bounds (labels as LabelWriter.labels: attribute sets are not changed once made). The
   * lines stop after the first +Inf bound, as the loop over the buckets did.
   */
  private bucketStarts(name: string, attributes: Attributes, buckets: { boundaries: readonly number[]; counts: readonly number[] }): BucketStarts {
    let byAttributes = this.starts.get(name);
    if (byAttributes === undefined) {
      byAttributes = new WeakMap();
      cacheSet(this.starts, name, byAttributes);
    }
    const { boundaries, counts } = buckets;
    let e = byAttributes.get(attributes);
    if (e === undefined || e.boundaries !== boundaries || e.buckets !== counts.length) {
      const labels = this.labelWriter.labels(attributes);
      const bucket = labels === '' ? `${name}_bucket{le="` : `${name}_bucket{${labels},le="`;
      const braced = labels === '' ? '' : `{${labels}}`;
      const starts: Buffer[] = [];
      let infinite = false;
      for (let i = 0; i < counts.length; i++) {
        const upper = boundaries[i];
        if (upper === undefined && infinite) break;
        if (upper === Infinity) infinite = true;
        starts.push(Buffer.from(`${bucket}${upper === undefined || upper === Infinity ? '+Inf' : this.le(upper)}"} `, 'utf8'));
      }
      e = { boundaries, buckets: counts.length, starts, count: Buffer.from(`${name}_count${braced} `, 'utf8'), sum: Buffer.from(`${name}_sum${braced} `, 'utf8') };
      byAttributes.set(attributes, e);
    }
    return e;
  }

  private le(v: number): string {
    let s = this.les.get(v);
    if (s === undefined) {
      s = canonicalNumber(v);
      cacheSet(this.les, v, s);
    }
    return s;
  }
}
