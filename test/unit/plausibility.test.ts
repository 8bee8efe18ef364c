/**
 * src/engine/sources/plausibility.ts, from its header rules (issue 12 cases 4 and 5, issue 20):
 *  - uptimeVerdict / IdentityGuard: a restart is believed only when the new process can have
 *    started since the previous answer (new uptime <= elapsed * 1.01 + 5 s); an uptime that
 *    went back further, or ran ahead faster than the wall clock, is another daemon (conflict);
 *    the same new identity three answers in a row is taken as a restart;
 *  - maxProofsIn: one proof per 10 ms per GPU worker, plus 10 s of grace;
 *  - maxDurationMs: uptime plus 1 s of slack;
 *  - HighWater: counters by high-water mark (a value below the mark adds nothing and is
 *    reported; a key that disappears keeps its mark; a restart resets the marks to 0);
 *  - StickyGpuNames: the first identity per GPU ordinal wins until reset();
 *  - capForServing: unknown fields capped (1 KiB each, 16 KiB together), free-form sections
 *    (allocations, buffers) at most 64 KiB each; what is dropped is named.
 */
import { BOUNDS, capForServing, HighWater, IdentityGuard, maxDurationMs, maxProofsIn, RESTART_SLACK_S, StickyGpuNames, uptimeVerdict } from '../../src/engine/sources/plausibility';
import type { CuzkStatus } from '../../src/engine/sources/status-schema';

const S = 1e9; // ns

describe('uptimeVerdict', () => {
  test('no previous answer: the same daemon', () => {
    expect(uptimeVerdict(-1, 5, 0)).toBe('same');
    expect(uptimeVerdict(-1, 5, 0, true)).toBe('same');
  });
  test('uptime going forward at most as fast as the wall clock (+1 % and 5 s): the same daemon', () => {
    expect(uptimeVerdict(100, 100, 0)).toBe('same');
    expect(uptimeVerdict(100, 110, 10)).toBe('same');
    // allowed = 100 * 1.01 + 5 = 106: a step of exactly that is the same daemon, past it not
    expect(uptimeVerdict(1000, 1106, 100)).toBe('same');
    expect(uptimeVerdict(1000, 1106.5, 100)).toBe('conflict');
    expect(uptimeVerdict(1000, 1000 + RESTART_SLACK_S, 0)).toBe('same');
    expect(uptimeVerdict(1000, 1000 + RESTART_SLACK_S + 0.1, 0)).toBe('conflict');
  });
  test('uptime back: a restart if the new process can have started since, otherwise another daemon', () => {
    expect(uptimeVerdict(1000, 50, 100)).toBe('restart'); // 50 <= 106
    expect(uptimeVerdict(1000, 106, 100)).toBe('restart');
    expect(uptimeVerdict(1000, 107, 100)).toBe('conflict');
    expect(uptimeVerdict(1000, 999, 0)).toBe('conflict');
    expect(uptimeVerdict(1000, 5, 0)).toBe('restart');
  });
  test('counters back with uptime forward: judged like a restart', () => {
    expect(uptimeVerdict(10, 12, 10, true)).toBe('restart'); // 12 <= 15.1
    expect(uptimeVerdict(100, 120, 10, true)).toBe('conflict'); // 120 > 15.1
  });
});

