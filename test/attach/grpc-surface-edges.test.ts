/**
 * grpc-surface.ts at its edges (issue 23), from its header's rules and DESIGN §7b: the
 * address check; GetMetrics' per-kind counters by difference from a baseline (the first
 * answer), a restart resetting only the baselines, per-kind marks that never go down, the
 * plausibility refusals (sum past the totals, more proofs than a prover can finish, another
 * daemon's uptime); GetStatus' one entry per worker (stints by sample, first GPU name kept,
 * queues by kind); and, against a real grpc-js stand-in on loopback, each failure counted by
 * reason and logged once per state change, claims and samples only while GetStatus answers.
 * Parsed answers go in through applyMetrics / applyStatus; expected numbers are the script's.
 */
import * as net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { OTHER_KIND_INDEX, kindIndex } from '../../src/engine/model/kinds';
import { GRPC_ERRORS, GrpcSurface, grpcTarget, reconnectBackoffMs } from '../../src/engine/sources/attach/grpc-surface';
import { provingEngineService } from '../../src/engine/sources/attach/grpc-wire';
import type { CuzkMetricsText, StatusMsg } from '../../src/engine/sources/attach/grpc-wire';
import { hrNowNs } from '../../src/engine/sources/attach/surface';
import { createLogger, silentLogger } from '../../src/util/logger';
import { FakeCuzkGrpc, cuzkMetricsText } from './grpc-server';

const PC2 = kindIndex('porep-c2');
const SNAP = kindIndex('snap-update');
const WPOST = kindIndex('window-post');
const OTHER = OTHER_KIND_INDEX;
const S = 1e9;

const open: GrpcSurface[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.stop();
});

function surface(address = '127.0.0.1:1', o: { timeoutMs?: number; lines?: string[] } = {}): { g: GrpcSurface; errs: ErrorCounts } {
  const errs = new ErrorCounts();
  const logger = o.lines ? createLogger('info', 'json', (l) => o.lines!.push(l)) : silentLogger;
  const g = new GrpcSurface({ address, pollIntervalMs: 60_000, statusIntervalMs: 60_000, timeoutMs: o.timeoutMs ?? 5000, maxMessageBytes: 64 * 1024, logger, errors: errs });
  open.push(g);
  return { g, errs };
}

const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
function metrics(uptime: number, completed: Record<string, number>, failed: Record<string, number> = {}, o: Partial<CuzkMetricsText> = {}): CuzkMetricsText {
  return { uptimeSeconds: uptime, totalCompleted: sum(completed), totalFailed: sum(failed), queueDepth: 0, runningJobs: 0, gpuWorkers: 2, completed: new Map(Object.entries(completed)), failed: new Map(Object.entries(failed)), bad: 0, ...o };
}
const counts = (a: Float64Array) => Array.from(a);

describe('grpcTarget', () => {
  test('unix sockets, host:port, IPv6, 0.0.0.0 and :: dialled locally', () => {
    expect(grpcTarget('unix:/run/cuzk.sock')).toBe('unix:///run/cuzk.sock');
    expect(grpcTarget('  unix:///run/cuzk.sock \n')).toBe('unix:///run/cuzk.sock');
    expect(grpcTarget('[::]:9820')).toBe('[::1]:9820');
    expect(grpcTarget('[fe80::1]:9820')).toBe('[fe80::1]:9820');
    expect(grpcTarget('prover-1.lan:1')).toBe('prover-1.lan:1');
    expect(grpcTarget('127.0.0.1:65535')).toBe('127.0.0.1:65535');
    expect(grpcTarget('0.0.0.0:9820')).toBe('127.0.0.1:9820'); // cuzk's example configs listen there
  });
  test('refused, each with a reason naming the value', () => {
    expect(() => grpcTarget('unix:run/cuzk.sock')).toThrow('--cuzk.grpc-address "unix:run/cuzk.sock": a unix socket needs an absolute path');
    expect(() => grpcTarget('HTTPS://prover:9820')).toThrow('(no HTTPS://;');
    expect(() => grpcTarget('dns://8.8.8.8/prover:9820')).toThrow('no dns://');
    expect(() => grpcTarget('127.0.0.1:0')).toThrow('port 0 is out of range');
    expect(() => grpcTarget('127.0.0.1:65536')).toThrow('port 65536 is out of range');
    for (const bad of ['9http://x:1', '127.0.0.1:123456', 'prover_1:9820', ':9820', 'prover:', 'x127.0.0.1:9820 y', '[::1]9820', 'prover:9820/x'])
      expect(() => grpcTarget(bad)).toThrow(`--cuzk.grpc-address "${bad}" is not unix:///path/to.sock or host:port`);
  });
});

