/**
 * Triage of the server group's mutation survivors (server.ts, fleet-server.ts, edge.ts;
 * files/exporter-server.md, "tri-srv"). In process, 127.0.0.1 port 0, every server closed
 * in finally. Expectations from the files' header comments and option docs: a failed
 * collection is logged as an error with its reason; every answer of ours is text/plain
 * unless it is a page file or JSON; /targets/NAME is a path that begins with /targets/;
 * an unknown target's counted message names it cut to 128 characters; edge.ts: "Connections
 * open now" after destroyAll is 0, plain HTTP to the TLS port is answered as Go answers it
 * once 5 bytes are in, pipelined requests are paced (never more than maxPipelined wait),
 * an answer with no progress for writeStallMs ("this long") closes its connection and an
 * idle one is never touched by that sweep, nothing of a connection keeps the process alive,
 * a client's reset never ends the process, HTTPS requests are paced as plain HTTP's are.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import type { Fleet, FleetTarget } from '../../src/engine/sources/fleet/fleet';
import type { TargetsFileWatch } from '../../src/engine/sources/fleet/targets-watch';
import { createEdgeServer, Edge, EdgeOptions } from '../../src/exporter/edge';
import { startFleetServer, telemetryPerTarget } from '../../src/exporter/fleet-server';
import { startServer } from '../../src/exporter/server';
import { Telemetry } from '../../src/exporter/telemetry';
import { loadWebConfig, WebConfigHolder } from '../../src/exporter/web-config';
import { createLogger, silentLogger } from '../../src/util/logger';
import { goldenSource } from '../helpers/golden-script';
import { Pki } from '../hostile/pki';
import { rawConnect, request, until } from '../hostile/web-helpers';

jest.setTimeout(10_000);


function capture(): { logs: Record<string, unknown>[]; log: ReturnType<typeof createLogger> } {
  const logs: Record<string, unknown>[] = [];
  return { logs, log: createLogger('debug', 'json', (l) => logs.push(JSON.parse(l) as Record<string, unknown>)) };
}

describe('server.ts', () => {
  test('a failed collection is logged as an error with its reason; a 404 is text/plain', async () => {
    let telemetry!: Telemetry;
    const source = goldenSource((s) => (telemetry = new Telemetry(s, { version: 'v', logger: silentLogger })));
    const { logs, log } = capture();
    const srv = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', source, telemetry, logger: log, version: 'v' });
    try {
      source.refresh = () => {
        throw new Error('daemon gone');
      };
      expect((await request(`${srv.url}/metrics`)).status).toBe(500);
      expect(logs.filter((l) => l.level === 'error')).toEqual([expect.objectContaining({ msg: 'collection failed', err: 'daemon gone' })]);
      const nf = await request(`${srv.url}/nope`);
      expect([nf.status, nf.headers['content-type']]).toEqual([404, 'text/plain; charset=utf-8']);
    } finally {
      await srv.close();
      await telemetry.shutdown();
    }
  });
});

describe('fleet-server.ts', () => {
  test('an unknown target is counted with its name cut to 128; /targets/NAME only at the start of the path', async () => {
    let telemetry!: Telemetry;
    const source = goldenSource((s) => (telemetry = telemetryPerTarget('fv')(s, silentLogger)));
    const target = { name: 'a', labels: {}, source, telemetry, command: null, look: () => {} } as unknown as FleetTarget<Telemetry>;
    (source as unknown as { surfaceStates: () => unknown[] }).surfaceStates = () => [];
    const errors = new ErrorCounts();
    const fleet = { errors, get: (n: string) => (n === 'a' ? target : undefined), list: () => [target] } as unknown as Fleet<Telemetry>;
    const watch = { file: '/t.yml', lastReloadOk: true, lastError: null, reloads: 1, lastSuccessSecs: 5 } as unknown as TargetsFileWatch;
    const srv = await startFleetServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/own', fleet, watch, logger: silentLogger, version: 'fv' });
    try {
      expect((await request(`${srv.url}/probe?target=${'z'.repeat(300)}`)).status).toBe(404);
      expect(errors.get('unknown_target')).toBe(1);
      expect(errors.lastMessage).toBe(`probe of unknown target "${'z'.repeat(128)}"`);
      expect((await request(`${srv.url}/targets/a/`)).status).toBe(200);
      // Not a target path: the fleet page's 404.
      const r = await request(`${srv.url}/x/targets/a/`);
      expect([r.status, r.body]).toEqual([404, "not found; see / for the fleet page, /probe?target=NAME for a target's metrics, /own for the exporter's own\n"]);
    } finally {
      await srv.close();
      await telemetry.shutdown();
    }
  });
});

describe('edge.ts', () => {
  interface Running {
    edge: Edge;
    port: number;
    logs: Record<string, unknown>[];
    pipelining: number;
    close(): Promise<void>;
  }
  async function start(o: Partial<EdgeOptions> & { webFile?: string } = {}): Promise<Running> {
    const { logs, log } = capture();
    const web = new WebConfigHolder(o.webFile ? loadWebConfig(o.webFile) : undefined, log, { checkEveryMs: 0 });
    const r: Running = {
      edge: null as unknown as Edge,
      port: 0,
      logs,
      pipelining: 0,
      close: async () => {
        r.edge.destroyAll();
        await new Promise((d) => r.edge.server.close(d));
        await web.close();
      },
    };
    r.edge = createEdgeServer({
      web,
      log,
      handler: (req, res) => res.end(`ok ${req.url}\n`),
      onPipelining: () => r.pipelining++,
      ...o,
    });
    await new Promise<void>((d) => r.edge.server.listen(0, '127.0.0.1', () => d()));
    r.port = (r.edge.server.address() as net.AddressInfo).port;
    return r;
  }
  const connect = rawConnect;

  test('destroyAll: no connection counted open right after it', async () => {
    const r = await start();
    try {
      await connect(r.port);
      await connect(r.port);
      await until('2 open', () => r.edge.stats().open === 2);
      r.edge.destroyAll();
      expect(r.edge.stats().open).toBe(0);
    } finally {
      await r.close();
    }
  });

  test('at the cap, the log of the closing counts the connection closed as no longer open', async () => {
    const r = await start({ maxConnections: 1 });
    try {
      const a = await connect(r.port);
      await until('1 open', () => r.edge.stats().open === 1);
      await connect(r.port);
      await until('the idle one closed', () => a.closed);
      expect(r.logs.filter((l) => l.msg === 'connection limit reached: closing idle connections to admit new ones')).toEqual([
        expect.objectContaining({ max_connections: 1, open: 0, closed: 1, closed_total: 1 }),
      ]);
    } finally {
      await r.close();
    }
  });

  test('a connection closed for pipelining is logged with its remote address', async () => {
    const r = await start({ maxPipelined: 2 });
    try {
      const c = await connect(r.port);
      c.sock.pause();
      c.sock.write('GET /p HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(40));
      await until('closed for pipelining', () => r.pipelining === 1);
      expect(r.logs.find((l) => l.msg === 'connection closed: too many pipelined requests')).toMatchObject({ remote: '127.0.0.1' });
      c.sock.destroy();
    } finally {
      await r.close();
    }
  });

  test('plain HTTP: pipelined requests behind a held answer are paced, never more than maxPipelined wait (no hard-limit close)', async () => {
    const held: http.ServerResponse[] = [];
    let calls = 0;
    const r = await start({
      maxPipelined: 2,
      handler: (req, res) => {
        calls++;
        held.push(res);
      },
    });
    try {
      const c = await connect(r.port);
      // 200 requests (~6 KB, one chunk on loopback) behind one that is held.
      c.sock.write('GET /p HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(200));
      await until('first held', () => held.length === 1);
      // Another connection's answer: the server has had its turns at the first one's bytes.
      const other = await connect(r.port);
      other.sock.write('GET /o HTTP/1.1\r\nHost: x\r\n\r\n');
      await until('other answered', () => held.length === 2);
      held[1].end('o');
      await until('other got it', () => other.data.includes('\r\n\r\no'));
      expect([c.closed, r.pipelining, calls]).toEqual([false, 0, 2]);
    } finally {
      for (const h of held) h.destroy();
      await r.close();
    }
  });

  test('nothing of a connection waiting for its first request keeps the process alive', async () => {
    const real = global.setTimeout;
    const made: NodeJS.Timeout[] = [];
    const spy = jest.spyOn(global, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
      const t = real(fn, ms);
      if (ms === 60_000) made.push(t);
      return t;
    }) as unknown as typeof setTimeout);
    const r = await start({ firstRequestMs: 60_000 }).finally(() => undefined);
    try {
      await connect(r.port);
      await until('1 open', () => r.edge.stats().open === 1);
      spy.mockRestore();
      // The first-request timer of the connection exists and is unref'd.
      expect(made.length).toBe(1);
      expect(made[0].hasRef()).toBe(false);
    } finally {
      spy.mockRestore();
      await r.close();
    }
  });

  describe('the stall sweep, driven by hand (its interval captured)', () => {
    function captureSweep(): { sweep: () => void; restore: () => void } {
      const real = global.setInterval;
      let sweep: (() => void) | null = null;
      const spy = jest.spyOn(global, 'setInterval').mockImplementation(((fn: () => void, ms?: number) => {
        if (ms === 1_000 && sweep === null) sweep = fn;
        return real(() => {}, 3_600_000);
      }) as unknown as typeof setInterval);
      return {
        sweep: () => {
          if (!sweep) throw new Error('no sweep captured');
          sweep();
        },
        restore: () => spy.mockRestore(),
      };
    }

    test('writeStallMs 0: an idle keep-alive connection is never closed by the sweep', async () => {
      const s = captureSweep();
      const r = await start({ writeStallMs: 0 }).finally(s.restore);
      try {
        const c = await connect(r.port);
        c.sock.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\n');
        await until('answered', () => c.data.includes('ok /a'));
        s.sweep();
        s.sweep();
        c.sock.write('GET /b HTTP/1.1\r\nHost: x\r\n\r\n');
        await until('answered again', () => c.data.includes('ok /b') || c.closed);
        expect(c.closed).toBe(false);
      } finally {
        await r.close();
      }
    });

    test('an answer with no progress for exactly writeStallMs closes its connection at that check', async () => {
      const s = captureSweep();
      const big = Buffer.alloc(16 * 1024 * 1024, 'x');
      let answered = false;
      const r = await start({
        writeStallMs: 5_000,
        handler: (req, res) => {
          res.writeHead(200);
          res.end(big); // 16 MiB: more than loopback's buffers take from a client that reads nothing
          answered = true;
        },
      }).finally(s.restore);
      const now = jest.spyOn(Date, 'now');
      try {
        const c = await connect(r.port);
        c.sock.pause();
        c.sock.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
        await until('answer written', () => answered);
        now.mockReturnValue(1_000_000);
        s.sweep(); // first seen owed: the stall starts here
        now.mockReturnValue(1_004_999);
        s.sweep();
        expect(r.logs.filter((l) => l.msg === 'connection closed: its client has read nothing of the answer')).toEqual([]);
        now.mockReturnValue(1_005_000);
        s.sweep();
        expect(r.logs.filter((l) => l.msg === 'connection closed: its client has read nothing of the answer')).toEqual([
          expect.objectContaining({ stalled_ms: 5_000 }),
        ]);
        now.mockRestore();
        await until('closed by the server', () => r.edge.stats().open === 0);
        c.sock.destroy();
      } finally {
        now.mockRestore();
        await r.close();
      }
    });
  });
  describe('TLS', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-srvmut-'));
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
    const pki = new Pki(path.join(dir, 'pki'));
    const srv = pki.issue('server', ['DNS:localhost', 'IP:127.0.0.1']);
    const webFile = path.join(dir, 'web.yml');
    fs.writeFileSync(webFile, `tls_server_config:\n  cert_file: ${srv.cert}\n  key_file: ${srv.key}\n`);

    // The edge's secureConnection listener must be the only one: https' own (http's
    // connection listener) would otherwise run first, before pace(), and its parser would
    // read straight from the TLS handle, unpaced.
    test('HTTPS: pipelined requests behind a held answer are paced as plain HTTP\'s are (no hard-limit close)', async () => {
      const held: http.ServerResponse[] = [];
      let calls = 0;
      const r = await start({
        webFile,
        maxPipelined: 2,
        handler: (req, res) => {
          calls++;
          held.push(res);
        },
      });
      const ca = fs.readFileSync(pki.ca.cert);
      const open = () => rawConnect(r.port, ca);
      try {
        const c = await open();
        // 200 requests (~6 KB, one TLS record) behind one that is held.
        c.sock.write('GET /p HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(200));
        await until('first held', () => held.length === 1);
        // Another connection's answer: the server has had its turns at the first one's bytes.
        const other = await open();
        other.sock.write('GET /o HTTP/1.1\r\nHost: x\r\n\r\n');
        await until('other answered', () => held.length === 2);
        held[1].end('o');
        await until('other got it', () => other.data.includes('\r\n\r\no'));
        expect([c.closed, r.pipelining, calls]).toEqual([false, 0, 2]);
        c.sock.destroy();
        other.sock.destroy();
      } finally {
        for (const h of held) h.destroy();
        await r.close();
      }
    });

    test('plain HTTP of exactly 5 bytes ("GET /") to the TLS port: Go\'s 400 at once', async () => {
      const r = await start({ webFile, firstRequestMs: 5_000 });
      try {
        const c = await connect(r.port);
        c.sock.write('GET /');
        await until('answered', () => c.closed || c.data.length > 0);
        await until('closed', () => c.closed);
        expect(c.data).toBe('HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n');
      } finally {
        await r.close();
      }
    });

    test('a client that resets while its first bytes are awaited: the server stays up and serves the next (one handler call per HTTPS request)', async () => {
      let calls = 0;
      const r = await start({
        webFile,
        handler: (req, res) => {
          calls++;
          res.end(`ok ${req.url}\n`);
        },
      });
      try {
        const c = await connect(r.port);
        c.sock.write('GE'); // fewer than 5 bytes: still looked at by the edge, not yet TLS's
        await until('seen', () => r.edge.stats().open === 1);
        c.sock.resetAndDestroy();
        await until('gone', () => r.edge.stats().open === 0);
        const d = await connect(r.port);
        d.sock.write('GET / HTTP/1.1\r\n\r\n');
        await until('closed', () => d.closed);
        expect(d.data).toMatch(/^HTTP\/1\.0 400 Bad Request/);
        // And HTTPS is served.
        const body = await new Promise<string>((resolve, reject) => {
          https
            .get(`https://127.0.0.1:${r.port}/s`, { agent: false, ca: fs.readFileSync(pki.ca.cert) }, (res) => {
              let b = '';
              res.setEncoding('utf8');
              res.on('data', (x) => (b += x));
              res.on('end', () => resolve(b));
            })
            .on('error', reject);
        });
        expect([body, calls]).toEqual(['ok /s\n', 1]);
      } finally {
        await r.close();
      }
    });

    // A reset with nothing unread reaches the raw socket as a read error (ECONNRESET); with
    // bytes still unread (the test above) libuv reports an end instead. Before TLS or http
    // attach their listeners only the edge's own 'error' listener takes it: without it the
    // error is uncaught and the exporter process dies.
    test('a client that connects and resets before sending a byte: the read error is taken, the server serves the next', async () => {
      const r = await start({ webFile });
      const closes: boolean[] = [];
      // A 'close' watcher only: an 'error' listener here would take the error itself.
      r.edge.server.prependListener('connection', (s: net.Socket) => s.once('close', (hadError: boolean) => closes.push(hadError)));
      // What would end the process (an error nobody listens to), caught here instead: the
      // socket's callbacks run outside the test's context, so jest would blame the suite only.
      const uncaught: Error[] = [];
      process.setUncaughtExceptionCaptureCallback((e) => uncaught.push(e as Error));
      try {
        const c = await connect(r.port);
        await until('accepted', () => r.edge.stats().open === 1);
        c.sock.resetAndDestroy();
        await until('gone', () => r.edge.stats().open === 0);
        expect(closes).toEqual([true]); // closed by an error, so the case was reached
        expect(uncaught.map((e) => e.message)).toEqual([]);
        const ok = await request(`https://127.0.0.1:${r.port}/n`, { ca: fs.readFileSync(pki.ca.cert) });
        expect([ok.status, ok.body]).toEqual([200, 'ok /n\n']);
      } finally {
        process.setUncaughtExceptionCaptureCallback(null);
        await r.close();
      }
    });
  });
});
