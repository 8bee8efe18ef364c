/**
 * Structural checks of the shipped Grafana dashboards and rule definitions (no Prometheus
 * needed): importable JSON, datasource variable everywhere, the required variables and
 * panels, only known metrics and labels, alert metadata and runbook anchors, and the
 * checked-in files equal what the generator produces.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { exportDashboards, findRepoRoot, renderAll } from '../../dashboards/export';
import { generate } from '../../dashboards/generate';
import type { Json, JsonObject } from '../../dashboards/src/builder';
import { exportedSeriesNames, knownLabelNames, METRICS, PROMETHEUS_SYNTHETIC_METRICS } from '../../dashboards/src/metrics';
import { buildOverviewDashboard, OVERVIEW_UID } from '../../dashboards/src/overview';
import {
  allPanels,
  allQueries,
  expandVariables,
  panelQueries,
  parseLabelValues,
  referencedLabels,
  referencedMetrics,
} from '../../dashboards/src/queries';
import { ALERTING_RULES, RECORDING_RULES, RUNBOOK_BASE_URL } from '../../dashboards/src/rules';
import { buildFleetDashboard, FLEET_UID } from '../../dashboards/src/fleet';
import { FLEET_RECORDING_RULES } from '../../dashboards/src/fleet-rules';

const ROOT = path.join(__dirname, '..', '..');
const DASHBOARD_DIR = path.join(ROOT, 'dashboards');
const RUNBOOK = path.join(ROOT, 'docs', 'runbook.md');

const shippedDashboards = fs
  .readdirSync(DASHBOARD_DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ file: f, json: JSON.parse(fs.readFileSync(path.join(DASHBOARD_DIR, f), 'utf8')) as JsonObject }));

const DS_REF = { type: 'prometheus', uid: '${datasource}' };
const RECORDED = new Set([...RECORDING_RULES, ...FLEET_RECORDING_RULES].map((r) => r.record));
/** Fleet-level recorded series (per job): fleet totals, not filtered by instance. */
const JOB_LEVEL = new Set(FLEET_RECORDING_RULES.filter((r) => /^job(_[a-z_]+)?:/.test(r.record)).map((r) => r.record));
const KNOWN_METRICS = new Set([...exportedSeriesNames(), ...PROMETHEUS_SYNTHETIC_METRICS, ...RECORDED]);
const BUSY_COUNTERS = ['cuzk_gpu_worker_busy_seconds_total', 'cuzk_gpu_busy_seconds_total'];

