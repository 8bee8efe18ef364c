/**
 * The histogram observations of one batch of events: the StateModel queues them here (a few
 * typed-array writes) while it applies the batch, and hands them to its observer at the
 * batch's end, or sooner when the queue is full (OBS_CAPACITY bounds its memory).
 *
 * Why not call the observer at once: observations come at ~0.3 per event, too rarely per
 * call of the model's apply function for V8 to inline the observer there (it inlines only
 * call sites run at least ~0.15 times per call), so each was a real call, its seconds boxed
 * as a heap number, and the exemplar path below it more calls with boxed doubles (issue 21,
 * bench/ingest.ts). Handed over in one loop (ModelHistograms.observeQueued), nothing is
 * called per observation. Nothing reads the histograms in between: the queue is emptied
 * before applyEvents returns, so a collection still sees every event applied before it.
 */
import type { ModelObserver } from './state-model';

/** An observer that takes a whole queue at once (ModelHistograms.observeQueued). */
interface BatchObserver {
  observeQueued(q: ObservationQueue): void;
}

/** Observations held at most (per batch, before the queue is handed over early). */
export const OBS_CAPACITY = 1024;

export const OBS_PARTITION_GPU = 0;
export const OBS_PARTITION_FINALIZE = 1;
export const OBS_PARTITION_SYNTHESIS = 2;
export const OBS_PROOF_DONE = 3;
export const OBS_QUEUE_WAIT = 4;
export const OBS_GPU_IDLE_GAP = 5;

const NS_PER_S = 1e9;

export class ObservationQueue {
  /** OBS_*. */
  readonly op = new Uint8Array(OBS_CAPACITY);
  /** The kind slot; for idle gaps the GPU slot. */
  readonly slot = new Float64Array(OBS_CAPACITY);
  /** The duration in ns (divided into seconds when handed over, as the model did). */
  readonly ns = new Float64Array(OBS_CAPACITY);
  /** The model's job handle. */
  readonly job = new Float64Array(OBS_CAPACITY);
  /** The partition index; for proofs the outcome. */
  readonly aux = new Float64Array(OBS_CAPACITY);
  /** Observations queued. */
  n = 0;

  /** Queues one observation; true when the queue is now full (hand it over: deliver). */
  push(op: number, slot: number, ns: number, job: number, aux: number): boolean {
    const i = this.n;
    this.op[i] = op;
    this.slot[i] = slot;
    this.ns[i] = ns;
    this.job[i] = job;
    this.aux[i] = aux;
    return (this.n = i + 1) === OBS_CAPACITY;
  }

  /** Hands the queued observations to `o` in the order they were queued, and empties the queue. */
  deliver(o: ModelObserver): void {
    if (typeof (o as Partial<BatchObserver>).observeQueued === 'function') {
      // The exporter's histograms (the usual observer): the whole queue in one call.
      (o as unknown as BatchObserver).observeQueued(this);
      this.n = 0;
      return;
    }
    const n = this.n;
    this.n = 0;
    for (let i = 0; i < n; i++) {
      const k = this.slot[i];
      const s = this.ns[i] / NS_PER_S;
      switch (this.op[i]) {
        case OBS_PARTITION_GPU:
          o.partitionGpu(k, s, this.job[i], this.aux[i]);
          break;
        case OBS_PARTITION_FINALIZE:
          o.partitionFinalize?.(k, s);
          break;
        case OBS_PARTITION_SYNTHESIS:
          o.partitionSynthesis(k, s, this.job[i], this.aux[i]);
          break;
        case OBS_PROOF_DONE:
          o.proofDone(k, this.aux[i], s, this.job[i]);
          break;
        case OBS_QUEUE_WAIT:
          o.queueWait(k, s, this.job[i]);
          break;
        default:
          o.gpuIdleGap(k, s);
      }
    }
  }
}