describe('IdentityGuard', () => {
  test('the first answer is "first"; then same / restart / conflict as uptimeVerdict over the elapsed hrtime', () => {
    const g = new IdentityGuard();
    expect(g.lastUptime).toBe(-1);
    expect(g.check(100, 0)).toBe('first');
    expect(g.lastUptime).toBe(100);
    expect(g.check(110, 10 * S)).toBe('same');
    expect(g.check(3, 20 * S)).toBe('restart');
    expect(g.lastUptime).toBe(3);
    expect(g.check(500, 21 * S)).toBe('conflict');
    expect(g.lastUptime).toBe(3); // a conflict is not accepted
    expect(g.check(4, 22 * S)).toBe('same');
    expect(g.check(4, 22 * S, true)).toBe('restart');
  });
  test('an hrtime that went back counts as no time elapsed', () => {
    const g = new IdentityGuard();
    g.check(1000, 100 * S);
    // 50 s back in hrtime: elapsed 0, so an uptime 50 s lower is another daemon, not a restart
    expect(g.check(60, 50 * S)).toBe('conflict');
    expect(g.check(1006, 50 * S)).toBe('conflict'); // forward 6 s in 0 s
  });
  test('the same new identity three answers in a row (each following the one before) is a restart; two alternating daemons never are', () => {
    const g = new IdentityGuard();
    g.check(10_000, 0);
    // another daemon, uptime 500, answering every 10 s
    expect(g.check(500, 10 * S)).toBe('conflict');
    expect(g.check(510, 20 * S)).toBe('conflict');
    expect(g.check(520, 30 * S)).toBe('restart');
    expect(g.lastUptime).toBe(520);
    expect(g.check(530, 40 * S)).toBe('same');

    const h = new IdentityGuard();
    h.check(10_000, 0);
    let t = 0;
    for (let i = 0; i < 10; i++) {
      t += 10;
      expect(h.check(500 + t, t * S)).toBe('conflict'); // B
      t += 10;
      expect(h.check(10_000 + t, t * S)).toBe('same'); // A again: B's run starts over
    }
  });
  test('a run that does not follow (jumps) starts over at one', () => {
    const g = new IdentityGuard();
    g.check(10_000, 0);
    expect(g.check(500, 10 * S)).toBe('conflict');
    expect(g.check(5000, 20 * S)).toBe('conflict'); // does not follow 500
    expect(g.check(5010, 30 * S)).toBe('conflict'); // two in a row
    expect(g.check(5020, 40 * S)).toBe('restart'); // three
  });
  test('a run only follows by the wall clock between its own answers', () => {
    const g = new IdentityGuard();
    g.check(10_000, 0);
    expect(g.check(500, 10 * S)).toBe('conflict');
    // 200 s later in uptime but only 10 s of hrtime: does not follow
    expect(g.check(700, 20 * S)).toBe('conflict');
    expect(g.check(710, 30 * S)).toBe('conflict');
    expect(g.check(720, 40 * S)).toBe('restart');
    // an hrtime going back between the run's answers counts as 0 s: 6 s ahead does not follow
    const h = new IdentityGuard();
    h.check(10_000, 100 * S);
    expect(h.check(500, 110 * S)).toBe('conflict');
    expect(h.check(506, 105 * S)).toBe('conflict');
    expect(h.check(507, 106 * S)).toBe('conflict');
    expect(h.check(508, 107 * S)).toBe('restart');
  });
  test('after a restart taken from a run, the run is over: a new conflict needs three again', () => {
    const g = new IdentityGuard();
    g.check(10_000, 0);
    g.check(500, 10 * S);
    g.check(510, 20 * S);
    expect(g.check(520, 30 * S)).toBe('restart');
    expect(g.check(20_000, 40 * S)).toBe('conflict');
    expect(g.check(20_010, 50 * S)).toBe('conflict');
    expect(g.check(20_020, 60 * S)).toBe('restart');
  });
});

test('maxProofsIn: 100 a second per GPU worker (at least one), with 10 s of grace', () => {
  expect(maxProofsIn(0, 0)).toBe(1000);
  expect(maxProofsIn(0, 1)).toBe(1000);
  expect(maxProofsIn(5, 4)).toBe(6000);
  expect(maxProofsIn(90, 2)).toBe(20_000);
});

test('maxDurationMs: the uptime in ms plus 1 s', () => {
  expect(maxDurationMs(0)).toBe(1000);
  expect(maxDurationMs(2.5)).toBe(3500);
});

