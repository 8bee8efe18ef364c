/**
 * ModelHistograms (src/engine/model/model-histograms.ts) case by case, by the rules of its
 * header and of ModelObserver (state-model.ts): unknown or out-of-range kinds count as
 * `other`; only completed proofs are in the proof histogram; GPU idle gaps are per GPU
 * ordinal, slots the topology lacks are ignored; exemplars (GPU, synthesis, proof, queue
 * wait) hold per bucket the latest observation whose job id the source knows, with the
 * partition for partition histograms (-1 otherwise or when none), and an observation whose
 * job is unknown leaves the bucket as it was; the id cache is bounded (4096 ids, 1 MiB of
 * characters) and cleared when full, so ids are looked up again. The queued path
 * (observeQueued: the model's batches) must give what the per-call methods give.
 */
import { StateModel } from '../../src/engine/model/state-model';
import { BUCKETS } from '../../src/engine/model/model-histograms';
import {
  OBS_GPU_IDLE_GAP,
  OBS_PARTITION_FINALIZE,
  OBS_PARTITION_GPU,
  OBS_PARTITION_SYNTHESIS,
  OBS_PROOF_DONE,
  OBS_QUEUE_WAIT,
  ObservationQueue,
} from '../../src/engine/model/observation-queue';

const OTHER = 4;
const topo = (ordinals: number[]) => ({ gpus: ordinals.map((o) => ({ ordinal: o, name: `g${o}` })), workers: [], lockEvents: true });

/** Bucket index by hand: the first bound >= v. */
const bucket = (bounds: readonly number[], v: number) => {
  const i = bounds.findIndex((b) => v <= b);
  return i < 0 ? bounds.length : i;
};

describe('the bucket bounds (DESIGN §5: sub-second to minutes), positive and increasing', () => {
  test.each(Object.entries(BUCKETS))('%s', (_name, bounds) => {
    expect(bounds[0]).toBeGreaterThan(0);
    expect(bounds[0]).toBeLessThan(0.1);
    for (let i = 1; i < bounds.length; i++) expect(bounds[i]).toBeGreaterThan(bounds[i - 1]);
  });
});

/** Each observation both ways: per call, and queued as the model queues it (ns). */
type Way = 'call' | 'queued';
const WAYS: Way[] = ['call', 'queued'];

function rig(way: Way, opts: { ordinals?: number[]; clock?: () => number } = {}) {
  const model = new StateModel();
  if (opts.ordinals) model.setTopology(topo(opts.ordinals), 0);
  const h = model.histograms;
  const q = new ObservationQueue();
  const push = (op: number, slot: number, seconds: number, job: number, aux: number) => {
    if (way === 'call') {
      switch (op) {
        case OBS_PARTITION_GPU:
          return h.partitionGpu(slot, seconds, job, aux);
        case OBS_PARTITION_FINALIZE:
          return h.partitionFinalize(slot, seconds);
        case OBS_PARTITION_SYNTHESIS:
          return h.partitionSynthesis(slot, seconds, job, aux);
        case OBS_PROOF_DONE:
          return h.proofDone(slot, aux, seconds, job);
        case OBS_QUEUE_WAIT:
          return h.queueWait(slot, seconds, job);
        default:
          return h.gpuIdleGap(slot, seconds);
      }
    }
    q.push(op, slot, Math.round(seconds * 1e9), job, aux);
  };
  const flush = () => {
    if (q.n > 0) h.observeQueued(q);
    q.n = 0;
  };
  return { model, h, push, flush };
}