describe('GetMetrics applied', () => {
  test('baselined at the first answer; then deltas per kind slot; PoSt and unknown kinds (other, counted once) included', () => {
    const { g, errs } = surface();
    g.applyMetrics(metrics(100, { porep_c2: 5, window_post: 40 }, { winning_post: 2 }));
    expect(counts(g.kProofsCompleted)).toEqual([0, 0, 0, 0, 0]);
    expect(g.daemonCounts).toEqual({ totalCompleted: 45, totalFailed: 2, completed: new Map([[PC2, 5], [WPOST, 40]]), failed: new Map([[kindIndex('winning-post'), 2]]) });
    g.applyMetrics(metrics(101, { porep_c2: 6, window_post: 43, snap_update: 2, quantum_a: 1, quantum_b: 2 }, { winning_post: 2, porep_c2: 1 }));
    expect(counts(g.kProofsCompleted)).toEqual([1, 2, 3, 0, 3]);
    expect(counts(g.kProofsFailed)).toEqual([1, 0, 0, 0, 0]);
    expect(g.daemonCounts!.completed.get(OTHER)).toBe(3);
    expect(errs.get('unknown_proof_kind')).toBe(2);
    g.applyMetrics(metrics(102, { porep_c2: 6, window_post: 43, snap_update: 2, quantum_a: 4, quantum_b: 2 }, { winning_post: 2, porep_c2: 1 }));
    expect(counts(g.kProofsCompleted)).toEqual([1, 2, 3, 0, 6]);
    expect(errs.get('unknown_proof_kind')).toBe(2);
    expect(errs.get('implausible')).toBe(0);
  });

  test('gauges: queue depth and GPU workers as last answered; unknown leaves them', () => {
    const { g } = surface();
    expect([g.queueDepthTotal, g.gpuWorkers]).toEqual([0, -1]);
    g.applyMetrics(metrics(100, {}, {}, { queueDepth: 7, gpuWorkers: 8 }));
    expect([g.queueDepthTotal, g.gpuWorkers]).toEqual([7, 8]);
    g.applyMetrics(metrics(101, {}, {}, { queueDepth: null, gpuWorkers: null }));
    expect([g.queueDepthTotal, g.gpuWorkers]).toEqual([7, 8]);
    g.applyMetrics(metrics(102, {}, {}, { queueDepth: 0, gpuWorkers: 0 }));
    expect([g.queueDepthTotal, g.gpuWorkers]).toEqual([0, 0]);
  });

  test('a per-kind counter that goes down without a restart: counted implausible, its mark stays', () => {
    const { g, errs } = surface();
    g.applyMetrics(metrics(100, { porep_c2: 5 }, {}, { totalCompleted: 5 }));
    g.applyMetrics(metrics(101, { porep_c2: 3 }, {}, { totalCompleted: 5 }));
    expect(errs.get('implausible')).toBe(1);
    g.applyMetrics(metrics(102, { porep_c2: 5 }, {}, { totalCompleted: 5 }));
    g.applyMetrics(metrics(103, { porep_c2: 7 }, {}, { totalCompleted: 7 }));
    expect(g.kProofsCompleted[PC2]).toBe(2);
    expect(errs.get('implausible')).toBe(1);
  });

  test('a restart (uptime back): counted, baselines reset, what the new process finished is ours, totals kept', () => {
    const { g, errs } = surface();
    g.applyMetrics(metrics(500, { porep_c2: 20 }, { snap_update: 2 }));
    g.applyMetrics(metrics(501, { porep_c2: 21 }, { snap_update: 2 }));
    g.applyMetrics(metrics(2, { porep_c2: 1, window_post: 4 }, { snap_update: 1 }));
    expect(errs.get('grpc_restart')).toBe(1);
    expect(counts(g.kProofsCompleted)).toEqual([2, 0, 4, 0, 0]);
    expect(counts(g.kProofsFailed)).toEqual([0, 1, 0, 0, 0]);
    // totals going back with the uptime still rising: a restart too (a new process, counters from 0)
    const b = surface();
    b.g.applyMetrics(metrics(3, { porep_c2: 9 }));
    b.g.applyMetrics(metrics(4, { porep_c2: 1 }));
    expect(b.errs.get('grpc_restart')).toBe(1);
    expect(b.g.kProofsCompleted[PC2]).toBe(1);
  });

  test("a restart's first counters are bounded like any growth, over the new uptime: past (uptime + 10 s) x 100 x workers they are the baseline, not counted", () => {
    // docs/hostile-inputs.md: totals grow <= (elapsed + 10 s) x 100 x workers per answer. A
    // new process has finished what it reports since it started, so its elapsed time is
    // its uptime: 2 s with 2 workers bounds it at (2 + 10) x 100 x 2 = 2400 proofs.
    const { g, errs } = surface();
    g.applyMetrics(metrics(500, { porep_c2: 20 }));
    g.applyMetrics(metrics(2, { porep_c2: 2000 }, { snap_update: 401 })); // 2401: a faked restart
    expect(errs.get('grpc_restart')).toBe(1);
    expect(errs.get('implausible')).toBe(1);
    expect(errs.lastMessage).toBe('GetMetrics 127.0.0.1:1: a restarted cuzk claims 2401 proofs finished in its first 2s: taken as its baseline, not counted');
    expect(counts(g.kProofsCompleted)).toEqual([0, 0, 0, 0, 0]);
    expect(counts(g.kProofsFailed)).toEqual([0, 0, 0, 0, 0]);
    // From that baseline on, growth counts as usual.
    g.applyMetrics(metrics(3, { porep_c2: 2003 }, { snap_update: 402 }));
    expect(g.kProofsCompleted[PC2]).toBe(3);
    expect(counts(g.kProofsFailed)).toEqual([0, 1, 0, 0, 0]);
    // At the bound exactly: a real new process's count, counted in full.
    const b = surface();
    b.g.applyMetrics(metrics(500, { porep_c2: 20 }));
    b.g.applyMetrics(metrics(2, { porep_c2: 2000 }, { snap_update: 400 }));
    expect(b.errs.get('grpc_restart')).toBe(1);
    expect(b.errs.get('implausible')).toBe(0);
    expect(b.g.kProofsCompleted[PC2]).toBe(2000);
    expect(counts(b.g.kProofsFailed)).toEqual([0, 400, 0, 0, 0]);
  });

  test('refused, nothing applied: per-kind sums past the totals (+8 slack), more proofs than a prover finishes, another uptime', () => {
    const { g, errs } = surface();
    g.applyMetrics(metrics(100, { porep_c2: 10 }, { porep_c2: 1 }, { gpuWorkers: 1 }));
    g.applyMetrics(metrics(101, { porep_c2: 20 }, { porep_c2: 1 }, { totalCompleted: 11 })); // 20 > 11 + 8
    g.applyMetrics(metrics(101, { porep_c2: 11 }, { porep_c2: 11 }, { totalFailed: 2 })); // failed 11 > 2 + 8
    expect(errs.get('implausible')).toBe(2);
    expect(g.kProofsCompleted[PC2]).toBe(0);
    g.applyMetrics(metrics(101, { porep_c2: 19 }, { porep_c2: 1 }, { totalCompleted: 11, queueDepth: 3 })); // 19 = 11 + 8: used
    expect(g.kProofsCompleted[PC2]).toBe(9);
    expect(g.queueDepthTotal).toBe(3);
    // 2 workers (the last answer's), a few ms: at most (0 + 10) s x 100 x 2 = 2000 proofs
    g.applyMetrics(metrics(101, { porep_c2: 19 + 2500 }, { porep_c2: 1 }, { queueDepth: 4 }));
    expect(errs.get('implausible')).toBe(3);
    expect(g.kProofsCompleted[PC2]).toBe(9);
    expect(g.queueDepthTotal).toBe(3);
    g.applyMetrics(metrics(101, { porep_c2: 19 + 900 }, { porep_c2: 1 }));
    expect(g.kProofsCompleted[PC2]).toBe(909);
    // the uptime far ahead of the wall clock: another daemon
    g.applyMetrics(metrics(5000, { porep_c2: 2000 }, { porep_c2: 1 }));
    expect(errs.get('grpc_conflict')).toBe(1);
    expect(g.kProofsCompleted[PC2]).toBe(909);
    expect(errs.get('grpc_restart')).toBe(0);
  });

  test('the plausible rate scales with the GPU workers the daemon reports', () => {
    const { g, errs } = surface();
    g.applyMetrics(metrics(100, { porep_c2: 0 }, {}, { gpuWorkers: 4 }));
    g.applyMetrics(metrics(100, { porep_c2: 3000 }, {}, { gpuWorkers: 4 })); // < 10 s x 100 x 4
    expect(errs.get('implausible')).toBe(0);
    expect(g.kProofsCompleted[PC2]).toBe(3000);
  });

  test('onProofDeltas: the proofs that ended per kind (completed + failed) with the ask time, only when some did', () => {
    const { g } = surface();
    const got: [number[], number][] = [];
    g.onProofDeltas = (d, askHr, answerHr) => {
      expect(answerHr).toBeGreaterThanOrEqual(askHr);
      got.push([Array.from(d), askHr]);
    };
    g.applyMetrics(metrics(100, { porep_c2: 5 }), 1);
    g.applyMetrics(metrics(101, { porep_c2: 5 }), 2);
    g.applyMetrics(metrics(102, { porep_c2: 6, window_post: 2 }, { porep_c2: 1 }), 3);
    expect(got).toEqual([[[2, 0, 2, 0, 0], 3]]);
  });

  test('at most 64 kinds are followed per counter', () => {
    const { g } = surface();
    const many = (n: number, v: number) => Object.fromEntries(Array.from({ length: n }, (_, k) => [`kind_${k}`, v]));
    g.applyMetrics(metrics(100, many(70, 1), {}, { totalCompleted: 1000 }));
    g.applyMetrics(metrics(101, many(70, 2), {}, { totalCompleted: 1000 }));
    expect(g.kProofsCompleted[OTHER]).toBe(64);
  });
});

