/**
 * TimelineWorkers (src/engine/sources/attach/timeline-workers.ts) on its own: a worker's
 * stint from a pickup to the end of what it owns, tentative pickups (skips), exposure caps
 * and floors, credit for ends of unseen pickups, a restart. Every expected busy time is
 * worked out by hand from the offsets given (ns).
 */
import { END_DONE, END_NONE, TimelineJobs, TlUnit } from '../../src/engine/sources/attach/timeline-jobs';
import { TimelineWorkers } from '../../src/engine/sources/attach/timeline-workers';

function units(n: number): TlUnit[] {
  const jobs = new TimelineJobs();
  const j = jobs.job('j', 0);
  return Array.from({ length: n }, (_, i) => jobs.newUnit(j, i));
}

/** capFor: the unit's pickup + 1000 (each unit's pickT set by the test). */
const capFor = (u: TlUnit) => u.pickT + 1000;

function state(ws: TimelineWorkers, w: number) {
  return { busy: ws.busy[w], since: ws.since[w], busyNs: ws.busyNs[w], change: ws.change[w], cap: ws.cap[w], floor: ws.floor[w], tentative: ws.tentative[w] };
}

describe('TimelineWorkers', () => {
  test('touch grows the arrays (caps unbounded, no end of a previous unit yet) and bumps the version only for a new worker', () => {
    const ws = new TimelineWorkers(capFor);
    expect(ws.ids()).toEqual([]);
    ws.touch(2);
    expect(ws.seen.length).toBe(8);
    expect(ws.seenVersion).toBe(1);
    ws.touch(2);
    expect(ws.seenVersion).toBe(1);
    ws.touch(0);
    expect(ws.seenVersion).toBe(2);
    expect(ws.ids()).toEqual([0, 2]);
    ws.busyNs[2] = 42;
    ws.touch(20);
    expect(ws.seen.length).toBe(21);
    expect(ws.busyNs[2]).toBe(42); // kept across growth
    expect(ws.ids()).toEqual([0, 2, 20]);
    expect([...ws.cap].every((c) => c === Infinity)).toBe(true);
    expect([...ws.prevEndT].every(Number.isNaN)).toBe(true);
    expect(ws.own.length).toBe(21);
    expect(ws.prev.length).toBe(21);
    ws.touch(21); // doubling beats id + 1
    expect(ws.seen.length).toBe(42);
  });

  test('a confirmed pickup makes an idle worker busy from its offset, capped at capFor; an end counts end - since', () => {
    const ws = new TimelineWorkers(capFor);
    const [a, b] = units(2);
    a.pickT = 100;
    ws.pickup(1, a, 100, false);
    expect(state(ws, 1)).toEqual({ busy: 1, since: 100, busyNs: 0, change: 100, cap: 1100, floor: 100, tentative: 0 });
    expect(ws.busyWorkers).toBe(1);
    expect(ws.known[1]).toBe(1);
    // The next pickup while busy: the stint goes on (since unchanged), cap of the new unit.
    b.pickT = 400;
    ws.pickup(1, b, 400, false);
    expect(state(ws, 1)).toMatchObject({ busy: 1, since: 100, cap: 1400, floor: 100 });
    expect(ws.busyWorkers).toBe(1);
    ws.ended(1, a, 450, true); // not what it owns now: nothing
    expect(ws.busy[1]).toBe(1);
    ws.ended(1, b, 600, true);
    expect(state(ws, 1)).toEqual({ busy: 0, since: 100, busyNs: 500, change: 600, cap: Infinity, floor: 600, tentative: 0 });
    expect(ws.own[1]).toBeNull();
    expect(ws.busyWorkers).toBe(0);
    ws.ended(1, b, 700, true); // ended twice: once
    ws.ended(-1, b, 700, true);
    ws.ended(99, b, 700, true);
    expect(ws.busyNs[1]).toBe(500);
  });

  test('exposure: floors rise to min(now, cap) for busy workers only; an end never lands before its floor', () => {
    const ws = new TimelineWorkers(capFor);
    const [a, b] = units(2);
    a.pickT = 0;
    ws.pickup(0, a, 0, false);
    ws.touch(1);
    ws.expose(500);
    expect(ws.floor[0]).toBe(500);
    expect(ws.floor[1]).toBe(0);
    ws.expose(300); // never back
    expect(ws.floor[0]).toBe(500);
    ws.expose(5000); // the cap stops it
    expect(ws.floor[0]).toBe(1000);
    ws.ended(0, a, 200, true); // the end line came later than what was exposed
    expect(ws.busyNs[0]).toBe(1000);
    expect(ws.change[0]).toBe(1000);
    // A pickup on a worker whose floor is ahead of the new pickup: the cap is at least the floor.
    b.pickT = -5000;
    ws.pickup(0, b, 1200, false);
    expect(ws.cap[0]).toBe(1200);
    expect(ws.floor[0]).toBe(1200);
  });

  test('a tentative pickup is capped at its own offset; its GPU_START confirms it and lifts the cap', () => {
    const ws = new TimelineWorkers(capFor);
    const [a] = units(1);
    a.pickT = 100;
    ws.pickup(0, a, 100, true);
    expect(state(ws, 0)).toMatchObject({ busy: 1, since: 100, cap: 100, tentative: 1 });
    ws.expose(900);
    expect(ws.floor[0]).toBe(100);
    ws.confirm(0, units(1)[0]); // another unit: nothing
    expect(ws.tentative[0]).toBe(1);
    ws.confirm(5, a);
    ws.confirm(0, a);
    expect(state(ws, 0)).toMatchObject({ tentative: 0, cap: 1100 });
    ws.expose(900);
    expect(ws.floor[0]).toBe(900);
  });

  test('a skip on an idle worker: the stint was never real, nothing counted', () => {
    const ws = new TimelineWorkers(capFor);
    const [a, other] = units(2);
    a.pickT = 100;
    ws.pickup(0, a, 100, true);
    ws.expose(5000);
    ws.skipped(0, other, true); // not its unit
    expect(ws.busy[0]).toBe(1);
    ws.skipped(0, a, true);
    expect(state(ws, 0)).toEqual({ busy: 0, since: 100, busyNs: 0, change: 100, cap: Infinity, floor: 100, tentative: 0 });
    expect(ws.busyWorkers).toBe(0);
  });

  test('a skip over a unit still running: the worker goes back to it, with its cap', () => {
    const ws = new TimelineWorkers(capFor);
    const [a, s] = units(2);
    a.pickT = 0;
    ws.pickup(0, a, 0, false);
    s.pickT = 300;
    ws.pickup(0, s, 300, true);
    expect(ws.prev[0]).toBe(a);
    expect(ws.cap[0]).toBe(300);
    ws.skipped(0, s, true);
    expect(ws.own[0]).toBe(a);
    expect(ws.prev[0]).toBeNull();
    expect(state(ws, 0)).toMatchObject({ busy: 1, since: 0, cap: 1000, tentative: 0 });
    ws.ended(0, a, 700, true);
    expect(ws.busyNs[0]).toBe(700);
  });

  test('a skip after the previous unit ended meanwhile: the stint ends where that unit did', () => {
    const ws = new TimelineWorkers(capFor);
    const [a, s] = units(2);
    a.pickT = 0;
    ws.pickup(0, a, 0, false);
    s.pickT = 300;
    ws.pickup(0, s, 300, true);
    ws.ended(0, a, 450, true); // the previous unit's end, while the pickup is tentative
    expect(ws.prevEndT[0]).toBe(450);
    expect(ws.prev[0]).toBeNull();
    expect(ws.busy[0]).toBe(1);
    a.end = END_DONE;
    ws.skipped(0, s, true);
    expect(state(ws, 0)).toMatchObject({ busy: 0, busyNs: 450, change: 450 });
    expect(Number.isNaN(ws.prevEndT[0])).toBe(true);
  });

  test('a skip after the previous unit ended unseen (not live, no end time): the stint ends at the skip pickup', () => {
    const ws = new TimelineWorkers(capFor);
    const [a, s] = units(2);
    a.pickT = 0;
    ws.pickup(0, a, 0, false);
    s.pickT = 300;
    ws.pickup(0, s, 300, true);
    a.end = END_DONE; // ended without this worker being told
    ws.skipped(0, s, true);
    expect(state(ws, 0)).toMatchObject({ busy: 0, busyNs: 300, change: 300 });
  });

  test('a second tentative pickup keeps the unit owned before the first; a confirmed one forgets it', () => {
    const ws = new TimelineWorkers(capFor);
    const [a, s1, s2, c] = units(4);
    a.pickT = 0;
    ws.pickup(0, a, 0, false);
    ws.pickup(0, s1, 100, true);
    ws.pickup(0, s2, 200, true);
    expect(ws.prev[0]).toBe(a);
    ws.pickup(0, c, 300, false);
    expect(ws.prev[0]).toBeNull();
    expect(ws.tentative[0]).toBe(0);
    // Tentative on an idle worker: nothing to go back to.
    ws.ended(0, c, 400, true);
    ws.pickup(0, s1, 500, true);
    expect(ws.prev[0]).toBeNull();
    expect(ws.since[0]).toBe(500);
  });

  test('not counting (a catch-up): state moves, no seconds', () => {
    const ws = new TimelineWorkers(capFor);
    const [a] = units(1);
    a.pickT = 0;
    ws.pickup(0, a, 0, false);
    ws.ended(0, a, 800, false);
    expect(state(ws, 0)).toMatchObject({ busy: 0, busyNs: 0, change: 800, floor: 800 });
    ws.creditUnseen(0, 900, 1000, false);
    expect(ws.busyNs[0]).toBe(0);
    expect(ws.floor[0]).toBe(800);
  });

  test('an end of an unseen pickup credits an idle worker [start, end] from its floor on, once', () => {
    const ws = new TimelineWorkers(capFor);
    ws.creditUnseen(3, 100, 600, true);
    expect(ws.seen[3]).toBe(1);
    expect(ws.busyNs[3]).toBe(500);
    expect(ws.floor[3]).toBe(600);
    ws.creditUnseen(3, 100, 600, true); // the same end again
    expect(ws.busyNs[3]).toBe(500);
    ws.creditUnseen(3, 400, 900, true); // overlapping: only the part after the floor
    expect(ws.busyNs[3]).toBe(800);
    expect(ws.floor[3]).toBe(900);
    ws.creditUnseen(3, 100, 200, true); // entirely before: nothing, floor kept
    expect(ws.busyNs[3]).toBe(800);
    expect(ws.floor[3]).toBe(900);
    // A busy worker is not credited (its own stint counts).
    const [a] = units(1);
    a.pickT = 1000;
    ws.pickup(3, a, 1000, false);
    ws.creditUnseen(3, 1000, 1500, true);
    expect(ws.busyNs[3]).toBe(800);
  });

  test('restart: stints end at what was exposed (within the cap), every worker forgotten', () => {
    const ws = new TimelineWorkers(capFor);
    const [a, b] = units(2);
    a.pickT = 0;
    b.pickT = 0;
    ws.pickup(0, a, 0, false);
    ws.pickup(1, b, 0, true);
    ws.touch(4);
    const v = ws.seenVersion;
    ws.restart(2500, true);
    expect(ws.busyNs[0]).toBe(1000); // capped at pickup + 1000
    expect(ws.busyNs[1]).toBe(0); // tentative: capped at its pickup
    expect(ws.busyWorkers).toBe(0);
    expect(ws.seenVersion).toBe(v + 3);
    expect(ws.ids()).toEqual([]);
    expect([...ws.known].every((k) => k === 0)).toBe(true);
    expect([...ws.tentative].every((k) => k === 0)).toBe(true);
    expect(ws.own.every((o) => o === null)).toBe(true);
    expect(ws.prev.every((o) => o === null)).toBe(true);
    expect([...ws.cap].every((c) => c === Infinity)).toBe(true);
    // Not counting: the stint ends, nothing added.
    const [c] = units(1);
    c.pickT = 3000;
    ws.pickup(0, c, 3000, false);
    ws.restart(3500, false);
    expect(ws.busyNs[0]).toBe(1000);
    expect(ws.busy[0]).toBe(0);
    expect(c.end).toBe(END_NONE);
  });
});

test('while a pickup is tentative, the end of a unit that is neither owned nor owned before changes nothing', () => {
  const ws = new TimelineWorkers(capFor);
  const [a, s, x] = units(3);
  a.pickT = 0;
  ws.pickup(0, a, 0, false);
  s.pickT = 300;
  ws.pickup(0, s, 300, true);
  ws.ended(0, x, 400, true); // another unit's end, named with this worker
  expect(ws.prev[0]).toBe(a);
  expect(Number.isNaN(ws.prevEndT[0])).toBe(true);
  ws.skipped(0, s, true); // back to a, still running
  expect(ws.own[0]).toBe(a);
  expect(ws.busy[0]).toBe(1);
  // Not tentative: the end of the unit owned before changes nothing either.
  const ws2 = new TimelineWorkers(capFor);
  ws2.pickup(0, a, 0, false);
  ws2.pickup(0, s, 300, false);
  ws2.ended(0, a, 400, true);
  expect(Number.isNaN(ws2.prevEndT[0])).toBe(true);
  expect(ws2.busy[0]).toBe(1);
});
