/**
 * Attach-mode poll overhead (issue #4): the CPU one poll of a large cuzk daemon costs the
 * exporter — 64 GPU workers on 8 GPUs and 50 jobs × 16 partitions in the snapshot.
 *
 * The daemon is simulated one second per poll: GPU stages of 0.6-2.5 s (SnapDeals- to
 * PoRep-like) end and workers take the next synthesized partition, syntheses progress and
 * start, finished jobs stay 30 s in the snapshot and are then replaced by new ones — so
 * every poll brings tens of finished partitions and new stints and a new or finished job
 * now and then, as a busy box does.
 *
 * Measured with process.cpuUsage() (user + system, all threads of this process):
 *  - apply:   JSON.parse + validate + apply of the body (text produced beforehand);
 *  - polled:  AttachSource.pollOnce() against an HTTP server on 127.0.0.1 in a separate
 *             process (the daemon's own CPU is not ours): fetch + parse + validate + apply;
 *  - scrape:  one Telemetry.scrape() of the resulting model (for reference).
 * Median and p99 over `polls` polls after `warmup` polls. Performance is measured here,
 * never asserted in tests.
 *
 * Run: npx tsc -p tsconfig.json && node dist/bench/attach-poll.js [--polls N] [--out FILE]
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { AttachSource } from '../src/engine/attach-source';
import { Telemetry } from '../src/exporter/telemetry';
import { silentLogger } from '../src/util/logger';
import { rng } from './lib/stats';

export interface AttachPollOptions {
  polls?: number;
  warmup?: number;
  workers?: number;
  gpus?: number;
  jobs?: number;
  partitionsPerJob?: number;
}

export interface Stats {
  medianMs: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
}

export interface AttachPollResult {
  machine: { cpu: string; cores: number; node: string; platform: string };
  snapshot: { workers: number; gpus: number; jobs: number; partitionsPerJob: number; bodyBytesMedian: number; partitionsFinishedPerPoll: number; eventsPerPoll: number };
  polls: number;
  /** CPU of parse + validate + apply. */
  applyCpu: Stats;
  /** CPU of a whole poll over loopback HTTP (fetch + parse + validate + apply). */
  pollCpu: Stats;
  /** Wall time of a whole poll over loopback HTTP. */
  pollWall: Stats;
  /** CPU of one /metrics collection + serialisation of the resulting model. */
  scrapeCpu: Stats;
  budgetMs: number;
  withinBudget: boolean;
}

interface SimPart {
  state: 'pending' | 'synthesizing' | 'synth_done' | 'gpu' | 'done' | 'failed';
  synth_ms: number | null;
  gpu_ms: number | null;
  synthDur: number;
  gpuDur: number;
  /** Simulation time (ms) the GPU stage started. */
  gpuStart: number;
}
interface SimJob {
  id: string;
  kind: string;
  submitted: number;
  finishedAt: number | null;
  parts: SimPart[];
}
interface SimWorker {
  id: number;
  gpu: number;
  job: SimJob | null;
  part: number;
}

/** A busy cuzk box, one step per second of its time. */
export class DaemonSim {
  t = 0;
  private readonly rand = rng(42);
  private readonly jobs: SimJob[] = [];
  private readonly workers: SimWorker[];
  private completed: Record<string, number> = { 'snap-update': 1000, 'porep-c2': 200 };
  private nextJob = 0;
  finishedLastStep = 0;

  constructor(
    nJobs: number,
    private readonly partsPerJob: number,
    nWorkers: number,
    nGpus: number,
    private readonly synthMax = 96,
  ) {
    this.workers = Array.from({ length: nWorkers }, (_, i) => ({ id: i, gpu: Math.floor((i * nGpus) / nWorkers), job: null, part: -1 }));
    for (let i = 0; i < nJobs; i++) this.jobs.push(this.newJob());
  }

  private newJob(): SimJob {
    const n = this.nextJob++;
    const hex = (n * 2654435761 >>> 0).toString(16).padStart(8, '0');
    return {
      id: `ps-snap-${hex}-41d8-4b6a-9a0e-${n.toString(16).padStart(12, '0')}`,
      kind: 'snap-update',
      submitted: this.t,
      finishedAt: null,
      parts: Array.from({ length: this.partsPerJob }, () => ({
        state: 'pending' as const,
        synth_ms: null,
        gpu_ms: null,
        synthDur: 2000 + Math.floor(this.rand() * 6000),
        gpuDur: 600 + Math.floor(this.rand() * 1900),
        gpuStart: 0,
      })),
    };
  }

