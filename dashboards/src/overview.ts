/**
 * The main cuzk-exporter dashboard: fleet totals on top (cheap, from recording rules), then
 * per-host drill-down rows filtered by the `instance` / `gpu` variables (raw metrics with
 * [$__rate_interval], so they stay correct at any zoom). Every query returns data for a
 * healthy exporter after ~1 minute of 15 s (or shorter) scrapes.
 */
import {
  datasourceVariable,
  DS,
  JsonObject,
  layout,
  q,
  queryVariable,
  stat,
  stateTimeline,
  table,
  timeseries,
  Threshold,
  ValueMapping,
} from './builder';
import type { DashboardJson, GrafanaOverride } from './grafana-types';

export const OVERVIEW_UID = 'cuzk-overview';
export const OVERVIEW_TITLE = 'cuzk GPU proving — overview';
export const SCHEMA_VERSION = 39;

/** Label filters shared by every query. */
const I = 'job=~"$job", instance=~"$instance"';
const G = `${I}, gpu=~"$gpu"`;
const RI = '[$__rate_interval]';

const PERCENT = { unit: 'percentunit', min: 0, max: 1 };
const UTIL_THRESHOLDS: Threshold[] = [
  { value: null, color: 'red' },
  { value: 0.5, color: 'orange' },
  { value: 0.8, color: 'green' },
];
const BUSY_MAPPING: ValueMapping[] = [
  { value: '0', text: 'idle', color: '#8e8e8e' },
  { value: '1', text: 'busy', color: 'green' },
];
const UP_MAPPING: ValueMapping[] = [
  { value: '0', text: 'down', color: 'red' },
  { value: '1', text: 'up', color: 'green' },
];
const MISMATCH_MAPPING: ValueMapping[] = [
  { value: '0', text: 'consistent', color: 'green' },
  { value: '1', text: 'MISMATCH', color: 'red' },
];
const ZERO_GOOD: Threshold[] = [
  { value: null, color: 'green' },
  { value: 1, color: 'red' },
];

function byName(name: string, properties: GrafanaOverride['properties']): GrafanaOverride {
  return { matcher: { id: 'byName', options: name }, properties };
}

