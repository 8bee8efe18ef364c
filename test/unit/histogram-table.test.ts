/**
 * The model's typed-array histograms (src/engine/model/histogram-table.ts, model-histograms.ts,
 * exported by src/exporter/histograms.ts) against two independent implementations, on
 * random observation streams:
 *  - a naive reference written here (linear scans, plain arrays): buckets with inclusive
 *    `le`, counts, sums, min/max, series order, exemplars (latest observation per bucket
 *    whose job id is known);
 *  - the OpenTelemetry SDK's explicit-bucket histograms, which these replaced: the same
 *    MetricData (attributes, order, start times, counts, sum, min, max) and the same
 *    /metrics and OpenMetrics bytes.
 */
import { ValueType, type Attributes } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType, MeterProvider, MetricData, MetricReader } from '@opentelemetry/sdk-metrics';
import fc from 'fast-check';
import { KIND_LABELS, KIND_SLOTS, OTHER_KIND_INDEX, OUTCOME_COMPLETED } from '../../src/engine/model/kinds';
import { StateModel, Topology } from '../../src/engine/model/state-model';
import { FastPrometheusSerializer } from '../../src/exporter/fast-serializer';
import { BUCKETS, HISTOGRAM_FAMILIES, histogramMetrics } from '../../src/exporter/histograms';
import { OpenMetricsSerializer } from '../../src/exporter/openmetrics';
import { ExemplarStore } from '../../src/exporter/exemplars';
import { StateMetricProducer } from '../../src/exporter/state-metrics';
import { resourceFromAttributes } from '@opentelemetry/resources';

type Op = 'gpu' | 'fin' | 'syn' | 'proof' | 'queue' | 'idle';
interface Obs {
  op: Op;
  kind: number;
  value: number;
  job: number | undefined;
  partition: number | undefined;
  outcome: number;
  gpuSlot: number;
  /** Wall clock advance (ms) before this observation. */
  dtMs: number;
}

const FAMILY_OF: Record<Op, string> = {
  gpu: 'cuzk_partition_gpu_duration_seconds',
  fin: 'cuzk_partition_finalize_duration_seconds',
  syn: 'cuzk_partition_synthesis_duration_seconds',
  proof: 'cuzk_proof_duration_seconds',
  queue: 'cuzk_proof_queue_wait_seconds',
  idle: 'cuzk_gpu_idle_gap_seconds',
};
const BOUNDS_OF: Record<Op, readonly number[]> = {
  gpu: BUCKETS.partitionGpu,
  fin: BUCKETS.partitionFinalize,
  syn: BUCKETS.partitionSynthesis,
  proof: BUCKETS.proof,
  queue: BUCKETS.queueWait,
  idle: BUCKETS.gpuIdleGap,
};
const WITH_EXEMPLARS: Partial<Record<Op, 'partition' | 'job'>> = { gpu: 'partition', syn: 'partition', proof: 'job', queue: 'job' };
const ALL_BOUNDS = [...new Set(Object.values(BOUNDS_OF).flat())];
const GPU_ORDINALS = [0, 3, 5, 7];
const TOPOLOGY: Topology = { gpus: GPU_ORDINALS.map((o) => ({ ordinal: o, name: `g${o}` })), workers: [], lockEvents: true };
/** Job ids the resolver knows; other handles are unknown (no exemplar). */
const known = (job: number) => (job % 3 === 2 ? undefined : `job-${job}`);

const value = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ALL_BOUNDS) }, // exactly on a bound: le is inclusive
  { weight: 4, arbitrary: fc.double({ min: 0, max: 3000, noNaN: true }) },
  { weight: 1, arbitrary: fc.constantFrom(0, -0, NaN, -1, -1e-9, Infinity, Number.MIN_VALUE, 1e300) },
  { weight: 1, arbitrary: fc.double() },
);
const obs = (kinds: fc.Arbitrary<number>): fc.Arbitrary<Obs> =>
  fc.record({
    op: fc.constantFrom<Op>('gpu', 'fin', 'syn', 'proof', 'queue', 'idle'),
    kind: kinds,
    value,
    job: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
    partition: fc.option(fc.integer({ min: -1, max: 20 }), { nil: undefined }),
    outcome: fc.integer({ min: 0, max: 3 }),
    gpuSlot: fc.integer({ min: -1, max: GPU_ORDINALS.length }),
    dtMs: fc.integer({ min: 0, max: 3 }),
  });

