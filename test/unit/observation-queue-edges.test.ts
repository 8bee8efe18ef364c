/**
 * ObservationQueue (src/engine/model/observation-queue.ts) on its own, by its header: push
 * queues one observation and says when the queue is full (OBS_CAPACITY); deliver hands the
 * observations over in the order queued, durations divided from ns into seconds, to a
 * batch observer in one call or to a plain ModelObserver one call each (partitionFinalize
 * only where the observer has it), and empties the queue either way.
 */
import type { ModelObserver } from '../../src/engine/model/state-model';
import {
  OBS_CAPACITY,
  OBS_GPU_IDLE_GAP,
  OBS_PARTITION_FINALIZE,
  OBS_PARTITION_GPU,
  OBS_PARTITION_SYNTHESIS,
  OBS_PROOF_DONE,
  OBS_QUEUE_WAIT,
  ObservationQueue,
} from '../../src/engine/model/observation-queue';

function recorder(withFinalize = true) {
  const calls: unknown[][] = [];
  const o: ModelObserver = {
    partitionGpu: (...a) => void calls.push(['gpu', ...a]),
    partitionSynthesis: (...a) => void calls.push(['syn', ...a]),
    proofDone: (...a) => void calls.push(['proof', ...a]),
    queueWait: (...a) => void calls.push(['queue', ...a]),
    gpuIdleGap: (...a) => void calls.push(['idle', ...a]),
  };
  if (withFinalize) o.partitionFinalize = (...a) => void calls.push(['fin', ...a]);
  return { o, calls };
}

test('the six kinds of observation have distinct codes 0-5', () => {
  expect(new Set([OBS_PARTITION_GPU, OBS_PARTITION_FINALIZE, OBS_PARTITION_SYNTHESIS, OBS_PROOF_DONE, OBS_QUEUE_WAIT, OBS_GPU_IDLE_GAP])).toEqual(new Set([0, 1, 2, 3, 4, 5]));
});

test('each observation reaches its method, in order, with seconds and its job, partition or outcome', () => {
  const q = new ObservationQueue();
  q.push(OBS_PARTITION_GPU, 1, 2_500_000_000, 11, 3);
  q.push(OBS_PARTITION_FINALIZE, 2, 500_000_000, 12, 4);
  q.push(OBS_PARTITION_SYNTHESIS, 3, 40e9, 13, 9);
  q.push(OBS_PROOF_DONE, 0, 100e9, 14, 2);
  q.push(OBS_QUEUE_WAIT, 4, 1_000_000, 15, 0);
  q.push(OBS_GPU_IDLE_GAP, 6, 250_000, 0, 0);
  expect(q.n).toBe(6);
  const { o, calls } = recorder();
  q.deliver(o);
  expect(calls).toEqual([
    ['gpu', 1, 2.5, 11, 3],
    ['fin', 2, 0.5],
    ['syn', 3, 40, 13, 9],
    ['proof', 0, 2, 100, 14], // kind, outcome, seconds, job
    ['queue', 4, 0.001, 15],
    ['idle', 6, 0.00025],
  ]);
  expect(q.n).toBe(0);
  // delivered once: a second deliver hands over nothing
  q.deliver(o);
  expect(calls.length).toBe(6);
});

test('an observer without partitionFinalize skips finalize observations only', () => {
  const q = new ObservationQueue();
  q.push(OBS_PARTITION_FINALIZE, 2, 1e9, 0, 0);
  q.push(OBS_QUEUE_WAIT, 1, 2e9, 5, 0);
  const { o, calls } = recorder(false);
  expect(() => q.deliver(o)).not.toThrow();
  expect(calls).toEqual([['queue', 1, 2, 5]]);
  expect(q.n).toBe(0);
});

test('a batch observer gets the whole queue in one call, then the queue is empty', () => {
  const q = new ObservationQueue();
  q.push(OBS_PARTITION_GPU, 1, 1e9, 1, 0);
  q.push(OBS_QUEUE_WAIT, 2, 2e9, 2, 0);
  const seen: number[] = [];
  const plain = recorder();
  const batch = { ...plain.o, observeQueued: (x: ObservationQueue) => seen.push(x.n, x.op[0], x.op[1], x.slot[1], x.ns[1], x.job[1]) };
  q.deliver(batch);
  expect(seen).toEqual([2, OBS_PARTITION_GPU, OBS_QUEUE_WAIT, 2, 2e9, 2]);
  expect(plain.calls).toEqual([]);
  expect(q.n).toBe(0);
});

test('push says "full" exactly when the OBS_CAPACITY-th observation is queued', () => {
  const q = new ObservationQueue();
  expect(OBS_CAPACITY).toBe(1024);
  for (let i = 1; i < OBS_CAPACITY; i++) expect(q.push(OBS_QUEUE_WAIT, 0, i, i, 0)).toBe(false);
  expect(q.push(OBS_QUEUE_WAIT, 0, OBS_CAPACITY, OBS_CAPACITY, 0)).toBe(true);
  expect(q.n).toBe(OBS_CAPACITY);
  const { o, calls } = recorder();
  q.deliver(o);
  expect(calls.length).toBe(OBS_CAPACITY);
  expect(calls[0]).toEqual(['queue', 0, 1e-9, 1]);
  expect(calls[OBS_CAPACITY - 1]).toEqual(['queue', 0, OBS_CAPACITY / 1e9, OBS_CAPACITY]);
  // emptied: the next push starts again from the front
  expect(q.push(OBS_PARTITION_GPU, 3, 7, 8, 9)).toBe(false);
  expect(q.n).toBe(1);
  const again = recorder();
  q.deliver(again.o);
  expect(again.calls).toEqual([['gpu', 3, 7e-9, 8, 9]]);
});
