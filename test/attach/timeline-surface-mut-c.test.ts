/**
 * Issue 23, mutation follow-up, part c (the mutants timeline-surface-mut-b left open, lines
 * >= 700 of timeline-surface.ts at cea0886: the lost-end give-up, the flood bound, the
 * unresolved-kind rule, evict, staleClaim). Same harness and sources of expectations as
 * test/attach/timeline-surface-edges.test.ts (its header): upstream cuzk TIMELINE format and
 * behaviour (extern/cuzk/cuzk-core/src/engine.rs), docs/upstream-conformance.md, the rules
 * in the headers and constants of timeline-surface.ts and timeline-jobs.ts; values computed
 * by hand.
 *
 * Clock: a line written at offset X is read at E + (X + 2) ms, so a run's time is its
 * offsets; a quiet log read to offset X exposes X - 1000 ms (the 1 s minimum lag): a sweep
 * at h.at(X) sees "now" = X - 1000 (or the last line's offset, if later).
 */
import { END_ABANDONED, END_DONE, END_LOST, END_NONE, END_UNSEEN } from '../../src/engine/sources/attach/timeline-jobs';
import { PART_FINALIZING, PART_GPU, PART_SYNTH_DONE } from '../../src/engine/model/kinds';
import { H, PC2, SNAP, part, tl } from './timeline-surface-harness';

/** Split proving on, no stage length of any kind seen (a zero-length WinningPoSt stage on worker 7). */
function split(): H {
  const h = new H();
  h.feed(tl(100, 'GPU_START', 'winpost-1-0a', 'worker=7,partition=0'), tl(100, 'GPU_END', 'winpost-1-0a', 'worker=7,partition=0,gpu_ms=0'));
  return h;
}

describe('the sweep’s one-second pace', () => {
  // Header: "A sweep every second (not only when a line arrives)"; a line sweeps once 1 s of
  // offsets passed since the last sweep (edges: "a line sweeps when 1 s of offsets passed").
  // A sweep of an empty log (the timer firing before the first line) is no sweep of the run.
  const run = (sweepFirst: boolean): string => {
    const h = new H({ confirmMs: 100 });
    if (sweepFirst) h.s.sweep();
    h.feed(tl(999, 'GPU_PICKUP', 'job-a', 'worker=0,partition=0')); // tentative: 100 ms to be confirmed
    h.feed(tl(1500, 'GPU_QUEUE', 'job-b', 'partition=0')); // 1500 ms since offset 0: this line sweeps
    return h.s.splitMode;
  };

  test('a sweep before the log’s first line changes nothing: the line 1 s after offset 0 still sweeps', () => {
    // The sweep at 1500 finds the pickup of 999 unconfirmed for 501 ms > 100 ms, with no
    // GPU_START ever seen: split proving is off.
    expect(run(false)).toBe('off');
    expect(run(true)).toBe('off');
  });
});