/** Feeds one observation to a ModelObserver-shaped target, as the model does. */
function feed(target: StateModel['histograms'], o: Obs): void {
  switch (o.op) {
    case 'gpu':
      return target.partitionGpu(o.kind, o.value, o.job, o.partition);
    case 'fin':
      return target.partitionFinalize(o.kind, o.value);
    case 'syn':
      return target.partitionSynthesis(o.kind, o.value, o.job, o.partition);
    case 'proof':
      return target.proofDone(o.kind, o.outcome, o.value, o.job);
    case 'queue':
      return target.queueWait(o.kind, o.value, o.job);
    case 'idle':
      return target.gpuIdleGap(o.gpuSlot, o.value);
  }
}

// ---- the naive reference ----

interface RefSeries {
  attributes: Attributes;
  startMs: number;
  values: number[];
  /** Per bucket: [value, timeMs, id, partition] of the latest observation with a known job. */
  exemplars: Map<number, [number, number, string, number]>;
}

/** The series an observation belongs to (null: not recorded at all), by the rules stated in model-histograms.ts. */
function refSeriesKey(o: Obs): { family: string; label: Attributes } | null {
  if (o.op === 'proof' && o.outcome !== OUTCOME_COMPLETED) return null;
  if (o.op === 'idle') {
    if (o.gpuSlot < 0 || o.gpuSlot >= GPU_ORDINALS.length) return null;
    return { family: FAMILY_OF.idle, label: { gpu: String(GPU_ORDINALS[o.gpuSlot]) } };
  }
  const k = o.kind >= 0 && o.kind < KIND_SLOTS ? o.kind : OTHER_KIND_INDEX;
  return { family: FAMILY_OF[o.op], label: { proof_kind: KIND_LABELS[k] } };
}

function reference(stream: Obs[], t0: number): Map<string, RefSeries[]> {
  const out = new Map<string, RefSeries[]>();
  let now = t0;
  for (const o of stream) {
    now += o.dtMs;
    const key = refSeriesKey(o);
    if (!key || o.value < 0) continue; // negatives are refused outright
    const list = out.get(key.family) ?? [];
    out.set(key.family, list);
    let s = list.find((x) => JSON.stringify(x.attributes) === JSON.stringify(key.label));
    if (!s) {
      s = { attributes: key.label, startMs: now, values: [], exemplars: new Map() };
      list.push(s);
    }
    if (Number.isNaN(o.value)) continue; // NaN: the series exists, nothing is counted
    s.values.push(o.value);
    const ex = WITH_EXEMPLARS[o.op];
    const id = o.job === undefined ? undefined : known(o.job);
    if (ex && id !== undefined) {
      const bounds = BOUNDS_OF[o.op];
      let b = 0;
      while (b < bounds.length && !(o.value <= bounds[b])) b++;
      const p = ex === 'partition' && o.partition !== undefined && o.partition >= 0 ? o.partition : -1;
      s.exemplars.set(b, [o.value, now, id, p]);
    }
  }
  return out;
}

/** Cumulative `le` counts of a value list, by linear scan (inclusive upper bounds). */
function refCumulative(values: number[], bounds: readonly number[]): number[] {
  return [...bounds.map((le) => values.filter((v) => v <= le).length), values.length];
}

function nonCumulative(counts: number[]): number[] {
  let acc = 0;
  return counts.map((c) => {
    const x = c - acc;
    acc = c;
    return x;
  });
}

function typedModel(stream: Obs[], t0: number, clock: { now: number }, exemplars: boolean): StateModel {
  const model = new StateModel();
  model.setTopology(TOPOLOGY, 0);
  if (exemplars) model.histograms.enableExemplars((j) => known(j), () => clock.now);
  clock.now = t0;
  for (const o of stream) {
    clock.now += o.dtMs;
    feed(model.histograms, o);
  }
  return model;
}

