/**
 * HistogramTable (src/engine/model/histogram-table.ts) on its own, case by case, by the rules
 * of its header (the SDK's explicit-bucket histogram): bucket i counts bounds[i-1] < v <=
 * bounds[i], the last bucket is +Inf; a negative value is dropped; NaN creates the series
 * but is not counted; series in the order first observed, each stamped with the wall clock
 * of its first observation; grow keeps what was recorded and new series start empty.
 * The binade shortcut must give what a plain search gives, for any bounds.
 */
import { bucketIndex, HistogramTable } from '../../src/engine/model/histogram-table';

/** The naive rule: the first bound >= v, else bounds.length (+Inf). */
const linear = (bounds: readonly number[], v: number) => {
  for (let i = 0; i < bounds.length; i++) if (v <= bounds[i]) return i;
  return bounds.length;
};
const nextUp = (x: number) => {
  const f = new Float64Array([x]);
  const u = new BigUint64Array(f.buffer);
  u[0] += 1n;
  return f[0];
};
const nextDown = (x: number) => {
  const f = new Float64Array([x]);
  const u = new BigUint64Array(f.buffer);
  u[0] -= 1n;
  return f[0];
};
/** Values on, just above and just below each bound, and the extremes. */
function probes(bounds: readonly number[]): number[] {
  const out = [0, -0, Number.MIN_VALUE, 1e-300, 2.2250738585072014e-308, 1e300, Number.MAX_VALUE, Infinity];
  for (const b of bounds) if (b > 0 && Number.isFinite(b)) out.push(b, nextUp(b), nextDown(b), b * 1.01, b * 0.99, b * 2, b / 2);
  return out;
}

describe('bucketIndex', () => {
  test('the first bound >= value (le inclusive), bounds.length past the last', () => {
    const bounds = [1, 2, 4, 8];
    expect(bucketIndex(bounds, 0)).toBe(0);
    expect(bucketIndex(bounds, 1)).toBe(0);
    expect(bucketIndex(bounds, 1.5)).toBe(1);
    expect(bucketIndex(bounds, 2)).toBe(1);
    expect(bucketIndex(bounds, 3)).toBe(2);
    expect(bucketIndex(bounds, 4)).toBe(2);
    expect(bucketIndex(bounds, 8)).toBe(3);
    expect(bucketIndex(bounds, 8.0001)).toBe(4);
    expect(bucketIndex(bounds, Infinity)).toBe(4);
    expect(bucketIndex([], 5)).toBe(0);
    expect(bucketIndex([3], 3)).toBe(0);
    expect(bucketIndex([3], 4)).toBe(1);
  });

  test('agrees with the linear rule on sorted bounds of every length 0..20', () => {
    for (let n = 0; n <= 20; n++) {
      const bounds = Array.from({ length: n }, (_, i) => (i + 1) * 0.5);
      for (let v = -1; v <= n * 0.5 + 1; v += 0.25) expect([n, v, bucketIndex(bounds, v)]).toEqual([n, v, linear(bounds, v)]);
    }
  });
});

