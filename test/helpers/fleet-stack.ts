/**
 * deploy/fleet/ as a test runs it: the shipped prometheus.yml and alertmanager.yml, with their
 * loopback defaults (fleet exporter 127.0.0.1:9464, VictoriaMetrics 127.0.0.1:8428,
 * Alertmanager 127.0.0.1:9093, the pager webhook 127.0.0.1:5001/cuzk-pages) replaced by free
 * ports, the rule files made absolute and the intervals shortened, in a temp dir; then a real
 * VictoriaMetrics, Alertmanager and Prometheus (Debian's binaries), each in its own process
 * group, ready when their health endpoints say so. stop() kills them all (SIGKILL, by group)
 * and removes the dir. Every replaced string must occur in the shipped file, so a config
 * edit that the harness no longer matches fails loudly instead of testing something else.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findBinary, freePort, pollUntil } from './prometheus';

export const DEPLOY_FLEET = path.join(__dirname, '..', '..', 'deploy', 'fleet');

export interface FleetStackOptions {
  /** host:port of the `cuzk-exporter fleet` under test. */
  fleetExporter: string;
  scrapeIntervalSec?: number;
  evaluationIntervalSec?: number;
  /** Where Alertmanager's pager receiver posts (default: nowhere useful). */
  webhookUrl?: string;
  /** Start Alertmanager (default true). */
  alertmanager?: boolean;
  /** Rule files replacing the shipped ones (e.g. with `for:` shortened); default the shipped ones. */
  ruleFiles?: string[];
}

export interface QueryApi {
  url: string;
  /** Instant query (at `time`, Unix seconds, or now); throws on an error answer. */
  query(expr: string, time?: number): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
}

export interface FleetStack {
  dir: string;
  prometheus: QueryApi;
  victoria: QueryApi;
  alertmanager: { url: string } | null;
  logs(): string;
  stop(): Promise<void>;
}

export function fleetStackSkipReason(): string | null {
  for (const b of ['prometheus', 'victoria-metrics', 'prometheus-alertmanager']) {
    if (!whichBin(b)) return `fleet stack tests skipped: ${b} not found (apt-get install prometheus victoria-metrics prometheus-alertmanager)`;
  }
  return null;
}

function whichBin(name: string): string | null {
  if (name === 'prometheus') return findBinary('prometheus');
  for (const d of [...(process.env.PATH ?? '').split(path.delimiter), '/usr/bin']) {
    const p = path.join(d, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return null;
}

/** Replaces every occurrence of `from`, which must occur. */
function must(text: string, from: string, to: string, file: string): string {
  if (!text.includes(from)) throw new Error(`deploy/fleet/${file} no longer contains ${JSON.stringify(from)}: update test/helpers/fleet-stack.ts`);
  return text.split(from).join(to);
}

function api(base: string, prefix = ''): QueryApi {
  return {
    url: base,
    async query(expr, time) {
      const at = time === undefined ? '' : `&time=${time}`;
      const res = await fetch(`${base}${prefix}/api/v1/query?query=${encodeURIComponent(expr)}${at}`);
      const body = (await res.json()) as { status: string; error?: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] } };
      if (body.status !== 'success') throw new Error(`${expr}: ${body.error ?? res.status}`);
      return body.data!.result;
    },
  };
}

