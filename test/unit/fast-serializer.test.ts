/**
 * FastPrometheusSerializer must write exactly what the package's PrometheusSerializer
 * writes with Telemetry's settings: on our real output (the golden sequence, and a box
 * with many GPUs), and on hand-built inputs that exercise escaping, name sanitising,
 * histograms with and without an explicit +Inf boundary, empty metrics, and the shapes it
 * hands to the package (duplicate names, exponential histograms, unusable names).
 */
import { ValueType } from '@opentelemetry/api';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationTemporality, DataPointType, MetricData, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { FastPrometheusSerializer } from '../../src/exporter/fast-serializer';
import { Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';
import { goldenSource } from '../helpers/golden-script';

const reference = () => new PrometheusSerializer(undefined, false, undefined, true, true);
const T: [number, number] = [1700000000, 5];
const resource = resourceFromAttributes({ 'service.name': 'x' });

function rm(...metrics: MetricData[]): ResourceMetrics {
  return { resource, scopeMetrics: [{ scope: { name: 'a' }, metrics }] };
}
function gauge(name: string, points: [Record<string, unknown>, number][], description = 'help', unit = ''): MetricData {
  return {
    descriptor: { name, description, unit, valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.GAUGE,
    dataPoints: points.map(([attributes, value]) => ({ startTime: T, endTime: T, attributes: attributes as never, value })),
  };
}
function sum(name: string, monotonic: boolean, points: [Record<string, unknown>, number][]): MetricData {
  return {
    descriptor: { name, description: 'a sum', unit: '', valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.SUM,
    isMonotonic: monotonic,
    dataPoints: points.map(([attributes, value]) => ({ startTime: T, endTime: T, attributes: attributes as never, value })),
  };
}
function histogram(name: string, boundaries: number[], counts: number[], attributes: Record<string, unknown> = {}, withSum = true): MetricData {
  return {
    descriptor: { name, description: 'a histogram', unit: '', valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.HISTOGRAM,
    dataPoints: [
      {
        startTime: T,
        endTime: T,
        attributes: attributes as never,
        value: { buckets: { boundaries, counts }, count: counts.reduce((a, b) => a + b, 0), sum: withSum ? 1.5 : undefined, min: 0, max: 2 },
      },
    ],
  };
}

function same(input: ResourceMetrics): string {
  const want = reference().serialize(input);
  const fast = new FastPrometheusSerializer();
  expect(fast.serialize(input)).toBe(want);
  expect(fast.serialize(input)).toBe(want); // and again, from the caches
  return want;
}

describe('FastPrometheusSerializer writes what PrometheusSerializer writes', () => {
  test('the golden scripted sequence', async () => {
    let telemetry!: Telemetry;
    const source = goldenSource((s) => (telemetry = new Telemetry(s, { version: '0.0.0-test', logger: silentLogger })));
    source.refresh();
    const { resourceMetrics } = await telemetry['prometheus'].collect();
    const body = same(resourceMetrics);
    expect(body).toContain('cuzk_partition_gpu_duration_seconds_bucket{proof_kind="snap-update",le="+Inf"} 3');
    await telemetry.shutdown();
  });

  test('escaping, sanitising, values and empty metrics', () => {
    same(
      rm(
        gauge('plain', [[{}, 1], [{ a: 'x' }, 0.1 + 0.2]]),
        gauge('esc', [[{ path: 'C:\\dir\n"q"' }, -0], [{ 'bad.key-name': 'v', 'dou__ble': 'w', '1digit': 'z' }, Infinity]], 'line1\nline2 \\ back'),
        gauge('weird.name-x', [[{ n: 5, b: true, arr: [1, 'a'], nul: null, und: undefined }, -Infinity]], '', 'seconds'),
        gauge('9starts_with_digit', [[{}, NaN]]),
        gauge('no_points', []),
        sum('requests', true, [[{ code: '200' }, 3]]),
        sum('already_total', true, [[{}, 1]]),
        sum('updown', false, [[{}, -2]]),
      ),
    );
  });

  test('histograms: with and without +Inf boundary, no sum, labels and none', () => {
    same(
      rm(
        histogram('h1', [0.1, 1, 10], [1, 2, 3, 4], { kind: 'a"b' }),
        histogram('h2', [0.1, Infinity], [1, 2, 0], {}),
        histogram('h3', [], [7], { x: '1' }, false),
      ),
    );
  });

  test('shapes it hands to the package: duplicate names, bad names, exponential histograms', () => {
    same({
      resource,
      scopeMetrics: [
        { scope: { name: 'a' }, metrics: [gauge('dup', [[{ s: 'a' }, 1]], 'first help')] },
        { scope: { name: 'b' }, metrics: [gauge('dup', [[{ s: 'b' }, 2]], 'second help')] },
      ],
    });
    same(rm(gauge('dup2', [[{}, 1]]), sum('dup2', false, [[{}, 2]]), gauge('ok', [[{}, 3]])));
    same(rm(gauge('.', [[{}, 1]]), gauge('fine', [[{}, 2]])));
    same(
      rm(gauge('fine', [[{}, 2]]), {
        descriptor: { name: 'exp', description: 'e', unit: '', valueType: ValueType.DOUBLE },
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.EXPONENTIAL_HISTOGRAM,
        dataPoints: [],
      } as MetricData),
    );
    same(rm());
  });
});
