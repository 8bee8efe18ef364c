/**
 * Mutation triage of src/engine/sources/attach/timeline-surface.ts, lines below ~700 (the
 * dispatch, pickups/starts/ends, kinds, GetMetrics matching, /status' word): behaviour the
 * scripted edges test (timeline-surface-edges.test.ts) leaves open. Same harness and the
 * same sources of expectations as there: upstream cuzk's TIMELINE format and behaviour
 * (curio e0294b0f, extern/cuzk/cuzk-core/src/engine.rs `timeline_event`; partitioned jobs
 * never name their kind, monolithic ones on SYNTH_START kind=; one GPU_END per partition
 * attempt; CUZK_DISABLE_SPLIT_PROVE=1 writes no GPU_START/GPU_END), docs/upstream-conformance.md,
 * and the rules in the headers of timeline-surface.ts and timeline-clock.ts. Values are
 * computed by hand from the lines fed.
 *
 * Clock: a line written at offset X is read at E + (X + 2) ms, so a run's time is its
 * offsets; a quiet log read to offset X exposes X - 1000 ms (the 1 s minimum lag).
 */
import { TimelineSurface, type TimelineOptions } from '../../src/engine/sources/attach/timeline-surface';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { kindIndex, OTHER_KIND_INDEX } from '../../src/engine/model/kinds';
import { END_DONE, END_FAILED, END_NONE, MONO, type TlUnit } from '../../src/engine/sources/attach/timeline-jobs';
import type { Logger } from '../../src/util/logger';

import { PC2, SNAP, WPOST, WIN, OTHER, MS, E, LATE, tl, H, part } from './timeline-surface-harness';

const hrOf = (x: number) => E + (x + LATE) * MS;

const D0 = 'worker=0,partition=0';

describe('kinds', () => {
  test('a partitioned SYNTH_START naming a kind is not batched proving (that is a monolithic PoRep/SnapDeals)', () => {
    const h = new H();
    h.feed(tl(100, 'SYNTH_START', 'job-p', 'partition=0,kind=porep-c2'));
    expect(h.s.batchedSeen).toBe(false);
    h.feed(tl(200, 'SYNTH_START', 'job-s', 'partition=3,kind=snap-update'));
    expect(h.s.batchedSeen).toBe(false);
  });

  test('the resolver answering PoRep (the first kind) is taken; its "no kind" answer leaves the request id to decide', () => {
    const h = new H();
    h.s.resolver = (id) => (id === 'job-r' ? { kind: PC2, evidence: 'status' } : id === 'snap-4-4' ? { kind: -1, evidence: 'status' } : null);
    h.feed(tl(10, 'SYNTH_START', 'job-r', 'partition=0'), tl(20, 'SYNTH_START', 'snap-4-4', 'partition=0'));
    expect([h.s.jobById('job-r')!.kind, h.s.jobById('job-r')!.evidence]).toEqual([PC2, 'status']);
    expect([h.s.jobById('snap-4-4')!.kind, h.s.jobById('snap-4-4')!.evidence]).toEqual([SNAP, 'request_id']);
    expect([h.s.kinds.counts.get('status'), h.s.kinds.counts.get('request_id')]).toEqual([1, 1]);
  });

  test('an unknown kind name: the counted error says which name was folded into "other"', () => {
    const h = new H();
    h.feed(tl(100, 'SYNTH_START', 'm-1', 'kind=quantum-post'));
    expect(h.err('unknown_proof_kind')).toBe(1);
    expect(h.errors.lastMessage).toBe('unknown proof kind folded into "other": "quantum-post"');
    expect(h.s.jobById('m-1')!.kind).toBe(OTHER);
  });
});

describe('a held line (going back, vouched for by the reads) that turns out the old run\'s', () => {
  test('applied as a live line: its synthesis counted', () => {
    const h = new H();
    h.feed(tl(1000, 'SYNTH_START', 'porep-1-1', 'partition=0'), tl(5000, 'GPU_QUEUE', 'porep-1-1', 'partition=1'));
    h.readTo(10_000);
    h.write(tl(4800, 'SYNTH_END', 'porep-1-1', 'partition=0,synth_ms=100'));
    expect(h.synthMs(PC2)).toBe(0); // held
    expect(h.off(h.s.nowNs())).toBe(9000);
    h.nowMs = 10_050;
    h.write(tl(10_040, 'GPU_QUEUE', 'porep-1-1', 'partition=2'));
    expect(h.err('timeline_restart')).toBe(0);
    expect(h.synthMs(PC2)).toBe(100);
  });
});

