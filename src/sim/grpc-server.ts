/**
 * cuzk's gRPC service `cuzk.v1.ProvingEngine` (cuzk-server service.rs) on the reference
 * engine, for `simulate`. Same messages (proto/cuzk/v1/proving.proto), same answers, same
 * quirks by default:
 *  - GetStatus: one GPUStatus per worker (ordinals repeat); current_job_id /
 *    current_proof_kind are set at every hand-off, for every kind (PoSt included), and
 *    cleared when ANY partition the worker ran ends — cuzk's finalizer clears it
 *    unconditionally, so with split proving a worker already on its next partition shows
 *    idle (`clearsOwnerOnly` fixes that); queues list kinds with queued jobs only;
 *    uptime_seconds is whole seconds; no nvidia-smi here, so VRAM is 0.
 *  - GetMetrics: cuzk's hand-written text (metrics-text.ts).
 *  - SubmitProof / AwaitProof / Prove / CancelProof mapped onto the engine (cuzk's
 *    CancelProof is a stub; here it cancels). AwaitProof of an unknown job: NOT_FOUND.
 *  - PreloadSRS / EvictSRS answer trivially (the reference engine loads no parameters).
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { CTR, NativeError, STATUS } from '../engine/abi';
import { PROOF_KINDS, ProofKind } from '../engine/kinds';
import type { NativeEngine, ProofResult } from '../engine/native-engine';
import type { Logger } from '../util/logger';
import { cuzkMetricsText } from './metrics-text';
import type { SimObserver } from './observer';
import { loadProvingEngine } from './proto';

/** cuzk's ProofKind enum (proto) <-> our kind names. */
const PROTO_KINDS: Record<string, ProofKind> = {
  POREP_SEAL_COMMIT: 'porep-c2',
  SNAP_DEALS_UPDATE: 'snap-update',
  WINDOW_POST_PARTITION: 'window-post',
  WINNING_POST: 'winning-post',
};
/** Priority enum -> engine priority (higher first; the engine's defaults are 10/10/50/100). */
const PRIORITIES: Record<string, number> = { LOW: 0, NORMAL: 10, HIGH: 50, CRITICAL: 100 };

type Status = 'UNKNOWN' | 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'TIMEOUT';
interface AwaitAnswer {
  job_id: string;
  status: Status;
  proof: Buffer;
  error_message: string;
  queue_wait_ms: number;
  srs_load_ms: number;
  synthesis_ms: number;
  gpu_compute_ms: number;
  total_ms: number;
}

const ms = (seconds: number) => Math.max(0, Math.floor(seconds * 1000 + 1e-6));

function emptyAnswer(jobId: string, status: Status, error = ''): AwaitAnswer {
  return { job_id: jobId, status, proof: Buffer.alloc(0), error_message: error, queue_wait_ms: 0, srs_load_ms: 0, synthesis_ms: 0, gpu_compute_ms: 0, total_ms: 0 };
}

class GrpcFailure extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

/** A finished job's answer stays for AwaitProof after the engine evicted the job (cuzk keeps them). */
const MAX_FINISHED = 10_000;

export interface GrpcServerOptions {
  /** `unix:///path` or `host:port` (port 0: any free port). */
  address: string;
  engine: NativeEngine;
  observer: SimObserver;
  /** GPU names by ordinal. */
  gpuNames: readonly string[];
  /** GPU ordinal of each worker. */
  workerGpus: readonly number[];
  log: Logger;
}

export interface RunningGrpcServer {
  /** Where it listens, as a client dials it: `unix:///path` or `host:port` with the real port. */
  address: string;
  close(): Promise<void>;
}

