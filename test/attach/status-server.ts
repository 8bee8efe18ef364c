/**
 * A stand-in for a cuzk daemon's status_listen endpoint: a real HTTP server on
 * 127.0.0.1:<ephemeral> whose answer to GET /status the test switches between polls —
 * a body, an HTTP error, a connection that never answers, an endless or oversized body.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';

export type Behaviour =
  /** 200 with this body (Content-Length set). */
  | { kind: 'body'; body: string | Buffer; status?: number; contentType?: string }
  /** Accept the connection and the request, never answer. */
  | { kind: 'hang' }
  /** Send the headers, then never send the body. */
  | { kind: 'stall-body' }
  /** A body of `bytes` bytes in 64 KiB chunks, Content-Length declared or chunked. */
  | { kind: 'stream'; bytes: number; declareLength: boolean }
  /** Declare a Content-Length, send a part of the body, close the connection. */
  | { kind: 'truncate'; body: string; sendBytes: number }
  /**
   * Misbehave on a connection that already served a request, or on every request
   * (`always`); otherwise (first request of a connection) answer with `body`. `how`:
   * hang up without an answer (a daemon closing an idle kept-alive connection just as it is
   * reused); send the headers and half the body, then hang up; or ignore the request and
   * keep the connection open (a one-request server that never says `Connection: close`).
   */
  | { kind: 'drop'; always: boolean; body: string; how?: 'hangup' | 'half' | 'ignore' };

export class StatusServer {
  behaviour: Behaviour = { kind: 'body', body: '{}' };
  /** Requests answered or accepted so far. */
  requests = 0;
  /** TCP connections accepted so far. */
  connections = 0;
  private readonly served = new WeakSet<object>();
  /** Body bytes the last 'stream' answer managed to hand to the socket. */
  streamed = 0;
  /** Resolves when the last 'stream' answer ended (finished or the client went away). */
  streamDone: Promise<void> = Promise.resolve();

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<StatusServer> {
    let self: StatusServer | null = null;
    const server = http.createServer((req, res) => self!.handle(req, res));
    server.on('connection', () => self!.connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    self = new StatusServer(server, `http://127.0.0.1:${port}/status`);
    return self;
  }

  /** Serves this JSON value (serialised) from now on. */
  serveJson(v: unknown): void {
    this.behaviour = { kind: 'body', body: JSON.stringify(v) };
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.requests++;
    const b = this.behaviour;
    res.on('error', () => {}); // the client may hang up on purpose (size limit, timeout)
    const reused = this.served.has(req.socket);
    this.served.add(req.socket);
    switch (b.kind) {
      case 'drop': {
        const body = Buffer.from(b.body, 'utf8');
        if (b.always || reused) {
          if (b.how === 'ignore') return;
          if (b.how === 'half') {
            res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
            res.write(body.subarray(0, body.length >> 1), () => req.socket.destroy());
            return;
          }
          req.socket.destroy();
          return;
        }
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
        res.end(body);
        return;
      }
      case 'body': {
        const body = typeof b.body === 'string' ? Buffer.from(b.body, 'utf8') : b.body;
        res.writeHead(b.status ?? 200, { 'Content-Type': b.contentType ?? 'application/json', 'Content-Length': body.length });
        res.end(body);
        return;
      }
      case 'hang':
        return; // keep the socket open, say nothing
      case 'stall-body':
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': 1000 });
        res.flushHeaders();
        return;
      case 'truncate': {
        const body = Buffer.from(b.body, 'utf8');
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
        res.write(body.subarray(0, b.sendBytes), () => res.destroy());
        return;
      }
      case 'stream': {
        const headers: http.OutgoingHttpHeaders = { 'Content-Type': 'application/json' };
        if (b.declareLength) headers['Content-Length'] = b.bytes;
        res.writeHead(200, headers);
        this.streamed = 0;
        const chunk = Buffer.alloc(64 * 1024, 0x20); // spaces: valid JSON whitespace
        this.streamDone = new Promise<void>((done) => {
          let closed = false;
          res.on('close', () => {
            closed = true;
            done();
          });
          const pump = () => {
            while (!closed && this.streamed < b.bytes) {
              const n = Math.min(chunk.length, b.bytes - this.streamed);
              this.streamed += n;
              if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
                res.once('drain', pump);
                return;
              }
            }
            if (!closed) res.end();
          };
          pump();
        });
        return;
      }
    }
  }

  /** Closes the server and every connection it holds (hung ones included). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/** A URL on 127.0.0.1 where nothing listens (connection refused). */
export async function refusedUrl(): Promise<string> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return `http://127.0.0.1:${port}/status`;
}
