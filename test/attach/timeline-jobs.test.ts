/**
 * TimelineJobs (src/engine/sources/attach/timeline-jobs.ts) on its own: the bookkeeping of
 * TIMELINE jobs and units, each rule checked against counts worked out by hand. The
 * surface-level suites (timeline*.test.ts) drive it through log lines; these pin the
 * rules they rely on (which unit a line goes to, the live counts per kind, what an
 * unresolved job holds back and hands on when its kind becomes known).
 */
import {
  END_DONE,
  END_FAILED,
  END_LOST,
  END_NONE,
  END_SKIPPED,
  MONO,
  STATES_ON_GPU,
  STATES_SYNTH,
  STATES_WAITING,
  TimelineJobs,
  TlJob,
} from '../../src/engine/sources/attach/timeline-jobs';
import {
  KIND_SLOTS,
  LIVE_PARTITION_STATES,
  OTHER_KIND_INDEX,
  PART_DONE,
  PART_FINALIZING,
  PART_GPU,
  PART_PENDING,
  PART_SYNTHESIZING,
  PART_SYNTH_DONE,
} from '../../src/engine/model/kinds';

const LIVE = { pending: 0, synthesizing: 1, synth_done: 2, gpu: 3, finalizing: 4 };

/** Live counts of kind slot `k` as { state name: n } (zeros left out). */
function live(t: TimelineJobs, k: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, s] of Object.entries(LIVE)) {
    const n = t.kLive[k * LIVE_PARTITION_STATES + s];
    if (n !== 0) out[name] = n;
  }
  return out;
}

function recorder() {
  const calls: string[] = [];
  return {
    calls,
    observer: {
      partitionGpu: (kind: number, s: number, job?: number, partition?: number) => calls.push(`gpu k${kind} ${s}s job${job} p${partition}`),
      partitionSynthesis: (kind: number, s: number, job?: number, partition?: number) => calls.push(`synth k${kind} ${s}s job${job} p${partition}`),
    },
  };
}

