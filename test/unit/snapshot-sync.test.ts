/**
 * src/engine/sources/snapshot-sync.ts, from its header and field comments:
 *  - viewFromStatus normalises a validated /status (docs/status-json.md) into model terms:
 *    partition states (our `"finalizing": true` next to `"gpu"` is finalizing), the job's
 *    outcome (its `outcome` field, else all partitions ended: failed if any failed), worker
 *    stints (busy_since_ns on the native clock, else busy_secs back from the snapshot time,
 *    never before the daemon started), GPU locks (native only), queue depths by kind slot;
 *  - snapshotToEvents gives the records that take the model to the snapshot: workers that
 *    ended first (credited what they were seen busy, or the partition's final GPU time),
 *    new jobs queued, every stage a partition passed between two snapshots once, a
 *    partition that went back as state only, jobs that ended (counted only with
 *    countProofs), jobs gone evicted (unless kept), GPU locks, new stints, then gauges.
 *    Re-sync records carry EVF_RESYNC (state only).
 * The model (StateModel) is brought to each snapshot by applying the records, as both
 * users do; the records themselves are checked where the contract names them.
 */
import { snapshotToEvents, viewFromStatus, type SnapshotView, type SyncOptions, type ViewMapping } from '../../src/engine/sources/snapshot-sync';
import { StateModel } from '../../src/engine/model/state-model';
import type { CuzkPartition, CuzkStatus, CuzkWorker } from '../../src/engine/sources/status-schema';
import {
  EVF_ABANDONED,
  EVF_FIRST,
  EVF_RESYNC,
  EV_GPU_LOCK,
  EV_JOB_DONE,
  EV_JOB_EVICTED,
  EV_JOB_QUEUED,
  EV_MEMORY,
  EV_PARTITION,
  EV_QUEUE_DEPTH,
  EV_SYNTH_ACTIVE,
  EV_WORKER,
  type EventRecord,
} from '../../src/engine/model/event-layout';
import {
  KIND_SLOTS,
  OTHER_KIND_INDEX,
  OUTCOME_CANCELLED,
  OUTCOME_COMPLETED,
  OUTCOME_FAILED,
  PART_DONE,
  PART_FAILED,
  PART_FINALIZING,
  PART_GPU,
  PART_PENDING,
  PART_SYNTHESIZING,
  PART_SYNTH_DONE,
  kindIndex,
} from '../../src/engine/model/kinds';

const MS = 1e6;
const S = 1e9;
const KIND = kindIndex('porep-c2');

function model(workers = 2, gpus = 2): StateModel {
  const m = new StateModel();
  m.setTopology(
    {
      gpus: Array.from({ length: gpus }, (_, i) => ({ ordinal: i, name: `g${i}` })),
      workers: Array.from({ length: workers }, (_, i) => ({ id: i, gpu: i % gpus })),
      lockEvents: false,
    },
    0,
  );
  return m;
}

const P = (state: string, synth: number | null = null, gpu: number | null = null, extra: Record<string, unknown> = {}) => ({ state, synth_ms: synth, gpu_ms: gpu, ...extra });

function status(jobs: Record<string, Array<ReturnType<typeof P>>>, workers: Partial<CuzkWorker>[] = [], extra: Partial<CuzkStatus> = {}, pextra: Record<string, Record<string, unknown>> = {}): CuzkStatus {
  return {
    uptime_secs: 1000,
    pipelines: Object.entries(jobs).map(([job_id, parts]) => ({
      job_id,
      proof_kind: 'porep-c2',
      started_secs_ago: 1,
      total_partitions: parts.length,
      partitions_done: 0,
      partitions: parts.map((p, index) => ({ index, ...p }) as CuzkPartition),
      ...pextra[job_id],
    })),
    gpu_workers: workers.map((w, i) => ({ worker_id: i, gpu_ordinal: 0, state: 'idle', current_job: null, current_partition: null, busy_secs: null, ...w }) as CuzkWorker),
    ...extra,
  };
}

/** Handles: job "jN" is N. */
const mapping = (snapshotNs: number, native = false, slots?: (w: CuzkWorker) => number): ViewMapping => ({
  pipelineHandle: (p) => Number(p.job_id.slice(1)),
  workerJobHandle: (w) => (w.current_job ? Number(w.current_job.slice(1)) : 0),
  kindSlot: (k) => (kindIndex(k) >= 0 ? kindIndex(k) : OTHER_KIND_INDEX),
  workerSlot: slots ?? ((w) => w.worker_id),
  snapshotNs,
  useBusySinceNs: native,
});

const opts = (tNs: number, o: Partial<SyncOptions> = {}): SyncOptions => ({ tNs, resync: false, evictMissing: true, countProofs: true, ...o });

function sync(m: StateModel, s: CuzkStatus | SnapshotView, o: SyncOptions, native = false): EventRecord[] {
  const view = 'uptime_secs' in s ? viewFromStatus(s, mapping(o.tNs, native)) : s;
  return snapshotToEvents(m, view, o);
}
function apply(m: StateModel, s: CuzkStatus | SnapshotView, o: SyncOptions, native = false): EventRecord[] {
  const r = sync(m, s, o, native);
  m.applyRecords(r, !o.resync);
  return r;
}
const parts = (r: EventRecord[]) => r.filter((e) => e.type === EV_PARTITION).map((e) => [e.partition, e.aux, e.value ?? 0, e.flags ?? 0]);
const ofType = (r: EventRecord[], t: number) => r.filter((e) => e.type === t);

