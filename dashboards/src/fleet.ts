/**
 * The fleet dashboard (uid cuzk-fleet): a fleet of provers at a glance. Fleet totals from the
 * fleet recording rules (fleet-rules.ts; per job, so they are not filtered by instance), then
 * the provers worst first (lowest utilisation from the busy-seconds counters) and the ones
 * idle while partitions are on the GPU (the key alert's condition), each linking to the
 * overview dashboard for that instance. Works on Prometheus and on VictoriaMetrics (a
 * Prometheus-type data source pointed at it; deploy/fleet/).
 */
import { datasourceVariable, DS, JsonObject, layout, q, queryVariable, stat, stateTimeline, table, timeseries, Threshold } from './builder';
import type { DashboardJson, GrafanaOverride } from './grafana-types';
import { OVERVIEW_UID, SCHEMA_VERSION } from './overview';

export const FLEET_UID = 'cuzk-fleet';
export const FLEET_TITLE = 'cuzk GPU proving — fleet';

/** Fleet-level series (recording rules by job): filtered by job only. */
const J = 'job=~"$job"';
/** Per-prover series. */
const I = 'job=~"$job", instance=~"$instance"';
const G = `${I}, gpu=~"$gpu"`;

const PERCENT = { unit: 'percentunit', min: 0, max: 1 };
const UTIL_THRESHOLDS: Threshold[] = [
  { value: null, color: 'red' },
  { value: 0.5, color: 'orange' },
  { value: 0.8, color: 'green' },
];
const ZERO_GOOD: Threshold[] = [
  { value: null, color: 'green' },
  { value: 1, color: 'red' },
];

function byName(name: string, properties: GrafanaOverride['properties']): GrafanaOverride {
  return { matcher: { id: 'byName', options: name }, properties };
}

const drillDown = byName('instance', [
  {
    id: 'links',
    value: [{ title: 'Open ${__value.raw} in the overview', url: `/d/${OVERVIEW_UID}?\${__url_time_range}&\${datasource:queryparam}&var-instance=\${__value.raw}` }],
  },
]);

function nowRow() {
  return {
    title: 'Fleet now',
    panels: [
      stat({
        title: 'Provers up',
        description: 'Provers whose exporter reads its source (cuzk_up, every attached surface answering), out of all provers in the job (recording rules job:cuzk_up:sum / :count).',
        targets: [q(`job:cuzk_up:sum{${J}}`, { legend: 'up' }), q(`job:cuzk_up:count{${J}}`, { legend: 'provers' })],
        field: { decimals: 0, thresholds: [{ value: null, color: 'blue' }] },
      }),
      stat({
        title: 'Idle while on the GPU',
        description:
          'Provers that contradict themselves now: workers reported idle while partitions are on the GPU (the exporter\'s verdict, or the raw series). Should be 0; the table below says which (recording rule job:cuzk_idle_while_on_gpu:sum).',
        targets: [q(`job:cuzk_idle_while_on_gpu:sum{${J}}`, { legend: 'provers' })],
        field: { decimals: 0, thresholds: ZERO_GOOD },
      }),
      stat({
        title: 'GPUs / workers busy',
        description: 'GPUs in the fleet, GPU workers busy now and all GPU workers (recording rules job:cuzk_gpu_info:count, job:cuzk_gpu_worker_busy:sum / :count).',
        targets: [
          q(`job:cuzk_gpu_info:count{${J}}`, { legend: 'GPUs' }),
          q(`job:cuzk_gpu_worker_busy:sum{${J}}`, { legend: 'busy' }),
          q(`job:cuzk_gpu_worker_busy:count{${J}}`, { legend: 'workers' }),
        ],
        field: { decimals: 0, thresholds: [{ value: null, color: 'blue' }] },
      }),
      stat({
        title: 'Fleet utilisation (5m)',
        description: 'Fraction of time the fleet\'s GPU workers owned a partition over the last 5 minutes, from cuzk_gpu_worker_busy_seconds_total, every worker weighing the same (recording rule job:cuzk_gpu_worker_utilization:ratio_rate5m).',
        targets: [q(`job:cuzk_gpu_worker_utilization:ratio_rate5m{${J}}`, { legend: 'workers busy' })],
        field: { ...PERCENT, thresholds: UTIL_THRESHOLDS },
        graph: true,
      }),
      stat({
        title: 'Proofs / min (5m)',
        description: 'Proofs completed per minute by the whole fleet, every kind (recording rule job_proof_kind:cuzk_proofs_completed:rate5m).',
        targets: [q(`sum by (job) (job_proof_kind:cuzk_proofs_completed:rate5m{${J}}) * 60`, { legend: 'proofs / min' })],
        field: { decimals: 1, thresholds: [{ value: null, color: 'blue' }] },
        graph: true,
      }),
      stat({
        title: 'Proofs queued',
        description: 'Proofs waiting for synthesis across the fleet (recording rule job:cuzk_queue_depth:sum).',
        targets: [q(`job:cuzk_queue_depth:sum{${J}}`, { legend: 'queued' })],
        field: { decimals: 0, thresholds: [{ value: null, color: 'blue' }] },
      }),
      timeseries({
        title: 'Fleet utilisation',
        description: 'The fleet\'s GPU workers\' busy fraction over 1 and 5 minutes, from the busy-seconds counters (recording rules).',
        targets: [
          q(`job:cuzk_gpu_worker_utilization:ratio_rate1m{${J}}`, { legend: '{{job}} 1m' }),
          q(`job:cuzk_gpu_worker_utilization:ratio_rate5m{${J}}`, { legend: '{{job}} 5m' }),
        ],
        field: PERCENT,
        w: 8,
      }),
      timeseries({
        title: 'Proof throughput by kind (fleet)',
        description: 'Proofs completed and failed per minute across the fleet by proof kind (recording rules, 5m).',
        targets: [
          q(`sum by (proof_kind) (job_proof_kind:cuzk_proofs_completed:rate5m{${J}}) * 60`, { legend: '{{proof_kind}} completed' }),
          q(`sum by (proof_kind) (job_proof_kind:cuzk_proofs_failed:rate5m{${J}}) * 60`, { legend: '{{proof_kind}} failed' }),
        ],
        field: { unit: 'short', min: 0 },
        axisLabel: 'proofs / min',
        w: 8,
      }),
      timeseries({
        title: 'Provers up, idle while on the GPU, proofs queued',
        description: 'Over time: provers up, provers contradicting themselves (idle while partitions are on the GPU) and proofs queued across the fleet.',
        targets: [
          q(`job:cuzk_up:sum{${J}}`, { legend: 'provers up' }),
          q(`job:cuzk_idle_while_on_gpu:sum{${J}}`, { legend: 'idle while on the GPU' }),
          q(`job:cuzk_queue_depth:sum{${J}}`, { legend: 'proofs queued' }),
        ],
        field: { unit: 'short', min: 0, decimals: 0 },
        w: 8,
      }),
    ],
  };
}

