/**
 * Freshness: how long after a native state change it is visible.
 *
 *  - push path (no scrape): a GPU worker taking a partition on a native thread (sim
 *    backend) -> the event wakes the blocking wait (koffi worker thread) -> drained and
 *    applied on the JS thread; latency = model clock at the applied batch minus the
 *    event's own native timestamp (the same CLOCK_MONOTONIC). Measured with the ingestion
 *    linger off (lingerMs 0): by default the engine drains at most once per 10 ms while
 *    something waits on the push path, once per 100 ms otherwise (bounded wake-ups, bench
 *    2), which delays only this background path — /metrics and /status drain before
 *    answering, so the two figures below are unaffected;
 *  - /metrics and /status: a proof is submitted (the engine stamps its JOB_QUEUED event),
 *    then a scraper on 127.0.0.1 asks at once; latency = native event timestamp -> the
 *    response's last byte, and the response is checked to contain the change
 *    (cuzk_exporter_events_total covers the event's sequence number; the /status
 *    pipelines list the job by its full id).
 */
import * as http from 'node:http';
import { DEFAULT_INGEST_LINGER_MS } from '../src/engine/sources/native/native-engine';
import { startServer, statusDocument } from '../src/exporter/server';
import { Telemetry } from '../src/exporter/telemetry';
import { silentLogger } from '../src/util/logger';
import { openEngine } from './lib/engine';
import { Dist, Figure, dist, figure, sleep } from './lib/stats';

export interface FreshnessOptions {
  runs?: number;
  /** Samples per kind (/metrics, /status, /-/healthy, in-process scrape, in-process status) per run. */
  samples?: number;
  /** Duration of the push-path workload per run, ms. */
  pushMs?: number;
  log?: (msg: string) => void;
}

interface Pair {
  p50: Figure;
  p99: Figure;
}

export interface FreshnessResult {
  method: string;
  runs: number;
  samples: number;
  pushPath: Pair & { samplesPerRun: Figure };
  /** Over loopback HTTP, to the response's last byte. */
  metrics: Pair;
  status: Pair;
  /** The same GET of /-/healthy after a change: the HTTP round trip alone (floor). */
  healthy: Pair;
  /** In-process, no HTTP: Telemetry.scrape() resolved / status document built. */
  metricsInProcess: Pair;
  statusInProcess: Pair;
  /** The exporter's ingestion linger by default (the push path here runs with it off); absent before issue 21. */
  defaultLingerMs?: number;
  /** Responses that did not reflect the change (must be 0). */
  stale: number;
  perRun: ({ push: Dist } & Record<Kind, Dist>)[];
}

const KINDS = ['metrics', 'status', 'healthy', 'metricsInProcess', 'statusInProcess'] as const;
type Kind = (typeof KINDS)[number];

function get(agent: http.Agent, url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`${url}: HTTP ${res.statusCode}`))));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

