/**
 * Errors are counters by reason (DESIGN §5: `cuzk_exporter_errors_total{reason}`), never
 * gauges that stay stuck. Reasons are fixed strings from our code, never from input, so
 * the label set stays bounded.
 */
export class ErrorCounts {
  private readonly counts = new Map<string, number>();
  /** The last error's readable text, for /status and logs. */
  lastMessage: string | null = null;

  inc(reason: string, message?: string): void {
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1);
    if (message !== undefined) this.lastMessage = message;
  }

  /** Declares a reason up front so its series exists (at 0) before the first error. */
  declare(reason: string): void {
    if (!this.counts.has(reason)) this.counts.set(reason, 0);
  }

  entries(): IterableIterator<[string, number]> {
    return this.counts.entries();
  }

  get(reason: string): number {
    return this.counts.get(reason) ?? 0;
  }
}
