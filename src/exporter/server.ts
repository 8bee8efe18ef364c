/**
 * Our one HTTP(S) listener. We do not use the Prometheus exporter package's built-in
 * server: it answers 200 even when collection fails. Endpoints, as Prometheus' own servers:
 *   <telemetry path> (default /metrics)  text 0.0.4 or OpenMetrics by Accept, gzip by Accept-Encoding
 *                                        (exposition.ts); 500 when the collection fails
 *   /status                              cuzk /status JSON + an `exporter` object
 *   /                                    live status page (page.js, page.css)
 *   /-/healthy                           the process is alive
 *   /-/ready                             the source answers and has at least one GPU
 */
import type * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsSource } from '../engine/source';
import type { Logger } from '../util/logger';
import { Compression, MetricsReply, metricsReply } from './exposition';
import { loadPageAssets } from './page/assets';
import type { Telemetry } from './telemetry';
import { createEdgeServer } from './edge';
import { WebConfig, WebConfigHolder } from './web-config';

export interface ServerOptions {
  listenAddress: string;
  telemetryPath: string;
  /** gzip the telemetry path's answer when the client accepts it (default), or never. */
  compression?: Compression;
  webConfig?: WebConfig;
  /** Connections open at once (--web.max-connections; edge.ts). */
  maxConnections?: number;
  source: MetricsSource;
  telemetry: Telemetry;
  logger: Logger;
  version: string;
}

export interface RunningServer {
  /** Base URL, e.g. http://127.0.0.1:9464 (an unspecified host shows as 127.0.0.1). */
  url: string;
  port: number;
  /** Re-reads the web config file now (SIGHUP); false when the new one was refused. */
  reloadWebConfig(): boolean;
  close(): Promise<void>;
}

/** Parses `host:port`, `:port` or `[v6]:port`. Throws a readable Error. */
export function parseListenAddress(addr: string): { host?: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(addr);
  if (!m) throw new Error(`--web.listen-address "${addr}" is not host:port (for example ":9464" or "127.0.0.1:9464")`);
  const port = Number(m[3]);
  if (port > 65535) throw new Error(`--web.listen-address "${addr}": port ${port} is out of range`);
  const host = m[1] ?? m[2];
  return { host: host === '' ? undefined : host, port };
}

/** The page loads only its own files and /status; nothing may frame it. */
const SECURITY_HEADERS = {
  'Content-Security-Policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
};

export function statusDocument(source: MetricsSource, version: string): Record<string, unknown> {
  const m = source.model;
  const body = source.statusBody() ?? {};
  return {
    ...body,
    exporter: {
      version,
      source: source.source,
      backend: source.backend,
      up: m.up,
      status_mismatch: m.statusMismatch(),
      // which certain contradiction (cuzk_status_mismatch_reason); [] when none
      status_mismatch_reasons: m.mismatchReasons(),
      // gpu + finalizing, as cuzk's /status counts "gpu"; of which finalizing (split proving)
      partitions_on_gpu: m.partitionsOnGpu(),
      partitions_finalizing: m.partitionsFinalizing(),
      busy_workers: m.busyWorkers,
      snapshot_age_secs: source.snapshotAgeSeconds(),
      last_error: m.errors.lastMessage,
      generated_at: new Date().toISOString(),
      // attach: the surfaces read and what they disagree on (MetricsSource.exporterStatus)
      ...(source.exporterStatus?.() ?? {}),
    },
  };
}

export function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { host, port } = parseListenAddress(opts.listenAddress);
  const log = opts.logger;
  // The web config in force (re-read on change and on SIGHUP; web-config.ts).
  const web = new WebConfigHolder(opts.webConfig, log);
  for (const r of ['connection_limit', 'pipelining', 'auth_overload', 'web_config']) opts.source.model.errors.declare(r);
  web.onReloadError = (msg) => opts.source.model.errors.inc('web_config', msg);
  const page = loadPageAssets();

  const send = (res: http.ServerResponse, code: number, type: string, body: string | Buffer, extra: Record<string, string> = {}) => {
    res.writeHead(code, { 'Content-Type': type, 'Cache-Control': 'no-store', ...SECURITY_HEADERS, ...web.current.headers, ...extra });
    res.end(res.req.method === 'HEAD' ? undefined : body);
  };

  // Routing works on the raw path (no URL parsing: a path like "//" must not throw).
  const route = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
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
        opts.source.model.errors.inc('auth_overload');
        return send(res, 429, 'text/plain; charset=utf-8', 'too many password checks in progress, retry\n', { 'Retry-After': '1' });
      }
      if (a !== 'ok') return send(res, 401, 'text/plain; charset=utf-8', 'unauthorized\n', { 'WWW-Authenticate': 'Basic realm="cuzk-exporter"' });
    }
    // A client that has gone (closed, or closed by the edge for pipelining) gets nothing computed.
    if (req.socket.destroyed) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { Allow: 'GET, HEAD' });
    }
    if (pathname === '/-/healthy') return send(res, 200, 'text/plain; charset=utf-8', 'OK\n');
    if (pathname === opts.telemetryPath) {
      // Text 0.0.4 or OpenMetrics by Accept, gzip by Accept-Encoding (exposition.ts).
      let reply: MetricsReply;
      try {
        reply = await metricsReply(opts.telemetry, req, opts.compression);
      } catch (err) {
        log.error('collection failed', { err: (err as Error).message });
        return send(res, 500, 'text/plain; charset=utf-8', `collection failed: ${(err as Error).message}\n`);
      }
      return send(res, 200, reply.contentType, reply.body, reply.headers);
    }
    if (pathname === '/status') {
      try {
        opts.source.refresh();
      } catch (err) {
        opts.source.model.errors.inc('status', (err as Error).message);
      }
      return send(res, 200, 'application/json; charset=utf-8', JSON.stringify(statusDocument(opts.source, opts.version)));
    }
    if (pathname === '/-/ready') {
      const r = opts.source.ready();
      return send(res, r.ok ? 200 : 503, 'text/plain; charset=utf-8', r.ok ? 'Ready\n' : `Not ready: ${r.reason}\n`);
    }
    const asset = page.get(pathname);
    if (asset) return send(res, 200, asset.contentType, asset.body);
    return send(res, 404, 'text/plain; charset=utf-8', `not found; see / for the status page, ${opts.telemetryPath} for metrics\n`);
  };
  // Nothing a request does may take the process down: any failure is a 500 and a log line.
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    route(req, res).catch((err: Error) => {
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
    onDrop: () => opts.source.model.errors.inc('connection_limit'),
    onPipelining: () => opts.source.model.errors.inc('pipelining'),
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
