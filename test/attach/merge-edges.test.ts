/**
 * Issue 23: the merge's own rules (merge.ts header, DESIGN §7), one at a time, with every
 * surface scripted on one clock — no servers, no timers, no sleeps. /status snapshots go in
 * through applyBody, GetStatus answers through applyStatus, GetMetrics through applyMetrics,
 * TIMELINE lines through lines()/caughtUp() with read times the test sets (as
 * crosscheck-tolerance.test.ts). Where time must pass on the exporter's own clock (the 10 s
 * after which a TIMELINE never readable gives way), the clock every surface reads
 * (surface.ts hrNowNs) is moved forward by the test.
 *
 * Expected values come from the table in merge.ts' header (which surface each area comes
 * from, chosen at start), its cross-check rules, and numbers the scripts fix.
 */
import * as surfaceClock from '../../src/engine/sources/attach/surface';
import { KIND_LABELS, OTHER_KIND_INDEX } from '../../src/engine/model/kinds';
import { MergedAttachSource } from '../../src/engine/sources/attach/merge';
import { createLogger } from '../../src/util/logger';
import { A, Rig, RigOptions, pick, realHr, rig } from './merge-rig';
import { idle, pipeline, proving, snapshot } from './snapshots';
import { tl } from './timeline-driver';

const B = 'porep-1000-7';
const WP = 'wpost-f01234-dl17-p0';
const kind = (k: string) => KIND_LABELS.indexOf(k);

/** The exporter's clock, moved forward by `skewNs` (the real one plus what the test added). */
let skewNs = 0;
beforeEach(() => {
  skewNs = 0;
  jest.spyOn(surfaceClock, 'hrNowNs').mockImplementation(() => realHr() + skewNs);
});
afterEach(() => jest.restoreAllMocks());

const idleBoth = (uptime: number) => snapshot({ uptime, workers: [idle(0, 0), idle(1, 0)] });

describe('which surface each area comes from (chosen at start)', () => {
  test('no surface at all is refused', () => {
    expect(() => new Rig({})).toThrow('attach needs at least one of --cuzk.status-url, --cuzk.grpc-address, --cuzk.timeline-file');
  });

  test.each([
    [{ status: true }, 'status', 'status', 'status', 'status'],
    [{ grpc: true }, 'grpc', null, 'grpc', 'grpc'],
    [{ timeline: true }, 'timeline', 'timeline', null, 'timeline'],
    [{ status: true, grpc: true }, 'status', 'status', 'grpc', 'grpc,status'],
    [{ status: true, timeline: true }, 'timeline', 'timeline', 'status', 'status,timeline'],
    [{ grpc: true, timeline: true }, 'timeline', 'timeline', 'grpc', 'grpc,timeline'],
    [{ status: true, grpc: true, timeline: true }, 'timeline', 'timeline', 'grpc', 'grpc,status,timeline'],
  ])('%j: workers %s, partitions %s, proofs %s, surfaces "%s"', (o, workers, partitions, proofs, names) => {
    const r = rig(o);
    expect([r.src.workerDriver, r.src.partitionDriver, r.src.proofsDriver, r.src.surfaceNames()]).toEqual([workers, partitions, proofs, names]);
    expect(r.src.currentDriver).toBe(workers);
    expect(r.src.surfaceStates().map((s) => [s.name, s.up, s.degraded])).toEqual(names.split(',').map((n) => [n, false, []]));
  });

  test('surface states name each target', () => {
    const r = rig({ status: true, grpc: true, timeline: true });
    expect(r.src.surfaceStates().map((s) => s.target)).toEqual(['127.0.0.1:9', 'http://127.0.0.1:9/status', '/nonexistent/cuzk.log']);
    expect(r.src.exporterStatus()).toEqual({ surfaces: r.src.surfaceStates(), surfaces_disagree: [] });
  });

  test('kind resolutions are TIMELINE’s (none without it)', () => {
    expect([...rig({ status: true, grpc: true }).src.kindResolutions()]).toEqual([]);
    const names = [...rig({ timeline: true }).src.kindResolutions()].map(([e]) => e);
    expect(names).toEqual(expect.arrayContaining(['status', 'grpc_status', 'grpc_metrics']));
  });

  test('the TIMELINE feed state goes to the TIMELINE surface (and is ignored without one)', () => {
    const r = rig({ status: true, timeline: true });
    r.src.timelineFeed(true, 'feed up');
    expect(r.src.timeline!.up).toBe(true);
    r.src.timelineFeed(false, 'feed down');
    expect(r.src.timeline!.up).toBe(false);
    expect(() => rig({ status: true }).src.timelineFeed(true, 'x')).not.toThrow();
  });
});

describe('proofs, queues, synthesis, memory, events, up', () => {
  const withCounters = (uptime: number, completed: Record<string, number>, failed: Record<string, number>, cancelled: Record<string, number>, extra: Record<string, unknown> = {}) => {
    const s = snapshot({ uptime, workers: [idle(0, 0)], completed, failed, ...extra });
    (s.counters as Record<string, unknown>).cancelled_by_kind = cancelled;
    return s;
  };

  test('/status alone: proofs completed, failed and cancelled are its counters’ increments', () => {
    const r = rig({ status: true });
    r.status(1000, withCounters(10, { 'porep-c2': 3 }, { 'porep-c2': 1 }, { 'porep-c2': 0 }));
    r.status(2000, withCounters(11, { 'porep-c2': 5 }, { 'porep-c2': 2 }, { 'porep-c2': 4 }));
    const m = r.refresh();
    expect([m.kProofsCompleted[kind('porep-c2')], m.kProofsFailed[kind('porep-c2')], m.kProofsCancelled[kind('porep-c2')]]).toEqual([2, 1, 4]);
  });

  test('with gRPC attached proofs are gRPC’s only (PoSt included), never /status’ as well', () => {
    const r = rig({ status: true, grpc: true });
    r.status(1000, withCounters(10, { 'porep-c2': 3 }, {}, {}));
    r.grpcMetrics({ uptime: 10, completed: { porep_c2: 3, window_post: 1 }, failed: { porep_c2: 0 } });
    r.status(2000, withCounters(11, { 'porep-c2': 5 }, { 'porep-c2': 1 }, { 'porep-c2': 2 }));
    r.grpcMetrics({ uptime: 11, completed: { porep_c2: 4, window_post: 3 }, failed: { porep_c2: 1 } });
    const m = r.refresh();
    expect([m.kProofsCompleted[kind('porep-c2')], m.kProofsCompleted[kind('window-post')], m.kProofsFailed[kind('porep-c2')]]).toEqual([1, 2, 1]);
    expect(m.kProofsCancelled[kind('porep-c2')]).toBe(0);
  });

  test('queue depth: GetStatus when gRPC is attached (nothing from /status meanwhile); /status otherwise', () => {
    const r = rig({ status: true, grpc: true });
    r.status(1000, snapshot({ uptime: 10, workers: [idle(0, 0)], queueDepth: 5 }));
    let m = r.refresh();
    expect(m.kQueueDepth.reduce((a, b) => a + b, 0)).toBe(0); // no GetStatus answer yet
    r.grpcStatus(1500, [{ ordinal: 0 }], [{ proof_kind: 'porep-c2', pending: 2, in_progress: 0 }]);
    m = r.refresh();
    expect(m.kQueueDepth[kind('porep-c2')]).toBe(2);
    expect(m.kQueueDepth.reduce((a, b) => a + b, 0)).toBe(2);

    const s = rig({ status: true, timeline: true });
    s.status(1000, snapshot({ uptime: 10, workers: [idle(0, 0)], queueDepth: 5 }));
    m = s.refresh();
    expect(m.kQueueDepth.reduce((a, b) => a + b, 0)).toBe(5); // all of it "other": no pending pipeline listed
    expect(m.kQueueDepth[OTHER_KIND_INDEX]).toBe(5);
  });

  test('synthesis and memory from /status', () => {
    const r = rig({ status: true, timeline: true });
    r.status(1000, snapshot({ uptime: 10, workers: [idle(0, 0)], synthActive: 3, memoryUsed: 1234567 }));
    const m = r.refresh();
    expect([m.synthActive, m.synthMax, m.memoryBudgetBytes, m.memoryUsedBytes]).toEqual([3, 7, 549755813888, 1234567]);
  });

  test('events: TIMELINE lines + /status records + gRPC calls', () => {
    const r = rig({ status: true, grpc: true, timeline: true });
    r.lines(1000, ...pick(0, 0, 1000));
    r.status(900, idleBoth(10));
    r.src.grpc!.metricsPolls = 3;
    r.src.grpc!.statusPolls = 4;
    const m = r.refresh();
    expect(r.src.timeline!.eventsTotal).toBe(2);
    expect(r.src.status!.model.eventsTotal).toBeGreaterThan(0);
    expect(m.eventsTotal).toBe(2 + r.src.status!.model.eventsTotal + 7);
    const t = rig({ timeline: true });
    t.lines(1000, ...pick(0, 0, 1000));
    expect(t.refresh().eventsTotal).toBe(2);
  });

  test('cuzk_up: every attached surface up', () => {
    const r = rig({ status: true, timeline: true });
    r.status(1000, idleBoth(10));
    r.src.timelineFeed(true, 'up');
    expect(r.refresh().up).toBe(true);
    r.src.timelineFeed(false, 'gone');
    expect(r.refresh().up).toBe(false);
  });
});

