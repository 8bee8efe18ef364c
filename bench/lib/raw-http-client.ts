/**
 * The load client's scrapers on raw keep-alive sockets (bench/lib/load-client.ts runs them in
 * its child process). The client is the measuring instrument: every pause of its own reads as
 * server latency. Node's `http` client leaves ~50 KiB of garbage a request (parser, message
 * and stream objects, one Buffer per chunk read), so it scavenges every few hundred requests,
 * and a scavenge of that heap stalled the up-to-4 requests in flight by 9-22 ms in
 * bench/lib/tail-probe.ts (2026-12-04: 5 client scavenges in 3000 requests, the 8 slowest
 * requests 20-28 ms of which 17-22 ms were the client's GC). Here each connection reads into
 * one Buffer of its own (net's `onread`), the request is one pre-encoded Buffer, and the
 * response is parsed in place: status line, `Content-Length` or chunked framing, `Connection:
 * close` (the next request opens a new connection). What is left
 * per request is the header block as one short latin1 string and the socket write.
 *
 * HTTP/1.1 only, one request in flight per connection, as Prometheus scrapes. A response the
 * parser does not understand (no status line, neither framing, headers over 16 KiB, bytes
 * past a response's end) or a connection closed with a request in flight (an idle one the
 * server closed is opened again) fails the job with a message.
 */
import * as net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { LoadJob, LoadResult } from './load-client';

// Types only: load-client.ts imports this file's code, this file only its types.
export type RawJob = Omit<LoadJob, 'client'>;

export interface RawResult extends LoadResult {
  /** Each request's start, performance.now() of the client's process, in the order of latenciesMs. */
  startsMs: number[];
}

const MAX_HEADER_BYTES = 16 * 1024;
const READ_BUFFER_BYTES = 64 * 1024;
const CR = 13;
const LF = 10;

const enum Phase {
  Headers,
  Length,
  ChunkSize,
  ChunkExt,
  ChunkData,
  ChunkDataEnd,
  Trailer,
}

