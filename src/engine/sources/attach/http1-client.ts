/**
 * GET over plain HTTP/1.1 on a net.Socket, for the /status poll of an http:// URL (https://
 * stays on node:https). It does what the poll used Node's http client and a keep-alive
 * http.Agent (maxSockets 1) for, and no more: one request at a time per connection, never
 * pipelined; at most one idle connection kept for the next request, and only where the answer
 * allows it (http1-response.ts decides keep-alive as Node's parser does); an idle connection
 * the daemon closes, or that sends anything, is dropped; the daemon's `Keep-Alive: timeout=N`
 * hint is honoured as Node's agent does (not reused past N - 1 s). The request is the bytes
 * Node's client sends for `http.get(url, { headers: { Accept }, agent })`: request line,
 * Accept, Host (the port unless 80), Authorization from the URL's user:password,
 * `Connection: keep-alive` or `close`.
 *
 * Outcomes, as fetchOnce (attach-source.ts) read them from Node's client:
 *  - onResponse once the final head is complete (the request is "answered" from then on);
 *  - onData / onEnd for the body, onEnd only for a complete one;
 *  - onError for everything else, once: a socket error as net gives it; the connection
 *    ending before a head as Node says it (ECONNRESET "socket hang up"), after one as
 *    ECONNRESET "aborted"; a malformed answer as an HttpParseError (HPE_* codes).
 * Nothing is called after destroy(). Measured on bench/attach-poll.ts: see bench/README.md.
 */
import * as net from 'node:net';
import { HttpParseError, ResponseHead, ResponseParser } from './http1-response';

/** Where a poll goes: the parts of an http:// URL (urlToHttpOptions') this client uses. */
export interface Http1Target {
  /** Host name or address, IPv6 without brackets. */
  host: string;
  port: number;
  /** Path and query. */
  path: string;
  /** `user:password`, decoded, or undefined. */
  auth?: string;
}

export interface Http1Handlers {
  onResponse(head: ResponseHead): void;
  onData(chunk: Buffer): void;
  onEnd(): void;
  onError(e: NodeJS.ErrnoException): void;
}

const connReset = (message: string): NodeJS.ErrnoException => Object.assign(new Error(message), { code: 'ECONNRESET' });

/** The request's bytes, as Node's ClientRequest writes them for this GET. */
export function requestHead(t: Http1Target, headers: Record<string, string>, keepAlive: boolean): string {
  let host = t.host.includes(':') && !t.host.startsWith('[') ? `[${t.host}]` : t.host;
  if (t.port !== 80) host += `:${t.port}`;
  let s = `GET ${t.path} HTTP/1.1\r\n`;
  for (const k of Object.keys(headers)) s += `${k}: ${headers[k]}\r\n`;
  s += `Host: ${host}\r\n`;
  if (t.auth !== undefined) s += `Authorization: Basic ${Buffer.from(t.auth).toString('base64')}\r\n`;
  return `${s}Connection: ${keepAlive ? 'keep-alive' : 'close'}\r\n\r\n`;
}

/** One connection and the request on it, if any. */
class Conn {
  req: Http1Request | null = null;
  /** performance.now() when it went idle, and how long the daemon said it keeps it. */
  idleSince = 0;
  idleForMs = Infinity;
  keepAliveSet = false;
  readonly key: string;
  constructor(
    readonly socket: net.Socket,
    readonly pool: Http1Pool,
    key: string,
  ) {
    this.key = key;
    socket.on('data', (d: Buffer) => (this.req ? this.req.data(d) : this.drop()));
    socket.on('end', () => (this.req ? this.req.eof() : this.drop()));
    socket.on('error', (e: NodeJS.ErrnoException) => (this.req ? this.req.fail(e) : this.drop()));
    socket.on('close', () => (this.req ? this.req.eof() : this.drop()));
  }

  drop(): void {
    this.socket.destroy();
    this.pool.forget(this);
  }
}

export class Http1Request {
  /** Whether it went on a connection an earlier request used (Node's `req.reusedSocket`). */
  readonly reusedSocket: boolean;
  answered = false;
  private done = false;
  private readonly parser: ResponseParser;

