/**
 * cuzk's GET /status snapshot (DESIGN §6, docs/status-json.md): types and a validator for
 * untrusted input. The validator never throws; it returns the typed snapshot, or the one
 * reason it cannot be used. Bad parts that can be left out (an optional section, one
 * malformed pipeline or worker) are dropped and reported as `skipped`, so one bad field
 * costs that field, not the whole snapshot — and never produces a wrong number.
 */

import { BOUNDS, maxDurationMs } from './plausibility';

export interface CuzkPartition {
  index: number;
  state: string;
  synth_ms: number | null;
  gpu_ms: number | null;
  // our additions (native engine)
  gpu_ordinal?: number | null;
  worker_id?: number | null;
}

export interface CuzkPipeline {
  job_id: string;
  proof_kind: string;
  started_secs_ago: number;
  total_partitions: number;
  partitions_done: number;
  partitions: CuzkPartition[];
  job_handle?: number;
  priority?: number;
  outcome?: string;
  finished_secs_ago?: number | null;
}

export interface CuzkWorker {
  worker_id: number;
  gpu_ordinal: number;
  state: string;
  current_job: string | null;
  current_partition: number | null;
  busy_secs: number | null;
  busy_total_secs?: number;
  busy_since_ns?: number | null;
  current_job_handle?: number | null;
  current_kind?: string | null;
}

export interface CuzkGpu {
  ordinal: number;
  name: string;
  uuid?: string | null;
  pci_bus_id?: string | null;
  lock_held?: boolean;
  lock_since_ns?: number | null;
  busy_total_secs?: number;
}

export interface CuzkStatus {
  uptime_secs: number;
  memory?: { total_bytes: number; used_bytes: number; available_bytes: number };
  synthesis?: { max_concurrent: number; active: number };
  pipelines: CuzkPipeline[];
  gpu_workers: CuzkWorker[];
  allocations?: { srs: unknown[]; pce: unknown[] };
  counters?: {
    total_completed: number;
    total_failed: number;
    completed_by_kind: Record<string, number>;
    failed_by_kind: Record<string, number>;
    queue_depth: number;
    cancelled_by_kind?: Record<string, number>;
    queue_depth_by_kind?: Record<string, number>;
  };
  buffers?: Record<string, number>;
  // native engine additions
  last_seq?: number;
  backend?: string;
  gpus?: CuzkGpu[];
  [extra: string]: unknown;
}

export type ValidationResult =
  | {
      ok: true;
      status: CuzkStatus;
      /** What was left out, readable (one entry per dropped part). */
      skipped: string[];
      /**
       * job_id / worker_id of dropped pipelines / workers where they could still be read:
       * the job or worker is still there, only its entry is unusable this time, so a
       * consumer keeps what it knew about it instead of treating it as gone.
       */
      skippedJobIds: string[];
      skippedWorkerIds: number[];
      /**
       * Parts left out because their numbers cannot be true (plausibility.ts): a duration
       * longer than the daemon's uptime, per-kind counters summing past their total.
       * Kept as last seen like `skipped`; counted as reason "implausible".
       */
      implausible: string[];
    }
  | { ok: false; error: string };

/** Bounds on untrusted snapshots: far above any real box, far below what hurts us. */
export const LIMITS = {
  pipelines: 10_000,
  /** cuzk: PoRep C2 10, SnapDeals 16 (32 and 64 GiB sectors). */
  partitionsPerPipeline: 1_024,
  /** All pipelines together (cuzk keeps failed jobs forever: a long uptime has many). */
  totalPartitions: 100_000,
  /** An uptime beyond this (100 years) is not a daemon's. */
  uptimeSecs: 3.2e9,
  workers: 4_096,
  gpus: 1_024,
  stringLength: 1_024,
  /**
   * Job ids are identity, never labels: any length the body allows is kept whole (a long
   * id must not drop its pipeline and worker); this only stops the absurd.
   */
  jobIdLength: 1 << 20,
  workerId: 1_000_000,
  kinds: 16_384,
} as const;

