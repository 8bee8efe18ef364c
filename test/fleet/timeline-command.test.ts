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
// The real timer and clock: some tests below fake setTimeout or Date for the code under test.
const realSetTimeout = setTimeout;
const realClearTimeout = clearTimeout;
const now = () => performance.now();

async function waitFor(what: string, cond: () => boolean, ms = 15_000): Promise<void> {
  const deadline = now() + ms;
  while (!cond()) {
    if (now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => realSetTimeout(r, 20));
  }
}

/** Only these are faked (jest's names): the child processes and this file's polling stay real. */
function fakeOnly(...faked: Array<'setTimeout' | 'clearTimeout' | 'Date'>): void {
  const all = ['Date', 'hrtime', 'nextTick', 'performance', 'queueMicrotask', 'requestAnimationFrame', 'cancelAnimationFrame', 'requestIdleCallback', 'cancelIdleCallback', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] as const;
  jest.useFakeTimers({ doNotFake: all.filter((n) => !(faked as string[]).includes(n)) });
}

/** Resolves with what came first: `p`, or 'still waiting' after `ms` (a bound, not a pause). */
async function within<T>(p: Promise<T>, ms: number): Promise<T | 'still waiting'> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<'still waiting'>((r) => (t = realSetTimeout(() => r('still waiting'), ms)))]);
  } finally {
    realClearTimeout(t);
  }
}

/** Everything written to the stream so far (the test's own end: flushes it into 'data'). */
async function endOf(r: Run): Promise<string> {
  const ended = new Promise<void>((resolve) => r.cmd.stream.once('end', resolve));
  r.cmd.stream.end();
  await ended;
  return r.out();
}

function killPid(pid: number): void {
  if (!(pid > 0)) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone
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

test('a program that cannot start is one failure per start: its error and close events are not counted twice (issue 23)', async () => {
  // Node emits 'error' (ENOENT) and then 'close' (code -2) for a program that is not there.
  const r = start(['/nonexistent/cuzk-log-command']);
  await waitFor('3 failures', () => r.failures.length >= 3);
  // (the first two runs' close events came 100 and 300 ms ago)
  expect(r.cmd.failures).toBe(r.cmd.starts);
  for (const f of r.failures) expect(f.msg).toMatch(/could not start \(ENOENT\); restarting in/);
  expect(r.failures.slice(0, 3).map((f) => f.backoff)).toEqual([100, 200, 400]);
});

test('a partial last line is ended once: later runs that print nothing add no empty lines (issue 23)', async () => {
  const marker = path.join(os.tmpdir(), `cuzk-tc-partial-${process.pid}-${Date.now()}`);
  const r = start([NODE, '-e', `const fs = require("fs"); if (!fs.existsSync(${JSON.stringify(marker)})) { fs.writeFileSync(${JSON.stringify(marker)}, ""); process.stdout.write("partial"); } process.exit(1);`]);
  try {
    await waitFor('3 exits', () => r.failures.length >= 3);
    await r.cmd.stop();
    expect(await endOf(r)).toBe('partial\n');
  } finally {
    fs.rmSync(marker, { force: true });
  }
});

test('a run of exactly stableMs resets the back-off (the clock moved by hand while it runs) (issue 23)', async () => {
  fakeOnly('Date');
  try {
    // Each run, once started, "lasts" exactly 5 s on the frozen clock.
    const r = start([NODE, '-e', 'process.exit(1)'], { stableMs: 5000, onState: (running) => running && jest.setSystemTime(Date.now() + 5000) });
    await waitFor('3 failures', () => r.failures.length >= 3);
    expect(r.failures.slice(0, 3).map((f) => f.backoff)).toEqual([100, 100, 100]);
    await r.cmd.stop();
  } finally {
    jest.useRealTimers();
  }
});

test('standard error is kept to its last 512 bytes: one long line is cut to its end (issue 23)', async () => {
  const r = start([NODE, '-e', 'process.stderr.write("a" + "y".repeat(99999)); process.exit(255)']);
  await waitFor('a failure', () => r.failures.length >= 1);
  // (its length compared, not the text: a failing run would print 100,000 characters)
  const tail = /\) exited with code 255: ([ay]*); restarting in 0\.1s$/.exec(r.failures[0].msg)?.[1] ?? '(no tail)';
  expect([tail.length, tail === 'y'.repeat(tail.length)]).toEqual([512, true]);
});

test('an exit is seen when its output has been read to the end (close), not half a second later (issue 23)', async () => {
  fakeOnly('setTimeout', 'clearTimeout'); // the half-second linger after 'exit' never fires
  try {
    const r = start([NODE, '-e', 'process.stdout.write("last\\n"); process.exit(3)']);
    await waitFor('the exit', () => r.failures.length >= 1, 10_000);
    expect(r.failures[0].msg).toMatch(/exited with code 3; restarting in 0\.1s$/);
    await r.cmd.stop();
    expect(await endOf(r)).toBe('last\n');
  } finally {
    jest.useRealTimers();
  }
});

test('stop() of a command that has exited (its pipe still held by a child it left) returns at once: no signal, no wait (issue 23)', async () => {
  fakeOnly('setTimeout', 'clearTimeout'); // the half-second linger never fires: only 'close' would end the wait
  const pids: number[] = [];
  try {
    // Exited with a code, and ended by a signal: each prints its background sleep's pid and its own.
    for (const end of ['exit 0', 'kill -KILL $$']) {
      const r = start(['/bin/sh', '-c', `sleep 30 & echo $!; echo $$; ${end}`]);
      await waitFor('both pids', () => r.out().split('\n').length >= 3);
      const [sleepPid, shPid] = r.out().split('\n').map(Number);
      pids.push(sleepPid);
      // Reaped: node has seen the exit (the sleep still holds the output pipe: no close yet).
      await waitFor('the shell reaped', () => !fs.existsSync(`/proc/${shPid}`));
      expect([end, await within(r.cmd.stop(), 5000)]).toEqual([end, undefined]);
      expect(r.cmd.running).toBe(false);
      expect(r.failures).toEqual([]);
    }
  } finally {
    for (const p of pids) killPid(p);
    jest.useRealTimers();
  }
});

test('stop() leaves no timer armed: the SIGKILL timer is cleared once the command has ended (issue 23)', async () => {
  fakeOnly('setTimeout', 'clearTimeout');
  try {
    const r = start([NODE, '-e', 'setInterval(() => {}, 1000); console.log("ready")']);
    await waitFor('running', () => r.cmd.running && r.out().includes('ready'));
    await r.cmd.stop(); // SIGTERM ends it
    expect(jest.getTimerCount()).toBe(0);
  } finally {
    jest.useRealTimers();
  }
});

test('the default grace after SIGTERM (2 s) lets a command finish its own shutdown (issue 23)', async () => {
  // ssh, say, closes its connection on SIGTERM: it must not be SIGKILLed at once.
  const r = start([NODE, '-e', 'process.on("SIGTERM", () => setTimeout(() => { process.stdout.write("cleaned up\\n"); process.exit(0); }, 100)); setInterval(() => {}, 1000); console.log("ready")']);
  await waitFor('running', () => r.cmd.running && r.out().includes('ready'));
  await r.cmd.stop();
  expect(await endOf(r)).toBe('ready\ncleaned up\n');
});
