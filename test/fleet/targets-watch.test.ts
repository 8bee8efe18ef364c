/**
 * src/engine/sources/fleet/targets-watch.ts, from its header: the targets file is re-read
 * when it changes (inode, size or times, looked at every checkEveryMs) and on SIGHUP
 * (reload()); a file that fails to load or validate keeps the last good set (one log line,
 * counted as reason "targets_file", lastReloadOk false until a good one); reloads run one
 * at a time. A stand-in fleet records what it is asked to apply; the schedule runs on
 * jest's fake timers (the file itself is real).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import type { Fields, Logger } from '../../src/util/logger';
import type { ApplyResult, Fleet } from '../../src/engine/sources/fleet/fleet';
import type { TargetSpec } from '../../src/engine/sources/fleet/targets-file';
import { TARGETS_FILE_ERROR, TargetsFileWatch } from '../../src/engine/sources/fleet/targets-watch';

type Line = [string, string, Fields | undefined];
function recorder(): { log: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const at = (lvl: string) => (m: string, f?: Fields) => void lines.push([lvl, m, f]);
  return { log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

class StandIn {
  errors = new ErrorCounts();
  size = 0;
  applied: string[][] = [];
  result: ApplyResult = { added: [], removed: [], restarted: [], relabelled: [] };
  fail: Error | null = null;
  /** While set, apply waits for it. */
  gate: Promise<void> | null = null;
  active = 0;
  maxActive = 0;
  async apply(specs: TargetSpec[]): Promise<ApplyResult> {
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      if (this.gate) await this.gate;
      if (this.fail) throw this.fail;
      this.applied.push(specs.map((s) => s.name));
      this.size = specs.length;
      return this.result;
    } finally {
      this.active--;
    }
  }
}

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-watch-'));
  file = path.join(dir, 'targets.yml');
});
afterEach(() => {
  jest.useRealTimers();
  fs.rmSync(dir, { recursive: true, force: true });
});

const good = (...names: string[]) => `targets:\n${names.map((n) => `  - {name: ${n}, grpc_address: "127.0.0.1:9820"}\n`).join('')}${names.length ? '' : '  []\n'}`.replace('targets:\n  []', 'targets: []');
const write = (text: string) => {
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file); // a new inode: seen whatever the clock's resolution
};
function watch(checkEveryMs = 100) {
  const fleet = new StandIn();
  const rec = recorder();
  const w = new TargetsFileWatch(file, fleet as unknown as Fleet, rec.log, checkEveryMs);
  return { fleet, rec, w };
}

test('the error reason is declared at construction; before any reload the state is good', () => {
  write(good('a'));
  const before = Date.now() / 1000;
  const { fleet, w } = watch();
  expect([...fleet.errors.entries()]).toEqual([[TARGETS_FILE_ERROR, 0]]);
  expect(TARGETS_FILE_ERROR).toBe('targets_file');
  expect(w.lastReloadOk).toBe(true);
  expect(w.lastError).toBeNull();
  expect(w.reloads).toBe(0);
  expect(w.lastSuccessSecs).toBeGreaterThanOrEqual(before - 0.01);
  expect(w.lastSuccessSecs).toBeLessThanOrEqual(Date.now() / 1000 + 0.01);
  expect(w.file).toBe(file);
});

test('a good reload applies the file, counts it, logs what changed (empty lists left out)', async () => {
  write(good('a', 'b'));
  const { fleet, rec, w } = watch();
  fleet.result = { added: ['a', 'b'], removed: [], restarted: ['c'], relabelled: ['d', 'e'] };
  const t0 = Date.now() / 1000;
  expect(await w.reload('SIGHUP')).toBe(true);
  expect(fleet.applied).toEqual([['a', 'b']]);
  expect(w.reloads).toBe(1);
  expect(w.lastReloadOk).toBe(true);
  expect(w.lastSuccessSecs).toBeGreaterThanOrEqual(t0 - 0.01);
  expect(rec.lines).toEqual([['info', 'targets file reloaded', { file, why: 'SIGHUP', targets: 2, added: 'a,b', removed: undefined, restarted: 'c', relabelled: 'd,e' }]]);
  fleet.result = { added: [], removed: ['x', 'y'], restarted: ['p', 'q'], relabelled: [] };
  expect(await w.reload('changed')).toBe(true);
  expect(rec.lines[1]).toEqual(['info', 'targets file reloaded', { file, why: 'changed', targets: 2, added: undefined, removed: 'x,y', restarted: 'p,q', relabelled: undefined }]);
  expect(w.reloads).toBe(2);
});