const PARTITION_STATE_NAMES = new Set(['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isCount = (v: unknown): v is number => isNum(v) && Number.isInteger(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER;
const isNonNeg = (v: unknown): v is number => isNum(v) && v >= 0;
const isStr = (v: unknown): v is string => typeof v === 'string' && v.length <= LIMITS.stringLength;
const isJobId = (v: unknown): v is string => typeof v === 'string' && v.length <= LIMITS.jobIdLength;
const IMPLAUSIBLE = 'implausible: ';
const nullOr = <T>(p: (v: unknown) => v is T) => (v: unknown): v is T | null => v === null || p(v);

/** Validates a parsed /status body. */
export function validateStatus(body: unknown): ValidationResult {
  if (!isObj(body)) return { ok: false, error: 'snapshot is not a JSON object' };
  const skipped: string[] = [];
  if (!isNonNeg(body.uptime_secs)) return { ok: false, error: 'uptime_secs: missing or not a non-negative number' };
  if (body.uptime_secs > LIMITS.uptimeSecs) return { ok: false, error: `uptime_secs: ${body.uptime_secs} is not a daemon's uptime (over 100 years)` };
  if (!Array.isArray(body.pipelines)) return { ok: false, error: 'pipelines: missing or not an array' };
  if (!Array.isArray(body.gpu_workers)) return { ok: false, error: 'gpu_workers: missing or not an array' };
  if (body.pipelines.length > LIMITS.pipelines) return { ok: false, error: `pipelines: ${body.pipelines.length} entries exceeds the limit of ${LIMITS.pipelines}` };
  if (body.gpu_workers.length > LIMITS.workers) return { ok: false, error: `gpu_workers: ${body.gpu_workers.length} entries exceeds the limit of ${LIMITS.workers}` };
  let parts = 0;
  for (const p of body.pipelines) if (isObj(p) && Array.isArray(p.partitions)) parts += p.partitions.length;
  if (parts > LIMITS.totalPartitions) return { ok: false, error: `pipelines: ${parts} partitions in all exceeds the limit of ${LIMITS.totalPartitions}` };

  const out: CuzkStatus = { ...body, uptime_secs: body.uptime_secs, pipelines: [], gpu_workers: [] };
  const skippedJobIds: string[] = [];
  const skippedWorkerIds: number[] = [];

  // memory, synthesis and counters are part of cuzk's snapshot: missing is as bad as malformed.
  for (const section of ['memory', 'synthesis', 'counters'] as const) {
    if (body[section] === undefined) skipped.push(`${section}: missing`);
  }
  const memory = body.memory;
  if (memory !== undefined) {
    if (isObj(memory) && isCount(memory.total_bytes) && isCount(memory.used_bytes) && isCount(memory.available_bytes)) {
      out.memory = { total_bytes: memory.total_bytes, used_bytes: memory.used_bytes, available_bytes: memory.available_bytes };
    } else {
      delete out.memory;
      skipped.push('memory');
    }
  }
  const synthesis = body.synthesis;
  if (synthesis !== undefined) {
    if (isObj(synthesis) && isCount(synthesis.max_concurrent) && isCount(synthesis.active)) {
      out.synthesis = { max_concurrent: synthesis.max_concurrent, active: synthesis.active };
    } else {
      delete out.synthesis;
      skipped.push('synthesis');
    }
  }
  const counters = body.counters;
  if (counters !== undefined) {
    const c = validateCounters(counters);
    if (c) out.counters = c;
    else {
      delete out.counters;
      skipped.push('counters');
    }
  }
  if (body.gpus !== undefined) {
    const gpus = Array.isArray(body.gpus) && body.gpus.length <= LIMITS.gpus ? body.gpus.filter(validGpu) : null;
    if (gpus && gpus.length === (body.gpus as unknown[]).length) out.gpus = gpus as CuzkGpu[];
    else {
      delete out.gpus;
      skipped.push('gpus');
    }
  }

  // Plausibility (plausibility.ts): nothing the daemon ran can have taken longer than it has been up.
  const implausible: string[] = [];
  const maxMs = maxDurationMs(body.uptime_secs);
  if (out.counters) {
    const c = out.counters;
    const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
    const over = sum(c.completed_by_kind) > c.total_completed + BOUNDS.kindSumSlack ? 'completed' : sum(c.failed_by_kind) > c.total_failed + BOUNDS.kindSumSlack ? 'failed' : null;
    if (over) {
      implausible.push(`counters: ${over}_by_kind adds up to more than total_${over}`);
      delete out.counters;
    }
  }
  const seenJobs = new Set<string>();
  body.pipelines.forEach((p, i) => {
    const v = validatePipeline(p, maxMs);
    if (typeof v === 'string') {
      if (v.startsWith(IMPLAUSIBLE)) implausible.push(`pipelines[${i}]: ${v.slice(IMPLAUSIBLE.length)}`);
      else skipped.push(`pipelines[${i}]: ${v}`);
      if (isObj(p) && isJobId(p.job_id) && p.job_id.length > 0) skippedJobIds.push(p.job_id);
    }
    else if (seenJobs.has(v.job_id)) skipped.push(`pipelines[${i}]: duplicate job_id`);
    else {
      seenJobs.add(v.job_id);
      out.pipelines.push(v);
    }
  });
  const seenWorkers = new Set<number>();
  body.gpu_workers.forEach((w, i) => {
    const v = validateWorker(w, maxMs);
    if (typeof v === 'string') {
      if (v.startsWith(IMPLAUSIBLE)) implausible.push(`gpu_workers[${i}]: ${v.slice(IMPLAUSIBLE.length)}`);
      else skipped.push(`gpu_workers[${i}]: ${v}`);
      if (isObj(w) && isCount(w.worker_id) && w.worker_id <= LIMITS.workerId) skippedWorkerIds.push(w.worker_id);
    }
    else if (seenWorkers.has(v.worker_id)) skipped.push(`gpu_workers[${i}]: duplicate worker_id`);
    else {
      seenWorkers.add(v.worker_id);
      out.gpu_workers.push(v);
    }
  });
  return { ok: true, status: out, skipped, skippedJobIds, skippedWorkerIds, implausible };
}

function validateCounters(c: unknown): CuzkStatus['counters'] | null {
  if (!isObj(c)) return null;
  if (!isCount(c.total_completed) || !isCount(c.total_failed) || !isCount(c.queue_depth)) return null;
  const byKind = (v: unknown): Record<string, number> | null => {
    if (!isObj(v)) return null;
    const entries = Object.entries(v);
    if (entries.length > LIMITS.kinds) return null;
    const out: Record<string, number> = {};
    for (const [k, n] of entries) {
      if (k.length > LIMITS.stringLength || !isCount(n)) return null;
      out[k] = n;
    }
    return out;
  };
  const completed = byKind(c.completed_by_kind);
  const failed = byKind(c.failed_by_kind);
  if (!completed || !failed) return null;
  const res: NonNullable<CuzkStatus['counters']> = {
    total_completed: c.total_completed,
    total_failed: c.total_failed,
    completed_by_kind: completed,
    failed_by_kind: failed,
    queue_depth: c.queue_depth,
  };
  if (c.cancelled_by_kind !== undefined) {
    const v = byKind(c.cancelled_by_kind);
    if (!v) return null;
    res.cancelled_by_kind = v;
  }
  if (c.queue_depth_by_kind !== undefined) {
    const v = byKind(c.queue_depth_by_kind);
    if (!v) return null;
    res.queue_depth_by_kind = v;
  }
  return res;
}

function validGpu(g: unknown): boolean {
  return (
    isObj(g) &&
    isCount(g.ordinal) &&
    isStr(g.name) &&
    (g.uuid === undefined || nullOr(isStr)(g.uuid)) &&
    (g.pci_bus_id === undefined || nullOr(isStr)(g.pci_bus_id))
  );
}

function validatePipeline(p: unknown, maxMs = Infinity): CuzkPipeline | string {
  if (!isObj(p)) return 'not an object';
  if (!isJobId(p.job_id) || p.job_id.length === 0) return 'job_id: not a non-empty string';
  if (!isStr(p.proof_kind) || p.proof_kind.length === 0) return 'proof_kind: not a non-empty string';
  if (!isNonNeg(p.started_secs_ago)) return 'started_secs_ago: not a non-negative number';
  if (p.started_secs_ago * 1000 > maxMs) return `${IMPLAUSIBLE}started_secs_ago ${p.started_secs_ago} is longer than the daemon has been up`;
  if (!isCount(p.total_partitions) || p.total_partitions > LIMITS.partitionsPerPipeline) return 'total_partitions: not a count within limits';
  if (!isCount(p.partitions_done)) return 'partitions_done: not a count';
  if (!Array.isArray(p.partitions) || p.partitions.length !== p.total_partitions) {
    return 'partitions: not an array of total_partitions entries';
  }
  // Checked in place, not copied: a valid pipeline is used as parsed (this runs for every
  // partition of every poll; copying them was a quarter of the poll path's garbage).
  for (let i = 0; i < p.partitions.length; i++) {
    const x: unknown = p.partitions[i];
    if (!isObj(x)) return `partitions[${i}]: not an object`;
    if (x.index !== i) return `partitions[${i}]: index is not ${i}`;
    if (!isStr(x.state) || !PARTITION_STATE_NAMES.has(x.state)) return `partitions[${i}]: unknown state`;
    const synth = x.synth_ms;
    const gpu = x.gpu_ms;
    if (!isNullOrNonNeg(synth) || !isNullOrNonNeg(gpu)) return `partitions[${i}]: synth_ms/gpu_ms not null or a non-negative number`;
    if (synth !== null && synth > maxMs) return `${IMPLAUSIBLE}partitions[${i}]: synth_ms ${synth} is longer than the daemon has been up (${Math.floor(maxMs)} ms)`;
    if (gpu !== null && gpu > maxMs) return `${IMPLAUSIBLE}partitions[${i}]: gpu_ms ${gpu} is longer than the daemon has been up (${Math.floor(maxMs)} ms)`;
  }
  if (p.job_handle !== undefined && !isCount(p.job_handle)) return 'job_handle: not a count';
  return p as unknown as CuzkPipeline;
}

// Built once (these run for every worker and partition of every poll).
const isNullOrNonNeg = nullOr(isNonNeg);
const isNullOrCount = nullOr(isCount);
const isNullOrJobId = nullOr(isJobId);

function validateWorker(w: unknown, maxMs = Infinity): CuzkWorker | string {
  if (!isObj(w)) return 'not an object';
  if (!isCount(w.worker_id) || w.worker_id > LIMITS.workerId) return 'worker_id: not a count within limits';
  if (!isCount(w.gpu_ordinal) || w.gpu_ordinal >= LIMITS.gpus) return 'gpu_ordinal: not a count within limits';
  if (w.state !== 'idle' && w.state !== 'proving') return 'state: not "idle" or "proving"';
  if (!isNullOrJobId(w.current_job)) return 'current_job: not null or a string';
  if (!isNullOrCount(w.current_partition)) return 'current_partition: not null or a count';
  if (!isNullOrNonNeg(w.busy_secs)) return 'busy_secs: not null or a non-negative number';
  if (typeof w.busy_secs === 'number' && w.busy_secs * 1000 > maxMs) return `${IMPLAUSIBLE}busy_secs ${w.busy_secs} is longer than the daemon has been up`;
  if (w.state === 'proving' && (w.current_job === null || w.current_partition === null)) {
    return 'state "proving" without current_job/current_partition';
  }
  return w as unknown as CuzkWorker;
}
