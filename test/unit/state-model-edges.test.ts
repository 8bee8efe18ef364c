/**
 * StateModel edges the scripted golden sequence does not reach (issue 23, the Stryker run of
 * src/engine/model/state-model.ts). Every expectation is worked out by hand from the rules in
 * the model's header comment and its doc comments:
 *  - adoptTotals: the totals read at c.nowNs include running intervals, the model keeps
 *    completed time plus a start timestamp, so the running part is taken off; counters never
 *    go down; arrays shorter than the model's leave the rest as they are;
 *  - a re-sync record (EVF_RESYNC) moves state only: no durations, no counts, no
 *    observations, and an open starvation interval is dropped;
 *  - an evicted job leaves the gauges, its ownership ends, and it is no longer outstanding;
 *  - observations of a batch reach the observer before applyEvents returns, in order, all of
 *    them, also past the queue's capacity (OBS_CAPACITY: handed over early);
 *  - kinds the model does not know fold into OTHER_KIND; slots out of range are ignored.
 */
import { ScriptedSource, ev, MS } from '../helpers/scripted-source';
import { EVF_RESYNC, EV_JOB_EVICTED, EventRecord, encodeEvents } from '../../src/engine/model/event-layout';
import { KIND_SLOTS, LIVE_GPU, LIVE_PARTITION_STATES, OTHER_KIND_INDEX, OUTCOME_CANCELLED, OUTCOME_COMPLETED, OUTCOME_FAILED } from '../../src/engine/model/kinds';
import { OBS_CAPACITY } from '../../src/engine/model/observation-queue';
import { CounterTotals, ModelObserver, StateModel } from '../../src/engine/model/state-model';

const SNAP = 1;
const WPOST = 2;
// partition states
const SYN = 1, SD = 2, GPU = 3, DONE = 4, FAILED = 5;

const live = (m: StateModel, kind: number, slot: number) => m.kLive[kind * LIVE_PARTITION_STATES + slot];
const topo = (workers: number, gpus: number, lockEvents = true) => ({
  gpus: Array.from({ length: gpus }, (_, o) => ({ ordinal: o, name: `g${o}` })),
  workers: Array.from({ length: workers }, (_, id) => ({ id, gpu: 0 })),
  lockEvents,
});
const resync = (r: Omit<EventRecord, 'seq'>): Omit<EventRecord, 'seq'> => ({ ...r, flags: (r.flags ?? 0) | EVF_RESYNC });

/** An observer that writes down every call, seconds rounded to the ns. */
class Recorder implements ModelObserver {
  calls: (string | number | undefined)[][] = [];
  private s = (x: number) => Math.round(x * 1e9);
  partitionGpu(kind: number, seconds: number, job?: number, partition?: number) {
    this.calls.push(['gpu', kind, this.s(seconds), job, partition]);
  }
  partitionFinalize(kind: number, seconds: number) {
    this.calls.push(['finalize', kind, this.s(seconds)]);
  }
  partitionSynthesis(kind: number, seconds: number, job?: number, partition?: number) {
    this.calls.push(['synthesis', kind, this.s(seconds), job, partition]);
  }
  proofDone(kind: number, outcome: number, seconds: number, job?: number) {
    this.calls.push(['proof', kind, outcome, this.s(seconds), job]);
  }
  queueWait(kind: number, seconds: number, job?: number) {
    this.calls.push(['queueWait', kind, this.s(seconds), job]);
  }
  gpuIdleGap(gpuSlot: number, seconds: number) {
    this.calls.push(['idleGap', gpuSlot, this.s(seconds)]);
  }
}

const totals = (over: Partial<CounterTotals>): CounterTotals => ({
  workerBusyNs: [],
  workerPartitions: [],
  gpuLockHeldNs: [],
  gpuStarvedNs: [],
  kindGpuNs: [],
  kindSynthNs: [],
  kindPartsCompleted: [],
  kindPartsFailed: [],
  kindProofsCompleted: [],
  kindProofsFailed: [],
  kindProofsCancelled: [],
  nowNs: 0,
  ...over,
});

