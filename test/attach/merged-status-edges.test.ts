/**
 * Issue 23: the merged /status document (attach/merged-status.ts) where surfaces other than
 * TIMELINE are attached — merged-status.test.ts covers TIMELINE alone. By the module's
 * header: proofs by kind from the surface that sees every kind (gRPC's GetMetrics, PoSt
 * included) else /status' own counters; a job's partitions up to the total /status gives it;
 * /status' own sections (uptime, memory...) where /status is attached; the GPUs by name where
 * gRPC is; workers as the model has them (the job a gRPC-driven worker runs, as GetStatus
 * names it). Surfaces are fed directly (applyBody / applyStatus / applyMetrics / lines),
 * none started.
 */
import { MergedAttachSource } from '../../src/engine/sources/attach/merge';
import { parseCuzkMetrics } from '../../src/engine/sources/attach/grpc-wire';
import { mergedStatusBody } from '../../src/engine/sources/attach/merged-status';
import { createLogger } from '../../src/util/logger';
import { cuzkMetricsText } from './grpc-server';
import { idle, pipeline, snapshot } from './snapshots';
import { tl } from './timeline-driver';

type Body = Record<string, unknown> & { pipelines: Record<string, unknown>[]; gpu_workers: Record<string, unknown>[] };

function merge(o: { status?: boolean; grpc?: boolean; timeline?: boolean }) {
  const src = new MergedAttachSource({
    statusUrl: o.status ? 'http://127.0.0.1:9/status' : undefined,
    grpcAddress: o.grpc ? '127.0.0.1:9' : undefined,
    timelineFile: o.timeline ? '/nonexistent/cuzk.log' : undefined,
    pollIntervalMs: 1000,
    grpcStatusIntervalMs: 5000,
    timeoutMs: 1000,
    maxBodyBytes: 1 << 20,
    logger: createLogger('error', 'json', () => {}),
    timeline: { sweepMs: 0, maxClockLeadMs: Number.MAX_SAFE_INTEGER, gpuTimeoutMs: 1e12 },
  });
  const epochHr = Number(process.hrtime.bigint()) - 60e9;
  const hr = (ms: number) => epochHr + (ms + 2) * 1e6;
  return {
    src,
    hr,
    lines: (ms: number, ...l: string[]) => {
      src.timeline!.lines(l.join(''), false, hr(ms));
      src.timeline!.caughtUp(hr(ms));
    },
    body: (atMs: number): Body => {
      src.refresh();
      return mergedStatusBody(src, hr(atMs)) as Body;
    },
  };
}
const opened: MergedAttachSource[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.stop();
});
function rig(o: Parameters<typeof merge>[0]) {
  const r = merge(o);
  opened.push(r.src);
  return r;
}
const pick = (job: string, w: number, p: number, ms: number) => [tl(ms, 'GPU_PICKUP', job, `worker=${w},partition=${p}`), tl(ms, 'GPU_START', job, `worker=${w},partition=${p}`)];

test('gRPC attached: the daemon’s own totals by kind from GetMetrics (PoSt included, every kind named), the GPUs by name', () => {
  const r = rig({ grpc: true, timeline: true });
  r.src.grpc!.applyMetrics(parseCuzkMetrics(cuzkMetricsText({ uptime: 100, completed: { porep_c2: 7, window_post: 3 }, failed: { snap_update: 2 }, queue: 4 })));
  r.src.grpc!.applyStatus({ gpus: [{ ordinal: 0, name: 'RTX A', current_job_id: '', current_proof_kind: '' }, { ordinal: 1, name: 'RTX B', current_job_id: '', current_proof_kind: '' }], queues: [], uptimeSeconds: 100, totalCompleted: 10, totalFailed: 2 }, r.hr(1000));
  r.lines(1000, ...pick('S', 0, 0, 1000));
  const b = r.body(1500);
  expect(b.counters).toEqual({
    total_completed: 10,
    total_failed: 2,
    completed_by_kind: { 'porep-c2': 7, 'snap-update': 0, 'window-post': 3, 'winning-post': 0 },
    failed_by_kind: { 'porep-c2': 0, 'snap-update': 2, 'window-post': 0, 'winning-post': 0 },
    queue_depth: 4,
    source: 'grpc',
  });
  expect(b.gpus).toEqual([{ ordinal: 0, name: 'RTX A' }, { ordinal: 1, name: 'RTX B' }]);
  expect(b.uptime_secs).toBe(1); // no /status: the last TIMELINE offset
});

test('a kind gRPC does not know is listed as "other", only when it is there', () => {
  const r = rig({ grpc: true });
  r.src.grpc!.applyMetrics(parseCuzkMetrics(cuzkMetricsText({ uptime: 100, completed: { porep_c2: 1, brand_new_kind: 5 } })));
  const c = r.body(0).counters as { completed_by_kind: Record<string, number>; failed_by_kind: Record<string, number> };
  expect(c.completed_by_kind).toEqual({ 'porep-c2': 1, 'snap-update': 0, 'window-post': 0, 'winning-post': 0, other: 5 });
  expect(c.failed_by_kind).not.toHaveProperty('other');
});

