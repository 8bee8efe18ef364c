/**
 * Issue 23: AttachSource (src/engine/sources/attach/attach-source.ts) across a daemon
 * restart, the survivors of the Stryker run over `restarted()` (2026-12-03 13:14-13:24).
 *
 * Expectations come from the file's header rules (a restart resets only our baselines, never
 * our totals; a running stint is counted up to the last time it was seen running, never
 * through time we did not look), plausibility.ts (a restart is believed when the new process
 * can have started since the previous answer: new uptime <= elapsed x 1.01 + 5 s),
 * status-stale.ts ("each job inferred failed is reported once"; cuzk's status.rs register_job
 * makes a new JobState for a re-used job id, and Curio's retries re-use theirs) and the
 * metric's help: cuzk_exporter_events_total counts state-change events ingested from the
 * source; what the exporter re-syncs by itself (native: after a sequence gap) only moves
 * state.
 */
import { AttachSource } from '../../src/engine/sources/attach/attach-source';
import { kindIndex } from '../../src/engine/model/kinds';
import type { Logger } from '../../src/util/logger';
import { idle, pipeline, proving, snapshot } from './snapshots';

const SNAP = kindIndex('snap-update');
const S = 1e9;
const T0 = 3_000_000 * S;
const URL0 = 'http://127.0.0.1:9/status';

function mk() {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (msg: string) => void lines.push({ level, msg });
  const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
  const src = new AttachSource({ url: URL0, pollIntervalMs: 1000, timeoutMs: 2000, maxBodyBytes: 1 << 22, logger });
  return { src, m: src.model, warns: () => lines.filter((l) => l.level === 'warn').map((l) => l.msg) };
}

const W2 = [idle(0, 0), idle(1, 1)];

