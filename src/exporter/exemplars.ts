/**
 * OpenMetrics exemplars for the duration histograms: per histogram, proof kind and bucket,
 * the LATEST observation that fell into that bucket, with the job it belongs to
 * (`job_id`, the whole id as the source reports it) and, for partition histograms, the
 * partition index, and the wall-clock time it was observed.
 *
 * Job ids are never labels (unbounded cardinality); an exemplar is the place where an
 * operator who sees "this partition took 40 s" finds out which job it was.
 *
 * Cost: recording is a binary search over the bucket bounds and a few typed-array writes;
 * the id is looked up (through a small cache) only when a histogram is observed, never per
 * event, and stored by reference — nothing is rendered or allocated until an OpenMetrics
 * scrape asks for it.
 *
 * The 128-character limit: OpenMetrics caps the combined length of an exemplar's label
 * names and values at 128 UTF-8 code points. `job_id` + `partition` + up to 10 digits leave
 * at least 103 code points for the id, so every id cuzk or our engine produces is written
 * whole. A longer id is shortened deterministically (shortenId): its head and tail around
 * a "…" and, after a "#", the first 16 hex digits of the SHA-256 of the whole id, so two
 * different long ids never look alike and the full id can be checked against /status.
 */
import { createHash } from 'node:crypto';
import type { Attributes, Meter } from '@opentelemetry/api';
import { KIND_LABELS, KIND_SLOTS, OUTCOME_COMPLETED } from '../engine/kinds';
import type { StateModel } from '../engine/state-model';
import { BUCKETS, ModelHistograms } from './histograms';

/** The histograms that carry exemplars, and whether their observations name a partition. */
export const EXEMPLAR_HISTOGRAMS = {
  cuzk_partition_gpu_duration_seconds: true,
  cuzk_partition_synthesis_duration_seconds: true,
  cuzk_proof_duration_seconds: false,
  cuzk_proof_queue_wait_seconds: false,
} as const;
export type ExemplarHistogram = keyof typeof EXEMPLAR_HISTOGRAMS;

/** OpenMetrics 1.0: combined length of an exemplar's label names and values. */
export const EXEMPLAR_LABELSET_LIMIT = 128;
const HASH_HEX = 16;

/** Code points of s, stopping once past `limit` (ids are almost always ASCII). */
function codePoints(s: string, limit: number): number {
  if (s.length <= limit) {
    // Every code point is 1 or 2 UTF-16 units: length bounds the count from above.
    let n = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) i++;
      n++;
    }
    return n;
  }
  let n = 0;
  for (let i = 0; i < s.length && n <= limit; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) i++;
    n++;
  }
  return n;
}

/**
 * The id as written in an exemplar whose other labels use `others` code points: the whole
 * id when it fits, else `<head>…<tail>#<16 hex of sha256(id)>` of exactly the budget.
 */
export function shortenId(id: string, others: number): string {
  const budget = EXEMPLAR_LABELSET_LIMIT - others;
  if (codePoints(id, budget) <= budget) return id;
  const hash = createHash('sha256').update(id, 'utf8').digest('hex').slice(0, HASH_HEX);
  const cps = Array.from(id);
  const keep = Math.max(0, budget - HASH_HEX - 2); // "…" and "#"
  const head = Math.ceil(keep / 2);
  const tail = keep - head;
  return `${cps.slice(0, head).join('')}…${tail > 0 ? cps.slice(cps.length - tail).join('') : ''}#${hash}`;
}

