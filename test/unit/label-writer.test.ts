/**
 * The shared name and label rules of both writers (src/exporter/label-writer.ts), from the
 * Prometheus text format 0.0.4 (HELP escapes `\` and newline; label values escape `\`,
 * newline and `"`; `+Inf`/`-Inf`/`NaN`) and the exporter package's name rules
 * (@opentelemetry/exporter-prometheus: characters outside [a-zA-Z0-9_] become `_`, runs of
 * `_` one `_`; a leading digit gets a `_` in front; monotonic sums end in `_total`; a name
 * that comes out empty or `_` is refused). The package's own serializer is the second oracle
 * where the rule is its behaviour.
 */
import type { Attributes } from '@opentelemetry/api';
import { ValueType } from '@opentelemetry/api';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationTemporality, DataPointType, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import {
  CACHE_LIMIT,
  cacheSet,
  concat,
  countSumLines,
  escapeString,
  LabelWriter,
  sampleLines,
  sampleName,
  sanitizeName,
  valueString,
} from '../../src/exporter/label-writer';

test('escapeString: backslash and newline, not the double quote (0.0.4 HELP)', () => {
  expect(escapeString('a\\b\nc"d')).toBe('a\\\\b\\nc"d');
  expect(escapeString('\\\\\n\n')).toBe('\\\\\\\\\\n\\n');
  expect(escapeString('plain')).toBe('plain');
});

test('sanitizeName: every invalid character one underscore, runs of underscores one', () => {
  expect(sanitizeName('a.b-c d')).toBe('a_b_c_d');
  expect(sanitizeName('a..b')).toBe('a_b');
  expect(sanitizeName('a___b__')).toBe('a_b_');
  expect(sanitizeName('Az09_')).toBe('Az09_');
  expect(sanitizeName('é')).toBe('_');
});

test('valueString: infinities as +Inf/-Inf, the rest as JavaScript writes numbers', () => {
  expect(valueString(Infinity)).toBe('+Inf');
  expect(valueString(-Infinity)).toBe('-Inf');
  expect(valueString(NaN)).toBe('NaN');
  expect(valueString(1.5)).toBe('1.5');
  expect(valueString(-0.25)).toBe('-0.25');
  expect(valueString(1e21)).toBe('1e+21');
});

test('cacheSet: the cache never holds more than CACHE_LIMIT entries; full, it is cleared first', () => {
  const m = new Map<number, number>();
  for (let i = 0; i < CACHE_LIMIT; i++) cacheSet(m, i, i);
  expect(m.size).toBe(CACHE_LIMIT);
  expect(m.get(0)).toBe(0);
  cacheSet(m, -1, 7);
  expect(m.size).toBe(1);
  expect(m.get(-1)).toBe(7);
  expect(m.has(0)).toBe(false);
  expect(CACHE_LIMIT).toBe(10_000);
});

test('sampleName: the package name rules', () => {
  expect(sampleName('cuzk_up', false)).toBe('cuzk_up');
  expect(sampleName('cuzk_proofs', true)).toBe('cuzk_proofs_total');
  expect(sampleName('cuzk_proofs_total', true)).toBe('cuzk_proofs_total');
  expect(sampleName('cuzk_proofs_total', false)).toBe('cuzk_proofs_total');
  expect(sampleName('cuzk.proofs', false)).toBe('cuzk_proofs');
  expect(sampleName('9lives', false)).toBe('_9lives');
  expect(sampleName('0', true)).toBe('_0_total');
  expect(sampleName('lives9', false)).toBe('lives9');
  expect(sampleName('', false)).toBeUndefined();
  expect(sampleName('.', false)).toBeUndefined();
  expect(sampleName('..', true)).toBeUndefined();
  expect(sampleName('_', false)).toBeUndefined();
  expect(sampleName('a', false)).toBe('a');
  // Escaped before it is sanitised, as the package does: a newline is `\n`, then `_n`.
  expect(sampleName('a\nb', false)).toBe('a_nb');
});

test('countSumLines: each line only when its value is set (0 is set)', () => {
  expect(countSumLines('h', '{a="1"}', { count: 3, sum: 1.5 })).toBe('h_count{a="1"} 3\nh_sum{a="1"} 1.5\n');
  expect(countSumLines('h', '', { count: 0, sum: 0 })).toBe('h_count 0\nh_sum 0\n');
  expect(countSumLines('h', '', { sum: Infinity })).toBe('h_sum +Inf\n');
  expect(countSumLines('h', '', { count: 2 })).toBe('h_count 2\n');
  expect(countSumLines('h', '', {})).toBe('');
});