describe('GPU_END repeated: the message', () => {
  test('a monolithic job\'s repeat names no partition', () => {
    const h = new H();
    const W = 'wdpost-1-0';
    h.feed(tl(1000, 'SYNTH_START', W, 'kind=window-post'), tl(1500, 'SYNTH_END', W, 'synth_ms=500'), tl(1500, 'GPU_QUEUE', W, 'monolithic'));
    h.feed(tl(1600, 'GPU_PICKUP', W, 'worker=1'), tl(1600, 'GPU_START', W, 'worker=1'), tl(4000, 'GPU_END', W, 'worker=1,partition=7,gpu_ms=2400'));
    h.feed(tl(4000, 'GPU_END', W, 'worker=1,partition=7,gpu_ms=2400'));
    expect(h.err('timeline_end_repeated')).toBe(1);
    expect(h.errors.lastMessage).toMatch(/^a GPU_END of job "wdpost-1-0" at offset 4000 ms \(gpu_ms 2400\) repeats one that ended at 4000 ms: not counted/);
  });
});

describe('split mode: said anew for each daemon run', () => {
  test('a restart in the catch-up, then pickups with no GPU_START again: the "no split proving" warning again', () => {
    const h = new H();
    const W = 'GPU pickups are not followed by GPU_START lines';
    h.history(tl(3000, 'GPU_PICKUP', 'porep-1-1', D0), tl(3051, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=0'), tl(3102, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=1'));
    expect(h.s.splitMode).toBe('off');
    expect(h.warns().filter((m) => m.startsWith(W))).toHaveLength(1);
    h.history(tl(100, 'GPU_PICKUP', 'porep-2-1', D0), tl(151, 'GPU_PICKUP', 'porep-2-2', 'worker=1,partition=0'), tl(202, 'GPU_PICKUP', 'porep-2-2', 'worker=1,partition=1'));
    expect(h.s.clock.runs).toBe(2);
    expect(h.s.splitMode).toBe('off');
    expect(h.warns().filter((m) => m.startsWith(W))).toHaveLength(2);
  });
});

describe('/status\' word on a stage (otherSurfaceEnded / otherSurfaceEndedParts)', () => {
  function split(): H {
    const h = new H();
    h.feed(tl(100, 'GPU_START', 'winpost-1-0a', 'worker=7,partition=0'), tl(100, 'GPU_END', 'winpost-1-0a', 'worker=7,partition=0,gpu_ms=0'));
    expect(h.s.splitMode).toBe('on');
    return h;
  }

  test('a job with one unit: the parts list finds it', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1000, 'GPU_START', 'porep-1-1', D0));
    h.s.otherSurfaceEndedParts('porep-1-1', [{ index: 0, state: 'done', gpu_ms: 50 }]);
    expect(h.unit('porep-1-1').otherEndMs).toBe(50);
  });

  test('a parts entry with index -1 (a monolithic job\'s): searched as one call, found', () => {
    const h = split();
    const W = 'wdpost-2-0';
    h.feed(tl(1000, 'SYNTH_START', W, 'kind=window-post'), tl(1100, 'SYNTH_END', W, 'synth_ms=100'), tl(1100, 'GPU_QUEUE', W, 'monolithic'));
    h.feed(tl(1200, 'GPU_PICKUP', W, 'worker=1'), tl(1200, 'GPU_START', W, 'worker=1'));
    expect(h.unit(W).key).toBe(MONO);
    h.s.otherSurfaceEndedParts(W, [{ index: -1, state: 'done', gpu_ms: 300 }]);
    expect(h.unit(W).otherEndMs).toBe(300);
  });

  test('split on: a partition finalizing (its worker moved on, no GPU_END yet) takes the word', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1000, 'GPU_START', 'porep-1-1', D0));
    h.feed(tl(1500, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(1500, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    h.s.otherSurfaceEnded('porep-1-1', 0, 400);
    expect(h.unit('porep-1-1', 0).otherEndMs).toBe(400);
  });

  test('the first word stands, a 0 ms one too', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1000, 'GPU_START', 'porep-1-1', D0));
    h.s.otherSurfaceEnded('porep-1-1', 0, 0);
    h.s.otherSurfaceEnded('porep-1-1', 0, 7);
    expect(h.unit('porep-1-1').otherEndMs).toBe(0);
  });

  function off(): H {
    const h = new H();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1051, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=0'), tl(1102, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=1'));
    expect(h.s.splitMode).toBe('off');
    return h;
  }

  test('split off: a stage that ended unseen gets its GPU time from the first word only, a 0 ms one too', () => {
    const h = off();
    const v = h.unit('porep-1-2', 0);
    h.s.otherSurfaceEnded('porep-1-2', 0, 0);
    h.s.otherSurfaceEnded('porep-1-2', 0, 30);
    expect([v.gpuMs, h.gpuMs(PC2), h.parts(PC2)]).toEqual([0, 0, 1]);
  });

  test('split off: a stage that ended with its GPU_END gets nothing more from the word', () => {
    const h = off();
    h.feed(tl(1500, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=500'));
    expect([h.unit('porep-1-1').end, h.gpuMs(PC2), h.parts(PC2)]).toEqual([END_DONE, 500, 1]);
    h.s.otherSurfaceEnded('porep-1-1', 0, 400);
    expect([h.unit('porep-1-1').gpuMs, h.gpuMs(PC2), h.parts(PC2)]).toEqual([500, 500, 1]);
  });
});

