/**
 * The mismatch banner and, in its place when reports agree, the "consistent" box with the
 * finalizing partitions (split proving, not a mismatch).
 * Hooks: mismatch-banner (role=alert; data-active, data-client, data-exporter, data-reasons,
 * data-disagree) with mismatch-text, mismatch-partitions (mismatch-job, mismatch-partition:
 * data-index, data-orphan), mismatch-exporter; invariant-ok (data-active) with
 * invariant-ok-text and finalizing-partitions (finalizing-job with .mm-jobid,
 * finalizing-partition); gpus-mismatch-note; the page root's data-mismatch.
 */
import { $, el, setActive, setAttr, setText } from '../dom.js';
import { fmtInt, fmtMs } from '../format.js';
import { int, plural, str } from '../json.js';
import { Mismatch, OnGpu, REASON_TEXT } from '../mismatch.js';

export function renderMismatch(app: HTMLElement, mm: Mismatch): void {
  const banner = $('mismatch-banner');
  const ok = $('invariant-ok');
  setActive(banner, mm.active);
  setActive(ok, !mm.active);
  setAttr(banner, 'data-client', mm.client);
  setAttr(banner, 'data-exporter', mm.exporter === null ? 'absent' : mm.exporter);
  setAttr(banner, 'data-reasons', mm.reasons.join(','));
  setAttr(banner, 'data-disagree', mm.disagree.length);
  setAttr(app, 'data-mismatch', mm.active);
  const note = $('gpus-mismatch-note');
  setActive(note, mm.active);

  const n = mm.onGpu.length, b = mm.busyCount;
  const exNums = mm.exOnGpu !== null && mm.exBusy !== null ? ' (partitions_on_gpu = ' + mm.exOnGpu + ', busy_workers = ' + mm.exBusy + ')' : '';
  const why = mm.reasons.length ? ' — reason: ' + mm.reasons.join(', ') : '';
  if (mm.active) {
    let headline: string;
    if (mm.client) {
      headline = 'Status mismatch: ' + plural(n, 'partition', 'partitions') + ' on the GPU but ' + plural(b, 'worker', 'workers') + " busy — the prover's own reports contradict each other";
    } else {
      // The exporter knows more than the snapshot (which worker owns which partition).
      const texts = mm.reasons.map((r) => REASON_TEXT[r] || r);
      headline = 'Status mismatch reported by the exporter: ' + (texts.length ? texts.join('; ') : "the prover's own reports contradict each other");
    }
    if (mm.disagree.length) {
      // Which worker, and which surface says what (e.g. /status idle while TIMELINE proves a WindowPoSt).
      const d = mm.disagree[0];
      const gpu = int(d.gpu);
      headline +=
        ' — worker ' + fmtInt(int(d.worker)) + (gpu !== null && gpu >= 0 ? ' (GPU ' + gpu + ')' : '') +
        ' is proving per ' + (str(d.busy_per) || '?') + ' but idle per ' + (str(d.idle_per) || '?') +
        (mm.disagree.length > 1 ? ' (+' + plural(mm.disagree.length - 1, 'more worker', 'more workers') + ')' : '');
    }
    setText($('mismatch-text'), headline);
    renderMismatchPartitions($('mismatch-partitions'), mm.onGpu);
    let exText: string;
    if (mm.exporter === true && mm.client) exText = 'Exporter agrees: cuzk_status_mismatch = 1' + why + '.';
    else if (mm.exporter === false) exText = 'Exporter disagrees: cuzk_status_mismatch = 0' + exNums + '. This page computed the mismatch from the same snapshot.';
    else if (mm.exporter === true) exText = 'cuzk_status_mismatch = 1' + why + exNums + '; this snapshot shows ' + plural(n, 'partition', 'partitions') + ' on the GPU and ' + plural(b, 'worker', 'workers') + ' proving.';
    else exText = 'Computed by this page from the snapshot (no exporter verdict in /status).';
    setText($('mismatch-exporter'), exText);
    setText(note, '⚠ ' + plural(n, 'partition', 'partitions') + ' on the GPU, ' + plural(b, 'worker', 'workers') + ' proving — do not trust "idle" below');
    renderFinalizing($('finalizing-partitions'), []);
  } else {
    // Empty the hidden banner and note: stale content (a long list of partitions) would
    // keep their reserved space taller than it needs to be after the mismatch clears.
    setText($('mismatch-text'), '');
    const parts = $('mismatch-partitions');
    parts.removeAttribute('data-sig');
    setText(parts, '');
    setText($('mismatch-exporter'), '');
    setText(note, '');
    const fin = mm.onGpu.filter((x) => x.finalizing);
    let okText = plural(n, 'partition', 'partitions') + ' on the GPU, ' + plural(b, 'worker', 'workers') + ' proving';
    if (fin.length) {
      // Split proving: not a contradiction, and an operator must not read it as one.
      okText +=
        ' — ' + fin.length + ' finalizing: kernels done, GPU lock released, CPU epilogue running while ' +
        (fin.length === 1 ? 'its worker proves its' : 'their workers prove their') + ' next partition (split proving, not a mismatch)';
    } else {
      okText += ' — worker states agree with partition states';
    }
    okText += mm.exporter === false ? '; exporter agrees (cuzk_status_mismatch = 0).' : '.';
    setText($('invariant-ok-text'), okText);
    renderFinalizing($('finalizing-partitions'), fin);
  }
}

