/**
 * status-surface.ts on its own (issue 23): what it adds to AttachSource for the merge, from
 * its header and DESIGN §7a — the kind and total_partitions of every job /status listed
 * (kept after the job leaves, bounded in entries and characters), the pipelines handed on
 * per good snapshot, and each worker's claim, samples and idle-since on the exporter's
 * hrtime clock. Snapshots go in through applyBody at hrtimes the test picks, or through a
 * real poll of a loopback /status server (the request's window).
 */
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { OTHER_KIND_INDEX, kindIndex } from '../../src/engine/model/kinds';
import { StatusPipeline, StatusSurface } from '../../src/engine/sources/attach/status-surface';
import { hrNowNs } from '../../src/engine/sources/attach/surface';
import { silentLogger } from '../../src/util/logger';
import { PartSpec, Worker, idle, pipeline, proving, snapshot } from './snapshots';
import { StatusServer } from './status-server';

const S = 1e9;
const JOB = 'ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50';
/** A worker proving JOB, with its kind (status-schema.ts' optional current_kind). */
const onJob = (id: number, partition: number, busySecs: number) => ({ ...proving(id, 0, JOB, partition, busySecs), current_kind: 'snap-update' }) as Worker;

function surface(url = 'http://127.0.0.1:1/status'): StatusSurface {
  return new StatusSurface({ url, pollIntervalMs: 60_000, timeoutMs: 5000, maxBodyBytes: 1 << 24, errors: new ErrorCounts(), logger: silentLogger });
}
const slotOf = (s: StatusSurface) => (id: number) => s.model.topology.workers.findIndex((w) => w.id === id);

describe('kinds and partition counts of the jobs /status listed', () => {
  test('as listed, an unknown kind as other, kept after the job leaves; the count as the last listing said', () => {
    const s = surface();
    expect(s.kindOf('j-porep')).toBe(-1);
    expect(s.totalPartitionsOf('j-porep')).toBe(-1);
    const parts = (n: number) => Array.from({ length: n }, () => ['pending', null, null] as ['pending', null, null]);
    s.applyBody(snapshot({ uptime: 100, workers: [idle(0, 0)], pipelines: [pipeline('j-porep', 'porep-c2', parts(3)), pipeline('j-snap', 'snap-update', parts(2)), pipeline('j-q', 'quantum-c2', parts(1))] }), 10 * S);
    expect([s.kindOf('j-porep'), s.kindOf('j-snap'), s.kindOf('j-q')]).toEqual([kindIndex('porep-c2'), kindIndex('snap-update'), OTHER_KIND_INDEX]);
    expect([s.totalPartitionsOf('j-porep'), s.totalPartitionsOf('j-snap'), s.totalPartitionsOf('j-q')]).toEqual([3, 2, 1]);
    s.applyBody(snapshot({ uptime: 101, workers: [idle(0, 0)], pipelines: [pipeline('j-snap', 'snap-update', parts(4))] }), 11 * S);
    s.applyBody(snapshot({ uptime: 102, workers: [idle(0, 0)] }), 12 * S);
    expect(s.kindOf('j-porep')).toBe(kindIndex('porep-c2'));
    expect(s.totalPartitionsOf('j-porep')).toBe(3);
    expect(s.totalPartitionsOf('j-snap')).toBe(4);
    expect(s.kindOf('j-snap')).toBe(kindIndex('snap-update'));
  });

  test('partition counts: at most 1 MiB of job ids, the newest; a job listed again is not counted twice', () => {
    const s = surface();
    const ids = Array.from({ length: 120 }, (_, i) => `long-${String(i).padStart(4, '0')}-${'j'.repeat(20_000)}`);
    const body = (id: string, i: number) => snapshot({ uptime: 100 + i, workers: [idle(0, 0)], pipelines: [pipeline(id, 'porep-c2', [['pending', null, null], ['pending', null, null]])] });
    ids.forEach((id, i) => s.applyBody(body(id, i), (i + 1) * S));
    const known = ids.filter((id) => s.totalPartitionsOf(id) === 2);
    expect(known.length * ids[0].length).toBeLessThanOrEqual(1 << 20);
    expect(known.length).toBeGreaterThanOrEqual(Math.floor((1 << 20) / ids[0].length) - 1);
    expect(known).toEqual(ids.slice(-known.length));
    // The newest id listed again, many times: it takes no more room, nothing else is forgotten.
    const last = ids[ids.length - 1];
    for (let i = 0; i < 100; i++) s.applyBody(body(last, 200 + i), (200 + i) * S);
    expect(ids.filter((id) => s.totalPartitionsOf(id) === 2)).toEqual(known);
    expect(ids.filter((id) => s.kindOf(id) === kindIndex('porep-c2'))).toEqual(known);
  });

  test('ids that fill the 1 MiB exactly are all kept; one more character of ids and the oldest goes', () => {
    const s = surface();
    // four ids of 2^18 characters: 2^20 in all, exactly the bound
    const ids = ['a', 'b', 'c', 'd', 'e'].map((c) => c.repeat(1 << 18));
    const body = (i: number) => snapshot({ uptime: 100 + i, workers: [idle(0, 0)], pipelines: [pipeline(ids[i], 'porep-c2', [['pending', null, null]])] });
    for (let i = 0; i < 4; i++) s.applyBody(body(i), (i + 1) * S);
    expect(ids.map((id) => s.totalPartitionsOf(id))).toEqual([1, 1, 1, 1, -1]);
    const pc2 = kindIndex('porep-c2');
    expect(ids.map((id) => s.kindOf(id))).toEqual([pc2, pc2, pc2, pc2, -1]);
    s.applyBody(body(4), 5 * S);
    expect(ids.map((id) => s.totalPartitionsOf(id))).toEqual([-1, 1, 1, 1, 1]);
    expect(ids.map((id) => s.kindOf(id) >= 0)).toEqual([false, true, true, true, true]);
  });

  test('partition counts: at most 10,000 jobs, the newest', () => {
    const s = surface();
    const ids = Array.from({ length: 10_003 }, (_, i) => `j-${i}`);
    // 500 jobs a snapshot (fewer snapshots than jobs: each snapshot is validated whole)
    for (let i = 0; i < ids.length; i += 500)
      s.applyBody(snapshot({ uptime: 100 + i, workers: [idle(0, 0)], pipelines: ids.slice(i, i + 500).map((id) => pipeline(id, 'snap-update', [['pending', null, null]])) }), (i + 1) * S);
    expect(ids.slice(0, 3).map((id) => s.totalPartitionsOf(id))).toEqual([-1, -1, -1]);
    expect(ids.slice(3).every((id) => s.totalPartitionsOf(id) === 1)).toBe(true);
    expect(ids.slice(0, 3).map((id) => s.kindOf(id))).toEqual([-1, -1, -1]);
    expect(ids.slice(3).every((id) => s.kindOf(id) === kindIndex('snap-update'))).toBe(true);
  });

  test('each good snapshot hands on its pipelines; no listener needed', () => {
    const s = surface();
    s.applyBody(snapshot({ uptime: 100, workers: [idle(0, 0)], pipelines: [pipeline(JOB, 'snap-update', [['gpu', 900, null]])] }), 1 * S);
    const seen: StatusPipeline[][] = [];
    s.onPipelines = (p) => seen.push(p);
    s.applyBody(snapshot({ uptime: 101, workers: [idle(0, 0)], pipelines: [pipeline(JOB, 'snap-update', [['done', 900, 300]])] }), 2 * S);
    s.applyBody(snapshot({ uptime: 102, workers: [idle(0, 0)] }), 3 * S);
    expect(seen.map((p) => p.map((x) => [x.job_id, x.proof_kind, x.total_partitions, x.partitions.map((q) => q.state)]))).toEqual([[[JOB, 'snap-update', 1, ['done']]], []]);
  });
});

