/**
 * The upstream renderer's success paths, from scripted engine events, against what upstream
 * cuzk's code (curio e0294b0f, extern/cuzk) writes at each call site:
 *  - engine.rs synthesis worker pool: SYNTH_START `partition=N`; on success
 *    partition_synth_end, SYNTH_END `partition=N,synth_ms=M`, then GPU_QUEUE `partition=N`;
 *  - engine.rs GPU worker: partition_gpu_start, GPU_PICKUP `worker=W,partition=N`, the failed
 *    check, `current_job` set, GPU_START with the same detail BEFORE gpu_prove_start (so at
 *    the pickup, not at the GPU mutex), finalizer: GPU_END from gpu_result.partition_index,
 *    "Clear current job from worker" (unconditional), process_partition_result
 *    (partition_gpu_end first; job_completed + record_completion when assembled);
 *  - process_batch standard path (PoSt): SYNTH_START `kind=window-post`, SYNTH_END
 *    `synth_ms=M`, GPU_QUEUE `monolithic`; pipeline.rs synthesize_window_post sets
 *    partition_index = the request's, so GPU_END carries `partition=<partition_index>`
 *    while GPU_PICKUP/GPU_START carry none; WinningPoSt: none anywhere;
 *  - status.rs: PoSt never registered (not in pipelines, workers never proving for it).
 */
import { OUTCOME_COMPLETED } from '../../src/engine/model/kinds';
import { POREP, SNAP, WINPOST, WPOST, at, rig } from './render-rig';

