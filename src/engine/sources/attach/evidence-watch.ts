/**
 * Configurations of cuzk that take a surface's evidence away, detected from what the
 * surfaces say, reported (cuzk_surface_degraded{surface,reason}, /status, the page) rather
 * than misread (curio e0294b0f; docs/upstream-conformance.md):
 *
 *   surface   reason             cause upstream                          seen as
 *   timeline  no_lines           pipeline.enabled = false (Phase 1       gRPC counts >= 2 proofs ending in the
 *                                workers write no TIMELINE)              last window; TIMELINE wrote no line
 *   timeline  split_prove_off    CUZK_DISABLE_SPLIT_PROVE=1 (no          pickups not followed by GPU_START
 *                                GPU_START/GPU_END)                      (timeline-surface.ts)
 *   timeline  batched            scheduler.max_batch_size > 1: a         SYNTH_START kind=porep-c2/snap-update
 *                                batch is one monolithic job whose       (the partitioned path never writes kind=)
 *                                lines carry only the first request id
 *   status    no_pipelines       /status registers only partitioned      gRPC counts >= 2 PoRep/SnapDeals proofs
 *                                PoRep/SnapDeals jobs (not batched       ending in the window; /status listed
 *                                ones, nothing with pipeline off)        no pipeline in it
 *
 * While TIMELINE has no lines and gRPC is attached, workers come from gRPC (merge.ts).
 * A reason clears when its evidence comes back.
 */
import { kindIndex } from '../../model/kinds';
import type { MergedAttachSource } from './merge';

export const DEGRADED_REASONS: Readonly<Record<string, readonly string[]>> = {
  timeline: ['no_lines', 'split_prove_off', 'batched'],
  status: ['no_pipelines'],
};

/** How long a window the proofs-vs-lines comparison looks at (ns). */
const WINDOW_NS = 60e9;
const PARTITIONED = [kindIndex('porep-c2'), kindIndex('snap-update')];

export class EvidenceWatch {
  private winStartHr = 0;
  private proofsAtStart = -1;
  private partitionedAtStart = -1;
  private linesAtStart = 0;
  private statusJobsSeen = false;
  private noLines = false;
  private noPipelines = false;

  constructor(private readonly src: MergedAttachSource) {}

  /** Called on every refresh (cheap). */
  update(nowHr: number): void {
    const g = this.src.grpc;
    if (!g) return;
    let proofs = 0;
    for (let k = 0; k < g.kProofsCompleted.length; k++) proofs += g.kProofsCompleted[k] + g.kProofsFailed[k];
    let partitioned = 0;
    for (const k of PARTITIONED) partitioned += g.kProofsCompleted[k] + g.kProofsFailed[k];
    const lines = this.src.timeline?.eventsTotal ?? 0;
    if (this.src.status && (this.src.status.model.jobs.size > 0)) this.statusJobsSeen = true;
    // Evidence back: clear at once.
    if (this.noLines && lines > this.linesAtStart) this.noLines = false;
    if (this.noPipelines && this.statusJobsSeen) this.noPipelines = false;
    if (this.proofsAtStart < 0 || nowHr - this.winStartHr >= WINDOW_NS) {
      if (this.proofsAtStart >= 0) {
        if (this.src.timeline && this.src.timeline.up && proofs - this.proofsAtStart >= 2 && lines === this.linesAtStart) this.noLines = true;
        if (this.src.status && this.src.status.up && partitioned - this.partitionedAtStart >= 2 && !this.statusJobsSeen) this.noPipelines = true;
      }
      this.winStartHr = nowHr;
      this.proofsAtStart = proofs;
      this.partitionedAtStart = partitioned;
      this.linesAtStart = lines;
      this.statusJobsSeen = false;
    }
  }

  degraded(surface: string, reason: string): boolean {
    return this.reasons(surface).includes(reason);
  }

  reasons(surface: string): string[] {
    const out: string[] = [];
    if (surface === 'timeline') {
      const t = this.src.timeline;
      if (this.noLines) out.push('no_lines');
      if (t && t.splitMode === 'off') out.push('split_prove_off');
      if (t && t.batchedSeen) out.push('batched');
    } else if (surface === 'status' && this.noPipelines) out.push('no_pipelines');
    return out;
  }
}