  step(): void {
    this.t++;
    this.finishedLastStep = 0;
    const nowMs = this.t * 1000;
    // GPU stages that ended during the last second; the others run on.
    for (const w of this.workers) {
      if (!w.job) continue;
      const p = w.job.parts[w.part];
      if (nowMs - p.gpuStart < p.gpuDur) {
        p.gpu_ms = nowMs - p.gpuStart;
        continue;
      }
      p.state = 'done';
      p.gpu_ms = p.gpuDur;
      this.finishedLastStep++;
      w.job = null;
      w.part = -1;
    }
    let synthesizing = 0;
    for (const j of this.jobs) {
      for (const p of j.parts) {
        if (p.state !== 'synthesizing') continue;
        p.synth_ms = Math.min(p.synthDur, (p.synth_ms ?? 0) + 1000);
        if (p.synth_ms >= p.synthDur) p.state = 'synth_done';
        else synthesizing++;
      }
    }
    // Finished jobs: counted, kept 30 s, then replaced by new ones.
    for (let i = 0; i < this.jobs.length; i++) {
      const j = this.jobs[i];
      if (j.finishedAt === null && j.parts.every((p) => p.state === 'done')) {
        j.finishedAt = this.t;
        this.completed[j.kind] = (this.completed[j.kind] ?? 0) + 1;
      }
      if (j.finishedAt !== null && this.t - j.finishedAt > 30) this.jobs[i] = this.newJob();
    }
    for (const j of this.jobs) {
      for (const p of j.parts) {
        if (synthesizing >= this.synthMax) break;
        if (p.state === 'pending') {
          p.state = 'synthesizing';
          p.synth_ms = 0;
          synthesizing++;
        }
      }
    }
    // Idle workers take synthesized partitions, oldest job first, some time in the last second.
    const free = this.workers.filter((x) => !x.job);
    let w = 0;
    for (const j of this.jobs) {
      for (let i = 0; i < j.parts.length && w < free.length; i++) {
        const p = j.parts[i];
        if (p.state !== 'synth_done') continue;
        p.state = 'gpu';
        p.gpu_ms = 50 + Math.floor(this.rand() * 500);
        p.gpuStart = nowMs - p.gpu_ms;
        free[w].job = j;
        free[w].part = i;
        w++;
      }
    }
  }

  snapshot(): Record<string, unknown> {
    const synthActive = this.jobs.reduce((a, j) => a + j.parts.filter((p) => p.state === 'synthesizing').length, 0);
    const queued = this.jobs.filter((j) => j.parts.every((p) => p.state === 'pending')).length;
    return {
      uptime_secs: 86400 + this.t,
      memory: { total_bytes: 1099511627776, used_bytes: 601295421440, available_bytes: 498216206336 },
      synthesis: { max_concurrent: this.synthMax, active: synthActive },
      pipelines: this.jobs.map((j) => ({
        job_id: j.id,
        proof_kind: j.kind,
        started_secs_ago: this.t - j.submitted + 0.25,
        total_partitions: j.parts.length,
        partitions_done: j.parts.filter((p) => p.state === 'done').length,
        partitions: j.parts.map((p, index) => ({ index, state: p.state, synth_ms: p.synth_ms, gpu_ms: p.gpu_ms })),
      })),
      gpu_workers: this.workers.map((w) => ({
        worker_id: w.id,
        gpu_ordinal: w.gpu,
        state: w.job ? 'proving' : 'idle',
        current_job: w.job ? w.job.id : null,
        current_partition: w.job ? w.part : null,
        busy_secs: w.job ? (w.job.parts[w.part].gpu_ms ?? 0) / 1000 : null,
      })),
      allocations: { srs: [{ circuit_id: 'snap-32g', bytes: 48318382080, last_used_secs_ago: 0.1, evictable: false }], pce: [] },
      counters: {
        total_completed: Object.values(this.completed).reduce((a, b) => a + b, 0),
        total_failed: 0,
        completed_by_kind: { ...this.completed },
        failed_by_kind: {},
        queue_depth: queued,
      },
      buffers: { synth_in_flight: synthActive, provers_in_flight: 0, aux_in_flight: 0, shells_in_flight: 0, pending_handles: 0 },
    };
  }
}

function stats(xs: number[]): Stats {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
  const r = (v: number) => Math.round(v * 1000) / 1000;
  return { medianMs: r(q(0.5)), p99Ms: r(q(0.99)), meanMs: r(s.reduce((a, b) => a + b, 0) / s.length), maxMs: r(s[s.length - 1]) };
}

const cpuMs = (d: NodeJS.CpuUsage) => (d.user + d.system) / 1000;

