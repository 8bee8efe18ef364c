/**
 * Issue 23: AttachSource (src/engine/sources/attach/attach-source.ts) edge by edge, scripted
 * and fast enough to run for every mutant: snapshots applied with applyBody(body, t) on a
 * clock the test sets, polls against the loopback stand-in (status-server.ts) with short
 * deadlines, the keep-alive bookkeeping driven directly.
 *
 * Expectations come from the file's header rules (baseline, counters by difference, restarts
 * reset baselines only, the model's clock is the last applied snapshot, every failure sets up
 * to 0 and is counted by reason, a malformed part is skipped and counted, what we knew of it
 * kept), the KeepAlive comment, and cuzk's /status (curio extern/cuzk: status.rs keeps a
 * re-registered job id as a new JobState; per-kind cumulative counters).
 */
import { AttachSource, ATTACH_ERRORS, fetchLimited, KeepAlive } from '../../src/engine/sources/attach/attach-source';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { kindIndex, KIND_SLOTS, OTHER_KIND_INDEX } from '../../src/engine/model/kinds';
import type { Logger } from '../../src/util/logger';
import { idle, pipeline, PartSpec, proving, snapshot } from './snapshots';
import { refusedUrl, StatusServer } from './status-server';

const PC2 = kindIndex('porep-c2');
const SNAP = kindIndex('snap-update');
const WPOST = kindIndex('window-post');
const OTHER = OTHER_KIND_INDEX;
const S = 1e9;
const T0 = 1_000_000 * S;

interface Line {
  level: string;
  msg: string;
  fields?: Record<string, unknown>;
}

function capture(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, fields });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as Logger, lines };
}

const URL0 = 'http://127.0.0.1:9/status';

function mk(o: { url?: string; errors?: ErrorCounts; timeoutMs?: number; maxBodyBytes?: number; pollIntervalMs?: number } = {}) {
  const { logger, lines } = capture();
  const src = new AttachSource({
    url: o.url ?? URL0,
    errors: o.errors,
    pollIntervalMs: o.pollIntervalMs ?? 1000,
    timeoutMs: o.timeoutMs ?? 2000,
    maxBodyBytes: o.maxBodyBytes ?? 1 << 20,
    logger,
  });
  return { src, m: src.model, lines, warns: () => lines.filter((l) => l.level === 'warn').map((l) => l.msg) };
}

/** A snapshot with cancelled_by_kind / queue_depth_by_kind / gpus / extra fields set. */
function snap(s: Parameters<typeof snapshot>[0], extra: { cancelled?: Record<string, number>; queueByKind?: Record<string, number>; gpus?: unknown[]; drop?: string[] } = {}) {
  const b = snapshot(s);
  const c = b.counters as Record<string, unknown>;
  if (extra.cancelled) c.cancelled_by_kind = extra.cancelled;
  if (extra.queueByKind) c.queue_depth_by_kind = extra.queueByKind;
  if (extra.gpus) b.gpus = extra.gpus;
  for (const k of extra.drop ?? []) delete b[k];
  return b;
}

const W2 = [idle(0, 0), idle(1, 1)];

describe('before the first snapshot', () => {
  test('every reason declared at 0, down, not ready, nothing served, clock 0', () => {
    const { src, m } = mk();
    for (const r of ATTACH_ERRORS) expect([r, m.errors.get(r)]).toEqual([r, 0]);
    expect([...m.errors.entries()].map(([r]) => r).sort()).toEqual([...ATTACH_ERRORS].sort());
    expect(m.up).toBe(false);
    expect(src.ready()).toEqual({ ok: false, reason: 'no snapshot yet' });
    expect(src.statusBody()).toBeNull();
    expect(src.snapshotAgeSeconds()).toBe(0);
    expect(src.nowNs()).toBe(0);
    expect(src.surfaceStates()).toEqual([{ name: 'status', up: false }]);
    expect(src.source).toBe('attach');
    expect(src.backend).toBe('cuzk');
    expect(m.topology.workers).toEqual([]);
    expect(m.topology.gpus).toEqual([]);
    src.refresh(); // sampled: nothing to do
    expect(src.nowNs()).toBe(0);
  });

  test('a shared ErrorCounts gets the reasons and the counts; the model’s own stays empty', () => {
    const errors = new ErrorCounts();
    const { src, m } = mk({ errors });
    for (const r of ATTACH_ERRORS) expect(errors.get(r)).toBe(0);
    expect([...m.errors.entries()]).toEqual([]);
    expect(() => src.applyBody({ nope: 1 }, T0)).toThrow(/rejected/);
    src.applyBody(snap({ uptime: 10, workers: W2 }, { drop: ['memory'] }), T0);
    expect(errors.get('bad_field')).toBe(1);
    expect(m.errors.get('bad_field')).toBe(0);
    expect(src.ready()).toEqual({ ok: true, reason: '' });
  });
});

describe('snapshots applied', () => {
  test('up, ready, served, clock at the snapshot, logged once as up', () => {
    const { src, m, lines } = mk();
    const t = T0;
    src.applyBody(snap({ uptime: 100, workers: [idle(1, 1), idle(0, 0)] }), t);
    expect(m.up).toBe(true);
    expect(src.ready()).toEqual({ ok: true, reason: '' });
    expect(src.surfaceStates()).toEqual([{ name: 'status', up: true }]);
    expect(src.nowNs()).toBe(t);
    expect(src.statusBody()).toMatchObject({ uptime_secs: 100, gpu_workers: [{ worker_id: 1 }, { worker_id: 0 }] });
    // Workers by id, GPUs from their ordinals (cuzk has no GPU list).
    expect(m.topology.workers.map((w) => [w.id, w.gpu])).toEqual([[0, 0], [1, 1]]);
    expect(m.topology.gpus).toEqual([{ ordinal: 0, name: 'unknown' }, { ordinal: 1, name: 'unknown' }]);
    const up = lines.filter((l) => l.msg.startsWith('source is up'));
    expect(up).toEqual([{ level: 'info', msg: `source is up: ${URL0}`, fields: { source: URL0 } }]);
    src.applyBody(snap({ uptime: 101, workers: [idle(1, 1), idle(0, 0)] }), t + S);
    expect(src.nowNs()).toBe(t + S);
    expect(lines.filter((l) => l.msg.startsWith('source is up'))).toHaveLength(1);
  });

  test('no worker: up but not ready', () => {
    const { src } = mk();
    src.applyBody(snap({ uptime: 100, workers: [] }), T0);
    expect(src.ready()).toEqual({ ok: false, reason: 'the daemon reports no GPU workers' });
  });

  test('the snapshot age counts from the last applied snapshot, not from a failed one', () => {
    const { src } = mk();
    const t = Number(process.hrtime.bigint()) - 30 * S;
    src.applyBody(snap({ uptime: 100, workers: W2 }), t);
    expect(() => src.applyBody({ uptime_secs: 'x' }, t + 20 * S)).toThrow();
    const age = src.snapshotAgeSeconds();
    expect(age).toBeGreaterThanOrEqual(30);
    expect(age).toBeLessThan(60);
    expect(src.nowNs()).toBe(t);
    expect(src.statusBody()).toMatchObject({ uptime_secs: 100 });
  });

  test('a failed poll leaves the served body, the clock and the up state of the last good one until counted', async () => {
    const daemon = await StatusServer.start();
    try {
      const { src, m } = mk({ url: daemon.url });
      daemon.serveJson(snap({ uptime: 100, workers: W2 }));
      await src.pollOnce();
      expect(m.up).toBe(true);
      const t = src.nowNs();
      expect(t).toBeGreaterThan(0);
      daemon.behaviour = { kind: 'body', body: 'not json' };
      await src.pollOnce();
      expect(m.up).toBe(false);
      expect(src.ready()).toEqual({ ok: false, reason: expect.stringContaining('body is not JSON') });
      expect(src.nowNs()).toBe(t);
      expect(src.statusBody()).toMatchObject({ uptime_secs: 100 });
      expect(src.polls).toBe(2);
      await src.stop();
    } finally {
      await daemon.close();
    }
  });
});

