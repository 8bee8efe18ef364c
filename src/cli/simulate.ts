/**
 * `cuzk-exporter simulate`: a cuzk daemon as upstream cuzk (curio e0294b0f) behaves, for tests
 * and demos. The reference engine proves (it is the truth of what ran); the upstream renderer
 * (src/sim/renderer.ts) shows it on cuzk's three surfaces as upstream's code would, blind
 * spots, leaks and races included (docs/upstream-conformance.md):
 *  - gRPC cuzk.v1.ProvingEngine (--simulate.grpc-listen);
 *  - GET /status (--simulate.status-listen);
 *  - TIMELINE lines amid ANSI tracing lines (--simulate.timeline-file, standard error by default).
 * Configurations as upstream's: --simulate.split-prove, --simulate.pipeline,
 * --simulate.batch-size/--simulate.batch-wait; failure paths: --simulate.gpu-failure and the
 * fault flags. Our fixes of upstream's quirks stay switchable (--simulate.status-shows-post,
 * --simulate.grpc-clears-owner-only, --simulate.status-extensions, --simulate.cancel).
 * The ground truth — the engine's native counters and `upstream`, what upstream's own
 * accounting makes of them — is on --simulate.truth-listen (GET /truth) and/or
 * --simulate.truth-file (SIGUSR2 and at exit). --simulate.boxes N or --simulate.fleet-file
 * runs several boxes in one process (src/sim/fleet.ts).
 */
import { parseListenAddress } from '../exporter/server';
import { PROOF_KINDS } from '../engine/model/kinds';
import { parseMix } from '../engine/sources/native/workload';
import type { Logger } from '../util/logger';
import { BoxConfig, EngineOpenError, RunningBox, startBox } from '../sim/box';
import { parseGrpcAddress } from '../sim/grpc-server';
import { writeTruthFile } from '../sim/truth';
import { checkMemoryBudget, kindsToRun } from './budget-check';
import { engineConfigFrom } from './engine-config';
import { Resolved, UsageError } from './options';
import { untilSignal } from './serve';
import { fleetConfigs, runFleet } from '../sim/fleet';

function listenFlag(o: Resolved, flag: string): { host?: string; port: number } | null {
  const v = o[flag] as string | undefined;
  if (v === undefined || v === '') return null;
  try {
    return parseListenAddress(v);
  } catch {
    throw new UsageError(`--${flag} "${v}" is not host:port (for example 127.0.0.1:9821)`);
  }
}

/** The box the flags describe (every flag checked before anything starts). */
export function boxConfigFrom(o: Resolved): BoxConfig {
  try {
    parseGrpcAddress(o['simulate.grpc-listen'] as string);
  } catch (e) {
    throw new UsageError(`--simulate.grpc-listen ${(e as Error).message}`);
  }
  let mix;
  try {
    mix = parseMix(o['workload.mix'] as string);
  } catch (e) {
    throw new UsageError(`--workload.mix: ${(e as Error).message}`);
  }
  const pipeline = o['simulate.pipeline'] as boolean;
  const split = (o['simulate.split-prove'] as boolean) && (o['engine.split-proving'] as boolean);
  const gpuFailure = o['simulate.gpu-failure'] as 'finish' | 'start';
  const engine = engineConfigFrom(o);
  engine.split_proving = split;
  if (!pipeline) {
    // engine.rs start: "monolithic mode: one worker per GPU".
    if ((o['engine.workers-per-gpu'] as number) > 1 && engine.workers_per_gpu !== 1) engine.workers_per_gpu = 1;
  }
  const faults = { ...((engine.faults as Record<string, unknown> | undefined) ?? {}) };
  if (gpuFailure === 'start') faults.fail_aborts_job = false;
  if (o['fault.fail-synthesis-nth'] !== undefined) faults.fail_synthesis_nth = o['fault.fail-synthesis-nth'];
  if (Object.keys(faults).length > 0) engine.faults = faults;
  checkMemoryBudget(engine, kindsToRun(o));
  const seed = o['simulate.seed'] as number;
  const bugKind = typeof faults.status_bug_kind === 'string' ? PROOF_KINDS.indexOf(faults.status_bug_kind as (typeof PROOF_KINDS)[number]) : -1;
  const statusBug = bugKind >= 0 ? { kind: bugKind, mode: (faults.status_bug_mode === 'skip' ? 'skip' : 'clobber') as 'clobber' | 'skip' } : null;
  return {
    name: 'cuzk',
    engine,
    library: o['engine.library'] as string | undefined,
    core: {
      splitProve: split,
      pipeline,
      gpuFailure,
      batchSize: o['simulate.batch-size'] as number,
      batchWaitMs: (o['simulate.batch-wait'] as number) * 1000,
      realCancel: o['simulate.cancel'] as boolean,
      selfCheck: o['simulate.self-check'] as boolean,
      statusShowsPost: o['simulate.status-shows-post'] as boolean,
      statusExtensions: o['simulate.status-extensions'] as boolean,
      clearsOwnerOnly: o['simulate.grpc-clears-owner-only'] as boolean,
      statusBug,
      queueCollisions: o['simulate.gpu-queue-collisions'] as boolean,
    },
    timelineFile: o['simulate.timeline-file'] as string,
    timeline: { tracing: o['simulate.tracing'] as boolean, tearRate: o['simulate.tear-rate'] as number, seed },
    grpcListen: o['simulate.grpc-listen'] as string,
    statusListen: listenFlag(o, 'simulate.status-listen'),
    truthListen: listenFlag(o, 'simulate.truth-listen'),
    truthFile: o['simulate.truth-file'] as string | undefined,
    workload: {
      mix,
      concurrency: o['workload.concurrency'] as number,
      count: o['workload.count'] as number,
      retries: o['simulate.retries'] as number,
      ids: o['simulate.request-ids'] as 'curio' | 'opaque',
      seed,
      minerId: 1000,
    },
  };
}

