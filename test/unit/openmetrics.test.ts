/**
 * OpenMetrics 1.0.0 exposition (src/exporter/openmetrics.ts) with exemplars
 * (src/exporter/exemplars.ts), and content negotiation (src/exporter/negotiate.ts):
 *  - golden body for the scripted sequence of test/golden (its own file, like the 0.0.4 one);
 *  - the same samples as the 0.0.4 body of the same collection;
 *  - valid for a strict OpenMetrics parser (the Prometheus Python client's, Debian
 *    python3-prometheus-client), exemplars included;
 *  - canonical `le` numbers, the 128-code-point exemplar limit and how longer ids are
 *    shortened; Accept / Accept-Encoding negotiation.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { StateModel } from '../../src/engine/model/state-model';
import { ExemplarStore, EXEMPLAR_LABELSET_LIMIT, shortenId } from '../../src/exporter/exemplars';
import { acceptsGzip, negotiateFormat } from '../../src/exporter/negotiate';
import { AggregationTemporality, DataPointType, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { ValueType } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { canonicalNumber, OpenMetricsSerializer } from '../../src/exporter/openmetrics';
import { Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';
import { goldenSource } from '../helpers/golden-script';
import { parse } from '../helpers/prom-text';

const GOLDEN = path.join(__dirname, '..', 'golden', 'scripted-metrics.openmetrics.txt');
const PYTHON = '/usr/bin/python3';
const CHECKER = path.join(__dirname, '..', 'helpers', 'openmetrics-check.py');

/** Longer than any exemplar budget: shows the documented shortening in the golden body. */
export const LONG_ID = `proof-share/snap-update/${'0123456789abcdef'.repeat(8)}/partitioned`;
/** Job ids of the golden script's job handles, as a prover would report them. */
export const GOLDEN_IDS: Record<number, string> = {
  1: 'ps-snap-7c9e6679-7425-40de-944b-e07fc1f90ae7',
  2: 'winning-f01234-e7',
  3: 'porep-f01234-s000042-3f2a9c1b',
  4: 'wpost-f01234-dl17-a1b2c3d4',
  5: LONG_ID,
};

/** The golden source with job ids and a pinned exemplar clock; both bodies of one collection. */
async function goldenBodies(): Promise<{ text: string; om: string; telemetry: Telemetry }> {
  let telemetry!: Telemetry;
  let clock = Date.UTC(2026, 0, 1);
  goldenSource((s) => {
    (s as unknown as { jobId(h: number): string | undefined }).jobId = (h) => GOLDEN_IDS[h];
    telemetry = new Telemetry(s, { version: '0.0.0-test', logger: silentLogger, wallClockMs: () => (clock += 250) });
  });
  // One collection, both formats (as concurrent scrapers of both kinds would share it).
  const [text, om] = await Promise.all([telemetry.scrape('text'), telemetry.scrape('openmetrics')]);
  await telemetry.shutdown();
  return { text, om, telemetry };
}

