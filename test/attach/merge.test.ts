/**
 * The merge and cross-check (DESIGN §7, issue 10 item 3), with every surface real: a /status
 * stand-in (HTTP), a gRPC stand-in (grpc-js, our proto) and a TIMELINE log file. Each metric
 * comes from one surface, so a partition or proof two surfaces report is counted once; PoSt
 * is visible through gRPC and TIMELINE while /status stays blind (cuzk's normal state, no
 * disagreement); a worker on a partition proving per one
 * surface and idle per another (beyond the skew tolerance) sets
 * cuzk_status_mismatch_reason{reason="surfaces_disagree"} and shows in /status — except
 * gRPC's idle, which cuzk's unconditional current_job clear makes untrustworthy. Bad
 * TIMELINE input (garbage, binary, 1 MB lines, out-of-order offsets, unknown events,
 * workers out of range) is counted by reason with the exporter alive and /metrics clean.
 */
import Ajv from 'ajv';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promtoolCheckMetrics, Sample } from '../helpers/prom-text';
import { FakeCuzkGrpc, cuzkMetricsText } from './grpc-server';
import { MergedHarness, counters, expectMonotonic, sampleValue, startMerged, waitFor } from './merged-harness';
import { idle, pipeline, proving, snapshot } from './snapshots';
import { StatusServer } from './status-server';

let dir: string;
const cleanup: (() => Promise<void>)[] = [];
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-merge-'));
});
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const A = 'ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50';
const WP = 'wpost-f01234-dl17-p0';
const K = 100; // script offsets run far ahead of the test's real time (see timeline.test.ts)
const tl = (off: number, ev: string, job: string, detail: string) => `TIMELINE,${off * K},${ev},${job},${detail}\n`;
const TOL_MS = 100;
/** TIMELINE's claims trail what was read by at least 1 s (timeline-surface.ts); loops that must stay quiet run past it. */
const LAG_MS = 1500;

async function setup(o: { status?: boolean; grpc?: boolean; timeline?: boolean; maxLineBytes?: number }) {
  const status = o.status ? await StatusServer.start() : null;
  if (status) cleanup.push(() => status.close());
  const grpc = o.grpc ? await FakeCuzkGrpc.start('127.0.0.1:0') : null;
  if (grpc) cleanup.push(() => grpc.stop());
  const file = o.timeline ? path.join(dir, `${Math.random().toString(36).slice(2)}.log`) : undefined;
  if (file) fs.writeFileSync(file, '');
  // No test here waits for a timeout; on a loaded box (CI at load ~17) a first gRPC call took over 1 s.
  const h = await startMerged({ statusUrl: status?.url, grpcAddress: grpc?.address, timelineFile: file, skewToleranceMs: TOL_MS, timeoutMs: 10_000, maxLineBytes: o.maxLineBytes });
  cleanup.push(() => h.close());
  const pollAll = async () => {
    await Promise.all([
      h.source.timeline?.poll(),
      h.source.status?.pollOnce(),
      h.source.grpc ? h.source.grpc.pollMetrics().then(() => h.source.grpc!.pollStatus()) : undefined,
    ]);
    const m = await h.metrics();
    expect(m.status).toBe(200);
    return m.samples;
  };
  return { status, grpc, file, h, pollAll, append: (s: string) => fs.appendFileSync(file!, s) };
}

const disagree = (s: Sample[]) => sampleValue(s, 'cuzk_status_mismatch_reason', { reason: 'surfaces_disagree' });

