/**
 * Exposition cost (issue #13): for the small and the large box of bench/scrape.ts,
 *
 *  - OpenMetrics vs text 0.0.4: in-process scrape time (refresh + collect + serialise into
 *    the bytes a server sends) and body bytes of ours in both formats, beside prom-client with the same series in both
 *    formats (its OpenMetrics registry carries the same exemplars: the latest observation
 *    per bucket with {job_id, partition} of the four duration histograms); the four are
 *    interleaved one by one, the order rotating, so drift hits all of them;
 *  - gzip: per body and zlib level (1 = what we ship, 6 = zlib's default), the CPU time of
 *    compressing one body and the bytes it saves; and the CPU a whole scrape costs through
 *    the real telemetry-path code (exposition.ts metricsReply: negotiate, collect,
 *    serialise, gzip) plus the UTF-8 encoding every answer needs, without gzip, with gzip
 *    on the JS thread (what we ship) and with gzip on libuv's pool (zlib.gzip, the
 *    alternative), from process.cpuUsage (all threads, so the pool's work is counted);
 *  - ours vs prom-client with gzip at the level we ship, OpenMetrics, same series.
 */
import { promisify } from 'node:util';
import { gzip, gzipSync } from 'node:zlib';
import { GZIP_LEVEL, metricsReply } from '../src/exporter/exposition';
import { Telemetry } from '../src/exporter/telemetry';
import { silentLogger } from '../src/util/logger';
import { PromEquivalent, helpTexts } from './lib/prom-equivalent';
import { Figure, canonicalKey, figure, median, nowMs, tick } from './lib/stats';
import { SyntheticBox } from './lib/synthetic-box';
import { BOXES } from './scrape';

export interface ExpositionOptions {
  runs?: number;
  /** In-process scrapes per variant per run. */
  iterations?: number;
  /** gzip timings per body and level per run. */
  gzipIterations?: number;
  /** Scrapes per arm per run for the CPU-per-scrape figure. */
  cpuIterations?: number;
  log?: (msg: string) => void;
}

export const GZIP_LEVELS = [1, 6] as const;

export interface GzipFigures {
  level: number;
  /** CPU ms to compress one body (synchronous zlib on this thread: wall = CPU). */
  ms: Figure;
  bytes: number;
  /** 1 - compressed / plain. */
  saved: number;
}

export interface ExpositionBox {
  gpus: number;
  workersPerGpu: number;
  series: number;
  exemplars: { ours: number; promClient: number };
  /** Ours in OpenMetrics and prom-client's OpenMetrics: the same samples (exemplars and le spelling aside). */
  sameSeries: boolean;
  differences: string[];
  bytes: { text: number; openMetrics: number; promText: number; promOpenMetrics: number };
  /** In-process p50 per run, ms. */
  p50: { text: Figure; openMetrics: Figure; promText: Figure; promOpenMetrics: Figure };
  /** Ours OpenMetrics / ours text; ours / prom-client in each format (per run, p50s). */
  ratio: { openMetricsVsText: Figure; textVsProm: Figure; openMetricsVsProm: Figure };
  gzip: { text: GzipFigures[]; openMetrics: GzipFigures[] };
  /**
   * CPU per scrape through metricsReply (OpenMetrics) plus encoding the answer, ms: identity,
   * gzip at GZIP_LEVEL on the JS thread (shipped) and on libuv's pool (the alternative).
   */
  cpuPerScrape: { identity: Figure; gzip: Figure; added: Figure; gzipPool: Figure; addedPool: Figure };
  /** Ours (OpenMetrics + gzip) vs prom-client (OpenMetrics + gzip, same level), p50 ms per run. */
  withGzip: { ours: Figure; promClient: Figure; ratio: Figure };
}

export interface ExpositionResult {
  method: string;
  runs: number;
  iterations: number;
  gzipLevel: number;
  boxes: Record<'small' | 'large', ExpositionBox>;
}

/** Samples of a text or OpenMetrics body: exemplars dropped, `le` compared as numbers, `# EOF` skipped. */
function omSamples(body: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const raw of body.split('\n')) {
    if (raw === '' || raw.startsWith('#')) continue;
    const line = raw.replace(/ # \{.*$/, '').replace(/le="([^"]+)"/, (_m, le: string) => `le="${le === '+Inf' ? '+Inf' : Number(le)}"`);
    const sp = line.lastIndexOf(' ');
    const v = line.slice(sp + 1);
    out.set(canonicalKey(line.slice(0, sp)), v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v));
  }
  return out;
}

function differences(a: string, b: string, max = 5): string[] {
  const skip = (k: string) => k.startsWith('cuzk_exporter_scrape_duration_seconds');
  const A = omSamples(a);
  const B = omSamples(b);
  const out: string[] = [];
  for (const [k, v] of A) {
    if (skip(k)) continue;
    if (!B.has(k)) out.push(`only in ours: ${k}`);
    else if (B.get(k) !== v) out.push(`${k}: ours ${v}, prom-client ${B.get(k)}`);
    if (out.length >= max) return out;
  }
  for (const k of B.keys()) {
    if (!skip(k) && !A.has(k)) out.push(`only in prom-client: ${k}`);
    if (out.length >= max) return out;
  }
  return out;
}

