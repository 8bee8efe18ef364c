/**
 * Issue 20, class 3: the HTTP edge under clients that pipeline and never read, that pin the
 * connection cap, and under file-descriptor exhaustion.
 *  - 512 connections × 3000 pipelined `GET /metrics`, never read: scrapes keep succeeding,
 *    RSS stays small, and once the attackers leave the next scrape is answered at once
 *    (nothing queued for them is computed). Before: every scrape timed out, 535 MiB and
 *    growing after 8 s, the first scrape answered after 74 s, 66 s to recover.
 *  - `--web.max-connections 16` and 16 such connections: scrapers still get in.
 *  - an answer its client never reads: evictable at the cap, closed after the stall time.
 *  - `ulimit -n 64` and 100 idle connections: the server stays up and every scrape succeeds
 *    (before: 24 of 30 failed; out of descriptors, libuv resets every pending connection).
 * Against the built CLI (the attackers in this process), except the stall case, which
 * needs a huge answer and short timers and runs the edge in-process.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { createEdgeServer } from '../../src/exporter/edge';
import { WebConfigHolder } from '../../src/exporter/web-config';
import { createLogger } from '../../src/util/logger';
import { find, parse } from '../helpers/prom-text';
import { killAll, startCli } from './cli-helpers';
import { request, until } from './web-helpers';

afterEach(killAll);

const ATTACH = ['attach', '--cuzk.status-url', 'http://127.0.0.1:1/status', '--web.listen-address', '127.0.0.1:0'];

/** Connections that send `n` pipelined requests at once and never read a byte. */
async function pipeliners(port: number, count: number, n: number, path = '/metrics'): Promise<net.Socket[]> {
  const req = `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(n);
  const socks: net.Socket[] = [];
  let connected = 0;
  for (let i = 0; i < count; i++) {
    const s = net.connect(port, '127.0.0.1');
    s.pause(); // never read
    s.on('error', () => {});
    s.on('connect', () => {
      connected++;
      s.write(req);
    });
    socks.push(s);
  }
  await until(`${count} attackers connected`, () => connected === count, 30_000);
  return socks;
}

/** Bytes the kernel holds for a socket of ours that nobody has read (Linux /proc/net/tcp). */
function unread(sock: net.Socket): number {
  const port = sock.localPort!.toString(16).toUpperCase().padStart(4, '0');
  // Every entry with this local port (a busy box reuses ephemeral ports: an old TIME_WAIT
  // entry with the same port reads 0), the largest receive queue.
  let most = 0;
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(`:${port}`)) most = Math.max(most, parseInt(f[4].split(':')[1], 16));
  }
  return most;
}

function peakRssMiB(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

test('512 connections × 3000 pipelined GET /metrics never read: scrapes succeed, RSS small, recovery at once', async () => {
  const cli = startCli(ATTACH);
  const url = await cli.url;
  const port = Number(new URL(url).port);
  const attackers = await pipeliners(port, 512, 3000);
  try {
    // Scrapes one after another, each on a new connection: the first during the connection
    // storm, then 5 s more.
    const lat: number[] = [];
    // A connection arriving while every one of the 512 has a request in progress (none can
    // be evicted) is refused at the cap (edge.ts): on a loaded box that moment can come. A
    // scraper retries then, as Prometheus does at its next interval; at most 10 resets in
    // all (one each in two of four CI runs).
    let resets = 0;
    const get = async (p: string) => {
      for (;;) {
        try {
          return await request(`${url}${p}`);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET' || ++resets > 10) throw e;
        }
      }
    };
    const scrape = async () => {
      const t0 = performance.now();
      const r = await get('/metrics');
      expect(r.status).toBe(200);
      lat.push(performance.now() - t0);
    };
    await scrape();
    const end = Date.now() + 5_000;
    while (Date.now() < end) await scrape();
    const rss = peakRssMiB(cli.child.pid!);
    const body = (await get('/metrics')).body;
    const closed = find(parse(body), 'cuzk_exporter_errors_total', { reason: 'pipelining' }) ?? 0;
    const r = (x: number) => Math.round(x);
    const rest = lat.slice(1);
    process.stderr.write(`pipelining flood: ${JSON.stringify({ scrapes: lat.length, first: r(lat[0]), thenP50: r(pct(rest, 50)), thenP99: r(pct(rest, 99)), peakRssMiB: r(rss), closedForPipelining: closed, resets })}\n`);
    expect(rss).toBeLessThan(300);
    // Each attacker got at most 5 answers (one, then 4 pipelined in a row), then was closed.
    expect(closed).toBeGreaterThanOrEqual(500);
    // The first scrape's connection waits in the kernel's accept queue behind the 512
    // (libuv accepts one connection per event-loop turn); after that storm, scrapes are
    // answered as usual: the median, not only the last one.
    expect(lat.length).toBeGreaterThanOrEqual(10);
    expect(pct(lat.slice(1), 50)).toBeLessThan(100);
  } finally {
    for (const s of attackers) s.destroy();
  }
  // The attackers have left: nothing of theirs is still being computed.
  const t0 = performance.now();
  expect((await request(`${url}/metrics`)).status).toBe(200);
  expect(performance.now() - t0).toBeLessThan(1_000);
  cli.child.kill('SIGTERM');
  expect(await cli.exited).toEqual({ code: 0, signal: null });
});

test('--web.max-connections 16 and 16 connections that pipeline and never read: scrapers still get in', async () => {
  const cli = startCli([...ATTACH, '--web.max-connections', '16']);
  const url = await cli.url;
  // The status page's script (48 KB): answers that the socket buffers cannot all hold.
  const attackers = await pipeliners(Number(new URL(url).port), 16, 3000, '/page.js');
  try {
    // Every attacker is being answered (and reads none of it) before the scrapes come.
    await until('answers waiting unread on every attacker connection', () => attackers.every((s) => s.destroyed || unread(s) > 0), 30_000);
    for (let i = 0; i < 10; i++) expect((await request(`${url}/metrics`)).status).toBe(200);
  } finally {
    for (const s of attackers) s.destroy();
  }
  cli.child.kill('SIGTERM');
  expect(await cli.exited).toEqual({ code: 0, signal: null });
});

test('an answer its client never reads: the connection is evictable at the cap and closed after the stall time', async () => {
  const logs: string[] = [];
  const log = createLogger('debug', 'json', (l) => logs.push(l));
  const big = Buffer.alloc(32 * 1024 * 1024, 'x'); // far more than the socket buffers hold
  const edge = createEdgeServer({
    web: new WebConfigHolder(undefined, log),
    log,
    maxConnections: 2,
    writeStallMs: 2_000,
    handler: (req, res) => {
      res.writeHead(200);
      res.end(req.url === '/big' ? big : 'ok\n');
    },
  });
  await new Promise<void>((r) => edge.server.listen(0, '127.0.0.1', () => r()));
  const port = (edge.server.address() as net.AddressInfo).port;
  try {
    const stallers = await pipeliners(port, 2, 1, '/big');
    // Both hold the cap with an answer in progress that waits on them.
    await until('both answers written and waiting', () => edge.stats().open === 2);
    const t0 = Date.now();
    const ok = await new Promise<number>((resolve, reject) =>
      http.get(`http://127.0.0.1:${port}/small`, { agent: false }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on('error', reject),
    );
    expect(ok).toBe(200); // admitted: a staller was closed for it
    expect(edge.stats().dropped).toBe(1);
    // The other one is closed by the stall watch (2 s without progress, seen within a
    // second), not left for ever; and not before its 2 s.
    await until('the other staller closed', () => edge.stats().open === 0, 15_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_000);
    expect(logs.some((l) => /its client has read nothing of the answer/.test(l))).toBe(true);
    for (const s of stallers) s.destroy();
  } finally {
    edge.destroyAll();
    await new Promise((r) => edge.server.close(r));
  }
});

