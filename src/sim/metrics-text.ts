/**
 * cuzk's GetMetrics answer (cuzk-server service.rs `get_metrics`): a hand-written
 * Prometheus text blob, reproduced line for line, quirks included — per-kind counters
 * without `_total` (promtool rejects them), kinds spelled with underscores
 * (`ProofKind::metric_label`), per-kind lines in the HashMap's order (here first counted
 * first), and a "summary" whose _count/_sum cover only the last 1000 completed proofs
 * (JobTracker recent_durations: not monotonic). `{:.3}` is Rust's fixed 3 decimals.
 */
/** cuzk's `ProofKind::metric_label()`, indexed by the native kind enum. */
export const METRIC_LABELS = ['porep_c2', 'snap_update', 'window_post', 'winning_post'] as const;

export interface CuzkMetricsInput {
  totalCompleted: number;
  totalFailed: number;
  /** Whole seconds (cuzk: `started_at.elapsed().as_secs()`). */
  uptimeSeconds: number;
  /** Queued jobs, all kinds (cuzk: the scheduler's length). */
  queueDepth: number;
  /** [native kind, count], in the map's order (a kind appears once it was counted). */
  completedByKind: ReadonlyArray<readonly [number, number]>;
  failedByKind: ReadonlyArray<readonly [number, number]>;
  /** recent_durations grouped by kind: [kind, count, sum of seconds]. */
  recentByKind: ReadonlyArray<readonly [number, number, number]>;
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
  for (const [k, n] of m.completedByKind) t += `cuzk_proofs_completed{proof_kind="${METRIC_LABELS[k]}"} ${n}\n`;
  t += '# HELP cuzk_proofs_failed Per proof-kind failures\n';
  t += '# TYPE cuzk_proofs_failed counter\n';
  for (const [k, n] of m.failedByKind) t += `cuzk_proofs_failed{proof_kind="${METRIC_LABELS[k]}"} ${n}\n`;

  if (m.recentByKind.length > 0) {
    t += '# HELP cuzk_proof_duration_seconds Proof duration\n';
    t += '# TYPE cuzk_proof_duration_seconds summary\n';
    for (const [k, count, sum] of m.recentByKind) {
      t += `cuzk_proof_duration_seconds_count{proof_kind="${METRIC_LABELS[k]}"} ${count}\n`;
      t += `cuzk_proof_duration_seconds_sum{proof_kind="${METRIC_LABELS[k]}"} ${sum.toFixed(3)}\n`;
    }
  }

  t += '# HELP cuzk_running_jobs Currently running proofs\n';
  t += '# TYPE cuzk_running_jobs gauge\n';
  t += `cuzk_running_jobs ${m.runningJobs}\n`;
  t += '# HELP cuzk_gpu_workers Number of GPU workers\n';
  t += '# TYPE cuzk_gpu_workers gauge\n';
  t += `cuzk_gpu_workers ${m.gpuWorkers}\n`;
  return t;
}
