/**
 * The soak's leak criterion (bench/lib/trend.ts): heap after a full GC, sampled over the
 * judged window; leak when the Theil–Sen trend times the window exceeds the bound.
 * Deterministic series (a seeded generator), shaped like what the soak measured: a flat
 * heap wandering within ±0.5 MiB with a rare 4 MiB in-flight body must pass; the RSS-sized
 * growth the issue saw (~4 MiB/min) and the slow leak the soak found (170 KiB/min over
 * 45 minutes) must fail.
 */
import { judgeTrend, theilSen } from '../../bench/lib/trend';

const MiB = 1024 * 1024;
const BOUND = { floorBytes: 2 * MiB, floorFraction: 0.05 };

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

/** Samples every 10 s from `fromS` to `toS`: level + slope·t + noise, every 17th with a spike. */
function series(fromS: number, toS: number, levelMiB: number, slopeMiBPerMin: number, seed = 1): { t: number[]; v: number[] } {
  const r = rng(seed);
  const t: number[] = [];
  const v: number[] = [];
  for (let s = fromS, k = 0; s <= toS; s += 10, k++) {
    t.push(s);
    const spike = k % 17 === 5 ? 4 * MiB : 0;
    v.push(levelMiB * MiB + (slopeMiBPerMin / 60) * (s - fromS) * MiB + (r() - 0.5) * MiB + spike);
  }
  return { t, v };
}

test('Theil–Sen: the slope of a line, unmoved by a minority of outliers', () => {
  const t = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  expect(theilSen(t, t.map((x) => 3 * x + 1))).toBe(3);
  expect(theilSen(t, t.map((x, i) => (i === 2 || i === 7 ? 1000 : 3 * x + 1)))).toBe(3);
});

test.each([
  ['CI: 2-minute window', 60, 180],
  ['the hour: 45-minute window', 900, 3600],
])('a flat heap with noise and in-flight spikes passes (%s)', (_w, from, to) => {
  for (let seed = 1; seed <= 20; seed++) {
    const { t, v } = series(from, to, 13, 0, seed);
    const j = judgeTrend(t, v, BOUND);
    expect([seed, j.leak]).toEqual([seed, false]);
    expect(Math.abs(j.growthBytes)).toBeLessThan(1 * MiB);
  }
});

test('growth of the size RSS showed (4 MiB/min) fails in the CI window', () => {
  const { t, v } = series(60, 180, 13, 4);
  const j = judgeTrend(t, v, BOUND);
  expect(j.leak).toBe(true);
  expect(j.growthBytes / MiB).toBeGreaterThan(6);
});

test("the soak's slow leak (170 KiB/min) fails over the hour's window", () => {
  const { t, v } = series(900, 3600, 13, 170 / 1024);
  const j = judgeTrend(t, v, BOUND);
  expect(j.leak).toBe(true);
  expect(j.slopeBytesPerMin / 1024).toBeGreaterThan(120);
});

test('too few samples to estimate a trend is a failure, not a pass', () => {
  const { t, v } = series(60, 120, 13, 0);
  expect(judgeTrend(t.slice(0, 5), v.slice(0, 5), BOUND).leak).toBe(true);
});
