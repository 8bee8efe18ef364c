/** Buffers-in-flight panel. Hooks: buffers-list; buffer-<key> (the dd, data-key). */
import { $, el, reconcile, ref, setAttr, setRef, setText } from '../dom.js';
import { fmtInt } from '../format.js';
import { int, Json, num, obj } from '../json.js';

const BUFFER_ORDER = ['synth_in_flight', 'provers_in_flight', 'aux_in_flight', 'shells_in_flight', 'pending_handles'];

export function renderBuffers(snap: Json): void {
  const b = obj(snap.buffers);
  const keys = BUFFER_ORDER.filter((k) => k in b).concat(Object.keys(b).filter((k) => BUFFER_ORDER.indexOf(k) < 0 && num(b[k]) !== null).sort());
  reconcile(
    $('buffers-list'),
    keys,
    (k) => k,
    () => {
      const d = el('div', 'kv-item');
      const dt = el('dt', 'mono');
      const dd = el('dd', 'num');
      d.appendChild(dt);
      d.appendChild(dd);
      setRef(d, { dt, dd });
      return d;
    },
    (d, k) => {
      const r = ref<{ dt: HTMLElement; dd: HTMLElement }>(d);
      setText(r.dt, k);
      setAttr(r.dd, 'data-testid', 'buffer-' + k);
      setAttr(r.dd, 'data-key', k);
      setText(r.dd, fmtInt(int(b[k])));
    },
  );
}
