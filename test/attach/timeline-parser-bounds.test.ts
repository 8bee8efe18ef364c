/**
 * TIMELINE parsing at its edges (issue 23: the survivors of Stryker on timeline-parser.ts).
 * The format is engine.rs `timeline_event`: `TIMELINE,<offset_ms>,<event>,<job_id>,<detail>`,
 * detail `key=value` pairs (or the bare word `monolithic`) joined by commas. Each case says
 * what a line must give, worked out from that format and the documented limits (TL_LIMITS:
 * worker and partition ids up to 4095, job ids up to 1024 characters, kinds up to 64,
 * 15 digits); none is read off the code.
 */
import {
  TL_GPU_END,
  TL_GPU_PICKUP,
  TL_GPU_QUEUE,
  TL_IGNORED,
  TL_SYNTH_END,
  TL_SYNTH_START,
  JobIdCache,
  newRecord,
  parseTimeline,
  type TimelineRecord,
} from '../../src/engine/sources/attach/timeline-parser';

/** Parses `line` as the scanner hands it: from its mark to `end` (default: the line's end). */
function parse(line: string, end = line.length, rec: TimelineRecord = newRecord()) {
  const err = parseTimeline(line, line.indexOf('TIMELINE,'), end, rec);
  return { err, rec };
}

test('a record ends where it is told to: the next line in the same text is never read into it', () => {
  // The scanner hands records inside a 64 KiB piece of the log: s[a, b) with more after b.
  const next = '\nTIMELINE,6,GPU_PICKUP,job-b,worker=1,partition=2\n';
  for (const head of ['TIMELINE,5', 'TIMELINE,5,GPU_PICKUP', 'TIMELINE,5,GPU_PICKUP,job-a']) {
    expect([head, parse(head + next, head.length).err]).toEqual([head, 'malformed']);
  }
  // Cut right before a comma (as a caller may): what follows it is not the record's.
  expect(parse('TIMELINE,5,GPU_PICKUP,j,worker=0', 'TIMELINE,5'.length).err).toBe('malformed');
  expect(parse('TIMELINE,5,GPU_PICKUP,j,worker=0', 'TIMELINE,5,GPU_PICKUP'.length).err).toBe('malformed');
  // A detail-less event: its job id runs to the end given, not to the next line's comma.
  const r = parse('TIMELINE,5,CHAN_SEND,job-a' + next, 'TIMELINE,5,CHAN_SEND,job-a'.length);
  expect(r.err).toBeNull();
  expect(r.rec).toMatchObject({ event: TL_IGNORED, jobId: 'job-a' });
  // The last detail pair ends at the end given too.
  const g = parse('TIMELINE,9,GPU_END,job-a,worker=1,gpu_ms=12' + next, 'TIMELINE,9,GPU_END,job-a,worker=1,gpu_ms=12'.length);
  expect(g.err).toBeNull();
  expect(g.rec).toMatchObject({ event: TL_GPU_END, worker: 1, partition: -1, ms: 12 });
});

test('CRLF: a carriage return after the last number is not part of it', () => {
  expect(parse('TIMELINE,7,GPU_PICKUP,j,worker=3\r').rec).toMatchObject({ event: TL_GPU_PICKUP, worker: 3 });
  expect(parse('TIMELINE,7,GPU_END,j,worker=3,gpu_ms=40\r').rec).toMatchObject({ ms: 40 });
  expect(parse('TIMELINE,7,GPU_END,j,worker=3,gpu_ms=40\r').err).toBeNull();
});

