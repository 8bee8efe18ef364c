/**
 * Diagnosis of the scrape benchmark's latency tail (issue 21): where does a slow request's
 * time go? Not a benchmark row; a tool, run by hand (this process is the client: give it
 * the load client's young generation, load-client.ts CLIENT_SEMI_SPACE_MB, to match it):
 *
 *   node --min-semi-space-size=32 --max-semi-space-size=32 dist/bench/lib/tail-probe.js [--gpus 64] [--workers 2] [--concurrency 4] [--requests 2000]
 *                                     [--node-args "--max-semi-space-size=..."] [--client raw|http] [--show 12] [--out FILE]
 *
 * `--client raw` scrapes with the load client's raw sockets (bench/lib/raw-http-client.ts, the
 * benchmark's instrument since 2026-12-04); `http` (default) with Node's http client.
 *
 * Starts our server (startServer over the same synthetic box as bench/lib/scrape-server.ts)
 * in a child process that records, on one clock (CLOCK_MONOTONIC, shared by processes):
 * each request's arrival at the HTTP parser and its response 'finish' (node:diagnostics_channel),
 * each collection (start, end), each gzip, each GC pause (perf_hooks 'gc' entries) and the
 * event loop delay. This process is the client: `concurrency` keep-alive scrapers back to
 * back with Prometheus' headers, as bench/lib/load-client.ts, recording each request's start
 * and last byte. Then, for the slowest 1 %, it splits the latency into: before the server
 * saw the request, in the server (and what ran meanwhile: collections, GCs), after the
 * server finished until the client had the last byte.
 */
import { fork } from 'node:child_process';
import * as dc from 'node:diagnostics_channel';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { startServer } from '../../src/exporter/server';
import { CollectionBodies } from '../../src/exporter/shared-collection';
import { Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';
import { PROMETHEUS_HEADERS } from './load-client';
import { runRawJob } from './raw-http-client';
import { quantile } from './stats';
import { SyntheticBox } from './synthetic-box';

const now = (): number => Number(process.hrtime.bigint()) / 1e6;

interface Span {
  t0: number;
  t1: number;
  what?: string;
}

interface ServerTrace {
  requests: Span[];
  collections: Span[];
  gzips: Span[];
  gcs: Span[];
  loopDelay: { p50: number; p99: number; max: number };
  cpuMs: number;
}

async function child(gpus: number, workers: number): Promise<void> {
  const source = new SyntheticBox({ gpus, workersPerGpu: workers });
  const telemetry = new Telemetry(source, { version: 'bench', logger: silentLogger });
  source.populate();
  for (let i = 0; i < 50; i++) await telemetry.scrape('openmetrics');
  const trace: ServerTrace = { requests: [], collections: [], gzips: [], gcs: [], loopDelay: { p50: 0, p99: 0, max: 0 }, cpuMs: 0 };
  let recording = false;
  const started = new WeakMap<object, number>();
  dc.subscribe('http.server.request.start', (m) => {
    if (recording) started.set((m as { request: object }).request, now());
  });
  dc.subscribe('http.server.response.finish', (m) => {
    const t0 = started.get((m as { request: object }).request);
    if (t0 !== undefined) trace.requests.push({ t0, t1: now() });
  });
  const t = telemetry as unknown as { collectNow(): Promise<unknown> };
  const collectNow = t.collectNow.bind(telemetry);
  t.collectNow = async () => {
    const t0 = now();
    try {
      return await collectNow();
    } finally {
      if (recording) trace.collections.push({ t0, t1: now() });
    }
  };
  const encoded = CollectionBodies.prototype.encoded;
  CollectionBodies.prototype.encoded = function (this: CollectionBodies, format, level) {
    const t0 = now();
    const b = encoded.call(this, format, level);
    if (recording && level !== undefined) trace.gzips.push({ t0, t1: now() });
    return b;
  };
  const offset = now() - performance.now();
  new PerformanceObserver((list) => {
    if (!recording) return;
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      // perf_hooks constants: 1 minor (scavenge), 2 major (mark-compact), 4 incremental, 8 weak callbacks
      trace.gcs.push({ t0: e.startTime + offset, t1: e.startTime + offset + e.duration, what: kind === 1 ? 'scavenge' : kind === 2 ? 'mark-compact' : kind === 4 ? 'incremental' : `kind ${kind}` });
    }
  }).observe({ entryTypes: ['gc'] });
  const h = monitorEventLoopDelay({ resolution: 1 });
  const server = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', source, telemetry, logger: silentLogger, version: 'bench' });
  let cpu0 = 0;
  process.on('message', (m) => {
    if (m === 'start') {
      recording = true;
      h.enable();
      const u = process.cpuUsage();
      cpu0 = (u.user + u.system) / 1000;
      process.send?.('started');
    } else if (m === 'stop') {
      recording = false;
      h.disable();
      const u = process.cpuUsage();
      trace.cpuMs = (u.user + u.system) / 1000 - cpu0;
      trace.loopDelay = { p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6, max: h.max / 1e6 };
      process.send?.(trace);
    }
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ url: `${server.url}/metrics` });
}