export async function startFleetStack(o: FleetStackOptions): Promise<FleetStack> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fleet-stack-'));
  const children: { name: string; child: ChildProcess; out: string[] }[] = [];
  const [vmPort, amPort, promPort, amCluster] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const withAm = o.alertmanager !== false;
  const stop = async () => {
    // Prometheus first: its remote-write queue waits for VictoriaMetrics at shutdown otherwise.
    for (const c of [...children].reverse()) {
      if (c.child.exitCode === null && c.child.signalCode === null && c.child.pid !== undefined) {
        try {
          process.kill(-c.child.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    await Promise.all(children.map((c) => (c.child.exitCode === null && c.child.signalCode === null ? new Promise((r) => c.child.once('exit', r)) : null)));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const run = (name: string, bin: string, args: string[]) => {
    const child = spawn(bin, args, { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: string[] = [];
    const keep = (d: Buffer) => {
      out.push(d.toString());
      if (out.length > 200) out.splice(0, 100);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    children.push({ name, child, out });
  };
  const logs = () => children.map((c) => `== ${c.name} (${c.child.exitCode ?? c.child.signalCode ?? 'running'})\n${c.out.join('').slice(-3000)}`).join('\n');
  try {
    // Prometheus' config, as shipped, pointed at this test's ports and files.
    const scrape = o.scrapeIntervalSec ?? 1;
    const evalSec = o.evaluationIntervalSec ?? 1;
    let prom = fs.readFileSync(path.join(DEPLOY_FLEET, 'prometheus.yml'), 'utf8');
    prom = must(prom, '127.0.0.1:9464', o.fleetExporter, 'prometheus.yml');
    prom = must(prom, '127.0.0.1:8428', `127.0.0.1:${vmPort}`, 'prometheus.yml');
    prom = must(prom, '127.0.0.1:9093', `127.0.0.1:${amPort}`, 'prometheus.yml');
    prom = must(prom, '  scrape_interval: 15s', `  scrape_interval: ${scrape}s`, 'prometheus.yml');
    prom = must(prom, '  evaluation_interval: 15s', `  evaluation_interval: ${evalSec}s`, 'prometheus.yml');
    prom = must(prom, '        refresh_interval: 30s', '        refresh_interval: 1s', 'prometheus.yml');
    const shipped = ['cuzk-alerts.yml', 'cuzk-fleet.yml'].map((f) => path.resolve(DEPLOY_FLEET, '..', '..', 'dashboards', 'rules', f));
    const rules = o.ruleFiles ?? shipped;
    prom = must(prom, '  - ../../dashboards/rules/cuzk-alerts.yml\n  - ../../dashboards/rules/cuzk-fleet.yml\n', rules.map((f) => `  - ${JSON.stringify(path.resolve(f))}\n`).join(''), 'prometheus.yml');
    // Remote-write batches sent at once in a test, not after the default 5 s.
    prom = must(prom, '  - url: http://127.0.0.1:' + vmPort + '/api/v1/write\n', `  - url: http://127.0.0.1:${vmPort}/api/v1/write\n    queue_config: {batch_send_deadline: 1s}\n`, 'prometheus.yml');
    fs.writeFileSync(path.join(dir, 'prometheus.yml'), prom);

    run('victoria-metrics', whichBin('victoria-metrics')!, [
      `-storageDataPath=${path.join(dir, 'vm')}`,
      `-httpListenAddr=127.0.0.1:${vmPort}`,
      '-retentionPeriod=1d',
      // Queries see samples a second after they arrive (default 30 s: a test would wait that long).
      '-search.latencyOffset=1s',
      '-search.disableCache',
      '-loggerLevel=WARN',
    ]);
    if (withAm) {
      let am = fs.readFileSync(path.join(DEPLOY_FLEET, 'alertmanager.yml'), 'utf8');
      am = must(am, 'http://127.0.0.1:5001/cuzk-pages', o.webhookUrl ?? 'http://127.0.0.1:9/cuzk-pages', 'alertmanager.yml');
      fs.writeFileSync(path.join(dir, 'alertmanager.yml'), am);
      run('alertmanager', whichBin('prometheus-alertmanager')!, [
        `--config.file=${path.join(dir, 'alertmanager.yml')}`,
        `--storage.path=${path.join(dir, 'am')}`,
        `--web.listen-address=127.0.0.1:${amPort}`,
        `--cluster.listen-address=127.0.0.1:${amCluster}`,
        '--cluster.peer-timeout=1s',
        '--log.level=warn',
      ]);
    }
    run('prometheus', findBinary('prometheus')!, [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'prometheus-data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
      '--log.level=warn',
    ]);
    const ready = async (name: string, url: string) => {
      const c = children.find((x) => x.name === name)!;
      await pollUntil(
        async () => {
          try {
            return (await fetch(url)).status === 200;
          } catch {
            return false;
          }
        },
        60_000,
        `${name} ready`,
        () => (c.child.exitCode !== null ? `${name} exited (${c.child.exitCode})` : null),
      );
    };
    await ready('victoria-metrics', `http://127.0.0.1:${vmPort}/health`);
    if (withAm) await ready('alertmanager', `http://127.0.0.1:${amPort}/-/ready`);
    await ready('prometheus', `http://127.0.0.1:${promPort}/-/ready`);
  } catch (e) {
    const l = logs();
    await stop();
    throw new Error(`${(e as Error).message}\n${l}`);
  }
  return {
    dir,
    prometheus: api(`http://127.0.0.1:${promPort}`),
    victoria: api(`http://127.0.0.1:${vmPort}`),
    alertmanager: withAm ? { url: `http://127.0.0.1:${amPort}` } : null,
    logs,
    stop,
  };
}
