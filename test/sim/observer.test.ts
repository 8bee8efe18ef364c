/**
 * The simulate observer on a scripted event sequence (the native layout, encoded with the
 * project's encoder), where the timing is ours to choose: split proving's hand-off of the
 * next partition while the previous one finalizes, which is exactly when cuzk's GetStatus
 * clears the wrong job. The engine is only asked for request ids and, after a gap, a
 * snapshot.
 */
import { EV_GPU_LOCK, EV_JOB_DONE, EV_JOB_QUEUED, EV_PARTITION, EventRecord, encodeEvents } from '../../src/engine/event-layout';
import type { NativeEngine } from '../../src/engine/native-engine';
import { GrpcWorkerView } from '../../src/sim/worker-view';
import { SimObserver } from '../../src/sim/observer';
import { TimelineWriter } from '../../src/sim/timeline-writer';

const START = 5_000_000_000;
const ms = (x: number) => START + x * 1e6;
const SYNTHESIZING = 1;
const SYNTH_DONE = 2;
const GPU = 3;
const DONE = 4;
const FINALIZING = 6;
const SNAP = 1;
const WPOST = 2;

function setup(ownerOnly: boolean, snapshot: Record<string, unknown> = {}) {
  let text = '';
  const engine = {
    requestId: (h: number) => (h === 1 ? 'ps-snap-aaaaaaaa-long-request-id' : `wpost-${h}`),
    status: () => snapshot,
  } as unknown as NativeEngine;
  const view = new GrpcWorkerView(2, ownerOnly);
  const timeline = new TimelineWriter({ describe: 'memory', write: (t) => (text += t), close: () => {} }, START, 2);
  const obs = new SimObserver(engine, view, timeline);
  let seq = 0;
  const feed = (recs: Array<Omit<EventRecord, 'seq'> & { seq?: number }>) => {
    const withSeq = recs.map((r) => ({ ...r, seq: r.seq ?? ++seq }));
    seq = withSeq[withSeq.length - 1].seq;
    obs.onEvents(encodeEvents(withSeq), withSeq.length);
  };
  return { obs, view, feed, text: () => text };
}

/** Partition 0 goes to worker 0, finalizes, and worker 0 takes partition 1 before 0 ends. */
const splitProving: Array<Omit<EventRecord, 'seq'>> = [
  { type: EV_JOB_QUEUED, tNs: ms(1), job: 1, kind: SNAP, partition: 16 },
  { type: EV_PARTITION, tNs: ms(2.5), job: 1, kind: SNAP, partition: 0, aux: SYNTHESIZING },
  { type: EV_PARTITION, tNs: ms(9.9), job: 1, kind: SNAP, partition: 0, aux: SYNTH_DONE, value: 7_400_000 },
  { type: EV_PARTITION, tNs: ms(10), job: 1, kind: SNAP, partition: 0, aux: GPU, gpu: 0, worker: 0 },
  { type: EV_GPU_LOCK, tNs: ms(10.2), gpu: 0, worker: 0, aux: 1 },
  { type: EV_GPU_LOCK, tNs: ms(15), gpu: 0, worker: 0, aux: 0, value: 4_800_000 },
  { type: EV_PARTITION, tNs: ms(15), job: 1, kind: SNAP, partition: 0, aux: FINALIZING, gpu: 0, worker: 0, value: 5_000_000 },
  { type: EV_PARTITION, tNs: ms(15.5), job: 1, kind: SNAP, partition: 1, aux: GPU, gpu: 0, worker: 0 },
  { type: EV_GPU_LOCK, tNs: ms(15.6), gpu: 0, worker: 0, aux: 1 },
  { type: EV_PARTITION, tNs: ms(17.9), job: 1, kind: SNAP, partition: 0, aux: DONE, gpu: 0, worker: 0, value: 7_999_999 },
];

describe('GetStatus worker view', () => {
  test("cuzk's finalizer race (default): partition 0's end clears worker 0 although it runs partition 1", () => {
    const { view, feed, obs } = setup(false);
    feed(splitProving.slice(0, 9));
    expect(view.jobId[0]).toBe('ps-snap-aaaaaaaa-long-request-id');
    expect(view.part[0]).toBe(1);
    feed(splitProving.slice(9));
    expect(view.jobId[0]).toBeNull();
    expect(view.running()).toBe(0);
    expect(obs.gpuStagePartitions).toBe(1); // partition 1 is still on the GPU
  });

  test('--simulate.grpc-clears-owner-only: worker 0 keeps partition 1 until its own end', () => {
    const { view, feed } = setup(true);
    feed(splitProving);
    expect(view.jobId[0]).toBe('ps-snap-aaaaaaaa-long-request-id');
    expect(view.part[0]).toBe(1);
    expect(view.kind[0]).toBe(SNAP);
    feed([{ type: EV_PARTITION, tNs: ms(20), job: 1, kind: SNAP, partition: 1, aux: DONE, gpu: 0, worker: 0, value: 4_500_000 }]);
    expect(view.jobId[0]).toBeNull();
  });
});