function fleetRow() {
  const hostTable = table({
    title: 'Hosts',
    description:
      'One row per exporter. Click an instance to drill down to it. Utilisation comes from the busy-seconds counters (recording rules, 1m). "Partitions on GPU" (gpu + finalizing) above "busy workers" is normal split proving (finished kernels finalize while the worker proves the next partition); "Status" says whether the prover contradicts itself for certain.',
    w: 24,
    h: 8,
    targets: [
      q(`avg by (instance) (instance_gpu:cuzk_gpu_worker_utilization:ratio_rate1m{${G}})`, { instant: true, table: true }),
      q(`avg by (instance) (instance_gpu:cuzk_gpu_lock_utilization:ratio_rate1m{${G}})`, { instant: true, table: true }),
      q(`sum by (instance) (cuzk_queue_depth{${I}})`, { instant: true, table: true }),
      q(`sum by (instance) (cuzk_partitions{${I}, state=~"gpu|finalizing"})`, { instant: true, table: true }),
      q(`sum by (instance) (cuzk_gpu_worker_busy{${I}})`, { instant: true, table: true }),
      q(`max by (instance) (cuzk_status_mismatch{${I}})`, { instant: true, table: true }),
      q(`max by (instance) (cuzk_up{${I}})`, { instant: true, table: true }),
      q(`sum by (instance) (increase(cuzk_proofs_failed_total{${I}}[$__range]))`, { instant: true, table: true }),
    ],
    transformations: [
      { id: 'merge', options: {} },
      {
        id: 'organize',
        options: {
          excludeByName: { Time: true },
          indexByName: {},
          renameByName: {
            'Value #A': 'Worker utilization',
            'Value #B': 'GPU lock utilization',
            'Value #C': 'Queued proofs',
            'Value #D': 'Partitions on GPU',
            'Value #E': 'Busy workers',
            'Value #F': 'Status',
            'Value #G': 'Source',
            'Value #H': 'Failed proofs (range)',
          },
        },
      },
    ],
    overrides: [
      byName('instance', [
        {
          id: 'links',
          value: [
            {
              title: 'Drill down to ${__value.raw}',
              url: `/d/${OVERVIEW_UID}?\${__url_time_range}&\${datasource:queryparam}&var-instance=\${__value.raw}`,
            },
          ],
        },
      ]),
      byName('Worker utilization', [
        { id: 'unit', value: 'percentunit' },
        { id: 'custom.cellOptions', value: { type: 'gauge', mode: 'basic' } },
        { id: 'min', value: 0 },
        { id: 'max', value: 1 },
      ]),
      byName('GPU lock utilization', [
        { id: 'unit', value: 'percentunit' },
        { id: 'custom.cellOptions', value: { type: 'gauge', mode: 'basic' } },
        { id: 'min', value: 0 },
        { id: 'max', value: 1 },
      ]),
      byName('Status', [
        { id: 'mappings', value: [{ type: 'value', options: { '0': { text: 'consistent', color: 'green', index: 0 }, '1': { text: 'MISMATCH', color: 'red', index: 1 } } }] },
        { id: 'custom.cellOptions', value: { type: 'color-text' } },
      ]),
      byName('Source', [
        { id: 'mappings', value: [{ type: 'value', options: { '0': { text: 'down', color: 'red', index: 0 }, '1': { text: 'up', color: 'green', index: 1 } } }] },
        { id: 'custom.cellOptions', value: { type: 'color-text' } },
      ]),
      byName('Failed proofs (range)', [
        { id: 'decimals', value: 0 },
        { id: 'thresholds', value: { mode: 'absolute', steps: [{ color: 'green', value: null }, { color: 'red', value: 1 }] } },
        { id: 'custom.cellOptions', value: { type: 'color-text' } },
      ]),
    ],
  });

  return {
    title: 'Fleet',
    panels: [
      stat({
        title: 'Exporters / sources up',
        description: 'Exporters Prometheus can scrape (up) and, of those, the ones whose proving source answers (cuzk_up), out of all selected.',
        targets: [
          q(`sum(up{${I}})`, { legend: 'exporters' }),
          q(`sum(cuzk_up{${I}})`, { legend: 'sources' }),
          q(`count(cuzk_up{${I}})`, { legend: 'selected' }),
        ],
        field: { decimals: 0, thresholds: [{ value: null, color: 'blue' }] },
      }),
      stat({
        title: 'GPUs / workers',
        description: 'GPUs and GPU worker threads reporting in the selection.',
        targets: [
          q(`count(count by (job, instance, gpu) (cuzk_gpu_worker_busy{${G}}))`, { legend: 'GPUs' }),
          q(`count(cuzk_gpu_worker_busy{${G}})`, { legend: 'workers' }),
        ],
        field: { decimals: 0, thresholds: [{ value: null, color: 'blue' }] },
      }),
      stat({
        title: 'Worker utilization (fleet)',
        description: 'Average fraction of time GPU workers owned a partition, from cuzk_gpu_worker_busy_seconds_total (recording rule, 1m).',
        targets: [q(`avg(instance_gpu:cuzk_gpu_worker_utilization:ratio_rate1m{${G}})`, { legend: 'workers busy' })],
        field: { ...PERCENT, thresholds: UTIL_THRESHOLDS },
        graph: true,
      }),
      stat({
        title: 'GPU lock utilization (fleet)',
        description: 'Average fraction of time the per-GPU kernel lock was held, from cuzk_gpu_busy_seconds_total (recording rule, 1m).',
        targets: [q(`avg(instance_gpu:cuzk_gpu_lock_utilization:ratio_rate1m{${G}})`, { legend: 'lock held' })],
        field: { ...PERCENT, thresholds: UTIL_THRESHOLDS },
        graph: true,
      }),
      stat({
        title: 'Proofs (selected range)',
        description: 'Proofs completed and failed across the selection during the dashboard time range.',
        targets: [
          q(`sum(increase(cuzk_proofs_completed_total{${I}}[$__range]))`, { legend: 'completed', instant: true }),
          q(`sum(increase(cuzk_proofs_failed_total{${I}}[$__range]))`, { legend: 'failed', instant: true }),
        ],
        field: { decimals: 0, thresholds: [{ value: null, color: 'blue' }] },
        overrides: [byName('failed', [{ id: 'thresholds', value: { mode: 'absolute', steps: [{ color: 'green', value: null }, { color: 'red', value: 1 }] } }])],
      }),
      stat({
        title: 'Status mismatches',
        description:
          'Hosts whose exporter flags cuzk_status_mismatch: a worker reported idle while a partition it picked up is still on the GPU, for certain (the historical cuzk status bug). Should be 0. More partitions on the GPU than busy workers is not a mismatch (split proving).',
        targets: [q(`sum(cuzk_status_mismatch{${I}})`, { legend: 'hosts' })],
        field: { decimals: 0, thresholds: ZERO_GOOD },
      }),
      timeseries({
        title: 'Worker utilization by host (from busy-seconds)',
        description: 'Per host, the average fraction of time its GPU workers owned a partition (recording rule instance_gpu:cuzk_gpu_worker_utilization:ratio_rate1m).',
        targets: [q(`avg by (instance) (instance_gpu:cuzk_gpu_worker_utilization:ratio_rate1m{${G}})`, { legend: '{{instance}}' })],
        field: PERCENT,
        w: 8,
      }),
      timeseries({
        title: 'Proof throughput by kind (fleet)',
        description: 'Proofs completed per minute across the selection (recording rule, 1m).',
        targets: [q(`sum by (proof_kind) (instance_proof_kind:cuzk_proofs_completed:rate1m{${I}}) * 60`, { legend: '{{proof_kind}}' })],
        field: { unit: 'short', min: 0 },
        axisLabel: 'proofs / min',
        w: 8,
      }),
      timeseries({
        title: 'Partition GPU time by proof kind (fleet)',
        description: 'GPU-stage seconds per second spent on each proof kind across the selection (recording rule, 1m). Stacked: the total is the number of GPUs kept busy.',
        targets: [q(`sum by (proof_kind) (instance_proof_kind:cuzk_partition_gpu_seconds:rate1m{${I}})`, { legend: '{{proof_kind}}' })],
        field: { unit: 'short', min: 0 },
        axisLabel: 'GPU-seconds / s',
        stack: true,
        w: 8,
      }),
      hostTable,
    ],
  };
}

