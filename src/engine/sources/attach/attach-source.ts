/**
 * AttachSource: the same metrics from a real cuzk daemon we do not control, by polling its
 * GET /status (DESIGN §7). Each good snapshot is turned into the state changes the native
 * engine would have reported (snapshot-sync.ts), so one model and one metrics path serve
 * both sources.
 *
 * Counters stay exact and monotonic although the source is sampled:
 *  - the first snapshot is the baseline: what finished before we attached is not ours
 *    (partitions as well as proofs), so an exporter restart never counts anything twice;
 *  - after that, a partition's GPU/synthesis time is added once, when the model first sees
 *    it end (finished jobs stay in cuzk's snapshot for 30 s, far longer than a poll);
 *  - proof counts come from the daemon's cumulative per-kind counters, by difference;
 *  - a daemon restart (uptime going backwards, or its cumulative totals going down) resets
 *    only our baselines, never our totals;
 *  - the model's clock is the time of the last applied snapshot: a running stint is counted
 *    up to the last time it was seen running, never through time we did not look (a poll
 *    that failed, a daemon that went away).
 * Every failure (connect, timeout, HTTP status, size, JSON, schema) sets cuzk_up to 0 and
 * is counted by reason; the last good snapshot stays served with its age. A malformed part
 * of a snapshot (one pipeline, one worker, one section) is skipped and counted (bad_field):
 * what we knew about it is kept, not taken for gone.
 *
 * Past ~500 lines on purpose: one poll loop whose baselines, restart detection and counters
 * must move together (the rules above); split, each rule would span files.
 */
import type * as http from 'node:http';
import * as https from 'node:https';
import { urlToHttpOptions } from 'node:url';
import { Http1Pool, Http1Request, Http1Target } from './http1-client';
import { HttpParseError } from './http1-response';
import type { ErrorCounts } from '../../model/error-counts';
import { EV_WORKER } from '../../model/event-layout';
import { KIND_SLOTS, OTHER_KIND_INDEX, kindIndex } from '../../model/kinds';
import { snapshotToEvents, viewFromStatus } from '../snapshot-sync';
import type { MetricsSource } from '../source';
import { GpuInfo, StateModel, Topology } from '../../model/state-model';
import { capForServing, HighWater, IdentityGuard, jsonShapeBytes, MAX_JSON_DEPTH, MAX_SNAPSHOT_CONTAINERS, StickyGpuNames, maxProofsIn } from '../plausibility';
import { CuzkStatus, validateStatus } from '../status-schema';
import { StaleOptions, StaleStatus } from './status-stale';
import type { Logger } from '../../../util/logger';

export interface AttachOptions {
  url: string;
  /** Where errors are counted (the attach merge shares one); default this source's model's. */
  errors?: ErrorCounts;
  pollIntervalMs: number;
  timeoutMs: number;
  maxBodyBytes: number;
  logger: Logger;
  /** Thresholds for what cuzk's /status never clears (attach/status-stale.ts). */
  stale?: StaleOptions;
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
  'implausible',
  'conflict',
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

/**
 * Whether a partition state (cuzk's names: pending, synthesizing, synth_done, gpu, done,
 * failed) is final. Two comparisons, not a lookup by name in a table (~800 partitions a
 * poll; any other name, `constructor` included, is not final).
 */
const isFinalState = (state: string): boolean => state === 'done' || state === 'failed';

/** Fetches a URL with a deadline and a body-size limit. */
export function fetchLimited(url: string, timeoutMs: number, maxBytes: number, signal?: AbortSignal, agents?: KeepAlive): Promise<Buffer> {
  return fetchOnce(url, timeoutMs, performance.now() + timeoutMs, maxBytes, signal, agents, true);
}

/**
 * Keep-alive agents for one source's polls: one connection, reused from poll to poll where
 * the daemon allows it (a new TCP connection per poll costs ~0.3 ms of CPU; cuzk itself
 * answers `Connection: close`, so against it every poll still connects). Destroyed when the
 * source stops. A daemon that leaves a connection open but never answers a second request
 * on it (a one-request server without `Connection: close`) would time out every other poll:
 * after a timeout on a reused connection (destroyed, so the next poll connects afresh),
 * when that happens twice with the new connection answering (`strikes`), `off` is set for
 * good. A
 * daemon that is simply hung times out on new connections too, and keeps keep-alive.
 */
export class KeepAlive {
  /** http://: our own HTTP/1.1 client (http1-client.ts), at most one idle connection. */
  readonly http = new Http1Pool();
  readonly https = new https.Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1 });
  off = false;
  /**
   * A reused connection timed out (and was destroyed, so the next request goes on a new
   * one): whether a new connection answers decides if it counts as a strike.
   */
  freshNext = false;
  strikes = 0;
  private parsed: (Target & { url: string }) | null = null;

  /** The polled URL as request options: a source polls one URL for its life, parsed once (throws as `new URL`). */
  target(url: string): Target {
    if (this.parsed?.url !== url) this.parsed = { url, ...parseTarget(url) };
    return this.parsed;
  }

  /** A request was answered (200, whole body), on a reused connection or a new one. */
  answered(reused: boolean): void {
    if (reused) {
      this.strikes = 0; // a one-request server never answers on a reused connection
      return;
    }
    if (!this.freshNext) return;
    this.freshNext = false;
    if (++this.strikes >= 2) {
      this.off = true;
      this.destroy(); // the connection that just answered would otherwise idle until stop()
    }
  }

  /** A request on a new connection failed: a hung daemon, not a one-request server. */
  freshFailed(): void {
    this.freshNext = false;
  }
  destroy(): void {
    this.http.destroy();
    this.https.destroy();
  }
}

