/**
 * Curio's request-id conventions (docs/upstream-conformance.md; /work catalogue: Curio
 * lib/ffi/cuzk_funcs.go and proofshare): the only evidence of a partitioned job's kind in
 * TIMELINE alone. Ids from the Go format strings, every field multi-digit, and near misses
 * that must not be taken for a kind (a wrong kind is a wrong number; unknown waits for other
 * evidence). Killed Stryker survivors of src/engine/sources/attach/kind-evidence.ts.
 */
import { kindFromRequestId } from '../../src/engine/sources/attach/kind-evidence';
import { kindIndex } from '../../src/engine/model/kinds';

const K = (k: string) => kindIndex(k);

test.each([
  ['porep-1000-7', 'porep-c2'], // fmt.Sprintf("porep-%d-%d", miner, number)
  ['porep-12345-678901', 'porep-c2'],
  ['ps-porep-12345-678901-424242', 'porep-c2'], // proofshare: ("ps-porep-%d-%d-%d", ..., taskID)
  ['snap-1000-9', 'snap-update'],
  ['snap-12345-678901', 'snap-update'],
  ['ps-snap-12345-678901-424242', 'snap-update'],
  ['wdpost-1000-0-[1 2 3 4 5 6 7 8]', 'window-post'], // %d of a []byte
  ['wdpost-12345-17-[12 200 3 4 5 6 7 255]', 'window-post'],
  ['wdpost-12345-17-424242', 'window-post'],
  ['winpost-1000-0a0b0c0d0e0f1011', 'winning-post'], // ("winpost-%d-%x", miner, randomness[:8])
  ['winpost-12345-ff00aa11bb22cc33', 'winning-post'],
])('%s -> %s', (id, kind) => {
  expect(kindFromRequestId(id)).toBe(K(kind));
});

test.each([
  'xporep-1000-7',
  'porep-1000-7x',
  'porep-1000-7-8x',
  'porep-1000-7-ab',
  'porep-1000-',
  'snap-1000-9x',
  'xsnap-1000-9',
  'snap-1000-9-ab',
  'xwdpost-1000-0-[1 2]',
  'wdpost-1000-0-[1 2]x',
  'wdpost-abc-0-[1 2]',
  'wdpost-1000-abc-[1 2]',
  'wdpost-1000-0-[a b]',
  'wdpost-1000-0-abc',
  'xwinpost-1000-0a0b',
  'winpost-1000-0a0bz',
  'winpost-abc-0a0b',
  'winpost-1000-xyz',
  'winpost-1000-0A0B', // %x is lower case
  'some-opaque-id',
])('%s: no kind', (id) => {
  expect(kindFromRequestId(id)).toBe(-1);
});

test('ids are looked at up to 256 characters: a longer one has no kind, whatever it looks like', () => {
  const at = (n: number) => 'porep-1000-' + '7'.repeat(n - 'porep-1000-'.length);
  expect(at(256)).toHaveLength(256);
  expect(kindFromRequestId(at(256))).toBe(K('porep-c2'));
  expect(kindFromRequestId(at(257))).toBe(-1);
});
