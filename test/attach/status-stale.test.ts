/**
 * StaleStatus (src/engine/sources/attach/status-stale.ts) on its own: what cuzk's /status
 * never clears (status.rs: a failed partitioned job stays in `pipelines`, a worker that
 * picked up a skipped partition stays `proving`), settled by the four rules of its header,
 * each at and just past its threshold. The expectations follow the rules as written there
 * (docs/upstream-conformance.md), not the code.
 */
import { StaleStatus } from '../../src/engine/sources/attach/status-stale';
import type { CuzkPartition, CuzkPipeline, CuzkStatus, CuzkWorker } from '../../src/engine/sources/status-schema';

function part(index: number, state: string, gpu_ms: number | null = null): CuzkPartition {
  return { index, state, synth_ms: null, gpu_ms };
}
function pipe(job_id: string, started_secs_ago: number, partitions: CuzkPartition[], proof_kind = 'porep-c2'): CuzkPipeline {
  return { job_id, proof_kind, started_secs_ago, total_partitions: partitions.length, partitions_done: 0, partitions };
}
function worker(worker_id: number, current_job: string | null = null, current_partition: number | null = null, busy_secs: number | null = null): CuzkWorker {
  return { worker_id, gpu_ordinal: 0, state: current_job === null ? 'idle' : 'proving', current_job, current_partition, busy_secs };
}
function status(pipelines: CuzkPipeline[], gpu_workers: CuzkWorker[] = []): CuzkStatus {
  return { uptime_secs: 1000, pipelines, gpu_workers };
}
const states = (s: CuzkStatus, job: string) => s.pipelines.find((p) => p.job_id === job)!.partitions.map((x) => x.state + ((x as { abandoned?: boolean }).abandoned ? '*' : ''));

describe('StaleStatus: rule 1, a job with a failed partition', () => {
  test('its pending and synth_done partitions are abandoned; those synthesizing or on the GPU (young) go on; the job is reported once', () => {
    const st = new StaleStatus();
    const snap = status([pipe('a', 30, [part(0, 'failed'), part(1, 'pending'), part(2, 'synth_done'), part(3, 'synthesizing'), part(4, 'gpu', 500), part(5, 'done', 800)], 'snap-update')]);
    const r = st.settle(snap);
    expect(states(r.status, 'a')).toEqual(['failed', 'failed*', 'failed*', 'synthesizing', 'gpu', 'done']);
    expect(r.fresh).toEqual([{ jobId: 'a', kind: 'snap-update' }]);
    // The daemon's own snapshot keeps its states, marked in a new field only.
    expect(snap.pipelines[0].partitions.map((x) => x.state)).toEqual(['failed', 'pending', 'synth_done', 'synthesizing', 'gpu', 'done']);
    expect(snap.pipelines[0].partitions.map((x) => (x as { abandoned?: boolean }).abandoned === true)).toEqual([false, true, true, false, false, false]);
    expect(st.settle(snap).fresh).toEqual([]);
    st.reset();
    expect(st.settle(status([pipe('a', 30, [part(0, 'failed')])])).fresh).toEqual([{ jobId: 'a', kind: 'porep-c2' }]);
  });

  test('a job without a failed partition is left as it is', () => {
    const st = new StaleStatus();
    const r = st.settle(status([pipe('a', 30, [part(0, 'done', 100), part(1, 'pending'), part(2, 'synth_done'), part(3, 'gpu', 50)])]));
    expect(states(r.status, 'a')).toEqual(['done', 'pending', 'synth_done', 'gpu']);
    expect(r.fresh).toEqual([]);
  });
});

