import * as fs from 'node:fs';
import * as path from 'node:path';
import { renderSummary } from '../../bench/report';

const ROOT = path.join(__dirname, '..', '..');

test("README's benchmark section is the committed results summary, verbatim", () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const m = /<!-- bench:begin -->\n([\s\S]*?)<!-- bench:end -->/.exec(readme);
  expect(m).not.toBeNull();
  const summary = fs.readFileSync(path.join(ROOT, 'bench', 'results', 'summary.md'), 'utf8');
  expect(m![1].trim()).toBe(summary.trim());
  // The summary itself is rendered from the committed results file.
  const results = fs.readdirSync(path.join(ROOT, 'bench', 'results')).filter((f) => f.endsWith('.json'));
  expect(results.length).toBeGreaterThan(0);
  for (const f of results) expect(summary).toContain(`bench/results/${f}`);
  const [file] = results;
  const rendered = renderSummary(JSON.parse(fs.readFileSync(path.join(ROOT, 'bench', 'results', file), 'utf8')), `bench/results/${file}`);
  expect(rendered).toBe(summary);
});
