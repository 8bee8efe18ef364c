/**
 * The upstream renderer: turns the reference engine's drained events into what upstream
 * cuzk (curio e0294b0f, extern/cuzk) shows on its three surfaces, at upstream's call sites:
 * TIMELINE lines (timeline-writer.ts), /status state (status-tracker.ts, StatusTracker) and
 * GetStatus/GetMetrics/AwaitProof state (job-tracker.ts, JobTracker), plus the ground truth's
 * `upstream` figures (upstream-ledger.ts). It is the engine's single event observer.
 *
 * The engine is the truth of what ran and when; where upstream's code takes another path
 * than the engine does, the renderer renders upstream's (docs/upstream-conformance.md):
 *  - GPU_START right after GPU_PICKUP (engine.rs GPU worker: written before
 *    gpu_prove_start, i.e. before the GPU mutex wait), no line at the lock acquire;
 *  - a WindowPoSt's GPU_END carries `partition=<request partition_index>`
 *    (pipeline.rs synthesize_window_post → gpu_prove_finish's partition_index);
 *  - GPU failure (`finish`: gpu_prove_finish error): no GPU_END; /status `done`
 *    (process_partition_result calls partition_gpu_end first); current_job cleared; job
 *    failed once (assembler.failed); (`start`: gpu_prove_start error): no end, /status left
 *    in `gpu`, record_failure every time, job not failed — siblings go on;
 *  - siblings of a failed partitioned job: pending ones skipped at synthesis dispatch (no
 *    line); ones the engine cut short in synthesis complete it (SYNTH_END at the cut, its
 *    elapsed synth_ms); synthesized ones are picked up and skipped by the next free worker
 *    (GPU_PICKUP only; /status `gpu`, worker `proving` until its next pickup); ones on the GPU
 *    end normally (GPU_END with the engine's GPU time), their result discarded;
 *  - synthesis failure: SYNTH_START only; /status `failed`, synth_active not decremented;
 *  - split prove off (CUZK_DISABLE_SPLIT_PROVE=1): no GPU_START/GPU_END;
 *  - pipeline off: no TIMELINE, /status workers only; a worker shows its job start to end.
 *
 * Past ~500 lines on purpose: one event observer: each upstream call site it mirrors (the list
 * above) touches several of the three surfaces at once.
 */
import {
  EVENT_SIZE,
  EVF_ABANDONED,
  EV_GPU_LOCK,
  EV_JOB_DONE,
  EV_JOB_QUEUED,
  EV_JOB_STARTED,
  EV_OFF_AUX,
  EV_OFF_FLAGS,
  EV_OFF_JOB,
  EV_OFF_KIND,
  EV_OFF_PARTITION,
  EV_OFF_T_NS,
  EV_OFF_TYPE,
  EV_OFF_VALUE,
  EV_OFF_WORKER,
  EV_PARTITION,
  NO_WORKER,
  readU64,
} from '../engine/model/event-layout';
import { OUTCOME_CANCELLED, OUTCOME_COMPLETED, PART_DONE, PART_FAILED, PART_GPU, PART_SYNTH_DONE, PART_SYNTHESIZING, PROOF_KINDS } from '../engine/model/kinds';
import { failedAnswer, JobTracker } from './job-tracker';
import { RequestRegistry, WINDOW_POST, isMonolithicKind } from './requests';
import { ENGINE_TARGET, ms, RJob, UpstreamResults } from './results';

const NS = 1e9;
import type { StatusTracker } from './status-tracker';
import type { TimelineWriter } from './timeline-writer';
import type { UpstreamLedger } from './upstream-ledger';

export type GpuFailureMode = 'finish' | 'start';

export interface RendererOptions {
  workerGpus: readonly number[];
  splitProve: boolean;
  pipeline: boolean;
  gpuFailure: GpuFailureMode;
  /** Our fix: /status shows PoSt jobs (registered as 1-partition jobs). */
  showsPost: boolean;
  /**
   * Fault injection (the engine's faults.status_bug_kind/mode): /status as before upstream's
   * `still_mine` fix — `clobber`: a partition's end clears its worker whatever it holds;
   * `skip`: the worker is never marked proving for that kind.
   */
  statusBug?: { kind: number; mode: 'clobber' | 'skip' } | null;
  /** Reproduce the GPU queue's (0,0) key collision (upstream: always; default true). */
  queueCollisions?: boolean;
}

