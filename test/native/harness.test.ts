/**
 * The native library's own C harness, run from `npm test` so one command covers it:
 * plain, under AddressSanitizer+UBSan and under ThreadSanitizer (make -C native test),
 * and 100 open/close cycles under valgrind (make -C native valgrind).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const NATIVE = path.join(__dirname, '..', '..', 'native');

/**
 * A cap only against a hung build or run: `make test` compiles the ASan and TSan variants and
 * runs all three, which a loaded 2-core box (load average 13) has taken over 240 s for.
 * Reaching it is said as such, not as a failing harness.
 */
const MAKE_CAP_MS = 600_000;

function make(target: string): { status: number | null; out: string } {
  const r = spawnSync('make', ['-s', '-C', NATIVE, target], { encoding: 'utf8', timeout: MAKE_CAP_MS });
  if (r.status === null) throw new Error(`make -C native ${target} did not finish within ${MAKE_CAP_MS / 1000} s (${r.signal ?? r.error?.message}); output so far:\n${`${r.stdout}${r.stderr}`.slice(-3000)}`);
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** The lines that say what went wrong (harness FAILs, sanitizer reports), with context. */
function why(out: string): string {
  const lines = out.split('\n');
  const hits = lines.flatMap((l, i) => (/^FAIL |WARNING: |ERROR: |SUMMARY: |runtime error|make: \*\*\*/.test(l) ? lines.slice(Math.max(0, i - 2), i + 12) : []));
  return (hits.length ? hits.join('\n') : out).slice(-6000);
}

test('C harness passes plain, under ASan+UBSan and under TSan', () => {
  const r = make('test');
  if (r.status !== 0) throw new Error(`make -C native test failed:\n${why(r.out)}`);
  expect(r.out).toContain('native: all test runs passed (plain, asan+ubsan, tsan)');
  expect(r.out).not.toMatch(/ERROR: (Address|Thread|Undefined)Sanitizer|runtime error:/);
}, MAKE_CAP_MS + 60_000);

const hasValgrind = fs.existsSync('/usr/bin/valgrind');
(hasValgrind ? test : test.skip)('100 open/close cycles leak nothing under valgrind', () => {
  const r = make('valgrind');
  if (r.status !== 0) throw new Error(`make -C native valgrind failed:\n${why(r.out)}`);
  expect(r.out).toContain('100 open/close cycles with work: ok');
}, MAKE_CAP_MS + 60_000);
