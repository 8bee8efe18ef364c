/**
 * Two or more builds of our server side by side in one run, arms alternating (issue 21's
 * tail work): each arm is a compiled tree (a `dist` folder) whose own
 * bench/lib/scrape-server.js serves the same synthetic box in a process of its own, exactly
 * as the scrape benchmark starts it; one load client (bench/lib/load-client.ts, Prometheus'
 * headers, back-to-back keep-alive scrapers) scrapes each arm in turn, round after round,
 * the order reversed every round so drift and a neighbour's load hit every arm alike.
 *
 *   node dist/bench/lib/scrape-ab.js --arm base=/path/to/old/dist --arm new=dist [--arm-node-args new='--flag ...']
 *        [--arm-client base=http] [--rounds 20] [--requests 200] [--concurrency 4] [--gpus 64] [--workers 2]
 *
 * `--arm-client NAME=http` scrapes that arm with Node's http client instead of the raw one
 * (bench/lib/raw-http-client.ts): two arms of the same dist then compare the instruments.
 *
 * Per arm: the median over rounds of p50, p99 and server CPU per request (warm-up included,
 * as the benchmark counts it), and per later arm the median of its per-round ratios to the
 * first arm. The CPU figure is the robust one on a shared box; p99 of 200 requests is the
 * second-slowest request, noisy by nature, hence many rounds.
 */
import { ChildProcess, fork } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { LoadClient, PROMETHEUS_HEADERS } from './load-client';
import { median, quantile } from './stats';

interface Arm {
  name: string;
  child: ChildProcess;
  url: string;
  p50: number[];
  p99: number[];
  cpu: number[];
  client: 'raw' | 'http';
}

function args(name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < process.argv.length; i++) if (process.argv[i] === `--${name}`) out.push(process.argv[i + 1]);
  return out;
}
const num = (name: string, dflt: number) => Number(args(name)[0] ?? dflt);

async function startArm(name: string, dist: string, gpus: number, workers: number, nodeArgs: string[]): Promise<Arm> {
  const script = path.resolve(dist, 'bench/lib/scrape-server.js');
  const child = fork(script, ['--child', 'ours', String(gpus), String(workers)], { execArgv: nodeArgs, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`arm ${name} exited (${code})`)));
    child.once('message', (m: { url?: string; error?: string }) => (m.url ? resolve(m.url) : reject(new Error(`arm ${name}: ${m.error}`))));
  }).catch((e: Error) => {
    // An arm that could not start must not keep this process alive.
    if (child.connected) child.disconnect();
    throw e;
  });
  child.removeAllListeners('exit');
  return { name, child, url, p50: [], p99: [], cpu: [], client: 'raw' };
}

function cpuMs(a: Arm): Promise<number> {
  return new Promise((resolve) => {
    a.child.once('message', (m: { cpuMs: number }) => resolve(m.cpuMs));
    a.child.send('cpu');
  });
}

async function main(): Promise<void> {
  const specs = args('arm').map((s) => {
    const i = s.indexOf('=');
    return { name: s.slice(0, i), dist: s.slice(i + 1) };
  });
  if (specs.length < 1) throw new Error('give at least one --arm name=distFolder');
  const rounds = num('rounds', 20);
  const requests = num('requests', 200);
  const concurrency = num('concurrency', 4);
  const gpus = num('gpus', 64);
  const workers = num('workers', 2);
  const load0 = os.loadavg();
  const arms: Arm[] = [];
  const client = LoadClient.start();
  try {
    const nodeArgs = new Map(
      args('arm-node-args').map((s) => {
        const i = s.indexOf('=');
        return [s.slice(0, i), s.slice(i + 1).split(' ').filter((x) => x !== '')] as const;
      }),
    );
    const clients = new Set(args('arm-client').filter((s) => s.endsWith('=http')).map((s) => s.slice(0, -'=http'.length)));
    for (const s of specs) {
      const a = await startArm(s.name, s.dist, gpus, workers, nodeArgs.get(s.name) ?? []);
      if (clients.has(s.name)) a.client = 'http';
      arms.push(a);
    }
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? arms : [...arms].reverse();
      for (const a of order) {
        const c0 = await cpuMs(a);
        const res = await client.run({ url: a.url, headers: { ...PROMETHEUS_HEADERS }, requests, concurrency, warmup: 10, client: a.client });
        const c1 = await cpuMs(a);
        if (res.status.some((x) => x !== 200)) throw new Error(`arm ${a.name} answered ${res.status}`);
        a.p50.push(quantile(res.latenciesMs, 0.5));
        a.p99.push(quantile(res.latenciesMs, 0.99));
        a.cpu.push((c1 - c0) / (requests + 10));
      }
    }
  } finally {
    client.stop();
    for (const a of arms) if (a.child.connected) a.child.disconnect();
  }
  const f = (x: number) => x.toFixed(3);
  console.log(`${gpus} GPUs x ${workers}, ${concurrency} scrapers, ${requests} requests x ${rounds} rounds per arm; loadavg ${load0.map((x) => x.toFixed(2)).join(' ')} -> ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const base = arms[0];
  for (const a of arms) {
    const ratios = a === base ? '' : `; ratio to ${base.name} (median of per-round ratios): p50 ${f(median(a.p50.map((x, i) => x / base.p50[i])))} p99 ${f(median(a.p99.map((x, i) => x / base.p99[i])))} cpu ${f(median(a.cpu.map((x, i) => x / base.cpu[i])))}`;
    console.log(`${`${a.name} (${a.client})`.padEnd(16)} p50 ${f(median(a.p50))} ms, p99 ${f(median(a.p99))} ms (rounds: min ${f(Math.min(...a.p99))} max ${f(Math.max(...a.p99))}), cpu ${f(median(a.cpu))} ms/request${ratios}`);
  }
  console.log(`p99 per round: ${arms.map((a) => `${a.name} [${a.p99.map((x) => x.toFixed(1)).join(' ')}]`).join('  ')}`);
  console.log(`CPU ms/request per round: ${arms.map((a) => `${a.name} [${a.cpu.map((x) => x.toFixed(2)).join(' ')}]`).join('  ')}`);
}

if (require.main === module) {
  main().catch((e: Error) => {
    console.error(e);
    process.exitCode = 1;
  });
}