export interface RendererDeps {
  timeline: TimelineWriter | null;
  status: StatusTracker;
  jobs: JobTracker;
  ledger: UpstreamLedger;
  requests: RequestRegistry;
  /** A handle nobody registered (a job submitted straight to the engine): its request id. */
  fallbackId(handle: number): string;
  /** engine.rs verify_porep_proof of the job's proof: true = passed. */
  selfCheck(handle: number): boolean;
  proofBytes(handle: number): Buffer;
}

// Render state of an engine partition.
const R_PENDING = 0;
const R_SYNTH = 1;
const R_QUEUED = 2;
const R_GPU = 3;
const R_FINAL = 4;
/** Engine runs it, upstream would not (skipped): nothing more is rendered for it. */
const R_SUPPRESSED = 5;

interface SkipItem {
  id: string;
  part: number;
  seq: number;
}


export class UpstreamRenderer {
  /** Sequence number of the last event seen; sequence gaps (ring overflow: rendering incomplete). */
  lastSeq = 0;
  gaps = 0;
  private readonly rjobs = new Map<number, RJob>();
  private nextSeq = 0;
  private readonly skipQueue: SkipItem[] = [];
  /** Per worker: free to take the next GPU queue item (upstream's loop would pop now). */
  private readonly free: boolean[];
  /** Pipeline off: the job each worker shows, and jobs waiting for one. */
  private readonly shows: (RJob | null)[];
  private readonly waiting: RJob[] = [];
  /** Live engine jobs per id (duplicates) and ids seen finished (retries; bounded). */
  private readonly liveIds = new Map<string, number>();
  private readonly endedIds = new Set<string>();
  /**
   * The GPU queue item under key (0, 0) not yet popped: every monolithic job and the first
   * partitioned job's partition 0 (engine.rs PriorityWorkQueue::push is a BTreeMap insert, so
   * a second item under the key REPLACES the first, which is lost).
   */
  private zeroKey: { r: RJob; p: number } | null = null;

  private readonly results: UpstreamResults;

  constructor(
    private readonly o: RendererOptions,
    private readonly d: RendererDeps,
  ) {
    this.results = new UpstreamResults(d, o.showsPost, (r) => this.bug(r) === 'clobber');
    this.free = o.workerGpus.map(() => true);
    this.shows = o.workerGpus.map(() => null);
  }

  /** Partitions picked-and-skipped still waiting for a free worker. */
  get pendingSkips(): number {
    return this.skipQueue.length;
  }

  /** Engine jobs the renderer still follows. */
  get liveJobs(): number {
    return this.rjobs.size;
  }

  onEvents(view: DataView, n: number): void {
    for (let i = 0; i < n; i++) {
      const off = i * EVENT_SIZE;
      const seq = readU64(view, off);
      if (this.lastSeq !== 0 && seq !== this.lastSeq + 1) this.gaps++;
      this.lastSeq = seq;
      const type = view.getUint16(off + EV_OFF_TYPE, true);
      const t = readU64(view, off + EV_OFF_T_NS);
      switch (type) {
        case EV_JOB_QUEUED:
          this.queued(readU64(view, off + EV_OFF_JOB), view.getUint8(off + EV_OFF_KIND), view.getUint32(off + EV_OFF_PARTITION, true), t);
          break;
        case EV_JOB_STARTED:
          if (!this.o.pipeline) this.startedNoPipeline(readU64(view, off + EV_OFF_JOB), t);
          break;
        case EV_PARTITION:
          if (!this.o.pipeline) this.accumulate(readU64(view, off + EV_OFF_JOB), view.getUint32(off + EV_OFF_AUX, true), readU64(view, off + EV_OFF_VALUE));
          else {
            this.partition(
              readU64(view, off + EV_OFF_JOB),
              view.getUint32(off + EV_OFF_PARTITION, true),
              view.getUint32(off + EV_OFF_AUX, true),
              view.getUint16(off + EV_OFF_WORKER, true),
              view.getUint16(off + EV_OFF_FLAGS, true),
              readU64(view, off + EV_OFF_VALUE),
              t,
            );
          }
          break;
        case EV_GPU_LOCK:
          // Split prove: gpu_prove_start returns at the lock release; the worker loops.
          if (this.o.pipeline && this.o.splitProve && view.getUint32(off + EV_OFF_AUX, true) === 0) this.workerFree(view.getUint16(off + EV_OFF_WORKER, true), t);
          break;
        case EV_JOB_DONE:
          this.done(readU64(view, off + EV_OFF_JOB), view.getUint32(off + EV_OFF_AUX, true), t);
          break;
      }
    }
    this.d.timeline?.flush();
  }

