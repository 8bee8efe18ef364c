/**
 * StateModel's job lookup cache and its jobEnds list (d5bcbd2, issue 21):
 *  - jobOf(handle): a 64-slot direct-mapped cache (slot = handle & 63) in front of model.jobs,
 *    used by partition and worker records; a slot is cleared when JOB_EVICTED deletes its
 *    job. Whatever the cache holds, a record must reach the job model.jobs has under its
 *    handle, or none: two jobs in one slot (3 and 67; 3 and 3 + 2^32, handles being u64 read
 *    as Numbers) move independently; a handle evicted and queued again is a new job; a
 *    handle never queued (or evicted) changes nothing.
 *  - jobEnds: when an array, the handle of every JOB_DONE record applied and -1 - handle of
 *    every JOB_EVICTED one, in order, known jobs or not (the native engine settles awaits
 *    and forgets request ids from it); null records nothing.
 * Expectations worked out by hand from the records below.
 */
import { ScriptedSource, ev, MS } from '../helpers/scripted-source';
import { EV_JOB_DONE, EV_JOB_EVICTED, encodeEvents } from '../../src/engine/model/event-layout';
import { LIVE_PARTITION_STATES, OUTCOME_COMPLETED, OUTCOME_FAILED } from '../../src/engine/model/kinds';
import type { StateModel, Topology } from '../../src/engine/model/state-model';

const SNAP = 1;
const WPOST = 2;
// partition states
const PENDING = 0, SYN = 1, SD = 2, GPU = 3, DONE = 4, FAILED = 5;

const TOPO: Topology = { gpus: [{ ordinal: 0, name: 'g0' }], workers: [{ id: 0, gpu: 0 }, { id: 1, gpu: 0 }], lockEvents: true };
/** A kind's live gauge: [pending, synthesizing, synth_done, gpu, finalizing]. */
const live = (m: StateModel, kind: number) => Array.from(m.kLive.subarray(kind * LIVE_PARTITION_STATES, (kind + 1) * LIVE_PARTITION_STATES));
const evicted = (t: number, job: number, kind: number) => ({ type: EV_JOB_EVICTED, tNs: t, job, kind });
const states = (m: StateModel, h: number) => Array.from(m.jobs.get(h)!.states);

describe('jobOf: two jobs in flight in one cache slot', () => {
  // Each pair shares a slot (handle & 63). 2^31 + 7 is negative as an int32: still slot 7.
  test.each([
    [3, 67],
    [67, 3],
    [3, 3 + 2 ** 32],
    [3 + 2 ** 32, 3],
    [0, 64],
    [2 ** 31 + 7, 7],
  ])('jobs %d and %d: interleaved partition and worker records move each job on its own', (a, b) => {
    const s = new ScriptedSource(TOPO);
    const m = s.model;
    s.apply([ev.queued(0, a, SNAP, 2), ev.queued(0, b, WPOST, 3)]);
    // The two jobs' records alternating (each lookup evicts the other from the slot).
    s.apply([ev.part(1 * MS, a, SNAP, 0, SYN), ev.part(1 * MS, b, WPOST, 0, SYN), ev.part(2 * MS, b, WPOST, 1, SYN)]);
    // Checked here: the first lookup of each handle (an empty slot; handle 0 in slot 0).
    expect([states(m, a), states(m, b), live(m, SNAP), live(m, WPOST)]).toEqual([[SYN, PENDING], [SYN, SYN, PENDING], [1, 1, 0, 0, 0], [1, 2, 0, 0, 0]]);
    s.apply([
      ev.part(3 * MS, a, SNAP, 0, SD, 2 * MS),
      ev.part(4 * MS, b, WPOST, 0, SD, 3 * MS),
      ev.busy(5 * MS, 0, 0, a, SNAP, 0),
      ev.busy(5 * MS, 0, 1, b, WPOST, 0),
      ev.handoff(5 * MS, 0, 0, a, SNAP, 0),
      ev.handoff(6 * MS, 0, 1, b, WPOST, 0),
      ev.part(6 * MS, a, SNAP, 1, SYN),
      ev.end(8 * MS, 0, 1, b, WPOST, 0, DONE, 2 * MS),
      ev.end(9 * MS, 0, 0, a, SNAP, 0, FAILED, 4 * MS),
    ]);
    expect(states(m, a)).toEqual([FAILED, SYN]);
    expect(states(m, b)).toEqual([DONE, SYN, PENDING]);
    expect([Array.from(m.jobs.get(a)!.ranBy), Array.from(m.jobs.get(b)!.ranBy)]).toEqual([[0, -1], [1, -1, -1]]);
    expect(live(m, SNAP)).toEqual([0, 1, 0, 0, 0]);
    expect(live(m, WPOST)).toEqual([1, 1, 0, 0, 0]);
    expect([m.kPartsCompleted[SNAP], m.kPartsCompleted[WPOST], m.kPartsFailed[SNAP], m.kPartsFailed[WPOST]]).toEqual([0, 1, 1, 0]);
    expect([m.kSynthNs[SNAP], m.kSynthNs[WPOST], m.kGpuNs[SNAP], m.kGpuNs[WPOST]]).toEqual([2 * MS, 3 * MS, 4 * MS, 2 * MS]);
    expect(Array.from(m.wPartitions)).toEqual([1, 1]);
    expect(m.ownedCount).toBe(0);

    // a fails (its live partition leaves the gauges) and is evicted: that clears the slot b
    // shares; b's later records still reach b.
    s.apply([ev.done(10 * MS, a, SNAP, OUTCOME_FAILED, 10 * MS), ev.part(11 * MS, b, WPOST, 2, SYN), evicted(12 * MS, a, SNAP)]);
    expect([m.unfinishedJobs, m.kProofsFailed[SNAP], [...m.jobs.keys()]]).toEqual([1, 1, [b]]);
    s.apply([ev.part(13 * MS, b, WPOST, 1, SD, 1 * MS), ev.part(13 * MS, b, WPOST, 2, SD, 1 * MS)]);
    expect(states(m, b)).toEqual([DONE, SD, SD]);
    expect(live(m, SNAP)).toEqual([0, 0, 0, 0, 0]);
    expect(live(m, WPOST)).toEqual([0, 0, 2, 0, 0]);
    expect(m.kSynthNs[WPOST]).toBe(5 * MS);
  });
});

