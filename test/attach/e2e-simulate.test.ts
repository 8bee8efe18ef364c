/**
 * Issue 10's end-to-end acceptance, no mocks of our own code: `cuzk-exporter simulate` (the
 * reference engine behind cuzk's three surfaces, cuzk's blind spots on) runs a mixed
 * workload with WindowPoSt and WinningPoSt; one `cuzk-exporter attach` reads all three
 * surfaces, another only /status. Against the engine's native counters (the ground truth):
 *  - all three: per-worker busy seconds within 1 ms per partition (TIMELINE has whole ms),
 *    partition GPU seconds by kind to the ms, partitions and proofs completed by kind
 *    exact, PoSt GPU time non-zero and right;
 *  - /status alone: today's blindness — no PoSt proof, no PoSt GPU second, less worker time.
 * Both exporters are the compiled CLI (dist/, built by the jest global setup), each in its
 * own process group, killed in afterAll.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse, promtoolCheckMetrics, Sample } from '../helpers/prom-text';
import { getJson, grpcClient, killAll, startSim, waitFor } from '../sim/sim-process';
import { sampleValue } from './merged-harness';

const CLI = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');
const KINDS = ['porep-c2', 'snap-update', 'window-post', 'winning-post'] as const;

let tmp: string;
const exporters: ChildProcess[] = [];

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-e2e-attach-'));
});

afterAll(() => {
  for (const c of exporters) {
    if (c.exitCode !== null || c.signalCode !== null || c.pid === undefined) continue;
    try {
      process.kill(-c.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  killAll();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Starts `cuzk-exporter attach` with these flags; resolves with its metrics URL. */
function startAttach(args: string[]): Promise<{ metricsUrl: string; child: ChildProcess; stderr: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'attach', '--web.listen-address', '127.0.0.1:0', '--cuzk.poll-interval', '100ms', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    exporters.push(child);
    let out = '';
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const timer = setTimeout(() => reject(new Error(`attach did not start: ${out}\n${err}`)), 30_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /metrics:\s+(http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ metricsUrl: m[1], child, stderr: () => err });
      }
    });
    child.on('exit', (code) => reject(new Error(`attach exited (${code}): ${err}`)));
  });
}

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
  return parse(await res.text());
}

const sumOf = (s: Sample[], name: string) => s.filter((x) => x.name === name).reduce((a, x) => a + x.value, 0);

