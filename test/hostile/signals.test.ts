/**
 * Issue 20, class 5: signals at any moment, in any number, end the exporter with the
 * documented exit code (README: SIGINT/SIGTERM exit 0 after an orderly shutdown), never a
 * death by the signal. Against the built CLI, as users run it.
 *
 * "Early" is defined by the process itself, not by a clock: the moment it starts loading
 * yargs (NODE_DEBUG=module says so on stderr), i.e. before the command, the config and the
 * logger exist. Before Node runs any JavaScript at all (its boot: 30 ms on an idle host,
 * over a second on a loaded one) its own handler re-raises the signal; no program can
 * change that, and from our first statement on, signals are ours (signals.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Cli, killAll, startCli } from './cli-helpers';
import { tempDir } from './web-helpers';

afterEach(killAll);

/** An attach with nothing to attach to: starts fast, shuts down fast, needs no daemon. */
const ATTACH = ['attach', '--cuzk.status-url', 'http://127.0.0.1:1/status', '--web.listen-address', '127.0.0.1:0'];
const LOADING_YARGS = /Module\._load REQUEST yargs parent/;

/** The CLI with module loading traced, so the test can act while it is still loading. */
function traced(args: string[]): Cli {
  return startCli(args, { env: { ...process.env, NODE_DEBUG: 'module' } });
}

const after = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends `n` signals, one per timer tick (~1 ms apart); returns how long that took. */
async function burst(pid: number, n: number, sig: NodeJS.Signals = 'SIGTERM'): Promise<number> {
  const t0 = Date.now();
  for (let i = 0; i < n; i++) {
    try {
      process.kill(pid, sig);
    } catch {
      break; // gone already
    }
    await after(1);
  }
  return Date.now() - t0;
}

test.each(['SIGTERM', 'SIGINT'] as const)('one %s while the CLI is still loading (before yargs, the command and the config) is an orderly exit 0', async (sig) => {
  const cli = traced(ATTACH);
  await cli.line(LOADING_YARGS);
  cli.child.kill(sig);
  expect(await cli.exited).toEqual({ code: 0, signal: null });
  // It went on to start, saw the signal, and stopped in order.
  expect(cli.stderr.some((l) => new RegExp(`"msg":"shutting down".*"signal":"${sig}"`).test(l))).toBe(true);
});

test('50 SIGTERMs in 50 ms, during startup or while serving, are one orderly shutdown: exit 0', async () => {
  const a = traced(ATTACH);
  await a.line(LOADING_YARGS);
  await burst(a.child.pid!, 50);
  expect(await a.exited).toEqual({ code: 0, signal: null });

  // While serving: the burst outlasts the (quick) shutdown, so signals also arrive while the
  // process is exiting.
  const b = startCli(ATTACH);
  await b.url;
  const took = await burst(b.child.pid!, 50);
  expect(await b.exited).toEqual({ code: 0, signal: null });
  expect(b.stderr.some((l) => /"msg":"shutting down"/.test(l))).toBe(true);
  expect(b.stderr.some((l) => /third signal/.test(l))).toBe(false);
  expect(took).toBeLessThan(5_000); // it was a burst
});

test('signals all through the exit (event loop drained, Node tearing down) never kill the process', async () => {
  for (let i = 0; i < 4; i++) {
    const c = startCli(ATTACH);
    await c.url;
    const pid = c.child.pid!;
    let going = true;
    const flood = (async () => {
      while (going) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          return;
        }
        await after(0);
      }
    })();
    const r = await c.exited;
    going = false;
    await flood;
    expect(r).toEqual({ code: 0, signal: null });
  }
});

test('a short command (dashboards) signalled while loading ends with 128 + 15 (or 0 if it was done), never by the signal', async () => {
  const out = tempDir('cuzk-sig-dash-');
  try {
    const cli = traced(['dashboards', '--out', path.join(out, 'd')]);
    await cli.line(LOADING_YARGS);
    cli.child.kill('SIGTERM');
    const r = await cli.exited;
    // 143 when the signal came before or during the command; 0 when the command had
    // finished first (a signal pending when the event loop drains is not waited for).
    expect(r.signal).toBeNull();
    expect([143, 0]).toContain(r.code);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});