function proversRow() {
  const worst = table({
    title: 'Provers, worst first',
    description:
      'One row per prover, the least utilised first (GPU workers\' busy fraction over 5 minutes, from cuzk_gpu_worker_busy_seconds_total). A prover idle while partitions are on the GPU, down, or failing proofs is marked red. Click an instance to open it in the overview dashboard.',
    w: 24,
    h: 10,
    targets: [
      q(`avg by (instance) (rate(cuzk_gpu_worker_busy_seconds_total{${G}}[5m]))`, { instant: true, table: true }),
      q(`max by (instance) (instance:cuzk_idle_while_on_gpu:bool{${I}})`, { instant: true, table: true }),
      q(`max by (instance) (cuzk_up{${I}})`, { instant: true, table: true }),
      q(`sum by (instance) (cuzk_queue_depth{${I}})`, { instant: true, table: true }),
      q(`sum by (instance) (rate(cuzk_proofs_completed_total{${I}}[5m])) * 60`, { instant: true, table: true }),
      q(`sum by (instance) (increase(cuzk_proofs_failed_total{${I}}[1h]))`, { instant: true, table: true }),
      q(`count by (instance) (cuzk_gpu_info{${G}})`, { instant: true, table: true }),
    ],
    transformations: [
      { id: 'merge', options: {} },
      {
        id: 'organize',
        options: {
          excludeByName: { Time: true },
          indexByName: {},
          renameByName: {
            'Value #A': 'Utilisation (5m)',
            'Value #B': 'Idle while on GPU',
            'Value #C': 'Source',
            'Value #D': 'Queued',
            'Value #E': 'Proofs / min',
            'Value #F': 'Failed (1h)',
            'Value #G': 'GPUs',
          },
        },
      },
    ],
    sortBy: [{ displayName: 'Utilisation (5m)', desc: false }],
    overrides: [
      drillDown,
      byName('Utilisation (5m)', [
        { id: 'unit', value: 'percentunit' },
        { id: 'min', value: 0 },
        { id: 'max', value: 1 },
        { id: 'thresholds', value: { mode: 'absolute', steps: UTIL_THRESHOLDS.map((t) => ({ color: t.color, value: t.value })) } },
        { id: 'custom.cellOptions', value: { type: 'gauge', mode: 'basic' } },
      ]),
      byName('Idle while on GPU', [
        { id: 'mappings', value: [{ type: 'value', options: { '0': { text: 'no', color: 'green', index: 0 }, '1': { text: 'IDLE WHILE ON GPU', color: 'red', index: 1 } } }] },
        { id: 'custom.cellOptions', value: { type: 'color-background' } },
      ]),
      byName('Source', [
        { id: 'mappings', value: [{ type: 'value', options: { '0': { text: 'down', color: 'red', index: 0 }, '1': { text: 'up', color: 'green', index: 1 } } }] },
        { id: 'custom.cellOptions', value: { type: 'color-text' } },
      ]),
      byName('Proofs / min', [{ id: 'decimals', value: 1 }]),
      byName('Failed (1h)', [
        { id: 'decimals', value: 0 },
        { id: 'thresholds', value: { mode: 'absolute', steps: [{ color: 'green', value: null }, { color: 'red', value: 1 }] } },
        { id: 'custom.cellOptions', value: { type: 'color-text' } },
      ]),
    ],
  });
  const idle = table({
    title: 'Which prover is idle while on the GPU',
    description:
      'Every prover, the ones that contradict themselves first: 1 = its workers read idle while partitions are on the GPU (its exporter\'s cuzk_status_mismatch, or partitions in gpu/finalizing with no worker busy), with the exporter\'s reasons over the last 2 minutes. The key alert CuzkGpuWorkersIdleWithPartitionsOnGpu pages for these.',
    w: 12,
    h: 9,
    targets: [
      q(`max by (instance) (instance:cuzk_idle_while_on_gpu:bool{${I}})`, { instant: true, table: true }),
      q(`sum by (instance) (cuzk_partitions{${I}, state=~"gpu|finalizing"})`, { instant: true, table: true }),
      q(`sum by (instance) (cuzk_gpu_worker_busy{${I}})`, { instant: true, table: true }),
      q(`count by (instance) (max by (instance, reason) (max_over_time(cuzk_status_mismatch_reason{${I}}[2m])) == 1) or on (instance) (0 * max by (instance) (cuzk_up{${I}}))`, { instant: true, table: true }),
    ],
    transformations: [
      { id: 'merge', options: {} },
      {
        id: 'organize',
        options: {
          excludeByName: { Time: true },
          indexByName: {},
          renameByName: { 'Value #A': 'Idle while on GPU', 'Value #B': 'Partitions on GPU', 'Value #C': 'Busy workers', 'Value #D': 'Reasons flagged (2m)' },
        },
      },
    ],
    sortBy: [{ displayName: 'Idle while on GPU', desc: true }],
    overrides: [
      drillDown,
      byName('Idle while on GPU', [
        { id: 'mappings', value: [{ type: 'value', options: { '0': { text: 'no', color: 'green', index: 0 }, '1': { text: 'IDLE WHILE ON GPU', color: 'red', index: 1 } } }] },
        { id: 'custom.cellOptions', value: { type: 'color-background' } },
      ]),
    ],
  });
  return {
    title: 'Provers — worst first',
    panels: [
      worst,
      idle,
      stateTimeline({
        title: 'Idle while on the GPU, by prover',
        description: 'When each prover contradicted itself (red): recording rule instance:cuzk_idle_while_on_gpu:bool.',
        targets: [q(`instance:cuzk_idle_while_on_gpu:bool{${I}}`, { legend: '{{instance}}' })],
        field: {
          mappings: [
            { value: '0', text: 'consistent', color: 'green' },
            { value: '1', text: 'IDLE WHILE ON GPU', color: 'red' },
          ],
          thresholds: [{ value: null, color: 'green' }],
        },
        w: 12,
        h: 9,
      }),
      timeseries({
        title: 'Least utilised provers (5m)',
        description: 'The ten provers whose GPU workers were busy the smallest fraction of the last 5 minutes (busy-seconds counters).',
        targets: [q(`bottomk(10, avg by (instance) (rate(cuzk_gpu_worker_busy_seconds_total{${G}}[5m])))`, { legend: '{{instance}}' })],
        field: PERCENT,
        w: 24,
      }),
    ],
  };
}

