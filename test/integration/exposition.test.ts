/**
 * The telemetry path over real HTTP (src/exporter/server.ts + exposition.ts): content
 * negotiation (0.0.4 unless OpenMetrics is asked for), gzip by Accept-Encoding with the
 * same metrics inside, `curl --compressed`, HEAD and errors as before, --web.compression
 * none; and exemplars in attach mode (job ids from the daemon's snapshots).
 */
import { execFile, spawnSync } from 'node:child_process';
import * as http from 'node:http';
import * as path from 'node:path';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { AttachSource } from '../../src/engine/sources/attach/attach-source';
import { Compression } from '../../src/exporter/exposition';
import { OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE } from '../../src/exporter/negotiate';
import { RunningServer, startServer } from '../../src/exporter/server';
import { Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';
import { idle, pipeline, proving, snapshot } from '../attach/snapshots';
import { goldenSource } from '../helpers/golden-script';
import { parse, promtoolCheckMetrics } from '../helpers/prom-text';

const PROMETHEUS_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
const PYTHON = '/usr/bin/python3';
const execFileP = promisify(execFile);
const CHECKER = path.join(__dirname, '..', 'helpers', 'openmetrics-check.py');

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
}

/** A request with exactly these headers (Node's http adds no Accept-Encoding of its own). */
function request(url: string, headers: Record<string, string>, method = 'GET'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, raw: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Samples without the one value that changes between collections. */
function samples(body: string): string[] {
  return body
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('cuzk_exporter_scrape_duration_seconds'))
    .sort();
}

async function goldenServer(compression?: Compression): Promise<{ server: RunningServer; telemetry: Telemetry; close(): Promise<void> }> {
  let telemetry!: Telemetry;
  const source = goldenSource((s) => {
    (s as unknown as { jobId(h: number): string }).jobId = (h) => `job-${h}-${'z'.repeat(40)}`;
    telemetry = new Telemetry(s, { version: '0.0.0-test', logger: silentLogger });
  });
  const server = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', compression, source, telemetry, logger: silentLogger, version: '0.0.0-test' });
  return { server, telemetry, close: async () => (await server.close(), await telemetry.shutdown()) };
}

describe('telemetry path: negotiation and compression', () => {
  let g: Awaited<ReturnType<typeof goldenServer>>;
  let url: string;
  beforeAll(async () => {
    g = await goldenServer();
    url = `${g.server.url}/metrics`;
  });
  afterAll(() => g.close());

  test('no Accept: text 0.0.4, exactly what the collection serialises, promtool-clean', async () => {
    const r = await request(url, {});
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe(TEXT_CONTENT_TYPE);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.headers.vary).toBe('Accept, Accept-Encoding');
    const body = r.raw.toString('utf8');
    expect(samples(body)).toEqual(samples(await g.telemetry.scrape('text')));
    expect(body).not.toContain('# EOF');
    const check = promtoolCheckMetrics(body);
    if (check.skipped) throw new Error(check.skipped);
    expect(check).toEqual({ ok: true, output: '' });
  });

  test("Prometheus' Accept header gets OpenMetrics with exemplars; a strict parser accepts it", async () => {
    const r = await request(url, { Accept: PROMETHEUS_ACCEPT });
    expect(r.headers['content-type']).toBe(OPENMETRICS_CONTENT_TYPE);
    const body = r.raw.toString('utf8');
    expect(body.endsWith('# EOF\n')).toBe(true);
    expect(body).toMatch(/^cuzk_partition_gpu_duration_seconds_bucket\{proof_kind="snap-update",le="0\.01"\} \d+ # \{job_id="job-1-z{40}",partition="0"\} 0\.01 \d+\.\d{3}$/m);
    const p = spawnSync(PYTHON, [CHECKER], { input: body, encoding: 'utf8' });
    expect(p.stderr).toBe('');
    expect(p.status).toBe(0);
    // Unknown types and wildcards: 0.0.4.
    for (const accept of ['application/json', '*/*', 'text/html;q=0.9, application/openmetrics-text;version=0.0.1']) {
      expect((await request(url, { Accept: accept })).headers['content-type']).toBe(TEXT_CONTENT_TYPE);
    }
  });

  test('Accept-Encoding gzip: Content-Encoding gzip carrying the same metrics, in both formats', async () => {
    for (const [accept, type] of [
      ['', TEXT_CONTENT_TYPE],
      [PROMETHEUS_ACCEPT, OPENMETRICS_CONTENT_TYPE],
    ]) {
      const headers: Record<string, string> = accept ? { Accept: accept } : {};
      const plain = await request(url, headers);
      const gz = await request(url, { ...headers, 'Accept-Encoding': 'gzip' });
      expect(gz.status).toBe(200);
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.headers['content-type']).toBe(type);
      const inflated = zlib.gunzipSync(gz.raw).toString('utf8');
      expect(samples(inflated)).toEqual(samples(plain.raw.toString('utf8')));
      expect(gz.raw.length).toBeLessThan(plain.raw.length / 3);
      // The whole body in one answer of known length: no chunked framing.
      for (const r of [plain, gz]) {
        expect(r.headers['content-length']).toBe(String(r.raw.length));
        expect(r.headers['transfer-encoding']).toBeUndefined();
      }
    }
    // Refused or not offered: identity.
    for (const ae of ['identity', 'gzip;q=0', 'br', 'identity;q=1, gzip;q=0.5']) {
      const r = await request(url, { 'Accept-Encoding': ae });
      expect([ae, r.headers['content-encoding']]).toEqual([ae, undefined]);
      expect(parse(r.raw.toString('utf8')).length).toBeGreaterThan(100);
    }
  });

  test('curl --compressed works (the way operators look at /metrics)', async () => {
    // Asynchronously: the server answers from this process.
    const r = await execFileP('curl', ['-sS', '--compressed', '-D', '-', '-H', `Accept: ${PROMETHEUS_ACCEPT}`, url], { encoding: 'utf8', timeout: 20_000 });
    expect(r.stderr).toBe('');
    const [head, body] = r.stdout.split('\r\n\r\n');
    expect(head).toMatch(/^content-encoding: gzip$/im);
    expect(head).toMatch(/^content-type: application\/openmetrics-text; version=1\.0\.0; charset=utf-8$/im);
    expect(body.endsWith('# EOF\n')).toBe(true);
    expect(samples(body)).toEqual(samples(await g.telemetry.scrape('openmetrics')));
  });

  test('HEAD: the same headers as GET, no body, gzip or not', async () => {
    for (const ae of ['gzip', '']) {
      const headers: Record<string, string> = ae ? { 'Accept-Encoding': ae } : {};
      const get = await request(url, headers);
      const head = await request(url, headers, 'HEAD');
      expect(head.status).toBe(200);
      expect(head.raw.length).toBe(0);
      for (const h of ['content-type', 'content-encoding', 'vary', 'cache-control']) expect([h, head.headers[h]]).toEqual([h, get.headers[h]]);
    }
  });

  test('a failed collection is a plain 500, never compressed, whatever the request accepts', async () => {
    const collection = g.telemetry.collection;
    g.telemetry.collection = () => Promise.reject(new Error('source exploded'));
    try {
      const r = await request(url, { Accept: PROMETHEUS_ACCEPT, 'Accept-Encoding': 'gzip' });
      expect(r.status).toBe(500);
      expect(r.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(r.headers['content-encoding']).toBeUndefined();
      expect(r.raw.toString('utf8')).toBe('collection failed: source exploded\n');
    } finally {
      g.telemetry.collection = collection;
    }
  });
});

