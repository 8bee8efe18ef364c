/**
 * http1-response.ts parses the /status answer in place of Node's own client parser (llhttp),
 * so Node's client is the reference: the same bytes, served by a raw TCP server to
 * `http.get` (no agent, as the exporter's first poll), must give Node the same status and
 * body that the parser gives — and the parser may refuse more than Node, never less:
 *  - well-formed answers (random status, reason, headers, 1xx heads before, Content-Length /
 *    chunked with extensions and trailers / read to the close, random bodies), fed in random
 *    pieces: accepted by both, the same status, reason and body;
 *  - the same answers mutated (bytes inserted, deleted, replaced, CR / LF / SP / ':' among
 *    them): whatever the parser accepts, Node accepts with the same status and body; and
 *    how the bytes are cut into pieces never changes the parser's outcome;
 *  - bounds: a head, a chunk-size line and trailers are refused past 16 KiB (Node's header
 *    limit), 1xx heads past 16, whatever arrives after the answer is an error;
 *  - keep-alive as RFC 9112 §9.3 and llhttp decide it.
 * Sizes: CUZK_FUZZ_RUNS (default 300) and CUZK_FUZZ_SEED.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { HttpParseError, ResponseHead, ResponseParser } from '../../src/engine/sources/attach/http1-response';

const RUNS = Number(process.env.CUZK_FUZZ_RUNS ?? 300);
const SEED = Number(process.env.CUZK_FUZZ_SEED ?? 20261203);

type Outcome = { ok: true; status: number; reason: string; body: string } | { ok: false };

let server: net.Server;
let port = 0;
let next: Buffer = Buffer.alloc(0);
const sockets = new Set<net.Socket>();

beforeAll(async () => {
  server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    const answer = next;
    s.once('data', () => s.end(answer)); // one write: the answer arrives in one piece
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** What Node's client makes of `bytes` (a 101 makes it wait: cut off after 2 s, not ok). */
function nodeOutcome(bytes: Buffer): Promise<Outcome> {
  next = bytes;
  return new Promise((resolve) => {
    let done = false;
    const end = (o: Outcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve(o);
    };
    const req = http.get({ host: '127.0.0.1', port, path: '/status', agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => end(res.complete ? { ok: true, status: res.statusCode!, reason: res.statusMessage ?? '', body: Buffer.concat(chunks).toString('hex') } : { ok: false }));
      res.on('error', () => end({ ok: false }));
      res.on('close', () => {
        if (!res.complete) end({ ok: false });
      });
    });
    req.on('error', () => end({ ok: false }));
    const timer = setTimeout(() => end({ ok: false }), 2000);
  });
}

/** What the parser makes of `bytes` fed in pieces cut at `cuts`, then the connection's end. */
function ours(bytes: Buffer, cuts: number[] = []): Outcome & { code?: string } {
  const chunks: Buffer[] = [];
  let head: ResponseHead | null = null;
  let complete = false;
  const p = new ResponseParser({ onHead: (h) => (head = h), onBody: (c) => chunks.push(Buffer.from(c)), onComplete: () => (complete = true) });
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  try {
    let from = 0;
    for (const c of [...at, bytes.length]) {
      if (c > from) p.execute(bytes.subarray(from, c));
      from = Math.max(from, c);
    }
    if (!complete) p.finish();
  } catch (e) {
    if (!(e instanceof HttpParseError)) throw e;
    return { ok: false, code: e.code };
  }
  const h = head as ResponseHead | null;
  return complete && h ? { ok: true, status: h.status, reason: h.reason, body: Buffer.concat(chunks).toString('hex') } : { ok: false };
}

