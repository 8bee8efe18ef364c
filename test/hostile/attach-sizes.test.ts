/**
 * Issue 20, class 2 (attach side): an input is bounded before it costs anything.
 *  - GetStatus with 7.8 M empty GPUStatus entries (15.6 MB, under the 16 MiB cap): counted
 *    on the wire and refused before decoding (before: an 8.8 s stall every 5 s, 2.6 GB RSS);
 *  - a /status body of ~14 MiB of empty pipelines: objects counted before JSON.parse
 *    (before: 1.2 GB RSS, /-/healthy p50 1.8 s);
 *  - amplification: 91 KiB of `SYNTH_START …,partition=4095` lines, then our GET /status
 *    (before: a 490 MiB answer after 5.3 s, 2 GB RSS).
 * The exporter runs as the CLI (a child process); the stand-in daemons run here. Measured
 * as test/hostile/timeline-jump.test.ts does: /-/healthy latency on a kept-alive connection
 * while it happens (the aim p99 < 100 ms; on this shared box bounded by the aim or twice
 * what the host gave just before, plus one descheduling), the child's peak RSS (VmHWM <
 * 300 MiB) and the CPU it spent (the bound that holds on any host). Figures are printed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MAX_JOBS_LISTED, MAX_PARTITIONS_LISTED } from '../../src/engine/sources/attach/merged-status';
import { MAX_SNAPSHOT_CONTAINERS } from '../../src/engine/sources/plausibility';
import { FakeCuzkGrpc } from '../attach/grpc-server';
import { StatusServer } from '../attach/status-server';
import { find, parse } from '../helpers/prom-text';
import { Cli, killAll, startCli } from './cli-helpers';
import { cpuMs, peakRssMiB, pct, probe } from './process-probe';
import { tempDir, until } from './web-helpers';

afterEach(killAll);

const MiB = 1024 * 1024;

/** Runs `attack` against the CLI exporter at `url` while probing it; checks the bounds. */
async function bounded(what: string, cli: Cli, url: string, attack: () => Promise<void>, maxCpuMs: number): Promise<void> {
  const pid = cli.child.pid!;
  const base = await probe(url, () => new Promise((r) => setTimeout(r, 1000)));
  const cpu0 = cpuMs(pid);
  const during = await probe(url, attack);
  const cpu = cpuMs(pid) - cpu0;
  const rss = peakRssMiB(pid);
  const r = (x: number) => Math.round(x * 10) / 10;
  const report = { requests: during.length, p50: r(pct(during, 50)), p99: r(pct(during, 99)), max: r(Math.max(...during)), baseP99: r(pct(base, 99)), cpuMs: cpu, peakRssMiB: r(rss) };
  process.stderr.write(`${what}: ${JSON.stringify(report)}\n`);
  expect(rss).toBeLessThan(300);
  expect(cpu).toBeLessThan(maxCpuMs);
  // One descheduling of the exporter on this shared box is allowed for (the worst probe
  // is left out): with a handful of probes (the amplification attack takes ~5), p99 is the
  // maximum, and a single 400 ms stall of a loaded CI host is not the attack's doing.
  const rest = [...during].sort((a, b) => a - b).slice(0, -1);
  expect(rest.length === 0 ? 0 : pct(rest, 99)).toBeLessThan(Math.max(100, 2 * report.baseP99) + 250);
}

const errorsOf = async (url: string, reason: string) => find(parse(await (await fetch(`${url}/metrics`)).text()), 'cuzk_exporter_errors_total', { reason }) ?? 0;

