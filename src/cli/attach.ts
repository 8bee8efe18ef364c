/**
 * `cuzk-exporter attach`: the same metrics, status JSON and page from a running cuzk
 * daemon, read through any non-empty combination of its three surfaces (DESIGN §7):
 * --cuzk.status-url (/status), --cuzk.grpc-address (gRPC), --cuzk.timeline-file (TIMELINE
 * lines of its log, or - for standard input). src/engine/sources/attach/merge.ts combines them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { grpcTarget } from '../engine/sources/attach/grpc-surface';
import { MergedAttachSource } from '../engine/sources/attach/merge';
import type { Logger } from '../util/logger';
import { fileKind } from '../util/regular-file';
import { Resolved, UsageError } from './options';
import { checkWebFlags, serve, untilSignal, webConfigFrom } from './serve';

/** Checks the surface flags; one readable line per problem. */
export function checkSurfaceFlags(o: Resolved): { statusUrl?: string; grpcAddress?: string; timelineFile?: string } {
  const statusUrl = (o['cuzk.status-url'] as string | undefined) || undefined;
  const grpcAddress = (o['cuzk.grpc-address'] as string | undefined) || undefined;
  const timelineFile = (o['cuzk.timeline-file'] as string | undefined) || undefined;
  if (!statusUrl && !grpcAddress && !timelineFile) {
    throw new UsageError(
      'attach: give at least one of --cuzk.grpc-address (cuzk\'s [daemon] listen, e.g. unix:///run/curio/cuzk.sock), ' +
        '--cuzk.timeline-file (its log, or - for standard input) and --cuzk.status-url (its status_listen, e.g. http://127.0.0.1:9821/status)',
    );
  }
  if (statusUrl) {
    let parsed: URL;
    try {
      parsed = new URL(statusUrl);
    } catch {
      throw new UsageError(`--cuzk.status-url "${statusUrl}" is not a URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--cuzk.status-url "${statusUrl}" must be http:// or https://`);
  }
  if (grpcAddress) {
    try {
      grpcTarget(grpcAddress);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  }
  if (timelineFile && timelineFile !== '-') {
    // A file that is not there yet is fine (followed like tail -F); a folder that is not,
    // or a path that is a directory, is a typo.
    const dir = path.dirname(path.resolve(timelineFile));
    let st: fs.Stats | null = null;
    try {
      st = fs.statSync(timelineFile);
    } catch {
      if (!fs.existsSync(dir)) throw new UsageError(`--cuzk.timeline-file "${timelineFile}": folder ${dir} does not exist`);
    }
    if (st && st.isDirectory()) throw new UsageError(`--cuzk.timeline-file "${timelineFile}" is a directory, not cuzk's log file`);
    // As the follower refuses it once running (timeline-follower.ts): only regular files.
    if (st && !st.isFile()) throw new UsageError(`--cuzk.timeline-file "${timelineFile}" is ${fileKind(st)}, not a regular file (to read a pipe or a stream, give --cuzk.timeline-file - and feed it on standard input)`);
  }
  return { statusUrl, grpcAddress, timelineFile };
}

export async function attachCommand(o: Resolved, log: Logger): Promise<number> {
  checkWebFlags(o);
  const webConfig = webConfigFrom(o);
  const surfaces = checkSurfaceFlags(o);
  if (o['config.check']) {
    process.stdout.write('configuration OK\n');
    return 0;
  }
  const source = new MergedAttachSource({
    ...surfaces,
    pollIntervalMs: (o['cuzk.poll-interval'] as number) * 1000,
    grpcStatusIntervalMs: ((o['cuzk.grpc-status-interval'] as number | undefined) ?? 5) * 1000,
    timeoutMs: (o['cuzk.timeout'] as number) * 1000,
    maxBodyBytes: o['cuzk.max-body-bytes'] as number,
    timeline: { pollMs: (o['cuzk.timeline-poll-interval'] as number) * 1000 },
    logger: log,
  });
  const { server, telemetry } = await serve(source, o, log, webConfig);
  const targets = source.surfaces.map((s) => (s.name === 'status' ? s.target : `${s.name} ${s.target}`)).join(', ');
  process.stdout.write(
    `cuzk-exporter: attached to ${targets} (polling every ${o['cuzk.poll-interval']}s)\n` +
      (source.surfaces.length === 1 && source.status ? '  note: /status alone does not see WindowPoSt/WinningPoSt; add --cuzk.grpc-address and --cuzk.timeline-file\n' : '') +
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
