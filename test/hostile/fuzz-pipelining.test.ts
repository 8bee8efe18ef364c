/**
 * Issue 20, class 3: a seeded property-based fuzz of how the HTTP edge serves pipelined
 * requests (request-queue.ts): K requests of random sizes, written before any answer is
 * read, split into chunks at random points (so requests straddle the 128-byte slices the
 * parser is fed and the pauses between them), answered by a handler that takes a random
 * few milliseconds. Whatever the interleaving:
 *  - the handler never runs two requests of one connection at once;
 *  - the answers are the requests' own, in order, none twice, none skipped: a prefix of
 *    what was sent, at least the first 5 (one, then 4 pipelined in a row);
 *  - every request the handler saw was answered (nothing computed for nobody), and fewer
 *    answers than requests means the server closed the connection for pipelining.
 * Sizes: CUZK_FUZZ_RUNS (default 150) and CUZK_FUZZ_SEED.
 */
import * as net from 'node:net';
import fc from 'fast-check';
import { createEdgeServer, Edge } from '../../src/exporter/edge';
import { WebConfigHolder } from '../../src/exporter/web-config';
import { createLogger } from '../../src/util/logger';

const RUNS = Number(process.env.CUZK_FUZZ_RUNS ?? 150);
const SEED = Number(process.env.CUZK_FUZZ_SEED ?? 20261201);

let edge: Edge;
let port: number;
let inFlight = 0;
let worst = 0;
let calls = 0;
let overflows = 0;
const delays = new Map<string, number>();

beforeAll(async () => {
  const log = createLogger('error', 'json', () => {});
  edge = createEdgeServer({
    web: new WebConfigHolder(undefined, log),
    log,
    onPipelining: () => overflows++,
    handler: (req, res) => {
      calls++;
      worst = Math.max(worst, ++inFlight);
      setTimeout(() => {
        inFlight--;
        const body = `<<${req.url}>>`;
        res.writeHead(200, { 'Content-Length': Buffer.byteLength(body) });
        res.end(body);
      }, delays.get(req.url ?? '') ?? 0);
    },
  });
  await new Promise<void>((r) => edge.server.listen(0, '127.0.0.1', () => r()));
  port = (edge.server.address() as net.AddressInfo).port;
});
afterAll(async () => {
  edge.destroyAll();
  await new Promise((r) => edge.server.close(r));
});

let caseNo = 0;

async function runCase(reqs: { pad: number; delay: number }[], cuts: number[]): Promise<void> {
  const id = ++caseNo;
  const paths = reqs.map((r, i) => {
    const p = `/c${id}/r${i}`;
    delays.set(p, r.delay);
    return p;
  });
  const wire = Buffer.from(paths.map((p, i) => `GET ${p} HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(reqs[i].pad)}\r\n\r\n`).join(''));
  const at = [...new Set(cuts.map((c) => c % wire.length))].sort((a, b) => a - b);
  const before = { calls, overflows };
  inFlight = 0;
  worst = 0;
  const got = await new Promise<string>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    s.setEncoding('latin1');
    s.on('data', (d) => {
      out += d;
      // All answered: done (the server keeps the connection open).
      if ((out.match(/<<\/c\d+\/r\d+>>/g) ?? []).length === reqs.length) s.end();
    });
    s.on('error', () => {});
    s.on('close', () => resolve(out));
    s.on('connect', async () => {
      let from = 0;
      for (const cut of [...at, wire.length]) {
        if (cut <= from) continue;
        s.write(wire.subarray(from, cut));
        from = cut;
        await new Promise((r) => setImmediate(r));
      }
    });
  });
  const answered = [...got.matchAll(/<<(\/c\d+\/r\d+)>>/g)].map((m) => m[1]);
  expect(worst).toBeLessThanOrEqual(1);
  expect(answered).toEqual(paths.slice(0, answered.length));
  expect(answered.length).toBeGreaterThanOrEqual(Math.min(reqs.length, 5));
  expect(calls - before.calls).toBe(answered.length);
  if (answered.length < reqs.length) expect(overflows - before.overflows).toBe(1);
  else expect(overflows).toBe(before.overflows);
}

test('random pipelined requests, split at random points: one at a time, in order, all answered or the connection closed for pipelining', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ pad: fc.nat({ max: 400 }), delay: fc.nat({ max: 3 }) }), { minLength: 1, maxLength: 12 }),
      fc.array(fc.nat(), { maxLength: 8 }),
      (reqs, cuts) => runCase(reqs, cuts),
    ),
    { numRuns: RUNS, seed: SEED },
  );
});

test('the case the issue found, small: 40 pipelined requests in one write get 5 answers, then the connection closes', async () => {
  await runCase(Array.from({ length: 40 }, () => ({ pad: 0, delay: 2 })), []);
});