test('gRPC attached but no GetMetrics answer yet: /status’ counters; no gRPC, no GPU list', () => {
  const r = rig({ status: true, grpc: true, timeline: true });
  const snap = snapshot({ uptime: 42, workers: [idle(0, 0)], completed: { 'porep-c2': 3 } });
  r.src.status!.applyBody(snap, r.hr(1000));
  const b = r.body(1000);
  expect(b.counters).toEqual(snap.counters);
  expect(b.uptime_secs).toBe(42); // /status' own
  expect(b.memory).toEqual(snap.memory);
  const s = rig({ status: true, timeline: true });
  s.src.status!.applyBody(snap, s.hr(1000));
  const sb = s.body(1000);
  expect(sb.counters).toEqual(snap.counters);
  expect(sb).not.toHaveProperty('gpus');
});

test('TIMELINE alone: no counters, uptime 0 before any line', () => {
  const r = rig({ timeline: true });
  const b = r.body(0);
  expect(b).not.toHaveProperty('counters');
  expect(b).not.toHaveProperty('gpus');
  expect(b.uptime_secs).toBe(0);
  expect(b.pipelines).toEqual([]);
});

test('a job’s partitions go up to the total /status gives it (over the kind’s and over what TIMELINE saw)', () => {
  const r = rig({ status: true, timeline: true });
  r.src.status!.applyBody(snapshot({ uptime: 10, pipelines: [pipeline('P', 'porep-c2', [['gpu', 1, null], ['pending', null, null], ['pending', null, null]])], workers: [idle(0, 0)] }), r.hr(500));
  r.lines(1000, ...pick('P', 0, 0, 1000));
  const p = r.body(1200).pipelines.find((x) => x.job_id === 'P')!;
  expect(p.total_partitions).toBe(3); // not PoRep's 10
  expect(p).not.toHaveProperty('total_partitions_estimated');
  expect((p.partitions as { index: number; state: string }[]).map((x) => [x.index, x.state])).toEqual([[0, 'gpu'], [1, 'pending'], [2, 'pending']]);
  expect(p).toMatchObject({ proof_kind: 'porep-c2', kind_evidence: 'status' });
});

test('gRPC drives the workers: a busy worker’s job is the one GetStatus names, with times from its answer', () => {
  const r = rig({ grpc: true });
  r.src.grpc!.applyStatus({ gpus: [{ ordinal: 0, name: 'A', current_job_id: 'wdpost-77', current_proof_kind: 'window-post' }, { ordinal: 0, name: 'A', current_job_id: '', current_proof_kind: '' }], queues: [], uptimeSeconds: 100, totalCompleted: 0, totalFailed: 0 }, r.hr(1000));
  const b = r.body(3000);
  expect(b.gpu_workers[0]).toMatchObject({ worker_id: 0, gpu_ordinal: 0, state: 'proving', current_job: 'wdpost-77', current_partition: 0, current_kind: 'window-post' });
  expect(b.gpu_workers[0].busy_secs).toBeCloseTo(2, 6);
  expect(b.gpu_workers[0].stint_secs).toBeCloseTo(2, 6);
  expect(b.gpu_workers[1]).toMatchObject({ state: 'idle', current_job: null, busy_secs: null });
});

describe('issue 23: survivors of the merged-status.ts Stryker run', () => {
  test('a stage measured as 0 ms is reported as 0 ms, not as "not seen" (null)', () => {
    // cuzk's /status: synth_ms / gpu_ms are the measured durations when the stage was seen
    // (Option<u64>); a sub-millisecond stage rounds to 0 and is still seen.
    const r = rig({ timeline: true });
    r.lines(1000, tl(1000, 'SYNTH_START', 'Z', 'partition=0'), tl(1000, 'SYNTH_START', 'Z', 'partition=1'));
    r.lines(1000, tl(1000, 'SYNTH_END', 'Z', 'partition=0,synth_ms=0'), tl(1000, 'GPU_QUEUE', 'Z', 'partition=0'), ...pick('Z', 0, 0, 1000));
    r.lines(1000, tl(1000, 'GPU_END', 'Z', 'worker=0,partition=0,gpu_ms=0'));
    const p = r.body(1200).pipelines.find((x) => x.job_id === 'Z')!;
    const parts = p.partitions as Record<string, unknown>[];
    expect(parts[0]).toMatchObject({ index: 0, state: 'done', synth_ms: 0, gpu_ms: 0 });
    expect(parts[1]).toMatchObject({ index: 1, state: 'synthesizing', synth_ms: null, gpu_ms: null });
  });

  test('a worker busy on a porep-c2 partition (kind slot 0) names its kind', () => {
    // /status (TIMELINE attached too) names the job's kind: porep-c2, the first kind.
    const r = rig({ status: true, timeline: true });
    r.src.status!.applyBody(snapshot({ uptime: 10, pipelines: [pipeline('C2', 'porep-c2', [['gpu', 1, null]])], workers: [idle(0, 0)] }), r.hr(500));
    r.lines(1000, ...pick('C2', 0, 0, 1000));
    const w = r.body(1500).gpu_workers[0];
    expect(w).toMatchObject({ worker_id: 0, state: 'proving', current_job: 'C2', current_partition: 0, current_kind: 'porep-c2' });
  });
});
