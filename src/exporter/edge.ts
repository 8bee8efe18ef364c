/**
 * The listening edge of the HTTP(S) server: what happens to a connection before a request
 * handler sees it. Everything here is bounded and matches what Go's net/http and the
 * Prometheus exporter-toolkit do, where they define it:
 *
 *  - A connection cap (--web.max-connections, as Prometheus' flag). At the cap a new
 *    connection closes the oldest connection that has no request in progress (an idle
 *    keep-alive, a half-open socket that never sent a request, a TLS handshake that never
 *    finished); only if every connection is busy is the new one refused. So a flood of
 *    half-open connections cannot starve scrapes: a scraper's connection sends its request
 *    at once and is then never the one closed. Each closed connection is counted
 *    (cuzk_exporter_errors_total{reason="connection_limit"}), and logged at most once every
 *    10 s with the counts.
 *    A connection whose answer waits on the client to read it (a client that never reads)
 *    is not "in progress": it can be closed at the cap like an idle one (after those).
 *  - One request at a time per connection, as Go serves a connection (request-queue.ts): a
 *    pipelined request waits, uncomputed, until the answer before it has been handed to the
 *    system; with `maxPipelined` (4) waiting, nothing more is read from the connection (the
 *    client's writes block); more than 4 answers in a row to requests sent before the
 *    answer before them closes the connection (counted `reason="pipelining"`); what waited
 *    on a closed connection is never computed. So 3000 pipelined requests never read, on
 *    each of 512 connections, cost 5 answers each, not 1.5 million.
 *  - An answer that makes no progress to the client for `writeStallMs` (30 s) closes its
 *    connection.
 *  - File descriptors: the cap is also kept below what the process can open (the soft
 *    `ulimit -n` less what is open and a reserve; logged at start when it binds), because
 *    out of descriptors libuv resets every pending connection, scrapers' included. A flood
 *    of idle connections under `ulimit -n 64` then costs idle connections, not scrapes.
 *  - A connection that sends no request within `firstRequestMs` is closed; header and
 *    request read timeouts bound slow senders (Node's headersTimeout/requestTimeout).
 *  - TLS: a plain HTTP request to the TLS port is answered as Go answers it
 *    ("HTTP/1.0 400 Bad Request … Client sent an HTTP request to an HTTPS server.").
 *    Client-certificate policies that Node cannot express in its handshake options
 *    (RequireAnyClientCert, VerifyClientCertIfGiven, client_allowed_sans) close the
 *    connection right after the handshake, before any HTTP is read, which is how Node
 *    enforces its own rejectUnauthorized: the client gets no HTTP answer, as with Go's
 *    failed handshake (never a per-request 403).
 *  - The certificate, key, CA and TLS options follow the web config holder: a reload (file
 *    change seen on a new connection, or SIGHUP) replaces the secure context for the next
 *    handshake, as the toolkit's GetConfigForClient does.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import type * as net from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../util/logger';
import { RequestQueue } from './request-queue';
import { ClientAuth, sanAllowed, secureContextOptions, TlsSettings, WebConfig, WebConfigHolder } from './web-config';

export interface EdgeOptions {
  web: WebConfigHolder;
  handler: http.RequestListener;
  log: Logger;
  /** Connections open at once (default 512, as Prometheus' --web.max-connections). */
  maxConnections?: number;
  /** A connection that has sent no request this long after it opened is closed (default 10 s). */
  firstRequestMs?: number;
  /** Requests that may wait behind the one in progress on a connection, and answers in a row to such requests (default 4). */
  maxPipelined?: number;
  /** An answer that makes no progress to its client this long closes the connection (default 30 s). */
  writeStallMs?: number;
  /** Called once per connection closed or refused by the cap (or by running out of files). */
  onDrop?: () => void;
  /** Called once per connection closed for pipelining (request-queue.ts). */
  onPipelining?: () => void;
}

export interface Edge {
  server: http.Server;
  /** Connections open now, and dropped by the cap so far. */
  stats(): { open: number; dropped: number };
  /** Destroys every connection, including ones not handed to HTTP yet. */
  destroyAll(): void;
}

interface Conn {
  q: RequestQueue;
  timer: NodeJS.Timeout | null;
  /** Stall watch: bytes still buffered for the client, and since when that has not gone down. */
  pending: number;
  pendingSince: number;
}

/** Requests waiting on one connection past which it is closed (pacing keeps them far below). */
const HARD_PIPELINE_LIMIT = 128;

/** Go's tlsRecordHeaderLooksLikeHTTP. */
const HTTP_START = /^(GET \/|HEAD |POST |PUT \/|OPTIO)/;
const GO_400 = 'HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n';

function clientAuthFlags(mode: ClientAuth): { requestCert: boolean; rejectUnauthorized: boolean } {
  return { requestCert: mode !== 'NoClientCert', rejectUnauthorized: mode === 'RequireAndVerifyClientCert' };
}

