/**
 * The compiled CLI, as users run it: `node dist/src/cli/main.js …` (built by the jest
 * global setup). Exit codes: 0 ok, 1 runtime failure, 2 bad flags/configuration.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { CLI, CliRun, runCli } from '../helpers/cli-run';

const cli = runCli;

type Run = CliRun;


/** Starts a long-running command and resolves once it printed its metrics URL. */
function startServing(args: string[]): Promise<{ child: ChildProcess; url: string; out: () => { stdout: string; stderr: string }; exit: Promise<Run> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const exit = new Promise<Run>((res) => child.on('exit', (code, signal) => res({ code, signal, stdout, stderr })));
    child.stderr!.on('data', (d) => (stderr += d));
    child.stdout!.on('data', (d) => {
      stdout += d;
      const m = /metrics:\s+(http:\/\/\S+)\/metrics/.exec(stdout);
      if (m) resolve({ child, url: m[1], out: () => ({ stdout, stderr }), exit });
    });
    void exit.then((r) => reject(new Error(`exited early (${r.code}): ${stderr}`)));
  });
}

const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');

describe('cuzk-exporter prove', () => {
  test('prove --kind snap-update --count 3 shows progress, prints per-proof timings and exits 0', async () => {
    const r = await cli(['prove', '--kind', 'snap-update', '--count', '3']);
    expect(r.stderr).toMatch(/\[[#-]{30}\]\s+100%\s+proofs 3\/3/);
    expect(r.stderr).toContain('prove: 3 snap-update proof(s) completed and verified');
    const rows = lines(r.stdout);
    expect(rows[0]).toMatch(/^job_id\s+outcome\s+parts\s+queue_s\s+synth_s\s+gpu_s\s+total_s\s+verified$/);
    expect(rows).toHaveLength(4);
    for (const row of rows.slice(1)) expect(row).toMatch(/^ps-snap-[0-9a-f-]{36}\s+completed\s+16(\s+\d+\.\d{3}){4}\s+yes$/);
    expect(r.code).toBe(0);
  });

  test('with partition-failure injection it exits non-zero with a clear message', async () => {
    const r = await cli(['prove', '--kind', 'snap-update', '--count', '3', '--fault.fail-partition-nth', '5']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/prove: 1 of 3 proofs failed:\n\s+ps-snap-\S+: failed: .*partition/);
  });

  test('--json prints one JSON object per proof', async () => {
    const r = await cli(['prove', '--kind', 'winning-post', '--count', '2', '--json']);
    expect(r.code).toBe(0);
    const objs = lines(r.stdout).map((l) => JSON.parse(l));
    expect(objs).toHaveLength(2);
    for (const o of objs) expect(o).toMatchObject({ kind: 'winning-post', outcome: 'completed', partitions: 1, verified: true });
  });
});

describe('bad input: one readable line and a non-zero exit', () => {
  const cases: [string, string[], NodeJS.ProcessEnv, RegExp][] = [
    ['unknown flag', ['run', '--no-such-flag', '1'], {}, /Unknown argument/],
    ['unknown command', ['frobnicate'], {}, /Unknown argument|command/],
    ['bad number', ['run', '--engine.gpus', 'two'], {}, /--engine.gpus: "two" is not a number/],
    ['out of range', ['run', '--engine.gpus', '0'], {}, /--engine.gpus: 0 is below the minimum 1/],
    ['bad choice', ['run', '--engine.backend', 'gpu'], {}, /--engine.backend: "gpu" is not one of cpu, sim/],
    ['bad duration', ['attach', '--cuzk.status-url', 'http://127.0.0.1:1/status', '--cuzk.poll-interval', 'soon'], {}, /not a duration/],
    ['bad env value', ['run'], { CUZK_EXPORTER_ENGINE_WORKERS_PER_GPU: '99' }, /--engine.workers-per-gpu \(from environment CUZK_EXPORTER_ENGINE_WORKERS_PER_GPU\): 99 is above the maximum 8/],
    ['bad listen address', ['run', '--web.listen-address', 'localhost'], {}, /--web.listen-address "localhost" is not host:port/],
    ['no attach surface', ['attach'], {}, /give at least one of --cuzk.grpc-address .*--cuzk.timeline-file .*--cuzk.status-url/],
    ['bad log level', ['run', '--log.level', 'loud'], {}, /--log.level: "loud" is not one of debug, info, warn, error/],
  ];
  test.each(cases)('%s', async (_name, args, env, re) => {
    const r = await cli(args, env);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(re);
    expect(r.stdout).toBe('');
  });

  test('config file: unknown key and bad value are one line each, a good file is used', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-cfg-'));
    const bad = path.join(dir, 'bad.yml');
    fs.writeFileSync(bad, 'web.listen-adress: ":1"\n');
    let r = await cli(['run', '--config.file', bad]);
    expect([r.code, lines(r.stderr).length]).toEqual([2, 1]);
    expect(r.stderr).toContain('unknown key "web.listen-adress"');
    fs.writeFileSync(bad, 'engine.gpus: -3\n');
    r = await cli(['run', '--config.file', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--engine.gpus (from config file ${bad}): -3 is below the minimum 1`);
    const good = path.join(dir, 'good.yml');
    fs.writeFileSync(good, 'engine.backend: sim\nengine.gpus: 2\n');
    r = await cli(['run', '--config.file', good, '--config.check']);
    expect([r.code, r.stdout]).toEqual([0, 'configuration OK\n']);
    fs.rmSync(dir, { recursive: true });
  });

  test('port in use: one line naming the address, exit non-zero', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const r = await cli(['run', '--web.listen-address', `127.0.0.1:${port}`, '--workload.concurrency', '0', '--log.level', 'error']);
      expect(r.code).not.toBe(0);
      expect(lines(r.stderr)).toEqual([`cuzk-exporter: cannot listen on 127.0.0.1:${port}: address already in use`]);
    } finally {
      blocker.close();
    }
  });

  test('--help explains every command', async () => {
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    for (const c of ['run', 'attach', 'prove', 'bench', 'dashboards']) expect(top.stdout).toContain(c);
    const run = await cli(['run', '--help']);
    expect(run.stdout).toContain('--web.listen-address');
    expect(run.stdout).toContain('CUZK_EXPORTER_WEB_LISTEN_ADDRESS');
    expect(run.stdout).toContain('--fault.status-bug-kind');
  });
});

/** Resolves once `get()` satisfies `done`, polling every 100 ms; the cap only stops a run that hangs. */
async function until<T>(what: string, get: () => Promise<T>, done: (v: T) => boolean, capMs = 90_000): Promise<T> {
  const cap = Date.now() + capMs;
  for (;;) {
    const v = await get();
    if (done(v)) return v;
    if (Date.now() > cap) throw new Error(`${what}: not within ${capMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('run (what npm start runs)', () => {
  // Waits on the condition (every metric present) rather than a fixed deadline: how long the
  // first proofs take to finish depends on how busy the machine is.
  test('serves every DESIGN §5 metric once its workload has run', async () => {
    const s = await startServing(['run', '--web.listen-address', '127.0.0.1:0']);
    try {
      const wanted = ['cuzk_gpu_worker_busy', 'cuzk_gpu_worker_busy_seconds_total', 'cuzk_gpu_busy_seconds_total', 'cuzk_partition_gpu_seconds_total', 'cuzk_partition_synthesis_seconds_total', 'cuzk_partition_gpu_duration_seconds_bucket', 'cuzk_partition_synthesis_duration_seconds_bucket', 'cuzk_partitions', 'cuzk_partitions_completed_total', 'cuzk_partitions_failed_total', 'cuzk_proofs_completed_total', 'cuzk_proofs_failed_total', 'cuzk_proof_duration_seconds_bucket', 'cuzk_proof_queue_wait_seconds_bucket', 'cuzk_queue_depth', 'cuzk_synthesis_active', 'cuzk_synthesis_max_concurrent', 'cuzk_memory_budget_bytes', 'cuzk_memory_used_bytes', 'cuzk_status_mismatch', 'cuzk_up', 'cuzk_exporter_events_total', 'cuzk_exporter_events_dropped_total', 'cuzk_exporter_build_info', 'cuzk_gpu_info', 'cuzk_gpu_idle_gap_seconds_bucket', 'cuzk_gpu_starved_seconds_total', 'cuzk_exporter_scrape_duration_seconds'];
      const missingIn = (body: string) => wanted.filter((n) => !new RegExp(`^${n}[{ ]`, 'm').test(body));
      const body = await until('every DESIGN §5 metric on /metrics', async () => (await fetch(`${s.url}/metrics`)).text(), (b) => missingIn(b).length === 0).catch(async (e: Error) => {
        const last = await (await fetch(`${s.url}/metrics`)).text();
        throw new Error(`${e.message}; missing: ${missingIn(last).join(', ')}`);
      });
      expect(missingIn(body)).toEqual([]);
      expect(s.out().stdout).toContain('status page: http://127.0.0.1:');
    } finally {
      s.child.kill('SIGTERM');
      await s.exit;
    }
  }, 120_000);
});

describe('signals', () => {
  // SnapDeals proofs at production time scale (9 s syntheses) cannot finish within a 1 s
  // grace: whatever the machine's load, the proofs in flight at the signal are cancelled
  // after the grace, and none is waited for.
  test.each(['SIGTERM', 'SIGINT'] as const)('%s: proofs in flight get the grace, then are cancelled; engine closes, exit 0', async (sig) => {
    const s = await startServing(['run', '--web.listen-address', '127.0.0.1:0', '--engine.backend', 'sim', '--engine.time-scale', '1', '--workload.mix', 'snap-update=1', '--workload.concurrency', '4', '--shutdown.grace', '1s']);
    // Proofs are in flight (their partitions are in the engine) before the signal.
    await until('proofs in flight', async () => (await fetch(`${s.url}/metrics`)).text(), (b) => /^cuzk_partitions\{[^}]*\} [1-9]/m.test(b));
    const t0 = Date.now();
    s.child.kill(sig);
    const r = await s.exit;
    const elapsed = Date.now() - t0;
    expect(r.code).toBe(0);
    expect(r.signal).toBeNull();
    expect(elapsed).toBeGreaterThanOrEqual(1000); // the grace was given
    const err = s.out().stderr;
    const shut = new RegExp(`msg="shutting down" signal=${sig} in_flight=(\\d+) grace_s=1`).exec(err);
    const stopped = /msg=stopped finished=(\d+) cancelled=(\d+)/.exec(err);
    expect([shut !== null, stopped !== null]).toEqual([true, true]);
    const inFlight = Number(shut![1]);
    expect(inFlight).toBeGreaterThan(0);
    expect({ finished: Number(stopped![1]), cancelled: Number(stopped![2]) }).toEqual({ finished: 0, cancelled: inFlight });
  });
});
