/**
 * Issue 20, class 1 (attach side): counters the daemon cannot have counted are refused,
 * never added. Real stand-ins (a grpc-js server with our proto, an HTTP /status server),
 * the real surfaces, model and /metrics:
 *  - two daemons alternating behind one gRPC address, and behind one /status URL: no proof
 *    or busy second fabricated by flips read as restarts; the other daemon's answers are
 *    counted (`grpc_conflict`, `conflict`);
 *  - GetMetrics with an empty `cuzk_uptime_seconds` value (Number('') is 0: a "restart");
 *  - a per-kind counter jumping by 2^53−1 while the total is 1;
 *  - `0x10` as a count (Number('0x10') is 16; the text format has no hex).
 * Each is an error counted, nothing added.
 */
import { Harness, startHarness, warnings } from '../attach/harness';
import { FakeCuzkGrpc, cuzkMetricsText } from '../attach/grpc-server';
import { MergedHarness, counters, expectMonotonic, sampleValue, startMerged } from '../attach/merged-harness';
import { fixture } from '../attach/snapshots';
import { StatusServer } from '../attach/status-server';
import { find, parse, Sample } from '../helpers/prom-text';

const servers: FakeCuzkGrpc[] = [];
const merged: MergedHarness[] = [];
afterEach(async () => {
  for (const h of merged.splice(0)) await h.close();
  for (const s of servers.splice(0)) await s.stop();
});

async function grpcPair(): Promise<{ f: FakeCuzkGrpc; m: MergedHarness }> {
  const f = await FakeCuzkGrpc.start('127.0.0.1:0');
  servers.push(f);
  const m = await startMerged({ grpcAddress: f.address });
  merged.push(m);
  return { f, m };
}

const sum = (x: Sample[], name: string, labels: Record<string, string> = {}) =>
  x.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
const err = (x: Sample[], reason: string) => sampleValue(x, 'cuzk_exporter_errors_total', { reason }) ?? 0;
const wallS = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;

test('gRPC: two daemons alternating behind one address fabricate no proof and no busy second (grpc_conflict counted)', async () => {
  const { f, m } = await grpcPair();
  const g = m.source.grpc!;
  // Daemon A: up a day, 1,200 PoRep proofs. Daemon B: up an hour, 900 — each static.
  type Daemon = { uptime: number; completed: Record<string, number>; job: string };
  const A: Daemon = { uptime: 86_400, completed: { porep_c2: 1200, snap_update: 40 }, job: 'a-job' };
  const B: Daemon = { uptime: 3_600, completed: { porep_c2: 900 }, job: 'b-job' };
  const t0 = process.hrtime.bigint();
  const serve = (d: Daemon) => {
    const up = Math.floor(d.uptime + wallS(t0));
    f.metricsText = cuzkMetricsText({ uptime: up, completed: d.completed, workers: 2 });
    f.uptime = up;
    f.totals = { completed: Object.values(d.completed).reduce((a, b) => a + b, 0), failed: 0 };
    f.workers = [{ ordinal: 0, job: `${d.job}-0`, kind: 'PoRepSealCommit' }, { ordinal: 0, job: `${d.job}-1`, kind: 'PoRepSealCommit' }];
  };
  serve(A);
  await g.pollMetrics();
  await g.pollStatus();
  let prev = counters((await m.metrics()).samples);
  const first = (await m.metrics()).samples;
  const completed0 = sum(first, 'cuzk_proofs_completed_total');
  const flips = 40;
  for (let i = 0; i < flips; i++) {
    serve(i % 2 === 0 ? B : A);
    await g.pollMetrics();
    await g.pollStatus();
    const x = (await m.metrics()).samples;
    const next = counters(x);
    expectMonotonic(prev, next, `flip ${i}`);
    prev = next;
  }
  const x = (await m.metrics()).samples;
  expect(sum(x, 'cuzk_proofs_completed_total')).toBe(completed0); // nobody proved anything
  expect(err(x, 'grpc_restart')).toBe(0);
  // Every answer of B (GetMetrics and GetStatus, 20 each) refused and counted.
  expect(err(x, 'grpc_conflict')).toBe(flips);
  // Busy time never beyond what the wall clock allows for the two workers.
  expect(sum(x, 'cuzk_gpu_worker_busy_seconds_total')).toBeLessThanOrEqual(wallS(t0) * 2 + 1e-6);
});