describe('proof counters by difference', () => {
  test('baseline, then deltas of completed, failed and cancelled by kind; an unknown kind into other', () => {
    const { src, m } = mk();
    src.applyBody(snap({ uptime: 100, workers: W2, completed: { 'porep-c2': 5, 'snap-update': 2 }, failed: { 'porep-c2': 1 } }, { cancelled: { 'snap-update': 3 } }), T0);
    expect([...m.kProofsCompleted, ...m.kProofsFailed, ...m.kProofsCancelled].every((x) => x === 0)).toBe(true);
    src.applyBody(snap({ uptime: 101, workers: W2, completed: { 'porep-c2': 7, 'snap-update': 2, zk: 4 }, failed: { 'porep-c2': 3 } }, { cancelled: { 'snap-update': 4 } }), T0 + S);
    expect(m.kProofsCompleted[PC2]).toBe(2);
    expect(m.kProofsCompleted[SNAP]).toBe(0);
    expect(m.kProofsCompleted[OTHER]).toBe(4); // new key after the baseline: all of it
    expect(m.kProofsFailed[PC2]).toBe(2);
    expect(m.kProofsCancelled[SNAP]).toBe(1);
    // No cancelled section this time: nothing moves, nothing breaks.
    src.applyBody(snap({ uptime: 102, workers: W2, completed: { 'porep-c2': 8, 'snap-update': 2, zk: 4 }, failed: { 'porep-c2': 3 } }), T0 + 2 * S);
    expect(m.kProofsCompleted[PC2]).toBe(3);
    expect(m.kProofsCancelled[SNAP]).toBe(1);
    expect(m.errors.get('implausible')).toBe(0);
  });

  test('growth bounded as GetMetrics\' is: (elapsed + 10 s) x 100 x workers proofs, completed, failed and cancelled together; past it the snapshot is the new baseline', () => {
    // docs/hostile-inputs.md: 2 workers, 1 s since the last look: at most 2200 proofs ended.
    const { src, m, warns } = mk();
    src.applyBody(snap({ uptime: 100, workers: W2, completed: { 'porep-c2': 5 } }, { cancelled: { 'snap-update': 0 } }), T0);
    src.applyBody(snap({ uptime: 101, workers: W2, completed: { 'porep-c2': 2005 }, failed: { 'porep-c2': 100 } }, { cancelled: { 'snap-update': 100 } }), T0 + S);
    expect([m.kProofsCompleted[PC2], m.kProofsFailed[PC2], m.kProofsCancelled[SNAP]]).toEqual([2000, 100, 100]); // 2200: at the bound
    expect(m.errors.get('implausible')).toBe(0);
    // Cancelled alone one past it: nothing added, and the marks move on.
    src.applyBody(snap({ uptime: 102, workers: W2, completed: { 'porep-c2': 2005 }, failed: { 'porep-c2': 100 } }, { cancelled: { 'snap-update': 2301 } }), T0 + 2 * S);
    expect(m.kProofsCancelled[SNAP]).toBe(100);
    expect(m.errors.get('implausible')).toBe(1);
    expect(m.errors.lastMessage).toBe(`snapshot from ${URL0}: 2201 proofs ended in 1.0s: not a prover's count (taken as the baseline, nothing added)`);
    expect(warns()).toContain(`snapshot from ${URL0}: 2201 proofs ended in 1.0s: not a prover's count (taken as the baseline, nothing added)`);
    src.applyBody(snap({ uptime: 103, workers: W2, completed: { 'porep-c2': 2006 }, failed: { 'porep-c2': 100 } }, { cancelled: { 'snap-update': 2302 } }), T0 + 3 * S);
    expect([m.kProofsCompleted[PC2], m.kProofsCancelled[SNAP]]).toEqual([2001, 101]);
    // After a restart the new process's counters are since its start: bounded over its
    // uptime (2 s: 2400), however long ago the last look was.
    src.applyBody(snap({ uptime: 2, workers: W2, completed: { 'porep-c2': 2401 } }), T0 + 100 * S);
    expect(m.errors.get('restart')).toBe(1);
    expect(m.errors.get('implausible')).toBe(2);
    expect(m.errors.lastMessage).toBe(`snapshot from ${URL0}: 2401 proofs ended in 2.0s since a restart: not a prover's count (taken as the baseline, nothing added)`);
    expect(m.kProofsCompleted[PC2]).toBe(2001);
    const b = mk();
    b.src.applyBody(snap({ uptime: 1000, workers: W2, completed: { 'porep-c2': 10 } }), T0);
    b.src.applyBody(snap({ uptime: 2, workers: W2, completed: { 'porep-c2': 2400 } }), T0 + 100 * S);
    expect([b.m.errors.get('restart'), b.m.errors.get('implausible'), b.m.kProofsCompleted[PC2]]).toEqual([1, 0, 2400]);
  });

  test('failed alone past the bound is refused as completed or cancelled alone would be (the three are summed)', () => {
    // 2 workers, 1 s: at most 2200 proofs ended, whichever way they ended (docs/hostile-inputs.md row 20.1c).
    const { src, m } = mk();
    src.applyBody(snap({ uptime: 100, workers: W2, completed: { 'porep-c2': 5 }, failed: { 'porep-c2': 0 } }), T0);
    src.applyBody(snap({ uptime: 101, workers: W2, completed: { 'porep-c2': 5 }, failed: { 'porep-c2': 2201 } }), T0 + S);
    expect([m.kProofsCompleted[PC2], m.kProofsFailed[PC2], m.errors.get('implausible')]).toEqual([0, 0, 1]);
    // Failed and completed together at the bound: both counted.
    src.applyBody(snap({ uptime: 102, workers: W2, completed: { 'porep-c2': 1105 }, failed: { 'porep-c2': 3301 } }), T0 + 2 * S);
    expect([m.kProofsCompleted[PC2], m.kProofsFailed[PC2], m.errors.get('implausible')]).toEqual([1100, 1100, 1]);
  });

  test('a per-kind counter going down on its own: implausible, nothing added, never re-added', () => {
    const { src, m, warns } = mk();
    src.applyBody(snap({ uptime: 100, workers: W2, completed: { 'porep-c2': 5, 'snap-update': 5 } }), T0);
    src.applyBody(snap({ uptime: 101, workers: W2, completed: { 'porep-c2': 3, 'snap-update': 8 } }), T0 + S);
    expect(m.errors.get('implausible')).toBe(1);
    expect(m.errors.get('restart')).toBe(0);
    expect(m.kProofsCompleted[PC2]).toBe(0);
    expect(m.kProofsCompleted[SNAP]).toBe(3);
    expect(m.errors.lastMessage).toBe(`snapshot from ${URL0}: per-kind counter(s) went down without a restart: "porep-c2"`);
    expect(warns()).toContain('per-kind counters went down while uptime and totals did not ("porep-c2"): not a restart, nothing counted');
    src.applyBody(snap({ uptime: 102, workers: W2, completed: { 'porep-c2': 6, 'snap-update': 8 } }), T0 + 2 * S);
    expect(m.kProofsCompleted[PC2]).toBe(1); // above the old mark of 5 only
  });

  test('a failed job cuzk does not count (no outcome) is counted once as a failed proof, not in the baseline', () => {
    const { src, m } = mk();
    const failedJob = (id: string, kind: string, outcome?: string) => {
      const p = pipeline(id, kind, [['failed', 100, null], ['pending', null, null]]) as unknown as Record<string, unknown>;
      if (outcome) p.outcome = outcome;
      return p as unknown as ReturnType<typeof pipeline>;
    };
    src.applyBody(snap({ uptime: 100, workers: W2, pipelines: [failedJob('old', 'porep-c2')] }), T0);
    expect(m.kProofsFailed[PC2]).toBe(0);
    expect(src.kInferredFailed[PC2]).toBe(0);
    src.applyBody(snap({ uptime: 101, workers: W2, pipelines: [failedJob('old', 'porep-c2'), failedJob('new', 'snap-update'), failedJob('mystery', 'zk')] }), T0 + S);
    expect(m.kProofsFailed[SNAP]).toBe(1);
    expect(m.kProofsFailed[OTHER]).toBe(1);
    expect(m.kProofsFailed[PC2]).toBe(0);
    src.applyBody(snap({ uptime: 102, workers: W2, pipelines: [failedJob('old', 'porep-c2'), failedJob('new', 'snap-update'), failedJob('mystery', 'zk')] }), T0 + 2 * S);
    expect(m.kProofsFailed[SNAP]).toBe(1);
    expect(m.kProofsFailed[OTHER]).toBe(1);
    expect([...src.kInferredFailed]).toEqual(Array.from({ length: KIND_SLOTS }, (_, k) => (k === SNAP || k === OTHER ? 1 : 0)));
    // A daemon that says its outcome itself (the reference engine) is not inferred.
    src.applyBody(snap({ uptime: 103, workers: W2, pipelines: [failedJob('told', 'window-post', 'failed')] }), T0 + 3 * S);
    expect(src.kInferredFailed[WPOST]).toBe(0);
  });
});