describe('workers seen on any line', () => {
  function split(): H {
    const h = new H();
    h.feed(...part('porep-0-0', 0, 7, 100, 600));
    expect(h.s.splitMode).toBe('on');
    return h;
  }

  test('a pickup of a failed job\'s partition (dropped by upstream) still shows its worker', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1100, 'GPU_PICKUP', 'porep-2-2', D0)); // the first was a skip: porep-1-1 failed
    expect(h.s.jobById('porep-1-1')!.failed).toBe(true);
    expect(h.s.workerIds()).toEqual([0, 7]);
    h.feed(tl(1200, 'GPU_PICKUP', 'porep-1-1', 'worker=5,partition=1'));
    expect(h.s.skips).toBe(2);
    expect(h.s.workerIds()).toEqual([0, 5, 7]);
  });

  test('a GPU_END naming another worker than the unit\'s: that worker is seen too', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1000, 'GPU_START', 'porep-1-1', D0));
    h.feed(tl(1400, 'GPU_END', 'porep-1-1', 'worker=3,partition=0,gpu_ms=400'));
    expect(h.s.workerIds()).toEqual([0, 3, 7]);
  });
});

describe('GPU_START and GPU_END matched to the right unit', () => {
  function split(): H {
    const h = new H();
    h.feed(...part('porep-0-0', 0, 7, 100, 600));
    expect(h.s.splitMode).toBe('on');
    return h;
  }

  test('a GPU_START of another job than the worker\'s unconfirmed pickup: that pickup was a skip, the start stands for its own (lost) pickup', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1100, 'GPU_START', 'porep-2-2', D0));
    expect(h.unit('porep-1-1').started).toBe(false);
    expect(h.s.jobById('porep-2-2')!.units.map((u) => [u.worker, u.started])).toEqual([[0, true]]);
    expect(h.s.workers.own[0]).toBe(h.unit('porep-2-2'));
  });

  test('a GPU_START of another partition of the same job: likewise', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1100, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    expect(h.unit('porep-1-1', 0).started).toBe(false);
    expect([h.unit('porep-1-1', 1).key, h.unit('porep-1-1', 1).started]).toEqual([1, true]);
    expect(h.s.workers.own[0]).toBe(h.unit('porep-1-1', 1));
  });

  test('the end of another job\'s partition finalizing on the worker: that unit ends, the worker keeps its current one', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1000, 'GPU_START', 'porep-1-1', D0));
    h.feed(tl(1500, 'GPU_PICKUP', 'porep-2-2', D0), tl(1500, 'GPU_START', 'porep-2-2', D0));
    h.feed(tl(1600, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=600'));
    expect([h.unit('porep-1-1').end, h.unit('porep-2-2').end]).toEqual([END_DONE, END_NONE]);
    expect(h.s.workers.own[0]).toBe(h.unit('porep-2-2'));
    expect(h.gpuMs(PC2)).toBe(500 + 600);
  });

  test('a GPU_END with no partition= ends the worker\'s unit of that job (matched by job and worker)', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=2'), tl(1000, 'GPU_START', 'porep-1-1', 'worker=0,partition=2'));
    h.feed(tl(1300, 'GPU_END', 'porep-1-1', 'worker=0,gpu_ms=300'));
    expect(h.s.jobById('porep-1-1')!.units.map((u) => [u.key, u.end])).toEqual([[2, END_DONE]]);
    expect([h.gpuMs(PC2), h.parts(PC2), h.s.workers.busy[0]]).toEqual([800, 2, 0]);
  });

  test('a monolithic job\'s end naming another worker, with or without partition=: its one unit ends', () => {
    for (const detail of ['worker=3,gpu_ms=2400', 'worker=3,partition=7,gpu_ms=2400']) {
      const h = split();
      const W = 'wdpost-1-0';
      h.feed(tl(1000, 'SYNTH_START', W, 'kind=window-post'), tl(1500, 'SYNTH_END', W, 'synth_ms=500'), tl(1500, 'GPU_QUEUE', W, 'monolithic'));
      h.feed(tl(1600, 'GPU_PICKUP', W, 'worker=1'), tl(1600, 'GPU_START', W, 'worker=1'), tl(4000, 'GPU_END', W, detail));
      expect([detail, h.s.jobById(W)!.units.map((u) => [u.key, u.end, u.worker])]).toEqual([detail, [[MONO, END_DONE, 1]]]);
      expect([h.gpuMs(WPOST), h.parts(WPOST), h.busyMs(1), h.s.workers.busy[1]]).toEqual([2400, 1, 2400, 0]);
    }
  });
});

