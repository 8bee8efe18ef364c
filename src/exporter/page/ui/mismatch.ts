/**
 * Status mismatch (DESIGN §9, cuzk_status_mismatch): only a certain contradiction. From the
 * snapshot itself: partitions in the "gpu" state while no worker at all is "proving" (the
 * seed's screenshot). More partitions on the GPU than proving workers is NOT one: with split
 * proving a partition whose kernels are done stays "gpu" (our engine adds
 * "finalizing": true) while its worker already proves the next. The exporter's verdict
 * (exporter.status_mismatch, exact per worker where it knows ownership) and its reasons are
 * taken too; the mismatch holds when either says so.
 */
import { int, isObj, Json, num, objs, str } from './json.js';

export const REASON_TEXT: Record<string, string> = {
  idle_with_partitions_on_gpu: 'partitions on the GPU while no worker is busy',
  owner_idle: 'a worker reported idle while the newest partition it picked up has not ended',
  surfaces_disagree: "the daemon's surfaces disagree about a worker",
};

export function pkey(job: string | null, index: number | null): string {
  return JSON.stringify([job, index]);
}

export interface OnGpu {
  job: string | null;
  index: number | null;
  gpuMs: number | null;
  owned: boolean;
  marked: boolean;
  orphan: boolean;
  finalizing: boolean;
}

export interface Mismatch {
  onGpu: OnGpu[];
  orphans: Set<string>;
  finalizing: Set<string>;
  busyCount: number;
  /** This page's own verdict from the snapshot. */
  client: boolean;
  /** exporter.status_mismatch, or null when absent. */
  exporter: boolean | null;
  reasons: string[];
  /** attach: workers the daemon's surfaces disagree on ({worker, gpu, busy_per, idle_per}). */
  disagree: Json[];
  exOnGpu: number | null;
  exBusy: number | null;
  active: boolean;
}

export function computeMismatch(snap: Json): Mismatch {
  const workers = objs(snap.gpu_workers);
  const busy = workers.filter((w) => w.state === 'proving');
  const owned = new Set<string>();
  busy.forEach((w) => owned.add(pkey(str(w.current_job), int(w.current_partition))));
  const onGpu: OnGpu[] = [];
  objs(snap.pipelines).forEach((p) => {
    const job = str(p.job_id);
    objs(p.partitions).forEach((part) => {
      if (part.state !== 'gpu') return;
      const idx = int(part.index);
      onGpu.push({ job, index: idx, gpuMs: num(part.gpu_ms), owned: owned.has(pkey(job, idx)), marked: part.finalizing === true, orphan: false, finalizing: false });
    });
  });
  const ex = isObj(snap.exporter) ? snap.exporter : null;
  const exVerdict = ex && typeof ex.status_mismatch === 'boolean' ? ex.status_mismatch : null;
  const reasons = ex ? (Array.isArray(ex.status_mismatch_reasons) ? ex.status_mismatch_reasons : []).filter((r): r is string => typeof r === 'string') : [];
  const client = onGpu.length > 0 && busy.length === 0 && workers.length > 0;
  const active = client || exVerdict === true;
  // A partition on the GPU that no proving worker owns: finalizing (split proving) unless
  // a mismatch holds, when it is the one the prover lies about (unless marked finalizing).
  onGpu.forEach((x) => {
    x.orphan = active && !x.owned && !x.marked;
    x.finalizing = x.marked || (!active && !x.owned);
  });
  const keys = (f: (x: OnGpu) => boolean) => new Set(onGpu.filter(f).map((x) => pkey(x.job, x.index)));
  return {
    onGpu,
    orphans: keys((x) => x.orphan),
    finalizing: keys((x) => x.finalizing),
    busyCount: busy.length,
    client,
    exporter: exVerdict,
    reasons,
    disagree: ex ? objs(ex.surfaces_disagree) : [],
    exOnGpu: ex ? int(ex.partitions_on_gpu) : null,
    exBusy: ex ? int(ex.busy_workers) : null,
    active,
  };
}
