/**
 * The log follower when the log is opened as descriptor 0 (timeline-follower.ts; issue 23:
 * the three mutants the Stryker run could not reach in-process, where the test runner holds
 * descriptor 0). An exporter started with standard input closed (`<&-`, some service
 * managers) gets descriptor 0 for the first file it opens: a descriptor like any other, so
 * the follower must follow that file as it follows any (FollowerSink contract: each line once,
 * a rotation by rename followed to the new file, the file closed at stop()).
 *
 * The scenario runs in a child process (follower-fd0-child.ts, the source transpiled by a
 * require hook) that closes its descriptor 0 first; the expected lines are the script's.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const HOOK = [
  "const ts = require('typescript');",
  "const fs = require('node:fs');",
  "require.extensions['.ts'] = (m, f) => m._compile(ts.transpileModule(fs.readFileSync(f, 'utf8'), { fileName: f, compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } }).outputText, f);",
  'require(process.argv[1]);',
].join('\n');

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-follower-fd0-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

test('a log opened as descriptor 0 (standard input closed): each line once, the rotation followed, the file closed at stop()', () => {
  const child = path.join(__dirname, 'follower-fd0-child.ts');
  const stdout = execFileSync(process.execPath, ['-e', HOOK, child, dir], {
    cwd: path.join(__dirname, '..', '..'),
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
    encoding: 'utf8',
  });
  const r = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
  // The premise: the follower's file is descriptor 0.
  expect(r.fdAfterOpen).toBe(r.file);
  expect(r.history).toEqual(['old-1']);
  // Each appended line handed on once, whatever the number of looks.
  expect(r.liveBeforeRotation).toEqual(['live-1', 'live-2']);
  // The old file finished, then the new one from its start.
  expect(r.liveAfterRotation).toEqual(['live-1', 'live-2', 'old-last', 'new-1']);
  // newFile(): at the first open (before any line) and at the rotation (after three).
  expect(r.newFileAt).toEqual([0, 3]);
  expect(r.fdBeforeStop).toBe(r.file);
  // stop() closes the file: descriptor 0 is free again.
  expect(r.fdAfterStop).toBe('closed');
});