test('a bad file keeps the last good set: refused, counted, logged once, lastReloadOk false until a good one', async () => {
  write(good('a'));
  const { fleet, rec, w } = watch();
  await w.reload('SIGHUP');
  write('targets:\n  - name: b\n    grpc_adress: 1.2.3.4:9820\n');
  const okSecs = w.lastSuccessSecs;
  expect(await w.reload('changed')).toBe(false);
  expect(fleet.applied).toEqual([['a']]);
  expect(w.lastReloadOk).toBe(false);
  expect(w.lastError).toMatch(/^targets file .*targets\.yml: target "b": unknown key "grpc_adress".*; keeping the previous 1 target\(s\)$/);
  expect(w.lastSuccessSecs).toBe(okSecs);
  expect(w.reloads).toBe(1);
  expect(fleet.errors.get(TARGETS_FILE_ERROR)).toBe(1);
  expect(fleet.errors.lastMessage).toBe(w.lastError);
  expect(rec.lines.slice(1)).toEqual([['error', 'targets file reload failed', { why: 'changed', err: w.lastError }]]);
  // a missing file too
  fs.rmSync(file);
  expect(await w.reload('SIGHUP')).toBe(false);
  expect(w.lastError).toMatch(/cannot read \(ENOENT\); keeping the previous 1 target\(s\)$/);
  expect(fleet.errors.get(TARGETS_FILE_ERROR)).toBe(2);
  // fixed
  write(good('a', 'c'));
  expect(await w.reload('SIGHUP')).toBe(true);
  expect(w.lastReloadOk).toBe(true);
  expect(w.lastError).toBeNull();
  expect(w.reloads).toBe(2);
});

test('the fleet refusing the set is a failed reload too', async () => {
  write(good('a'));
  const { fleet, w } = watch();
  fleet.fail = new Error('apply broke');
  expect(await w.reload('SIGHUP')).toBe(false);
  expect(w.lastError).toBe('apply broke; keeping the previous 0 target(s)');
  expect(fleet.errors.get(TARGETS_FILE_ERROR)).toBe(1);
});

test('reloads run one at a time, in order; a failed one does not stop the next', async () => {
  write(good('a'));
  const { fleet, w } = watch();
  let open!: () => void;
  fleet.gate = new Promise((r) => (open = r));
  const first = w.reload('SIGHUP');
  const second = w.reload('changed');
  await new Promise((r) => setImmediate(r));
  expect(fleet.active).toBe(1);
  open();
  expect(await first).toBe(true);
  expect(await second).toBe(true);
  expect(fleet.maxActive).toBe(1);
  expect(fleet.applied).toEqual([['a'], ['a']]);
  fleet.gate = null;
  fleet.fail = new Error('x');
  const bad = w.reload('SIGHUP');
  fleet.fail = null;
  write(good('b'));
  const after = w.reload('SIGHUP');
  // (the first runs with fail set only if it had started: it has not, it waits on the chain)
  await Promise.all([bad, after]);
  expect(fleet.applied.at(-1)).toEqual(['b']);
  await w.stop();
});

