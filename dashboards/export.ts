/**
 * Renders the shipped dashboards and rule files from their TypeScript sources and writes
 * them to a folder (`cuzk-exporter dashboards --out DIR`). Nothing is read from disk, so it
 * works from an installed package as well as from a checkout.
 */
import * as fs from 'fs';
import * as path from 'path';
import { buildFleetDashboard } from './src/fleet';
import { renderFleetRulesYaml } from './src/fleet-rules';
import { buildOverviewDashboard } from './src/overview';
import { renderRulesYaml } from './src/rules';

export interface RenderedFile {
  /** File name in the output folder. */
  name: string;
  /** Path relative to the repository root where the checked-in copy lives. */
  repoPath: string;
  content: string;
}

export function renderJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** Every generated artefact with its checked-in location. */
export function renderAll(): RenderedFile[] {
  return [
    { name: 'cuzk-overview.json', repoPath: 'dashboards/cuzk-overview.json', content: renderJson(buildOverviewDashboard()) },
    { name: 'cuzk-alerts.yml', repoPath: 'dashboards/rules/cuzk-alerts.yml', content: renderRulesYaml() },
    { name: 'cuzk-fleet.json', repoPath: 'dashboards/cuzk-fleet.json', content: renderJson(buildFleetDashboard()) },
    { name: 'cuzk-fleet.yml', repoPath: 'dashboards/rules/cuzk-fleet.yml', content: renderFleetRulesYaml() },
  ];
}

/** Writes the dashboard JSON(s) and rule file(s) to outDir (created if needed); returns their absolute paths. */
export function exportDashboards(outDir: string): string[] {
  const dir = path.resolve(outDir);
  fs.mkdirSync(dir, { recursive: true });
  return renderAll().map((f) => {
    const p = path.join(dir, f.name);
    fs.writeFileSync(p, f.content);
    return p;
  });
}

/** The repository (package) root: the nearest folder above `from` holding package.json. */
export function findRepoRoot(from: string = __dirname): string {
  let dir = path.resolve(from);
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
}
