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

describe('issue 23: survivors of the timeline-clock.ts Stryker run', () => {
  test('the first run maps its lines onto the exporter’s hrtime: a line read on time is at its read time, and maps back to it', () => {
    const c = fileClock();
    const t = c.accept(1000, true, R0 + 1000 * MS);
    expect(t).toBe(R0 + 1000 * MS);
    expect(c.toHr(t)).toBe(R0 + 1000 * MS);
    const t2 = c.accept(4000, true, R0 + 4000 * MS);
    expect(c.toHr(t2)).toBe(R0 + 4000 * MS);
    // A new run whose base is lifted past the old run's last line: its own lines, read on
    // time, still map back to the hrtime they were read at.
    c.endRun();
    const n1 = c.accept(100, true, R0 + 2000 * MS);
    expect(n1).toBe(t2 + 1 * MS + 100 * MS);
    expect(c.toHr(n1)).toBe(R0 + 2000 * MS);
    const n2 = c.accept(700, true, R0 + 2600 * MS);
    expect(c.toHr(n2)).toBe(R0 + 2600 * MS);
  });

  test('the first line of the first run is at its read time even when its offset is larger than the exporter’s hrtime (a daemon up longer than this host)', () => {
    const c = fileClock();
    const readHr = 3000 * MS; // this host's hrtime: 3 s
    const t = c.accept(10_000, true, readHr); // the daemon's offset: 10 s
    expect(t).toBe(readHr);
    expect(c.toHr(t)).toBe(readHr);
    expect(c.accept(10_500, true, readHr + 500 * MS) - t).toBe(500 * MS);
  });

  test('the epoch is the earliest estimate: a first line read late is corrected by a later line read on time', () => {
    const c = fileClock();
    c.accept(1000, true, R0 + 3000 * MS); // read 2 s late: epoch estimate R0 + 2 s
    c.accept(5000, true, R0 + 5000 * MS); // on time: the daemon's offset 0 was at R0
    c.lastEofHr = R0 + 10_000 * MS; // the file read to its end at R0 + 10 s: daemon offset 10 000
    // Exposed up to offset 10 000 less the lag (1 s: each line's lateness against the earliest
    // estimate when it came is 0).
    expect(c.lagNs()).toBe(1e9);
    expect(c.offsetOf(c.nowNs())).toBe(9000);
  });

  test('the lead bound keeps the first live line’s epoch: offsets running faster than real time are refused once they lead by more than 30 s', () => {
    const c = fileClock();
    c.accept(0, true, R0);
    // 20 s of offsets in 1 s of real time: 19 s ahead of the first line's epoch, within 30 s.
    expect(c.check(20_000, true, R0 + 1000 * MS)).toBe('ok');
    c.accept(20_000, true, R0 + 1000 * MS);
    // Another 20 s in 1 s: 38 s ahead of the first line's epoch (19 s of the previous line's).
    expect(c.check(40_000, true, R0 + 2000 * MS)).toBe('ahead');
  });

  test('re-anchored when the 20th held line comes exactly 30 s after the first', () => {
    const c = fileClock();
    c.accept(0, true, R0 + 60_000 * MS); // the first line 60 s late
    const v: string[] = [];
    for (let i = 1; i <= 19; i++) {
      const off = 10_000 + i * 1000;
      v.push(c.check(off, true, R0 + off * MS)); // on time: 60 s ahead of the reference
    }
    const last = 10_000 + 1000 + 30_000; // 30 s after the first held line (offset 11 000)
    v.push(c.check(last, true, R0 + last * MS));
    expect(v.slice(0, 19).every((x) => x === 'ahead')).toBe(true);
    expect(v[19]).toBe('restart');
  });

  test('the worst lateness halves in ~7000 on-time lines, and the lag is back to its 1 s floor after 20 000', () => {
    const c = stdinClock();
    c.accept(0, true, R0);
    c.accept(1000, true, R0 + 3000 * MS); // 2 s late: lag 4 s
    expect(c.lagNs()).toBe(4e9);
    c.accept(2000, true, R0 + 4000 * MS); // as late as the worst: the worst stays, no decay
    expect(c.lagNs()).toBe(4e9);
    let off = 2000;
    for (let i = 0; i < 7000; i++) c.accept(++off, true, R0 + off * MS);
    // 4 s × 0.9999^7000 ≈ 1.99 s
    expect(c.lagNs()).toBeGreaterThan(1.9e9);
    expect(c.lagNs()).toBeLessThan(2.1e9);
    for (let i = 0; i < 13_000; i++) c.accept(++off, true, R0 + off * MS);
    expect(c.lagNs()).toBe(1e9); // 4 s × 0.9999^20000 ≈ 0.54 s: under the floor
  });
});
