/**
 * Auth stall (issue 12, case 1): with basic auth on, can wrong passwords stall the server?
 *
 * The exporter (reference engine, sim backend, a workload running; the real startServer
 * with a web config holding one user whose password is a bcrypt hash of cost 10, as
 * `htpasswd -nBC 10` makes it) is measured from a scraper on a keep-alive connection with
 * good credentials — GET /-/healthy and GET /metrics back to back — first alone, then while
 * another process (bench/lib/auth-flood.ts) keeps 200 wrong-password requests in flight,
 * each a new password on a new connection. Latency is request start → last body byte.
 * Also recorded: what the attacker got (401 after a bcrypt check, 429 when the check queue
 * was full) and the event loop's longest delay during the flood.
 *
 * Before the fix bcrypt ran on the event loop (issue 12: 200 wrong passwords froze it for
 * ~23 s). Aim: p99 < 100 ms for both under the flood.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import bcrypt from 'bcryptjs';
import { startServer } from '../src/exporter/server';
import { Telemetry } from '../src/exporter/telemetry';
import { loadWebConfig } from '../src/exporter/web-config';
import { Workload } from '../src/engine/sources/native/workload';
import { silentLogger } from '../src/util/logger';
import type { FloodResult } from './lib/auth-flood';
import { openEngine } from './lib/engine';
import { Dist, Figure, dist, figure, nowMs, sleep } from './lib/stats';

export interface AuthStallOptions {
  runs?: number;
  /** Flood length per run, ms. */
  floodMs?: number;
  /** Wrong-password requests kept in flight. */
  concurrency?: number;
  /** Requests of each kind measured without the flood, per run. */
  baselineSamples?: number;
  log?: (msg: string) => void;
}

export interface AuthStallResult {
  method: string;
  runs: number;
  concurrency: number;
  floodMs: number;
  bcryptCost: number;
  /** Under the flood, p99 per run (ms). */
  healthyP99: Figure;
  scrapeP99: Figure;
  healthyP50: Figure;
  scrapeP50: Figure;
  /** Without the flood, p99 per run (ms). */
  baselineHealthyP99: Figure;
  baselineScrapeP99: Figure;
  /** Longest event-loop delay during the flood, per run (ms). */
  loopDelayMaxMs: Figure;
  /** What the attacker got, summed over the runs. */
  attacker: { requests: number; checked401: number; refused429: number; other: number };
  /** Requests answered with anything but 200 on the scraper's side (must be 0). */
  scraperFailures: number;
  perRun: { healthy: Dist; scrape: Dist; baselineHealthy: Dist; baselineScrape: Dist }[];
}

function get(agent: http.Agent, url: string, auth: string): Promise<{ ms: number; status: number }> {
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const req = http.get(url, { agent, headers: { Authorization: auth } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ ms: nowMs() - t0, status: res.statusCode ?? 0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

function floodProcess(url: string, concurrency: number, ms: number): { done: Promise<FloodResult> } {
  const script = path.join(__dirname, 'lib', 'auth-flood.js');
  const child = spawn(process.execPath, [script, url, String(concurrency), String(ms)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  return {
    done: new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as FloodResult) : reject(new Error(`auth-flood exited ${code}`))));
    }),
  };
}

export async function benchAuthStall(opts: AuthStallOptions = {}): Promise<AuthStallResult> {
  const runs = opts.runs ?? 3;
  const floodMs = opts.floodMs ?? 8000;
  const concurrency = opts.concurrency ?? 200;
  const baselineSamples = opts.baselineSamples ?? 200;
  const log = opts.log ?? (() => {});
  const cost = 10;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-bench-auth-'));
  const file = path.join(dir, 'web.yml');
  fs.writeFileSync(file, `basic_auth_users:\n  prom: '${bcrypt.hashSync('the right password', cost)}'\n`);
  const auth = `Basic ${Buffer.from('prom:the right password').toString('base64')}`;
  const perRun: AuthStallResult['perRun'] = [];
  const loopMax: number[] = [];
  const attacker = { requests: 0, checked401: 0, refused429: 0, other: 0 };
  let scraperFailures = 0;
  try {
    for (let run = 0; run < runs; run++) {
      const engine = openEngine({ backend: 'sim', gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2, time_scale: 0.01 });
      const telemetry = new Telemetry(engine, { version: 'bench', logger: silentLogger });
      const server = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', webConfig: loadWebConfig(file), source: engine, telemetry, logger: silentLogger, version: 'bench' });
      const workload = new Workload(engine, { mix: { 'snap-update': 3, 'window-post': 1 }, concurrency: 4 });
      void workload.run();
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const measure = async (until: () => boolean, max: number) => {
        const healthy: number[] = [];
        const scrape: number[] = [];
        while (until() && healthy.length < max) {
          const h = await get(agent, `${server.url}/-/healthy`, auth);
          const m = await get(agent, `${server.url}/metrics`, auth);
          if (h.status !== 200) scraperFailures++;
          if (m.status !== 200) scraperFailures++;
          healthy.push(h.ms);
          scrape.push(m.ms);
        }
        return { healthy, scrape };
      };
      try {
        await measure(() => true, 20); // warm-up; the good credentials are now cached
        const base = await measure(() => true, baselineSamples);
        const delay = monitorEventLoopDelay({ resolution: 5 });
        const flood = floodProcess(`${server.url}/metrics`, concurrency, floodMs);
        let floodDone = false;
        void flood.done.finally(() => (floodDone = true)).catch(() => {});
        await sleep(500); // the flood is under way
        delay.enable();
        const under = await measure(() => !floodDone, Infinity);
        delay.disable();
        const fr = await flood.done;
        attacker.requests += fr.requests;
        attacker.checked401 += fr.statuses['401'] ?? 0;
        attacker.refused429 += fr.statuses['429'] ?? 0;
        attacker.other += Object.entries(fr.statuses).filter(([k]) => k !== '401' && k !== '429').reduce((a, [, v]) => a + v, 0);
        loopMax.push(delay.max / 1e6);
        perRun.push({ healthy: dist(under.healthy), scrape: dist(under.scrape), baselineHealthy: dist(base.healthy), baselineScrape: dist(base.scrape) });
        log(`auth-stall run ${run + 1}/${runs}: under the flood /-/healthy p99 ${perRun[run].healthy.p99} ms, /metrics p99 ${perRun[run].scrape.p99} ms (${under.healthy.length} each); attacker ${JSON.stringify(fr.statuses)}`);
      } finally {
        agent.destroy();
        await workload.stop(0);
        await server.close();
        await telemetry.shutdown();
        await engine.close();
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return {
    method:
      'In-process exporter (sim engine, workload running, basic auth with one bcrypt cost-10 user); a keep-alive scraper with good credentials alternates GET /-/healthy and GET /metrics; ' +
      `another process keeps ${concurrency} wrong-password requests in flight (new password, new connection each). Latency = request start → last byte.`,
    runs,
    concurrency,
    floodMs,
    bcryptCost: cost,
    healthyP99: figure('ms', perRun.map((r) => r.healthy.p99)),
    scrapeP99: figure('ms', perRun.map((r) => r.scrape.p99)),
    healthyP50: figure('ms', perRun.map((r) => r.healthy.p50)),
    scrapeP50: figure('ms', perRun.map((r) => r.scrape.p50)),
    baselineHealthyP99: figure('ms', perRun.map((r) => r.baselineHealthy.p99)),
    baselineScrapeP99: figure('ms', perRun.map((r) => r.baselineScrape.p99)),
    loopDelayMaxMs: figure('ms', loopMax),
    attacker,
    scraperFailures,
    perRun,
  };
}
