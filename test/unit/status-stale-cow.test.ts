/**
 * StaleStatus.settle (attach/status-stale.ts) copies on write: only the partitions it
 * abandons and the workers it finds stale are copied, the rest of the settled view is the
 * daemon's own snapshot. Checked here against the implementation it replaced (a deep copy
 * of every pipeline, partition and worker, then the rules applied in place), kept below as
 * the reference: over random sequences of validated-shape snapshots (shared job ids,
 * repeated owners, failed and long-running partitions, the daemon's own `abandoned` marks),
 * the settled view, the jobs newly inferred failed and the marks left on the daemon's
 * snapshot are the same, and what settling did not change is not copied.
 */
import fc from 'fast-check';
import { StaleStatus } from '../../src/engine/sources/attach/status-stale';
import type { CuzkStatus } from '../../src/engine/sources/status-schema';

type Obj = Record<string, any>;

/** The deep-copy settle before copy on write (rules 1-4 of status-stale.ts), verbatim in effect. */
class ReferenceStale {
  private longestGpuMs = 0;
  private readonly failed = new Set<string>();
  /** Job id -> its partitions abandoned while synth_done, and the job as it was then (the skip-after-pickup rule). */
  private readonly skipped = new Map<string, { idx: number[]; parts: number; failedIdx: number[]; registeredS: number }>();
  constructor(private readonly opts: { minUnownedMs?: number; minOwnedMs?: number } = {}) {}

  settle(daemon: Obj): { status: Obj; fresh: { jobId: string; kind: string }[] } {
    const s: Obj = {
      ...daemon,
      pipelines: daemon.pipelines.map((p: Obj) => ({ ...p, partitions: p.partitions.map((x: Obj) => ({ ...x })) })),
      gpu_workers: daemon.gpu_workers.map((w: Obj) => ({ ...w })),
    };
    for (const p of s.pipelines) for (const x of p.partitions) if (x.state === 'done' && typeof x.gpu_ms === 'number' && x.gpu_ms > this.longestGpuMs) this.longestGpuMs = x.gpu_ms;
    const unownedMs = Math.max(this.opts.minUnownedMs ?? 10_000, 3 * this.longestGpuMs);
    const ownedMs = Math.max(this.opts.minOwnedMs ?? 60_000, 5 * this.longestGpuMs);
    const owner = new Map<string, Obj>();
    for (const w of s.gpu_workers) if (w.state === 'proving' && w.current_job != null && w.current_partition != null) owner.set(`${w.current_job}\u0000${w.current_partition}`, w);
    const failedJobs = new Set<string>();
    for (const p of s.pipelines) {
      const sk = this.skipped.get(p.job_id);
      // The id registered again (a retry): a new job, its partitions live.
      if (
        sk &&
        (p.partitions.length !== sk.parts ||
          s.uptime_secs - p.started_secs_ago >= sk.registeredS + 2 ||
          sk.failedIdx.some((i) => p.partitions[i].state !== 'failed') ||
          p.partitions.some((x: Obj) => x.state === 'pending' && sk.idx.includes(x.index)))
      )
        this.skipped.delete(p.job_id);
      const skip = this.skipped.get(p.job_id)?.idx ?? [];
      for (const x of p.partitions) {
        if (x.state === 'failed' || (x.state === 'gpu' && skip.includes(x.index))) failedJobs.add(p.job_id);
        if (x.state !== 'gpu' || typeof x.gpu_ms !== 'number') continue;
        const w = owner.get(`${p.job_id}\u0000${x.index}`);
        if ((!w && x.gpu_ms > unownedMs) || (w && x.gpu_ms > ownedMs)) failedJobs.add(p.job_id);
      }
    }
    let newestStarted = Infinity;
    const byAge = [...s.pipelines].sort((a, b) => a.started_secs_ago - b.started_secs_ago);
    for (const p of byAge) {
      const pending = p.partitions.some((x: Obj) => x.state === 'pending');
      if (pending && newestStarted + 2 <= p.started_secs_ago) failedJobs.add(p.job_id);
      if (p.partitions.some((x: Obj) => x.state !== 'pending') && p.started_secs_ago < newestStarted) newestStarted = p.started_secs_ago;
    }
    const fresh: { jobId: string; kind: string }[] = [];
    for (const p of s.pipelines) {
      if (!failedJobs.has(p.job_id)) continue;
      // The job as the daemon showed it (before the marks below).
      const before = { parts: p.partitions.length, failedIdx: p.partitions.filter((x: Obj) => x.state === 'failed').map((x: Obj) => x.index), registeredS: s.uptime_secs - p.started_secs_ago };
      for (const x of p.partitions) {
        const dead =
          x.state === 'pending' ||
          x.state === 'synth_done' ||
          (x.state === 'gpu' &&
            ((typeof x.gpu_ms === 'number' && x.gpu_ms > (owner.has(`${p.job_id}\u0000${x.index}`) ? ownedMs : unownedMs)) || (this.skipped.get(p.job_id)?.idx.includes(x.index) ?? false)));
        if (!dead) continue;
        if (x.state === 'synth_done') {
          const sk = this.skipped.get(p.job_id) ?? { idx: [] as number[], ...before };
          if (!sk.idx.includes(x.index)) sk.idx.push(x.index);
          this.skipped.set(p.job_id, sk);
        }
        x.state = 'failed';
        x.abandoned = true;
      }
      if (!this.failed.has(p.job_id)) {
        this.failed.add(p.job_id);
        fresh.push({ jobId: p.job_id, kind: p.proof_kind });
      }
    }
    for (const w of s.gpu_workers) {
      if (w.state !== 'proving') continue;
      const p = w.current_job != null ? s.pipelines.find((x: Obj) => x.job_id === w.current_job) : undefined;
      const part = p && w.current_partition != null ? p.partitions.find((x: Obj) => x.index === w.current_partition) : undefined;
      const ageMs = part && part.state === 'gpu' && typeof part.gpu_ms === 'number' ? part.gpu_ms : (w.busy_secs ?? 0) * 1000;
      if ((part && part.abandoned === true) || ageMs > ownedMs) {
        w.state = 'idle';
        w.current_job = null;
        w.current_partition = null;
        w.busy_secs = null;
      }
    }
    daemon.pipelines.forEach((p: Obj, i: number) =>
      p.partitions.forEach((x: Obj, j: number) => {
        if (s.pipelines[i].partitions[j].abandoned && !x.abandoned) x.abandoned = true;
      }),
    );
    daemon.gpu_workers.forEach((w: Obj, i: number) => {
      if (w.state === 'proving' && s.gpu_workers[i].state !== 'proving') w.stale = true;
    });
    return { status: s, fresh };
  }
}