/** The polled URL, parsed once: Node's request options (https) and our client's target (http). */
interface Target {
  protocol: string;
  options: http.RequestOptions;
  http1: Http1Target | null;
}

function parseTarget(url: string): Target {
  const u = new URL(url);
  const options = urlToHttpOptions(u);
  // As Node's ClientRequest fills them in: no host is localhost, no port the scheme's.
  const http1 = u.protocol === 'http:' ? { host: options.hostname || 'localhost', port: options.port ? Number(options.port) : 80, path: options.path ?? '/', auth: options.auth ?? undefined } : null;
  return { protocol: u.protocol, options, http1 };
}

/** A request in flight, from either client: Node's https one or ours (http1-client.ts). */
interface InFlight {
  readonly reusedSocket: boolean;
  destroy(): void;
}

/** What the response did, whichever client carried it; fetchOnce decides the outcome. */
interface Events {
  /** The head of the final response. */
  response(status: number, statusMessage: string, declaredLength: number): void;
  data(c: Buffer): void;
  /** The whole body arrived. */
  end(): void;
  /** The body broke off after the head (the connection closed or failed). */
  broken(e: NodeJS.ErrnoException | null): void;
  /** The request failed (before an answer, or a malformed answer). */
  error(e: NodeJS.ErrnoException): void;
}

const HEADERS = { Accept: 'application/json' };

/** The GET on Node's https client (its keep-alive agent, or none). */
function startNode(t: Target, agent: https.Agent | false, ev: Events): InFlight {
  const req = https.get({ ...t.options, headers: HEADERS, agent }, (res) => {
    res.on('close', () => {
      if (!res.complete) ev.broken(null);
    });
    ev.response(res.statusCode ?? 0, res.statusMessage ?? '', Number(res.headers['content-length']));
    res.on('data', (c: Buffer) => ev.data(c));
    res.on('end', () => (res.complete ? ev.end() : ev.broken(null)));
    res.on('error', (e: NodeJS.ErrnoException) => ev.broken(e));
  });
  req.on('error', (e: NodeJS.ErrnoException) => ev.error(e));
  return req;
}

/** The GET on our HTTP/1.1 client. */
function startHttp1(t: Http1Target, pool: Http1Pool, keepAlive: boolean, ev: Events): InFlight {
  let answered = false;
  const req: Http1Request = pool.request(t, HEADERS, keepAlive, {
    onResponse: (head) => {
      answered = true;
      ev.response(head.status, head.reason, head.contentLength < 0 ? NaN : head.contentLength);
    },
    onData: (c) => ev.data(c),
    onEnd: () => ev.end(),
    // As Node's client: a malformed answer fails the request, a connection lost mid-body the body.
    onError: (e) => (answered && !(e instanceof HttpParseError) ? ev.broken(e) : ev.error(e)),
  });
  return req;
}

