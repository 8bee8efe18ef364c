/**
 * Both serializers cache sample names per descriptor name and kind (counter or not). A
 * serializer lives as long as the exporter, so one that saw a gauge `abc` and later a counter
 * `0abc` (or a gauge `1abc` and a counter `abc`) must still name each by the package rules:
 * `abc`, `_0abc_total`; `_1abc`, `abc_total` (the package serializer is the oracle).
 */
import { ValueType } from '@opentelemetry/api';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationTemporality, DataPointType, MetricData, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { FastPrometheusSerializer } from '../../src/exporter/fast-serializer';
import { OpenMetricsSerializer } from '../../src/exporter/openmetrics';

function rm(name: string, counter: boolean): ResourceMetrics {
  const m = {
    descriptor: { name, description: 'd', unit: '', valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: counter ? DataPointType.SUM : DataPointType.GAUGE,
    ...(counter ? { isMonotonic: true } : {}),
    dataPoints: [{ attributes: {}, startTime: [0, 0], endTime: [0, 0], value: 1 }],
  } as MetricData;
  return { resource: resourceFromAttributes({}), scopeMetrics: [{ scope: { name: 's' }, metrics: [m] }] };
}

const pairs: [string, boolean, string, boolean][] = [
  ['abc', false, '0abc', true],
  ['1abc', false, 'abc', true],
];

test.each(pairs)('0.0.4: %s (counter %s) then %s (counter %s) named as the package names them', (a, ca, b, cb) => {
  const fast = new FastPrometheusSerializer();
  const pkg = new PrometheusSerializer(undefined, false, undefined, true, true);
  expect(fast.serialize(rm(a, ca))).toBe(pkg.serialize(rm(a, ca)));
  expect(fast.serialize(rm(b, cb))).toBe(pkg.serialize(rm(b, cb)));
});

test('OpenMetrics: the same pairs keep their own names', () => {
  const om = new OpenMetricsSerializer();
  expect(om.serialize(rm('abc', false))).toContain('\nabc 1\n');
  expect(om.serialize(rm('0abc', true))).toContain('\n_0abc_total 1\n');
  expect(om.serialize(rm('1abc', false))).toContain('\n_1abc 1\n');
  expect(om.serialize(rm('abc', true))).toContain('\nabc_total 1\n');
});
