/**
 * The TIMELINE scanner on its own (timeline-scan.ts): which records it finds in log text,
 * whole or torn. cuzk writes a TIMELINE line with `eprintln!` (engine.rs `timeline_event`),
 * one write(2) per format piece, so where stderr and the tracing subscriber's stdout share a
 * stream, a tracing line can land inside it; the scanner puts such a line back together.
 * Expectations are worked out from that format by hand (the record each log should give),
 * not read off the code.
 */
import fc from 'fast-check';
import { TimelineScanner, type ScanSink } from '../../src/engine/sources/attach/timeline-scan';
import { newRecord, parseTimeline, TIMELINE_MARK } from '../../src/engine/sources/attach/timeline-parser';

interface Seen {
  records: string[];
  /** The exact text s[a, b) of each record applied. */
  texts: string[];
  tornFlags: boolean[];
  history: boolean[];
  bad: string[];
  torn: string[];
  overlong: number;
}

/** A scanner whose sink parses with the real parser and writes down what it was handed. */
function scanner(maxLineBytes = 4096): { scan: (text: string, history?: boolean) => void; seen: Seen; pending: () => number } {
  const seen: Seen = { records: [], texts: [], tornFlags: [], history: [], bad: [], torn: [], overlong: 0 };
  const r = newRecord();
  const sink: ScanSink = {
    record(s, a, b, history, _readHr, torn) {
      // The ScanSink contract: a candidate is a range of s starting at `TIMELINE,`.
      if (!(a >= 0 && a <= b && b <= s.length && s.startsWith(TIMELINE_MARK, a))) throw new Error(`record() handed a non-candidate [${a}, ${b}) of ${JSON.stringify(s)}`);
      const why = parseTimeline(s, a, b, r);
      if (why !== null) return why;
      const detail = [r.worker >= 0 ? `w${r.worker}` : '', r.partition >= 0 ? `p${r.partition}` : '', r.ms >= 0 ? `ms${r.ms}` : '', r.kind ?? ''].filter((x) => x).join(' ');
      seen.records.push(`${r.offsetMs} ${r.event} ${r.jobId}${detail ? ' ' + detail : ''}`);
      seen.texts.push(s.slice(a, b));
      seen.tornFlags.push(torn);
      seen.history.push(history);
      return null;
    },
    bad(why, s, a, b) {
      seen.bad.push(`${why}: ${s.slice(a, b)}`);
    },
    torn(head) {
      seen.torn.push(head);
    },
    overlong() {
      seen.overlong++;
    },
  };
  const sc = new TimelineScanner(sink, maxLineBytes);
  return { scan: (text, history = false) => sc.scan(text, history, 0), seen, pending: () => sc.pendingBytes };
}

// Event codes as the parser numbers them, through a parse (not hard-coded).
function code(name: string): number {
  const r = newRecord();
  const detail = name === 'GPU_END' ? 'worker=0,gpu_ms=1' : name === 'SYNTH_START' ? 'kind=x' : 'worker=0';
  expect(parseTimeline(`TIMELINE,1,${name},j,${detail}`, 0, 9 + 2 + name.length + 3 + detail.length, r)).toBeNull();
  return r.event;
}
const END = code('GPU_END');
const PICKUP = code('GPU_PICKUP');

const COLOUR_INFO = '\x1b[2m2026-12-01T10:00:00.123456Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mcuzk_core::engine\x1b[0m: GPU_TIMING hot_path worker_id=1';
const PLAIN_INFO = '2026-12-01T10:00:00.123456Z  INFO cuzk_core::engine: GPU_TIMING hot_path worker_id=1';

test('whole lines among other output: each TIMELINE line once, nothing torn; CRLF endings read as LF', () => {
  const { scan, seen } = scanner();
  scan(`${PLAIN_INFO}\nTIMELINE,100,GPU_PICKUP,job-a,worker=2\nnoise\r\nTIMELINE,900,GPU_END,job-a,worker=2,gpu_ms=800\r\n${COLOUR_INFO}\n`);
  expect(seen.records).toEqual([`100 ${PICKUP} job-a w2`, `900 ${END} job-a w2 ms800`]);
  expect(seen.tornFlags).toEqual([false, false]);
  expect(seen.bad).toEqual([]);
  expect(seen.torn).toEqual([]);
});