function workersRow() {
  return {
    title: 'GPU workers — $instance',
    panels: [
      stateTimeline({
        title: 'Worker busy / idle',
        description:
          'cuzk_gpu_worker_busy per worker as sampled at each scrape. Partitions shorter than the scrape interval can fall between samples; the utilisation panels (from the busy-seconds counters) are exact.',
        targets: [q(`max by (instance, gpu, worker) (cuzk_gpu_worker_busy{${G}})`, { legend: '{{instance}} GPU {{gpu}} W{{worker}}' })],
        field: { mappings: BUSY_MAPPING, thresholds: [{ value: null, color: '#8e8e8e' }] },
        w: 24,
        h: 7,
      }),
      timeseries({
        title: 'Worker utilization (exact, from busy-seconds)',
        description: 'rate(cuzk_gpu_worker_busy_seconds_total): the fraction of time each worker owned a partition, including the running partition up to the scrape.',
        targets: [q(`rate(cuzk_gpu_worker_busy_seconds_total{${G}}${RI})`, { legend: '{{instance}} GPU {{gpu}} W{{worker}}' })],
        field: PERCENT,
      }),
      timeseries({
        title: 'Per-GPU utilization',
        description:
          'Workers busy: busy-seconds rate of the GPU\'s workers divided by the number of workers. Kernel lock held: rate(cuzk_gpu_busy_seconds_total), the time the GPU itself computed. With dual workers, workers busy ≈ 1 while the lock is below 1 means CPU-side preparation dominates.',
        targets: [
          q(
            `sum by (instance, gpu) (rate(cuzk_gpu_worker_busy_seconds_total{${G}}${RI})) / count by (instance, gpu) (cuzk_gpu_worker_busy_seconds_total{${G}})`,
            { legend: '{{instance}} GPU {{gpu}} workers busy' },
          ),
          q(`sum by (instance, gpu) (rate(cuzk_gpu_busy_seconds_total{${G}}${RI}))`, { legend: '{{instance}} GPU {{gpu}} kernel lock held' }),
        ],
        field: PERCENT,
      }),
      timeseries({
        title: 'Current partition age per worker',
        description: 'Seconds each worker has owned its current partition (0 when idle). A line that keeps climbing is a stuck worker (alert CuzkGpuWorkerStuck).',
        targets: [q(`cuzk_gpu_worker_current_partition_seconds{${G}}`, { legend: '{{instance}} GPU {{gpu}} W{{worker}}' })],
        field: { unit: 's', min: 0 },
        w: 8,
      }),
      timeseries({
        title: 'Partitions finished per worker',
        description: 'Partitions each worker finished per minute; unequal lines on one GPU mean the interlock is not sharing work.',
        targets: [q(`rate(cuzk_gpu_worker_partitions_total{${G}}${RI}) * 60`, { legend: '{{instance}} GPU {{gpu}} W{{worker}}' })],
        field: { unit: 'short', min: 0 },
        axisLabel: 'partitions / min',
        w: 8,
      }),
      timeseries({
        title: 'GPU starved time',
        description:
          'Fraction of time the GPU lock was free while no synthesized partition was waiting (cuzk_gpu_starved_seconds_total). High means synthesis-bound: add CPU/RAM or synthesis slots, not GPUs.',
        targets: [q(`sum by (instance, gpu) (rate(cuzk_gpu_starved_seconds_total{${G}}${RI}))`, { legend: '{{instance}} GPU {{gpu}}' })],
        field: PERCENT,
        w: 8,
      }),
      timeseries({
        title: 'GPU idle gaps between partition proves',
        description: 'Time from a GPU-lock release to the next acquire (cuzk_gpu_idle_gap_seconds): the gaps dual workers exist to remove.',
        targets: [
          q(`histogram_quantile(0.5, sum by (le, instance, gpu) (rate(cuzk_gpu_idle_gap_seconds_bucket{${G}}${RI})))`, { legend: 'p50 {{instance}} GPU {{gpu}}' }),
          q(`histogram_quantile(0.9, sum by (le, instance, gpu) (rate(cuzk_gpu_idle_gap_seconds_bucket{${G}}${RI})))`, { legend: 'p90 {{instance}} GPU {{gpu}}' }),
          q(
            `sum by (instance, gpu) (rate(cuzk_gpu_idle_gap_seconds_sum{${G}}${RI})) / sum by (instance, gpu) (rate(cuzk_gpu_idle_gap_seconds_count{${G}}${RI}))`,
            { legend: 'mean {{instance}} GPU {{gpu}}' },
          ),
        ],
        field: { unit: 's', min: 0 },
      }),
      table({
        title: 'GPUs',
        description: 'GPU identity (cuzk_gpu_info); other metrics carry only the gpu ordinal.',
        targets: [q(`cuzk_gpu_info{${G}}`, { instant: true, table: true })],
        transformations: [
          { id: 'organize', options: { excludeByName: { Time: true, Value: true, __name__: true, job: true }, indexByName: {}, renameByName: {} } },
        ],
      }),
    ],
  };
}