describe('GetStatus applied', () => {
  const gpu = (ordinal: number, job = '', kind = '', name = `GPU ${ordinal}`) => ({ ordinal, name, current_job_id: job, current_proof_kind: kind });
  const status = (uptime: number, gpus: StatusMsg['gpus'], queues: StatusMsg['queues'] = []): StatusMsg => ({ gpus, queues, uptimeSeconds: uptime, totalCompleted: 0, totalFailed: 0 });

  test('one entry per worker; stints by sample: credited up to the last sample that saw them', () => {
    const { g } = surface();
    g.applyStatus(status(100, [gpu(0), gpu(0, 'j1', 'porep-c2'), gpu(1)]), 10 * S, 9 * S);
    expect(g.workerGpu).toEqual([0, 0, 1]);
    expect([...g.wBusy]).toEqual([0, 1, 0]);
    expect(g.busyWorkers).toBe(1);
    expect(g.wKind[1]).toBe(PC2);
    expect([g.nowNs(), g.lastStatusAskHr]).toEqual([10 * S, 9 * S]);
    g.applyStatus(status(105, [gpu(0), gpu(0, 'j1', 'porep-c2'), gpu(1)]), 15 * S); // the same job: the stint goes on
    g.applyStatus(status(110, [gpu(0), gpu(0, 'j2', 'snap-update'), gpu(1, 'j3', '')]), 20 * S); // next job; a job without a kind
    expect(g.wBusyNs[1]).toBe(5 * S);
    expect(g.wParts[1]).toBe(1);
    expect(g.wJob).toEqual(['', 'j2', 'j3']);
    expect([g.wKind[1], g.wKind[2]]).toEqual([SNAP, OTHER]);
    expect(g.busyWorkers).toBe(2);
    g.applyStatus(status(115, [gpu(0), gpu(0), gpu(1)]), 25 * S);
    expect(g.wBusyNs[1]).toBe(5 * S); // j2 was seen once: no time between its samples
    expect(g.wParts[1]).toBe(2);
    expect(g.busyWorkers).toBe(0);
    expect(g.wJob).toEqual(['', '', '']);
    expect(g.kindOf('j1')).toBe(PC2);
    expect(g.kindOf('j2')).toBe(SNAP);
    expect(g.kindOf('j3')).toBe(-1);
  });

  test('fewer workers (a restart): the stints of those gone end where last seen', () => {
    const { g } = surface();
    g.applyStatus(status(100, [gpu(0), gpu(1, 'a', 'porep-c2'), gpu(1, 'b', 'porep-c2')]), 10 * S);
    g.applyStatus(status(101, [gpu(0), gpu(1, 'a', 'porep-c2'), gpu(1, 'b', 'porep-c2')]), 11 * S);
    g.applyStatus(status(102, [gpu(0), gpu(1, 'a', 'porep-c2')]), 12 * S);
    expect(g.wBusy).toHaveLength(2);
    expect(g.busyWorkers).toBe(1);
    expect(g.wJob).toEqual(['', 'a']);
    g.applyStatus(status(103, [gpu(0), gpu(1, 'a', 'porep-c2'), gpu(1), gpu(1)]), 13 * S);
    expect([...g.wBusy]).toEqual([0, 1, 0, 0]);
    expect([...g.wBusyNs]).toEqual([0, 0, 0, 0]); // a new worker 2 starts from nothing
    expect(g.wJob).toEqual(['', 'a', '', '']);
    expect(g.busyWorkers).toBe(1);
  });

  test("GPU names: the first one seen stays (renames counted); a GPU gone is forgotten", () => {
    const { g, errs } = surface();
    g.applyStatus(status(100, [gpu(0, '', '', 'RTX A'), gpu(1, '', '', 'RTX B')]), 10 * S);
    g.applyStatus(status(101, [gpu(0, '', '', 'evil 1'), gpu(1, '', '', 'RTX B')]), 11 * S);
    expect(errs.get('implausible')).toBe(1);
    expect([...g.gpuNames]).toEqual([[0, 'RTX A'], [1, 'RTX B']]);
    g.applyStatus(status(102, [gpu(0, '', '', 'RTX A')]), 12 * S);
    expect([...g.gpuNames]).toEqual([[0, 'RTX A']]);
    g.applyStatus(status(103, [gpu(0, '', '', 'RTX A'), gpu(1, '', '', 'RTX C')]), 13 * S);
    expect(g.gpuNames.get(1)).toBe('RTX C');
    expect(errs.get('implausible')).toBe(1);
  });

  test('queues by kind slot, unknown kinds as other; replaced by each answer', () => {
    const { g, errs } = surface();
    expect(g.queuesKnown).toBe(false);
    g.applyStatus(status(100, [gpu(0)], [{ proof_kind: 'porep-c2', pending: 3, in_progress: 1 }, { proof_kind: 'mystery', pending: 2, in_progress: 0 }, { proof_kind: '', pending: 1, in_progress: 0 }, { proof_kind: 'other-mystery', pending: 4, in_progress: 0 }]), 10 * S);
    expect(counts(g.queueDepth)).toEqual([3, 0, 0, 0, 7]);
    expect(g.queuesKnown).toBe(true);
    expect(errs.get('unknown_proof_kind')).toBe(2);
    g.applyStatus(status(101, [gpu(0)], [{ proof_kind: 'window-post', pending: 1, in_progress: 0 }]), 11 * S);
    expect(counts(g.queueDepth)).toEqual([0, 0, 1, 0, 0]);
  });

  test("another daemon's uptime: refused, nothing applied", () => {
    const { g, errs } = surface();
    g.applyStatus(status(100, [gpu(0, 'j', 'porep-c2')]), 10 * S);
    g.applyStatus(status(90_000, [gpu(0), gpu(1)]), 11 * S);
    expect(errs.get('grpc_conflict')).toBe(1);
    expect([...g.wBusy]).toEqual([1]);
    expect(g.nowNs()).toBe(10 * S);
  });

  test('job handles: stable small numbers', () => {
    const { g } = surface();
    const a = g.handle('a');
    const b = g.handle('b');
    expect(a).toBeGreaterThan(0);
    expect(b).not.toBe(a);
    expect(g.handle('a')).toBe(a);
  });
});