export function buildFleetDashboard(): JsonObject {
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
      'A fleet of cuzk GPU provers at a glance: fleet utilisation from the busy-seconds counters, the provers worst first, and which prover is idle while partitions are on the GPU. Needs the fleet recording rules (cuzk-fleet.yml) beside cuzk-alerts.yml; works on Prometheus or VictoriaMetrics.',
    editable: true,
    fiscalYearStartMonth: 0,
    graphTooltip: 1,
    id: null,
    links: [
      { asDropdown: false, icon: 'dashboard', includeVars: true, keepTime: true, tags: [], targetBlank: false, title: 'Overview (per prover)', tooltip: 'The per-prover drill-down', type: 'link', url: `/d/${OVERVIEW_UID}` },
    ],
    panels: layout([nowRow(), proversRow()]),
    refresh: '30s',
    schemaVersion: SCHEMA_VERSION,
    tags: ['cuzk', 'filecoin', 'gpu', 'snark', 'fleet'],
    templating: {
      list: [
        datasourceVariable(),
        queryVariable({ name: 'job', label: 'Job', description: 'Prometheus job(s) scraping the provers', query: 'label_values(cuzk_up, job)', sort: 1 }),
        queryVariable({ name: 'instance', label: 'Prover', description: 'Provers (instances) in the per-prover panels', query: 'label_values(cuzk_up{job=~"$job"}, instance)', sort: 1 }),
        queryVariable({ name: 'gpu', label: 'GPU', description: 'GPU ordinal(s) in the per-prover utilisation', query: 'label_values(cuzk_gpu_worker_busy{job=~"$job", instance=~"$instance"}, gpu)', sort: 3 }),
      ],
    },
    time: { from: 'now-3h', to: 'now' },
    timepicker: {},
    timezone: 'browser',
    title: FLEET_TITLE,
    uid: FLEET_UID,
    version: 1,
    weekStart: '',
  } satisfies DashboardJson;
}