describe('TimelineJobs: jobs and units', () => {
  test('a job is made once per id, with a new handle, unresolved, its first and latest offsets kept', () => {
    const t = new TimelineJobs();
    const a = t.job('a', 500);
    const b = t.job('b', 400);
    expect(b.handle).toBe(a.handle + 1);
    expect(t.job('a', 900)).toBe(a);
    t.job('a', 700); // older than the latest: the latest stays
    expect(a).toMatchObject({ id: 'a', kind: -1, evidence: '', mono: false, live: 0, liveSlot: OTHER_KIND_INDEX, pend: null, firstMs: 500, lastMs: 900, maxKey: -1, failed: false, accounted: false });
    expect(Number.isNaN(a.endedT)).toBe(true);
    expect([...t.unresolved]).toEqual([a, b]);
    expect(t.jobs.size).toBe(2);
  });

  test('a new unit starts empty; partitioned keys raise the highest index seen, MONO marks the job monolithic', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    j.endedT = 5;
    j.accounted = true;
    const u = t.newUnit(j, 3);
    expect(u).toMatchObject({ job: j, key: 3, state: -1, worker: -1, started: false, synthMs: -1, gpuMs: -1, synthCounted: false, end: END_NONE, otherEndMs: -1 });
    expect([u.pickT, u.synthT, u.readyT].every(Number.isNaN)).toBe(true);
    expect(Number.isNaN(j.endedT)).toBe(true);
    expect(j.accounted).toBe(false);
    expect(j.maxKey).toBe(3);
    t.newUnit(j, 1);
    expect(j.maxKey).toBe(3);
    expect(j.mono).toBe(false);
    expect(TimelineJobs.seenTotal(j)).toBe(4);
    const m = t.job('m', 0);
    t.newUnit(m, MONO);
    expect(m.mono).toBe(true);
    expect(m.maxKey).toBe(-1);
    expect(TimelineJobs.seenTotal(m)).toBe(1);
    expect(t.unitsTracked).toBe(3);
  });

  test('past 64 units a job drops its oldest ended unit, never a live one', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    const units = [];
    for (let i = 0; i < 64; i++) units.push(t.newUnit(j, i));
    t.finish(units[10], END_LOST, 0);
    t.finish(units[20], END_LOST, 0);
    t.newUnit(j, 64);
    expect(j.units.length).toBe(64);
    expect(j.units).not.toContain(units[10]);
    expect(j.units).toContain(units[20]);
    expect(t.unitsTracked).toBe(64);
    // No ended unit left but one: then none to drop, and the job holds 65.
    t.newUnit(j, 65);
    expect(j.units).not.toContain(units[20]);
    t.newUnit(j, 66);
    expect(j.units.length).toBe(65);
    expect(t.unitsTracked).toBe(65);
  });

  test('find: the oldest unit of the key, not ended, in one of the states, of the worker when one is named', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    const u0 = t.newUnit(j, 0); // state -1: before any line
    const u1 = t.newUnit(j, 0);
    t.setState(u1, PART_SYNTH_DONE);
    u1.worker = 2;
    const u2 = t.newUnit(j, 0);
    t.setState(u2, PART_GPU);
    u2.worker = 3;
    const other = t.newUnit(j, 1);
    t.setState(other, PART_GPU);
    expect(t.find(j, 0, STATES_WAITING)).toBe(u0);
    expect(t.find(j, 0, STATES_SYNTH)).toBe(u0);
    expect(t.find(j, 0, 1 << PART_SYNTH_DONE)).toBe(u1);
    expect(t.find(j, 0, STATES_WAITING, 2)).toBe(u1);
    expect(t.find(j, 0, STATES_WAITING, 3)).toBeNull();
    expect(t.find(j, 0, STATES_ON_GPU)).toBe(u2);
    expect(t.find(j, 0, STATES_ON_GPU, 3)).toBe(u2);
    expect(t.find(j, 1, STATES_ON_GPU)).toBe(other);
    expect(t.find(j, 2, STATES_ON_GPU)).toBeNull();
    t.finish(u0, END_LOST, 0);
    expect(t.find(j, 0, STATES_WAITING)).toBe(u1);
    t.finish(u2, END_DONE, 0);
    expect(t.find(j, 0, STATES_ON_GPU)).toBeNull();
    // The state masks, bit by bit.
    expect(STATES_WAITING).toBe((1 << 15) | (1 << PART_SYNTHESIZING) | (1 << PART_SYNTH_DONE));
    expect(STATES_SYNTH).toBe((1 << 15) | (1 << PART_SYNTHESIZING));
    expect(STATES_ON_GPU).toBe((1 << PART_GPU) | (1 << PART_FINALIZING));
  });
});

describe('TimelineJobs: live counts per kind', () => {
  test('setState moves a unit between live states of its job slot; done leaves them', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    const u = t.newUnit(j, 0);
    t.setState(u, PART_SYNTHESIZING);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ synthesizing: 1 });
    expect(j.live).toBe(1);
    t.setState(u, PART_SYNTH_DONE);
    t.setState(u, PART_GPU);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ gpu: 1 });
    t.setState(u, PART_FINALIZING);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ finalizing: 1 });
    expect(j.live).toBe(1);
    t.setState(u, PART_DONE);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({});
    expect(j.live).toBe(0);
    // From done (not live) to pending: counted in again.
    t.setState(u, PART_PENDING);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ pending: 1 });
    for (let k = 0; k < OTHER_KIND_INDEX; k++) expect(live(t, k)).toEqual({});
  });

  test('an ended unit is not live: moving it counts nothing', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    const u = t.newUnit(j, 0);
    t.setState(u, PART_GPU);
    t.finish(u, END_FAILED, 7);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({});
    expect(u.state).toBe(PART_GPU);
    t.setState(u, PART_SYNTHESIZING); // from: not counted (ended); to: counted
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ synthesizing: 1 });
  });

  test('finish: done moves to PART_DONE, another end only leaves the counts; once; endedT when the last live unit of a picked-up job ends', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    const a = t.newUnit(j, 0);
    const b = t.newUnit(j, 1);
    const c = t.newUnit(j, 2);
    t.setState(a, PART_GPU);
    t.setState(b, PART_GPU);
    a.pickT = 1;
    b.pickT = 2;
    t.finish(a, END_DONE, 100);
    expect(a.state).toBe(PART_DONE);
    expect(a.end).toBe(END_DONE);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ gpu: 1 });
    expect(Number.isNaN(j.endedT)).toBe(true); // b still live
    t.finish(a, END_LOST, 150); // a second end changes nothing
    expect(a.end).toBe(END_DONE);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ gpu: 1 });
    t.finish(b, END_SKIPPED, 200);
    expect(b.state).toBe(PART_GPU);
    expect(b.end).toBe(END_SKIPPED);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({});
    expect(j.live).toBe(0);
    expect(j.endedT).toBe(200);
    // A unit never picked up (no pickT) ending does not stamp the job's end.
    j.endedT = NaN;
    t.finish(c, END_LOST, 300);
    expect(c.end).toBe(END_LOST);
    expect(Number.isNaN(j.endedT)).toBe(true);
    expect(j.live).toBe(0);
  });
});

