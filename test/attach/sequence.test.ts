/**
 * Issue #4, acceptance 2: a scripted daemon life, one snapshot per step, applied with
 * source.applyBody(body, t) on a clock the test sets (no sleeps, no real polling):
 * partitions finish (some skipping states between two polls), a job completes and ages
 * out of the snapshot, a partition fails, and the daemon restarts with fewer workers and
 * its cumulative counters back at 0.
 *
 * At every step /metrics (the real HTTP server) must show exactly the expected totals, no
 * counter may go down, and after the restart the vanished workers' and GPU's series must be
 * gone. Expected totals are computed here from the script, independently of the code.
 */
import { find, parse, promtoolCheckMetrics, Sample, value } from '../helpers/prom-text';
import { Harness, startHarness, warnings } from './harness';
import { idle, PartSpec, pipeline, proving, snapshot } from './snapshots';

const T0 = 5_000_000_000_000; // model clock (ns) of the first poll
const S = 1_000_000_000; // 1 s in ns
const ms = (n: number) => n * 1_000_000; // ns

const A = 'ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50';
const B = 'porep-f01234-s000777-3';
const C = 'wpost-f01234-dl17-p0';
const D = 'ps-snap-0d0d0d0d-0000-4000-8000-000000000000';

/** Job A's partition i: synthesis and GPU time (ms) when finished. */
const synthA = (i: number) => 9000 + 10 * i;
const gpuA = (i: number) => 600 + i;
const doneA = (i: number): PartSpec => ['done', synthA(i), gpuA(i)];

/** What /metrics must show after a step, in ns and counts (seconds = ns / 1e9). */
interface Expected {
  gpuNs: Record<string, number>;
  synthNs: Record<string, number>;
  partsCompleted: Record<string, number>;
  partsFailed: Record<string, number>;
  proofsCompleted: Record<string, number>;
  proofsFailed: Record<string, number>;
  /** Worker busy-seconds (ns), by worker id; workers listed here must exist, others not. */
  workerBusyNs: Record<number, number>;
  busy: Record<number, 0 | 1>;
  gpus: string[];
  live: Record<string, Partial<Record<'pending' | 'synthesizing' | 'synth_done' | 'gpu', number>>>;
  mismatch: 0 | 1;
  restarts: number;
}

interface Step {
  what: string;
  t: number;
  body: Record<string, unknown>;
  /** Changes to the running expectation. */
  expect: (e: Expected) => void;
}

const KINDS = ['porep-c2', 'snap-update', 'window-post', 'winning-post'];
const add = (rec: Record<string, number>, k: string, n: number) => (rec[k] = (rec[k] ?? 0) + n);