interface Group {
  job: string | null;
  parts: OnGpu[];
}

/** Partitions grouped by job, in order of first appearance. */
function groupByJob(parts: OnGpu[]): Group[] {
  const groups: Group[] = [];
  const byJob = new Map<string, Group>();
  parts.forEach((p) => {
    const k = p.job === null ? '\u0000' : p.job;
    let g = byJob.get(k);
    if (!g) {
      g = { job: p.job, parts: [] };
      byJob.set(k, g);
      groups.push(g);
    }
    g.parts.push(p);
  });
  return groups;
}

/** "of <job id>" after a job's partition chips. */
function appendJobId(item: HTMLElement, job: string | null): void {
  const of = el('span', 'mm-of');
  of.textContent = 'of';
  item.appendChild(of);
  const id = el('span', 'mm-jobid mono');
  id.textContent = job === null ? '(job without id)' : job;
  item.appendChild(id);
}

/** Partitions finalizing (split proving), grouped by job, full ids; empty when none. */
function renderFinalizing(box: HTMLElement, fin: OnGpu[]): void {
  const groups = groupByJob(fin);
  const sig = JSON.stringify(groups.map((g) => [g.job, g.parts.map((p) => p.index)]));
  if (box.getAttribute('data-sig') === sig) return;
  box.setAttribute('data-sig', sig);
  box.textContent = '';
  groups.forEach((g) => {
    const item = el('span', 'fin-job', 'finalizing-job');
    g.parts.forEach((p) => {
      const chip = el('span', 'fin-part', 'finalizing-partition');
      chip.setAttribute('data-index', p.index === null ? '' : String(p.index));
      chip.textContent = 'P' + (p.index === null ? '?' : p.index);
      item.appendChild(chip);
    });
    appendJobId(item, g.job);
    box.appendChild(item);
  });
}

function renderMismatchPartitions(box: HTMLElement, onGpu: OnGpu[]): void {
  // Group by job, keep order; rebuilt only when the text would change.
  const groups = groupByJob(onGpu);
  const sig = JSON.stringify(groups.map((g) => [g.job, g.parts.map((p) => [p.index, p.orphan, p.gpuMs === null ? null : Math.floor(p.gpuMs / 100)])]));
  if (box.getAttribute('data-sig') === sig) return;
  box.setAttribute('data-sig', sig);
  box.textContent = '';
  if (!groups.length) {
    box.textContent = 'No partition is in the gpu state.';
    return;
  }
  const lead = el('span', 'mm-lead');
  lead.textContent = 'In the gpu state:';
  box.appendChild(lead);
  groups.forEach((g) => {
    const item = el('span', 'mm-job', 'mismatch-job');
    g.parts.forEach((p) => {
      const chip = el('span', 'mm-part' + (p.orphan ? ' is-orphan' : ''), 'mismatch-partition');
      chip.setAttribute('data-index', p.index === null ? '' : String(p.index));
      chip.setAttribute('data-orphan', String(p.orphan));
      chip.textContent = 'P' + (p.index === null ? '?' : p.index) + (p.gpuMs !== null ? ' · ' + fmtMs(p.gpuMs) : '') + (p.orphan ? ' · no worker' : '');
      item.appendChild(chip);
    });
    appendJobId(item, g.job);
    box.appendChild(item);
  });
}
