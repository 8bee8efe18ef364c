/**
 * Fleet (issue 22): what one `cuzk-exporter fleet` costs per attached prover.
 *
 * For each size N, `cuzk-exporter simulate --simulate.boxes N` runs N cuzk daemons in one
 * process (sim backend, production timings × `timeScale`, a Curio-like workload of
 * `concurrency` proofs per box: TIMELINE lines, gRPC answers and /status as upstream writes
 * them), and a separate `cuzk-exporter fleet` process attaches to all N (gRPC + TIMELINE
 * file, the recommended pair; optionally /status too) with its default polling. A scraper in
 * this process plays Prometheus: every target's /probe once per `scrapeIntervalMs` (15 s,
 * Prometheus' default), spread evenly, with Prometheus' Accept and Accept-Encoding headers
 * over keep-alive connections. After a warm-up, over the window:
 *  - CPU: the fleet exporter's utime + stime (/proc/PID/stat) over wall time, % of one core
 *    (its own process only: the daemons and the scraper are elsewhere);
 *  - RSS: VmRSS of the exporter, sampled every second, median;
 *  - /probe latency: request start → last body byte, p50 / p99 over every scrape;
 *  - series per prover: sample lines of a /probe answer in text format 0.0.4 (what Prometheus
 *    stores per prover; median, min, max over the targets);
 *  - the daemons' TIMELINE lines per second per box (what the exporter had to read).
 * Then RSS = a + b·N and CPU = a + b·N are fitted by least squares over the sizes: b is the
 * cost per attached target.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultOf, OPTIONS } from '../src/cli/options';
import { findPackageRoot } from '../src/util/package-root';
import { Dist, dist, nowMs, sig, sleep } from './lib/stats';

/** `cuzk-exporter fleet`'s defaults (src/cli/options.ts), passed explicitly so each row says what it ran with. */
const fleetDefault = (name: string) => String(defaultOf(OPTIONS.find((o) => o.name === name)!, 'fleet'));
const FLEET_DEFAULTS = { poll: fleetDefault('cuzk.poll-interval'), grpcStatus: fleetDefault('cuzk.grpc-status-interval'), timelinePoll: fleetDefault('cuzk.timeline-poll-interval') };

export interface FleetBenchOptions {
  sizes?: number[];
  /** Further settings measured once each: /status attached too, a longer poll interval. */
  variants?: FleetVariant[];
  warmupMs?: number;
  windowMs?: number;
  scrapeIntervalMs?: number;
  timeScale?: number;
  concurrency?: number;
  /** Partitions each box synthesizes at once (a production box has many cores). */
  synthesisConcurrency?: number;
  log?: (msg: string) => void;
}

export interface FleetVariant {
  targets: number;
  /** Attach /status too (all three surfaces). */
  status?: boolean;
  /** --cuzk.poll-interval, --cuzk.grpc-status-interval, --cuzk.timeline-poll-interval (absent: the fleet's defaults). */
  pollInterval?: string;
  grpcStatusInterval?: string;
  timelinePollInterval?: string;
}

export interface FleetSize {
  targets: number;
  surfaces: string;
  pollInterval: string;
  grpcStatusInterval?: string;
  timelinePollInterval?: string;
  /** Exporter CPU over the window, % of one core. */
  cpuPercent: number;
  /** Exporter RSS over the window (median of 1 s samples), MiB. */
  rssMiB: number;
  probe: Dist;
  probeFailures: number;
  seriesPerProver: { median: number; min: number; max: number };
  /** One prover's /probe answer as Prometheus negotiates it (OpenMetrics, gzip), bytes on the wire (median). */
  probeWireBytes: number;
  timelineLinesPerBoxPerSecond: number;
  windowSeconds: number;
  loadavg: number;
}

export interface LinearFit {
  /** value = intercept + slope · targets */
  intercept: number;
  slope: number;
  r2: number;
}

