/**
 * Issue 12 acceptance: a seeded property-based fuzz of the web-config loader (fast-check).
 * Every generated file either loads into a config that keeps the loader's promises (only
 * the toolkit's headers, only bcrypt hashes, TLS only with a matching certificate and key)
 * or is refused with one readable line that names the file — never another exception,
 * never a hang. A few thousand cases here; CUZK_FUZZ_RUNS=100000 (and CUZK_FUZZ_SEED) for
 * more, e.g. in the soak script.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import fc from 'fast-check';
import YAML from 'yaml';
import { loadWebConfig } from '../../src/exporter/web-config';
import { Pki } from './pki';
import { tempDir } from './web-helpers';

const RUNS = Number(process.env.CUZK_FUZZ_RUNS ?? 2000);
const SEED = Number(process.env.CUZK_FUZZ_SEED ?? 20261201);
const dir = tempDir('cuzk-fuzz-web-');
const pki = new Pki(path.join(dir, 'pki'));
const srv = pki.issue('server', ['DNS:localhost']);
const other = pki.issue('other', ['DNS:other']);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const HASH = bcrypt.hashSync('x', 4);
const files = [srv.cert, srv.key, other.cert, other.key, pki.ca.cert, pki.ca.key, path.join(dir, 'missing.pem'), dir, '', 'relative.pem'];
const scalar = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1e308, '', 'TLS12', 'TLS10', 'TLS13', 'TLS99', 'NoClientCert', 'RequireAnyClientCert', 'VerifyClientCertIfGiven', 'RequireAndVerifyClientCert', 'RequestClientCert', 'deny', 'nosniff', '1s', '0', '-1s', HASH, '$2y$10$short'),
  fc.constantFrom(...files),
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
);
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(fc.string({ maxLength: 8 }), tie('v'), { maxKeys: 4 })),
})).v;
const pick = <T>(xs: readonly T[]) => fc.constantFrom(...xs);
const TLS_KEYS = ['cert_file', 'key_file', 'cert', 'key', 'client_ca_file', 'client_ca', 'client_auth_type', 'client_allowed_sans', 'min_version', 'max_version', 'cipher_suites', 'curve_preferences', 'prefer_server_cipher_suites', 'bogus'];
const HEADER_NAMES = ['Content-Length', 'Content-Type', 'X-Frame-Options', 'x-frame-options', 'Strict-Transport-Security', 'X-Content-Type-Options', 'Content-Security-Policy', 'X-XSS-Protection', 'Set-Cookie', 'X-Other'];
const tlsSection = fc.oneof(
  value,
  fc.dictionary(pick(TLS_KEYS), fc.oneof(value, pick(files), fc.array(pick(['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_AES_128_GCM_SHA256', 'X25519', 'CurveP256', 'nope']), { maxLength: 3 })), { maxKeys: 6 }),
);
const headers = fc.oneof(value, fc.dictionary(pick(HEADER_NAMES), fc.oneof(value, pick(['deny', 'sameorigin', 'nosniff', 'a\nb', '']))));
const httpSection = fc.oneof(value, fc.record({ http2: value, headers }, { requiredKeys: [] }));
const users = fc.oneof(value, fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(pick([HASH, HASH.replace('$2a$', '$2y$'), '$2b$99$' + 'a'.repeat(53)]), value), { maxKeys: 3 }));
const rate = fc.oneof(value, fc.record({ interval: value, burst: value }, { requiredKeys: [] }));
const structured = fc.record({ tls_server_config: tlsSection, http_server_config: httpSection, basic_auth_users: users, rate_limit: rate, extra: value }, { requiredKeys: [] });
const docs = fc.oneof(
  structured.map((d) => YAML.stringify(d)),
  fc.string({ maxLength: 200 }),
  fc.tuple(structured.map((d) => YAML.stringify(d)), fc.nat(), fc.string({ maxLength: 5 })).map(([t, i, s]) => t.slice(0, i % (t.length + 1)) + s + t.slice(i % (t.length + 1))),
  fc.nat({ max: 3000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
);

test(`web config loader: ${RUNS} generated files, no crash, only promised configs (seed ${SEED})`, () => {
  const file = path.join(dir, 'web.yml');
  let loaded = 0;
  fc.assert(
    fc.property(docs, (text) => {
      fs.writeFileSync(file, text);
      let cfg;
      try {
        cfg = loadWebConfig(file);
      } catch (e) {
        // A refusal: an Error (not a TypeError/RangeError from a bug), one line, naming the file.
        expect(e).toBeInstanceOf(Error);
        expect((e as Error).constructor).toBe(Error);
        expect((e as Error).message.startsWith(`web config ${file}: `)).toBe(true);
        expect((e as Error).message).not.toMatch(/\n/);
        return;
      }
      loaded++;
      for (const h of Object.keys(cfg.headers)) expect(['Strict-Transport-Security', 'X-Content-Type-Options', 'X-Frame-Options', 'X-XSS-Protection', 'Content-Security-Policy']).toContain(h);
      for (const [, hash] of cfg.basicAuthUsers ?? []) expect(hash).toMatch(/^\$2[ab]\$(0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$/);
      if (cfg.basicAuthUsers) expect(cfg.basicAuthUsers.size).toBeGreaterThan(0);
      if (cfg.tls) {
        expect(cfg.tls.cert.length).toBeGreaterThan(0);
        expect(cfg.tls.key.length).toBeGreaterThan(0);
      }
      if (cfg.rateLimit) expect(cfg.rateLimit.intervalMs).toBeGreaterThan(0);
      expect(typeof cfg.http2).toBe('boolean');
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  // The generator reaches accepted configs too, not only refusals.
  expect(loaded).toBeGreaterThan(RUNS / 50);
});
