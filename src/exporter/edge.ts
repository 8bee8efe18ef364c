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
import * as http from 'node:http';
import * as https from 'node:https';
import type * as net from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../util/logger';
import { ClientAuth, sanAllowed, secureContextOptions, TlsSettings, WebConfig, WebConfigHolder } from './web-config';

export interface EdgeOptions {
  web: WebConfigHolder;
  handler: http.RequestListener;
  log: Logger;
  /** Connections open at once (default 512, as Prometheus' --web.max-connections). */
  maxConnections?: number;
  /** A connection that has sent no request this long after it opened is closed (default 10 s). */
  firstRequestMs?: number;
  /** Called once per connection closed or refused by the cap. */
  onDrop?: () => void;
}

export interface Edge {
  server: http.Server;
  /** Connections open now, and dropped by the cap so far. */
  stats(): { open: number; dropped: number };
  /** Destroys every connection, including ones not handed to HTTP yet. */
  destroyAll(): void;
}

interface Conn {
  /** Requests in progress on this connection. */
  active: number;
  requests: number;
  timer: NodeJS.Timeout | null;
}

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

export function createEdgeServer(o: EdgeOptions): Edge {
  const { web, log } = o;
  const max = o.maxConnections ?? 512;
  const firstRequestMs = o.firstRequestMs ?? 10_000;
  const conns = new Map<net.Socket, Conn>();
  let dropped = 0;
  let droppedSinceLog = 0;
  let lastLog = 0;
  const tls0 = web.current.tls;

  const handler: http.RequestListener = (req, res) => {
    const raw = (tls0 ? (req.socket as unknown as { _parent?: net.Socket })._parent : req.socket) ?? req.socket;
    const c = conns.get(raw);
    if (c) {
      c.active++;
      c.requests++;
      if (c.timer) clearTimeout(c.timer);
      c.timer = null;
      res.once('close', () => c.active--);
    }
    o.handler(req, res);
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
    sock.destroy();
    const now = Date.now();
    if (now - lastLog >= 10_000) {
      log.warn('connection limit reached: closing idle connections to admit new ones', { max_connections: max, open: conns.size, closed: droppedSinceLog, closed_total: dropped });
      lastLog = now;
      droppedSinceLog = 0;
    }
  };

  // Take the server's own connection listener(s) (http's parser, or tls' handshake) and
  // call them ourselves, after the cap and, for TLS, after a look at the first bytes.
  const onConnection = server.listeners('connection') as ((s: net.Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (sock: net.Socket) => {
    web.maybeReload();
    if (conns.size >= max) {
      let victim: net.Socket | null = null;
      for (const [s, c] of conns) {
        if (c.active === 0) {
          victim = s;
          break;
        }
      }
      if (!victim) return drop(sock);
      conns.delete(victim);
      drop(victim);
    }
    const c: Conn = { active: 0, requests: 0, timer: null };
    conns.set(sock, c);
    c.timer = setTimeout(() => {
      c.timer = null;
      if (c.requests === 0) sock.destroy();
    }, firstRequestMs);
    c.timer.unref();
    sock.once('close', () => {
      if (c.timer) clearTimeout(c.timer);
      conns.delete(sock);
    });
    sock.on('error', () => {}); // resets and the like: the close above tidies up
    if (!tls0) {
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