describe('polled against a grpc-js stand-in', () => {
  const fakes: FakeCuzkGrpc[] = [];
  afterEach(async () => {
    for (const f of fakes.splice(0)) await f.stop();
  });
  const fake = async () => {
    const f = await FakeCuzkGrpc.start('127.0.0.1:0');
    fakes.push(f);
    return f;
  };
  const warns = (lines: string[]) => lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((r) => r.level === 'warn').map((r) => r.msg);

  test('claims and samples while GetStatus answers; up needs both calls once GetStatus has been asked', async () => {
    const f = await fake();
    f.workers = [{ ordinal: 0 }, { ordinal: 0, job: 'wpost-1', kind: 'window-post' }];
    const { g } = surface(f.address);
    expect(g.claim(0)).toBeNull();
    expect(g.up).toBe(false);
    await g.pollMetrics();
    expect(g.up).toBe(true); // GetStatus never asked yet
    const before = hrNowNs();
    await g.pollStatus();
    const after = hrNowNs();
    expect(g.up).toBe(true);
    const idle = g.claim(0)!;
    expect(idle).toEqual({ busy: false, sinceHr: g.lastStatusAskHr, untilHr: g.nowNs(), sample: true, kind: -1 });
    expect(before).toBeLessThanOrEqual(idle.sinceHr);
    expect(idle.sinceHr).toBeLessThan(idle.untilHr);
    expect(idle.untilHr).toBeLessThanOrEqual(after);
    expect(g.claim(1)).toMatchObject({ busy: true, sample: true, kind: WPOST });
    expect(g.claim(2)).toBeNull();
    expect(g.sampleUntil(1, after)).toEqual({ startHr: idle.sinceHr, endHr: idle.untilHr, busy: true, kind: WPOST });
    expect(g.sampleUntil(1, before)).toBeNull();
    f.status = 'error';
    await g.pollStatus();
    expect(g.up).toBe(false);
    expect(g.claim(0)).toBeNull();
    expect(g.sampleUntil(1, after)).toBeNull();
    expect(g.gpuNames.get(0)).toBe('NVIDIA RTX 6000 Ada (0)');
  });

  test('each failure counted by reason; one warning per state change, the channel fault shared by both calls', async () => {
    const f = await fake();
    const lines: string[] = [];
    const { g, errs } = surface(f.address, { lines, timeoutMs: 2000 });
    f.metrics = 'error';
    await g.pollMetrics();
    await g.pollMetrics();
    expect(errs.get('grpc_error')).toBe(2);
    expect(warns(lines)).toEqual([`GetMetrics ${f.address}: INTERNAL: engine exploded`]);
    f.metrics = 'garbage';
    await g.pollMetrics();
    expect(errs.get('grpc_bad_response')).toBe(1);
    expect(warns(lines)[1]).toMatch(new RegExp(`^GetMetrics ${f.address}: answer is not a cuzk.v1 message \\(Response message parsing error: `));
    f.metrics = 'ok';
    f.metricsText = 'x'.repeat(100 * 1024);
    await g.pollMetrics();
    expect(errs.get('grpc_too_large')).toBe(1);
    expect(warns(lines)[2]).toMatch(new RegExp(`^GetMetrics ${f.address}: answer larger than 65536 bytes \\(`));
    f.metricsText = 'cuzk_queue_depth 3\n';
    await g.pollMetrics();
    expect(errs.get('grpc_bad_response')).toBe(2);
    expect(warns(lines)[3]).toBe(`GetMetrics ${f.address}: no cuzk_uptime_seconds in the answer (not cuzk's metrics text)`);
    f.metricsText = `${cuzkMetricsText({ uptime: 10, completed: {} })}cuzk_queue_depth x\ncuzk_gpu_workers -1\n`;
    await g.pollMetrics();
    expect(g.up).toBe(true);
    expect(errs.get('grpc_bad_response')).toBe(3);
    expect(warns(lines)[4]).toBe(`GetMetrics ${f.address}: 2 unusable samples skipped`);
    f.metrics = 'error';
    await g.pollMetrics();
    expect(errs.get('grpc_error')).toBe(3);
    expect(warns(lines)).toHaveLength(6); // a good answer cleared the fault: logged again
    await f.stop();
    // The first calls may see the server's goodbye ("Stream refused"), then ECONNREFUSED:
    // one line per distinct text, none repeated, whichever call met it.
    for (let i = 0; i < 3; i++) {
      await g.pollMetrics();
      await g.pollStatus();
    }
    expect(errs.get('grpc_unavailable')).toBe(6);
    const unavailable = warns(lines).slice(6);
    expect(unavailable.length).toBeGreaterThanOrEqual(1);
    expect(unavailable.length).toBeLessThanOrEqual(2);
    for (let i = 1; i < unavailable.length; i++) expect(unavailable[i]).not.toBe(unavailable[i - 1]);
    expect(unavailable[unavailable.length - 1]).toMatch(new RegExp(`^gRPC ${f.address}: unavailable \\(.*ECONNREFUSED.*\\); is cuzk running and is this its \\[daemon\\] listen address\\?$`));
    expect(g.up).toBe(false);
  });

  test('a hung daemon: the deadline, counted; stop() ends the hung calls at once, not counted', async () => {
    const f = await fake();
    f.metrics = 'hang';
    const lines: string[] = [];
    const { g, errs } = surface(f.address, { lines, timeoutMs: 300 });
    await g.pollMetrics();
    expect(errs.get('grpc_deadline')).toBe(1);
    expect(warns(lines)).toEqual([`GetMetrics ${f.address}: no answer within 300 ms`]);
    const g2 = surface(f.address, { timeoutMs: 60_000 });
    const t0 = Date.now();
    const p = g2.g.pollMetrics();
    await new Promise<void>((r) => {
      const check = () => (f.calls.metrics >= 2 ? r() : setTimeout(check, 5));
      check();
    });
    await g2.g.stop();
    await p;
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect([...g2.errs.entries()].filter(([, n]) => n > 0)).toEqual([]);
  });

  test('start() polls both calls; stop() ends the loop', async () => {
    const f = await fake();
    const { g } = surface(f.address);
    g.start();
    await new Promise<void>((r) => {
      const check = () => (g.metricsPolls >= 1 && g.statusPolls >= 1 && g.up ? r() : setTimeout(check, 5));
      check();
    });
    await g.stop();
    const polls = [g.metricsPolls, g.statusPolls];
    expect(polls).toEqual([1, 1]);
    expect(g.target).toBe(f.address);
    expect(g.name).toBe('grpc');
  });
});