describe('a daemon restart', () => {
  test('uptime back: counted and logged every time, totals kept, baselines, handles and GPU names reset; stints end at the last look', () => {
    const { src, m, warns } = mk();
    const gpus = (name: string) => [{ ordinal: 0, name }];
    src.applyBody(snap({ uptime: 1000, workers: [proving(0, 0, 'J', 0, 0)], pipelines: [pipeline('J', 'porep-c2', [['gpu', 10, 0]])], completed: { 'porep-c2': 10 } }, { gpus: gpus('A100') }), T0);
    src.applyBody(snap({ uptime: 1001, workers: [proving(0, 0, 'J', 0, 1)], pipelines: [pipeline('J', 'porep-c2', [['gpu', 10, 1000]])], completed: { 'porep-c2': 12 } }, { gpus: gpus('A100') }), T0 + S);
    expect(m.kProofsCompleted[PC2]).toBe(2);
    const handles = [...m.jobs.keys()];
    expect(handles.map((h) => src.jobId(h))).toEqual(['J']);
    // 100 s without a look, then a new process (uptime 3 s) with another GPU name: no error for it.
    src.applyBody(snap({ uptime: 3, workers: [idle(0, 0)], completed: { 'porep-c2': 1 } }, { gpus: gpus('H100') }), T0 + 101 * S);
    expect(m.errors.get('restart')).toBe(1);
    expect(m.errors.get('implausible')).toBe(0);
    expect(m.kProofsCompleted[PC2]).toBe(3); // kept, plus the new process's 1
    expect(m.topology.gpus[0].name).toBe('H100');
    expect(handles.map((h) => src.jobId(h))).toEqual([undefined]);
    expect(m.jobs.size).toBe(0);
    // Busy from the first look (T0) to the last one that saw it (T0 + 1 s), not through the 100 s unseen.
    expect(m.wBusyNs[0]).toBeGreaterThanOrEqual(1 * S);
    expect(m.wBusyNs[0]).toBeLessThan(3 * S);
    expect(m.wBusy[0]).toBe(0);
    expect(warns().filter((w) => w.startsWith('daemon restarted'))).toEqual(['daemon restarted (uptime 1001s -> 3s); keeping totals, resetting baselines']);
    expect(m.errors.lastMessage).toBe('daemon restarted (uptime 1001s -> 3s)');
    // A second restart within the minute is logged again (forced), the same text.
    src.applyBody(snap({ uptime: 100, workers: [idle(0, 0)], completed: { 'porep-c2': 4 } }), T0 + 201 * S);
    src.applyBody(snap({ uptime: 3, workers: [idle(0, 0)], completed: { 'porep-c2': 1 } }), T0 + 301 * S);
    expect(m.errors.get('restart')).toBe(2);
    expect(m.kProofsCompleted[PC2]).toBe(3 + 3 + 1);
    expect(warns().filter((w) => w.startsWith('daemon restarted'))).toHaveLength(2);
  });

  test('totals going down with uptime rising (but young enough for a new process) is a restart too (its marks reset)', () => {
    const { src, m } = mk();
    src.applyBody(snap({ uptime: 2, workers: W2, completed: { 'porep-c2': 10 }, failed: { 'porep-c2': 2 } }), T0);
    // 10 s later, uptime 4: the same process by uptime alone, but its failed total went back.
    src.applyBody(snap({ uptime: 4, workers: W2, completed: { 'porep-c2': 10 }, failed: { 'porep-c2': 1 } }), T0 + 10 * S);
    expect(m.errors.get('restart')).toBe(1);
    src.applyBody(snap({ uptime: 5, workers: W2, completed: { 'porep-c2': 10 }, failed: { 'porep-c2': 2 } }), T0 + 11 * S);
    expect(m.kProofsFailed[PC2]).toBe(1 + 1);
    // Completed fell alone this time.
    src.applyBody(snap({ uptime: 7, workers: W2, completed: { 'porep-c2': 9 }, failed: { 'porep-c2': 2 } }), T0 + 21 * S);
    expect(m.errors.get('restart')).toBe(2);
    expect(m.errors.get('conflict')).toBe(0);
    // Totals equal: no restart.
    src.applyBody(snap({ uptime: 8, workers: W2, completed: { 'porep-c2': 9 }, failed: { 'porep-c2': 2 } }), T0 + 22 * S);
    expect(m.errors.get('restart')).toBe(2);
  });

  test('another daemon at the address (uptime back further than time passed): refused as conflict, the surface kept up', async () => {
    const daemon = await StatusServer.start();
    try {
      const { src, m, warns } = mk({ url: daemon.url });
      const oks: boolean[] = [];
      src.onPoll = (ok) => oks.push(ok);
      daemon.serveJson(snap({ uptime: 5000, workers: W2, completed: { 'porep-c2': 50 } }));
      await src.pollOnce();
      daemon.serveJson(snap({ uptime: 40, workers: W2, completed: { 'porep-c2': 10 } }));
      await src.pollOnce();
      expect(oks).toEqual([true, false]);
      expect(m.errors.get('conflict')).toBe(1);
      expect(m.errors.get('restart')).toBe(0);
      expect(m.up).toBe(true);
      expect(m.errors.lastMessage).toBe(`snapshot from ${daemon.url} refused: uptime 5000s -> 40s with its totals going back is neither the same daemon nor a restart`);
      expect(warns()).toContain(m.errors.lastMessage);
      expect(src.statusBody()).toMatchObject({ uptime_secs: 5000 });
      // Uptime back alone, the totals not: the message says nothing of totals.
      daemon.serveJson(snap({ uptime: 41, workers: W2, completed: { 'porep-c2': 60 } }));
      await src.pollOnce();
      expect(m.errors.get('conflict')).toBe(2);
      expect(m.errors.lastMessage).toBe(`snapshot from ${daemon.url} refused: uptime 5000s -> 41s is neither the same daemon nor a restart`);
      expect(m.kProofsCompleted[PC2]).toBe(0);
      await src.stop();
    } finally {
      await daemon.close();
    }
  });
});

