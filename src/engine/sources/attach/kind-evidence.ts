/**
 * The proof kind of a job whose TIMELINE lines do not say it. cuzk's partitioned jobs
 * (PoRep C2, SnapDeals) never write their kind (engine.rs: only the monolithic path's
 * SYNTH_START carries `kind=`), so every other piece of evidence is used, best first:
 *
 *   evidence         where                                               certainty
 *   timeline         SYNTH_START kind=<kind> (monolithic jobs)           exact
 *   status           /status pipelines[].proof_kind                      exact (partitioned jobs)
 *   grpc_status      GetStatus gpus[].current_job_id/current_proof_kind  exact, when sampled
 *   request_id       Curio's request id conventions (below)              convention
 *   partition_index  a partition index >= 10 (PoRep C2 has 10)           exact for 32 GiB sectors
 *   grpc_metrics     the one kind whose GetMetrics counter moved when    inference
 *                    the job (alone) ended
 *   unresolved       none within `unresolvedMs` of the job's end:        counted under "other"
 *                    cuzk_exporter_errors_total{reason="timeline_unresolved_kind"}
 *
 * Curio's ids are deterministic and name their kind (curio e0294b0f lib/ffi/cuzk_funcs.go:
 * `porep-%d-%d`, `snap-%d-%d`, `wdpost-%d-%d-%d`, `winpost-%d-%x`; tasks/proofshare/
 * task_prove.go: `ps-porep-%d-%d-%d`, `ps-snap-%d-%d-%d`). Another client may name its jobs
 * anything, so the convention ranks below what the daemon itself says, and every use of it
 * is counted (cuzk_exporter_kind_resolutions_total{evidence="request_id"}).
 */
import { kindIndex } from '../../model/kinds';

export const KIND_EVIDENCE = ['timeline', 'status', 'grpc_status', 'request_id', 'partition_index', 'grpc_metrics', 'unresolved'] as const;
export type KindEvidence = (typeof KIND_EVIDENCE)[number];

const POREP = kindIndex('porep-c2');
const SNAP = kindIndex('snap-update');
const WDPOST = kindIndex('window-post');
const WINPOST = kindIndex('winning-post');

// Go's %d of a []byte prints "[1 2 3 ...]": wdpost ids carry spaces and brackets.
const CONVENTIONS: [RegExp, number][] = [
  [/^(?:ps-)?porep-\d+-\d+(?:-\d+)?$/, POREP],
  [/^(?:ps-)?snap-\d+-\d+(?:-\d+)?$/, SNAP],
  [/^wdpost-\d+-\d+-(?:\[[\d ]*\]|\d+)$/, WDPOST],
  [/^winpost-\d+-[0-9a-f]+$/, WINPOST],
];

/** The kind slot Curio's request id conventions give this id, or -1. */
export function kindFromRequestId(id: string): number {
  if (id.length > 256) return -1;
  for (const [re, k] of CONVENTIONS) if (re.test(id)) return k;
  return -1;
}

/** Counts of how each job's kind became known (cuzk_exporter_kind_resolutions_total). */
export class KindResolutions {
  readonly counts = new Map<KindEvidence, number>(KIND_EVIDENCE.map((e) => [e, 0]));
  inc(e: KindEvidence): void {
    this.counts.set(e, (this.counts.get(e) ?? 0) + 1);
  }
}