  /** Marks an engine job as cancelled by us (--simulate.cancel): its end answers CANCELLED. */
  markCancelled(handle: number): void {
    const r = this.rjobs.get(handle);
    if (!r) return;
    r.cancelled = true;
    const a = r.mono ? undefined : this.d.jobs.assemblers.get(r.id);
    if (a) a.failed = true;
  }

  private queued(handle: number, kind: number, nParts: number, t: number): void {
    const job = this.d.requests.get(handle) ?? {
      handle,
      requests: [{ id: this.d.fallbackId(handle), kind, partitionIndex: 0, sectorNumber: 0, minerId: 0, submittedAt: t }],
      monolithic: isMonolithicKind(kind),
    };
    const id = job.requests[0].id;
    const r: RJob = {
      handle,
      job,
      id,
      kind,
      mono: job.monolithic,
      parts: new Uint8Array(nParts),
      synthStart: new Float64Array(nParts),
      synthNs: new Float64Array(nParts),
      seq: job.monolithic ? 0 : this.nextSeq++,
      cancelled: false,
      gpuTotal: 0,
    };
    this.rjobs.set(handle, r);
    const L = this.d.ledger;
    for (const q of job.requests) {
      const live = this.liveIds.get(q.id) ?? 0;
      if (live > 0) L.count('duplicates_in_flight');
      else if (this.endedIds.has(q.id)) L.count('retries');
      this.liveIds.set(q.id, live + 1);
    }
    if (job.requests.length > 1) {
      L.count('batches');
      L.count('batch_requests', job.requests.length);
    }
    if (!this.o.pipeline) return;
    const kindName = PROOF_KINDS[kind] ?? 'unknown';
    this.d.timeline?.tracing(t, 'INFO', 'cuzk_core::scheduler', 'job enqueued', [['job_id', id], ['proof_kind', kindName]]);
    // process_batch (partitioned path): st.register_job + t.assemblers.insert, at dispatch.
    if (!r.mono) {
      this.d.status.registerJob(id, kindName, nParts, t);
      this.d.jobs.registerAssembler(id, kind, nParts, t, job.requests[0].submittedAt);
    } else if (this.o.showsPost) this.d.status.registerJob(id, kindName, 1, t);
  }

  private partition(handle: number, p: number, state: number, worker: number, flags: number, value: number, t: number): void {
    const r = this.rjobs.get(handle);
    if (!r || p >= r.parts.length) return;
    switch (state) {
      case PART_SYNTHESIZING:
        return this.synthStart(r, p, t);
      case PART_SYNTH_DONE:
        return this.synthEnd(r, p, value, t);
      case PART_GPU:
        return this.pickup(r, p, worker, t);
      case PART_DONE:
        if (worker !== NO_WORKER) this.gpuEnd(r, p, worker, value, t);
        return;
      case PART_FAILED:
        if (flags & EVF_ABANDONED) this.abandoned(r, p, worker, value, t);
        else if (worker !== NO_WORKER) this.gpuFailed(r, p, worker, value, t);
        else this.synthFailed(r, p, t);
        return;
    }
  }

  private synthStart(r: RJob, p: number, t: number): void {
    r.synthStart[p] = t;
    // engine.rs synthesis dispatcher: "Check if job already failed" — skipped, no line.
    if (!r.mono && this.d.jobs.assemblers.get(r.id)?.failed) {
      r.parts[p] = R_SUPPRESSED;
      this.d.ledger.count('skips_at_dispatch');
      return;
    }
    r.parts[p] = R_SYNTH;
    if (r.mono) {
      if (this.o.showsPost) this.d.status.partitionSynthStart(r.id, 0, t);
      this.d.timeline?.synthStart(t, r.id, null, PROOF_KINDS[r.kind] ?? 'unknown');
      return;
    }
    this.d.status.partitionSynthStart(r.id, p, t);
    this.d.timeline?.synthStart(t, r.id, p, '');
  }

