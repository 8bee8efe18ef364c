/**
 * Prometheus text serialisation of OpenTelemetry ResourceMetrics, byte for byte what
 * @opentelemetry/exporter-prometheus' PrometheusSerializer writes with the settings
 * Telemetry uses (no prefix, no timestamps, no resource constant labels, without scope
 * info, without target_info), at a fraction of its cost.
 *
 * Where the time went (bench/, scrape benchmark): the package's serializer rebuilds every
 * label set on every line — Object.entries, a regex sanitise of each label name, three
 * regex escapes of each value, and for histograms an Object.assign per bucket line. Here
 * label names and values are sanitised/escaped once and cached (strings are immutable, so
 * the caches are keyed by the strings themselves and stay correct; they are bounded), and
 * a histogram data point's label text is built once for all its bucket lines. The label
 * writer and name rules are shared with the OpenMetrics writer (label-writer.ts).
 *
 * Anything outside that common shape — two metrics with one Prometheus name (the package
 * merges families and warns on conflicts), a name that normalises to nothing, exponential
 * histograms — is handed to the package's serializer unchanged, so output never differs.
 * test/unit/fast-serializer.test.ts compares both on such inputs.
 */
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { DataPointType, MetricData, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { cacheSet, concat, countSumLines, escapeString, LabelWriter, sampleLines, sampleName, valueString } from './label-writer';

export { escapeString, sanitizeName, valueString } from './label-writer';

function typeOf(metric: MetricData): string {
  switch (metric.dataPointType) {
    case DataPointType.SUM:
      return metric.isMonotonic ? 'counter' : 'gauge';
    case DataPointType.GAUGE:
      return 'gauge';
    case DataPointType.HISTOGRAM:
      return 'histogram';
    default:
      return 'untyped';
  }
}

export class FastPrometheusSerializer {
  /** The package's serializer, for inputs outside the fast path. */
  private readonly fallback = new PrometheusSerializer(undefined, false, undefined, true, true);
  private readonly labelWriter = new LabelWriter();
  private readonly names = new Map<string, string | undefined>();

  serialize(resourceMetrics: ResourceMetrics): string {
    return concat(this.serializePieces(resourceMetrics));
  }

  /**
   * The body in pieces (one per metric family) whose concatenation is serialize()'s text:
   * shared-collection.ts writes them into one Buffer without ever building the whole body
   * as one string (a string that size is a V8 large object, ~1 ms to create; bench/README).
   */
  serializePieces(resourceMetrics: ResourceMetrics): string[] {
    // Names first: the fast path needs one metric per Prometheus name.
    const metrics: MetricData[] = [];
    const names: string[] = [];
    const seen = new Set<string>();
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const metric of scope.metrics) {
        if (metric.dataPointType === DataPointType.EXPONENTIAL_HISTOGRAM) return [this.fallback.serialize(resourceMetrics)];
        const name = this.metricName(metric);
        if (name === undefined || seen.has(name)) return [this.fallback.serialize(resourceMetrics)];
        seen.add(name);
        metrics.push(metric);
        names.push(name);
      }
    }
    const out: string[] = [];
    for (let i = 0; i < metrics.length; i++) {
      const text = this.metricText(metrics[i], names[i]);
      if (text) out.push(text, '\n');
    }
    return out.length === 0 ? ['# no registered metrics'] : out;
  }

  /** The package's _getPrometheusMetricName, cached; undefined where it would refuse the name. */
  private metricName(metric: MetricData): string | undefined {
    const total = metric.dataPointType === DataPointType.SUM && metric.isMonotonic;
    const key = (total ? '1' : '0') + metric.descriptor.name;
    if (this.names.has(key)) return this.names.get(key);
    const name = sampleName(metric.descriptor.name, total);
    cacheSet(this.names, key, name);
    return name;
  }

  private metricText(metric: MetricData, name: string): string {
    const { description, unit } = metric.descriptor;
    let text = `# HELP ${name} ${escapeString(description || 'description missing')}`;
    if (unit) text += `\n# UNIT ${name} ${escapeString(unit)}`;
    text += `\n# TYPE ${name} ${typeOf(metric)}\n`;
    switch (metric.dataPointType) {
      case DataPointType.SUM:
      case DataPointType.GAUGE:
        text += sampleLines(name, metric.dataPoints, this.labelWriter);
        break;
      case DataPointType.HISTOGRAM:
        for (const dp of metric.dataPoints) {
          const labels = this.labelWriter.labels(dp.attributes);
          const h = dp.value;
          const braced = labels === '' ? '' : `{${labels}}`;
          text += countSumLines(name, braced, h);
          const bucket = labels === '' ? `${name}_bucket{le="` : `${name}_bucket{${labels},le="`;
          const { boundaries, counts } = h.buckets;
          let cumulative = 0;
          let infinite = false;
          for (let i = 0; i < counts.length; i++) {
            cumulative += counts[i];
            const upper = boundaries[i];
            if (upper === undefined && infinite) break;
            if (upper === Infinity) infinite = true;
            text += `${bucket}${upper === undefined || upper === Infinity ? '+Inf' : String(upper)}"} ${valueString(cumulative)}\n`;
          }
        }
        break;
    }
    return text.trim();
  }
}
