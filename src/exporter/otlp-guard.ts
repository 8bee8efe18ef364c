/**
 * OTLP push failures (collector down, wrong URL, timeout) are counted and logged as one
 * line — never a stack trace, never a line per export. Left to the SDK, every failed
 * periodic export is logged through the diag logger (timeouts) and OpenTelemetry's global
 * error handler (the exception serialised with its stack), every interval, and nothing is
 * counted. GuardedExporter wraps the OTLP exporter: it bounds each export by its own
 * deadline (shorter than the reader's), counts every failure in
 * cuzk_exporter_errors_total{reason="otlp_export"}, logs the message once and then at most
 * once a minute while it stays the same (with how often it repeated), and reports success
 * to the reader, which has nothing more useful to do with a failure.
 */
import type { PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { ErrorCounts } from '../engine/model/error-counts';
import type { Logger } from '../util/logger';

type ExportResult = { code: number; error?: Error };
const SUCCESS = 0; // @opentelemetry/core ExportResultCode.SUCCESS

export class GuardedExporter implements PushMetricExporter {
  private last = '';
  private lastAt = -Infinity;
  private repeated = 0;
  failures = 0;

  constructor(
    private readonly inner: PushMetricExporter,
    private readonly errors: ErrorCounts,
    private readonly log: Logger,
    private readonly deadlineMs: number,
    private readonly nowMs: () => number = Date.now,
  ) {
    errors.declare('otlp_export');
    this.selectAggregationTemporality = inner.selectAggregationTemporality?.bind(inner);
    this.selectAggregation = inner.selectAggregation?.bind(inner);
  }

  export(metrics: ResourceMetrics, resultCallback: (result: ExportResult) => void): void {
    let done = false;
    const finish = (err: string | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err !== null) this.failed(err);
      resultCallback({ code: SUCCESS });
    };
    const timer = setTimeout(() => finish(`no answer within ${this.deadlineMs} ms`), this.deadlineMs);
    timer.unref();
    try {
      this.inner.export(metrics, (r: ExportResult) => finish(r.code === SUCCESS ? null : r.error?.message ?? `export failed (code ${r.code})`));
    } catch (e) {
      finish((e as Error).message);
    }
  }

  private failed(raw: string): void {
    this.failures++;
    const msg = String(raw).split('\n')[0].slice(0, 500);
    this.errors.inc('otlp_export', `OTLP export failed: ${msg}`);
    const now = this.nowMs();
    if (msg === this.last && now - this.lastAt < 60_000) {
      this.repeated++;
      return;
    }
    this.log.warn('OTLP export failed', { err: msg, ...(this.repeated > 0 ? { repeated_since_last_line: this.repeated } : {}) });
    this.last = msg;
    this.lastAt = now;
    this.repeated = 0;
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  selectAggregationTemporality: PushMetricExporter['selectAggregationTemporality'];
  selectAggregation: PushMetricExporter['selectAggregation'];
}