describe('TimelineJobs: time and partitions counted per kind', () => {
  test('a resolved job counts at once and observes with its handle and partition', () => {
    const t = new TimelineJobs();
    const r = recorder();
    t.observer = r.observer;
    const j = t.job('j', 0);
    t.setKind(j, 1, 'test');
    t.addGpu(j, 2e9, 5, true);
    t.addGpu(j, 5e8, 6, false);
    t.addSynth(j, 3e9, 5);
    expect(t.kGpuNs[1]).toBe(2.5e9);
    expect(t.kParts[1]).toBe(1);
    expect(t.kPartsFailed[1]).toBe(1);
    expect(t.kSynthNs[1]).toBe(3e9);
    expect(r.calls).toEqual([`gpu k1 2s job${j.handle} p5`, `gpu k1 0.5s job${j.handle} p6`, `synth k1 3s job${j.handle} p5`]);
    for (let k = 0; k < KIND_SLOTS; k++) if (k !== 1) expect([t.kGpuNs[k], t.kParts[k], t.kPartsFailed[k], t.kSynthNs[k]]).toEqual([0, 0, 0, 0]);
  });

  test('an unresolved job holds its time back and hands it on, in order, when its kind becomes known', () => {
    const t = new TimelineJobs();
    const r = recorder();
    t.observer = r.observer;
    const kinds: TlJob[] = [];
    t.onKind = (job) => kinds.push(job);
    const j = t.job('j', 0);
    t.addSynth(j, 1e9, 0);
    t.addGpu(j, 2e9, 0, true);
    t.addGpu(j, 4e9, 1, false);
    expect(r.calls).toEqual([]);
    expect([...t.kGpuNs, ...t.kSynthNs, ...t.kParts, ...t.kPartsFailed].every((x) => x === 0)).toBe(true);
    t.setKind(j, 2, 'status');
    expect(j).toMatchObject({ kind: 2, evidence: 'status', liveSlot: 2, pend: null });
    expect(t.unresolved.has(j)).toBe(false);
    expect(kinds).toEqual([j]);
    expect(t.kGpuNs[2]).toBe(6e9);
    expect(t.kSynthNs[2]).toBe(1e9);
    expect(t.kParts[2]).toBe(1);
    expect(t.kPartsFailed[2]).toBe(1);
    expect(r.calls).toEqual([`synth k2 1s job${j.handle} p0`, `gpu k2 2s job${j.handle} p0`, `gpu k2 4s job${j.handle} p1`]);
    // A second kind changes nothing.
    t.setKind(j, 3, 'other');
    expect(j.kind).toBe(2);
    expect(kinds).toEqual([j]);
    expect(t.kParts[3]).toBe(0);
  });

  test('what an unresolved job holds back is bounded; every failure and second is still counted', () => {
    const t = new TimelineJobs();
    const r = recorder();
    t.observer = r.observer;
    const j = t.job('j', 0);
    const n = 5000;
    for (let i = 0; i < n; i++) t.addGpu(j, 1e6, i, i % 2 === 0);
    expect(j.pend!.obs.length).toBeLessThanOrEqual(4096 + 2);
    t.setKind(j, 0, 'test');
    expect(t.kParts[0]).toBe(n / 2);
    expect(t.kPartsFailed[0]).toBe(n / 2);
    expect(t.kGpuNs[0]).toBe(n * 1e6);
    // Observations beyond the bound are dropped (histograms only), the first ones kept.
    expect(r.calls.length).toBe(Math.ceil(4096 / 3));
    expect(r.calls[0]).toBe(`gpu k0 0.001s job${j.handle} p0`);
  });

  test('setKind moves the live units from `other` to the kind; evict takes them out and forgets the job', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    const a = t.newUnit(j, 0);
    const b = t.newUnit(j, 1);
    const c = t.newUnit(j, 2);
    const d = t.newUnit(j, 3);
    t.setState(a, PART_GPU);
    t.setState(b, PART_SYNTHESIZING);
    t.setState(c, PART_GPU);
    t.finish(c, END_DONE, 0);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ gpu: 1, synthesizing: 1 });
    t.setKind(j, 1, 'test');
    expect(live(t, OTHER_KIND_INDEX)).toEqual({});
    expect(live(t, 1)).toEqual({ gpu: 1, synthesizing: 1 });
    // A job resolved to `other` stays in its slot.
    const o = t.job('o', 0);
    const ou = t.newUnit(o, 0);
    t.setState(ou, PART_GPU);
    t.setKind(o, OTHER_KIND_INDEX, 'unresolved');
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ gpu: 1 });
    expect(t.unitsTracked).toBe(5);
    t.evict(j);
    expect(live(t, 1)).toEqual({});
    expect([a.end, b.end, c.end, d.end]).toEqual([END_LOST, END_LOST, END_DONE, END_LOST]);
    expect(j.live).toBe(0);
    expect(t.jobs.has('j')).toBe(false);
    expect(t.unitsTracked).toBe(1);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ gpu: 1 });
    const u = t.job('u', 0);
    t.evict(u);
    expect(t.unresolved.has(u)).toBe(false);
    expect(t.jobs.size).toBe(1);
  });
});

