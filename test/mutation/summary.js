#!/usr/bin/env node
/**
 * Mutation scores per file and per directory from the committed incremental files
 * (issue 23): `node test/mutation/summary.js [--markdown]`.
 *
 * For each source file, the incremental file named in triage.json holds its latest run
 * (several files hold stale copies of a file another run superseded). Stryker score =
 * (killed + timeout) / (killed + timeout + survived + no coverage); compile and runtime
 * errors are not mutants. "Excl. equivalent" drops the mutants triage.json counts as
 * equivalent (each listed with its reason in README.md or files/*.md) and counts the ones
 * killed by hand (a test added after the run, seen failing on the mutant) as killed.
 * A directory's score sums its files' counts; files never run are listed, not guessed.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const here = __dirname;
const root = path.resolve(here, '../..');
const triage = JSON.parse(fs.readFileSync(path.join(here, 'triage.json'), 'utf8'));
const markdown = process.argv.includes('--markdown');

function counts(file, incremental) {
  const j = JSON.parse(fs.readFileSync(path.join(here, incremental), 'utf8'));
  const entry = j.files[file];
  if (!entry) throw new Error(`${incremental} has no entry for ${file}`);
  const c = { Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0, Pending: 0, Ignored: 0, CompileError: 0, RuntimeError: 0 };
  for (const m of entry.mutants) c[m.status] = (c[m.status] ?? 0) + 1;
  return c;
}

const pct = (a, b) => (b > 0 ? `${((100 * a) / b).toFixed(1)} %` : '—');

/** One file's tally from `incremental` and its triage entry `t` (equivalent, killed by hand). */
function tally(file, incremental, t) {
  const c = counts(file, incremental);
  const detected = c.Killed + c.Timeout;
  const decided = detected + c.Survived + c.NoCoverage;
  const eq = t.equivalent ?? 0;
  const hand = t.killedByHand ?? 0;
  return { c, detected, decided, eq, hand, open: decided - eq - detected - hand };
}

const rows = [];
const dirs = new Map();
for (const [file, t] of Object.entries(triage.files)) {
  const { c, detected, decided, eq, hand, open } = tally(file, t.incremental, t);
  const dir = triage.directories.find((d) => file.startsWith(d.prefix))?.name ?? path.dirname(file);
  const d = dirs.get(dir) ?? { detected: 0, decided: 0, exDetected: 0, exDecided: 0, files: 0, partial: 0 };
  d.detected += detected;
  d.decided += decided;
  d.exDetected += detected + hand;
  d.exDecided += decided - eq;
  d.files++;
  if (t.partial) d.partial++;
  dirs.set(dir, d);
  rows.push({ file, c, detected, decided, eq, hand, open, partial: t.partial ?? '' });
}

const sources = (prefix) =>
  fs
    .readdirSync(path.join(root, prefix), { recursive: true })
    .map((f) => path.join(prefix, f).split(path.sep).join('/'))
    .filter((f) => f.endsWith('.ts'));

