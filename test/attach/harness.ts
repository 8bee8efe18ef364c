/**
 * An attach exporter as `cuzk-exporter attach` builds it, in-process: a real AttachSource
 * (polled explicitly with pollOnce, or fed with applyBody), a real Telemetry and the real
 * HTTP server on 127.0.0.1:<ephemeral>, with the log captured line by line.
 */
import { AttachSource } from '../../src/engine/sources/attach/attach-source';
import { startServer, RunningServer } from '../../src/exporter/server';
import { Telemetry } from '../../src/exporter/telemetry';
import { OPTIONS } from '../../src/cli/options';
import { createLogger } from '../../src/util/logger';

/** --cuzk.max-body-bytes' default, as the CLI has it. */
export const DEFAULT_MAX_BODY_BYTES = OPTIONS.find((o) => o.name === 'cuzk.max-body-bytes')!.default as number;

export interface Harness {
  source: AttachSource;
  telemetry: Telemetry;
  server: RunningServer;
  /** Log lines (one JSON record each, as --log.format json writes them), in order. */
  logs: string[];
  /** GET <server>/metrics: status and body. */
  metrics(): Promise<{ status: number; body: string }>;
  /** GET <server>/status as JSON. */
  status(): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export interface LogRecord {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/** The records of captured log lines at warn level or above. */
export function warnings(logs: string[]): LogRecord[] {
  return logs.map((l) => JSON.parse(l) as LogRecord).filter((r) => r.level === 'warn' || r.level === 'error');
}

export interface HarnessOptions {
  url: string;
  timeoutMs?: number;
  maxBodyBytes?: number;
}

export async function startHarness(o: HarnessOptions): Promise<Harness> {
  const logs: string[] = [];
  const logger = createLogger('debug', 'json', (line) => logs.push(line));
  const source = new AttachSource({
    url: o.url,
    pollIntervalMs: 1000, // not started: tests call pollOnce()
    timeoutMs: o.timeoutMs ?? 2000,
    maxBodyBytes: o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    logger,
  });
  const telemetry = new Telemetry(source, { version: '0.0.0-test', logger });
  const server = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', source, telemetry, logger, version: '0.0.0-test' });
  return {
    source,
    telemetry,
    server,
    logs,
    async metrics() {
      const res = await fetch(`${server.url}/metrics`);
      return { status: res.status, body: await res.text() };
    },
    async status() {
      const res = await fetch(`${server.url}/status`);
      if (res.status !== 200) throw new Error(`/status answered ${res.status}`);
      return (await res.json()) as Record<string, unknown>;
    },
    async close() {
      await source.stop();
      await server.close();
      await telemetry.shutdown();
    },
  };
}