describe('StaleStatus: rule 2, a gpu partition no worker owns', () => {
  test('older than 10 s (the floor): abandoned, its job failed; at 10 s exactly it may still be in its tail', () => {
    const st = new StaleStatus();
    let r = st.settle(status([pipe('a', 30, [part(0, 'gpu', 10_000), part(1, 'pending')])]));
    expect(states(r.status, 'a')).toEqual(['gpu', 'pending']);
    expect(r.fresh).toEqual([]);
    r = st.settle(status([pipe('a', 30, [part(0, 'gpu', 10_001), part(1, 'pending')])]));
    expect(states(r.status, 'a')).toEqual(['failed*', 'failed*']);
    expect(r.fresh).toEqual([{ jobId: 'a', kind: 'porep-c2' }]);
  });

  test('the threshold is 3x the longest GPU stage seen done, when that is above the floor', () => {
    const st = new StaleStatus();
    st.settle(status([pipe('x', 30, [part(0, 'done', 5_000)])]));
    let r = st.settle(status([pipe('a', 30, [part(0, 'gpu', 15_000)])]));
    expect(states(r.status, 'a')).toEqual(['gpu']);
    r = st.settle(status([pipe('a', 30, [part(0, 'gpu', 15_001)])]));
    expect(states(r.status, 'a')).toEqual(['failed*']);
    // A partition not done (or without gpu_ms) does not raise it.
    const st2 = new StaleStatus();
    st2.settle(status([pipe('x', 30, [part(0, 'gpu', 5_000), part(1, 'failed', 9_000), part(2, 'done', null)])]));
    expect(states(st2.settle(status([pipe('a', 30, [part(0, 'gpu', 10_001)])])).status, 'a')).toEqual(['failed*']);
  });

  test('owned by a proving worker, the same age is not stale (rule 3 decides)', () => {
    const st = new StaleStatus();
    const r = st.settle(status([pipe('a', 30, [part(0, 'gpu', 30_000)])], [worker(1, 'a', 0, 30)]));
    expect(states(r.status, 'a')).toEqual(['gpu']);
    expect(r.status.gpu_workers[0].state).toBe('proving');
    expect(r.fresh).toEqual([]);
  });

  test('a floor from the options', () => {
    const st = new StaleStatus({ minUnownedMs: 2_000 });
    expect(states(st.settle(status([pipe('a', 30, [part(0, 'gpu', 2_000)])])).status, 'a')).toEqual(['gpu']);
    expect(states(st.settle(status([pipe('a', 30, [part(0, 'gpu', 2_001)])])).status, 'a')).toEqual(['failed*']);
  });
});

describe('StaleStatus: rule 3, a worker proving for too long', () => {
  test('its partition older than 60 s (gpu_ms): shown idle, marked stale, the partition abandoned, the job failed', () => {
    const st = new StaleStatus();
    let snap = status([pipe('a', 100, [part(0, 'gpu', 60_000)])], [worker(1, 'a', 0, 1)]);
    let r = st.settle(snap);
    expect(r.status.gpu_workers[0].state).toBe('proving');
    expect(states(r.status, 'a')).toEqual(['gpu']);
    snap = status([pipe('a', 100, [part(0, 'gpu', 60_001)])], [worker(1, 'a', 0, 1)]);
    r = st.settle(snap);
    expect(r.status.gpu_workers[0]).toMatchObject({ state: 'idle', current_job: null, current_partition: null, busy_secs: null });
    expect(states(r.status, 'a')).toEqual(['failed*']);
    expect(r.fresh).toEqual([{ jobId: 'a', kind: 'porep-c2' }]);
    expect(snap.gpu_workers[0]).toMatchObject({ state: 'proving', current_job: 'a', stale: true });
  });

  test('without a gpu partition listed, busy_secs is its age; 5x the longest GPU stage when above the floor', () => {
    const st = new StaleStatus();
    let r = st.settle(status([], [worker(1, 'gone', 3, 60)]));
    expect(r.status.gpu_workers[0].state).toBe('proving');
    r = st.settle(status([], [worker(1, 'gone', 3, 60.002)]));
    expect(r.status.gpu_workers[0].state).toBe('idle');
    st.settle(status([pipe('x', 30, [part(0, 'done', 20_000)])]));
    r = st.settle(status([], [worker(1, 'gone', 3, 100)]));
    expect(r.status.gpu_workers[0].state).toBe('proving');
    r = st.settle(status([], [worker(1, 'gone', 3, 100.002)]));
    expect(r.status.gpu_workers[0].state).toBe('idle');
    // A worker with no busy_secs and nothing listed is not stale.
    expect(st.settle(status([], [worker(1, 'gone', 3, null)])).status.gpu_workers[0].state).toBe('proving');
  });

  test('a worker proving a partition abandoned by rule 1 is shown idle, however young', () => {
    const st = new StaleStatus();
    const r = st.settle(status([pipe('a', 30, [part(0, 'failed'), part(1, 'synth_done')])], [worker(2, 'a', 1, 0.1), worker(3)]));
    expect(states(r.status, 'a')).toEqual(['failed', 'failed*']);
    expect(r.status.gpu_workers[0].state).toBe('idle');
    expect(r.status.gpu_workers[1].state).toBe('idle');
  });

  test('a young worker on a live partition stays proving; a worker of another job is not touched', () => {
    const st = new StaleStatus();
    const r = st.settle(status([pipe('a', 30, [part(0, 'failed'), part(1, 'gpu', 100)]), pipe('b', 30, [part(0, 'gpu', 100)])], [worker(1, 'a', 1, 0.1), worker(2, 'b', 0, 0.1)]));
    expect(r.status.gpu_workers.map((w) => w.state)).toEqual(['proving', 'proving']);
    expect(states(r.status, 'b')).toEqual(['gpu']);
  });

  test('a floor from the options', () => {
    const st = new StaleStatus({ minOwnedMs: 5_000 });
    expect(st.settle(status([pipe('a', 30, [part(0, 'gpu', 5_000)])], [worker(1, 'a', 0, 5)])).status.gpu_workers[0].state).toBe('proving');
    expect(st.settle(status([pipe('a', 30, [part(0, 'gpu', 5_001)])], [worker(1, 'a', 0, 5)])).status.gpu_workers[0].state).toBe('idle');
  });

  test('an owned threshold below the unowned one (options): the owned partition past it abandoned and its job failed, an unowned one of the same age not', () => {
    // minOwnedMs 5 s, unowned floor the default 10 s: rule 3 applies at 5 s, rule 2 only at 10 s.
    let r = new StaleStatus({ minOwnedMs: 5_000 }).settle(status([pipe('a', 30, [part(0, 'gpu', 5_001)]), pipe('b', 30, [part(0, 'gpu', 5_001)])], [worker(1, 'a', 0, 5)]));
    expect(states(r.status, 'a')).toEqual(['failed*']);
    expect(states(r.status, 'b')).toEqual(['gpu']);
    expect(r.fresh).toEqual([{ jobId: 'a', kind: 'porep-c2' }]);
    r = new StaleStatus({ minOwnedMs: 5_000 }).settle(status([pipe('a', 30, [part(0, 'gpu', 5_000)])], [worker(1, 'a', 0, 5)]));
    expect(states(r.status, 'a')).toEqual(['gpu']);
    expect(r.fresh).toEqual([]);
  });
});