test('--web.compression none: never gzip', async () => {
  const g = await goldenServer('none');
  try {
    const r = await request(`${g.server.url}/metrics`, { 'Accept-Encoding': 'gzip' });
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(parse(r.raw.toString('utf8')).length).toBeGreaterThan(100);
  } finally {
    await g.close();
  }
});

test('attach: exemplars carry the daemon job ids from its snapshots, whole', async () => {
  const source = new AttachSource({ url: 'http://127.0.0.1:9/status', pollIntervalMs: 1000, timeoutMs: 1000, maxBodyBytes: 1 << 20, logger: silentLogger });
  const telemetry = new Telemetry(source, { version: '0.0.0-test', logger: silentLogger });
  try {
    const A = 'ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50';
    const B = 'porep-f01234-s000777-3';
    const T0 = 5_000_000_000_000;
    source.applyBody(snapshot({ uptime: 100, workers: [idle(0, 0), idle(1, 0)] }), T0);
    source.applyBody(
      snapshot({
        uptime: 101,
        pipelines: [pipeline(A, 'snap-update', [['gpu', 9000, 100], ['synthesizing', null, null]]), pipeline(B, 'porep-c2', [['synthesizing', null, null]])],
        workers: [proving(0, 0, A, 0, 0.1), idle(1, 0)],
      }),
      T0 + 1e9,
    );
    source.applyBody(
      snapshot({
        uptime: 102,
        pipelines: [pipeline(A, 'snap-update', [['done', 9000, 1234], ['synth_done', 3100, null]]), pipeline(B, 'porep-c2', [['synth_done', 41000, null]])],
        workers: [idle(0, 0), idle(1, 0)],
      }),
      T0 + 2e9,
    );
    const om = await telemetry.scrape('openmetrics');
    expect(om).toMatch(new RegExp(`^cuzk_partition_gpu_duration_seconds_bucket\\{proof_kind="snap-update",le="2\\.0"\\} 1 # \\{job_id="${A}",partition="0"\\} 1\\.234 \\d+\\.\\d{3}$`, 'm'));
    expect(om).toMatch(new RegExp(`^cuzk_partition_synthesis_duration_seconds_bucket\\{proof_kind="porep-c2",le="80\\.0"\\} 1 # \\{job_id="${B}",partition="0"\\} 41 \\d+\\.\\d{3}$`, 'm'));
    const p = spawnSync(PYTHON, [CHECKER], { input: om, encoding: 'utf8' });
    expect(p.stderr).toBe('');
  } finally {
    await telemetry.shutdown();
  }
});
