/**
 * The listener of `cuzk-exporter fleet`, shaped as Prometheus' multi-target exporters
 * (blackbox_exporter, snmp_exporter): each target's metrics at /probe?target=NAME, the
 * exporter's own health at the telemetry path. Prometheus relabels each target name into
 * `target=` and `instance=`, so every series of a prover carries `instance="<its name>"`
 * exactly as if it had its own exporter: dashboards and rules work unchanged (README
 * "Monitoring a fleet").
 *
 *   /probe?target=NAME          that target's /metrics body (text or OpenMetrics, gzip), 404 for an unknown name
 *   <telemetry path> (/metrics) the fleet exporter's own metrics (fleet-metrics.ts)
 *   /targets                    Prometheus HTTP service discovery: [{targets: [NAME], labels: {...}}]
 *   /fleet.json                 every target at a glance (the fleet page's data; fleet-summary.ts)
 *   /                           the fleet page
 *   /targets/NAME/              that target's status page; /targets/NAME/status its /status JSON
 *   /-/healthy, /-/ready        the process is alive / the targets file is loaded
 */
import type { Fleet, FleetTarget } from '../engine/sources/fleet/fleet';
import type { MetricsSource } from '../engine/sources/source';
import { fleetMetricsText } from './fleet-metrics';
import { summarizeFleet } from './fleet-summary';
import type { TargetsFileWatch } from '../engine/sources/fleet/targets-watch';
import type { Logger } from '../util/logger';
import { Compression, metricsReply, MetricsReply } from './exposition';
import { loadFleetAssets, loadPageAssets } from './page/assets';
import { statusDocument } from './server';
import { Telemetry } from './telemetry';
import type { WebConfig } from './web-config';
import { RouteRequest, RunningServer, startWebFront } from './web-front';

export interface FleetServerOptions {
  listenAddress: string;
  telemetryPath: string;
  compression?: Compression;
  webConfig?: WebConfig;
  maxConnections?: number;
  fleet: Fleet<Telemetry>;
  watch: TargetsFileWatch;
  logger: Logger;
  version: string;
}

export const UNKNOWN_TARGET_ERROR = 'unknown_target';

/**
 * The Fleet's `exporterFor`: each target its own Telemetry over its own source, exactly as
 * `cuzk-exporter attach` makes one. The fleet's logger, not the target's: OpenTelemetry's
 * diagnostics go to the first Telemetry's logger for the whole process.
 */
export function telemetryPerTarget(version: string): (source: MetricsSource, logger: Logger) => Telemetry {
  return (source, logger) => new Telemetry(source, { version, logger });
}
const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/** The `target` parameter of a raw query string, or null (URLSearchParams never throws). */
export function targetParam(query: string): string | null {
  return new URLSearchParams(query).get('target');
}

export function startFleetServer(opts: FleetServerOptions): Promise<RunningServer> {
  const { fleet, version, logger: log } = opts;
  const box = loadPageAssets();
  const page = loadFleetAssets();
  fleet.errors.declare(UNKNOWN_TARGET_ERROR);
  fleet.errors.declare('collect');

  const probe = async ({ req, res, query, send }: RouteRequest) => {
    const name = targetParam(query);
    if (name === null || name === '') return send(res, 400, TEXT, 'the target parameter is missing: /probe?target=NAME (a name from the targets file; /targets lists them)\n');
    const t = fleet.get(name);
    if (!t) {
      fleet.errors.inc(UNKNOWN_TARGET_ERROR, `probe of unknown target ${JSON.stringify(name.slice(0, 128))}`);
      return send(res, 404, TEXT, `unknown target ${JSON.stringify(name.slice(0, 128))}: /targets lists the targets of the targets file\n`);
    }
    let reply: MetricsReply;
    try {
      reply = await metricsReply(t.telemetry, req, opts.compression);
    } catch (err) {
      fleet.errors.inc('collect', (err as Error).message);
      log.error('collection failed', { target: t.name, err: (err as Error).message });
      return send(res, 500, TEXT, `collection failed: ${(err as Error).message}\n`);
    }
    return send(res, 200, reply.contentType, reply.body, reply.headers);
  };

  /** /targets/NAME/<rest>: the target's status page, its /status, its readiness. */
  const targetRoute = ({ res, pathname, send }: RouteRequest, t: FleetTarget<Telemetry>, rest: string) => {
    if (rest === '/status') {
      try {
        t.source.refresh();
      } catch (err) {
        t.source.model.errors.inc('status', (err as Error).message);
      }
      const doc = statusDocument(t.source, version);
      (doc.exporter as Record<string, unknown>).target = { name: t.name, labels: t.labels };
      return send(res, 200, JSON_TYPE, JSON.stringify(doc));
    }
    if (rest === '/-/ready') {
      const r = t.source.ready();
      return send(res, r.ok ? 200 : 503, TEXT, r.ok ? 'Ready\n' : `Not ready: ${r.reason}\n`);
    }
    const asset = box.get(rest);
    if (asset) return send(res, 200, asset.contentType, asset.body);
    return send(res, 404, TEXT, `not found: ${pathname.slice(0, 200)}\n`);
  };

  return startWebFront({
    listenAddress: opts.listenAddress,
    webConfig: opts.webConfig,
    maxConnections: opts.maxConnections,
    logger: log,
    errors: fleet.errors,
    route: async (r) => {
      const { res, pathname, send } = r;
      if (pathname === '/-/healthy') return send(res, 200, TEXT, 'OK\n');
      if (pathname === '/-/ready') return send(res, 200, TEXT, 'Ready\n');
      if (pathname === '/probe') return probe(r);
      if (pathname === opts.telemetryPath) return send(res, 200, 'text/plain; version=0.0.4; charset=utf-8', fleetMetricsText(fleet, opts.watch, version));
      if (pathname === '/targets') {
        const sd = fleet.list().map((t) => ({ targets: [t.name], labels: t.labels }));
        return send(res, 200, JSON_TYPE, JSON.stringify(sd));
      }
      if (pathname === '/fleet.json') return send(res, 200, JSON_TYPE, JSON.stringify(summarizeFleet(fleet, opts.watch, version)));
      const m = /^\/targets\/([^/]+)(\/.*)?$/.exec(pathname);
      if (m) {
        let name: string;
        try {
          name = decodeURIComponent(m[1]);
        } catch {
          return send(res, 400, TEXT, 'bad target name in the path\n');
        }
        const t = fleet.get(name);
        if (!t) return send(res, 404, TEXT, `unknown target ${JSON.stringify(name.slice(0, 128))}: see / for the fleet\n`);
        // The page's files are relative to it: /targets/NAME must end in "/".
        if (m[2] === undefined) return send(res, 308, TEXT, 'see the trailing slash\n', { Location: `${m[1]}/` });
        return targetRoute(r, t, m[2]);
      }
      const asset = page.get(pathname);
      if (asset) return send(res, 200, asset.contentType, asset.body);
      return send(res, 404, TEXT, `not found; see / for the fleet page, /probe?target=NAME for a target's metrics, ${opts.telemetryPath} for the exporter's own\n`);
    },
  });
}