function fetchOnce(
  url: string,
  timeoutMs: number,
  deadline: number,
  maxBytes: number,
  signal: AbortSignal | undefined,
  agents: KeepAlive | undefined,
  mayRetry: boolean,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let t: Target;
    try {
      t = agents ? agents.target(url) : parseTarget(url);
    } catch {
      return reject(new PollError('connect', `invalid URL ${url}`));
    }
    if (t.protocol !== 'http:' && t.protocol !== 'https:') return reject(new PollError('connect', `${url}: only http:// and https:// are supported`));
    let settled = false;
    let answered = false; // the response began: a failure from here on is the daemon's
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (err: Error | null, body?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err && !req.reusedSocket) agents?.freshFailed();
      // The signal lives as long as the source: a listener left on it per poll would leak.
      signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve(body!);
    };
    // Shutdown does not wait for a hung daemon (the poll is abandoned, not counted).
    function onAbort(): void {
      req.destroy();
      finish(new PollError('connect', `GET ${url}: abandoned at shutdown`));
    }
    const events: Events = {
      response(status, statusMessage, declared) {
        answered = true;
        if (status !== 200) {
          // Not read: an error page can be as large or as slow as any other body.
          req.destroy();
          return finish(new PollError('http_status', `GET ${url}: HTTP ${status}${statusMessage ? ` ${statusMessage}` : ''}`));
        }
        if (Number.isFinite(declared) && declared > maxBytes) {
          req.destroy();
          return finish(new PollError('body_too_large', `GET ${url}: body of ${declared} bytes exceeds the limit of ${maxBytes}`));
        }
      },
      data(c) {
        if (settled) return;
        size += c.length;
        if (size > maxBytes) {
          req.destroy();
          finish(new PollError('body_too_large', `GET ${url}: body exceeds the limit of ${maxBytes} bytes`));
          return;
        }
        chunks.push(c);
      },
      end() {
        if (settled) return;
        agents?.answered(req.reusedSocket);
        finish(null, Buffer.concat(chunks, size));
      },
      broken(e) {
        finish(new PollError('connect', `GET ${url}: connection closed before the body was complete${e ? ` (${describeNetError(e)})` : ''}`));
      },
      error(e) {
        // A kept-alive connection the daemon closed as we reused it (its idle timeout), before
        // any answer: not the daemon failing. Asked again once, on a new connection, within
        // what is left of the same deadline (Node's documented pattern).
        if (mayRetry && !settled && !answered && req.reusedSocket && (e.code === 'ECONNRESET' || e.code === 'EPIPE') && deadline - performance.now() > 0) {
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          fetchOnce(url, timeoutMs, deadline, maxBytes, signal, agents, false).then(resolve, reject);
          return;
        }
        finish(new PollError('connect', `GET ${url}: ${describeNetError(e)}`));
      },
    };
    const keepAlive = agents !== undefined && !agents.off;
    const req: InFlight = t.http1 ? startHttp1(t.http1, agents?.http ?? new Http1Pool(), keepAlive, events) : startNode(t, keepAlive ? agents.https : false, events);
    signal?.addEventListener('abort', onAbort);
    const timer = setTimeout(
      () => {
        if (req.reusedSocket && !answered && agents) agents.freshNext = true;
        req.destroy();
        finish(new PollError('timeout', `GET ${url}: no complete answer within ${timeoutMs} ms`));
      },
      Math.max(0, deadline - performance.now()),
    );
  });
}

const NET_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused (is status_listen set and the daemon running?)',
  ECONNRESET: 'connection reset by the daemon',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed by the daemon',
};

function describeNetError(e: NodeJS.ErrnoException): string {
  const known = e.code ? NET_ERRORS[e.code] : undefined;
  if (known) return `${known} (${e.code})`;
  return e.code && !e.message.includes(e.code) ? `${e.message} (${e.code})` : e.message;
}

/** A proof kind name as it may appear in a log line: quoted, escaped, cut at 64 characters. */
function quoteKind(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}

export class AttachSource implements MetricsSource {
  readonly model = new StateModel();
  readonly source = 'attach' as const;
  readonly backend = 'cuzk';
  /** Called after each successful poll is applied (status page push, tests). */
  onPoll: ((ok: boolean) => void) | null = null;