test('a coloured tracing line inside a TIMELINE line (cut at its ESC): the line is put back together from the next one', () => {
  const { scan, seen, pending } = scanner();
  scan(`TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n`);
  // Held, not applied: the head alone is not a record.
  expect(seen.records).toEqual([]);
  expect(pending()).toBe('TIMELINE,8123,GPU_END,job-1'.length);
  scan(',worker=1,partition=3,gpu_ms=912\n');
  expect(seen.records).toEqual([`8123 ${END} job-1 w1 p3 ms912`]);
  expect(seen.tornFlags).toEqual([true]);
  expect(pending()).toBe(0);
  expect(seen.torn).toEqual([]);
  expect(seen.bad).toEqual([]);
});

test('an intruder after a complete record (the detail is one piece): the record is used as is, the next line is read on its own', () => {
  const { scan, seen } = scanner();
  scan(`TIMELINE,10,GPU_PICKUP,job-2,worker=4${COLOUR_INFO}\nTIMELINE,11,GPU_START,job-2,worker=4\n`);
  expect(seen.records[0]).toBe(`10 ${PICKUP} job-2 w4`);
  expect(seen.records).toHaveLength(2);
  expect(seen.tornFlags).toEqual([true, false]);
  expect(seen.torn).toEqual([]);
});

test('colourless tracing (cut at its ISO timestamp) glued into a line is put back together too', () => {
  const { scan, seen } = scanner();
  scan(`TIMELINE,8123,GPU_END,job-1${PLAIN_INFO}\n,worker=1,gpu_ms=5\n`);
  expect(seen.records).toEqual([`8123 ${END} job-1 w1 ms5`]);
  expect(seen.torn).toEqual([]);
  expect(seen.bad).toEqual([]);
});

test('colourless tracing after a complete record: the record, without the tracing text', () => {
  const { scan, seen } = scanner();
  scan(`TIMELINE,12,GPU_PICKUP,job-3,worker=1${PLAIN_INFO}\n`);
  expect(seen.records).toEqual([`12 ${PICKUP} job-3 w1`]);
  expect(seen.bad).toEqual([]);
});

test('a malformed line with no intruder is one bad line, not a held head', () => {
  const { scan, seen, pending } = scanner();
  scan('TIMELINE,abc,GPU_END,job-1,worker=1,gpu_ms=5\nTIMELINE,5,NEW_EVENT,job-1,x=1\n');
  expect(seen.records).toEqual([]);
  expect(seen.bad).toEqual(['malformed: TIMELINE,abc,GPU_END,job-1,worker=1,gpu_ms=5', 'unknown_event: TIMELINE,5,NEW_EVENT,job-1,x=1']);
  expect(pending()).toBe(0);
});

test('a journal prefix on both pieces: the continuation is read after its prefix, and the job id is the head\'s', () => {
  const { scan, seen } = scanner();
  const prefix = 'Dec 01 10:00:00 gpu-box cuzk[4242]: ';
  scan(`${prefix}TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n${prefix},worker=1,partition=3,gpu_ms=912\n`);
  expect(seen.records).toEqual([`8123 ${END} job-1 w1 p3 ms912`]);
  expect(seen.torn).toEqual([]);
});

test('torn twice: the head waits for a second piece', () => {
  const { scan, seen } = scanner();
  scan(`TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n,worker=1${COLOUR_INFO}\n,partition=3,gpu_ms=912\n`);
  expect(seen.records).toEqual([`8123 ${END} job-1 w1 p3 ms912`]);
  expect(seen.torn).toEqual([]);
});

test('more than 8 pieces: given up (counted torn) and the line after read on its own', () => {
  const { scan, seen } = scanner();
  let text = `TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n`;
  // Each continuation is torn again; the 9th is one too many.
  for (let i = 0; i < 9; i++) text += `,x${i}=1${COLOUR_INFO}\n`;
  text += 'TIMELINE,9000,GPU_PICKUP,job-2,worker=0\n';
  scan(text);
  expect(seen.torn).toHaveLength(1);
  expect(seen.torn[0].startsWith('TIMELINE,8123,GPU_END,job-1,x0=1')).toBe(true);
  expect(seen.records).toEqual([`9000 ${PICKUP} job-2 w0`]);
});

