/**
 * The request path of our listeners, in process on 127.0.0.1 port 0 (issue 23: the mutation
 * suite of web-front.ts, server.ts and fleet-server.ts; no CLI, no wall-clock loops).
 * Expectations from the files' header comments (the endpoint tables), the exporter-toolkit's
 * handler order (rate limit, then basic auth, on every path) and HTTP itself (405 with
 * Allow, HEAD without a body, 308 with Location).
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import type { Fleet, FleetTarget } from '../../src/engine/sources/fleet/fleet';
import type { TargetsFileWatch } from '../../src/engine/sources/fleet/targets-watch';
import { fleetMetricsText } from '../../src/exporter/fleet-metrics';
import { startFleetServer, targetParam, telemetryPerTarget, UNKNOWN_TARGET_ERROR } from '../../src/exporter/fleet-server';
import { startServer, statusDocument } from '../../src/exporter/server';
import { Telemetry } from '../../src/exporter/telemetry';
import { loadWebConfig } from '../../src/exporter/web-config';
import { parseListenAddress, RouteRequest, RunningServer, SECURITY_HEADERS, startWebFront } from '../../src/exporter/web-front';
import { createLogger, silentLogger } from '../../src/util/logger';
import { goldenSource } from '../helpers/golden-script';
import type { ScriptedSource } from '../helpers/scripted-source';

// A mutant that leaves something waiting fails here in 10 s, not at Stryker's ~30 s timeout.
jest.setTimeout(10_000);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-front-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let nFile = 0;
function webFile(yaml: string): string {
  const f = path.join(dir, `web${++nFile}.yml`);
  fs.writeFileSync(f, yaml);
  return f;
}

interface Reply {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}
function request(url: string, opts: http.RequestOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent: false, ...opts }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

describe('parseListenAddress', () => {
  test.each([
    [':9464', { host: undefined, port: 9464 }],
    ['127.0.0.1:9464', { host: '127.0.0.1', port: 9464 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
    ['[::1]:80', { host: '::1', port: 80 }],
    ['[fe80::1%eth0]:1', { host: 'fe80::1%eth0', port: 1 }],
    [':65535', { host: undefined, port: 65535 }],
    ['h:00080', { host: 'h', port: 80 }],
  ])('%j → %j', (addr, want) => {
    expect(parseListenAddress(addr)).toEqual(want);
  });
  test.each(['9464', '', ':', 'a:b', 'host:', '::1:80', '[::1:80', '[]:80', 'a[b:1',  'a]b:1', 'h:123456', 'h:1 ', 'x:80\n', '[::1]80'])('%j is not host:port', (addr) => {
    expect(() => parseListenAddress(addr)).toThrow(`--web.listen-address "${addr}" is not host:port (for example ":9464" or "127.0.0.1:9464")`);
  });
  test.each([':65536', 'h:99999'])('%j: port out of range', (addr) => {
    expect(() => parseListenAddress(addr)).toThrow(`--web.listen-address "${addr}": port ${addr.split(':').pop()} is out of range`);
  });
});

describe('startWebFront: what every request goes through', () => {
  let errors: ErrorCounts;
  let seen: RouteRequest[];
  let logs: Record<string, unknown>[];
  let front: RunningServer | null = null;
  const start = async (o: { yaml?: string; route?: (r: RouteRequest) => Promise<void> | void; listen?: string } = {}) => {
    errors = new ErrorCounts();
    seen = [];
    logs = [];
    const logger = createLogger('debug', 'json', (l) => logs.push(JSON.parse(l) as Record<string, unknown>));
    front = await startWebFront({
      listenAddress: o.listen ?? '127.0.0.1:0',
      webConfig: o.yaml === undefined ? undefined : loadWebConfig(webFile(o.yaml)),
      logger,
      errors,
      route:
        o.route ??
        ((r) => {
          seen.push(r);
          r.send(r.res, 200, 'text/x-test', 'routed\n');
        }),
    });
    return front;
  };
  afterEach(async () => {
    await front?.close();
    front = null;
  });

  test('the URL, the error series declared at 0, the route given the raw path and query', async () => {
    const f = await start();
    expect(f.url).toBe(`http://127.0.0.1:${f.port}`);
    expect(f.port).toBeGreaterThan(0);
    expect([...errors.entries()]).toEqual([
      ['connection_limit', 0],
      ['pipelining', 0],
      ['auth_overload', 0],
      ['web_config', 0],
    ]);
    const r = await request(`${f.url}/a/b?x=1&y=%20?z`);
    expect([r.status, r.body, r.headers['content-type']]).toEqual([200, 'routed\n', 'text/x-test']);
    expect(await request(`${f.url}//`)).toMatchObject({ status: 200 });
    expect(await request(`${f.url}/p?`)).toMatchObject({ status: 200 });
    expect(seen.map((s) => [s.pathname, s.query])).toEqual([
      ['/a/b', 'x=1&y=%20?z'],
      ['//', ''],
      ['/p', ''],
    ]);
    expect(seen[0].req.method).toBe('GET');
  });

  test('every answer: no-store, the page security headers, Content-Type as the route says', async () => {
    const f = await start();
    const r = await request(`${f.url}/`);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.headers['content-security-policy']).toBe(SECURITY_HEADERS['Content-Security-Policy']);
    expect(SECURITY_HEADERS['Content-Security-Policy']).toMatch(/frame-ancestors 'none'/);
    expect(r.headers['x-content-type-options']).toBe('nosniff');
  });

  test('the web config\'s headers override the page defaults; a route\'s extra headers override both', async () => {
    const f = await start({
      yaml: 'http_server_config:\n  headers:\n    Content-Security-Policy: "default-src \'none\'"\n    X-Frame-Options: deny\n',
      route: (r) => r.send(r.res, 200, 'text/plain', 'x', r.pathname === '/extra' ? { 'X-Frame-Options': 'sameorigin', 'X-Extra': '1' } : undefined),
    });
    const r = await request(`${f.url}/`);
    expect(r.headers['content-security-policy']).toBe("default-src 'none'");
    expect(r.headers['x-frame-options']).toBe('deny');
    const e = await request(`${f.url}/extra`);
    expect([e.headers['x-frame-options'], e.headers['x-extra']]).toEqual(['sameorigin', '1']);
  });

  test('a Buffer body has a Content-Length (not chunked); a string body is chunked; HEAD has no body', async () => {
    const f = await start({ route: (r) => r.send(r.res, 200, 'text/plain', r.pathname === '/buf' ? Buffer.from('héllo') : 'héllo') });
    const b = await request(`${f.url}/buf`);
    expect([b.body, b.headers['content-length'], b.headers['transfer-encoding']]).toEqual(['héllo', '6', undefined]);
    const s = await request(`${f.url}/str`);
    expect([s.body, s.headers['content-length'], s.headers['transfer-encoding']]).toEqual(['héllo', undefined, 'chunked']);
    const h = await request(`${f.url}/buf`, { method: 'HEAD' });
    expect([h.status, h.body, h.headers['content-length']]).toEqual([200, '', undefined]);
    const hs = await request(`${f.url}/str`, { method: 'HEAD' });
    expect([hs.status, hs.body]).toEqual([200, '']);
  });

  test('methods other than GET and HEAD: 405 with Allow, the route never called', async () => {
    const f = await start();
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']) {
      const r = await request(`${f.url}/x`, { method });
      expect([r.status, r.body, r.headers.allow, r.headers['cache-control']]).toEqual([405, 'method not allowed\n', 'GET, HEAD', 'no-store']);
    }
    expect(seen).toEqual([]);
    expect((await request(`${f.url}/x`, { method: 'HEAD' })).status).toBe(200);
    expect(seen).toHaveLength(1);
  });

  test('a route that throws: 500 with the message, logged with the path; the server stays up', async () => {
    const f = await start({
      route: async (r) => {
        if (r.pathname === '/late') {
          r.res.writeHead(200, { 'Content-Type': 'text/plain' });
          r.res.write('partial');
          await new Promise((d) => setImmediate(d));
          throw new Error('after the head');
        }
        if (r.pathname === '/boom') throw new Error('kaboom');
        r.send(r.res, 200, 'text/plain', 'fine');
      },
    });
    const r = await request(`${f.url}/boom?q`);
    expect([r.status, r.body, r.headers['content-type'], r.headers['cache-control']]).toEqual([500, 'internal error: kaboom\n', 'text/plain; charset=utf-8', 'no-store']);
    expect(logs.filter((l) => l.level === 'error')).toEqual([expect.objectContaining({ msg: 'request failed', path: '/boom?q', err: 'kaboom' })]);
    // Headers already sent: the connection is cut (the client sees the answer end early).
    await expect(request(`${f.url}/late`)).rejects.toThrow();
    expect((await request(`${f.url}/ok`)).body).toBe('fine');
  });

  test('a long path is logged cut to 200 characters', async () => {
    const f = await start({
      route: () => {
        throw new Error('x');
      },
    });
    await request(`${f.url}/${'a'.repeat(300)}`);
    expect((logs.find((l) => l.msg === 'request failed')!.path as string)).toBe(`/${'a'.repeat(199)}`);
  });

  test('rate_limit: 429 with Retry-After once the burst is spent, on every path, before auth', async () => {
    const f = await start({ yaml: `rate_limit:\n  interval: 1h\n  burst: 2\nbasic_auth_users:\n  u: '${bcrypt.hashSync('p', 4)}'\n` });
    expect((await request(`${f.url}/-/healthy`, { headers: { Authorization: basic('u', 'p') } })).status).toBe(200);
    expect((await request(`${f.url}/-/healthy`)).status).toBe(401);
    const r = await request(`${f.url}/-/healthy`, { headers: { Authorization: basic('u', 'p') } });
    expect([r.status, r.body, r.headers['retry-after'], r.headers['cache-control']]).toEqual([429, 'too many requests\n', '1', 'no-store']);
  });

  test('basic auth on every path: 401 with a Basic challenge without or with wrong credentials, the route with the right ones', async () => {
    const f = await start({ yaml: `basic_auth_users:\n  u: '${bcrypt.hashSync('p', 4)}'\n` });
    for (const p of ['/', '/-/healthy', '/metrics']) {
      const r = await request(`${f.url}${p}`);
      expect([r.status, r.body, r.headers['www-authenticate'], r.headers['content-type']]).toEqual([401, 'unauthorized\n', 'Basic realm="cuzk-exporter"', 'text/plain; charset=utf-8']);
    }
    expect((await request(`${f.url}/x`, { headers: { Authorization: basic('u', 'wrong') } })).status).toBe(401);
    expect(seen).toEqual([]);
    const ok = await request(`${f.url}/x`, { headers: { Authorization: basic('u', 'p') } });
    expect([ok.status, ok.body]).toEqual([200, 'routed\n']);
    // Authorised, but not GET/HEAD: still 405.
    expect((await request(`${f.url}/x`, { method: 'POST', headers: { Authorization: basic('u', 'p') } })).status).toBe(405);
    // Not authorised and POST: 401 first.
    expect((await request(`${f.url}/x`, { method: 'POST' })).status).toBe(401);
  });

  test('more password checks than the queue holds: 429, counted as auth_overload', async () => {
    const f = await start({ yaml: `basic_auth_users:\n  u: '${bcrypt.hashSync('p', 9)}'\n` });
    const replies = await Promise.all(Array.from({ length: 24 }, (_, i) => request(`${f.url}/x`, { headers: { Authorization: basic('u', `wrong${i}`) } })));
    const busy = replies.filter((r) => r.status === 429);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy[0].body).toBe('too many password checks in progress, retry\n');
    expect(busy[0].headers['retry-after']).toBe('1');
    expect(errors.get('auth_overload')).toBe(busy.length);
    expect(replies.filter((r) => r.status === 401).length + busy.length).toBe(24);
  });

  test('reloadWebConfig re-reads the file (SIGHUP); a refused one is counted as web_config', async () => {
    const f = await start({ yaml: 'http_server_config:\n  headers:\n    X-Frame-Options: deny\n' });
    const file = path.join(dir, `web${nFile}.yml`);
    fs.writeFileSync(file, 'http_server_config:\n  headers:\n    X-Frame-Options: sameorigin\n');
    expect(f.reloadWebConfig()).toBe(true);
    expect((await request(`${f.url}/`)).headers['x-frame-options']).toBe('sameorigin');
    fs.writeFileSync(file, 'http_server_config:\n  headers:\n    X-Frame-Options: allow\n');
    expect(f.reloadWebConfig()).toBe(false);
    expect(errors.get('web_config')).toBe(1);
    expect((await request(`${f.url}/`)).headers['x-frame-options']).toBe('sameorigin');
  });

  test('a file change is seen on the next request', async () => {
    const f = await start({ yaml: 'http_server_config:\n  headers:\n    X-Frame-Options: deny\n' });
    const file = path.join(dir, `web${nFile}.yml`);
    fs.writeFileSync(file, 'http_server_config:\n  headers:\n    X-Frame-Options: sameorigin\n  # changed\n');
    const deadline = Date.now() + 5000;
    let v: string | string[] | undefined;
    do {
      v = (await request(`${f.url}/`)).headers['x-frame-options'];
    } while (v !== 'sameorigin' && Date.now() < deadline);
    expect(v).toBe('sameorigin');
  });

  test('a client that has gone while its password was checked gets nothing computed', async () => {
    const f = await start({ yaml: `basic_auth_users:\n  u: '${bcrypt.hashSync('p', 10)}'\n` });
    await new Promise<void>((resolve) => {
      const s = net.connect(f.port, '127.0.0.1', () => {
        s.write(`GET /gone HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('u', 'p')}\r\n\r\n`);
        setImmediate(() => {
          s.destroy();
          resolve();
        });
      });
    });
    // The same credentials, now cached after the comparison above finished.
    const r = await request(`${f.url}/after`, { headers: { Authorization: basic('u', 'p') } });
    expect(r.status).toBe(200);
    expect(seen.map((s) => s.pathname)).toEqual(['/after']);
  });

  test('listen errors are one readable line', async () => {
    const f = await start();
    await expect(startWebFront({ listenAddress: `127.0.0.1:${f.port}`, logger: silentLogger, errors: new ErrorCounts(), route: () => {} })).rejects.toThrow(
      `cannot listen on 127.0.0.1:${f.port}: address already in use`,
    );
    await expect(startWebFront({ listenAddress: '192.0.2.1:0', logger: silentLogger, errors: new ErrorCounts(), route: () => {} })).rejects.toThrow('cannot listen on 192.0.2.1:0: no such local address');
    await expect(startWebFront({ listenAddress: 'no-such-host.invalid:0', logger: silentLogger, errors: new ErrorCounts(), route: () => {} })).rejects.toThrow(
      'cannot listen on no-such-host.invalid:0: no such local address',
    );
    expect(() => startWebFront({ listenAddress: 'bad', logger: silentLogger, errors: new ErrorCounts(), route: () => {} })).toThrow('is not host:port');
  });

  test.each([
    [':0', '127.0.0.1'],
    ['0.0.0.0:0', '127.0.0.1'],
    ['localhost:0', null],
  ])('listening on %j shows %s in the URL', async (listen, shown) => {
    const f = await start({ listen });
    if (shown) expect(f.url).toBe(`http://${shown}:${f.port}`);
    else expect(f.url).toMatch(new RegExp(`^http://(127\\.0\\.0\\.1|\\[::1\\]):${f.port}$`));
    expect((await request(`${f.url}/x`)).status).toBe(200);
  });

  test('an IPv6 address is shown in brackets', async () => {
    let f: RunningServer;
    try {
      f = await start({ listen: '[::1]:0' });
    } catch {
      return; // no IPv6 loopback on this machine
    }
    expect(f.url).toBe(`http://[::1]:${f.port}`);
    const g = await startWebFront({ listenAddress: '[::]:0', logger: silentLogger, errors: new ErrorCounts(), route: () => {} });
    try {
      expect(g.url).toBe(`http://127.0.0.1:${g.port}`);
    } finally {
      await g.close();
    }
  });

  test('close() ends open connections and stops listening', async () => {
    const f = await start();
    const s = net.connect(f.port, '127.0.0.1');
    await new Promise((d) => s.once('connect', d));
    const closed = new Promise((d) => s.once('close', d));
    await f.close();
    front = null;
    await closed;
    await expect(request(`${f.url}/`)).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('server.ts: the one-source endpoints', () => {
  let telemetry!: Telemetry;
  let source: ScriptedSource;
  let srv: RunningServer;
  beforeAll(async () => {
    source = goldenSource((s) => (telemetry = new Telemetry(s, { version: 'v-test', logger: silentLogger })));
    srv = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/custom/metrics', source, telemetry, logger: silentLogger, version: 'v-test' });
  });
  afterAll(async () => {
    await srv.close();
    await telemetry.shutdown();
  });

  test('/-/healthy: OK', async () => {
    const r = await request(`${srv.url}/-/healthy`);
    expect([r.status, r.body, r.headers['content-type']]).toEqual([200, 'OK\n', 'text/plain; charset=utf-8']);
  });
  test('the telemetry path: the metrics (text 0.0.4); /metrics is not it when another path is configured', async () => {
    const r = await request(`${srv.url}/custom/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(r.body).toContain('cuzk_exporter_build_info{');
    expect(r.body).toContain('version="v-test"');
    const om = await request(`${srv.url}/custom/metrics`, { headers: { Accept: 'application/openmetrics-text; version=1.0.0' } });
    expect(om.headers['content-type']).toMatch(/^application\/openmetrics-text; version=1\.0\.0/);
    expect(om.body.endsWith('# EOF\n')).toBe(true);
    const m = await request(`${srv.url}/metrics`);
    expect([m.status, m.body]).toEqual([404, 'not found; see / for the status page, /custom/metrics for metrics\n']);
  });
  test('a collection that fails: 500 with the reason, not a 200', async () => {
    const refresh = source.refresh;
    source.refresh = () => {
      throw new Error('daemon gone');
    };
    try {
      const r = await request(`${srv.url}/custom/metrics`);
      expect([r.status, r.body, r.headers['content-type']]).toEqual([500, 'collection failed: daemon gone\n', 'text/plain; charset=utf-8']);
      // /status answers anyway, and counts the failed refresh as a status error.
      const before = source.model.errors.get('status');
      const s = await request(`${srv.url}/status`);
      expect(s.status).toBe(200);
      expect(source.model.errors.get('status')).toBe(before + 1);
      expect(source.model.errors.lastMessage).toBe('daemon gone');
    } finally {
      source.refresh = refresh;
    }
  });
  test('/status: the source\'s body with an exporter object', async () => {
    let refreshed = 0;
    const refresh = source.refresh;
    source.refresh = () => void refreshed++;
    source.statusBody = () => ({ workers: [1], exporter: 'overwritten' });
    try {
      const r = await request(`${srv.url}/status`);
      expect(refreshed).toBe(1);
      expect([r.status, r.headers['content-type']]).toEqual([200, 'application/json; charset=utf-8']);
      const doc = JSON.parse(r.body) as { workers: number[]; exporter: Record<string, unknown> };
      expect(doc.workers).toEqual([1]);
      expect(doc.exporter).toMatchObject({ version: 'v-test', source: 'run', backend: 'cpu' });
    } finally {
      source.refresh = refresh;
      source.statusBody = () => null;
    }
  });
  test('/-/ready: 200 Ready, or 503 with the reason', async () => {
    expect(await request(`${srv.url}/-/ready`)).toMatchObject({ status: 200, body: 'Ready\n' });
    const ready = source.ready;
    source.ready = () => ({ ok: false, reason: 'no GPU' });
    try {
      const r = await request(`${srv.url}/-/ready`);
      expect([r.status, r.body, r.headers['content-type']]).toEqual([503, 'Not ready: no GPU\n', 'text/plain; charset=utf-8']);
    } finally {
      source.ready = ready;
    }
  });
  test('/ and its files: the status page', async () => {
    const r = await request(`${srv.url}/`);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/html/);
    expect(r.body).toMatch(/<html/i);
    expect((await request(`${srv.url}/page.css`)).headers['content-type']).toMatch(/^text\/css/);
    expect(await request(`${srv.url}/nope`)).toMatchObject({ status: 404, body: 'not found; see / for the status page, /custom/metrics for metrics\n' });
  });
});

describe('statusDocument', () => {
  test('every exporter field, from the model and the source; the source\'s own exporter fields last', () => {
    const source = goldenSource();
    const m = source.model;
    m.errors.inc('collect', 'last one');
    const src = Object.assign(source, {
      statusBody: () => ({ a: 1, exporter: { lost: true } }),
      snapshotAgeSeconds: () => 7,
      exporterStatus: () => ({ surfaces: ['status'], version: 'from the source' }),
    });
    const t0 = Date.now();
    const doc = statusDocument(src, 'v9') as { a: number; exporter: Record<string, unknown> };
    expect(doc.a).toBe(1);
    const e = doc.exporter;
    expect(e).toEqual({
      version: 'from the source',
      source: 'run',
      backend: 'cpu',
      up: m.up,
      status_mismatch: m.statusMismatch(),
      status_mismatch_reasons: m.mismatchReasons(),
      partitions_on_gpu: m.partitionsOnGpu(),
      partitions_finalizing: m.partitionsFinalizing(),
      busy_workers: m.busyWorkers,
      snapshot_age_secs: 7,
      last_error: 'last one',
      generated_at: expect.any(String),
      surfaces: ['status'],
    });
    expect(Date.parse(e.generated_at as string)).toBeGreaterThanOrEqual(t0 - 1000);
    // Golden script: one partition on the GPU (WindowPoSt) plus one finalizing; hand-worked in state-model.test.ts.
    expect(e.partitions_on_gpu).toBeGreaterThan(0);
    const plain = statusDocument(goldenSource(), 'v9') as { exporter: Record<string, unknown> };
    expect(plain.exporter.version).toBe('v9');
    expect(Object.keys(plain)).toEqual(['exporter']);
  });
});

describe('fleet-server.ts: the multi-target endpoints', () => {
  test.each([
    ['target=a', 'a'],
    ['x=1&target=b%20c', 'b c'],
    ['target=', ''],
    ['', null],
    ['targets=a', null],
    ['target=a&target=b', 'a'],
    ['target=%zz', '%zz'],
  ])('targetParam(%j) = %j', (q, want) => {
    expect(targetParam(q)).toBe(want);
  });

  let srv: RunningServer;
  let fleet: Fleet<Telemetry>;
  let watch: TargetsFileWatch;
  let source: ScriptedSource;
  let telemetry!: Telemetry;
  let logs: Record<string, unknown>[];
  const errors = new ErrorCounts();
  beforeAll(async () => {
    source = goldenSource((s) => (telemetry = telemetryPerTarget('fv')(s, silentLogger)));
    const target = { name: 'prover a/1', labels: { rack: 'r1' }, source, telemetry, command: null, look: () => {} } as unknown as FleetTarget<Telemetry>;
    (source as unknown as { surfaceStates: () => unknown[] }).surfaceStates = () => [];
    fleet = {
      errors,
      get: (n: string) => (n === target.name ? target : undefined),
      list: () => [target],
    } as unknown as Fleet<Telemetry>;
    watch = { file: '/t.yml', lastReloadOk: true, lastError: null, reloads: 1, lastSuccessSecs: 5 } as unknown as TargetsFileWatch;
    logs = [];
    const logger = createLogger('debug', 'json', (l) => logs.push(JSON.parse(l) as Record<string, unknown>));
    srv = await startFleetServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/own', fleet, watch, logger, version: 'fv' });
  });
  afterAll(async () => {
    await srv.close();
    await telemetry.shutdown();
  });
  const A = encodeURIComponent('prover a/1');

  test('declares unknown_target and collect on the fleet\'s errors', () => {
    expect(errors.get(UNKNOWN_TARGET_ERROR)).toBeGreaterThanOrEqual(0);
    expect([...errors.entries()].map(([k]) => k)).toEqual(expect.arrayContaining(['unknown_target', 'collect', 'connection_limit', 'web_config']));
    expect(UNKNOWN_TARGET_ERROR).toBe('unknown_target');
  });
  test('/-/healthy and /-/ready', async () => {
    expect(await request(`${srv.url}/-/healthy`)).toMatchObject({ status: 200, body: 'OK\n' });
    const r = await request(`${srv.url}/-/ready`);
    expect([r.status, r.body, r.headers['content-type']]).toEqual([200, 'Ready\n', 'text/plain; charset=utf-8']);
  });
  test('/probe?target=NAME: that target\'s metrics; 400 without a name; 404 and counted for an unknown one', async () => {
    const r = await request(`${srv.url}/probe?target=${A}`);
    expect([r.status, r.headers['content-type']]).toEqual([200, 'text/plain; version=0.0.4; charset=utf-8']);
    expect(r.body).toContain('version="fv"');
    expect(r.body).toContain('cuzk_gpu_worker_busy{');
    for (const q of ['', '?target=', '?x=1']) {
      const b = await request(`${srv.url}/probe${q}`);
      expect([b.status, b.body]).toEqual([400, 'the target parameter is missing: /probe?target=NAME (a name from the targets file; /targets lists them)\n']);
    }
    const before = errors.get('unknown_target');
    const long = 'z'.repeat(300);
    const u = await request(`${srv.url}/probe?target=${long}`);
    expect([u.status, u.body]).toEqual([404, `unknown target "${'z'.repeat(128)}": /targets lists the targets of the targets file\n`]);
    expect(errors.get('unknown_target')).toBe(before + 1);
  });
  test('/probe of a target whose collection fails: 500, counted as collect, logged with the target', async () => {
    const refresh = source.refresh;
    source.refresh = () => {
      throw new Error('poll broke');
    };
    try {
      const before = errors.get('collect');
      const r = await request(`${srv.url}/probe?target=${A}`);
      expect([r.status, r.body]).toEqual([500, 'collection failed: poll broke\n']);
      expect(errors.get('collect')).toBe(before + 1);
      expect(logs.find((l) => l.msg === 'collection failed')).toMatchObject({ level: 'error', target: 'prover a/1', err: 'poll broke' });
    } finally {
      source.refresh = refresh;
    }
  });
  test('the telemetry path: the fleet exporter\'s own metrics', async () => {
    const r = await request(`${srv.url}/own`);
    expect([r.status, r.headers['content-type']]).toEqual([200, 'text/plain; version=0.0.4; charset=utf-8']);
    expect(r.body).toBe(fleetMetricsText(fleet, watch, 'fv'));
    expect(r.body).toContain('cuzk_fleet_targets 1');
  });
  test('/targets: Prometheus HTTP service discovery; /fleet.json the summary', async () => {
    const r = await request(`${srv.url}/targets`);
    expect([r.status, r.headers['content-type']]).toEqual([200, 'application/json; charset=utf-8']);
    expect(JSON.parse(r.body)).toEqual([{ targets: ['prover a/1'], labels: { rack: 'r1' } }]);
    const j = await request(`${srv.url}/fleet.json`);
    expect([j.status, j.headers['content-type']]).toEqual([200, 'application/json; charset=utf-8']);
    const doc = JSON.parse(j.body) as { targets: { name: string }[]; targets_file: Record<string, unknown> };
    expect(doc.targets.map((t) => t.name)).toEqual(['prover a/1']);
    expect(doc.targets_file).toMatchObject({ file: '/t.yml', reloads: 1 });
  });
  test('/targets/NAME: 308 to the trailing slash; its page, /status with the target, /-/ready; 404s', async () => {
    const r = await request(`${srv.url}/targets/${A}`);
    expect([r.status, r.headers.location, r.body]).toEqual([308, `${A}/`, 'see the trailing slash\n']);
    const page = await request(`${srv.url}/targets/${A}/`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).not.toContain('fleet.css');
    expect((await request(`${srv.url}/targets/${A}/page.css`)).status).toBe(200);
    let refreshed = 0;
    const refresh = source.refresh;
    source.refresh = () => void refreshed++;
    try {
      const s = await request(`${srv.url}/targets/${A}/status`);
      expect(refreshed).toBe(1);
      expect([s.status, s.headers['content-type']]).toEqual([200, 'application/json; charset=utf-8']);
      const doc = JSON.parse(s.body) as { exporter: Record<string, unknown> };
      expect(doc.exporter).toMatchObject({ version: 'fv', target: { name: 'prover a/1', labels: { rack: 'r1' } } });
    } finally {
      source.refresh = refresh;
    }
    source.refresh = () => {
      throw new Error('status broke');
    };
    try {
      const before = source.model.errors.get('status');
      expect((await request(`${srv.url}/targets/${A}/status`)).status).toBe(200);
      expect(source.model.errors.get('status')).toBe(before + 1);
    } finally {
      source.refresh = refresh;
    }
    expect(await request(`${srv.url}/targets/${A}/-/ready`)).toMatchObject({ status: 200, body: 'Ready\n' });
    const ready = source.ready;
    source.ready = () => ({ ok: false, reason: 'down' });
    try {
      expect(await request(`${srv.url}/targets/${A}/-/ready`)).toMatchObject({ status: 503, body: 'Not ready: down\n' });
    } finally {
      source.ready = ready;
    }
    expect(await request(`${srv.url}/targets/${A}/nope`)).toMatchObject({ status: 404, body: `not found: /targets/${A}/nope\n` });
    const longPath = `/targets/${A}/${'q'.repeat(300)}`;
    expect((await request(`${srv.url}${longPath}`)).body).toBe(`not found: ${longPath.slice(0, 200)}\n`);
    expect(await request(`${srv.url}/targets/other/`)).toMatchObject({ status: 404, body: 'unknown target "other": see / for the fleet\n' });
    expect(await request(`${srv.url}/targets/${'y'.repeat(200)}`)).toMatchObject({ status: 404, body: `unknown target "${'y'.repeat(128)}": see / for the fleet\n` });
    expect(await request(`${srv.url}/targets/%E0%A4%A/`)).toMatchObject({ status: 400, body: 'bad target name in the path\n' });
    // "/targets/" alone and "/targets//x" name no target: the fleet page's 404.
    expect((await request(`${srv.url}/targets/`)).status).toBe(404);
    expect((await request(`${srv.url}/targets//x`)).body).toMatch(/^not found; see \/ for the fleet page/);
  });
  test('/ and its files: the fleet page; anything else 404 naming the paths', async () => {
    const r = await request(`${srv.url}/`);
    expect(r.status).toBe(200);
    expect(r.body).toContain('fleet.css');
    expect((await request(`${srv.url}/fleet.css`)).headers['content-type']).toMatch(/^text\/css/);
    expect(await request(`${srv.url}/metrics`)).toMatchObject({
      status: 404,
      body: "not found; see / for the fleet page, /probe?target=NAME for a target's metrics, /own for the exporter's own\n",
    });
  });
});