describe('StaleStatus: rule 4, pending partitions skipped at dispatch', () => {
  test('pending left in a job while one registered 2 s or more later has progressed: abandoned', () => {
    const st = new StaleStatus();
    // `old` registered 10 s ago, `young` 8 s ago (2 s later) and already synthesizing.
    let r = st.settle(status([pipe('old', 10, [part(0, 'synthesizing'), part(1, 'pending')]), pipe('young', 8, [part(0, 'synthesizing'), part(1, 'pending')])]));
    expect(states(r.status, 'old')).toEqual(['synthesizing', 'failed*']);
    expect(states(r.status, 'young')).toEqual(['synthesizing', 'pending']);
    expect(r.fresh).toEqual([{ jobId: 'old', kind: 'porep-c2' }]);
    // Less than 2 s apart: not yet (the dispatcher may simply not have reached it).
    r = new StaleStatus().settle(status([pipe('old', 9.9, [part(0, 'pending')]), pipe('young', 8, [part(0, 'gpu', 10)])]));
    expect(states(r.status, 'old')).toEqual(['pending']);
    expect(r.fresh).toEqual([]);
    // The younger job only pending too: nothing is known.
    r = new StaleStatus().settle(status([pipe('old', 30, [part(0, 'pending')]), pipe('young', 8, [part(0, 'pending')])]));
    expect(r.fresh).toEqual([]);
  });

  test('the youngest job that progressed counts, whatever the order listed', () => {
    const st = new StaleStatus();
    const r = st.settle(
      status([pipe('mid', 20, [part(0, 'pending')]), pipe('newest', 5, [part(0, 'done', 10)]), pipe('oldest', 40, [part(0, 'gpu', 10), part(1, 'pending')]), pipe('new', 6, [part(0, 'pending')])]),
    );
    expect(states(r.status, 'mid')).toEqual(['failed*']);
    expect(states(r.status, 'oldest')).toEqual(['gpu', 'failed*']);
    expect(states(r.status, 'new')).toEqual(['pending']); // 1 s older than `newest`
    expect(r.fresh.map((f) => f.jobId).sort()).toEqual(['mid', 'oldest']);
  });
});

test('StaleStatus remembers at most 10,000 failed jobs, forgetting the oldest first', () => {
  const st = new StaleStatus();
  for (let i = 0; i < 10_000; i++) st.settle(status([pipe(`j${i}`, 30, [part(0, 'failed')])]));
  // j0 is remembered: not reported again.
  expect(st.settle(status([pipe('j0', 30, [part(0, 'failed')])])).fresh).toEqual([]);
  // One more: j0 (the oldest) is forgotten, j1 still remembered.
  expect(st.settle(status([pipe('new', 30, [part(0, 'failed')])])).fresh.length).toBe(1);
  expect(st.settle(status([pipe('j1', 30, [part(0, 'failed')])])).fresh).toEqual([]);
  expect(st.settle(status([pipe('j0', 30, [part(0, 'failed')])])).fresh.length).toBe(1);
});