test('a new TIMELINE line before the rest came: the head is counted torn, the new line applied', () => {
  const { scan, seen, pending } = scanner();
  scan(`TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\nTIMELINE,8124,GPU_PICKUP,job-2,worker=0\n`);
  expect(seen.torn).toEqual(['TIMELINE,8123,GPU_END,job-1']);
  expect(seen.records).toEqual([`8124 ${PICKUP} job-2 w0`]);
  expect(pending()).toBe(0);
});

test('a continuation that completes nothing: the head is counted torn and the line read on its own', () => {
  const { scan, seen } = scanner();
  scan(`TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\nsomething else entirely\nTIMELINE,9,GPU_PICKUP,job-3,worker=0\n`);
  expect(seen.torn).toEqual(['TIMELINE,8123,GPU_END,job-1']);
  expect(seen.records).toEqual([`9 ${PICKUP} job-3 w0`]);
});

test('bounds: a line over the limit is dropped (counted) whole; a head that would grow past it is given up', () => {
  const long = scanner(64);
  long.scan(`TIMELINE,1,GPU_PICKUP,job-${'x'.repeat(80)},worker=0\nTIMELINE,2,GPU_PICKUP,j,worker=0\n`);
  expect(long.seen.overlong).toBe(1);
  expect(long.seen.records).toEqual([`2 ${PICKUP} j w0`]);
  // The limit counts the line's own prefix too (the whole line is what is held in memory).
  const prefixed = scanner(64);
  prefixed.scan(`${'p'.repeat(40)}: TIMELINE,2,GPU_PICKUP,job-4,worker=0\n`);
  expect(prefixed.seen.overlong).toBe(1);
  const torn = scanner(64);
  // Each line under the limit (27 + 14 and 60 bytes), the two together over it.
  torn.scan(`TIMELINE,8123,GPU_END,job-1\x1b[2m2026\x1b[0m x\n,worker=1,gpu_ms=912${'9'.repeat(40)}\n`);
  expect(torn.seen.records).toEqual([]);
  expect(torn.seen.torn).toEqual(['TIMELINE,8123,GPU_END,job-1']);
});

test('history and live: a head read as history stays history when its rest comes live', () => {
  const { scan, seen } = scanner();
  scan(`TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n`, true);
  scan(',worker=1,gpu_ms=912\n', false);
  expect(seen.records).toEqual([`8123 ${END} job-1 w1 ms912`]);
  expect(seen.history).toEqual([true]);
});

// ---- Edges the Stryker run found untested (issue 23; test/mutation/README.md) ----

const START = code('GPU_START');
const PREFIX = 'Dec 01 10:00:00 gpu-box cuzk[4242]: ';
/** A short coloured intruder, for lines that must stay under a small limit. */
const SHORT_CUT = '\x1b[2m2026\x1b[0m x';

test('a whole tracing line between two pieces, first in the next read: the head waits on for its rest', () => {
  const { scan, seen, pending } = scanner();
  scan(`TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n`);
  scan(`${COLOUR_INFO}\n,worker=1,gpu_ms=912\n`);
  expect(seen.records).toEqual([`8123 ${END} job-1 w1 ms912`]);
  expect(seen.texts).toEqual(['TIMELINE,8123,GPU_END,job-1,worker=1,gpu_ms=912']);
  expect(seen.torn).toEqual([]);
  expect(pending()).toBe(0);
});

test('an empty line where the rest should be, first in a read: the head is counted torn (tracing after it is not its rest)', () => {
  const { scan, seen, pending } = scanner();
  scan(`TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n`);
  scan(`\n${COLOUR_INFO}\n`);
  expect(seen.torn).toEqual(['TIMELINE,8123,GPU_END,job-1']);
  expect(pending()).toBe(0);
  expect(seen.records).toEqual([]);
});

test('a timestamp inside a record (a job id holding one) is not tracing: the line, and a torn line\'s rest, are read whole', () => {
  const { scan, seen } = scanner();
  scan('TIMELINE,5,GPU_PICKUP,job-2026-12-01T10:00:00,worker=1\n');
  // Torn after the event; the rest carries the job id with the timestamp.
  scan(`TIMELINE,6,GPU_START${COLOUR_INFO}\n,job-2026-12-01T10:00:00,worker=1\n`);
  expect(seen.records).toEqual([`5 ${PICKUP} job-2026-12-01T10:00:00 w1`, `6 ${START} job-2026-12-01T10:00:00 w1`]);
  expect(seen.tornFlags).toEqual([false, true]);
  expect(seen.bad).toEqual([]);
  expect(seen.torn).toEqual([]);
});

