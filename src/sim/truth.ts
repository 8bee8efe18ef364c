/**
 * Ground truth for tests of what cuzk's surfaces let an observer derive, as JSON — served on
 * `--simulate.truth-listen` (GET /truth) and/or written to `--simulate.truth-file` on
 * SIGUSR2 and at exit:
 *  - the reference engine's own native counters (cuzk_counters_read), in nanoseconds
 *    (`kinds`, `gpus`, `workers`): what ran;
 *  - `upstream`: what upstream cuzk's own accounting and surfaces make of it (core.ts
 *    upstreamTruth, upstream-ledger.ts): the figures to compare an attached observer with,
 *    and a count of every rendering path taken (a test can tell its row happened).
 *
 * Every read drains the engine's pending events first, so the TIMELINE output (written
 * synchronously per drained batch) holds every line up to `observed.seq`. The totals are
 * complete for a comparison when `quiescent` is true: every event up to the counters'
 * `last_seq` was rendered, no engine job is in flight, no skip waits for a worker, no batch
 * is being collected.
 *
 * Field names follow the counter words of native/include/cuzk_engine.h (CTRK_GPU_NS ->
 * "gpu_ns", CTRW_BUSY_NS -> "busy_ns", …), so words the ABI adds appear by themselves.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CTR } from '../engine/sources/native/abi';
import { KIND_LABELS } from '../engine/model/kinds';
import type { NativeEngine } from '../engine/sources/native/native-engine';
import type { SimCore } from './core';

type Fields = Array<[string, number]>;
/** Counter word fields of one block kind (prefix K_, G_ or W_ of CTR), as [json name, offset]. */
function fieldsOf(prefix: string, exclude: readonly string[] = []): Fields {
  return Object.entries(CTR as Record<string, number>)
    .filter(([k]) => k.startsWith(prefix) && !exclude.includes(k) && !k.endsWith('RESERVED'))
    .map(([k, v]) => [k.slice(prefix.length).toLowerCase(), v]);
}

export interface Truth {
  now_ns: number;
  start_ns: number;
  uptime_ns: number;
  last_seq: number;
  events_emitted: number;
  events_overwritten: number;
  observed: { seq: number; gaps: number; jobs_in_flight: number; pending_skips: number; timeline_lines: number };
  quiescent: boolean;
  upstream: Record<string, unknown>;
  kinds: Record<string, Record<string, number>>;
  gpus: Array<Record<string, number>>;
  workers: Array<Record<string, number>>;
}

/** Decodes a counter read (NativeEngine.readCounters().words). */
export function decodeCounters(words: Float64Array): Omit<Truth, 'observed' | 'quiescent' | 'upstream'> {
  const nKinds = words[CTR.KINDS];
  const nGpus = words[CTR.GPUS];
  const perGpu = words[CTR.WORKERS_PER_GPU];
  const kindBase = CTR.HDR_WORDS;
  const gpuBase = kindBase + nKinds * CTR.KIND_WORDS;
  const workerBase = gpuBase + nGpus * CTR.GPU_WORDS;
  const kinds: Record<string, Record<string, number>> = {};
  const kf = fieldsOf('K_', ['KIND_WORDS']);
  for (let k = 0; k < nKinds; k++) {
    const o: Record<string, number> = {};
    for (const [name, off] of kf) o[name] = words[kindBase + k * CTR.KIND_WORDS + off];
    kinds[KIND_LABELS[k] ?? `kind-${k}`] = o;
  }
  const gf = fieldsOf('G_', ['GPU_WORDS']);
  const gpus = Array.from({ length: nGpus }, (_, g) => {
    const o: Record<string, number> = { gpu: g };
    for (const [name, off] of gf) o[name] = words[gpuBase + g * CTR.GPU_WORDS + off];
    return o;
  });
  const wf = fieldsOf('W_', ['WORKER_WORDS']);
  const workers = Array.from({ length: nGpus * perGpu }, (_, w) => {
    const o: Record<string, number> = { worker: w, gpu: Math.floor(w / perGpu) };
    for (const [name, off] of wf) o[name] = words[workerBase + w * CTR.WORKER_WORDS + off];
    return o;
  });
  const nowNs = words[CTR.NOW_NS];
  const uptimeNs = words[CTR.UPTIME_NS];
  return {
    now_ns: nowNs,
    start_ns: nowNs - uptimeNs,
    uptime_ns: uptimeNs,
    last_seq: words[CTR.LAST_SEQ],
    events_emitted: words[CTR.EVENTS_EMITTED],
    events_overwritten: words[CTR.EVENTS_OVERWRITTEN],
    kinds,
    gpus,
    workers,
  };
}

/** Drains pending events (so the TIMELINE is written up to here), then reads the counters. */
export function readTruth(engine: NativeEngine, core: SimCore): Truth {
  engine.refresh();
  const c = decodeCounters(engine.readCounters().words);
  const r = core.renderer;
  const observed = {
    seq: r.lastSeq,
    gaps: r.gaps,
    jobs_in_flight: r.liveJobs,
    pending_skips: r.pendingSkips,
    timeline_lines: core.timeline?.lines ?? 0,
  };
  return {
    ...c,
    observed,
    quiescent: observed.seq === c.last_seq && core.settled,
    upstream: core.upstreamTruth(),
  };
}

/** Writes the truth atomically (a reader never sees half a file). */
export function writeTruthFile(file: string, truth: Truth): void {
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(truth, null, 1) + '\n');
  fs.renameSync(tmp, file);
}

export interface RunningTruthServer {
  url: string;
  close(): Promise<void>;
}

/** GET /truth on host:port (port 0: any free port). */
export function startTruthServer(host: string | undefined, port: number, read: () => Truth): Promise<RunningTruthServer> {
  const server = http.createServer((req, res) => {
    res.on('error', () => {});
    const url = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || url !== '/truth') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('404 Not Found: GET /truth\n');
      return;
    }
    let body: string;
    try {
      body = JSON.stringify(read());
    } catch (e) {
      res.writeHead(503, { 'Content-Type': 'text/plain' }).end(`${(e as Error).message}\n`);
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).end(body);
  });
  return new Promise((resolve, reject) => {
    server.once('error', (e) => reject(new Error(`truth listen on ${host ?? ''}:${port}: ${e.message}`)));
    server.listen(port, host, () => {
      const a = server.address() as AddressInfo;
      const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
      resolve({
        url: `http://${h}:${a.port}/truth`,
        close: () =>
          new Promise<void>((res) => {
            server.close(() => res());
            server.closeAllConnections();
          }),
      });
    });
  });
}
