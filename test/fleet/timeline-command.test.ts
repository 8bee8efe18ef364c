/**
 * The TIMELINE command of a fleet target (src/engine/sources/fleet/timeline-command.ts), with real child
 * processes: its output becomes one stream across restarts, every exit is counted and
 * restarted with exponential back-off, a long run resets the back-off, a program that
 * cannot start is counted like an exit, and stop() ends it (SIGKILL if it ignores SIGTERM).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { silentLogger } from '../../src/util/logger';
import { TimelineCommand, TimelineCommandOptions } from '../../src/engine/sources/fleet/timeline-command';

const NODE = process.execPath;

async function waitFor(what: string, cond: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Run {
  cmd: TimelineCommand;
  out: () => string;
  failures: { msg: string; backoff: number; at: number }[];
  states: boolean[];
}

const running: TimelineCommand[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop()));
});

function start(argv: string[], extra: Partial<TimelineCommandOptions> = {}): Run {
  const failures: Run['failures'] = [];
  const states: boolean[] = [];
  let out = '';
  const cmd: TimelineCommand = new TimelineCommand({
    argv,
    target: 't',
    logger: silentLogger,
    onFailure: (msg) => failures.push({ msg, backoff: cmd.backoffMs, at: Date.now() }),
    onState: (r) => states.push(r),
    minBackoffMs: 100,
    maxBackoffMs: 400,
    stableMs: 60_000,
    ...extra,
  });
  cmd.stream.on('data', (b: Buffer) => (out += b.toString()));
  running.push(cmd);
  cmd.start();
  return { cmd, out: () => out, failures, states };
}

test('output of every run is one stream; a partial last line is ended; each exit is counted and restarted with doubling back-off up to the cap', async () => {
  // Prints a complete line and a partial one, then exits 3.
  const r = start([NODE, '-e', 'process.stdout.write("TIMELINE,1,SYNTH_START,j,partition=0\\npartial"); process.exit(3)']);
  await waitFor('5 failures', () => r.failures.length >= 5);
  const backoffs = r.failures.slice(0, 5).map((f) => f.backoff);
  expect(backoffs).toEqual([100, 200, 400, 400, 400]);
  // The restart waited at least the back-off each time.
  for (let i = 1; i < 5; i++) expect(r.failures[i].at - r.failures[i - 1].at).toBeGreaterThanOrEqual(backoffs[i - 1] - 5);
  expect(r.failures[0].msg).toMatch(/^timeline command of target t \(.* -e .*\) exited with code 3; restarting in 0\.1s$/);
  // Each run's partial line was ended, so no line glues onto the next run's first one.
  const lines = r.out().split('\n').filter((l) => l !== '');
  expect(lines.slice(0, 4)).toEqual(['TIMELINE,1,SYNTH_START,j,partition=0', 'partial', 'TIMELINE,1,SYNTH_START,j,partition=0', 'partial']);
  expect(r.cmd.failures).toBe(r.failures.length);
  // Up while each run ran, down after each exit.
  expect(r.states.slice(0, 4)).toEqual([true, false, true, false]);
});

test('a run that lasted stableMs resets the back-off to the minimum', async () => {
  const r = start([NODE, '-e', 'setTimeout(() => process.exit(1), 300)'], { stableMs: 200 });
  await waitFor('3 failures', () => r.failures.length >= 3);
  expect(r.failures.slice(0, 3).map((f) => f.backoff)).toEqual([100, 100, 100]);
});

test('a program that cannot start is counted like an exit and retried', async () => {
  const r = start(['/nonexistent/cuzk-log-command']);
  await waitFor('2 failures', () => r.failures.length >= 2);
  expect(r.failures[0].msg).toMatch(/could not start \(ENOENT\); restarting in 0\.1s$/);
  expect(r.failures[1].backoff).toBe(200);
  expect(r.cmd.running).toBe(false);
});

test('standard error: its last line is in the failure message, bounded', async () => {
  const r = start([NODE, '-e', 'process.stderr.write("x".repeat(100000) + "\\nssh: connect to host gpu-17 port 22: Connection refused\\n"); process.exit(255)']);
  await waitFor('a failure', () => r.failures.length >= 1);
  expect(r.failures[0].msg).toMatch(/exited with code 255: ssh: connect to host gpu-17 port 22: Connection refused; restarting in 0\.1s$/);
  expect(r.failures[0].msg.length).toBeLessThan(1000);
});

test('stop() ends a running command at once, and one that ignores SIGTERM after the grace (SIGKILL)', async () => {
  const a = start([NODE, '-e', 'setInterval(() => {}, 1000)']);
  const b = start([NODE, '-e', 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000); console.log("ready")'], { killGraceMs: 300 });
  await waitFor('both running', () => a.cmd.running && b.cmd.running && b.out().includes('ready'));
  const t0 = Date.now();
  await a.cmd.stop();
  expect(Date.now() - t0).toBeLessThan(2000);
  const t1 = Date.now();
  await b.cmd.stop();
  expect(Date.now() - t1).toBeGreaterThanOrEqual(290);
  expect(a.failures).toEqual([]); // a stop is not a failure
  expect(b.failures).toEqual([]);
  expect(a.cmd.running || b.cmd.running).toBe(false);
});

test('a process left holding the pipe (a backgrounded child) does not keep the exit from being seen', async () => {
  // sh exits at once; its background sleep keeps the output pipe open.
  const r = start(['/bin/sh', '-c', 'sleep 20 & echo $!; exit 0']);
  let pid = 0;
  try {
    await waitFor('the first exit', () => r.failures.length >= 1, 5000);
    pid = Number(r.out().split('\n')[0]);
    expect(r.failures[0].msg).toMatch(/exited with code 0/);
  } finally {
    if (!pid) pid = Number(r.out().split('\n')[0]);
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    // The restarted runs leave their own sleeps: stop, then end what they printed.
    await r.cmd.stop();
    for (const l of r.out().split('\n')) {
      const p = Number(l);
      if (p > 0) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  }
});

test('display: plain arguments as they are, others JSON-quoted (issue 23)', () => {
  const c = new TimelineCommand({ argv: ['ssh', 'gpu-17', 'journalctl', '-fu', 'cuzk', '--lines=0', 'a b', 'x"y', '', 'u@h:%+=,./-'], target: 't', logger: silentLogger, onFailure: () => undefined, onState: () => undefined });
  expect(c.display).toBe('ssh gpu-17 journalctl -fu cuzk --lines=0 "a b" "x\\"y" "" u@h:%+=,./-');
  expect([c.failures, c.starts, c.running, c.backoffMs, c.lastFailure]).toEqual([0, 0, false, 0, null]);
});

test('a program that spawn refuses at once (a NUL in an argument) is counted like an exit, with the minimum back-off (issue 23)', async () => {
  const r = start([NODE, 'a\0b'], { minBackoffMs: 60_000, maxBackoffMs: 60_000 });
  await waitFor('the failure', () => r.failures.length >= 1);
  expect(r.failures[0].msg).toMatch(/^timeline command of target t \(.*\) could not start \(.*\); restarting in 60s$/);
  expect(r.failures[0].backoff).toBe(60_000);
  expect(r.cmd.lastFailure).toBe(r.failures[0].msg);
  expect([r.cmd.starts, r.cmd.failures, r.cmd.running]).toEqual([1, 1, false]);
  expect(r.states).toEqual([false]);
  // stop() cancels the pending restart: no second start
  await r.cmd.stop();
  expect(r.cmd.starts).toBe(1);
});

test('the defaults: 1 s back-off doubling; starts counted; the running state and back-off reset while it runs (issue 23)', async () => {
  const failures: number[] = [];
  const states: Array<[boolean, string]> = [];
  const cmd = new TimelineCommand({ argv: [NODE, '-e', 'console.log("up"); setTimeout(() => process.exit(2), 50)'], target: 'd', logger: silentLogger, onFailure: () => failures.push(cmd.backoffMs), onState: (r, m) => states.push([r, m]) });
  running.push(cmd);
  cmd.start();
  await waitFor('running', () => cmd.running);
  expect(cmd.backoffMs).toBe(0);
  expect(states[0]).toEqual([true, `timeline command of target d running (${cmd.display})`]);
  await waitFor('the exit', () => failures.length >= 1);
  expect(failures).toEqual([1000]);
  expect(cmd.starts).toBe(1);
  expect(cmd.running).toBe(false);
  await cmd.stop();
});

test('a run that printed nothing adds nothing to the log: only a partial last line is ended (issue 23)', async () => {
  // Neither starts: nothing was written, so there is no partial line to end.
  const a = start(['/nonexistent/cuzk-log-command'], { minBackoffMs: 60_000, maxBackoffMs: 60_000 });
  const b = start([NODE, 'a\0b'], { minBackoffMs: 60_000, maxBackoffMs: 60_000 });
  await waitFor('both failed', () => a.failures.length >= 1 && b.failures.length >= 1);
  for (const r of [a, b]) {
    await r.cmd.stop();
    const ended = new Promise<void>((resolve) => r.cmd.stream.once('end', resolve));
    r.cmd.stream.end(); // (the test's own: flushes what was written into 'data')
    await ended;
    expect(r.out()).toBe('');
  }
});

test('its standard input is /dev/null (at its end at once); output that ends with a newline is passed on exactly (issue 23)', async () => {
  const r = start([NODE, '-e', 'process.stdin.on("end", () => { process.stdout.write("stdin ended\\n"); process.exit(4); }); process.stdin.resume()'], { minBackoffMs: 60_000, maxBackoffMs: 60_000 });
  await waitFor('the exit', () => r.failures.length >= 1, 10_000);
  expect(r.failures[0].msg).toMatch(/exited with code 4; restarting in 60s$/);
  await r.cmd.stop();
  const ended = new Promise<void>((resolve) => r.cmd.stream.once('end', resolve));
  r.cmd.stream.end(); // (the test's own: flushes what was written into 'data')
  await ended;
  expect(r.out()).toBe('stdin ended\n');
});

test('a run ended by a signal says so; the next run, while it runs, has no back-off in force (issue 23)', async () => {
  const marker = path.join(os.tmpdir(), `cuzk-tc-${process.pid}-${Date.now()}`);
  const r = start([NODE, '-e', `const fs = require("fs"); if (!fs.existsSync(${JSON.stringify(marker)})) { fs.writeFileSync(${JSON.stringify(marker)}, ""); process.kill(process.pid, "SIGKILL"); } else setInterval(() => {}, 1000);`]);
  try {
    await waitFor('the second run running', () => r.failures.length === 1 && r.cmd.running && r.cmd.starts === 2);
    expect(r.failures[0].msg).toMatch(/\) was ended by SIGKILL; restarting in 0\.1s$/);
    expect(r.failures[0].backoff).toBe(100);
    expect(r.cmd.backoffMs).toBe(0);
    expect(r.states).toEqual([true, false, true]);
  } finally {
    await r.cmd.stop();
    fs.rmSync(marker, { force: true });
  }
});

test('stopped before it was seen to start: no running state is reported, and it is not running (issue 23)', async () => {
  const r = start([NODE, '-e', 'setInterval(() => {}, 1000)']);
  await r.cmd.stop(); // at once, before the child's 'spawn' event
  expect(r.states).toEqual([]);
  expect(r.cmd.running).toBe(false);
  expect(r.failures).toEqual([]);
});
