/**
 * The exemplar store caches job ids (per model job handle) and rendered exemplar labels
 * (per id). An attached daemon's job ids may be up to 1 MiB each, so both caches are
 * bounded in characters as well as entries: a daemon naming jobs anew with 20,000-character
 * ids (the soak's `long_job_id`) grew the heap steadily when only 4,096 entries were.
 */
import { ExemplarStore } from '../../src/exporter/exemplars';

const H = 'cuzk_partition_gpu_duration_seconds';
const chars = (m: Map<unknown, string>, withKeys: boolean) => [...m].reduce((n, [k, v]) => n + v.length + (withKeys ? String(k).length : 0), 0);

test('300 jobs with 20,000-character ids: at most 1 MiB of ids cached, and of rendered labels', () => {
  const id = (h: number) => `long-${h}-${'j'.repeat(20_000)}`;
  const store = new ExemplarStore(id, () => 1_000_000);
  store.declare(H, [0.1, 1, 10]);
  const internals = store as unknown as { ids: Map<number, string>; rendered: Map<string, string> };
  let maxIds = 0;
  let maxRendered = 0;
  for (let h = 1; h <= 300; h++) {
    store.record(H, 1, 0.05 + (h % 3) * 0.5, h, 0);
    const row = store.row(H, { proof_kind: 'snap-update' })!;
    for (let b = 0; b < 4; b++) store.text(row, b); // an OpenMetrics scrape renders each bucket's exemplar
    maxIds = Math.max(maxIds, chars(internals.ids, false));
    maxRendered = Math.max(maxRendered, chars(internals.rendered, true));
  }
  expect(maxIds).toBeLessThanOrEqual(1 << 20);
  expect(maxRendered).toBeLessThanOrEqual(1 << 20);
  expect(maxIds).toBeGreaterThan(20_000 * 40); // the budget is used, not a cache of one
});

test('ordinary ids: each job is looked up once however many observations it has', () => {
  let lookups = 0;
  const store = new ExemplarStore((h) => (lookups++, `ps-snap-${h}-41d8-4b6a-9a0e-5c1d2b3e4f50`), () => 1_000_000);
  store.declare(H, [0.1, 1, 10]);
  for (let h = 1; h <= 1000; h++) for (let p = 0; p < 5; p++) store.record(H, 1, 0.5, h, p);
  expect(lookups).toBe(1000);
});
