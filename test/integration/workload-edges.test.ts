/**
 * The proof workload of `run`/`simulate` (src/engine/sources/native/workload.ts) on the real
 * reference engine (sim backend, fast): the mix (kind=weight, weights 0 skip a kind, the
 * CLI's default --workload.mix), the concurrency kept in flight (at least one), --workload.count,
 * cuzk-shaped request ids, submit refusals reported and retried, and stop() (grace, then
 * cancel; failures while stopping are not errors). Every engine is closed in `finally`.
 */
import { NativeError, STATUS } from '../../src/engine/sources/native/abi';
import { EngineConfig, NativeEngine, ProofResult } from '../../src/engine/sources/native/native-engine';
import { DEFAULT_MIX, Workload, WorkloadOptions, parseMix, requestIdFor } from '../../src/engine/sources/native/workload';
import { OPTIONS } from '../../src/cli/options';
import type { ProofKind } from '../../src/engine/model/kinds';

const FAST_SIM: EngineConfig = { backend: 'sim', time_scale: 0.0005 };
const FOREVER = { synth_ms: 1e7, gpu_ms: 1e7, finalize_ms: 1e7, jitter: 0 };
const SLOW_SIM: EngineConfig = { backend: 'sim', sim: { 'porep-c2': FOREVER, 'snap-update': FOREVER, 'window-post': FOREVER, 'winning-post': FOREVER } };

async function withEngine<T>(config: EngineConfig, fn: (e: NativeEngine) => Promise<T>): Promise<T> {
  const engine = NativeEngine.open(config);
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

function within<T>(p: Promise<T>, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('did not settle')), ms)));
  return Promise.race([p, cap]).finally(() => clearTimeout(timer));
}

/** Runs a counted workload to its end, recording what it submitted and how many ran at once. */
async function runCounted(engine: NativeEngine, opts: WorkloadOptions) {
  const submitted: { job: number; kind: ProofKind }[] = [];
  const results: ProofResult[] = [];
  let maxRunning = 0;
  const w = new Workload(engine, {
    ...opts,
    onSubmit: (job, kind) => {
      submitted.push({ job, kind });
      maxRunning = Math.max(maxRunning, w.running);
      opts.onSubmit?.(job, kind);
    },
    onResult: (r) => results.push(r),
  });
  await within(w.run());
  return { w, submitted, results, maxRunning };
}

describe('parseMix', () => {
  test('the CLI default --workload.mix is DEFAULT_MIX', () => {
    const def = OPTIONS.find((o) => o.name === 'workload.mix')!.default as string;
    expect(parseMix(def)).toEqual(DEFAULT_MIX);
    expect(DEFAULT_MIX).toEqual({ 'porep-c2': 1, 'snap-update': 3, 'window-post': 1, 'winning-post': 1 });
  });

  test('spaces and empty parts are ignored; decimal weights; a later weight of the same kind wins', () => {
    expect(parseMix(' winning-post=0.5 ,, window-post=2,')).toEqual({ 'winning-post': 0.5, 'window-post': 2 });
    expect(parseMix('porep-c2=1,porep-c2=4')).toEqual({ 'porep-c2': 4 });
    expect(parseMix('porep-c2=0,snap-update=1')).toEqual({ 'porep-c2': 0, 'snap-update': 1 });
  });

  test.each([
    ['', /weights add up to zero/],
    ['porep-c2=0,snap-update=0', /weights add up to zero/],
    ['snap-update=-1', /"snap-update=-1" is not kind=weight/],
    ['snap-update=1x', /"snap-update=1x" is not kind=weight/],
    ['x snap-update=1', /"x snap-update=1" is not kind=weight/],
    ['Snap-Update=1', /"Snap-Update=1" is not kind=weight/],
    ['snap-update=.5', /is not kind=weight/],
    ['xsnap-update=1', /unknown proof kind "xsnap-update" \(expected one of porep-c2, snap-update, window-post, winning-post\)/],
  ])('%j is refused', (text, re) => {
    expect(() => parseMix(text)).toThrow(re);
  });
});