describe('HighWater', () => {
  test('the first look is a baseline: nothing added; then what grew is added, once', () => {
    const h = new HighWater();
    expect(h.update([['a', 5], ['b', 0]], false)).toEqual({ add: new Map(), wentDown: [] });
    expect(h.size).toBe(2);
    expect(h.has('a')).toBe(true);
    expect(h.has('c')).toBe(false);
    const r = h.update([['a', 8], ['b', 0]], true);
    expect([...r.add]).toEqual([['a', 3]]);
    expect(r.wentDown).toEqual([]);
    expect([...h.update([['a', 8]], true).add]).toEqual([]);
  });
  test('a new key after the baseline is added whole (a zero adds nothing)', () => {
    const h = new HighWater();
    h.update([['a', 1]], false);
    expect([...h.update([['c', 4], ['d', 0]], true).add]).toEqual([['c', 4]]);
    expect(h.size).toBe(3);
  });
  test('a value below the mark adds nothing, is reported, and the mark stays: oscillation is never re-added', () => {
    const h = new HighWater();
    h.update([['a', 10]], false);
    const down = h.update([['a', 7]], true);
    expect([...down.add]).toEqual([]);
    expect(down.wentDown).toEqual(['a']);
    expect([...h.update([['a', 10]], true).add]).toEqual([]);
    expect([...h.update([['a', 12]], true).add]).toEqual([['a', 2]]);
  });
  test('a key that disappears keeps its mark', () => {
    const h = new HighWater();
    h.update([['a', 10], ['b', 1]], false);
    h.update([['b', 2]], true);
    expect([...h.update([['a', 10], ['b', 2]], true).add]).toEqual([]);
  });
  test('reset (a daemon restart): every mark back to 0, so the new process counts from zero', () => {
    const h = new HighWater();
    h.update([['a', 10]], false);
    h.reset();
    expect(h.size).toBe(1);
    const r = h.update([['a', 3]], true);
    expect([...r.add]).toEqual([['a', 3]]);
    expect(r.wentDown).toEqual([]);
  });
  test('at most maxKeys keys: new keys beyond it are ignored, known ones still counted', () => {
    const h = new HighWater(2);
    h.update([['a', 1], ['b', 1], ['c', 1]], false);
    expect(h.size).toBe(2);
    expect(h.has('c')).toBe(false);
    const r = h.update([['a', 2], ['c', 5]], true);
    expect([...r.add]).toEqual([['a', 1]]);
    expect(h.has('c')).toBe(false);
  });
  test('pending: what update(cur, true) would add, without changing anything', () => {
    const h = new HighWater(3);
    h.update([['a', 10], ['b', 5]], false);
    const cur: [string, number][] = [['a', 12], ['b', 4], ['c', 7], ['d', 100]];
    // a +2, b went down (0), c new (7), d over the key limit (3 keys: room for one)
    expect(h.pending(cur)).toBe(9);
    expect(h.pending(cur)).toBe(9);
    expect(h.size).toBe(2);
    let added = 0;
    for (const n of h.update(cur, true).add.values()) added += n;
    expect(added).toBe(9);
    expect(new HighWater(0).pending([['a', 5]])).toBe(0);
    expect(new HighWater().pending([['a', 5], ['a', 5]])).toBe(10);
  });
});

describe('StickyGpuNames', () => {
  test('the first identity per ordinal wins; a change (name, uuid or PCI id) is reported and ignored', () => {
    const g = new StickyGpuNames();
    const first = { name: 'RTX 4090', uuid: 'GPU-1', pciBusId: '0000:01:00.0' };
    expect(g.resolve(0, first)).toEqual({ identity: first, changed: false });
    expect(g.resolve(0, { ...first })).toEqual({ identity: first, changed: false });
    for (const other of [{ ...first, name: 'H100' }, { ...first, uuid: 'GPU-2' }, { ...first, pciBusId: '0000:02:00.0' }, { name: 'RTX 4090', pciBusId: '0000:01:00.0' }, { name: 'RTX 4090', uuid: 'GPU-1' }]) {
      const r = g.resolve(0, other);
      expect(r.identity).toBe(first);
      expect(r.changed).toBe(true);
    }
    // absent and null are the same "unknown"
    const h = new StickyGpuNames();
    h.resolve(1, { name: 'x' });
    expect(h.resolve(1, { name: 'x', uuid: undefined, pciBusId: undefined }).changed).toBe(false);
    expect(h.resolve(1, { name: 'x', uuid: null as unknown as string }).changed).toBe(false);
    expect(h.resolve(1, { name: 'x', uuid: '' }).changed).toBe(true);
  });
  test('ordinals are independent; retain forgets GPUs no longer reported; reset forgets all', () => {
    const g = new StickyGpuNames();
    g.resolve(0, { name: 'a' });
    g.resolve(1, { name: 'b' });
    expect(g.resolve(1, { name: 'b' }).changed).toBe(false);
    g.retain([1]);
    expect(g.resolve(0, { name: 'c' })).toEqual({ identity: { name: 'c' }, changed: false });
    expect(g.resolve(1, { name: 'z' }).changed).toBe(true);
    g.reset();
    expect(g.resolve(1, { name: 'z' })).toEqual({ identity: { name: 'z' }, changed: false });
  });
});

