/** `cuzk-exporter dashboards --out DIR`: writes the Grafana dashboards and Prometheus rules. */
import { exportDashboards } from '../../dashboards/export';
import { Resolved, UsageError } from './options';

export function dashboardsCommand(o: Resolved): number {
  const out = o['out'] as string | undefined;
  if (!out) throw new UsageError('dashboards: --out DIR is required (the folder to write the dashboards and rules to)');
  if (o['config.check']) {
    process.stdout.write('configuration OK\n');
    return 0;
  }
  let files: string[];
  try {
    files = exportDashboards(out);
  } catch (e) {
    throw new UsageError(`dashboards: cannot write to ${out}: ${(e as Error).message}`);
  }
  for (const f of files) process.stdout.write(`${f}\n`);
  return 0;
}
