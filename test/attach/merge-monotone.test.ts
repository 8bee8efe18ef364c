/**
 * Every counter the exporter exports from an attached cuzk never goes down (Prometheus reads a
 * drop as a reset, and rate() then counts the whole total again), whichever surface drives the
 * workers and partitions at the moment and however it changes (TIMELINE silent for a window,
 * a log that appears late, a daemon restart with the pipeline on or off).
 *
 * A property over random scripts: a small cuzk (4 workers on 2 GPUs, PoRep and SnapDeals jobs
 * of 2 partitions) is played step by step, and each attached surface is fed what that cuzk
 * would show it (the merge-rig: no servers, no timers). At every collection the counters are
 * read exactly as the exporter reads them (StateMetricProducer.metrics(), the code behind
 * /metrics) and each series is compared with its previous value.
 */
import fc from 'fast-check';
import type { Resource } from '@opentelemetry/resources';
import { DataPointType } from '@opentelemetry/sdk-metrics';
import * as surfaceClock from '../../src/engine/sources/attach/surface';
import { StateMetricProducer } from '../../src/exporter/state-metrics';
import { Rig, RigOptions, pick, realHr, rig } from './merge-rig';
import { idle, Pipeline, PartState, proving, snapshot, Worker } from './snapshots';
import { tl } from './timeline-driver';

/**
 * The exporter's clock: a fixed start plus the script's time (the daemon's and ours move
 * together), and nothing else, so a script replays exactly (the real clock would move the
 * 60 s evidence windows by the time the test itself takes).
 */
let baseHr = 0;
let skewNs = 0;
beforeEach(() => {
  jest.spyOn(surfaceClock, 'hrNowNs').mockImplementation(() => baseHr + skewNs);
});
afterEach(() => jest.restoreAllMocks());

const WORKERS = 4;
const PARTS = 2;
const KINDS = [
  { status: 'porep-c2', grpc: 'porep_c2', id: (n: number) => `porep-1000-${n}` },
  { status: 'snap-update', grpc: 'snap_update', id: (n: number) => `snap-1000-${n}` },
  // No Curio id: the kind known from /status or GetStatus only (TIMELINE alone: "other").
  { status: 'snap-update', grpc: 'snap_update', id: (n: number) => `job-${n}` },
];

type Step =
  | { k: 'wait'; ms: number; poll?: boolean }
  | { k: 'submit'; kind: number }
  | { k: 'synth'; job: number }
  | { k: 'synthEnd'; job?: number }
  | { k: 'pickup'; w: number; job: number }
  | { k: 'end'; w: number }
  | { k: 'status' }
  | { k: 'grpcStatus' }
  | { k: 'grpcMetrics' }
  | { k: 'appear' }
  | { k: 'restart'; pipeline: boolean; downMs: number }
  | { k: 'collect' }
  /** A whole proof on one worker: submitted, each partition synthesized and proven in turn. */
  | { k: 'proof'; kind: number; w: number; ms: number; poll: boolean };

type DState = 'pending' | 'synthesizing' | 'synth_done' | 'gpu' | 'done';
interface Job {
  id: string;
  kind: number;
  startT: number;
  parts: DState[];
  synthT: number[];
  synthMs: (number | null)[];
  gpuMs: (number | null)[];
}

/** One life of the scripted cuzk: what it has in memory (every counter starts at 0). */
interface Life {
  startT: number;
  /** TIMELINE offset at startT: the first life has been up 100 s when the script starts. */
  offBase: number;
  pipeline: boolean;
  jobs: Job[];
  workers: ({ job: Job; part: number; pickT: number } | null)[];
  completed: number[];
}

