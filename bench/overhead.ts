/**
 * Overhead: reference-prover throughput with the exporter ingesting versus with events
 * disabled natively (config `events: false`: nothing is emitted, nothing ingested).
 *
 * Both arms run the same workload: SnapDeals proofs (16 partitions each), kept `inFlight`
 * deep by a 5 ms top-up timer that reads the native counters (the same JS work in both
 * arms). Throughput = partitions completed per second from the native counters over a
 * fixed window after a warm-up. The exporter arm has events on, Telemetry, our HTTP
 * server and a scrape of /metrics every second (15x Prometheus' default rate) from a
 * child process, as Prometheus scrapes from its own (before issue 21 the scraping client
 * ran in this process, so its CPU was counted as the exporter's).
 *
 * Arms alternate A B B A ... so drift on a shared machine hits both; the figure is the
 * median over pairs of the paired difference (off - on) / off.
 */
import * as http from 'node:http';
import { CTR } from '../src/engine/sources/native/abi';
import type { EngineConfig } from '../src/engine/sources/native/native-engine';
import { startServer } from '../src/exporter/server';
import { Telemetry } from '../src/exporter/telemetry';
import { silentLogger } from '../src/util/logger';
import { openEngine } from './lib/engine';
import { LoadClient } from './lib/load-client';
import { Figure, figure, sleep } from './lib/stats';
import { splitCpu, threadCpuNs, warmThreadPool } from './lib/threads';

export interface OverheadOptions {
  /** Pairs (exporter on, events off) per backend. */
  pairs?: number;
  cpuWindowMs?: number;
  simWindowMs?: number;
  warmupMs?: number;
  log?: (msg: string) => void;
}

interface ArmResult {
  partitionsPerSecond: number;
  /** Process CPU (all threads: prover + JS) per completed partition, ms. */
  cpuMsPerPartition: number;
  /** CPU of Node's threads (JS thread, V8 helpers, libuv pool running koffi's async wait), % of one core. */
  nodeCpuPercent: number;
  /** CPU of the native engine's threads, % of one core. */
  engineCpuPercent: number;
  eventsPerSecond: number;
  /** Non-empty drain calls per second, exporter arm (a drain takes several when events keep arriving meanwhile). */
  batchesPerSecond: number;
  /** Drains that applied events (linger ticks, wakes of the blocking wait, scrapes) per second, exporter arm. */
  drainsPerSecond: number;
  /** Blocking waits armed on koffi's pool per second, exporter arm. */
  waitsPerSecond: number;
  scrapes: number;
}

export interface BackendOverhead {
  config: EngineConfig;
  windowMs: number;
  pairs: number;
  exporterOn: Figure;
  eventsOff: Figure;
  /** (off - on) / off per pair, in percent: positive = the exporter costs throughput. */
  overheadPercent: Figure;
  /** Process CPU per partition, ms (all threads), and the paired difference (on - off) / off in %. */
  cpuMsPerPartitionOn: Figure;
  cpuMsPerPartitionOff: Figure;
  cpuOverheadPercent: Figure;
  /** CPU of Node's threads, % of one core, per arm; the exporter's share is the difference. */
  nodeCpuPercentOn: Figure;
  nodeCpuPercentOff: Figure;
  /**
   * CPU accounting estimate of the overhead, per pair: the Node-thread CPU the exporter adds
   * (on - off) as a share of the process's CPU in the exporter arm, in %. On a CPU-bound
   * prover this is the throughput it takes; it is far less noisy than wall throughput.
   */
  cpuShareOverheadPercent: Figure;
  eventsPerSecond: Figure;
  batchesPerSecond: Figure;
  /** Absent in results from before issue 21 (drains were counted as batches). */
  drainsPerSecond?: Figure;
  waitsPerSecond?: Figure;
  scrapesPerWindow: number;
}

export interface OverheadResult {
  method: string;
  cpu: BackendOverhead;
  sim: BackendOverhead;
}

function sumKinds(words: Float64Array, field: number): number {
  let s = 0;
  for (let k = 0; k < words[CTR.KINDS]; k++) s += words[CTR.HDR_WORDS + k * CTR.KIND_WORDS + field];
  return s;
}

