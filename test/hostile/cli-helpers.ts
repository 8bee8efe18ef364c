/**
 * The compiled CLI (dist/, built by the test setup) as a child process, with its JSON log
 * lines collected as they come and its URL taken from the "listening" line. Every child is
 * killed (SIGKILL, by pid) in `killAll`, which each test file calls in afterAll/afterEach.
 */
import { ChildProcess, spawn, SpawnOptions } from 'node:child_process';
import * as path from 'node:path';

export const CLI = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');

export interface Cli {
  child: ChildProcess;
  /** stderr so far (log lines and anything else), in order. */
  stderr: string[];
  stdout: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the base URL once the "listening" line is logged. */
  url: Promise<string>;
  /** Resolves when a stderr line matches. */
  line(re: RegExp, ms?: number): Promise<string>;
}

const children = new Set<ChildProcess>();

export function startCli(args: string[], opts: SpawnOptions & { sh?: string } = {}): Cli {
  const argv = [CLI, ...args, '--log.format', 'json'];
  const { sh, ...spawnOpts } = opts;
  // `sh`: a shell command run first, e.g. "ulimit -n 1024" (then exec, so the pid is the CLI's).
  const child = sh
    ? spawn('sh', ['-c', `${sh} && exec "$0" "$@"`, process.execPath, ...argv], { stdio: ['ignore', 'pipe', 'pipe'], ...spawnOpts })
    : spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], ...spawnOpts });
  children.add(child);
  const stderr: string[] = [];
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
  let partial = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (d: string) => {
    partial += d;
    const lines = partial.split('\n');
    partial = lines.pop()!;
    for (const l of lines) {
      stderr.push(l);
      for (const w of [...waiters]) {
        if (w.re.test(l)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(l);
        }
      }
    }
  });
  const cli: Cli = {
    child,
    stderr,
    stdout: '',
    exited: new Promise((resolve) => child.on('exit', (code, signal) => (children.delete(child), resolve({ code, signal })))),
    url: Promise.resolve(''),
    line(re, ms = 30_000) {
      const seen = stderr.find((l) => re.test(l));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no stderr line matching ${re} within ${ms} ms; stderr:\n${stderr.join('\n')}`)), ms);
        waiters.push({
          re,
          resolve: (l) => {
            clearTimeout(t);
            resolve(l);
          },
        });
        void cli.exited.then(() => {
          clearTimeout(t);
          reject(new Error(`exited before a stderr line matching ${re}; stderr:\n${stderr.join('\n')}`));
        });
      });
    },
  };
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (d: string) => (cli.stdout += d));
  cli.url = cli.line(/"msg":"listening"/).then((l) => (JSON.parse(l) as { url: string }).url.replace(/\/$/, ''));
  cli.url.catch(() => {});
  return cli;
}

export async function killAll(): Promise<void> {
  const waits = [...children].map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r))));
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(waits);
}
