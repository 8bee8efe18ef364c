/**
 * The upstream renderer's failure, skip, self-check, duplicate, retry and queue-collision
 * paths, from scripted engine events, against upstream cuzk's code (curio e0294b0f, engine.rs):
 *  - GPU failure, `finish` (gpu_prove_finish error, finalizer): no GPU_END; "Clear current job
 *    from worker" (unconditional); process_partition_result: partition_gpu_end FIRST (/status
 *    `done`), then `Ok(Err)`: `if !state.failed { failed = true; record_failure; answer }`;
 *  - siblings: the synthesis dispatcher skips a failed job's pending partitions (no line);
 *    running syntheses complete (SYNTH_END, GPU_QUEUE); the GPU worker picks queued ones up
 *    and skips them after partition_gpu_start and GPU_PICKUP ("skipping GPU prove for failed
 *    partitioned job"); partitions already in gpu_prove_start run to GPU_END, result discarded;
 *  - GPU failure, `start` (gpu_prove_start error): no end line, /status untouched, current_job
 *    cleared, record_failure every time, state.failed untouched (siblings go on);
 *  - synthesis failure: partition_failed only (synth_active not decremented), the same
 *    failed-once accounting; monolithic: record_failure per request;
 *  - PoRep self-check failure at assembly: record_failure + job_completed(false);
 *  - duplicate id: assemblers.insert / register_job replace; ProofAssembler::insert asserts
 *    "partition already inserted" (the finalizer task panics); the first assembly answers
 *    every waiter; retry after a failure: a fresh assembler, normal completion;
 *  - PriorityWorkQueue::push (BTreeMap insert): a second item under key (0,0) replaces the first.
 */
import { OUTCOME_COMPLETED, OUTCOME_FAILED } from '../../src/engine/model/kinds';
import { POREP, SNAP, WINPOST, WPOST, at, rig } from './render-rig';

const PARTS = (r: ReturnType<typeof rig>, t: number, id: string) => r.snapshot(t).pipelines.find((p) => p.job_id === id)?.partitions.map((p) => p.state);

