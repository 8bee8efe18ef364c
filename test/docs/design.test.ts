/**
 * docs/design.md is the contract the rest of the repository cites (issue 24):
 *  (a) every "DESIGN §n" / "design.md §n" (and "<doc>.md §n" for the other docs) anywhere in
 *      the repository resolves to a numbered heading of that document;
 *  (b) the metric table of §5 and what /metrics serves agree in both directions, per mode:
 *      a real `run` exporter (sim backend), a real `attach` exporter on a `simulate` daemon
 *      with all three surfaces, and a real fleet exporter (its own /metrics, and a target's
 *      /probe against the attach rows). Names, types and label names are compared.
 * Every process is the compiled CLI in its own process group, killed in afterAll.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startFleetServer, telemetryPerTarget } from '../../src/exporter/fleet-server';
import type { Telemetry } from '../../src/exporter/telemetry';
import type { RunningServer } from '../../src/exporter/web-front';
import { Fleet } from '../../src/engine/sources/fleet/fleet';
import { loadTargetsFile } from '../../src/engine/sources/fleet/targets-file';
import { TargetsFileWatch } from '../../src/engine/sources/fleet/targets-watch';
import { silentLogger } from '../../src/util/logger';
import { fixture } from '../attach/snapshots';
import { StatusServer } from '../attach/status-server';
import { parse } from '../helpers/prom-text';
import { killAll, startSim } from '../sim/sim-process';

const ROOT = path.join(__dirname, '..', '..');
const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');
const DESIGN = path.join(ROOT, 'docs', 'design.md');

/** Numbered headings of a markdown file: "## 7. …" → "7", "### 7c. …" → "7c". */
export function sectionIds(markdown: string): Set<string> {
  const ids = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,4}\s+(\d+[a-z]?)\.\s/gm)) ids.add(m[1]);
  return ids;
}

interface Ref {
  file: string;
  line: number;
  doc: string;
  section: string;
}

// Built from parts so that this file's own text holds no reference. A document's name is at
// most 100 characters: unbounded, `[\w-]*` retried from every start of a long word, quadratic
// in it (Stryker's incremental files hold test names with 20,000-character job ids; the scan
// took 275 s of CI).
const SECT = '\u00a7';
const REF = new RegExp(`(DESIGN|[A-Za-z][\\w-]{0,100}\\.md)\\]?(?:\\([^)]{0,200}\\))?\\s*${SECT}\\s*(\\d+[a-z]?)`, 'g');

/** Every section reference in `text` ("DESIGN §5", "attach.md §4b", "[DESIGN §6](design.md#…)"). */
export function sectionRefs(file: string, text: string): Ref[] {
  const out: Ref[] = [];
  text.split('\n').forEach((l, i) => {
    if (!l.includes(SECT)) return;
    for (const m of l.matchAll(REF)) out.push({ file, line: i + 1, doc: m[1] === 'DESIGN' ? 'design.md' : path.basename(m[1]), section: m[2] });
  });
  // Inside design.md a bare "§n" is a reference to itself.
  if (path.basename(file) === 'design.md' && file.startsWith('docs')) {
    text.split('\n').forEach((l, i) => {
      for (const m of l.matchAll(new RegExp(`(?<![\\w.\\]]|\\.md\\s)${SECT}\\s*(\\d+[a-z]?)`, 'g'))) out.push({ file, line: i + 1, doc: 'design.md', section: m[1] });
    });
  }
  return out;
}

/** The files of the repository (tracked and new, not ignored) that may cite a section. */
function repoFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  return out
    .split('\n')
    .filter((f) => /\.(ts|js|md|yml|yaml|json|c|h|sh|py)$/.test(f) && fs.existsSync(path.join(ROOT, f)))
    .filter((f) => !f.startsWith('node_modules/'))
    // Stryker's own output (test names and source snapshots), not text that cites a section.
    .filter((f) => !/^test\/mutation\/incremental-[^/]*\.json$/.test(f));
}