/** Why a finished handshake must not be served, per the toolkit's client_auth_type (null: fine). */
export function clientCertProblem(sock: TLSSocket, t: TlsSettings): string | null {
  const mode = t.clientAuth;
  if (mode === 'NoClientCert' || mode === 'RequestClientCert') return null;
  const cert = sock.getPeerX509Certificate?.();
  if (mode === 'RequireAnyClientCert' && !cert) return 'no client certificate (client_auth_type RequireAnyClientCert)';
  if (mode === 'VerifyClientCertIfGiven' && cert && !sock.authorized) return `client certificate not trusted: ${String(sock.authorizationError)}`;
  if (mode === 'RequireAndVerifyClientCert' && (!cert || !sock.authorized)) return `client certificate missing or not trusted: ${String(sock.authorizationError)}`;
  if (t.clientAllowedSans && (!cert || !sanAllowed(cert, t.clientAllowedSans))) return 'client certificate has none of client_allowed_sans';
  return null;
}

/**
 * Connections the process can hold open (Linux: the soft RLIMIT_NOFILE from /proc, less the
 * files open now, less a reserve of an eighth or at least 16 for what opens later: log files,
 * the daemon's connections). Out of descriptors, libuv resets every pending connection
 * without a word (its "EMFILE trick"), scrapers' too, so the cap must stay below it.
 * Infinity where it cannot be read.
 */
export function connectionsThatFit(): number {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    if (!m || m[1] === 'unlimited') return Infinity;
    const free = Number(m[1]) - fs.readdirSync('/proc/self/fd').length;
    return Math.max(1, free - Math.max(16, Math.ceil(free / 8)));
  } catch {
    return Infinity;
  }
}