function partitionsRow() {
  return {
    title: 'Partitions and proofs — $instance',
    panels: [
      timeseries({
        title: 'Partitions by state',
        description:
          'Partitions now pending, synthesizing, synthesized (waiting for a GPU), gpu (kernels running, owned by a worker) and finalizing (kernels done, GPU lock released, CPU epilogue running while the worker already proves its next partition), from cuzk_partitions. An attached cuzk /status cannot tell finalizing from gpu and reports both as gpu.',
        targets: [q(`sum by (instance, state) (cuzk_partitions{${I}})`, { legend: '{{instance}} {{state}}' })],
        field: { unit: 'short', min: 0, decimals: 0 },
        stack: true,
        w: 8,
      }),
      timeseries({
        title: 'Partition GPU time by proof kind',
        description: 'rate(cuzk_partition_gpu_seconds_total): GPU-stage seconds per second of finished partitions, by proof kind.',
        targets: [q(`sum by (instance, proof_kind) (rate(cuzk_partition_gpu_seconds_total{${I}}${RI}))`, { legend: '{{instance}} {{proof_kind}}' })],
        field: { unit: 'short', min: 0 },
        axisLabel: 'GPU-seconds / s',
        stack: true,
        w: 8,
      }),
      timeseries({
        title: 'Partition synthesis time by proof kind',
        description: 'rate(cuzk_partition_synthesis_seconds_total): CPU synthesis seconds per second of finished partitions, by proof kind.',
        targets: [q(`sum by (instance, proof_kind) (rate(cuzk_partition_synthesis_seconds_total{${I}}${RI}))`, { legend: '{{instance}} {{proof_kind}}' })],
        field: { unit: 'short', min: 0 },
        axisLabel: 'CPU-seconds / s',
        stack: true,
        w: 8,
      }),
      timeseries({
        title: 'Partition finalize time by proof kind',
        description:
          'Split proving: time partitions spent finalizing after their kernels released the GPU lock (the CPU epilogue, b_g2_msm in cuzk), as finalize-seconds per second (rate of cuzk_partition_finalize_seconds_total) and p90 per partition (cuzk_partition_finalize_duration_seconds). Part of the GPU-stage time; the worker is free for its next partition meanwhile. Known in run mode (the source reports the lock release).',
        targets: [
          q(`sum by (instance, proof_kind) (rate(cuzk_partition_finalize_seconds_total{${I}}${RI}))`, { legend: 'finalize-s/s {{instance}} {{proof_kind}}' }),
          q(`histogram_quantile(0.9, sum by (le, proof_kind) (rate(cuzk_partition_finalize_duration_seconds_bucket{${I}}${RI})))`, { legend: 'p90 {{proof_kind}}' }),
        ],
        field: { unit: 's', min: 0 },
        w: 8,
      }),
      timeseries({
        title: 'Partition stage duration p90',
        description: 'p90 per-partition GPU-stage and synthesis durations by proof kind.',
        targets: [
          q(`histogram_quantile(0.9, sum by (le, proof_kind) (rate(cuzk_partition_gpu_duration_seconds_bucket{${I}}${RI})))`, { legend: 'GPU {{proof_kind}}' }),
          q(`histogram_quantile(0.9, sum by (le, proof_kind) (rate(cuzk_partition_synthesis_duration_seconds_bucket{${I}}${RI})))`, { legend: 'synthesis {{proof_kind}}' }),
        ],
        field: { unit: 's', min: 0 },
        w: 8,
      }),
      timeseries({
        title: 'Slow partitions: which job? (exemplars)',
        description:
          'p99 and p50 per-partition GPU-stage duration by proof kind (cuzk_partition_gpu_duration_seconds), with the histogram\'s exemplars as points: each is the latest partition that fell into a bucket, labelled with its whole job_id and partition index — hover a high one to see which job the slow partition belonged to (its full record is on the host\'s status page and in /status). Exemplars need OpenMetrics (the exporter serves it to Prometheus by default) and Prometheus started with --enable-feature=exemplar-storage; without them the lines still show.',
        targets: [
          q(`histogram_quantile(0.99, sum by (le, proof_kind) (rate(cuzk_partition_gpu_duration_seconds_bucket{${I}}${RI})))`, { legend: 'p99 {{proof_kind}}', exemplar: true }),
          q(`histogram_quantile(0.5, sum by (le, proof_kind) (rate(cuzk_partition_gpu_duration_seconds_bucket{${I}}${RI})))`, { legend: 'p50 {{proof_kind}}' }),
        ],
        field: { unit: 's', min: 0 },
        w: 8,
      }),
      timeseries({
        title: 'Proof and partition throughput by kind',
        description: 'Proofs and partitions completed per minute (rates of cuzk_proofs_completed_total and cuzk_partitions_completed_total).',
        targets: [
          q(`sum by (instance, proof_kind) (rate(cuzk_proofs_completed_total{${I}}${RI})) * 60`, { legend: 'proofs {{instance}} {{proof_kind}}' }),
          q(`sum by (instance, proof_kind) (rate(cuzk_partitions_completed_total{${I}}${RI})) * 60`, { legend: 'partitions {{instance}} {{proof_kind}}' }),
        ],
        field: { unit: 'short', min: 0 },
        axisLabel: 'per minute',
        w: 8,
      }),
      timeseries({
        title: 'Proof latency quantiles',
        description: 'Submit-to-result latency (cuzk_proof_duration_seconds) p50 / p90 / p99 by proof kind.',
        targets: [
          q(`histogram_quantile(0.5, sum by (le, proof_kind) (rate(cuzk_proof_duration_seconds_bucket{${I}}${RI})))`, { legend: 'p50 {{proof_kind}}' }),
          q(`histogram_quantile(0.9, sum by (le, proof_kind) (rate(cuzk_proof_duration_seconds_bucket{${I}}${RI})))`, { legend: 'p90 {{proof_kind}}' }),
          q(`histogram_quantile(0.99, sum by (le, proof_kind) (rate(cuzk_proof_duration_seconds_bucket{${I}}${RI})))`, { legend: 'p99 {{proof_kind}}' }),
        ],
        field: { unit: 's', min: 0 },
        w: 8,
      }),
      timeseries({
        title: 'Queue depth by kind',
        description: 'Proofs queued and not yet started (cuzk_queue_depth).',
        targets: [q(`sum by (instance, proof_kind) (cuzk_queue_depth{${I}})`, { legend: '{{instance}} {{proof_kind}}' })],
        field: { unit: 'short', min: 0, decimals: 0 },
        stack: true,
        w: 8,
      }),
      timeseries({
        title: 'Queue wait (p50, p90) by kind',
        description: 'Submit to first synthesis (cuzk_proof_queue_wait_seconds), p50 and p90.',
        targets: [
          q(`histogram_quantile(0.5, sum by (le, proof_kind) (rate(cuzk_proof_queue_wait_seconds_bucket{${I}}${RI})))`, { legend: 'p50 {{proof_kind}}' }),
          q(`histogram_quantile(0.9, sum by (le, proof_kind) (rate(cuzk_proof_queue_wait_seconds_bucket{${I}}${RI})))`, { legend: 'p90 {{proof_kind}}' }),
        ],
        field: { unit: 's', min: 0 },
        w: 8,
      }),
      timeseries({
        title: 'PoSt: proofs per interval (WindowPoSt, WinningPoSt)',
        description:
          'WindowPoSt and WinningPoSt proofs completed and failed in each interval (cuzk_proofs_*_total{proof_kind=~"window-post|winning-post"}). Deadline-bound proofs: a failure risks faults (WindowPoSt) or a lost block (WinningPoSt). An exporter attached to cuzk\'s /status alone never sees PoSt (cuzk does not register it there): attach --cuzk.grpc-address and --cuzk.timeline-file (alert CuzkAttachBlindToPoSt).',
        targets: [
          q(`sum by (instance, proof_kind) (increase(cuzk_proofs_completed_total{${I}, proof_kind=~"window-post|winning-post"}${RI}))`, { legend: 'completed {{instance}} {{proof_kind}}' }),
          q(`sum by (instance, proof_kind) (increase(cuzk_proofs_failed_total{${I}, proof_kind=~"window-post|winning-post"}${RI}))`, { legend: 'failed {{instance}} {{proof_kind}}' }),
        ],
        field: { unit: 'short', min: 0 },
        bars: true,
        fillOpacity: 80,
        w: 8,
      }),
      timeseries({
        title: 'PoSt: GPU time and PoSt on the GPU now',
        description:
          'GPU-stage seconds per second spent on WindowPoSt and WinningPoSt (rate of cuzk_partition_gpu_seconds_total), and PoSt partitions in the gpu/finalizing state now (cuzk_partitions; one per PoSt being proved): which GPUs a deadline-bound proof is holding.',
        targets: [
          q(`sum by (instance, proof_kind) (rate(cuzk_partition_gpu_seconds_total{${I}, proof_kind=~"window-post|winning-post"}${RI}))`, { legend: 'GPU-s/s {{instance}} {{proof_kind}}' }),
          q(`sum by (instance, proof_kind) (cuzk_partitions{${I}, proof_kind=~"window-post|winning-post", state=~"gpu|finalizing"})`, { legend: 'on GPU now {{instance}} {{proof_kind}}' }),
        ],
        field: { unit: 'short', min: 0 },
        w: 8,
      }),
      timeseries({
        title: 'Failures',
        description: 'Proofs and partitions that failed in each interval, by proof kind. Zero lines are expected in a healthy run.',
        targets: [
          q(`sum by (instance, proof_kind) (increase(cuzk_proofs_failed_total{${I}}${RI}))`, { legend: 'proofs {{instance}} {{proof_kind}}' }),
          q(`sum by (instance, proof_kind) (increase(cuzk_partitions_failed_total{${I}}${RI}))`, { legend: 'partitions {{instance}} {{proof_kind}}' }),
        ],
        field: { unit: 'short', min: 0 },
        bars: true,
        fillOpacity: 80,
        w: 8,
      }),
    ],
  };
}

