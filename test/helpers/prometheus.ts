/**
 * Starts a real Prometheus (Debian's /usr/bin/prometheus) for end-to-end tests: temp config,
 * temp TSDB, a free port on 127.0.0.1, readiness by polling /-/ready (bounded), and a clean
 * stop that kills the process and removes the temp dir.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';

/** Absolute path of an executable: $PROMETHEUS_BIN / $PROMTOOL_BIN, then PATH, then /usr/bin. */
export function findBinary(name: 'prometheus' | 'promtool'): string | null {
  const env = process.env[`${name.toUpperCase()}_BIN`];
  if (env && isExecutable(env)) return env;
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const d of [...dirs, '/usr/bin', '/usr/local/bin']) {
    const p = path.join(d, name);
    if (isExecutable(p)) return p;
  }
  return null;
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** A free TCP port on 127.0.0.1 (bind port 0, read it back, release it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') {
        srv.close();
        reject(new Error('could not read the bound port'));
        return;
      }
      srv.close(() => resolve(addr.port));
    });
  });
}

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface PromSeries {
  metric: Record<string, string>;
  values: [number, string][];
}

export type QueryResult =
  | { resultType: 'vector'; result: PromSample[] }
  | { resultType: 'matrix'; result: PromSeries[] }
  | { resultType: 'scalar'; result: [number, string] }
  | { resultType: 'string'; result: [number, string] };

export interface PromAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing' | 'inactive';
  activeAt?: string;
  value: string;
}

export interface PromRule {
  type: 'alerting' | 'recording';
  name: string;
  query: string;
  duration?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  alerts?: PromAlert[];
  health: string;
  lastError?: string;
}

export interface PromRuleGroup {
  name: string;
  file: string;
  interval: number;
  rules: PromRule[];
}

export interface PromTarget {
  labels: Record<string, string>;
  scrapeUrl: string;
  health: 'up' | 'down' | 'unknown';
  lastError: string;
  lastScrape: string;
}

export interface StartPrometheusOptions {
  /** host:port of each exporter to scrape. */
  scrapeTargets: string[];
  scrapeIntervalSec: number;
  evaluationIntervalSec: number;
  /** Rule files to load (copied paths are used as given; make them absolute or cwd-relative). */
  ruleFiles: string[];
  /** Job name of the scrape config (default "cuzk"). */
  jobName?: string;
  /** How long to wait for /-/ready (default 30 s). */
  readyTimeoutMs?: number;
  /** Metrics path of the targets (default /metrics). */
  metricsPath?: string;
  /** Parent of the temp dir (default os.tmpdir()). */
  tmpParent?: string;
  /** Further command-line flags, e.g. ['--enable-feature=exemplar-storage']. */
  extraFlags?: string[];
}

/** One series' exemplars from /api/v1/query_exemplars. */
export interface PromExemplars {
  seriesLabels: Record<string, string>;
  exemplars: { labels: Record<string, string>; value: string; timestamp: number }[];
}

export interface RunningPrometheus {
  url: string;
  port: number;
  /** The temp dir holding prometheus.yml and the TSDB (removed by stop()). */
  dir: string;
  /** Instant query; `time` in seconds since the epoch (default: now). */
  query(expr: string, time?: number): Promise<QueryResult>;
  /** Instant query that must return a vector. */
  queryVector(expr: string, time?: number): Promise<PromSample[]>;
  /** Range query. */
  queryRange(expr: string, startSec: number, endSec: number, stepSec: number): Promise<PromSeries[]>;
  /** Active (pending and firing) alerts. */
  alerts(): Promise<PromAlert[]>;
  rules(): Promise<PromRuleGroup[]>;
  targets(): Promise<PromTarget[]>;
  /** /api/v1/query_exemplars over [startSec, endSec] (needs --enable-feature=exemplar-storage). */
  queryExemplars(expr: string, startSec: number, endSec: number): Promise<PromExemplars[]>;
  /**
   * Resolves once every configured target has been scraped successfully at least once.
   * Prometheus applies discovered targets on a ~5 s throttle, so the first scrape comes a
   * few seconds after start however short the scrape interval.
   */
  waitForTargetsUp(timeoutMs?: number): Promise<void>;
  /** Everything Prometheus wrote to stdout/stderr so far (for failure messages). */
  logs(): string;
  stop(): Promise<void>;
}

