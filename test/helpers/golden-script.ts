/**
 * The fixed event sequence behind test/golden/scripted-metrics.prom: one GPU with two
 * workers; a 2-partition SnapDeals proof that completes, a WinningPoSt whose partition
 * fails on the GPU, a PoRep cancelled while queued, a second SnapDeals proof proved the
 * split way (partition 0 finalizes after its worker already moved on to partition 1, which
 * is itself finalizing at the scrape) and a WindowPoSt still on the GPU when the scrape
 * happens at t = 60 ms. Hand-offs and ends name their worker, as the native engine's do.
 * Expected totals are worked out by hand in test/unit/state-model.test.ts.
 */
import { ScriptedSource, ev, MS } from './scripted-source';

export const SNAP = 1;
export const POREP = 0;
export const WPOST = 2;
export const WINNING = 3;
// partition states
const SYN = 1, SD = 2, DONE = 4, FAILED = 5;

/** `attach` runs before any event, e.g. to hang an exporter on the model. */
export function goldenSource(attach?: (s: ScriptedSource) => void): ScriptedSource {
  const s = new ScriptedSource({
    gpus: [{ ordinal: 0, name: 'cpu-backend-0', uuid: 'GPU-00000000-0000-0000-0000-000000000000' }],
    workers: [{ id: 0, gpu: 0 }, { id: 1, gpu: 0 }],
    lockEvents: true,
  });
  s.model.synthMax = 2;
  s.model.memoryBudgetBytes = 1 << 30;
  attach?.(s);
  const t = (ms: number) => ms * MS;
  // Job 1: snap-update, 2 partitions, completes.
  s.apply([
    ev.queued(t(0), 1, SNAP, 2, 10, 1),
    ev.depth(t(0), SNAP, 1),
    ev.started(t(1), 1, SNAP, t(1)),
    ev.depth(t(1), SNAP, 0),
    ev.part(t(1), 1, SNAP, 0, SYN),
    ev.part(t(1), 1, SNAP, 1, SYN),
    ev.synth(t(1), 2),
    ev.memory(t(1), 1 << 20),
    ev.part(t(11), 1, SNAP, 0, SD, t(10)),
    ev.part(t(12), 1, SNAP, 1, SD, t(11)),
    ev.synth(t(12), 0),
    ev.busy(t(12), 0, 0, 1, SNAP, 0),
    ev.handoff(t(12), 0, 0, 1, SNAP, 0),
    ev.lock(t(12), 0, 0, null),
    ev.busy(t(13), 0, 1, 1, SNAP, 1),
    ev.handoff(t(13), 0, 1, 1, SNAP, 1),
    ev.unlock(t(20), 0, 0, t(8)),
    ev.lock(t(21), 0, 1, t(1)),
    ev.idle(t(22), 0, 0, 1, SNAP, 0, t(10)),
    ev.end(t(22), 0, 0, 1, SNAP, 0, DONE, t(10)),
    ev.unlock(t(29), 0, 1, t(8)),
    ev.idle(t(30), 0, 1, 1, SNAP, 1, t(17)),
    ev.end(t(30), 0, 1, 1, SNAP, 1, DONE, t(17)),
    ev.memory(t(30), 0),
    ev.done(t(30), 1, SNAP, 0, t(30)),
  ]);
  // Job 2: winning-post, its partition fails on the GPU.
  s.apply([
    ev.queued(t(31), 2, WINNING, 1, 100, 0),
    ev.started(t(31), 2, WINNING, 0),
    ev.part(t(31), 2, WINNING, 0, SYN),
    ev.part(t(33), 2, WINNING, 0, SD, t(2)),
    ev.busy(t(33), 0, 0, 2, WINNING, 0),
    ev.handoff(t(33), 0, 0, 2, WINNING, 0),
    ev.lock(t(34), 0, 0, t(5)),
    ev.unlock(t(36), 0, 0, t(2)),
    ev.idle(t(37), 0, 0, 2, WINNING, 0, t(4)),
    ev.end(t(37), 0, 0, 2, WINNING, 0, FAILED, t(4)),
    ev.done(t(37), 2, WINNING, 1, t(6)),
  ]);
  // Job 3: porep-c2, cancelled while queued.
  s.apply([
    ev.queued(t(40), 3, POREP, 2, 10, 1),
    ev.depth(t(40), POREP, 1),
    ev.cancelledPart(t(41), 3, POREP, 0),
    ev.cancelledPart(t(41), 3, POREP, 1),
    ev.depth(t(41), POREP, 0),
    ev.done(t(41), 3, POREP, 2, t(1)),
  ]);
  // Job 5: snap-update, split proving. Worker 0 takes partition 0 (45); its kernels end and
  // the lock is released at 47, and the worker picks partition 1 at once (ownership moves,
  // the stint goes on); partition 0 finalizes until 48 (1 ms) while the worker owns
  // partition 1, whose kernels run 48-50; partition 1 is finalizing at the scrape.
  s.apply([
    ev.queued(t(42), 5, SNAP, 2, 10, 1),
    ev.depth(t(42), SNAP, 1),
    ev.started(t(42), 5, SNAP, 0),
    ev.depth(t(42), SNAP, 0),
    ev.part(t(42), 5, SNAP, 0, SYN),
    ev.part(t(42), 5, SNAP, 1, SYN),
    ev.synth(t(42), 2),
    ev.part(t(44), 5, SNAP, 0, SD, t(2)),
    ev.part(t(45), 5, SNAP, 1, SD, t(3)),
    ev.synth(t(45), 0),
    ev.busy(t(45), 0, 0, 5, SNAP, 0),
    ev.handoff(t(45), 0, 0, 5, SNAP, 0),
    ev.lock(t(45), 0, 0, t(9)),
    ev.unlock(t(47), 0, 0, t(2)),
    ev.finalizing(t(47), 0, 0, 5, SNAP, 0, t(2)),
    ev.busy(t(47), 0, 0, 5, SNAP, 1),
    ev.handoff(t(47), 0, 0, 5, SNAP, 1),
    ev.end(t(48), 0, 0, 5, SNAP, 0, DONE, t(3)),
    ev.lock(t(48), 0, 0, t(1)),
    ev.unlock(t(50), 0, 0, t(2)),
    ev.finalizing(t(50), 0, 0, 5, SNAP, 1, t(3)),
  ]);
  // Job 4: window-post, on the GPU at the scrape.
  s.apply([
    ev.queued(t(50), 4, WPOST, 1, 50, 0),
    ev.started(t(50), 4, WPOST, 0),
    ev.part(t(50), 4, WPOST, 0, SYN),
    ev.part(t(52), 4, WPOST, 0, SD, t(2)),
    ev.busy(t(52), 0, 1, 4, WPOST, 0),
    ev.handoff(t(52), 0, 1, 4, WPOST, 0),
    ev.lock(t(53), 0, 1, t(3)),
  ]);
  s.clockNs = t(60);
  return s;
}
