/**
 * A small parser for the Prometheus text exposition format (what /metrics serves), for
 * assertions in tests: samples as {name, labels, value} (strict: a malformed line throws),
 * lookups (`value`: the one sample whose labels include the given ones; `find`: exactly
 * this label set, or undefined), sums, and `promtool check metrics` on a body when
 * promtool is installed.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

function parseValue(s: string, line: string): number {
  switch (s) {
    case '+Inf':
      return Infinity;
    case '-Inf':
      return -Infinity;
    case 'NaN':
      return NaN;
  }
  const v = Number(s);
  if (s === '' || Number.isNaN(v)) throw new Error(`bad sample value ${JSON.stringify(s)} in line ${JSON.stringify(line)}`);
  return v;
}

/** Parses one sample line (no comments). Throws on anything malformed. */
export function parseLine(line: string): Sample {
  const m = NAME.exec(line);
  if (!m) throw new Error(`no metric name in line ${JSON.stringify(line)}`);
  const name = m[0];
  let i = name.length;
  const labels: Record<string, string> = {};
  if (line[i] === '{') {
    i++;
    for (;;) {
      if (line[i] === '}') {
        i++;
        break;
      }
      const ln = LABEL_NAME.exec(line.slice(i));
      if (!ln) throw new Error(`bad label name at ${i} in line ${JSON.stringify(line)}`);
      i += ln[0].length;
      if (line[i] !== '=' || line[i + 1] !== '"') throw new Error(`expected =" at ${i} in line ${JSON.stringify(line)}`);
      i += 2;
      let v = '';
      for (;;) {
        const c = line[i];
        if (c === undefined) throw new Error(`unterminated label value in line ${JSON.stringify(line)}`);
        if (c === '"') {
          i++;
          break;
        }
        if (c === '\\') {
          const e = line[i + 1];
          if (e === 'n') v += '\n';
          else if (e === '\\' || e === '"') v += e;
          else throw new Error(`bad escape \\${e} in line ${JSON.stringify(line)}`);
          i += 2;
          continue;
        }
        v += c;
        i++;
      }
      if (ln[0] in labels) throw new Error(`duplicate label ${ln[0]} in line ${JSON.stringify(line)}`);
      labels[ln[0]] = v;
      if (line[i] === ',') i++;
      else if (line[i] !== '}') throw new Error(`expected , or } at ${i} in line ${JSON.stringify(line)}`);
    }
  }
  if (line[i] !== ' ') throw new Error(`expected a space before the value in line ${JSON.stringify(line)}`);
  const rest = line.slice(i + 1).trim().split(/\s+/);
  if (rest.length > 2) throw new Error(`trailing text in line ${JSON.stringify(line)}`);
  return { name, labels, value: parseValue(rest[0], line) };
}

/** Every sample in an exposition body, in order. */
export function parse(body: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of body.split('\n')) {
    const line = raw.trimEnd();
    if (line === '' || line.startsWith('#')) continue;
    out.push(parseLine(line));
  }
  return out;
}

const includes = (s: Sample, name: string, labels: Record<string, string>) =>
  s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v);

const exactly = (s: Sample, name: string, labels: Record<string, string>) =>
  includes(s, name, labels) && Object.keys(s.labels).length === Object.keys(labels).length;

/** Samples of `name` whose labels include `labels`. */
export function select(body: string | Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  const samples = typeof body === 'string' ? parse(body) : body;
  return samples.filter((s) => includes(s, name, labels));
}

/** The one sample of `name` with these labels included; throws if none or several. */
export function value(body: string | Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = select(body, name, labels);
  if (found.length !== 1) throw new Error(`expected one ${name}${JSON.stringify(labels)}, found ${found.length}`);
  return found[0].value;
}

/**
 * The value of the series `name` with exactly this label set, or undefined when the body
 * has no such series (to assert that a series is gone). Throws if it appears twice.
 */
export function find(body: string | Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const samples = typeof body === 'string' ? parse(body) : body;
  const hits = samples.filter((s) => exactly(s, name, labels));
  if (hits.length > 1) throw new Error(`series ${name}${JSON.stringify(labels)} appears ${hits.length} times`);
  return hits[0]?.value;
}

/** Sum of the values of `name` over samples whose labels include `labels`. */
export function sum(body: string | Sample[], name: string, labels: Record<string, string> = {}): number {
  return select(body, name, labels).reduce((a, s) => a + s.value, 0);
}

/** promtool's path ($PROMTOOL_BIN, PATH, /usr/bin), or null when it is not installed. */
export function promtoolPath(): string | null {
  const candidates = [process.env.PROMTOOL_BIN, ...(process.env.PATH ?? '').split(path.delimiter).map((d) => d && path.join(d, 'promtool')), '/usr/bin/promtool'];
  for (const c of candidates) {
    if (!c) continue;
    try {
      fs.accessSync(c, fs.constants.X_OK);
      if (fs.statSync(c).isFile()) return c;
    } catch {
      // next
    }
  }
  return null;
}

export type PromtoolResult = { skipped: string } | { skipped?: undefined; ok: boolean; output: string };

/** Runs `promtool check metrics` on a body: ok when it exits 0 and reports nothing. */
export function promtoolCheckMetrics(body: string): PromtoolResult {
  const bin = promtoolPath();
  if (!bin) return { skipped: 'promtool is not installed (set PROMTOOL_BIN or install the Debian package prometheus); skipping the promtool check' };
  const r = spawnSync(bin, ['check', 'metrics'], { input: body, encoding: 'utf8', timeout: 20_000 });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
  return { ok: r.status === 0 && output === '', output: output || (r.error ? String(r.error) : '') };
}