describe('topology', () => {
  test('workers from /status, GPU names from gRPC, uuid and bus id from /status', () => {
    const r = rig({ status: true, grpc: true });
    r.status(1000, snapshot({ uptime: 10, workers: [idle(0, 0), idle(1, 1), idle(2, 1)] }));
    r.grpcStatus(1000, [{ ordinal: 0, name: 'RTX A' }, { ordinal: 1, name: 'RTX B' }]);
    const m = r.refresh();
    expect(m.topology.workers.map((w) => [w.id, w.gpu])).toEqual([[0, 0], [1, 1], [2, 1]]);
    expect(m.topology.gpus.map((g) => [g.ordinal, g.name])).toEqual([[0, 'RTX A'], [1, 'RTX B']]);
  });

  test('gRPC alone: worker i on the GPU GetStatus lists at i', () => {
    const r = rig({ grpc: true });
    r.grpcStatus(1000, [{ ordinal: 1, name: 'one' }, { ordinal: 0, name: 'zero' }, { ordinal: 1, name: 'one' }]);
    const m = r.refresh();
    expect(m.topology.workers.map((w) => [w.id, w.gpu])).toEqual([[0, 1], [1, 0], [2, 1]]);
    expect(m.topology.gpus.map((g) => [g.ordinal, g.name])).toEqual([[0, 'zero'], [1, 'one']]);
  });

  test('/status attached but listing no worker: gRPC’s workers', () => {
    const r = rig({ status: true, grpc: true });
    r.status(1000, snapshot({ uptime: 10, workers: [] }));
    r.grpcStatus(1000, [{ ordinal: 0 }, { ordinal: 0 }]);
    expect(r.refresh().topology.workers.map((w) => [w.id, w.gpu])).toEqual([[0, 0], [1, 0]]);
  });

  test('TIMELINE alone: the workers it names, GPU unknown, no GPU listed', () => {
    const r = rig({ timeline: true });
    r.lines(1000, ...pick(3, 0, 1000), ...pick(1, 1, 1000));
    const m = r.refresh();
    expect(m.topology.workers.map((w) => [w.id, w.gpu]).sort()).toEqual([[1, -1], [3, -1]]);
    expect(m.topology.gpus).toEqual([]);
  });

  test('without gRPC a GPU’s name is "unknown"', () => {
    const r = rig({ status: true, timeline: true });
    r.status(1000, snapshot({ uptime: 10, workers: [idle(0, 2)] }));
    expect(r.refresh().topology.gpus.map((g) => [g.ordinal, g.name])).toEqual([[2, 'unknown']]);
  });

  test('a TIMELINE worker the daemon does not report: counted once, warned once, not exposed', () => {
    const r = rig({ status: true, timeline: true });
    r.status(1000, idleBoth(10));
    r.lines(1000, ...pick(7, 0, 1000), ...pick(0, 1, 1000));
    let m = r.refresh();
    expect(m.errors.get('timeline_worker_out_of_range')).toBe(1);
    r.lines(1200, ...pick(7, 2, 1200));
    r.status(1300, snapshot({ uptime: 11, workers: [idle(0, 0), idle(1, 0), idle(2, 0)] })); // a new topology: re-checked
    m = r.refresh();
    m = r.refresh();
    expect(m.errors.get('timeline_worker_out_of_range')).toBe(1);
    expect(m.topology.workers.map((w) => w.id)).toEqual([0, 1, 2]);
    expect(r.warnings().filter((w) => w.includes('TIMELINE names worker 7, which the daemon does not report'))).toHaveLength(1);
  });

  test('TIMELINE workers beyond the daemon’s are not checked without an authoritative topology', () => {
    const r = rig({ status: true, timeline: true });
    r.lines(1000, ...pick(7, 0, 1000));
    const m = r.refresh(); // /status has not answered: TIMELINE's workers stand
    expect(m.errors.get('timeline_worker_out_of_range')).toBe(0);
    expect(m.topology.workers.map((w) => w.id)).toEqual([7]);
  });
});

describe('workers', () => {
  test('TIMELINE drives: busy, partition, kind and job as its lines say; /status’ view is not used', () => {
    const r = rig({ status: true, timeline: true });
    r.status(1000, snapshot({ uptime: 10, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null], ['pending', null, null], ['pending', null, null], ['gpu', 1, null]])], workers: [idle(0, 0), proving(1, 0, A, 3, 0.5)] }));
    r.lines(1000, ...pick(0, 2, 1000));
    r.readTo(4000);
    const m = r.refresh();
    expect([r.busy(0), r.busy(1)]).toEqual([1, 0]);
    const s = r.slot(0);
    expect([m.wPartition[s], m.wKind[s], m.oPart[s]]).toEqual([2, kind('snap-update'), 2]);
    expect(r.src.jobId(m.wJob[s])).toBe(A);
    expect(m.busyWorkers).toBe(1);
    expect(m.ownedCount).toBe(1);
  });

  test('TIMELINE drives, a monolithic job of unknown kind: partition 0, kind "other"', () => {
    const r = rig({ timeline: true });
    r.lines(1000, tl(1000, 'GPU_PICKUP', 'mystery-1', 'worker=0'), tl(1000, 'GPU_START', 'mystery-1', 'worker=0'));
    r.readTo(4000);
    const m = r.refresh();
    const s = r.slot(0);
    expect([m.wBusy[s], m.wPartition[s], m.wKind[s]]).toEqual([1, 0, OTHER_KIND_INDEX]);
  });

  test('/status drives (no TIMELINE): its busy worker, job, partition and kind', () => {
    const r = rig({ status: true, grpc: true });
    r.status(1000, snapshot({ uptime: 10, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null], ['gpu', 1, null]])], workers: [idle(0, 0), proving(1, 0, A, 1, 0.5)] }));
    r.grpcStatus(1000, [{ ordinal: 0, job: WP, kind: 'window-post' }, { ordinal: 0 }]); // gRPC's view is not the workers'
    const m = r.refresh();
    expect([r.busy(0), r.busy(1)]).toEqual([0, 1]);
    const s = r.slot(1);
    expect(m.wPartition[s]).toBe(1);
    // cuzk's /status names no kind per worker: the kind is what the /status surface made of it.
    const st = r.src.status!.model;
    expect(m.wKind[s]).toBe(st.wKind[1]);
    expect(m.wKind[s]).toBeGreaterThanOrEqual(0);
    expect([m.wSinceNs[s], m.wPickNs[s]]).toEqual([st.wSinceNs[1], st.wPickNs[1]]);
    expect(r.src.jobId(m.wJob[s])).toBe(A);
    expect(m.busyWorkers).toBe(1);
    expect([m.oJob[s], m.oPart[s]]).toEqual([st.oJob[1], st.oPart[1]]);
    expect(m.ownedCount).toBe(st.oPart.filter((p) => p >= 0).length);
  });

  test('gRPC drives (alone): a busy worker on partition 0 of its job, kind as GetStatus says; idle ones have none', () => {
    const r = rig({ grpc: true });
    r.grpcStatus(1000, [{ ordinal: 0 }, { ordinal: 0, job: WP, kind: 'window-post' }]);
    const m = r.refresh();
    expect([r.busy(0), r.busy(1)]).toEqual([0, 1]);
    expect([m.wPartition[1], m.wKind[1], m.wPartition[0], m.wKind[0], m.wJob[0]]).toEqual([0, kind('window-post'), -1, -1, 0]);
    expect(m.wJob[1]).toBe(r.src.grpc!.handle(WP));
    expect(m.wPickNs[1]).toBe(r.hr(1000));
    expect(m.busyWorkers).toBe(1);
    expect(m.ownedCount).toBe(0); // gRPC says nothing of ownership
    // The stint ends at the next answer that sees the worker idle: credited to the last that saw it busy.
    r.grpcStatus(3000, [{ ordinal: 0 }, { ordinal: 0, job: WP, kind: 'window-post' }]);
    r.grpcStatus(5000, [{ ordinal: 0 }, { ordinal: 0 }]);
    const m2 = r.refresh();
    expect(m2.wBusy[1]).toBe(0);
    expect(m2.wBusyNs[1]).toBe(2000e6);
    expect(m2.wPartitions[1]).toBe(1);
  });
});

