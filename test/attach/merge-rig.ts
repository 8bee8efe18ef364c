/**
 * The scripted merge rig of merge-edges.test.ts and merge-monotone.test.ts: a
 * MergedAttachSource of the chosen surfaces, none started, each fed by the test on one clock
 * (/status through applyBody, GetStatus through applyStatus, GetMetrics through applyMetrics,
 * TIMELINE lines through lines()/caughtUp()). The exporter's own clock (surface.ts hrNowNs)
 * is moved by the test file itself (its `skewNs`), so `realHr` here is the unmocked one.
 */
import * as surfaceClock from '../../src/engine/sources/attach/surface';
import { MergedAttachSource } from '../../src/engine/sources/attach/merge';
import { parseCuzkMetrics, StatusMsg } from '../../src/engine/sources/attach/grpc-wire';
import { createLogger } from '../../src/util/logger';
import { cuzkMetricsText } from './grpc-server';
import { tl } from './timeline-driver';

export const A = 'ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50';
const LATE_MS = 2;
/** The unmocked clock (taken before any test spies on it). */
export const realHr = surfaceClock.hrNowNs;

export interface RigOptions {
  status?: boolean;
  grpc?: boolean;
  timeline?: boolean;
  skewToleranceMs?: number;
  pollIntervalMs?: number;
}

/** A merge of the chosen surfaces, none started: each fed by the test on one clock. */
export class Rig {
  readonly src: MergedAttachSource;
  readonly logs: string[] = [];
  /** hrtime of daemon offset 0: a minute back, so every scripted moment is in the past. */
  readonly epochHr = realHr() - 60e9;
  constructor(o: RigOptions) {
    this.src = new MergedAttachSource({
      statusUrl: o.status ? 'http://127.0.0.1:9/status' : undefined, // never polled
      grpcAddress: o.grpc ? '127.0.0.1:9' : undefined, // never called
      timelineFile: o.timeline ? '/nonexistent/cuzk.log' : undefined, // fed by lines()
      pollIntervalMs: o.pollIntervalMs ?? 1000,
      grpcStatusIntervalMs: 5000,
      timeoutMs: 1000,
      maxBodyBytes: 1 << 20,
      skewToleranceMs: o.skewToleranceMs,
      logger: createLogger('debug', 'json', (line) => this.logs.push(line)),
      timeline: { sweepMs: 0, maxClockLeadMs: Number.MAX_SAFE_INTEGER, gpuTimeoutMs: 1e12 },
    });
  }
  hr(ms: number): number {
    return this.epochHr + (ms + LATE_MS) * 1e6;
  }
  lines(ms: number, ...l: string[]): void {
    this.src.timeline!.lines(l.join(''), false, this.hr(ms));
    this.src.timeline!.caughtUp(this.hr(ms));
  }
  readTo(ms: number): void {
    this.src.timeline!.caughtUp(this.hr(ms));
  }
  status(ms: number, body: Record<string, unknown>): void {
    this.src.status!.applyBody(body, this.hr(ms));
  }
  /** A GetStatus answer taken at offset `ms` (the daemon up `uptime` s): one entry per worker. */
  grpcStatus(ms: number, gpus: { ordinal: number; name?: string; job?: string; kind?: string }[], queues: StatusMsg['queues'] = [], uptime = 100 + ms / 1000): void {
    const msg: StatusMsg = {
      gpus: gpus.map((g) => ({ ordinal: g.ordinal, name: g.name ?? `GPU ${g.ordinal}`, current_job_id: g.job ?? '', current_proof_kind: g.kind ?? '' })),
      queues,
      uptimeSeconds: uptime,
      totalCompleted: 0,
      totalFailed: 0,
    };
    this.src.grpc!.applyStatus(msg, this.hr(ms), this.hr(ms) - 1e6);
    // As a GetStatus that answered (pollStatus sets these around applyStatus).
    Object.assign(this.src.grpc as unknown as Record<string, unknown>, { everStatus: true, statusUp: true });
  }
  grpcMetrics(o: Parameters<typeof cuzkMetricsText>[0]): void {
    this.src.grpc!.applyMetrics(parseCuzkMetrics(cuzkMetricsText(o)));
    Object.assign(this.src.grpc as unknown as Record<string, unknown>, { metricsUp: true });
  }
  refresh() {
    this.src.refresh();
    return this.src.model;
  }
  slot(id: number): number {
    return this.src.model.topology.workers.findIndex((w) => w.id === id);
  }
  busy(id: number): number {
    return this.src.model.wBusy[this.slot(id)];
  }
  warnings(): string[] {
    return this.logs.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === 'warn' || l.level === 'info').map((l) => l.msg);
  }
  close(): Promise<void> {
    return this.src.stop();
  }
}

const rigs: Rig[] = [];
export function rig(o: RigOptions): Rig {
  const r = new Rig(o);
  rigs.push(r);
  return r;
}
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.close();
});

export const pick = (w: number, p: number, ms: number, job = A) => [tl(ms, 'GPU_PICKUP', job, `worker=${w},partition=${p}`), tl(ms, 'GPU_START', job, `worker=${w},partition=${p}`)];
