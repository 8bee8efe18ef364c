/**
 * http1-client.ts carries the /status GET for http:// URLs in place of Node's http client
 * and keep-alive agent. What it must do, from the outside:
 *  - send the bytes Node's client sends for the same GET (request line, Accept, Host with
 *    the port unless 80 (RFC 9110 §7.2), Authorization from the URL's user:password,
 *    Connection: keep-alive / close);
 *  - keep at most one idle connection, reuse it for the next request (reusedSocket), and
 *    drop it when the daemon closes it, when it sends anything unasked, or past the daemon's
 *    `Keep-Alive: timeout=N` hint less a second (as Node's agent); `Connection: close`
 *    answers are never reused;
 *  - a second request while one runs goes on its own connection;
 *  - destroy() closes idle and busy connections, and nothing is called back afterwards.
 * Real servers on 127.0.0.1.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { urlToHttpOptions } from 'node:url';
import { Http1Handlers, Http1Pool, Http1Request, Http1Target, requestHead } from '../../src/engine/sources/attach/http1-client';
import type { ResponseHead } from '../../src/engine/sources/attach/http1-response';
import { fetchLimited, KeepAlive } from '../../src/engine/sources/attach/attach-source';

/** Resolves with the first bytes each new connection sends; answers as `answer` says. */
async function rawServer(answer: (s: net.Socket, req: Buffer) => void) {
  const seen: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const srv = net.createServer((s) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    s.on('data', (d) => {
      seen.push(d);
      answer(s, d);
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    port: (srv.address() as AddressInfo).port,
    seen,
    sockets,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        srv.close(() => resolve());
      }),
  };
}

type Result = { head?: ResponseHead; body: string; error?: NodeJS.ErrnoException; reused: boolean };

// A hung request fails its test within seconds (not at jest's 60 s, past Stryker's timeout).
jest.setTimeout(30_000);

/** One GET through the pool; resolves at onEnd or onError, or as an error `NO_OUTCOME` if neither comes within 5 s. */
function get(pool: Http1Pool, t: Http1Target, keepAlive = true): Promise<Result> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let head: ResponseHead | undefined;
    let req: Http1Request | null = null;
    const deadline = setTimeout(() => {
      req?.destroy();
      resolve({ head, body: Buffer.concat(chunks).toString(), error: Object.assign(new Error('no outcome within 5 s'), { code: 'NO_OUTCOME' }), reused: req!.reusedSocket });
    }, 5000);
    const h: Http1Handlers = {
      onResponse: (x) => (head = x),
      onData: (c) => chunks.push(Buffer.from(c)), // a view into the read buffer: copied
      onEnd: () => {
        clearTimeout(deadline);
        setImmediate(() => resolve({ head, body: Buffer.concat(chunks).toString(), reused: req!.reusedSocket }));
      },
      onError: (e) => {
        clearTimeout(deadline);
        setImmediate(() => resolve({ head, body: Buffer.concat(chunks).toString(), error: e, reused: req!.reusedSocket }));
      },
    };
    req = pool.request(t, { Accept: 'application/json' }, keepAlive, h);
  });
}

/** Waits for a condition (turns of the event loop, at most 5 s). */
async function until(cond: () => boolean): Promise<void> {
  const end = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met within 20 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}';

test("the request is the bytes Node's client sends for the same GET", async () => {
  const srv = await rawServer((s) => s.end(OK));
  const pool = new Http1Pool();
  try {
    const urls = [`http://127.0.0.1:${srv.port}/status`, `http://u%40:p%3a@127.0.0.1:${srv.port}/status?x=1`, `http://localhost:${srv.port}/`];
    for (const [url, keepAlive] of urls.flatMap((u) => [[u, true] as const, [u, false] as const])) {
      const o = urlToHttpOptions(new URL(url));
      // Node's: http.get as attach-source.ts made it before (keep-alive agent, or none).
      const agent = keepAlive ? new http.Agent({ keepAlive: true, maxSockets: 1 }) : false;
      await new Promise<void>((resolve) => http.get({ ...o, headers: { Accept: 'application/json' }, agent }, (res) => res.resume().on('end', resolve)));
      if (agent) agent.destroy();
      const node = srv.seen.pop()!.toString('latin1');
      const r = await get(pool, { host: o.hostname!, port: Number(o.port), path: o.path!, auth: o.auth ?? undefined }, keepAlive);
      expect(r.body).toBe('{}');
      expect(srv.seen.pop()!.toString('latin1')).toBe(node);
    }
  } finally {
    pool.destroy();
    await srv.close();
  }
});

