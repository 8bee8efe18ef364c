/**
 * ModelHistograms' deferred exemplars (observeQueued with the default clock: each bucket's
 * exemplar is the batch's latest observation with a known job; model-histograms.ts header):
 * cases the whole-file Stryker run (2026-12-03 18:27-18:37) showed untested.
 */
import { StateModel } from '../../src/engine/model/state-model';
import { BUCKETS } from '../../src/engine/model/model-histograms';
import { OBS_PARTITION_GPU, OBS_PARTITION_SYNTHESIS, ObservationQueue } from '../../src/engine/model/observation-queue';

/** Bucket index by hand: the first bound >= v. */
const bucket = (bounds: readonly number[], v: number) => {
  const i = bounds.findIndex((b) => v <= b);
  return i < 0 ? bounds.length : i;
};

test('a synthesis exemplar names its partition (as a GPU one does)', () => {
  const h = new StateModel().histograms;
  h.enableExemplars((j) => `job-${j}`);
  const q = new ObservationQueue();
  q.push(OBS_PARTITION_SYNTHESIS, 0, 2e9, 7, 5);
  q.push(OBS_PARTITION_GPU, 0, 0.3e9, 8, 6);
  h.observeQueued(q);
  const s = h.partitionSynthesisSeconds;
  const es = bucket(BUCKETS.partitionSynthesis, 2);
  expect([s.exId[es], s.exPartition[es], s.exValue[es]]).toEqual(['job-7', 5, 2]);
  const g = h.partitionGpuSeconds;
  const eg = bucket(BUCKETS.partitionGpu, 0.3);
  expect([g.exId[eg], g.exPartition[eg]]).toEqual(['job-8', 6]);
});

test('past 2^32 - 1 batches a bucket observed twice in one batch still keeps the later observation', () => {
  const h = new StateModel().histograms;
  h.enableExemplars((j) => `job-${j}`);
  const q = new ObservationQueue();
  const g = h.partitionGpuSeconds;
  const e = bucket(BUCKETS.partitionGpu, 0.3);
  (h as unknown as { exMark: number }).exMark = 0xfffffffe; // as after ~4e9 batches
  for (const [a, b] of [
    [1, 2],
    [3, 4],
    [5, 6],
  ]) {
    q.n = 0;
    q.push(OBS_PARTITION_GPU, 0, 0.3e9, a, 0);
    q.push(OBS_PARTITION_GPU, 0, 0.3e9, b, 1);
    h.observeQueued(q);
    expect([g.exId[e], g.exPartition[e]]).toEqual([`job-${b}`, 1]);
  }
});