describe('the cross-check', () => {
  test('one surface: never a disagreement', () => {
    const r = rig({ timeline: true });
    r.lines(1000, ...pick(0, 0, 1000));
    r.readTo(5000);
    r.refresh();
    expect(r.src.model.mismatchReasons()).not.toContain('surfaces_disagree');
  });

  test('default tolerance max(2 s, 2 polls) with fast polls: the margin is still 250 ms', () => {
    const run = (atMs: number, o: RigOptions) => {
      const r = rig({ status: true, timeline: true, ...o });
      r.lines(1000, ...pick(0, 0, 1000));
      r.status(atMs, idleBoth(100));
      r.readTo(5000);
      r.refresh();
      return r.src.currentDisagreements().length;
    };
    expect(run(1200, { pollIntervalMs: 50 })).toBe(0); // 200 ms < 250 ms
    expect(run(1300, { pollIntervalMs: 50 })).toBe(1);
    // An explicit tolerance under 250 ms is the margin.
    expect(run(1200, { pollIntervalMs: 50, skewToleranceMs: 100 })).toBe(1);
    expect(run(1050, { pollIntervalMs: 50, skewToleranceMs: 100 })).toBe(0);
  });

  test('what a disagreement says: worker, GPU, who says what, for how long; logged once; cleared when they agree', () => {
    const r = rig({ status: true, timeline: true });
    r.lines(1000, ...pick(1, 0, 1000));
    r.status(1400, snapshot({ uptime: 100, workers: [idle(0, 0), idle(1, 3)] }));
    r.readTo(5000);
    r.refresh();
    // TIMELINE vouches from the pickup (1000) to what it has read less its 1 s lag (4000).
    expect(r.src.currentDisagreements()).toEqual([{ worker: 1, gpu: 3, busy_per: 'timeline', idle_per: 'status', overlap_secs: 3 }]);
    expect(r.src.exporterStatus().surfaces_disagree).toEqual(r.src.currentDisagreements());
    expect(r.src.model.mismatchReasons()).toContain('surfaces_disagree');
    r.readTo(5500);
    r.refresh();
    expect(r.src.currentDisagreements()[0].overlap_secs).toBeCloseTo(3.5, 9);
    expect(r.warnings().filter((w) => w.startsWith('surfaces disagree'))).toEqual(['surfaces disagree: worker 1 is proving per timeline but idle per status']);
    // It ends; /status' snapshot after the end says idle: agreement.
    r.lines(5600, tl(5600, 'GPU_END', A, 'worker=1,partition=0,gpu_ms=4600'));
    r.status(5700, snapshot({ uptime: 105, workers: [idle(0, 0), idle(1, 3)] }));
    r.readTo(9000);
    r.refresh();
    expect(r.src.currentDisagreements()).toEqual([]);
    expect(r.src.model.mismatchReasons()).not.toContain('surfaces_disagree');
  });

  test('two workers at once: logged as one line with the count of the others', () => {
    const r = rig({ status: true, timeline: true });
    r.lines(1000, ...pick(0, 0, 1000), ...pick(1, 1, 1000));
    r.status(1400, idleBoth(100));
    r.readTo(5000);
    r.refresh();
    expect(r.src.currentDisagreements().map((d) => d.worker)).toEqual([0, 1]);
    expect(r.warnings().filter((w) => w.startsWith('surfaces disagree'))).toEqual(['surfaces disagree: worker 0 is proving per timeline but idle per status (+1 more workers)']);
  });

  test('TIMELINE on a monolithic job (PoSt) while /status says idle: cuzk’s normal state', () => {
    const r = rig({ status: true, timeline: true });
    r.lines(1000, tl(1000, 'SYNTH_START', WP, 'kind=window-post'), tl(1000, 'GPU_PICKUP', WP, 'worker=0'), tl(1000, 'GPU_START', WP, 'worker=0'));
    r.status(2000, idleBoth(100));
    r.readTo(6000);
    r.refresh();
    expect(r.busy(0)).toBe(1);
    expect(r.src.currentDisagreements()).toEqual([]);
  });

  test('TIMELINE idle while /status still shows the worker on a partition TIMELINE saw skipped/failed: upstream’s stale state, no disagreement', () => {
    const r = rig({ status: true, timeline: true });
    r.lines(1000, ...pick(0, 0, 1000));
    r.lines(1500, tl(1500, 'GPU_END', A, 'worker=0,partition=0,gpu_ms=500'));
    // Not stale (ended with GPU_END): /status still busy on it well past the end is a disagreement.
    r.status(3000, snapshot({ uptime: 100, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null]])], workers: [proving(0, 0, A, 0, 2.0), idle(1, 0)] }));
    r.readTo(7000);
    r.refresh();
    expect(r.src.currentDisagreements()).toEqual([expect.objectContaining({ worker: 0, busy_per: 'status', idle_per: 'timeline' })]);
  });

  test('TIMELINE idle: /status busy is checked before gRPC busy (one finding per worker)', () => {
    const r = rig({ status: true, grpc: true, timeline: true });
    r.lines(1000, ...pick(0, 0, 1000));
    r.lines(1500, tl(1500, 'GPU_END', A, 'worker=0,partition=0,gpu_ms=500'));
    r.status(3000, snapshot({ uptime: 100, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null]])], workers: [proving(0, 0, A, 0, 2.0), idle(1, 0)] }));
    r.grpcStatus(3000, [{ ordinal: 0, job: A, kind: 'snap-update' }, { ordinal: 0 }]);
    r.readTo(7000);
    r.refresh();
    expect(r.src.currentDisagreements()).toEqual([expect.objectContaining({ worker: 0, busy_per: 'status', idle_per: 'timeline' })]);
  });

  test('TIMELINE idle, a GetStatus answer says proving after TIMELINE’s idle began (with the margin): a disagreement', () => {
    const run = (answerMs: number) => {
      const r = rig({ grpc: true, timeline: true });
      r.lines(1000, ...pick(0, 0, 1000));
      r.lines(2000, tl(2000, 'GPU_END', A, 'worker=0,partition=0,gpu_ms=1000'));
      r.grpcStatus(answerMs, [{ ordinal: 0, job: 'ghost', kind: 'winning-post' }, { ordinal: 0 }]);
      r.readTo(7000);
      r.refresh();
      return r.src.currentDisagreements();
    };
    // The answer's window starts 1 ms before it: TIMELINE idle since 2000 (+2 lateness).
    expect(run(2400)).toEqual([{ worker: 0, gpu: 0, busy_per: 'grpc', idle_per: 'timeline', overlap_secs: 4 }]);
    expect(run(2100)).toEqual([]); // inside 250 ms of TIMELINE's idle start
  });

  test('gRPC idle while TIMELINE proves is never a disagreement (its unconditional clear)', () => {
    const r = rig({ grpc: true, timeline: true });
    r.lines(1000, ...pick(0, 0, 1000));
    r.grpcStatus(2500, [{ ordinal: 0 }, { ordinal: 0 }]);
    r.readTo(7000);
    r.refresh();
    expect(r.busy(0)).toBe(1);
    expect(r.src.currentDisagreements()).toEqual([]);
  });
});

describe('evidence handed between surfaces', () => {
  test('/status’ partition end with no GPU_END on TIMELINE: a GPU failure, the worker idle', () => {
    const r = rig({ status: true, timeline: true });
    r.status(500, snapshot({ uptime: 100, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null]])], workers: [idle(0, 0), idle(1, 0)] }));
    r.lines(1000, ...pick(0, 0, 1000));
    // cuzk's /status marks the partition done when its GPU stage ends, whatever the result.
    r.status(1700, snapshot({ uptime: 101, pipelines: [pipeline(A, 'snap-update', [['done', 1, 600]])], workers: [idle(0, 0), idle(1, 0)] }));
    r.readTo(6000);
    r.src.timeline!.sweep();
    const m = r.refresh();
    expect(m.kPartsFailed[kind('snap-update')]).toBe(1);
    expect(m.kPartsCompleted[kind('snap-update')]).toBe(0);
    expect(r.busy(0)).toBe(0);
  });

  test('a TIMELINE job’s kind: /status’ word first, then GetStatus’', () => {
    const r = rig({ status: true, grpc: true, timeline: true });
    r.status(500, snapshot({ uptime: 100, pipelines: [pipeline('job-s', 'snap-update', [['gpu', 1, null]])], workers: [idle(0, 0), idle(1, 0)] }));
    r.grpcStatus(500, [{ ordinal: 0, job: 'job-s', kind: 'winning-post' }, { ordinal: 0, job: 'job-g', kind: 'porep-c2' }]);
    r.lines(1000, ...pick(0, 0, 1000, 'job-s'), ...pick(1, 0, 1000, 'job-g'));
    r.lines(1500, tl(1500, 'GPU_END', 'job-s', 'worker=0,partition=0,gpu_ms=500'), tl(1500, 'GPU_END', 'job-g', 'worker=1,partition=0,gpu_ms=300'));
    r.readTo(3000);
    const m = r.refresh();
    const res = new Map(r.src.kindResolutions());
    expect([res.get('status'), res.get('grpc_status')]).toEqual([1, 1]);
    expect(m.kGpuNs[kind('snap-update')]).toBe(500e6);
    expect(m.kGpuNs[kind('porep-c2')]).toBe(300e6); // kind slot 0: GetStatus' word counts from slot 0 up
    expect(m.kGpuNs[kind('winning-post')]).toBe(0);
  });

  test('GetMetrics’ proof counts name the kind of a TIMELINE job that ended without one (gRPC + TIMELINE)', () => {
    const r = rig({ grpc: true, timeline: true });
    const T = 50_000; // recent: within the 30 s a job stays a candidate
    r.grpcMetrics({ uptime: 100, completed: { porep_c2: 4 } });
    r.lines(T, ...pick(0, 0, T, 'job-x'));
    r.lines(T + 400, tl(T + 400, 'GPU_END', 'job-x', 'worker=0,partition=0,gpu_ms=400'));
    r.readTo(T + 1000);
    r.grpcMetrics({ uptime: 101, completed: { porep_c2: 5 } });
    r.readTo(T + 2000);
    const m = r.refresh();
    expect(new Map(r.src.kindResolutions()).get('grpc_metrics')).toBe(1);
    expect(m.kGpuNs[kind('porep-c2')]).toBe(400e6);
  });

  test('histograms: /status’ partition observations reach the exporter only when /status drives partitions', () => {
    const seen: [string, number, number][] = [];
    const observer = {
      partitionGpu: (k: number, s: number) => seen.push(['gpu', k, s]),
      partitionSynthesis: (k: number, s: number) => seen.push(['synth', k, s]),
      partitionFinalize: (k: number, s: number) => seen.push(['fin', k, s]),
      proofDone: () => {},
      queueWait: () => {},
      gpuIdleGap: () => {},
    };
    const feed = (r: Rig, refreshBetween = true) => {
      r.src.model.observer = observer;
      r.status(500, snapshot({ uptime: 100, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null], ['synthesizing', null, null]])], workers: [proving(0, 0, A, 0, 0.1), idle(1, 0)] }));
      if (refreshBetween) r.refresh();
      r.status(1500, snapshot({ uptime: 101, pipelines: [pipeline(A, 'snap-update', [['done', 1, 600], ['synth_done', 700, null]])], workers: [idle(0, 0), idle(1, 0)] }));
      r.refresh();
    };
    const alone = rig({ status: true });
    feed(alone);
    const snap = kind('snap-update');
    expect([...seen].sort()).toEqual([['gpu', snap, 0.6], ['synth', snap, 0.7]]);
    seen.length = 0;
    feed(rig({ status: true }), false); // polls before the first scrape: observed all the same
    expect([...seen].sort()).toEqual([['gpu', snap, 0.6], ['synth', snap, 0.7]]);
    seen.length = 0;
    feed(rig({ status: true, timeline: true }), false);
    expect(seen).toEqual([]);
    const withTl = rig({ status: true, timeline: true });
    feed(withTl);
    expect(seen).toEqual([]); // TIMELINE drives partitions: /status' ends are not observed (counted once)
    withTl.lines(1000, ...pick(0, 0, 1000), tl(1000, 'SYNTH_START', A, 'partition=1'));
    withTl.lines(1600, tl(1600, 'GPU_END', A, 'worker=0,partition=0,gpu_ms=600'), tl(1700, 'SYNTH_END', A, 'partition=1,synth_ms=700'));
    withTl.readTo(4000);
    withTl.refresh();
    expect([...seen].sort()).toEqual([['gpu', snap, 0.6], ['synth', snap, 0.7]]);
  });
});

