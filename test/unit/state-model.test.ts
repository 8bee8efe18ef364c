import { goldenSource, POREP, SNAP, WINNING, WPOST } from '../helpers/golden-script';
import { ScriptedSource, ev, MS } from '../helpers/scripted-source';
import { LIVE_FINALIZING, LIVE_GPU, LIVE_PARTITION_STATES, MM_IDLE_WITH_PARTITIONS, MM_OWNER_IDLE, MM_SURFACES_DISAGREE } from '../../src/engine/model/kinds';
import { encodeEvents } from '../../src/engine/model/event-layout';

const live = (s: ScriptedSource, kind: number, state: number) => s.model.kLive[kind * LIVE_PARTITION_STATES + state];

describe('StateModel from a scripted event sequence', () => {
  const s = goldenSource();
  const m = s.model;
  const now = s.clockNs;

  test('worker busy time includes the running stint up to the collection', () => {
    // 10 + 4 + the running stint 45 -> 60 (one stint over job 5's two partitions: the
    // pickup of partition 1 at 47 moved ownership without ending it)
    expect(m.workerBusyNsAt(0, now)).toBe(29 * MS);
    expect(m.workerBusyNsAt(1, now)).toBe(25 * MS); // 17 + running 8 (52 -> 60)
    // current partition: since its own pickup, not since the stint began
    expect(m.workerStintSecondsAt(0, now)).toBeCloseTo(0.013, 12);
    expect(m.workerStintSecondsAt(1, now)).toBeCloseTo(0.008, 12);
    expect(m.wPartitions[0]).toBe(3); // job 1 p0, job 2 p0, job 5 p0 (ended while it owned p1)
    expect(m.wPartitions[1]).toBe(1);
  });

  test('GPU lock held and starved time', () => {
    expect(m.gpuLockHeldNsAt(0, now)).toBe(29 * MS); // 8 + 8 + 2 + 2 + 2 + running 7
    // lock free, no synthesized partition waiting, and a job outstanding:
    // 0-11, 20-21, 29-30 (job 1 done), 31-33, 33-34, 36-37 (job 2 done), 40-41 (job 3
    // cancelled), 42-44, 47-48, 50-52, 52-53
    expect(m.gpuStarvedNsAt(0, now)).toBe(24 * MS);
  });

  test('per-kind totals count each finished partition once; cancellations are not failures', () => {
    expect(m.kGpuNs[SNAP]).toBe(30 * MS); // 10 + 17 + job 5 p0's 3 (its finalize tail included)
    expect(m.kGpuNs[WINNING]).toBe(4 * MS);
    expect(m.kSynthNs[SNAP]).toBe(26 * MS); // 10 + 11 + 2 + 3
    expect(m.kFinalizeNs[SNAP]).toBe(1 * MS); // job 5 p0: 3 ms GPU stage - 2 ms to the lock release
    expect(m.kFinalizeNs[WPOST] + m.kFinalizeNs[WINNING] + m.kFinalizeNs[POREP]).toBe(0);
    expect(m.kPartsCompleted[SNAP]).toBe(3);
    expect(m.kPartsFailed[WINNING]).toBe(1);
    expect(m.kPartsFailed[POREP]).toBe(0);
    expect(m.kProofsCompleted[SNAP]).toBe(1);
    expect(m.kProofsFailed[WINNING]).toBe(1);
    expect(m.kProofsCancelled[POREP]).toBe(1);
  });

  test('gauges: partitions by state, busy workers, ownership, mismatch', () => {
    expect(live(s, WPOST, LIVE_GPU)).toBe(1);
    expect(live(s, SNAP, LIVE_FINALIZING)).toBe(1);
    expect(m.partitionsOnGpu()).toBe(2); // gpu + finalizing, as cuzk's /status counts them
    expect(m.partitionsFinalizing()).toBe(1);
    expect(m.busyWorkers).toBe(2);
    expect([m.oJob[0], m.oPart[0], m.oJob[1], m.oPart[1]]).toEqual([5, 1, 4, 0]);
    expect(m.statusMismatch()).toBe(false);
    expect(m.mismatchReasons()).toEqual([]);
    const nonzero = [WPOST * LIVE_PARTITION_STATES + LIVE_GPU, SNAP * LIVE_PARTITION_STATES + LIVE_FINALIZING];
    for (let i = 0; i < m.kLive.length; i++) if (!nonzero.includes(i)) expect(m.kLive[i]).toBe(0);
  });

  test('events already applied (seq <= lastSeq) are skipped, unknown types ignored', () => {
    const before = m.eventsTotal;
    // (worker 0 is busy at the end of the script: an old "idle" record must not apply)
    const view = encodeEvents([{ seq: 1, tNs: 0, type: 4, worker: 0, aux: 0 }, { seq: m.lastSeq + 1, tNs: now, type: 999 }]);
    expect(m.applyEvents(view, 2)).toBe(1);
    expect(m.eventsTotal).toBe(before + 1);
    expect(m.wBusy[0]).toBe(1);
  });

  test('topology change keeps surviving workers and drops vanished ones', () => {
    const t = new ScriptedSource({ gpus: [{ ordinal: 0, name: 'g' }], workers: [{ id: 0, gpu: 0 }, { id: 1, gpu: 0 }], lockEvents: false });
    t.apply([ev.queued(0, 1, SNAP, 1), ev.busy(0, 0, 1, 1, SNAP, 0), ev.idle(5 * MS, 0, 1, 1, SNAP, 0, 5 * MS)]);
    const v = t.model.topologyVersion;
    t.model.setTopology({ gpus: [{ ordinal: 0, name: 'g' }], workers: [{ id: 1, gpu: 0 }], lockEvents: false }, 6 * MS);
    expect(t.model.topologyVersion).toBe(v + 1);
    expect(t.model.wBusyNs.length).toBe(1);
    expect(t.model.wBusyNs[0]).toBe(5 * MS);
    t.model.setTopology({ gpus: [{ ordinal: 0, name: 'g' }], workers: [{ id: 1, gpu: 0 }], lockEvents: false }, 7 * MS);
    expect(t.model.topologyVersion).toBe(v + 1); // unchanged topology is not a change
  });

  test('a GPU that appears while work waits (lock events) is starved from then on; not without lock events or work', () => {
    const one = { gpus: [{ ordinal: 0, name: 'g0' }], workers: [{ id: 0, gpu: 0 }] };
    const two = { gpus: [{ ordinal: 0, name: 'g0' }, { ordinal: 1, name: 'g1' }], workers: [{ id: 0, gpu: 0 }] };
    const cases: [string, boolean, boolean, number][] = [
      ['lock events, a job waiting', true, true, 5 * MS],
      ['no lock events (an attached cuzk), a job waiting', false, true, 0],
      ['lock events, nothing waiting', true, false, 0],
    ];
    for (const [what, lockEvents, job, want] of cases) {
      const t = new ScriptedSource({ ...one, lockEvents });
      if (job) t.apply([ev.queued(MS, 1, SNAP, 1)]);
      t.model.setTopology({ ...two, lockEvents }, 10 * MS);
      expect([what, t.model.gpuStarvedNsAt(1, 15 * MS)]).toEqual([what, want]);
    }
  });

  test('every field of the topology is a change when it alone differs (the sameness check skips only a true repeat)', () => {
    const gpu = (o: number, name = `g${o}`, uuid = `GPU-${o}`, pciBusId = `0000:0${o}:00.0`) => ({ ordinal: o, name, uuid, pciBusId });
    const base = () => ({ gpus: [gpu(0), gpu(1)], workers: [{ id: 0, gpu: 0 }, { id: 1, gpu: 1 }], lockEvents: false });
    type Topo = ReturnType<typeof base>;
    const variants: [string, (t: Topo) => void][] = [
      ['lock events', (t) => (t.lockEvents = true)],
      ['one GPU more, no worker on it', (t) => t.gpus.push(gpu(2))],
      ['a worker moved to another GPU', (t) => (t.workers[1].gpu = 0)],
      ['a worker renumbered', (t) => (t.workers[1].id = 5)],
      ['the second GPU renumbered', (t) => (t.gpus[1] = gpu(3, 'g1', 'GPU-1', '0000:01:00.0'))],
      ['the second GPU renamed', (t) => (t.gpus[1].name = 'other')],
      ['the second GPU\'s uuid', (t) => (t.gpus[1].uuid = 'GPU-x')],
      ['the second GPU\'s PCI bus', (t) => (t.gpus[1].pciBusId = '0000:09:00.0')],
    ];
    for (const [what, change] of variants) {
      const t = new ScriptedSource(base());
      const v = t.model.topologyVersion;
      t.model.setTopology(base(), MS);
      expect([what, 'repeat', t.model.topologyVersion]).toEqual([what, 'repeat', v]);
      const next = base();
      change(next);
      t.model.setTopology(next, 2 * MS);
      expect([what, t.model.topologyVersion, t.model.topology]).toEqual([what, v + 1, next]);
    }
  });
});

