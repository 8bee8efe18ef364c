/**
 * A bounded HTTP scrape client, run as a child process (so its CPU is not the server's
 * event loop): `concurrency` scrapers, each a keep-alive connection (as Prometheus keeps
 * one), issuing GETs back to back until `requests` responses have been read in full.
 * Latency is request start -> last body byte, in ms. Driven over IPC by LoadClient.
 * The scrapers run on raw sockets (bench/lib/raw-http-client.ts: next to no garbage, so
 * the client's own GC pauses stay out of the latencies); `client: 'http'` runs them on
 * Node's http client instead (the instrument before 2026-12-04, kept to compare the two).
 */
import { ChildProcess, fork } from 'node:child_process';
import * as http from 'node:http';
import { runRawJob } from './raw-http-client';

/**
 * What Prometheus sends with every scrape (its default Accept, as bench/fleet.ts, and gzip):
 * the exporters answer the format and encoding a real scraper gets (OpenMetrics, gzip).
 */
export const PROMETHEUS_HEADERS: Readonly<Record<string, string>> = {
  Accept: 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
  'Accept-Encoding': 'gzip',
};

export interface LoadJob {
  url: string;
  /** Request headers (e.g. PROMETHEUS_HEADERS); none by default. */
  headers?: Record<string, string>;
  requests: number;
  concurrency: number;
  warmup: number;
  /** Each scraper waits this long after a response before its next request (default 0: back to back). */
  intervalMs?: number;
  /** The scrapers' HTTP client: raw sockets (default) or Node's http.Agent. */
  client?: 'raw' | 'http';
}

export interface LoadResult {
  latenciesMs: number[];
  bytes: number;
  status: number[];
}

function get(agent: http.Agent, url: string, headers?: Record<string, string>): Promise<{ ms: number; bytes: number; status: number }> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = http.get(url, { agent, headers }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, bytes, status: res.statusCode ?? 0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

async function runJob(job: LoadJob): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency });
  try {
    for (let i = 0; i < job.warmup; i++) await get(agent, job.url, job.headers);
    const latenciesMs: number[] = [];
    const statuses = new Set<number>();
    let bytes = 0;
    let issued = 0;
    const worker = async () => {
      while (issued < job.requests) {
        issued++;
        const r = await get(agent, job.url, job.headers);
        latenciesMs.push(r.ms);
        statuses.add(r.status);
        bytes = r.bytes;
        if (job.intervalMs && issued < job.requests) await new Promise((resolve) => setTimeout(resolve, job.intervalMs));
      }
    };
    await Promise.all(Array.from({ length: job.concurrency }, worker));
    return { latenciesMs, bytes, status: [...statuses] };
  } finally {
    agent.destroy();
  }
}

/**
 * The client's young generation, MiB per semi-space (V8 flags of the child). The client is
 * the measuring instrument: each of its scavenges pauses every request in flight and reads
 * as server latency, for every server alike. Node's http client leaves ~50 KiB of garbage
 * per request, and V8 sizes a young generation by survival, which stays low here: left
 * alone the client scavenged about once per 150 requests (20 per 3000, as often as our
 * server; bench/lib/tail-probe.ts, issue 21), 0.5–9 ms each on the shared box. At 32 MiB
 * it scavenges ~4x less often, each pause no longer (a scavenge's cost is what survives).
 */
export const CLIENT_SEMI_SPACE_MB = 32;

/** Parent side: one child process reused for every job. */
export class LoadClient {
  private constructor(private readonly child: ChildProcess) {}

  static start(): LoadClient {
    const young = [`--min-semi-space-size=${CLIENT_SEMI_SPACE_MB}`, `--max-semi-space-size=${CLIENT_SEMI_SPACE_MB}`];
    const child = fork(__filename, ['--child'], { execArgv: [...process.execArgv, ...young], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    return new LoadClient(child);
  }

  run(job: LoadJob): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`load client exited (${code})`));
      this.child.once('exit', onExit);
      this.child.once('message', (m: LoadResult | { error: string }) => {
        this.child.off('exit', onExit);
        if ('error' in m) reject(new Error(`load client: ${m.error}`));
        else resolve(m);
      });
      this.child.send(job);
    });
  }

  stop(): void {
    if (this.child.connected) this.child.disconnect();
  }
}

if (require.main === module && process.argv.includes('--child')) {
  process.on('message', (job: LoadJob) => {
    (job.client === 'http' ? runJob(job) : runRawJob(job)).then(
      (r) => process.send?.(r),
      (e: Error) => process.send?.({ error: e.message }),
    );
  });
  process.on('disconnect', () => process.exit(0));
}
