/**
 * Proof kinds and partition states (src/engine/model/kinds.ts) against the enums of
 * native/include/cuzk_engine.h (cuzk_proof_kind, cuzk_partition_state, cuzk_job_outcome)
 * and the label values of DESIGN §5 (proof_kind, state, reason).
 */
import {
  isProofKind,
  KIND_LABELS,
  KIND_SLOTS,
  kindIndex,
  LIVE_PARTITION_STATES,
  LIVE_SLOT,
  LIVE_STATE_NAMES,
  liveSlot,
  MISMATCH_REASONS,
  OTHER_KIND,
  OTHER_KIND_INDEX,
  OUTCOMES,
  PART_RANK,
  PARTITION_STATES,
  PARTITIONS,
  partitionStateIndex,
  PROOF_KINDS,
} from '../../src/engine/model/kinds';

test('proof kinds in native enum order (CUZK_KIND_POREP_C2 = 0 … WINNING_POST = 3), then other', () => {
  expect([...PROOF_KINDS]).toEqual(['porep-c2', 'snap-update', 'window-post', 'winning-post']);
  expect(OTHER_KIND).toBe('other');
  expect(OTHER_KIND_INDEX).toBe(4);
  expect([...KIND_LABELS]).toEqual(['porep-c2', 'snap-update', 'window-post', 'winning-post', 'other']);
  expect(KIND_SLOTS).toBe(5);
});

test('partitions per proof as in cuzk: PoRep C2 10, SnapDeals 16, PoSts 1', () => {
  expect({ ...PARTITIONS }).toEqual({ 'porep-c2': 10, 'snap-update': 16, 'window-post': 1, 'winning-post': 1 });
});

test('kindIndex and isProofKind know exactly the four canonical names', () => {
  expect(kindIndex('porep-c2')).toBe(0);
  expect(kindIndex('snap-update')).toBe(1);
  expect(kindIndex('window-post')).toBe(2);
  expect(kindIndex('winning-post')).toBe(3);
  for (const name of ['other', '', 'PoRep-C2', 'porep', 'constructor', 'toString']) {
    expect(kindIndex(name)).toBe(-1);
    expect(isProofKind(name)).toBe(false);
  }
  for (const name of PROOF_KINDS) expect(isProofKind(name)).toBe(true);
});

test('partition states in native enum order, and their indexes', () => {
  expect([...PARTITION_STATES]).toEqual(['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed', 'finalizing']);
  const expected: Record<string, number> = { pending: 0, synthesizing: 1, synth_done: 2, gpu: 3, done: 4, failed: 5, finalizing: 6 };
  for (const [name, i] of Object.entries(expected)) expect(partitionStateIndex(name)).toBe(i);
  for (const name of ['', 'GPU', 'running', 'constructor']) expect(partitionStateIndex(name)).toBe(-1);
});

test('live states (cuzk_partitions{state}): every state but done and failed, finalizing last', () => {
  expect([...LIVE_STATE_NAMES]).toEqual(['pending', 'synthesizing', 'synth_done', 'gpu', 'finalizing']);
  expect(LIVE_PARTITION_STATES).toBe(5);
  // liveSlot(state) names the state's live slot by name
  for (let s = 0; s < PARTITION_STATES.length; s++) {
    const name = PARTITION_STATES[s];
    const want = name === 'done' || name === 'failed' ? -1 : (LIVE_STATE_NAMES as readonly string[]).indexOf(name);
    expect(liveSlot(s)).toBe(want);
  }
  expect([...LIVE_SLOT]).toEqual([0, 1, 2, 3, -1, -1, 4]);
  // out of range (CUZK_PART_STATE_COUNT = 7 and beyond)
  expect(liveSlot(7)).toBe(-1);
  expect(liveSlot(8)).toBe(-1);
  expect(liveSlot(255)).toBe(-1);
});

test('pipeline rank: pending < synthesizing < synth_done < gpu < finalizing < done = failed', () => {
  const rank = (n: string) => PART_RANK[partitionStateIndex(n)];
  const order = ['pending', 'synthesizing', 'synth_done', 'gpu', 'finalizing', 'done'];
  for (let i = 1; i < order.length; i++) expect(rank(order[i])).toBeGreaterThan(rank(order[i - 1]));
  expect(rank('failed')).toBe(rank('done'));
  expect(rank('pending')).toBe(0);
  expect(PART_RANK.length).toBe(7);
});

test('outcomes (cuzk_job_outcome) and mismatch reasons (DESIGN §5), in order', () => {
  expect([...OUTCOMES]).toEqual(['completed', 'failed', 'cancelled']);
  expect([...MISMATCH_REASONS]).toEqual(['idle_with_partitions_on_gpu', 'owner_idle', 'surfaces_disagree']);
});
