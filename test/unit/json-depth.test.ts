/**
 * The nesting-depth scan that bounds an attached daemon's snapshot before anything walks it
 * (strict-json.ts) must agree with the depth of the parsed value, for any JSON, strings full
 * of brackets, quotes, escapes and multi-byte characters included; the one-pass scan the
 * poll uses (jsonShapeBytes) must give both bounds at once, each as its own scan would.
 */
import fc from 'fast-check';
import { jsonNestingDepthBytes, jsonShapeBytes } from '../../src/util/strict-json';

/** Depth of a parsed value, the independent expectation. */
function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + v.reduce((m: number, x) => Math.max(m, depthOf(x)), 0);
  if (typeof v === 'object' && v !== null) return 1 + Object.values(v).reduce((m: number, x) => Math.max(m, depthOf(x)), 0);
  return 0;
}

/** Objects and arrays in a parsed value, the independent expectation. */
function countOf(v: unknown): number {
  return v !== null && typeof v === 'object' ? 1 + Object.values(v as object).reduce((a: number, x) => a + countOf(x), 0) : 0;
}

const tricky = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', 'é', '😀', '\n', ',') });
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', maxDepth: 12 }, fc.boolean(), fc.integer(), fc.constant(null), tricky, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(tricky, tie('value'), { maxKeys: 4 }),
})).value;

test('the scan = the depth of the parsed value, for arbitrary JSON', () => {
  fc.assert(
    fc.property(json, (v) => {
      const text = JSON.stringify(v);
      const d = depthOf(JSON.parse(text));
      expect(jsonNestingDepthBytes(Buffer.from(text, 'utf8'))).toBe(d);
    }),
    { numRuns: 2000 },
  );
});

test('the byte scan stops past its limit and counts brackets inside strings as text', () => {
  const deep = Buffer.from('['.repeat(100_000) + ']'.repeat(100_000));
  expect(jsonNestingDepthBytes(deep, 64)).toBe(65);
  expect(jsonNestingDepthBytes(Buffer.from('{"a":"[[[[{{{{\\"]]]"}'))).toBe(1);
  expect(jsonNestingDepthBytes(Buffer.from('[["\\\\"],[[]]]'))).toBe(3);
});

test('one pass, both bounds: the count up to its limit (then the scan stops), the depth up to its own (the count goes on)', () => {
  fc.assert(
    fc.property(json, fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 8 }), (v, maxContainers, maxDepth) => {
      const text = JSON.stringify(v);
      const parsed = JSON.parse(text);
      const count = countOf(parsed);
      const depth = depthOf(parsed);
      const got = jsonShapeBytes(Buffer.from(text, 'utf8'), maxContainers, maxDepth);
      if (count > maxContainers) {
        expect(got.containers).toBe(maxContainers + 1); // refused before parsing: depth not needed
      } else {
        expect(got.containers).toBe(count);
        expect(got.depth).toBe(Math.min(depth, maxDepth + 1));
      }
    }),
    { numRuns: 3000 },
  );
  const deep = Buffer.from('['.repeat(100) + '[],'.repeat(50) + '[]' + ']'.repeat(100));
  expect(jsonShapeBytes(deep, 1000, 64)).toEqual({ containers: 151, depth: 65 });
  expect(jsonShapeBytes(deep, 120, 64)).toEqual({ containers: 121, depth: 65 });
});