test('colourless tracing only on a later line, or after a line that is not a record for another reason than its form: a bad line, nothing held', () => {
  const { scan, seen, pending } = scanner();
  scan(`TIMELINE,abc,GPU_END,job-1,worker=1,gpu_ms=5\n${PLAIN_INFO}\n`);
  expect(seen.bad).toEqual(['malformed: TIMELINE,abc,GPU_END,job-1,worker=1,gpu_ms=5']);
  expect(pending()).toBe(0);
  scan(`TIMELINE,5,NEW_EVENT,job-1,x=1${PLAIN_INFO}\n`);
  expect(seen.bad).toEqual(['malformed: TIMELINE,abc,GPU_END,job-1,worker=1,gpu_ms=5', `unknown_event: TIMELINE,5,NEW_EVENT,job-1,x=1${PLAIN_INFO}`]);
  expect(pending()).toBe(0);
  scan('TIMELINE,6,GPU_PICKUP,job-2,worker=0\n');
  expect(seen.records).toEqual([`6 ${PICKUP} job-2 w0`]);
  expect(seen.torn).toEqual([]);
});

test('a complete record before tracing is handed on without the tracing (flagged torn), even where the whole line would parse', () => {
  const { scan, seen } = scanner();
  // An unknown key's value would swallow the coloured text: still cut at its ESC.
  scan(`TIMELINE,10,GPU_PICKUP,job-2,worker=4,note=x${COLOUR_INFO}\n`);
  scan(`TIMELINE,12,GPU_PICKUP,job-3,worker=1${PLAIN_INFO}\n`);
  expect(seen.texts).toEqual(['TIMELINE,10,GPU_PICKUP,job-2,worker=4,note=x', 'TIMELINE,12,GPU_PICKUP,job-3,worker=1']);
  expect(seen.tornFlags).toEqual([true, true]);
  expect(seen.bad).toEqual([]);
});

test('CRLF: a bad line is reported without its CR', () => {
  const { scan, seen } = scanner();
  scan('TIMELINE,abc,GPU_END,job-1,worker=1,gpu_ms=5\r\nTIMELINE,7,NEW_EVENT,job-1,x=1\r\n');
  expect(seen.bad).toEqual(['malformed: TIMELINE,abc,GPU_END,job-1,worker=1,gpu_ms=5', 'unknown_event: TIMELINE,7,NEW_EVENT,job-1,x=1']);
});

test('line bound at its edge: a line of exactly the limit is read, one byte more is dropped', () => {
  const base = 'TIMELINE,2,GPU_PICKUP,j,worker=0,x=';
  const at = base + 'p'.repeat(64 - base.length);
  const ok = scanner(64);
  ok.scan(`${at}\n`);
  expect(ok.seen.records).toEqual([`2 ${PICKUP} j w0`]);
  expect(ok.seen.overlong).toBe(0);
  const over = scanner(64);
  over.scan(`${at}p\n`);
  expect(over.seen.records).toEqual([]);
  expect(over.seen.overlong).toBe(1);
});

test('a torn line put back together: exactly the limit is kept (a CRLF rest counted without its CR), one byte more is given up even though it would parse', () => {
  const head = 'TIMELINE,8123,GPU_END,job-1';
  const rest = ',worker=1,gpu_ms=912,x=' + 'p'.repeat(64 - head.length - 23);
  expect(head.length + rest.length).toBe(64);
  for (const eol of ['\n', '\r\n']) {
    const at = scanner(64);
    at.scan(`${head}${SHORT_CUT}\n${rest}${eol}`);
    expect(at.seen.texts).toEqual([head + rest]);
    expect(at.seen.torn).toEqual([]);
  }
  const over = scanner(64);
  over.scan(`${head}${SHORT_CUT}\n${rest}p\n`);
  expect(over.seen.records).toEqual([]);
  expect(over.seen.torn).toEqual([head]);
});

