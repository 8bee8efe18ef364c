/**
 * The /status document an attach exporter serves when TIMELINE drives the workers
 * (src/engine/sources/attach/merged-status.ts, DESIGN §6 shape): built from lines whose
 * offsets the test sets (timeline-driver.ts), every field worked out from those offsets.
 */
import { MAX_JOBS_LISTED, MAX_PARTITIONS_LISTED, mergedStatusBody } from '../../src/engine/sources/attach/merged-status';
import { TimelineDriver, tl } from './timeline-driver';

type Body = { uptime_secs: number; pipelines: Record<string, unknown>[]; gpu_workers: Record<string, unknown>[] };

function body(d: TimelineDriver, atMs: number): Body {
  d.view();
  return mergedStatusBody(d.src, d.epochHr + atMs * 1e6) as unknown as Body;
}

/** A partitioned job S (two partitions: one done on worker 0, one synthesizing) and a WindowPoSt W on worker 1. */
function box(): TimelineDriver {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'SYNTH_START', 'S', 'partition=0'), tl(1000, 'SYNTH_START', 'S', 'partition=1'));
  d.at(1100);
  d.write(tl(1100, 'SYNTH_END', 'S', 'partition=0,synth_ms=100'), tl(1100, 'GPU_QUEUE', 'S', 'partition=0'), tl(1100, 'GPU_PICKUP', 'S', 'worker=0,partition=0'), tl(1100, 'GPU_START', 'S', 'worker=0,partition=0'));
  d.at(1400);
  d.write(tl(1400, 'GPU_END', 'S', 'worker=0,partition=0,gpu_ms=300'));
  d.at(2000);
  d.write(tl(2000, 'SYNTH_START', 'W', 'kind=window-post'));
  d.at(2500);
  d.write(tl(2500, 'SYNTH_END', 'W', 'synth_ms=500'), tl(2500, 'GPU_QUEUE', 'W', 'monolithic'));
  d.at(2510);
  d.write(tl(2510, 'GPU_PICKUP', 'W', 'worker=1'), tl(2510, 'GPU_START', 'W', 'worker=1'));
  d.at(3000);
  return d;
}

