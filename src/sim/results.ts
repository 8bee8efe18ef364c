/**
 * Results as upstream cuzk processes them (curio e0294b0f, engine.rs): the
 * `process_partition_result` and `process_monolithic_result` ports, and the failure arms that
 * fail a job once (`if !state.failed`) or every request of a monolithic job. Called by the
 * renderer (renderer.ts) at the engine's end of a partition; state lives in the JobTracker
 * (assemblers, counters, answers) and StatusTracker ports.
 */
import { PROOF_KINDS } from '../engine/model/kinds';
import { failedAnswer, JobAnswer, JobTracker } from './job-tracker';
import type { EngineJob } from './requests';
import type { StatusTracker } from './status-tracker';
import type { TimelineWriter } from './timeline-writer';
import type { UpstreamLedger } from './upstream-ledger';

/** An engine job as the renderer follows it. */
export interface RJob {
  handle: number;
  job: EngineJob;
  id: string;
  kind: number;
  mono: boolean;
  parts: Uint8Array;
  synthStart: Float64Array;
  synthNs: Float64Array;
  /** Partitioned: process_batch's job_seq (the GPU queue key's first half); monolithic: 0. */
  seq: number;
  cancelled: boolean;
  /** Pipeline off: the job's GPU time (answer timings). */
  gpuTotal: number;
}

const NS = 1e9;
export const ms = (ns: number): number => Math.max(0, Math.floor(ns / 1e6));
export const ENGINE_TARGET = 'cuzk_core::engine';

export interface ResultDeps {
  timeline: TimelineWriter | null;
  status: StatusTracker;
  jobs: JobTracker;
  ledger: UpstreamLedger;
  selfCheck(handle: number): boolean;
  proofBytes(handle: number): Buffer;
}

export class UpstreamResults {
  constructor(
    private readonly d: ResultDeps,
    /** /status shows PoSt (our fix): monolithic jobs are tracked as 1-partition jobs. */
    private readonly showsPost: boolean,
    /** The historical /status bug (fault injection) applies to this job's kind. */
    private readonly clobbers: (r: RJob) => boolean,
  ) {}

  /** engine.rs process_partition_result, `Ok(Ok(..))` arm. */
  partitionResult(r: RJob, p: number, worker: number, gpuNs: number, t: number, discard: boolean): void {
    const J = this.d.jobs;
    this.d.status.partitionGpuEnd(r.id, p, worker, t, this.clobbers(r));
    const a = J.assemblers.get(r.id);
    if (!a || a.failed || discard) {
      this.d.ledger.count('results_discarded');
      return;
    }
    if (p >= a.total || a.filled[p]) {
      // ProofAssembler::insert asserts "partition already inserted": the finalizer task panics.
      this.d.ledger.count('assembler_panics');
      return;
    }
    a.filled[p] = 1;
    a.nFilled++;
    a.synthNs += r.synthNs[p];
    a.gpuNs += gpuNs;
    if (a.nFilled < a.total) return;
    J.assemblers.delete(r.id);
    const kindName = PROOF_KINDS[a.kind] ?? 'unknown';
    const total = t - a.submittedAt;
    this.d.timeline?.tracing(t, 'INFO', ENGINE_TARGET, 'Phase 7: all partitions complete, proof assembled', [['job_id', r.id], ['total_ms', ms(total)]]);
    const req = r.job.requests[0];
    if (a.kind === 0 && !this.d.selfCheck(r.handle)) {
      this.d.ledger.count('self_check_failures');
      J.recordFailure(a.kind);
      this.d.status.jobCompleted(r.id, kindName, false, t);
      J.deliver(r.id, failedAnswer(r.id, `PoRep proof self-check failed: assembled proof did not verify (sector=${req.sectorNumber}, miner=${req.minerId})`));
      return;
    }
    J.recordCompletion(a.kind, total / NS);
    this.d.status.jobCompleted(r.id, kindName, true, t);
    J.deliver(r.id, this.completedAnswer(r.id, r.handle, a.synthNs, a.gpuNs, total, t - a.startTime));
  }

  completedAnswer(id: string, handle: number, synthNs: number, gpuNs: number, totalNs: number, provingNs: number): JobAnswer {
    return {
      job_id: id,
      status: 'COMPLETED',
      proof: this.d.proofBytes(handle),
      error_message: '',
      queue_wait_ms: ms(totalNs - provingNs),
      srs_load_ms: 0,
      synthesis_ms: ms(synthNs),
      gpu_compute_ms: ms(gpuNs),
      total_ms: ms(totalNs),
    };
  }

  /** engine.rs process_monolithic_result, success arms (single, batched). */
  monoResult(r: RJob, worker: number, gpuNs: number, t: number): void {
    const J = this.d.jobs;
    const synth = r.synthNs[0];
    const reqs = r.job.requests;
    if (this.showsPost) {
      this.d.status.partitionGpuEnd(r.id, 0, worker, t);
      this.d.status.jobCompleted(r.id, PROOF_KINDS[r.kind] ?? 'unknown', true, t);
    }
    if (reqs.length > 1 && r.kind !== 0) {
      // split_batched_proofs with no sector boundaries: "proof bytes length mismatch".
      this.d.ledger.count('batch_split_failures');
      for (const q of reqs) {
        J.recordFailure(r.kind);
        J.deliver(q.id, failedAnswer(q.id, `proof split failed: proof bytes length mismatch: got ${192 * r.parts.length}, expected 0 (0 partitions × 192 bytes)`));
      }
      return;
    }
    const passed = r.kind !== 0 || this.d.selfCheck(r.handle);
    for (const q of reqs) {
      const total = t - q.submittedAt;
      if (!passed) {
        this.d.ledger.count('self_check_failures');
        J.recordFailure(r.kind);
        J.deliver(q.id, failedAnswer(q.id, 'PoRep proof self-check failed: pipeline single-sector proof did not verify'));
        continue;
      }
      J.recordCompletion(r.kind, total / NS);
      J.deliver(q.id, this.completedAnswer(q.id, r.handle, synth, gpuNs, total, synth + gpuNs));
    }
  }

  /** Fails every request of the job (record_failure each) unless already failed (partitioned). */
  failJob(r: RJob, message: string): void {
    const J = this.d.jobs;
    if (!r.mono) {
      const a = J.assemblers.get(r.id);
      if (!a || a.failed) return;
      a.failed = true;
    }
    for (const q of r.job.requests) {
      J.recordFailure(r.kind);
      J.deliver(q.id, failedAnswer(q.id, message));
    }
  }
}
