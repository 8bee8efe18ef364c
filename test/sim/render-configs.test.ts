/**
 * The upstream renderer under upstream's configurations (curio e0294b0f):
 *  - CUZK_DISABLE_SPLIT_PROVE=1 (engine.rs GPU worker, synchronous path): GPU_PICKUP only
 *    (no GPU_START/GPU_END), current_job cleared after gpu_prove, process_partition_result
 *    as usual; the worker is free only after its partition ends;
 *  - pipeline.enabled = false ("Phase 1: Monolithic workers"): no TIMELINE at all, /status
 *    never moves, a worker's current_job is its whole job, record_completion per job;
 *  - scheduler.max_batch_size > 1 (process_batch standard path): one monolithic job whose
 *    lines carry the first request's id; process_monolithic_result counts and answers every
 *    request; a SnapDeals batch fails every request at split_batched_proofs;
 *  - eprintln!'s pieces torn by a tracing line (timeline-writer.ts).
 */
import { OUTCOME_COMPLETED } from '../../src/engine/model/kinds';
import { TimelineWriter } from '../../src/sim/timeline-writer';
import { POREP, SNAP, START, WINPOST, at, rig } from './render-rig';

test('split prove off: pickup only, worker free at its partition end; skips then go to it', () => {
  const r = rig({ workers: 1, splitProve: false });
  const { ev } = r;
  const id = 'porep-1000-11';
  r.submit(1, [{ id, kind: POREP }]);
  r.feed(ev.queued(1, POREP, 3, 0));
  for (const p of [0, 1, 2]) r.feed(ev.synth(1, POREP, p, 0), ev.synthDone(1, POREP, p, 1, 1));
  r.feed(ev.gpu(1, POREP, 0, 0, 2), ev.release(0, 3));
  expect(r.jobs.workers[0]).toMatchObject({ id, partition: 0 });
  r.feed(ev.done(1, POREP, 0, 0, 4, 2));
  expect(r.jobs.workers[0]).toBeNull();
  r.feed(ev.gpu(1, POREP, 1, 0, 4.1), ev.release(0, 5), ev.failed(1, POREP, 1, 0, 5.5, 1.4), ev.abandoned(1, POREP, 2, null, 5.5));
  // The failure ends worker 0's partition: free, it picks up p2 and skips it, at once.
  expect(r.raw()).toEqual([
    `TIMELINE,0,SYNTH_START,${id},partition=0`,
    `TIMELINE,1,SYNTH_END,${id},partition=0,synth_ms=1`,
    `TIMELINE,1,GPU_QUEUE,${id},partition=0`,
    `TIMELINE,0,SYNTH_START,${id},partition=1`,
    `TIMELINE,1,SYNTH_END,${id},partition=1,synth_ms=1`,
    `TIMELINE,1,GPU_QUEUE,${id},partition=1`,
    `TIMELINE,0,SYNTH_START,${id},partition=2`,
    `TIMELINE,1,SYNTH_END,${id},partition=2,synth_ms=1`,
    `TIMELINE,1,GPU_QUEUE,${id},partition=2`,
    `TIMELINE,2,GPU_PICKUP,${id},worker=0,partition=0`,
    `TIMELINE,4,GPU_PICKUP,${id},worker=0,partition=1`,
    `TIMELINE,5,GPU_PICKUP,${id},worker=0,partition=2`,
  ]);
  expect(r.snapshot(6).pipelines[0].partitions.map((p) => p.state)).toEqual(['done', 'done', 'gpu']);
  expect(r.jobs.totalFailed).toBe(1);
  expect(r.ledger.kinds[POREP]).toMatchObject({ parts_completed: 1, gpu_unended_parts: 1 });
});

test('pipeline off: no lines, /status still, current_job for the whole job (extra jobs wait for a worker), a completion per job', () => {
  const r = rig({ workers: 1, pipeline: false });
  const { ev } = r;
  r.submit(1, [{ id: 'snap-1000-12', kind: SNAP }]);
  r.submit(2, [{ id: 'winpost-1000-ab', kind: WINPOST }]);
  r.feed(ev.queued(1, SNAP, 1, 0), ev.queued(2, WINPOST, 1, 0), ev.started(1, SNAP, 1), ev.synth(1, SNAP, 0, 1), ev.started(2, WINPOST, 1.5));
  expect(r.jobs.workers[0]).toMatchObject({ id: 'snap-1000-12' });
  r.feed(ev.synthDone(1, SNAP, 0, 3, 2), ev.gpu(1, SNAP, 0, 0, 3), ev.done(1, SNAP, 0, 0, 5, 2), ev.jobDone(1, SNAP, OUTCOME_COMPLETED, 5));
  expect(r.jobs.workers[0]).toMatchObject({ id: 'winpost-1000-ab' });
  r.feed(ev.jobDone(2, WINPOST, OUTCOME_COMPLETED, 7));
  expect(r.text()).toBe('');
  const s = r.snapshot(8);
  expect(s.pipelines).toEqual([]);
  expect(s.gpu_workers).toEqual([{ worker_id: 0, gpu_ordinal: 0, state: 'idle', current_job: null, current_partition: null, busy_secs: null }]);
  expect([...r.jobs.completedByKind]).toEqual([
    [SNAP, 1],
    [WINPOST, 1],
  ]);
  expect(r.answers.map((a) => [a.job_id, a.synthesis_ms, a.gpu_compute_ms])).toEqual([
    ['snap-1000-12', 2, 2],
    ['winpost-1000-ab', 0, 0],
  ]);
  expect(r.ledger.busyAt(0, at(9))).toBe(6_000_000); // 1 → 7, one stretch
  expect(r.ledger.workers[0].partitions).toBe(2);
});