describe('the lost end: a started partition whose worker finished the later ones', () => {
  // MIN_LOST_END_GRACE_MS: "A started partition whose worker has since finished later ones is
  // given up this long after (at least)" (2 s, or 1.5x the longest stage of its kind).

  test('not while its worker is still busy with the later partition', () => {
    const h = split();
    h.feed(...part('porep-1-9', 0, 3, 100, 600)); // a 500 ms PoRep stage: 1.5x = 750 ms < 2 s
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(1000, 'GPU_START', 'porep-1-1', 'worker=0,partition=0'));
    h.feed(tl(1500, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(1500, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    const p0 = h.unit('porep-1-1', 0);
    expect([p0.state, h.s.workers.busy[0]]).toEqual([PART_FINALIZING, 1]);
    // Worker 0 busy since 1000; 2001 ms later it is still on partition 1 (no GPU_END yet).
    h.at(1000 + 2000 + 1000 + 1);
    h.at(1000 + 2000 + 1000 + 500);
    expect(p0.end).toBe(END_NONE);
    expect(h.err('timeline_gpu_end_missing')).toBe(0);
    // Partition 1 ends, then partition 0's finalizer (out of order by 200 ms): both proven.
    h.feed(tl(5000, 'GPU_END', 'porep-1-1', 'worker=0,partition=1,gpu_ms=3500'), tl(5200, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=4200'));
    expect([p0.end, h.parts(PC2), h.err('timeline_gpu_end_missing'), h.warns()]).toEqual([END_DONE, 3, 0, []]);
  });

  test('not a partition that never had a GPU_START (picked up while split proving read as off)', () => {
    const h = new H();
    // Worker 0 picks up partition 0, then 100 ms later partition 1, with no GPU_START between:
    // split proving reads as off (partition 0 ended unseen at the second pickup).
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(1100, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'));
    expect(h.s.splitMode).toBe('off');
    // Then a GPU_START (its pickup line lost): split proving is on after all. Partition 1
    // (picked up, never started) moves to its CPU tail; partition 2 runs 500 ms and ends.
    h.feed(tl(1200, 'GPU_START', 'porep-1-1', 'worker=0,partition=2'), tl(1700, 'GPU_END', 'porep-1-1', 'worker=0,partition=2,gpu_ms=500'));
    expect(h.s.splitMode).toBe('on');
    const p1 = h.unit('porep-1-1', 1);
    expect([h.unit('porep-1-1', 0).end, p1.state, p1.started, h.s.workers.busy[0]]).toEqual([END_UNSEEN, PART_FINALIZING, false, 0]);
    // Worker 0 idle since 1700; 2 s (> 1.5x 500 ms) and more pass: partition 1 was never
    // started, the rule is not for it.
    h.at(1700 + 2000 + 1000 + 1);
    h.at(1700 + 2000 + 1000 + 800);
    expect(p1.end).toBe(END_NONE);
    expect(h.err('timeline_gpu_end_missing')).toBe(0);
    h.feed(tl(5000, 'GPU_END', 'porep-1-1', 'worker=0,partition=1,gpu_ms=3900'));
    expect([p1.end, h.parts(PC2), h.err('timeline_gpu_end_missing'), h.s.jobById('porep-1-1')!.units.length]).toEqual([END_DONE, 2, 0, 3]);
  });
});

describe('a unit with no end is given up after the GPU timeout', () => {
  // Header: "a unit with no end (GPU failures write none) is given up after `gpuTimeoutMs`";
  // only a pickup still tentative (no GPU_START yet in split mode) waits for the skip rule
  // (confirmMs) instead. Found by part c: a partition picked up while split proving read as
  // off, never started, was never given up once GPU_START lines showed split proving on.
  const warning = 'no GPU_END for job "porep-1-1" partition 1 within 60 s of its pickup: given up (cuzk writes no GPU_END when GPU proving fails)';

  test('a partition picked up while split proving read as off, still its worker’s: given up, the worker idle again', () => {
    const h = new H();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(1100, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'));
    expect(h.s.splitMode).toBe('off');
    // Another worker's GPU_START: split proving is on. Its stage: 500 ms.
    h.feed(...part('porep-1-2', 0, 1, 1200, 1700));
    const p1 = h.unit('porep-1-1', 1);
    expect([h.s.splitMode, p1.started, p1.state, h.s.workers.own[0] === p1, h.s.workers.tentative[0], h.s.workers.busy[0]]).toEqual(['on', false, PART_GPU, true, 0, 1]);
    // Timeout: max(60 s, 3x the 500 ms stage) = 60 s after its pickup at 1100.
    h.at(1100 + 60_000 + 1000);
    expect(p1.end).toBe(END_NONE);
    h.at(1100 + 60_000 + 1000 + 1);
    expect([p1.end, h.err('timeline_gpu_end_missing'), h.s.workers.busy[0]]).toEqual([END_LOST, 1, 0]);
    expect(h.warns()).toContain(warning);
    // Worker 0 busy from its first pickup (1000) to the give-up's credit: pickup + 1.5x 500 ms.
    expect(h.busyMs(0)).toBe(1100 + 750 - 1000);
  });

  test('one its worker has moved on from, while the worker holds a pickup not yet confirmed', () => {
    const h = new H({ confirmMs: 120_000 });
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(1100, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'));
    // A GPU_START (its pickup line lost): split proving on; partition 1 moves to its CPU tail.
    h.feed(tl(1200, 'GPU_START', 'porep-1-1', 'worker=0,partition=2'), tl(1700, 'GPU_END', 'porep-1-1', 'worker=0,partition=2,gpu_ms=500'));
    h.feed(tl(2000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=3')); // tentative (120 s to confirm)
    const p1 = h.unit('porep-1-1', 1);
    expect([h.s.splitMode, p1.started, p1.state, h.s.workers.tentative[0]]).toEqual(['on', false, PART_FINALIZING, 1]);
    h.at(1100 + 60_000 + 1000);
    expect(p1.end).toBe(END_NONE);
    h.at(1100 + 60_000 + 1000 + 1);
    expect([p1.end, h.err('timeline_gpu_end_missing'), h.unit('porep-1-1', 3).end]).toEqual([END_LOST, 1, END_NONE]);
    expect(h.warns()).toContain(warning);
    expect(h.s.supersededOnGpu()).toBe(1); // partition 3: still a pickup not confirmed
  });
});

describe('a job with no kind is counted under "other" only once it ended', () => {
  // unresolvedMs: "A job that ended with no kind known is counted under "other" after this long".
  test('split off: its first partition ended unseen, the next one is on the GPU: not ended, its kind still learnt later', () => {
    const h = new H({ unresolvedMs: 5000 });
    h.feed(tl(1000, 'GPU_PICKUP', 'job-x', 'worker=0,partition=0'), tl(1100, 'GPU_PICKUP', 'job-x', 'worker=0,partition=1'));
    expect([h.s.splitMode, h.unit('job-x', 0).end, h.unit('job-x', 1).state]).toEqual(['off', END_UNSEEN, PART_GPU]);
    // 6 s after the first partition ended (5 s is the bound), partition 1 still on the GPU
    // (under the 60 s GPU timeout).
    h.at(1100 + 5000 + 1000 + 1000);
    const j = h.s.jobById('job-x')!;
    expect([j.kind, j.live, h.err('timeline_unresolved_kind')]).toEqual([-1, 1, 0]);
    // Partition 10 (only SnapDeals has one: SNAP_MIN_PARTITION) names the kind.
    h.feed(tl(7200, 'GPU_PICKUP', 'job-x', 'worker=1,partition=10'));
    expect(j.kind).toBe(SNAP);
  });
});

describe('floods: at most 10,000 jobs and 200,000 units', () => {
  test('200,000 units is within the bound; over it, the least recently seen jobs go until 180,000 (exactly) remain', () => {
    const h = new H();
    h.nowMs = 100;
    h.write(tl(100, 'GPU_QUEUE', 'f-0', 'partition=0')); // 1 unit, seen last at 100
    const lines: string[] = [];
    for (let i = 1; i < 4000; i++) for (let p = 0; p < 50; p++) lines.push(tl(500, 'GPU_QUEUE', `f-${i}`, `partition=${p}`));
    for (let p = 0; p < 49; p++) lines.push(tl(500, 'GPU_QUEUE', 'f-4000', `partition=${p}`));
    h.nowMs = 500;
    h.write(lines.join(''));
    // f-1 .. f-400 seen again at 550 (the same queued partition: no new unit).
    const again: string[] = [];
    for (let i = 1; i <= 400; i++) again.push(tl(550, 'GPU_QUEUE', `f-${i}`, 'partition=0'));
    h.nowMs = 550;
    h.write(again.join(''));
    expect([h.s.units.unitsTracked, h.s.jobs.size]).toEqual([200_000, 4001]);
    h.at(560); // a sweep at exactly 200,000 units (4001 jobs): nothing forgotten
    expect([h.s.units.unitsTracked, h.s.jobs.size]).toEqual([200_000, 4001]);
    // The 200,001st unit: swept at once; least recently seen first: f-0 (1 unit, seen at 100),
    // then 400 of the jobs seen last at 500 (50 units each): 200,001 - 1 - 20,000 = 180,000.
    h.nowMs = 600;
    h.write(tl(600, 'GPU_QUEUE', 'f-4000', 'partition=49'));
    expect([h.s.units.unitsTracked, h.s.jobs.size]).toEqual([180_000, 3600]);
    expect(h.s.jobById('f-0')).toBeUndefined();
    const kept = (from: number, to: number) => {
      let n = 0;
      for (let i = from; i <= to; i++) if (h.s.jobById(`f-${i}`)) n++;
      return n;
    };
    expect([kept(1, 400), kept(401, 3999), kept(4000, 4000)]).toEqual([400, 3599 - 400, 1]);
  });
});

describe('forgetting a job', () => {
  test('a job with no worker ever seen is forgotten like any other (queued, given up after 600 s, then quiet)', () => {
    const h = new H();
    h.feed(tl(1000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'));
    expect(h.unit('porep-1-1').state).toBe(PART_SYNTH_DONE);
    const u = h.unit('porep-1-1');
    h.at(1000 + 600_000 + 1000 + 1);
    expect(u.end).toBe(END_ABANDONED);
    expect(h.s.jobById('porep-1-1')).toBeUndefined();
    expect([h.s.units.unitsTracked, h.s.jobs.size]).toEqual([0, 0]);
  });
});

describe('staleClaim on a monolithic job', () => {
  // timeline-jobs.ts header: a monolithic job's unit is one per job instance, key MONO,
  // matched by job whatever partition= a line carries; staleClaim: the newest unit of what
  // the claim is about was skipped / given up / failed, or its job failed.
  test('a stray partition-numbered pickup of a monolithic job, given up, says nothing about the job’s own unit', () => {
    const h = split();
    h.feed(tl(1000, 'SYNTH_START', 'wpost-1', 'kind=window-post'), tl(2000, 'SYNTH_END', 'wpost-1', 'synth_ms=1000'));
    // A line upstream never writes for a WindowPoSt (a pickup with partition=3), started.
    h.feed(tl(3000, 'GPU_PICKUP', 'wpost-1', 'worker=0,partition=3'), tl(3000, 'GPU_START', 'wpost-1', 'worker=0,partition=3'));
    h.feed(...part('porep-1-1', 0, 0, 3500, 4000)); // worker 0 finishes a later partition at 4000
    h.at(4000 + 2000 + 1000 + 1);
    const j = h.s.jobById('wpost-1')!;
    expect([j.mono, j.failed, j.units.length, h.unit('wpost-1', 0).state, h.unit('wpost-1', 0).end, h.unit('wpost-1', 1).key, h.unit('wpost-1', 1).end]).toEqual([
      true,
      false,
      2,
      PART_SYNTH_DONE,
      END_NONE,
      3,
      END_LOST,
    ]);
    // The job's own unit is queued for the GPU: not stale, whatever partition the claim names.
    expect([h.s.staleClaim('wpost-1', 3), h.s.staleClaim('wpost-1', 0), h.s.staleClaim('wpost-1', -1)]).toEqual([false, false, false]);
  });
});
