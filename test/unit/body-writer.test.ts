/**
 * BodyWriter (src/exporter/body-writer.ts): the OpenMetrics body written straight into
 * bytes must be exactly the UTF-8 of the text the string serialiser wrote. The expected
 * bytes come from Node's own UTF-8 encoder (Buffer.from) and, for values, from how
 * JavaScript prints a number (`${v}`, as label-writer.ts valueString documents it, with
 * Prometheus' `+Inf`/`-Inf`), written out by hand here.
 */
import { BodyWriter } from '../../src/exporter/body-writer';

const valueText = (v: number): string => {
  const w = new BodyWriter(64);
  w.value(v);
  return w.finish().toString('latin1');
};

test('values: digits for whole numbers, JavaScript number text otherwise', () => {
  const cases: [number, string][] = [
    [0, '0'],
    [-0, '0'], // `${-0}` is "0"
    [7, '7'],
    [10, '10'],
    [99, '99'],
    [100, '100'],
    [1234567890123, '1234567890123'],
    [9007199254740991, '9007199254740991'], // the largest safe integer: still the digit path
    [9007199254740992, '9007199254740992'], // 2^53: the string path, same text
    [1e21, '1e+21'],
    [-5, '-5'],
    [-1.5, '-1.5'],
    [0.1, '0.1'],
    [1.5e-7, '1.5e-7'],
    [123.456, '123.456'],
    [Infinity, '+Inf'],
    [-Infinity, '-Inf'],
    [NaN, 'NaN'],
  ];
  for (const [v, text] of cases) expect([v, valueText(v)]).toEqual([v, text]);
});

test('strings are appended as UTF-8 (any character), bytes as given, and the buffer grows as needed', () => {
  const w = new BodyWriter(64); // far smaller than what follows: several doublings
  const parts: (string | Buffer | number)[] = ['# HELP a ünïcödé\n', Buffer.from('a{job_id="日本"} '), 42, '\n', 'b{x="😀 \\"q\\""} ', 0.25, '\n', 'x'.repeat(70_000), Buffer.alloc(0), '', '\n# EOF\n'];
  let expected = '';
  for (const p of parts) {
    if (typeof p === 'string') {
      w.str(p);
      expected += p;
    } else if (typeof p === 'number') {
      w.value(p);
      expected += String(p);
    } else {
      w.bytes(p);
      expected += p.toString('utf8');
    }
  }
  w.char(0x0a);
  expected += '\n';
  const body = w.finish();
  expect(body.equals(Buffer.from(expected, 'utf8'))).toBe(true);
  expect(w.length).toBe(body.length);
});

test('a string that ends exactly at the capacity, or needs 3 bytes per character, is written whole', () => {
  for (const s of ['abcd', '€€€€', '😀😀', 'a€😀b']) {
    for (let cap = 64; cap <= 72; cap++) {
      const w = new BodyWriter(cap);
      const pad = 'p'.repeat(cap - 4);
      w.str(pad);
      w.str(s);
      w.str(s);
      expect(w.finish().toString('utf8')).toBe(pad + s + s);
    }
  }
});

test('a value written when the buffer is full grows it (digits and number text alike)', () => {
  for (const v of [12345, 0, 1.5, -7, Infinity]) {
    for (let cap = 64; cap <= 66; cap++) {
      const w = new BodyWriter(cap);
      const pad = 'p'.repeat(cap - 1);
      w.bytes(Buffer.from(pad)); // fills it to one byte short, without growing it
      w.value(v);
      w.value(v);
      const text = v === Infinity ? '+Inf' : String(v);
      expect(w.finish().toString('latin1')).toBe(pad + text + text);
    }
  }
});