describe('LabelWriter', () => {
  test('labels in attribute order, names sanitised, values escaped (\\, newline, ")', () => {
    const w = new LabelWriter();
    expect(w.labels({})).toBe('');
    expect(w.labels({ b: '1', a: '2' })).toBe('b="1",a="2"');
    expect(w.labels({ 'x.y': 'v', 'a__b': 'w', c__: 'z' })).toBe('x_y="v",a_b="w",c_="z"');
    expect(w.labels({ v: 'q"uo\\te\nnl' })).toBe('v="q\\"uo\\\\te\\nnl"');
    // Twice the same text (from the cache) for an equal but new set.
    expect(w.labels({ v: 'q"uo\\te\nnl' })).toBe('v="q\\"uo\\\\te\\nnl"');
    expect(w.labels({ 'x.y': 'v2' })).toBe('x_y="v2"');
  });

  test('a key of invalid characters only is sanitised too; a value of escaped characters only is escaped', () => {
    const w = new LabelWriter();
    expect(w.labels({ '.': 'v' })).toBe('_="v"');
    expect(w.labels({ 'é-': 'v' })).toBe('_="v"');
    expect(w.labels({ q: '"' })).toBe('q="\\""');
    expect(w.labels({ b: '\\' })).toBe('b="\\\\"');
    expect(w.labels({ n: '\n' })).toBe('n="\\n"');
    expect(w.labels({ e: '' })).toBe('e=""');
  });

  test('an attribute set is read once: the same object again gets its text without being read', () => {
    const w = new LabelWriter();
    let reads = 0;
    const set: Attributes = {};
    Object.defineProperty(set, 'k', { enumerable: true, get: () => (reads++, 'v') });
    expect(w.labels(set)).toBe('k="v"');
    expect(w.labels(set)).toBe('k="v"');
    expect(w.lineStart('m', set)).toBe('m{k="v"} ');
    expect(w.lineStart('n', set)).toBe('n{k="v"} ');
    expect(reads).toBe(1);
  });

  test('values that are not strings: JSON, undefined empty', () => {
    const w = new LabelWriter();
    expect(w.labels({ n: 3, b: true, a: ['x', 'y'], u: undefined })).toBe('n="3",b="true",a="[\\"x\\",\\"y\\"]",u=""');
  });

  test('inherited properties are not labels', () => {
    const w = new LabelWriter();
    const a = Object.create({ inherited: 'no' }) as Attributes;
    a.own = 'yes';
    expect(w.labels(a)).toBe('own="yes"');
  });

  test('lineStart and its bytes; an empty set gives a bare name', () => {
    const w = new LabelWriter();
    const set = { gpu: 'é0' };
    expect(w.lineStart('m', {})).toBe('m ');
    expect(w.lineStart('m', set)).toBe('m{gpu="é0"} ');
    expect(w.lineStart('n', set)).toBe('n{gpu="é0"} ');
    expect(w.lineStart('m', set)).toBe('m{gpu="é0"} ');
    expect(w.lineStartBytes('m', set)).toEqual(Buffer.from('m{gpu="é0"} ', 'utf8'));
    expect(w.lineStartBytes('n', set)).toEqual(Buffer.from('n{gpu="é0"} ', 'utf8'));
    expect(w.lineStartBytes('m', set)).toBe(w.lineStartBytes('m', set));
    expect(w.lineStartBytes('m', {})).toEqual(Buffer.from('m ', 'utf8'));
  });

  test('past CACHE_LIMIT names, keys and values the text stays right', () => {
    const w = new LabelWriter();
    const set = { 'k.k': 'v"v' };
    for (let i = 0; i <= CACHE_LIMIT + 1; i++) {
      w.lineStart(`name${i}`, set);
      w.lineStartBytes(`name${i}`, set);
      w.labels({ [`k.${i}`]: `v"${i}` });
    }
    expect(w.lineStart('name0', set)).toBe('name0{k_k="v\\"v"} ');
    expect(w.lineStartBytes('name1', set).toString()).toBe('name1{k_k="v\\"v"} ');
    expect(w.labels({ 'k.5': 'v"5' })).toBe('k_5="v\\"5"');
  });

  test('sampleLines: one line per point', () => {
    const w = new LabelWriter();
    expect(sampleLines('g', [{ attributes: {}, value: 1 }, { attributes: { a: 'x' }, value: -Infinity }], w)).toBe('g 1\ng{a="x"} -Inf\n');
    expect(sampleLines('g', [], w)).toBe('');
  });

  test('the same label text as the package serializer writes', () => {
    const attrs: Attributes[] = [{ 'we.ird': 'a"b\\c\nd', n: 1, b: false, arr: [1, 'x'] }, { __x__: 'y', 'a-b': '' }, { '-': '"' }, { '.': '\\' }];
    const rm: ResourceMetrics = {
      resource: resourceFromAttributes({}),
      scopeMetrics: [
        {
          scope: { name: 's' },
          metrics: [
            {
              descriptor: { name: 'g', description: 'd', unit: '', valueType: ValueType.DOUBLE },
              aggregationTemporality: AggregationTemporality.CUMULATIVE,
              dataPointType: DataPointType.GAUGE,
              dataPoints: attrs.map((a) => ({ attributes: a, startTime: [0, 0], endTime: [0, 0], value: 1 })),
            },
          ],
        },
      ],
    };
    const pkg = new PrometheusSerializer(undefined, false, undefined, true, true).serialize(rm);
    const w = new LabelWriter();
    const ours = sampleLines('g', attrs.map((a) => ({ attributes: a, value: 1 })), w);
    const pkgLines = pkg.split('\n').filter((l) => l.startsWith('g'));
    expect(ours.trimEnd().split('\n')).toEqual(pkgLines);
  });
});

test('concat joins the pieces in order', () => {
  expect(concat([])).toBe('');
  expect(concat(['a', 'bc', '', 'd'])).toBe('abcd');
});
