/**
 * Jobs and partition instances ("units") as cuzk's TIMELINE lines show them, with the live
 * partition counts and per-kind totals the merge exports. Pure bookkeeping: which line
 * belongs to which unit is decided here; workers (timeline-workers.ts) and time
 * (timeline-clock.ts) live elsewhere.
 *
 * Identity, as upstream writes it (docs/upstream-conformance.md):
 *  - partitioned jobs (PoRep C2, SnapDeals: engine.rs synthesis worker pool and GPU worker)
 *    carry `partition=N` on every line; monolithic ones (WindowPoSt, WinningPoSt, batched
 *    PoRep/SnapDeals: engine.rs process_batch) carry none — except WindowPoSt's GPU_END,
 *    whose detail is built from the synthesized proof's `partition_index` (the request's);
 *    so a monolithic unit is one per job instance, key MONO, and its end is matched by job
 *    and worker whatever `partition=` the end carries;
 *  - a job id is not unique over time: Curio's request ids are deterministic, a retried task
 *    re-uses its id, and cuzk accepts a duplicate id in flight. Every SYNTH_START starts a
 *    new unit; later lines go to the oldest unit of that key in the state they follow;
 *    a pickup with no unit waiting starts one (its earlier lines were not seen).
 */
import {
  KIND_SLOTS,
  LIVE_PARTITION_STATES,
  OTHER_KIND_INDEX,
  PART_DONE,
  PART_FINALIZING,
  PART_GPU,
  PART_SYNTHESIZING,
  PART_SYNTH_DONE,
  liveSlot,
} from '../../model/kinds';

/** Key of a monolithic job's one unit. */
export const MONO = -1;

/** How a unit ended. */
export const END_NONE = 0;
/** GPU_END: the GPU stage succeeded. */
export const END_DONE = 1;
/** Picked up and never started: a partition of a job that had already failed (engine.rs GPU worker, "skipping GPU prove for failed partitioned job"). */
export const END_SKIPPED = 2;
/** No end line ever came (a failure upstream writes nothing for, or lost lines): given up. */
export const END_LOST = 3;
/** Its GPU stage ended without a GPU_END (another surface saw the end): a GPU failure. */
export const END_FAILED = 4;
/** Synthesis never ended (no SYNTH_END: a synthesis failure) and the job is over. */
export const END_ABANDONED = 5;
/**
 * Its worker moved on (CUZK_DISABLE_SPLIT_PROVE=1: the worker proves synchronously, so its
 * next pickup means this stage ended); how it ended is not in the lines.
 */
export const END_UNSEEN = 6;

export interface TlUnit {
  job: TlJob;
  key: number;
  /** PART_*; -1 before any state line. */
  state: number;
  worker: number;
  /** Run clock (ns) of its pickup; NaN until picked up. */
  pickT: number;
  /** Run clock (ns) of its synthesis start; NaN if not seen. */
  synthT: number;
  /** Run clock (ns) it became ready for the GPU (SYNTH_END / GPU_QUEUE); NaN if not seen. */
  readyT: number;
  /** GPU_START seen: really started on the GPU (not a skip). */
  started: boolean;
  synthMs: number;
  gpuMs: number;
  synthCounted: boolean;
  end: number;
  /** Another surface says its GPU stage ended, with this gpu_ms (-1: not seen). */
  otherEndMs: number;
  /** Run clock (ns) it ended (finish); NaN while live. */
  endT: number;
}

export interface TlJob {
  id: string;
  handle: number;
  /** Kind slot; -1 while unresolved. */
  kind: number;
  /** How the kind became known (kind-evidence.ts), '' while unresolved. */
  evidence: string;
  /** Seen as monolithic (SYNTH_START kind=, GPU_QUEUE monolithic, pickup without partition). */
  mono: boolean;
  units: TlUnit[];
  /** Units in a live state. */
  live: number;
  liveSlot: number;
  /** Counted while the kind is unknown; obs holds (0 GPU | 1 synthesis, ns, partition) triples, at most MAX_PENDING_OBS numbers. */
  pend: { gpuNs: number; synthNs: number; parts: number; failed: number; obs: number[] } | null;
  firstMs: number;
  lastMs: number;
  /** Highest partition index seen. */
  maxKey: number;
  /** Evidence that the current instance failed (a skip, a failed unit). */
  failed: boolean;
  /** Run clock (ns) its live units last reached zero after GPU work; NaN while live. */
  endedT: number;
  /** Its end was matched with a GetMetrics counter increase (kind inference). */
  accounted: boolean;
}

