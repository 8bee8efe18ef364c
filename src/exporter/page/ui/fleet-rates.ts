/**
 * Per-prover utilisation and proofs/min on the fleet page, from successive /fleet.json
 * answers: Δ busy_seconds_total / (Δ clock_secs × workers) over the last UTIL_WINDOW_SECS
 * (the prover's own model clock: the time its busy seconds are at), and Δ
 * proofs_completed_total / Δ now_secs over the last PPM_WINDOW_SECS. Counters, not the busy
 * flag: a 0/1 sample misses sub-second partitions.
 */
import { num, str, Json } from './json.js';

export const UTIL_WINDOW_SECS = 10;
export const PPM_WINDOW_SECS = 60;

interface Sample {
  clock: number;
  busy: number;
  workers: number;
  now: number;
  completed: number;
}

export interface Rates {
  /** 0..1, null = not known (no workers), undefined = not yet (one sample). */
  util: number | null | undefined;
  /** Σ Δ busy seconds and Σ Δ worker-seconds behind `util` (for the fleet's total). */
  busyDelta: number;
  capacityDelta: number;
  ppm: number | null | undefined;
}

export class FleetRates {
  private readonly byTarget = new Map<string, Sample[]>();

  /** Adds one answer's targets; forgets targets no longer listed. */
  add(nowSecs: number, targets: Json[]): void {
    const seen = new Set<string>();
    for (const t of targets) {
      const name = str(t.name);
      const clock = num(t.clock_secs), busy = num(t.busy_seconds_total), completed = num(t.proofs_completed_total);
      if (name === null || clock === null || busy === null || completed === null) continue;
      seen.add(name);
      const workers = Array.isArray(t.workers) ? t.workers.length : 0;
      let list = this.byTarget.get(name);
      if (!list) this.byTarget.set(name, (list = []));
      const last = list[list.length - 1];
      // The target was restarted (a reload, the exporter): its counters start again.
      if (last && (clock < last.clock || busy < last.busy || completed < last.completed || nowSecs < last.now)) list.length = 0;
      list.push({ clock, busy, workers, now: nowSecs, completed });
      while (list.length > 2 && list[1].now <= nowSecs - PPM_WINDOW_SECS) list.shift();
    }
    for (const k of [...this.byTarget.keys()]) if (!seen.has(k)) this.byTarget.delete(k);
  }

  rates(name: string): Rates {
    const list = this.byTarget.get(name);
    const none: Rates = { util: undefined, busyDelta: 0, capacityDelta: 0, ppm: undefined };
    if (!list || list.length === 0) return none;
    const cur = list[list.length - 1];
    if (cur.workers === 0) none.util = null;
    if (list.length < 2) return none;
    let base = list[0];
    for (const s of list) {
      if (s.clock >= cur.clock - UTIL_WINDOW_SECS) {
        base = s;
        break;
      }
    }
    if (base === cur) base = list[list.length - 2];
    const dClock = cur.clock - base.clock;
    const out: Rates = { util: undefined, busyDelta: 0, capacityDelta: 0, ppm: undefined };
    if (cur.workers === 0) out.util = null;
    else if (dClock >= 0.5) {
      out.busyDelta = cur.busy - base.busy;
      out.capacityDelta = dClock * cur.workers;
      out.util = Math.max(0, Math.min(1, out.busyDelta / out.capacityDelta));
    }
    const first = list[0];
    const dNow = cur.now - first.now;
    if (dNow >= 5) out.ppm = ((cur.completed - first.completed) / dNow) * 60;
    return out;
  }
}

/**
 * When each prover was last seen contradicting itself. A clobbered worker reads idle only
 * from one partition's end to its next pickup (often under a second), so a mismatch seen in
 * one poll stays on the page for MISMATCH_HOLD_SECS, as the key alert keeps one sample for
 * its 2-minute window.
 */
export const MISMATCH_HOLD_SECS = 120;

export class MismatchMemory {
  private readonly last = new Map<string, number>();

  add(nowSecs: number, targets: Json[]): void {
    const names = new Set<string>();
    for (const t of targets) {
      const name = str(t.name);
      if (name === null) continue;
      names.add(name);
      if (t.mismatch === true) this.last.set(name, nowSecs);
      // The exporter looks every second: a mismatch between two polls is in its report.
      const ago = num(t.mismatch_seen_secs_ago);
      if (ago !== null && nowSecs - ago > (this.last.get(name) ?? -Infinity)) this.last.set(name, nowSecs - ago);
    }
    for (const k of [...this.last.keys()]) if (!names.has(k)) this.last.delete(k);
  }

  /** Seconds since `name` was last seen in a mismatch, if within the hold; else null. */
  ago(name: string, nowSecs: number): number | null {
    const t = this.last.get(name);
    return t === undefined || nowSecs - t > MISMATCH_HOLD_SECS ? null : Math.max(0, nowSecs - t);
  }
}
