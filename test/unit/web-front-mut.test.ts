/**
 * web-front.ts, the paths the route suite (web-front-routes.test.ts) leaves open (mutation
 * triage of the exporter-server run): the Content-Type of our own refusals, a config change
 * seen on a kept-alive connection, the server's errors after listening (EMFILE/ENFILE are
 * edge.ts' business and not logged again; any other is one log line), every listen error's
 * line, the connection_limit and pipelining counts, and TLS (the https URL; close() ending a
 * connection that has not finished its handshake). In process, 127.0.0.1 port 0.
 * Expectations from the file's header comment, edge.ts' contract (counted, logged, room
 * made) and HTTP; faults Node cannot be made to raise here (EACCES as root, an odd listen
 * error, EMFILE) are emitted on the server, as libuv would.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import * as edgeModule from '../../src/exporter/edge';
import { loadWebConfig } from '../../src/exporter/web-config';
import { RouteRequest, RunningServer, startWebFront } from '../../src/exporter/web-front';
import { createLogger } from '../../src/util/logger';
import { Pki } from '../hostile/pki';
import { basic, request, until } from '../hostile/web-helpers';

jest.setTimeout(10_000);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-front-mut-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let nFile = 0;
function webFile(yaml: string): string {
  const f = path.join(dir, `web${++nFile}.yml`);
  fs.writeFileSync(f, yaml);
  return f;
}


const realCreateEdge = edgeModule.createEdgeServer;
let lastEdge: ReturnType<typeof realCreateEdge> | null = null;
/** Every listener built here goes through the real edge; the test keeps a hold of it. */
const edgeSpy = jest.spyOn(edgeModule, 'createEdgeServer').mockImplementation((o) => (lastEdge = realCreateEdge(o)));
afterAll(() => edgeSpy.mockRestore());

let errors: ErrorCounts;
let logs: Record<string, unknown>[];
let seen: RouteRequest[];
let front: RunningServer | null = null;
const start = async (o: { yaml?: string; listen?: string; maxConnections?: number } = {}): Promise<RunningServer> => {
  errors = new ErrorCounts();
  logs = [];
  seen = [];
  const logger = createLogger('debug', 'json', (l) => logs.push(JSON.parse(l) as Record<string, unknown>));
  front = await startWebFront({
    listenAddress: o.listen ?? '127.0.0.1:0',
    webConfig: o.yaml === undefined ? undefined : loadWebConfig(webFile(o.yaml)),
    maxConnections: o.maxConnections,
    logger,
    errors,
    route: (r) => {
      seen.push(r);
      r.send(r.res, 200, 'text/plain', 'routed\n');
    },
  });
  return front;
};
afterEach(async () => {
  await front?.close();
  front = null;
});

describe('our own refusals are plain text like every other answer', () => {
  test('429 of the rate limit', async () => {
    const f = await start({ yaml: 'rate_limit:\n  interval: 1h\n  burst: 1\n' });
    expect((await request(`${f.url}/x`)).status).toBe(200);
    const r = await request(`${f.url}/x`);
    expect([r.status, r.headers['content-type']]).toEqual([429, 'text/plain; charset=utf-8']);
  });

  test('429 of a full password-check queue', async () => {
    const f = await start({ yaml: `basic_auth_users:\n  u: '${bcrypt.hashSync('p', 9)}'\n` });
    const replies = await Promise.all(Array.from({ length: 24 }, (_, i) => request(`${f.url}/x`, { headers: { Authorization: basic('u', `wrong${i}`) } })));
    const busy = replies.filter((r) => r.status === 429);
    expect(busy.length).toBeGreaterThan(0);
    for (const b of busy) expect(b.headers['content-type']).toBe('text/plain; charset=utf-8');
  });

  test('405 of a method other than GET and HEAD', async () => {
    const f = await start();
    const r = await request(`${f.url}/x`, { method: 'DELETE' });
    expect([r.status, r.headers['content-type']]).toEqual([405, 'text/plain; charset=utf-8']);
  });
});

test('a changed web config is seen by the next request on a connection kept open', async () => {
  const f = await start({ yaml: 'http_server_config:\n  headers:\n    X-Frame-Options: deny\n' });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    expect((await request(`${f.url}/`, { agent })).headers['x-frame-options']).toBe('deny');
    fs.writeFileSync(path.join(dir, `web${nFile}.yml`), 'http_server_config:\n  headers:\n    X-Frame-Options: sameorigin\n  # changed\n');
    let v: string | string[] | undefined;
    const deadline = Date.now() + 5000;
    do {
      v = (await request(`${f.url}/`, { agent })).headers['x-frame-options'];
    } while (v !== 'sameorigin' && Date.now() < deadline);
    expect(v).toBe('sameorigin');
    // All on the one connection: no new connection (where edge.ts also looks) was needed.
    expect(new Set(seen.map((s) => s.req.socket)).size).toBe(1);
  } finally {
    agent.destroy();
  }
});

