/**
 * The dashboards are type-checked against Grafana's own schema types (@grafana/schema,
 * pinned exactly) when they compile: dashboards/src/grafana-types.ts. This proves the
 * check bites — the TypeScript compiler, given the same types, rejects a misspelt enum
 * value, an unknown option and a missing required field, and accepts what builder.ts
 * writes — and that the shipped dashboard has the exemplar panel for slow partitions.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { buildOverviewDashboard } from '../../dashboards/src/overview';

const ROOT = path.resolve(__dirname, '..', '..');

/** Diagnostics per snippet, all compiled in one program with the project's settings against grafana-types.ts. */
function diagnostics(snippets: string[]): string[][] {
  const files = snippets.map((_, i) => path.join(ROOT, 'dashboards', 'src', `__schema_probe_${i}__.ts`));
  const sources = new Map(files.map((f, i) => [f, `import type * as G from './grafana-types';\n${snippets[i]}\nexport {};\n`]));
  const options: ts.CompilerOptions = { strict: true, noEmit: true, skipLibCheck: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, esModuleInterop: true };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  host.readFile = (f) => sources.get(path.resolve(f)) ?? read(f);
  const exists = host.fileExists.bind(host);
  host.fileExists = (f) => sources.has(path.resolve(f)) || exists(f);
  const program = ts.createProgram(files, options, host);
  const all = ts.getPreEmitDiagnostics(program);
  return files.map((file) =>
    all.filter((d) => d.file && path.resolve(d.file.fileName) === file).map((d) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`),
  );
}

describe('Grafana schema types', () => {
  test('@grafana/schema is pinned exactly', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    expect(pkg.devDependencies['@grafana/schema']).toMatch(/^\d+\.\d+\.\d+$/);
  });

  test('what builder.ts writes passes; a wrong enum value, an unknown option and a missing field do not', () => {
    const good = `const o = { legend: { calcs: ['max'], displayMode: 'table', placement: 'bottom', showLegend: true }, tooltip: { mode: 'multi', sort: 'desc' } } satisfies G.TimeseriesPanelOptions;
const p = { type: 'timeseries', title: 't', datasource: { type: 'prometheus', uid: '\${datasource}' }, targets: [{ expr: 'up', exemplar: true }] } satisfies G.GrafanaPanel;`;
    const [ok, badEnum, unknownKey, missing] = diagnostics([
      good,
      `const o = { legend: { calcs: [], displayMode: 'tabel', placement: 'bottom', showLegend: true }, tooltip: { mode: 'multi', sort: 'desc' } } satisfies G.TimeseriesPanelOptions;`,
      `const o = { legend: { calcs: [], displayMode: 'list', placement: 'bottom', showLegend: true, colour: 'red' }, tooltip: { mode: 'multi', sort: 'desc' } } satisfies G.TimeseriesPanelOptions;`,
      `const p = { title: 'no type' } satisfies G.GrafanaPanel;`,
    ]);
    expect(ok).toEqual([]);
    expect(badEnum.join('\n')).toMatch(/TS2820: Type '"tabel"' is not assignable/);
    expect(unknownKey.join('\n')).toMatch(/TS2353: .*'colour' does not exist/);
    expect(missing.join('\n')).toMatch(/TS1360: .*Property 'type' is missing/);
  }, 120_000);

  test('the overview has the slow-partition panel with exemplars of the GPU-stage histogram', () => {
    const d = buildOverviewDashboard() as { panels: { title?: string; targets?: { expr: string; exemplar?: boolean }[] }[] };
    const panel = d.panels.find((p) => p.title === 'Slow partitions: which job? (exemplars)');
    expect(panel).toBeDefined();
    const withExemplars = panel!.targets!.filter((t) => t.exemplar === true);
    expect(withExemplars).toHaveLength(1);
    expect(withExemplars[0].expr).toContain('cuzk_partition_gpu_duration_seconds_bucket');
    // The checked-in JSON is what the sources build (npm run dashboards).
    const shipped = JSON.parse(fs.readFileSync(path.join(ROOT, 'dashboards', 'cuzk-overview.json'), 'utf8')) as unknown;
    expect(shipped).toEqual(JSON.parse(JSON.stringify(buildOverviewDashboard())));
  });
});
