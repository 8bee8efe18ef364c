/**
 * Prometheus recording and alerting rules for cuzk-exporter, as data. generate.ts /
 * export.ts serialise them to dashboards/rules/cuzk-alerts.yml; promtool unit tests in
 * dashboards/rules/tests/ exercise every alert.
 *
 * Conventions: every aggregation keeps `job` and `instance` (a fleet has many exporters);
 * recording rules are named level:metric:operations; utilisation is always computed from the
 * busy-seconds counters, never from the sampled 0/1 busy gauge (DESIGN §5 "Where the time goes").
 */
import { toYaml, YamlValue } from './yaml';

export const RUNBOOK_BASE_URL = 'https://github.com/cuzk-exporter/cuzk-exporter/blob/main/docs/runbook.md';

export type Severity = 'critical' | 'warning' | 'info';

export interface RecordingRule {
  record: string;
  expr: string;
}

export interface AlertingRule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: Severity };
  annotations: { summary: string; description: string; runbook_url: string };
}

export type Rule = RecordingRule | AlertingRule;

export interface RuleGroup {
  name: string;
  rules: Rule[];
}

export function isAlertingRule(r: Rule): r is AlertingRule {
  return (r as AlertingRule).alert !== undefined;
}

/** GitHub's heading anchor for a runbook section titled exactly with the alert name. */
export function runbookAnchor(alertName: string): string {
  return alertName.toLowerCase();
}

export function runbookUrl(alertName: string): string {
  return `${RUNBOOK_BASE_URL}#${runbookAnchor(alertName)}`;
}

const lines = (...l: string[]): string => l.join('\n');

export const RECORDING_RULES: RecordingRule[] = [
  {
    record: 'instance_gpu:cuzk_gpu_worker_utilization:ratio_rate1m',
    expr: 'avg by (job, instance, gpu) (rate(cuzk_gpu_worker_busy_seconds_total[1m]))',
  },
  {
    record: 'instance_gpu:cuzk_gpu_worker_utilization:ratio_rate5m',
    expr: 'avg by (job, instance, gpu) (rate(cuzk_gpu_worker_busy_seconds_total[5m]))',
  },
  {
    record: 'instance:cuzk_gpu_worker_utilization:ratio_rate1m',
    expr: 'avg by (job, instance) (rate(cuzk_gpu_worker_busy_seconds_total[1m]))',
  },
  {
    record: 'instance_gpu:cuzk_gpu_lock_utilization:ratio_rate1m',
    expr: 'sum by (job, instance, gpu) (rate(cuzk_gpu_busy_seconds_total[1m]))',
  },
  {
    record: 'instance_gpu:cuzk_gpu_lock_utilization:ratio_rate5m',
    expr: 'sum by (job, instance, gpu) (rate(cuzk_gpu_busy_seconds_total[5m]))',
  },
  {
    record: 'instance_gpu:cuzk_gpu_starved:ratio_rate1m',
    expr: 'sum by (job, instance, gpu) (rate(cuzk_gpu_starved_seconds_total[1m]))',
  },
  {
    record: 'instance_proof_kind:cuzk_partition_gpu_seconds:rate1m',
    expr: 'sum by (job, instance, proof_kind) (rate(cuzk_partition_gpu_seconds_total[1m]))',
  },
  {
    record: 'instance_proof_kind:cuzk_proofs_completed:rate1m',
    expr: 'sum by (job, instance, proof_kind) (rate(cuzk_proofs_completed_total[1m]))',
  },
  {
    record: 'instance_proof_kind:cuzk_proofs_failed:rate1m',
    expr: 'sum by (job, instance, proof_kind) (rate(cuzk_proofs_failed_total[1m]))',
  },
];

function alert(
  name: string,
  severity: Severity,
  forDuration: string,
  expr: string,
  summary: string,
  description: string,
): AlertingRule {
  return {
    alert: name,
    expr,
    for: forDuration,
    labels: { severity },
    annotations: { summary, description, runbook_url: runbookUrl(name) },
  };
}

/** The busy-worker count on the alert's host, for annotations (evaluated by Prometheus). */
const BUSY_WORKERS_TEMPLATE =
  '{{ with printf "sum(cuzk_gpu_worker_busy{job=%q,instance=%q})" $labels.job $labels.instance | query }}{{ . | first | value }}{{ else }}no{{ end }}';
