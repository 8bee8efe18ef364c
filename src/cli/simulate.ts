/**
 * `cuzk-exporter simulate`: a cuzk-compatible daemon for tests and demos. It runs the
 * reference engine with a workload (as `run` does) behind cuzk's three surfaces, each with
 * cuzk's behaviour by default, blind spots included, each switchable:
 *  - gRPC cuzk.v1.ProvingEngine (--simulate.grpc-listen; GetStatus's unconditional
 *    current_job clear: --simulate.grpc-clears-owner-only fixes it);
 *  - GET /status (--simulate.status-listen; PoSt invisible: --simulate.status-shows-post);
 *  - TIMELINE lines (--simulate.timeline-file, standard error by default).
 * The ground truth — the engine's native counters — is on --simulate.truth-listen
 * (GET /truth) and/or --simulate.truth-file (SIGUSR2 and at exit).
 */
import { parseListenAddress } from '../exporter/server';
import { Workload } from '../engine/workload';
import type { Logger } from '../util/logger';
import { parseGrpcAddress, RunningGrpcServer, startGrpcServer } from '../sim/grpc-server';
import { GrpcWorkerView } from '../sim/worker-view';
import { SimObserver } from '../sim/observer';
import { cuzkStatusView, RunningStatusListener, startStatusListener } from '../sim/status-server';
import { openTimelineSink, TimelineWriter } from '../sim/timeline-writer';
import { decodeCounters, readTruth, RunningTruthServer, startTruthServer, writeTruthFile } from '../sim/truth';
import { openWorkloadEngine } from './open-workload';
import { Resolved, UsageError } from './options';
import { untilSignal } from './serve';

function listenFlag(o: Resolved, flag: string): { host?: string; port: number } | null {
  const v = o[flag] as string | undefined;
  if (v === undefined || v === '') return null;
  try {
    return parseListenAddress(v);
  } catch {
    throw new UsageError(`--${flag} "${v}" is not host:port (for example 127.0.0.1:9821)`);
  }
}

export async function simulateCommand(o: Resolved, log: Logger): Promise<number> {
  // Every flag is checked before anything starts.
  try {
    parseGrpcAddress(o['simulate.grpc-listen'] as string);
  } catch (e) {
    throw new UsageError(`--simulate.grpc-listen ${(e as Error).message}`);
  }
  const statusAddr = listenFlag(o, 'simulate.status-listen');
  const truthAddr = listenFlag(o, 'simulate.truth-listen');
  const opened = await openWorkloadEngine(o, log, 'FAULT INJECTION is on: the daemon shows injected failures');
  if (!opened) return 0; // --config.check
  const { mix, engine } = opened;

  const topology = engine.model.topology;
  const nWorkers = topology.workers.length;
  const startNs = decodeCounters(engine.readCounters().words).start_ns;
  const timelineSpec = o['simulate.timeline-file'] as string;
  let timeline: TimelineWriter | null = null;
  try {
    const sink = openTimelineSink(timelineSpec);
    if (sink) timeline = new TimelineWriter(sink, startNs, nWorkers);
  } catch (e) {
    await engine.close();
    throw new UsageError(`--simulate.timeline-file ${timelineSpec}: ${(e as Error).message}`);
  }
  const workers = new GrpcWorkerView(nWorkers, o['simulate.grpc-clears-owner-only'] as boolean);
  const observer = new SimObserver(engine, workers, timeline);
  observer.install();
  // Events before the hook (none on a fresh engine) are drained now, through it.
  engine.refresh();

  const viewOpts = { showsPost: o['simulate.status-shows-post'] as boolean, extensions: o['simulate.status-extensions'] as boolean };
  const truthFile = o['simulate.truth-file'] as string | undefined;
  let grpcServer: RunningGrpcServer | null = null;
  let statusListener: RunningStatusListener | null = null;
  let truthServer: RunningTruthServer | null = null;
  const stopAll = async () => {
    await grpcServer?.close();
    await statusListener?.close();
    await truthServer?.close();
  };
  try {
    grpcServer = await startGrpcServer({
      address: o['simulate.grpc-listen'] as string,
      engine,
      observer,
      gpuNames: topology.gpus.map((g) => g.name),
      workerGpus: topology.workers.map((w) => w.gpu),
      log,
    });
    if (statusAddr) {
      statusListener = await startStatusListener(statusAddr.host, statusAddr.port, () =>
        JSON.stringify(cuzkStatusView(JSON.parse(engine.statusText()) as Record<string, unknown>, viewOpts)),
      );
    }
    if (truthAddr) truthServer = await startTruthServer(truthAddr.host, truthAddr.port, () => readTruth(engine, observer));
  } catch (e) {
    await stopAll();
    await engine.close();
    timeline?.close();
    throw new Error(`simulate: ${(e as Error).message}`);
  }

  const onUsr2 = () => {
    if (!truthFile) return;
    try {
      writeTruthFile(truthFile, readTruth(engine, observer));
      log.info('ground truth written', { file: truthFile });
    } catch (e) {
      log.error('cannot write the ground truth', { file: truthFile, err: (e as Error).message });
    }
  };
  process.on('SIGUSR2', onUsr2);

  process.stdout.write(
    `cuzk-exporter simulate: cuzk-compatible daemon on the reference prover (${engine.backend} backend, ${topology.gpus.length} GPU(s), ${nWorkers} GPU workers)\n` +
      `  grpc:     ${grpcServer.address}${o['simulate.grpc-clears-owner-only'] ? ' (current_job cleared by its owner only)' : ' (cuzk: current_job cleared by any partition end)'}\n` +
      `  status:   ${statusListener ? statusListener.url : 'off'}${statusListener ? (viewOpts.showsPost ? ' (PoSt shown)' : ' (cuzk: PoSt invisible)') : ''}\n` +
      `  timeline: ${timeline ? (timelineSpec === '-' ? 'stderr' : timelineSpec) : 'off'}\n` +
      `  truth:    ${truthServer ? truthServer.url : 'off'}${truthFile ? ` (file ${truthFile} on SIGUSR2 and at exit)` : ''}\n` +
      `Press Ctrl-C to stop.\n`,
  );

  const concurrency = o['workload.concurrency'] as number;
  const count = o['workload.count'] as number;
  const workload = new Workload(engine, {
    mix,
    concurrency,
    count,
    onResult: (r) => log.debug('proof finished', { job_id: r.jobId, kind: r.kind, outcome: r.outcome, total_s: r.totalSeconds.toFixed(3) }),
    onError: (e) => log.warn('submit failed', { err: e.message }),
  });
  if (concurrency > 0) {
    void workload.run().then(() => {
      if (count > 0) log.info('workload finished', { proofs: count });
    });
  }

  const sig = await untilSignal(log);
  const graceMs = (o['shutdown.grace'] as number) * 1000;
  log.info('shutting down', { signal: sig, in_flight: workload.running, grace_s: graceMs / 1000 });
  const stopped = await workload.stop(graceMs);
  process.removeListener('SIGUSR2', onUsr2);
  await stopAll();
  if (truthFile) {
    try {
      writeTruthFile(truthFile, readTruth(engine, observer));
    } catch (e) {
      log.error('cannot write the ground truth', { file: truthFile, err: (e as Error).message });
    }
  }
  await engine.close();
  timeline?.close();
  log.info('stopped', { finished: stopped.finished, cancelled: stopped.cancelled });
  return 0;
}
