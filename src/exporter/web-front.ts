/**
 * What every listener of ours does before a route sees a request, shared by the one-source
 * server (server.ts) and the fleet server (fleet-server.ts): the web config in force
 * (re-read on change and on SIGHUP; web-config.ts), the rate limit, basic auth on every path
 * (/-/healthy included, as the exporter-toolkit's handler), GET/HEAD only, the security
 * headers, the connection cap and TLS (edge.ts), and a 500 — never a crash — when a route
 * fails.
 */
import type * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ErrorCounts } from '../engine/model/error-counts';
import type { Logger } from '../util/logger';
import { createEdgeServer } from './edge';
import { WebConfig, WebConfigHolder } from './web-config';

/** Parses `host:port`, `:port` or `[v6]:port`. Throws a readable Error. */
export function parseListenAddress(addr: string): { host?: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(addr);
  if (!m) throw new Error(`--web.listen-address "${addr}" is not host:port (for example ":9464" or "127.0.0.1:9464")`);
  const port = Number(m[3]);
  if (port > 65535) throw new Error(`--web.listen-address "${addr}": port ${port} is out of range`);
  const host = m[1] ?? m[2];
  return { host: host === '' ? undefined : host, port };
}

/** The pages load only their own files and JSON; nothing may frame them. */
export const SECURITY_HEADERS = {
  'Content-Security-Policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
};

export type Send = (res: http.ServerResponse, code: number, type: string, body: string | Buffer, extra?: Record<string, string>) => void;

/** One request as a route sees it: authorised, GET or HEAD, its path split from its query. */
export interface RouteRequest {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  /** The raw path before any "?" (no URL parsing: a path like "//" must not throw). */
  pathname: string;
  /** The raw query after "?", "" when none. */
  query: string;
  send: Send;
}

export interface WebFrontOptions {
  listenAddress: string;
  webConfig?: WebConfig;
  /** Connections open at once (--web.max-connections; edge.ts). */
  maxConnections?: number;
  logger: Logger;
  /** Where connection_limit, pipelining, auth_overload and web_config errors are counted. */
  errors: ErrorCounts;
  route(r: RouteRequest): Promise<void> | void;
}

export interface RunningServer {
  /** Base URL, e.g. http://127.0.0.1:9464 (an unspecified host shows as 127.0.0.1). */
  url: string;
  port: number;
  /** Re-reads the web config file now (SIGHUP); false when the new one was refused. */
  reloadWebConfig(): boolean;
  close(): Promise<void>;
}

export function startWebFront(opts: WebFrontOptions): Promise<RunningServer> {
  const { host, port } = parseListenAddress(opts.listenAddress);
  const log = opts.logger;
  const web = new WebConfigHolder(opts.webConfig, log);
  for (const r of ['connection_limit', 'pipelining', 'auth_overload', 'web_config']) opts.errors.declare(r);
  web.onReloadError = (msg) => opts.errors.inc('web_config', msg);

  const send: Send = (res, code, type, body, extra = {}) => {
    // A Buffer's length is known: without Content-Length, Node frames the answer in chunked
    // encoding, as the head is written before the body (the telemetry path's bodies).
    const length: Record<string, string> = Buffer.isBuffer(body) && res.req.method !== 'HEAD' ? { 'Content-Length': String(body.length) } : {};
    res.writeHead(code, { 'Content-Type': type, 'Cache-Control': 'no-store', ...SECURITY_HEADERS, ...web.current.headers, ...extra, ...length });
    res.end(res.req.method === 'HEAD' ? undefined : body);
  };

  const front = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const pathname = q < 0 ? raw : raw.slice(0, q);
    // As the exporter-toolkit's handler: rate limit, then basic auth, for every path
    // (/-/healthy included); client certificates were checked at the handshake (edge.ts).
    web.maybeReload();
    if (!web.allowRequest()) return send(res, 429, 'text/plain; charset=utf-8', 'too many requests\n', { 'Retry-After': '1' });
    if (web.authRequired()) {
      const a = await web.authorize(req.headers.authorization);
      if (a === 'busy') {
        opts.errors.inc('auth_overload');
        return send(res, 429, 'text/plain; charset=utf-8', 'too many password checks in progress, retry\n', { 'Retry-After': '1' });
      }
      if (a !== 'ok') return send(res, 401, 'text/plain; charset=utf-8', 'unauthorized\n', { 'WWW-Authenticate': 'Basic realm="cuzk-exporter"' });
    }
    // A client that has gone (closed, or closed by the edge for pipelining) gets nothing computed.
    if (req.socket.destroyed) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { Allow: 'GET, HEAD' });
    }
    await opts.route({ req, res, pathname, query: q < 0 ? '' : raw.slice(q + 1), send });
  };
  // Nothing a request does may take the process down: any failure is a 500 and a log line.
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    front(req, res).catch((err: Error) => {
      log.error('request failed', { path: (req.url ?? '').slice(0, 200), err: err.message });
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', `internal error: ${err.message}\n`);
      else res.destroy();
    });
  };

  // Connection cap, TLS (re-read on change), client-certificate policy, Go's 400 for
  // plain HTTP on the TLS port: edge.ts.
  const tls = opts.webConfig?.tls;
  const edge = createEdgeServer({
    web,
    handler,
    log,
    maxConnections: opts.maxConnections,
    onDrop: () => opts.errors.inc('connection_limit'),
    onPipelining: () => opts.errors.inc('pipelining'),
  });
  const server = edge.server;

  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      const where = opts.listenAddress;
      if (err.code === 'EADDRINUSE') reject(new Error(`cannot listen on ${where}: address already in use`));
      else if (err.code === 'EACCES') reject(new Error(`cannot listen on ${where}: permission denied`));
      else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND') reject(new Error(`cannot listen on ${where}: no such local address`));
      else reject(new Error(`cannot listen on ${where}: ${err.message}`));
    };
    server.once('error', onError);
    server.listen({ host, port }, () => {
      server.off('error', onError);
      server.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EMFILE' || err.code === 'ENFILE') return; // edge.ts: counted, logged, room made
        log.error('http server error', { err: err.message });
      });
      const a = server.address() as AddressInfo;
      const shownHost = !host || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : a.family === 'IPv6' ? `[${a.address}]` : a.address;
      resolve({
        url: `${tls ? 'https' : 'http'}://${shownHost}:${a.port}`,
        port: a.port,
        reloadWebConfig: () => web.reload('SIGHUP'),
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
            edge.destroyAll();
          }).then(() => web.close()),
      });
    });
  });
}
