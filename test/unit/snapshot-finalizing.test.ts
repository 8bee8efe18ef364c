/**
 * Snapshots and split proving (issue 14): a /status partition with our addition
 * `"finalizing": true` maps to the finalizing state; cuzk's plain /status (no addition)
 * keeps it as gpu, because /status alone cannot tell. Our engine's `finalizing_since_ns`
 * (re-sync after an event gap) makes the finalize time exact; without it the time is
 * unknown and not guessed. A worker seen busy on a newer partition within the same stint
 * (split proving) continues that stint.
 */
import { snapshotToEvents, viewFromStatus, type ViewMapping } from '../../src/engine/sources/snapshot-sync';
import { StateModel } from '../../src/engine/model/state-model';
import type { CuzkPipeline, CuzkStatus, CuzkWorker } from '../../src/engine/sources/status-schema';
import { LIVE_FINALIZING, LIVE_GPU, LIVE_PARTITION_STATES, MM_IDLE_WITH_PARTITIONS } from '../../src/engine/model/kinds';

const SNAP = 1;
const MS = 1e6;

function model(): StateModel {
  const m = new StateModel();
  m.setTopology({ gpus: [{ ordinal: 0, name: 'g' }], workers: [{ id: 0, gpu: 0 }, { id: 1, gpu: 0 }], lockEvents: false }, 0);
  return m;
}

type Part = { state: string; finalizing?: boolean; finalizing_since_ns?: number | null; gpu_ms?: number | null };

function status(parts: Part[], workers: Partial<CuzkWorker>[], uptime = 100): CuzkStatus {
  const pipeline: CuzkPipeline = {
    job_id: 'ps-snap-1',
    proof_kind: 'snap-update',
    started_secs_ago: 1,
    total_partitions: parts.length,
    partitions_done: parts.filter((p) => p.state === 'done').length,
    partitions: parts.map((p, index) => ({ index, synth_ms: 10, gpu_ms: p.gpu_ms ?? (p.state === 'gpu' || p.state === 'done' ? 5 : null), ...p })),
  };
  const gpu_workers = workers.map((w, i) => ({
    worker_id: i,
    gpu_ordinal: 0,
    state: 'idle',
    current_job: null,
    current_partition: null,
    busy_secs: null,
    ...w,
  })) as CuzkWorker[];
  return { uptime_secs: uptime, pipelines: [pipeline], gpu_workers };
}

const mapping = (nowNs: number, native: boolean): ViewMapping => ({
  pipelineHandle: () => 7,
  workerJobHandle: (w) => (w.current_job ? 7 : 0),
  kindSlot: () => SNAP,
  workerSlot: (w) => w.worker_id,
  snapshotNs: nowNs,
  useBusySinceNs: native,
});

const live = (m: StateModel, slot: number) => m.kLive[SNAP * LIVE_PARTITION_STATES + slot];

function apply(m: StateModel, s: CuzkStatus, nowNs: number, opts: { native: boolean; resync: boolean; floor?: number }): void {
  const view = viewFromStatus(s, mapping(nowNs, opts.native));
  const records = snapshotToEvents(m, view, { tNs: nowNs, resync: opts.resync, evictMissing: true, countProofs: false, stintFloorNs: opts.floor });
  m.applyRecords(records, !opts.resync);
}

