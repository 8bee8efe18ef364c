/**
 * A stage that ended unseen while split proving looked off, and split proving then seen on
 * (timeline-surface.ts endedByOther). Upstream fixes split proving per process (engine.rs
 * reads CUZK_DISABLE_SPLIT_PROVE at each pickup), so `off` followed by GPU_START lines means
 * `off` was inferred wrongly: the stage that "ended unseen" may still be finalizing and write
 * its own GPU_END. Decision (issue 23, the three open mutants at endedByOther's
 * `u || splitMode !== 'off'`): /status' word for it is then not credited — a counter is never
 * counted twice — and its GPU_END, when it comes, counts it once.
 */
import { END_UNSEEN } from '../../src/engine/sources/attach/timeline-jobs';
import { H, PC2, tl } from './timeline-surface-harness';

function offThenOn(): H {
  const h = new H();
  // Two pickups 100 ms apart on one worker, no GPU_START: split proving looks off, and
  // partition 1's stage ended unseen at the second pickup.
  h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(1100, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=2'));
  h.feed(tl(1150, 'GPU_PICKUP', 'porep-1-1', 'worker=1,partition=3'));
  expect(h.s.splitMode).toBe('off');
  expect(h.unit('porep-1-1', 0).end).toBe(END_UNSEEN);
  // Then a GPU_START: split proving is on after all.
  h.feed(tl(1160, 'GPU_START', 'porep-1-1', 'worker=1,partition=3'));
  expect(h.s.splitMode).toBe('on');
  return h;
}

describe('split proving seen on again: a stage that "ended unseen" is not credited from /status', () => {
  test("/status' gpu_ms for it is not counted", () => {
    const h = offThenOn();
    const before = h.gpuMs(PC2);
    h.s.otherSurfaceEnded('porep-1-1', 1, 40);
    expect(h.gpuMs(PC2)).toBe(before);
  });

  test('the same word while split proving is still off is counted (the rule this exception narrows)', () => {
    const h = new H();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(1100, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=2'));
    expect(h.s.splitMode).toBe('off');
    const before = h.gpuMs(PC2);
    h.s.otherSurfaceEnded('porep-1-1', 1, 40);
    expect(h.gpuMs(PC2)).toBe(before + 40);
  });
});
