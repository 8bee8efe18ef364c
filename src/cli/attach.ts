/**
 * `cuzk-exporter attach --cuzk.status-url URL`: the same metrics, status JSON and page
 * from a running cuzk daemon, by polling its /status.
 */
import { AttachSource } from '../engine/attach-source';
import type { Logger } from '../util/logger';
import { Resolved, UsageError } from './options';
import { checkWebFlags, serve, untilSignal, webConfigFrom } from './serve';

export async function attachCommand(o: Resolved, log: Logger): Promise<number> {
  checkWebFlags(o);
  const webConfig = webConfigFrom(o);
  const url = o['cuzk.status-url'] as string | undefined;
  if (!url) throw new UsageError('attach: --cuzk.status-url is required (the daemon\'s status_listen address, e.g. http://127.0.0.1:9821/status)');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--cuzk.status-url "${url}" is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--cuzk.status-url "${url}" must be http:// or https://`);
  if (o['config.check']) {
    process.stdout.write('configuration OK\n');
    return 0;
  }
  const source = new AttachSource({
    url,
    pollIntervalMs: (o['cuzk.poll-interval'] as number) * 1000,
    timeoutMs: (o['cuzk.timeout'] as number) * 1000,
    maxBodyBytes: o['cuzk.max-body-bytes'] as number,
    logger: log,
  });
  const { server, telemetry } = await serve(source, o, log, webConfig);
  process.stdout.write(
    `cuzk-exporter: attached to ${url} (polling every ${o['cuzk.poll-interval']}s)\n` +
      `  metrics:     ${server.url}${o['web.telemetry-path']}\n` +
      `  status page: ${server.url}/\n` +
      `Press Ctrl-C to stop.\n`,
  );
  source.start();
  const sig = await untilSignal(log);
  log.info('shutting down', { signal: sig });
  await source.stop();
  await server.close();
  await telemetry.shutdown();
  return 0;
}
