/**
 * AttachSource: the same metrics from a real cuzk daemon we do not control, by polling its
 * GET /status (DESIGN §7). Each good snapshot is turned into the state changes the native
 * engine would have reported (snapshot-sync.ts), so one model and one metrics path serve
 * both sources.
 *
 * Counters stay exact and monotonic although the source is sampled:
 *  - a partition's GPU/synthesis time is added once, when the model first sees it end
 *    (finished jobs stay in cuzk's snapshot for 30 s, far longer than a poll);
 *  - proof counts come from the daemon's cumulative per-kind counters, by difference;
 *  - a daemon restart (uptime going backwards) resets only our baselines, never our totals.
 * Every failure (connect, timeout, HTTP status, size, JSON, schema) sets cuzk_up to 0 and
 * is counted by reason; the last good snapshot stays served with its age.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { EV_WORKER } from './event-layout';
import { KIND_SLOTS, OTHER_KIND_INDEX, kindIndex } from './kinds';
import { snapshotToEvents, viewFromStatus } from './snapshot-sync';
import type { MetricsSource } from './source';
import { GpuInfo, StateModel, Topology } from './state-model';
import { CuzkStatus, validateStatus } from './status-schema';
import type { Logger } from '../util/logger';

export interface AttachOptions {
  url: string;
  pollIntervalMs: number;
  timeoutMs: number;
  maxBodyBytes: number;
  logger: Logger;
}

/** Error reasons (label values of cuzk_exporter_errors_total), fixed and bounded. */
export const ATTACH_ERRORS = [
  'connect',
  'timeout',
  'http_status',
  'body_too_large',
  'malformed_json',
  'invalid_snapshot',
  'bad_field',
  'unknown_proof_kind',
  'restart',
] as const;
type Reason = (typeof ATTACH_ERRORS)[number];

class PollError extends Error {
  constructor(
    readonly reason: Reason,
    message: string,
  ) {
    super(message);
  }
}

const hrNowNs = (): number => Number(process.hrtime.bigint());