describe('bucketOf (the binade table) gives what the search gives', () => {
  const cases: Record<string, number[]> = {
    'the model buckets (partition GPU)': [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
    'idle gaps (sub-millisecond)': [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60],
    'several bounds in one binade': [1, 1.1, 1.2, 1.3, 1.9, 2, 3, 3.5],
    'powers of two (each bound the first value of a binade)': [0.25, 0.5, 1, 2, 4, 8],
    'one bound': [7],
    'no bounds': [],
    'subnormal and huge bounds': [Number.MIN_VALUE, 1e-310, 1e-300, 1, 1e300],
    'a bound of 0 (no table)': [0, 1, 2],
    'a negative bound (no table)': [-1, 1, 2],
    'an infinite bound (no table)': [1, 2, Infinity],
    '256 bounds (no table)': Array.from({ length: 256 }, (_, i) => (i + 1) / 16),
    '255 bounds': Array.from({ length: 255 }, (_, i) => (i + 1) / 16),
  };
  for (const [name, bounds] of Object.entries(cases)) {
    test(name, () => {
      const t = new HistogramTable(bounds, 1);
      for (const v of probes(bounds)) expect([v, t.bucketOf(v)]).toEqual([v, linear(bounds, v)]);
      expect(t.width).toBe(bounds.length + 1);
    });
  }

  test('bounds out of order: the table is not used (the answer is that of the search, whatever it is)', () => {
    for (const bounds of [
      [2, 1, 3],
      [1, 1, 2],
      [1, 4, 3, 8],
      [1, NaN, 3],
    ]) {
      const t = new HistogramTable(bounds, 1);
      for (const v of [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 9]) expect([bounds, v, t.bucketOf(v)]).toEqual([bounds, v, bucketIndex(bounds, v)]);
    }
  });
});

test('the binade table exists exactly where the header allows it: at most 255 bounds, each positive, finite and above the one before', () => {
  const starts = (bounds: number[]) => (new HistogramTable(bounds, 1) as unknown as { starts: Uint8Array | null }).starts;
  const up = (n: number) => Array.from({ length: n }, (_, i) => (i + 1) / 16);
  expect(starts([1, 2, 4])).not.toBeNull();
  expect(starts([])).not.toBeNull();
  expect(starts([5])).not.toBeNull();
  expect(starts(up(255))).not.toBeNull();
  expect(starts(up(256))).toBeNull();
  expect(starts([0, 1])).toBeNull();
  expect(starts([1, 0])).toBeNull();
  expect(starts([-1, 1])).toBeNull();
  expect(starts([1, Infinity])).toBeNull();
  expect(starts([Infinity])).toBeNull();
  expect(starts([NaN])).toBeNull();
  expect(starts([1, NaN])).toBeNull();
  expect(starts([2, 1])).toBeNull();
  expect(starts([1, 1])).toBeNull();
  expect(starts([1, 2, 2])).toBeNull();
  // each binade starts at the first bound >= its smallest value: 1 (2^0) at bound 1, 3 (binade [2, 4)) at bound 4
  const t = starts([1, 4, 16])!;
  expect(t[1023]).toBe(0); // [1, 2)
  expect(t[1024]).toBe(1); // [2, 4)
  expect(t[1025]).toBe(1); // [4, 8)
  expect(t[1026]).toBe(2); // [8, 16)
  expect(t[1027]).toBe(2); // [16, 32)
  expect(t[1028]).toBe(3); // [32, 64)
  expect(t[0]).toBe(0); // zero and subnormals
  expect(t[2047]).toBe(3); // Infinity, NaN
});

describe('observe', () => {
  let now = 5_000;
  let spy: jest.SpyInstance;
  beforeEach(() => {
    now = 5_000;
    spy = jest.spyOn(Date, 'now').mockImplementation(() => now);
  });
  afterEach(() => spy.mockRestore());

  test('counts, sum, min, max and the bucket of each value; returns the bucket', () => {
    const t = new HistogramTable([1, 2, 4], 2);
    expect(t.observe(1, 3)).toBe(2);
    expect(t.observe(1, 1)).toBe(0);
    expect(t.observe(1, 0)).toBe(0);
    expect(t.observe(1, 9)).toBe(3);
    expect(t.observe(1, 2)).toBe(1);
    expect(t.count[1]).toBe(5);
    expect(t.sum[1]).toBe(15);
    expect(t.min[1]).toBe(0);
    expect(t.max[1]).toBe(9);
    expect([...t.buckets.subarray(4, 8)]).toEqual([2, 1, 1, 1]);
    // series 0 untouched
    expect(t.count[0]).toBe(0);
    expect(t.sum[0]).toBe(0);
    expect(t.min[0]).toBe(Infinity);
    expect(t.max[0]).toBe(-Infinity);
    expect([...t.buckets.subarray(0, 4)]).toEqual([0, 0, 0, 0]);
  });

  test('min and max follow values in both directions', () => {
    const t = new HistogramTable([1], 1);
    t.observe(0, 5);
    expect([t.min[0], t.max[0]]).toEqual([5, 5]);
    t.observe(0, 3);
    expect([t.min[0], t.max[0]]).toEqual([3, 5]);
    t.observe(0, 8);
    expect([t.min[0], t.max[0]]).toEqual([3, 8]);
  });

  test('a negative value is dropped and creates no series; 0 and -0 count', () => {
    const t = new HistogramTable([1], 1);
    expect(t.observe(0, -1)).toBe(-1);
    expect(t.observe(0, -Number.MIN_VALUE)).toBe(-1);
    expect(t.size).toBe(0);
    expect(t.seen[0]).toBe(0);
    expect(t.count[0]).toBe(0);
    expect(t.observe(0, 0)).toBe(0);
    expect(t.observe(0, -0)).toBe(0);
    expect(t.count[0]).toBe(2);
    expect(t.size).toBe(1);
  });

  test('NaN creates the series (start time, order) but is not counted', () => {
    const t = new HistogramTable([1], 2);
    now = 7_000;
    expect(t.observe(1, NaN)).toBe(-1);
    expect(t.size).toBe(1);
    expect(t.order).toEqual([1]);
    expect(t.startMs[1]).toBe(7_000);
    expect(t.count[1]).toBe(0);
    expect(t.sum[1]).toBe(0);
    expect([...t.buckets]).toEqual([0, 0, 0, 0]);
  });

  test('series in first-observed order, each stamped once with the clock of its first observation', () => {
    const t = new HistogramTable([1], 3);
    now = 100;
    t.observe(2, 0.5);
    now = 200;
    t.observe(0, 0.5);
    now = 300;
    t.observe(2, 0.5);
    t.observe(1, 0.5);
    expect(t.order).toEqual([2, 0, 1]);
    expect(t.size).toBe(3);
    expect([...t.startMs]).toEqual([200, 300, 100]);
    expect([...t.seen]).toEqual([1, 1, 1]);
  });

  test('setExemplar writes the slot of (series, bucket) only', () => {
    const t = new HistogramTable([1, 2], 2, true);
    expect(t.exValue.length).toBe(6);
    expect([...t.exPartition]).toEqual([-1, -1, -1, -1, -1, -1]);
    t.setExemplar(1, 2, 3.5, 1234, 'job-x', 7);
    expect(t.exValue[5]).toBe(3.5);
    expect(t.exTimeMs[5]).toBe(1234);
    expect(t.exId[5]).toBe('job-x');
    expect(t.exPartition[5]).toBe(7);
    expect([...t.exValue.subarray(0, 5)]).toEqual([0, 0, 0, 0, 0]);
    expect(t.exId.slice(0, 5)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    const plain = new HistogramTable([1, 2], 2);
    expect([plain.exValue.length, plain.exTimeMs.length, plain.exPartition.length, plain.exId.length, plain.exMark.length]).toEqual([0, 0, 0, 0, 0]);
  });
});

describe('grow', () => {
  test('keeps what was recorded; new series start empty, with empty exemplar slots', () => {
    const t = new HistogramTable([1, 2], 1, true);
    t.observe(0, 1.5);
    t.setExemplar(0, 1, 1.5, 99, 'a', 3);
    t.exMark[1] = 4;
    t.grow(3);
    expect(t.count.length).toBeGreaterThanOrEqual(3);
    expect([t.count[0], t.sum[0], t.min[0], t.max[0]]).toEqual([1, 1.5, 1.5, 1.5]);
    expect([...t.buckets.subarray(0, 3)]).toEqual([0, 1, 0]);
    expect(t.seen[0]).toBe(1);
    for (const s of [1, 2]) {
      expect([t.count[s], t.sum[s], t.min[s], t.max[s], t.seen[s], t.startMs[s]]).toEqual([0, 0, Infinity, -Infinity, 0, 0]);
      for (let b = 0; b < 3; b++) {
        const i = s * 3 + b;
        expect([t.buckets[i], t.exValue[i], t.exTimeMs[i], t.exPartition[i], t.exId[i], t.exMark[i]]).toEqual([0, 0, 0, -1, undefined, 0]);
      }
    }
    expect([t.exValue[1], t.exTimeMs[1], t.exId[1], t.exPartition[1], t.exMark[1]]).toEqual([1.5, 99, 'a', 3, 4]);
    expect(t.exId.length).toBeGreaterThanOrEqual(9);
    // the new series record like any other
    expect(t.observe(2, 5)).toBe(2);
    expect(t.count[2]).toBe(1);
    expect(t.order).toEqual([0, 2]);
  });

  test('growing again, past double, keeps everything', () => {
    const t = new HistogramTable([1], 1, true);
    t.observe(0, 0.5);
    t.grow(2);
    t.observe(1, 2);
    t.setExemplar(1, 1, 2, 5, 'b', -1);
    t.grow(9);
    expect(t.count.length).toBeGreaterThanOrEqual(9);
    expect(t.exId.length).toBeGreaterThanOrEqual(18);
    expect([t.count[0], t.count[1], t.count[8]]).toEqual([1, 1, 0]);
    expect(t.exId[3]).toBe('b');
    expect(t.exId[17]).toBeUndefined();
    expect(t.exPartition[17]).toBe(-1);
    expect(t.min[8]).toBe(Infinity);
    t.observe(8, 0.25);
    expect(t.count[8]).toBe(1);
  });

  test('a table without exemplars grows no exemplar arrays; a grow within capacity changes nothing', () => {
    const t = new HistogramTable([1], 4);
    t.observe(3, 2);
    const count = t.count;
    t.grow(4);
    expect(t.count).toBe(count);
    t.grow(6);
    expect(t.exValue.length).toBe(0);
    expect(t.exId.length).toBe(0);
    expect(t.count[3]).toBe(1);
  });

  test('a table made for 0 series holds one', () => {
    const t = new HistogramTable([1], 0);
    expect(t.observe(0, 1)).toBe(0);
    expect(t.count[0]).toBe(1);
  });
});