describe('adoptTotals: authoritative totals after a sequence gap', () => {
  /**
   * Two workers, two GPUs with lock events. Worker 0 busy since 10 ms (running), worker 1
   * idle after a 5 ms stint. GPU 0 holds its lock since 20 ms; GPU 1 has never held it and is
   * starved since 2 ms (a job outstanding, nothing synthesized).
   */
  const box = () => {
    const s = new ScriptedSource(topo(2, 2));
    s.apply([
      ev.queued(2 * MS, 1, SNAP, 2),
      ev.busy(3 * MS, 0, 1, 1, SNAP, 0),
      ev.idle(8 * MS, 0, 1, 1, SNAP, 0, 5 * MS),
      ev.busy(10 * MS, 0, 0, 1, SNAP, 1),
      ev.lock(20 * MS, 0, 0, null),
    ]);
    return s.model;
  };

  test('the running part is taken off what the totals include; the totals then run on from the restored starts', () => {
    const m = box();
    expect([m.workerBusyNsAt(0, 100 * MS), m.workerBusyNsAt(1, 100 * MS)]).toEqual([90 * MS, 5 * MS]);
    expect(m.gpuStarvedNsAt(1, 100 * MS)).toBe(98 * MS);
    m.adoptTotals(
      totals({
        nowNs: 100 * MS,
        // worker 0: 100 ms in all, 90 of them the running stint; worker 1: 7 ms, 3 partitions
        workerBusyNs: [100 * MS, 7 * MS],
        workerPartitions: [4, 3],
        // GPU 0: 95 ms, 80 of them the running hold; GPU 1: never held
        gpuLockHeldNs: [95 * MS, 0],
        // GPU 0: 25 ms (the model saw 18: 2-20 ms, before its hold); GPU 1: 99 ms, 98 of them the open interval
        gpuStarvedNs: [25 * MS, 99 * MS],
      }),
    );
    expect([m.wBusyNs[0], m.wBusyNs[1]]).toEqual([10 * MS, 7 * MS]);
    expect([m.workerBusyNsAt(0, 110 * MS), m.workerBusyNsAt(1, 110 * MS)]).toEqual([110 * MS, 7 * MS]);
    expect([m.wPartitions[0], m.wPartitions[1]]).toEqual([4, 3]);
    expect([m.gLockHeldNs[0], m.gpuLockHeldNsAt(0, 110 * MS)]).toEqual([15 * MS, 105 * MS]);
    expect([m.gStarvedNs[0], m.gpuStarvedNsAt(0, 110 * MS)]).toEqual([25 * MS, 25 * MS]);
    expect([m.gStarvedNs[1], m.gpuStarvedNsAt(1, 110 * MS)]).toEqual([1 * MS, 109 * MS]);
  });

  test('counters never go down: totals below what the model holds are not adopted', () => {
    const m = box();
    m.adoptTotals(
      totals({
        nowNs: 100 * MS,
        workerBusyNs: [50 * MS, 4 * MS], // 50 - 90 running < 0 held; 4 < 5
        workerPartitions: [0, 0],
        gpuLockHeldNs: [70 * MS, 0], // 70 - 80 running < 0
        gpuStarvedNs: [0, 90 * MS], // 90 - 98 open < 0
      }),
    );
    expect([m.wBusyNs[0], m.wBusyNs[1], m.wPartitions[0], m.wPartitions[1]]).toEqual([0, 5 * MS, 0, 0]);
    expect([m.gLockHeldNs[0], m.gStarvedNs[0], m.gStarvedNs[1]]).toEqual([0, 18 * MS, 0]);
    expect(m.workerBusyNsAt(0, 100 * MS)).toBe(90 * MS);
  });

  test('per-kind counters: each adopted where higher, missing entries count as 0, finalize time only where the source has it', () => {
    const m = new StateModel();
    m.setTopology(topo(0, 0, false), 0);
    const k = (v: number) => Array.from({ length: KIND_SLOTS }, (_, i) => v + i);
    m.adoptTotals(
      totals({
        kindGpuNs: k(10),
        kindSynthNs: k(20),
        kindPartsCompleted: k(30),
        kindPartsFailed: k(40),
        kindProofsCompleted: k(50),
        kindProofsFailed: k(60),
        kindProofsCancelled: k(70),
      }),
    );
    const arrays = () => [m.kGpuNs, m.kSynthNs, m.kPartsCompleted, m.kPartsFailed, m.kProofsCompleted, m.kProofsFailed, m.kProofsCancelled, m.kFinalizeNs].map((a) => [...a]);
    expect(arrays()).toEqual([k(10), k(20), k(30), k(40), k(50), k(60), k(70), k(0).map(() => 0)]);
    // Shorter arrays (an older library knows fewer kinds): the rest reads as 0, nothing goes down.
    m.adoptTotals(totals({ kindGpuNs: [100], kindSynthNs: [1], kindFinalizeNs: [7, 8] }));
    const want = [k(10), k(20), k(30), k(40), k(50), k(60), k(70), k(0).map(() => 0)];
    want[0][0] = 100;
    want[7][0] = 7;
    want[7][1] = 8;
    expect(arrays()).toEqual(want);
  });

  test('totals for fewer workers or GPUs than the model has leave the others as they are', () => {
    const m = box();
    m.adoptTotals(totals({ nowNs: 100 * MS, workerBusyNs: [100 * MS], workerPartitions: [9], gpuLockHeldNs: [95 * MS], gpuStarvedNs: [25 * MS] }));
    expect([m.wBusyNs[0], m.wBusyNs[1], m.wPartitions[0], m.wPartitions[1]]).toEqual([10 * MS, 5 * MS, 9, 0]);
    expect([m.gLockHeldNs[0], m.gStarvedNs[0], m.gStarvedNs[1]]).toEqual([15 * MS, 25 * MS, 0]);
    // Partition counts and starved time missing for a slot the busy/held arrays cover: 0, not adopted.
    m.adoptTotals(totals({ nowNs: 100 * MS, workerBusyNs: [0, 0], workerPartitions: [], gpuLockHeldNs: [0, 0], gpuStarvedNs: [] }));
    expect([m.wPartitions[0], m.wPartitions[1], m.gStarvedNs[1]]).toEqual([9, 0, 0]);
  });
});

