/**
 * Issue 23: AttachSource (src/engine/sources/attach/attach-source.ts): network failures that
 * loopback cannot produce on demand (a host name not found, a route missing, a write to a
 * connection the daemon closed), given to the poll's connection as the socket would give
 * them: `net.connect` is wrapped so that the real connection attempt fails with that errno.
 *
 * Expectations: the file's header ("every failure (connect, …) sets cuzk_up to 0 and is
 * counted by reason"), an operator-readable message that says what the errno means in words
 * and names the errno once (POSIX / getaddrinfo meanings: ENOTFOUND a name not known,
 * EAI_AGAIN a lookup that failed for now, EHOSTUNREACH no route to the host, ENETUNREACH the
 * network unreachable, ETIMEDOUT the connection attempt timed out, EPIPE a write to a
 * connection the peer closed), and the retry rule of fetchOnce's comment and Node's
 * documented `request.reusedSocket` pattern: a kept-alive connection the daemon closed as we
 * reused it (reset, or a broken pipe on our write), before any answer, is asked again once
 * on a new connection.
 */
// The module object itself (a namespace import is a read-only copy): what the client's calls reach.
import net = require('node:net');
import type { AddressInfo } from 'node:net';
import { AttachSource } from '../../src/engine/sources/attach/attach-source';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import type { Logger } from '../../src/util/logger';
import { idle, snapshot } from './snapshots';
import { StatusServer } from './status-server';

const realConnect = net.connect;

function mk(url: string) {
  const logger = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;
  const errors = new ErrorCounts();
  const incs: [string, string | undefined][] = [];
  const inc = errors.inc.bind(errors);
  errors.inc = (reason: string, message?: string) => {
    incs.push([reason, message]);
    inc(reason, message);
  };
  const src = new AttachSource({ url, errors, pollIntervalMs: 1000, timeoutMs: 3000, maxBodyBytes: 1 << 22, logger });
  return { src, m: src.model, incs };
}

const errno = (code: string | undefined, message: string): NodeJS.ErrnoException => Object.assign(new Error(message), code === undefined ? {} : { code });

describe('connection failures are counted as connect, in words, the errno named once', () => {
  let sink: net.Server;
  let port = 0;
  const open = new Set<net.Socket>();
  beforeAll(async () => {
    // Accepts and never answers: our connection attempt is real, its failure is the one given.
    sink = net.createServer((s) => {
      open.add(s);
      s.on('error', () => {});
      s.on('close', () => open.delete(s));
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    port = (sink.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const s of open) s.destroy();
    await new Promise<void>((resolve) => sink.close(() => resolve()));
  });
  afterEach(() => jest.restoreAllMocks());

  /** Every connection attempt fails with `e` before it is established. */
  function failWith(e: NodeJS.ErrnoException): void {
    jest.spyOn(net, 'connect').mockImplementation((() => {
      const s = realConnect({ host: '127.0.0.1', port });
      process.nextTick(() => s.destroy(e));
      return s;
    }) as unknown as typeof net.connect);
  }

  const URL1 = 'http://cuzk-daemon.example:9820/status';
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

  test.each([
    ['ENOTFOUND', 'getaddrinfo ENOTFOUND cuzk-daemon.example', /\bnot found\b/i],
    ['EAI_AGAIN', 'getaddrinfo EAI_AGAIN cuzk-daemon.example', /\blookup\b/i],
    ['EHOSTUNREACH', 'connect EHOSTUNREACH 10.1.2.3:9820', /\bhost unreachable\b/i],
    ['ENETUNREACH', 'connect ENETUNREACH 10.1.2.3:9820', /\bnetwork unreachable\b/i],
    ['ETIMEDOUT', 'connect ETIMEDOUT 10.1.2.3:9820', /\btimed out\b/i],
    ['EPIPE', 'write EPIPE', /\bclosed\b/i],
  ])('%s: said in words, not as the raw system message', async (code, raw, words) => {
    failWith(errno(code, raw));
    const { src, m, incs } = mk(URL1);
    await src.pollOnce();
    await src.stop();
    expect(m.up).toBe(false);
    expect(incs.map(([r]) => r)).toEqual(['connect']);
    const msg = incs[0][1] ?? '';
    const said = new RegExp(`^GET ${esc(URL1)}: (.+) \\(${code}\\)$`).exec(msg);
    expect(said).not.toBeNull();
    expect(said![1]).toMatch(words);
    expect(said![1]).not.toContain(code);
  });

  test('an errno without words of its own: the system message, the errno not repeated; no errno: the message alone', async () => {
    failWith(errno('ECONNABORTED', 'connect ECONNABORTED 10.1.2.3:9820'));
    const a = mk(URL1);
    await a.src.pollOnce();
    await a.src.stop();
    expect(a.incs).toEqual([['connect', `GET ${URL1}: connect ECONNABORTED 10.1.2.3:9820`]]);
    jest.restoreAllMocks();
    failWith(errno(undefined, 'the connection went away'));
    const b = mk(URL1);
    await b.src.pollOnce();
    await b.src.stop();
    expect(b.incs).toEqual([['connect', `GET ${URL1}: the connection went away`]]);
  });
});

describe('a kept-alive connection that breaks on our write (EPIPE) as we reuse it', () => {
  test('is asked again once on a new connection: the poll succeeds, nothing counted', async () => {
    const daemon = await StatusServer.start();
    try {
      daemon.serveJson(snapshot({ uptime: 10, workers: [idle(0, 0)] }));
      const sockets: net.Socket[] = [];
      jest.spyOn(net, 'connect').mockImplementation(((...a: Parameters<typeof net.connect>) => {
        const s = realConnect(...a);
        sockets.push(s);
        return s;
      }) as unknown as typeof net.connect);
      const { src, m, incs } = mk(daemon.url);
      await src.pollOnce();
      expect(m.up).toBe(true);
      expect(sockets).toHaveLength(1);
      // The daemon closed it while idle and our next write finds it gone: a broken pipe.
      const reused = sockets[0];
      reused.write = (() => {
        process.nextTick(() => reused.destroy(errno('EPIPE', 'write EPIPE')));
        return true;
      }) as never;
      await src.pollOnce();
      await src.stop();
      expect(incs).toEqual([]);
      expect(m.up).toBe(true);
      expect(sockets).toHaveLength(2);
      expect(daemon.requests).toBe(2);
    } finally {
      jest.restoreAllMocks();
      await daemon.close();
    }
  });
});
