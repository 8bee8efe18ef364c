/**
 * Issue 20, class 4: files that are not files. Every file the exporter is told to read
 * (--config.file, CUZK_EXPORTER_CONFIG_FILE, --engine.config, --web.config.file and the
 * certificate, key and client CA it names) is read only if it is a regular file of at most
 * 1 MiB: a FIFO (which would block the open, SIGTERM included), /dev/zero or a link to it
 * (which would fill memory) is one line and exit 2 at start, or a counted refusal that keeps
 * the last good config at a reload. --config.check refuses a FIFO --cuzk.timeline-file as
 * the running follower does. Against the built CLI: the old behaviour hangs a process, and
 * only a child process can be killed for it.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import { runCli } from '../helpers/cli-run';
import { find, parse } from '../helpers/prom-text';
import { killAll, startCli } from './cli-helpers';
import { Pki } from './pki';
import { basic, request, tempDir, until } from './web-helpers';

const dir = tempDir('cuzk-notfile-');
let made = 0;
const fifo = (name: string) => {
  const p = path.join(dir, `${++made}-${name}`);
  execFileSync('mkfifo', [p]);
  return p;
};
const link = (name: string, to: string) => {
  const p = path.join(dir, `${++made}-${name}`);
  fs.symlinkSync(to, p);
  return p;
};
afterEach(killAll);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A quick command: --config.check of attach (nothing starts). */
const CHECK = ['attach', '--config.check', '--cuzk.status-url', 'http://127.0.0.1:1/status'];
/** Bounded: the old behaviour (a FIFO blocks the open forever) must fail, not hang the suite. */
const QUICK_MS = 60_000; // generous: a loaded 2-core box took over 20 s for a reload to be seen
jest.setTimeout(4 * QUICK_MS);

describe('at start: one line, exit 2, at once', () => {
  const cases: [string, () => string, RegExp][] = [
    ['a FIFO', () => fifo('cfg.fifo'), /is a named pipe \(FIFO\), not a regular file/],
    ['/dev/zero', () => '/dev/zero', /is a character device, not a regular file/],
    ['a link to /dev/zero', () => link('zero.yml', '/dev/zero'), /is a character device, not a regular file/],
    ['a directory', () => dir, /is a directory, not a regular file/],
  ];

  test.each(cases)('--config.file as %s', async (_what, make, re) => {
    const f = make();
    const r = await runCli([...CHECK, '--config.file', f], {}, QUICK_MS);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^cuzk-exporter: --config.file ${f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: ${re.source}\n$`));
  });

  test.each(cases)('CUZK_EXPORTER_CONFIG_FILE as %s', async (_what, make, re) => {
    const r = await runCli(CHECK, { CUZK_EXPORTER_CONFIG_FILE: make() }, QUICK_MS);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(re);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  test.each(cases)('--web.config.file as %s', async (_what, make, re) => {
    const r = await runCli([...CHECK, '--web.config.file', make()], {}, QUICK_MS);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(re);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  test.each(cases.slice(0, 3))('--engine.config as %s', async (_what, make, re) => {
    const r = await runCli(['run', '--config.check', '--engine.backend', 'sim', '--engine.config', make()], {}, QUICK_MS);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`--engine.config .*: ${re.source}`));
  });

  test('a regular config file over 1 MiB, and one that is exactly 1 MiB', async () => {
    const big = path.join(dir, 'big.yml');
    fs.writeFileSync(big, `# ${'x'.repeat(1024 * 1024)}\n`);
    const r = await runCli([...CHECK, '--config.file', big], {}, QUICK_MS);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/: larger than 1 MiB\n$/);
    const edge = path.join(dir, 'edge.yml');
    fs.writeFileSync(edge, `#${'x'.repeat(1024 * 1024 - 2)}\n`);
    expect(fs.statSync(edge).size).toBe(1024 * 1024);
    expect((await runCli([...CHECK, '--config.file', edge], {}, QUICK_MS)).code).toBe(0);
  });

  test('TLS: cert_file a link to /dev/zero, key_file a FIFO, client_ca_file a FIFO', async () => {
    const pki = new Pki(path.join(dir, 'pki-start'));
    const pair = pki.issue('server', ['DNS:localhost', 'IP:127.0.0.1']);
    const web = (name: string, body: string) => {
      const p = path.join(dir, name);
      fs.writeFileSync(p, body);
      return p;
    };
    const zeroCert = web('w1.yml', `tls_server_config:\n  cert_file: ${link('cert-zero.pem', '/dev/zero')}\n  key_file: ${pair.key}\n`);
    const fifoKey = web('w2.yml', `tls_server_config:\n  cert_file: ${pair.cert}\n  key_file: ${fifo('key.fifo')}\n`);
    const fifoCa = web('w3.yml', `tls_server_config:\n  cert_file: ${pair.cert}\n  key_file: ${pair.key}\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ${fifo('ca.fifo')}\n`);
    for (const [f, re] of [
      [zeroCert, /cert_file: .*cert-zero\.pem is a character device, not a regular file/],
      [fifoKey, /key_file: .*key\.fifo is a named pipe \(FIFO\), not a regular file/],
      [fifoCa, /client_ca_file: .*ca\.fifo is a named pipe \(FIFO\), not a regular file/],
    ] as const) {
      const r = await runCli([...CHECK, '--web.config.file', f], {}, QUICK_MS);
      expect({ f, code: r.code }).toEqual({ f, code: 2 });
      expect(r.stderr).toMatch(re);
    }
  });

  test('--config.check refuses a FIFO --cuzk.timeline-file, as the running follower does; "-" (standard input) stays fine', async () => {
    const r = await runCli(['attach', '--config.check', '--cuzk.timeline-file', fifo('timeline.fifo')], {}, QUICK_MS);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--cuzk.timeline-file ".*timeline\.fifo" is a named pipe \(FIFO\), not a regular file \(to read a pipe or a stream, give --cuzk.timeline-file - and feed it on standard input\)/);
    expect((await runCli(['attach', '--config.check', '--cuzk.timeline-file', '-'], {}, QUICK_MS)).code).toBe(0);
    expect((await runCli(['attach', '--config.check', '--cuzk.timeline-file', path.join(dir, 'not-yet.log')], {}, QUICK_MS)).code).toBe(0);
  });
});

