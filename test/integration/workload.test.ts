import { NativeEngine } from '../../src/engine/sources/native/native-engine';
import { parseMix, requestIdFor, Workload } from '../../src/engine/sources/native/workload';

describe('Workload', () => {
  test('stop() settles run() too, cancelling what outlives the grace', async () => {
    const engine = NativeEngine.open({ backend: 'sim', time_scale: 1, sim: { 'porep-c2': { synth_ms: 2000, gpu_ms: 2000, jitter: 0 } } });
    try {
      const w = new Workload(engine, { mix: { 'porep-c2': 1 }, concurrency: 2 });
      const running = w.run();
      const stopped = await w.stop(50);
      expect(stopped).toEqual({ finished: 0, cancelled: 2 });
      await expect(running).resolves.toBeUndefined();
    } finally {
      await engine.close();
    }
  });

  test('mix parsing and request ids', () => {
    expect(parseMix('snap-update=3, porep-c2=1')).toEqual({ 'snap-update': 3, 'porep-c2': 1 });
    expect(() => parseMix('snap=1')).toThrow(/unknown proof kind "snap"/);
    expect(() => parseMix('snap-update=0')).toThrow(/add up to zero/);
    expect(() => parseMix('snap-update')).toThrow(/kind=weight/);
    expect(requestIdFor('snap-update', 0)).toMatch(/^ps-snap-[0-9a-f-]{36}$/);
  });
});
