/**
 * The log follower alone (timeline-follower.ts), on real files, with a sink that records
 * what it is handed: the cases a scrape-level test cannot place exactly (issue 23's gaps,
 * issue 20's classes 2 and 6). Each expectation is the list of lines the file's writer
 * wrote, not what the code computes.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FollowerOptions, LogFollower } from '../../src/engine/sources/attach/timeline-follower';
import { RecordingSink } from './follower-sink';

let dir: string;
const open: LogFollower[] = [];
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-follower-'));
});
afterEach(async () => {
  for (const f of open.splice(0)) await f.stop();
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let n = 0;
function follower(opts: Partial<FollowerOptions> = {}): { f: LogFollower; sink: RecordingSink; file: string } {
  const file = path.join(dir, `log-${++n}.log`);
  const sink = new RecordingSink();
  const all: FollowerOptions = { path: file, pollMs: 1_000_000, maxLineBytes: 64 * 1024, catchUpBytes: 8 * 1024 * 1024, ...opts };
  const f = new LogFollower(all, sink);
  open.push(f);
  return { f, sink, file };
}

/**
 * How many event-loop turns ran while `work` did, and how many bytes it read from files
 * (fs.read and fs.readSync, whatever the follower uses). A synchronous read loop gives no
 * turn at all; an asynchronous one gives one per read.
 */
async function observe(work: () => Promise<void>): Promise<{ turns: number; bytesRead: number; ms: number }> {
  const fsm = require('node:fs') as typeof fs;
  let bytesRead = 0;
  type Cb = (err: NodeJS.ErrnoException | null, n: number, b: Buffer) => void;
  const read = jest.spyOn(fsm, 'read').mockImplementation(((fd: number, buf: Buffer, off: number, len: number, pos: number, cb: Cb) =>
    fsReadOrig(fd, buf, off, len, pos, (err, n, b) => {
      if (!err) bytesRead += n;
      cb(err, n, b);
    })) as never);
  const readSync = jest.spyOn(fsm, 'readSync').mockImplementation(((...a: unknown[]) => {
    const n = (fsReadSyncOrig as (...x: unknown[]) => number)(...a);
    bytesRead += n;
    return n;
  }) as never);
  let turns = 0;
  let going = true;
  const spin = () => {
    if (!going) return;
    turns++;
    setImmediate(spin);
  };
  setImmediate(spin);
  const t0 = performance.now();
  try {
    await work();
  } finally {
    going = false;
    read.mockRestore();
    readSync.mockRestore();
  }
  return { turns, bytesRead, ms: performance.now() - t0 };
}
const fsReadOrig = fs.read;
const fsReadSyncOrig = fs.readSync;

test('rotation by rename: lines written to the old file after the last look are read before the new file (issue 23)', async () => {
  const { f, sink, file } = follower();
  fs.writeFileSync(file, '');
  await f.tick();
  fs.appendFileSync(file, 'TIMELINE,100,GPU_PICKUP,job,worker=0\n');
  await f.tick();
  expect(sink.live).toEqual(['TIMELINE,100,GPU_PICKUP,job,worker=0']);
  // Between two looks: renamed, the writer (still holding it) writes its GPU_END there,
  // then it reopens the path as a new file and writes on.
  fs.renameSync(file, `${file}.1`);
  fs.appendFileSync(`${file}.1`, 'TIMELINE,900,GPU_END,job,worker=0,gpu_ms=800\n');
  fs.writeFileSync(file, 'TIMELINE,950,SYNTH_START,next,kind=window-post\n');
  await f.tick();
  expect(sink.live).toEqual(['TIMELINE,100,GPU_PICKUP,job,worker=0', 'TIMELINE,900,GPU_END,job,worker=0,gpu_ms=800', 'TIMELINE,950,SYNTH_START,next,kind=window-post']);
  // And the new file is followed from there on; the old one no more.
  fs.appendFileSync(`${file}.1`, 'written to the old file after the switch\n');
  fs.appendFileSync(file, 'TIMELINE,960,SYNTH_END,next,synth_ms=10\n');
  await f.tick();
  expect(sink.live.slice(3)).toEqual(['TIMELINE,960,SYNTH_END,next,synth_ms=10']);
  expect(sink.lostReasons).toEqual([]);
  // The consumer heard of each file before its lines (its reads of the old one vouch for nothing in the new one).
  expect(sink.newFileAt).toEqual([0, 2]);
});

test('start-up catch-up: a cut exactly on a line start keeps that line; a cut inside a line skips only that line (issue 23)', async () => {
  const lines = ['TIMELINE,1,SYNTH_START,a,partition=0', 'TIMELINE,2,GPU_PICKUP,a,worker=0,partition=0', 'TIMELINE,3,GPU_START,a,worker=0,partition=0'];
  const text = lines.map((l) => `${l}\n`).join('');
  const startOf2 = lines[0].length + 1;
  const cases: [string, number, string[]][] = [
    ['exactly at the start of line 2', text.length - startOf2, lines.slice(1)],
    ['one byte into line 2', text.length - startOf2 - 1, lines.slice(2)],
    ['on the newline ending line 1', text.length - startOf2 + 1, lines.slice(1)],
    ['the whole file', text.length, lines],
  ];
  for (const [what, catchUpBytes, want] of cases) {
    const { f, sink, file } = follower({ catchUpBytes });
    fs.writeFileSync(file, text);
    await f.tick();
    expect([what, sink.history]).toEqual([what, want]);
    expect(sink.live).toEqual([]);
  }
});