/** At most this many units kept per job (older ended ones are dropped). */
const MAX_UNITS_PER_JOB = 64;
const MAX_PENDING_OBS = 4096;

export interface UnitObserver {
  partitionGpu(kind: number, s: number, job?: number, partition?: number): void;
  partitionSynthesis(kind: number, s: number, job?: number, partition?: number): void;
}

export class TimelineJobs {
  readonly jobs = new Map<string, TlJob>();
  readonly unresolved = new Set<TlJob>();
  readonly kGpuNs = new Float64Array(KIND_SLOTS);
  readonly kSynthNs = new Float64Array(KIND_SLOTS);
  readonly kParts = new Float64Array(KIND_SLOTS);
  /** Partitions whose GPU stage failed (seen ending without a GPU_END). */
  readonly kPartsFailed = new Float64Array(KIND_SLOTS);
  readonly kLive = new Int32Array(KIND_SLOTS * LIVE_PARTITION_STATES);
  unitsTracked = 0;
  private nextHandle = 1;
  observer: UnitObserver | null = null;
  /** Called when a job's kind becomes known. */
  onKind: ((job: TlJob) => void) | null = null;

  job(id: string, off: number): TlJob {
    let job = this.jobs.get(id);
    if (!job) {
      job = {
        id,
        handle: this.nextHandle++,
        kind: -1,
        evidence: '',
        mono: false,
        units: [],
        live: 0,
        liveSlot: OTHER_KIND_INDEX,
        pend: null,
        firstMs: off,
        lastMs: off,
        maxKey: -1,
        failed: false,
        endedT: NaN,
        accounted: false,
      };
      this.jobs.set(id, job);
      this.unresolved.add(job);
    }
    if (off > job.lastMs) job.lastMs = off;
    return job;
  }

  /** A new unit of `key` (a SYNTH_START, or a later line with no unit waiting for it). */
  newUnit(job: TlJob, key: number): TlUnit {
    if (key !== MONO && key > job.maxKey) job.maxKey = key;
    if (key === MONO) job.mono = true;
    job.endedT = NaN;
    job.accounted = false;
    const u: TlUnit = { job, key, state: -1, worker: -1, pickT: NaN, synthT: NaN, readyT: NaN, started: false, synthMs: -1, gpuMs: -1, synthCounted: false, end: END_NONE, otherEndMs: -1, endT: NaN };
    job.units.push(u);
    this.unitsTracked++;
    if (job.units.length > MAX_UNITS_PER_JOB) {
      const i = job.units.findIndex((x) => x.end !== END_NONE);
      if (i >= 0) {
        job.units.splice(i, 1);
        this.unitsTracked--;
      }
    }
    return u;
  }

  /** The oldest live unit of `key` whose state is one of `states` (bit mask of PART_*), or null. */
  find(job: TlJob, key: number, states: number, worker = -1): TlUnit | null {
    for (const u of job.units) {
      if (u.end !== END_NONE || u.key !== key) continue;
      if ((states & (1 << (u.state < 0 ? 15 : u.state))) === 0) continue;
      if (worker >= 0 && u.worker !== worker) continue;
      return u;
    }
    return null;
  }

  /** Moves a unit between states, keeping the live counts per kind. */
  setState(u: TlUnit, next: number): void {
    const job = u.job;
    const from = u.state >= 0 && u.end === END_NONE ? liveSlot(u.state) : -1;
    const to = liveSlot(next);
    const base = job.liveSlot * LIVE_PARTITION_STATES;
    if (from >= 0) {
      this.kLive[base + from]--;
      job.live--;
    }
    if (to >= 0) {
      this.kLive[base + to]++;
      job.live++;
    }
    u.state = next;
  }

