/**
 * `cuzk-exporter attach` end to end, as users run it: the compiled CLI (dist/, built by the
 * jest global setup) attached to a stand-in cuzk daemon on 127.0.0.1. It prints its URLs,
 * serves the fixture's metrics and the daemon's body at /status, survives a bad body, and
 * exits 0 on SIGTERM.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { find, value } from '../helpers/prom-text';
import { fixture } from './snapshots';
import { StatusServer } from './status-server';

const CLI = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');

/** Retries `probe` until it returns a value (not undefined), for at most `ms`. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
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
    await new Promise((r) => setTimeout(r, 50));
  }
}

let daemon: StatusServer;
let child: ChildProcess | null = null;

beforeAll(async () => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: the jest global setup builds it (npx tsc -p tsconfig.json)`);
  daemon = await StatusServer.start();
});

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await daemon.close();
});

test('attach prints its URLs, serves metrics and /status from the daemon, survives a bad body, exits 0 on SIGTERM', async () => {
  const f03 = fixture('03-workers-idle-partitions-on-gpu.json');
  daemon.behaviour = { kind: 'body', body: f03.text };

  const proc = spawn(
    process.execPath,
    [CLI, 'attach', '--cuzk.status-url', daemon.url, '--web.listen-address', '127.0.0.1:0', '--cuzk.poll-interval', '100ms', '--cuzk.timeout', '500ms'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child = proc;
  let stdout = '';
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const base = await new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', (d) => {
      stdout += d;
      const m = /metrics:\s+(http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(stdout);
      if (m) resolve(m[1]);
    });
    void exited.then((r) => reject(new Error(`attach exited early (${r.code}): ${stderr}`)));
  });
  expect(stdout).toContain(`attached to ${daemon.url} (polling every 0.1s)`);
  expect(stdout).toContain(`status page: ${base}/`);

  // Ready once the first poll landed (bounded wait on the readiness endpoint).
  await until('/-/ready', async () => ((await fetch(`${base}/-/ready`)).status === 200 ? true : undefined));
  const metrics = async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    return res.text();
  };
  let body = await metrics();
  expect(value(body, 'cuzk_up')).toBe(1);
  expect(value(body, 'cuzk_status_mismatch')).toBe(1);
  expect(find(body, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'gpu' })).toBe(2);
  expect(find(body, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '0' })).toBe(0);
  expect(find(body, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '1' })).toBe(0);
  expect(body).toMatch(/^cuzk_exporter_build_info\{version="[^"]+",source="attach",backend="cuzk",surfaces="status"\} 1$/m);

  const status = (await (await fetch(`${base}/status`)).json()) as Record<string, unknown> & { exporter: Record<string, unknown> };
  const { exporter, ...daemonBody } = status;
  // The daemon's body as it sent it, with our additions in new fields only (DESIGN §6):
  // each worker's busy seconds as /metrics has them.
  for (const w of daemonBody.gpu_workers as Record<string, unknown>[]) {
    expect(typeof w.busy_total_secs).toBe('number');
    delete w.busy_total_secs;
  }
  expect(daemonBody).toEqual(f03.json);
  expect(exporter).toMatchObject({ source: 'attach', backend: 'cuzk', up: true, status_mismatch: true, partitions_on_gpu: 2, busy_workers: 0, last_error: null });
  expect(typeof exporter.snapshot_age_secs).toBe('number');
  expect(exporter.snapshot_age_secs as number).toBeGreaterThanOrEqual(0);
  expect(exporter.snapshot_age_secs as number).toBeLessThan(5);

  // A bad body: cuzk_up 0, the process lives on and keeps serving the last good snapshot.
  daemon.behaviour = { kind: 'body', body: '{"uptime_secs": "soon"' };
  body = await until('cuzk_up 0', async () => {
    const b = await metrics();
    return value(b, 'cuzk_up') === 0 ? b : undefined;
  });
  expect(value(body, 'cuzk_exporter_errors_total', { reason: 'malformed_json' })).toBeGreaterThanOrEqual(1);
  expect(proc.exitCode).toBeNull();
  const stale = (await (await fetch(`${base}/status`)).json()) as { uptime_secs: number; exporter: { up: boolean; last_error: string } };
  expect(stale.uptime_secs).toBe(7305.9);
  expect(stale.exporter.up).toBe(false);
  expect(stale.exporter.last_error).toMatch(/body is not JSON/);

  // The daemon recovers (fixture 02: consistent).
  daemon.behaviour = { kind: 'body', body: fixture('02-snap-busy-consistent.json').text };
  body = await until('mismatch 0', async () => {
    const b = await metrics();
    return value(b, 'cuzk_up') === 1 && value(b, 'cuzk_status_mismatch') === 0 ? b : undefined;
  });
  expect(find(body, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '0' })).toBe(1);
  expect(find(body, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '1' })).toBe(1);

  proc.kill('SIGTERM');
  const r = await exited;
  expect(r).toEqual({ code: 0, signal: null });
  // One warning for the bad body however many polls saw it; the log says it came back.
  const warns = stderr.split('\n').filter((l) => /level=warn/.test(l));
  expect(warns.filter((l) => /body is not JSON/.test(l))).toHaveLength(1);
  expect(stderr).toMatch(/level=info msg="source is up: http:\/\/127\.0\.0\.1:\d+\/status"/);
  expect(stderr).toMatch(/level=info msg="shutting down" signal=SIGTERM/);
});
