/** Memory budget panel. Hooks: memory-bar (role=meter, aria-valuenow), memory-bar-fill, memory-used, memory-available, memory-total, memory-pct. */
import { $, setAttr, setText, setWidth } from '../dom.js';
import { fmtBytes, fmtPct } from '../format.js';
import { Json, num, obj } from '../json.js';

export function renderMemory(snap: Json): void {
  const m = obj(snap.memory);
  const total = num(m.total_bytes), used = num(m.used_bytes), avail = num(m.available_bytes);
  const f = total && used !== null ? Math.max(0, Math.min(1, used / total)) : null;
  const fill = $('memory-bar-fill');
  setWidth(fill, f === null ? '0%' : (f * 100).toFixed(2) + '%');
  setAttr(fill, 'data-level', f === null ? 'none' : f >= 0.9 ? 'high' : f >= 0.75 ? 'mid' : 'low');
  setAttr($('memory-bar'), 'aria-valuenow', f === null ? 0 : Math.round(f * 100));
  setText($('memory-pct'), f === null ? '—' : fmtPct(f));
  setText($('memory-used'), fmtBytes(used));
  setText($('memory-available'), fmtBytes(avail));
  setText($('memory-total'), fmtBytes(total));
}