describe('at a reload: counted, the last good config kept, SIGTERM still works', () => {
  const SIM = ['run', '--engine.backend', 'sim', '--engine.time-scale', '0.01', '--web.listen-address', '127.0.0.1:0'];

  test('the web config replaced by a FIFO, then by a link to /dev/zero', async () => {
    const d = tempDir('cuzk-notfile-reload-');
    try {
      const file = path.join(d, 'web.yml');
      fs.writeFileSync(file, `basic_auth_users:\n  prom: '${bcrypt.hashSync('one', 4)}'\n`);
      const cli = startCli([...SIM, '--web.config.file', file]);
      const url = await cli.url;
      const get = (p: string) => request(`${url}${p}`, { headers: { Authorization: basic('prom', 'one') } });
      const refusals = async () => find(parse((await get('/metrics')).body), 'cuzk_exporter_errors_total', { reason: 'web_config' }) ?? 0;
      expect(await refusals()).toBe(0);
      fs.rmSync(file);
      execFileSync('mkfifo', [file]);
      // Seen on the next request (at most every 100 ms) and on SIGHUP; both must stay quick.
      cli.child.kill('SIGHUP');
      await until('the FIFO reload refused and counted', async () => (await refusals()) >= 1, QUICK_MS);
      expect((await get('/-/healthy')).status).toBe(200); // the last good config (the password) still works
      expect(cli.stderr.some((l) => /web config reload failed.*is a named pipe \(FIFO\), not a regular file; keeping the previous web config/.test(l))).toBe(true);
      fs.rmSync(file);
      fs.symlinkSync('/dev/zero', file);
      const before = await refusals();
      cli.child.kill('SIGHUP');
      await until('the /dev/zero reload refused and counted', async () => (await refusals()) > before, QUICK_MS);
      expect((await get('/-/healthy')).status).toBe(200);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toEqual({ code: 0, signal: null });
    } finally {
      fs.rmSync(d, { recursive: true, force: true });
    }
  });

  test('TLS: key_file replaced by a FIFO, cert_file by a link to /dev/zero: refused, the old certificate still served', async () => {
    const d = tempDir('cuzk-notfile-tls-');
    try {
      const pki = new Pki(path.join(d, 'pki'));
      const pair = pki.issue('server', ['DNS:localhost', 'IP:127.0.0.1']);
      const cert = path.join(d, 'tls.crt');
      const key = path.join(d, 'tls.key');
      fs.copyFileSync(pair.cert, cert);
      fs.copyFileSync(pair.key, key);
      const file = path.join(d, 'web.yml');
      fs.writeFileSync(file, 'tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n');
      const cli = startCli([...SIM, '--web.config.file', file]);
      const url = await cli.url;
      const ca = fs.readFileSync(pki.ca.cert);
      const want = new (await import('node:crypto')).X509Certificate(fs.readFileSync(pair.cert)).fingerprint256;
      const get = (p: string) => request(`${url}${p}`, { ca });
      const refusals = async () => find(parse((await get('/metrics')).body), 'cuzk_exporter_errors_total', { reason: 'web_config' }) ?? 0;
      fs.rmSync(key);
      execFileSync('mkfifo', [key]);
      await until('the FIFO key refused and counted', async () => (await refusals()) >= 1, QUICK_MS);
      expect((await get('/-/healthy')).serverCert).toBe(want);
      // Read before the change: a reload seen between the change and this read would be
      // counted in `before` and never again (CI run 7 timed out so).
      const before = await refusals();
      fs.rmSync(cert);
      fs.symlinkSync('/dev/zero', cert);
      await until('the /dev/zero certificate refused and counted', async () => (await refusals()) > before, QUICK_MS);
      expect((await get('/-/healthy')).serverCert).toBe(want);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toEqual({ code: 0, signal: null });
    } finally {
      fs.rmSync(d, { recursive: true, force: true });
    }
  });
});