  private lastBody: Record<string, unknown> | null = null;
  private lastGoodNs = 0;
  /** The daemon's identity across snapshots (plausibility.ts). */
  private readonly identity = new IdentityGuard();
  private lastTotals: { completed: number; failed: number } | null = null;
  private readonly handles = new Map<string, number>();
  /** handles reversed (jobId(): the cross-check asks for every busy worker on every refresh). */
  private readonly idOfHandle = new Map<number, string>();
  /**
   * Each listed job's partitions when last seen, by index: 1 where done or failed (the
   * re-registration check). Updated in place while the job keeps its partition count.
   */
  private readonly started = new Map<string, Uint8Array>();
  /** Worker id -> model slot, for the topology object it was built from (rebuilt when that changes). */
  private slotOf = new Map<number, number>();
  private slotOfTopology: Topology | null = null;
  private nextHandle = 1;
  // The daemon's cumulative per-kind counters, with high-water marks (plausibility.ts).
  private prevCompleted = new HighWater();
  private prevFailed = new HighWater();
  private prevCancelled = new HighWater();
  private readonly gpuNames = new StickyGpuNames();
  /** What cuzk's /status never clears (failed jobs, stale workers), settled per snapshot. */
  private readonly stale: StaleStatus;
  /** Proofs inferred failed from /status (cuzk counts only the PoRep self-check there), by kind slot. */
  readonly kInferredFailed = new Float64Array(KIND_SLOTS);
  private readonly kInferredSeen = new Float64Array(KIND_SLOTS);
  private readonly abort = new AbortController();
  private readonly agents = new KeepAlive();
  private keepAliveOffLogged = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private lastLogged = '';
  private lastLoggedAt = 0;
  private inflight: Promise<void> | null = null;
  polls = 0;
  private readonly errors: ErrorCounts;

  constructor(private readonly opts: AttachOptions) {
    this.errors = opts.errors ?? this.model.errors;
    this.stale = new StaleStatus(opts.stale);
    for (const r of ATTACH_ERRORS) this.errors.declare(r);
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
    this.abort.abort(); // a poll hung on the daemon ends now, not at --cuzk.timeout
    await this.inflight;
    this.agents.destroy();
  }

  /** One poll: fetch, validate, apply. Never throws; failures are counted. */
  async pollOnce(): Promise<void> {
    this.polls++;
    try {
      const raw = await fetchLimited(this.opts.url, this.opts.timeoutMs, this.opts.maxBodyBytes, this.abort.signal, this.agents);
      // One pass for both bounds. The count is checked before parsing: what JSON.parse would
      // allocate is bounded by it (issue 20).
      const shape = jsonShapeBytes(raw, MAX_SNAPSHOT_CONTAINERS, MAX_JSON_DEPTH);
      if (shape.containers > MAX_SNAPSHOT_CONTAINERS) {
        throw new PollError('invalid_snapshot', `snapshot from ${this.opts.url} rejected before parsing: more than ${MAX_SNAPSHOT_CONTAINERS} objects/arrays`);
      }
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch (e) {
        throw new PollError('malformed_json', `GET ${this.opts.url}: body is not JSON (${(e as Error).message})`);
      }
      // Depth is bounded before anything walks or re-serves the body (a cuzk snapshot nests 4 deep).
      if (typeof body === 'object' && body !== null && !Array.isArray(body) && shape.depth > MAX_JSON_DEPTH) {
        throw new PollError('invalid_snapshot', `snapshot from ${this.opts.url} rejected: nested deeper than ${MAX_JSON_DEPTH} levels`);
      }
      this.applyBody(body);
      this.onPoll?.(true);
    } catch (e) {
      if (this.stopped) return;
      const err = e instanceof PollError ? e : new PollError('invalid_snapshot', (e as Error).message);
      if (err.reason === 'conflict') {
        // The daemon answered; the answer was another's: counted, the surface stays as it was.
        this.errors.inc(err.reason, err.message);
        this.log('warn', err.message);
      } else this.fail(err.reason, err.message);
      this.onPoll?.(false);
    } finally {
      if (this.agents.off && !this.keepAliveOffLogged && !this.stopped) {
        this.keepAliveOffLogged = true;
        this.opts.logger.warn('twice the daemon left a request on a kept-alive connection unanswered and answered it on a new one: connecting afresh for every poll from now on', { source: this.opts.url });
      }
    }
  }