describe('GetMetrics\' proof counts (proofsEnded)', () => {
  const counts = (o: Record<string, number>) => {
    const f = new Float64Array(OTHER + 1);
    for (const [k, n] of Object.entries(o)) f[kindIndex(k)] = n;
    return f;
  };

  test('a job whose last line is read exactly at the answer is a candidate', () => {
    const h = new H();
    h.feed(...part('job-a', 0, 0, 1000, 2000));
    const a = h.s.jobById('job-a')!;
    expect(h.s.toHr(a.endedT)).toBe(hrOf(2000));
    h.s.proofsEnded(counts({ 'window-post': 1 }), hrOf(2000));
    expect([a.kind, a.evidence, a.accounted]).toEqual([WPOST, 'grpc_metrics', true]);
  });

  test('one PoRep unexplained (the first kind) and one job without a kind: it is a PoRep', () => {
    const h = new H();
    h.feed(...part('job-a', 0, 0, 1000, 2000));
    h.s.proofsEnded(counts({ 'porep-c2': 1 }), hrOf(3000));
    expect(h.s.jobById('job-a')!.kind).toBe(PC2);
  });

  test('two kinds unexplained, one of them PoRep, one job without a kind: nothing inferred', () => {
    const h = new H();
    h.feed(...part('job-a', 0, 0, 1000, 2000));
    h.s.proofsEnded(counts({ 'porep-c2': 1, 'snap-update': 1 }), hrOf(3000));
    expect([h.s.jobById('job-a')!.kind, h.s.jobById('job-a')!.accounted]).toEqual([-1, false]);
  });

  test('nothing unexplained: a job without a kind stays a candidate, nothing counted', () => {
    const h = new H();
    h.feed(...part('job-a', 0, 0, 1000, 2000));
    h.s.proofsEnded(counts({}), hrOf(3000));
    expect([h.s.jobById('job-a')!.kind, h.s.jobById('job-a')!.accounted, h.s.kinds.counts.get('grpc_metrics')]).toEqual([-1, false, 0]);
  });

  test('known kinds matched oldest end first, whatever order the jobs began in', () => {
    const h = new H();
    // porep-1-1 begins first and ends last; porep-2-2 begins later and ends first.
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1000, 'GPU_START', 'porep-1-1', D0));
    h.feed(...part('porep-2-2', 0, 1, 1100, 1500));
    h.feed(tl(3000, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=2000'));
    const p1 = h.s.jobById('porep-1-1')!;
    const p2 = h.s.jobById('porep-2-2')!;
    h.s.proofsEnded(counts({ 'porep-c2': 1 }), hrOf(3500));
    expect([p1.accounted, p2.accounted]).toEqual([false, true]);
  });
});

