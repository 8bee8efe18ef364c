/**
 * `--web.config.file`: TLS, basic auth, response headers and rate limiting in the
 * Prometheus exporter-toolkit format
 * (https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md),
 * so operators can reuse the file they give node_exporter. Every key of the toolkit's
 * format is accepted:
 *
 *   tls_server_config:  cert_file | cert, key_file | key, client_ca_file | client_ca,
 *                       client_auth_type, client_allowed_sans, min_version, max_version,
 *                       cipher_suites, curve_preferences, prefer_server_cipher_suites
 *   http_server_config: http2, headers
 *   basic_auth_users:   { <user>: <bcrypt hash> }   (empty or absent: no authentication)
 *   rate_limit:         { interval: <Go duration>, burst: <int> }
 *
 * The whole file is validated when it is loaded — at startup, by --config.check, and on
 * every reload — so a config that is accepted cannot break every response later: the
 * certificate must match its key, a client CA file must hold at least one PEM certificate,
 * response headers are the toolkit's five security headers (a `Content-Length` or
 * `Content-Type` override would corrupt every answer). Anything unknown is an error: a
 * typo must not silently disable auth. Where we differ from the toolkit, and why, is in
 * docs/hostile-inputs.md ("Differences from the exporter-toolkit").
 *
 * WebConfigHolder keeps the current config and re-reads it when the file or a file it
 * names changes (checked at most every 100 ms, on new connections and requests, as the
 * toolkit re-reads it per connection) or on SIGHUP. A reload that fails keeps the last
 * good config, logs one line and counts cuzk_exporter_errors_total{reason="web_config"}.
 *
 * Past ~500 lines on purpose: the toolkit's format end to end (load, validate, then the TLS,
 * basic-auth and rate-limit objects it configures), kept together to be read against the
 * toolkit's documentation.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { isIP } from 'node:net';
import * as path from 'node:path';
import * as tls from 'node:tls';
import YAML from 'yaml';
import { MAX_NESTING, yamlNestingDepth } from '../util/yaml-depth';
import type { Logger } from '../util/logger';
import { FileRefused, readRegularFile } from '../util/regular-file';
import { BcryptPool } from './bcrypt-pool';

export type ClientAuth = 'NoClientCert' | 'RequestClientCert' | 'RequireAnyClientCert' | 'VerifyClientCertIfGiven' | 'RequireAndVerifyClientCert';

export interface TlsSettings {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  clientAuth: ClientAuth;
  minVersion: tls.SecureVersion;
  maxVersion: tls.SecureVersion;
  /** OpenSSL cipher string (TLS 1.2 suites from cipher_suites, TLS 1.3 defaults kept), or undefined for Node's defaults. */
  ciphers?: string;
  /** OpenSSL curve list from curve_preferences, or undefined for Node's defaults. */
  ecdhCurve?: string;
  honorCipherOrder: boolean;
  /** client_allowed_sans: the client certificate must carry one of these SANs. */
  clientAllowedSans?: string[];
}

export interface WebConfig {
  /** The file it came from (relative paths inside it are relative to its folder); reloads re-read it. */
  file?: string;
  tls?: TlsSettings;
  /** Users and bcrypt hashes; absent or empty: no authentication (as the toolkit). */
  basicAuthUsers?: Map<string, string>;
  headers: Record<string, string>;
  /** http_server_config.http2 as given (we serve HTTP/1.1 either way, see docs). */
  http2: boolean;
  rateLimit?: { intervalMs: number; burst: number };
  /** Things worth one log line at load (accepted, but not what the operator may expect). */
  warnings: string[];
  /** Every file read, for change detection. */
  files: string[];
}

const CLIENT_AUTH: readonly ClientAuth[] = ['NoClientCert', 'RequestClientCert', 'RequireAnyClientCert', 'VerifyClientCertIfGiven', 'RequireAndVerifyClientCert'];