describe('section references', () => {
  test('every DESIGN/design.md/<doc>.md section reference in the repository resolves to a heading', () => {
    const ids = new Map<string, Set<string>>();
    const idsOf = (doc: string): Set<string> | null => {
      if (!ids.has(doc)) {
        const p = path.join(ROOT, 'docs', doc);
        ids.set(doc, fs.existsSync(p) ? sectionIds(fs.readFileSync(p, 'utf8')) : new Set());
      }
      return ids.get(doc)!;
    };
    const refs = repoFiles().flatMap((f) => sectionRefs(f, fs.readFileSync(path.join(ROOT, f), 'utf8')));
    // The scan found what the code cites (it would pass vacuously on a broken pattern).
    expect(refs.filter((r) => r.doc === 'design.md').length).toBeGreaterThan(50);
    expect(refs.some((r) => r.section === '7c')).toBe(true);
    const broken = refs.filter((r) => !idsOf(r.doc)!.has(r.section)).map((r) => `${r.file}:${r.line}: ${r.doc} ${SECT}${r.section}`);
    expect(broken).toEqual([]);
  });

  test('the scanner finds a reference to a missing section', () => {
    const ids = sectionIds('## 5. Metrics\n### 7c. TIMELINE\n');
    const refs = sectionRefs('src/x.ts', `see DESIGN ${SECT}7c and DESIGN ${SECT}12, [DESIGN ${SECT}5](design.md#5)`);
    expect(refs.map((r) => r.section)).toEqual(['7c', '12', '5']);
    expect(refs.filter((r) => !ids.has(r.section)).map((r) => r.section)).toEqual(['12']);
  });

  test('a long word before a reference is scanned in linear time and the reference still found', () => {
    // 200,000 word characters: the unbounded name pattern took minutes on this (quadratic).
    const long = `${'j'.repeat(200_000)} and then DESIGN ${SECT}7c`;
    expect(sectionRefs('test/mutation/x.json', long).map((r) => r.section)).toEqual(['7c']);
  });

  test('every link to a heading of a markdown file (file.md#anchor, #anchor) finds that heading', () => {
    // GitHub's anchors: the heading lowercased, punctuation dropped, spaces as dashes.
    const slug = (h: string) => h.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const anchorsOf = (file: string) => new Set([...fs.readFileSync(file, 'utf8').matchAll(/^#{1,6}\s+(.*)$/gm)].map((m) => slug(m[1])));
    const broken: string[] = [];
    let checked = 0;
    for (const f of repoFiles().filter((x) => x.endsWith('.md') && !x.startsWith('bench/results/'))) {
      const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s]*?)#([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(m[1])) continue; // another site
        const target = m[1] === '' ? path.join(ROOT, f) : path.join(ROOT, path.dirname(f), m[1]);
        if (!target.endsWith('.md')) continue;
        checked++;
        if (!fs.existsSync(target) || !anchorsOf(target).has(m[2])) broken.push(`${f}: ${m[1]}#${m[2]}`);
      }
    }
    expect(checked).toBeGreaterThan(5);
    expect(broken).toEqual([]);
  });

  test('the README links docs/design.md', () => {
    expect(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')).toContain('](docs/design.md)');
  });
});

type Mode = 'run' | 'attach' | 'fleet';
interface Row {
  name: string;
  type: string;
  labels: string[];
  modes: Mode[];
}

/** The rows of §5's metric table. */
export function metricTable(markdown: string): Row[] {
  const s5 = /^## 5\. [^\n]*\n([\s\S]*?)^## 6\. /m.exec(markdown);
  if (!s5) throw new Error('design.md has no section 5');
  const rows: Row[] = [];
  for (const line of s5[1].split('\n')) {
    const m = /^\| `(cuzk_[a-z_]+)` \|([^|]*)\|([^|]*)\|([^|]*)\|/.exec(line);
    if (!m) continue;
    const type = m[2].trim().split(/\s+/)[0];
    const labels = [...m[3].matchAll(/`([a-z_]+)`/g)].map((x) => x[1]);
    const modes = m[4].split(',').map((x) => x.trim()) as Mode[];
    for (const mode of modes) if (!['run', 'attach', 'fleet'].includes(mode)) throw new Error(`${m[1]}: unknown mode "${mode}"`);
    rows.push({ name: m[1], type, labels, modes });
  }
  return rows;
}

interface Family {
  type: string;
  labels: Set<string>;
}

/** Families of a /metrics body by `# TYPE`, with the label names their samples carry. */
function families(body: string): Map<string, Family> {
  const out = new Map<string, Family>();
  for (const m of body.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(m[1], { type: m[2], labels: new Set() });
  for (const s of parse(body)) {
    const base = [...out.keys()].find((f) => s.name === f || (out.get(f)!.type === 'histogram' && /^_(bucket|sum|count)$/.test(s.name.slice(f.length)) && s.name.startsWith(f)));
    if (!base) throw new Error(`sample ${s.name} has no # TYPE`);
    for (const l of Object.keys(s.labels)) if (l !== 'le') out.get(base)!.labels.add(l);
  }
  return out;
}

/** What differs between the table's rows for `mode` and the families served. */
function contractDiff(rows: Row[], mode: Mode, served: Map<string, Family>): string[] {
  const want = rows.filter((r) => r.modes.includes(mode));
  const problems: string[] = [];
  for (const r of want) if (!served.has(r.name)) problems.push(`${mode}: ${r.name} is in the table but not served`);
  for (const [name, f] of served) {
    const r = want.find((x) => x.name === name);
    if (!r) {
      problems.push(`${mode}: ${name} is served but not in the table for ${mode}`);
      continue;
    }
    if (r.type !== f.type) problems.push(`${mode}: ${name} is a ${f.type}, the table says ${r.type}`);
    for (const l of f.labels) if (!r.labels.includes(l)) problems.push(`${mode}: ${name} has label ${l}, not in the table`);
  }
  return problems;
}

const table = () => metricTable(fs.readFileSync(DESIGN, 'utf8'));

test('the contract check fails on a row deleted and on a row added', () => {
  const rows = table();
  const served = new Map<string, Family>(rows.filter((r) => r.modes.includes('run')).map((r) => [r.name, { type: r.type, labels: new Set(r.labels) }]));
  expect(contractDiff(rows, 'run', served)).toEqual([]);
  expect(contractDiff(rows.filter((r) => r.name !== 'cuzk_up'), 'run', served)).toEqual(['run: cuzk_up is served but not in the table for run']);
  expect(contractDiff([...rows, { name: 'cuzk_bogus', type: 'gauge', labels: [], modes: ['run'] }], 'run', served)).toEqual(['run: cuzk_bogus is in the table but not served']);
});

// ---- real exporters ----

const children: ChildProcess[] = [];
let tmp: string;

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-design-'));
});

