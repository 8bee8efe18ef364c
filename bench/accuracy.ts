/**
 * Accuracy: GPU-worker utilisation over 5-minute windows estimated three ways, against
 * the run's ground truth.
 *
 *  - ours: the increase of cuzk_gpu_worker_busy_seconds_total between two /metrics
 *    scrapes (Telemetry.scrape(), parsed) divided by the time between them (what
 *    `rate()` computes);
 *  - a busy gauge polled every 1 s and every 15 s: each worker's `state` in the native
 *    /status JSON (cuzk's own snapshot, what scraping cuzk's JSON gives), averaged over
 *    the window; a 15 s poller is every 15th sample of the 1 s stream, and all 15 phases
 *    are evaluated (each is what a poller with that phase would have seen);
 *  - ground truth: the engine's own busy-nanosecond counters (cuzk_counters_read, which
 *    include the running stint), read just before and after each scrape and interpolated
 *    to the scrape's own clock reading.
 *
 * The sim backend runs SnapDeals-like partitions (GPU stage 0.6 s, synthesis 9.2 s,
 * jitter +-25 %) at `timeScale` (0.005: 1 s of box time is 5 ms here), with synthesis
 * slots sized for ~30 % worker utilisation, so a 5-minute window takes 1.5 s.
 */
import { CTR } from '../src/engine/sources/native/abi';
import { Telemetry } from '../src/exporter/telemetry';
import { silentLogger } from '../src/util/logger';
import { openEngine } from './lib/engine';
import { Figure, figure, mean, quantile, sleep } from './lib/stats';

export interface AccuracyOptions {
  runs?: number;
  /** Box seconds per run (at timeScale). */
  boxSeconds?: number;
  timeScale?: number;
  log?: (msg: string) => void;
}

interface MethodError {
  /** Mean absolute error, percentage points of utilisation. */
  meanAbs: Figure;
  p95Abs: Figure;
  maxAbs: Figure;
  estimatesPerRun: Figure;
}

export interface AccuracyResult {
  method: string;
  runs: number;
  gpus: number;
  workersPerGpu: number;
  timeScale: number;
  windowBoxSeconds: number;
  windowsPerRun: Figure;
  /** Mean true utilisation of a worker over a window, %. */
  trueUtilisation: Figure;
  ours: MethodError;
  gauge1s: MethodError;
  gauge15s: MethodError;
  /** Share of (worker, whole minute) pairs with some busy time where every 15 s sample read idle, %. */
  idleLookingMinutes15s: Figure;
}

const GPUS = 4;
const WPG = 2;
const MINUTE = 60;
const WINDOW_MINUTES = 5;

