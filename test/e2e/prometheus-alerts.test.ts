/**
 * End to end (issue #5, DESIGN §9): a real Prometheus (Debian's /usr/bin/prometheus) scrapes
 * two real exporters in-process — each the reference prover (NativeEngine, backend "sim") plus
 * the real Telemetry and HTTP server — under the same SnapDeals-heavy workload:
 *
 *  - "faulty": the historical cuzk status bug injected for snap-update (faults.status_bug_kind:
 *    a worker that takes a SnapDeals partition never reports busy);
 *  - "normal": the same engine and workload without the fault.
 *
 * Prometheus loads the shipped rules (recording + alerting) through a generated test copy
 * whose `for:` is shortened to FOR (writeRulesWithShortFor into a temp dir; the shipped file
 * is never edited). The test asserts:
 *  1. on "faulty", /api/v1/alerts shows CuzkGpuWorkersIdleWithPartitionsOnGpu `firing` with the
 *     shipped labels and annotations, after having been pending for at least `for:`;
 *  2. on "normal", over a run at least as long as "faulty" needed to fire, the alert is never
 *     pending or firing: /api/v1/alerts at every rule evaluation, and ALERTS / ALERTS_FOR_STATE
 *     over the whole run range (range query at the evaluation step, plus count_over_time over
 *     the raw samples), while a SnapDeals partition really was in the gpu state at most
 *     scrapes (the "never" is not vacuous);
 *  3. every panel query of every shipped dashboard (dashboards/*.json read from disk), Grafana
 *     variables substituted as Grafana would for one instance, returns data — at least one
 *     finite value — from that Prometheus, for both exporters.
 *
 * Synchronisation is by polling Prometheus' HTTP API with a bound (pollUntil); no sleeps.
 */
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { EngineConfig } from '../../src/engine/native-engine';
import { Workload, type Mix } from '../../src/engine/workload';
import { buildOverviewDashboard } from '../../dashboards/src/overview';
import { expandVariables, panelQueries, variableQueries, annotationQueries, type DashboardQuery } from '../../dashboards/src/queries';
import { ALERTING_RULES } from '../../dashboards/src/rules';
import type { JsonObject } from '../../dashboards/src/builder';
import { startNativeExporter, type NativeExporter } from '../helpers/native-exporter';
import {
  findBinary,
  pollUntil,
  startPrometheus,
  writeRulesWithShortFor,
  type PromAlert,
  type PromSeries,
  type QueryResult,
  type RunningPrometheus,
} from '../helpers/prometheus';

const REPO = path.resolve(__dirname, '..', '..');
const DASHBOARD_DIR = path.join(REPO, 'dashboards');
const SHIPPED_RULES = path.join(DASHBOARD_DIR, 'rules', 'cuzk-alerts.yml');

const KEY_ALERT = 'CuzkGpuWorkersIdleWithPartitionsOnGpu';
const SCRAPE_SEC = 1;
const EVAL_SEC = 1;
const FOR = '3s';
const FOR_SEC = 3;
const JOB = 'cuzk';
/** Grafana's $__rate_interval for a 1 s step on a data source whose scrape interval is 1 s: max(interval + scrape, 4 × scrape). */
const RATE_INTERVAL = `${Math.max(1 + SCRAPE_SEC, 4 * SCRAPE_SEC)}s`;

/**
 * Stage lengths per partition. SnapDeals GPU stages of 280–520 ms (cuzk's ~0.6 s); synthesis
 * is made fast enough (2 slots × 200 ms against one 400 ms kernel lock) that the GPU queue
 * stays fed, so with two workers one snap-update partition holds the lock while the next one
 * waits for it in the `gpu` state — a SnapDeals partition is on the GPU at nearly every scrape.
 */
const SIM = {
  'snap-update': { synth_ms: 200, gpu_ms: 400, jitter: 0.3 },
  'porep-c2': { synth_ms: 300, gpu_ms: 600, jitter: 0.2 },
  'window-post': { synth_ms: 200, gpu_ms: 500, jitter: 0.2 },
  'winning-post': { synth_ms: 100, gpu_ms: 300, jitter: 0.2 },
};
const ENGINE: EngineConfig = { gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2, backend: 'sim', time_scale: 1, sim: SIM };
/**
 * SnapDeals-heavy: 16-partition snap-update proofs, with single-partition (high-priority) PoSt
 * proofs in between. PoRep C2 is left out: ten 600 ms partitions of one PoRep would hold both
 * workers for seconds, which is not the SnapDeals-bound box the alert is about.
 */