test('batched PoRep: one monolithic job, the first id on every line, a completion and an answer per request', () => {
  const r = rig({ workers: 1 });
  const { ev } = r;
  const ids = ['porep-1000-20', 'porep-1000-21', 'ps-porep-1000-22-7'];
  r.submit(1, ids.map((id) => ({ id, kind: POREP })), true);
  r.feed(ev.queued(1, POREP, 1, 0), ev.synth(1, POREP, 0, 0), ev.synthDone(1, POREP, 0, 2, 2), ev.gpu(1, POREP, 0, 0, 2), ev.done(1, POREP, 0, 0, 4, 2), ev.jobDone(1, POREP, OUTCOME_COMPLETED, 4));
  expect(r.lines()).toEqual([
    `SYNTH_START,${ids[0]},kind=porep-c2`,
    `SYNTH_END,${ids[0]},synth_ms=2`,
    `GPU_QUEUE,${ids[0]},monolithic`,
    `GPU_PICKUP,${ids[0]},worker=0`,
    `GPU_START,${ids[0]},worker=0`,
    `GPU_END,${ids[0]},worker=0,gpu_ms=2`,
  ]);
  expect([...r.jobs.completedByKind]).toEqual([[POREP, 3]]);
  expect(r.answers.map((a) => [a.job_id, a.status])).toEqual(ids.map((id) => [id, 'COMPLETED']));
  expect(r.snapshot(5).pipelines).toEqual([]);
  expect(r.ledger.paths).toMatchObject({ batches: 1, batch_requests: 3 });
  expect(r.ledger.kinds[POREP]).toMatchObject({ parts_completed: 1, proofs_completed: 0 });
});

test('batched SnapDeals: full success lines, then every request fails at the split', () => {
  const r = rig({ workers: 1 });
  const { ev } = r;
  r.submit(1, [
    { id: 'snap-1000-30', kind: SNAP },
    { id: 'snap-1000-31', kind: SNAP },
  ]);
  r.feed(ev.queued(1, SNAP, 1, 0), ev.synth(1, SNAP, 0, 0), ev.synthDone(1, SNAP, 0, 1, 1), ev.gpu(1, SNAP, 0, 0, 1), ev.done(1, SNAP, 0, 0, 2, 1), ev.jobDone(1, SNAP, OUTCOME_COMPLETED, 2));
  expect(r.lines().map((l) => l.split(',')[0])).toEqual(['SYNTH_START', 'SYNTH_END', 'GPU_QUEUE', 'GPU_PICKUP', 'GPU_START', 'GPU_END']);
  expect([r.jobs.totalCompleted, r.jobs.totalFailed]).toEqual([0, 2]);
  expect(r.answers.map((a) => a.error_message)).toEqual([expect.stringMatching(/^proof split failed: proof bytes length mismatch/), expect.stringMatching(/^proof split failed/)]);
});

test('torn lines: a whole tracing line inside a TIMELINE line at a piece boundary; removing it gives the line back', () => {
  let text = '';
  const w = new TimelineWriter({ describe: 'memory', write: (t) => (text += t), close: () => {} }, START, { tracing: true, tearRate: 1, seed: 7, wallAtStartMs: Date.UTC(2026, 0, 1) });
  const want: string[] = [];
  for (let i = 0; i < 40; i++) {
    w.gpuEnd(at(i * 10), `wdpost-1000-${i}-[1 2 3 4 5 6 7 8]`, i % 2, i, 1_500_000);
    want.push(`TIMELINE,${i * 10},GPU_END,wdpost-1000-${i}-[1 2 3 4 5 6 7 8],worker=${i % 2},partition=${i},gpu_ms=1`);
  }
  w.flush();
  expect(w.tornLines).toBe(40);
  expect(text.split('\n').length - 1).toBe(80); // each torn line is now two journal lines (one may be empty)
  const lines = text.split('\n').filter((l) => l !== '');
  const repaired = text.replace(/\x1b\[2m2026-[^\n]*\n/g, '').split('\n').filter((l) => l !== '');
  expect(repaired).toEqual(want);
  // Boundaries vary (the 8 inner ones of TIMELINE,|off|,|event|,|id|,|detail|\n).
  const firstParts = new Set(lines.filter((l) => l.startsWith('TIMELINE')).map((l) => l.split('\x1b')[0].split(',').length));
  expect(firstParts.size).toBeGreaterThan(2);
});
