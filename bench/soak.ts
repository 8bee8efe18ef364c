/**
 * Soak (issues 12, 18): `npm run soak` — both exporters for a long time under scrape load
 * with hostile inputs rotating, and their memory watched.
 *
 *   node dist/bench/soak.js [--minutes 60] [--sample-seconds S] [--heap-sample-seconds 10]
 *                           [--snapshots] [--out-dir DIR]      (or CUZK_SOAK_MINUTES=5 npm run soak)
 *   node dist/bench/soak.js --plot bench/results/soak/soak.json   (redraws soak.svg beside it)
 *
 * What runs (each exporter its own process, as users run it, plus --inspect on loopback):
 *  - `cuzk-exporter run` (sim engine, workload on) behind TLS and basic auth (a web config
 *    with a self-signed certificate made with the openssl CLI and a bcrypt cost-10 user);
 *  - a hostile stand-in for cuzk's /status (in this process) that answers each poll with the
 *    next behaviour of a rotation: the run exporter's own /status (a real, changing
 *    snapshot) most of the time, and in between malformed JSON, a body over the size limit,
 *    5,000-deep nesting, a 1 MB unknown field, a per-kind counter that drops, gpu_ms 1e18, a
 *    20,000-character job id, 1,024 GPUs renamed on every poll, HTTP 500, a hang, a cut body;
 *  - `cuzk-exporter attach` polling that stand-in every 250 ms (basic auth on its side);
 *  - scrapers: /metrics, /status and /-/healthy of both, every 200 ms, with good credentials;
 *  - every 10 s the next hostile client action against the run exporter: 100 wrong
 *    passwords at once, 300 idle connections held for 3 s, plain HTTP to the TLS port,
 *    garbage bytes, an oversized header, a slow sender, SIGHUP (web config reload).
 * Every --heap-sample-seconds the JS heap of both after a forced full GC (lib/heap-probe.ts,
 * through the inspector); RSS (total and anonymous) from /proc every --sample-seconds.
 *
 * Pass (exit 0): after warm-up (the first quarter, at least 1 minute) neither heap series
 * trends up beyond the bound (lib/trend.ts; bench/README.md "Soak" says why that is sound),
 * no scrape failed, the final /metrics bodies pass `promtool check metrics` (where promtool
 * is installed), and both exporters exit 0 on SIGTERM. RSS is reported, not judged.
 * Writes <out-dir>/soak.json and <out-dir>/soak.svg (default bench/results/soak/);
 * `--snapshots` adds the growth by constructor between heap snapshots at the end of warm-up
 * and at the end (diagnosis: a snapshot itself moves the heap and RSS).
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import { findPackageRoot } from '../src/util/package-root';
import { ClassRow, growth, HeapProbe, HeapSample, inspectorUrl } from './lib/heap-probe';
import { get, hostileClient, hostileDaemon, sleep } from './lib/soak-hostile';
import { soakSvg } from './lib/soak-plot';
import { Bound, judgeTrend, MIN_SAMPLES, TrendVerdict } from './lib/trend';

interface Options {
  minutes: number;
  sampleSeconds: number;
  heapSampleSeconds: number;
  outDir: string;
  /** Heap snapshots at the end of warm-up and at the end, compared by constructor. */
  snapshots: boolean;
  /** Only redraw the SVG of an existing soak.json (next to it). */
  plotOnly?: string;
}

