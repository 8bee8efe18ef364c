/**
 * cuzk's GetMetrics answer (cuzk-server service.rs `get_metrics`): a hand-written
 * Prometheus text blob, reproduced line for line, quirks included — per-kind counters
 * without `_total` (promtool rejects them), kinds spelled with underscores, and a
 * "summary" whose _count/_sum cover only the last 1000 completed proofs (not monotonic).
 */
import { PROOF_KINDS } from '../engine/kinds';

/** cuzk's `ProofKind::metric_label()`, indexed by the native kind enum. */
export const METRIC_LABELS = ['porep_c2', 'snap_update', 'window_post', 'winning_post'] as const;

/** cuzk's `recent_durations`: (kind, total duration) of the last 1000 completed proofs. */
export class RecentDurations {
  static readonly CAPACITY = 1000;
  private readonly kinds = new Uint8Array(RecentDurations.CAPACITY);
  private readonly secs = new Float64Array(RecentDurations.CAPACITY);
  private next = 0;
  private size = 0;

  push(kind: number, seconds: number): void {
    this.kinds[this.next] = kind;
    this.secs[this.next] = seconds;
    this.next = (this.next + 1) % RecentDurations.CAPACITY;
    if (this.size < RecentDurations.CAPACITY) this.size++;
  }

  get length(): number {
    return this.size;
  }

  /** Per native kind: [count, sum of seconds] over the window. */
  perKind(): Array<[number, number]> {
    const out: Array<[number, number]> = PROOF_KINDS.map(() => [0, 0]);
    for (let i = 0; i < this.size; i++) {
      const e = out[this.kinds[i]];
      if (!e) continue;
      e[0]++;
      e[1] += this.secs[i];
    }
    return out;
  }
}

export interface CuzkMetricsInput {
  totalCompleted: number;
  totalFailed: number;
  /** Whole seconds (cuzk: `started_at.elapsed().as_secs()`). */
  uptimeSeconds: number;
  /** Queued jobs, all kinds (cuzk: the scheduler's length). */
  queueDepth: number;
  /** Per native kind. cuzk keeps a map: a kind appears once it has a count. */
  completedByKind: readonly number[];
  failedByKind: readonly number[];
  recent: RecentDurations;
  /** Workers whose current job is set (GetStatus's view, race included). */
  runningJobs: number;
  gpuWorkers: number;
}

export function cuzkMetricsText(m: CuzkMetricsInput): string {
  let t = '';
  t += '# HELP cuzk_proofs_completed_total Total proofs completed\n';
  t += '# TYPE cuzk_proofs_completed_total counter\n';
  t += `cuzk_proofs_completed_total ${m.totalCompleted}\n`;
  t += '# HELP cuzk_proofs_failed_total Total proofs failed\n';
  t += '# TYPE cuzk_proofs_failed_total counter\n';
  t += `cuzk_proofs_failed_total ${m.totalFailed}\n`;
  t += '# HELP cuzk_uptime_seconds Daemon uptime\n';
  t += '# TYPE cuzk_uptime_seconds gauge\n';
  t += `cuzk_uptime_seconds ${m.uptimeSeconds}\n`;
  t += '# HELP cuzk_queue_depth Current queue depth\n';
  t += '# TYPE cuzk_queue_depth gauge\n';
  t += `cuzk_queue_depth ${m.queueDepth}\n`;

  t += '# HELP cuzk_proofs_completed Per proof-kind completions\n';
  t += '# TYPE cuzk_proofs_completed counter\n';
  METRIC_LABELS.forEach((label, k) => {
    if ((m.completedByKind[k] ?? 0) > 0) t += `cuzk_proofs_completed{proof_kind="${label}"} ${m.completedByKind[k]}\n`;
  });
  t += '# HELP cuzk_proofs_failed Per proof-kind failures\n';
  t += '# TYPE cuzk_proofs_failed counter\n';
  METRIC_LABELS.forEach((label, k) => {
    if ((m.failedByKind[k] ?? 0) > 0) t += `cuzk_proofs_failed{proof_kind="${label}"} ${m.failedByKind[k]}\n`;
  });

  if (m.recent.length > 0) {
    t += '# HELP cuzk_proof_duration_seconds Proof duration\n';
    t += '# TYPE cuzk_proof_duration_seconds summary\n';
    m.recent.perKind().forEach(([count, sum], k) => {
      if (count === 0) return;
      t += `cuzk_proof_duration_seconds_count{proof_kind="${METRIC_LABELS[k]}"} ${count}\n`;
      t += `cuzk_proof_duration_seconds_sum{proof_kind="${METRIC_LABELS[k]}"} ${sum.toFixed(3)}\n`;
    });
  }

  t += '# HELP cuzk_running_jobs Currently running proofs\n';
  t += '# TYPE cuzk_running_jobs gauge\n';
  t += `cuzk_running_jobs ${m.runningJobs}\n`;
  t += '# HELP cuzk_gpu_workers Number of GPU workers\n';
  t += '# TYPE cuzk_gpu_workers gauge\n';
  t += `cuzk_gpu_workers ${m.gpuWorkers}\n`;
  return t;
}
