/**
 * The HTTP `/status` surface (DESIGN §7a): cuzk's optional `status_listen` JSON snapshot,
 * polled. The polling, validation and snapshot-to-model logic is AttachSource
 * (attach-source.ts, the original single-surface attach); this wraps it as one surface
 * of the merge and adds what the merge needs from it: per-worker claims for the cross-check
 * and the proof kind of each job it has seen (for TIMELINE's kind-less partitioned jobs).
 *
 * Blind spot, kept visible: only partitioned PoRep C2 / SnapDeals jobs are registered here.
 * WindowPoSt and WinningPoSt never appear, never mark a worker proving, and are not in its
 * counters.
 */
import { AttachSource } from './attach-source';
import type { ErrorCounts } from '../../model/error-counts';
import { OTHER_KIND_INDEX, kindIndex } from '../../model/kinds';
import type { Logger } from '../../../util/logger';
import { SampleHistory, Surface, WorkerClaim, WorkerSample, hrNowNs } from './surface';

export interface StatusSurfaceOptions {
  url: string;
  pollIntervalMs: number;
  timeoutMs: number;
  maxBodyBytes: number;
  errors: ErrorCounts;
  logger: Logger;
  stale?: import('./status-stale').StaleOptions;
}

const KIND_CACHE_MAX = 10_000;
/**
 * ... and at most this many characters of job ids in all: /status job ids may be up to
 * 1 MiB each (status-schema.ts), so the count alone allowed ~10 GiB: a daemon naming
 * its jobs anew with 20,000-character ids grew the heap by ~170 KiB/min (the soak).
 */
const KIND_CACHE_ID_CHARS = 1 << 20;

/** A pipeline as re-served from a validated snapshot (status-schema.ts). */
export interface StatusPipeline {
  job_id: string;
  proof_kind: string;
  total_partitions: number;
  partitions: { index: number; state: string; synth_ms?: number | null; gpu_ms?: number | null }[];
}

export class StatusSurface implements Surface {
  readonly name = 'status' as const;
  readonly target: string;
  readonly attach: AttachSource;
  /** job_id -> kind slot, from the pipelines seen (kept after a job ages out, bounded). */
  private readonly kindOfJob = new Map<string, number>();
  private kindOfJobChars = 0;
  /** job_id -> total_partitions, as the last snapshot listing it said (bounded as kindOfJob). */
  private readonly totalOfJob = new Map<string, number>();
  private totalOfJobChars = 0;
  /** Called with each good snapshot's pipelines (the merge passes partition ends to TIMELINE). */
  onPipelines: ((pipelines: StatusPipeline[]) => void) | null = null;
  /** Per worker id: since when (hrtime) the snapshots show it idle. */
  private readonly idleSince = new Map<number, number>();
  /** Called after every poll (tests, the page). */
  onPoll: ((ok: boolean) => void) | null = null;

  constructor(opts: StatusSurfaceOptions) {
    this.target = opts.url;
    this.attach = new AttachSource({
      url: opts.url,
      pollIntervalMs: opts.pollIntervalMs,
      timeoutMs: opts.timeoutMs,
      maxBodyBytes: opts.maxBodyBytes,
      logger: opts.logger,
      errors: opts.errors,
      stale: opts.stale,
    });
    // The request's window bounds when the snapshot was taken (the cross-check's margin).
    const poll = this.attach.pollOnce.bind(this.attach);
    this.attach.pollOnce = () => {
      this.lastStartHr = hrNowNs();
      return poll();
    };
    this.attach.onPoll = (ok) => {
      if (ok) {
        this.pollStartHr = this.lastStartHr;
        this.afterPoll();
      }
      this.onPoll?.(ok);
    };
  }

  get up(): boolean {
    return this.attach.model.up;
  }

  get model() {
    return this.attach.model;
  }

  start(): void {
    this.attach.start();
  }

  stop(): Promise<void> {
    return this.attach.stop();
  }

  pollOnce(): Promise<void> {
    return this.attach.pollOnce();
  }

  /** Feeds a parsed body directly (tests), as a successful poll at hrtime `nowNs`. */
  applyBody(body: unknown, nowNs?: number): void {
    this.attach.applyBody(body, nowNs);
    this.pollStartHr = this.attach.nowNs();
    this.afterPoll();
  }

