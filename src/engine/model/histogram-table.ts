/**
 * One histogram family kept in typed arrays: per series (a proof kind, a GPU) the count,
 * sum, min, max and per-bucket counts, and optionally one exemplar slot per bucket. An
 * observation is a binary search over the bounds and a few array writes (~20 ns), where
 * an OpenTelemetry SDK `record()` costs ~1.2 µs (it hashes the attribute set each time;
 * DESIGN §5 "Where the time goes").
 *
 * Semantics are the SDK's explicit-bucket histogram, so /metrics and OTLP carry what the
 * SDK instrument carried (test/unit/histogram-table.test.ts checks both against it):
 *  - bucket i counts values v with bounds[i-1] < v <= bounds[i] (`le` is inclusive); the
 *    last bucket is +Inf;
 *  - a negative value is dropped (the SDK refuses it for histograms); NaN creates the
 *    series (as the SDK's first record does) but is not counted;
 *  - series are exported in the order they were first observed;
 *  - a series' start time is the wall clock of its first observation.
 * One deliberate difference: the sum is the running sum of the observations in order. The
 * SDK adds per-collection partial sums, so its `_sum` depended, in the last digits, on when
 * scrapes happened; this one does not (the same reason the counters are not SDK
 * instruments, state-metrics.ts). With one collection both are the same number.
 */

/** Index of the bucket `value` falls in: the first bound >= value (bounds.length for +Inf), as the SDK searches. */
export function bucketIndex(bounds: readonly number[], value: number): number {
  let lo = 0;
  let hi = bounds.length - 1;
  let ret = bounds.length;
  while (hi >= lo) {
    const mid = (lo + hi) >>> 1;
    if (bounds[mid] < value) lo = mid + 1;
    else {
      ret = mid;
      hi = mid - 1;
    }
  }
  return ret;
}

