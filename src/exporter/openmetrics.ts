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
import type { ExemplarStore } from './exemplars';
import { cacheSet, concat, countSumLines, LabelWriter, NEEDS_ESCAPE, sampleLines, sampleName, valueString } from './label-writer';

const UNIT_SUFFIXES = ['seconds', 'bytes'] as const;

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
  labels: string;
  /** The bounds and bucket count the starts were written for. */
  boundaries: readonly number[];
  buckets: number;
  starts: string[];
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

  serialize(resourceMetrics: ResourceMetrics, exemplars?: ExemplarStore | null): string {
    return concat(this.serializePieces(resourceMetrics, exemplars));
  }

  /** The body in pieces, one per family (see FastPrometheusSerializer.serializePieces). */
  serializePieces(resourceMetrics: ResourceMetrics, exemplars?: ExemplarStore | null): string[] {
    const out: string[] = [];
    const seen = new Set<string>();
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const metric of scope.metrics) {
        if (metric.dataPointType === DataPointType.EXPONENTIAL_HISTOGRAM) continue;
        const n = this.metricNames(metric);
        // One family per name, and no sample name of one family may be another's family name.
        if (n === undefined || seen.has(n.family) || seen.has(n.sample)) continue;
        seen.add(n.family);
        seen.add(n.sample);
        out.push(this.metricText(metric, n, exemplars ?? null));
      }
    }
    out.push('# EOF\n');
    return out;
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

  private metricText(metric: MetricData, n: Names, exemplars: ExemplarStore | null): string {
    const { family, sample: name } = n;
    let text = `# TYPE ${family} ${typeOf(metric)}\n`;
    if (n.unit) text += `# UNIT ${family} ${n.unit}\n`;
    text += `# HELP ${family} ${escapeHelp(metric.descriptor.description || 'description missing')}\n`;
    switch (metric.dataPointType) {
      case DataPointType.SUM:
      case DataPointType.GAUGE:
        text += sampleLines(name, metric.dataPoints, this.labelWriter);
        break;
      case DataPointType.HISTOGRAM:
        for (const dp of metric.dataPoints) {
          const { labels, starts } = this.bucketStarts(name, dp.attributes, dp.value.buckets);
          const h = dp.value;
          const braced = labels === '' ? '' : `{${labels}}`;
          const row = exemplars ? exemplars.row(name, dp.attributes) : null;
          const { counts } = h.buckets;
          let cumulative = 0;
          for (let i = 0; i < starts.length; i++) {
            cumulative += counts[i];
            const ex = row ? exemplars!.text(row, i) : '';
            text += ex === '' ? `${starts[i]}${valueString(cumulative)}\n` : `${starts[i]}${valueString(cumulative)}${ex}\n`;
          }
          text += countSumLines(name, braced, h);
        }
        break;
    }
    return text;
  }

  /**
   * A histogram series' label text and the start of each of its bucket lines
   * (`name_bucket{labels,le="…"} `), written once per family, attribute set and bounds
   * (labels as LabelWriter.labels: attribute sets are not changed once made). The lines
   * stop after the first +Inf bound, as the loop over the buckets did.
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
      const starts: string[] = [];
      let infinite = false;
      for (let i = 0; i < counts.length; i++) {
        const upper = boundaries[i];
        if (upper === undefined && infinite) break;
        if (upper === Infinity) infinite = true;
        starts.push(`${bucket}${upper === undefined || upper === Infinity ? '+Inf' : this.le(upper)}"} `);
      }
      e = { labels, boundaries, buckets: counts.length, starts };
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
