/**
 * StateMetricProducer (src/exporter/state-metrics.ts) on a stand-in model, for what the
 * golden run-mode script does not reach (DESIGN §5 and the file's rules):
 *  - the overflow kind `other` is exported only once something was folded into it, and
 *    then in every per-kind family; the canonical kinds always;
 *  - attach: cuzk_surface_up per surface, cuzk_surface_degraded for the fixed reasons of
 *    each surface (0/1), cuzk_exporter_kind_resolutions_total by evidence, build_info's
 *    surfaces comma-joined; run mode: one `engine` surface that is up as the model;
 *  - a worker whose GPU is not known is gpu="unknown"; gpu_info carries uuid and
 *    pci_bus_id only when known;
 *  - counters of time from the source's atomic totals when their lengths match the
 *    topology, else from the model at the source's clock; ns to s by division;
 *  - per-GPU lock counters and the finalize counter only with lock events;
 *  - cuzk_status_mismatch is the OR of the reasons;
 *  - families with no data point are left out; the histogram scope only with a series.
 */
import type { Attributes } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { DataPointType, MetricData } from '@opentelemetry/sdk-metrics';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import type { StateModel } from '../../src/engine/model/state-model';
import type { RunningTotals } from '../../src/engine/sources/source';
import { ProducerContext, StateMetricProducer } from '../../src/exporter/state-metrics';

const K = 5; // kinds slots: 4 canonical + other
const S = 5; // live states

function fakeModel(over: Record<string, unknown> = {}) {
  const errors = new ErrorCounts();
  errors.inc('poll');
  return {
    up: true,
    topologyVersion: 1,
    topology: {
      workers: [
        { id: 0, gpu: 0 },
        { id: 1, gpu: -1 },
      ],
      gpus: [
        { ordinal: 0, name: 'A', uuid: 'GPU-1', pciBusId: '0000:01:00.0' },
        { ordinal: 1, name: 'B', uuid: '', pciBusId: '' },
      ],
      lockEvents: false,
    },
    wBusy: [1, 0],
    wPartitions: [3, 4],
    workerBusyNsAt: (w: number, now: number) => (w + 1) * now,
    gpuLockHeldNsAt: (g: number, now: number) => (g + 1) * 2 * now,
    gpuStarvedNsAt: (g: number, now: number) => (g + 1) * 3 * now,
    workerStintSecondsAt: (w: number, now: number) => w + now / 1e9,
    kLive: new Array(K * S).fill(0),
    kGpuNs: new Array(K).fill(0),
    kFinalizeNs: new Array(K).fill(0),
    kSynthNs: new Array(K).fill(0),
    kPartsCompleted: new Array(K).fill(0),
    kPartsFailed: new Array(K).fill(0),
    kProofsCompleted: new Array(K).fill(0),
    kProofsFailed: new Array(K).fill(0),
    kProofsCancelled: new Array(K).fill(0),
    kQueueDepth: new Array(K).fill(0),
    synthActive: 1,
    synthMax: 2,
    memoryBudgetBytes: 100,
    memoryUsedBytes: 50,
    mismatchReason: (_r: number) => false,
    eventsTotal: 9,
    eventsDropped: 0,
    errors,
    histograms: {},
    ...over,
  };
}

function producer(model: ReturnType<typeof fakeModel>, ctx: Partial<ProducerContext> = {}) {
  return new StateMetricProducer({
    model: model as unknown as StateModel,
    info: { version: 'v', source: 'attach', backend: 'cuzk' },
    nowNs: () => 2e9,
    runningTotals: () => null,
    lastCollectSeconds: () => 0.5,
    resource: resourceFromAttributes({}),
    ...ctx,
  });
}

function family(ms: MetricData[], name: string): MetricData | undefined {
  return ms.find((m) => m.descriptor.name === name);
}
function points(ms: MetricData[], name: string): [Attributes, number][] {
  const f = family(ms, name);
  if (!f) throw new Error(`no ${name}`);
  return (f.dataPoints as { attributes: Attributes; value: number }[]).map((p) => [p.attributes, p.value]);
}
const kindsOf = (ms: MetricData[], name: string) => points(ms, name).map(([a]) => a.proof_kind);
const CANONICAL = ['porep-c2', 'snap-update', 'window-post', 'winning-post'];
const PER_KIND = [
  'cuzk_partition_gpu_seconds_total',
  'cuzk_partition_synthesis_seconds_total',
  'cuzk_partitions_completed_total',
  'cuzk_partitions_failed_total',
  'cuzk_proofs_completed_total',
  'cuzk_proofs_failed_total',
  'cuzk_proofs_cancelled_total',
  'cuzk_queue_depth',
];

