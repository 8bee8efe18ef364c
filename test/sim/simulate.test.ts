/**
 * `cuzk-exporter simulate` end to end: the real CLI process, the real native engine (sim
 * backend), a real @grpc/grpc-js client, plain HTTP for /status and the ground truth.
 *  - cuzk's blind spot: GetStatus shows a worker proving a WindowPoSt while /status,
 *    read in between two such GetStatus answers, shows every worker idle and no PoSt job;
 *    with --simulate.status-shows-post /status shows it.
 *  - GetMetrics is cuzk's text and counts PoSt.
 *  - TIMELINE replayed gives the native per-worker busy time and per-kind GPU time within
 *    1 ms per partition.
 *  - Submit/Await/Prove/Cancel over gRPC (TCP and a unix socket); exit 0 on SIGTERM.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { find, parse, value } from '../helpers/prom-text';
import { getJson, grpcClient, killAll, Rpc, startSim, waitFor } from './sim-process';

let tmp: string;
let engineConfig: string;

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-sim-'));
  engineConfig = path.join(tmp, 'engine.json');
  // A WindowPoSt whose GPU stage lasts long enough to be seen; the rest quick.
  fs.writeFileSync(
    engineConfig,
    JSON.stringify({
      sim: {
        'window-post': { synth_ms: 30, gpu_ms: 1500, jitter: 0 },
        'winning-post': { synth_ms: 20, gpu_ms: 30, jitter: 0 },
        'snap-update': { synth_ms: 20, gpu_ms: 15, jitter: 0 },
        'porep-c2': { synth_ms: 60000, gpu_ms: 50, jitter: 0 },
      },
    }),
  );
});

afterAll(() => {
  killAll();
  fs.rmSync(tmp, { recursive: true, force: true });
});

// Torn TIMELINE lines have their own tests (conformance); here every line is whole.
const COMMON = ['--engine.backend', 'sim', '--engine.gpus', '1', '--engine.workers-per-gpu', '2', '--simulate.status-listen', '127.0.0.1:0', '--simulate.truth-listen', '127.0.0.1:0', '--simulate.tear-rate', '0'];

/** Waits until GetStatus shows `jobId` on a worker; returns that worker's index. */
async function workerOn(rpc: Rpc, jobId: string): Promise<number> {
  return waitFor(`GetStatus showing ${jobId} on a worker`, async () => {
    const gpus = (await rpc('GetStatus', {})).gpus as Array<Record<string, unknown>>;
    const w = gpus.findIndex((g) => g.current_job_id === jobId);
    return w >= 0 ? w : undefined;
  });
}

