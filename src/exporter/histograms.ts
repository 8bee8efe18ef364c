/**
 * Histograms of DESIGN §5 as OpenTelemetry SDK instruments with explicit second-scale
 * buckets (the SDK's defaults are millisecond-scale). Recorded only when a partition or
 * proof finishes or a GPU lock is taken (the model's observer), never per scrape.
 * Attribute sets are bounded: proof_kind (5 values) and gpu (fixed for an engine's life;
 * attached daemons report no lock events, so no per-GPU histogram exists there).
 */
import type { Attributes, Histogram, Meter } from '@opentelemetry/api';
import { KIND_LABELS, OUTCOME_COMPLETED } from '../engine/kinds';
import type { ModelObserver, StateModel } from '../engine/state-model';

/** Bucket upper bounds in seconds, chosen for the data (sub-second to minutes). */
export const BUCKETS = {
  // Reference prover partitions take milliseconds; real cuzk GPU stages 0.3–5 s.
  partitionGpu: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
  // Split-proving finalize tails: cuzk's b_g2_msm epilogue ~0.4–1.7 s; the reference
  // prover's are milliseconds on its scaled-down sizes.
  partitionFinalize: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 4, 8, 16],
  // Real syntheses take 1–60 s (PoRep ~40 s), the reference prover's milliseconds.
  partitionSynthesis: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160],
  proof: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 2400],
  queueWait: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800],
  // Gaps between one GPU-lock release and the next acquire: microseconds when the
  // dual-worker interlock works, seconds when the GPU waits for synthesis.
  gpuIdleGap: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60],
} as const;

export class ModelHistograms implements ModelObserver {
  private readonly gpuDuration: Histogram;
  private readonly synthDuration: Histogram;
  private readonly finalizeDuration: Histogram;
  private readonly proofDuration: Histogram;
  private readonly queueWaitHist: Histogram;
  private readonly idleGap: Histogram;
  private readonly kindAttrs: Attributes[] = KIND_LABELS.map((k) => ({ proof_kind: k }));

  constructor(
    meter: Meter,
    private readonly model: StateModel,
  ) {
    const h = (name: string, description: string, buckets: readonly number[]) =>
      meter.createHistogram(name, { description, unit: '', advice: { explicitBucketBoundaries: [...buckets] } });
    this.gpuDuration = h('cuzk_partition_gpu_duration_seconds', 'GPU-stage duration of finished partitions.', BUCKETS.partitionGpu);
    this.finalizeDuration = h('cuzk_partition_finalize_duration_seconds', 'Time finished partitions spent finalizing (GPU lock released, CPU epilogue running), where the source knows it.', BUCKETS.partitionFinalize);
    this.synthDuration = h('cuzk_partition_synthesis_duration_seconds', 'Synthesis duration of partitions.', BUCKETS.partitionSynthesis);
    this.proofDuration = h('cuzk_proof_duration_seconds', 'Submit to result of completed proofs.', BUCKETS.proof);
    this.queueWaitHist = h('cuzk_proof_queue_wait_seconds', 'Submit to first synthesis of proofs.', BUCKETS.queueWait);
    this.idleGap = h('cuzk_gpu_idle_gap_seconds', 'Time from a GPU-lock release to the next acquire on that GPU.', BUCKETS.gpuIdleGap);
  }

  partitionGpu(kind: number, seconds: number): void {
    this.gpuDuration.record(seconds, this.kindAttrs[kind]);
  }
  partitionFinalize(kind: number, seconds: number): void {
    this.finalizeDuration.record(seconds, this.kindAttrs[kind]);
  }
  partitionSynthesis(kind: number, seconds: number): void {
    this.synthDuration.record(seconds, this.kindAttrs[kind]);
  }
  proofDone(kind: number, outcome: number, seconds: number): void {
    if (outcome === OUTCOME_COMPLETED) this.proofDuration.record(seconds, this.kindAttrs[kind]);
  }
  queueWait(kind: number, seconds: number): void {
    this.queueWaitHist.record(seconds, this.kindAttrs[kind]);
  }
  gpuIdleGap(gpuSlot: number, seconds: number): void {
    if (this.gpuAttrsVersion !== this.model.topologyVersion) {
      this.gpuAttrs = this.model.topology.gpus.map((g) => ({ gpu: String(g.ordinal) }));
      this.gpuAttrsVersion = this.model.topologyVersion;
    }
    const a = this.gpuAttrs[gpuSlot];
    if (a) this.idleGap.record(seconds, a);
  }
  private gpuAttrs: Attributes[] = [];
  private gpuAttrsVersion = -1;
}