describe('malformed and implausible parts', () => {
  test('a malformed worker is skipped and counted; it stays with its GPU and its busy time', () => {
    const { src, m, warns } = mk();
    src.applyBody(snap({ uptime: 100, workers: [idle(0, 0), proving(5, 2, 'J', 0, 0)], pipelines: [pipeline('J', 'porep-c2', [['gpu', 10, 0]])] }), T0);
    const bad = { ...proving(5, 2, 'J', 0, 1), gpu_ordinal: 'two' };
    src.applyBody(snap({ uptime: 101, workers: [idle(0, 0), bad as never], pipelines: [pipeline('J', 'porep-c2', [['gpu', 10, 1000]])] }), T0 + S);
    expect(m.errors.get('bad_field')).toBe(1);
    expect(m.topology.workers.map((w) => [w.id, w.gpu])).toEqual([[0, 0], [5, 2]]);
    expect(m.topology.gpus.map((g) => g.ordinal)).toEqual([0, 2]);
    expect(warns().some((w) => w.startsWith('skipped malformed parts of the snapshot: gpu_workers[1]'))).toBe(true);
    // A worker not seen before and malformed now has no GPU to keep: not invented.
    src.applyBody(snap({ uptime: 102, workers: [idle(0, 0), { ...idle(7, 3), gpu_ordinal: -1 } as never] }), T0 + 2 * S);
    expect(m.topology.workers.map((w) => w.id)).toEqual([0]);
  });

  test('a malformed job keeps its handle and state; a listed worker is not duplicated by its skipped twin', () => {
    const { src, m } = mk();
    src.applyBody(snap({ uptime: 100, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['synthesizing', 10, null], ['pending', null, null]])] }), T0);
    const h = [...m.jobs.keys()][0];
    expect(src.jobId(h)).toBe('J');
    const broken = { ...pipeline('J', 'porep-c2', [['synthesizing', 10, null], ['pending', null, null]]), partitions: 'x' };
    src.applyBody(snap({ uptime: 101, workers: [idle(0, 0), idle(1, 1), { ...idle(1, 1), gpu_ordinal: 'x' } as never], pipelines: [broken as never] }), T0 + S);
    expect(m.errors.get('bad_field')).toBe(2);
    expect(src.jobId(h)).toBe('J');
    expect(m.jobs.has(h)).toBe(true);
    expect(m.topology.workers.map((w) => w.id)).toEqual([0, 1]);
    // Listed again and whole: the same job, the same handle.
    src.applyBody(snap({ uptime: 102, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['synth_done', 10, null], ['pending', null, null]])] }), T0 + 2 * S);
    expect([...m.jobs.keys()]).toEqual([h]);
    // Gone from the snapshot: gone, and its id forgotten.
    src.applyBody(snap({ uptime: 103, workers: W2 }), T0 + 3 * S);
    expect(m.jobs.size).toBe(0);
    expect(src.jobId(h)).toBeUndefined();
  });

  test('a missing section leaves its gauges as they were', () => {
    const { src, m } = mk();
    src.applyBody(snap({ uptime: 100, workers: W2, memoryUsed: 1234, synthActive: 3, queueDepth: 2 }, { queueByKind: { 'porep-c2': 2 } }), T0);
    expect([m.memoryUsedBytes, m.synthActive, m.synthMax, m.memoryBudgetBytes, m.kQueueDepth[PC2]]).toEqual([1234, 3, 7, 549755813888, 2]);
    src.applyBody(snap({ uptime: 101, workers: W2 }, { drop: ['memory', 'synthesis', 'counters'] }), T0 + S);
    expect(m.errors.get('bad_field')).toBe(3);
    expect([m.memoryUsedBytes, m.synthActive, m.synthMax, m.memoryBudgetBytes, m.kQueueDepth[PC2]]).toEqual([1234, 3, 7, 549755813888, 2]);
  });

  test('more than three skipped parts: the log names three and counts the rest, once a minute', () => {
    const { src, m, warns } = mk();
    const now = jest.spyOn(Date, 'now');
    try {
      now.mockReturnValue(1_000_000);
      const bad = (id: number) => ({ ...idle(id, 0), state: 42 }) as never;
      const body = () => snap({ uptime: 100, workers: [bad(0), bad(1), bad(2), bad(3), bad(4)] });
      src.applyBody(body(), T0); // the skip, then "source is up"
      expect(m.errors.get('bad_field')).toBe(5);
      const w = warns().filter((x) => x.startsWith('skipped malformed'));
      expect(w).toHaveLength(1);
      expect(w[0]).toMatch(/^skipped malformed parts of the snapshot: gpu_workers\[0\][^;]*; gpu_workers\[1\][^;]*; gpu_workers\[2\][^;]* \(\+2 more\)$/);
      src.applyBody(body(), T0 + S); // another line came between: logged again
      expect(warns().filter((x) => x.startsWith('skipped malformed'))).toHaveLength(2);
      now.mockReturnValue(1_000_000 + 59_999);
      src.applyBody(body(), T0 + 2 * S);
      expect(warns().filter((x) => x.startsWith('skipped malformed'))).toHaveLength(2);
      now.mockReturnValue(1_000_000 + 60_000);
      src.applyBody(body(), T0 + 3 * S);
      expect(warns().filter((x) => x.startsWith('skipped malformed'))).toHaveLength(3);
      // Three: no "more".
      src.applyBody(snap({ uptime: 104, workers: [bad(0), bad(1), bad(2)] }), T0 + 4 * S);
      expect(warns().at(-1)).toMatch(/gpu_workers\[2\][^;]*$/);
      expect(warns().at(-1)).not.toMatch(/more\)$/);
      expect(m.errors.get('bad_field')).toBe(23);
    } finally {
      now.mockRestore();
    }
  });

  test('implausible parts are counted as implausible and logged', () => {
    const { src, m, warns } = mk();
    const long = pipeline('J', 'porep-c2', [['done', 10, 1e15]]);
    src.applyBody(snap({ uptime: 100, workers: W2, pipelines: [long, pipeline('K', 'porep-c2', [['done', 10, 1e15]]), pipeline('L', 'porep-c2', [['done', 10, 1e15]]), pipeline('M', 'porep-c2', [['done', 10, 1e15]])] }), T0);
    expect(m.errors.get('implausible')).toBe(4);
    expect(m.errors.get('bad_field')).toBe(0);
    const w = warns().filter((x) => x.startsWith('skipped implausible parts of the snapshot: '));
    expect(w).toHaveLength(1);
    expect(w[0]).toMatch(/pipelines\[0\].*; pipelines\[1\].*; pipelines\[2\].* \(\+1 more\)$/);
    src.applyBody(snap({ uptime: 101, workers: W2, pipelines: [long] }), T0 + S);
    expect(warns().at(-1)).toMatch(/^skipped implausible parts of the snapshot: pipelines\[0\][^;]*$/);
    expect(warns().at(-1)).not.toMatch(/more\)$/);
  });

  test('oversized unknown fields are not re-served and are counted', () => {
    const { src, m, warns } = mk();
    const body = snap({ uptime: 100, workers: W2 }) as Record<string, unknown>;
    body.extra1 = 'x'.repeat(2_000_000);
    src.applyBody(body, T0);
    expect(m.errors.get('bad_field')).toBe(1);
    expect(m.errors.lastMessage).toMatch(new RegExp(`^snapshot from ${URL0.replace(/\./g, '\\.')}: not re-served: `));
    expect(warns().some((w) => w.startsWith('not re-serving oversized fields of the snapshot: '))).toBe(true);
    expect(JSON.stringify(src.statusBody()).length).toBeLessThan(1_000_000);
    for (let i = 2; i <= 5; i++) body[`extra${i}`] = 'y'.repeat(2_000_000);
    src.applyBody(body, T0 + S);
    expect(m.errors.get('bad_field')).toBe(6);
    expect(warns().at(-1)).toMatch(/ \(\+2 more\)$/);
  });
});