describe('jobOf: a handle evicted, then a job queued in its slot', () => {
  // [evicted, queued next]: the same handle again (a new job, another partition count), and
  // handle 0 after 64 (slot 0; 0 must not read as an empty or cleared slot's key).
  test.each([
    [3, 3],
    [5 + 2 ** 32, 5 + 2 ** 32],
    [64, 0],
  ])('job %d evicted, job %d queued: later records reach the new job only', (old, next) => {
    const s = new ScriptedSource(TOPO);
    const m = s.model;
    s.apply([
      ev.queued(0, old, SNAP, 2),
      ev.part(1 * MS, old, SNAP, 0, SYN),
      ev.part(2 * MS, old, SNAP, 0, SD, 1 * MS),
      ev.busy(3 * MS, 0, 0, old, SNAP, 0),
      ev.handoff(3 * MS, 0, 0, old, SNAP, 0),
      ev.part(3 * MS, old, SNAP, 1, SYN),
    ]);
    expect(live(m, SNAP)).toEqual([0, 1, 0, 1, 0]);
    const gone = m.jobs.get(old)!;
    s.apply([evicted(4 * MS, old, SNAP)]);
    expect([m.jobs.has(old), m.unfinishedJobs, m.ownedCount, live(m, SNAP)]).toEqual([false, 0, 0, [0, 0, 0, 0, 0]]);

    // Late records of the evicted handle: no job to move.
    s.apply([ev.part(5 * MS, old, SNAP, 1, SD, 1 * MS), ev.end(5 * MS, 0, 0, old, SNAP, 0, DONE, 2 * MS)]);
    expect(live(m, SNAP)).toEqual([0, 0, 0, 0, 0]);
    expect([m.kSynthNs[SNAP], m.kGpuNs[SNAP], m.kPartsCompleted[SNAP], m.wPartitions[0]]).toEqual([1 * MS, 0, 0, 0]);

    // Queued again in the slot: another kind and 4 partitions (3 is past the old job's 2).
    s.apply([
      ev.queued(6 * MS, next, WPOST, 4),
      ev.part(7 * MS, next, WPOST, 3, SYN),
      ev.part(7 * MS, next, WPOST, 0, SYN),
      ev.part(8 * MS, next, WPOST, 3, SD, 2 * MS),
      ev.busy(9 * MS, 0, 1, next, WPOST, 3),
      ev.handoff(9 * MS, 0, 1, next, WPOST, 3),
      ev.end(10 * MS, 0, 1, next, WPOST, 3, DONE, 1 * MS),
    ]);
    const job = m.jobs.get(next)!;
    expect(job).not.toBe(gone);
    expect([job.kind, Array.from(job.states), Array.from(job.ranBy)]).toEqual([WPOST, [SYN, PENDING, PENDING, DONE], [-1, -1, -1, 1]]);
    expect(live(m, WPOST)).toEqual([2, 1, 0, 0, 0]);
    expect(live(m, SNAP)).toEqual([0, 0, 0, 0, 0]);
    expect([m.kPartsCompleted[WPOST], m.kSynthNs[WPOST], m.kGpuNs[WPOST], Array.from(m.wPartitions)]).toEqual([1, 2 * MS, 1 * MS, [0, 1]]);
    expect([m.unfinishedJobs, m.ownedCount]).toEqual([1, 0]);
    // The evicted job's own record was not touched after it left.
    expect([Array.from(gone.states), Array.from(gone.ranBy)]).toEqual([[GPU, SYN], [0, -1]]);
  });
});

