/**
 * Issue 20, class 2 (first bullet), against the built CLI: the followed TIMELINE log grown
 * to 40 GiB at once — `truncate -s` on it, or a rotation to such a file — used to be read
 * synchronously (one `/-/healthy` took 41 s). Now every read is asynchronous and capped per
 * look, and a backlog past 64 MiB is skipped to its last 8 MiB (counted,
 * `timeline_skipped`). Measured here: `/-/healthy` latency while it happens (p99 against
 * the 100 ms aim, next to the same host's latency before it, so a loaded test host is told
 * apart from a stall), the process's peak RSS (VmHWM, < 300 MiB), and the follower still
 * following afterwards. CUZK_JUMP_BYTES runs it with a smaller jump.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { LogFollower } from '../../src/engine/sources/attach/timeline-follower';
import { find, parse } from '../helpers/prom-text';
import { killAll, startCli } from './cli-helpers';
import { cpuMs, peakRssMiB, pct, probe } from './process-probe';
import { tempDir, until } from './web-helpers';

afterEach(killAll);

const JUMP = Number(process.env.CUZK_JUMP_BYTES ?? 40 * 2 ** 30);

/** One GET on a kept-alive connection; resolves with the latency in ms. */
test('the followed log grown by 40 GiB at once (truncate -s, then a rotation to such a file): /-/healthy stays fast, RSS small, counted, still following', async () => {
  const d = tempDir('cuzk-jump-');
  try {
    const file = path.join(d, 'cuzk.log');
    // The daemon's offset 20 is now: a line written later claims its real offset (one
    // claiming 40 ms seconds later would be a new daemon's, a restart).
    const epochMs = Date.now() - 20;
    fs.writeFileSync(file, 'TIMELINE,10,SYNTH_START,w1,kind=window-post\nTIMELINE,20,GPU_PICKUP,w1,worker=0\n');
    const cli = startCli(['attach', '--cuzk.timeline-file', file, '--web.listen-address', '127.0.0.1:0']);
    const url = await cli.url;
    const metrics = async () => parse(await (await fetch(`${url}/metrics`)).text());
    const skipped = async () => find(await metrics(), 'cuzk_exporter_errors_total', { reason: 'timeline_skipped' }) ?? 0;
    await until('the catch-up read', async () => find(await metrics(), 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' }) === 1);

    // The same probe with nothing happening: what this host gives today.
    const base = await probe(url, () => new Promise((r) => setTimeout(r, 1000)));
    const cpu0 = cpuMs(cli.child.pid!);
    // The file operations are asynchronous here too: a synchronous one would stall this
    // process, and the probe's latencies with it.
    const fsp = fs.promises;
    const during = await probe(url, async () => {
      await fsp.truncate(file, JUMP);
      await until('the truncate -s jump counted', async () => (await skipped()) === 1, 30_000);
      const big = path.join(d, 'big.log');
      await fsp.writeFile(big, '');
      await fsp.truncate(big, JUMP);
      await fsp.appendFile(big, '\nTIMELINE,30,GPU_END,w1,worker=0,gpu_ms=10\n');
      await fsp.rename(big, file);
      await until('the rotation to a 40 GiB file counted', async () => (await skipped()) === 2, 30_000);
    });
    const cpu = cpuMs(cli.child.pid!) - cpu0;
    const rss = peakRssMiB(cli.child.pid!);
    const r = (x: number) => Math.round(x * 10) / 10;
    const report = { jumpBytes: JUMP, requests: during.length, p50: r(pct(during, 50)), p99: r(pct(during, 99)), max: r(Math.max(...during)), baseP99: r(pct(base, 99)), cpuMs: cpu, peakRssMiB: r(rss) };
    process.stderr.write(`timeline jump: ${JSON.stringify(report)}\n`);
    // The work done is the bound that holds on any host: reading 40 GiB took ~40 s of CPU;
    // reading two 8 MiB tails (and serving the probes and scrapes) takes a few hundred ms.
    expect(cpu).toBeLessThan(1500);
    expect(rss).toBeLessThan(300);
    // Latency (the aim: p99 < 100 ms) depends on the host too: a shared, loaded one
    // deschedules the probe itself. Bounded here by the aim or by what the same host gave
    // just before, whichever is larger, with room for one descheduling.
    expect(report.p99).toBeLessThan(Math.max(100, 2 * report.baseP99) + 250);
    // Still following: the GPU_END after the rotation's zeros was in the tail it read (as
    // history: state, not counted), and a line appended now is live.
    fs.appendFileSync(file, `TIMELINE,${Date.now() - epochMs},GPU_PICKUP,w2,worker=1\n`);
    await until('a line appended after the jumps', async () => find(await metrics(), 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '1' }) === 1);
    expect(find(await metrics(), 'cuzk_gpu_worker_busy', { gpu: 'unknown', worker: '0' })).toBe(0);
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toEqual({ code: 0, signal: null });
  } finally {
    fs.rmSync(d, { recursive: true, force: true });
  }
});

test('in process: the follower adds nothing measurable to event-loop delay while the log jumps by 40 GiB twice', async () => {
  const d = tempDir('cuzk-jump-eld-');
  const file = path.join(d, 'cuzk.log');
  fs.writeFileSync(file, 'TIMELINE,1,GPU_PICKUP,a,worker=0\n');
  const lost: string[] = [];
  const f = new LogFollower({ path: file, pollMs: 100, maxLineBytes: 64 * 1024, catchUpBytes: 8 << 20 }, { lines() {}, overlong() {}, caughtUp() {}, state() {}, lost: (r) => lost.push(r) });
  // Another process changes the file, as logrotate or an operator would: nothing here blocks.
  const sh = (cmd: string) => new Promise<void>((resolve, reject) => execFile('sh', ['-c', cmd], (e) => (e ? reject(e) : resolve())));
  const delay = async (during: () => Promise<void>) => {
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    await during();
    h.disable();
    return { p99: h.percentile(99) / 1e6, max: h.max / 1e6 };
  };
  try {
    f.start();
    const base = await delay(() => new Promise((r) => setTimeout(r, 1000)));
    const jumps = await delay(async () => {
      await sh(`truncate -s ${JUMP} '${file}'`);
      await until('the first jump skipped', () => lost.length === 1);
      await sh(`truncate -s ${JUMP} '${file}.big' && printf '\\nx\\n' >> '${file}.big' && mv '${file}.big' '${file}'`);
      await until('the second jump skipped', () => lost.length === 2);
    });
    const r = (x: number) => Math.round(x * 10) / 10;
    process.stderr.write(`timeline jump, event-loop delay (ms): ${JSON.stringify({ baseP99: r(base.p99), baseMax: r(base.max), jumpsP99: r(jumps.p99), jumpsMax: r(jumps.max) })}\n`);
    expect(lost).toEqual(['timeline_skipped', 'timeline_skipped']);
    // The aim (p99 < 100 ms), or against the same host a moment before (a loaded host
    // delays every process: its worst stall then is the scale). The old behaviour stalled
    // the loop for ~40 s per jump.
    expect(jumps.p99).toBeLessThan(Math.max(100, 3 * base.p99, 2 * base.max));
  } finally {
    await f.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
});