describe('simulate with cuzk defaults (blind spots on)', () => {
  test('PoSt: GetStatus sees it, /status does not; GetMetrics counts it; Submit/Await/Prove; duplicates accepted, cancel a no-op; exit 0 on SIGTERM', async () => {
    const sock = path.join(tmp, 'cuzk.sock');
    const timeline = path.join(tmp, 'a.timeline');
    const sim = await startSim([...COMMON, '--engine.config', engineConfig, '--workload.concurrency', '0', '--simulate.grpc-listen', `unix://${sock}`, '--simulate.timeline-file', timeline]);
    expect(sim.grpcAddress).toBe(`unix://${sock}`);
    expect(fs.lstatSync(sock).isSocket()).toBe(true);
    const { rpc, close } = grpcClient(sim.grpcAddress);
    try {
      const st0 = await rpc('GetStatus', {});
      expect(st0.gpus).toHaveLength(2); // one entry per worker
      expect((st0.gpus as Array<{ ordinal: number }>).map((g) => g.ordinal)).toEqual([0, 0]);

      // --- the blind spot ---
      const wpost = 'wpost-f01234-dl7-blindspot';
      const sub = await rpc('SubmitProof', { request_id: wpost, proof_kind: 'WINDOW_POST_PARTITION' });
      expect(sub.job_id).toBe(wpost);
      const w = await workerOn(rpc, wpost);
      let confirmed = 0;
      for (let i = 0; i < 50 && confirmed === 0; i++) {
        const before = (await rpc('GetStatus', {})).gpus as Array<Record<string, unknown>>;
        const status = await getJson(sim.statusUrl!);
        const after = (await rpc('GetStatus', {})).gpus as Array<Record<string, unknown>>;
        if (before[w].current_job_id !== wpost || after[w].current_job_id !== wpost) break; // it ended meanwhile
        expect(before[w].current_proof_kind).toBe('window-post');
        // The worker proved the WindowPoSt before and after this snapshot, and it says:
        expect(status.gpu_workers.every((x: any) => x.state === 'idle' && x.current_job === null)).toBe(true);
        expect(status.pipelines.some((p: any) => p.job_id === wpost || p.proof_kind === 'window-post')).toBe(false);
        // cuzk's shape exactly: none of the reference engine's additions.
        expect(Object.keys(status).sort()).toEqual(['allocations', 'buffers', 'counters', 'gpu_workers', 'memory', 'pipelines', 'synthesis', 'uptime_secs']);
        expect(Object.keys(status.gpu_workers[0]).sort()).toEqual(['busy_secs', 'current_job', 'current_partition', 'gpu_ordinal', 'state', 'worker_id']);
        confirmed++;
      }
      expect(confirmed).toBe(1);
      const awaited = await rpc('AwaitProof', { job_id: wpost });
      expect(awaited).toMatchObject({ job_id: wpost, status: 'COMPLETED' });
      expect(Number(awaited.gpu_compute_ms)).toBeGreaterThan(1000);

      // GetMetrics counts it; /status does not.
      const text = (await rpc('GetMetrics', {})).prometheus_text as string;
      const samples = parse(text);
      expect(value(samples, 'cuzk_proofs_completed_total')).toBe(1);
      expect(value(samples, 'cuzk_proofs_completed', { proof_kind: 'window_post' })).toBe(1);
      expect(value(samples, 'cuzk_proof_duration_seconds_count', { proof_kind: 'window_post' })).toBe(1);
      expect(value(samples, 'cuzk_proof_duration_seconds_sum', { proof_kind: 'window_post' })).toBeGreaterThan(1);
      expect(value(samples, 'cuzk_gpu_workers')).toBe(2);
      expect(value(samples, 'cuzk_running_jobs')).toBe(0);
      expect(find(samples, 'cuzk_proofs_completed', { proof_kind: 'snap_update' })).toBeUndefined(); // cuzk lists kinds once counted
      expect(text).toContain('# TYPE cuzk_proof_duration_seconds summary\n');
      const status = await getJson(sim.statusUrl!);
      expect(status.counters).toMatchObject({ total_completed: 0, total_failed: 0, completed_by_kind: {}, failed_by_kind: {} });
      const truth = await getJson(sim.truthUrl!);
      expect(truth.kinds['window-post']).toMatchObject({ proofs_completed: 1, parts_completed: 1 });
      expect(truth.kinds['window-post'].gpu_ns).toBeGreaterThan(1e9);
      // The TIMELINE has it, monolithic form.
      const lines = fs.readFileSync(timeline, 'utf8').split('\n').filter((l) => l.includes(`,${wpost},`));
      expect(lines.map((l) => l.split(',')[2])).toEqual(['SYNTH_START', 'SYNTH_END', 'GPU_QUEUE', 'GPU_PICKUP', 'GPU_START', 'GPU_END']);
      expect(lines[0]).toMatch(/,SYNTH_START,wpost-f01234-dl7-blindspot,kind=window-post$/);
      // pipeline.rs synthesize_window_post: the request's partition_index (0 here) on GPU_END only.
      expect(lines[3]).toMatch(new RegExp(`,GPU_PICKUP,${wpost},worker=${w}$`));
      expect(lines[5]).toMatch(new RegExp(`,GPU_END,${wpost},worker=${w},partition=0,gpu_ms=\\d+$`));

      // --- Prove, Submit + Await of a partitioned job (visible in /status) ---
      const proved = await rpc('Prove', { submit: { request_id: 'winning-f01234-e1', proof_kind: 'WINNING_POST' } });
      expect(proved.result).toMatchObject({ job_id: 'winning-f01234-e1', status: 'COMPLETED' });
      const snapId = 'ps-snap-0d7f6f1e-2b8c-4f57-9a59-2f1f0e0b4d11-long-id-never-cut';
      await rpc('SubmitProof', { request_id: snapId, proof_kind: 'SNAP_DEALS_UPDATE', priority: 'HIGH' });
      const snap = await rpc('AwaitProof', { job_id: snapId });
      expect(snap).toMatchObject({ job_id: snapId, status: 'COMPLETED', error_message: '' });
      expect((snap.proof as Buffer).length).toBeGreaterThan(0);
      expect(Number(snap.gpu_compute_ms)).toBeGreaterThan(0);
      const st1 = await getJson(sim.statusUrl!);
      expect(st1.pipelines.map((p: any) => p.job_id)).toEqual([snapId]);
      expect(st1.counters).toMatchObject({ total_completed: 1, completed_by_kind: { 'snap-update': 1 } });
      // An answer stays available: a second AwaitProof gives the same.
      expect(await rpc('AwaitProof', { job_id: snapId })).toMatchObject({ status: 'COMPLETED' });

      // --- A duplicate id in flight, cancel, errors (a PoRep whose synthesis takes a minute) ---
      const porep = 'porep-1000-42';
      await rpc('SubmitProof', { request_id: porep, proof_kind: 'POREP_SEAL_COMMIT' });
      // engine.rs Engine::submit has no duplicate check: the same id again is accepted.
      expect(await rpc('SubmitProof', { request_id: porep, proof_kind: 'POREP_SEAL_COMMIT' })).toMatchObject({ job_id: porep });
      // service.rs cancel_proof: "not yet implemented", was_running false, nothing cancelled.
      expect(await rpc('CancelProof', { job_id: porep })).toEqual({ was_running: false });
      expect(await rpc('CancelProof', { job_id: 'never-submitted' })).toEqual({ was_running: false });
      expect((await getJson(sim.statusUrl!)).pipelines.map((p: any) => p.job_id)).toEqual([snapId, porep]);
      await expect(rpc('AwaitProof', { job_id: 'never-submitted' })).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
      await expect(rpc('SubmitProof', { request_id: 'x', proof_kind: 'PROOF_KIND_UNSPECIFIED' })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
      await expect(rpc('Prove', {})).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
      const m2 = parse((await rpc('GetMetrics', {})).prometheus_text as string);
      expect(value(m2, 'cuzk_proofs_completed_total')).toBe(3);
      expect(value(m2, 'cuzk_proofs_completed', { proof_kind: 'winning_post' })).toBe(1);
      expect(value(m2, 'cuzk_proofs_completed', { proof_kind: 'snap_update' })).toBe(1);
      expect(value(m2, 'cuzk_proofs_failed_total')).toBe(0);
      const st2 = await rpc('GetStatus', {});
      expect(st2).toMatchObject({ total_proofs_completed: 3, total_proofs_failed: 0 });
      expect(Number.isInteger(st2.uptime_seconds)).toBe(true);
    } finally {
      close();
    }
    sim.child.kill('SIGTERM');
    expect(await sim.exit).toEqual({ code: 0, signal: null });
    expect(fs.existsSync(sock)).toBe(false);
  }, 60_000);
});

describe('simulate with the blind spots switched off', () => {
  test('--simulate.status-shows-post: /status shows the WindowPoSt on its worker, in pipelines and counters', async () => {
    const sim = await startSim([
      ...COMMON,
      '--engine.config',
      engineConfig,
      '--workload.concurrency',
      '0',
      '--simulate.grpc-listen',
      '127.0.0.1:0',
      '--simulate.timeline-file',
      '',
      '--simulate.status-shows-post',
      '--simulate.grpc-clears-owner-only',
      '--simulate.cancel',
    ]);
    expect(sim.grpcAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    const { rpc, close } = grpcClient(sim.grpcAddress);
    try {
      const wpost = 'wpost-f01234-dl9-visible';
      await rpc('SubmitProof', { request_id: wpost, proof_kind: 'WINDOW_POST_PARTITION' });
      const w = await workerOn(rpc, wpost);
      const status = await waitFor('/status showing the WindowPoSt on its worker', async () => {
        const s = await getJson(sim.statusUrl!);
        return s.gpu_workers[w].state === 'proving' ? s : undefined;
      });
      expect(status.gpu_workers[w]).toMatchObject({ current_job: wpost, current_partition: 0 });
      expect(status.gpu_workers[w].busy_secs).toBeGreaterThanOrEqual(0);
      expect(status.pipelines).toEqual([expect.objectContaining({ job_id: wpost, proof_kind: 'window-post', total_partitions: 1 })]);
      expect(await rpc('AwaitProof', { job_id: wpost })).toMatchObject({ status: 'COMPLETED' });
      const after = await getJson(sim.statusUrl!);
      expect(after.counters).toMatchObject({ total_completed: 1, completed_by_kind: { 'window-post': 1 } });
      expect(sim.stdout()).toContain('timeline: off');
      // --simulate.cancel (ours): CancelProof cancels; the await answers CANCELLED, no failure counted.
      const porep = 'porep-1000-43';
      await rpc('SubmitProof', { request_id: porep, proof_kind: 'POREP_SEAL_COMMIT' });
      expect(await rpc('CancelProof', { job_id: porep })).toEqual({ was_running: true });
      expect(await rpc('AwaitProof', { job_id: porep })).toMatchObject({ job_id: porep, status: 'CANCELLED' });
      expect(await rpc('CancelProof', { job_id: porep })).toEqual({ was_running: false });
      expect(parse((await rpc('GetMetrics', {})).prometheus_text as string).find((x) => x.name === 'cuzk_proofs_failed_total')?.value).toBe(0);
    } finally {
      close();
    }
    sim.child.kill('SIGTERM');
    expect(await sim.exit).toEqual({ code: 0, signal: null });
  }, 60_000);
});

interface Line {
  offset: number;
  event: string;
  job: string;
  detail: Record<string, string>;
}

const LINE = /^TIMELINE,(\d+),(SYNTH_START|SYNTH_END|GPU_QUEUE|GPU_PICKUP|GPU_START|GPU_END),([^,]+),(.*)$/;
function parseTimeline(text: string): Line[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('TIMELINE,')) // upstream's tracing lines share the stream
    .map((l) => {
      const m = LINE.exec(l);
      if (!m) throw new Error(`not a TIMELINE line: ${l}`);
      const detail: Record<string, string> = {};
      for (const kv of m[4].split(',')) {
        const [k, v] = kv.split('=');
        detail[k] = v ?? '';
      }
      return { offset: Number(m[1]), event: m[2], job: m[3], detail };
    });
}

describe('TIMELINE against the native counters', () => {
  test('replayed per-worker busy time and per-kind GPU time equal the ground truth within 1 ms per partition', async () => {
    const timeline = path.join(tmp, 'c.timeline');
    const truthFile = path.join(tmp, 'truth.json');
    const sim = await startSim([
      '--engine.backend',
      'sim',
      '--engine.time-scale',
      '0.01',
      '--engine.gpus',
      '2',
      '--engine.workers-per-gpu',
      '2',
      '--engine.synthesis-concurrency',
      '4',
      '--workload.mix',
      'porep-c2=1,snap-update=2,window-post=1,winning-post=1',
      '--workload.concurrency',
      '3',
      '--workload.count',
      '10',
      '--simulate.grpc-listen',
      '127.0.0.1:0',
      '--simulate.status-listen',
      '',
      '--simulate.truth-listen',
      '127.0.0.1:0',
      '--simulate.truth-file',
      truthFile,
      '--simulate.timeline-file',
      timeline,
      '--simulate.tear-rate',
      '0',
      '--simulate.gpu-queue-collisions', // concurrent PoSt may lose a job upstream (render-failures.test.ts)
      'false',
    ]);
    expect(sim.statusUrl).toBeNull();
    const { rpc, close } = grpcClient(sim.grpcAddress);
    let truth: Record<string, any>;
    try {
      // One PoSt of each kind for sure, beside the random mix.
      await Promise.all([
        rpc('Prove', { submit: { request_id: 'wpost-f01234-dl1-timeline', proof_kind: 'WINDOW_POST_PARTITION' } }),
        rpc('Prove', { submit: { request_id: 'winning-f01234-e99-timeline', proof_kind: 'WINNING_POST' } }),
      ]);
      truth = await waitFor(
        'all 12 proofs done and every event observed',
        async () => {
          const t = await getJson(sim.truthUrl!);
          const done = Object.values(t.kinds as Record<string, any>).reduce((a, k) => a + k.proofs_completed + k.proofs_failed + k.proofs_cancelled, 0);
          return t.quiescent && done === 12 ? t : undefined;
        },
        60_000,
      );
    } finally {
      close();
    }
    expect(Object.values(truth.kinds as Record<string, any>).reduce((a, k) => a + k.proofs_completed, 0)).toBe(12);
    const lines = parseTimeline(fs.readFileSync(timeline, 'utf8'));
    expect(lines.length).toBe(truth.observed.timeline_lines);

    // Kind of each job: monolithic jobs say it (kind=); partitioned ones never do, their
    // request ids (Curio's, lib/ffi/cuzk_funcs.go and tasks/proofshare) tell.
    const kindOf = new Map<string, string>();
    for (const l of lines) if (l.event === 'SYNTH_START' && l.detail.kind) kindOf.set(l.job, l.detail.kind);
    const jobKind = (job: string) => kindOf.get(job) ?? (/^(ps-)?porep-/.test(job) ? 'porep-c2' : /^(ps-)?snap-/.test(job) ? 'snap-update' : 'unknown');

    // Every pickup has one GPU_START and one GPU_END, in that order; offsets never go back.
    // A monolithic job's GPU_END may name a partition (WindowPoSt: its partition_index).
    const key = (l: Line) => `${l.job}#${kindOf.has(l.job) ? 'mono' : l.detail.partition}`;
    const seen = new Map<string, string[]>();
    let last = 0;
    for (const l of lines) {
      expect(l.offset).toBeGreaterThanOrEqual(last);
      last = l.offset;
      if (l.event.startsWith('GPU_') && l.event !== 'GPU_QUEUE') seen.set(key(l), [...(seen.get(key(l)) ?? []), l.event]);
    }
    for (const evs of seen.values()) expect(evs).toEqual(['GPU_PICKUP', 'GPU_START', 'GPU_END']);

    // Per worker: busy from a pickup while idle until the end of its last outstanding partition.
    const nWorkers = truth.workers.length;
    const outstanding = new Array<number>(nWorkers).fill(0);
    const since = new Array<number>(nWorkers).fill(0);
    const busyMs = new Array<number>(nWorkers).fill(0);
    const ends = new Array<number>(nWorkers).fill(0);
    const gpuMs: Record<string, number> = {};
    const partsByKind: Record<string, number> = {};
    let overlapping = 0; // pickups while the worker's previous partition still finalizes
    for (const l of lines) {
      const w = Number(l.detail.worker);
      if (l.event === 'GPU_PICKUP') {
        if (outstanding[w] > 0) overlapping++;
        if (outstanding[w]++ === 0) since[w] = l.offset;
      } else if (l.event === 'GPU_END') {
        ends[w]++;
        if (--outstanding[w] === 0) busyMs[w] += l.offset - since[w];
        const k = jobKind(l.job);
        gpuMs[k] = (gpuMs[k] ?? 0) + Number(l.detail.gpu_ms);
        partsByKind[k] = (partsByKind[k] ?? 0) + 1;
      }
    }
    expect(outstanding).toEqual(new Array(nWorkers).fill(0));
    // Whether split proving's overlaps (a pickup while the previous partition finalizes)
    // occur here depends on scheduling: at a 0.01 time scale on a machine running
    // stress-ng beside the suite they sometimes do not. The overlap itself is replayed
    // deterministically from scripted events in render-success.test.ts; here it is only reported.
    if (overlapping === 0) console.log('TIMELINE replay: no overlapping pickups in this run (scheduling); see render-success.test.ts');
    for (let w = 0; w < nWorkers; w++) {
      const native = truth.workers[w];
      expect(ends[w]).toBe(native.partitions);
      expect(native.busy_ns).toBeGreaterThan(0);
      // Each stint's two offsets are whole ms (floor): < 1 ms off per stint, stints <= partitions.
      expect(Math.abs(busyMs[w] - native.busy_ns / 1e6)).toBeLessThanOrEqual(Math.max(1, native.partitions));
    }
    for (const kind of ['porep-c2', 'snap-update', 'window-post', 'winning-post']) {
      const native = truth.kinds[kind];
      expect(partsByKind[kind] ?? 0).toBe(native.parts_completed + native.parts_failed);
      expect(partsByKind[kind] ?? 0).toBe(truth.upstream.kinds[kind].parts_completed);
      // gpu_ms is rounded down per partition: the sum is below the truth by less than 1 ms each.
      const diff = native.gpu_ns / 1e6 - (gpuMs[kind] ?? 0);
      expect(diff).toBeGreaterThanOrEqual(0);
      expect(diff).toBeLessThan(Math.max(1, partsByKind[kind] ?? 0));
    }
    expect(truth.kinds['window-post'].gpu_ns).toBeGreaterThan(0);
    expect(truth.kinds['winning-post'].gpu_ns).toBeGreaterThan(0);
    expect(jobKind('wpost-f01234-dl1-timeline')).toBe('window-post');
    expect([...seen.keys()].every((k) => jobKind(k.split('#')[0]) !== 'unknown')).toBe(true);

    // The truth file: on SIGUSR2, and again at exit.
    sim.child.kill('SIGUSR2');
    const fromFile = await waitFor('the truth file', () => fs.existsSync(truthFile) && (JSON.parse(fs.readFileSync(truthFile, 'utf8')) as Record<string, any>));
    expect(fromFile.workers.map((x: any) => x.busy_ns)).toEqual(truth.workers.map((x: any) => x.busy_ns));
    fs.rmSync(truthFile);
    sim.child.kill('SIGTERM');
    expect(await sim.exit).toEqual({ code: 0, signal: null });
    const atExit = JSON.parse(fs.readFileSync(truthFile, 'utf8'));
    expect(atExit.kinds['snap-update'].gpu_ns).toBe(truth.kinds['snap-update'].gpu_ns);
    expect(atExit.quiescent).toBe(true);
  }, 120_000);
});