describe('jobOf: handles never queued', () => {
  test('records naming them are ignored, also when the slot holds another job', () => {
    const s = new ScriptedSource(TOPO);
    const m = s.model;
    // Job 9 looked up (slot 9 holds it); 73 shares slot 9, 12 has an empty slot; neither queued.
    s.apply([ev.queued(0, 9, SNAP, 1), ev.part(1 * MS, 9, SNAP, 0, SYN)]);
    for (const h of [73, 12, 9 + 2 ** 32]) {
      s.apply([
        ev.part(2 * MS, h, SNAP, 0, SD, 5 * MS),
        ev.busy(2 * MS, 0, 0, h, SNAP, 0),
        ev.handoff(2 * MS, 0, 0, h, SNAP, 0),
        ev.end(3 * MS, 0, 0, h, SNAP, 0, DONE, 1 * MS),
        ev.done(3 * MS, h, SNAP, OUTCOME_COMPLETED, 3 * MS),
        evicted(4 * MS, h, SNAP),
      ]);
    }
    expect([states(m, 9), Array.from(m.jobs.get(9)!.ranBy), [...m.jobs.keys()]]).toEqual([[SYN], [-1], [9]]);
    expect(live(m, SNAP)).toEqual([0, 1, 0, 0, 0]);
    expect([m.kSynthNs[SNAP], m.kGpuNs[SNAP], m.kPartsCompleted[SNAP], m.kProofsCompleted[SNAP], m.wPartitions[0]]).toEqual([0, 0, 0, 0, 0]);
    expect([m.unfinishedJobs, m.ownedCount]).toEqual([1, 0]);
    // Job 9 itself still moves (the unknown handles' eviction cleared nothing it needs).
    s.apply([ev.part(5 * MS, 9, SNAP, 0, SD, 1 * MS)]);
    expect(live(m, SNAP)).toEqual([0, 0, 1, 0, 0]);
    expect(m.kSynthNs[SNAP]).toBe(1 * MS);
  });
});

describe('jobEnds', () => {
  test('JOB_DONE pushes the handle, JOB_EVICTED -1 - handle, in order, known jobs or not', () => {
    const s = new ScriptedSource(TOPO);
    const m = s.model;
    const ends: number[] = [];
    m.jobEnds = ends;
    s.apply([ev.queued(0, 5, SNAP, 1), ev.queued(0, 6, WPOST, 1), ev.queued(0, 0, WPOST, 1)]);
    expect(ends).toEqual([]);
    s.apply([
      ev.done(1 * MS, 5, SNAP, OUTCOME_COMPLETED, 1 * MS),
      evicted(2 * MS, 5, SNAP),
      ev.done(2 * MS, 99, SNAP, OUTCOME_COMPLETED, 1 * MS), // never queued
      evicted(2 * MS, 98, SNAP), // never queued
      evicted(3 * MS, 6, WPOST), // evicted unfinished
      ev.done(3 * MS, 0, WPOST, OUTCOME_COMPLETED, 3 * MS),
      ev.done(3 * MS, 0, WPOST, OUTCOME_COMPLETED, 3 * MS), // a second JOB_DONE: recorded too
      evicted(4 * MS, 0, WPOST), // handle 0: -1, not 0 (a JOB_DONE)
      evicted(4 * MS, 5, SNAP), // already gone
    ]);
    expect(ends).toEqual([5, -6, 99, -99, -7, 0, 0, -1, -6]);
    expect(m.jobEnds).toBe(ends); // the model pushes into the caller's array
    // The model's own bookkeeping is as without jobEnds.
    expect([m.unfinishedJobs, m.jobs.size, m.kProofsCompleted[SNAP], m.kProofsCompleted[WPOST]]).toEqual([0, 0, 1, 1]);

    // A record not applied (sequence already seen) records nothing.
    ends.length = 0;
    const stale = encodeEvents([{ seq: 1, tNs: 5 * MS, type: EV_JOB_DONE, job: 7 }]);
    expect(m.applyEvents(stale, 1)).toBe(1);
    expect(ends).toEqual([]);
    // Re-sync records (applyRecords, unsequenced) are applied: recorded too.
    m.applyRecords([{ seq: 0, tNs: 6 * MS, type: EV_JOB_EVICTED, job: 8 }, { seq: 0, tNs: 6 * MS, type: EV_JOB_DONE, job: 8 }], false);
    expect(ends).toEqual([-9, 8]);
  });

  test('null (the default) records nothing, and the records applied meanwhile are not recorded later', () => {
    const s = new ScriptedSource(TOPO);
    const m = s.model;
    expect(m.jobEnds).toBeNull();
    s.apply([ev.queued(0, 1, SNAP, 1), ev.done(1 * MS, 1, SNAP, OUTCOME_COMPLETED, 1 * MS), evicted(2 * MS, 1, SNAP), ev.done(2 * MS, 2, SNAP, OUTCOME_COMPLETED, 1 * MS), evicted(2 * MS, 3, SNAP)]);
    expect([m.jobs.size, m.unfinishedJobs, m.kProofsCompleted[SNAP]]).toEqual([0, 0, 1]);
    const ends: number[] = [];
    m.jobEnds = ends;
    s.apply([evicted(3 * MS, 4, SNAP)]);
    expect(ends).toEqual([-5]);
  });
});
