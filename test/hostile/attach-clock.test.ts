/**
 * Issue 20, class 1 (attach side, clocks): busy time can never exceed the wall time that
 * passed, per worker, whatever a TIMELINE log or a /status snapshot claims.
 *  - one TIMELINE line with offset 999999999999999 (before: a worker busy 1.0e12 s);
 *  - two daemons' logs interleaved (`journalctl -u 'cuzk@*'`), started 20 s and 5,000 s
 *    apart (before: 99,602 busy seconds in 9 s);
 *  - offsets running 1000× faster than real time (before: 4,000 s in 8 s);
 *  - `/status` `uptime_secs` 1e15, which made any duration "plausible".
 * The TIMELINE cases run on the driver (test/attach/timeline-driver.ts): the exporter's
 * read clock is set by the test, so "elapsed wall time" is exact, at the default 30 s lead
 * tolerance (DEFAULT_MAX_LEAD_MS).
 */
import { DEFAULT_MAX_LEAD_MS } from '../../src/engine/sources/attach/timeline-clock';
import { Harness, startHarness } from '../attach/harness';
import { fixture } from '../attach/snapshots';
import { StatusServer } from '../attach/status-server';
import { TimelineDriver, tl } from '../attach/timeline-driver';
import { find, parse } from '../helpers/prom-text';

const LEAD_S = DEFAULT_MAX_LEAD_MS / 1000;
const WD = 'wdpost-1';

test('TIMELINE: one line with offset 999999999999999 is refused (timeline_clock); the worker is busy only as long as time passed', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'GPU_PICKUP', WD, 'worker=0'), tl(1000, 'GPU_START', WD, 'worker=0'));
  d.at(1500);
  d.write(tl(999999999999999, 'GPU_END', WD, 'worker=0,gpu_ms=999999999998999'));
  d.at(3000);
  d.write(tl(3000, 'GPU_END', WD, 'worker=0,gpu_ms=2000'));
  d.at(10_000);
  const v = d.view();
  expect(v.busySecs(0)).toBeCloseTo(2, 9);
  expect(v.gpuSecs('window-post') + v.gpuSecs('other')).toBeLessThanOrEqual(9);
  expect(v.error('timeline_clock')).toBe(1);
});

/**
 * Two daemons on one host, each proving on its worker 0 and 1 back to back (a partition
 * every 100 ms), their lines interleaved as journalctl merges them. Returns the busy
 * seconds of every worker id after `seconds` of real time.
 */
function interleaved(aheadMs: number, seconds: number): { busy: number[]; elapsedS: number; v: ReturnType<TimelineDriver['view']> } {
  const d = new TimelineDriver();
  const start = 1000;
  d.at(start);
  let n = 0;
  for (let t = start; t < start + seconds * 1000; t += 100) {
    d.at(t);
    for (const w of [0, 1]) {
      // Daemon A's offsets are real time; daemon B's run `aheadMs` ahead (it started earlier)
      // or behind (later: negative).
      for (const [who, off] of [['a', t], ['b', t + aheadMs]] as const) {
        if (off < 0) continue;
        const job = `${who}-${w}-${n}`;
        d.write(
          tl(off, 'GPU_PICKUP', job, `worker=${w},partition=0`),
          tl(off, 'GPU_START', job, `worker=${w},partition=0`),
          tl(off + 99, 'GPU_END', job, `worker=${w},partition=0,gpu_ms=99`),
        );
      }
    }
    n++;
  }
  const end = start + seconds * 1000;
  d.at(end + 5000);
  const v = d.view();
  return { busy: [v.busySecs(0), v.busySecs(1)], elapsedS: (end + 5000 - start) / 1000, v };
}

test.each([
  ['started 5,000 s earlier', 5_000_000],
  ['started 20 s later', -20_000],
  ['started 20 s earlier', 20_000],
  ['started 3 s earlier', 3000],
  ['started 3 s later', -3000],
])('TIMELINE: two daemons\' logs interleaved (%s): no worker busy longer than the time that passed', (_what, aheadMs) => {
  const { busy, elapsedS, v } = interleaved(aheadMs, 9);
  // Real time: 9 s of proving on each worker id. Before issue 20's clock: 99,602 busy
  // seconds in 9 s; with the lead check but no restart check, worker 1 read 17.8 s.
  for (const b of busy) expect(b).toBeLessThanOrEqual(elapsedS);
  expect(busy[0] + busy[1]).toBeLessThanOrEqual(2 * elapsedS);
  if (aheadMs > DEFAULT_MAX_LEAD_MS) expect(v.error('timeline_clock')).toBeGreaterThan(0);
});