/** Partitions on the GPU (gpu or finalizing) on the alert's host now. */
const ON_GPU_TEMPLATE =
  '{{ with printf `sum(cuzk_partitions{job=%q,instance=%q,state=~"gpu|finalizing"})` $labels.job $labels.instance | query }}{{ . | first | value }}{{ else }}no{{ end }}';

/**
 * Window over which a certain contradiction keeps the key alert's condition true. The
 * historical clobber is intermittent (a worker shows idle from the end of its previous
 * partition's finalize tail until its next pickup, then busy again), so an instantaneous
 * condition sampled every 15 s would keep resetting `for:`; any sample of a certain
 * contradiction in the window counts. A correct prover never produces one (transitions
 * reach the exporter whole), so one sample is evidence, not noise.
 */
export const MISMATCH_WINDOW = '2m';
/**
 * The reasons one sample of which is evidence: ownership (a worker's own newest partition
 * while it reads idle) and two surfaces disagreeing beyond their skew margin. The count-only
 * reason (partitions on the GPU, no worker busy) is not among them: upstream cuzk runs its
 * finalizers as independent tasks, so at the end of a burst a worker's older partition can
 * finish its tail after the newer one did and read, for up to a tail's length (~0.4-1.7 s),
 * as a partition on the GPU with no busy worker. From counts alone only a state that lasts
 * (the seed's screenshot lasted minutes) is certain, so that branch must hold for `for:`.
 */
export const WINDOWED_REASONS = 'owner_idle|surfaces_disagree';
/** The exporter's mismatch reasons seen on the alert's host within the window, comma-separated. */
const REASONS_TEMPLATE =
  `{{ with printf \`max_over_time(cuzk_status_mismatch_reason{job=%q,instance=%q}[${MISMATCH_WINDOW}]) == 1\` $labels.job $labels.instance | query | sortByLabel "reason" }}` +
  '{{ range $i, $r := . }}{{ if $i }}, {{ end }}{{ $r.Labels.reason }}{{ end }}{{ else }}none reported{{ end }}';

/** Stuck threshold: production PoRep C2 partitions take tens of seconds on the GPU. */
export const WORKER_STUCK_SECONDS = 600;
/** Per-GPU worker utilisation under which a non-empty queue is suspicious. */
export const UNDERUTILIZED_RATIO = 0.5;

