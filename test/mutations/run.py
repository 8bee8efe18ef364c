#!/usr/bin/env python3
"""Mutation check: each mutation in mutations.json must make at least one named test fail.

Runs in a scratch clone of the committed HEAD (never in your working tree: a mutation
applied there could be left behind or committed), with this checkout's node_modules linked.
For each mutation: apply its edits, rebuild what it needs (native library, dist/), run its
tests, record KILLED (some test failed) or SURVIVED, revert, rebuild.

  python3 test/mutations/run.py                 # all
  python3 test/mutations/run.py J1 N3           # by id
  python3 test/mutations/run.py --keep DIR ...  # reuse/keep a scratch clone at DIR

Prints one line per mutation and a Markdown table at the end (test/README.md has the last).
"""
import json, os, re, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def sh(cwd, cmd, timeout=1800):
    return subprocess.run(cmd, cwd=cwd, shell=True, capture_output=True, text=True, timeout=timeout)


def main():
    args = sys.argv[1:]
    keep = None
    if args[:1] == ['--keep']:
        keep, args = args[1], args[2:]
    spec = json.load(open(os.path.join(HERE, 'mutations.json')))
    if args:
        spec = [m for m in spec if m['id'].split()[0] in args]
    work = keep or tempfile.mkdtemp(prefix='cuzk-mutations-')
    if not os.path.isdir(os.path.join(work, '.git')):
        r = sh(ROOT, f'git clone -q "{ROOT}" "{work}"')
        if r.returncode:
            sys.exit(r.stderr)
    if not os.path.exists(os.path.join(work, 'node_modules')):
        os.symlink(os.path.join(ROOT, 'node_modules'), os.path.join(work, 'node_modules'))
    noop = os.path.join(work, '.mutation-noop-setup.js')
    with open(noop, 'w') as f:
        f.write('module.exports = async () => {};\n')

    def build(what):
        steps = []
        if 'native' in what:
            steps.append('make -s -C native && make -s -C native build/plain/cuzk_test')
        if 'tsc' in what:
            steps.append('npx tsc -p tsconfig.json')
        for s in steps:
            r = sh(work, s)
            if r.returncode:
                return (r.stdout + r.stderr)[-600:]
        return None

    err = build(['native', 'tsc'])
    if err:
        sys.exit('baseline build failed: ' + err)
    rows = []
    for m in spec:
        files = {}
        for f, old, new in m['edits']:
            src = files.get(f) or open(os.path.join(work, f)).read()
            if src.count(old) != 1:
                rows.append((m, 'PATCH DOES NOT APPLY (update mutations.json)', []))
                print(m['id'], rows[-1][1], flush=True)
                break
            files[f] = src.replace(old, new)
        else:
            origs = {f: open(os.path.join(work, f)).read() for f in files}
            try:
                for f, s in files.items():
                    open(os.path.join(work, f), 'w').write(s)
                err = build(m.get('build', []))
                if err:
                    rows.append((m, 'BUILD FAILED: ' + err.splitlines()[-1], []))
                    continue
                results = []
                for cmd in m['tests']:
                    t0 = time.time()
                    full = f'npx jest --globalSetup {noop} {cmd[5:]}' if cmd.startswith('jest ') else cmd
                    r = sh(work, full)
                    out = r.stdout + r.stderr
                    where = next((l.strip() for l in out.splitlines() if re.match(r'\s+>\s+\d+ \|', l) or l.startswith('FAIL test/')), '')
                    results.append((cmd, r.returncode, round(time.time() - t0, 1), where))
                rows.append((m, 'KILLED' if any(x[1] != 0 for x in results) else 'SURVIVED', results))
            finally:
                for f, s in origs.items():
                    open(os.path.join(work, f), 'w').write(s)
                e2 = build(m.get('build', []))
                if e2:
                    print('REBUILD AFTER REVERT FAILED', e2, flush=True)
            print(m['id'], rows[-1][1], [(c, rc, s) for c, rc, s, _ in rows[-1][2]], flush=True)
    print('\n| mutation | tests | result |\n|---|---|---|')
    for m, res, results in rows:
        tests = '<br>'.join(f'`{c}` ({"fails" if rc else "passes"}, {s} s)' for c, rc, s, _ in results) or '—'
        print(f'| {m["id"]} | {tests} | {res} |')
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if any(r[1] != 'KILLED' for r in rows) else 0)


if __name__ == '__main__':
    main()
