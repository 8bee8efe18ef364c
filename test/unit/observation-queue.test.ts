/**
 * The model queues histogram observations per batch of events and hands them to its observer
 * at the batch's end or when the queue is full (src/engine/model/observation-queue.ts).
 * Checked on random streams:
 *  - through the queue into the typed histograms, with a collection (MetricData and the
 *    OpenMetrics exemplar texts) after every batch, against a naive reference written here
 *    (plain arrays, linear scans) over the observations delivered so far;
 *  - at the model: the same random events applied in random batches, or one event per call
 *    (nothing queued across a call), give the observer the same observations in the same
 *    order, and every collection between batches the same histograms, also when the
 *    observer is the model's own histograms (handed each batch whole).
 */
import fc from 'fast-check';
import type { Attributes } from '@opentelemetry/api';
import { EV_GPU_LOCK, EV_JOB_DONE, EV_JOB_QUEUED, EV_JOB_STARTED, EV_PARTITION, EventRecord, encodeEvents, EVENT_SIZE } from '../../src/engine/model/event-layout';
import { KIND_LABELS, KIND_SLOTS, OTHER_KIND_INDEX, OUTCOME_COMPLETED } from '../../src/engine/model/kinds';
import {
  OBS_CAPACITY,
  OBS_GPU_IDLE_GAP,
  OBS_PARTITION_FINALIZE,
  OBS_PARTITION_GPU,
  OBS_PARTITION_SYNTHESIS,
  OBS_PROOF_DONE,
  OBS_QUEUE_WAIT,
  ObservationQueue,
} from '../../src/engine/model/observation-queue';
import { ModelObserver, StateModel, Topology } from '../../src/engine/model/state-model';
import { ExemplarStore } from '../../src/exporter/exemplars';
import { BUCKETS, histogramMetrics } from '../../src/exporter/histograms';

const GPU_ORDINALS = [0, 3, 5];
const TOPOLOGY: Topology = { gpus: GPU_ORDINALS.map((o) => ({ ordinal: o, name: `g${o}` })), workers: [], lockEvents: true };
const known = (job: number) => (job % 4 === 3 ? undefined : `job-${job}`);

interface QObs {
  op: number;
  slot: number;
  ns: number;
  job: number;
  aux: number;
}

const FAMILY = ['cuzk_partition_gpu_duration_seconds', 'cuzk_partition_finalize_duration_seconds', 'cuzk_partition_synthesis_duration_seconds', 'cuzk_proof_duration_seconds', 'cuzk_proof_queue_wait_seconds', 'cuzk_gpu_idle_gap_seconds'];
const BOUNDS: readonly (readonly number[])[] = [BUCKETS.partitionGpu, BUCKETS.partitionFinalize, BUCKETS.partitionSynthesis, BUCKETS.proof, BUCKETS.queueWait, BUCKETS.gpuIdleGap];
/** Exemplars: by job and partition, by job only, or none. */
const EXEMPLAR: ('partition' | 'job' | null)[] = ['partition', null, 'partition', 'job', 'job', null];
const ALL_BOUNDS_NS = [...new Set(BOUNDS.flat())].map((b) => Math.round(b * 1e9));

const ns = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ALL_BOUNDS_NS) }, // exactly on a bound (le is inclusive)
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 3_000_000_000_000 }) },
  { weight: 1, arbitrary: fc.constantFrom(0, -0, NaN, -1, Infinity, 1, 2 ** 53) },
);
const qobs: fc.Arbitrary<QObs> = fc.record({
  op: fc.integer({ min: OBS_PARTITION_GPU, max: OBS_GPU_IDLE_GAP }),
  slot: fc.integer({ min: -1, max: KIND_SLOTS + 1 }),
  ns,
  job: fc.integer({ min: 0, max: 70 }), // > 64: L1 slots shared
  aux: fc.integer({ min: -1, max: 3 }), // partition (-1: none), or a proof's outcome
});

interface RefSeries {
  attributes: Attributes;
  startMs: number;
  values: number[];
  exemplars: Map<number, string>;
}

