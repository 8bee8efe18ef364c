/**
 * What the hostile tests measure of an exporter process while it is attacked: /-/healthy
 * latency (one request after another over one keep-alive connection), its CPU time and its
 * peak RSS from /proc.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';

function timedGet(agent: http.Agent, url: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(performance.now() - t0));
      })
      .on('error', reject)
      .setTimeout(60_000);
  });
}

/** The p-th percentile (nearest rank) of `xs`. */
export const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

/** Latencies of /-/healthy, one request after another, while `during()` runs. */
export async function probe(url: string, during: () => Promise<void>): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const out: number[] = [];
  let going = true;
  const loop = (async () => {
    while (going) out.push(await timedGet(agent, `${url}/-/healthy`));
  })();
  try {
    await during();
  } finally {
    going = false;
    await loop;
    agent.destroy();
  }
  return out;
}

/** CPU time the process has used (user + system, ms): unlike latency, blind to a busy host. */
export function cpuMs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** Peak resident set (VmHWM), MiB. */
export function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) / 1024;
}
