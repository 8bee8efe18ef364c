/**
 * deploy/fleet's configs as shipped are accepted by the tools that will load them (README,
 * "fleet": `promtool check config` for Prometheus with its two rule files, `amtool
 * check-config` for Alertmanager). Each check is also run on a broken copy, so a checker
 * that accepts anything (or is not the real tool) fails here. The binaries come from
 * Debian's prometheus and prometheus-alertmanager (test/system-deps.sh).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const FLEET = path.join(ROOT, 'deploy', 'fleet');
let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-deploy-configs-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function run(bin: string, args: string[]): { code: number | null; out: string } {
  const r = spawnSync(bin, args, { cwd: ROOT, encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });
  if (r.error) throw r.error;
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

test('promtool accepts deploy/fleet/prometheus.yml and both rule files it names; a broken rule file is refused', () => {
  const ok = run('/usr/bin/promtool', ['check', 'config', path.join(FLEET, 'prometheus.yml')]);
  expect(ok.out).toContain('SUCCESS: 2 rule files found');
  expect(ok.code).toBe(0);
  // The same config pointing at a rule file with a bad expression.
  const bad = path.join(dir, 'bad-rules.yml');
  fs.writeFileSync(bad, 'groups:\n  - name: x\n    rules:\n      - alert: Broken\n        expr: sum(rate(\n');
  const cfg = fs.readFileSync(path.join(FLEET, 'prometheus.yml'), 'utf8').replace(/rule_files:\n(?:\s+- .*\n)+/, `rule_files:\n  - ${bad}\n`);
  expect(cfg).toContain(bad);
  const cfgFile = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(cfgFile, cfg);
  const refused = run('/usr/bin/promtool', ['check', 'config', cfgFile]);
  expect(refused.code).not.toBe(0);
});

test('amtool accepts deploy/fleet/alertmanager.yml; a route to a receiver it does not define is refused', () => {
  const ok = run('/usr/bin/amtool', ['check-config', path.join(FLEET, 'alertmanager.yml')]);
  expect(ok.out).toContain('SUCCESS');
  expect(ok.code).toBe(0);
  const text = fs.readFileSync(path.join(FLEET, 'alertmanager.yml'), 'utf8');
  const m = /receiver:\s*['"]?([\w-]+)/.exec(text);
  expect(m).not.toBeNull();
  const broken = path.join(dir, 'alertmanager.yml');
  fs.writeFileSync(broken, text.replace(new RegExp(`receiver:\\s*['"]?${m![1]}['"]?`), 'receiver: nobody-defines-this'));
  const refused = run('/usr/bin/amtool', ['check-config', broken]);
  expect(refused.code).not.toBe(0);
});
