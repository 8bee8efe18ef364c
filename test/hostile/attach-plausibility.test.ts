/**
 * Issue 12, cases 4 and 5: a buggy or hostile daemon cannot poison counters, grow our
 * memory, or churn series. Real HTTP stand-in for cuzk's /status, the real AttachSource,
 * Telemetry and server (test/attach/harness.ts), fixture 02 as the good snapshot.
 *  - a per-kind counter going down while uptime and totals rise: counted skip, never re-added;
 *  - gpu_ms 1e18 (longer than the daemon has been up): counted skip, no counter moves;
 *  - per-kind counters adding up past their total: counted skip;
 *  - unknown fields are capped, not re-served verbatim (a 2 MB field stays out of /status);
 *  - nesting deeper than 64 levels: the snapshot is refused (counted), /status stays 200;
 *  - GPUs whose names change every poll: one identity per GPU, no new series per poll;
 *  - the gRPC surface: the same oscillating per-kind counter (GetMetrics) is never re-added;
 *  - SIGTERM while a poll hangs on the daemon: the process ends now, not at --cuzk.timeout.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { GrpcSurface } from '../../src/engine/sources/attach/grpc-surface';
import { silentLogger } from '../../src/util/logger';
import { find, parse, promtoolCheckMetrics, Sample, value } from '../helpers/prom-text';
import { Harness, startHarness, warnings } from '../attach/harness';
import { startMerged } from '../attach/merged-harness';
import { fixture } from '../attach/snapshots';
import { StatusServer } from '../attach/status-server';
import { killAll, startCli } from './cli-helpers';
import { request, tempDir } from './web-helpers';

const GOOD = fixture('02-snap-busy-consistent.json');
type Snap = Record<string, any>;
const good = (f: (s: Snap) => void = () => {}): Snap => {
  const s = JSON.parse(GOOD.text) as Snap;
  f(s);
  return s;
};

let daemon: StatusServer;
let h: Harness;
beforeEach(async () => {
  daemon = await StatusServer.start();
  h = await startHarness({ url: daemon.url, timeoutMs: 2000 });
});
afterEach(async () => {
  await h.close();
  await daemon.close();
  await killAll();
});

async function poll(s: Snap | string): Promise<Sample[]> {
  if (typeof s === 'string') daemon.behaviour = { kind: 'body', body: s };
  else daemon.serveJson(s);
  await h.source.pollOnce();
  const { status, body } = await h.metrics();
  expect(status).toBe(200);
  const lint = promtoolCheckMetrics(body);
  if (lint.skipped === undefined) expect(lint).toEqual({ ok: true, output: '' });
  return parse(body);
}
const completed = (x: Sample[], kind: string) => find(x, 'cuzk_proofs_completed_total', { proof_kind: kind }) ?? 0;
const errors = (x: Sample[], reason: string) => find(x, 'cuzk_exporter_errors_total', { reason }) ?? 0;

test('a per-kind counter that drops while uptime and totals rise is a counted skip, never re-added', async () => {
  await poll(good());
  let uptime = 6010.03;
  let total = 38;
  let snap = 31;
  // Five rounds: the real counter grows by one proof each round; in between, the daemon
  // reports snap-update at 0 while its total and uptime keep rising.
  let last: Sample[] = [];
  for (let round = 0; round < 5; round++) {
    uptime += 1;
    total += 1;
    snap += 1;
    last = await poll(good((s) => ((s.uptime_secs = uptime), (s.counters.total_completed = total), (s.counters.completed_by_kind['snap-update'] = snap))));
    uptime += 1;
    last = await poll(good((s) => ((s.uptime_secs = uptime), (s.counters.total_completed = total), (s.counters.completed_by_kind['snap-update'] = 0))));
  }
  expect(completed(last, 'snap-update')).toBe(5); // exactly the five real proofs, not 5 × 31
  expect(errors(last, 'implausible')).toBe(5);
  expect(errors(last, 'restart')).toBe(0);
  expect(warnings(h.logs).filter((l) => /per-kind counters went down/.test(l.msg))).toHaveLength(1);
  // A real restart (uptime back to near 0: the new process started since the last look)
  // still resets the baselines: its counts are new.
  last = await poll(good((s) => ((s.uptime_secs = 2), (s.counters.total_completed = 3), (s.counters.completed_by_kind = { 'snap-update': 3 }), (s.counters.total_failed = 0), (s.counters.failed_by_kind = {}), (s.pipelines = []))));
  expect(errors(last, 'restart')).toBe(1);
  expect(completed(last, 'snap-update')).toBe(8);
});

test('gpu_ms 1e18 (longer than the daemon has been up) is a counted skip; no counter moves', async () => {
  const before = await poll(good());
  const gpuBefore = find(before, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'snap-update' });
  // Partition 9 (on the GPU) ends with an absurd duration.
  const bad = await poll(good((s) => ((s.pipelines[0].partitions[9].state = 'done'), (s.pipelines[0].partitions[9].gpu_ms = 1e18))));
  expect(find(bad, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'snap-update' })).toBe(gpuBefore);
  expect(errors(bad, 'implausible')).toBe(1);
  expect(warnings(h.logs).some((l) => /gpu_ms 1000000000000000000 is longer than the daemon has been up/.test(l.msg))).toBe(true);
  // The job is kept as last seen (its partitions still count), not dropped.
  expect(find(bad, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'gpu' })).toBe(2);
  // busy_secs and started_secs_ago beyond the uptime, too.
  const more = await poll(good((s) => ((s.gpu_workers[0].busy_secs = 1e9), (s.pipelines[0].started_secs_ago = 1e9))));
  expect(errors(more, 'implausible')).toBe(3);
});

test('per-kind counters adding up past the total are a counted skip (the counters section is kept as last seen)', async () => {
  await poll(good());
  const x = await poll(good((s) => ((s.uptime_secs += 5), (s.counters.completed_by_kind['snap-update'] = 1_000_000))));
  expect(completed(x, 'snap-update')).toBe(0);
  expect(errors(x, 'implausible')).toBe(1);
});

test('unknown fields are capped, not re-served verbatim: a 2 MB field stays out of /status', async () => {
  await poll(good());
  const x = await poll(good((s) => ((s.x_blob = 'z'.repeat(2 * 1024 * 1024)), (s.small_extra = { a: 1 }), (s.pipelines[0].extra_note = 'kept'))));
  expect(value(x, 'cuzk_up')).toBe(1);
  expect(errors(x, 'bad_field')).toBe(1);
  const res = await request(`${h.server.url}/status`);
  expect(res.status).toBe(200);
  expect(res.body.length).toBeLessThan(64 * 1024);
  const st = JSON.parse(res.body) as Snap;
  expect(st.x_blob).toBeUndefined();
  expect(st.small_extra).toEqual({ a: 1 }); // small unknown fields are still passed on
  expect(st.pipelines[0].extra_note).toBe('kept');
  expect(st.allocations).toEqual(good().allocations); // cuzk's own sections, whole
});

test('nesting deeper than 64 levels is refused (counted); /status and the page keep answering', async () => {
  await poll(good());
  const deep = JSON.stringify(good()).replace(/}$/, `,"nested":${'['.repeat(5000)}${']'.repeat(5000)}}`);
  const x = await poll(deep);
  expect(value(x, 'cuzk_up')).toBe(0);
  expect(errors(x, 'invalid_snapshot')).toBe(1);
  expect(warnings(h.logs).some((l) => /nested deeper than 64 levels/.test(l.msg))).toBe(true);
  for (const p of ['/status', '/']) expect((await request(`${h.server.url}${p}`)).status).toBe(200);
});

test('GPUs whose names change on every poll: one identity per GPU (no new cuzk_gpu_info series per poll)', async () => {
  const gpus = (poll: number) => Array.from({ length: 1024 }, (_, i) => ({ ordinal: i, name: `gpu-${i}-poll-${poll}`, uuid: `GPU-${poll}-${i}`, pci_bus_id: null }));
  const seen = new Set<string>();
  let last: Sample[] = [];
  for (let p = 0; p < 5; p++) {
    last = await poll(good((s) => (s.gpus = gpus(p))));
    for (const s of last.filter((x) => x.name === 'cuzk_gpu_info')) seen.add(JSON.stringify(s.labels));
  }
  expect(last.filter((x) => x.name === 'cuzk_gpu_info')).toHaveLength(1024);
  expect(seen.size).toBe(1024); // the same 1024 series every time, with the first names
  expect(find(last, 'cuzk_gpu_info', { gpu: '7', name: 'gpu-7-poll-0', uuid: 'GPU-0-7' })).toBe(1);
  expect(errors(last, 'implausible')).toBe(4);
});

test('gRPC GetMetrics: an oscillating per-kind counter is never re-added', () => {
  const errs = new ErrorCounts();
  const g = new GrpcSurface({ address: '127.0.0.1:1', pollIntervalMs: 5000, statusIntervalMs: 5000, timeoutMs: 1000, maxMessageBytes: 1 << 20, logger: silentLogger, errors: errs });
  const text = (uptime: number, total: number, snap: number) => ({
    uptimeSeconds: uptime, totalCompleted: total, totalFailed: 0, queueDepth: 0, runningJobs: 0, gpuWorkers: 2, completed: new Map([['snap_update', snap]]), failed: new Map<string, number>(), bad: 0,
  });
  g.applyMetrics(text(100, 40, 40));
  for (let i = 1; i <= 5; i++) {
    g.applyMetrics(text(100 + 2 * i, 40 + i, 40 + i));
    g.applyMetrics(text(101 + 2 * i, 40 + i, 0));
  }
  const snapSlot = 1; // kinds.ts: porep-c2, snap-update, …
  expect(g.kProofsCompleted[snapSlot]).toBe(5);
  expect(errs.get('implausible')).toBe(5);
  expect(errs.get('grpc_restart')).toBe(0);
  void g.stop();
});

test('TIMELINE: a gpu_ms longer than the engine has been running (its offset) is a counted skip', async () => {
  const file = path.join(tempDir('cuzk-tl-'), 'cuzk.log');
  fs.writeFileSync(file, '');
  const m = await startMerged({ timelineFile: file });
  try {
    const t = m.source.timeline!;
    await t.poll();
    const lines = [
      `TIMELINE,5000,SYNTH_START,wpost-a,kind=window-post\n`,
      `TIMELINE,5010,SYNTH_END,wpost-a,synth_ms=10\n`,
      `TIMELINE,5020,GPU_PICKUP,wpost-a,worker=0\n`,
      `TIMELINE,5100,GPU_END,wpost-a,worker=0,gpu_ms=999999999999999\n`,
      `TIMELINE,6000,SYNTH_START,wpost-b,kind=window-post\n`,
      `TIMELINE,6010,SYNTH_END,wpost-b,synth_ms=10\n`,
      `TIMELINE,6020,GPU_PICKUP,wpost-b,worker=0\n`,
      `TIMELINE,6520,GPU_END,wpost-b,worker=0,gpu_ms=500\n`,
    ];
    fs.appendFileSync(file, lines.join(''));
    await t.poll();
    const { samples } = await m.metrics();
    expect(find(samples, 'cuzk_exporter_errors_total', { reason: 'implausible' })).toBe(1);
    // Only the plausible partition's 0.5 s reached the GPU-time counter.
    expect(find(samples, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'window-post' })).toBeCloseTo(0.5, 6);
  } finally {
    await m.close();
  }
});

test('TIMELINE: a GPU_END (SYNTH_END) claiming more gpu_ms (synth_ms) than has passed since its pickup (SYNTH_START) counts only that span (engine.rs: both measured after those lines)', async () => {
  const file = path.join(tempDir('cuzk-tl-'), 'cuzk.log');
  fs.writeFileSync(file, '');
  const m = await startMerged({ timelineFile: file });
  try {
    const t = m.source.timeline!;
    await t.poll();
    // Up 1000 s; each GPU_END claims 900 s (less than the uptime, so the old bound passed it)
    // 10 ms after its pickup. Ten such jobs were 9000 GPU seconds in 100 ms.
    const lines: string[] = [];
    for (let i = 0; i < 10; i++) {
      const o = 1_000_000 + i * 10;
      lines.push(`TIMELINE,${o},SYNTH_START,wpost-${i},kind=window-post\n`, `TIMELINE,${o + 1},SYNTH_END,wpost-${i},synth_ms=1\n`);
      lines.push(`TIMELINE,${o + 2},GPU_PICKUP,wpost-${i},worker=0\n`, `TIMELINE,${o + 3},GPU_START,wpost-${i},worker=0\n`);
      lines.push(`TIMELINE,${o + 9},GPU_END,wpost-${i},worker=0,gpu_ms=900000\n`);
    }
    // A SYNTH_END likewise: 800 s of synthesis claimed 5 ms after its SYNTH_START.
    lines.push(`TIMELINE,1000500,SYNTH_START,wpost-s,kind=window-post\n`, `TIMELINE,1000505,SYNTH_END,wpost-s,synth_ms=800000\n`);
    // An honest one: gpu_ms one ms over the span its lines show (both truncated to whole ms).
    lines.push(`TIMELINE,1001000,SYNTH_START,wpost-ok,kind=window-post\n`, `TIMELINE,1001002,SYNTH_END,wpost-ok,synth_ms=3\n`);
    lines.push(`TIMELINE,1001002,GPU_PICKUP,wpost-ok,worker=0\n`, `TIMELINE,1001502,GPU_END,wpost-ok,worker=0,gpu_ms=501\n`);
    fs.appendFileSync(file, lines.join(''));
    await t.poll();
    const { samples } = await m.metrics();
    expect(find(samples, 'cuzk_exporter_errors_total', { reason: 'implausible' })).toBe(11);
    // 10 x 1 ms of synthesis, 5 ms for the claimed 800 s, and the honest 3 ms.
    expect(find(samples, 'cuzk_partition_synthesis_seconds_total', { proof_kind: 'window-post' })).toBeCloseTo(0.01 + 0.005 + 0.003, 6);
    // 10 x 7 ms seen between pickup and end, and the honest 0.501 s.
    expect(find(samples, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'window-post' })).toBeCloseTo(10 * 0.007 + 0.501, 6);
    expect(find(samples, 'cuzk_partitions_completed_total', { proof_kind: 'window-post' })).toBe(11);
  } finally {
    await m.close();
  }
});

test('SIGTERM while a poll hangs on the daemon ends the process now, not at --cuzk.timeout', async () => {
  daemon.behaviour = { kind: 'hang' };
  const cli = startCli(['attach', '--cuzk.status-url', daemon.url, '--cuzk.timeout', '60s', '--web.listen-address', '127.0.0.1:0']);
  await cli.url;
  const until = Date.now() + 10_000;
  while (daemon.requests === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  expect(daemon.requests).toBeGreaterThan(0); // the poll is hung
  const t0 = Date.now();
  cli.child.kill('SIGTERM');
  const { code } = await cli.exited;
  expect(code).toBe(0);
  expect(Date.now() - t0).toBeLessThan(10_000); // not the 60 s timeout
});
