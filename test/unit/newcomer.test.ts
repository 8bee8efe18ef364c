/**
 * What a newcomer reads is what runs (issue 18):
 *  - the README's apt-get line names exactly the packages `npm test` checks for
 *    (test/system-deps.sh, which `pretest` and .ci/run both call);
 *  - package.json's engines claims the Node majors CI tests (.ci/node-versions: one version
 *    per claimed major, each within the claim), and the README says the same;
 *  - no shell block of the README runs a bare `cuzk-exporter` where it is not on the PATH
 *    (in a checkout it is `npx cuzk-exporter`; bare only after a global install);
 *  - the start script execs node, so npm's child is the exporter and signals reach it.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string }; scripts: Record<string, string> };

test("the README's apt-get line is test/system-deps.sh's package list", () => {
  const listed = execFileSync('bash', [path.join(ROOT, 'test', 'system-deps.sh'), '--list'], { encoding: 'utf8' }).trim().split(' ');
  const lines = readme.split('\n').filter((l) => /^sudo apt-get install /.test(l));
  expect(lines).toHaveLength(1);
  const named = lines[0].replace(/^sudo apt-get install (-\S+ )*/, '').trim().split(/\s+/);
  expect(named).toEqual(listed);
  // The system packages first, then the one type-check of the tests (jest only transpiles them).
  expect(pkg.scripts.pretest).toBe('bash test/system-deps.sh && tsc -p test/tsconfig.json');
  expect(fs.readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8')).toMatch(/^bash test\/system-deps\.sh/m);
});

test('engines claims exactly the Node majors CI runs the suite on, and the README says so', () => {
  // "^22.15.0 || >=24": the OpenTelemetry packages need >= 22.15; 24 is the other LTS.
  const ranges = pkg.engines.node.split('||').map((r) => r.trim());
  const claimed = ranges.map((r) => {
    const m = /^(?:\^|>=)(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(r);
    if (!m) throw new Error(`engines range "${r}" is not of the form ^X.Y.Z or >=X`);
    return { major: Number(m[1]), min: [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] };
  });
  const versions = fs
    .readFileSync(path.join(ROOT, '.ci', 'node-versions'), 'utf8')
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter(Boolean)
    .map((v) => v.split('.').map(Number));
  expect(versions.map((v) => v[0])).toEqual(claimed.map((c) => c.major));
  versions.forEach((v, i) => {
    const min = claimed[i].min;
    const atLeast = v[0] !== min[0] ? v[0] > min[0] : v[1] !== min[1] ? v[1] > min[1] : v[2] >= min[2];
    expect([v.join('.'), atLeast]).toEqual([v.join('.'), true]);
  });
  const quick = /## Quick start\n([\s\S]*?)\n## /.exec(readme)![1];
  expect(quick).toContain('Node.js 22 (22.15 or later) or 24');
});

test('README shell blocks run as written in a checkout: no bare cuzk-exporter before a global install', () => {
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  expect(blocks.length).toBeGreaterThan(3);
  const bare: string[] = [];
  for (const b of blocks) {
    let installed = false;
    for (const line of b.split('\n')) {
      if (/npm install -g /.test(line)) installed = true;
      // A command position: the start of a line or after a pipe, && or ;.
      if (!installed && /(^|\|\s*|&&\s*|;\s*)cuzk-exporter\s/.test(line.trim())) bare.push(line.trim());
    }
  }
  expect(bare).toEqual([]);
});

test('npm start execs node: npm forwards signals to the exporter itself, not to a shell', () => {
  expect(pkg.scripts.start).toMatch(/^exec node dist\/src\/cli\/main\.js run$/);
});
