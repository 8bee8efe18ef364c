/**
 * Per-thread CPU time from /proc/self/task/<tid>/schedstat (Linux; nanoseconds on CPU).
 * Used to split a process's CPU between Node's own threads (the JS thread, V8 helpers,
 * the libuv pool that runs koffi's async calls) and the native engine's threads, which
 * are the ones that appear after the engine opens.
 */
import * as fs from 'node:fs';
import * as crypto from 'node:crypto';

export function threadCpuNs(): Map<number, number> | null {
  let tids: string[];
  try {
    tids = fs.readdirSync('/proc/self/task');
  } catch {
    return null;
  }
  const out = new Map<number, number>();
  for (const t of tids) {
    try {
      out.set(Number(t), Number(fs.readFileSync(`/proc/self/task/${t}/schedstat`, 'utf8').split(' ')[0]));
    } catch {
      // thread exited meanwhile
    }
  }
  return out;
}

/** Starts every libuv pool thread, so none appears later and is mistaken for the engine's. */
export async function warmThreadPool(): Promise<void> {
  const n = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  await Promise.all(Array.from({ length: n * 2 }, () => new Promise((resolve) => crypto.pbkdf2('x', 'y', 20000, 16, 'sha256', resolve))));
}

/** CPU ns spent between two readings by threads in `node` versus all others. */
export function splitCpu(before: Map<number, number>, after: Map<number, number>, nodeTids: Set<number>): { nodeNs: number; otherNs: number } {
  let nodeNs = 0;
  let otherNs = 0;
  for (const [tid, ns] of after) {
    const d = ns - (before.get(tid) ?? 0);
    if (nodeTids.has(tid)) nodeNs += d;
    else otherNs += d;
  }
  return { nodeNs, otherNs };
}
