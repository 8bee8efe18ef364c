/**
 * A daemon restart that offsets alone do not show: the old run lived less than
 * RESTART_BACK_MS longer than the new one's first line (a quick restart, a crash loop), so
 * its offsets go back by less than a second. The reads of the file vouch that the new line
 * was not printed late by the old process: a restart, and busy seconds stay exact.
 * Offsets and read times are the test's (TimelineDriver); expectations are their differences.
 */
import { TimelineDriver, tl } from './timeline-driver';

const WN = 'winpost-1000-0a0b0c0d0e0f1011';
const WN2 = 'winpost-1001-0a0b0c0d0e0f1011';

/** The old run: worker 0 busy 100..600 ms; the log read to its end until `idleUntil`. */
function oldRun(d: TimelineDriver, idleUntil: number): void {
  d.at(100);
  d.write(tl(100, 'SYNTH_START', WN, 'kind=winning-post'), tl(100, 'SYNTH_END', WN, 'synth_ms=0'), tl(100, 'GPU_PICKUP', WN, 'worker=0'), tl(100, 'GPU_START', WN, 'worker=0'));
  d.at(600);
  d.write(tl(600, 'GPU_END', WN, 'worker=0,gpu_ms=500'));
  d.at(idleUntil);
}

test('a restart 1.3 s after the old run began, offsets back by only 550 ms: a restart; worker 0 busy 0.5 + 0.3 s exactly', () => {
  const d = new TimelineDriver();
  oldRun(d, 1900);
  // The new daemon started at the exporter's 1900 ms: its offset 50 is read at 1950.
  d.at(1950);
  d.write(tl(50, 'SYNTH_START', WN2, 'kind=winning-post'), tl(50, 'SYNTH_END', WN2, 'synth_ms=0'), tl(50, 'GPU_PICKUP', WN2, 'worker=0'), tl(50, 'GPU_START', WN2, 'worker=0'));
  let v = d.view();
  expect(v.error('timeline_restart')).toBe(1);
  expect(v.busy(0)).toBe(1);
  // Exposed while running: never past what a later end can land on.
  d.at(2150);
  v = d.view();
  expect(v.busySecs(0)).toBeLessThanOrEqual(0.5 + 0.3 + 1e-9);
  d.at(2250);
  d.write(tl(350, 'GPU_END', WN2, 'worker=0,gpu_ms=300'));
  d.at(5000);
  v = d.view();
  expect(v.busy(0)).toBe(0);
  expect(v.busySecs(0)).toBeCloseTo(0.8, 9);
  expect(v.gpuSecs('winning-post')).toBeCloseTo(0.8, 9);
});

test('a line of the same run printed late by less than the lag is not a restart', () => {
  const d = new TimelineDriver();
  d.at(5000);
  d.write(tl(5000, 'SYNTH_START', WN, 'kind=winning-post'), tl(5000, 'SYNTH_END', WN, 'synth_ms=0'), tl(5000, 'GPU_PICKUP', WN, 'worker=0'));
  d.at(5400);
  // GPU_START's offset (5001) printed after a line of 5600: 599 ms out of order, read at once.
  d.write(tl(5600, 'SYNTH_START', WN2, 'kind=winning-post'));
  d.at(5650);
  d.write(tl(5001, 'GPU_START', WN, 'worker=0'));
  d.write(tl(5650, 'GPU_END', WN, 'worker=0,gpu_ms=649'));
  d.at(9000);
  const v = d.view();
  expect(v.error('timeline_restart')).toBe(0);
  expect(v.busySecs(0)).toBeCloseTo(0.65, 9);
});

test('after the file changed (rotated, truncated) the old reads vouch for nothing: its lines, written while the old file was read, are no restart', () => {
  const d = new TimelineDriver();
  oldRun(d, 5000);
  // Rotation found at 5000: the new file holds what the same daemon wrote since 2000.
  d.tl.newFile();
  d.write(tl(2500, 'SYNTH_START', WN2, 'kind=winning-post'), tl(2200, 'SYNTH_START', WN, 'kind=winning-post'));
  expect(d.view().error('timeline_restart')).toBe(0);
});

test('a log replayed slower than its offsets, lines in order, is one run: never a restart, every stint exact', () => {
  const d = new TimelineDriver();
  // Each second of the daemon's offsets reaches the file 3 s of real time later than the last.
  for (let i = 0; i < 10; i++) {
    const off = 100 + i * 1000;
    const job = `winpost-1000-${i.toString(16).padStart(16, '0')}`;
    d.at(off * 3);
    d.write(tl(off, 'SYNTH_START', job, 'kind=winning-post'), tl(off, 'SYNTH_END', job, 'synth_ms=0'), tl(off, 'GPU_PICKUP', job, 'worker=0'), tl(off, 'GPU_START', job, 'worker=0'));
    d.at(off * 3 + 1000);
    d.write(tl(off + 400, 'GPU_END', job, 'worker=0,gpu_ms=400'));
  }
  d.at(60_000);
  const v = d.view();
  expect(v.error('timeline_restart')).toBe(0);
  expect(v.busySecs(0)).toBeCloseTo(4, 9);
});

