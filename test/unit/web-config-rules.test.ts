/**
 * The --web.config.file rules of src/exporter/web-config.ts, table by table, in process and
 * fast (issue 23: the mutation suite for web-config.ts). Every expectation is from the
 * exporter-toolkit's web-configuration.md (the format) or the file's header comment (our
 * stricter rules), not read off the code: which keys exist, what turns TLS on, which
 * client-auth types need a CA, the version names, Go's cipher/curve names and their
 * OpenSSL spellings, Go's Request.BasicAuth and time.ParseDuration. Real certificates from
 * a throwaway CA (test/hostile/pki.ts). No server, no CLI, bcrypt only through a fake pool.
 */
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import nodeFs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import type { BcryptPool } from '../../src/exporter/bcrypt-pool';
import {
  BasicAuth,
  certificateSans,
  loadWebConfig,
  parseBasic,
  parseGoDuration,
  sanAllowed,
  secureContextOptions,
  TlsSettings,
  WebConfig,
  WebConfigHolder,
} from '../../src/exporter/web-config';
import { createLogger } from '../../src/util/logger';
import { Pki } from '../hostile/pki';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-webrules-'));
const pki = new Pki(path.join(dir, 'pki'));
const srv = pki.issue('server', ['DNS:localhost', 'IP:127.0.0.1']);
const other = pki.issue('other', ['DNS:other']);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let n = 0;
function write(text: string): string {
  const p = path.join(dir, `w${++n}.yml`);
  fs.writeFileSync(p, text);
  return p;
}
const load = (yaml: string): WebConfig => loadWebConfig(write(yaml));
/** The error a file is refused with (the test fails when it loads). */
function refusal(yaml: string): string {
  const f = write(yaml);
  try {
    loadWebConfig(f);
  } catch (e) {
    const m = (e as Error).message;
    expect(m.startsWith(`web config ${f}: `)).toBe(true);
    return m.slice(`web config ${f}: `.length);
  }
  throw new Error(`loaded: ${yaml}`);
}
const indent = (p: string) => fs.readFileSync(p, 'utf8').replace(/^/gm, '    ');
const tls = (extra = '') => `tls_server_config:\n  cert_file: ${srv.cert}\n  key_file: ${srv.key}\n${extra}`;
const HASH4 = '$2a$04$' + 'a'.repeat(53);

describe('parseGoDuration: Go time.ParseDuration, in ms', () => {
  test.each([
    ['0', 0],
    ['0s', 0],
    ['1s', 1000],
    ['500ms', 500],
    ['1m30s', 90_000],
    ['2h', 7_200_000],
    ['1h1m1s1ms', 3_661_001],
    ['1.5s', 1500],
    ['0.25m', 15_000],
    ['100us', 0.1],
    ['100µs', 0.1],
    ['2000000ns', 2],
  ])('%j = %d ms', (s, ms) => {
    expect(parseGoDuration(s)).toBeCloseTo(ms, 9);
  });
  test.each(['', '1', '00', 's', '1x', ' 1s', '1s ', '-1s', '+1s', '1.s', '.5s', '1 s', '1sm', '1S', 'x1s', '1s!'])('%j is not a duration', (s) => {
    expect(parseGoDuration(s)).toBeNull();
  });
});

describe('parseBasic: Go Request.BasicAuth', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  test.each([
    [`Basic ${b64('u:p')}`, ['u', 'p']],
    [`basic ${b64('u:p')}`, ['u', 'p']],
    [`BASIC ${b64('u:p')}`, ['u', 'p']],
    [`Basic ${b64('u:p:q')}`, ['u', 'p:q']],
    [`Basic ${b64(':')}`, ['', '']],
    [`Basic ${b64('ü:ß')}`, ['ü', 'ß']],
    [`Basic ${b64('ab:c')}`, ['ab', 'c']],
    [`Basic ${b64('abcd:')}`, ['abcd', '']],
    [`Basic ${b64('a?>:c')}`, ['a?>', 'c']],
  ] as [string, [string, string]][])('%j → %j', (h, want) => {
    expect(parseBasic(h)).toEqual(want);
  });
  test.each([
    undefined,
    '',
    'Basic',
    'Basic ',
    'Basi ',
    `Bearer ${b64('u:p')}`,
    // Six characters, then valid base64 of "u:p": only the scheme's name refuses these.
    `Token ${b64('u:p')}`,
    `Basic:${b64('u:p')}`,
    `Basic  ${b64('u:p')}`,
    `Basic${b64('u:p')}`,
    `Basic ${b64('up')}`,
    `Basic ${b64('ab:c').replace(/=+$/, '')}`,
    `Basic ${b64('ab:c')}=`,
    `Basic ${b64('ab:c')}====`,
    `Basic ${b64('ab:c').slice(1)}`,
    'Basic dTpw*A==',
    'Basic dT=w',
    `x${`Basic ${b64('u:p')}`}`,
    `Basic ${b64('u:p')}\n`,
    `Basic ${b64('u:p')}AAA=`.replace('AAA=', '-_-_'),
  ])('%j is not basic credentials', (h) => {
    expect(parseBasic(h)).toBeNull();
  });
});

describe('loadWebConfig: the file', () => {
  test('an empty file (or one with only a comment) is the defaults: no TLS, no users, HTTP/2 on, no headers', () => {
    for (const text of ['', '# nothing\n', '~\n']) {
      const f = write(text);
      const c = loadWebConfig(f);
      expect(c).toEqual({ file: path.resolve(f), headers: {}, http2: true, warnings: [], files: [path.resolve(f)] });
    }
  });
  test('a missing file, a directory, a file over 1 MiB', () => {
    const missing = path.join(dir, 'nope.yml');
    expect(() => loadWebConfig(missing)).toThrow(new RegExp(`^web config ${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: cannot read: ENOENT$`));
    expect(() => loadWebConfig(dir)).toThrow(`web config ${dir}: is a directory, not a regular file`);
    const big = write('#' + 'x'.repeat(1024 * 1024) + '\n');
    expect(() => loadWebConfig(big)).toThrow(`web config ${big}: larger than`);
    const justUnder = write('#' + 'x'.repeat(1024 * 1024 - 2) + '\n');
    expect(loadWebConfig(justUnder).tls).toBeUndefined();
  });
  test.each([
    ['- a\n- b\n', 'top level must be a mapping'],
    ['just text\n', 'top level must be a mapping'],
    ['42\n', 'top level must be a mapping'],
    ['tls_server_configs: {}\n', 'unknown key "tls_server_configs" (allowed: tls_server_config, http_server_config, basic_auth_users, rate_limit)'],
    ['a: 1\na: 2\n', 'not valid YAML: Map keys must be unique'],
    ['a: [1\n', 'not valid YAML: '],
    ['tls_server_config: [a]\n', 'tls_server_config must be a mapping'],
    ['tls_server_config: x\n', 'tls_server_config must be a mapping'],
    ['basic_auth_users: [a]\n', 'basic_auth_users must be a mapping of user to bcrypt hash'],
    ['http_server_config: 1\n', 'http_server_config must be a mapping'],
    ['http_server_config:\n  http3: true\n', 'unknown key "http_server_config.http3" (allowed: http2, headers)'],
    ['rate_limit: [1]\n', 'rate_limit must be a mapping'],
    ['rate_limit:\n  every: 1s\n', 'unknown key "rate_limit.every" (allowed: interval, burst)'],
  ])('%j: %s', (yaml, msg) => {
    expect(refusal(yaml).startsWith(msg)).toBe(true);
  });
  test('a YAML error is one line', () => {
    const m = refusal('a: [1\nb: {\n');
    expect(m).toMatch(/^not valid YAML: \S/);
    expect(m).not.toContain('\n');
  });
  test('nesting too deep for the parser is an error, not a crash', () => {
    expect(refusal('['.repeat(1000) + ']'.repeat(1000))).toBe('not valid YAML: nested too deeply (more than 64 levels)');
  });
  test('nesting is measured before parsing: 65 levels refused as too deep, 64 reach the parser and the rules', () => {
    // n levels: the top mapping, headers, and n - 2 flow lists.
    const deep = (n: number) => `headers:\n  X-A: ${'['.repeat(n - 2)}1${']'.repeat(n - 2)}\n`;
    expect(refusal(deep(65))).toBe('not valid YAML: nested too deeply (more than 64 levels)');
    expect(refusal(deep(64))).not.toContain('nested too deeply');
  });
  test('null sections are absent sections', () => {
    expect(load('tls_server_config:\nhttp_server_config:\nbasic_auth_users:\nrate_limit:\n')).toMatchObject({ headers: {}, http2: true, warnings: [] });
    const c = load('tls_server_config: ~\nhttp_server_config: ~\nbasic_auth_users: ~\nrate_limit: ~\n');
    expect([c.tls, c.basicAuthUsers, c.rateLimit, c.http2]).toEqual([undefined, undefined, undefined, true]);
  });
});

