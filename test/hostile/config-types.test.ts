/**
 * Issue 12, cases 2 and 7: configuration values that used to pass --config.check and then
 * misbehave.
 *  - durations over 2^31−1 ms (Node clamps such a timer to 1 ms): every duration flag;
 *  - YAML null / empty / true for a number (Number(null) = 0, Number(true) = 1);
 *  - --otlp.endpoint that is not an http(s) URL; OTLP export failures counted, one line;
 *  - a memory budget that can never hold one partition (no proof would ever run);
 *  - JSON with duplicate keys (the last one silently won) or deep nesting (stack overflow).
 * Each refusal is one line on stderr and exit 2, before anything starts.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { checkMemoryBudget, witnessBytes } from '../../src/cli/budget-check';
import { MAX_TIMER_MS, OPTIONS, resolveOptions, UsageError } from '../../src/cli/options';
import { NativeEngine } from '../../src/engine/sources/native/native-engine';
import { parseStrictJson } from '../../src/util/strict-json';
import { find, parse } from '../helpers/prom-text';
import { CLI, killAll, startCli } from './cli-helpers';
import { request, tempDir, until } from './web-helpers';

afterAll(killAll);
const dir = tempDir('cuzk-cfg-');
let n = 0;
function file(name: string, text: string): string {
  const p = path.join(dir, `${++n}-${name}`);
  fs.writeFileSync(p, text);
  return p;
}
function check(args: string[]): { code: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, [CLI, ...args, '--config.check'], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}
function refused(args: string[], re: RegExp): void {
  const r = check(args);
  expect({ code: r.code, lines: r.stderr.trim().split('\n').length, stdout: r.stdout }).toEqual({ code: 2, lines: 1, stdout: '' });
  expect(r.stderr).toMatch(re);
}

describe('durations longer than a Node.js timer can wait', () => {
  const durations = OPTIONS.filter((o) => o.type === 'duration');
  test('there are duration flags to check', () => expect(durations.map((d) => d.name)).toEqual(expect.arrayContaining(['shutdown.grace', 'cuzk.poll-interval', 'cuzk.timeout', 'otlp.interval'])));
  test.each(durations.map((d) => [d.name, d.commands[0]] as const))('--%s 1000h is refused (%s)', (flag, cmd) => {
    expect(() => resolveOptions(cmd, { [flag]: '1000h' }, {})).toThrow(new RegExp(`--${flag.replace('.', '\\.')}: 1000h is longer than the longest timer Node.js can run \\(2147483647 ms`));
    // From a config file as a bare number of seconds, and from the environment.
    const cfg = file('d.yml', `${flag}: 3000000\n`);
    expect(() => resolveOptions(cmd, { 'config.file': cfg }, {})).toThrow(UsageError);
    expect(() => resolveOptions(cmd, {}, { [`CUZK_EXPORTER_${flag.toUpperCase().replace(/[.-]/g, '_')}`]: '597h' })).toThrow(/longest timer/);
  });
  test('the boundary: 596h is a valid timer, 597h is not', () => {
    expect(596 * 3600 * 1000).toBeLessThan(MAX_TIMER_MS);
    expect(597 * 3600 * 1000).toBeGreaterThan(MAX_TIMER_MS);
    expect(resolveOptions('run', { 'shutdown.grace': '596h' }, {})['shutdown.grace']).toBe(596 * 3600);
    expect(() => resolveOptions('run', { 'shutdown.grace': '597h' }, {})).toThrow(/longest timer/);
  });
  test('--config.check refuses it (exit 2, one line)', () => {
    refused(['run', '--shutdown.grace', '1000h'], /--shutdown\.grace: 1000h is longer than the longest timer/);
    refused(['attach', '--cuzk.status-url', 'http://127.0.0.1:1/status', '--cuzk.poll-interval', '1000h'], /--cuzk\.poll-interval/);
  });
});

describe('YAML values of the wrong type for numbers', () => {
  test.each([
    ['null', 'workload.concurrency: null\n', /workload\.concurrency \(from config file .*\): empty \(null\) is not a number/],
    ['empty', 'workload.concurrency:\n', /workload\.concurrency .*empty \(null\) is not a number/],
    ['true', 'workload.concurrency: true\n', /workload\.concurrency .*true is not a number/],
    ['a list', 'engine.gpus: [1, 2]\n', /--engine\.gpus/],
    ['hex text', 'engine.gpus: "0x2"\n', /engine\.gpus .*"0x2" is not a number/],
    ['a null duration', 'shutdown.grace: ~\n', /shutdown\.grace .*empty \(null\) is not a duration/],
    ['.inf seconds', 'shutdown.grace: .inf\n', /shutdown\.grace/],
  ])('%s is refused with one line', (_what, yaml, re) => {
    refused(['run', '--config.file', file('c.yml', yaml)], re);
  });
});

describe('--otlp.endpoint', () => {
  test.each(['not a url', 'ftp://collector:4318/v1/metrics', 'http://', 'collector:4318'])('%j is refused by --config.check', (u) => {
    refused(['run', '--otlp.endpoint', u], /--otlp\.endpoint .* is not an http:\/\/ or https:\/\/ URL/);
  });

  test('failed exports are counted in cuzk_exporter_errors_total{reason="otlp_export"}, logged once, without a stack', async () => {
    // A 1 s interval gives each export a 900 ms deadline: a loaded machine that stalls the
    // exporter past a shorter one turns a 500 into a timeout, a different failure logged anew.
    let pushes = 0;
    const collector = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        pushes++;
        res.writeHead(500).end('collector is broken');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
    const port = (collector.address() as { port: number }).port;
    const cli = startCli(['run', '--engine.backend', 'sim', '--engine.time-scale', '0.01', '--web.listen-address', '127.0.0.1:0', '--otlp.endpoint', `http://127.0.0.1:${port}/v1/metrics`, '--otlp.interval', '1s']);
    try {
      const url = await cli.url;
      await until('five failed pushes', () => pushes >= 5, 30_000);
      await until('the failures are counted', async () => (find(parse((await request(`${url}/metrics`)).body), 'cuzk_exporter_errors_total', { reason: 'otlp_export' }) ?? 0) >= 4, 30_000);
      const lines = cli.stderr.filter((l) => /OTLP export failed/.test(l));
      expect(lines).toHaveLength(1);
      expect(cli.stderr.filter((l) => /^\s+at /.test(l) || /"stack"|\\n\s+at /.test(l))).toEqual([]);
      expect(cli.stderr.filter((l) => /"level":"error"/.test(l))).toEqual([]);
    } finally {
      cli.child.kill('SIGTERM');
      await cli.exited;
      collector.close();
    }
  });
});

describe('a memory budget that can never hold one partition', () => {
  test('memory_budget_bytes: 1 is refused by --config.check (exit 2, one line)', () => {
    refused(['run', '--engine.config', file('e.json', '{"memory_budget_bytes": 1}')], /memory_budget_bytes 1 cannot hold one .* partition/);
    refused(['prove', '--kind', 'winning-post', '--engine.config', file('e.json', '{"memory_budget_bytes": 786431}')], /cannot hold one winning-post partition \(2\^15 constraints need 786432 bytes/);
  });
  test('only the kinds that will run count: a WindowPoSt-only workload with a budget for 2^16', () => {
    const cfg = file('e.json', `{"memory_budget_bytes": ${witnessBytes(16)}, "sizes": {"porep-c2": 20}}`);
    expect(check(['run', '--engine.backend', 'sim', '--workload.mix', 'window-post=1', '--engine.config', cfg])).toMatchObject({ code: 0, stderr: '' });
    refused(['run', '--engine.backend', 'sim', '--workload.mix', 'window-post=1,porep-c2=1', '--engine.config', cfg], /cannot hold one porep-c2 partition/);
  });
  test('the arithmetic is the engine\'s: at the boundary the engine accepts, one byte less it refuses', async () => {
    for (const [budget, ok] of [[witnessBytes(15), true], [witnessBytes(15) - 1, false]] as const) {
      const cfg = { backend: 'sim', time_scale: 0.01, memory_budget_bytes: budget, sizes: { 'snap-update': 15 } };
      if (ok) expect(() => checkMemoryBudget(cfg, ['snap-update'])).not.toThrow();
      else expect(() => checkMemoryBudget(cfg, ['snap-update'])).toThrow(UsageError);
      const engine = NativeEngine.open(cfg);
      try {
        if (ok) {
          const job = engine.submit('snap-update');
          engine.cancel(job);
        } else expect(() => engine.submit('snap-update')).toThrow(/needs 786432 bytes, more than memory_budget_bytes \(786431\)/);
      } finally {
        await engine.close();
      }
    }
  });
});

describe('JSON: duplicate keys and deep nesting', () => {
  test('--engine.config with a duplicate key is refused, naming the key and where', () => {
    refused(['run', '--engine.config', file('e.json', '{\n  "gpus": 1,\n  "gpus": 8\n}\n')], /--engine\.config .*: not valid JSON: line 3 column 3: duplicate key "gpus"/);
  });
  test('--config.file (JSON) with a duplicate key, and (YAML) with one', () => {
    refused(['run', '--config.file', file('c.json', '{"engine.gpus": 1, "engine.gpus": 2}')], /duplicate key "engine\.gpus"/);
    refused(['run', '--config.file', file('c.yml', 'engine.gpus: 1\nengine.gpus: 2\n')], /Map keys must be unique/);
  });
  test('deep nesting is a readable error, not "Maximum call stack size exceeded"', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    refused(['run', '--engine.config', file('e.json', `{"sizes": ${deep}}`)], /nested deeper than 64 levels/);
    refused(['run', '--config.file', file('c.json', `{"engine.gpus": ${deep}}`)], /nested deeper than 64 levels/);
    const r = check(['run', '--config.file', file('c.yml', `engine.gpus: ${deep}\n`)]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/not valid YAML: nested too deeply \(more than 64 levels\)\n$/);
  });
  test('the strict parser agrees with JSON.parse on valid input', () => {
    for (const t of ['{}', '[]', '0', '-1.5e3', '"a\\u00e9\\n"', '{"a":[1,{"b":null}],"c":true,"__proto__":1}', ' [ 1 , 2 ] ']) {
      expect(parseStrictJson(t)).toEqual(JSON.parse(t));
    }
    expect(Object.keys(parseStrictJson('{"__proto__": {"x": 1}}') as object)).toEqual(['__proto__']);
    expect(() => parseStrictJson('{"a":1,}')).toThrow(/line 1 column 8: expected a string key/);
    expect(() => parseStrictJson('[1 2]')).toThrow(/expected "," or "]"/);
  });
});
