/**
 * Minimal builders for Grafana dashboard JSON (schemaVersion 39, Grafana 10/11). Every panel
 * and every target gets the `${datasource}` variable as its datasource, so a dashboard built
 * with these is importable into any Grafana without editing UIDs.
 */

import type {
  GrafanaFieldConfig,
  GrafanaOverride,
  GrafanaPanel,
  GrafanaRow,
  GrafanaVariable,
  QueryVariableJson,
  StatPanelOptions,
  StateTimelineFieldCustom,
  StateTimelinePanelOptions,
  TableFieldCustom,
  TablePanelOptions,
  TimeseriesFieldCustom,
  TimeseriesPanelOptions,
} from './grafana-types';

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export const DATASOURCE_VAR = 'datasource';
export const DS = { type: 'prometheus', uid: '${' + DATASOURCE_VAR + '}' };

export interface TargetOptions {
  legend?: string;
  /** Instant query (stat/table panels); default is a range query. */
  instant?: boolean;
  /** Return a table frame (for merging several queries into one table). */
  table?: boolean;
  /** Grafana's minimum step (e.g. "15s"). */
  interval?: string;
  /** Also query the series' exemplars (Prometheus with exemplar storage) and show them. */
  exemplar?: boolean;
}

export interface Target {
  expr: string;
  opts: TargetOptions;
}

export const q = (expr: string, opts: TargetOptions = {}): Target => ({ expr, opts });

function renderTargets(targets: Target[]): JsonObject[] {
  return targets.map((t, i) => {
    const o: JsonObject = {
      datasource: DS,
      editorMode: 'code',
      expr: t.expr,
      legendFormat: t.opts.legend ?? '__auto',
      range: !t.opts.instant,
      instant: !!t.opts.instant,
      refId: String.fromCharCode(65 + i),
    };
    if (t.opts.table) o.format = 'table';
    if (t.opts.interval) o.interval = t.opts.interval;
    if (t.opts.exemplar) o.exemplar = true;
    return o;
  });
}

export interface Threshold {
  value: number | null;
  color: string;
}

export interface ValueMapping {
  value: string;
  text: string;
  color: string;
}

export interface FieldOptions {
  unit?: string;
  min?: number;
  max?: number;
  decimals?: number;
  thresholds?: Threshold[];
  mappings?: ValueMapping[];
  /** Grafana color mode: "palette-classic" (default for graphs) or "thresholds". */
  colorMode?: NonNullable<GrafanaFieldConfig['color']>['mode'];
}

function fieldDefaults(f: FieldOptions, custom: JsonObject): JsonObject {
  const d = {
    color: { mode: f.colorMode ?? 'palette-classic' },
    custom,
    mappings: f.mappings?.length
      ? [
          {
            type: 'value',
            options: Object.fromEntries(
              f.mappings.map((m, index) => [m.value, { text: m.text, color: m.color, index }]),
            ),
          },
        ]
      : [],
    thresholds: {
      mode: 'absolute',
      steps: (f.thresholds ?? [{ value: null, color: 'green' }]).map((t) => ({ color: t.color, value: t.value })),
    },
  } satisfies GrafanaFieldConfig as JsonObject;
  if (f.unit !== undefined) d.unit = f.unit;
  if (f.min !== undefined) d.min = f.min;
  if (f.max !== undefined) d.max = f.max;
  if (f.decimals !== undefined) d.decimals = f.decimals;
  return d;
}

/** A panel before layout: the builder assigns id and gridPos. */
export interface PanelSpec {
  w: number;
  h: number;
  json: JsonObject;
}

interface Common {
  title: string;
  description: string;
  targets: Target[];
  w?: number;
  h?: number;
  field?: FieldOptions;
  overrides?: GrafanaOverride[];
}

function base(type: string, c: Common, fieldCustom: JsonObject, options: JsonObject, extra: JsonObject = {}): PanelSpec {
  return {
    w: c.w ?? 12,
    h: c.h ?? 8,
    json: {
      type,
      title: c.title,
      description: c.description,
      datasource: DS,
      targets: renderTargets(c.targets),
      fieldConfig: { defaults: fieldDefaults(c.field ?? {}, fieldCustom), overrides: c.overrides ?? [] },
      options,
      ...extra,
    } satisfies GrafanaPanel as JsonObject,
  };
}

export interface TimeseriesOptions extends Common {
  stack?: boolean;
  bars?: boolean;
  fillOpacity?: number;
  axisLabel?: string;
}

