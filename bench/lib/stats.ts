/**
 * Small helpers shared by the benchmarks: quantiles, run summaries, clocks, machine notes.
 * Quantiles are nearest-rank (the value at rank ceil(p * n)), so a p99 is always a value
 * that was actually measured.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export function quantile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
}

export const median = (xs: readonly number[]): number => quantile(xs, 0.5);

export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** Rounds to `digits` significant digits (keeps results files readable). */
export function sig(v: number, digits = 4): number {
  if (!Number.isFinite(v) || v === 0) return v;
  return Number(v.toPrecision(digits));
}

/** A figure measured once per run: every run's value, and their median. */
export interface Figure {
  unit: string;
  runs: number;
  median: number;
  min: number;
  max: number;
  values: number[];
}

export function figure(unit: string, values: readonly number[], digits = 4): Figure {
  return {
    unit,
    runs: values.length,
    median: sig(median(values), digits),
    min: sig(Math.min(...values), digits),
    max: sig(Math.max(...values), digits),
    values: values.map((v) => sig(v, digits)),
  };
}

/** Latency distribution of one run. */
export interface Dist {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

export function dist(xs: readonly number[], digits = 4): Dist {
  return { n: xs.length, p50: sig(quantile(xs, 0.5), digits), p99: sig(quantile(xs, 0.99), digits), max: sig(Math.max(...xs), digits) };
}

/** Monotonic time in ms (float). */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Lets pending I/O callbacks run (one macrotask turn). */
export function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function versionOf(pkg: string): string {
  try {
    const file = require.resolve(`${pkg}/package.json`);
    return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    try {
      // Packages whose exports map hides package.json: walk up from the entry point.
      let dir = path.dirname(require.resolve(pkg));
      for (let i = 0; i < 5; i++, dir = path.dirname(dir)) {
        const f = path.join(dir, 'package.json');
        if (fs.existsSync(f)) {
          const j = JSON.parse(fs.readFileSync(f, 'utf8')) as { name?: string; version: string };
          if (j.name === pkg) return j.version;
        }
      }
    } catch {
      // fall through
    }
    return 'unknown';
  }
}

export interface Machine {
  cpu: string;
  cores: number;
  node: string;
  v8: string;
  platform: string;
  kernel: string;
  memoryGiB: number;
  /** 1-minute load average when the run started and ended (a shared box is noisy). */
  loadavgStart: number;
  loadavgEnd?: number;
  packages: Record<string, string>;
}

export function machine(): Machine {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model?.trim() ?? 'unknown',
    cores: cpus.length,
    node: process.version,
    v8: process.versions.v8,
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    loadavgStart: Math.round(os.loadavg()[0] * 100) / 100,
    packages: Object.fromEntries(
      ['koffi', 'prom-client', '@opentelemetry/sdk-metrics', '@opentelemetry/exporter-prometheus'].map((p) => [p, versionOf(p)]),
    ),
  };
}

/** A deterministic pseudo-random generator (mulberry32), for reproducible workloads. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Blocks the JS thread (not the native threads) for `ms` without running callbacks. */
export function blockFor(ms: number): void {
  Atomics.wait(SLEEP_CELL, 0, 0, ms);
}
const SLEEP_CELL = new Int32Array(new SharedArrayBuffer(4));

/** Parses a Prometheus text body into `name{labels}` -> value (comments skipped). */
export function parseSamples(body: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of body.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    const key = line.slice(0, sp);
    const v = line.slice(sp + 1);
    out.set(canonicalKey(key), v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v));
  }
  return out;
}

/** `name{b="2",a="1"}` -> `name{a="1",b="2"}` (label order is not significant). */
export function canonicalKey(key: string): string {
  const brace = key.indexOf('{');
  if (brace < 0) return key;
  const name = key.slice(0, brace);
  const labels = key.slice(brace + 1, -1).match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? [];
  return `${name}{${labels.sort().join(',')}}`;
}