describe('the overflow kind', () => {
  test('absent while nothing was folded into it', () => {
    const ms = producer(fakeModel()).metrics();
    for (const n of PER_KIND) expect(kindsOf(ms, n)).toEqual(CANONICAL);
    expect(points(ms, 'cuzk_partitions')).toHaveLength(4 * S);
  });

  const fields = ['kGpuNs', 'kSynthNs', 'kFinalizeNs', 'kPartsCompleted', 'kPartsFailed', 'kProofsCompleted', 'kProofsFailed', 'kProofsCancelled', 'kQueueDepth'];
  test.each(fields)('present in every per-kind family once %s has something for it', (field) => {
    const arr = new Array(K).fill(0);
    arr[4] = 1;
    const ms = producer(fakeModel({ [field]: arr })).metrics();
    for (const n of PER_KIND) expect(kindsOf(ms, n)).toEqual([...CANONICAL, 'other']);
    expect(points(ms, 'cuzk_partitions')).toHaveLength(5 * S);
  });

  test.each([0, 1, 2, 3, 4])('present once a live partition of it is in state %i', (s) => {
    const live = new Array(K * S).fill(0);
    live[4 * S + s] = 2;
    const ms = producer(fakeModel({ kLive: live })).metrics();
    expect(kindsOf(ms, 'cuzk_queue_depth')).toEqual([...CANONICAL, 'other']);
    const parts = points(ms, 'cuzk_partitions');
    const states = ['pending', 'synthesizing', 'synth_done', 'gpu', 'finalizing'];
    expect(parts.filter(([, v]) => v === 2)).toEqual([[{ proof_kind: 'other', state: states[s] }, 2]]);
  });

  test('a live partition of a canonical kind in the last state does not bring it in', () => {
    const live = new Array(K * S).fill(0);
    live[3 * S + 4] = 1;
    expect(kindsOf(producer(fakeModel({ kLive: live })).metrics(), 'cuzk_queue_depth')).toEqual(CANONICAL);
  });
});

test('per-kind values: seconds from ns by division, counts as they are, partitions by kind and state', () => {
  const gpu = [1e9, 2.5e9, 0, 3e9, 1];
  const live = Array.from({ length: K * S }, (_, i) => i);
  const ms = producer(fakeModel({ kGpuNs: gpu, kProofsCompleted: [1, 2, 3, 4, 5], kLive: live })).metrics();
  expect(points(ms, 'cuzk_partition_gpu_seconds_total').map(([, v]) => v)).toEqual([1, 2.5, 0, 3, 1e-9]);
  expect(points(ms, 'cuzk_proofs_completed_total').map(([, v]) => v)).toEqual([1, 2, 3, 4, 5]);
  expect(points(ms, 'cuzk_partitions')[7]).toEqual([{ proof_kind: 'snap-update', state: 'synth_done' }, 7]);
  expect(points(ms, 'cuzk_partitions')[24]).toEqual([{ proof_kind: 'other', state: 'finalizing' }, 24]);
});