export function createEdgeServer(o: EdgeOptions): Edge {
  const { web, log } = o;
  const max = o.maxConnections ?? 512;
  const firstRequestMs = o.firstRequestMs ?? 10_000;
  const maxPipelined = o.maxPipelined ?? 4;
  const writeStallMs = o.writeStallMs ?? 30_000;
  const conns = new Map<net.Socket, Conn>();
  let dropped = 0;
  let droppedSinceLog = 0;
  let lastLog = 0;
  // What the process can hold: the file-descriptor limit, less what is open, less a reserve.
  let fdCap = connectionsThatFit();
  let lastEmfileLog = 0;
  const tls0 = web.current.tls;

  const cap = (): number => Math.min(max, fdCap);
  if (fdCap < max) log.warn('few file descriptors: serving fewer connections at once than --web.max-connections (raise the limit, e.g. LimitNOFILE=)', { max_connections: max, serving_at_most: fdCap });

  const handler: http.RequestListener = (req, res) => {
    const raw = (tls0 ? (req.socket as unknown as { _parent?: net.Socket })._parent : req.socket) ?? req.socket;
    const c = conns.get(raw);
    if (!c) return o.handler(req, res);
    if (c.timer) clearTimeout(c.timer);
    c.timer = null;
    c.q.request(req, res);
  };
  const timeouts = { headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 1_000 };
  const server: http.Server = tls0
    ? https.createServer({ ...secureContextOptions(tls0), ...clientAuthFlags(tls0.clientAuth), handshakeTimeout: 10_000, ...timeouts }, handler)
    : http.createServer(timeouts, handler);
  server.keepAliveTimeout = 65_000;

  const drop = (sock: net.Socket) => {
    dropped++;
    droppedSinceLog++;
    o.onDrop?.();
    const c = conns.get(sock);
    if (c) c.q.close();
    else sock.destroy();
    const now = Date.now();
    if (now - lastLog >= 10_000) {
      log.warn('connection limit reached: closing idle connections to admit new ones', { max_connections: cap(), open: conns.size, closed: droppedSinceLog, closed_total: dropped });
      lastLog = now;
      droppedSinceLog = 0;
    }
  };

  /** The oldest connection with nothing in progress, else the oldest whose answer waits on its client. */
  const victim = (): net.Socket | null => {
    let stalled: net.Socket | null = null;
    for (const [s, c] of conns) {
      if (c.q.idle) return s;
      if (!stalled && c.q.waitingOnClient) stalled = s;
    }
    return stalled;
  };

  // Answers that make no progress: closed after writeStallMs (checked every second).
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [s, c] of conns) {
      // Owed to the client and not yet taken by the system: what the answer's socket (the TLS
      // socket for TLS) holds, plus what libuv still queues on the raw socket. An answer is
      // one write (one res.end), whose writableLength stays whole until all of it is taken;
      // the raw queue is what goes down while the client reads.
      const cur = c.q.current?.socket;
      const pending = cur ? cur.writableLength + ((s as unknown as { _handle?: { writeQueueSize?: number } | null })._handle?.writeQueueSize ?? 0) : 0;
      if (pending === 0 || c.pending === 0 || pending < c.pending) c.pendingSince = now; // none yet, or progress
      c.pending = pending;
      if (pending > 0 && now - c.pendingSince >= writeStallMs) {
        log.debug('connection closed: its client has read nothing of the answer', { remote: s.remoteAddress, stalled_ms: now - c.pendingSince });
        c.q.close();
      }
    }
  }, 1_000);
  sweep.unref();
  server.once('close', () => clearInterval(sweep));

  // Out of file descriptors on accept anyway (other files opened since): libuv refuses the
  // pending connections; where it reports it, make room at once and lower the cap.
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EMFILE' && err.code !== 'ENFILE') return;
    dropped++;
    o.onDrop?.();
    const held = conns.size;
    fdCap = Math.max(1, held - Math.max(4, Math.ceil(held / 8)));
    while (conns.size > fdCap) {
      const v = victim();
      if (!v) break;
      conns.delete(v);
      drop(v);
    }
    const now = Date.now();
    if (now - lastEmfileLog >= 10_000) {
      lastEmfileLog = now;
      log.warn('out of file descriptors: a connection was refused; closing idle connections and lowering the connection cap', { code: err.code, open_before: held, open: conns.size, serving_at_most: fdCap });
    }
  });

  // Take the server's own connection listener(s) (http's parser, or tls' handshake) and
  // call them ourselves, after the cap and, for TLS, after a look at the first bytes.
  const onConnection = server.listeners('connection') as ((s: net.Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (sock: net.Socket) => {
    web.maybeReload();
    if (conns.size >= cap()) {
      const v = victim();
      if (!v) return drop(sock);
      conns.delete(v);
      drop(v);
    }
    const q = new RequestQueue(sock, {
      maxPipelined,
      hardLimit: HARD_PIPELINE_LIMIT,
      handler: o.handler,
      onOverflow: () => {
        o.onPipelining?.();
        log.debug('connection closed: too many pipelined requests', { remote: sock.remoteAddress });
      },
    });
    const c: Conn = { q, timer: null, pending: 0, pendingSince: 0 };
    conns.set(sock, c);
    c.timer = setTimeout(() => {
      c.timer = null;
      if (c.q.requests === 0) sock.destroy();
    }, firstRequestMs);
    c.timer.unref();
    sock.once('close', () => {
      if (c.timer) clearTimeout(c.timer);
      c.q.close(); // the client has gone: what it queued is never computed
      conns.delete(sock);
    });
    sock.on('error', () => {}); // resets and the like: the close above tidies up
    if (!tls0) {
      q.pace(sock);
      for (const f of onConnection) f.call(server, sock);
      return;
    }
    // TLS: a handshake starts with byte 0x16; Go answers what looks like HTTP with a 400.
    let head: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      if (head[0] !== 0x16 && head.length < 5) return;
      sock.off('data', onData);
      sock.pause();
      if (head[0] !== 0x16 && HTTP_START.test(head.toString('latin1', 0, 5))) {
        sock.end(GO_400);
        return;
      }
      sock.unshift(head);
      for (const f of onConnection) f.call(server, sock);
    };
    sock.on('data', onData);
  });

  if (tls0) {
    // Client-certificate policy, then HTTP: the http listener runs only for accepted sockets.
    const onSecure = server.listeners('secureConnection') as ((s: TLSSocket) => void)[];
    server.removeAllListeners('secureConnection');
    server.on('secureConnection', (sock: TLSSocket) => {
      const t = web.current.tls ?? tls0;
      const problem = clientCertProblem(sock, t);
      if (problem) {
        log.debug('TLS client refused', { remote: sock.remoteAddress, reason: problem });
        sock.destroy();
        return;
      }
      const parent = (sock as unknown as { _parent?: net.Socket })._parent;
      const c = parent ? conns.get(parent) : undefined;
      c?.q.pace(sock);
      for (const f of onSecure) f.call(server, sock);
    });
    server.on('tlsClientError', () => {}); // failed handshakes: the client is told by TLS
    web.onChange((c: WebConfig) => {
      if (!c.tls) return;
      (server as https.Server).setSecureContext(secureContextOptions(c.tls));
      const flags = clientAuthFlags(c.tls.clientAuth);
      // Read by node:tls for every new connection (tlsConnectionListener).
      (server as unknown as { requestCert: boolean; rejectUnauthorized: boolean }).requestCert = flags.requestCert;
      (server as unknown as { requestCert: boolean; rejectUnauthorized: boolean }).rejectUnauthorized = flags.rejectUnauthorized;
    });
  }

  return {
    server,
    stats: () => ({ open: conns.size, dropped }),
    destroyAll: () => {
      for (const s of conns.keys()) s.destroy();
      conns.clear();
    },
  };
}
