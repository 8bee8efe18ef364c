/**
 * TIMELINE line parsing (DESIGN §7c): every event cuzk's engine.rs writes, with and without
 * a journal prefix, and what does not parse (malformed, unknown events, workers out of
 * range), never throwing.
 */
import fc from 'fast-check';
import {
  TL_GPU_END,
  TL_GPU_PICKUP,
  TL_GPU_QUEUE,
  TL_GPU_START,
  TL_IGNORED,
  TL_SYNTH_END,
  TL_SYNTH_START,
  newRecord,
  parseTimeline,
} from '../../src/engine/sources/attach/timeline-parser';

function parse(line: string) {
  const rec = newRecord();
  const m = line.indexOf('TIMELINE,');
  const err = parseTimeline(line, m, line.length, rec);
  return { err, rec };
}

test('every event cuzk writes parses, with its fields', () => {
  const J = 'ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50';
  expect(parse(`TIMELINE,12,SYNTH_START,${J},partition=3`).rec).toMatchObject({ offsetMs: 12, event: TL_SYNTH_START, jobId: J, partition: 3, kind: null });
  expect(parse('TIMELINE,5,SYNTH_START,wpost-1,kind=window-post').rec).toMatchObject({ event: TL_SYNTH_START, jobId: 'wpost-1', partition: -1, kind: 'window-post' });
  expect(parse(`TIMELINE,13,SYNTH_END,${J},partition=3,synth_ms=4021`).rec).toMatchObject({ event: TL_SYNTH_END, partition: 3, ms: 4021 });
  expect(parse('TIMELINE,13,SYNTH_END,wpost-1,synth_ms=77').rec).toMatchObject({ event: TL_SYNTH_END, partition: -1, ms: 77 });
  expect(parse(`TIMELINE,14,GPU_QUEUE,${J},partition=3`).rec).toMatchObject({ event: TL_GPU_QUEUE, partition: 3, monolithic: false });
  expect(parse('TIMELINE,14,GPU_QUEUE,wpost-1,monolithic').rec).toMatchObject({ event: TL_GPU_QUEUE, partition: -1, monolithic: true });
  expect(parse(`TIMELINE,15,GPU_PICKUP,${J},worker=1,partition=3`).rec).toMatchObject({ event: TL_GPU_PICKUP, worker: 1, partition: 3 });
  expect(parse('TIMELINE,15,GPU_PICKUP,wpost-1,worker=0').rec).toMatchObject({ event: TL_GPU_PICKUP, worker: 0, partition: -1 });
  expect(parse(`TIMELINE,16,GPU_START,${J},worker=1,partition=3`).rec).toMatchObject({ event: TL_GPU_START, worker: 1, partition: 3 });
  expect(parse(`TIMELINE,999,GPU_END,${J},worker=1,partition=3,gpu_ms=612`).rec).toMatchObject({ event: TL_GPU_END, worker: 1, partition: 3, ms: 612 });
  expect(parse('TIMELINE,999,GPU_END,wpost-1,worker=0,gpu_ms=9000').rec).toMatchObject({ event: TL_GPU_END, worker: 0, partition: -1, ms: 9000 });
  expect(parse('TIMELINE,1,CHAN_SEND,x,whatever').rec.event).toBe(TL_IGNORED);
  for (const l of [`TIMELINE,15,GPU_PICKUP,${J},worker=1,partition=3`, 'TIMELINE,999,GPU_END,wpost-1,worker=0,gpu_ms=9000']) expect(parse(l).err).toBeNull();
});

test('a journal prefix, CRLF and unknown detail keys are tolerated', () => {
  const r = parse('Dec 01 10:00:00 host cuzk[812]: TIMELINE,42,GPU_END,j,worker=2,partition=0,gpu_ms=5,extra=1\r');
  expect(r.err).toBeNull();
  expect(r.rec).toMatchObject({ offsetMs: 42, jobId: 'j', worker: 2, partition: 0, ms: 5 });
});

test('malformed lines, unknown events and workers out of range are reported, not thrown', () => {
  const cases: [string, string][] = [
    ['TIMELINE,', 'malformed'],
    ['TIMELINE,abc,GPU_END,j,worker=1,gpu_ms=1', 'malformed'],
    ['TIMELINE,-5,GPU_END,j,worker=1,gpu_ms=1', 'malformed'],
    ['TIMELINE,1,GPU_END,j,worker=1', 'malformed'], // no gpu_ms
    ['TIMELINE,1,GPU_END,j,gpu_ms=3', 'malformed'], // no worker
    ['TIMELINE,1,GPU_PICKUP,j,partition=2', 'malformed'],
    ['TIMELINE,1,SYNTH_END,j,partition=2', 'malformed'],
    ['TIMELINE,1,SYNTH_START,j,', 'malformed'],
    ['TIMELINE,1,GPU_QUEUE,j,', 'malformed'],
    ['TIMELINE,1,GPU_END,,worker=1,gpu_ms=1', 'malformed'], // empty job id
    ['TIMELINE,1,GPU_END,j\u0001x,worker=1,gpu_ms=1', 'malformed'], // control character
    ['TIMELINE,1,GPU_END,j\ufffd,worker=1,gpu_ms=1', 'malformed'], // invalid UTF-8 decoded
    ['TIMELINE,1,GPU_END,j,worker=1,gpu_ms=1.5', 'malformed'],
    ['TIMELINE,1,GPU_END,j,worker=1,partition=99999,gpu_ms=1', 'malformed'],
    ['TIMELINE,1,GPU_END,j,worker=1,=4,gpu_ms=1', 'malformed'],
    ['TIMELINE,1234567890123456,GPU_END,j,worker=1,gpu_ms=1', 'malformed'], // 16 digits
    ['TIMELINE,1,GPU_END,j,worker=4096,gpu_ms=1', 'worker_out_of_range'],
    ['TIMELINE,1,GPU_END,j,worker=99999999,gpu_ms=1', 'worker_out_of_range'],
    ['TIMELINE,1,GPU_FINISH,j,worker=1', 'unknown_event'],
    ['TIMELINE,1,gpu end,j,worker=1', 'malformed'],
    ['TIMELINE,1,GPU_END', 'malformed'],
  ];
  for (const [line, why] of cases) expect([line, parse(line).err]).toEqual([line, why]);
  expect(parse(`TIMELINE,1,GPU_END,${'x'.repeat(1025)},worker=1,gpu_ms=1`).err).toBe('malformed');
  expect(parse(`TIMELINE,1,GPU_END,${'x'.repeat(1024)},worker=1,gpu_ms=1`).err).toBeNull();
});

test('arbitrary text after TIMELINE, never throws and never yields out-of-range fields', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 200, unit: 'binary' }), (tail) => {
      const line = 'TIMELINE,' + tail;
      const rec = newRecord();
      const err = parseTimeline(line, 0, line.length, rec);
      if (err === null) {
        expect(Number.isSafeInteger(rec.offsetMs) && rec.offsetMs >= 0).toBe(true);
        expect(rec.worker).toBeLessThanOrEqual(4095);
        expect(rec.partition).toBeLessThanOrEqual(4095);
        expect(rec.jobId.length).toBeGreaterThan(0);
      }
    }),
    { numRuns: 3000 },
  );
});