export interface FleetResult {
  method: string;
  scrapeIntervalSeconds: number;
  pollIntervalSeconds: number;
  timeScale: number;
  concurrency: number;
  synthesisConcurrency: number;
  sizes: FleetSize[];
  variants: FleetSize[];
  fit: { rssMiB: LinearFit; cpuPercent: LinearFit };
}

const PROM_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

export function linearFit(xs: number[], ys: number[]): LinearFit {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
    syy += (ys[i] - my) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { intercept: sig(my - slope * mx), slope: sig(slope), r2: sig(syy === 0 ? 1 : (sxy * sxy) / (sxx * syy)) };
}

interface Proc {
  child: ChildProcess;
  out: () => string;
}

function start(args: string[]): Proc {
  const cli = path.join(findPackageRoot(), 'dist', 'src', 'cli', 'main.js');
  const child = spawn(process.execPath, [cli, ...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-64 * 1024);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, out: () => out };
}

async function stop(p: Proc | null): Promise<void> {
  const c = p?.child;
  if (!c || c.exitCode !== null || c.signalCode !== null || c.pid === undefined) return;
  const exited = new Promise((r) => c.once('exit', r));
  try {
    process.kill(-c.pid, 'SIGKILL');
  } catch {
    return;
  }
  await exited;
}

async function until<T>(what: string, f: () => T | undefined | Promise<T | undefined>, timeoutMs: number, p?: Proc): Promise<T> {
  const end = nowMs() + timeoutMs;
  for (;;) {
    if (p && p.child.exitCode !== null) throw new Error(`${what}: the process exited (${p.child.exitCode}): ${p.out()}`);
    const v = await f();
    if (v !== undefined) return v;
    if (nowMs() > end) throw new Error(`${what}: not within ${timeoutMs} ms${p ? `\n${p.out()}` : ''}`);
    await sleep(100);
  }
}

const CLK_TCK = 100; // Linux USER_HZ: /proc/PID/stat's utime and stime are in these
function cpuSeconds(pid: number): number {
  const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLK_TCK; // fields 14, 15 (utime, stime)
}
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