function get(agent: http.Agent, url: string): Promise<Span & { bytes: number }> {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const req = http.get(url, { agent, headers: { ...PROMETHEUS_HEADERS } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ t0, t1: now(), bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
}

async function main(): Promise<void> {
  const gpus = Number(arg('gpus', '64'));
  const workers = Number(arg('workers', '2'));
  const concurrency = Number(arg('concurrency', '4'));
  const requests = Number(arg('requests', '2000'));
  const nodeArgs = arg('node-args', '').split(' ').filter((s) => s !== '');
  const srv = fork(__filename, ['--child', String(gpus), String(workers)], { execArgv: nodeArgs, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const url = await new Promise<string>((resolve) => srv.once('message', (m: { url: string }) => resolve(m.url)));
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    for (let i = 0; i < 50; i++) await get(agent, url);
    await new Promise((resolve) => {
      srv.once('message', resolve);
      srv.send('start');
    });
    // The client's own GC pauses (this process): a stall here reads as server latency.
    const clientGcs: Span[] = [];
    const offset = now() - performance.now();
    const obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) clientGcs.push({ t0: e.startTime + offset, t1: e.startTime + offset + e.duration });
    });
    obs.observe({ entryTypes: ['gc'] });
    const spans: Span[] = [];
    let issued = 0;
    const worker = async () => {
      while (issued < requests) {
        issued++;
        spans.push(await get(agent, url));
      }
    };
    const w0 = now();
    if (arg('client', 'http') === 'raw') {
      const r = await runRawJob({ url, headers: { ...PROMETHEUS_HEADERS }, requests, concurrency, warmup: 0 });
      r.startsMs.forEach((t, i) => spans.push({ t0: t + offset, t1: t + offset + r.latenciesMs[i] }));
    } else await Promise.all(Array.from({ length: concurrency }, worker));
    const wall = now() - w0;
    const trace = await new Promise<ServerTrace>((resolve) => {
      srv.once('message', (m: ServerTrace) => resolve(m));
      srv.send('stop');
    });
    agent.destroy();
    obs.disconnect();
    report(spans, trace, wall, requests, clientGcs);
    const out = arg('out', '');
    if (out) fs.writeFileSync(out, JSON.stringify({ spans, trace }));
  } finally {
    srv.disconnect();
  }
}