test('zero is a value, empty is not: offset, worker, partition, gpu_ms 0 parse; empty ones do not', () => {
  expect(parse('TIMELINE,0,GPU_END,j,worker=0,partition=0,gpu_ms=0')).toMatchObject({ err: null, rec: { offsetMs: 0, worker: 0, partition: 0, ms: 0 } });
  expect(parse('TIMELINE,0,SYNTH_END,j,synth_ms=0')).toMatchObject({ err: null, rec: { ms: 0 } });
  expect(parse('TIMELINE,0,GPU_QUEUE,j,partition=0')).toMatchObject({ err: null, rec: { event: TL_GPU_QUEUE, partition: 0 } });
  for (const bad of [
    'TIMELINE,,GPU_PICKUP,j,worker=0',
    'TIMELINE,1,GPU_PICKUP,j,worker=',
    'TIMELINE,1,GPU_PICKUP,j,worker=x',
    'TIMELINE,1,GPU_PICKUP,j,worker=0,partition=',
    'TIMELINE,1,GPU_END,j,worker=0,gpu_ms=',
    'TIMELINE,1,SYNTH_END,j,synth_ms=',
    'TIMELINE,1,SYNTH_END,j,synth_ms=x',
    'TIMELINE,1,SYNTH_START,j,kind=',
  ])
    expect([bad, parse(bad).err]).toEqual([bad, 'malformed']);
});

test('limits at their edge: worker and partition 4095, a 64-character kind, 15 digits', () => {
  expect(parse('TIMELINE,1,GPU_PICKUP,j,worker=4095,partition=4095')).toMatchObject({ err: null, rec: { worker: 4095, partition: 4095 } });
  expect(parse('TIMELINE,1,GPU_PICKUP,j,worker=0,partition=4096').err).toBe('malformed');
  const k64 = 'k'.repeat(64);
  expect(parse(`TIMELINE,1,SYNTH_START,j,kind=${k64}`)).toMatchObject({ err: null, rec: { event: TL_SYNTH_START, kind: k64 } });
  expect(parse(`TIMELINE,1,SYNTH_START,j,kind=${k64}k`).err).toBe('malformed');
  expect(parse('TIMELINE,999999999999999,GPU_PICKUP,j,worker=0')).toMatchObject({ err: null, rec: { offsetMs: 999999999999999 } });
});

test('job ids and kinds: printable only (DEL and control characters are not an id)', () => {
  expect(parse('TIMELINE,1,GPU_PICKUP,j\u007fx,worker=0').err).toBe('malformed');
  expect(parse('TIMELINE,1,GPU_PICKUP,j\u001fx,worker=0').err).toBe('malformed');
  expect(parse('TIMELINE,1,GPU_PICKUP,j x~,worker=0')).toMatchObject({ err: null, rec: { jobId: 'j x~' } });
  expect(parse('TIMELINE,1,SYNTH_START,j,kind=a\u007f').err).toBe('malformed');
});

test('event names: only the six cuzk writes (and CHAN_SEND, ignored); look-alikes of the same length are unknown', () => {
  for (const ev of ['GPU_ENX', 'SYNTH_ENX', 'GPU_QUEUX', 'GPU_STARX', 'CHAN_SENX', 'GPU_PICKUX', 'SYNTH_STARX'])
    expect([ev, parse(`TIMELINE,1,${ev},j,worker=0,partition=1,gpu_ms=1,synth_ms=1,kind=x`).err]).toEqual([ev, 'unknown_event']);
  // An unknown event is an upper-case word of 1 to 64 characters (digits and _ too); anything else is garbage.
  for (const ev of ['AZ_09', 'A', 'Z', '_', '0', '9', 'E'.repeat(64)]) expect([ev, parse(`TIMELINE,1,${ev},j`).err]).toEqual([ev, 'unknown_event']);
  for (const ev of ['', '@', '[', '/', ':', 'a', 'E'.repeat(65)]) expect([ev, parse(`TIMELINE,1,${ev},j`).err]).toEqual([ev, 'malformed']);
});

