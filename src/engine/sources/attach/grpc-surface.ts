/**
 * The gRPC surface (DESIGN §7b): cuzk's `cuzk.v1.ProvingEngine`, always on (`[daemon]
 * listen`: `unix:///run/curio/cuzk.sock` by default, `host:9820` in example configs), no
 * TLS, no reflection (we carry proto/cuzk/v1/proving.proto).
 *
 *  - GetMetrics, every poll: cuzk's hand-written Prometheus text. Its per-kind
 *    `cuzk_proofs_completed{proof_kind}` / `cuzk_proofs_failed{proof_kind}` (counters
 *    without `_total`, kinds spelled `porep_c2`...) are cumulative and include PoSt: our
 *    proof counters by difference, baselined at the first answer (what finished before we
 *    attached is not ours), a restart (uptime or a counter going back) resetting only the
 *    baselines. Its `cuzk_proof_duration_seconds` summary covers the last 1000 proofs (its
 *    _count and _sum go down when the window rolls): not used.
 *  - GetStatus, every `statusIntervalMs` (>= 5 s: cuzk runs nvidia-smi on each call): one
 *    GPUStatus per WORKER (index = worker id; ordinals repeat), with the job and kind it
 *    runs. Sees PoSt, but cuzk's finalizer clears `current_job` unconditionally, so a
 *    worker already on its next partition can be shown idle: an idle here is never taken
 *    as a contradiction, and worker time from this surface is sampled.
 * Every call has a deadline; every failure is counted by reason and sets the surface down.
 *
 * Past ~500 lines on purpose: one surface's two polls (GetMetrics, GetStatus) and the
 * counters, baselines and restart marks they share; the pure parsing and wire guard are in
 * grpc-wire.ts.
 */
import * as grpc from '@grpc/grpc-js';
import type { ErrorCounts } from '../../model/error-counts';
import { KIND_SLOTS, OTHER_KIND_INDEX, kindIndex } from '../../model/kinds';
import type { Logger } from '../../../util/logger';
import { BOUNDS, IdentityGuard, maxProofsIn } from '../plausibility';
import { CuzkMetricsText, GRPC_LIMITS as LIMITS, StatusMsg, grpcDetail, guardedService, metricsKindIndex, parseCuzkMetrics, validateStatus } from './grpc-wire';
import { UnaryCall, unaryCall } from './grpc-unary';
import { SampleHistory, Surface, ThrottledLog, WorkerClaim, WorkerSample, hrNowNs, quoteName } from './surface';

export const GRPC_ERRORS = ['grpc_unavailable', 'grpc_deadline', 'grpc_too_large', 'grpc_error', 'grpc_bad_response', 'grpc_restart', 'grpc_conflict'] as const;
type GrpcReason = (typeof GRPC_ERRORS)[number];

export interface GrpcOptions {
  /** `unix:///abs/path.sock` or `host:port`. */
  address: string;
  pollIntervalMs: number;
  statusIntervalMs: number;
  timeoutMs: number;
  maxMessageBytes: number;
  errors: ErrorCounts;
  logger: Logger;
}


/**
 * The channel's reconnect backoff while the daemon is down (grpc-js grows it x1.6 from
 * `initial`): capped at 2 s, or at the poll interval if that is shorter, so a daemon back
 * for that long is reached by the next poll instead of after grpc-js's default 120 s cap
 * (a restart would otherwise read as minutes of `cuzk_surface_up 0`); never under 100 ms,
 * so a dead socket is not hammered.
 */
export function reconnectBackoffMs(pollIntervalMs: number): { initial: number; max: number } {
  const max = Math.max(100, Math.min(2000, pollIntervalMs));
  return { initial: Math.min(100, max), max };
}

