/**
 * GuardedExporter (src/exporter/otlp-guard.ts), from its header's rules: every OTLP push
 * failure is counted in cuzk_exporter_errors_total{reason="otlp_export"} (declared at 0 up
 * front), logged as one line — the message's first line — once, then at most once a minute
 * while the message stays the same (with how often it repeated since the last line); each
 * export is bounded by the exporter's own deadline; the reader is always told SUCCESS.
 */
import type { PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { GuardedExporter } from '../../src/exporter/otlp-guard';
import type { Fields, Logger } from '../../src/util/logger';

type Result = { code: number; error?: Error };
const METRICS = {} as ResourceMetrics;

function setup(answer: (cb: (r: Result) => void) => void, opts: { deadlineMs?: number; inner?: Partial<PushMetricExporter> } = {}) {
  const lines: { msg: string; fields?: Fields }[] = [];
  const log: Logger = {
    debug: () => {},
    info: () => {},
    warn: (msg: string, fields?: Fields) => void lines.push({ msg, fields }),
    error: () => {},
  } as unknown as Logger;
  let clock = 1_000_000;
  const errors = new ErrorCounts();
  const inner = {
    export: (_m: ResourceMetrics, cb: (r: Result) => void) => answer(cb),
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
    ...opts.inner,
  } as PushMetricExporter;
  const g = new GuardedExporter(inner, errors, log, opts.deadlineMs ?? 1000, () => clock);
  const results: Result[] = [];
  const push = () => g.export(METRICS, (r) => void results.push(r));
  return { g, errors, lines, results, push, advance: (ms: number) => void (clock += ms) };
}

afterEach(() => jest.useRealTimers());

test('the reason is declared at 0 before any export', () => {
  const { errors } = setup((cb) => cb({ code: 0 }));
  expect([...errors.entries()]).toEqual([['otlp_export', 0]]);
});

test('a successful export: SUCCESS, nothing counted or logged', () => {
  const { errors, lines, results, push, g } = setup((cb) => cb({ code: 0 }));
  push();
  expect(results).toEqual([{ code: 0 }]);
  expect(errors.get('otlp_export')).toBe(0);
  expect(errors.lastMessage).toBeNull();
  expect(lines).toEqual([]);
  expect(g.failures).toBe(0);
});

test('a failed export is counted and logged once, and the reader still gets SUCCESS', () => {
  const { errors, lines, results, push, g } = setup((cb) => cb({ code: 1, error: new Error('connect ECONNREFUSED 127.0.0.1:4318') }));
  push();
  expect(results).toEqual([{ code: 0 }]);
  expect(g.failures).toBe(1);
  expect(errors.get('otlp_export')).toBe(1);
  expect(errors.lastMessage).toBe('OTLP export failed: connect ECONNREFUSED 127.0.0.1:4318');
  expect(lines).toEqual([{ msg: 'OTLP export failed', fields: { err: 'connect ECONNREFUSED 127.0.0.1:4318' } }]);
});

test('a failure without an error names its result code', () => {
  const s = setup((cb) => cb({ code: 2 }));
  s.push();
  expect(s.lines).toEqual([{ msg: 'OTLP export failed', fields: { err: 'export failed (code 2)' } }]);
  expect(s.errors.get('otlp_export')).toBe(1);
});

test('only the first line of the message, at most 500 characters, is counted and logged (never a stack)', () => {
  const long = 'x'.repeat(600);
  const s = setup((cb) => cb({ code: 1, error: new Error(`${long}\n    at Object.<anonymous> (file.js:1:1)`) }));
  s.push();
  expect(s.lines[0].fields).toEqual({ err: 'x'.repeat(500) });
  expect(s.errors.lastMessage).toBe(`OTLP export failed: ${'x'.repeat(500)}`);
  const t = setup((cb) => cb({ code: 1, error: new Error('first line\nsecond line') }));
  t.push();
  expect(t.lines[0].fields).toEqual({ err: 'first line' });
});

test('an exporter that throws: counted and logged, SUCCESS to the reader', () => {
  const s = setup(() => {
    throw new Error('boom');
  });
  s.push();
  expect(s.results).toEqual([{ code: 0 }]);
  expect(s.errors.get('otlp_export')).toBe(1);
  expect(s.lines).toEqual([{ msg: 'OTLP export failed', fields: { err: 'boom' } }]);
});

test('the same failure again within a minute is counted, not logged; the next line after a minute says how often it repeated', () => {
  const s = setup((cb) => cb({ code: 1, error: new Error('down') }));
  s.push();
  s.advance(30_000);
  s.push();
  s.advance(29_999);
  s.push(); // 59.999 s after the line: still quiet
  expect(s.lines).toHaveLength(1);
  expect(s.errors.get('otlp_export')).toBe(3);
  expect(s.g.failures).toBe(3);
  s.advance(1); // exactly 60 s after the logged line
  s.push();
  expect(s.lines).toHaveLength(2);
  expect(s.lines[1]).toEqual({ msg: 'OTLP export failed', fields: { err: 'down', repeated_since_last_line: 2 } });
  // The count restarts with each line, and the minute is counted from the new line.
  s.advance(59_999);
  s.push();
  expect(s.lines).toHaveLength(2);
  s.advance(1);
  s.push();
  expect(s.lines[2]).toEqual({ msg: 'OTLP export failed', fields: { err: 'down', repeated_since_last_line: 1 } });
  expect(s.results.every((r) => r.code === 0)).toBe(true);
  expect(s.results).toHaveLength(6);
});

test('a different message is logged at once, without a repeat count when there was none', () => {
  let msg = 'a';
  const s = setup((cb) => cb({ code: 1, error: new Error(msg) }));
  s.push();
  msg = 'b';
  s.advance(1);
  s.push();
  expect(s.lines.map((l) => l.fields)).toEqual([{ err: 'a' }, { err: 'b' }]);
  // b repeated once, then a again: logged at once, b's repeat does not carry over to a's line
  s.push();
  msg = 'a';
  s.push();
  expect(s.lines.map((l) => l.fields)).toEqual([{ err: 'a' }, { err: 'b' }, { err: 'a', repeated_since_last_line: 1 }]);
});

test('no answer within the deadline: counted as a timeout, SUCCESS to the reader; a late answer is ignored', () => {
  jest.useFakeTimers();
  let late: ((r: Result) => void) | null = null;
  const s = setup((cb) => void (late = cb), { deadlineMs: 250 });
  s.push();
  jest.advanceTimersByTime(249);
  expect(s.results).toEqual([]);
  expect(s.errors.get('otlp_export')).toBe(0);
  jest.advanceTimersByTime(1);
  expect(s.results).toEqual([{ code: 0 }]);
  expect(s.errors.get('otlp_export')).toBe(1);
  expect(s.lines).toEqual([{ msg: 'OTLP export failed', fields: { err: 'no answer within 250 ms' } }]);
  late!({ code: 1, error: new Error('late') });
  expect(s.results).toHaveLength(1);
  expect(s.errors.get('otlp_export')).toBe(1);
});

test('an answer before the deadline clears it: no timeout counted afterwards', () => {
  jest.useFakeTimers();
  const s = setup((cb) => cb({ code: 0 }), { deadlineMs: 100 });
  s.push();
  expect(jest.getTimerCount()).toBe(0);
  jest.advanceTimersByTime(1000);
  expect(s.results).toHaveLength(1);
  expect(s.errors.get('otlp_export')).toBe(0);
});

test('an exporter that answers twice: the reader is told once', () => {
  const s = setup((cb) => {
    cb({ code: 1, error: new Error('x') });
    cb({ code: 0 });
  });
  s.push();
  expect(s.results).toHaveLength(1);
  expect(s.errors.get('otlp_export')).toBe(1);
});

test('forceFlush, shutdown and the aggregation selectors are the inner exporter\'s', async () => {
  const calls: string[] = [];
  const inner = {
    forceFlush: () => (calls.push('flush'), Promise.resolve()),
    shutdown: () => (calls.push('shutdown'), Promise.resolve()),
    selectAggregationTemporality(this: { tag: string }) {
      return this.tag === 'inner' ? 7 : -1;
    },
    selectAggregation(this: { tag: string }) {
      return this.tag === 'inner' ? 'agg' : 'wrong this';
    },
    tag: 'inner',
  } as unknown as Partial<PushMetricExporter>;
  const s = setup((cb) => cb({ code: 0 }), { inner });
  await s.g.forceFlush();
  await s.g.shutdown();
  expect(calls).toEqual(['flush', 'shutdown']);
  expect((s.g.selectAggregationTemporality as unknown as () => number)()).toBe(7);
  expect((s.g.selectAggregation as unknown as () => string)()).toBe('agg');
  const bare = setup((cb) => cb({ code: 0 }));
  expect(bare.g.selectAggregationTemporality).toBeUndefined();
  expect(bare.g.selectAggregation).toBeUndefined();
});

describe('issue 23: survivors of the otlp-guard.ts Stryker run', () => {
  test('a first failure with an empty message is logged too (nothing was logged before it)', () => {
    const s = setup((cb) => cb({ code: 1, error: new Error('') }));
    s.push();
    expect(s.lines).toEqual([{ msg: 'OTLP export failed', fields: { err: '' } }]);
  });

  test('the deadline timer never keeps the process alive', () => {
    let answer: ((r: Result) => void) | null = null;
    const s = setup((cb) => void (answer = cb), { deadlineMs: 600_000 });
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    s.push();
    try {
      expect(timers()).toBe(before);
    } finally {
      answer!({ code: 0 }); // clears it
    }
    expect(s.results).toEqual([{ code: 0 }]);
  });
});