/** test/golden/README.md's normalisation, for the OpenMetrics body. */
function normalise(body: string): string {
  return body
    .replace(/^(cuzk_exporter_scrape_duration_seconds) \S+$/m, '$1 <duration>')
    .replace(/(cuzk_exporter_build_info\{[^}]*version=")[^"]*"/, '$1<version>"');
}

function omCheck(body: string): { families: Record<string, string>; units: Record<string, string>; samples: number; exemplars: { name: string; labels: Record<string, string>; exemplar: { labels: Record<string, string>; value: number; timestamp: number } }[] } {
  expect(fs.existsSync(PYTHON)).toBe(true);
  const r = spawnSync(PYTHON, [CHECKER], { input: body, encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`OpenMetrics parser rejected the body: ${r.stderr}${r.error ?? ''}`);
  return JSON.parse(r.stdout);
}

/** Samples without exemplars, `le` compared as numbers: what Prometheus stores. */
function sampleSet(body: string): Map<string, number> {
  const lines = body
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.replace(/ # \{.*$/, ''));
  const out = new Map<string, number>();
  for (const s of parse(lines.join('\n'))) {
    const labels = { ...s.labels };
    if (labels.le !== undefined && labels.le !== '+Inf') labels.le = String(Number(labels.le));
    const key = `${s.name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (s.name === 'cuzk_exporter_scrape_duration_seconds') continue;
    out.set(key, s.value);
  }
  return out;
}

describe('OpenMetrics body', () => {
  test('matches test/golden/scripted-metrics.openmetrics.txt', async () => {
    const { om } = await goldenBodies();
    const body = normalise(om);
    if (process.env.UPDATE_GOLDEN === '1') fs.writeFileSync(GOLDEN, body);
    expect(body).toBe(fs.readFileSync(GOLDEN, 'utf8'));
  });

  test('has the same samples as the 0.0.4 body of the same collection, and the OpenMetrics shape', async () => {
    const { text, om } = await goldenBodies();
    expect(sampleSet(om)).toEqual(sampleSet(text));
    expect(om.endsWith('\n# EOF\n')).toBe(true);
    expect(om.split('\n').filter((l) => l === '# EOF')).toHaveLength(1);
    // Counters: family without _total, samples with it; units where the name ends in one.
    expect(om).toContain('# TYPE cuzk_proofs_completed counter\n# HELP cuzk_proofs_completed ');
    expect(om).toMatch(/^cuzk_proofs_completed_total\{proof_kind="snap-update"\} \d+$/m);
    expect(om).toContain('# TYPE cuzk_gpu_worker_busy_seconds counter\n# UNIT cuzk_gpu_worker_busy_seconds seconds\n');
    expect(om).toContain('# TYPE cuzk_memory_used_bytes gauge\n# UNIT cuzk_memory_used_bytes bytes\n');
    expect(om).toContain('# TYPE cuzk_partition_gpu_duration_seconds histogram\n# UNIT cuzk_partition_gpu_duration_seconds seconds\n');
    // Canonical le, no _created lines.
    expect(om).toContain('cuzk_partition_gpu_duration_seconds_bucket{proof_kind="snap-update",le="1.0"}');
    expect(text).toContain('cuzk_partition_gpu_duration_seconds_bucket{proof_kind="snap-update",le="1"}');
    expect(om).not.toMatch(/_created[{ ]/);
  });

  test('a strict OpenMetrics parser accepts it, with whole job ids in the exemplars', async () => {
    const { om } = await goldenBodies();
    const r = omCheck(om);
    expect(r.families.cuzk_proofs_completed).toBe('counter');
    expect(r.families.cuzk_partition_gpu_duration_seconds).toBe('histogram');
    expect(r.units.cuzk_partition_gpu_duration_seconds).toBe('seconds');
    expect(r.samples).toBe(sampleSet(om).size + 1); // + the scrape duration gauge
    const gpu = r.exemplars.filter((e) => e.name === 'cuzk_partition_gpu_duration_seconds_bucket');
    // snap-update job 1: partitions of 10 and 17 ms in the 0.01 and 0.025 buckets.
    const snap = gpu.filter((e) => e.labels.proof_kind === 'snap-update' && e.exemplar.labels.job_id === GOLDEN_IDS[1]);
    expect(snap.map((e) => [e.labels.le, e.exemplar.labels.partition, e.exemplar.value]).sort()).toEqual([
      ['0.01', '0', 0.01],
      ['0.025', '1', 0.017],
    ]);
    // The failed winning-post partition's GPU stage is observed too; its proof is not in
    // cuzk_proof_duration_seconds (completed proofs only), so it has no exemplar there.
    expect(gpu.some((e) => e.exemplar.labels.job_id === GOLDEN_IDS[2] && e.labels.le === '0.005')).toBe(true);
    const proof = r.exemplars.filter((e) => e.name === 'cuzk_proof_duration_seconds_bucket');
    expect(proof.map((e) => e.exemplar.labels)).toEqual([{ job_id: GOLDEN_IDS[1] }]);
    expect(r.exemplars.some((e) => e.name === 'cuzk_proof_queue_wait_seconds_bucket' && e.exemplar.labels.job_id === GOLDEN_IDS[4])).toBe(true);
    expect(r.exemplars.some((e) => e.name.startsWith('cuzk_gpu_idle_gap_seconds'))).toBe(false);
    // Every exemplar is within its bucket, inside the label limit, and timestamped.
    for (const e of r.exemplars) {
      expect(e.exemplar.value).toBeLessThanOrEqual(e.labels.le === '+Inf' ? Infinity : Number(e.labels.le));
      const cps = Object.entries(e.exemplar.labels).reduce((a, [k, v]) => a + Array.from(k).length + Array.from(v).length, 0);
      expect(cps).toBeLessThanOrEqual(EXEMPLAR_LABELSET_LIMIT);
      expect(e.exemplar.timestamp).toBeGreaterThan(Date.UTC(2026, 0, 1) / 1000);
    }
    // The long id is shortened as documented, and recognisably the same id.
    const long = r.exemplars.filter((e) => e.exemplar.labels.job_id !== undefined && !Object.values(GOLDEN_IDS).includes(e.exemplar.labels.job_id));
    expect(long.length).toBeGreaterThan(0);
    for (const e of long) expect(e.exemplar.labels.job_id).toBe(shortenId(LONG_ID, 'job_id'.length + (e.exemplar.labels.partition !== undefined ? 'partition'.length + e.exemplar.labels.partition.length : 0)));
  });

  test('the parser check can fail: it rejects a body without # EOF and an over-long exemplar', async () => {
    const { om } = await goldenBodies();
    expect(() => omCheck(om.replace('# EOF\n', ''))).toThrow(/invalid OpenMetrics: .*EOF/);
    const tooLong = om.replace(/job_id="ps-snap-[^"]*"/, `job_id="${'x'.repeat(130)}"`);
    expect(tooLong).not.toBe(om);
    expect(() => omCheck(tooLong)).toThrow(/invalid OpenMetrics: Exemplar labels are too long/);
  });
});

describe('exemplar labels', () => {
  test('ids that fit are whole; longer ones keep head, tail and a SHA-256 prefix, exactly at the limit', () => {
    const others = 'job_id'.length + 'partition'.length + 2;
    const fits = 'a'.repeat(EXEMPLAR_LABELSET_LIMIT - others);
    expect(shortenId(fits, others)).toBe(fits);
    const long = `${fits}b`;
    const s = shortenId(long, others);
    expect(Array.from(s).length).toBe(EXEMPLAR_LABELSET_LIMIT - others);
    const hash = createHash('sha256').update(long).digest('hex').slice(0, 16);
    expect(s.endsWith(`#${hash}`)).toBe(true);
    expect(s).toMatch(/^a+…a*b#[0-9a-f]{16}$/);
    // Same head and tail, different middle: still different.
    const x = `${'p'.repeat(80)}X${'q'.repeat(80)}`;
    const y = `${'p'.repeat(80)}Y${'q'.repeat(80)}`;
    expect(shortenId(x, 6)).not.toBe(shortenId(y, 6));
    expect(shortenId(x, 6)).toBe(shortenId(x, 6));
    // Code points, not UTF-16 units: 60 emoji are 120 units but fit a 122-point budget.
    const emoji = '🚀'.repeat(60);
    expect(shortenId(emoji, 6)).toBe(emoji);
    const emojiLong = '🚀'.repeat(200);
    expect(Array.from(shortenId(emojiLong, 6)).length).toBe(EXEMPLAR_LABELSET_LIMIT - 6);
  });

  test('recording: latest observation per bucket, only for known jobs and sane values; rendered escaped', () => {
    const ids: Record<number, string> = { 7: 'job "seven"\\x', 8: 'job-8' };
    let now = 1_000_000;
    let lookups = 0;
    const h = new StateModel().histograms;
    h.enableExemplars((j) => (lookups++, ids[j]), () => now);
    const store = new ExemplarStore(h);
    // Buckets of cuzk_partition_gpu_duration_seconds: ... 0.05 (3), 0.1 (4), 0.25 (5), 0.5 (6) ...
    h.partitionGpu(1, 0.3, 7, 3);
    now += 1000;
    h.partitionGpu(1, 0.5, 8, 4); // same bucket (le is inclusive): replaces
    h.partitionGpu(1, 0.05, 7, 0);
    h.partitionGpu(1, 0.07, 9, 1); // unknown job: kept out
    h.partitionGpu(1, NaN, 8, 1);
    h.partitionGpu(1, -1, 8, 1);
    h.partitionGpu(1, 5, undefined, 1);
    expect(lookups).toBe(3); // 7, 8 once each (cached), 9 (unknown, not cached)
    const row = store.row('cuzk_partition_gpu_duration_seconds', { proof_kind: 'snap-update' })!;
    expect(store.text(row, 3)).toBe(' # {job_id="job \\"seven\\"\\\\x",partition="0"} 0.05 1001.000');
    expect(store.text(row, 6)).toBe(' # {job_id="job-8",partition="4"} 0.5 1001.000');
    expect(store.text(row, 4)).toBe('');
    expect(store.text(row, 9)).toBe('');
    expect(store.row('cuzk_partition_gpu_duration_seconds', { proof_kind: 'porep-c2' })).not.toBeNull();
    expect(store.row('cuzk_gpu_idle_gap_seconds', { gpu: '0' })).toBeNull();
  });
});

describe('canonical numbers for le', () => {
  test("the spec's examples", () => {
    const cases: [number, string][] = [
      [0, '0.0'], [0.001, '0.001'], [0.002, '0.002'], [0.01, '0.01'], [0.1, '0.1'], [0.9, '0.9'], [0.95, '0.95'],
      [0.99, '0.99'], [0.999, '0.999'], [1, '1.0'], [1.7, '1.7'], [10, '10.0'],
      [1e-10, '1e-10'], [1e-9, '1e-09'], [1e-5, '1e-05'], [1e-4, '0.0001'], [1e5, '100000.0'], [1e6, '1e+06'], [1e10, '1e+10'],
      [Infinity, '+Inf'], [2400, '2400.0'], [0.0005, '0.0005'], [1.5e-7, '1.5e-07'], [123456.5, '123456.5'], [1234567, '1.234567e+06'],
    ];
    for (const [v, s] of cases) expect([v, canonicalNumber(v)]).toEqual([v, s]);
  });
});

describe('negotiation', () => {
  const PROMETHEUS_2 = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
  test('Accept', () => {
    expect(negotiateFormat(PROMETHEUS_2)).toBe('openmetrics');
    expect(negotiateFormat('application/openmetrics-text; version=1.0.0; charset=utf-8')).toBe('openmetrics');
    expect(negotiateFormat('application/openmetrics-text')).toBe('openmetrics');
    expect(negotiateFormat(undefined)).toBe('text');
    expect(negotiateFormat('')).toBe('text');
    expect(negotiateFormat('*/*')).toBe('text');
    expect(negotiateFormat('text/plain')).toBe('text');
    expect(negotiateFormat('application/json')).toBe('text');
    expect(negotiateFormat('application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited')).toBe('text');
    // Versions we do not write, quality factors, ties, refusals, junk.
    expect(negotiateFormat('application/openmetrics-text;version=0.0.1')).toBe('text');
    expect(negotiateFormat('application/openmetrics-text;version=2.0.0')).toBe('text');
    expect(negotiateFormat('text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5')).toBe('text');
    expect(negotiateFormat('text/plain;q=0.3, application/openmetrics-text;q=0.31')).toBe('openmetrics');
    expect(negotiateFormat('text/plain, application/openmetrics-text')).toBe('text');
    expect(negotiateFormat('application/openmetrics-text, text/plain')).toBe('openmetrics');
    expect(negotiateFormat('application/openmetrics-text;q=0')).toBe('text');
    expect(negotiateFormat('application/openmetrics-text;q=2')).toBe('text');
    expect(negotiateFormat('Application/OpenMetrics-Text; Version="1.0.0"')).toBe('openmetrics');
    expect(negotiateFormat(['text/html', 'application/openmetrics-text;version=1.0.0'])).toBe('openmetrics');
    expect(negotiateFormat(';;;,,=,q=,/;q=1')).toBe('text');
    expect(negotiateFormat(`${'x/y,'.repeat(100000)}application/openmetrics-text`)).toBe('text'); // past the bound
  });

  test('Accept-Encoding', () => {
    expect(acceptsGzip('gzip')).toBe(true);
    expect(acceptsGzip('gzip, deflate, br')).toBe(true); // Node's fetch, curl --compressed
    expect(acceptsGzip('gzip;q=0.5')).toBe(true);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('x-gzip')).toBe(true);
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip('')).toBe(false);
    expect(acceptsGzip('identity')).toBe(false);
    expect(acceptsGzip('deflate, br')).toBe(false);
    expect(acceptsGzip('gzip;q=0')).toBe(false);
    expect(acceptsGzip('*;q=0')).toBe(false);
    expect(acceptsGzip('*, gzip;q=0')).toBe(false);
    expect(acceptsGzip('identity;q=1, gzip;q=0.5')).toBe(false);
    expect(acceptsGzip('GZIP')).toBe(true);
  });
});

