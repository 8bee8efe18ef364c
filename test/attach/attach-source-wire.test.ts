/**
 * Issue 23: what a /status poll makes of answers Node's own server never sends — a raw TCP
 * stand-in writes the bytes (an empty reason phrase, a body broken off after the head, a
 * malformed chunk after the head, a malformed status line). The outcome rules are
 * attach-source.ts' (every failure counted by reason with a readable message) and Node's
 * client's, which http1-client.ts follows: a malformed answer fails the request
 * (`GET <url>: Parse Error: …`), a connection lost mid-body fails the body ("connection
 * closed before the body was complete").
 */
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { getEventListeners } from 'node:events';
import { AttachSource, fetchLimited, KeepAlive } from '../../src/engine/sources/attach/attach-source';
import { silentLogger, createLogger } from '../../src/util/logger';

let server: net.Server;
let url = '';
/** What the stand-in writes for the next request; `close` ends the connection after it. */
let reply: { bytes: string; close: boolean } = { bytes: '', close: true };
/** When set, decides the reply by the request's number on its connection (0 = first). */
let script: ((n: number) => { bytes: string; close: boolean }) | null = null;
const sockets = new Set<net.Socket>();
let connections = 0;
let heads: string[] = [];

/** Waits until `cond` holds (checked every turn of the event loop), or fails after `ms`. */
async function until(cond: () => boolean, ms = 20_000): Promise<boolean> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) return false;
    await new Promise((r) => setTimeout(r, 5));
  }
  return true;
}