test('GetStatus with 7.8 M empty GPUStatus entries (under the 16 MiB cap) is refused before decoding; no stall', async () => {
  const f = await FakeCuzkGrpc.start('127.0.0.1:0');
  try {
    // Field 1 (gpus), length 0: two bytes per entry, 15.6 MB in all.
    const n = 7_800_000;
    const wire = Buffer.alloc(2 * n);
    for (let i = 0; i < wire.length; i += 2) wire[i] = 0x0a;
    (f as unknown as { answer: (b: unknown, cb: (e: null, v: Buffer) => void) => void }).answer = (_b, cb) => cb(null, wire);
    const cli = startCli(['attach', '--cuzk.grpc-address', f.address, '--cuzk.grpc-status-interval', '5s', '--cuzk.timeout', '20s', '--cuzk.max-body-bytes', String(16 * MiB), '--web.listen-address', '127.0.0.1:0']);
    const url = await cli.url;
    await until('the first refusal', async () => (await errorsOf(url, 'grpc_bad_response')) >= 1, 30_000);
    await bounded('GetStatus 7.8 M gpus', cli, url, () => until('two more refusals', async () => (await errorsOf(url, 'grpc_bad_response')) >= 3, 60_000), 4000);
    expect(cli.stderr.join('').match(/more than 4096 gpus entries/)).not.toBeNull();
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toEqual({ code: 0, signal: null });
  } finally {
    await f.stop();
  }
});

test('/status of ~14 MiB of empty pipelines is refused before JSON.parse; no stall', async () => {
  const daemon = await StatusServer.start();
  try {
    const body = `{"uptime_secs":100,"pipelines":[${'{},'.repeat(Math.floor((14 * MiB) / 3) - 1)}{}],"gpu_workers":[]}`;
    expect(body.length).toBeGreaterThan(13.9 * MiB);
    daemon.behaviour = { kind: 'body', body: Buffer.from(body) };
    const cli = startCli(['attach', '--cuzk.status-url', daemon.url, '--cuzk.poll-interval', '1s', '--cuzk.timeout', '20s', '--cuzk.max-body-bytes', String(16 * MiB), '--web.listen-address', '127.0.0.1:0']);
    const url = await cli.url;
    await until('the first refusal', async () => (await errorsOf(url, 'invalid_snapshot')) >= 1, 30_000);
    await bounded('/status 14 MiB of {}', cli, url, () => until('three more refusals', async () => (await errorsOf(url, 'invalid_snapshot')) >= 4, 60_000), 3000);
    expect(cli.stderr.join('')).toContain(`rejected before parsing: more than ${MAX_SNAPSHOT_CONTAINERS} objects/arrays`);
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toEqual({ code: 0, signal: null });
  } finally {
    await daemon.close();
  }
});

test('amplification: 91 KiB of SYNTH_START …,partition=4095 lines make a bounded GET /status (jobs and partitions listed capped)', async () => {
  const d = tempDir('cuzk-amp-');
  try {
    const file = path.join(d, 'cuzk.log');
    fs.writeFileSync(file, '');
    const cli = startCli(['attach', '--cuzk.timeline-file', file, '--web.listen-address', '127.0.0.1:0']);
    const url = await cli.url;
    // Offsets at the real time since the exporter started (within the clock's tolerance).
    const off0 = 1000;
    let text = '';
    for (let i = 0; text.length < 91 * 1024; i++) text += `TIMELINE,${off0 + i},SYNTH_START,amp-${i},partition=4095\n`;
    const lines = text.split('\n').length - 1;
    fs.appendFileSync(file, text);
    const statusOf = async () => {
      const res = await fetch(`${url}/status`);
      const b = await res.text();
      expect(res.status).toBe(200);
      return { bytes: b.length, st: JSON.parse(b) as { pipelines: { partitions: unknown[] }[] } };
    };
    await until('every job read', async () => (await statusOf()).st.pipelines.length >= Math.min(lines, MAX_JOBS_LISTED), 30_000);
    let last = await statusOf();
    await bounded('amplification /status', cli, url, async () => {
      for (let i = 0; i < 5; i++) last = await statusOf();
    }, 3000);
    const parts = last.st.pipelines.reduce((a, p) => a + p.partitions.length, 0);
    process.stderr.write(`amplification: ${lines} lines (${text.length} B) -> /status ${last.bytes} B, ${last.st.pipelines.length} pipelines, ${parts} partitions\n`);
    expect(last.st.pipelines.length).toBeLessThanOrEqual(MAX_JOBS_LISTED);
    expect(parts).toBeLessThanOrEqual(MAX_JOBS_LISTED * MAX_PARTITIONS_LISTED);
    expect(last.bytes).toBeLessThan(8 * MiB);
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toEqual({ code: 0, signal: null });
  } finally {
    fs.rmSync(d, { recursive: true, force: true });
  }
});
