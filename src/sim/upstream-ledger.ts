/**
 * The `upstream` part of simulate's ground truth (/truth): per kind and per worker, the
 * figures an observer of upstream cuzk's surfaces is meant to derive — what the renderer
 * made upstream show, in nanoseconds from the engine's own timestamps — and a count of
 * every rendering path taken, so a test can tell a row really happened.
 *
 * How it differs from the engine's native counters (docs/upstream-conformance.md, "truth"):
 *  - synthesis: a sibling whose synthesis the engine cut short when its job failed is
 *    rendered as completed (upstream does not cut it): its elapsed time is in synth_ns;
 *  - GPU: a sibling on the GPU when its job failed is rendered with a GPU_END (upstream does
 *    not cut it): counted in gpu_ns and parts_completed; a partition whose GPU stage failed
 *    has no GPU_END upstream: its time is in gpu_unended_ns, not gpu_ns;
 *  - proofs: upstream's own counters (JobTracker record_completion/record_failure), so a batch
 *    counts each request, a PoRep self-check failure is a failure, a gpu_prove_start failure
 *    counts once per failed partition, a duplicate id in flight may count once;
 *  - workers: busy_ns is the union of the worker's rendered GPU stages, pickup to end (the
 *    engine's own busy time when nothing was suppressed; a stage upstream would not have run —
 *    a job lost to the GPU-queue key collision — is left out); a stage with no end line
 *    (GPU failure) counts to the engine's end of it, and is also in unended_ns; with the
 *    pipeline off, the intervals GetStatus shows (a job per worker, start to end).
 */
import { PROOF_KINDS } from '../engine/model/kinds';

export interface UpstreamKind {
  proofs_completed: number;
  proofs_failed: number;
  /** /status counters (partitioned kinds: completions and self-check failures only). */
  status_completed: number;
  status_failed: number;
  /** Partitions with a rendered GPU_END (split prove) or a rendered end (synchronous path). */
  parts_completed: number;
  gpu_ns: number;
  synth_ns: number;
  /** Rendered SYNTH_ENDs. */
  synth_parts: number;
  /** GPU stages that left without an end line (GPU failures). */
  gpu_unended_parts: number;
  gpu_unended_ns: number;
}

export interface UpstreamWorker {
  worker: number;
  gpu: number;
  busy_ns: number;
  /** Partitions (pipeline off: jobs) whose end was rendered on this worker. */
  partitions: number;
  unended_ns: number;
  unended: number;
  /** Pickup-only lines (skip after pickup) rendered on this worker. */
  skips: number;
}

export const PATHS = [
  'gpu_failures_finish',
  'gpu_failures_start',
  'synth_failures_partitioned',
  'synth_failures_monolithic',
  'self_check_failures',
  'skips_at_dispatch',
  'skips_after_pickup',
  'cut_synth_rendered',
  'abandoned_gpu_rendered',
  'duplicates_in_flight',
  'retries',
  'assembler_panics',
  'results_discarded',
  'batches',
  'batch_requests',
  'batch_split_failures',
  'cancels_ignored',
  'cancels',
  'gpu_queue_collisions',
] as const;
export type PathName = (typeof PATHS)[number];

const emptyKind = (): UpstreamKind => ({
  proofs_completed: 0,
  proofs_failed: 0,
  status_completed: 0,
  status_failed: 0,
  parts_completed: 0,
  gpu_ns: 0,
  synth_ns: 0,
  synth_parts: 0,
  gpu_unended_parts: 0,
  gpu_unended_ns: 0,
});

export class UpstreamLedger {
  readonly kinds: UpstreamKind[] = PROOF_KINDS.map(emptyKind);
  readonly workers: UpstreamWorker[];
  readonly paths: Record<PathName, number> = Object.fromEntries(PATHS.map((p) => [p, 0])) as Record<PathName, number>;
  /** Per worker: the start of its current busy stretch (null: idle), and stages outstanding. */
  private readonly since: (number | null)[];
  private readonly outstanding: Int32Array;

  constructor(workerGpus: readonly number[]) {
    this.workers = workerGpus.map((gpu, worker) => ({ worker, gpu, busy_ns: 0, partitions: 0, unended_ns: 0, unended: 0, skips: 0 }));
    this.since = workerGpus.map(() => null);
    this.outstanding = new Int32Array(workerGpus.length);
  }

  /** A rendered GPU stage starts on `worker` (its pickup). */
  stageOn(worker: number, t: number): void {
    if (worker < 0 || worker >= this.outstanding.length) return;
    if (this.outstanding[worker]++ === 0) this.since[worker] = t;
  }

  /** A rendered GPU stage of `worker` left the GPU (ended, failed or skipped) at t. */
  stageOff(worker: number, t: number): void {
    if (worker < 0 || worker >= this.outstanding.length || this.outstanding[worker] === 0) return;
    if (--this.outstanding[worker] > 0) return;
    const w = this.workers[worker];
    const s = this.since[worker];
    if (w && s !== null) w.busy_ns += Math.max(0, t - s);
    this.since[worker] = null;
  }

  count(p: PathName, n = 1): void {
    this.paths[p] += n;
  }

  kind(k: number): UpstreamKind {
    return this.kinds[k] ?? this.kinds[0];
  }

  synth(k: number, ns: number): void {
    const e = this.kind(k);
    e.synth_ns += ns;
    e.synth_parts++;
  }

  gpuEnded(k: number, worker: number, ns: number): void {
    const e = this.kind(k);
    e.gpu_ns += ns;
    e.parts_completed++;
    const w = this.workers[worker];
    if (w) w.partitions++;
  }

  gpuUnended(k: number, worker: number, ns: number): void {
    const e = this.kind(k);
    e.gpu_unended_ns += ns;
    e.gpu_unended_parts++;
    const w = this.workers[worker];
    if (w) {
      w.unended_ns += ns;
      w.unended++;
    }
  }

  skip(worker: number): void {
    this.count('skips_after_pickup');
    const w = this.workers[worker];
    if (w) w.skips++;
  }

  /** Pipeline off: a worker starts showing a job at t / stops at t. */
  jobOn(worker: number, t: number): void {
    this.stageOn(worker, t);
  }

  jobOff(worker: number, t: number): void {
    this.stageOff(worker, t);
    const w = this.workers[worker];
    if (w) w.partitions++;
  }

  /** Busy including the running stretch, at engine clock `now`. */
  busyAt(worker: number, now: number): number {
    const w = this.workers[worker];
    const s = this.since[worker];
    return (w?.busy_ns ?? 0) + (s === null || s === undefined ? 0 : Math.max(0, now - s));
  }
}