describe('unknown proof kinds', () => {
  test('counted once per new job and once per new counter key, logged with up to three names', () => {
    const { src, m, warns } = mk();
    const now = jest.spyOn(Date, 'now');
    try {
      now.mockReturnValue(5_000_000);
      src.applyBody(snap({ uptime: 100, workers: W2, pipelines: [pipeline('a', 'zk-1', [['pending', null, null]]), pipeline('b', 'porep-c2', [['pending', null, null]])] }), T0);
      expect(m.errors.get('unknown_proof_kind')).toBe(1);
      expect(warns().at(-1)).toBe('folded 1 unknown proof kind into proof_kind="other": "zk-1"');
      expect(m.errors.lastMessage).toBe('unknown proof kind folded into "other": "zk-1"');
      // The same job again: not counted again. Its kind is "other" in the model.
      src.applyBody(snap({ uptime: 101, workers: W2, pipelines: [pipeline('a', 'zk-1', [['pending', null, null]])] }), T0 + S);
      expect(m.errors.get('unknown_proof_kind')).toBe(1);
      expect([...m.jobs.values()].map((j) => j.kind)).toEqual([OTHER]);
      // New keys of the counters: once each, across the three maps, then never again.
      const long = 'q'.repeat(70);
      now.mockReturnValue(5_000_001);
      src.applyBody(snap({ uptime: 102, workers: W2, completed: { 'zk-2': 1, [long]: 1, 'porep-c2': 1 }, failed: { 'zk-3': 1 } }, { cancelled: { 'zk-4': 1 } }), T0 + 2 * S);
      expect(m.errors.get('unknown_proof_kind')).toBe(1 + 4);
      expect(warns().at(-1)).toBe(`folded 4 unknown proof kinds into proof_kind="other": "zk-2", "${'q'.repeat(64)}…", "zk-3" (+1 more)`);
      src.applyBody(snap({ uptime: 103, workers: W2, completed: { 'zk-2': 2, [long]: 1, 'porep-c2': 1 }, failed: { 'zk-3': 1 } }, { cancelled: { 'zk-4': 2 } }), T0 + 3 * S);
      expect(m.errors.get('unknown_proof_kind')).toBe(5);
      // New keys after the baseline count whole (1 + 1), then by difference (+1).
      expect(m.kProofsCompleted[OTHER]).toBe(3);
      expect(m.kProofsFailed[OTHER]).toBe(1);
      expect(m.kProofsCancelled[OTHER]).toBe(2);
      // Two new ones: plural, no "more".
      src.applyBody(snap({ uptime: 104, workers: W2, pipelines: [pipeline('c', 'zk-5', [['pending', null, null]]), pipeline('d', 'zk-6', [['pending', null, null]])], completed: { 'zk-2': 2, [long]: 1, 'porep-c2': 1 }, failed: { 'zk-3': 1 } }), T0 + 4 * S);
      expect(warns().at(-1)).toBe('folded 2 unknown proof kinds into proof_kind="other": "zk-5", "zk-6"');
      // A name of exactly 64 characters is not cut.
      const k64 = 'w'.repeat(64);
      src.applyBody(snap({ uptime: 105, workers: W2, pipelines: [pipeline('e', k64, [['pending', null, null]])], completed: { 'zk-2': 2, [long]: 1, 'porep-c2': 1 }, failed: { 'zk-3': 1 } }), T0 + 5 * S);
      expect(warns().at(-1)).toBe(`folded 1 unknown proof kind into proof_kind="other": "${k64}"`);
    } finally {
      now.mockRestore();
    }
  });
});

describe('queue depth by kind', () => {
  // Upstream (curio extern/cuzk @ e0294b0f): /status counters.queue_depth is
  // Scheduler::len() (engine.rs detailed_status → StatusTracker::set_queue_depth), the
  // requests still in the scheduler's heap (scheduler.rs: submit pushes, next() pops). A job
  // reaches the pipelines table only through StatusTracker::register_job, which
  // engine.rs process_batch calls after the synthesis dispatcher took the request out with
  // scheduler.next() (and after its C1 parse + SRS load). So no listed pipeline is ever
  // inside queue_depth: the two are disjoint, and queue_depth names no kind.
  const P: PartSpec = ['pending', null, null];
  const depths = (o: Record<number, number>) => Array.from({ length: KIND_SLOTS }, (_, k) => o[k] ?? 0);

  test('upstream: a registered all-pending job is not in queue_depth — the heap’s requests stay whole under other', () => {
    const { src, m } = mk();
    // One request waiting in the heap (a WindowPoSt behind the busy dispatcher: kind unknown
    // here) and one PoRep job taken, parsed, registered, its partitions waiting for synthesis.
    src.applyBody(snap({ uptime: 100, workers: W2, queueDepth: 1, pipelines: [pipeline('a', 'porep-c2', [P, P])] }), T0);
    expect([...m.kQueueDepth]).toEqual(depths({ [PC2]: 1, [OTHER]: 1 }));
    // The heap empty: only the registered job, nothing under other.
    src.applyBody(snap({ uptime: 101, workers: W2, queueDepth: 0, pipelines: [pipeline('a', 'porep-c2', [P, P])] }), T0 + S);
    expect([...m.kQueueDepth]).toEqual(depths({ [PC2]: 1 }));
  });

  test('without the daemon’s split: jobs with every partition pending by kind, plus all of queue_depth under other', () => {
    const { src, m } = mk();
    src.applyBody(
      snap({
        uptime: 100,
        workers: W2,
        queueDepth: 5,
        pipelines: [pipeline('a', 'porep-c2', [P, P]), pipeline('b', 'porep-c2', [P]), pipeline('c', 'snap-update', [['synthesizing', 1, null], P]), pipeline('d', 'window-post', [P])],
      }),
      T0,
    );
    expect([...m.kQueueDepth]).toEqual(depths({ [PC2]: 2, [WPOST]: 1, [OTHER]: 5 }));
    // More listed than the daemon's total: both kept (disjoint sets, nothing subtracted).
    src.applyBody(snap({ uptime: 101, workers: W2, queueDepth: 1, pipelines: [pipeline('a', 'porep-c2', [P, P]), pipeline('b', 'porep-c2', [P])] }), T0 + S);
    expect([...m.kQueueDepth]).toEqual(depths({ [PC2]: 2, [OTHER]: 1 }));
    // A pending job with a partition past pending is not queued; the daemon's split wins when given.
    src.applyBody(snap({ uptime: 102, workers: W2, queueDepth: 4, pipelines: [pipeline('a', 'porep-c2', [P, P])] }, { queueByKind: { 'snap-update': 3, 'window-post': 1 } }), T0 + 2 * S);
    expect([...m.kQueueDepth]).toEqual(depths({ [SNAP]: 3, [WPOST]: 1 }));
  });
});