beforeAll(async () => {
  server = net.createServer((sock) => {
    sockets.add(sock);
    connections++;
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {});
    let head = '';
    let n = 0;
    sock.on('data', (d) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      heads.push(head);
      head = '';
      const r = script ? script(n++) : reply;
      if (r.bytes === '' && !r.close) return; // hang
      sock.write(r.bytes, 'latin1', () => {
        if (r.close) sock.destroy();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/status`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  script = null;
  heads = [];
  connections = 0;
});

async function poll(bytes: string, close = true): Promise<{ reason: string | null; message: string | null }> {
  const src = new AttachSource({ url, pollIntervalMs: 1000, timeoutMs: 3000, maxBodyBytes: 1 << 20, logger: silentLogger });
  reply = { bytes, close };
  await src.pollOnce();
  await src.stop();
  const reasons = [...src.model.errors.entries()].filter(([, n]) => n > 0).map(([r]) => r);
  return { reason: reasons.length === 1 ? reasons[0] : reasons.join(',') || null, message: src.model.errors.lastMessage };
}

test('an error status with an empty reason phrase: no trailing space', async () => {
  expect(await poll('HTTP/1.1 503 \r\nContent-Length: 0\r\n\r\n')).toEqual({ reason: 'http_status', message: `GET ${url}: HTTP 503` });
  expect(await poll('HTTP/1.1 404 Gone Fishing\r\nContent-Length: 0\r\n\r\n')).toEqual({ reason: 'http_status', message: `GET ${url}: HTTP 404 Gone Fishing` });
});

test('a body broken off after the head: the body failed, with the cause', async () => {
  expect(await poll('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"uptime_secs":')).toEqual({
    reason: 'connect',
    message: `GET ${url}: connection closed before the body was complete (connection reset by the daemon (ECONNRESET))`,
  });
});

test('a malformed chunk after the head: the request failed (a parse error), not a body cut short', async () => {
  expect(await poll('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')).toEqual({
    reason: 'connect',
    message: expect.stringMatching(new RegExp(`^GET ${url.replace(/\./g, '\\.')}: Parse Error: [^()]+ \\(HPE_[A-Z_]+\\)$`)),
  });
});

test('a malformed status line: a parse error with its code', async () => {
  expect(await poll('HTTP/1.1 2x0 OK\r\n\r\n')).toEqual({ reason: 'connect', message: `GET ${url}: Parse Error: Invalid response status (HPE_INVALID_STATUS)` });
});

test('the connection closed before any answer, on a new connection: counted, not retried', async () => {
  expect(await poll('')).toEqual({ reason: 'connect', message: `GET ${url}: connection reset by the daemon (ECONNRESET)` });
});

test('the poll asks for JSON', async () => {
  await poll('HTTP/1.1 204 No Content\r\n\r\n');
  expect(heads).toHaveLength(1);
  expect(heads[0]).toMatch(/\r\nAccept: application\/json\r\n/i);
});

test('a connection closed before any answer on a new connection is not asked again', async () => {
  await poll('');
  expect(connections).toBe(1);
});

test('a timeout closes the hung connection; an error status or a declared oversized body is not read, its connection closed', async () => {
  for (const bytes of ['', 'HTTP/1.1 503 Busy\r\nContent-Length: 1000\r\n\r\n', 'HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n{']) {
    reply = { bytes, close: false };
    const ka = new KeepAlive();
    // 1 s: the answered cases must beat the deadline too (the server is this process; a
    // 250 ms busy-wait in its answer made the 503 a timeout at 200 ms).
    const r = await fetchLimited(url, 1000, 1 << 20, undefined, ka).then(
      () => 'ok',
      (e: { reason: string }) => e.reason,
    );
    expect(r).toBe(bytes === '' ? 'timeout' : bytes.includes('503') ? 'http_status' : 'body_too_large');
    expect(await until(() => sockets.size === 0)).toBe(true);
    ka.destroy();
  }
});

test('shutdown abandons a hung poll: closed, its own message, no listener left on the signal', async () => {
  reply = { bytes: '', close: false };
  const ac = new AbortController();
  const p = fetchLimited(url, 60_000, 1 << 20, ac.signal).then(
    () => null,
    (e: { reason: string; message: string }) => e,
  );
  expect(await until(() => heads.length === 1)).toBe(true);
  ac.abort();
  expect(await p).toMatchObject({ reason: 'connect', message: `GET ${url}: abandoned at shutdown` });
  expect(await until(() => sockets.size === 0)).toBe(true);
  expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
});

test('polls leave no listener on the source’s signal, answered, failed or asked again', async () => {
  const ac = new AbortController();
  const ka = new KeepAlive();
  const ok = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}';
  // First request of a connection answered; a reused one hung up on (asked again on a new one).
  script = (n) => (n === 0 ? { bytes: ok, close: false } : { bytes: '', close: true });
  for (let i = 0; i < 3; i++) expect((await fetchLimited(url, 2000, 100, ac.signal, ka)).toString()).toBe('{}');
  expect(connections).toBe(3);
  script = () => ({ bytes: 'HTTP/1.1 500 X\r\nContent-Length: 0\r\n\r\n', close: false });
  await expect(fetchLimited(url, 2000, 100, ac.signal, ka)).rejects.toMatchObject({ reason: 'http_status' });
  expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  ka.destroy();
});

test('a streamed body over the limit is not read further', async () => {
  reply = { bytes: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n' + ('400\r\n' + ' '.repeat(1024) + '\r\n').repeat(64), close: false };
  const r = await fetchLimited(url, 2000, 10_000).then(
    () => 'ok',
    (e: { reason: string }) => e.reason,
  );
  expect(r).toBe('body_too_large');
  expect(await until(() => sockets.size === 0)).toBe(true);
});

test('keep-alive off: the connection that just answered is closed; stop() closes an idle one', async () => {
  const ok = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}';
  reply = { bytes: ok, close: false };
  const ka = new KeepAlive();
  await fetchLimited(url, 2000, 100, undefined, ka);
  expect(sockets.size).toBe(1);
  ka.freshNext = true;
  ka.answered(false);
  ka.freshNext = true;
  ka.answered(false);
  expect(ka.off).toBe(true);
  expect(await until(() => sockets.size === 0)).toBe(true);
  // A source's idle kept-alive connection is closed by stop().
  const src = new AttachSource({ url, pollIntervalMs: 1000, timeoutMs: 2000, maxBodyBytes: 1 << 20, logger: silentLogger });
  await src.pollOnce();
  expect(await until(() => sockets.size === 1)).toBe(true);
  await src.stop();
  expect(await until(() => sockets.size === 0)).toBe(true);
});

test('a reused connection that answered its head and then stalled is no strike: keep-alive stays on', async () => {
  const ok = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}';
  script = (n) => (n === 0 ? { bytes: ok, close: false } : { bytes: 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{', close: false });
  const lines: string[] = [];
  // 1 s, not 150 ms: the answered polls must beat the deadline too (a 250 ms busy-wait in the
  // in-process server's answer: 7 connections instead of 4).
  const src = new AttachSource({ url, pollIntervalMs: 1000, timeoutMs: 1000, maxBodyBytes: 1 << 20, logger: createLogger('debug', 'json', (l) => lines.push(l)) });
  for (let i = 0; i < 7; i++) await src.pollOnce();
  // answered, stalled, afresh answered, stalled, afresh answered, stalled, afresh answered
  expect(connections).toBe(4);
  expect(src.model.errors.get('timeout')).toBe(3);
  expect(lines.filter((l) => l.includes('connecting afresh'))).toHaveLength(0);
  await src.stop();
});

test('a request asked again on a new connection leaves no deadline behind to count a strike later', async () => {
  const ok = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}';
  // Every reused request hung up on: each poll after the first is asked again on a new connection.
  script = (n) => (n === 0 ? { bytes: ok, close: false } : { bytes: '', close: true });
  const ka = new KeepAlive();
  // Deadline 500 ms, not 100: the answer on the new connection must beat it (a 250 ms
  // busy-wait in the in-process server's answer timed it out).
  for (let i = 0; i < 4; i++) {
    await fetchLimited(url, 500, 100, undefined, ka);
    await new Promise((r) => setTimeout(r, 600)); // past the first request's deadline
  }
  expect(ka.off).toBe(false);
  expect(ka.strikes).toBe(0);
  ka.destroy();
});

test('start(): the next poll is due one interval after the last one began; none after stop()', async () => {
  reply = { bytes: 'HTTP/1.1 503 X\r\nContent-Length: 0\r\n\r\n', close: false };
  const src = new AttachSource({ url, pollIntervalMs: 500, timeoutMs: 2000, maxBodyBytes: 1 << 20, logger: silentLogger });
  const now = jest.spyOn(Date, 'now');
  const timers = jest.spyOn(global, 'setTimeout');
  try {
    let t = 1_000_000;
    now.mockImplementation(() => t);
    const polled = new Promise<void>((resolve) => {
      src.onPoll = () => {
        t += 30; // the poll took 30 ms
        resolve();
      };
    });
    src.start();
    await polled;
    expect(await until(() => timers.mock.calls.some(([, d]) => d === 470))).toBe(true);
    expect(timers.mock.calls.filter(([, d]) => d === 0 || d === 500 || d === 530)).toHaveLength(0);
  } finally {
    timers.mockRestore();
    now.mockRestore();
  }
  await src.stop();
  const after = src.polls;
  const quick = new AttachSource({ url, pollIntervalMs: 1, timeoutMs: 2000, maxBodyBytes: 1 << 20, logger: silentLogger });
  let n = 0;
  const twice = new Promise<void>((resolve) => {
    quick.onPoll = () => {
      if (++n === 2) resolve();
    };
  });
  quick.start();
  await twice;
  await quick.stop();
  const stopped = quick.polls;
  await new Promise((r) => setTimeout(r, 100)); // a hundred intervals
  expect(quick.polls).toBe(stopped);
  expect(src.polls).toBe(after);
});

test('a malformed answer on a reused connection is the daemon failing: counted, not asked again', async () => {
  const ok = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}';
  script = (n) => (n === 0 ? { bytes: ok, close: false } : { bytes: 'HTTP/1.1 2x0 OK\r\n\r\n', close: false });
  const ka = new KeepAlive();
  await fetchLimited(url, 2000, 100, undefined, ka);
  await expect(fetchLimited(url, 2000, 100, undefined, ka)).rejects.toMatchObject({ reason: 'connect', message: `GET ${url}: Parse Error: Invalid response status (HPE_INVALID_STATUS)` });
  expect(connections).toBe(1);
  ka.destroy();
});

test('https: a body broken off after the head is the body failing, with its cause; stop() closes the idle TLS connection', async () => {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const https = await import('node:https');
  const { Pki } = await import('../hostile/pki');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-attach-wire-'));
  const pki = new Pki(dir);
  const pair = pki.issue('cuzk', ['IP:127.0.0.1']);
  let cut = true;
  const open = new Set<net.Socket>();
  const srv = https.createServer({ cert: pki.read(pair.cert), key: pki.read(pair.key) }, (req, res) => {
    if (!cut) {
      res.writeHead(200, { 'Content-Length': 2 });
      res.end('{}');
      return;
    }
    res.writeHead(200, { 'Content-Length': 100 });
    res.write('{"uptime_secs":', () => req.socket.destroy());
  });
  srv.on('secureConnection', (s: net.Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const u = `https://127.0.0.1:${(srv.address() as AddressInfo).port}/status`;
  const ka = new KeepAlive();
  (ka.https as unknown as { options: { ca: Buffer } }).options.ca = pki.read(pki.ca.cert);
  try {
    await expect(fetchLimited(u, 3000, 1 << 20, undefined, ka)).rejects.toMatchObject({
      reason: 'connect',
      message: `GET ${u}: connection closed before the body was complete (connection reset by the daemon (ECONNRESET))`,
    });
    cut = false;
    expect((await fetchLimited(u, 3000, 1 << 20, undefined, ka)).toString()).toBe('{}');
    expect(await until(() => open.size === 1)).toBe(true);
    ka.destroy();
    expect(await until(() => open.size === 0)).toBe(true);
  } finally {
    ka.destroy();
    srv.closeAllConnections();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('https: a poll hung on a reused connection, abandoned at shutdown, is not asked again', async () => {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const https = await import('node:https');
  const { Pki } = await import('../hostile/pki');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-attach-wire-'));
  const pki = new Pki(dir);
  const pair = pki.issue('cuzk', ['IP:127.0.0.1']);
  let requests = 0;
  const srv = https.createServer({ cert: pki.read(pair.cert), key: pki.read(pair.key) }, (_req, res) => {
    if (++requests > 1) return; // hang
    res.writeHead(200, { 'Content-Length': 2 });
    res.end('{}');
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const u = `https://127.0.0.1:${(srv.address() as AddressInfo).port}/status`;
  const ka = new KeepAlive();
  (ka.https as unknown as { options: { ca: Buffer } }).options.ca = pki.read(pki.ca.cert);
  const ac = new AbortController();
  try {
    await fetchLimited(u, 5000, 1 << 20, ac.signal, ka);
    const p = fetchLimited(u, 5000, 1 << 20, ac.signal, ka).catch((e: { message: string }) => e.message);
    expect(await until(() => requests === 2)).toBe(true);
    ac.abort();
    expect(await p).toBe(`GET ${u}: abandoned at shutdown`);
    expect(await until(() => requests > 2, 500)).toBe(false);
  } finally {
    ka.destroy();
    srv.closeAllConnections();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
