/**
 * The targets file of `cuzk-exporter fleet`: what it accepts, and that every bad entry is
 * refused with one line that names the target and the key (src/engine/sources/fleet/targets-file.ts).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findExecutable, loadTargetsFile, parseTargets, sameSurfaces, TargetsFileError } from '../../src/engine/sources/fleet/targets-file';

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
