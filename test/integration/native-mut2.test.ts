/**
 * NativeEngine (src/engine/sources/native/native-engine.ts) at edges left open by the
 * mutation run of 2026-12-03 (triage tri-natA, test/mutation/files/engine-native.md):
 *  - an awaited proof, once settled (resolved, or rejected because cuzk_await failed), no
 *    longer counts as something waiting on the push path: the ingest goes back to the
 *    background linger (module doc: the linger is short only while something waits);
 *  - events off: close() rejects a pending await also when its cuzk_await call comes back
 *    OK after close() began (the header of close(): pending awaits reject). Depends on the
 *    sim proof ending inside one 250 ms blocking call; if it does not, both paths reject.
 * Every engine is closed in `finally` (withEngine), every replaced function restored there.
 */
import { STATUS, loadLibrary } from '../../src/engine/sources/native/abi';
import { DEFAULT_BACKGROUND_LINGER_MS, DEFAULT_INGEST_LINGER_MS, EngineConfig, NativeEngine } from '../../src/engine/sources/native/native-engine';
import { Any, patch, until, withEngine } from './native-harness';

const FOREVER = { synth_ms: 1e7, gpu_ms: 1e7, finalize_ms: 1e7, jitter: 0 };
const SLOW_SIM: EngineConfig = { backend: 'sim', sim: { 'porep-c2': FOREVER, 'snap-update': FOREVER, 'window-post': FOREVER, 'winning-post': FOREVER } };

/** Records the delay of every linger tick the engine arms (setTimeout passes through). */
async function withTicks(config: EngineConfig, fn: (e: NativeEngine, ticks: number[]) => Promise<void>): Promise<void> {
  const ticks: number[] = [];
  let engine: NativeEngine | null = null;
  const realSetTimeout = global.setTimeout;
  const spy = jest.spyOn(global, 'setTimeout').mockImplementation(((cb: Any, ms?: number, ...rest: unknown[]) => {
    const e = engine;
    if (e && cb === (e as unknown as { lingerTick: unknown }).lingerTick) ticks.push(ms as number);
    return realSetTimeout(cb, ms, ...rest);
  }) as typeof setTimeout);
  try {
    await withEngine(config, async (e) => {
      engine = e;
      await fn(e, ticks);
    });
  } finally {
    spy.mockRestore();
  }
}

describe('a settled await no longer holds the short linger', () => {
  /** After the await settled: new events arm the next tick at the background linger. */
  async function nextTickAfter(e: NativeEngine, ticks: number[]): Promise<number> {
    const from = ticks.length;
    // Few events (far below an eighth of the 65536 ring): no rate shortening.
    e.submit('window-post');
    await until(() => ticks.length > from, 'a tick armed after the new events');
    return ticks[from];
  }

  test('a proof awaited to its result', async () => {
    await withTicks(SLOW_SIM, async (e, ticks) => {
      const job = e.submit('winning-post');
      const result = e.awaitProof(job);
      // While the await is pending the linger is the short one.
      await until(() => ticks.includes(DEFAULT_INGEST_LINGER_MS), 'a short tick while awaiting');
      e.cancel(job);
      await expect(result).resolves.toMatchObject({ job, outcome: 'cancelled' });
      expect(await nextTickAfter(e, ticks)).toBe(DEFAULT_BACKGROUND_LINGER_MS);
    });
  });

  test('a proof whose await failed (cuzk_await answering an error once it ended)', async () => {
    const real = loadLibrary().await as unknown as Any;
    let failJob = -1;
    const restore = patch('await', Object.assign((h: unknown, job: number, ...rest: unknown[]) => (job === failJob ? STATUS.EINVAL : real(h, job, ...rest)), { async: (real as unknown as { async: Any }).async }));
    try {
      await withTicks(SLOW_SIM, async (e, ticks) => {
        const job = e.submit('winning-post');
        const result = e.awaitProof(job);
        await until(() => ticks.includes(DEFAULT_INGEST_LINGER_MS), 'a short tick while awaiting');
        failJob = job;
        e.cancel(job);
        await expect(result).rejects.toThrow(/cuzk_await/);
        expect(await nextTickAfter(e, ticks)).toBe(DEFAULT_BACKGROUND_LINGER_MS);
      });
    } finally {
      restore();
    }
  });
});

test('events off: an await whose proof ends while close() waits for the call still rejects (close rejects pending awaits)', async () => {
  // The proof ends well inside one blocking cuzk_await (250 ms), so the call comes back OK
  // after close() began; closing decides, not the result.
  const quick = { synth_ms: 20, gpu_ms: 20, finalize_ms: 20, jitter: 0 };
  const e = NativeEngine.open({ backend: 'sim', events: false, sim: { 'winning-post': quick } });
  let closed: Promise<void> | null = null;
  try {
    const job = e.submit('winning-post');
    const result = e.awaitProof(job);
    closed = e.close();
    await expect(result).rejects.toThrow('engine closed before the proof finished');
  } finally {
    await (closed ?? e.close());
  }
});