describe('requestIdFor: cuzk-shaped ids', () => {
  test.each([
    ['porep-c2', 7, /^porep-f01234-s000007-[0-9a-f]{8}$/],
    ['porep-c2', 1234567, /^porep-f01234-s1234567-[0-9a-f]{8}$/],
    ['window-post', 50, /^wpost-f01234-dl2-[0-9a-f]{8}$/],
    ['window-post', 47, /^wpost-f01234-dl47-[0-9a-f]{8}$/],
    ['winning-post', 12, /^winning-f01234-e12$/],
    ['snap-update', 3, /^ps-snap-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/],
  ] as const)('%s #%d', (kind, n, re) => {
    expect(requestIdFor(kind, n)).toMatch(re);
  });
  test('ids differ between calls where they carry a random part', () => {
    expect(requestIdFor('snap-update', 1)).not.toBe(requestIdFor('snap-update', 1));
    expect(requestIdFor('porep-c2', 1)).not.toBe(requestIdFor('porep-c2', 1));
  });
});

describe('Workload on the engine', () => {
  test('count: exactly that many proofs, each reported once, ids shaped by submit order', async () => {
    await withEngine(FAST_SIM, async (e) => {
      const { w, submitted, results } = await runCounted(e, { mix: { 'winning-post': 1 }, concurrency: 3, count: 7 });
      expect(submitted.length).toBe(7);
      expect(results.length).toBe(7);
      expect(w.results).toEqual(results);
      expect(w.running).toBe(0);
      expect(results.every((r) => r.outcome === 'completed' && r.kind === 'winning-post')).toBe(true);
      // The n-th submission's id ends in e<n>.
      expect(submitted.map((s) => e.requestId(s.job))).toEqual([0, 1, 2, 3, 4, 5, 6].map((n) => `winning-f01234-e${n}`));
      expect(new Set(results.map((r) => r.job))).toEqual(new Set(submitted.map((s) => s.job)));
    });
  });

  test('concurrency: kept in flight, never more; 0 means 1; 4 by default', async () => {
    await withEngine(FAST_SIM, async (e) => {
      for (const [conc, expected] of [
        [3, 3],
        [0, 1],
        [undefined, 4],
      ] as const) {
        const { maxRunning, results } = await runCounted(e, { mix: { 'window-post': 1 }, concurrency: conc, count: 8 });
        expect([conc, maxRunning, results.length]).toEqual([conc, expected, 8]);
      }
    });
  });

  test('the mix: weight 0 skips a kind; weights set the proportions; no mix is DEFAULT_MIX', async () => {
    await withEngine({ ...FAST_SIM, gpus: 2, synthesis_concurrency: 16 }, async (e) => {
      const a = await runCounted(e, { mix: { 'porep-c2': 0, 'winning-post': 1, 'snap-update': 0 }, concurrency: 4, count: 10 });
      expect(new Set(a.submitted.map((s) => s.kind))).toEqual(new Set(['winning-post']));
      // 1:3 over 240 draws: window-post expected 180 (sd ~6.7); bounds 8 sd wide.
      const b = await runCounted(e, { mix: { 'winning-post': 1, 'window-post': 3 }, concurrency: 16, count: 240 });
      const wpost = b.submitted.filter((s) => s.kind === 'window-post').length;
      expect(wpost).toBeGreaterThan(180 - 55);
      expect(wpost).toBeLessThan(180 + 55);
      expect(b.submitted.length - wpost).toBeGreaterThan(0);
      expect(new Set(b.submitted.map((s) => s.kind))).toEqual(new Set(['winning-post', 'window-post']));
    });
    // DEFAULT_MIX: every kind can come (P(a kind of weight 1 missing in 60) < 2e-4).
    await withEngine({ ...FAST_SIM, gpus: 2, synthesis_concurrency: 16, sim: { 'porep-c2': { synth_ms: 1, gpu_ms: 1, finalize_ms: 1 }, 'snap-update': { synth_ms: 1, gpu_ms: 1, finalize_ms: 1 } } }, async (e) => {
      const c = await runCounted(e, { concurrency: 16, count: 60 });
      expect(new Set(c.submitted.map((s) => s.kind))).toEqual(new Set(['porep-c2', 'snap-update', 'window-post', 'winning-post']));
    });
  });

  test('a refused submit is reported and retried when a proof finishes', async () => {
    await withEngine({ ...FAST_SIM, queue_limit: 1, synthesis_concurrency: 1 }, async (e) => {
      const errors: Error[] = [];
      const { results, submitted } = await runCounted(e, { mix: { 'winning-post': 1 }, concurrency: 4, count: 6, onSubmit: () => {} });
      expect([results.length, submitted.length]).toEqual([6, 6]);
      const w = new Workload(e, { mix: { 'winning-post': 1 }, concurrency: 4, count: 6, onError: (x) => errors.push(x) });
      await within(w.run());
      expect(w.results.length).toBe(6);
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.every((x) => x instanceof NativeError && x.status === STATUS.EFULL)).toBe(true);
    });
  });

  test('onError hears of proofs lost to a closing engine, and of the refused submits after', async () => {
    const e = NativeEngine.open(SLOW_SIM);
    const errors: string[] = [];
    try {
      const w = new Workload(e, { mix: { 'window-post': 1 }, concurrency: 2, onError: (x) => errors.push(x.message) });
      void w.run();
      expect(w.running).toBe(2);
      await e.close();
      await within(
        new Promise<void>((resolve) => {
          const lost = () => errors.filter((m) => m === 'engine closed before the proof finished').length;
          const check = () => (lost() >= 2 && errors.length >= 3 ? resolve() : setImmediate(check));
          check();
        }),
      );
      // Each lost proof is reported, then the workload tries to refill and is refused.
      expect(errors[0]).toBe('engine closed before the proof finished');
      expect(errors.filter((m) => m === 'engine closed before the proof finished').length).toBe(2);
      expect(errors.filter((m) => m === 'engine is closed').length).toBe(errors.length - 2);
      expect(w.running).toBe(0);
    } finally {
      await e.close();
    }
  });
});