  private synthEnd(r: RJob, p: number, synthNs: number, t: number): void {
    if (r.parts[p] !== R_SYNTH) return;
    r.parts[p] = R_QUEUED;
    r.synthNs[p] = synthNs;
    if (this.o.queueCollisions !== false && r.seq === 0 && (r.mono ? 0 : p) === 0) this.queueZeroKey(r, p);
    this.d.ledger.synth(r.kind, synthNs);
    const part = r.mono ? null : p;
    if (!r.mono || this.o.showsPost) this.d.status.partitionSynthEnd(r.id, r.mono ? 0 : p, t);
    this.d.timeline?.synthEnd(t, r.id, part, synthNs);
    if (!r.mono) this.d.timeline?.tracing(t, 'INFO', ENGINE_TARGET, 'partition synthesis complete, pushing to GPU queue', [['job_id', r.id], ['partition', p], ['synth_ms', ms(synthNs)]]);
  }

  private queueZeroKey(r: RJob, p: number): void {
    const old = this.zeroKey;
    this.zeroKey = { r, p };
    if (!old || old.r.parts[old.p] !== R_QUEUED) return;
    // The older item is dropped: its lines end at GPU_QUEUE, nobody is ever answered.
    old.r.parts[old.p] = R_SUPPRESSED;
    this.d.ledger.count('gpu_queue_collisions');
  }

  private pickup(r: RJob, p: number, worker: number, t: number): void {
    this.free[worker] = false;
    if (this.skipQueue.length > 0) this.drainSkips(worker, t); // older queue items first
    if (this.zeroKey && this.zeroKey.r === r && this.zeroKey.p === p) this.zeroKey = null;
    if (r.parts[p] !== R_QUEUED) return;
    this.d.ledger.stageOn(worker, t);
    const tl = this.d.timeline;
    if (r.mono) {
      r.parts[p] = R_GPU;
      if (this.o.showsPost) this.d.status.partitionGpuStart(r.id, 0, worker, t);
      tl?.pickup(t, r.id, worker, null);
      this.d.jobs.setCurrent(worker, { id: r.id, kind: r.kind, handle: r.handle, partition: -1 });
      if (this.o.splitProve) tl?.gpuStart(t, r.id, worker, null);
      return;
    }
    this.d.status.partitionGpuStart(r.id, p, worker, t, this.bug(r) !== 'skip');
    tl?.pickup(t, r.id, worker, p);
    if (this.d.jobs.assemblers.get(r.id)?.failed) {
      // "skipping GPU prove for failed partitioned job": pickup line only.
      r.parts[p] = R_SUPPRESSED;
      this.d.ledger.skip(worker);
      this.d.ledger.stageOff(worker, t);
      tl?.tracing(t, 'INFO', ENGINE_TARGET, 'skipping GPU prove for failed partitioned job', [['job_id', r.id], ['partition', `Some(${p})`]]);
      return;
    }
    r.parts[p] = R_GPU;
    this.d.jobs.setCurrent(worker, { id: r.id, kind: r.kind, handle: r.handle, partition: p });
    if (this.o.splitProve) tl?.gpuStart(t, r.id, worker, p);
  }

  /** The request partition_index a WindowPoSt's GPU_END carries; null for other monolithic kinds. */
  private monoEndPartition(r: RJob): number | null {
    return r.kind === WINDOW_POST && r.job.requests.length === 1 ? r.job.requests[0].partitionIndex : null;
  }

  private gpuEnd(r: RJob, p: number, worker: number, gpuNs: number, t: number, discard = false): void {
    if (r.parts[p] !== R_GPU) {
      if (!this.o.splitProve) this.workerFree(worker, t);
      return;
    }
    r.parts[p] = R_FINAL;
    this.d.ledger.gpuEnded(r.kind, worker, gpuNs);
    this.d.ledger.stageOff(worker, t);
    if (this.o.splitProve) {
      this.d.timeline?.gpuEnd(t, r.id, worker, r.mono ? this.monoEndPartition(r) : p, gpuNs);
      this.d.timeline?.tracing(t, 'INFO', 'cuzk_core::pipeline', 'GPU prove complete (split)', [['proof_count', 1], ['gpu_ms', ms(gpuNs)]]);
    }
    this.d.jobs.clearCurrent(worker, r.handle, r.mono ? -1 : p);
    if (discard && r.mono) this.d.ledger.count('results_discarded');
    else if (r.mono) this.results.monoResult(r, worker, gpuNs, t);
    else this.results.partitionResult(r, p, worker, gpuNs, t, discard);
    if (!this.o.splitProve) this.workerFree(worker, t);
  }

