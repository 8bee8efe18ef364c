/**
 * Scrape cost: /metrics for a small box (1 GPU x 2 workers) and a large one (64 GPUs x
 * 2 workers), all four proof kinds, beside an equivalent prom-client registry with the
 * same series in the same run (bench/lib/prom-equivalent.ts).
 *
 *  - in-process: Telemetry.scrape() (refresh + OpenTelemetry collect + serialise) versus
 *    prom-client register.metrics() (collect() callbacks + serialise), interleaved one by
 *    one so drift hits both; our time is also split into collect and serialise;
 *  - loopback HTTP: our real server (startServer) and a minimal prom-client server, each in
 *    a process of its own over the same box (bench/lib/scrape-server.ts; before issue 21
 *    both ran in this process, beside the in-process rows' heap and garbage), scraped by a
 *    child-process client (bench/lib/load-client.ts) with one scraper and with
 *    `concurrency` scrapers; latency is request -> last byte, and each server process' CPU
 *    per request is recorded. The client
 *    sends Prometheus' Accept and Accept-Encoding, so both answer what Prometheus gets:
 *    OpenMetrics (prom-client's OpenMetrics registry, same exemplars), gzip at our level.
 */
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { GZIP_LEVEL } from '../src/exporter/exposition';
import { Telemetry } from '../src/exporter/telemetry';
import { silentLogger } from '../src/util/logger';
import { LoadClient, PROMETHEUS_HEADERS } from './lib/load-client';
import { PromEquivalent, helpTexts, sampleDifferences } from './lib/prom-equivalent';
import { ScrapeServer } from './lib/scrape-server';
import { Dist, Figure, dist, figure, median, nowMs, tick } from './lib/stats';
import { SyntheticBox } from './lib/synthetic-box';

export interface ScrapeOptions {
  runs?: number;
  /** In-process scrapes per implementation per run. */
  iterations?: number;
  /** HTTP requests per implementation per mode per run. */
  requests?: number;
  /** Untimed HTTP requests (`concurrency` scrapers) to each server process before the first run. */
  httpWarmup?: number;
  concurrency?: number;
  log?: (msg: string) => void;
}

interface Box {
  name: 'small' | 'large';
  gpus: number;
  workersPerGpu: number;
}

export const BOXES: Box[] = [
  { name: 'small', gpus: 1, workersPerGpu: 2 },
  { name: 'large', gpus: 64, workersPerGpu: 2 },
];

export interface BoxResult {
  gpus: number;
  workersPerGpu: number;
  kinds: number;
  series: number;
  eventsApplied: number;
  bodyBytes: { ours: number; promClient: number };
  sameSeries: boolean;
  differences: string[];
  inProcess: {
    ours: { p50: Figure; p99: Figure };
    promClient: { p50: Figure; p99: Figure };
    /** ours p50 / prom-client p50, per run. */
    ratioP50: Figure;
    /** Our time split: SDK collect (incl. refresh) and serialisation, p50 per run. */
    oursCollectP50: Figure;
    oursSerializeP50: Figure;
    /**
     * The same collection serialised by @opentelemetry/exporter-prometheus' own
     * PrometheusSerializer: with our settings (no scope labels, no target_info; what we
     * used before src/exporter/fast-serializer.ts) and with its defaults. Collect +
     * serialise p50 per run, and the ratio to prom-client's p50 of the same run.
     */
    packageLeanP50: Figure;
    packageLeanRatio: Figure;
    packageDefaultsP50: Figure;
    packageDefaultsRatio: Figure;
    packageDefaultsBodyBytes: number;
    perRun: { ours: Dist; promClient: Dist }[];
  };
  /** cpuPerRequest: the server process' CPU (all threads) per request of the run, warm-up included (since issue 21). */
  http: Record<'single' | 'concurrent', { ours: { p50: Figure; p99: Figure; cpuPerRequest?: Figure }; promClient: { p50: Figure; p99: Figure; cpuPerRequest?: Figure }; ratioP50: Figure; ratioP99: Figure }>;
}

export interface ScrapeResult {
  method: string;
  runs: number;
  iterations: number;
  requests: number;
  /** Absent in results from before 2026-12-04 (10 untimed requests per job only). */
  httpWarmup?: number;
  concurrency: number;
  boxes: Record<'small' | 'large', BoxResult>;
}

