/**
 * Issue 22's acceptance end to end, at fleet scale: 24 simulated provers in ONE `simulate`
 * process (fleet-scale-plan.ts: mixed shapes, the conformance rows' behaviours, the seed's
 * fault on FAULTY, a surface down on DEGRADED, the source down on DOWN) → ONE
 * `cuzk-exporter fleet` → a real Prometheus with deploy/fleet/prometheus.yml (every `for:`
 * but the key alert's shortened in a test copy) → remote_write → a real VictoriaMetrics →
 * alerts through a real Alertmanager with deploy/fleet/alertmanager.yml to a webhook this
 * test runs; and the fleet page in a real Chromium.
 *
 * Asserted: every prover's /probe agrees with its simulator's /truth by the conformance rules;
 * every query of the fleet dashboard returns from VictoriaMetrics the aggregate the truths
 * add up to (fleet-scale-expect.ts); the key alert pages for FAULTY alone, through the
 * pager receiver, with the shipped `for: 1m`; nothing else critical is ever pending or
 * firing but DOWN's CuzkSourceDown, which pages and inhibits DOWN's other alerts; DEGRADED's
 * CuzkSurfaceDown goes to the default receiver; the fleet page lists all 24, FAULTY flagged,
 * a click reaches its box page. Waits are on conditions (the three servers' APIs), bounded.
 *
 * UPDATE_SCREENSHOT=1 writes docs/fleet-page.png from this run:
 *   UPDATE_SCREENSHOT=1 npx jest test/e2e/fleet-scale
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import YAML from 'yaml';
import type { Page } from 'playwright-core';
import type { Combo, Row, RowRun } from '../conformance/harness';
import { compareCombo } from '../conformance/rules';
import { chromiumSkipReason, launchBrowser, type BrowserHandle } from '../helpers/browser';
import { FleetStack, fleetStackSkipReason, startFleetStack } from '../helpers/fleet-stack';
import { freePort } from '../helpers/prometheus';
import { parse } from '../helpers/prom-text';
import { BoxAddresses, boxWorkload, killGroup, Proc, startFleetExporter, startSimFleet, truthOf } from '../helpers/sim-fleet';
import { getJson, waitFor } from '../sim/sim-process';
import { comboOf, DEGRADED, DOWN, ENGINE_CONFIG, FAULTY, PLAN, SIM_FLAGS, UP } from './fleet-scale-plan';
import { checkFleetDashboard, type Truths } from './fleet-scale-expect';

const REPO = path.resolve(__dirname, '..', '..');
const ARTIFACTS = path.join(REPO, 'test', '.artifacts', 'fleet-scale');
const DOC_SHOT = path.join(REPO, 'docs', 'fleet-page.png');
const KEY = 'CuzkGpuWorkersIdleWithPartitionsOnGpu';
const SHORT_FOR = '10s';
const skip = fleetStackSkipReason() ?? chromiumSkipReason();
const d = skip ? describe.skip : describe;
if (skip) process.stderr.write(`fleet-scale.test.ts: ${skip}\n`);

interface Notification {
  receiver: string;
  status: string;
  alerts: { status: string; labels: Record<string, string> }[];
}

/** FAULTY's workload: SnapDeals proofs one after another (Curio's ids) until stopped. */
const T0 = Date.now();
const mark = (what: string) => process.stderr.write(`fleet-scale.test.ts: ${((Date.now() - T0) / 1000).toFixed(1)} s ${what}\n`);

const FAULTY_ROW: Row = { id: 'status-bug-clobber', flags: [], healthy: false, workload: () => Promise.resolve() };

