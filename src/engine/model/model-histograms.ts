/**
 * The duration histograms of DESIGN §5 as typed arrays (histogram-table.ts), kept with the
 * StateModel and exported by the exporter's MetricProducer like the counters
 * (src/exporter/histograms.ts). It is a ModelObserver: the exporter makes it the model's
 * observer, so the model's own records and an attach source's forwarded observations
 * (src/engine/sources/attach/merge.ts) land here alike. Nothing on this path calls the
 * OpenTelemetry SDK.
 *
 * Exemplars (OpenMetrics; src/exporter/exemplars.ts renders them): for the four duration
 * histograms, per proof kind and bucket, the latest observation with its job's id, the
 * partition index for partition histograms, and the wall clock. The id is looked up
 * (through a small cache) only when a histogram is observed, never per event — for a
 * batch of the model's observations once per bucket it sets (observeQueued) — and an
 * observation whose job the source no longer knows leaves that bucket's exemplar as it was.
 */
import { HistogramTable } from './histogram-table';
import { KIND_SLOTS, OTHER_KIND_INDEX, OUTCOME_COMPLETED } from './kinds';
import { OBS_CAPACITY, OBS_GPU_IDLE_GAP, OBS_PARTITION_GPU, OBS_PARTITION_SYNTHESIS, OBS_PROOF_DONE, type ObservationQueue } from './observation-queue';
import type { ModelObserver, StateModel } from './state-model';

/** Bucket upper bounds in seconds, chosen for the data (sub-second to minutes). */
export const BUCKETS = {
  // Reference prover partitions take milliseconds; real cuzk GPU stages 0.3–5 s.
  partitionGpu: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
  // Split-proving finalize tails: cuzk's b_g2_msm epilogue ~0.4–1.7 s; the reference
  // prover's are milliseconds on its scaled-down sizes.
  partitionFinalize: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 4, 8, 16],
  // Real syntheses take 1–60 s (PoRep ~40 s), the reference prover's milliseconds.
  partitionSynthesis: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160],
  proof: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 2400],
  queueWait: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800],
  // Gaps between one GPU-lock release and the next acquire: microseconds when the
  // dual-worker interlock works, seconds when the GPU waits for synthesis.
  gpuIdleGap: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60],
} as const;

/** Job ids cached for exemplars (cleared when full: the next observations look them up again). */
const ID_CACHE_LIMIT = 4096;
/**
 * ... and at most this many characters of ids: an attached daemon's job ids may be up to
 * 1 MiB each (/status), so the entry count alone allowed gigabytes; a daemon naming jobs anew
 * with 20,000-character ids grew the heap steadily (the soak).
 */
const ID_CACHE_CHARS = 1 << 20;
/**
 * In front of that cache, the latest id per handle mod ID_L1_SIZE: consecutive observations
 * alternate between the jobs in flight, so remembering only the last job missed on 58 % of
 * exemplars (bench/ingest.ts's stream), each miss a Map lookup; this misses on 13 % (mostly
 * each job's first). Its entries are also in the cache and are cleared with it, so the
 * cache's character budget bounds both.
 */
const ID_L1_SIZE = 64;

const NS_PER_S = 1e9;

/** A kind as the model folds it: unknown or out-of-range kinds count as `other`. */
function kindSlot(kind: number): number {
  return kind >= 0 && kind < KIND_SLOTS ? kind : OTHER_KIND_INDEX;
}