describe('TIMELINE lines', () => {
  test('partitioned: offsets and durations in whole ms (rounded down), GPU_START names the partition the worker was handed', () => {
    const { feed, text } = setup(false);
    feed(splitProving);
    const id = 'ps-snap-aaaaaaaa-long-request-id';
    expect(text()).toBe(
      [
        `TIMELINE,2,SYNTH_START,${id},partition=0`,
        `TIMELINE,9,SYNTH_END,${id},partition=0,synth_ms=7`,
        `TIMELINE,9,GPU_QUEUE,${id},partition=0`,
        `TIMELINE,10,GPU_PICKUP,${id},worker=0,partition=0`,
        `TIMELINE,10,GPU_START,${id},worker=0,partition=0`,
        `TIMELINE,15,GPU_PICKUP,${id},worker=0,partition=1`,
        `TIMELINE,15,GPU_START,${id},worker=0,partition=1`,
        `TIMELINE,17,GPU_END,${id},worker=0,partition=0,gpu_ms=7`,
        '',
      ].join('\n'),
    );
  });

  test('monolithic (PoSt): kind= at synthesis start, no partition in any detail; JOB_DONE feeds the duration window', () => {
    const { feed, text, obs } = setup(false);
    feed([
      { type: EV_JOB_QUEUED, tNs: ms(0), job: 7, kind: WPOST, partition: 1 },
      { type: EV_PARTITION, tNs: ms(1), job: 7, kind: WPOST, partition: 0, aux: SYNTHESIZING },
      { type: EV_PARTITION, tNs: ms(21), job: 7, kind: WPOST, partition: 0, aux: SYNTH_DONE, value: 20_000_000 },
      { type: EV_PARTITION, tNs: ms(21), job: 7, kind: WPOST, partition: 0, aux: GPU, gpu: 0, worker: 1 },
      { type: EV_GPU_LOCK, tNs: ms(22), gpu: 0, worker: 1, aux: 1 },
      { type: EV_PARTITION, tNs: ms(3021), job: 7, kind: WPOST, partition: 0, aux: DONE, gpu: 0, worker: 1, value: 3_000_000_000 },
      { type: EV_JOB_DONE, tNs: ms(3021), job: 7, kind: WPOST, aux: 0, value: 3_021_000_000 },
    ]);
    expect(text().split('\n').filter(Boolean)).toEqual([
      'TIMELINE,1,SYNTH_START,wpost-7,kind=window-post',
      'TIMELINE,21,SYNTH_END,wpost-7,synth_ms=20',
      'TIMELINE,21,GPU_QUEUE,wpost-7,monolithic',
      'TIMELINE,21,GPU_PICKUP,wpost-7,worker=1',
      'TIMELINE,22,GPU_START,wpost-7,worker=1',
      'TIMELINE,3021,GPU_END,wpost-7,worker=1,gpu_ms=3000',
    ]);
    expect(obs.jobsInFlight).toBe(0);
    expect(obs.recent.perKind()[WPOST]).toEqual([1, 3.021]);
  });

  test('a sequence gap re-syncs workers from the snapshot and skips what it already reflects', () => {
    const snapshot = {
      last_seq: 12,
      pipelines: [{ job_id: 'wpost-7', job_handle: 7, outcome: 'running', partitions: [{ index: 0, state: 'gpu' }] }],
      gpu_workers: [
        { worker_id: 0, current_job: null, current_partition: null },
        { worker_id: 1, current_job: 'wpost-7', current_partition: 0, current_job_handle: 7, current_kind: 'window-post' },
      ],
    };
    const { feed, view, obs, text } = setup(false, snapshot);
    feed([{ type: EV_JOB_QUEUED, tNs: ms(0), job: 7, kind: WPOST, partition: 1 }]);
    feed([{ seq: 10, type: EV_PARTITION, tNs: ms(21), job: 7, kind: WPOST, partition: 0, aux: GPU, gpu: 0, worker: 1 }]);
    expect(obs.gaps).toBe(1);
    expect(view.jobId[1]).toBe('wpost-7');
    expect(obs.gpuStagePartitions).toBe(1);
    // seq 11, 12 are in the snapshot already: not applied twice.
    feed([
      { seq: 11, type: EV_PARTITION, tNs: ms(22), job: 7, kind: WPOST, partition: 0, aux: GPU, gpu: 0, worker: 1 },
      { seq: 12, type: EV_GPU_LOCK, tNs: ms(22), gpu: 0, worker: 1, aux: 1 },
      { seq: 13, type: EV_PARTITION, tNs: ms(30), job: 7, kind: WPOST, partition: 0, aux: DONE, gpu: 0, worker: 1, value: 9_000_000 },
    ]);
    expect(obs.gpuStagePartitions).toBe(0);
    expect(view.jobId[1]).toBeNull();
    expect(text().split('\n').filter(Boolean).slice(-1)).toEqual(['TIMELINE,30,GPU_END,wpost-7,worker=1,gpu_ms=9']);
  });
});
