/**
 * The metric contract the dashboards and rules are written against (DESIGN §5 plus the
 * exporter's documented additions). Tests use it to reject any query that names a metric
 * the exporter does not serve; the fake exporter in test/dashboards builds its body from it.
 */

export type MetricType = 'gauge' | 'counter' | 'histogram';

export interface MetricDef {
  name: string;
  type: MetricType;
  /** Labels the exporter attaches (Prometheus adds `instance` and `job`). */
  labels: readonly string[];
  help: string;
}

export const PROOF_KINDS = ['porep-c2', 'snap-update', 'window-post', 'winning-post'] as const;
export const PARTITION_STATES = ['pending', 'synthesizing', 'synth_done', 'gpu', 'finalizing'] as const;
export const MISMATCH_REASONS = ['idle_with_partitions_on_gpu', 'owner_idle', 'surfaces_disagree'] as const;

export const METRICS: readonly MetricDef[] = [
  { name: 'cuzk_gpu_worker_busy', type: 'gauge', labels: ['gpu', 'worker'], help: 'worker currently owns a partition (0/1)' },
  { name: 'cuzk_gpu_worker_busy_seconds_total', type: 'counter', labels: ['gpu', 'worker'], help: 'exact time busy, including the running partition' },
  { name: 'cuzk_gpu_busy_seconds_total', type: 'counter', labels: ['gpu'], help: 'time the per-GPU kernel lock was held' },
  { name: 'cuzk_partition_gpu_seconds_total', type: 'counter', labels: ['proof_kind'], help: 'GPU-stage time of finished partitions' },
  { name: 'cuzk_partition_synthesis_seconds_total', type: 'counter', labels: ['proof_kind'], help: 'synthesis time of finished partitions' },
  { name: 'cuzk_partition_gpu_duration_seconds', type: 'histogram', labels: ['proof_kind'], help: 'per-partition GPU-stage duration' },
  { name: 'cuzk_partition_synthesis_duration_seconds', type: 'histogram', labels: ['proof_kind'], help: 'per-partition synthesis duration' },
  { name: 'cuzk_partitions', type: 'gauge', labels: ['proof_kind', 'state'], help: 'partitions now in each state' },
  { name: 'cuzk_partitions_completed_total', type: 'counter', labels: ['proof_kind'], help: 'partitions completed' },
  { name: 'cuzk_partitions_failed_total', type: 'counter', labels: ['proof_kind'], help: 'partitions failed' },
  { name: 'cuzk_proofs_completed_total', type: 'counter', labels: ['proof_kind'], help: 'proofs completed' },
  { name: 'cuzk_proofs_failed_total', type: 'counter', labels: ['proof_kind'], help: 'proofs failed' },
  { name: 'cuzk_proof_duration_seconds', type: 'histogram', labels: ['proof_kind'], help: 'submit to result' },
  { name: 'cuzk_proof_queue_wait_seconds', type: 'histogram', labels: ['proof_kind'], help: 'submit to first synthesis' },
  { name: 'cuzk_queue_depth', type: 'gauge', labels: ['proof_kind'], help: 'queued, not started' },
  { name: 'cuzk_synthesis_active', type: 'gauge', labels: [], help: 'synthesis slots in use' },
  { name: 'cuzk_synthesis_max_concurrent', type: 'gauge', labels: [], help: 'synthesis slots' },
  { name: 'cuzk_memory_budget_bytes', type: 'gauge', labels: [], help: 'memory budget' },
  { name: 'cuzk_memory_used_bytes', type: 'gauge', labels: [], help: 'memory used' },
  { name: 'cuzk_status_mismatch', type: 'gauge', labels: [], help: 'the prover contradicts itself for certain (0/1)' },
  { name: 'cuzk_up', type: 'gauge', labels: [], help: 'the source answered at the last collection (0/1)' },
  { name: 'cuzk_exporter_events_total', type: 'counter', labels: [], help: 'events ingested' },
  { name: 'cuzk_exporter_events_dropped_total', type: 'counter', labels: [], help: 'events lost (sequence gaps)' },
  { name: 'cuzk_exporter_build_info', type: 'gauge', labels: ['version', 'source', 'backend', 'surfaces'], help: 'build information (1); surfaces: the attached surfaces, comma-joined' },
  { name: 'cuzk_gpu_info', type: 'gauge', labels: ['gpu', 'name', 'uuid', 'pci_bus_id'], help: 'GPU identity (1)' },
  { name: 'cuzk_gpu_idle_gap_seconds', type: 'histogram', labels: ['gpu'], help: 'GPU-lock release to next acquire' },
  { name: 'cuzk_gpu_starved_seconds_total', type: 'counter', labels: ['gpu'], help: 'lock free while no synthesized partition waited' },
  { name: 'cuzk_exporter_scrape_duration_seconds', type: 'gauge', labels: [], help: 'time the last collection took' },
  // Additions served by the exporter beyond the DESIGN §5 table.
  { name: 'cuzk_gpu_worker_current_partition_seconds', type: 'gauge', labels: ['gpu', 'worker'], help: 'seconds the worker has owned its current partition (0 when idle)' },
  { name: 'cuzk_gpu_worker_partitions_total', type: 'counter', labels: ['gpu', 'worker'], help: 'partitions the worker finished' },
  { name: 'cuzk_partition_finalize_seconds_total', type: 'counter', labels: ['proof_kind'], help: 'time finished partitions spent finalizing (split proving)' },
  { name: 'cuzk_partition_finalize_duration_seconds', type: 'histogram', labels: ['proof_kind'], help: 'per-partition finalize duration' },
  { name: 'cuzk_status_mismatch_reason', type: 'gauge', labels: ['reason'], help: 'which certain contradiction holds (0/1)' },
  { name: 'cuzk_exporter_errors_total', type: 'counter', labels: ['reason'], help: 'collection/ingestion errors by reason' },
  { name: 'cuzk_surface_up', type: 'gauge', labels: ['surface'], help: 'each surface of the source answered at its last poll (0/1): status, grpc, timeline attached; engine in run mode' },
];

/** Surfaces an attached exporter reads (cuzk_surface_up{surface}); run mode has one, engine. */
export const SURFACES = ['grpc', 'status', 'timeline'] as const;

/** Series Prometheus itself synthesises (scrape health, alert state). */
export const PROMETHEUS_SYNTHETIC_METRICS: readonly string[] = ['up', 'scrape_duration_seconds', 'ALERTS'];

/** Every series name a scrape of the exporter can produce (histograms expanded). */
export function exportedSeriesNames(): string[] {
  const names: string[] = [];
  for (const m of METRICS) {
    if (m.type === 'histogram') names.push(`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`);
    else names.push(m.name);
  }
  return names;
}

/** Label names that may appear on any known series (exporter labels + target/alert labels). */
export function knownLabelNames(): Set<string> {
  const s = new Set<string>(['instance', 'job', 'le', '__name__', 'alertname', 'alertstate', 'severity']);
  for (const m of METRICS) for (const l of m.labels) s.add(l);
  return s;
}
