/**
 * `--web.config.file`: TLS and basic auth in the Prometheus exporter-toolkit format
 * (https://prometheus.io/docs/prometheus/latest/configuration/https/), so operators can
 * reuse the file they give node_exporter. Supported keys:
 *
 *   tls_server_config: { cert_file, key_file, client_ca_file?, client_auth_type?, min_version? }
 *   basic_auth_users:  { <user>: <bcrypt hash> }
 *   http_server_config: { headers?: { <name>: <value> } }
 *
 * Anything else is an error: a typo must not silently disable auth.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import YAML from 'yaml';

export type ClientAuth = 'NoClientCert' | 'RequestClientCert' | 'RequireAnyClientCert' | 'VerifyClientCertIfGiven' | 'RequireAndVerifyClientCert';

export interface WebConfig {
  tls?: { cert: Buffer; key: Buffer; ca?: Buffer; clientAuth: ClientAuth; minVersion: 'TLSv1.2' | 'TLSv1.3' };
  basicAuthUsers?: Map<string, string>;
  headers: Record<string, string>;
}

const CLIENT_AUTH = new Set(['NoClientCert', 'RequestClientCert', 'RequireAnyClientCert', 'VerifyClientCertIfGiven', 'RequireAndVerifyClientCert']);

function fail(file: string, what: string): never {
  throw new Error(`web config ${file}: ${what}`);
}

function onlyKeys(file: string, where: string, obj: Record<string, unknown>, allowed: string[]): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) fail(file, `unknown key "${where}${k}" (allowed: ${allowed.join(', ')})`);
  }
}

export function loadWebConfig(file: string): WebConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    fail(file, `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (e) {
    fail(file, `not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (doc === null || doc === undefined) return { headers: {} };
  if (typeof doc !== 'object' || Array.isArray(doc)) fail(file, 'top level must be a mapping');
  const root = doc as Record<string, unknown>;
  onlyKeys(file, '', root, ['tls_server_config', 'basic_auth_users', 'http_server_config']);
  const dir = path.dirname(path.resolve(file));
  const readRel = (key: string, p: unknown): Buffer => {
    if (typeof p !== 'string' || p === '') fail(file, `${key} must be a file path`);
    try {
      return fs.readFileSync(path.resolve(dir, p));
    } catch (e) {
      fail(file, `${key}: cannot read ${p}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  };
  const out: WebConfig = { headers: {} };
  const tls = root.tls_server_config;
  if (tls !== undefined && tls !== null) {
    if (typeof tls !== 'object' || Array.isArray(tls)) fail(file, 'tls_server_config must be a mapping');
    const t = tls as Record<string, unknown>;
    onlyKeys(file, 'tls_server_config.', t, ['cert_file', 'key_file', 'client_ca_file', 'client_auth_type', 'min_version']);
    const auth = (t.client_auth_type ?? 'NoClientCert') as ClientAuth;
    if (!CLIENT_AUTH.has(auth)) fail(file, `tls_server_config.client_auth_type "${auth}" is not one of ${[...CLIENT_AUTH].join(', ')}`);
    // Verifying against nothing would fall back to the public roots: any public cert passes.
    if ((auth === 'VerifyClientCertIfGiven' || auth === 'RequireAndVerifyClientCert') && t.client_ca_file === undefined) {
      fail(file, `tls_server_config.client_auth_type ${auth} needs client_ca_file (the CA that signs your clients' certificates)`);
    }
    const minVersion = t.min_version ?? 'TLS12';
    if (minVersion !== 'TLS12' && minVersion !== 'TLS13') fail(file, 'tls_server_config.min_version must be TLS12 or TLS13');
    out.tls = {
      cert: readRel('tls_server_config.cert_file', t.cert_file),
      key: readRel('tls_server_config.key_file', t.key_file),
      ca: t.client_ca_file !== undefined ? readRel('tls_server_config.client_ca_file', t.client_ca_file) : undefined,
      clientAuth: auth,
      minVersion: minVersion === 'TLS13' ? 'TLSv1.3' : 'TLSv1.2',
    };
    try {
      crypto.createPrivateKey(out.tls.key);
      new crypto.X509Certificate(out.tls.cert);
    } catch (e) {
      fail(file, `tls_server_config: certificate or key is not valid PEM: ${(e as Error).message}`);
    }
  }
  const users = root.basic_auth_users;
  if (users !== undefined && users !== null) {
    if (typeof users !== 'object' || Array.isArray(users)) fail(file, 'basic_auth_users must be a mapping of user to bcrypt hash');
    out.basicAuthUsers = new Map();
    for (const [user, hash] of Object.entries(users as Record<string, unknown>)) {
      if (typeof hash !== 'string' || !/^\$2[abxy]\$\d\d\$[./A-Za-z0-9]{53}$/.test(hash)) {
        fail(file, `basic_auth_users.${user}: not a bcrypt hash (generate one with htpasswd -nBC 10 "" | tr -d ':\\n')`);
      }
      out.basicAuthUsers.set(user, hash.replace(/^\$2y\$/, '$2b$'));
    }
  }
  const http = root.http_server_config;
  if (http !== undefined && http !== null) {
    if (typeof http !== 'object' || Array.isArray(http)) fail(file, 'http_server_config must be a mapping');
    const h = http as Record<string, unknown>;
    onlyKeys(file, 'http_server_config.', h, ['headers']);
    if (h.headers !== undefined) {
      if (typeof h.headers !== 'object' || h.headers === null) fail(file, 'http_server_config.headers must be a mapping');
      for (const [k, v] of Object.entries(h.headers as Record<string, unknown>)) {
        if (typeof v !== 'string') fail(file, `http_server_config.headers.${k} must be a string`);
        // Checked here: an invalid header would otherwise fail every response.
        try {
          validateHeaderName(k);
          validateHeaderValue(k, v);
        } catch (e) {
          fail(file, `http_server_config.headers.${k}: ${(e as Error).message}`);
        }
        out.headers[k] = v;
      }
    }
  }
  return out;
}

/**
 * Checks an Authorization header against the users. bcrypt is deliberately slow, so it runs
 * asynchronously (bcryptjs yields to the event loop: a wrong password does not stall scrapes
 * or event ingestion), an unknown user costs the same as a known one (no user enumeration),
 * and a successful (user, password) pair is remembered by its SHA-256 for later requests.
 */
export class BasicAuth {
  private readonly ok = new Set<string>();
  private readonly dummyHash = bcrypt.hashSync('not a password', 10);
  constructor(private readonly users: Map<string, string>) {}

  async check(header: string | undefined): Promise<boolean> {
    if (!header || !header.startsWith('Basic ')) return false;
    const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return false;
    const user = decoded.slice(0, colon);
    const pass = decoded.slice(colon + 1);
    const key = crypto.createHash('sha256').update(user).update('\0').update(pass).digest('hex');
    if (this.ok.has(key)) return true;
    const hash = this.users.get(user);
    const match = await bcrypt.compare(pass, hash ?? this.dummyHash);
    if (!hash || !match) return false;
    this.ok.add(key);
    return true;
  }
}
