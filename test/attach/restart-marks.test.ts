/**
 * Issue 23: a daemon restart resets every cumulative counter's high-water mark, failed and
 * cancelled included. The restart tests re-used only kinds whose failed/cancelled counts
 * were zero before the restart, so a mark left un-reset (the new process's small counts
 * then read as "went down": nothing counted, an implausible error) survived the suite.
 * Here each kind has non-zero completed, failed and cancelled counts before the restart and
 * is re-used after it; the expected totals are the sums of the script's own increments.
 */
import { AttachSource } from '../../src/engine/sources/attach/attach-source';
import { GrpcSurface } from '../../src/engine/sources/attach/grpc-surface';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { kindIndex } from '../../src/engine/model/kinds';
import { silentLogger } from '../../src/util/logger';
import { idle, snapshot } from './snapshots';

const PC2 = kindIndex('porep-c2');
const SNAP = kindIndex('snap-update');
const S = 1e9;

test('/status: completed, failed and cancelled_by_kind counted across a restart that re-uses every kind', () => {
  const src = new AttachSource({ url: 'http://127.0.0.1:9/status', pollIntervalMs: 1000, timeoutMs: 1000, maxBodyBytes: 1 << 20, logger: silentLogger });
  const T0 = 1000 * S;
  const body = (uptime: number, c: Record<string, number>, f: Record<string, number>, x: Record<string, number>) => {
    const b = snapshot({ uptime, workers: [idle(0, 0)], completed: c, failed: f });
    (b.counters as Record<string, unknown>).cancelled_by_kind = x;
    return b;
  };
  // Baseline: what finished before we attached is not ours.
  src.applyBody(body(500, { 'porep-c2': 10, 'snap-update': 4 }, { 'porep-c2': 3, 'snap-update': 1 }, { 'porep-c2': 2, 'snap-update': 5 }), T0);
  // +1 completed, +1 failed, +1 cancelled for porep-c2; +2 cancelled for snap-update.
  src.applyBody(body(501, { 'porep-c2': 11, 'snap-update': 4 }, { 'porep-c2': 4, 'snap-update': 1 }, { 'porep-c2': 3, 'snap-update': 7 }), T0 + 1 * S);
  // The daemon restarts (uptime 3 s, 10 s later): its counters start again from zero.
  src.applyBody(body(3, { 'porep-c2': 1, 'snap-update': 0 }, { 'porep-c2': 1, 'snap-update': 1 }, { 'porep-c2': 1, 'snap-update': 2 }), T0 + 11 * S);
  src.applyBody(body(4, { 'porep-c2': 2, 'snap-update': 1 }, { 'porep-c2': 2, 'snap-update': 1 }, { 'porep-c2': 2, 'snap-update': 3 }), T0 + 12 * S);
  const m = src.model;
  expect(m.errors.get('restart')).toBe(1);
  expect(m.errors.get('implausible')).toBe(0);
  expect(m.kProofsCompleted[PC2]).toBe(1 + 1 + 1);
  expect(m.kProofsCompleted[SNAP]).toBe(0 + 0 + 1);
  expect(m.kProofsFailed[PC2]).toBe(1 + 1 + 1);
  expect(m.kProofsFailed[SNAP]).toBe(0 + 1 + 0);
  expect(m.kProofsCancelled[PC2]).toBe(1 + 1 + 1);
  expect(m.kProofsCancelled[SNAP]).toBe(2 + 2 + 1);
});

test('gRPC GetMetrics: a kind with failed proofs before the restart counts its failures after it', () => {
  const errs = new ErrorCounts();
  const g = new GrpcSurface({ address: '127.0.0.1:1', pollIntervalMs: 5000, statusIntervalMs: 5000, timeoutMs: 1000, maxMessageBytes: 1 << 20, logger: silentLogger, errors: errs });
  const text = (uptime: number, completed: Record<string, number>, failed: Record<string, number>) => {
    const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
    return { uptimeSeconds: uptime, totalCompleted: sum(completed), totalFailed: sum(failed), queueDepth: 0, runningJobs: 0, gpuWorkers: 2, completed: new Map(Object.entries(completed)), failed: new Map(Object.entries(failed)), bad: 0 };
  };
  try {
    g.applyMetrics(text(500, { porep_c2: 20, snap_update: 6 }, { porep_c2: 5, snap_update: 2 }));
    g.applyMetrics(text(501, { porep_c2: 21, snap_update: 6 }, { porep_c2: 6, snap_update: 2 }));
    // A restart: uptime back to 1 s (it can have started since the last answer).
    g.applyMetrics(text(1, { porep_c2: 1, snap_update: 0 }, { porep_c2: 1, snap_update: 1 }));
    g.applyMetrics(text(2, { porep_c2: 1, snap_update: 1 }, { porep_c2: 3, snap_update: 1 }));
    expect(errs.get('grpc_restart')).toBe(1);
    expect(errs.get('implausible')).toBe(0);
    expect(g.kProofsCompleted[PC2]).toBe(1 + 1 + 0);
    expect(g.kProofsCompleted[SNAP]).toBe(0 + 0 + 1);
    expect(g.kProofsFailed[PC2]).toBe(1 + 1 + 2);
    expect(g.kProofsFailed[SNAP]).toBe(0 + 1 + 0);
  } finally {
    void g.stop();
  }
});