test('TIMELINE: offsets sent back to 0 again and again are no restarts (the new process would have started before the old one\'s last line): counted, no busy time fabricated', () => {
  const d = new TimelineDriver();
  let t = 1000;
  // Each "run": a 29 s partition (within the lead tolerance), then offsets back to 0.
  for (let i = 0; i < 50; i++) {
    d.at(t);
    d.write(tl(0, 'GPU_PICKUP', `j${i}`, 'worker=0'), tl(0, 'GPU_START', `j${i}`, 'worker=0'), tl(29_000, 'GPU_END', `j${i}`, 'worker=0,gpu_ms=29000'));
    t += 10;
  }
  d.at(t + 2000);
  const v = d.view();
  const elapsedS = (t + 2000 - 1000) / 1000;
  // Before: 49 restarts believed, 1,450 busy seconds in 2.5 s.
  expect(v.busySecs(0)).toBeLessThanOrEqual(elapsedS + LEAD_S);
  expect(v.gpuSecs('window-post') + v.gpuSecs('other')).toBeLessThanOrEqual(elapsedS + LEAD_S);
  expect(v.error('timeline_restart')).toBe(0);
  expect(v.error('timeline_clock')).toBeGreaterThanOrEqual(49);
});

test('TIMELINE: restarts whose runs overlap within the slack, back to back (offsets 0 then 4,000, fifty times), fabricate no busy time', () => {
  const d = new TimelineDriver();
  let t = 1000;
  for (let i = 0; i < 50; i++) {
    d.at(t);
    d.write(tl(0, 'GPU_PICKUP', `j${i}`, 'worker=0'), tl(0, 'GPU_START', `j${i}`, 'worker=0'), tl(4000, 'GPU_END', `j${i}`, 'worker=0,gpu_ms=4000'));
    t += 10;
  }
  d.at(t + 2000);
  const v = d.view();
  // Before the once-a-minute rule: 49 restarts believed, 200 busy seconds in 2.5 s.
  expect(v.busySecs(0)).toBeLessThanOrEqual((t + 2000 - 1000) / 1000 + LEAD_S);
  expect(v.error('timeline_restart')).toBeLessThanOrEqual(1);
});

test('TIMELINE: one line read 60 s late (the lag is then 2 min), then a 30-s stint claimed at offset 0 every second for 10 min: busy within elapsed + 30 s + 5 s a minute', () => {
  const d = new TimelineDriver();
  d.latenessMs = 0;
  const job = (n: number) => `winpost-${2000 + n}-0a0b0c0d0e0f1011`;
  const stint = (n: number) => [tl(0, 'SYNTH_START', job(n), 'kind=winning-post'), tl(0, 'GPU_PICKUP', job(n), 'worker=0'), tl(0, 'GPU_START', job(n), 'worker=0'), tl(29_900, 'GPU_END', job(n), 'worker=0,gpu_ms=29900')];
  let n = 0;
  d.at(0);
  d.write(...stint(n++));
  d.at(89_900);
  d.write(tl(29_900, 'SYNTH_START', job(999), 'kind=winning-post'));
  for (let t = 90_900; t <= 600_000; t += 1000) {
    d.at(t);
    d.view();
    d.write(...stint(n++));
  }
  const v = d.view();
  // Before (review H1): the restart slack was the lag, 2 min here: 897 busy seconds in 600.
  expect(v.busySecs(0)).toBeLessThanOrEqual(600 + LEAD_S + 5 * 10);
});