describe("workers: claims, samples and idle-since on the exporter's clock", () => {
  const two = (w0: Worker, w1: Worker, uptime: number) =>
    snapshot({ uptime, workers: [w0, w1], pipelines: [pipeline(JOB, 'snap-update', [['gpu', 800, null], ['gpu', 700, null], ...Array.from({ length: 14 }, () => ['pending', null, null] as PartSpec)])] });

  test('nothing before the first snapshot, nor for a worker it does not list', () => {
    const s = surface();
    expect(s.claim(0, () => 0)).toBeNull();
    expect(s.sampleUntil(0, Infinity)).toBeNull();
    expect(s.idleSinceHr(0)).toBeNull();
    s.applyBody(two(idle(0, 0), idle(1, 0), 100), 50 * S);
    expect(s.claim(7, slotOf(s))).toBeNull();
    expect(s.sampleUntil(7, Infinity)).toBeNull();
    expect(s.idleSinceHr(7)).toBeNull();
  });

  test("busy: continuous since cuzk's busy_secs, with kind, job and partition; idle: a sample at the snapshot", () => {
    const s = surface();
    s.applyBody(two(onJob(0, 1, 3), idle(1, 0), 100), 50 * S);
    expect(s.up).toBe(true);
    expect(s.claim(0, slotOf(s))).toEqual({ busy: true, sinceHr: 47 * S, untilHr: 50 * S, sample: false, kind: kindIndex('snap-update'), job: JOB, partition: 1 });
    expect(s.claim(1, slotOf(s))).toEqual({ busy: false, sinceHr: 50 * S, untilHr: 50 * S, sample: true, kind: -1 });
  });

  test('samples: one per worker and snapshot, the newest ending at or before t', () => {
    const s = surface();
    s.applyBody(two(idle(0, 0), idle(1, 0), 100), 10 * S);
    s.applyBody(two(onJob(0, 0, 1), idle(1, 0), 101), 11 * S);
    expect(s.sampleUntil(0, 10 * S - 1)).toBeNull();
    expect(s.sampleUntil(0, 10 * S)).toEqual({ startHr: 10 * S, endHr: 10 * S, busy: false, kind: -1 });
    expect(s.sampleUntil(0, 11 * S - 1)).toEqual({ startHr: 10 * S, endHr: 10 * S, busy: false, kind: -1 });
    expect(s.sampleUntil(0, 11 * S)).toEqual({ startHr: 11 * S, endHr: 11 * S, busy: true, kind: kindIndex('snap-update') });
    expect(s.sampleUntil(1, 11 * S)).toEqual({ startHr: 11 * S, endHr: 11 * S, busy: false, kind: -1 });
  });

  test('idle since the first of the idle snapshots; reset by a busy one', () => {
    const s = surface();
    s.applyBody(two(idle(0, 0), idle(1, 0), 100), 10 * S);
    s.applyBody(two(idle(0, 0), idle(1, 0), 101), 11 * S);
    expect([s.idleSinceHr(0), s.idleSinceHr(1)]).toEqual([10 * S, 10 * S]);
    s.applyBody(two(onJob(0, 0, 1), idle(1, 0), 102), 12 * S);
    expect([s.idleSinceHr(0), s.idleSinceHr(1)]).toEqual([null, 10 * S]);
    s.applyBody(two(idle(0, 0), idle(1, 0), 103), 13 * S);
    expect([s.idleSinceHr(0), s.idleSinceHr(1)]).toEqual([13 * S, 10 * S]);
  });

  test('a worker gone from the topology is forgotten: back later, its history starts afresh', () => {
    const s = surface();
    s.applyBody(two(idle(0, 0), idle(1, 0), 100), 10 * S);
    s.applyBody(snapshot({ uptime: 101, workers: [idle(0, 0)] }), 11 * S);
    expect(s.idleSinceHr(1)).toBeNull();
    expect(s.sampleUntil(1, 20 * S)).toBeNull();
    s.applyBody(two(idle(0, 0), idle(1, 0), 102), 12 * S);
    expect(s.idleSinceHr(1)).toBe(12 * S);
    expect(s.idleSinceHr(0)).toBe(10 * S);
    expect(s.sampleUntil(1, 11 * S)).toBeNull();
    expect(s.sampleUntil(0, 11 * S)).toEqual({ startHr: 11 * S, endHr: 11 * S, busy: false, kind: -1 });
  });
});