/** Fetches a URL with a deadline and a body-size limit. */
export function fetchLimited(url: string, timeoutMs: number, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return reject(new PollError('connect', `invalid URL ${url}`));
    }
    const mod = u.protocol === 'https:' ? https : http;
    let settled = false;
    const finish = (err: Error | null, body?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(body!);
    };
    const req = mod.get(u, { headers: { Accept: 'application/json' }, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return finish(new PollError('http_status', `GET ${url}: HTTP ${res.statusCode}`));
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        req.destroy();
        return finish(new PollError('body_too_large', `GET ${url}: body of ${declared} bytes exceeds the limit of ${maxBytes}`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > maxBytes) {
          req.destroy();
          finish(new PollError('body_too_large', `GET ${url}: body exceeds the limit of ${maxBytes} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on('end', () => finish(null, Buffer.concat(chunks).toString('utf8')));
      res.on('error', (e) => finish(new PollError('connect', `GET ${url}: ${e.message}`)));
    });
    req.on('error', (e: NodeJS.ErrnoException) => finish(new PollError('connect', `GET ${url}: ${e.code ?? e.message}`)));
    const timer = setTimeout(() => {
      req.destroy();
      finish(new PollError('timeout', `GET ${url}: no complete answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
}

export class AttachSource implements MetricsSource {
  readonly model = new StateModel();
  readonly source = 'attach' as const;
  readonly backend = 'cuzk';
  /** Called after each successful poll is applied (status page push, tests). */
  onPoll: ((ok: boolean) => void) | null = null;

  private lastBody: Record<string, unknown> | null = null;
  private lastGoodNs = 0;
  private lastUptime = -1;
  private readonly handles = new Map<string, number>();
  private nextHandle = 1;
  private prevCompleted = new Map<string, number>();
  private prevFailed = new Map<string, number>();
  private prevCancelled = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private lastLogged = '';
  private lastLoggedAt = 0;
  private inflight: Promise<void> | null = null;
  polls = 0;

  constructor(private readonly opts: AttachOptions) {
    for (const r of ATTACH_ERRORS) this.model.errors.declare(r);
    this.model.up = false;
    this.model.setTopology({ gpus: [], workers: [], lockEvents: false }, hrNowNs());
  }

  start(): void {
    this.stopped = false;
    const loop = () => {
      if (this.stopped) return;
      const started = Date.now();
      this.inflight = this.pollOnce().finally(() => {
        this.inflight = null;
        if (this.stopped) return;
        const wait = Math.max(0, this.opts.pollIntervalMs - (Date.now() - started));
        this.timer = setTimeout(loop, wait);
      });
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.inflight;
  }

  /** One poll: fetch, validate, apply. Never throws; failures are counted. */
  async pollOnce(): Promise<void> {
    this.polls++;
    try {
      const text = await fetchLimited(this.opts.url, this.opts.timeoutMs, this.opts.maxBodyBytes);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (e) {
        throw new PollError('malformed_json', `GET ${this.opts.url}: body is not JSON (${(e as Error).message})`);
      }
      this.applyBody(body);
      this.onPoll?.(true);
    } catch (e) {
      const err = e instanceof PollError ? e : new PollError('invalid_snapshot', (e as Error).message);
      this.fail(err.reason, err.message);
      this.onPoll?.(false);
    }
  }

  /** Validates and applies one parsed body (also used directly by tests). */
  applyBody(body: unknown, nowNs = hrNowNs()): void {
    const v = validateStatus(body);
    if (!v.ok) throw new PollError('invalid_snapshot', `snapshot from ${this.opts.url} rejected: ${v.error}`);
    for (const what of v.skipped) this.model.errors.inc('bad_field', `snapshot from ${this.opts.url}: skipped ${what}`);
    if (v.skipped.length > 0) this.log('warn', `skipped malformed parts of the snapshot: ${v.skipped.slice(0, 3).join('; ')}${v.skipped.length > 3 ? ` (+${v.skipped.length - 3} more)` : ''}`);
    this.apply(v.status, nowNs);
    this.lastBody = body as Record<string, unknown>;
    this.lastGoodNs = nowNs;
    if (!this.model.up) this.log('info', `source is up: ${this.opts.url}`, true);
    this.model.up = true;
  }

  private fail(reason: Reason, message: string): void {
    this.model.errors.inc(reason, message);
    this.model.up = false;
    this.log('warn', message);
  }

  /** One line per distinct problem, repeated at most once a minute. */
  private log(level: 'info' | 'warn', msg: string, force = false): void {
    const now = Date.now();
    if (!force && msg === this.lastLogged && now - this.lastLoggedAt < 60_000) return;
    this.lastLogged = msg;
    this.lastLoggedAt = now;
    this.opts.logger[level](msg, { source: this.opts.url });
  }

  private kindSlot(name: string): number {
    const k = kindIndex(name);
    return k < 0 ? OTHER_KIND_INDEX : k;
  }

  private apply(s: CuzkStatus, nowNs: number): void {
    const m = this.model;
    if (s.uptime_secs < this.lastUptime) this.restarted(s, nowNs);
    this.lastUptime = s.uptime_secs;

    // Topology: workers as reported; GPUs from the workers' ordinals (cuzk has no GPU list).
    const ordinals = new Set<number>(s.gpu_workers.map((w) => w.gpu_ordinal));
    const named = new Map<number, GpuInfo>();
    for (const g of s.gpus ?? []) named.set(g.ordinal, { ordinal: g.ordinal, name: g.name, uuid: g.uuid ?? undefined, pciBusId: g.pci_bus_id ?? undefined });
    for (const g of named.keys()) ordinals.add(g);
    const topology: Topology = {
      gpus: [...ordinals].sort((a, b) => a - b).map((o) => named.get(o) ?? { ordinal: o, name: 'unknown' }),
      workers: s.gpu_workers.map((w) => ({ id: w.worker_id, gpu: w.gpu_ordinal })),
      lockEvents: false,
    };
    m.setTopology(topology, nowNs);
    const slotOf = new Map(m.topology.workers.map((w, i) => [w.id, i]));

    // Handles per job id; ids are never sliced, only mapped. Unknown kinds are folded.
    for (const p of s.pipelines) {
      if (!this.handles.has(p.job_id)) {
        this.handles.set(p.job_id, this.nextHandle++);
        if (kindIndex(p.proof_kind) < 0) m.errors.inc('unknown_proof_kind', `unknown proof kind folded into "other": ${JSON.stringify(p.proof_kind.slice(0, 64))}`);
      }
    }
    const view = viewFromStatus(s, {
      pipelineHandle: (p) => this.handles.get(p.job_id)!,
      workerJobHandle: (w) => (w.current_job !== null ? (this.handles.get(w.current_job) ?? 0) : 0),
      kindSlot: (n) => this.kindSlot(n),
      workerSlot: (w) => slotOf.get(w.worker_id) ?? -1,
      snapshotNs: nowNs,
    });
    // Queue depth by kind: the daemon's own split when it has one (our engine does);
    // otherwise jobs whose partitions are all pending, and the rest of the daemon's total
    // under "other", so the sum is the daemon's queue_depth exactly.
    if (!s.counters?.queue_depth_by_kind) {
      const q = view.queueDepthByKind as Float64Array;
      q.fill(0);
      for (const p of view.pipelines) {
        let pending = p.states.length > 0;
        for (let i = 0; i < p.states.length; i++) if (p.states[i] !== 0) pending = false;
        if (pending) q[p.kind]++;
      }
      const listed = q.reduce((a, b) => a + b, 0);
      const total = s.counters?.queue_depth ?? listed;
      q[OTHER_KIND_INDEX] += Math.max(0, total - listed);
    }
    const records = snapshotToEvents(m, view, { tNs: nowNs, resync: false, evictMissing: true, countProofs: false });
    m.applyRecords(records, true);
    for (const [id, h] of this.handles) if (!m.jobs.has(h)) this.handles.delete(id);

    // Proof counters by difference of the daemon's cumulative ones.
    if (s.counters) {
      this.addDeltas(s.counters.completed_by_kind, this.prevCompleted, m.kProofsCompleted);
      this.addDeltas(s.counters.failed_by_kind, this.prevFailed, m.kProofsFailed);
      if (s.counters.cancelled_by_kind) this.addDeltas(s.counters.cancelled_by_kind, this.prevCancelled, m.kProofsCancelled);
    }
    m.synthMax = s.synthesis?.max_concurrent ?? m.synthMax;
    m.memoryBudgetBytes = s.memory?.total_bytes ?? m.memoryBudgetBytes;
  }

  private addDeltas(cur: Record<string, number>, prev: Map<string, number>, into: Float64Array): void {
    const next = new Map<string, number>();
    for (const [kind, n] of Object.entries(cur)) {
      const before = prev.get(kind);
      // A counter that went down restarted: everything it shows is new.
      const delta = before === undefined || n < before ? (this.primed ? n : 0) : n - before;
      into[this.kindSlot(kind)] += delta;
      next.set(kind, n);
    }
    prev.clear();
    for (const [k, n] of next) prev.set(k, n);
  }

  /** The first snapshot sets baselines: proofs finished before we attached are not ours. */
  private get primed(): boolean {
    return this.lastBody !== null;
  }

  private restarted(s: CuzkStatus, nowNs: number): void {
    const m = this.model;
    m.errors.inc('restart', `daemon restarted (uptime went from ${this.lastUptime}s to ${s.uptime_secs}s)`);
    this.log('warn', `daemon restarted (uptime ${this.lastUptime}s -> ${s.uptime_secs}s); keeping totals, resetting baselines`, true);
    // Everything the old process had is gone: end its jobs and stints (state only).
    const empty = { memoryUsedBytes: 0, synthesisActive: 0, queueDepthByKind: new Float64Array(KIND_SLOTS), pipelines: [], workers: [] };
    const records = snapshotToEvents(m, empty, { tNs: nowNs, resync: true, evictMissing: true, countProofs: false });
    for (let w = 0; w < m.wBusy.length; w++) {
      if (m.wBusy[w]) records.push({ seq: 0, tNs: nowNs, type: EV_WORKER, worker: w, aux: 0, value: Math.max(0, nowNs - m.wSinceNs[w]) });
    }
    m.applyRecords(records, false);
    this.handles.clear();
    // New process, new counters: the next deltas start from zero.
    this.prevCompleted = new Map(Object.keys(s.counters?.completed_by_kind ?? {}).map((k) => [k, 0]));
    this.prevFailed = new Map(Object.keys(s.counters?.failed_by_kind ?? {}).map((k) => [k, 0]));
    this.prevCancelled = new Map(Object.keys(s.counters?.cancelled_by_kind ?? {}).map((k) => [k, 0]));
  }

  refresh(): void {
    // Sampled source: scrapes read the last applied snapshot; polling runs on its own.
  }

  nowNs(): number {
    return hrNowNs();
  }

  statusBody(): Record<string, unknown> | null {
    return this.lastBody;
  }

  snapshotAgeSeconds(): number {
    return this.lastBody ? (hrNowNs() - this.lastGoodNs) / 1e9 : 0;
  }

  ready(): { ok: boolean; reason: string } {
    if (!this.model.up) return { ok: false, reason: this.model.errors.lastMessage ?? 'no snapshot yet' };
    if (this.model.topology.gpus.length === 0) return { ok: false, reason: 'the daemon reports no GPU workers' };
    return { ok: true, reason: '' };
  }
}