describe('line starts written once per family and attribute set (issue 21)', () => {
  // Hand-built collections: what each body must say follows from the OpenMetrics rules in the
  // header of src/exporter/openmetrics.ts, whatever was serialised before it.
  const histogram = (name: string, attributes: Record<string, string>, boundaries: number[], counts: number[]) => ({
    descriptor: { name, description: 'd', unit: '', valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.HISTOGRAM,
    dataPoints: [{ attributes, startTime: [0, 0] as [number, number], endTime: [0, 0] as [number, number], value: { buckets: { boundaries, counts }, count: counts.reduce((a, b) => a + b, 0), sum: 1 } }],
  });
  const gauge = (name: string, points: [Record<string, string>, number][]) => ({
    descriptor: { name, description: 'd', unit: '', valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.GAUGE,
    dataPoints: points.map(([attributes, value]) => ({ attributes, startTime: [0, 0] as [number, number], endTime: [0, 0] as [number, number], value })),
  });
  const rm = (...metrics: object[]) => ({ resource: resourceFromAttributes({}), scopeMetrics: [{ scope: { name: 's' }, metrics }] }) as unknown as ResourceMetrics;
  const lines = (body: string) => body.split('\n').filter((l) => l !== '' && !l.startsWith('#'));

  test('the same attribute set in two families, new bounds for a set, equal sets as distinct objects', () => {
    const s = new OpenMetricsSerializer();
    const kind = { proof_kind: 'porep-c2' };
    expect(lines(s.serialize(rm(histogram('a_seconds', kind, [1, 2], [1, 0, 0]), histogram('b_seconds', kind, [5], [0, 2]))))).toEqual([
      'a_seconds_bucket{proof_kind="porep-c2",le="1.0"} 1',
      'a_seconds_bucket{proof_kind="porep-c2",le="2.0"} 1',
      'a_seconds_bucket{proof_kind="porep-c2",le="+Inf"} 1',
      'a_seconds_count{proof_kind="porep-c2"} 1',
      'a_seconds_sum{proof_kind="porep-c2"} 1',
      'b_seconds_bucket{proof_kind="porep-c2",le="5.0"} 0',
      'b_seconds_bucket{proof_kind="porep-c2",le="+Inf"} 2',
      'b_seconds_count{proof_kind="porep-c2"} 2',
      'b_seconds_sum{proof_kind="porep-c2"} 1',
    ]);
    // The same set object with other bounds (and one bucket more), then an equal set that is another object.
    expect(lines(s.serialize(rm(histogram('a_seconds', kind, [0.5, 1, 3], [0, 1, 0, 2]))))).toEqual([
      'a_seconds_bucket{proof_kind="porep-c2",le="0.5"} 0',
      'a_seconds_bucket{proof_kind="porep-c2",le="1.0"} 1',
      'a_seconds_bucket{proof_kind="porep-c2",le="3.0"} 1',
      'a_seconds_bucket{proof_kind="porep-c2",le="+Inf"} 3',
      'a_seconds_count{proof_kind="porep-c2"} 3',
      'a_seconds_sum{proof_kind="porep-c2"} 1',
    ]);
    expect(lines(s.serialize(rm(histogram('a_seconds', { proof_kind: 'x"y' }, [1], [0, 1]))))[0]).toBe('a_seconds_bucket{proof_kind="x\\"y",le="1.0"} 0');
    // Other bounds, as many buckets; then one bounds array with fewer counts (a line per count, no +Inf).
    expect(lines(s.serialize(rm(histogram('a_seconds', kind, [0.5, 1, 4], [0, 1, 0, 2]))))[2]).toBe('a_seconds_bucket{proof_kind="porep-c2",le="4.0"} 1');
    const bounds = [1, 2];
    // Two families with the same set and the same bounds array (as the four kind histograms share theirs).
    expect(lines(s.serialize(rm(histogram('d_seconds', kind, bounds, [1, 0, 0]), histogram('e_seconds', kind, bounds, [0, 0, 1])))).filter((l) => l.includes('+Inf'))).toEqual([
      'd_seconds_bucket{proof_kind="porep-c2",le="+Inf"} 1',
      'e_seconds_bucket{proof_kind="porep-c2",le="+Inf"} 1',
    ]);
    expect(lines(s.serialize(rm(histogram('c_seconds', kind, bounds, [1, 1, 1]))))).toHaveLength(5);
    expect(lines(s.serialize(rm(histogram('c_seconds', kind, bounds, [1, 1]))))).toEqual([
      'c_seconds_bucket{proof_kind="porep-c2",le="1.0"} 1',
      'c_seconds_bucket{proof_kind="porep-c2",le="2.0"} 2',
      'c_seconds_count{proof_kind="porep-c2"} 2',
      'c_seconds_sum{proof_kind="porep-c2"} 1',
    ]);
  });

  test('gauge lines: one set in two families, an empty set, values of each collection', () => {
    const s = new OpenMetricsSerializer();
    const gpu = { gpu: '3' };
    expect(lines(s.serialize(rm(gauge('g_one', [[gpu, 1], [{}, 2]]), gauge('g_two', [[gpu, 3]]))))).toEqual(['g_one{gpu="3"} 1', 'g_one 2', 'g_two{gpu="3"} 3']);
    expect(lines(s.serialize(rm(gauge('g_two', [[gpu, 4], [{ gpu: '3' }, 5]]))))).toEqual(['g_two{gpu="3"} 4', 'g_two{gpu="3"} 5']);
  });
});