export async function benchAccuracy(opts: AccuracyOptions = {}): Promise<AccuracyResult> {
  const runs = opts.runs ?? 3;
  const scale = opts.timeScale ?? 0.005;
  const boxSeconds = opts.boxSeconds ?? 3600;
  const log = opts.log ?? (() => {});
  const nW = GPUS * WPG;
  const agg = { ours: [] as number[][], g1: [] as number[][], g15: [] as number[][], truth: [] as number[], windows: [] as number[], idle: [] as number[] };
  for (let r = 0; r < runs; r++) {
    const engine = openEngine({
      backend: 'sim',
      gpus: GPUS,
      workers_per_gpu: WPG,
      // ~30 % per worker: 36 slots / 9.2 s = 3.9 partitions/s x 0.6 s over 8 workers.
      synthesis_concurrency: 36,
      time_scale: scale,
      finished_retention_ms: 100,
      seed: 1000 + r,
      sim: { 'snap-update': { synth_ms: 9200, gpu_ms: 600, jitter: 0.25 } },
    });
    const telemetry = new Telemetry(engine, { version: 'bench', logger: silentLogger });
    // The clock reading a scrape's busy counters are taken at (the engine's atomic counter
    // read, which includes running stints up to it).
    let scrapeNow = 0;
    const totals = engine.runningTotals.bind(engine);
    engine.runningTotals = () => {
      const t = totals();
      if (t) scrapeNow = t.nowNs;
      return t;
    };
    const inFlight = new Set<number>();
    const fill = () => {
      while (inFlight.size < 4) {
        const job = engine.submit('snap-update');
        inFlight.add(job);
        const done = () => {
          inFlight.delete(job);
          if (!stopped) fill();
        };
        engine.awaitProof(job).then(done, done); // rejects only when the engine closes

      }
    };
    let stopped = false;
    fill();
    // Warm up: one box minute, so the pipeline is full at the first boundary.
    await sleep(MINUTE * 1000 * scale);

    const samples: { t: number; busy: Uint8Array }[] = [];
    const pollMs = 1000 * scale;
    const poll = setInterval(() => {
      const t = engine.now();
      const doc = JSON.parse(engine.statusText()) as { gpu_workers: { worker_id: number; state: string }[] };
      const busy = new Uint8Array(nW);
      for (const w of doc.gpu_workers) if (w.worker_id < nW) busy[w.worker_id] = w.state === 'proving' ? 1 : 0;
      samples.push({ t, busy });
    }, pollMs);

    // Boundaries every box minute: scrape (ours) bracketed by native counter reads (truth).
    const bounds: { t: number; ours: number[]; truth: number[] }[] = [];
    const busyNs = (words: Float64Array) => {
      const base = CTR.HDR_WORDS + words[CTR.KINDS] * CTR.KIND_WORDS + words[CTR.GPUS] * CTR.GPU_WORDS;
      return Array.from({ length: nW }, (_, w) => words[base + w * CTR.WORKER_WORDS + CTR.W_BUSY_NS]);
    };
    const boundary = async () => {
      const a = engine.readCounters();
      const body = await telemetry.scrape();
      const t = scrapeNow;
      const b = engine.readCounters();
      const ba = busyNs(a.words);
      const bb = busyNs(b.words);
      const f = b.nowNs > a.nowNs ? (t - a.nowNs) / (b.nowNs - a.nowNs) : 0;
      const ours = new Array<number>(nW).fill(NaN);
      for (const m of body.matchAll(/^cuzk_gpu_worker_busy_seconds_total\{gpu="\d+",worker="(\d+)"\} (\S+)$/gm)) ours[Number(m[1])] = Number(m[2]);
      bounds.push({ t, ours, truth: ba.map((x, w) => (x + (bb[w] - x) * f) / 1e9) });
    };
    const minuteMs = MINUTE * 1000 * scale;
    const minutes = Math.floor(boxSeconds / MINUTE);
    const t0 = Date.now();
    await boundary();
    for (let i = 1; i <= minutes; i++) {
      const wait = t0 + i * minuteMs - Date.now();
      if (wait > 0) await sleep(wait);
      await boundary();
    }
    clearInterval(poll);
    stopped = true;
    await telemetry.shutdown();
    await engine.close();
    if (engine.stats.dropped > 0) throw new Error('accuracy: events were dropped');

    // 5-minute windows of consecutive boundaries.
    const errOurs: number[] = [];
    const err1: number[] = [];
    const err15: number[] = [];
    const truths: number[] = [];
    let windows = 0;
    for (let i = 0; i + WINDOW_MINUTES < bounds.length; i += WINDOW_MINUTES) {
      const A = bounds[i];
      const B = bounds[i + WINDOW_MINUTES];
      const dt = (B.t - A.t) / 1e9;
      const inWin = samples.filter((s) => s.t >= A.t && s.t < B.t);
      windows++;
      for (let w = 0; w < nW; w++) {
        const truth = (B.truth[w] - A.truth[w]) / dt;
        truths.push(truth * 100);
        errOurs.push(Math.abs((B.ours[w] - A.ours[w]) / dt - truth) * 100);
        err1.push(Math.abs(mean(inWin.map((s) => s.busy[w])) - truth) * 100);
        for (let ph = 0; ph < 15; ph++) {
          const sub = inWin.filter((_, k) => k % 15 === ph);
          if (sub.length > 0) err15.push(Math.abs(mean(sub.map((s) => s.busy[w])) - truth) * 100);
        }
      }
    }
    // Whole minutes that look idle to a 15 s poller although the worker was busy in them.
    let busyMinutes = 0;
    let idleLooking = 0;
    for (let i = 0; i + 1 < bounds.length; i++) {
      const A = bounds[i];
      const B = bounds[i + 1];
      const inMin = samples.filter((s) => s.t >= A.t && s.t < B.t);
      for (let w = 0; w < nW; w++) {
        if (B.truth[w] - A.truth[w] <= 0) continue;
        for (let ph = 0; ph < 15; ph++) {
          const sub = inMin.filter((_, k) => k % 15 === ph);
          if (sub.length === 0) continue;
          busyMinutes++;
          if (sub.every((s) => s.busy[w] === 0)) idleLooking++;
        }
      }
    }
    agg.ours.push(errOurs);
    agg.g1.push(err1);
    agg.g15.push(err15);
    agg.truth.push(mean(truths));
    agg.windows.push(windows);
    agg.idle.push((idleLooking / Math.max(1, busyMinutes)) * 100);
    log(
      `accuracy run ${r + 1}/${runs}: ${windows} windows x ${nW} workers, true utilisation ${mean(truths).toFixed(1)} %; mean |error| ours ${mean(errOurs).toFixed(4)} pp, ` +
        `1 s gauge ${mean(err1).toFixed(2)} pp, 15 s gauge ${mean(err15).toFixed(2)} pp (p95 ${quantile(err15, 0.95).toFixed(1)}); idle-looking minutes ${agg.idle[r].toFixed(1)} % (${samples.length} polls, ${((Date.now() - t0) / 1000).toFixed(1)} s)`,
    );
  }
  const errFig = (xs: number[][]): MethodError => ({
    meanAbs: figure('pp', xs.map((x) => mean(x)), 3),
    p95Abs: figure('pp', xs.map((x) => quantile(x, 0.95)), 3),
    maxAbs: figure('pp', xs.map((x) => Math.max(...x)), 3),
    estimatesPerRun: figure('estimates', xs.map((x) => x.length), 4),
  });
  return {
    method:
      `Sim engine ${GPUS} GPUs x ${WPG} workers, SnapDeals-like partitions (GPU 0.6 s, synthesis 9.2 s, jitter +-25 %), time_scale ${scale} (1 box-second = ${1000 * scale} ms). ` +
      'Per worker and 5-minute window: ours = increase of cuzk_gpu_worker_busy_seconds_total between /metrics scrapes / time between them; ' +
      'gauge = mean of the worker state in the native /status JSON polled every 1 box-second (15 s: every 15th poll, all 15 phases); ' +
      'truth = native busy-ns counters bracketing each scrape, interpolated to its clock reading. Errors are |estimate - truth| in percentage points.',
    runs,
    gpus: GPUS,
    workersPerGpu: WPG,
    timeScale: scale,
    windowBoxSeconds: WINDOW_MINUTES * MINUTE,
    windowsPerRun: figure('windows', agg.windows, 4),
    trueUtilisation: figure('%', agg.truth, 3),
    ours: errFig(agg.ours),
    gauge1s: errFig(agg.g1),
    gauge15s: errFig(agg.g15),
    idleLookingMinutes15s: figure('%', agg.idle, 3),
  };
}