describe('capForServing (beyond test/unit/cap-for-serving.test.ts)', () => {
  const base = (extra: Record<string, unknown> = {}) =>
    ({
      uptime_secs: 1,
      pipelines: [{ job_id: 'a', proof_kind: 'k', started_secs_ago: 0, total_partitions: 1, partitions_done: 0, partitions: [{ index: 0, state: 'gpu', synth_ms: 1, gpu_ms: 1 }] }],
      gpu_workers: [{ worker_id: 0, gpu_ordinal: 0, state: 'idle', current_job: null, current_partition: null, busy_secs: null }],
      ...extra,
    }) as unknown as CuzkStatus;
  const bytes = (v: unknown) => JSON.stringify(v).length;

  test('an unknown field of exactly 1 KiB of JSON is kept; one byte more is dropped, named with its size', () => {
    const at = 'x'.repeat(BOUNDS.unknownFieldBytes - 2);
    expect(bytes(at)).toBe(BOUNDS.unknownFieldBytes);
    const s = base({ extra: at });
    const r = capForServing(s);
    expect(r.dropped).toEqual([]);
    expect(r.body).toBe(s);
    const over = capForServing(base({ extra: at + 'y' }));
    expect(over.dropped).toEqual([`unknown field extra (${BOUNDS.unknownFieldBytes + 1} bytes)`]);
    expect('extra' in over.body).toBe(false);
    expect(over.body.pipelines).toBeDefined();
  });
  test('the unknown budget: fields fit while their sum is at most 16 KiB; the first over it is dropped, later small ones still fit', () => {
    const field = 'x'.repeat(1022); // 1024 bytes of JSON
    const fields: Record<string, unknown> = {};
    for (let i = 0; i < 16; i++) fields[`f${i}`] = field; // exactly 16 KiB
    fields.g = 'yy'; // 4 bytes: over the budget
    const r = capForServing(base(fields));
    expect(r.dropped).toEqual(['unknown field g (4 bytes)']);
    expect(Object.keys(r.body).filter((k) => k.startsWith('f'))).toHaveLength(16);
    const s = base({ ...Object.fromEntries(Object.entries(fields).slice(0, 15)), big: 'z'.repeat(1100), g: 'yy' });
    const r2 = capForServing(s);
    expect(r2.dropped).toEqual(['unknown field big (1102 bytes)']);
    expect((r2.body as Record<string, unknown>).g).toBe('yy');
  });
  test('an unknown field that cannot be serialised is dropped as "unserialisable"; undefined costs nothing', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const r = capForServing(base({ cyc: cyclic, big: BigInt(1), u: undefined }));
    expect(r.dropped).toEqual(['unknown field cyc (unserialisable)', 'unknown field big (unserialisable)']);
    expect(Object.keys(r.body)).toEqual(['uptime_secs', 'pipelines', 'gpu_workers', 'u']);
  });
  test('a long unknown key is cut to 64 characters in the message', () => {
    const key = 'k'.repeat(70);
    const r = capForServing(base({ [key]: 'x'.repeat(2000) }));
    expect(r.dropped).toEqual([`unknown field ${'k'.repeat(64)}… (2002 bytes)`]);
    const key64 = 'q'.repeat(64);
    expect(capForServing(base({ [key64]: 'x'.repeat(2000) })).dropped).toEqual([`unknown field ${key64} (2002 bytes)`]);
  });
  test('sections: allocations and buffers each up to 64 KiB; over it dropped, named; an unserialisable one too', () => {
    const at = { srs: ['y'.repeat(BOUNDS.sectionBytes - 21)], pce: [] };
    expect(bytes(at)).toBe(BOUNDS.sectionBytes);
    expect(capForServing(base({ allocations: at })).dropped).toEqual([]);
    const over = { srs: ['y'.repeat(BOUNDS.sectionBytes - 20)], pce: [] };
    expect(capForServing(base({ allocations: over })).dropped).toEqual([`allocations (${BOUNDS.sectionBytes + 1} bytes, over ${BOUNDS.sectionBytes})`]);
    const bufs: Record<string, unknown> = { x: 1n };
    const r = capForServing(base({ buffers: bufs }));
    expect(r.dropped).toEqual([`buffers (unserialisable, over ${BOUNDS.sectionBytes})`]);
    expect('buffers' in r.body).toBe(false);
    // known sections are not charged to the unknown budget
    const big = { srs: ['y'.repeat(60_000)], pce: [] };
    const fields = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`f${i}`, 'x'.repeat(1022)]));
    expect(capForServing(base({ allocations: big, ...fields })).dropped).toEqual([]);
  });
  test('known fields of any size are re-served as they are (only unknown ones and the sections are capped)', () => {
    const s = base({ backend: 'b'.repeat(5000) });
    (s.pipelines[0] as unknown as Record<string, unknown>).job_id = 'j'.repeat(5000);
    const r = capForServing(s);
    expect(r.dropped).toEqual([]);
    expect(r.body).toBe(s);
  });
  test('unknown fields of pipelines, workers and gpus are named by their path; known nested names are not sections there', () => {
    const s = base({ gpus: [{ ordinal: 0, name: 'g' }, { ordinal: 1, name: 'h', blob: 'x'.repeat(2000), buffers: 'b'.repeat(2000) }] });
    (s.pipelines[0] as unknown as Record<string, unknown>).blob = 'x'.repeat(2000);
    (s.pipelines[0] as unknown as Record<string, unknown>).allocations = 'a'.repeat(2000);
    (s.gpu_workers[0] as unknown as Record<string, unknown>).blob = 'x'.repeat(2000);
    const r = capForServing(s);
    expect(r.dropped).toEqual([
      'unknown field pipelines[0].blob (2002 bytes)',
      'unknown field pipelines[0].allocations (2002 bytes)',
      'unknown field gpu_workers[0].blob (2002 bytes)',
      'unknown field gpus[1].blob (2002 bytes)',
      'unknown field gpus[1].buffers (2002 bytes)',
    ]);
    const b = r.body as Record<string, any>;
    expect(b.gpus[0]).toBe((s as any).gpus[0]);
    expect(b.gpus[1]).toEqual({ ordinal: 1, name: 'h' });
    expect(Object.keys(b.pipelines[0])).toEqual(['job_id', 'proof_kind', 'started_secs_ago', 'total_partitions', 'partitions_done', 'partitions']);
    expect(b.pipelines[0].partitions).toBe(s.pipelines[0].partitions);
    expect(Object.keys(b)).toEqual(['uptime_secs', 'pipelines', 'gpu_workers', 'gpus']);
  });
  test('the copy keeps every key before the first dropped one, in order, and the known ones after it', () => {
    const s = { a1: 1, uptime_secs: 1, a2: 2, junk: 'x'.repeat(2000), pipelines: [], a3: 3, gpu_workers: [] } as unknown as CuzkStatus;
    const r = capForServing(s);
    expect(r.body).toEqual({ a1: 1, uptime_secs: 1, a2: 2, pipelines: [], a3: 3, gpu_workers: [] });
    expect(Object.keys(r.body)).toEqual(['a1', 'uptime_secs', 'a2', 'pipelines', 'a3', 'gpu_workers']);
  });
  test('entries that are not objects pass through; a copied array keeps every entry before and after the changed one', () => {
    const p = { index: 0, state: 'gpu', synth_ms: 1, gpu_ms: 1 };
    const s = base();
    const pipes = s.pipelines as unknown as unknown[];
    pipes.unshift(7, null);
    pipes.push({ job_id: 'b', partitions: [p, { ...p, index: 1, blob: 'x'.repeat(2000) }, 'str', { ...p, index: 3 }] });
    const r = capForServing(s);
    expect(r.dropped).toEqual(['unknown field pipelines[3].partitions[1].blob (2002 bytes)']);
    const out = (r.body as any).pipelines as unknown[];
    expect(out.slice(0, 3)).toEqual([7, null, pipes[2]]);
    expect(out[2]).toBe(pipes[2]);
    const parts = (out[3] as any).partitions;
    expect(parts).toHaveLength(4);
    expect(parts[0]).toBe(p);
    expect(parts[1]).toEqual({ ...p, index: 1 });
    expect(parts[2]).toBe('str');
    expect(parts[3]).toEqual({ ...p, index: 3 });
    // a non-array pipelines / partitions value is re-served as it is
    const odd = { uptime_secs: 1, pipelines: 'x', gpu_workers: [{ partitions: 5 }], gpus: {} } as unknown as CuzkStatus;
    expect(capForServing(odd).body).toBe(odd);
    const odd2 = base();
    (odd2.pipelines[0] as any).partitions = 'not a list';
    expect(capForServing(odd2).body).toBe(odd2);
  });
  test('an unknown partition key after keys seen before is still caught; a known key order seen before passes', () => {
    const p = (extra: Record<string, unknown> = {}) => ({ index: 0, state: 'gpu', synth_ms: 1, gpu_ms: 1, ...extra });
    const withParts = (...ps: unknown[]) => {
      const s = base();
      (s.pipelines[0] as any).partitions = ps;
      return s;
    };
    // remember the order index,state,synth_ms,gpu_ms,worker_id
    capForServing(withParts(p({ worker_id: 1 })));
    // the same keys: kept as it is
    const same = withParts(p({ worker_id: 2 }));
    expect(capForServing(same).body).toBe(same);
    // a prefix of them: fine
    const fewer = withParts({ index: 0, state: 'gpu' });
    expect(capForServing(fewer).body).toBe(fewer);
    // the remembered order, then an unknown big key
    const r = capForServing(withParts(p({ worker_id: 2, zz: 'x'.repeat(2000) })));
    expect(r.dropped).toEqual(['unknown field pipelines[0].partitions[0].zz (2002 bytes)']);
    // an unknown key in the middle of an otherwise remembered order
    const r2 = capForServing(withParts({ index: 0, state: 'gpu', zz: 'x'.repeat(2000), synth_ms: 1 }));
    expect(r2.dropped).toEqual(['unknown field pipelines[0].partitions[0].zz (2002 bytes)']);
    // small unknown partition fields are kept (within the caps)
    const small = withParts(p({ note: 'n' }));
    expect(capForServing(small).body).toBe(small);
    // workers: the same fast path
    const w = (extra: Record<string, unknown> = {}) => ({ worker_id: 0, gpu_ordinal: 0, state: 'idle', current_job: null, current_partition: null, busy_secs: null, ...extra });
    const ws = base({ gpu_workers: [w(), w({ worker_id: 1 }), w({ worker_id: 2, zz: 'x'.repeat(2000) })] });
    expect(capForServing(ws).dropped).toEqual(['unknown field gpu_workers[2].zz (2002 bytes)']);
    const ws2 = base({ gpu_workers: [{ worker_id: 0, zz: 'x'.repeat(2000) }] });
    expect(capForServing(ws2).dropped).toEqual(['unknown field gpu_workers[0].zz (2002 bytes)']);
  });
});

