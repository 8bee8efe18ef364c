/**
 * GPUs and their workers.
 * Hooks: gpu-list; gpu-<ordinal> (data-gpu) with gpu-name, gpu-ident, gpu-lock (data-held =
 * true|false|unknown), gpu-util ("87 %" or "n/a"; data-util = 0..1 or ""; data-util-source =
 * lock|workers|none); worker-<id> (data-state = idle|proving as reported, data-gpu) with
 * worker-state, worker-partition, worker-kind, worker-job (the FULL job id, or "—"),
 * worker-busy (the current stint: cuzk's busy_secs), worker-util; gpus-empty.
 */
import type { BusyWindow } from '../busy-window.js';
import { $, el, reconcile, ref, setActive, setAttr, setRef, setText } from '../dom.js';
import { fmtPct, fmtSecs } from '../format.js';
import { int, Json, num, objs, str } from '../json.js';

interface GpuGroup {
  key: number | string;
  ordinal: number | null;
  info: Json | null;
  workers: Json[];
}

/** What "busy for" measures, said on the column and on every value. */
export const BUSY_FOR_TITLE =
  'Time since this worker last went from idle to busy: its current busy stint (cuzk\'s busy_secs). With split proving a stint can span several partitions; it is not cumulative — "util" is the share of time busy.';

function gpuGroups(snap: Json): GpuGroup[] {
  const groups = new Map<number | string, GpuGroup>();
  const group = (key: number | string) => {
    let g = groups.get(key);
    if (!g) {
      g = { key, ordinal: typeof key === 'number' ? key : null, info: null, workers: [] };
      groups.set(key, g);
    }
    return g;
  };
  objs(snap.gpus).forEach((info) => {
    const o = int(info.ordinal);
    group(o === null ? '?' : o).info = info;
  });
  objs(snap.gpu_workers).forEach((w) => {
    const o = int(w.gpu_ordinal);
    group(o === null ? '?' : o).workers.push(w);
  });
  const list = Array.from(groups.values());
  list.sort((a, b) => {
    if (a.ordinal === null) return 1;
    if (b.ordinal === null) return -1;
    return a.ordinal - b.ordinal;
  });
  list.forEach((g) => g.workers.sort((a, b) => (int(a.worker_id) || 0) - (int(b.worker_id) || 0)));
  return list;
}

interface CardRefs {
  ord: HTMLElement;
  name: HTMLElement;
  ident: HTMLElement;
  lock: HTMLElement;
  utilVal: HTMLElement;
  utilSrc: HTMLElement;
  rows: HTMLElement;
}

function createGpuCard(): HTMLElement {
  const card = el('div', 'gpu-card');
  const head = el('div', 'gpu-head');
  const title = el('div', 'gpu-title');
  const ord = el('span', 'gpu-ord');
  const name = el('span', 'gpu-name', 'gpu-name');
  title.appendChild(ord);
  title.appendChild(name);
  const ident = el('div', 'gpu-ident mono', 'gpu-ident');
  const titleWrap = el('div', 'gpu-titlewrap');
  titleWrap.appendChild(title);
  titleWrap.appendChild(ident);
  const lock = el('div', 'gpu-lock', 'gpu-lock');
  const util = el('div', 'gpu-util-box');
  const utilVal = el('span', 'util-val num', 'gpu-util');
  const utilSrc = el('span', 'util-src');
  util.appendChild(utilVal);
  util.appendChild(utilSrc);
  head.appendChild(titleWrap);
  head.appendChild(lock);
  head.appendChild(util);
  card.appendChild(head);

  const cols = el('div', 'worker worker-cols');
  const heads: [string, string?][] = [['state'], ['worker'], ['partition'], ['current job'], ['busy for', BUSY_FOR_TITLE], ['util', 'Share of the last 5 s this worker was busy, from its busy-seconds counter']];
  heads.forEach(([c, title]) => {
    const d = el('div');
    d.textContent = c;
    if (title) d.title = title;
    if (c === 'busy for') d.setAttribute('data-testid', 'busy-for-head');
    cols.appendChild(d);
  });
  card.appendChild(cols);
  const rows = el('div', 'worker-rows');
  card.appendChild(rows);
  setRef<CardRefs>(card, { ord, name, ident, lock, utilVal, utilSrc, rows });
  return card;
}

