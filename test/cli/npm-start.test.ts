/**
 * `npm start`, the README's start command, as a newcomer runs it and as a supervisor stops
 * it: in its own process group (as a terminal or a service manager would start it),
 *  - SIGTERM to npm's pid (`kill -TERM <pid of npm start>`): npm forwards it; the exporter
 *    shuts down in order and exits 0, npm exits 0, nothing of the group is left;
 *  - SIGINT to the whole group (what Ctrl-C in a terminal sends): the exporter receives it
 *    twice (directly, and forwarded by npm) and still makes one orderly shutdown — proofs in
 *    flight get the grace, no "second signal" hurry — and exits 0, nothing left.
 * Before the start script exec'd node, npm's child was `sh`, which died of the SIGTERM and
 * left the exporter serving, orphaned.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

interface Started {
  npm: ChildProcess;
  url: Promise<string>;
  out: () => { stdout: string; stderr: string };
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const groups: number[] = [];

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw e;
  }
}

function npmStart(args: string[]): Started {
  // detached: npm leads a new process group, as under a shell's job control.
  const npm = spawn('npm', ['start', '--', ...args, '--web.listen-address', '127.0.0.1:0'], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  groups.push(npm.pid!);
  let stdout = '';
  let stderr = '';
  npm.stderr!.on('data', (d) => (stderr += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => npm.on('exit', (code, signal) => r({ code, signal })));
  const url = new Promise<string>((resolve, reject) => {
    npm.stdout!.on('data', (d) => {
      stdout += d;
      const m = /metrics:\s+(http:\/\/\S+)\/metrics/.exec(stdout);
      if (m) resolve(m[1]);
    });
    void exit.then((r) => reject(new Error(`npm start exited early (${r.code ?? r.signal}):\n${stdout}\n${stderr}`)));
  });
  url.catch(() => {});
  return { npm, url, out: () => ({ stdout, stderr }), exit };
}

afterEach(() => {
  for (const g of groups.splice(0)) if (groupAlive(g)) process.kill(-g, 'SIGKILL');
});

async function until(what: string, f: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await f().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('kill -TERM <pid of npm start>: the exporter exits 0, npm exits 0, no process left', async () => {
  const s = npmStart([]);
  const url = await s.url;
  expect((await fetch(`${url}/metrics`)).status).toBe(200);
  process.kill(s.npm.pid!, 'SIGTERM');
  const r = await s.exit;
  const { stdout, stderr } = s.out();
  expect([r.code, r.signal, stderr]).toEqual([0, null, expect.stringMatching(/msg="shutting down" signal=SIGTERM[\s\S]*msg=stopped/)]);
  expect(stdout).toContain('Press Ctrl-C to stop.');
  expect(groupAlive(s.npm.pid!)).toBe(false);
  await expect(fetch(`${url}/metrics`)).rejects.toThrow(); // nothing serves any more
}, 120_000);

test('Ctrl-C (SIGINT to the process group) under npm start: one orderly shutdown with the grace, exit 0, no process left', async () => {
  // Production-time SnapDeals proofs (9 s syntheses) cannot finish within the 1 s grace:
  // an orderly shutdown waits the grace then cancels them; a "second signal" would not wait.
  const s = npmStart(['--engine.backend', 'sim', '--engine.time-scale', '1', '--workload.mix', 'snap-update=1', '--workload.concurrency', '2', '--shutdown.grace', '1s']);
  const url = await s.url;
  await until('proofs in flight', async () => /^cuzk_partitions\{[^}]*\} [1-9]/m.test(await (await fetch(`${url}/metrics`)).text()));
  process.kill(-s.npm.pid!, 'SIGINT');
  const r = await s.exit;
  const { stderr } = s.out();
  expect(stderr).toMatch(/msg="shutting down" signal=SIGINT in_flight=[1-9]\d* grace_s=1/);
  expect(stderr).not.toMatch(/second signal/);
  expect(stderr).toMatch(/msg=stopped finished=0 cancelled=[1-9]/);
  expect([r.code, r.signal]).toEqual([0, null]);
  expect(groupAlive(s.npm.pid!)).toBe(false);
}, 120_000);
