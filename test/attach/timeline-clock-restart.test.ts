/**
 * Issue 23: the TIMELINE clock's restart rules (src/engine/sources/attach/timeline-clock.ts)
 * at their edges, on scripted offsets and read times: a restart believed only when the new
 * process can have started after the old run's latest claimed line (not before it; less
 * RESTART_SLACK_NS at most once a minute, RESTART_OVERLAP_GAP_NS), the quick-restart `stale`
 * rule (a live line of a file going back by more than STALE_BACK_MS that lands before what the
 * reads vouch for, less the lag), history lines never judged, and `inVouchedPast` by its
 * contract. Expectations are the header's rules (and docs/hostile-inputs.md row 20.1,
 * "two daemons' logs interleaved …") applied to the script's numbers by hand.
 */
import { RESTART_OVERLAP_GAP_NS, RESTART_SLACK_NS, STALE_BACK_MS, TimelineClock } from '../../src/engine/sources/attach/timeline-clock';

const MS = 1e6;
const S = 1e9;
const R0 = 7_000_000 * S; // the exporter's hrtime at the first daemon's offset 0
const fileClock = (maxLeadMs?: number) => new TimelineClock(() => false, () => 0, maxLeadMs);
const stdinClock = () => new TimelineClock(() => true, () => 0);

/** A live run read on time: offsets 0 and `last` (ms), the first read at `startHr`. The run's latest claim is startHr + last ms. */
function onTimeRun(c: TimelineClock, startHr: number, last: number): void {
  c.accept(0, true, startHr);
  c.accept(last, true, startHr + last * MS);
}

test('the constants the rules below are computed with', () => {
  expect([RESTART_SLACK_NS, RESTART_OVERLAP_GAP_NS, STALE_BACK_MS]).toEqual([5 * S, 60 * S, 100]);
});

describe('offsets back: a restart only if the new process can have started after the old run’s latest line', () => {
  test('overlap exactly the 5 s slack: believed; 1 ns more: refused (ahead)', () => {
    const c = fileClock();
    onTimeRun(c, R0, 50_000); // latest claim R0 + 50 s
    // Offset 5500 read at R0 + 50.5 s: started at R0 + 45 s, 5 s before the latest claim.
    expect(c.check(5_500, true, R0 + 50_500 * MS - 1)).toBe('ahead'); // read 1 ns sooner: 5 s + 1 ns, refused
    const d = fileClock();
    onTimeRun(d, R0, 50_000);
    expect(d.check(5_500, true, R0 + 50_500 * MS)).toBe('restart');
  });

  test('within the slack at most once a minute: again exactly 60 s after the last one, not 1 ns sooner', () => {
    const c = fileClock();
    onTimeRun(c, R0, 50_000);
    const x = R0 + 50_500 * MS;
    expect(c.check(5_500, true, x)).toBe('restart'); // overlap 5 s (in the slack): the minute starts at x
    c.endRun();
    c.accept(5_500, true, x); // the new run: offset 0 at x - 5.5 s
    const z = x + 60 * S;
    c.accept(65_000, true, z - 0.5 * S); // on time: latest claim z - 0.5 s
    // Offset 1000 read at z (or 1 ns sooner): started at z - 1 s, 0.5 s before the latest claim.
    expect(c.check(1_000, true, z - 1)).toBe('ahead');
    expect(c.check(1_000, true, z)).toBe('restart');
  });

  test('a new process that started after the latest claim (or exactly at it) is believed within the minute of an overlapping restart', () => {
    const c = fileClock();
    onTimeRun(c, R0, 50_000);
    const x = R0 + 50_500 * MS;
    expect(c.check(5_500, true, x)).toBe('restart'); // overlapping: the minute starts at x
    c.endRun();
    c.accept(5_500, true, x);
    c.accept(30_000, true, x + 24_500 * MS); // latest claim x + 24.5 s
    // Offset 1000 read at x + 30 s: started at x + 29 s, 4.5 s after the latest claim.
    expect(c.check(1_000, true, x + 30 * S)).toBe('restart');
    // Read at x + 25.5 s: started exactly at the latest claim ("not before that line's claimed time").
    expect(c.check(1_000, true, x + 25_500 * MS)).toBe('restart');
    // 1 ms earlier: it overlaps by 1 ms, and the minute is not over: refused.
    expect(c.check(1_000, true, x + 25_499 * MS)).toBe('ahead');
  });

  test('a restart that does not overlap claims nothing twice: it does not use up the minute', () => {
    for (const startAfterNs of [0, 2 * S]) {
      const c = fileClock();
      onTimeRun(c, R0, 50_000);
      // Offset 1000 read at R0 + 51 s + startAfter: started at R0 + 50 s + startAfter, at or after the latest claim.
      const x = R0 + 51 * S + startAfterNs;
      expect(c.check(1_000, true, x)).toBe('restart');
      c.endRun();
      c.accept(1_000, true, x);
      c.accept(20_000, true, x + 19 * S); // latest claim x + 19 s
      // 20 s later, overlapping by 1 s (in the slack): the first overlapping restart of the minute.
      expect(c.check(1_000, true, x + 19 * S)).toBe('restart');
    }
  });

  test('with the lead tolerance unbounded (Number.MAX_SAFE_INTEGER), offsets back are a restart however much they overlap', () => {
    // Offset 40000 read at R0 + 50.001 s: started at R0 + 10.001 s, ~40 s before the latest claim.
    const bounded = fileClock();
    onTimeRun(bounded, R0, 50_000);
    expect(bounded.check(40_000, true, R0 + 50_001 * MS)).toBe('ahead'); // another daemon in the log
    const unbounded = fileClock(Number.MAX_SAFE_INTEGER);
    onTimeRun(unbounded, R0, 50_000);
    expect(unbounded.check(40_000, true, R0 + 50_001 * MS)).toBe('restart');
  });

  test('history (a log read from its start) is not judged: a restart in it is believed however the read times fall', () => {
    const c = fileClock();
    // The whole history read at R0: offsets 0 and 50000, then a new daemon's 40000.
    c.accept(0, false, R0);
    c.accept(50_000, false, R0);
    expect(c.check(40_000, false, R0)).toBe('restart');
  });
});

