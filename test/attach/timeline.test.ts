/**
 * The TIMELINE surface alone, on real files (DESIGN §7c, issue 10 item 2): cuzk's busy
 * semantics after its race fix (busy from GPU_PICKUP until the GPU_END of the partition
 * picked up last; an older partition's GPU_END leaves it busy), exact per-worker busy
 * seconds and GPU seconds by kind to the millisecond, finalizing partitions, kinds of
 * partitioned jobs, the start-up catch-up from the file's tail (state known, history not
 * counted), and following the file like tail -F: appends, truncation, rotation by rename,
 * a file that is not there yet, standard input, a daemon restart. Every step is scraped
 * through the real server and no counter may go down. Expected numbers come from the
 * script, not from the code.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { promtoolCheckMetrics } from '../helpers/prom-text';
import { MergedHarness, counters, expectMonotonic, sampleValue, startMerged, waitFor } from './merged-harness';

let dir: string;
const open: MergedHarness[] = [];
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-timeline-'));
});
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const A = 'ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50';
const W = 'wpost-f01234-dl17-p0';
const tl = (off: number, ev: string, job: string, detail: string) => `TIMELINE,${off},${ev},${job},${detail}\n`;
/**
 * Script offsets are stretched by K so the script's clock runs far ahead of the test's real
 * time: the exporter exposes a running stint up to the real time the log is known to be
 * read to, and a test that took longer than the script would see that (correctly) grow.
 */
const K = 100;
const ktl = (off: number, ev: string, job: string, detail: string) => tl(off * K, ev, job, detail);
/** Busy seconds of a stint from script offset a to b. */
const busy = (a: number, b: number) => ((b - a) * K) / 1000;

/** A SnapDeals job A (partitions 0, 1 and 10) on worker 0 with split proving, a WindowPoSt on worker 1. */
const SCRIPT = [
  ktl(0, 'SYNTH_START', A, 'partition=0'),
  ktl(0, 'SYNTH_START', A, 'partition=1'),
  'INFO cuzk_core::engine: some other log line, ignored\n',
  ktl(100, 'SYNTH_END', A, 'partition=0,synth_ms=100'),
  ktl(100, 'GPU_QUEUE', A, 'partition=0'),
  ktl(110, 'GPU_PICKUP', A, 'worker=0,partition=0'),
  ktl(120, 'GPU_START', A, 'worker=0,partition=0'),
  ktl(130, 'SYNTH_END', A, 'partition=1,synth_ms=130'),
  ktl(140, 'GPU_PICKUP', A, 'worker=0,partition=1'), // ownership moves; A/0 finalizing
  ktl(141, 'GPU_START', A, 'worker=0,partition=1'), // upstream: right after the pickup, before the GPU mutex wait
  ktl(150, 'SYNTH_START', W, 'kind=window-post'),
  ktl(160, 'SYNTH_END', W, 'synth_ms=10'),
  ktl(161, 'GPU_QUEUE', W, 'monolithic'),
  ktl(165, 'GPU_PICKUP', W, 'worker=1'),
  ktl(166, 'GPU_START', W, 'worker=1'),
  // --- HISTORY_END (the catch-up test writes up to here before attaching) ---
  ktl(900, 'GPU_END', A, 'worker=0,partition=0,gpu_ms=790'), // older partition: worker 0 stays busy
  ktl(950, 'SYNTH_START', A, 'partition=10'), // index >= 10: SnapDeals
  ktl(1000, 'GPU_END', A, 'worker=0,partition=1,gpu_ms=860'), // worker 0 idle: busy 110..1000
  ktl(1500, 'GPU_END', W, 'worker=1,gpu_ms=1335'), // worker 1 busy 165..1500
];
const HISTORY_END = 15;

async function scrape(h: MergedHarness) {
  const m = await h.metrics();
  expect(m.status).toBe(200);
  return m.samples;
}