const exemplarCount = (body: string) => body.split('\n').filter((l) => l.includes(' # {')).length;

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await f();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** CPU ms (user + system, every thread) per call of f, over n calls. */
async function cpuPer(n: number, f: () => Promise<unknown>): Promise<number> {
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await f();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000 / n;
}

const OM_ACCEPT = 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5';
const gzipPool = promisify(gzip);
/** What the socket write of an answer costs: a string body is encoded to UTF-8 (the rope flattened). */
const encoded = (body: string | Buffer): Buffer => (typeof body === 'string' ? Buffer.from(body) : body);

export async function benchExposition(opts: ExpositionOptions = {}): Promise<ExpositionResult> {
  const runs = opts.runs ?? 5;
  const iterations = opts.iterations ?? 100;
  const gzipIterations = opts.gzipIterations ?? 30;
  const cpuIterations = opts.cpuIterations ?? 100;
  const log = opts.log ?? (() => {});
  const boxes = {} as Record<'small' | 'large', ExpositionBox>;
  for (const box of BOXES) {
    const source = new SyntheticBox({ gpus: box.gpus, workersPerGpu: box.workersPerGpu });
    const telemetry = new Telemetry(source, { version: 'bench', logger: silentLogger });
    try {
      const help = helpTexts(await telemetry.scrape());
      const promText = new PromEquivalent(source.model, telemetry.info, () => source.nowNs(), help);
      const promOm = new PromEquivalent(source.model, telemetry.info, () => source.nowNs(), help, { openMetrics: true, jobId: (h) => source.jobId(h) });
      source.populate();
      const ours = { text: await telemetry.scrape('text'), om: await telemetry.scrape('openmetrics') };
      const theirs = { text: await promText.scrape(), om: await promOm.scrape() };
      const diff = differences(ours.om, theirs.om);
      // The bytes each server sends: ours as the HTTP path gets them (collection().encoded();
      // the OpenMetrics body is written as bytes, body-writer.ts), prom-client's string as
      // its server's res.end() encodes it. Until 2026-12-04 ours was timed as text
      // (Telemetry.scrape()), which since the OpenMetrics body became bytes (00728ac) added a
      // decode to a string no server does (large box, OpenMetrics: 0.93 ms timed so, 0.41-0.47 as bytes).
      const variants: [keyof ExpositionBox['p50'], () => Promise<unknown>][] = [
        ['text', async () => (await telemetry.collection()).encoded('text')],
        ['openMetrics', async () => (await telemetry.collection()).encoded('openmetrics')],
        ['promText', async () => Buffer.from(await promText.scrape())],
        ['promOpenMetrics', async () => Buffer.from(await promOm.scrape())],
      ];
      for (let i = 0; i < 30; i++) for (const [, f] of variants) await f(); // warm-up
      const perRun = { text: [] as number[], openMetrics: [] as number[], promText: [] as number[], promOpenMetrics: [] as number[] };
      const gz = { text: GZIP_LEVELS.map(() => [] as number[]), openMetrics: GZIP_LEVELS.map(() => [] as number[]) };
      const cpu = { identity: [] as number[], gzip: [] as number[], pool: [] as number[] };
      const withGzip = { ours: [] as number[], prom: [] as number[] };
      const reqOf = (acceptEncoding: string) => ({ method: 'GET', headers: { accept: OM_ACCEPT, 'accept-encoding': acceptEncoding } });
      for (let r = 0; r < runs; r++) {
        const times = { text: [] as number[], openMetrics: [] as number[], promText: [] as number[], promOpenMetrics: [] as number[] };
        for (let i = 0; i < iterations; i++) {
          for (let j = 0; j < variants.length; j++) {
            const [name, f] = variants[(i + r + j) % variants.length];
            times[name].push(await timed(f));
          }
        }
        for (const k of Object.keys(times) as (keyof typeof times)[]) perRun[k].push(median(times[k]));
        // gzip of one body, per level (alternating levels).
        for (const [fmt, body] of [['text', ours.text], ['openMetrics', ours.om]] as const) {
          const buf = Buffer.from(body);
          const t: number[][] = GZIP_LEVELS.map(() => []);
          for (let i = 0; i < gzipIterations; i++) {
            for (let l = 0; l < GZIP_LEVELS.length; l++) {
              const level = GZIP_LEVELS[(i + l) % GZIP_LEVELS.length];
              const t0 = nowMs();
              gzipSync(buf, { level });
              t[GZIP_LEVELS.indexOf(level)].push(nowMs() - t0);
            }
          }
          GZIP_LEVELS.forEach((_, l) => gz[fmt][l].push(median(t[l])));
        }
        // CPU of a whole scrape through the telemetry path's code: identity, gzip on this
        // thread (shipped), gzip on the pool; arms in A B C C B A order.
        const half = Math.max(1, Math.floor(cpuIterations / 2));
        const identity = async () => encoded((await metricsReply(telemetry, reqOf('identity'))).body);
        const shipped = async () => encoded((await metricsReply(telemetry, reqOf('gzip'))).body);
        const pooled = async () => gzipPool(encoded((await metricsReply(telemetry, reqOf('identity'))).body), { level: GZIP_LEVEL });
        const idA = await cpuPer(half, identity);
        const gzA = await cpuPer(half, shipped);
        const plA = await cpuPer(half, pooled);
        const plB = await cpuPer(half, pooled);
        const gzB = await cpuPer(half, shipped);
        const idB = await cpuPer(half, identity);
        cpu.identity.push((idA + idB) / 2);
        cpu.gzip.push((gzA + gzB) / 2);
        cpu.pool.push((plA + plB) / 2);
        // Ours vs prom-client, OpenMetrics + gzip at our level, interleaved.
        const o: number[] = [];
        const p: number[] = [];
        for (let i = 0; i < iterations; i++) {
          const ourTurn = () => timed(async () => (await telemetry.collection()).encoded('openmetrics', GZIP_LEVEL));
          const theirTurn = () => timed(async () => gzipSync(await promOm.scrape(), { level: GZIP_LEVEL }));
          if ((i + r) % 2 === 0) {
            o.push(await ourTurn());
            p.push(await theirTurn());
          } else {
            p.push(await theirTurn());
            o.push(await ourTurn());
          }
        }
        withGzip.ours.push(median(o));
        withGzip.prom.push(median(p));
        await tick();
        log(
          `exposition ${box.name} run ${r + 1}/${runs}: text ${perRun.text[r].toFixed(3)} ms, OpenMetrics ${perRun.openMetrics[r].toFixed(3)} ms, prom-client OpenMetrics ${perRun.promOpenMetrics[r].toFixed(3)} ms; gzip adds ${(cpu.gzip[r] - cpu.identity[r]).toFixed(3)} ms CPU per scrape`,
        );
      }
      const gzFigures = (fmt: 'text' | 'openMetrics', body: string): GzipFigures[] =>
        GZIP_LEVELS.map((level, l) => {
          const bytes = gzipSync(Buffer.from(body), { level }).length;
          return { level, ms: figure('ms', gz[fmt][l]), bytes, saved: Number((1 - bytes / Buffer.byteLength(body)).toFixed(4)) };
        });
      const ratio = (a: number[], b: number[]) => figure('ratio', a.map((x, i) => x / b[i]), 3);
      boxes[box.name] = {
        gpus: box.gpus,
        workersPerGpu: box.workersPerGpu,
        series: omSamples(ours.om).size,
        exemplars: { ours: exemplarCount(ours.om), promClient: exemplarCount(theirs.om) },
        sameSeries: diff.length === 0,
        differences: diff,
        bytes: { text: Buffer.byteLength(ours.text), openMetrics: Buffer.byteLength(ours.om), promText: Buffer.byteLength(theirs.text), promOpenMetrics: Buffer.byteLength(theirs.om) },
        p50: { text: figure('ms', perRun.text), openMetrics: figure('ms', perRun.openMetrics), promText: figure('ms', perRun.promText), promOpenMetrics: figure('ms', perRun.promOpenMetrics) },
        ratio: {
          openMetricsVsText: ratio(perRun.openMetrics, perRun.text),
          textVsProm: ratio(perRun.text, perRun.promText),
          openMetricsVsProm: ratio(perRun.openMetrics, perRun.promOpenMetrics),
        },
        gzip: { text: gzFigures('text', ours.text), openMetrics: gzFigures('openMetrics', ours.om) },
        cpuPerScrape: {
          identity: figure('ms', cpu.identity),
          gzip: figure('ms', cpu.gzip),
          added: figure('ms', cpu.gzip.map((g, i) => g - cpu.identity[i])),
          gzipPool: figure('ms', cpu.pool),
          addedPool: figure('ms', cpu.pool.map((g, i) => g - cpu.identity[i])),
        },
        withGzip: { ours: figure('ms', withGzip.ours), promClient: figure('ms', withGzip.prom), ratio: ratio(withGzip.ours, withGzip.prom) },
      };
    } finally {
      await telemetry.shutdown();
    }
  }
  return {
    method:
      'Synthetic boxes of bench/scrape.ts (state frozen while measured; job ids shaped like cuzk\'s). In-process scrape = the body as sent: Telemetry.collection().encoded(format) (refresh + OpenTelemetry collect + serialise to UTF-8 bytes, exemplars included; before 2026-12-04 Telemetry.scrape(format), a string) vs prom-client register.metrics() encoded to UTF-8 with the same series, text and OpenMetrics registries (the latter with the same exemplars), interleaved in rotating order. ' +
      'gzip: zlib gzipSync of one body per level on this thread (CPU = wall). CPU per scrape: process.cpuUsage (all threads) over scrapes through exposition.ts metricsReply (OpenMetrics negotiated) plus UTF-8 encoding of the answer, identity vs gzip at the shipped level on the JS thread vs the same on libuv\'s pool (zlib.gzip), arms in A B C C B A order.',
    runs,
    iterations,
    gzipLevel: GZIP_LEVEL,
    boxes,
  };
}
