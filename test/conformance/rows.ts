/**
 * The rows of docs/upstream-conformance.md that run as a whole: simulate flags + a workload
 * of Curio-shaped gRPC Prove calls (ids as lib/ffi/cuzk_funcs.go and tasks/proofshare make
 * them). Each row names the upstream paths its truth must show it took (`paths`), whether the
 * box is healthy (no mismatch may ever be set), and what a surface combination cannot know.
 * Rows that only a scripted event stream can pin down exactly (30 s GC, GetStatus race) are in
 * test/sim/render-*.test.ts.
 */
import type { Kind, Row, WorkloadCtx } from './harness';

const wdpostId = (miner: number, part: number, r: number[]) => `wdpost-${miner}-${part}-[${r.join(' ')}]`;
const R8 = [12, 200, 3, 4, 5, 6, 7, 8];

/** Curio ids: sealing, proofshare, WindowPoSt (partition_index), WinningPoSt. */
function idFor(kind: Kind, n: number): { id: string; extra: Record<string, unknown> } {
  switch (kind) {
    case 'porep-c2':
      return { id: n % 2 ? `ps-porep-1000-${n}-${500 + n}` : `porep-1000-${n}`, extra: { sector_number: n, miner_id: 1000 } };
    case 'snap-update':
      return { id: n % 2 ? `ps-snap-1000-${n}-${500 + n}` : `snap-1000-${n}`, extra: { sector_number: n, miner_id: 1000 } };
    case 'window-post':
      return { id: wdpostId(1000, n % 10, R8), extra: { partition_index: n % 10, miner_id: 1000 } };
    case 'winning-post':
      return { id: `winpost-1000-${n.toString(16).padStart(16, '0')}`, extra: { miner_id: 1000 } };
  }
}

/**
 * Proves `kinds` (numbered from `from`): partitioned ones at once, PoSt ones one after the
 * other — two PoSt jobs waiting in upstream's GPU queue together collide on key (0,0) and one
 * is lost for good (row gpu-queue-collision), which a row about something else must avoid.
 */
async function proveAll(c: WorkloadCtx, kinds: Kind[], from = 1): Promise<void> {
  const one = async (k: Kind, n: number) => {
    const { id, extra } = idFor(k, n);
    const a = await c.prove(k, id, extra);
    if (a.status !== 'COMPLETED') throw new Error(`expected COMPLETED, got ${JSON.stringify(a)}`);
  };
  const post = kinds.map((k, i) => [k, from + i] as const).filter(([k]) => k === 'window-post' || k === 'winning-post');
  const postChain = post.reduce((p, [k, n]) => p.then(() => one(k, n)), Promise.resolve());
  await Promise.all([postChain, ...kinds.map((k, i) => [k, from + i] as const).filter(([k]) => k === 'porep-c2' || k === 'snap-update').map(([k, n]) => one(k, n))]);
}

const MIX: Kind[] = ['porep-c2', 'snap-update', 'snap-update', 'window-post', 'winning-post', 'window-post', 'winning-post'];

