/**
 * The fleet exporter's own /metrics: its health, not its targets' (each target's metrics
 * are at /probe?target=NAME, as with the blackbox and snmp exporters). Prometheus text
 * format 0.0.4, written here: a few dozen lines, one series per target at most.
 *
 *   cuzk_exporter_build_info{version,source="fleet",backend="cuzk"}   1
 *   cuzk_fleet_targets                                               targets configured
 *   cuzk_fleet_target_up{target}                                     that target's cuzk_up
 *   cuzk_fleet_timeline_command_running{target}                      targets with a timeline command
 *   cuzk_fleet_timeline_command_failures_total{target}               its exits and failures to start
 *   cuzk_fleet_targets_file_last_reload_successful                   as prometheus_config_last_reload_successful
 *   cuzk_fleet_targets_file_last_reload_success_timestamp_seconds
 *   cuzk_exporter_errors_total{reason}                               targets_file, unknown_target, web front
 */
import { escapeString } from './label-writer';
import type { Fleet } from '../engine/sources/fleet/fleet';
import type { TargetsFileWatch } from '../engine/sources/fleet/targets-watch';

type Labels = Record<string, string>;

function labelText(l: Labels): string {
  const keys = Object.keys(l);
  if (keys.length === 0) return '';
  return `{${keys.map((k) => `${k}="${escapeString(l[k]).replace(/"/g, '\\"')}"`).join(',')}}`;
}

function fmt(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

export function fleetMetricsText(fleet: Fleet, watch: TargetsFileWatch, version: string): string {
  const out: string[] = [];
  const family = (name: string, type: 'gauge' | 'counter', help: string, samples: [Labels, number][]) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [l, v] of samples) out.push(`${name}${labelText(l)} ${fmt(v)}`);
  };
  const targets = fleet.list();
  family('cuzk_exporter_build_info', 'gauge', 'Build information of this exporter; always 1. source="fleet": a multi-target exporter (targets at /probe?target=NAME).', [
    [{ version, source: 'fleet', backend: 'cuzk' }, 1],
  ]);
  family('cuzk_fleet_targets', 'gauge', 'Targets in the targets file in force.', [[{}, targets.length]]);
  family(
    'cuzk_fleet_target_up',
    'gauge',
    "Whether each target's attached cuzk daemon answered on every surface at its last poll (its cuzk_up).",
    targets.map((t) => [{ target: t.name }, t.source.surfaceStates().every((s) => s.up) ? 1 : 0]),
  );
  const withCommand = targets.filter((t) => t.command !== null);
  family(
    'cuzk_fleet_timeline_command_running',
    'gauge',
    "Whether each target's timeline command runs now (1) or waits to be restarted (0).",
    withCommand.map((t) => [{ target: t.name }, t.command!.running ? 1 : 0]),
  );
  family(
    'cuzk_fleet_timeline_command_failures_total',
    'counter',
    "Exits and failures to start of each target's timeline command (each is restarted with back-off).",
    withCommand.map((t) => [{ target: t.name }, t.command!.failures]),
  );
  family('cuzk_fleet_targets_file_last_reload_successful', 'gauge', 'Whether the last reload of the targets file succeeded (1) or kept the previous targets (0).', [
    [{}, watch.lastReloadOk ? 1 : 0],
  ]);
  family('cuzk_fleet_targets_file_last_reload_success_timestamp_seconds', 'gauge', 'Unix time of the last successful load of the targets file.', [[{}, watch.lastSuccessSecs]]);
  family(
    'cuzk_exporter_errors_total',
    'counter',
    "Errors of the fleet exporter itself by reason (each target's own are in its /probe answer).",
    [...fleet.errors.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([reason, n]) => [{ reason }, n]),
  );
  return out.join('\n') + '\n';
}
