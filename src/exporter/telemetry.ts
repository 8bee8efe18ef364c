/**
 * The OpenTelemetry side: one MeterProvider whose readers are the Prometheus exporter
 * (serialisation only; we serve HTTP ourselves, see server.ts) and, optionally, an OTLP
 * push reader. Gauges, counters and histograms all come from the StateModel through
 * StateMetricProducer (the histograms from its typed arrays, model-histograms.ts: no SDK
 * `record()` on the event path); it reaches every reader.
 *
 * Deliberate choices (DESIGN §5): no `otel_scope_*` labels (one scope, and they nearly
 * double the body) and no `target_info` (Prometheus' own `up`/`instance` identify the
 * target; version and source are in cuzk_exporter_build_info).
 */
import { diag, DiagLogLevel } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, MetricProducer, MetricReader, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import type { MetricsSource } from '../engine/sources/source';
import type { Logger } from '../util/logger';
import { ExemplarStore } from './exemplars';
import { FastPrometheusSerializer } from './fast-serializer';
import { GuardedExporter } from './otlp-guard';
import type { ExpositionFormat } from './negotiate';
import { OpenMetricsSerializer } from './openmetrics';
import { CollectionBodies, SharedCollections } from './shared-collection';
import { SourceInfo, StateMetricProducer } from './state-metrics';

export interface TelemetryOptions {
  version: string;
  logger: Logger;
  /** OTLP/HTTP metrics endpoint (e.g. http://collector:4318/v1/metrics); off when unset. */
  otlpEndpoint?: string;
  otlpIntervalMs?: number;
  /** Wall clock (ms since the epoch) for exemplar timestamps; tests pin it. Default Date.now. */
  wallClockMs?: () => number;
}

let diagRouted = false;

/**
 * The producer for OTLP pushes: drains the source's pending events first, as a scrape
 * does — between drains the model may be up to one ingestion linger behind
 * (native-engine.ts). A failed drain is counted and the push goes out with what is known.
 */
export function drainingFirst(source: Pick<MetricsSource, 'refresh' | 'model'>, producer: MetricProducer): MetricProducer {
  return {
    collect: (options) => {
      try {
        source.refresh();
      } catch (err) {
        source.model.errors.inc('collect', `draining before an OTLP push failed: ${(err as Error).message}`);
      }
      return producer.collect(options);
    },
  };
}

export class Telemetry {
  readonly info: SourceInfo;
  private readonly prometheus: PrometheusExporter;
  /** Same bytes as PrometheusSerializer(undefined, false, undefined, true, true), faster (bench/). */
  private readonly serializer = new FastPrometheusSerializer();
  /** The same collection as OpenMetrics 1.0.0, with exemplars (openmetrics.ts). */
  private readonly omSerializer = new OpenMetricsSerializer();
  /** Latest observation per bucket of the duration histograms, with its job (exemplars.ts). */
  readonly exemplars: ExemplarStore;
  private readonly provider: MeterProvider;
  private lastCollectSeconds = 0;
  /** Scrapes waiting at once share a collection (shared-collection.ts). */
  private readonly shared = new SharedCollections(() => this.collectNow());

  constructor(
    private readonly source: MetricsSource,
    opts: TelemetryOptions,
  ) {
    this.info = { version: opts.version, source: source.source, backend: source.backend };
    // Route SDK diagnostics (metadata conflicts, export failures) into our log; the
    // diag logger is process-global, so the first Telemetry's logger keeps it.
    if (!diagRouted) diagRouted = diag.setLogger(
      {
        error: (m) => opts.logger.error('opentelemetry', { detail: m }),
        warn: (m) => opts.logger.warn('opentelemetry', { detail: m }),
        info: () => {},
        debug: () => {},
        verbose: () => {},
      },
      DiagLogLevel.WARN,
    );
    const resource = resourceFromAttributes({ 'service.name': 'cuzk-exporter', 'service.version': opts.version });
    // The model's histograms record from now on, exemplars with the source's job ids.
    const histograms = source.model.histograms;
    histograms.enableExemplars((handle) => source.jobId?.(handle), opts.wallClockMs);
    source.model.observer = histograms;
    this.exemplars = new ExemplarStore(histograms);
    const producer = new StateMetricProducer({
      model: source.model,
      info: this.info,
      nowNs: () => source.nowNs(),
      runningTotals: () => source.runningTotals?.() ?? null,
      lastCollectSeconds: () => this.lastCollectSeconds,
      resource,
      surfaces: source.surfaceStates ? () => source.surfaceStates!() : undefined,
      kindResolutions: source.kindResolutions ? () => source.kindResolutions!() : undefined,
      // The scope of the meter the SDK histograms were created on before they moved here.
      histogramScope: { name: 'cuzk-exporter', version: opts.version, schemaUrl: undefined },
    });
    this.prometheus = new PrometheusExporter({
      preventServerStart: true,
      withoutScopeInfo: true,
      withoutTargetInfo: true,
      metricProducers: [producer],
    });
    const readers: MetricReader[] = [this.prometheus];
    if (opts.otlpEndpoint) {
      const timeoutMs = Math.min(opts.otlpIntervalMs ?? 15000, 30000);
      readers.push(
        new PeriodicExportingMetricReader({
          // Failed exports: counted, one log line, no stack per export (otlp-guard.ts).
          exporter: new GuardedExporter(new OTLPMetricExporter({ url: opts.otlpEndpoint }), source.model.errors, opts.logger, Math.max(1, Math.floor(timeoutMs * 0.9))),
          exportIntervalMillis: opts.otlpIntervalMs ?? 15000,
          exportTimeoutMillis: Math.min(opts.otlpIntervalMs ?? 15000, 30000),
          metricProducers: [drainingFirst(source, producer)],
        }),
      );
    }
    this.provider = new MeterProvider({ resource, readers });
    // Error series exist from the start (at 0), so alerts and dashboards see them.
    source.model.errors.declare('collect');
    source.model.errors.declare('status');
  }

  /**
   * One collection: applies pending source events, collects and serialises. Throws when
   * the collection fails, so the server answers 500 instead of a 200 with a comment.
   *
   * Scrapes that arrive together share a collection (shared-collection.ts): each body
   * still reflects every event that happened before its request arrived, and N concurrent
   * scrapers cost one collection instead of N queued ones (one serialisation per format,
   * one encoding per format and content encoding).
   *
   * `format`: the Prometheus text format 0.0.4 (default) or OpenMetrics 1.0.0 (negotiate.ts).
   */
  scrape(format: ExpositionFormat = 'text'): Promise<string> {
    return this.shared.join().then((c) => c.text(format));
  }

  /** The next collection, shared with the scrapes waiting beside this one; its bodies by format and encoding. */
  collection(): Promise<CollectionBodies> {
    return this.shared.join();
  }

  private async collectNow(): Promise<CollectionBodies> {
    const t0 = process.hrtime.bigint();
    this.source.refresh();
    const { resourceMetrics, errors } = await this.prometheus.collect();
    if (errors.length > 0) {
      this.source.model.errors.inc('collect');
      throw new Error(`collection failed: ${errors.map((e) => (e instanceof Error ? e.message : String(e))).join('; ')}`);
    }
    let timed = false;
    return new CollectionBodies((format) => {
      const body = format === 'openmetrics' ? this.omSerializer.serializeBody(resourceMetrics, this.exemplars) : this.serializer.serializePieces(resourceMetrics);
      // The scrape duration covers the collection and its first serialisation.
      if (!timed) {
        timed = true;
        this.lastCollectSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
      }
      return body;
    });
  }

  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}