describe('a daemon restart', () => {
  afterEach(() => jest.restoreAllMocks());

  test('each restart is logged, also the same text again within the minute (an event, not a repeated problem)', () => {
    jest.spyOn(Date, 'now').mockReturnValue(1_700_000_000_000);
    const { src, m, warns } = mk();
    const restarts = () => warns().filter((w) => w.startsWith('daemon restarted'));
    src.applyBody(snapshot({ uptime: 1000, workers: W2 }), T0);
    // 10 s later a new process up 3 s (3 <= 10.1 + 5): a restart.
    src.applyBody(snapshot({ uptime: 3, workers: W2 }), T0 + 10 * S);
    // It runs on to uptime 1000 (997 s later by our clock), then restarts again: the same words.
    src.applyBody(snapshot({ uptime: 1000, workers: W2 }), T0 + 1007 * S);
    src.applyBody(snapshot({ uptime: 3, workers: W2 }), T0 + 1017 * S);
    expect(m.errors.get('restart')).toBe(2);
    const line = 'daemon restarted (uptime 1000s -> 3s); keeping totals, resetting baselines';
    expect(restarts()).toEqual([line, line]);
  });

  test('a stint of the old process ends at its last look, also when the new process’s worker is busy from before that look', () => {
    const { src, m } = mk();
    // First look: worker 0 busy for 10 s (since T0 - 10 s).
    src.applyBody(snapshot({ uptime: 100, workers: [proving(0, 0, 'J', 0, 10)], pipelines: [pipeline('J', 'porep-c2', [['gpu', 10, 0]])] }), T0);
    // Last look of the old process: still busy on the same partition.
    src.applyBody(snapshot({ uptime: 101, workers: [proving(0, 0, 'J', 0, 11)], pipelines: [pipeline('J', 'porep-c2', [['gpu', 10, 1000]])] }), T0 + S);
    expect(m.wBusyNs[0]).toBe(0);
    // 2 s later a new process up 6 s (6 <= 2.02 + 5: it can have started after our last
    // look, within the restart slack), its worker 0 busy on K for 6 s: since T0 - 3 s.
    src.applyBody(snapshot({ uptime: 6, workers: [proving(0, 0, 'K', 0, 6)], pipelines: [pipeline('K', 'porep-c2', [['gpu', 10, 0]], 6)] }), T0 + 3 * S);
    expect([m.errors.get('restart'), m.errors.get('implausible'), m.errors.get('bad_field')]).toEqual([1, 0, 0]);
    // The old stint: from T0 - 10 s to the last look that saw it (T0 + 1 s) = 11 s; the
    // new process's stint is another one, running.
    expect(m.wBusyNs[0]).toBe(11 * S);
    expect(m.wBusy[0]).toBe(1);
  });

  test('a job id the new process lists again (Curio re-uses ids) is a new job with its id', () => {
    const { src, m } = mk();
    src.applyBody(snapshot({ uptime: 100, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['pending', null, null]])] }), T0);
    const [h1] = [...m.jobs.keys()];
    expect(src.jobId(h1)).toBe('J');
    // (registered 2 s ago: a new process up 4 s cannot list a job older than itself)
    src.applyBody(snapshot({ uptime: 4, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['pending', null, null]], 2)] }), T0 + 10 * S);
    expect([m.errors.get('restart'), m.errors.get('implausible')]).toEqual([1, 0]);
    const hs = [...m.jobs.keys()];
    expect(hs).toHaveLength(1);
    expect(hs[0]).not.toBe(h1);
    expect(src.jobId(hs[0])).toBe('J');
    expect(src.jobId(h1)).toBeUndefined();
  });

  test('a job inferred failed in the old process and failing again under its id in the new one is counted again', () => {
    const { src, m } = mk();
    const failing = () => pipeline('J', 'snap-update', [['failed', 100, null], ['pending', null, null]], 2);
    src.applyBody(snapshot({ uptime: 100, workers: W2 }), T0);
    src.applyBody(snapshot({ uptime: 101, workers: W2, pipelines: [failing()] }), T0 + S);
    expect(m.kProofsFailed[SNAP]).toBe(1);
    // Still listed (cuzk never clears it): not counted again.
    src.applyBody(snapshot({ uptime: 102, workers: W2, pipelines: [failing()] }), T0 + 2 * S);
    expect(m.kProofsFailed[SNAP]).toBe(1);
    // A new process (uptime 5, 10 s later): its J is another job, and it failed.
    src.applyBody(snapshot({ uptime: 5, workers: W2, pipelines: [failing()] }), T0 + 12 * S);
    expect([m.errors.get('restart'), m.errors.get('implausible')]).toEqual([1, 0]);
    expect(src.kInferredFailed[SNAP]).toBe(2);
    expect(m.kProofsFailed[SNAP]).toBe(2);
  });

  test('ending the old process’s jobs is state only: a restart into an idle process adds no ingested events', () => {
    const { src, m } = mk();
    // Memory, synthesis and queue at 0 in both snapshots: the new process shows nothing new.
    src.applyBody(snapshot({ uptime: 100, workers: W2, memoryUsed: 0, pipelines: [pipeline('J', 'porep-c2', [['pending', null, null]])] }), T0);
    expect(m.jobs.size).toBe(1);
    const before = m.eventsTotal;
    src.applyBody(snapshot({ uptime: 4, workers: W2, memoryUsed: 0 }), T0 + 10 * S);
    expect(m.errors.get('restart')).toBe(1);
    expect(m.jobs.size).toBe(0);
    expect(m.eventsTotal).toBe(before);
    // Control: the same job leaving a running daemon is ingested (so the count above can move).
    const b = mk();
    b.src.applyBody(snapshot({ uptime: 100, workers: W2, memoryUsed: 0, pipelines: [pipeline('J', 'porep-c2', [['pending', null, null]])] }), T0);
    const before2 = b.m.eventsTotal;
    b.src.applyBody(snapshot({ uptime: 110, workers: W2, memoryUsed: 0 }), T0 + 10 * S);
    expect(b.m.errors.get('restart')).toBe(0);
    expect(b.m.eventsTotal).toBeGreaterThan(before2);
  });
});