function updateGpuCard(card: HTMLElement, g: GpuGroup, busy: BusyWindow): void {
  const r = ref<CardRefs>(card);
  const ordText = g.ordinal === null ? '?' : String(g.ordinal);
  setAttr(card, 'data-testid', 'gpu-' + ordText);
  setAttr(card, 'data-gpu', ordText);
  setText(r.ord, 'GPU ' + ordText);
  const info = g.info || {};
  setText(r.name, str(info.name) || '');
  setText(r.ident, [str(info.pci_bus_id), str(info.uuid)].filter(Boolean).join(' · '));
  if (typeof info.lock_held === 'boolean') {
    setAttr(r.lock, 'data-held', info.lock_held);
    setText(r.lock, info.lock_held ? 'kernel lock held' : 'kernel lock free');
  } else {
    setAttr(r.lock, 'data-held', 'unknown');
    setText(r.lock, '');
  }

  let u: number | null | undefined;
  let src: 'lock' | 'workers' | 'none';
  if (g.ordinal !== null && busy.hasGpu(g.ordinal)) {
    u = busy.rate('g', g.ordinal);
    src = 'lock';
  } else {
    const us = g.workers.map((w) => busy.rate('w', int(w.worker_id)));
    if (us.length && us.every((x) => x !== null)) {
      src = 'workers';
      u = us.some((x) => x === undefined) ? undefined : (us as number[]).reduce((a, b) => a + b, 0) / us.length;
    } else {
      src = 'none';
      u = null;
    }
  }
  setAttr(r.utilVal, 'data-util-source', src);
  setAttr(r.utilVal, 'data-util', typeof u === 'number' ? u.toFixed(4) : '');
  setText(r.utilVal, u === undefined ? '…' : fmtPct(u));
  setAttr(r.utilVal, 'data-level', typeof u === 'number' ? (u >= 0.7 ? 'high' : u >= 0.3 ? 'mid' : 'low') : 'none');
  setText(r.utilSrc, src === 'lock' ? 'GPU util · kernel lock, 5 s' : src === 'workers' ? 'GPU util · mean of workers, 5 s' : 'GPU util · not reported by source');
  setAttr(r.utilSrc, 'title', src === 'none' ? 'The source reports no cumulative busy-time counters (busy_total_secs), e.g. a real cuzk daemon' : 'Δ busy seconds / Δ uptime over the last ' + busy.windowSecs + ' s');

  reconcile(
    r.rows,
    g.workers,
    (w, i) => {
      const id = int(w.worker_id);
      return id === null ? 'i' + i : 'w' + id;
    },
    createWorkerRow,
    (row, w, i) => updateWorkerRow(row, w, i, busy),
  );
}

interface RowRefs {
  st: HTMLElement;
  id: HTMLElement;
  partIdx: HTMLElement;
  kind: HTMLElement;
  job: HTMLElement;
  busy: HTMLElement;
  util: HTMLElement;
}

function createWorkerRow(): HTMLElement {
  const row = el('div', 'worker');
  const st = el('div', 'w-state', 'worker-state');
  const id = el('div', 'w-id num');
  const part = el('div', 'w-part');
  const partIdx = el('span', 'w-part-idx num', 'worker-partition');
  const kind = el('span', 'w-kind', 'worker-kind');
  part.appendChild(partIdx);
  part.appendChild(kind);
  const job = el('div', 'w-job mono', 'worker-job');
  const busy = el('div', 'w-busy num', 'worker-busy');
  busy.title = BUSY_FOR_TITLE;
  const util = el('div', 'w-util num', 'worker-util');
  [st, id, part, job, busy, util].forEach((c) => row.appendChild(c));
  setRef<RowRefs>(row, { st, id, partIdx, kind, job, busy, util });
  return row;
}

function updateWorkerRow(row: HTMLElement, w: Json, i: number, busyWin: BusyWindow): void {
  const r = ref<RowRefs>(row);
  const id = int(w.worker_id);
  const idText = id === null ? '?' + i : String(id);
  setAttr(row, 'data-testid', 'worker-' + idText);
  setAttr(row, 'data-worker-id', idText);
  const gpu = int(w.gpu_ordinal);
  setAttr(row, 'data-gpu', gpu === null ? '' : gpu);
  const s = str(w.state) || 'unknown';
  setAttr(row, 'data-state', s);
  const proving = s === 'proving';
  setText(r.st, s.toUpperCase());
  setText(r.id, 'W' + idText);
  const p = int(w.current_partition);
  setText(r.partIdx, p === null ? '—' : 'P' + p);
  setText(r.kind, str(w.current_kind) || '');
  const job = str(w.current_job);
  setText(r.job, job === null ? '—' : job);
  setAttr(r.job, 'data-empty', job === null);
  const busy = num(w.busy_secs);
  setText(r.busy, proving || busy !== null ? fmtSecs(busy) : '—');
  const u = busyWin.rate('w', id);
  setAttr(r.util, 'data-util', typeof u === 'number' ? u.toFixed(4) : '');
  setText(r.util, u === undefined ? '…' : fmtPct(u));
}

export function renderGpus(snap: Json, busy: BusyWindow): void {
  const groups = gpuGroups(snap);
  reconcile($('gpu-list'), groups, (g) => 'g' + String(g.key), createGpuCard, (card, g) => updateGpuCard(card, g, busy));
  setActive($('gpus-empty'), groups.length === 0);
}
