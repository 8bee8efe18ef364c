/**
 * The fleet table: one row per prover, sortable by any column (the choice is kept in the
 * URL's #sort=KEY:asc|desc). A row whose prover contradicts itself (the mismatch), is down,
 * or has a surface down is red, and "health" says which (a mismatch stays for
 * MISMATCH_HOLD_SECS after it was last seen: the clobber it catches lasts under a second).
 * Hooks: fleet-body; fleet-row (data-target, data-health = mismatch|down|degraded|ok,
 * data-mismatch, data-util) with fleet-link (href targets/NAME/), fleet-labels, fleet-health
 * (chips: health-chip, data-bad), fleet-gpus, fleet-strip (worker-strip.ts), fleet-util
 * (data-util), fleet-queue, fleet-ppm, fleet-failed; fleet-empty; the header cells
 * th[data-sort] with aria-sort.
 */
import { $, el, reconcile, ref, setActive, setAttr, setRef, setText, setWidth } from '../dom.js';
import { fmtInt, fmtPct, fmtRate } from '../format.js';
import { MISMATCH_HOLD_SECS } from '../fleet-rates.js';
import type { FleetRates, MismatchMemory, Rates } from '../fleet-rates.js';
import { int, Json, num, obj, objs, str } from '../json.js';
import { REASON_TEXT } from '../mismatch.js';
import { createStrip, stripWorkers, updateStrip } from './worker-strip.js';

export type Health = 'mismatch' | 'down' | 'degraded' | 'ok';
const HEALTH_RANK: Record<Health, number> = { mismatch: 0, down: 1, degraded: 2, ok: 3 };

export interface Row {
  t: Json;
  name: string;
  health: Health;
  chips: { text: string; bad: boolean; warn?: boolean; title?: string }[];
  rates: Rates;
  busyNow: number;
}

/**
 * How a prover is doing: the worst of its problems. `mismatchAgo`: seconds since it was last
 * seen contradicting itself (within the hold), or null.
 */
export function classify(t: Json, mismatchAgo: number | null = null): Pick<Row, 'health' | 'chips'> {
  const chips: Row['chips'] = [];
  const surfaces = objs(t.surfaces);
  const down = surfaces.filter((s) => s.up !== true);
  const reasons = (Array.isArray(t.mismatch_reasons) ? t.mismatch_reasons : []).filter((r): r is string => typeof r === 'string');
  let health: Health = 'ok';
  if (t.mismatch === true || mismatchAgo !== null) {
    health = 'mismatch';
    const now = t.mismatch === true;
    chips.push({
      text: now ? 'MISMATCH' : 'MISMATCH ' + Math.round(mismatchAgo!) + ' s ago',
      bad: true,
      title: now
        ? 'The prover contradicts itself: ' + (reasons.map((r) => REASON_TEXT[r] || r).join('; ') || 'workers idle while partitions are on the GPU')
        : 'The prover contradicted itself ' + Math.round(mismatchAgo!) + ' s ago (workers idle while partitions were on the GPU); shown for ' + MISMATCH_HOLD_SECS + ' s, as the key alert keeps one sample for its 2-minute window',
    });
  }
  if (t.up !== true && (surfaces.length === 0 || down.length === surfaces.length)) {
    if (health === 'ok') health = 'down';
    chips.push({ text: 'DOWN', bad: true, title: str(t.last_error) || 'no surface answers' });
  } else if (down.length > 0) {
    if (health === 'ok') health = 'degraded';
    for (const s of down) chips.push({ text: (str(s.name) || '?') + ' down', bad: true, title: (str(s.target) || '') + (str(t.last_error) ? ' — ' + str(t.last_error) : '') });
  }
  const cmd = obj(t.timeline_command);
  if (t.timeline_command && cmd.running === false) {
    chips.push({ text: 'log command restarting', bad: false, warn: true, title: str(cmd.last_failure) || '' });
  }
  if (chips.length === 0) chips.push({ text: 'OK', bad: false });
  return { health, chips };
}

export interface SortState {
  key: string;
  dir: 'asc' | 'desc';
}

/** Each column's first direction: the worst first where a column has a "worst". */
export const DEFAULT_DIR: Record<string, 'asc' | 'desc'> = { name: 'asc', health: 'asc', gpus: 'desc', busy: 'desc', util: 'asc', queue: 'desc', ppm: 'asc', failed: 'desc' };

function sortValue(r: Row, key: string): number | string {
  switch (key) {
    case 'health':
      return HEALTH_RANK[r.health];
    case 'gpus':
      return objs(r.t.gpus).length;
    case 'busy':
      return r.busyNow;
    case 'util':
      return typeof r.rates.util === 'number' ? r.rates.util : Infinity;
    case 'queue':
      return num(r.t.queue_depth) ?? 0;
    case 'ppm':
      return typeof r.rates.ppm === 'number' ? r.rates.ppm : Infinity;
    case 'failed':
      return num(r.t.proofs_failed_total) ?? 0;
    default:
      return r.name;
  }
}

