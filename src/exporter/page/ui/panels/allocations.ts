/**
 * SRS/PCE allocations table. Hooks: alloc-body; alloc-row (data-table = srs|pce,
 * data-circuit) with alloc-table, alloc-circuit, alloc-bytes, alloc-last-used,
 * alloc-evictable; alloc-total, alloc-empty.
 */
import { $, el, reconcile, ref, setActive, setAttr, setRef, setText } from '../dom.js';
import { fmtBytes, fmtSecs } from '../format.js';
import { Json, num, obj, objs, str } from '../json.js';

export function renderAllocations(snap: Json): void {
  const a = obj(snap.allocations);
  const rows: { table: string; x: Json }[] = [];
  ['srs', 'pce'].forEach((t) => objs(a[t]).forEach((x) => rows.push({ table: t, x })));
  let total = 0;
  rows.forEach((r) => (total += num(r.x.bytes) || 0));
  reconcile(
    $('alloc-body'),
    rows,
    (r, i) => r.table + '\u0000' + (str(r.x.circuit_id) || '#' + i),
    () => {
      const tr = el('tr', '', 'alloc-row');
      const cells = ['alloc-table', 'alloc-circuit', 'alloc-bytes', 'alloc-last-used', 'alloc-evictable'].map((t, j) =>
        el('td', j === 1 ? 'mono' : j === 2 || j === 3 ? 'r num' : '', t),
      );
      cells.forEach((c) => tr.appendChild(c));
      setRef(tr, cells);
      return tr;
    },
    (tr, r) => {
      const c = ref<HTMLElement[]>(tr);
      const circuit = str(r.x.circuit_id);
      setAttr(tr, 'data-table', r.table);
      setAttr(tr, 'data-circuit', circuit || '');
      setText(c[0], r.table.toUpperCase());
      setText(c[1], circuit || '—');
      setText(c[2], fmtBytes(num(r.x.bytes)));
      const lu = num(r.x.last_used_secs_ago);
      setText(c[3], lu === null ? '—' : fmtSecs(lu) + ' ago');
      setText(c[4], r.x.evictable === true ? 'yes' : r.x.evictable === false ? 'no (in use)' : '—');
      setAttr(c[4], 'data-evictable', r.x.evictable === true);
    },
  );
  setText($('alloc-total'), rows.length ? fmtBytes(total) : '');
  setActive($('alloc-empty'), rows.length === 0);
}
