/**
 * `cuzk-exporter run`: hosts the reference engine in-process with a proof workload and
 * serves its metrics — the main job (`npm start`).
 */
import { Workload } from '../engine/sources/native/workload';
import type { Logger } from '../util/logger';
import { openWorkloadEngine } from './open-workload';
import { Resolved } from './options';
import { checkWebFlags, serve, untilSignal, webConfigFrom } from './serve';
import { onSecondSignal } from './signals';

export async function runCommand(o: Resolved, log: Logger): Promise<number> {
  checkWebFlags(o);
  const webConfig = webConfigFrom(o);
  const opened = await openWorkloadEngine(o, log, 'FAULT INJECTION is on: metrics will show injected failures');
  if (!opened) return 0; // --config.check
  const { mix, engine } = opened;

  let serving;
  try {
    serving = await serve(engine, o, log, webConfig);
  } catch (e) {
    await engine.close();
    throw e;
  }
  const { server, telemetry } = serving;
  process.stdout.write(
    `cuzk-exporter: reference prover running (${engine.backend} backend, ${engine.model.topology.gpus.length} GPU(s), ${engine.model.topology.workers.length} GPU workers)\n` +
      `  metrics:     ${server.url}${o['web.telemetry-path']}\n` +
      `  status page: ${server.url}/\n` +
      `  status JSON: ${server.url}/status\n` +
      `Press Ctrl-C to stop.\n`,
  );

  const concurrency = o['workload.concurrency'] as number;
  const workload = new Workload(engine, {
    mix,
    concurrency,
    onResult: (r) =>
      log.debug('proof finished', { job_id: r.jobId, kind: r.kind, outcome: r.outcome, total_s: r.totalSeconds.toFixed(3), gpu_s: r.gpuSeconds.toFixed(3) }),
    onError: (e) => log.warn('submit failed', { err: e.message }),
  });
  if (concurrency > 0) void workload.run();

  const sig = await untilSignal(log);
  const graceMs = (o['shutdown.grace'] as number) * 1000;
  log.info('shutting down', { signal: sig, in_flight: workload.running, grace_s: graceMs / 1000 });
  // A second signal cuts the grace short: proofs in flight are cancelled now (signals.ts).
  let hurry: Promise<{ finished: number; cancelled: number }> | null = null;
  onSecondSignal(() => (hurry = workload.stop(0)));
  let stopped = await workload.stop(graceMs);
  if (hurry) {
    const h = await (hurry as Promise<{ finished: number; cancelled: number }>);
    stopped = { finished: stopped.finished - h.cancelled, cancelled: stopped.cancelled + h.cancelled };
  }
  await server.close();
  await telemetry.shutdown();
  await engine.close();
  log.info('stopped', { finished: stopped.finished, cancelled: stopped.cancelled });
  return 0;
}