test('text whose last line has no newline (not what the follower hands on): read as if it had one, never a hang', () => {
  const { scan, seen } = scanner();
  scan('TIMELINE,1,GPU_END,j,worker=0,gpu_ms=912');
  scan(`TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n`);
  scan(',worker=1,gpu_ms=912');
  expect(seen.records).toEqual([`1 ${END} j w0 ms912`, `8123 ${END} job-1 w1 ms912`]);
});

test('a new TIMELINE line, itself followed by tracing, before the rest came: the head is counted torn, the new line read on its own (also first in a read)', () => {
  for (const split of [false, true]) {
    const { scan, seen, pending } = scanner();
    const first = `TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n`;
    const second = `TIMELINE,8124,GPU_PICKUP,job-2,worker=0${COLOUR_INFO}\n`;
    if (split) {
      scan(first);
      scan(second);
    } else scan(first + second);
    expect(seen.torn).toEqual(['TIMELINE,8123,GPU_END,job-1']);
    expect(seen.records).toEqual([`8124 ${PICKUP} job-2 w0`]);
    expect(pending()).toBe(0);
  }
});

test('a rest that completes the record and is itself followed by tracing: applied (history as the head\'s), nothing held', () => {
  for (const headHistory of [true, false]) {
    const { scan, seen, pending } = scanner();
    scan(`TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n`, headHistory);
    scan(`,worker=1,gpu_ms=912${COLOUR_INFO}\nTIMELINE,9,GPU_PICKUP,job-3,worker=0\n`, false);
    expect(seen.records).toEqual([`8123 ${END} job-1 w1 ms912`, `9 ${PICKUP} job-3 w0`]);
    expect(seen.texts[0]).toBe('TIMELINE,8123,GPU_END,job-1,worker=1,gpu_ms=912');
    expect(seen.tornFlags).toEqual([true, false]);
    expect(seen.history).toEqual([headHistory, false]);
    expect(seen.torn).toEqual([]);
    expect(pending()).toBe(0);
  }
});

test('up to 8 pieces torn again are waited for; a 9th is one too many (the rest after it is not glued on)', () => {
  const build = (k: number): string => {
    let text = `TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n`;
    for (let i = 0; i < k; i++) text += `,x${i}=1${COLOUR_INFO}\n`;
    return text + ',worker=1,gpu_ms=912\n';
  };
  const eight = scanner();
  eight.scan(build(8));
  expect(eight.seen.records).toEqual([`8123 ${END} job-1 w1 ms912`]);
  expect(eight.seen.torn).toEqual([]);
  const nine = scanner();
  nine.scan(build(9));
  expect(nine.seen.records).toEqual([]);
  expect(nine.seen.torn).toHaveLength(1);
  expect(nine.pending()).toBe(0);
});

test('prefixes: a two-character one, first in the next read; a journal prefix whose time moved on; a prefix on the head\'s line only; a colourless cut behind a prefix', () => {
  const two = scanner();
  two.scan(`> TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n`);
  two.scan('> ,worker=1,gpu_ms=912\n');
  expect(two.seen.records).toEqual([`8123 ${END} job-1 w1 ms912`]);
  const later = scanner();
  later.scan(`${PREFIX}TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\nDec 01 10:00:01 gpu-box cuzk[4242]: ,worker=1,gpu_ms=912\n`);
  expect(later.seen.records).toEqual([`8123 ${END} job-1 w1 ms912`]);
  const headOnly = scanner();
  headOnly.scan(`${PREFIX}TIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n,worker=1,gpu_ms=912\n`);
  expect(headOnly.seen.records).toEqual([`8123 ${END} job-1 w1 ms912`]);
  const plain = scanner();
  plain.scan(`${PREFIX}TIMELINE,8123,GPU_END,job-1${PLAIN_INFO}\n${PREFIX},worker=1,gpu_ms=912\n`);
  expect(plain.seen.records).toEqual([`8123 ${END} job-1 w1 ms912`]);
  for (const s of [two, later, headOnly, plain]) {
    expect(s.seen.torn).toEqual([]);
    expect(s.pending()).toBe(0);
  }
});