describe('issue 23: the surface as built, its polls and its loop', () => {
  const fakes: FakeCuzkGrpc[] = [];
  const servers: grpc.Server[] = [];
  afterEach(async () => {
    jest.useRealTimers();
    for (const f of fakes.splice(0)) await f.stop();
    for (const s of servers.splice(0)) s.forceShutdown();
  });
  const fake = async () => {
    const f = await FakeCuzkGrpc.start('127.0.0.1:0');
    fakes.push(f);
    return f;
  };
  /** A grpc-js server on loopback with only the handlers given (none: every call UNIMPLEMENTED). */
  const bare = async (handlers: grpc.UntypedServiceImplementation | null): Promise<string> => {
    const s = new grpc.Server();
    if (handlers) s.addService(provingEngineService(), handlers);
    servers.push(s);
    const port = await new Promise<number>((res, rej) => s.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))));
    return `127.0.0.1:${port}`;
  };
  const records = (lines: string[]) => lines.map((l) => JSON.parse(l) as { level: string; msg: string; [k: string]: unknown });
  const warns = (lines: string[]) => records(lines).filter((r) => r.level === 'warn').map((r) => r.msg);
  const infos = (lines: string[]) => records(lines).filter((r) => r.level === 'info').map((r) => r.msg);

  test('every reason is declared at 0 before the first error (DESIGN §5: the series exist from the start); no worker before GetStatus', () => {
    const { g, errs } = surface();
    expect(new Map(errs.entries())).toEqual(new Map([...GRPC_ERRORS, 'implausible', 'unknown_proof_kind'].map((r) => [r, 0])));
    expect(g.wJob).toEqual([]);
    expect(g.workerGpu).toEqual([]);
    g.applyStatus({ gpus: [], queues: [], uptimeSeconds: 10, totalCompleted: 0, totalFailed: 0 }, 10 * S);
    expect(g.wJob).toEqual([]); // a daemon with no GPU worker: one entry per worker, none
  });

  test("every log line says which surface and address it is about", async () => {
    const f = await fake();
    const lines: string[] = [];
    const { g } = surface(f.address, { lines });
    await g.pollMetrics();
    f.metrics = 'error';
    await g.pollMetrics();
    expect(records(lines).map((r) => [r.level, r.surface, r.source])).toEqual([
      ['info', 'grpc', f.address],
      ['warn', 'grpc', f.address],
    ]);
  });

  test('"up" is logged once per time the surface comes up; a failed or unusable GetMetrics sets it down', async () => {
    const f = await fake();
    const lines: string[] = [];
    const { g } = surface(f.address, { lines });
    await g.pollMetrics();
    await g.pollMetrics();
    expect(infos(lines)).toEqual([`gRPC surface is up: ${f.address}`]);
    expect(g.up).toBe(true);
    f.metrics = 'error';
    await g.pollMetrics();
    expect(g.up).toBe(false); // GetStatus never asked: GetMetrics alone decides
    f.metrics = 'ok';
    await g.pollMetrics();
    expect(g.up).toBe(true);
    f.metricsText = 'cuzk_queue_depth 3\n'; // no uptime: not cuzk's text
    await g.pollMetrics();
    expect(g.up).toBe(false);
    f.metricsText = cuzkMetricsText({ uptime: 20, completed: {} });
    await g.pollMetrics();
    expect(infos(lines)).toEqual([`gRPC surface is up: ${f.address}`, `gRPC surface is up: ${f.address}`, `gRPC surface is up: ${f.address}`]);
  });

  test('polled answers are applied: proofs by difference between two GetMetrics', async () => {
    const f = await fake();
    const { g } = surface(f.address);
    f.metricsText = cuzkMetricsText({ uptime: 100, completed: { porep_c2: 4 }, failed: { snap_update: 1 } });
    await g.pollMetrics();
    f.metricsText = cuzkMetricsText({ uptime: 101, completed: { porep_c2: 7 }, failed: { snap_update: 2 } });
    await g.pollMetrics();
    expect(counts(g.kProofsCompleted)).toEqual([3, 0, 0, 0, 0]);
    expect(counts(g.kProofsFailed)).toEqual([0, 1, 0, 0, 0]);
    expect(g.daemonCounts).toMatchObject({ totalCompleted: 7, totalFailed: 2 });
  });

  test('one unusable sample: "1 unusable sample skipped"', async () => {
    const f = await fake();
    const lines: string[] = [];
    const { g, errs } = surface(f.address, { lines });
    f.metricsText = `${cuzkMetricsText({ uptime: 10, completed: {} })}cuzk_queue_depth x\n`;
    await g.pollMetrics();
    expect(errs.get('grpc_bad_response')).toBe(1);
    expect(warns(lines)).toEqual([`GetMetrics ${f.address}: 1 unusable sample skipped`]);
  });

  test('each call logs its own fault once; a good answer of that call clears it, so the same fault is logged again', async () => {
    const f = await fake();
    const lines: string[] = [];
    const { g, errs } = surface(f.address, { lines });
    f.metrics = 'error';
    f.status = 'error';
    for (let i = 0; i < 2; i++) {
      await g.pollMetrics();
      await g.pollStatus();
    }
    expect(errs.get('grpc_error')).toBe(4);
    expect(warns(lines)).toEqual([`GetMetrics ${f.address}: INTERNAL: engine exploded`, `GetStatus ${f.address}: INTERNAL: engine exploded`]);
    f.status = 'ok';
    await g.pollStatus();
    f.status = 'error';
    await g.pollStatus();
    await g.pollStatus();
    expect(warns(lines)).toEqual([`GetMetrics ${f.address}: INTERNAL: engine exploded`, `GetStatus ${f.address}: INTERNAL: engine exploded`, `GetStatus ${f.address}: INTERNAL: engine exploded`]);
  });

  test("not cuzk's gRPC service there (UNIMPLEMENTED): counted grpc_error, said so", async () => {
    const address = await bare(null);
    const lines: string[] = [];
    const { g, errs } = surface(address, { lines });
    await g.pollMetrics();
    expect(errs.get('grpc_error')).toBe(1);
    expect(warns(lines)).toEqual([`GetMetrics ${address}: not implemented there (is it cuzk's gRPC address?)`]);
  });

  test('an INTERNAL error that is not about parsing is grpc_error; a status code grpc-js has no name for reads "error"; a 5 KB detail is not logged whole', async () => {
    let code: number = grpc.status.INTERNAL;
    let details = 'engine exploded while doing nothing'; // no parse/decode word: not a bad answer
    const fail = (_c: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code, details } as unknown as grpc.ServiceError, null);
    const address = await bare({ GetMetrics: fail, GetStatus: fail });
    const lines: string[] = [];
    const { g, errs } = surface(address, { lines });
    await g.pollMetrics();
    expect(errs.get('grpc_error')).toBe(1);
    code = 42;
    details = 'who knows';
    await g.pollMetrics();
    expect(errs.get('grpc_error')).toBe(2);
    code = grpc.status.UNKNOWN;
    details = 'y'.repeat(5000);
    await g.pollMetrics();
    expect(errs.get('grpc_error')).toBe(3);
    code = grpc.status.FAILED_PRECONDITION; // the daemon's own error, whatever its words: not our parse of its answer
    details = 'could not parse the sector file';
    await g.pollMetrics();
    expect(errs.get('grpc_error')).toBe(4);
    expect(errs.get('grpc_bad_response')).toBe(0);
    const w = warns(lines);
    expect(w.slice(0, 2)).toEqual([`GetMetrics ${address}: INTERNAL: engine exploded while doing nothing`, `GetMetrics ${address}: error: who knows`]);
    expect(w[2].startsWith(`GetMetrics ${address}: UNKNOWN: yyy`)).toBe(true);
    expect(w[2].length).toBeLessThan(1000);
  });

  test('a GetStatus answer that fails validation sets the surface down, counted and logged; an idle sample has no kind', async () => {
    const f = await fake();
    f.workers = [{ ordinal: 0 }, { ordinal: 0, job: 'j', kind: 'porep-c2' }];
    const lines: string[] = [];
    const { g, errs } = surface(f.address, { lines });
    await g.pollMetrics();
    await g.pollStatus();
    expect(g.up).toBe(true);
    const after = hrNowNs();
    expect(g.sampleUntil(0, after)).toMatchObject({ busy: false, kind: -1 });
    expect(g.sampleUntil(1, after)).toMatchObject({ busy: true, kind: PC2 });
    f.workers = [{ ordinal: 0, job: 'j'.repeat(5000), kind: 'window-post' }]; // a 5 KB job id
    await g.pollStatus();
    expect(g.up).toBe(false);
    expect(errs.get('grpc_bad_response')).toBe(1);
    expect(warns(lines)).toHaveLength(1);
    expect(warns(lines)[0].startsWith(`GetStatus ${f.address}: `)).toBe(true);
  });

  test('stop() closes the connection to the daemon', async () => {
    const f = await fake();
    const port = Number(f.address.split(':')[1]);
    let open = 0;
    const proxy = net.createServer((c) => {
      open++;
      const u = net.connect(port, '127.0.0.1');
      c.pipe(u).pipe(c);
      c.on('error', () => {});
      u.on('error', () => {});
      c.on('close', () => {
        open--;
        u.destroy();
      });
      u.on('close', () => c.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const { g } = surface(`127.0.0.1:${(proxy.address() as net.AddressInfo).port}`);
      await g.pollMetrics();
      expect(g.up).toBe(true);
      expect(open).toBe(1);
      await g.stop();
      const t0 = Date.now();
      await new Promise<void>((r) => {
        const check = () => (open === 0 || Date.now() - t0 > 20_000 ? r() : setTimeout(check, 10));
        check();
      });
      expect(open).toBe(0);
    } finally {
      proxy.close();
    }
  });
});

