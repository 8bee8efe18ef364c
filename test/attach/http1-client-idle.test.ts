/**
 * http1-client.ts: what an idle connection carries and what a closed one leaves behind
 * (issue 23: the six mutants the Stryker run left open, test/mutation/files/http1-client.md).
 *
 *  - TCP keep-alive on the idle connection: the header says the client does what the poll
 *    used Node's keep-alive http.Agent for; that agent turns SO_KEEPALIVE on (keepAliveMsecs,
 *    1 s by default) for every socket it keeps free (Agent#keepSocketAlive). Node has no
 *    getter for it, the kernel shows it: an established socket with SO_KEEPALIVE has its
 *    keep-alive timer armed (timer 2 in /proc/net/tcp's `tr` column), one without it has none
 *    while nothing is in flight. The server's end of the same connection (no keep-alive
 *    asked) is the control.
 *  - A connection that closed is forgotten by the pool: one poll every few seconds for
 *    months must not grow a set of dead connections. There is no count in the API, so the
 *    pool's set of live connections is read directly (the only way to see a leak in-process).
 * Real servers on 127.0.0.1; Linux (/proc).
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Http1Handlers, Http1Pool, Http1Target } from '../../src/engine/sources/attach/http1-client';

jest.setTimeout(30_000);

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}';
const OK_CLOSE = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}';

async function server(answer: () => string) {
  const sockets: net.Socket[] = [];
  const srv = net.createServer((s) => {
    sockets.push(s);
    s.on('error', () => {});
    s.on('data', () => {
      const a = answer();
      if (a === OK_CLOSE) s.end(a);
      else s.write(a);
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    port: (srv.address() as AddressInfo).port,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        srv.close(() => resolve());
      }),
  };
}

/** One GET; resolves at its end or error. */
function get(pool: Http1Pool, t: Http1Target, keepAlive = true): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    const h: Http1Handlers = {
      onResponse: () => {},
      onData: (c) => (body += c.toString()),
      onEnd: () => setImmediate(() => resolve(body)),
      onError: (e) => setImmediate(() => resolve(`error ${e.message}`)),
    };
    pool.request(t, { Accept: 'application/json' }, keepAlive, h);
  });
}

async function until(cond: () => boolean): Promise<void> {
  const end = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met within 20 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The `tr` (active timer) of the IPv4 socket bound to 127.0.0.1:localPort talking to remotePort, from /proc/net/tcp. */
function timerOf(localPort: number, remotePort: number): number | null {
  const hex = (p: number) => `0100007F:${p.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of fs.readFileSync('/proc/net/tcp', 'latin1').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1] === hex(localPort) && f[2] === hex(remotePort) && f[3] === '01') return parseInt(f[5].split(':')[0], 16);
  }
  return null;
}

const liveOf = (pool: Http1Pool) => (pool as unknown as { live: Set<unknown> }).live.size;

test("the idle connection has TCP keep-alive on, as Node's keep-alive agent sets for its free sockets", async () => {
  const srv = await server(() => OK);
  const pool = new Http1Pool();
  const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
  try {
    expect(await get(pool, t)).toBe('{}');
    expect(srv.sockets).toHaveLength(1);
    const ours = srv.sockets[0].remotePort!; // the client's local port
    // The server's end: established, no keep-alive asked: no timer once the answer is acknowledged.
    await until(() => timerOf(srv.port, ours) === 0);
    // Ours, idle and kept, its ACK of the answer sent (the server's end has no timer left):
    // no delayed-ACK timer either, so a timer armed now is the keep-alive timer.
    expect(timerOf(ours, srv.port)).toBe(2);
    // Reused, answered, idle again: still on.
    expect(await get(pool, t)).toBe('{}');
    expect(srv.sockets).toHaveLength(1);
    await until(() => timerOf(srv.port, ours) === 0);
    expect(timerOf(ours, srv.port)).toBe(2);
  } finally {
    pool.destroy();
    await srv.close();
  }
});

test('a connection that closed is forgotten: none retained after Connection: close answers, the idle one only while it lives', async () => {
  let answer = OK_CLOSE;
  const srv = await server(() => answer);
  const pool = new Http1Pool();
  const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
  try {
    for (let i = 0; i < 5; i++) expect(await get(pool, t)).toBe('{}');
    await until(() => srv.sockets.every((s) => s.destroyed));
    await until(() => liveOf(pool) === 0);
    expect(await get(pool, t, false)).toBe('{}'); // keep-alive off: Connection: close from our side
    await until(() => liveOf(pool) === 0);
    answer = OK;
    expect(await get(pool, t)).toBe('{}');
    expect(liveOf(pool)).toBe(1); // the idle one
    srv.sockets[srv.sockets.length - 1].destroy(); // the daemon closes it
    await until(() => liveOf(pool) === 0);
  } finally {
    pool.destroy();
    await srv.close();
  }
});
