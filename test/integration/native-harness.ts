/**
 * Shared by the native engine's fast suites (native-ingest-edges, native-mut): an engine
 * opened and always closed, one binding function replaced for a test, and a bounded poll.
 */
import { loadLibrary } from '../../src/engine/sources/native/abi';
import { EngineConfig, IngestOptions, NativeEngine } from '../../src/engine/sources/native/native-engine';

export type Lib = ReturnType<typeof loadLibrary>;
export type Any = (...args: any[]) => any; // eslint-disable-line @typescript-eslint/no-explicit-any

export async function withEngine<T>(config: EngineConfig, fn: (e: NativeEngine) => Promise<T> | T, ingest: IngestOptions = {}): Promise<T> {
  const engine = NativeEngine.open(config, undefined, ingest);
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

/** Replaces one function of the (shared, cached) binding until the returned restore runs. */
export function patch<K extends keyof Lib>(name: K, f: unknown): () => void {
  const lib = loadLibrary();
  const real = lib[name];
  (lib as unknown as Record<string, unknown>)[name] = f;
  return () => {
    (lib as unknown as Record<string, unknown>)[name] = real;
  };
}

/** Polls `cond` on the event loop (no fixed sleep), bounded so a hung run fails. */
export async function until(cond: () => boolean, what: string, capMs = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > capMs) throw new Error(`not reached: ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}