const MIX: Mix = { 'snap-update': 4, 'window-post': 1, 'winning-post': 1 };
const CONCURRENCY = 4;

const prometheusBin = findBinary('prometheus');
const describeWithPrometheus = prometheusBin ? describe : describe.skip;
if (!prometheusBin) {
  // eslint-disable-next-line no-console
  console.warn('SKIPPED test/e2e/prometheus-alerts: no prometheus binary (apt-get install prometheus, or set PROMETHEUS_BIN)');
}

const sha256 = (file: string): string => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
const nowSec = (): number => Date.now() / 1000;

/** Grafana's escaping of a single selected value inside a `=~` matcher (prometheusSpecialRegexEscape). */
function grafanaRegexEscape(value: string): string {
  return value.replace(/\\/g, '\\\\\\\\').replace(/[$^*{}[\]'+?.()|]/g, '\\\\$&');
}

function hasFiniteValue(r: QueryResult): boolean {
  switch (r.resultType) {
    case 'vector':
      return r.result.some((s) => Number.isFinite(Number(s.value[1])));
    case 'matrix':
      return r.result.some((s) => s.values.some(([, v]) => Number.isFinite(Number(v))));
    case 'scalar':
      return Number.isFinite(Number(r.result[1]));
    case 'string':
      return true;
  }
}

interface Running {
  name: 'faulty' | 'normal';
  exporter: NativeExporter;
  workload: Workload;
  /** host:port, Prometheus' `instance` label. */
  target: string;
  errors: Error[];
}

async function startRunning(name: Running['name'], config: EngineConfig): Promise<Running> {
  const exporter = await startNativeExporter(config);
  const errors: Error[] = [];
  const workload = new Workload(exporter.engine, { mix: MIX, concurrency: CONCURRENCY, onError: (e) => errors.push(e) });
  // Not awaited: it keeps CONCURRENCY proofs in flight until stop() (whose own promise is
  // the one to await; see afterAll).
  void workload.run();
  return { name, exporter, workload, target: new URL(exporter.url).host, errors };
}

/** One rule evaluation as seen through the API: the group's lastEvaluation and /api/v1/alerts right after it. */
interface Observation {
  evaluatedAt: number;
  alerts: PromAlert[];
}

/**
 * Polls /api/v1/rules until stopped; each time the alerting group's lastEvaluation moves, it
 * fetches /api/v1/alerts, so every evaluation is looked at (the poll period is a fifth of the
 * evaluation interval).
 */
function observeEvaluations(prom: RunningPrometheus): { observations: Observation[]; errors: string[]; stop(): Promise<void> } {
  const observations: Observation[] = [];
  const errors: string[] = [];
  let stopping = false;
  let last = '';
  const loop = (async () => {
    while (!stopping) {
      try {
        const group = (await prom.rules()).find((g) => g.name === 'cuzk.alerts') as { lastEvaluation?: string } | undefined;
        const at = group?.lastEvaluation ?? '';
        if (at && at !== last && !at.startsWith('0001-')) {
          last = at;
          observations.push({ evaluatedAt: Date.parse(at) / 1000, alerts: await prom.alerts() });
        }
      } catch (e) {
        if (!stopping) errors.push(String(e));
      }
      await new Promise((r) => setTimeout(r, (EVAL_SEC * 1000) / 5));
    }
  })();
  return {
    observations,
    errors,
    async stop() {
      stopping = true;
      await loop;
    },
  };
}

describeWithPrometheus('real Prometheus scraping the real exporter: the status-bug alert and every dashboard query', () => {
  let tmp = '';
  let shippedHash = '';
  let faulty: Running | undefined;
  let normal: Running | undefined;
  let prom: RunningPrometheus | undefined;
  let observer: ReturnType<typeof observeEvaluations> | undefined;
  /** Wall-clock seconds before Prometheus started (the start of every range query). */
  let promStartSec = 0;
  /** Seconds from the faulty exporter's first scrape until the key alert was seen firing. */
  let fireAfterSec: number | null = null;

  const P = (): RunningPrometheus => {
    if (!prom) throw new Error('Prometheus did not start');
    return prom;
  };
  const R = (r: Running | undefined): Running => {
    if (!r) throw new Error('exporter did not start');
    return r;
  };
  const sel = (r: Running, extra = ''): string => `{job="${JOB}", instance="${r.target}"${extra ? `, ${extra}` : ''}}`;
  const context = (): string =>
    [
      `faulty=${faulty?.target} normal=${normal?.target}`,
      `workload errors: faulty ${faulty?.errors.map(String).join('; ') || 'none'}, normal ${normal?.errors.map(String).join('; ') || 'none'}`,
      `--- prometheus output ---\n${prom?.logs() ?? ''}`,
    ].join('\n');
  /** Time of the first successful scrape of a target, from the TSDB (raw samples of `up`). */
  const firstScrapeSec = async (r: Running): Promise<number> => {
    const res = await P().query(`up${sel(r)}[${Math.ceil(nowSec() - promStartSec) + 5}s]`);
    if (res.resultType !== 'matrix' || !res.result[0]) throw new Error(`no up samples for ${r.target}`);
    const first = res.result[0].values.find(([, v]) => v === '1');
    if (!first) throw new Error(`${r.target} was never up`);
    return first[0];
  };
  /** Raw-sample counts of ALERTS for one alert and instance over the whole run, by alertstate. */
  const alertSamples = async (alertname: string, r: Running): Promise<Record<string, number>> => {
    const range = `${Math.ceil(nowSec() - promStartSec) + 5}s`;
    const v = await P().queryVector(`count_over_time(ALERTS{alertname="${alertname}", instance="${r.target}"}[${range}])`);
    return Object.fromEntries(v.map((s) => [s.metric.alertstate ?? '?', Number(s.value[1])]));
  };

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-e2e-alerts-'));
    shippedHash = sha256(SHIPPED_RULES);
    const rules = writeRulesWithShortFor(SHIPPED_RULES, path.join(tmp, 'cuzk-alerts.for-short.yml'), FOR);
    faulty = await startRunning('faulty', { ...ENGINE, faults: { status_bug_kind: 'snap-update' } });
    normal = await startRunning('normal', ENGINE);
    promStartSec = nowSec();
    prom = await startPrometheus({
      scrapeTargets: [faulty.target, normal.target],
      scrapeIntervalSec: SCRAPE_SEC,
      evaluationIntervalSec: EVAL_SEC,
      ruleFiles: [rules],
      jobName: JOB,
    });
    observer = observeEvaluations(prom);
    await prom.waitForTargetsUp(20000);
  }, 45000);

  afterAll(async () => {
    // Every step runs even if an earlier one throws; the first error is rethrown at the end.
    const errors: unknown[] = [];
    const step = async (f: () => Promise<unknown> | undefined): Promise<void> => {
      try {
        await f();
      } catch (e) {
        errors.push(e);
      }
    };
    await step(() => observer?.stop());
    await step(() => prom?.stop());
    for (const r of [faulty, normal]) {
      if (!r) continue;
      // Not the promise of Workload.run(): it never settles once stop() found proofs in flight
      // (stop() replaces the resolver run() waits on). stop() resolves when none is left.
      await step(() => r.workload.stop(0));
      await step(() => r.exporter.close());
    }
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
    if (errors.length) throw errors[0];
  }, 30000);

  test('the shipped rules load as written, with only `for:` shortened in the test copy', async () => {
    expect(sha256(SHIPPED_RULES)).toBe(shippedHash);
    await pollUntil(async () => (await P().rules()).every((g) => g.rules.every((r) => r.health === 'ok')), 10000, 'every rule evaluated');
    const groups = await P().rules();
    expect(groups.map((g) => g.name).sort()).toEqual(['cuzk.alerts', 'cuzk.recording']);
    for (const g of groups) for (const r of g.rules) expect({ name: r.name, health: r.health, lastError: r.lastError ?? '' }).toEqual({ name: r.name, health: 'ok', lastError: '' });
    const key = groups.flatMap((g) => g.rules).find((r) => r.name === KEY_ALERT);
    expect(key?.duration).toBe(FOR_SEC);
  });

  test(`with the status bug on for snap-update, ${KEY_ALERT} fires`, async () => {
    const f = R(faulty);
    let active: PromAlert[] = [];
    try {
      await pollUntil(
        async () => {
          active = await P().alerts();
          return active.some((a) => a.labels.alertname === KEY_ALERT && a.labels.instance === f.target && a.state === 'firing');
        },
        30000,
        `${KEY_ALERT} firing on the faulty exporter`,
        undefined,
        100,
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}\nactive alerts: ${JSON.stringify(active)}\n${context()}`);
    }
    const firedSec = nowSec();
    fireAfterSec = firedSec - (await firstScrapeSec(f));

    const alert = active.find((a) => a.labels.alertname === KEY_ALERT && a.labels.instance === f.target) as PromAlert;
    const shipped = ALERTING_RULES.find((r) => r.alert === KEY_ALERT);
    expect(alert.labels).toEqual({ alertname: KEY_ALERT, severity: 'critical', job: JOB, instance: f.target });
    expect(alert.annotations.summary).toBe(`GPU workers report idle while partitions are in the GPU state on ${f.target}`);
    expect(alert.annotations.runbook_url).toBe(shipped?.annotations.runbook_url);
    // "{instance} reports N partition(s) in the gpu state but only M busy GPU worker(s)", N > M.
    const m = new RegExp(`^${f.target.replace(/\./g, '\\.')} reports (\\d+) partition\\(s\\) in the gpu state but only (\\d+) busy GPU worker\\(s\\)\\.`).exec(
      alert.annotations.description ?? '',
    );
    expect(m).not.toBeNull();
    expect(Number(m?.[1])).toBeGreaterThan(Number(m?.[2]));
    // It was pending for at least `for:` before firing.
    expect(alert.activeAt).toBeDefined();
    expect(firedSec - Date.parse(alert.activeAt as string) / 1000).toBeGreaterThanOrEqual(FOR_SEC - 0.05);

    // The same story in the TSDB: ALERTS went pending, then firing (raw samples; the firing
    // one is appended right after the evaluation the API already reports); ALERTS_FOR_STATE
    // holds the pending start; the exporter's own flag agrees.
    let samples: Record<string, number> = {};
    await pollUntil(
      async () => {
        samples = await alertSamples(KEY_ALERT, f);
        return (samples.firing ?? 0) > 0;
      },
      5000,
      'the firing ALERTS sample in the TSDB',
    );
    expect(samples.pending).toBeGreaterThanOrEqual(FOR_SEC / EVAL_SEC);
    const forState = await P().queryVector(`ALERTS_FOR_STATE{alertname="${KEY_ALERT}", instance="${f.target}"}`);
    // (whole seconds: Prometheus stores the pending start truncated)
    expect(forState.map((s) => Number(s.value[1]))).toEqual([Math.floor(Date.parse(alert.activeAt as string) / 1000)]);
    const flag = await P().queryVector(`max_over_time(cuzk_status_mismatch${sel(f)}[1m])`);
    expect(flag.map((s) => s.value[1])).toEqual(['1']);

    // The dashboard's alert annotation shows it for that host.
    const dash = JSON.parse(fs.readFileSync(path.join(DASHBOARD_DIR, 'cuzk-overview.json'), 'utf8')) as JsonObject;
    const [ann] = annotationQueries(dash);
    expect(ann).toBeDefined();
    const annotated = await P().queryVector(expandVariables((ann as DashboardQuery).expr, { job: '.*', instance: grafanaRegexEscape(f.target), gpu: '.*' }));
    expect(annotated.map((s) => s.metric.alertname)).toContain(KEY_ALERT);

    // eslint-disable-next-line no-console
    console.log(
      `${KEY_ALERT} fired ${fireAfterSec.toFixed(1)} s after the faulty exporter's first scrape ` +
        `(for: ${FOR}; ${samples.pending} pending evaluations, then firing; description: "${(alert.annotations.description ?? '').split(' busy GPU worker(s).')[0]} busy GPU worker(s).")`,
    );
  }, 40000);

  test('every panel query of every shipped dashboard returns data from that Prometheus', async () => {
    const files = fs.readdirSync(DASHBOARD_DIR).filter((f) => f.endsWith('.json')).sort();
    expect(files).toContain('cuzk-overview.json');
    const dashboards = files.map((f) => ({ file: f, json: JSON.parse(fs.readFileSync(path.join(DASHBOARD_DIR, f), 'utf8')) as JsonObject }));
    // The shipped overview is what the builder produces (so checking the file checks the source).
    const overview = dashboards.find((d) => d.file === 'cuzk-overview.json') as { json: JsonObject };
    expect(panelQueries(overview.json).map((q) => q.expr)).toEqual(panelQueries(buildOverviewDashboard()).map((q) => q.expr));

    const queries = dashboards.flatMap((d) => [...panelQueries(d.json), ...variableQueries(d.json)].map((q) => ({ file: d.file, q })));
    const panelCount = queries.filter((x) => x.q.kind === 'panel').length;
    expect(panelCount).toBeGreaterThan(40);

    const targets = [R(normal), R(faulty)];
    const starts = new Map<Running, number>();
    for (const t of targets) starts.set(t, await firstScrapeSec(t));
    let empty: string[] = [];
    let checked = 0;
    let passes = 0;
    const firstEmpty: string[] = [];
    const check = async (): Promise<boolean> => {
      if (passes++ === 1) firstEmpty.push(...empty);
      empty = [];
      checked = 0;
      const end = nowSec();
      for (const t of targets) {
        // The dashboard's time range: this exporter's whole run. Step = $__interval = the scrape interval.
        const start = (starts.get(t) as number) - SCRAPE_SEC;
        const vars = {
          job: '.*',
          instance: grafanaRegexEscape(t.target),
          gpu: '.*',
          rateInterval: RATE_INTERVAL,
          interval: `${SCRAPE_SEC}s`,
          range: `${Math.ceil(end - start)}s`,
        };
        for (const { file, q } of queries) {
          const expr = expandVariables(q.expr, vars);
          let r: QueryResult;
          try {
            r = q.instant ? await P().query(expr, end) : { resultType: 'matrix', result: await P().queryRange(expr, start, end, SCRAPE_SEC) };
          } catch (e) {
            empty.push(`${t.name} ${file} "${q.where}" ${q.refId ?? ''}: ERROR ${(e as Error).message}`);
            continue;
          }
          checked++;
          if (!hasFiniteValue(r)) empty.push(`${t.name} ${file} "${q.where}" ${q.refId ?? ''}: ${expr}`);
        }
      }
      return empty.length === 0;
    };
    try {
      await pollUntil(check, 30000, 'every dashboard query to return data for both exporters', undefined, 500);
    } catch (e) {
      throw new Error(`${(e as Error).message}\nstill empty:\n${empty.join('\n')}\n${context()}`);
    }
    expect(empty).toEqual([]);
    expect(checked).toBe(queries.length * targets.length);
    // eslint-disable-next-line no-console
    console.log(
      `${checked} dashboard queries returned data (${panelCount} panel targets + ${queries.length - panelCount} variable queries ` +
        `from ${files.join(', ')}, for each of ${targets.length} instances) after ${passes} pass(es)` +
        (firstEmpty.length ? `; empty on the first pass:\n${firstEmpty.join('\n')}` : ''),
    );
  }, 45000);

  // Last, so that the normal run it checks spans everything before it as well.
  test(`the same run without the fault never makes ${KEY_ALERT} pending`, async () => {
    const n = R(normal);
    const o = observer as NonNullable<typeof observer>;
    const normalStart = await firstScrapeSec(n);
    // At least as long as the faulty run needed to fire (30 s if it never did) and at least
    // 10 s, plus two evaluations.
    const needSec = Math.max(fireAfterSec ?? 30, 10) + 2 * EVAL_SEC;
    await pollUntil(
      async () => {
        const last = o.observations[o.observations.length - 1];
        return last !== undefined && last.evaluatedAt - normalStart >= needSec;
      },
      (needSec + 10) * 1000,
      `evaluations covering ${needSec.toFixed(1)} s of the normal run`,
      undefined,
      100,
    );
    const end = nowSec();
    const runSec = end - normalStart;
    expect(runSec).toBeGreaterThanOrEqual(needSec);

    // /api/v1/alerts after every evaluation: none was missed, and none showed any alert for
    // the normal exporter.
    expect(o.errors).toEqual([]);
    const seen = o.observations.filter((x) => x.evaluatedAt >= normalStart);
    expect(seen.length).toBeGreaterThanOrEqual(Math.floor(runSec / EVAL_SEC) - 2);
    const gaps = seen.slice(1).map((x, i) => x.evaluatedAt - (seen[i] as Observation).evaluatedAt);
    // (Prometheus skips an iteration only when an evaluation overruns; allow one on a loaded machine.)
    expect(Math.max(...gaps)).toBeLessThan(2 * EVAL_SEC + 0.5);
    const normalAlerts = o.observations.flatMap((x) => x.alerts.filter((a) => a.labels.instance === n.target).map((a) => `${x.evaluatedAt}: ${a.labels.alertname} ${a.state}`));
    expect(normalAlerts).toEqual([]);
    expect((await P().alerts()).filter((a) => a.labels.instance === n.target)).toEqual([]);
    // The observer is looking at the right thing: it saw the faulty exporter's alert.
    expect(o.observations.some((x) => x.alerts.some((a) => a.labels.alertname === KEY_ALERT && a.labels.instance === R(faulty).target))).toBe(true);

    // Over the whole run range: range queries at the evaluation step (a transient pending
    // lasts at least one evaluation, so a step falls inside it) and every raw sample.
    const ranges: PromSeries[] = [
      ...(await P().queryRange(`ALERTS{alertname="${KEY_ALERT}", instance="${n.target}"}`, promStartSec, end, EVAL_SEC)),
      ...(await P().queryRange(`ALERTS_FOR_STATE{alertname="${KEY_ALERT}", instance="${n.target}"}`, promStartSec, end, EVAL_SEC)),
      ...(await P().queryRange(`ALERTS{instance="${n.target}"}`, promStartSec, end, EVAL_SEC)),
      ...(await P().queryRange(`ALERTS_FOR_STATE{instance="${n.target}"}`, promStartSec, end, EVAL_SEC)),
    ];
    expect(ranges.map((s) => s.metric)).toEqual([]);
    const range = `${Math.ceil(end - promStartSec) + 5}s`;
    expect(await P().queryVector(`count_over_time(ALERTS{instance="${n.target}"}[${range}])`, end)).toEqual([]);
    expect(await P().queryVector(`count_over_time(ALERTS_FOR_STATE{instance="${n.target}"}[${range}])`, end)).toEqual([]);
    expect(await P().queryVector(`max_over_time(cuzk_status_mismatch${sel(n)}[${range}]) > 0`, end)).toEqual([]);
    // The rule itself never held on the raw series either.
    expect(
      await P().queryRange(`sum by (job, instance) (cuzk_partitions${sel(n, 'state="gpu"')}) > sum by (job, instance) (cuzk_gpu_worker_busy${sel(n)})`, normalStart, end, SCRAPE_SEC),
    ).toEqual([]);

    // Not vacuous: under the same load a SnapDeals partition was in the gpu state at most
    // scrapes of the normal exporter, and proofs completed.
    const snapOnGpu = await P().query(`cuzk_partitions${sel(n, 'proof_kind="snap-update", state="gpu"')}[${range}]`, end);
    const raw = snapOnGpu.resultType === 'matrix' ? snapOnGpu.result[0]?.values ?? [] : [];
    const values = raw.map(([, v]) => Number(v));
    expect(values.length).toBeGreaterThanOrEqual(Math.floor(runSec / SCRAPE_SEC) - 2);
    const share = values.filter((v) => v > 0).length / values.length;
    expect(share).toBeGreaterThanOrEqual(0.7);
    const completed = await P().queryVector(`sum(cuzk_proofs_completed_total${sel(n)})`);
    expect(Number(completed[0]?.value[1])).toBeGreaterThan(0);

    // eslint-disable-next-line no-console
    console.log(
      `normal run: ${runSec.toFixed(1)} s from its first scrape (the faulty one fired after ${fireAfterSec?.toFixed(1)} s); ` +
        `${seen.length} evaluations checked through /api/v1/alerts; a snap-update partition was on the GPU at ` +
        `${(share * 100).toFixed(0)} % of ${values.length} scrapes; ${completed[0]?.value[1]} proofs completed; no alert, never pending`,
    );
  }, 60000);
});
