/**
 * `cuzk-exporter prove`: submits proofs to the reference engine, shows progress, prints
 * per-proof timings (like cuzk's AwaitProof) and exits non-zero if any proof failed or
 * does not verify.
 */
import type { ProofResult } from '../engine/sources/native/native-engine';
import type { ProofKind } from '../engine/model/kinds';
import { PART_DONE, PART_FAILED, PARTITIONS } from '../engine/model/kinds';
import { Workload } from '../engine/sources/native/workload';
import type { Logger } from '../util/logger';
import { openEngine } from './engine-config';
import type { Resolved } from './options';
import { untilSignal } from './serve';

function fmt(s: number): string {
  return s < 10 ? s.toFixed(3) : s.toFixed(1);
}

export async function proveCommand(o: Resolved, log: Logger): Promise<number> {
  const kind = o['kind'] as ProofKind;
  const count = o['count'] as number;
  const opened = await openEngine(o);
  if (!opened) return 0; // --config.check
  const { engine } = opened;
  const json = o['json'] as boolean;
  const verify = (o['verify'] as boolean) && engine.backend === 'cpu';
  /** FAULT INJECTION: present every proof for this job id instead of its own. */
  const verifyAs = o['fault.verify-as-job'] as string | undefined;
  const out = process.stdout;
  const err = process.stderr;
  const tty = err.isTTY === true;

  // Progress from the engine's own events: partitions finished across our proofs.
  const jobs = new Set<number>();
  let totalParts = 0;
  let lastDraw = 0;
  let lastLine = '';
  const draw = (force = false) => {
    const now = Date.now();
    if (!force && now - lastDraw < 100) return;
    lastDraw = now;
    let done = 0;
    for (const j of jobs) {
      const st = engine.model.jobs.get(j);
      if (st) for (const s of st.states) if (s === PART_DONE || s === PART_FAILED) done++;
    }
    const finishedProofs = results.length;
    const width = 30;
    const frac = totalParts > 0 ? Math.min(1, (done + finishedParts) / totalParts) : 0;
    const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '-');
    const line = `[${bar}] ${String(Math.round(frac * 100)).padStart(3)}%  proofs ${finishedProofs}/${count}`;
    if (tty) err.write(`\r${line}`);
    else if (line !== lastLine && (force || finishedProofs !== lastFinished)) err.write(`${line}\n`);
    lastLine = line;
    lastFinished = finishedProofs;
  };
  let lastFinished = -1;
  let finishedParts = 0;
  const results: ProofResult[] = [];
  const failures: string[] = [];
  engine.onBatch = () => draw();

  if (!json) out.write(`${'job_id'.padEnd(46)} ${'outcome'.padEnd(9)} ${'parts'.padStart(5)} ${'queue_s'.padStart(8)} ${'synth_s'.padStart(8)} ${'gpu_s'.padStart(8)} ${'total_s'.padStart(8)}  verified\n`);
  const workload = new Workload(engine, {
    mix: { [kind]: 1 },
    concurrency: o['concurrency'] as number,
    count,
    onSubmit: (job) => {
      jobs.add(job);
      totalParts += PARTITIONS[kind];
    },
    onResult: (r) => {
      jobs.delete(r.job);
      finishedParts += r.partitions;
      let verified: boolean | null = null;
      if (r.outcome === 'completed' && verify) {
        try {
          const v = engine.verifyWithReason(engine.proof(r.job), verifyAs ?? r.jobId);
          verified = v.valid;
          const as = verifyAs !== undefined ? ` as job ${verifyAs}` : '';
          if (!v.valid) failures.push(`${r.jobId}: proof does not verify${as}: ${v.reason}`);
        } catch (e) {
          verified = false;
          failures.push(`${r.jobId}: verification error: ${(e as Error).message}`);
        }
      }
      if (r.outcome !== 'completed') failures.push(`${r.jobId}: ${r.outcome}${r.error ? `: ${r.error}` : ''}`);
      results.push(r);
      if (tty) err.write('\r\x1b[K');
      if (json) out.write(JSON.stringify({ ...r, verified }) + '\n');
      else
        out.write(
          `${r.jobId.padEnd(46)} ${r.outcome.padEnd(9)} ${String(r.partitions).padStart(5)} ${fmt(r.queueWaitSeconds).padStart(8)} ${fmt(r.synthesisSeconds).padStart(8)} ${fmt(r.gpuSeconds).padStart(8)} ${fmt(r.totalSeconds).padStart(8)}  ${verified === null ? '-' : verified ? 'yes' : 'NO'}\n`,
        );
      draw(true);
    },
    onError: (e) => log.warn('submit failed', { err: e.message }),
  });
  const outcome = await Promise.race([workload.run().then(() => 'done' as const), untilSignal(log)]);
  if (outcome !== 'done') {
    log.warn('interrupted: cancelling proofs in flight', { signal: outcome });
    await workload.stop((o['shutdown.grace'] as number) * 1000);
  }
  if (tty) err.write('\r\x1b[K');
  await engine.close();
  // The per-proof columns are not wall-clock stretches: partitions run side by side.
  if (!json && results.length > 0) err.write("prove: synth_s and gpu_s are summed over each proof's partitions (which run in parallel, so they can exceed total_s, the proof's wall-clock time)\n");
  if (outcome !== 'done') {
    err.write(`prove: interrupted after ${results.length} of ${count} proofs\n`);
    return 130;
  }
  if (failures.length > 0) {
    err.write(`prove: ${failures.length} of ${count} proofs failed:\n`);
    for (const f of failures) err.write(`  ${f}\n`);
    return 1;
  }
  err.write(`prove: ${count} ${kind} proof(s) completed${verify ? ' and verified' : ''}\n`);
  return 0;
}
