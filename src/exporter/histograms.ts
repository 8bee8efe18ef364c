/**
 * Histograms of DESIGN §5, with explicit second-scale buckets (the SDK's defaults are
 * millisecond-scale), exported from the StateModel's typed arrays (model-histograms.ts) by
 * the MetricProducer (state-metrics.ts), like the counters. Observations are recorded only
 * when a partition or proof finishes or a GPU lock is taken, never per scrape, and never
 * through an SDK `record()`.
 *
 * What reaches /metrics and OTLP is what the SDK instruments these replaced produced (in
 * their scope, creation order, series order and point shape: count, sum, min, max, bucket
 * counts, start time = first observation); test/unit/histogram-table.test.ts compares both.
 * Attribute sets are bounded: proof_kind (KIND_LABELS) and gpu (GPUs of the topology;
 * attached daemons report no lock events, so no per-GPU histogram exists there).
 */
import type { Attributes, HrTime } from '@opentelemetry/api';
import { ValueType } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType, MetricData } from '@opentelemetry/sdk-metrics';
import type { HistogramTable } from '../engine/model/histogram-table';
import { KIND_LABELS } from '../engine/model/kinds';
import type { ModelHistograms } from '../engine/model/model-histograms';

export { BUCKETS } from '../engine/model/model-histograms';

/** One exported histogram: its name, help, table and the labels of its series. */
export interface HistogramFamily {
  name: string;
  description: string;
  table(h: ModelHistograms): HistogramTable;
  attributes(h: ModelHistograms, series: number): Attributes;
}

const kindAttrs: Attributes[] = KIND_LABELS.map((k) => ({ proof_kind: k }));
const byKind = (_h: ModelHistograms, s: number) => kindAttrs[s];

/** In the order the SDK instruments were created (their order in every body). */
export const HISTOGRAM_FAMILIES: readonly HistogramFamily[] = [
  { name: 'cuzk_partition_gpu_duration_seconds', description: 'GPU-stage duration of finished partitions.', table: (h) => h.partitionGpuSeconds, attributes: byKind },
  {
    name: 'cuzk_partition_finalize_duration_seconds',
    description: 'Time finished partitions spent finalizing (GPU lock released, CPU epilogue running), where the source knows it.',
    table: (h) => h.partitionFinalizeSeconds,
    attributes: byKind,
  },
  { name: 'cuzk_partition_synthesis_duration_seconds', description: 'Synthesis duration of partitions.', table: (h) => h.partitionSynthesisSeconds, attributes: byKind },
  { name: 'cuzk_proof_duration_seconds', description: 'Submit to result of completed proofs.', table: (h) => h.proofSeconds, attributes: byKind },
  { name: 'cuzk_proof_queue_wait_seconds', description: 'Submit to first synthesis of proofs.', table: (h) => h.queueWaitSeconds, attributes: byKind },
  {
    name: 'cuzk_gpu_idle_gap_seconds',
    description: 'Time from a GPU-lock release to the next acquire on that GPU.',
    table: (h) => h.gpuIdleGapSeconds,
    attributes: (h, s) => gpuAttrs(h.gpuLabels[s]),
  },
];

const gpuAttrCache = new Map<string, Attributes>();
function gpuAttrs(label: string): Attributes {
  let a = gpuAttrCache.get(label);
  if (a === undefined) {
    a = { gpu: label };
    if (gpuAttrCache.size < 4096) gpuAttrCache.set(label, a);
  }
  return a;
}

/** millisToHrTime of @opentelemetry/core, as the SDK stamped its points. */
function hrTimeOfMs(ms: number): HrTime {
  return [Math.trunc(ms / 1000), Math.round((ms % 1000) * 1e6)];
}

/**
 * The histograms that have at least one series, as cumulative MetricData at `endTime`.
 * Counts are copied, so the collection does not move when later observations arrive.
 */
export function histogramMetrics(h: ModelHistograms, endTime: HrTime): MetricData[] {
  const out: MetricData[] = [];
  for (const f of HISTOGRAM_FAMILIES) {
    const t = f.table(h);
    if (t.size === 0) continue;
    const w = t.width;
    const dataPoints = new Array(t.size);
    for (let i = 0; i < t.order.length; i++) {
      const s = t.order[i];
      const counts = new Array<number>(w);
      for (let b = 0; b < w; b++) counts[b] = t.buckets[s * w + b];
      const n = t.count[s];
      dataPoints[i] = {
        attributes: f.attributes(h, s),
        startTime: hrTimeOfMs(t.startMs[s]),
        endTime,
        value: {
          min: n > 0 ? t.min[s] : undefined,
          max: n > 0 ? t.max[s] : undefined,
          sum: t.sum[s],
          buckets: { boundaries: t.bounds as number[], counts },
          count: n,
        },
      };
    }
    out.push({
      descriptor: { name: f.name, description: f.description, unit: '', valueType: ValueType.DOUBLE },
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.HISTOGRAM,
      dataPoints,
    });
  }
  return out;
}
