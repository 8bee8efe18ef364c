/**
 * Simulated fleets (issue 22 item 5): one `simulate` process runs several boxes with their
 * own engines, shapes, faults and surfaces, and lists their addresses in a JSON file; a bad
 * fleet file is one line and exit 2. The built CLI, killed by process group in afterAll.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { getJson, grpcClient, waitFor } from './sim-process';

const CLI = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');
let tmp: string;
const started: ChildProcess[] = [];

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fleet-'));
});

afterAll(() => {
  for (const c of started) {
    if (c.exitCode === null && c.signalCode === null && c.pid !== undefined) {
      try {
        process.kill(-c.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('a fleet file: distinct addresses per box, each box its own shape, fault and surfaces; every truth reached', async () => {
  const fleet = path.join(tmp, 'fleet.yml');
  fs.writeFileSync(
    fleet,
    [
      'boxes:',
      '  - name: small',
      '    gpus: 1',
      '    workers_per_gpu: 1',
      '  - name: big',
      '    gpus: 2',
      '    workers_per_gpu: 2',
      '    mix: snap-update=1',
      '  - name: faulty',
      '    faults: { status_bug_kind: snap-update }',
      '    mix: snap-update=1',
      '  - name: no-status',
      '    surfaces: [grpc, timeline]',
      '',
    ].join('\n'),
  );
  const addrFile = path.join(tmp, 'addresses.json');
  const child = spawn(
    process.execPath,
    [
      CLI, 'simulate',
      '--engine.backend', 'sim',
      '--engine.time-scale', '0.005',
      '--workload.concurrency', '1',
      '--workload.count', '2',
      '--workload.mix', 'winning-post=1,snap-update=1',
      '--simulate.fleet-file', fleet,
      '--simulate.addresses-file', addrFile,
      '--simulate.grpc-listen', '127.0.0.1:0',
      '--simulate.status-listen', '127.0.0.1:0',
      '--simulate.truth-listen', '127.0.0.1:0',
      '--simulate.timeline-file', path.join(tmp, 'cuzk.log'),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  started.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  await waitFor('the fleet up', () => out.includes('Press Ctrl-C to stop.') || (child.exitCode !== null ? Promise.reject(new Error(err)) : false), 60_000);
  const addrs = JSON.parse(fs.readFileSync(addrFile, 'utf8')) as Array<Record<string, string | null>>;
  expect(addrs.map((a) => a.name)).toEqual(['small', 'big', 'faulty', 'no-status']);
  const ports = addrs.flatMap((a) => [a.grpc, a.status, a.truth]).filter((x): x is string => x !== null);
  expect(new Set(ports).size).toBe(ports.length);
  expect(addrs[3].status).toBeNull();
  expect(addrs.map((a) => a.timeline)).toEqual(['small', 'big', 'faulty', 'no-status'].map((n) => path.join(tmp, `cuzk.log.${n}`)));
  // Shapes: one GPUStatus per worker.
  const workers: number[] = [];
  for (const a of addrs) {
    const { rpc, close } = grpcClient(a.grpc!);
    try {
      workers.push(((await rpc('GetStatus', {})).gpus as unknown[]).length);
    } finally {
      close();
    }
  }
  expect(workers).toEqual([1, 4, 2, 2]);
  // Every box's own workload ran to its end (2 proofs each), on its own truth.
  for (const a of addrs) {
    const t = await waitFor(`${a.name}: 2 proofs done`, async () => {
      const x = await getJson(a.truth!);
      const done = Object.values(x.upstream.kinds as Record<string, { proofs_completed: number }>).reduce((s, k) => s + k.proofs_completed, 0);
      return x.quiescent && done === 2 ? x : undefined;
    }, 60_000);
    expect(t.workers.length).toBe(workers[addrs.indexOf(a)]);
    expect(fs.readFileSync(a.timeline!, 'utf8')).toContain('TIMELINE,');
  }
  // Per-box miner ids (Curio ids differ between boxes).
  expect(fs.readFileSync(addrs[1].timeline!, 'utf8')).toMatch(/snap-1001-\d+|ps-snap-1001-/);
  child.kill('SIGTERM');
  await waitFor('exit', () => child.exitCode !== null || child.signalCode !== null, 30_000);
  expect(child.exitCode).toBe(0);
}, 120_000);

test('a bad fleet file is one line and exit 2', () => {
  const bad = path.join(tmp, 'bad.yml');
  fs.writeFileSync(bad, 'boxes:\n  - name: a\n    gpuz: 2\n');
  const r = spawnSync(process.execPath, [CLI, 'simulate', '--simulate.fleet-file', bad, '--simulate.timeline-file', ''], { encoding: 'utf8', timeout: 30_000 });
  expect(r.status).toBe(2);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toContain('boxes[0]: unknown key "gpuz"');
  fs.writeFileSync(bad, 'boxes:\n  - name: a\n  - name: a\n');
  const r2 = spawnSync(process.execPath, [CLI, 'simulate', '--simulate.fleet-file', bad, '--simulate.timeline-file', ''], { encoding: 'utf8', timeout: 30_000 });
  expect([r2.status, r2.stderr]).toEqual([2, expect.stringContaining('name "a" is used twice')]);
  const r3 = spawnSync(process.execPath, [CLI, 'simulate', '--simulate.boxes', '3'], { encoding: 'utf8', timeout: 30_000 });
  expect([r3.status, r3.stderr]).toEqual([2, expect.stringContaining('boxes cannot share standard error')]);
});