describe('a TIMELINE never readable gives way after 10 s; evidence of no lines gives way to gRPC', () => {
  test('/status + TIMELINE: workers and partitions from /status after 10 s of no log, back to TIMELINE when it comes, counters never back', () => {
    const r = rig({ status: true, timeline: true });
    const seen: number[] = [];
    r.src.model.observer = { partitionGpu: (_k: number, s: number) => seen.push(s), partitionSynthesis: () => {}, proofDone: () => {}, queueWait: () => {}, gpuIdleGap: () => {} };
    r.status(1000, snapshot({ uptime: 100, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null], ['gpu', 1, null]])], workers: [proving(0, 0, A, 0, 0.5), proving(1, 0, A, 1, 0.5)] }));
    let m = r.refresh();
    expect(r.src.currentDriver).toBe('timeline');
    expect([r.busy(0), r.busy(1)]).toEqual([0, 0]); // TIMELINE has said nothing yet
    const t0 = r.src.nowNs();
    skewNs = 9e9;
    m = r.refresh();
    expect(r.src.currentDriver).toBe('timeline');
    skewNs = 11e9;
    m = r.refresh();
    expect(r.src.currentDriver).toBe('status');
    expect([r.busy(0), r.busy(1)]).toEqual([1, 1]);
    expect(r.src.nowNs()).toBeGreaterThanOrEqual(t0); // never back across the switch
    expect(r.warnings()).toContain('partitions now from status (the daemon writes no TIMELINE)');
    r.status(2000, snapshot({ uptime: 101, pipelines: [pipeline(A, 'snap-update', [['done', 1, 600], ['gpu', 1, null]])], workers: [idle(0, 0), proving(1, 0, A, 1, 1.5)] }));
    m = r.refresh();
    expect(m.kPartsCompleted[kind('snap-update')]).toBe(1);
    expect(m.kGpuNs[kind('snap-update')]).toBe(600e6);
    expect(seen).toEqual([0.6]); // /status' observations reach the exporter now
    const busyBefore = m.wBusyNs[r.slot(0)];
    expect(busyBefore).toBeGreaterThan(0);
    // The log appears: TIMELINE again, its increments on top of what was counted.
    r.lines(3000, ...pick(0, 5, 3000));
    m = r.refresh();
    expect(r.src.currentDriver).toBe('timeline');
    expect(r.warnings()).toContain('partitions now from timeline');
    expect(m.kPartsCompleted[kind('snap-update')]).toBe(1);
    r.lines(3400, tl(3400, 'GPU_END', A, 'worker=0,partition=5,gpu_ms=400'));
    r.readTo(6000);
    m = r.refresh();
    expect(m.kPartsCompleted[kind('snap-update')]).toBe(2);
    expect(m.kGpuNs[kind('snap-update')]).toBe(1000e6);
    expect(m.wBusyNs[r.slot(0)]).toBeGreaterThanOrEqual(busyBefore + 400e6);
    // /status' later ends are no longer counted or observed.
    seen.length = 0;
    r.status(7000, snapshot({ uptime: 106, pipelines: [pipeline(A, 'snap-update', [['done', 1, 600], ['done', 1, 900]])], workers: [idle(0, 0), idle(1, 0)] }));
    m = r.refresh();
    expect(m.kPartsCompleted[kind('snap-update')]).toBe(2);
    expect(seen).toEqual([]);
  });

  test('gRPC + TIMELINE never readable: workers from gRPC after 10 s; TIMELINE alone stays TIMELINE', () => {
    const r = rig({ grpc: true, timeline: true });
    r.grpcStatus(1000, [{ ordinal: 0, job: WP, kind: 'window-post' }]);
    r.refresh();
    expect(r.src.currentDriver).toBe('timeline');
    skewNs = 11e9;
    r.refresh();
    expect(r.src.currentDriver).toBe('grpc');
    expect(r.busy(0)).toBe(1);
    const t = rig({ timeline: true });
    t.refresh();
    expect(t.src.currentDriver).toBe('timeline');
  });

  test('a log once readable keeps TIMELINE in charge when it goes away', () => {
    const r = rig({ status: true, timeline: true });
    r.src.timelineFeed(true, 'up');
    r.src.timelineFeed(false, 'rotated away');
    r.status(1000, snapshot({ uptime: 100, workers: [proving(0, 0, A, 0, 0.5)] }));
    skewNs = 11e9;
    r.refresh();
    expect(r.src.currentDriver).toBe('timeline');
  });

  test('gRPC sees proofs end and TIMELINE writes nothing for a window (pipeline off): workers from gRPC until a line comes', () => {
    const r = rig({ status: true, grpc: true, timeline: true });
    r.src.timelineFeed(true, 'up'); // the file is there, but empty
    r.grpcMetrics({ uptime: 100, completed: { porep_c2: 1 } });
    r.status(1000, snapshot({ uptime: 100, workers: [idle(0, 0)] }));
    r.grpcStatus(1000, [{ ordinal: 0, job: B, kind: 'porep-c2' }]);
    r.refresh(); // the window starts
    skewNs = 61e9;
    r.grpcMetrics({ uptime: 161, completed: { porep_c2: 3 } }); // two proofs ended
    r.refresh();
    expect(r.src.watch.degraded('timeline', 'no_lines')).toBe(true);
    expect(r.src.currentDriver).toBe('grpc');
    expect(r.busy(0)).toBe(1);
    expect(r.src.surfaceStates().find((s) => s.name === 'timeline')!.degraded).toEqual(['no_lines']);
    expect(r.warnings()).toContain('partitions now from status (the daemon writes no TIMELINE)');
    r.lines(60_000, ...pick(0, 0, 60_000, B));
    r.refresh();
    expect(r.src.currentDriver).toBe('timeline');
  });
});

