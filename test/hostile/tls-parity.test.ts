/**
 * Issue 12, case 8: behave like the exporter-toolkit where operators reuse a node_exporter
 * web config. Live server, real TLS with a throwaway CA made here (pki.ts), real bcrypt.
 *  - /-/healthy is behind basic auth (the toolkit wraps every path);
 *  - RequireAnyClientCert / VerifyClientCertIfGiven / client_allowed_sans refuse the
 *    connection at the handshake (no HTTP answer at all), never a per-request 403;
 *  - `Basic` is matched case-insensitively (Go's Request.BasicAuth);
 *  - plain HTTP to the TLS port gets Go's 400 answer;
 *  - min_version / max_version / cipher_suites take effect;
 *  - certificates and the web config are re-read when the files change (no restart), and
 *    a broken edit keeps the last good config (counted, logged once).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tls from 'node:tls';
import bcrypt from 'bcryptjs';
import { find, parse } from '../helpers/prom-text';
import { Pki } from './pki';
import { basic, outcome, rawExchange, request, startWeb, tempDir, until, Web } from './web-helpers';

const dir = tempDir('cuzk-tls-');
const pki = new Pki(path.join(dir, 'pki'));
const serverPair = pki.issue('server', ['DNS:localhost', 'IP:127.0.0.1']);
const clientOk = pki.issue('client', ['DNS:scraper.example', 'IP:10.0.0.7']);
const clientOtherSan = pki.issue('client2', ['DNS:someone-else.example']);
const selfSigned = pki.issue('rogue', ['DNS:scraper.example'], { selfSigned: true });
const HASH = bcrypt.hashSync('s3cret', 4);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const ca = fs.readFileSync(pki.ca.cert);
const asClient = (p?: { cert: string; key: string }) => ({ ca, ...(p ? { cert: fs.readFileSync(p.cert), key: fs.readFileSync(p.key) } : {}) });
const tlsYaml = (extra = '') => `tls_server_config:\n  cert_file: ${serverPair.cert}\n  key_file: ${serverPair.key}\n${extra}`;

async function withWeb(yaml: string, f: (w: Web) => Promise<void>): Promise<void> {
  const w = await startWeb(tempDir('cuzk-tlsw-'), yaml);
  try {
    await f(w);
  } finally {
    await w.close();
  }
}

test('/-/healthy is behind basic auth, as every path behind the toolkit; "Basic" in any case', () =>
  withWeb(tlsYaml() + `basic_auth_users:\n  prom: '${HASH}'\n`, async (w) => {
    const u = `${w.server.url}/-/healthy`;
    expect((await request(u, asClient())).status).toBe(401);
    for (const scheme of ['Basic', 'basic', 'BASIC', 'bAsIc']) {
      const auth = `${scheme} ${Buffer.from('prom:s3cret').toString('base64')}`;
      expect([scheme, (await request(u, { ...asClient(), headers: { Authorization: auth } })).status]).toEqual([scheme, 200]);
    }
    // Not base64 as Go's decoder reads it (no padding): refused.
    expect((await request(u, { ...asClient(), headers: { Authorization: 'Basic cHJvbTpzM2NyZXQ' } })).status).toBe(401);
    expect((await request(`${w.server.url}/metrics`, { ...asClient(), headers: { Authorization: basic('prom', 's3cret') } })).status).toBe(200);
  }));

test('RequireAnyClientCert: no certificate fails the connection (no HTTP answer); any certificate passes', () =>
  withWeb(tlsYaml('  client_auth_type: RequireAnyClientCert\n'), async (w) => {
    const u = `${w.server.url}/metrics`;
    expect(typeof (await outcome(u, asClient()))).toBe('string'); // a connection error, not a status
    expect(await outcome(u, asClient(selfSigned))).toBe(200);
    expect(await outcome(u, asClient(clientOk))).toBe(200);
  }));

test('VerifyClientCertIfGiven: none is fine, a CA-signed one is fine, an untrusted one fails the connection', () =>
  withWeb(tlsYaml(`  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ${pki.ca.cert}\n`), async (w) => {
    const u = `${w.server.url}/metrics`;
    expect(await outcome(u, asClient())).toBe(200);
    expect(await outcome(u, asClient(clientOk))).toBe(200);
    expect(typeof (await outcome(u, asClient(selfSigned)))).toBe('string');
  }));

test('RequireAndVerifyClientCert with client_allowed_sans: only a certificate with an allowed SAN gets in', () =>
  withWeb(tlsYaml(`  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ${pki.ca.cert}\n  client_allowed_sans: ["scraper.example"]\n`), async (w) => {
    const u = `${w.server.url}/metrics`;
    expect(await outcome(u, asClient(clientOk))).toBe(200);
    expect(typeof (await outcome(u, asClient(clientOtherSan)))).toBe('string');
    expect(typeof (await outcome(u, asClient()))).toBe('string');
    expect(typeof (await outcome(u, asClient(selfSigned)))).toBe('string');
  }));

test('plain HTTP to the TLS port is answered like Go: 400 "Client sent an HTTP request to an HTTPS server."', () =>
  withWeb(tlsYaml(), async (w) => {
    for (const method of ['GET /metrics', 'HEAD /', 'POST /x', 'PUT /y', 'OPTIONS *']) {
      const reply = await rawExchange(w.server.port, `${method} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect([method, reply]).toEqual([method, 'HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n']);
    }
    // Not HTTP and not TLS: the handshake fails, nothing is answered.
    expect(await rawExchange(w.server.port, 'hello there\r\n')).toBe('');
    // The TLS port still serves TLS.
    expect(await outcome(`${w.server.url}/metrics`, asClient())).toBe(200);
  }));

function handshake(port: number, opts: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve) => {
    const s = tls.connect({ port, host: '127.0.0.1', ca, servername: 'localhost', ...opts }, () => {
      const v = `${s.getProtocol()} ${s.getCipher().name}`;
      s.end();
      resolve(v);
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(`error ${e.code ?? e.message}`));
  });
}

test('min_version / max_version / cipher_suites take effect', async () => {
  await withWeb(tlsYaml('  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n'), async (w) => {
    expect(await handshake(w.server.port, {})).toBe('TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384');
    expect(await handshake(w.server.port, { minVersion: 'TLSv1.3' })).toMatch(/^error/);
    expect(await handshake(w.server.port, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' })).toMatch(/^error/);
  });
  await withWeb(tlsYaml('  min_version: TLS13\n'), async (w) => {
    expect(await handshake(w.server.port, {})).toMatch(/^TLSv1\.3 /);
    expect(await handshake(w.server.port, { maxVersion: 'TLSv1.2' })).toMatch(/^error/);
  });
});

test('certificates and the web config are re-read when they change; a broken edit keeps the last good one', async () => {
  const d = tempDir('cuzk-rot-');
  const cert = path.join(d, 'tls.crt');
  const key = path.join(d, 'tls.key');
  fs.copyFileSync(serverPair.cert, cert);
  fs.copyFileSync(serverPair.key, key);
  const yaml = (hash: string) => `tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  prom: '${hash}'\n`;
  fs.writeFileSync(path.join(d, 'web.yml'), yaml(HASH));
  const w = await startWeb(d, yaml(HASH));
  try {
    const u = `${w.server.url}/metrics`;
    const auth = (p: string) => ({ ...asClient(), headers: { Authorization: basic('prom', p) } });
    const first = await request(u, auth('s3cret'));
    expect(first.status).toBe(200);
    // Rotate: a new certificate and key under the same names (a renewal).
    const renewed = pki.issue('server-renewed', ['DNS:localhost', 'IP:127.0.0.1']);
    fs.copyFileSync(renewed.key, key);
    fs.copyFileSync(renewed.cert, cert);
    const want = new (await import('node:crypto')).X509Certificate(fs.readFileSync(renewed.cert)).fingerprint256;
    await until('the renewed certificate is served', async () => (await request(u, auth('s3cret'))).serverCert === want);
    // A new password in the file: picked up without a signal.
    fs.writeFileSync(path.join(d, 'web.yml'), yaml(bcrypt.hashSync('rotated', 4)));
    await until('the new password works', async () => (await request(u, auth('rotated'))).status === 200);
    expect((await request(u, auth('s3cret'))).status).toBe(401);
    // A broken edit: the last good config stays, counted once, one log line.
    fs.writeFileSync(path.join(d, 'web.yml'), 'basic_auth_users: [oops\n');
    await until('the reload failure is counted', async () => {
      const body = (await request(u, auth('rotated'))).body;
      return find(parse(body), 'cuzk_exporter_errors_total', { reason: 'web_config' }) === 1;
    });
    expect((await request(u, auth('rotated'))).status).toBe(200);
    expect(w.logs.filter((l) => l.includes('web config reload failed'))).toHaveLength(1);
    // SIGHUP's path (reloadWebConfig) reports the refusal too, and keeps serving.
    expect(w.server.reloadWebConfig()).toBe(false);
    expect((await request(u, auth('rotated'))).status).toBe(200);
  } finally {
    await w.close();
  }
});

test('rate_limit: a token bucket as the toolkit\'s (429 beyond the burst)', () =>
  withWeb('rate_limit:\n  interval: 1h\n  burst: 2\n', async (w) => {
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await request(`${w.server.url}/-/healthy`)).status);
    expect(codes).toEqual([200, 200, 429, 429]);
  }));