  private afterPoll(): void {
    const body = this.attach.statusBody();
    const pipelines = Array.isArray(body?.pipelines) ? (body!.pipelines as unknown[]) : [];
    for (const p of pipelines) {
      const id = (p as { job_id?: unknown })?.job_id;
      const kind = (p as { proof_kind?: unknown })?.proof_kind;
      const total = (p as { total_partitions?: unknown })?.total_partitions;
      if (typeof id === 'string' && typeof total === 'number' && Number.isInteger(total) && total > 0 && total <= 4096) {
        if (!this.totalOfJob.has(id)) {
          while (this.totalOfJob.size > 0 && (this.totalOfJob.size >= KIND_CACHE_MAX || this.totalOfJobChars + id.length > KIND_CACHE_ID_CHARS)) {
            const oldest = this.totalOfJob.keys().next().value as string;
            this.totalOfJob.delete(oldest);
            this.totalOfJobChars -= oldest.length;
          }
          this.totalOfJobChars += id.length;
        }
        this.totalOfJob.set(id, total);
      }
      if (typeof id !== 'string' || typeof kind !== 'string' || this.kindOfJob.has(id)) continue;
      // Oldest out first, until both bounds hold with this id in.
      while (this.kindOfJob.size > 0 && (this.kindOfJob.size >= KIND_CACHE_MAX || this.kindOfJobChars + id.length > KIND_CACHE_ID_CHARS)) {
        const oldest = this.kindOfJob.keys().next().value as string;
        this.kindOfJob.delete(oldest);
        this.kindOfJobChars -= oldest.length;
      }
      const k = kindIndex(kind);
      this.kindOfJob.set(id, k < 0 ? OTHER_KIND_INDEX : k);
      this.kindOfJobChars += id.length;
    }
    this.onPipelines?.(pipelines as StatusPipeline[]);
    const m = this.attach.model;
    const t = this.attach.nowNs();
    const start = Math.min(this.pollStartHr || t, t);
    const workers = m.topology.workers;
    for (let slot = 0; slot < workers.length; slot++) {
      const id = workers[slot].id;
      const busy = m.wBusy[slot] === 1;
      this.samples.add(id, { startHr: start, endHr: t, busy, kind: m.wBusy[slot] ? m.wKind[slot] : -1 });
      if (m.wBusy[slot]) this.idleSince.delete(id);
      else if (!this.idleSince.has(id)) this.idleSince.set(id, t);
    }
    // Workers gone from the topology are forgotten. The model keeps its topology object while
    // the workers stay the same (setTopology), and every id kept here came from a topology:
    // with the same object as last time there is nothing to forget.
    if (m.topology !== this.retainedFor) {
      const ids = new Set<number>();
      for (const w of workers) ids.add(w.id);
      for (const id of this.idleSince.keys()) if (!ids.has(id)) this.idleSince.delete(id);
      this.samples.retain(ids);
      this.retainedFor = m.topology;
    }
  }

  /** The topology whose workers idleSince and samples were last trimmed to. */
  private retainedFor: unknown = null;

  /** Each worker's last snapshots (TIMELINE vouches for a time a second or more back: older samples are compared). */
  private readonly samples = new SampleHistory();

  /** When the poll that brought the last snapshot was sent: the snapshot holds somewhere after. */
  private pollStartHr = 0;
  private lastStartHr = 0;

  /** total_partitions /status gave a job (-1 if it never listed it). */
  totalPartitionsOf(jobId: string): number {
    return this.totalOfJob.get(jobId) ?? -1;
  }

  /** The kind /status gave a job (-1 if it never listed it). */
  kindOf(jobId: string): number {
    return this.kindOfJob.get(jobId) ?? -1;
  }

  /**
   * What the last snapshot says about worker `id` (null if none, or the surface is down):
   * busy — continuously since cuzk's own busy_secs start; idle — a sample, somewhere in the
   * last request's window.
   */
  claim(id: number, slotOf: (id: number) => number): WorkerClaim | null {
    const m = this.attach.model;
    if (!m.up) return null;
    const slot = slotOf(id);
    if (slot < 0) return null;
    const until = this.attach.nowNs();
    if (m.wBusy[slot]) return { busy: true, sinceHr: m.wSinceNs[slot], untilHr: until, sample: false, kind: m.wKind[slot], job: this.attach.jobId(m.wJob[slot]) ?? null, partition: m.wPartition[slot] };
    return { busy: false, sinceHr: Math.min(this.pollStartHr || until, until), untilHr: until, sample: true, kind: -1 };
  }

  /** The newest snapshot of worker `id` taken entirely before `t` (null if none, or the surface is down). */
  sampleUntil(id: number, t: number): WorkerSample | null {
    return this.attach.model.up ? this.samples.newestUntil(id, t) : null;
  }

  /** Since when (hrtime) every snapshot has shown worker `id` idle, or null (busy, unknown). */
  idleSinceHr(id: number): number | null {
    return this.attach.model.up ? (this.idleSince.get(id) ?? null) : null;
  }
}
