/**
 * Issue 12, case 3 (a web config accepted, then every response broken) and the loader
 * half of case 8 (exporter-toolkit keys): the whole file is validated at load, so what
 * --config.check accepts cannot break the server later. Real certificates from a
 * throwaway CA (pki.ts).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import { loadWebConfig } from '../../src/exporter/web-config';
import { Pki } from './pki';
import { request, startWeb, tempDir } from './web-helpers';

const dir = tempDir('cuzk-webcfg-');
const pki = new Pki(path.join(dir, 'pki'));
const server = pki.issue('server', ['DNS:localhost', 'IP:127.0.0.1']);
const other = pki.issue('other', ['DNS:other']);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let n = 0;
function file(text: string): string {
  const p = path.join(dir, `w${++n}.yml`);
  fs.writeFileSync(p, text);
  return p;
}
const tlsBlock = (extra = '') => `tls_server_config:\n  cert_file: ${server.cert}\n  key_file: ${server.key}\n${extra}`;
const CLI = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');

describe('http_server_config.headers: the toolkit\'s five security headers only', () => {
  test.each(['Content-Length', 'Content-Type', 'Content-Encoding', 'Transfer-Encoding', 'Connection', 'Set-Cookie', 'WWW-Authenticate', 'Cache-Control', 'X-Custom'])(
    '%s cannot be configured (it would break or spoof every answer)',
    (h) => {
      expect(() => loadWebConfig(file(`http_server_config:\n  headers:\n    ${h}: "3"\n`))).toThrow(new RegExp(`headers\\.${h}: this header can not be configured`));
    },
  );
  test('enumerated values are checked; blank means unset; the rest are served', async () => {
    expect(() => loadWebConfig(file('http_server_config:\n  headers:\n    X-Frame-Options: allow\n'))).toThrow(/invalid value "allow" \(expected one of deny, sameorigin\)/);
    expect(() => loadWebConfig(file('http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n'))).toThrow(/expected one of nosniff/);
    const web = await startWeb(
      tempDir('cuzk-h-'),
      'http_server_config:\n  headers:\n    Strict-Transport-Security: max-age=31536000\n    X-Frame-Options: sameorigin\n    X-XSS-Protection: ""\n    Content-Security-Policy: "default-src \'none\'"\n',
    );
    try {
      const r = await request(`${web.server.url}/metrics`);
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toMatch(/^text\/plain/);
      expect(r.headers['strict-transport-security']).toBe('max-age=31536000');
      expect(r.headers['x-frame-options']).toBe('sameorigin');
      expect(r.headers['content-security-policy']).toBe("default-src 'none'");
      expect(r.body).toContain('cuzk_gpu_worker_busy{');
      expect(r.body.length).toBe(Number(r.headers['content-length'] ?? r.body.length));
    } finally {
      await web.close();
    }
  });
});

describe('basic_auth_users', () => {
  test.each(['basic_auth_users: {}\n', 'basic_auth_users:\n'])('%j means no authentication, as in the toolkit', async (yaml) => {
    const web = await startWeb(tempDir('cuzk-noauth-'), yaml);
    try {
      expect((await request(`${web.server.url}/metrics`)).status).toBe(200);
      expect((await request(`${web.server.url}/-/healthy`)).status).toBe(200);
    } finally {
      await web.close();
    }
  });
  test('hashes must be bcrypt with a cost of 4..31; duplicate users are a YAML error', () => {
    expect(() => loadWebConfig(file('basic_auth_users:\n  a: "$2y$03$' + 'a'.repeat(53) + '"\n'))).toThrow(/cost 3 is outside 4\.\.31/);
    const h = bcrypt.hashSync('x', 4);
    expect(() => loadWebConfig(file(`basic_auth_users:\n  a: '${h}'\n  a: '${h}'\n`))).toThrow(/not valid YAML: Map keys must be unique/);
    expect(() => loadWebConfig(file(`basic_auth_users:\n  a: 5\n`))).toThrow(/basic_auth_users.a: not a bcrypt hash/);
  });
});

describe('tls_server_config: certificates are checked as OpenSSL will use them', () => {
  test('a client_ca_file that holds no PEM certificate', () => {
    const bad = path.join(dir, 'ca.der');
    fs.writeFileSync(bad, fs.readFileSync(pki.ca.key)); // a key, not a certificate
    expect(() => loadWebConfig(file(tlsBlock(`  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ${bad}\n`)))).toThrow(/client_ca_file: no PEM certificate in it/);
    fs.writeFileSync(bad, 'not a certificate at all');
    expect(() => loadWebConfig(file(tlsBlock(`  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ${bad}\n`)))).toThrow(/no PEM certificate/);
    const broken = path.join(dir, 'ca-broken.pem');
    fs.writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    expect(() => loadWebConfig(file(tlsBlock(`  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ${broken}\n`)))).toThrow(/certificate 1 is not valid/);
  });
  test('a key that does not belong to the certificate', () => {
    expect(() => loadWebConfig(file(`tls_server_config:\n  cert_file: ${server.cert}\n  key_file: ${other.key}\n`))).toThrow(/the certificate and the key do not belong together/);
  });
  test('--config.check refuses the mismatch and the non-PEM CA (exit 2, one line)', () => {
    const mismatch = file(`tls_server_config:\n  cert_file: ${server.cert}\n  key_file: ${other.key}\n`);
    const r = spawnSync(process.execPath, [CLI, 'run', '--config.check', '--web.config.file', mismatch], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/do not belong together/);
    expect(r.stdout).not.toContain('configuration OK');
  });
  test('the toolkit rules: CA without a client-auth policy, SANs without a required certificate', () => {
    expect(() => loadWebConfig(file(tlsBlock(`  client_ca_file: ${pki.ca.cert}\n`)))).toThrow(/client_auth_type is NoClientCert/);
    expect(() => loadWebConfig(file(tlsBlock(`  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ${pki.ca.cert}\n  client_allowed_sans: [a]\n`)))).toThrow(/client_allowed_sans requires/);
    expect(() => loadWebConfig(file(tlsBlock('  client_auth_type: Sometimes\n')))).toThrow(/client_auth_type "Sometimes" is not one of/);
    expect(() => loadWebConfig(file(`tls_server_config:\n  cert_file: ${server.cert}\n`))).toThrow(/missing one of key or key_file/);
    expect(() => loadWebConfig(file(`tls_server_config:\n  cert_file: ${server.cert}\n  cert: "x"\n  key_file: ${server.key}\n`))).toThrow(/cert and cert_file: give one of them/);
  });
});

describe('every exporter-toolkit key is accepted (node_exporter web configs can be reused)', () => {
  test('versions TLS10..TLS13, cipher_suites, curve_preferences, prefer_server_cipher_suites, http2, rate_limit, inline PEM, RequireClientCert alias', () => {
    const c = loadWebConfig(
      file(
        `tls_server_config:\n  cert: |\n${fs.readFileSync(server.cert, 'utf8').replace(/^/gm, '    ')}\n  key: |\n${fs.readFileSync(server.key, 'utf8').replace(/^/gm, '    ')}\n` +
          `  client_auth_type: RequireClientCert\n  client_ca: |\n${fs.readFileSync(pki.ca.cert, 'utf8').replace(/^/gm, '    ')}\n` +
          '  client_allowed_sans: ["DNS:ignored", "client.example"]\n' +
          '  min_version: TLS10\n  max_version: TLS12\n' +
          '  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_AES_128_GCM_SHA256]\n' +
          '  curve_preferences: [X25519, CurveP256]\n  prefer_server_cipher_suites: false\n' +
          'http_server_config:\n  http2: false\n' +
          'rate_limit:\n  interval: 1m30s\n  burst: 5\n',
      ),
    );
    expect(c.tls).toMatchObject({ clientAuth: 'RequireAnyClientCert', minVersion: 'TLSv1', maxVersion: 'TLSv1.2', ecdhCurve: 'X25519:P-256', honorCipherOrder: false });
    expect(c.tls!.ciphers).toMatch(/:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384$/);
    expect(c.http2).toBe(false);
    expect(c.rateLimit).toEqual({ intervalMs: 90_000, burst: 5 });
    expect(c.warnings.join('\n')).toMatch(/min_version below TLS12 is accepted, but/);
    expect(loadWebConfig(file(tlsBlock('  min_version: TLS11\n'))).tls!.minVersion).toBe('TLSv1.1');
  });
  test('what the toolkit refuses, we refuse', () => {
    expect(() => loadWebConfig(file(tlsBlock('  min_version: TLS14\n')))).toThrow(/unknown TLS version "TLS14"/);
    expect(() => loadWebConfig(file(tlsBlock('  min_version: TLS13\n  max_version: TLS12\n')))).toThrow(/min_version is above max_version/);
    expect(() => loadWebConfig(file(tlsBlock('  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n')))).toThrow(/unknown cipher: TLS_RSA_WITH_RC4_128_SHA/);
    expect(() => loadWebConfig(file(tlsBlock('  curve_preferences: [CurveP999]\n')))).toThrow(/unknown curve: CurveP999/);
    expect(() => loadWebConfig(file('http_server_config:\n  http2: maybe\n'))).toThrow(/http2 must be true or false/);
    expect(() => loadWebConfig(file('rate_limit:\n  interval: soon\n'))).toThrow(/rate_limit.interval must be a duration/);
    expect(() => loadWebConfig(file('tls_server_config:\n  cert_fil: x\n'))).toThrow(/unknown key "tls_server_config.cert_fil"/);
  });
  test('tls_server_config without any certificate setting is plain HTTP, as the toolkit\'s IsEnabled', () => {
    expect(loadWebConfig(file('tls_server_config:\n  min_version: TLS13\n')).tls).toBeUndefined();
  });
});

describe('--web.telemetry-path must be a plain path (it is matched before any "?")', () => {
  test.each(['/m?x=1', '/m#x', '/a//b', '/a/../b', '/x%41', '/a b', 'metrics'])('%j is refused at --config.check (exit 2, one line)', (p) => {
    const r = spawnSync(process.execPath, [CLI, 'attach', '--config.check', '--cuzk.status-url', 'http://127.0.0.1:1/status', '--web.telemetry-path', p], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/--web.telemetry-path/);
  });
  test('a deeper plain path is fine', () => {
    const r = spawnSync(process.execPath, [CLI, 'attach', '--config.check', '--cuzk.status-url', 'http://127.0.0.1:1/status', '--web.telemetry-path', '/cuzk/metrics'], { encoding: 'utf8' });
    expect([r.status, r.stderr]).toEqual([0, '']);
  });
});