describe('jobs and partitions', () => {
  const P: PartSpec = ['pending', null, null];
  test('a partition’s GPU and synthesis time counted once, when first seen ended; the baseline’s not at all', () => {
    const { src, m } = mk();
    src.applyBody(snap({ uptime: 100, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['done', 2000, 300], ['synth_done', 1500, null], P])] }), T0);
    expect([m.kPartsCompleted[PC2], m.kGpuNs[PC2]]).toEqual([0, 0]);
    src.applyBody(snap({ uptime: 101, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['done', 2000, 300], ['done', 1500, 400], P])] }), T0 + S);
    src.applyBody(snap({ uptime: 102, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['done', 2000, 300], ['done', 1500, 400], ['failed', 7, null]])] }), T0 + 2 * S);
    src.applyBody(snap({ uptime: 103, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['done', 2000, 300], ['done', 1500, 400], ['failed', 7, null]])] }), T0 + 3 * S);
    expect(m.kPartsCompleted[PC2]).toBe(1);
    expect(m.kPartsFailed[PC2]).toBe(1);
    expect(m.kGpuNs[PC2]).toBe(400 * 1e6);
  });

  test('a job id registered again (a partition back from done): a new job, its partitions count again', () => {
    const { src, m } = mk();
    src.applyBody(snap({ uptime: 100, workers: W2, pipelines: [pipeline('R', 'snap-update', [P, P])] }), T0);
    const h1 = [...m.jobs.keys()][0];
    src.applyBody(snap({ uptime: 101, workers: W2, pipelines: [pipeline('R', 'snap-update', [['done', 10, 20], P])] }), T0 + S);
    expect(m.kPartsCompleted[SNAP]).toBe(1);
    src.applyBody(snap({ uptime: 102, workers: W2, pipelines: [pipeline('R', 'snap-update', [P, P])] }), T0 + 2 * S);
    const h2 = [...m.jobs.keys()];
    expect(h2).toHaveLength(1);
    expect(h2[0]).not.toBe(h1);
    expect(src.jobId(h1)).toBeUndefined();
    expect(src.jobId(h2[0])).toBe('R');
    src.applyBody(snap({ uptime: 103, workers: W2, pipelines: [pipeline('R', 'snap-update', [['done', 10, 20], P])] }), T0 + 3 * S);
    expect(m.kPartsCompleted[SNAP]).toBe(2);
    // Registered again with another partition count, its first partition still done: a new
    // list, not a regression (nothing finished went back).
    src.applyBody(snap({ uptime: 104, workers: W2, pipelines: [pipeline('R', 'snap-update', [['done', 10, 20], P, P])] }), T0 + 4 * S);
    expect([...m.jobs.keys()]).toEqual(h2);
    src.applyBody(snap({ uptime: 105, workers: W2, pipelines: [pipeline('R', 'snap-update', [['done', 10, 20], ['done', 10, 20], P])] }), T0 + 5 * S);
    expect(m.kPartsCompleted[SNAP]).toBe(3);
    // Index 2 pending after being pending: no regression either.
    src.applyBody(snap({ uptime: 106, workers: W2, pipelines: [pipeline('R', 'snap-update', [['done', 10, 20], ['done', 10, 20], P])] }), T0 + 6 * S);
    expect([...m.jobs.keys()]).toEqual(h2);
  });

  test('a job first seen finished in the baseline, re-registered later, is a new job', () => {
    const { src, m } = mk();
    src.applyBody(snap({ uptime: 100, workers: W2, pipelines: [pipeline('R', 'porep-c2', [['failed', 1, null]])] }), T0);
    const h1 = [...m.jobs.keys()][0];
    src.applyBody(snap({ uptime: 101, workers: W2, pipelines: [pipeline('R', 'porep-c2', [P])] }), T0 + S);
    expect([...m.jobs.keys()]).not.toContain(h1);
    expect(m.jobs.size).toBe(1);
  });

  test('workers listed in any order: each one’s busy state lands on its own slot, also after the topology changes', () => {
    const { src, m } = mk();
    src.applyBody(snap({ uptime: 100, workers: [proving(3, 1, 'J', 0, 0), idle(1, 0)], pipelines: [pipeline('J', 'porep-c2', [['gpu', 5, 0]])] }), T0);
    expect(m.topology.workers.map((w) => w.id)).toEqual([1, 3]);
    expect([...m.wBusy]).toEqual([0, 1]);
    src.applyBody(snap({ uptime: 101, workers: [proving(3, 1, 'J', 0, 1), idle(1, 0), proving(0, 0, 'J', 1, 0)], pipelines: [pipeline('J', 'porep-c2', [['gpu', 5, 1000], ['gpu', 5, 0]])] }), T0 + S);
    expect(m.topology.workers.map((w) => w.id)).toEqual([0, 1, 3]);
    expect([...m.wBusy]).toEqual([1, 0, 1]);
    expect(m.wJob[2]).toBe([...m.jobs.keys()][0]);
    // A worker proving a job that is not listed: busy, with no job handle.
    src.applyBody(snap({ uptime: 102, workers: [proving(3, 1, 'gone', 0, 1), idle(1, 0), idle(0, 0)] }), T0 + 2 * S);
    expect([...m.wBusy]).toEqual([0, 0, 1]);
    expect(m.wJob[2]).toBe(0);
  });
});

describe('GPU identities', () => {
  test('the first name seen stays; a change without a restart is counted and logged; listed GPUs without workers are kept', () => {
    const { src, m, warns } = mk();
    src.applyBody(snap({ uptime: 100, workers: [idle(0, 0)] }, { gpus: [{ ordinal: 0, name: 'A', uuid: 'GPU-1', pci_bus_id: '0000:01:00.0' }, { ordinal: 3, name: 'B', uuid: null, pci_bus_id: null }] }), T0);
    expect(m.topology.gpus).toEqual([
      { ordinal: 0, name: 'A', uuid: 'GPU-1', pciBusId: '0000:01:00.0' },
      { ordinal: 3, name: 'B', uuid: undefined, pciBusId: undefined },
    ]);
    src.applyBody(snap({ uptime: 101, workers: [idle(0, 0)] }, { gpus: [{ ordinal: 0, name: 'Z', uuid: 'GPU-1', pci_bus_id: '0000:01:00.0' }, { ordinal: 3, name: 'Y' }] }), T0 + S);
    expect(m.errors.get('implausible')).toBe(1);
    expect(m.errors.lastMessage).toBe(`snapshot from ${URL0}: 2 GPU(s) reported a different name/uuid without a restart`);
    expect(warns()).toContain('2 GPU(s) changed name or uuid without a daemon restart; keeping the first identity seen');
    expect(m.topology.gpus.map((g) => g.name)).toEqual(['A', 'B']);
    // GPU 3 no longer listed: forgotten, so its next name is taken as new. A snapshot without
    // a GPU list forgets nothing.
    src.applyBody(snap({ uptime: 102, workers: [idle(0, 0)] }, { gpus: [{ ordinal: 0, name: 'A', uuid: 'GPU-1', pci_bus_id: '0000:01:00.0' }] }), T0 + 2 * S);
    src.applyBody(snap({ uptime: 103, workers: [idle(0, 0)] }), T0 + 3 * S);
    src.applyBody(snap({ uptime: 104, workers: [idle(0, 0)] }, { gpus: [{ ordinal: 0, name: 'A', uuid: 'GPU-1', pci_bus_id: '0000:01:00.0' }, { ordinal: 3, name: 'C' }] }), T0 + 4 * S);
    expect(m.errors.get('implausible')).toBe(1);
    expect(m.topology.gpus.map((g) => g.name)).toEqual(['A', 'C']);
  });
});