function yamlList(items: string[]): string {
  return items.length === 0 ? ' []' : '\n' + items.map((i) => `      - ${JSON.stringify(i)}`).join('\n');
}

/** Seconds as a Prometheus duration (which takes no decimals): 0.5 -> "500ms". */
function duration(sec: number): string {
  if (!(sec > 0)) throw new Error(`interval must be positive, got ${sec}`);
  return `${Math.round(sec * 1000)}ms`;
}

export function prometheusConfig(o: StartPrometheusOptions): string {
  const ruleFiles = o.ruleFiles.map((f) => path.resolve(f));
  return [
    'global:',
    `  scrape_interval: ${duration(o.scrapeIntervalSec)}`,
    `  scrape_timeout: ${duration(Math.min(10, o.scrapeIntervalSec))}`,
    `  evaluation_interval: ${duration(o.evaluationIntervalSec)}`,
    ruleFiles.length ? 'rule_files:\n' + ruleFiles.map((f) => `  - ${JSON.stringify(f)}`).join('\n') : 'rule_files: []',
    'scrape_configs:',
    `  - job_name: ${JSON.stringify(o.jobName ?? 'cuzk')}`,
    `    metrics_path: ${JSON.stringify(o.metricsPath ?? '/metrics')}`,
    '    static_configs:',
    `    - targets:${yamlList(o.scrapeTargets)}`,
    '',
  ].join('\n');
}

async function getJson<T>(url: string, init?: RequestInit): Promise<T> {
  const res = await fetch(url, init);
  const body = (await res.json()) as { status: string; data: T; error?: string; errorType?: string };
  if (body.status !== 'success') throw new Error(`${url}: ${body.errorType ?? res.status}: ${body.error ?? 'unknown error'}`);
  return body.data;
}