describe('TimelineJobs: edges the Stryker run found untested', () => {
  test('a monolithic unit after partitioned ones leaves the highest index seen', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    t.newUnit(j, 3);
    t.newUnit(j, MONO);
    expect(j.maxKey).toBe(3);
    expect(TimelineJobs.seenTotal(j)).toBe(4);
  });

  test('under the bound an ended unit is kept; at 64 exactly nothing is dropped; the oldest may be the first', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    const first = t.newUnit(j, 0);
    t.finish(first, END_LOST, 0);
    for (let i = 1; i < 64; i++) t.newUnit(j, i);
    expect(j.units.length).toBe(64);
    expect(j.units[0]).toBe(first);
    t.newUnit(j, 64);
    expect(j.units.length).toBe(64);
    expect(j.units).not.toContain(first);
  });

  test('find with worker 0 named skips a unit of another worker', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    const u = t.newUnit(j, 0);
    t.setState(u, PART_GPU);
    u.worker = 2;
    expect(t.find(j, 0, STATES_ON_GPU, 0)).toBeNull();
    u.worker = 0;
    expect(t.find(j, 0, STATES_ON_GPU, 0)).toBe(u);
  });

  test('synthesis observations held back are bounded too', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    for (let i = 0; i < 3000; i++) t.addSynth(j, 1e6, i);
    expect(j.pend!.obs.length).toBeLessThanOrEqual(4096 + 2);
    expect(j.pend!.synthNs).toBe(3000 * 1e6);
  });

  test('a job resolved to the first kind (slot 0) keeps it', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    t.setKind(j, 0, 'status');
    t.setKind(j, 2, 'grpc_metrics');
    expect(j.kind).toBe(0);
    expect(j.evidence).toBe('status');
  });

  test('an ended unit left in a live state does not move with its job to the kind', () => {
    const t = new TimelineJobs();
    const j = t.job('j', 0);
    const dead = t.newUnit(j, 0);
    t.setState(dead, PART_GPU);
    t.finish(dead, END_FAILED, 0); // ends in state GPU: out of the live counts
    const liveU = t.newUnit(j, 1);
    t.setState(liveU, PART_GPU);
    expect(live(t, OTHER_KIND_INDEX)).toEqual({ gpu: 1 });
    t.setKind(j, 1, 'test');
    expect(live(t, OTHER_KIND_INDEX)).toEqual({});
    expect(live(t, 1)).toEqual({ gpu: 1 });
  });
});