const steps: Step[] = [
  {
    what: 'baseline: attach while job A is half done (fixture 02 shape)',
    t: T0,
    body: snapshot({
      uptime: 1000,
      pipelines: [
        pipeline(A, 'snap-update', [
          ...Array.from({ length: 9 }, (_, i) => doneA(i)),
          ['gpu', synthA(9), 300],
          ['gpu', synthA(10), 100],
          ['synth_done', synthA(11), null],
          ['synthesizing', 5000, null],
          ['synthesizing', 5000, null],
          ['synthesizing', 2000, null],
          ['synthesizing', 2000, null],
        ]),
      ],
      workers: [proving(0, 0, A, 9, 0.3), proving(1, 0, A, 10, 0.1), idle(2, 1), idle(3, 1)],
      completed: { 'snap-update': 31, 'porep-c2': 7 },
      failed: { 'porep-c2': 1 },
      synthActive: 4,
    }),
    expect: (e) => {
      // What finished before we attached is not ours: nothing counted yet.
      e.workerBusyNs = { 0: ms(300), 1: ms(100), 2: 0, 3: 0 };
      e.busy = { 0: 1, 1: 1, 2: 0, 3: 0 };
      e.gpus = ['0', '1'];
      e.live = { 'snap-update': { gpu: 2, synth_done: 1, synthesizing: 4, pending: 0 } };
    },
  },
  {
    what: 'partition 9 done; worker 2 picks up partition 11; partition 12 synthesized',
    t: T0 + S,
    body: snapshot({
      uptime: 1001,
      pipelines: [
        pipeline(A, 'snap-update', [
          ...Array.from({ length: 10 }, (_, i) => doneA(i)),
          ['gpu', synthA(10), 1100],
          ['gpu', synthA(11), 200],
          ['synth_done', synthA(12), null],
          ['synthesizing', 6000, null],
          ['synthesizing', 3000, null],
          ['synthesizing', 3000, null],
        ]),
      ],
      workers: [idle(0, 0), proving(1, 0, A, 10, 1.1), proving(2, 1, A, 11, 0.2), idle(3, 1)],
      completed: { 'snap-update': 31, 'porep-c2': 7 },
      failed: { 'porep-c2': 1 },
      synthActive: 3,
    }),
    expect: (e) => {
      add(e.gpuNs, 'snap-update', ms(gpuA(9)));
      add(e.synthNs, 'snap-update', ms(synthA(12)));
      add(e.partsCompleted, 'snap-update', 1);
      // Worker 0's stint ended: credited its partition's final GPU time (609 ms > the 300 ms seen).
      e.workerBusyNs = { 0: ms(gpuA(9)), 1: ms(1100), 2: ms(200), 3: 0 };
      e.busy = { 0: 0, 1: 1, 2: 1, 3: 0 };
      e.live = { 'snap-update': { gpu: 2, synth_done: 1, synthesizing: 3, pending: 0 } };
    },
  },
  {
    what: 'partitions 10 and 11 done; 13 went from synthesizing to done between polls; job B queued',
    t: T0 + 2 * S,
    body: snapshot({
      uptime: 1002,
      pipelines: [
        pipeline(A, 'snap-update', [
          ...Array.from({ length: 10 }, (_, i) => doneA(i)),
          ['done', synthA(10), 1150],
          doneA(11),
          ['gpu', synthA(12), 50],
          doneA(13),
          ['synth_done', synthA(14), null],
          ['synthesizing', 4000, null],
        ]),
        pipeline(B, 'porep-c2', Array.from({ length: 10 }, (): PartSpec => ['pending', null, null]), 0.5),
      ],
      workers: [proving(0, 0, A, 12, 0.05), idle(1, 0), idle(2, 1), idle(3, 1)],
      completed: { 'snap-update': 31, 'porep-c2': 7 },
      failed: { 'porep-c2': 1 },
      queueDepth: 1,
      synthActive: 1,
    }),
    expect: (e) => {
      add(e.gpuNs, 'snap-update', ms(1150) + ms(gpuA(11)) + ms(gpuA(13)));
      add(e.synthNs, 'snap-update', ms(synthA(13)) + ms(synthA(14)));
      add(e.partsCompleted, 'snap-update', 3);
      e.workerBusyNs = { 0: ms(gpuA(9)) + ms(50), 1: ms(1150), 2: ms(gpuA(11)), 3: 0 };
      e.busy = { 0: 1, 1: 0, 2: 0, 3: 0 };
      e.live = { 'snap-update': { gpu: 1, synth_done: 1, synthesizing: 1, pending: 0 }, 'porep-c2': { pending: 10 } };
    },
  },
  {
    what: 'job A completes (14 skipped gpu between polls); B starts synthesizing',
    t: T0 + 3 * S,
    body: snapshot({
      uptime: 1003,
      pipelines: [
        pipeline(A, 'snap-update', Array.from({ length: 16 }, (_, i) => (i === 10 ? ['done', synthA(10), 1150] : doneA(i)))),
        pipeline(B, 'porep-c2', [
          ...Array.from({ length: 4 }, (): PartSpec => ['synthesizing', 1000, null]),
          ...Array.from({ length: 6 }, (): PartSpec => ['pending', null, null]),
        ]),
      ],
      workers: [idle(0, 0), idle(1, 0), idle(2, 1), idle(3, 1)],
      completed: { 'snap-update': 32, 'porep-c2': 7 },
      failed: { 'porep-c2': 1 },
      synthActive: 4,
    }),
    expect: (e) => {
      add(e.gpuNs, 'snap-update', ms(gpuA(12)) + ms(gpuA(14)) + ms(gpuA(15)));
      add(e.synthNs, 'snap-update', ms(synthA(15)));
      add(e.partsCompleted, 'snap-update', 3);
      add(e.proofsCompleted, 'snap-update', 1);
      e.workerBusyNs = { 0: ms(gpuA(9)) + ms(gpuA(12)), 1: ms(1150), 2: ms(gpuA(11)), 3: 0 };
      e.busy = { 0: 0, 1: 0, 2: 0, 3: 0 };
      e.live = { 'snap-update': {}, 'porep-c2': { synthesizing: 4, pending: 6 } };
    },
  },
  {
    what: '31 s later: job A aged out of the snapshot; B has a failed partition (fixture 04 shape)',
    t: T0 + 34 * S,
    body: snapshot({
      uptime: 1034,
      pipelines: [
        pipeline(B, 'porep-c2', [
          ['synth_done', 38010, null],
          ['gpu', 38100, 900],
          ['failed', 38050, 1710],
          ['synthesizing', 30000, null],
          ...Array.from({ length: 6 }, (): PartSpec => ['pending', null, null]),
        ]),
      ],
      workers: [idle(0, 0), idle(1, 0), idle(2, 1), proving(3, 1, B, 1, 0.9)],
      completed: { 'snap-update': 32, 'porep-c2': 7 },
      failed: { 'porep-c2': 1 },
      synthActive: 1,
    }),
    expect: (e) => {
      add(e.gpuNs, 'porep-c2', ms(1710));
      add(e.synthNs, 'porep-c2', ms(38010) + ms(38100) + ms(38050));
      add(e.partsFailed, 'porep-c2', 1);
      // cuzk's /status counts a failed proof only for the PoRep self-check (status.rs
      // job_completed); a failed partition fails its job (engine.rs), which the exporter
      // counts itself. The job's pending partitions are never dispatched and its
      // synthesized one is picked up and skipped: not live (status-stale.ts).
      add(e.proofsFailed, 'porep-c2', 1);
      e.workerBusyNs[3] = ms(900);
      e.busy = { 0: 0, 1: 0, 2: 0, 3: 1 };
      e.live = { 'snap-update': {}, 'porep-c2': { gpu: 1, synthesizing: 1 } };
    },
  },
  {
    what: 'the daemon restarted: uptime 12 s, one GPU with two workers, counters from 0, job C already done',
    t: T0 + 47 * S, // the new process (uptime 12 s) started after the last look (+34 s)
    body: snapshot({
      uptime: 12,
      pipelines: [pipeline(C, 'window-post', [['done', 3000, 300]], 1.9)],
      workers: [idle(0, 0), idle(1, 0)],
      completed: { 'window-post': 1 },
      failed: {},
    }),
    expect: (e) => {
      e.restarts = 1;
      // Everything a restarted daemon shows happened after our last look: C counts.
      add(e.gpuNs, 'window-post', ms(300));
      add(e.synthNs, 'window-post', ms(3000));
      add(e.partsCompleted, 'window-post', 1);
      add(e.proofsCompleted, 'window-post', 1);
      // Workers 2 and 3 (and GPU 1) are gone; 0 and 1 keep their totals.
      delete e.workerBusyNs[2];
      delete e.workerBusyNs[3];
      e.busy = { 0: 0, 1: 0 };
      e.gpus = ['0'];
      e.live = { 'porep-c2': {}, 'window-post': {} };
    },
  },
  {
    what: 'the new process proves: counters 2 window-post, 1 snap-update completed, 1 porep-c2 failed; job D on the GPU',
    t: T0 + 48 * S,
    body: snapshot({
      uptime: 13,
      pipelines: [
        pipeline(C, 'window-post', [['done', 3000, 300]], 2.9),
        pipeline(D, 'snap-update', [
          ['gpu', 9000, 400],
          ...Array.from({ length: 15 }, (): PartSpec => ['synthesizing', 500, null]),
        ]),
      ],
      workers: [proving(0, 0, D, 0, 0.4), idle(1, 0)],
      completed: { 'window-post': 2, 'snap-update': 1 },
      failed: { 'porep-c2': 1 },
    }),
    expect: (e) => {
      add(e.synthNs, 'snap-update', ms(9000));
      add(e.proofsCompleted, 'window-post', 1);
      add(e.proofsCompleted, 'snap-update', 1);
      add(e.proofsFailed, 'porep-c2', 1);
      e.workerBusyNs[0] += ms(400);
      e.busy = { 0: 1, 1: 0 };
      e.live = { 'snap-update': { gpu: 1, synthesizing: 15 } };
    },
  },
  {
    what: 'the status bug in the new process: D partition 0 on the GPU, every worker idle',
    t: T0 + 49 * S,
    body: snapshot({
      uptime: 14,
      pipelines: [
        pipeline(C, 'window-post', [['done', 3000, 300]], 3.9),
        pipeline(D, 'snap-update', [
          ['gpu', 9000, 1400],
          ...Array.from({ length: 15 }, (): PartSpec => ['synthesizing', 1500, null]),
        ]),
      ],
      workers: [idle(0, 0), idle(1, 0)],
      completed: { 'window-post': 2, 'snap-update': 1 },
      failed: { 'porep-c2': 1 },
    }),
    expect: (e) => {
      // Worker 0's stint ended while its partition is still on the GPU: credited what was seen.
      e.busy = { 0: 0, 1: 0 };
      e.mismatch = 1;
    },
  },
];

