/**
 * Issue 23: AttachSource (src/engine/sources/attach/attach-source.ts): how one snapshot is
 * read (an attached daemon's clock, jobs that leave, jobs with nothing pending) and the proof
 * counters after the baseline — the survivors of the Stryker run over the tail of `apply()`
 * and `addDeltas()` (2026-12-03 13:14-13:24).
 *
 * Expectations come from the file's header rules (the first snapshot is the baseline: what
 * finished before we attached is not ours; proof counts by difference; a per-kind counter
 * going down alone is counted implausible), docs/hostile-inputs.md row 20.1c (the growth
 * bound is "since the last good poll": the first poll has none), plausibility.ts' header (a
 * daemon we do not control must not be able to grow our memory), snapshot-sync.ts'
 * ViewMapping ("an attached daemon, whose clock is not ours: busy_secs is used instead"; a
 * job whose partitions all ended has ended), status-stale.ts ("each job inferred failed is
 * reported once") and the one-line-per-problem logging that names at most three.
 */
import { AttachSource } from '../../src/engine/sources/attach/attach-source';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { kindIndex, OTHER_KIND_INDEX } from '../../src/engine/model/kinds';
import type { Logger } from '../../src/util/logger';
import { idle, pipeline, proving, snapshot } from './snapshots';

const PC2 = kindIndex('porep-c2');
const SNAP = kindIndex('snap-update');
const S = 1e9;
const T0 = 4_000_000 * S;
const URL0 = 'http://127.0.0.1:9/status';

function mk() {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (msg: string) => void lines.push({ level, msg });
  const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
  const errors = new ErrorCounts();
  const incs: [string, string | undefined][] = [];
  const inc = errors.inc.bind(errors);
  errors.inc = (reason: string, message?: string) => {
    incs.push([reason, message]);
    inc(reason, message);
  };
  const src = new AttachSource({ url: URL0, errors, pollIntervalMs: 1000, timeoutMs: 2000, maxBodyBytes: 1 << 22, logger });
  const counted = (reason: string) => incs.filter(([r]) => r === reason).map(([, msg]) => msg ?? '');
  return { src, m: src.model, errors, counted, warns: () => lines.filter((l) => l.level === 'warn').map((l) => l.msg) };
}

const W2 = [idle(0, 0), idle(1, 1)];

describe('the first snapshot is the baseline', () => {
  test('whatever its counters claim, it is never judged against the growth bound (there is no last good poll)', () => {
    const { src, m, counted, warns } = mk();
    // Our host booted a minute ago (the model clock is 60 s); the daemon, on another host, has
    // run for 11 days and ended a million proofs: more than (60 + 10) x 100 x 2 = 14,000, but
    // none of it since a look of ours.
    src.applyBody(snapshot({ uptime: 1_000_000, workers: W2, completed: { 'porep-c2': 1_000_000 } }), 60 * S);
    expect(counted('implausible')).toEqual([]);
    expect(warns()).toEqual([]);
    expect(m.kProofsCompleted[PC2]).toBe(0);
    // From it on, by difference.
    src.applyBody(snapshot({ uptime: 1_000_001, workers: W2, completed: { 'porep-c2': 1_000_002 } }), 61 * S);
    expect(m.kProofsCompleted[PC2]).toBe(2);
    expect(counted('implausible')).toEqual([]);
  });
});

describe('failed jobs inferred from /status', () => {
  test('each is counted once, also the second and third of a kind in later polls', () => {
    const { src, m } = mk();
    const failing = (id: string) => pipeline(id, 'snap-update', [['failed', 100, null], ['pending', null, null]]);
    src.applyBody(snapshot({ uptime: 100, workers: W2 }), T0);
    src.applyBody(snapshot({ uptime: 101, workers: W2, pipelines: [failing('A')] }), T0 + S);
    expect(m.kProofsFailed[SNAP]).toBe(1);
    src.applyBody(snapshot({ uptime: 102, workers: W2, pipelines: [failing('A'), failing('B')] }), T0 + 2 * S);
    expect(m.kProofsFailed[SNAP]).toBe(2);
    src.applyBody(snapshot({ uptime: 103, workers: W2, pipelines: [failing('A'), failing('B'), failing('C')] }), T0 + 3 * S);
    expect(m.kProofsFailed[SNAP]).toBe(3);
    src.applyBody(snapshot({ uptime: 104, workers: W2, pipelines: [failing('A'), failing('B'), failing('C')] }), T0 + 4 * S);
    expect(m.kProofsFailed[SNAP]).toBe(3);
    expect(src.kInferredFailed[SNAP]).toBe(3);
  });
});