describe('typed histograms vs a naive reference', () => {
  test('buckets (inclusive le), counts, sums, min/max, series order, start times and exemplars', () => {
    const nowSpy = jest.spyOn(Date, 'now');
    try {
      fc.assert(
        fc.property(fc.array(obs(fc.integer({ min: -2, max: KIND_SLOTS + 1 })), { maxLength: 300 }), (stream) => {
          const clock = { now: 0 };
          nowSpy.mockImplementation(() => clock.now);
          const t0 = 1_700_000_000_000;
          const model = typedModel(stream, t0, clock, true);
          const ref = reference(stream, t0);
          const store = new ExemplarStore(model.histograms);
          const metrics = histogramMetrics(model.histograms, [0, 0]);
          // Only families with a series, in the SDK's instrument order.
          const expectedFamilies = HISTOGRAM_FAMILIES.map((f) => f.name).filter((n) => ref.has(n));
          expect(metrics.map((m) => m.descriptor.name)).toEqual(expectedFamilies);
          for (const m of metrics) {
            const op = (Object.keys(FAMILY_OF) as Op[]).find((k) => FAMILY_OF[k] === m.descriptor.name)!;
            const bounds = BOUNDS_OF[op];
            const series = ref.get(m.descriptor.name)!;
            expect(m.dataPoints.map((p) => p.attributes)).toEqual(series.map((s) => s.attributes));
            m.dataPoints.forEach((p, i) => {
              const s = series[i];
              const h = p.value as { count: number; sum: number; min?: number; max?: number; buckets: { boundaries: number[]; counts: number[] } };
              expect(h.buckets.boundaries).toEqual([...bounds]);
              expect(h.buckets.counts).toEqual(nonCumulative(refCumulative(s.values, bounds)));
              expect(h.count).toBe(s.values.length);
              expect(Object.is(h.sum, s.values.reduce((a, v) => a + v, 0))).toBe(true);
              expect(h.min).toBe(s.values.length ? Math.min(...s.values) : undefined);
              expect(h.max).toBe(s.values.length ? Math.max(...s.values) : undefined);
              expect(p.startTime).toEqual([Math.trunc(s.startMs / 1000), (s.startMs % 1000) * 1e6]);
              // Exemplars, through the renderer the OpenMetrics writer uses.
              const row = store.row(m.descriptor.name, p.attributes);
              if (!WITH_EXEMPLARS[op]) {
                expect(row).toBeNull();
                return;
              }
              for (let b = 0; b <= bounds.length; b++) {
                const e = s.exemplars.get(b);
                const text = store.text(row!, b);
                if (!e) expect(text).toBe('');
                else {
                  const labels = e[3] >= 0 ? `job_id="${e[2]}",partition="${e[3]}"` : `job_id="${e[2]}"`;
                  expect(text).toBe(` # {${labels}} ${e[0]} ${(e[1] / 1000).toFixed(3)}`);
                }
              }
            });
          }
        }),
        { numRuns: 400 },
      );
    } finally {
      nowSpy.mockRestore();
    }
  });

  test('GPU series follow their ordinal across topology changes', () => {
    const model = new StateModel();
    model.setTopology(TOPOLOGY, 0);
    const h = model.histograms;
    h.gpuIdleGap(1, 0.002); // ordinal 3
    model.setTopology({ ...TOPOLOGY, gpus: [{ ordinal: 5, name: 'g5' }, { ordinal: 3, name: 'g3' }, { ordinal: 9, name: 'g9' }] }, 0);
    h.gpuIdleGap(1, 0.004); // ordinal 3 again, now slot 1 of a new topology
    h.gpuIdleGap(2, 20); // ordinal 9: a new series
    h.gpuIdleGap(3, 1); // no such slot
    const m = histogramMetrics(h, [0, 0]).find((x) => x.descriptor.name === 'cuzk_gpu_idle_gap_seconds')!;
    expect(m.dataPoints.map((p) => [p.attributes, (p.value as { count: number }).count])).toEqual([
      [{ gpu: '3' }, 2],
      [{ gpu: '9' }, 1],
    ]);
  });

  test('the default exemplar clock is read once per synchronous run of observations', async () => {
    const model = new StateModel();
    const h = model.histograms;
    let reads = 0;
    const nowSpy = jest.spyOn(Date, 'now').mockImplementation(() => 1_000_000 + 1000 * ++reads);
    try {
      h.enableExemplars((j) => `j${j}`);
      h.partitionGpu(0, 0.003, 1, 0); // reads the clock (series start, then exemplar)
      h.partitionGpu(0, 0.3, 2, 1);
      h.queueWait(1, 2, 3);
      const store = new ExemplarStore(h);
      const row = store.row('cuzk_partition_gpu_duration_seconds', { proof_kind: 'porep-c2' })!;
      const stamp = (b: number) => store.text(row, b).split(' ').pop();
      expect(stamp(0)).toBe(stamp(6));
      await Promise.resolve(); // the run ends: the next observation reads the clock again
      h.partitionGpu(0, 0.004, 1, 2);
      expect(Number(stamp(0))).toBeGreaterThan(Number(stamp(6)));
    } finally {
      nowSpy.mockRestore();
    }
  });
});