describe('polls over HTTP', () => {
  let daemon: StatusServer;
  beforeEach(async () => {
    daemon = await StatusServer.start();
  });
  afterEach(async () => {
    await daemon.close();
  });

  async function failOnce(o: Parameters<typeof mk>[0], set: () => void) {
    const x = mk({ url: daemon.url, ...o });
    const oks: boolean[] = [];
    x.src.onPoll = (ok) => oks.push(ok);
    set();
    await x.src.pollOnce();
    await x.src.stop();
    return { ...x, oks };
  }

  test('an HTTP error status: http_status, with the reason phrase', async () => {
    const { m, oks, warns } = await failOnce({}, () => (daemon.behaviour = { kind: 'body', body: 'nope', status: 503 }));
    expect(m.errors.get('http_status')).toBe(1);
    expect(m.up).toBe(false);
    expect(oks).toEqual([false]);
    expect(m.errors.lastMessage).toBe(`GET ${daemon.url}: HTTP 503 Service Unavailable`);
    expect(warns()).toEqual([m.errors.lastMessage]);
  });

  test('a declared body over the limit: body_too_large before reading it; at the limit: read', async () => {
    const body = JSON.stringify(snap({ uptime: 10, workers: W2 }));
    const a = await failOnce({ maxBodyBytes: body.length - 1 }, () => (daemon.behaviour = { kind: 'body', body }));
    expect(a.m.errors.get('body_too_large')).toBe(1);
    expect(a.m.errors.lastMessage).toBe(`GET ${daemon.url}: body of ${body.length} bytes exceeds the limit of ${body.length - 1}`);
    const b = await failOnce({ maxBodyBytes: body.length }, () => (daemon.behaviour = { kind: 'body', body }));
    expect(b.m.up).toBe(true);
    expect(b.oks).toEqual([true]);
  });

  test('an undeclared body over the limit: body_too_large as it streams; at the limit: read', async () => {
    const a = await failOnce({ maxBodyBytes: 100_000 }, () => (daemon.behaviour = { kind: 'stream', bytes: 100_001, declareLength: false }));
    expect(a.m.errors.get('body_too_large')).toBe(1);
    expect(a.m.errors.lastMessage).toBe(`GET ${daemon.url}: body exceeds the limit of 100000 bytes`);
    // 100,000 spaces: read whole (then not JSON).
    const b = await failOnce({ maxBodyBytes: 100_000 }, () => (daemon.behaviour = { kind: 'stream', bytes: 100_000, declareLength: false }));
    expect(b.m.errors.get('body_too_large')).toBe(0);
    expect(b.m.errors.get('malformed_json')).toBe(1);
    expect(b.m.errors.lastMessage).toMatch(new RegExp(`^GET ${daemon.url.replace(/\./g, '\\.')}: body is not JSON \\(.+\\)$`));
  });

  test('too many containers: refused before parsing; too deep: refused; a deep array is no snapshot', async () => {
    const many = `[${'[],'.repeat(200_000)}[]]`;
    const a = await failOnce({ maxBodyBytes: 1 << 21 }, () => (daemon.behaviour = { kind: 'body', body: many }));
    expect(a.m.errors.get('invalid_snapshot')).toBe(1);
    expect(a.m.errors.lastMessage).toBe(`snapshot from ${daemon.url} rejected before parsing: more than 200000 objects/arrays`);
    // Exactly at the bound: parsed (and then not a snapshot).
    const atBound = `[${'[],'.repeat(199_998)}[]]`;
    const b = await failOnce({ maxBodyBytes: 1 << 21 }, () => (daemon.behaviour = { kind: 'body', body: atBound }));
    expect(b.m.errors.lastMessage).not.toMatch(/before parsing/);
    const deep = (n: number) => ({ ...snap({ uptime: 10, workers: W2 }), x: JSON.parse('{"a":'.repeat(n) + '1' + '}'.repeat(n)) as unknown });
    const c = await failOnce({}, () => daemon.serveJson(deep(64)));
    expect(c.m.errors.get('invalid_snapshot')).toBe(1);
    expect(c.m.errors.lastMessage).toBe(`snapshot from ${daemon.url} rejected: nested deeper than 64 levels`);
    const d = await failOnce({}, () => daemon.serveJson(deep(62)));
    expect(d.m.up).toBe(true);
    const e = await failOnce({}, () => (daemon.behaviour = { kind: 'body', body: '['.repeat(70) + ']'.repeat(70) }));
    expect(e.m.errors.get('invalid_snapshot')).toBe(1);
    expect(e.m.errors.lastMessage).not.toMatch(/nested deeper/);
  });

  test('nothing listening: connect, with a readable reason', async () => {
    const url = await refusedUrl();
    const { m } = await failOnce({ url }, () => {});
    expect(m.errors.get('connect')).toBe(1);
    expect(m.errors.lastMessage).toBe(`GET ${url}: connection refused (is status_listen set and the daemon running?) (ECONNREFUSED)`);
  });

  test('a URL we cannot poll: connect', async () => {
    const a = await failOnce({ url: 'http://[nope/status' }, () => {});
    expect(a.m.errors.get('connect')).toBe(1);
    expect(a.m.errors.lastMessage).toBe('invalid URL http://[nope/status');
    const b = await failOnce({ url: 'ftp://127.0.0.1/status' }, () => {});
    expect(b.m.errors.get('connect')).toBe(1);
    expect(b.m.errors.lastMessage).toBe('ftp://127.0.0.1/status: only http:// and https:// are supported');
  });

  test('no answer within the deadline: timeout; a body cut short: connect', async () => {
    const a = await failOnce({ timeoutMs: 150 }, () => (daemon.behaviour = { kind: 'hang' }));
    expect(a.m.errors.get('timeout')).toBe(1);
    expect(a.m.errors.lastMessage).toBe(`GET ${daemon.url}: no complete answer within 150 ms`);
    const b = await failOnce({ timeoutMs: 150 }, () => (daemon.behaviour = { kind: 'stall-body' }));
    expect(b.m.errors.get('timeout')).toBe(1);
    const c = await failOnce({}, () => (daemon.behaviour = { kind: 'truncate', body: JSON.stringify(snap({ uptime: 1, workers: W2 })), sendBytes: 10 }));
    expect(c.m.errors.get('connect')).toBe(1);
    expect(c.m.errors.lastMessage).toMatch(new RegExp(`^GET ${daemon.url.replace(/\./g, '\\.')}: connection closed before the body was complete`));
  });

  test('one line per distinct problem, again after a minute', async () => {
    const now = jest.spyOn(Date, 'now');
    try {
      now.mockReturnValue(10_000_000);
      const { src, m, warns } = mk({ url: daemon.url });
      daemon.behaviour = { kind: 'body', body: 'x', status: 500 };
      await src.pollOnce();
      await src.pollOnce();
      expect(m.errors.get('http_status')).toBe(2);
      expect(warns()).toHaveLength(1);
      daemon.behaviour = { kind: 'body', body: 'x', status: 502 };
      await src.pollOnce();
      expect(warns()).toHaveLength(2);
      now.mockReturnValue(10_000_000 + 59_999);
      await src.pollOnce();
      expect(warns()).toHaveLength(2);
      now.mockReturnValue(10_000_000 + 60_000);
      await src.pollOnce();
      expect(warns()).toHaveLength(3);
      await src.stop();
    } finally {
      now.mockRestore();
    }
  });

  test('stop() abandons a poll hung on the daemon at once, and counts nothing', async () => {
    const { src, m, warns } = mk({ url: daemon.url, timeoutMs: 60_000 });
    const oks: boolean[] = [];
    src.onPoll = (ok) => oks.push(ok);
    daemon.behaviour = { kind: 'hang' };
    const p = src.pollOnce();
    while (daemon.requests === 0) await new Promise((r) => setImmediate(r));
    const t = performance.now();
    await src.stop();
    await p;
    expect(performance.now() - t).toBeLessThan(5000);
    for (const r of ATTACH_ERRORS) expect([r, m.errors.get(r)]).toEqual([r, 0]);
    expect(oks).toEqual([]);
    expect(warns()).toEqual([]);
  });

  test('start() polls on its interval until stop()', async () => {
    const { src } = mk({ url: daemon.url, pollIntervalMs: 5 });
    daemon.serveJson(snap({ uptime: 10, workers: W2 }));
    let n = 0;
    const three = new Promise<void>((resolve) => {
      src.onPoll = () => {
        if (++n === 3) resolve();
      };
    });
    src.start();
    await three;
    await src.stop();
    const after = src.polls;
    expect(after).toBeGreaterThanOrEqual(3);
    // Nothing polls after stop: a poll of our own goes through and is the only one more.
    await src.pollOnce();
    expect(src.polls).toBe(after + 1);
  });

  test('keep-alive: polls share one connection; one dropped as it is reused is asked again on a new one, not counted', async () => {
    const { src, m } = mk({ url: daemon.url });
    const good = JSON.stringify(snap({ uptime: 10, workers: W2 }));
    daemon.behaviour = { kind: 'body', body: good };
    for (let i = 0; i < 3; i++) await src.pollOnce();
    expect([daemon.requests, daemon.connections]).toEqual([3, 1]);
    daemon.behaviour = { kind: 'drop', always: false, body: good };
    await src.pollOnce();
    expect([daemon.requests, daemon.connections]).toEqual([5, 2]);
    expect(m.errors.get('connect')).toBe(0);
    expect(m.up).toBe(true);
    // Hung up on every time: one retry only, then counted.
    daemon.behaviour = { kind: 'drop', always: true, body: good };
    await src.pollOnce();
    expect(daemon.requests).toBe(7);
    expect(m.errors.get('connect')).toBe(1);
    expect(m.errors.lastMessage).toBe(`GET ${daemon.url}: connection reset by the daemon (ECONNRESET)`);
    await src.stop();
  });

  test('keep-alive: a one-request server that keeps the connection open is connected to afresh for good after two strikes, logged once', async () => {
    // The deadline also bounds the answered polls (daemon in this process): 250 ms failed
    // there when the JS thread stalled that long in an answer (a busy-wait in the daemon).
    const { src, m, lines } = mk({ url: daemon.url, timeoutMs: 1000 });
    const good = JSON.stringify(snap({ uptime: 10, workers: W2 }));
    daemon.behaviour = { kind: 'drop', always: false, body: good, how: 'ignore' };
    const off = () => lines.filter((l) => l.msg.includes('connecting afresh for every poll'));
    await src.pollOnce(); // connection 1, answered
    await src.pollOnce(); // reused, ignored: timeout
    await src.pollOnce(); // connection 2: strike 1
    await src.pollOnce(); // reused, ignored: timeout
    expect(off()).toHaveLength(0);
    await src.pollOnce(); // connection 3: strike 2
    expect(off()).toEqual([{ level: 'warn', msg: expect.stringMatching(/^twice the daemon left a request/), fields: { source: daemon.url } }]);
    for (let i = 0; i < 2; i++) await src.pollOnce();
    expect(m.errors.get('timeout')).toBe(2);
    expect(daemon.connections).toBe(5);
    expect(off()).toHaveLength(1);
    await src.stop();
  });

  test('keep-alive: a hung daemon whose new connections time out too keeps keep-alive', async () => {
    // 1 s, not 150 ms: the answered polls must beat the deadline too, and a 200 ms busy-wait
    // in the daemon's answer (a stalled JS thread: both ends are this process) counted 8
    // timeouts instead of 4.
    const { src, m, lines } = mk({ url: daemon.url, timeoutMs: 1000 });
    const good = JSON.stringify(snap({ uptime: 10, workers: W2 }));
    for (let round = 0; round < 2; round++) {
      daemon.behaviour = { kind: 'body', body: good };
      await src.pollOnce();
      daemon.behaviour = { kind: 'hang' };
      await src.pollOnce(); // reused: timeout
      await src.pollOnce(); // afresh: timeout too
    }
    daemon.behaviour = { kind: 'body', body: good };
    await src.pollOnce();
    await src.pollOnce();
    expect(m.errors.get('timeout')).toBe(4);
    expect(daemon.connections).toBe(5);
    expect(lines.filter((l) => l.msg.includes('connecting afresh'))).toHaveLength(0);
    await src.stop();
  });

  test('fetchLimited without keep-alive agents: one connection per request', async () => {
    daemon.behaviour = { kind: 'body', body: '{"a":1}' };
    expect((await fetchLimited(daemon.url, 2000, 100)).toString()).toBe('{"a":1}');
    expect((await fetchLimited(daemon.url, 2000, 100)).toString()).toBe('{"a":1}');
    expect(daemon.connections).toBe(2);
    await expect(fetchLimited(daemon.url, 2000, 6)).rejects.toMatchObject({ reason: 'body_too_large' });
  });
});

