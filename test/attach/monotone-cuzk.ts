/**
 * The scripted cuzk of merge-monotone.test.ts: a small cuzk played step by step along upstream's
 * paths, each attached surface fed what upstream's code would show it, and the exported counters
 * checked at every collection (never down, never past what this cuzk did). The upstream paths
 * modelled and the bounds are listed in the test's header; `play` throws at the first breach.
 */
import fc from 'fast-check';
import type { Resource } from '@opentelemetry/resources';
import { DataPointType } from '@opentelemetry/sdk-metrics';
import { StateMetricProducer } from '../../src/exporter/state-metrics';
import { Rig, RigOptions, pick, realHr, rig } from './merge-rig';
import { idle, Pipeline, PartState, pipeline, proving, snapshot, Worker } from './snapshots';
import { tl } from './timeline-driver';

/**

/**
 * The exporter's clock: a fixed start plus the script's time (the daemon's and ours move
 * together), and nothing else, so a script replays exactly (the real clock would move the
 * 60 s evidence windows by the time the test itself takes). The test mocks hrNowNs with it.
 */
export const clock = { baseHr: 0, skewNs: 0 };

const WORKERS = 4;
const PARTS = 2;
interface KindDef {
  status: string;
  grpc: string;
  id: (n: number) => string;
  /** Monolithic (process_batch standard path): one SYNTH_START kind=..., GPU lines without partition. */
  mono?: boolean;
  /** Requests in the batch (ids n, n+1...; only the first is ever written). */
  requests?: number;
  /** A SnapDeals batch: every request fails at the split (P split_batched_proofs). */
  splitFails?: boolean;
  /** WindowPoSt: GPU_END's partition= (the request's partition_index). */
  postPartition?: (n: number) => number;
}
export const KINDS: KindDef[] = [
  { status: 'porep-c2', grpc: 'porep_c2', id: (n) => `porep-1000-${n}` },
  { status: 'snap-update', grpc: 'snap_update', id: (n) => `snap-1000-${n}` },
  // No Curio id: the kind known from /status or GetStatus only (TIMELINE alone: "other").
  { status: 'snap-update', grpc: 'snap_update', id: (n) => `job-${n}` },
  // lib/ffi/cuzk_funcs.go: Go's %d of randomness[:8] prints "[a b ...]"; %x prints hex.
  { status: 'window-post', grpc: 'window_post', id: (n) => `wdpost-1000-${n % 3}-[${n} 7 1 9 2 8 3 6]`, mono: true, postPartition: (n) => n % 3 },
  { status: 'winning-post', grpc: 'winning_post', id: (n) => `winpost-1000-${(0x1f2e3d4c5b6a7000 + n).toString(16)}`, mono: true },
  { status: 'porep-c2', grpc: 'porep_c2', id: (n) => `porep-1000-${n}`, mono: true, requests: 2 },
  { status: 'snap-update', grpc: 'snap_update', id: (n) => `snap-1000-${n}`, mono: true, requests: 2, splitFails: true },
];

export type Step =
  | { k: 'wait'; ms: number; poll?: boolean }
  | { k: 'submit'; kind: number }
  /** The next synthesis: of monolithic job `job` if it names one, else the dispatcher's next partition. */
  | { k: 'synth'; job: number }
  /** The `i`-th running synthesis ends (fails). */
  | { k: 'synthEnd'; i?: number }
  | { k: 'synthFail'; i: number }
  /** Worker `w` takes the GPU queue's first item (pipeline off: the next whole job). */
  | { k: 'pickup'; w: number; job: number }
  /** Split proving: gpu_prove_start returned; the worker is free, its finalizer runs. */
  | { k: 'release'; w: number }
  /** Worker w's oldest finalizer (or its stage) ends: GPU_END; `bad`: a PoRep self-check fails. */
  | { k: 'end'; w: number; bad?: boolean }
  | { k: 'finishFail'; w: number }
  | { k: 'startFail'; w: number }
  | { k: 'status' }
  | { k: 'grpcStatus' }
  | { k: 'grpcMetrics' }
  /** gRPC answers nothing for `ms` from now (every call fails; the surface reads down). */
  | { k: 'grpcDown'; ms: number }
  | { k: 'appear' }
  | { k: 'restart'; pipeline: boolean; downMs: number }
  | { k: 'collect' }
  /** A whole proof on one worker: submitted, each partition synthesized and proven in turn. */
  | { k: 'proof'; kind: number; w: number; ms: number; poll: boolean; split?: boolean };