describe('viewFromStatus', () => {
  test('partition states, durations, abandoned; "finalizing": true next to "gpu" is finalizing', () => {
    const s = status({ j1: [P('pending'), P('synthesizing', 5), P('synth_done', 6), P('gpu', 6, 2), P('gpu', 6, 3, { finalizing: true }), P('done', 6, 4), P('failed', 6, null, { abandoned: true }), P('synth_done', 1, null, { finalizing: true })] });
    const v = viewFromStatus(s, mapping(0));
    expect(v.pipelines).toHaveLength(1);
    const p = v.pipelines[0];
    expect(p.handle).toBe(1);
    expect(p.kind).toBe(KIND);
    expect(p.priority).toBe(0);
    expect(Array.from(p.states)).toEqual([PART_PENDING, PART_SYNTHESIZING, PART_SYNTH_DONE, PART_GPU, PART_FINALIZING, PART_DONE, PART_FAILED, PART_SYNTH_DONE]);
    expect(Array.from(p.synthMs)).toEqual([null, 5, 6, 6, 6, 6, 6, 1]);
    expect(Array.from(p.gpuMs)).toEqual([null, null, null, 2, 3, 4, null, null]);
    expect(Array.from(p.abandoned!)).toEqual([false, false, false, false, false, false, true, false]);
    expect(p.outcome).toBeNull();
    expect(p.finSinceNs).toBeUndefined(); // another clock: never read
  });
  test('finalizing_since_ns only on the native clock, only a finite non-negative number', () => {
    const s = status({ j2: [P('gpu', 1, 1, { finalizing: true, finalizing_since_ns: 5 }), P('gpu', 1, 1, { finalizing_since_ns: -1 }), P('gpu', 1, 1, { finalizing_since_ns: '5' }), P('gpu', 1, 1, { finalizing_since_ns: 0 }), P('gpu', 1, 1)] });
    expect(Array.from(viewFromStatus(s, mapping(0, true)).pipelines[0].finSinceNs!)).toEqual([5, null, null, 0, null]);
    const inf = status({ j2: [P('gpu', 1, 1, { finalizing_since_ns: Infinity })] });
    expect(Array.from(viewFromStatus(inf, mapping(0, true)).pipelines[0].finSinceNs!)).toEqual([null]);
    // useBusySinceNs absent: on (the native engine's default)
    const m = { ...mapping(0), useBusySinceNs: undefined };
    expect(Array.from(viewFromStatus(s, m).pipelines[0].finSinceNs!)).toEqual([5, null, null, 0, null]);
  });
  test('outcome: the field when given, else all partitions ended (failed if any failed), else running', () => {
    const o = (parts: Array<ReturnType<typeof P>>, outcome?: string) => viewFromStatus(status({ j1: parts }, [], {}, outcome === undefined ? {} : { j1: { outcome } }), mapping(0)).pipelines[0].outcome;
    expect(o([P('done')])).toBe(OUTCOME_COMPLETED);
    expect(o([P('done'), P('failed')])).toBe(OUTCOME_FAILED);
    expect(o([P('failed'), P('done')])).toBe(OUTCOME_FAILED);
    expect(o([P('done'), P('gpu')])).toBeNull();
    expect(o([P('pending'), P('done')])).toBeNull();
    expect(o([])).toBe(OUTCOME_COMPLETED);
    expect(o([P('gpu')], 'completed')).toBe(OUTCOME_COMPLETED);
    expect(o([P('done')], 'failed')).toBe(OUTCOME_FAILED);
    expect(o([P('done')], 'cancelled')).toBe(OUTCOME_CANCELLED);
    expect(o([P('done')], 'running')).toBeNull();
    expect(o([P('failed')], 'something-new')).toBe(OUTCOME_FAILED);
  });
  test('priority and kind as mapped', () => {
    const s = status({ j3: [P('pending')] }, [], {}, { j3: { priority: 7, proof_kind: 'snap-update' } });
    const p = viewFromStatus(s, mapping(0)).pipelines[0];
    expect(p.priority).toBe(7);
    expect(p.kind).toBe(kindIndex('snap-update'));
  });
  test('workers: slots as mapped (unknown ones left out); busy ones with job, partition, kind; stints from busy_secs capped at the uptime', () => {
    const s = status({}, [{}, { state: 'proving', current_job: 'j4', current_partition: 2, busy_secs: 3, current_kind: 'snap-update' }, { state: 'proving', current_job: 'j5', current_partition: 0, busy_secs: 5000 }, { state: 'idle', current_job: 'j9', current_partition: 1, busy_secs: 2, current_kind: 'snap-update' }]);
    const v = viewFromStatus(s, mapping(2000 * S, false, (w) => (w.worker_id === 0 ? -1 : w.worker_id)));
    expect(v.workers).toEqual([
      { slot: 1, busy: true, handle: 4, partition: 2, kind: kindIndex('snap-update'), busySinceNs: 1997 * S, exactSince: false },
      { slot: 2, busy: true, handle: 5, partition: 0, kind: OTHER_KIND_INDEX, busySinceNs: 1000 * S, exactSince: false },
      { slot: 3, busy: false, handle: 0, partition: -1, kind: OTHER_KIND_INDEX, busySinceNs: 1998 * S, exactSince: false },
    ]);
    // busy_secs null: the stint starts at the snapshot
    const n = viewFromStatus(status({}, [{ state: 'proving', current_job: 'j1', current_partition: 0, busy_secs: null }]), mapping(50 * S));
    expect(n.workers[0].busySinceNs).toBe(50 * S);
  });
  test('native: busy_since_ns is the exact stint start where given; GPU locks read', () => {
    const s = status({}, [{ state: 'proving', current_job: 'j1', current_partition: 0, busy_secs: 3, busy_since_ns: 123 } as Partial<CuzkWorker>, { state: 'proving', current_job: 'j1', current_partition: 1, busy_secs: 3 }], {
      gpus: [
        { ordinal: 0, name: 'a', lock_held: true, lock_since_ns: 77 },
        { ordinal: 1, name: 'b', lock_held: false },
        { ordinal: 2, name: 'c' },
        { ordinal: 3, name: 'd', lock_held: true },
      ],
    });
    const v = viewFromStatus(s, mapping(10 * S, true));
    expect(v.workers.map((w) => [w.busySinceNs, w.exactSince])).toEqual([
      [123, true],
      [7 * S, false],
    ]);
    expect(v.gpus).toEqual([
      { slot: 0, lockHeld: true, lockSinceNs: 77 },
      { slot: 1, lockHeld: false, lockSinceNs: 10 * S },
      { slot: 3, lockHeld: true, lockSinceNs: 10 * S },
    ]);
    // attached (another clock): busy_since_ns ignored, no GPU locks
    const a = viewFromStatus(s, mapping(10 * S, false));
    expect(a.workers.map((w) => [w.busySinceNs, w.exactSince])).toEqual([
      [7 * S, false],
      [7 * S, false],
    ]);
    expect(a.gpus).toEqual([]);
  });
  test('gauges: memory used, synthesis active, queue depth by kind slot (kinds mapping to one slot add up); 0 when absent', () => {
    const s = status({}, [], {
      memory: { total_bytes: 10, used_bytes: 4, available_bytes: 6 },
      synthesis: { max_concurrent: 2, active: 1 },
      counters: { total_completed: 0, total_failed: 0, completed_by_kind: {}, failed_by_kind: {}, queue_depth: 9, queue_depth_by_kind: { 'porep-c2': 3, weird: 2, other2: 4 } },
    });
    const v = viewFromStatus(s, mapping(0));
    expect(v.memoryUsedBytes).toBe(4);
    expect(v.synthesisActive).toBe(1);
    expect(v.queueDepthByKind).toHaveLength(KIND_SLOTS);
    expect(v.queueDepthByKind[KIND]).toBe(3);
    expect(v.queueDepthByKind[OTHER_KIND_INDEX]).toBe(6);
    const e = viewFromStatus(status({}), mapping(0));
    expect([e.memoryUsedBytes, e.synthesisActive, Array.from(e.queueDepthByKind).every((x) => x === 0)]).toEqual([0, 0, true]);
  });
});

