/**
 * Shapes of the OpenMetrics writer (src/exporter/openmetrics.ts) the golden body does not
 * have, from the OpenMetrics 1.0 spec and the file's rules: TYPE, UNIT, HELP in that order;
 * a counter's family without `_total`, its sample with it; UNIT only for `_seconds`/`_bytes`
 * families; HELP escapes `\`, newline and `"`; a missing description is written as the
 * exporter package writes it; one family per name (the first wins) and no sample name equal
 * to another family's name; exponential histograms and refused names skipped; histogram
 * buckets stop after the first +Inf, then `_count` and `_sum` when set; canonical `le`
 * numbers (Go's %g, `.0` on integers) for negative and special values too; `# EOF` last.
 */
import { ValueType } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationTemporality, DataPointType, MetricData, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import type { ExemplarStore } from '../../src/exporter/exemplars';
import { canonicalNumber, OpenMetricsSerializer } from '../../src/exporter/openmetrics';

const T: [number, number] = [0, 0];
function gauge(name: string, value: number, description = 'd', attributes = {}): MetricData {
  return {
    descriptor: { name, description, unit: '', valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.GAUGE,
    dataPoints: [{ attributes, startTime: T, endTime: T, value }],
  };
}
function sum(name: string, value: number, isMonotonic: boolean): MetricData {
  return {
    descriptor: { name, description: 'd', unit: '', valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.SUM,
    isMonotonic,
    dataPoints: [{ attributes: {}, startTime: T, endTime: T, value }],
  };
}
function hist(name: string, boundaries: number[], counts: number[], extra: { count?: number; sum?: number } = { count: 1, sum: 2 }, attributes = {}): MetricData {
  return {
    descriptor: { name, description: 'h', unit: '', valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.HISTOGRAM,
    dataPoints: [{ attributes, startTime: T, endTime: T, value: { buckets: { boundaries, counts }, ...extra } as never }],
  };
}
const body = (...metrics: MetricData[]): string =>
  new OpenMetricsSerializer().serialize({ resource: resourceFromAttributes({}), scopeMetrics: [{ scope: { name: 's' }, metrics }] } as ResourceMetrics);

test('a counter: family without _total, sample with it; a non-monotonic sum is a gauge', () => {
  expect(body(sum('cuzk_x', 3, true))).toBe('# TYPE cuzk_x counter\n# HELP cuzk_x d\ncuzk_x_total 3\n# EOF\n');
  expect(body(sum('cuzk_y_total', 3, true))).toBe('# TYPE cuzk_y counter\n# HELP cuzk_y d\ncuzk_y_total 3\n# EOF\n');
  expect(body(sum('cuzk_z', -1, false))).toBe('# TYPE cuzk_z gauge\n# HELP cuzk_z d\ncuzk_z -1\n# EOF\n');
});

test('UNIT for _seconds and _bytes families only, after TYPE and before HELP', () => {
  expect(body(gauge('a_bytes', 1))).toBe('# TYPE a_bytes gauge\n# UNIT a_bytes bytes\n# HELP a_bytes d\na_bytes 1\n# EOF\n');
  expect(body(sum('b_seconds', 2, true))).toBe('# TYPE b_seconds counter\n# UNIT b_seconds seconds\n# HELP b_seconds d\nb_seconds_total 2\n# EOF\n');
  expect(body(gauge('c_seconds_max', 1))).not.toContain('# UNIT');
  expect(body(gauge('seconds', 1))).not.toContain('# UNIT');
  expect(body(gauge('xbytes', 1))).not.toContain('# UNIT');
});

test('HELP escapes backslash, newline and double quote; a missing description as the package writes it', () => {
  expect(body(gauge('g', 1, 'a\\b\nc"d'))).toContain('# HELP g a\\\\b\\nc\\"d\n');
  expect(body(gauge('g', 1, 'plain'))).toContain('# HELP g plain\n');
  expect(body(gauge('g', 1, ''))).toContain('# HELP g description missing\n');
});

test('one family per name, the first wins; no sample name equal to another family name; refused names skipped', () => {
  expect(body(gauge('g', 1), gauge('g', 2))).toBe('# TYPE g gauge\n# HELP g d\ng 1\n# EOF\n');
  // A counter x (sample x_total) then a gauge x_total: the gauge would be a second x_total.
  expect(body(sum('x', 1, true), gauge('x_total', 2))).toBe('# TYPE x counter\n# HELP x d\nx_total 1\n# EOF\n');
  // A gauge x then a counter x (family x again): skipped.
  expect(body(gauge('x', 1), sum('x', 2, true))).toBe('# TYPE x gauge\n# HELP x d\nx 1\n# EOF\n');
  // A gauge x_total, then a counter x_total (family x, sample x_total taken).
  expect(body(gauge('x_total', 1), sum('x_total', 2, true))).toBe('# TYPE x_total gauge\n# HELP x_total d\nx_total 1\n# EOF\n');
  // A counter named only "_total": its family would be empty.
  expect(body(sum('_total', 1, true), gauge('g', 1))).toBe('# TYPE g gauge\n# HELP g d\ng 1\n# EOF\n');
  expect(body(gauge('..', 1))).toBe('# EOF\n');
  const exp: MetricData = { ...gauge('e', 1), dataPointType: DataPointType.EXPONENTIAL_HISTOGRAM } as unknown as MetricData;
  expect(body(exp, gauge('g', 1))).toBe('# TYPE g gauge\n# HELP g d\ng 1\n# EOF\n');
  expect(body()).toBe('# EOF\n');
});

test('the same serializer twice: names from its cache give the same body', () => {
  const s = new OpenMetricsSerializer();
  const rm = { resource: resourceFromAttributes({}), scopeMetrics: [{ scope: { name: 's' }, metrics: [sum('c', 1, true), gauge('..', 1), gauge('c', 5)] }] } as ResourceMetrics;
  const first = s.serialize(rm);
  expect(first).toBe('# TYPE c counter\n# HELP c d\nc_total 1\n# EOF\n');
  expect(s.serialize(rm)).toBe(first);
  expect(s.serializeBody(rm).toString('utf8')).toBe(first);
});

test('histogram lines: cumulative buckets with canonical le, stopping after the first +Inf; _count and _sum when set', () => {
  expect(body(hist('h_seconds', [0.5, 1e-5, 2], [1, 2, 3, 4], { count: 10, sum: 7.5 }, { k: 'v' }))).toBe(
    [
      '# TYPE h_seconds histogram',
      '# UNIT h_seconds seconds',
      '# HELP h_seconds h',
      'h_seconds_bucket{k="v",le="0.5"} 1',
      'h_seconds_bucket{k="v",le="1e-05"} 3',
      'h_seconds_bucket{k="v",le="2.0"} 6',
      'h_seconds_bucket{k="v",le="+Inf"} 10',
      'h_seconds_count{k="v"} 10',
      'h_seconds_sum{k="v"} 7.5',
      '# EOF',
      '',
    ].join('\n'),
  );
  // An explicit +Inf bound: one +Inf line, the extra bucket after it dropped.
  expect(body(hist('h', [1, Infinity], [1, 1, 5], {}))).toBe('# TYPE h histogram\n# HELP h h\nh_bucket{le="1.0"} 1\nh_bucket{le="+Inf"} 2\n# EOF\n');
  expect(body(hist('h', [1], [0, 0], { count: 0 }))).toBe('# TYPE h histogram\n# HELP h h\nh_bucket{le="1.0"} 0\nh_bucket{le="+Inf"} 0\nh_count 0\n# EOF\n');
  expect(body(hist('h', [1], [0, 0], { sum: 0 }))).toBe('# TYPE h histogram\n# HELP h h\nh_bucket{le="1.0"} 0\nh_bucket{le="+Inf"} 0\nh_sum 0\n# EOF\n');
});

test('a serializer reused with new bounds or a new bucket count for the same attribute set writes the new lines', () => {
  const s = new OpenMetricsSerializer();
  const attrs = { a: '1' };
  const one = (m: MetricData) => s.serialize({ resource: resourceFromAttributes({}), scopeMetrics: [{ scope: { name: 's' }, metrics: [m] }] } as ResourceMetrics);
  const b1 = [1];
  expect(one(hist('h', b1, [1, 1], {}, attrs))).toContain('h_bucket{a="1",le="1.0"} 1\nh_bucket{a="1",le="+Inf"} 2\n');
  expect(one(hist('h', [2], [1, 1], {}, attrs))).toContain('h_bucket{a="1",le="2.0"} 1\n');
  const b3 = [2];
  expect(one(hist('h', b3, [1, 1], {}, attrs))).toContain('h_bucket{a="1",le="2.0"} 1\n');
  // Same bounds object, one bucket fewer (a +Inf-less shape): the lines follow the counts.
  expect(one(hist('h', b3, [4], {}, attrs))).toBe('# TYPE h histogram\n# HELP h h\nh_bucket{a="1",le="2.0"} 4\n# EOF\n');
});

test('canonical numbers: negative, special and boundary exponents', () => {
  const cases: [number, string][] = [
    [0, '0.0'],
    [-0, '-0.0'],
    [Infinity, '+Inf'],
    [NaN, 'NaN'],
    [-Infinity, '-Inf'],
    [-1, '-1.0'],
    [-1e-5, '-1e-05'],
    [-2e6, '-2e+06'],
    [999999, '999999.0'],
    [0.00011, '0.00011'],
    [9.9e-5, '9.9e-05'],
    [1e100, '1e+100'],
    [1.25e-100, '1.25e-100'],
    [5e-324, '5e-324'],
  ];
  for (const [v, s] of cases) expect([v, canonicalNumber(v)]).toEqual([v, s]);
});

test('a body much larger than the last one is written whole', () => {
  const s = new OpenMetricsSerializer();
  const small = { resource: resourceFromAttributes({}), scopeMetrics: [{ scope: { name: 's' }, metrics: [gauge('g', 1)] }] } as ResourceMetrics;
  s.serialize(small);
  const many = Array.from({ length: 400 }, (_, i) => gauge(`g${i}`, i, 'x'.repeat(50)));
  const big = s.serialize({ resource: resourceFromAttributes({}), scopeMetrics: [{ scope: { name: 's' }, metrics: many }] } as ResourceMetrics);
  expect(big.split('\n').filter((l) => /^g\d+ /.test(l))).toHaveLength(400);
  expect(big.endsWith('g399 399\n# EOF\n')).toBe(true);
});

test('exemplars: each after the value of its own bucket line, only where the store has one, only for series with a row', () => {
  const row = { stand: 'in' };
  const asked: [string, unknown][] = [];
  const store = {
    row: (name: string, attributes: unknown) => (asked.push([name, attributes]), name === 'h_seconds' ? row : null),
    text: (r: unknown, i: number) => (r === row && i === 1 ? ' # {job_id="j"} 0.5 1.000' : r === row && i === 2 ? ' # {job_id="k"} 9 2.000' : ''),
  } as unknown as ExemplarStore;
  const rm = { resource: resourceFromAttributes({}), scopeMetrics: [{ scope: { name: 's' }, metrics: [hist('h_seconds', [0.1, 1], [1, 2, 3], { count: 6 }, { k: 'v' }), hist('g', [1], [1, 1], {})] }] } as ResourceMetrics;
  expect(new OpenMetricsSerializer().serialize(rm, store)).toBe(
    [
      '# TYPE h_seconds histogram',
      '# UNIT h_seconds seconds',
      '# HELP h_seconds h',
      'h_seconds_bucket{k="v",le="0.1"} 1',
      'h_seconds_bucket{k="v",le="1.0"} 3 # {job_id="j"} 0.5 1.000',
      'h_seconds_bucket{k="v",le="+Inf"} 6 # {job_id="k"} 9 2.000',
      'h_seconds_count{k="v"} 6',
      '# TYPE g histogram',
      '# HELP g h',
      'g_bucket{le="1.0"} 1',
      'g_bucket{le="+Inf"} 2',
      '# EOF',
      '',
    ].join('\n'),
  );
  expect(asked).toEqual([
    ['h_seconds', { k: 'v' }],
    ['g', {}],
  ]);
});

test('bounds out of order (a bound after +Inf) are written as given: the same bucket series as the 0.0.4 body', () => {
  // Never produced (the SDK sorts its bounds and drops infinities; histograms.ts has fixed
  // increasing tables), but the file's first rule is that OpenMetrics carries the series 0.0.4
  // does: the package writes le 1, +Inf, 5 (cumulative 1, 3, 6), then stops at the next
  // bucket without a bound.
  const m = hist('h', [1, Infinity, 5], [1, 2, 3, 4], {});
  expect(body(m)).toBe('# TYPE h histogram\n# HELP h h\nh_bucket{le="1.0"} 1\nh_bucket{le="+Inf"} 3\nh_bucket{le="5.0"} 6\n# EOF\n');
  const pkg = new PrometheusSerializer(undefined, false, undefined, true, true).serialize({ resource: resourceFromAttributes({}), scopeMetrics: [{ scope: { name: 's' }, metrics: [m] }] } as ResourceMetrics);
  const series = (text: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith('h_bucket'))
      .map((l) => /le="([^"]+)"\} (\S+)/.exec(l)!.slice(1).map((x) => (x === '+Inf' ? Infinity : Number(x))));
  expect(series(body(m))).toEqual(series(pkg));
  expect(series(pkg)).toEqual([
    [1, 1],
    [Infinity, 3],
    [5, 6],
  ]);
});