type DState = 'pending' | 'synthesizing' | 'synth_done' | 'gpu' | 'done' | 'failed';
/** A stage's time, for the bounds: open (end null) until it ends or its life does. */
interface Span {
  t0: number;
  end: number | null;
}
interface Job {
  id: string;
  kind: number;
  seq: number;
  mono: boolean;
  startT: number;
  /** As /status shows them (status.rs PartitionPhase); a monolithic job's one stage likewise (never shown). */
  parts: DState[];
  /** Dropped at dispatch (its job failed): never synthesized, `pending` in /status forever. */
  dropped: boolean[];
  /** Partitions in the assembler (engine.rs ProofAssembler::insert). */
  proven: boolean[];
  synthT: (number | null)[];
  synthEndT: (number | null)[];
  gpuT: (number | null)[];
  gpuEndT: (number | null)[];
  /** engine.rs assemblers[..].failed */
  failed: boolean;
  /** A gpu_prove_start failure: it can never assemble. */
  stuck: boolean;
  /** The engine is done with it (assembled, or a monolithic job ended). */
  dead: boolean;
  /** status.rs job_completed: GC'd from /status 30 s later. */
  completedAt: number | null;
  synthSpan: (Span | null)[];
}
interface Stage {
  job: Job;
  /** Partition index; -1: a monolithic job; -2: a whole job on the phase-1 worker (pipeline off). */
  part: number;
  pickT: number;
  span: Span;
  /** Its span in truth.busy (TIMELINE's view of the worker). */
  busy?: Span;
}
interface WorkerState {
  /** In gpu_prove_start (or the synchronous phase-1 prove). */
  cur: Stage | null;
  /** Finalizers running, oldest first. */
  fin: Stage[];
  /** GetStatus current_job (engine.rs JobTracker workers[..].current_job). */
  g: { id: string; kind: string } | null;
  /** /status gpu_workers[..] (status.rs partition_gpu_start / partition_gpu_end). */
  s: { job: Job; part: number; since: number } | null;
}

/** One life of the scripted cuzk: what it has in memory (every counter starts at 0). */
interface Life {
  startT: number;
  /** TIMELINE offset at startT: the first life has been up 100 s when the script starts. */
  offBase: number;
  pipeline: boolean;
  jobs: Job[];
  workers: WorkerState[];
  /** JobTracker record_completion / record_failure (GetMetrics), by gRPC label. */
  completed: Record<string, number>;
  failed: Record<string, number>;
  /** StatusTracker job_completed (its /status counters), by kind. */
  stCompleted: Record<string, number>;
  stFailed: Record<string, number>;
}

/** What the script's cuzk really did, all lives together: the bounds of the exported counters. */
interface Truth {
  completed: Record<string, number>;
  failed: Record<string, number>;
  /** GPU stages that ended (a GPU_END, or a gpu_prove_finish failure /status shows done). */
  gpuEnded: number;
  /** Partition instances submitted (a monolithic job: 1). */
  parts: number;
  /** Partitioned jobs submitted, by kind (what /status can ever count). */
  jobs: Record<string, number>;
  gpu: Span[];
  synth: Span[];
  pickups: number[];
  /** Per worker, its stages as TIMELINE can see them: closed by a GPU_END, else open (a failure, a skip, a restart). */
  busy: Span[][];
}

/** How often each upstream path ran over all the scripts (MONOTONE_STATS=1 prints it: is the hunt reaching them?). */
export const STATS: Record<string, number> = {};
const stat = (k: string) => (STATS[k] = (STATS[k] ?? 0) + 1);
const newLife = (startT: number, offBase: number, pipeline: boolean): Life => ({
  startT,
  offBase,
  pipeline,
  jobs: [],
  workers: Array.from({ length: WORKERS }, () => ({ cur: null, fin: [], g: null, s: null })),
  completed: {},
  failed: {},
  stCompleted: {},
  stFailed: {},
});
const inc = (r: Record<string, number>, k: string, n = 1) => (r[k] = (r[k] ?? 0) + n);
/** Seconds covered by the spans (an open one up to `now`). */
const unionSecs = (spans: Span[], now: number): number => {
  const iv = spans.map((x) => [x.t0, x.end ?? now] as const).sort((a, b) => a[0] - b[0]);
  let total = 0;
  let [from, to] = [-Infinity, -Infinity];
  for (const [a, b] of iv) {
    if (a > to) {
      if (to > from) total += to - from;
      [from, to] = [a, b];
    } else if (b > to) to = b;
  }
  if (to > from) total += to - from;
  return total / 1000;
};
const LABEL_OF_GRPC = (g: string) => g.replace(/_/g, '-');

