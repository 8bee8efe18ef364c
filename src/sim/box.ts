/**
 * One simulated cuzk box: the reference engine, SimCore (the upstream renderer and request
 * handling), its surfaces (gRPC, raw /status, TIMELINE sink), the ground truth endpoint and
 * a Curio-like workload. `simulate` runs one (flags) or several in one process (fleet.ts).
 */
import { EngineConfig, NativeEngine } from '../engine/sources/native/native-engine';
import type { Mix } from '../engine/sources/native/workload';
import type { Logger } from '../util/logger';
import { SimCore, SimCoreOptions } from './core';
import { RunningGrpcServer, startGrpcServer } from './grpc-server';
import { IdStyle, RequestIdGenerator } from './request-ids';
import { RunningStatusListener, startStatusListener } from './status-server';
import { openTimelineSink, TimelineOptions, TimelineWriter } from './timeline-writer';
import { decodeCounters, readTruth, RunningTruthServer, startTruthServer, Truth, writeTruthFile } from './truth';
import { SimWorkload } from './workload';

export interface BoxConfig {
  name: string;
  engine: EngineConfig;
  /** The engine library (default: the reference engine). */
  library?: string;
  core: SimCoreOptions;
  /** "-" standard error, "" nowhere, else a file appended to. */
  timelineFile: string;
  timeline: Omit<TimelineOptions, 'wallAtStartMs'>;
  grpcListen: string;
  /** No gRPC service (a fleet box without that surface). */
  grpcOff?: boolean;
  statusListen: { host?: string; port: number } | null;
  truthListen: { host?: string; port: number } | null;
  truthFile?: string;
  workload: { mix: Mix; concurrency: number; count: number; retries: number; ids: IdStyle; seed: number; minerId: number };
}

export interface RunningBox {
  name: string;
  engine: NativeEngine;
  core: SimCore;
  grpcAddress: string;
  statusUrl: string | null;
  truthUrl: string | null;
  timeline: string;
  workload: SimWorkload;
  truth(): Truth;
  /** Stops the workload (grace), the listeners and the engine; writes the truth file. */
  stop(graceMs: number): Promise<void>;
}

/** The engine refused to open (bad config, library missing): the caller's usage error. */
export class EngineOpenError extends Error {}

export async function startBox(cfg: BoxConfig, log: Logger): Promise<RunningBox> {
  let engine: NativeEngine;
  try {
    engine = NativeEngine.open(cfg.engine, cfg.library);
  } catch (e) {
    throw new EngineOpenError((e as Error).message);
  }
  let timeline: TimelineWriter | null = null;
  let grpc: RunningGrpcServer | null = null;
  let status: RunningStatusListener | null = null;
  let truthServer: RunningTruthServer | null = null;
  let core: SimCore | null = null;
  const closeAll = async () => {
    await grpc?.close();
    await status?.close();
    await truthServer?.close();
    core?.close();
    await engine.close();
    timeline?.close();
  };
  try {
    const startNs = decodeCounters(engine.readCounters().words).start_ns;
    // Pipeline off: upstream writes no TIMELINE line at all (tracing lines still go out).
    const sink = openTimelineSink(cfg.timelineFile);
    if (sink) {
      const wallAtStartMs = Date.now() - (engine.nowNs() - startNs) / 1e6;
      timeline = new TimelineWriter(sink, startNs, { ...cfg.timeline, wallAtStartMs });
    }
    core = new SimCore(engine, cfg.core.pipeline ? timeline : null, cfg.core, startNs);
    core.install();
    const c = core;
    if (!cfg.grpcOff) grpc = await startGrpcServer({ address: cfg.grpcListen, core: c, gpuNames: engine.model.topology.gpus.map((g) => g.name), log });
    if (cfg.statusListen) status = await startStatusListener(cfg.statusListen.host, cfg.statusListen.port, () => c.statusJson());
    if (cfg.truthListen) truthServer = await startTruthServer(cfg.truthListen.host, cfg.truthListen.port, () => readTruth(engine, c));
  } catch (e) {
    await closeAll();
    throw e;
  }
  const c = core;
  const w = cfg.workload;
  const workload = new SimWorkload(c, {
    mix: w.mix,
    concurrency: w.concurrency,
    count: w.count,
    retries: w.retries,
    ids: new RequestIdGenerator(w.ids, w.seed, w.minerId),
    seed: w.seed,
    onResult: (req, a) => log.debug('proof finished', { box: cfg.name, job_id: req.id, status: a.status, total_ms: a.total_ms }),
    onError: (e) => log.warn('submit failed', { box: cfg.name, err: e.message }),
  });
  if (w.concurrency > 0) {
    void workload.run().then(() => {
      if (w.count > 0) log.info('workload finished', { box: cfg.name, proofs: w.count });
    });
  }
  let stopped = false;
  return {
    name: cfg.name,
    engine,
    core: c,
    grpcAddress: grpc?.address ?? '',
    statusUrl: status?.url ?? null,
    truthUrl: truthServer?.url ?? null,
    timeline: timeline ? (cfg.timelineFile === '-' ? 'stderr' : cfg.timelineFile) : 'off',
    workload,
    truth: () => readTruth(engine, c),
    async stop(graceMs: number) {
      if (stopped) return;
      stopped = true;
      await workload.stop(graceMs);
      await grpc?.close();
      await status?.close();
      await truthServer?.close();
      if (cfg.truthFile) {
        try {
          writeTruthFile(cfg.truthFile, readTruth(engine, c));
        } catch (e) {
          log.error('cannot write the ground truth', { box: cfg.name, file: cfg.truthFile, err: (e as Error).message });
        }
      }
      c.close();
      await engine.close();
      timeline?.close();
    },
  };
}
