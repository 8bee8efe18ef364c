/**
 * promtool on the shipped rule file: `check rules`, `test rules` on every unit-test file, and
 * proof that the unit tests have teeth (shortening every `for:` makes each alert's tests fail).
 * Also checks statically that every alert has a promtool test of its `for:` boundary: not
 * firing one second before, firing at it.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ALERTING_RULES, RECORDING_RULES } from '../../dashboards/src/rules';
import { FLEET_RECORDING_RULES } from '../../dashboards/src/fleet-rules';
import { findBinary, writeRulesWithShortFor } from '../helpers/prometheus';

const RULES_DIR = path.join(__dirname, '..', '..', 'dashboards', 'rules');
const RULES = path.join(RULES_DIR, 'cuzk-alerts.yml');
const FLEET_RULES = path.join(RULES_DIR, 'cuzk-fleet.yml');
const TESTS_DIR = path.join(RULES_DIR, 'tests');
const testFiles = fs
  .readdirSync(TESTS_DIR)
  .filter((f) => f.endsWith('.yml'))
  .sort();

const promtool = findBinary('promtool');
const describeWithPromtool = promtool ? describe : describe.skip;
if (!promtool) {
  // eslint-disable-next-line no-console
  console.warn('SKIPPED promtool rule tests: promtool not found on PATH (apt-get install prometheus, or set PROMTOOL_BIN)');
}

/** Runs `f` over `items`, `limit` at a time (promtool runs are CPU-bound; a shared 2-core box chokes on ten at once). */
async function pool<T, R>(items: T[], limit: number, f: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i] as T);
      }
    }),
  );
  return out;
}

/**
 * A generous cap only against a hung promtool: one `test rules` evaluates minutes of rules at
 * 1 s steps, and a loaded 2-core box has taken over 30 s for one. A cap reached is an error
 * of its own, never a run that "failed" (the mutation tests expect failures).
 */
const PROMTOOL_CAP_MS = 150_000;
jest.setTimeout(4 * PROMTOOL_CAP_MS);

function run(args: string[], cwd: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    execFile(promtool as string, args, { cwd, timeout: PROMTOOL_CAP_MS }, (err, stdout, stderr) => {
      if (err && (err as { killed?: boolean }).killed) return reject(new Error(`promtool ${args.join(' ')} did not finish within ${PROMTOOL_CAP_MS / 1000} s`));
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolve({ code, out: `${stdout}${stderr}` });
    });
  });
}

/** Seconds in a Prometheus duration such as 90s, 1m, 2h30m (as used in eval_time). */
export function seconds(d: string): number {
  const re = /(\d+)(ms|s|m|h|d)/g;
  let total = 0;
  let consumed = 0;
  for (const m of d.matchAll(re)) {
    const n = Number(m[1]);
    total += m[2] === 'ms' ? n / 1000 : m[2] === 's' ? n : m[2] === 'm' ? n * 60 : m[2] === 'h' ? n * 3600 : n * 86400;
    consumed += m[0].length;
  }
  if (consumed !== d.length || consumed === 0) throw new Error(`bad duration ${d}`);
  return total;
}

interface AlertCheck {
  file: string;
  group: string;
  evalTime: number;
  alert: string;
  firing: boolean;
}

/**
 * The alert_rule_test entries of a promtool test file, read line by line (the files follow one
 * layout: `- eval_time:`, `alertname:`, then `exp_alerts: []` or `exp_alerts:` + a list).
 */
export function alertChecks(file: string, text: string): AlertCheck[] {
  const out: AlertCheck[] = [];
  let group = '';
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const g = /^ {2}- name: (.*)$/.exec(lines[i] as string);
    if (g) group = g[1] as string;
    const e = /^\s*- eval_time: (\S+)\s*$/.exec(lines[i] as string);
    if (!e) continue;
    const a = /^\s*alertname: (\S+)\s*$/.exec(lines[i + 1] ?? '');
    const x = /^\s*exp_alerts:\s*(\[\])?\s*$/.exec(lines[i + 2] ?? '');
    if (!a || !x) throw new Error(`${file}:${i + 1}: expected eval_time, alertname, exp_alerts on consecutive lines`);
    const firing = x[1] === undefined;
    if (firing && !/^\s*- exp_labels:/.test(lines[i + 3] ?? '')) throw new Error(`${file}:${i + 3}: firing expectation without exp_labels`);
    out.push({ file, group, evalTime: seconds(e[1] as string), alert: a[1] as string, firing });
  }
  return out;
}

