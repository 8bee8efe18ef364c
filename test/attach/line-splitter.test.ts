/**
 * The follower's line splitter on its own (timeline-follower.ts LineSplitter; issue 23: its
 * over-long path had no test at all). Reads hand it pieces of the file cut anywhere; it must
 * hand on every whole line exactly once, in order, hold a partial line until its end comes,
 * and drop a line longer than the limit whole (counted once, saying whether it was a
 * TIMELINE line) without losing the lines after it. Expectations are the lines written.
 */
import { LineSplitter } from '../../src/engine/sources/attach/timeline-follower';
import { RecordingSink } from './follower-sink';

function splitter(max: number): { push: (s: string, history?: boolean) => void; sink: RecordingSink; overlongs: boolean[]; s: LineSplitter } {
  const sink = new RecordingSink();
  const overlongs: boolean[] = [];
  sink.overlong = (timeline: boolean) => {
    sink.overlongs++;
    overlongs.push(timeline);
  };
  const s = new LineSplitter(sink, max);
  return { push: (text, history = false) => s.push(Buffer.from(text), history, 0), sink, overlongs, s };
}

test('pieces cut anywhere give each whole line once, in order; a partial line waits for its end', () => {
  const lines = ['TIMELINE,1,GPU_PICKUP,a,worker=0', 'other output', '', 'TIMELINE,2,GPU_END,a,worker=0,gpu_ms=1'];
  const text = lines.map((l) => l + '\n').join('');
  for (let cut = 0; cut <= text.length; cut++) {
    for (let cut2 = cut; cut2 <= text.length; cut2 += 7) {
      const { push, sink, s } = splitter(1024);
      push(text.slice(0, cut));
      push(text.slice(cut, cut2));
      push(text.slice(cut2));
      expect([cut, cut2, sink.live]).toEqual([cut, cut2, lines]);
      expect(s.pendingBytes).toBe(0);
    }
  }
  const { push, sink, s } = splitter(1024);
  push('TIMELINE,3,GPU_PI');
  expect(sink.live).toEqual([]);
  expect(s.pendingBytes).toBe('TIMELINE,3,GPU_PI'.length);
  push('CKUP,b,worker=1\nnext-part');
  expect(sink.live).toEqual(['TIMELINE,3,GPU_PICKUP,b,worker=1']);
  expect(s.pendingBytes).toBe('next-part'.length);
});

test('a line held across reads: exactly at the limit it is kept; one byte over it is dropped whole, counted once, and the next line is read', () => {
  const max = 32;
  const at = 'x'.repeat(max);
  {
    const { push, sink } = splitter(max);
    push(at.slice(0, 20));
    push(at.slice(20) + '\nok\n');
    expect(sink.live).toEqual([at, 'ok']);
    expect(sink.overlongs).toBe(0);
  }
  {
    // Whole inside one read it costs no memory beyond the read: handed on, and the TIMELINE
    // scanner bounds records (timeline-scan.ts, test/attach/timeline-scan.test.ts).
    const { push, sink } = splitter(max);
    push(at + 'y\nok\n');
    expect(sink.live).toEqual([at + 'y', 'ok']);
    expect(sink.overlongs).toBe(0);
  }
  {
    // Over the limit only once its carried start and the rest are joined.
    const { push, sink } = splitter(max);
    push(at.slice(0, 20));
    push(at.slice(20) + 'y\nok\n');
    expect(sink.live).toEqual(['ok']);
    expect(sink.overlongs).toBe(1);
  }
});

