/**
 * The log follower's edges that the Stryker run found untested (timeline-follower.ts
 * LogFollower; issue 23, test/mutation/README.md): standard input's start and stop, a path
 * that is missing or not a file, the messages a reader sees, the stat short-cut and the
 * bounds of the file header (every read asynchronous but the first of a look when at most
 * 64 KiB is new, at most readPerLookBytes per look, a backlog past maxBacklogBytes skipped to
 * its last catchUpBytes, a rewrite in place told from an append). Expectations come from
 * that header and the FollowerSink contract, worked out by hand per case.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { FollowerOptions, LogFollower } from '../../src/engine/sources/attach/timeline-follower';
import { RecordingSink } from './follower-sink';

/** Also keeps the messages, the lost() texts and the history flag of each lines() call. */
class Sink extends RecordingSink {
  messages: string[] = [];
  lostMessages: string[] = [];
  /** Called after each lines() (tests that write while the follower reads). */
  onLines: (() => void) | null = null;
  state(up: boolean, reason: string | null, message?: string): void {
    super.state(up, reason);
    this.messages.push(message ?? '');
  }
  lost(reason: string, message?: string): void {
    super.lost(reason);
    this.lostMessages.push(message ?? '');
  }
  lines(text: string, history: boolean): void {
    super.lines(text, history);
    this.onLines?.();
  }
}