describe('KeepAlive bookkeeping', () => {
  test('strikes: two fresh answers after reused timeouts turn it off; a reused answer or a failed fresh request resets', () => {
    const k = new KeepAlive();
    k.answered(false);
    expect([k.off, k.strikes]).toEqual([false, 0]);
    k.freshNext = true;
    k.answered(false);
    expect([k.off, k.strikes, k.freshNext]).toEqual([false, 1, false]);
    k.answered(false); // no timeout before it: no strike
    expect(k.strikes).toBe(1);
    k.answered(true);
    expect(k.strikes).toBe(0);
    k.freshNext = true;
    k.freshFailed();
    k.answered(false);
    expect([k.strikes, k.off]).toEqual([0, false]);
    k.freshNext = true;
    k.answered(false);
    k.freshNext = true;
    k.answered(false);
    expect([k.strikes, k.off]).toEqual([2, true]);
    k.destroy();
  });

  test('the target is parsed once per URL, as Node fills in defaults', () => {
    const k = new KeepAlive();
    const a = k.target('http://u:p@example.com/status?x=1');
    expect(a.protocol).toBe('http:');
    expect(a.http1).toEqual({ host: 'example.com', port: 80, path: '/status?x=1', auth: 'u:p' });
    expect(k.target('http://u:p@example.com/status?x=1')).toBe(a);
    const b = k.target('http://127.0.0.1:8080');
    expect(b).not.toBe(a);
    expect(b.http1).toEqual({ host: '127.0.0.1', port: 8080, path: '/', auth: undefined });
    const c = k.target('https://example.com:8443/s');
    expect(c.protocol).toBe('https:');
    expect(c.http1).toBeNull();
    expect(() => k.target('not a url')).toThrow();
    k.destroy();
  });
});
