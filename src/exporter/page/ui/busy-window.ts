/**
 * Utilisation from successive snapshots: Δ busy_total_secs / Δ uptime_secs over the last
 * ~5 s (gpus[].busy_total_secs = kernel-lock time for a GPU; gpu_workers[].busy_total_secs for
 * a worker). Never from the sampled busy flag, which misses sub-second partitions.
 */
import { int, Json, num, objs } from './json.js';

interface Sample {
  t: number;
  w: Map<number, number>;
  g: Map<number, number>;
}

export class BusyWindow {
  private samples: Sample[] = [];
  constructor(readonly windowSecs: number) {}

  add(snap: Json): void {
    let t = num(snap.uptime_secs);
    if (t === null) t = performance.now() / 1000; // no engine clock: use ours
    const last = this.samples.length ? this.samples[this.samples.length - 1] : null;
    if (last && t < last.t) this.samples = []; // daemon restart
    else if (last && t === last.t) return; // same snapshot served again: nothing new
    const s: Sample = { t, w: new Map(), g: new Map() };
    objs(snap.gpu_workers).forEach((w) => {
      const id = int(w.worker_id), v = num(w.busy_total_secs);
      if (id !== null && v !== null) s.w.set(id, v);
    });
    objs(snap.gpus).forEach((g) => {
      const o = int(g.ordinal), v = num(g.busy_total_secs);
      if (o !== null && v !== null) s.g.set(o, v);
    });
    this.samples.push(s);
    while (this.samples.length > 2 && this.samples[1].t <= t - this.windowSecs) this.samples.shift();
  }

  /** Whether the newest snapshot reports GPU `ordinal`'s lock counter. */
  hasGpu(ordinal: number): boolean {
    return this.samples.length > 0 && this.samples[this.samples.length - 1].g.has(ordinal);
  }

  /** Busy fraction for a key over the window: number 0..1, null = n/a, undefined = not yet. */
  rate(which: 'w' | 'g', key: number | null): number | null | undefined {
    if (!this.samples.length || key === null) return null;
    const cur = this.samples[this.samples.length - 1];
    if (!cur[which].has(key)) return null;
    if (this.samples.length < 2) return undefined;
    const base = this.samples[0];
    const dt = cur.t - base.t;
    if (!base[which].has(key) || dt <= 0.05) return undefined;
    const dv = cur[which].get(key)! - base[which].get(key)!;
    if (dv < 0) return undefined;
    return Math.max(0, Math.min(1, dv / dt));
  }
}