describe('snapshotToEvents', () => {
  test('a new job is queued with its kind, partition count and priority (never below 0)', () => {
    const m = model();
    const r = sync(m, status({ j1: [P('pending'), P('pending')], j2: [P('pending')] }, [], {}, { j1: { priority: 3 }, j2: { priority: -4 } }), opts(5));
    expect(ofType(r, EV_JOB_QUEUED)).toEqual([
      { seq: 0, tNs: 5, flags: 0, type: EV_JOB_QUEUED, job: 1, kind: KIND, partition: 2, value: 3 },
      { seq: 0, tNs: 5, flags: 0, type: EV_JOB_QUEUED, job: 2, kind: KIND, partition: 1, value: 0 },
    ]);
    apply(m, status({ j1: [P('pending'), P('pending')] }), opts(5));
    expect(ofType(sync(m, status({ j1: [P('pending'), P('pending')] }), opts(6)), EV_JOB_QUEUED)).toEqual([]);
  });
  test('every stage passed between two snapshots once, with its duration (ms -> ns)', () => {
    const m = model();
    const r = apply(m, status({ j1: [P('pending'), P('synthesizing', 1), P('synth_done', 10), P('gpu', 10, 1), P('done', 10, 20), P('gpu', 10, 2, { finalizing: true })] }), opts(5));
    expect(parts(r)).toEqual([
      [1, PART_SYNTHESIZING, 0, 0],
      [2, PART_SYNTH_DONE, 10 * MS, 0],
      [3, PART_SYNTH_DONE, 10 * MS, 0],
      [3, PART_GPU, 0, 0],
      [4, PART_SYNTH_DONE, 10 * MS, 0],
      [4, PART_GPU, 0, 0],
      [4, PART_DONE, 20 * MS, 0],
      [5, PART_SYNTH_DONE, 10 * MS, 0],
      [5, PART_GPU, 0, 0],
      [5, PART_FINALIZING, 0, EVF_RESYNC], // when the kernels ended: unknown
    ]);
    // next: what changed since, from where each partition was
    const r2 = apply(m, status({ j1: [P('synth_done', 12), P('gpu', 11, 3), P('done', 10, 30), P('done', 10, 40), P('done', 10, 20), P('done', 10, 50)] }), opts(6));
    expect(parts(r2)).toEqual([
      [0, PART_SYNTH_DONE, 12 * MS, 0],
      [1, PART_SYNTH_DONE, 11 * MS, 0],
      [1, PART_GPU, 0, 0],
      [2, PART_GPU, 0, 0],
      [2, PART_DONE, 30 * MS, 0],
      [3, PART_DONE, 40 * MS, 0],
      [5, PART_DONE, 50 * MS, 0],
    ]);
    // ended partitions never move again, even if the snapshot says otherwise
    expect(parts(sync(m, status({ j1: [P('synth_done', 12), P('gpu', 11, 3), P('pending'), P('synthesizing'), P('failed'), P('gpu', 1, 1)] }), opts(7)))).toEqual([]);
  });
  test('a stage whose time the snapshot does not give counts 0', () => {
    const m = model();
    expect(parts(sync(m, status({ j1: [P('done', null, 0), P('gpu', null, null)] }), opts(5)))).toEqual([
      [0, PART_SYNTH_DONE, 0, 0],
      [0, PART_GPU, 0, 0],
      [0, PART_DONE, 0, 0],
      [1, PART_SYNTH_DONE, 0, 0],
      [1, PART_GPU, 0, 0],
    ]);
  });
  test('failures: before synthesis ended (no synth time) the partition fails there; after it, at the stage reached; abandoned ones flagged', () => {
    const m = model();
    const r = sync(
      m,
      status({ j1: [P('failed', null, null), P('failed', null, null, { abandoned: true }), P('failed', 10, null), P('failed', 10, 7, { abandoned: true }), P('failed', 10, null, { abandoned: true })] }),
      opts(5),
    );
    expect(parts(r)).toEqual([
      [0, PART_FAILED, 0, 0],
      [1, PART_FAILED, 0, EVF_ABANDONED],
      [2, PART_SYNTH_DONE, 10 * MS, 0],
      [2, PART_FAILED, 0, 0],
      [3, PART_SYNTH_DONE, 10 * MS, 0],
      [3, PART_GPU, 0, 0],
      [3, PART_FAILED, 7 * MS, EVF_ABANDONED],
      [4, PART_SYNTH_DONE, 10 * MS, 0],
      [4, PART_FAILED, 0, EVF_ABANDONED],
    ]);
    // a partition already on the GPU that fails: just the failure
    apply(m, status({ j1: [P('gpu', 1, 1), P('pending'), P('pending'), P('pending'), P('pending')] }), opts(5));
    expect(parts(sync(m, status({ j1: [P('failed', 1, 2), P('pending'), P('pending'), P('pending'), P('pending')] }), opts(6)))).toEqual([[0, PART_FAILED, 2 * MS, 0]]);
  });
  test('a partition that went back (retried) is state only; resync records are all flagged', () => {
    const m = model();
    apply(m, status({ j1: [P('gpu', 1, 1), P('synth_done', 1)] }), opts(5));
    expect(parts(sync(m, status({ j1: [P('synthesizing', 1), P('pending')] }), opts(6)))).toEqual([
      [0, PART_SYNTHESIZING, 0, EVF_RESYNC], // state only: EVF_RESYNC (event-layout.ts)
      [1, PART_PENDING, 0, EVF_RESYNC],
    ]);
    const r = sync(m, status({ j1: [P('synthesizing', 1), P('done', 1, 4)] }), opts(6, { resync: true }));
    expect(r.length).toBeGreaterThan(0);
    for (const e of r) expect((e.flags ?? 0) & EVF_RESYNC).toBe(EVF_RESYNC);
  });
  test('finalizing: on the native clock the record is at finalizing_since_ns and not state-only, even in a resync', () => {
    const m = model();
    apply(m, status({ j1: [P('gpu', 1, 1)] }), opts(5));
    const r = sync(m, status({ j1: [P('gpu', 1, 2, { finalizing: true, finalizing_since_ns: 3 * MS })] }), opts(9 * MS, { resync: true }), true);
    expect(r.filter((e) => e.type === EV_PARTITION)).toEqual([{ seq: 0, tNs: 3 * MS, flags: 0, type: EV_PARTITION, job: 1, partition: 0, aux: PART_FINALIZING }]);
    const a = sync(m, status({ j1: [P('gpu', 1, 2, { finalizing: true })] }), opts(9 * MS), true);
    expect(a.filter((e) => e.type === EV_PARTITION)).toEqual([{ seq: 0, tNs: 9 * MS, flags: EVF_RESYNC, type: EV_PARTITION, job: 1, partition: 0, aux: PART_FINALIZING }]);
  });
  test('a job that ended: done once with its outcome and duration; state only unless proofs are counted', () => {
    const m = model();
    const s = status({ j1: [P('done', 1, 1)], j2: [P('gpu', 1, 1)] }, [], {}, { j2: { outcome: 'cancelled' } });
    const view = viewFromStatus(s, mapping(5));
    view.pipelines[0].durationNs = 42;
    const r = snapshotToEvents(m, view, opts(5));
    expect(ofType(r, EV_JOB_DONE)).toEqual([
      { seq: 0, tNs: 5, flags: 0, type: EV_JOB_DONE, job: 1, kind: KIND, aux: OUTCOME_COMPLETED, value: 42 },
      { seq: 0, tNs: 5, flags: 0, type: EV_JOB_DONE, job: 2, kind: KIND, aux: OUTCOME_CANCELLED, value: 0 },
    ]);
    expect(ofType(snapshotToEvents(m, view, opts(5, { countProofs: false })), EV_JOB_DONE).map((e) => e.flags)).toEqual([EVF_RESYNC, EVF_RESYNC]);
    m.applyRecords(r, true);
    expect(m.jobs.get(1)!.finished).toBe(true);
    expect(ofType(snapshotToEvents(m, view, opts(6)), EV_JOB_DONE)).toEqual([]);
  });
  test('jobs gone from the snapshot are ended (outcome from their partitions) and evicted, unless kept or not evicting', () => {
    const m = model();
    apply(m, status({ j1: [P('done', 1, 1)], j2: [P('failed'), P('gpu', 1, 1)], j3: [P('gpu', 1, 1)], j4: [P('gpu', 1, 1)] }), opts(5));
    expect(m.jobs.get(1)!.finished).toBe(true);
    const r = sync(m, status({ j4: [P('gpu', 1, 1)] }), opts(6, { keep: new Set([3]) }));
    expect(r.filter((e) => e.type === EV_JOB_DONE || e.type === EV_JOB_EVICTED)).toEqual([
      { seq: 0, tNs: 6, flags: 0, type: EV_JOB_EVICTED, job: 1, kind: KIND },
      { seq: 0, tNs: 6, flags: EVF_RESYNC, type: EV_JOB_DONE, job: 2, kind: KIND, aux: OUTCOME_FAILED, value: 0 },
      { seq: 0, tNs: 6, flags: 0, type: EV_JOB_EVICTED, job: 2, kind: KIND },
    ]);
    const c = sync(m, status({}), opts(6, { keep: new Set([3]) }));
    expect(c.filter((e) => e.type === EV_JOB_DONE).map((e) => [e.job, e.aux])).toEqual([
      [2, OUTCOME_FAILED],
      [4, OUTCOME_COMPLETED],
    ]);
    expect(sync(m, status({}), opts(6, { evictMissing: false })).filter((e) => e.type === EV_JOB_DONE || e.type === EV_JOB_EVICTED)).toEqual([]);
    expect(sync(m, status({}), opts(6)).filter((e) => e.type === EV_JOB_EVICTED).map((e) => e.job)).toEqual([1, 2, 3, 4]);
  });
  test('workers: a new stint starts at its start; one seen ended is credited what it was seen busy (at least), or its partition\'s final GPU time', () => {
    const m = model(3);
    const busy = (job: string, part: number, secs: number) => ({ state: 'proving', current_job: job, current_partition: part, busy_secs: secs });
    const r = sync(m, status({ j1: [P('gpu', 1, 1), P('gpu', 1, 1), P('gpu', 1, 1)] }, [busy('j1', 0, 2), busy('j1', 1, 1), {}]), opts(100 * S));
    expect(ofType(r, EV_WORKER)).toEqual([
      { seq: 0, tNs: 98 * S, flags: 0, type: EV_WORKER, worker: 0, gpu: 0, job: 1, partition: 0, kind: OTHER_KIND_INDEX, aux: 1 },
      { seq: 0, tNs: 99 * S, flags: 0, type: EV_WORKER, worker: 1, gpu: 1, job: 1, partition: 1, kind: OTHER_KIND_INDEX, aux: 1 },
    ]);
    m.applyRecords(r, true);
    expect([m.wBusy[0], m.wBusy[1], m.wSinceNs[0]]).toEqual([1, 1, 98 * S]);
    // The same stints again: nothing
    expect(ofType(sync(m, status({ j1: [P('gpu', 1, 1), P('gpu', 1, 1), P('gpu', 1, 1)] }, [busy('j1', 0, 3), busy('j1', 1, 2), {}]), opts(101 * S)), EV_WORKER)).toEqual([]);
    // Worker 0's partition is done with 5,000 ms of GPU time; worker 1 went idle with its
    // partition still on the GPU (no final time). Seen busy until 101 s (the floor).
    const end = sync(m, status({ j1: [P('done', 1, 5000), P('gpu', 1, 9000), P('gpu', 1, 1)] }, [{}, {}, {}]), opts(110 * S, { stintFloorNs: 101 * S }));
    expect(ofType(end, EV_WORKER)).toEqual([
      { seq: 0, tNs: 110 * S, flags: 0, type: EV_WORKER, worker: 0, gpu: 0, job: 1, partition: 0, aux: 0, value: 5 * S },
      { seq: 0, tNs: 110 * S, flags: 0, type: EV_WORKER, worker: 1, gpu: 1, job: 1, partition: 1, aux: 0, value: 2 * S },
    ]);
    // Worker-end records come before the partitions' records
    expect(end.findIndex((e) => e.type === EV_WORKER)).toBe(0);
    // A final GPU time shorter than what was seen: what was seen (the counter never goes down)
    const short = sync(m, status({ j1: [P('done', 1, 500), P('gpu', 1, 1), P('gpu', 1, 1)] }, [{}, busy('j1', 1, 12), {}]), opts(110 * S, { stintFloorNs: 101 * S }));
    expect(ofType(short, EV_WORKER).map((e) => [e.worker, e.aux, e.value])).toEqual([[0, 0, 3 * S]]);
    // Without a floor (native re-sync): until the snapshot; a final GPU time taken as it is
    const nf = sync(m, status({ j1: [P('done', 1, 500), P('gpu', 1, 1), P('gpu', 1, 1)] }, [{}, {}, {}]), opts(110 * S));
    expect(ofType(nf, EV_WORKER).map((e) => [e.worker, e.value])).toEqual([
      [0, 0.5 * S],
      [1, 11 * S],
    ]);
    // A floor before the stint began: nothing seen (never negative)
    const early = sync(m, status({ j1: [P('gpu', 1, 1), P('gpu', 1, 1), P('gpu', 1, 1)] }, [{}, {}, {}]), opts(110 * S, { stintFloorNs: 50 * S }));
    expect(ofType(early, EV_WORKER).map((e) => [e.worker, e.value])).toEqual([
      [0, 0],
      [1, 0],
    ]);
    // The job gone from the snapshot: only what was seen
    const gone = sync(m, status({}, [{}, {}, {}]), opts(110 * S, { stintFloorNs: 101 * S }));
    expect(ofType(gone, EV_WORKER).map((e) => [e.worker, e.value])).toEqual([
      [0, 3 * S],
      [1, 2 * S],
    ]);
  });
  test('a worker on another partition: the old stint ends and a new one starts, unless it is the same stint moving on (began before the previous look)', () => {
    const m = model(2);
    const busy = (part: number, secs: number) => ({ state: 'proving', current_job: 'j1', current_partition: part, busy_secs: secs });
    apply(m, status({ j1: [P('gpu', 1, 1), P('synth_done', 1), P('synth_done', 1)] }, [busy(0, 1), {}]), opts(100 * S));
    expect(m.wSinceNs[0]).toBe(99 * S);
    // picked up partition 1 within its stint (since 99 s, before the previous look at 100 s)
    const on = sync(m, status({ j1: [P('done', 1, 1), P('gpu', 1, 1), P('synth_done', 1)] }, [busy(1, 2), {}]), opts(101 * S, { stintFloorNs: 100 * S }));
    expect(ofType(on, EV_WORKER)).toEqual([{ seq: 0, tNs: 101 * S, flags: 0, type: EV_WORKER, worker: 0, gpu: 0, job: 1, partition: 1, kind: OTHER_KIND_INDEX, aux: 1 }]);
    // exactly at the floor: still the same stint
    const at = sync(m, status({ j1: [P('done', 1, 1), P('gpu', 1, 1), P('synth_done', 1)] }, [busy(1, 1), {}]), opts(101 * S, { stintFloorNs: 100 * S }));
    expect(ofType(at, EV_WORKER).map((e) => e.aux)).toEqual([1]);
    // a stint that began after the previous look: the old one ends, the new one starts at its start
    const nw = sync(m, status({ j1: [P('done', 1, 1), P('gpu', 1, 1), P('synth_done', 1)] }, [busy(1, 0.5), {}]), opts(101 * S, { stintFloorNs: 100 * S }));
    expect(ofType(nw, EV_WORKER).map((e) => [e.aux, e.tNs, e.partition])).toEqual([
      [0, 101 * S, 0],
      [1, 100.5 * S, 1],
    ]);
    // no floor (native): a move is always a new stint
    const nat = sync(m, status({ j1: [P('done', 1, 1), P('gpu', 1, 1), P('synth_done', 1)] }, [busy(1, 2), {}]), opts(101 * S));
    expect(ofType(nat, EV_WORKER).map((e) => [e.aux, e.tNs])).toEqual([
      [0, 101 * S],
      [1, 99 * S],
    ]);
    // another job, same partition index: another stint
    const other = sync(m, status({ j1: [P('done', 1, 1), P('gpu', 1, 1), P('synth_done', 1)], j2: [P('gpu', 1, 1)] }, [{ state: 'proving', current_job: 'j2', current_partition: 0, busy_secs: 0.5 }, {}]), opts(101 * S));
    expect(ofType(other, EV_WORKER).map((e) => [e.aux, e.job])).toEqual([
      [0, 1],
      [1, 2],
    ]);
  });
  test('native: the same partition with another exact start is another stint (a lost end); the same start is nothing', () => {
    const m = model(1);
    const w = (since: number) => ({ state: 'proving', current_job: 'j1', current_partition: 0, busy_secs: 1, busy_since_ns: since }) as Partial<CuzkWorker>;
    apply(m, status({ j1: [P('gpu', 1, 1)] }, [w(5 * S)]), opts(10 * S, { resync: true }), true);
    expect(m.wSinceNs[0]).toBe(5 * S);
    expect(ofType(sync(m, status({ j1: [P('gpu', 1, 1)] }, [w(5 * S)]), opts(11 * S, { resync: true }), true), EV_WORKER)).toEqual([]);
    const r = sync(m, status({ j1: [P('gpu', 1, 1)] }, [w(7 * S)]), opts(11 * S, { resync: true }), true);
    expect(ofType(r, EV_WORKER).map((e) => [e.aux, e.tNs])).toEqual([
      [0, 11 * S],
      [1, 7 * S],
    ]);
    // attached (not exact): the same partition is the same stint whatever busy_secs says
    const a = model(1);
    apply(a, status({ j1: [P('gpu', 1, 1)] }, [w(5 * S)]), opts(10 * S));
    expect(ofType(sync(a, status({ j1: [P('gpu', 1, 1)] }, [w(7 * S)]), opts(11 * S)), EV_WORKER)).toEqual([]);
  });
  test('workers outside the model\'s slots are ignored', () => {
    const m = model(1);
    const busy = { state: 'proving', current_job: 'j1', current_partition: 0, busy_secs: 1 };
    const view = viewFromStatus(status({ j1: [P('gpu', 1, 1)] }, [busy, busy]), mapping(10 * S));
    expect(view.workers.map((w) => w.slot)).toEqual([0, 1]);
    const r = snapshotToEvents(m, view, opts(10 * S));
    expect(ofType(r, EV_WORKER).map((e) => e.worker)).toEqual([0]);
    m.applyRecords(r, true);
    // worker 1 (no slot) "going idle" is nothing either
    view.workers = [{ ...view.workers[0] }, { ...view.workers[1], busy: false }];
    expect(ofType(snapshotToEvents(m, view, opts(11 * S)), EV_WORKER)).toEqual([]);
  });
  test('GPU locks (native re-sync): restored where they differ, at the lock\'s start; released at the snapshot', () => {
    const m = model(1, 2);
    const g = (slot: number, lockHeld: boolean, lockSinceNs: number) => ({ slot, lockHeld, lockSinceNs });
    const view = (gpus: ReturnType<typeof g>[]): SnapshotView => ({ memoryUsedBytes: 0, synthesisActive: 0, queueDepthByKind: new Float64Array(KIND_SLOTS), pipelines: [], workers: [], gpus });
    const r = snapshotToEvents(m, view([g(0, true, 3), g(1, false, 4), g(5, true, 1)]), opts(10, { resync: true }));
    expect(r).toEqual([{ seq: 0, tNs: 3, flags: EVF_RESYNC | EVF_FIRST, type: EV_GPU_LOCK, gpu: 0, aux: 1 }]);
    m.applyRecords(r, false);
    expect([m.gLockHeld[0], m.gLockSinceNs[0]]).toEqual([1, 3]);
    expect(snapshotToEvents(m, view([g(0, true, 3)]), opts(10, { resync: true }))).toEqual([]);
    // another hold (a lost release and take)
    expect(snapshotToEvents(m, view([g(0, true, 8)]), opts(10, { resync: true }))).toEqual([{ seq: 0, tNs: 8, flags: EVF_RESYNC | EVF_FIRST, type: EV_GPU_LOCK, gpu: 0, aux: 1 }]);
    expect(snapshotToEvents(m, view([g(0, false, 8)]), opts(10))).toEqual([{ seq: 0, tNs: 10, flags: EVF_FIRST, type: EV_GPU_LOCK, gpu: 0, aux: 0 }]);
    // no gpus in the view: nothing
    expect(snapshotToEvents(m, { ...view([]), gpus: undefined }, opts(10))).toEqual([]);
  });
  test('gauges: a record only for what changed, last', () => {
    const m = model();
    const view = (q: number, synth: number, mem: number): SnapshotView => {
      const qd = new Float64Array(KIND_SLOTS);
      qd[KIND] = q;
      qd[KIND_SLOTS - 1] = 1;
      return { memoryUsedBytes: mem, synthesisActive: synth, queueDepthByKind: qd, pipelines: [], workers: [] };
    };
    const r = snapshotToEvents(m, view(3, 2, 100), opts(5));
    expect(r).toEqual([
      { seq: 0, tNs: 5, flags: 0, type: EV_QUEUE_DEPTH, kind: KIND, value: 3 },
      { seq: 0, tNs: 5, flags: 0, type: EV_QUEUE_DEPTH, kind: KIND_SLOTS - 1, value: 1 },
      { seq: 0, tNs: 5, flags: 0, type: EV_SYNTH_ACTIVE, value: 2 },
      { seq: 0, tNs: 5, flags: 0, type: EV_MEMORY, value: 100 },
    ]);
    m.applyRecords(r, true);
    expect(snapshotToEvents(m, view(3, 2, 100), opts(6))).toEqual([]);
    expect(snapshotToEvents(m, view(0, 2, 100), opts(6))).toEqual([{ seq: 0, tNs: 6, flags: 0, type: EV_QUEUE_DEPTH, kind: KIND, value: 0 }]);
    // a short queue-depth array: missing kinds are 0
    const short: SnapshotView = { ...view(3, 2, 100), queueDepthByKind: [5] as unknown as Float64Array };
    const rs = snapshotToEvents(m, short, opts(6));
    expect(rs.map((e) => [e.type, e.kind, e.value])).toEqual([
      [EV_QUEUE_DEPTH, KIND, 5],
      [EV_QUEUE_DEPTH, KIND_SLOTS - 1, 0],
    ]);
  });
  test('end to end: two polls of cuzk count each finished partition\'s GPU time once', () => {
    const m = model(1);
    const busy = { state: 'proving', current_job: 'j1', current_partition: 0, busy_secs: 1 };
    apply(m, status({ j1: [P('gpu', 100, 10), P('synth_done', 100)] }, [busy]), opts(100 * S));
    const r2 = apply(m, status({ j1: [P('done', 100, 300), P('gpu', 100, 10)] }, [{ ...busy, current_partition: 1, busy_secs: 0.1 }]), opts(101 * S, { stintFloorNs: 100 * S }));
    const r3 = apply(m, status({ j1: [P('done', 100, 300), P('done', 100, 200)] }, [{}]), opts(102 * S, { stintFloorNs: 101 * S }));
    expect(m.kGpuNs[KIND]).toBe(500 * MS);
    // stint 1 (99 s - seen until 100 s): 1 s > its partition's 300 ms; stint 2 (100.9 s -
    // seen until 101 s): 0.1 s < its partition's 200 ms
    const ends = [...r2, ...r3].filter((e) => e.type === EV_WORKER && e.aux === 0).map((e) => e.value);
    expect(ends.map((v) => Math.round(v! / MS))).toEqual([1000, 200]);
  });
});

