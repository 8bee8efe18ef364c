/**
 * The TIMELINE clock (src/engine/sources/attach/timeline-clock.ts) on scripted offsets and read
 * times: restart detection at its bound, the lead bound at its edge, re-anchoring a run
 * whose every line is late by the same amount (and not one running fast), a new run never
 * overlapping the old one, lateness driving the exposure lag. Expectations are differences
 * of the script's numbers. Killed Stryker survivors of timeline-clock.ts.
 */
import { DEFAULT_MAX_LEAD_MS, RESTART_BACK_MS, TimelineClock } from '../../src/engine/sources/attach/timeline-clock';

const MS = 1e6;
const R0 = 5_000_000 * MS; // the exporter's hrtime at the daemon's offset 0
let stdinNow = 0;
const fileClock = () => new TimelineClock(() => false, () => stdinNow);
const stdinClock = () => new TimelineClock(() => true, () => stdinNow);

test('offsets going back by more than 1 s are a restart; by exactly 1 s (eprintln! jitter) they are not', () => {
  const c = fileClock();
  expect(c.check(0, true, R0)).toBe('ok'); // the first line of a run is never a restart
  c.accept(5000, true, R0 + 5000 * MS);
  expect(c.check(5000 - RESTART_BACK_MS, true, R0 + 5001 * MS)).toBe('ok');
  expect(c.check(5000 - RESTART_BACK_MS - 1, true, R0 + 5001 * MS)).toBe('restart');
  expect(c.check(5001, true, R0 + 5001 * MS)).toBe('ok');
});

test('a new run after a restart starts after everything the old one exposed, and keeps its own differences', () => {
  const c = fileClock();
  const t1 = c.accept(1000, true, R0 + 1000 * MS);
  const t2 = c.accept(9000, true, R0 + 9000 * MS);
  expect(t2 - t1).toBe(8000 * MS);
  expect(c.runs).toBe(1);
  c.endRun();
  expect(c.maxOffset).toBe(-1);
  // The new daemon's offset 100 read at what would map *before* the old run's last line.
  const n1 = c.accept(100, true, R0 + 2000 * MS);
  expect(c.runs).toBe(2);
  expect(n1).toBe(t2 + 1 * MS + 100 * MS); // its offset 0 is 1 ms after the old run's last line
  const n2 = c.accept(600, true, R0 + 2500 * MS);
  expect(n2 - n1).toBe(500 * MS);
  expect(c.offsetOf(n2)).toBe(600);
  expect(c.toHr(n2) - c.toHr(n1)).toBe(500 * MS);
});

test('maxOffset and the last line time follow the largest offset, not the latest line', () => {
  const c = fileClock();
  c.accept(1000, true, R0 + 1000 * MS);
  c.accept(3000, true, R0 + 3000 * MS);
  expect(c.maxOffset).toBe(3000);
  const late = c.accept(2500, true, R0 + 3001 * MS); // jitter: an earlier offset printed later
  expect(c.maxOffset).toBe(3000);
  expect(c.lastLineNs - late).toBe(500 * MS);
});

test('a live line may lead the exporter by the tolerance, not more', () => {
  const c = fileClock();
  c.accept(0, true, R0); // the reference: offset 0 read at R0
  const lead = DEFAULT_MAX_LEAD_MS;
  expect(c.check(100_000, true, R0 + (100_000 - lead) * MS)).toBe('ok');
  expect(c.check(100_000, true, R0 + (100_000 - lead - 1) * MS)).toBe('ahead');
  expect(c.check(100_000, false, R0)).toBe('ok'); // history is not judged
});

test('a run anchored on a late first line is re-anchored after 20 lines and 30 s ahead by about the same amount', () => {
  const c = fileClock();
  c.accept(0, true, R0 + 60_000 * MS); // the first line came 60 s late (a journal backlog)
  // Every later line is on time (+/- 1 s): 60 s "ahead" of that reference.
  const verdicts: string[] = [];
  for (let i = 1; i <= 20; i++) {
    const off = 10_000 + i * 2000; // 2 s apart: the 20th is 38 s after the first
    verdicts.push(c.check(off, true, R0 + off * MS + (i % 2) * 1000 * MS));
  }
  expect(verdicts.slice(0, 19).every((v) => v === 'ahead')).toBe(true);
  expect(verdicts[19]).toBe('restart');
  // Counting starts again after a re-anchor.
  expect(c.check(60_000, true, R0 + 60_000 * MS)).toBe('ahead');
});

test('not re-anchored: fewer than 20 lines, less than 30 s, a spread over 5 s, or a good line between', () => {
  const run = (n: number, gapMs: number, spreadMs: (i: number) => number, goodAt = -1) => {
    const c = fileClock();
    c.accept(0, true, R0 + 60_000 * MS);
    const v: string[] = [];
    for (let i = 1; i <= n; i++) {
      if (i === goodAt) c.check(0, true, R0 + 60_000 * MS);
      const off = 10_000 + i * gapMs;
      v.push(c.check(off, true, R0 + off * MS + spreadMs(i) * MS));
    }
    return v;
  };
  expect(run(19, 2000, () => 0)).not.toContain('restart');
  expect(run(20, 1000, () => 0)).not.toContain('restart'); // 19 s between the first and the 20th
  expect(run(25, 2000, (i) => (i % 2 ? 0 : -6000))).not.toContain('restart'); // lead spread 6 s: fast offsets
  expect(run(25, 2000, (i) => (i % 2 ? -6000 : 0))).not.toContain('restart'); // the same, the larger lead first
  expect(run(20, 2000, (i) => (i % 2 ? 0 : -5000))).toContain('restart'); // exactly 5 s: still one daemon
  expect(run(20, 2000, () => 0, 10)).not.toContain('restart'); // a good line resets the count
  expect(run(21, 2000, () => 0, 2)).toContain('restart'); // ... and it starts again from there
});

test('lateness of live lines sets the exposure lag (at least 1 s), decaying; history does not', () => {
  const c = stdinClock();
  c.accept(0, true, R0);
  c.accept(1000, false, R0 + 9000 * MS); // history read 8 s late: not lateness
  expect(c.lagNs()).toBe(1e9);
  c.accept(2000, true, R0 + 2800 * MS); // 800 ms late
  expect(c.lagNs()).toBeCloseTo(1600 * MS, -3);
  c.accept(3000, true, R0 + 3000 * MS); // on time: the worst decays slowly
  expect(c.lagNs()).toBeLessThan(1600 * MS);
  expect(c.lagNs()).toBeGreaterThan(1599 * MS);
  stdinNow = R0 + 10_000 * MS;
  expect(c.readUntilHr()).toBe(stdinNow - c.lagNs());
});

test('before any line the clock is what was last exposed; after, it advances with the read point, never back', () => {
  const c = fileClock();
  expect(c.nowNs()).toBe(0);
  expect(c.peekNs()).toBe(0);
  const t = c.accept(1000, true, R0 + 1000 * MS);
  c.lastEofHr = R0 + 5000 * MS;
  expect(c.peekNs()).toBe(t + (4000 - 1000) * MS); // read to 5000, less the 1 s lag
  expect(c.nowNs()).toBe(t + 3000 * MS);
  c.lastEofHr = R0 + 4000 * MS;
  expect(c.nowNs()).toBe(t + 3000 * MS);
});