// ---- the OpenTelemetry SDK, which these histograms replaced ----

class Reader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** The histograms.ts of before: SDK instruments, recorded with the same attributes. */
function sdkHistograms(version: string) {
  const reader = new Reader();
  const provider = new MeterProvider({ readers: [reader] });
  const meter = provider.getMeter('cuzk-exporter', version);
  const inst = Object.fromEntries(
    HISTOGRAM_FAMILIES.map((f) => {
      const op = (Object.keys(FAMILY_OF) as Op[]).find((k) => FAMILY_OF[k] === f.name)!;
      return [op, meter.createHistogram(f.name, { description: f.description, unit: '', advice: { explicitBucketBoundaries: [...BOUNDS_OF[op]] } })];
    }),
  ) as Record<Op, ReturnType<typeof meter.createHistogram>>;
  const record = (o: Obs) => {
    const key = refSeriesKey(o);
    if (key) inst[o.op].record(o.value, key.label);
  };
  return { reader, provider, record };
}

type HistPoint = { count: number; sum: number; min?: number; max?: number; buckets: { boundaries: number[]; counts: number[] } };

describe('typed histograms vs the OpenTelemetry SDK', () => {
  test('one collection: the same MetricData, the same /metrics and OpenMetrics bytes', async () => {
    const nowSpy = jest.spyOn(Date, 'now');
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(obs(fc.integer({ min: 0, max: KIND_SLOTS - 1 })), { maxLength: 200 }), async (stream) => {
          const clock = { now: 1_700_000_000_000 };
          nowSpy.mockImplementation(() => clock.now);
          const sdk = sdkHistograms('9.9.9');
          const model = new StateModel();
          model.setTopology(TOPOLOGY, 0);
          for (const o of stream) {
            clock.now += o.dtMs;
            sdk.record(o);
            feed(model.histograms, o);
          }
          const { resourceMetrics } = await sdk.reader.collect();
          await sdk.provider.shutdown();
          const theirs: MetricData[] = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
          const ours = histogramMetrics(model.histograms, [0, 0]);
          expect(ours.map((m) => m.descriptor.name)).toEqual(theirs.map((m) => m.descriptor.name));
          for (let i = 0; i < ours.length; i++) {
            const [a, b] = [ours[i], theirs[i]];
            expect(a.descriptor).toEqual({ name: b.descriptor.name, description: b.descriptor.description, unit: b.descriptor.unit, valueType: ValueType.DOUBLE });
            expect(b.descriptor.valueType).toBe(ValueType.DOUBLE);
            expect([a.dataPointType, a.aggregationTemporality]).toEqual([DataPointType.HISTOGRAM, AggregationTemporality.CUMULATIVE]);
            expect([b.dataPointType, b.aggregationTemporality]).toEqual([DataPointType.HISTOGRAM, AggregationTemporality.CUMULATIVE]);
            expect(a.dataPoints.map((p) => [p.attributes, p.startTime])).toEqual(b.dataPoints.map((p) => [p.attributes, p.startTime]));
            a.dataPoints.forEach((p, j) => {
              const x = p.value as HistPoint;
              const y = b.dataPoints[j].value as HistPoint;
              expect(x.buckets).toEqual(y.buckets);
              expect([x.count, x.min, x.max]).toEqual([y.count, y.min, y.max]);
              expect(Object.is(x.sum, y.sum)).toBe(true);
            });
          }
          // The bytes Prometheus gets, both formats (exemplars aside: the SDK has none).
          const wrap = (metrics: MetricData[]) => ({ resource: resourceMetrics.resource, scopeMetrics: [{ scope: { name: 'cuzk-exporter' }, metrics }] });
          expect(new FastPrometheusSerializer().serialize(wrap(ours))).toBe(new FastPrometheusSerializer().serialize(wrap(theirs)));
          expect(new OpenMetricsSerializer().serialize(wrap(ours))).toBe(new OpenMetricsSerializer().serialize(wrap(theirs)));
        }),
        { numRuns: 150 },
      );
    } finally {
      nowSpy.mockRestore();
    }
  });

  test('collections in between: all the same but the sum, which the SDK adds per collection (equal within rounding)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(obs(fc.integer({ min: 0, max: KIND_SLOTS - 1 })), fc.boolean()), { maxLength: 150 }),
        async (steps) => {
          const sdk = sdkHistograms('1');
          const model = new StateModel();
          model.setTopology(TOPOLOGY, 0);
          for (const [o, collect] of steps) {
            sdk.record(o);
            feed(model.histograms, o);
            if (collect) await sdk.reader.collect();
          }
          const { resourceMetrics } = await sdk.reader.collect();
          await sdk.provider.shutdown();
          const theirs = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
          const ours = histogramMetrics(model.histograms, [0, 0]);
          expect(ours.map((m) => m.dataPoints.map((p) => p.attributes))).toEqual(theirs.map((m) => m.dataPoints.map((p) => p.attributes)));
          ours.forEach((m, i) =>
            m.dataPoints.forEach((p, j) => {
              const x = p.value as HistPoint;
              const y = theirs[i].dataPoints[j].value as HistPoint;
              expect([x.buckets, x.count, x.min, x.max]).toEqual([y.buckets, y.count, y.min, y.max]);
              if (Number.isFinite(y.sum)) expect(Math.abs(x.sum - y.sum)).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(y.sum)));
              else expect(x.sum).toBe(y.sum);
            }),
          );
        },
      ),
      { numRuns: 150 },
    );
  });
});