test('busy semantics, finalizing, kinds: exact seconds per worker and per kind', async () => {
  const file = path.join(dir, 'semantics.log');
  fs.writeFileSync(file, '');
  const h = await startMerged({ timelineFile: file });
  open.push(h);
  const t = h.source.timeline!;
  await t.poll(); // empty file present at start: nothing to catch up
  expect(t.up).toBe(true);
  let prev = counters(await scrape(h));

  const step = async (lines: string[]) => {
    fs.appendFileSync(file, lines.join(''));
    await t.poll();
    const s = await scrape(h);
    const c = counters(s);
    expectMonotonic(prev, c, 'step');
    prev = c;
    return s;
  };

  let s = await step(SCRIPT.slice(0, 10)); // through the ownership move
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBe(1);
  // A's kind is not known yet: its live partitions show under "other".
  expect(sampleValue(s, 'cuzk_partitions', { proof_kind: 'other', state: 'finalizing' })).toBe(1);
  expect(sampleValue(s, 'cuzk_partitions', { proof_kind: 'other', state: 'gpu' })).toBe(1);
  expect(sampleValue(s, 'cuzk_status_mismatch')).toBe(0);

  s = await step(SCRIPT.slice(10, HISTORY_END));
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '1' })).toBe(1);
  expect(sampleValue(s, 'cuzk_partitions', { proof_kind: 'window-post', state: 'gpu' })).toBe(1);
  expect(sampleValue(s, 'cuzk_partition_synthesis_seconds_total', { proof_kind: 'window-post' })).toBe(0.01);

  s = await step(SCRIPT.slice(HISTORY_END, HISTORY_END + 1)); // A/0 ends; worker 0 still owns A/1
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBe(1);
  expect(sampleValue(s, 'cuzk_partitions', { proof_kind: 'other', state: 'finalizing' })).toBe(0);
  // Its 790 ms wait for the kind: not under any kind yet.
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'snap-update' })).toBe(0);

  s = await step(SCRIPT.slice(HISTORY_END + 1)); // partition 10 resolves SnapDeals; the rest ends
  expect(sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: 'unknown', worker: '0' })).toBe(busy(110, 1000));
  expect(sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: 'unknown', worker: '1' })).toBe(busy(165, 1500));
  expect(sampleValue(s, 'cuzk_gpu_worker_partitions_total', { gpu: 'unknown', worker: '0' })).toBe(2);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'snap-update' })).toBe(1.65);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'window-post' })).toBe(1.335);
  expect(sampleValue(s, 'cuzk_partition_synthesis_seconds_total', { proof_kind: 'snap-update' })).toBe(0.23);
  expect(sampleValue(s, 'cuzk_partitions_completed_total', { proof_kind: 'snap-update' })).toBe(2);
  expect(sampleValue(s, 'cuzk_partitions_completed_total', { proof_kind: 'window-post' })).toBe(1);
  expect(sampleValue(s, 'cuzk_partition_gpu_duration_seconds_count', { proof_kind: 'snap-update' })).toBe(2);
  expect(sampleValue(s, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'synthesizing' })).toBe(1);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBe(0);
  expect(sampleValue(s, 'cuzk_surface_up', { surface: 'timeline' })).toBe(1);
  expect(s.find((x) => x.name === 'cuzk_exporter_build_info')!.labels.surfaces).toBe('timeline');
  const st = await h.status();
  expect((st.exporter as Record<string, unknown>).surfaces).toEqual([{ name: 'timeline', target: file, up: true, degraded: [] }]);
  const pipes = st.pipelines as { job_id: string; proof_kind: string }[];
  expect(pipes.map((p) => [p.job_id, p.proof_kind]).sort()).toEqual([[A, 'snap-update'], [W, 'window-post']].sort());
  expect(promtoolCheckMetrics((await h.metrics()).body)).toEqual({ ok: true, output: '' });
});