test('detail keys: only the exact names count; look-alikes of the same length or first letter are skipped', () => {
  const r = parse('TIMELINE,1,GPU_END,j,worker=1,wombat=7,w=8,partition=2,partnerXY=9,p=9,gpu_ms=3,gpu_xx=99,g=99,synth_xx=5,kine=k');
  expect(r.err).toBeNull();
  expect(r.rec).toMatchObject({ worker: 1, partition: 2, ms: 3, kind: null });
  // A look-alike never stands in for a required key.
  expect(parse('TIMELINE,1,GPU_PICKUP,j,wombat=7').err).toBe('malformed');
  expect(parse('TIMELINE,1,GPU_END,j,worker=1,gpu_xx=3').err).toBe('malformed');
  expect(parse('TIMELINE,1,SYNTH_END,j,synth_xx=3').err).toBe('malformed');
  expect(parse('TIMELINE,1,GPU_QUEUE,j,partnerXY=9').err).toBe('malformed');
  expect(parse('TIMELINE,1,SYNTH_START,j,kine=x').err).toBe('malformed');
});

test("each end's duration key is its own: gpu_ms does not complete a SYNTH_END, nor synth_ms a GPU_END", () => {
  expect(parse('TIMELINE,1,SYNTH_END,j,gpu_ms=5').err).toBe('malformed');
  expect(parse('TIMELINE,1,GPU_END,j,worker=1,synth_ms=5').err).toBe('malformed');
  expect(parse('TIMELINE,1,SYNTH_END,j,synth_ms=5')).toMatchObject({ err: null, rec: { event: TL_SYNTH_END, ms: 5 } });
});

test('bare words: only `monolithic`; an empty field between commas is skipped', () => {
  expect(parse('TIMELINE,1,GPU_QUEUE,j,monolithic')).toMatchObject({ err: null, rec: { monolithic: true } });
  expect(parse('TIMELINE,1,GPU_QUEUE,j,abcdefghij').err).toBe('malformed'); // ten letters, not the word
  expect(parse('TIMELINE,1,GPU_QUEUE,j,monolithicX').err).toBe('malformed');
  expect(parse('TIMELINE,1,GPU_PICKUP,j,worker=0,foo').err).toBe('malformed');
  expect(parse('TIMELINE,1,GPU_END,j,worker=0,,gpu_ms=1')).toMatchObject({ err: null, rec: { worker: 0, ms: 1 } });
  expect(parse('TIMELINE,1,GPU_QUEUE,j,foo=1').err).toBe('malformed');
});

test('a record reused for the next line (as the surface does) keeps nothing of the last one', () => {
  const rec = newRecord();
  expect(parse('TIMELINE,1,SYNTH_START,j,kind=window-post', undefined, rec).err).toBeNull();
  expect(parse('TIMELINE,2,GPU_QUEUE,j,monolithic', undefined, rec).err).toBeNull();
  expect(parse('TIMELINE,3,GPU_END,j,worker=4,partition=5,gpu_ms=6', undefined, rec).err).toBeNull();
  expect(parse('TIMELINE,4,GPU_PICKUP,k,worker=7', undefined, rec).err).toBeNull();
  expect(rec).toEqual({ offsetMs: 4, event: TL_GPU_PICKUP, jobId: 'k', worker: 7, partition: -1, ms: -1, kind: null, monolithic: false });
});

test('keys that only begin like a known one (a newer cuzk may add worker_gpu=, partition_count=, …) are skipped', () => {
  // The header: unknown detail keys are skipped, so a longer key that starts with a known
  // name neither sets nor spoils the known field, whatever its value.
  const r = parse('TIMELINE,1,GPU_END,j,worker=1,worker_gpu=zz,workers=7,partition=2,partition_count=x,partitions=9,gpu_ms=3,gpu_ms_avg=zz,gpu_msec=8,synth_ms_x=zz,kindred=x,kinds=y');
  expect(r.err).toBeNull();
  expect(r.rec).toMatchObject({ worker: 1, partition: 2, ms: 3, kind: null });
  const s = parse('TIMELINE,1,SYNTH_END,j,synth_ms=4,synth_ms_total=zz,synth_msx=9');
  expect(s).toMatchObject({ err: null, rec: { event: TL_SYNTH_END, ms: 4 } });
  const k = parse('TIMELINE,1,SYNTH_START,j,partition=0,kind_hint=porep,kindx=y');
  expect(k).toMatchObject({ err: null, rec: { event: TL_SYNTH_START, partition: 0, kind: null } });
});

