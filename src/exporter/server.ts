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
import type { MetricsSource } from '../engine/sources/source';
import type { Logger } from '../util/logger';
import { Compression, MetricsReply, metricsReply } from './exposition';
import { loadPageAssets } from './page/assets';
import type { Telemetry } from './telemetry';
import { parseListenAddress, RunningServer, startWebFront } from './web-front';
import type { WebConfig } from './web-config';

export { parseListenAddress };
export type { RunningServer };

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
  const log = opts.logger;
  const page = loadPageAssets();
  // Rate limit, auth, method, headers, TLS and the connection cap: web-front.ts.
  return startWebFront({
    listenAddress: opts.listenAddress,
    webConfig: opts.webConfig,
    maxConnections: opts.maxConnections,
    logger: log,
    errors: opts.source.model.errors,
    route: async ({ req, res, pathname, send }) => {
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
    },
  });
}
