/**
 * Proofs-by-kind table. Hooks: counters-body; counter-row (data-kind) with counter-kind,
 * counter-completed, counter-failed, counter-cancelled, counter-queued; counter-total-*.
 */
import { $, el, reconcile, ref, setAttr, setRef, setText } from '../dom.js';
import { fmtInt } from '../format.js';
import { int, isObj, Json, obj } from '../json.js';
import { sortKinds } from './kinds.js';

export function renderCounters(snap: Json): void {
  const c = obj(snap.counters);
  const comp = obj(c.completed_by_kind), fail = obj(c.failed_by_kind);
  const hasCancel = isObj(c.cancelled_by_kind), hasQueue = isObj(c.queue_depth_by_kind);
  const canc = obj(c.cancelled_by_kind), queue = obj(c.queue_depth_by_kind);
  const kinds = new Set<string>();
  [comp, fail, canc, queue].forEach((o) => Object.keys(o).forEach((k) => kinds.add(k)));
  reconcile(
    $('counters-body'),
    sortKinds(Array.from(kinds)),
    (k) => k,
    () => {
      const tr = el('tr', '', 'counter-row');
      const th = el('th', 'mono', 'counter-kind');
      th.setAttribute('scope', 'row');
      const tds = ['completed', 'failed', 'cancelled', 'queued'].map((n) => el('td', 'r num c-' + n, 'counter-' + n));
      tr.appendChild(th);
      tds.forEach((td) => tr.appendChild(td));
      setRef(tr, { th, tds });
      return tr;
    },
    (tr, k) => {
      const r = ref<{ th: HTMLElement; tds: HTMLElement[] }>(tr);
      setAttr(tr, 'data-kind', k);
      setText(r.th, k);
      setText(r.tds[0], fmtInt(int(comp[k]) || 0));
      const f = int(fail[k]) || 0;
      setText(r.tds[1], fmtInt(f));
      setAttr(r.tds[1], 'data-nonzero', f > 0);
      setText(r.tds[2], hasCancel ? fmtInt(int(canc[k]) || 0) : '—');
      setText(r.tds[3], hasQueue ? fmtInt(int(queue[k]) || 0) : '—');
    },
  );
  const sum = (o: Json) => Object.keys(o).reduce((a, k) => a + (int(o[k]) || 0), 0);
  const tc = int(c.total_completed), tf = int(c.total_failed);
  setText($('counter-total-completed'), fmtInt(tc !== null ? tc : sum(comp)));
  setText($('counter-total-failed'), fmtInt(tf !== null ? tf : sum(fail)));
  setAttr($('counter-total-failed'), 'data-nonzero', (tf !== null ? tf : sum(fail)) > 0);
  setText($('counter-total-cancelled'), hasCancel ? fmtInt(sum(canc)) : '—');
  setText($('counter-total-queued'), fmtInt(int(c.queue_depth)));
}
