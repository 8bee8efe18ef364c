/**
 * The serving edge: --web.config.file (TLS, basic auth, headers) in the exporter-toolkit
 * format, endpoint behaviour (405, 404, 500 on a failed collection), and OTLP push.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import { startServer } from '../../src/exporter/server';
import { Telemetry } from '../../src/exporter/telemetry';
import { loadWebConfig } from '../../src/exporter/web-config';
import { silentLogger } from '../../src/util/logger';
import { goldenSource } from '../helpers/golden-script';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-web-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}

function request(url: string, opts: https.RequestOptions = {}): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const mod = url.startsWith('https') ? https : http;
    const req = mod.request(url, opts, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A request with a raw, unparsed path, as a hostile client can send it. */
function rawGet(port: number, rawPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.end(`GET ${rawPath} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    let data = '';
    sock.on('data', (d) => (data += d));
    sock.on('end', () => resolve(data));
    sock.on('error', reject);
  });
}

describe('web config file', () => {
  test('rejects unknown keys, bad hashes and unreadable files with one readable message', () => {
    expect(() => loadWebConfig(write('a.yml', 'basic_auth_user:\n  x: y\n'))).toThrow(/unknown key "basic_auth_user"/);
    expect(() => loadWebConfig(write('b.yml', 'basic_auth_users:\n  alice: plaintext\n'))).toThrow(/basic_auth_users.alice: not a bcrypt hash/);
    expect(() => loadWebConfig(write('c.yml', 'tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n'))).toThrow(/cert_file: cannot read nope.crt: ENOENT/);
    expect(() => loadWebConfig(write('d.yml', 'tls_server_config: [1'))).toThrow(/not valid YAML/);
    expect(() => loadWebConfig(path.join(dir, 'missing.yml'))).toThrow(/cannot read: ENOENT/);
    expect(() => loadWebConfig(write('e.yml', 'http_server_config:\n  headers:\n    X-Bad: "a\\nb"\n'))).toThrow(/headers.X-Bad/);
    expect(() => loadWebConfig(write('f.yml', 'tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  client_auth_type: RequireAndVerifyClientCert\n'))).toThrow(/needs client_ca_file/);
  });

  test('TLS and basic auth: 401 without credentials, 200 with them, /-/healthy behind auth as in the exporter-toolkit', async () => {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1', '-keyout', path.join(dir, 'k.pem'), '-out', path.join(dir, 'c.pem')], { stdio: 'ignore' });
    const hash = bcrypt.hashSync('s3cret', 4);
    const cfg = loadWebConfig(
      write('web.yml', `tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\nbasic_auth_users:\n  prom: '${hash}'\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n`),
    );
    let telemetry!: Telemetry;
    const source = goldenSource((s) => (telemetry = new Telemetry(s, { version: 't', logger: silentLogger })));
    const server = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', webConfig: cfg, source, telemetry, logger: silentLogger, version: 't' });
    try {
      expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const opts = { rejectUnauthorized: false };
      const anon = await request(`${server.url}/metrics`, opts);
      expect(anon.status).toBe(401);
      expect(anon.headers['www-authenticate']).toContain('Basic');
      const wrong = await request(`${server.url}/metrics`, { ...opts, auth: 'prom:nope' });
      expect(wrong.status).toBe(401);
      const ok = await request(`${server.url}/metrics`, { ...opts, auth: 'prom:s3cret' });
      expect(ok.status).toBe(200);
      expect(ok.body).toContain('cuzk_gpu_worker_busy{gpu="0",worker="1"} 1');
      expect(ok.headers['x-frame-options']).toBe('deny');
      expect((await request(`${server.url}/-/healthy`, opts)).status).toBe(401);
      expect((await request(`${server.url}/-/healthy`, { ...opts, auth: 'prom:s3cret' })).status).toBe(200);
    } finally {
      await server.close();
      await telemetry.shutdown();
    }
  });
});

describe('endpoints', () => {
  test('405 for POST, 404 names the right paths, 500 (not 200) when the collection fails', async () => {
    let telemetry!: Telemetry;
    const source = goldenSource((s) => (telemetry = new Telemetry(s, { version: 't', logger: silentLogger })));
    const server = await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/custom', source, telemetry, logger: silentLogger, version: 't' });
    try {
      expect((await request(`${server.url}/custom`, { method: 'POST' })).status).toBe(405);
      // Paths that are not valid URLs must not take the process down.
      for (const raw of ['//', '///', '/\\', '//[']) {
        const reply = await rawGet(server.port, raw);
        expect([raw, reply.split('\r\n')[0]]).toEqual([raw, 'HTTP/1.1 404 Not Found']);
      }
      const nf = await request(`${server.url}/metrics`);
      expect(nf.status).toBe(404);
      expect(nf.body).toContain('/custom for metrics');
      expect((await request(`${server.url}/custom`)).status).toBe(200);
      // A source that cannot answer: the scrape must fail loudly.
      source.refresh = () => {
        throw new Error('engine went away');
      };
      const bad = await request(`${server.url}/custom`);
      expect(bad.status).toBe(500);
      expect(bad.body).toContain('engine went away');
      const page = await request(`${server.url}/`);
      expect(page.status).toBe(200);
      expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    } finally {
      await server.close();
      await telemetry.shutdown();
    }
  });
});

describe('OTLP push', () => {
  // Spawned, because the OTLP exporter loads its transport with a dynamic import(), which
  // jest's module sandbox does not support: this is the compiled CLI users run anyway.
  test('--otlp.endpoint pushes the same metrics to a collector', async () => {
    const received: string[] = [];
    let gotOne!: () => void;
    const arrived = new Promise<void>((r) => (gotOne = r));
    // The SDK exports a histogram once it has an observation: on a loaded machine the first
    // pushes (every 200 ms) can come before the first proof starts, so the push checked is
    // the first that has one (the producer's metrics are in every push).
    const withHistogram = () => received.find((b) => b.includes('cuzk_proof_queue_wait_seconds'));
    const collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        received.push(`${req.method} ${req.url} ${req.headers['content-type']} ${Buffer.concat(chunks).toString('latin1')}`);
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
        if (withHistogram()) gotOne();
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
    const port = (collector.address() as { port: number }).port;
    const cli = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');
    const child = spawn(process.execPath, [cli, 'run', '--web.listen-address', '127.0.0.1:0', '--engine.backend', 'sim', '--engine.time-scale', '0.01', '--otlp.endpoint', `http://127.0.0.1:${port}/v1/metrics`, '--otlp.interval', '200ms'], { stdio: 'ignore' });
    const exited = new Promise((r) => child.on('exit', r));
    try {
      await Promise.race([arrived, exited.then((code) => Promise.reject(new Error(`cuzk-exporter exited (${code}) before pushing`)))]);
      for (const b of received) expect(b).toMatch(/^POST \/v1\/metrics application\/json /);
      // Both the producer's gauges/counters and the SDK histograms are in the payload.
      expect(withHistogram()).toContain('cuzk_gpu_worker_busy_seconds_total');
      expect(withHistogram()).toContain('cuzk_proof_queue_wait_seconds');
    } finally {
      child.kill('SIGTERM');
      await exited;
      collector.close();
    }
  });
});