describe('what the exporter reads', () => {
  test('jobId: TIMELINE’s jobs while it drives partitions (not /status’), /status’ otherwise, none from gRPC alone', () => {
    const r = rig({ status: true, timeline: true });
    r.status(1000, snapshot({ uptime: 100, pipelines: [pipeline(B, 'porep-c2', [['gpu', 1, null]])], workers: [proving(0, 0, B, 0, 0.1)] }));
    r.lines(1000, ...pick(0, 0, 1000));
    r.readTo(3000);
    r.refresh();
    const h = r.src.timeline!.jobs.get(A)!.handle;
    expect(r.src.jobId(h)).toBe(A);
    const sh = r.src.status!.model.wJob[0];
    expect(r.src.status!.attach.jobId(sh)).toBe(B);
    if (sh !== h) expect(r.src.jobId(sh)).toBeUndefined();
    expect(r.src.jobId(987654)).toBeUndefined();
    const s = rig({ status: true });
    s.status(1000, snapshot({ uptime: 100, pipelines: [pipeline(B, 'porep-c2', [['gpu', 1, null]])], workers: [proving(0, 0, B, 0, 0.1)] }));
    s.refresh();
    expect(s.src.jobId(s.src.model.wJob[0])).toBe(B);
    const g = rig({ grpc: true });
    g.grpcStatus(1000, [{ ordinal: 0, job: WP, kind: 'window-post' }]);
    g.refresh();
    expect(g.src.jobId(g.src.model.wJob[0])).toBeUndefined();
  });

  test('snapshot age: from what TIMELINE has read, /status’ last snapshot, or the last GetStatus (0 before any)', () => {
    const t = rig({ timeline: true });
    t.lines(1000, ...pick(0, 0, 1000));
    t.readTo(50_000);
    // Read to offset 50 s of a daemon whose offset 0 was a minute ago; TIMELINE vouches 1 s less.
    expect(t.src.snapshotAgeSeconds()).toBeGreaterThan(10);
    expect(t.src.snapshotAgeSeconds()).toBeLessThan(12);
    const g = rig({ grpc: true });
    expect(g.src.snapshotAgeSeconds()).toBe(0);
    g.grpcStatus(30_000, [{ ordinal: 0 }]);
    expect(g.src.snapshotAgeSeconds()).toBeGreaterThan(29.9);
    expect(g.src.snapshotAgeSeconds()).toBeLessThan(31);
    const s = rig({ status: true, grpc: true });
    expect(s.src.snapshotAgeSeconds()).toBe(0); // no snapshot yet
  });

  test('ready: every surface up, and workers unless TIMELINE is all there is', () => {
    const r = rig({ status: true, grpc: true });
    expect(r.src.ready()).toEqual({ ok: false, reason: 'grpc, status not up: no answer yet' });
    const t = rig({ timeline: true });
    t.src.timelineFeed(true, 'up');
    expect(t.src.ready()).toEqual({ ok: true, reason: '' });
    const st = rig({ status: true, timeline: true });
    st.src.timelineFeed(true, 'up');
    st.status(1000, snapshot({ uptime: 100, workers: [] }));
    expect(st.src.ready()).toEqual({ ok: false, reason: 'the daemon reports no GPU workers' });
    st.status(2000, snapshot({ uptime: 101, workers: [idle(0, 0)] }));
    expect(st.src.ready()).toEqual({ ok: true, reason: '' });
    st.src.model.errors.inc('timeline_missing', 'no such file: /nonexistent/cuzk.log');
    st.src.timelineFeed(false, 'gone');
    expect(st.src.ready()).toEqual({ ok: false, reason: 'timeline not up: no such file: /nonexistent/cuzk.log' });
  });

  test('the /status document: cuzk’s own with the busy seconds /metrics has when /status drives workers; built from the merge otherwise', () => {
    const r = rig({ status: true, grpc: true });
    r.status(1000, snapshot({ uptime: 77, workers: [idle(0, 0), proving(1, 0, A, 0, 0.5)] }));
    r.refresh();
    const body = r.src.statusBody()!;
    expect(body.uptime_secs).toBe(77);
    const ws = body.gpu_workers as Record<string, unknown>[];
    expect(ws.map((w) => [w.worker_id, w.state])).toEqual([[0, 'idle'], [1, 'proving']]);
    const now = r.src.nowNs();
    for (const [i, w] of ws.entries()) expect(w.busy_total_secs).toBeCloseTo(r.src.model.workerBusyNsAt(i, now) / 1e9, 3);
    expect(body.memory).toEqual((snapshot({ uptime: 77, workers: [] }) as Record<string, unknown>).memory);
    const t = rig({ status: true, timeline: true });
    t.status(1000, snapshot({ uptime: 77, workers: [idle(0, 0)] }));
    t.lines(1000, ...pick(0, 0, 1000));
    t.readTo(3000);
    t.refresh();
    const tb = t.src.statusBody()!;
    expect((tb.pipelines as { job_id: string }[]).map((p) => p.job_id)).toEqual([A]);
    expect((tb.gpu_workers as { state: string }[])[0].state).toBe('proving');
  });
});

describe('more of the merge’s wiring', () => {
  test('a TIMELINE job whose kind /status names only later is resolved at the next refresh', () => {
    const r = rig({ status: true, timeline: true });
    r.status(500, idleBoth(100));
    r.lines(1000, ...pick(0, 0, 1000, 'job-late'));
    r.lines(1500, tl(1500, 'GPU_END', 'job-late', 'worker=0,partition=0,gpu_ms=500'));
    r.readTo(2000);
    let m = r.refresh();
    expect(m.kGpuNs[kind('porep-c2')]).toBe(0);
    r.status(2500, snapshot({ uptime: 102, pipelines: [pipeline('job-late', 'porep-c2', [['done', 1, 500], ['gpu', 1, null]])], workers: [idle(0, 0), idle(1, 0)] }));
    m = r.refresh();
    expect(new Map(r.src.kindResolutions()).get('status')).toBe(1);
    expect(m.kGpuNs[kind('porep-c2')]).toBe(500e6);
  });

  test('TIMELINE idle after a pickup it saw skipped, /status still proving it: upstream’s stale state, no disagreement', () => {
    const r = rig({ status: true, timeline: true });
    // Worker 1's pickup+start shows split proving is on; worker 0's pickup never gets its GPU_START: a skip.
    r.lines(1000, tl(1000, 'GPU_PICKUP', A, 'worker=0,partition=0'), ...pick(1, 1, 1000));
    r.readTo(8000);
    r.src.timeline!.sweep();
    r.status(7000, snapshot({ uptime: 100, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null], ['gpu', 1, null]])], workers: [proving(0, 0, A, 0, 6.0), proving(1, 0, A, 1, 6.0)] }));
    r.readTo(12_000);
    r.refresh();
    expect(r.busy(0)).toBe(0);
    expect(r.src.currentDisagreements()).toEqual([]);
  });

  test('the source names itself: attach, cuzk; its log lines carry surface=merge', () => {
    const r = rig({ status: true, timeline: true });
    expect([r.src.source, r.src.backend]).toEqual(['attach', 'cuzk']);
    r.lines(1000, ...pick(7, 0, 1000));
    r.status(1000, idleBoth(100));
    r.refresh();
    const line = r.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l.msg).startsWith('TIMELINE names worker 7'));
    expect(line).toMatchObject({ level: 'warn', surface: 'merge' });
  });

  test('start() starts every surface, stop() stops them', async () => {
    const fs = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-merge-edges-'));
    const file = path.join(dir, 'cuzk.log');
    fs.writeFileSync(file, tl(1, 'SYNTH_START', WP, 'kind=window-post'));
    const src = new MergedAttachSource({
      timelineFile: file,
      pollIntervalMs: 1000,
      grpcStatusIntervalMs: 5000,
      timeoutMs: 1000,
      maxBodyBytes: 1 << 20,
      logger: createLogger('error', 'json', () => {}),
      timeline: { pollMs: 20, sweepMs: 0 },
    });
    try {
      src.start();
      const until = Date.now() + 20_000;
      while (src.timeline!.eventsTotal === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(src.timeline!.eventsTotal).toBe(1); // read by the surface's own follower
      await src.stop();
      fs.appendFileSync(file, tl(2, 'SYNTH_START', 'wp-2', 'kind=window-post'));
      await src.timeline!.poll();
      expect(src.timeline!.eventsTotal).toBe(1); // stopped: nothing more is read
    } finally {
      await src.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('issue 23, second batch (survivors of the Stryker run)', () => {
  test('topology follows GetStatus when only its worker list changes, and its names when a restart clears them', () => {
    const r = rig({ grpc: true });
    r.grpcStatus(1000, [{ ordinal: 0, name: 'A' }, { ordinal: 0, name: 'A' }]);
    expect(r.refresh().topology.workers).toHaveLength(2);
    r.grpcStatus(2000, [{ ordinal: 0, name: 'A' }, { ordinal: 0, name: 'A' }, { ordinal: 0, name: 'A' }]);
    expect(r.refresh().topology.workers).toHaveLength(3);
    expect(r.src.model.topology.gpus.map((g) => g.name)).toEqual(['A']);
    r.grpcMetrics({ uptime: 100, completed: {} });
    r.grpcMetrics({ uptime: 1, completed: {} }); // the daemon restarted: GPU names forgotten until its next GetStatus
    expect(r.refresh().topology.gpus.map((g) => g.name)).toEqual(['unknown']);
    expect(r.src.model.topology.lockEvents).toBe(false); // attach sees no lock events
  });

  test('no worker list from /status or GetStatus yet: TIMELINE’s workers, even with both attached', () => {
    const r = rig({ status: true, grpc: true, timeline: true });
    r.lines(1000, ...pick(0, 0, 1000), ...pick(1, 1, 1000));
    expect(r.refresh().topology.workers.map((w) => [w.id, w.gpu])).toEqual([[0, -1], [1, -1]]);
  });

  test('GetStatus’ worker list is authoritative too: a TIMELINE worker beyond it is counted, with its message', () => {
    const r = rig({ grpc: true, timeline: true });
    r.grpcStatus(1000, [{ ordinal: 0 }, { ordinal: 0 }]);
    r.lines(1000, ...pick(5, 0, 1000));
    const m = r.refresh();
    expect(m.errors.get('timeline_worker_out_of_range')).toBe(1);
    expect(m.errors.lastMessage).toBe('TIMELINE names worker 5, which the daemon does not report');
    expect(m.topology.workers.map((w) => w.id)).toEqual([0, 1]);
  });

  test('GPU names and identity from /status’ own gpus section when gRPC is not attached', () => {
    const r = rig({ status: true, timeline: true });
    const s = snapshot({ uptime: 10, workers: [idle(0, 0)] });
    s.gpus = [{ ordinal: 0, name: 'NVIDIA H100', uuid: 'GPU-1234', pci_bus_id: '0000:01:00.0' }];
    r.status(1000, s);
    const g = r.refresh().topology.gpus;
    expect(g.map((x) => [x.ordinal, x.name, x.uuid, x.pciBusId])).toEqual([[0, 'NVIDIA H100', 'GPU-1234', '0000:01:00.0']]);
  });

  test('/status’ busy_total_secs follows the workers when their ids change at the same count', () => {
    const r = rig({ status: true, grpc: true });
    r.status(1000, snapshot({ uptime: 10, workers: [idle(0, 0), idle(1, 0)] }));
    r.refresh();
    r.status(2000, snapshot({ uptime: 11, workers: [idle(5, 0), idle(6, 0)] }));
    r.refresh();
    const ws = r.src.statusBody()!.gpu_workers as Record<string, unknown>[];
    expect(ws.map((w) => [w.worker_id, typeof w.busy_total_secs])).toEqual([[5, 'number'], [6, 'number']]);
  });

  test('TIMELINE drives: a porep-c2 partition (kind slot 0) keeps its kind; partition 0 is owned', () => {
    const r = rig({ timeline: true });
    r.lines(1000, ...pick(0, 0, 1000, B), ...pick(1, 3, 1000, B));
    r.readTo(3000);
    const m = r.refresh();
    expect([m.wKind[r.slot(0)], m.wPartition[r.slot(0)]]).toEqual([kind('porep-c2'), 0]);
    expect(m.ownedCount).toBe(2);
  });

  test('TIMELINE drives: a partition its worker left for another without an end is counted as superseded on the GPU', () => {
    const r = rig({ timeline: true });
    r.lines(1000, ...pick(0, 0, 1000, B));
    r.lines(1500, ...pick(0, 1, 1500, B));
    r.readTo(3000);
    expect(r.refresh().supersededOnGpu).toBe(1);
  });

  test('/status drives partitions: the live partitions are its own; with TIMELINE driving, /status’ failed partitions are added', () => {
    const r = rig({ status: true });
    r.status(1000, snapshot({ uptime: 10, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null], ['synthesizing', null, null]])], workers: [proving(0, 0, A, 0, 0.1)] }));
    const m = r.refresh();
    expect(Array.from(m.kLive)).toEqual(Array.from(r.src.status!.model.kLive));
    expect(m.kLive.reduce((a, b) => a + b, 0)).toBe(2);
    const t = rig({ status: true, timeline: true });
    t.status(1000, snapshot({ uptime: 10, pipelines: [pipeline(A, 'snap-update', [['synthesizing', null, null]])], workers: [idle(0, 0)] }));
    t.status(2000, snapshot({ uptime: 11, pipelines: [pipeline(A, 'snap-update', [['failed', null, null]])], workers: [idle(0, 0)] }));
    expect(t.refresh().kPartsFailed[kind('snap-update')]).toBe(1);
  });

  test('a driver switch counts only the new driver’s increments: what /status counted before the switch is not added', () => {
    const r = rig({ status: true, timeline: true });
    r.status(1000, snapshot({ uptime: 100, pipelines: [pipeline(A, 'snap-update', [['gpu', null, null], ['synthesizing', null, null]])], workers: [proving(0, 0, A, 0, 0.5)] }));
    r.status(2000, snapshot({ uptime: 101, pipelines: [pipeline(A, 'snap-update', [['done', null, 600], ['synth_done', 700, null]])], workers: [idle(0, 0)] }));
    let m = r.refresh();
    expect(r.warnings().filter((w) => w.startsWith('partitions now'))).toEqual([]); // nothing to say at start
    expect([m.kPartsCompleted[kind('snap-update')], m.kGpuNs[kind('snap-update')], m.kSynthNs[kind('snap-update')]]).toEqual([0, 0, 0]); // TIMELINE drives
    skewNs = 11e9;
    m = r.refresh();
    expect(r.src.currentDriver).toBe('status');
    expect([m.kPartsCompleted[kind('snap-update')], m.kGpuNs[kind('snap-update')], m.kSynthNs[kind('snap-update')]]).toEqual([0, 0, 0]);
    const parts = m.wPartitions[r.slot(0)];
    r.lines(3000, ...pick(1, 4, 3000));
    m = r.refresh();
    expect(m.wPartitions[r.slot(0)]).toBeGreaterThanOrEqual(parts); // back to TIMELINE: never down
  });

  test('silent from the first refresh on: the switch is said', () => {
    const r = rig({ status: true, timeline: true });
    skewNs = 11e9;
    r.refresh();
    expect(r.warnings()).toContain('partitions now from status (the daemon writes no TIMELINE)');
  });
});