describe('GPU failure, gpu_prove_finish (the default)', () => {
  test('no GPU_END; /status done; siblings: pending skipped silently, cut synthesis completed, queued ones picked up and skipped, on-GPU ones end; the job stays in /status', () => {
    const r = rig({ workers: 2 });
    const { ev } = r;
    const id = 'porep-1000-3';
    r.submit(1, [{ id, kind: POREP }]);
    r.feed(
      ev.queued(1, POREP, 6, 0),
      ev.synth(1, POREP, 0, 1),
      ev.synth(1, POREP, 1, 1),
      ev.synthDone(1, POREP, 0, 5, 4),
      ev.synthDone(1, POREP, 1, 6, 5),
      ev.gpu(1, POREP, 0, 0, 10),
      ev.synth(1, POREP, 2, 10),
      ev.gpu(1, POREP, 1, 1, 11),
      ev.synthDone(1, POREP, 2, 11.5, 1.5),
      ev.release(0, 12),
      ev.gpu(1, POREP, 2, 0, 12.1), // worker 0 takes p2 while p0 waits for its finalizer
      ev.synth(1, POREP, 3, 12.2),
      ev.synth(1, POREP, 4, 12.3),
      ev.synthDone(1, POREP, 4, 12.8, 0.5), // p4 queued: both workers busy
    );
    expect(r.jobs.workers[0]).toMatchObject({ id, partition: 2 });
    // The finalizer of p0 fails; the engine aborts the job (pending p5, queued p4 at once).
    r.feed(ev.failed(1, POREP, 0, 0, 13, 3), ev.abandoned(1, POREP, 4, null, 13), ev.abandoned(1, POREP, 5, null, 13));
    expect(r.jobs.workers[0]).toBeNull(); // cleared unconditionally: the worker runs p2
    expect(r.jobs.totalFailed).toBe(1);
    expect(r.answers).toEqual([expect.objectContaining({ job_id: id, status: 'FAILED', error_message: expect.stringMatching(/^partition 0 GPU prove failed: /) })]);
    expect(r.renderer.pendingSkips).toBe(1); // p4 waits for a free worker
    r.feed(
      ev.abandoned(1, POREP, 3, null, 13.2), // the engine cuts p3's synthesis; upstream finishes it
      ev.release(1, 13.5), // worker 1 free: pops p3 and p4, skips both
      ev.abandoned(1, POREP, 1, 1, 14, 3), // p1 was in gpu_prove_start: it ends
      ev.release(0, 14.5),
      ev.abandoned(1, POREP, 2, 0, 15, 2.9),
      ev.jobDone(1, POREP, OUTCOME_FAILED, 15),
    );
    const after = r.raw().filter((l) => Number(l.split(',')[1]) >= 13);
    expect(after).toEqual([
      `TIMELINE,13,SYNTH_END,${id},partition=3,synth_ms=1`,
      `TIMELINE,13,GPU_QUEUE,${id},partition=3`,
      `TIMELINE,13,GPU_PICKUP,${id},worker=1,partition=3`,
      `TIMELINE,13,GPU_PICKUP,${id},worker=1,partition=4`,
      `TIMELINE,14,GPU_END,${id},worker=1,partition=1,gpu_ms=3`,
      `TIMELINE,15,GPU_END,${id},worker=0,partition=2,gpu_ms=2`,
    ]);
    expect(r.lines().filter((l) => l.includes('partition=0'))).toEqual([
      `SYNTH_START,${id},partition=0`,
      `SYNTH_END,${id},partition=0,synth_ms=4`,
      `GPU_QUEUE,${id},partition=0`,
      `GPU_PICKUP,${id},worker=0,partition=0`,
      `GPU_START,${id},worker=0,partition=0`,
    ]);
    expect(r.lines().some((l) => l.includes('partition=5'))).toBe(false);
    // /status: p0 done (partition_gpu_end first), p3/p4 stuck in gpu, p5 pending; forever.
    expect(PARTS(r, 100_000, id)).toEqual(['done', 'done', 'done', 'gpu', 'gpu', 'pending']);
    const s = r.snapshot(100_000);
    expect(s.pipelines[0].partitions[0].gpu_ms).toBe(3);
    expect(s.pipelines[0].partitions_done).toBe(3);
    expect(s.gpu_workers[1]).toMatchObject({ state: 'proving', current_job: id, current_partition: 4 }); // stale busy
    expect(s.gpu_workers[0]).toMatchObject({ state: 'idle' });
    expect(s.counters).toMatchObject({ total_completed: 0, total_failed: 0 });
    expect(s.synthesis_active).toBe(0);
    expect(r.jobs.totalFailed).toBe(1);
    expect(r.jobs.running()).toBe(0);
    const L = r.ledger;
    expect(L.kinds[POREP]).toMatchObject({ parts_completed: 2, gpu_ns: 5_900_000, gpu_unended_parts: 1, gpu_unended_ns: 3_000_000, synth_parts: 5 });
    expect(L.paths).toMatchObject({ gpu_failures_finish: 1, cut_synth_rendered: 1, skips_after_pickup: 2, skips_at_dispatch: 1, abandoned_gpu_rendered: 2, results_discarded: 2 });
    expect(L.workers.map((w) => [w.skips, w.unended, w.partitions])).toEqual([
      [0, 1, 1],
      [2, 0, 1],
    ]);
    // busy: w0 10 → 15 (p0 then p2, overlapping), w1 11 → 14.
    expect([L.busyAt(0, at(50)), L.busyAt(1, at(50))]).toEqual([5_000_000, 3_000_000]);
  });

  test('a monolithic GPU failure: no GPU_END, record_failure for the request, answered FAILED', () => {
    const r = rig({ workers: 1 });
    const { ev } = r;
    const id = 'winpost-1000-aabbccddeeff0011';
    r.submit(2, [{ id, kind: WINPOST }]);
    r.feed(ev.queued(2, WINPOST, 1, 0), ev.synth(2, WINPOST, 0, 0), ev.synthDone(2, WINPOST, 0, 1, 1), ev.gpu(2, WINPOST, 0, 0, 1), ev.release(0, 2), ev.failed(2, WINPOST, 0, 0, 2, 1), ev.jobDone(2, WINPOST, OUTCOME_FAILED, 2));
    expect(r.lines().map((l) => l.split(',')[0])).toEqual(['SYNTH_START', 'SYNTH_END', 'GPU_QUEUE', 'GPU_PICKUP', 'GPU_START']);
    expect([...r.jobs.failedByKind]).toEqual([[WINPOST, 1]]);
    expect(r.answers[0]).toMatchObject({ job_id: id, status: 'FAILED' });
  });
});