describe('http_server_config', () => {
  test('http2 true/false as given; null or absent is true; anything else refused', () => {
    expect(load('http_server_config:\n  http2: false\n').http2).toBe(false);
    expect(load('http_server_config:\n  http2: true\n').http2).toBe(true);
    expect(load('http_server_config:\n  http2:\n').http2).toBe(true);
    expect(load('http_server_config: {}\n').http2).toBe(true);
    expect(refusal('http_server_config:\n  http2: "false"\n')).toBe('http_server_config.http2 must be true or false');
    expect(refusal('http_server_config:\n  http2: 0\n')).toBe('http_server_config.http2 must be true or false');
  });
  test('the five toolkit headers, names matched case-insensitively and stored canonically', () => {
    const c = load(
      'http_server_config:\n  headers:\n    strict-transport-security: max-age=1\n    X-CONTENT-TYPE-OPTIONS: nosniff\n    x-frame-options: deny\n    X-XSS-Protection: "1; mode=block"\n    Content-Security-Policy: "default-src \'self\'"\n',
    );
    expect(c.headers).toEqual({
      'Strict-Transport-Security': 'max-age=1',
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'deny',
      'X-XSS-Protection': '1; mode=block',
      'Content-Security-Policy': "default-src 'self'",
    });
    expect(load('http_server_config:\n  headers:\n    X-Frame-Options: sameorigin\n').headers).toEqual({ 'X-Frame-Options': 'sameorigin' });
    expect(load('http_server_config:\n  headers:\n').headers).toEqual({});
    expect(load('http_server_config:\n  headers:\n    X-Frame-Options: ""\n    X-XSS-Protection:\n').headers).toEqual({});
    // A tab is allowed in a header value.
    expect(load('http_server_config:\n  headers:\n    X-XSS-Protection: "a\\tb ~"\n').headers).toEqual({ 'X-XSS-Protection': 'a\tb ~' });
  });
  test.each([
    ['headers: [a]', 'http_server_config.headers must be a mapping'],
    ['headers: x', 'http_server_config.headers must be a mapping'],
    ['headers:\n    Content-Type: text/html', 'http_server_config.headers.Content-Type: this header can not be configured (allowed: Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, Content-Security-Policy, as in the exporter-toolkit)'],
    ['headers:\n    X-Frame-Options: 1', 'http_server_config.headers.X-Frame-Options must be a string'],
    ['headers:\n    X-XSS-Protection: [a]', 'http_server_config.headers.X-XSS-Protection must be a string'],
    ['headers:\n    x-frame-options: DENY', 'http_server_config.headers.x-frame-options: invalid value "DENY" (expected one of deny, sameorigin)'],
    ['headers:\n    X-Content-Type-Options: sniff', 'http_server_config.headers.X-Content-Type-Options: invalid value "sniff" (expected one of nosniff)'],
    ['headers:\n    X-XSS-Protection: "a\\nb"', 'http_server_config.headers.X-XSS-Protection: value has characters not allowed in a header'],
    ['headers:\n    X-XSS-Protection: "a\\x7fb"', 'http_server_config.headers.X-XSS-Protection: value has characters not allowed in a header'],
    ['headers:\n    X-XSS-Protection: "é"', 'http_server_config.headers.X-XSS-Protection: value has characters not allowed in a header'],
    ['headers:\n    X-XSS-Protection: "\\x1f"', 'http_server_config.headers.X-XSS-Protection: value has characters not allowed in a header'],
  ])('%j: %s', (yaml, msg) => {
    expect(refusal(`http_server_config:\n  ${yaml}\n`)).toBe(msg);
  });
});

describe('basic_auth_users', () => {
  test('empty mapping: no authentication; users kept; $2x$/$2y$ read as $2b$ (same algorithm), $2a$/$2b$ as given', () => {
    expect(load('basic_auth_users: {}\n').basicAuthUsers).toBeUndefined();
    const tail = 'b'.repeat(53);
    const c = load(`basic_auth_users:\n  a: '$2a$04$${tail}'\n  b: '$2b$10$${tail}'\n  x: '$2x$31$${tail}'\n  y: '$2y$14$${tail}'\n`);
    expect([...c.basicAuthUsers!]).toEqual([
      ['a', `$2a$04$${tail}`],
      ['b', `$2b$10$${tail}`],
      ['x', `$2b$31$${tail}`],
      ['y', `$2b$14$${tail}`],
    ]);
  });
  test('cost 15..31 is accepted with a warning (seconds of CPU per login); 14 and below without', () => {
    const tail = './' + 'Z9'.repeat(25) + 'a';
    const c = load(`basic_auth_users:\n  slow: '$2b$15$${tail}'\n  ok: '$2b$14$${tail}'\n  max: '$2b$31$${tail}'\n`);
    expect(c.warnings).toEqual([
      'basic_auth_users.slow: bcrypt cost 15 makes every first login take seconds of CPU (10 is usual)',
      'basic_auth_users.max: bcrypt cost 31 makes every first login take seconds of CPU (10 is usual)',
    ]);
  });
  const NOT = (u: string) => `basic_auth_users.${u}: not a bcrypt hash (generate one with htpasswd -nBC 10 "" | tr -d ':\\n')`;
  test.each([
    ["u: '$2c$10$" + 'a'.repeat(53) + "'", NOT('u')],
    ["u: '$2$10$" + 'a'.repeat(53) + "'", NOT('u')],
    ["u: '$2b$1$" + 'a'.repeat(54) + "'", NOT('u')],
    ["u: '$2b$100$" + 'a'.repeat(52) + "'", NOT('u')],
    ["u: '$2b$10$" + 'a'.repeat(52) + "'", NOT('u')],
    ["u: '$2b$10$" + 'a'.repeat(54) + "'", NOT('u')],
    ["u: '$2b$10$" + 'a'.repeat(52) + "+'", NOT('u')],
    ["u: 'x$2b$10$" + 'a'.repeat(53) + "'", NOT('u')],
    ["u: '$2b$10$" + 'a'.repeat(53) + "\\n'".replace("\\n'", "'\n  v: 1"), NOT('v')],
    ['u: 5', NOT('u')],
    ['u: ~', NOT('u')],
    ["u: '$2b$03$" + 'a'.repeat(53) + "'", 'basic_auth_users.u: bcrypt cost 3 is outside 4..31'],
    ["u: '$2b$32$" + 'a'.repeat(53) + "'", 'basic_auth_users.u: bcrypt cost 32 is outside 4..31'],
    ["u: '$2b$00$" + 'a'.repeat(53) + "'", 'basic_auth_users.u: bcrypt cost 0 is outside 4..31'],
  ])('%j: %s', (yaml, msg) => {
    expect(refusal(`basic_auth_users:\n  ${yaml}\n`)).toBe(msg);
  });
  test('a newline after the hash is not a hash', () => {
    expect(refusal(`basic_auth_users:\n  u: "$2b$10$${'a'.repeat(53)}\\n"\n`)).toBe(NOT('u'));
  });
  test('cost 4 is the lowest accepted', () => {
    expect(load(`basic_auth_users:\n  u: '${HASH4}'\n`).basicAuthUsers!.get('u')).toBe(HASH4);
  });
  // The 10,000-user bound: test/unit/web-config-bounds.test.ts (parsing 10,000 YAML keys takes seconds).
});

describe('rate_limit', () => {
  test.each([
    ['interval: 1s\n  burst: 5', { intervalMs: 1000, burst: 5 }],
    ['interval: 100ms', { intervalMs: 100, burst: 0 }],
    ['interval: 1m\n  burst: 1000000', { intervalMs: 60_000, burst: 1_000_000 }],
    ['interval: 1ms\n  burst: 0', { intervalMs: 1, burst: 0 }],
    ['interval: 596h31m23.647s', { intervalMs: 2_147_483_647, burst: 0 }],
  ])('%j → %j', (yaml, want) => {
    expect(load(`rate_limit:\n  ${yaml}\n`).rateLimit).toEqual(want);
  });
  test.each(['interval: "0"\n  burst: 5', 'burst: 5', 'interval: ~', 'interval: 0s', 'interval: 0ns\n  burst: 3'])('%j: no limit (zero interval)', (yaml) => {
    expect(load(`rate_limit:\n  ${yaml}\n`).rateLimit).toBeUndefined();
  });
  test.each([
    ['interval: soon', 'rate_limit.interval must be a duration such as 100ms or 1s'],
    ['interval: 5', 'rate_limit.interval must be a duration such as 100ms or 1s'],
    ['interval: [1s]', 'rate_limit.interval must be a duration such as 100ms or 1s'],
    ['interval: 0', 'rate_limit.interval must be a duration such as 100ms or 1s'],
    ['interval: 1s\n  burst: -1', 'rate_limit.burst must be a whole number from 0 to 1000000'],
    ['interval: 1s\n  burst: 1.5', 'rate_limit.burst must be a whole number from 0 to 1000000'],
    ['interval: 1s\n  burst: "5"', 'rate_limit.burst must be a whole number from 0 to 1000000'],
    ['interval: 1s\n  burst: 1000001', 'rate_limit.burst must be a whole number from 0 to 1000000'],
    ['burst: -1', 'rate_limit.burst must be a whole number from 0 to 1000000'],
    ['interval: 596h31m23.648s', 'rate_limit.interval is longer than 24.8 days'],
    ['interval: 1000h', 'rate_limit.interval is longer than 24.8 days'],
  ])('%j: %s', (yaml, msg) => {
    expect(refusal(`rate_limit:\n  ${yaml}\n`)).toBe(msg);
  });
});

