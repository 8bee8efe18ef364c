/**
 * The gRPC surface alone (DESIGN §7b, issue 10 item 1), against a real grpc-js server with
 * our proto on a real unix socket or TCP port: proof counters from GetMetrics' per-kind
 * counters (PoSt included) by difference from a baseline, exact and monotonic across a
 * daemon restart, a stopped server and a removed socket; workers (one GPUStatus per worker),
 * GPU names and queue depth from GetStatus; and bad answers — refused, hang past the
 * deadline, an error, bytes that are not the message, answers over the size limit, huge
 * strings, garbage in the metrics text — each counted by reason, the process alive and
 * /metrics clean for promtool.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { grpcTarget } from '../../src/engine/sources/attach/grpc-surface';
import { metricsKindIndex, parseCuzkMetrics } from '../../src/engine/sources/attach/grpc-wire';
import { promtoolCheckMetrics } from '../helpers/prom-text';
import { FakeCuzkGrpc, cuzkMetricsText } from './grpc-server';
import { MergedHarness, counters, expectMonotonic, sampleValue, startMerged } from './merged-harness';

let dir: string;
const open: MergedHarness[] = [];
const servers: FakeCuzkGrpc[] = [];
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-grpc-'));
});
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  for (const s of servers.splice(0)) await s.stop();
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function fake(bind: string): Promise<FakeCuzkGrpc> {
  const f = await FakeCuzkGrpc.start(bind);
  servers.push(f);
  return f;
}

async function harness(address: string, o: { timeoutMs?: number; maxBodyBytes?: number } = {}): Promise<MergedHarness> {
  const h = await startMerged({ grpcAddress: address, ...o });
  open.push(h);
  return h;
}

async function poll(h: MergedHarness) {
  await h.source.grpc!.pollMetrics();
  await h.source.grpc!.pollStatus();
  const m = await h.metrics();
  expect(m.status).toBe(200);
  return m.samples;
}

test('addresses: unix sockets and host:port, with readable errors', () => {
  expect(grpcTarget('unix:///run/curio/cuzk.sock')).toBe('unix:///run/curio/cuzk.sock');
  expect(grpcTarget('127.0.0.1:9820')).toBe('127.0.0.1:9820');
  expect(grpcTarget('0.0.0.0:9820')).toBe('127.0.0.1:9820');
  expect(grpcTarget('prover-1:9820')).toBe('prover-1:9820');
  expect(grpcTarget('[::1]:9820')).toBe('[::1]:9820');
  expect(() => grpcTarget('unix://relative.sock')).toThrow(/absolute path/);
  expect(() => grpcTarget('http://127.0.0.1:9820')).toThrow(/no http:\/\//);
  expect(() => grpcTarget('127.0.0.1')).toThrow(/host:port/);
  expect(() => grpcTarget('127.0.0.1:70000')).toThrow(/out of range/);
});

test("cuzk's metrics text: per-kind counters without _total, kinds spelled with underscores, the summary ignored", () => {
  const m = parseCuzkMetrics(cuzkMetricsText({ uptime: 77, completed: { porep_c2: 3, window_post: 9 }, failed: { winning_post: 1 }, queue: 4, workers: 8 }));
  expect(m).toMatchObject({ uptimeSeconds: 77, totalCompleted: 12, totalFailed: 1, queueDepth: 4, runningJobs: 1, gpuWorkers: 8, bad: 0 });
  expect([...m.completed]).toEqual([['porep_c2', 3], ['window_post', 9]]);
  expect(metricsKindIndex('window_post')).toBe(2);
  expect(metricsKindIndex('snap_update')).toBe(1);
  const bad = parseCuzkMetrics('cuzk_uptime_seconds 5\ncuzk_proofs_completed{proof_kind="porep_c2"} -1\ncuzk_proofs_completed{proof_kind="x"} NaN\ncuzk_queue_depth{a="b"} 3\nrandom garbage line\n\u0000\u0001\n');
  expect(bad.uptimeSeconds).toBe(5);
  expect(bad.completed.size).toBe(0);
  expect(bad.bad).toBe(3);
});

test('gRPC alone over a unix socket: PoSt counted, workers and GPUs from GetStatus, exact across a restart and a removed socket', async () => {
  const sock = path.join(dir, 'cuzk.sock');
  const f = await fake(`unix://${sock}`);
  f.metricsText = cuzkMetricsText({ uptime: 1000, completed: { porep_c2: 5, window_post: 40 }, failed: { winning_post: 2 } });
  f.workers = [{ ordinal: 0, job: 'wpost-dl17', kind: 'window-post' }, { ordinal: 0 }, { ordinal: 1, job: 'snap-1', kind: 'snap-update' }, { ordinal: 1 }];
  f.queues = [{ proof_kind: 'porep-c2', pending: 3, in_progress: 0 }, { proof_kind: 'window-post', pending: 1, in_progress: 1 }];
  const h = await harness(`unix://${sock}`);
  let s = await poll(h);
  // Baseline: what finished before we attached is not ours.
  for (const k of ['porep-c2', 'snap-update', 'window-post', 'winning-post']) expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: k })).toBe(0);
  expect(sampleValue(s, 'cuzk_up')).toBe(1);
  expect(sampleValue(s, 'cuzk_surface_up', { surface: 'grpc' })).toBe(1);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '0' })).toBe(1); // the WindowPoSt: seen here
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: '1', worker: '3' })).toBe(0);
  expect(sampleValue(s, 'cuzk_gpu_info', { gpu: '1', name: 'NVIDIA RTX 6000 Ada (1)' })).toBe(1);
  expect(sampleValue(s, 'cuzk_queue_depth', { proof_kind: 'porep-c2' })).toBe(3);
  expect(sampleValue(s, 'cuzk_queue_depth', { proof_kind: 'window-post' })).toBe(1);
  expect(s.find((x) => x.name === 'cuzk_exporter_build_info')!.labels.surfaces).toBe('grpc');
  let prev = counters(s);
  const step = async (what: string) => {
    const x = await poll(h);
    const c = counters(x);
    expectMonotonic(prev, c, what);
    prev = c;
    return x;
  };

  f.metricsText = cuzkMetricsText({ uptime: 1005, completed: { porep_c2: 6, window_post: 43, winning_post: 7 }, failed: { winning_post: 2 } });
  s = await step('deltas');
  expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: 'porep-c2' })).toBe(1);
  expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: 'window-post' })).toBe(3);
  expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: 'winning-post' })).toBe(7); // a kind new since the baseline
  expect(sampleValue(s, 'cuzk_proofs_failed_total', { proof_kind: 'winning-post' })).toBe(0);

  // The daemon goes away (socket removed): the surface is down, counters stand still.
  await f.stop();
  fs.rmSync(sock, { force: true });
  s = await step('gone');
  expect(sampleValue(s, 'cuzk_up')).toBe(0);
  expect(sampleValue(s, 'cuzk_surface_up', { surface: 'grpc' })).toBe(0);
  expect(sampleValue(s, 'cuzk_exporter_errors_total', { reason: 'grpc_unavailable' })).toBeGreaterThanOrEqual(2);
  expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: 'window-post' })).toBe(3);
  expect(h.source.ready().ok).toBe(false);

  // It comes back restarted (new socket, counters from 0, uptime small): everything it shows is new.
  f.metricsText = cuzkMetricsText({ uptime: 3, completed: { window_post: 2 }, failed: { porep_c2: 1 } });
  f.workers = [{ ordinal: 0 }, { ordinal: 0 }];
  await f.listen(`unix://${sock}`);
  s = await step('restarted');
  // The channel reconnects after its backoff: wait on that (a count of immediate polls ran
  // out first on a busy box), polling every 20 ms for up to 20 s.
  for (const until = Date.now() + 20_000; sampleValue(s, 'cuzk_up') !== 1 && Date.now() < until; ) {
    await new Promise((r) => setTimeout(r, 20));
    s = await step('reconnecting');
  }
  expect(sampleValue(s, 'cuzk_up')).toBe(1);
  expect(sampleValue(s, 'cuzk_exporter_errors_total', { reason: 'grpc_restart' })).toBe(1);
  expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: 'window-post' })).toBe(5);
  expect(sampleValue(s, 'cuzk_proofs_failed_total', { proof_kind: 'porep-c2' })).toBe(1);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: '1', worker: '2' })).toBeUndefined(); // workers it no longer has are gone
  // Worker 0's WindowPoSt stint (seen busy in one sample, then gone) is credited up to its last sample.
  expect(sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: '0', worker: '0' })).toBeGreaterThan(0);
  expect(promtoolCheckMetrics((await h.metrics()).body)).toEqual({ ok: true, output: '' });
});

test('bad answers: refused, hang past the deadline, errors, not a message, too large, huge strings, garbage text', async () => {
  // Refused: nothing listens there.
  const nothing = await harness('127.0.0.1:1', { timeoutMs: 5000 });
  let s = await poll(nothing);
  expect(sampleValue(s, 'cuzk_up')).toBe(0);
  expect(sampleValue(s, 'cuzk_exporter_errors_total', { reason: 'grpc_unavailable' })).toBe(2);

  const f = await fake('127.0.0.1:0');
  f.metricsText = cuzkMetricsText({ uptime: 50, completed: { porep_c2: 1 } });
  // The deadline must be long enough for every good call on a loaded machine (CI shares 2
  // cores): only the hung daemon below is meant to reach it.
  const h = await harness(f.address, { timeoutMs: 5000, maxBodyBytes: 64 * 1024 });
  s = await poll(h);
  expect(sampleValue(s, 'cuzk_up')).toBe(1);
  const reason = (r: string) => sampleValue(s, 'cuzk_exporter_errors_total', { reason: r });

  f.metrics = 'hang';
  f.status = 'hang';
  s = await poll(h); // returns: the deadline ends the hung calls
  expect(reason('grpc_deadline')).toBe(2);
  expect(sampleValue(s, 'cuzk_up')).toBe(0);

  f.metrics = 'error';
  f.status = 'error';
  s = await poll(h);
  expect(reason('grpc_error')).toBe(2);

  f.metrics = 'garbage';
  f.status = 'garbage';
  s = await poll(h);
  expect(reason('grpc_bad_response')).toBe(2);

  f.metrics = 'ok';
  f.status = 'ok';
  f.metricsText = 'x'.repeat(200 * 1024); // over --cuzk.max-body-bytes
  s = await poll(h);
  expect(reason('grpc_too_large')).toBe(1);

  f.metricsText = `not metrics at all\n${'\u0000'.repeat(10)}\n`;
  f.workers = [{ ordinal: 0, job: 'j'.repeat(5000), kind: 'window-post' }]; // a 5 KB job id
  s = await poll(h);
  expect(reason('grpc_bad_response')).toBe(4);

  f.metricsText = cuzkMetricsText({ uptime: 60, completed: { porep_c2: 2, quantum_post: 5 } }) + 'cuzk_proofs_completed{proof_kind="porep_c2"} banana\n';
  f.workers = [{ ordinal: 0, job: 'j1', kind: 'window-post' }];
  s = await poll(h);
  expect(sampleValue(s, 'cuzk_up')).toBe(1);
  expect(reason('unknown_proof_kind')).toBe(1);
  expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: 'porep-c2' })).toBe(1);
  expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: 'other' })).toBe(5);
  expect(promtoolCheckMetrics((await h.metrics()).body)).toEqual({ ok: true, output: '' });
});