describe('GPU failure at gpu_prove_start (--simulate.gpu-failure start)', () => {
  test('no end line, /status left in gpu, a failure per failed partition, siblings finish, the job never completes', () => {
    const r = rig({ workers: 1, gpuFailure: 'start' });
    const { ev } = r;
    const id = 'snap-1000-4';
    r.submit(1, [{ id, kind: SNAP }]);
    r.feed(ev.queued(1, SNAP, 3, 0));
    for (const p of [0, 1, 2]) r.feed(ev.synth(1, SNAP, p, 0), ev.synthDone(1, SNAP, p, 1, 1));
    r.feed(ev.gpu(1, SNAP, 0, 0, 2), ev.release(0, 3), ev.gpu(1, SNAP, 1, 0, 3.1), ev.failed(1, SNAP, 0, 0, 3.2, 1.2));
    // current_job: already on p1 when the (engine's) failure arrives — upstream cleared it before the next pickup.
    expect(r.jobs.workers[0]).toMatchObject({ id, partition: 1 });
    r.feed(ev.release(0, 4), ev.gpu(1, SNAP, 2, 0, 4.1), ev.failed(1, SNAP, 1, 0, 4.5, 1.4));
    r.feed(ev.release(0, 5), ev.done(1, SNAP, 2, 0, 6, 1.9), ev.jobDone(1, SNAP, OUTCOME_FAILED, 6));
    expect(r.lines().filter((l) => l.startsWith('GPU_END'))).toEqual([`GPU_END,${id},worker=0,partition=2,gpu_ms=1`]);
    expect(r.lines().filter((l) => l.startsWith('GPU_START'))).toHaveLength(3);
    expect(r.jobs.totalFailed).toBe(2); // record_failure every time
    expect(r.jobs.totalCompleted).toBe(0); // the assembler waits for p0, p1 forever
    expect(r.answers.map((a) => a.status)).toEqual(['FAILED']);
    expect(PARTS(r, 90_000, id)).toEqual(['gpu', 'gpu', 'done']);
    expect(r.snapshot(90_000).gpu_workers[0]).toMatchObject({ state: 'idle' }); // p2 was the worker's last pickup, it ended
    expect(r.ledger.paths.gpu_failures_start).toBe(2);
    expect(r.ledger.kinds[SNAP]).toMatchObject({ parts_completed: 1, gpu_unended_parts: 2 });
  });
});

describe('synthesis failure', () => {
  test('partitioned: SYNTH_START only; /status failed, synth_active stays up (leak); failed once; siblings as after a GPU failure', () => {
    const r = rig({ workers: 1 });
    const { ev } = r;
    const id = 'ps-snap-1000-5-1001';
    r.submit(1, [{ id, kind: SNAP }]);
    r.feed(ev.queued(1, SNAP, 3, 0), ev.synth(1, SNAP, 0, 1), ev.synth(1, SNAP, 1, 1), ev.synthDone(1, SNAP, 0, 2, 1), ev.gpu(1, SNAP, 0, 0, 2));
    r.feed(ev.failed(1, SNAP, 1, null, 3), ev.abandoned(1, SNAP, 2, null, 3));
    r.feed(ev.release(0, 3.5), ev.abandoned(1, SNAP, 0, 0, 4, 2), ev.jobDone(1, SNAP, OUTCOME_FAILED, 4));
    expect(r.lines().filter((l) => l.includes('partition=1'))).toEqual([`SYNTH_START,${id},partition=1`]);
    expect(r.lines().filter((l) => l.includes('partition=0')).pop()).toBe(`GPU_END,${id},worker=0,partition=0,gpu_ms=2`);
    expect(PARTS(r, 60_000, id)).toEqual(['done', 'failed', 'pending']);
    const s = r.snapshot(60_000);
    expect(s.synthesis_active).toBe(1);
    expect(s.pipelines[0].partitions[1].synth_ms).toBe(59_999); // growing forever: synth_end never set
    expect(r.jobs.totalFailed).toBe(1);
    expect(r.answers[0]).toMatchObject({ status: 'FAILED', error_message: expect.stringMatching(/^partition 1 synthesis failed: /) });
    expect(r.ledger.paths).toMatchObject({ synth_failures_partitioned: 1, skips_at_dispatch: 1, abandoned_gpu_rendered: 1 });
  });

  test('monolithic: SYNTH_START only, record_failure per request', () => {
    const r = rig({ workers: 1 });
    const { ev } = r;
    const id = 'wdpost-1000-2-[1 1 1 1 1 1 1 1]';
    r.submit(9, [{ id, kind: WPOST, partitionIndex: 2 }]);
    r.feed(ev.queued(9, WPOST, 1, 0), ev.synth(9, WPOST, 0, 1), ev.failed(9, WPOST, 0, null, 5), ev.jobDone(9, WPOST, OUTCOME_FAILED, 5));
    expect(r.lines()).toEqual([`SYNTH_START,${id},kind=window-post`]);
    expect([...r.jobs.failedByKind]).toEqual([[WPOST, 1]]);
    expect(r.answers[0]).toMatchObject({ status: 'FAILED', error_message: expect.stringMatching(/^synthesis failed: /) });
    expect(r.ledger.paths.synth_failures_monolithic).toBe(1);
  });
});