test("the producer puts the histograms first, in the scope of the SDK meter they came from (OTLP's grouping)", async () => {
  const sdk = sdkHistograms('1.2.3');
  const model = new StateModel();
  model.setTopology(TOPOLOGY, 0);
  const o: Obs = { op: 'gpu', kind: 1, value: 0.2, job: 1, partition: 0, outcome: 0, gpuSlot: 0, dtMs: 0 };
  sdk.record(o);
  feed(model.histograms, o);
  const theirs = (await sdk.reader.collect()).resourceMetrics.scopeMetrics;
  await sdk.provider.shutdown();
  const producer = new StateMetricProducer({
    model,
    info: { version: '1.2.3', source: 'run', backend: 'cpu' },
    nowNs: () => 0,
    runningTotals: () => null,
    lastCollectSeconds: () => 0,
    resource: resourceFromAttributes({}),
    histogramScope: { name: 'cuzk-exporter', version: '1.2.3', schemaUrl: undefined },
  });
  const ours = (await producer.collect()).resourceMetrics.scopeMetrics;
  expect(ours).toHaveLength(2);
  expect(ours[0].scope).toEqual(theirs[0].scope);
  expect(ours[0].metrics.map((m) => m.descriptor.name)).toEqual(['cuzk_partition_gpu_duration_seconds']);
  expect(ours[1].metrics.some((m) => m.dataPointType === DataPointType.HISTOGRAM)).toBe(false);
  // No observation yet: no histogram scope at all, as the SDK sent none.
  const empty = new StateModel();
  const none = await new StateMetricProducer({ ...producer['ctx'], model: empty }).collect();
  expect(none.resourceMetrics.scopeMetrics).toHaveLength(1);
});
