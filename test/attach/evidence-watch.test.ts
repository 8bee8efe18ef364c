/**
 * Issue 23: EvidenceWatch (attach/evidence-watch.ts), the table in its header, one row at a
 * time: configurations of cuzk that take a surface's evidence away, seen from what the
 * surfaces say, over 60 s windows on the exporter's clock (the test passes the times):
 *
 *   timeline no_lines         gRPC counts >= 2 proofs ending in the window, TIMELINE (up) wrote no line
 *   timeline split_prove_off  TIMELINE saw pickups not followed by GPU_START (its splitMode 'off')
 *   timeline batched          TIMELINE saw a batched SYNTH_START (its batchedSeen)
 *   status   no_pipelines     gRPC counts >= 2 PoRep/SnapDeals proofs ending in the window, /status (up)
 *                             listed no pipeline in it
 *
 * A reason clears as soon as its evidence comes back. The surfaces are stand-ins holding only
 * what the watch reads (their counters, their up, /status' jobs).
 */
import { KIND_SLOTS, OTHER_KIND_INDEX, kindIndex } from '../../src/engine/model/kinds';
import { DEGRADED_REASONS, EvidenceWatch } from '../../src/engine/sources/attach/evidence-watch';
import type { MergedAttachSource } from '../../src/engine/sources/attach/merge';

const S = 1e9;
const PORE = kindIndex('porep-c2');
const SNAP = kindIndex('snap-update');
const WDP = kindIndex('window-post');

function world(o: { grpc?: boolean; timeline?: boolean; status?: boolean } = { grpc: true, timeline: true, status: true }) {
  const grpc = o.grpc ? { kProofsCompleted: new Float64Array(KIND_SLOTS), kProofsFailed: new Float64Array(KIND_SLOTS) } : null;
  const timeline = o.timeline ? { eventsTotal: 0, up: true, splitMode: 'unknown', batchedSeen: false } : null;
  const status = o.status ? { up: true, model: { jobs: new Map<number, unknown>() } } : null;
  const watch = new EvidenceWatch({ grpc, timeline, status } as unknown as MergedAttachSource);
  return { grpc: grpc!, timeline: timeline!, status: status!, watch };
}

test('the reasons each surface can have', () => {
  expect(DEGRADED_REASONS).toEqual({ timeline: ['no_lines', 'split_prove_off', 'batched'], status: ['no_pipelines'] });
});

describe('timeline no_lines', () => {
  test('two proofs end in a 60 s window with no TIMELINE line: degraded at the window’s end, not before', () => {
    const w = world();
    w.watch.update(1000 * S); // the window starts
    w.grpc.kProofsCompleted[WDP] += 1;
    w.grpc.kProofsFailed[OTHER_KIND_INDEX] += 1; // every kind counts, failures too
    w.watch.update(1059.999 * S);
    expect(w.watch.reasons('timeline')).toEqual([]);
    w.watch.update(1060 * S);
    expect(w.watch.reasons('timeline')).toEqual(['no_lines']);
    expect(w.watch.degraded('timeline', 'no_lines')).toBe(true);
    expect(w.watch.reasons('status')).toEqual([]);
    // Stays through the next windows while nothing comes.
    w.watch.update(1130 * S);
    expect(w.watch.degraded('timeline', 'no_lines')).toBe(true);
    // A line: cleared at once, mid-window.
    w.timeline.eventsTotal = 1;
    w.watch.update(1131 * S);
    expect(w.watch.reasons('timeline')).toEqual([]);
  });

  test('one proof is not enough', () => {
    const w = world();
    w.watch.update(0);
    w.grpc.kProofsCompleted[PORE] += 1;
    w.watch.update(60 * S);
    expect(w.watch.reasons('timeline')).toEqual([]);
  });

  test('proofs counted before the window (the first answer) are not the window’s', () => {
    const w = world();
    w.grpc.kProofsCompleted[PORE] = 50;
    w.watch.update(0);
    w.grpc.kProofsCompleted[PORE] = 51;
    w.watch.update(60 * S);
    expect(w.watch.reasons('timeline')).toEqual([]);
    // The next window counts from 51.
    w.grpc.kProofsCompleted[PORE] = 53;
    w.watch.update(119 * S);
    expect(w.watch.reasons('timeline')).toEqual([]);
    w.watch.update(120 * S);
    expect(w.watch.reasons('timeline')).toEqual(['no_lines']);
  });

  test('a line in the window, or TIMELINE down: not degraded', () => {
    const a = world();
    a.watch.update(0);
    a.grpc.kProofsCompleted[PORE] += 5;
    a.timeline.eventsTotal = 3;
    a.watch.update(60 * S);
    expect(a.watch.reasons('timeline')).toEqual([]);
    const b = world();
    b.timeline.up = false;
    b.watch.update(0);
    b.grpc.kProofsCompleted[PORE] += 5;
    b.watch.update(60 * S);
    expect(b.watch.reasons('timeline')).toEqual([]);
  });

  test('without gRPC nothing is judged; without TIMELINE no no_lines', () => {
    const w = world({ timeline: true, status: true });
    w.watch.update(0);
    w.watch.update(100 * S);
    expect(w.watch.reasons('timeline')).toEqual([]);
    const g = world({ grpc: true, status: true });
    g.watch.update(0);
    g.grpc.kProofsCompleted[PORE] += 2;
    g.watch.update(60 * S);
    expect(g.watch.reasons('timeline')).toEqual([]);
    expect(g.watch.reasons('status')).toEqual(['no_pipelines']);
  });
});