const checks = testFiles.flatMap((f) => alertChecks(f, fs.readFileSync(path.join(TESTS_DIR, f), 'utf8')));

describe('promtool unit-test coverage (static)', () => {
  test('seconds() parses promtool durations', () => {
    expect(seconds('89s')).toBe(89);
    expect(seconds('1m')).toBe(60);
    expect(seconds('2h30m')).toBe(9000);
    expect(() => seconds('1 m')).toThrow();
  });

  test('every alert has a for: boundary test: silent 1s before for: elapses, firing at it', () => {
    const missing: string[] = [];
    for (const a of ALERTING_RULES) {
      const mine = checks.filter((c) => c.alert === a.alert);
      const boundary = mine.some((f) => f.firing && mine.some((n) => !n.firing && n.file === f.file && n.group === f.group && n.evalTime === f.evalTime - 1));
      if (!boundary) missing.push(a.alert);
    }
    expect(missing).toEqual([]);
  });

  test('every test file evaluates every second, so the boundary is exact', () => {
    for (const f of testFiles) {
      const text = fs.readFileSync(path.join(TESTS_DIR, f), 'utf8');
      expect(text).toMatch(/^rule_files:\n {2}- \.\.\/cuzk-alerts\.yml$/m);
      if (checks.some((c) => c.file === f)) expect({ f, interval: /^evaluation_interval: 1s$/m.test(text) }).toEqual({ f, interval: true });
    }
  });

  test('tests name only alerts that exist', () => {
    const names = new Set(ALERTING_RULES.map((a) => a.alert));
    expect(checks.filter((c) => !names.has(c.alert)).map((c) => `${c.file}: ${c.alert}`)).toEqual([]);
  });

  test('every recording rule has a promql_expr_test', () => {
    const text = testFiles.map((f) => fs.readFileSync(path.join(TESTS_DIR, f), 'utf8')).join('\n');
    const tested = new Set([...text.matchAll(/^\s*- expr: ([a-z_:0-9]+)/gm)].map((m) => m[1]));
    expect([...RECORDING_RULES, ...FLEET_RECORDING_RULES].map((r) => r.record).filter((r) => !tested.has(r))).toEqual([]);
  });
});

