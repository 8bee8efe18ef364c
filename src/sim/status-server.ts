/**
 * cuzk's `status_listen` endpoint for `simulate`: a raw HTTP/1.1 listener as in
 * cuzk-daemon main.rs (one read of the request, `GET /status` prefix match, one answer with
 * Content-Length and `Connection: close`, 404 otherwise). What it serves by default is the
 * StatusTracker port's snapshot (core.ts statusJson). cuzkStatusView below is only for
 * --simulate.status-extensions: the reference engine's own snapshot (engine truth, our
 * additions kept), with PoSt removed unless --simulate.status-shows-post.
 */
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { MONOLITHIC_KINDS } from './requests';

export interface StatusViewOptions {
  /** Show PoSt jobs in pipelines, workers and counters (cuzk does not). */
  showsPost: boolean;
  /** Keep the reference engine's additions (cuzk has none of them). */
  extensions: boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

const pick = (o: Obj, keys: readonly string[]): Obj => {
  const out: Obj = {};
  for (const k of keys) if (k in o) out[k] = o[k];
  return out;
};

const PIPELINE_KEYS = ['job_id', 'proof_kind', 'started_secs_ago', 'total_partitions', 'partitions_done', 'partitions'];
const PARTITION_KEYS = ['index', 'state', 'synth_ms', 'gpu_ms'];
const WORKER_KEYS = ['worker_id', 'gpu_ordinal', 'state', 'current_job', 'current_partition', 'busy_secs'];
const ALLOC_KEYS = ['circuit_id', 'bytes', 'last_used_secs_ago', 'evictable'];
const BUFFER_KEYS = ['synth_in_flight', 'provers_in_flight', 'aux_in_flight', 'shells_in_flight', 'pending_handles'];

/** The engine's snapshot as cuzk's /status would show it. Pure; never throws on odd input. */
export function cuzkStatusView(snapshot: Obj, opts: StatusViewOptions): Obj {
  let pipelines = arr(snapshot.pipelines).filter(isObj);
  let workers = arr(snapshot.gpu_workers).filter(isObj);
  const counters: Obj = isObj(snapshot.counters) ? { ...snapshot.counters } : {};
  const synthesis: Obj = isObj(snapshot.synthesis) ? { ...snapshot.synthesis } : {};
  const buffers: Obj = isObj(snapshot.buffers) ? { ...snapshot.buffers } : {};

  if (!opts.showsPost) {
    const post = pipelines.filter((p) => MONOLITHIC_KINDS.has(String(p.proof_kind)));
    const postIds = new Set(post.map((p) => String(p.job_id)));
    pipelines = pipelines.filter((p) => !MONOLITHIC_KINDS.has(String(p.proof_kind)));
    workers = workers.map((w) => {
      const kind = typeof w.current_kind === 'string' ? w.current_kind : null;
      const onPost = kind !== null ? MONOLITHIC_KINDS.has(kind) : w.current_job != null && postIds.has(String(w.current_job));
      if (!onPost) return w;
      const idle: Obj = { ...w, state: 'idle', current_job: null, current_partition: null, busy_secs: null };
      for (const k of ['current_job_handle', 'current_kind', 'busy_since_ns']) if (k in idle) idle[k] = null;
      return idle;
    });
    // What the partitioned-only tracker and buffer counters never saw.
    let synthesizing = 0;
    let synthDone = 0;
    let onGpu = 0;
    let unfinished = 0;
    for (const p of post) {
      const parts = arr(p.partitions).filter(isObj);
      for (const part of parts) {
        if (part.state === 'synthesizing') synthesizing++;
        else if (part.state === 'synth_done') synthDone++;
        else if (part.state === 'gpu') onGpu++;
      }
      const running = p.outcome !== undefined ? p.outcome === 'running' : p.finished_secs_ago == null && !parts.every((x) => x.state === 'done' || x.state === 'failed');
      if (running) unfinished++;
    }
    if ('active' in synthesis) synthesis.active = Math.max(0, num(synthesis.active) - synthesizing);
    const dec = (k: string, by: number) => {
      if (k in buffers) buffers[k] = Math.max(0, num(buffers[k]) - by);
    };
    dec('synth_in_flight', synthesizing);
    dec('aux_in_flight', synthDone);
    dec('provers_in_flight', onGpu);
    dec('pending_handles', unfinished);
    for (const [byKind, total] of [
      ['completed_by_kind', 'total_completed'],
      ['failed_by_kind', 'total_failed'],
      ['cancelled_by_kind', null],
    ] as const) {
      if (!isObj(counters[byKind])) continue;
      const m: Obj = { ...(counters[byKind] as Obj) };
      for (const k of MONOLITHIC_KINDS) {
        if (total && k in m) counters[total] = Math.max(0, num(counters[total]) - num(m[k]));
        delete m[k];
      }
      counters[byKind] = m;
    }
  }

  if (opts.extensions) return { ...snapshot, synthesis, pipelines, gpu_workers: workers, counters, buffers };

  // cuzk's StatusSnapshot, field for field (serde order); its by-kind maps hold only kinds
  // that have a count.
  const byKind = (v: unknown): Obj => {
    const out: Obj = {};
    if (isObj(v)) for (const [k, n] of Object.entries(v)) if (num(n) > 0) out[k] = n;
    return out;
  };
  const allocations = isObj(snapshot.allocations) ? snapshot.allocations : {};
  return {
    uptime_secs: snapshot.uptime_secs,
    memory: isObj(snapshot.memory) ? pick(snapshot.memory, ['total_bytes', 'used_bytes', 'available_bytes']) : snapshot.memory,
    synthesis: pick(synthesis, ['max_concurrent', 'active']),
    pipelines: pipelines.map((p) => ({
      ...pick(p, PIPELINE_KEYS),
      partitions: arr(p.partitions)
        .filter(isObj)
        .map((x) => pick(x, PARTITION_KEYS)),
    })),
    gpu_workers: workers.map((w) => pick(w, WORKER_KEYS)),
    allocations: {
      srs: arr(allocations.srs).filter(isObj).map((e) => pick(e, ALLOC_KEYS)),
      pce: arr(allocations.pce).filter(isObj).map((e) => pick(e, ALLOC_KEYS)),
    },
    counters: {
      total_completed: counters.total_completed,
      total_failed: counters.total_failed,
      completed_by_kind: byKind(counters.completed_by_kind),
      failed_by_kind: byKind(counters.failed_by_kind),
      queue_depth: counters.queue_depth,
    },
    buffers: pick(buffers, BUFFER_KEYS),
  };
}

export interface RunningStatusListener {
  url: string;
  close(): Promise<void>;
}

const MAX_REQUEST = 4096;
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Listens on host:port (port 0: any free port). `body()` gives the JSON text of one
 * snapshot or throws (then 500 with {"error": …}, as cuzk answers a serialisation error).
 */
export function startStatusListener(host: string | undefined, port: number, body: () => string): Promise<RunningStatusListener> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {}); // the peer may go away mid-answer
    sock.setTimeout(REQUEST_TIMEOUT_MS, () => sock.destroy());
    let req = Buffer.alloc(0);
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      const firstLine = req.toString('latin1').split(/\r?\n/, 1)[0];
      let status = '200 OK';
      let type = 'application/json';
      let text: string;
      let cors = true;
      if (firstLine.startsWith('GET /status')) {
        try {
          text = body();
        } catch (e) {
          status = '500 Internal Server Error';
          text = JSON.stringify({ error: (e as Error).message });
        }
      } else {
        status = '404 Not Found';
        type = 'text/plain';
        text = '404 Not Found\n';
        cors = false;
      }
      const payload = Buffer.from(text, 'utf8');
      const head =
        `HTTP/1.1 ${status}\r\nContent-Type: ${type}\r\nContent-Length: ${payload.length}\r\n` +
        (cors ? 'Access-Control-Allow-Origin: *\r\n' : '') +
        'Connection: close\r\n\r\n';
      sock.end(Buffer.concat([Buffer.from(head, 'latin1'), payload]));
    };
    sock.on('data', (d: Buffer) => {
      req = Buffer.concat([req, d]).subarray(0, MAX_REQUEST);
      if (req.includes(10) || req.length >= MAX_REQUEST) answer();
    });
    sock.on('end', () => (req.length === 0 ? sock.destroy() : answer()));
  });
  return new Promise((resolve, reject) => {
    server.once('error', (e) => reject(new Error(`status listen on ${host ?? ''}:${port}: ${e.message}`)));
    server.listen(port, host, () => {
      const a = server.address() as AddressInfo;
      const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
      resolve({
        url: `http://${h}:${a.port}/status`,
        close: () =>
          new Promise<void>((res) => {
            server.close(() => res());
            for (const s of sockets) s.destroy();
          }),
      });
    });
  });
}
