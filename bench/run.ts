/**
 * The benchmark runner: `npm run bench` (= tsc, then `node dist/bench/run.js`) or
 * `cuzk-exporter bench`. Runs every benchmark in this process, one after another, and
 * writes bench/results/<name>.json (with machine notes) and bench/results/summary.md (the
 * README's table, rendered from that file). See bench/README.md.
 *
 *   node dist/bench/run.js [--name NAME] [--only ingest,overhead,scrape,exposition,freshness,accuracy,attach-poll,auth-stall,fleet]
 *                          [--merge] [--quick] [--native-runs N] [--out-dir DIR] [--library PATH] [--render FILE]
 *
 * --quick runs every benchmark with small counts (a harness check, written under
 * bench/results/tmp/, which git ignores); --render prints the summary of an existing
 * results file and exits; --merge (with --only) replaces only the benchmarks run in the
 * existing results file, keeping the others and noting when each part was measured.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Resolved } from '../src/cli/options';
import { findPackageRoot } from '../src/util/package-root';
import { Logger, createLogger } from '../src/util/logger';
import { benchAccuracy } from './accuracy';
import { benchAuthStall } from './auth-stall';
import { benchExposition } from './exposition';
import { benchFleet } from './fleet';
import { benchFreshness } from './freshness';
import { benchIngest } from './ingest';
import { setLibraryPath } from './lib/engine';
import { machine, nowMs } from './lib/stats';
import { benchOverhead } from './overhead';
import { AttachPollSummary, Results, evaluateAims, renderSummary } from './report';
import { benchScrape } from './scrape';

export const BENCHMARKS = ['ingest', 'overhead', 'scrape', 'exposition', 'freshness', 'accuracy', 'attach-poll', 'auth-stall', 'fleet'] as const;
export type Benchmark = (typeof BENCHMARKS)[number];

export interface RunOptions {
  name?: string;
  only?: Benchmark[];
  quick?: boolean;
  nativeRuns?: number;
  /** Folder for results; default <package>/bench/results (quick: .../tmp). */
  outDir?: string;
  /** A library implementing the cuzk ABI; default the reference engine. */
  library?: string;
  /** Replace only the benchmarks run in the existing results file (see --merge). */
  merge?: boolean;
}

/** Result sections by benchmark name. */
const SECTION: Record<Benchmark, keyof Results> = {
  ingest: 'ingest',
  overhead: 'overhead',
  scrape: 'scrape',
  exposition: 'exposition',
  freshness: 'freshness',
  accuracy: 'accuracy',
  'attach-poll': 'attachPoll',
  'auth-stall': 'authStall',
  fleet: 'fleet',
};

/**
 * --merge: the existing results with the sections of `fresh` (the benchmarks in `ran`)
 * replacing theirs. The machine notes stay the original run's; each merged part is listed
 * in settings.merged with its own date, duration and load average.
 */
export function mergeInto(base: Results, fresh: Results, ran: Benchmark[]): Results {
  const out: Results = { ...base, aims: [] };
  for (const b of ran) (out as unknown as Record<string, unknown>)[SECTION[b]] = fresh[SECTION[b]];
  // A part merged before whose benchmarks are all re-measured now is replaced, not added to.
  const same = (x: { only: string[] }) => x.only.every((b) => (ran as string[]).includes(b));
  const previous = (base.settings.merged ?? []).filter(same);
  const kept = (base.settings.merged ?? []).filter((x) => !same(x));
  const before = base.durationSeconds - previous.reduce((t, x) => t + x.durationSeconds, 0);
  out.durationSeconds = Math.round((before + fresh.durationSeconds) * 10) / 10;
  out.settings = {
    ...base.settings,
    merged: [
      ...kept,
      { only: ran, generatedAt: fresh.generatedAt, durationSeconds: fresh.durationSeconds, loadavgStart: fresh.machine.loadavgStart, loadavgEnd: fresh.machine.loadavgEnd },
    ],
  };
  return out;
}

/** A file-name-safe default: cores and CPU model, so different machines do not overwrite each other. */
export function defaultName(): string {
  const cpu = (os.cpus()[0]?.model ?? 'cpu').toLowerCase().replace(/\(r\)|\(tm\)|cpu|processor|@.*$/g, '').trim().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
  return `${os.cpus().length}core-${cpu || 'unknown'}`;
}