test('copytruncate with more written than before, within one look: read again from the start, counted (issue 20 class 6)', async () => {
  const { f, sink, file } = follower();
  fs.writeFileSync(file, '');
  await f.tick();
  fs.appendFileSync(file, 'TIMELINE,10,GPU_PICKUP,a,worker=0\nTIMELINE,20,GPU_START,a,worker=0\n');
  await f.tick();
  // logrotate copytruncate: copy, truncate to 0; the writer (O_APPEND) goes on at 0 and,
  // before the next look, writes more than the file held.
  fs.copyFileSync(file, `${file}.1`);
  fs.truncateSync(file, 0);
  const after = ['TIMELINE,1500,GPU_END,a,worker=0,gpu_ms=1480', 'TIMELINE,1510,GPU_PICKUP,b,worker=0', 'TIMELINE,1520,GPU_START,b,worker=0'];
  fs.appendFileSync(file, after.map((l) => `${l}\n`).join(''));
  expect(fs.statSync(file).size).toBeGreaterThan(2 * 35);
  await f.tick();
  expect(sink.live).toEqual(['TIMELINE,10,GPU_PICKUP,a,worker=0', 'TIMELINE,20,GPU_START,a,worker=0', ...after]);
  expect(sink.lostReasons).toEqual(['timeline_rewritten']);
  // Appends after that are appends again: nothing re-read, nothing counted.
  fs.appendFileSync(file, 'TIMELINE,1600,GPU_END,b,worker=0,gpu_ms=80\n');
  await f.tick();
  expect(sink.live.slice(5)).toEqual(['TIMELINE,1600,GPU_END,b,worker=0,gpu_ms=80']);
  expect(sink.lostReasons).toEqual(['timeline_rewritten']);
  expect(sink.newFileAt).toEqual([0, 2]); // opened; read again from the start
});

test('a truncation whose writer kept its offset (a hole before the read position) is not a rewrite', async () => {
  const { f, sink, file } = follower();
  fs.writeFileSync(file, 'line one\nline two\n');
  await f.tick();
  const size = fs.statSync(file).size;
  fs.truncateSync(file, 0);
  // A writer without O_APPEND writes on at its own offset: zeros before it.
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, 'line three\n', size);
  fs.closeSync(fd);
  await f.tick();
  expect(sink.history).toEqual(['line one', 'line two']);
  expect(sink.live).toEqual(['line three']);
  expect(sink.lostReasons).toEqual([]);
});

test('truncated in place, less written since: read from the start, the consumer told of a new file first; appends alone tell nothing', async () => {
  const { f, sink, file } = follower();
  fs.writeFileSync(file, '');
  await f.tick();
  fs.appendFileSync(file, 'TIMELINE,10,GPU_PICKUP,a,worker=0\nTIMELINE,20,GPU_START,a,worker=0\n');
  await f.tick();
  fs.appendFileSync(file, 'TIMELINE,30,GPU_END,a,worker=0,gpu_ms=10\n');
  await f.tick();
  expect(sink.newFileAt).toEqual([0]);
  fs.truncateSync(file, 0);
  fs.appendFileSync(file, 'TIMELINE,5,GPU_PICKUP,b,worker=0\n');
  await f.tick();
  expect(sink.live.slice(3)).toEqual(['TIMELINE,5,GPU_PICKUP,b,worker=0']);
  expect(sink.newFileAt).toEqual([0, 3]);
});

/** 40 GiB; CUZK_JUMP_BYTES to run it smaller (against code that reads it all). */
const JUMP = Number(process.env.CUZK_JUMP_BYTES ?? 40 * 2 ** 30);