/**
 * Edges found by the mutation triage (test/mutation/files/engine-sources.md), each from the
 * header's rules, the layout's flag meanings (event-layout.ts), docs/status-json.md and
 * upstream cuzk's status.rs (gpu_ms runs from gpu_start while the stage runs; busy_secs is
 * the current stint, null when idle).
 */
describe('snapshotToEvents: edges', () => {
  const busyOn = (job: string, part: number | null, secs: number | null) => ({ state: 'proving', current_job: job, current_partition: part, busy_secs: secs }) as Partial<CuzkWorker>;

  test('a failed partition never moves again, whatever a later snapshot says (ended = done or failed)', () => {
    const m = model();
    apply(m, status({ j1: [P('failed', 1, null), P('failed', null, null), P('pending')] }), opts(5));
    expect(Array.from(m.jobs.get(1)!.states)).toEqual([PART_FAILED, PART_FAILED, PART_PENDING]);
    for (const later of [P('pending'), P('synthesizing', 1), P('synth_done', 1), P('gpu', 1, 1), P('gpu', 1, 1, { finalizing: true }), P('done', 1, 1)]) {
      expect([later.state, parts(apply(m, status({ j1: [later, later, P('pending')] }), opts(6)))]).toEqual([later.state, []]);
    }
    expect(Array.from(m.jobs.get(1)!.states)).toEqual([PART_FAILED, PART_FAILED, PART_PENDING]);
    expect(m.kPartsCompleted[KIND]).toBe(0);
  });

  test('went back from the GPU to synth_done, and from finalizing to gpu: the state moves back, as state only (EVF_RESYNC), nothing observed', () => {
    const m = model();
    const synth: number[] = [];
    m.observer = { partitionGpu: () => undefined, partitionSynthesis: (_k, s) => synth.push(s), proofDone: () => undefined, queueWait: () => undefined, gpuIdleGap: () => undefined };
    apply(m, status({ j1: [P('gpu', 10, 1), P('gpu', 10, 1, { finalizing: true })] }), opts(5));
    expect(Array.from(m.jobs.get(1)!.states)).toEqual([PART_GPU, PART_FINALIZING]);
    expect(synth).toEqual([0.01, 0.01]);
    const r = apply(m, status({ j1: [P('synth_done', 10), P('gpu', 10, 2)] }), opts(6));
    expect(Array.from(m.jobs.get(1)!.states)).toEqual([PART_SYNTH_DONE, PART_GPU]);
    // going back finished no synthesis: no 0-second synthesis observed, none added
    expect(synth).toEqual([0.01, 0.01]);
    expect(m.kSynthNs[KIND]).toBe(20 * MS);
    expect(parts(r)).toEqual([
      [0, PART_SYNTH_DONE, 0, EVF_RESYNC],
      [1, PART_GPU, 0, EVF_RESYNC],
    ]);
  });

  test('first seen synthesizing again with a gpu_ms (cuzk keeps a partition\'s gpu_start): the one state, no GPU stage passed', () => {
    const m = model();
    expect(parts(sync(m, status({ j1: [P('synthesizing', 3, 7)] }), opts(5)))).toEqual([[0, PART_SYNTHESIZING, 0, 0]]);
  });

  test('finalizing whose gpu_ms is not given: it passed the GPU stage (one GPU record), then finalizing', () => {
    const m = model();
    apply(m, status({ j1: [P('synth_done', 10), P('pending')] }), opts(5));
    expect(parts(sync(m, status({ j1: [P('gpu', 10, null, { finalizing: true }), P('pending')] }), opts(6)))).toEqual([
      [0, PART_GPU, 0, 0],
      [0, PART_FINALIZING, 0, EVF_RESYNC],
    ]);
    // new job straight to finalizing, no times: synth done, GPU, finalizing
    expect(parts(sync(model(), status({ j2: [P('gpu', null, null, { finalizing: true })] }), opts(6)))).toEqual([
      [0, PART_SYNTH_DONE, 0, 0],
      [0, PART_GPU, 0, 0],
      [0, PART_FINALIZING, 0, EVF_RESYNC],
    ]);
  });

  test('"abandoned" marks a failed partition only: a done one is not flagged (EVF_ABANDONED is a move to FAILED)', () => {
    const m = model();
    apply(m, status({ j1: [P('gpu', 1, 1), P('pending')] }), opts(5));
    const r = apply(m, status({ j1: [P('done', 1, 5, { abandoned: true }), P('pending')] }), opts(6));
    expect(parts(r)).toEqual([[0, PART_DONE, 5 * MS, 0]]);
    expect(m.kPartsCompleted[KIND]).toBe(1);
  });

  test('a GPU lock for the ordinal just past the model\'s GPUs: no record', () => {
    const m = model(1, 2);
    const view: SnapshotView = { memoryUsedBytes: 0, synthesisActive: 0, queueDepthByKind: new Float64Array(KIND_SLOTS), pipelines: [], workers: [], gpus: [{ slot: 2, lockHeld: true, lockSinceNs: 3 }] };
    expect(snapshotToEvents(m, view, opts(10, { resync: true }))).toEqual([]);
  });

  test('a proving worker whose job and partition are not known (job handle 0, partition -1): busy while proving, idle when idle', () => {
    // viewFromStatus: a busy worker without current_partition is on no partition (-1, the
    // model's "none"), never on a real partition index.
    const v = viewFromStatus(status({}, [busyOn('j7', null, 1)]), mapping(10 * S));
    expect(v.workers.map((w) => [w.busy, w.handle, w.partition])).toEqual([[true, 7, -1]]);
    const m = model(1);
    const unknown = status({}, [{ state: 'proving', current_job: null, current_partition: null, busy_secs: 2 } as Partial<CuzkWorker>]);
    const r = apply(m, unknown, opts(10 * S));
    expect(ofType(r, EV_WORKER).map((e) => [e.aux, e.tNs, e.job, e.partition])).toEqual([[1, 8 * S, 0, -1]]);
    expect([m.wBusy[0], m.busyWorkers]).toEqual([1, 1]);
    const end = apply(m, status({}, [{}]), opts(12 * S, { stintFloorNs: 10 * S }));
    expect(ofType(end, EV_WORKER).map((e) => [e.aux, e.value])).toEqual([[0, 2 * S]]);
    expect([m.wBusy[0], m.busyWorkers]).toEqual([0, 0]);
  });

  test('an idle worker that still reports a busy_secs (cuzk sends null): its stint ended, credited what was seen', () => {
    const m = model(1);
    apply(m, status({ j1: [P('gpu', 1, 1)] }, [busyOn('j1', 0, 1)]), opts(100 * S));
    expect(m.wSinceNs[0]).toBe(99 * S);
    // idle at 110 s, reporting a 12 s "stint" (since 98 s, before the previous look at 100 s)
    const r = apply(m, status({ j1: [P('gpu', 1, 11000)] }, [{ busy_secs: 12 }]), opts(110 * S, { stintFloorNs: 100 * S }));
    expect(ofType(r, EV_WORKER).map((e) => [e.aux, e.value])).toEqual([[0, 1 * S]]);
    expect(m.wBusy[0]).toBe(0);
  });

  test('a worker not busy at the previous look, proving since before it: a new stint, from its start', () => {
    const m = model(1);
    apply(m, status({ j1: [P('synth_done', 1)] }, []), opts(100 * S)); // its entry missing then
    expect(m.wBusy[0]).toBe(0);
    const r = apply(m, status({ j1: [P('gpu', 1, 12000)] }, [busyOn('j1', 0, 12)]), opts(110 * S, { stintFloorNs: 100 * S }));
    expect(ofType(r, EV_WORKER).map((e) => [e.aux, e.tNs])).toEqual([[1, 98 * S]]);
    expect([m.wBusy[0], m.wSinceNs[0]]).toEqual([1, 98 * S]);
  });

  test('a stint seen ended is credited its own job\'s partition GPU time (not another job\'s at the same index)', () => {
    const m = model(1);
    apply(m, status({ j1: [P('gpu', 1, 1)], j2: [P('gpu', 1, 1)] }, [busyOn('j2', 0, 1)]), opts(100 * S));
    const r = sync(m, status({ j1: [P('done', 1, 7000)], j2: [P('done', 1, 5000)] }, [{}]), opts(110 * S, { stintFloorNs: 101 * S }));
    expect(ofType(r, EV_WORKER).map((e) => [e.job, e.value])).toEqual([[2, 5 * S]]);
  });

  test('a worker gone idle while its partition finalizes: gpu_ms is still running (not final), only what was seen is credited', () => {
    const m = model(1);
    apply(m, status({ j1: [P('gpu', 1, 1)] }, [busyOn('j1', 0, 1)]), opts(100 * S));
    const r = sync(m, status({ j1: [P('gpu', 1, 9000, { finalizing: true })] }, [{}]), opts(110 * S, { stintFloorNs: 101 * S }));
    expect(ofType(r, EV_WORKER).map((e) => [e.aux, e.value])).toEqual([[0, 2 * S]]);
  });
});
