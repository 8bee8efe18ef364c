/**
 * The fleet exporter in-process, against stand-in cuzk daemons (real HTTP /status servers and
 * a real timeline command): /probe per target, its own /metrics, service discovery, the
 * fleet page's JSON, per-target pages; one target hung or hostile never delays or disturbs
 * another; the targets file reloaded on change (kept-last-good when bad, counted); a timeline
 * command's exits counted per target and its output read as the target's log.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startFleetServer, telemetryPerTarget } from '../../src/exporter/fleet-server';
import type { Telemetry } from '../../src/exporter/telemetry';
import type { RunningServer } from '../../src/exporter/web-front';
import { Fleet } from '../../src/engine/sources/fleet/fleet';
import { loadTargetsFile } from '../../src/engine/sources/fleet/targets-file';
import { TargetsFileWatch } from '../../src/engine/sources/fleet/targets-watch';
import { silentLogger } from '../../src/util/logger';
import { find, promtoolCheckMetrics, value } from '../helpers/prom-text';
import { fixture } from '../attach/snapshots';
import { StatusServer } from '../attach/status-server';

const TIMEOUT_MS = 3000; // long enough that a probe waiting on the hung poll stands out from a loaded box's slowness
jest.setTimeout(180_000);

let dir: string;
let a: StatusServer;
let b: StatusServer;
let fleet: Fleet<Telemetry>;
let watch: TargetsFileWatch;
let server: RunningServer;
let file: string;

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms${last ? ` (${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 30));
  }
}

const get = async (p: string) => {
  const res = await fetch(`${server.url}${p}`, { redirect: 'manual' });
  return { status: res.status, text: await res.text(), headers: res.headers };
};
const probe = async (name: string) => {
  const r = await get(`/probe?target=${encodeURIComponent(name)}`);
  if (r.status !== 200) throw new Error(`/probe?target=${name}: HTTP ${r.status} ${r.text}`);
  return r.text;
};

function writeTargets(text: string): void {
  // Written aside and renamed: the watcher never reads half a file.
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file);
}

const twoTargets = () => `targets:
  - name: prover-a
    labels: {rack: r1}
    status_url: ${a.url}
  - name: prover-b
    status_url: ${b.url}
`;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fleet-'));
  file = path.join(dir, 'targets.yml');
  a = await StatusServer.start();
  b = await StatusServer.start();
  a.behaviour = { kind: 'body', body: fixture('02-snap-busy-consistent.json').text };
  b.behaviour = { kind: 'body', body: fixture('03-workers-idle-partitions-on-gpu.json').text };
  writeTargets(twoTargets());
  fleet = new Fleet({
    pollIntervalMs: 100,
    grpcStatusIntervalMs: 5000,
    timeoutMs: TIMEOUT_MS,
    maxBodyBytes: 1 << 20,
    logger: silentLogger,
    exporterFor: telemetryPerTarget('test'),
    commandBackoff: { minMs: 100, maxMs: 400 },
  });
  watch = new TargetsFileWatch(file, fleet, silentLogger, 50);
  await fleet.apply(loadTargetsFile(file));
  server = await startFleetServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', fleet, watch, logger: silentLogger, version: 'test' });
  watch.start();
  await until('both targets up', async () => ((await probe('prover-a')).includes('cuzk_up 1') && (await probe('prover-b')).includes('cuzk_up 1') ? true : undefined));
});

afterAll(async () => {
  await watch?.stop();
  await server?.close();
  await fleet?.stop();
  await a?.close();
  await b?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('/probe?target=NAME is that target\'s /metrics: its own state, no target label, promtool clean', async () => {
  const pa = await probe('prover-a');
  const pb = await probe('prover-b');
  expect(value(pa, 'cuzk_status_mismatch')).toBe(0);
  expect(value(pb, 'cuzk_status_mismatch')).toBe(1); // fixture 03: the seed's contradiction
  expect(value(pa, 'cuzk_gpu_worker_busy', { worker: '0' })).toBe(1);
  expect(value(pb, 'cuzk_gpu_worker_busy', { worker: '0' })).toBe(0);
  expect(pa).not.toMatch(/target=|instance=/);
  for (const body of [pa, pb]) {
    const r = promtoolCheckMetrics(body);
    if (!r.skipped) expect(r).toEqual({ ok: true, output: '' });
  }
  // Content negotiation and gzip, as /metrics of attach.
  const om = await fetch(`${server.url}/probe?target=prover-a`, { headers: { Accept: 'application/openmetrics-text; version=1.0.0' } });
  expect(om.headers.get('content-type')).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
  expect((await om.text()).endsWith('# EOF\n')).toBe(true);
});

test('a probe of an unknown target is 404 and counted; without a target 400; the exporter\'s own /metrics is promtool clean', async () => {
  const before = value((await get('/metrics')).text, 'cuzk_exporter_errors_total', { reason: 'unknown_target' });
  const r = await get('/probe?target=nope');
  expect(r.status).toBe(404);
  expect(r.text).toMatch(/^unknown target "nope"/);
  expect((await get('/probe')).status).toBe(400);
  expect((await get('/probe?target=')).status).toBe(400);
  const own = (await get('/metrics')).text;
  expect(value(own, 'cuzk_exporter_errors_total', { reason: 'unknown_target' })).toBe(before + 1);
  expect(value(own, 'cuzk_fleet_targets')).toBe(2);
  expect(value(own, 'cuzk_fleet_target_up', { target: 'prover-a' })).toBe(1);
  expect(value(own, 'cuzk_exporter_build_info', { source: 'fleet' })).toBe(1);
  const check = promtoolCheckMetrics(own);
  if (!check.skipped) expect(check).toEqual({ ok: true, output: '' });
});

test('/targets is Prometheus HTTP service discovery; /fleet.json every target at a glance; /targets/NAME/ its page and /status', async () => {
  const sd = await get('/targets');
  expect(sd.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(JSON.parse(sd.text)).toEqual([
    { targets: ['prover-a'], labels: { rack: 'r1' } },
    { targets: ['prover-b'], labels: {} },
  ]);
  const summary = JSON.parse((await get('/fleet.json')).text);
  expect(summary.targets.map((t: { name: string; mismatch: boolean; up: boolean; workers: unknown[] }) => [t.name, t.up, t.mismatch, t.workers.length])).toEqual([
    ['prover-a', true, false, 2],
    ['prover-b', true, true, 2],
  ]);
  expect(summary.targets[1].mismatch_reasons).toContain('idle_with_partitions_on_gpu');
  expect(summary.targets_file.last_reload_ok).toBe(true);

  const redirect = await get('/targets/prover-b');
  expect([redirect.status, redirect.headers.get('location')]).toEqual([308, 'prover-b/']);
  const page = await get('/targets/prover-b/');
  expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
  expect(page.text).toContain('src="ui/box.js"');
  expect((await get('/targets/prover-b/ui/box.js')).status).toBe(200);
  const st = JSON.parse((await get('/targets/prover-b/status')).text);
  expect(st.exporter.target).toEqual({ name: 'prover-b', labels: {} });
  expect(st.exporter.status_mismatch).toBe(true);
  expect((await get('/targets/nope/')).status).toBe(404);
  expect((await get('/targets/%E0%A4%A/')).status).toBe(400);
  const fleetPage = await get('/');
  expect(fleetPage.text).toContain('src="ui/fleet.js"');
});

test('a hung target delays neither another target\'s probe nor its own; a hostile one disturbs no other', async () => {
  b.behaviour = { kind: 'hang' };
  // Every probe of A while B's daemon hangs answers far inside B's timeout, and so do B's own.
  const times: number[] = [];
  const deadline = Date.now() + 2.5 * TIMEOUT_MS; // spans at least two of B's timed-out polls
  while (Date.now() < deadline) {
    for (const t of ['prover-a', 'prover-b']) {
      const t0 = performance.now();
      const body = await probe(t);
      times.push(performance.now() - t0);
      if (t === 'prover-a') expect(value(body, 'cuzk_up')).toBe(1);
    }
  }
  expect(Math.max(...times)).toBeLessThan(TIMEOUT_MS / 2);
  await until('B down after its timeout', async () => (value(await probe('prover-b'), 'cuzk_up') === 0 ? true : undefined));
  expect(value(await probe('prover-b'), 'cuzk_exporter_errors_total', { reason: 'timeout' })).toBeGreaterThanOrEqual(1);

  // Hostile: garbage, then a body over the size limit; A's state and error counters untouched.
  const errorsA = (await probe('prover-a')).split('\n').filter((l) => l.startsWith('cuzk_exporter_errors_total'));
  b.behaviour = { kind: 'body', body: '{"uptime_secs": [[[[' };
  await until('B counts malformed JSON', async () => ((find(await probe('prover-b'), 'cuzk_exporter_errors_total', { reason: 'malformed_json' }) ?? 0) > 0 ? true : undefined));
  b.behaviour = { kind: 'stream', bytes: 4 << 20, declareLength: false };
  await until('B counts a body too large', async () => ((find(await probe('prover-b'), 'cuzk_exporter_errors_total', { reason: 'body_too_large' }) ?? 0) > 0 ? true : undefined));
  const pa = await probe('prover-a');
  expect(value(pa, 'cuzk_up')).toBe(1);
  expect(pa.split('\n').filter((l) => l.startsWith('cuzk_exporter_errors_total'))).toEqual(errorsA);
  const summary = JSON.parse((await get('/fleet.json')).text);
  expect(summary.targets.map((t: { name: string; up: boolean }) => [t.name, t.up])).toEqual([
    ['prover-a', true],
    ['prover-b', false],
  ]);

  b.behaviour = { kind: 'body', body: fixture('03-workers-idle-partitions-on-gpu.json').text };
  await until('B back up', async () => (value(await probe('prover-b'), 'cuzk_up') === 1 ? true : undefined));
});

test('the targets file: a change is applied (labels alone keep the target running); a bad file keeps the last good targets, counted', async () => {
  const targetA = fleet.get('prover-a');
  const busyA = value(await probe('prover-a'), 'cuzk_gpu_worker_busy_seconds_total', { worker: '0' });
  writeTargets(twoTargets().replace('rack: r1', 'rack: r2'));
  await until('relabelled', async () => (JSON.parse((await get('/targets')).text)[0].labels.rack === 'r2' ? true : undefined));
  expect(fleet.get('prover-a')).toBe(targetA); // same source: state and counters kept
  expect(value(await probe('prover-a'), 'cuzk_gpu_worker_busy_seconds_total', { worker: '0' })).toBeGreaterThanOrEqual(busyA);

  const errors = () => get('/metrics').then((r) => value(r.text, 'cuzk_exporter_errors_total', { reason: 'targets_file' }));
  const before = await errors();
  writeTargets(`targets:\n  - name: prover-a\n    status_url: ${a.url}\n  - name: prover-c\n    grpc_adress: 127.0.0.1:1\n`);
  await until('the bad file counted', async () => ((await errors()) === before + 1 ? true : undefined));
  const own = (await get('/metrics')).text;
  expect(value(own, 'cuzk_fleet_targets_file_last_reload_successful')).toBe(0);
  expect(value(own, 'cuzk_fleet_targets')).toBe(2);
  expect(fleet.list().map((t) => t.name)).toEqual(['prover-a', 'prover-b']);
  expect(fleet.get('prover-a')).toBe(targetA);
  const summary = JSON.parse((await get('/fleet.json')).text);
  expect(summary.targets_file.last_reload_ok).toBe(false);
  expect(summary.targets_file.last_error).toMatch(/target "prover-c": unknown key "grpc_adress".*keeping the previous 2 target\(s\)$/);
  // SIGHUP's path: an explicit reload of the same bad file is refused again, and counted.
  expect(await watch.reload('SIGHUP')).toBe(false);
  expect(await errors()).toBe(before + 2);

  // Fixed: prover-b removed, prover-c added; prover-a untouched.
  writeTargets(`targets:\n  - name: prover-a\n    labels: {rack: r2}\n    status_url: ${a.url}\n  - name: prover-c\n    status_url: ${b.url}\n`);
  await until('applied', () => (fleet.list().map((t) => t.name).join() === 'prover-a,prover-c' ? true : undefined));
  expect(fleet.get('prover-a')).toBe(targetA);
  expect(value((await get('/metrics')).text, 'cuzk_fleet_targets_file_last_reload_successful')).toBe(1);
  expect((await get('/probe?target=prover-b')).status).toBe(404);
  await until('C up', async () => (value(await probe('prover-c'), 'cuzk_up') === 1 ? true : undefined));
  writeTargets(twoTargets());
  await until('back to A and B', () => (fleet.list().map((t) => t.name).join() === 'prover-a,prover-b' ? true : undefined));
});

test('a timeline command: its output is the target\'s log, each exit counted on that target and restarted, the surface down meanwhile', async () => {
  const marker = path.join(dir, 'ran-once');
  // First run: one partition on worker 0 for 500 ms of the daemon's clock, then exit 1.
  // Later runs: stay up, quiet (journalctl -f after a reconnect).
  const script = [
    'const fs = require("fs");',
    `const marker = ${JSON.stringify(marker)};`,
    'if (fs.existsSync(marker)) { setInterval(() => {}, 1000); } else {',
    '  fs.writeFileSync(marker, "");',
    '  process.stdout.write([',
    '    "TIMELINE,1000,SYNTH_START,snap-1,partition=0",',
    '    "TIMELINE,1200,SYNTH_END,snap-1,partition=0,synth_ms=200",',
    '    "TIMELINE,1300,GPU_PICKUP,snap-1,worker=0,partition=0",',
    '    "TIMELINE,1300,GPU_START,snap-1,worker=0,partition=0",',
    '    "TIMELINE,1800,GPU_END,snap-1,worker=0,partition=0,gpu_ms=500",',
    '  ].join("\\n") + "\\n", () => setTimeout(() => process.exit(1), 300));',
    '}',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'log-command.js'), script);
  writeTargets(`${twoTargets()}  - name: prover-t\n    timeline_command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(path.join(dir, 'log-command.js'))}]\n`);
  await until('prover-t added', () => (fleet.get('prover-t') ? true : undefined));
  const t = fleet.get('prover-t')!;
  await until('the command exited once and runs again', () => (t.command!.failures === 1 && t.command!.running ? true : undefined));
  const body = await until('the stint of the first run counted', async () => {
    const p = await probe('prover-t');
    return find(p, 'cuzk_gpu_worker_busy_seconds_total', { worker: '0', gpu: 'unknown' }) === 0.5 ? p : undefined;
  });
  expect(value(body, 'cuzk_exporter_errors_total', { reason: 'timeline_command' })).toBe(1);
  expect(value(body, 'cuzk_surface_up', { surface: 'timeline' })).toBe(1);
  expect(value(body, 'cuzk_exporter_errors_total', { reason: 'timeline_malformed' })).toBe(0);
  const own = (await get('/metrics')).text;
  expect(value(own, 'cuzk_fleet_timeline_command_failures_total', { target: 'prover-t' })).toBe(1);
  expect(value(own, 'cuzk_fleet_timeline_command_running', { target: 'prover-t' })).toBe(1);
  // The other targets count nothing of it.
  expect(find(await probe('prover-a'), 'cuzk_exporter_errors_total', { reason: 'timeline_command' })).toBeUndefined();

  // While the command is down, the surface is down (and cuzk_up with it).
  fs.rmSync(marker);
  const pid = (t.command as unknown as { child: { pid: number } | null }).child?.pid;
  expect(pid).toBeGreaterThan(0);
  process.kill(pid!, 'SIGKILL');
  await until('down while restarting', async () => {
    const p = await probe('prover-t');
    return value(p, 'cuzk_surface_up', { surface: 'timeline' }) === 0 && value(p, 'cuzk_up') === 0 ? true : undefined;
  });
  await until('up again', async () => (value(await probe('prover-t'), 'cuzk_surface_up', { surface: 'timeline' }) === 1 ? true : undefined));
  expect(t.command!.failures).toBeGreaterThanOrEqual(2);
  const pid2 = (t.command as unknown as { child: { pid: number } | null }).child?.pid;
  expect(pid2).toBeGreaterThan(0);
  expect(pid2).not.toBe(pid);

  writeTargets(twoTargets());
  await until('prover-t removed, its command ended', () => (fleet.get('prover-t') === undefined && !t.command!.running ? true : undefined));
  expect(() => process.kill(pid2!, 0)).toThrow(); // the running command was ended with its target
});

test('every target looks and sweeps on the fleet\'s shared timers: one interval per period, not one per target', () => {
  const timers = (fleet as unknown as { timers: { periods: number[]; groups: Map<number, { fns: Set<unknown> }> } }).timers;
  expect(fleet.size).toBeGreaterThan(0);
  expect(timers.periods).toContain(1000);
  // Per target the fleet page's look each second, and the TIMELINE sweep where it has a log.
  const withLog = fleet.list().filter((t) => t.source.timeline !== null).length;
  expect(timers.groups.get(1000)!.fns.size).toBe(fleet.size + withLog);
});
