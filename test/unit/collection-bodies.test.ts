/**
 * CollectionBodies (src/exporter/shared-collection.ts) on its own, from its rules: the
 * render callback's result may be the whole body as one string, pieces, or UTF-8 bytes; each
 * format is rendered once; the encoded body is UTF-8, gzip-compressed at the level asked for,
 * once per format and level (test/unit/shared-collection.test.ts covers it through Telemetry).
 */
import * as zlib from 'node:zlib';
import { CollectionBodies, utf8Of } from '../../src/exporter/shared-collection';

test('a body rendered as one string: its text and bytes', () => {
  let renders = 0;
  const b = new CollectionBodies((f) => (renders++, `body of ${f} é\n`));
  expect(b.text('text')).toBe('body of text é\n');
  expect(b.encoded('text')).toEqual(Buffer.from('body of text é\n', 'utf8'));
  expect(b.text('openmetrics')).toBe('body of openmetrics é\n');
  expect(renders).toBe(2);
});

test('pieces and bytes render the same text', () => {
  const pieces = new CollectionBodies(() => ['a', 'é', '', 'c\n']);
  expect(pieces.text('text')).toBe('aéc\n');
  expect(pieces.encoded('text')).toEqual(Buffer.from('aéc\n'));
  const bytes = new CollectionBodies(() => Buffer.from('xyz'));
  expect(bytes.text('openmetrics')).toBe('xyz');
  expect(bytes.encoded('openmetrics')).toEqual(Buffer.from('xyz'));
  expect(utf8Of(['€', 'a'])).toEqual(Buffer.from('€a'));
  expect(utf8Of([])).toEqual(Buffer.alloc(0));
});

test('each gzip level is its own encoding, and identity is not any of them', () => {
  const text = 'cuzk_up 1\n'.repeat(2000) + Array.from({ length: 500 }, (_, i) => `m${i * 7919} ${i}\n`).join('');
  const b = new CollectionBodies(() => [text]);
  const l1 = b.encoded('text', 1);
  const l9 = b.encoded('text', 9);
  expect(l1).toEqual(zlib.gzipSync(text, { level: 1 }));
  expect(l9).toEqual(zlib.gzipSync(text, { level: 9 }));
  expect(l1.equals(l9)).toBe(false);
  expect(b.encoded('text')).toEqual(Buffer.from(text));
  expect(b.encoded('text', 1)).toBe(l1);
  expect(b.encoded('text', 0)).toEqual(zlib.gzipSync(text, { level: 0 }));
});
