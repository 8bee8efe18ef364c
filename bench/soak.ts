/**
 * Soak (issue 12): `npm run soak` — both exporters for a long time under scrape load with
 * hostile inputs rotating, and their memory watched.
 *
 *   node dist/bench/soak.js [--minutes 60] [--sample-seconds S] [--out-dir DIR]
 *   (or CUZK_SOAK_MINUTES=5 npm run soak)
 *
 * What runs (each exporter its own process, as users run it):
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
 * RSS of both exporters is sampled from /proc and plotted as an SVG.
 *
 * Pass (exit 0): after warm-up (the first quarter, at least 1 minute) each RSS series is
 * flat within 10 % (mean of the last quarter of the samples vs the first quarter), no
 * scrape failed, the final /metrics bodies pass `promtool check metrics` (where promtool is
 * installed), and both exporters exit 0 on SIGTERM.
 * Writes <out-dir>/soak.json and <out-dir>/soak-rss.svg (default bench/results/soak/).
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import bcrypt from 'bcryptjs';
import { findPackageRoot } from '../src/util/package-root';

interface Options {
  minutes: number;
  sampleSeconds: number;
  outDir: string;
}

function parseArgs(argv: string[]): Options {
  let minutes = Number(process.env.CUZK_SOAK_MINUTES ?? 60);
  let sampleSeconds = NaN;
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
    else if (a === '--out-dir') outDir = path.resolve(v());
    else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node dist/bench/soak.js [--minutes 60] [--sample-seconds S] [--out-dir DIR]   (env CUZK_SOAK_MINUTES)\n');
      process.exit(0);
    } else throw new Error(`unknown argument "${a}"`);
  }
  if (!(minutes > 0)) throw new Error('--minutes must be a positive number');
  if (!(sampleSeconds > 0)) sampleSeconds = Math.max(2, Math.min(15, (minutes * 60) / 240));
  return { minutes, sampleSeconds, outDir };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Exporter {
  name: string;
  child: ChildProcess;
  url: string;
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
  const child = spawn(process.execPath, [cli, ...args, '--log.format', 'json'], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  const e: Exporter = { name, child, url: '', stderrLines: 0, warnLines: [], exit: new Promise((r) => child.on('exit', (code) => r(code))) };
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
        const m = /"msg":"listening".*"url":"([^"]+)"/.exec(l);
        if (m && !e.url) {
          e.url = m[1].replace(/\/$/, '');
          resolve(e);
        }
      }
    });
    void e.exit.then((code) => reject(new Error(`${name} exited (${code}) before listening`)));
  });
}

function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

function get(url: string, agent: http.Agent, auth?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const mod = url.startsWith('https') ? https : http;
    const req = mod.get(url, { agent, headers: auth ? { Authorization: auth } : {}, rejectUnauthorized: false, timeout: 10_000 } as https.RequestOptions, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => resolve({ status: -1, body: '' }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: -1, body: '' }));
  });
}

/** The hostile /status stand-in: the next behaviour of the rotation on each request. */
function hostileDaemon(goodBody: () => string | null): Promise<{ server: http.Server; url: string; counts: Record<string, number> }> {
  const counts: Record<string, number> = {};
  const withGood = (f: (s: Record<string, any>) => void) => (): string | null => {
    const g = goodBody();
    if (!g) return null;
    const s = JSON.parse(g) as Record<string, any>;
    delete s.exporter;
    f(s);
    return JSON.stringify(s);
  };
  let gpuTag = 0;
  const rotation: [string, (res: http.ServerResponse) => void][] = [];
  const good = withGood(() => {});
  const json = (f: () => string | null) => (res: http.ServerResponse) => {
    const b = f();
    if (b === null) return void res.writeHead(503).end();
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(b) }).end(b);
  };
  const add = (name: string, h: (res: http.ServerResponse) => void, times = 1) => {
    for (let i = 0; i < times; i++) rotation.push([name, h]);
  };
  const hostile: [string, (res: http.ServerResponse) => void][] = [
    ['malformed', (res) => res.writeHead(200).end('{"uptime_secs": 12, "pipelines": [')],
    ['too_large', (res) => res.writeHead(200).end(Buffer.alloc(5 * 1024 * 1024, 0x20))],
    ['deep', json(() => good()?.replace(/}$/, `,"nested":${'['.repeat(5000)}${']'.repeat(5000)}}`) ?? null)],
    ['unknown_1mb', json(withGood((s) => (s.blob = 'u'.repeat(1024 * 1024))))],
    ['counter_drop', json(withGood((s) => s.counters && s.counters.completed_by_kind && (s.counters.completed_by_kind['snap-update'] = 0)))],
    ['gpu_ms_1e18', json(withGood((s) => s.pipelines?.[0]?.partitions?.[0] && ((s.pipelines[0].partitions[0].gpu_ms = 1e18), (s.pipelines[0].partitions[0].state = 'done'))))],
    ['long_job_id', json(withGood((s) => s.pipelines?.[0] && (s.pipelines[0].job_id = `long-${'j'.repeat(20_000)}-${Math.random()}`)))],
    ['gpu_churn', json(withGood((s) => (s.gpus = Array.from({ length: 1024 }, (_, i) => ({ ordinal: i, name: `gpu-${i}-${gpuTag}`, uuid: `GPU-${gpuTag++}-${i}`, pci_bus_id: null })))))],
    ['http_500', (res) => res.writeHead(500).end('boom')],
    ['hang', () => {}],
    ['cut_body', (res) => {
      const b = good() ?? '{}';
      res.writeHead(200, { 'Content-Length': Buffer.byteLength(b) });
      res.write(b.slice(0, Math.floor(b.length / 2)));
      res.socket?.destroy();
    }],
  ];
  // Two good answers between hostile ones: the source comes back up each time.
  for (const hb of hostile) {
    add('good', json(good), 2);
    rotation.push(hb);
  }
  let next = 0;
  const server = http.createServer((req, res) => {
    res.on('error', () => {});
    const [name, h] = rotation[next++ % rotation.length];
    counts[name] = (counts[name] ?? 0) + 1;
    h(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/status`, counts })));
}

/** The next hostile client action against the run exporter. */
async function hostileClient(i: number, run: Exporter, auth: string): Promise<string> {
  const u = new URL(run.url);
  const port = Number(u.port);
  const actions = ['wrong_passwords', 'idle_connections', 'plain_http_to_tls', 'garbage', 'huge_header', 'slow_sender', 'sighup'];
  const name = actions[i % actions.length];
  switch (name) {
    case 'wrong_passwords': {
      const agent = new https.Agent({ keepAlive: false, maxSockets: 100 });
      await Promise.all(Array.from({ length: 100 }, (_, k) => get(`${run.url}/metrics`, agent, `Basic ${Buffer.from(`prom:wrong-${i}-${k}`).toString('base64')}`)));
      agent.destroy();
      break;
    }
    case 'idle_connections': {
      const socks = Array.from({ length: 300 }, () => net.connect(port, '127.0.0.1').on('error', () => {}));
      await sleep(3000);
      for (const s of socks) s.destroy();
      break;
    }
    case 'plain_http_to_tls':
    case 'garbage':
    case 'huge_header': {
      const data = name === 'plain_http_to_tls' ? 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n' : name === 'garbage' ? '\x16\x03\x01\xff\xff' + 'z'.repeat(1000) : '';
      if (name === 'huge_header') {
        await new Promise<void>((resolve) => {
          const s = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false }, () => s.write(`GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${'h'.repeat(64 * 1024)}\r\n\r\n`));
          s.on('data', () => {});
          s.on('error', () => resolve());
          s.on('close', () => resolve());
          s.setTimeout(5000, () => s.destroy());
        });
        break;
      }
      await new Promise<void>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => s.write(data));
        s.on('data', () => {});
        s.on('error', () => resolve());
        s.on('close', () => resolve());
        s.setTimeout(5000, () => s.destroy());
      });
      break;
    }
    case 'slow_sender': {
      await new Promise<void>((resolve) => {
        const s = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false }, () => {
          let n = 0;
          const t = setInterval(() => {
            if (s.destroyed || n++ > 8) {
              clearInterval(t);
              s.destroy();
              resolve();
              return;
            }
            s.write('X');
          }, 1000);
        });
        s.on('error', () => resolve());
      });
      break;
    }
    case 'sighup':
      run.child.kill('SIGHUP');
      break;
  }
  return name;
}

export interface Series {
  t: number[];
  rss: Record<string, number[]>;
}

function flatness(xs: number[]): { firstMiB: number; lastMiB: number; change: number; minMiB: number; maxMiB: number } {
  const q = Math.max(1, Math.floor(xs.length / 4));
  const mean = (a: number[]) => a.reduce((s, x) => s + x, 0) / a.length;
  const first = mean(xs.slice(0, q));
  const last = mean(xs.slice(-q));
  const MiB = 1024 * 1024;
  return { firstMiB: first / MiB, lastMiB: last / MiB, change: (last - first) / first, minMiB: Math.min(...xs) / MiB, maxMiB: Math.max(...xs) / MiB };
}

export function svg(series: Series, warmupS: number, title: string): string {
  const W = 900;
  const H = 420;
  const L = 70;
  const R = 20;
  const T = 60;
  const B = 50;
  const names = Object.keys(series.rss);
  const colors = ['#1f77b4', '#d62728', '#2ca02c'];
  const all = names.flatMap((n) => series.rss[n]).filter(Number.isFinite);
  const maxY = Math.max(1, ...all) / (1024 * 1024);
  const yTop = Math.ceil((maxY * 1.15) / 50) * 50;
  const tMax = Math.max(1, ...series.t);
  const x = (t: number) => L + ((W - L - R) * t) / tMax;
  const y = (mib: number) => T + (H - T - B) * (1 - mib / yTop);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${title}</text>`);
  out.push(`<rect x="${x(0)}" y="${T}" width="${x(warmupS) - x(0)}" height="${H - T - B}" fill="#eee"/>`);
  out.push(`<text x="${(x(0) + x(warmupS)) / 2}" y="${T + 14}" text-anchor="middle" fill="#777">warm-up</text>`);
  for (let v = 0; v <= yTop; v += yTop / 5) {
    out.push(`<line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(0)}</text>`);
  }
  const tickStep = Math.max(60, Math.ceil(tMax / 10 / 60) * 60);
  for (let t = 0; t <= tMax; t += tickStep) out.push(`<text x="${x(t)}" y="${H - B + 18}" text-anchor="middle">${(t / 60).toFixed(0)}</text>`);
  out.push(`<text x="${(L + W - R) / 2}" y="${H - 10}" text-anchor="middle">minutes</text>`);
  out.push(`<text x="16" y="${(T + H - B) / 2}" transform="rotate(-90 16 ${(T + H - B) / 2})" text-anchor="middle">RSS (MiB)</text>`);
  out.push(`<line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="black"/><line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="black"/>`);
  names.forEach((n, i) => {
    const pts = series.t.map((t, k) => [t, series.rss[n][k]] as const).filter(([, v]) => Number.isFinite(v));
    out.push(`<polyline fill="none" stroke="${colors[i % colors.length]}" stroke-width="1.5" points="${pts.map(([t, v]) => `${x(t).toFixed(1)},${y(v / (1024 * 1024)).toFixed(1)}`).join(' ')}"/>`);
    out.push(`<rect x="${L + 10 + i * 300}" y="${T - 22}" width="12" height="3" fill="${colors[i % colors.length]}"/><text x="${L + 28 + i * 300}" y="${T - 17}">${n}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

async function main(): Promise<number> {
  const o = parseArgs(process.argv.slice(2));
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

  const t0 = Date.now();
  const end = t0 + durationMs;
  const series: Series = { t: [], rss: { 'cuzk-exporter run (TLS, auth)': [], 'cuzk-exporter attach (hostile daemon)': [] } };
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
      series.rss['cuzk-exporter run (TLS, auth)'].push(rssBytes(run.child.pid!));
      series.rss['cuzk-exporter attach (hostile daemon)'].push(rssBytes(attach.child.pid!));
      const k = series.t.length;
      if (k % Math.max(1, Math.round(60 / o.sampleSeconds)) === 0) {
        log(`${(series.t[k - 1] / 60).toFixed(1)} min: RSS run ${(series.rss['cuzk-exporter run (TLS, auth)'][k - 1] / 1048576).toFixed(1)} MiB, attach ${(series.rss['cuzk-exporter attach (hostile daemon)'][k - 1] / 1048576).toFixed(1)} MiB; scrapes ok ${scrapes.ok}, failed ${scrapes.failed}`);
      }
      await sleep(o.sampleSeconds * 1000);
    }
  };
  await Promise.all([scraper(), attacker(), sampler()]);
  clearInterval(goodTimer);

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
  run.child.kill('SIGTERM');
  attach.child.kill('SIGTERM');
  const [runExit, attachExit] = await Promise.all([run.exit, attach.exit]);
  daemon.server.close();
  daemon.server.closeAllConnections();
  fs.rmSync(dir, { recursive: true, force: true });

  const post = series.t.map((t, i) => [t, i] as const).filter(([t]) => t * 1000 >= warmupMs).map(([, i]) => i);
  const flat: Record<string, ReturnType<typeof flatness> & { flat: boolean }> = {};
  for (const [n, xs] of Object.entries(series.rss)) {
    const f = flatness(post.map((i) => xs[i]).filter(Number.isFinite));
    flat[n] = { ...f, flat: Math.abs(f.change) <= 0.1 };
  }
  const lintOk = Object.values(lint).every((v) => v === 'ok' || v.startsWith('promtool not installed'));
  const pass = Object.values(flat).every((f) => f.flat) && scrapes.failed === 0 && lintOk && runExit === 0 && attachExit === 0;
  const result = {
    generatedAt: new Date(t0).toISOString(),
    minutes: o.minutes,
    sampleSeconds: o.sampleSeconds,
    warmupMinutes: warmupMs / 60000,
    machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length, node: process.version, loadavgEnd: os.loadavg()[0] },
    pass,
    rssAfterWarmup: flat,
    scrapes,
    promtool: lint,
    exitCodes: { run: runExit, attach: attachExit },
    hostileDaemonAnswers: daemon.counts,
    hostileClientActions: hostileActions,
    exporterWarnLines: { run: run.warnLines.length, attach: attach.warnLines.length, runSample: run.warnLines.slice(0, 10), attachSample: attach.warnLines.slice(0, 20) },
    series: { t: series.t, rssMiB: Object.fromEntries(Object.entries(series.rss).map(([n, xs]) => [n, xs.map((v) => Math.round((v / 1048576) * 10) / 10)])) },
  };
  fs.mkdirSync(o.outDir, { recursive: true });
  fs.writeFileSync(path.join(o.outDir, 'soak.json'), JSON.stringify(result, null, 2) + '\n');
  fs.writeFileSync(path.join(o.outDir, 'soak-rss.svg'), svg(series, warmupMs / 1000, `cuzk-exporter soak: RSS over ${o.minutes} min under scrape load and rotating hostile inputs (${new Date(t0).toISOString().slice(0, 10)})`));
  const lines = [
    `soak: ${pass ? 'PASS' : 'FAIL'} after ${o.minutes} min`,
    ...Object.entries(flat).map(([n, f]) => `  ${n}: RSS ${f.firstMiB.toFixed(1)} -> ${f.lastMiB.toFixed(1)} MiB after warm-up (${(f.change * 100).toFixed(1)} %, range ${f.minMiB.toFixed(1)}..${f.maxMiB.toFixed(1)} MiB) ${f.flat ? 'flat' : 'NOT FLAT'}`),
    `  scrapes: ${scrapes.ok} ok, ${scrapes.failed} failed`,
    `  promtool: ${Object.entries(lint).map(([u, v]) => `${u.replace(/^https?:\/\/[^/]+/, '')} ${v === 'ok' ? 'ok' : v.split('\n')[0]}`).join('; ')}`,
    `  exits: run ${runExit}, attach ${attachExit}`,
    `  hostile daemon answers: ${JSON.stringify(daemon.counts)}`,
    `  hostile client actions: ${JSON.stringify(hostileActions)}`,
    `  wrote ${path.join(o.outDir, 'soak.json')} and soak-rss.svg`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
  return pass ? 0 : 1;
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
