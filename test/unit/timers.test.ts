/**
 * src/engine/sources/timers.ts: a fleet's targets share one interval per period. Each
 * registered callback runs once per tick, one throwing does not cost the others their turn,
 * a stopped one never runs again, and the interval goes when its last callback does.
 * Fake timers: the schedule itself is what is tested, not the machine's clock.
 */
import { ownTimers, SharedTimers } from '../../src/engine/sources/timers';

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

test('one interval per period; every callback once per tick', () => {
  const t = new SharedTimers();
  const calls: string[] = [];
  const stops = ['a', 'b', 'c'].map((n) => t.every(500, () => calls.push(n)));
  const slow = t.every(1000, () => calls.push('slow'));
  expect(t.periods.sort()).toEqual([1000, 500]);
  expect(jest.getTimerCount()).toBe(2);
  jest.advanceTimersByTime(499);
  expect(calls).toEqual([]);
  jest.advanceTimersByTime(1);
  expect(calls).toEqual(['a', 'b', 'c']);
  jest.advanceTimersByTime(500);
  // Which period's timer fires first at t = 1000 is not specified; each callback once.
  expect(calls.slice(3).sort()).toEqual(['a', 'b', 'c', 'slow']);
  stops.forEach((s) => s());
  slow();
  expect(jest.getTimerCount()).toBe(0);
  expect(t.periods).toEqual([]);
});

test('a stopped callback never runs again; stopping twice stops once; the same function twice is two registrations', () => {
  const t = new SharedTimers();
  let n = 0;
  const f = () => n++;
  const s1 = t.every(100, f);
  const s2 = t.every(100, f);
  jest.advanceTimersByTime(100);
  expect(n).toBe(2);
  s1();
  s1();
  jest.advanceTimersByTime(100);
  expect(n).toBe(3);
  expect(jest.getTimerCount()).toBe(1);
  s2();
  jest.advanceTimersByTime(1000);
  expect(n).toBe(3);
  expect(jest.getTimerCount()).toBe(0);
});

test('a callback that throws does not cost the others their turn; its error goes to onError', () => {
  const errors: unknown[] = [];
  const t = new SharedTimers((e) => errors.push(e));
  const ran: string[] = [];
  t.every(100, () => {
    throw new Error('boom');
  });
  t.every(100, () => ran.push('after'));
  jest.advanceTimersByTime(200);
  expect(ran).toEqual(['after', 'after']);
  expect(errors.map((e) => (e as Error).message)).toEqual(['boom', 'boom']);
  t.stop();
  expect(jest.getTimerCount()).toBe(0);
});

test('the interval keeps the process alive only while a callback asks it to', () => {
  const t = new SharedTimers();
  const stopUnref = t.every(100, () => undefined, { unref: true });
  const timer = () => (jest.getTimerCount() === 1 ? (t as unknown as { groups: Map<number, { timer: NodeJS.Timeout }> }).groups.get(100)!.timer : null);
  expect(timer()!.hasRef()).toBe(false);
  const stopRef = t.every(100, () => undefined);
  expect(timer()!.hasRef()).toBe(true);
  stopRef();
  expect(timer()!.hasRef()).toBe(false);
  stopUnref();
  expect(timer()).toBeNull();
});

test('ownTimers: a plain interval, stopped by what it returns', () => {
  let n = 0;
  const stop = ownTimers(50, () => n++, { unref: true });
  jest.advanceTimersByTime(120);
  expect(n).toBe(2);
  stop();
  jest.advanceTimersByTime(500);
  expect(n).toBe(2);
});

// issue 23: the survivors of the first mutation run.
test('stopping a callback twice releases its hold on the process once: another callback still keeping it alive keeps it', () => {
  const t = new SharedTimers();
  const timer = () => (t as unknown as { groups: Map<number, { timer: NodeJS.Timeout }> }).groups.get(100)!.timer;
  const a = t.every(100, () => undefined);
  const b = t.every(100, () => undefined);
  expect(timer().hasRef()).toBe(true);
  a();
  expect(timer().hasRef()).toBe(true);
  a();
  expect(timer().hasRef()).toBe(true);
  b();
  expect(t.periods).toEqual([]);
});

test('stop() forgets every period; a registration from before it, stopped later, does not take a newer one of the same period with it', () => {
  const t = new SharedTimers();
  let n = 0;
  const old = t.every(100, () => undefined);
  t.stop();
  expect(t.periods).toEqual([]);
  expect(jest.getTimerCount()).toBe(0);
  const fresh = t.every(100, () => n++);
  old();
  expect(t.periods).toEqual([100]);
  jest.advanceTimersByTime(100);
  expect(n).toBe(1);
  fresh();
  expect(t.periods).toEqual([]);
  expect(jest.getTimerCount()).toBe(0);
});

test('by default a throwing callback\'s error is thrown again on its own, after the other callbacks ran (uncaught, as with a timer of one\'s own)', () => {
  const t = new SharedTimers();
  const ran: string[] = [];
  t.every(100, () => {
    throw new Error('boom');
  });
  t.every(100, () => ran.push('after'));
  const later: Array<() => void> = [];
  const spy = jest.spyOn(global, 'setImmediate').mockImplementation(((fn: () => void) => {
    later.push(fn);
    return {} as NodeJS.Immediate;
  }) as unknown as typeof setImmediate);
  try {
    jest.advanceTimersByTime(100);
  } finally {
    spy.mockRestore();
  }
  expect(ran).toEqual(['after']);
  expect(later).toHaveLength(1);
  expect(later[0]).toThrow('boom');
  t.stop();
});

test('ownTimers keeps the process alive unless asked not to', () => {
  const made: NodeJS.Timeout[] = [];
  const real = global.setInterval;
  const spy = jest.spyOn(global, 'setInterval').mockImplementation(((fn: () => void, ms: number) => {
    const h = (real as unknown as (f: () => void, m: number) => NodeJS.Timeout)(fn, ms);
    made.push(h);
    return h;
  }) as unknown as typeof setInterval);
  try {
    const s1 = ownTimers(50, () => undefined, { unref: true });
    const s2 = ownTimers(50, () => undefined);
    const s3 = ownTimers(50, () => undefined, {});
    expect(made.map((h) => h.hasRef())).toEqual([false, true, true]);
    s1();
    s2();
    s3();
  } finally {
    spy.mockRestore();
  }
});