/**
 * A rig on the script's clock, started now: the exporter's clock at the script's 0, daemon
 * offset 0 read 1 s back (offset t ms is then read at t ms plus the 1 s the tests allow for).
 */
export function scriptedRig(o: RigOptions): Rig {
  clock.baseHr = realHr();
  clock.skewNs = 0;
  const r = rig(o);
  (r as unknown as { epochHr: number }).epochHr = clock.baseHr - 1e9;
  return r;
}

/** Plays a script on a merge of the chosen surfaces; throws at the first counter going down or past its bound. */
export function play(o: RigOptions, steps: Step[], appearAt = 0, scrapeEach = false): void {
  const r = scriptedRig(o);
  let t = 0;
  let seq = 0;
  let feedUp = false;
  let grpcDownUntil = -1;
  let life = newLife(0, 100_000, true);
  const truth: Truth = { completed: {}, failed: {}, gpuEnded: 0, parts: 0, jobs: {}, gpu: [], synth: [], pickups: new Array(WORKERS).fill(0), busy: Array.from({ length: WORKERS }, () => []) };
  const off = () => life.offBase + t - life.startT;
  const uptime = () => off() / 1000;
  // gRPC's uptime is whole seconds (engine.rs get_status: started_at.elapsed().as_secs()); /status' is f64.
  const grpcUptime = () => Math.floor(off() / 1000);
  // A new life whose first line is not a second below the last one read cannot be told from
  // the old daemon's (docs/attach.md §4, restarts): TIMELINE's busy bound is off from then on.
  let lastOff = -Infinity;
  let lineInLife = false;
  let restartUnseen = false;
  const write = (...lines: string[]) => {
    // The daemon writes TIMELINE only with its pipeline on; lines before the log appears are lost.
    if (!r.src.timeline || !life.pipeline || !feedUp) return;
    if (!lineInLife && off() > lastOff - 1000 && lastOff > -Infinity) restartUnseen = true;
    lineInLife = true;
    lastOff = off();
    r.src.timeline.lines(lines.join(''), false, r.hr(t));
    r.src.timeline.caughtUp(r.hr(t));
  };
  const record = (job: Job, ok: boolean, n = 1) => {
    const g = KINDS[job.kind].grpc;
    inc(ok ? life.completed : life.failed, g, n);
    inc(ok ? truth.completed : truth.failed, g, n);
  };
  const span = (into: Span[]): Span => {
    const s = { t0: t, end: null };
    into.push(s);
    return s;
  };
  const live = () => life.jobs.filter((j) => !j.dead);
  /** The GPU queue's first item: monolithic (key (0,0)) first, then oldest job, lowest partition. */
  const queued = (): { job: Job; part: number } | null => {
    for (const j of live()) if (j.mono && j.parts[0] === 'synth_done') return { job: j, part: -1 };
    for (const j of live()) {
      const p = j.mono ? -1 : j.parts.indexOf('synth_done');
      if (p >= 0) return { job: j, part: p };
    }
    return null;
  };
  const synthesizing = (): { job: Job; part: number }[] => {
    const out: { job: Job; part: number }[] = [];
    for (const j of life.jobs) j.parts.forEach((p, i) => p === 'synthesizing' && out.push({ job: j, part: i }));
    return out;
  };
  const withStage = (n: number, curOnly = false): number => {
    const ids = life.workers.flatMap((x, id) => (x.cur || (!curOnly && x.fin.length > 0) ? [id] : []));
    return ids.length ? ids[n % ids.length] : n;
  };
  const gpuDetail = (w: number, st: Stage) => {
    if (st.part >= 0) return `worker=${w},partition=${st.part}`;
    const pp = KINDS[st.job.kind].postPartition;
    return pp ? `worker=${w},partition=${pp(st.job.seq)}` : `worker=${w}`;
  };
  /** status.rs partition_gpu_end: the partition done, the worker cleared only if still on it. */
  const statusGpuEnd = (w: number, st: Stage) => {
    if (st.part < 0) return;
    st.job.parts[st.part] = 'done';
    st.job.gpuEndT[st.part] = t;
    const s = life.workers[w].s;
    if (s && s.job === st.job && s.part === st.part) life.workers[w].s = null;
  };
  const gc = () => {
    // Monolithic jobs leave when they end; partitioned ones 30 s after job_completed (status.rs
    // snapshot retain); a failed one never (job_completed is called on assembly only).
    life.jobs = life.jobs.filter((j) => !(j.dead && (j.mono || (j.completedAt !== null && t - j.completedAt >= 30_000))));
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
    const sums = new Map<string, number>();
    const statusProofs: Record<string, number> = {};
    const fail = (what: string) => {
      throw new Error(`step ${at}: ${what} (driver ${r.src.currentDriver}, t=${t} ms)`);
    };
    for (const d of producer.metrics()) {
      if (d.dataPointType !== DataPointType.SUM) continue;
      const name = d.descriptor.name;
      for (const p of d.dataPoints) {
        const key = `${name}${JSON.stringify(p.attributes)}`;
        const v = p.value as number;
        const prev = last.get(key);
        if (prev !== undefined && v < prev) fail(`${key} went down ${prev} -> ${v}`);
        last.set(key, v);
        sums.set(name, (sums.get(name) ?? 0) + v);
        const a = p.attributes as Record<string, string>;
        // gRPC's counters are cuzk's own: never above them. /status' failures are partly
        // inferred (status-stale.ts: a stage past its thresholds fails its job), so there each
        // partitioned job counts once at most, completed or failed.
        if (name === 'cuzk_proofs_completed_total' || (name === 'cuzk_proofs_failed_total' && r.src.proofsDriver === 'grpc')) {
          const real = Object.entries(name === 'cuzk_proofs_completed_total' ? truth.completed : truth.failed)
            .filter(([g]) => LABEL_OF_GRPC(g) === a.proof_kind)
            .reduce((s, [, n]) => s + n, 0);
          if (v > real) fail(`${key} = ${v}, but cuzk recorded ${real}`);
        }
        if (name.startsWith('cuzk_proofs_') && r.src.proofsDriver === 'status') inc(statusProofs, a.proof_kind, v);
        if (name === 'cuzk_gpu_worker_busy_seconds_total' && v > t / 1000 + 1e-6) fail(`${key} = ${v} s, more than the ${t / 1000} s elapsed`);
        // TIMELINE alone is exact (no sampled surface's guess): a worker is busy at most over its
        // stages, each up to its GPU_END, one without (a failure, a skip, a restart) up to now.
        if (name === 'cuzk_gpu_worker_busy_seconds_total' && !o.status && !o.grpc && !restartUnseen) {
          const real = unionSecs(truth.busy[Number(a.worker)] ?? [], t);
          if (v > real + 0.005) fail(`${key} = ${v} s, but TIMELINE could see the worker busy ${real} s at most`);
        }
        if (name === 'cuzk_gpu_worker_partitions_total' && v > truth.pickups[Number(a.worker)]) fail(`${key} = ${v}, more than the worker's ${truth.pickups[Number(a.worker)]} pickups`);
      }
    }
    for (const [k, n] of Object.entries(statusProofs)) {
      if (n > (truth.jobs[k] ?? 0)) fail(`proofs completed + failed of ${k} = ${n} from /status, but ${truth.jobs[k] ?? 0} partitioned jobs were submitted`);
    }
    const spanSecs = (ss: Span[]) => ss.reduce((s, x) => s + ((x.end ?? t) - x.t0), 0) / 1000 + ss.length * 0.002;
    const done = sums.get('cuzk_partitions_completed_total') ?? 0;
    const failed = sums.get('cuzk_partitions_failed_total') ?? 0;
    if (done > truth.gpuEnded) fail(`cuzk_partitions_completed_total sums to ${done}, but ${truth.gpuEnded} GPU stages ended`);
    if (done + failed > truth.parts) fail(`partitions completed + failed = ${done} + ${failed}, but ${truth.parts} were submitted`);
    const gpu = sums.get('cuzk_partition_gpu_seconds_total') ?? 0;
    if (gpu > spanSecs(truth.gpu) + 1e-6) fail(`cuzk_partition_gpu_seconds_total sums to ${gpu} s, but the GPU stages took ${spanSecs(truth.gpu)} s`);
    const syn = sums.get('cuzk_partition_synthesis_seconds_total') ?? 0;
    if (syn > spanSecs(truth.synth) + 1e-6) fail(`cuzk_partition_synthesis_seconds_total sums to ${syn} s, but the syntheses took ${spanSecs(truth.synth)} s`);
  };

  const grpcDown = () => {
    // As pollStatus / pollMetrics do when a call fails (grpc-surface.ts callError).
    Object.assign(r.src.grpc as unknown as Record<string, unknown>, { everStatus: true, statusUp: false, metricsUp: false });
  };

  const apply = (s: Step, i: number): void => {
    switch (s.k) {
      case 'wait':
        t += s.ms;
        clock.skewNs = t * 1e6;
        if (r.src.timeline && feedUp) r.src.timeline.caughtUp(r.hr(t));
        gc();
        // The exporter polls on its own: every surface answers once the time has passed.
        if (s.poll) for (const k of ['grpcMetrics', 'grpcStatus', 'status'] as const) apply({ k }, i);
        break;
      case 'submit': {
        if (live().filter((j) => !j.failed && !j.stuck).length >= 3) break;
        // Phase 1 (pipeline off) has no batch collector path here: a single request.
        const kind = !life.pipeline && KINDS[s.kind].requests ? (KINDS[s.kind].splitFails ? 1 : 0) : s.kind;
        const kd = KINDS[kind];
        const n = ++seq;
        seq += (kd.requests ?? 1) - 1;
        const np = kd.mono ? 1 : PARTS;
        const a = <T>(v: T) => new Array<T>(np).fill(v);
        life.jobs.push({
          id: kd.id(n), kind, seq: n, mono: !!kd.mono, startT: t, parts: a<DState>('pending'), dropped: a(false), proven: a(false),
          synthT: a(null), synthEndT: a(null), gpuT: a(null), gpuEndT: a(null), failed: false, stuck: false, dead: false, completedAt: null, synthSpan: a(null),
        });
        truth.parts += np;
        if (!kd.mono) inc(truth.jobs, kd.status);
        break;
      }
      case 'synth': {
        if (!life.pipeline) break;
        const js = live();
        const pick = js[s.job % Math.max(1, js.length)];
        let job: Job | undefined;
        let p = -1;
        if (pick?.mono && pick.parts[0] === 'pending') [job, p] = [pick, 0];
        else {
          // The dispatcher's next partition, job by job; a failed job's are dropped (no line).
          for (const j of js) {
            if (j.mono) continue;
            const q = j.parts.findIndex((x, k) => x === 'pending' && !j.dropped[k]);
            if (q < 0) continue;
            if (j.failed) {
              j.parts.forEach((x, k) => x === 'pending' && (j.dropped[k] = true));
            stat('dropAtDispatch');
              continue;
            }
            [job, p] = [j, q];
            break;
          }
        }
        if (!job) break;
        job.parts[p] = 'synthesizing';
        job.synthT[p] = t;
        job.synthSpan[p] = span(truth.synth);
        write(tl(off(), 'SYNTH_START', job.id, job.mono ? `kind=${KINDS[job.kind].status}` : `partition=${p}`));
        break;
      }
      case 'synthEnd': {
        const all = synthesizing();
        const x = all[(s.i ?? 0) % Math.max(1, all.length)];
        if (!x) break;
        const { job, part: p } = x;
        job.parts[p] = 'synth_done';
        job.synthEndT[p] = t;
        job.synthSpan[p]!.end = t;
        const ms = t - job.synthT[p]!;
        if (job.mono) write(tl(off(), 'SYNTH_END', job.id, `synth_ms=${ms}`), tl(off(), 'GPU_QUEUE', job.id, 'monolithic'));
        else write(tl(off(), 'SYNTH_END', job.id, `partition=${p},synth_ms=${ms}`), tl(off(), 'GPU_QUEUE', job.id, `partition=${p}`));
        break;
      }
      case 'synthFail': {
        const all = synthesizing();
        const x = all[s.i % Math.max(1, all.length)];
        if (!x) break;
        const { job, part: p } = x;
        if (job.mono) {
          // process_batch `Ok(Err)`: record_failure per request; nothing more written.
          job.synthSpan[p]!.end = t;
          job.dead = true;
          record(job, false, KINDS[job.kind].requests ?? 1);
        } else {
          // partition_failed; no synth_end: /status' synth_ms keeps growing (its span stays open).
          job.parts[p] = 'failed';
          if (!job.failed) {
            job.failed = true;
            record(job, false);
          }
        }
        break;
      }
      case 'pickup': {
        const ws = life.workers[s.w];
        if (ws.cur) break;
        if (!life.pipeline) {
          // Phase 1: a worker per GPU proves a whole job; no TIMELINE, /status never moves.
          const job = live().find((j) => j.parts[0] === 'pending' && !life.workers.some((x) => x.cur?.job === j));
          if (s.w % 2 !== 0 || !job) break;
          ws.cur = { job, part: -2, pickT: t, span: span(truth.gpu) };
          ws.g = { id: job.id, kind: KINDS[job.kind].status };
          truth.pickups[s.w]++;
          break;
        }
        if (ws.fin.length >= 2) break;
        const q = queued();
        if (!q) break;
        const { job, part } = q;
        const sg: Stage = { job, part, pickT: t, span: span(truth.gpu) };
        truth.pickups[s.w]++;
        const busySpan: Span = { t0: t, end: null };
        truth.busy[s.w].push(busySpan);
        job.parts[Math.max(0, part)] = 'gpu';
        if (part >= 0) {
          job.gpuT[part] = t;
          ws.s = { job, part, since: t };
        }
        // A monolithic pickup names no partition (WindowPoSt's GPU_END does: gpuDetail).
        write(tl(off(), 'GPU_PICKUP', job.id, part >= 0 ? `worker=${s.w},partition=${part}` : `worker=${s.w}`));
        if (part >= 0 && job.failed) {
          // Skipped: /status keeps it `gpu` (its span open), the worker `proving`.
          stat('skipAfterPickup');
          break;
        }
        ws.g = { id: job.id, kind: KINDS[job.kind].status };
        write(tl(off(), 'GPU_START', job.id, part >= 0 ? `worker=${s.w},partition=${part}` : `worker=${s.w}`));
        sg.busy = busySpan;
        ws.cur = sg;
        break;
      }
      case 'release': {
        const ws = life.workers[s.w];
        if (!ws.cur || ws.cur.part === -2) break;
        ws.fin.push(ws.cur);
        ws.cur = null;
        break;
      }
      case 'end':
      case 'finishFail': {
        // A failure hits one of the workers with a stage (the s.w-th): failures are rare steps.
        const w = s.k === 'end' ? s.w : withStage(s.w);
        const ws = life.workers[w];
        const st = ws.fin.shift() ?? ws.cur;
        if (!st) break;
        if (st === ws.cur) ws.cur = null;
        const job = st.job;
        const ok = s.k === 'end';
        st.span.end = t;
        truth.gpuEnded++;
        if (ok && st.busy) st.busy.end = t;
        if (ok && st.part !== -2) write(tl(off(), 'GPU_END', job.id, `${gpuDetail(w, st)},gpu_ms=${t - st.pickT}`));
        if (ws.cur && ws.g) stat('finalizerClearsNext');
        stat(ok ? (st.part === -1 ? 'monoEnd' : st.part === -2 ? 'phase1End' : 'partEnd') : 'finishFail');
        ws.g = null; // the finalizer clears current_job whatever the worker runs now
        if (st.part === -2) {
          job.dead = true;
          job.parts.fill('done');
          record(job, ok, KINDS[job.kind].requests ?? 1);
          break;
        }
        if (st.part === -1) {
          job.dead = true;
          job.parts[0] = 'done';
          const kd = KINDS[job.kind];
          record(job, ok && !kd.splitFails, kd.requests ?? 1);
          break;
        }
        statusGpuEnd(w, st);
        if (!ok) {
          if (!job.failed) {
            job.failed = true;
            record(job, false);
          }
          break;
        }
        if (job.failed) break; // "discarding GPU result for failed job"
        job.proven[st.part] = true;
        if (!job.proven.every(Boolean)) break;
        stat('assembled');
        job.dead = true;
        job.completedAt = t;
        const good = !(s.bad && KINDS[job.kind].status === 'porep-c2');
        record(job, good);
        inc(good ? life.stCompleted : life.stFailed, KINDS[job.kind].status);
        break;
      }
      case 'startFail': {
        const ws = life.workers[withStage(s.w, true)];
        const st = ws.cur;
        if (!st || st.part === -2) break;
        ws.cur = null;
        ws.g = null;
        // record_failure every time; the job is not marked failed: /status keeps the partition
        // `gpu` and the worker `proving` (their span open), the job never assembles.
        record(st.job, false);
        stat('startFail');
        if (st.part === -1) {
          st.span.end = t;
          st.job.dead = true;
        } else st.job.stuck = true;
        break;
      }
      case 'status': {
        if (!r.src.status) break;
        gc();
        const pipelines: Pipeline[] = life.pipeline
          ? life.jobs
              .filter((j) => !j.mono)
              .map((j) => ({
                job_id: j.id,
                proof_kind: KINDS[j.kind].status,
                started_secs_ago: (t - j.startT) / 1000,
                total_partitions: PARTS,
                partitions_done: j.parts.filter((p) => p === 'done').length,
                partitions: j.parts.map((state, index) => ({
                  index,
                  state: state as PartState,
                  synth_ms: j.synthT[index] === null ? null : (j.synthEndT[index] ?? t) - j.synthT[index]!,
                  gpu_ms: j.gpuT[index] === null ? null : (j.gpuEndT[index] ?? t) - j.gpuT[index]!,
                })),
              }))
          : [];
        const workers: Worker[] = life.workers.map((w, id) => (w.s ? proving(id, id >> 1, w.s.job.id, w.s.part, (t - w.s.since) / 1000) : idle(id, id >> 1)));
        r.status(t, snapshot({ uptime: uptime(), pipelines, workers, completed: { ...life.stCompleted }, failed: { ...life.stFailed } }));
        break;
      }
      case 'grpcStatus':
        if (!r.src.grpc) break;
        if (t < grpcDownUntil) {
          grpcDown();
          break;
        }
        r.grpcStatus(
          t,
          life.workers.map((w, id) => ({ ordinal: id >> 1, job: w.g?.id, kind: w.g?.kind })),
          [],
          grpcUptime(),
        );
        break;
      case 'grpcMetrics': {
        if (!r.src.grpc) break;
        if (t < grpcDownUntil) {
          grpcDown();
          break;
        }
        r.grpcMetrics({ uptime: grpcUptime(), completed: { ...life.completed }, failed: { ...life.failed }, workers: WORKERS });
        break;
      }
      case 'grpcDown':
        if (!r.src.grpc) break;
        grpcDownUntil = t + s.ms;
        stat('grpcDown');
        grpcDown();
        break;
      case 'appear':
        if (!r.src.timeline || feedUp) break;
        feedUp = true;
        r.src.timelineFeed(true, 'the log appears');
        r.src.timeline.caughtUp(r.hr(t));
        break;
      case 'restart':
        // The process dies (every stage it had ends with it), down for a while, then a fresh
        // process: nothing of the old one in memory.
        for (const x of [...truth.gpu, ...truth.synth]) if (x.end === null) x.end = t;
        t += s.downMs;
        clock.skewNs = t * 1e6;
        life = newLife(t, 0, s.pipeline);
        lineInLife = false;
        break;
      case 'collect':
        collect(i);
        break;
      case 'proof': {
        const w = life.pipeline ? s.w : s.w & ~1;
        // Alone in the queues (synthesis and the GPU queue take the oldest first).
        if (life.workers[w].cur || live().length >= 3 || live().some((j) => j.parts.some((x, k) => (x === 'pending' && !j.dropped[k] && !j.failed) || x === 'synth_done'))) break;
        apply({ k: 'submit', kind: s.kind }, i);
        const job = life.jobs[life.jobs.length - 1];
        if (!job || job.dead || job.startT !== t) break;
        const n = life.pipeline ? job.parts.length : 1;
        if (s.split && life.pipeline && n === 2) {
          // Split proving's steady state: p1 picked up while p0's finalizer runs; p0's GPU_END
          // clears GetStatus' current_job while the worker is on p1 (polled in between).
          for (let p = 0; p < 2; p++) apply({ k: 'synth', job: live().indexOf(job) }, i);
          apply({ k: 'wait', ms: s.ms }, i);
          for (let p = 0; p < 2; p++) apply({ k: 'synthEnd', i: synthesizing().findIndex((x) => x.job === job) }, i);
          apply({ k: 'pickup', w, job: 0 }, i);
          apply({ k: 'wait', ms: s.ms }, i);
          apply({ k: 'release', w }, i);
          apply({ k: 'pickup', w, job: 0 }, i);
          apply({ k: 'wait', ms: Math.ceil(s.ms / 3) }, i);
          apply({ k: 'end', w }, i);
          apply({ k: 'wait', ms: Math.ceil(s.ms / 3), poll: s.poll }, i);
          apply({ k: 'end', w }, i);
          if (s.poll) apply({ k: 'grpcMetrics' }, i);
          break;
        }
        for (let p = 0; p < n; p++) {
          apply({ k: 'synth', job: live().indexOf(job) }, i);
          apply({ k: 'wait', ms: s.ms }, i);
          apply({ k: 'synthEnd', i: synthesizing().findIndex((x) => x.job === job) }, i);
          apply({ k: 'pickup', w, job: 0 }, i);
          apply({ k: 'wait', ms: s.ms }, i);
          apply({ k: 'end', w }, i);
        }
        if (s.poll) apply({ k: 'grpcMetrics' }, i);
        break;
      }
    }
  };
  const trace = process.env.MONOTONE_TRACE ? (i: number, s: Step) => {
    r.src.refresh();
    const m = r.src.model;
    const sum = (a: Float64Array) => a.reduce((x, y) => x + y, 0);
    // eslint-disable-next-line no-console
    console.log(`${i} t=${t} ${JSON.stringify(s)} driver=${r.src.currentDriver} synth=${sum(m.kSynthNs) / 1e9} gpu=${sum(m.kGpuNs) / 1e9} done=${sum(m.kPartsCompleted)} failed=${sum(m.kPartsFailed)} proofs=${sum(m.kProofsCompleted)}/${sum(m.kProofsFailed)} busy=${m.topology.workers.map((_, w) => m.workerBusyNsAt(w, r.src.nowNs()) / 1e9)}`);
  } : null;
  steps.forEach((s, i) => {
    if (i === appearAt) apply({ k: 'appear' }, i);
    apply(s, i);
    trace?.(i, s);
    if (scrapeEach) collect(i);
  });
  collect(steps.length);
}

