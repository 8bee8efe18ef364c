/**
 * What the fleet page (GET /fleet.json) shows of every target, from each target's own model:
 * up and surface health, GPUs, each worker busy or idle, the cumulative busy seconds the page
 * turns into utilisation (Δ busy / Δ clock over its own polls, as the box page and
 * rate(cuzk_gpu_worker_busy_seconds_total) do — never from the sampled busy flag), queue,
 * proof totals (proofs/min likewise), the mismatch and its reasons, the timeline command.
 * O(workers + kinds) per target; nothing here waits on a daemon.
 */
import { KIND_LABELS, KIND_SLOTS } from '../engine/model/kinds';
import type { FleetTarget, Fleet } from '../engine/sources/fleet/fleet';
import type { TargetsFileWatch } from '../engine/sources/fleet/targets-watch';

export interface TargetSummary {
  name: string;
  labels: Record<string, string>;
  up: boolean;
  surfaces: { name: string; target: string; up: boolean }[];
  gpus: { ordinal: number; name: string }[];
  workers: { id: number; gpu: number; busy: boolean }[];
  /** Σ over workers of cuzk_gpu_worker_busy_seconds_total, as of `clock_secs`. */
  busy_seconds_total: number;
  /** The target's model clock (seconds, monotonic): the time `busy_seconds_total` is at. */
  clock_secs: number;
  queue_depth: number;
  proofs_completed_total: number;
  proofs_failed_total: number;
  completed_by_kind: Record<string, number>;
  partitions_on_gpu: number;
  mismatch: boolean;
  /** Seconds since the target was last seen in a mismatch (looked at every second), null if never. */
  mismatch_seen_secs_ago: number | null;
  mismatch_reasons: string[];
  errors_total: number;
  last_error: string | null;
  snapshot_age_secs: number;
  timeline_command: { running: boolean; failures: number; backoff_secs: number; last_failure: string | null } | null;
}

export interface FleetSummary {
  version: string;
  /** The exporter's monotonic clock (seconds): proofs/min are taken against it. */
  now_secs: number;
  generated_at: string;
  targets_file: { file: string; last_reload_ok: boolean; last_error: string | null; reloads: number };
  targets: TargetSummary[];
}

const sum = (a: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i];
  return s;
};

export function summarizeTarget(t: FleetTarget): TargetSummary {
  const src = t.source;
  t.look();
  const m = src.model;
  const now = src.nowNs();
  let busyNs = 0;
  const workers = m.topology.workers.map((w, i) => {
    busyNs += m.workerBusyNsAt(i, now);
    return { id: w.id, gpu: w.gpu, busy: m.wBusy[i] === 1 };
  });
  const byKind: Record<string, number> = {};
  for (let k = 0; k < KIND_SLOTS; k++) if (m.kProofsCompleted[k] > 0) byKind[KIND_LABELS[k]] = m.kProofsCompleted[k];
  let errors = 0;
  for (const [, n] of m.errors.entries()) errors += n;
  return {
    name: t.name,
    labels: t.labels,
    up: m.up,
    surfaces: src.surfaceStates().map((s) => ({ name: s.name, target: s.target, up: s.up })),
    gpus: m.topology.gpus.map((g) => ({ ordinal: g.ordinal, name: g.name })),
    workers,
    busy_seconds_total: busyNs / 1e9,
    clock_secs: now / 1e9,
    queue_depth: sum(m.kQueueDepth),
    proofs_completed_total: sum(m.kProofsCompleted),
    proofs_failed_total: sum(m.kProofsFailed),
    completed_by_kind: byKind,
    partitions_on_gpu: m.partitionsOnGpu(),
    mismatch: m.statusMismatch(),
    mismatch_seen_secs_ago: t.mismatchSeenAt > 0 ? (performance.now() - t.mismatchSeenAt) / 1000 : null,
    mismatch_reasons: [...m.mismatchReasons()],
    errors_total: errors,
    last_error: m.errors.lastMessage,
    snapshot_age_secs: src.snapshotAgeSeconds(),
    timeline_command: t.command
      ? { running: t.command.running, failures: t.command.failures, backoff_secs: t.command.backoffMs / 1000, last_failure: t.command.lastFailure }
      : null,
  };
}

export function summarizeFleet(fleet: Fleet, watch: TargetsFileWatch, version: string): FleetSummary {
  return {
    version,
    now_secs: Number(process.hrtime.bigint()) / 1e9,
    generated_at: new Date().toISOString(),
    targets_file: { file: watch.file, last_reload_ok: watch.lastReloadOk, last_error: watch.lastError, reloads: watch.reloads },
    targets: fleet.list().map(summarizeTarget),
  };
}
