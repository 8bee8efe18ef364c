/**
 * Grafana's own schema types (@grafana/schema, pinned exactly in package.json), so the
 * dashboards are type-checked against Grafana's dashboard model when they are compiled
 * (`npm run build`, `npm run dashboards`): every panel's options and field config literal
 * is checked against its panel plugin's generated types (builder.ts), rows, variables and
 * the dashboard object against the dashboard model (overview.ts) — a misspelt option, a
 * wrong value for an enum or a missing required field is a compile error, not a dashboard
 * that Grafana silently repairs or rejects on import.
 *
 * Type imports only: nothing of @grafana/schema (a dev dependency) is loaded at run time,
 * so `cuzk-exporter dashboards` works from an installed package.
 */
import type { AnnotationQuery, Dashboard, FieldConfig, FieldConfigSource, Panel, RowPanel, VariableModel } from '@grafana/schema';
import type { FieldConfig as StateTimelineFieldConfig, Options as StateTimelineOptions } from '@grafana/schema/dist/types/raw/composable/statetimeline/panelcfg/x/types.gen';
import type { Options as StatOptions } from '@grafana/schema/dist/types/raw/composable/stat/panelcfg/x/types.gen';
import type { FieldConfig as TableFieldConfig, Options as TableOptions } from '@grafana/schema/dist/types/raw/composable/table/panelcfg/x/types.gen';
import type { FieldConfig as TimeSeriesFieldConfig, Options as TimeSeriesOptions } from '@grafana/schema/dist/types/raw/composable/timeseries/panelcfg/x/types.gen';
import type { JsonObject } from './builder';

/**
 * A schema type as JSON literals spell it: Grafana's enums become their values (`'table'`,
 * not `LegendDisplayMode.Table`), recursively; everything else is unchanged, so unknown
 * keys and wrong value types are still errors.
 */
export type Loose<T> = T extends string
  ? `${T}`
  : T extends number | boolean | null | undefined
    ? T
    : T extends readonly (infer U)[]
      ? Loose<U>[]
      : T extends object
        ? { [K in keyof T]: Loose<T[K]> }
        : T;

export type GrafanaPanel = Loose<Panel>;
export type GrafanaRow = Loose<RowPanel>;
export type GrafanaVariable = Loose<VariableModel>;
/**
 * A Prometheus query variable as Grafana's variable editor saves it: the model plus
 * `definition`, the editor's display text of the query, which the schema does not list.
 */
export type QueryVariableJson = GrafanaVariable & { definition: string };
export type GrafanaFieldConfig = Loose<FieldConfig>;
export type GrafanaOverride = Loose<FieldConfigSource['overrides'][number]>;
export type TimeseriesPanelOptions = Loose<TimeSeriesOptions>;
export type TimeseriesFieldCustom = Loose<TimeSeriesFieldConfig>;
export type StatPanelOptions = Loose<StatOptions>;
export type StateTimelinePanelOptions = Loose<StateTimelineOptions>;
export type StateTimelineFieldCustom = Loose<StateTimelineFieldConfig>;
export type TablePanelOptions = Loose<TableOptions>;
export type TableFieldCustom = Loose<TableFieldConfig>;

/**
 * A Prometheus annotation query as Grafana saves it: the model plus the Prometheus data
 * source's own fields (the query and how to label the events), which the schema leaves to
 * the data source plugin.
 */
export type PrometheusAnnotation = Loose<AnnotationQuery> & {
  expr: string;
  step?: string;
  tagKeys?: string;
  textFormat?: string;
  titleFormat?: string;
  useValueForTime?: boolean;
};

/**
 * The dashboard object overview.ts returns: Grafana's dashboard model, with its panels and
 * variables as the JSON builder.ts made them (each already checked there), Prometheus
 * annotations, plus the `__requires` list Grafana's export adds for importing.
 */
export type DashboardJson = Loose<Omit<Dashboard, 'panels' | 'templating' | 'annotations'>> & {
  annotations: { list: PrometheusAnnotation[] };
  __requires: { type: 'grafana' | 'datasource' | 'panel'; id: string; name: string; version: string }[];
  panels: JsonObject[];
  templating: { list: JsonObject[] };
};