test('all three surfaces: one source per metric, nothing counted twice, PoSt visible, /status blindness no disagreement', async () => {
  const { status, grpc, h, pollAll, append } = await setup({ status: true, grpc: true, timeline: true });
  status!.serveJson(
    snapshot({
      uptime: 500,
      pipelines: [pipeline(A, 'snap-update', [['gpu', 4000, null], ['synth_done', 4100, null]])],
      workers: [proving(0, 0, A, 0, 0.2), idle(1, 0)], // the WindowPoSt on worker 1 is invisible here
      completed: { 'snap-update': 10 },
    }),
  );
  grpc!.metricsText = cuzkMetricsText({ uptime: 500, completed: { snap_update: 10, window_post: 4 } });
  grpc!.workers = [{ ordinal: 0, job: A, kind: 'snap-update' }, { ordinal: 0, job: WP, kind: 'window-post' }];
  append(tl(0, 'GPU_PICKUP', A, 'worker=0,partition=0') + tl(0, 'GPU_START', A, 'worker=0,partition=0') + tl(1, 'SYNTH_START', WP, 'kind=window-post') + tl(2, 'GPU_PICKUP', WP, 'worker=1') + tl(2, 'GPU_START', WP, 'worker=1'));
  let s = await pollAll();
  expect(s.find((x) => x.name === 'cuzk_exporter_build_info')!.labels.surfaces).toBe('grpc,status,timeline');
  for (const surface of ['grpc', 'status', 'timeline']) expect(sampleValue(s, 'cuzk_surface_up', { surface })).toBe(1);
  expect(sampleValue(s, 'cuzk_up')).toBe(1);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '1' })).toBe(1); // TIMELINE sees the PoSt
  expect(sampleValue(s, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'gpu' })).toBe(1); // kind from /status
  expect(sampleValue(s, 'cuzk_partitions', { proof_kind: 'window-post', state: 'gpu' })).toBe(1);
  expect(sampleValue(s, 'cuzk_gpu_info', { gpu: '0', name: 'NVIDIA RTX 6000 Ada (0)' })).toBe(1); // names from gRPC
  let prev = counters(s);

  // /status says worker 1 is idle while TIMELINE (and gRPC) say it proves the WindowPoSt: cuzk's
  // /status never shows a monolithic job (upstream: only the partitioned path calls
  // partition_gpu_start/end), so that is how a healthy cuzk looks, not a contradiction. The
  // polls run past TIMELINE's lag and the tolerance, where a disagreement would have shown.
  const quietFrom = Date.now();
  while (Date.now() - quietFrom < LAG_MS + 5 * TOL_MS) {
    s = await pollAll();
    expect(disagree(s)).toBe(0);
    expect(sampleValue(s, 'cuzk_status_mismatch')).toBe(0);
  }
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '1' })).toBe(1);
  const doc = await h.status();
  expect((doc.exporter as Record<string, unknown>).surfaces_disagree).toEqual([]);
  expect(((doc.exporter as Record<string, unknown>).surfaces as { name: string }[]).map((x) => x.name)).toEqual(['grpc', 'status', 'timeline']);
  expect((doc.exporter as { status_mismatch: boolean }).status_mismatch).toBe(false);
  // The document built from the merged state keeps cuzk's shape (docs/status.schema.json).
  const ajv = new Ajv({ allErrors: true });
  const validate = ajv.compile(JSON.parse(fs.readFileSync(path.join(__dirname, '../../docs/status.schema.json'), 'utf8')));
  expect([validate(doc), ajv.errorsText(validate.errors)]).toEqual([true, 'No errors']);
  const pipes = doc.pipelines as { job_id: string; proof_kind: string }[];
  expect(pipes.map((p) => [p.job_id, p.proof_kind]).sort()).toEqual([[A, 'snap-update'], [WP, 'window-post']].sort());

  // Both end. /status shows A/0 done with the same 600 ms TIMELINE reported: counted once.
  append(tl(10, 'GPU_END', A, 'worker=0,partition=0,gpu_ms=600') + tl(30, 'GPU_END', WP, 'worker=1,gpu_ms=2000'));
  status!.serveJson(
    snapshot({
      uptime: 501,
      pipelines: [pipeline(A, 'snap-update', [['done', 4000, 600], ['failed', 4100, null]])],
      workers: [idle(0, 0), idle(1, 0)],
      completed: { 'snap-update': 10 },
      failed: { 'snap-update': 1 },
    }),
  );
  grpc!.metricsText = cuzkMetricsText({ uptime: 501, completed: { snap_update: 10, window_post: 5 }, failed: { snap_update: 1 } });
  grpc!.workers = [{ ordinal: 0 }, { ordinal: 0 }];
  s = await pollAll();
  expectMonotonic(prev, counters(s), 'after the ends');
  prev = counters(s);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'snap-update' })).toBe(0.6);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'window-post' })).toBe(2);
  expect(sampleValue(s, 'cuzk_partitions_completed_total', { proof_kind: 'snap-update' })).toBe(1);
  expect(sampleValue(s, 'cuzk_partitions_completed_total', { proof_kind: 'window-post' })).toBe(1);
  expect(sampleValue(s, 'cuzk_partitions_failed_total', { proof_kind: 'snap-update' })).toBe(1); // only /status sees failures
  expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: 'window-post' })).toBe(1); // gRPC: PoSt included
  expect(sampleValue(s, 'cuzk_proofs_failed_total', { proof_kind: 'snap-update' })).toBe(1); // once, though /status says so too
  expect(sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: '0', worker: '1' })).toBe(((30 - 2) * K) / 1000);
  expect(disagree(s)).toBe(0);

  // A surface goes away: cuzk_up is 0, the others stay up, totals stand.
  await grpc!.stop();
  s = await pollAll();
  expect(sampleValue(s, 'cuzk_up')).toBe(0);
  expect(sampleValue(s, 'cuzk_surface_up', { surface: 'grpc' })).toBe(0);
  expect(sampleValue(s, 'cuzk_surface_up', { surface: 'timeline' })).toBe(1);
  expectMonotonic(prev, counters(s), 'gRPC gone');
  expect(promtoolCheckMetrics((await h.metrics()).body)).toEqual({ ok: true, output: '' });
});