describe('issue 23, third batch', () => {
  test('a /status snapshot contradicts TIMELINE’s proving with exactly 250 ms to spare, not 249 ms', () => {
    const run = (atMs: number) => {
      const r = rig({ status: true, timeline: true });
      r.lines(1000, ...pick(0, 0, 1000));
      r.status(atMs, idleBoth(100));
      r.readTo(5000);
      r.refresh();
      return r.src.currentDisagreements().length;
    };
    expect(run(1250)).toBe(1);
    expect(run(1249)).toBe(0);
  });

  test('/status proving while TIMELINE is idle: a disagreement once both claims overlap by exactly 500 ms (2 × 250 ms), not 499 ms', () => {
    const run = (atMs: number) => {
      const r = rig({ status: true, timeline: true });
      r.lines(1000, ...pick(0, 0, 1000));
      r.lines(1500, tl(1500, 'GPU_END', A, 'worker=0,partition=0,gpu_ms=500'));
      // Proving for 2 s as of the snapshot: busy since well before TIMELINE's idle began at 1500.
      r.status(atMs, snapshot({ uptime: 100, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null]])], workers: [proving(0, 0, A, 0, 2.0), idle(1, 0)] }));
      r.readTo(7000);
      r.refresh();
      return r.src.currentDisagreements().length;
    };
    expect(run(2000)).toBe(1);
    expect(run(1999)).toBe(0);
  });

  test('a GetStatus answer contradicts TIMELINE’s idle with exactly 250 ms to spare, not 249 ms', () => {
    const run = (answerMs: number) => {
      const r = rig({ grpc: true, timeline: true });
      r.lines(1000, ...pick(0, 0, 1000));
      r.lines(2000, tl(2000, 'GPU_END', A, 'worker=0,partition=0,gpu_ms=1000'));
      r.grpcStatus(answerMs, [{ ordinal: 0, job: 'ghost', kind: 'winning-post' }, { ordinal: 0 }]); // asked 1 ms before
      r.readTo(7000);
      r.refresh();
      return r.src.currentDisagreements().length;
    };
    expect(run(2251)).toBe(1); // asked at TIMELINE's idle start + 250 ms
    expect(run(2250)).toBe(0);
  });

  test('a GetStatus answer later than what TIMELINE vouches for (less the margin) is not compared', () => {
    const r = rig({ grpc: true, timeline: true });
    r.lines(1000, ...pick(0, 0, 1000));
    r.lines(2000, tl(2000, 'GPU_END', A, 'worker=0,partition=0,gpu_ms=1000'));
    r.readTo(7000); // TIMELINE vouches up to 6000 (its 1 s lag)
    r.grpcStatus(6100, [{ ordinal: 0, job: 'ghost', kind: 'winning-post' }, { ordinal: 0 }]); // after 6000 - 250 ms
    r.refresh();
    expect(r.src.currentDisagreements()).toEqual([]);
  });

  test('a disagreement that ends and comes back is logged again', () => {
    const r = rig({ status: true, timeline: true });
    r.lines(1000, ...pick(1, 0, 1000));
    r.status(1400, snapshot({ uptime: 100, workers: [idle(0, 0), idle(1, 3)] }));
    r.readTo(5000);
    r.refresh();
    r.lines(5600, tl(5600, 'GPU_END', A, 'worker=1,partition=0,gpu_ms=4600'));
    r.status(5700, snapshot({ uptime: 105, workers: [idle(0, 0), idle(1, 3)] }));
    r.readTo(9000);
    r.refresh();
    expect(r.src.currentDisagreements()).toEqual([]);
    r.lines(10_000, ...pick(1, 1, 10_000));
    r.status(10_400, snapshot({ uptime: 110, workers: [idle(0, 0), idle(1, 3)] }));
    r.readTo(14_000);
    r.refresh();
    expect(r.src.currentDisagreements()).toHaveLength(1);
    expect(r.warnings().filter((w) => w.startsWith('surfaces disagree'))).toEqual(['surfaces disagree: worker 1 is proving per timeline but idle per status', 'surfaces disagree: worker 1 is proving per timeline but idle per status']);
  });

  test('nowNs is the driving surface’s clock: gRPC’s alone, /status’ after a switch to it; 0 before anything', () => {
    expect(rig({ timeline: true }).src.nowNs()).toBe(0);
    const g = rig({ grpc: true });
    g.grpcStatus(1000, [{ ordinal: 0 }]);
    g.refresh();
    expect(g.src.nowNs()).toBe(g.src.grpc!.nowNs());
    const r = rig({ status: true, timeline: true });
    r.status(1000, snapshot({ uptime: 100, workers: [idle(0, 0)] }));
    skewNs = 11e9;
    r.refresh();
    expect(r.src.currentDriver).toBe('status');
    const before = r.src.nowNs();
    r.status(5000, snapshot({ uptime: 104, workers: [idle(0, 0)] }));
    r.refresh();
    expect(r.src.nowNs()).toBeGreaterThan(before);
  });

  test('jobId while /status drives partitions (TIMELINE never readable): /status’ jobs', () => {
    const r = rig({ status: true, timeline: true });
    r.status(1000, snapshot({ uptime: 100, pipelines: [pipeline(B, 'porep-c2', [['gpu', 1, null]])], workers: [proving(0, 0, B, 0, 0.1)] }));
    r.refresh();
    skewNs = 11e9;
    r.refresh();
    expect(r.src.currentDriver).toBe('status');
    expect(r.src.jobId(r.src.status!.model.wJob[0])).toBe(B);
  });

  test('snapshot age with /status driving and gRPC attached: /status’ last snapshot, not the (absent) GetStatus', () => {
    const s = rig({ status: true, grpc: true });
    s.status(1000, snapshot({ uptime: 100, workers: [idle(0, 0)] })); // a minute ago, less 1 s
    expect(s.src.snapshotAgeSeconds()).toBeGreaterThan(55);
    expect(s.src.snapshotAgeSeconds()).toBeLessThan(65);
  });

  test('after a switch to /status (no TIMELINE lines for a window), TIMELINE’s own GPU failures stay counted and /status’ new ones add', () => {
    const r = rig({ status: true, grpc: true, timeline: true });
    const snap = kind('snap-update');
    r.src.timelineFeed(true, 'up');
    r.grpcMetrics({ uptime: 100, completed: { snap_update: 1 } });
    r.status(500, snapshot({ uptime: 100, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null]])], workers: [idle(0, 0), idle(1, 0)] }));
    r.lines(1000, ...pick(0, 0, 1000));
    // /status says the partition's GPU stage ended; TIMELINE never sees its GPU_END: a GPU failure (TIMELINE's).
    r.status(1700, snapshot({ uptime: 101, pipelines: [pipeline(A, 'snap-update', [['done', 1, 600]])], workers: [idle(0, 0), idle(1, 0)] }));
    r.readTo(6000);
    r.src.timeline!.sweep();
    let m = r.refresh(); // the evidence window starts
    expect(m.kPartsFailed[snap]).toBe(1);
    skewNs = 61e9;
    r.grpcMetrics({ uptime: 161, completed: { snap_update: 3 } }); // two proofs ended, no TIMELINE line
    m = r.refresh();
    expect(r.warnings()).toContain('partitions now from status (the daemon writes no TIMELINE)');
    expect(m.kPartsFailed[snap]).toBe(1); // never back
    const B2 = 'snap-2';
    r.status(7000, snapshot({ uptime: 107, pipelines: [pipeline(B2, 'snap-update', [['synthesizing', null, null]])], workers: [idle(0, 0), idle(1, 0)] }));
    r.status(8000, snapshot({ uptime: 108, pipelines: [pipeline(B2, 'snap-update', [['failed', null, null]])], workers: [idle(0, 0), idle(1, 0)] }));
    m = r.refresh();
    expect(m.kPartsFailed[snap]).toBe(2); // TIMELINE's one + /status' new one
  });

  test('the exporter’s clock never goes back when TIMELINE takes over again with lines older than /status’ last snapshot', () => {
    const r = rig({ status: true, timeline: true });
    r.status(1000, snapshot({ uptime: 100, workers: [idle(0, 0)] }));
    r.refresh();
    skewNs = 11e9;
    r.refresh();
    expect(r.src.currentDriver).toBe('status');
    r.status(5000, snapshot({ uptime: 104, workers: [idle(0, 0)] }));
    r.refresh();
    const before = r.src.nowNs();
    r.lines(3000, ...pick(0, 0, 3000)); // the log appears, its lines from before that snapshot
    r.refresh();
    expect(r.src.currentDriver).toBe('timeline');
    expect(r.src.nowNs()).toBeGreaterThanOrEqual(before);
  });

  test('jobId while TIMELINE drives partitions: a handle only /status knows is no job', () => {
    const r = rig({ status: true, timeline: true });
    r.status(1000, snapshot({ uptime: 100, pipelines: [pipeline(B, 'porep-c2', [['gpu', 1, null]]), pipeline('porep-1000-8', 'porep-c2', [['gpu', 1, null]])], workers: [proving(0, 0, B, 0, 0.1), proving(1, 0, 'porep-1000-8', 0, 0.1)] }));
    r.lines(1000, ...pick(0, 0, 1000));
    r.readTo(3000);
    r.refresh();
    const tlHandles = [...r.src.timeline!.jobs.values()].map((j) => j.handle);
    const statusOnly = [r.src.status!.model.wJob[0], r.src.status!.model.wJob[1]].filter((h) => !tlHandles.includes(h));
    expect(statusOnly.length).toBeGreaterThan(0);
    for (const h of statusOnly) {
      expect(r.src.status!.attach.jobId(h)).toBeDefined(); // /status knows it
      expect(r.src.jobId(h)).toBeUndefined(); // but TIMELINE drives partitions
    }
  });

  test('ready: /status or gRPC alone, up, listing no GPU worker is not ready (only TIMELINE alone may have none yet)', () => {
    const s = rig({ status: true });
    s.status(1000, snapshot({ uptime: 100, workers: [] }));
    expect(s.src.ready()).toEqual({ ok: false, reason: 'the daemon reports no GPU workers' });
    s.status(2000, snapshot({ uptime: 101, workers: [idle(0, 0)] }));
    expect(s.src.ready()).toEqual({ ok: true, reason: '' });
    const g = rig({ grpc: true });
    g.grpcStatus(1000, []);
    g.grpcMetrics({ uptime: 100, completed: {} });
    expect(g.src.ready()).toEqual({ ok: false, reason: 'the daemon reports no GPU workers' });
  });

  test('the /status document when /status drives: cuzk’s own pipelines and worker jobs; none before its first snapshot', () => {
    const r = rig({ status: true, grpc: true });
    r.refresh();
    expect(r.src.statusBody()).toBeNull();
    const snap = snapshot({ uptime: 77, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null], ['pending', null, null]])], workers: [idle(0, 0), proving(1, 0, A, 0, 0.5)] });
    r.status(1000, snap);
    r.refresh();
    const body = r.src.statusBody()!;
    expect(body.pipelines).toEqual(snap.pipelines);
    const ws = body.gpu_workers as Record<string, unknown>[];
    expect(ws[1]).toMatchObject({ worker_id: 1, state: 'proving', current_job: A });
  });

  test('a driver switch does not count /status’ failed partitions twice: what TIMELINE’s counter already had from /status stays, new failures add', () => {
    // With TIMELINE driving, /status' failed partitions are added to TIMELINE's (merge.ts
    // composePartitions); after the switch to /status its own counter drives: "counters go on
    // from where they were, moved by the new driver's increments only (nothing counted twice)".
    const r = rig({ status: true, timeline: true });
    r.status(1000, snapshot({ uptime: 100, pipelines: [pipeline(A, 'snap-update', [['synthesizing', null, null], ['synthesizing', null, null]])], workers: [idle(0, 0)] }));
    r.status(2000, snapshot({ uptime: 101, pipelines: [pipeline(A, 'snap-update', [['failed', null, null], ['synthesizing', null, null]])], workers: [idle(0, 0)] }));
    let m = r.refresh();
    expect(r.src.currentDriver).toBe('timeline');
    expect(m.kPartsFailed[kind('snap-update')]).toBe(1);
    skewNs = 11e9;
    m = r.refresh();
    expect(r.src.currentDriver).toBe('status');
    expect(m.kPartsFailed[kind('snap-update')]).toBe(1);
    r.status(3000, snapshot({ uptime: 102, pipelines: [pipeline(A, 'snap-update', [['failed', null, null], ['failed', null, null]])], workers: [idle(0, 0)] }));
    m = r.refresh();
    expect(m.kPartsFailed[kind('snap-update')]).toBe(2);
  });
});