let dir: string;
const open: LogFollower[] = [];
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-follower-edges-'));
});
afterEach(async () => {
  jest.restoreAllMocks();
  for (const f of open.splice(0)) await f.stop();
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let n = 0;
function follower(opts: Partial<FollowerOptions> = {}): { f: LogFollower; sink: Sink; file: string } {
  const file = path.join(dir, `log-${++n}.log`);
  const sink = new Sink();
  const all: FollowerOptions = { path: file, pollMs: 1_000_000, maxLineBytes: 64 * 1024, catchUpBytes: 8 * 1024 * 1024, ...opts };
  const f = new LogFollower(all, sink);
  open.push(f);
  return { f, sink, file };
}

/** This process's descriptors open on `file` (Linux /proc). */
function fdsOn(file: string): string[] {
  return fs.readdirSync('/proc/self/fd').filter((d) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${d}`) === file;
    } catch {
      return false;
    }
  });
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Waits (event-loop turns, bounded) until cond holds; false when it never did. */
async function until(cond: () => boolean, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await turn();
  }
  return true;
}

/** Counts the follower's file system calls while `work` runs (the module object it calls). */
async function countIo(work: () => Promise<void>): Promise<{ stat: number; fstat: number; readSync: number; read: number }> {
  const fsm = require('node:fs') as typeof fs;
  const c = { stat: 0, fstat: 0, readSync: 0, read: 0 };
  const wrap = <K extends 'statSync' | 'fstatSync' | 'readSync' | 'read'>(k: K, key: keyof typeof c) => {
    const orig = fsm[k] as (...a: unknown[]) => unknown;
    return jest.spyOn(fsm, k).mockImplementation(((...a: unknown[]) => {
      c[key]++;
      return orig.apply(fsm, a);
    }) as never);
  };
  const spies = [wrap('statSync', 'stat'), wrap('fstatSync', 'fstat'), wrap('readSync', 'readSync'), wrap('read', 'read')];
  try {
    await work();
  } finally {
    for (const s of spies) s.mockRestore();
  }
  return c;
}

describe('standard input', () => {
  test('up at start, lines as they come; stop() leaves the stream (no listener, paused); a second start resumes it; its end and its errors take it down', async () => {
    const stdin = new PassThrough();
    const sink = new Sink();
    const f = new LogFollower({ path: '-', pollMs: 1000, maxLineBytes: 1024, catchUpBytes: 1024, stdin }, sink);
    open.push(f);
    expect(f.up).toBe(false); // nothing read yet
    f.start();
    expect(sink.states).toEqual([[true, null]]);
    expect(sink.messages).toEqual(['reading TIMELINE lines from standard input']);
    stdin.write('one\ntw');
    stdin.write('o\n');
    expect(await until(() => sink.live.length === 2)).toBe(true);
    expect(sink.live).toEqual(['one', 'two']);
    await f.stop();
    expect([stdin.listenerCount('data'), stdin.listenerCount('end'), stdin.listenerCount('error')]).toEqual([0, 0, 0]);
    expect(stdin.isPaused()).toBe(true);
    stdin.write('while stopped\n');
    await turn();
    expect(sink.live).toEqual(['one', 'two']);
    // Started again on the paused stream: it must flow again (what was buffered too).
    f.start();
    expect(await until(() => sink.live.length === 3)).toBe(true);
    expect(sink.live).toEqual(['one', 'two', 'while stopped']);
    stdin.emit('error', new Error('boom'));
    expect(sink.states.at(-1)).toEqual([false, 'timeline_read']);
    expect(sink.messages.at(-1)).toBe('standard input: boom');
    stdin.end();
    expect(await until(() => sink.states.at(-1)?.[1] === 'timeline_eof')).toBe(true);
    expect(sink.states.at(-1)).toEqual([false, 'timeline_eof']);
    expect(sink.messages.at(-1)).toBe('standard input closed: no more TIMELINE lines (the feeding command ended)');
    expect(f.up).toBe(false);
  });

  test('stopped, neither its end nor an error reaches the sink', async () => {
    const stdin = new PassThrough();
    const sink = new Sink();
    const f = new LogFollower({ path: '-', pollMs: 1000, maxLineBytes: 1024, catchUpBytes: 1024, stdin }, sink);
    f.start();
    await f.stop();
    stdin.on('error', () => undefined); // the test's own, so an emitted error is not thrown
    stdin.emit('error', new Error('late'));
    stdin.end();
    stdin.resume();
    await turn();
    await turn();
    expect(sink.states).toEqual([[true, null]]);
  });
});

describe('a path that is missing or not a file', () => {
  test('missing: said once (not at every look), with the path; when it comes it is read from its start, live; gone again after an error: said again', async () => {
    const { f, sink, file } = follower();
    await f.tick();
    await f.tick();
    expect(sink.states).toEqual([[false, 'timeline_missing']]);
    expect(sink.messages).toEqual([`${file}: no such file (yet); waiting for it`]);
    expect(f.up).toBe(false);
    fs.writeFileSync(file, 'first\nsecond\n');
    await f.tick();
    // Not there at start: nothing in it is history.
    expect(sink.live).toEqual(['first', 'second']);
    expect(sink.history).toEqual([]);
    expect(sink.states.at(-1)).toEqual([true, null]);
    // A FIFO swapped in (refused, the file closed), then nothing at the path: missing again.
    fs.rmSync(file);
    execFileSync('mkfifo', [file]);
    await f.tick();
    expect(sink.states.at(-1)).toEqual([false, 'timeline_read']);
    fs.rmSync(file);
    await f.tick();
    expect(sink.states.at(-1)).toEqual([false, 'timeline_missing']);
  });

  test('a path under a regular file (ENOTDIR) is missing, not an error; a symlink loop (ELOOP) is an error', async () => {
    const parent = path.join(dir, `plain-${++n}`);
    fs.writeFileSync(parent, 'x');
    const a = follower({ path: path.join(parent, 'cuzk.log') });
    await a.f.tick();
    expect(a.sink.states).toEqual([[false, 'timeline_missing']]);
    const loop = path.join(dir, `loop-${++n}`);
    fs.symlinkSync(loop, loop);
    const b = follower({ path: loop });
    await b.f.tick();
    expect(b.sink.states).toEqual([[false, 'timeline_read']]);
    expect(b.sink.messages[0].startsWith(`${loop}: ELOOP`)).toBe(true);
  });

  test('the messages a reader sees: not a regular file (a FIFO, a directory), permission denied', async () => {
    const fifo = follower();
    execFileSync('mkfifo', [fifo.file]);
    await fifo.f.tick();
    const notFile = 'not a regular file (a pipe or a stream: use --cuzk.timeline-file - and feed it on standard input)';
    expect(fifo.sink.states).toEqual([[false, 'timeline_read']]);
    expect(fifo.sink.messages).toEqual([`${fifo.file}: ${notFile}`]);
    const d = follower();
    fs.mkdirSync(d.file);
    await d.f.tick();
    expect(d.sink.messages).toEqual([`${d.file}: ${notFile}`]);
    // Permission: the tests may run as root, so the open's refusal is simulated.
    const p = follower();
    fs.writeFileSync(p.file, 'x\n');
    const fsm = require('node:fs') as typeof fs;
    jest.spyOn(fsm, 'openSync').mockImplementationOnce(() => {
      throw Object.assign(new Error(`EACCES: permission denied, open '${p.file}'`), { code: 'EACCES' });
    });
    await p.f.tick();
    expect(p.sink.states).toEqual([[false, 'timeline_read']]);
    expect(p.sink.messages).toEqual([`${p.file}: permission denied`]);
  });

  test('a refused FIFO leaves no descriptor open on it', async () => {
    const { f, file } = follower();
    execFileSync('mkfifo', [file]);
    await f.tick();
    expect(fdsOn(file)).toEqual([]);
  });

  test('a read error: down with it, the file closed (no descriptor left on it); the next look opens it again, from its start', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, 'a\n');
    const fsm = require('node:fs') as typeof fs;
    jest.spyOn(fsm, 'readSync').mockImplementationOnce(() => {
      throw Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
    });
    await f.tick();
    expect(sink.states).toEqual([
      [true, null],
      [false, 'timeline_read'],
    ]);
    expect(sink.messages[1]).toBe(`${file}: EIO: i/o error, read`);
    expect(fdsOn(file)).toEqual([]);
    await f.tick();
    expect(sink.states.at(-1)).toEqual([true, null]);
    expect(sink.newFileAt).toEqual([0, 0]);
    expect(sink.live).toEqual(['a']);
  });

  test('the same inode number on another device is another file: the old one finished, the new one read from its start', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, 'a\n');
    await f.tick();
    const fsm = require('node:fs') as typeof fs;
    const real = fsm.statSync;
    jest.spyOn(fsm, 'statSync').mockImplementation(((...a: unknown[]) => {
      const st = (real as (...x: unknown[]) => fs.Stats).apply(fsm, a);
      st.dev += 1;
      return st;
    }) as never);
    await f.tick();
    expect(sink.newFileAt).toEqual([0, 0]);
    expect(sink.history).toEqual(['a']);
    expect(sink.live).toEqual(['a']);
  });
});

describe('state and stop', () => {
  test('opened: up once, "following <path>"; looks after that say nothing more', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, 'a\n');
    await f.tick();
    fs.appendFileSync(file, 'b\n');
    await f.tick();
    await f.tick();
    expect(sink.states).toEqual([[true, null]]);
    expect(sink.messages).toEqual([`following ${file}`]);
    expect(f.up).toBe(true);
  });

  test('stopped: a later look opens nothing and reports nothing', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, 'a\n');
    await f.tick();
    await f.stop();
    fs.appendFileSync(file, 'b\n');
    await f.tick();
    expect(sink.states).toEqual([[true, null]]);
    expect(sink.newFileAt).toEqual([0]);
    expect(sink.history).toEqual(['a']);
    expect(sink.live).toEqual([]);
  });

  test('stopped while the old file of a rotation is read: the new file is not opened', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, 'a\n');
    await f.tick();
    fs.appendFileSync(file, 'b\n');
    fs.renameSync(file, `${file}.1`);
    fs.writeFileSync(file, 'c\n');
    let stopping: Promise<void> | null = null;
    sink.onLines = () => {
      stopping ??= f.stop();
    };
    await f.tick();
    await stopping;
    expect(sink.live).toEqual(['b']);
    expect(sink.newFileAt).toEqual([0]);
    expect(sink.states).toEqual([[true, null]]);
  });

  test('truncated in place with less written since: a new file, not a rewrite (nothing counted)', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, '');
    await f.tick();
    fs.appendFileSync(file, 'TIMELINE,10,GPU_PICKUP,a,worker=0\nTIMELINE,20,GPU_START,a,worker=0\n');
    await f.tick();
    fs.truncateSync(file, 0);
    fs.appendFileSync(file, 'TIMELINE,5,GPU_PICKUP,b,worker=0\n');
    await f.tick();
    expect(sink.live.slice(2)).toEqual(['TIMELINE,5,GPU_PICKUP,b,worker=0']);
    expect(sink.lostReasons).toEqual([]);
    expect(sink.newFileAt).toEqual([0, 2]);
  });
});

describe('the timer-driven looks (start())', () => {
  function timer(): { every: FollowerOptions['every']; tickAll: () => void } {
    const ticks = new Set<() => void>();
    return {
      every: (_ms: number, fn: () => void) => {
        ticks.add(fn);
        return () => void ticks.delete(fn);
      },
      tickAll: () => [...ticks].forEach((fn) => fn()),
    };
  }

  test('a tick while a look runs is skipped, not queued', async () => {
    const t = timer();
    const { f, sink, file } = follower({ every: t.every });
    fs.writeFileSync(file, 'a\n');
    f.start(); // its first look runs now
    t.tickAll();
    t.tickAll();
    t.tickAll();
    await f.tick(); // queued after whatever was queued before it
    // The start's look and tick()'s: each ends caught up once.
    expect(sink.caughtUps).toBe(2);
  });

  test('a look stopped at its read budget is followed at once by the next, with no tick of the timer', async () => {
    const t = timer();
    const { f, sink, file } = follower({ every: t.every, readPerLookBytes: 100 });
    fs.writeFileSync(file, '');
    f.start();
    await f.tick();
    const lines = Array.from({ length: 40 }, (_, i) => `line-${String(i).padStart(4, '0')}`); // 10 bytes each with \n
    fs.appendFileSync(file, lines.map((l) => `${l}\n`).join(''));
    t.tickAll();
    expect(await until(() => sink.live.length === 40)).toBe(true);
    expect(sink.live).toEqual(lines);
  });
});

describe('reads: the stat short-cut, synchronous or not, the budget per look', () => {
  const big = 'x'.repeat(99) + '\n'; // 100 bytes

  test('nothing new: the look reads nothing and reports caught up; a few new lines: one synchronous read, no second stat', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, big.repeat(1000)); // 100 kB: the position is past 64 KiB
    await f.tick();
    const before = sink.caughtUps;
    const none = await countIo(() => f.tick());
    expect(none).toEqual({ stat: 1, fstat: 0, readSync: 0, read: 0 });
    expect(sink.caughtUps).toBe(before + 1);
    fs.appendFileSync(file, 'TIMELINE,1,GPU_PICKUP,a,worker=0\n');
    const few = await countIo(() => f.tick());
    expect(few).toEqual({ stat: 1, fstat: 0, readSync: 1, read: 0 });
    expect(sink.caughtUps).toBe(before + 2); // its short read found the end
    expect(sink.live).toEqual(['TIMELINE,1,GPU_PICKUP,a,worker=0']);
  });

  test('more than 64 KiB new: every read asynchronous; exactly 64 KiB: the first read synchronous, the next not', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, '');
    await f.tick();
    fs.appendFileSync(file, big.repeat(700)); // 70 kB
    const over = await countIo(() => f.tick());
    // One asynchronous read (up to READ_CHUNK, 1 MiB) finds it all and the end.
    expect([over.readSync, over.read]).toEqual([0, 1]);
    fs.appendFileSync(file, big.repeat(655) + 'y'.repeat(64 * 1024 - 65_500 - 1) + '\n'); // 65 536 bytes
    const at = await countIo(() => f.tick());
    expect([at.readSync, at.read]).toEqual([1, 1]);
    expect(sink.live.length).toBe(700 + 656);
  });

  test('rewritten in place to the same size with its mtime put back: the ctime tells, read again from the start, counted', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, '');
    await f.tick();
    fs.appendFileSync(file, 'TIMELINE,1,GPU_PICKUP,a,worker=0\n');
    const T = 1_700_000_000; // a whole second: set and set back exactly
    fs.utimesSync(file, T, T);
    await f.tick();
    const ctime = fs.statSync(file).ctimeMs;
    // rsync --inplace -t: same inode, same size, the old mtime; only the ctime moves.
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, 'TIMELINE,2,GPU_PICKUP,b,worker=1\n', 0);
    fs.closeSync(fd);
    fs.utimesSync(file, T, T);
    // File times are coarse (a clock tick): set again until the ctime has moved.
    while (fs.statSync(file).ctimeMs === ctime) {
      await turn();
      fs.utimesSync(file, T, T);
    }
    expect(fs.statSync(file).mtimeMs).toBe(T * 1000);
    await f.tick();
    expect(sink.lostReasons).toEqual(['timeline_rewritten']);
    expect(sink.lostMessages).toEqual([`${file}: rewritten in place since the last look (a copytruncate, then more than before written): read again from its start`]);
    expect(sink.live).toEqual(['TIMELINE,1,GPU_PICKUP,a,worker=0', 'TIMELINE,2,GPU_PICKUP,b,worker=1']);
  });

  test('at most readPerLookBytes per look: 1000 bytes at 100 a look take ten looks', async () => {
    const { f, sink, file } = follower({ readPerLookBytes: 100 });
    fs.writeFileSync(file, '');
    await f.tick();
    const lines = Array.from({ length: 100 }, (_, i) => `line-${String(i).padStart(4, '0')}`);
    fs.appendFileSync(file, lines.map((l) => `${l}\n`).join(''));
    const io = await countIo(() => f.tick());
    expect(sink.live).toEqual(lines);
    expect(io.stat).toBeGreaterThanOrEqual(10);
  });

  test('the catch-up is history only up to the size found at start: lines written while it is read are live', async () => {
    const { f, sink, file } = follower({ readPerLookBytes: 70 });
    const old = Array.from({ length: 10 }, (_, i) => `old-line-${String(i).padStart(20, '0')}`); // 30 bytes each with \n
    fs.writeFileSync(file, old.map((l) => `${l}\n`).join(''));
    const fresh = ['new-line-1', 'new-line-2', 'new-line-3', 'new-line-4'];
    sink.onLines = () => {
      if (sink.history.length > 0 && sink.onLines) {
        sink.onLines = null;
        fs.appendFileSync(file, fresh.map((l) => `${l}\n`).join(''));
      }
    };
    await f.tick();
    expect(sink.history).toEqual(old);
    expect(sink.live).toEqual(fresh);
  });
});

describe('a backlog past maxBacklogBytes', () => {
  test('the bound is at least catchUpBytes; exactly the bound is read, one byte more is skipped to the last catchUpBytes, said exactly', async () => {
    const { f, sink, file } = follower({ catchUpBytes: 100, maxBacklogBytes: 50 });
    fs.writeFileSync(file, '');
    await f.tick();
    const ten = Array.from({ length: 10 }, (_, i) => `line-${String(i).padStart(4, '0')}`); // 100 bytes
    fs.appendFileSync(file, ten.map((l) => `${l}\n`).join(''));
    await f.tick();
    expect(sink.live).toEqual(ten);
    expect(sink.lostReasons).toEqual([]);
    // 101 bytes: the last 100 start inside the a-line, so reading starts at the b-line.
    fs.appendFileSync(file, `${'a'.repeat(50)}\n${'b'.repeat(49)}\n`);
    await f.tick();
    expect(sink.lostReasons).toEqual(['timeline_skipped']);
    expect(sink.lostMessages).toEqual([
      `${file}: 101 bytes arrived at once (more than 100 behind): skipped 51 to read only the last 50 (as history, as at start); the work in the skipped part is not counted`,
    ]);
    expect(sink.history).toEqual(['b'.repeat(49)]);
    expect(sink.live).toEqual(ten);
    // A skip is not a new file.
    expect(sink.newFileAt).toEqual([0]);
  });

  test('also on the old file of a rotation', async () => {
    const { f, sink, file } = follower({ catchUpBytes: 100, maxBacklogBytes: 100 });
    fs.writeFileSync(file, '');
    await f.tick();
    fs.appendFileSync(file, `${'a'.repeat(399)}\n${'b'.repeat(49)}\n`);
    fs.renameSync(file, `${file}.1`);
    fs.writeFileSync(file, 'c\n');
    await f.tick();
    expect(sink.lostReasons).toEqual(['timeline_skipped']);
    expect(sink.history).toEqual(['b'.repeat(49)]);
    expect(sink.live).toEqual(['c']);
  });

  test('a skipped tail with no newline anywhere in the read buffer either: reading goes on at the end of the file', async () => {
    const MiB = 1024 * 1024;
    const { f, sink, file } = follower({ catchUpBytes: 1000, maxBacklogBytes: 3 * MiB });
    fs.writeFileSync(file, '');
    await f.tick();
    // Zeros (sparse) read through the whole read buffer (1 MiB and the 256 bytes before the
    // position): no byte of it is a newline any more.
    fs.truncateSync(file, MiB);
    await f.tick();
    fs.truncateSync(file, 2 * MiB + 10);
    await f.tick();
    fs.truncateSync(file, 5 * MiB + 20); // 3 MiB + 10 at once: skipped
    await f.tick();
    expect(sink.lostReasons).toEqual(['timeline_skipped']);
    fs.appendFileSync(file, 'z\nnext\n');
    await f.tick();
    expect(sink.live).toEqual(['z', 'next']);
    expect(sink.history).toEqual([]);
  });

  test('the followed file deleted with a backlog past the bound: what is left of it is still read from its last catchUpBytes', async () => {
    const { f, sink, file } = follower({ catchUpBytes: 100, maxBacklogBytes: 100 });
    fs.writeFileSync(file, '');
    await f.tick();
    fs.appendFileSync(file, `${'a'.repeat(399)}\n${'b'.repeat(49)}\n`);
    fs.rmSync(file);
    await f.tick();
    expect(sink.lostReasons).toEqual(['timeline_skipped']);
    expect(sink.history).toEqual(['b'.repeat(49)]);
    expect(sink.live).toEqual([]);
  });

  test('a skipped tail with no line start in it: reading goes on at the end of the file (bytes left in the read buffer are not taken for a newline)', async () => {
    const { f, sink, file } = follower({ catchUpBytes: 102, maxBacklogBytes: 100 });
    fs.writeFileSync(file, '');
    await f.tick();
    const lines: string[] = [];
    for (let round = 0; round < 4; round++) {
      const batch = Array.from({ length: 12 }, (_, i) => `ln-${round}-${String(i).padStart(2, '0')}`); // 8 bytes each with \n
      lines.push(...batch);
      fs.appendFileSync(file, batch.map((l) => `${l}\n`).join(''));
      await f.tick();
    }
    expect(sink.live).toEqual(lines);
    fs.appendFileSync(file, 'y'.repeat(300));
    await f.tick();
    expect(sink.lostReasons).toEqual(['timeline_skipped']);
    expect(sink.lostMessages[0]).toContain(': 300 bytes arrived at once (more than 102 behind): skipped 300 to read only the last 0 ');
    fs.appendFileSync(file, 'z\nTIMELINE,1,GPU_PICKUP,a,worker=0\n');
    await f.tick();
    // The end of the skipped line, then the next line; nothing read twice, no new file.
    expect(sink.live).toEqual([...lines, 'z', 'TIMELINE,1,GPU_PICKUP,a,worker=0']);
    expect(sink.newFileAt).toEqual([0]);
  });
});

test('a catch-up whose tail holds no line start reads nothing of it: reading goes on at the end of the file', async () => {
  const { f, sink, file } = follower({ catchUpBytes: 100 });
  fs.writeFileSync(file, `line one\n${'x'.repeat(200)}`);
  await f.tick();
  expect(sink.history).toEqual([]);
  fs.appendFileSync(file, '-end\nnext\n');
  await f.tick();
  expect(sink.live).toEqual(['-end', 'next']);
});

test('the file cut short between the stat and the catch-up\'s read: nothing of it is history, what comes next is read from its start', async () => {
  const { f, sink, file } = follower({ catchUpBytes: 10 });
  fs.writeFileSync(file, 'line one\nline two\nline three\n');
  const fsm = require('node:fs') as typeof fs;
  const real = fsm.read;
  jest.spyOn(fsm, 'read').mockImplementationOnce(((...a: unknown[]) => {
    fs.truncateSync(file, 0);
    return (real as (...x: unknown[]) => void).apply(fsm, a);
  }) as never);
  await f.tick();
  expect(sink.history).toEqual([]);
  fs.appendFileSync(file, 'fresh\n');
  await f.tick();
  expect(sink.live).toEqual(['fresh']);
});

test('copytruncate, more written, a NUL among the bytes before the read position: a rewrite (a hole is all zeros)', async () => {
  const { f, sink, file } = follower();
  fs.writeFileSync(file, 'line one\nline two\n');
  await f.tick();
  fs.truncateSync(file, 0);
  fs.appendFileSync(file, `a\0${'b'.repeat(30)}\n`);
  await f.tick();
  expect(sink.lostReasons).toEqual(['timeline_rewritten']);
  expect(sink.live).toEqual([`a\0${'b'.repeat(30)}`]);
});

describe('a hole (a truncation whose writer kept its offset)', () => {
  test('a short line written at the old offset, then appends: never taken for a rewrite', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, 'line one\nline two\n');
    await f.tick();
    const size = fs.statSync(file).size;
    fs.truncateSync(file, 0);
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, 'line three\n', size);
    fs.closeSync(fd);
    await f.tick();
    fs.appendFileSync(file, 'line four\n');
    await f.tick();
    expect(sink.live).toEqual(['line three', 'line four']);
    expect(sink.lostReasons).toEqual([]);
  });

  test('zeroed to its own size (truncate -s 0, then -s back): a hole, nothing new, nothing counted', async () => {
    const { f, sink, file } = follower();
    fs.writeFileSync(file, 'line one\nline two\n');
    await f.tick();
    const size = fs.statSync(file).size;
    fs.truncateSync(file, 0);
    fs.truncateSync(file, size);
    await f.tick();
    expect(sink.lostReasons).toEqual([]);
    expect(sink.newFileAt).toEqual([0]);
    expect(f.pendingBytes).toBe(0);
  });
});