/** What the histograms should hold after `stream`, each observation delivered at clock `at[i]`. */
function reference(stream: QObs[], at: number[]): Map<string, RefSeries[]> {
  const out = new Map<string, RefSeries[]>();
  stream.forEach((o, i) => {
    let label: Attributes;
    if (o.op === OBS_GPU_IDLE_GAP) {
      if (o.slot < 0 || o.slot >= GPU_ORDINALS.length) return;
      label = { gpu: String(GPU_ORDINALS[o.slot]) };
    } else {
      if (o.op === OBS_PROOF_DONE && o.aux !== OUTCOME_COMPLETED) return;
      label = { proof_kind: KIND_LABELS[o.slot >= 0 && o.slot < KIND_SLOTS ? o.slot : OTHER_KIND_INDEX] };
    }
    const v = o.ns / 1e9;
    if (v < 0) return;
    const list = out.get(FAMILY[o.op]) ?? [];
    out.set(FAMILY[o.op], list);
    let s = list.find((x) => JSON.stringify(x.attributes) === JSON.stringify(label));
    if (!s) list.push((s = { attributes: label, startMs: at[i], values: [], exemplars: new Map() }));
    if (Number.isNaN(v)) return;
    s.values.push(v);
    const id = known(o.job);
    const ex = EXEMPLAR[o.op];
    if (ex === null || id === undefined) return;
    let b = 0;
    while (b < BOUNDS[o.op].length && !(v <= BOUNDS[o.op][b])) b++;
    const labels = ex === 'partition' && o.aux >= 0 ? `job_id="${id}",partition="${o.aux}"` : `job_id="${id}"`;
    s.exemplars.set(b, ` # {${labels}} ${v} ${(at[i] / 1000).toFixed(3)}`);
  });
  return out;
}

/** A collection of the typed histograms against the reference: counts, sums, min/max, order, start, exemplars. */
function expectSame(model: StateModel, ref: Map<string, RefSeries[]>): void {
  const store = new ExemplarStore(model.histograms);
  const metrics = histogramMetrics(model.histograms, [0, 0]);
  expect(metrics.map((m) => m.descriptor.name)).toEqual(FAMILY.filter((f) => ref.has(f)));
  for (const m of metrics) {
    const op = FAMILY.indexOf(m.descriptor.name);
    const series = ref.get(m.descriptor.name)!;
    expect(m.dataPoints.map((p) => p.attributes)).toEqual(series.map((s) => s.attributes));
    m.dataPoints.forEach((p, i) => {
      const s = series[i];
      const h = p.value as { count: number; sum: number; min?: number; max?: number; buckets: { counts: number[] } };
      const counts = [...BOUNDS[op].map((le, b) => s.values.filter((v) => v <= le && (b === 0 || v > BOUNDS[op][b - 1])).length), s.values.filter((v) => v > BOUNDS[op].at(-1)!).length];
      expect(h.buckets.counts).toEqual(counts);
      expect(h.count).toBe(s.values.length);
      expect(Object.is(h.sum, s.values.reduce((a, v) => a + v, 0))).toBe(true);
      expect(h.min).toBe(s.values.length ? Math.min(...s.values) : undefined);
      expect(h.max).toBe(s.values.length ? Math.max(...s.values) : undefined);
      expect(p.startTime).toEqual([Math.trunc(s.startMs / 1000), (s.startMs % 1000) * 1e6]);
      const row = store.row(m.descriptor.name, p.attributes);
      if (EXEMPLAR[op] === null) expect(row).toBeNull();
      else for (let b = 0; b <= BOUNDS[op].length; b++) expect(store.text(row!, b)).toBe(s.exemplars.get(b) ?? '');
    });
  }
}