test('going back by 100 ms after the reads vouch for more is jitter; by 101 ms a restart, once the next line is behind the old run too', () => {
  for (const [back, restarts] of [[100, 0], [101, 1]] as const) {
    const d = new TimelineDriver();
    oldRun(d, 5000);
    d.write(tl(600 - back, 'SYNTH_START', WN2, 'kind=winning-post'));
    // One line alone proves nothing yet: held (a 101 ms one) until the next.
    expect([back, 'held', d.view().error('timeline_restart')]).toEqual([back, 'held', 0]);
    d.at(5050);
    d.write(tl(600 - back + 50, 'SYNTH_END', WN2, 'synth_ms=50'));
    const v = d.view();
    expect([back, v.error('timeline_restart'), v.synthSecs('winning-post')]).toEqual([back, restarts, 0.05]);
  }
});

/** Lines read at the exporter's `ms`; a read found the end of the file there; scrapes every `step` ms up to `until`. */
function readAt(d: TimelineDriver, ms: number, lines: string[], until = ms, step = 50): void {
  d.at(ms);
  d.write(...lines);
  for (let t = ms + step; t <= until; t += step) {
    d.at(t);
    d.view();
  }
}
const A = 'winpost-1000-0a0b0c0d0e0f1011';
const B = 'winpost-1001-0a0b0c0d0e0f1011';
const C = 'winpost-1002-0a0b0c0d0e0f1011';
const start = (off: number, id: string, w: number) => [tl(off, 'SYNTH_START', id, 'kind=winning-post'), tl(off, 'SYNTH_END', id, 'synth_ms=0'), tl(off, 'GPU_PICKUP', id, `worker=${w}`), tl(off, 'GPU_START', id, `worker=${w}`)];

test('a young run: a GPU_END printed 1.3 s after its offset, behind a later line, then the run goes on: no restart, busy exact (review F1)', () => {
  const d = new TimelineDriver();
  d.latenessMs = 0;
  readAt(d, 300, start(300, A, 0));
  readAt(d, 500, start(500, B, 1));
  readAt(d, 1200, [tl(1200, 'SYNTH_START', C, 'kind=winning-post')], 2250);
  // A's end: its thread stalled 1.3 s between elapsed() and the write.
  readAt(d, 2300, [tl(1000, 'GPU_END', A, 'worker=0,gpu_ms=700')], 3900, 100);
  readAt(d, 4000, [tl(4000, 'GPU_END', B, 'worker=1,gpu_ms=3500')], 9000, 500);
  const v = d.view();
  expect(v.error('timeline_restart')).toBe(0);
  expect(v.busySecs(1)).toBeCloseTo(3.5, 9);
  expect(v.gpuSecs('winning-post')).toBeCloseTo(4.2, 9);
  expect(v.partsDone('winning-post')).toBe(2);
  // Worker 0: exposed up to what the reads allowed when the late end arrived (read to 2300,
  // less the 1 s lag: 1.3 - 0.3 s), no further while the end was held; never counted twice.
  expect(v.busySecs(0)).toBeCloseTo(1.0, 9);
});

test('a held line with nothing after it: the file read to its end for 2 s more, it is the old run\'s; meanwhile no stint is exposed further', () => {
  const d = new TimelineDriver();
  d.latenessMs = 0;
  readAt(d, 300, start(300, A, 0));
  readAt(d, 1500, [tl(1500, 'SYNTH_START', B, 'kind=winning-post')], 2900, 100);
  readAt(d, 3000, [tl(1000, 'SYNTH_START', C, 'kind=winning-post')]); // 2 s behind its offset: held
  const before = d.view().busySecs(0);
  expect(before).toBeCloseTo(1.7, 9); // read to 3000, less the lag, from the pickup at 300
  readAt(d, 3100, [], 4900, 100);
  let v = d.view();
  expect([v.busySecs(0), d.tl.eventsTotal]).toEqual([before, 5]);
  readAt(d, 5000, []);
  v = d.view();
  expect(v.error('timeline_restart')).toBe(0);
  expect(d.tl.eventsTotal).toBe(6);
  // Exposure goes on, behind a lag the late line doubled (twice its 2 s lateness).
  readAt(d, 8000, []);
  expect(d.view().busySecs(0)).toBeCloseTo((8000 - 4000 - 300) / 1000, 9);
});
