/**
 * Issue 23, mutation follow-up (lines >= 700 of timeline-surface.ts at cea0886: the sweep,
 * restarts, claims, getters): behaviour the scripted edges suite left open. Same harness and
 * the same sources of expectations as test/attach/timeline-surface-edges.test.ts (its header):
 * upstream cuzk TIMELINE format and behaviour (curio e0294b0f, extern/cuzk/cuzk-core/src/engine.rs),
 * docs/upstream-conformance.md, the rules in the headers of timeline-surface.ts and
 * timeline-clock.ts; values computed by hand.
 *
 * Clock: a line written at offset X is read at E + (X + 2) ms, so a run's time is its
 * offsets; a quiet log read to offset X exposes X - 1000 ms (the 1 s minimum lag).
 */
import {
  TimelineSurface,
  TIMELINE_ERRORS,
  SNAP_MIN_PARTITION,
  type TimelineOptions,
  type KindSource,
} from '../../src/engine/sources/attach/timeline-surface';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { kindIndex, LIVE_PARTITION_STATES, OTHER_KIND_INDEX, PART_FINALIZING, PART_GPU, PART_SYNTHESIZING, PART_SYNTH_DONE } from '../../src/engine/model/kinds';
import { END_ABANDONED, END_DONE, END_FAILED, END_LOST, END_NONE, END_SKIPPED, END_UNSEEN, MONO, type TlUnit } from '../../src/engine/sources/attach/timeline-jobs';
import type { Logger } from '../../src/util/logger';
import type { Every } from '../../src/engine/sources/timers';

import { PC2, SNAP, WPOST, WIN, OTHER, MS, E, LATE, tl, H, part } from './timeline-surface-harness';

const D0 = 'worker=0,partition=0';

/** Split proving on, no stage length of any kind seen (a zero-length WinningPoSt stage). */
function split(o: Partial<TimelineOptions> = {}): H {
  const h = new H(o);
  h.feed(tl(100, 'GPU_START', 'winpost-1-0a', 'worker=7,partition=0'), tl(100, 'GPU_END', 'winpost-1-0a', 'worker=7,partition=0,gpu_ms=0'));
  return h;
}

/** Split proving off: a pickup, then worker 1 picking up twice more than 50 ms apart with no GPU_START. */
function splitOff(h: H, job: string, p: number): void {
  h.feed(tl(1000, 'GPU_PICKUP', job, `worker=0,partition=${p}`), tl(1051, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=0'), tl(1102, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=1'));
  expect(h.s.splitMode).toBe('off');
}

describe('the sweep: what it gives up, once', () => {
  test('a unit given up (no GPU_END) is given up once: later sweeps count and warn nothing more; it is not "on the GPU"', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1000, 'GPU_START', 'porep-1-1', D0));
    h.feed(tl(30_000, 'SYNTH_START', 'porep-1-1', 'partition=5')); // the job stays in flight
    h.at(1000 + 60_000 + 1000 + 1);
    expect(h.unit('porep-1-1').end).toBe(END_LOST);
    expect(h.err('timeline_gpu_end_missing')).toBe(1);
    expect(h.s.supersededOnGpu()).toBe(0);
    h.at(1000 + 60_000 + 5000);
    h.at(1000 + 120_000);
    expect(h.err('timeline_gpu_end_missing')).toBe(1);
    expect(h.warns()).toHaveLength(1);
    expect(h.s.supersededOnGpu()).toBe(0);
  });
});