describe('stop()', () => {
  test('nothing in flight: at once, and run() settles', async () => {
    await withEngine(FAST_SIM, async (e) => {
      const w = new Workload(e, { mix: { 'winning-post': 1 }, count: 2 });
      await within(w.run());
      expect(await w.stop(10_000)).toEqual({ finished: 0, cancelled: 0 });
      const idle = new Workload(e); // no options at all
      expect(await idle.stop(10_000)).toEqual({ finished: 0, cancelled: 0 });
    });
  });

  test('proofs that finish within the grace are counted finished; nothing new is submitted', async () => {
    await withEngine(FAST_SIM, async (e) => {
      let submits = 0;
      const w = new Workload(e, { mix: { 'winning-post': 1 }, concurrency: 3, onSubmit: () => submits++ });
      const running = w.run();
      expect(submits).toBe(3);
      const stopped = await within(w.stop(60_000));
      expect(stopped).toEqual({ finished: 3, cancelled: 0 });
      await within(running);
      expect(submits).toBe(3);
      expect(w.results.length).toBe(3);
      expect(w.results.every((r) => r.outcome === 'completed')).toBe(true);
    });
  });

  test('past the grace the rest is cancelled; the engine closing meanwhile is no error', async () => {
    const e = NativeEngine.open(SLOW_SIM);
    const errors: Error[] = [];
    try {
      const w = new Workload(e, { mix: { 'porep-c2': 1 }, concurrency: 2, onError: (x) => errors.push(x) });
      const running = w.run();
      const stopped = await within(w.stop(20));
      expect(stopped).toEqual({ finished: 0, cancelled: 2 });
      await within(running);
      expect(w.results.map((r) => r.outcome)).toEqual(['cancelled', 'cancelled']);
      expect(errors).toEqual([]);

      // A second workload stopping while the engine closes under it: its proofs reject, not reported.
      const w2 = new Workload(e, { mix: { 'porep-c2': 1 }, concurrency: 2, onError: (x) => errors.push(x) });
      void w2.run();
      const stopping = w2.stop(60_000);
      await e.close();
      expect(await within(stopping)).toEqual({ finished: 2, cancelled: 0 });
      expect(errors).toEqual([]);
    } finally {
      await e.close();
    }
  });
});