describe('surfaces', () => {
  test('run mode: one engine surface, up as the model; no degraded family', () => {
    const ms = producer(fakeModel({ up: false })).metrics();
    expect(points(ms, 'cuzk_up')).toEqual([[{}, 0]]);
    expect(points(ms, 'cuzk_surface_up')).toEqual([[{ surface: 'engine' }, 0]]);
    expect(family(ms, 'cuzk_surface_degraded')).toBeUndefined();
    expect(points(ms, 'cuzk_exporter_build_info')).toEqual([[{ version: 'v', source: 'attach', backend: 'cuzk', surfaces: 'engine' }, 1]]);
    expect(points(producer(fakeModel()).metrics(), 'cuzk_up')).toEqual([[{}, 1]]);
  });

  test('attach: each surface, its fixed degraded reasons 0/1, build_info naming them all', () => {
    const surfaces = [
      { name: 'grpc', up: true },
      { name: 'status', up: false, degraded: ['no_pipelines'] },
      { name: 'timeline', up: true, degraded: ['batched'] },
    ];
    const ms = producer(fakeModel(), { surfaces: () => surfaces }).metrics();
    expect(points(ms, 'cuzk_surface_up')).toEqual([
      [{ surface: 'grpc' }, 1],
      [{ surface: 'status' }, 0],
      [{ surface: 'timeline' }, 1],
    ]);
    expect(points(ms, 'cuzk_surface_degraded')).toEqual([
      [{ surface: 'status', reason: 'no_pipelines' }, 1],
      [{ surface: 'timeline', reason: 'no_lines' }, 0],
      [{ surface: 'timeline', reason: 'split_prove_off' }, 0],
      [{ surface: 'timeline', reason: 'batched' }, 1],
    ]);
    expect(points(ms, 'cuzk_exporter_build_info')[0][0].surfaces).toBe('grpc,status,timeline');
  });

  test('attach with only surfaces that have no degraded reasons: no degraded family', () => {
    const ms = producer(fakeModel(), { surfaces: () => [{ name: 'grpc', up: true }] }).metrics();
    expect(family(ms, 'cuzk_surface_degraded')).toBeUndefined();
  });

  test('a surface without a degraded list: its reasons at 0', () => {
    const ms = producer(fakeModel(), { surfaces: () => [{ name: 'status', up: true }] }).metrics();
    expect(points(ms, 'cuzk_surface_degraded')).toEqual([[{ surface: 'status', reason: 'no_pipelines' }, 0]]);
  });
});

test('kind resolutions: a counter by evidence when there are any, no family otherwise', () => {
  const ms = producer(fakeModel(), { kindResolutions: () => new Map([['timeline', 3], ['unresolved', 1]]) }).metrics();
  const f = family(ms, 'cuzk_exporter_kind_resolutions_total')!;
  expect(f.dataPointType).toBe(DataPointType.SUM);
  expect((f as { isMonotonic?: boolean }).isMonotonic).toBe(true);
  expect(points(ms, 'cuzk_exporter_kind_resolutions_total')).toEqual([
    [{ evidence: 'timeline' }, 3],
    [{ evidence: 'unresolved' }, 1],
  ]);
  expect(family(producer(fakeModel(), { kindResolutions: () => [] }).metrics(), 'cuzk_exporter_kind_resolutions_total')).toBeUndefined();
  expect(family(producer(fakeModel()).metrics(), 'cuzk_exporter_kind_resolutions_total')).toBeUndefined();
});

test('worker and GPU labels: unknown GPU, uuid and PCI bus id only when known; rebuilt on a new topology version only', () => {
  const model = fakeModel();
  const p = producer(model);
  let ms = p.metrics();
  expect(points(ms, 'cuzk_gpu_worker_busy')).toEqual([
    [{ gpu: '0', worker: '0' }, 1],
    [{ gpu: 'unknown', worker: '1' }, 0],
  ]);
  expect(points(ms, 'cuzk_gpu_info')).toEqual([
    [{ gpu: '0', name: 'A', uuid: 'GPU-1', pci_bus_id: '0000:01:00.0' }, 1],
    [{ gpu: '1', name: 'B' }, 1],
  ]);
  // Same version: the same label objects (the writers cache text by object).
  const first = points(ms, 'cuzk_gpu_worker_busy')[0][0];
  ms = p.metrics();
  expect(points(ms, 'cuzk_gpu_worker_busy')[0][0]).toBe(first);
  model.topology = { ...model.topology, workers: [{ id: 5, gpu: 1 }] };
  model.wBusy = [1];
  ms = p.metrics();
  expect(points(ms, 'cuzk_gpu_worker_busy')[0][0]).toBe(first); // version unchanged: old labels kept
  model.topologyVersion = 2;
  ms = p.metrics();
  expect(points(ms, 'cuzk_gpu_worker_busy')).toEqual([[{ gpu: '1', worker: '5' }, 1]]);
});