/** bench/attach-poll.ts (issue #4), when this build has it. */
function loadAttachPoll(): ((opts: { polls?: number; warmup?: number }) => Promise<AttachPollSummary & Record<string, unknown>>) | null {
  const file = path.join(__dirname, 'attach-poll.js');
  if (!fs.existsSync(file)) return null;
  const mod = require(file) as { benchAttachPoll?: (opts: { polls?: number; warmup?: number }) => Promise<AttachPollSummary & Record<string, unknown>> };
  return typeof mod.benchAttachPoll === 'function' ? mod.benchAttachPoll : null;
}

export async function runBenchmarks(opts: RunOptions, log: Logger): Promise<{ results: Results; jsonPath: string; summaryPath: string }> {
  const quick = opts.quick ?? false;
  const only = new Set<Benchmark>(opts.only && opts.only.length > 0 ? opts.only : BENCHMARKS);
  const name = opts.name ?? defaultName();
  const outDir = opts.outDir ?? path.join(findPackageRoot(), 'bench', 'results', ...(quick ? ['tmp'] : []));
  const progress = (msg: string) => log.info(msg);
  setLibraryPath(opts.library);
  const t0 = nowMs();
  let results: Results = {
    name,
    generatedAt: new Date().toISOString(),
    durationSeconds: 0,
    command: quick ? 'node dist/bench/run.js --quick' : 'npm run bench',
    machine: machine(),
    settings: { quick, only: [...only], ...(opts.library ? { library: path.resolve(opts.library) } : {}) },
    aims: [],
  };
  const step = async <T>(b: Benchmark, f: () => Promise<T>): Promise<T | undefined> => {
    if (!only.has(b)) return undefined;
    const s = nowMs();
    log.info(`benchmark ${b}: starting`);
    const r = await f();
    log.info(`benchmark ${b}: done in ${((nowMs() - s) / 1000).toFixed(1)} s`);
    return r;
  };
  results.ingest = await step('ingest', () =>
    benchIngest(quick ? { runs: 1, jobsPerFill: 200, nativeRuns: opts.nativeRuns ?? 0, log: progress } : { runs: 5, jobsPerFill: 1000, nativeRuns: opts.nativeRuns ?? 1, log: progress }),
  );
  results.overhead = await step('overhead', () =>
    benchOverhead(quick ? { pairs: 1, cpuWindowMs: 1000, simWindowMs: 1000, warmupMs: 300, log: progress } : { pairs: 5, cpuWindowMs: 4000, simWindowMs: 3000, warmupMs: 1000, log: progress }),
  );
  results.scrape = await step('scrape', () =>
    benchScrape(quick ? { runs: 1, iterations: 30, requests: 30, httpWarmup: 30, concurrency: 4, log: progress } : { runs: 5, iterations: 200, requests: 1000, httpWarmup: 1000, concurrency: 4, log: progress }),
  );
  results.exposition = await step('exposition', () =>
    benchExposition(quick ? { runs: 1, iterations: 20, gzipIterations: 5, cpuIterations: 20, log: progress } : { runs: 5, iterations: 100, gzipIterations: 30, cpuIterations: 100, log: progress }),
  );
  results.freshness = await step('freshness', () =>
    benchFreshness(quick ? { runs: 1, samples: 20, pushMs: 500, log: progress } : { runs: 3, samples: 150, pushMs: 2000, log: progress }),
  );
  results.accuracy = await step('accuracy', () =>
    benchAccuracy(quick ? { runs: 1, boxSeconds: 600, log: progress } : { runs: 3, boxSeconds: 2400, log: progress }),
  );
  const attachPoll = loadAttachPoll();
  if (only.has('attach-poll') && !attachPoll) log.info('benchmark attach-poll: not in this build (bench/attach-poll.ts), skipped');
  if (attachPoll) results.attachPoll = await step('attach-poll', () => attachPoll(quick ? { polls: 20, warmup: 5 } : { polls: 200, warmup: 60 }));
  results.authStall = await step('auth-stall', () =>
    benchAuthStall(quick ? { runs: 1, floodMs: 2000, baselineSamples: 20, log: progress } : { runs: 3, floodMs: 8000, baselineSamples: 200, log: progress }),
  );
  results.fleet = await step('fleet', () =>
    benchFleet(
      quick
        ? { sizes: [2, 4, 8], variants: [{ targets: 4, status: true }, { targets: 4, pollInterval: '1s', grpcStatusInterval: '5s', timelinePollInterval: '100ms' }], warmupMs: 3000, windowMs: 6000, scrapeIntervalMs: 2000, log: progress }
        : { sizes: [10, 20, 50, 100], variants: [{ targets: 100, status: true }, { targets: 100, pollInterval: '1s', grpcStatusInterval: '5s', timelinePollInterval: '100ms' }], warmupMs: 20_000, windowMs: 60_000, scrapeIntervalMs: 15_000, log: progress },
    ),
  );

  results.durationSeconds = Math.round((nowMs() - t0) / 100) / 10;
  results.machine.loadavgEnd = Math.round(os.loadavg()[0] * 100) / 100;
  fs.mkdirSync(outDir, { recursive: true });
  const jsonPath = path.join(outDir, `${name}.json`);
  if (opts.merge && fs.existsSync(jsonPath)) results = mergeInto(JSON.parse(fs.readFileSync(jsonPath, 'utf8')) as Results, results, [...only]);
  results.aims = evaluateAims(results);
  fs.writeFileSync(jsonPath, JSON.stringify(results, null, 2) + '\n');
  const summaryPath = path.join(outDir, 'summary.md');
  const rel = path.relative(findPackageRoot(), jsonPath).split(path.sep).join('/');
  fs.writeFileSync(summaryPath, renderSummary(results, rel));
  return { results, jsonPath, summaryPath };
}

