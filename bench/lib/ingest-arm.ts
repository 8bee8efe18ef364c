/**
 * One end-to-end arm of the ingest benchmark in a process of its own (bench/ingest.ts):
 * `node ingest-arm.js <model|exporter> <jobs> [library]` runs untimed fills (V8 compiles the
 * refresh path for this configuration), then three timed, and prints the median one as JSON.
 *
 * Why a process per arm: run in one process, the two configurations (observer or none,
 * exemplars or none) and the replays deoptimized each other's compiled code in turn, and
 * the exporter arm's refresh ranged 2.9-22 M events/s between runs of one benchmark. A
 * process runs one configuration, as an exporter does. INGEST_ARM_TRACE=1 prints the warm-up
 * fills' rates to stderr.
 */
import { setLibraryPath } from './engine';
import { TIMED_FILLS, TimedRefresh, WARM_FILLS, timedRefresh } from './ingest-fill';

async function main(): Promise<void> {
  const [arm, jobsArg, library] = process.argv.slice(2);
  if (arm !== 'model' && arm !== 'exporter') throw new Error(`ingest-arm: arm must be model or exporter, not ${arm}`);
  const jobs = Number(jobsArg);
  if (!(Number.isInteger(jobs) && jobs > 0)) throw new Error(`ingest-arm: jobs must be a positive integer, not ${jobsArg}`);
  setLibraryPath(library || undefined);
  const warm: number[] = [];
  for (let i = 0; i < WARM_FILLS; i++) warm.push((await timedRefresh(jobs, arm === 'exporter')).rate);
  const timed: TimedRefresh[] = [];
  for (let i = 0; i < TIMED_FILLS; i++) timed.push(await timedRefresh(jobs, arm === 'exporter'));
  const r = [...timed].sort((a, b) => a.rate - b.rate)[TIMED_FILLS >> 1];
  if (process.env.INGEST_ARM_TRACE) {
    process.stderr.write(`warm-up ${warm.map((x) => (x / 1e6).toFixed(1)).join(' ')}, timed ${timed.map((x) => (x.rate / 1e6).toFixed(1)).join(' ')} M events/s\n`);
  }
  process.stdout.write(JSON.stringify(r) + '\n');
}

main().catch((e: Error) => {
  process.stderr.write(`${e.message}\n`);
  process.exit(1);
});
