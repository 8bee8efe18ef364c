/**
 * The native library's own C harness, run from `npm test` so one command covers it:
 * plain, under AddressSanitizer+UBSan and under ThreadSanitizer (make -C native test),
 * and 100 open/close cycles under valgrind (make -C native valgrind).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const NATIVE = path.join(__dirname, '..', '..', 'native');

function make(target: string): { status: number | null; out: string } {
  const r = spawnSync('make', ['-s', '-C', NATIVE, target], { encoding: 'utf8', timeout: 240_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test('C harness passes plain, under ASan+UBSan and under TSan', () => {
  const r = make('test');
  if (r.status !== 0) throw new Error(`make -C native test failed:\n${r.out.slice(-4000)}`);
  expect(r.out).toContain('native: all test runs passed (plain, asan+ubsan, tsan)');
  expect(r.out).not.toMatch(/ERROR: (Address|Thread|Undefined)Sanitizer|runtime error:/);
}, 300_000);

const hasValgrind = fs.existsSync('/usr/bin/valgrind');
(hasValgrind ? test : test.skip)('100 open/close cycles leak nothing under valgrind', () => {
  const r = make('valgrind');
  if (r.status !== 0) throw new Error(`make -C native valgrind failed:\n${r.out.slice(-4000)}`);
  expect(r.out).toContain('100 open/close cycles with work: ok');
}, 300_000);
