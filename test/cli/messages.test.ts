/**
 * Help texts and messages say what the program does, as users type it (issue 24 item 2):
 * attach's help names its three surfaces; numeric flags show as numbers; an unknown flag is
 * named with its dashes; a YAML error in a one-line file points at line 1; a missing gRPC
 * socket is logged once (counted every time), without grpc-js's "Resolution note" fragment;
 * prove says its gpu_s/synth_s are summed over partitions. The compiled CLI, as users run it.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { OPTIONS } from '../../src/cli/options';
import { CLI, runCli } from '../helpers/cli-run';
import { find } from '../helpers/prom-text';

let tmp: string;
const children: ChildProcess[] = [];

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-messages-'));
});

afterAll(() => {
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null || c.pid === undefined) continue;
    try {
      process.kill(-c.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** The help text of one flag: from its `--name` to the next flag. */
function flagHelp(help: string, name: string): string {
  // Flags are indented a few spaces; continuation lines (which may name a flag) far more.
  const m = new RegExp(`^ {1,8}--${name.replace(/[.-]/g, '\\$&')}\\s([\\s\\S]*?)(?=^ {1,8}-)`, 'm').exec(help);
  if (!m) throw new Error(`--${name} not in help`);
  return m[1];
}

test('--help and attach --help say attach reads gRPC, TIMELINE and /status, not only "polling /status"', async () => {
  for (const args of [['--help'], ['attach', '--help']]) {
    const r = await runCli(args);
    expect(r.code).toBe(0);
    const text = r.stdout.replace(/\s+/g, ' ');
    expect(text).not.toMatch(/by polling its \/status/);
    expect(text).toMatch(/attach .*gRPC API.*TIMELINE lines of its log.*\/status/);
  }
});

test('numeric flags show as [number], durations as [duration], never as [string]', async () => {
  const help = (await runCli(['simulate', '--help'])).stdout + (await runCli(['attach', '--help'])).stdout;
  const checked = { number: 0, duration: 0 };
  for (const o of OPTIONS.filter((x) => x.commands.includes('simulate') || x.commands.includes('attach'))) {
    if (o.type !== 'number' && o.type !== 'integer' && o.type !== 'duration') continue;
    const h = flagHelp(help, o.name);
    const want = o.type === 'duration' ? '[duration]' : '[number]';
    expect([o.name, h.includes(want), h.includes('[string]')]).toEqual([o.name, true, false]);
    checked[o.type === 'duration' ? 'duration' : 'number']++;
  }
  expect(checked.number).toBeGreaterThan(5);
  expect(checked.duration).toBeGreaterThan(2);
  // Still validated from the text as typed.
  const bad = await runCli(['run', '--engine.gpus', 'abc', '--config.check']);
  expect([bad.code, bad.stderr]).toEqual([2, 'cuzk-exporter: --engine.gpus: "abc" is not a number\n']);
  const ok = await runCli(['run', '--engine.gpus', '2', '--engine.time-scale', '0.5', '--config.check']);
  expect(ok.code).toBe(0);
});

test('an unknown flag is named as typed, with its dashes; a stray word as it is', async () => {
  const r = await runCli(['run', '--web.listen-adress', ':9464']);
  expect(r.code).toBe(2);
  expect(r.stderr).toBe('cuzk-exporter: Unknown argument: --web.listen-adress (see cuzk-exporter --help)\n');
  const two = await runCli(['run', '--bogus=1', '-x']);
  expect(two.stderr).toMatch(/^cuzk-exporter: Unknown arguments: --bogus, -x /);
  expect((await runCli(['run', 'extra'])).stderr).toMatch(/^cuzk-exporter: Unknown argument: extra /);
  const missing = await runCli(['run', '--engine.gpus']);
  expect(missing.stderr).toMatch(/^cuzk-exporter: Not enough arguments following: --engine\.gpus /);
});

test('a YAML error in a one-line file points at line 1 (config file and targets file)', async () => {
  const cfg = path.join(tmp, 'one-line.yml');
  fs.writeFileSync(cfg, 'web.listen-address: [\n');
  const r = await runCli(['run', '--config.file', cfg, '--config.check']);
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(/not valid YAML: .* at line 1, column 22\n$/);
  const targets = path.join(tmp, 'targets.yml');
  fs.writeFileSync(targets, 'targets: "gpu-1\n');
  const f = await runCli(['fleet', '--targets.file', targets, '--config.check']);
  expect(f.code).toBe(2);
  expect(f.stderr).toMatch(/not valid YAML: .* at line 1, column \d+\n$/);
  // An error in the middle of a file keeps its own line.
  const mid = path.join(tmp, 'mid.yml');
  fs.writeFileSync(mid, 'log.level: info\nweb.listen-address: "x\nlog.format: json\n');
  expect((await runCli(['run', '--config.file', mid, '--config.check'])).stderr).toMatch(/ at line [23], column \d+\n$/);
});

test('a missing gRPC socket: one warning while it lasts, counted at every poll, no grpc-js fragments', async () => {
  const sock = path.join(tmp, 'absent.sock');
  const child = spawn(process.execPath, [CLI, 'attach', '--web.listen-address', '127.0.0.1:0', '--cuzk.grpc-address', `unix://${sock}`, '--cuzk.poll-interval', '100ms'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  child.stdout!.on('data', (d) => (out += d));
  const cap = Date.now() + 60_000;
  let url: string | undefined;
  let failures = 0;
  // Until both calls (GetMetrics every poll, GetStatus at start) have failed many times.
  while (failures < 10) {
    if (Date.now() > cap) throw new Error(`not 10 failures within 60 s: ${err}`);
    url ??= /metrics:\s+(http:\/\/\S+\/metrics)/.exec(out)?.[1];
    if (url) failures = find(await (await fetch(url)).text(), 'cuzk_exporter_errors_total', { reason: 'grpc_unavailable' }) ?? 0;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  const warns = err.split('\n').filter((l) => l.includes('level=warn'));
  expect(warns).toHaveLength(1);
  expect(warns[0]).toContain(`unavailable (connect ENOENT ${sock})`);
  expect(err).not.toMatch(/Resolution note|No connection established|Error: connect/);
}, 90_000);

test("prove says gpu_s and synth_s are summed over the proof's partitions", async () => {
  const r = await runCli(['prove', '--kind', 'snap-update', '--count', '1', '--engine.backend', 'sim', '--engine.time-scale', '0.01']);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^job_id\s+outcome\s+parts\s+queue_s\s+synth_s\s+gpu_s\s+total_s\s+verified$/m);
  expect(r.stderr).toContain("prove: synth_s and gpu_s are summed over each proof's partitions");
});