test('catch-up from the tail: busy workers known, history not counted; appended lines counted', async () => {
  const file = path.join(dir, 'catchup.log');
  // Old history first (a finished job), then the live part of the script.
  const old = [tl(0, 'GPU_PICKUP', 'old-job', 'worker=0,partition=0'), tl(50, 'GPU_END', 'old-job', 'worker=0,partition=0,gpu_ms=50')];
  fs.writeFileSync(file, old.join('') + SCRIPT.slice(0, HISTORY_END).join(''));
  const h = await startMerged({ timelineFile: file });
  open.push(h);
  const t = h.source.timeline!;
  await t.poll();
  let s = await scrape(h);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBe(1);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '1' })).toBe(1);
  expect(sampleValue(s, 'cuzk_partitions_completed_total', { proof_kind: 'other' }) ?? 0).toBe(0);
  expect(sampleValue(s, 'cuzk_partition_synthesis_seconds_total', { proof_kind: 'window-post' })).toBe(0); // history
  expect(sampleValue(s, 'cuzk_gpu_worker_partitions_total', { gpu: 'unknown', worker: '0' })).toBe(0);
  const prev = counters(s);
  fs.appendFileSync(file, SCRIPT.slice(HISTORY_END).join(''));
  await t.poll();
  s = await scrape(h);
  expectMonotonic(prev, counters(s), 'after catch-up');
  // Stints running at attach count from their (known) start; partitions ending after attach count.
  expect(sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: 'unknown', worker: '0' })).toBe(busy(110, 1000));
  expect(sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: 'unknown', worker: '1' })).toBe(busy(165, 1500));
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'snap-update' })).toBe(1.65);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'window-post' })).toBe(1.335);
  expect(sampleValue(s, 'cuzk_partition_synthesis_seconds_total', { proof_kind: 'snap-update' })).toBe(0);
});

test('the catch-up reads at most its bound from a large file and starts at a whole line', async () => {
  const file = path.join(dir, 'big.log');
  const filler = tl(1, 'SYNTH_START', 'filler', 'partition=0').repeat(20_000); // ~0.9 MB
  fs.writeFileSync(file, filler + tl(2, 'GPU_PICKUP', 'late', 'worker=3,partition=1'));
  const h = await startMerged({ timelineFile: file, catchUpBytes: 4096 });
  open.push(h);
  await h.source.timeline!.poll();
  const s = await scrape(h);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '3' })).toBe(1);
  expect(h.source.timeline!.eventsTotal).toBeLessThanOrEqual(Math.ceil(4096 / 40));
  expect(sampleValue(s, 'cuzk_exporter_errors_total', { reason: 'timeline_malformed' })).toBe(0);
});