describe('polled over HTTP', () => {
  let server: StatusServer;
  beforeAll(async () => {
    server = await StatusServer.start();
  });
  afterAll(() => server.close());

  test("an idle sample spans the request's window; a failed poll hands on nothing and the surface is down", async () => {
    const s = surface(server.url);
    const polls: boolean[] = [];
    let handed = 0;
    server.serveJson(snapshot({ uptime: 100, workers: [idle(0, 0)], pipelines: [pipeline(JOB, 'porep-c2', [['pending', null, null]])] }));
    const before = hrNowNs();
    await s.pollOnce(); // no listeners yet
    const after = hrNowNs();
    expect(s.up).toBe(true);
    const c = s.claim(0, slotOf(s))!;
    expect(c).toMatchObject({ busy: false, sample: true, kind: -1 });
    expect(c.sinceHr).toBeGreaterThanOrEqual(before);
    expect(c.sinceHr).toBeLessThan(c.untilHr);
    expect(c.untilHr).toBeLessThanOrEqual(after);
    expect(s.sampleUntil(0, after)).toEqual({ startHr: c.sinceHr, endHr: c.untilHr, busy: false, kind: -1 });
    expect(s.kindOf(JOB)).toBe(kindIndex('porep-c2'));

    s.onPoll = (ok) => polls.push(ok);
    s.onPipelines = () => handed++;
    server.behaviour = { kind: 'body', body: 'oops', status: 500 };
    await s.pollOnce();
    expect(s.up).toBe(false);
    expect(s.claim(0, slotOf(s))).toBeNull();
    expect(s.sampleUntil(0, Infinity)).toBeNull();
    expect(s.idleSinceHr(0)).toBeNull();
    expect(handed).toBe(0);

    server.serveJson(snapshot({ uptime: 105, workers: [idle(0, 0)] }));
    const before2 = hrNowNs();
    await s.pollOnce();
    expect(polls).toEqual([false, true]);
    expect(handed).toBe(1);
    expect(s.claim(0, slotOf(s))!.sinceHr).toBeGreaterThanOrEqual(before2);
    expect(s.idleSinceHr(0)).toBe(c.untilHr); // idle in every good snapshot since the first
  });

  test('start polls, stop ends it', async () => {
    const s = surface(server.url);
    server.serveJson(snapshot({ uptime: 100, workers: [idle(0, 0)] }));
    const first = new Promise<boolean>((resolve) => (s.onPoll = resolve));
    s.start();
    expect(await first).toBe(true);
    await s.stop();
    expect(s.target).toBe(server.url);
    expect(s.name).toBe('status');
    expect(s.model.up).toBe(true);
  });
});