/** Scratch for reading a double's exponent bits (bucketStarts). */
const F64 = new Float64Array(1);
const HI32 = new Uint32Array(F64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const EXP_HI = LITTLE_ENDIAN ? 1 : 0;
const BINADES = 2048;

/**
 * Per binary exponent of a double (its 11 exponent bits), the first bucket whose bound is at
 * least the smallest value with that exponent: the search for a value then starts there and
 * steps past the few bounds inside its binade (bounds here are >= 1.5x apart, so 0–2 steps)
 * instead of a binary search of ~4 unpredictable branches (~2x the time of an observation,
 * bench/ingest.ts). Null when a bound is not positive and finite: bucketIndex is used then.
 */
function bucketStarts(bounds: readonly number[]): Uint8Array | null {
  if (bounds.length > 255) return null;
  for (let i = 0; i < bounds.length; i++) if (!(bounds[i] > 0 && bounds[i] < Infinity) || (i > 0 && !(bounds[i] > bounds[i - 1]))) return null;
  const starts = new Uint8Array(BINADES);
  for (let e = 0; e < BINADES; e++) {
    // The smallest non-negative double with biased exponent e (0: zero and subnormals).
    HI32[EXP_HI] = e << 20;
    HI32[1 - EXP_HI] = 0;
    starts[e] = bucketIndex(bounds, F64[0]);
  }
  return starts;
}

export class HistogramTable {
  /** Buckets per series: bounds.length + 1 (the last is +Inf). */
  readonly width: number;
  /** Series in the order they were first observed. */
  readonly order: number[] = [];
  count: Float64Array;
  sum: Float64Array;
  min: Float64Array;
  max: Float64Array;
  /** Per series and bucket (series * width + bucket): observations in that bucket alone. */
  buckets: Float64Array;
  /** Wall clock (ms) of the series' first observation (valid where `seen`). */
  startMs: Float64Array;
  seen: Uint8Array;
  /**
   * Exemplars, when enabled: per series and bucket the latest observation's value, wall
   * clock (ms; 0 = none yet), partition (-1 = none) and job id.
   */
  exValue: Float64Array;
  exTimeMs: Float64Array;
  exPartition: Int32Array;
  exId: (string | undefined)[];
  /** Per exemplar slot, the batch that last observed it (ModelHistograms.observeQueued); 0 = none. */
  exMark: Uint32Array;
  /** Per exemplar slot, its latest observation's index in the batch that exMark names. */
  exLast: Int32Array;
  private capacity: number;
  /** bucketStarts(bounds), or null. */
  private readonly starts: Uint8Array | null;
  /** The bounds as a typed array (no holes or tags to check in the scan). */
  private readonly boundsF64: Float64Array;

  constructor(
    readonly bounds: readonly number[],
    series: number,
    readonly exemplars = false,
  ) {
    this.width = bounds.length + 1;
    this.starts = bucketStarts(bounds);
    this.boundsF64 = Float64Array.from(bounds);
    this.capacity = Math.max(1, series);
    const n = this.capacity;
    this.count = new Float64Array(n);
    this.sum = new Float64Array(n);
    this.min = new Float64Array(n).fill(Infinity);
    this.max = new Float64Array(n).fill(-Infinity);
    this.buckets = new Float64Array(n * this.width);
    this.startMs = new Float64Array(n);
    this.seen = new Uint8Array(n);
    const ex = exemplars ? n * this.width : 0;
    this.exValue = new Float64Array(ex);
    this.exTimeMs = new Float64Array(ex);
    this.exPartition = new Int32Array(ex).fill(-1);
    this.exId = new Array<string | undefined>(ex).fill(undefined);
    this.exMark = new Uint32Array(ex);
    this.exLast = new Int32Array(ex);
  }

  /** Series that exist (observed at least once, NaN included). */
  get size(): number {
    return this.order.length;
  }

  /**
   * Records one observation of series `s` (0 <= s < the capacity; see grow). Returns the
   * bucket, or -1 when the value was not counted (negative, NaN).
   */
  observe(s: number, value: number): number {
    if (value < 0) return -1;
    // The series' start time, as the SDK stamped it: the system clock at the first record.
    if (this.seen[s] === 0) this.first(s, Date.now());
    if (value !== value) return -1;
    this.count[s]++;
    this.sum[s] += value;
    this.min[s] = Math.min(value, this.min[s]);
    this.max[s] = Math.max(value, this.max[s]);
    const b = this.bucketOf(value);
    this.buckets[s * this.width + b]++;
    return b;
  }

  /** bucketIndex(bounds, value) for a value >= 0 (-0 included), through the binade table. */
  bucketOf(value: number): number {
    const starts = this.starts;
    if (starts === null) return bucketIndex(this.bounds, value);
    F64[0] = value;
    const bounds = this.boundsF64;
    const n = bounds.length;
    let i = starts[(HI32[EXP_HI] >>> 20) & 0x7ff];
    while (i < n && bounds[i] < value) i++;
    return i;
  }

  /** Puts an observation in bucket `b` of series `s` as that bucket's exemplar. */
  setExemplar(s: number, b: number, value: number, timeMs: number, id: string, partition: number): void {
    const i = s * this.width + b;
    this.exValue[i] = value;
    this.exTimeMs[i] = timeMs;
    this.exId[i] = id;
    this.exPartition[i] = partition;
  }

  /** Makes room for series up to `n` - 1 (new series start empty). */
  grow(n: number): void {
    if (n <= this.capacity) return;
    const cap = Math.max(n, this.capacity * 2);
    const w = this.width;
    const f64 = (a: Float64Array, per: number, fill: number) => {
      const b = new Float64Array(cap * per).fill(fill);
      b.set(a);
      return b;
    };
    this.count = f64(this.count, 1, 0);
    this.sum = f64(this.sum, 1, 0);
    this.min = f64(this.min, 1, Infinity);
    this.max = f64(this.max, 1, -Infinity);
    this.buckets = f64(this.buckets, w, 0);
    this.startMs = f64(this.startMs, 1, 0);
    const seen = new Uint8Array(cap);
    seen.set(this.seen);
    this.seen = seen;
    if (this.exemplars) {
      this.exValue = f64(this.exValue, w, 0);
      this.exTimeMs = f64(this.exTimeMs, w, 0);
      const p = new Int32Array(cap * w).fill(-1);
      p.set(this.exPartition);
      this.exPartition = p;
      this.exId.length = cap * w;
      this.exId.fill(undefined, this.capacity * w);
      const m = new Uint32Array(cap * w);
      m.set(this.exMark);
      this.exMark = m;
      const l = new Int32Array(cap * w);
      l.set(this.exLast);
      this.exLast = l;
    }
    this.capacity = cap;
  }

  private first(s: number, nowMs: number): void {
    this.seen[s] = 1;
    this.startMs[s] = nowMs;
    this.order.push(s);
  }
}