function resourcesRow() {
  return {
    title: 'Synthesis and memory — $instance',
    panels: [
      timeseries({
        title: 'Synthesis slots',
        description: 'Synthesis jobs running (cuzk_synthesis_active) against the configured maximum (cuzk_synthesis_max_concurrent). Always full while the GPU starves = synthesis-bound.',
        targets: [
          q(`sum by (instance) (cuzk_synthesis_active{${I}})`, { legend: '{{instance}} active' }),
          q(`sum by (instance) (cuzk_synthesis_max_concurrent{${I}})`, { legend: '{{instance}} max' }),
        ],
        field: { unit: 'short', min: 0, decimals: 0 },
        overrides: [
          {
            matcher: { id: 'byRegexp', options: '.* max' },
            properties: [{ id: 'custom.lineStyle', value: { dash: [10, 10], fill: 'dash' } }, { id: 'custom.fillOpacity', value: 0 }],
          },
        ],
      }),
      timeseries({
        title: 'Memory',
        description: 'Memory used by the prover (cuzk_memory_used_bytes) against its budget (cuzk_memory_budget_bytes).',
        targets: [
          q(`sum by (instance) (cuzk_memory_used_bytes{${I}})`, { legend: '{{instance}} used' }),
          q(`sum by (instance) (cuzk_memory_budget_bytes{${I}})`, { legend: '{{instance}} budget' }),
        ],
        field: { unit: 'bytes', min: 0 },
        overrides: [
          {
            matcher: { id: 'byRegexp', options: '.* budget' },
            properties: [{ id: 'custom.lineStyle', value: { dash: [10, 10], fill: 'dash' } }, { id: 'custom.fillOpacity', value: 0 }],
          },
        ],
      }),
    ],
  };
}

