/**
 * The attach poll cycle of two builds side by side, in one process (issue 21 item 4): this
 * build and another one (its compiled tree, e.g. a checkout of main built with `npx tsc -p
 * tsconfig.json`), each with its own MergedAttachSource on the same stand-in daemon
 * (attach-poll.ts' SurfacesDaemon: 64 workers, 50 jobs × 16 partitions, its TIMELINE log).
 * Every cycle is one second of the daemon, polled by both arms as benchAttachSurfaces polls
 * (/status, GetMetrics, GetStatus every 5th, ten log looks, the merge), the arm that goes
 * first alternating; CPU by process.cpuUsage() per part. Drift of a shared machine hits both
 * arms alike: the figure is the median over cycles of new/base, beside each arm's medians.
 * Not part of `npm run bench`; the other build's own grpc-js is used by its arm (separate
 * channels, separate connections).
 *
 * Run: node dist/bench/attach-ab.js OTHER/dist [--polls 1000] [--warmup 3000]
 *      (OTHER: a package root with package.json, proto/ and node_modules/ beside dist/)
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MergedAttachSource } from '../src/engine/sources/attach/merge';
import { silentLogger } from '../src/util/logger';
import { CycleClock, SurfacesDaemon } from './attach-poll';

interface Arm {
  name: string;
  src: MergedAttachSource;
  cycle: number[];
  parts: Record<'status' | 'metrics' | 'gstatus' | 'timeline' | 'merge', number[]>;
}

const cpuMs = (d: NodeJS.CpuUsage) => (d.user + d.system) / 1000;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : 0;
};

export async function attachAb(otherDist: string, polls: number, warmup: number): Promise<Record<string, unknown>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-bench-ab-'));
  const log = path.join(dir, 'cuzk.log');
  fs.writeFileSync(log, '');
  const daemon = await SurfacesDaemon.start({ jobs: 50, partitionsPerJob: 16, workers: 64, gpus: 8, log });
  const Other = (require(path.resolve(otherDist, 'src/engine/sources/attach/merge.js')) as { MergedAttachSource: typeof MergedAttachSource }).MergedAttachSource;
  const opts = { statusUrl: daemon.statusUrl, grpcAddress: daemon.grpcAddress, timelineFile: log, pollIntervalMs: 1000, grpcStatusIntervalMs: 5000, timeoutMs: 5000, maxBodyBytes: 16 << 20, logger: silentLogger };
  const arm = (name: string, src: MergedAttachSource): Arm => ({ name, src, cycle: [], parts: { status: [], metrics: [], gstatus: [], timeline: [], merge: [] } });
  const arms = [arm('base', new Other(opts)), arm('new', new MergedAttachSource(opts))];
  const cpu = async (f: () => unknown) => {
    const c0 = process.cpuUsage();
    await f();
    return cpuMs(process.cpuUsage(c0));
  };
  const clock = new CycleClock();
  try {
    for (const a of arms) await a.src.timeline!.poll();
    for (let i = 0; i < warmup + polls; i++) {
      const withStatus = i % 5 === 0;
      await daemon.step(withStatus);
      clock.cycle(i);
      for (const a of i % 2 === 0 ? arms : [arms[1], arms[0]]) {
        const s = a.src;
        const cs = await cpu(() => s.status!.pollOnce());
        const cm = await cpu(() => s.grpc!.pollMetrics());
        const cg = withStatus ? await cpu(() => s.grpc!.pollStatus()) : 0;
        let ct = 0;
        for (let k = 0; k < 10; k++) ct += await cpu(() => s.timeline!.poll());
        const cr = await cpu(() => s.refresh());
        if (!s.model.up) throw new Error(`${a.name}: a surface is down: ${s.model.errors.lastMessage}`);
        if (i < warmup) continue;
        a.cycle.push(cs + cm + cg + ct + cr);
        a.parts.status.push(cs);
        a.parts.metrics.push(cm);
        if (withStatus) a.parts.gstatus.push(cg);
        a.parts.timeline.push(ct);
        a.parts.merge.push(cr);
      }
    }
  } finally {
    clock.restore();
    daemon.stop();
    for (const a of arms) await a.src.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const r3 = (v: number) => Math.round(v * 1000) / 1000;
  const out: Record<string, unknown> = { polls, warmup, load: os.loadavg().map(r3) };
  for (const a of arms) {
    const refused = [...a.src.model.errors.entries()].filter(([, n]) => n > 0);
    out[a.name] = { cycleMedianMs: r3(median(a.cycle)), partsMedianMs: Object.fromEntries(Object.entries(a.parts).map(([k, v]) => [k, r3(median(v))])), refused };
  }
  out.ratioMedian = r3(median(arms[1].cycle.map((x, i) => x / arms[0].cycle[i])));
  return out;
}

if (require.main === module) {
  const arg = (name: string, d: number) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? Number(process.argv[i + 1]) : d;
  };
  const other = process.argv[2];
  if (!other || other.startsWith('--')) {
    process.stderr.write('usage: node dist/bench/attach-ab.js OTHER/dist [--polls N] [--warmup N]\n');
    process.exit(2);
  }
  attachAb(other, arg('--polls', 1000), arg('--warmup', 3000)).then(
    (r) => process.stdout.write(JSON.stringify(r) + '\n'),
    (e: Error) => {
      process.stderr.write(`attach A/B failed: ${e.stack ?? e.message}\n`);
      process.exit(1);
    },
  );
}
