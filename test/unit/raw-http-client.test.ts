/**
 * The benchmark's load client on raw sockets (bench/lib/raw-http-client.ts): it must read a
 * response exactly to its end whatever the framing and however the bytes are split, or the
 * scrape rows measure the wrong thing (a response cut short reads fast; one read past its
 * end stalls the next request). A local net server writes scripted bytes, in pieces.
 */
import * as net from 'node:net';
import { runRawJob } from '../../bench/lib/raw-http-client';

interface Script {
  /** The raw response bytes for each request, in order (the last repeats). */
  responses: Buffer[];
  /** Split each response into writes of this many bytes (each awaited by the peer's drain). */
  piece?: number;
  /** Close the connection after this many responses. */
  closeAfter?: number;
}

async function serve(script: Script): Promise<{ url: string; requests: string[]; connections: () => number; close: () => Promise<void> }> {
  const requests: string[] = [];
  let connections = 0;
  let n = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((sock) => {
    connections++;
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    let buf = '';
    let served = 0;
    sock.on('data', async (d) => {
      buf += d.toString('latin1');
      let end: number;
      while ((end = buf.indexOf('\r\n\r\n')) >= 0) {
        requests.push(buf.slice(0, end));
        buf = buf.slice(end + 4);
        const r = script.responses[Math.min(n++, script.responses.length - 1)];
        const piece = script.piece ?? r.length;
        for (let i = 0; i < r.length; i += piece) {
          sock.write(r.subarray(i, i + piece));
          // A separate segment per piece: wait for the kernel to take it.
          await new Promise((resolve) => setImmediate(resolve));
        }
        served++;
        if (script.closeAfter !== undefined && served >= script.closeAfter) sock.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/metrics`,
    requests,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const withLength = (body: string, status = '200 OK') => Buffer.from(`HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, 'latin1');
const chunked = (chunks: string[], ext = '', trailer = '') =>
  Buffer.from(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${chunks.map((c) => `${c.length.toString(16)}${ext}\r\n${c}\r\n`).join('')}0\r\n${trailer}\r\n`, 'latin1');

describe('raw HTTP load client', () => {
  test('reads Content-Length bodies whole, each request on a keep-alive connection, headers sent', async () => {
    const body = 'x'.repeat(100_000);
    const s = await serve({ responses: [withLength(body)], piece: 7_001 });
    try {
      const r = await runRawJob({ url: s.url, headers: { Accept: 'text/plain', 'Accept-Encoding': 'gzip' }, requests: 6, concurrency: 2, warmup: 2 });
      expect(r.latenciesMs).toHaveLength(6);
      expect(r.startsMs).toHaveLength(6);
      expect(r.bytes).toBe(100_000);
      expect(r.status).toEqual([200]);
      expect(s.requests).toHaveLength(8);
      expect(s.connections()).toBe(2);
      expect(s.requests[0]).toMatch(/^GET \/metrics HTTP\/1\.1\r\n/);
      expect(s.requests[0]).toContain('\r\nAccept-Encoding: gzip');
      expect(s.requests[0]).toContain('\r\nHost: 127.0.0.1:');
    } finally {
      await s.close();
    }
  });

  test.each([1, 2, 3, 5, 64])('chunked framing with extensions and a trailer, split every %i bytes', async (piece) => {
    const s = await serve({ responses: [chunked(['abc', 'x'.repeat(300), 'Z'.repeat(17)], ';name=v', 'X-Trailer: 1\r\n')], piece });
    try {
      const r = await runRawJob({ url: s.url, requests: 3, concurrency: 1, warmup: 0 });
      expect(r.bytes).toBe(3 + 300 + 17);
      expect(r.latenciesMs).toHaveLength(3);
      expect(s.requests).toHaveLength(3);
    } finally {
      await s.close();
    }
  });

  test('a response split inside its header block, and an empty body', async () => {
    const s = await serve({ responses: [withLength('hello'), withLength('')], piece: 1 });
    try {
      const r = await runRawJob({ url: s.url, requests: 2, concurrency: 1, warmup: 0 });
      expect(r.latenciesMs).toHaveLength(2);
      expect(r.bytes).toBe(0);
    } finally {
      await s.close();
    }
  });

  test('records other statuses than 200', async () => {
    const s = await serve({ responses: [withLength('no', '503 Service Unavailable')] });
    try {
      const r = await runRawJob({ url: s.url, requests: 2, concurrency: 1, warmup: 0 });
      expect(r.status).toEqual([503]);
    } finally {
      await s.close();
    }
  });

  test('opens a new connection after a response that says Connection: close', async () => {
    const s = await serve({ responses: [Buffer.from('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok')], closeAfter: 1 });
    try {
      const r = await runRawJob({ url: s.url, requests: 3, concurrency: 1, warmup: 0 });
      expect(r.latenciesMs).toHaveLength(3);
      expect(s.connections()).toBe(3);
    } finally {
      await s.close();
    }
  });

  test.each([
    ['no status line', Buffer.from('SSH-2.0-OpenSSH\r\n\r\n'), /not an HTTP\/1\.x response/],
    ['neither framing', Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbody'), /neither Content-Length nor chunked/],
    ['bytes past the end', Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA'), /bytes past the end/],
    ['headers without end', Buffer.from(`HTTP/1.1 200 OK\r\n${'X-Big: y\r\n'.repeat(2000)}`), /headers over 16384 bytes/],
  ])('fails the job on a response it cannot read: %s', async (_name, bytes, message) => {
    const s = await serve({ responses: [bytes] });
    try {
      await expect(runRawJob({ url: s.url, requests: 1, concurrency: 1, warmup: 0 })).rejects.toThrow(message);
    } finally {
      await s.close();
    }
  });

  test('fails the job when the connection closes with a request in flight', async () => {
    const s = await serve({ responses: [Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort')], closeAfter: 1 });
    try {
      await expect(runRawJob({ url: s.url, requests: 1, concurrency: 1, warmup: 0 })).rejects.toThrow(/closed with a request in flight/);
    } finally {
      await s.close();
    }
  });
});