// issue 23: the survivors of the first mutation run.
describe('edges (issue 23)', () => {
  test('a previous uptime of 0 is an uptime: a jump from it is judged like any other', () => {
    expect(uptimeVerdict(0, 100, 0)).toBe('conflict');
    expect(uptimeVerdict(0, 3, 0)).toBe('same');
    const g = new IdentityGuard();
    expect(g.check(0, 0)).toBe('first');
    expect(g.check(0.5, 1 * S)).toBe('same');
    expect(g.check(500, 2 * S)).toBe('conflict');
  });
  test('entries of the lists that are not objects (a long string, an array, null) are re-served as they are', () => {
    const long = 'x'.repeat(20_000);
    const s = {
      uptime_secs: 1,
      pipelines: [long, [long], null, { job_id: 'a', partitions: [long, [long], null] }],
      gpu_workers: [long, [long]],
      gpus: [[long], long],
    } as unknown as CuzkStatus;
    const r = capForServing(s);
    expect(r.dropped).toEqual([]);
    expect(r.body).toBe(s);
  });
  test('a copy\'s fields are plain data fields, as JSON.parse makes them (writable, enumerable, configurable)', () => {
    const s = { uptime_secs: 1, pipelines: [], gpu_workers: [], a: 1, junk: 'x'.repeat(2000), b: 2 } as unknown as CuzkStatus;
    const body = capForServing(s).body;
    for (const k of ['uptime_secs', 'pipelines', 'gpu_workers', 'a', 'b']) {
      expect([k, Object.getOwnPropertyDescriptor(body, k)]).toEqual([k, { value: (s as unknown as Record<string, unknown>)[k], writable: true, enumerable: true, configurable: true }]);
    }
  });
});