export async function benchFreshness(opts: FreshnessOptions = {}): Promise<FreshnessResult> {
  const runs = opts.runs ?? 3;
  const samples = opts.samples ?? 150;
  const pushMs = opts.pushMs ?? 2000;
  const log = opts.log ?? (() => {});
  const perRun: FreshnessResult['perRun'] = [];
  const pushCounts: number[] = [];
  let stale = 0;
  for (let r = 0; r < runs; r++) {
    const engine = openEngine({ backend: 'sim', gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2, time_scale: 0.001, finished_retention_ms: 100 }, { lingerMs: 0 });
    const telemetry = new Telemetry(engine, { version: 'bench', logger: silentLogger });
    const server = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', source: engine, telemetry, logger: silentLogger, version: 'bench' });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // Push path: worker-busy events from native threads, observed as each batch lands.
      const m = engine.model;
      const seen = new Float64Array(m.wBusy.length);
      const push: number[] = [];
      engine.onBatch = () => {
        const now = engine.now();
        for (let w = 0; w < m.wBusy.length; w++) {
          if (m.wBusy[w] && m.wSinceNs[w] > seen[w]) {
            push.push((now - m.wSinceNs[w]) / 1e6);
            seen[w] = m.wSinceNs[w];
          }
        }
      };
      const end = Date.now() + pushMs;
      const inFlight = new Set<number>();
      while (Date.now() < end) {
        while (inFlight.size < 2) {
          const job = engine.submit('snap-update');
          inFlight.add(job);
          const done = () => inFlight.delete(job);
          engine.awaitProof(job).then(done, done); // rejects only when the engine closes
        }
        await sleep(5);
      }
      engine.onBatch = null;
      pushCounts.push(push.length);

      // Scrape paths: a change made now, asked for at once.
      const seq0 = m.lastSeq - m.eventsTotal;
      const lat: Record<Kind, number[]> = { metrics: [], status: [], healthy: [], metricsInProcess: [], statusInProcess: [] };
      for (let i = 0; i < samples * KINDS.length; i++) {
        const kind = KINDS[i % KINDS.length];
        const rid = `fresh-${r}-${i}-${'x'.repeat(40)}`;
        const job = engine.submit('winning-post', { requestId: rid });
        const target = engine.readCounters().lastSeq; // >= the JOB_QUEUED event's seq
        let body = '';
        if (kind === 'metrics') body = await get(agent, `${server.url}/metrics`);
        else if (kind === 'status') body = await get(agent, `${server.url}/status`);
        else if (kind === 'healthy') await get(agent, `${server.url}/-/healthy`);
        else if (kind === 'metricsInProcess') body = await telemetry.scrape();
        else {
          engine.refresh();
          body = JSON.stringify(statusDocument(engine, 'bench'));
        }
        const done = engine.now();
        if (!m.jobs.has(job)) engine.refresh(); // /-/healthy does not drain; the event keeps its timestamp
        const ev = m.jobs.get(job);
        if (!ev) throw new Error('freshness: the job left the model before it was measured');
        lat[kind].push((done - ev.submittedNs) / 1e6);
        if (kind === 'metrics' || kind === 'metricsInProcess') {
          const mm = /^cuzk_exporter_events_total (\S+)$/m.exec(body);
          if (!mm || Number(mm[1]) + seq0 < target) stale++;
        } else if (kind !== 'healthy') {
          const doc = JSON.parse(body) as { pipelines?: { job_id: string }[] };
          if (!doc.pipelines?.some((p) => p.job_id === rid)) stale++;
        }
        await sleep(1 + (i % 3));
      }
      if (engine.stats.dropped > 0) throw new Error('freshness: events were dropped');
      perRun.push({ push: dist(push), ...(Object.fromEntries(KINDS.map((k) => [k, dist(lat[k])])) as Record<Kind, Dist>) });
      log(
        `freshness run ${r + 1}/${runs}: push p50 ${perRun[r].push.p50} ms p99 ${perRun[r].push.p99} ms (${push.length} events); ` +
          `/metrics p50 ${perRun[r].metrics.p50} p99 ${perRun[r].metrics.p99} ms; /status p50 ${perRun[r].status.p50} p99 ${perRun[r].status.p99} ms; ` +
          `HTTP floor (/-/healthy) p50 ${perRun[r].healthy.p50} p99 ${perRun[r].healthy.p99} ms; in-process scrape p99 ${perRun[r].metricsInProcess.p99} ms, status p99 ${perRun[r].statusInProcess.p99} ms`,
      );
    } finally {
      agent.destroy();
      await server.close();
      await telemetry.shutdown();
      await engine.close();
    }
  }
  const pair = (k: 'push' | Kind): Pair => ({ p50: figure('ms', perRun.map((x) => x[k].p50), 3), p99: figure('ms', perRun.map((x) => x[k].p99), 3) });
  return {
    method:
      'Sim engine, 1 GPU x 2 workers, time_scale 0.001. Push path: native worker-busy events -> model via the blocking wait (no scrape), latency from the event timestamp. ' +
      '/metrics, /status: submit a proof, then GET at once over keep-alive loopback from this process; latency from the JOB_QUEUED event timestamp to the last byte, response checked to contain the change. ' +
      'Also, in rotation: GET /-/healthy (the HTTP round trip alone) and the same collection in-process (Telemetry.scrape(), refresh + status document).',
    runs,
    samples,
    defaultLingerMs: DEFAULT_INGEST_LINGER_MS,
    pushPath: { ...pair('push'), samplesPerRun: figure('events', pushCounts) },
    metrics: pair('metrics'),
    status: pair('status'),
    healthy: pair('healthy'),
    metricsInProcess: pair('metricsInProcess'),
    statusInProcess: pair('statusInProcess'),
    stale,
    perRun,
  };
}