const W = fc.nat(WORKERS - 1);
export const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ k: fc.constant('wait' as const), ms: fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 9000, max: 65_000 })), poll: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('submit' as const), kind: fc.integer({ min: 0, max: KINDS.length - 1 }) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('synth' as const), job: fc.nat(2) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('synthEnd' as const), i: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('synthFail' as const), i: fc.nat(3) }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('pickup' as const), w: W, job: fc.nat(2) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('release' as const), w: W }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('end' as const), w: W, bad: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('finishFail' as const), w: W }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('startFail' as const), w: W }) },
  { weight: 2, arbitrary: fc.constant({ k: 'status' as const }) },
  { weight: 2, arbitrary: fc.constant({ k: 'grpcStatus' as const }) },
  { weight: 3, arbitrary: fc.constant({ k: 'grpcMetrics' as const }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('grpcDown' as const), ms: fc.oneof(fc.integer({ min: 500, max: 10_000 }), fc.integer({ min: 30_000, max: 120_000 })) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('proof' as const), kind: fc.integer({ min: 0, max: KINDS.length - 1 }), w: W, ms: fc.integer({ min: 1, max: 20_000 }), poll: fc.boolean(), split: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('restart' as const), pipeline: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }), downMs: fc.integer({ min: 500, max: 5000 }) }) },
  { weight: 6, arbitrary: fc.constant({ k: 'collect' as const }) },
);

// Every non-empty combination; those where the driver can switch (TIMELINE and another) more often.
export const surfaces = fc.oneof(
  { weight: 3, arbitrary: fc.record({ status: fc.boolean(), grpc: fc.boolean(), timeline: fc.boolean() }).filter((o) => o.status || o.grpc || o.timeline) },
  { weight: 2, arbitrary: fc.record({ status: fc.boolean(), grpc: fc.constant(true), timeline: fc.constant(true) }) },
  { weight: 1, arbitrary: fc.record({ status: fc.constant(true), grpc: fc.boolean(), timeline: fc.constant(true) }) },
);
