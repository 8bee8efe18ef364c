/**
 * capForServing (plausibility.ts): what /status re-serves of an attached daemon's snapshot.
 * Copy on write: a snapshot of known fields is re-served as parsed (no copy per poll); a
 * field over its cap is dropped from a copy, named by its path, and nothing else changes;
 * a "__proto__" key stays a plain field of the copy (never the copy's prototype).
 */
import { BOUNDS, capForServing } from '../../src/engine/sources/plausibility';
import type { CuzkStatus } from '../../src/engine/sources/status-schema';

const part = (i: number) => ({ index: i, state: 'gpu', synth_ms: 10, gpu_ms: null, worker_id: 1 });
const snap = () =>
  JSON.parse(
    JSON.stringify({
      uptime_secs: 100,
      pipelines: [
        { job_id: 'a', proof_kind: 'snap-update', started_secs_ago: 1, total_partitions: 2, partitions_done: 0, partitions: [part(0), part(1)] },
        { job_id: 'b', proof_kind: 'porep-c2', started_secs_ago: 1, total_partitions: 1, partitions_done: 0, partitions: [part(0)] },
      ],
      gpu_workers: [{ worker_id: 1, gpu_ordinal: 0, state: 'proving', current_job: 'a', current_partition: 0, busy_secs: 1 }],
      allocations: { srs: [], pce: [] },
    }),
  ) as any;

test('known fields only: the parsed snapshot itself, nothing dropped', () => {
  const s = snap();
  const r = capForServing(s as CuzkStatus);
  expect(r.body).toBe(s);
  expect(r.dropped).toEqual([]);
});

test('an oversized unknown field of one partition: dropped from a copy, by path; the rest shared', () => {
  const s = snap();
  s.pipelines[0].partitions[1].blob = 'x'.repeat(BOUNDS.unknownFieldBytes + 1);
  s.pipelines[0].partitions[0].note = 'small'; // under the caps: kept
  const r = capForServing(s as CuzkStatus);
  expect(r.dropped).toEqual([`unknown field pipelines[0].partitions[1].blob (${BOUNDS.unknownFieldBytes + 3} bytes)`]);
  const b = r.body as Record<string, any>;
  expect(b).not.toBe(s);
  expect(b.pipelines[0].partitions[1]).toEqual(part(1));
  expect(s.pipelines[0].partitions[1].blob).toBeDefined(); // the parsed snapshot is not changed
  expect(b.pipelines[0].partitions[0]).toBe(s.pipelines[0].partitions[0]);
  expect(b.pipelines[1]).toBe(s.pipelines[1]);
  expect(b.gpu_workers).toBe(s.gpu_workers);
});

test('a "__proto__" field is a field of the copy, never its prototype', () => {
  const s = JSON.parse(`{"uptime_secs":1,"pipelines":[],"gpu_workers":[],"__proto__":{"counters":{"total_completed":9}},"junk":"${'a'.repeat(2000)}"}`);
  const r = capForServing(s as CuzkStatus);
  expect(r.dropped).toHaveLength(1);
  expect(Object.getPrototypeOf(r.body)).toBe(Object.prototype);
  expect((r.body as Record<string, unknown>).counters).toBeUndefined();
  expect(Object.keys(r.body)).toEqual(['uptime_secs', 'pipelines', 'gpu_workers', '__proto__']);
});

test('a free-form section over its cap is dropped; the budget for unknown fields is shared', () => {
  const s = snap();
  s.allocations = { srs: ['y'.repeat(BOUNDS.sectionBytes)], pce: [] };
  for (let i = 0; i < 20; i++) s[`extra${i}`] = 'z'.repeat(1000);
  const r = capForServing(s as CuzkStatus);
  expect(r.dropped[0]).toMatch(/^allocations \(\d+ bytes, over 65536\)$/);
  const kept = Object.keys(r.body).filter((k) => k.startsWith('extra'));
  expect(kept.length).toBe(Math.floor(BOUNDS.unknownTotalBytes / 1002));
  expect(r.dropped).toHaveLength(1 + 20 - kept.length);
});

test('inherited enumerable fields are not the snapshot’s: not re-served, not counted against the budget', () => {
  const s = snap();
  const p = Object.assign(Object.create({ inh: 'y'.repeat(2000) }), part(1));
  s.pipelines[0].partitions[1] = p;
  s.pipelines[0].partitions[0].blob = 'x'.repeat(BOUNDS.unknownFieldBytes + 1); // forces a copy of pipelines[0]
  const r = capForServing(s as CuzkStatus);
  expect(r.dropped).toEqual([`unknown field pipelines[0].partitions[0].blob (${BOUNDS.unknownFieldBytes + 3} bytes)`]);
  expect(JSON.stringify(r.body)).not.toContain('inh');
});

test('partitions and workers whose keys were all known before are still checked key by key (the known-key fast path)', () => {
  // A first snapshot of known fields only: its key order is what the fast path remembers.
  expect(capForServing(snap() as CuzkStatus).dropped).toEqual([]);
  const s = snap();
  s.pipelines[0].partitions[0] = { gpu_ms: 1, worker_id: 1, index: 0, state: 'gpu', synth_ms: 10 }; // known, another order
  s.pipelines[0].partitions[1].blob = 'x'.repeat(BOUNDS.unknownFieldBytes + 1); // the remembered keys, then one more
  s.pipelines[1].partitions[0] = { index: 0, state: 'gpu' }; // fewer known keys
  s.gpu_workers[0].blob = 'w'.repeat(BOUNDS.unknownFieldBytes + 1);
  const r = capForServing(s as CuzkStatus);
  expect(r.dropped).toEqual([
    `unknown field pipelines[0].partitions[1].blob (${BOUNDS.unknownFieldBytes + 3} bytes)`,
    `unknown field gpu_workers[0].blob (${BOUNDS.unknownFieldBytes + 3} bytes)`,
  ]);
  const b = r.body as Record<string, any>;
  expect(b.pipelines[0].partitions[0]).toBe(s.pipelines[0].partitions[0]);
  expect(b.pipelines[1].partitions[0]).toBe(s.pipelines[1].partitions[0]);
  // The same again, fast path warm: the same answer.
  expect(capForServing(s as CuzkStatus).dropped).toEqual(r.dropped);
});