describe('tls_server_config: when TLS is on (the toolkit\'s IsEnabled)', () => {
  test.each(['min_version: TLS13', 'max_version: TLS12', 'cipher_suites: [TLS_AES_128_GCM_SHA256]', 'curve_preferences: [X25519]', 'prefer_server_cipher_suites: true', 'cert_file: ""', 'cert: ~'])(
    'only %j: plain HTTP',
    (yaml) => {
      expect(load(`tls_server_config:\n  ${yaml}\n`).tls).toBeUndefined();
    },
  );
  test.each([
    [`cert_file: ${srv.cert}`, ': missing one of key or key_file'],
    ['cert: x', ': missing one of key or key_file'],
    [`key_file: ${srv.key}`, ': missing one of cert or cert_file'],
    ['key: x', ': missing one of cert or cert_file'],
    [`client_ca_file: ${pki.ca.cert}`, ': missing one of cert or cert_file'],
    ['client_ca: x', ': missing one of cert or cert_file'],
    ['client_auth_type: RequireAnyClientCert', ': missing one of cert or cert_file'],
  ])('only setting %# turns TLS on (titles hold no temp paths: Stryker matches tests by name)', (yaml, msg) => {
    expect(refusal(`tls_server_config:\n  ${yaml}\n`)).toBe(`tls_server_config.${msg}`);
  });
  test('a plain config: defaults TLS 1.2..1.3, no client certificate, Node\'s ciphers and curves, server order', () => {
    const c = load(tls());
    expect(c.tls).toEqual({
      cert: fs.readFileSync(srv.cert),
      key: fs.readFileSync(srv.key),
      ca: undefined,
      clientAuth: 'NoClientCert',
      minVersion: 'TLSv1.2',
      maxVersion: 'TLSv1.3',
      ciphers: undefined,
      ecdhCurve: undefined,
      honorCipherOrder: true,
      clientAllowedSans: undefined,
    });
    expect(c.warnings).toEqual([]);
    expect(c.files).toEqual([c.file, srv.cert, srv.key]);
  });
  test('relative paths are relative to the config file\'s folder', () => {
    const sub = path.join(dir, 'rel');
    fs.mkdirSync(sub, { recursive: true });
    fs.copyFileSync(srv.cert, path.join(sub, 'c.pem'));
    fs.copyFileSync(srv.key, path.join(sub, 'k.pem'));
    fs.copyFileSync(pki.ca.cert, path.join(sub, 'ca.pem'));
    const f = path.join(sub, 'web.yml');
    fs.writeFileSync(f, 'tls_server_config:\n  cert_file: c.pem\n  key_file: ./k.pem\n  client_ca_file: ca.pem\n  client_auth_type: RequireAndVerifyClientCert\n');
    const c = loadWebConfig(path.relative(process.cwd(), f));
    expect(c.file).toBe(f);
    expect(c.files).toEqual([f, path.join(sub, 'c.pem'), path.join(sub, 'k.pem'), path.join(sub, 'ca.pem')]);
    expect(c.tls!.ca).toEqual(fs.readFileSync(pki.ca.cert));
    expect(c.tls!.clientAuth).toBe('RequireAndVerifyClientCert');
  });
  test('inline cert, key and client_ca', () => {
    const c = load(`tls_server_config:\n  cert: |\n${indent(srv.cert)}\n  key: |\n${indent(srv.key)}\n  client_ca: |\n${indent(pki.ca.cert)}\n  client_auth_type: VerifyClientCertIfGiven\n`);
    expect(c.tls!.cert.toString()).toBe(fs.readFileSync(srv.cert, 'utf8'));
    expect(c.tls!.key.toString()).toBe(fs.readFileSync(srv.key, 'utf8'));
    expect(c.tls!.ca!.toString()).toBe(fs.readFileSync(pki.ca.cert, 'utf8'));
    expect(c.files).toEqual([c.file]);
  });
  test.each([
    ['cert_file: 5', 'tls_server_config.cert_file must be a string'],
    ['key_file: [a]', 'tls_server_config.key_file must be a string'],
    ['cert: true', 'tls_server_config.cert must be a string'],
    ['key: 1', 'tls_server_config.key must be a string'],
    ['client_ca_file: {}', 'tls_server_config.client_ca_file must be a string'],
    ['client_ca: 2', 'tls_server_config.client_ca must be a string'],
    ['client_auth_type: 3', 'tls_server_config.client_auth_type must be a string'],
  ])('%j: %s', (yaml, msg) => {
    expect(refusal(`tls_server_config:\n  ${yaml}\n`)).toBe(msg);
  });
  test('unknown keys are refused, with the list of the toolkit\'s keys', () => {
    expect(refusal(tls('  cipher_suite: []\n'))).toBe(
      'unknown key "tls_server_config.cipher_suite" (allowed: cert_file, key_file, cert, key, client_ca_file, client_ca, client_auth_type, client_allowed_sans, min_version, max_version, cipher_suites, curve_preferences, prefer_server_cipher_suites)',
    );
  });
  test('each toolkit key is accepted', () => {
    const c = load(
      tls(
        `  client_ca_file: ${pki.ca.cert}\n  client_auth_type: RequireAndVerifyClientCert\n  client_allowed_sans: [a]\n  min_version: TLS12\n  max_version: TLS13\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n  curve_preferences: [CurveP256]\n  prefer_server_cipher_suites: true\n`,
      ),
    );
    expect(c.tls!.clientAllowedSans).toEqual(['a']);
    expect(c.tls!.honorCipherOrder).toBe(true);
  });
});

