/**
 * The rendered `job_id="…"` cache of ExemplarStore (src/exporter/exemplars.ts): ids are
 * escaped as OpenMetrics label values whatever they consist of, and the cache is bounded by
 * its documented limits: 4096 entries, and 1 MiB (2^20 UTF-16 units) of keys plus rendered
 * labels, counted exactly; past either, it starts again empty.
 * (Issue 23: the survivors of the exporter body files' Stryker run, 17:06-17:37.)
 */
import type { HistogramTable } from '../../src/engine/model/histogram-table';
import type { ModelHistograms } from '../../src/engine/model/model-histograms';
import { EXEMPLAR_LABELSET_LIMIT, ExemplarStore } from '../../src/exporter/exemplars';

const LIMIT_ENTRIES = 4096;
const LIMIT_CHARS = 1 << 20;

/** A store whose proof histogram has one exemplar slot (porep-c2, bucket 0), id set per call. */
function harness() {
  const n = 3 * 5;
  const t = {
    width: 3,
    exTimeMs: new Float64Array(n),
    exId: new Array<string | undefined>(n),
    exPartition: new Int32Array(n).fill(-1),
    exValue: new Float64Array(n),
  };
  t.exTimeMs[0] = 1500;
  t.exValue[0] = 2;
  const tab = t as unknown as HistogramTable;
  const store = new ExemplarStore({
    partitionGpuSeconds: tab,
    partitionSynthesisSeconds: tab,
    proofSeconds: tab,
    queueWaitSeconds: tab,
  } as unknown as ModelHistograms);
  const row = store.row('cuzk_proof_duration_seconds', { proof_kind: 'porep-c2' })!;
  const render = (id: string) => {
    t.exId[0] = id;
    return store.text(row, 0);
  };
  const cache = store as unknown as { rendered: Map<string, string>; renderedChars: number };
  return { render, cache };
}

// Without a partition the job_id label's budget is 128 - "job_id".length code points, and
// the cache key is `${others}\0${id}` (others = 6): 2 units more than the id.
const BUDGET = EXEMPLAR_LABELSET_LIMIT - 'job_id'.length;
const keyLen = (id: string) => id.length + 2;
/** The rendered label of an ASCII id: `job_id="<id or its 122-unit shortening>"`. */
const labelLen = (id: string) => 'job_id="'.length + Math.min(id.length, BUDGET) + 1;

describe('exemplar job_id labels: escaping', () => {
  test.each([
    ['"', '\\"'],
    ['\\', '\\\\'],
    ['\n', '\\n'],
    ['\\"\n', '\\\\\\"\\n'],
    ['a"b', 'a\\"b'],
  ])('an id of %j is written %s', (id, escaped) => {
    const { render } = harness();
    expect(render(id)).toBe(` # {job_id="${escaped}"} 2 1.500`);
  });
});

describe('exemplar job_id labels: the render cache and its bounds', () => {
  test('each rendered id is kept once, counted by its key and label lengths', () => {
    const { render, cache } = harness();
    render('job-a');
    render('job-bb');
    expect(cache.rendered.size).toBe(2);
    expect(cache.renderedChars).toBe(keyLen('job-a') + labelLen('job-a') + keyLen('job-bb') + labelLen('job-bb'));
    // The same id again is a hit: nothing added.
    expect(render('job-a')).toBe(' # {job_id="job-a"} 2 1.500');
    expect(cache.rendered.size).toBe(2);
    expect(cache.renderedChars).toBe(keyLen('job-a') + labelLen('job-a') + keyLen('job-bb') + labelLen('job-bb'));
  });

  test(`at most ${LIMIT_ENTRIES} entries: the next distinct id starts it again`, () => {
    const { render, cache } = harness();
    for (let i = 0; i < LIMIT_ENTRIES; i++) render(`j${i}`);
    expect(cache.rendered.size).toBe(LIMIT_ENTRIES);
    expect(render('one-more')).toBe(' # {job_id="one-more"} 2 1.500');
    expect(cache.rendered.size).toBe(1);
    expect(cache.renderedChars).toBe(keyLen('one-more') + labelLen('one-more'));
  });

  test('at most 1 MiB of keys and labels: exactly at the limit it is kept, one unit past it starts again', () => {
    // Two long ids (shortened in the label) whose entries add up to exactly 2^20 units.
    const entry = (len: number) => keyLen('x'.repeat(len)) + labelLen('x'.repeat(len));
    // An id longer than the budget: its key (len + 2) and a label of fixed length.
    const half = LIMIT_CHARS / 2 - (keyLen('') + 'job_id="'.length + BUDGET + 1);
    const a = 'a'.repeat(half);
    const b = 'b'.repeat(half);
    expect(entry(half) * 2).toBe(LIMIT_CHARS);
    const h1 = harness();
    h1.render(a);
    h1.render(b);
    expect(h1.cache.rendered.size).toBe(2);
    expect(h1.cache.renderedChars).toBe(LIMIT_CHARS);
    // One unit more: past the limit, so the cache is emptied before the new entry.
    const h2 = harness();
    h2.render(a);
    const b1 = 'c'.repeat(half + 1);
    const out = h2.render(b1);
    expect(Array.from(out.slice(' # {job_id="'.length, out.indexOf('"}')))).toHaveLength(BUDGET);
    expect(h2.cache.rendered.size).toBe(1);
    expect(h2.cache.renderedChars).toBe(entry(half + 1));
    expect(h2.cache.renderedChars).toBeLessThanOrEqual(LIMIT_CHARS);
  });

  test('many long ids never hold more than 1 MiB', () => {
    const { render, cache } = harness();
    let max = 0;
    for (let i = 0; i < 40; i++) {
      render(`${i}-`.padEnd(100_000, 'z'));
      max = Math.max(max, cache.renderedChars);
      expect(cache.rendered.size).toBeGreaterThan(0);
    }
    expect(max).toBeLessThanOrEqual(LIMIT_CHARS);
    expect(max).toBeGreaterThan(LIMIT_CHARS - 100_200);
  });
});