function get(agent: http.Agent, url: string, headers: Record<string, string>): Promise<{ ms: number; status: number; bytes: number; body: string }> {
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const req = http.get(url, { agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const buf = Buffer.concat(chunks);
        resolve({ ms: nowMs() - t0, status: res.statusCode ?? 0, bytes: buf.length, body: headers['Accept-Encoding'] ? '' : buf.toString() });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

function countTimelineLines(files: string[]): number {
  let n = 0;
  for (const f of files) {
    try {
      const t = fs.readFileSync(f, 'utf8');
      for (let i = t.indexOf('TIMELINE,'); i >= 0; i = t.indexOf('TIMELINE,', i + 9)) n++;
    } catch {
      // not written yet
    }
  }
  return n;
}

async function measure(v: FleetVariant, o: Required<Omit<FleetBenchOptions, 'log'>> & { log: (m: string) => void }): Promise<FleetSize> {
  const n = v.targets;
  const withStatus = v.status === true;
  const poll = v.pollInterval ?? FLEET_DEFAULTS.poll;
  const statusEvery = v.grpcStatusInterval ?? FLEET_DEFAULTS.grpcStatus;
  const tlEvery = v.timelinePollInterval ?? FLEET_DEFAULTS.timelinePoll;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-bench-fleet-'));
  let sim: Proc | null = null;
  let fleet: Proc | null = null;
  const agent = new http.Agent({ keepAlive: true });
  try {
    const addrFile = path.join(dir, 'addresses.json');
    sim = start([
      'simulate',
      '--engine.backend', 'sim',
      '--simulate.boxes', String(n),
      '--engine.time-scale', String(o.timeScale),
      '--workload.concurrency', String(o.concurrency),
      '--engine.synthesis-concurrency', String(o.synthesisConcurrency),
      '--simulate.grpc-listen', '127.0.0.1:0',
      '--simulate.status-listen', withStatus ? '127.0.0.1:0' : '',
      '--simulate.timeline-file', path.join(dir, 'cuzk.log'),
      '--simulate.addresses-file', addrFile,
      '--shutdown.grace', '0s',
      '--log.level', 'warn',
    ]);
    await until(`simulate ${n} boxes`, () => (sim!.out().includes('Press Ctrl-C') && fs.existsSync(addrFile) ? true : undefined), 120_000, sim);
    const boxes = JSON.parse(fs.readFileSync(addrFile, 'utf8')) as { name: string; grpc: string; status: string | null; timeline: string }[];
    const targets = ['targets:', ...boxes.map((b) => `  - {name: ${b.name}, grpc_address: "${b.grpc}", timeline_file: "${b.timeline}"${withStatus ? `, status_url: "${b.status}"` : ''}}`)].join('\n') + '\n';
    fs.writeFileSync(path.join(dir, 'targets.yml'), targets);
    fleet = start(['fleet', '--targets.file', path.join(dir, 'targets.yml'), '--web.listen-address', '127.0.0.1:0', '--cuzk.poll-interval', poll, '--cuzk.grpc-status-interval', statusEvery, '--cuzk.timeline-poll-interval', tlEvery, '--log.level', 'warn']);
    const url = await until('the fleet exporter', () => /fleet page: +(http:\/\/\S+)\//.exec(fleet!.out())?.[1], 60_000, fleet);
    const pid = fleet.child.pid!;
    await until(`all ${n} targets up`, async () => {
      const body = await (await fetch(`${url}/metrics`)).text();
      const up = body.split('\n').filter((l) => l.startsWith('cuzk_fleet_target_up{') && l.endsWith(' 1')).length;
      return up === n ? true : undefined;
    }, 120_000, fleet);

    // The scraper: each target every interval, spread evenly, as Prometheus does.
    const latencies: number[] = [];
    const wire: number[] = [];
    let failures = 0;
    let measuring = false;
    let running = true;
    const loops = boxes.map(async (b, i) => {
      await sleep((o.scrapeIntervalMs * i) / n);
      while (running) {
        const t0 = nowMs();
        try {
          const r = await get(agent, `${url}/probe?target=${b.name}`, { Accept: PROM_ACCEPT, 'Accept-Encoding': 'gzip' });
          if (measuring) {
            if (r.status === 200) {
              latencies.push(r.ms);
              wire.push(r.bytes);
            } else failures++;
          }
        } catch {
          if (measuring) failures++;
        }
        await sleep(Math.max(0, o.scrapeIntervalMs - (nowMs() - t0)));
      }
    });
    const what = `fleet ${n} targets${withStatus ? ' + /status' : ''}, poll ${poll}, GetStatus ${statusEvery}, log ${tlEvery}`;
    o.log(`${what}: warming up ${o.warmupMs / 1000} s`);
    await sleep(o.warmupMs);
    const files = boxes.map((b) => b.timeline);
    const lines0 = countTimelineLines(files);
    const cpu0 = cpuSeconds(pid);
    const t0 = nowMs();
    measuring = true;
    const rss: number[] = [];
    while (nowMs() - t0 < o.windowMs) {
      rss.push(rssMiB(pid));
      await sleep(1000);
    }
    const wallS = (nowMs() - t0) / 1000;
    const cpu = (cpuSeconds(pid) - cpu0) / wallS;
    measuring = false;
    const lines1 = countTimelineLines(files);
    running = false;
    await Promise.all(loops);
    // Series per prover: the text format, one line per series.
    const series: number[] = [];
    for (const b of boxes) {
      const r = await get(agent, `${url}/probe?target=${b.name}`, { Accept: 'text/plain;version=0.0.4' });
      series.push(r.body.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length);
    }
    series.sort((a, b) => a - b);
    const result: FleetSize = {
      targets: n,
      surfaces: withStatus ? 'grpc,status,timeline' : 'grpc,timeline',
      pollInterval: poll,
      grpcStatusInterval: statusEvery,
      timelinePollInterval: tlEvery,
      cpuPercent: sig(cpu * 100),
      rssMiB: sig([...rss].sort((a, b) => a - b)[Math.floor(rss.length / 2)]),
      probe: dist(latencies),
      probeFailures: failures,
      seriesPerProver: { median: series[Math.floor(series.length / 2)], min: series[0], max: series[series.length - 1] },
      probeWireBytes: [...wire].sort((a, b) => a - b)[Math.floor(wire.length / 2)] ?? NaN,
      timelineLinesPerBoxPerSecond: sig((lines1 - lines0) / n / wallS),
      windowSeconds: sig(wallS),
      loadavg: Math.round(os.loadavg()[0] * 100) / 100,
    };
    o.log(`${what}: CPU ${result.cpuPercent} % of a core, RSS ${result.rssMiB} MiB, /probe p50 ${result.probe.p50} / p99 ${result.probe.p99} ms, ${result.seriesPerProver.median} series per prover (load ${result.loadavg})`);
    return result;
  } finally {
    agent.destroy();
    await stop(fleet);
    await stop(sim);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchFleet(opts: FleetBenchOptions = {}): Promise<FleetResult> {
  const o = {
    sizes: opts.sizes ?? [10, 20, 50, 100],
    // Beside the fleet's defaults: /status too, and attach's defaults (1 s polls, GetStatus every 5 s, the log every 100 ms).
    variants: opts.variants ?? [{ targets: 100, status: true }, { targets: 100, pollInterval: '1s', grpcStatusInterval: '5s', timelinePollInterval: '100ms' }],
    warmupMs: opts.warmupMs ?? 20_000,
    windowMs: opts.windowMs ?? 60_000,
    scrapeIntervalMs: opts.scrapeIntervalMs ?? 15_000,
    timeScale: opts.timeScale ?? 0.5,
    concurrency: opts.concurrency ?? 4,
    synthesisConcurrency: opts.synthesisConcurrency ?? 8,
    log: opts.log ?? (() => undefined),
  };
  const sizes: FleetSize[] = [];
  for (const n of o.sizes) sizes.push(await measure({ targets: n }, o));
  const variants: FleetSize[] = [];
  for (const v of o.variants) variants.push(await measure(v, o));
  return {
    method:
      `simulate --simulate.boxes N (sim backend, production timings × ${o.timeScale}, ${o.concurrency} proofs in flight and ${o.synthesisConcurrency} partitions synthesized at once per box) in one process; ` +
      `cuzk-exporter fleet (its default flags: --cuzk.poll-interval ${FLEET_DEFAULTS.poll}, GetStatus every ${FLEET_DEFAULTS.grpcStatus}, the log looked at every ${FLEET_DEFAULTS.timelinePoll}) in another, attached to every box through gRPC + its TIMELINE file; ` +
      `a scraper here GETs every /probe once per ${o.scrapeIntervalMs / 1000} s, spread evenly, with Prometheus' headers (OpenMetrics, gzip, keep-alive). ` +
      `After ${o.warmupMs / 1000} s, over ${o.windowMs / 1000} s: the exporter's utime+stime / wall (% of one core), its VmRSS each second (median), every /probe's latency; series per prover from a text-format /probe. RSS and CPU fitted a + b·N by least squares.`,
    scrapeIntervalSeconds: o.scrapeIntervalMs / 1000,
    pollIntervalSeconds: Number(FLEET_DEFAULTS.poll.replace(/s$/, '')),
    timeScale: o.timeScale,
    concurrency: o.concurrency,
    synthesisConcurrency: o.synthesisConcurrency,
    sizes,
    variants,
    fit: {
      rssMiB: linearFit(sizes.map((s) => s.targets), sizes.map((s) => s.rssMiB)),
      cpuPercent: linearFit(sizes.map((s) => s.targets), sizes.map((s) => s.cpuPercent)),
    },
  };
}
