/**
 * Pipelines: running jobs first, each with one cell per partition; finished jobs after
 * them, in a collapsed list bounded to the FINISHED_SHOWN most recent (a busy run-mode box
 * keeps hundreds for 30 s: listed whole, they pushed the running ones tens of thousands of
 * pixels down).
 * Hooks: pipeline-list (running), pipelines-finished (a <details>, data-active, closed by
 * default) with pipelines-finished-summary, pipeline-list-finished and
 * pipelines-finished-more; pipeline (data-job-id exact and untruncated, data-kind,
 * data-outcome, data-finished) with pipeline-job-id, pipeline-kind, pipeline-outcome,
 * pipeline-progress, pipeline-age, pipeline-priority; partition-cell (data-state,
 * data-index, data-orphan, data-finalizing) with partition-state, partition-synth,
 * partition-gpu; pipelines-count, pipelines-empty.
 */
import { $, el, reconcile, ref, setActive, setAttr, setRef, setText, setWidth } from '../dom.js';
import { fmtInt, fmtMs, fmtSecs } from '../format.js';
import { int, Json, num, objs, plural, str } from '../json.js';
import { Mismatch, pkey } from '../mismatch.js';

/** Finished jobs listed at most (the most recent). */
export const FINISHED_SHOWN = 10;

const PARTITION_STATES = ['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed'];
const STATE_LABEL: Record<string, string> = {
  pending: 'pending',
  synthesizing: 'synth',
  synth_done: 'ready', // synthesized, waiting for a GPU worker ('synth done' did not fit a cell)
  gpu: 'GPU',
  done: 'done',
  failed: 'FAILED',
};
const BAR_ORDER = ['done', 'failed', 'gpu', 'synth_done', 'synthesizing', 'pending'];
const OUTCOMES = ['completed', 'failed', 'cancelled'];

/**
 * A job is finished when the source says so (our engine: outcome, finished_secs_ago) or,
 * for cuzk (which keeps finished jobs 30 s without saying), when every partition is done
 * or failed.
 */
export function isFinished(p: Json): boolean {
  const outcome = str(p.outcome);
  if (outcome !== null && OUTCOMES.indexOf(outcome) >= 0) return true;
  if (num(p.finished_secs_ago) !== null) return true;
  const parts = objs(p.partitions);
  const total = int(p.total_partitions) || 0;
  return total > 0 && parts.length >= total && parts.every((x) => x.state === 'done' || x.state === 'failed');
}

interface PipelineRefs {
  kind: HTMLElement;
  job: HTMLElement;
  outcome: HTMLElement;
  progress: HTMLElement;
  age: HTMLElement;
  prio: HTMLElement;
  segs: Record<string, HTMLElement>;
  bar: HTMLElement;
  cells: HTMLElement;
}

function createPipeline(): HTMLElement {
  const card = el('article', 'pipeline', 'pipeline');
  const head = el('div', 'pl-head');
  const kind = el('span', 'kind-badge', 'pipeline-kind');
  const job = el('span', 'pl-job mono', 'pipeline-job-id');
  const stats = el('div', 'pl-stats');
  const outcome = el('span', 'outcome', 'pipeline-outcome');
  const progress = el('span', 'pl-progress num', 'pipeline-progress');
  const age = el('span', 'pl-age num', 'pipeline-age');
  const prio = el('span', 'pl-prio num', 'pipeline-priority');
  [outcome, progress, age, prio].forEach((c) => stats.appendChild(c));
  const idWrap = el('div', 'pl-idwrap');
  idWrap.appendChild(kind);
  idWrap.appendChild(job);
  head.appendChild(idWrap);
  head.appendChild(stats);
  card.appendChild(head);
  const bar = el('div', 'pl-bar');
  bar.setAttribute('aria-hidden', 'true');
  const segs: Record<string, HTMLElement> = {};
  BAR_ORDER.forEach((s) => {
    const seg = el('span', 'seg st-' + s);
    segs[s] = seg;
    bar.appendChild(seg);
  });
  card.appendChild(bar);
  const cells = el('div', 'cells');
  card.appendChild(cells);
  setRef<PipelineRefs>(card, { kind, job, outcome, progress, age, prio, segs, bar, cells });
  return card;
}

function updatePipeline(card: HTMLElement, p: Json, mm: Mismatch, finished: boolean): void {
  const r = ref<PipelineRefs>(card);
  const job = str(p.job_id);
  setAttr(card, 'data-job-id', job === null ? '' : job);
  setAttr(card, 'data-finished', finished);
  const kind = str(p.proof_kind) || 'unknown';
  setAttr(card, 'data-kind', kind);
  setText(r.kind, kind);
  setText(r.job, job === null ? '(no job id)' : job);
  const outcome = str(p.outcome);
  setAttr(card, 'data-outcome', outcome || '');
  setAttr(r.outcome, 'data-outcome', outcome || '');
  setText(r.outcome, outcome || '');
  const done = int(p.partitions_done), total = int(p.total_partitions);
  setText(r.progress, fmtInt(done) + ' / ' + fmtInt(total) + ' done');
  const fin = num(p.finished_secs_ago);
  setText(r.age, fin !== null ? 'finished ' + fmtSecs(fin) + ' ago' : 'started ' + fmtSecs(num(p.started_secs_ago)) + ' ago');
  const prio = int(p.priority);
  setText(r.prio, prio === null ? '' : 'priority ' + prio);

  const parts = objs(p.partitions);
  const counts: Record<string, number> = {};
  parts.forEach((x) => {
    const s = String(x.state);
    counts[s] = (counts[s] || 0) + 1;
  });
  const n = Math.max(parts.length, total || 0, 1);
  PARTITION_STATES.forEach((s) => setWidth(r.segs[s], (((counts[s] || 0) / n) * 100).toFixed(3) + '%'));
  setAttr(r.bar, 'title', PARTITION_STATES.filter((s) => counts[s]).map((s) => counts[s] + ' ' + s).join(' · '));

  reconcile(
    r.cells,
    parts,
    (x, j) => {
      const idx = int(x.index);
      return idx === null ? 'i' + j : 'p' + idx;
    },
    createCell,
    (cell, part) => updateCell(cell, part, job, mm),
  );
}

