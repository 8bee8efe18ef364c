/**
 * Workload (src/engine/sources/native/workload.ts) where workload-edges leaves it open, with
 * a stand-in engine (only submit and awaitProof are used), so each case is exact and fast:
 *  - parseMix: a weight of more than one digit, and more than one decimal, is a weight;
 *  - a kind whose weight is undefined (Mix is a Partial record) is skipped like weight 0;
 *  - run() resolves when `count` proofs finished, or never with count 0 until stop():
 *    a refused submit with nothing in flight does not end it.
 */
import type { NativeEngine, ProofResult } from '../../src/engine/sources/native/native-engine';
import { Workload, parseMix } from '../../src/engine/sources/native/workload';
import type { ProofKind } from '../../src/engine/model/kinds';

/** An engine stand-in: submit answers job numbers (or throws), awaitProof settles at once. */
function fakeEngine(opts: { refuse?: boolean } = {}) {
  const kinds: ProofKind[] = [];
  let next = 1;
  const engine = {
    submit: (kind: ProofKind) => {
      if (opts.refuse) throw new Error('queue full');
      kinds.push(kind);
      return next++;
    },
    awaitProof: (job: number) => Promise.resolve({ job, outcome: 'completed' } as unknown as ProofResult),
  };
  return { engine: engine as unknown as NativeEngine, kinds };
}

/** Lets every pending callback and microtask run (no time passes on any clock that matters). */
const flush = () => new Promise<void>((r) => setImmediate(r));

describe('parseMix weights', () => {
  test('several integer digits and several decimals are one weight', () => {
    expect(parseMix('snap-update=10,porep-c2=1.25')).toEqual({ 'snap-update': 10, 'porep-c2': 1.25 });
  });
});

describe('the mix', () => {
  test('a kind with weight undefined is never drawn, the others are', async () => {
    const { engine, kinds } = fakeEngine();
    const w = new Workload(engine, { mix: { 'porep-c2': undefined, 'snap-update': 1 }, count: 20 });
    await w.run();
    expect(kinds).toHaveLength(20);
    expect(new Set(kinds)).toEqual(new Set(['snap-update']));
  });
});

describe('run() with a refused submit and nothing in flight', () => {
  test.each([
    ['count 0 (until stopped)', 0],
    ['count 3, none submitted yet', 3],
  ])('%s: run() keeps waiting (reported, retried when a proof finishes) until stop()', async (_what, count) => {
    const { engine } = fakeEngine({ refuse: true });
    const errors: Error[] = [];
    const w = new Workload(engine, { count, onError: (e) => errors.push(e) });
    let settled = false;
    const run = w.run().then(() => (settled = true));
    await flush();
    expect(errors.map((e) => e.message)).toEqual(['queue full']);
    expect(settled).toBe(false);
    expect(await w.stop(0)).toEqual({ finished: 0, cancelled: 0 });
    await run;
    expect(settled).toBe(true);
  });
});