test('follows like tail -F: missing file, appends, truncation, rotation by rename, daemon restart', async () => {
  const file = path.join(dir, 'follow.log');
  const h = await startMerged({ timelineFile: file });
  open.push(h);
  const t = h.source.timeline!;
  await t.poll();
  let s = await scrape(h);
  expect(t.up).toBe(false);
  expect(sampleValue(s, 'cuzk_surface_up', { surface: 'timeline' })).toBe(0);
  expect(sampleValue(s, 'cuzk_up')).toBe(0);
  expect(sampleValue(s, 'cuzk_exporter_errors_total', { reason: 'timeline_missing' })).toBe(1);
  await t.poll();
  expect(sampleValue(await scrape(h), 'cuzk_exporter_errors_total', { reason: 'timeline_missing' })).toBe(1); // counted once per absence
  let prev = counters(s);
  const check = async (what: string) => {
    await t.poll();
    const x = await scrape(h);
    const c = counters(x);
    expectMonotonic(prev, c, what);
    prev = c;
    return x;
  };

  // Appears after start: everything in it is new (counted).
  fs.writeFileSync(file, ktl(10, 'SYNTH_START', W, 'kind=winning-post') + ktl(20, 'GPU_PICKUP', W, 'worker=0') + ktl(20, 'GPU_START', W, 'worker=0'));
  s = await check('appears');
  expect(t.up).toBe(true);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBe(1);
  // A partial line is held until its end arrives.
  fs.appendFileSync(file, `TIMELINE,${70 * K},GPU_END,` + W);
  s = await check('partial');
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBe(1);
  fs.appendFileSync(file, ',worker=0,gpu_ms=50\n');
  s = await check('completed line');
  expect(sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: 'unknown', worker: '0' })).toBe(busy(20, 70));
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'winning-post' })).toBe(0.05);

  // Rotation by rename: the old file gets one more line (the writer still holds it), then a new file.
  fs.renameSync(file, `${file}.1`);
  fs.appendFileSync(`${file}.1`, ktl(100, 'SYNTH_START', 'w2', 'kind=winning-post') + ktl(110, 'GPU_PICKUP', 'w2', 'worker=1') + ktl(110, 'GPU_START', 'w2', 'worker=1'));
  s = await check('renamed, not yet recreated');
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '1' })).toBe(1);
  fs.writeFileSync(file, ktl(200, 'GPU_END', 'w2', 'worker=1,gpu_ms=90'));
  s = await check('rotated');
  expect(sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: 'unknown', worker: '1' })).toBe(busy(110, 200));
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'winning-post' })).toBe(0.14);

  // Truncation in place (copytruncate), then more lines of the same run.
  fs.truncateSync(file, 0);
  fs.appendFileSync(file, ktl(300, 'SYNTH_START', 'w3', 'kind=window-post') + ktl(310, 'GPU_PICKUP', 'w3', 'worker=0') + ktl(310, 'GPU_START', 'w3', 'worker=0'));
  s = await check('truncated');
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBe(1);

  // Daemon restart: offsets start again near 0. Worker 0's stint ends (counted up to what was
  // seen), the old job is dropped, totals stay, and the new process counts from there.
  const before = sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: 'unknown', worker: '0' })!;
  fs.appendFileSync(file, ktl(320, 'SYNTH_START', 'w3', 'kind=window-post') + ktl(3, 'SYNTH_START', 'n1', 'kind=window-post') + ktl(5, 'GPU_PICKUP', 'n1', 'worker=0') + ktl(5, 'GPU_START', 'n1', 'worker=0') + ktl(25, 'GPU_END', 'n1', 'worker=0,gpu_ms=20'));
  s = await check('restart');
  expect(sampleValue(s, 'cuzk_exporter_errors_total', { reason: 'timeline_restart' })).toBe(1);
  const after = sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: 'unknown', worker: '0' })!;
  // The old stint never ended: it is credited up to what was exposed of it, which is at most
  // its last line and at most 1.5x the longest GPU stage seen (timeline-workers.ts: a stage
  // whose end may never come is not exposed past that); then the new one, exactly.
  expect(after).toBeGreaterThanOrEqual(before + busy(5, 25));
  expect(after).toBeLessThanOrEqual(before + busy(310, 320) + busy(5, 25) + 1e-9);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'window-post' })).toBe(0.02);
  expect(sampleValue(s, 'cuzk_partitions', { proof_kind: 'window-post', state: 'gpu' })).toBe(0); // the old job is gone
  expect(promtoolCheckMetrics((await h.metrics()).body)).toEqual({ ok: true, output: '' });
});

