/**
 * The targets file of `cuzk-exporter fleet`: what it accepts, and that every bad entry is
 * refused with one line that names the target and the key (src/engine/sources/fleet/targets-file.ts).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { findExecutable, loadTargetsFile, parseTargets, sameSurfaces, TargetsFileError, yamlNestingDepth } from '../../src/engine/sources/fleet/targets-file';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-targets-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const file = () => path.join(dir, 'targets.yml');
const parse = (text: string) => parseTargets(text, file());

test('a file with every surface, labels and a command parses to specs; relative log paths are relative to the file', () => {
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const specs = parse(`
targets:
  - name: gpu-17
    labels: {rack: r3, model: "4090"}
    grpc_address: 10.0.0.17:9820
    status_url: http://10.0.0.17:9821/status
    timeline_command: [sh, -c, "exec journalctl -fu cuzk -o cat --lines=0"]
  - name: gpu-18.lab:1
    grpc_address: unix:///run/curio/cuzk.sock
    timeline_file: logs/cuzk.log
`);
  expect(specs).toEqual([
    {
      name: 'gpu-17',
      labels: { rack: 'r3', model: '4090' },
      grpcAddress: '10.0.0.17:9820',
      statusUrl: 'http://10.0.0.17:9821/status',
      timelineCommand: ['sh', '-c', 'exec journalctl -fu cuzk -o cat --lines=0'],
    },
    { name: 'gpu-18.lab:1', labels: {}, grpcAddress: 'unix:///run/curio/cuzk.sock', timelineFile: path.join(dir, 'logs', 'cuzk.log') },
  ]);
});

test('an empty target list is a valid file (a fleet of none)', () => {
  expect(parse('targets: []\n')).toEqual([]);
});

// Each: the file text, and the one line expected (a regular expression on the message).
const BAD: Array<[string, string, RegExp]> = [
  ['not YAML', 'targets: [\n', /not valid YAML/],
  ['a list at the top', '- name: a\n', /top level must be a mapping with a "targets" list/],
  ['an unknown top key', 'targets: []\nscrape_interval: 5s\n', /unknown key "scrape_interval" at the top level/],
  ['targets not a list', 'targets: {a: 1}\n', /"targets" must be a list/],
  ['a target not a mapping', 'targets: [gpu-17]\n', /targets\[0\] must be a mapping/],
  ['no name', 'targets:\n  - grpc_address: 1.2.3.4:9820\n', /targets\[0\] needs a name/],
  ['a name with a slash', 'targets:\n  - name: a/b\n    grpc_address: 1.2.3.4:9820\n', /name "a\/b" must be 1-128 letters/],
  ['a name with a space', 'targets:\n  - name: "a b"\n    grpc_address: 1.2.3.4:9820\n', /name "a b" must be/],
  ['a duplicate name', 'targets:\n  - {name: a, grpc_address: "1.2.3.4:9820"}\n  - {name: a, grpc_address: "1.2.3.5:9820"}\n', /target "a" is listed twice/],
  ['a typo in a key', 'targets:\n  - name: a\n    grpc_adress: 1.2.3.4:9820\n', /target "a": unknown key "grpc_adress"/],
  ['no surface', 'targets:\n  - name: a\n    labels: {rack: r1}\n', /target "a": give at least one surface/],
  ['a bad grpc address', 'targets:\n  - name: a\n    grpc_address: http://x:1\n', /target "a": grpc_address "http:\/\/x:1": use unix:/],
  ['a relative unix socket', 'targets:\n  - name: a\n    grpc_address: unix:run/cuzk.sock\n', /target "a": grpc_address .*absolute path/],
  ['a status URL that is not http', 'targets:\n  - name: a\n    status_url: ftp://x/status\n', /target "a": status_url "ftp:\/\/x\/status" is not an http/],
  ['an empty string', 'targets:\n  - name: a\n    status_url: ""\n', /target "a": status_url must be a non-empty string/],
  ['stdin as the log', 'targets:\n  - name: a\n    timeline_file: "-"\n', /timeline_file "-" \(standard input\) cannot feed a fleet: use timeline_command/],
  ['a log in a folder that does not exist', 'targets:\n  - name: a\n    timeline_file: /nonexistent-dir-cuzk/cuzk.log\n', /folder \/nonexistent-dir-cuzk does not exist/],
  ['a log that is a directory', 'targets:\n  - name: a\n    timeline_file: /tmp\n', /timeline_file "\/tmp" is a directory/],
  ['a command as a string (a shell line)', 'targets:\n  - name: a\n    timeline_command: "ssh gpu-17 journalctl -fu cuzk"\n', /timeline_command must be a list \(argv, run without a shell\)/],
  ['an empty command', 'targets:\n  - name: a\n    timeline_command: []\n', /timeline_command must be a non-empty list/],
  ['a command not found', 'targets:\n  - name: a\n    timeline_command: [no-such-program-cuzk, x]\n', /program "no-such-program-cuzk" is not an executable found in PATH/],
  ['a command with a mapping argument', 'targets:\n  - name: a\n    timeline_command: [sh, {x: 1}]\n', /timeline_command\[1\] must be a string/],
  ['a file and a command', 'targets:\n  - name: a\n    timeline_file: /tmp/x.log\n    timeline_command: [sh]\n', /give timeline_file or timeline_command, not both/],
  ['labels as a list', 'targets:\n  - name: a\n    grpc_address: 1.2.3.4:9820\n    labels: [rack]\n', /labels must be a mapping/],
  ['a reserved label', 'targets:\n  - name: a\n    grpc_address: 1.2.3.4:9820\n    labels: {instance: x}\n', /label "instance" is reserved/],
  ['a label the series carry', 'targets:\n  - name: a\n    grpc_address: 1.2.3.4:9820\n    labels: {gpu: x}\n', /label "gpu" is reserved/],
  ['a bad label name', 'targets:\n  - name: a\n    grpc_address: 1.2.3.4:9820\n    labels: {"rack-1": x}\n', /label name "rack-1" is not a Prometheus label name/],
  ['a __ label', 'targets:\n  - name: a\n    grpc_address: 1.2.3.4:9820\n    labels: {__address__: x}\n', /label name "__address__" is not/],
  ['a number as a label value', 'targets:\n  - name: a\n    grpc_address: 1.2.3.4:9820\n    labels: {rack: 3}\n', /label "rack" must be a string \(quote it: "3"\)/],
  ['a duplicate key', 'targets:\n  - name: a\n    name: b\n    grpc_address: 1.2.3.4:9820\n', /not valid YAML: Map keys must be unique/],
  ['an alias bomb', `a: &a ["x","x","x","x","x","x","x","x","x","x"]\n${Array.from({ length: 8 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10).fill(`*${String.fromCharCode(97 + i)}`).join(',')}]`).join('\n')}\ntargets: []\n`, /not valid YAML/],
];

test.each(BAD)('refused with one line: %s', (_what, text, expected) => {
  let err: unknown = null;
  try {
    parse(text);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(TargetsFileError);
  const msg = (err as Error).message;
  expect(msg).toMatch(expected);
  expect(msg).not.toContain('\n');
  expect(msg.startsWith(`targets file ${file()}: `)).toBe(true);
});

test('limits: more than 1000 targets, 32 labels, a 1 MiB file', () => {
  const many = 'targets:\n' + Array.from({ length: 1001 }, (_, i) => `  - {name: t${i}, grpc_address: "127.0.0.1:9820"}`).join('\n') + '\n';
  expect(() => parse(many)).toThrow(/1001 targets: at most 1000/);
  const labels = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`l${i}`, 'x']));
  expect(() => parse(`targets:\n  - name: a\n    grpc_address: 1.2.3.4:9820\n    labels: ${JSON.stringify(labels)}\n`)).toThrow(/33 labels: at most 32/);
  fs.writeFileSync(file(), 'targets: []\n#' + 'x'.repeat(1024 * 1024));
  expect(() => loadTargetsFile(file())).toThrow(/larger than 1 MiB/);
});

test('a file that cannot be read is one line', () => {
  expect(() => loadTargetsFile(path.join(dir, 'missing.yml'))).toThrow(/^targets file .*missing\.yml: cannot read \(ENOENT\)$/);
  expect(() => loadTargetsFile(dir)).toThrow(/is a directory/);
});

test('findExecutable looks in PATH without a slash and at the path with one', () => {
  expect(findExecutable('sh')).toMatch(/\/sh$/);
  expect(findExecutable('/bin/sh')).toBe('/bin/sh');
  expect(findExecutable('sh', { PATH: '/nonexistent' })).toBeNull();
  const plain = path.join(dir, 'not-executable');
  fs.writeFileSync(plain, '#!/bin/sh\n', { mode: 0o644 });
  expect(findExecutable(plain)).toBeNull();
});

test('sameSurfaces: labels may differ, surfaces may not', () => {
  const [a] = parse('targets:\n  - {name: a, grpc_address: "1.2.3.4:9820", labels: {rack: r1}}\n');
  const [b] = parse('targets:\n  - {name: a, grpc_address: "1.2.3.4:9820", labels: {rack: r2}}\n');
  const [c] = parse('targets:\n  - {name: a, grpc_address: "1.2.3.4:9821"}\n');
  expect(sameSurfaces(a, b)).toBe(true);
  expect(sameSurfaces(a, c)).toBe(false);
});

describe('edges of each rule (issue 23)', () => {
  const refused = (text: string): string => {
    try {
      parse(text);
    } catch (e) {
      expect(e).toBeInstanceOf(TargetsFileError);
      return (e as Error).message.slice(`targets file ${file()}: `.length);
    }
    throw new Error('accepted');
  };
  const one = (body: string) => `targets:\n  - name: a\n${body}`;

  test('names: 128 characters taken, 129 refused (the message cuts the name at 140); a name that is not a string', () => {
    const n128 = 'n'.repeat(128);
    expect(parse(`targets:\n  - {name: ${n128}, grpc_address: "1.2.3.4:9820"}\n`)[0].name).toBe(n128);
    expect(refused(`targets:\n  - {name: ${'n'.repeat(129)}, grpc_address: "1.2.3.4:9820"}\n`)).toBe(`targets[0]: name "${'n'.repeat(129)}" must be 1-128 letters, digits and ._:- starting with a letter or digit`);
    expect(refused(`targets:\n  - {name: ${'n'.repeat(200)}, grpc_address: "1.2.3.4:9820"}\n`)).toContain(`"${'n'.repeat(140)}"`);
    expect(refused('targets:\n  - {name: 17, grpc_address: "1.2.3.4:9820"}\n')).toBe('targets[0] needs a name (a string)');
    expect(refused('targets:\n  - {name: -a, grpc_address: "1.2.3.4:9820"}\n')).toMatch(/^targets\[0\]: name "-a" must be/);
    expect(refused('targets:\n  - {name: a, grpc_address: "1.2.3.4:9820"}\n  - {name: b}\n')).toMatch(/^target "b": give at least one surface/);
  });
  test('the whole messages of the top-level rules', () => {
    expect(refused('- a\n')).toBe('the top level must be a mapping with a "targets" list');
    expect(refused('targets: []\nx: 1\n')).toBe('unknown key "x" at the top level (allowed: targets)');
    expect(refused('targets:\n')).toBe('"targets" must be a list of targets (each with a name and at least one surface)');
    expect(refused('targets: [5]\n')).toBe('targets[0] must be a mapping (name, labels, grpc_address, status_url, timeline_file or timeline_command)');
    expect(refused('targets:\n  - {name: a, grpc_address: "1.2.3.4:9820"}\n  - {name: a, status_url: "http://x/status"}\n')).toBe('target "a" is listed twice (names are the instance label: they must be unique)');
    expect(refused(one('    grpc_adress: x\n'))).toBe('target "a": unknown key "grpc_adress" (allowed: name, labels, grpc_address, status_url, timeline_file, timeline_command)');
    expect(refused(one('    labels: {r: x}\n'))).toBe('target "a": give at least one surface: grpc_address (cuzk\'s [daemon] listen), timeline_file or timeline_command (its log), status_url (its status_listen)');
    expect(refused('[[[[' + '['.repeat(5000) + ']'.repeat(5004))).toMatch(/^not valid YAML: /);
  });
  test('surface strings: null is absent, blank is refused; any http(s) URL with a host', () => {
    expect(parse(one('    grpc_address: null\n    status_url: https://h:1/status\n'))[0]).toEqual({ name: 'a', labels: {}, statusUrl: 'https://h:1/status' });
    expect(refused(one('    grpc_address: "  "\n'))).toBe('target "a": grpc_address must be a non-empty string');
    expect(refused(one('    grpc_address: 5\n'))).toBe('target "a": grpc_address must be a non-empty string');
    expect(refused(one('    status_url: "not a url"\n'))).toBe('target "a": status_url "not a url" is not an http:// or https:// URL (for example http://10.0.0.17:9821/status)');
    expect(refused(one('    status_url: "file:///x"\n'))).toMatch(/status_url "file:\/\/\/x" is not an http/);
    expect(refused(one('    grpc_address: http://x:1\n'))).toMatch(/^target "a": grpc_address "http:\/\/x:1"/);
  });
  test('timeline_file: an existing file or one not there yet in an existing folder; null is absent', () => {
    const log = path.join(dir, 'exists.log');
    fs.writeFileSync(log, '');
    expect(parse(one(`    timeline_file: ${log}\n`))[0].timelineFile).toBe(log);
    expect(parse(one('    timeline_file: later.log\n'))[0].timelineFile).toBe(path.join(dir, 'later.log'));
    expect(parse(one('    timeline_file: null\n    timeline_command: null\n    grpc_address: "1.2.3.4:1"\n'))[0]).toEqual({ name: 'a', labels: {}, grpcAddress: '1.2.3.4:1' });
    expect(refused(one('    timeline_file: "-"\n'))).toBe('target "a": timeline_file "-" (standard input) cannot feed a fleet: use timeline_command, e.g. [journalctl, -fu, cuzk, -o, cat, --lines=0]');
    expect(refused(one(`    timeline_file: ${dir}\n`))).toBe(`target "a": timeline_file "${dir}" is a directory, not cuzk's log file`);
    expect(refused(one('    timeline_file: /nonexistent-dir-cuzk/x.log\n'))).toBe('target "a": timeline_file "/nonexistent-dir-cuzk/x.log": folder /nonexistent-dir-cuzk does not exist');
    expect(refused(one(`    timeline_file: ${log}\n    timeline_command: [sh]\n`))).toBe('target "a": give timeline_file or timeline_command, not both');
  });
  test('timeline_command: numbers are arguments; 64 arguments of 4096 characters at most; no NUL; the program not empty and executable', () => {
    expect(parse(one('    timeline_command: [sh, -c, 5]\n'))[0].timelineCommand).toEqual(['sh', '-c', '5']);
    const args = (n: number) => `[sh${', x'.repeat(n - 1)}]`;
    expect(parse(one(`    timeline_command: ${args(64)}\n`))[0].timelineCommand).toHaveLength(64);
    expect(refused(one(`    timeline_command: ${args(65)}\n`))).toBe('target "a": timeline_command has 65 arguments: at most 64');
    expect(parse(one(`    timeline_command: [sh, ${'y'.repeat(4096)}]\n`))[0].timelineCommand![1]).toHaveLength(4096);
    expect(refused(one(`    timeline_command: [sh, ${'y'.repeat(4097)}]\n`))).toBe('target "a": timeline_command[1] is longer than 4096 characters');
    expect(refused(one('    timeline_command: [sh, "a\\0b"]\n'))).toBe('target "a": timeline_command[1] contains a NUL character');
    expect(refused(one('    timeline_command: ["", x]\n'))).toBe('target "a": timeline_command[0] (the program) is empty');
    expect(refused(one('    timeline_command: [/nonexistent-cuzk/prog]\n'))).toBe('target "a": timeline_command program "/nonexistent-cuzk/prog" is not an executable file');
    expect(refused(one('    timeline_command: [no-such-program-cuzk]\n'))).toBe('target "a": timeline_command program "no-such-program-cuzk" is not an executable found in PATH');
    expect(refused(one('    timeline_command: "ssh x"\n'))).toBe('target "a": timeline_command must be a list (argv, run without a shell), e.g. [ssh, gpu-17, journalctl, -fu, cuzk, -o, cat, --lines=0]');
    expect(refused(one('    timeline_command: {a: 1}\n'))).toBe('target "a": timeline_command must be a non-empty list (argv, run without a shell)');
    expect(refused(one('    timeline_command: [sh, [x]]\n'))).toBe('target "a": timeline_command[1] must be a string');
  });
  test('labels: 32 taken, values up to 1024 characters; the messages', () => {
    const labels = (n: number) => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`l${i}`, 'x'])));
    expect(Object.keys(parse(one(`    grpc_address: "1.2.3.4:1"\n    labels: ${labels(32)}\n`))[0].labels)).toHaveLength(32);
    expect(refused(one(`    grpc_address: "1.2.3.4:1"\n    labels: ${labels(33)}\n`))).toBe('target "a": 33 labels: at most 32');
    expect(parse(one(`    grpc_address: "1.2.3.4:1"\n    labels: {r: ${'v'.repeat(1024)}}\n`))[0].labels.r).toHaveLength(1024);
    expect(refused(one(`    grpc_address: "1.2.3.4:1"\n    labels: {r: ${'v'.repeat(1025)}}\n`))).toBe('target "a": label "r" is longer than 1024 characters');
    expect(refused(one('    grpc_address: "1.2.3.4:1"\n    labels: {job: x}\n'))).toBe('target "a": label "job" is reserved (Prometheus\' own, or a label the exporter\'s series carry)');
    expect(refused(one('    grpc_address: "1.2.3.4:1"\n    labels: {"1a": x}\n'))).toBe('target "a": label name "1a" is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)');
    expect(refused(one(`    grpc_address: "1.2.3.4:1"\n    labels: {"${'-'.repeat(70)}": x}\n`))).toBe(`target "a": label name "${'-'.repeat(64)}" is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)`);
    expect(refused(one('    grpc_address: "1.2.3.4:1"\n    labels: "r"\n'))).toBe('target "a": labels must be a mapping of label names to strings');
    expect(refused(one(`    grpc_address: "1.2.3.4:1"\n    labels: {r: [${'1,'.repeat(40)}1]}\n`))).toBe(`target "a": label "r" must be a string (quote it: "${Array(41).fill('1').join(',').slice(0, 64)}")`);
    expect(parse(one('    grpc_address: "1.2.3.4:1"\n    labels: {_a: x, B_1: y}\n'))[0].labels).toEqual({ _a: 'x', B_1: 'y' });
    expect(parse(one('    grpc_address: "1.2.3.4:1"\n    labels: null\n'))[0].labels).toEqual({});
    // Only a leading __ is Prometheus' (relabelling internals): a trailing one is an ordinary name.
    expect(refused(one('    grpc_address: "1.2.3.4:1"\n    labels: {__a: x}\n'))).toBe('target "a": label name "__a" is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)');
    expect(parse(one('    grpc_address: "1.2.3.4:1"\n    labels: {a__: x}\n'))[0].labels).toEqual({ a__: 'x' });
  });
  test('exactly 1000 targets are taken (the limit is on more than 1000) (issue 23)', () => {
    const text = (n: number) => 'targets:\n' + Array.from({ length: n }, (_, i) => `  - {name: t${i}, grpc_address: "127.0.0.1:9820"}`).join('\n') + '\n';
    expect(parse(text(1000))).toHaveLength(1000);
  });
  test('loadTargetsFile: a file of exactly 1 MiB is read; the messages', () => {
    const text = 'targets: []\n#';
    fs.writeFileSync(file(), text + 'x'.repeat(1024 * 1024 - text.length));
    expect(loadTargetsFile(file())).toEqual([]);
    expect(() => loadTargetsFile(dir)).toThrow(new TargetsFileError(`targets file ${dir} is a directory`));
    fs.writeFileSync(file(), text + 'x'.repeat(1024 * 1024));
    expect(() => loadTargetsFile(file())).toThrow(new TargetsFileError(`targets file ${file()}: larger than 1 MiB`));
  });
  test('findExecutable: empty PATH entries skipped, a folder is not a program, no PATH at all', () => {
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin, { recursive: true });
    fs.mkdirSync(path.join(bin, 'adir'), { recursive: true });
    fs.writeFileSync(path.join(bin, 'prog'), '#!/bin/sh\n', { mode: 0o755 });
    expect(findExecutable('prog', { PATH: `${path.delimiter}/nonexistent${path.delimiter}${bin}` })).toBe(path.join(bin, 'prog'));
    expect(findExecutable('adir', { PATH: bin })).toBeNull();
    expect(findExecutable(path.join(bin, 'adir'))).toBeNull();
    expect(findExecutable('prog', {})).toBeNull();
    expect(findExecutable('prog', { PATH: '' })).toBeNull();
  });
  test('findExecutable never looks in the working directory: not through an empty PATH entry, not without a PATH (issue 23)', () => {
    // The exporter's working directory is wherever it was started: a program found there would
    // be a different one on the next start. (The folder named like Stryker's replacement for
    // the missing PATH's '': any non-empty default would be a folder under the cwd.)
    const cwd = fs.mkdtempSync(path.join(dir, 'cwd-'));
    fs.writeFileSync(path.join(cwd, 'prog'), '#!/bin/sh\n', { mode: 0o755 });
    fs.mkdirSync(path.join(cwd, 'Stryker was here!'));
    fs.writeFileSync(path.join(cwd, 'Stryker was here!', 'prog'), '#!/bin/sh\n', { mode: 0o755 });
    const before = process.cwd();
    process.chdir(cwd);
    try {
      expect(findExecutable('prog', { PATH: `${path.delimiter}/nonexistent${path.delimiter}` })).toBeNull();
      expect(findExecutable('prog', {})).toBeNull();
      expect(findExecutable('./prog', {})).toBe('./prog'); // (it is there: a path with a slash is taken as given)
    } finally {
      process.chdir(before);
    }
  });
  test('findExecutable asks the OS (access X_OK), not only the mode bits: a file this user may not execute is refused (issue 23)', () => {
    // As root (CI), access(X_OK) passes whenever any x bit is set, so the OS's refusal is
    // simulated: a non-root exporter and a file only others may execute, or a noexec mount.
    const prog = path.join(dir, 'others-only');
    fs.writeFileSync(prog, '#!/bin/sh\n', { mode: 0o755 });
    expect(findExecutable(prog)).toBe(prog);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const realFs = require('node:fs') as typeof fs;
    const access = realFs.accessSync;
    const spy = jest.spyOn(realFs, 'accessSync').mockImplementation((p: fs.PathLike, mode?: number) => {
      if (p === prog && mode === realFs.constants.X_OK) throw Object.assign(new Error(`EACCES: permission denied, access '${prog}'`), { code: 'EACCES' });
      return access(p, mode);
    });
    try {
      expect(findExecutable(prog)).toBeNull();
      expect(findExecutable('others-only', { PATH: dir })).toBeNull();
      expect(refused(one(`    timeline_command: [${prog}]\n`))).toBe(`target "a": timeline_command program "${prog}" is not an executable file`);
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
  test('sameSurfaces compares the name and every surface', () => {
    const base = { name: 'a', labels: {}, grpcAddress: 'g', statusUrl: 'u', timelineFile: 'f', timelineCommand: ['x', 'y'] };
    expect(sameSurfaces(base, { ...base, labels: { r: '1' } })).toBe(true);
    expect(sameSurfaces(base, { ...base, timelineCommand: ['x', 'y'] })).toBe(true);
    for (const d of [{ name: 'b' }, { grpcAddress: 'h' }, { statusUrl: 'v' }, { timelineFile: 'e' }, { timelineCommand: ['x'] }, { timelineCommand: undefined }]) {
      expect([d, sameSurfaces(base, { ...base, ...d })]).toEqual([d, false]);
    }
    const bare = { name: 'a', labels: {} };
    expect(sameSurfaces(bare, { ...bare })).toBe(true);
  });
  test('null where a mapping is needed (an empty file, a ~ target) is refused with the mapping message, not a crash (issue 23)', () => {
    expect(refused('')).toBe('the top level must be a mapping with a "targets" list');
    expect(refused('~\n')).toBe('the top level must be a mapping with a "targets" list');
    expect(refused('targets: [~]\n')).toBe('targets[0] must be a mapping (name, labels, grpc_address, status_url, timeline_file or timeline_command)');
    expect(refused('targets:\n  - {name: a, grpc_address: "1.2.3.4:9820"}\n  - null\n')).toBe('targets[1] must be a mapping (name, labels, grpc_address, status_url, timeline_file or timeline_command)');
  });
  test('the 1 MiB limit is on bytes: fewer than 1 Mi characters that take more than 1 MiB are refused (issue 23)', () => {
    // 600,000 two-byte characters: 1,200,000 bytes + the head, 600,000 characters.
    fs.writeFileSync(file(), 'targets: []\n#' + '\u00e9'.repeat(600_000));
    expect(fs.statSync(file()).size).toBeGreaterThan(1024 * 1024);
    expect(() => loadTargetsFile(file())).toThrow(new TargetsFileError(`targets file ${file()}: larger than 1 MiB`));
  });
  test('a file that grows past 1 MiB between its stat and its read is refused (issue 23)', () => {
    const text = 'targets: []\n#';
    fs.writeFileSync(file(), text);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const realFs = require('node:fs') as typeof fs;
    const stat = realFs.statSync;
    const spy = jest.spyOn(realFs, 'statSync').mockImplementation(((p: fs.PathLike, o?: fs.StatSyncOptions) => {
      const st = stat(p, o);
      if (p === file()) realFs.appendFileSync(file(), 'x'.repeat(1024 * 1024)); // written meanwhile
      return st;
    }) as typeof fs.statSync);
    try {
      expect(() => loadTargetsFile(file())).toThrow(new TargetsFileError(`targets file ${file()}: larger than 1 MiB`));
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});

test('deep nesting is refused before the YAML parser recurses: parsing a file of 200,000 brackets again (a reload) never aborts the process (issue 23)', () => {
  // The yaml package recurses once per level: at ~1000 levels the stack overflows, and in the
  // same process the next such parse aborted node ("RegExpCompiler Allocation failed - process
  // out of memory", not catchable): the fleet's second reload of such a file would end it.
  // Run in a child process (the compiled build, as the CLI runs it) so that an abort fails this test, not jest.
  const script = path.join(dir, 'deep.js');
  fs.writeFileSync(
    script,
    [
      `const { parseTargets } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist', 'src', 'engine', 'sources', 'fleet', 'targets-file.js'))});`,
      "const texts = ['['.repeat(200000) + ']'.repeat(200000), '['.repeat(1000) + ']'.repeat(1000), 'targets: ' + '{x: '.repeat(1000) + '1' + '}'.repeat(1000), Array.from({ length: 700 }, (_, i) => ' '.repeat(i * 2) + '-').join('\\n') + ' 1\\n', '- '.repeat(5000) + '1\\n'];",
      'for (let i = 0; i < 3; i++) {',
      '  for (const t of texts) {',
      '    try {',
      "      parseTargets(t, 'f.yml');",
      "      require('fs').writeSync(1, 'accepted\\n');",
      '    } catch (e) {',
      "      require('fs').writeSync(1, e.message + '\\n');",
      '    }',
      '  }',
      '}',
    ].join('\n'),
  );
  const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 });
  expect([r.status, r.signal, r.stderr.split('\n')[0]]).toEqual([0, null, '']);
  const lines = r.stdout.trim().split('\n');
  expect(lines).toHaveLength(15);
  for (const l of lines) expect(l).toBe('targets file f.yml: not valid YAML: nested too deeply (more than 64 levels)');
});

test('64 levels of nesting are taken (the refusal is for deeper ones only) (issue 23)', () => {
  // targets (1) > the list (2) > a target (3) > labels (4): a real file needs 4.
  expect(parse('targets:\n  - {name: a, grpc_address: "1.2.3.4:9820", labels: {r: x}, timeline_command: [sh]}\n')[0].labels).toEqual({ r: 'x' });
  const deep = (n: number) => `targets: []\nx_: ${'['.repeat(n - 1)}${']'.repeat(n - 1)}\n`; // the top mapping and n - 1 lists
  expect(() => parse(deep(64))).toThrow(/unknown key "x_"/);
  expect(() => parse(deep(65))).toThrow(/nested too deeply \(more than 64 levels\)/);
});

test('yamlNestingDepth counts levels of block and flow lists and mappings, keys included, over every document (issue 23)', () => {
  const cases: Array<[string, number]> = [
    ['1', 0],
    ['', 0],
    ['[]', 1],
    ['[[[]]]', 3],
    ['a: 1', 1],
    ['a: {b: [1]}', 3],
    ['a:\n  b:\n    - - 1\n', 4], // map > map > seq > seq
    ['- - - x\n', 3],
    ['- a: [1]\n', 3],
    ['{[[a]]: b}', 3], // a flow map whose key is a list of a list
    ['? [a, [b]]\n: c\n', 3], // a block map whose key nests two lists
    ['a: 1\n---\n[[[1]]]\n', 3], // the deepest document
    ['[1, [2, {a: [3]}]]', 4],
    [': c\n', 1], // a pair with no key
    ['{: [b]}', 2],
  ];
  for (const [text, depth] of cases) expect([text, yamlNestingDepth(text)]).toEqual([text, depth]);
});
