/**
 * How the native engine's events reach the model between scrapes (NativeEngine, issue 21):
 * while events keep coming, drains run from the linger timer — at most one per linger —
 * and the blocking wait on koffi's pool (an async round trip with two cross-thread
 * wake-ups) is armed again only once a drain finds nothing; a quiet engine is waited on,
 * not polled. Scrapes still drain first (exactness is covered in exporter.test.ts).
 */
import { NativeEngine } from '../../src/engine/native-engine';
import { Workload } from '../../src/engine/workload';
import { untilBatch } from '../helpers/native-exporter';

const LINGER_MS = 20;

test('busy: one drain per linger at most, no blocking wait per drain; quiet: back to the blocking wait', async () => {
  // ~20 k events/s: every linger has events to drain.
  const engine = NativeEngine.open({ backend: 'sim', gpus: 2, workers_per_gpu: 2, synthesis_concurrency: 16, time_scale: 0.001 }, undefined, { lingerMs: LINGER_MS });
  const w = new Workload(engine, { mix: { 'snap-update': 1 }, concurrency: 8 });
  try {
    const running = w.run();
    // Past the first few drains (the first proofs starting), then a window of 40 drains.
    await untilBatch(engine, () => engine.stats.drains >= 5);
    const d0 = engine.stats.drains;
    const w0 = engine.stats.waits;
    const t0 = performance.now();
    await untilBatch(engine, () => engine.stats.drains >= d0 + 40);
    const elapsedMs = performance.now() - t0;
    const drains = engine.stats.drains - d0;
    // Nothing else drains here (no scrapes). Timers only ever fire late, so the bound
    // holds on a busy machine too.
    expect(drains).toBeLessThanOrEqual(elapsedMs / LINGER_MS + 1);
    // Re-armed waits only when a drain found nothing (a gap in the workload): before this
    // change every drain re-armed one.
    expect(engine.stats.waits - w0).toBeLessThan(drains / 2);

    await w.stop(60_000);
    await running;
    // Quiet: drains stop, the engine sits in the blocking wait (re-armed at its timeout).
    const quietDrains = engine.stats.drains;
    const quietWaits = engine.stats.waits;
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (engine.stats.waits >= quietWaits + 2) {
          clearInterval(check);
          resolve();
        }
      }, 10);
    });
    expect(engine.stats.drains).toBe(quietDrains);
  } finally {
    await engine.close();
  }
});

test('lingerMs 0: each wake drains at once and re-arms the wait (the freshness benchmark’s push path)', async () => {
  const engine = NativeEngine.open({ backend: 'sim', gpus: 1, workers_per_gpu: 2, time_scale: 0.001 }, undefined, { lingerMs: 0 });
  try {
    const w0 = engine.stats.waits;
    const job = engine.submit('winning-post');
    const r = await engine.awaitProof(job);
    expect(r.outcome).toBe('completed');
    expect(engine.stats.drains).toBeGreaterThan(0);
    // Every drain came from a wait of its own.
    expect(engine.stats.waits - w0).toBeGreaterThanOrEqual(engine.stats.drains);
  } finally {
    await engine.close();
  }
});
