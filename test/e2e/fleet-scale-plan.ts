/**
 * The fleet of test/e2e/fleet-scale.test.ts: 24 simulated cuzk boxes of mixed shapes (1-4
 * GPUs, 1-2 workers per GPU), each running one behaviour of docs/upstream-conformance.md
 * (test/conformance/rows.ts: WindowPoSt with partition_index ≠ 0, retried and duplicated ids,
 * GPU and synthesis failures with skips, split prove off, pipeline off, Curio's request ids,
 * torn lines on every box), attached the ways operators attach them (gRPC + TIMELINE, with
 * /status, the log through a command) — and three that are not well:
 *  - FAULTY: the seed's fault (the finalizer's clobber for SnapDeals, one worker, a
 *    GPU-bound SnapDeals box), gRPC + TIMELINE + /status: the key alert must page for it;
 *  - DEGRADED: its TIMELINE absent (the file named in the targets file is never written):
 *    one surface down, a warning that does not page;
 *  - DOWN: attached through /status alone while the daemon's status_listen is off (cuzk's
 *    default): its source down, which pages and inhibits its other alerts.
 */
import type { Row } from '../conformance/harness';
import { ROWS } from '../conformance/rows';
import type { FleetFileBox } from '../helpers/sim-fleet';

/** How the fleet exporter attaches a box (targets file). */
export type Attach =
  | 'tg' // gRPC + the TIMELINE file (the recommended setup)
  | 'tgs' // + /status
  | 'cmd' // gRPC + the log through a command (tail -F, as ssh … journalctl would)
  | 'degraded' // gRPC + /status + a TIMELINE file that never appears
  | 'down'; // /status alone, at an address nothing listens on

export interface BoxPlan {
  box: FleetFileBox;
  attach: Attach;
  /** The conformance row whose workload this box runs (none: FAULTY's own loop, or idle). */
  row?: Row;
}

export const FAULTY = 'gpu-07';
export const DEGRADED = 'gpu-13';
export const DOWN = 'gpu-19';

const row = (id: string): Row => {
  const r = ROWS.find((x) => x.id === id);
  if (!r) throw new Error(`no conformance row ${id}`);
  return r;
};

const b = (n: number, gpus: number, wpg: number, ts: number, rowId: string | null, attach: Attach, extra: Partial<FleetFileBox> = {}): BoxPlan => ({
  box: { name: `gpu-${String(n).padStart(2, '0')}`, gpus, workers_per_gpu: wpg, time_scale: ts, ...extra },
  attach,
  row: rowId ? row(rowId) : undefined,
});

export const PLAN: BoxPlan[] = [
  b(1, 1, 2, 0.05, 'success-porep', 'tg'),
  b(2, 2, 2, 0.05, 'success-snap', 'cmd'),
  b(3, 1, 1, 0.05, 'success-wdpost', 'tg'),
  b(4, 4, 2, 0.05, 'success-winpost', 'tgs'),
  b(5, 2, 1, 0.05, 'mixed', 'tg'),
  b(6, 1, 2, 0.02, 'gpu-fail-finish', 'tgs', { faults: { fail_partition_nth: 4 } }),
  // The seed's fault: real-time SnapDeals, one worker, the clobber.
  b(7, 1, 1, 1, null, 'tgs', { faults: { status_bug_kind: 'snap-update', status_bug_mode: 'clobber' } }),
  b(8, 3, 1, 0.02, 'retry-after-failure', 'tg', { faults: { fail_partition_nth: 2 } }),
  b(9, 1, 2, 0.05, 'retry-after-completion', 'cmd'),
  b(10, 2, 2, 0.05, 'duplicate-in-flight', 'tgs'),
  b(11, 1, 1, 0.05, 'cancel-noop', 'tg'),
  b(12, 2, 2, 0.05, 'split-prove-off', 'tg', { split_prove: false }),
  // /status alone samples every 500 ms: at 0.05 a partition can start and end between two
  // polls on a busy CI box (seen: 6 of 10 counted, busy over-estimated), so a slower clock.
  b(13, 2, 2, 0.25, 'mixed', 'degraded', { surfaces: ['grpc', 'status'] }),
  b(14, 2, 1, 0.05, 'pipeline-off', 'tg', { pipeline: false }),
  b(15, 1, 2, 0.02, 'synth-fail-partitioned', 'tgs', { faults: { fail_synthesis_nth: 3 } }),
  b(16, 4, 1, 0.05, 'torn-lines', 'tg'),
  b(17, 1, 2, 0.1, 'mixed', 'cmd'),
  b(18, 3, 2, 0.05, 'mixed', 'tgs'),
  b(19, 1, 2, 0.05, null, 'down', { surfaces: ['grpc', 'timeline'] }),
  b(20, 2, 2, 0.1, 'mixed', 'tg'),
  b(21, 4, 2, 0.05, 'success-porep', 'tg'),
  // WindowPoSt at production speed (a GPU stage of ~5 s) with /status attached: cuzk's /status
  // never shows PoSt, while TIMELINE and GetStatus do.
  b(22, 1, 1, 1, 'success-wdpost', 'tgs'),
  b(23, 3, 1, 0.1, 'mixed', 'cmd'),
  b(24, 2, 2, 0.05, 'success-snap', 'tg'),
];

/**
 * Engine settings every box shares (the fleet file has no per-box timings): SnapDeals
 * synthesis fast against its kernels, so FAULTY's partitions queue for the GPU and its
 * worker owns the next one when the previous one's finalizer ends — the clobber shows (the
 * other kinds keep the production timings of native/README.md).
 */
export const ENGINE_CONFIG = { sim: { 'snap-update': { synth_ms: 400, gpu_ms: 600, finalize_ms: 400, jitter: 0.05 } } };

/**
 * simulate flags for the whole fleet: torn lines on every box, upstream defaults otherwise —
 * but no GPU-queue collision (row gpu-queue-collision: a PoSt job and the first partitioned
 * job's partition 0 share upstream's queue key and one is lost for good, its caller waiting
 * forever; every box here would be one collision away from never going quiescent).
 */
export const SIM_FLAGS = ['--engine.backend', 'sim', '--engine.synthesis-concurrency', '4', '--simulate.tear-rate', '0.05', '--simulate.gpu-queue-collisions', 'false'];

/** The surface combination the conformance rules compare (rules.ts). */
export function comboOf(a: Attach): 'tg' | 'tgs' | 'gs' | null {
  if (a === 'tg' || a === 'cmd') return 'tg';
  if (a === 'tgs') return 'tgs';
  if (a === 'degraded') return 'gs';
  return null;
}

export const UP = PLAN.filter((p) => p.attach !== 'down' && p.attach !== 'degraded').map((p) => p.box.name);
/** Boxes whose gRPC the exporter reads (their proof counters reach Prometheus). */
export const COUNTED = PLAN.filter((p) => p.attach !== 'down').map((p) => p.box.name);