for (const way of WAYS) {
  describe(`observations (${way})`, () => {
    test('kinds 0-3 are their own series; negative, 4, 5 and 255 count as other', () => {
      const { h, push, flush } = rig(way);
      for (const k of [0, 1, 2, 3, -1, 4, 5, 255]) push(OBS_PARTITION_GPU, k, 0.3, 0, 0);
      for (const k of [2, -3, 9]) push(OBS_PARTITION_FINALIZE, k, 0.3, 0, 0);
      for (const k of [1, 5]) push(OBS_PARTITION_SYNTHESIS, k, 0.3, 0, 0);
      for (const k of [3, 7]) push(OBS_QUEUE_WAIT, k, 0.3, 0, 0);
      for (const k of [0, -2]) push(OBS_PROOF_DONE, k, 0.3, 0, 0);
      flush();
      expect([...h.partitionGpuSeconds.count]).toEqual([1, 1, 1, 1, 4]);
      expect(h.partitionGpuSeconds.order).toEqual([0, 1, 2, 3, OTHER]);
      expect([...h.partitionFinalizeSeconds.count]).toEqual([0, 0, 1, 0, 2]);
      expect([...h.partitionSynthesisSeconds.count]).toEqual([0, 1, 0, 0, 1]);
      expect([...h.queueWaitSeconds.count]).toEqual([0, 0, 0, 1, 1]);
      expect([...h.proofSeconds.count]).toEqual([1, 0, 0, 0, 1]);
    });

    test('only completed proofs (outcome 0) are in the proof histogram', () => {
      const { h, push, flush } = rig(way);
      push(OBS_PROOF_DONE, 1, 2, 0, 1); // failed
      push(OBS_PROOF_DONE, 1, 3, 0, 2); // cancelled
      push(OBS_PROOF_DONE, 1, 4, 0, 0); // completed
      flush();
      expect(h.proofSeconds.count[1]).toBe(1);
      expect(h.proofSeconds.sum[1]).toBe(4);
      expect(h.proofSeconds.order).toEqual([1]);
    });

    test('seconds land in their bucket (le inclusive), values in seconds', () => {
      const { h, push, flush } = rig(way);
      push(OBS_QUEUE_WAIT, 0, 0.05, 0, 0); // on the bound 0.05: bucket 2
      push(OBS_QUEUE_WAIT, 0, 0.0500001, 0, 0); // bucket 3
      push(OBS_QUEUE_WAIT, 0, 5000, 0, 0); // +Inf
      flush();
      const t = h.queueWaitSeconds;
      const row = [...t.buckets.subarray(0, t.width)];
      expect(row[bucket(BUCKETS.queueWait, 0.05)]).toBe(1);
      expect(row[2]).toBe(1);
      expect(row[3]).toBe(1);
      expect(row[t.width - 1]).toBe(1);
      expect(t.sum[0]).toBeCloseTo(5000.1000001, 6);
      expect(t.max[0]).toBe(5000);
    });

    test('idle gaps per GPU ordinal; slots the topology lacks are ignored; series survive topology changes', () => {
      const { model, h, push, flush } = rig(way, { ordinals: [4, 6] });
      push(OBS_GPU_IDLE_GAP, 1, 0.002, 0, 0); // ordinal 6
      push(OBS_GPU_IDLE_GAP, 2, 0.002, 0, 0); // no such slot
      push(OBS_GPU_IDLE_GAP, -1, 0.002, 0, 0); // no such slot
      push(OBS_GPU_IDLE_GAP, 0, 0.2, 0, 0); // ordinal 4
      flush();
      expect(h.gpuLabels).toEqual(['4', '6']);
      expect([h.gpuIdleGapSeconds.count[0], h.gpuIdleGapSeconds.count[1]]).toEqual([1, 1]);
      expect(h.gpuIdleGapSeconds.order).toEqual([1, 0]);
      model.setTopology(topo([6, 8, 4]), 0);
      push(OBS_GPU_IDLE_GAP, 0, 0.003, 0, 0); // ordinal 6 (series 1)
      push(OBS_GPU_IDLE_GAP, 1, 0.003, 0, 0); // ordinal 8: a new series 2
      push(OBS_GPU_IDLE_GAP, 2, 0.003, 0, 0); // ordinal 4 (series 0)
      push(OBS_GPU_IDLE_GAP, 3, 0.003, 0, 0); // no such slot
      flush();
      expect(h.gpuLabels).toEqual(['4', '6', '8']);
      expect([h.gpuIdleGapSeconds.count[0], h.gpuIdleGapSeconds.count[1], h.gpuIdleGapSeconds.count[2]]).toEqual([2, 2, 1]);
      // an empty topology: every slot is missing
      model.setTopology(topo([]), 0);
      push(OBS_GPU_IDLE_GAP, 0, 0.003, 0, 0);
      flush();
      expect(h.gpuIdleGapSeconds.count[0] + h.gpuIdleGapSeconds.count[1] + h.gpuIdleGapSeconds.count[2]).toBe(5);
    });

    test('a negative duration is dropped and sets no exemplar; NaN creates the series only', () => {
      const { h, push, flush } = rig(way);
      h.enableExemplars((j) => `j${j}`, () => 42);
      // kind 1: a bucket index of -1 would land in the last slot of series 0
      push(OBS_PARTITION_GPU, 1, -1, 5, 0);
      push(OBS_PARTITION_SYNTHESIS, 1, -1, 5, 0);
      push(OBS_PROOF_DONE, 1, -1, 5, 0);
      push(OBS_QUEUE_WAIT, 1, -1, 5, 0);
      flush();
      for (const t of [h.partitionGpuSeconds, h.partitionSynthesisSeconds, h.proofSeconds, h.queueWaitSeconds]) {
        expect(t.size).toBe(0);
        expect(t.exId.every((x) => x === undefined)).toBe(true);
      }
    });
  });

  describe(`exemplars (${way}, a given clock)`, () => {
    test('value, clock, job id and partition; none before enableExemplars; none without a job', () => {
      const { h, push, flush } = rig(way);
      push(OBS_PARTITION_GPU, 1, 0.3, 7, 2); // exemplars off
      flush();
      expect(h.partitionGpuSeconds.exId.every((x) => x === undefined)).toBe(true);
      let clock = 1000;
      h.enableExemplars((j) => (j === 9 ? undefined : `job-${j}`), () => clock++);
      push(OBS_PARTITION_GPU, 1, 0.3, 7, 2);
      push(OBS_PARTITION_SYNTHESIS, 2, 30, 8, 0);
      push(OBS_PROOF_DONE, 3, 100, 11, 0);
      push(OBS_QUEUE_WAIT, 0, 0.02, 12, 5); // aux is not a partition for queue waits
      flush();
      const g = h.partitionGpuSeconds;
      const eg = 1 * g.width + bucket(BUCKETS.partitionGpu, 0.3);
      expect([g.exValue[eg], g.exTimeMs[eg], g.exId[eg], g.exPartition[eg]]).toEqual([0.3, 1000, 'job-7', 2]);
      const s = h.partitionSynthesisSeconds;
      const es = 2 * s.width + bucket(BUCKETS.partitionSynthesis, 30);
      expect([s.exValue[es], s.exTimeMs[es], s.exId[es], s.exPartition[es]]).toEqual([30, 1001, 'job-8', 0]);
      const p = h.proofSeconds;
      const ep = 3 * p.width + bucket(BUCKETS.proof, 100);
      expect([p.exValue[ep], p.exTimeMs[ep], p.exId[ep], p.exPartition[ep]]).toEqual([100, 1002, 'job-11', -1]);
      const w = h.queueWaitSeconds;
      const ew = 0 * w.width + bucket(BUCKETS.queueWait, 0.02);
      expect([w.exValue[ew], w.exTimeMs[ew], w.exId[ew], w.exPartition[ew]]).toEqual([0.02, 1003, 'job-12', -1]);
      // exactly those four slots are set
      expect(g.exId.filter((x) => x !== undefined)).toEqual(['job-7']);
      expect(s.exId.filter((x) => x !== undefined)).toEqual(['job-8']);
      expect(p.exId.filter((x) => x !== undefined)).toEqual(['job-11']);
      expect(w.exId.filter((x) => x !== undefined)).toEqual(['job-12']);
    });

    test('an unknown job (undefined or empty id) leaves the bucket as it was; a negative partition is none', () => {
      const { h, push, flush } = rig(way);
      const ids = new Map<number, string>([
        [1, 'a'],
        [3, ''],
      ]);
      h.enableExemplars((j) => ids.get(j), () => 5);
      push(OBS_PARTITION_GPU, 0, 0.3, 1, -4);
      push(OBS_PARTITION_GPU, 0, 0.31, 2, 6); // unknown
      push(OBS_PARTITION_GPU, 0, 0.32, 3, 7); // empty id
      flush();
      const g = h.partitionGpuSeconds;
      const e = bucket(BUCKETS.partitionGpu, 0.3);
      expect([g.exValue[e], g.exId[e], g.exPartition[e]]).toEqual([0.3, 'a', -1]);
      expect(g.count[0]).toBe(3);
      // the source learns the ids: they are looked up again, not remembered as unknown
      ids.set(2, 'b');
      ids.set(3, 'c');
      push(OBS_PARTITION_GPU, 0, 0.31, 2, 6);
      flush();
      expect([g.exValue[e], g.exId[e], g.exPartition[e]]).toEqual([0.31, 'b', 6]);
      push(OBS_PARTITION_GPU, 0, 0.32, 3, 0);
      flush();
      expect([g.exValue[e], g.exId[e], g.exPartition[e]]).toEqual([0.32, 'c', 0]);
    });

    test('bucket 0 (the smallest durations) keeps exemplars too, in every family', () => {
      const { h, push, flush } = rig(way);
      h.enableExemplars((j) => `job-${j}`, () => 9);
      push(OBS_PARTITION_GPU, 1, 0.001, 1, 0);
      push(OBS_PARTITION_SYNTHESIS, 1, 0.001, 2, 1);
      push(OBS_PROOF_DONE, 1, 0.01, 3, 0);
      push(OBS_QUEUE_WAIT, 1, 0.0005, 4, 0);
      flush();
      const w = h.partitionGpuSeconds.width;
      expect(h.partitionGpuSeconds.exId[w]).toBe('job-1');
      expect(h.partitionSynthesisSeconds.exId[h.partitionSynthesisSeconds.width]).toBe('job-2');
      expect(h.proofSeconds.exId[h.proofSeconds.width]).toBe('job-3');
      expect(h.queueWaitSeconds.exId[h.queueWaitSeconds.width]).toBe('job-4');
    });

    test('jobs that share an L1 slot (2, 66: mod 64) keep their own ids', () => {
      const { h, push, flush } = rig(way);
      h.enableExemplars((j) => (j === 130 ? undefined : `job-${j}`), () => 9);
      for (let round = 0; round < 2; round++) {
        push(OBS_QUEUE_WAIT, 0, 0.0005, 2, 0); // bucket 0
        push(OBS_QUEUE_WAIT, 0, 0.005, 66, 0); // bucket 1
        push(OBS_QUEUE_WAIT, 0, 0.02, 130, 0); // bucket 2: unknown
        flush();
      }
      expect(h.queueWaitSeconds.exId.slice(0, 3)).toEqual(['job-2', 'job-66', undefined]);
    });

    test('finalize and idle-gap histograms keep no exemplars', () => {
      const { h, push, flush } = rig(way, { ordinals: [0] });
      h.enableExemplars((j) => `j${j}`, () => 5);
      push(OBS_PARTITION_FINALIZE, 0, 0.3, 1, 1);
      push(OBS_GPU_IDLE_GAP, 0, 0.3, 1, 1);
      flush();
      expect(h.partitionFinalizeSeconds.count[0]).toBe(1);
      expect(h.gpuIdleGapSeconds.count[0]).toBe(1);
      expect(h.partitionFinalizeSeconds.exId.length).toBe(0);
      expect(h.gpuIdleGapSeconds.exId.length).toBe(0);
    });
  });
}