async function setup(box: Box) {
  const source = new SyntheticBox({ gpus: box.gpus, workersPerGpu: box.workersPerGpu });
  const telemetry = new Telemetry(source, { version: 'bench', logger: silentLogger });
  // HELP texts come from our own output, so the equivalent cannot drift from it.
  const help = helpTexts(await telemetry.scrape());
  const prom = new PromEquivalent(source.model, telemetry.info, () => source.nowNs(), help);
  const promOm = new PromEquivalent(source.model, telemetry.info, () => source.nowNs(), help, { openMetrics: true, jobId: (h) => source.jobId(h) });
  source.populate();
  const ours = await telemetry.scrape();
  const theirs = await prom.scrape();
  const differences = sampleDifferences(ours, theirs);
  // The HTTP rows: each server in a process of its own over the same box (scrape-server.ts).
  const server = await ScrapeServer.start('ours', box.gpus, box.workersPerGpu);
  const promSrv = await ScrapeServer.start('prom-client', box.gpus, box.workersPerGpu);
  return { source, telemetry, prom, promOm, server, promSrv, ours, theirs, differences };
}

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await f();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

export async function benchScrape(opts: ScrapeOptions = {}): Promise<ScrapeResult> {
  const runs = opts.runs ?? 5;
  const iterations = opts.iterations ?? 200;
  const requests = opts.requests ?? 1000;
  const httpWarmup = opts.httpWarmup ?? 1000;
  const concurrency = opts.concurrency ?? 4;
  const log = opts.log ?? (() => {});
  const client = LoadClient.start();
  const boxes = {} as Record<'small' | 'large', BoxResult>;
  try {
    for (const box of BOXES) {
      const s = await setup(box);
      try {
        const ourUrl = s.server.url;
        const inRuns: { ours: number[]; prom: number[]; collect: number[]; serialize: number[]; lean: number[]; defaults: number[] }[] = [];
        const lean = new PrometheusSerializer(undefined, false, undefined, true, true);
        const defaults = new PrometheusSerializer();
        let defaultsBytes = 0;
        const httpRuns: Record<'single' | 'concurrent', { ours: number[]; prom: number[]; oursCpu: number; promCpu: number }[]> = { single: [], concurrent: [] };
        // Warm-up: JIT both paths before measuring.
        for (let i = 0; i < 50; i++) {
          await s.telemetry.scrape();
          await s.prom.scrape();
          await s.promOm.scrape();
        }
        // Each server process was started for this box and has run none of its HTTP path yet:
        // V8 compiles it over the first few hundred requests (the first of 16 rounds of
        // scrape-ab ran at 1.2-1.7x the p99 of the last). A running exporter is past that, so
        // both servers get the same untimed scrapes first.
        for (const srv of [s.server, s.promSrv]) {
          const w = await client.run({ url: srv.url, headers: { ...PROMETHEUS_HEADERS }, requests: httpWarmup, concurrency, warmup: 0 });
          if (w.status.some((x) => x !== 200)) throw new Error(`warm-up scrape answered ${w.status}`);
        }
        for (let r = 0; r < runs; r++) {
          const run = { ours: [] as number[], prom: [] as number[], collect: [] as number[], serialize: [] as number[], lean: [] as number[], defaults: [] as number[] };
          for (let i = 0; i < iterations; i++) {
            // Alternate which goes first, so neither always runs on a just-warmed cache.
            if ((i + r) % 2 === 0) {
              run.ours.push(await timed(() => s.telemetry.scrape()));
              run.prom.push(await timed(() => s.prom.scrape()));
            } else {
              run.prom.push(await timed(() => s.prom.scrape()));
              run.ours.push(await timed(() => s.telemetry.scrape()));
            }
          }
          // Where our time goes: collection (refresh + SDK collect) versus serialisation.
          const exporter = s.telemetry['prometheus'];
          const serializer = s.telemetry['serializer'];
          for (let i = 0; i < Math.min(iterations, 100); i++) {
            const t0 = nowMs();
            s.source.refresh();
            const { resourceMetrics } = await exporter.collect();
            const t1 = nowMs();
            serializer.serialize(resourceMetrics);
            const t2 = nowMs();
            lean.serialize(resourceMetrics);
            const t3 = nowMs();
            defaultsBytes = Buffer.byteLength(defaults.serialize(resourceMetrics));
            const t4 = nowMs();
            run.collect.push(t1 - t0);
            run.serialize.push(t2 - t1);
            run.lean.push(t1 - t0 + (t3 - t2));
            run.defaults.push(t1 - t0 + (t4 - t3));
          }
          inRuns.push(run);
          for (const mode of ['single', 'concurrent'] as const) {
            const c = mode === 'single' ? 1 : concurrency;
            // Each job's latencies and the server process' CPU per request (warm-up included).
            const job = async (srv: ScrapeServer) => {
              const cpu0 = await srv.cpuMs();
              const res = await client.run({ url: srv.url, headers: { ...PROMETHEUS_HEADERS }, requests, concurrency: c, warmup: 10 });
              return { ...res, cpuMs: ((await srv.cpuMs()) - cpu0) / (requests + 10) };
            };
            const first = r % 2 === 0;
            const a = first ? await job(s.server) : null;
            const b = await job(s.promSrv);
            const o = a ?? (await job(s.server));
            if (o.status.some((x) => x !== 200) || b.status.some((x) => x !== 200)) throw new Error(`scrape answered ${o.status} / ${b.status}`);
            httpRuns[mode].push({ ours: o.latenciesMs, prom: b.latenciesMs, oursCpu: o.cpuMs, promCpu: b.cpuMs });
          }
          await tick();
          log(`scrape ${box.name} run ${r + 1}/${runs}: in-process ours p50 ${median(run.ours).toFixed(3)} ms, prom-client ${median(run.prom).toFixed(3)} ms`);
        }
        const d = (xs: number[]) => dist(xs);
        const perRun = inRuns.map((x) => ({ ours: d(x.ours), promClient: d(x.prom) }));
        const series = [...s.ours.split('\n')].filter((l) => l !== '' && !l.startsWith('#')).length;
        const httpFig = (mode: 'single' | 'concurrent') => {
          const rs = httpRuns[mode].map((x) => ({ ours: d(x.ours), prom: d(x.prom) }));
          return {
            ours: { p50: figure('ms', rs.map((x) => x.ours.p50)), p99: figure('ms', rs.map((x) => x.ours.p99)), cpuPerRequest: figure('ms', httpRuns[mode].map((x) => x.oursCpu)) },
            promClient: { p50: figure('ms', rs.map((x) => x.prom.p50)), p99: figure('ms', rs.map((x) => x.prom.p99)), cpuPerRequest: figure('ms', httpRuns[mode].map((x) => x.promCpu)) },
            ratioP50: figure('ratio', rs.map((x) => x.ours.p50 / x.prom.p50), 3),
            ratioP99: figure('ratio', rs.map((x) => x.ours.p99 / x.prom.p99), 3),
          };
        };
        boxes[box.name] = {
          gpus: box.gpus,
          workersPerGpu: box.workersPerGpu,
          kinds: 4,
          series,
          eventsApplied: s.source.eventsApplied,
          bodyBytes: { ours: Buffer.byteLength(s.ours), promClient: Buffer.byteLength(s.theirs) },
          sameSeries: s.differences.length === 0,
          differences: s.differences,
          inProcess: {
            ours: { p50: figure('ms', perRun.map((x) => x.ours.p50)), p99: figure('ms', perRun.map((x) => x.ours.p99)) },
            promClient: { p50: figure('ms', perRun.map((x) => x.promClient.p50)), p99: figure('ms', perRun.map((x) => x.promClient.p99)) },
            ratioP50: figure('ratio', perRun.map((x) => x.ours.p50 / x.promClient.p50), 3),
            oursCollectP50: figure('ms', inRuns.map((x) => median(x.collect))),
            oursSerializeP50: figure('ms', inRuns.map((x) => median(x.serialize))),
            packageLeanP50: figure('ms', inRuns.map((x) => median(x.lean))),
            packageLeanRatio: figure('ratio', inRuns.map((x) => median(x.lean) / median(x.prom)), 3),
            packageDefaultsP50: figure('ms', inRuns.map((x) => median(x.defaults))),
            packageDefaultsRatio: figure('ratio', inRuns.map((x) => median(x.defaults) / median(x.prom)), 3),
            packageDefaultsBodyBytes: defaultsBytes,
            perRun,
          },
          http: { single: httpFig('single'), concurrent: httpFig('concurrent') },
        };
      } finally {
        await s.server.stop();
        await s.promSrv.stop();
        await s.telemetry.shutdown();
      }
    }
  } finally {
    client.stop();
  }
  return {
    method:
      'Synthetic box state built from native-format events through the production StateModel, frozen while measured. ' +
      'In-process: Telemetry.scrape() vs prom-client register.metrics() (same series, values read from the same model in collect callbacks), interleaved. ' +
      'HTTP: our server vs a minimal prom-client server on 127.0.0.1, each in a process of its own over the same box (bench/lib/scrape-server.ts), scraped by a child-process client over keep-alive raw sockets (bench/lib/raw-http-client.ts: no GC pauses of its own) with Prometheus\' Accept and Accept-Encoding (both answer OpenMetrics, gzip level ' + GZIP_LEVEL + '); ' + httpWarmup + ' untimed requests to each server first; latency = request start to last byte.',
    runs,
    iterations,
    requests,
    httpWarmup,
    concurrency,
    boxes,
  };
}