afterAll(() => {
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null || c.pid === undefined) continue;
    try {
      process.kill(-c.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  killAll();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Starts the CLI with `args`; resolves with its base URL once it prints it. */
function serve(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args, '--web.listen-address', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    children.push(child);
    let out = '';
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /metrics:\s+(http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(out);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`${args[0]} exited (${code}): ${err}`)));
  });
}

/**
 * Scrapes until every row of `mode` is served (histograms appear with their first
 * observation), then returns the last body's families. The cap only stops a run that hangs.
 */
async function servedOnceComplete(url: string, mode: Mode, capMs = 90_000): Promise<Map<string, Family>> {
  const want = table().filter((r) => r.modes.includes(mode));
  const cap = Date.now() + capMs;
  for (;;) {
    const f = families(await (await fetch(url)).text());
    if (want.every((r) => f.has(r.name)) || Date.now() > cap) return f;
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('run: /metrics serves exactly the rows marked run', async () => {
  const base = await serve(['run', '--engine.backend', 'sim', '--engine.time-scale', '0.01']);
  expect(contractDiff(table(), 'run', await servedOnceComplete(`${base}/metrics`, 'run'))).toEqual([]);
}, 120_000);

test('attach (gRPC + TIMELINE + /status of simulate): /metrics serves exactly the rows marked attach', async () => {
  const sock = path.join(tmp, 'cuzk.sock');
  const log = path.join(tmp, 'cuzk.log');
  const sim = await startSim(['--engine.backend', 'sim', '--engine.time-scale', '0.01', '--simulate.grpc-listen', `unix://${sock}`, '--simulate.status-listen', '127.0.0.1:0', '--simulate.timeline-file', log]);
  const base = await serve(['attach', '--cuzk.grpc-address', `unix://${sock}`, '--cuzk.status-url', sim.statusUrl!, '--cuzk.timeline-file', log, '--cuzk.poll-interval', '200ms']);
  expect(contractDiff(table(), 'attach', await servedOnceComplete(`${base}/metrics`, 'attach'))).toEqual([]);
}, 120_000);

describe('fleet', () => {
  let status: StatusServer;
  let fleet: Fleet<Telemetry>;
  let watch: TargetsFileWatch;
  let server: RunningServer;

  afterAll(async () => {
    await watch?.stop();
    await server?.close();
    await fleet?.stop();
    await status?.close();
  });

  test("the fleet exporter's own /metrics serves exactly the rows marked fleet; a /probe only attach rows", async () => {
    status = await StatusServer.start();
    status.behaviour = { kind: 'body', body: fixture('02-snap-busy-consistent.json').text };
    const file = path.join(tmp, 'targets.yml');
    fs.writeFileSync(file, `targets:\n  - name: a\n    status_url: ${status.url}\n    timeline_command: [${process.execPath}, -e, "setInterval(() => {}, 1000)"]\n`);
    fleet = new Fleet({ pollIntervalMs: 100, grpcStatusIntervalMs: 5000, timeoutMs: 1000, maxBodyBytes: 1 << 20, logger: silentLogger, exporterFor: telemetryPerTarget('test') });
    watch = new TargetsFileWatch(file, fleet, silentLogger, 50);
    await fleet.apply(loadTargetsFile(file));
    server = await startFleetServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', fleet, watch, logger: silentLogger, version: 'test' });
    expect(contractDiff(table(), 'fleet', families(await (await fetch(`${server.url}/metrics`)).text()))).toEqual([]);
    const probe = families(await (await fetch(`${server.url}/probe?target=a`)).text());
    expect(probe.has('cuzk_up')).toBe(true);
    const attachRows = new Set(table().filter((r) => r.modes.includes('attach')).map((r) => r.name));
    expect([...probe.keys()].filter((n) => !attachRows.has(n))).toEqual([]);
  });
});