/** Checks a --cuzk.grpc-address value; returns the grpc-js target or throws a readable Error. */
export function grpcTarget(address: string): string {
  const a = address.trim();
  if (a.startsWith('unix:')) {
    const p = a.startsWith('unix://') ? a.slice('unix://'.length) : a.slice('unix:'.length);
    if (!p.startsWith('/')) throw new Error(`--cuzk.grpc-address "${address}": a unix socket needs an absolute path (unix:///run/curio/cuzk.sock)`);
    return `unix://${p}`;
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(a)) throw new Error(`--cuzk.grpc-address "${address}": use unix:///path/to.sock or host:port (no ${a.split(':')[0]}://; cuzk's gRPC has no TLS)`);
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(a);
  if (!m) throw new Error(`--cuzk.grpc-address "${address}" is not unix:///path/to.sock or host:port (for example 127.0.0.1:9820)`);
  const port = Number(m[3]);
  if (port < 1 || port > 65535) throw new Error(`--cuzk.grpc-address "${address}": port ${port} is out of range`);
  // cuzk's example configs listen on 0.0.0.0: connect to this host.
  const host = m[1] !== undefined ? `[${m[1] === '::' ? '::1' : m[1]}]` : m[2] === '0.0.0.0' ? '127.0.0.1' : m[2];
  return `${host}:${port}`;
}


const KIND_CACHE_MAX = 10_000;

export class GrpcSurface implements Surface {
  readonly name = 'grpc' as const;
  readonly target: string;
  private readonly client: grpc.Client;
  private readonly log: ThrottledLog;
  private readonly errors: ErrorCounts;
  private metricsTimer: NodeJS.Timeout | null = null;
  private statusTimer: NodeJS.Timeout | null = null;
  private inflight = new Set<Promise<void>>();
  private stopped = true;
  /** The fault last logged, per call and for the channel (callError). */
  private readonly faults = new Map<'GetMetrics' | 'GetStatus' | 'channel', string>();
  private metricsUp = false;
  private statusUp = false;
  private everStatus = false;

  // Proof counters (monotonic), by kind slot.
  readonly kProofsCompleted = new Float64Array(KIND_SLOTS);
  readonly kProofsFailed = new Float64Array(KIND_SLOTS);
  private prevCompleted: Map<string, number> | null = null;
  private prevFailed = new Map<string, number>();
  private lastTotals: { c: number; f: number } | null = null;
  private readonly unknownKinds = new Set<string>();

  /**
   * The daemon's own cumulative counters as the last GetMetrics had them (since the daemon
   * started; per kind slot), for the /status document: cuzk's /status counters are blind
   * to PoSt, these are not. Null before the first answer.
   */
  daemonCounts: { totalCompleted: number; totalFailed: number; completed: Map<number, number>; failed: Map<number, number> } | null = null;
  /** Latest GetMetrics gauges. */
  queueDepthTotal = 0;
  gpuWorkers = -1;

  // GetStatus: one entry per worker (index = worker id).
  /** GPU ordinal per worker; empty until the first GetStatus. */
  workerGpu: number[] = [];
  /** GPU names by ordinal. */
  readonly gpuNames = new Map<number, string>();
  private readonly calls = new Set<UnaryCall>();
  /** The two methods as called (grpc-unary.ts): path, the empty request serialized once, the answer's deserializer. */
  private readonly methods: Record<'GetMetrics' | 'GetStatus', { path: string; request: Buffer; responseDeserialize: (b: Buffer) => unknown }>;
  private closing = false;
  readonly queueDepth = new Float64Array(KIND_SLOTS);
  queuesKnown = false;
  /** Sampled worker state (driver when neither TIMELINE nor /status is attached). */
  wBusy = new Uint8Array(0);
  wSince = new Float64Array(0);
  wSeenUntil = new Float64Array(0);
  wBusyNs = new Float64Array(0);
  wParts = new Float64Array(0);
  wJob: string[] = [];
  wKind = new Int16Array(0);
  lastStatusHr = 0;
  /** When the last GetStatus that answered was sent (its answer holds somewhere after). */
  lastStatusAskHr = 0;
  private readonly samples = new SampleHistory();
  busyWorkers = 0;
  private readonly kindOfJob = new Map<string, number>();
  private readonly handles = new Map<string, number>();
  private nextHandle = 1;
  statusPolls = 0;
  metricsPolls = 0;
  private metricsAskHr = 0;
  private readonly metricsIdentity = new IdentityGuard();
  private readonly statusIdentity = new IdentityGuard();
  /** When the last applied GetMetrics answer came (hrtime). */
  private lastMetricsHr = 0;