describe('partitioned success (split prove, the default)', () => {
  test('TIMELINE line sequence, GPU_START at the pickup, none at the lock acquire; gpu_ms = hand-off to end', () => {
    const r = rig({ workers: 2 });
    const { ev } = r;
    r.submit(1, [{ id: 'snap-1000-5', kind: SNAP }]);
    r.feed(
      ev.queued(1, SNAP, 2, 0),
      ev.synth(1, SNAP, 0, 1),
      ev.synth(1, SNAP, 1, 1.2),
      ev.synthDone(1, SNAP, 0, 9.9, 8.9),
      ev.gpu(1, SNAP, 0, 0, 10),
      ev.acquire(0, 12.5), // the GPU mutex: upstream writes nothing here
      ev.synthDone(1, SNAP, 1, 11, 9.8),
      ev.gpu(1, SNAP, 1, 1, 11.5),
      ev.release(0, 15),
      ev.finalizing(1, SNAP, 0, 0, 15),
      ev.acquire(1, 15),
      ev.done(1, SNAP, 0, 0, 17.9, 7.9),
      ev.release(1, 19),
      ev.done(1, SNAP, 1, 1, 21.6, 10.1),
      ev.jobDone(1, SNAP, OUTCOME_COMPLETED, 21.6),
    );
    expect(r.raw()).toEqual([
      'TIMELINE,1,SYNTH_START,snap-1000-5,partition=0',
      'TIMELINE,1,SYNTH_START,snap-1000-5,partition=1',
      'TIMELINE,9,SYNTH_END,snap-1000-5,partition=0,synth_ms=8',
      'TIMELINE,9,GPU_QUEUE,snap-1000-5,partition=0',
      'TIMELINE,10,GPU_PICKUP,snap-1000-5,worker=0,partition=0',
      'TIMELINE,10,GPU_START,snap-1000-5,worker=0,partition=0',
      'TIMELINE,11,SYNTH_END,snap-1000-5,partition=1,synth_ms=9',
      'TIMELINE,11,GPU_QUEUE,snap-1000-5,partition=1',
      'TIMELINE,11,GPU_PICKUP,snap-1000-5,worker=1,partition=1',
      'TIMELINE,11,GPU_START,snap-1000-5,worker=1,partition=1',
      'TIMELINE,17,GPU_END,snap-1000-5,worker=0,partition=0,gpu_ms=7',
      'TIMELINE,21,GPU_END,snap-1000-5,worker=1,partition=1,gpu_ms=10',
    ]);
    // JobTracker: one completion (record_completion with the request's total), answered.
    expect(r.jobs.totalCompleted).toBe(1);
    expect([...r.jobs.completedByKind]).toEqual([[SNAP, 1]]);
    expect(r.answers).toHaveLength(1);
    expect(r.answers[0]).toMatchObject({ job_id: 'snap-1000-5', status: 'COMPLETED', synthesis_ms: 18, gpu_compute_ms: 18, total_ms: 21 });
    // StatusTracker: both done, job_completed (true), GC'd only 30 s after.
    const s = r.snapshot(30);
    expect(s.pipelines).toEqual([
      {
        job_id: 'snap-1000-5',
        proof_kind: 'snap-update',
        started_secs_ago: 0.03,
        total_partitions: 2,
        partitions_done: 2,
        partitions: [
          { index: 0, state: 'done', synth_ms: 8, gpu_ms: 7 },
          { index: 1, state: 'done', synth_ms: 9, gpu_ms: 10 },
        ],
      },
    ]);
    expect(s.counters).toMatchObject({ total_completed: 1, total_failed: 0, completed_by_kind: { 'snap-update': 1 }, failed_by_kind: {} });
    expect(s.synthesis_active).toBe(0);
    expect(s.gpu_workers.every((w) => w.state === 'idle' && w.current_job === null)).toBe(true);
    expect(r.snapshot(21.6 + 29_999).pipelines).toHaveLength(1);
    expect(r.snapshot(21.6 + 30_000).pipelines).toHaveLength(0);
    // Ledger: what pickup→end intervals and SYNTH_ENDs give, in ns.
    expect(r.ledger.kinds[SNAP]).toMatchObject({ parts_completed: 2, gpu_ns: 18_000_000, synth_ns: 18_700_000, synth_parts: 2, gpu_unended_parts: 0 });
    expect(r.ledger.workers.map((w) => w.partitions)).toEqual([1, 1]);
    expect([r.ledger.busyAt(0, at(40)), r.ledger.busyAt(1, at(40))]).toEqual([7_900_000, 10_100_000]);
  });

  test("GetStatus: the finalizer clears current_job unconditionally (the worker already on its next partition reads idle); the owner-only fix keeps it", () => {
    for (const ownerOnly of [false, true]) {
      const r = rig({ workers: 1, clearsOwnerOnly: ownerOnly });
      const { ev } = r;
      r.submit(1, [{ id: 'porep-1000-1', kind: POREP }]);
      r.feed(
        ev.queued(1, POREP, 2, 0),
        ev.synth(1, POREP, 0, 1),
        ev.synth(1, POREP, 1, 1),
        ev.synthDone(1, POREP, 0, 5, 4),
        ev.synthDone(1, POREP, 1, 5, 4),
        ev.gpu(1, POREP, 0, 0, 6),
        ev.release(0, 8),
        ev.gpu(1, POREP, 1, 0, 8.5), // worker 0 on partition 1 while partition 0 finalizes
      );
      expect(r.jobs.workers[0]).toMatchObject({ id: 'porep-1000-1', partition: 1 });
      r.feed(ev.done(1, POREP, 0, 0, 9, 3));
      // status.rs partition_gpu_end: still_mine is false — /status keeps the worker proving.
      expect(r.snapshot(9.5).gpu_workers[0]).toMatchObject({ state: 'proving', current_job: 'porep-1000-1', current_partition: 1 });
      expect(r.jobs.workers[0] === null).toBe(!ownerOnly);
      expect(r.jobs.running()).toBe(ownerOnly ? 1 : 0);
    }
  });

  test('WindowPoSt with partition_index 7: GPU_END carries partition=7, its pickup and start none; /status never sees it', () => {
    const r = rig({ workers: 2 });
    const { ev } = r;
    const id = 'wdpost-1000-7-[1 2 3 4 5 6 7 8]';
    r.submit(3, [{ id, kind: WPOST, partitionIndex: 7 }]);
    r.feed(ev.queued(3, WPOST, 1, 0), ev.synth(3, WPOST, 0, 2), ev.synthDone(3, WPOST, 0, 40, 38), ev.gpu(3, WPOST, 0, 1, 41));
    expect(r.jobs.workers[1]).toMatchObject({ id, kind: WPOST });
    expect(r.snapshot(42).gpu_workers[1]).toMatchObject({ state: 'idle', current_job: null });
    r.feed(ev.acquire(1, 41.5), ev.release(1, 44), ev.finalizing(3, WPOST, 0, 1, 44), ev.done(3, WPOST, 0, 1, 46.2, 5.2), ev.jobDone(3, WPOST, OUTCOME_COMPLETED, 46.2));
    expect(r.lines()).toEqual([
      `SYNTH_START,${id},kind=window-post`,
      `SYNTH_END,${id},synth_ms=38`,
      `GPU_QUEUE,${id},monolithic`,
      `GPU_PICKUP,${id},worker=1`,
      `GPU_START,${id},worker=1`,
      `GPU_END,${id},worker=1,partition=7,gpu_ms=5`,
    ]);
    const s = r.snapshot(47);
    expect(s.pipelines).toEqual([]);
    expect(s.counters.total_completed).toBe(0);
    expect(r.jobs.workers[1]).toBeNull();
    expect([...r.jobs.completedByKind]).toEqual([[WPOST, 1]]);
    expect(r.answers[0]).toMatchObject({ job_id: id, status: 'COMPLETED', synthesis_ms: 38, gpu_compute_ms: 5, total_ms: 46 });
    expect(r.ledger.kinds[WPOST]).toMatchObject({ parts_completed: 1, gpu_ns: 5_200_000 });
  });

  test('WinningPoSt: no partition anywhere; GetMetrics: kinds once counted, in first-counted order, summary of the recent ones', () => {
    const r = rig({ workers: 1 });
    const { ev } = r;
    r.submit(4, [{ id: 'winpost-1000-0102030405060708', kind: WINPOST }]);
    r.submit(5, [{ id: 'wdpost-1000-0-[9 9 9 9 9 9 9 9]', kind: WPOST }]);
    r.feed(
      ev.queued(4, WINPOST, 1, 0),
      ev.queued(5, WPOST, 1, 0),
      ev.synth(4, WINPOST, 0, 0),
      ev.synthDone(4, WINPOST, 0, 1, 1),
      ev.gpu(4, WINPOST, 0, 0, 1),
      ev.synth(5, WPOST, 0, 1),
      ev.done(4, WINPOST, 0, 0, 2.5, 1.5),
      ev.jobDone(4, WINPOST, OUTCOME_COMPLETED, 2.5),
      ev.synthDone(5, WPOST, 0, 3, 2),
      ev.gpu(5, WPOST, 0, 0, 3),
      ev.done(5, WPOST, 0, 0, 4, 1),
      ev.jobDone(5, WPOST, OUTCOME_COMPLETED, 4),
    );
    expect(r.lines().filter((l) => l.startsWith('GPU_'))).toEqual([
      'GPU_QUEUE,winpost-1000-0102030405060708,monolithic',
      'GPU_PICKUP,winpost-1000-0102030405060708,worker=0',
      'GPU_START,winpost-1000-0102030405060708,worker=0',
      'GPU_END,winpost-1000-0102030405060708,worker=0,gpu_ms=1',
      'GPU_QUEUE,wdpost-1000-0-[9 9 9 9 9 9 9 9],monolithic',
      'GPU_PICKUP,wdpost-1000-0-[9 9 9 9 9 9 9 9],worker=0',
      'GPU_START,wdpost-1000-0-[9 9 9 9 9 9 9 9],worker=0',
      'GPU_END,wdpost-1000-0-[9 9 9 9 9 9 9 9],worker=0,partition=0,gpu_ms=1',
    ]);
    expect(r.metrics()).toBe(
      [
        '# HELP cuzk_proofs_completed_total Total proofs completed',
        '# TYPE cuzk_proofs_completed_total counter',
        'cuzk_proofs_completed_total 2',
        '# HELP cuzk_proofs_failed_total Total proofs failed',
        '# TYPE cuzk_proofs_failed_total counter',
        'cuzk_proofs_failed_total 0',
        '# HELP cuzk_uptime_seconds Daemon uptime',
        '# TYPE cuzk_uptime_seconds gauge',
        'cuzk_uptime_seconds 1',
        '# HELP cuzk_queue_depth Current queue depth',
        '# TYPE cuzk_queue_depth gauge',
        'cuzk_queue_depth 0',
        '# HELP cuzk_proofs_completed Per proof-kind completions',
        '# TYPE cuzk_proofs_completed counter',
        'cuzk_proofs_completed{proof_kind="winning_post"} 1',
        'cuzk_proofs_completed{proof_kind="window_post"} 1',
        '# HELP cuzk_proofs_failed Per proof-kind failures',
        '# TYPE cuzk_proofs_failed counter',
        '# HELP cuzk_proof_duration_seconds Proof duration',
        '# TYPE cuzk_proof_duration_seconds summary',
        'cuzk_proof_duration_seconds_count{proof_kind="winning_post"} 1',
        'cuzk_proof_duration_seconds_sum{proof_kind="winning_post"} 0.003',
        'cuzk_proof_duration_seconds_count{proof_kind="window_post"} 1',
        'cuzk_proof_duration_seconds_sum{proof_kind="window_post"} 0.004',
        '# HELP cuzk_running_jobs Currently running proofs',
        '# TYPE cuzk_running_jobs gauge',
        'cuzk_running_jobs 0',
        '# HELP cuzk_gpu_workers Number of GPU workers',
        '# TYPE cuzk_gpu_workers gauge',
        'cuzk_gpu_workers 1',
        '',
      ].join('\n'),
    );
  });

  test('tracing lines (ANSI, tracing_subscriber fmt) go to the same sink; TIMELINE lines stay whole with tear rate 0', () => {
    const r = rig({ workers: 1, tracing: true });
    const { ev } = r;
    r.submit(1, [{ id: 'snap-1000-1', kind: SNAP }]);
    r.feed(ev.queued(1, SNAP, 1, 0), ev.synth(1, SNAP, 0, 1), ev.synthDone(1, SNAP, 0, 2, 1), ev.gpu(1, SNAP, 0, 0, 2), ev.done(1, SNAP, 0, 0, 3, 1), ev.jobDone(1, SNAP, OUTCOME_COMPLETED, 3));
    const raw = r.raw();
    const tracing = raw.filter((l) => !l.startsWith('TIMELINE,'));
    expect(tracing.length).toBeGreaterThan(2);
    for (const l of tracing) expect(l).toMatch(/^\x1b\[2m\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\x1b\[0m \x1b\[3[123]m ?(INFO|WARN|ERROR)\x1b\[0m \x1b\[2mcuzk_core::\w+\x1b\[0m\x1b\[2m:\x1b\[0m /);
    expect(r.lines()).toHaveLength(6);
  });
});