describe('looking for changes (fake timers)', () => {
  const flush = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };

  test('a change is picked up at the next look, not before; an unchanged file is not reloaded', async () => {
    write(good('a'));
    jest.useFakeTimers();
    const { fleet, w } = watch(100);
    w.start();
    jest.advanceTimersByTime(100);
    await w.stop().then(() => undefined);
    expect(fleet.applied).toEqual([]);
    w.start();
    write(good('b'));
    jest.advanceTimersByTime(99);
    await flush();
    expect(fleet.applied).toEqual([]);
    jest.advanceTimersByTime(1);
    await w.stop();
    expect(fleet.applied).toEqual([['b']]);
    // looked at: the same version is not reloaded again
    w.start();
    jest.advanceTimersByTime(500);
    await w.stop();
    expect(fleet.applied).toEqual([['b']]);
  });

  test('it keeps looking after each look, and a refused version is not retried until it changes', async () => {
    write(good('a'));
    jest.useFakeTimers();
    const { fleet, w } = watch(50);
    w.start();
    for (const n of ['b', 'c']) {
      write(good(n));
      jest.advanceTimersByTime(50);
      await flush();
      await (w as unknown as { chain: Promise<unknown> }).chain;
    }
    expect(fleet.applied).toEqual([['b'], ['c']]);
    write('not: [valid');
    jest.advanceTimersByTime(50);
    await flush();
    await (w as unknown as { chain: Promise<unknown> }).chain;
    jest.advanceTimersByTime(200);
    await w.stop();
    expect(fleet.errors.get(TARGETS_FILE_ERROR)).toBe(1);
  });

  test('a file that appears, or disappears, is a change', async () => {
    jest.useFakeTimers();
    const { fleet, w } = watch(50);
    w.start();
    jest.advanceTimersByTime(200);
    await flush();
    expect(fleet.errors.get(TARGETS_FILE_ERROR)).toBe(0); // missing, and still missing: no look
    write(good('a'));
    jest.advanceTimersByTime(50);
    await flush();
    await (w as unknown as { chain: Promise<unknown> }).chain;
    expect(fleet.applied).toEqual([['a']]);
    fs.rmSync(file);
    jest.advanceTimersByTime(50);
    await w.stop();
    expect(fleet.errors.get(TARGETS_FILE_ERROR)).toBe(1);
  });

  test('the look does not keep the process alive; stop() ends it', async () => {
    write(good('a'));
    jest.useFakeTimers();
    const { fleet, w } = watch(100);
    w.start();
    const timer = (w as unknown as { timer: NodeJS.Timeout }).timer;
    expect(timer.hasRef()).toBe(false);
    jest.advanceTimersByTime(100);
    expect((w as unknown as { timer: NodeJS.Timeout }).timer.hasRef()).toBe(false);
    await w.stop();
    expect(jest.getTimerCount()).toBe(0);
    write(good('z'));
    jest.advanceTimersByTime(1000);
    await flush();
    expect(fleet.applied).toEqual([]);
  });

  test('a reload found by the look is logged as "changed"; a file rewritten in place (same inode, new size) is a change too (issue 23)', async () => {
    write(good('a'));
    jest.useFakeTimers();
    const { fleet, rec, w } = watch(50);
    w.start();
    fs.writeFileSync(file, good('a', 'bb')); // in place: the inode stays
    jest.advanceTimersByTime(50);
    await flush();
    await (w as unknown as { chain: Promise<unknown> }).chain;
    await w.stop();
    expect(fleet.applied).toEqual([['a', 'bb']]);
    expect(rec.lines.map((l) => [l[0], l[1], l[2]?.why])).toEqual([['info', 'targets file reloaded', 'changed']]);
  });
});

test('lastSuccessSecs: Unix seconds of the last good load (issue 23)', async () => {
  write(good('a'));
  const { w } = watch();
  const t0 = Date.now() / 1000;
  expect(await w.reload('SIGHUP')).toBe(true);
  expect(w.lastSuccessSecs).toBeGreaterThanOrEqual(t0 - 0.01);
  expect(w.lastSuccessSecs).toBeLessThanOrEqual(Date.now() / 1000 + 0.01);
});