test('ulimit -n 64 and 100 idle connections: the server stays up and scrapes succeed', async () => {
  const cli = startCli(ATTACH, { sh: 'ulimit -n 64' });
  const url = await cli.url;
  const port = Number(new URL(url).port);
  const idle: net.Socket[] = [];
  try {
    for (let i = 0; i < 100; i++) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      idle.push(s);
    }
    await until('every idle connection was accepted or refused', () => idle.every((s) => !s.connecting), 30_000);
    let ok = 0;
    const failures: string[] = [];
    for (let i = 0; i < 30; i++) {
      try {
        if ((await request(`${url}/metrics`)).status === 200) ok++;
      } catch (e) {
        failures.push((e as NodeJS.ErrnoException).code ?? (e as Error).message);
      }
    }
    process.stderr.write(`fd exhaustion: ${JSON.stringify({ ok, of: 30, failures })}\n`);
    expect(ok).toBe(30);
    // The cap was set below the descriptors the process has, and said so at start.
    expect(cli.stderr.filter((l) => /few file descriptors: serving fewer connections/.test(l))).toHaveLength(1);
    expect(find(parse((await request(`${url}/metrics`)).body), 'cuzk_exporter_errors_total', { reason: 'connection_limit' })).toBeGreaterThanOrEqual(50);
    expect(cli.child.exitCode).toBeNull();
  } finally {
    for (const s of idle) s.destroy();
  }
  cli.child.kill('SIGTERM');
  expect(await cli.exited).toEqual({ code: 0, signal: null });
});