describe('time counters', () => {
  const totals = (over: Partial<RunningTotals> = {}): RunningTotals => ({
    nowNs: 10e9,
    workerBusyNs: [1e9, 2e9],
    gpuLockHeldNs: [3e9, 4e9],
    gpuStarvedNs: [5e9, 6e9],
    ...over,
  });

  test('from the model at the source clock without totals; GPU lock counters only with lock events', () => {
    const ms = producer(fakeModel()).metrics();
    expect(points(ms, 'cuzk_gpu_worker_busy_seconds_total').map(([, v]) => v)).toEqual([2, 4]);
    expect(points(ms, 'cuzk_gpu_worker_current_partition_seconds').map(([, v]) => v)).toEqual([2, 3]);
    expect(family(ms, 'cuzk_gpu_busy_seconds_total')).toBeUndefined();
    expect(family(ms, 'cuzk_gpu_starved_seconds_total')).toBeUndefined();
    expect(family(ms, 'cuzk_partition_finalize_seconds_total')).toBeUndefined();
  });

  test('from the totals when their lengths match the topology, at the totals clock', () => {
    const m = fakeModel();
    m.topology.lockEvents = true;
    const ms = producer(m, { runningTotals: () => totals() }).metrics();
    expect(points(ms, 'cuzk_gpu_worker_busy_seconds_total').map(([, v]) => v)).toEqual([1, 2]);
    expect(points(ms, 'cuzk_gpu_busy_seconds_total')).toEqual([
      [{ gpu: '0' }, 3],
      [{ gpu: '1' }, 4],
    ]);
    expect(points(ms, 'cuzk_gpu_starved_seconds_total').map(([, v]) => v)).toEqual([5, 6]);
    // The stint is the model's, at the totals' clock.
    expect(points(ms, 'cuzk_gpu_worker_current_partition_seconds').map(([, v]) => v)).toEqual([10, 11]);
    expect(kindsOf(ms, 'cuzk_partition_finalize_seconds_total')).toEqual(CANONICAL);
  });

  test('totals of another length: the model at the totals clock for that part only', () => {
    const m = fakeModel();
    m.topology.lockEvents = true;
    let ms = producer(m, { runningTotals: () => totals({ workerBusyNs: [1e9] }) }).metrics();
    expect(points(ms, 'cuzk_gpu_worker_busy_seconds_total').map(([, v]) => v)).toEqual([10, 20]);
    expect(points(ms, 'cuzk_gpu_busy_seconds_total').map(([, v]) => v)).toEqual([3, 4]);
    ms = producer(m, { runningTotals: () => totals({ gpuLockHeldNs: [1] }) }).metrics();
    expect(points(ms, 'cuzk_gpu_worker_busy_seconds_total').map(([, v]) => v)).toEqual([1, 2]);
    expect(points(ms, 'cuzk_gpu_busy_seconds_total').map(([, v]) => v)).toEqual([20, 40]);
    expect(points(ms, 'cuzk_gpu_starved_seconds_total').map(([, v]) => v)).toEqual([30, 60]);
    ms = producer(m, { runningTotals: () => totals({ gpuStarvedNs: [1, 2, 3] }) }).metrics();
    expect(points(ms, 'cuzk_gpu_busy_seconds_total').map(([, v]) => v)).toEqual([20, 40]);
    expect(points(ms, 'cuzk_gpu_starved_seconds_total').map(([, v]) => v)).toEqual([30, 60]);
  });
});

test('mismatch: the flag is the OR of the reasons, each reason 0/1', () => {
  const none = producer(fakeModel()).metrics();
  expect(points(none, 'cuzk_status_mismatch')).toEqual([[{}, 0]]);
  expect(points(none, 'cuzk_status_mismatch_reason').map(([a, v]) => [a.reason, v])).toEqual([
    ['idle_with_partitions_on_gpu', 0],
    ['owner_idle', 0],
    ['surfaces_disagree', 0],
  ]);
  const one = producer(fakeModel({ mismatchReason: (r: number) => r === 2 })).metrics();
  expect(points(one, 'cuzk_status_mismatch')).toEqual([[{}, 1]]);
  expect(points(one, 'cuzk_status_mismatch_reason').map(([, v]) => v)).toEqual([0, 0, 1]);
  const first = producer(fakeModel({ mismatchReason: (r: number) => r === 0 })).metrics();
  expect(points(first, 'cuzk_status_mismatch')).toEqual([[{}, 1]]);
});

