/**
 * What `run` and `attach` share: telemetry, the HTTP server, the startup banner and an
 * orderly shutdown on SIGINT/SIGTERM (signals.ts; SIGHUP reloads the web config).
 */
import type { MetricsSource } from '../engine/sources/source';
import type { Compression } from '../exporter/exposition';
import { parseListenAddress, startServer, RunningServer } from '../exporter/server';
import { Telemetry } from '../exporter/telemetry';
import { loadWebConfig, WebConfig } from '../exporter/web-config';
import type { Logger } from '../util/logger';
import { packageVersion } from '../util/package-root';
import { Resolved, UsageError } from './options';
import { onReloadSignal, untilSignal } from './signals';

export { untilSignal };

export function webConfigFrom(o: Resolved): WebConfig | undefined {
  const file = o['web.config.file'] as string | undefined;
  if (!file) return undefined;
  try {
    return loadWebConfig(file);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/** Checks the web flags before anything starts, so a typo costs one line, not a startup. */
export function checkWebFlags(o: Resolved): string {
  try {
    parseListenAddress(o['web.listen-address'] as string);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const p = o['web.telemetry-path'] as string;
  const taken = ['/status', '/-/healthy', '/-/ready', '/page.css', '/fleet.css', '/fleet.json', '/probe', '/targets'];
  if (!p.startsWith('/') || p === '/' || taken.includes(p) || p.startsWith('/ui/') || p.startsWith('/targets/')) {
    throw new UsageError(`--web.telemetry-path "${p}" must start with "/" and not be one of /, ${taken.join(', ')} or under /ui/ or /targets/`);
  }
  // Requests are routed on the raw path before any "?": anything but a plain path could
  // never be requested (a query, a fragment, %-escapes, empty or dot segments, spaces).
  if (p.length > 256 || !/^(\/[A-Za-z0-9._~!$&'()*+,;=:@-]+)+$/.test(p) || /\/\.{1,2}(\/|$)/.test(p)) {
    throw new UsageError(
      `--web.telemetry-path "${p}" must be a plain path such as /metrics: "/" then segments of letters, digits and -._~!$&'()*+,;=:@ (no "?", "#", "%", spaces, empty or dot segments; at most 256 characters)`,
    );
  }
  const otlp = o['otlp.endpoint'] as string | undefined;
  if (otlp !== undefined) {
    let u: URL | null = null;
    try {
      u = new URL(otlp);
    } catch {
      u = null;
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') {
      throw new UsageError(`--otlp.endpoint "${otlp}" is not an http:// or https:// URL (for example http://collector:4318/v1/metrics)`);
    }
  }
  return p;
}

export interface Serving {
  telemetry: Telemetry;
  server: RunningServer;
  version: string;
}

export async function serve(source: MetricsSource, o: Resolved, log: Logger, webConfig?: WebConfig): Promise<Serving> {
  const version = packageVersion();
  const telemetry = new Telemetry(source, {
    version,
    logger: log,
    otlpEndpoint: o['otlp.endpoint'] as string | undefined,
    otlpIntervalMs: ((o['otlp.interval'] as number | undefined) ?? 15) * 1000,
  });
  let server: RunningServer;
  try {
    server = await startServer({
      listenAddress: o['web.listen-address'] as string,
      telemetryPath: o['web.telemetry-path'] as string,
      maxConnections: o['web.max-connections'] as number | undefined,
      compression: o['web.compression'] as Compression,
      webConfig,
      source,
      telemetry,
      logger: log,
      version,
    });
  } catch (e) {
    await telemetry.shutdown().catch(() => {});
    throw e;
  }
  const path = o['web.telemetry-path'] as string;
  for (const w of webConfig?.warnings ?? []) log.warn('web config', { file: webConfig?.file, warning: w });
  log.info('listening', { url: `${server.url}/`, metrics: `${server.url}${path}`, status: `${server.url}/status` });
  if (webConfig?.file) {
    const stop = onReloadSignal(() => {
      if (server.reloadWebConfig()) log.info('SIGHUP: web config reloaded', { file: webConfig.file });
    });
    const close = server.close;
    server.close = () => {
      stop();
      return close();
    };
  }
  return { telemetry, server, version };
}

