/**
 * Edges of the exemplar rendering (src/exporter/exemplars.ts) and of the histogram
 * MetricData (src/exporter/histograms.ts) on stand-in tables, from the files' rules:
 *  - an exemplar is ` # {job_id="…"[,partition="P"]} value seconds.millis` for a bucket
 *    with an observation (time 0: none), nothing past the row's width; partition only for
 *    partition histograms (index ≥ 0, 0 included); ids past the 128-code-point budget of
 *    OpenMetrics shortened (code points, not UTF-16 units); label values escaped;
 *  - a histogram series' start time is its first observation (ms → [s, ns] as the SDK's
 *    millisToHrTime), min/max only once it has observations, counts copied; a family
 *    without series is left out; GPU series labelled by their GPU label.
 */
import type { HistogramTable } from '../../src/engine/model/histogram-table';
import type { ModelHistograms } from '../../src/engine/model/model-histograms';
import { EXEMPLAR_HISTOGRAMS, EXEMPLAR_LABELSET_LIMIT, ExemplarStore, shortenId } from '../../src/exporter/exemplars';
import { HISTOGRAM_FAMILIES, histogramMetrics } from '../../src/exporter/histograms';

function exTable(width: number, slots: { j: number; ms: number; id: string; p: number; v: number }[]): HistogramTable {
  const n = width * 5;
  const t = {
    width,
    exTimeMs: new Float64Array(n),
    exId: new Array<string | undefined>(n),
    exPartition: new Int32Array(n).fill(-1),
    exValue: new Float64Array(n),
  };
  for (const s of slots) {
    t.exTimeMs[s.j] = s.ms;
    t.exId[s.j] = s.id;
    t.exPartition[s.j] = s.p;
    t.exValue[s.j] = s.v;
  }
  return t as unknown as HistogramTable;
}

function store(tables: Partial<Record<string, HistogramTable>>) {
  const empty = exTable(3, []);
  return new ExemplarStore({
    partitionGpuSeconds: tables.gpu ?? empty,
    partitionSynthesisSeconds: tables.synth ?? empty,
    proofSeconds: tables.proof ?? empty,
    queueWaitSeconds: tables.queue ?? empty,
  } as unknown as ModelHistograms);
}