describe('merged /status from TIMELINE', () => {
  test('jobs: kind, partitions as the lines show them, totals known or estimated, newest first', () => {
    const b = body(box(), 3000);
    expect(b.uptime_secs).toBe(2.51); // the last line's offset
    expect(b.pipelines).toEqual([
      {
        job_id: 'W',
        proof_kind: 'window-post',
        started_secs_ago: 0.51,
        total_partitions: 1,
        partitions_done: 0,
        partitions: [{ index: 0, state: 'gpu', synth_ms: 500, gpu_ms: null, worker_id: 1 }],
        kind_evidence: 'timeline',
      },
      {
        job_id: 'S',
        proof_kind: 'unknown',
        started_secs_ago: 1.51,
        total_partitions: 2,
        total_partitions_estimated: true,
        partitions_done: 1,
        partitions: [
          { index: 0, state: 'done', synth_ms: 100, gpu_ms: 300, worker_id: 0 },
          { index: 1, state: 'synthesizing', synth_ms: null, gpu_ms: null },
        ],
      },
    ]);
  });

  test('workers: idle with their busy total; proving with job, partition, kind and times since the pickup', () => {
    const b = body(box(), 3000);
    expect(b.gpu_workers[0]).toEqual({ worker_id: 0, gpu_ordinal: -1, state: 'idle', current_job: null, current_partition: null, busy_secs: null, stint_secs: null, busy_total_secs: 0.3, current_kind: null });
    const w1 = b.gpu_workers[1];
    expect(w1).toMatchObject({ worker_id: 1, gpu_ordinal: -1, state: 'proving', current_job: 'W', current_partition: 0, current_kind: 'window-post' });
    // Picked up at offset 2510, now 3000: 0.49 s less the read lateness the clock allows for.
    expect(w1.busy_secs as number).toBeGreaterThan(0.47);
    expect(w1.busy_secs as number).toBeLessThanOrEqual(0.49);
    expect(w1.stint_secs).toBe(w1.busy_secs);
    // The counter is exposed up to the clock's lag behind: never more than the stint so far.
    expect(w1.busy_total_secs as number).toBeGreaterThan(0);
    expect(w1.busy_total_secs as number).toBeLessThanOrEqual(w1.busy_secs as number);
  });

  test('a running job is listed before newer ones that have ended; busy_secs runs from the latest pickup', () => {
    const d = box();
    d.at(3200);
    d.write(tl(3200, 'GPU_END', 'W', 'worker=1,gpu_ms=690'));
    d.at(3300);
    d.write(tl(3300, 'SYNTH_END', 'S', 'partition=1,synth_ms=2300'), tl(3300, 'GPU_PICKUP', 'S', 'worker=1,partition=1'), tl(3300, 'GPU_START', 'S', 'worker=1,partition=1'));
    d.at(3400);
    d.write(tl(3400, 'SYNTH_START', 'N', 'partition=0'), tl(3400, 'SYNTH_END', 'N', 'partition=0,synth_ms=0'), tl(3400, 'GPU_PICKUP', 'N', 'worker=0,partition=0'), tl(3400, 'GPU_START', 'N', 'worker=0,partition=0'));
    d.at(3450);
    d.write(tl(3450, 'GPU_END', 'N', 'worker=0,partition=0,gpu_ms=50'));
    d.at(4000);
    const b = body(d, 4000);
    expect(b.pipelines.map((p) => p.job_id)).toEqual(['S', 'N', 'W']); // S running; then N (newest), W
    expect(b.pipelines[2]).toMatchObject({ partitions_done: 1, partitions: [{ index: 0, state: 'done', synth_ms: 500, gpu_ms: 690, worker_id: 1 }] });
    expect(b.pipelines[0]).toMatchObject({ partitions_done: 1, partitions: [{ index: 0, state: 'done' }, { index: 1, state: 'gpu', synth_ms: 2300, gpu_ms: null, worker_id: 1 }] });
    const w1 = b.gpu_workers[1];
    // The kind its partition counts under while S's is unknown (the job itself says "unknown").
    expect(w1).toMatchObject({ state: 'proving', current_job: 'S', current_partition: 1, current_kind: 'other' });
    // The pickup at 3300: busy_secs from there; the worker was idle 3200-3300, so its stint too.
    expect(w1.busy_secs as number).toBeCloseTo(0.7, 1);
    expect(b.gpu_workers[0]).toMatchObject({ state: 'idle', busy_total_secs: 0.35 });
  });

  test(`a job lists at most ${MAX_PARTITIONS_LISTED} partitions; an unknown total is the highest index seen + 1, marked estimated`, () => {
    const d = new TimelineDriver();
    d.at(1000);
    const lines = [];
    for (let p = 0; p < 70; p++) lines.push(tl(1000, 'SYNTH_START', 'BIG', `partition=${p}`));
    lines.push(tl(1000, 'SYNTH_START', 'GAP', 'partition=5'), tl(1000, 'SYNTH_START', 'GAP', 'partition=2'));
    d.write(...lines);
    const b = body(d, 1000);
    const big = b.pipelines.find((p) => p.job_id === 'BIG')!;
    expect(big.total_partitions).toBe(70);
    expect(big.total_partitions_estimated).toBe(true);
    expect((big.partitions as { index: number }[]).map((x) => x.index)).toEqual(Array.from({ length: MAX_PARTITIONS_LISTED }, (_, i) => i));
    // Only the partitions seen are listed when the total is a guess.
    const gap = b.pipelines.find((p) => p.job_id === 'GAP')!;
    expect(gap.total_partitions).toBe(6);
    expect((gap.partitions as { index: number; state: string }[]).map((x) => `${x.index}:${x.state}`)).toEqual(['2:synthesizing', '5:synthesizing']);
  });

  test(`at most ${MAX_JOBS_LISTED} jobs, running ones first, then the newest`, () => {
    const d = new TimelineDriver();
    d.at(1000);
    const lines = [];
    // 10 old jobs still synthesizing, then 600 newer ones that ended.
    for (let j = 0; j < 10; j++) lines.push(tl(1000, 'SYNTH_START', `live${j}`, 'partition=0'));
    d.write(...lines);
    for (let j = 0; j < 600; j++) {
      const t = 1001 + j;
      d.at(t);
      d.write(tl(t, 'SYNTH_START', `done${j}`, 'partition=0'), tl(t, 'SYNTH_END', `done${j}`, 'partition=0,synth_ms=0'), tl(t, 'GPU_PICKUP', `done${j}`, 'worker=0,partition=0'), tl(t, 'GPU_START', `done${j}`, 'worker=0,partition=0'), tl(t, 'GPU_END', `done${j}`, 'worker=0,partition=0,gpu_ms=0'));
    }
    const b = body(d, 1600);
    expect(b.pipelines.length).toBe(MAX_JOBS_LISTED);
    const ids = b.pipelines.map((p) => p.job_id as string);
    expect(ids.slice(0, 10).sort()).toEqual(Array.from({ length: 10 }, (_, j) => `live${j}`).sort());
    expect(ids[10]).toBe('done599');
    expect(ids[MAX_JOBS_LISTED - 1]).toBe(`done${600 - (MAX_JOBS_LISTED - 10)}`);
  });
  test('a job of a known kind lists every partition of the kind, unseen ones pending; a monolithic job has one; a skipped partition shows failed', () => {
    const d = new TimelineDriver();
    d.at(1000);
    const lines = [tl(1000, 'SYNTH_START', 'porep-1-2', 'partition=0'), tl(1000, 'SYNTH_START', 'porep-1-2', 'partition=2')];
    for (let p = 0; p < 10; p++) lines.push(tl(1000, 'SYNTH_START', 'porep-1-3', `partition=${p}`));
    lines.push(tl(1000, 'GPU_PICKUP', 'M', 'worker=2'));
    lines.push(tl(1000, 'SYNTH_START', 'snap-1-1', 'partition=4'), tl(1000, 'SYNTH_START', 'snap-1-1', 'partition=5'), tl(1000, 'SYNTH_START', 'snap-1-1', 'partition=6'));
    d.write(...lines);
    d.at(1100);
    d.write(tl(1100, 'SYNTH_END', 'snap-1-1', 'partition=4,synth_ms=100'), tl(1100, 'SYNTH_END', 'snap-1-1', 'partition=5,synth_ms=100'), tl(1100, 'SYNTH_END', 'snap-1-1', 'partition=6,synth_ms=100'));
    // Worker 3 picks up partition 4 and, with no GPU_START, partition 5: 4 was a skip.
    d.write(tl(1100, 'GPU_PICKUP', 'snap-1-1', 'worker=3,partition=4'));
    d.at(1110);
    d.write(tl(1110, 'GPU_PICKUP', 'snap-1-1', 'worker=3,partition=5'), tl(1110, 'GPU_START', 'snap-1-1', 'worker=3,partition=5'));
    // ... and, 5 still without its GPU_END, partition 6: 5 is in its split-proving tail.
    d.at(1120);
    d.write(tl(1120, 'GPU_PICKUP', 'snap-1-1', 'worker=3,partition=6'), tl(1120, 'GPU_START', 'snap-1-1', 'worker=3,partition=6'));
    const b = body(d, 1200);
    const job = (id: string) => b.pipelines.find((p) => p.job_id === id)!;
    const states = (id: string) => (job(id).partitions as { index: number; state: string }[]).map((x) => `${x.index}:${x.state}`);
    expect(job('porep-1-2')).toMatchObject({ proof_kind: 'porep-c2', total_partitions: 10, kind_evidence: 'request_id' });
    expect(job('porep-1-2')).not.toHaveProperty('total_partitions_estimated');
    expect(states('porep-1-2')).toEqual(['0:synthesizing', '1:pending', '2:synthesizing', ...[3, 4, 5, 6, 7, 8, 9].map((i) => `${i}:pending`)]);
    expect(job('porep-1-3')).toMatchObject({ total_partitions: 10 });
    expect(job('porep-1-3')).not.toHaveProperty('total_partitions_estimated');
    expect(states('porep-1-3')).toEqual(Array.from({ length: 10 }, (_, i) => `${i}:synthesizing`));
    expect(job('M')).toMatchObject({ proof_kind: 'unknown', total_partitions: 1, partitions: [{ index: 0, state: 'gpu', worker_id: 2 }] });
    expect(job('M')).not.toHaveProperty('total_partitions_estimated');
    expect(job('snap-1-1')).toMatchObject({ proof_kind: 'snap-update', total_partitions: 16, partitions_done: 0 });
    expect(states('snap-1-1').slice(3, 8)).toEqual(['3:pending', '4:failed', '5:gpu', '6:gpu', '7:pending']);
    const parts = job('snap-1-1').partitions as Record<string, unknown>[];
    expect(parts[5]).toMatchObject({ finalizing: true, worker_id: 3 });
    expect(parts[6]).not.toHaveProperty('finalizing');
    // Worker 3: busy since the pickup of 5 (1110, the skip before it was never real), on 6 since 1120.
    const w3 = b.gpu_workers.find((w) => w.worker_id === 3)!;
    expect(w3).toMatchObject({ state: 'proving', current_job: 'snap-1-1', current_partition: 6, current_kind: 'snap-update' });
    expect(w3.busy_secs as number).toBeCloseTo(0.08, 2);
    expect(w3.stint_secs as number).toBeCloseTo(0.09, 2);
  });
});