  /** Validates and applies one parsed body (also used directly by tests). */
  applyBody(body: unknown, nowNs = hrNowNs()): void {
    const v = validateStatus(body);
    if (!v.ok) throw new PollError('invalid_snapshot', `snapshot from ${this.opts.url} rejected: ${v.error}`);
    for (const what of v.skipped) this.errors.inc('bad_field', `snapshot from ${this.opts.url}: skipped ${what}`);
    if (v.skipped.length > 0) this.log('warn', `skipped malformed parts of the snapshot: ${v.skipped.slice(0, 3).join('; ')}${v.skipped.length > 3 ? ` (+${v.skipped.length - 3} more)` : ''}`);
    for (const what of v.implausible) this.errors.inc('implausible', `snapshot from ${this.opts.url}: skipped ${what}`);
    if (v.implausible.length > 0) this.log('warn', `skipped implausible parts of the snapshot: ${v.implausible.slice(0, 3).join('; ')}${v.implausible.length > 3 ? ` (+${v.implausible.length - 3} more)` : ''}`);
    this.apply(v.status, nowNs, v.skippedJobIds, v.skippedWorkerIds);
    // Re-served at /status: what we know as validated, unknown fields capped (plausibility.ts).
    const served = capForServing(v.status);
    for (const what of served.dropped) this.errors.inc('bad_field', `snapshot from ${this.opts.url}: not re-served: ${what}`);
    if (served.dropped.length > 0) this.log('warn', `not re-serving oversized fields of the snapshot: ${served.dropped.slice(0, 3).join('; ')}${served.dropped.length > 3 ? ` (+${served.dropped.length - 3} more)` : ''}`);
    this.lastBody = served.body;
    this.lastGoodNs = nowNs;
    if (!this.model.up) this.log('info', `source is up: ${this.opts.url}`, true);
    this.model.up = true;
  }