describe('re-sync records move state only', () => {
  test('a worker: busy again restarts the stint at the record; idle adds no time', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 2), ev.busy(10 * MS, 0, 0, 1, SNAP, 0)]);
    // A busy record while busy moves ownership only (the stint goes on) ...
    s.apply([ev.busy(20 * MS, 0, 0, 1, SNAP, 1)]);
    expect([m.wSinceNs[0], m.wPickNs[0], m.wPartition[0]]).toEqual([10 * MS, 20 * MS, 1]);
    // ... a re-sync one says "busy since here" (the snapshot's start).
    s.apply([resync(ev.busy(30 * MS, 0, 0, 1, SNAP, 0))]);
    expect([m.wSinceNs[0], m.wPickNs[0], m.wPartition[0], m.busyWorkers]).toEqual([30 * MS, 30 * MS, 0, 1]);
    s.apply([resync(ev.idle(40 * MS, 0, 0, 1, SNAP, 0, 25 * MS))]);
    expect([m.wBusy[0], m.busyWorkers, m.wBusyNs[0], m.wPartition[0], m.wJob[0], m.wKind[0]]).toEqual([0, 0, 0, -1, 0, -1]);
    // The same idle record not re-synced adds its stint.
    s.apply([ev.busy(50 * MS, 0, 0, 1, SNAP, 1), ev.idle(60 * MS, 0, 0, 1, SNAP, 1, 10 * MS)]);
    expect(m.wBusyNs[0]).toBe(10 * MS);
    // Idle while idle: nothing goes below zero.
    s.apply([ev.idle(61 * MS, 0, 0, 1, SNAP, 1, 0)]);
    expect(m.busyWorkers).toBe(0);
  });

  test('a GPU lock: no held time, no idle gap, and the open starvation interval is dropped', () => {
    const s = new ScriptedSource(topo(1, 1));
    const m = s.model;
    const r = new Recorder();
    m.observer = r;
    s.apply([ev.queued(0, 1, SNAP, 1)]); // outstanding, nothing synthesized: starved from 0
    expect(m.gpuStarvedNsAt(0, 10 * MS)).toBe(10 * MS);
    s.apply([resync(ev.lock(10 * MS, 0, 0, 4 * MS))]);
    expect([m.gLockHeld[0], m.gStarvedNs[0], m.gpuStarvedNsAt(0, 20 * MS), m.gpuLockHeldNsAt(0, 20 * MS)]).toEqual([1, 0, 0, 10 * MS]);
    s.apply([resync(ev.unlock(20 * MS, 0, 0, 10 * MS))]);
    expect([m.gLockHeld[0], m.gLockHeldNs[0], m.gLastReleaseNs[0]]).toEqual([0, 0, 20 * MS]);
    // starved again from the release (work still outstanding)
    expect(m.gpuStarvedNsAt(0, 25 * MS)).toBe(5 * MS);
    // The same pair not re-synced: held time counts, the gap is observed (not the first hold).
    s.apply([ev.lock(30 * MS, 0, 0, 10 * MS), ev.unlock(33 * MS, 0, 0, 3 * MS)]);
    expect([m.gLockHeldNs[0], m.gStarvedNs[0]]).toEqual([3 * MS, 10 * MS]);
    expect(r.calls).toEqual([['idleGap', 0, 10 * MS]]);
  });

  test('a job: started and done re-synced observe nothing and count no proof, but the job still ends', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    const r = new Recorder();
    m.observer = r;
    s.apply([ev.queued(0, 1, SNAP, 2), resync(ev.started(MS, 1, SNAP, MS)), ev.part(2 * MS, 1, SNAP, 0, SYN)]);
    expect([m.unfinishedJobs, live(m, SNAP, 1)]).toEqual([1, 1]);
    s.apply([resync(ev.done(3 * MS, 1, SNAP, OUTCOME_COMPLETED, 3 * MS))]);
    expect([m.unfinishedJobs, m.kProofsCompleted[SNAP], [...m.kLive].every((x) => x === 0), m.jobs.get(1)!.finished]).toEqual([0, 0, true, true]);
    expect(r.calls).toEqual([]);
    // A second done for the same job changes nothing.
    s.apply([ev.done(4 * MS, 1, SNAP, OUTCOME_COMPLETED, 4 * MS)]);
    expect([m.unfinishedJobs, m.kProofsCompleted[SNAP], r.calls.length]).toEqual([0, 0, 0]);
  });

  test('a partition: synthesis and GPU stage durations of re-sync records are not counted', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 1), ev.part(MS, 1, SNAP, 0, SYN), resync(ev.part(2 * MS, 1, SNAP, 0, SD, 5 * MS))]);
    expect([m.kSynthNs[SNAP], m.synthDoneTotal]).toEqual([0, 1]);
    s.apply([resync(ev.handoff(3 * MS, 0, 0, 1, SNAP, 0)), resync(ev.end(4 * MS, 0, 0, 1, SNAP, 0, DONE, 7 * MS))]);
    expect([m.kGpuNs[SNAP], m.kPartsCompleted[SNAP], m.wPartitions[0], m.synthDoneTotal, m.ownedCount]).toEqual([0, 0, 0, 0, 0]);
  });
});