export const ALERTING_RULES: AlertingRule[] = [
  // Split proving (DESIGN §9): a finished partition stays in `gpu` (our `finalizing`) while
  // its worker already proves the next one, so partitions on the GPU outnumbering busy
  // workers is healthy. Certain contradictions only: the exporter's own verdict (exact per
  // worker where ownership is known), or, from the raw series of any source, partitions on
  // the GPU while no worker at all is busy (the seed's screenshot).
  alert(
    'CuzkGpuWorkersIdleWithPartitionsOnGpu',
    'critical',
    '1m',
    lines(
      `max by (job, instance) (max_over_time(cuzk_status_mismatch_reason{reason=~"${WINDOWED_REASONS}"}[${MISMATCH_WINDOW}])) == 1`,
      'or',
      '(',
      '  sum by (job, instance) (cuzk_partitions{state=~"gpu|finalizing"}) > 0',
      '  and on (job, instance)',
      '  sum by (job, instance) (cuzk_gpu_worker_busy) == 0',
      ')',
    ),
    'GPU workers report idle while partitions are in the GPU state on {{ $labels.instance }}',
    '{{ $labels.instance }}: a GPU worker is reported idle while a partition it picked up is still on the GPU — now ' +
      ON_GPU_TEMPLATE +
      ' partition(s) in gpu/finalizing and ' +
      BUSY_WORKERS_TEMPLATE +
      ` busy GPU worker(s); exporter mismatch reasons in the last ${MISMATCH_WINDOW}: ` +
      REASONS_TEMPLATE +
      '. The prover contradicts itself for certain (the historical cuzk status bug): its worker busy/idle view is wrong, so do not add GPUs or re-plan capacity from it. (More partitions on the GPU than busy workers alone is healthy split proving and does not fire this.)',
  ),
  alert(
    'CuzkStatusMismatch',
    'info',
    '5m',
    `max by (job, instance, reason) (max_over_time(cuzk_status_mismatch_reason[${MISMATCH_WINDOW}])) == 1`,
    'cuzk-exporter flags a status mismatch ({{ $labels.reason }}) on {{ $labels.instance }}',
    `The exporter on {{ $labels.instance }} has seen a certain status contradiction of kind {{ $labels.reason }} in every ${MISMATCH_WINDOW} window for 5 minutes (cuzk_status_mismatch_reason). Usually fires together with CuzkGpuWorkersIdleWithPartitionsOnGpu; the reason says which check caught it.`,
  ),
  alert(
    'CuzkSourceDown',
    'critical',
    '1m',
    // An attached exporter with one surface of several down is CuzkSurfaceDown, not this.
    'cuzk_up == 0 unless on (job, instance) (max by (job, instance) (cuzk_surface_up) == 1)',
    'cuzk-exporter on {{ $labels.instance }} cannot read its proving source',
    'cuzk_up is 0 on {{ $labels.instance }} (job {{ $labels.job }}): the exporter answers scrapes but the native engine or attached cuzk daemon did not answer its last collections, so every other cuzk metric from this host is stale or missing.',
  ),
  alert(
    'CuzkSurfaceDown',
    'warning',
    '2m',
    'cuzk_surface_up == 0 and on (job, instance) (max by (job, instance) (cuzk_surface_up) == 1)',
    'cuzk-exporter on {{ $labels.instance }} cannot read cuzk\'s {{ $labels.surface }} surface',
    'The {{ $labels.surface }} surface of the cuzk daemon on {{ $labels.instance }} has not answered for 2 minutes while the exporter\'s other surfaces still do (cuzk_surface_up). The metrics that surface provides are stale: grpc — proof counters (PoSt included), queue depth, GPU names; timeline — exact worker busy time and partition GPU time of every kind; status — memory, synthesis slots, failed partitions. cuzk_exporter_errors_total{reason=~"grpc_.*|timeline_.*"} says why.',
  ),
  alert(
    'CuzkAttachBlindToPoSt',
    'info',
    '10m',
    'max by (job, instance) (cuzk_exporter_build_info{source="attach", surfaces="status"}) == 1',
    'cuzk-exporter on {{ $labels.instance }} reads cuzk through /status only: WindowPoSt and WinningPoSt are invisible',
    'The exporter on {{ $labels.instance }} is attached to cuzk\'s /status alone. cuzk never registers WindowPoSt or WinningPoSt there: while a GPU proves one, every worker reads idle and no PoSt proof, failure or GPU second is counted. Add --cuzk.grpc-address and --cuzk.timeline-file (docs/attach.md).',
  ),
  alert(
    'CuzkExporterDown',
    'critical',
    '2m',
    lines(
      'up{job=~"(?i).*cuzk.*"} == 0',
      'or',
      '(up == 0 and on (job, instance) max_over_time(cuzk_up[1h]))',
    ),
    'Prometheus cannot scrape cuzk-exporter on {{ $labels.instance }}',
    'The scrape of {{ $labels.instance }} (job {{ $labels.job }}) is failing: the exporter is down, unreachable, or answering errors (a failed collection answers HTTP 500). No cuzk metrics are being collected from this host.',
  ),
  alert(
    'CuzkProofFailures',
    'warning',
    '1m',
    'sum by (job, instance, proof_kind) (increase(cuzk_proofs_failed_total{proof_kind!~"window-post|winning-post"}[10m])) > 0',
    '{{ $labels.proof_kind }} proofs are failing on {{ $labels.instance }}',
    '{{ printf "%.0f" $value }} {{ $labels.proof_kind }} proof(s) failed on {{ $labels.instance }} in the last 10 minutes.',
  ),
  alert(
    'CuzkPoStProofFailures',
    'critical',
    '1m',
    'sum by (job, instance, proof_kind) (increase(cuzk_proofs_failed_total{proof_kind=~"window-post|winning-post"}[10m])) > 0',
    '{{ $labels.proof_kind }} proofs are failing on {{ $labels.instance }}',
    '{{ printf "%.0f" $value }} {{ $labels.proof_kind }} proof(s) failed on {{ $labels.instance }} in the last 10 minutes. PoSt proofs are deadline-bound: a failed WindowPoSt risks faults and penalties, a failed WinningPoSt loses the block reward.',
  ),
  alert(
    'CuzkGpuUnderutilizedWithQueue',
    'warning',
    '10m',
    // `and … offset 5m` keeps only workers with a full 5m of samples: rate() under-estimates
    // a series younger than its window, which would read as an idle GPU after every restart.
    lines(
      'avg by (job, instance, gpu) (',
      '  rate(cuzk_gpu_worker_busy_seconds_total[5m])',
      '    and cuzk_gpu_worker_busy_seconds_total offset 5m',
      `) < ${UNDERUTILIZED_RATIO}`,
      'and on (job, instance)',
      'sum by (job, instance) (cuzk_queue_depth) > 0',
    ),
    'GPU {{ $labels.gpu }} on {{ $labels.instance }} is under-used while proofs are queued',
    'The workers of GPU {{ $labels.gpu }} on {{ $labels.instance }} were busy only {{ $value | humanizePercentage }} of the last 5 minutes (from cuzk_gpu_worker_busy_seconds_total) while proofs waited in the queue. The GPU is being starved: usually synthesis-bound (CPU, RAM or synthesis slots), not GPU-bound.',
  ),
  alert(
    'CuzkGpuWorkerStuck',
    'warning',
    '1m',
    `cuzk_gpu_worker_current_partition_seconds > ${WORKER_STUCK_SECONDS}`,
    'GPU worker {{ $labels.worker }} on GPU {{ $labels.gpu }} of {{ $labels.instance }} looks stuck',
    `Worker {{ $labels.worker }} on GPU {{ $labels.gpu }} of {{ $labels.instance }} has owned its current partition for {{ $value | humanizeDuration }}, far longer than any partition should take (threshold ${WORKER_STUCK_SECONDS}s). The GPU may be hung, or the worker never released the partition.`,
  ),
  alert(
    'CuzkExporterEventsDropped',
    'warning',
    '5m',
    'increase(cuzk_exporter_events_dropped_total[5m]) > 0',
    'cuzk-exporter on {{ $labels.instance }} keeps dropping engine events',
    '{{ $labels.instance }} dropped {{ printf "%.0f" $value }} engine event(s) in the last 5 minutes, continuously for 5 minutes. Counters stay exact (they are read natively), but state gauges are re-synced from snapshots and short-lived states can be missed.',
  ),
  alert(
    'CuzkExporterErrors',
    'warning',
    '10m',
    'sum by (job, instance, reason) (increase(cuzk_exporter_errors_total[5m])) > 0',
    'cuzk-exporter on {{ $labels.instance }} reports {{ $labels.reason }} errors',
    'cuzk-exporter on {{ $labels.instance }} has counted {{ $labels.reason }} errors continuously for 10 minutes ({{ printf "%.0f" $value }} in the last 5 minutes). The source may be flapping even if cuzk_up is mostly 1.',
  ),
  alert(
    'CuzkExporterSlowCollection',
    'warning',
    '5m',
    'cuzk_exporter_scrape_duration_seconds > 1',
    'cuzk-exporter collections on {{ $labels.instance }} are slow',
    'The last collection on {{ $labels.instance }} took {{ $value | humanizeDuration }} and collections have been over 1s for 5 minutes. Serialisation blocks the exporter event loop; check series cardinality and the source response time.',
  ),
];

export const RULE_GROUPS: RuleGroup[] = [
  { name: 'cuzk.recording', rules: RECORDING_RULES },
  { name: 'cuzk.alerts', rules: ALERTING_RULES },
];

export const RULES_FILE_HEADER = [
  'Prometheus recording and alerting rules for cuzk-exporter.',
  'Generated by dashboards/generate.ts from dashboards/src/rules.ts: edit the source, then regenerate.',
  'Unit tests: promtool test rules dashboards/rules/tests/*.yml',
  'Recording rules assume a scrape interval of 15s or shorter (rate over 1m windows).',
].join('\n');

function ruleToYaml(r: Rule): YamlValue {
  if (isAlertingRule(r)) {
    return {
      alert: r.alert,
      expr: r.expr,
      for: r.for,
      labels: { ...r.labels },
      annotations: { ...r.annotations },
    };
  }
  return { record: r.record, expr: r.expr };
}

export function renderRulesYaml(groups: RuleGroup[] = RULE_GROUPS, header: string = RULES_FILE_HEADER): string {
  return toYaml({ groups: groups.map((g) => ({ name: g.name, rules: g.rules.map(ruleToYaml) })) }, header);
}
