/**
 * The fleet end to end, small (issue 22; fleet-scale.test.ts runs it with 24 provers): four
 * simulated cuzk daemons (`cuzk-exporter simulate`; box-2 with two GPUs, box-3 with the
 * historical status bug and a long finalize tail) → one `cuzk-exporter fleet` (gRPC + TIMELINE
 * for each, a timeline command for two, /status too for box-3) → a real Prometheus with
 * deploy/fleet/prometheus.yml (service discovery from /targets, /probe relabelled so
 * `instance` is the prover) → remote_write → a real VictoriaMetrics, queried; Alertmanager
 * with deploy/fleet/alertmanager.yml; and the fleet page in a real Chromium: every prover, the
 * faulty one flagged, sorting, a click into its box page.
 * (docs/fleet-page.png comes from fleet-scale.test.ts: UPDATE_SCREENSHOT=1 npx jest test/e2e/fleet-scale.)
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { buildFleetDashboard } from '../../dashboards/src/fleet';
import { allQueries, expandVariables } from '../../dashboards/src/queries';
import { chromiumSkipReason, launchBrowser, type BrowserHandle } from '../helpers/browser';
import { CLI } from '../helpers/cli-run';
import { FleetStack, fleetStackSkipReason, startFleetStack } from '../helpers/fleet-stack';
import { killAll, SimProcess, startSim, waitFor } from '../sim/sim-process';

const REPO = path.resolve(__dirname, '..', '..');
const ARTIFACTS = path.join(REPO, 'test', '.artifacts', 'fleet');
const skip = fleetStackSkipReason() ?? chromiumSkipReason();
const d = skip ? describe.skip : describe;
if (skip) process.stderr.write(`fleet-stack.test.ts: ${skip}\n`);

const BOXES = ['box-1', 'box-2', 'box-3', 'box-4'];

d(`fleet: simulated provers → fleet exporter → Prometheus → VictoriaMetrics, and the fleet page${skip ? ` (${skip})` : ''}`, () => {
  let tmp: string;
  let sims: SimProcess[] = [];
  let fleet: ChildProcess | null = null;
  let fleetUrl = '';
  let stack: FleetStack | null = null;
  let browser: BrowserHandle | null = null;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fleet-e2e-'));
    const engineCfg = path.join(tmp, 'box-3.engine.json');
    fs.writeFileSync(engineCfg, JSON.stringify({ sim: { 'snap-update': { synth_ms: 100, gpu_ms: 250, finalize_ms: 1000, jitter: 0 } } }));
    const common = ['--engine.backend', 'sim', '--simulate.grpc-listen', '127.0.0.1:0', '--simulate.status-listen', '127.0.0.1:0', '--shutdown.grace', '0s', '--log.level', 'warn'];
    const log = (b: string) => path.join(tmp, `${b}.cuzk.log`);
    sims = await Promise.all([
      startSim([...common, '--engine.time-scale', '0.2', '--simulate.timeline-file', log('box-1')]),
      startSim([...common, '--engine.time-scale', '0.2', '--engine.gpus', '2', '--simulate.timeline-file', log('box-2')]),
      startSim([
        ...common,
        '--engine.config', engineCfg,
        '--engine.workers-per-gpu', '1',
        '--workload.mix', 'snap-update=1',
        '--workload.concurrency', '1',
        '--fault.status-bug-kind', 'snap-update',
        '--simulate.timeline-file', log('box-3'),
      ]),
      startSim([...common, '--engine.time-scale', '0.2', '--simulate.timeline-file', log('box-4')]),
    ]);
    const [b1, b2, b3, b4] = sims;
    const targets = [
      `targets:`,
      `  - {name: box-1, labels: {rack: r1}, grpc_address: "${b1.grpcAddress}", timeline_command: [tail, -n, "0", -F, "${log('box-1')}"]}`,
      `  - {name: box-2, labels: {rack: r1}, grpc_address: "${b2.grpcAddress}", timeline_command: [tail, -n, "0", -F, "${log('box-2')}"]}`,
      `  - {name: box-3, labels: {rack: r2}, grpc_address: "${b3.grpcAddress}", status_url: "${b3.statusUrl}", timeline_file: "${log('box-3')}"}`,
      `  - {name: box-4, labels: {rack: r2}, grpc_address: "${b4.grpcAddress}", timeline_file: "${log('box-4')}"}`,
      '',
    ].join('\n');
    fs.writeFileSync(path.join(tmp, 'targets.yml'), targets);
    const child = spawn(process.execPath, [CLI, 'fleet', '--targets.file', path.join(tmp, 'targets.yml'), '--web.listen-address', '127.0.0.1:0', '--cuzk.poll-interval', '250ms'], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    fleet = child;
    let out = '';
    child.stdout!.on('data', (x) => (out += x));
    child.stderr!.on('data', (x) => (out += x));
    fleetUrl = await waitFor('the fleet exporter', () => /fleet page: +(http:\/\/\S+)\//.exec(out)?.[1] ?? (child.exitCode !== null ? Promise.reject(new Error(out)) : undefined), 60_000);
    stack = await startFleetStack({ fleetExporter: fleetUrl.replace(/^http:\/\//, ''), scrapeIntervalSec: 1, evaluationIntervalSec: 1 });
    browser = await launchBrowser({ viewport: { width: 1440, height: 900 } });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    if (fleet?.pid && fleet.exitCode === null) {
      try {
        process.kill(-fleet.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    killAll();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('Prometheus discovers every prover from /targets and scrapes it through /probe with instance = its name; VictoriaMetrics answers the fleet queries', async () => {
    const s = stack!;
    // Every prover scraped, its instance its name, its targets-file labels attached.
    const up = await waitFor(
      'every prover scraped through /probe',
      async () => {
        const r = await s.prometheus.query('up{job="cuzk"} == 1');
        return r.length === BOXES.length ? r : undefined;
      },
      60_000,
    );
    expect(up.map((x) => [x.metric.instance, x.metric.rack]).sort()).toEqual([
      ['box-1', 'r1'],
      ['box-2', 'r1'],
      ['box-3', 'r2'],
      ['box-4', 'r2'],
    ]);
    // The fleet exporter's own health, scraped as its own job.
    // Its own scrape has its own offset: waited for, not assumed done with the provers'
    // (CI run B, beside stress-ng, queried it before its first scrape).
    const own = await waitFor(
      "the fleet exporter's own scrape",
      async () => (await s.prometheus.query('cuzk_fleet_targets{job="cuzk-fleet-exporter"}'))[0]?.value[1],
      60_000,
    );
    expect(own).toBe('4');

    // Through remote_write, VictoriaMetrics has the raw series and the fleet recording rules.
    const vm = s.victoria;
    const provers = await waitFor(
      'job:cuzk_up:count = 4 in VictoriaMetrics',
      async () => {
        const r = await vm.query('job:cuzk_up:count{job="cuzk"}');
        return r.length === 1 && r[0].value[1] === '4' ? r : undefined;
      },
      90_000,
    );
    expect(provers[0].metric).toEqual({ __name__: 'job:cuzk_up:count', job: 'cuzk' });
    const gpus = await waitFor('GPUs per prover in VictoriaMetrics', async () => {
      const r = await vm.query('count by (instance) (cuzk_gpu_info{job="cuzk"})');
      return r.length === 4 ? r : undefined;
    }, 60_000);
    expect(Object.fromEntries(gpus.map((x) => [x.metric.instance, x.value[1]]))).toEqual({ 'box-1': '1', 'box-2': '2', 'box-3': '1', 'box-4': '1' });
    // Every query of the fleet dashboard is valid on VictoriaMetrics (its PromQL dialect).
    const errors: string[] = [];
    // (Variables' label_values() are Grafana's; their selectors are queried as they are.)
    for (const q of allQueries(buildFleetDashboard())) {
      try {
        await vm.query(expandVariables(q.expr, { job: 'cuzk', instance: '.+', gpu: '.+', rateInterval: '1m', interval: '15s', range: '5m' }));
      } catch (e) {
        errors.push(`${q.where}: ${(e as Error).message}`);
      }
    }
    expect(errors).toEqual([]);
    // The fleet utilisation from the busy-seconds counters is a fraction in VictoriaMetrics too.
    const util = await waitFor('fleet utilisation in VictoriaMetrics', async () => {
      const r = await vm.query('job:cuzk_gpu_worker_utilization:ratio_rate1m{job="cuzk"}');
      return r.length === 1 ? Number(r[0].value[1]) : undefined;
    }, 60_000);
    expect(util).toBeGreaterThan(0);
    expect(util).toBeLessThanOrEqual(1);
  }, 300_000);

  test('the fleet page: every prover, the faulty one flagged, sortable, a click into its box page', async () => {
    const page: Page = await browser!.newPage();
    try {
      await page.goto(`${fleetUrl}/`);
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="fleet-row"]').length === n, BOXES.length, { timeout: 30_000 });
      // box-3 is flagged (the clobber shows at the end of each of its jobs); the others are not.
      await page.waitForSelector('[data-testid="fleet-row"][data-target="box-3"][data-health="mismatch"]', { timeout: 120_000 });
      const health = await page.$$eval('[data-testid="fleet-row"]', (rows) => rows.map((r) => [r.getAttribute('data-target'), r.getAttribute('data-health')]));
      expect(health[0]).toEqual(['box-3', 'mismatch']); // worst first by default
      expect(health.filter(([, h]) => h === 'mismatch').map(([t]) => t)).toEqual(['box-3']);
      const chip = page.locator('[data-testid="fleet-row"][data-target="box-3"] [data-testid="health-chip"]').first();
      expect(await chip.getAttribute('data-bad')).toBe('true');
      expect(await chip.textContent()).toMatch(/^MISMATCH/);
      // Workers as a strip: box-2 has two GPUs of two workers each.
      expect(await page.locator('[data-testid="fleet-row"][data-target="box-2"] [data-testid="strip-gpu"]').count()).toBe(2);
      expect(await page.locator('[data-testid="fleet-row"][data-target="box-2"] [data-testid="strip-cell"]').count()).toBe(4);
      // Utilisation and proofs/min appear (from the counters, after a few polls).
      await page.waitForFunction(() => Array.from(document.querySelectorAll('[data-testid="fleet-row"]')).every((r) => r.getAttribute('data-util') !== ''), undefined, { timeout: 30_000 });
      expect(await page.getByTestId('fleet-total-up').textContent()).toBe('4 / 4');
      expect(Number(await page.getByTestId('fleet-total-attention').textContent())).toBeGreaterThanOrEqual(1);

      // Sorting: by name, then the other way; the choice is in the URL.
      await page.locator('th[data-sort="name"] button').click();
      const byName = await page.$$eval('[data-testid="fleet-row"]', (rows) => rows.map((r) => r.getAttribute('data-target')));
      expect(byName).toEqual(BOXES);
      expect(await page.getAttribute('th[data-sort="name"]', 'aria-sort')).toBe('ascending');
      await page.locator('th[data-sort="name"] button').click();
      expect(await page.$$eval('[data-testid="fleet-row"]', (rows) => rows.map((r) => r.getAttribute('data-target')))).toEqual([...BOXES].reverse());
      expect(new URL(page.url()).hash).toBe('#sort=name:desc');
      await page.locator('th[data-sort="util"] button').click();
      const utils = await page.$$eval('[data-testid="fleet-row"]', (rows) => rows.map((r) => Number(r.getAttribute('data-util'))));
      expect(utils).toEqual([...utils].sort((a, b) => a - b)); // lowest first

      // Back to the default (worst first) for the picture, once proofs/min has a window.
      await page.locator('th[data-sort="health"] button').click();
      await page.waitForFunction(() => Array.from(document.querySelectorAll('[data-testid="fleet-ppm"]')).every((c) => c.textContent !== '…'), undefined, { timeout: 30_000 });
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-page.png'), fullPage: true });

      // A click on the faulty prover opens its box page, served for that target.
      await page.locator('[data-testid="fleet-row"][data-target="box-3"] [data-testid="fleet-link"]').click();
      await page.waitForURL(`${fleetUrl}/targets/box-3/`);
      await page.waitForFunction(() => Number(document.querySelector('[data-testid="page-root"]')?.getAttribute('data-update-count')) >= 1, undefined, { timeout: 20_000 });
      expect(await page.getByTestId('meta-target').textContent()).toBe('box-3');
      expect(await page.getByTestId('meta-source').textContent()).toBe('attach');
      expect(await page.getByTestId('fleet-back').getAttribute('data-active')).toBe('true');
      expect(await page.locator('[data-testid^="worker-"][data-state]').count()).toBe(1);
      await page.screenshot({ path: path.join(ARTIFACTS, 'box-3-page.png'), fullPage: true });
      await page.getByTestId('fleet-back').click();
      await page.waitForURL(`${fleetUrl}/`);
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="fleet-row"]').length === n, BOXES.length, { timeout: 20_000 });
    } finally {
      await page.close();
    }
  }, 300_000);
});