if (markdown) {
  console.log('| file | Stryker score (killed + timeout / decided) | survived, no coverage | equivalent | killed by hand | excl. equivalent | state |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| \`${r.file}\` | ${pct(r.detected, r.decided)} (${r.detected}/${r.decided}) | ${r.c.Survived}, ${r.c.NoCoverage} | ${r.eq} | ${r.hand} | ${pct(r.detected + r.hand, r.decided - r.eq)} | ${r.partial ? `partial: ${r.partial}` : r.open > 0 ? `${r.open} open` : 'done'} |`);
  }
  console.log('');
  console.log('| directory | files run (of .ts files) | Stryker score | excl. equivalent | aim |');
  console.log('|---|---|---|---|---|');
} else {
  for (const r of rows) console.log(`${r.file.padEnd(52)} ${pct(r.detected, r.decided).padStart(8)} ${String(r.detected).padStart(4)}/${String(r.decided).padEnd(4)} excl. eq ${pct(r.detected + r.hand, r.decided - r.eq).padStart(8)}${r.partial ? `  partial: ${r.partial}` : ''}${r.open > 0 ? `  ${r.open} open` : ''}`);
  console.log('');
}
for (const d of triage.directories) {
  const s = dirs.get(d.name);
  const all = sources(d.prefix.endsWith('.ts') ? path.dirname(d.prefix) : d.prefix).filter((f) => f.startsWith(d.prefix) && !(d.exclude ?? []).some((x) => f.startsWith(x)));
  const run = all.filter((f) => triage.files[f]);
  const notRun = all.filter((f) => !triage.files[f]);
  const line = s
    ? [d.name, `${run.length} of ${all.length}${s.partial ? ` (${s.partial} partly)` : ''}`, `${pct(s.detected, s.decided)} (${s.detected}/${s.decided})`, `${pct(s.exDetected, s.exDecided)} (${s.exDetected}/${s.exDecided})`, d.aim]
    : [d.name, `0 of ${all.length}`, '—', '—', d.aim];
  if (markdown) console.log(`| \`${line[0]}\` | ${line[1]} | ${line[2]} | ${line[3]} | ${line[4]} |`);
  else console.log(`${line[0].padEnd(30)} files ${line[1].padEnd(16)} score ${line[2].padEnd(22)} excl. eq ${line[3].padEnd(22)} aim ${line[4]}`);
  if (!markdown && notRun.length) console.log(`  not run: ${notRun.map((f) => path.basename(f)).join(', ')}`);
  if (markdown && notRun.length) console.log(`|  | not run: ${notRun.map((f) => `\`${path.basename(f)}\``).join(', ')} | | | |`);
}

// Sources changed since their run: the run's mutants are of the older text. Ranged re-runs of
// the changed lines (triage.json "supplements", each with its own incremental file) cover them.
const stale = rows.filter((r) => {
  const j = JSON.parse(fs.readFileSync(path.join(here, triage.files[r.file].incremental), 'utf8'));
  return j.files[r.file].source !== fs.readFileSync(path.join(root, r.file), 'utf8');
});
const covered = new Set((triage.supplements ?? []).flatMap((s) => Object.keys(s.files)));
if (stale.length) {
  console.log('');
  const note = (r) => (covered.has(r.file) ? ' (changed lines partly re-run: supplement)' : '');
  console.log(
    markdown
      ? `Changed since their run: ${stale.map((r) => `\`${r.file}\`${note(r)}`).join(', ')}.`
      : `changed since their run:\n  ${stale.map((r) => r.file + note(r)).join('\n  ')}`,
  );
}
for (const s of triage.supplements ?? []) {
  console.log('');
  console.log(markdown ? `**Supplement: ${s.name}** (\`${s.incremental}\`; ${s.why})` : `supplement: ${s.name} (${s.incremental})`);
  if (markdown) {
    console.log('');
    console.log('| file | Stryker score | survived, no coverage | equivalent | killed by hand | excl. equivalent | open |');
    console.log('|---|---|---|---|---|---|---|');
  }
  let tot = { detected: 0, decided: 0, eq: 0, hand: 0 };
  for (const [file, t] of Object.entries(s.files)) {
    const { c, detected, decided, eq, hand, open } = tally(file, s.incremental, t);
    tot = { detected: tot.detected + detected, decided: tot.decided + decided, eq: tot.eq + eq, hand: tot.hand + hand };
    if (markdown) console.log(`| \`${file}\` | ${pct(detected, decided)} (${detected}/${decided}) | ${c.Survived}, ${c.NoCoverage} | ${eq} | ${hand} | ${pct(detected + hand, decided - eq)} | ${open} |`);
    else console.log(`  ${file.padEnd(50)} ${pct(detected, decided).padStart(8)} ${String(detected).padStart(4)}/${String(decided).padEnd(4)} excl. eq ${pct(detected + hand, decided - eq).padStart(8)}${open > 0 ? `  ${open} open` : ''}`);
  }
  const line = `all: ${pct(tot.detected, tot.decided)} (${tot.detected}/${tot.decided}); excl. equivalent ${pct(tot.detected + tot.hand, tot.decided - tot.eq)} (${tot.detected + tot.hand}/${tot.decided - tot.eq})`;
  console.log(markdown ? `\n${line}` : `  ${line}`);
}
