/**
 * Issue 12, case 1: basic auth must not be a way to stall the server. With bcrypt on the
 * event loop, 200 concurrent wrong passwords froze it for ~23 s: /-/healthy and scrapes
 * with good credentials waited the whole time. Now bcrypt runs in a worker thread, one
 * comparison at a time, with a bounded queue (beyond it: 429 at once, counted in
 * cuzk_exporter_errors_total{reason="auth_overload"}), identical credentials in flight
 * share a comparison, and a scraper's cached success cannot be evicted by failures.
 * Real server, real bcrypt hashes (cost 10, as htpasswd -nBC 10 makes them).
 * The latency figure (p99 under 200 concurrent wrong passwords) is measured by
 * `npm run bench -- --only auth-stall`; here the assertions are about starvation,
 * with bounds an event loop that runs bcrypt itself misses by seconds.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import bcrypt from 'bcryptjs';
import type { FloodResult } from '../../bench/lib/auth-flood';
import { BcryptPool } from '../../src/exporter/bcrypt-pool';
import { find, parse } from '../helpers/prom-text';
import { basic, request, startWeb, tempDir, Web } from './web-helpers';

const HASH = bcrypt.hashSync('right password', 10);
let web: Web;

beforeAll(async () => {
  web = await startWeb(tempDir('cuzk-auth-'), `basic_auth_users:\n  prom: '${HASH}'\n`);
});
afterAll(async () => {
  await web.close();
});

const good = { headers: { Authorization: basic('prom', 'right password') } };

/** Runs the flood in its own process (dist/bench/lib/auth-flood.js, built by the test setup). */
function floodProcess(url: string, concurrency: number, ms: number): Promise<FloodResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'dist', 'bench', 'lib', 'auth-flood.js'), url, String(concurrency), String(ms)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as FloodResult) : reject(new Error(`flood exited ${code}`))));
  });
}

test('200 concurrent wrong passwords do not stall /-/healthy or an authenticated scrape', async () => {
  // The scraper has logged in once (its success is cached, as the toolkit caches it).
  expect((await request(`${web.server.url}/metrics`, good)).status).toBe(200);

  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const compareSpy = jest.spyOn(bcrypt, 'compare');
  const compareSyncSpy = jest.spyOn(bcrypt, 'compareSync');
  // Another process keeps 200 wrong-password requests in flight for 4 s, each a new password.
  const flood = floodProcess(`${web.server.url}/metrics`, 200, 4000);
  let floodDone = false;
  void flood.finally(() => (floodDone = true)).catch(() => {});
  // Meanwhile: health checks and authenticated scrapes, back to back.
  const latencies: number[] = [];
  const codes: number[] = [];
  while (!floodDone) {
    for (const p of ['/-/healthy', '/metrics']) {
      const t0 = performance.now();
      const r = await request(`${web.server.url}${p}`, good);
      latencies.push(performance.now() - t0);
      codes.push(r.status);
    }
  }
  const result = await flood;
  delay.disable();

  expect(new Set(codes)).toEqual(new Set([200]));
  // No bcrypt on the event loop's thread: bcryptjs in this thread was never called (the
  // worker thread loads its own copy); the checks that were made ran over there.
  expect(result.statuses['401'] ?? 0).toBeGreaterThan(0);
  expect(compareSpy).not.toHaveBeenCalled();
  expect(compareSyncSpy).not.toHaveBeenCalled();
  // Wall time: bcrypt in the event loop holds each request for seconds (200 at once, ~65
  // ms each); here milliseconds. The latency aim (p99 < 100 ms) is measured by the bench;
  // these bounds only have to hold on a loaded CI machine.
  expect(latencies.length).toBeGreaterThanOrEqual(10);
  expect(Math.max(...latencies)).toBeLessThan(5000);
  expect(delay.max / 1e6).toBeLessThan(2000);

  // The attacker got 401 (checked) or 429 (queue full), nothing else, and both happened.
  expect(Object.keys(result.statuses).sort()).toEqual(['401', '429']);
  const body = (await request(`${web.server.url}/metrics`, good)).body;
  expect(find(parse(body), 'cuzk_exporter_errors_total', { reason: 'auth_overload' })).toBe(result.statuses['429']);
});

test('identical wrong credentials in flight share one bcrypt comparison (no queue, no 429)', async () => {
  const wrong = { headers: { Authorization: basic('prom', 'the same wrong password') } };
  const replies = await Promise.all(Array.from({ length: 200 }, () => request(`${web.server.url}/-/healthy`, wrong)));
  expect(new Set(replies.map((r) => r.status))).toEqual(new Set([401]));
  expect(replies[0].headers['www-authenticate']).toMatch(/^Basic/);
});

test('passwords longer than bcrypt can check (72 bytes) are refused without hashing, as Go does', async () => {
  const pool = jest.spyOn(BcryptPool.prototype, 'compare');
  const long = { headers: { Authorization: basic('prom', 'x'.repeat(73)) } };
  const replies = await Promise.all(Array.from({ length: 50 }, () => request(`${web.server.url}/metrics`, long)));
  expect(new Set(replies.map((r) => r.status))).toEqual(new Set([401]));
  expect(pool).not.toHaveBeenCalled();
  pool.mockRestore();
});