/** One keep-alive connection and its response parser (numbers only between requests). */
class Conn {
  private sock: net.Socket | null = null;
  private readonly header = Buffer.allocUnsafe(MAX_HEADER_BYTES);
  private headerLen = 0;
  private phase = Phase.Headers;
  private remaining = 0;
  private lineLen = 0;
  private bodyBytes = 0;
  private status = 0;
  private inFlight = false;
  /** The server said `Connection: close`: open a new connection for the next request. */
  private closing = false;
  /** Bytes this parser could not place (past a response's end, or unasked): the job fails. */
  broken: Error | null = null;
  private t0 = 0;
  private done: ((ms: number, status: number, bytes: number) => void) | null = null;
  private fail: ((e: Error) => void) | null = null;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly request: Buffer,
  ) {}

  /** One request; resolves with request start -> last body byte, ms. */
  get(): Promise<{ t0: number; ms: number; status: number; bytes: number }> {
    return new Promise((resolve, reject) => {
      if (this.broken) return reject(this.broken);
      this.done = (ms, status, bytes) => resolve({ t0: this.t0, ms, status, bytes });
      this.fail = reject;
      this.headerLen = 0;
      this.phase = Phase.Headers;
      this.bodyBytes = 0;
      this.closing = false;
      this.inFlight = true;
      // A closed idle connection (the server's keep-alive timeout) is opened again first.
      if (this.sock === null) this.sock = this.connect();
      this.t0 = performance.now();
      this.sock.write(this.request);
    });
  }

  destroy(): void {
    this.sock?.destroy();
    this.sock = null;
  }

  private connect(): net.Socket {
    const sock = net.connect({
      host: this.host,
      port: this.port,
      noDelay: true,
      onread: {
        buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
        callback: (n: number, buf: Uint8Array) => {
          this.onData(buf, n);
          return true; // false would pause the socket
        },
      },
    });
    sock.on('error', (e) => {
      if (this.sock === sock) this.abort(e);
    });
    sock.on('close', () => {
      // A socket this connection already let go of (Connection: close) closes late: no matter.
      if (this.sock !== sock) return;
      this.sock = null;
      if (this.inFlight) this.abort(new Error('connection closed with a request in flight'));
    });
    return sock;
  }

  private abort(e: Error): void {
    if (!this.inFlight) return;
    this.inFlight = false;
    this.fail?.(e);
  }

  private finish(): void {
    const ms = performance.now() - this.t0;
    this.inFlight = false;
    if (this.closing) this.destroy();
    this.done?.(ms, this.status, this.bodyBytes);
  }

  private onData(buf: Uint8Array, n: number): void {
    if (!this.inFlight) {
      this.broken ??= new Error('bytes received with no request in flight');
      return;
    }
    let i = 0;
    while (i < n && this.inFlight) {
      switch (this.phase) {
        case Phase.Headers: {
          const b = buf[i++];
          if (this.headerLen === MAX_HEADER_BYTES) return this.abort(new Error(`response headers over ${MAX_HEADER_BYTES} bytes`));
          this.header[this.headerLen++] = b;
          const h = this.header;
          const k = this.headerLen;
          if (b === LF && k >= 4 && h[k - 2] === CR && h[k - 3] === LF && h[k - 4] === CR) {
            const err = this.onHeaders();
            if (err) return this.abort(err);
          }
          break;
        }
        case Phase.Length:
          i += this.body(n - i);
          if (this.remaining === 0) this.finish();
          break;
        case Phase.ChunkSize: {
          const b = buf[i++];
          const d = b >= 48 && b <= 57 ? b - 48 : b >= 97 && b <= 102 ? b - 87 : b >= 65 && b <= 70 ? b - 55 : -1;
          if (d >= 0) this.remaining = this.remaining * 16 + d;
          else if (b === LF) this.endSizeLine();
          else if (b !== CR) this.phase = Phase.ChunkExt;
          break;
        }
        case Phase.ChunkExt:
          if (buf[i++] === LF) this.endSizeLine();
          break;
        case Phase.ChunkData:
          i += this.body(n - i);
          if (this.remaining === 0) this.phase = Phase.ChunkDataEnd;
          break;
        case Phase.ChunkDataEnd:
          // remaining is 0 here: the next size line starts from it.
          if (buf[i++] === LF) this.phase = Phase.ChunkSize;
          break;
        case Phase.Trailer: {
          const b = buf[i++];
          if (b === LF) {
            if (this.lineLen === 0) this.finish();
            this.lineLen = 0;
          } else if (b !== CR) this.lineLen++;
          break;
        }
      }
    }
    if (i < n && !this.inFlight) this.broken ??= new Error('bytes past the end of a response');
  }

  /** Body bytes of the `available` read: as many as the response (or chunk) has left; how many. */
  private body(available: number): number {
    const take = Math.min(this.remaining, available);
    this.remaining -= take;
    this.bodyBytes += take;
    return take;
  }

  private endSizeLine(): void {
    if (this.remaining === 0) {
      this.phase = Phase.Trailer;
      this.lineLen = 0;
    } else this.phase = Phase.ChunkData;
  }

  private onHeaders(): Error | null {
    const text = this.header.toString('latin1', 0, this.headerLen);
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
    if (!m) return new Error(`not an HTTP/1.x response: ${JSON.stringify(text.slice(0, 40))}`);
    this.status = Number(m[1]);
    this.closing = /\r\nconnection:[ \t]*close/i.test(text);
    const len = /\r\ncontent-length:[ \t]*(\d+)/i.exec(text);
    if (/\r\ntransfer-encoding:[ \t]*chunked/i.test(text)) {
      this.phase = Phase.ChunkSize;
      this.remaining = 0;
    } else if (len) {
      this.remaining = Number(len[1]);
      this.phase = Phase.Length;
      if (this.remaining === 0) this.finish();
    } else if (this.status === 204 || this.status === 304) this.finish();
    else return new Error(`response ${this.status} with neither Content-Length nor chunked framing`);
    return null;
  }
}

/** `concurrency` raw keep-alive scrapers back to back until `requests` responses were read whole. */
export async function runRawJob(job: RawJob): Promise<RawResult> {
  const u = new URL(job.url);
  if (u.protocol !== 'http:') throw new Error(`raw client speaks http only, not ${u.protocol}`);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const port = Number(u.port || 80);
  const lines = [`GET ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`, 'Connection: keep-alive'];
  for (const [k, v] of Object.entries(job.headers ?? {})) lines.push(`${k}: ${v}`);
  const request = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  const conns = Array.from({ length: job.concurrency }, () => new Conn(host, port, request));
  try {
    for (let i = 0; i < job.warmup; i++) await conns[0].get();
    const latencies = new Float64Array(job.requests);
    const starts = new Float64Array(job.requests);
    const statuses = new Set<number>();
    let n = 0;
    let issued = 0;
    let bytes = 0;
    const scraper = async (c: Conn) => {
      while (issued < job.requests) {
        issued++;
        const r = await c.get();
        starts[n] = r.t0;
        latencies[n++] = r.ms;
        statuses.add(r.status);
        bytes = r.bytes;
        if (job.intervalMs && issued < job.requests) await new Promise((resolve) => setTimeout(resolve, job.intervalMs));
      }
    };
    await Promise.all(conns.map(scraper));
    for (const c of conns) if (c.broken) throw c.broken;
    return { latenciesMs: Array.from(latencies.subarray(0, n)), startsMs: Array.from(starts.subarray(0, n)), bytes, status: [...statuses] };
  } finally {
    for (const c of conns) c.destroy();
  }
}