describe('per-kind counters going down without a restart', () => {
  test('four at once: counted once, the message and the line name the first three, comma-separated', () => {
    const { src, m, counted, warns } = mk();
    const body = (n: number) => {
      const b = snapshot({ uptime: 100 + n, workers: W2, completed: { 'porep-c2': 10 - n, 'snap-update': 10 - n, 'window-post': 10 - n, 'winning-post': 10 - n } });
      // The daemon's total stays 100 (the kinds' sum may fall short of it): not a restart.
      (b.counters as Record<string, unknown>).total_completed = 100;
      return b;
    };
    src.applyBody(body(0), T0);
    src.applyBody(body(1), T0 + S);
    expect(m.errors.get('restart')).toBe(0);
    const names = '"porep-c2", "snap-update", "window-post"';
    expect(counted('implausible')).toEqual([`snapshot from ${URL0}: per-kind counter(s) went down without a restart: ${names}`]);
    expect(warns()).toEqual([`per-kind counters went down while uptime and totals did not (${names}): not a restart, nothing counted`]);
    expect(m.kProofsCompleted[PC2]).toBe(0);
  });
});

describe('jobs the daemon no longer lists', () => {
  test('a finished job that aged out of the snapshot leaves the model; so does one that vanished unfinished', () => {
    const { src, m } = mk();
    src.applyBody(snapshot({ uptime: 100, workers: W2 }), T0);
    src.applyBody(snapshot({ uptime: 101, workers: W2, pipelines: [pipeline('D', 'porep-c2', [['done', 10, 20], ['done', 10, 20]]), pipeline('P', 'porep-c2', [['pending', null, null]])] }), T0 + S);
    const hs = [...m.jobs.keys()];
    expect(hs.map((h) => src.jobId(h)).sort()).toEqual(['D', 'P']);
    // 31 s later (cuzk keeps finished jobs 30 s): neither listed.
    src.applyBody(snapshot({ uptime: 132, workers: W2 }), T0 + 32 * S);
    expect(m.jobs.size).toBe(0);
    expect(hs.map((h) => src.jobId(h))).toEqual([undefined, undefined]);
  });

  test('what we remember per job id does not grow with ids that came and went (a daemon minting ids)', () => {
    const { src, m } = mk();
    src.applyBody(snapshot({ uptime: 100, workers: W2 }), T0);
    for (let i = 1; i <= 50; i++) {
      src.applyBody(snapshot({ uptime: 100 + i, workers: W2, pipelines: [pipeline(`J${i}`, 'porep-c2', [['pending', null, null]])] }), T0 + i * S);
    }
    src.applyBody(snapshot({ uptime: 151, workers: W2 }), T0 + 51 * S);
    expect(m.jobs.size).toBe(0);
    // The per-id partition record (the re-registration check), read as the private it is.
    expect((src as unknown as { started: Map<string, unknown> }).started.size).toBe(0);
  });
});

describe('an attached daemon’s clock is not ours', () => {
  test('a worker’s busy_since_ns (the reference engine’s own clock) is ignored: the stint starts busy_secs before the snapshot', () => {
    const { src, m } = mk();
    const w = { ...proving(0, 0, 'J', 0, 4), busy_since_ns: 7 };
    src.applyBody(snapshot({ uptime: 100, workers: [w, idle(1, 1)], pipelines: [pipeline('J', 'porep-c2', [['gpu', 10, 0]])] }), T0);
    expect(m.wBusy[0]).toBe(1);
    expect(m.wSinceNs[0]).toBe(T0 - 4 * S);
  });
});

describe('queue depth split without the daemon’s own split', () => {
  test('a job listing no partitions has none pending: read as ended, not queued', () => {
    const { src, m } = mk();
    const none = { ...pipeline('Z', 'snap-update', []), total_partitions: 0, partitions_done: 0 };
    src.applyBody(snapshot({ uptime: 100, workers: W2, pipelines: [none, pipeline('P', 'porep-c2', [['pending', null, null]])], queueDepth: 3 }), T0);
    expect(m.errors.get('bad_field') + m.errors.get('implausible')).toBe(0);
    // P all pending: 1 under its kind; the daemon's 3 whole under "other" (its queue_depth is
    // Scheduler::len(), never a listed job: upstream engine.rs process_batch registers a job
    // only after scheduler.next() took it); Z nowhere.
    expect([m.kQueueDepth[PC2], m.kQueueDepth[SNAP], m.kQueueDepth[OTHER_KIND_INDEX]]).toEqual([1, 0, 3]);
  });
});

describe('cuzk_exporter_events_total ("state-change events ingested from the source")', () => {
  test('after the baseline, one change in a snapshot is one event; a snapshot with no change none', () => {
    const { src, m } = mk();
    src.applyBody(snapshot({ uptime: 100, workers: W2, memoryUsed: 1000 }), T0);
    const e0 = m.eventsTotal;
    src.applyBody(snapshot({ uptime: 101, workers: W2, memoryUsed: 2000 }), T0 + S);
    expect(m.memoryUsedBytes).toBe(2000);
    expect(m.eventsTotal).toBe(e0 + 1);
    src.applyBody(snapshot({ uptime: 102, workers: W2, memoryUsed: 2000 }), T0 + 2 * S);
    expect(m.eventsTotal).toBe(e0 + 1);
  });
});
