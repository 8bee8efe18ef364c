/**
 * The `run` command's wiring, in-process: a real NativeEngine (the reference library
 * built by `make -C native`), real Telemetry and the real HTTP server on a free port.
 */
import { EngineConfig, NativeEngine } from '../../src/engine/sources/native/native-engine';
import { RunningServer, startServer } from '../../src/exporter/server';
import { Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';

export interface NativeExporter {
  engine: NativeEngine;
  telemetry: Telemetry;
  server: RunningServer;
  url: string;
  get(path: string): Promise<{ status: number; body: string; type: string }>;
  close(): Promise<void>;
}

export async function startNativeExporter(config: EngineConfig): Promise<NativeExporter> {
  const engine = NativeEngine.open(config);
  const telemetry = new Telemetry(engine, { version: '0.0.0-test', logger: silentLogger });
  const server = await startServer({
    listenAddress: '127.0.0.1:0',
    telemetryPath: '/metrics',
    source: engine,
    telemetry,
    logger: silentLogger,
    version: '0.0.0-test',
  });
  return {
    engine,
    telemetry,
    server,
    url: server.url,
    async get(path: string) {
      const res = await fetch(server.url + path);
      return { status: res.status, body: await res.text(), type: res.headers.get('content-type') ?? '' };
    },
    async close() {
      await server.close();
      await telemetry.shutdown();
      await engine.close();
    },
  };
}

/** Resolves once `pred` holds after an ingested batch (event-driven, bounded). */
export function untilBatch(engine: NativeEngine, pred: () => boolean, timeoutMs = 20_000): Promise<void> {
  if (pred()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const prev = engine.onBatch;
    const timer = setTimeout(() => {
      engine.onBatch = prev;
      reject(new Error(`condition not met within ${timeoutMs} ms`));
    }, timeoutMs);
    engine.onBatch = () => {
      prev?.();
      if (!pred()) return;
      clearTimeout(timer);
      engine.onBatch = prev;
      resolve();
    };
  });
}