describe('eviction', () => {
  test('an evicted job leaves the gauges and its owners; an unfinished one is no longer outstanding', () => {
    const s = new ScriptedSource(topo(2, 1));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 3), ev.queued(0, 2, WPOST, 1)]);
    s.apply([ev.part(MS, 1, SNAP, 0, SYN), ev.part(MS, 1, SNAP, 1, SYN), ev.part(2 * MS, 1, SNAP, 1, SD, MS)]);
    s.apply([ev.part(2 * MS, 1, SNAP, 2, SYN), ev.part(3 * MS, 1, SNAP, 2, SD, MS), ev.busy(3 * MS, 0, 0, 1, SNAP, 2), ev.handoff(3 * MS, 0, 0, 1, SNAP, 2)]);
    s.apply([ev.busy(3 * MS, 0, 1, 2, WPOST, 0), ev.handoff(3 * MS, 0, 1, 2, WPOST, 0)]);
    expect([live(m, SNAP, 1), live(m, SNAP, 2), live(m, SNAP, LIVE_GPU), m.synthDoneTotal, m.unfinishedJobs, m.ownedCount]).toEqual([1, 1, 1, 1, 2, 2]);
    s.apply([{ type: EV_JOB_EVICTED, tNs: 4 * MS, job: 1, kind: SNAP }]);
    expect([live(m, SNAP, 1), live(m, SNAP, 2), live(m, SNAP, LIVE_GPU), m.synthDoneTotal, m.unfinishedJobs, m.ownedCount]).toEqual([0, 0, 0, 0, 1, 1]);
    expect([m.jobs.has(1), m.oPart[0], m.oPart[1]]).toEqual([false, -1, 0]);
    // Nothing synthesized waits now, job 2 is outstanding, the lock is free: starved from 4 ms.
    expect(m.gpuStarvedNsAt(0, 6 * MS)).toBe(4 * MS); // 0-2 ms (until partition 1 was synthesized) + 4-6 ms
    // A finished job evicted is not counted out twice (job 3 stays outstanding); an unknown one changes nothing.
    s.apply([ev.done(5 * MS, 2, WPOST, OUTCOME_FAILED, 5 * MS), ev.queued(5 * MS, 3, WPOST, 1)]);
    expect([m.unfinishedJobs, m.ownedCount]).toEqual([1, 0]);
    s.apply([{ type: EV_JOB_EVICTED, tNs: 6 * MS, job: 2, kind: WPOST }, { type: EV_JOB_EVICTED, tNs: 6 * MS, job: 9, kind: WPOST }]);
    expect([m.unfinishedJobs, [...m.jobs.keys()], m.kLive.reduce((a, b) => a + b, 0), live(m, WPOST, 0)]).toEqual([1, [3], 1, 1]);
    // A job queued again under the handle after eviction is a new job.
    s.apply([ev.queued(7 * MS, 1, SNAP, 2)]);
    expect([m.unfinishedJobs, live(m, SNAP, 0)]).toEqual([2, 2]);
  });
});