/** The stand-in daemon: an HTTP server in its own process, serving the body it is sent. */
const DAEMON_SCRIPT = `
const http = require('node:http');
let body = Buffer.from('{}');
const srv = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
});
process.on('message', (m) => { body = Buffer.from(m, 'utf8'); process.send('ok'); });
srv.listen(0, '127.0.0.1', () => process.send({ port: srv.address().port }));
process.on('disconnect', () => process.exit(0));
`;

class DaemonProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static start(): Promise<DaemonProcess> {
    const child = spawn(process.execPath, ['-e', DAEMON_SCRIPT], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('message', (m: { port: number }) => resolve(new DaemonProcess(child, `http://127.0.0.1:${m.port}/status`)));
    });
  }

  setBody(text: string): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('message', () => resolve());
      this.child.send(text);
    });
  }

  stop(): void {
    this.child.disconnect();
  }
}

export async function benchAttachPoll(opts: AttachPollOptions = {}): Promise<AttachPollResult> {
  const polls = opts.polls ?? 200;
  const warmup = opts.warmup ?? 60;
  const nWorkers = opts.workers ?? 64;
  const nGpus = opts.gpus ?? 8;
  const nJobs = opts.jobs ?? 50;
  const partsPerJob = opts.partitionsPerJob ?? 16;
  const budgetMs = 5;

  const sim = new DaemonSim(nJobs, partsPerJob, nWorkers, nGpus);
  const daemon = await DaemonProcess.start();
  const mk = (url: string) => new AttachSource({ url, pollIntervalMs: 1000, timeoutMs: 5000, maxBodyBytes: 16 << 20, logger: silentLogger });
  const direct = mk('http://bench.invalid/status'); // fed with applyBody
  const polled = mk(daemon.url); // polls the daemon process
  const telemetry = new Telemetry(direct, { version: 'bench', logger: silentLogger });

  const apply: number[] = [];
  const poll: number[] = [];
  const pollWall: number[] = [];
  const scrape: number[] = [];
  const sizes: number[] = [];
  const finished: number[] = [];
  const events: number[] = [];
  let clock = 1e12;
  try {
    for (let i = 0; i < warmup + polls; i++) {
      sim.step();
      const text = JSON.stringify(sim.snapshot());
      clock += 1e9;
      const measure = i >= warmup;

      const ev0 = direct.model.eventsTotal;
      const c0 = process.cpuUsage();
      direct.applyBody(JSON.parse(text), clock);
      const c1 = process.cpuUsage(c0);
      if (!direct.model.up) throw new Error('the simulated snapshot was rejected');

      const s0 = process.cpuUsage();
      await telemetry.scrape();
      const s1 = process.cpuUsage(s0);

      await daemon.setBody(text);
      const p0 = process.cpuUsage();
      const w0 = process.hrtime.bigint();
      await polled.pollOnce();
      const w1 = process.hrtime.bigint();
      const p1 = process.cpuUsage(p0);
      if (!polled.model.up) throw new Error(`poll failed: ${polled.model.errors.lastMessage}`);

      if (measure) {
        apply.push(cpuMs(c1));
        scrape.push(cpuMs(s1));
        poll.push(cpuMs(p1));
        pollWall.push(Number(w1 - w0) / 1e6);
        sizes.push(text.length);
        finished.push(sim.finishedLastStep);
        events.push(direct.model.eventsTotal - ev0);
      }
    }
  } finally {
    daemon.stop();
    await polled.stop();
    await telemetry.shutdown();
  }
  const median = (xs: number[]) => stats(xs).medianMs;
  const result: AttachPollResult = {
    machine: { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, node: process.version, platform: `${os.platform()} ${os.arch()}` },
    snapshot: {
      workers: nWorkers,
      gpus: nGpus,
      jobs: nJobs,
      partitionsPerJob: partsPerJob,
      bodyBytesMedian: Math.round(median(sizes)),
      partitionsFinishedPerPoll: median(finished),
      eventsPerPoll: median(events),
    },
    polls,
    applyCpu: stats(apply),
    pollCpu: stats(poll),
    pollWall: stats(pollWall),
    scrapeCpu: stats(scrape),
    budgetMs,
    withinBudget: stats(poll).medianMs < budgetMs,
  };
  return result;
}

if (require.main === module) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const polls = arg('--polls');
  benchAttachPoll({ polls: polls ? Number(polls) : undefined }).then(
    (r) => {
      const text = JSON.stringify(r, null, 2);
      process.stdout.write(text + '\n');
      const out = arg('--out');
      if (out) fs.writeFileSync(out, text + '\n');
    },
    (e: Error) => {
      process.stderr.write(`attach-poll benchmark failed: ${e.stack ?? e.message}\n`);
      process.exit(1);
    },
  );
}