test("gRPC's idle is not a contradiction (its unconditional clear); gRPC busy while TIMELINE says idle is", async () => {
  const { grpc, pollAll, append } = await setup({ grpc: true, timeline: true });
  grpc!.metricsText = cuzkMetricsText({ uptime: 100, completed: {} });
  grpc!.workers = [{ ordinal: 0 }, { ordinal: 0 }]; // cleared by P1's finalizer while worker 0 runs P2
  append(tl(0, 'GPU_PICKUP', A, 'worker=0,partition=1') + tl(0, 'GPU_START', A, 'worker=0,partition=1') + tl(5, 'GPU_PICKUP', A, 'worker=0,partition=2') + tl(5, 'GPU_START', A, 'worker=0,partition=2'));
  const start = Date.now();
  while (Date.now() - start < LAG_MS + 5 * TOL_MS) {
    const s = await pollAll();
    expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '0' })).toBe(1);
    expect(disagree(s)).toBe(0);
  }
  append(tl(8, 'GPU_END', A, 'worker=0,partition=1,gpu_ms=800') + tl(9, 'GPU_END', A, 'worker=0,partition=2,gpu_ms=400'));
  grpc!.workers = [{ ordinal: 0, job: 'ghost', kind: 'winning-post' }, { ordinal: 0 }];
  const s = await waitFor('surfaces_disagree', async () => {
    const x = await pollAll();
    return disagree(x) === 1 ? x : undefined;
  });
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '0' })).toBe(0);
  expect(sampleValue(s, 'cuzk_status_mismatch')).toBe(1);
});

test('/status with gRPC: proofs from gRPC (PoSt included), workers from /status, the PoSt worker /status cannot see no disagreement', async () => {
  const { status, grpc, h, pollAll } = await setup({ status: true, grpc: true });
  status!.serveJson(snapshot({ uptime: 50, workers: [idle(0, 0), idle(1, 1)], completed: { 'porep-c2': 3 } }));
  grpc!.metricsText = cuzkMetricsText({ uptime: 50, completed: { porep_c2: 3, winning_post: 100 } });
  grpc!.workers = [{ ordinal: 0 }, { ordinal: 1, job: 'winning-1', kind: 'winning-post' }];
  let s = await pollAll();
  status!.serveJson(snapshot({ uptime: 51, workers: [idle(0, 0), idle(1, 1)], completed: { 'porep-c2': 4 } }));
  grpc!.metricsText = cuzkMetricsText({ uptime: 51, completed: { porep_c2: 4, winning_post: 102 } });
  s = await pollAll();
  expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: 'porep-c2' })).toBe(1); // once
  expect(sampleValue(s, 'cuzk_proofs_completed_total', { proof_kind: 'winning-post' })).toBe(2);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: '1', worker: '1' })).toBe(0); // /status drives workers
  // /status' blindness to PoSt is cuzk's normal state (its status tracker sees partitioned jobs
  // only): never a disagreement, however long the PoSt runs.
  const quietFrom = Date.now();
  while (Date.now() - quietFrom < 4000) {
    s = await pollAll();
    expect(disagree(s)).toBe(0);
  }
  const doc = await h.status();
  expect((doc.exporter as Record<string, unknown>).surfaces_disagree).toEqual([]);
  expect(doc.uptime_secs).toBe(51); // cuzk's own snapshot is served when /status drives the workers
  expect(s.find((x) => x.name === 'cuzk_exporter_build_info')!.labels.surfaces).toBe('grpc,status');
});

