/**
 * NativeEngine (src/engine/sources/native/native-engine.ts, from toResult on) where the other
 * native suites leave it open, on the real reference library (sim backend):
 *  - a request id is kept from submit until the job's JOB_EVICTED event is drained, also after
 *    its result was taken: an engine that already evicted it (finished_retention_ms passed,
 *    event not drained yet; a test double answers ENOTFOUND) does not lose it;
 *  - an onBatch hook is on the push path: the linger is the short one;
 *  - awaiting a proof brings a background tick forward only when it is due later than a
 *    linger from now; the tick it replaces is cleared;
 *  - a wait that reports events while the engine closes arms no tick;
 *  - lingerMs 0: the tick an await brings forward drains and hands back to the wait.
 * Ticks are recorded from setTimeout (the engine's lingerTick); where a due time matters,
 * performance.now() is a test clock, so no wall-clock amount is asserted.
 */
import { STATUS } from '../../src/engine/sources/native/abi';
import { DEFAULT_BACKGROUND_LINGER_MS, DEFAULT_INGEST_LINGER_MS, EngineConfig, IngestOptions, NativeEngine } from '../../src/engine/sources/native/native-engine';
import { Any, patch, until, withEngine } from './native-harness';

const FOREVER = { synth_ms: 1e7, gpu_ms: 1e7, finalize_ms: 1e7, jitter: 0 };
const SLOW_SIM: EngineConfig = { backend: 'sim', sim: { 'porep-c2': FOREVER, 'snap-update': FOREVER, 'window-post': FOREVER, 'winning-post': FOREVER } };
const FAST_SIM: EngineConfig = { backend: 'sim', time_scale: 0.001 };

type Tick = { ms: number; handle: unknown };

/**
 * Runs `fn` recording every linger tick the engine arms (delay and timer) and every timer
 * cleared; with `clock`, performance.now() answers clock.ms.
 */
async function withTicks(
  config: EngineConfig,
  ingest: IngestOptions,
  clock: { ms: number } | null,
  fn: (e: NativeEngine, ticks: Tick[], cleared: unknown[]) => Promise<void>,
): Promise<void> {
  const ticks: Tick[] = [];
  const cleared: unknown[] = [];
  let engine: NativeEngine | null = null;
  const realSetTimeout = global.setTimeout;
  const realClearTimeout = global.clearTimeout;
  const nowSpy = clock ? jest.spyOn(performance, 'now').mockImplementation(() => clock.ms) : null;
  const setSpy = jest.spyOn(global, 'setTimeout').mockImplementation(((cb: Any, ms?: number, ...rest: unknown[]) => {
    const handle = realSetTimeout(cb, ms, ...rest);
    const e = engine;
    if (e && cb === (e as unknown as { lingerTick: unknown }).lingerTick) ticks.push({ ms: ms as number, handle });
    return handle;
  }) as typeof setTimeout);
  const clearSpy = jest.spyOn(global, 'clearTimeout').mockImplementation(((h: Parameters<typeof clearTimeout>[0]) => {
    cleared.push(h);
    realClearTimeout(h);
  }) as typeof clearTimeout);
  try {
    await withEngine(config, async (e) => {
      engine = e;
      await fn(e, ticks, cleared);
    }, ingest);
  } finally {
    setSpy.mockRestore();
    clearSpy.mockRestore();
    nowSpy?.mockRestore();
  }
}

describe('request ids', () => {
  test('kept after the result until JOB_EVICTED is drained, also when the engine has already evicted the job', async () => {
    await withEngine(FAST_SIM, async (e) => {
      const job = e.submit('winning-post', { requestId: 'mine' });
      expect((await e.awaitProof(job)).jobId).toBe('mine');
      // The engine evicted it (retention passed), its JOB_EVICTED not drained yet.
      const restore = patch('jobId', () => STATUS.ENOTFOUND);
      try {
        expect(e.requestId(job)).toBe('mine');
        expect(e.jobId(job)).toBe('mine');
        // A job never seen here: only the engine could tell.
        expect(e.jobId(job + 1000)).toBeUndefined();
      } finally {
        restore();
      }
    });
  });
});

