/** Synthesis slots panel. Hooks: synthesis-slots ("3 / 7"), synthesis-pips. */
import { $, el, reconcile, setAttr, setText } from '../dom.js';
import { fmtInt } from '../format.js';
import { int, Json, obj } from '../json.js';

export function renderSynthesis(snap: Json): void {
  const s = obj(snap.synthesis);
  const active = int(s.active), max = int(s.max_concurrent);
  setText($('synthesis-slots'), fmtInt(active) + ' / ' + fmtInt(max));
  const count = max !== null && max > 0 ? Math.min(max, 32) : 0;
  const items: number[] = [];
  for (let i = 0; i < count; i++) items.push(i);
  reconcile($('synthesis-pips'), items, (x) => 'p' + x, () => el('span', 'pip'), (pip, x) => {
    setAttr(pip, 'data-on', active !== null && x < active);
  });
}