function parseArgs(argv: string[]): RunOptions & { render?: string } {
  const out: RunOptions & { render?: string } = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--name') out.name = value();
    else if (a === '--only') {
      const list = value().split(',').map((s) => s.trim()).filter(Boolean);
      for (const b of list) if (!(BENCHMARKS as readonly string[]).includes(b)) throw new Error(`--only: unknown benchmark "${b}" (expected ${BENCHMARKS.join(', ')})`);
      out.only = list as Benchmark[];
    } else if (a === '--quick') out.quick = true;
    else if (a === '--merge') out.merge = true;
    else if (a === '--native-runs') out.nativeRuns = Number(value());
    else if (a === '--out-dir') out.outDir = path.resolve(value());
    else if (a === '--render') out.render = value();
    else if (a === '--library') out.library = value();
    else if (a === '--help' || a === '-h') {
      process.stdout.write(
        'usage: node dist/bench/run.js [--name NAME] [--only ' + BENCHMARKS.join(',') + '] [--merge] [--quick] [--native-runs N] [--out-dir DIR] [--library PATH] [--render FILE]\n',
      );
      process.exit(0);
    } else throw new Error(`unknown argument "${a}" (see --help)`);
  }
  return out;
}

/**
 * `cuzk-exporter bench` (src/cli/main.ts). Of the engine flags only --engine.library
 * applies: each benchmark defines the box it measures.
 */
export async function benchCommand(o: Resolved, log: Logger): Promise<number> {
  if (o['config.check']) {
    process.stdout.write('configuration OK\n');
    return 0;
  }
  const { results, jsonPath, summaryPath } = await runBenchmarks({ library: o['engine.library'] as string | undefined }, log);
  process.stdout.write('\n' + fs.readFileSync(summaryPath, 'utf8'));
  log.info('benchmarks written', { results: jsonPath, summary: summaryPath, seconds: results.durationSeconds });
  return 0;
}

if (require.main === module) {
  const log = createLogger('info', 'logfmt');
  (async () => {
    const args = parseArgs(process.argv.slice(2));
    if (args.render) {
      const r = JSON.parse(fs.readFileSync(args.render, 'utf8')) as Results;
      r.aims = evaluateAims(r); // derived from the measured figures only
      const rel = path.relative(findPackageRoot(), path.resolve(args.render)).split(path.sep).join('/');
      process.stdout.write(renderSummary(r, rel));
      return 0;
    }
    const { results, jsonPath, summaryPath } = await runBenchmarks(args, log);
    process.stdout.write('\n' + fs.readFileSync(summaryPath, 'utf8'));
    log.info('benchmarks written', { results: jsonPath, summary: summaryPath, seconds: results.durationSeconds });
    return 0;
  })().then(
    (code) => process.exit(code),
    (e: Error) => {
      process.stderr.write(`bench: ${e.stack ?? e.message}\n`);
      process.exit(1);
    },
  );
}