d(`fleet at scale: ${PLAN.length} simulated provers → fleet exporter → Prometheus → VictoriaMetrics + Alertmanager, and the fleet page${skip ? ` (${skip})` : ''}`, () => {
  let tmp = '';
  let sim: Proc | null = null;
  let fleet: Proc | null = null;
  let fleetUrl = '';
  let stack: FleetStack | null = null;
  let browser: BrowserHandle | null = null;
  let webhook: http.Server | null = null;
  const pages: Notification[] = [];
  let addrs = new Map<string, BoxAddresses>();
  const closers: (() => void)[] = [];
  let workloads: Promise<string[]> = Promise.resolve([]);
  let faultyStop = false;
  let faultyDone: Promise<void> = Promise.resolve();
  let startedAt = 0;
  let workStart = 0;
  /** Provers other than FAULTY the fleet page showed as MISMATCH. */
  const pageFlags: string[] = [];

  beforeAll(async () => {
    startedAt = Date.now() / 1000;
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fleet-scale-'));
    const engineCfg = path.join(tmp, 'engine.json');
    fs.writeFileSync(engineCfg, JSON.stringify(ENGINE_CONFIG));
    const started = await startSimFleet(tmp, PLAN.map((p) => p.box), [...SIM_FLAGS, '--engine.config', engineCfg]);
    sim = started.proc;
    addrs = started.addrs;
    mark(`${PLAN.length} simulated provers up`);

    // The targets file, as an operator writes it for these boxes.
    const dead = await freePort(); // DOWN's status_listen: off, nothing listens there
    const targets = PLAN.map((p, i) => {
      const a = addrs.get(p.box.name)!;
      const t: Record<string, unknown> = { name: p.box.name, labels: { rack: `r${1 + (i % 3)}` } };
      if (p.attach === 'down') t.status_url = `http://127.0.0.1:${dead}/status`;
      else t.grpc_address = a.grpc;
      if (p.attach === 'tgs' || p.attach === 'degraded') t.status_url = a.status;
      if (p.attach === 'tg' || p.attach === 'tgs') t.timeline_file = a.timeline;
      if (p.attach === 'cmd') t.timeline_command = ['tail', '-n', '0', '-F', a.timeline];
      if (p.attach === 'degraded') t.timeline_file = path.join(tmp, 'never-written.log');
      return t;
    });
    fs.writeFileSync(path.join(tmp, 'targets.yml'), YAML.stringify({ targets }));
    const fx = await startFleetExporter(path.join(tmp, 'targets.yml'), ['--cuzk.poll-interval', '500ms', '--log.level', 'warn']);
    fleet = fx.proc;
    fleetUrl = fx.url;

    // The pager: Alertmanager's webhook receiver.
    const hookPort = await freePort();
    webhook = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        try {
          pages.push(JSON.parse(body) as Notification);
        } catch {
          // not a notification
        }
        res.end();
      });
    });
    await new Promise<void>((r) => webhook!.listen(hookPort, '127.0.0.1', r));

    // The shipped alert rules with every `for:` shortened but the key alert's: its 1 m is
    // what keeps a healthy box's burst end (a finalize tail, a GPU failure's leftovers)
    // from paging, so it is tested as shipped.
    const alerts = YAML.parse(fs.readFileSync(path.join(REPO, 'dashboards', 'rules', 'cuzk-alerts.yml'), 'utf8')) as { groups: { rules: Record<string, unknown>[] }[] };
    let shortened = 0;
    for (const g of alerts.groups) for (const r of g.rules) if (r.alert && r.alert !== KEY && r.for) (r.for = SHORT_FOR), shortened++;
    expect(shortened).toBeGreaterThan(5);
    const rules = path.join(tmp, 'cuzk-alerts.yml');
    fs.writeFileSync(rules, YAML.stringify(alerts));
    stack = await startFleetStack({
      fleetExporter: fleetUrl.replace(/^http:\/\//, ''),
      webhookUrl: `http://127.0.0.1:${hookPort}/cuzk-pages`,
      // 24 probes per interval on a shared 2-core box: 2 s leaves each its 2 s timeout.
      scrapeIntervalSec: 2,
      ruleFiles: [rules, path.join(REPO, 'dashboards', 'rules', 'cuzk-fleet.yml')],
    });

    // Attached before any work: every log followed, every prover scraped.
    await waitFor('every prover attached and scraped', async () => {
      const up = await stack!.prometheus.query('up{job="cuzk"} == 1');
      if (up.length !== PLAN.length) return false;
      for (const p of PLAN) {
        if (p.attach !== 'tg' && p.attach !== 'tgs' && p.attach !== 'cmd') continue;
        const s = parse(await (await fetch(`${fleetUrl}/probe?target=${p.box.name}`)).text());
        if (!s.some((x) => x.name === 'cuzk_surface_up' && x.labels.surface === 'timeline' && x.value === 1)) return false;
      }
      return true;
    }, 120_000);
    mark('every prover attached and scraped');
    browser = await launchBrowser({ viewport: { width: 1440, height: 900 } });

    workStart = Date.now() / 1000;
    // FLEET_TRACE=gpu-08,gpu-06: what a box's merged state is while its mismatch flag is set.
    for (const name of (process.env.FLEET_TRACE ?? '').split(',').filter(Boolean)) {
      void (async () => {
        while (!faultyStop) {
          try {
            const samples = parse(await (await fetch(`${fleetUrl}/probe?target=${name}`)).text());
            if (samples.some((x) => x.name === 'cuzk_status_mismatch' && x.value === 1)) {
              const st = (await (await fetch(`${fleetUrl}/targets/${name}/status`)).json()) as Record<string, unknown>;
              const live = samples.filter((x) => x.name === 'cuzk_partitions' && x.value > 0).map((x) => `${x.labels.proof_kind}/${x.labels.state}=${x.value}`);
              process.stderr.write(`fleet trace ${name} ${((Date.now() / 1000) - workStart).toFixed(1)}s: live ${live.join(' ')} status ${JSON.stringify({ w: st.gpu_workers, p: (st.pipelines as { job_id: string; partitions: { state: string }[] }[]).map((x) => [x.job_id, x.partitions.map((q) => q.state).join(',')]), e: st.exporter })}\n`);
            }
          } catch (e) {
            process.stderr.write(`fleet trace ${name}: ${(e as Error).message}\n`);
          }
          await new Promise((r) => setTimeout(r, 1000));
        }
      })();
    }
    // The work: each box its row's workload (its own gRPC client), FAULTY its SnapDeals loop.
    workloads = Promise.all(
      PLAN.filter((p) => p.row).map(async (p) => {
        const w = boxWorkload(p.box.name, addrs.get(p.box.name)!);
        closers.push(w.close);
        try {
          await p.row!.workload(w.ctx);
          return null;
        } catch (e) {
          return `${p.box.name} (${p.row!.id}): ${(e as Error).message}`;
        }
      }),
    ).then((r) => r.filter((x): x is string => x !== null));
    const f = boxWorkload(FAULTY, addrs.get(FAULTY)!);
    closers.push(f.close);
    faultyDone = (async () => {
      for (let n = 1; !faultyStop && n <= 60; n++) {
        const a = await f.ctx.prove('snap-update', `snap-1000-${n}`, { sector_number: n, miner_id: 1000 });
        if (a.status !== 'COMPLETED') throw new Error(`${FAULTY}: snap-1000-${n} ${String(a.status)}`);
      }
    })();
    faultyDone.catch(() => undefined);
  }, 300_000);

  afterAll(async () => {
    faultyStop = true;
    for (const c of closers) c();
    await browser?.close();
    await stack?.stop();
    await killGroup(fleet);
    await killGroup(sim);
    await new Promise((r) => (webhook ? webhook.close(r) : r(null)));
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('the fleet page: every prover, the faulty one flagged, a click reaches its box page', async () => {
    const page: Page = await browser!.newPage();
    try {
      await page.goto(`${fleetUrl}/`);
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="fleet-row"]').length === n, PLAN.length, { timeout: 60_000 });
      await page.waitForSelector(`[data-testid="fleet-row"][data-target="${FAULTY}"][data-health="mismatch"]`, { timeout: 120_000 });
      await page.waitForSelector(`[data-testid="fleet-row"][data-target="${DOWN}"][data-health="down"]`, { timeout: 30_000 });
      await page.waitForSelector(`[data-testid="fleet-row"][data-target="${DEGRADED}"][data-health="degraded"]`, { timeout: 30_000 });
      await page.waitForFunction(() => Array.from(document.querySelectorAll('[data-testid="fleet-ppm"]')).filter((c) => c.textContent !== '…').length > 0, undefined, { timeout: 30_000 });
      const rows = async () => Object.fromEntries(await page.$$eval('[data-testid="fleet-row"]', (r) => r.map((x) => [x.getAttribute('data-target')!, x.getAttribute('data-health')!]))) as Record<string, string>;
      const health = await rows();
      pageFlags.push(...Object.entries(health).filter(([t, h]) => h === 'mismatch' && t !== FAULTY).map(([t]) => t));
      // Worst first by default: the mismatches first (FAULTY among them), then down, then degraded.
      const order = Object.keys(health);
      const firstNonMismatch = order.findIndex((t) => health[t] !== 'mismatch');
      expect(order.indexOf(FAULTY)).toBeLessThan(firstNonMismatch);
      expect(order.slice(firstNonMismatch, firstNonMismatch + 2)).toEqual([DOWN, DEGRADED]);
      expect(await page.getByTestId('fleet-total-up').textContent()).toBe(`${UP.length} / ${PLAN.length}`);
      // Shapes as strips: gpu-04 has four GPUs of two workers.
      expect(await page.locator('[data-testid="fleet-row"][data-target="gpu-04"] [data-testid="strip-gpu"]').count()).toBe(4);
      expect(await page.locator('[data-testid="fleet-row"][data-target="gpu-04"] [data-testid="strip-cell"]').count()).toBe(8);
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-page.png'), fullPage: true });
      if (process.env.UPDATE_SCREENSHOT === '1') {
        await page.screenshot({ path: DOC_SHOT, fullPage: true });
        process.stderr.write(`fleet-scale.test.ts: wrote ${DOC_SHOT}\n`);
      }
      await page.locator(`[data-testid="fleet-row"][data-target="${FAULTY}"] [data-testid="fleet-link"]`).click();
      await page.waitForURL(`${fleetUrl}/targets/${FAULTY}/`);
      await page.waitForFunction(() => Number(document.querySelector('[data-testid="page-root"]')?.getAttribute('data-update-count')) >= 1, undefined, { timeout: 30_000 });
      expect(await page.getByTestId('meta-target').textContent()).toBe(FAULTY);
      await page.screenshot({ path: path.join(ARTIFACTS, `${FAULTY}-page.png`), fullPage: true });
    } finally {
      await page.close();
    }
  }, 240_000);

  test('Alertmanager pages the key alert for the faulty prover alone and the down prover\'s source; the surface down goes to the default receiver; the source down inhibits the rest', async () => {
    const s = stack!;
    const paged = () => {
      const set = new Set<string>();
      for (const n of pages) for (const a of n.alerts) if (a.status === 'firing') set.add(`${n.receiver} ${a.labels.alertname} ${a.labels.instance} ${a.labels.severity}`);
      return [...set].sort();
    };
    await waitFor('the key alert at the pager', () => paged().includes(`pager ${KEY} ${FAULTY} critical`), 240_000);
    mark('the key alert reached the pager');
    await waitFor(`${DOWN}'s source down at the pager`, () => paged().includes(`pager CuzkSourceDown ${DOWN} critical`), 60_000);
    faultyStop = true;
    // It paged through the exporter's own verdict on FAULTY's surfaces, not a count.
    const why = await s.prometheus.query(`max by (reason) (max_over_time(cuzk_status_mismatch_reason{instance="${FAULTY}", reason=~"owner_idle|surfaces_disagree"}[10m])) == 1`);
    expect(why.length).toBeGreaterThan(0);

    type AmAlert = { labels: Record<string, string>; receivers: { name: string }[]; status: { state: string; inhibitedBy: string[] } };
    const am = async () => (await getJson(`${s.alertmanager!.url}/api/v2/alerts`)) as unknown as AmAlert[];
    // DEGRADED: its TIMELINE surface down — a warning for the default receiver, not a page.
    const surface = await waitFor(`${DEGRADED}'s CuzkSurfaceDown in Alertmanager`, async () => (await am()).find((a) => a.labels.alertname === 'CuzkSurfaceDown' && a.labels.instance === DEGRADED), 60_000);
    expect([surface.labels.surface, surface.labels.severity, surface.receivers.map((r) => r.name), surface.status.state]).toEqual(['timeline', 'warning', ['default'], 'active']);
    // DOWN: every other alert of that prover suppressed by its source-down.
    const down = await waitFor(`${DOWN}'s other alerts inhibited`, async () => {
      const l = (await am()).filter((a) => a.labels.instance === DOWN && a.labels.alertname !== 'CuzkSourceDown');
      return l.length > 0 && l.every((a) => a.status.state === 'suppressed' && a.status.inhibitedBy.length > 0) ? l : undefined;
    }, 60_000);
    expect(down.map((a) => a.labels.alertname)).toContain('CuzkAttachBlindToPoSt');
  }, 300_000);

  test('every prover agrees with its truth, and every fleet dashboard query returns the fleet\'s aggregate from VictoriaMetrics', async () => {
    const s = stack!;
    faultyStop = true;
    expect(await workloads).toEqual([]);
    await faultyDone;
    // Quiescent: every box done (its truth says so).
    mark('workloads done');
    const truths: Truths = new Map();
    for (const p of PLAN) truths.set(p.box.name, await waitFor(`${p.box.name} quiescent`, async () => {
      const t = await truthOf(addrs.get(p.box.name)!);
      return t.quiescent === true ? t : undefined;
    }, 120_000));

    // Each prover's /probe against its own truth, by the conformance rules.
    // (Mismatches during the run are the last test's; here the counters, and the final state.)
    const compareAll = async () => {
      const out: string[] = [];
      for (const p of PLAN) {
        const combo = comboOf(p.attach);
        if (!combo) continue;
        const row = p.row ?? FAULTY_ROW;
        const samples = parse(await (await fetch(`${fleetUrl}/probe?target=${p.box.name}`)).text());
        // Every worker series names its GPU: the dashboards filter on gpu=~"$gpu".
        const noGpu = samples.filter((x) => x.name.startsWith('cuzk_gpu_worker_') && !x.labels.gpu).map((x) => `${x.name}{worker="${x.labels.worker}"}`);
        if (noGpu.length) out.push(`${p.box.name}: worker series without a gpu label: ${[...new Set(noGpu)].join(', ')}`);
        const run = { row, truth: truths.get(p.box.name), lives: [truths.get(p.box.name)], mismatchSeen: new Map([[combo as Combo, 0]]) } as unknown as RowRun;
        out.push(...compareCombo(run, combo as Combo, samples).map((x) => `${p.box.name}: ${x}`));
      }
      return out;
    };
    let last: string[] = [];
    await waitFor('every prover settled on its truth', async () => (last = await compareAll()).length === 0, 90_000).catch(() => undefined);
    mark('provers compared with their truths');

    // VictoriaMetrics has the final counters (remote_write caught up), then every query.
    const dashboard = await checkFleetDashboard(s.victoria, truths, { startedAt, workStart, keyAlertInstance: FAULTY });
    mark('fleet dashboard checked');
    expect({ probe: last, dashboard }).toEqual({ probe: [], dashboard: [] });
  }, 300_000);

  test('nothing else paged: no other critical alert ever fired, nothing else reached the pager', async () => {
    const s = stack!;
    const range = `${Math.ceil(Date.now() / 1000 - startedAt) + 60}s`;
    const states = await s.prometheus.query(`max by (alertname, instance, alertstate) (max_over_time(ALERTS{severity="critical"}[${range}]))`);
    const pending = states.filter((r) => r.metric.alertstate === 'pending').map((r) => `${r.metric.alertname} ${r.metric.instance}`);
    if (pending.length) process.stderr.write(`fleet-scale.test.ts: critical alerts pending at some point (for: not reached): ${pending.sort().join(', ')}\n`);
    const fired = states.filter((r) => r.metric.alertstate === 'firing').map((r) => `${r.metric.alertname} ${r.metric.instance}`);
    expect(fired.sort()).toEqual([`CuzkSourceDown ${DOWN}`, `${KEY} ${FAULTY}`].sort());
    const paged = new Set<string>();
    for (const n of pages) for (const a of n.alerts) if (a.status === 'firing') paged.add(`${a.labels.alertname} ${a.labels.instance}`);
    expect([...paged].sort()).toEqual([`CuzkSourceDown ${DOWN}`, `${KEY} ${FAULTY}`].sort());
    expect(new Set(pages.map((n) => n.receiver))).toEqual(new Set(['pager']));
  }, 60_000);

  test('no prover but the faulty one ever contradicted itself — healthy, failing (a GPU or synthesis failure is no contradiction) or running PoSt with /status attached: no cuzk_status_mismatch, no flag on the fleet page', async () => {
    const s = stack!;
    const range = `${Math.ceil(Date.now() / 1000 - startedAt) + 60}s`;
    const reasons = await s.prometheus.query(`max by (instance, reason) (max_over_time(cuzk_status_mismatch_reason{job="cuzk", instance!="${FAULTY}"}[${range}])) == 1`);
    const flagged = reasons.map((r) => `${r.metric.instance} ${r.metric.reason} (${PLAN.find((p) => p.box.name === r.metric.instance)?.row?.id ?? '-'})`).sort();
    expect({ mismatch: flagged, page: pageFlags.sort() }).toEqual({ mismatch: [], page: [] });
  }, 60_000);
});
