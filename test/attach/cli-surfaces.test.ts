/**
 * `cuzk-exporter attach` surface flags as users give them (the compiled CLI, dist/): each
 * bad address or path is one readable line and exit 2 before anything starts; the flags
 * also come from the environment and the config file; --help documents them.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../helpers/cli-run';

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => runCli(args, env);


const nonEmptyLines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');
let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-cli-surfaces-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

test.each([
  ['no surface at all', ['attach'], {}, /give at least one of --cuzk.grpc-address/],
  ['a gRPC address that is no address', ['attach', '--cuzk.grpc-address', 'cuzk.sock'], {}, /--cuzk.grpc-address "cuzk.sock" is not unix:\/\/\/path\/to.sock or host:port/],
  ['a relative unix socket', ['attach', '--cuzk.grpc-address', 'unix://run/cuzk.sock'], {}, /needs an absolute path/],
  ['an http:// gRPC address', ['attach', '--cuzk.grpc-address', 'http://127.0.0.1:9820'], {}, /no http:\/\/; cuzk's gRPC has no TLS/],
  ['a port out of range', ['attach', '--cuzk.grpc-address', '127.0.0.1:99999'], {}, /port 99999 is out of range/],
  ['a log in a folder that does not exist', ['attach', '--cuzk.timeline-file', '/no/such/folder/cuzk.log'], {}, /folder \/no\/such\/folder does not exist/],
  ['GetStatus faster than 5 s', ['attach', '--cuzk.grpc-address', '127.0.0.1:9820', '--cuzk.grpc-status-interval', '1s'], {}, /--cuzk.grpc-status-interval.*shorter than 5s/],
  ['a bad address from the environment', ['attach'], { CUZK_EXPORTER_CUZK_GRPC_ADDRESS: 'nope' }, /--cuzk.grpc-address "nope" is not/],
] as [string, string[], NodeJS.ProcessEnv, RegExp][])('%s: one line, exit 2', async (_name, args, env, re) => {
  const r = await cli(args, env);
  expect(r.code).toBe(2);
  expect(nonEmptyLines(r.stderr)).toHaveLength(1);
  expect(r.stderr).toMatch(re);
  expect(r.stdout).toBe('');
});

test('a directory as the log is refused; a log that is not there yet is fine', async () => {
  let r = await cli(['attach', '--cuzk.timeline-file', dir]);
  expect([r.code, nonEmptyLines(r.stderr).length]).toEqual([2, 1]);
  expect(r.stderr).toContain('is a directory');
  r = await cli(['attach', '--cuzk.timeline-file', path.join(dir, 'later.log'), '--config.check']);
  expect([r.code, r.stdout]).toEqual([0, 'configuration OK\n']);
  r = await cli(['attach', '--cuzk.timeline-file', '-', '--config.check']);
  expect([r.code, r.stdout]).toEqual([0, 'configuration OK\n']);
});

test('surface flags from the environment and from the config file', async () => {
  let r = await cli(['attach', '--config.check'], { CUZK_EXPORTER_CUZK_GRPC_ADDRESS: 'unix:///run/curio/cuzk.sock', CUZK_EXPORTER_CUZK_TIMELINE_FILE: '-' });
  expect([r.code, r.stdout]).toEqual([0, 'configuration OK\n']);
  const cfg = path.join(dir, 'attach.yml');
  fs.writeFileSync(cfg, 'cuzk.grpc-address: "127.0.0.1:9820"\ncuzk.grpc-status-interval: 10s\ncuzk.timeline-file: /var/log/cuzk.log\n');
  r = await cli(['attach', '--config.file', cfg, '--config.check']);
  expect([r.code, r.stdout]).toEqual([0, 'configuration OK\n']);
  fs.writeFileSync(cfg, 'cuzk.grpc-address: "::::"\n');
  r = await cli(['attach', '--config.file', cfg]);
  expect([r.code, nonEmptyLines(r.stderr).length]).toEqual([2, 1]);
});

test('--help documents every surface flag and its environment variable', async () => {
  const r = await cli(['attach', '--help']);
  expect(r.code).toBe(0);
  for (const f of ['--cuzk.status-url', '--cuzk.grpc-address', '--cuzk.timeline-file', '--cuzk.grpc-status-interval']) expect(r.stdout).toContain(f);
  expect(r.stdout).toContain('CUZK_EXPORTER_CUZK_GRPC_ADDRESS');
  expect(r.stdout).toContain('CUZK_EXPORTER_CUZK_TIMELINE_FILE');
});