/** The toolkit's extraHTTPHeaders: the only headers a web config may set, some with fixed values. */
const EXTRA_HEADERS: Record<string, readonly string[] | null> = {
  'Strict-Transport-Security': null,
  'X-Content-Type-Options': ['nosniff'],
  'X-Frame-Options': ['deny', 'sameorigin'],
  'X-XSS-Protection': null,
  'Content-Security-Policy': null,
};

const TLS_VERSIONS: Record<string, tls.SecureVersion> = { TLS10: 'TLSv1', TLS11: 'TLSv1.1', TLS12: 'TLSv1.2', TLS13: 'TLSv1.3' };
const VERSION_ORDER: tls.SecureVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

/**
 * Go's tls.CipherSuites() (the suites the toolkit accepts) and their OpenSSL names. The
 * three TLS 1.3 suites are accepted and, as in Go, configure nothing (TLS 1.3 suites are
 * not configurable there).
 */
const CIPHERS: Record<string, string | null> = {
  TLS_AES_128_GCM_SHA256: null,
  TLS_AES_256_GCM_SHA384: null,
  TLS_CHACHA20_POLY1305_SHA256: null,
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
};
/** Kept whenever cipher_suites is given, so TLS 1.3 stays as it is (Go semantics). */
const TLS13_SUITES = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256';
const CURVES: Record<string, string> = { CurveP256: 'P-256', CurveP384: 'P-384', CurveP521: 'P-521', X25519: 'X25519' };

/** Bounds: far above any real web config, far below what hurts. */
const MAX_FILE_BYTES = 1024 * 1024;
const MAX_USERS = 10_000;

function fail(file: string, what: string): never {
  throw new Error(`web config ${file}: ${what}`);
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function onlyKeys(file: string, where: string, obj: Obj, allowed: string[]): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) fail(file, `unknown key "${where}${k}" (allowed: ${allowed.join(', ')})`);
  }
}

/** A Go time.Duration string ("1s", "500ms", "1m30s", "0") in ms. */
export function parseGoDuration(s: string): number | null {
  if (s === '0') return 0;
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(s)) return null;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let ms = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(m[1]) * unit[m[2]];
  return ms;
}

/** PEM certificates in a buffer (each parsed), or an error text. */
function pemCertificates(buf: Buffer): crypto.X509Certificate[] | string {
  const text = buf.toString('latin1');
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return 'no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)';
  const out: crypto.X509Certificate[] = [];
  for (const [i, b] of blocks.entries()) {
    try {
      out.push(new crypto.X509Certificate(b));
    } catch (e) {
      return `certificate ${i + 1} is not valid: ${(e as Error).message}`;
    }
  }
  return out;
}