test('simulate → attach with all three surfaces: exact against the native counters; /status alone is blind to PoSt', async () => {
  const sock = path.join(tmp, 'cuzk.sock');
  const timeline = path.join(tmp, 'cuzk.timeline');
  const sim = await startSim([
    '--engine.backend', 'sim',
    '--engine.time-scale', '0.02',
    '--engine.gpus', '2',
    '--engine.workers-per-gpu', '2',
    '--engine.synthesis-concurrency', '4',
    '--workload.concurrency', '0',
    '--simulate.grpc-listen', `unix://${sock}`,
    '--simulate.status-listen', '127.0.0.1:0',
    '--simulate.truth-listen', '127.0.0.1:0',
    '--simulate.timeline-file', timeline,
    '--simulate.tear-rate', '0', // torn lines: test/conformance
    '--simulate.gpu-queue-collisions', 'false', // PoSt jobs lost to upstream's queue key: test/conformance
  ]);
  const all = await startAttach(['--cuzk.status-url', sim.statusUrl!, '--cuzk.grpc-address', `unix://${sock}`, '--cuzk.timeline-file', timeline]);
  const statusOnly = await startAttach(['--cuzk.status-url', sim.statusUrl!]);
  for (const e of [all, statusOnly]) await waitFor('exporter up', async () => sampleValue(await scrape(e.metricsUrl), 'cuzk_up') === 1, 30_000);
  expect((await scrape(all.metricsUrl)).find((x) => x.name === 'cuzk_exporter_build_info')!.labels.surfaces).toBe('grpc,status,timeline');

  // A mixed workload with PoSt, submitted once both exporters watch (nothing before is theirs).
  const plan: [string, string, number][] = [
    ['porep-c2', 'POREP_SEAL_COMMIT', 2],
    ['snap-update', 'SNAP_DEALS_UPDATE', 3],
    ['window-post', 'WINDOW_POST_PARTITION', 2],
    ['winning-post', 'WINNING_POST', 3],
  ];
  const { rpc, close } = grpcClient(sim.grpcAddress);
  const total = plan.reduce((a, p) => a + p[2], 0);
  let truth: Record<string, any>;
  try {
    const proofs: Promise<Record<string, unknown>>[] = [];
    for (const [kind, proto, n] of plan) {
      for (let i = 0; i < n; i++) proofs.push(rpc('Prove', { submit: { request_id: `${kind}-e2e-${i}`, proof_kind: proto } }, 120_000));
    }
    const results = await Promise.all(proofs);
    for (const r of results) expect((r.result as { status: string }).status).toBe('COMPLETED');
    truth = await waitFor(
      'every proof done and every event observed',
      async () => {
        const t = await getJson(sim.truthUrl!);
        const done = KINDS.reduce((a, k) => a + t.kinds[k].proofs_completed, 0);
        return t.quiescent && done === total ? t : undefined;
      },
      60_000,
    );
  } finally {
    close();
  }

  // The exporter has read it all: proofs (gRPC) and every partition's GPU_END (TIMELINE), kinds resolved.
  const partsTruth = KINDS.reduce((a, k) => a + truth.kinds[k].parts_completed, 0);
  const s = await waitFor(
    'the three-surface exporter caught up',
    async () => {
      const x = await scrape(all.metricsUrl);
      const proofs = sumOf(x, 'cuzk_proofs_completed_total');
      const parts = KINDS.reduce((a, k) => a + (sampleValue(x, 'cuzk_partitions_completed_total', { proof_kind: k }) ?? 0), 0);
      return proofs === total && parts === partsTruth ? x : undefined;
    },
    30_000,
  );

  for (const k of KINDS) {
    const native = truth.kinds[k];
    expect([k, sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: k })]).toEqual([k, native.proofs_completed]);
    expect([k, sampleValue(s, 'cuzk_partitions_completed_total', { proof_kind: k })]).toEqual([k, native.parts_completed]);
    // gpu_ms is the stage's ns rounded down to whole ms, per partition.
    const gpuNs = Math.round(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: k })! * 1e9);
    expect(gpuNs).toBeLessThanOrEqual(native.gpu_ns);
    expect(native.gpu_ns - gpuNs).toBeLessThan(1e6 * native.parts_completed);
  }
  expect(truth.kinds['window-post'].gpu_ns).toBeGreaterThan(0);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'window-post' })).toBeGreaterThan(0);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'other' }) ?? 0).toBe(0);

  for (const w of truth.workers as { worker: number; gpu: number; busy_ns: number; partitions: number }[]) {
    const busyNs = sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: String(w.gpu), worker: String(w.worker) })! * 1e9;
    expect(w.busy_ns).toBeGreaterThan(0);
    // Each stint's two ends are whole ms: < 1 ms off per stint, and stints <= partitions.
    expect([w.worker, Math.abs(busyNs - w.busy_ns) <= 1e6 * Math.max(1, w.partitions)]).toEqual([w.worker, true]);
    expect(sampleValue(s, 'cuzk_gpu_worker_partitions_total', { gpu: String(w.gpu), worker: String(w.worker) })).toBe(w.partitions);
  }
  for (const reason of ['timeline_malformed', 'timeline_unknown_event', 'timeline_restart', 'timeline_unresolved_kind', 'grpc_bad_response', 'grpc_restart']) {
    expect([reason, sampleValue(s, 'cuzk_exporter_errors_total', { reason })]).toEqual([reason, 0]);
  }
  expect(promtoolCheckMetrics(await (await fetch(all.metricsUrl)).text())).toEqual({ ok: true, output: '' });

  // /status alone: the same run, and PoSt never happened.
  const b = await waitFor(
    'the /status-only exporter caught up',
    async () => {
      const x = await scrape(statusOnly.metricsUrl);
      const want = truth.kinds['porep-c2'].proofs_completed + truth.kinds['snap-update'].proofs_completed;
      return sumOf(x, 'cuzk_proofs_completed_total') === want ? x : undefined;
    },
    30_000,
  );
  for (const k of ['window-post', 'winning-post']) {
    expect(truth.kinds[k].proofs_completed).toBeGreaterThan(0);
    expect([k, sampleValue(b, 'cuzk_proofs_completed_total', { proof_kind: k })]).toEqual([k, 0]);
    expect([k, sampleValue(b, 'cuzk_partition_gpu_seconds_total', { proof_kind: k })]).toEqual([k, 0]);
    expect([k, sampleValue(b, 'cuzk_partitions_completed_total', { proof_kind: k })]).toEqual([k, 0]);
  }
  const busyAll = sumOf(s, 'cuzk_gpu_worker_busy_seconds_total');
  const busyStatus = sumOf(b, 'cuzk_gpu_worker_busy_seconds_total');
  expect(busyStatus).toBeLessThan(busyAll);
  expect(b.find((x) => x.name === 'cuzk_exporter_build_info')!.labels.surfaces).toBe('status');
}, 240_000);