export function timeseries(c: TimeseriesOptions): PanelSpec {
  return base(
    'timeseries',
    c,
    {
      axisLabel: c.axisLabel ?? '',
      axisPlacement: 'auto',
      drawStyle: c.bars ? 'bars' : 'line',
      fillOpacity: c.fillOpacity ?? (c.stack ? 60 : 10),
      gradientMode: 'none',
      lineInterpolation: c.stack ? 'stepAfter' : 'linear',
      lineWidth: 1,
      pointSize: 4,
      showPoints: 'never',
      spanNulls: false,
      stacking: { group: 'A', mode: c.stack ? 'normal' : 'none' },
      thresholdsStyle: { mode: 'off' },
    } satisfies TimeseriesFieldCustom,
    {
      legend: { calcs: ['lastNotNull', 'max'], displayMode: 'table', placement: 'bottom', showLegend: true },
      tooltip: { mode: 'multi', sort: 'desc' },
    } satisfies TimeseriesPanelOptions,
  );
}

export interface StatOptions extends Common {
  graph?: boolean;
}

export function stat(c: StatOptions): PanelSpec {
  return base(
    'stat',
    { w: 4, h: 4, ...c, field: { colorMode: 'thresholds', ...c.field } },
    {},
    {
      colorMode: 'value',
      graphMode: c.graph ? 'area' : 'none',
      justifyMode: 'auto',
      orientation: 'auto',
      percentChangeColorMode: 'standard',
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      showPercentChange: false,
      textMode: 'value_and_name',
      wideLayout: true,
    } satisfies StatPanelOptions,
  );
}

export function stateTimeline(c: Common): PanelSpec {
  return base(
    'state-timeline',
    { ...c, field: { colorMode: 'thresholds', ...c.field } },
    { fillOpacity: 80, hideFrom: { legend: false, tooltip: false, viz: false }, lineWidth: 0 } satisfies StateTimelineFieldCustom,
    {
      alignValue: 'left',
      legend: { calcs: [], displayMode: 'list', placement: 'bottom', showLegend: true },
      mergeValues: true,
      rowHeight: 0.9,
      showValue: 'never',
      tooltip: { mode: 'single', sort: 'none' },
    } satisfies StateTimelinePanelOptions,
  );
}

export interface TableOptions extends Common {
  /** Grafana transformations (merge, organize, ...). */
  transformations?: Json[];
  /** Initial sort: a column's display name, descending or not. */
  sortBy?: { displayName: string; desc: boolean }[];
}

export function table(c: TableOptions): PanelSpec {
  return base(
    'table',
    { ...c, field: { colorMode: 'thresholds', ...c.field } },
    { align: 'auto', cellOptions: { type: 'auto' }, inspect: false } satisfies TableFieldCustom,
    {
      cellHeight: 'sm',
      frameIndex: 0,
      showHeader: true,
      ...(c.sortBy ? { sortBy: c.sortBy } : {}),
    } satisfies TablePanelOptions,
    { transformations: c.transformations ?? [] },
  );
}

export interface RowSpec {
  title: string;
  panels: PanelSpec[];
}

/**
 * Lays rows out top to bottom (24-column grid, panels wrap left to right) and assigns
 * sequential ids, so the output is deterministic.
 */
export function layout(rows: RowSpec[]): JsonObject[] {
  const out: JsonObject[] = [];
  let id = 1;
  let y = 0;
  for (const row of rows) {
    out.push({
      type: 'row',
      title: row.title,
      collapsed: false,
      datasource: DS,
      gridPos: { h: 1, w: 24, x: 0, y },
      id: id++,
      panels: [],
    } satisfies GrafanaRow);
    y += 1;
    let x = 0;
    let lineHeight = 0;
    for (const p of row.panels) {
      if (p.w > 24) throw new Error(`panel "${String(p.json.title)}" is wider than the grid`);
      if (x + p.w > 24) {
        y += lineHeight;
        x = 0;
        lineHeight = 0;
      }
      out.push({ ...p.json, gridPos: { h: p.h, w: p.w, x, y }, id: id++ });
      x += p.w;
      lineHeight = Math.max(lineHeight, p.h);
    }
    y += lineHeight;
  }
  return out;
}

export interface QueryVariableOptions {
  name: string;
  label: string;
  query: string;
  /** 1 = alphabetical, 3 = numerical ascending. */
  sort: number;
  description: string;
}

export function datasourceVariable(): JsonObject {
  return {
    name: DATASOURCE_VAR,
    label: 'Data source',
    description: 'Prometheus that scrapes cuzk-exporter',
    type: 'datasource',
    query: 'prometheus',
    hide: 0,
    includeAll: false,
    multi: false,
    options: [],
    refresh: 1,
    regex: '',
    skipUrlSync: false,
  } satisfies GrafanaVariable;
}

export function queryVariable(v: QueryVariableOptions): JsonObject {
  return {
    name: v.name,
    label: v.label,
    description: v.description,
    type: 'query',
    datasource: DS,
    definition: v.query,
    query: { qryType: 1, query: v.query, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
    current: { selected: true, text: ['All'], value: ['$__all'] },
    hide: 0,
    includeAll: true,
    multi: true,
    options: [],
    refresh: 2,
    regex: '',
    skipUrlSync: false,
    sort: v.sort,
  } satisfies QueryVariableJson;
}
