/**
 * The fleet's totals: provers needing attention (mismatch, down, a surface down), provers
 * up, GPUs, workers busy now, worker utilisation (Σ Δ busy / Σ Δ worker-seconds of the
 * provers with a value), proofs queued, proofs/min.
 * Hooks: fleet-total-attention (its box fleet-total-attention-box, data-bad), fleet-total-up,
 * fleet-total-gpus, fleet-total-workers, fleet-total-util (data-util), fleet-total-queue,
 * fleet-total-ppm; the page root's data-attention.
 */
import { $, setAttr, setText } from '../dom.js';
import { fmtPct, fmtRate } from '../format.js';
import { num, objs } from '../json.js';
import type { Row } from './fleet-table.js';

export function renderTotals(app: HTMLElement, rows: Row[]): void {
  const attention = rows.filter((r) => r.health !== 'ok').length;
  setText($('fleet-total-attention'), String(attention));
  setAttr($('fleet-total-attention-box'), 'data-bad', attention > 0);
  setAttr(app, 'data-attention', attention);
  setText($('fleet-total-up'), rows.filter((r) => r.t.up === true).length + ' / ' + rows.length);
  let gpus = 0, workers = 0, busy = 0, queue = 0, busyD = 0, capD = 0, ppm = 0, ppmKnown = false;
  for (const r of rows) {
    gpus += objs(r.t.gpus).length;
    workers += objs(r.t.workers).length;
    busy += r.busyNow;
    queue += num(r.t.queue_depth) ?? 0;
    busyD += r.rates.busyDelta;
    capD += r.rates.capacityDelta;
    if (typeof r.rates.ppm === 'number') {
      ppm += r.rates.ppm;
      ppmKnown = true;
    }
  }
  setText($('fleet-total-gpus'), String(gpus));
  setText($('fleet-total-workers'), busy + ' / ' + workers);
  const util = capD > 0 ? Math.max(0, Math.min(1, busyD / capD)) : null;
  setText($('fleet-total-util'), util === null ? '…' : fmtPct(util));
  setAttr($('fleet-total-util'), 'data-util', util === null ? '' : util.toFixed(4));
  setText($('fleet-total-queue'), String(queue));
  setText($('fleet-total-ppm'), ppmKnown ? fmtRate(ppm) : '…');
}
