/**
 * A simulated fleet for e2e tests (issue 22): one `cuzk-exporter simulate --simulate.fleet-file`
 * process running every box (the built CLI, its own process group), the boxes' addresses read
 * from its --simulate.addresses-file, a Curio-like gRPC client per box (the conformance rows'
 * WorkloadCtx, so a row's workload runs against a box of the fleet), and one
 * `cuzk-exporter fleet` over a targets file. stop() kills both groups (SIGKILL) and waits.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import YAML from 'yaml';
import type { Kind, Truth, WorkloadCtx } from '../conformance/harness';
import { getJson, grpcClient, waitFor } from '../sim/sim-process';
import { CLI } from './cli-run';

const PROTO: Record<Kind, string> = { 'porep-c2': 'POREP_SEAL_COMMIT', 'snap-update': 'SNAP_DEALS_UPDATE', 'window-post': 'WINDOW_POST_PARTITION', 'winning-post': 'WINNING_POST' };

/** One box of the fleet file (src/sim/fleet.ts: every key but name optional). */
export interface FleetFileBox {
  name: string;
  gpus?: number;
  workers_per_gpu?: number;
  time_scale?: number;
  faults?: Record<string, unknown>;
  surfaces?: ('grpc' | 'status' | 'timeline')[];
  split_prove?: boolean;
  pipeline?: boolean;
}

/** What simulate's addresses file says of a box. */
export interface BoxAddresses {
  name: string;
  grpc: string | null;
  status: string | null;
  truth: string | null;
  timeline: string | null;
}

export interface Proc {
  child: ChildProcess;
  output(): string;
}

/** Spawns `node CLI args` in its own process group, keeping the last 64 KiB of its output. */
export function spawnCli(args: string[]): Proc {
  const child = spawn(process.execPath, [CLI, ...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    if (out.length > 128 * 1024) out = out.slice(-64 * 1024);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, output: () => out };
}

/** SIGKILLs a process group and waits for its leader to exit. */
export async function killGroup(p: Proc | null | undefined): Promise<void> {
  const c = p?.child;
  if (!c || c.exitCode !== null || c.signalCode !== null || c.pid === undefined) return;
  const exited = new Promise((r) => c.once('exit', r));
  try {
    process.kill(-c.pid, 'SIGKILL');
  } catch {
    return;
  }
  await exited;
}

/**
 * Starts every box in one simulate process (no own workload: the test drives each box over
 * gRPC, after the exporter has attached, so nothing it counts happened before it looked).
 */
export async function startSimFleet(dir: string, boxes: FleetFileBox[], flags: string[], timeoutMs = 120_000): Promise<{ proc: Proc; addrs: Map<string, BoxAddresses> }> {
  const fleetFile = path.join(dir, 'fleet.yml');
  fs.writeFileSync(fleetFile, YAML.stringify({ boxes }));
  const addrFile = path.join(dir, 'addresses.json');
  const proc = spawnCli([
    'simulate',
    '--simulate.fleet-file', fleetFile,
    '--simulate.addresses-file', addrFile,
    '--simulate.grpc-listen', '127.0.0.1:0',
    '--simulate.status-listen', '127.0.0.1:0',
    '--simulate.truth-listen', '127.0.0.1:0',
    '--simulate.timeline-file', path.join(dir, 'cuzk.log'),
    '--workload.concurrency', '0',
    '--shutdown.grace', '0s',
    '--log.level', 'warn',
    ...flags,
  ]);
  try {
    await waitFor('simulate: every box listening', () => {
      if (proc.child.exitCode !== null) throw new Error(`simulate exited (${proc.child.exitCode}): ${proc.output()}`);
      return proc.output().includes('Press Ctrl-C to stop.') && fs.existsSync(addrFile);
    }, timeoutMs);
  } catch (e) {
    await killGroup(proc);
    throw e;
  }
  const list = JSON.parse(fs.readFileSync(addrFile, 'utf8')) as BoxAddresses[];
  return { proc, addrs: new Map(list.map((a) => [a.name, a])) };
}

/** A row's WorkloadCtx against one box of the fleet (no restart: the box shares its process). */
export function boxWorkload(name: string, a: BoxAddresses): { ctx: WorkloadCtx; close(): void } {
  if (!a.grpc || !a.truth) throw new Error(`${name}: a workload needs the box's gRPC and truth`);
  const client = grpcClient(a.grpc);
  const request = (kind: Kind, id: string, extra: Record<string, unknown> = {}) => ({ submit: { request_id: id, proof_kind: PROTO[kind], ...extra } });
  const ctx: WorkloadCtx = {
    rpc: (m, r, d) => client.rpc(m, r, d),
    prove: async (kind, id, extra) => (await client.rpc('Prove', request(kind, id, extra), 300_000)).result as Record<string, unknown>,
    proveDetached: (kind, id, extra) => void client.rpc('Prove', request(kind, id, extra), 600_000).catch(() => undefined),
    truthUntil: (what, pred, timeoutMs = 180_000) =>
      waitFor(`${name}: ${what}`, async () => {
        const t = await getJson(a.truth!);
        return pred(t) ? t : undefined;
      }, timeoutMs),
    restart: () => Promise.reject(new Error(`${name}: a box of a fleet cannot be restarted alone`)),
  };
  return { ctx, close: () => client.close() };
}

export const truthOf = (a: BoxAddresses): Promise<Truth> => getJson(a.truth!);

/** Starts `cuzk-exporter fleet` on a free port; resolves with its base URL once it listens. */
export async function startFleetExporter(targetsFile: string, flags: string[] = [], timeoutMs = 60_000): Promise<{ proc: Proc; url: string }> {
  const proc = spawnCli(['fleet', '--targets.file', targetsFile, '--web.listen-address', '127.0.0.1:0', ...flags]);
  try {
    const url = await waitFor('the fleet exporter listening', () => {
      if (proc.child.exitCode !== null) throw new Error(`fleet exited (${proc.child.exitCode}): ${proc.output()}`);
      return /fleet page: +(http:\/\/\S+)\//.exec(proc.output())?.[1];
    }, timeoutMs);
    return { proc, url };
  } catch (e) {
    await killGroup(proc);
    throw e;
  }
}
