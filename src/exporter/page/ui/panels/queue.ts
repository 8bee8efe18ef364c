/** Queue depth panel. Hooks: queue-depth, queue-kinds. */
import { $, setText } from '../dom.js';
import { fmtInt } from '../format.js';
import { int, Json, obj } from '../json.js';
import { sortKinds } from './kinds.js';

export function renderQueue(snap: Json): void {
  const c = obj(snap.counters);
  setText($('queue-depth'), fmtInt(int(c.queue_depth)));
  const byKind = obj(c.queue_depth_by_kind);
  const parts = sortKinds(Object.keys(byKind)).filter((k) => int(byKind[k])).map((k) => k + ' ' + int(byKind[k]));
  setText($('queue-kinds'), parts.join(' · '));
}