describe('issue 23, fourth batch: TIMELINE keeps its own books while another surface drives the workers', () => {
  // docs/attach.md §3 (merge.ts nowNs): "TIMELINE keeps its own books while gRPC or /status drives the workers":
  // its worker totals are those of a TIMELINE that drove throughout, and a switch back
  // continues from them. Reference: the same lines, reads and collections on TIMELINE alone.
  // A stint picked up at offset 5 s runs when the lines stop; the log is read to 40 s (TIMELINE
  // vouches 1 s less: 39 s); gRPC says the worker idle meanwhile.
  test.each([
    // Written at 9 s, read at 41 s (a stalled journal flushed): lands at what was exposed, 39 s.
    ['a late GPU_END', [tl(9000, 'GPU_END', B, 'worker=0,partition=0,gpu_ms=4000')]],
    // A new daemon (offsets back by 4 s): the old stint ends where exposed, 39 s; worker 0 on a
    // PoSt of the new daemon (seen again, so TIMELINE alone still lists it).
    ['a daemon restart', [tl(1000, 'SYNTH_START', WP, 'kind=window-post'), tl(1000, 'GPU_PICKUP', WP, 'worker=0'), tl(1000, 'GPU_START', WP, 'worker=0')]],
  ])('a stint running when the lines stop, ended by %s while gRPC drives: credited as TIMELINE alone credits it (34 s)', (_what, ending) => {
    const both = rig({ grpc: true, timeline: true });
    const alone = rig({ timeline: true });
    both.src.timelineFeed(true, 'up');
    both.grpcMetrics({ uptime: 100, completed: { porep_c2: 1 } });
    both.grpcStatus(1000, [{ ordinal: 0 }]); // worker 0 idle per gRPC, throughout
    for (const r of [both, alone]) {
      r.lines(5000, ...pick(0, 0, 5000, B));
      r.readTo(7000);
      r.refresh(); // the evidence window starts (both)
      r.src.nowNs(); // a collection: the stint exposed to 6 s
      expect(r.src.currentDriver).toBe('timeline');
    }
    skewNs = 61e9;
    both.grpcMetrics({ uptime: 161, completed: { porep_c2: 3 } }); // two proofs ended, no TIMELINE line
    for (const r of [both, alone]) {
      r.readTo(40_000); // read to its end: nothing new
      r.refresh();
      r.src.nowNs(); // a collection
    }
    expect(both.src.currentDriver).toBe('grpc');
    for (const r of [both, alone]) {
      r.src.timeline!.lines(ending.join(''), false, r.hr(41_000));
      r.src.timeline!.caughtUp(r.hr(41_000));
    }
    const mb = both.refresh();
    const ma = alone.refresh();
    expect(both.src.currentDriver).toBe('timeline'); // lines again
    expect(ma.wBusyNs[alone.slot(0)] / 1e9).toBeCloseTo(34, 3);
    // Without TIMELINE's clock read while gRPC drove: 4 s (the end line's own time) or 1 s (the restart, what was exposed before the switch).
    expect(mb.wBusyNs[both.slot(0)] / 1e9).toBeCloseTo(34, 3);
  });
});