describe('StaleStatus: edges the Stryker run found untested', () => {
  test('only a worker shown idle by us is marked stale in the daemon snapshot', () => {
    const st = new StaleStatus();
    const snap = status([pipe('a', 100, [part(0, 'gpu', 60_001), part(1, 'gpu', 100)])], [worker(1, 'a', 0, 1), worker(2, 'a', 1, 0.1), worker(3)]);
    st.settle(snap);
    expect(snap.gpu_workers.map((w) => (w as { stale?: boolean }).stale === true)).toEqual([true, false, false]);
  });

  test('a worker not proving owns nothing, whatever job it names', () => {
    const st = new StaleStatus();
    const idleNaming = { ...worker(1, 'a', 0, null), state: 'idle' };
    const r = st.settle(status([pipe('a', 30, [part(0, 'gpu', 30_000)])], [idleNaming]));
    expect(states(r.status, 'a')).toEqual(['failed*']); // unowned and past 10 s
  });

  test('the youngest progressed job is the reference, not the last one looked at', () => {
    // newest (5 s) and mid (20 s) progressed; old (21 s) still has pending: 5 + 2 <= 21.
    const r = new StaleStatus().settle(status([pipe('newest', 5, [part(0, 'gpu', 10)]), pipe('mid', 20, [part(0, 'gpu', 10)]), pipe('old', 21, [part(0, 'pending')])]));
    expect(states(r.status, 'old')).toEqual(['failed*']);
  });

  test('in a failed job, a partition done or owned is not abandoned, one on the GPU exactly at its threshold neither', () => {
    const st = new StaleStatus();
    const r = st.settle(
      status([pipe('a', 100, [part(0, 'failed'), part(1, 'done', 70_000), part(2, 'gpu', 30_000), part(3, 'gpu', 210_000), part(4, 'gpu', 210_001)])], [worker(1, 'a', 2, 30)]),
    );
    // The done partition's 70 s raises the unowned threshold to 210 s.
    expect(states(r.status, 'a')).toEqual(['failed', 'done', 'gpu', 'gpu', 'failed*']);
    expect(r.status.gpu_workers[0].state).toBe('proving');
    // With the 10 s floor: owned at 30 s is young (60 s for owned ones), unowned at 30 s abandoned.
    const r2 = new StaleStatus().settle(status([pipe('b', 100, [part(0, 'failed'), part(1, 'gpu', 30_000), part(2, 'gpu', 30_000)])], [worker(1, 'b', 1, 30)]));
    expect(states(r2.status, 'b')).toEqual(['failed', 'gpu', 'failed*']);
  });

  test('a worker whose busy_secs spans its whole stint (the reference engine) is aged by its partition on the GPU', () => {
    const r = new StaleStatus().settle(status([pipe('a', 100, [part(0, 'gpu', 100)])], [worker(1, 'a', 0, 100)]));
    expect(r.status.gpu_workers[0].state).toBe('proving');
  });

  test("a worker proving a partition not on the GPU: its age is busy_secs", () => {
    const st = new StaleStatus();
    const r = st.settle(status([pipe('a', 100, [part(0, 'synthesizing', 100)])], [worker(1, 'a', 0, 61)]));
    expect(r.status.gpu_workers[0].state).toBe('idle');
  });
});

describe('StaleStatus: a partition abandoned while synth_done, shown on the GPU later', () => {
  // Snapshot 1: job a (registered at uptime 970) failed at partition 1; partition 0 synth_done: abandoned.
  const first = () => status([pipe('a', 30, [part(0, 'synth_done'), part(1, 'failed')])]);
  const later = (s: CuzkStatus, uptime: number) => ({ ...s, uptime_secs: uptime });

  test('the same registration: the skip after pickup (engine.rs GPU worker: partition_gpu_start, then the "already failed" return), abandoned still', () => {
    const st = new StaleStatus();
    expect(states(st.settle(first()).status, 'a')).toEqual(['failed*', 'failed']);
    const r = st.settle(later(status([pipe('a', 35, [part(0, 'gpu', 100), part(1, 'failed')])], [worker(0, 'a', 0, 0.1)]), 1005));
    expect(states(r.status, 'a')).toEqual(['failed*', 'failed']);
    expect(r.status.gpu_workers[0].state).toBe('idle');
  });

  test.each([
    ['the failed partition moved (a new JobState: register_job)', status([pipe('a', 1, [part(0, 'gpu', 100), part(1, 'synthesizing')])]), 1000],
    ['another partition count', status([pipe('a', 31, [part(0, 'gpu', 100)])]), 1001],
    ['started 2 s or more later, the failed partition failed again already', status([pipe('a', 3, [part(0, 'gpu', 100), part(1, 'failed')])]), 1005],
  ])('the id registered again (a retry re-uses it): %s: its partition on the GPU is live', (_why, snap, uptime) => {
    const st = new StaleStatus();
    st.settle(first());
    const r = st.settle(later(snap, uptime));
    expect(states(r.status, 'a')[0]).toBe('gpu');
  });
});
