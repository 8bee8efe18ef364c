/**
 * The model's histograms cache job ids (per model job handle) for exemplars, and the exemplar
 * store caches rendered labels (per id). An attached daemon's job ids may be up to 1 MiB each,
 * so both caches are bounded in characters as well as entries: a daemon naming jobs anew with
 * 20,000-character ids (the soak's `long_job_id`) grew the heap steadily when only 4,096
 * entries were.
 */
import { StateModel } from '../../src/engine/model/state-model';
import { ExemplarStore } from '../../src/exporter/exemplars';

const H = 'cuzk_partition_gpu_duration_seconds';
const chars = (m: Map<unknown, string>, withKeys: boolean) => [...m].reduce((n, [k, v]) => n + v.length + (withKeys ? String(k).length : 0), 0);

test('300 jobs with 20,000-character ids: at most 1 MiB of ids cached, and of rendered labels', () => {
  const id = (h: number) => `long-${h}-${'j'.repeat(20_000)}`;
  const h = new StateModel().histograms;
  h.enableExemplars(id, () => 1_000_000);
  const store = new ExemplarStore(h);
  const ids = (h as unknown as { ids: Map<number, string> }).ids;
  const rendered = (store as unknown as { rendered: Map<string, string> }).rendered;
  let maxIds = 0;
  let maxRendered = 0;
  for (let j = 1; j <= 300; j++) {
    h.partitionGpu(1, 0.05 + (j % 3) * 0.5, j, 0);
    const row = store.row(H, { proof_kind: 'snap-update' })!;
    for (let b = 0; b < 12; b++) store.text(row, b); // an OpenMetrics scrape renders each bucket's exemplar
    maxIds = Math.max(maxIds, chars(ids, false));
    maxRendered = Math.max(maxRendered, chars(rendered, true));
  }
  expect(maxIds).toBeLessThanOrEqual(1 << 20);
  expect(maxRendered).toBeLessThanOrEqual(1 << 20);
  expect(maxIds).toBeGreaterThan(20_000 * 40); // the budget is used, not a cache of one
});

test('ordinary ids: each job is looked up once however many observations it has', () => {
  let lookups = 0;
  const h = new StateModel().histograms;
  h.enableExemplars((j) => (lookups++, `ps-snap-${j}-41d8-4b6a-9a0e-5c1d2b3e4f50`), () => 1_000_000);
  for (let j = 1; j <= 1000; j++) for (let p = 0; p < 5; p++) h.partitionGpu(1, 0.5, j, p);
  for (let j = 1; j <= 1000; j++) h.partitionGpu(1, 0.5, j, 9); // again, after others: cached
  expect(lookups).toBe(1000);
});