  private gpuFailed(r: RJob, p: number, worker: number, gpuNs: number, t: number): void {
    if (r.parts[p] !== R_GPU) {
      if (!this.o.splitProve) this.workerFree(worker, t);
      return;
    }
    r.parts[p] = R_FINAL;
    const L = this.d.ledger;
    L.gpuUnended(r.kind, worker, gpuNs);
    L.stageOff(worker, t);
    const J = this.d.jobs;
    const tl = this.d.timeline;
    if (this.o.gpuFailure === 'start' && this.o.splitProve) {
      // gpu_prove_start error: current_job cleared, record_failure, the job's callers get
      // Failed — the assembler is not marked failed, /status is not touched.
      L.count('gpu_failures_start');
      tl?.tracing(t, 'ERROR', ENGINE_TARGET, 'GPU prove start failed', [['error', 'GPU prove start failed: injected fault']]);
      const cur = J.workers[worker];
      if (cur && cur.handle === r.handle && cur.partition === (r.mono ? -1 : p)) J.workers[worker] = null;
      for (const q of r.job.requests) {
        J.recordFailure(r.kind);
        J.deliver(q.id, failedAnswer(q.id, 'GPU prove start failed: injected fault'));
      }
      return;
    }
    L.count('gpu_failures_finish');
    J.clearCurrent(worker, r.handle, r.mono ? -1 : p);
    if (r.mono) {
      tl?.tracing(t, 'ERROR', ENGINE_TARGET, 'GPU proving failed', [['error', 'GPU prove finish failed: injected fault']]);
      this.results.failJob(r, 'GPU prove finish failed: injected fault');
    } else {
      this.d.status.partitionGpuEnd(r.id, p, worker, t);
      tl?.tracing(t, 'ERROR', ENGINE_TARGET, 'partition GPU proving failed', [['job_id', r.id], ['partition', p]]);
      this.results.failJob(r, `partition ${p} GPU prove failed: GPU prove finish failed: injected fault`);
    }
    if (!this.o.splitProve) this.workerFree(worker, t);
  }

  private synthFailed(r: RJob, p: number, t: number): void {
    if (r.parts[p] !== R_SYNTH) return;
    r.parts[p] = R_FINAL;
    const tl = this.d.timeline;
    if (r.mono) {
      this.d.ledger.count('synth_failures_monolithic');
      tl?.tracing(t, 'ERROR', ENGINE_TARGET, 'synthesis failed', [['error', 'injected fault']]);
      this.results.failJob(r, 'synthesis failed: injected fault');
      return;
    }
    this.d.ledger.count('synth_failures_partitioned');
    this.d.status.partitionFailed(r.id, p); // no partition_synth_end: synth_active stays up
    tl?.tracing(t, 'ERROR', ENGINE_TARGET, 'partition synthesis failed', [['job_id', r.id], ['partition', p]]);
    this.results.failJob(r, `partition ${p} synthesis failed: injected fault`);
  }

  /** A sibling the engine abandoned (its job failed or was cancelled): upstream's path for it. */
  private abandoned(r: RJob, p: number, worker: number, gpuNs: number, t: number): void {
    const st = r.parts[p];
    const L = this.d.ledger;
    if (st === R_PENDING) {
      r.parts[p] = R_FINAL;
      if (!r.mono) L.count('skips_at_dispatch');
      return;
    }
    if (st === R_SYNTH) {
      // Upstream lets the synthesis finish: SYNTH_END + GPU_QUEUE at the cut, its elapsed time.
      L.count('cut_synth_rendered');
      r.parts[p] = R_SYNTH;
      this.synthEnd(r, p, Math.max(0, t - r.synthStart[p]), t);
    }
    if (r.parts[p] === R_QUEUED) {
      r.parts[p] = R_FINAL;
      if (r.mono) return;
      this.skipQueue.push({ id: r.id, part: p, seq: r.seq });
      this.skipQueue.sort((a, b) => a.seq - b.seq || a.part - b.part);
      const w = this.free.indexOf(true);
      if (w >= 0) this.drainSkips(w, t);
      return;
    }
    if (st === R_GPU && worker !== NO_WORKER) {
      // Upstream does not cut a GPU stage: it ends normally and its result is discarded.
      L.count('abandoned_gpu_rendered');
      this.gpuEnd(r, p, worker, gpuNs, t, r.cancelled || r.mono);
      return;
    }
    if (worker !== NO_WORKER && !this.o.splitProve) this.workerFree(worker, t);
  }

