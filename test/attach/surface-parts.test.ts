/**
 * Issue 23: the small shared parts of attach/surface.ts, by their doc comments: the sorted
 * surface names, SampleHistory's defaults (the last 30 s, at most 256 per worker), its order
 * kept whatever the order added, and retain(); ThrottledLog (one line per distinct problem,
 * repeated at most once a minute, unless forced); quoteName (quoted, escaped, cut at 64
 * characters); hrNowNs on the process' hrtime scale.
 */
import { SURFACE_NAMES, SampleHistory, ThrottledLog, hrNowNs, quoteName } from '../../src/engine/sources/attach/surface';
import type { Logger } from '../../src/util/logger';

const s = (endHr: number, busy = false) => ({ startHr: endHr - 1, endHr, busy, kind: -1 });

test('surface names, sorted', () => {
  expect(SURFACE_NAMES).toEqual(['grpc', 'status', 'timeline']);
});

describe('SampleHistory', () => {
  test('defaults: the samples of the last 30 s behind the newest', () => {
    const h = new SampleHistory();
    h.add(1, s(0));
    h.add(1, s(10e9));
    h.add(1, s(30e9)); // 0 is exactly 30 s behind: kept
    expect(h.newestUntil(1, 0)).toEqual(s(0));
    h.add(1, s(30e9 + 1)); // now 0 is past 30 s behind
    expect(h.newestUntil(1, 0)).toBeNull();
    expect(h.newestUntil(1, 10e9)).toEqual(s(10e9));
  });

  test('defaults: at most 256 samples per worker', () => {
    const h = new SampleHistory();
    for (let i = 0; i < 300; i++) h.add(2, s(i));
    expect(h.newestUntil(2, 43)).toBeNull(); // 0..43 dropped (300 - 256 = 44)
    expect(h.newestUntil(2, 44)).toEqual(s(44));
    expect(h.newestUntil(2, 1e9)).toEqual(s(299));
  });

  test('one over the bounds drops exactly the oldest; many over drop as many', () => {
    const h = new SampleHistory(1e12, 3);
    for (const t of [10, 20, 30]) h.add(1, s(t));
    h.add(1, s(40));
    expect(h.newestUntil(1, 15)).toBeNull();
    expect(h.newestUntil(1, 25)).toEqual(s(20));
    const g = new SampleHistory(100, 1000);
    for (const t of [0, 10, 20, 30, 40]) g.add(1, s(t));
    g.add(1, s(135)); // 0..30 are more than 100 behind: four dropped at once
    expect(g.newestUntil(1, 39)).toBeNull();
    expect(g.newestUntil(1, 134)).toEqual(s(40));
  });

  test('a sample older than the newest goes in its place; an older one past the age bound is dropped at once', () => {
    const h = new SampleHistory(100, 10);
    h.add(1, s(50));
    h.add(1, s(100));
    h.add(1, s(70)); // between
    expect(h.newestUntil(1, 80)).toEqual(s(70));
    expect(h.newestUntil(1, 60)).toEqual(s(50));
    expect(h.newestUntil(1, 100)).toEqual(s(100));
    h.add(1, s(-5)); // 105 behind the newest
    expect(h.newestUntil(1, 0)).toBeNull();
    expect(h.newestUntil(1, 49)).toBeNull();
  });

  test('the newest sample is kept even past the bounds; workers are separate', () => {
    const h = new SampleHistory(0, 1);
    h.add(1, s(5));
    h.add(1, s(9));
    h.add(2, s(3));
    expect(h.newestUntil(1, 100)).toEqual(s(9));
    expect(h.newestUntil(1, 8)).toBeNull();
    expect(h.newestUntil(2, 100)).toEqual(s(3));
    expect(h.newestUntil(3, 100)).toBeNull();
  });

  test('the newest is kept even with a count bound of 0', () => {
    const h = new SampleHistory(1e12, 0);
    h.add(1, s(5));
    h.add(1, s(7));
    expect(h.newestUntil(1, 10)).toEqual(s(7));
    expect(h.newestUntil(1, 6)).toBeNull();
  });

  test('ties: the later added wins', () => {
    const h = new SampleHistory();
    h.add(1, s(10, false));
    h.add(1, s(10, true));
    expect(h.newestUntil(1, 10)!.busy).toBe(true);
  });

  test('retain forgets the workers not named', () => {
    const h = new SampleHistory();
    for (const id of [1, 2, 3]) h.add(id, s(10));
    h.retain(new Set([2]));
    expect([1, 2, 3].map((id) => h.newestUntil(id, 10) !== null)).toEqual([false, true, false]);
  });
});

describe('ThrottledLog', () => {
  const logger = () => {
    const out: [string, string, unknown][] = [];
    const l = { info: (m: string, f: unknown) => out.push(['info', m, f]), warn: (m: string, f: unknown) => out.push(['warn', m, f]) } as unknown as Logger;
    return { out, l };
  };
  let now = 1_000_000;
  beforeEach(() => {
    now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
  });
  afterEach(() => jest.restoreAllMocks());

  test('the same message again within a minute: once; after a minute: again; with its fields and level', () => {
    const { out, l } = logger();
    const t = new ThrottledLog(l, { surface: 'x' });
    t.log('warn', 'disk on fire');
    now += 59_999;
    t.log('warn', 'disk on fire');
    expect(out).toEqual([['warn', 'disk on fire', { surface: 'x' }]]);
    now += 1;
    t.log('warn', 'disk on fire');
    expect(out).toHaveLength(2);
    now += 30_000;
    t.log('info', 'disk on fire'); // a minute from the last one logged, not the first
    expect(out).toHaveLength(2);
  });

  test('another message is logged at once, and then the first again', () => {
    const { out, l } = logger();
    const t = new ThrottledLog(l, {});
    t.log('info', 'a');
    t.log('info', 'b');
    t.log('info', 'a');
    expect(out.map((x) => x[1])).toEqual(['a', 'b', 'a']);
  });

  test('forced: always logged, and it restarts the minute', () => {
    const { out, l } = logger();
    const t = new ThrottledLog(l, {});
    t.log('info', 'up', true);
    t.log('info', 'up', true);
    expect(out).toHaveLength(2);
    now += 10_000;
    t.log('info', 'up');
    expect(out).toHaveLength(2);
  });
});

describe('quoteName', () => {
  test('quoted and escaped', () => {
    expect(quoteName('porep-c2')).toBe('"porep-c2"');
    expect(quoteName('a"b\n')).toBe('"a\\"b\\n"');
  });
  test('cut at 64 characters with an ellipsis; 64 kept whole', () => {
    const x64 = 'x'.repeat(64);
    expect(quoteName(x64)).toBe(`"${x64}"`);
    expect(quoteName(x64 + 'yz')).toBe(`"${x64}…"`);
  });
});

test('hrNowNs: nanoseconds on the process’ hrtime scale', () => {
  const a = Number(process.hrtime.bigint());
  const t = hrNowNs();
  const b = Number(process.hrtime.bigint());
  expect(t).toBeGreaterThanOrEqual(a);
  expect(t).toBeLessThanOrEqual(b);
});