describe('timeline split_prove_off and batched: as TIMELINE says, at once', () => {
  test('each shows while TIMELINE says so', () => {
    const w = world({ timeline: true });
    w.timeline.splitMode = 'off';
    expect(w.watch.reasons('timeline')).toEqual(['split_prove_off']);
    w.timeline.batchedSeen = true;
    expect(w.watch.reasons('timeline')).toEqual(['split_prove_off', 'batched']);
    w.timeline.splitMode = 'on';
    expect(w.watch.reasons('timeline')).toEqual(['batched']);
    expect(w.watch.degraded('timeline', 'batched')).toBe(true);
    expect(w.watch.degraded('timeline', 'split_prove_off')).toBe(false);
    expect(w.watch.reasons('status')).toEqual([]);
    expect(w.watch.reasons('grpc')).toEqual([]);
  });

  test('no TIMELINE: none', () => {
    const w = world({ grpc: true, status: true });
    expect(w.watch.reasons('timeline')).toEqual([]);
  });
});

describe('status no_pipelines', () => {
  test('two PoRep/SnapDeals proofs end in the window, /status lists no pipeline: degraded; cleared when one is listed', () => {
    const w = world();
    w.timeline.eventsTotal = 0;
    w.watch.update(0);
    w.grpc.kProofsCompleted[PORE] += 1;
    w.grpc.kProofsFailed[SNAP] += 1;
    w.timeline.eventsTotal = 10; // TIMELINE is fine
    w.watch.update(59 * S);
    expect(w.watch.reasons('status')).toEqual([]);
    w.watch.update(60 * S);
    expect(w.watch.reasons('status')).toEqual(['no_pipelines']);
    expect(w.watch.degraded('status', 'no_pipelines')).toBe(true);
    expect(w.watch.reasons('timeline')).toEqual([]);
    expect(w.watch.reasons('grpc')).toEqual([]); // a status reason only
    w.watch.update(60.5 * S); // still none listed: stays
    expect(w.watch.reasons('status')).toEqual(['no_pipelines']);
    w.status.model.jobs.set(1, {});
    w.watch.update(61 * S);
    expect(w.watch.reasons('status')).toEqual([]);
  });

  test('partitioned proofs counted before the window are not the window’s', () => {
    const w = world();
    w.timeline.eventsTotal = 1;
    w.grpc.kProofsCompleted[PORE] = 50;
    w.watch.update(0);
    w.grpc.kProofsCompleted[PORE] = 51;
    w.watch.update(60 * S);
    expect(w.watch.reasons('status')).toEqual([]);
  });

  test('PoSt proofs do not count (/status never lists them)', () => {
    const w = world();
    w.watch.update(0);
    w.grpc.kProofsCompleted[WDP] += 10;
    w.grpc.kProofsCompleted[kindIndex('winning-post')] += 10;
    w.timeline.eventsTotal = 1;
    w.watch.update(60 * S);
    expect(w.watch.reasons('status')).toEqual([]);
  });

  test('a pipeline listed at any refresh in the window: not degraded; one in an earlier window does not count', () => {
    const w = world();
    w.timeline.eventsTotal = 1;
    w.watch.update(0);
    w.grpc.kProofsCompleted[PORE] += 2;
    w.status.model.jobs.set(1, {});
    w.watch.update(30 * S);
    w.status.model.jobs.clear();
    w.watch.update(60 * S);
    expect(w.watch.reasons('status')).toEqual([]);
    // Next window: none listed.
    w.grpc.kProofsCompleted[SNAP] += 2;
    w.watch.update(120 * S);
    expect(w.watch.reasons('status')).toEqual(['no_pipelines']);
  });

  test('/status down, or one partitioned proof only: not degraded', () => {
    const a = world();
    a.status.up = false;
    a.watch.update(0);
    a.grpc.kProofsCompleted[PORE] += 3;
    a.watch.update(60 * S);
    expect(a.watch.reasons('status')).toEqual([]);
    const b = world();
    b.watch.update(0);
    b.grpc.kProofsCompleted[PORE] += 1;
    b.grpc.kProofsCompleted[WDP] += 1;
    b.watch.update(60 * S);
    expect(b.watch.reasons('status')).toEqual([]);
  });

  test('without /status: never', () => {
    const w = world({ grpc: true, timeline: true });
    w.watch.update(0);
    w.grpc.kProofsCompleted[PORE] += 5;
    w.timeline.eventsTotal = 1;
    w.watch.update(60 * S);
    expect(w.watch.reasons('status')).toEqual([]);
  });
});