describe('queued observations vs a naive reference', () => {
  /**
   * Pushes each batch as the model does (handing over when full), then hands the rest over and
   * collects. `clock`: 'given' pins the exemplar clock through enableExemplars (read per
   * exemplar); 'default' leaves Date.now, read once per synchronous run, so a microtask turn
   * is awaited after each hand-over (each is then a run of its own, as each drain is).
   */
  async function run(batches: QObs[][], clockMode: 'given' | 'default'): Promise<void> {
    const clock = { now: 1_700_000_000_000 };
    const nowSpy = jest.spyOn(Date, 'now').mockImplementation(() => clock.now);
    try {
      const model = new StateModel();
      model.setTopology(TOPOLOGY, 0);
      if (clockMode === 'given') model.histograms.enableExemplars(known, () => clock.now);
      else model.histograms.enableExemplars(known);
      const q = new ObservationQueue();
      const delivered: QObs[] = [];
      const at: number[] = [];
      let queued: QObs[] = [];
      const deliver = async () => {
        q.deliver(model.histograms);
        for (const o of queued) (delivered.push(o), at.push(clock.now));
        queued = [];
        if (clockMode === 'default') await Promise.resolve();
      };
      for (const batch of batches) {
        for (const o of batch) {
          queued.push(o);
          if (q.push(o.op, o.slot, o.ns, o.job, o.aux)) {
            expect(queued.length).toBe(OBS_CAPACITY);
            await deliver();
            clock.now += 7; // a full queue is handed over mid-batch: later ones get a later clock
          }
        }
        await deliver();
        expect(q.n).toBe(0);
        expectSame(model, reference(delivered, at)); // a collection between batches is exact
        clock.now += 1001;
      }
    } finally {
      nowSpy.mockRestore();
    }
  }

  for (const clockMode of ['given', 'default'] as const) {
    test(`random streams in random batches, collected after each batch (${clockMode} clock)`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.array(qobs, { maxLength: 60 }), { maxLength: 8 }), (batches) => run(batches, clockMode)),
        { numRuns: 150 },
      );
    });

    test(`batches past the queue capacity are handed over when full, in order (${clockMode} clock)`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.array(qobs, { minLength: OBS_CAPACITY - 2, maxLength: 2 * OBS_CAPACITY + 5 }), { minLength: 1, maxLength: 2 }), (batches) => run(batches, clockMode)),
        { numRuns: 6 },
      );
    });
  }
});

// ---- at the model: batching is invisible ----

interface Seen {
  op: string;
  args: number[];
}

function recorder(into: Seen[]): ModelObserver {
  const rec =
    (op: string) =>
    (...args: (number | undefined)[]) =>
      void into.push({ op, args: args.map((a) => (a === undefined ? NaN : a)) });
  return { partitionGpu: rec('gpu'), partitionFinalize: rec('fin'), partitionSynthesis: rec('syn'), proofDone: rec('proof'), queueWait: rec('queue'), gpuIdleGap: rec('idle') };
}

/** One job's life: queued, started, each partition synthesized, on the GPU (maybe finalizing), done or failed, the job done. */
function lifecycle(job: number, kind: number, parts: number, values: number[], finalize: boolean[], outcome: number): Omit<EventRecord, 'seq' | 'tNs'>[] {
  const out: Omit<EventRecord, 'seq' | 'tNs'>[] = [
    { type: EV_JOB_QUEUED, job, kind, partition: parts },
    { type: EV_JOB_STARTED, job, value: values[0] },
  ];
  for (let p = 0; p < parts; p++) {
    const v = (i: number) => values[(p * 3 + i) % values.length];
    out.push({ type: EV_PARTITION, job, partition: p, aux: 1 }, { type: EV_PARTITION, job, partition: p, aux: 2, value: v(1) });
    out.push({ type: EV_PARTITION, job, partition: p, aux: 3, worker: p % 4 });
    if (finalize[p % finalize.length]) out.push({ type: EV_PARTITION, job, partition: p, aux: 6, worker: p % 4 });
    out.push({ type: EV_PARTITION, job, partition: p, aux: v(2) % 5 === 0 ? 5 : 4, value: v(2), worker: p % 4 });
  }
  out.push({ type: EV_JOB_DONE, job, aux: outcome, value: values[values.length - 1] });
  return out;
}

