/**
 * The soak's leak criterion (bench/README.md, "Soak", says why it is sound).
 *
 * Input: the heap a process retains — bytes used right after a forced full GC — sampled
 * over the judged window (after warm-up). A healthy process retains a bounded amount that
 * wanders with what is in flight at the sampling instant (a request, a poll body, a proof);
 * a leak adds retained bytes in proportion to the work done, i.e. to time under a steady
 * load. So the test is on the *trend*, estimated robustly:
 *
 *  - Theil–Sen slope (median of all pairwise slopes): a sample that caught a 4 MiB poll
 *    body in flight moves it by at most one rank, where it would tilt a least-squares fit;
 *  - growth = slope × window length: what the trend says was added over the window.
 *
 * Leak ⇔ growth > max(floorBytes, floorFraction × median level). The bound is absolute
 * growth over the window, so a longer soak tests a smaller rate (it resolves slower leaks),
 * while its level — a few MiB — is far above what a bounded process's trend can show (its
 * trend over any window is at most its in-flight spread) and far below a leak of the size
 * RSS showed (15–20 MiB in 4 minutes).
 */
import { median } from './stats';

export interface TrendVerdict {
  samples: number;
  windowS: number;
  /** Median of the samples, bytes. */
  levelBytes: number;
  minBytes: number;
  maxBytes: number;
  /** Theil–Sen slope, bytes per minute. */
  slopeBytesPerMin: number;
  /** slope × window: bytes the trend added over the judged window. */
  growthBytes: number;
  boundBytes: number;
  /** Fails the soak: growth over the bound, or too few samples to estimate a trend. */
  leak: boolean;
}

/** Samples a trend needs (80 s of the window at the default 10 s). */
export const MIN_SAMPLES = 8;

export interface Bound {
  floorBytes: number;
  floorFraction: number;
}

/** Median of pairwise slopes (dv/dt over pairs with distinct t); NaN under two samples. */
export function theilSen(t: readonly number[], v: readonly number[]): number {
  const slopes: number[] = [];
  for (let i = 0; i < t.length; i++) {
    for (let j = i + 1; j < t.length; j++) if (t[j] !== t[i]) slopes.push((v[j] - v[i]) / (t[j] - t[i]));
  }
  return slopes.length === 0 ? NaN : median(slopes);
}

/** t in seconds, v in bytes, both for the judged window only. */
export function judgeTrend(t: readonly number[], v: readonly number[], bound: Bound): TrendVerdict {
  const pts = t.map((x, i) => [x, v[i]] as const).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  const ts = pts.map(([x]) => x);
  const vs = pts.map(([, y]) => y);
  const windowS = ts.length ? ts[ts.length - 1] - ts[0] : 0;
  const slopePerS = theilSen(ts, vs);
  const levelBytes = median(vs);
  const growthBytes = slopePerS * windowS;
  const boundBytes = Math.max(bound.floorBytes, bound.floorFraction * levelBytes);
  return {
    samples: ts.length,
    windowS,
    levelBytes,
    minBytes: Math.min(...vs),
    maxBytes: Math.max(...vs),
    slopeBytesPerMin: slopePerS * 60,
    growthBytes,
    boundBytes,
    // Too few samples to estimate a trend is a failure, not a pass.
    leak: !(ts.length >= MIN_SAMPLES && growthBytes <= boundBytes),
  };
}
