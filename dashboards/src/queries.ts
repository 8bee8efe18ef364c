/**
 * Walks dashboard JSON for its PromQL, expands Grafana variables for running the queries
 * against a real Prometheus (the end-to-end tests), and extracts the metric and label names
 * a query refers to (the contract tests).
 */
import type { Json, JsonObject } from './builder';

export interface DashboardQuery {
  /** Panel title (or "variable <name>" / "annotation <name>"). */
  where: string;
  kind: 'panel' | 'variable' | 'annotation';
  panelType?: string;
  refId?: string;
  expr: string;
  instant: boolean;
}

function isObject(v: Json | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** All panels, including those nested in collapsed rows. */
export function allPanels(dashboard: JsonObject): JsonObject[] {
  const out: JsonObject[] = [];
  const walk = (panels: Json | undefined): void => {
    if (!Array.isArray(panels)) return;
    for (const p of panels) {
      if (!isObject(p)) continue;
      out.push(p);
      walk(p.panels);
    }
  };
  walk(dashboard.panels);
  return out;
}

export function panelQueries(dashboard: JsonObject): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  for (const p of allPanels(dashboard)) {
    if (!Array.isArray(p.targets)) continue;
    for (const t of p.targets) {
      if (!isObject(t) || typeof t.expr !== 'string') continue;
      out.push({
        where: String(p.title),
        kind: 'panel',
        panelType: String(p.type),
        refId: typeof t.refId === 'string' ? t.refId : undefined,
        expr: t.expr,
        instant: t.instant === true,
      });
    }
  }
  return out;
}

/** The series selector inside a `label_values(selector, label)` variable query. */
export function parseLabelValues(query: string): { selector: string; label: string } | null {
  const m = /^\s*label_values\(\s*(.*?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$/.exec(query);
  if (!m) return null;
  return { selector: m[1] as string, label: m[2] as string };
}

export function variableQueries(dashboard: JsonObject): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  const templating = dashboard.templating;
  if (!isObject(templating) || !Array.isArray(templating.list)) return out;
  for (const v of templating.list) {
    if (!isObject(v) || v.type !== 'query') continue;
    const query = isObject(v.query) ? v.query.query : v.query;
    if (typeof query !== 'string') continue;
    const lv = parseLabelValues(query);
    out.push({ where: `variable ${String(v.name)}`, kind: 'variable', expr: lv ? lv.selector : query, instant: true });
  }
  return out;
}

export function annotationQueries(dashboard: JsonObject): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  const ann = dashboard.annotations;
  if (!isObject(ann) || !Array.isArray(ann.list)) return out;
  for (const a of ann.list) {
    if (isObject(a) && typeof a.expr === 'string') {
      out.push({ where: `annotation ${String(a.name)}`, kind: 'annotation', expr: a.expr, instant: false });
    }
  }
  return out;
}

export function allQueries(dashboard: JsonObject): DashboardQuery[] {
  return [...panelQueries(dashboard), ...variableQueries(dashboard), ...annotationQueries(dashboard)];
}

export interface VariableValues {
  /** Regex for $job / $instance / $gpu ("All" = ".*" or ".+"). */
  job?: string;
  instance?: string;
  gpu?: string;
  /** Durations such as "30s", "1m". */
  rateInterval?: string;
  interval?: string;
  range?: string;
}

/** Substitutes Grafana's variables the way Grafana would for a single value / "All" regex. */
export function expandVariables(expr: string, v: VariableValues = {}): string {
  const vals: Record<string, string> = {
    __rate_interval: v.rateInterval ?? '1m',
    __interval: v.interval ?? '15s',
    __range: v.range ?? '5m',
    job: v.job ?? '.+',
    instance: v.instance ?? '.+',
    gpu: v.gpu ?? '.+',
  };
  return expr.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, a: string | undefined, b: string | undefined) => {
    const name = (a ?? b) as string;
    const val = vals[name];
    if (val === undefined) throw new Error(`unknown Grafana variable ${whole} in ${expr}`);
    return val;
  });
}

const KEYWORDS = new Set([
  'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset',
  'inf', 'nan',
]);

/** Removes string literals, keeping the quotes so positions stay meaningful. */
function stripStrings(expr: string): string {
  return expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
}

/** Metric names a PromQL expression selects (not functions, keywords, labels or durations). */
export function referencedMetrics(expr: string): string[] {
  let s = stripStrings(expr);
  s = s.replace(/\{[^}]*\}/g, ' '); // label matchers
  s = s.replace(/\[[^\]]*\]/g, ' '); // range / subquery durations
  s = s.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' '); // label lists
  s = s.replace(/\boffset\s+-?[0-9a-z]+/gi, ' ');
  const names = new Set<string>();
  const re = /([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s)) !== null) {
    const [, name, call] = m;
    if (call) continue; // function or aggregation
    if (KEYWORDS.has((name as string).toLowerCase())) continue;
    // Numbers such as 1e3 are matched from the 'e': skip identifiers glued to a digit.
    const before = s[m.index - 1];
    if (before !== undefined && /[0-9.]/.test(before)) continue;
    names.add(name as string);
  }
  return [...names].sort();
}

/** Label names used in matchers and in by/without/on/ignoring/group_* lists. */
export function referencedLabels(expr: string): string[] {
  const s = stripStrings(expr);
  const names = new Set<string>();
  for (const m of s.matchAll(/\{([^}]*)\}/g)) {
    for (const part of (m[1] as string).split(',')) {
      const lm = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)/.exec(part);
      if (lm) names.add(lm[1] as string);
    }
  }
  for (const m of s.matchAll(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g)) {
    for (const l of (m[1] as string).split(',')) if (l.trim()) names.add(l.trim());
  }
  return [...names].sort();
}
