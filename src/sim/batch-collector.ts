/**
 * A port of upstream cuzk's `BatchCollector` (curio e0294b0f,
 * extern/cuzk/cuzk-core/src/batch_collector.rs) as the synthesis dispatcher in engine.rs
 * uses it (`scheduler.max_batch_size` > 1):
 *  - only PoRep C2 and SnapDeals are batchable (`is_batchable`);
 *  - add(): same kind as the pending batch → appended, flushed when full; another kind →
 *    the pending batch is flushed and a new one starts; none pending → a new one;
 *  - a non-batchable request (PoSt) force-flushes the pending batch first, then goes alone;
 *  - the pending batch flushes when `max_batch_wait_ms` has passed since its first request.
 * A flushed batch of one request takes the partitioned path (process_batch: `requests.len()
 * == 1`); of several, the monolithic "standard path".
 */
import type { SimRequest } from './requests';

export const isBatchable = (kind: number): boolean => kind === 0 || kind === 1;

export interface BatchOptions {
  maxBatchSize: number;
  maxBatchWaitMs: number;
}

export class BatchCollector {
  private pending: { kind: number; requests: SimRequest[] } | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly o: BatchOptions,
    /** Where flushed batches go (one request or several). */
    private readonly dispatch: (requests: SimRequest[]) => void,
  ) {}

  /** Requests collected and not yet dispatched. */
  get size(): number {
    return this.pending?.requests.length ?? 0;
  }

  /** The dispatcher's routing of one dequeued request. */
  submit(req: SimRequest): void {
    if (!(isBatchable(req.kind) && this.o.maxBatchSize > 1)) {
      this.forceFlush();
      this.dispatch([req]);
      return;
    }
    const p = this.pending;
    if (p && p.kind === req.kind) {
      p.requests.push(req);
      if (p.requests.length >= this.o.maxBatchSize) this.forceFlush();
      return;
    }
    this.forceFlush();
    this.pending = { kind: req.kind, requests: [req] };
    this.timer = setTimeout(() => this.forceFlush(), this.o.maxBatchWaitMs);
    this.timer.unref();
  }

  forceFlush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const p = this.pending;
    this.pending = null;
    if (p) this.dispatch(p.requests);
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.pending = null;
  }
}
