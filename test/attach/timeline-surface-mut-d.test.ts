/**
 * Mutation triage of src/engine/sources/attach/timeline-surface.ts, lines below 700: the
 * survivors test/mutation/files/timeline-surface-a.md left open (helper tri-misc). Same
 * harness and sources of expectations as timeline-surface-mut-a.test.ts: upstream cuzk's
 * TIMELINE lines (extern/cuzk/cuzk-core/src/engine.rs `timeline_event`, eprintln! from
 * several threads), docs/upstream-conformance.md, and the rules in the headers of
 * timeline-surface.ts and timeline-clock.ts. Values are computed by hand from the lines fed.
 *
 * Clock: a line written at offset X is read at E + (X + 2) ms, so a run's time is its
 * offsets; a quiet log read to offset X exposes X - 1000 ms (the 1 s minimum lag).
 */
import { END_NONE } from '../../src/engine/sources/attach/timeline-jobs';
import { tl, H } from './timeline-surface-harness';

describe('a held line, then a new file, then a line behind the old run', () => {
  // timeline-clock.ts: offsets going back by more than RESTART_BACK_MS (1 s) are a new daemon
  // process; eprintln! order may jitter by a few ms between threads. A line back by less
  // (100 ms to 1 s) that the reads vouch for is `stale`: held, and the next line decides
  // (ClockVerdict: "a new run's next line is behind the old run too; a line of the old run
  // printed late is followed by the old run's"). Here the file was replaced in between (a
  // rotation: newFile() — the reads vouch for nothing in it yet), so the next line is judged
  // by its offset alone: back by more than 1 s from the old run, a new process's line.
  const mk = () => {
    const h = new H();
    h.feed(tl(1000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'), tl(5000, 'GPU_QUEUE', 'porep-1-1', 'partition=1'));
    h.readTo(10_000); // read to its end at 10 s: nothing more
    // Back by exactly 1 s from the old run's 5000: not a restart by the offsets, a stale line by the reads.
    h.write(tl(4000, 'GPU_QUEUE', 'porep-2-2', 'partition=0'));
    expect(h.s.jobById('porep-2-2')).toBeUndefined(); // held
    h.s.newFile();
    h.nowMs = 10_050;
    return h;
  };

  test('the next line 1 ms behind the held one (thread jitter) and 1,001 ms behind the old run: both lines are the new daemon\'s, one restart', () => {
    const h = mk();
    h.write(tl(3999, 'GPU_QUEUE', 'porep-2-2', 'partition=1'));
    expect(h.err('timeline_restart')).toBe(1);
    expect([...h.s.jobs.keys()]).toEqual(['porep-2-2']);
    expect(h.s.jobById('porep-2-2')!.units.map((u) => u.key)).toEqual([0, 1]);
  });
});

describe('a duplicate in flight: two instances of one partition on one worker', () => {
  // docs/upstream-conformance.md, "duplicate in flight" (two Prove calls with one id,
  // engine.rs submits both): two interleaved line sets with the same id; "every SYNTH_START
  // is a new unit; later lines go to the oldest unit of that key in the state they follow:
  // both instances counted, each on its worker". Upstream's GPU worker loops to its next
  // pickup right after gpu_prove_start; the finalizer writes GPU_END after gpu_prove_finish
  // (engine.rs), gpu_ms measured from the pickup. So with both instances on worker 0 the
  // first GPU_END (its gpu_ms dating it to the first pickup) is the older instance's, and the
  // worker stays busy with the newer one until the second (busy: pickup → GPU_END of the
  // worker's latest unit).
  const W0 = 'worker=0,partition=0';
  const mk = () => {
    const h = new H();
    h.feed(
      tl(100, 'SYNTH_START', 'dup-1', 'partition=0'),
      tl(110, 'SYNTH_START', 'dup-1', 'partition=0'),
      tl(500, 'SYNTH_END', 'dup-1', 'partition=0,synth_ms=400'),
      tl(510, 'SYNTH_END', 'dup-1', 'partition=0,synth_ms=400'),
      tl(600, 'GPU_QUEUE', 'dup-1', 'partition=0'),
      tl(610, 'GPU_QUEUE', 'dup-1', 'partition=0'),
      tl(1000, 'GPU_PICKUP', 'dup-1', W0),
      tl(1000, 'GPU_START', 'dup-1', W0),
      tl(2000, 'GPU_PICKUP', 'dup-1', W0),
      tl(2000, 'GPU_START', 'dup-1', W0),
    );
    return h;
  };

  test('both instances counted; the first GPU_END (gpu_ms back to the first pickup) ends the older one, the worker busy until the second', () => {
    const h = mk();
    const [a, b] = h.s.jobById('dup-1')!.units;
    h.feed(tl(2500, 'GPU_END', 'dup-1', `${W0},gpu_ms=1500`));
    expect(h.err('implausible')).toBe(0); // 1,500 ms is the span since the older instance's pickup
    expect([a.end !== END_NONE, b.end !== END_NONE]).toEqual([true, false]);
    expect(h.s.claim(0)!.busy).toBe(true);
    h.feed(tl(3500, 'GPU_END', 'dup-1', `${W0},gpu_ms=1500`));
    expect(h.err('implausible')).toBe(0);
    expect(h.s.claim(0)!.busy).toBe(false);
    expect(h.busyMs(0)).toBe(2500); // 1000 → 3500
  });
  test('at the slack: a gpu_ms 2 ms past the span since the current unit\'s pickup is still its own (whole-ms truncation, SPAN_SLACK_MS); 3 ms past, the older instance\'s', () => {
    for (const [gpuMs, olderEnded] of [[502, false], [503, true]] as const) {
      const h = mk();
      const [a, b] = h.s.jobById('dup-1')!.units;
      h.feed(tl(2500, 'GPU_END', 'dup-1', `${W0},gpu_ms=${gpuMs}`));
      expect([gpuMs, h.err('implausible'), a.end !== END_NONE, b.end !== END_NONE]).toEqual([gpuMs, 0, olderEnded, !olderEnded]);
    }
  });
  test('the older instance on another worker is not this worker\'s: an end on worker 0 dated before its own pickup is its own, over its span (counted implausible, capped)', () => {
    const h = new H();
    h.feed(
      tl(100, 'SYNTH_START', 'dup-2', 'partition=0'),
      tl(110, 'SYNTH_START', 'dup-2', 'partition=0'),
      tl(500, 'SYNTH_END', 'dup-2', 'partition=0,synth_ms=400'),
      tl(510, 'SYNTH_END', 'dup-2', 'partition=0,synth_ms=400'),
      tl(600, 'GPU_QUEUE', 'dup-2', 'partition=0'),
      tl(610, 'GPU_QUEUE', 'dup-2', 'partition=0'),
      tl(1000, 'GPU_PICKUP', 'dup-2', 'worker=1,partition=0'),
      tl(1000, 'GPU_START', 'dup-2', 'worker=1,partition=0'),
      tl(2000, 'GPU_PICKUP', 'dup-2', W0),
      tl(2000, 'GPU_START', 'dup-2', W0),
    );
    const [a, b] = h.s.jobById('dup-2')!.units;
    expect([a.worker, b.worker]).toEqual([1, 0]);
    h.feed(tl(2500, 'GPU_END', 'dup-2', `${W0},gpu_ms=1500`));
    expect(h.err('implausible')).toBe(1);
    expect([a.end !== END_NONE, b.end !== END_NONE]).toEqual([false, true]);
    expect([h.s.claim(0)!.busy, h.s.claim(1)!.busy]).toEqual([false, true]);
  });
});

describe('a retry after a GPU failure: the same partition again on the same worker', () => {
  // docs/upstream-conformance.md: gpu-fail-finish writes the partition's lines up to
  // GPU_START and no GPU_END ("the pickup stays the worker's until its next pickup or the
  // stage's end"); "retry after failure": the same id proven again, new units ("counted
  // again"). The retry's GPU_END (gpu_ms from its own pickup) ends the retry's unit: the
  // worker's latest, so the worker is idle after it; the failed instance waits for its
  // timeout (its end never comes).
  const W0 = 'worker=0,partition=0';
  test("the retry's GPU_END ends the retry, not the failed instance still waiting for its end; the worker idle after it", () => {
    const h = new H();
    h.feed(
      tl(100, 'SYNTH_START', 'retry-1', 'partition=0'),
      tl(500, 'SYNTH_END', 'retry-1', 'partition=0,synth_ms=400'),
      tl(600, 'GPU_QUEUE', 'retry-1', 'partition=0'),
      tl(1000, 'GPU_PICKUP', 'retry-1', W0),
      tl(1000, 'GPU_START', 'retry-1', W0),
      // gpu_prove_finish fails: no GPU_END. Curio proves the same id again.
      tl(1500, 'SYNTH_START', 'retry-1', 'partition=0'),
      tl(1900, 'SYNTH_END', 'retry-1', 'partition=0,synth_ms=400'),
      tl(1950, 'GPU_QUEUE', 'retry-1', 'partition=0'),
      tl(2000, 'GPU_PICKUP', 'retry-1', W0),
      tl(2000, 'GPU_START', 'retry-1', W0),
    );
    const [failed, retry] = h.s.jobById('retry-1')!.units;
    h.feed(tl(3000, 'GPU_END', 'retry-1', `${W0},gpu_ms=1000`));
    expect(h.err('implausible')).toBe(0);
    expect([failed.end === END_NONE, retry.end === END_NONE]).toEqual([true, false]);
    expect(h.s.claim(0)!.busy).toBe(false);
    expect(h.busyMs(0)).toBe(2000); // 1000 → 3000
  });
  test("a WindowPoSt (monolithic, its GPU_END carrying partition=) retried on the same worker: the retry's end ends the retry", () => {
    const h = new H();
    const W = 'wdpost-1';
    const mono = () => [tl(h.nowMs + 100, 'SYNTH_START', W, 'kind=window-post'), tl(h.nowMs + 500, 'SYNTH_END', W, 'synth_ms=400'), tl(h.nowMs + 600, 'GPU_QUEUE', W, 'monolithic')];
    h.feed(...mono(), tl(1000, 'GPU_PICKUP', W, 'worker=0'), tl(1000, 'GPU_START', W, 'worker=0'));
    // No GPU_END (gpu_prove_finish failed); proven again.
    h.feed(...mono(), tl(2000, 'GPU_PICKUP', W, 'worker=0'), tl(2000, 'GPU_START', W, 'worker=0'));
    const [failed, retry] = h.s.jobById(W)!.units;
    h.feed(tl(3000, 'GPU_END', W, 'worker=0,partition=3,gpu_ms=1000'));
    expect(h.err('implausible')).toBe(0);
    expect([failed.end === END_NONE, retry.end === END_NONE]).toEqual([true, false]);
    expect(h.s.claim(0)!.busy).toBe(false);
    expect(h.busyMs(0)).toBe(2000);
  });
});