/** Polls `probe` until it returns true; rejects after timeoutMs (or as soon as `abort` returns a reason). */
export async function pollUntil(
  probe: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
  abort?: () => string | null,
  intervalMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = null;
  for (;;) {
    const reason = abort?.();
    if (reason) throw new Error(`${what}: ${reason}`);
    try {
      if (await probe()) return;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export async function startPrometheus(o: StartPrometheusOptions): Promise<RunningPrometheus> {
  const bin = findBinary('prometheus');
  if (!bin) throw new Error('prometheus binary not found (install Debian package "prometheus" or set PROMETHEUS_BIN)');
  const dir = fs.mkdtempSync(path.join(o.tmpParent ?? os.tmpdir(), 'cuzk-prom-'));
  const configPath = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(configPath, prometheusConfig(o));
  const dataDir = path.join(dir, 'data');
  fs.mkdirSync(dataDir);

  let output = '';
  let exited: string | null = null;
  const cleanupDir = (): void => fs.rmSync(dir, { recursive: true, force: true });

  // The port is free when probed; if another process grabs it first, Prometheus exits and we retry.
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    output = '';
    exited = null;
    const proc = spawn(
      bin,
      [
        `--config.file=${configPath}`,
        `--storage.tsdb.path=${dataDir}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--storage.tsdb.retention.time=1d',
        '--log.level=warn',
        ...(o.extraFlags ?? []),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exitPromise = new Promise<void>((resolve) => {
      proc.once('exit', (code, signal) => {
        exited = `prometheus exited (code ${code}, signal ${signal})`;
        resolve();
      });
      proc.once('error', (e) => {
        exited = `prometheus failed to start: ${e.message}`;
        resolve();
      });
    });
    proc.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const url = `http://127.0.0.1:${port}`;

    try {
      await pollUntil(
        async () => (await fetch(`${url}/-/ready`)).status === 200,
        o.readyTimeoutMs ?? 30000,
        `${url}/-/ready`,
        () => exited,
      );
    } catch (e) {
      if (exited === null) proc.kill('SIGKILL');
      await exitPromise;
      if (attempt < 2 && /address already in use/i.test(output)) continue;
      cleanupDir();
      throw new Error(`${(e as Error).message}\n--- prometheus output ---\n${output}`);
    }

    let stopped: Promise<void> | null = null;
    const stop = (): Promise<void> => {
      stopped ??= (async () => {
        if (exited === null) {
          proc.kill('SIGTERM');
          const timer = setTimeout(() => {
            if (exited === null) proc.kill('SIGKILL');
          }, 5000);
          await exitPromise;
          clearTimeout(timer);
        }
        cleanupDir();
      })();
      return stopped;
    };

    const query = (expr: string, time?: number): Promise<QueryResult> => {
      const params = new URLSearchParams({ query: expr });
      if (time !== undefined) params.set('time', String(time));
      return getJson<QueryResult>(`${url}/api/v1/query`, { method: 'POST', body: params });
    };

    const targets = async (): Promise<PromTarget[]> =>
      (await getJson<{ activeTargets: PromTarget[] }>(`${url}/api/v1/targets`)).activeTargets;

    return {
      url,
      port,
      dir,
      query,
      async queryVector(expr, time) {
        const r = await query(expr, time);
        if (r.resultType !== 'vector') throw new Error(`${expr}: expected a vector, got ${r.resultType}`);
        return r.result;
      },
      async queryRange(expr, startSec, endSec, stepSec) {
        const params = new URLSearchParams({ query: expr, start: String(startSec), end: String(endSec), step: String(stepSec) });
        const r = await getJson<QueryResult>(`${url}/api/v1/query_range`, { method: 'POST', body: params });
        if (r.resultType !== 'matrix') throw new Error(`${expr}: expected a matrix, got ${r.resultType}`);
        return r.result;
      },
      async alerts() {
        return (await getJson<{ alerts: PromAlert[] }>(`${url}/api/v1/alerts`)).alerts;
      },
      async rules() {
        return (await getJson<{ groups: PromRuleGroup[] }>(`${url}/api/v1/rules`)).groups;
      },
      targets,
      async queryExemplars(expr, startSec, endSec) {
        const params = new URLSearchParams({ query: expr, start: String(startSec), end: String(endSec) });
        return getJson<PromExemplars[]>(`${url}/api/v1/query_exemplars`, { method: 'POST', body: params });
      },
      async waitForTargetsUp(timeoutMs = 20000) {
        let last: PromTarget[] = [];
        try {
          await pollUntil(
            async () => {
              last = await targets();
              return last.length === o.scrapeTargets.length && last.every((t) => t.health === 'up');
            },
            timeoutMs,
            'every target to be scraped',
            () => exited,
            100,
          );
        } catch (e) {
          const state = last.map((t) => `${t.scrapeUrl}: ${t.health} ${t.lastError}`).join('; ');
          throw new Error(`${(e as Error).message} [${state || 'no targets yet'}]`);
        }
      },
      logs: () => output,
      stop,
    };
  }
}

/**
 * Writes a copy of a rule file with every alert's `for:` replaced by `forDuration` (e.g. "5s"),
 * for end-to-end tests that cannot wait minutes. The shipped file is not touched. Returns
 * the written path.
 */
export function writeRulesWithShortFor(srcPath: string, destPath: string, forDuration: string): string {
  if (!/^\d+(ms|s|m|h)$/.test(forDuration)) throw new Error(`not a Prometheus duration: ${forDuration}`);
  const src = fs.readFileSync(srcPath, 'utf8');
  let n = 0;
  const out = src.replace(/^(\s*)for:\s*\S+\s*$/gm, (_m, indent: string) => {
    n++;
    return `${indent}for: ${forDuration}`;
  });
  if (n === 0) throw new Error(`no "for:" lines in ${srcPath}`);
  fs.mkdirSync(path.dirname(path.resolve(destPath)), { recursive: true });
  fs.writeFileSync(destPath, out);
  return destPath;
}