export class ModelHistograms implements ModelObserver {
  // Per proof kind slot (KIND_LABELS).
  readonly partitionGpuSeconds = new HistogramTable(BUCKETS.partitionGpu, KIND_SLOTS, true);
  readonly partitionFinalizeSeconds = new HistogramTable(BUCKETS.partitionFinalize, KIND_SLOTS);
  readonly partitionSynthesisSeconds = new HistogramTable(BUCKETS.partitionSynthesis, KIND_SLOTS, true);
  readonly proofSeconds = new HistogramTable(BUCKETS.proof, KIND_SLOTS, true);
  readonly queueWaitSeconds = new HistogramTable(BUCKETS.queueWait, KIND_SLOTS, true);
  /**
   * Per GPU, by ordinal: series are keyed by the `gpu` label value (as the SDK keyed its
   * attribute sets), so a GPU keeps its series across topology changes; gpuLabels[s].
   */
  readonly gpuIdleGapSeconds = new HistogramTable(BUCKETS.gpuIdleGap, 1);
  readonly gpuLabels: string[] = [];
  /**
   * Wall clock (ms since the epoch) for exemplar timestamps. By default Date.now(), read
   * once per synchronous run of observations (a drain, a poll) rather than per exemplar:
   * it costs ~100 ns on a kvm-clock VM, as much as the rest of an observation, and every
   * exemplar of one run would read within that run's (sub-millisecond) duration anyway. A
   * clock given to enableExemplars (tests pin one) is read per exemplar.
   */
  private wallClockMs: () => number = Date.now;
  private clockPerRun = true;
  private runClockMs = 0;
  private runClockValid = false;
  private readonly endRun = () => {
    this.runClockValid = false;
  };

  private resolveId: ((handle: number) => string | undefined) | null = null;
  private readonly ids = new Map<number, string>();
  private idsChars = 0;
  /** ID_L1_SIZE slots: handle (NaN: empty) and its id. */
  private readonly l1Job = new Float64Array(ID_L1_SIZE).fill(NaN);
  private readonly l1Id: string[] = new Array<string>(ID_L1_SIZE).fill('');
  private readonly gpuSeriesByLabel = new Map<string, number>();
  /** GPU slot -> series, for the model's topology version gpuSlotsVersion. */
  private gpuSeriesOfSlot = new Int32Array(0);
  private gpuSlotsVersion = -1;

  /** The tables by OBS_* (observation-queue.ts). */
  private readonly tables: readonly HistogramTable[];
  /** Per queued observation, its exemplar slot (series * width + bucket), -1 for none (observeQueued). */
  private readonly exAt = new Int32Array(OBS_CAPACITY);
  /** Per bucket observed in the batch, its first observation's index (observeQueued). */
  private readonly exFirsts = new Int32Array(OBS_CAPACITY);
  /** The current batch's mark in HistogramTable.exMark (observeQueued). */
  private exMark = 0;

  constructor(private readonly model: StateModel) {
    this.tables = [this.partitionGpuSeconds, this.partitionFinalizeSeconds, this.partitionSynthesisSeconds, this.proofSeconds, this.queueWaitSeconds, this.gpuIdleGapSeconds];
  }

  /**
   * Exemplars on: `resolveId` gives the source's job id of a model job handle (undefined
   * when unknown: no exemplar is recorded then, rather than a made-up id).
   */
  enableExemplars(resolveId: (handle: number) => string | undefined, wallClockMs?: () => number): void {
    this.resolveId = resolveId;
    this.clearIds();
    this.wallClockMs = wallClockMs ?? Date.now;
    this.clockPerRun = wallClockMs === undefined;
    this.runClockValid = false;
  }

  partitionGpu(kind: number, seconds: number, job?: number, partition?: number): void {
    const k = kindSlot(kind);
    const b = this.partitionGpuSeconds.observe(k, seconds);
    if (b >= 0 && job !== undefined && this.resolveId !== null) this.exemplar(this.partitionGpuSeconds, k, b, seconds, job, partition);
  }

  partitionFinalize(kind: number, seconds: number): void {
    this.partitionFinalizeSeconds.observe(kindSlot(kind), seconds);
  }

  partitionSynthesis(kind: number, seconds: number, job?: number, partition?: number): void {
    const k = kindSlot(kind);
    const b = this.partitionSynthesisSeconds.observe(k, seconds);
    if (b >= 0 && job !== undefined && this.resolveId !== null) this.exemplar(this.partitionSynthesisSeconds, k, b, seconds, job, partition);
  }