function escapeLabelValue(s: string): string {
  return /[\\\n"]/.test(s) ? s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"') : s;
}

/** Index of the bucket a value falls in (first bound >= value), as the OpenTelemetry SDK counts it. */
function bucketIndex(bounds: readonly number[], value: number): number {
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

/** One histogram's exemplars: per kind slot, per bucket (bounds.length + 1, the last is +Inf). */
class Table {
  readonly width: number;
  readonly value: Float64Array;
  /** Wall-clock ms; 0 = no exemplar yet. */
  readonly timeMs: Float64Array;
  readonly partition: Int32Array;
  readonly id: (string | undefined)[];

  constructor(
    readonly bounds: readonly number[],
    readonly withPartition: boolean,
  ) {
    this.width = bounds.length + 1;
    const n = KIND_SLOTS * this.width;
    this.value = new Float64Array(n);
    this.timeMs = new Float64Array(n);
    this.partition = new Int32Array(n).fill(-1);
    this.id = new Array<string | undefined>(n).fill(undefined);
  }
}

/** Where one histogram data point's exemplars are: for the OpenMetrics serializer. */
export interface ExemplarRow {
  table: Table;
  offset: number;
}

const ID_CACHE_LIMIT = 4096;
/**
 * ... and at most this many characters of ids in each cache: an attached daemon's job ids
 * may be up to 1 MiB each (/status), so the entry count alone allowed gigabytes; a daemon
 * naming jobs anew with 20,000-character ids grew the heap steadily (the soak).
 */
const ID_CACHE_CHARS = 1 << 20;

export class ExemplarStore {
  private readonly tables = new Map<string, Table>();
  private readonly kindSlot = new Map<string, number>(KIND_LABELS.map((k, i) => [k, i]));
  /** handle -> id, so the run-mode engine is asked once per job, not once per partition. */
  private readonly ids = new Map<number, string>();
  /** Rendered `job_id="…"` (shortened, escaped) per id and label budget. */
  private readonly rendered = new Map<string, string>();
  private idsChars = 0;
  private renderedChars = 0;

  /**
   * @param resolveId the source's job id of a model job handle (undefined when unknown:
   *   no exemplar is recorded then, rather than a made-up id).
   * @param nowMs wall clock for exemplar timestamps (tests pin it).
   */
  constructor(
    private readonly resolveId: (handle: number) => string | undefined,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Declares a histogram (name, bucket bounds); only EXEMPLAR_HISTOGRAMS are accepted. */
  declare(name: ExemplarHistogram, bounds: readonly number[]): void {
    this.tables.set(name, new Table(bounds, EXEMPLAR_HISTOGRAMS[name]));
  }

  /**
   * Records one observation's exemplar. `job` is the model's job handle; `partition` is
   * ignored for proof-level histograms.
   */
  record(name: ExemplarHistogram, kind: number, seconds: number, job: number | undefined, partition?: number): void {
    if (job === undefined || !(seconds >= 0)) return;
    const t = this.tables.get(name);
    if (!t || kind < 0 || kind >= KIND_SLOTS) return;
    let id = this.ids.get(job);
    if (id === undefined) {
      id = this.resolveId(job);
      if (id === undefined || id === '') return;
      if (this.ids.size >= ID_CACHE_LIMIT || this.idsChars + id.length > ID_CACHE_CHARS) {
        this.ids.clear();
        this.idsChars = 0;
      }
      this.ids.set(job, id);
      this.idsChars += id.length;
    }
    const i = kind * t.width + bucketIndex(t.bounds, seconds);
    t.value[i] = seconds;
    t.timeMs[i] = this.nowMs();
    t.id[i] = id;
    t.partition[i] = t.withPartition && partition !== undefined && partition >= 0 ? partition : -1;
  }

  /** The exemplars of one data point of `name` (by its proof_kind attribute), or null. */
  row(name: string, attributes: Attributes): ExemplarRow | null {
    const t = this.tables.get(name);
    if (!t) return null;
    const k = this.kindSlot.get(attributes.proof_kind as string);
    return k === undefined ? null : { table: t, offset: k * t.width };
  }

  /** ` # {job_id="…",partition="3"} 0.43 1700000000.123` for bucket `i` of a row, or ''. */
  text(row: ExemplarRow, i: number): string {
    const t = row.table;
    const j = row.offset + i;
    const ms = t.timeMs[j];
    if (ms === 0 || i >= t.width) return '';
    const id = t.id[j]!;
    const p = t.partition[j];
    const labels = p >= 0 ? `${this.jobLabel(id, 'job_id'.length + 'partition'.length + String(p).length)},partition="${p}"` : this.jobLabel(id, 'job_id'.length);
    return ` # {${labels}} ${t.value[j]} ${(ms / 1000).toFixed(3)}`;
  }

  private jobLabel(id: string, others: number): string {
    const key = `${others}\u0000${id}`;
    let s = this.rendered.get(key);
    if (s === undefined) {
      s = `job_id="${escapeLabelValue(shortenId(id, others))}"`;
      if (this.rendered.size >= ID_CACHE_LIMIT || this.renderedChars + key.length + s.length > ID_CACHE_CHARS) {
        this.rendered.clear();
        this.renderedChars = 0;
      }
      this.rendered.set(key, s);
      this.renderedChars += key.length + s.length;
    }
    return s;
  }
}

/**
 * The model's histograms (histograms.ts) plus exemplars: every observation of the four
 * duration histograms also records its exemplar. A subclass, so every other observation
 * (and any the model adds later) reaches the histograms unchanged.
 */
export class ExemplarHistograms extends ModelHistograms {
  constructor(
    meter: Meter,
    model: StateModel,
    private readonly store: ExemplarStore,
  ) {
    super(meter, model);
    store.declare('cuzk_partition_gpu_duration_seconds', BUCKETS.partitionGpu);
    store.declare('cuzk_partition_synthesis_duration_seconds', BUCKETS.partitionSynthesis);
    store.declare('cuzk_proof_duration_seconds', BUCKETS.proof);
    store.declare('cuzk_proof_queue_wait_seconds', BUCKETS.queueWait);
  }

  override partitionGpu(kind: number, seconds: number, job?: number, partition?: number): void {
    super.partitionGpu(kind, seconds);
    this.store.record('cuzk_partition_gpu_duration_seconds', kind, seconds, job, partition);
  }
  override partitionSynthesis(kind: number, seconds: number, job?: number, partition?: number): void {
    super.partitionSynthesis(kind, seconds);
    this.store.record('cuzk_partition_synthesis_duration_seconds', kind, seconds, job, partition);
  }
  override proofDone(kind: number, outcome: number, seconds: number, job?: number): void {
    super.proofDone(kind, outcome, seconds);
    // Only completed proofs are in the histogram (histograms.ts).
    if (outcome === OUTCOME_COMPLETED) this.store.record('cuzk_proof_duration_seconds', kind, seconds, job);
  }
  override queueWait(kind: number, seconds: number, job?: number): void {
    super.queueWait(kind, seconds);
    this.store.record('cuzk_proof_queue_wait_seconds', kind, seconds, job);
  }
}