/** Plays a script on a merge of the chosen surfaces; throws at the first counter going down. */
function play(o: RigOptions, steps: Step[], appearAt = 0, scrapeEach = false): void {
  baseHr = realHr();
  skewNs = 0;
  const r: Rig = rig(o);
  // Daemon offset 0 is 1 s back; the exporter's clock follows the script.
  (r as unknown as { epochHr: number }).epochHr = baseHr - 1e9;
  let t = 0;
  let seq = 0;
  let feedUp = false;
  let life: Life = { startT: 0, offBase: 100_000, pipeline: true, jobs: [], workers: new Array(WORKERS).fill(null), completed: KINDS.map(() => 0) };
  const off = () => life.offBase + t - life.startT;
  const uptime = () => off() / 1000;
  const write = (...lines: string[]) => {
    // The daemon writes TIMELINE only with its pipeline on; lines before the log appears are lost.
    if (!r.src.timeline || !life.pipeline || !feedUp) return;
    r.src.timeline.lines(lines.join(''), false, r.hr(t));
    r.src.timeline.caughtUp(r.hr(t));
  };
  const finish = (job: Job) => {
    if (!job.parts.every((p) => p === 'done')) return;
    life.completed[job.kind]++;
    life.jobs = life.jobs.filter((j) => j !== job);
  };

  const producer = new StateMetricProducer({
    model: r.src.model,
    info: { version: 'test', source: 'attach', backend: 'cuzk' },
    nowNs: () => r.src.nowNs(),
    runningTotals: () => null,
    lastCollectSeconds: () => 0,
    resource: {} as Resource, // not read by metrics()
    surfaces: () => r.src.surfaceStates(),
    kindResolutions: () => r.src.kindResolutions(),
  });
  const last = new Map<string, number>();
  const collect = (at: number) => {
    r.src.refresh();
    for (const d of producer.metrics()) {
      if (d.dataPointType !== DataPointType.SUM) continue;
      for (const p of d.dataPoints) {
        const key = `${d.descriptor.name}${JSON.stringify(p.attributes)}`;
        const v = p.value as number;
        const prev = last.get(key);
        if (prev !== undefined && v < prev) throw new Error(`step ${at}: ${key} went down ${prev} -> ${v} (driver ${r.src.currentDriver})`);
        last.set(key, v);
      }
    }
  };

  const apply = (s: Step, i: number): void => {
    switch (s.k) {
      case 'wait':
        t += s.ms;
        skewNs = t * 1e6;
        if (r.src.timeline && feedUp) r.src.timeline.caughtUp(r.hr(t));
        // The exporter polls on its own: every surface answers once the time has passed.
        if (s.poll) for (const k of ['grpcMetrics', 'grpcStatus', 'status'] as const) apply({ k }, i);
        break;
      case 'submit': {
        if (life.jobs.length >= 3) break;
        const kd = KINDS[s.kind];
        life.jobs.push({ id: kd.id(++seq), kind: s.kind, startT: t, parts: new Array(PARTS).fill('pending'), synthT: [], synthMs: [], gpuMs: [] });
        break;
      }
      case 'synth': {
        const job = life.jobs[s.job % Math.max(1, life.jobs.length)];
        const p = life.pipeline && job ? job.parts.indexOf('pending') : -1;
        if (p < 0) break;
        job.parts[p] = 'synthesizing';
        job.synthT[p] = t;
        write(tl(off(), 'SYNTH_START', job.id, `partition=${p}`));
        break;
      }
      case 'synthEnd':
        for (const job of s.job === undefined ? life.jobs : [life.jobs[s.job]]) {
          const p = job.parts.indexOf('synthesizing');
          if (p < 0) continue;
          job.parts[p] = 'synth_done';
          job.synthMs[p] = t - job.synthT[p];
          write(tl(off(), 'SYNTH_END', job.id, `partition=${p},synth_ms=${t - job.synthT[p]}`), tl(off(), 'GPU_QUEUE', job.id, `partition=${p}`));
          break;
        }
        break;
      case 'pickup': {
        if (life.workers[s.w]) break;
        const job = life.jobs[s.job % Math.max(1, life.jobs.length)];
        if (!job) break;
        if (!life.pipeline) {
          // Phase 1: a worker per GPU proves a whole job; no TIMELINE, /status never moves.
          if (s.w % 2 !== 0 || job.parts[0] !== 'pending' || life.workers.some((w) => w?.job === job)) break;
          life.workers[s.w] = { job, part: -1, pickT: t };
          break;
        }
        const p = job.parts.indexOf('synth_done');
        if (p < 0) break;
        job.parts[p] = 'gpu';
        life.workers[s.w] = { job, part: p, pickT: t };
        write(tl(off(), 'GPU_PICKUP', job.id, `worker=${s.w},partition=${p}`), tl(off(), 'GPU_START', job.id, `worker=${s.w},partition=${p}`));
        break;
      }
      case 'end': {
        const w = life.workers[s.w];
        if (!w) break;
        life.workers[s.w] = null;
        if (w.part < 0) {
          w.job.parts.fill('done');
        } else {
          w.job.parts[w.part] = 'done';
          w.job.gpuMs[w.part] = t - w.pickT;
          write(tl(off(), 'GPU_END', w.job.id, `worker=${s.w},partition=${w.part},gpu_ms=${t - w.pickT}`));
        }
        finish(w.job);
        break;
      }
      case 'status': {
        if (!r.src.status) break;
        const pipelines: Pipeline[] = life.pipeline
          ? life.jobs.map((j) => ({
              job_id: j.id,
              proof_kind: KINDS[j.kind].status,
              started_secs_ago: (t - j.startT) / 1000,
              total_partitions: PARTS,
              partitions_done: j.parts.filter((p) => p === 'done').length,
              partitions: j.parts.map((state, index) => ({ index, state: state as PartState, synth_ms: j.synthMs[index] ?? null, gpu_ms: j.gpuMs[index] ?? null })),
            }))
          : [];
        const workers: Worker[] = life.workers.map((w, id) =>
          w && w.part >= 0 ? proving(id, id >> 1, w.job.id, w.part, (t - w.pickT) / 1000) : idle(id, id >> 1),
        );
        const completed: Record<string, number> = {};
        KINDS.forEach((kd, k) => (completed[kd.status] = (completed[kd.status] ?? 0) + life.completed[k]));
        r.status(t, snapshot({ uptime: uptime(), pipelines, workers, completed }));
        break;
      }
      case 'grpcStatus':
        if (!r.src.grpc) break;
        r.grpcStatus(
          t,
          life.workers.map((w, id) => ({ ordinal: id >> 1, job: w?.job.id, kind: w ? KINDS[w.job.kind].status : undefined })),
          [],
          uptime(),
        );
        break;
      case 'grpcMetrics': {
        if (!r.src.grpc) break;
        const completed: Record<string, number> = {};
        KINDS.forEach((kd, k) => (completed[kd.grpc] = (completed[kd.grpc] ?? 0) + life.completed[k]));
        r.grpcMetrics({ uptime: uptime(), completed, workers: WORKERS });
        break;
      }
      case 'appear':
        if (!r.src.timeline || feedUp) break;
        feedUp = true;
        r.src.timelineFeed(true, 'the log appears');
        r.src.timeline.caughtUp(r.hr(t));
        break;
      case 'restart':
        // Down for a while, then a fresh process: nothing of the old one in memory.
        t += s.downMs;
        skewNs = t * 1e6;
        life = { startT: t, offBase: 0, pipeline: s.pipeline, jobs: [], workers: new Array(WORKERS).fill(null), completed: KINDS.map(() => 0) };
        break;
      case 'collect':
        collect(i);
        break;
      case 'proof': {
        const w = life.pipeline ? s.w : s.w & ~1;
        if (life.workers[w] || life.jobs.length >= 3) break;
        apply({ k: 'submit', kind: s.kind }, i);
        const job = life.jobs.length - 1;
        for (let p = 0; p < (life.pipeline ? PARTS : 1); p++) {
          apply({ k: 'synth', job }, i);
          apply({ k: 'wait', ms: s.ms }, i);
          apply({ k: 'synthEnd', job }, i);
          apply({ k: 'pickup', w, job }, i);
          apply({ k: 'wait', ms: s.ms }, i);
          apply({ k: 'end', w }, i);
        }
        if (s.poll) apply({ k: 'grpcMetrics' }, i);
        break;
      }
    }
  };
  steps.forEach((s, i) => {
    if (i === appearAt) apply({ k: 'appear' }, i);
    apply(s, i);
    if (scrapeEach) collect(i);
  });
  collect(steps.length);
}

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ k: fc.constant('wait' as const), ms: fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 9000, max: 65_000 })), poll: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('submit' as const), kind: fc.integer({ min: 0, max: KINDS.length - 1 }) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('synth' as const), job: fc.nat(2) }) },
  { weight: 3, arbitrary: fc.constant({ k: 'synthEnd' as const }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('pickup' as const), w: fc.nat(WORKERS - 1), job: fc.nat(2) }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('end' as const), w: fc.nat(WORKERS - 1) }) },
  { weight: 2, arbitrary: fc.constant({ k: 'status' as const }) },
  { weight: 2, arbitrary: fc.constant({ k: 'grpcStatus' as const }) },
  { weight: 3, arbitrary: fc.constant({ k: 'grpcMetrics' as const }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('proof' as const), kind: fc.integer({ min: 0, max: KINDS.length - 1 }), w: fc.nat(WORKERS - 1), ms: fc.integer({ min: 1, max: 20_000 }), poll: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('restart' as const), pipeline: fc.boolean(), downMs: fc.integer({ min: 500, max: 5000 }) }) },
  { weight: 6, arbitrary: fc.constant({ k: 'collect' as const }) },
);