test('an over-long line arriving over many reads, with no newline for a while: skipped to its end, counted once, nothing of it handed on', () => {
  const max = 64;
  const { push, sink, overlongs, s } = splitter(max);
  push('before\nTIMELINE,5,GPU_END,' + 'j'.repeat(50));
  // 1 MiB more of the same line in pieces: nothing held past the limit meanwhile.
  for (let i = 0; i < 64; i++) {
    push('k'.repeat(16 * 1024));
    expect(s.pendingBytes).toBeLessThanOrEqual(max);
  }
  expect(sink.overlongs).toBe(0); // counted when its end is seen
  push('tail-of-it\nafter-1\nafter-2\n');
  expect(sink.live).toEqual(['before', 'after-1', 'after-2']);
  expect(overlongs).toEqual([true]); // its kept start held TIMELINE,
  // A second over-long line, not a TIMELINE one, over two reads.
  push('z'.repeat(100));
  push('z'.repeat(100) + '\nlast\n');
  expect(sink.live.slice(-1)).toEqual(['last']);
  expect(overlongs).toEqual([true, false]);
});

test('a partial line of exactly the limit is held (its newline may come next); only its start says whether it was a TIMELINE line', () => {
  const { push, sink, overlongs } = splitter(32);
  push('x'.repeat(32));
  push('\nok\n');
  expect(sink.live).toEqual(['x'.repeat(32), 'ok']);
  // `TIMELINE,` first seen past the limit: the line was not one of cuzk's records.
  push('a'.repeat(40) + 'TIMELINE,1,GPU_PICKUP,j,worker=0');
  push('\nafter\n');
  expect(sink.live.slice(-1)).toEqual(['after']);
  expect(overlongs).toEqual([false]);
});

test('a held partial line pushed over the limit: its kept start (what was held and the next 64 bytes) says whether it was a TIMELINE line', () => {
  const a = splitter(32);
  a.push('TIMELINE,1,GPU_PICKUP'); // held
  a.push('x'.repeat(40)); // over the limit: dropped
  a.push('\nok\n');
  expect(a.sink.live).toEqual(['ok']);
  expect(a.overlongs).toEqual([true]);
  const split = splitter(32);
  split.push('xxTIMEL');
  split.push('INE,' + 'y'.repeat(40) + '\n');
  expect(split.overlongs).toEqual([true]);
  const late = splitter(32);
  late.push('abc');
  late.push('x'.repeat(70) + 'TIMELINE,1,GPU_PICKUP,j,worker=0'); // the mark past the next 64 bytes
  late.push('\nok\n');
  expect(late.overlongs).toEqual([false]);
  expect(late.sink.live).toEqual(['ok']);
});

test('a skip ending on the last byte of a read leaves nothing held: the next over-long line is judged by its own first maxLineBytes', () => {
  const { push, overlongs, s } = splitter(128);
  push('q'.repeat(200));
  push('\n'); // the skip ends here, nothing after it
  expect(s.pendingBytes).toBe(0);
  // `TIMELINE,` at byte 100: within the limit, so this was a TIMELINE line.
  push('x'.repeat(100) + 'TIMELINE,1,GPU_PICKUP,j,worker=0' + 'y'.repeat(100));
  push('\n');
  expect(overlongs).toEqual([false, true]);
});

test('the skip ends at the first newline even when it is the first byte of a read', () => {
  const { push, sink, overlongs } = splitter(16);
  push('q'.repeat(40));
  push('\nnext\n');
  expect(sink.live).toEqual(['next']);
  expect(overlongs).toEqual([false]);
});

test('reset (a new file) forgets a held partial line and a skip in progress', () => {
  const a = splitter(64);
  a.push('half a li');
  a.s.reset();
  a.push('ne\nwhole\n');
  expect(a.sink.live).toEqual(['ne', 'whole']);
  const b = splitter(16);
  b.push('w'.repeat(40));
  b.s.reset();
  b.push('first of the new\nsecond\n');
  expect(b.sink.live).toEqual(['first of the new', 'second']);
  expect(b.sink.overlongs).toBe(0);
});

test('history flag passes through with the lines it came with', () => {
  const { push, sink } = splitter(64);
  push('h1\nh2\npart', true);
  push('ial\nlive\n', false);
  expect(sink.history).toEqual(['h1', 'h2']);
  expect(sink.live).toEqual(['partial', 'live']);
});
