/**
 * One simulated cuzk daemon: the reference engine, the upstream renderer on its events, and
 * upstream's request handling around it (curio e0294b0f):
 *  - submit (engine.rs Engine::submit): an empty id becomes a uuid v4; a completion channel
 *    is pushed to `pending[id]` (no duplicate check: a second request with an id in flight
 *    is accepted); the request goes to the scheduler — here, through the batch collector
 *    when batching is on, to the engine;
 *  - prove (Engine::prove): the same, waiting on its own channel;
 *  - awaitProof (Engine::await_proof): `completed` first, then a new listener on `pending`,
 *    else not found;
 *  - cancel: upstream's CancelProof does nothing (service.rs: "not yet implemented",
 *    was_running false); with `realCancel` (ours) it cancels the engine job(s) of that id;
 *  - the three surfaces' state: /status (statusJson: the StatusTracker plus the engine's
 *    memory, allocations and buffers), GetStatus and GetMetrics (service.rs), and the
 *    ground truth's `upstream` part.
 */
import { randomUUID } from 'node:crypto';
import { CTR, NativeError, STATUS } from '../engine/sources/native/abi';
import { PROOF_KINDS } from '../engine/model/kinds';
import type { NativeEngine } from '../engine/sources/native/native-engine';
import { BatchCollector } from './batch-collector';
import { failedAnswer, JobAnswer, JobTracker, Waiter } from './job-tracker';
import { cuzkMetricsText, METRIC_LABELS } from './metrics-text';
import { GpuFailureMode, UpstreamRenderer } from './renderer';
import { isMonolithicKind, RequestRegistry, SimRequest } from './requests';
import { cuzkStatusView } from './status-server';
import { StatusTracker } from './status-tracker';
import type { TimelineWriter } from './timeline-writer';
import { UpstreamLedger } from './upstream-ledger';

export interface SimCoreOptions {
  splitProve: boolean;
  pipeline: boolean;
  gpuFailure: GpuFailureMode;
  batchSize: number;
  batchWaitMs: number;
  realCancel: boolean;
  selfCheck: boolean;
  statusShowsPost: boolean;
  statusExtensions: boolean;
  clearsOwnerOnly: boolean;
  /** The engine's faults.status_bug_kind/mode, reproduced on /status (renderer.ts). */
  statusBug?: { kind: number; mode: 'clobber' | 'skip' } | null;
  /** Upstream's GPU queue key collision (a job lost); default true. */
  queueCollisions?: boolean;
}

export const DEFAULT_CORE_OPTIONS: SimCoreOptions = {
  splitProve: true,
  pipeline: true,
  gpuFailure: 'finish',
  batchSize: 1,
  batchWaitMs: 10_000,
  realCancel: false,
  selfCheck: true,
  statusShowsPost: false,
  statusExtensions: false,
  clearsOwnerOnly: false,
};

/** A request as SubmitProof carries it (kind as a native index). */
export interface SubmitInput {
  id: string;
  kind: number;
  priority?: number;
  partitionIndex?: number;
  sectorNumber?: number;
  minerId?: number;
}