test('Host: the port unless it is 80, an IPv6 address in brackets', () => {
  const head = (t: Http1Target) => requestHead(t, {}, true).split('\r\n').find((l) => l.startsWith('Host: '));
  expect(head({ host: 'cuzk.local', port: 80, path: '/status' })).toBe('Host: cuzk.local');
  expect(head({ host: 'cuzk.local', port: 9821, path: '/status' })).toBe('Host: cuzk.local:9821');
  expect(head({ host: '::1', port: 9821, path: '/status' })).toBe('Host: [::1]:9821');
});

describe('keep-alive', () => {
  test('one connection reused; Connection: close answers never are', async () => {
    let close = false;
    const srv = await rawServer((s) => s.write(close ? OK.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n') : OK));
    const pool = new Http1Pool();
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      expect((await get(pool, t)).reused).toBe(false);
      expect((await get(pool, t)).reused).toBe(true);
      expect((await get(pool, t)).reused).toBe(true);
      expect(srv.connections).toBe(1);
      close = true;
      expect((await get(pool, t)).reused).toBe(true); // answered on the kept one, which then closes
      expect((await get(pool, t)).reused).toBe(false);
      expect((await get(pool, t)).reused).toBe(false);
      expect(srv.connections).toBe(3);
      expect((await get(pool, t, false)).reused).toBe(false); // keep-alive off: a new connection each time
      expect(srv.connections).toBe(4);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test('an idle connection the daemon closes, or that sends anything unasked, is dropped', async () => {
    const srv = await rawServer((s) => s.write(OK));
    const pool = new Http1Pool();
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      await get(pool, t);
      const [s1] = [...srv.sockets];
      const gone = new Promise((r) => s1.on('close', r));
      s1.end();
      await gone;
      const r = await get(pool, t);
      expect([r.body, r.reused, srv.connections]).toEqual(['{}', false, 2]);
      const [s2] = [...srv.sockets];
      const dropped = new Promise((r2) => s2.on('close', r2));
      s2.write('HTTP/1.1 200 OK\r\n'); // unasked
      await dropped; // our end closed it
      const r3 = await get(pool, t);
      expect([r3.body, r3.reused, srv.connections]).toEqual(['{}', false, 3]);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test("past the daemon's Keep-Alive timeout hint less a second: not reused", async () => {
    const srv = await rawServer((s) => s.write(OK.replace('\r\n\r\n', '\r\nKeep-Alive: timeout=5\r\n\r\n')));
    let now = 0;
    const pool = new Http1Pool(16 * 1024, () => now);
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      await get(pool, t);
      now = 4000; // 5 s - 1 s: still
      expect((await get(pool, t)).reused).toBe(true);
      now = 8001; // 4001 ms idle
      expect((await get(pool, t)).reused).toBe(false);
      expect(srv.connections).toBe(2);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test('a request while another runs gets its own connection; one idle kept after both', async () => {
    const pending: net.Socket[] = [];
    const srv = await rawServer((s) => pending.push(s));
    const pool = new Http1Pool();
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      const a = get(pool, t);
      const b = get(pool, t);
      while (pending.length < 2) await new Promise((r) => setImmediate(r));
      for (const s of pending) s.write(OK);
      expect((await a).body).toBe('{}');
      expect((await b).body).toBe('{}');
      expect(srv.connections).toBe(2);
      await until(() => srv.sockets.size === 1); // the second idle one closed
      const c = get(pool, t); // the kept one
      while (pending.length < 3) await new Promise((r) => setImmediate(r));
      pending[2].write(OK);
      expect((await c).reused).toBe(true);
      expect(srv.connections).toBe(2);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });
});

test('destroy(): idle and busy connections closed, nothing called back', async () => {
  const srv = await rawServer(() => {}); // never answers
  const pool = new Http1Pool();
  const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
  let called = 0;
  const h: Http1Handlers = { onResponse: () => called++, onData: () => called++, onEnd: () => called++, onError: () => called++ };
  try {
    pool.request(t, {}, true, h);
    pool.request(t, {}, true, h);
    while (srv.sockets.size < 2) await new Promise((r) => setImmediate(r));
    const closed = [...srv.sockets].map((s) => new Promise((r) => s.on('close', r)));
    pool.destroy();
    await Promise.all(closed);
    await new Promise((r) => setImmediate(r));
    expect(called).toBe(0);
  } finally {
    await srv.close();
  }
});

test('errors: refused, hang-up before and after the head, malformed', async () => {
  const pool = new Http1Pool();
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const free = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  expect((await get(pool, { host: '127.0.0.1', port: free, path: '/' })).error?.code).toBe('ECONNREFUSED');
  let answer = '';
  const srv = await rawServer((s) => s.end(answer));
  const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
  try {
    answer = 'HTTP/1.1 200 OK\r\nContent-Len';
    let r = await get(pool, t, false);
    expect([r.head, r.error?.code, r.error?.message]).toEqual([undefined, 'ECONNRESET', 'socket hang up']);
    answer = 'HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}';
    r = await get(pool, t, false);
    expect([r.head?.status, r.body, r.error?.code, r.error?.message]).toEqual([200, '{}', 'ECONNRESET', 'aborted']);
    answer = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n';
    r = await get(pool, t, false);
    expect([r.head?.status, r.error?.code]).toEqual([200, 'HPE_INVALID_CHUNK_SIZE']);
    answer = 'HTTP/1.0 200 OK\r\n\r\n{"to":"the close"}';
    r = await get(pool, t, false);
    expect([r.body, r.error]).toEqual(['{"to":"the close"}', undefined]);
  } finally {
    pool.destroy();
    await srv.close();
  }
});

test('through fetchLimited (the poll): a host name, user:password in the URL, a query', async () => {
  const srv = await rawServer((s) => s.write(OK));
  const ka = new KeepAlive();
  try {
    const body = await fetchLimited(`http://poller:s%20cret@localhost:${srv.port}/status?full=1`, 5000, 1 << 20, undefined, ka);
    expect(body.toString()).toBe('{}');
    const req = srv.seen.pop()!.toString('latin1');
    expect(req.split('\r\n').slice(0, 2)).toEqual(['GET /status?full=1 HTTP/1.1', 'Accept: application/json']);
    expect(req).toContain(`\r\nHost: localhost:${srv.port}\r\n`);
    expect(req).toContain(`\r\nAuthorization: Basic ${Buffer.from('poller:s cret').toString('base64')}\r\n`);
  } finally {
    ka.destroy();
    await srv.close();
  }
});

describe('connections: which one carries a request, and what keeps the process alive', () => {
  /** A server whose answers the test releases: each request's socket is queued. */
  async function heldServer() {
    const pending: net.Socket[] = [];
    const srv = await rawServer((s) => {
      s.unref(); // only the client's sockets count in refSockets()
      pending.push(s);
    });
    return { srv, pending, nextRequest: async (k: number) => until(() => pending.length >= k) };
  }
  /** Sockets that keep the event loop alive (ref'd), as Node counts them. */
  const refSockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;

  test("Host as Node's client writes it: the port unless 80, IPv6 in brackets (once)", async () => {
    const srv = await rawServer((s) => s.end(OK));
    try {
      for (const [host, port] of [
        ['cuzk.local', 80],
        ['cuzk.local', 9821],
        ['::1', 9821],
        ['[::1]', 9821],
        ['10.0.0.7', 80],
      ] as const) {
        // Node's bytes for that host, carried to the raw server whatever the host says.
        await new Promise<void>((resolve, reject) => {
          // No agent: Node's client takes its connection from createConnection (and its default port from the agent's).
          const req = http.request({ host, port, defaultPort: 80, path: '/s', headers: { Accept: 'application/json' }, createConnection: () => net.connect(srv.port, '127.0.0.1') }, (res) => res.resume().on('end', resolve));
          req.on('error', reject);
          req.end();
        });
        const node = srv.seen.pop()!.toString('latin1');
        const hostLine = node.split('\r\n').find((l) => l.startsWith('Host: '));
        expect(requestHead({ host, port, path: '/s' }, { Accept: 'application/json' }, false).split('\r\n').find((l) => l.startsWith('Host: '))).toBe(hostLine);
      }
    } finally {
      await srv.close();
    }
  });

  test('the idle connection is for the same host and port only; one to another is closed', async () => {
    const a = await rawServer((s) => s.write(OK));
    const b = await rawServer((s) => s.write(OK));
    const pool = new Http1Pool();
    const ta = { host: '127.0.0.1', port: a.port, path: '/status' };
    const tb = { host: '127.0.0.1', port: b.port, path: '/status' };
    try {
      expect((await get(pool, ta)).reused).toBe(false);
      expect((await get(pool, tb)).reused).toBe(false);
      expect([a.connections, b.connections]).toEqual([1, 1]);
      await until(() => a.sockets.size === 0); // A's idle one closed, not kept beside B's
      expect((await get(pool, tb)).reused).toBe(true);
      expect((await get(pool, ta)).reused).toBe(false);
      expect([a.connections, b.connections]).toEqual([2, 1]);
    } finally {
      pool.destroy();
      await a.close();
      await b.close();
    }
  });

  test('a request sent with Connection: close neither takes the idle connection nor leaves its own', async () => {
    const srv = await rawServer((s) => s.write(OK)); // answers keep-alive whatever was asked
    const pool = new Http1Pool();
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      expect((await get(pool, t, false)).reused).toBe(false);
      expect((await get(pool, t)).reused).toBe(false); // not the first one's connection
      expect(srv.connections).toBe(2);
      expect((await get(pool, t, false)).reused).toBe(false); // the idle one left alone
      expect((await get(pool, t)).reused).toBe(true);
      expect(srv.connections).toBe(3);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test("Keep-Alive hints: 1 s or 0 s is none (Node's agent); the idle time counts from the last answer", async () => {
    let hint = 'timeout=1';
    const srv = await rawServer((s) => s.write(OK.replace('\r\n\r\n', `\r\nKeep-Alive: ${hint}\r\n\r\n`)));
    let now = 0;
    const pool = new Http1Pool(16 * 1024, () => now);
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      await get(pool, t);
      now = 3_600_000;
      expect((await get(pool, t)).reused).toBe(true);
      hint = 'timeout=0';
      now += 3_600_000;
      expect((await get(pool, t)).reused).toBe(true);
      hint = 'timeout=5'; // 4 s of idle allowed, from each answer
      await get(pool, t); // answered at `now`
      now += 4000;
      expect((await get(pool, t)).reused).toBe(true);
      now += 3999;
      expect((await get(pool, t)).reused).toBe(true);
      now += 4001;
      expect((await get(pool, t)).reused).toBe(false);
      expect(srv.connections).toBe(2);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test('an idle connection keeps no process alive; one carrying a request does', async () => {
    const { srv, pending, nextRequest } = await heldServer();
    const pool = new Http1Pool();
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      // Counted against the other sockets of the process (the runner's, earlier tests' still closing): settled first.
      let last = -1;
      await until(() => {
        const c = refSockets();
        const settled = c === last;
        last = c;
        return settled;
      });
      const a = get(pool, t);
      await nextRequest(1);
      const busy = refSockets(); // ours among them
      pending[0].write(OK);
      await a;
      expect(refSockets()).toBe(busy - 1); // idle: not counted
      const b = get(pool, t);
      await until(() => srv.seen.length === 2);
      expect(refSockets()).toBe(busy); // carrying a request: counted again
      pending[0].write(OK);
      expect((await b).reused).toBe(true);
      expect(refSockets()).toBe(busy - 1);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test('the idle connection closed while another request runs: that one is kept afterwards', async () => {
    const { srv, pending, nextRequest } = await heldServer();
    const pool = new Http1Pool();
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      const a = get(pool, t);
      const b = get(pool, t);
      await nextRequest(2);
      pending[0].write(OK);
      await a; // A's connection idle
      const gone = new Promise((r) => pending[0].on('close', r));
      pending[0].end(); // the daemon closes it
      await gone;
      pending[1].write(OK);
      await b; // B's connection idle now
      const c = get(pool, t);
      await until(() => srv.seen.length === 3);
      pending[1].write(OK);
      expect((await c).reused).toBe(true);
      expect(srv.connections).toBe(2);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test('destroy() after the end leaves the kept connection alone', async () => {
    const srv = await rawServer((s) => s.write(OK));
    const pool = new Http1Pool();
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      const ended = await new Promise<Http1Request>((resolve) => {
        const req: Http1Request = pool.request(t, {}, true, { onResponse: () => {}, onData: () => {}, onEnd: () => setImmediate(() => resolve(req)), onError: () => {} });
      });
      ended.destroy();
      expect((await get(pool, t)).reused).toBe(true);
      expect(srv.connections).toBe(1);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test("after a 101 nothing is called back, the connection's end included (Node waits for its deadline)", async () => {
    const srv = await rawServer((s) => s.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n'));
    const pool = new Http1Pool();
    let called = 0;
    try {
      pool.request({ host: '127.0.0.1', port: srv.port, path: '/status' }, {}, true, { onResponse: () => called++, onData: () => called++, onEnd: () => called++, onError: () => called++ });
      // The server's socket closes once ours has seen the end and closed too.
      await until(() => srv.connections === 1 && srv.sockets.size === 0);
      await new Promise((r) => setImmediate(r));
      expect(called).toBe(0);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test("a handler's own exception is not taken for a malformed answer", async () => {
    const { srv, nextRequest } = await heldServer();
    const pool = new Http1Pool();
    const errors: unknown[] = [];
    try {
      const req = pool.request({ host: '127.0.0.1', port: srv.port, path: '/status' }, {}, true, {
        onResponse: () => {
          throw new Error('handler failed');
        },
        onData: () => {},
        onEnd: () => {},
        onError: (e) => errors.push(e),
      });
      await nextRequest(1);
      expect(() => req.data(Buffer.from(OK))).toThrow('handler failed');
      expect(errors).toEqual([]);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test('a kept connection the daemon resets: dropped, the next request on a new one', async () => {
    const srv = await rawServer((s) => s.write(OK));
    const pool = new Http1Pool();
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      await get(pool, t);
      const [s1] = [...srv.sockets];
      const gone = new Promise((r) => s1.on('close', r));
      s1.resetAndDestroy();
      await gone;
      await new Promise((r) => setImmediate(r));
      const r = await get(pool, t);
      expect([r.body, r.reused, r.error, srv.connections]).toEqual(['{}', false, undefined, 2]);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });
});

describe('ends: who closes the connection, and nothing after the end', () => {
  test('destroy() from onResponse: the rest of the same bytes calls nothing more', async () => {
    const srv = await rawServer((s) => s.write('HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy')); // one piece
    const pool = new Http1Pool();
    const calls: string[] = [];
    try {
      const req: Http1Request = pool.request({ host: '127.0.0.1', port: srv.port, path: '/status' }, {}, true, {
        onResponse: (h) => {
          calls.push(`head ${h.status}`);
          req.destroy(); // as the poll does for a status other than 200
        },
        onData: () => calls.push('data'),
        onEnd: () => calls.push('end'),
        onError: () => calls.push('error'),
      });
      await until(() => srv.connections === 1 && srv.sockets.size === 0); // ours closed it
      await new Promise((r) => setImmediate(r));
      expect(calls).toEqual(['head 503']);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test('after destroy(), whatever the connection still delivers (bytes, its end, an error) calls nothing', async () => {
    const srv = await rawServer(() => {}); // never answers
    const pool = new Http1Pool();
    const calls: string[] = [];
    try {
      const req = pool.request({ host: '127.0.0.1', port: srv.port, path: '/status' }, {}, true, {
        onResponse: () => calls.push('head'),
        onData: () => calls.push('data'),
        onEnd: () => calls.push('end'),
        onError: () => calls.push('error'),
      });
      await until(() => srv.connections === 1);
      req.destroy();
      req.data(Buffer.from(OK));
      req.eof();
      req.fail(Object.assign(new Error('late'), { code: 'ECONNRESET' }));
      expect(calls).toEqual([]);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test('a malformed answer: one onError, and our end closes the connection', async () => {
    const srv = await rawServer((s) => s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')); // and keeps it open
    const pool = new Http1Pool();
    const errors: string[] = [];
    try {
      pool.request({ host: '127.0.0.1', port: srv.port, path: '/status' }, {}, true, { onResponse: () => {}, onData: () => {}, onEnd: () => {}, onError: (e) => errors.push(e.code ?? '') });
      await until(() => srv.connections === 1 && srv.sockets.size === 0);
      await new Promise((r) => setImmediate(r));
      expect(errors).toEqual(['HPE_INVALID_CHUNK_SIZE']);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test('an answer that does not keep the connection: our end closes it at the end of the body', async () => {
    const srv = await rawServer((s) => s.write(OK.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'))); // the server leaves it open
    const pool = new Http1Pool();
    const t = { host: '127.0.0.1', port: srv.port, path: '/status' };
    try {
      expect((await get(pool, t)).body).toBe('{}');
      await until(() => srv.connections === 1 && srv.sockets.size === 0);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });

  test('pool.destroy() closes the idle connection too', async () => {
    const srv = await rawServer((s) => s.write(OK));
    const pool = new Http1Pool();
    try {
      await get(pool, { host: '127.0.0.1', port: srv.port, path: '/status' });
      expect(srv.sockets.size).toBe(1); // kept
      pool.destroy();
      await until(() => srv.sockets.size === 0);
    } finally {
      pool.destroy();
      await srv.close();
    }
  });
});
