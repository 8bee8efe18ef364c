/**
 * `cuzk-exporter fleet`: one exporter attached to every cuzk daemon of --targets.file, each
 * target exactly as `attach` would run it (src/engine/sources/fleet/), served the way Prometheus'
 * multi-target exporters are: /probe?target=NAME, the exporter's own /metrics, service
 * discovery at /targets, a fleet page at / (src/exporter/fleet-server.ts). The targets file
 * is re-read when it changes and on SIGHUP (with the web config, if any).
 */
import * as path from 'node:path';
import { startFleetServer, telemetryPerTarget } from '../exporter/fleet-server';
import type { Compression } from '../exporter/exposition';
import type { RunningServer } from '../exporter/web-front';
import { Fleet } from '../engine/sources/fleet/fleet';
import { loadTargetsFile, TargetSpec } from '../engine/sources/fleet/targets-file';
import { TargetsFileWatch } from '../engine/sources/fleet/targets-watch';
import type { Logger } from '../util/logger';
import { packageVersion } from '../util/package-root';
import { Resolved, UsageError } from './options';
import { checkWebFlags, untilSignal, webConfigFrom } from './serve';
import { onReloadSignal } from './signals';

export async function fleetCommand(o: Resolved, log: Logger): Promise<number> {
  const telemetryPath = checkWebFlags(o);
  const webConfig = webConfigFrom(o);
  const file = o['targets.file'] as string | undefined;
  if (!file) throw new UsageError('fleet: --targets.file is required (a YAML list of the cuzk daemons to attach to; see cuzk-exporter fleet --help)');
  let specs: TargetSpec[];
  try {
    specs = loadTargetsFile(file);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (o['config.check']) {
    process.stdout.write(`configuration OK (${specs.length} target${specs.length === 1 ? '' : 's'})\n`);
    return 0;
  }
  const version = packageVersion();
  const fleet = new Fleet({
    pollIntervalMs: (o['cuzk.poll-interval'] as number) * 1000,
    grpcStatusIntervalMs: ((o['cuzk.grpc-status-interval'] as number | undefined) ?? 5) * 1000,
    timeoutMs: (o['cuzk.timeout'] as number) * 1000,
    maxBodyBytes: o['cuzk.max-body-bytes'] as number,
    timelinePollMs: (o['cuzk.timeline-poll-interval'] as number) * 1000,
    logger: log,
    exporterFor: telemetryPerTarget(version),
  });
  const watch = new TargetsFileWatch(path.resolve(file), fleet, log);
  await fleet.apply(specs);
  let server: RunningServer;
  try {
    server = await startFleetServer({
      listenAddress: o['web.listen-address'] as string,
      telemetryPath,
      compression: o['web.compression'] as Compression,
      maxConnections: o['web.max-connections'] as number | undefined,
      webConfig,
      fleet,
      watch,
      logger: log,
      version,
    });
  } catch (e) {
    await fleet.stop();
    throw e;
  }
  for (const w of webConfig?.warnings ?? []) log.warn('web config', { file: webConfig?.file, warning: w });
  watch.start();
  const stopReload = onReloadSignal(() => {
    void watch.reload('SIGHUP');
    if (webConfig?.file && server.reloadWebConfig()) log.info('SIGHUP: web config reloaded', { file: webConfig.file });
  });
  log.info('listening', { url: `${server.url}/`, targets: fleet.size });
  process.stdout.write(
    `cuzk-exporter fleet: ${fleet.size} target${fleet.size === 1 ? '' : 's'} from ${file} (polling every ${o['cuzk.poll-interval']}s)\n` +
      `  fleet page:   ${server.url}/\n` +
      `  a target:     ${server.url}/probe?target=NAME  (its page: ${server.url}/targets/NAME/)\n` +
      `  discovery:    ${server.url}/targets\n` +
      `  own metrics:  ${server.url}${telemetryPath}\n` +
      `Press Ctrl-C to stop.\n`,
  );
  const sig = await untilSignal(log);
  log.info('shutting down', { signal: sig });
  stopReload();
  await watch.stop();
  await server.close();
  await fleet.stop();
  return 0;
}