describe('observations reach the observer, all of them, before the batch returns', () => {
  test('each kind of observation with its kind, seconds, job handle and partition or outcome', () => {
    const s = new ScriptedSource(topo(1, 1));
    const m = s.model;
    const r = new Recorder();
    m.observer = r;
    s.apply([ev.queued(0, 5, SNAP, 2), ev.started(2 * MS, 5, SNAP, 2 * MS), ev.part(2 * MS, 5, SNAP, 1, SYN), ev.part(9 * MS, 5, SNAP, 1, SD, 7 * MS)]);
    expect(r.calls).toEqual([['queueWait', SNAP, 2 * MS, 5], ['synthesis', SNAP, 7 * MS, 5, 1]]);
    r.calls = [];
    s.apply([ev.lock(10 * MS, 0, 0, null), ev.busy(10 * MS, 0, 0, 5, SNAP, 1), ev.handoff(10 * MS, 0, 0, 5, SNAP, 1)]);
    s.apply([ev.finalizing(14 * MS, 0, 0, 5, SNAP, 1, 4 * MS), ev.unlock(14 * MS, 0, 0, 4 * MS), ev.end(17 * MS, 0, 0, 5, SNAP, 1, DONE, 7 * MS)]);
    s.apply([ev.lock(20 * MS, 0, 0, 6 * MS), ev.done(21 * MS, 5, SNAP, OUTCOME_CANCELLED, 21 * MS)]);
    expect(r.calls).toEqual([
      ['gpu', SNAP, 7 * MS, 5, 1],
      ['finalize', SNAP, 3 * MS], // 17 - 14: from the lock release to the end
      ['idleGap', 0, 6 * MS],
      ['proof', SNAP, OUTCOME_CANCELLED, 21 * MS, 5],
    ]);
    expect([m.kFinalizeNs[SNAP], m.kGpuNs[SNAP], m.kPartsCompleted[SNAP], m.kProofsCancelled[SNAP], m.wPartitions[0]]).toEqual([3 * MS, 7 * MS, 1, 1, 1]);
  });

  test('a partition that fails from the GPU counts its GPU stage; one abandoned is not a failure; one ending before the GPU has no GPU stage', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    const r = new Recorder();
    m.observer = r;
    s.apply([ev.queued(0, 1, SNAP, 3), ev.busy(MS, 0, 0, 1, SNAP, 0), ev.handoff(MS, 0, 0, 1, SNAP, 0), ev.end(3 * MS, 0, 0, 1, SNAP, 0, FAILED, 2 * MS)]);
    s.apply([ev.part(4 * MS, 1, SNAP, 1, SYN), ev.cancelledPart(5 * MS, 1, SNAP, 1), ev.part(6 * MS, 1, SNAP, 2, DONE, 9 * MS)]);
    expect([m.kGpuNs[SNAP], m.kPartsFailed[SNAP], m.kPartsCompleted[SNAP], m.wPartitions[0], m.kFinalizeNs[SNAP]]).toEqual([2 * MS, 1, 1, 1, 0]);
    expect(r.calls).toEqual([['gpu', SNAP, 2 * MS, 1, 0]]);
  });

  test('past the queue capacity in one batch: every observation, in order', () => {
    const n = OBS_CAPACITY + 7;
    const s = new ScriptedSource(topo(1, 1));
    const m = s.model;
    const r = new Recorder();
    m.observer = r;
    const recs: Omit<EventRecord, 'seq'>[] = [];
    for (let j = 1; j <= n; j++) recs.push(ev.queued(0, j, WPOST, 1), ev.started(0, j, WPOST, j));
    s.apply(recs);
    expect(r.calls.length).toBe(n);
    expect(r.calls.every((c, i) => c[0] === 'queueWait' && c[2] === i + 1 && c[3] === i + 1)).toBe(true);

    const batch = (make: (j: number) => Omit<EventRecord, 'seq'>[]) => {
      r.calls = [];
      const b: Omit<EventRecord, 'seq'>[] = [];
      for (let j = 1; j <= n; j++) b.push(...make(j));
      s.apply(b);
      return r.calls;
    };
    const synth = batch((j) => [ev.part(MS, j, WPOST, 0, SYN), ev.part(MS, j, WPOST, 0, SD, j)]);
    expect([synth.length, synth.every((c, i) => c[0] === 'synthesis' && c[2] === i + 1 && c[3] === i + 1)]).toEqual([n, true]);
    const gpu = batch((j) => [ev.handoff(2 * MS, 0, 0, j, WPOST, 0), ev.finalizing(2 * MS + j, 0, 0, j, WPOST, 0, j), ev.end(2 * MS + 2 * j, 0, 0, j, WPOST, 0, DONE, 2 * j)]);
    expect(gpu.length).toBe(2 * n);
    expect(gpu.every((c, i) => (i % 2 === 0 ? c[0] === 'gpu' && c[2] === i + 2 && c[3] === i / 2 + 1 : c[0] === 'finalize' && c[2] === (i + 1) / 2))).toBe(true);
    const gaps = batch((j) => [ev.lock(3 * MS + j, 0, 0, j), ev.unlock(3 * MS + j, 0, 0, 0)]);
    expect([gaps.length, gaps.every((c, i) => c[0] === 'idleGap' && c[2] === i + 1)]).toEqual([n, true]);
    const proofs = batch((j) => [ev.done(4 * MS, j, WPOST, OUTCOME_COMPLETED, j)]);
    expect([proofs.length, proofs.every((c, i) => c[0] === 'proof' && c[3] === i + 1 && c[4] === i + 1)]).toEqual([n, true]);
    expect(m.kProofsCompleted[WPOST]).toBe(n);
  });

  test('without an observer nothing is kept for a later one', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 1), ev.started(MS, 1, SNAP, MS), ev.part(MS, 1, SNAP, 0, SYN), ev.part(2 * MS, 1, SNAP, 0, SD, MS)]);
    const r = new Recorder();
    m.observer = r;
    s.apply([ev.depth(3 * MS, SNAP, 0)]);
    m.applyRecords([{ seq: 0, ...ev.depth(3 * MS, SNAP, 0) }], false);
    expect(r.calls).toEqual([]);
    expect(m.kSynthNs[SNAP]).toBe(MS);
  });

  test('re-sync records built in JS hand over their observations too (a finalize end read from a snapshot)', () => {
    const m = new StateModel();
    m.setTopology(topo(1, 1, false), 0);
    const r = new Recorder();
    m.observer = r;
    m.applyRecords([{ seq: 0, ...ev.queued(0, 1, SNAP, 1) }, { seq: 0, ...ev.handoff(MS, 0, 0, 1, SNAP, 0) }, { seq: 0, ...ev.finalizing(3 * MS, 0, 0, 1, SNAP, 0, 2 * MS) }, { seq: 0, ...ev.end(4 * MS, 0, 0, 1, SNAP, 0, DONE, 3 * MS) }], false);
    expect(r.calls).toEqual([['gpu', SNAP, 3 * MS, 1, 0], ['finalize', SNAP, MS]]);
    expect([m.eventsTotal, m.lastSeq]).toEqual([0, 0]);
    m.applyRecords([], true);
    expect([m.eventsTotal, m.lastSeq]).toEqual([0, 0]);
  });
});

