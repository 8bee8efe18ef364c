/**
 * What `run` and `attach` share: telemetry, the HTTP server, the startup banner and an
 * orderly shutdown on SIGINT/SIGTERM.
 */
import type { MetricsSource } from '../engine/source';
import type { Compression } from '../exporter/exposition';
import { parseListenAddress, startServer, RunningServer } from '../exporter/server';
import { Telemetry } from '../exporter/telemetry';
import { loadWebConfig, WebConfig } from '../exporter/web-config';
import type { Logger } from '../util/logger';
import { packageVersion } from '../util/package-root';
import { Resolved, UsageError } from './options';

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
  if (!p.startsWith('/') || p === '/' || ['/status', '/-/healthy', '/-/ready', '/page.js', '/page.css'].includes(p)) {
    throw new UsageError(`--web.telemetry-path "${p}" must start with "/" and not be one of /, /status, /-/healthy, /-/ready`);
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
  log.info('listening', { url: `${server.url}/`, metrics: `${server.url}${path}`, status: `${server.url}/status` });
  return { telemetry, server, version };
}

/** Resolves on the first SIGINT/SIGTERM; a second one exits at once. */
export function untilSignal(log: Logger): Promise<string> {
  return new Promise((resolve) => {
    const onSignal = (sig: NodeJS.Signals) => {
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGTERM', onSignal);
      const force = (s: NodeJS.Signals) => {
        log.error('second signal: exiting without waiting', { signal: s });
        process.exit(1);
      };
      process.once('SIGINT', force);
      process.once('SIGTERM', force);
      resolve(sig);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