describe('a quick restart told by the reads (offsets back by 100 ms to 1 s)', () => {
  test('landing before what the reads vouch for: `stale` (held) when it can have started at or after the latest claim; `ok` (the old run’s line printed late) when not', () => {
    const c = fileClock();
    onTimeRun(c, R0, 5_000); // latest claim R0 + 5 s; lateness 0: lag 1 s
    c.eofFactHr = R0 + 20 * S; // a read found the file's end at R0 + 20 s: vouches up to R0 + 19 s
    // Offset 4500 (back by 500 ms) read at R0 + 9.5 s: started at R0 + 5 s, exactly the latest claim.
    expect(c.check(4_500, true, R0 + 9_500 * MS)).toBe('stale');
    // Read 1 ms sooner: it would have started 1 ms before the old run's latest line: the old run's.
    expect(c.check(4_500, true, R0 + 9_499 * MS)).toBe('ok');
    // Back by exactly 100 ms: not back enough (eprintln! jitter).
    expect(c.check(5_000 - STALE_BACK_MS, true, R0 + 100 * S)).toBe('ok');
    expect(c.check(5_000 - STALE_BACK_MS - 1, true, R0 + 100 * S)).toBe('stale');
  });

  test('after a run read only as history: the held verdict still comes from that run’s start', () => {
    const c = fileClock();
    c.accept(0, false, R0);
    c.accept(5_000, false, R0); // history read at R0: offset 0 at R0 - 5 s, latest claim R0
    c.eofFactHr = R0 + 10 * S;
    // Offset 4500 live, read at R0 + 10 s: started at R0 + 5.5 s, after the latest claim; before what the reads vouch for (R0 + 9 s).
    expect(c.check(4_500, true, R0 + 10 * S)).toBe('stale');
  });
});

describe('inVouchedPast: a live line of a file at this offset lands before what the reads vouch for (less the lag)', () => {
  test('at the bound: not before it; 1 ms earlier: before it', () => {
    const c = fileClock();
    c.accept(0, true, R0); // offset 0 at R0; lag 1 s
    c.eofFactHr = R0 + 10 * S; // vouched up to R0 + 9 s: offset 9000
    expect(c.inVouchedPast(9_000, true)).toBe(false);
    expect(c.inVouchedPast(8_999, true)).toBe(true);
    expect(c.inVouchedPast(0, true)).toBe(true); // the run's only offset so far is 0
  });

  test('never for history, standard input, or with no run to place the offset in', () => {
    const c = fileClock();
    c.accept(0, true, R0);
    c.accept(1_000, true, R0 + 1 * S);
    c.eofFactHr = R0 + 10 * S;
    expect(c.inVouchedPast(500, true)).toBe(true);
    expect(c.inVouchedPast(500, false)).toBe(false); // history: read long after it was written
    c.endRun(); // a restart ended the run: the next line starts a new one
    expect(c.inVouchedPast(500, true)).toBe(false);
    const s = stdinClock();
    s.accept(0, true, R0);
    s.accept(1_000, true, R0 + 1 * S);
    s.eofFactHr = R0 + 10 * S;
    expect(s.inVouchedPast(500, true)).toBe(false); // standard input has no end to find
    expect(s.inVouchedPast(500, false)).toBe(false);
  });
});