async function runArm(base: EngineConfig, exporter: boolean, windowMs: number, warmupMs: number, inFlight: number, nodeTids: Set<number>, client: LoadClient): Promise<ArmResult> {
  const engine = openEngine({ ...base, events: exporter });
  const telemetry = exporter ? new Telemetry(engine, { version: 'bench', logger: silentLogger }) : null;
  const server = telemetry
    ? await startServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', source: engine, telemetry, logger: silentLogger, version: 'bench' })
    : null;
  let submitted = 0;
  const topUp = () => {
    const { words } = engine.readCounters();
    const done = sumKinds(words, CTR.K_PROOFS_COMPLETED) + sumKinds(words, CTR.K_PROOFS_FAILED) + sumKinds(words, CTR.K_PROOFS_CANCELLED);
    while (submitted - done < inFlight) {
      engine.submit('snap-update');
      submitted++;
    }
  };
  topUp();
  const timer = setInterval(topUp, 5);
  // One keep-alive connection from another process, a scrape per second, as Prometheus
  // scrapes; the first runs now, in the warm-up, so connection setup and first-use
  // compilation stay out of the window. Counted on the server side.
  let scrapes = 0;
  const scraping = server
    ? client.run({ url: `${server.url}/metrics`, requests: Math.ceil((warmupMs + windowMs) / 1000) + 1, concurrency: 1, warmup: 0, intervalMs: 1000 })
    : null;
  if (telemetry) {
    const collection = telemetry.collection.bind(telemetry);
    telemetry.collection = () => (scrapes++, collection());
  }
  try {
    await sleep(warmupMs);
    const a = engine.readCounters();
    const cpu0 = process.cpuUsage();
    const th0 = threadCpuNs();
    const s0 = scrapes;
    const batches0 = engine.stats.batches;
    const drains0 = engine.stats.drains;
    const waits0 = engine.stats.waits;
    await sleep(windowMs);
    const b = engine.readCounters();
    const cpu = process.cpuUsage(cpu0);
    const th1 = threadCpuNs();
    const split = th0 && th1 ? splitCpu(th0, th1, nodeTids) : { nodeNs: NaN, otherNs: NaN };
    const dt = (b.nowNs - a.nowNs) / 1e9;
    const parts = sumKinds(b.words, CTR.K_PARTS_COMPLETED) - sumKinds(a.words, CTR.K_PARTS_COMPLETED);
    return {
      partitionsPerSecond: parts / dt,
      cpuMsPerPartition: (cpu.user + cpu.system) / 1000 / parts,
      nodeCpuPercent: (split.nodeNs / 1e9 / dt) * 100,
      engineCpuPercent: (split.otherNs / 1e9 / dt) * 100,
      eventsPerSecond: (b.lastSeq - a.lastSeq) / dt,
      batchesPerSecond: (engine.stats.batches - batches0) / dt,
      drainsPerSecond: (engine.stats.drains - drains0) / dt,
      waitsPerSecond: (engine.stats.waits - waits0) / dt,
      scrapes: scrapes - s0,
    };
  } finally {
    clearInterval(timer);
    // The scraper's last request ends after the window; every answer must have been a 200.
    const done = await scraping;
    if (done && (done.status.length !== 1 || done.status[0] !== 200)) throw new Error(`overhead: scrapes answered ${done.status.join(', ')}`);
    await server?.close();
    await telemetry?.shutdown();
    await engine.close();
  }
}

