/**
 * ErrorCounts (src/engine/model/error-counts.ts): counters by reason (DESIGN §5
 * `cuzk_exporter_errors_total{reason}`), a reason declared up front exists at 0, and the
 * last message is kept for /status.
 */
import { ErrorCounts } from '../../src/engine/model/error-counts';

test('a new set has no reasons and no last message; an unknown reason reads 0', () => {
  const e = new ErrorCounts();
  expect([...e.entries()]).toEqual([]);
  expect(e.get('nope')).toBe(0);
  expect(e.lastMessage).toBeNull();
});

test('inc counts per reason, in the order reasons first appeared', () => {
  const e = new ErrorCounts();
  e.inc('a');
  e.inc('b');
  e.inc('a');
  e.inc('a');
  expect(e.get('a')).toBe(3);
  expect(e.get('b')).toBe(1);
  expect([...e.entries()]).toEqual([
    ['a', 3],
    ['b', 1],
  ]);
});

test('a message replaces the last one; inc without a message keeps it', () => {
  const e = new ErrorCounts();
  e.inc('a');
  expect(e.lastMessage).toBeNull();
  e.inc('a', 'first');
  expect(e.lastMessage).toBe('first');
  e.inc('b');
  expect(e.lastMessage).toBe('first');
  e.inc('b', '');
  expect(e.lastMessage).toBe('');
});

test('declare makes the series exist at 0 and never resets a count', () => {
  const e = new ErrorCounts();
  e.declare('x');
  expect([...e.entries()]).toEqual([['x', 0]]);
  expect(e.get('x')).toBe(0);
  e.inc('x');
  e.inc('x');
  e.declare('x');
  expect(e.get('x')).toBe(2);
  expect([...e.entries()]).toEqual([['x', 2]]);
});
