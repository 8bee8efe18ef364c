/**
 * The cross-check against the reference engine (issue 10): `cuzk-exporter simulate` behind
 * its surfaces, `cuzk-exporter attach` reading /status, gRPC and TIMELINE. With the
 * historical status bug injected (the finalizer clears a worker that already owns its next
 * partition: /status shows it idle, TIMELINE still has it owning a partition), the exporter
 * flags cuzk_status_mismatch_reason{reason="surfaces_disagree"}; on a healthy engine (split
 * proving, no PoSt for /status to be blind to) it never does, at any scrape.
 *
 * Timing model: one GPU worker, SnapDeals partitions with 250 ms of kernels and a 1 s
 * finalize tail (cuzk's b_g2_msm epilogue is of that order): at the end of each job the
 * worker owns its last partition for seconds after the previous one's end clears it.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse, Sample } from '../helpers/prom-text';
import { getJson, grpcClient, killAll, startSim, waitFor } from '../sim/sim-process';
import { sampleValue } from './merged-harness';

const CLI = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');
let tmp: string;
let cfg: string;
const exporters: ChildProcess[] = [];

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-e2e-crosscheck-'));
  cfg = path.join(tmp, 'engine.json');
  fs.writeFileSync(cfg, JSON.stringify({ sim: { 'snap-update': { synth_ms: 100, gpu_ms: 250, finalize_ms: 1000, jitter: 0 } } }));
});

afterAll(() => {
  for (const c of exporters) {
    if (c.exitCode === null && c.signalCode === null && c.pid !== undefined) {
      try {
        process.kill(-c.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  killAll();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function startAttach(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'attach', '--web.listen-address', '127.0.0.1:0', '--cuzk.poll-interval', '100ms', ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    exporters.push(child);
    let out = '';
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /metrics:\s+(http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`attach exited (${code}): ${err}`)));
  });
}

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
  return parse(await res.text());
}

async function run(name: string, fault: string[]): Promise<{ disagreed: number; mismatched: number; scrapes: number }> {
  const timeline = path.join(tmp, `${name}.timeline`);
  const sim = await startSim([
    '--engine.backend', 'sim',
    '--engine.config', cfg,
    '--engine.gpus', '1',
    '--engine.workers-per-gpu', '1',
    '--engine.synthesis-concurrency', '4',
    '--workload.concurrency', '0',
    '--simulate.grpc-listen', '127.0.0.1:0',
    '--simulate.status-listen', '127.0.0.1:0',
    '--simulate.truth-listen', '127.0.0.1:0',
    '--simulate.timeline-file', timeline,
    '--simulate.tear-rate', '0', // torn lines: test/conformance
    ...fault,
  ]);
  const url = await startAttach(['--cuzk.status-url', sim.statusUrl!, '--cuzk.grpc-address', sim.grpcAddress, '--cuzk.timeline-file', timeline]);
  // The proof is submitted once the exporter watches every surface: TIMELINE lines written
  // before it started are history (rebuild state, never counted), so a workload that began
  // with the daemon would leave the exporter's partition count short of the engine's for
  // good on a box slow to start node (seen once beside stress-ng).
  await waitFor(`${name}: exporter up on every surface`, async () => sampleValue(await scrape(url), 'cuzk_up') === 1, 60_000);
  const { rpc, close } = grpcClient(sim.grpcAddress);
  const proof = rpc('Prove', { submit: { request_id: `${name}-crosscheck`, proof_kind: 'SNAP_DEALS_UPDATE' } }, 120_000);
  proof.catch(() => undefined); // awaited below; a failure must not surface as unhandled meanwhile
  let disagreed = 0;
  let mismatched = 0;
  let scrapes = 0;
  await waitFor(
    `${name}: the proof done, every event observed, and the exporter caught up`,
    async () => {
      const s = await scrape(url);
      scrapes++;
      if (sampleValue(s, 'cuzk_status_mismatch_reason', { reason: 'surfaces_disagree' }) === 1) disagreed++;
      if (sampleValue(s, 'cuzk_status_mismatch') === 1) mismatched++;
      const t = await getJson(sim.truthUrl!);
      const done = t.kinds['snap-update'].proofs_completed === 1 && t.quiescent;
      return done && sampleValue(s, 'cuzk_partitions_completed_total', { proof_kind: 'snap-update' }) === t.kinds['snap-update'].parts_completed;
    },
    120_000,
  );
  try {
    expect(((await proof).result as { status: string }).status).toBe('COMPLETED');
  } finally {
    close();
  }
  sim.child.kill('SIGTERM');
  await sim.exit;
  return { disagreed, mismatched, scrapes };
}

test('a healthy engine never makes the surfaces disagree; the finalizer clobber does', async () => {
  const healthy = await run('healthy', []);
  expect(healthy.scrapes).toBeGreaterThan(50);
  expect(healthy).toMatchObject({ disagreed: 0, mismatched: 0 });

  const clobber = await run('clobber', ['--fault.status-bug-kind', 'snap-update', '--fault.status-bug-mode', 'clobber']);
  expect(clobber.disagreed).toBeGreaterThan(0);
  expect(clobber.mismatched).toBeGreaterThanOrEqual(clobber.disagreed);
}, 300_000);
