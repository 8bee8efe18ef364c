/**
 * A MetricsSource fed by a scripted sequence of cuzk_event records and a clock the test
 * sets: the same StateModel and exporter code as production, with nothing that varies.
 */
import { EV_GPU_LOCK, EV_JOB_DONE, EV_JOB_QUEUED, EV_JOB_STARTED, EV_MEMORY, EV_PARTITION, EV_QUEUE_DEPTH, EV_SYNTH_ACTIVE, EV_WORKER, EVF_ABANDONED, EVF_FIRST, EventRecord, encodeEvents } from '../../src/engine/model/event-layout';
import type { MetricsSource } from '../../src/engine/sources/source';
import { StateModel, Topology } from '../../src/engine/model/state-model';

export const MS = 1_000_000;

export class ScriptedSource implements MetricsSource {
  readonly model = new StateModel();
  readonly source = 'run' as const;
  readonly backend = 'cpu';
  clockNs = 0;
  private seq = 0;

  constructor(topology: Topology) {
    this.model.setTopology(topology, 0);
  }

  /** Applies records as one native batch (sequence numbers assigned in order). */
  apply(records: Omit<EventRecord, 'seq'>[]): void {
    const withSeq = records.map((r) => ({ ...r, seq: ++this.seq }));
    this.model.applyEvents(encodeEvents(withSeq), withSeq.length);
    for (const r of withSeq) this.clockNs = Math.max(this.clockNs, r.tNs);
  }

  refresh(): void {}
  nowNs(): number {
    return this.clockNs;
  }
  statusBody(): Record<string, unknown> | null {
    return null;
  }
  snapshotAgeSeconds(): number {
    return 0;
  }
  ready() {
    return { ok: true, reason: '' };
  }
}

/** Builders for the records a native engine emits. */
export const ev = {
  queued: (t: number, job: number, kind: number, partitions: number, priority = 10, depth = 1) => ({ type: EV_JOB_QUEUED, tNs: t, job, kind, partition: partitions, value: priority, aux: depth }),
  started: (t: number, job: number, kind: number, waitNs: number) => ({ type: EV_JOB_STARTED, tNs: t, job, kind, value: waitNs }),
  part: (t: number, job: number, kind: number, p: number, state: number, durNs = 0, flags = 0) => ({ type: EV_PARTITION, tNs: t, job, kind, partition: p, aux: state, value: durNs, flags }),
  /** Hand-off: the partition goes to the GPU, owned by `worker` (native ABI v2 names it). */
  handoff: (t: number, gpu: number, worker: number, job: number, kind: number, p: number) => ({ type: EV_PARTITION, tNs: t, gpu, worker, job, kind, partition: p, aux: 3 }),
  /** Split proving: kernels done, GPU lock released; value = ns from hand-off to the release. */
  finalizing: (t: number, gpu: number, worker: number, job: number, kind: number, p: number, kernelNs: number) => ({ type: EV_PARTITION, tNs: t, gpu, worker, job, kind, partition: p, aux: 6, value: kernelNs }),
  /** The partition ends (done 4 / failed 5); value = GPU-stage ns from hand-off to the end. */
  end: (t: number, gpu: number, worker: number, job: number, kind: number, p: number, state: number, gpuNs: number) => ({ type: EV_PARTITION, tNs: t, gpu, worker, job, kind, partition: p, aux: state, value: gpuNs }),
  cancelledPart: (t: number, job: number, kind: number, p: number) => ({ type: EV_PARTITION, tNs: t, job, kind, partition: p, aux: 5, flags: EVF_ABANDONED }),
  busy: (t: number, gpu: number, worker: number, job: number, kind: number, p: number) => ({ type: EV_WORKER, tNs: t, gpu, worker, job, kind, partition: p, aux: 1 }),
  idle: (t: number, gpu: number, worker: number, job: number, kind: number, p: number, stintNs: number) => ({ type: EV_WORKER, tNs: t, gpu, worker, job, kind, partition: p, aux: 0, value: stintNs }),
  lock: (t: number, gpu: number, worker: number, gapNs: number | null) => ({ type: EV_GPU_LOCK, tNs: t, gpu, worker, aux: 1, value: gapNs ?? 0, flags: gapNs === null ? EVF_FIRST : 0 }),
  unlock: (t: number, gpu: number, worker: number, heldNs: number) => ({ type: EV_GPU_LOCK, tNs: t, gpu, worker, aux: 0, value: heldNs }),
  done: (t: number, job: number, kind: number, outcome: number, totalNs: number) => ({ type: EV_JOB_DONE, tNs: t, job, kind, aux: outcome, value: totalNs }),
  depth: (t: number, kind: number, depth: number) => ({ type: EV_QUEUE_DEPTH, tNs: t, kind, value: depth }),
  synth: (t: number, active: number) => ({ type: EV_SYNTH_ACTIVE, tNs: t, value: active }),
  memory: (t: number, bytes: number) => ({ type: EV_MEMORY, tNs: t, value: bytes }),
};