describe('kinds and slots out of range', () => {
  test('unknown kinds fold into OTHER_KIND; records for slots the topology lacks are ignored', () => {
    const s = new ScriptedSource(topo(1, 1));
    const m = s.model;
    s.apply([ev.queued(0, 1, KIND_SLOTS, 2), ev.depth(0, KIND_SLOTS, 3), ev.depth(0, SNAP, 4), ev.synth(0, 2), ev.memory(0, 1 << 20)]);
    expect([m.jobs.get(1)!.kind, m.kQueueDepth[OTHER_KIND_INDEX], m.kQueueDepth[SNAP], live(m, OTHER_KIND_INDEX, 0), m.synthActive, m.memoryUsedBytes]).toEqual([OTHER_KIND_INDEX, 3, 4, 2, 2, 1 << 20]);
    s.apply([ev.busy(MS, 0, 0, 1, KIND_SLOTS, 0)]);
    expect(m.wKind[0]).toBe(OTHER_KIND_INDEX);
    s.apply([ev.busy(MS, 0, 0, 1, WPOST, 1)]);
    expect(m.wKind[0]).toBe(WPOST);
    // Worker 1 and GPU 1 do not exist; partition 2 of a 2-partition job neither.
    const before = [m.busyWorkers, [...m.gLockHeld], m.gpuStarvedNsAt(0, 2 * MS), m.jobs.get(1)!.ranBy.length];
    s.apply([ev.busy(2 * MS, 0, 1, 1, SNAP, 0), ev.lock(2 * MS, 1, 1, null), ev.busy(2 * MS, 0, 0, 1, SNAP, 2)]);
    expect([m.busyWorkers, [...m.gLockHeld], m.gpuStarvedNsAt(0, 2 * MS), m.jobs.get(1)!.ranBy.length]).toEqual(before);
    expect([...m.jobs.get(1)!.ranBy]).toEqual([0, 0]);
  });

  test('an end record without a worker credits the worker seen picking the partition up, or nobody', () => {
    const s = new ScriptedSource(topo(2, 1, false));
    const m = s.model;
    // (state records without a worker, as a snapshot gives them; partition 2 nobody was seen picking up)
    s.apply([ev.queued(0, 1, SNAP, 3), ev.busy(MS, 0, 0, 1, SNAP, 0), ev.part(MS, 1, SNAP, 0, GPU), ev.busy(MS, 0, 1, 1, SNAP, 1), ev.part(MS, 1, SNAP, 1, GPU), ev.part(MS, 1, SNAP, 2, GPU)]);
    s.apply([ev.part(3 * MS, 1, SNAP, 0, DONE, MS), ev.part(3 * MS, 1, SNAP, 1, DONE, MS), ev.part(3 * MS, 1, SNAP, 2, DONE, MS)]);
    expect([m.wPartitions[0], m.wPartitions[1], m.kPartsCompleted[SNAP], m.kGpuNs[SNAP]]).toEqual([1, 1, 3, 3 * MS]);
  });

  test('a hand-off to a worker slot the topology lacks owns nothing', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 1), ev.handoff(MS, 0, 1, 1, SNAP, 0)]); // worker slot 1: one past the last
    expect([m.ownedCount, m.oPart[0], m.jobs.get(1)!.ranBy[0], live(m, SNAP, LIVE_GPU)]).toEqual([0, -1, -1, 1]);
  });
});