export class SubmitError extends Error {
  constructor(
    readonly reason: 'full' | 'invalid' | 'internal',
    message: string,
  ) {
    super(message);
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const pick = (o: unknown, keys: readonly string[]): Obj => {
  const out: Obj = {};
  if (isObj(o)) for (const k of keys) if (k in o) out[k] = o[k];
  return out;
};

export class SimCore {
  readonly requests = new RequestRegistry();
  readonly jobs: JobTracker;
  readonly status: StatusTracker;
  readonly ledger: UpstreamLedger;
  readonly renderer: UpstreamRenderer;
  readonly workerGpus: readonly number[];
  readonly startNs: number;
  private readonly batcher: BatchCollector | null;
  private readonly handlesById = new Map<string, Set<number>>();

  constructor(
    readonly engine: NativeEngine,
    readonly timeline: TimelineWriter | null,
    readonly o: SimCoreOptions,
    startNs: number,
  ) {
    this.startNs = startNs;
    const topo = engine.model.topology;
    this.workerGpus = topo.workers.map((w) => w.gpu);
    this.jobs = new JobTracker(this.workerGpus, o.clearsOwnerOnly);
    this.status = new StatusTracker(startNs);
    this.status.registerWorkers(topo.workers.map((w) => [w.id, w.gpu] as const));
    this.ledger = new UpstreamLedger(this.workerGpus);
    this.renderer = new UpstreamRenderer(
      { workerGpus: this.workerGpus, splitProve: o.splitProve, pipeline: o.pipeline, gpuFailure: o.gpuFailure, showsPost: o.statusShowsPost, statusBug: o.statusBug, queueCollisions: o.queueCollisions },
      {
        timeline,
        status: this.status,
        jobs: this.jobs,
        ledger: this.ledger,
        requests: this.requests,
        fallbackId: (h) => {
          try {
            return engine.requestId(h);
          } catch {
            return String(h);
          }
        },
        selfCheck: (h) => this.selfCheck(h),
        proofBytes: (h) => {
          try {
            return engine.proof(h);
          } catch {
            return Buffer.alloc(0);
          }
        },
      },
    );
    this.batcher =
      o.batchSize > 1
        ? new BatchCollector({ maxBatchSize: o.batchSize, maxBatchWaitMs: o.batchWaitMs }, (reqs) => {
            try {
              this.dispatch(reqs);
            } catch (e) {
              // The engine refused the batch (its queue_limit): its callers get the refusal.
              for (const q of reqs) this.jobs.deliver(q.id, failedAnswer(q.id, (e as Error).message));
            }
          })
        : null;
  }

  /** Becomes the engine's single event observer; events already pending are drained through it. */
  install(): void {
    this.engine.onEvents = (view, n) => this.renderer.onEvents(view, n);
    this.engine.refresh();
  }

  /** engine.rs verify_porep_proof at assembly (the reference verifier; the sim backend has no proofs to check). */
  private selfCheck(handle: number): boolean {
    if (!this.o.selfCheck || this.engine.backend === 'sim') return true;
    try {
      return this.engine.verify(this.engine.proof(handle), this.engine.requestId(handle));
    } catch {
      return false;
    }
  }

  /**
   * Scheduler::stats / len: requests still in upstream's scheduler heap. The dispatcher takes
   * PoRep/Snap requests at once (their partitions wait in queues /status and gRPC never
   * count; batches wait in the collector, uncounted); a PoSt request waits while the
   * dispatcher is busy with another (synthesis_concurrency 1: a monolithic synthesis is
   * awaited inline) — here: PoSt jobs the engine has not started yet.
   */
  private queuedByKind(): number[] {
    const { words } = this.engine.readCounters();
    const n = words[CTR.KINDS];
    return PROOF_KINDS.map((_, k) => (k < n && isMonolithicKind(k) ? words[CTR.HDR_WORDS + k * CTR.KIND_WORDS + CTR.K_QUEUE_DEPTH] : 0));
  }

  /** Engine::submit. Returns the job id and the queue position. */
  submit(input: SubmitInput, waiter: Waiter = () => {}): { jobId: string; position: number } {
    const id = input.id !== '' ? input.id : randomUUID();
    const req: SimRequest = {
      id,
      kind: input.kind,
      partitionIndex: input.partitionIndex ?? 0,
      sectorNumber: input.sectorNumber ?? 0,
      minerId: input.minerId ?? 0,
      submittedAt: this.engine.nowNs(),
    };
    const position = this.queuedByKind().reduce((a, b) => a + b, 0);
    if (this.batcher) {
      // Accepted now; the engine sees it when its batch flushes (a refusal then fails it).
      this.jobs.addWaiter(id, waiter);
      this.batcher.submit(req);
    } else {
      this.dispatch([req], input.priority);
      this.jobs.addWaiter(id, waiter);
    }
    return { jobId: id, position };
  }

  /** Engine::prove: submit and wait on this call's own channel. */
  prove(input: SubmitInput): Promise<JobAnswer> {
    return new Promise<JobAnswer>((resolve, reject) => {
      try {
        this.submit(input, resolve);
      } catch (e) {
        reject(e);
      }
    });
  }

  awaitProof(id: string): JobAnswer | Promise<JobAnswer> | null {
    return this.jobs.awaitProof(id);
  }

  /** One engine job for a single request (partitioned or PoSt) or a batch (monolithic). */
  private dispatch(reqs: SimRequest[], priority?: number): void {
    const first = reqs[0];
    const kindName = PROOF_KINDS[first.kind];
    let handle: number;
    try {
      handle = this.engine.submit(kindName, { requestId: first.id, priority: priority ?? -1, partitions: reqs.length > 1 || !this.o.pipeline ? 1 : 0 });
    } catch (e) {
      if (e instanceof NativeError && e.status === STATUS.EFULL) throw new SubmitError('full', (e as Error).message);
      if (e instanceof NativeError && e.status === STATUS.EINVAL) throw new SubmitError('invalid', (e as Error).message);
      throw new SubmitError('internal', (e as Error).message);
    }
    this.requests.register({ handle, requests: reqs, monolithic: reqs.length > 1 || isMonolithicKind(first.kind) });
    for (const q of reqs) {
      let s = this.handlesById.get(q.id);
      if (!s) this.handlesById.set(q.id, (s = new Set()));
      s.add(handle);
    }
  }

  /** CancelProof: upstream does nothing; with realCancel the engine jobs of the id are cancelled. */
  cancel(id: string): boolean {
    if (!this.o.realCancel) {
      this.ledger.count('cancels_ignored');
      return false;
    }
    let any = false;
    for (const h of this.handlesById.get(id) ?? []) {
      if (!this.requests.get(h)) continue; // finished
      try {
        this.renderer.markCancelled(h);
        this.engine.cancel(h);
        any = true;
      } catch {
        // finished meanwhile
      }
    }
    if (any) this.ledger.count('cancels');
    return any;
  }

  /** Forgets the handle map of finished jobs (called when the renderer let go of them). */
  private pruneHandles(): void {
    if (this.handlesById.size < 4096) return;
    for (const [id, s] of this.handlesById) {
      for (const h of s) if (!this.requests.get(h)) s.delete(h);
      if (s.size === 0) this.handlesById.delete(id);
    }
  }

  /** GET /status: upstream's StatusSnapshot (engine.rs detailed_status). */
  statusJson(): string {
    this.engine.refresh();
    this.pruneHandles();
    const snap = JSON.parse(this.engine.statusText()) as Obj;
    if (this.o.statusExtensions) return JSON.stringify(cuzkStatusView(snap, { showsPost: this.o.statusShowsPost, extensions: true }));
    this.status.setQueueDepth(this.queuedByKind().reduce((a, b) => a + b, 0));
    const t = this.status.snapshot(this.engine.nowNs());
    const alloc = isObj(snap.allocations) ? snap.allocations : {};
    const entries = (v: unknown) => (Array.isArray(v) ? v.map((e) => pick(e, ['circuit_id', 'bytes', 'last_used_secs_ago', 'evictable'])) : []);
    return JSON.stringify({
      uptime_secs: t.uptime_secs,
      memory: pick(snap.memory, ['total_bytes', 'used_bytes', 'available_bytes']),
      synthesis: { max_concurrent: isObj(snap.synthesis) ? snap.synthesis.max_concurrent : 0, active: t.synthesis_active },
      pipelines: t.pipelines,
      gpu_workers: t.gpu_workers,
      allocations: { srs: entries(alloc.srs), pce: entries(alloc.pce) },
      counters: t.counters,
      buffers: pick(snap.buffers, ['synth_in_flight', 'provers_in_flight', 'aux_in_flight', 'shells_in_flight', 'pending_handles']),
    });
  }

  private uptimeSeconds(): number {
    return Math.floor(Math.max(0, this.engine.nowNs() - this.startNs) / 1e9);
  }

  /** service.rs get_status. */
  getStatus(gpuNames: readonly string[]): Obj {
    this.engine.refresh();
    const J = this.jobs;
    const queued = this.queuedByKind();
    const running = PROOF_KINDS.map(() => 0);
    for (const w of J.workers) if (w) running[w.kind]++;
    return {
      gpus: J.workers.map((w, i) => {
        const gpu = this.workerGpus[i] ?? 0;
        return {
          ordinal: gpu,
          name: gpuNames[gpu] ?? `GPU ${gpu}`,
          vram_total_bytes: 0,
          vram_free_bytes: 0,
          current_job_id: w ? w.id : '',
          current_proof_kind: w ? JobTracker.kindName(w.kind) : '',
        };
      }),
      loaded_srs: [],
      queues: PROOF_KINDS.flatMap((k, i) => (queued[i] > 0 ? [{ proof_kind: k, pending: queued[i], in_progress: running[i] }] : [])),
      total_proofs_completed: J.totalCompleted,
      total_proofs_failed: J.totalFailed,
      uptime_seconds: this.uptimeSeconds(),
      pinned_memory_bytes: 0,
      pinned_memory_limit_bytes: 0,
    };
  }

  /** service.rs get_metrics. */
  getMetrics(): string {
    this.engine.refresh();
    const J = this.jobs;
    return cuzkMetricsText({
      totalCompleted: J.totalCompleted,
      totalFailed: J.totalFailed,
      uptimeSeconds: this.uptimeSeconds(),
      queueDepth: this.queuedByKind().reduce((a, b) => a + b, 0),
      completedByKind: [...J.completedByKind],
      failedByKind: [...J.failedByKind],
      recentByKind: J.recentByKind(),
      runningJobs: J.running(),
      gpuWorkers: J.workers.length,
    });
  }

  /** Nothing left to render: no engine job followed, no skip waiting, no batch collecting. */
  get settled(): boolean {
    return this.renderer.liveJobs === 0 && this.renderer.pendingSkips === 0 && (this.batcher?.size ?? 0) === 0;
  }

  /** The `upstream` block of /truth (upstream-ledger.ts). */
  upstreamTruth(): Obj {
    const L = this.ledger;
    const sc = this.status.counts;
    const now = this.engine.nowNs();
    const kinds: Obj = {};
    PROOF_KINDS.forEach((k, i) => {
      kinds[k] = {
        ...L.kinds[i],
        proofs_completed: this.jobs.completedByKind.get(i) ?? 0,
        proofs_failed: this.jobs.failedByKind.get(i) ?? 0,
        status_completed: sc.completedByKind.get(k) ?? 0,
        status_failed: sc.failedByKind.get(k) ?? 0,
      };
    });
    return {
      config: {
        split_prove: this.o.splitProve,
        pipeline: this.o.pipeline,
        gpu_failure: this.o.gpuFailure,
        batch_size: this.o.batchSize,
        tracing_lines: this.timeline?.tracingLines ?? 0,
      },
      kinds,
      workers: L.workers.map((w, i) => ({ ...w, busy_ns: L.busyAt(i, now) })),
      paths: { ...L.paths, torn_lines: this.timeline?.tornLines ?? 0 },
      status_jobs: this.status.jobCount,
      metric_labels: METRIC_LABELS,
    };
  }

  close(): void {
    this.batcher?.close();
  }
}
