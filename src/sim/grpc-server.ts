/**
 * cuzk's gRPC service `cuzk.v1.ProvingEngine` (cuzk-server service.rs, curio e0294b0f) for
 * `simulate`, a protocol adapter over SimCore (core.ts) with service.rs's answers:
 *  - SubmitProof / Prove: proof_kind checked (INVALID_ARGUMENT "invalid proof_kind: …"),
 *    `priority` UNSPECIFIED → the kind's default; no duplicate check (Engine::submit);
 *  - AwaitProof: the stored result, else waits (no timeout: upstream ignores `timeout_ms`);
 *    an id never submitted → NOT_FOUND; Prove without `submit` → INVALID_ARGUMENT;
 *  - CancelProof: `was_running: false`, nothing cancelled (Phase 0 stub) — unless
 *    --simulate.cancel (ours);
 *  - GetStatus / GetMetrics from the JobTracker port (core.ts getStatus/getMetrics);
 *  - PreloadSRS / EvictSRS answer trivially (the reference engine loads no parameters).
 * Ours: a submit the engine refuses (its queue_limit) → RESOURCE_EXHAUSTED.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../util/logger';
import { SimCore, SubmitError, SubmitInput } from './core';
import type { JobAnswer } from './job-tracker';
import { loadProvingEngine } from './proto';

/** cuzk's ProofKind enum (proto) -> native kind index. */
const PROTO_KINDS: Record<string, number> = { POREP_SEAL_COMMIT: 0, SNAP_DEALS_UPDATE: 1, WINDOW_POST_PARTITION: 2, WINNING_POST: 3 };
/** Priority enum -> engine priority (higher first; the engine's defaults are 10/10/50/100). */
const PRIORITIES: Record<string, number> = { LOW: 0, NORMAL: 10, HIGH: 50, CRITICAL: 100 };

class GrpcFailure extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

export interface GrpcServerOptions {
  /** `unix:///path` or `host:port` (port 0: any free port). */
  address: string;
  core: SimCore;
  /** GPU names by ordinal. */
  gpuNames: readonly string[];
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
  const { core, log } = opts;
  const engine = core.engine;
  const parsed = parseGrpcAddress(opts.address);
  let closing = false;

  /** service.rs proto_to_request. */
  const input = (req: Record<string, unknown>): SubmitInput => {
    const kindName = String(req.proof_kind);
    const kind = PROTO_KINDS[kindName];
    if (kind === undefined) throw new GrpcFailure(grpc.status.INVALID_ARGUMENT, `invalid proof_kind: ${kindName === 'PROOF_KIND_UNSPECIFIED' ? 0 : kindName}`);
    const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : Number(v ?? 0) || 0);
    return {
      id: typeof req.request_id === 'string' ? req.request_id : '',
      kind,
      priority: PRIORITIES[String(req.priority)],
      partitionIndex: num(req.partition_index),
      sectorNumber: num(req.sector_number),
      minerId: num(req.miner_id),
    };
  };
  const grpcError = (e: unknown): never => {
    if (e instanceof SubmitError) {
      const code = e.reason === 'full' ? grpc.status.RESOURCE_EXHAUSTED : e.reason === 'invalid' ? grpc.status.INVALID_ARGUMENT : grpc.status.INTERNAL;
      throw new GrpcFailure(code, e.message);
    }
    throw e;
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
      let s: { jobId: string; position: number };
      try {
        s = core.submit(input(req));
      } catch (e) {
        return grpcError(e);
      }
      return { job_id: s.jobId, queue_position: s.position, assigned_gpu: '' };
    }),
    AwaitProof: unary('AwaitProof', async (req) => {
      const id = String(req.job_id ?? '');
      const a = core.awaitProof(id);
      if (a === null) throw new GrpcFailure(grpc.status.NOT_FOUND, `job not found: ${id}`);
      return a;
    }),
    Prove: unary('Prove', async (req) => {
      const inner = req.submit as Record<string, unknown> | null | undefined;
      if (!inner) throw new GrpcFailure(grpc.status.INVALID_ARGUMENT, 'missing submit field');
      let p: Promise<JobAnswer>;
      try {
        p = core.prove(input(inner));
      } catch (e) {
        return grpcError(e);
      }
      // service.rs prove: the answer names the id as sent (an empty one stays empty).
      const a = await p.catch(grpcError);
      return { result: { ...a, job_id: typeof inner.request_id === 'string' ? inner.request_id : '' } };
    }),
    CancelProof: unary('CancelProof', (req) => ({ was_running: core.cancel(String(req.job_id ?? '')) })),
    GetStatus: unary('GetStatus', () => core.getStatus(opts.gpuNames)),
    GetMetrics: unary('GetMetrics', () => ({ prometheus_text: core.getMetrics() })),
    PreloadSRS: unary('PreloadSRS', () => ({ already_loaded: false, load_time_ms: 0 })),
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
