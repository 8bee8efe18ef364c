/**
 * src/engine/sources/fleet/fleet.ts in-process, from its header: apply() moves the running set
 * to a new list (targets gone stopped, new ones started, a changed surface restarted with a
 * new source, labels alone changed in place), every target's periodic look on the fleet's
 * shared timers (a throwing look counted as reason "timer" and logged, the others still
 * run), a target's exporter made with the fleet's logger and shut down with the target,
 * a timeline command's exits counted on its target and its TIMELINE surface down meanwhile.
 * No daemon: the targets point at a closed loopback port (their polls fail, which is fine)
 * or at a command; nothing here waits on a poll.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Fields, Logger } from '../../src/util/logger';
import { Fleet, FleetTarget, MISMATCH_LOOK_MS, TIMELINE_COMMAND_ERROR, TIMER_ERROR, withFields, type FleetOptions, type TargetExporter } from '../../src/engine/sources/fleet/fleet';
import type { TargetSpec } from '../../src/engine/sources/fleet/targets-file';
import type { MergedAttachSource } from '../../src/engine/sources/attach/merge';

type Line = [string, string, Fields | undefined];
function recorder(): { log: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const at = (lvl: string) => (m: string, f?: Fields) => void lines.push([lvl, m, f]);
  return { log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

interface Exp extends TargetExporter {
  source: MergedAttachSource;
  logger: Logger;
  shutdowns: number;
}

async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const CLOSED = 'http://127.0.0.1:9/status';
const spec = (name: string, extra: Partial<TargetSpec> = {}): TargetSpec => ({ name, labels: {}, statusUrl: CLOSED, ...extra });

let fleets: Fleet<Exp>[] = [];
afterEach(async () => {
  await Promise.all(fleets.map((f) => f.stop()));
  fleets = [];
});

function makeFleet(extra: Partial<FleetOptions<Exp>> = {}) {
  const rec = recorder();
  const made: Exp[] = [];
  const f = new Fleet<Exp>({
    pollIntervalMs: 3_600_000,
    grpcStatusIntervalMs: 3_600_000,
    timeoutMs: 200,
    maxBodyBytes: 1 << 20,
    logger: rec.log,
    exporterFor: (source, logger) => {
      const e: Exp = {
        source,
        logger,
        shutdowns: 0,
        shutdown: async () => {
          e.shutdowns++;
        },
      };
      made.push(e);
      return e;
    },
    ...extra,
  });
  fleets.push(f);
  return { f, rec, made };
}
const timersOf = (f: Fleet<Exp>) => (f as unknown as { timers: { periods: number[]; groups: Map<number, { fns: Set<unknown> }>; every: (p: number, fn: () => void) => () => void } }).timers;

test('withFields adds its fields to every level; a line\'s own fields win', () => {
  const rec = recorder();
  const l = withFields(rec.log, { target: 't', a: 1 });
  l.debug('d');
  l.info('i', { x: 2 });
  l.warn('w', { a: 3 });
  l.error('e');
  expect(rec.lines).toEqual([
    ['debug', 'd', { target: 't', a: 1 }],
    ['info', 'i', { target: 't', a: 1, x: 2 }],
    ['warn', 'w', { target: 't', a: 3 }],
    ['error', 'e', { target: 't', a: 1 }],
  ]);
});

test('apply: new targets added and started, listed sorted by name; each exporter made with its source and the fleet\'s logger', async () => {
  const { f, rec, made } = makeFleet();
  expect(f.size).toBe(0);
  expect(f.list()).toEqual([]);
  const r = await f.apply([spec('b'), spec('a', { labels: { rack: 'r1' } }), spec('c-1')]);
  expect(r).toEqual({ added: ['b', 'a', 'c-1'], removed: [], restarted: [], relabelled: [] });
  expect(f.size).toBe(3);
  expect(f.list().map((t) => t.name)).toEqual(['a', 'b', 'c-1']);
  expect(f.get('a')!.labels).toEqual({ rack: 'r1' });
  expect(f.get('a')!.spec).toEqual(spec('a', { labels: { rack: 'r1' } }));
  expect(f.get('zz')).toBeUndefined();
  expect(made).toHaveLength(3);
  for (const t of f.list()) {
    expect(t.telemetry.source).toBe(t.source);
    expect(t.telemetry.logger).toBe(rec.log);
    expect(t.command).toBeNull();
    expect(t.mismatchSeenAt).toBe(0);
  }
  // each target's look runs on the fleet's one shared 1 s timer
  expect(MISMATCH_LOOK_MS).toBe(1000);
  expect(timersOf(f).periods).toContain(MISMATCH_LOOK_MS);
  expect(timersOf(f).groups.get(MISMATCH_LOOK_MS)!.fns.size).toBe(3);
});

test('apply: gone -> removed and stopped; surfaces changed -> restarted (a new source); labels only -> relabelled in place; the same -> untouched', async () => {
  const { f, made } = makeFleet();
  await f.apply([spec('keep'), spec('gone'), spec('move'), spec('relabel', { labels: { rack: 'r1' } })]);
  const keep = f.get('keep')!;
  const gone = f.get('gone')!;
  const move = f.get('move')!;
  const relabel = f.get('relabel')!;
  const r = await f.apply([spec('relabel', { labels: { rack: 'r2' } }), spec('move', { statusUrl: 'http://127.0.0.1:10/status' }), spec('keep'), spec('new')]);
  expect(r).toEqual({ added: ['new'], removed: ['gone'], restarted: ['move'], relabelled: ['relabel'] });
  expect(f.get('gone')).toBeUndefined();
  expect(gone.telemetry.shutdowns).toBe(1);
  expect(move.telemetry.shutdowns).toBe(1);
  expect(f.get('move')).not.toBe(move);
  expect(f.get('move')!.spec.statusUrl).toBe('http://127.0.0.1:10/status');
  expect(f.get('keep')).toBe(keep);
  expect(keep.telemetry.shutdowns).toBe(0);
  expect(f.get('relabel')).toBe(relabel);
  expect(relabel.labels).toEqual({ rack: 'r2' });
  expect(relabel.telemetry.shutdowns).toBe(0);
  expect(f.list().map((t) => t.name)).toEqual(['keep', 'move', 'new', 'relabel']);
  expect(made).toHaveLength(6);
  // the stopped targets' looks are gone from the shared timer
  expect(timersOf(f).groups.get(MISMATCH_LOOK_MS)!.fns.size).toBe(4);
  // the same list again: nothing to do
  expect(await f.apply([spec('relabel', { labels: { rack: 'r2' } }), spec('move', { statusUrl: 'http://127.0.0.1:10/status' }), spec('keep'), spec('new')])).toEqual({ added: [], removed: [], restarted: [], relabelled: [] });
  // to none
  const none = await f.apply([]);
  expect(none.removed.sort()).toEqual(['keep', 'move', 'new', 'relabel']);
  expect(f.size).toBe(0);
  expect(f.list()).toEqual([]);
  expect(timersOf(f).periods).toEqual([]);
});

test('stop: every target stopped and its exporter shut down; the list empty; the shared timers gone', async () => {
  const { f, made } = makeFleet();
  await f.apply([spec('a'), spec('b')]);
  await f.stop();
  expect(made.map((e) => e.shutdowns)).toEqual([1, 1]);
  expect(f.size).toBe(0);
  expect(f.list()).toEqual([]);
  expect(timersOf(f).periods).toEqual([]);
});

test('stop with log-file and command targets: every look, sweep and poll of theirs is off the shared timers (issue 23)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fleet-stop-'));
  const { f } = makeFleet({ timelinePollMs: 50, commandBackoff: { minMs: 60_000, maxMs: 60_000 } });
  try {
    await f.apply([
      { name: 'file', labels: {}, timelineFile: path.join(dir, 'cuzk.log') },
      { name: 'cmd', labels: {}, timelineCommand: [process.execPath, '-e', 'setInterval(() => {}, 1000)'] },
      spec('status'),
    ]);
    expect(timersOf(f).periods.sort((a, b) => a - b)).toEqual(expect.arrayContaining([50, MISMATCH_LOOK_MS]));
    const cmd = f.get('cmd')!.command!;
    await until('the command running', () => cmd.running);
    await f.stop();
    expect(timersOf(f).periods).toEqual([]);
    expect(cmd.running).toBe(false);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a periodic look that throws is counted (reason "timer") and logged; the other looks still run', async () => {
  const { f, rec } = makeFleet();
  let others = 0;
  const stopBad = timersOf(f).every(5, () => {
    throw new Error('boom');
  });
  const stopGood = timersOf(f).every(5, () => others++);
  await until('two failed looks', () => f.errors.get(TIMER_ERROR) >= 2);
  stopBad();
  stopGood();
  expect(others).toBeGreaterThanOrEqual(2);
  expect(rec.lines.filter((l) => l[0] === 'error')[0]).toEqual(['error', 'a periodic look failed: boom', undefined]);
  const before = f.errors.get(TIMER_ERROR);
  const stopOdd = timersOf(f).every(5, () => {
    throw 'not an Error'; // eslint-disable-line no-throw-literal
  });
  await until('a non-Error', () => f.errors.get(TIMER_ERROR) > before);
  stopOdd();
  expect(rec.lines.some((l) => l[1] === 'a periodic look failed: not an Error')).toBe(true);
  expect(f.errors.lastMessage).toBe('not an Error');
});

test('a fleet given its own timers uses them for every target', async () => {
  const calls: Array<[number, boolean | undefined]> = [];
  let stops = 0;
  const every = (p: number, _fn: () => void, o?: { unref?: boolean }) => {
    calls.push([p, o?.unref]);
    return () => void stops++;
  };
  const { f } = makeFleet({ every });
  await f.apply([spec('a')]);
  expect(calls).toContainEqual([MISMATCH_LOOK_MS, true]);
  expect(timersOf(f).periods).toEqual([]);
  const n = calls.length;
  await f.apply([]);
  expect(stops).toBe(n);
});

describe('FleetTarget', () => {
  const opts = (rec: ReturnType<typeof recorder>, extra: Partial<FleetOptions<Exp>> = {}): FleetOptions<Exp> => ({
    pollIntervalMs: 3_600_000,
    grpcStatusIntervalMs: 3_600_000,
    timeoutMs: 200,
    maxBodyBytes: 1 << 20,
    logger: rec.log,
    exporterFor: (source, logger) => ({ source, logger, shutdowns: 0, shutdown: async () => undefined }),
    ...extra,
  });

  test('start registers its look every second (unref); stop ends it once; a look that cannot compose is counted as "status"', async () => {
    const rec = recorder();
    const looks: Array<() => void> = [];
    let stopped = 0;
    const t = new FleetTarget(spec('x'), opts(rec, { every: (p, fn, o) => (looks.push(fn), expect([p, o]).toEqual([MISMATCH_LOOK_MS, { unref: true }]), () => void stopped++) }));
    expect(t.name).toBe('x');
    t.start();
    expect(looks).toHaveLength(1);
    // a look: composes the model; no mismatch (nothing seen), nothing counted
    looks[0]();
    expect(t.mismatchSeenAt).toBe(0);
    expect(t.source.model.errors.get('status')).toBe(0);
    // composing throws: counted with its message, no mismatch noted
    const refresh = t.source.refresh.bind(t.source);
    t.source.refresh = () => {
      throw new Error('compose failed');
    };
    t.source.model.statusMismatch = () => true;
    t.look();
    expect(t.source.model.errors.get('status')).toBe(1);
    expect(t.source.model.errors.lastMessage).toBe('compose failed');
    expect(t.mismatchSeenAt).toBe(0);
    // composing works and the model contradicts itself: the time is noted
    t.source.refresh = refresh;
    const before = performance.now();
    t.look();
    expect(t.mismatchSeenAt).toBeGreaterThanOrEqual(before);
    expect(t.mismatchSeenAt).toBeLessThanOrEqual(performance.now());
    await t.stop();
    await t.stop();
    expect(stopped).toBe(1);
  });

  test('its log lines carry the target name', () => {
    const rec = recorder();
    const t = new FleetTarget(spec('named'), opts(rec, { every: () => () => undefined }));
    (t as unknown as { log: Logger }).log.info('hello');
    expect(rec.lines).toContainEqual(['info', 'hello', { target: 'named' }]);
  });

  test('a timeline command: its exits counted on the target (reason declared up front), its TIMELINE surface down meanwhile', async () => {
    const rec = recorder();
    const t = new FleetTarget(
      { name: 'cmd', labels: {}, timelineCommand: [process.execPath, '-e', 'process.stdout.write("x\\n"); process.exit(3)'] },
      opts(rec, { every: () => () => undefined, commandBackoff: { minMs: 60_000, maxMs: 60_000 }, timelinePollMs: 50 }),
    );
    expect(t.command).not.toBeNull();
    expect([...t.source.model.errors.entries()]).toContainEqual([TIMELINE_COMMAND_ERROR, 0]);
    const timelineUp = () => t.source.surfaceStates().find((s) => s.name === 'timeline')?.up;
    expect(t.source.surfaceStates().map((s) => s.name)).toEqual(['timeline']);
    t.start();
    try {
      await until('the exit counted', () => t.source.model.errors.get(TIMELINE_COMMAND_ERROR) === 1);
      expect(t.source.model.errors.lastMessage).toMatch(/^timeline command of target cmd \(.*\) exited with code 3; restarting in 60s$/);
      expect(timelineUp()).toBe(false);
    } finally {
      await t.stop();
    }
    expect(t.command!.running).toBe(false);
  });

  test('without a command: no command error reason, the log file is the TIMELINE surface', () => {
    const rec = recorder();
    const t = new FleetTarget({ name: 'f', labels: {}, timelineFile: '/nonexistent-dir-cuzk/x.log' }, opts(rec, { every: () => () => undefined }));
    expect(t.command).toBeNull();
    expect([...t.source.model.errors.entries()].map(([k]) => k)).not.toContain(TIMELINE_COMMAND_ERROR);
    expect(t.source.surfaceStates().map((s) => [s.name, s.target])).toEqual([['timeline', '/nonexistent-dir-cuzk/x.log']]);
  });

  // --- issue 23 triage: the TIMELINE options a target hands its source ---

  test('the look on the timer is the target\'s look: a mismatch seen through it is noted, a compose failure counted (issue 23)', async () => {
    const rec = recorder();
    const looks: Array<() => void> = [];
    const t = new FleetTarget(spec('y'), opts(rec, { every: (p, fn) => (p === MISMATCH_LOOK_MS && looks.push(fn), () => undefined) }));
    t.start();
    try {
      expect(looks).toHaveLength(1);
      t.source.model.statusMismatch = () => true;
      const before = performance.now();
      looks[0]();
      expect(t.mismatchSeenAt).toBeGreaterThanOrEqual(before);
      expect(t.mismatchSeenAt).toBeGreaterThan(0);
      t.source.refresh = () => {
        throw new Error('compose failed');
      };
      looks[0]();
      expect(t.source.model.errors.get('status')).toBe(1);
    } finally {
      await t.stop();
    }
  });

  test('a log file target: its TIMELINE looks on the fleet\'s timers at --cuzk.timeline-poll-interval (default 100 ms), started with the target (issue 23)', async () => {
    const rec = recorder();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fleet-tl-'));
    const log = path.join(dir, 'cuzk.log');
    fs.writeFileSync(log, '');
    const periods = (pollMs: number | undefined) => {
      const seen: number[] = [];
      const t = new FleetTarget({ name: 'f', labels: {}, timelineFile: log }, opts(rec, { every: (p) => (seen.push(p), () => undefined), ...(pollMs === undefined ? {} : { timelinePollMs: pollMs }) }));
      expect(seen).toEqual([]); // nothing before start
      t.start();
      return { t, seen };
    };
    const a = periods(37);
    const b = periods(undefined);
    try {
      expect(a.seen).toContain(37);
      expect(a.seen).not.toContain(100);
      expect(b.seen).toContain(100);
      expect(b.seen).toContain(MISMATCH_LOOK_MS);
    } finally {
      await a.t.stop();
      await b.t.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a log file target in a fleet: lines appended after its start are read (issue 23)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fleet-tl-'));
    const log = path.join(dir, 'cuzk.log');
    fs.writeFileSync(log, '');
    const { f } = makeFleet({ timelinePollMs: 20 });
    try {
      await f.apply([{ name: 'f', labels: {}, timelineFile: log }]);
      const t = f.get('f')!;
      fs.appendFileSync(log, 'TIMELINE,10,GPU_PICKUP,job-a,worker=0,partition=0\nTIMELINE,20,GPU_START,job-a,worker=0,partition=0\n');
      await until('the lines read', () => t.source.timeline!.eventsTotal >= 2);
      expect(t.source.surfaceStates()).toEqual([{ name: 'timeline', target: log, up: true, degraded: [] }]);
    } finally {
      await f.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a command target: its output is the TIMELINE surface\'s input, the surface named after the command (issue 23)', async () => {
    const rec = recorder();
    const argv = [process.execPath, '-e', 'process.stdout.write("TIMELINE,10,GPU_PICKUP,job-a,worker=0,partition=0\\nTIMELINE,20,GPU_START,job-a,worker=0,partition=0\\n"); setInterval(() => {}, 1000)'];
    const t = new FleetTarget({ name: 'cmd', labels: {}, timelineCommand: argv }, opts(rec, { every: () => () => undefined }));
    expect(t.source.surfaceStates().map((s) => [s.name, s.target])).toEqual([['timeline', `command ${argv[0]} ${argv[1]} ${argv[2]}`]]);
    t.start();
    try {
      await until('the lines read', () => t.source.timeline!.eventsTotal >= 2);
      expect(t.command!.running).toBe(true);
      expect(t.source.surfaceStates()[0].up).toBe(true);
      expect(t.source.model.errors.get(TIMELINE_COMMAND_ERROR)).toBe(0);
    } finally {
      await t.stop();
    }
  });
});