test('TIMELINE: a real restart after the old daemon\'s last line is believed at once', () => {
  const d = new TimelineDriver();
  d.at(100_000);
  d.write(tl(100_000, 'GPU_PICKUP', 'a', 'worker=0'), tl(100_000, 'GPU_START', 'a', 'worker=0'), tl(100_500, 'GPU_END', 'a', 'worker=0,gpu_ms=500'));
  // The old daemon dies; a new one starts 1 s later and writes at its offset 3,000.
  d.at(104_600);
  d.write(tl(3000, 'GPU_PICKUP', 'b', 'worker=0'), tl(3000, 'GPU_START', 'b', 'worker=0'));
  d.at(105_600);
  d.write(tl(4000, 'GPU_END', 'b', 'worker=0,gpu_ms=1000'));
  d.at(110_000);
  let v = d.view();
  expect(v.error('timeline_restart')).toBe(1);
  expect(v.error('timeline_clock')).toBe(0);
  expect(v.busySecs(0)).toBeCloseTo(1.5, 6);
});

test('TIMELINE: a new daemon that seems to overlap an old run read late (every line 10 s late) is refused, then believed after REANCHOR (20 lines, 30 s)', () => {
  const d = new TimelineDriver();
  d.latenessMs = 10_000;
  d.at(19_000);
  // The old daemon started 81 s before the exporter (offsets = real time + 81 s).
  d.write(tl(100_000, 'GPU_PICKUP', 'a', 'worker=0'), tl(100_000, 'GPU_START', 'a', 'worker=0'), tl(101_000, 'GPU_END', 'a', 'worker=0,gpu_ms=1000'));
  // Dies at 20 s; a new daemon starts at 21 s, read promptly: it seems to start 9 s too early.
  d.latenessMs = 2;
  for (let t = 22_000; t <= 60_000; t += 1000) {
    d.at(t);
    d.write(tl(t - 21_000, 'SYNTH_START', `c${t}`, 'partition=0'));
  }
  const v = d.view();
  expect(v.error('timeline_restart')).toBe(1);
  expect(v.error('timeline_clock')).toBeGreaterThanOrEqual(20);
  expect(v.error('timeline_clock')).toBeLessThan(39); // believed before the end
});

test('TIMELINE: offsets running 1000× faster than real time are refused past the tolerance (timeline_clock)', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'GPU_PICKUP', WD, 'worker=0'), tl(1000, 'GPU_START', WD, 'worker=0'));
  // 8 s of real time claims 8,000 s: a partition of 100 s every 100 ms.
  let off = 1000;
  for (let t = 1100; t <= 9000; t += 100) {
    d.at(t);
    d.write(tl(off + 100_000, 'GPU_END', WD, 'worker=0,gpu_ms=100000'));
    off += 100_000;
    d.write(tl(off, 'GPU_PICKUP', WD, 'worker=0'), tl(off, 'GPU_START', WD, 'worker=0'));
  }
  d.at(20_000);
  const v = d.view();
  expect(v.busySecs(0)).toBeLessThanOrEqual(19 + LEAD_S);
  expect(v.gpuSecs('window-post') + v.gpuSecs('other')).toBeLessThanOrEqual(19 + LEAD_S);
  expect(v.error('timeline_clock')).toBeGreaterThan(100);
});

test('/status: uptime_secs 1e15 is refused (invalid_snapshot); durations it would make "plausible" move nothing', async () => {
  const daemon = await StatusServer.start();
  const h: Harness = await startHarness({ url: daemon.url, timeoutMs: 2000 });
  try {
    const good = () => JSON.parse(fixture('02-snap-busy-consistent.json').text);
    daemon.serveJson(good());
    await h.source.pollOnce();
    const before = parse((await h.metrics()).body);
    const s = good();
    s.uptime_secs = 1e15;
    for (const w of s.gpu_workers) w.busy_secs = 1e12;
    s.pipelines[0].partitions[9].state = 'done';
    s.pipelines[0].partitions[9].gpu_ms = 1e14;
    daemon.serveJson(s);
    await h.source.pollOnce();
    const x = parse((await h.metrics()).body);
    const busy = (y: typeof x) => y.filter((p) => p.name === 'cuzk_gpu_worker_busy_seconds_total').reduce((a, p) => a + p.value, 0);
    expect(busy(x)).toBeLessThan(1000);
    expect(find(x, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'snap-update' })).toBe(find(before, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'snap-update' }));
    expect(find(x, 'cuzk_exporter_errors_total', { reason: 'invalid_snapshot' })).toBe(1);
  } finally {
    await h.close();
    await daemon.close();
  }
});
