/**
 * Regenerates the checked-in dashboards/cuzk-overview.json and dashboards/rules/cuzk-alerts.yml
 * from dashboards/src/*.ts.
 *
 *   node dist/dashboards/generate.js          write the files
 *   node dist/dashboards/generate.js --check  exit 1 if a checked-in file is out of date
 */
import * as fs from 'fs';
import * as path from 'path';
import { findRepoRoot, renderAll } from './export';

export function generate(root: string, check: boolean): { path: string; changed: boolean }[] {
  return renderAll().map((f) => {
    const p = path.join(root, f.repoPath);
    const current = fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : null;
    const changed = current !== f.content;
    if (changed && !check) {
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, f.content);
    }
    return { path: p, changed };
  });
}

if (require.main === module) {
  const check = process.argv.includes('--check');
  const root = findRepoRoot(__dirname);
  const results = generate(root, check);
  for (const r of results) {
    const rel = path.relative(root, r.path);
    process.stdout.write(`${check ? (r.changed ? 'out of date' : 'up to date') : r.changed ? 'wrote' : 'unchanged'}: ${rel}\n`);
  }
  if (check && results.some((r) => r.changed)) {
    process.stderr.write('generated dashboards/rules are out of date: run the dashboards generator\n');
    process.exit(1);
  }
}