test('standard input ("-"): lines are read as they come, a closed input takes the surface down', async () => {
  const stdin = new PassThrough();
  const h = await startMerged({ timelineFile: '-', stdin, start: true });
  open.push(h);
  const t = h.source.timeline!;
  expect(t.up).toBe(true);
  stdin.write(ktl(10, 'SYNTH_START', W, 'kind=window-post') + ktl(20, 'GPU_PICKUP', W, 'worker=2') + ktl(20, 'GPU_START', W, 'worker=2'));
  await waitFor('the pickup read from stdin', async () => sampleValue((await scrape(h)), 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '2' }) === 1);
  stdin.write(ktl(1020, 'GPU_END', W, 'worker=2,gpu_ms=1000'));
  await waitFor('the GPU_END read from stdin', async () => sampleValue((await scrape(h)), 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '2' }) === 0);
  expect(sampleValue(await scrape(h), 'cuzk_gpu_worker_busy_seconds_total', { gpu: 'unknown', worker: '2' })).toBe(busy(20, 1020));
  expect(sampleValue(await scrape(h), 'cuzk_partition_gpu_seconds_total', { proof_kind: 'window-post' })).toBe(1);
  stdin.end();
  await waitFor('stdin closed', () => !t.up);
  const s = await scrape(h);
  expect(sampleValue(s, 'cuzk_exporter_errors_total', { reason: 'timeline_eof' })).toBe(1);
  expect(sampleValue(s, 'cuzk_up')).toBe(0);
});

test('a partitioned job whose kind never becomes known is counted under "other", and said so', async () => {
  const file = path.join(dir, 'unresolved.log');
  fs.writeFileSync(file, '');
  const h = await startMerged({ timelineFile: file });
  open.push(h);
  const t = h.source.timeline!;
  await t.poll();
  fs.appendFileSync(file, tl(0, 'GPU_PICKUP', 'porep-x', 'worker=0,partition=3') + tl(400, 'GPU_END', 'porep-x', 'worker=0,partition=3,gpu_ms=400'));
  await t.poll();
  let s = await scrape(h);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'other' })).toBeUndefined();
  // A minute of other lines later the quiet job is settled, under "other".
  fs.appendFileSync(file, tl(61_000, 'SYNTH_START', 'wp', 'kind=winning-post') + tl(62_000, 'SYNTH_START', 'wp2', 'kind=winning-post'));
  await t.poll();
  s = await scrape(h);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'other' })).toBe(0.4);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'porep-c2' })).toBe(0);
  expect(sampleValue(s, 'cuzk_exporter_errors_total', { reason: 'timeline_unresolved_kind' })).toBe(1);
});

test('a daemon restart forgets TIMELINE\'s workers: with no worker seen yet in the new run, no worker series is left (the topology is composed again, not kept from before)', async () => {
  const file = path.join(dir, 'restart-topology.log');
  fs.writeFileSync(file, '');
  const h = await startMerged({ timelineFile: file });
  open.push(h);
  const t = h.source.timeline!;
  await t.poll();
  fs.appendFileSync(
    file,
    ktl(10, 'SYNTH_START', W, 'kind=winning-post') +
      ktl(20, 'GPU_PICKUP', W, 'worker=0') +
      ktl(20, 'GPU_START', W, 'worker=0') +
      ktl(30, 'GPU_END', W, 'worker=0,gpu_ms=10') +
      ktl(40, 'GPU_PICKUP', W, 'worker=1') +
      ktl(40, 'GPU_START', W, 'worker=1') +
      ktl(50, 'GPU_END', W, 'worker=1,gpu_ms=10'),
  );
  await t.poll();
  let s = await scrape(h);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBe(0);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '1' })).toBe(0);
  // The new process writes its first job's synthesis; no worker has picked anything up yet.
  fs.appendFileSync(file, ktl(3, 'SYNTH_START', 'n1', 'kind=window-post'));
  await t.poll();
  s = await scrape(h);
  expect(sampleValue(s, 'cuzk_exporter_errors_total', { reason: 'timeline_restart' })).toBe(1);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBeUndefined();
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '1' })).toBeUndefined();
  // Its first pickup brings that worker back.
  fs.appendFileSync(file, ktl(5, 'GPU_PICKUP', 'n1', 'worker=1') + ktl(5, 'GPU_START', 'n1', 'worker=1'));
  await t.poll();
  s = await scrape(h);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '1' })).toBe(1);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBeUndefined();
});
