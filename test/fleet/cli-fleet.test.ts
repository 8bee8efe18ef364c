/**
 * `cuzk-exporter fleet` as users run it (the compiled CLI): a bad targets file is one line
 * and exit 2 at start; --config.check, the environment and --config.file work as for every
 * flag; --help explains the file; a running fleet re-reads the file on change and on SIGHUP,
 * keeps the last good targets when the new file is bad (counted), and exits 0 on SIGTERM.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CLI, runCli } from '../helpers/cli-run';
import { value } from '../helpers/prom-text';
import { fixture } from '../attach/snapshots';
import { StatusServer } from '../attach/status-server';

let dir: string;
let daemon: StatusServer;
let child: ChildProcess | null = null;

beforeAll(async () => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: the jest global setup builds it`);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-cli-fleet-'));
  daemon = await StatusServer.start();
  daemon.behaviour = { kind: 'body', body: fixture('02-snap-busy-consistent.json').text };
});

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await daemon?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
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

const write = (name: string, text: string) => {
  const p = path.join(dir, name);
  fs.writeFileSync(`${p}.tmp`, text);
  fs.renameSync(`${p}.tmp`, p);
  return p;
};

test('no --targets.file, or a bad one: one line on stderr and exit 2, nothing started', async () => {
  const none = await runCli(['fleet', '--web.listen-address', '127.0.0.1:0']);
  expect(none.code).toBe(2);
  expect(none.stderr).toBe('cuzk-exporter: fleet: --targets.file is required (a YAML list of the cuzk daemons to attach to; see cuzk-exporter fleet --help)\n');
  const bad = write('bad.yml', `targets:\n  - name: gpu-17\n    status_url: ${daemon.url}\n  - name: gpu-18\n    timeline_command: "ssh gpu-18 journalctl -fu cuzk"\n`);
  const r = await runCli(['fleet', '--targets.file', bad, '--web.listen-address', '127.0.0.1:0']);
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toBe(
    `cuzk-exporter: targets file ${bad}: target "gpu-18": timeline_command must be a list (argv, run without a shell), e.g. [ssh, gpu-17, journalctl, -fu, cuzk, -o, cat, --lines=0]\n`,
  );
  const missing = await runCli(['fleet', '--targets.file', path.join(dir, 'nope.yml')]);
  expect([missing.code, missing.stderr]).toEqual([2, `cuzk-exporter: targets file ${path.join(dir, 'nope.yml')}: cannot read (ENOENT)\n`]);
});

test('--config.check validates the file; the flag also comes from the environment and --config.file', async () => {
  const good = write('good.yml', `targets:\n  - name: a\n    status_url: ${daemon.url}\n  - name: b\n    grpc_address: 127.0.0.1:9820\n`);
  const r1 = await runCli(['fleet', '--config.check', '--targets.file', good]);
  expect([r1.code, r1.stdout]).toEqual([0, 'configuration OK (2 targets)\n']);
  const r2 = await runCli(['fleet', '--config.check'], { CUZK_EXPORTER_TARGETS_FILE: good });
  expect([r2.code, r2.stdout]).toEqual([0, 'configuration OK (2 targets)\n']);
  const cfg = write('config.yml', `targets.file: ${good}\ncuzk.poll-interval: 2s\n`);
  const r3 = await runCli(['fleet', '--config.check', '--config.file', cfg]);
  expect([r3.code, r3.stdout]).toEqual([0, 'configuration OK (2 targets)\n']);
  // A flag of another command is refused as for every command.
  const r4 = await runCli(['fleet', '--config.check', '--targets.file', good, '--cuzk.status-url', daemon.url]);
  expect(r4.code).toBe(2);
});

test('fleet --help explains the targets file and the endpoints', async () => {
  const r = await runCli(['fleet', '--help']);
  expect(r.code).toBe(0);
  for (const s of ['--targets.file', 'CUZK_EXPORTER_TARGETS_FILE', 'timeline_command: [ssh, gpu-17, journalctl', '/probe?target=NAME', 'SIGHUP', '--cuzk.poll-interval', '--web.listen-address']) {
    expect(r.stdout).toContain(s);
  }
  // The fleet's own defaults, not attach's, in its help.
  const flat = r.stdout.replace(/\s+/g, ' ');
  const shown = (flag: string) => {
    const entry = flat.split(' --').find((e) => e.startsWith(`${flag} How`));
    return entry ? /\[default: "([^"]+)"\]/.exec(entry)?.[1] : undefined;
  };
  expect([shown('cuzk.poll-interval'), shown('cuzk.grpc-status-interval'), shown('cuzk.timeline-poll-interval')]).toEqual(['5s', '15s', '500ms']);
});

test('running: a bad file on change or SIGHUP keeps the last good targets (counted); a good one is applied; SIGTERM exits 0', async () => {
  const file = write('fleet.yml', `targets:\n  - name: box-a\n    status_url: ${daemon.url}\n`);
  const proc = spawn(process.execPath, [CLI, 'fleet', '--targets.file', file, '--web.listen-address', '127.0.0.1:0', '--cuzk.poll-interval', '100ms'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child = proc;
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d) => (stdout += d));
  proc.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const base = await until('the banner', async () => /fleet page: +(http:\/\/\S+)\//.exec(stdout)?.[1]);
  expect(stdout).toMatch(/^cuzk-exporter fleet: 1 target from .*fleet\.yml \(polling every 0\.1s\)\n/);
  const own = async () => (await fetch(`${base}/metrics`)).text();
  const probe = async (t: string) => (await fetch(`${base}/probe?target=${t}`)).text();
  await until('box-a up', async () => (value(await probe('box-a'), 'cuzk_up') === 1 ? true : undefined));

  // A bad file, seen by the change check: refused, counted, box-a keeps running.
  write('fleet.yml', `targets:\n  - name: box-a\n    status_url: ${daemon.url}\n  - name: box-b\n    status_url: not a url\n`);
  await until('the reload refused', async () => (value(await own(), 'cuzk_exporter_errors_total', { reason: 'targets_file' }) === 1 ? true : undefined));
  expect(stderr).toMatch(/level=error msg="targets file reload failed" why=changed err=".*target \\"box-b\\": status_url \\"not a url\\" is not an http/);
  expect(value(await own(), 'cuzk_fleet_targets_file_last_reload_successful')).toBe(0);
  expect(value(await probe('box-a'), 'cuzk_up')).toBe(1);
  // SIGHUP reads it again (the file has not changed): refused again, counted again.
  proc.kill('SIGHUP');
  await until('the SIGHUP reload refused', async () => (value(await own(), 'cuzk_exporter_errors_total', { reason: 'targets_file' }) === 2 ? true : undefined));
  expect(stderr).toMatch(/msg="targets file reload failed" why=SIGHUP/);

  // Fixed: box-b is added.
  write('fleet.yml', `targets:\n  - name: box-a\n    status_url: ${daemon.url}\n  - name: box-b\n    status_url: ${daemon.url}\n`);
  await until('box-b up', async () => (value(await probe('box-b'), 'cuzk_up') === 1 ? true : undefined));
  expect(value(await own(), 'cuzk_fleet_targets_file_last_reload_successful')).toBe(1);
  expect(value(await own(), 'cuzk_fleet_targets')).toBe(2);
  expect(stderr).toMatch(/msg="targets file reloaded" file=.*fleet\.yml why=changed targets=2 added=box-b/);

  proc.kill('SIGTERM');
  expect(await exited).toBe(0);
});