describe('exemplars', () => {
  test('the histograms that carry them, and which name a partition', () => {
    expect(EXEMPLAR_HISTOGRAMS).toEqual({
      cuzk_partition_gpu_duration_seconds: true,
      cuzk_partition_synthesis_duration_seconds: true,
      cuzk_proof_duration_seconds: false,
      cuzk_proof_queue_wait_seconds: false,
    });
    expect(EXEMPLAR_LABELSET_LIMIT).toBe(128);
  });

  test('rows by histogram and kind: the kind selects the row offset', () => {
    const gpu = exTable(3, [
      { j: 0, ms: 1000, id: 'k0', p: 1, v: 0.1 },
      { j: 3 * 4 + 2, ms: 2000, id: 'other-kind', p: 0, v: 7 },
    ]);
    const s = store({ gpu });
    const r0 = s.row('cuzk_partition_gpu_duration_seconds', { proof_kind: 'porep-c2' })!;
    expect(r0.offset).toBe(0);
    expect(s.text(r0, 0)).toBe(' # {job_id="k0",partition="1"} 0.1 1.000');
    const r4 = s.row('cuzk_partition_gpu_duration_seconds', { proof_kind: 'other' })!;
    expect(r4.offset).toBe(12);
    expect(s.text(r4, 2)).toBe(' # {job_id="other-kind",partition="0"} 7 2.000');
    expect(s.row('cuzk_partition_gpu_duration_seconds', { proof_kind: 'nope' })).toBeNull();
    expect(s.row('cuzk_partition_gpu_duration_seconds', {})).toBeNull();
    expect(s.row('cuzk_partition_finalize_duration_seconds', { proof_kind: 'porep-c2' })).toBeNull();
    for (const name of Object.keys(EXEMPLAR_HISTOGRAMS)) expect(s.row(name, { proof_kind: 'winning-post' })).not.toBeNull();
  });

  test('each histogram renders its own table', () => {
    const mk = (id: string) => exTable(2, [{ j: 0, ms: 5, id, p: -1, v: 1 }]);
    const s = store({ gpu: mk('g'), synth: mk('s'), proof: mk('p'), queue: mk('q') });
    const text = (n: string) => s.text(s.row(n, { proof_kind: 'porep-c2' })!, 0);
    expect(text('cuzk_partition_gpu_duration_seconds')).toContain('"g"');
    expect(text('cuzk_partition_synthesis_duration_seconds')).toContain('"s"');
    expect(text('cuzk_proof_duration_seconds')).toContain('"p"');
    expect(text('cuzk_proof_queue_wait_seconds')).toContain('"q"');
  });

  test('no partition label for proof histograms; time to the millisecond; nothing past the width or where unset', () => {
    const proof = exTable(3, [
      { j: 1, ms: 1700000000123.4, id: 'job "a"\n\\', p: -1, v: 2.5 },
      { j: 3, ms: 999, id: 'next-row', p: -1, v: 1 },
    ]);
    const s = store({ proof });
    const r = s.row('cuzk_proof_duration_seconds', { proof_kind: 'porep-c2' })!;
    expect(s.text(r, 1)).toBe(' # {job_id="job \\"a\\"\\n\\\\"} 2.5 1700000000.123');
    expect(s.text(r, 0)).toBe('');
    expect(s.text(r, 3)).toBe(''); // the next kind's first bucket is not this row's
  });

  test('the id budget: whole up to the limit minus the other labels, counted in code points', () => {
    // partition="12": others = 6 + 9 + 2 = 17 code points, budget 111.
    const fits = 'x'.repeat(111);
    const gpu = exTable(2, [
      { j: 0, ms: 1, id: fits, p: 12, v: 1 },
      { j: 1, ms: 1, id: `${fits}y`, p: 12, v: 1 },
    ]);
    const s = store({ gpu });
    const r = s.row('cuzk_partition_gpu_duration_seconds', { proof_kind: 'porep-c2' })!;
    expect(s.text(r, 0)).toBe(` # {job_id="${fits}",partition="12"} 1 0.001`);
    const short = /job_id="([^"]*)"/.exec(s.text(r, 1))![1];
    expect(Array.from(short)).toHaveLength(111);
    expect(short).toBe(shortenId(`${fits}y`, 17));
  });

  test('shortenId: exact budget, head and tail around …, the hash after #, astral characters whole', () => {
    // budget 26: keep 26 - 16 - 2 = 8: head 4, tail 4.
    const s = shortenId('abcdefghijklmnopqrstuvwxyz0', 102);
    expect(s).toMatch(/^abcd…xyz0#[0-9a-f]{16}$/);
    // odd keep: head takes the extra one. budget 27: keep 9: head 5, tail 4.
    expect(shortenId('abcdefghijklmnopqrstuvwxyz01', 101)).toMatch(/^abcde…yz01#[0-9a-f]{16}$/);
    // keep 1: head only, no tail.
    expect(shortenId('abcdefghijklmnopqrstuvwxyz', 109)).toMatch(/^a…#[0-9a-f]{16}$/);
    // a budget below the hash: no head, no tail.
    expect(shortenId('abcdefghijklmnopqrstuvwxyz', 120)).toMatch(/^…#[0-9a-f]{16}$/);
    // astral characters: 61 rockets (122 units) fit a 61-point budget whole; 62 do not.
    expect(shortenId('🚀'.repeat(61), 67)).toBe('🚀'.repeat(61));
    const r = shortenId('🚀'.repeat(62), 67);
    expect(Array.from(r)).toHaveLength(61);
    expect(r.startsWith('🚀'.repeat(22) + '…')).toBe(true);
    // A lone high surrogate at the end counts as one code point.
    const lone = `${'a'.repeat(59)}\ud83d`;
    expect(shortenId(lone, 68)).toBe(lone);
    // A long id whose UTF-16 length is over the budget but whose code points are not.
    const mixed = `${'🚀'.repeat(50)}${'b'.repeat(10)}`; // 110 units, 60 points
    expect(shortenId(mixed, 68)).toBe(mixed);
    expect(Array.from(shortenId(`${mixed}c`, 68))).toHaveLength(60);
  });
});

function histTable(o: { size: number; order: number[]; bounds: number[]; buckets: number[]; count: number[]; sum: number[]; min: number[]; max: number[]; startMs: number[] }): HistogramTable {
  return { ...o, width: o.bounds.length + 1 } as unknown as HistogramTable;
}
const emptyTable = histTable({ size: 0, order: [], bounds: [1], buckets: [], count: [], sum: [], min: [], max: [], startMs: [] });

test('histogramMetrics: families with series only, their points in series order, start from the first observation', () => {
  const gpuIdle = histTable({
    size: 2,
    order: [1, 0],
    bounds: [0.5, 2],
    buckets: [1, 0, 2, 0, 0, 0],
    count: [3, 0],
    sum: [4.5, 0],
    min: [0.25, 0],
    max: [2.5, 0],
    startMs: [1500.25, 2999],
  });
  const proof = histTable({ size: 1, order: [3], bounds: [1], buckets: [0, 0, 0, 0, 0, 0, 5, 6], count: [0, 0, 0, 11], sum: [0, 0, 0, 9], min: [0, 0, 0, 0.5], max: [0, 0, 0, 3], startMs: [0, 0, 0, 7] });
  const h = {
    partitionGpuSeconds: emptyTable,
    partitionFinalizeSeconds: emptyTable,
    partitionSynthesisSeconds: emptyTable,
    proofSeconds: proof,
    queueWaitSeconds: emptyTable,
    gpuIdleGapSeconds: gpuIdle,
    gpuLabels: ['0', '3'],
  } as unknown as ModelHistograms;
  const end: [number, number] = [9, 9];
  const ms = histogramMetrics(h, end);
  expect(ms.map((m) => m.descriptor.name)).toEqual(['cuzk_proof_duration_seconds', 'cuzk_gpu_idle_gap_seconds']);
  const [p, g] = ms;
  expect(p.descriptor).toEqual({ name: 'cuzk_proof_duration_seconds', description: 'Submit to result of completed proofs.', unit: '', valueType: 1 });
  expect(p.aggregationTemporality).toBe(1); // CUMULATIVE
  expect(p.dataPointType).toBe(0); // HISTOGRAM
  expect(p.dataPoints).toEqual([
    { attributes: { proof_kind: 'winning-post' }, startTime: [0, 7e6], endTime: end, value: { min: 0.5, max: 3, sum: 9, buckets: { boundaries: [1], counts: [5, 6] }, count: 11 } },
  ]);
  expect(g.dataPoints).toEqual([
    { attributes: { gpu: '3' }, startTime: [2, 999e6], endTime: end, value: { min: undefined, max: undefined, sum: 0, buckets: { boundaries: [0.5, 2], counts: [0, 0, 0] }, count: 0 } },
    { attributes: { gpu: '0' }, startTime: [1, 500250000], endTime: end, value: { min: 0.25, max: 2.5, sum: 4.5, buckets: { boundaries: [0.5, 2], counts: [1, 0, 2] }, count: 3 } },
  ]);
  // Counts are copies: later observations do not move this collection.
  (gpuIdle as unknown as { buckets: number[] }).buckets[0] = 99;
  expect((g.dataPoints[1].value as { buckets: { counts: number[] } }).buckets.counts).toEqual([1, 0, 2]);
  // The same GPU label: the same attribute object (the label writer caches text by object).
  expect(histogramMetrics(h, end)[1].dataPoints[1].attributes).toBe(g.dataPoints[1].attributes);
});

test('the families, in the order the SDK instruments were created, each with its own table', () => {
  expect(HISTOGRAM_FAMILIES.map((f) => f.name)).toEqual([
    'cuzk_partition_gpu_duration_seconds',
    'cuzk_partition_finalize_duration_seconds',
    'cuzk_partition_synthesis_duration_seconds',
    'cuzk_proof_duration_seconds',
    'cuzk_proof_queue_wait_seconds',
    'cuzk_gpu_idle_gap_seconds',
  ]);
  const h = {
    partitionGpuSeconds: 'a',
    partitionFinalizeSeconds: 'b',
    partitionSynthesisSeconds: 'c',
    proofSeconds: 'd',
    queueWaitSeconds: 'e',
    gpuIdleGapSeconds: 'f',
    gpuLabels: ['7'],
  } as unknown as ModelHistograms;
  expect(HISTOGRAM_FAMILIES.map((f) => f.table(h))).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  expect(HISTOGRAM_FAMILIES.map((f) => f.attributes(h, 0))).toEqual([
    { proof_kind: 'porep-c2' },
    { proof_kind: 'porep-c2' },
    { proof_kind: 'porep-c2' },
    { proof_kind: 'porep-c2' },
    { proof_kind: 'porep-c2' },
    { gpu: '7' },
  ]);
  expect(HISTOGRAM_FAMILIES[0].attributes(h, 4)).toEqual({ proof_kind: 'other' });
});

describe('issue 23: survivors of the exemplars.ts and histograms.ts Stryker run', () => {
  test('code points past the budget: only high surrogates (U+D800-U+DBFF) start a pair', () => {
    // U+10000 is \ud800\udc00, U+10FFFF is \udbff\udfff: the ends of the high-surrogate range.
    // 40 of them: 80 UTF-16 units, 40 code points: whole in a 50-point budget (others 78).
    for (const ch of ['\u{10000}', '\u{10FFFF}']) {
      const id = ch.repeat(40);
      expect(shortenId(id, 78)).toBe(id);
      expect(Array.from(shortenId(ch.repeat(51), 78))).toHaveLength(50);
    }
    // BMP characters at and above the surrogates (U+FF71, U+E000) are one code point each:
    // 51 of them do not fit a 50-point budget.
    for (const ch of ['\uff71', '\ue000', '\udc00']) {
      const id = ch.repeat(51);
      const s = shortenId(id, 78);
      expect(s).not.toBe(id);
      expect(Array.from(s)).toHaveLength(50);
    }
  });

  test('the GPU label cache is bounded at 4096 labels: past it, a fresh attribute set per call', () => {
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const fresh = require('../../src/exporter/histograms') as typeof import('../../src/exporter/histograms');
      const gpu = fresh.HISTOGRAM_FAMILIES[5];
      const labels = Array.from({ length: 4097 }, (_, i) => `g${i}`);
      const h = { gpuLabels: labels } as unknown as ModelHistograms;
      const first = labels.map((_, s) => gpu.attributes(h, s));
      const again = labels.map((_, s) => gpu.attributes(h, s));
      expect(again[0]).toBe(first[0]);
      expect(again[4095]).toBe(first[4095]);
      expect(again[4096]).not.toBe(first[4096]);
      expect(again[4096]).toEqual({ gpu: 'g4096' });
    });
  });
});