/** GitHub's heading anchors (github-slugger): lower-case, drop punctuation, spaces to '-', de-duplicate. */
export function githubAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    if (inFence) continue;
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = (m[1] as string).replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text.toLowerCase().replace(/[^\p{L}\p{N}\p{M} _-]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

function walk(v: Json, visit: (o: JsonObject, pathStr: string) => void, p = '$'): void {
  if (Array.isArray(v)) v.forEach((x, i) => walk(x, visit, `${p}[${i}]`));
  else if (v !== null && typeof v === 'object') {
    visit(v, p);
    for (const [k, x] of Object.entries(v)) walk(x, visit, `${p}.${k}`);
  }
}

function variables(d: JsonObject): JsonObject[] {
  return ((d.templating as JsonObject).list as JsonObject[]) ?? [];
}

describe('PromQL helpers', () => {
  test('referencedMetrics finds selectors, not functions, keywords, labels or durations', () => {
    expect(
      referencedMetrics(
        'histogram_quantile(0.9, sum by (le, gpu) (rate(foo_bucket{a="b", c=~"x|y"}[$__rate_interval]))) / on (instance) group_left (name) bar:baz:rate1m offset 5m > 1e3 and up unless ALERTS',
      ),
    ).toEqual(['ALERTS', 'bar:baz:rate1m', 'foo_bucket', 'up']);
    expect(referencedMetrics('sum(x{l="sum(y)"}) or vector(0)')).toEqual(['x']);
  });

  test('referencedLabels finds matcher and grouping labels', () => {
    expect(referencedLabels('sum by (le, gpu) (rate(foo{a="b", c!~"x"}[5m])) * on (instance) group_left (name) bar')).toEqual([
      'a',
      'c',
      'gpu',
      'instance',
      'le',
      'name',
    ]);
  });

  test('expandVariables substitutes Grafana variables and rejects unknown ones', () => {
    expect(expandVariables('rate(x{instance=~"$instance", gpu=~"${gpu}"}[$__rate_interval])', { instance: 'a:1', gpu: '0', rateInterval: '30s' })).toBe(
      'rate(x{instance=~"a:1", gpu=~"0"}[30s])',
    );
    expect(() => expandVariables('x{a="$nope"}')).toThrow(/nope/);
  });

  test('githubAnchors matches GitHub slugs', () => {
    expect([...githubAnchors('# Runbook\n## CuzkSourceDown\n```\n# not a heading\n```\n## What to do: `now`!\n## What to do: now\n')]).toEqual([
      'runbook',
      'cuzksourcedown',
      'what-to-do-now',
      'what-to-do-now-1',
    ]);
  });
});

describe('generated files', () => {
  test('the checked-in dashboards and rules equal what the generator produces', () => {
    const files = renderAll();
    expect(files.map((f) => f.repoPath).sort()).toEqual(['dashboards/cuzk-fleet.json', 'dashboards/cuzk-overview.json', 'dashboards/rules/cuzk-alerts.yml', 'dashboards/rules/cuzk-fleet.yml']);
    for (const f of files) {
      const onDisk = fs.readFileSync(path.join(ROOT, f.repoPath), 'utf8');
      if (onDisk !== f.content) throw new Error(`${f.repoPath} is out of date: regenerate with the dashboards generator`);
    }
    // The generator's --check mode agrees and writes nothing.
    expect(generate(ROOT, true).filter((r) => r.changed)).toEqual([]);
  });

  test('generation is deterministic', () => {
    expect(renderAll()).toEqual(renderAll());
  });

  test('every shipped dashboard JSON is produced by the generator', () => {
    const generated = new Set(renderAll().map((f) => f.name));
    expect(shippedDashboards.map((d) => d.file).filter((f) => !generated.has(f))).toEqual([]);
  });

  test('exportDashboards writes every file to a new folder and returns the paths', () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-export-'));
    try {
      const out = path.join(tmp, 'nested', 'out');
      const written = exportDashboards(out);
      expect(written.map((p) => path.relative(out, p)).sort()).toEqual(['cuzk-alerts.yml', 'cuzk-fleet.json', 'cuzk-fleet.yml', 'cuzk-overview.json']);
      for (const p of written) expect(path.isAbsolute(p)).toBe(true);
      for (const f of renderAll()) expect(fs.readFileSync(path.join(out, f.name), 'utf8')).toBe(f.content);
      expect((JSON.parse(fs.readFileSync(path.join(out, 'cuzk-overview.json'), 'utf8')) as JsonObject).uid).toBe(OVERVIEW_UID);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  test('findRepoRoot finds package.json from the sources and from dist/', () => {
    const root = findRepoRoot(path.join(ROOT, 'dashboards', 'src'));
    expect(fs.existsSync(path.join(root, 'package.json'))).toBe(true);
    expect(fs.realpathSync(root)).toBe(fs.realpathSync(ROOT));
    expect(findRepoRoot(path.join(ROOT, 'dist', 'dashboards'))).toBe(root);
  });
});

describe.each(shippedDashboards.map((d) => [d.file, d.json] as const))('dashboard %s', (file, d) => {
  test('has a stable uid, a title and a current schemaVersion', () => {
    expect(d.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    if (file === 'cuzk-overview.json') expect(d.uid).toBe('cuzk-overview');
    if (file === 'cuzk-fleet.json') expect(d.uid).toBe(FLEET_UID);
    expect(typeof d.title).toBe('string');
    expect(d.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(d.id).toBeNull();
    expect(Array.isArray(d.panels) && d.panels.length).toBeTruthy();
  });

  test('declares a Prometheus datasource variable and uses it for every panel, target, variable and annotation', () => {
    const dsVars = variables(d).filter((v) => v.type === 'datasource');
    expect(dsVars).toEqual([expect.objectContaining({ name: 'datasource', query: 'prometheus' })]);
    for (const p of allPanels(d)) {
      expect({ panel: p.title, datasource: p.datasource }).toEqual({ panel: p.title, datasource: DS_REF });
      for (const t of (p.targets as JsonObject[] | undefined) ?? []) {
        expect({ panel: p.title, ref: t.refId, datasource: t.datasource }).toEqual({ panel: p.title, ref: t.refId, datasource: DS_REF });
      }
    }
    for (const v of variables(d).filter((x) => x.type === 'query')) expect(v.datasource).toEqual(DS_REF);
    for (const a of ((d.annotations as JsonObject | undefined)?.list as JsonObject[] | undefined) ?? []) expect(a.datasource).toEqual(DS_REF);
  });

  test('hard-codes no datasource UID or import input anywhere', () => {
    const bad: string[] = [];
    walk(d, (o, p) => {
      if (p !== '$' && 'uid' in o && o.uid !== '${datasource}') bad.push(`${p}.uid = ${JSON.stringify(o.uid)}`);
      for (const [k, v] of Object.entries(o)) {
        if (typeof v === 'string' && /\$\{DS_|-- Grafana --/.test(v)) bad.push(`${p}.${k} = ${v}`);
      }
    });
    expect(bad).toEqual([]);
    expect(d.__inputs ?? []).toEqual([]);
  });

  test('has multi-value instance and gpu variables from label_values over cuzk metrics', () => {
    for (const name of ['instance', 'gpu']) {
      const v = variables(d).find((x) => x.name === name);
      expect(v).toMatchObject({ type: 'query', multi: true, includeAll: true });
      const query = (v?.query as JsonObject).query as string;
      expect(v?.definition).toBe(query);
      const lv = parseLabelValues(query);
      expect(lv?.label).toBe(name);
      expect(referencedMetrics(lv?.selector ?? '').every((m) => m.startsWith('cuzk_'))).toBe(true);
    }
  });

  test('every query filters by the instance variable (and every gpu-labelled query by gpu)', () => {
    const gpuMetrics = new Set(METRICS.filter((m) => m.labels.includes('gpu')).map((m) => m.name));
    // Host-wide busy-worker totals are compared with cuzk_partitions, which has no gpu label.
    const hostWide = /^sum by \(instance\) \(cuzk_gpu_worker_busy\{job=~"\$job", instance=~"\$instance"\}\)$/;
    const bad: string[] = [];
    for (const q of panelQueries(d)) {
      // Fleet totals (per-job recording rules) have no instance to filter by.
      const fleetTotal = referencedMetrics(q.expr).every((m) => JOB_LEVEL.has(m)) && q.expr.includes('job=~"$job"');
      if (!q.expr.includes('instance=~"$instance"') && !fleetTotal) bad.push(`${q.where} ${q.refId}: no instance filter`);
      const usesGpuMetric = referencedMetrics(q.expr).some((m) => gpuMetrics.has(m.replace(/_(bucket|sum|count)$/, '')) || /^instance_gpu:/.test(m));
      if (usesGpuMetric && !q.expr.includes('gpu=~"$gpu"') && !hostWide.test(q.expr)) bad.push(`${q.where} ${q.refId}: no gpu filter`);
    }
    expect(bad).toEqual([]);
  });

  test('every metric and label a query names exists', () => {
    const labels = knownLabelNames();
    const unknown: string[] = [];
    for (const q of allQueries(d)) {
      for (const m of referencedMetrics(q.expr)) if (!KNOWN_METRICS.has(m)) unknown.push(`${q.where}: metric ${m}`);
      for (const l of referencedLabels(q.expr)) if (!labels.has(l)) unknown.push(`${q.where}: label ${l}`);
    }
    expect(unknown).toEqual([]);
  });

  test('every panel has a title, a description, a gridPos inside the 24-column grid and a unique id', () => {
    const ids = new Set<number>();
    for (const p of allPanels(d)) {
      expect(typeof p.title === 'string' && p.title.length > 0).toBe(true);
      if (p.type !== 'row') expect({ panel: p.title, hasDescription: typeof p.description === 'string' && p.description.length > 20 }).toEqual({ panel: p.title, hasDescription: true });
      const g = p.gridPos as { x: number; y: number; w: number; h: number };
      expect(g.x + g.w).toBeLessThanOrEqual(24);
      expect(ids.has(p.id as number)).toBe(false);
      ids.add(p.id as number);
    }
  });

  test('every target of a panel has a unique refId', () => {
    for (const p of allPanels(d)) {
      const refs = ((p.targets as JsonObject[] | undefined) ?? []).map((t) => t.refId);
      expect(new Set(refs).size).toBe(refs.length);
    }
  });
});

describe('overview dashboard content (DESIGN §9)', () => {
  const d = buildOverviewDashboard();
  const queries = panelQueries(d);
  const panelsUsing = (metric: string): string[] =>
    queries.filter((q) => referencedMetrics(q.expr).includes(metric)).map((q) => q.where);

  test('worker busy/idle over time is a state-timeline on cuzk_gpu_worker_busy', () => {
    const timelines = allPanels(d).filter((p) => p.type === 'state-timeline');
    const busy = timelines.filter((p) => ((p.targets as JsonObject[]) ?? []).some((t) => referencedMetrics(t.expr as string).includes('cuzk_gpu_worker_busy')));
    expect(busy.map((p) => p.title)).toEqual(['Worker busy / idle']);
  });

  test('utilisation panels are computed from the busy-seconds counters, never the 0/1 gauge', () => {
    const util = allPanels(d).filter((p) => p.type !== 'row' && /utili[sz]ation/i.test(p.title as string));
    expect(util.length).toBeGreaterThanOrEqual(4);
    const utilRules = new Map(RECORDING_RULES.filter((r) => /utilization/.test(r.record)).map((r) => [r.record, r.expr]));
    for (const [name, expr] of utilRules) {
      expect({ name, counters: referencedMetrics(expr).every((m) => BUSY_COUNTERS.includes(m)) }).toEqual({ name, counters: true });
    }
    for (const p of util) {
      for (const t of p.targets as JsonObject[]) {
        const ms = referencedMetrics(t.expr as string);
        expect({ panel: p.title, ms, gauge: ms.includes('cuzk_gpu_worker_busy') }).toMatchObject({ gauge: false });
        expect({ panel: p.title, ms, fromCounters: ms.some((m) => BUSY_COUNTERS.includes(m) || utilRules.has(m)) }).toMatchObject({ fromCounters: true });
      }
    }
    // Per-GPU utilisation: workers' busy-seconds rate divided by the worker count.
    expect(queries.some((q) => /rate\(cuzk_gpu_worker_busy_seconds_total\{[^}]*\}\[\$__rate_interval\]\)\) \/ count by \(instance, gpu\)/.test(q.expr))).toBe(true);
    expect(queries.some((q) => /rate\(cuzk_gpu_busy_seconds_total\{[^}]*\}\[\$__rate_interval\]\)/.test(q.expr))).toBe(true);
  });

  test('shows every metric of the contract', () => {
    const used = new Set<string>();
    for (const q of allQueries(d)) {
      for (const m of referencedMetrics(q.expr)) {
        used.add(m.replace(/_(bucket|sum|count)$/, ''));
        const rule = RECORDING_RULES.find((r) => r.record === m);
        if (rule) for (const rm of referencedMetrics(rule.expr)) used.add(rm);
      }
    }
    expect(METRICS.map((m) => m.name).filter((m) => !used.has(m))).toEqual([]);
  });

  test('has the at-a-glance panels an operator needs', () => {
    expect(panelsUsing('cuzk_partitions').length).toBeGreaterThan(0);
    expect(queries.some((q) => /sum by \(instance, state\) \(cuzk_partitions/.test(q.expr))).toBe(true);
    expect(queries.some((q) => /rate\(cuzk_partition_gpu_seconds_total/.test(q.expr) && /proof_kind/.test(q.expr))).toBe(true);
    for (const quantile of ['0.5', '0.9', '0.99']) {
      expect(queries.some((q) => q.expr.startsWith(`histogram_quantile(${quantile}, sum by (le, proof_kind) (rate(cuzk_proof_duration_seconds_bucket`))).toBe(true);
    }
    expect(queries.some((q) => /rate\(cuzk_proofs_completed_total/.test(q.expr))).toBe(true);
    for (const m of [
      'cuzk_queue_depth',
      'cuzk_synthesis_active',
      'cuzk_synthesis_max_concurrent',
      'cuzk_memory_used_bytes',
      'cuzk_memory_budget_bytes',
      'cuzk_proofs_failed_total',
      'cuzk_status_mismatch',
      'cuzk_gpu_idle_gap_seconds_bucket',
      'cuzk_gpu_starved_seconds_total',
      'cuzk_up',
      'up',
      'cuzk_exporter_events_dropped_total',
      'cuzk_exporter_scrape_duration_seconds',
    ]) {
      expect({ metric: m, panels: panelsUsing(m).length > 0 }).toEqual({ metric: m, panels: true });
    }
    // The mismatch is shown as the raw comparison, not only the exporter's flag.
    const raw = allPanels(d).find((p) => /raw comparison/.test(p.title as string));
    const rawExprs = ((raw?.targets as JsonObject[]) ?? []).map((t) => t.expr as string);
    expect(rawExprs.some((e) => /sum by \(instance, state\) \(cuzk_partitions\{[^}]*state=~"gpu\|finalizing"/.test(e))).toBe(true);
    // Split proving (issue 14): finalizing shown on its own, finalize time, and the mismatch reasons.
    expect(panelsUsing('cuzk_partition_finalize_seconds_total').length).toBeGreaterThan(0);
    expect(panelsUsing('cuzk_partition_finalize_duration_seconds_bucket').length).toBeGreaterThan(0);
    expect(queries.some((q) => /max by \(instance, reason\) \(cuzk_status_mismatch_reason/.test(q.expr))).toBe(true);
    expect(rawExprs.some((e) => referencedMetrics(e).includes('cuzk_gpu_worker_busy'))).toBe(true);
  });

  test('failures and other counters use increase()/rate() windows, never raw counter values', () => {
    const counters = new Set(METRICS.filter((m) => m.type === 'counter' || m.type === 'histogram').map((m) => m.name));
    for (const q of queries) {
      for (const m of referencedMetrics(q.expr)) {
        const base = m.replace(/_(bucket|sum|count)$/, '');
        if (!counters.has(base) && !counters.has(m)) continue;
        // Counters only inside rate()/increase(); a bare counter is allowed as a count() divisor.
        const bare = new RegExp(`(?<!\\()\\b${m}\\{[^}]*\\}(?!\\[)`).test(q.expr);
        const inCount = new RegExp(`count by \\([^)]*\\) \\(${m}\\{`).test(q.expr);
        expect({ where: q.where, metric: m, ok: !bare || inCount }).toEqual({ where: q.where, metric: m, ok: true });
      }
    }
  });

  test('fleet row comes first, with per-host drill-down rows after it', () => {
    const rows = allPanels(d).filter((p) => p.type === 'row').map((p) => p.title as string);
    expect(rows[0]).toBe('Fleet');
    expect(rows.slice(1).every((r) => r.includes('$instance'))).toBe(true);
    const table = allPanels(d).find((p) => p.title === 'Hosts');
    expect(JSON.stringify(table)).toContain('var-instance=${__value.raw}');
  });
});

describe('alerting and recording rules', () => {
  const runbook = fs.readFileSync(RUNBOOK, 'utf8');
  const anchors = githubAnchors(runbook);

  test('every alert has for, severity, summary, description and a runbook_url', () => {
    expect(ALERTING_RULES.length).toBeGreaterThanOrEqual(6);
    for (const a of ALERTING_RULES) {
      expect(a.alert).toMatch(/^Cuzk[A-Z][A-Za-z]+$/);
      expect(a.for).toMatch(/^\d+[smh]$/);
      expect(['critical', 'warning', 'info']).toContain(a.labels.severity);
      expect(a.annotations.summary.length).toBeGreaterThan(10);
      expect(a.annotations.description.length).toBeGreaterThan(40);
      expect(a.annotations.runbook_url).toBe(`${RUNBOOK_BASE_URL}#${a.alert.toLowerCase()}`);
    }
    expect(new Set(ALERTING_RULES.map((a) => a.alert)).size).toBe(ALERTING_RULES.length);
  });

  test('descriptions name the instance, and the gpu/worker where the alert has them', () => {
    for (const a of ALERTING_RULES) {
      expect(a.annotations.description).toContain('{{ $labels.instance }}');
      if (/\bgpu\b/.test(a.expr) && /by \([^)]*gpu/.test(a.expr)) expect(a.annotations.description).toContain('{{ $labels.gpu }}');
    }
    const stuck = ALERTING_RULES.find((a) => a.alert === 'CuzkGpuWorkerStuck');
    expect(stuck?.annotations.description).toContain('{{ $labels.worker }}');
    expect(stuck?.annotations.description).toContain('{{ $labels.gpu }}');
  });

  test('every runbook_url anchor exists in docs/runbook.md', () => {
    const missing = ALERTING_RULES.map((a) => a.annotations.runbook_url.split('#')[1] as string).filter((x) => !anchors.has(x));
    expect(missing).toEqual([]);
    expect(ALERTING_RULES.every((a) => a.annotations.runbook_url.startsWith(`${RUNBOOK_BASE_URL}#`))).toBe(true);
    expect(RUNBOOK_BASE_URL.endsWith('/docs/runbook.md')).toBe(true);
  });

  test('every runbook section says how to confirm (PromQL and /status) and what to do', () => {
    const sections = runbook.split(/^## /m).slice(1);
    for (const a of ALERTING_RULES) {
      const s = sections.find((x) => x.startsWith(`${a.alert}\n`));
      expect({ alert: a.alert, found: s !== undefined }).toEqual({ alert: a.alert, found: true });
      expect({ alert: a.alert, promql: /```promql/.test(s ?? '') }).toEqual({ alert: a.alert, promql: true });
      expect({ alert: a.alert, confirm: /confirm/i.test(s ?? ''), act: /what to do/i.test(s ?? '') }).toEqual({ alert: a.alert, confirm: true, act: true });
    }
    expect(runbook).toMatch(/curl[^\n]*\/status/);
  });

  test('the key alert: the exporter flag or the raw series, never the split-proving inequality', () => {
    const key = ALERTING_RULES.find((a) => a.alert === 'CuzkGpuWorkersIdleWithPartitionsOnGpu');
    expect(key).toBeDefined();
    const expr = (key?.expr ?? '').replace(/\s+/g, ' ');
    expect(referencedMetrics(expr)).toEqual(['cuzk_gpu_worker_busy', 'cuzk_partitions', 'cuzk_status_mismatch_reason']);
    // One sample of an ownership or cross-surface verdict is evidence (windowed); the
    // count-only reading is not (it must last for `for:`), so it is not windowed.
    expect(expr).toContain('max_over_time(cuzk_status_mismatch_reason{reason=~"owner_idle|surfaces_disagree"}[');
    expect(expr).not.toContain(':]');
    expect(expr).toContain('sum by (job, instance) (cuzk_partitions{state=~"gpu|finalizing"}) > 0');
    expect(expr).toContain('sum by (job, instance) (cuzk_gpu_worker_busy) == 0');
    // Partitions on the GPU above busy workers is healthy split proving (issue 14).
    expect(expr).not.toMatch(/\) > sum by/);
    expect(key?.labels.severity).toBe('critical');
  });

  test('required alerts exist (DESIGN §9)', () => {
    const names = ALERTING_RULES.map((a) => a.alert);
    for (const n of [
      'CuzkGpuWorkersIdleWithPartitionsOnGpu',
      'CuzkSourceDown',
      'CuzkExporterDown',
      'CuzkProofFailures',
      'CuzkGpuUnderutilizedWithQueue',
      'CuzkGpuWorkerStuck',
    ]) {
      expect(names).toContain(n);
    }
    const underused = ALERTING_RULES.find((a) => a.alert === 'CuzkGpuUnderutilizedWithQueue');
    expect(referencedMetrics(underused?.expr ?? '')).toEqual(['cuzk_gpu_worker_busy_seconds_total', 'cuzk_queue_depth']);
    expect(referencedMetrics(ALERTING_RULES.find((a) => a.alert === 'CuzkGpuWorkerStuck')?.expr ?? '')).toEqual(['cuzk_gpu_worker_current_partition_seconds']);
  });

  test('rules name only known metrics and labels', () => {
    const labels = knownLabelNames();
    for (const r of [...RECORDING_RULES, ...ALERTING_RULES, ...FLEET_RECORDING_RULES]) {
      for (const m of referencedMetrics(r.expr)) expect({ rule: r.expr, m, known: KNOWN_METRICS.has(m) && !RECORDED.has(m) }).toMatchObject({ known: true });
      for (const l of referencedLabels(r.expr)) expect({ rule: r.expr, l, known: labels.has(l) }).toMatchObject({ known: true });
    }
  });

  test('recording rules follow level:metric:operations and keep job and instance', () => {
    for (const r of RECORDING_RULES) {
      expect(r.record).toMatch(/^[a-z_]+:cuzk_[a-z_]+:[a-z0-9_]+$/);
      expect(r.expr).toMatch(/^(sum|avg) by \(job, instance[,)]/);
      const window = /rate(\d+m)$/.exec(r.record)?.[1];
      expect(window && r.expr.includes(`[${window}]`)).toBeTruthy();
    }
  });
});

describe('fleet dashboard and fleet recording rules (issue 22)', () => {
  const d = buildFleetDashboard();
  const queries = panelQueries(d);
  const panel = (title: string) => allPanels(d).find((p) => p.title === title) as JsonObject;

  test('fleet recording rules are level:metric:operations per job (or per instance), from raw series only', () => {
    for (const r of FLEET_RECORDING_RULES) {
      expect(r.record).toMatch(/^(job|job_proof_kind|instance):cuzk_[a-z_]+:[a-z0-9_]+$/);
      expect(r.expr).toMatch(r.record.startsWith('instance:') ? /by \(job, instance\)/ : /^(sum|avg|count) by \(job[,)]/);
      expect(referencedMetrics(r.expr).filter((m) => RECORDED.has(m))).toEqual([]);
      const window = /rate(\d+m)$/.exec(r.record)?.[1];
      if (window) expect(r.expr.includes(`[${window}]`)).toBe(true);
    }
    // Fleet utilisation from the busy-seconds counters, every worker weighing the same.
    for (const r of FLEET_RECORDING_RULES.filter((x) => /utilization/.test(x.record))) {
      expect(r.expr).toMatch(/^avg by \(job\) \(rate\(cuzk_gpu_worker_busy_seconds_total\[\d+m\]\)\)$/);
    }
  });

  test('fleet utilisation, the worst provers first, and which prover is idle while on the GPU', () => {
    const util = panel('Fleet utilisation (5m)');
    expect(((util.targets as JsonObject[])[0].expr as string)).toBe('job:cuzk_gpu_worker_utilization:ratio_rate5m{job=~"$job"}');
    const worst = panel('Provers, worst first');
    expect((worst.options as JsonObject).sortBy).toEqual([{ displayName: 'Utilisation (5m)', desc: false }]);
    const wt = (worst.targets as JsonObject[]).map((t) => t.expr as string);
    expect(wt[0]).toBe('avg by (instance) (rate(cuzk_gpu_worker_busy_seconds_total{job=~"$job", instance=~"$instance", gpu=~"$gpu"}[5m]))');
    expect(JSON.stringify(worst)).toContain('var-instance=${__value.raw}');
    const idle = panel('Which prover is idle while on the GPU');
    expect((idle.options as JsonObject).sortBy).toEqual([{ displayName: 'Idle while on GPU', desc: true }]);
    expect((idle.targets as JsonObject[])[0].expr).toBe('max by (instance) (instance:cuzk_idle_while_on_gpu:bool{job=~"$job", instance=~"$instance"})');
    // Never the sampled busy gauge for utilisation.
    for (const q of queries.filter((x) => /utili[sz]ation/i.test(x.where))) expect(referencedMetrics(q.expr)).not.toContain('cuzk_gpu_worker_busy');
    expect(queries.some((q) => /^bottomk\(10, avg by \(instance\) \(rate\(cuzk_gpu_worker_busy_seconds_total/.test(q.expr))).toBe(true);
  });
});