  private fail(reason: Reason, message: string): void {
    this.errors.inc(reason, message);
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

  private apply(daemon: CuzkStatus, nowNs: number, skippedJobIds: string[] = [], skippedWorkerIds: number[] = []): void {
    const m = this.model;
    const primed = this.primed;
    const totals = daemon.counters ? { completed: daemon.counters.total_completed, failed: daemon.counters.total_failed } : null;
    const totalsWentDown =
      totals !== null && this.lastTotals !== null && (totals.completed < this.lastTotals.completed || totals.failed < this.lastTotals.failed);
    // A restart is believed only if the new process can have started after our last look;
    // otherwise another daemon answers at this address (two alternating, a hostile peer):
    // refused, never taken for a restart that would re-add the cumulative counters.
    const prevUptime = this.identity.lastUptime;
    const v = this.identity.check(daemon.uptime_secs, nowNs, totalsWentDown);
    if (v === 'conflict') {
      throw new PollError('conflict', `snapshot from ${this.opts.url} refused: uptime ${prevUptime}s -> ${daemon.uptime_secs}s${totalsWentDown ? ' with its totals going back' : ''} is neither the same daemon nor a restart`);
    }
    const restartedNow = primed && v === 'restart';
    if (restartedNow) this.restarted(daemon, nowNs, `uptime ${prevUptime}s -> ${daemon.uptime_secs}s`);
    if (totals) this.lastTotals = totals;
    // cuzk's own pipelines carry no outcome: a failed one stays forever with live-looking
    // partitions (status-stale.ts). The model takes the settled copy; the daemon's snapshot
    // gets our reading in new fields only. The reference engine says its outcomes itself.
    const settled = this.stale.settle(daemon);
    const s = settled.status;
    const inferred = settled.fresh.filter((f) => s.pipelines.find((p) => p.job_id === f.jobId)?.outcome === undefined);
    if (primed) for (const f of inferred) this.kInferredFailed[this.kindSlot(f.kind)]++;

    // Topology: workers as reported (plus any whose entry was unusable this time: still
    // there, keeping their state and totals); GPUs from the workers' ordinals (cuzk has no
    // GPU list).
    const workers = s.gpu_workers.map((w) => ({ id: w.worker_id, gpu: w.gpu_ordinal }));
    if (skippedWorkerIds.length > 0) {
      const listed = new Set(workers.map((w) => w.id));
      for (const id of skippedWorkerIds) {
        const prev = m.topology.workers.find((w) => w.id === id);
        if (prev && !listed.has(id)) workers.push({ id, gpu: prev.gpu });
      }
    }
    workers.sort((a, b) => a.id - b.id);
    const ordinals = new Set<number>(workers.map((w) => w.gpu));
    const named = new Map<number, GpuInfo>();
    // A GPU's identity does not change while the daemon runs: the first one seen stays (a
    // change is counted), so invented names cannot mint new cuzk_gpu_info series per poll.
    let renamed = 0;
    for (const g of s.gpus ?? []) {
      const r = this.gpuNames.resolve(g.ordinal, { name: g.name, uuid: g.uuid ?? undefined, pciBusId: g.pci_bus_id ?? undefined });
      if (r.changed) renamed++;
      named.set(g.ordinal, { ordinal: g.ordinal, ...r.identity });
    }
    if (s.gpus) this.gpuNames.retain(s.gpus.map((g) => g.ordinal));
    if (renamed > 0) {
      this.errors.inc('implausible', `snapshot from ${this.opts.url}: ${renamed} GPU(s) reported a different name/uuid without a restart`);
      this.log('warn', `${renamed} GPU(s) changed name or uuid without a daemon restart; keeping the first identity seen`);
    }
    for (const g of named.keys()) ordinals.add(g);
    const topology: Topology = {
      gpus: [...ordinals].sort((a, b) => a - b).map((o) => named.get(o) ?? { ordinal: o, name: 'unknown' }),
      workers,
      lockEvents: false,
    };
    m.setTopology(topology, nowNs);
    if (this.slotOfTopology !== m.topology) {
      // setTopology keeps its object while nothing changed: the map is rebuilt only on a change.
      this.slotOfTopology = m.topology;
      this.slotOf = new Map();
      m.topology.workers.forEach((w, i) => this.slotOf.set(w.id, i));
    }
    const slotOf = this.slotOf;

    // Handles per job id; ids are never sliced, only mapped. Unknown kinds are folded into
    // "other" and counted: once per new job, and once per new key of the daemon's per-kind
    // counters.
    const unknown = new Set<string>();
    for (const p of s.pipelines) {
      // A job id registered again (cuzk accepts a re-used id — Curio's retries re-use theirs —
      // and status.rs register_job replaces the JobState): a partition that had finished is
      // back to an earlier state (impossible within one JobState; a replayed older snapshot
      // is refused by the identity check first). A new job: a new handle, its partitions
      // count again.
      // By partition index (validated: a partition's index is its place in the list).
      const parts = p.partitions;
      const seen = this.started.get(p.job_id);
      const tracked = seen !== undefined && this.handles.has(p.job_id);
      const ended = seen !== undefined && seen.length === parts.length ? seen : new Uint8Array(parts.length);
      let regressed = false;
      for (let i = 0; i < parts.length; i++) {
        // A partition we abandoned (status-stale.ts) is final by our reading, not cuzk's: it
        // moving on means the job had not failed, not that its id registered again (which
        // would count its ended partitions twice).
        const done = isFinalState(parts[i].state) && (parts[i] as { abandoned?: boolean }).abandoned !== true ? 1 : 0;
        // `seen` is read at i before `ended` (possibly the same array) is written there.
        if (tracked && done === 0 && i < seen.length && seen[i] === 1) regressed = true;
        ended[i] = done;
      }
      if (regressed) this.dropHandle(p.job_id);
      if (ended !== seen) this.started.set(p.job_id, ended);
      if (!this.handles.has(p.job_id)) {
        this.handles.set(p.job_id, this.nextHandle);
        this.idOfHandle.set(this.nextHandle++, p.job_id);
        if (kindIndex(p.proof_kind) < 0) {
          this.errors.inc('unknown_proof_kind', `unknown proof kind folded into "other": ${quoteKind(p.proof_kind)}`);
          unknown.add(p.proof_kind);
        }
      }
    }
    if (s.counters) {
      const byKind: [Record<string, number> | undefined, HighWater][] = [
        [s.counters.completed_by_kind, this.prevCompleted],
        [s.counters.failed_by_kind, this.prevFailed],
        [s.counters.cancelled_by_kind, this.prevCancelled],
      ];
      for (const [cur, prev] of byKind) {
        if (!cur) continue;
        for (const kind of Object.keys(cur)) {
          if (kindIndex(kind) >= 0 || prev.has(kind)) continue;
          this.errors.inc('unknown_proof_kind', `unknown proof kind folded into "other": ${quoteKind(kind)}`);
          unknown.add(kind);
        }
      }
    }
    if (unknown.size > 0) {
      const names = [...unknown].slice(0, 3).map(quoteKind).join(', ');
      this.log('warn', `folded ${unknown.size} unknown proof kind${unknown.size === 1 ? '' : 's'} into proof_kind="other": ${names}${unknown.size > 3 ? ` (+${unknown.size - 3} more)` : ''}`);
    }
    const view = viewFromStatus(s, {
      pipelineHandle: (p) => this.handles.get(p.job_id)!,
      workerJobHandle: (w) => (w.current_job !== null ? (this.handles.get(w.current_job) ?? 0) : 0),
      kindSlot: (n) => this.kindSlot(n),
      workerSlot: (w) => slotOf.get(w.worker_id) ?? -1,
      snapshotNs: nowNs,
      useBusySinceNs: false,
    });
    // A worker the last snapshot showed idle started since (cuzk's busy_secs restarts at each
    // pickup): a stint dated earlier is one already credited when status-stale.ts showed it
    // idle (its thresholds moved up since), counted from here, not again from its start.
    if (primed) for (const w of view.workers) if (w.busy && m.wBusy[w.slot] === 0 && w.busySinceNs < this.lastGoodNs) w.busySinceNs = this.lastGoodNs;
    // A section the snapshot lacks (counted as bad_field) leaves its gauges as they were.
    if (!s.memory) view.memoryUsedBytes = m.memoryUsedBytes;
    if (!s.synthesis) view.synthesisActive = m.synthActive;
    // Queue depth by kind: the daemon's own split when it has one (our engine does);
    // otherwise jobs whose partitions are all pending under their kind, plus ALL of the
    // daemon's queue_depth under "other". The two are disjoint: cuzk's queue_depth is
    // Scheduler::len() (engine.rs detailed_status), the requests its dispatcher has not
    // taken yet, and a job is listed only once register_job ran, after the dispatcher took
    // it with scheduler.next() (engine.rs process_batch); the heap's kinds are not shown.
    if (!s.counters) view.queueDepthByKind = Float64Array.from(m.kQueueDepth);
    else if (!s.counters.queue_depth_by_kind) {
      const q = view.queueDepthByKind as Float64Array;
      q.fill(0);
      for (const p of view.pipelines) {
        let pending = p.states.length > 0;
        for (let i = 0; i < p.states.length; i++) if (p.states[i] !== 0) pending = false;
        if (pending) q[p.kind]++;
      }
      q[OTHER_KIND_INDEX] += s.counters.queue_depth;
    }
    const keep = new Set<number>();
    for (const id of skippedJobIds) {
      const h = this.handles.get(id);
      if (h !== undefined) keep.add(h);
    }
    // The first snapshot is the baseline (state only): what it shows finished, finished
    // before we looked, as the proof counters' baselines below.
    const records = snapshotToEvents(m, view, {
      tNs: nowNs,
      resync: !primed,
      evictMissing: true,
      countProofs: false,
      stintFloorNs: primed ? this.lastGoodNs : undefined,
      keep,
    });
    m.applyRecords(records, true);
    this.handles.forEach((h, id) => {
      if (!m.jobs.has(h)) this.dropHandle(id);
    });
    for (const id of this.started.keys()) if (!this.handles.has(id)) this.started.delete(id);

    // Proof counters by difference of the daemon's cumulative ones, bounded as GetMetrics'
    // are (docs/hostile-inputs.md): no more proofs ended than (elapsed + 10 s) x 100 x
    // workers since the last look, or since its start after a restart. A snapshot claiming
    // more is taken as the new baseline: counted implausible, nothing added.
    if (s.counters) {
      const c = s.counters;
      let count = this.primed;
      if (count) {
        const grew =
          this.prevCompleted.pending(Object.entries(c.completed_by_kind)) +
          this.prevFailed.pending(Object.entries(c.failed_by_kind)) +
          (c.cancelled_by_kind ? this.prevCancelled.pending(Object.entries(c.cancelled_by_kind)) : 0);
        const elapsedS = restartedNow ? daemon.uptime_secs : Math.max(0, (nowNs - this.lastGoodNs) / 1e9);
        if (grew > maxProofsIn(elapsedS, s.gpu_workers.length)) {
          count = false;
          const what = `snapshot from ${this.opts.url}: ${grew} proofs ended in ${elapsedS.toFixed(1)}s${restartedNow ? ' since a restart' : ''}: not a prover's count (taken as the baseline, nothing added)`;
          this.errors.inc('implausible', what);
          this.log('warn', what);
        }
      }
      this.addDeltas(c.completed_by_kind, this.prevCompleted, m.kProofsCompleted, count);
      this.addDeltas(c.failed_by_kind, this.prevFailed, m.kProofsFailed, count);
      if (c.cancelled_by_kind) this.addDeltas(c.cancelled_by_kind, this.prevCancelled, m.kProofsCancelled, count);
    }
    // Failed proofs cuzk's /status does not count (it counts the PoRep self-check only).
    for (let k = 0; k < KIND_SLOTS; k++) {
      if (this.kInferredFailed[k] > this.kInferredSeen[k]) {
        m.kProofsFailed[k] += this.kInferredFailed[k] - this.kInferredSeen[k];
        this.kInferredSeen[k] = this.kInferredFailed[k];
      }
    }
    m.synthMax = s.synthesis?.max_concurrent ?? m.synthMax;
    m.memoryBudgetBytes = s.memory?.total_bytes ?? m.memoryBudgetBytes;
  }

  /**
   * Adds what the daemon's cumulative per-kind counters grew by. A real restart was handled
   * before (uptime or totals went back: the marks are reset). A per-kind counter that goes
   * down on its own is not a restart: nothing is added (its high-water mark stays, so it is
   * never re-added when it comes back) and it is counted as implausible.
   */
  private addDeltas(cur: Record<string, number>, prev: HighWater, into: Float64Array, count: boolean): void {
    // Not counting (a baseline): the marks move on, nothing is added.
    const { add, wentDown } = prev.update(Object.entries(cur), count);
    if (count) for (const [kind, d] of add) into[this.kindSlot(kind)] += d;
    if (wentDown.length > 0) {
      this.errors.inc('implausible', `snapshot from ${this.opts.url}: per-kind counter(s) went down without a restart: ${wentDown.slice(0, 3).map(quoteKind).join(', ')}`);
      this.log('warn', `per-kind counters went down while uptime and totals did not (${wentDown.slice(0, 3).map(quoteKind).join(', ')}): not a restart, nothing counted`);
    }
  }

  /** The first snapshot sets baselines: proofs finished before we attached are not ours. */
  private get primed(): boolean {
    return this.lastBody !== null;
  }

  private restarted(s: CuzkStatus, nowNs: number, why: string): void {
    const m = this.model;
    this.errors.inc('restart', `daemon restarted (${why})`);
    this.log('warn', `daemon restarted (${why}); keeping totals, resetting baselines`, true);
    // Everything the old process had is gone: end its jobs and stints (state only).
    const empty = { memoryUsedBytes: 0, synthesisActive: 0, queueDepthByKind: new Float64Array(KIND_SLOTS), pipelines: [], workers: [] };
    const records = snapshotToEvents(m, empty, { tNs: nowNs, resync: true, evictMissing: true, countProofs: false });
    // Busy stints of the old process: counted up to the last time they were seen.
    for (let w = 0; w < m.wBusy.length; w++) {
      if (m.wBusy[w]) records.push({ seq: 0, tNs: nowNs, type: EV_WORKER, worker: w, aux: 0, value: Math.max(0, this.lastGoodNs - m.wSinceNs[w]) });
    }
    m.applyRecords(records, false);
    this.handles.clear();
    this.idOfHandle.clear();
    // New process, new counters: the next deltas start from zero.
    this.prevCompleted.reset();
    this.prevFailed.reset();
    this.prevCancelled.reset();
    this.gpuNames.reset();
    this.stale.reset();
  }

  /** MetricsSource.jobId (exemplars): the daemon's job id of a model job handle, whole. */
  jobId(handle: number): string | undefined {
    return this.idOfHandle.get(handle);
  }

  private dropHandle(id: string): void {
    const h = this.handles.get(id);
    if (h === undefined) return;
    this.handles.delete(id);
    this.idOfHandle.delete(h);
  }

  /** One surface: cuzk's /status (the merge, attach/merge.ts, adds gRPC and TIMELINE). */
  surfaceStates(): { name: string; up: boolean }[] {
    return [{ name: 'status', up: this.model.up }];
  }

  refresh(): void {
    // Sampled source: scrapes read the last applied snapshot; polling runs on its own.
  }

  /**
   * The model's clock: the time of the last applied snapshot. Running stints are exposed up
   * to the last moment they were seen running (busy-seconds are sampled in attach mode),
   * so they never grow while the daemon is not answering, and never go down when a stint
   * turns out to have ended earlier than the next poll.
   */
  nowNs(): number {
    return this.lastGoodNs;
  }

  statusBody(): Record<string, unknown> | null {
    return this.lastBody;
  }

  snapshotAgeSeconds(): number {
    return this.lastBody ? (hrNowNs() - this.lastGoodNs) / 1e9 : 0;
  }

  ready(): { ok: boolean; reason: string } {
    if (!this.model.up) return { ok: false, reason: this.errors.lastMessage ?? 'no snapshot yet' };
    if (this.model.topology.gpus.length === 0) return { ok: false, reason: 'the daemon reports no GPU workers' };
    return { ok: true, reason: '' };
  }
}