describe('snapshots and the finalizing state', () => {
  const busy = (p: number) => ({ state: 'proving', current_job: 'ps-snap-1', current_partition: p, busy_secs: 0.5 });

  test('"finalizing": true maps to finalizing; plain cuzk /status keeps it as gpu (it cannot tell)', () => {
    const ours = model();
    apply(ours, status([{ state: 'gpu', finalizing: true }, { state: 'gpu', finalizing: false }], [busy(1), {}]), 100 * MS, { native: false, resync: false });
    expect([live(ours, LIVE_GPU), live(ours, LIVE_FINALIZING)]).toEqual([1, 1]);
    expect(ours.partitionsOnGpu()).toBe(2);
    expect(ours.statusMismatch()).toBe(false); // 2 on the GPU, 1 busy worker: split proving

    const cuzk = model();
    apply(cuzk, status([{ state: 'gpu' }, { state: 'gpu' }], [busy(1), {}]), 100 * MS, { native: false, resync: false });
    expect([live(cuzk, LIVE_GPU), live(cuzk, LIVE_FINALIZING)]).toEqual([2, 0]);
    expect(cuzk.statusMismatch()).toBe(false);
    // The seed's state: no worker busy at all.
    apply(cuzk, status([{ state: 'gpu' }, { state: 'gpu' }], [{}, {}]), 200 * MS, { native: false, resync: false });
    expect(cuzk.mismatchReason(MM_IDLE_WITH_PARTITIONS)).toBe(true);
    expect(cuzk.mismatchReasons()).toEqual(['idle_with_partitions_on_gpu']);
  });

  test('a finalizing partition that ends counts its GPU stage; its finalize time only where the snapshot says when it began', () => {
    // Attached (another clock): unknown, not guessed.
    const a = model();
    apply(a, status([{ state: 'gpu', finalizing: true, finalizing_since_ns: 90 * MS }], [busy(0), {}]), 100 * MS, { native: false, resync: true });
    apply(a, status([{ state: 'done', gpu_ms: 30 }], [{}, {}]), 150 * MS, { native: false, resync: false, floor: 100 * MS });
    expect(a.kGpuNs[SNAP]).toBe(30 * MS);
    expect(a.kFinalizeNs[SNAP]).toBe(0);

    // Native re-sync (the engine's clock is the model's): exact from finalizing_since_ns.
    const n = model();
    apply(n, status([{ state: 'gpu', finalizing: true, finalizing_since_ns: 90 * MS }], [busy(0), {}]), 100 * MS, { native: true, resync: true });
    expect(live(n, LIVE_FINALIZING)).toBe(1);
    expect(n.jobs.get(7)?.finSinceNs[0]).toBe(90 * MS);
    // (the end comes as an engine event at 130 ms)
    n.applyRecords([{ seq: 0, tNs: 130 * MS, type: 3, job: 7, partition: 0, aux: 4, value: 40 * MS, worker: 0 }], true);
    expect(n.kFinalizeNs[SNAP]).toBe(40 * MS);
    expect(n.kGpuNs[SNAP]).toBe(40 * MS);
  });

  test('attached to our engine: a worker busy on a newer partition within its stint continues the stint', () => {
    const m = model();
    // Stint since 99.5 s (busy_secs 0.5 at 100 s).
    apply(m, status([{ state: 'gpu' }, { state: 'synth_done' }], [busy(0), {}]), 100 * MS * 1000, { native: false, resync: true });
    const since = m.wSinceNs[0];
    // Next poll: the worker owns partition 1; its stint (busy_secs 1.5 at 101 s) began before
    // the previous poll: the same stint. Partition 0 finalizes meanwhile.
    apply(m, status([{ state: 'gpu', finalizing: true }, { state: 'gpu' }], [{ ...busy(1), busy_secs: 1.5 }, {}], 101), 101 * MS * 1000, {
      native: false,
      resync: false,
      floor: 100 * MS * 1000,
    });
    expect([m.wBusy[0], m.wPartition[0], m.wSinceNs[0]]).toEqual([1, 1, since]);
    expect(m.wBusyNs[0]).toBe(0); // nothing ended
    expect(m.workerBusyNsAt(0, 101 * MS * 1000)).toBe(101 * MS * 1000 - since);
    // cuzk's own busy_secs restarts at each pickup: a stint that began after the previous
    // poll ends the old one (credited up to when it was last seen).
    const c = model();
    apply(c, status([{ state: 'gpu' }, { state: 'synth_done' }], [busy(0), {}]), 100 * MS * 1000, { native: false, resync: true });
    apply(c, status([{ state: 'done' }, { state: 'gpu' }], [{ ...busy(1), busy_secs: 0.2 }, {}], 101), 101 * MS * 1000, {
      native: false,
      resync: false,
      floor: 100 * MS * 1000,
    });
    expect(c.wSinceNs[0]).toBe(100.8 * MS * 1000);
    expect(c.wBusyNs[0]).toBe(0.5 * 1e9);
    expect(c.wPartitions[0]).toBe(1); // partition 0 ended, run by worker 0
  });
});