describe('a held line: what the next line says', () => {
  const mk = () => {
    const h = new H();
    h.feed(tl(1000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'), tl(5000, 'GPU_QUEUE', 'porep-1-1', 'partition=1'));
    h.readTo(10_000); // read to its end at 10 s: nothing more
    h.write(tl(4800, 'GPU_QUEUE', 'porep-2-2', 'partition=0'));
    expect(h.s.jobById('porep-2-2')).toBeUndefined(); // held
    return h;
  };

  test('a next line only a little back (less than 100 ms) but still from before what the reads vouch for: the new run\'s', () => {
    const h = mk();
    h.nowMs = 10_050;
    h.write(tl(4990, 'GPU_QUEUE', 'porep-2-2', 'partition=1'));
    expect(h.err('timeline_restart')).toBe(1);
    expect([...h.s.jobs.keys()]).toEqual(['porep-2-2']);
    expect(h.s.jobById('porep-2-2')!.units).toHaveLength(2);
  });

  test('once released as the old run\'s, running stints are exposed with the reads again (no longer frozen)', () => {
    const h = mk();
    h.nowMs = 10_050;
    h.write(tl(10_040, 'GPU_QUEUE', 'porep-1-1', 'partition=2'));
    expect(h.err('timeline_restart')).toBe(0);
    const at = h.off(h.s.nowNs());
    h.readTo(40_000);
    const later = h.off(h.s.nowNs());
    expect(later).toBeGreaterThan(at);
    expect(later).toBeLessThanOrEqual(39_000); // at least the 1 s lag
  });
});

describe('a held line released by a line ahead of real time', () => {
  test('that line counts once toward the re-anchoring (20 lines, 30 s apart, same lead): 19 refused, the 20th a restart', () => {
    const h = new H();
    h.feed(tl(1000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'), tl(5000, 'GPU_QUEUE', 'porep-1-1', 'partition=1'));
    h.readTo(10_000);
    h.write(tl(4800, 'GPU_QUEUE', 'porep-2-2', 'partition=0'));
    expect(h.s.jobById('porep-2-2')).toBeUndefined(); // held
    for (let i = 0; i < 19; i++) {
      h.nowMs = 10_050 + i * 2000;
      h.write(tl(h.nowMs + 40_000, 'GPU_QUEUE', 'porep-3-3', `partition=${i}`));
    }
    expect(h.s.jobById('porep-2-2')).toBeDefined(); // released as the old run's
    expect([h.err('timeline_clock'), h.err('timeline_restart')]).toEqual([19, 0]);
    h.nowMs = 10_050 + 19 * 2000;
    h.write(tl(h.nowMs + 40_000, 'GPU_QUEUE', 'porep-3-3', 'partition=19'));
    expect([h.err('timeline_clock'), h.err('timeline_restart')]).toEqual([19, 1]);
  });
});

describe('durations belong to the end lines', () => {
  test('a gpu_ms / synth_ms on a line that is not an end (upstream writes none there) is no duration: nothing implausible, the line counts', () => {
    const h = new H();
    h.feed(...part('porep-0-0', 0, 7, 100, 600));
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0,gpu_ms=999999'), tl(1000, 'GPU_START', 'porep-1-1', 'worker=0,partition=0,synth_ms=999999'));
    h.feed(tl(1400, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=400'));
    expect([h.err('implausible'), h.gpuMs(PC2), h.parts(PC2), h.busyMs(0)]).toEqual([0, 900, 2, 400]);
  });
});

describe('bounds', () => {
  test('more than 200,000 units tracked: swept at once, not at 200,000', () => {
    const h = new H({ confirmMs: 100 });
    h.feed(tl(5000, 'GPU_PICKUP', 'job-held', 'worker=0,partition=0')); // tentative: a sweep would settle it
    const lines: string[] = [];
    // 1 unit above + 3999 jobs x 50 partitions + 49 = 200,000 units, 4000 jobs (under 10,000).
    for (let i = 1; i < 4000; i++) for (let p = 0; p < 50; p++) lines.push(tl(5500, 'GPU_QUEUE', `f-${i}`, `partition=${p}`));
    for (let p = 0; p < 49; p++) lines.push(tl(5500, 'GPU_QUEUE', 'f-4000', `partition=${p}`));
    h.nowMs = 5500;
    h.write(lines.join(''));
    expect(h.s.units.unitsTracked).toBe(200_000);
    expect(h.s.splitMode).toBe('unknown'); // no sweep yet: under a second since the last
    h.write(tl(5500, 'GPU_QUEUE', 'f-4000', 'partition=49'));
    expect(h.s.splitMode).toBe('off');
    expect(h.s.units.unitsTracked).toBeLessThanOrEqual(180_000);
    expect(h.s.jobById('job-held')).toBeDefined();
  });
});