const COUNTERS = (s: Sample) => s.name.endsWith('_total') || s.name.endsWith('_count') || s.name.endsWith('_sum') || s.name.endsWith('_bucket');
const key = (s: Sample) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;

let h: Harness;

beforeAll(async () => {
  // No daemon: this test feeds the snapshots itself.
  h = await startHarness({ url: 'http://127.0.0.1:9/status' });
});

afterAll(async () => {
  await h.close();
});

test('counters are exact and never decrease through partitions finishing, a job aging out and a daemon restart', async () => {
  const e: Expected = {
    gpuNs: {},
    synthNs: {},
    partsCompleted: {},
    partsFailed: {},
    proofsCompleted: {},
    proofsFailed: {},
    workerBusyNs: {},
    busy: {},
    gpus: [],
    live: {},
    mismatch: 0,
    restarts: 0,
  };
  let previous = new Map<string, number>();
  for (const [i, step] of steps.entries()) {
    h.source.applyBody(step.body, step.t);
    step.expect(e);
    const { status, body } = await h.metrics();
    expect(status).toBe(200);
    const samples = parse(body);
    const at = `step ${i} (${step.what})`;
    const check = (name: string, labels: Record<string, string>, want: number) => {
      const got = find(samples, name, labels);
      if (got !== want) throw new Error(`${at}: ${name}${JSON.stringify(labels)} is ${got}, expected ${want}`);
    };

    expect([at, value(samples, 'cuzk_up')]).toEqual([at, 1]);
    check('cuzk_exporter_errors_total', { reason: 'restart' }, e.restarts);
    check('cuzk_status_mismatch', {}, e.mismatch);
    for (const k of KINDS) {
      const kind = { proof_kind: k };
      // Exact: the sum of cuzk's millisecond figures, as ns, divided by 1e9 once.
      check('cuzk_partition_gpu_seconds_total', kind, (e.gpuNs[k] ?? 0) / 1e9);
      check('cuzk_partition_synthesis_seconds_total', kind, (e.synthNs[k] ?? 0) / 1e9);
      check('cuzk_partitions_completed_total', kind, e.partsCompleted[k] ?? 0);
      check('cuzk_partitions_failed_total', kind, e.partsFailed[k] ?? 0);
      check('cuzk_proofs_completed_total', kind, e.proofsCompleted[k] ?? 0);
      check('cuzk_proofs_failed_total', kind, e.proofsFailed[k] ?? 0);
      for (const state of ['pending', 'synthesizing', 'synth_done', 'gpu'] as const) {
        check('cuzk_partitions', { ...kind, state }, e.live[k]?.[state] ?? 0);
      }
      // The GPU-duration histogram saw the same partitions (every failure in this script
      // happened on the GPU): same count, same sum; no series before the first one.
      const observed = (e.partsCompleted[k] ?? 0) + (e.partsFailed[k] ?? 0);
      const count = find(samples, 'cuzk_partition_gpu_duration_seconds_count', kind);
      expect([at, k, count]).toEqual([at, k, observed > 0 ? observed : undefined]);
      if (observed > 0) expect(find(samples, 'cuzk_partition_gpu_duration_seconds_sum', kind)).toBeCloseTo((e.gpuNs[k] ?? 0) / 1e9, 9);
    }

    // Workers: exactly the expected ones, with their busy seconds; the rest are gone.
    const workers = samples.filter((s) => s.name === 'cuzk_gpu_worker_busy_seconds_total').map((s) => Number(s.labels.worker));
    expect([at, workers.sort()]).toEqual([at, Object.keys(e.workerBusyNs).map(Number).sort()]);
    for (const [w, ns] of Object.entries(e.workerBusyNs)) {
      const s = samples.find((x) => x.name === 'cuzk_gpu_worker_busy_seconds_total' && x.labels.worker === w)!;
      if (Math.abs(s.value - ns / 1e9) > 1e-9) throw new Error(`${at}: worker ${w} busy seconds ${s.value}, expected ${ns / 1e9}`);
      check('cuzk_gpu_worker_busy', { gpu: s.labels.gpu, worker: w }, e.busy[Number(w)]);
    }
    const gpus = samples.filter((s) => s.name === 'cuzk_gpu_info').map((s) => s.labels.gpu);
    expect([at, gpus.sort()]).toEqual([at, e.gpus]);
    const workerSeriesNames = new Set(samples.filter((s) => s.labels.worker !== undefined).map((s) => s.labels.worker));
    expect([at, [...workerSeriesNames].sort()]).toEqual([at, Object.keys(e.busy).sort()]);

    // No counter (or histogram count/sum/bucket) went down since the previous step.
    const now = new Map(samples.filter(COUNTERS).map((s) => [key(s), s.value]));
    for (const [k, v] of previous) {
      const cur = now.get(k);
      if (cur !== undefined && cur < v) throw new Error(`${at}: ${k} went down from ${v} to ${cur}`);
    }
    previous = now;

    const lint = promtoolCheckMetrics(body);
    if (lint.skipped === undefined) expect([at, lint]).toEqual([at, { ok: true, output: '' }]);
  }
  // The script really exercised what it claims.
  expect(e.restarts).toBe(1);
  expect(e.gpuNs['snap-update']).toBeGreaterThan(0);
});