test('a record with a sequence number already applied is skipped even when it equals the last', () => {
  const m = new StateModel();
  m.setTopology(topo(1, 1, false), 0);
  const view = encodeEvents([{ seq: 4, ...ev.queued(0, 1, SNAP, 1) }, { seq: 4, ...ev.queued(0, 2, SNAP, 1) }]);
  expect(m.applyEvents(view, 2)).toBe(1);
  expect([m.eventsTotal, m.lastSeq, m.jobs.size, m.unfinishedJobs]).toEqual([1, 4, 1, 1]);
  // A batch read at an offset: the records after it.
  const two = encodeEvents([{ seq: 5, ...ev.queued(0, 3, SNAP, 1) }, { seq: 6, ...ev.queued(0, 4, SNAP, 1) }]);
  expect(m.applyEvents(two, 1, 48)).toBe(0);
  expect([...m.jobs.keys()]).toEqual([1, 4]);
});

describe('defaults, ownership and counting rules the golden script leaves untested', () => {
  test('a new model has the empty topology without lock events; workers that appear own no partition and no kind', () => {
    const m = new StateModel();
    expect(m.topology).toEqual({ gpus: [], workers: [], lockEvents: false });
    m.setTopology(topo(2, 1), 0);
    expect([[...m.wPartition], [...m.wKind], [...m.oPart]]).toEqual([[-1, -1], [-1, -1], [-1, -1]]);
  });

  test('partitions TIMELINE does not vouch for (supersededOnGpu) are not "on the GPU" for idle_with_partitions_on_gpu', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 2), ev.part(MS, 1, SNAP, 0, GPU)]); // (a state record: no worker named)
    expect(m.statusMismatch()).toBe(true);
    m.supersededOnGpu = 1;
    expect(m.statusMismatch()).toBe(false);
  });

  test('any reason can be set from outside, the first one too', () => {
    const m = new StateModel();
    m.setTopology(topo(1, 1, false), 0);
    m.setMismatchReason('idle_with_partitions_on_gpu', true);
    expect([m.statusMismatch(), m.mismatchReasons()]).toEqual([true, ['idle_with_partitions_on_gpu']]);
  });

  test('unsequenced records get no sequence numbers', () => {
    const m = new StateModel();
    m.setTopology(topo(1, 1, false), 0);
    const recs: EventRecord[] = [{ seq: 0, ...ev.queued(0, 1, SNAP, 1) }, { seq: 0, ...ev.part(MS, 1, SNAP, 0, SYN) }];
    m.applyRecords(recs, false);
    expect([recs.map((r) => r.seq), m.lastSeq, live(m, SNAP, 1)]).toEqual([[0, 0], 0, 1]);
  });

  test('finalizing is not an end: the worker still owns the partition (split proving)', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 1), ev.busy(MS, 0, 0, 1, SNAP, 0), ev.handoff(MS, 0, 0, 1, SNAP, 0), ev.finalizing(2 * MS, 0, 0, 1, SNAP, 0, MS)]);
    expect([m.oPart[0], m.oJob[0], m.ownedCount]).toEqual([0, 1, 1]);
  });

  test('a partition sent back to pending from the GPU counts as pending and ends no GPU stage', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 1), ev.busy(MS, 0, 0, 1, SNAP, 0), ev.handoff(MS, 0, 0, 1, SNAP, 0), ev.part(3 * MS, 1, SNAP, 0, 0, 2 * MS)]);
    expect([live(m, SNAP, 0), live(m, SNAP, LIVE_GPU), m.kGpuNs[SNAP], m.wPartitions[0], m.kPartsCompleted[SNAP] + m.kPartsFailed[SNAP]]).toEqual([1, 0, 0, 0, 0]);
  });

  test('an end naming its worker credits that worker even when no pickup was seen; one naming no known worker credits the one seen picking it up', () => {
    const s = new ScriptedSource(topo(2, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 2), ev.part(MS, 1, SNAP, 0, GPU), ev.end(2 * MS, 0, 1, 1, SNAP, 0, DONE, MS)]);
    expect([m.wPartitions[0], m.wPartitions[1]]).toEqual([0, 1]);
    // worker slot 2 is one past the last: the end falls back on the pickup (worker 0)
    s.apply([ev.busy(3 * MS, 0, 0, 1, SNAP, 1), ev.part(3 * MS, 1, SNAP, 1, GPU), ev.end(4 * MS, 0, 2, 1, SNAP, 1, DONE, MS)]);
    expect([m.wPartitions[0], m.wPartitions[1]]).toEqual([1, 1]);
  });

  test('a worker busy on a job the model does not know (yet) is busy, nothing else', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.busy(MS, 0, 0, 99, SNAP, 3)]);
    expect([m.busyWorkers, m.wJob[0], m.wPartition[0], m.wKind[0], m.jobs.size]).toEqual([1, 99, 3, SNAP, 0]);
  });

  test('a lock record for a GPU the topology lacks is not observed', () => {
    const s = new ScriptedSource(topo(1, 1));
    const r = new Recorder();
    s.model.observer = r;
    s.apply([ev.lock(MS, 1, 0, 3 * MS), ev.unlock(2 * MS, 1, 0, MS)]);
    expect([r.calls, [...s.model.gLockHeld], [...s.model.gLockHeldNs]]).toEqual([[], [0], [0]]);
  });

  test('a job queued again under a handle the model holds changes nothing', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 2), ev.part(MS, 1, SNAP, 0, SYN), ev.queued(2 * MS, 1, WPOST, 5)]);
    expect([m.unfinishedJobs, live(m, SNAP, 0), live(m, SNAP, 1), live(m, WPOST, 0), m.jobs.get(1)!.states.length]).toEqual([1, 1, 1, 0, 2]);
  });

  test('when a job ends, partitions already done stay done, live ones fail; an unknown outcome counts as no proof outcome', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 2), ev.part(MS, 1, SNAP, 0, DONE), ev.part(MS, 1, SNAP, 1, SYN), ev.done(2 * MS, 1, SNAP, 7, 2 * MS)]);
    expect([...m.jobs.get(1)!.states]).toEqual([DONE, FAILED]);
    expect([m.kProofsCompleted[SNAP], m.kProofsFailed[SNAP], m.kProofsCancelled[SNAP], m.unfinishedJobs]).toEqual([0, 0, 0, 0]);
  });

  test('evicting a job with done partitions leaves the other kinds\' gauges alone', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    const m = s.model;
    s.apply([ev.queued(0, 1, SNAP, 1), ev.handoff(MS, 0, 0, 1, SNAP, 0), ev.finalizing(2 * MS, 0, 0, 1, SNAP, 0, MS)]);
    s.apply([ev.queued(0, 2, WPOST, 1), ev.part(MS, 2, WPOST, 0, DONE), ev.done(2 * MS, 2, WPOST, OUTCOME_COMPLETED, 2 * MS)]);
    s.apply([{ type: EV_JOB_EVICTED, tNs: 3 * MS, job: 2, kind: WPOST }]);
    expect([m.partitionsFinalizing(), m.kLive.reduce((a, b) => a + b, 0)]).toEqual([1, 1]);
  });

  test('ends match ownership by job and partition: a named end only its worker, an unnamed one or one naming no known worker every worker', () => {
    const s = new ScriptedSource(topo(2, 1, false));
    const m = s.model;
    const own = () => [m.oJob[0], m.oPart[0], m.oJob[1], m.oPart[1], m.ownedCount];
    s.apply([ev.queued(0, 1, SNAP, 2), ev.queued(0, 2, SNAP, 2), ev.queued(0, 3, SNAP, 2)]);
    s.apply([ev.handoff(MS, 0, 1, 1, SNAP, 0), ev.handoff(MS, 0, 0, 2, SNAP, 0)]);
    expect(own()).toEqual([2, 0, 1, 0, 2]);
    // job 1 partition 0 ends, naming worker 0: worker 0 owns partition 0 of job 2, worker 1 is not named
    s.apply([ev.end(2 * MS, 0, 0, 1, SNAP, 0, DONE, MS)]);
    expect(own()).toEqual([2, 0, 1, 0, 2]);
    s.apply([ev.end(3 * MS, 0, 0, 2, SNAP, 0, DONE, MS)]);
    expect(own().slice(1)).toEqual([-1, 1, 0, 1]);
    // an end naming worker slot 2 (one past the last) is matched against every worker
    s.apply([ev.handoff(4 * MS, 0, 0, 1, SNAP, 1), ev.end(5 * MS, 0, 2, 1, SNAP, 1, DONE, MS)]);
    expect(own().slice(1)).toEqual([-1, 1, 0, 1]);
    // unnamed: partition 1 of job 3 ends while worker 0 owns partition 1 of job 2
    s.apply([ev.handoff(6 * MS, 0, 0, 2, SNAP, 1), ev.part(6 * MS, 3, SNAP, 1, GPU), ev.part(7 * MS, 3, SNAP, 1, DONE, MS)]);
    expect(own()).toEqual([2, 1, 1, 0, 2]);
    // job 3 ends: its owners only (none)
    s.apply([ev.done(8 * MS, 3, SNAP, OUTCOME_COMPLETED, 8 * MS)]);
    expect(own()).toEqual([2, 1, 1, 0, 2]);
  });

  test('without lock events nothing is ever starved (an attached cuzk: the lock is not seen)', () => {
    const s = new ScriptedSource(topo(1, 1, false));
    s.apply([ev.queued(0, 1, SNAP, 1)]);
    expect(s.model.gpuStarvedNsAt(0, 10 * MS)).toBe(0);
  });
});
