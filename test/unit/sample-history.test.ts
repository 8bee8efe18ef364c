/**
 * SampleHistory (attach/surface.ts): the per-worker samples the cross-check compares TIMELINE
 * with. newestUntil searches an endHr-ordered list; here it is checked against a plain scan
 * of everything added, for samples added in any order, and the age/count bounds hold.
 */
import fc from 'fast-check';
import { SampleHistory, WorkerSample } from '../../src/engine/sources/attach/surface';

const sample = fc.record({ endHr: fc.integer({ min: 0, max: 1000 }), busy: fc.boolean() });

test('newestUntil = the latest-ending sample at or before t (the later added on a tie), whatever the order added', () => {
  fc.assert(
    fc.property(fc.array(sample, { maxLength: 60 }), fc.array(fc.integer({ min: -10, max: 1010 }), { minLength: 1, maxLength: 20 }), (adds, ts) => {
      const h = new SampleHistory(1e12, 1e6);
      const all: WorkerSample[] = [];
      for (const a of adds) {
        const s = { startHr: a.endHr - 5, endHr: a.endHr, busy: a.busy, kind: -1 };
        h.add(7, s);
        all.push(s);
      }
      for (const t of ts) {
        let want: WorkerSample | null = null;
        for (const s of all) if (s.endHr <= t && (want === null || s.endHr >= want.endHr)) want = s;
        expect(h.newestUntil(7, t)).toBe(want);
      }
      expect(h.newestUntil(8, 1e9)).toBeNull();
    }),
    { numRuns: 500 },
  );
});

test('samples older than maxAge (behind the newest) and beyond maxCount are dropped; the newest is always kept', () => {
  const h = new SampleHistory(100, 4);
  for (let t = 0; t <= 1000; t += 10) h.add(1, { startHr: t, endHr: t, busy: false, kind: -1 });
  expect(h.newestUntil(1, 1000)!.endHr).toBe(1000);
  expect(h.newestUntil(1, 969)).toBeNull(); // only 970..1000 kept (4 samples)
  expect(h.newestUntil(1, 975)!.endHr).toBe(970);
  const g = new SampleHistory(25, 100);
  for (let t = 0; t <= 100; t += 10) g.add(1, { startHr: t, endHr: t, busy: false, kind: -1 });
  expect(g.newestUntil(1, 74)).toBeNull(); // 75 and older are past maxAge behind 100
  expect(g.newestUntil(1, 80)!.endHr).toBe(80);
});
