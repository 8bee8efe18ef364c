/**
 * web-config.ts's bound on basic_auth_users (header comment: "Bounds: far above any real web
 * config"): 10,000 users load, 10,001 are refused. Apart from web-config-rules.test.ts
 * because parsing 10,000 YAML keys takes seconds (not for the mutation suite's every run).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadWebConfig } from '../../src/exporter/web-config';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-webbounds-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const HASH4 = '$2a$04$' + 'a'.repeat(53);
const users = (k: number) => `basic_auth_users:\n${Array.from({ length: k }, (_, i) => `  u${i}: '${HASH4}'`).join('\n')}\n`;

test('at most 10,000 users', () => {
  const ok = path.join(dir, 'ok.yml');
  fs.writeFileSync(ok, users(10_000));
  expect(loadWebConfig(ok).basicAuthUsers!.size).toBe(10_000);
  const over = path.join(dir, 'over.yml');
  fs.writeFileSync(over, users(10_001));
  expect(() => loadWebConfig(over)).toThrow(`web config ${over}: basic_auth_users: more than 10000 users`);
}, 60_000);
