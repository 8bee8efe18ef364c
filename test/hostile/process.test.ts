/**
 * Issue 12, case 6: process-level hostility, against the compiled CLI as users run it.
 *  - SIGHUP reloads the web config and never ends the process;
 *  - a closed stderr/stdout (`… 2>&1 | head`) never ends the process;
 *  - SIGTERM during startup is an orderly shutdown (exit 0), not a kill;
 *  - a second SIGTERM cuts the grace short (proofs cancelled) and still exits 0 cleanly;
 *  - a flood of idle connections cannot starve scrapes: the connection cap closes the
 *    oldest idle ones (counted, logged once) long before the process runs out of files.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import { find, parse } from '../helpers/prom-text';
import { killAll, startCli } from './cli-helpers';
import { basic, request, tempDir, until } from './web-helpers';

afterEach(killAll);

const SIM = ['--engine.backend', 'sim', '--engine.time-scale', '0.01', '--web.listen-address', '127.0.0.1:0'];

test('SIGHUP reloads the web config and the process keeps serving', async () => {
  const d = tempDir('cuzk-hup-');
  const file = path.join(d, 'web.yml');
  fs.writeFileSync(file, `basic_auth_users:\n  prom: '${bcrypt.hashSync('one', 4)}'\n`);
  const cli = startCli(['run', ...SIM, '--web.config.file', file]);
  const url = await cli.url;
  const auth = (p: string) => ({ headers: { Authorization: basic('prom', p) } });
  expect((await request(`${url}/-/healthy`, auth('one'))).status).toBe(200);
  cli.child.kill('SIGHUP');
  await cli.line(/"msg":"web config reloaded".*"why":"SIGHUP"/);
  cli.child.kill('SIGHUP');
  await until('two reloads', () => cli.stderr.filter((l) => /"why":"SIGHUP"/.test(l)).length === 2);
  expect((await request(`${url}/-/healthy`, auth('one'))).status).toBe(200);
  expect(cli.child.exitCode).toBeNull();
  // Without a web config there is nothing to reload: still never an exit.
  const plain = startCli(['run', ...SIM]);
  const u2 = await plain.url;
  plain.child.kill('SIGHUP');
  await plain.line(/SIGHUP: nothing to reload/);
  expect((await request(`${u2}/-/healthy`)).status).toBe(200);
  cli.child.kill('SIGTERM');
  plain.child.kill('SIGTERM');
  expect((await cli.exited).code).toBe(0);
  expect((await plain.exited).code).toBe(0);
});

test('a closed stderr and stdout (a pipe into `head` that has exited) never end the process', async () => {
  const cli = startCli(['run', ...SIM, '--log.level', 'debug']);
  const url = await cli.url;
  const completed = async () => {
    const body = (await request(`${url}/metrics`)).body;
    return parse(body).filter((s) => s.name === 'cuzk_proofs_completed_total').reduce((a, s) => a + s.value, 0);
  };
  // Our ends of its pipes go away, as `head` exits: every later write is EPIPE.
  cli.child.stderr!.destroy();
  cli.child.stdout!.destroy();
  const before = await completed();
  // Every finished proof logs a debug line; ten more of them, and still serving.
  await until('ten more proofs (each one logged to the closed stderr)', async () => (await completed()) >= before + 10, 30_000);
  expect(cli.child.exitCode).toBeNull();
  expect((await request(`${url}/-/healthy`)).status).toBe(200);
  cli.child.kill('SIGTERM');
  expect((await cli.exited).code).toBe(0);
});

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const c = net.connect(port, '127.0.0.1', () => (c.destroy(), resolve(true)));
    c.on('error', () => resolve(false));
  });

test('SIGTERM during startup (before the server listens) is an orderly shutdown', async () => {
  // The handlers are in place as soon as the command is known, before the engine opens
  // and the server listens (the debug line says when); a SIGTERM from then on is orderly.
  let sentBeforeListening = false;
  for (let attempt = 0; attempt < 3 && !sentBeforeListening; attempt++) {
    const port = await freePort();
    const cli = startCli(['run', '--engine.backend', 'sim', '--engine.time-scale', '0.01', '--web.listen-address', `127.0.0.1:${port}`, '--log.level', 'debug']);
    await cli.line(/"msg":"signal handlers installed"/);
    sentBeforeListening = !(await listening(port));
    cli.child.kill('SIGTERM');
    const { code, signal } = await cli.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(cli.stderr.some((l) => /"msg":"shutting down".*"signal":"SIGTERM"/.test(l))).toBe(true);
    expect(cli.stderr.some((l) => /"msg":"stopped"/.test(l))).toBe(true);
  }
  expect(sentBeforeListening).toBe(true);
});

test('a second SIGTERM stops waiting for proofs (cancelled) and still exits 0 after a clean close', async () => {
  // Real-time sim (PoRep partitions take seconds) and a long grace: the first SIGTERM waits.
  const cli = startCli(['run', '--engine.backend', 'sim', '--web.listen-address', '127.0.0.1:0', '--shutdown.grace', '10m', '--workload.mix', 'porep-c2=1']);
  const url = await cli.url;
  await until('a proof in flight', async () => {
    const body = (await request(`${url}/metrics`)).body;
    return parse(body).some((s) => s.name === 'cuzk_partitions' && s.value > 0);
  });
  cli.child.kill('SIGTERM');
  await cli.line(/"msg":"shutting down"/);
  const t0 = Date.now();
  // Signals within a second of the one that counted are the same request (signals.ts):
  // repeat until one counts as the second.
  await until('a second signal counted', () => {
    if (cli.stderr.some((l) => /second signal: no longer waiting/.test(l))) return true;
    cli.child.kill('SIGTERM');
    return false;
  }, 20_000);
  const { code } = await cli.exited;
  expect(code).toBe(0);
  expect(Date.now() - t0).toBeLessThan(20_000); // not the 10-minute grace
  expect(cli.stderr.some((l) => /second signal: no longer waiting/.test(l))).toBe(true);
  const stopped = JSON.parse(cli.stderr.find((l) => /"msg":"stopped"/.test(l))!) as { cancelled: number };
  expect(stopped.cancelled).toBeGreaterThan(0);
});

test('a flood of idle connections cannot starve scrapes: the oldest idle ones are closed (counted, logged once)', async () => {
  // 1024 open files, as a common default limit: without a cap, ~1000 idle connections use
  // every file and each new scrape is reset.
  const cli = startCli(['run', ...SIM], { sh: 'ulimit -n 1024' });
  const url = await cli.url;
  const port = Number(new URL(url).port);
  const idle: net.Socket[] = [];
  try {
    for (let i = 0; i < 1500; i++) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      idle.push(s);
      if (i % 100 === 99) await new Promise((r) => setTimeout(r, 20));
    }
    await until('every flood connection was accepted or closed', () => idle.every((s) => !s.connecting), 30_000);
    for (let i = 0; i < 5; i++) {
      const r = await request(`${url}/metrics`);
      expect(r.status).toBe(200);
      if (i === 4) expect(find(parse(r.body), 'cuzk_exporter_errors_total', { reason: 'connection_limit' })).toBeGreaterThanOrEqual(1500 - 512);
    }
    expect(cli.stderr.filter((l) => /connection limit reached/.test(l))).toHaveLength(1);
  } finally {
    for (const s of idle) s.destroy();
  }
  cli.child.kill('SIGTERM');
  expect((await cli.exited).code).toBe(0);
});
