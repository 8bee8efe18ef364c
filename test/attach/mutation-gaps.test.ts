/**
 * Issue 23: behaviours an independent mutation set showed untested on the TIMELINE surface.
 * Each test scripts offsets (test/attach/timeline-driver.ts: no files, no timers, no sleeps)
 * and checks figures computed here from the script, never from the code:
 *  - a GPU_START whose GPU_PICKUP was lost or torn beyond repair stands for the pickup:
 *    the worker is busy *while* the stage runs, not only credited once GPU_END arrives;
 *  - the no-end sweep: a partition on the GPU with no line for longer than the GPU timeout
 *    (default max(60 s, 3x the longest stage seen for its kind)) is given up — the worker
 *    idle, the partition off the gauges, counted — and not a moment before.
 */
import { TimelineDriver, tl } from './timeline-driver';

const P = 'porep-1000-7';
const S = 'snap-1000-9';

test('GPU_START with its GPU_PICKUP lost: the worker is busy while the stage runs, then exact', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'GPU_START', P, 'worker=0,partition=0'));
  d.at(3000); // 2 s into the stage: exposed up to the read point less the 1 s lag
  let v = d.view();
  expect(v.busy(0)).toBe(1);
  expect(v.onGpu()).toBe(1);
  expect(v.live()).toBe(1);
  expect(v.busySecs(0)).toBeGreaterThan(0.9);
  d.at(3500);
  d.write(tl(3500, 'GPU_END', P, 'worker=0,partition=0,gpu_ms=2500'));
  d.at(6000);
  v = d.view();
  expect(v.busy(0)).toBe(0);
  expect(v.busySecs(0)).toBeCloseTo(2.5, 9);
  expect(v.gpuSecs('porep-c2')).toBeCloseTo(2.5, 9);
  expect(v.partsDone('porep-c2')).toBe(1);
  expect(v.onGpu()).toBe(0);
  expect(v.live()).toBe(0);
});

test('GPU_PICKUP torn beyond repair (counted), its GPU_START stands for it', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(`TIMELINE,1000,GPU_PICKUP,${S}\x1b[2m2026-12-01T10:00:00Z\x1b[0m INFO x\n`, tl(1000, 'GPU_START', S, 'worker=1,partition=0'));
  d.at(2500);
  let v = d.view();
  expect(v.error('timeline_torn')).toBe(1);
  expect(v.busy(1)).toBe(1);
  expect(v.onGpu()).toBe(1);
  d.write(tl(2500, 'GPU_END', S, 'worker=1,partition=0,gpu_ms=1500'));
  d.at(5000);
  v = d.view();
  expect(v.busy(1)).toBe(0);
  expect(v.busySecs(1)).toBeCloseTo(1.5, 9);
  expect(v.gpuSecs('snap-update')).toBeCloseTo(1.5, 9);
  expect(v.partsDone('snap-update')).toBe(1);
});

test('no-end sweep, default timeout: a stage with no line for > 60 s is given up, not before; exposure capped at 1.5x the longest stage', () => {
  const d = new TimelineDriver(); // gpuTimeoutMs: the default, max(60 s, 3x longest seen)
  d.at(1000);
  d.write(tl(1000, 'GPU_PICKUP', P, 'worker=0,partition=0'), tl(1000, 'GPU_START', P, 'worker=0,partition=0'));
  d.at(1800);
  d.write(tl(1800, 'GPU_END', P, 'worker=0,partition=0,gpu_ms=800')); // longest stage: 800 ms
  d.at(2000);
  d.write(tl(2000, 'GPU_PICKUP', P, 'worker=0,partition=1'), tl(2000, 'GPU_START', P, 'worker=0,partition=1'));
  // The GPU hangs: no line at all from here. The log's clock trails what was read by 1 s
  // (the lag), so the sweep sees pickup + 60 s once the read point is past 63,000.
  d.at(2000 + 55_000);
  let v = d.view();
  expect(v.busy(0)).toBe(1);
  expect(v.onGpu()).toBe(1);
  expect(v.error('timeline_gpu_end_missing')).toBe(0);
  d.at(2000 + 60_500); // clock at ~61.5 s: 59.5 s after the pickup
  v = d.view();
  expect(v.busy(0)).toBe(1);
  expect(v.error('timeline_gpu_end_missing')).toBe(0);
  d.at(2000 + 62_000); // clock 61 s after the pickup
  v = d.view();
  expect(v.busy(0)).toBe(0);
  expect(v.onGpu()).toBe(0);
  expect(v.live()).toBe(0);
  expect(v.error('timeline_gpu_end_missing')).toBe(1);
  expect(v.busySecs(0)).toBeCloseTo(0.8 + 1.5 * 0.8, 9);
  expect(v.partsDone('porep-c2')).toBe(1);
  expect(v.gpuSecs('porep-c2')).toBeCloseTo(0.8, 9); // nothing invented for the lost stage
});

test('no-end sweep scales with the kind: 3x a 30 s stage is 90 s, so a stage silent for 70 s is still running', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'GPU_PICKUP', S, 'worker=2,partition=0'), tl(1000, 'GPU_START', S, 'worker=2,partition=0'));
  d.at(31_000);
  d.write(tl(31_000, 'GPU_END', S, 'worker=2,partition=0,gpu_ms=30000'));
  d.at(32_000);
  d.write(tl(32_000, 'GPU_PICKUP', S, 'worker=2,partition=1'), tl(32_000, 'GPU_START', S, 'worker=2,partition=1'));
  d.at(32_000 + 71_000); // 70 s after the pickup on the log's clock: past 60 s, inside 90 s
  let v = d.view();
  expect(v.busy(2)).toBe(1);
  expect(v.error('timeline_gpu_end_missing')).toBe(0);
  d.at(32_000 + 92_000); // 91 s
  v = d.view();
  expect(v.busy(2)).toBe(0);
  expect(v.error('timeline_gpu_end_missing')).toBe(1);
  expect(v.busySecs(2)).toBeCloseTo(30 + 45, 9);
});