describe('the longest stage per kind', () => {
  test('a shorter stage after a longer one of the same kind leaves the longest: timeout 3x 30 s', () => {
    const h = split();
    h.feed(...part('porep-1-1', 0, 0, 1000, 31_000)); // 30 s
    h.feed(...part('porep-1-1', 1, 0, 31_000, 41_000)); // 10 s after it
    h.feed(tl(50_000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=2'), tl(50_000, 'GPU_START', 'porep-1-1', 'worker=0,partition=2'));
    for (let t = 60_000; t < 160_000; t += 20_000) h.feed(tl(t, 'GPU_QUEUE', 'porep-1-1', 'partition=9'));
    h.at(50_000 + 90_000 + 1000); // 90 s: not yet (3x 10 s would be the 60 s floor)
    expect(h.unit('porep-1-1', 2).end).toBe(END_NONE);
    h.at(50_000 + 90_000 + 1000 + 1);
    expect(h.unit('porep-1-1', 2).end).toBe(END_LOST);
    expect(h.warns()[0]).toContain('within 90 s of its pickup');
  });

  test('PoRep (kind index 0) keeps its own longest stage beside a longer SnapDeals one', () => {
    expect(PC2).toBe(0);
    const h = split();
    const [pa, pb, pc] = part('porep-1-1', 0, 0, 1000, 31_000); // PoRep 30 s: timeout 90 s
    const [sa, sb, sc] = part('snap-1-1', 0, 1, 1000, 51_000); // SnapDeals 50 s: 150 s
    h.feed(pa, pb, sa, sb, pc, sc);
    h.feed(tl(60_000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(60_000, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    for (let t = 70_000; t < 170_000; t += 20_000) h.feed(tl(t, 'GPU_QUEUE', 'porep-1-1', 'partition=9'));
    h.at(60_000 + 90_000 + 1000);
    expect(h.unit('porep-1-1', 1).end).toBe(END_NONE);
    h.at(60_000 + 90_000 + 1000 + 1);
    expect(h.unit('porep-1-1', 1).end).toBe(END_LOST);
    expect(h.busyMs(0) - 30_000).toBe(45_000); // credited to 1.5x 30 s
  });
});

describe('/status’ word on a GPU stage: observations and edges', () => {
  const obs = (h: H): string[] => {
    const seen: string[] = [];
    h.s.observer = { partitionGpu: (k, s, _j, p) => void seen.push(`gpu ${k} ${s} ${p}`), partitionSynthesis: () => undefined };
    return seen;
  };

  test('split off: a word of 0 ms is an end too (done at once, nothing counted on the GPU)', () => {
    const h = new H();
    splitOff(h, 'porep-1-1', 0);
    h.s.otherSurfaceEnded('porep-1-1', 0, 0);
    h.at(1200);
    const u = h.unit('porep-1-1');
    expect([u.end, u.gpuMs, h.parts(PC2), h.gpuMs(PC2)]).toEqual([END_DONE, 0, 1, 0]);
  });

  test('split off: the observation carries the partition index (3), and 0 for a monolithic job', () => {
    const h = new H();
    const seen = obs(h);
    splitOff(h, 'porep-1-1', 3);
    h.feed(tl(1200, 'SYNTH_START', 'winpost-5-0a', 'kind=winning-post'), tl(1300, 'GPU_PICKUP', 'winpost-5-0a', 'worker=2'));
    h.s.otherSurfaceEnded('porep-1-1', 3, 400);
    h.s.otherSurfaceEnded('winpost-5-0a', -1, 20);
    h.at(1400);
    expect(seen).toEqual([`gpu ${PC2} 0.4 3`, `gpu ${WIN} 0.02 0`]);
  });

  test('split off, a stage that ended unseen: its observation carries the partition index (1), 0 for a monolithic job', () => {
    const h = new H();
    const seen = obs(h);
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(1100, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=2'));
    h.feed(tl(1200, 'SYNTH_START', 'winpost-5-0a', 'kind=winning-post'), tl(1300, 'GPU_PICKUP', 'winpost-5-0a', 'worker=2'), tl(1400, 'GPU_PICKUP', 'porep-1-1', 'worker=2,partition=3'));
    expect(h.s.splitMode).toBe('off');
    expect([h.unit('porep-1-1', 0).end, h.unit('winpost-5-0a').end]).toEqual([END_UNSEEN, END_UNSEEN]);
    h.s.otherSurfaceEnded('porep-1-1', 1, 40);
    h.s.otherSurfaceEnded('winpost-5-0a', -1, 20);
    expect(seen).toEqual([`gpu ${PC2} 0.04 1`, `gpu ${WIN} 0.02 0`]);
  });

  test('split on, a failure: the observation carries the partition index (4), and 0 for a monolithic job', () => {
    const h = split();
    const seen = obs(h);
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=4'), tl(1000, 'GPU_START', 'porep-1-1', 'worker=0,partition=4'));
    h.feed(tl(1000, 'SYNTH_START', 'winpost-5-0a', 'kind=winning-post'), tl(1000, 'GPU_PICKUP', 'winpost-5-0a', 'worker=2'), tl(1000, 'GPU_START', 'winpost-5-0a', 'worker=2'));
    h.s.otherSurfaceEnded('porep-1-1', 4, 400);
    h.s.otherSurfaceEnded('winpost-5-0a', -1, 400);
    h.at(1000 + 400 + 2000 + 1000 + 1);
    expect([h.unit('porep-1-1').end, h.unit('winpost-5-0a').end]).toEqual([END_FAILED, END_FAILED]);
    expect(seen).toEqual([`gpu ${PC2} 0.4 4`, `gpu ${WIN} 0.4 0`]);
  });
});

describe('kinds learnt late', () => {
  const late = (): { h: H; answer: { kind: number } | null } => {
    const x: { h: H | null; answer: { kind: number } | null } = { h: null, answer: null };
    const resolver: KindSource = () => (x.answer ? { kind: x.answer.kind, evidence: 'status' } : null);
    x.h = new H({ unresolvedMs: 10_000_000 });
    x.h.s.resolver = resolver;
    return x as { h: H; answer: { kind: number } | null };
  };

  test('the sweep asks again: a kind the other surfaces learnt after the job’s first line', () => {
    const x = late();
    x.h.feed(tl(1000, 'GPU_QUEUE', 'job-x', 'partition=0'));
    expect(x.h.s.jobById('job-x')!.kind).toBe(-1);
    x.answer = { kind: SNAP };
    x.h.at(2500);
    expect(x.h.s.jobById('job-x')!.kind).toBe(SNAP);
  });

  test('a job forgotten (quiet) asks once more first: its time under the kind learnt, not "other"', () => {
    const x = late();
    x.h.feed(...part('job-x', 0, 0, 1000, 2000));
    const j = x.h.s.jobById('job-x')!;
    x.answer = { kind: SNAP };
    // No sweep in between: the next one both resolves and forgets (60 s quiet).
    x.h.at(2000 + 60_000 + 1000);
    expect(x.h.s.jobById('job-x')).toBeUndefined();
    expect([j.kind, x.h.gpuMs(SNAP), x.h.gpuMs(OTHER), x.h.err('timeline_unresolved_kind')]).toEqual([SNAP, 1000, 0, 0]);
  });

  test('a restart asks once more before dropping the jobs: their time under the kind learnt', () => {
    const x = late();
    x.h.feed(...part('job-x', 0, 0, 1000, 2000), tl(5000, 'GPU_QUEUE', 'porep-1-1', 'partition=1'));
    const j = x.h.s.jobById('job-x')!;
    x.answer = { kind: SNAP };
    x.h.nowMs = 5500;
    x.h.write(tl(100, 'GPU_QUEUE', 'porep-2-2', 'partition=0')); // back by 4.9 s: a restart (no sweep before it)
    expect(x.h.err('timeline_restart')).toBe(1);
    expect([j.kind, x.h.gpuMs(SNAP), x.h.gpuMs(OTHER), x.h.err('timeline_unresolved_kind')]).toEqual([SNAP, 1000, 0, 0]);
  });

  test('a job counted under "other": the counted message names the job', () => {
    const h = new H({ unresolvedMs: 10_000 });
    h.feed(...part('job-u', 0, 0, 1000, 2000));
    h.at(2000 + 10_000 + 1000);
    expect(h.err('timeline_unresolved_kind')).toBe(1);
    expect(h.errors.lastMessage).toContain('"job-u"');
  });
});

describe('restarts: counted and said each time', () => {
  test('two restarts with the same offsets: counted twice, warned twice; the message names the offsets', () => {
    const h = new H();
    h.feed(tl(5000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'));
    h.nowMs = 6000;
    h.write(tl(100, 'GPU_QUEUE', 'porep-2-2', 'partition=0'));
    expect(h.errors.lastMessage).toContain('5000 ms -> 100 ms');
    h.nowMs = 10_900;
    h.write(tl(5000, 'GPU_QUEUE', 'porep-2-2', 'partition=1'));
    h.nowMs = 11_000;
    h.write(tl(100, 'GPU_QUEUE', 'porep-3-3', 'partition=0'));
    expect(h.err('timeline_restart')).toBe(2);
    const w = 'cuzk restarted (TIMELINE offsets went back from 5000 ms to 100 ms); keeping totals';
    expect(h.warns().filter((m) => m === w)).toHaveLength(2);
  });
});

describe('staleClaim()', () => {
  test('a failed job: every partition is stale, also one whose newest unit ended done', () => {
    const h = split();
    h.feed(...part('porep-1-1', 0, 0, 1000, 1500));
    h.feed(tl(1500, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(1500, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    h.s.otherSurfaceEnded('porep-1-1', 1, 100);
    h.at(1500 + 100 + 2000 + 1000 + 1);
    expect(h.s.jobById('porep-1-1')!.failed).toBe(true);
    expect(h.unit('porep-1-1', 0).end).toBe(END_DONE);
    expect(h.s.staleClaim('porep-1-1', 0)).toBe(true);
  });
});

describe('the sweep leaves alone what is not due', () => {
  test('a unit queued for the GPU (SYNTH_END) is not given up by the sweeps of the next seconds', () => {
    const h = new H();
    h.feed(tl(1000, 'SYNTH_START', 'porep-1-1', 'partition=0'), tl(1500, 'SYNTH_END', 'porep-1-1', 'partition=0,synth_ms=500'));
    h.at(3000);
    h.at(10_000);
    expect([h.unit('porep-1-1').state, h.unit('porep-1-1').end]).toEqual([PART_SYNTH_DONE, END_NONE]);
  });

  test('10,000 jobs (the limit, not over it): none forgotten by age', () => {
    const h = new H();
    const lines: string[] = [];
    for (let i = 1; i <= 10_000; i++) lines.push(tl(5000, 'GPU_QUEUE', `f-${i}`, 'partition=0'));
    h.nowMs = 5000;
    h.write(...lines);
    h.at(6500);
    expect(h.s.jobs.size).toBe(10_000);
  });
});