/** Parses a listen address: a unix socket path, or host and port. Throws a readable Error. */
export function parseGrpcAddress(addr: string): { unixPath: string } | { host: string; port: number } {
  if (addr.startsWith('unix:')) {
    const p = addr.startsWith('unix://') ? addr.slice('unix://'.length) : addr.slice('unix:'.length);
    if (p === '') throw new Error(`"${addr}": no socket path (for example unix:///run/curio/cuzk.sock)`);
    return { unixPath: p };
  }
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(addr);
  if (!m) throw new Error(`"${addr}" is not unix:///path or host:port (for example 127.0.0.1:9820)`);
  const port = Number(m[3]);
  if (port > 65535) throw new Error(`"${addr}": port ${port} is out of range`);
  const host = m[1] ?? (m[2] === '' ? '0.0.0.0' : m[2]);
  return { host, port };
}

/** A socket file left by a daemon that is gone is removed; one that answers is in use. */
async function clearStaleSocket(p: string): Promise<void> {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(p);
  } catch {
    return;
  }
  if (!st.isSocket()) throw new Error(`${p} exists and is not a socket`);
  const alive = await new Promise<boolean>((resolve) => {
    const s = net.connect(p);
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
  if (alive) throw new Error(`${p}: another process is listening on it`);
  fs.unlinkSync(p);
}

export async function startGrpcServer(opts: GrpcServerOptions): Promise<RunningGrpcServer> {
  const { engine, observer, log } = opts;
  const parsed = parseGrpcAddress(opts.address);
  let closing = false;

  const finished = new Map<string, AwaitAnswer>();
  const tracked = new Map<number, Promise<AwaitAnswer>>();

  const counters = () => {
    const { words } = engine.readCounters();
    const nKinds = words[CTR.KINDS];
    const kind = (k: number, field: number) => (k < nKinds ? words[CTR.HDR_WORDS + k * CTR.KIND_WORDS + field] : 0);
    const per = (field: number) => PROOF_KINDS.map((_, k) => kind(k, field));
    return {
      uptimeNs: words[CTR.UPTIME_NS],
      completed: per(CTR.K_PROOFS_COMPLETED),
      failed: per(CTR.K_PROOFS_FAILED),
      queued: per(CTR.K_QUEUE_DEPTH),
    };
  };
  const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);

  const answerOf = (r: ProofResult, jobId: string): AwaitAnswer => {
    if (r.outcome === 'cancelled') return emptyAnswer(jobId, 'CANCELLED');
    if (r.outcome !== 'completed') return emptyAnswer(jobId, 'FAILED', r.error);
    let proof: Buffer = Buffer.alloc(0);
    try {
      proof = engine.proof(r.job);
    } catch (e) {
      log.warn('simulate: proof bytes unavailable', { job_id: jobId, err: (e as Error).message });
    }
    return {
      job_id: jobId,
      status: 'COMPLETED',
      proof,
      error_message: '',
      queue_wait_ms: ms(r.queueWaitSeconds),
      srs_load_ms: 0,
      synthesis_ms: ms(r.synthesisSeconds),
      gpu_compute_ms: ms(r.gpuSeconds),
      total_ms: ms(r.totalSeconds),
    };
  };

  /** The job's answer, once it ends (one engine await per job, shared by every caller). */
  const track = (handle: number, jobId: string): Promise<AwaitAnswer> => {
    let p = tracked.get(handle);
    if (p) return p;
    p = engine.awaitProof(handle).then(
      (r) => {
        const a = answerOf(r, jobId);
        tracked.delete(handle);
        finished.delete(jobId);
        finished.set(jobId, a);
        if (finished.size > MAX_FINISHED) finished.delete(finished.keys().next().value as string);
        return a;
      },
      (e: Error) => {
        tracked.delete(handle);
        throw e;
      },
    );
    p.catch(() => {}); // a caller may never come
    tracked.set(handle, p);
    return p;
  };

  const submit = (req: Record<string, unknown>): { jobId: string; handle: number; position: number } => {
    const kindName = String(req.proof_kind);
    const kind = PROTO_KINDS[kindName];
    if (!kind) throw new GrpcFailure(grpc.status.INVALID_ARGUMENT, `invalid proof_kind: ${kindName}`);
    const prio = PRIORITIES[String(req.priority)];
    const jobId = typeof req.request_id === 'string' && req.request_id !== '' ? req.request_id : `sim-${process.hrtime.bigint().toString(36)}`;
    const prev = observer.jobs.handleOf(jobId);
    if (prev !== undefined && tracked.has(prev)) throw new GrpcFailure(grpc.status.ALREADY_EXISTS, `job ${jobId} is already in flight`);
    let handle: number;
    try {
      handle = engine.submit(kind, { requestId: jobId, priority: prio ?? -1 });
    } catch (e) {
      const code =
        e instanceof NativeError && e.status === STATUS.EFULL
          ? grpc.status.RESOURCE_EXHAUSTED
          : e instanceof NativeError && e.status === STATUS.EINVAL
            ? grpc.status.INVALID_ARGUMENT
            : grpc.status.INTERNAL;
      throw new GrpcFailure(code, (e as Error).message);
    }
    observer.jobs.add(handle, jobId);
    finished.delete(jobId);
    void track(handle, jobId);
    return { jobId, handle, position: sum(counters().queued) };
  };

  const awaitAnswer = async (jobId: string, timeoutMs: number): Promise<AwaitAnswer> => {
    const done = finished.get(jobId);
    if (done) return done;
    const handle = observer.jobs.handleOf(jobId);
    if (handle === undefined) throw new GrpcFailure(grpc.status.NOT_FOUND, `job not found: ${jobId}`);
    const p = track(handle, jobId);
    if (!(timeoutMs > 0)) return p;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<AwaitAnswer>((resolve) => {
      timer = setTimeout(() => resolve(emptyAnswer(jobId, 'TIMEOUT')), timeoutMs);
    });
    try {
      return await Promise.race([p, timeout]);
    } finally {
      clearTimeout(timer);
    }
  };

  // Every handler: answers UNAVAILABLE while shutting down, maps thrown errors to statuses.
  type Handler = (req: Record<string, unknown>) => unknown;
  const unary =
    (name: string, fn: Handler) =>
    (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      if (closing || engine.closed) return cb({ code: grpc.status.UNAVAILABLE, details: 'shutting down' });
      Promise.resolve()
        .then(() => fn(call.request ?? {}))
        .then(
          (res) => cb(null, res),
          (e: Error) => {
            if (e instanceof GrpcFailure) return cb({ code: e.code, details: e.message });
            const gone = closing || engine.closed;
            if (!gone) log.warn(`simulate: gRPC ${name} failed`, { err: e.message });
            cb({ code: gone ? grpc.status.UNAVAILABLE : grpc.status.INTERNAL, details: e.message });
          },
        );
    };

  const impl: grpc.UntypedServiceImplementation = {
    SubmitProof: unary('SubmitProof', (req) => {
      const s = submit(req);
      return { job_id: s.jobId, queue_position: s.position, assigned_gpu: '' };
    }),
    AwaitProof: unary('AwaitProof', (req) => awaitAnswer(String(req.job_id ?? ''), Number(req.timeout_ms ?? 0))),
    Prove: unary('Prove', async (req) => {
      const inner = req.submit as Record<string, unknown> | null | undefined;
      if (!inner) throw new GrpcFailure(grpc.status.INVALID_ARGUMENT, 'missing submit field');
      const s = submit(inner);
      return { result: await awaitAnswer(s.jobId, 0) };
    }),
    CancelProof: unary('CancelProof', (req) => {
      const jobId = String(req.job_id ?? '');
      const handle = observer.jobs.handleOf(jobId);
      if (handle === undefined || finished.has(jobId)) return { was_running: false };
      const pipelines = (engine.statusBody()?.pipelines ?? []) as Array<{ job_handle?: number; outcome?: string }>;
      const entry = pipelines.find((p) => p.job_handle === handle);
      if (entry && entry.outcome !== 'running') return { was_running: false };
      try {
        engine.cancel(handle);
      } catch {
        return { was_running: false };
      }
      return { was_running: true };
    }),
    GetStatus: unary('GetStatus', () => {
      engine.refresh();
      const c = counters();
      const view = observer.workers;
      const gpus = [];
      for (let w = 0; w < view.workers; w++) {
        const gpu = opts.workerGpus[w] ?? 0;
        const k = view.kind[w];
        gpus.push({
          ordinal: gpu,
          name: opts.gpuNames[gpu] ?? `GPU ${gpu}`,
          vram_total_bytes: 0,
          vram_free_bytes: 0,
          current_job_id: view.jobId[w] ?? '',
          current_proof_kind: view.jobId[w] !== null && k >= 0 ? PROOF_KINDS[k] : '',
        });
      }
      const running = PROOF_KINDS.map(() => 0);
      for (let w = 0; w < view.workers; w++) if (view.jobId[w] !== null && view.kind[w] >= 0) running[view.kind[w]]++;
      const queues = PROOF_KINDS.flatMap((k, i) => (c.queued[i] > 0 ? [{ proof_kind: k, pending: c.queued[i], in_progress: running[i] }] : []));
      const srs = ((engine.statusBody()?.allocations as { srs?: Array<{ circuit_id?: unknown }> } | undefined)?.srs ?? []).map((e) => ({
        circuit_id: String(e.circuit_id ?? ''),
        tier: 'HOT',
        size_bytes: 0,
        ref_count: 0,
      }));
      return {
        gpus,
        loaded_srs: srs,
        queues,
        total_proofs_completed: sum(c.completed),
        total_proofs_failed: sum(c.failed),
        uptime_seconds: Math.floor(c.uptimeNs / 1e9),
        pinned_memory_bytes: 0,
        pinned_memory_limit_bytes: 0,
      };
    }),
    GetMetrics: unary('GetMetrics', () => {
      engine.refresh();
      const c = counters();
      return {
        prometheus_text: cuzkMetricsText({
          totalCompleted: sum(c.completed),
          totalFailed: sum(c.failed),
          uptimeSeconds: Math.floor(c.uptimeNs / 1e9),
          queueDepth: sum(c.queued),
          completedByKind: c.completed,
          failedByKind: c.failed,
          recent: observer.recent,
          runningJobs: observer.workers.running(),
          gpuWorkers: observer.workers.workers,
        }),
      };
    }),
    PreloadSRS: unary('PreloadSRS', (req) => {
      const id = String(req.circuit_id ?? '');
      const srs = ((engine.statusBody()?.allocations as { srs?: Array<{ circuit_id?: unknown }> } | undefined)?.srs ?? []);
      return { already_loaded: srs.some((e) => e.circuit_id === id), load_time_ms: 0 };
    }),
    EvictSRS: unary('EvictSRS', () => ({ was_loaded: false, freed_bytes: 0 })),
  };

  const server = new grpc.Server();
  server.addService(loadProvingEngine().service, impl);
  let bindAddr: string;
  let unixPath: string | null = null;
  if ('unixPath' in parsed) {
    unixPath = parsed.unixPath;
    await clearStaleSocket(unixPath);
    bindAddr = `unix:${unixPath.startsWith('/') ? '//' : ''}${unixPath}`;
  } else {
    bindAddr = `${parsed.host.includes(':') ? `[${parsed.host}]` : parsed.host}:${parsed.port}`;
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(bindAddr, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(new Error(`gRPC listen on ${opts.address}: ${err.message}`)) : resolve(p))),
  );
  const hostText = (h: string) => (h.includes(':') ? `[${h}]` : h);
  const address = 'unixPath' in parsed ? (parsed.unixPath.startsWith('/') ? `unix://${parsed.unixPath}` : `unix:${parsed.unixPath}`) : `${hostText(parsed.host)}:${port}`;
  return {
    address,
    close: async () => {
      if (closing) return;
      closing = true;
      // In-flight calls (AwaitProof may wait forever) are cancelled, as a daemon exit does.
      server.forceShutdown();
      if (unixPath) {
        try {
          fs.unlinkSync(unixPath);
        } catch {
          // already gone
        }
      }
    },
  };
}