describe('issue 23: GetStatus bookkeeping', () => {
  const gpu = (ordinal: number, job = '', kind = '', name = `GPU ${ordinal}`) => ({ ordinal, name, current_job_id: job, current_proof_kind: kind });
  const status = (uptime: number, gpus: StatusMsg['gpus']): StatusMsg => ({ gpus, queues: [], uptimeSeconds: uptime, totalCompleted: 0, totalFailed: 0 });

  test('a restart seen by GetMetrics forgets the GPU names: the new process names them afresh, no rename counted', () => {
    const { g, errs } = surface();
    g.applyStatus(status(100, [gpu(0, '', '', 'RTX A')]), 10 * S);
    g.applyMetrics(metrics(500, { porep_c2: 3 }));
    g.applyMetrics(metrics(2, { porep_c2: 0 })); // uptime back: a restart
    expect(errs.get('grpc_restart')).toBe(1);
    g.applyStatus(status(3, [gpu(0, '', '', 'RTX A (new driver)')]), 11 * S);
    expect(g.gpuNames.get(0)).toBe('RTX A (new driver)');
    expect(errs.get('implausible')).toBe(0);
  });

  test('the kind of at most 10,000 jobs is remembered (docs/hostile-inputs.md, job id caches): the oldest is forgotten first', () => {
    const { g } = surface();
    for (let i = 0; i <= 10_000; i++) g.applyStatus(status(100, [gpu(0, `job-${i}`, i === 0 ? 'snap-update' : 'porep-c2')]), 10 * S + i * 1000);
    expect(g.kindOf('job-0')).toBe(-1);
    expect(g.kindOf('job-1')).toBe(PC2);
    expect(g.kindOf('job-10000')).toBe(PC2);
    // full: a job already known seen again (the next sample of its stint) forgets nothing
    g.applyStatus(status(100, [gpu(0, 'job-10000', 'porep-c2')]), 11 * S);
    expect(g.kindOf('job-1')).toBe(PC2);
  });

  test("a job first listed without a kind, then with one: the kind is remembered", () => {
    const { g } = surface();
    g.applyStatus(status(100, [gpu(0, 'j1', ''), gpu(0)]), 10 * S);
    expect(g.kindOf('j1')).toBe(-1);
    g.applyStatus(status(101, [gpu(0, 'j1', 'snap-update'), gpu(0)]), 11 * S);
    expect(g.kindOf('j1')).toBe(SNAP);
    expect(g.kindOf('')).toBe(-1);
  });

  test('fewer workers: an idle worker gone changes no busy count', () => {
    const { g } = surface();
    g.applyStatus(status(100, [gpu(0, 'a', 'porep-c2'), gpu(0)]), 10 * S);
    g.applyStatus(status(101, [gpu(0, 'a', 'porep-c2')]), 11 * S);
    expect(g.busyWorkers).toBe(1);
    expect([...g.wBusy]).toEqual([1]);
  });

  test('unknown kinds in GetStatus queues: at most 64 counted', () => {
    const { g, errs } = surface();
    const queues = Array.from({ length: 70 }, (_, i) => ({ proof_kind: `mystery-${i}`, pending: 1, in_progress: 0 }));
    g.applyStatus({ ...status(100, [gpu(0)]), queues }, 10 * S);
    g.applyStatus({ ...status(101, [gpu(0)]), queues }, 11 * S);
    expect(errs.get('unknown_proof_kind')).toBe(64);
    expect(errs.lastMessage).toContain('"mystery-63"');
    expect(g.queueDepth[OTHER]).toBe(70);
  });

  test('refusals and renames are counted with a message saying what and where', () => {
    const lines: string[] = [];
    const { g, errs } = surface('127.0.0.1:1', { lines });
    g.applyStatus(status(100, [gpu(0, '', '', 'RTX A')]), 10 * S);
    g.applyStatus(status(90_000, [gpu(0)]), 11 * S);
    expect(errs.lastMessage).toMatch(/^GetStatus 127\.0\.0\.1:1: uptime 100s -> 90000s: not the daemon/);
    g.applyStatus(status(101, [gpu(0, '', '', 'RTX B')]), 12 * S);
    expect(errs.lastMessage).toMatch(/^GetStatus 127\.0\.0\.1:1: 1 GPU name/);
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg).filter((m) => /GPU name/.test(m))).toHaveLength(1);
  });

  test('job handles: at most 10,000 kept, the oldest forgotten first', () => {
    const { g } = surface();
    const first = Array.from({ length: 10_001 }, (_, i) => g.handle(`job-${i}`));
    expect(new Set(first).size).toBe(10_001);
    expect(Math.min(...first)).toBeGreaterThan(0); // the model's job 0 is "no job"
    expect(g.handle('job-1')).toBe(first[1]);
    expect(g.handle('job-10000')).toBe(first[10_000]);
    expect(first).not.toContain(g.handle('job-0')); // forgotten: a new number
  });
});