test('a jump of 40 GiB (truncate -s on the followed file; a rotation to such a file): skipped to a bounded tail, counted, the event loop never waits (issue 20 class 2)', async () => {
  const { f, sink, file } = follower({ catchUpBytes: 64 * 1024, maxBacklogBytes: 1024 * 1024 });
  fs.writeFileSync(file, 'TIMELINE,1,GPU_PICKUP,a,worker=0\n');
  await f.tick();
  expect(sink.history).toEqual(['TIMELINE,1,GPU_PICKUP,a,worker=0']);
  fs.truncateSync(file, JUMP); // sparse: 40 GiB of zeros, no disk used
  fs.appendFileSync(file, 'TIMELINE,2,GPU_END,a,worker=0,gpu_ms=1\n');
  const o = await observe(() => f.tick());
  // What was read: the tail looked through for a line start (at most catchUpBytes) and the
  // bytes just before the read position; never the zeros in between.
  expect(o.bytesRead).toBeLessThanOrEqual(64 * 1024 + 256);
  expect(o.turns).toBeGreaterThan(0);
  expect(sink.lostReasons).toEqual(['timeline_skipped']);
  // The tail (the last catchUpBytes) is read from its first line start: the GPU_END glued
  // to the zeros has none (it belongs to the skipped 40 GiB "line"). Lines after it: live.
  expect(sink.history).toEqual(['TIMELINE,1,GPU_PICKUP,a,worker=0']);
  fs.appendFileSync(file, 'TIMELINE,3,SYNTH_START,b,kind=window-post\n');
  await f.tick();
  expect(sink.live).toEqual(['TIMELINE,3,SYNTH_START,b,kind=window-post']);

  // Rotation to a 40 GiB file: the same bound.
  const big = `${file}.big`;
  fs.writeFileSync(big, '');
  fs.truncateSync(big, JUMP);
  fs.appendFileSync(big, '\nTIMELINE,4,GPU_PICKUP,c,worker=1\n');
  fs.renameSync(big, file);
  const o2 = await observe(() => f.tick());
  expect(o2.bytesRead).toBeLessThanOrEqual(64 * 1024 + 256);
  expect(sink.lostReasons).toEqual(['timeline_skipped', 'timeline_skipped']);
  expect(sink.history.slice(-1)).toEqual(['TIMELINE,4,GPU_PICKUP,c,worker=1']);
});

test('reads are asynchronous and capped per look: 6 MiB appended at once never holds the event loop, every line once', async () => {
  const { f, sink, file } = follower({ readPerLookBytes: 512 * 1024 });
  fs.writeFileSync(file, '');
  await f.tick();
  const lines: string[] = [];
  for (let i = 0; lines.length * 48 < 6 * 1024 * 1024; i++) lines.push(`TIMELINE,${i},SYNTH_START,job-${i},kind=window-post`.padEnd(47, ' '));
  fs.appendFileSync(file, lines.map((l) => `${l}\n`).join(''));
  const o = await observe(() => f.tick());
  expect(sink.live.length).toBe(lines.length);
  expect(sink.live[0]).toBe(lines[0]);
  expect(sink.live[lines.length - 1]).toBe(lines[lines.length - 1]);
  // Twelve reads of 512 KiB, each its own event-loop turn (a synchronous loop gives none).
  expect(o.turns).toBeGreaterThanOrEqual(12);
  expect(sink.lostReasons).toEqual([]);
});

test('the path swapped for a FIFO: refused (down, timeline_read), never a blocked open; a file again: followed', async () => {
  const { f, sink, file } = follower();
  fs.writeFileSync(file, 'one\n');
  await f.tick();
  fs.rmSync(file);
  execFileSync('mkfifo', [file]);
  await f.tick();
  expect(sink.states.at(-1)).toEqual([false, 'timeline_read']);
  fs.rmSync(file);
  fs.writeFileSync(file, 'two\n');
  await f.tick();
  expect(sink.states.at(-1)).toEqual([true, null]);
  expect(sink.live).toEqual(['two']);
});

test('stop() while a look is reading waits for the read, then closes the file', async () => {
  const { f, file } = follower({ readPerLookBytes: 256 * 1024 });
  fs.writeFileSync(file, 'x'.repeat(100).concat('\n').repeat(40_000));
  const openOnFile = () => fs.readdirSync('/proc/self/fd').filter((d) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${d}`) === file;
    } catch {
      return false;
    }
  }).length;
  f.start(); // the first look: the catch-up of 4 MB, 256 KiB per look, one read at a time
  while (openOnFile() === 0) await new Promise((r) => setImmediate(r));
  await f.stop();
  expect(openOnFile()).toBe(0);
});

test('a shared timer drives the looks (a fleet): each tick reads what was appended, small backlogs in the tick\'s own turn; stopped, it leaves the timer', async () => {
  const ticks = new Set<() => void>();
  const periods: number[] = [];
  const every = (ms: number, fn: () => void) => {
    periods.push(ms);
    ticks.add(fn);
    return () => void ticks.delete(fn);
  };
  const { f, sink, file } = follower({ every, pollMs: 500 });
  fs.writeFileSync(file, '');
  f.start();
  expect(periods).toEqual([500]);
  await f.tick(); // the look start() began, done
  const tickAll = () => [...ticks].forEach((fn) => fn());
  const lines = Array.from({ length: 50 }, (_, i) => `TIMELINE,${i},GPU_START,job-${i},partition=0,worker=1`);
  fs.appendFileSync(file, lines.slice(0, 25).map((l) => `${l}\n`).join(''));
  // A backlog of a few KiB is read synchronously: the look is done once the tick's
  // microtasks have run, with no thread-pool round trip to wait for.
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  tickAll();
  await turn();
  expect(sink.live).toEqual(lines.slice(0, 25));
  fs.appendFileSync(file, lines.slice(25).map((l) => `${l}\n`).join(''));
  tickAll();
  await turn();
  expect(sink.live).toEqual(lines);
  await f.stop();
  expect(ticks.size).toBe(0);
  fs.appendFileSync(file, 'after the stop\n');
  tickAll();
  await turn();
  expect(sink.live).toEqual(lines);
});