// Every non-empty combination; those where the driver can switch (TIMELINE and another) more often.
const surfaces = fc.oneof(
  { weight: 3, arbitrary: fc.record({ status: fc.boolean(), grpc: fc.boolean(), timeline: fc.boolean() }).filter((o) => o.status || o.grpc || o.timeline) },
  { weight: 2, arbitrary: fc.record({ status: fc.boolean(), grpc: fc.constant(true), timeline: fc.constant(true) }) },
  { weight: 1, arbitrary: fc.record({ status: fc.constant(true), grpc: fc.boolean(), timeline: fc.constant(true) }) },
);

test('no exported counter ever goes down, whatever drives the workers and partitions', () => {
  fc.assert(
    fc.property(
      surfaces,
      fc.array(step, { minLength: 10, maxLength: 150, size: 'large' }),
      // When the TIMELINE file appears (a step index; past the end: never).
      fc.oneof(fc.constant(0), fc.nat(150)),
      // A collection after every step, or only at the script's collect steps.
      fc.boolean(),
      (o, steps, appearAt, scrapeEach) => play(o, steps, appearAt, scrapeEach),
    ),
    // MONOTONE_RUNS=5000 for a longer hunt; shrinking a 150-step script is bounded in time.
    { numRuns: Number(process.env.MONOTONE_RUNS ?? 200), interruptAfterTimeLimit: 30_000 },
  );
});