test('agreeing surfaces never disagree', async () => {
  const { status, pollAll, append } = await setup({ status: true, timeline: true });
  status!.serveJson(
    snapshot({ uptime: 10, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null]])], workers: [proving(0, 0, A, 0, 0.1), idle(1, 0)] }),
  );
  append(tl(0, 'GPU_PICKUP', A, 'worker=0,partition=0') + tl(0, 'GPU_START', A, 'worker=0,partition=0'));
  const start = Date.now();
  while (Date.now() - start < LAG_MS + 6 * TOL_MS) {
    const s = await pollAll();
    expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '0' })).toBe(1);
    expect(disagree(s)).toBe(0);
    expect(sampleValue(s, 'cuzk_status_mismatch')).toBe(0);
  }
});

test('bad TIMELINE input: counted by reason, bounded memory, exact numbers for the good lines, promtool clean', async () => {
  const max = 64 * 1024;
  const { status, h, pollAll, append, file } = await setup({ status: true, timeline: true, maxLineBytes: max });
  status!.serveJson(snapshot({ uptime: 10, workers: [idle(0, 0), idle(1, 0)] }));
  await pollAll();
  const t = h.source.timeline!;
  append('random garbage\nTIMELINE,\nTIMELINE,x,GPU_END,j,worker=0,gpu_ms=1\n');
  append(Buffer.from([0x00, 0xff, 0xfe, 0x54, 0x49, 0x4d, 0x45, 0x0a, 0xc3, 0x28, 0x0a]).toString('latin1'));
  fs.appendFileSync(file!, Buffer.from([0x80, 0x81, 0x54, 0x49, 0x4d, 0x45, 0x4c, 0x49, 0x4e, 0x45, 0x2c, 0x31, 0x2c, 0x47, 0x50, 0x55, 0x5f, 0x45, 0x4e, 0x44, 0x2c, 0xff, 0x2c, 0x0a]));
  append(tl(1, 'GPU_REWIND', 'j', 'worker=0')); // an event cuzk does not write (yet)
  append(tl(1, 'GPU_PICKUP', 'j', 'worker=99999')); // above any real worker id
  append(tl(1, 'GPU_PICKUP', 'j7', 'worker=7,partition=10')); // a worker /status does not have
  // A 1 MB TIMELINE line arriving in pieces: held at most `max` bytes at any time, then dropped.
  append('TIMELINE,1,GPU_END,' + 'z'.repeat(100));
  for (let i = 0; i < 16; i++) {
    append('y'.repeat(64 * 1024));
    await t.poll();
    expect(t.pendingBytes).toBeLessThanOrEqual(max);
  }
  append('\n');
  append('x'.repeat(1024 * 1024) + '\n'); // a 1 MB line that is not TIMELINE: ignored, not counted
  // Good lines, slightly out of order (threads of one process), stay exact.
  append(tl(10, 'SYNTH_START', WP, 'kind=window-post') + tl(12, 'GPU_PICKUP', WP, 'worker=1') + tl(12, 'GPU_START', WP, 'worker=1') + tl(20, 'GPU_END', WP, 'worker=1,gpu_ms=800') + tl(19, 'SYNTH_START', 'wp2', 'kind=window-post'));
  const s = await pollAll();
  const reason = (r: string) => sampleValue(s, 'cuzk_exporter_errors_total', { reason: r });
  expect(reason('timeline_malformed')).toBe(3);
  expect(reason('timeline_unknown_event')).toBe(1);
  expect(reason('timeline_worker_out_of_range')).toBe(2); // 99999 by the parser, 7 against /status' workers
  expect(reason('timeline_line_too_long')).toBe(1);
  expect(reason('timeline_restart')).toBe(0);
  expect(sampleValue(s, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '7' })).toBeUndefined();
  expect(sampleValue(s, 'cuzk_gpu_worker_busy_seconds_total', { gpu: '0', worker: '1' })).toBe(((20 - 12) * K) / 1000);
  expect(sampleValue(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'window-post' })).toBe(0.8);
  expect(t.up).toBe(true);
  expect(promtoolCheckMetrics((await h.metrics()).body)).toEqual({ ok: true, output: '' });
});
