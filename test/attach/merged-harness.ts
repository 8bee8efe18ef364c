/**
 * An attach exporter as `cuzk-exporter attach` builds it, in-process, for any combination
 * of surfaces: a real MergedAttachSource, Telemetry and HTTP server on 127.0.0.1:<ephemeral>,
 * with the log captured. Surfaces are not started unless `start` is set: tests drive them
 * (timeline.poll(), status.pollOnce(), grpc.pollMetrics()/pollStatus()) and then scrape.
 */
import type { Readable } from 'node:stream';
import { MergedAttachSource } from '../../src/engine/sources/attach/merge';
import { startServer, RunningServer } from '../../src/exporter/server';
import { Telemetry } from '../../src/exporter/telemetry';
import { createLogger } from '../../src/util/logger';
import { parse, Sample } from '../helpers/prom-text';

export interface MergedHarness {
  source: MergedAttachSource;
  telemetry: Telemetry;
  server: RunningServer;
  logs: string[];
  metrics(): Promise<{ status: number; body: string; samples: Sample[] }>;
  status(): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export interface MergedHarnessOptions {
  statusUrl?: string;
  grpcAddress?: string;
  timelineFile?: string;
  stdin?: Readable;
  pollIntervalMs?: number;
  grpcStatusIntervalMs?: number;
  timeoutMs?: number;
  maxBodyBytes?: number;
  maxLineBytes?: number;
  catchUpBytes?: number;
  timelinePollMs?: number;
  skewToleranceMs?: number;
  start?: boolean;
  /** Thresholds for what cuzk's /status never clears (attach/status-stale.ts). */
  statusStale?: { minUnownedMs?: number; minOwnedMs?: number };
  /** TIMELINE surface options beyond the above (timeouts, clock lead). */
  timeline?: Partial<import('../../src/engine/sources/attach/timeline-surface').TimelineOptions>;
}

export async function startMerged(o: MergedHarnessOptions): Promise<MergedHarness> {
  const logs: string[] = [];
  const logger = createLogger('debug', 'json', (line) => logs.push(line));
  const source = new MergedAttachSource({
    statusUrl: o.statusUrl,
    grpcAddress: o.grpcAddress,
    timelineFile: o.timelineFile,
    pollIntervalMs: o.pollIntervalMs ?? 1000,
    grpcStatusIntervalMs: o.grpcStatusIntervalMs ?? 5000,
    timeoutMs: o.timeoutMs ?? 2000,
    maxBodyBytes: o.maxBodyBytes ?? 16 * 1024 * 1024,
    logger,
    skewToleranceMs: o.skewToleranceMs,
    statusStale: o.statusStale,
    // Scripted logs run their offsets far ahead of real time and stretch stages far beyond
    // their gpu_ms (see the tests' K): the clock's lead check and the give-up timeout for a
    // GPU stage with no end (timeline-clock.ts, timeline-surface.ts) are off here unless a
    // test sets them; their own tests do.
    timeline: {
      stdin: o.stdin,
      maxLineBytes: o.maxLineBytes,
      catchUpBytes: o.catchUpBytes,
      pollMs: o.timelinePollMs,
      maxClockLeadMs: Number.MAX_SAFE_INTEGER,
      gpuTimeoutMs: 1e12,
      ...(o.timeline ?? {}),
    },
  });
  const telemetry = new Telemetry(source, { version: '0.0.0-test', logger });
  const server = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', source, telemetry, logger, version: '0.0.0-test' });
  if (o.start) source.start();
  return {
    source,
    telemetry,
    server,
    logs,
    async metrics() {
      const res = await fetch(`${server.url}/metrics`);
      const body = await res.text();
      return { status: res.status, body, samples: res.status === 200 ? parse(body) : [] };
    },
    async status() {
      const res = await fetch(`${server.url}/status`);
      if (res.status !== 200) throw new Error(`/status answered ${res.status}`);
      return (await res.json()) as Record<string, unknown>;
    },
    async close() {
      await source.stop();
      await server.close();
      await telemetry.shutdown();
    },
  };
}

/** Polls `check` until it returns something other than undefined/false (a condition, not a sleep). */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? ` (${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Value of the one sample with exactly these labels (undefined if none). */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels);
  const s = samples.find((x) => x.name === name && Object.keys(x.labels).length === want.length && want.every(([k, v]) => x.labels[k] === v));
  return s?.value;
}

/** Every counter (…_total) sample, keyed by name and labels, for monotonicity checks. */
export function counters(samples: Sample[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) if (s.name.endsWith('_total')) out.set(`${s.name}${JSON.stringify(s.labels)}`, s.value);
  return out;
}

/** Throws if any counter in `next` is below its value in `prev`. */
export function expectMonotonic(prev: Map<string, number>, next: Map<string, number>, where: string): void {
  for (const [k, v] of prev) {
    const n = next.get(k);
    if (n !== undefined && n < v) throw new Error(`${where}: counter went down: ${k} ${v} -> ${n}`);
  }
}