test('a one-character prefix is too short to tell a journal prefix: the rest is read from its line\'s start', () => {
  const { scan, seen } = scanner();
  // The character (w) recurs in the rest; the rest is itself followed by tracing.
  scan(`wTIMELINE,8123,GPU_END,job-1${COLOUR_INFO}\n,worker=1,gpu_ms=912${COLOUR_INFO}\n`);
  expect(seen.records).toEqual([`8123 ${END} job-1 w1 ms912`]);
  expect(seen.torn).toEqual([]);
});

// The scanner remembers where the next ESC of the text it is scanning lies (a 64 KiB read
// without colour would otherwise be searched to its end for every line). Whatever it
// remembers, one read of many lines must give exactly what the same lines give read one by
// one, torn heads, intruders, prefixes and CRLFs included: a stale position would cut a line
// where it has no ESC, or miss one it has.
test('one read of many lines gives what the same lines give read one at a time (fast-check)', () => {
  const ESC = '\x1b';
  const lineArb = fc.oneof(
    fc.constantFrom(
      'TIMELINE,10,GPU_PICKUP,job-1,worker=1,partition=3',
      'TIMELINE,11,GPU_START,job-1,worker=1,partition=3',
      'TIMELINE,12,GPU_END,job-1,worker=1,partition=3,gpu_ms=1',
      'TIMELINE,13,SYNTH_START,wpost-1,kind=window-post',
      'Dec 01 10:00:00 host cuzk[42]: TIMELINE,14,GPU_QUEUE,job-2,partition=0',
      `${ESC}[2m2026-12-01T10:00:00.000Z${ESC}[0m ${ESC}[32m INFO${ESC}[0m cuzk_core::engine: proving`,
      '2026-12-01T10:00:00.000Z INFO cuzk_core::engine: no colour',
      `TIMELINE,15,GPU_END,job-3${ESC}[2m2026-12-01T10:00:01Z${ESC}[0m INFO tracing`,
      ',worker=2,partition=4,gpu_ms=7',
      'TIMELINE,16,GPU_PICKUP,job-4,worker=2012-01-01T00:00:00 torn',
      'TIMELINE,17,GPU_END,job-5,worker=3,gpu_ms=9\r',
      '',
      'TIMELINE,bad',
      // A journal prefix on a torn head; rests with the prefix's tail and an ESC before it.
      `Dec 01 10:00:00 host cuzk[42]: TIMELINE,18,GPU_END,job-6${ESC}[2mtracing`,
      `,worker=1${ESC}: x`,
      `${ESC}[0m: ,worker=1,gpu_ms=3`,
      `Dec 01 10:00:01 host cuzk[42]: ,worker=1,gpu_ms=3`,
    ),
    fc.tuple(fc.integer({ min: 0, max: 99 }), fc.constantFrom('GPU_PICKUP', 'GPU_END', 'SYNTH_END'), fc.string({ maxLength: 12 }), fc.boolean()).map(
      ([o, ev, tail, esc]) => `TIMELINE,${o},${ev},j${o}${esc ? ESC : ''}${tail}`,
    ),
  );
  fc.assert(
    fc.property(fc.array(lineArb, { maxLength: 40 }), (lines) => {
      const text = lines.map((l) => l + '\n').join('');
      const whole = scanner();
      whole.scan(text);
      const oneByOne = scanner();
      for (const l of lines) oneByOne.scan(l + '\n');
      expect(whole.seen).toEqual(oneByOne.seen);
      expect(whole.pending()).toBe(oneByOne.pending());
    }),
    { numRuns: Number(process.env.CUZK_FUZZ_RUNS ?? 500) },
  );
});

test('a rest read from its line\'s start after the prefix try failed: an ESC before the prefix\'s tail still cuts it', () => {
  // The head came behind a journal prefix (tail ": "). The next line holds ": " too, after
  // an ESC: read after the ": " it completes nothing ("x"), so it is read from its start,
  // where the piece before the ESC (",worker=1") continues the head, which is torn again
  // and waits; the line after brings gpu_ms.
  const { scan, seen } = scanner();
  scan('Dec 01 10:00:00 host cuzk[42]: TIMELINE,18,GPU_END,job-6\x1b[2mtracing\n,worker=1\x1b[0m: x\nDec 01 10:00:01 host cuzk[42]: ,gpu_ms=3\n');
  expect(seen.records).toEqual([`18 ${code('GPU_END')} job-6 w1 ms3`]);
  expect(seen.torn).toEqual([]);
});
