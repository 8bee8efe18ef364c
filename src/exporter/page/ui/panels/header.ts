/**
 * Header of the box page: source, backend, version, uptime, event sequence; under a fleet
 * exporter (/targets/NAME/), the target's name and a link back to the fleet.
 * Hooks: meta-source, meta-backend, meta-version, meta-uptime, meta-seq; fleet-back (the
 * link, data-active) with meta-target (the name).
 */
import { $, setActive, setText } from '../dom.js';
import { fmtDuration, fmtInt } from '../format.js';
import { int, isObj, Json, num, obj, str } from '../json.js';

/** The fleet target this page shows (exporter.target.name), or null outside a fleet. */
export function targetName(snap: Json): string | null {
  const ex = obj(snap.exporter);
  return isObj(ex.target) ? str(ex.target.name) : null;
}

export function renderHeader(snap: Json): void {
  const ex = obj(snap.exporter);
  setText($('meta-source'), str(ex.source) || 'cuzk /status');
  setText($('meta-backend'), str(ex.backend) || str(snap.backend) || '—');
  setText($('meta-version'), str(ex.version) || '—');
  setText($('meta-uptime'), fmtDuration(num(snap.uptime_secs)));
  setText($('meta-seq'), fmtInt(int(snap.last_seq)));
  const target = targetName(snap);
  setActive($('fleet-back'), target !== null);
  setText($('meta-target'), target || '');
}