/** Parses YAML text the way every config file of ours is parsed: duplicate keys and deep nesting are errors. */
function parseYaml(file: string, text: string): unknown {
  // Measured first: a deep enough file overflows the parser's stack, and the process may not survive the next parse (yaml-depth.ts).
  if (yamlNestingDepth(text) > MAX_NESTING) fail(file, `not valid YAML: nested too deeply (more than ${MAX_NESTING} levels)`);
  try {
    return YAML.parse(text, { uniqueKeys: true, maxAliasCount: 100 });
  } catch (e) {
    if (e instanceof RangeError || /Maximum call stack/.test((e as Error).message)) fail(file, 'not valid YAML: nested too deeply');
    fail(file, `not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** Reads and validates a web config file. Throws one readable Error on the first problem. */
export function loadWebConfig(file: string): WebConfig {
  let text: string;
  try {
    // Regular files only, size-capped, never a blocking open (regular-file.ts): a FIFO or
    // /dev/zero here, at start or at a reload, is one refusal, not a hang or 3 GB.
    text = readRegularFile(file, MAX_FILE_BYTES).toString('utf8');
  } catch (e) {
    if (e instanceof FileRefused) fail(file, e.message);
    fail(file, `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const files = [path.resolve(file)];
  const out: WebConfig = { file: path.resolve(file), headers: {}, http2: true, warnings: [], files };
  const doc = parseYaml(file, text);
  if (doc === null || doc === undefined) return out;
  if (!isObj(doc)) fail(file, 'top level must be a mapping');
  onlyKeys(file, '', doc, ['tls_server_config', 'http_server_config', 'basic_auth_users', 'rate_limit']);
  const dir = path.dirname(path.resolve(file));
  const readRel = (key: string, p: unknown): Buffer => {
    if (typeof p !== 'string' || p === '') fail(file, `${key} must be a file path`);
    const abs = path.resolve(dir, p);
    files.push(abs);
    try {
      return readRegularFile(abs, MAX_FILE_BYTES);
    } catch (e) {
      if (e instanceof FileRefused) fail(file, `${key}: ${p} ${e.message}`);
      fail(file, `${key}: cannot read ${p}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  };
  const str = (key: string, v: unknown): string | undefined => {
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') fail(file, `${key} must be a string`);
    return v;
  };

  const t0 = doc.tls_server_config;
  if (t0 !== undefined && t0 !== null) {
    if (!isObj(t0)) fail(file, 'tls_server_config must be a mapping');
    out.tls = tlsSettings(file, t0, readRel, str, out.warnings);
  }

  const users = doc.basic_auth_users;
  if (users !== undefined && users !== null) {
    if (!isObj(users)) fail(file, 'basic_auth_users must be a mapping of user to bcrypt hash');
    const entries = Object.entries(users);
    if (entries.length > MAX_USERS) fail(file, `basic_auth_users: more than ${MAX_USERS} users`);
    if (entries.length > 0) {
      out.basicAuthUsers = new Map();
      for (const [user, hash] of entries) {
        if (typeof hash !== 'string' || !/^\$2[abxy]\$\d\d\$[./A-Za-z0-9]{53}$/.test(hash)) {
          fail(file, `basic_auth_users.${user}: not a bcrypt hash (generate one with htpasswd -nBC 10 "" | tr -d ':\\n')`);
        }
        const cost = Number(hash.slice(4, 6));
        if (cost < 4 || cost > 31) fail(file, `basic_auth_users.${user}: bcrypt cost ${cost} is outside 4..31`);
        if (cost > 14) out.warnings.push(`basic_auth_users.${user}: bcrypt cost ${cost} makes every first login take seconds of CPU (10 is usual)`);
        out.basicAuthUsers.set(user, hash.replace(/^\$2[xy]\$/, '$2b$'));
      }
    }
  }

  const h0 = doc.http_server_config;
  if (h0 !== undefined && h0 !== null) {
    if (!isObj(h0)) fail(file, 'http_server_config must be a mapping');
    onlyKeys(file, 'http_server_config.', h0, ['http2', 'headers']);
    if (h0.http2 !== undefined && h0.http2 !== null) {
      if (typeof h0.http2 !== 'boolean') fail(file, 'http_server_config.http2 must be true or false');
      out.http2 = h0.http2;
    }
    if (h0.headers !== undefined && h0.headers !== null) {
      if (!isObj(h0.headers)) fail(file, 'http_server_config.headers must be a mapping');
      for (const [k, v] of Object.entries(h0.headers)) {
        const name = Object.keys(EXTRA_HEADERS).find((n) => n.toLowerCase() === k.toLowerCase());
        if (!name) {
          fail(file, `http_server_config.headers.${k}: this header can not be configured (allowed: ${Object.keys(EXTRA_HEADERS).join(', ')}, as in the exporter-toolkit)`);
        }
        if (v === null || v === '') continue; // "Unset if blank"
        if (typeof v !== 'string') fail(file, `http_server_config.headers.${k} must be a string`);
        const allowed = EXTRA_HEADERS[name];
        if (allowed && !allowed.includes(v)) fail(file, `http_server_config.headers.${k}: invalid value ${JSON.stringify(v)} (expected one of ${allowed.join(', ')})`);
        if (/[^\t\x20-\x7e]/.test(v)) fail(file, `http_server_config.headers.${k}: value has characters not allowed in a header`);
        out.headers[name] = v;
      }
    }
  }

  const r0 = doc.rate_limit;
  if (r0 !== undefined && r0 !== null) {
    if (!isObj(r0)) fail(file, 'rate_limit must be a mapping');
    onlyKeys(file, 'rate_limit.', r0, ['interval', 'burst']);
    const iv = r0.interval === undefined || r0.interval === null ? 0 : typeof r0.interval === 'string' ? parseGoDuration(r0.interval) : null;
    if (iv === null) fail(file, 'rate_limit.interval must be a duration such as 100ms or 1s');
    const burst = r0.burst ?? 0;
    if (typeof burst !== 'number' || !Number.isInteger(burst) || burst < 0 || burst > 1e6) fail(file, 'rate_limit.burst must be a whole number from 0 to 1000000');
    if (iv > 0) {
      if (iv > 2_147_483_647) fail(file, 'rate_limit.interval is longer than 24.8 days');
      out.rateLimit = { intervalMs: iv, burst };
    }
  }
  return out;
}

function tlsSettings(
  file: string,
  t: Obj,
  readRel: (key: string, p: unknown) => Buffer,
  str: (key: string, v: unknown) => string | undefined,
  warnings: string[],
): TlsSettings | undefined {
  const K = 'tls_server_config.';
  onlyKeys(file, K, t, [
    'cert_file', 'key_file', 'cert', 'key', 'client_ca_file', 'client_ca', 'client_auth_type', 'client_allowed_sans',
    'min_version', 'max_version', 'cipher_suites', 'curve_preferences', 'prefer_server_cipher_suites',
  ]);
  const certFile = str(`${K}cert_file`, t.cert_file);
  const keyFile = str(`${K}key_file`, t.key_file);
  const certText = str(`${K}cert`, t.cert);
  const keyText = str(`${K}key`, t.key);
  const caFile = str(`${K}client_ca_file`, t.client_ca_file);
  const caText = str(`${K}client_ca`, t.client_ca);
  const authRaw = str(`${K}client_auth_type`, t.client_auth_type);
  // The toolkit's IsEnabled: TLS is on when any of these is set; otherwise plain HTTP.
  if (!certFile && !keyFile && !certText && !keyText && !caFile && !caText && !authRaw) return undefined;
  if (certFile && certText) fail(file, `${K}cert and cert_file: give one of them, not both`);
  if (keyFile && keyText) fail(file, `${K}key and key_file: give one of them, not both`);
  if (caFile && caText) fail(file, `${K}client_ca and client_ca_file: give one of them, not both`);
  if (!certFile && !certText) fail(file, `${K}: missing one of cert or cert_file`);
  if (!keyFile && !keyText) fail(file, `${K}: missing one of key or key_file`);

  let auth: ClientAuth = 'NoClientCert';
  if (authRaw !== undefined) {
    const a = authRaw === 'RequireClientCert' ? 'RequireAnyClientCert' : authRaw; // the toolkit's old name
    if (!(CLIENT_AUTH as readonly string[]).includes(a)) fail(file, `${K}client_auth_type "${authRaw}" is not one of ${CLIENT_AUTH.join(', ')}`);
    auth = a as ClientAuth;
  }
  const hasCa = caFile !== undefined || caText !== undefined;
  // Verifying against nothing would fall back to the public roots: any public cert passes.
  if ((auth === 'VerifyClientCertIfGiven' || auth === 'RequireAndVerifyClientCert') && !hasCa) {
    fail(file, `${K}client_auth_type ${auth} needs client_ca_file (the CA that signs your clients' certificates)`);
  }
  if (hasCa && auth === 'NoClientCert') fail(file, `${K}client_ca_file is set but client_auth_type is NoClientCert (the toolkit: "client CA's have been configured without a Client Auth Policy")`);

  const version = (key: string, dflt: tls.SecureVersion): tls.SecureVersion => {
    const v = t[key];
    if (v === undefined || v === null) return dflt;
    // Own keys only: `in` also finds what every object inherits (toString, constructor).
    if (typeof v !== 'string' || !Object.hasOwn(TLS_VERSIONS, v)) fail(file, `${K}${key}: unknown TLS version ${JSON.stringify(v)} (TLS10, TLS11, TLS12 or TLS13)`);
    return TLS_VERSIONS[v];
  };
  const minVersion = version('min_version', 'TLSv1.2');
  const maxVersion = version('max_version', 'TLSv1.3');
  if (VERSION_ORDER.indexOf(minVersion) > VERSION_ORDER.indexOf(maxVersion)) fail(file, `${K}min_version is above max_version`);
  if (VERSION_ORDER.indexOf(minVersion) < 2) {
    warnings.push(`${K}min_version below TLS12 is accepted, but this Node.js/OpenSSL ${process.versions.openssl} refuses TLS 1.0/1.1 at its default security level: clients still need TLS 1.2 or later`);
  }

  const list = (key: string): string[] | undefined => {
    const v = t[key];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) fail(file, `${K}${key} must be a list of strings`);
    return v as string[];
  };
  let ciphers: string | undefined;
  const suites = list('cipher_suites');
  if (suites && suites.length > 0) {
    const names: string[] = [];
    for (const s of suites) {
      if (!Object.hasOwn(CIPHERS, s)) fail(file, `${K}cipher_suites: unknown cipher: ${s} (the names of Go's tls.CipherSuites(), e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)`);
      if (CIPHERS[s]) names.push(CIPHERS[s]!);
    }
    if (names.length > 0) ciphers = `${TLS13_SUITES}:${names.join(':')}`;
  }
  let ecdhCurve: string | undefined;
  const curves = list('curve_preferences');
  if (curves && curves.length > 0) {
    for (const c of curves) if (!Object.hasOwn(CURVES, c)) fail(file, `${K}curve_preferences: unknown curve: ${c} (CurveP256, CurveP384, CurveP521, X25519)`);
    ecdhCurve = curves.map((c) => CURVES[c]).join(':');
  }
  const pref = t.prefer_server_cipher_suites;
  if (pref !== undefined && pref !== null && typeof pref !== 'boolean') fail(file, `${K}prefer_server_cipher_suites must be true or false`);
  const sans = list('client_allowed_sans');
  if (sans !== undefined && auth !== 'RequireAnyClientCert' && auth !== 'RequireAndVerifyClientCert') {
    fail(file, `${K}client_allowed_sans requires client_auth_type to be one of RequireAnyClientCert or RequireAndVerifyClientCert`);
  }

  const cert = certText !== undefined ? Buffer.from(certText) : readRel(`${K}cert_file`, certFile);
  const key = keyText !== undefined ? Buffer.from(keyText) : readRel(`${K}key_file`, keyFile);
  const ca = caText !== undefined ? Buffer.from(caText) : caFile !== undefined ? readRel(`${K}client_ca_file`, caFile) : undefined;

  const chain = pemCertificates(cert);
  if (typeof chain === 'string') fail(file, `${K}${certText !== undefined ? 'cert' : 'cert_file'}: ${chain}`);
  let privateKey: crypto.KeyObject;
  try {
    privateKey = crypto.createPrivateKey(key);
  } catch (e) {
    fail(file, `${K}${keyText !== undefined ? 'key' : 'key_file'}: not a valid PEM private key: ${(e as Error).message}`);
  }
  if (!chain[0].checkPrivateKey(privateKey)) fail(file, `${K}: the certificate and the key do not belong together (the key does not match the certificate's public key)`);
  if (Date.parse(chain[0].validTo) < Date.now()) warnings.push(`${K}: the certificate expired on ${chain[0].validTo}`);
  if (ca) {
    const cas = pemCertificates(ca);
    if (typeof cas === 'string') fail(file, `${K}${caText !== undefined ? 'client_ca' : 'client_ca_file'}: ${cas}`);
  }
  const settings: TlsSettings = {
    cert,
    key,
    ca,
    clientAuth: auth,
    minVersion,
    maxVersion,
    ciphers,
    ecdhCurve,
    honorCipherOrder: pref !== false,
    clientAllowedSans: sans,
  };
  // Last, everything as OpenSSL will see it (cipher and curve lists, versions).
  try {
    tls.createSecureContext(secureContextOptions(settings));
  } catch (e) {
    fail(file, `${K}: OpenSSL refuses this configuration: ${(e as Error).message}`);
  }
  return settings;
}

/** The node:tls secure-context options of validated settings. */
export function secureContextOptions(s: TlsSettings): tls.SecureContextOptions {
  return {
    cert: s.cert,
    key: s.key,
    ca: s.ca,
    minVersion: s.minVersion,
    maxVersion: s.maxVersion,
    ...(s.ciphers ? { ciphers: s.ciphers } : {}),
    ...(s.ecdhCurve ? { ecdhCurve: s.ecdhCurve } : {}),
    honorCipherOrder: s.honorCipherOrder,
  };
}

/**
 * Canonical text of an IP address (IPv6 expanded, lower case), so that SANs compare as
 * addresses: an IPv4-mapped address (::ffff:a.b.c.d) is its IPv4 text, as Go writes it.
 */
function canonicalIp(s: string): string {
  if (isIP(s) !== 6) return s;
  // A dotted IPv4 tail is the last two groups (::1.2.3.4 is ::102:304).
  const v4 = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  const hex = (a: string, b: string) => (Number(a) * 256 + Number(b)).toString(16);
  const t = v4 ? `${v4[1]}${hex(v4[2], v4[3])}:${hex(v4[4], v4[5])}` : s;
  const [head, tail] = t.includes('::') ? t.split('::') : [t, undefined];
  const h = head ? head.split(':') : [];
  const t2 = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const fill = tail !== undefined ? Array(8 - h.length - t2.length).fill('0') : [];
  const g = [...h, ...fill, ...t2].map((x) => parseInt(x, 16));
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
  return g.map((x) => x.toString(16)).join(':');
}

/** The SAN values of a certificate (DNS, IP, email, URI), as the toolkit matches them. */
export function certificateSans(cert: crypto.X509Certificate): string[] {
  const s = cert.subjectAltName;
  if (!s) return [];
  const out: string[] = [];
  // Node writes "type:value" entries joined by ", " and escapes a comma inside a value
  // (\u002c), so an entry starts at the start or after ", ". A type name further in (an
  // otherName "UPN:DNS:x", a DirName "CN=URI:y") is part of another entry's value.
  for (const m of s.matchAll(/(?:^|, )(DNS|IP Address|email|URI):("(?:[^"\\]|\\.)*"|[^,]*)(?=, |$)/g)) {
    let v = m[2];
    if (v.startsWith('"')) {
      try {
        v = JSON.parse(v) as string;
      } catch {
        continue;
      }
    }
    out.push(m[1] === 'IP Address' ? canonicalIp(v) : v);
  }
  return out;
}

/** Does a client certificate carry one of the allowed SANs? */
export function sanAllowed(cert: crypto.X509Certificate, allowed: string[]): boolean {
  const want = new Set(allowed.map((a) => (isIP(a) ? canonicalIp(a) : a)));
  return certificateSans(cert).some((v) => want.has(v));
}

export type AuthResult = 'ok' | 'unauthorized' | 'busy';

/** A small LRU of booleans keyed by digest. */
class Lru {
  private readonly m = new Map<string, boolean>();
  constructor(private readonly size: number) {}
  get(k: string): boolean | undefined {
    const v = this.m.get(k);
    if (v !== undefined) {
      this.m.delete(k);
      this.m.set(k, v);
    }
    return v;
  }
  set(k: string, v: boolean): void {
    this.m.delete(k);
    this.m.set(k, v);
    if (this.m.size > this.size) this.m.delete(this.m.keys().next().value as string);
  }
  get length(): number {
    return this.m.size;
  }
}

/**
 * Checks an Authorization header against the users, as the toolkit's webHandler does:
 * `Basic` matched case-insensitively, strict base64, an unknown user costs a bcrypt
 * comparison like a known one (no user enumeration by timing), results cached by
 * (user, hash, password) — so a scraper pays bcrypt once, not per scrape. Bounded
 * everything: comparisons run in one worker thread (BcryptPool), at most `maxPending` are
 * owed at once (beyond that: 'busy', the server answers 429 without hashing), identical
 * credentials in flight share one comparison, and the caches are LRUs — successes (64)
 * apart from failures (128), so a flood of wrong passwords cannot evict a scraper's
 * cached success and push it into the queue.
 */
export class BasicAuth {
  private readonly good = new Lru(64);
  private readonly bad = new Lru(128);
  private readonly inflight = new Map<string, Promise<boolean>>();
  constructor(
    private readonly pool: BcryptPool,
    private users: Map<string, string>,
  ) {}

  setUsers(users: Map<string, string>): void {
    this.users = users;
  }

  async check(header: string | undefined): Promise<AuthResult> {
    const cred = parseBasic(header);
    if (!cred) return 'unauthorized';
    const [user, pass] = cred;
    // bcrypt looks at 72 bytes; Go's bcrypt refuses longer passwords outright.
    if (Buffer.byteLength(pass) > 72) return 'unauthorized';
    const hash = this.users.get(user);
    // Same cost as a real check: compare against a real user's hash, ignore the result.
    const against = hash ?? this.users.values().next().value!;
    // Keyed by the user, its hash (null when unknown: a failure while a user is absent must
    // not outlive its return, nor an absent user share a success in flight) and the password,
    // JSON-encoded: no two such triples read alike, whatever NULs names and passwords hold.
    const key = crypto.createHash('sha256').update(JSON.stringify([user, hash ?? null, pass])).digest('base64');
    // Only a known user's key is ever cached as a success (its hash is in the key).
    if (this.good.get(key)) return 'ok';
    if (this.bad.get(key) !== undefined) return 'unauthorized';
    let p = this.inflight.get(key);
    if (!p) {
      if (!this.pool.hasRoom()) return 'busy';
      p = this.pool.compare(pass, against).then(
        (match) => {
          const ok = hash !== undefined && match;
          (ok ? this.good : this.bad).set(key, ok);
          return ok;
        },
      );
      p.finally(() => this.inflight.delete(key)).catch(() => {});
      this.inflight.set(key, p);
    }
    return (await p) ? 'ok' : 'unauthorized';
  }
}

/** Go's Request.BasicAuth: "Basic " in any case, standard base64 with padding, user:pass. */
export function parseBasic(header: string | undefined): [string, string] | null {
  if (!header || header.length < 6 || header.slice(0, 6).toLowerCase() !== 'basic ') return null;
  const b64 = header.slice(6);
  if (b64.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) return null;
  const decoded = Buffer.from(b64, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return [decoded.slice(0, colon), decoded.slice(colon + 1)];
}

/** A token bucket (the toolkit's rate_limit: one token per interval, up to burst). */
class TokenBucket {
  private tokens: number;
  private last = Date.now();
  constructor(
    private readonly intervalMs: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }
  allow(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + (now - this.last) / this.intervalMs);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    return false;
  }
}

function fileSignature(files: string[]): string {
  return files
    .map((f) => {
      try {
        const s = fs.statSync(f);
        return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
      } catch {
        return 'missing';
      }
    })
    .join('|');
}

/**
 * The web config in force, re-read on change. Listeners (the TLS server) hear about every
 * accepted reload. Errors never throw from here: a bad reload keeps the last good config.
 */
export class WebConfigHolder {
  private cfg: WebConfig;
  private auth: BasicAuth | null = null;
  private limiter: TokenBucket | null = null;
  private readonly pool: BcryptPool;
  private signature: string;
  private lastCheck = Date.now();
  private readonly listeners: ((c: WebConfig) => void)[] = [];
  /** Called when a reload fails (counted by the server as errors_total{reason="web_config"}). */
  onReloadError: ((message: string) => void) | null = null;
  reloads = 0;

  constructor(
    cfg: WebConfig | undefined,
    private readonly log: Logger,
    opts: { maxPendingBcrypt?: number; checkEveryMs?: number; failureDelayMs?: number } = {},
  ) {
    this.cfg = cfg ?? { headers: {}, http2: true, warnings: [], files: [] };
    this.failureDelayMs = opts.failureDelayMs ?? 250;
    this.pool = new BcryptPool(opts.maxPendingBcrypt ?? 16);
    this.checkEveryMs = opts.checkEveryMs ?? 100;
    this.signature = fileSignature(this.cfg.files);
    this.apply(this.cfg);
  }
  private readonly checkEveryMs: number;
  private readonly failureDelayMs: number;

  get current(): WebConfig {
    return this.cfg;
  }

  onChange(f: (c: WebConfig) => void): void {
    this.listeners.push(f);
  }

  private apply(c: WebConfig): void {
    this.cfg = c;
    if (c.basicAuthUsers && c.basicAuthUsers.size > 0) {
      if (this.auth) this.auth.setUsers(c.basicAuthUsers);
      else this.auth = new BasicAuth(this.pool, c.basicAuthUsers);
    } else this.auth = null;
    this.limiter = c.rateLimit ? new TokenBucket(c.rateLimit.intervalMs, c.rateLimit.burst) : null;
  }

  /** Cheap (a few stat calls, at most every checkEveryMs): reloads when a file changed. */
  maybeReload(): void {
    if (!this.cfg.file) return;
    const now = Date.now();
    if (now - this.lastCheck < this.checkEveryMs) return;
    this.lastCheck = now;
    const sig = fileSignature(this.cfg.files);
    if (sig === this.signature) return;
    this.reload('changed');
  }

  /** Re-reads the file now (SIGHUP, or a change seen). Returns false when it was refused. */
  reload(why: 'changed' | 'SIGHUP'): boolean {
    const file = this.cfg.file;
    if (!file) return true;
    // Whatever happens, this version of the files has been looked at.
    this.signature = fileSignature(this.cfg.files);
    let next: WebConfig;
    try {
      next = loadWebConfig(file);
      if (!!next.tls !== !!this.cfg.tls) throw new Error(`web config ${file}: turning TLS ${next.tls ? 'on' : 'off'} needs a restart`);
    } catch (e) {
      const msg = `${(e as Error).message}; keeping the previous web config`;
      this.log.error('web config reload failed', { why, err: msg });
      this.onReloadError?.(msg);
      return false;
    }
    this.signature = fileSignature(next.files);
    this.apply(next);
    this.reloads++;
    for (const w of next.warnings) this.log.warn('web config', { file, warning: w });
    this.log.info('web config reloaded', { file, why, tls: !!next.tls, users: next.basicAuthUsers?.size ?? 0 });
    for (const l of this.listeners) l(next);
    return true;
  }

  /** The rate limit (rate_limit): false means answer 429. */
  allowRequest(): boolean {
    return this.limiter ? this.limiter.allow() : true;
  }

  authRequired(): boolean {
    return this.auth !== null;
  }

  /**
   * Checks credentials. A failed check with credentials given (wrong password, or the
   * bcrypt queue full) is answered after `failureDelayMs` (a timer, no CPU), as login
   * throttles do: a client retrying wrong passwords in a loop gets at most one answer per
   * delay per connection, so it cannot turn cheap refusals into a request flood.
   */
  async authorize(header: string | undefined): Promise<AuthResult> {
    if (!this.auth) return 'ok';
    const r = await this.auth.check(header);
    if (r !== 'ok' && header && this.failureDelayMs > 0) await new Promise((done) => setTimeout(done, this.failureDelayMs));
    return r;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
