/**
 * Issue 23 (native-engine.ts close()): cuzk_engine_close is called only after every native
 * call NativeEngine queued on koffi's pool has come back. The library waits for calls that
 * have *entered* it (engine.c cuzk_engine_close: e->calls), but a call still queued on the
 * pool when the engine is freed would enter freed memory; only the JS side can order that.
 * The blocking wait is wrapped (patch) to count calls in flight; cuzk_engine_close is wrapped
 * to record how many were in flight when it was called. Real library, sim backend.
 */
import { loadLibrary } from '../../src/engine/sources/native/abi';
import { EngineConfig, NativeEngine } from '../../src/engine/sources/native/native-engine';
import { patch, until } from './native-harness';

const FOREVER = { synth_ms: 1e7, gpu_ms: 1e7, finalize_ms: 1e7, jitter: 0 };
const SLOW_SIM: EngineConfig = { backend: 'sim', sim: { 'porep-c2': FOREVER, 'snap-update': FOREVER, 'window-post': FOREVER, 'winning-post': FOREVER } };

test('close() calls cuzk_engine_close only once the blocking wait in flight has come back', async () => {
  const lib = loadLibrary();
  const realWait = lib.eventsWait;
  const realClose = lib.close;
  let inFlight = 0;
  let started = 0;
  const inFlightAtClose: number[] = [];
  const restoreWait = patch('eventsWait', {
    async: (...args: unknown[]) => {
      const cb = args.pop() as (e: Error | null, rc: number) => void;
      inFlight++;
      started++;
      realWait.async(...args, (e: Error | null, rc: number) => {
        inFlight--;
        cb(e, rc);
      });
    },
  });
  const restoreClose = patch('close', {
    async: (...args: unknown[]) => {
      inFlightAtClose.push(inFlight);
      realClose.async(...args);
    },
  });
  let engine: NativeEngine | null = null;
  try {
    engine = NativeEngine.open(SLOW_SIM);
    // The wait armed at open is in flight (nothing happens on this engine to end it early).
    await until(() => started === 1, 'the blocking wait armed');
    expect(inFlight).toBe(1);
    await engine.close();
    expect(inFlightAtClose).toEqual([0]);
  } finally {
    restoreWait();
    restoreClose();
    if (engine && inFlightAtClose.length === 0) await engine.close();
  }
});
