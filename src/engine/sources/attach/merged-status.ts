/**
 * The `/status` document of an attach exporter whose workers come from TIMELINE or gRPC:
 * cuzk's `GET /status` shape (DESIGN §6) built from the merged model, with /status'
 * own sections (memory, synthesis, allocations…) where /status is attached. It agrees with
 * /metrics: proofs by kind from the best surface (gRPC sees PoSt, /status does not), true
 * partition totals where any surface knows them, workers as the model has them.
 *
 * Bounded whatever the log says (issue 20, amplification): a job's partitions are listed
 * up to its known total (from /status, or the kind's — PoRep C2 10, SnapDeals 16) and
 * otherwise only those seen, at most MAX_PARTITIONS_LISTED per job; at most MAX_JOBS_LISTED
 * jobs, running ones first.
 */
import { KIND_LABELS, KIND_SLOTS, OTHER_KIND_INDEX, PARTITIONS, PARTITION_STATES, PART_DONE, PART_FINALIZING, PROOF_KINDS } from '../../model/kinds';
import { END_DONE, END_NONE, TimelineJobs, TlJob, TlUnit } from './timeline-jobs';
import type { MergedAttachSource } from './merge';

export const MAX_JOBS_LISTED = 512;
export const MAX_PARTITIONS_LISTED = 64;

type Obj = Record<string, unknown>;

/** Each partition's newest unit (a retried id's latest instance). */
function newestUnits(job: TlJob): Map<number, TlUnit> {
  const out = new Map<number, TlUnit>();
  for (const u of job.units) out.set(u.key < 0 ? 0 : u.key, u);
  return out;
}

function unitState(u: TlUnit | undefined): number {
  if (!u) return 0;
  if (u.end === END_DONE) return PART_DONE;
  if (u.end !== END_NONE) return 5; // failed / skipped / lost: not done, not live
  return u.state >= 0 ? u.state : 0;
}

function declaredTotal(src: MergedAttachSource, job: TlJob): { total: number; known: boolean } {
  const fromStatus = src.status?.totalPartitionsOf(job.id) ?? -1;
  if (fromStatus > 0) return { total: fromStatus, known: true };
  const seen = TimelineJobs.seenTotal(job);
  if (job.mono) return { total: 1, known: true };
  const k = job.kind >= 0 && job.kind < PROOF_KINDS.length ? PARTITIONS[PROOF_KINDS[job.kind]] : 0;
  if (k >= seen) return { total: k, known: true };
  return { total: seen, known: false };
}

function pipelineOf(src: MergedAttachSource, job: TlJob, lastMs: number): Obj {
  const units = newestUnits(job);
  const { total, known } = declaredTotal(src, job);
  const indexes = known ? Array.from({ length: Math.min(total, MAX_PARTITIONS_LISTED) }, (_, i) => i) : [...units.keys()].sort((a, b) => a - b).slice(0, MAX_PARTITIONS_LISTED);
  let done = 0;
  for (const u of units.values()) if (u.end === END_DONE) done++;
  const partitions = indexes.map((i) => {
    const u = units.get(i);
    const state = unitState(u);
    const entry: Obj = {
      index: i,
      state: state === PART_FINALIZING ? 'gpu' : PARTITION_STATES[state],
      synth_ms: u && u.synthMs >= 0 ? u.synthMs : null,
      gpu_ms: u && u.gpuMs >= 0 ? u.gpuMs : null,
    };
    if (state === PART_FINALIZING) entry.finalizing = true;
    if (u && u.worker >= 0) entry.worker_id = u.worker;
    return entry;
  });
  return {
    job_id: job.id,
    proof_kind: job.kind >= 0 ? KIND_LABELS[job.kind] : 'unknown',
    started_secs_ago: Math.max(0, (lastMs - job.firstMs) / 1000),
    total_partitions: total,
    ...(known ? {} : { total_partitions_estimated: true }),
    partitions_done: done,
    partitions,
    ...(job.kind >= 0 ? { kind_evidence: job.evidence } : {}),
  };
}

/** The daemon's own cumulative per-kind counters, from the surface that sees every kind. */
function counters(src: MergedAttachSource, base: Obj): Obj | undefined {
  const g = src.grpc;
  if (g && g.daemonCounts) {
    const byKind = (m: Map<number, number>) => {
      const out: Record<string, number> = {};
      for (let k = 0; k < KIND_SLOTS; k++) if (m.has(k) || k < OTHER_KIND_INDEX) out[KIND_LABELS[k]] = m.get(k) ?? 0;
      return out;
    };
    const c = g.daemonCounts;
    return {
      total_completed: c.totalCompleted,
      total_failed: c.totalFailed,
      completed_by_kind: byKind(c.completed),
      failed_by_kind: byKind(c.failed),
      queue_depth: g.queueDepthTotal,
      source: 'grpc',
    };
  }
  return base.counters as Obj | undefined;
}

export function mergedStatusBody(src: MergedAttachSource, now: number): Obj {
  const m = src.model;
  const base: Obj = src.status?.attach.statusBody() ?? {};
  const jobsByHandle = new Map<number, string>();
  const pipelines: Obj[] = [];
  const tl = src.timeline;
  if (tl) {
    const lastMs = tl.lastOffsetMs;
    const jobs = [...tl.jobs.values()].sort((a, b) => (b.live > 0 ? 1 : 0) - (a.live > 0 ? 1 : 0) || b.lastMs - a.lastMs);
    for (const j of jobs) jobsByHandle.set(j.handle, j.id);
    for (const j of jobs.slice(0, MAX_JOBS_LISTED)) pipelines.push(pipelineOf(src, j, lastMs));
  }
  const gpuWorkers = m.topology.workers.map((w, i) => {
    const busy = m.wBusy[i] === 1;
    let job: string | null = null;
    if (busy) job = jobsByHandle.get(m.wJob[i]) ?? (src.currentDriver === 'grpc' ? src.grpc!.wJob[w.id] || null : null);
    return {
      worker_id: w.id,
      gpu_ordinal: w.gpu,
      state: busy ? 'proving' : 'idle',
      current_job: busy ? job : null,
      current_partition: busy ? m.wPartition[i] : null,
      // As cuzk: since the partition it runs now was picked up (busy_since is reset at every pickup).
      busy_secs: busy ? Math.max(0, now - m.wPickNs[i]) / 1e9 : null,
      // Ours: since the worker last went from idle to busy (a stint spans partitions).
      stint_secs: busy ? Math.max(0, now - m.wSinceNs[i]) / 1e9 : null,
      busy_total_secs: m.workerBusyNsAt(i, now) / 1e9,
      current_kind: busy && m.wKind[i] >= 0 ? KIND_LABELS[m.wKind[i]] : null,
    };
  });
  const uptime = typeof base.uptime_secs === 'number' ? base.uptime_secs : tl && tl.lastOffsetMs >= 0 ? tl.lastOffsetMs / 1000 : 0;
  const c = counters(src, base);
  return {
    ...base,
    uptime_secs: uptime,
    pipelines,
    gpu_workers: gpuWorkers,
    ...(c ? { counters: c } : {}),
    ...(src.grpc ? { gpus: m.topology.gpus.map((g) => ({ ordinal: g.ordinal, name: g.name })) } : {}),
  };
}
