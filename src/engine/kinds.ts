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

/** Partition states as cuzk names them, indexed by the native enum value. */
export const PARTITION_STATES = ['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed'] as const;
export type PartitionState = (typeof PARTITION_STATES)[number];
export const PART_PENDING = 0;
export const PART_SYNTHESIZING = 1;
export const PART_SYNTH_DONE = 2;
export const PART_GPU = 3;
export const PART_DONE = 4;
export const PART_FAILED = 5;
/** States exported by cuzk_partitions{state}: the live ones (done/failed are counters). */
export const LIVE_PARTITION_STATES = 4;

const stateIndexByName = new Map<string, number>(PARTITION_STATES.map((s, i) => [s, i]));
export function partitionStateIndex(name: string): number {
  return stateIndexByName.get(name) ?? -1;
}

export const OUTCOMES = ['completed', 'failed', 'cancelled'] as const;
export type Outcome = (typeof OUTCOMES)[number];
export const OUTCOME_COMPLETED = 0;
export const OUTCOME_FAILED = 1;
export const OUTCOME_CANCELLED = 2;