async function backend(name: 'cpu' | 'sim', config: EngineConfig, pairs: number, windowMs: number, warmupMs: number, inFlight: number, nodeTids: Set<number>, client: LoadClient, log: (m: string) => void): Promise<BackendOverhead> {
  const on: number[] = [];
  const off: number[] = [];
  const pct: number[] = [];
  const evs: number[] = [];
  const bps: number[] = [];
  const dps: number[] = [];
  const wps: number[] = [];
  const cpuOn: number[] = [];
  const cpuOff: number[] = [];
  const cpuPct: number[] = [];
  const nodeOn: number[] = [];
  const nodeOff: number[] = [];
  const share: number[] = [];
  let scrapes = 0;
  for (let p = 0; p < pairs; p++) {
    // A B B A: the first arm of each pair alternates.
    const onFirst = p % 2 === 0;
    const x = await runArm(config, onFirst, windowMs, warmupMs, inFlight, nodeTids, client);
    const y = await runArm(config, !onFirst, windowMs, warmupMs, inFlight, nodeTids, client);
    const [a, b] = onFirst ? [x, y] : [y, x];
    on.push(a.partitionsPerSecond);
    off.push(b.partitionsPerSecond);
    pct.push(((b.partitionsPerSecond - a.partitionsPerSecond) / b.partitionsPerSecond) * 100);
    evs.push(a.eventsPerSecond);
    bps.push(a.batchesPerSecond);
    dps.push(a.drainsPerSecond);
    wps.push(a.waitsPerSecond);
    cpuOn.push(a.cpuMsPerPartition);
    cpuOff.push(b.cpuMsPerPartition);
    cpuPct.push(((a.cpuMsPerPartition - b.cpuMsPerPartition) / b.cpuMsPerPartition) * 100);
    nodeOn.push(a.nodeCpuPercent);
    nodeOff.push(b.nodeCpuPercent);
    share.push(((a.nodeCpuPercent - b.nodeCpuPercent) / (a.nodeCpuPercent + a.engineCpuPercent)) * 100);
    scrapes = a.scrapes;
    log(
      `overhead ${name} pair ${p + 1}/${pairs}: exporter ${a.partitionsPerSecond.toFixed(1)} vs events off ${b.partitionsPerSecond.toFixed(1)} partitions/s (${pct[p].toFixed(2)} %); ` +
        `CPU ${a.cpuMsPerPartition.toFixed(3)} vs ${b.cpuMsPerPartition.toFixed(3)} ms/partition; Node threads ${a.nodeCpuPercent.toFixed(2)} vs ${b.nodeCpuPercent.toFixed(2)} % of a core (engine ${a.engineCpuPercent.toFixed(0)} %), CPU-share overhead ${share[p].toFixed(3)} %; ${a.eventsPerSecond.toFixed(0)} events/s in ${a.drainsPerSecond.toFixed(0)} drains/s (${a.waitsPerSecond.toFixed(0)} blocking waits/s)`,
    );
  }
  return {
    config,
    windowMs,
    pairs,
    exporterOn: figure('partitions/s', on),
    eventsOff: figure('partitions/s', off),
    overheadPercent: figure('%', pct, 3),
    cpuMsPerPartitionOn: figure('ms/partition', cpuOn),
    cpuMsPerPartitionOff: figure('ms/partition', cpuOff),
    cpuOverheadPercent: figure('%', cpuPct, 3),
    nodeCpuPercentOn: figure('% of a core', nodeOn, 3),
    nodeCpuPercentOff: figure('% of a core', nodeOff, 3),
    cpuShareOverheadPercent: figure('%', share, 3),
    eventsPerSecond: figure('events/s', evs),
    batchesPerSecond: figure('batches/s', bps),
    drainsPerSecond: figure('drains/s', dps),
    waitsPerSecond: figure('waits/s', wps),
    scrapesPerWindow: scrapes,
  };
}

export async function benchOverhead(opts: OverheadOptions = {}): Promise<OverheadResult> {
  const pairs = opts.pairs ?? 4;
  const warmupMs = opts.warmupMs ?? 1000;
  const log = opts.log ?? (() => {});
  const cpuConfig: EngineConfig = { backend: 'cpu', gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2 };
  const simConfig: EngineConfig = { backend: 'sim', gpus: 2, workers_per_gpu: 2, synthesis_concurrency: 16, time_scale: 0.001 };
  // Node's own threads exist before any engine opens (the libuv pool started now); every
  // thread that appears later is the engine's.
  await warmThreadPool();
  const nodeTids = new Set(threadCpuNs()?.keys() ?? []);
  // The scraper's process, started after Node's thread set was taken (its threads are not ours).
  const client = LoadClient.start();
  let cpu: BackendOverhead;
  let sim: BackendOverhead;
  try {
    cpu = await backend('cpu', cpuConfig, pairs, opts.cpuWindowMs ?? 5000, warmupMs, 3, nodeTids, client, log);
    sim = await backend('sim', simConfig, pairs, opts.simWindowMs ?? 3000, warmupMs, 6, nodeTids, client, log);
  } finally {
    client.stop();
  }
  return {
    method:
      'SnapDeals proofs kept in flight by a 5 ms top-up timer (same JS work in both arms); throughput = partitions completed/s from the native counters over a fixed window after a warm-up. ' +
      'Exporter arm: events on + Telemetry + HTTP server + a /metrics scrape every 1 s from a child process (keep-alive). Other arm: events: false. Arms alternate A B B A; figure = median over pairs of (off - on) / off.',
    cpu,
    sim,
  };
}