describe('issue 23: GetMetrics bookkeeping', () => {
  test('the failed sums: exactly totals + 8 is used; failed proofs alone count toward the rate; large totals compare by difference', () => {
    const { g, errs } = surface();
    g.applyMetrics(metrics(100, { porep_c2: 1500 }, { porep_c2: 1500 }));
    g.applyMetrics(metrics(101, { porep_c2: 1500 }, { porep_c2: 1510 }, { totalFailed: 1502 })); // 1510 = 1502 + 8: used
    expect(errs.get('implausible')).toBe(0);
    expect(g.kProofsFailed[PC2]).toBe(10);
    expect(g.kProofsCompleted[PC2]).toBe(0);
    g.applyMetrics(metrics(102, { porep_c2: 1600 }, { porep_c2: 1600 })); // +100 and +98 (totals): plausible
    expect(errs.get('implausible')).toBe(0);
    expect(g.kProofsCompleted[PC2]).toBe(100);
    g.applyMetrics(metrics(103, { porep_c2: 1600 }, { porep_c2: 1600 + 2500 })); // 2,500 failed in a moment
    expect(errs.get('implausible')).toBe(1);
    expect(errs.lastMessage).toMatch(/^GetMetrics 127\.0\.0\.1:1: 2500 proofs finished in/);
    expect(g.kProofsFailed[PC2]).toBe(100);
    g.applyMetrics(metrics(104, { porep_c2: 1600 }, { porep_c2: 1610 }, { totalFailed: 1601 })); // 1610 > 1601 + 8
    expect(errs.get('implausible')).toBe(2);
    expect(errs.lastMessage).toMatch(/^GetMetrics 127\.0\.0\.1:1: per-kind counters sum past the totals/);
  });

  test('an answer without totals keeps the last ones: the next answer is judged against them', () => {
    const { g, errs } = surface();
    g.applyMetrics(metrics(100, { porep_c2: 10 }));
    g.applyMetrics(metrics(101, { porep_c2: 10 }, {}, { totalCompleted: null, totalFailed: null }));
    g.applyMetrics(metrics(102, { porep_c2: 10 + 2500 }));
    expect(errs.get('implausible')).toBe(1);
    expect(g.kProofsCompleted[PC2]).toBe(0);
  });

  test('failed totals going back alone, uptime rising: a restart', () => {
    const { g, errs } = surface();
    g.applyMetrics(metrics(3, { porep_c2: 5 }, { porep_c2: 4 }));
    g.applyMetrics(metrics(4, { porep_c2: 5 }, { porep_c2: 1 }));
    expect(errs.get('grpc_restart')).toBe(1);
    expect(errs.lastMessage).toMatch(/^cuzk restarted \(GetMetrics: uptime 3s -> 4s\)/);
    expect(g.kProofsFailed[PC2]).toBe(1);
  });

  test("another daemon: the message gives both uptimes, and says when the counters went back", () => {
    const { g, errs } = surface();
    g.applyMetrics(metrics(100, { porep_c2: 50 }));
    g.applyMetrics(metrics(5000, { porep_c2: 60 }));
    expect(errs.get('grpc_conflict')).toBe(1);
    expect(errs.lastMessage).toMatch(/^GetMetrics 127\.0\.0\.1:1: uptime 100s -> 5000s in \d+\.\ds: not the daemon that answered before/);
    g.applyMetrics(metrics(90, { porep_c2: 10 }));
    expect(errs.get('grpc_conflict')).toBe(2);
    expect(errs.lastMessage).toMatch(/^GetMetrics 127\.0\.0\.1:1: uptime 100s -> 90s in \d+\.\ds with counters going back: not the daemon/);
  });

  test('onProofDeltas after proofs were already counted: only the new ones', () => {
    const { g } = surface();
    const got: number[][] = [];
    g.onProofDeltas = (d) => got.push(Array.from(d));
    g.applyMetrics(metrics(100, { porep_c2: 5 }, { porep_c2: 1 }));
    g.applyMetrics(metrics(101, { porep_c2: 8 }, { porep_c2: 3 }));
    g.applyMetrics(metrics(102, { porep_c2: 9 }, { porep_c2: 4 }));
    expect(got).toEqual([[5, 0, 0, 0, 0], [2, 0, 0, 0, 0]]);
  });

  test('unknown kinds: at most 64 counted across both counters, each once, named in the message', () => {
    const lines: string[] = [];
    const { g, errs } = surface('127.0.0.1:1', { lines });
    const many = (p: string) => Object.fromEntries(Array.from({ length: 40 }, (_, k) => [`${p}_${k}`, 1]));
    g.applyMetrics(metrics(100, many('c'), many('f')));
    g.applyMetrics(metrics(101, many('c'), many('f')));
    expect(errs.get('unknown_proof_kind')).toBe(64);
    expect(errs.lastMessage).toBe('unknown proof kind folded into "other": "f_23"');
    const w = lines.map((l) => JSON.parse(l) as { msg: string }).map((r) => r.msg);
    expect(w[0]).toBe('GetMetrics: folded an unknown proof kind into proof_kind="other": "c_0"');
  });

  test('per-kind counters going down: the message names the first three', () => {
    const lines: string[] = [];
    const { g, errs } = surface('127.0.0.1:1', { lines });
    const kinds = (v: number) => Object.fromEntries(['porep_c2', 'snap_update', 'window_post', 'winning_post'].map((k) => [k, v]));
    g.applyMetrics(metrics(100, kinds(5), {}, { totalCompleted: 20 }));
    g.applyMetrics(metrics(101, kinds(4), {}, { totalCompleted: 20 }));
    expect(errs.get('implausible')).toBe(1);
    expect(errs.lastMessage).toBe('GetMetrics 127.0.0.1:1: per-kind counter(s) went down without a restart: "porep_c2", "snap_update", "window_post"');
    const w = lines.map((l) => JSON.parse(l) as { msg: string }).map((r) => r.msg);
    expect(w).toEqual(['GetMetrics: per-kind counters went down while uptime and totals did not ("porep_c2", "snap_update", "window_post"): not a restart, nothing counted']);
  });
});