describe('tls_server_config: one of each pair, and which files', () => {
  test.each([
    [`cert_file: ${srv.cert}\n  cert: x\n  key_file: ${srv.key}`, 'tls_server_config.cert and cert_file: give one of them, not both'],
    [`cert_file: ${srv.cert}\n  key: x\n  key_file: ${srv.key}`, 'tls_server_config.key and key_file: give one of them, not both'],
    [`cert_file: ${srv.cert}\n  key_file: ${srv.key}\n  client_ca: x\n  client_ca_file: ${pki.ca.cert}\n  client_auth_type: RequireAnyClientCert`, 'tls_server_config.client_ca and client_ca_file: give one of them, not both'],
    [`cert_file: ${path.join(dir, 'none.pem')}\n  key_file: ${srv.key}`, `tls_server_config.cert_file: cannot read ${path.join(dir, 'none.pem')}: ENOENT`],
    [`cert_file: ${srv.cert}\n  key_file: ${path.join(dir, 'none.key')}`, `tls_server_config.key_file: cannot read ${path.join(dir, 'none.key')}: ENOENT`],
    [`cert_file: ${srv.cert}\n  key_file: ${srv.key}\n  client_ca_file: ${dir}\n  client_auth_type: RequireAnyClientCert`, `tls_server_config.client_ca_file: ${dir} is a directory, not a regular file`],
    [`cert_file: ${srv.key}\n  key_file: ${srv.key}`, 'tls_server_config.cert_file: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)'],
    [`cert: xx\n  key_file: ${srv.key}`, 'tls_server_config.cert: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)'],
    [`cert_file: ${srv.cert}\n  key_file: ${srv.cert}`, 'tls_server_config.key_file: not a valid PEM private key: '],
    [`cert_file: ${srv.cert}\n  key: nokey`, 'tls_server_config.key: not a valid PEM private key: '],
    [`cert_file: ${srv.cert}\n  key_file: ${other.key}`, "tls_server_config.: the certificate and the key do not belong together (the key does not match the certificate's public key)"],
    [`cert_file: ${srv.cert}\n  key_file: ${srv.key}\n  client_ca: nothing\n  client_auth_type: RequireAnyClientCert`, 'tls_server_config.client_ca: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)'],
    [`cert_file: ${srv.cert}\n  key_file: ${srv.key}\n  client_ca_file: ${srv.key}\n  client_auth_type: RequireAnyClientCert`, 'tls_server_config.client_ca_file: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)'],
  ])('pair or file case %# (no temp paths in the title)', (yaml, msg) => {
    expect(refusal(`tls_server_config:\n  ${yaml}\n`).startsWith(msg)).toBe(true);
  });
  test('a bad second certificate in the chain is named by its number', () => {
    const chain = path.join(dir, 'chain.pem');
    fs.writeFileSync(chain, fs.readFileSync(srv.cert, 'utf8') + '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    expect(refusal(`tls_server_config:\n  cert_file: ${chain}\n  key_file: ${srv.key}\n`)).toMatch(/^tls_server_config\.cert_file: certificate 2 is not valid: \S/);
  });
  test('a chain whose first certificate is the server\'s loads', () => {
    const chain = path.join(dir, 'chain-ok.pem');
    fs.writeFileSync(chain, fs.readFileSync(srv.cert, 'utf8') + fs.readFileSync(pki.ca.cert, 'utf8'));
    expect(load(`tls_server_config:\n  cert_file: ${chain}\n  key_file: ${srv.key}\n`).tls!.cert).toEqual(fs.readFileSync(chain));
  });
  test('a pair OpenSSL will not serve (a 512-bit RSA key: "key too small") is refused at load, with OpenSSL\'s reason', () => {
    // Everything before this check passes (a PEM certificate, its own key): only OpenSSL's
    // security level refuses it, and without the check the server would fail at its first
    // handshake, or a reload would hand the TLS server a context it cannot build.
    const k = path.join(dir, 'rsa512.key');
    const c = path.join(dir, 'rsa512.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:512', '-nodes', '-subj', '/CN=weak', '-days', '2', '-keyout', k, '-out', c], { stdio: 'ignore' });
    expect(refusal(`tls_server_config:\n  cert_file: ${c}\n  key_file: ${k}\n`)).toMatch(/^tls_server_config\.: OpenSSL refuses this configuration: \S.*key too small/);
  });
  test('an expired certificate loads, with a warning', () => {
    const now = Date.now();
    const spy = jest.spyOn(Date, 'now').mockReturnValue(now + 10 * 86_400_000);
    try {
      const c = load(tls());
      const validTo = new crypto.X509Certificate(fs.readFileSync(srv.cert)).validTo;
      expect(c.warnings).toEqual([`tls_server_config.: the certificate expired on ${validTo}`]);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('tls_server_config: validity and empty values', () => {
  // RFC 5280 §4.1.2.5: the validity period runs through notAfter inclusive, so a certificate
  // read at that very instant has not expired yet; one millisecond later it has.
  test.each([
    [0, []],
    [1, ['expired']],
  ])('read %d ms after notAfter: warnings %j', (afterMs, want) => {
    const validTo = new crypto.X509Certificate(fs.readFileSync(srv.cert)).validTo;
    const spy = jest.spyOn(Date, 'now').mockReturnValue(Date.parse(validTo) + afterMs);
    try {
      expect(load(tls()).warnings.map((w) => (w.includes('expired') ? 'expired' : w))).toEqual(want);
    } finally {
      spy.mockRestore();
    }
  });
  // The toolkit reads YAML into Go strings, where an empty value is the zero value: unset.
  test.each([['client_auth_type'], ['client_ca_file'], ['client_ca']])('%s: "" is unset (the defaults apply)', (key) => {
    const c = load(tls(`  ${key}: ''\n`));
    expect([c.tls!.clientAuth, c.tls!.ca]).toEqual(['NoClientCert', undefined]);
  });
});

describe('tls_server_config: client certificates', () => {
  const ca = `  client_ca_file: ${pki.ca.cert}\n`;
  test.each([
    ['NoClientCert', false, 'NoClientCert'],
    ['RequestClientCert', false, 'RequestClientCert'],
    ['RequestClientCert', true, 'RequestClientCert'],
    ['RequireAnyClientCert', false, 'RequireAnyClientCert'],
    ['RequireClientCert', false, 'RequireAnyClientCert'],
    ['RequireAnyClientCert', true, 'RequireAnyClientCert'],
    ['VerifyClientCertIfGiven', true, 'VerifyClientCertIfGiven'],
    ['RequireAndVerifyClientCert', true, 'RequireAndVerifyClientCert'],
  ])('%s (CA: %s) → %s', (type, withCa, want) => {
    const c = load(tls(`  client_auth_type: ${type}\n${withCa ? ca : ''}`));
    expect(c.tls!.clientAuth).toBe(want);
    expect(c.tls!.ca === undefined).toBe(!withCa);
  });
  test.each([
    ['  client_auth_type: VerifyClientCertIfGiven\n', "tls_server_config.client_auth_type VerifyClientCertIfGiven needs client_ca_file (the CA that signs your clients' certificates)"],
    ['  client_auth_type: RequireAndVerifyClientCert\n', "tls_server_config.client_auth_type RequireAndVerifyClientCert needs client_ca_file (the CA that signs your clients' certificates)"],
    [ca, 'tls_server_config.client_ca_file is set but client_auth_type is NoClientCert (the toolkit: "client CA\'s have been configured without a Client Auth Policy")'],
    [`${ca}  client_auth_type: NoClientCert\n`, 'tls_server_config.client_ca_file is set but client_auth_type is NoClientCert (the toolkit: "client CA\'s have been configured without a Client Auth Policy")'],
    ['  client_auth_type: requireanyclientcert\n', 'tls_server_config.client_auth_type "requireanyclientcert" is not one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert'],
  ])('client-auth case %# (no temp paths in the title)', (yaml, msg) => {
    expect(refusal(tls(yaml))).toBe(msg);
  });
  test('an inline client_ca counts as a CA too', () => {
    expect(load(tls(`  client_auth_type: VerifyClientCertIfGiven\n  client_ca: |\n${indent(pki.ca.cert)}\n`)).tls!.clientAuth).toBe('VerifyClientCertIfGiven');
    expect(refusal(tls(`  client_ca: |\n${indent(pki.ca.cert)}\n`))).toMatch(/^tls_server_config\.client_ca_file is set but client_auth_type is NoClientCert/);
  });
  test.each([
    ['RequireAnyClientCert', ''],
    ['RequireAndVerifyClientCert', ca],
  ])('client_allowed_sans with %s', (type, extra) => {
    expect(load(tls(`  client_auth_type: ${type}\n${extra}  client_allowed_sans: [a, "b"]\n`)).tls!.clientAllowedSans).toEqual(['a', 'b']);
  });
  test.each([
    ['NoClientCert', ''],
    ['RequestClientCert', ''],
    ['VerifyClientCertIfGiven', ca],
  ])('client_allowed_sans with %s is refused', (type, extra) => {
    expect(refusal(tls(`  client_auth_type: ${type}\n${extra}  client_allowed_sans: [a]\n`))).toBe(
      'tls_server_config.client_allowed_sans requires client_auth_type to be one of RequireAnyClientCert or RequireAndVerifyClientCert',
    );
  });
  test('an empty client_allowed_sans list still needs a required certificate; null is absent', () => {
    expect(refusal(tls('  client_allowed_sans: []\n'))).toMatch(/^tls_server_config\.client_allowed_sans requires/);
    expect(load(tls('  client_allowed_sans:\n')).tls!.clientAllowedSans).toBeUndefined();
  });
});

describe('tls_server_config: versions, ciphers, curves', () => {
  test.each([
    ['TLS10', 'TLS13', 'TLSv1', 'TLSv1.3', true],
    ['TLS11', 'TLS11', 'TLSv1.1', 'TLSv1.1', true],
    ['TLS12', 'TLS12', 'TLSv1.2', 'TLSv1.2', false],
    ['TLS13', 'TLS13', 'TLSv1.3', 'TLSv1.3', false],
    ['TLS10', 'TLS10', 'TLSv1', 'TLSv1', true],
  ])('min %s max %s → %s..%s (warning: %s)', (min, max, wmin, wmax, warn) => {
    const c = load(tls(`  min_version: ${min}\n  max_version: ${max}\n`));
    expect([c.tls!.minVersion, c.tls!.maxVersion]).toEqual([wmin, wmax]);
    expect(c.warnings).toEqual(
      warn
        ? [`tls_server_config.min_version below TLS12 is accepted, but this Node.js/OpenSSL ${process.versions.openssl} refuses TLS 1.0/1.1 at its default security level: clients still need TLS 1.2 or later`]
        : [],
    );
  });
  test('min only, max only: the other is the default', () => {
    expect(load(tls('  min_version: TLS13\n')).tls).toMatchObject({ minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' });
    expect(load(tls('  max_version: TLS12\n')).tls).toMatchObject({ minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' });
    expect(load(tls('  min_version: ~\n  max_version: ~\n')).tls).toMatchObject({ minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' });
  });
  test.each([
    ['  min_version: TLS13\n  max_version: TLS12\n', 'tls_server_config.min_version is above max_version'],
    ['  max_version: TLS11\n', 'tls_server_config.min_version is above max_version'],
    ['  min_version: TLS14\n', 'tls_server_config.min_version: unknown TLS version "TLS14" (TLS10, TLS11, TLS12 or TLS13)'],
    ['  max_version: 12\n', 'tls_server_config.max_version: unknown TLS version 12 (TLS10, TLS11, TLS12 or TLS13)'],
    ['  min_version: TLSv1.2\n', 'tls_server_config.min_version: unknown TLS version "TLSv1.2" (TLS10, TLS11, TLS12 or TLS13)'],
    ['  cipher_suites: TLS_AES_128_GCM_SHA256\n', 'tls_server_config.cipher_suites must be a list of strings'],
    ['  cipher_suites: [TLS_AES_128_GCM_SHA256, 1]\n', 'tls_server_config.cipher_suites must be a list of strings'],
    ['  curve_preferences: {a: 1}\n', 'tls_server_config.curve_preferences must be a list of strings'],
    ['  client_auth_type: RequireAnyClientCert\n  client_allowed_sans: [1]\n', 'tls_server_config.client_allowed_sans must be a list of strings'],
    ['  cipher_suites: [ECDHE-RSA-AES128-GCM-SHA256]\n', "tls_server_config.cipher_suites: unknown cipher: ECDHE-RSA-AES128-GCM-SHA256 (the names of Go's tls.CipherSuites(), e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)"],
    ['  curve_preferences: [P-256]\n', 'tls_server_config.curve_preferences: unknown curve: P-256 (CurveP256, CurveP384, CurveP521, X25519)'],
    ['  prefer_server_cipher_suites: "no"\n', 'tls_server_config.prefer_server_cipher_suites must be true or false'],
  ])('%j: %s', (yaml, msg) => {
    expect(refusal(tls(yaml))).toBe(msg);
  });
  const T13 = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256';
  test.each([
    ['[]', undefined],
    ['[TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256]', undefined],
    ['[TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA]', `${T13}:ECDHE-ECDSA-AES128-SHA`],
    ['[TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA]', `${T13}:ECDHE-ECDSA-AES256-SHA`],
    ['[TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA]', `${T13}:ECDHE-RSA-AES128-SHA`],
    ['[TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA]', `${T13}:ECDHE-RSA-AES256-SHA`],
    ['[TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]', `${T13}:ECDHE-ECDSA-AES128-GCM-SHA256`],
    ['[TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]', `${T13}:ECDHE-ECDSA-AES256-GCM-SHA384`],
    ['[TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]', `${T13}:ECDHE-RSA-AES128-GCM-SHA256`],
    ['[TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]', `${T13}:ECDHE-RSA-AES256-GCM-SHA384`],
    ['[TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256]', `${T13}:ECDHE-RSA-CHACHA20-POLY1305`],
    ['[TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256]', `${T13}:ECDHE-ECDSA-CHACHA20-POLY1305`],
    ['[TLS_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]', `${T13}:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256`],
  ])('cipher_suites %s → %s', (list, want) => {
    expect(load(tls(`  cipher_suites: ${list}\n`)).tls!.ciphers).toBe(want);
  });
  test.each([
    ['[]', undefined],
    ['[CurveP256]', 'P-256'],
    ['[CurveP384]', 'P-384'],
    ['[CurveP521]', 'P-521'],
    ['[X25519]', 'X25519'],
    ['[CurveP521, X25519, CurveP384]', 'P-521:X25519:P-384'],
  ])('curve_preferences %s → %s', (list, want) => {
    expect(load(tls(`  curve_preferences: ${list}\n`)).tls!.ecdhCurve).toBe(want);
  });
  test.each([
    ['', true],
    ['  prefer_server_cipher_suites: ~\n', true],
    ['  prefer_server_cipher_suites: true\n', true],
    ['  prefer_server_cipher_suites: false\n', false],
  ])('prefer_server_cipher_suites %j → honorCipherOrder %s', (yaml, want) => {
    expect(load(tls(yaml)).tls!.honorCipherOrder).toBe(want);
  });
  test.each([
    // Names every JavaScript object inherits are no TLS version, cipher or curve: refused by
    // name, as any unknown one (before: they passed the name check and reached OpenSSL, or
    // became "function Object() { [native code] }" in the cipher list).
    ['  min_version: toString\n', 'tls_server_config.min_version: unknown TLS version "toString" (TLS10, TLS11, TLS12 or TLS13)'],
    ['  max_version: constructor\n', 'tls_server_config.max_version: unknown TLS version "constructor" (TLS10, TLS11, TLS12 or TLS13)'],
    ['  cipher_suites: [constructor]\n', "tls_server_config.cipher_suites: unknown cipher: constructor (the names of Go's tls.CipherSuites(), e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)"],
    ['  curve_preferences: [hasOwnProperty]\n', 'tls_server_config.curve_preferences: unknown curve: hasOwnProperty (CurveP256, CurveP384, CurveP521, X25519)'],
  ])('an inherited name %j: %s', (yaml, msg) => {
    expect(refusal(tls(yaml))).toBe(msg);
  });
});

describe('secureContextOptions', () => {
  const base: TlsSettings = {
    cert: Buffer.from('c'),
    key: Buffer.from('k'),
    ca: Buffer.from('a'),
    clientAuth: 'NoClientCert',
    minVersion: 'TLSv1.2',
    maxVersion: 'TLSv1.3',
    honorCipherOrder: false,
  };
  test('cipher and curve lists only when configured', () => {
    expect(secureContextOptions(base)).toEqual({ cert: base.cert, key: base.key, ca: base.ca, minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3', honorCipherOrder: false });
    expect(Object.keys(secureContextOptions(base))).not.toContain('ciphers');
    expect(Object.keys(secureContextOptions(base))).not.toContain('ecdhCurve');
    expect(secureContextOptions({ ...base, ciphers: 'A:B', ecdhCurve: 'P-256', honorCipherOrder: true })).toEqual({
      cert: base.cert,
      key: base.key,
      ca: base.ca,
      minVersion: 'TLSv1.2',
      maxVersion: 'TLSv1.3',
      ciphers: 'A:B',
      ecdhCurve: 'P-256',
      honorCipherOrder: true,
    });
  });
});

describe('client certificate SANs (client_allowed_sans), compared as Go compares them', () => {
  const sanDir = path.join(dir, 'sans');
  fs.mkdirSync(sanDir, { recursive: true });
  const cnf = path.join(sanDir, 'req.cnf');
  fs.writeFileSync(
    cnf,
    '[req]\ndistinguished_name=dn\n[dn]\n[v3]\nsubjectAltName=@alt\n[alt]\nIP.1=::1\nIP.2=2001:db8::a:1\nIP.3=10.0.0.1\nDNS.1=a.example\nemail.1=x@y.example\nURI.1=spiffe://a/b\nURI.2=http://q/a,b\nDNS.2=x\n',
  );
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=sans', '-days', '2', '-keyout', path.join(sanDir, 'k.pem'), '-out', path.join(sanDir, 'c.pem'), '-extensions', 'v3', '-config', cnf], {
    stdio: 'ignore',
  });
  const cert = new crypto.X509Certificate(fs.readFileSync(path.join(sanDir, 'c.pem')));
  const noSans = new crypto.X509Certificate(fs.readFileSync(pki.ca.cert));

  test('every SAN kind, IPv6 written out in full lower case, a quoted value unquoted', () => {
    expect(certificateSans(cert)).toEqual(['0:0:0:0:0:0:0:1', '2001:db8:0:0:0:0:a:1', '10.0.0.1', 'a.example', 'x@y.example', 'spiffe://a/b', 'http://q/a,b', 'x']);
    expect(certificateSans(noSans)).toEqual([]);
  });
  test.each([
    [['::1'], true],
    [['0::1'], true],
    [['0:0:0:0:0:0:0:1'], true],
    [['0000:0000::0001'], true],
    [['::2'], false],
    [['1::'], false],
    [['2001:DB8::A:1'], true],
    [['2001:db8:0:0::a:1'], true],
    [['2001:db8::a:0:1'], false],
    [['2001:db8::'], false],
    [['10.0.0.1'], true],
    [['10.0.0.2'], false],
    [['a.example'], true],
    [['A.example'], false],
    [['x@y.example'], true],
    [['spiffe://a/b'], true],
    [['http://q/a,b'], true],
    [['"http://q/a,b"'], false],
    [['x'], true],
    [['nope', 'x'], true],
    [['nope'], false],
    [[], false],
  ])('allowed %j → %s', (allowed, want) => {
    expect(sanAllowed(cert, allowed)).toBe(want);
  });
  test('a certificate without SANs matches nothing', () => {
    expect(sanAllowed(noSans, ['test CA', ''])).toBe(false);
  });
  test('an IPv6 address ending in "::" compares by its full form', () => {
    const c2 = path.join(sanDir, 'v6.cnf');
    fs.writeFileSync(c2, '[req]\ndistinguished_name=dn\n[dn]\n[v3]\nsubjectAltName=IP:fe80::,IP:::\n');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=v6', '-days', '2', '-keyout', path.join(sanDir, 'k6.pem'), '-out', path.join(sanDir, 'c6.pem'), '-extensions', 'v3', '-config', c2], { stdio: 'ignore' });
    const c6 = new crypto.X509Certificate(fs.readFileSync(path.join(sanDir, 'c6.pem')));
    expect(certificateSans(c6)).toEqual(['fe80:0:0:0:0:0:0:0', '0:0:0:0:0:0:0:0']);
    expect(sanAllowed(c6, ['fe80::'])).toBe(true);
    expect(sanAllowed(c6, ['::'])).toBe(true);
    expect(sanAllowed(c6, ['fe80::1'])).toBe(false);
  });
  describe('odd SANs: a type name inside another entry, a DNS name spelled as an address, IPv4 inside IPv6', () => {
    const c3 = path.join(sanDir, 'odd.cnf');
    // An otherName (a Microsoft UPN) and a DirName whose texts hold "DNS:" and "URI:".
    fs.writeFileSync(
      c3,
      '[req]\ndistinguished_name=dn\n[dn]\n[v3]\nsubjectAltName=@alt\n[alt]\notherName.1=1.3.6.1.4.1.311.20.2.3;UTF8:DNS:allowed.example\nDNS.1=2001:db8::5\ndirName.1=dn1\nIP.1=::1\nIP.2=::ffff:1:0\nIP.3=1::ffff:0:1\nIP.4=::ffff:10.20.30.40\n[dn1]\nCN=URI:spiffe://x\n',
    );
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=odd', '-days', '2', '-keyout', path.join(sanDir, 'ko.pem'), '-out', path.join(sanDir, 'co.pem'), '-extensions', 'v3', '-config', c3], { stdio: 'ignore' });
    const odd = new crypto.X509Certificate(fs.readFileSync(path.join(sanDir, 'co.pem')));
    test('a DNS name is kept as written, even one that reads as an IPv6 address (Go lists DNSNames verbatim)', () => {
      expect(certificateSans(odd)).toContain('2001:db8::5');
      expect(certificateSans(odd)).not.toContain('2001:db8:0:0:0:0:0:5');
    });
    test('a type name inside another entry (an otherName "UPN:DNS:…", a DirName "CN=URI:…") is not a SAN of its own', () => {
      expect(odd.subjectAltName).toMatch(/^othername:UPN:DNS:allowed\.example, .*DirName:CN=URI:spiffe:\/\/x, /);
      expect(certificateSans(odd)).not.toContain('allowed.example');
      expect(certificateSans(odd)).not.toContain('spiffe://x');
    });
    test.each([
      // Go's toolkit matches DNS names, emails, IPs and URIs only: not text inside an otherName or a DirName.
      [['allowed.example'], false],
      [['spiffe://x'], false],
      // The DNS name "2001:db8::5" is not the address 2001:db8::5.
      [['2001:db8:0:0:0:0:0:5'], false],
      // Seven groups and a dotted IPv4 tail: the address ::ffff:1.2.3.4, not ::ffff:1:0.
      [['0:0:0:0:0:ffff:1.2.3.4'], false],
      [['::ffff:1:0'], true],
      [['::1'], true],
      // A dotted IPv4 tail is two groups: ::1.2.3.4 is ::102:304, not ::1.
      [['::1.2.3.4'], false],
      [['0:0:0:0:0:0:1.2.3.4'], false],
      // An IPv4-mapped address is its IPv4 address (Go writes ::ffff:0.1.0.0 as 0.1.0.0).
      [['0.1.0.0'], true],
      [['::ffff:0.1.0.0'], true],
      [['::ffff:0.1.0.1'], false],
      [['10.20.30.40'], true],
      [['::ffff:10.20.30.40'], true],
      [['::ffff:a14:1e28'], true],
      // 1::ffff:0:1 has ffff in the sixth group but is not IPv4-mapped (the first five are not all 0).
      [['0.0.0.1'], false],
      [['1:0:0:0:0:ffff:0:1'], true],
    ])('allowed %j → %s', (allowed, want) => {
      expect(sanAllowed(odd, allowed)).toBe(want);
    });
    test('the SANs: the DNS name as written, ::1 in full, an IPv4-mapped address as IPv4', () => {
      expect(certificateSans(odd)).toEqual(['2001:db8::5', '0:0:0:0:0:0:0:1', '0.1.0.0', '1:0:0:0:0:ffff:0:1', '10.20.30.40']);
    });
  });
});

/** A BcryptPool stand-in: answers are given by the test, calls are recorded. */
class FakePool {
  calls: [string, string][] = [];
  room = true;
  private waiting: ((ok: boolean) => void)[] = [];
  constructor(private readonly right: Map<string, string>) {}
  hasRoom(): boolean {
    return this.room;
  }
  compare(pass: string, hash: string): Promise<boolean> {
    this.calls.push([pass, hash]);
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  /** Answers every waiting comparison: true when the password is the one for that hash. */
  settle(): void {
    const w = this.waiting;
    const calls = this.calls.slice(-w.length);
    this.waiting = [];
    w.forEach((r, i) => r(this.right.get(calls[i][1]) === calls[i][0]));
  }
}

describe('BasicAuth: the toolkit\'s check, cached and bounded', () => {
  const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
  const H1 = '$2b$10$' + '1'.repeat(53);
  const H2 = '$2b$10$' + '2'.repeat(53);
  const setup = () => {
    const pool = new FakePool(new Map([[H1, 'pw1'], [H2, 'pw2']]));
    const auth = new BasicAuth(pool as unknown as BcryptPool, new Map([['alice', H1], ['bob', H2]]));
    return { pool, auth };
  };
  async function run(pool: FakePool, p: Promise<string>): Promise<string> {
    await Promise.resolve();
    pool.settle();
    return p;
  }

  test('no or malformed credentials: unauthorized without a comparison', async () => {
    const { pool, auth } = setup();
    expect(await auth.check(undefined)).toBe('unauthorized');
    expect(await auth.check('Bearer x')).toBe('unauthorized');
    expect(pool.calls).toEqual([]);
  });
  test('a password over 72 bytes is refused without a comparison; 72 bytes are compared', async () => {
    const { pool, auth } = setup();
    expect(await auth.check(basic('alice', 'é'.repeat(36) + 'x'))).toBe('unauthorized');
    expect(pool.calls).toEqual([]);
    expect(await run(pool, auth.check(basic('alice', 'é'.repeat(36))))).toBe('unauthorized');
    expect(pool.calls).toEqual([['é'.repeat(36), H1]]);
  });
  test('right password: ok, then cached (no second comparison); wrong: unauthorized, cached too', async () => {
    const { pool, auth } = setup();
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('ok');
    expect(await auth.check(basic('alice', 'pw1'))).toBe('ok');
    expect(await run(pool, auth.check(basic('alice', 'pw2')))).toBe('unauthorized');
    expect(await auth.check(basic('alice', 'pw2'))).toBe('unauthorized');
    expect(await run(pool, auth.check(basic('bob', 'pw2')))).toBe('ok');
    expect(pool.calls).toEqual([
      ['pw1', H1],
      ['pw2', H1],
      ['pw2', H2],
    ]);
  });
  test('an unknown user costs a comparison against a real hash, and is never ok (even with that hash\'s password)', async () => {
    const { pool, auth } = setup();
    expect(await run(pool, auth.check(basic('mallory', 'pw1')))).toBe('unauthorized');
    expect(pool.calls).toEqual([['pw1', H1]]);
    expect(await auth.check(basic('mallory', 'pw1'))).toBe('unauthorized');
    expect(pool.calls).toHaveLength(1);
  });
  test('identical credentials in flight share one comparison; different ones do not', async () => {
    const { pool, auth } = setup();
    const a = auth.check(basic('alice', 'pw1'));
    const b = auth.check(basic('alice', 'pw1'));
    const c = auth.check(basic('alice', 'nope'));
    await Promise.resolve();
    expect(pool.calls).toHaveLength(2);
    pool.settle();
    expect(await Promise.all([a, b, c])).toEqual(['ok', 'ok', 'unauthorized']);
  });
  test('a full queue: busy, without a comparison; a cached answer is still given', async () => {
    const { pool, auth } = setup();
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('ok');
    expect(await run(pool, auth.check(basic('bob', 'bad')))).toBe('unauthorized');
    pool.room = false;
    expect(await auth.check(basic('alice', 'pw1'))).toBe('ok');
    expect(await auth.check(basic('bob', 'bad'))).toBe('unauthorized');
    expect(await auth.check(basic('bob', 'pw2'))).toBe('busy');
    expect(pool.calls).toHaveLength(2);
  });
  test('after a comparison ends, the same credentials are answered from the cache, not the in-flight entry', async () => {
    const { pool, auth } = setup();
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('ok');
    pool.room = false;
    expect(await auth.check(basic('alice', 'pw1'))).toBe('ok');
  });
  test('a user whose hash changed is compared again (the cache key holds the hash)', async () => {
    const { pool, auth } = setup();
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('ok');
    auth.setUsers(new Map([['alice', H2]]));
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('unauthorized');
    expect(await run(pool, auth.check(basic('alice', 'pw2')))).toBe('ok');
    expect(pool.calls).toEqual([
      ['pw1', H1],
      ['pw1', H2],
      ['pw2', H2],
    ]);
    // A user removed: its cached success no longer lets it in.
    auth.setUsers(new Map([['bob', H1]]));
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('unauthorized');
  });
  test('a removed user\'s cached success (same hash still in use by another user) is not ok', async () => {
    const { pool, auth } = setup();
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('ok');
    // alice is gone; bob now has alice's old hash, the first hash: "alice" is compared against H1 again.
    auth.setUsers(new Map([['bob', H1]]));
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('unauthorized');
  });
  test('successes are kept apart from failures: 200 wrong passwords do not evict a success; the success cache holds 64, LRU', async () => {
    const { pool, auth } = setup();
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('ok');
    for (let i = 0; i < 200; i++) expect(await run(pool, auth.check(basic('alice', `wrong${i}`)))).toBe('unauthorized');
    const before = pool.calls.length;
    expect(await auth.check(basic('alice', 'pw1'))).toBe('ok');
    expect(pool.calls.length).toBe(before);
    // The failure cache holds the last 128: wrong199 is cached, wrong0 is not.
    pool.room = false;
    expect(await auth.check(basic('alice', 'wrong199'))).toBe('unauthorized');
    expect(await auth.check(basic('alice', 'wrong72'))).toBe('unauthorized');
    expect(await auth.check(basic('alice', 'wrong71'))).toBe('busy');
    expect(await auth.check(basic('alice', 'wrong0'))).toBe('busy');
  });
  test('the success cache: 64 entries, least recently used evicted first', async () => {
    const users = new Map<string, string>();
    const right = new Map<string, string>();
    for (let i = 0; i < 70; i++) {
      const h = '$2b$10$' + String(i).padStart(2, '0').repeat(27).slice(0, 53);
      users.set(`u${i}`, h);
      right.set(h, `p${i}`);
    }
    const pool = new FakePool(right);
    const auth = new BasicAuth(pool as unknown as BcryptPool, users);
    for (let i = 0; i < 64; i++) expect(await run(pool, auth.check(basic(`u${i}`, `p${i}`)))).toBe('ok');
    // u0 used again: now the most recent; u1 is the least recent.
    expect(await auth.check(basic('u0', 'p0'))).toBe('ok');
    expect(await run(pool, auth.check(basic('u64', 'p64')))).toBe('ok');
    pool.room = false;
    expect(await auth.check(basic('u0', 'p0'))).toBe('ok');
    expect(await auth.check(basic('u2', 'p2'))).toBe('ok');
    expect(await auth.check(basic('u63', 'p63'))).toBe('ok');
    expect(await auth.check(basic('u1', 'p1'))).toBe('busy');
  });
  test('user, hash and password stay apart in the cache key: a cached success is no other credential\'s (NUL in names and passwords)', async () => {
    // With one separator dropped, (u, H1, P) and each of the other two would hash alike: users
    // whose names hold a NUL and a hash would be let in with a wrong password on u's cached success.
    const P = `\0${H2}\0z`;
    const pool = new FakePool(new Map([[H1, P], [H2, 'pw2']]));
    const users = new Map([['u', H1], [`u${H1}\0\0`, H2], [`u\0${H1}`, H2]]);
    const auth = new BasicAuth(pool as unknown as BcryptPool, users);
    expect(await run(pool, auth.check(basic('u', P)))).toBe('ok');
    expect(await run(pool, auth.check(basic(`u${H1}\0\0`, 'z')))).toBe('unauthorized');
    expect(await run(pool, auth.check(basic(`u\0${H1}`, '\0z')))).toBe('unauthorized');
    expect(pool.calls).toEqual([[P, H1], ['z', H2], ['\0z', H2]]);
  });
  test('no two credentials share a cache entry, whatever NULs their user names and passwords hold', async () => {
    // "u\0H1\0" + NUL + H2 + NUL + "z" reads the same as "u" + NUL + H1 + NUL + (NUL H2 NUL "z").
    const P = `\0${H2}\0z`;
    const pool = new FakePool(new Map([[H1, P], [H2, 'pw2']]));
    const auth = new BasicAuth(pool as unknown as BcryptPool, new Map([['u', H1], [`u\0${H1}\0`, H2]]));
    expect(await run(pool, auth.check(basic('u', P)))).toBe('ok');
    expect(await run(pool, auth.check(basic(`u\0${H1}\0`, 'z')))).toBe('unauthorized');
    expect(pool.calls).toEqual([[P, H1], ['z', H2]]);
  });
  test('a user removed then added back with a hash another user shares: refused while gone, let in again once back', async () => {
    // alice and bob share H1 (one password given to two scrapers). While alice is gone her
    // check runs against bob's hash, the same H1: that failure must not outlive her return.
    const pool = new FakePool(new Map([[H1, 'pw1']]));
    const auth = new BasicAuth(pool as unknown as BcryptPool, new Map([['alice', H1], ['bob', H1]]));
    auth.setUsers(new Map([['bob', H1]]));
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('unauthorized');
    auth.setUsers(new Map([['alice', H1], ['bob', H1]]));
    expect(await run(pool, auth.check(basic('alice', 'pw1')))).toBe('ok');
  });
  test('a user removed while her comparison is in flight: a check after the removal does not share its success', async () => {
    const pool = new FakePool(new Map([[H1, 'pw1']]));
    const auth = new BasicAuth(pool as unknown as BcryptPool, new Map([['alice', H1], ['bob', H1]]));
    const before = auth.check(basic('alice', 'pw1'));
    auth.setUsers(new Map([['bob', H1]]));
    const after = auth.check(basic('alice', 'pw1'));
    await Promise.resolve();
    pool.settle();
    expect(await Promise.all([before, after])).toEqual(['ok', 'unauthorized']);
  });
  test('a comparison that fails (the pool closed) is unauthorized-by-error for its callers and not cached', async () => {
    let fail = true;
    const pool = {
      calls: 0,
      hasRoom: () => true,
      compare(): Promise<boolean> {
        this.calls++;
        return fail ? Promise.reject(new Error('bcrypt pool closed')) : Promise.resolve(true);
      },
    };
    const auth = new BasicAuth(pool as unknown as BcryptPool, new Map([['alice', H1]]));
    await expect(auth.check(basic('alice', 'pw1'))).rejects.toThrow('bcrypt pool closed');
    fail = false;
    expect(await auth.check(basic('alice', 'pw1'))).toBe('ok');
    expect(pool.calls).toBe(2);
  });
});

describe('WebConfigHolder', () => {
  function logger() {
    const lines: Record<string, unknown>[] = [];
    return { lines, log: createLogger('debug', 'json', (l) => lines.push(JSON.parse(l) as Record<string, unknown>)) };
  }
  const H = HASH4;

  test('without a config: no auth, no limit, nothing to reload', async () => {
    const { log, lines } = logger();
    const h = new WebConfigHolder(undefined, log);
    try {
      expect(h.current).toEqual({ headers: {}, http2: true, warnings: [], files: [] });
      expect(h.authRequired()).toBe(false);
      expect(await h.authorize(undefined)).toBe('ok');
      for (let i = 0; i < 100; i++) expect(h.allowRequest()).toBe(true);
      expect(h.reload('SIGHUP')).toBe(true);
      h.maybeReload();
      expect(h.reloads).toBe(0);
      expect(lines).toEqual([]);
    } finally {
      await h.close();
    }
  });

  test('a changed file is reloaded (listeners told, counted, logged); an unchanged one is not', async () => {
    const { log, lines } = logger();
    const f = write(`basic_auth_users:\n  u: '${H}'\n`);
    const h = new WebConfigHolder(loadWebConfig(f), log, { checkEveryMs: 0, failureDelayMs: 0 });
    const heard: WebConfig[] = [];
    h.onChange((c) => heard.push(c));
    try {
      expect(h.authRequired()).toBe(true);
      h.maybeReload();
      expect(h.reloads).toBe(0);
      fs.writeFileSync(f, `basic_auth_users:\n  u: '${H}'\n  v: '${H}'\nrate_limit:\n  interval: 1h\n  burst: 1\n`);
      h.maybeReload();
      expect(h.reloads).toBe(1);
      expect(heard).toHaveLength(1);
      expect(heard[0]).toBe(h.current);
      expect(h.current.basicAuthUsers!.size).toBe(2);
      expect(lines.find((l) => l.msg === 'web config reloaded')).toMatchObject({ level: 'info', file: path.resolve(f), why: 'changed', tls: false, users: 2 });
      // The new rate limit is in force: a burst of 1 per hour.
      expect(h.allowRequest()).toBe(true);
      expect(h.allowRequest()).toBe(false);
      h.maybeReload();
      expect(h.reloads).toBe(1);
      // Users removed: no authentication any more, no limit.
      fs.writeFileSync(f, 'basic_auth_users: {}\n');
      expect(h.reload('SIGHUP')).toBe(true);
      expect(h.authRequired()).toBe(false);
      expect(h.allowRequest()).toBe(true);
      expect(h.allowRequest()).toBe(true);
      expect(lines.filter((l) => l.msg === 'web config reloaded').map((l) => [l.why, l.users])).toEqual([
        ['changed', 2],
        ['SIGHUP', 0],
      ]);
    } finally {
      await h.close();
    }
  });

  test('a reload that fails keeps the last good config, logs one error and tells onReloadError; the same bad file is not re-read', async () => {
    const { log, lines } = logger();
    const f = write('rate_limit:\n  interval: 1s\n  burst: 2\n');
    const h = new WebConfigHolder(loadWebConfig(f), log, { checkEveryMs: 0 });
    const errors: string[] = [];
    h.onReloadError = (m) => errors.push(m);
    const heard: WebConfig[] = [];
    h.onChange((c) => heard.push(c));
    try {
      const before = h.current;
      fs.writeFileSync(f, 'rate_limit:\n  interval: never\n');
      h.maybeReload();
      expect(h.current).toBe(before);
      expect(h.reloads).toBe(0);
      expect(heard).toEqual([]);
      expect(errors).toEqual([`web config ${f}: rate_limit.interval must be a duration such as 100ms or 1s; keeping the previous web config`]);
      expect(lines.filter((l) => l.level === 'error')).toEqual([expect.objectContaining({ msg: 'web config reload failed', why: 'changed', err: errors[0] })]);
      h.maybeReload();
      expect(errors).toHaveLength(1);
      expect(h.reload('SIGHUP')).toBe(false);
      expect(errors).toHaveLength(2);
      // Fixed: taken.
      fs.writeFileSync(f, 'rate_limit:\n  interval: 2s\n  burst: 3\n');
      h.maybeReload();
      expect(h.reloads).toBe(1);
      expect(h.current.rateLimit).toEqual({ intervalMs: 2000, burst: 3 });
    } finally {
      await h.close();
    }
  });

  test('TLS cannot be turned on or off by a reload; warnings of an accepted reload are logged', async () => {
    const { log, lines } = logger();
    const f = write('http_server_config:\n  http2: false\n');
    const h = new WebConfigHolder(loadWebConfig(f), log, { checkEveryMs: 0 });
    const errors: string[] = [];
    h.onReloadError = (m) => errors.push(m);
    try {
      fs.writeFileSync(f, tls());
      expect(h.reload('SIGHUP')).toBe(false);
      expect(errors).toEqual([`web config ${f}: turning TLS on needs a restart; keeping the previous web config`]);
      const g = write(tls());
      const t = new WebConfigHolder(loadWebConfig(g), log, { checkEveryMs: 0 });
      t.onReloadError = (m) => errors.push(m);
      try {
        fs.writeFileSync(g, 'http_server_config:\n  http2: false\n');
        expect(t.reload('SIGHUP')).toBe(false);
        expect(errors[1]).toBe(`web config ${g}: turning TLS off needs a restart; keeping the previous web config`);
        fs.writeFileSync(g, tls('  min_version: TLS11\n'));
        expect(t.reload('SIGHUP')).toBe(true);
        expect(t.current.tls!.minVersion).toBe('TLSv1.1');
        expect(lines.filter((l) => l.level === 'warn' && l.msg === 'web config')).toEqual([expect.objectContaining({ file: g, warning: expect.stringMatching(/^tls_server_config\.min_version below TLS12/) })]);
        expect(lines.find((l) => l.msg === 'web config reloaded')).toMatchObject({ tls: true, users: 0 });
      } finally {
        await t.close();
      }
    } finally {
      await h.close();
    }
  });

  test('a change to a file the config names (the certificate) is seen too', async () => {
    const { log } = logger();
    const sub = fs.mkdtempSync(path.join(dir, 'files-'));
    const cert = path.join(sub, 'c.pem');
    fs.copyFileSync(srv.cert, cert);
    const f = path.join(sub, 'web.yml');
    fs.writeFileSync(f, `tls_server_config:\n  cert_file: c.pem\n  key_file: ${srv.key}\n`);
    const h = new WebConfigHolder(loadWebConfig(f), log, { checkEveryMs: 0 });
    try {
      h.maybeReload();
      expect(h.reloads).toBe(0);
      fs.appendFileSync(cert, '\n');
      h.maybeReload();
      expect(h.reloads).toBe(1);
      // Removed: seen as a change, refused (cannot read), the old config kept.
      fs.rmSync(cert);
      h.maybeReload();
      expect(h.reloads).toBe(1);
      expect(h.current.tls).toBeDefined();
    } finally {
      await h.close();
    }
  });

  test('files are looked at most every checkEveryMs', async () => {
    const { log } = logger();
    const f = write('http_server_config:\n  http2: true\n');
    let now = 1_000_000;
    const spy = jest.spyOn(Date, 'now').mockImplementation(() => now);
    const h = new WebConfigHolder(loadWebConfig(f), log);
    try {
      fs.writeFileSync(f, 'http_server_config:\n  http2: false\n');
      now += 99;
      h.maybeReload();
      expect(h.reloads).toBe(0);
      now += 1;
      h.maybeReload();
      expect(h.reloads).toBe(1);
      fs.writeFileSync(f, 'http_server_config:\n  http2: true\n');
      now += 50;
      h.maybeReload();
      expect(h.reloads).toBe(1);
      now += 49;
      h.maybeReload();
      expect(h.reloads).toBe(1);
      now += 1;
      h.maybeReload();
      expect(h.reloads).toBe(2);
    } finally {
      spy.mockRestore();
      await h.close();
    }
  });

  test('a change is seen even where two files\' stat numbers, run together, would read the same (the signature keeps files apart)', async () => {
    const { log } = logger();
    const f = write(tls());
    const cfg = loadWebConfig(f);
    expect(cfg.files).toEqual([path.resolve(f), srv.cert, srv.key]);
    // Stat numbers set by hand: the config's ctime then the certificate's inode, 4 and 56, then
    // 45 and 6 (a replaced certificate): written side by side both are "456".
    const fake = new Map<string, { ino: number; ctimeMs: number }>([
      [cfg.files[0], { ino: 1, ctimeMs: 4 }],
      [cfg.files[1], { ino: 56, ctimeMs: 9 }],
      [cfg.files[2], { ino: 7, ctimeMs: 9 }],
    ]);
    const realStat = nodeFs.statSync;
    const spy = jest.spyOn(nodeFs, 'statSync').mockImplementation(((p: string) => {
      const st = realStat(p);
      const x = fake.get(p);
      return x ? Object.assign(st, x, { mtimeMs: 3 }) : st;
    }) as unknown as typeof nodeFs.statSync);
    const h = new WebConfigHolder(cfg, log, { checkEveryMs: 0 });
    try {
      h.maybeReload();
      expect(h.reloads).toBe(0);
      fake.set(cfg.files[0], { ino: 1, ctimeMs: 45 });
      fake.set(cfg.files[1], { ino: 6, ctimeMs: 9 });
      h.maybeReload();
      expect(h.reloads).toBe(1);
    } finally {
      spy.mockRestore();
      await h.close();
    }
  });

  test('an empty user map (what "basic_auth_users: {}" means) is no authentication', async () => {
    const { log } = logger();
    const h = new WebConfigHolder({ headers: {}, http2: true, warnings: [], files: [], basicAuthUsers: new Map() }, log, { failureDelayMs: 0 });
    try {
      expect(h.authRequired()).toBe(false);
      expect(await h.authorize(`Basic ${Buffer.from('u:p').toString('base64')}`)).toBe('ok');
    } finally {
      await h.close();
    }
  });

  test('rate_limit: a token bucket, one token per interval up to burst', async () => {
    const { log } = logger();
    let now = 5_000_000;
    const spy = jest.spyOn(Date, 'now').mockImplementation(() => now);
    const h = new WebConfigHolder(load('rate_limit:\n  interval: 100ms\n  burst: 3\n'), log);
    try {
      expect([h.allowRequest(), h.allowRequest(), h.allowRequest(), h.allowRequest()]).toEqual([true, true, true, false]);
      now += 99;
      expect(h.allowRequest()).toBe(false);
      now += 1;
      expect(h.allowRequest()).toBe(true);
      expect(h.allowRequest()).toBe(false);
      now += 250;
      expect([h.allowRequest(), h.allowRequest(), h.allowRequest()]).toEqual([true, true, false]);
      // Idle for long: at most `burst` tokens saved up.
      now += 10_000;
      expect([h.allowRequest(), h.allowRequest(), h.allowRequest(), h.allowRequest()]).toEqual([true, true, true, false]);
    } finally {
      spy.mockRestore();
      await h.close();
    }
  });

  test('rate_limit with burst 0 refuses everything', async () => {
    const { log } = logger();
    const h = new WebConfigHolder(load('rate_limit:\n  interval: 1ms\n'), log);
    try {
      expect(h.allowRequest()).toBe(false);
    } finally {
      await h.close();
    }
  });

  test('authorize: ok without users; a wrong password with credentials waits failureDelayMs, without credentials it does not', async () => {
    const { log } = logger();
    const h = new WebConfigHolder(load(`basic_auth_users:\n  u: '${H}'\n`), log, { failureDelayMs: 300, maxPendingBcrypt: 4 });
    try {
      expect(h.authRequired()).toBe(true);
      // Without credentials: no delay timer armed (read from setTimeout, not from the wall
      // clock: an elapsed-time bound of 250 ms failed with a 300 ms busy-wait in the call).
      const timers = jest.spyOn(global, 'setTimeout');
      try {
        expect(await h.authorize(undefined)).toBe('unauthorized');
        expect(timers.mock.calls.filter((c) => c[1] === 300)).toEqual([]);
      } finally {
        timers.mockRestore();
      }
      const t = Date.now();
      expect(await h.authorize(`Basic ${Buffer.from('u:wrong').toString('base64')}`)).toBe('unauthorized');
      expect(Date.now() - t).toBeGreaterThanOrEqual(290);
    } finally {
      await h.close();
    }
  });

  test('authorize: a right password is answered without the delay; failureDelayMs 0 arms no delay timer', async () => {
    const { log } = logger();
    const yaml = `basic_auth_users:\n  u: '${bcrypt.hashSync('right', 4)}'\n`;
    const slow = new WebConfigHolder(load(yaml), log, { failureDelayMs: 300 });
    const none = new WebConfigHolder(load(yaml), log, { failureDelayMs: 0 });
    const creds = (p: string) => `Basic ${Buffer.from(`u:${p}`).toString('base64')}`;
    // Timers read from setTimeout (see above); delays of 300 or 0 ms are the delay's.
    const timers = jest.spyOn(global, 'setTimeout');
    try {
      expect(await slow.authorize(creds('right'))).toBe('ok');
      expect(await none.authorize(creds('wrong'))).toBe('unauthorized');
      expect(await none.authorize(creds('wrong'))).toBe('unauthorized');
      expect(timers.mock.calls.filter((c) => c[1] === 300 || c[1] === 0)).toEqual([]);
    } finally {
      timers.mockRestore();
      await slow.close();
      await none.close();
    }
  });

  test('maxPendingBcrypt bounds the comparisons owed: one owed, the next different credentials are busy', async () => {
    const { log } = logger();
    const h = new WebConfigHolder(load(`basic_auth_users:\n  u: '${bcrypt.hashSync('right', 4)}'\n`), log, { failureDelayMs: 0, maxPendingBcrypt: 1 });
    const creds = (p: string) => `Basic ${Buffer.from(`u:${p}`).toString('base64')}`;
    try {
      expect(await Promise.all([h.authorize(creds('a')), h.authorize(creds('b'))])).toEqual(['unauthorized', 'busy']);
    } finally {
      await h.close();
    }
  });
});
