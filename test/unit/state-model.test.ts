import { goldenSource, POREP, SNAP, WINNING, WPOST } from '../helpers/golden-script';
import { ScriptedSource, ev, MS } from '../helpers/scripted-source';
import { PART_GPU, LIVE_PARTITION_STATES } from '../../src/engine/kinds';
import { encodeEvents } from '../../src/engine/event-layout';

const live = (s: ScriptedSource, kind: number, state: number) => s.model.kLive[kind * LIVE_PARTITION_STATES + state];

describe('StateModel from a scripted event sequence', () => {
  const s = goldenSource();
  const m = s.model;
  const now = s.clockNs;

  test('worker busy time includes the running stint up to the collection', () => {
    expect(m.workerBusyNsAt(0, now)).toBe(14 * MS); // 10 + 4, idle now
    expect(m.workerBusyNsAt(1, now)).toBe(25 * MS); // 17 + running 8 (52 -> 60)
    expect(m.workerStintSecondsAt(1, now)).toBeCloseTo(0.008, 12);
    expect(m.wPartitions[0]).toBe(2);
    expect(m.wPartitions[1]).toBe(1);
  });

  test('GPU lock held and starved time', () => {
    expect(m.gpuLockHeldNsAt(0, now)).toBe(25 * MS); // 8 + 8 + 2 + running 7
    // lock free, no synthesized partition waiting, and a job outstanding:
    // 0-11, 20-21, 29-30 (job 1 done), 31-33, 33-34, 36-37 (job 2 done), 40-41 (job 3
    // cancelled), 50-52, 52-53
    expect(m.gpuStarvedNsAt(0, now)).toBe(21 * MS);
  });

  test('per-kind totals count each finished partition once; cancellations are not failures', () => {
    expect(m.kGpuNs[SNAP]).toBe(27 * MS);
    expect(m.kGpuNs[WINNING]).toBe(4 * MS);
    expect(m.kSynthNs[SNAP]).toBe(21 * MS);
    expect(m.kPartsCompleted[SNAP]).toBe(2);
    expect(m.kPartsFailed[WINNING]).toBe(1);
    expect(m.kPartsFailed[POREP]).toBe(0);
    expect(m.kProofsCompleted[SNAP]).toBe(1);
    expect(m.kProofsFailed[WINNING]).toBe(1);
    expect(m.kProofsCancelled[POREP]).toBe(1);
  });

  test('gauges: partitions by state, busy workers, mismatch', () => {
    expect(live(s, WPOST, PART_GPU)).toBe(1);
    expect(m.partitionsOnGpu()).toBe(1);
    expect(m.busyWorkers).toBe(1);
    expect(m.statusMismatch()).toBe(false);
    for (let i = 0; i < m.kLive.length; i++) if (i !== WPOST * LIVE_PARTITION_STATES + PART_GPU) expect(m.kLive[i]).toBe(0);
  });

  test('a partition on the GPU without a busy worker is a mismatch (the historical bug)', () => {
    const b = new ScriptedSource({ gpus: [{ ordinal: 0, name: 'g' }], workers: [{ id: 0, gpu: 0 }, { id: 1, gpu: 0 }], lockEvents: true });
    b.apply([ev.queued(0, 7, SNAP, 2), ev.part(1, 7, SNAP, 0, 1), ev.part(2, 7, SNAP, 0, 2), ev.part(3, 7, SNAP, 0, 3)]);
    expect(b.model.statusMismatch()).toBe(true);
    b.apply([ev.busy(4, 0, 0, 7, SNAP, 0)]);
    expect(b.model.statusMismatch()).toBe(false);
  });

  test('events already applied (seq <= lastSeq) are skipped, unknown types ignored', () => {
    const before = m.eventsTotal;
    const view = encodeEvents([{ seq: 1, tNs: 0, type: 4, worker: 0, aux: 1 }, { seq: m.lastSeq + 1, tNs: now, type: 999 }]);
    expect(m.applyEvents(view, 2)).toBe(1);
    expect(m.eventsTotal).toBe(before + 1);
    expect(m.wBusy[0]).toBe(0);
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
});