describe('shrunk counterexamples, as plain scripts', () => {
  test('TIMELINE → gRPC while gRPC has a worker busy: its running stint is exposed only as far as gRPC saw it, never taken back at the idle sample', () => {
    // TIMELINE saw a partition end in the daemon's first life; it restarted with its pipeline
    // off (no line tells TIMELINE, whose file is read on: its clock moves with the reads).
    // GetStatus samples worker 0 on a job at 1 s and 20 s, idle at 62 s.
    baseHr = realHr();
    skewNs = 0;
    const r = rig({ grpc: true, timeline: true });
    (r as unknown as { epochHr: number }).epochHr = baseHr - 1e9; // offset t ms is read at t ms (+ 2 ms)
    const busySecs = () => {
      r.src.refresh();
      return r.src.model.workerBusyNsAt(r.slot(0), r.src.nowNs()) / 1e9; // what /metrics exports
    };
    r.src.timelineFeed(true, 'up');
    r.lines(600, ...pick(1, 0, 500, 'porep-1000-6'), tl(600, 'GPU_END', 'porep-1000-6', 'worker=1,partition=0,gpu_ms=100'));
    r.grpcMetrics({ uptime: 0.3, completed: {} });
    const workers = (job?: string) => [{ ordinal: 0, job, kind: job ? 'porep-c2' : undefined }, { ordinal: 0 }];
    r.grpcStatus(1000, workers('porep-1000-7'), [], 0.3);
    r.readTo(1000);
    expect(busySecs()).toBe(0); // TIMELINE drives (worker 0 idle there); the evidence window starts
    skewNs = 20e9;
    r.grpcStatus(20_000, workers('porep-1000-7'), [], 19.3); // still on it
    skewNs = 30e9;
    r.readTo(30_000);
    expect(busySecs()).toBe(0); // a collection: the exporter's clock is TIMELINE's, about 29 s
    skewNs = 61e9;
    r.readTo(61_000);
    r.grpcMetrics({ uptime: 60.3, completed: { porep_c2: 2 } }); // two proofs ended, no TIMELINE line
    const during = busySecs();
    expect(r.src.currentDriver).toBe('grpc');
    r.grpcStatus(62_000, workers(), [], 61.3); // idle now; gRPC credits the stint up to its 1 s sample
    const after = busySecs();
    // gRPC saw the stint from 1 s to 20 s: that is what it credits at the idle sample, so that
    // is all the running stint may show before (the exporter's clock, TIMELINE's, was at 29 s).
    expect([during, after]).toEqual([19, 19]);
  });

  test('TIMELINE → gRPC with gRPC’s running stint longer than what TIMELINE had exposed: that stint is counted once, never taken back when it ends', () => {
    // TIMELINE saw worker 0 prove for 2 s in the daemon's first life; it restarted with its
    // pipeline off. GetStatus samples worker 0 on a job at 3 s and 8 s (5 s seen), idle at 62 s.
    baseHr = realHr();
    skewNs = 0;
    const r = rig({ grpc: true, timeline: true });
    (r as unknown as { epochHr: number }).epochHr = baseHr - 1e9;
    const busySecs = () => {
      r.src.refresh();
      return r.src.model.workerBusyNsAt(r.slot(0), r.src.nowNs()) / 1e9;
    };
    const workers = (job?: string) => [{ ordinal: 0, job, kind: job ? 'porep-c2' : undefined }, { ordinal: 0 }];
    r.src.timelineFeed(true, 'up');
    r.lines(2500, ...pick(0, 0, 500, 'porep-1000-6'), tl(2500, 'GPU_END', 'porep-1000-6', 'worker=0,partition=0,gpu_ms=2000'));
    r.grpcMetrics({ uptime: 0.3, completed: {} });
    r.grpcStatus(3000, workers('porep-1000-7'), [], 0.3);
    r.readTo(3000);
    const seen = [busySecs()]; // TIMELINE drives; the evidence window starts
    skewNs = 8e9;
    r.grpcStatus(8000, workers('porep-1000-7'), [], 5.3);
    skewNs = 30e9;
    r.readTo(30_000);
    seen.push(busySecs());
    skewNs = 61e9;
    r.readTo(61_000);
    r.grpcMetrics({ uptime: 58.3, completed: { porep_c2: 2 } }); // two proofs ended, no TIMELINE line
    seen.push(busySecs());
    expect(r.src.currentDriver).toBe('grpc');
    r.grpcStatus(62_000, workers(), [], 59.3); // idle: gRPC credits 3 s -> 8 s
    seen.push(busySecs());
    // TIMELINE's 2 s (ended, nothing of it running: gRPC's stint is another) and gRPC's 5 s,
    // running at the switch and ended alike.
    expect(seen).toEqual([2, 2, 7, 7]);
  });
});