  /** Only completed proofs are in the proof duration histogram. */
  proofDone(kind: number, outcome: number, seconds: number, job?: number): void {
    if (outcome !== OUTCOME_COMPLETED) return;
    const k = kindSlot(kind);
    const b = this.proofSeconds.observe(k, seconds);
    if (b >= 0 && job !== undefined && this.resolveId !== null) this.exemplar(this.proofSeconds, k, b, seconds, job, undefined);
  }

  queueWait(kind: number, seconds: number, job?: number): void {
    const k = kindSlot(kind);
    const b = this.queueWaitSeconds.observe(k, seconds);
    if (b >= 0 && job !== undefined && this.resolveId !== null) this.exemplar(this.queueWaitSeconds, k, b, seconds, job, undefined);
  }

  gpuIdleGap(gpuSlot: number, seconds: number): void {
    if (this.gpuSlotsVersion !== this.model.topologyVersion) this.mapGpuSlots();
    if (!(gpuSlot >= 0 && gpuSlot < this.gpuSeriesOfSlot.length)) return;
    this.gpuIdleGapSeconds.observe(this.gpuSeriesOfSlot[gpuSlot], seconds);
  }

  /**
   * A batch of the model's observations (ObservationQueue.deliver), in order: what the
   * methods above do for each, in one loop with no call per observation (V8 inlines only so
   * much into one function; each call boxed its seconds, ~40 ns an observation).
   */
  observeQueued(q: ObservationQueue): void {
    const n = q.n;
    const { op, slot, ns, job, aux } = q;
    const tables = this.tables;
    // With the default clock (one reading per synchronous run), exemplars are set after the
    // counts (exemplarsOf): this loop notes, per bucket, its first and latest observation in
    // the batch, so a bucket observed many times in a batch looks up one job id instead of
    // one per observation. A clock given to enableExemplars is read per exemplar, in order.
    const deferred = this.clockPerRun && this.resolveId !== null;
    const exAt = this.exAt;
    const firsts = this.exFirsts;
    let nFirst = 0;
    const mark = deferred ? this.nextMark() : 0;
    for (let i = 0; i < n; i++) {
      exAt[i] = -1;
      const o = op[i];
      let s: number;
      if (o === OBS_GPU_IDLE_GAP) {
        if (this.gpuSlotsVersion !== this.model.topologyVersion) this.mapGpuSlots();
        const g = slot[i];
        if (!(g >= 0 && g < this.gpuSeriesOfSlot.length)) continue;
        s = this.gpuSeriesOfSlot[g];
      } else {
        if (o === OBS_PROOF_DONE && aux[i] !== OUTCOME_COMPLETED) continue;
        s = kindSlot(slot[i]);
      }
      const t = tables[o];
      const seconds = ns[i] / NS_PER_S;
      const b = t.observe(s, seconds);
      if (b < 0 || !t.exemplars || this.resolveId === null) continue;
      const e = s * t.width + b;
      if (deferred) {
        exAt[i] = e;
        if (t.exMark[e] !== mark) {
          t.exMark[e] = mark;
          firsts[nFirst++] = i;
        }
        t.exLast[e] = i;
        continue;
      }
      const j = job[i];
      const c = j & (ID_L1_SIZE - 1);
      const id = this.l1Job[c] === j ? this.l1Id[c] : this.lookupId(j);
      if (id === undefined) continue;
      const p = o === OBS_PARTITION_GPU || o === OBS_PARTITION_SYNTHESIS ? aux[i] : -1;
      // setExemplar's writes, here: a call would box the two doubles.
      t.exValue[e] = seconds;
      t.exTimeMs[e] = this.exemplarTimeMs();
      t.exId[e] = id;
      t.exPartition[e] = p >= 0 ? p : -1;
    }
    if (nFirst > 0) this.exemplarsOf(q, nFirst);
  }

  /** The next batch's mark in HistogramTable.exMark (observeQueued). */
  private nextMark(): number {
    let mark = ++this.exMark;
    if (mark === 0xffffffff) {
      // Marks wrap after 4e9 batches: start again from a clean slate.
      for (const t of this.tables) t.exMark.fill(0);
      mark = this.exMark = 1;
    }
    return mark;
  }