  /** The unit is over (how: END_*); it leaves the live counts. */
  finish(u: TlUnit, how: number, t: number): void {
    if (u.end !== END_NONE) return;
    if (how === END_DONE) this.setState(u, PART_DONE);
    else {
      const s = u.state >= 0 ? liveSlot(u.state) : -1;
      if (s >= 0) {
        this.kLive[u.job.liveSlot * LIVE_PARTITION_STATES + s]--;
        u.job.live--;
      }
    }
    u.end = how;
    u.endT = t;
    if (u.job.live === 0 && !Number.isNaN(u.pickT)) u.job.endedT = t;
  }

  addGpu(job: TlJob, ns: number, partition: number, completed: boolean): void {
    if (job.kind >= 0) {
      this.kGpuNs[job.kind] += ns;
      if (completed) this.kParts[job.kind]++;
      else this.kPartsFailed[job.kind]++;
      this.observer?.partitionGpu(job.kind, ns / 1e9, job.handle, partition);
      return;
    }
    const p = (job.pend ??= { gpuNs: 0, synthNs: 0, parts: 0, failed: 0, obs: [] });
    p.gpuNs += ns;
    // A count, not an entry: entries are capped, failures must all be counted.
    if (completed) p.parts++;
    else p.failed++;
    if (p.obs.length < MAX_PENDING_OBS) p.obs.push(0, ns, partition);
  }

  addSynth(job: TlJob, ns: number, partition: number): void {
    if (job.kind >= 0) {
      this.kSynthNs[job.kind] += ns;
      this.observer?.partitionSynthesis(job.kind, ns / 1e9, job.handle, partition);
      return;
    }
    const p = (job.pend ??= { gpuNs: 0, synthNs: 0, parts: 0, failed: 0, obs: [] });
    p.synthNs += ns;
    if (p.obs.length < MAX_PENDING_OBS) p.obs.push(1, ns, partition);
  }

  /** The job's kind is known: its live units move to it, its waiting time is counted. */
  setKind(job: TlJob, k: number, evidence: string): void {
    if (job.kind >= 0) return;
    job.kind = k;
    job.evidence = evidence;
    this.unresolved.delete(job);
    if (job.liveSlot !== k) {
      const from = job.liveSlot * LIVE_PARTITION_STATES;
      const to = k * LIVE_PARTITION_STATES;
      for (const u of job.units) {
        const s = u.end === END_NONE && u.state >= 0 ? liveSlot(u.state) : -1;
        if (s < 0) continue;
        this.kLive[from + s]--;
        this.kLive[to + s]++;
      }
      job.liveSlot = k;
    }
    const p = job.pend;
    if (p) {
      job.pend = null;
      this.kGpuNs[k] += p.gpuNs;
      this.kSynthNs[k] += p.synthNs;
      this.kParts[k] += p.parts;
      this.kPartsFailed[k] += p.failed;
      for (let i = 0; i < p.obs.length; i += 3) {
        const what = p.obs[i];
        if (what === 0) this.observer?.partitionGpu(k, p.obs[i + 1] / 1e9, job.handle, p.obs[i + 2]);
        else this.observer?.partitionSynthesis(k, p.obs[i + 1] / 1e9, job.handle, p.obs[i + 2]);
      }
    }
    this.onKind?.(job);
  }

  /** Forgets a job: its live units leave the counts (nothing is counted). */
  evict(job: TlJob): void {
    for (const u of job.units) {
      if (u.end === END_NONE) {
        const s = u.state >= 0 ? liveSlot(u.state) : -1;
        if (s >= 0) this.kLive[job.liveSlot * LIVE_PARTITION_STATES + s]--;
        u.end = END_LOST;
      }
    }
    job.live = 0;
    this.unitsTracked -= job.units.length;
    this.jobs.delete(job.id);
    this.unresolved.delete(job);
  }

  /** Total partitions of the job as far as the lines tell (highest index + 1; 1 if monolithic). */
  static seenTotal(job: TlJob): number {
    return job.maxKey >= 0 ? job.maxKey + 1 : 1;
  }
}

export const STATES_WAITING = (1 << 15) | (1 << PART_SYNTHESIZING) | (1 << PART_SYNTH_DONE);
export const STATES_SYNTH = (1 << 15) | (1 << PART_SYNTHESIZING);
export const STATES_ON_GPU = (1 << PART_GPU) | (1 << PART_FINALIZING);
