/**
 * Issue #13: the package installs from its own `npm pack` tarball and works from any
 * directory — what an operator does to run it as a service (README "Run as a service").
 *
 * From a clean copy of the working tree (tracked and untracked-but-not-ignored files: no
 * dist/, no native/build/), `npm pack` (its prepare script compiles the TypeScript), then
 * `npm install -g --prefix <tmp>` of the tarball (its install script builds the native
 * library), then from another working directory: `cuzk-exporter --version`, `attach`
 * against a served cuzk /status fixture (metrics, status page, readiness), `dashboards`
 * and a one-proof `prove` on the freshly built native library. Everything it starts is
 * killed by process group; the temp tree is removed.
 *
 * The deploy/ unit passes `systemd-analyze verify`, keeps its hardening, and its
 * environment file names only real flags.
 */
import { ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { envName, OPTIONS } from '../../src/cli/options';
import { fixtureText } from '../helpers/fixtures';
import { freePort, pollUntil } from '../helpers/prometheus';

const ROOT = path.resolve(__dirname, '..', '..');
const execFileP = promisify(execFile);
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const SYSTEMD_ANALYZE = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => fs.existsSync(p));

/** Runs a command to completion without blocking the event loop: its stdout; rejects with its output on failure. */
async function run(cmd: string, args: string[], cwd: string, timeoutMs: number): Promise<string> {
  try {
    const r = await execFileP(cmd, args, { cwd, timeout: timeoutMs, maxBuffer: 64 << 20, env: { ...process.env, npm_config_update_notifier: 'false' } });
    return r.stdout;
  } catch (e) {
    const x = e as Error & { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed: ${x.message}\n${x.stdout ?? ''}\n${x.stderr ?? ''}`);
  }
}

describe('npm pack tarball, installed globally into a temp prefix', () => {
  let tmp = '';
  let prefix = '';
  let bin = '';
  let elsewhere = '';
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-pack-'));
    // A clean copy: what git would check out plus new files, nothing built.
    const copy = path.join(tmp, 'src');
    const files = spawnSync('git', ['ls-files', '-z', '-c', '-o', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).stdout.split('\0').filter(Boolean);
    expect(files.length).toBeGreaterThan(50);
    for (const f of files) {
      const from = path.join(ROOT, f);
      if (!fs.existsSync(from) || !fs.statSync(from).isFile()) continue; // deleted in the tree
      fs.mkdirSync(path.dirname(path.join(copy, f)), { recursive: true });
      fs.copyFileSync(from, path.join(copy, f));
    }
    expect(fs.existsSync(path.join(copy, 'dist'))).toBe(false);
    expect(fs.existsSync(path.join(copy, 'native', 'build'))).toBe(false);
    // The build tools (typescript) for `prepare`; nothing of it goes into the tarball.
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
    const out = await run('npm', ['pack', '--json', '--pack-destination', tmp], copy, 300_000);
    const packed = (JSON.parse(out.slice(out.indexOf('['))) as { filename: string; files: { path: string }[] }[])[0];
    expect(packed.filename).toBe(`cuzk-exporter-${VERSION}.tgz`);
    const inTarball = packed.files.map((f) => f.path);
    for (const p of ['dist/src/cli/main.js', 'native/Makefile', 'native/include/cuzk_engine.h', 'proto/cuzk/v1/proving.proto', 'src/exporter/page/index.html', 'deploy/cuzk-exporter.service', 'dashboards/cuzk-overview.json']) {
      expect([p, inTarball.includes(p)]).toEqual([p, true]);
    }
    expect(inTarball.some((p) => p.startsWith('test/') || p.startsWith('native/build') || p.endsWith('.map') || p.startsWith('node_modules'))).toBe(false);
    // Global install into a temp prefix; the install script builds the native library.
    prefix = path.join(tmp, 'prefix');
    elsewhere = fs.mkdtempSync(path.join(tmp, 'elsewhere-'));
    await run('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', path.join(tmp, packed.filename)], elsewhere, 480_000);
    bin = path.join(prefix, 'bin', 'cuzk-exporter');
  }, 900_000);

  afterAll(async () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null && c.pid) {
        try {
          process.kill(-c.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('the package is installed with its native library and data files', () => {
    const pkg = path.join(prefix, 'lib', 'node_modules', 'cuzk-exporter');
    for (const p of ['native/build/libcuzk_engine.so', 'proto/cuzk/v1/proving.proto', 'src/exporter/page/index.html', 'src/exporter/page/fleet.html', 'dist/src/exporter/page/ui/box.js', 'dist/src/exporter/page/ui/fleet.js', 'deploy/cuzk-exporter.env', 'deploy/fleet/prometheus.yml']) {
      expect([p, fs.existsSync(path.join(pkg, p))]).toEqual([p, true]);
    }
    expect(fs.realpathSync(bin)).toBe(path.join(pkg, 'dist', 'src', 'cli', 'main.js'));
  });

  test('cuzk-exporter --version, from another directory', async () => {
    const out = await run(bin, ['--version'], elsewhere, 30_000);
    expect(out).toBe(`cuzk-exporter, version ${VERSION} (node ${process.version}, ${process.platform}/${process.arch})\n`);
  });

  test('attach against a served cuzk /status fixture, from another directory', async () => {
    const fixture = fixtureText('02-snap-busy-consistent');
    const daemon = http.createServer((req, res) => {
      if (req.url !== '/status') return void res.writeHead(404).end();
      res.writeHead(200, { 'Content-Type': 'application/json', Connection: 'close' }).end(fixture);
    });
    await new Promise<void>((r) => daemon.listen(0, '127.0.0.1', () => r()));
    const statusUrl = `http://127.0.0.1:${(daemon.address() as AddressInfo).port}/status`;
    try {
      const port = await freePort();
      const child = spawn(bin, ['attach', '--cuzk.status-url', statusUrl, '--web.listen-address', `127.0.0.1:${port}`, '--cuzk.poll-interval', '200ms'], {
        cwd: elsewhere,
        detached: true, // its own process group, killed as a whole
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let output = '';
      child.stdout!.on('data', (d) => (output += d));
      child.stderr!.on('data', (d) => (output += d));
      const base = `http://127.0.0.1:${port}`;
      await pollUntil(async () => /^cuzk_up 1$/m.test(await (await fetch(`${base}/metrics`)).text()), 60_000, 'cuzk_up 1 from the installed exporter', () =>
        child.exitCode !== null ? `exited ${child.exitCode}: ${output}` : null,
      );
      expect((await fetch(`${base}/-/ready`)).status).toBe(200);
      const page = await fetch(`${base}/`);
      expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
      expect((await fetch(`${base}/ui/box.js`)).status).toBe(200);
      const status = (await (await fetch(`${base}/status`)).json()) as { pipelines: unknown[]; exporter: { version: string } };
      expect(status.exporter.version).toBe(VERSION);
      const om = await fetch(`${base}/metrics`, { headers: { Accept: 'application/openmetrics-text; version=1.0.0' } });
      expect(om.headers.get('content-type')).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
      expect(om.headers.get('content-encoding')).toBe('gzip'); // fetch asks for it, and decodes
      expect((await om.text()).endsWith('# EOF\n')).toBe(true);
      // SIGTERM: an orderly exit.
      process.kill(-child.pid!, 'SIGTERM');
      const code = await new Promise<number | null>((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', (c) => r(c))));
      expect([code, output]).toEqual([0, output]);
    } finally {
      await new Promise<void>((r) => daemon.close(() => r()));
    }
  }, 120_000);

  test('dashboards and a proof on the freshly built native library, from another directory', async () => {
    const dash = path.join(elsewhere, 'dash');
    await run(bin, ['dashboards', '--out', dash], elsewhere, 60_000);
    expect(fs.readdirSync(dash).sort()).toEqual(['cuzk-alerts.yml', 'cuzk-fleet.json', 'cuzk-fleet.yml', 'cuzk-overview.json']);
    const out = await run(bin, ['prove', '--kind', 'winning-post', '--count', '1', '--json'], elsewhere, 120_000);
    const line = JSON.parse(out.trim().split('\n').filter((l) => l.startsWith('{')).pop()!) as { outcome: string; verified?: boolean };
    expect(line.outcome).toBe('completed');
  }, 180_000);
});

describe('deploy/ systemd unit', () => {
  const unit = path.join(ROOT, 'deploy', 'cuzk-exporter.service');
  const text = fs.readFileSync(unit, 'utf8');

  test('systemd-analyze verify passes and the hardening is there', async () => {
    expect(SYSTEMD_ANALYZE).toBeDefined(); // Debian package systemd (.ci/run installs it)
    const r = spawnSync(SYSTEMD_ANALYZE!, ['verify', unit], { encoding: 'utf8' });
    expect([r.status, r.stdout + r.stderr]).toEqual([0, '']);
    for (const line of [
      'User=cuzk-exporter',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'ProtectHome=yes',
      'PrivateTmp=yes',
      'PrivateDevices=yes',
      'CapabilityBoundingSet=',
      'Restart=on-failure',
      'EnvironmentFile=/etc/default/cuzk-exporter',
      'SystemCallFilter=@system-service',
    ]) {
      expect(text.split('\n')).toContain(line);
    }
    // Node's JIT needs W+X memory: this one must stay off.
    expect(text).not.toMatch(/^MemoryDenyWriteExecute=yes/m);
    const sec = spawnSync(SYSTEMD_ANALYZE!, ['security', '--offline=yes', unit], { encoding: 'utf8' });
    const level = /Overall exposure level for \S+: ([\d.]+)/.exec(sec.stdout + sec.stderr);
    expect(level).not.toBeNull();
    expect(Number(level![1])).toBeLessThanOrEqual(2);
  });

  test('the environment file sets only real flags of the commands it may run', () => {
    const env = fs.readFileSync(path.join(ROOT, 'deploy', 'cuzk-exporter.env'), 'utf8');
    const names = new Set(OPTIONS.filter((o) => o.commands.includes('attach') || o.commands.includes('run')).map((o) => envName(o.name)));
    const keys = [...env.matchAll(/^#?(CUZK_EXPORTER_[A-Z0-9_]+)=/gm)].map((m) => m[1]);
    expect(keys.length).toBeGreaterThan(5);
    for (const k of keys) if (k !== 'CUZK_EXPORTER_COMMAND' && k !== 'CUZK_EXPORTER_ARGS') expect([k, names.has(k)]).toEqual([k, true]);
    expect(text).toContain('ExecStart=/usr/bin/env cuzk-exporter $CUZK_EXPORTER_COMMAND $CUZK_EXPORTER_ARGS');
  });
});