const STATES = ['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed'] as const;
const JOBS = ['a', 'b', 'c', 'd', 'e'];
const ms = fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 200_000 }));

const partition = fc.record({
  state: fc.constantFrom(...STATES),
  synth_ms: ms,
  gpu_ms: ms,
  // The daemon's own mark (the reference engine's), sometimes something other than true.
  abandoned: fc.option(fc.constantFrom<unknown>(true, false, 1, 'yes'), { nil: undefined }),
});

/** A snapshot as validation leaves it: unique job ids, each partition's index its place. */
const snapshot = fc
  .record({
    jobs: fc.uniqueArray(fc.constantFrom(...JOBS), { maxLength: JOBS.length }),
    parts: fc.array(fc.array(partition, { minLength: 1, maxLength: 4 }), { minLength: JOBS.length, maxLength: JOBS.length }),
    started: fc.array(fc.integer({ min: 0, max: 20 }), { minLength: JOBS.length, maxLength: JOBS.length }),
    workers: fc.array(
      fc.record({
        proving: fc.boolean(),
        job: fc.constantFrom(...JOBS, 'gone'),
        partition: fc.integer({ min: 0, max: 4 }),
        busy: fc.oneof(fc.constant(null), fc.double({ min: 0, max: 400, noNaN: true })),
      }),
      { maxLength: 6 },
    ),
  })
  .map(({ jobs, parts, started, workers }) => {
    const pipelines = jobs.map((id, k) => ({
      job_id: id,
      proof_kind: k % 2 ? 'porep-c2' : 'snap-update',
      started_secs_ago: started[k],
      total_partitions: parts[k].length,
      partitions_done: 0,
      partitions: parts[k].map((x, index) => {
        const p: Obj = { index, state: x.state, synth_ms: x.synth_ms, gpu_ms: x.gpu_ms };
        if (x.abandoned !== undefined) p.abandoned = x.abandoned;
        return p;
      }),
    }));
    const gpu_workers = workers.map((w, i) =>
      w.proving
        ? { worker_id: i, gpu_ordinal: 0, state: 'proving', current_job: w.job, current_partition: w.partition, busy_secs: w.busy }
        : { worker_id: i, gpu_ordinal: 0, state: 'idle', current_job: null, current_partition: null, busy_secs: null },
    );
    return { uptime_secs: 1000, pipelines, gpu_workers, extra: { kept: true } } as Obj;
  });

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

test('settle = the deep-copy settle it replaced, over sequences of snapshots; unchanged parts are shared', () => {
  fc.assert(
    fc.property(fc.array(snapshot, { minLength: 1, maxLength: 6 }), fc.boolean(), (seq, lowFloors) => {
      const opts = lowFloors ? { minUnownedMs: 1_000, minOwnedMs: 5_000 } : {};
      const ours = new StaleStatus(opts);
      const ref = new ReferenceStale(opts);
      for (const snap of seq) {
        const a = clone(snap);
        const b = clone(snap);
        const got = ours.settle(a as CuzkStatus);
        const want = ref.settle(b);
        expect(clone(got.status)).toEqual(clone(want.status));
        expect(got.fresh).toEqual(want.fresh);
        expect(a).toEqual(b); // the marks left on the daemon's own snapshot
        // Copy on write: a partition or worker settling did not change is the daemon's own.
        const s = got.status as Obj;
        s.pipelines.forEach((p: Obj, i: number) =>
          p.partitions.forEach((x: Obj, j: number) => {
            if (x.state === a.pipelines[i].partitions[j].state) expect(x).toBe(a.pipelines[i].partitions[j]);
          }),
        );
        s.gpu_workers.forEach((w: Obj, i: number) => {
          if (w.state === a.gpu_workers[i].state) expect(w).toBe(a.gpu_workers[i]);
        });
      }
    }),
    { numRuns: 1500, seed: 20261202 },
  );
});

test('a snapshot with nothing to settle is taken as it is (no copy)', () => {
  const snap = {
    uptime_secs: 100,
    pipelines: [{ job_id: 'a', proof_kind: 'snap-update', started_secs_ago: 1, total_partitions: 2, partitions_done: 1, partitions: [{ index: 0, state: 'done', synth_ms: 5, gpu_ms: 700 }, { index: 1, state: 'gpu', synth_ms: 5, gpu_ms: 300 }] }],
    gpu_workers: [{ worker_id: 0, gpu_ordinal: 0, state: 'proving', current_job: 'a', current_partition: 1, busy_secs: 0.3 }],
  } as unknown as CuzkStatus;
  const r = new StaleStatus().settle(snap);
  expect(r.status).toBe(snap);
  expect(r.fresh).toEqual([]);
});