interface CellRefs {
  idx: HTMLElement;
  st: HTMLElement;
  synth: HTMLElement;
  gpu: HTMLElement;
}

function createCell(): HTMLElement {
  const cell = el('div', 'cell', 'partition-cell');
  const top = el('div', 'c-top');
  const idx = el('span', 'c-idx num');
  const st = el('span', 'c-state', 'partition-state');
  top.appendChild(idx);
  top.appendChild(st);
  const synth = el('div', 'c-t num', 'partition-synth');
  const gpu = el('div', 'c-t num', 'partition-gpu');
  cell.appendChild(top);
  cell.appendChild(synth);
  cell.appendChild(gpu);
  setRef<CellRefs>(cell, { idx, st, synth, gpu });
  return cell;
}

function updateCell(cell: HTMLElement, part: Json, job: string | null, mm: Mismatch): void {
  const r = ref<CellRefs>(cell);
  const idx = int(part.index);
  const s = str(part.state) || 'unknown';
  const known = PARTITION_STATES.indexOf(s) >= 0;
  setAttr(cell, 'data-state', s);
  setAttr(cell, 'data-index', idx === null ? '' : idx);
  setAttr(cell, 'class', 'cell st-' + (known ? s : 'unknown'));
  const orphan = s === 'gpu' && mm.orphans.has(pkey(job, idx));
  const finalizing = s === 'gpu' && mm.finalizing.has(pkey(job, idx));
  setAttr(cell, 'data-orphan', orphan);
  setAttr(cell, 'data-finalizing', finalizing);
  setText(r.idx, (orphan ? '! ' : '') + 'P' + (idx === null ? '?' : idx));
  setText(r.st, known ? STATE_LABEL[s] : s);
  const sm = num(part.synth_ms), gm = num(part.gpu_ms);
  setText(r.synth, 'S ' + fmtMs(sm));
  setText(r.gpu, 'G ' + fmtMs(gm));
  const w = int(part.worker_id);
  const title =
    'Partition ' + (idx === null ? '?' : idx) + ': ' + s +
    '\nsynthesis ' + fmtMs(sm) + ', GPU ' + fmtMs(gm) +
    (w !== null ? '\nworker W' + w : '') +
    (orphan ? '\nIn the gpu state but no proving worker reports this partition' : '') +
    (finalizing ? '\nFinalizing: kernels done, CPU epilogue running while its worker proves its next partition (split proving)' : '');
  setAttr(cell, 'title', title);
}

function keyOf(p: Json, i: number): string {
  const j = str(p.job_id);
  return j === null ? '\u0000i' + i : 'j' + j;
}

export function renderPipelines(snap: Json, mm: Mismatch): void {
  const list = objs(snap.pipelines);
  const running: Json[] = [];
  const finished: Json[] = [];
  list.forEach((p) => (isFinished(p) ? finished : running).push(p));
  // Most recently finished first (where the source says when), else as listed.
  const order = finished.map((p, i) => ({ p, i, ago: num(p.finished_secs_ago) }));
  order.sort((a, b) => (a.ago !== null && b.ago !== null && a.ago !== b.ago ? a.ago - b.ago : a.i - b.i));
  const shown = order.slice(0, FINISHED_SHOWN).map((x) => x.p);

  reconcile($('pipeline-list'), running, keyOf, createPipeline, (card, p) => updatePipeline(card, p, mm, false));
  reconcile($('pipeline-list-finished'), shown, keyOf, createPipeline, (card, p) => updatePipeline(card, p, mm, true));
  setActive($('pipelines-finished'), finished.length > 0);
  const failed = finished.filter((p) => str(p.outcome) === 'failed' || objs(p.partitions).some((x) => x.state === 'failed')).length;
  setText(
    $('pipelines-finished-summary'),
    plural(finished.length, 'finished job', 'finished jobs') + (failed ? ' (' + failed + ' failed)' : '') +
      (finished.length > FINISHED_SHOWN ? ' — the ' + FINISHED_SHOWN + ' most recent listed' : '') + ' · kept 30 s after they end',
  );
  setText($('pipelines-finished-more'), finished.length > FINISHED_SHOWN ? plural(finished.length - FINISHED_SHOWN, 'older finished job', 'older finished jobs') + ' not listed (see /status)' : '');
  setActive($('pipelines-empty'), list.length === 0);
  setText($('pipelines-count'), list.length ? plural(list.length, 'job', 'jobs') + (running.length !== list.length ? ' · ' + running.length + ' running' : '') : '');
}