describe('issue 23: GetMetrics rate on a scripted monotonic clock', () => {
  afterEach(() => jest.restoreAllMocks());
  test('(elapsed + 10 s) x 100 x workers: exactly that many is believed, after 60 s more', () => {
    let now = 1_000_000_000_000n;
    jest.spyOn(process.hrtime, 'bigint').mockImplementation(() => now);
    const { g, errs } = surface();
    g.applyMetrics(metrics(100, { porep_c2: 0 }, {}, { gpuWorkers: 2 }));
    g.applyMetrics(metrics(100, { porep_c2: 2000 }, {}, { gpuWorkers: 2 })); // 0 s: (0 + 10) x 100 x 2
    expect(errs.get('implausible')).toBe(0);
    now += 60_000_000_000n;
    g.applyMetrics(metrics(160, { porep_c2: 2000 + 14_000 }, {}, { gpuWorkers: 2 })); // (60 + 10) x 100 x 2
    expect(errs.get('implausible')).toBe(0);
    expect(g.kProofsCompleted[PC2]).toBe(16_000);
    g.applyMetrics(metrics(160, { porep_c2: 16_000 + 2001 }, {}, { gpuWorkers: 2 }));
    expect(errs.get('implausible')).toBe(1);
  });
});

describe('issue 23: reconnecting to a daemon that is down', () => {
  test('the backoff cap: 2 s, or the poll interval if shorter, never under 100 ms (a daemon back that long is reached by the next poll)', () => {
    // The header's rule, for the intervals in use (attach 1 s, fleet 5 s, 60 s in these tests) and the edges.
    for (const [poll, max] of [[60_000, 2000], [5000, 2000], [2000, 2000], [1000, 1000], [250, 250], [100, 100], [20, 100], [0, 100]]) {
      expect(reconnectBackoffMs(poll)).toEqual({ initial: 100, max });
    }
  });

  test('retried soon (within ~100 ms), then backing off: 3 to 7 connection attempts in the 1.5 s after the first', async () => {
    // A listener that hangs up on every connection: the daemon is not there. The surface is
    // polled every 20 ms; grpc-js dials again only when the channel's backoff allows.
    const at: number[] = [];
    const refuser = net.createServer((c) => {
      at.push(Date.now());
      c.destroy();
    });
    await new Promise<void>((r) => refuser.listen(0, '127.0.0.1', r));
    try {
      const { g, errs } = surface(`127.0.0.1:${(refuser.address() as net.AddressInfo).port}`);
      const t0 = Date.now();
      while ((at.length === 0 && Date.now() - t0 < 10_000) || (at.length > 0 && Date.now() - at[0] < 1500)) {
        await g.pollMetrics();
        await new Promise((r) => setTimeout(r, 20));
      }
      const n = at.filter((t) => t - at[0] < 1500).length;
      expect(errs.get('grpc_unavailable')).toBeGreaterThan(0);
      expect(n).toBeGreaterThanOrEqual(3);
      expect(n).toBeLessThanOrEqual(7);
    } finally {
      refuser.close();
    }
  });
});

describe('issue 23: start() polls each call on its own interval, measured from the start of the last call (fake clock, polls scripted)', () => {
  afterEach(() => jest.useRealTimers());
  const T = 1_000_000;
  /** A surface whose two polls are scripted: each takes `ms` (fake) and records when it started. */
  function scripted(pollIntervalMs: number, statusIntervalMs: number, ms: { metrics: number; status: number }) {
    jest.useFakeTimers({ now: T });
    const g = new GrpcSurface({ address: '127.0.0.1:1', pollIntervalMs, statusIntervalMs, timeoutMs: 5000, maxMessageBytes: 64 * 1024, logger: silentLogger, errors: new ErrorCounts() });
    const at = { metrics: [] as number[], status: [] as number[], ended: [] as number[] };
    g.pollMetrics = () => {
      at.metrics.push(Date.now() - T);
      return new Promise<void>((r) => setTimeout(() => (at.ended.push(Date.now() - T), r()), ms.metrics));
    };
    g.pollStatus = () => {
      at.status.push(Date.now() - T);
      return new Promise<void>((r) => setTimeout(r, ms.status));
    };
    return { g, at };
  }
  /** stop(), the fake clock running until the call in flight has ended. */
  async function stopNow(g: GrpcSurface): Promise<void> {
    const p = g.stop();
    await jest.advanceTimersByTimeAsync(2000);
    await p;
  }

  test('GetMetrics every pollIntervalMs (a 250 ms call inside it), GetStatus every statusIntervalMs', async () => {
    const { g, at } = scripted(1000, 60_000, { metrics: 250, status: 100 });
    g.start();
    await jest.advanceTimersByTimeAsync(3100);
    expect(at.metrics).toEqual([0, 1000, 2000, 3000]);
    expect(at.status).toEqual([0]);
    await stopNow(g);
    const b = scripted(60_000, 1000, { metrics: 100, status: 250 });
    b.g.start();
    await jest.advanceTimersByTimeAsync(3100);
    expect(b.at.metrics).toEqual([0]);
    expect(b.at.status).toEqual([0, 1000, 2000, 3000]);
    await stopNow(b.g);
  });

  test('a call longer than the interval: the next one at once', async () => {
    const { g, at } = scripted(1000, 60_000, { metrics: 1500, status: 100 });
    g.start();
    await jest.advanceTimersByTimeAsync(3100);
    // each one when the one before ended (Node's timers give 0 ms as 1 ms)
    expect(at.metrics).toHaveLength(3);
    expect(at.metrics[1] - at.metrics[0]).toBeGreaterThanOrEqual(1500);
    expect(at.metrics[1] - at.metrics[0]).toBeLessThanOrEqual(1501);
    expect(at.metrics[2] - at.metrics[1]).toBeGreaterThanOrEqual(1500);
    expect(at.metrics[2] - at.metrics[1]).toBeLessThanOrEqual(1501);
    await stopNow(g);
  });

  test('stop() waits for the call in flight, then nothing is polled and no timer is left', async () => {
    const { g, at } = scripted(1000, 60_000, { metrics: 250, status: 100 });
    g.start();
    await jest.advanceTimersByTimeAsync(1100); // GetMetrics' second call in flight (1000-1250), GetStatus waiting for 60 s
    let stoppedAt = -1;
    const stopping = g.stop().then(() => (stoppedAt = Date.now() - T));
    await jest.advanceTimersByTimeAsync(100);
    expect(stoppedAt).toBe(-1);
    await jest.advanceTimersByTimeAsync(100);
    await stopping;
    expect(stoppedAt).toBe(1250);
    expect(at.ended).toEqual([250, 1250]);
    expect(jest.getTimerCount()).toBe(0);
    await jest.advanceTimersByTimeAsync(120_000);
    expect(at.metrics).toEqual([0, 1000]);
    expect(at.status).toEqual([0]);
  });
});