test('gauges of the model, errors by reason, scrape duration; empty families left out', () => {
  const m = fakeModel({ topology: { workers: [], gpus: [], lockEvents: false }, wBusy: [], wPartitions: [] });
  const ms = producer(m).metrics();
  expect(points(ms, 'cuzk_synthesis_active')).toEqual([[{}, 1]]);
  expect(points(ms, 'cuzk_synthesis_max_concurrent')).toEqual([[{}, 2]]);
  expect(points(ms, 'cuzk_memory_budget_bytes')).toEqual([[{}, 100]]);
  expect(points(ms, 'cuzk_memory_used_bytes')).toEqual([[{}, 50]]);
  expect(points(ms, 'cuzk_exporter_events_total')).toEqual([[{}, 9]]);
  expect(points(ms, 'cuzk_exporter_events_dropped_total')).toEqual([[{}, 0]]);
  expect(points(ms, 'cuzk_exporter_errors_total')).toEqual([[{ reason: 'poll' }, 1]]);
  expect(points(ms, 'cuzk_exporter_scrape_duration_seconds')).toEqual([[{}, 0.5]]);
  for (const n of ['cuzk_gpu_info', 'cuzk_gpu_worker_busy', 'cuzk_gpu_worker_busy_seconds_total', 'cuzk_gpu_worker_partitions_total', 'cuzk_gpu_worker_current_partition_seconds']) {
    expect(family(ms, n)).toBeUndefined();
  }
  expect(ms.every((f) => f.dataPoints.length > 0)).toBe(true);
  const noErrors = producer(fakeModel({ errors: new ErrorCounts() })).metrics();
  expect(family(noErrors, 'cuzk_exporter_errors_total')).toBeUndefined();
});

test('collect: no histogram scope without one configured, nor without a series', async () => {
  const m = fakeModel({ histograms: { partitionGpuSeconds: { size: 0 }, partitionFinalizeSeconds: { size: 0 }, partitionSynthesisSeconds: { size: 0 }, proofSeconds: { size: 0 }, queueWaitSeconds: { size: 0 }, gpuIdleGapSeconds: { size: 0 } } });
  const plain = await producer(m).collect();
  expect(plain.resourceMetrics.scopeMetrics.map((s) => s.scope.name)).toEqual(['cuzk-exporter']);
  const empty = await producer(m, { histogramScope: { name: 'h' } }).collect();
  expect(empty.resourceMetrics.scopeMetrics.map((s) => s.scope.name)).toEqual(['cuzk-exporter']);
  expect(plain.errors).toEqual([]);
});

test('HELP: every family has one; the degraded and kind-resolution families name each label value they carry (docs/design.md §5 table)', () => {
  const surfaces = [
    { name: 'status', up: true, degraded: ['no_pipelines'] },
    { name: 'timeline', up: true },
  ];
  const ms = producer(fakeModel(), { surfaces: () => surfaces, kindResolutions: () => [['timeline', 1]] }).metrics();
  for (const f of ms) expect([f.descriptor.name, f.descriptor.description !== '']).toEqual([f.descriptor.name, true]);
  const help = (n: string) => family(ms, n)!.descriptor.description;
  for (const r of ['no_lines', 'split_prove_off', 'batched', 'no_pipelines']) expect(help('cuzk_surface_degraded')).toContain(r);
  for (const e of ['timeline', 'status', 'grpc_status', 'request_id', 'partition_index', 'grpc_metrics', 'unresolved']) {
    expect(help('cuzk_exporter_kind_resolutions_total')).toContain(e);
  }
});

describe('point times', () => {
  afterEach(() => jest.restoreAllMocks());

  test('OpenTelemetry HrTime [seconds, nanoseconds] of the wall clock: start at construction, end at collection', () => {
    const now = jest.spyOn(Date, 'now').mockReturnValue(1_700_000_123_456);
    const p = producer(fakeModel());
    now.mockReturnValue(1_700_000_200_007);
    const ms = p.metrics();
    expect(ms.length).toBeGreaterThan(10);
    for (const f of ms) {
      for (const dp of f.dataPoints) {
        expect([f.descriptor.name, dp.startTime, dp.endTime]).toEqual([f.descriptor.name, [1_700_000_123, 456_000_000], [1_700_000_200, 7_000_000]]);
      }
    }
  });
});