describe('a driver switch never takes exported busy seconds back', () => {
  // merge.ts composeWorkers: "the new driver's totals continue from what was exposed (never
  // back)". A counter that goes down reads as a reset to Prometheus (rate() then counts the
  // whole total again). What was exposed includes a stint still running at the switch.
  test('TIMELINE → gRPC with TIMELINE’s stint running and gRPC saying the worker idle', () => {
    const r = rig({ grpc: true, timeline: true });
    r.src.timelineFeed(true, 'up');
    r.grpcMetrics({ uptime: 100, completed: { porep_c2: 1 } });
    r.grpcStatus(1000, [{ ordinal: 0 }]); // worker 0 idle per gRPC, throughout
    r.lines(5000, ...pick(0, 0, 5000, B));
    r.readTo(7000);
    let m = r.refresh();
    expect(r.src.currentDriver).toBe('timeline');
    const s = r.slot(0);
    const before = m.workerBusyNsAt(s, r.src.nowNs()); // a collection
    expect(before / 1e9).toBeCloseTo(1, 3); // the running stint: picked up at 5 s, read to 7 s, vouched to 6 s (1 s of lag)
    skewNs = 61e9;
    r.grpcMetrics({ uptime: 161, completed: { porep_c2: 3 } }); // proofs end, no TIMELINE line: gRPC drives
    r.readTo(40_000);
    m = r.refresh();
    expect(r.src.currentDriver).toBe('grpc');
    const after = m.workerBusyNsAt(s, r.src.nowNs());
    expect(after).toBeGreaterThanOrEqual(before);
    // And on: gRPC says idle, so nothing is added, nothing taken.
    m = r.refresh();
    expect(m.workerBusyNsAt(s, r.src.nowNs())).toBe(after);
  });
});

describe('a failed job’s sibling picked up after /status showed it abandoned (skip after pickup)', () => {
  test('/status alone: its synth_done → gpu is the skip, not a re-registered job: nothing counted again', () => {
    // Shrunk from merge-monotone's property. Upstream (curio e0294b0f engine.rs): p0's
    // synthesis fails (status.rs partition_failed; the job failed), p1's completes
    // (synth_done); a worker picks p1 up — partition_gpu_start marks it `gpu` and the worker
    // `proving` — and drops it (the GPU worker's "already failed" check). /status shows p1
    // synth_done, then gpu, forever.
    const r = rig({ status: true });
    const at = (ms: number, parts: Parameters<typeof pipeline>[2], w0 = idle(0, 0)) =>
      r.status(ms, snapshot({ uptime: 100 + ms / 1000, pipelines: [pipeline('porep-1000-1', 'porep-c2', parts, ms / 1000)], workers: [w0, idle(1, 0)] }));
    const read = () => {
      const m = r.refresh();
      const k = kind('porep-c2');
      return { synthMs: Math.round(m.kSynthNs[k] / 1e6), failedParts: m.kPartsFailed[k], failedProofs: m.kProofsFailed[k], busy: m.wBusy[r.slot(0)] };
    };
    at(0, [['synthesizing', 0, null], ['synthesizing', 0, null]]);
    at(5000, [['failed', 5000, null], ['synth_done', 4000, null]]);
    const failed = read();
    expect(failed).toEqual({ synthMs: 9000, failedParts: 1, failedProofs: 1, busy: 0 });
    at(6000, [['failed', 6000, null], ['gpu', 4000, 1]], proving(0, 0, 'porep-1000-1', 1, 0.001));
    // Nothing of the job counted again; the worker holding the skip is not proving.
    expect(read()).toEqual(failed);
  });
});

describe('a job /status’ stale rules took for failed, moving on after all', () => {
  test('/status alone: a sibling it abandoned that starts synthesizing is not a re-registered job: the GPU stage already counted is not counted again', () => {
    // Shrunk from merge-monotone's property. p0 on the GPU for over a minute: status-stale.ts
    // rule 3 abandons it and fails the job, its pending p1 abandoned with it (rule 1); then
    // cuzk synthesizes p1 (the job had not failed: status.rs partition_synth_start).
    const r = rig({ status: true });
    const at = (ms: number, parts: Parameters<typeof pipeline>[2]) =>
      r.status(ms, snapshot({ uptime: 100 + ms / 1000, pipelines: [pipeline('porep-1000-1', 'porep-c2', parts, ms / 1000)], workers: [proving(0, 0, 'porep-1000-1', 0, ms / 1000), idle(1, 0)] }));
    const gpuMs = () => Math.round(r.refresh().kGpuNs[kind('porep-c2')] / 1e6);
    at(0, [['gpu', 0, 0], ['pending', null, null]]);
    at(60_001, [['gpu', 0, 60_001], ['pending', null, null]]);
    const seen = [gpuMs()];
    at(60_002, [['gpu', 0, 60_002], ['synthesizing', 0, null]]);
    seen.push(gpuMs());
    expect(seen).toEqual([60_001, 60_001]);
  });
});

describe('a worker /status showed idle (stale) and then proving the same stint again', () => {
  test('/status alone: the stint already credited is not counted again when the stale thresholds move up', () => {
    // Shrunk from merge-monotone's property. Worker 0 picks p0 at 0 s, p1 at 9 s (split
    // proving: p0 finalizing). At 69.001 s p1 has been on the GPU 60.001 s: status-stale.ts
    // rule 3 shows the worker idle (p1's 60.001 s credited: /status samples, cuzk's busy_secs
    // restarts at each pickup, p0's 9 s before the 9 s poll are not seen). Then p0 ends (done, gpu_ms 69 s):
    // the longest stage is 69 s, the threshold 5x that, and the worker is proving again with
    // cuzk's busy_secs 60.002 — the same stint, since 9 s, not a new one.
    const r = rig({ status: true });
    const at = (ms: number, parts: Parameters<typeof pipeline>[2], part: number) =>
      r.status(ms, snapshot({ uptime: 100 + ms / 1000, pipelines: [pipeline('porep-1000-1', 'porep-c2', parts, ms / 1000)], workers: [proving(0, 0, 'porep-1000-1', part, (ms - (part === 1 ? 9000 : 0)) / 1000), idle(1, 0)] }));
    const busy = () => {
      const m = r.refresh();
      return Math.round(m.workerBusyNsAt(r.slot(0), r.src.status!.attach.nowNs()) / 1e6) / 1e3;
    };
    at(0, [['gpu', 0, 0], ['synthesizing', 0, null]], 0);
    at(9000, [['gpu', 0, 9000], ['gpu', 9000, 0]], 1);
    at(69_001, [['gpu', 0, 69_001], ['gpu', 9000, 60_001]], 1);
    const seen = [busy()];
    at(69_002, [['done', 0, 69_001], ['gpu', 9000, 60_002]], 1);
    seen.push(busy());
    expect(seen).toEqual([60.001, 60.002]);
  });
});