describeWithPromtool('promtool', () => {
  test('check rules accepts the shipped rule file', async () => {
    const r = await run(['check', 'rules', RULES], RULES_DIR);
    expect(r.out).toContain(`SUCCESS: ${ALERTING_RULES.length + RECORDING_RULES.length} rules found`);
    expect(r.code).toBe(0);
  });

  test('check rules accepts the fleet recording rules', async () => {
    const r = await run(['check', 'rules', FLEET_RULES], RULES_DIR);
    expect(r.out).toContain(`SUCCESS: ${FLEET_RECORDING_RULES.length} rules found`);
    expect(r.code).toBe(0);
  });

  test('test rules passes every unit-test file', async () => {
    const results = await pool(testFiles, 2, (f) => run(['test', 'rules', f], TESTS_DIR));
    results.forEach((r, i) => {
      if (r.code !== 0) throw new Error(r.out);
      expect(r.out).toContain(`Unit Testing:  ${testFiles[i]}\n  SUCCESS`);
    });
  }, 600_000);

  test('the unit tests fail when for: is shortened (each alert file catches it)', async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-promtool-'));
    try {
      writeRulesWithShortFor(RULES, path.join(tmp, 'cuzk-alerts.yml'), '0s');
      fs.mkdirSync(path.join(tmp, 'tests'));
      const alertFiles = testFiles.filter((f) => checks.some((c) => c.file === f));
      expect(alertFiles.length).toBeGreaterThanOrEqual(5);
      for (const f of alertFiles) fs.copyFileSync(path.join(TESTS_DIR, f), path.join(tmp, 'tests', f));
      const results = await pool(alertFiles, 2, (f) => run(['test', 'rules', f], path.join(tmp, 'tests')));
      results.forEach((r, i) => {
        expect({ file: alertFiles[i], failed: r.code !== 0 && /FAILED/.test(r.out) }).toEqual({ file: alertFiles[i], failed: true });
      });
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }, 600_000);

  // The key alert's promtool tests have teeth against each way the rule could be wrong:
  // every mutation below makes workers-idle-with-partitions-on-gpu.yml fail.
  const KEY_MUTATIONS: { name: string; expr: string }[] = [
    // Issue 14: fires on healthy split proving (4 partitions in gpu, 2 busy workers).
    { name: 'the pre-split-proving comparison', expr: 'sum by (job, instance) (cuzk_partitions{state="gpu"}) > sum by (job, instance) (cuzk_gpu_worker_busy)' },
    // Misses the seed's state on a source without the flag.
    { name: 'the exporter flag only', expr: 'max by (job, instance) (max_over_time(cuzk_status_mismatch_reason{reason=~"owner_idle|surfaces_disagree"}[2m])) == 1' },
    // Misses the partial clobber (counts never contradict).
    { name: 'the raw series only', expr: 'sum by (job, instance) (cuzk_partitions{state=~"gpu|finalizing"}) > 0 and on (job, instance) sum by (job, instance) (cuzk_gpu_worker_busy) == 0' },
    // Misses the intermittent clobber (the timer resets at every sample where the worker is busy again).
    { name: 'an instantaneous flag', expr: 'max by (job, instance) (cuzk_status_mismatch_reason{reason=~"owner_idle|surfaces_disagree"}) == 1 or (sum by (job, instance) (cuzk_partitions{state=~"gpu|finalizing"}) > 0 and on (job, instance) sum by (job, instance) (cuzk_gpu_worker_busy) == 0)' },
    // Pages on a momentary count-only reading (upstream's finalizers ending out of order).
    { name: 'a windowed count-only branch', expr: 'max by (job, instance) (max_over_time(cuzk_status_mismatch_reason{reason=~"owner_idle|surfaces_disagree"}[2m])) == 1 or max_over_time((sum by (job, instance) (cuzk_partitions{state=~"gpu|finalizing"}) > 0 and on (job, instance) sum by (job, instance) (cuzk_gpu_worker_busy) == 0)[2m:]) > 0' },
    // The same through the unlabeled flag, which includes the count-only reason.
    { name: 'the windowed unlabeled flag', expr: 'max by (job, instance) (max_over_time(cuzk_status_mismatch[2m])) == 1 or (sum by (job, instance) (cuzk_partitions{state=~"gpu|finalizing"}) > 0 and on (job, instance) sum by (job, instance) (cuzk_gpu_worker_busy) == 0)' },
  ];

  test.each(KEY_MUTATIONS)('the key alert tests fail when the rule is $name', async ({ expr }) => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-promtool-'));
    try {
      const src = fs.readFileSync(RULES, 'utf8');
      const key = ALERTING_RULES.find((a) => a.alert === 'CuzkGpuWorkersIdleWithPartitionsOnGpu');
      const block = '        expr: |-\n' + (key?.expr ?? '').split('\n').map((l) => `          ${l}`).join('\n') + '\n';
      expect(src).toContain(block);
      fs.writeFileSync(path.join(tmp, 'cuzk-alerts.yml'), src.replace(block, `        expr: |-\n          ${expr}\n`));
      fs.mkdirSync(path.join(tmp, 'tests'));
      const f = 'workers-idle-with-partitions-on-gpu.yml';
      fs.copyFileSync(path.join(TESTS_DIR, f), path.join(tmp, 'tests', f));
      const r = await run(['check', 'rules', path.join(tmp, 'cuzk-alerts.yml')], tmp);
      expect(r.code).toBe(0);
      const t = await run(['test', 'rules', f], path.join(tmp, 'tests'));
      expect(t.code).not.toBe(0);
      expect(t.out).toContain('alertname: CuzkGpuWorkersIdleWithPartitionsOnGpu');
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});