export const ROWS: Row[] = [
  { id: 'success-porep',
    statusExact: true, flags: [], healthy: true, workload: (c) => proveAll(c, ['porep-c2', 'porep-c2']) },
  { id: 'success-snap',
    statusExact: true, flags: [], healthy: true, workload: (c) => proveAll(c, ['snap-update', 'snap-update']) },
  {
    id: 'success-wdpost',
    flags: [],
    healthy: true,
    // partition_index 3 and 7: GPU_END carries it, GPU_PICKUP/GPU_START do not.
    workload: (c) => proveAll(c, ['window-post', 'window-post'], 3).then(() => proveAll(c, ['window-post'], 7)),
  },
  { id: 'success-winpost', flags: [], healthy: true, workload: (c) => proveAll(c, ['winning-post', 'winning-post', 'winning-post']) },
  { id: 'mixed',
    statusExact: true, flags: [], healthy: true, workload: (c) => proveAll(c, MIX) },
  {
    id: 'gpu-fail-finish',
    flags: ['--fault.fail-partition-nth', '4'],
    healthy: false,
    paths: { gpu_failures_finish: 1, skips_at_dispatch: 1, skips_after_pickup: 1 },
    workload: async (c) => {
      const { id, extra } = idFor('porep-c2', 2);
      const a = await c.prove('porep-c2', id, extra);
      if (a.status !== 'FAILED') throw new Error(`expected FAILED: ${JSON.stringify(a)}`);
      await c.truthUntil('the failed job settled', (t) => t.observed.jobs_in_flight === 0 && t.observed.pending_skips === 0);
      await proveAll(c, ['snap-update', 'winning-post'], 10);
    },
  },
  {
    id: 'gpu-fail-start',
    flags: ['--simulate.gpu-failure', 'start', '--fault.fail-partition-nth', '4'],
    healthy: false,
    paths: { gpu_failures_start: 1 },
    workload: async (c) => {
      const { id, extra } = idFor('snap-update', 2);
      const a = await c.prove('snap-update', id, extra);
      if (a.status !== 'FAILED') throw new Error(`expected FAILED: ${JSON.stringify(a)}`);
      await proveAll(c, ['porep-c2'], 11);
    },
  },
  {
    id: 'synth-fail-partitioned',
    flags: ['--fault.fail-synthesis-nth', '3'],
    healthy: false,
    paths: { synth_failures_partitioned: 1 },
    workload: async (c) => {
      const { id, extra } = idFor('snap-update', 4);
      if ((await c.prove('snap-update', id, extra)).status !== 'FAILED') throw new Error('expected FAILED');
      await proveAll(c, ['snap-update'], 12);
    },
  },
  {
    id: 'synth-fail-monolithic',
    flags: ['--fault.fail-synthesis-nth', '1'],
    healthy: false,
    paths: { synth_failures_monolithic: 1 },
    workload: async (c) => {
      const { id, extra } = idFor('window-post', 5);
      if ((await c.prove('window-post', id, extra)).status !== 'FAILED') throw new Error('expected FAILED');
      await proveAll(c, ['window-post'], 13);
    },
  },
  {
    id: 'self-check',
    // cpu backend: real proofs; the first completed proof is corrupted, the self-check fails it.
    flags: ['--engine.backend', 'cpu', '--fault.corrupt-proof-nth', '1'],
    engine: { sizes: { 'porep-c2': 10 } },
    healthy: true,
    paths: { self_check_failures: 1 },
    workload: async (c) => {
      const { id, extra } = idFor('porep-c2', 6);
      const a = await c.prove('porep-c2', id, extra);
      if (a.status !== 'FAILED' || !String(a.error_message).startsWith('PoRep proof self-check failed')) throw new Error(`expected a self-check failure: ${JSON.stringify(a)}`);
      await proveAll(c, ['porep-c2'], 14);
    },
  },
  {
    id: 'duplicate-in-flight',
    flags: [],
    healthy: true,
    paths: { duplicates_in_flight: 1 },
    workload: async (c) => {
      const { id, extra } = idFor('porep-c2', 8);
      const [a, b] = await Promise.all([c.prove('porep-c2', id, extra), c.prove('porep-c2', id, extra)]);
      if (a.status !== 'COMPLETED' || b.status !== 'COMPLETED') throw new Error('both callers get the first completion');
    },
  },
  {
    id: 'retry-after-completion',
    // Not statusExact: the retry replaces the JobState within one poll of the first run's end (time scale 0.02), so /status never shows that run's last partitions done.
    flags: [],
    healthy: true,
    paths: { retries: 1 },
    workload: async (c) => {
      const { id, extra } = idFor('snap-update', 9);
      await c.prove('snap-update', id, extra);
      await c.truthUntil('the first run gone', (t) => t.observed.jobs_in_flight === 0);
      if ((await c.prove('snap-update', id, extra)).status !== 'COMPLETED') throw new Error('the retry completes');
    },
  },
  {
    id: 'retry-after-failure',
    flags: ['--fault.fail-partition-nth', '2'],
    healthy: false,
    paths: { retries: 1, gpu_failures_finish: 1 },
    workload: async (c) => {
      const { id, extra } = idFor('snap-update', 10);
      if ((await c.prove('snap-update', id, extra)).status !== 'FAILED') throw new Error('expected FAILED');
      await c.truthUntil('the failed run gone', (t) => t.observed.jobs_in_flight === 0 && t.observed.pending_skips === 0);
      if ((await c.prove('snap-update', id, extra)).status !== 'COMPLETED') throw new Error('the retry completes');
    },
  },
  {
    id: 'cancel-noop',
    statusExact: true,
    flags: [],
    healthy: true,
    paths: { cancels_ignored: 1 },
    workload: async (c) => {
      const { id, extra } = idFor('snap-update', 11);
      await c.rpc('SubmitProof', { request_id: id, proof_kind: 'SNAP_DEALS_UPDATE', ...extra });
      const r = await c.rpc('CancelProof', { job_id: id });
      if (r.was_running !== false) throw new Error('upstream CancelProof answers was_running false');
      if ((await c.rpc('AwaitProof', { job_id: id }, 120_000)).status !== 'COMPLETED') throw new Error('the job runs on');
    },
  },
  {
    id: 'split-prove-off',
    statusExact: true,
    flags: ['--simulate.split-prove', 'false'],
    healthy: true,
    unknowable: { '*': { busy: 'no GPU_START/GPU_END lines', gpu_seconds: 'no GPU_END lines', partitions: 'no GPU_END lines' } },
    workload: (c) => proveAll(c, MIX),
  },
  { id: 'pipeline-off', flags: ['--simulate.pipeline', 'false'], healthy: true, workload: (c) => proveAll(c, MIX) },
  {
    id: 'batch-porep',
    flags: ['--simulate.batch-size', '3', '--simulate.batch-wait', '300ms'],
    healthy: true,
    paths: { batches: 1, batch_requests: 3 },
    workload: async (c) => {
      await proveAll(c, ['porep-c2', 'porep-c2', 'porep-c2'], 20);
      await proveAll(c, ['porep-c2'], 30); // alone: flushed by the wait, partitioned
    },
  },
  {
    id: 'batch-snap',
    flags: ['--simulate.batch-size', '2', '--simulate.batch-wait', '300ms'],
    healthy: true,
    paths: { batch_split_failures: 1 },
    workload: async (c) => {
      const a = await Promise.all([20, 21].map((n) => c.prove('snap-update', idFor('snap-update', n).id, idFor('snap-update', n).extra)));
      if (a.some((x) => x.status !== 'FAILED')) throw new Error('a SnapDeals batch fails every request at the split');
    },
  },
  { id: 'torn-lines',
    statusExact: true, flags: ['--simulate.tear-rate', '0.3'], healthy: true, paths: { torn_lines: 1 }, workload: (c) => proveAll(c, MIX) },
  {
    id: 'two-workers-lock-wait',
    statusExact: true,
    flags: [],
    // Kernels 4x longer than syntheses: the two workers queue on the GPU lock; gpu_ms includes the wait.
    engine: { sim: { 'snap-update': { synth_ms: 1000, gpu_ms: 4000, finalize_ms: 500, jitter: 0.1 } } },
    healthy: true,
    workload: (c) => proveAll(c, ['snap-update', 'snap-update']),
  },
  {
    id: 'daemon-restart',
    flags: [],
    healthy: true,
    workload: async (c) => {
      await proveAll(c, ['snap-update', 'window-post']);
      // A daemon that lived: WinningPoSts until it has been up 3 s, well past RESTART_BACK_MS
      // and the exposure lag, so the restart shows in the offsets on a loaded box too (a run
      // of ~1.3 s restarted at once is told by the reads alone: attach/timeline-restart.test.ts).
      const up = async () => (await c.truthUntil('the truth', () => true)).uptime_ns as number;
      for (let n = 100; (await up()) < 3e9; n++) await proveAll(c, ['winning-post'], n);
      await c.restart(); // TIMELINE offsets restart near 0; counters of every surface restart
      await proveAll(c, ['snap-update', 'winning-post'], 40);
    },
  },
  {
    id: 'gpu-queue-collision',
    // One worker busy with a PoRep while two WinningPoSts finish synthesis: the second
    // GPU-queue push under key (0,0) replaces the first, which is lost for good.
    flags: ['--engine.workers-per-gpu', '1', '--simulate.gpu-queue-collisions', 'true'],
    engine: { sim: { 'porep-c2': { synth_ms: 500, gpu_ms: 20000, finalize_ms: 100, jitter: 0 }, 'winning-post': { synth_ms: 200, gpu_ms: 100, finalize_ms: 50, jitter: 0 } } },
    healthy: true,
    paths: { gpu_queue_collisions: 1 },
    workload: async (c) => {
      // The PoRep's own partition 0 (key (0,0): the first partitioned job) may be the one lost:
      // nothing here waits for an answer.
      const p = idFor('porep-c2', 50);
      c.proveDetached('porep-c2', p.id, p.extra);
      await c.truthUntil('a PoRep partition synthesized', (t) => t.upstream.kinds['porep-c2'].synth_parts >= 1);
      c.proveDetached('winning-post', idFor('winning-post', 51).id);
      c.proveDetached('winning-post', idFor('winning-post', 52).id);
      await c.truthUntil('a GPU queue collision', (t) => t.upstream.paths.gpu_queue_collisions >= 1);
    },
  },
];