describe('assembly', () => {
  test('PoRep self-check failure: all lines as success; record_failure, job_completed(false), GC after 30 s', () => {
    const r = rig({ workers: 1 });
    const { ev } = r;
    r.badProofs.add(1);
    r.submit(1, [{ id: 'porep-1000-8', kind: POREP, sectorNumber: 8 }]);
    r.feed(ev.queued(1, POREP, 1, 0), ev.synth(1, POREP, 0, 0), ev.synthDone(1, POREP, 0, 1, 1), ev.gpu(1, POREP, 0, 0, 1), ev.done(1, POREP, 0, 0, 3, 2), ev.jobDone(1, POREP, OUTCOME_COMPLETED, 3));
    expect(r.lines().map((l) => l.split(',')[0])).toEqual(['SYNTH_START', 'SYNTH_END', 'GPU_QUEUE', 'GPU_PICKUP', 'GPU_START', 'GPU_END']);
    expect([r.jobs.totalCompleted, r.jobs.totalFailed]).toEqual([0, 1]);
    expect(r.answers[0]).toMatchObject({ status: 'FAILED', error_message: 'PoRep proof self-check failed: assembled proof did not verify (sector=8, miner=1000)' });
    expect(r.snapshot(10).counters).toMatchObject({ total_failed: 1, failed_by_kind: { 'porep-c2': 1 } });
    expect(r.snapshot(3 + 30_000).pipelines).toEqual([]);
    expect(r.ledger.paths.self_check_failures).toBe(1);
  });

  test('duplicate id in flight: JobState and assembler replaced; a partition inserted twice panics; the first assembly answers both; one completion', () => {
    const r = rig({ workers: 2 });
    const { ev } = r;
    const id = 'porep-1000-9';
    r.submit(1, [{ id, kind: POREP }]);
    r.feed(ev.queued(1, POREP, 2, 0), ev.synth(1, POREP, 0, 0), ev.synthDone(1, POREP, 0, 1, 1), ev.gpu(1, POREP, 0, 0, 1), ev.done(1, POREP, 0, 0, 2, 1));
    expect(PARTS(r, 2, id)).toEqual(['done', 'pending']);
    r.submit(2, [{ id, kind: POREP }]);
    r.feed(ev.queued(2, POREP, 2, 3));
    expect(PARTS(r, 3, id)).toEqual(['pending', 'pending']); // register_job replaced it
    r.feed(
      ev.synth(1, POREP, 1, 3),
      ev.synth(2, POREP, 0, 3),
      ev.synth(2, POREP, 1, 3),
      ev.synthDone(1, POREP, 1, 4, 1),
      ev.synthDone(2, POREP, 0, 4, 1),
      ev.synthDone(2, POREP, 1, 4, 1),
      ev.gpu(2, POREP, 1, 0, 4),
      ev.gpu(1, POREP, 1, 1, 4),
      ev.done(2, POREP, 1, 0, 5, 1), // fills p1 of the new assembler
      ev.done(1, POREP, 1, 1, 5.5, 1.5), // p1 again: "partition 1 already inserted" — panic
      ev.jobDone(1, POREP, OUTCOME_COMPLETED, 5.5),
      ev.gpu(2, POREP, 0, 0, 6),
      ev.done(2, POREP, 0, 0, 7, 1), // p0: the assembly completes, both waiters answered
      ev.jobDone(2, POREP, OUTCOME_COMPLETED, 7),
    );
    expect(r.ledger.paths).toMatchObject({ duplicates_in_flight: 1, assembler_panics: 1 });
    expect(r.jobs.totalCompleted).toBe(1);
    expect(r.answers.map((a) => [a.job_id, a.status])).toEqual([
      [id, 'COMPLETED'],
      [id, 'COMPLETED'],
    ]);
    expect(r.snapshot(8).counters.total_completed).toBe(1);
  });

  test('retry after a failure: the same id again gets a fresh assembler and completes; AwaitProof then answers the newest result', () => {
    const r = rig({ workers: 1 });
    const { ev } = r;
    const id = 'snap-1000-10';
    r.submit(1, [{ id, kind: SNAP }]);
    r.feed(ev.queued(1, SNAP, 1, 0), ev.synth(1, SNAP, 0, 0), ev.failed(1, SNAP, 0, null, 1), ev.jobDone(1, SNAP, OUTCOME_FAILED, 1));
    expect(r.jobs.awaitProof(id)).toMatchObject({ status: 'FAILED' });
    r.submit(2, [{ id, kind: SNAP }]);
    r.feed(ev.queued(2, SNAP, 1, 2), ev.synth(2, SNAP, 0, 2), ev.synthDone(2, SNAP, 0, 3, 1), ev.gpu(2, SNAP, 0, 0, 3), ev.done(2, SNAP, 0, 0, 4, 1), ev.jobDone(2, SNAP, OUTCOME_COMPLETED, 4));
    expect(r.answers.map((a) => a.status)).toEqual(['FAILED', 'COMPLETED']);
    expect([r.jobs.totalCompleted, r.jobs.totalFailed]).toEqual([1, 1]);
    expect(r.jobs.awaitProof(id)).toMatchObject({ status: 'COMPLETED' });
    expect(r.ledger.paths.retries).toBe(1);
    expect(PARTS(r, 5, id)).toEqual(['done']);
  });

  test('GPU queue key (0,0): a second monolithic job queued before the first is popped replaces it; the first is lost (no more lines, never answered)', () => {
    const r = rig({ workers: 1 });
    const { ev } = r;
    r.submit(1, [{ id: 'winpost-1000-01', kind: WINPOST }]);
    r.submit(2, [{ id: 'winpost-1000-02', kind: WINPOST }]);
    r.feed(ev.queued(1, WINPOST, 1, 0), ev.queued(2, WINPOST, 1, 0), ev.synth(1, WINPOST, 0, 0), ev.synth(2, WINPOST, 0, 0));
    r.feed(ev.synthDone(1, WINPOST, 0, 1, 1), ev.synthDone(2, WINPOST, 0, 1.5, 1.5)); // worker busy elsewhere: nobody popped 1
    r.feed(ev.gpu(1, WINPOST, 0, 0, 2), ev.done(1, WINPOST, 0, 0, 3, 1), ev.jobDone(1, WINPOST, OUTCOME_COMPLETED, 3));
    r.feed(ev.gpu(2, WINPOST, 0, 0, 3), ev.done(2, WINPOST, 0, 0, 4, 1), ev.jobDone(2, WINPOST, OUTCOME_COMPLETED, 4));
    expect(r.lines().filter((l) => l.includes('winpost-1000-01')).map((l) => l.split(',')[0])).toEqual(['SYNTH_START', 'SYNTH_END', 'GPU_QUEUE']);
    expect(r.lines().filter((l) => l.includes('winpost-1000-02')).map((l) => l.split(',')[0])).toEqual(['SYNTH_START', 'SYNTH_END', 'GPU_QUEUE', 'GPU_PICKUP', 'GPU_START', 'GPU_END']);
    expect(r.answers.map((a) => a.job_id)).toEqual(['winpost-1000-02']);
    expect(r.jobs.totalCompleted).toBe(1);
    expect(r.ledger.paths.gpu_queue_collisions).toBe(1);
    expect(r.ledger.busyAt(0, at(10))).toBe(1_000_000); // the lost job's engine GPU time is not upstream's
  });
});
