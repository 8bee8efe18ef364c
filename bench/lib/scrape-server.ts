/**
 * One side of the scrape benchmark's loopback HTTP rows in a process of its own (issue 21):
 * our server (startServer) or the minimal prom-client server, over the same synthetic box
 * (bench/lib/synthetic-box.ts is deterministic, so every process builds the same state). The
 * bench process, where the in-process rows run and leave their garbage, and the load client
 * (load-client.ts) are other processes, so each server's event loop and heap hold only what
 * a real exporter's would; both implementations are measured the same way.
 *
 * Driven over IPC by ScrapeServer: answers { url } once listening, then { cpuMs } (this
 * process' CPU time, all threads) whenever sent 'cpu'; exits when the parent disconnects.
 */
import { fork, ChildProcess } from 'node:child_process';
import * as http from 'node:http';
import * as zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { GZIP_LEVEL } from '../../src/exporter/exposition';
import { startServer } from '../../src/exporter/server';
import { Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';
import { PromEquivalent, helpTexts } from './prom-equivalent';
import { SyntheticBox } from './synthetic-box';

export type ScrapeImpl = 'ours' | 'prom-client';

/** prom-client served as one would: OpenMetrics when asked (its own registry of that type), gzip when accepted. */
export function promServer(prom: PromEquivalent, promOm: PromEquivalent): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    const p = (req.headers.accept ?? '').includes('application/openmetrics-text') ? promOm : prom;
    p.scrape().then(
      (text) => {
        const headers: Record<string, string> = { 'Content-Type': p.contentType, 'Cache-Control': 'no-store' };
        let body: string | Buffer = text;
        if (/\bgzip\b/.test(req.headers['accept-encoding'] ?? '')) {
          body = zlib.gzipSync(text, { level: GZIP_LEVEL });
          headers['Content-Encoding'] = 'gzip';
        }
        res.writeHead(200, headers);
        res.end(body);
      },
      (e: Error) => {
        res.writeHead(500).end(e.message);
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      }),
    ),
  );
}

/** Builds the box and the server of `impl`, warms it up, and returns its /metrics URL. */
async function serve(impl: ScrapeImpl, gpus: number, workersPerGpu: number): Promise<string> {
  const source = new SyntheticBox({ gpus, workersPerGpu });
  const telemetry = new Telemetry(source, { version: 'bench', logger: silentLogger });
  if (impl === 'ours') {
    source.populate();
    for (let i = 0; i < 50; i++) await telemetry.scrape('openmetrics');
    const server = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', source, telemetry, logger: silentLogger, version: 'bench' });
    return `${server.url}/metrics`;
  }
  // As bench/scrape.ts sets it up: HELP texts from our output, histograms teed before populate.
  const help = helpTexts(await telemetry.scrape());
  const prom = new PromEquivalent(source.model, telemetry.info, () => source.nowNs(), help);
  const promOm = new PromEquivalent(source.model, telemetry.info, () => source.nowNs(), help, { openMetrics: true, jobId: (h) => source.jobId(h) });
  source.populate();
  for (let i = 0; i < 50; i++) await promOm.scrape();
  return (await promServer(prom, promOm)).url;
}

/** Parent side: a server process of `impl` for a box. */
export class ScrapeServer {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static async start(impl: ScrapeImpl, gpus: number, workersPerGpu: number): Promise<ScrapeServer> {
    const child = fork(__filename, ['--child', impl, String(gpus), String(workersPerGpu)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const url = await new Promise<string>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`scrape server (${impl}) exited (${code})`)));
      child.once('message', (m: { url?: string; error?: string }) => (m.url ? resolve(m.url) : reject(new Error(`scrape server (${impl}): ${m.error}`))));
    });
    child.removeAllListeners('exit');
    return new ScrapeServer(child, url);
  }

  /** The server process' CPU time so far (user + system, all its threads), ms. */
  cpuMs(): Promise<number> {
    return new Promise((resolve) => {
      this.child.once('message', (m: { cpuMs: number }) => resolve(m.cpuMs));
      this.child.send('cpu');
    });
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null || !this.child.connected) return resolve();
      this.child.once('exit', () => resolve());
      this.child.disconnect();
    });
  }
}

if (require.main === module && process.argv[2] === '--child') {
  const [impl, gpus, workers] = process.argv.slice(3);
  serve(impl as ScrapeImpl, Number(gpus), Number(workers)).then(
    (url) => process.send?.({ url }),
    (e: Error) => process.send?.({ error: e.message }),
  );
  process.on('message', (m) => {
    if (m === 'cpu') {
      const u = process.cpuUsage();
      process.send?.({ cpuMs: (u.user + u.system) / 1000 });
    }
  });
  process.on('disconnect', () => process.exit(0));
}