function parseArgs(argv: string[]): Options {
  let minutes = Number(process.env.CUZK_SOAK_MINUTES ?? 60);
  let sampleSeconds = NaN;
  let heapSampleSeconds = 10;
  let snapshots = false;
  let plotOnly: string | undefined;
  let outDir = path.join(findPackageRoot(), 'bench', 'results', 'soak');
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`${a} needs a value`);
      return x;
    };
    if (a === '--minutes') minutes = Number(v());
    else if (a === '--sample-seconds') sampleSeconds = Number(v());
    else if (a === '--heap-sample-seconds') heapSampleSeconds = Number(v());
    else if (a === '--out-dir') outDir = path.resolve(v());
    else if (a === '--snapshots') snapshots = true;
    else if (a === '--plot') plotOnly = path.resolve(v());
    else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node dist/bench/soak.js [--minutes 60] [--sample-seconds S] [--heap-sample-seconds 10] [--snapshots] [--out-dir DIR] | --plot soak.json   (env CUZK_SOAK_MINUTES)\n');
      process.exit(0);
    } else throw new Error(`unknown argument "${a}"`);
  }
  if (!(minutes > 0)) throw new Error('--minutes must be a positive number');
  if (!(sampleSeconds > 0)) sampleSeconds = Math.max(2, Math.min(15, (minutes * 60) / 240));
  if (!(heapSampleSeconds >= 1)) throw new Error('--heap-sample-seconds must be at least 1');
  return { minutes, sampleSeconds, heapSampleSeconds, outDir, snapshots, plotOnly };
}

interface Exporter {
  name: string;
  child: ChildProcess;
  url: string;
  inspector: string;
  stderrLines: number;
  warnLines: string[];
  exit: Promise<number | null>;
}

/** Children still running: killed if the soak itself dies, so nothing outlives it. */
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function startExporter(name: string, args: string[]): Promise<Exporter> {
  const cli = path.join(__dirname, '..', 'src', 'cli', 'main.js');
  // --inspect on a loopback port the kernel picks: the heap probe's way in (heap-probe.ts).
  const child = spawn(process.execPath, ['--inspect=127.0.0.1:0', cli, ...args, '--log.format', 'json'], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  const e: Exporter = { name, child, url: '', inspector: '', stderrLines: 0, warnLines: [], exit: new Promise((r) => child.on('exit', (code) => r(code))) };
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) {
        e.stderrLines++;
        if (/"level":"(warn|error)"/.test(l) && e.warnLines.length < 200) e.warnLines.push(l.slice(0, 400));
        e.inspector ||= inspectorUrl(l) ?? '';
        const m = /"msg":"listening".*"url":"([^"]+)"/.exec(l);
        if (m && !e.url) {
          e.url = m[1].replace(/\/$/, '');
          if (e.inspector) resolve(e);
          else reject(new Error(`${name}: no inspector URL on stderr before "listening"`));
        }
      }
    });
    void e.exit.then((code) => reject(new Error(`${name} exited (${code}) before listening`)));
  });
}

/** RSS and its anonymous part (heap, malloc: what a leak grows; the rest is mapped files). */
function rssBytes(pid: number): { rss: number; anon: number } {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), anon: kb('RssAnon') };
  } catch {
    return { rss: NaN, anon: NaN };
  }
}

export interface Series {
  t: number[];
  rss: Record<string, number[]>;
  rssAnon: Record<string, number[]>;
  heapT: number[];
  heap: Record<string, number[]>;
  heapCommitted: Record<string, number[]>;
}

/**
 * Leak bound for the heap trend (trend.ts): growth over the judged window above 2 MiB and
 * above 5 % of the retained heap.
 */
const LEAK_BOUND: Bound = { floorBytes: 2 * 1024 * 1024, floorFraction: 0.05 };

/** RSS is reported beside the heap (it is what an operator sees) but not judged. */
function rssSummary(xs: number[], anon: number[]): { firstMiB: number; lastMiB: number; change: number; minMiB: number; maxMiB: number; anonFirstMiB: number; anonLastMiB: number } {
  const q = Math.max(1, Math.floor(xs.length / 4));
  const mean = (a: number[]) => a.reduce((s, x) => s + x, 0) / a.length;
  const first = mean(xs.slice(0, q));
  const last = mean(xs.slice(-q));
  const MiB = 1024 * 1024;
  return {
    firstMiB: first / MiB,
    lastMiB: last / MiB,
    change: (last - first) / first,
    minMiB: Math.min(...xs) / MiB,
    maxMiB: Math.max(...xs) / MiB,
    anonFirstMiB: mean(anon.slice(0, q)) / MiB,
    anonLastMiB: mean(anon.slice(-q)) / MiB,
  };
}