  constructor(
    private readonly conn: Conn,
    reused: boolean,
    private readonly keepAlive: boolean,
    private readonly h: Http1Handlers,
    maxHeadBytes: number,
  ) {
    this.reusedSocket = reused;
    this.parser = new ResponseParser(
      {
        onHead: (head) => {
          this.answered = true;
          this.h.onResponse(head);
        },
        onBody: (chunk) => this.h.onData(chunk),
        onComplete: () => this.completed(),
      },
      maxHeadBytes,
    );
  }

  /** Ends it: the connection is closed, nothing more is called. */
  destroy(): void {
    if (this.done) return;
    this.done = true;
    this.parser.stop();
    this.conn.req = null;
    this.conn.drop();
  }

  data(d: Buffer): void {
    if (this.done) return;
    try {
      this.parser.execute(d);
    } catch (e) {
      if (e instanceof HttpParseError) this.fail(e as NodeJS.ErrnoException);
      else throw e;
    }
  }

  /** The connection ended or closed. */
  eof(): void {
    if (this.done) return;
    // After a 101 Node's client waits for its deadline, the connection gone or not.
    if (this.parser.ignoring) return;
    if (this.parser.finish()) return; // a body read to the close: completed() ran
    this.fail(connReset(this.answered ? 'aborted' : 'socket hang up'));
  }

  fail(e: NodeJS.ErrnoException): void {
    if (this.done) return;
    this.destroy();
    this.h.onError(e);
  }

  private completed(): void {
    if (this.done) return;
    this.done = true;
    const head = this.parser.head!;
    this.conn.req = null;
    if (this.keepAlive && head.keepAlive && !this.conn.socket.destroyed) this.conn.pool.release(this.conn, head.keepAliveTimeoutS);
    else this.conn.drop();
    this.h.onEnd();
  }
}

/**
 * The connections of one poller (AttachSource's KeepAlive): at most one idle one kept. A
 * request while another runs gets a connection of its own (kept afterwards only if none is).
 */
export class Http1Pool {
  private idle: Conn | null = null;
  private readonly live = new Set<Conn>();

  constructor(
    private readonly maxHeadBytes = 16 * 1024,
    /** The clock idle times are measured on (tests set it). */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Sends GET `t`; `keepAlive` false: `Connection: close`, a new connection, not kept. */
  request(t: Http1Target, headers: Record<string, string>, keepAlive: boolean, h: Http1Handlers): Http1Request {
    const key = `${t.host}\0${t.port}`;
    let conn = keepAlive ? this.takeIdle(key) : null;
    const reused = conn !== null;
    if (conn === null) {
      conn = new Conn(net.connect({ host: t.host, port: t.port, noDelay: true }), this, key);
      this.live.add(conn);
    }
    const req = new Http1Request(conn, reused, keepAlive, h, this.maxHeadBytes);
    conn.req = req;
    conn.socket.write(requestHead(t, headers, keepAlive), 'latin1');
    return req;
  }

  private takeIdle(key: string): Conn | null {
    const c = this.idle;
    if (c === null) return null;
    this.idle = null;
    // Past the daemon's own keep-alive hint (less a second, as Node's agent): not reused.
    if (c.key !== key || c.socket.destroyed || this.now() - c.idleSince > c.idleForMs) {
      c.drop();
      return null;
    }
    c.socket.ref();
    return c;
  }

  /** A connection whose answer was complete and allows another request. */
  release(c: Conn, hintS: number): void {
    if (this.idle !== null) {
      c.drop();
      return;
    }
    if (!c.keepAliveSet) {
      c.socket.setKeepAlive(true, 1000); // as Node's agent does for its free sockets
      c.keepAliveSet = true;
    }
    c.idleSince = this.now();
    c.idleForMs = hintS > 1 ? hintS * 1000 - 1000 : Infinity; // Node's agent: a hint of 0 ms is none
    c.socket.unref(); // an idle connection keeps no process alive
    this.idle = c;
  }

  forget(c: Conn): void {
    this.live.delete(c);
    if (this.idle === c) this.idle = null;
  }

  /** Closes every connection (idle or busy); requests on them end without a callback. */
  destroy(): void {
    for (const c of [...this.live]) {
      if (c.req) c.req.destroy();
      else c.drop();
    }
    this.idle = null;
  }
}
