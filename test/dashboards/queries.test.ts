/**
 * The shipped dashboard and rules against a real Prometheus scraping a fake exporter (built
 * from the metric catalogue): every dashboard query parses and returns data within seconds of
 * 1 s scrapes, every rule loads as written and evaluates without error, a healthy exporter
 * fires nothing (although it proves the split way: more partitions on the GPU than busy
 * workers), and the historical status bug fires the key alert (with `for:` shortened).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { buildFleetDashboard } from '../../dashboards/src/fleet';
import { FLEET_RECORDING_RULES, FLEET_RULE_GROUPS } from '../../dashboards/src/fleet-rules';
import { buildOverviewDashboard } from '../../dashboards/src/overview';
import { allQueries, expandVariables } from '../../dashboards/src/queries';
import { ALERTING_RULES, RECORDING_RULES, RULE_GROUPS, isAlertingRule } from '../../dashboards/src/rules';
import { FakeExporter, startFakeExporter } from './fake-exporter';
import { findBinary, pollUntil, RunningPrometheus, startPrometheus, writeRulesWithShortFor } from '../helpers/prometheus';

const RULES = path.join(__dirname, '..', '..', 'dashboards', 'rules', 'cuzk-alerts.yml');
const FLEET_RULES = path.join(__dirname, '..', '..', 'dashboards', 'rules', 'cuzk-fleet.yml');
const prometheusBin = findBinary('prometheus');
const describeWithPrometheus = prometheusBin ? describe : describe.skip;
if (!prometheusBin) {
  // eslint-disable-next-line no-console
  console.warn('SKIPPED dashboard/rules queries against Prometheus: no prometheus binary (apt-get install prometheus, or set PROMETHEUS_BIN)');
}

const VARS = { job: '.+', instance: '.+', gpu: '.+', rateInterval: '5s', interval: '1s', range: '30s' };
const squash = (s: string): string => s.replace(/\s+/g, '');

describeWithPrometheus('dashboard and rules against a real Prometheus', () => {
  let fake: FakeExporter;
  let prom: RunningPrometheus;
  let tmp: string;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-dash-e2e-'));
    fake = await startFakeExporter();
    const rules = writeRulesWithShortFor(RULES, path.join(tmp, 'cuzk-alerts.short.yml'), '1s');
    prom = await startPrometheus({ scrapeTargets: [fake.target], scrapeIntervalSec: 1, evaluationIntervalSec: 1, ruleFiles: [rules, FLEET_RULES] });
    await prom.waitForTargetsUp();
  });

  afterAll(async () => {
    await prom?.stop();
    await fake?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  const dashboard = buildOverviewDashboard();
  const fleetDashboard = buildFleetDashboard();
  const queries = [...allQueries(dashboard), ...allQueries(fleetDashboard)].filter((q) => q.kind !== 'annotation');

  test('every dashboard query is valid PromQL', async () => {
    const errors: string[] = [];
    for (const q of [...allQueries(dashboard), ...allQueries(fleetDashboard)]) {
      try {
        await prom.query(expandVariables(q.expr, VARS));
      } catch (e) {
        errors.push(`${q.where} ${q.refId ?? ''}: ${(e as Error).message}`);
      }
    }
    expect(errors).toEqual([]);
  });

  test('every PromQL example in docs/runbook.md is valid', async () => {
    const md = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'runbook.md'), 'utf8');
    const examples: string[] = [];
    for (const block of md.matchAll(/```promql\n([\s\S]*?)```/g)) {
      // One query per line; lines indented deeper than the block continue the previous one.
      const lines = (block[1] as string).split('\n').filter((l) => l.trim());
      const indent = Math.min(...lines.map((l) => (/^\s*/.exec(l) as RegExpExecArray)[0].length));
      for (const line of lines.map((l) => l.slice(indent))) {
        if (!line.trim()) continue;
        if (/^\s/.test(line) && examples.length) examples[examples.length - 1] += ' ' + line.trim();
        else examples.push(line);
      }
    }
    expect(examples.length).toBeGreaterThan(20);
    const errors: string[] = [];
    for (const e of examples) {
      try {
        await prom.query(e);
      } catch (err) {
        errors.push(`${e}: ${(err as Error).message}`);
      }
    }
    expect(errors).toEqual([]);
  });

  test('every dashboard panel and variable query returns data after a few scrapes', async () => {
    let empty: string[] = [];
    const check = async (): Promise<boolean> => {
      empty = [];
      for (const q of queries) {
        const r = await prom.query(expandVariables(q.expr, VARS));
        const n = Array.isArray(r.result) && r.resultType !== 'scalar' && r.resultType !== 'string' ? r.result.length : 1;
        if (n === 0) empty.push(`${q.where} ${q.refId ?? ''}: ${q.expr}`);
      }
      return empty.length === 0;
    };
    try {
      await pollUntil(check, 15000, 'all dashboard queries to return data', undefined, 250);
    } catch (e) {
      throw new Error(`${(e as Error).message}\nstill empty:\n${empty.join('\n')}\nscrapes: ${fake.scrapes()}\n${prom.logs()}`);
    }
    expect(empty).toEqual([]);
    expect(queries.length).toBeGreaterThan(40);
  });

  test('rules load exactly as written and evaluate without errors', async () => {
    await pollUntil(
      async () => (await prom.rules()).every((g) => g.rules.every((r) => r.health === 'ok')),
      10000,
      'every rule to be evaluated',
    );
    const groups = await prom.rules();
    // The API lists groups by name; compare in the source's order.
    const ALL_GROUPS = [...RULE_GROUPS, ...FLEET_RULE_GROUPS];
    expect(groups.map((g) => g.name).sort()).toEqual(ALL_GROUPS.map((g) => g.name).sort());
    const loaded = ALL_GROUPS.flatMap((want) => groups.find((g) => g.name === want.name)?.rules ?? []);
    expect(loaded).toHaveLength(ALERTING_RULES.length + RECORDING_RULES.length + FLEET_RECORDING_RULES.length);
    for (const r of loaded) expect({ name: r.name, health: r.health, lastError: r.lastError ?? '' }).toEqual({ name: r.name, health: 'ok', lastError: '' });
    const want = ALL_GROUPS.flatMap((g) => g.rules);
    loaded.forEach((got, i) => {
      const w = want[i];
      if (!w) throw new Error(`unexpected rule ${got.name}`);
      expect(squash(got.query)).toBe(squash(w.expr));
      if (isAlertingRule(w)) {
        expect({ type: got.type, name: got.name, duration: got.duration, labels: got.labels, annotations: got.annotations }).toEqual({
          type: 'alerting',
          name: w.alert,
          duration: 1, // shortened from w.for by writeRulesWithShortFor
          labels: w.labels,
          annotations: w.annotations,
        });
      } else {
        expect({ type: got.type, name: got.name }).toEqual({ type: 'recording', name: w.record });
      }
    });
  });

  test('a healthy exporter fires no alert; the historical status bug fires the key alert', async () => {
    // Let the rules evaluate (with for: 1s) over data that has every series.
    await pollUntil(async () => (await prom.queryVector('instance_gpu:cuzk_gpu_worker_utilization:ratio_rate1m')).length === 2, 10000, 'recording rules');
    const mark = Date.now();
    await pollUntil(
      async () => (await prom.rules()).every((g) => g.rules.every((r) => Date.parse((r as { lastEvaluation?: string }).lastEvaluation ?? '') > mark + 2000)),
      10000,
      'two more rule evaluations',
    );
    expect(await prom.alerts()).toEqual([]);

    fake.setBug(true);
    let firing: Awaited<ReturnType<RunningPrometheus['alerts']>> = [];
    await pollUntil(
      async () => {
        firing = (await prom.alerts()).filter((a) => a.state === 'firing');
        return firing.some((a) => a.labels.alertname === 'CuzkGpuWorkersIdleWithPartitionsOnGpu');
      },
      15000,
      'CuzkGpuWorkersIdleWithPartitionsOnGpu to fire',
    );
    const key = firing.find((a) => a.labels.alertname === 'CuzkGpuWorkersIdleWithPartitionsOnGpu');
    expect(key?.labels).toEqual({ alertname: 'CuzkGpuWorkersIdleWithPartitionsOnGpu', severity: 'critical', job: 'cuzk', instance: fake.target });
    // (2 in gpu + one finalizing per kind, no busy worker; the fake names the count-based reason)
    expect(key?.annotations.description).toContain(
      `${fake.target}: a GPU worker is reported idle while a partition it picked up is still on the GPU — now 6 partition(s) in gpu/finalizing and 0 busy GPU worker(s); exporter mismatch reasons in the last 2m: idle_with_partitions_on_gpu.`,
    );
    // Nothing unrelated fired.
    expect(new Set(firing.map((a) => a.labels.alertname))).toEqual(
      new Set(['CuzkGpuWorkersIdleWithPartitionsOnGpu', ...(firing.some((a) => a.labels.alertname === 'CuzkStatusMismatch') ? ['CuzkStatusMismatch'] : [])]),
    );
  });
});