function consistencyRow() {
  return {
    title: 'Status consistency — $instance',
    panels: [
      timeseries({
        title: 'Partitions on GPU vs busy workers (raw comparison)',
        description:
          'Partitions in the gpu and finalizing states (cuzk_partitions) against busy workers (cuzk_gpu_worker_busy) per host. With split proving, partitions on the GPU above busy workers is normal: a finished partition finalizes while its worker already proves the next. Partitions on the GPU while busy workers is 0 is impossible in a correct prover (the historical cuzk bug: W0 idle, W1 idle, P11/P12 gpu). Alert CuzkGpuWorkersIdleWithPartitionsOnGpu.',
        targets: [
          q(`sum by (instance, state) (cuzk_partitions{${I}, state=~"gpu|finalizing"})`, { legend: '{{instance}} partitions {{state}}' }),
          q(`sum by (instance) (cuzk_gpu_worker_busy{${I}})`, { legend: '{{instance}} busy workers' }),
        ],
        field: { unit: 'short', min: 0, decimals: 0 },
        w: 12,
      }),
      stateTimeline({
        title: 'Status mismatch flag',
        description: "The exporter's own verdict (cuzk_status_mismatch) per host: 1 only for a certain contradiction.",
        targets: [q(`max by (instance) (cuzk_status_mismatch{${I}})`, { legend: '{{instance}}' })],
        field: { mappings: MISMATCH_MAPPING },
        w: 6,
      }),
      stateTimeline({
        title: 'Status mismatch reasons',
        description:
          'Which check found the contradiction (cuzk_status_mismatch_reason): idle_with_partitions_on_gpu — partitions in gpu/finalizing while no worker is busy; owner_idle — a worker reported idle while the newest partition it picked up has not ended (run mode, exact per worker); surfaces_disagree — attached surfaces disagree about a worker.',
        targets: [q(`max by (instance, reason) (cuzk_status_mismatch_reason{${I}})`, { legend: '{{instance}} {{reason}}' })],
        field: { mappings: MISMATCH_MAPPING },
        w: 6,
      }),
      stateTimeline({
        title: 'Attached surfaces disagree',
        description:
          "Attached exporters only (cuzk_status_mismatch_reason{reason=\"surfaces_disagree\"}): one of cuzk's surfaces says a worker is proving while another says it is idle, beyond the skew tolerance — typically /status showing a worker idle while TIMELINE or gRPC show it proving a WindowPoSt (cuzk's /status blind spot). Which worker and surfaces: the host's /status (exporter.surfaces_disagree) and status page.",
        targets: [q(`max by (instance) (cuzk_status_mismatch_reason{${I}, reason="surfaces_disagree"})`, { legend: '{{instance}}' })],
        field: { mappings: MISMATCH_MAPPING },
        w: 24,
      }),
    ],
  };
}