test('a call without a job records no exemplar (the model always has one; a source may not)', () => {
  const h = new StateModel().histograms;
  h.enableExemplars((j) => `job-${j}`, () => 9);
  h.partitionGpu(0, 0.3, undefined, 1);
  h.partitionSynthesis(0, 0.3, undefined, 1);
  h.proofDone(0, 0, 0.3, undefined);
  h.queueWait(0, 0.3, undefined);
  for (const t of [h.partitionGpuSeconds, h.partitionSynthesisSeconds, h.proofSeconds, h.queueWaitSeconds]) {
    expect(t.count[0]).toBe(1);
    expect(t.exId.every((x) => x === undefined)).toBe(true);
  }
  // a partition left out is none
  h.partitionGpu(0, 0.3, 5);
  expect(h.partitionGpuSeconds.exPartition[bucket(BUCKETS.partitionGpu, 0.3)]).toBe(-1);
  expect(h.partitionGpuSeconds.exId[bucket(BUCKETS.partitionGpu, 0.3)]).toBe('job-5');
});

describe('exemplars with the default clock (queued: set after the counts, latest first)', () => {
  let spy: jest.SpyInstance;
  let now = 0;
  beforeEach(() => {
    now = 777;
    spy = jest.spyOn(Date, 'now').mockImplementation(() => now);
  });
  afterEach(() => spy.mockRestore());

  test("each bucket's exemplar is its latest observation in the batch with a known job", () => {
    const h = new StateModel().histograms;
    const lookups: number[] = [];
    h.enableExemplars((j) => {
      lookups.push(j);
      return j >= 100 ? undefined : `job-${j}`;
    });
    const q = new ObservationQueue();
    // one GPU bucket (0.25 < v <= 0.5): jobs 1, 2, then unknown 100 last
    q.push(OBS_PARTITION_GPU, 0, 0.3e9, 1, 1);
    q.push(OBS_PARTITION_GPU, 0, 0.4e9, 2, 2);
    q.push(OBS_PARTITION_GPU, 0, 0.45e9, 100, 3);
    // a proof: aux is the outcome, not a partition
    q.push(OBS_PROOF_DONE, 1, 20e9, 3, 0);
    h.observeQueued(q);
    const g = h.partitionGpuSeconds;
    const e = bucket(BUCKETS.partitionGpu, 0.3);
    expect([g.exValue[e], g.exId[e], g.exPartition[e], g.exTimeMs[e]]).toEqual([0.4, 'job-2', 2, 777]);
    expect(g.count[0]).toBe(3);
    const p = h.proofSeconds;
    const ep = p.width + bucket(BUCKETS.proof, 20);
    expect([p.exValue[ep], p.exId[ep], p.exPartition[ep], p.exTimeMs[ep]]).toEqual([20, 'job-3', -1, 777]);
    // job 1's observation was overtaken by job 2's: never looked up
    expect(lookups.sort((a, b) => a - b)).toEqual([2, 3, 100]);
  });

  test('series 0 bucket 0, partition 0 and negative partitions; no exemplars for finalize and idle gaps', () => {
    const model = new StateModel();
    model.setTopology(topo([0]), 0);
    const h = model.histograms;
    h.enableExemplars((j) => `job-${j}`);
    const q = new ObservationQueue();
    q.push(OBS_PARTITION_GPU, 0, 1e6, 1, 0); // kind 0, bucket 0: slot 0
    q.push(OBS_PARTITION_SYNTHESIS, 0, 1e6, 2, -3);
    q.push(OBS_QUEUE_WAIT, 0, 1e6, 3, 7); // aux is no partition here
    q.push(OBS_PARTITION_FINALIZE, 0, 1e6, 4, 0);
    q.push(OBS_GPU_IDLE_GAP, 0, 1e6, 5, 0);
    h.observeQueued(q);
    const g = h.partitionGpuSeconds;
    expect([g.exValue[0], g.exId[0], g.exPartition[0], g.exTimeMs[0]]).toEqual([0.001, 'job-1', 0, 777]);
    const s = h.partitionSynthesisSeconds;
    expect([s.exId[0], s.exPartition[0]]).toEqual(['job-2', -1]);
    const w = h.queueWaitSeconds;
    const ew = bucket(BUCKETS.queueWait, 0.001);
    expect([w.exId[ew], w.exPartition[ew]]).toEqual(['job-3', -1]);
    expect(h.partitionFinalizeSeconds.count[0]).toBe(1);
    expect(h.gpuIdleGapSeconds.count[0]).toBe(1);
    expect(h.partitionFinalizeSeconds.exId.length).toBe(0);
    expect(h.gpuIdleGapSeconds.exId.length).toBe(0);
  });

  test('a later batch sets the bucket again (each batch its own marks)', () => {
    const h = new StateModel().histograms;
    h.enableExemplars((j) => `job-${j}`);
    const q = new ObservationQueue();
    const e = bucket(BUCKETS.partitionGpu, 0.3);
    const g = h.partitionGpuSeconds;
    for (const j of [1, 2, 3]) {
      q.n = 0;
      q.push(OBS_PARTITION_GPU, 0, 0.3e9, j, j);
      h.observeQueued(q);
      expect([g.exId[e], g.exPartition[e]]).toEqual([`job-${j}`, j]);
    }
  });

  test('after 2^32 - 1 batches the marks start again and exemplars are still set', () => {
    const h = new StateModel().histograms;
    h.enableExemplars((j) => `job-${j}`);
    const q = new ObservationQueue();
    const g = h.partitionGpuSeconds;
    const e = bucket(BUCKETS.partitionGpu, 0.3);
    q.push(OBS_PARTITION_GPU, 0, 0.3e9, 1, 0);
    h.observeQueued(q); // this bucket carries mark 1
    expect(g.exId[e]).toBe('job-1');
    (h as unknown as { exMark: number }).exMark = 0xfffffffe; // as after ~4e9 batches
    q.n = 0;
    q.push(OBS_PARTITION_GPU, 0, 0.3e9, 2, 0);
    h.observeQueued(q); // mark 0xffffffff wraps to 1
    expect(g.exId[e]).toBe('job-2');
    q.n = 0;
    q.push(OBS_PARTITION_GPU, 0, 0.3e9, 3, 0);
    h.observeQueued(q);
    expect(g.exId[e]).toBe('job-3');
  });

  test('the clock is read once per synchronous run, again after it', async () => {
    const h = new StateModel().histograms;
    h.enableExemplars((j) => `job-${j}`);
    const q = new ObservationQueue();
    const g = h.partitionGpuSeconds;
    q.push(OBS_PARTITION_GPU, 0, 0.3e9, 1, 0);
    h.observeQueued(q);
    now = 900;
    q.n = 0;
    q.push(OBS_PARTITION_GPU, 0, 3e9, 2, 0);
    h.observeQueued(q);
    h.partitionGpu(1, 0.3, 1, 0);
    expect(g.exTimeMs[bucket(BUCKETS.partitionGpu, 0.3)]).toBe(777);
    expect(g.exTimeMs[bucket(BUCKETS.partitionGpu, 3)]).toBe(777);
    expect(g.exTimeMs[g.width + bucket(BUCKETS.partitionGpu, 0.3)]).toBe(777);
    await Promise.resolve();
    q.n = 0;
    q.push(OBS_PARTITION_GPU, 0, 3e9, 2, 0);
    h.observeQueued(q);
    expect(g.exTimeMs[bucket(BUCKETS.partitionGpu, 3)]).toBe(900);
  });
});

