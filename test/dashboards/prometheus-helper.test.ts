import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { findBinary, prometheusConfig, startPrometheus, writeRulesWithShortFor } from '../helpers/prometheus';

const RULES = path.join(__dirname, '..', '..', 'dashboards', 'rules', 'cuzk-alerts.yml');
const prometheusBin = findBinary('prometheus');
const describeWithPrometheus = prometheusBin ? describe : describe.skip;
if (!prometheusBin) {
  // eslint-disable-next-line no-console
  console.warn('SKIPPED test/helpers/prometheus tests: no prometheus binary (apt-get install prometheus, or set PROMETHEUS_BIN)');
}

describe('prometheus helper (no binary needed)', () => {
  test('config lists targets, rule files and sub-second intervals as valid durations', () => {
    const cfg = prometheusConfig({
      scrapeTargets: ['127.0.0.1:9464', '127.0.0.1:9465'],
      scrapeIntervalSec: 0.5,
      evaluationIntervalSec: 1,
      ruleFiles: ['/tmp/a.yml'],
    });
    expect(cfg).toContain('scrape_interval: 500ms');
    expect(cfg).toContain('scrape_timeout: 500ms');
    expect(cfg).toContain('evaluation_interval: 1000ms');
    expect(cfg).toContain('- "127.0.0.1:9464"');
    expect(cfg).toContain('- "127.0.0.1:9465"');
    expect(cfg).toContain('- "/tmp/a.yml"');
  });

  test('writeRulesWithShortFor rewrites every for: and leaves the shipped file alone', () => {
    const before = fs.readFileSync(RULES, 'utf8');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-rules-'));
    try {
      const out = writeRulesWithShortFor(RULES, path.join(dir, 'short.yml'), '5s');
      const text = fs.readFileSync(out, 'utf8');
      const fors = [...text.matchAll(/^\s*for:\s*(\S+)\s*$/gm)].map((m) => m[1]);
      const originalFors = [...before.matchAll(/^\s*for:\s*(\S+)\s*$/gm)].map((m) => m[1]);
      expect(originalFors.length).toBeGreaterThan(5);
      expect(originalFors.some((f) => f !== '5s')).toBe(true);
      expect(fors).toEqual(originalFors.map(() => '5s'));
      // Only the for: lines changed.
      expect(text.split('\n').length).toBe(before.split('\n').length);
      expect(fs.readFileSync(RULES, 'utf8')).toBe(before);
      expect(() => writeRulesWithShortFor(RULES, path.join(dir, 'x.yml'), '5 seconds')).toThrow(/duration/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeWithPrometheus('startPrometheus (real prometheus binary)', () => {
  test('starts with no targets, answers /-/ready and queries, and stop() cleans up', async () => {
    const prom = await startPrometheus({ scrapeTargets: [], scrapeIntervalSec: 1, evaluationIntervalSec: 1, ruleFiles: [] });
    let stopped = false;
    try {
      expect(prom.url).toBe(`http://127.0.0.1:${prom.port}`);
      expect((await fetch(`${prom.url}/-/ready`)).status).toBe(200);
      const v = await prom.queryVector('vector(1)');
      expect(v).toHaveLength(1);
      expect(v[0]?.value[1]).toBe('1');
      const s = await prom.query('1 + 2');
      expect(s).toEqual({ resultType: 'scalar', result: [expect.any(Number), '3'] });
      await expect(prom.query('sum(')).rejects.toThrow(/bad_data/);
      expect(await prom.alerts()).toEqual([]);
      expect(await prom.targets()).toEqual([]);
      expect(fs.existsSync(path.join(prom.dir, 'prometheus.yml'))).toBe(true);
      await prom.stop();
      stopped = true;
      expect(fs.existsSync(prom.dir)).toBe(false);
      await expect(fetch(`${prom.url}/-/ready`)).rejects.toThrow();
      await prom.stop(); // idempotent
    } finally {
      if (!stopped) await prom.stop();
    }
  });

  test('a rule file Prometheus rejects fails start with its error, and leaves no temp dir', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-badrules-'));
    const bad = path.join(dir, 'bad.yml');
    fs.writeFileSync(bad, 'groups:\n  - name: x\n    rules:\n      - alert: Broken\n        expr: sum(\n');
    const parent = path.join(dir, 'tmp');
    fs.mkdirSync(parent);
    try {
      await expect(
        startPrometheus({ scrapeTargets: [], scrapeIntervalSec: 1, evaluationIntervalSec: 1, ruleFiles: [bad], readyTimeoutMs: 15000, tmpParent: parent }),
      ).rejects.toThrow(/prometheus exited[\s\S]*bad\.yml/);
      expect(fs.readdirSync(parent)).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