  /**
   * The exemplars of a delivered batch (observeQueued, default clock): each bucket's exemplar
   * is its latest observation in the batch whose job id the source knows — what setting them
   * in order leaves. Per bucket observed (its first observation in exFirsts[0..nFirst)), its
   * latest (exLast) is tried first, and only when the source no longer knows that job the
   * bucket's earlier observations, latest first. All get the run's one clock reading.
   */
  private exemplarsOf(q: ObservationQueue, nFirst: number): void {
    const { op, ns, job, aux } = q;
    const tables = this.tables;
    const exAt = this.exAt;
    const firsts = this.exFirsts;
    for (let k = 0; k < nFirst; k++) {
      const first = firsts[k];
      const o = op[first];
      const t = tables[o];
      const e = exAt[first];
      let i = t.exLast[e];
      let id: string | undefined;
      for (;;) {
        const j = job[i];
        const c = j & (ID_L1_SIZE - 1);
        id = this.l1Job[c] === j ? this.l1Id[c] : this.lookupId(j);
        if (id !== undefined || i === first) break;
        // That job is unknown: the bucket's previous observation in this batch.
        do i--;
        while (!(exAt[i] === e && op[i] === o));
      }
      if (id === undefined) continue;
      const p = o === OBS_PARTITION_GPU || o === OBS_PARTITION_SYNTHESIS ? aux[i] : -1;
      t.exValue[e] = ns[i] / NS_PER_S;
      t.exTimeMs[e] = this.clockPerRun && this.runClockValid ? this.runClockMs : this.exemplarTimeMs();
      t.exId[e] = id;
      t.exPartition[e] = p >= 0 ? p : -1;
    }
  }

  private exemplar(t: HistogramTable, s: number, b: number, seconds: number, job: number, partition: number | undefined): void {
    const c = job & (ID_L1_SIZE - 1);
    const id = this.l1Job[c] === job ? this.l1Id[c] : this.lookupId(job);
    if (id === undefined) return;
    t.setExemplar(s, b, seconds, this.exemplarTimeMs(), id, partition !== undefined && partition >= 0 ? partition : -1);
  }

  /** A job's id from the cache, else from the source (then cached); undefined while the source does not know it. */
  private lookupId(job: number): string | undefined {
    let id = this.ids.get(job);
    if (id === undefined) {
      id = this.resolveId!(job);
      if (id === undefined || id === '') return undefined;
      if (this.ids.size >= ID_CACHE_LIMIT || this.idsChars + id.length > ID_CACHE_CHARS) this.clearIds();
      this.ids.set(job, id);
      this.idsChars += id.length;
    }
    const c = job & (ID_L1_SIZE - 1);
    this.l1Job[c] = job;
    this.l1Id[c] = id;
    return id;
  }

  private clearIds(): void {
    this.ids.clear();
    this.idsChars = 0;
    this.l1Job.fill(NaN);
    this.l1Id.fill('');
  }

  private exemplarTimeMs(): number {
    if (!this.clockPerRun) return this.wallClockMs();
    if (!this.runClockValid) {
      this.runClockMs = this.wallClockMs();
      this.runClockValid = true;
      // The run ends when the current job does: the next drain reads the clock again.
      queueMicrotask(this.endRun);
    }
    return this.runClockMs;
  }

  private mapGpuSlots(): void {
    const gpus = this.model.topology.gpus;
    const map = new Int32Array(gpus.length);
    for (let g = 0; g < gpus.length; g++) {
      const label = String(gpus[g].ordinal);
      let s = this.gpuSeriesByLabel.get(label);
      if (s === undefined) {
        s = this.gpuLabels.length;
        this.gpuLabels.push(label);
        this.gpuSeriesByLabel.set(label, s);
        this.gpuIdleGapSeconds.grow(s + 1);
      }
      map[g] = s;
    }
    this.gpuSeriesOfSlot = map;
    this.gpuSlotsVersion = this.model.topologyVersion;
  }
}