  /** A worker is free: it pops the GPU queue; failed jobs' items are picked up and skipped. */
  private bug(r: RJob): 'clobber' | 'skip' | null {
    const b = this.o.statusBug;
    return b && b.kind === r.kind ? b.mode : null;
  }

  private workerFree(worker: number, t: number): void {
    if (worker >= this.free.length) return;
    this.free[worker] = true;
    if (this.skipQueue.length > 0) this.drainSkips(worker, t);
  }

  private drainSkips(worker: number, t: number): void {
    const tl = this.d.timeline;
    for (const it of this.skipQueue.splice(0)) {
      this.d.status.partitionGpuStart(it.id, it.part, worker, t);
      tl?.pickup(t, it.id, worker, it.part);
      tl?.tracing(t, 'INFO', ENGINE_TARGET, 'skipping GPU prove for failed partitioned job', [['job_id', it.id], ['partition', `Some(${it.part})`]]);
      this.d.ledger.skip(worker);
    }
  }

  /** Pipeline off (engine.rs "Phase 1: Monolithic workers"): a worker takes the whole job. */
  private startedNoPipeline(handle: number, t: number): void {
    const r = this.rjobs.get(handle);
    if (!r) return;
    const w = this.shows.indexOf(null);
    if (w < 0) this.waiting.push(r);
    else this.show(w, r, t);
  }

  /** Pipeline off: nothing is rendered per partition; the answer's timings add them up. */
  private accumulate(handle: number, state: number, value: number): void {
    const r = this.rjobs.get(handle);
    if (!r) return;
    if (state === PART_SYNTH_DONE) r.synthNs[0] += value;
    else if (state === PART_DONE) r.gpuTotal += value;
  }

  private show(w: number, r: RJob, t: number): void {
    this.shows[w] = r;
    this.d.jobs.setCurrent(w, { id: r.id, kind: r.kind, handle: r.handle, partition: -1 });
    this.d.ledger.jobOn(w, t);
  }

  private done(handle: number, outcome: number, t: number): void {
    const r = this.rjobs.get(handle);
    if (!r) return;
    this.rjobs.delete(handle);
    this.d.requests.forget(handle);
    for (const q of r.job.requests) {
      const live = (this.liveIds.get(q.id) ?? 1) - 1;
      if (live > 0) this.liveIds.set(q.id, live);
      else this.liveIds.delete(q.id);
      this.endedIds.add(q.id);
      if (this.endedIds.size > 100_000) this.endedIds.delete(this.endedIds.values().next().value as string);
    }
    const J = this.d.jobs;
    if (!this.o.pipeline) {
      const w = this.shows.indexOf(r);
      if (w < 0) {
        // Never shown (more jobs than workers): it runs start to end now.
        const i = this.waiting.indexOf(r);
        if (i >= 0) this.waiting.splice(i, 1);
      } else {
        J.workers[w] = null;
        this.d.ledger.jobOff(w, t);
        this.shows[w] = null;
        const next = this.waiting.shift();
        if (next) this.show(w, next, t);
      }
      const q = r.job.requests[0];
      if (outcome === OUTCOME_COMPLETED) {
        J.recordCompletion(r.kind, (t - q.submittedAt) / NS);
        J.deliver(q.id, this.results.completedAnswer(q.id, handle, r.synthNs[0], r.gpuTotal, t - q.submittedAt, r.synthNs[0] + r.gpuTotal));
      } else if (outcome === OUTCOME_CANCELLED || r.cancelled) {
        J.deliver(q.id, failedAnswer(q.id, '', 'CANCELLED'));
      } else {
        J.recordFailure(r.kind);
        J.deliver(q.id, failedAnswer(q.id, 'proof failed: injected fault'));
      }
      return;
    }
    if (outcome === OUTCOME_CANCELLED || r.cancelled) {
      // Ours (--simulate.cancel): upstream cannot cancel.
      for (const q of r.job.requests) if (J.hasPending(q.id)) J.deliver(q.id, failedAnswer(q.id, '', 'CANCELLED'));
      if (!r.mono) {
        const a = J.assemblers.get(r.id);
        if (a) a.failed = true;
      }
    }
  }
}