function report(spans: Span[], tr: ServerTrace, wallMs: number, requests: number, clientGcs: Span[]): void {
  const lat = spans.map((s) => s.t1 - s.t0);
  const f = (x: number) => x.toFixed(2);
  const q = (xs: number[], p: number) => f(quantile(xs, p));
  const d = (xs: number[]) => `p50 ${q(xs, 0.5)} p90 ${q(xs, 0.9)} p99 ${q(xs, 0.99)} max ${f(Math.max(...xs))}`;
  console.log(`requests ${spans.length} in ${f(wallMs)} ms; latency ${d(lat)}`);
  console.log(`server CPU ${f(tr.cpuMs / requests)} ms/request; collections ${tr.collections.length} (${f(requests / tr.collections.length)} requests each): ${d(tr.collections.map((s) => s.t1 - s.t0))}`);
  console.log(`gzip ${tr.gzips.length}: ${d(tr.gzips.map((s) => s.t1 - s.t0))}`);
  const kinds = new Map<string, number[]>();
  for (const g of tr.gcs) kinds.set(g.what!, [...(kinds.get(g.what!) ?? []), g.t1 - g.t0]);
  for (const [k, xs] of kinds) console.log(`gc ${k}: ${xs.length}, ${f(xs.length / requests)}/request, sum ${f(xs.reduce((a, b) => a + b, 0))} ms: ${d(xs)}`);
  console.log(`client GC: ${clientGcs.length}, sum ${f(clientGcs.reduce((a, g) => a + g.t1 - g.t0, 0))} ms`);
  console.log(`event loop delay p50 ${f(tr.loopDelay.p50)} p99 ${f(tr.loopDelay.p99)} max ${f(tr.loopDelay.max)} ms`);
  // The server's spans sorted by start, to match each client request to its server span:
  // the server span of a request starts after the client's t0 and ends before its t1. With
  // keep-alive scrapers each connection has one request in flight; match greedily by time.
  const srvSpans = [...tr.requests].sort((a, b) => a.t0 - b.t0);
  const used = new Set<number>();
  const rows = spans
    .map((s) => {
      let best = -1;
      for (let i = 0; i < srvSpans.length; i++) {
        if (used.has(i)) continue;
        const r = srvSpans[i];
        if (r.t0 >= s.t0 && r.t1 <= s.t1) {
          best = i;
          break;
        }
        if (r.t0 > s.t1) break;
      }
      if (best >= 0) used.add(best);
      const r = best >= 0 ? srvSpans[best] : null;
      const overlap = (xs: Span[]) => xs.filter((x) => x.t1 > s.t0 && x.t0 < s.t1);
      const colls = overlap(tr.collections);
      const gcs = overlap(tr.gcs);
      return {
        lat: s.t1 - s.t0,
        before: r ? r.t0 - s.t0 : NaN,
        inServer: r ? r.t1 - r.t0 : NaN,
        after: r ? s.t1 - r.t1 : NaN,
        collections: colls.length,
        collMs: colls.reduce((a, c) => a + Math.min(c.t1, s.t1) - Math.max(c.t0, s.t0), 0),
        gcMs: gcs.reduce((a, c) => a + Math.min(c.t1, s.t1) - Math.max(c.t0, s.t0), 0),
        clientGcMs: overlap(clientGcs).reduce((a, c) => a + Math.min(c.t1, s.t1) - Math.max(c.t0, s.t0), 0),
        gcs: gcs.map((g) => `${g.what}:${f(g.t1 - g.t0)}`).join(' '),
      };
    })
    .sort((a, b) => b.lat - a.lat);
  const all = (k: 'before' | 'inServer' | 'after' | 'collections' | 'collMs' | 'gcMs' | 'clientGcMs', xs = rows) => f(xs.reduce((a, r) => a + (Number.isNaN(r[k]) ? 0 : r[k]), 0) / xs.length);
  const top = rows.slice(0, Math.max(1, Math.ceil(rows.length / 100)));
  console.log(`mean split, all:      before ${all('before')} in-server ${all('inServer')} after ${all('after')} ms; collections overlapped ${all('collections')} (${all('collMs')} ms), GC overlapped ${all('gcMs')} ms, client GC ${all('clientGcMs')} ms`);
  console.log(`mean split, slowest 1%: before ${all('before', top)} in-server ${all('inServer', top)} after ${all('after', top)} ms; collections overlapped ${all('collections', top)} (${all('collMs', top)} ms), GC overlapped ${all('gcMs', top)} ms, client GC ${all('clientGcMs', top)} ms`);
  for (const r of rows.slice(0, Number(arg('show', '12')))) console.log(`  ${f(r.lat)} ms = before ${f(r.before)} + server ${f(r.inServer)} + after ${f(r.after)}; ${r.collections} collections ${f(r.collMs)} ms; gc ${f(r.gcMs)} ms ${r.gcs}; client gc ${f(r.clientGcMs)} ms`);
}

if (require.main === module) {
  if (process.argv[2] === '--child') {
    child(Number(process.argv[3]), Number(process.argv[4])).catch((e: Error) => {
      console.error(e);
      process.exit(1);
    });
  } else {
    main().catch((e: Error) => {
      console.error(e);
      process.exitCode = 1;
    });
  }
}