/** Random native-like records: a few jobs' lives interleaved (each in its own order), with GPU locks between. */
const records: fc.Arbitrary<EventRecord[]> = fc
  .tuple(
    fc.array(
      fc.record({
        kind: fc.integer({ min: 0, max: 4 }),
        parts: fc.integer({ min: 1, max: 4 }),
        values: fc.array(fc.oneof(fc.constantFrom(...ALL_BOUNDS_NS), fc.integer({ min: 0, max: 9e10 })), { minLength: 1, maxLength: 12 }),
        finalize: fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }),
        outcome: fc.integer({ min: 0, max: 2 }),
      }),
      { maxLength: 6 },
    ),
    fc.array(fc.record({ type: fc.constant(EV_GPU_LOCK), gpu: fc.integer({ min: 0, max: 3 }), aux: fc.integer({ min: 0, max: 1 }), value: fc.integer({ min: 0, max: 2e9 }) }), { maxLength: 40 }),
    fc.array(fc.nat(), { minLength: 1, maxLength: 50 }),
  )
  .map(([jobs, locks, picks]) => {
    // Merge the jobs' lives and the locks: at each step the next record of a picked stream.
    const streams = [...jobs.map((j, i) => lifecycle(i + 1, j.kind, j.parts, j.values, j.finalize, j.outcome)), locks];
    const out: Omit<EventRecord, 'seq' | 'tNs'>[] = [];
    for (let k = 0; streams.some((x) => x.length > 0); k++) {
      const live = streams.filter((x) => x.length > 0);
      out.push(live[picks[k % picks.length] % live.length].shift()!);
    }
    return out.map((r, i) => ({ ...r, seq: i + 1, tNs: 1000 * (i + 1) }));
  });

test('the model: events in random batches or one per call give the same observations and collections', () => {
  const nowSpy = jest.spyOn(Date, 'now').mockImplementation(() => 1_700_000_000_000);
  let observed = 0;
  try {
    fc.assert(
      fc.property(records, fc.array(fc.integer({ min: 1, max: 80 }), { minLength: 1, maxLength: 10 }), (recs, cuts) => {
        const view = encodeEvents(recs);
        const one = new StateModel();
        const batched = new StateModel();
        // The usual observer: the model's own histograms, handed each batch whole (observeQueued).
        const direct = new StateModel();
        direct.setTopology(TOPOLOGY, 0);
        direct.histograms.enableExemplars(known, () => 1_700_000_000_000);
        direct.observer = direct.histograms;
        const seenOne: Seen[] = [];
        const seenBatched: Seen[] = [];
        for (const [m, seen] of [
          [one, seenOne],
          [batched, seenBatched],
        ] as const) {
          m.setTopology(TOPOLOGY, 0);
          m.histograms.enableExemplars(known, () => 1_700_000_000_000);
          const h = m.histograms;
          const tee = recorder(seen);
          // The histograms and a recorder both see each observation.
          m.observer = {
            partitionGpu: (...a) => (tee.partitionGpu(...a), h.partitionGpu(...a)),
            partitionFinalize: (...a) => (tee.partitionFinalize!(...a), h.partitionFinalize(...a)),
            partitionSynthesis: (...a) => (tee.partitionSynthesis(...a), h.partitionSynthesis(...a)),
            proofDone: (...a) => (tee.proofDone(...a), h.proofDone(...a)),
            queueWait: (...a) => (tee.queueWait(...a), h.queueWait(...a)),
            gpuIdleGap: (...a) => (tee.gpuIdleGap(...a), h.gpuIdleGap(...a)),
          };
        }
        const collect = (m: StateModel) => {
          const store = new ExemplarStore(m.histograms);
          const ms = histogramMetrics(m.histograms, [0, 0]);
          const texts = ms.flatMap((x) => x.dataPoints.flatMap((p) => {
            const row = store.row(x.descriptor.name, p.attributes);
            return row ? Array.from({ length: row.table.width }, (_, b) => store.text(row, b)) : [];
          }));
          return JSON.stringify([ms.map((x) => [x.descriptor.name, x.dataPoints.map((p) => [p.attributes, p.value])]), texts]);
        };
        let at = 0;
        let c = 0;
        while (at < recs.length) {
          const n = Math.min(cuts[c++ % cuts.length], recs.length - at);
          for (let i = at; i < at + n; i++) one.applyEvents(view, 1, i * EVENT_SIZE);
          batched.applyEvents(view, n, at * EVENT_SIZE);
          direct.applyEvents(view, n, at * EVENT_SIZE);
          at += n;
          // Nothing is left queued when applyEvents returns: the collections agree.
          expect(seenBatched).toEqual(seenOne);
          expect(collect(batched)).toBe(collect(one));
          expect(collect(direct)).toBe(collect(one));
        }
        observed += seenOne.length;
      }),
      { numRuns: 200 },
    );
    expect(observed).toBeGreaterThan(2000); // the random events did produce observations
  } finally {
    nowSpy.mockRestore();
  }
});
