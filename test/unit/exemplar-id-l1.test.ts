/**
 * The histograms' direct-mapped job-id cache (ModelHistograms' L1, in front of the bounded
 * id Map; model-histograms.ts): handles that share a slot must never get each other's ids,
 * an unknown job must not borrow a cached one, and the L1 may only hold ids the bounded Map
 * holds (so the Map's character budget bounds both).
 */
import { StateModel } from '../../src/engine/model/state-model';
import { ExemplarStore } from '../../src/exporter/exemplars';

const H = 'cuzk_partition_gpu_duration_seconds';

/** The job id in each bucket's exemplar of the snap-update row, '' where none. */
function exemplarIds(store: ExemplarStore, buckets: number): string[] {
  const row = store.row(H, { proof_kind: 'snap-update' })!;
  return Array.from({ length: buckets }, (_, b) => /job_id="([^"]*)"/.exec(store.text(row, b))?.[1] ?? '');
}

test('handles that share an L1 slot (1, 65, 129: mod 64) keep their own ids; an unknown one in the slot records nothing', () => {
  const known = new Map([
    [1, 'job-a'],
    [65, 'job-b'],
    [129, 'job-c'],
  ]);
  const h = new StateModel().histograms;
  h.enableExemplars((j) => known.get(j), () => 1_000_000);
  const store = new ExemplarStore(h);
  // Buckets (le): 0.005, 0.01, 0.025, 0.05: one per job, the fourth for the unknown job 193.
  for (let round = 0; round < 3; round++) {
    h.partitionGpu(1, 0.003, 1, 0);
    h.partitionGpu(1, 0.007, 65, 0);
    h.partitionGpu(1, 0.02, 129, 0);
    h.partitionGpu(1, 0.04, 193, 0);
  }
  expect(exemplarIds(store, 4)).toEqual(['job-a', 'job-b', 'job-c', '']);
  // A job learned later gets its own id, not the slot's previous one.
  known.set(193, 'job-d');
  h.partitionGpu(1, 0.04, 193, 0);
  h.partitionGpu(1, 0.003, 1, 0);
  expect(exemplarIds(store, 4)).toEqual(['job-a', 'job-b', 'job-c', 'job-d']);
});

test('after the id cache is cleared for its character budget, the L1 holds only ids the cache holds', () => {
  const id = (j: number) => `long-${j}-${'j'.repeat(20_000)}`;
  const h = new StateModel().histograms;
  h.enableExemplars(id, () => 1_000_000);
  const inner = h as unknown as { ids: Map<number, string>; l1Id: string[] };
  let clears = 0;
  let before = 0;
  for (let j = 1; j <= 300; j++) {
    h.partitionGpu(1, 0.05, j, 0);
    h.partitionGpu(1, 0.05, j > 1 ? j - 1 : j, 1); // back to the previous job: served by the L1
    if (inner.ids.size < before) clears++;
    before = inner.ids.size;
    const cached = new Set(inner.ids.values());
    for (const s of inner.l1Id) if (s !== '') expect(cached.has(s)).toBe(true);
  }
  expect(clears).toBeGreaterThan(0); // the budget was reached: the case under test happened
});