describe('server errors after listening', () => {
  const emit = (code: string, message: string) => lastEdge!.server.emit('error', Object.assign(new Error(message), { code }));
  const serverErrors = () => logs.filter((l) => l.msg === 'http server error');

  test('out of descriptors (EMFILE, ENFILE): counted by edge.ts as connection_limit, not logged again here', async () => {
    await start();
    emit('EMFILE', 'accept EMFILE');
    emit('ENFILE', 'accept ENFILE');
    expect(errors.get('connection_limit')).toBe(2);
    expect(serverErrors()).toEqual([]);
  });

  test('any other: one error line with its message, and the server keeps serving', async () => {
    const f = await start();
    emit('EIO', 'accept EIO');
    expect(serverErrors()).toEqual([expect.objectContaining({ level: 'error', msg: 'http server error', err: 'accept EIO' })]);
    expect(errors.get('connection_limit')).toBe(0);
    expect((await request(`${f.url}/x`)).status).toBe(200);
  });
});

describe('listen errors: one readable line for each cause', () => {
  const failListen = (code: string, message: string) =>
    edgeSpy.mockImplementationOnce((o) => {
      const e = realCreateEdge(o);
      e.server.listen = (() => {
        process.nextTick(() => e.server.emit('error', Object.assign(new Error(message), { code })));
        return e.server;
      }) as typeof e.server.listen;
      lastEdge = e;
      return e;
    });
  const attempt = () => startWebFront({ listenAddress: '127.0.0.1:9', logger: createLogger('error', 'json', () => {}), errors: new ErrorCounts(), route: () => {} });

  test.each([
    ['EACCES', 'listen EACCES: permission denied 127.0.0.1:9', 'cannot listen on 127.0.0.1:9: permission denied'],
    ['EADDRNOTAVAIL', 'listen EADDRNOTAVAIL', 'cannot listen on 127.0.0.1:9: no such local address'],
    ['EINVAL', 'listen EINVAL: invalid argument', 'cannot listen on 127.0.0.1:9: listen EINVAL: invalid argument'],
  ])('%s', async (code, message, want) => {
    failListen(code, message);
    await expect(attempt()).rejects.toThrow(new Error(want));
    lastEdge!.server.close();
  });
});

test('connections dropped at the cap are counted as connection_limit', async () => {
  const f = await start({ maxConnections: 1 });
  const a = net.connect(f.port, '127.0.0.1');
  const aClosed = new Promise((d) => a.once('close', d));
  a.on('error', () => {});
  await new Promise((d) => a.once('connect', d));
  await until('the first connection is held', () => lastEdge!.stats().open === 1);
  const b = net.connect(f.port, '127.0.0.1');
  b.on('error', () => {});
  await new Promise((d) => b.once('connect', d));
  await aClosed; // the idle one made room
  expect(errors.get('connection_limit')).toBe(1);
  b.destroy();
});

test('a connection closed for too many pipelined requests is counted as pipelining', async () => {
  const f = await start();
  const s = net.connect(f.port, '127.0.0.1');
  s.on('error', () => {});
  await new Promise((d) => s.once('connect', d));
  s.pause();
  s.write('GET /p HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(200));
  await until('closed for pipelining', () => errors.get('pipelining') === 1);
  s.destroy();
});

describe('TLS', () => {
  let pki: Pki;
  let tlsYaml: string;
  beforeAll(() => {
    pki = new Pki(path.join(dir, 'pki'));
    const server = pki.issue('server', ['DNS:localhost', 'IP:127.0.0.1']);
    tlsYaml = `tls_server_config:\n  cert_file: ${server.cert}\n  key_file: ${server.key}\n`;
  });

  test('the URL is https', async () => {
    const f = await start({ yaml: tlsYaml });
    expect(f.url).toBe(`https://127.0.0.1:${f.port}`);
  });

  test('close() also ends a connection that has sent nothing yet (no handshake, no HTTP)', async () => {
    const f = await start({ yaml: tlsYaml });
    const s = net.connect(f.port, '127.0.0.1');
    s.on('error', () => {});
    await new Promise((d) => s.once('connect', d));
    await until('the connection is held', () => lastEdge!.stats().open === 1);
    const closed = new Promise((d) => s.once('close', d));
    const t0 = Date.now();
    await f.close();
    front = null;
    await closed;
    // Well before the 10 s first-request and handshake timers would have ended it.
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

// The password checks run on a worker thread (bcrypt-pool.ts), unref'd while idle: nothing
// waits on it, so only the process' OS threads (Linux: /proc/self/task) show whether close()
// ended it. A count only, waited for (25 s; a worker ends in milliseconds), never timed.
test('close() also ends the password-check thread: the process is back to the threads it had before the server', async () => {
  const threads = (): number => fs.readdirSync('/proc/self/task').length;
  // libuv's pool starts its threads on first use (fs, dns): before the count, not during it.
  await fs.promises.readFile(__filename);
  const before = threads();
  const f = await start({ yaml: `basic_auth_users:\n  u: '${bcrypt.hashSync('p', 4)}'\n` });
  expect((await request(`${f.url}/x`, { headers: { authorization: basic('u', 'p') } })).status).toBe(200);
  expect(threads()).toBeGreaterThan(before); // the check ran on its own thread
  await f.close();
  front = null;
  await until('as many threads as before the server', () => threads() <= before, 25_000);
}, 30_000);