test('a bad number under a known key spoils the line even where that key is optional', () => {
  // worker= and partition= are optional on SYNTH_START / GPU_QUEUE / CHAN_SEND, but a value
  // that is not plain digits is still a malformed line, not a line without the key.
  for (const bad of [
    'TIMELINE,1,SYNTH_START,j,partition=0,worker=x',
    'TIMELINE,1,GPU_QUEUE,j,monolithic,worker=-1',
    'TIMELINE,1,CHAN_SEND,j,worker=1x',
    'TIMELINE,1,SYNTH_START,j,kind=porep,partition=x',
    'TIMELINE,1,CHAN_SEND,j,gpu_ms=x',
    'TIMELINE,1,CHAN_SEND,j,synth_ms=1.5',
  ])
    expect([bad, parse(bad).err]).toEqual([bad, 'malformed']);
});

test('an end given inside a line: what lies past it (an unknown event name, a =) does not change the verdict', () => {
  // The record is s[start, end): "TIMELINE,1,GPU" has no job id, whatever follows the end.
  expect(parse('TIMELINE,1,GPUX,j,worker=1', 'TIMELINE,1,GPU'.length).err).toBe('malformed');
  // Cut right at the comma after an unknown event name: still no job id.
  expect(parse('TIMELINE,1,GPUX,j', 'TIMELINE,1,GPUX'.length).err).toBe('malformed');
  expect(parse('TIMELINE,1,GPUX,j').err).toBe('unknown_event');
  // "abc" cut before its "=" is a bare word (not monolithic): malformed, not an unknown key.
  expect(parse('TIMELINE,1,CHAN_SEND,j,abc=1', 'TIMELINE,1,CHAN_SEND,j,abc'.length).err).toBe('malformed');
  expect(parse('TIMELINE,1,CHAN_SEND,j,abc=1').err).toBeNull();
  // A detail-less line that ends the text (no terminator, no comma after the id).
  expect(parse('TIMELINE,5,CHAN_SEND,job-z')).toMatchObject({ err: null, rec: { event: TL_IGNORED, jobId: 'job-z' } });
});

test('a job-id cache (as the surface uses) never hands back another job\'s id', () => {
  // The surface parses with a cache of recent ids; whatever it holds, each line's id must be
  // exactly the text of that line. Ids that are prefixes of each other (job-1, job-10) meet
  // in one of its slots now and then among 20,000 pairs; so do ids of equal length.
  const ids = new JobIdCache();
  const rec = newRecord();
  const got: string[] = [];
  const want: string[] = [];
  const line = (id: string) => {
    const l = `TIMELINE,1,GPU_PICKUP,${id},worker=0`;
    expect(parseTimeline(l, 0, l.length, rec, ids)).toBeNull();
    got.push(rec.jobId);
    want.push(id);
  };
  for (let i = 0; i < 20000; i++) {
    line(`job-${i}`);
    line(`job-${i}0`);
    line(`job-${i}`);
    line(`job-${(i * 7919) % 20000}x`);
  }
  expect(got.filter((g, k) => g !== want[k])).toEqual([]);
  // Inside a longer text (the read piece), with a journal prefix and a non-BMP or lone
  // surrogate character in the id: the same characters come back.
  for (const id of ['ps-snap-\u{1F600}-1', 'j\ud800x', 'j\udfff', 'wdpost-1-2-[0 1]']) {
    const text = `Dec 01 h cuzk[1]: TIMELINE,2,GPU_START,${id},worker=3\nTIMELINE,3,GPU_END,other,worker=3,gpu_ms=1\n`;
    const a = text.indexOf('TIMELINE,');
    expect(parseTimeline(text, a, text.indexOf('\n'), rec, ids)).toBeNull();
    expect([id, rec.jobId]).toEqual([id, id]);
    expect(parseTimeline(text, a, text.indexOf('\n'), rec, ids)).toBeNull();
    expect([id, rec.jobId]).toEqual([id, id]);
  }
});