describe('the job id cache', () => {
  test('4096 ids at most: the 4097th clears it, and earlier jobs are looked up again', () => {
    const h = new StateModel().histograms;
    const calls = new Map<number, number>();
    h.enableExemplars((j) => {
      calls.set(j, (calls.get(j) ?? 0) + 1);
      return `j${j}`;
    }, () => 1);
    for (let j = 1; j <= 4096; j++) h.partitionGpu(0, 0.3, j, 0);
    h.partitionGpu(0, 0.3, 2, 0); // cached (4096 held): no lookup
    expect(calls.get(2)).toBe(1);
    h.partitionGpu(0, 0.3, 4097, 0); // full: cleared first
    h.partitionGpu(0, 0.3, 3, 0); // looked up again (its L1 slot was cleared with it)
    expect(calls.get(3)).toBe(2);
  });

  test('1 MiB of id characters exactly is kept; one more character clears it', () => {
    const h = new StateModel().histograms;
    const calls = new Map<number, number>();
    const len = new Map<number, number>([
      [1, 1 << 18],
      [2, 1 << 18],
      [3, 1 << 18],
      [4, 1 << 18],
      [5, 1],
    ]);
    h.enableExemplars((j) => {
      calls.set(j, (calls.get(j) ?? 0) + 1);
      return String(j).repeat(len.get(j)!);
    }, () => 1);
    for (const j of [1, 2, 3, 4]) h.partitionGpu(0, 0.3, j, 0);
    const inner = h as unknown as { ids: Map<number, string> };
    expect(inner.ids.size).toBe(4); // exactly 1 MiB: all kept
    h.partitionGpu(0, 0.3, 1, 0);
    expect(calls.get(1)).toBe(1);
    h.partitionGpu(0, 0.3, 5, 0); // one character more: cleared first
    expect(inner.ids.size).toBe(1);
    h.partitionGpu(0, 0.3, 1, 0);
    expect(calls.get(1)).toBe(2);
    // the count of characters started again at the clear: 5 and 1 are both held
    expect(inner.ids.size).toBe(2);
  });

  test('enableExemplars again starts a fresh cache with the new resolver', () => {
    const h = new StateModel().histograms;
    h.enableExemplars((j) => `old-${j}`, () => 1);
    h.partitionGpu(0, 0.3, 1, 0);
    h.enableExemplars((j) => `new-${j}`, () => 1);
    h.partitionGpu(0, 0.3, 1, 0);
    expect(h.partitionGpuSeconds.exId[bucket(BUCKETS.partitionGpu, 0.3)]).toBe('new-1');
  });
});