function exporterRow() {
  return {
    title: 'Exporter health — $instance',
    panels: [
      stateTimeline({
        title: 'Exporter and source up',
        description:
          'exporter: Prometheus could scrape it (up). source: the native engine or attached cuzk daemon answered the collection (cuzk_up; attached: every surface up). Per surface (cuzk_surface_up): grpc, status, timeline for an attached daemon, engine in run mode.',
        targets: [
          q(`max by (instance) (up{${I}})`, { legend: '{{instance}} exporter' }),
          q(`max by (instance) (cuzk_up{${I}})`, { legend: '{{instance}} source' }),
          q(`max by (instance, surface) (cuzk_surface_up{${I}})`, { legend: '{{instance}} surface {{surface}}' }),
        ],
        field: { mappings: UP_MAPPING },
        w: 8,
      }),
      timeseries({
        title: 'Events ingested / dropped',
        description: 'Engine events ingested per second and events lost to ring overflow (sequence gaps; state is then re-synced from a snapshot).',
        targets: [
          q(`sum by (instance) (rate(cuzk_exporter_events_total{${I}}${RI}))`, { legend: '{{instance}} ingested' }),
          q(`sum by (instance) (rate(cuzk_exporter_events_dropped_total{${I}}${RI}))`, { legend: '{{instance}} dropped' }),
        ],
        field: { unit: 'short', min: 0 },
        axisLabel: 'events / s',
        w: 8,
      }),
      timeseries({
        title: 'Collection and scrape duration',
        description: "Time the exporter's last collection took (cuzk_exporter_scrape_duration_seconds) and the whole scrape as Prometheus saw it (scrape_duration_seconds).",
        targets: [
          q(`max by (instance) (cuzk_exporter_scrape_duration_seconds{${I}})`, { legend: '{{instance}} collection' }),
          q(`max by (instance) (scrape_duration_seconds{${I}})`, { legend: '{{instance}} scrape' }),
        ],
        field: { unit: 's', min: 0 },
        w: 8,
      }),
      timeseries({
        title: 'Exporter errors by reason',
        description: 'Collection and ingestion errors per interval (cuzk_exporter_errors_total). A host with no errors shows a zero line.',
        targets: [
          q(
            `sum by (instance, reason) (increase(cuzk_exporter_errors_total{${I}}${RI})) or on (instance) (0 * max by (instance) (cuzk_up{${I}}))`,
            { legend: '{{instance}} {{reason}}' },
          ),
        ],
        field: { unit: 'short', min: 0 },
        bars: true,
        fillOpacity: 80,
      }),
      table({
        title: 'Build info',
        description: 'Exporter version, source (native engine or attached daemon), backend and the surfaces read (cuzk_exporter_build_info; surfaces="status" alone is blind to PoSt).',
        targets: [q(`cuzk_exporter_build_info{${I}}`, { instant: true, table: true })],
        transformations: [{ id: 'organize', options: { excludeByName: { Time: true, Value: true, __name__: true }, indexByName: {}, renameByName: {} } }],
      }),
    ],
  };
}

