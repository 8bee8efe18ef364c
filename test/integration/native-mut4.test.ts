/**
 * Issue 23 (native-engine.ts `lingerTick`): the next background linger is computed from the
 * events the drain just took, dropped ones included — the drops of *that* drain only. Drops of
 * an earlier gap must not shorten every later tick (the ring's headroom rule in
 * native-engine.ts nextLinger: an eighth of the ring at the rate just seen). The linger ticks
 * are fired by the test (setTimeout intercepted for lingerTick only) and performance.now() is
 * a test clock, so no wall-clock amount is asserted.
 */
import { DEFAULT_BACKGROUND_LINGER_MS, EngineConfig, NativeEngine } from '../../src/engine/sources/native/native-engine';
import { Any, until, withEngine } from './native-harness';

const FOREVER = { synth_ms: 1e7, gpu_ms: 1e7, finalize_ms: 1e7, jitter: 0 };
const SLOW_SIM: EngineConfig = { backend: 'sim', sim: { 'porep-c2': FOREVER, 'snap-update': FOREVER, 'window-post': FOREVER, 'winning-post': FOREVER } };
const RING = 16;

interface Tick {
  ms: number;
  seen: number;
  fire: () => void;
}

test('drops of an earlier gap do not shorten a later tick: each tick counts its own drain', async () => {
  const clock = { ms: 1_000 };
  const ticks: Tick[] = [];
  let engine: NativeEngine | null = null;
  const realSetTimeout = global.setTimeout;
  const nowSpy = jest.spyOn(performance, 'now').mockImplementation(() => clock.ms);
  const spy = jest.spyOn(global, 'setTimeout').mockImplementation(((cb: Any, ms?: number, ...rest: unknown[]) => {
    const e = engine;
    if (e && cb === (e as unknown as { lingerTick: unknown }).lingerTick) {
      // Held until the test fires it; a real (never due) timer stands for it, so clearTimeout works.
      const handle = realSetTimeout(() => {}, 2 ** 31 - 1);
      handle.unref();
      ticks.push({ ms: ms as number, seen: e.model.eventsTotal + e.stats.dropped, fire: () => (cb as () => void)() });
      return handle;
    }
    return realSetTimeout(cb, ms, ...rest);
  }) as typeof setTimeout);
  try {
    await withEngine({ ...SLOW_SIM, event_ring_capacity: RING }, async (e) => {
      engine = e;
      e.refresh();
      // A gap: more events than the ring holds arrive over 250 ms of the test clock.
      clock.ms += DEFAULT_BACKGROUND_LINGER_MS;
      for (let i = 0; i < 12; i++) e.submit('window-post');
      await until(() => ticks.length >= 1, 'the wait woke and armed a tick');
      ticks[0].fire();
      expect(ticks.length).toBe(2);
      const dropped = e.stats.dropped;
      expect(dropped).toBeGreaterThan(0);
      // Then a quiet 250 ms with one submit: a few events, no drop.
      clock.ms += DEFAULT_BACKGROUND_LINGER_MS;
      const seq = e.readCounters().lastSeq;
      e.submit('window-post');
      await until(() => e.readCounters().lastSeq > seq, 'the submit emitted its events');
      ticks[1].fire();
      expect(ticks.length).toBe(3);
      expect(e.stats.dropped).toBe(dropped);
      const n = ticks[2].seen - ticks[1].seen;
      expect(n).toBeGreaterThan(0);
      // An eighth of the ring (2 events) at n events per 250 ms, within [10, 250] ms.
      expect(ticks[2].ms).toBe(Math.max(10, Math.min(DEFAULT_BACKGROUND_LINGER_MS, ((RING / 8) * DEFAULT_BACKGROUND_LINGER_MS) / n)));
    }, { lingerMs: 10 });
  } finally {
    spy.mockRestore();
    nowSpy.mockRestore();
  }
});