describe('linger ticks', () => {
  test('an onBatch hook is on the push path: the first tick after the wait is armed at the linger', async () => {
    await withTicks(SLOW_SIM, {}, null, async (e, ticks) => {
      e.onBatch = () => {};
      e.submit('winning-post');
      await until(() => ticks.length >= 1, 'a linger tick armed');
      expect(ticks[0].ms).toBe(DEFAULT_INGEST_LINGER_MS);
    });
  });

  test('an await when the background tick is due within a linger leaves it as it is', async () => {
    const clock = { ms: 1_000 };
    await withTicks(SLOW_SIM, {}, clock, async (e, ticks, cleared) => {
      const job = e.submit('winning-post');
      await until(() => ticks.length >= 1, 'a background tick armed');
      expect(ticks[0].ms).toBe(DEFAULT_BACKGROUND_LINGER_MS);
      // Due exactly one linger from now: no sooner with a re-arm.
      clock.ms += DEFAULT_BACKGROUND_LINGER_MS - DEFAULT_INGEST_LINGER_MS;
      const waiting = e.awaitProof(job);
      waiting.catch(() => {});
      expect(ticks.map((t) => t.ms)).toEqual([DEFAULT_BACKGROUND_LINGER_MS]);
      expect(cleared).not.toContain(ticks[0].handle);
      e.cancel(job);
      expect((await waiting).outcome).toBe('cancelled');
    });
  });

  test('an await when the background tick is due later: re-armed at the linger, the old tick cleared', async () => {
    const clock = { ms: 1_000 };
    await withTicks(SLOW_SIM, {}, clock, async (e, ticks, cleared) => {
      const job = e.submit('winning-post');
      await until(() => ticks.length >= 1, 'a background tick armed');
      clock.ms += DEFAULT_BACKGROUND_LINGER_MS - DEFAULT_INGEST_LINGER_MS - 1;
      const waiting = e.awaitProof(job);
      waiting.catch(() => {});
      expect(ticks.map((t) => t.ms)).toEqual([DEFAULT_BACKGROUND_LINGER_MS, DEFAULT_INGEST_LINGER_MS]);
      expect(cleared).toContain(ticks[0].handle);
      e.cancel(job);
      expect((await waiting).outcome).toBe('cancelled');
    });
  });

  test('a wait that reports events while the engine closes arms no tick', async () => {
    let ticksAtClose = -1;
    let all: Tick[] = [];
    await withTicks(SLOW_SIM, {}, null, async (e, ticks) => {
      all = ticks;
      expect(e.stats.waits).toBe(1); // armed at open, in flight
      // The submit's events wake the wait; its answer comes back after close() began.
      e.submit('winning-post');
      ticksAtClose = ticks.length;
      void e.close();
    });
    // withEngine awaited close(), so the wait's answer has been handled.
    expect(ticksAtClose).toBe(0);
    expect(all).toEqual([]);
  });

  test('lingerMs 0: the tick an await brings forward drains, then hands back to the wait (no tick at 0 after it)', async () => {
    await withTicks(SLOW_SIM, { lingerMs: 0, backgroundLingerMs: 60_000 }, null, async (e, ticks) => {
      const job = e.submit('winning-post');
      await until(() => ticks.length >= 1, 'a background tick armed');
      const waits = e.stats.waits;
      const waiting = e.awaitProof(job);
      waiting.catch(() => {});
      expect(ticks.map((t) => t.ms)).toEqual([60_000, 0]);
      // Events for that tick's drain to find.
      const other = e.submit('winning-post');
      await until(() => e.stats.waits > waits, 'the wait armed again');
      expect(ticks.map((t) => t.ms)).toEqual([60_000, 0]);
      e.cancel(job);
      e.cancel(other);
      expect((await waiting).outcome).toBe('cancelled');
    });
  });
});
