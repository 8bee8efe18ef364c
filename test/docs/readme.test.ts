/**
 * The README shows what the program does (issue 24 item 3):
 *  - the banner it shows under "`npm start` prints where to look" is what `npm start` prints
 *    (the port aside: the test listens on a free one);
 *  - every code block after a `<!-- runnable -->` line runs as written in this checkout, from
 *    its root: each command (comments dropped, `\` continuations joined) must exit 0, or, if it
 *    serves, print its "Press Ctrl-C to stop." banner and, on a Ctrl-C (SIGINT to its process
 *    group, as a terminal sends it), shut down in order with no error logged. The web
 *    listener is moved to a free port through the environment
 *    (CUZK_EXPORTER_WEB_LISTEN_ADDRESS, as the README documents), so a block never collides
 *    with another exporter on this machine.
 * Every process runs in its own process group, killed in afterAll; files a block writes in
 * the checkout are removed after it.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const groups: number[] = [];

afterAll(() => {
  for (const g of groups) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

/** The commands of every code block marked runnable, each with the line it starts on. */
export function runnableCommands(markdown: string): { line: number; command: string }[] {
  const lines = markdown.split('\n');
  const out: { line: number; command: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '<!-- runnable -->') continue;
    if (!/^```(sh|bash)?\s*$/.test(lines[i + 1] ?? '')) throw new Error(`README.md:${i + 1}: <!-- runnable --> is not followed by a sh code block`);
    let cmd = '';
    let start = 0;
    for (let j = i + 2; j < lines.length && !lines[j].startsWith('```'); j++) {
      const text = lines[j].replace(/(^|\s)#.*$/, '').trimEnd();
      if (text.trim() === '' && cmd === '') continue;
      if (cmd === '') start = j + 1;
      if (text.endsWith('\\')) {
        cmd += text.slice(0, -1) + ' ';
        continue;
      }
      cmd += text;
      if (cmd.trim() !== '') out.push({ line: start, command: cmd.trim() });
      cmd = '';
    }
  }
  return out;
}

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  served: boolean;
}

/** Runs one command line with bash in the checkout; a server is stopped once it has started. */
function runCommand(command: string, stop: NodeJS.Signals = 'SIGTERM', capMs = 120_000): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn('bash', ['-c', command], {
      cwd: ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CUZK_EXPORTER_WEB_LISTEN_ADDRESS: '127.0.0.1:0' },
    });
    groups.push(child.pid!);
    let stdout = '';
    let stderr = '';
    let served = false;
    const cap = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL');
      reject(new Error(`${command}: neither exited nor served within ${capMs} ms\n${stdout}\n${stderr}`));
    }, capMs);
    child.stderr!.on('data', (d) => (stderr += d));
    child.stdout!.on('data', (d) => {
      stdout += d;
      if (!served && stdout.includes('Press Ctrl-C to stop.')) {
        served = true;
        process.kill(-child.pid!, stop);
      }
    });
    child.on('exit', (code, signal) => {
      // Done when nothing of its process group is left (a server's children included).
      const gone = () => {
        try {
          process.kill(-child.pid!, 0);
          setTimeout(gone, 50);
        } catch {
          clearTimeout(cap);
          resolve({ code, signal, stdout, stderr, served });
        }
      };
      gone();
    });
  });
}

test('the banner the README shows is the one `npm start` prints', async () => {
  const m = /`npm start` prints where to look:\n\n```\n([\s\S]*?)```/.exec(README);
  expect(m).not.toBeNull();
  const shown = m![1];
  const r = await runCommand('exec npm start');
  expect([r.served, r.code]).toEqual([true, 0]);
  const printed = /^cuzk-exporter: reference prover[\s\S]*?Press Ctrl-C to stop\.\n/m.exec(r.stdout);
  expect(printed).not.toBeNull();
  // The test's exporter listens on a free port; the README shows the default, 9464.
  expect(printed![0].replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:9464')).toBe(shown);
}, 150_000);

test('the runnable-block parser joins continuations, drops comments and refuses a marker without a block', () => {
  const md = ['<!-- runnable -->', '```sh', '# a comment', 'echo one   # trailing', 'echo two \\', '  three', '```', 'x'].join('\n');
  expect(runnableCommands(md)).toEqual([
    { line: 4, command: 'echo one' },
    { line: 5, command: 'echo two    three' },
  ]);
  expect(() => runnableCommands('<!-- runnable -->\ntext')).toThrow(/not followed by a sh code block/);
});

describe('README code blocks marked runnable', () => {
  const commands = runnableCommands(README);
  test('there are some', () => {
    expect(commands.length).toBeGreaterThanOrEqual(5);
  });
  test.each(commands.map((c) => [c.line, c.command] as const))('README.md:%i: %s', async (_line, command) => {
    const before = new Set(fs.readdirSync(ROOT));
    try {
      const r = await runCommand(command, 'SIGINT');
      if (r.served) {
        // npx itself ends by the Ctrl-C, as in a terminal; the exporter under it must stop in order.
        expect({ command, shutdown: /msg="shutting down" signal=SIGINT/.test(r.stderr), errors: r.stderr.split('\n').filter((l) => /level=error|^\s+at /.test(l)) }).toEqual({ command, shutdown: true, errors: [] });
      } else expect({ command, code: r.code, signal: r.signal, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ command, code: 0, signal: null, stderr: '' });
    } finally {
      // Only what the command itself names (another test may be writing in the checkout too).
      for (const f of fs.readdirSync(ROOT)) if (!before.has(f) && command.includes(f)) fs.rmSync(path.join(ROOT, f), { recursive: true, force: true });
    }
  }, 150_000);
});