  constructor(private readonly opts: GrpcOptions) {
    this.target = opts.address;
    this.errors = opts.errors;
    for (const r of GRPC_ERRORS) this.errors.declare(r);
    this.errors.declare('implausible');
    this.errors.declare('unknown_proof_kind');
    this.log = new ThrottledLog(opts.logger, { surface: 'grpc', source: opts.address });
    const service = guardedService(LIMITS.workers);
    const method = (d: grpc.MethodDefinition<object, unknown>) => ({ path: d.path, request: d.requestSerialize({}), responseDeserialize: d.responseDeserialize });
    this.methods = { GetMetrics: method(service.GetMetrics), GetStatus: method(service.GetStatus) };
    const Ctor = grpc.makeGenericClientConstructor(service, 'ProvingEngine');
    const backoff = reconnectBackoffMs(opts.pollIntervalMs);
    this.client = new Ctor(grpcTarget(opts.address), grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': opts.maxMessageBytes,
      'grpc.max_send_message_length': 1024 * 1024,
      'grpc.initial_reconnect_backoff_ms': backoff.initial,
      'grpc.max_reconnect_backoff_ms': backoff.max,
      'grpc.min_reconnect_backoff_ms': backoff.initial,
      'grpc.enable_retries': 0,
      // Channelz bookkeeping (per-call trace and counters nobody reads here) was ~0.2 ms of
      // CPU per call, a tenth of the poll-cycle budget (bench/attach-poll.ts).
      'grpc.enable_channelz': 0,
      'grpc.service_config_disable_resolution': 1,
    });
  }

  get up(): boolean {
    return this.metricsUp && (this.statusUp || !this.everStatus);
  }

  start(): void {
    this.stopped = false;
    const loop = (which: 'metrics' | 'status') => {
      if (this.stopped) return;
      const started = Date.now();
      const p = (which === 'metrics' ? this.pollMetrics() : this.pollStatus()).finally(() => {
        this.inflight.delete(p);
        if (this.stopped) return;
        const every = which === 'metrics' ? this.opts.pollIntervalMs : this.opts.statusIntervalMs;
        const t = setTimeout(() => loop(which), Math.max(0, every - (Date.now() - started)));
        if (which === 'metrics') this.metricsTimer = t;
        else this.statusTimer = t;
      });
      this.inflight.add(p);
    };
    loop('metrics');
    loop('status');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.metricsTimer) clearTimeout(this.metricsTimer);
    if (this.statusTimer) clearTimeout(this.statusTimer);
    // Calls hung on the daemon end now, not at their deadline (shutdown does not wait).
    this.closing = true;
    for (const c of this.calls) c.cancel();
    await Promise.all([...this.inflight]);
    this.client.close();
  }

  private call<T>(method: 'GetMetrics' | 'GetStatus'): Promise<T> {
    return new Promise((resolve, reject) => {
      const deadline = new Date(Date.now() + this.opts.timeoutMs);
      const m = this.methods[method];
      let c: UnaryCall | undefined = undefined;
      c = unaryCall(this.client.getChannel(), m.path, m.request, m.responseDeserialize as (b: Buffer) => T, deadline, (err, res) => {
        if (c) this.calls.delete(c);
        if (err) reject(err);
        else resolve(res as T);
      });
      this.calls.add(c);
    });
  }

  /** An answer that cannot be true: counted, logged once per distinct problem, not applied. */
  private refuse(reason: GrpcReason | 'implausible', message: string): void {
    this.errors.inc(reason, message);
    this.log.log('warn', message);
  }

  private fail(reason: GrpcReason, message: string): void {
    this.errors.inc(reason, message);
    this.log.log('warn', message);
  }

  private callError(method: 'GetMetrics' | 'GetStatus', e: unknown): void {
    if (this.closing) return; // cancelled at shutdown: not a daemon error
    const err = e as grpc.ServiceError;
    const code = typeof err?.code === 'number' ? err.code : -1;
    const detail = grpcDetail(err?.details || err?.message || String(e)).slice(0, 300);
    let reason: GrpcReason = 'grpc_error';
    let text = `${method} ${this.opts.address}: ${grpc.status[code] ?? 'error'}: ${detail}`;
    if (code === grpc.status.UNAVAILABLE) {
      // The channel's fault, not the method's: both calls share it, one line says it.
      reason = 'grpc_unavailable';
      text = `gRPC ${this.opts.address}: unavailable (${detail}); is cuzk running and is this its [daemon] listen address?`;
    } else if (code === grpc.status.DEADLINE_EXCEEDED) {
      reason = 'grpc_deadline';
      text = `${method} ${this.opts.address}: no answer within ${this.opts.timeoutMs} ms`;
    } else if (code === grpc.status.RESOURCE_EXHAUSTED) {
      reason = 'grpc_too_large';
      text = `${method} ${this.opts.address}: answer larger than ${this.opts.maxMessageBytes} bytes (${detail})`;
    } else if (code === grpc.status.INTERNAL && /pars(e|ing)|deserializ|decod/i.test(detail)) {
      reason = 'grpc_bad_response';
      text = `${method} ${this.opts.address}: answer is not a cuzk.v1 message (${detail})`;
    } else if (code === grpc.status.UNIMPLEMENTED) {
      text = `${method} ${this.opts.address}: not implemented there (is it cuzk's gRPC address?)`;
    }
    // Counted every time; logged once per state change: when the fault first appears or
    // changes, not at every poll while it lasts (a missing socket is one line, not two
    // every 5 s). A good answer clears it.
    this.errors.inc(reason, text);
    const key = reason === 'grpc_unavailable' ? 'channel' : method;
    if (this.faults.get(key) === text) return;
    this.faults.set(key, text);
    this.log.log('warn', text, true);
  }

  /** A call answered: the faults it had (and the channel's) are over. */
  private answered(method: 'GetMetrics' | 'GetStatus'): void {
    this.faults.delete(method);
    this.faults.delete('channel');
  }

  /** One GetMetrics: proof counters and gauges. Never throws. */
  async pollMetrics(): Promise<void> {
    this.metricsPolls++;
    this.metricsAskHr = hrNowNs();
    let res: { prometheus_text?: unknown };
    try {
      res = await this.call('GetMetrics');
    } catch (e) {
      this.setMetricsUp(false);
      return this.callError('GetMetrics', e);
    }
    const text = res?.prometheus_text;
    if (typeof text !== 'string') {
      this.setMetricsUp(false);
      return this.fail('grpc_bad_response', `GetMetrics ${this.opts.address}: prometheus_text is not a string`);
    }
    const m = parseCuzkMetrics(text);
    const askHr = this.metricsAskHr;
    if (m.bad > 0) this.fail('grpc_bad_response', `GetMetrics ${this.opts.address}: ${m.bad} unusable sample${m.bad === 1 ? '' : 's'} skipped`);
    if (m.uptimeSeconds === null) {
      this.setMetricsUp(false);
      return this.fail('grpc_bad_response', `GetMetrics ${this.opts.address}: no cuzk_uptime_seconds in the answer (not cuzk's metrics text)`);
    }
    this.applyMetrics(m, askHr);
    this.answered('GetMetrics');
    this.setMetricsUp(true);
  }

  private setMetricsUp(up: boolean): void {
    if (up && !this.metricsUp) this.log.log('info', `gRPC surface is up: ${this.opts.address}`, true);
    this.metricsUp = up;
  }

  /**
   * Called with how many proofs of each kind ended (completed + failed) since the previous
   * GetMetrics, and the window the answer was taken in (hrtime): kind evidence for TIMELINE
   * jobs that ended meanwhile (kind-evidence.ts, "grpc_metrics").
   */
  onProofDeltas: ((perKind: Float64Array, askHr: number, answerHr: number) => void) | null = null;

  /** Applies a parsed GetMetrics answer (also used by tests and the benchmark). */
  applyMetrics(m: CuzkMetricsText, askHr = hrNowNs()): void {
    const nowHr = hrNowNs();
    const totals = m.totalCompleted !== null && m.totalFailed !== null ? { c: m.totalCompleted, f: m.totalFailed } : null;
    const primed = this.prevCompleted !== null;
    // Per-kind counters cannot sum past the daemon's own totals (non-atomic reads: slack).
    const sum = (x: Map<string, number>) => [...x.values()].reduce((a, b) => a + b, 0);
    if (totals && (sum(m.completed) > totals.c + BOUNDS.kindSumSlack || sum(m.failed) > totals.f + BOUNDS.kindSumSlack)) {
      return this.refuse('implausible', `GetMetrics ${this.opts.address}: per-kind counters sum past the totals (${sum(m.completed)}/${sum(m.failed)} > ${totals.c}/${totals.f}): answer not used`);
    }
    const elapsedS = this.lastMetricsHr > 0 ? (nowHr - this.lastMetricsHr) / 1e9 : 0;
    const totalsBack = !!(totals && this.lastTotals && (totals.c < this.lastTotals.c || totals.f < this.lastTotals.f));
    const prevUptime = this.metricsIdentity.lastUptime;
    const v = this.metricsIdentity.check(m.uptimeSeconds!, nowHr, totalsBack);
    if (v === 'conflict') {
      return this.refuse('grpc_conflict', `GetMetrics ${this.opts.address}: uptime ${prevUptime}s -> ${m.uptimeSeconds}s in ${elapsedS.toFixed(1)}s${totalsBack ? ' with counters going back' : ''}: not the daemon that answered before, and not a restart (answer not used)`);
    }
    const restarted = primed && v === 'restart';
    if (primed && !restarted && totals && this.lastTotals) {
      const grew = totals.c - this.lastTotals.c + (totals.f - this.lastTotals.f);
      if (grew > maxProofsIn(elapsedS, this.gpuWorkers)) {
        return this.refuse('implausible', `GetMetrics ${this.opts.address}: ${grew} proofs finished in ${elapsedS.toFixed(1)}s: not a prover's count (answer not used)`);
      }
    }
    // A per-kind counter going down while uptime and totals did not is no restart: it is
    // counted as implausible in addDeltas, and its high-water mark stays (plausibility.ts).
    // A new process's counters are what it finished since it started: counted in full, so
    // they are bounded like any growth (docs/hostile-inputs.md), over its uptime. A claimed
    // restart with more is taken as the new baseline, nothing counted.
    let countNew = primed;
    if (restarted) {
      this.fail('grpc_restart', `cuzk restarted (GetMetrics: uptime ${prevUptime}s -> ${m.uptimeSeconds}s); keeping totals, resetting baselines`);
      this.prevCompleted = new Map();
      this.prevFailed = new Map();
      this.gpuNames.clear();
      const claimed = sum(m.completed) + sum(m.failed);
      if (claimed > maxProofsIn(m.uptimeSeconds!, this.gpuWorkers)) {
        countNew = false;
        const what = `GetMetrics ${this.opts.address}: a restarted cuzk claims ${claimed} proofs finished in its first ${m.uptimeSeconds}s: taken as its baseline, not counted`;
        this.errors.inc('implausible', what);
        this.log.log('warn', what);
      }
    }
    this.lastMetricsHr = nowHr;
    if (totals) this.lastTotals = totals;
    const bySlot = (src: Map<string, number>) => {
      const out = new Map<number, number>();
      for (const [kind, n] of src) {
        const slot = metricsKindIndex(kind);
        const k = slot < 0 ? OTHER_KIND_INDEX : slot;
        out.set(k, (out.get(k) ?? 0) + n);
      }
      return out;
    };
    this.daemonCounts = { totalCompleted: m.totalCompleted ?? 0, totalFailed: m.totalFailed ?? 0, completed: bySlot(m.completed), failed: bySlot(m.failed) };
    const before = Float64Array.from(this.kProofsCompleted);
    const beforeFailed = Float64Array.from(this.kProofsFailed);
    this.addDeltas(m.completed, countNew, this.prevCompleted ?? new Map(), this.kProofsCompleted, (x) => (this.prevCompleted = x));
    this.addDeltas(m.failed, countNew, this.prevFailed, this.kProofsFailed, (x) => (this.prevFailed = x));
    if (this.onProofDeltas) {
      const d = new Float64Array(KIND_SLOTS);
      let any = false;
      for (let k = 0; k < KIND_SLOTS; k++) {
        d[k] = this.kProofsCompleted[k] - before[k] + (this.kProofsFailed[k] - beforeFailed[k]);
        if (d[k] > 0) any = true;
      }
      if (any) this.onProofDeltas(d, askHr, hrNowNs());
    }
    if (m.queueDepth !== null) this.queueDepthTotal = m.queueDepth;
    if (m.gpuWorkers !== null) this.gpuWorkers = m.gpuWorkers;
  }

  private addDeltas(cur: Map<string, number>, primed: boolean, prev: Map<string, number>, into: Float64Array, save: (m: Map<string, number>) => void): void {
    // High-water marks (plausibility.ts): kinds that disappear keep theirs.
    const next = new Map(prev);
    const wentDown: string[] = [];
    for (const [kind, n] of cur) {
      if (!next.has(kind) && next.size >= LIMITS.kinds) continue;
      let slot = metricsKindIndex(kind);
      if (slot < 0) {
        slot = OTHER_KIND_INDEX;
        if (!this.unknownKinds.has(kind) && this.unknownKinds.size < LIMITS.kinds) {
          this.unknownKinds.add(kind);
          this.errors.inc('unknown_proof_kind', `unknown proof kind folded into "other": ${quoteName(kind)}`);
          this.log.log('warn', `GetMetrics: folded an unknown proof kind into proof_kind="other": ${quoteName(kind)}`);
        }
      }
      const before = prev.get(kind);
      if (before === undefined) {
        into[slot] += primed ? n : 0;
        next.set(kind, n);
      } else if (n < before) wentDown.push(kind); // the mark stays: never re-added
      else {
        into[slot] += n - before;
        next.set(kind, n);
      }
    }
    save(next);
    if (wentDown.length > 0) {
      this.errors.inc('implausible', `GetMetrics ${this.opts.address}: per-kind counter(s) went down without a restart: ${wentDown.slice(0, 3).map(quoteName).join(', ')}`);
      this.log.log('warn', `GetMetrics: per-kind counters went down while uptime and totals did not (${wentDown.slice(0, 3).map(quoteName).join(', ')}): not a restart, nothing counted`);
    }
  }

  /** One GetStatus: workers, GPUs, queues. Never throws. */
  async pollStatus(): Promise<void> {
    this.statusPolls++;
    const t0 = hrNowNs();
    let res: unknown;
    try {
      res = await this.call('GetStatus');
    } catch (e) {
      this.everStatus = true;
      this.statusUp = false;
      return this.callError('GetStatus', e);
    }
    this.answered('GetStatus');
    const v = validateStatus(res);
    this.everStatus = true;
    if (typeof v === 'string') {
      this.statusUp = false;
      return this.fail('grpc_bad_response', `GetStatus ${this.opts.address}: ${v}`);
    }
    this.applyStatus(v, hrNowNs(), t0);
    this.statusUp = true;
  }

  /** Applies a validated GetStatus answer taken at hrtime `t` (tests call it directly). */
  applyStatus(s: StatusMsg, t: number, asked = t): void {
    // Same daemon as the last GetStatus (and not one alternating with it at this address)?
    const prevUptime = this.statusIdentity.lastUptime;
    if (this.statusIdentity.check(s.uptimeSeconds, t) === 'conflict') {
      return this.refuse('grpc_conflict', `GetStatus ${this.opts.address}: uptime ${prevUptime}s -> ${s.uptimeSeconds}s: not the daemon that answered before, and not a restart (answer not used)`);
    }
    this.lastStatusAskHr = asked;
    const n = s.gpus.length;
    if (n !== this.wBusy.length) this.resize(n);
    this.workerGpu = s.gpus.map((g) => g.ordinal);
    // A GPU's name does not change while the daemon runs: the first one seen stays until a
    // restart (counted), so invented names cannot mint a cuzk_gpu_info series per poll.
    let renamed = 0;
    for (const g of s.gpus) {
      const had = this.gpuNames.get(g.ordinal);
      if (had === undefined) this.gpuNames.set(g.ordinal, g.name);
      else if (had !== g.name) renamed++;
    }
    const ordinals = new Set(s.gpus.map((g) => g.ordinal));
    for (const o of [...this.gpuNames.keys()]) if (!ordinals.has(o)) this.gpuNames.delete(o);
    if (renamed > 0) {
      this.errors.inc('implausible', `GetStatus ${this.opts.address}: ${renamed} GPU name(s) changed without a restart`);
      this.log.log('warn', `GetStatus: GPU names changed without a daemon restart; keeping the first name seen`);
    }
    for (let w = 0; w < n; w++) {
      const g = s.gpus[w];
      const busy = g.current_job_id !== '';
      const kind = busy ? this.kindSlot(g.current_proof_kind) : -1;
      if (busy && kind >= 0) this.rememberKind(g.current_job_id, kind);
      const was = this.wBusy[w] === 1;
      const same = was && busy && this.wJob[w] === g.current_job_id;
      if (was && !same) {
        // Sampled: credited up to the last sample that saw it running.
        this.wBusyNs[w] += Math.max(0, this.wSeenUntil[w] - this.wSince[w]);
        this.wParts[w]++;
        this.wBusy[w] = 0;
        this.busyWorkers--;
      }
      if (busy && !same) {
        this.wBusy[w] = 1;
        this.busyWorkers++;
        this.wSince[w] = t;
        this.wJob[w] = g.current_job_id;
        this.wKind[w] = kind < 0 ? OTHER_KIND_INDEX : kind;
      }
      if (!busy) this.wJob[w] = '';
      if (busy) this.wSeenUntil[w] = t;
      this.samples.add(w, { startHr: asked, endHr: t, busy, kind: busy ? this.wKind[w] : -1 });
    }
    this.queueDepth.fill(0);
    for (const q of s.queues) this.queueDepth[this.kindSlot(q.proof_kind) < 0 ? OTHER_KIND_INDEX : this.kindSlot(q.proof_kind)] += q.pending;
    this.queuesKnown = true;
    this.lastStatusHr = t;
  }

  private kindSlot(name: string): number {
    if (name === '') return -1;
    const k = kindIndex(name);
    if (k >= 0) return k;
    if (!this.unknownKinds.has(name) && this.unknownKinds.size < LIMITS.kinds) {
      this.unknownKinds.add(name);
      this.errors.inc('unknown_proof_kind', `unknown proof kind folded into "other": ${quoteName(name)}`);
    }
    return OTHER_KIND_INDEX;
  }

  private rememberKind(jobId: string, kind: number): void {
    if (this.kindOfJob.has(jobId)) return;
    if (this.kindOfJob.size >= KIND_CACHE_MAX) this.kindOfJob.delete(this.kindOfJob.keys().next().value as string);
    this.kindOfJob.set(jobId, kind);
  }

  /** The kind cuzk reported for a job a worker ran (-1 if never seen). */
  kindOf(jobId: string): number {
    return this.kindOfJob.get(jobId) ?? -1;
  }

  /** A stable small number for a job id (the model's job handle). */
  handle(jobId: string): number {
    let h = this.handles.get(jobId);
    if (h === undefined) {
      if (this.handles.size >= KIND_CACHE_MAX) this.handles.delete(this.handles.keys().next().value as string);
      h = this.nextHandle++;
      this.handles.set(jobId, h);
    }
    return h;
  }

  private resize(n: number): void {
    const copy = <T extends Uint8Array | Float64Array | Int16Array>(a: T): T => {
      const b = new (a.constructor as { new (n: number): T })(n);
      b.set((a.length > n ? a.subarray(0, n) : a) as never);
      return b;
    };
    // Workers beyond the new count (a restart with fewer): their stints end where last seen.
    for (let w = n; w < this.wBusy.length; w++) {
      if (this.wBusy[w]) {
        this.wBusyNs[w] += Math.max(0, this.wSeenUntil[w] - this.wSince[w]);
        this.busyWorkers--;
      }
    }
    this.wBusy = copy(this.wBusy);
    this.wSince = copy(this.wSince);
    this.wSeenUntil = copy(this.wSeenUntil);
    this.wBusyNs = copy(this.wBusyNs);
    this.wParts = copy(this.wParts);
    this.wKind = copy(this.wKind);
    this.wJob = this.wJob.slice(0, n);
    while (this.wJob.length < n) this.wJob.push('');
  }

  /** Sampled: running stints are exposed up to the last GetStatus that saw them. */
  nowNs(): number {
    return this.lastStatusHr;
  }

  /** The newest GetStatus answer about worker `id` taken entirely before `t` (null if none, or down). */
  sampleUntil(id: number, t: number): WorkerSample | null {
    return this.statusUp ? this.samples.newestUntil(id, t) : null;
  }

  /** The last GetStatus answer about worker `id`: a sample, somewhere in the call's window. */
  claim(id: number): WorkerClaim | null {
    if (id >= this.wBusy.length || !this.statusUp) return null;
    const busy = this.wBusy[id] === 1;
    return { busy, sinceHr: this.lastStatusAskHr, untilHr: this.lastStatusHr, sample: true, kind: busy ? this.wKind[id] : -1 };
  }
}
