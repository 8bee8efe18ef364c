/**
 * OpenMetrics exemplars for the duration histograms: per histogram, proof kind and bucket,
 * the LATEST observation that fell into that bucket, with the job it belongs to
 * (`job_id`, the whole id as the source reports it) and, for partition histograms, the
 * partition index, and the wall-clock time it was observed.
 *
 * Job ids are never labels (unbounded cardinality); an exemplar is the place where an
 * operator who sees "this partition took 40 s" finds out which job it was.
 *
 * Recording is the model's (src/engine/model/model-histograms.ts: the exemplar slots are typed
 * arrays beside the buckets, the id is looked up through a small cache only when a
 * histogram is observed and stored by reference); this file renders them, and nothing is
 * rendered or allocated until an OpenMetrics scrape asks for it.
 *
 * The 128-character limit: OpenMetrics caps the combined length of an exemplar's label
 * names and values at 128 UTF-8 code points. `job_id` + `partition` + up to 10 digits leave
 * at least 103 code points for the id, so every id cuzk or our engine produces is written
 * whole. A longer id is shortened deterministically (shortenId): its head and tail around
 * a "…" and, after a "#", the first 16 hex digits of the SHA-256 of the whole id, so two
 * different long ids never look alike and the full id can be checked against /status.
 */
import { createHash } from 'node:crypto';
import type { Attributes } from '@opentelemetry/api';
import type { HistogramTable } from '../engine/model/histogram-table';
import { KIND_LABELS } from '../engine/model/kinds';
import type { ModelHistograms } from '../engine/model/model-histograms';

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

/** Where one histogram data point's exemplars are: for the OpenMetrics serializer. */
export interface ExemplarRow {
  table: HistogramTable;
  offset: number;
}

const RENDER_CACHE_LIMIT = 4096;
/**
 * ... and at most this many characters of rendered labels: an attached daemon's job ids
 * may be up to 1 MiB each (/status), so the entry count alone allowed gigabytes; a daemon
 * naming jobs anew with 20,000-character ids grew the heap steadily (the soak).
 */
const RENDER_CACHE_CHARS = 1 << 20;

/** The exemplar tables of the model's histograms, by metric name. */
function tablesOf(h: ModelHistograms): Map<string, HistogramTable> {
  const tables: Record<ExemplarHistogram, HistogramTable> = {
    cuzk_partition_gpu_duration_seconds: h.partitionGpuSeconds,
    cuzk_partition_synthesis_duration_seconds: h.partitionSynthesisSeconds,
    cuzk_proof_duration_seconds: h.proofSeconds,
    cuzk_proof_queue_wait_seconds: h.queueWaitSeconds,
  };
  return new Map(Object.entries(tables));
}

export class ExemplarStore {
  private readonly tables: Map<string, HistogramTable>;
  private readonly kindSlot = new Map<string, number>(KIND_LABELS.map((k, i) => [k, i]));
  /** Rendered `job_id="…"` (shortened, escaped) per id and label budget. */
  private readonly rendered = new Map<string, string>();
  private renderedChars = 0;

  /** Renders the exemplars the model's histograms recorded (ModelHistograms.enableExemplars). */
  constructor(histograms: ModelHistograms) {
    this.tables = tablesOf(histograms);
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
    if (i >= t.width) return '';
    const ms = t.exTimeMs[j];
    if (ms === 0) return '';
    const id = t.exId[j]!;
    const p = t.exPartition[j];
    const labels = p >= 0 ? `${this.jobLabel(id, 'job_id'.length + 'partition'.length + String(p).length)},partition="${p}"` : this.jobLabel(id, 'job_id'.length);
    return ` # {${labels}} ${t.exValue[j]} ${(ms / 1000).toFixed(3)}`;
  }

  private jobLabel(id: string, others: number): string {
    const key = `${others}\u0000${id}`;
    let s = this.rendered.get(key);
    if (s === undefined) {
      s = `job_id="${escapeLabelValue(shortenId(id, others))}"`;
      if (this.rendered.size >= RENDER_CACHE_LIMIT || this.renderedChars + key.length + s.length > RENDER_CACHE_CHARS) {
        this.rendered.clear();
        this.renderedChars = 0;
      }
      this.rendered.set(key, s);
      this.renderedChars += key.length + s.length;
    }
    return s;
  }
}
