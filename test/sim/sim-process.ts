/**
 * Runs `cuzk-exporter simulate` as users run it (node dist/src/cli/main.js, built by the
 * jest global setup) in its own process group, reads the addresses it prints, and gives a
 * promise-based gRPC client (@grpc/grpc-js, the proto from the package).
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadProvingEngine } from '../../src/sim/proto';

const CLI = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');

export interface SimProcess {
  child: ChildProcess;
  grpcAddress: string;
  statusUrl: string | null;
  truthUrl: string | null;
  stdout(): string;
  stderr(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const started: ChildProcess[] = [];

export function startSim(args: string[], timeoutMs = 30_000): Promise<SimProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'simulate', ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    started.push(child);
    let out = '';
    let err = '';
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
    const timer = setTimeout(() => reject(new Error(`simulate did not start within ${timeoutMs} ms\n${out}\n${err}`)), timeoutMs);
    child.stderr!.on('data', (d) => (err += d));
    child.stdout!.on('data', (d) => {
      out += d;
      if (!out.includes('Press Ctrl-C to stop.')) return;
      clearTimeout(timer);
      const grpcAddr = /^\s+grpc:\s+(\S+)/m.exec(out)![1];
      const status = /^\s+status:\s+(http:\/\/\S+)/m.exec(out);
      const truth = /^\s+truth:\s+(http:\/\/\S+)/m.exec(out);
      resolve({ child, grpcAddress: grpcAddr, statusUrl: status ? status[1] : null, truthUrl: truth ? truth[1] : null, stdout: () => out, stderr: () => err, exit });
    });
    void exit.then((r) => {
      clearTimeout(timer);
      reject(new Error(`simulate exited early (${r.code ?? r.signal}): ${err}`));
    });
  });
}

/** Kills every simulate process (and its group) that is still running. */
export function killAll(): void {
  for (const c of started.splice(0)) {
    if (c.exitCode !== null || c.signalCode !== null || c.pid === undefined) continue;
    try {
      process.kill(-c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

export type Rpc = (method: string, req: Record<string, unknown>, deadlineMs?: number) => Promise<Record<string, unknown>>;

export function grpcClient(address: string): { rpc: Rpc; close(): void } {
  const Ctor = loadProvingEngine();
  const client = new Ctor(address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
  const rpc: Rpc = (method, req, deadlineMs = 20_000) =>
    new Promise((resolve, reject) => {
      client[method](req, { deadline: Date.now() + deadlineMs }, (e: grpc.ServiceError | null, res: Record<string, unknown>) => (e ? reject(e) : resolve(res)));
    });
  return { rpc, close: () => client.close() };
}

/** Polls `check` until it returns a value other than undefined/false (a condition, not a sleep). */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function getJson(url: string): Promise<Record<string, any>> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
  return (await res.json()) as Record<string, any>;
}