export function buildOverviewDashboard(): JsonObject {
  return {
    __requires: [
      { type: 'grafana', id: 'grafana', name: 'Grafana', version: '10.0.0' },
      { type: 'datasource', id: 'prometheus', name: 'Prometheus', version: '1.0.0' },
      { type: 'panel', id: 'stat', name: 'Stat', version: '' },
      { type: 'panel', id: 'state-timeline', name: 'State timeline', version: '' },
      { type: 'panel', id: 'table', name: 'Table', version: '' },
      { type: 'panel', id: 'timeseries', name: 'Time series', version: '' },
    ],
    annotations: {
      list: [
        {
          datasource: DS,
          enable: true,
          expr: 'ALERTS{alertstate="firing", alertname=~"Cuzk.*", instance=~"$instance"}',
          hide: false,
          iconColor: 'red',
          name: 'cuzk alerts',
          step: '1m',
          tagKeys: 'alertname,severity',
          textFormat: '{{instance}}',
          titleFormat: '{{alertname}}',
          useValueForTime: false,
        },
      ],
    },
    description:
      'GPU SNARK proving (Filecoin cuzk) from cuzk-exporter: worker busy/idle, exact GPU utilisation from busy-seconds counters, partitions, proofs, queue, synthesis, memory and the status-consistency check. Needs the recording rules in cuzk-alerts.yml for the fleet row.',
    editable: true,
    fiscalYearStartMonth: 0,
    graphTooltip: 1,
    id: null,
    links: [
      {
        asDropdown: false,
        icon: 'doc',
        includeVars: false,
        keepTime: false,
        tags: [],
        targetBlank: true,
        title: 'Runbook',
        tooltip: 'What each cuzk alert means and what to do',
        type: 'link',
        url: 'https://github.com/cuzk-exporter/cuzk-exporter/blob/main/docs/runbook.md',
      },
    ],
    panels: layout([fleetRow(), workersRow(), partitionsRow(), resourcesRow(), consistencyRow(), exporterRow()]),
    refresh: '30s',
    schemaVersion: SCHEMA_VERSION,
    tags: ['cuzk', 'filecoin', 'gpu', 'snark'],
    templating: {
      list: [
        datasourceVariable(),
        queryVariable({
          name: 'job',
          label: 'Job',
          description: 'Prometheus job(s) scraping cuzk-exporter',
          query: 'label_values(cuzk_up, job)',
          sort: 1,
        }),
        queryVariable({
          name: 'instance',
          label: 'Instance',
          description: 'Exporter instance(s), one per proving host',
          query: 'label_values(cuzk_up{job=~"$job"}, instance)',
          sort: 1,
        }),
        queryVariable({
          name: 'gpu',
          label: 'GPU',
          description: 'GPU ordinal(s) on the selected hosts',
          query: 'label_values(cuzk_gpu_worker_busy{job=~"$job", instance=~"$instance"}, gpu)',
          sort: 3,
        }),
      ],
    },
    time: { from: 'now-1h', to: 'now' },
    timepicker: {},
    timezone: 'browser',
    title: OVERVIEW_TITLE,
    uid: OVERVIEW_UID,
    version: 1,
    weekStart: '',
  } satisfies DashboardJson;
}
