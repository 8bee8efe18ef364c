import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { envName, parseDuration, resolveOptions, UsageError } from '../../src/cli/options';

describe('flag resolution: command line, then environment, then config file, then default', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-opt-'));
  const file = path.join(dir, 'c.yml');
  fs.writeFileSync(file, 'web.listen-address: "127.0.0.1:1111"\nengine.gpus: 3\nlog.level: debug\n');
  afterAll(() => fs.rmSync(dir, { recursive: true }));

  test('precedence', () => {
    const env = { [envName('engine.gpus')]: '5', [envName('config.file')]: file };
    const o = resolveOptions('run', { 'engine.gpus': '7' }, env);
    expect(o['engine.gpus']).toBe(7); // command line
    const o2 = resolveOptions('run', {}, env);
    expect(o2['engine.gpus']).toBe(5); // environment
    expect(o2['web.listen-address']).toBe('127.0.0.1:1111'); // file
    expect(o2['log.level']).toBe('debug');
    expect(o2['web.telemetry-path']).toBe('/metrics'); // default
    expect(o2['otlp.interval']).toBe(15);
  });

  test('a command\'s own default: a fleet polls less often than attach (100 targets under 5 % of a core, bench/fleet.ts); any source still overrides it', () => {
    const attach = resolveOptions('attach', {}, {});
    const fleet = resolveOptions('fleet', {}, {});
    expect([attach['cuzk.poll-interval'], attach['cuzk.grpc-status-interval'], attach['cuzk.timeline-poll-interval']]).toEqual([1, 5, 0.1]);
    expect([fleet['cuzk.poll-interval'], fleet['cuzk.grpc-status-interval'], fleet['cuzk.timeline-poll-interval']]).toEqual([5, 15, 0.5]);
    expect(resolveOptions('fleet', { 'cuzk.poll-interval': '1s' }, {})['cuzk.poll-interval']).toBe(1);
    expect(resolveOptions('fleet', {}, { [envName('cuzk.timeline-poll-interval')]: '100ms' })['cuzk.timeline-poll-interval']).toBe(0.1);
  });

  test('environment variable names', () => {
    expect(envName('web.listen-address')).toBe('CUZK_EXPORTER_WEB_LISTEN_ADDRESS');
    expect(envName('cuzk.poll-interval')).toBe('CUZK_EXPORTER_CUZK_POLL_INTERVAL');
  });

  test('durations', () => {
    expect(parseDuration('500ms', 'x')).toBe(0.5);
    expect(parseDuration('2m', 'x')).toBe(120);
    expect(parseDuration('1.5', 'x')).toBe(1.5);
    expect(() => parseDuration('5 minutes', 'x')).toThrow(UsageError);
  });

  test('a flag of another command in the config file is named as such', () => {
    fs.writeFileSync(file, 'cuzk.status-url: http://x/status\n');
    expect(() => resolveOptions('run', { 'config.file': file }, {})).toThrow(/"cuzk.status-url" does not apply to the run command/);
  });

  test('a flag given twice is refused', () => {
    expect(() => resolveOptions('run', { 'engine.gpus': ['1', '2'] }, {})).toThrow(/more than once/);
  });
});