const tchar = fc.constantFrom(...'!#$%&\'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'.split(''));
const token = fc.array(tchar, { minLength: 1, maxLength: 12 }).map((a) => a.join(''));
const SPECIAL = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'proxy-connection']);
const headerName = token.filter((n) => !SPECIAL.has(n.toLowerCase()));
/** A value: visible ASCII and obs-text, single spaces and tabs inside, no OWS at the ends. */
const vchar = fc.integer({ min: 0x21, max: 0xff }).filter((c) => c !== 0x7f).map((c) => String.fromCharCode(c));
const headerValue = fc.array(fc.oneof({ weight: 6, arbitrary: vchar }, { weight: 1, arbitrary: fc.constantFrom(' ', '\t') }), { maxLength: 20 }).map((a) => a.join('').trim());
const ows = fc.constantFrom('', ' ', '  ', '\t', ' \t');
const header = fc.tuple(headerName, ows, headerValue, ows).map(([n, a, v, b]) => `${n}:${a}${v}${b}\r\n`);
const reason = fc.array(fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz-'.split('')), { maxLength: 20 }).map((a) => a.join(''));
const caseOf = (s: string) => fc.array(fc.boolean(), { minLength: s.length, maxLength: s.length }).map((u) => [...s].map((c, i) => (u[i] ? c.toUpperCase() : c)).join(''));
const chunkExt = fc.array(fc.tuple(token, fc.option(fc.oneof(token, fc.constant('"a b;c"')), { nil: undefined })).map(([n, v]) => `;${n}${v === undefined ? '' : `=${v}`}`), { maxLength: 2 }).map((a) => a.join(''));

/** A well-formed answer and what it says. */
const response = fc
  .record({
    version: fc.constantFrom('1.1', '1.0'),
    status: fc.integer({ min: 200, max: 599 }).filter((s) => s !== 204 && s !== 304),
    reason: fc.option(reason, { nil: undefined }),
    headers: fc.array(header, { maxLength: 6 }),
    info: fc.array(fc.tuple(fc.constantFrom(100, 102, 103), fc.array(header, { maxLength: 2 })), { maxLength: 2 }),
    framing: fc.constantFrom('length', 'chunked', 'close'),
    body: fc.uint8Array({ maxLength: 1500 }),
    pieces: fc.array(fc.nat(), { maxLength: 6 }),
    exts: fc.array(chunkExt, { minLength: 8, maxLength: 8 }),
    trailers: fc.array(header, { maxLength: 2 }),
    clName: caseOf('content-length'),
    teName: caseOf('transfer-encoding'),
    zeros: fc.nat({ max: 3 }),
    connection: fc.constantFrom('', 'Connection: close\r\n', 'Connection: keep-alive\r\n'),
    // After a Transfer-Encoding value no HTAB: llhttp then reads to the close (refused here, below).
    framingOws: fc.tuple(ows, fc.constantFrom('', ' ', '  ')),
  })
  .map((r) => {
    const body = Buffer.from(r.body);
    let head = '';
    // 1xx heads only in HTTP/1.1 (in 1.0 they end the connection: refused by both, see below).
    if (r.version === '1.1') for (const [code, hs] of r.info) head += `HTTP/1.1 ${code} Info\r\n${hs.join('')}\r\n`;
    head += `HTTP/${r.version} ${r.status}${r.reason === undefined ? '' : ` ${r.reason}`}\r\n${r.headers.join('')}${r.connection}`;
    let payload: Buffer;
    if (r.framing === 'length') {
      head += `${r.clName}:${r.framingOws[0]}${'0'.repeat(r.zeros)}${body.length}${r.framingOws[1]}\r\n`;
      payload = body;
    } else if (r.framing === 'chunked') {
      head += `${r.teName}:${r.framingOws[0]}chunked${r.framingOws[1]}\r\n`;
      const cuts = [...new Set(r.pieces.map((p) => p % (body.length + 1)))].sort((a, b) => a - b);
      const parts: Buffer[] = [];
      let from = 0;
      let k = 0;
      for (const c of [...cuts, body.length]) {
        if (c <= from) continue;
        parts.push(Buffer.from(`${'0'.repeat(r.zeros)}${(c - from).toString(16)}${r.exts[k++ % 8]}\r\n`, 'latin1'), body.subarray(from, c), Buffer.from('\r\n'));
        from = c;
      }
      parts.push(Buffer.from(`0${r.exts[7]}\r\n${r.trailers.join('')}\r\n`, 'latin1'));
      payload = Buffer.concat(parts);
    } else payload = body;
    const headBytes = Buffer.from(`${head}\r\n`, 'latin1');
    return { bytes: Buffer.concat([headBytes, payload]), headLength: headBytes.length, status: r.status, reason: r.reason ?? '', body: body.toString('hex') };
  });

describe('against Node client parser', () => {
  test('well-formed answers, fed in random pieces: both accept, the same status, reason and body', async () => {
    await fc.assert(
      fc.asyncProperty(response, fc.array(fc.nat(), { maxLength: 8 }), async (r, cuts) => {
        const want: Outcome = { ok: true, status: r.status, reason: r.reason, body: r.body };
        expect(await nodeOutcome(r.bytes)).toEqual(want); // the generator's claim, checked by Node
        expect(ours(r.bytes, cuts)).toEqual(want);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });

  // Where: in the head (most of the time: that is where the rules are), or anywhere.
  const mutation = fc.tuple(
    fc.constantFrom('insert', 'delete', 'replace'),
    fc.nat(),
    fc.constantFrom(13, 10, 32, 9, 0x3a, 0x3b, 0x2c, 0x22, 0x30, 0x31, 0x32, 0x39, 0x61, 0x46, 0x00, 0x01, 0x7f, 0xff, 0x2d, 0x2f, 0x2e),
    fc.boolean(),
  );
  test('mutated answers: what the parser accepts Node accepts the same; the pieces never matter', async () => {
    await fc.assert(
      fc.asyncProperty(response, fc.array(mutation, { minLength: 1, maxLength: 3 }), fc.array(fc.nat(), { maxLength: 8 }), async (r, muts, cuts) => {
        const b = [...r.bytes];
        for (const [op, at, byte, inHead] of muts) {
          const i = at % ((inHead ? Math.min(r.headLength, b.length) : b.length) + 1);
          if (op === 'insert') b.splice(i, 0, byte);
          else if (i < b.length) {
            if (op === 'delete') b.splice(i, 1);
            else b[i] = byte;
          }
        }
        const bytes = Buffer.from(b);
        const whole = ours(bytes);
        expect(ours(bytes, cuts)).toEqual(whole);
        if (whole.ok) expect(await nodeOutcome(bytes)).toEqual(whole);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });

  test.each([
    ['no reason phrase', 'HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}'],
    ['an empty reason phrase', 'HTTP/1.1 200 \r\nContent-Length: 2\r\n\r\n{}'],
    ['HTTP/1.0 read to the close', 'HTTP/1.0 200 OK\r\n\r\n{"a":1}'],
    ['a coding before chunked', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'],
    ['another coding last: read to the close', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n{}'],
    ['a 1xx head first', 'HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}'],
    ['an HTTP error status', 'HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy'],
    ['a three-digit status under 100', 'HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n'],
  ])('accepted as Node accepts it: %s', async (_what, text) => {
    const bytes = Buffer.from(text, 'latin1');
    const got = ours(bytes);
    expect(got.ok).toBe(true);
    expect(got).toEqual(await nodeOutcome(bytes));
  });

  test.each([
    ['bare LF line ends', 'HTTP/1.1 200 OK\nContent-Length: 2\n\n{}', 'HPE_CR_EXPECTED'],
    ['a bare CR in a value', 'HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 2\r\n\r\n{}', 'HPE_LF_EXPECTED'],
    ['a folded header', 'HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_HEADER_TOKEN'],
    ['a space before the colon', 'HTTP/1.1 200 OK\r\nX : a\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_HEADER_TOKEN'],
    ['a control character in a value', 'HTTP/1.1 200 OK\r\nX: a\x01b\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_HEADER_TOKEN'],
    ['two Content-Length headers', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}', 'HPE_UNEXPECTED_CONTENT_LENGTH'],
    ['Content-Length and Transfer-Encoding', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 'HPE_INVALID_TRANSFER_ENCODING'],
    ['Transfer-Encoding and Content-Length', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_CONTENT_LENGTH'],
    ['a signed Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}', 'HPE_INVALID_CONTENT_LENGTH'],
    ['a list as Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n{}', 'HPE_INVALID_CONTENT_LENGTH'],
    ['an empty Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n{}', 'HPE_INVALID_CONTENT_LENGTH'],
    ['Content-Length 2^64', 'HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n{}', 'HPE_INVALID_CONTENT_LENGTH'],
    ['an empty Transfer-Encoding', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\n{}', 'HPE_INVALID_TRANSFER_ENCODING'],
    ['HTTP/1.2', 'HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_VERSION'],
    ['a lower-case protocol', 'http/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_CONSTANT'],
    ['a two-digit status', 'HTTP/1.1 20 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_STATUS'],
    ['a tab after the status', 'HTTP/1.1 200\tOK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_STATUS'],
    ['a space in a chunk size line', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 \r\n{}\r\n0\r\n\r\n', 'HPE_INVALID_CHUNK_SIZE'],
    ['a chunk size of 17 hex digits', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n{}\r\n0\r\n\r\n', 'HPE_INVALID_CHUNK_SIZE'],
    ['chunk data without its CRLF', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n', 'HPE_STRICT'],
    ['a malformed trailer', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nbad trailer\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN'],
    ['bytes after a kept-alive answer', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}garbage', 'HPE_INVALID_CONSTANT'],
    ['bytes after a `Connection: close` answer', 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}zz', 'HPE_CLOSED_CONNECTION'],
    ['a 1xx head in HTTP/1.0', 'HTTP/1.0 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_CLOSED_CONNECTION'],
    ['a 1xx head with Connection: close', 'HTTP/1.1 103 Early\r\nConnection: close\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_CLOSED_CONNECTION'],
    ['a body after a 1xx head', 'HTTP/1.1 100 Continue\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_CONSTANT'],
  ])('refused as Node refuses it: %s', async (_what, text, code) => {
    const bytes = Buffer.from(text, 'latin1');
    expect(ours(bytes)).toEqual({ ok: false, code });
    expect(await nodeOutcome(bytes)).toEqual({ ok: false });
  });

  test('every HTTP/d.d version: accepted exactly where Node accepts it', async () => {
    const differ: string[] = [];
    for (let major = 0; major <= 9; major++) {
      for (let minor = 0; minor <= 9; minor++) {
        const bytes = Buffer.from(`HTTP/${major}.${minor} 200 OK\r\nContent-Length: 2\r\n\r\n{}`);
        const [a, b] = [ours(bytes).ok, (await nodeOutcome(bytes)).ok];
        if (a !== b) differ.push(`${major}.${minor}: ours ${a}, Node ${b}`);
      }
    }
    expect(differ).toEqual([]);
  });

  test('refused here, read to the close by Node: `chunked` followed by a tab', async () => {
    const bytes = Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\t\r\n\r\n2\r\n{}\r\n0\r\n\r\n', 'latin1');
    expect(ours(bytes)).toEqual({ ok: false, code: 'HPE_INVALID_TRANSFER_ENCODING' });
    expect(await nodeOutcome(bytes)).toEqual({ ok: true, status: 200, reason: 'OK', body: Buffer.from('2\r\n{}\r\n0\r\n\r\n').toString('hex') });
  });

  test('refused here, accepted by Node (stricter on purpose): a second Transfer-Encoding header', async () => {
    const bytes = Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n', 'latin1');
    expect(ours(bytes)).toEqual({ ok: false, code: 'HPE_INVALID_TRANSFER_ENCODING' });
    expect((await nodeOutcome(bytes)).ok).toBe(true);
  });

  test('cut short: never complete (Content-Length, chunked, in the head)', () => {
    for (const text of ['HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n', 'HTTP/1.1 200 OK\r\nContent-Len']) {
      expect(ours(Buffer.from(text))).toEqual({ ok: false });
    }
  });
});

describe('bounds', () => {
  const feed = (p: ResponseParser, text: string) => p.execute(Buffer.from(text, 'latin1'));
  const parser = () => new ResponseParser({ onHead: () => {}, onBody: () => {}, onComplete: () => {} });
  const codeOf = (f: () => void): string | null => {
    try {
      f();
      return null;
    } catch (e) {
      return (e as HttpParseError).code;
    }
  };

  test('a head longer than 16 KiB is refused as it arrives, however it is cut', () => {
    const p = parser();
    feed(p, 'HTTP/1.1 200 OK\r\nX: ');
    let fed = 19;
    let code: string | null = null;
    while (code === null && fed < 20 * 1024) {
      code = codeOf(() => feed(p, 'a'.repeat(100)));
      fed += 100;
    }
    expect(code).toBe('HPE_HEADER_OVERFLOW');
    expect(fed).toBeGreaterThan(16 * 1024);
    expect(fed).toBeLessThanOrEqual(16 * 1024 + 100);
    // Many short lines count together.
    const q = parser();
    feed(q, 'HTTP/1.1 200 OK\r\n');
    expect(codeOf(() => feed(q, 'X: 0123456789abcdef\r\n'.repeat(1000)))).toBe('HPE_HEADER_OVERFLOW');
    // Just under: accepted.
    const r = parser();
    expect(codeOf(() => feed(r, `HTTP/1.1 200 OK\r\nX: ${'a'.repeat(16 * 1024 - 100)}\r\nContent-Length: 0\r\n\r\n`))).toBeNull();
  });

  test('an endless chunk-size line and endless trailers are refused past 16 KiB', () => {
    const p = parser();
    feed(p, 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=');
    expect(codeOf(() => feed(p, 'y'.repeat(17 * 1024)))).toBe('HPE_CHUNK_EXTENSIONS_OVERFLOW');
    const q = parser();
    feed(q, 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n');
    expect(codeOf(() => feed(q, 'T: 0123456789abcdef\r\n'.repeat(1000)))).toBe('HPE_HEADER_OVERFLOW');
  });

  test('1xx heads: 16 skipped, the 17th refused', () => {
    const info = 'HTTP/1.1 102 Processing\r\n\r\n';
    const p = parser();
    expect(codeOf(() => feed(p, info.repeat(16) + 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'))).toBeNull();
    expect(p.complete).toBe(true);
    expect(codeOf(() => feed(parser(), info.repeat(17)))).toBe('HPE_HEADER_OVERFLOW');
  });

  test('after a 101 everything is ignored, the end of the connection too (Node waits for its deadline)', () => {
    let heads = 0;
    const p = new ResponseParser({ onHead: () => heads++, onBody: () => {}, onComplete: () => {} });
    feed(p, 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nanything at all');
    expect(p.finish()).toBe(false);
    expect([heads, p.complete, p.ignoring]).toEqual([0, false, true]);
  });

  test('stop() from a handler: nothing more is handed on', () => {
    const got: string[] = [];
    const p: ResponseParser = new ResponseParser({
      onHead: () => got.push('head'),
      onBody: (c) => {
        got.push(c.toString());
        p.stop();
      },
      onComplete: () => got.push('complete'),
    });
    const q = new ResponseParser({ onHead: () => q.stop(), onBody: () => got.push('never'), onComplete: () => got.push('never') });
    feed(p, 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n');
    feed(q, 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab');
    expect(got).toEqual(['head', 'ab']);
  });
});

describe('keep-alive (RFC 9112 §9.3, as llhttp)', () => {
  const head = (text: string): ResponseHead => {
    let h: ResponseHead | null = null;
    new ResponseParser({ onHead: (x) => (h = x), onBody: () => {}, onComplete: () => {} }).execute(Buffer.from(text));
    return h!;
  };
  test.each([
    ['HTTP/1.1 with a length', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n', true],
    ['HTTP/1.1 chunked', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n', true],
    ['HTTP/1.1, Connection: close (cuzk)', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n', false],
    ['HTTP/1.1, close among other options', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive, Close\r\n\r\n', false],
    ['HTTP/1.1 read to the close', 'HTTP/1.1 200 OK\r\n\r\n', false],
    ['HTTP/1.0', 'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n', false],
    ['HTTP/1.0, Connection: keep-alive', 'HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n', true],
    ['HTTP/1.0, keep-alive, read to the close', 'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n', false],
  ])('%s', (_what, text, keepAlive) => {
    expect(head(text).keepAlive).toBe(keepAlive);
  });
  test("the daemon's Keep-Alive timeout hint", () => {
    expect(head('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nKeep-Alive: timeout=5, max=100\r\n\r\n').keepAliveTimeoutS).toBe(5);
    expect(head('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nKeep-Alive: max=100\r\n\r\n').keepAliveTimeoutS).toBe(-1);
    expect(head('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n').keepAliveTimeoutS).toBe(-1);
  });
});

/**
 * What an operator reads: a refused answer is logged and counted as
 * `GET <url>: Parse Error: <words> (<HPE code>)` (attach-source.ts), so the words are part of
 * the behaviour. Where llhttp says the same, Node's client is the reference; where the parser
 * is stricter or words it otherwise, the words are the file's own (its header comment).
 */
describe('errors as the operator reads them', () => {
  type Failure = { code: string; message: string } | null;
  /** The parser's error for `bytes` fed in pieces cut at `cuts` (null: none). */
  const ourError = (bytes: Buffer, cuts: number[] = [], maxHeadBytes?: number): Failure => {
    const p = new ResponseParser({ onHead: () => {}, onBody: () => {}, onComplete: () => {} }, maxHeadBytes);
    try {
      let from = 0;
      for (const c of [...cuts, bytes.length]) {
        if (c > from) p.execute(bytes.subarray(from, c));
        from = Math.max(from, c);
      }
      return null;
    } catch (e) {
      if (!(e instanceof HttpParseError)) throw e;
      return { code: e.code, message: e.message };
    }
  };
  /** Node's client's error for `bytes` (null: a complete answer; cut off after 2 s). */
  const nodeError = (bytes: Buffer): Promise<Failure> => {
    next = bytes;
    return new Promise((resolve) => {
      let done = false;
      const end = (f: Failure) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        req.destroy();
        resolve(f);
      };
      const req = http.get({ host: '127.0.0.1', port, path: '/status', agent: false }, (res) => {
        res.resume();
        res.on('end', () => end(res.complete ? null : { code: 'INCOMPLETE', message: '' }));
        res.on('error', (e: NodeJS.ErrnoException) => end({ code: e.code ?? '', message: e.message }));
      });
      req.on('error', (e: NodeJS.ErrnoException) => end({ code: e.code ?? '', message: e.message }));
      const timer = setTimeout(() => end({ code: 'NO_ANSWER', message: '' }), 2000);
    });
  };
  /** Every single cut of `bytes`, and the bytes one at a time: the same error as whole. */
  const everyCut = (bytes: Buffer, want: Failure, maxHeadBytes?: number) => {
    const bad: number[] = [];
    for (let c = 1; c < bytes.length; c++) if (JSON.stringify(ourError(bytes, [c], maxHeadBytes)) !== JSON.stringify(want)) bad.push(c);
    expect(bad).toEqual([]);
    expect(ourError(bytes, Array.from({ length: bytes.length }, (_, k) => k), maxHeadBytes)).toEqual(want);
  };
  const TE = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';
  const CL = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n';

  test.each([
    ['a bare LF after the status line', 'HTTP/1.1 200 OK\nContent-Length: 2\n\n{}', 'HPE_CR_EXPECTED', 'Missing expected CR after response line'],
    ['a bare LF after a header value', 'HTTP/1.1 200 OK\r\nX: a\n\r\n', 'HPE_CR_EXPECTED', 'Missing expected CR after header value'],
    ['a bare LF after a chunk size', `${TE}2\n{}\r\n0\r\n\r\n`, 'HPE_CR_EXPECTED', 'Missing expected CR after chunk size'],
    ['a bare LF after a trailer', `${TE}2\r\n{}\r\n0\r\nX: a\n\r\n`, 'HPE_CR_EXPECTED', 'Missing expected CR after header value'],
    ['a bare CR in a value', 'HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 2\r\n\r\n{}', 'HPE_LF_EXPECTED', 'Missing expected LF after header value'],
    ['a bare CR in a trailer', `${TE}2\r\n{}\r\n0\r\nX: a\rb\r\n\r\n`, 'HPE_LF_EXPECTED', 'Missing expected LF after header value'],
    ['a space before the colon', 'HTTP/1.1 200 OK\r\nX : a\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_HEADER_TOKEN', 'Invalid header token'],
    ['a header line without a colon', 'HTTP/1.1 200 OK\r\nNoColon\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_HEADER_TOKEN', 'Invalid header token'],
    ['an empty header name', 'HTTP/1.1 200 OK\r\n: a\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_HEADER_TOKEN', 'Invalid header token'],
    ['a trailer without a colon', `${TE}2\r\n{}\r\n0\r\nbad\r\n\r\n`, 'HPE_INVALID_HEADER_TOKEN', 'Invalid header token'],
    ['a control character in a value', 'HTTP/1.1 200 OK\r\nX: a\x01b\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_HEADER_TOKEN', 'Invalid header value char'],
    ['two Content-Length headers', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}', 'HPE_UNEXPECTED_CONTENT_LENGTH', 'Duplicate Content-Length'],
    ['Content-Length, then Transfer-Encoding', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 'HPE_INVALID_TRANSFER_ENCODING', "Transfer-Encoding can't be present with Content-Length"],
    ['Transfer-Encoding, then Content-Length', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_CONTENT_LENGTH', "Content-Length can't be present with Transfer-Encoding"],
    ['a signed Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}', 'HPE_INVALID_CONTENT_LENGTH', 'Invalid character in Content-Length'],
    ['an empty Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n{}', 'HPE_INVALID_CONTENT_LENGTH', 'Empty Content-Length'],
    ['Content-Length 2^64', 'HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n{}', 'HPE_INVALID_CONTENT_LENGTH', 'Content-Length overflow'],
    ['Content-Length of 21 digits', 'HTTP/1.1 200 OK\r\nContent-Length: 100000000000000000000\r\n\r\n{}', 'HPE_INVALID_CONTENT_LENGTH', 'Content-Length overflow'],
    ['an empty Transfer-Encoding', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\n{}', 'HPE_INVALID_TRANSFER_ENCODING', 'Empty Transfer-Encoding'],
    ['a Content-Length trailer', `${TE}2\r\n{}\r\n0\r\nContent-Length: 5\r\n\r\n`, 'HPE_INVALID_CONTENT_LENGTH', "Content-Length can't be present with Transfer-Encoding"],
    ['a content-length trailer of no digits', `${TE}2\r\n{}\r\n0\r\ncontent-length: x\r\n\r\n`, 'HPE_INVALID_CONTENT_LENGTH', "Content-Length can't be present with Transfer-Encoding"],
    ['an empty Transfer-Encoding trailer', `${TE}2\r\n{}\r\n0\r\nTransfer-Encoding:\r\n\r\n`, 'HPE_INVALID_TRANSFER_ENCODING', 'Empty Transfer-Encoding'],
    ['HTTP/1.2', 'HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_VERSION', 'Invalid HTTP version'],
    ['HTTP/3.0', 'HTTP/3.0 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_VERSION', 'Invalid HTTP version'],
    ['a lower-case protocol', 'http/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_CONSTANT', 'Expected HTTP/, RTSP/ or ICE/'],
    ['a space in a chunk size line', `${TE}2 \r\n{}\r\n0\r\n\r\n`, 'HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size'],
    ['a chunk size that is no number', `${TE}zz\r\n{}\r\n0\r\n\r\n`, 'HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size'],
    ['a chunk size with a non-hex first character', `${TE}g;a\r\n0123456789\r\n0\r\n\r\n`, 'HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size'],
    ['a chunk size of 17 hex digits', `${TE}fffffffffffffffff\r\n{}\r\n0\r\n\r\n`, 'HPE_INVALID_CHUNK_SIZE', 'Chunk size overflow'],
    ['chunk data followed by neither CR nor LF', `${TE}2\r\n{}XX0\r\n\r\n`, 'HPE_STRICT', 'Expected LF after chunk data'],
    ['chunk data followed by a byte, then LF', `${TE}2\r\n{}X\n0\r\n\r\n`, 'HPE_STRICT', 'Expected LF after chunk data'],
    ['chunk data followed by CR and a byte', `${TE}2\r\n{}\rX0\r\n\r\n`, 'HPE_STRICT', 'Expected LF after chunk data'],
    ['bytes after a kept-alive answer', `${CL}{}garbage`, 'HPE_INVALID_CONSTANT', 'Expected HTTP/, RTSP/ or ICE/'],
    ['bytes after a `Connection: close` answer', 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}zz', 'HPE_CLOSED_CONNECTION', 'Data after `Connection: close`'],
    ['bytes after an HTTP/1.0 answer', 'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}zz', 'HPE_CLOSED_CONNECTION', 'Data after `Connection: close`'],
    ['bytes after a 204', 'HTTP/1.1 204 No Content\r\n\r\nX', 'HPE_INVALID_CONSTANT', 'Expected HTTP/, RTSP/ or ICE/'],
    ['bytes after a 304 with Connection: close', 'HTTP/1.1 304 Not Modified\r\nConnection: close\r\n\r\nX', 'HPE_CLOSED_CONNECTION', 'Data after `Connection: close`'],
    ['bytes after Content-Length: 0', 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nX', 'HPE_INVALID_CONSTANT', 'Expected HTTP/, RTSP/ or ICE/'],
    ['bytes after the trailers', `${TE}2\r\n{}\r\n0\r\n\r\nX`, 'HPE_INVALID_CONSTANT', 'Expected HTTP/, RTSP/ or ICE/'],
    ['bytes after the trailers of a `Connection: close` answer', 'HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nT: 1\r\n\r\nX', 'HPE_CLOSED_CONNECTION', 'Data after `Connection: close`'],
    ['a 1xx head in HTTP/1.0', 'HTTP/1.0 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_CLOSED_CONNECTION', 'Data after `Connection: close`'],
    ['a 1xx head in HTTP/0.9', 'HTTP/0.9 103 Early\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_CLOSED_CONNECTION', 'Data after `Connection: close`'],
    ['a 1xx head in HTTP/2.0', 'HTTP/2.0 103 Early\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_CLOSED_CONNECTION', 'Data after `Connection: close`'],
    ['bytes after an HTTP/0.9 answer', 'HTTP/0.9 200 OK\r\nContent-Length: 2\r\n\r\n{}zz', 'HPE_CLOSED_CONNECTION', 'Data after `Connection: close`'],
    ['bytes after an HTTP/2.0 answer', 'HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\n{}zz', 'HPE_CLOSED_CONNECTION', 'Data after `Connection: close`'],
    ['bytes after an HTTP/1.0 answer with a Connection option other than keep-alive', 'HTTP/1.0 200 OK\r\nConnection: Upgrade\r\nContent-Length: 2\r\n\r\n{}zz', 'HPE_CLOSED_CONNECTION', 'Data after `Connection: close`'],
    ['two Content-Length: 0 headers', 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n', 'HPE_UNEXPECTED_CONTENT_LENGTH', 'Duplicate Content-Length'],
    ['Content-Length: 0, then Transfer-Encoding', 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 'HPE_INVALID_TRANSFER_ENCODING', "Transfer-Encoding can't be present with Content-Length"],
    ['a head of 16 KiB and more', `HTTP/1.1 200 OK\r\nX: ${'a'.repeat(17000)}\r\n\r\n`, 'HPE_HEADER_OVERFLOW', 'Header overflow'],
    ['a chunk-size line of 16 KiB and more', `${TE}2;x=${'y'.repeat(17000)}\r\n`, 'HPE_CHUNK_EXTENSIONS_OVERFLOW', 'Chunk extensions overflow'],
  ])("llhttp's code and words: %s", async (_what, text, code, message) => {
    const bytes = Buffer.from(text, 'latin1');
    const want = { code, message: `Parse Error: ${message}` };
    expect(await nodeError(bytes)).toEqual(want);
    expect(ourError(bytes)).toEqual(want);
    if (bytes.length < 400) everyCut(bytes, want);
  });

  test.each([
    // Node: HPE_STRICT "Expected LF after CR".
    ['a bare CR in the status line', 'HTTP/1.1 200\rOK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_LF_EXPECTED', 'Missing expected LF after response line'],
    // Node: HPE_STRICT "Expected LF after chunk size".
    ['a bare CR after a chunk size', `${TE}2\r\r\n{}\r\n0\r\n\r\n`, 'HPE_LF_EXPECTED', 'Missing expected LF after chunk size'],
    // Node: HPE_STRICT "Expected LF after headers".
    ['a bare CR first on a header line', 'HTTP/1.1 200 OK\r\nX: a\r\n\rY: b\r\nContent-Length: 2\r\n\r\n{}', 'HPE_LF_EXPECTED', 'Missing expected LF after header value'],
    // Node takes it (a CR before the status line is skipped).
    ['a bare CR before the status line', '\rHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_LF_EXPECTED', 'Missing expected LF after response line'],
    // Node: HPE_INVALID_CHUNK_SIZE.
    ['a bare CR first on a chunk-size line', `${TE}\r2\r\n{}\r\n0\r\n\r\n`, 'HPE_LF_EXPECTED', 'Missing expected LF after chunk size'],
    // Node: "Invalid minor version".
    ['a version without its minor digit', 'HTTP/1. 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_VERSION', 'Invalid HTTP version'],
    ['a version that is no digit, HTTP/ later on the line', 'HTTP/1.a HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_VERSION', 'Invalid HTTP version'],
    // Node: "Invalid status code".
    ['a two-digit status', 'HTTP/1.1 20 OK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_STATUS', 'Invalid response status'],
    ['a tab after the status', 'HTTP/1.1 200\tOK\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_STATUS', 'Invalid response status'],
    // Node: "Unexpected whitespace after header value".
    ['a folded header', 'HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 2\r\n\r\n{}', 'HPE_INVALID_HEADER_TOKEN', 'Invalid header token'],
    // Node reads these bodies to the close.
    ['a coding that is no token', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: a b\r\n\r\n{}', 'HPE_INVALID_TRANSFER_ENCODING', 'Invalid Transfer-Encoding'],
    ['`chunked` followed by a tab', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\t\r\n\r\n2\r\n{}\r\n0\r\n\r\n', 'HPE_INVALID_TRANSFER_ENCODING', 'Invalid Transfer-Encoding'],
    // Node merges the two.
    ['a second Transfer-Encoding header', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n', 'HPE_INVALID_TRANSFER_ENCODING', 'Duplicate Transfer-Encoding'],
    // Node: HPE_STRICT "Invalid quoted-pair in chunk extensions quoted value".
    ['a quoted-pair of a control character in a chunk extension', `${TE}2;a="x\\\x01y"\r\n{}\r\n0\r\n\r\n`, 'HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size'],
  ])('its own code and words: %s', (_what, text, code, message) => {
    const bytes = Buffer.from(text, 'latin1');
    const want = { code, message: `Parse Error: ${message}` };
    expect(ourError(bytes)).toEqual(want);
    everyCut(bytes, want);
  });

  test('1xx heads past 16, trailers past 16 KiB: their words', () => {
    expect(ourError(Buffer.from('HTTP/1.1 102 Processing\r\n\r\n'.repeat(17)))).toEqual({ code: 'HPE_HEADER_OVERFLOW', message: 'Parse Error: Too many informational responses' });
    expect(ourError(Buffer.from(`${TE}0\r\n${'T: 0123456789abcdef\r\n'.repeat(1000)}`))).toEqual({ code: 'HPE_HEADER_OVERFLOW', message: 'Parse Error: Header overflow' });
  });

  test('bytes in a later piece than the end of the answer: the same errors', () => {
    const after = (text: string) => {
      const p = new ResponseParser({ onHead: () => {}, onBody: () => {}, onComplete: () => {} });
      p.execute(Buffer.from(text, 'latin1'));
      expect(p.complete).toBe(true);
      try {
        p.execute(Buffer.from('X'));
        return null;
      } catch (e) {
        return { code: (e as HttpParseError).code, message: (e as Error).message };
      }
    };
    const kept = { code: 'HPE_INVALID_CONSTANT', message: 'Parse Error: Expected HTTP/, RTSP/ or ICE/' };
    const closed = { code: 'HPE_CLOSED_CONNECTION', message: 'Parse Error: Data after `Connection: close`' };
    expect(after(`${CL}{}`)).toEqual(kept);
    expect(after('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}')).toEqual(closed);
    expect(after(`${TE}2\r\n{}\r\n0\r\n\r\n`)).toEqual(kept);
    expect(after('HTTP/1.0 204 No Content\r\n\r\n')).toEqual(closed);
  });
});

describe('framing details', () => {
  const run = (text: string | Buffer, cuts: number[] = [], maxHeadBytes?: number) => {
    const bytes = typeof text === 'string' ? Buffer.from(text, 'latin1') : text;
    const heads: ResponseHead[] = [];
    const body: Buffer[] = [];
    let completes = 0;
    const p = new ResponseParser({ onHead: (h) => heads.push(h), onBody: (c) => body.push(Buffer.from(c)), onComplete: () => completes++ }, maxHeadBytes);
    let code: string | null = null;
    let from = 0;
    try {
      for (const c of [...cuts, bytes.length]) {
        if (c > from) p.execute(bytes.subarray(from, c));
        from = Math.max(from, c);
      }
    } catch (e) {
      code = (e as HttpParseError).code;
    }
    return { code, heads, body: Buffer.concat(body).toString('latin1'), completes, parser: p };
  };
  /** The same outcome for every single cut and byte by byte. */
  const everyCut = (text: string, maxHeadBytes: number) => {
    const whole = run(text, [], maxHeadBytes);
    const summary = (o: ReturnType<typeof run>) => JSON.stringify([o.code, o.heads, o.body, o.completes]);
    const bad: number[] = [];
    for (let c = 1; c < text.length; c++) if (summary(run(text, [c], maxHeadBytes)) !== summary(whole)) bad.push(c);
    expect(bad).toEqual([]);
    expect(summary(run(text, Array.from({ length: text.length }, (_, k) => k), maxHeadBytes))).toBe(summary(whole));
    return whole;
  };

  // Hand-counted: 'HTTP/1.1 200 OK\r\n' is 17 bytes, 'Content-Length: 0\r\n' 19, the empty line 2.
  test('a head of exactly maxHeadBytes (first byte to last LF) is taken, one byte more is not, however it is cut', () => {
    const head = (pad: number) => `HTTP/1.1 200 OK\r\nX: ${'a'.repeat(pad)}\r\nContent-Length: 0\r\n\r\n`;
    expect(head(21).length).toBe(64);
    expect(everyCut(head(21), 64)).toMatchObject({ code: null, completes: 1 });
    expect(everyCut(head(22), 64)).toMatchObject({ code: 'HPE_HEADER_OVERFLOW', completes: 0 });
    // Spread over many lines (each `Y: b\r\n` is 6 bytes): 17 + 4 * 6 + 19 + 2 = 62, + 'Z:\r\n' 4 = 66.
    const lines = `HTTP/1.1 200 OK\r\n${'Y: b\r\n'.repeat(4)}Content-Length: 0\r\n`;
    expect(everyCut(`${lines}\r\n`, 62)).toMatchObject({ code: null, completes: 1 });
    expect(everyCut(`${lines}\r\n`, 61)).toMatchObject({ code: 'HPE_HEADER_OVERFLOW' });
    expect(everyCut(`${lines}Z:\r\n\r\n`, 66)).toMatchObject({ code: null, completes: 1 });
    expect(everyCut(`${lines}Z:\r\n\r\n`, 65)).toMatchObject({ code: 'HPE_HEADER_OVERFLOW' });
  });

  test('each head is bounded on its own: a 1xx head and the final head, each of maxHeadBytes', () => {
    const info = `HTTP/1.1 103 Hints\r\nL: ${'l'.repeat(37)}\r\n\r\n`; // 20 + 42 + 2
    expect(info.length).toBe(64);
    const final = `HTTP/1.1 200 OK\r\nX: ${'a'.repeat(21)}\r\nContent-Length: 2\r\n\r\n{}`;
    expect(everyCut(info + final, 64)).toMatchObject({ code: null, completes: 1, body: '{}' });
    expect(run(info.replace('L: ', 'L: l') + final, [], 64).code).toBe('HPE_HEADER_OVERFLOW');
  });

  test('trailers of exactly maxHeadBytes are taken, one byte more is not; a chunk-size line likewise', () => {
    // Trailers from their first byte to the last LF: 'T: ' + 57 + CRLF + the empty line's CRLF = 64.
    const trailers = (pad: number) => `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nT: ${'t'.repeat(pad)}\r\n\r\n`;
    expect(everyCut(trailers(57), 64)).toMatchObject({ code: null, completes: 1, body: '{}' });
    expect(everyCut(trailers(58), 64)).toMatchObject({ code: 'HPE_HEADER_OVERFLOW', completes: 0 });
    // The head of this answer is 64 bytes too (17 + 28 + 17 + 2): the trailers start their own count.
    const head64 = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nP: ${'p'.repeat(12)}\r\n\r\n`;
    expect(head64.length).toBe(64);
    expect(run(`${head64}2\r\n{}\r\n0\r\nT: ${'t'.repeat(57)}\r\n\r\n`, [], 64)).toMatchObject({ code: null, completes: 1 });
    // A chunk-size line of 64 bytes with its CRLF: '2;x=' + 58 + CRLF.
    const sizeLine = (pad: number) => `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=${'y'.repeat(pad)}\r\n{}\r\n0\r\n\r\n`;
    expect(everyCut(sizeLine(58), 64)).toMatchObject({ code: null, completes: 1, body: '{}' });
    expect(everyCut(sizeLine(59), 64)).toMatchObject({ code: 'HPE_CHUNK_EXTENSIONS_OVERFLOW', completes: 0 });
  });

  test('the body in the same piece as the head counts nothing toward the head limit', () => {
    const body = 'b'.repeat(1000);
    const text = `HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n${body}`;
    expect(run(text, [], 64)).toMatchObject({ code: null, completes: 1, body });
    // A piece that starts with the head's last LF and carries the body.
    expect(run(text, [text.indexOf(body) - 1], 64)).toMatchObject({ code: null, completes: 1, body });
    const chunked = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n${body}\r\n0\r\n\r\n`;
    expect(run(chunked, [], 64)).toMatchObject({ code: null, completes: 1, body });
    expect(run(chunked, [chunked.indexOf(body) - 1], 64)).toMatchObject({ code: null, completes: 1, body });
  });

  test('Content-Length: 20 digits up to 2^64 - 1 are taken (the caller compares them with its limit)', () => {
    for (const cl of ['10000000000000000000', '18446744073709551615', '000018446744073709551615']) {
      const o = run(`HTTP/1.1 200 OK\r\nContent-Length: ${cl}\r\n\r\n{}`);
      expect([o.code, o.heads.map((h) => h.contentLength)]).toEqual([null, [Number(cl)]]);
    }
  });

  test('finish(): true only where the connection ends a body read to the close', () => {
    const o = run('HTTP/1.0 200 OK\r\n\r\n{"a":1}');
    expect([o.completes, o.parser.finish(), o.parser.complete]).toEqual([0, true, true]);
    const q = run('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}');
    expect([q.parser.finish(), q.parser.complete]).toEqual([false, false]);
    expect(run('HTTP/1.1 200 OK\r\nX: a').parser.finish()).toBe(false);
  });

  test.each([
    ['HTAB before a Content-Length value', 'HTTP/1.1 200 OK\r\nContent-Length:\t2\r\n\r\n{}'],
    ['HTAB after a Content-Length value', 'HTTP/1.1 200 OK\r\nContent-Length: 2\t\r\n\r\n{}'],
    ['SP after a Content-Length value', 'HTTP/1.1 200 OK\r\nContent-Length: 2 \r\n\r\n{}'],
    ['SP HTAB around a Transfer-Encoding value', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: \tchunked \r\n\r\n2\r\n{}\r\n0\r\n\r\n'],
    ['an empty header value', 'HTTP/1.1 200 OK\r\nX:\r\nContent-Length: 2\r\n\r\n{}'],
    ['a quoted-pair `\\"` in a chunk extension', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a="x\\"y"\r\n{}\r\n0\r\n\r\n'],
    ['a quoted-pair of HTAB and of obs-text in a chunk extension', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a="x\\\ty";b="\\\xff"\r\n{}\r\n0\r\n\r\n'],
    ['16 significant hex digits after leading zeros', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0000000000000000002\r\n{}\r\n0\r\n\r\n'],
    ['a Transfer-Encoding trailer (trailers are not the head)', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: a b\r\n\r\n'],
    ['a Connection: close trailer', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nConnection: close\r\n\r\n'],
  ])('accepted as Node accepts it: %s', async (_what, text) => {
    const bytes = Buffer.from(text, 'latin1');
    const got = ours(bytes);
    expect(got).toEqual({ ok: true, status: 200, reason: 'OK', body: Buffer.from('{}').toString('hex') });
    expect(await nodeOutcome(bytes)).toEqual(got);
  });
});

describe('sizes and hints', () => {
  const headOf = (text: string): { head: ResponseHead | null; code: string | null; body: string } => {
    let head: ResponseHead | null = null;
    const body: Buffer[] = [];
    try {
      new ResponseParser({ onHead: (h) => (head = h), onBody: (c) => body.push(Buffer.from(c)), onComplete: () => {} }).execute(Buffer.from(text, 'latin1'));
      return { head, code: null, body: Buffer.concat(body).toString('latin1') };
    } catch (e) {
      return { head, code: (e as HttpParseError).code, body: '' };
    }
  };

  test('chunk sizes: zeros inside a size are digits; 16 significant hex digits are taken', async () => {
    const body = 'x'.repeat(256);
    const text = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n${body}\r\n0\r\n\r\n`;
    expect(ours(Buffer.from(text))).toEqual({ ok: true, status: 200, reason: 'OK', body: Buffer.from(body).toString('hex') });
    expect(await nodeOutcome(Buffer.from(text))).toEqual(ours(Buffer.from(text)));
    // 2^64 - 1 bytes announced: taken (the caller's size limit refuses the body as it comes).
    expect(headOf('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n{}')).toMatchObject({ code: null, body: '{}' });
  });

  test('a chunked head declares no length (-1), whatever came before it', () => {
    expect(headOf('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n').head).toMatchObject({ chunked: true, contentLength: -1 });
    expect(headOf('HTTP/1.1 200 OK\r\n\r\n').head).toMatchObject({ chunked: false, contentLength: -1 });
    expect(headOf('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n').head).toMatchObject({ chunked: false, contentLength: 0, keepAlive: true });
  });

  test('HTTP/0.9 and HTTP/2.0 answers keep no connection; HTTP/1.0 only with the keep-alive option itself', () => {
    expect(headOf('HTTP/0.9 200 OK\r\nContent-Length: 2\r\n\r\n').head?.keepAlive).toBe(false);
    expect(headOf('HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\n').head?.keepAlive).toBe(false);
    expect(headOf('HTTP/1.0 200 OK\r\nConnection: Upgrade\r\nContent-Length: 2\r\n\r\n').head?.keepAlive).toBe(false);
    expect(headOf('HTTP/1.0 200 OK\r\nConnection: Upgrade, Keep-Alive\r\nContent-Length: 2\r\n\r\n').head?.keepAlive).toBe(true);
  });

  test.each([
    ['timeout first', 'Keep-Alive: timeout=5, max=100', 5],
    ['timeout after another parameter', 'Keep-Alive: max=100, timeout=15', 15],
    ['no space after the comma', 'Keep-Alive: max=100,timeout=7', 7],
    ['upper case', 'Keep-Alive: TIMEOUT=9', 9],
    ['nine digits', 'Keep-Alive: timeout=123456789', 123456789],
    ['ten digits: none', 'Keep-Alive: timeout=1234567890', -1],
    ['a value that runs on: none', 'Keep-Alive: timeout=5x', -1],
    ['a longer parameter name: none', 'Keep-Alive: xtimeout=5', -1],
    ['another header: none', 'X-Keep: timeout=5', -1],
    ['another header of the same length: none', 'X-Pad-Tens: timeout=5', -1],
  ])("the daemon's Keep-Alive hint: %s", (_what, header, seconds) => {
    expect(headOf(`HTTP/1.1 200 OK\r\n${header}\r\nContent-Length: 0\r\n\r\n`).head?.keepAliveTimeoutS).toBe(seconds);
  });
});