test('/status: two daemons alternating behind one URL fabricate no proof and no busy second (conflict counted)', async () => {
  const daemon = await StatusServer.start();
  const h: Harness = await startHarness({ url: daemon.url, timeoutMs: 2000 });
  try {
    const t0 = process.hrtime.bigint();
    const snap = (uptime: number, completed: number, busy: number, job: string) => {
      const s = JSON.parse(fixture('02-snap-busy-consistent.json').text);
      const e = wallS(t0);
      s.uptime_secs = uptime + e;
      s.counters.total_completed = completed + 7;
      s.counters.completed_by_kind = { 'snap-update': completed, 'porep-c2': 7 };
      s.pipelines[0].job_id = job;
      for (const w of s.gpu_workers) {
        w.busy_secs = busy + e;
        w.current_job = job;
      }
      return s;
    };
    // A: the fixture's daemon; B: up 90,000 s, 5,000 s into its stints, 1,100 proofs.
    const A = () => snap(6010.03, 31, 0.3, 'ps-snap-aaaa');
    const B = () => snap(90_000, 1100, 5000, 'ps-snap-bbbb');
    const scrape = async () => parse((await h.metrics()).body);
    daemon.serveJson(A());
    await h.source.pollOnce();
    const first = await scrape();
    const completed0 = sum(first, 'cuzk_proofs_completed_total');
    let prev = counters(first);
    const flips = 30;
    for (let i = 0; i < flips; i++) {
      daemon.serveJson(i % 2 === 0 ? B() : A());
      await h.source.pollOnce();
      const next = counters(await scrape());
      expectMonotonic(prev, next, `flip ${i}`);
      prev = next;
    }
    const x = await scrape();
    expect(sum(x, 'cuzk_proofs_completed_total')).toBe(completed0);
    expect(err(x, 'conflict')).toBe(flips / 2);
    expect(err(x, 'restart')).toBe(0);
    expect(sampleValue(x, 'cuzk_up')).toBe(1); // refusing B's answers does not take the surface down
    // Busy seconds: never more than the wall clock allows per worker (plus A's first 0.3 s stint).
    expect(sum(x, 'cuzk_gpu_worker_busy_seconds_total')).toBeLessThanOrEqual((wallS(t0) + 0.3) * 2 + 1e-6);
    expect(warnings(h.logs).some((l) => /is neither the same daemon nor a restart/.test(l.msg))).toBe(true);
  } finally {
    await h.close();
    await daemon.close();
  }
});

describe('GetMetrics values that are not counts', () => {
  const base = { uptime: 500, completed: { porep_c2: 10 } };
  async function setup() {
    const { f, m } = await grpcPair();
    f.metricsText = cuzkMetricsText(base);
    await m.source.grpc!.pollMetrics();
    const x = (await m.metrics()).samples;
    return { f, m, completed0: sum(x, 'cuzk_proofs_completed_total') };
  }

  test('an empty cuzk_uptime_seconds value is an error, not a restart: nothing double-counted', async () => {
    const { f, m, completed0 } = await setup();
    f.metricsText = cuzkMetricsText(base).replace(/^cuzk_uptime_seconds 500$/m, 'cuzk_uptime_seconds ');
    expect(f.metricsText).toMatch(/^cuzk_uptime_seconds $/m);
    await m.source.grpc!.pollMetrics();
    // The same daemon again, 2 real proofs later.
    f.metricsText = cuzkMetricsText({ uptime: 501, completed: { porep_c2: 12 } });
    await m.source.grpc!.pollMetrics();
    const x = (await m.metrics()).samples;
    expect(sum(x, 'cuzk_proofs_completed_total') - completed0).toBe(2);
    expect(err(x, 'grpc_bad_response')).toBeGreaterThanOrEqual(1);
    expect(err(x, 'grpc_restart')).toBe(0);
  });

  test('a per-kind counter jumping by 2^53−1 while the total is 1 is refused (implausible), nothing added', async () => {
    const { f, m, completed0 } = await setup();
    // 2^53−1 has 16 digits: a decimal integer by its form, refused by its sum.
    f.metricsText = cuzkMetricsText({ uptime: 501, completed: { porep_c2: 10 } })
      .replace(/^cuzk_proofs_completed_total 10$/m, 'cuzk_proofs_completed_total 1')
      .replace(/^cuzk_proofs_completed\{proof_kind="porep_c2"\} 10$/m, `cuzk_proofs_completed{proof_kind="porep_c2"} ${Number.MAX_SAFE_INTEGER}`);
    expect(f.metricsText).toContain(`porep_c2"} ${Number.MAX_SAFE_INTEGER}`);
    await m.source.grpc!.pollMetrics();
    const x = (await m.metrics()).samples;
    expect(sum(x, 'cuzk_proofs_completed_total')).toBe(completed0);
    expect(err(x, 'implausible')).toBe(1);
    expect(err(x, 'grpc_restart')).toBe(0);
  });

  test('0x10 is not a count (the text format has no hex): counted, nothing added', async () => {
    const { f, m, completed0 } = await setup();
    f.metricsText = cuzkMetricsText({ uptime: 501, completed: { porep_c2: 10 } })
      .replace(/^cuzk_proofs_completed_total 10$/m, 'cuzk_proofs_completed_total 0x10')
      .replace(/^cuzk_proofs_completed\{proof_kind="porep_c2"\} 10$/m, 'cuzk_proofs_completed{proof_kind="porep_c2"} 0x10');
    expect(f.metricsText.match(/0x10/g)).toHaveLength(2);
    await m.source.grpc!.pollMetrics();
    const x = (await m.metrics()).samples;
    expect(sum(x, 'cuzk_proofs_completed_total')).toBe(completed0);
    expect(err(x, 'grpc_bad_response')).toBe(1);
    expect(find(x, 'cuzk_exporter_errors_total', { reason: 'grpc_restart' }) ?? 0).toBe(0);
  });
});