function banner(b: RunningBox, cfg: BoxConfig): string {
  const c = cfg.core;
  const conf = [
    c.pipeline ? null : 'pipeline off',
    c.splitProve ? null : 'split prove off',
    c.batchSize > 1 ? `batches of ${c.batchSize}` : null,
    c.gpuFailure === 'start' ? 'GPU failures at gpu_prove_start' : null,
  ].filter(Boolean);
  return (
    `cuzk-exporter simulate: a cuzk daemon as upstream's code behaves, on the reference prover (${b.engine.backend} backend, ${b.engine.model.topology.gpus.length} GPU(s), ${b.core.workerGpus.length} GPU workers${conf.length ? `; ${conf.join(', ')}` : ''})\n` +
    `  grpc:     ${b.grpcAddress}${c.clearsOwnerOnly ? ' (current_job cleared by its owner only)' : ' (cuzk: current_job cleared by any partition end)'}\n` +
    `  status:   ${b.statusUrl ?? 'off'}${b.statusUrl ? (c.statusShowsPost ? ' (PoSt shown)' : ' (cuzk: PoSt invisible)') : ''}\n` +
    `  timeline: ${b.timeline}${cfg.timeline.tracing ? ` (with tracing lines, tear rate ${cfg.timeline.tearRate})` : ''}\n` +
    `  truth:    ${b.truthUrl ?? 'off'}${cfg.truthFile ? ` (file ${cfg.truthFile} on SIGUSR2 and at exit)` : ''}\n`
  );
}

export async function simulateCommand(o: Resolved, log: Logger): Promise<number> {
  const fleet = fleetConfigs(o, boxConfigFrom);
  if (fleet) {
    if (o['config.check']) {
      process.stdout.write(`configuration OK (${fleet.length} boxes)\n`);
      return 0;
    }
    return runFleet(fleet, o, log);
  }
  const cfg = boxConfigFrom(o);
  if (cfg.engine.faults) log.warn('FAULT INJECTION is on: the daemon shows injected failures', { faults: JSON.stringify(cfg.engine.faults) });
  if (o['config.check']) {
    const b = await startBoxOrUsage(cfg, log);
    await b.stop(0);
    process.stdout.write('configuration OK\n');
    return 0;
  }
  const box = await startBoxOrUsage(cfg, log);
  const onUsr2 = () => {
    if (!cfg.truthFile) return;
    try {
      writeTruthFile(cfg.truthFile, box.truth());
      log.info('ground truth written', { file: cfg.truthFile });
    } catch (e) {
      log.error('cannot write the ground truth', { file: cfg.truthFile, err: (e as Error).message });
    }
  };
  process.on('SIGUSR2', onUsr2);
  process.stdout.write(banner(box, cfg) + 'Press Ctrl-C to stop.\n');
  const sig = await untilSignal(log);
  const graceMs = (o['shutdown.grace'] as number) * 1000;
  log.info('shutting down', { signal: sig, in_flight: box.workload.running, grace_s: graceMs / 1000 });
  process.removeListener('SIGUSR2', onUsr2);
  await box.stop(graceMs);
  log.info('stopped', { finished: box.workload.finished, failed: box.workload.failed });
  return 0;
}

/** Starts a box; an engine that refuses its config is a usage error (one line, exit 2). */
export async function startBoxOrUsage(cfg: BoxConfig, log: Logger): Promise<RunningBox> {
  try {
    return await startBox(cfg, log);
  } catch (e) {
    if (e instanceof EngineOpenError) throw new UsageError(`engine: ${e.message}`);
    throw new Error(`simulate: ${(e as Error).message}`);
  }
}