describe('sampled worker stints and restarts seen only through the counters', () => {
  let fresh: Harness;
  beforeEach(async () => {
    fresh = await startHarness({ url: 'http://127.0.0.1:9/status' });
  });
  afterEach(async () => {
    await fresh.close();
  });
  const busySeconds = async (w: number) => find((await fresh.metrics()).body, 'cuzk_gpu_worker_busy_seconds_total', { gpu: '0', worker: String(w) });

  test("a stint is credited at least what was seen running, so busy seconds never go down when the partition's GPU time is shorter", async () => {
    const X = 'ps-snap-x';
    const Y = 'ps-snap-y';
    // The worker owned X's partition 0.2 s before its GPU stage started.
    fresh.source.applyBody(snapshot({ uptime: 10, pipelines: [pipeline(X, 'snap-update', [['gpu', 9000, 300]])], workers: [proving(0, 0, X, 0, 0.5), idle(1, 0)] }), T0);
    expect(await busySeconds(0)).toBe(0.5);
    fresh.source.applyBody(snapshot({ uptime: 11, pipelines: [pipeline(X, 'snap-update', [['done', 9000, 400]])], workers: [idle(0, 0), idle(1, 0)] }), T0 + S);
    expect(await busySeconds(0)).toBe(0.5); // max(400 ms GPU time, 500 ms seen)
    fresh.source.applyBody(
      snapshot({ uptime: 12, pipelines: [pipeline(X, 'snap-update', [['done', 9000, 400]]), pipeline(Y, 'snap-update', [['gpu', 9000, 200]])], workers: [proving(0, 0, Y, 0, 0.2), idle(1, 0)] }),
      T0 + 2 * S,
    );
    expect(await busySeconds(0)).toBe(0.7);
    expect(find((await fresh.metrics()).body, 'cuzk_gpu_worker_partitions_total', { gpu: '0', worker: '0' })).toBe(1);
  });

  test('a daemon restart seen only through its cumulative counters going down still resets the baselines', async () => {
    // The exporter lost contact long enough for the new process' uptime to pass the old
    // one's; the daemon re-runs a job under the same id.
    const J = 'porep-f01234-s000001-1';
    fresh.source.applyBody(snapshot({ uptime: 100, pipelines: [pipeline(J, 'porep-c2', [['done', 38000, 2100]])], workers: [idle(0, 0)], completed: { 'porep-c2': 10 } }), T0);
    fresh.source.applyBody(snapshot({ uptime: 5000, pipelines: [pipeline(J, 'porep-c2', [['done', 37000, 2200]])], workers: [idle(0, 0)], completed: { 'porep-c2': 2 } }), T0 + 6000 * S);
    const body = (await fresh.metrics()).body;
    expect(value(body, 'cuzk_exporter_errors_total', { reason: 'restart' })).toBe(1);
    expect(warnings(fresh.logs).map((r) => r.msg)).toEqual(['daemon restarted (uptime 100s -> 5000s); keeping totals, resetting baselines']);
    expect(value(body, 'cuzk_proofs_completed_total', { proof_kind: 'porep-c2' })).toBe(2);
    // The re-run's partition is new work: counted (the first run's was the baseline).
    expect(value(body, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'porep-c2' })).toBe(2.2);
    expect(value(body, 'cuzk_partitions_completed_total', { proof_kind: 'porep-c2' })).toBe(1);
  });
});