export function sortRows(rows: Row[], s: SortState): Row[] {
  const sign = s.dir === 'asc' ? 1 : -1;
  return rows.slice().sort((a, b) => {
    const va = sortValue(a, s.key), vb = sortValue(b, s.key);
    // "not known yet" (Infinity) stays last whichever the direction
    if (va !== vb) {
      if (va === Infinity) return 1;
      if (vb === Infinity) return -1;
      return (va < vb ? -1 : 1) * sign;
    }
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
}

interface RowRefs {
  link: HTMLAnchorElement;
  labels: HTMLElement;
  health: HTMLElement;
  gpus: HTMLElement;
  gpuNames: HTMLElement;
  strip: HTMLElement;
  utilFill: HTMLElement;
  utilV: HTMLElement;
  util: HTMLElement;
  queue: HTMLElement;
  ppm: HTMLElement;
  failed: HTMLElement;
}

function createRow(): HTMLElement {
  const tr = el('tr', '', 'fleet-row');
  const nameTd = el('th', 'f-name');
  nameTd.setAttribute('scope', 'row');
  const link = el('a', 'mono', 'fleet-link');
  const labels = el('div', 'f-labels', 'fleet-labels');
  nameTd.appendChild(link);
  nameTd.appendChild(labels);
  const healthTd = el('td');
  const health = el('div', 'f-health', 'fleet-health');
  healthTd.appendChild(health);
  const gpus = el('td', 'r num f-gpus', 'fleet-gpus');
  const gpuCount = el('span', 'f-gpu-count');
  const gpuNames = el('span', 'f-gpu-names');
  gpus.appendChild(gpuCount);
  gpus.appendChild(gpuNames);
  const stripTd = el('td', '', 'fleet-strip');
  const strip = createStrip();
  stripTd.appendChild(strip);
  const util = el('td', 'r f-util', 'fleet-util');
  const bar = el('span', 'ubar');
  const utilFill = el('span', 'ubar-fill');
  bar.appendChild(utilFill);
  const utilV = el('span', 'f-util-v num');
  util.appendChild(bar);
  util.appendChild(utilV);
  const queue = el('td', 'r num f-num', 'fleet-queue');
  const ppm = el('td', 'r num f-num', 'fleet-ppm');
  const failed = el('td', 'r num f-failed', 'fleet-failed');
  [nameTd, healthTd, gpus, stripTd, util, queue, ppm, failed].forEach((c) => tr.appendChild(c));
  setRef<RowRefs>(tr, { link, labels, health, gpus: gpuCount, gpuNames, strip, utilFill, utilV, util, queue, ppm, failed });
  return tr;
}

function updateRow(tr: HTMLElement, r: Row): void {
  const x = ref<RowRefs>(tr);
  const t = r.t;
  setAttr(tr, 'data-target', r.name);
  setAttr(tr, 'data-health', r.health);
  setAttr(tr, 'data-mismatch', t.mismatch === true);
  setText(x.link, r.name);
  setAttr(x.link, 'href', 'targets/' + encodeURIComponent(r.name) + '/');
  const labels = obj(t.labels);
  setText(x.labels, Object.keys(labels).sort().map((k) => k + '=' + str(labels[k])).join(' · '));
  reconcile(
    x.health,
    r.chips,
    (c) => c.text,
    () => el('span', 'chip', 'health-chip'),
    (chip, c) => {
      setText(chip, c.text);
      setAttr(chip, 'data-bad', c.bad);
      setAttr(chip, 'data-warn', c.warn === true);
      setAttr(chip, 'title', c.title || '');
    },
  );
  const gpus = objs(t.gpus);
  setText(x.gpus, fmtInt(gpus.length));
  const names = [...new Set(gpus.map((g) => str(g.name)).filter((n): n is string => n !== null && n !== 'unknown'))];
  setText(x.gpuNames, names.join(', '));
  updateStrip(x.strip, stripWorkers(objs(t.workers)));
  const u = r.rates.util;
  setAttr(tr, 'data-util', typeof u === 'number' ? u.toFixed(4) : '');
  setAttr(x.util, 'data-util', typeof u === 'number' ? u.toFixed(4) : '');
  setWidth(x.utilFill, typeof u === 'number' ? (u * 100).toFixed(1) + '%' : '0%');
  setAttr(x.utilFill, 'data-level', typeof u === 'number' && u < 0.5 ? 'low' : 'ok');
  setText(x.utilV, u === undefined ? '…' : fmtPct(u));
  setText(x.queue, fmtInt(int(t.queue_depth)));
  setText(x.ppm, r.rates.ppm === undefined ? '…' : fmtRate(r.rates.ppm));
  const failed = int(t.proofs_failed_total) ?? 0;
  setText(x.failed, fmtInt(failed));
  setAttr(x.failed, 'data-nonzero', failed > 0);
}

export function buildRows(targets: Json[], rates: FleetRates, mismatches: MismatchMemory, nowSecs: number): Row[] {
  return targets
    .map((t) => {
      const name = str(t.name);
      if (name === null) return null;
      return { t, name, ...classify(t, mismatches.ago(name, nowSecs)), rates: rates.rates(name), busyNow: objs(t.workers).filter((w) => w.busy === true).length };
    })
    .filter((r): r is Row => r !== null);
}

export function renderFleetTable(rows: Row[], sort: SortState): void {
  reconcile($('fleet-body'), sortRows(rows, sort), (r) => r.name, createRow, updateRow);
  setActive($('fleet-empty'), rows.length === 0);
  document.querySelectorAll<HTMLElement>('[data-testid="fleet-head"] th[data-sort]').forEach((th) => {
    setAttr(th, 'aria-sort', th.getAttribute('data-sort') === sort.key ? (sort.dir === 'asc' ? 'ascending' : 'descending') : 'none');
  });
}
