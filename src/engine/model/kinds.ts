/**
 * Proof kinds and partition states: the label values of DESIGN §5 and the enum values of
 * native/include/cuzk_engine.h, in one place so the engine, attach sources and exporter agree.
 */

/** cuzk's canonical proof kind names, indexed by the native enum value. */
export const PROOF_KINDS = ['porep-c2', 'snap-update', 'window-post', 'winning-post'] as const;
export type ProofKind = (typeof PROOF_KINDS)[number];

/** Partitions per proof, as in cuzk (PoRep C2 10, SnapDeals 16, PoSts monolithic). */
export const PARTITIONS: Readonly<Record<ProofKind, number>> = {
  'porep-c2': 10,
  'snap-update': 16,
  'window-post': 1,
  'winning-post': 1,
};

/**
 * Label value for proof kinds we do not know (an attached daemon may report new ones).
 * Folding them into one value keeps label cardinality bounded (DESIGN §7).
 */
export const OTHER_KIND = 'other';
/** Index of OTHER_KIND in per-kind arrays: kinds are PROOF_KINDS followed by OTHER_KIND. */
export const OTHER_KIND_INDEX = PROOF_KINDS.length;
export const KIND_LABELS: readonly string[] = [...PROOF_KINDS, OTHER_KIND];
export const KIND_SLOTS = KIND_LABELS.length;

const kindIndexByName = new Map<string, number>(PROOF_KINDS.map((k, i) => [k, i]));

/** Native enum value of a canonical kind name, or -1. */
export function kindIndex(name: string): number {
  return kindIndexByName.get(name) ?? -1;
}

export function isProofKind(name: string): name is ProofKind {
  return kindIndexByName.has(name);
}

/**
 * Partition states, indexed by the native enum value (cuzk's names, plus `finalizing`:
 * kernels done, GPU lock released, the CPU epilogue of split proving still running; cuzk's
 * own /status shows such a partition as `gpu`).
 */
export const PARTITION_STATES = ['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed', 'finalizing'] as const;
export type PartitionState = (typeof PARTITION_STATES)[number];
export const PART_PENDING = 0;
export const PART_SYNTHESIZING = 1;
export const PART_SYNTH_DONE = 2;
export const PART_GPU = 3;
export const PART_DONE = 4;
export const PART_FAILED = 5;
export const PART_FINALIZING = 6;
/** Number of partition states (native CUZK_PART_STATE_COUNT). */
export const PART_STATE_COUNT = 7;

/**
 * States exported by cuzk_partitions{state}: the live ones (done/failed are counters), in
 * the order of their live slot (the per-kind stride of StateModel.kLive).
 */
export const LIVE_STATE_NAMES = ['pending', 'synthesizing', 'synth_done', 'gpu', 'finalizing'] as const;
export const LIVE_PARTITION_STATES = LIVE_STATE_NAMES.length;
/** Live slot of a partition state (index into LIVE_STATE_NAMES), -1 for done/failed/unknown. */
export const LIVE_SLOT: Readonly<Int8Array> = Int8Array.from([0, 1, 2, 3, -1, -1, 4]);
export const LIVE_GPU = 3;
export const LIVE_FINALIZING = 4;
/** The live slot of a state, or -1 (done, failed, out of range). */
export function liveSlot(state: number): number {
  return state < PART_STATE_COUNT ? LIVE_SLOT[state] : -1;
}
/** Position in the pipeline (pending < … < gpu < finalizing < done = failed), for sources that sample states. */
export const PART_RANK: Readonly<Int8Array> = Int8Array.from([0, 1, 2, 3, 5, 5, 4]);

const stateIndexByName = new Map<string, number>(PARTITION_STATES.map((s, i) => [s, i]));
export function partitionStateIndex(name: string): number {
  return stateIndexByName.get(name) ?? -1;
}

export const OUTCOMES = ['completed', 'failed', 'cancelled'] as const;
export type Outcome = (typeof OUTCOMES)[number];
export const OUTCOME_COMPLETED = 0;
export const OUTCOME_FAILED = 1;
export const OUTCOME_CANCELLED = 2;

/**
 * Reasons of cuzk_status_mismatch (label values of cuzk_status_mismatch_reason), fixed:
 *  - idle_with_partitions_on_gpu: partitions in gpu|finalizing and no worker busy at all
 *    (count-based; the seed's screenshot);
 *  - owner_idle: a worker's newest unfinished partition while that worker is reported idle
 *    (where ownership is known: run mode, TIMELINE);
 *  - surfaces_disagree: one attached surface says a worker proves, another says it is idle,
 *    beyond a skew tolerance (set by the attach merge through StateModel.setMismatchReason).
 */
export const MISMATCH_REASONS = ['idle_with_partitions_on_gpu', 'owner_idle', 'surfaces_disagree'] as const;
export type MismatchReason = (typeof MISMATCH_REASONS)[number];
export const MM_IDLE_WITH_PARTITIONS = 0;
export const MM_OWNER_IDLE = 1;
export const MM_SURFACES_DISAGREE = 2;
