/**
 * Issue 20 (classes 2 and 6) and issue 23: a seeded property-based fuzz of the log follower
 * (timeline-follower.ts) against an independent model of which lines it must hand on.
 * Random interleavings of what a writer and logrotate do to a followed file — appends
 * (some ending mid-line, completed later), looks, rotation by rename (the writer keeps
 * writing to the renamed file until it reopens the path), copytruncate (copy, truncate,
 * then the writer writes on, sometimes more than the file held) and plain truncation —
 * with a small read budget per look so reads span looks. After a last line and look:
 *  - every line is handed on whole, at most once, in the order written;
 *  - every line is handed on, except the ones the model says may be lost: lines of a file
 *    truncated before the follower's next look had read them, and lines of a file created
 *    and rotated away between two looks (tail -F loses those too);
 *  - a rewrite is reported only if a truncation happened (never for plain appends).
 * Sizes: CUZK_FUZZ_RUNS (default 300) and CUZK_FUZZ_SEED.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { LogFollower } from '../../src/engine/sources/attach/timeline-follower';
import { RecordingSink } from '../attach/follower-sink';

const RUNS = Number(process.env.CUZK_FUZZ_RUNS ?? 300);
const SEED = Number(process.env.CUZK_FUZZ_SEED ?? 20261201);

type Op =
  | { t: 'append'; pads: number[]; partial: boolean }
  | { t: 'poll' }
  | { t: 'rename' }
  | { t: 'reopen' }
  | { t: 'copytruncate'; pads: number[] }
  | { t: 'truncate' };

const pads = fc.array(fc.nat({ max: 120 }), { minLength: 1, maxLength: 6 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant('append' as const), pads, partial: fc.boolean() }) },
  { weight: 4, arbitrary: fc.constant({ t: 'poll' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'rename' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'reopen' as const }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('copytruncate' as const), pads: fc.array(fc.nat({ max: 120 }), { minLength: 0, maxLength: 12 }) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'truncate' as const }) },
);

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fuzz-follower-'));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

let caseNo = 0;

/** Runs one interleaving; returns nothing, fails by expect. */
async function runCase(ops: Op[], perLook: number): Promise<void> {
  const dir = path.join(root, String(++caseNo));
  fs.mkdirSync(dir);
  const file = path.join(dir, 'cuzk.log');
  fs.writeFileSync(file, '');
  const sink = new RecordingSink();
  const f = new LogFollower({ path: file, pollMs: 1e9, maxLineBytes: 4096, catchUpBytes: 1 << 20, readPerLookBytes: perLook }, sink);

  // The model. Each line has an id; a file is a list of line ids.
  let nextId = 0;
  let nextFile = 0;
  const files = new Map<number, string>(); // file id -> its current path
  let writerFile = nextFile++; // the file the writer appends to
  files.set(writerFile, file);
  let atPath: number | null = writerFile; // the file at `file`, if any
  let followed: number | null = null; // the file the follower reads (after its last look)
  const seenByFollower = new Set<number>(); // files the follower has had open
  const lineFile = new Map<number, number>(); // line id -> file id
  const mayLose = new Set<number>(); // line ids the model allows to be lost
  const writtenSinceLook = new Set<number>(); // line ids completed since the last look
  let pending: { id: number; rest: string } | null = null; // a line written up to its middle
  let truncations = 0;
  let renames = 0;

  const written = new Map<number, string>();
  const text = (id: number, pad: number) => {
    const t = `L${id} ${'x'.repeat(pad)}\n`;
    written.set(id, t);
    return t;
  };
  const write = (s: string) => fs.appendFileSync(files.get(writerFile)!, s);
  const complete = () => {
    if (!pending) return;
    write(pending.rest);
    writtenSinceLook.add(pending.id);
    pending = null;
  };
  const lines = (ps: number[], partial: boolean) => {
    complete();
    ps.forEach((pad, i) => {
      const id = nextId++;
      lineFile.set(id, writerFile);
      const t = text(id, pad);
      if (partial && i === ps.length - 1) {
        const cut = 1 + (pad % (t.length - 1));
        write(t.slice(0, cut));
        pending = { id, rest: t.slice(cut) };
      } else {
        write(t);
        writtenSinceLook.add(id);
      }
    });
  };
  const look = async () => {
    await f.tick();
    // What the follower reads now: the old file to its end, then the one at the path.
    if (atPath !== null) {
      // A file created at the path and rotated away before this look was never seen.
      followed = atPath;
      seenByFollower.add(atPath);
    }
    writtenSinceLook.clear();
  };
  const truncateLosing = () => {
    // Whatever of this file the follower has not read yet may be lost.
    for (const id of writtenSinceLook) if (lineFile.get(id) === writerFile) mayLose.add(id);
    if (pending && lineFile.get(pending.id) === writerFile) mayLose.add(pending.id);
    truncations++;
  };

  try {
    await look();
    for (const o of ops) {
      switch (o.t) {
        case 'append':
          lines(o.pads, o.partial);
          break;
        case 'poll':
          await look();
          break;
        case 'rename': {
          if (atPath !== writerFile) break; // the writer has not reopened yet
          complete();
          const to = path.join(dir, `cuzk.log.${++renames}`);
          fs.renameSync(file, to);
          files.set(writerFile, to);
          atPath = null;
          break;
        }
        case 'reopen': {
          if (atPath !== null) break; // nothing was renamed
          complete();
          writerFile = nextFile++;
          files.set(writerFile, file);
          fs.writeFileSync(file, '');
          atPath = writerFile;
          break;
        }
        case 'copytruncate':
        case 'truncate': {
          if (atPath !== writerFile) break;
          complete();
          truncateLosing();
          if (o.t === 'copytruncate') fs.copyFileSync(file, path.join(dir, `cuzk.log.copy${truncations}`));
          fs.truncateSync(file, 0);
          if (o.t === 'copytruncate') lines(o.pads, false); // the writer goes on, before the next look
          break;
        }
      }
    }
    // The end: the writer completes its line and writes one more; two looks read it all.
    lines([0], false);
    await look();
    await look();

    // Files never opened by the follower: their lines may be lost.
    for (const [id, fid] of lineFile) if (!seenByFollower.has(fid) && fid !== followed) mayLose.add(id);
    const got = sink.live.map((l) => {
      const id = Number(/^L(\d+) /.exec(l)?.[1] ?? -1);
      expect(`${l}\n`).toBe(written.get(id)); // a whole line as written, never a piece
      return id;
    });
    // In order, once each.
    for (let i = 1; i < got.length; i++) expect([got[i - 1], got[i], got[i] > got[i - 1]]).toEqual([got[i - 1], got[i], true]);
    const have = new Set(got);
    const missing = [...lineFile.keys()].filter((id) => !have.has(id) && !mayLose.has(id));
    expect(missing).toEqual([]);
    expect(sink.history).toEqual([]);
    expect(sink.lostReasons.every((r) => r === 'timeline_rewritten')).toBe(true);
    if (truncations === 0) expect(sink.lostReasons).toEqual([]);
  } finally {
    await f.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('random rotate / copytruncate / truncate / append interleavings: every line once, in order, none lost that need not be', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), fc.integer({ min: 64, max: 4096 }), (ops, perLook) => runCase(ops, perLook)),
    { numRuns: RUNS, seed: SEED },
  );
});

test('the interleaving issue 20 found: copytruncate, then more than before written within one look', async () => {
  await runCase([{ t: 'append', pads: [10, 10], partial: false }, { t: 'poll' }, { t: 'copytruncate', pads: [10, 10, 10, 10] }, { t: 'poll' }], 4096);
});