describe('status mismatch: only certain contradictions (split proving is not one)', () => {
  // One GPU, two workers; one snap-update proof of 4 partitions, all synthesized.
  const box = (): ScriptedSource => {
    const b = new ScriptedSource({ gpus: [{ ordinal: 0, name: 'g' }], workers: [{ id: 0, gpu: 0 }, { id: 1, gpu: 0 }], lockEvents: true });
    b.apply([ev.queued(0, 7, SNAP, 4)]);
    for (let p = 0; p < 4; p++) b.apply([ev.part(1, 7, SNAP, p, 1), ev.part(2, 7, SNAP, p, 2, MS)]);
    return b;
  };
  const reasons = (b: ScriptedSource) => [b.model.mismatchReason(MM_IDLE_WITH_PARTITIONS), b.model.mismatchReason(MM_OWNER_IDLE), b.model.statusMismatch()];

  test('healthy split proving: 4 partitions in gpu/finalizing, 2 busy workers, never a mismatch', () => {
    const b = box();
    const m = b.model;
    // Each worker: pick, kernels end (finalizing), pick the next while the first finalizes.
    b.apply([ev.busy(10, 0, 0, 7, SNAP, 0), ev.handoff(10, 0, 0, 7, SNAP, 0)]);
    b.apply([ev.busy(11, 0, 1, 7, SNAP, 1), ev.handoff(11, 0, 1, 7, SNAP, 1)]);
    expect(reasons(b)).toEqual([false, false, false]);
    b.apply([ev.finalizing(20, 0, 0, 7, SNAP, 0, 10)]);
    b.apply([ev.busy(21, 0, 0, 7, SNAP, 2), ev.handoff(21, 0, 0, 7, SNAP, 2)]);
    b.apply([ev.finalizing(22, 0, 1, 7, SNAP, 1, 11)]);
    b.apply([ev.busy(23, 0, 1, 7, SNAP, 3), ev.handoff(23, 0, 1, 7, SNAP, 3)]);
    expect(m.partitionsOnGpu()).toBe(4);
    expect(m.partitionsFinalizing()).toBe(2);
    expect(m.busyWorkers).toBe(2);
    expect(reasons(b)).toEqual([false, false, false]);
    // The stint goes on through the move: busy since the first pickup, partition since the second.
    expect(m.wSinceNs[0]).toBe(10);
    expect(m.workerStintSecondsAt(0, 31)).toBeCloseTo(10e-9, 15);
    expect(m.workerBusyNsAt(0, 31)).toBe(21);
    // Older partitions end first (per-worker FIFO): the worker stays busy on its newer one.
    b.apply([ev.end(30, 0, 0, 7, SNAP, 0, 4, 20)]);
    expect([m.wBusy[0], m.oPart[0]]).toEqual([1, 2]);
    expect(m.kFinalizeNs[SNAP]).toBe(10);
    expect(m.kGpuNs[SNAP]).toBe(20);
    expect(reasons(b)).toEqual([false, false, false]);
    // The newest ends: the end group clears the worker (value = stint since its first pickup).
    b.apply([ev.finalizing(35, 0, 0, 7, SNAP, 2, 14), ev.end(40, 0, 0, 7, SNAP, 2, 4, 19), ev.idle(40, 0, 0, 7, SNAP, 2, 30)]);
    expect([m.wBusy[0], m.oPart[0], m.busyWorkers]).toEqual([0, -1, 1]);
    expect(m.wBusyNs[0]).toBe(30);
    expect(m.wPartitions[0]).toBe(2); // partitions 0 and 2, counted at their ends
    expect(m.kFinalizeNs[SNAP]).toBe(10 + 5);
    expect(reasons(b)).toEqual([false, false, false]);
  });

  test("the seed's state: partitions on the GPU while no worker at all is busy", () => {
    const b = box();
    // A hand-off whose worker-state update was skipped (fault mode "skip").
    b.apply([ev.handoff(10, 0, 0, 7, SNAP, 0), ev.handoff(11, 0, 1, 7, SNAP, 1)]);
    expect(reasons(b)).toEqual([true, true, true]);
    expect(b.model.mismatchReasons()).toEqual(['idle_with_partitions_on_gpu', 'owner_idle']);
    // Counts alone (a source that never names a partition's worker, e.g. cuzk's /status).
    const c = box();
    c.apply([ev.part(10, 7, SNAP, 0, 3), ev.part(11, 7, SNAP, 1, 6)]);
    expect(reasons(c)).toEqual([true, false, true]);
    c.apply([ev.busy(12, 0, 0, 7, SNAP, 0)]);
    expect(reasons(c)).toEqual([false, false, false]);
    // Partition 0 alone, handed to worker 0, which is not busy: owned, so owner_idle too.
    const d = box();
    d.apply([ev.handoff(10, 0, 0, 7, SNAP, 0)]);
    expect(reasons(d)).toEqual([true, true, true]);
    // A source that knows no worker yet cannot say they are all idle.
    const e = new ScriptedSource({ gpus: [{ ordinal: 0, name: 'g' }], workers: [], lockEvents: false });
    e.apply([ev.queued(0, 7, SNAP, 4), ev.part(1, 7, SNAP, 0, 3)]);
    expect([e.model.partitionsOnGpu(), ...reasons(e)]).toEqual([1, false, false, false]);
  });

  test('a partial clobber (one worker of two) is visible only with ownership', () => {
    const b = box();
    const m = b.model;
    b.apply([ev.busy(10, 0, 0, 7, SNAP, 0), ev.handoff(10, 0, 0, 7, SNAP, 0)]);
    b.apply([ev.busy(11, 0, 1, 7, SNAP, 1), ev.handoff(11, 0, 1, 7, SNAP, 1)]);
    b.apply([ev.finalizing(20, 0, 0, 7, SNAP, 0, 10)]);
    b.apply([ev.busy(21, 0, 0, 7, SNAP, 2), ev.handoff(21, 0, 0, 7, SNAP, 2)]);
    // Partition 0 ends and clears worker 0 unconditionally, though it owns partition 2.
    b.apply([ev.end(30, 0, 0, 7, SNAP, 0, 4, 20), ev.idle(30, 0, 0, 7, SNAP, 0, 20)]);
    expect([m.busyWorkers, m.partitionsOnGpu()]).toEqual([1, 2]);
    expect(reasons(b)).toEqual([false, true, true]);
    expect(m.mismatchReasons()).toEqual(['owner_idle']);
    // It stays until that partition ends (the later conditional clear is then a no-op).
    b.apply([ev.finalizing(35, 0, 0, 7, SNAP, 2, 14), ev.end(40, 0, 0, 7, SNAP, 2, 4, 19)]);
    expect(reasons(b)).toEqual([false, false, false]);
  });

  test('ownership ends with the job (cancelled/failed), records without a worker match by partition', () => {
    const b = box();
    const m = b.model;
    b.apply([ev.busy(10, 0, 0, 7, SNAP, 0), ev.handoff(10, 0, 0, 7, SNAP, 0), ev.busy(11, 0, 1, 7, SNAP, 1), ev.handoff(11, 0, 1, 7, SNAP, 1)]);
    expect(m.ownedCount).toBe(2);
    b.apply([ev.part(12, 7, SNAP, 1, 5, 0)]); // an end record that does not name its worker
    expect([m.oPart[0], m.oPart[1], m.ownedCount]).toEqual([0, -1, 1]);
    b.apply([ev.done(13, 7, SNAP, 2, 13)]);
    expect([m.oPart[0], m.ownedCount, m.partitionsOnGpu()]).toEqual([-1, 0, 0]);
  });

  test('surfaces_disagree is set from outside the model (attach merge) and OR-ed into the flag', () => {
    const b = box();
    const m = b.model;
    expect(m.statusMismatch()).toBe(false);
    m.setMismatchReason('surfaces_disagree', true);
    expect([m.mismatchReason(MM_SURFACES_DISAGREE), m.statusMismatch()]).toEqual([true, true]);
    expect(m.mismatchReasons()).toEqual(['surfaces_disagree']);
    m.setMismatchReason('surfaces_disagree', false);
    expect(m.statusMismatch()).toBe(false);
    expect(() => m.setMismatchReason('nonsense' as never, true)).toThrow(/unknown mismatch reason/);
  });

  test('a topology change recounts busy and owning workers from the survivors (partition 0 owned counts)', () => {
    const b = box();
    const m = b.model;
    b.apply([ev.busy(10, 0, 0, 7, SNAP, 0), ev.handoff(10, 0, 0, 7, SNAP, 0), ev.busy(11, 0, 1, 7, SNAP, 1), ev.handoff(11, 0, 1, 7, SNAP, 1)]);
    m.setTopology({ gpus: [{ ordinal: 0, name: 'g' }, { ordinal: 1, name: 'h' }], workers: [{ id: 0, gpu: 0 }, { id: 1, gpu: 0 }, { id: 2, gpu: 1 }], lockEvents: true }, 12);
    expect([m.busyWorkers, m.ownedCount, [...m.oPart]]).toEqual([2, 2, [0, 1, -1]]);
  });

  test('records that say nothing new change nothing: a repeated sequence number, a partition out of range, a state repeated or unknown', () => {
    const b = box();
    const m = b.model;
    b.apply([ev.busy(10, 0, 0, 7, SNAP, 0), ev.handoff(10, 0, 0, 7, SNAP, 0), ev.end(20, 0, 0, 7, SNAP, 0, 4, 10 * MS)]);
    const snap = () => [m.eventsTotal, m.lastSeq, m.kGpuNs[SNAP], m.kPartsCompleted[SNAP], [...m.kLive], m.ownedCount];
    const before = snap();
    // The batch's last record again, with its own sequence number (a re-read after a re-sync).
    const again = encodeEvents([{ seq: m.lastSeq, ...ev.end(20, 0, 0, 7, SNAP, 0, 4, 10 * MS) }]);
    expect(m.applyEvents(again, 1)).toBe(1);
    expect(snap()).toEqual(before);
    // Not a new sequence number, but new records that must not move anything either.
    b.apply([ev.end(21, 0, 0, 7, SNAP, 0, 4, 10 * MS)]); // done again: counted once
    b.apply([ev.part(22, 7, SNAP, 4, 3)]); // partition 4 of a 4-partition job
    b.apply([ev.part(23, 7, SNAP, 1, 99), ev.part(23, 7, SNAP, 1, 7)]); // no such state (7: one past the last)
    const after = snap();
    expect([after[2], after[3], after[4], after[5]]).toEqual([before[2], before[3], before[4], before[5]]);
  });

  test('a second hand-off to a worker that owns a partition keeps one owner; re-sync records move state but count nothing', () => {
    const b = box();
    const m = b.model;
    b.apply([ev.busy(10, 0, 0, 7, SNAP, 0), ev.handoff(10, 0, 0, 7, SNAP, 0)]);
    b.apply([ev.handoff(11, 0, 0, 7, SNAP, 2)]);
    expect([m.ownedCount, m.oPart[0]]).toEqual([1, 2]);
    // A re-sync's end record (state from a snapshot: no duration known) and a hand-off that carries a value.
    b.apply([{ ...ev.end(12, 0, 0, 7, SNAP, 0, 4, 10 * MS), flags: 0x8000 }]);
    b.apply([{ ...ev.handoff(13, 0, 1, 7, SNAP, 1), value: 5 * MS }]);
    expect([m.kGpuNs[SNAP], m.kPartsCompleted[SNAP], live(b, SNAP, LIVE_GPU)]).toEqual([0, 0, 2]);
  });

  test('records built in JS (attach): sequenced ones take the next numbers and count as events; re-sync ones only move state', () => {
    const b = box();
    const m = b.model;
    const [e0, seq0] = [m.eventsTotal, m.lastSeq];
    m.applyRecords([{ seq: 0, ...ev.handoff(10, 0, 0, 7, SNAP, 0) }, { seq: 0, ...ev.handoff(10, 0, 1, 7, SNAP, 1) }], true);
    expect([m.eventsTotal - e0, m.lastSeq - seq0, m.ownedCount]).toEqual([2, 2, 2]);
    m.applyRecords([{ seq: 0, ...ev.handoff(11, 0, 0, 7, SNAP, 2) }], false);
    expect([m.eventsTotal - e0, m.lastSeq - seq0, m.oPart[0]]).toEqual([2, 2, 2]);
  });

  test('partition state FINALIZING survives a topology change and a resync-flagged record sets no finalize time', () => {
    const b = box();
    const m = b.model;
    b.apply([ev.busy(10, 0, 0, 7, SNAP, 0), ev.handoff(10, 0, 0, 7, SNAP, 0)]);
    b.apply([{ ...ev.finalizing(20, 0, 0, 7, SNAP, 0, 10), flags: 0x8000 }]);
    b.apply([ev.end(30, 0, 0, 7, SNAP, 0, 4, 20), ev.idle(30, 0, 0, 7, SNAP, 0, 20)]);
    expect(m.kGpuNs[SNAP]).toBe(20);
    expect(m.kFinalizeNs[SNAP]).toBe(0); // kernel end unknown: not guessed
    b.apply([ev.busy(40, 0, 1, 7, SNAP, 1), ev.handoff(40, 0, 1, 7, SNAP, 1)]);
    m.setTopology({ gpus: [{ ordinal: 0, name: 'g' }], workers: [{ id: 1, gpu: 0 }], lockEvents: true }, 41);
    expect([m.oJob[0], m.oPart[0], m.ownedCount, m.wBusy[0]]).toEqual([7, 1, 1, 1]);
  });
});
