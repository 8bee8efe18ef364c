/**
 * The TIMELINE scanner on its own (timeline-scan.ts): which records it finds in log text,
 * whole or torn. cuzk writes a TIMELINE line with `eprintln!` (engine.rs `timeline_event`),
 * one write(2) per format piece, so where stderr and the tracing subscriber's stdout share a
 * stream, a tracing line can land inside it; the scanner puts such a line back together.
 * Expectations are worked out from that format by hand (the record each log should give),
 * not read off the code.
 */
import { TimelineScanner, type ScanSink } from '../../src/engine/sources/attach/timeline-scan';
import { newRecord, parseTimeline } from '../../src/engine/sources/attach/timeline-parser';

interface Seen {
  records: string[];
  tornFlags: boolean[];
  history: boolean[];
  bad: string[];
  torn: string[];
  overlong: number;
}

/** A scanner whose sink parses with the real parser and writes down what it was handed. */
function scanner(maxLineBytes = 4096): { scan: (text: string, history?: boolean) => void; seen: Seen; pending: () => number } {
  const seen: Seen = { records: [], tornFlags: [], history: [], bad: [], torn: [], overlong: 0 };
  const r = newRecord();
  const sink: ScanSink = {
    record(s, a, b, history, _readHr, torn) {
      const why = parseTimeline(s, a, b, r);
      if (why !== null) return why;
      const detail = [r.worker >= 0 ? `w${r.worker}` : '', r.partition >= 0 ? `p${r.partition}` : '', r.ms >= 0 ? `ms${r.ms}` : '', r.kind ?? ''].filter((x) => x).join(' ');
      seen.records.push(`${r.offsetMs} ${r.event} ${r.jobId}${detail ? ' ' + detail : ''}`);
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
