/**
 * Issue #4, acceptance 1: attached to a stand-in cuzk daemon (a real HTTP server on
 * 127.0.0.1 serving the fixture files byte for byte), the exporter's /metrics shows the
 * historical status bug of fixture 03 as cuzk_status_mismatch 1, and the consistent
 * fixture 02 as 0 — through the real AttachSource, Telemetry and HTTP server.
 */
import { find, promtoolCheckMetrics, value } from '../helpers/prom-text';
import { Harness, startHarness } from './harness';
import { fixture } from './snapshots';
import { StatusServer } from './status-server';

let daemon: StatusServer;
let h: Harness;

beforeEach(async () => {
  daemon = await StatusServer.start();
  h = await startHarness({ url: daemon.url });
});

afterEach(async () => {
  await h.close();
  await daemon.close();
});

async function attachTo(name: string): Promise<string> {
  daemon.behaviour = { kind: 'body', body: fixture(name).text };
  const before = daemon.requests;
  await h.source.pollOnce();
  expect(daemon.requests).toBe(before + 1);
  const { status, body } = await h.metrics();
  expect(status).toBe(200);
  const lint = promtoolCheckMetrics(body);
  if (lint.skipped !== undefined) console.warn(lint.skipped);
  else expect(lint).toEqual({ ok: true, output: '' });
  return body;
}

const worker = (w: number) => ({ gpu: '0', worker: String(w) });

test('fixture 03 (workers idle, partitions on the GPU): mismatch 1, two snap-update partitions in gpu, both workers idle', async () => {
  const body = await attachTo('03-workers-idle-partitions-on-gpu.json');
  expect(value(body, 'cuzk_up')).toBe(1);
  expect(value(body, 'cuzk_status_mismatch')).toBe(1);
  expect(find(body, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'gpu' })).toBe(2);
  expect(find(body, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'synthesizing' })).toBe(3);
  expect(find(body, 'cuzk_gpu_worker_busy', worker(0))).toBe(0);
  expect(find(body, 'cuzk_gpu_worker_busy', worker(1))).toBe(0);
  expect(find(body, 'cuzk_gpu_worker_busy', worker(2))).toBeUndefined();

  // /status re-serves the daemon's body unchanged, plus the exporter's view of it.
  const st = await h.status();
  const { exporter, ...daemonPart } = st as { exporter: Record<string, unknown> };
  expect(daemonPart).toEqual(fixture('03-workers-idle-partitions-on-gpu.json').json);
  expect(exporter).toMatchObject({ source: 'attach', backend: 'cuzk', up: true, status_mismatch: true, partitions_on_gpu: 2, busy_workers: 0 });
  expect(typeof exporter.snapshot_age_secs).toBe('number');
});

test('fixture 02 (consistent): mismatch 0, both workers busy', async () => {
  const body = await attachTo('02-snap-busy-consistent.json');
  expect(value(body, 'cuzk_up')).toBe(1);
  expect(value(body, 'cuzk_status_mismatch')).toBe(0);
  expect(find(body, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'gpu' })).toBe(2);
  expect(find(body, 'cuzk_gpu_worker_busy', worker(0))).toBe(1);
  expect(find(body, 'cuzk_gpu_worker_busy', worker(1))).toBe(1);
  // Each worker's running stint as the daemon reports it (busy_secs), at the poll.
  expect(find(body, 'cuzk_gpu_worker_current_partition_seconds', worker(0))).toBeCloseTo(0.312, 9);
  expect(find(body, 'cuzk_gpu_worker_current_partition_seconds', worker(1))).toBeCloseTo(0.088, 9);
  const st = await h.status();
  expect(st.exporter).toMatchObject({ up: true, status_mismatch: false, partitions_on_gpu: 2, busy_workers: 2 });
});

test('fixtures 01 and 04: idle box; PoRep with a failed partition and a queued WindowPoSt', async () => {
  const idleBody = await attachTo('01-idle.json');
  expect(value(idleBody, 'cuzk_status_mismatch')).toBe(0);
  expect(find(idleBody, 'cuzk_gpu_worker_busy', worker(0))).toBe(0);
  expect(find(idleBody, 'cuzk_gpu_worker_busy', worker(1))).toBe(0);
  expect(find(idleBody, 'cuzk_memory_used_bytes')).toBe(98784247808);

  // A different daemon process (uptime 812 s < 5321 s) answering a moment later: it cannot
  // have started since the last look, so it is another daemon at this address: refused
  // (counted) — until it answers consistently three times in a row: then it is the daemon
  // now, a restart (plausibility.ts IdentityGuard).
  for (let i = 0; i < 2; i++) expect(value(await attachTo('04-porep-partition-failed.json'), 'cuzk_exporter_errors_total', { reason: 'conflict' })).toBe(i + 1);
  const body = await attachTo('04-porep-partition-failed.json');
  expect(value(body, 'cuzk_status_mismatch')).toBe(0);
  expect(value(body, 'cuzk_exporter_errors_total', { reason: 'restart' })).toBe(1);
  expect(find(body, 'cuzk_partitions', { proof_kind: 'porep-c2', state: 'gpu' })).toBe(1);
  // Its job failed (partition 6): upstream picks the synthesized partition 8 up and skips it
  // (engine.rs GPU worker, "skipping GPU prove for failed partitioned job"): not live.
  expect(find(body, 'cuzk_partitions', { proof_kind: 'porep-c2', state: 'synth_done' })).toBe(0);
  expect(find(body, 'cuzk_partitions', { proof_kind: 'porep-c2', state: 'synthesizing' })).toBe(1);
  expect(find(body, 'cuzk_partitions', { proof_kind: 'window-post', state: 'pending' })).toBe(1);
  expect(find(body, 'cuzk_queue_depth', { proof_kind: 'window-post' })).toBe(1);
  expect(find(body, 'cuzk_gpu_worker_busy', worker(0))).toBe(1);
  // Fixture 04 has one worker: worker 1 of the previous process is gone from /metrics.
  expect(find(body, 'cuzk_gpu_worker_busy', worker(1))).toBeUndefined();
  expect(find(body, 'cuzk_gpu_worker_busy_seconds_total', worker(1))).toBeUndefined();
  // Everything in a restarted daemon's snapshot happened after our last look: the six
  // finished partitions and the failed one count (GPU ms as cuzk reports them).
  const gpuMs = 2140 + 2101 + 2166 + 2098 + 2120 + 2133 + 1710;
  expect(value(body, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'porep-c2' })).toBe((gpuMs * 1e6) / 1e9);
  expect(value(body, 'cuzk_partitions_completed_total', { proof_kind: 'porep-c2' })).toBe(6);
  expect(value(body, 'cuzk_partitions_failed_total', { proof_kind: 'porep-c2' })).toBe(1);
  expect(value(body, 'cuzk_proofs_completed_total', { proof_kind: 'porep-c2' })).toBe(3);
});