async function main(): Promise<number> {
  const o = parseArgs(process.argv.slice(2));
  if (o.plotOnly) {
    const out = path.join(path.dirname(o.plotOnly), 'soak.svg');
    fs.writeFileSync(out, plot(JSON.parse(fs.readFileSync(o.plotOnly, 'utf8')) as Parameters<typeof plot>[0]));
    process.stdout.write(`wrote ${out}\n`);
    return 0;
  }
  const durationMs = o.minutes * 60_000;
  const warmupMs = Math.min(durationMs / 2, Math.max(60_000, durationMs / 4));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-soak-'));
  const log = (m: string) => process.stderr.write(`soak: ${m}\n`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=localhost', '-days', '2', '-keyout', path.join(dir, 'k.pem'), '-out', path.join(dir, 'c.pem')], { stdio: 'ignore' });
  const hash = bcrypt.hashSync('soak password', 10);
  fs.writeFileSync(path.join(dir, 'web.yml'), `tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\nbasic_auth_users:\n  prom: '${hash}'\n`);
  fs.writeFileSync(path.join(dir, 'web-attach.yml'), `basic_auth_users:\n  prom: '${hash}'\n`);
  const auth = `Basic ${Buffer.from('prom:soak password').toString('base64')}`;

  const run = await startExporter('run', ['run', '--engine.backend', 'sim', '--engine.time-scale', '0.05', '--web.listen-address', '127.0.0.1:0', '--web.config.file', path.join(dir, 'web.yml')]);
  const runAgent = new https.Agent({ keepAlive: true, maxSockets: 2 });
  let good: string | null = null;
  const refreshGood = async () => {
    const r = await get(`${run.url}/status`, runAgent, auth);
    if (r.status === 200) good = r.body;
  };
  await refreshGood();
  const goodTimer = setInterval(() => void refreshGood(), 1000);
  const daemon = await hostileDaemon(() => good);
  const attach = await startExporter('attach', ['attach', '--cuzk.status-url', daemon.url, '--cuzk.poll-interval', '250ms', '--cuzk.timeout', '500ms', '--cuzk.max-body-bytes', String(4 * 1024 * 1024), '--web.listen-address', '127.0.0.1:0', '--web.config.file', path.join(dir, 'web-attach.yml')]);
  log(`run ${run.url} (pid ${run.child.pid}), attach ${attach.url} (pid ${attach.child.pid}), hostile daemon ${daemon.url}; ${o.minutes} min, RSS every ${o.sampleSeconds} s, warm-up ${(warmupMs / 60000).toFixed(1)} min`);

  const probes = { run: await HeapProbe.connect(run.inspector), attach: await HeapProbe.connect(attach.inspector) };

  const t0 = Date.now();
  const end = t0 + durationMs;
  const RUN = 'cuzk-exporter run (TLS, auth)';
  const ATTACH = 'cuzk-exporter attach (hostile daemon)';
  const series: Series = { t: [], rss: { [RUN]: [], [ATTACH]: [] }, rssAnon: { [RUN]: [], [ATTACH]: [] }, heapT: [], heap: { [RUN]: [], [ATTACH]: [] }, heapCommitted: { [RUN]: [], [ATTACH]: [] } };
  const scrapes = { ok: 0, failed: 0, failures: [] as string[] };
  const lastBodies: Record<string, string> = {};
  const attachAgent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  const scraper = async () => {
    const targets: [string, http.Agent][] = [
      [`${run.url}/metrics`, runAgent],
      [`${run.url}/status`, runAgent],
      [`${run.url}/-/healthy`, runAgent],
      [`${attach.url}/metrics`, attachAgent],
      [`${attach.url}/status`, attachAgent],
      [`${attach.url}/-/healthy`, attachAgent],
    ];
    while (Date.now() < end) {
      for (const [u, agent] of targets) {
        const r = await get(u, agent, auth);
        if (r.status === 200) {
          scrapes.ok++;
          if (u.endsWith('/metrics')) lastBodies[u] = r.body;
        } else {
          scrapes.failed++;
          if (scrapes.failures.length < 50) scrapes.failures.push(`${new Date().toISOString()} ${u}: ${r.status}`);
        }
      }
      await sleep(200);
    }
  };
  const hostileActions: Record<string, number> = {};
  const attacker = async () => {
    let i = 0;
    await sleep(5000);
    while (Date.now() < end - 5000) {
      const name = await hostileClient(i++, run, auth);
      hostileActions[name] = (hostileActions[name] ?? 0) + 1;
      await sleep(10_000);
    }
  };
  const sampler = async () => {
    while (Date.now() < end) {
      series.t.push((Date.now() - t0) / 1000);
      for (const [n, e] of [[RUN, run], [ATTACH, attach]] as const) {
        const m = rssBytes(e.child.pid!);
        series.rss[n].push(m.rss);
        series.rssAnon[n].push(m.anon);
      }
      await sleep(o.sampleSeconds * 1000);
    }
  };
  // Heap after a forced full GC, both exporters at the same instant (the GCs run in the
  // children, in parallel). A failed sample is a gap (NaN), never a zero.
  const snapshots: Record<string, { warmupEnd?: ClassRow[]; end?: ClassRow[] }> = { [RUN]: {}, [ATTACH]: {} };
  const heapSampler = async () => {
    let snapped = false;
    while (Date.now() < end) {
      // A snapshot makes V8 keep source positions and the profiler's object ids: taken
      // before the first judged sample, so its step is not inside the judged window.
      if (o.snapshots && !snapped && Date.now() - t0 >= warmupMs) {
        snapped = true;
        snapshots[RUN].warmupEnd = await probes.run.summary();
        snapshots[ATTACH].warmupEnd = await probes.attach.summary();
      }
      const at = (Date.now() - t0) / 1000;
      const [r, a] = await Promise.all([probes.run.sample().catch(() => null), probes.attach.sample().catch(() => null)]);
      const put = (n: string, h: HeapSample | null) => {
        series.heap[n].push(h ? h.usedBytes : NaN);
        series.heapCommitted[n].push(h ? h.committedBytes : NaN);
      };
      series.heapT.push(at);
      put(RUN, r);
      put(ATTACH, a);
      const k = series.heapT.length;
      if (k % Math.max(1, Math.round(60 / o.heapSampleSeconds)) === 0) {
        const mib = (x: number | undefined) => ((x ?? NaN) / 1048576).toFixed(1);
        log(`${(at / 60).toFixed(1)} min: heap after GC run ${mib(r?.usedBytes)} MiB, attach ${mib(a?.usedBytes)} MiB; RSS run ${mib(series.rss[RUN].at(-1))} MiB, attach ${mib(series.rss[ATTACH].at(-1))} MiB; scrapes ok ${scrapes.ok}, failed ${scrapes.failed}`);
      }
      await sleep(Math.max(0, at * 1000 + o.heapSampleSeconds * 1000 - (Date.now() - t0)));
    }
  };
  await Promise.all([scraper(), attacker(), sampler(), heapSampler()]);
  clearInterval(goodTimer);
  if (o.snapshots) {
    snapshots[RUN].end = await probes.run.summary();
    snapshots[ATTACH].end = await probes.attach.summary();
  }

  // promtool on the last bodies, then an orderly stop.
  const promtool = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((p) => fs.existsSync(p));
  const lint: Record<string, string> = {};
  for (const [u, body] of Object.entries(lastBodies)) {
    if (!promtool) {
      lint[u] = 'promtool not installed: not checked';
      continue;
    }
    try {
      execFileSync(promtool, ['check', 'metrics'], { input: body, stdio: ['pipe', 'pipe', 'pipe'] });
      lint[u] = 'ok';
    } catch (e) {
      lint[u] = String((e as { stdout?: Buffer; stderr?: Buffer }).stdout ?? '') + String((e as { stderr?: Buffer }).stderr ?? '');
    }
  }
  runAgent.destroy();
  attachAgent.destroy();
  // The inspector sessions go first: a process with a session attached waits for it at exit.
  await Promise.all([probes.run.close(), probes.attach.close()]);
  run.child.kill('SIGTERM');
  attach.child.kill('SIGTERM');
  const [runExit, attachExit] = await Promise.all([run.exit, attach.exit]);
  daemon.server.close();
  daemon.server.closeAllConnections();
  fs.rmSync(dir, { recursive: true, force: true });

  const judged = (ts: number[]) => ts.map((t, i) => [t, i] as const).filter(([t]) => t * 1000 >= warmupMs).map(([, i]) => i);
  const heapIdx = judged(series.heapT);
  const heap: Record<string, TrendVerdict> = {};
  for (const [n, xs] of Object.entries(series.heap)) {
    heap[n] = judgeTrend(heapIdx.map((i) => series.heapT[i]), heapIdx.map((i) => xs[i]), LEAK_BOUND);
  }
  const rssIdx = judged(series.t);
  const rss: Record<string, ReturnType<typeof rssSummary>> = {};
  for (const [n, xs] of Object.entries(series.rss)) rss[n] = rssSummary(rssIdx.map((i) => xs[i]).filter(Number.isFinite), rssIdx.map((i) => series.rssAnon[n][i]).filter(Number.isFinite));
  const lintOk = Object.values(lint).every((v) => v === 'ok' || v.startsWith('promtool not installed'));
  const pass = Object.values(heap).every((h) => !h.leak) && scrapes.failed === 0 && lintOk && runExit === 0 && attachExit === 0;
  const MiB = 1048576;
  const r1 = (x: number) => Math.round(x * 10) / 10;
  const result = {
    generatedAt: new Date(t0).toISOString(),
    minutes: o.minutes,
    sampleSeconds: o.sampleSeconds,
    heapSampleSeconds: o.heapSampleSeconds,
    warmupMinutes: warmupMs / 60000,
    machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length, node: process.version, loadavgEnd: os.loadavg()[0] },
    pass,
    criterion: { measure: 'V8 heap used after a forced full GC (inspector HeapProfiler.collectGarbage + Runtime.getHeapUsage)', leakIf: 'Theil-Sen slope x judged window > max(floorBytes, floorFraction x median level)', ...LEAK_BOUND },
    heapAfterGc: heap,
    rssAfterWarmup: rss,
    heapGrowthByConstructor: Object.fromEntries(Object.entries(snapshots).map(([n, s]) => [n, s.warmupEnd && s.end ? growth(s.warmupEnd, s.end, 12) : null])),
    scrapes,
    promtool: lint,
    exitCodes: { run: runExit, attach: attachExit },
    hostileDaemonAnswers: daemon.counts,
    hostileClientActions: hostileActions,
    exporterWarnLines: { run: run.warnLines.length, attach: attach.warnLines.length, runSample: run.warnLines.slice(0, 10), attachSample: attach.warnLines.slice(0, 20) },
    series: {
      t: series.t,
      rssMiB: Object.fromEntries(Object.entries(series.rss).map(([n, xs]) => [n, xs.map((v) => r1(v / MiB))])),
      rssAnonMiB: Object.fromEntries(Object.entries(series.rssAnon).map(([n, xs]) => [n, xs.map((v) => r1(v / MiB))])),
      heapT: series.heapT.map(r1),
      heapUsedMiB: Object.fromEntries(Object.entries(series.heap).map(([n, xs]) => [n, xs.map((v) => Math.round((v / MiB) * 100) / 100)])),
      heapCommittedMiB: Object.fromEntries(Object.entries(series.heapCommitted).map(([n, xs]) => [n, xs.map((v) => r1(v / MiB))])),
    },
  };
  fs.mkdirSync(o.outDir, { recursive: true });
  fs.writeFileSync(path.join(o.outDir, 'soak.json'), JSON.stringify(result, null, 2) + '\n');
  fs.writeFileSync(path.join(o.outDir, 'soak.svg'), plot(result));
  const fmt = (h: TrendVerdict) =>
    `${(h.levelBytes / MiB).toFixed(2)} MiB (range ${(h.minBytes / MiB).toFixed(2)}..${(h.maxBytes / MiB).toFixed(2)}), trend ${(h.slopeBytesPerMin / 1024).toFixed(1)} KiB/min = ${(h.growthBytes / MiB).toFixed(2)} MiB over ${(h.windowS / 60).toFixed(1)} min, bound ${(h.boundBytes / MiB).toFixed(2)} MiB: ${h.samples < MIN_SAMPLES ? `too few samples to judge (${h.samples} < ${MIN_SAMPLES})` : h.leak ? 'GROWING (leak)' : 'flat'}`;
  const lines = [
    `soak: ${pass ? 'PASS' : 'FAIL'} after ${o.minutes} min`,
    ...Object.entries(heap).map(([n, h]) => `  ${n}: heap after GC ${fmt(h)}`),
    ...Object.entries(rss).map(([n, f]) => `  ${n}: RSS ${f.firstMiB.toFixed(1)} -> ${f.lastMiB.toFixed(1)} MiB after warm-up (${(f.change * 100).toFixed(1)} %, range ${f.minMiB.toFixed(1)}..${f.maxMiB.toFixed(1)} MiB; anonymous ${f.anonFirstMiB.toFixed(1)} -> ${f.anonLastMiB.toFixed(1)} MiB; reported, not judged)`),
    ...Object.entries(result.heapGrowthByConstructor).filter(([, g]) => g).map(([n, g]) => `  ${n}: grew most (shallow bytes, warm-up end -> end): ${(g ?? []).slice(0, 5).map((x) => `${x.name} ${x.bytesDelta >= 0 ? '+' : ''}${(x.bytesDelta / 1024).toFixed(0)} KiB (${x.countDelta >= 0 ? '+' : ''}${x.countDelta})`).join(', ')}`),
    `  scrapes: ${scrapes.ok} ok, ${scrapes.failed} failed`,
    `  promtool: ${Object.entries(lint).map(([u, v]) => `${u.replace(/^https?:\/\/[^/]+/, '')} ${v === 'ok' ? 'ok' : v.split('\n')[0]}`).join('; ')}`,
    `  exits: run ${runExit}, attach ${attachExit}`,
    `  hostile daemon answers: ${JSON.stringify(daemon.counts)}`,
    `  hostile client actions: ${JSON.stringify(hostileActions)}`,
    `  wrote ${path.join(o.outDir, 'soak.json')} and soak.svg`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
  return pass ? 0 : 1;
}

/** The plot, from a result (so `--plot soak.json` redraws a committed result the same way). */
export function plot(r: { minutes: number; generatedAt: string; warmupMinutes: number; heapAfterGc: Record<string, TrendVerdict>; series: { t: number[]; rssMiB: Record<string, number[]>; heapT: number[]; heapUsedMiB: Record<string, number[]> } }): string {
  const warmupS = r.warmupMinutes * 60;
  return soakSvg(
    `cuzk-exporter soak, ${r.minutes} min under scrape load and rotating hostile inputs (${r.generatedAt.slice(0, 10)})`,
    [
      {
        title: 'JS heap used after a forced full GC (judged: trend over the window after warm-up)',
        unit: 'MiB',
        series: Object.entries(r.series.heapUsedMiB).map(([name, v]) => {
          const h = r.heapAfterGc[name];
          const tEnd = r.series.heapT[r.series.heapT.length - 1];
          const t0 = tEnd - h.windowS;
          const mid = (t0 + tEnd) / 2;
          const slope = h.slopeBytesPerMin / 60 / 1048576;
          const lvl = h.levelBytes / 1048576;
          return { name, t: r.series.heapT, v, trend: { t0, t1: tEnd, v0: lvl + slope * (t0 - mid), v1: lvl + slope * (tEnd - mid) } };
        }),
      },
      { title: 'RSS (reported, not judged)', unit: 'MiB', series: Object.entries(r.series.rssMiB).map(([name, v]) => ({ name, t: r.series.t, v })) },
    ],
    warmupS,
  );
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (e: Error) => {
      process.stderr.write(`soak: ${e.stack ?? e.message}\n`);
      process.exit(2);
    },
  );
}
