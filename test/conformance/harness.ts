/**
 * Conformance harness: runs one row of docs/upstream-conformance.md — `cuzk-exporter simulate`
 * (the built CLI, dist/) with the row's flags, attach exporters on every surface combination
 * (in-process MergedAttachSource + telemetry + HTTP, test/attach/merged-harness.ts) attached
 * BEFORE the row's workload, the workload over gRPC with Curio's request ids — and gives the
 * test the ground truth once quiescent, the attach exporters' /metrics, and the samples
 * taken during the run.
 *
 *   const run = await runRow(row, { combos: ALL_COMBOS });
 *   try {
 *     run.truth.upstream.kinds['porep-c2'].gpu_ns;      // what upstream's accounting says
 *     await run.attach.get('tg')!.metrics();             // an attach exporter's /metrics
 *     run.samples.get('tgs');                            // mismatch flags seen during the run
 *     compareRow(row, run)                               // rules.ts: one line per failed check
 *   } finally { await run.close(); }
 *
 * Every process started is killed by pid (its group) in close(); waits are on conditions with
 * generous caps, never sleeps.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { MergedHarness, startMerged, sampleValue } from '../attach/merged-harness';
import { getJson, grpcClient, Rpc, SimProcess, startSim, waitFor } from '../sim/sim-process';

export const ALL_COMBOS = ['t', 'g', 's', 'tg', 'ts', 'gs', 'tgs'] as const;
export type Combo = (typeof ALL_COMBOS)[number];

/** What a row's workload gets: a gRPC client and Curio-shaped requests. */
export interface WorkloadCtx {
  rpc: Rpc;
  /** Prove and wait; resolves with the answer (result). */
  prove(kind: Kind, id: string, extra?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Prove without waiting (a row whose answer may never come: lost or failed-forever jobs). */
  proveDetached(kind: Kind, id: string, extra?: Record<string, unknown>): void;
  /** Waits until the truth says `pred` (the engine's side of the row happened). */
  truthUntil(what: string, pred: (t: Truth) => boolean, timeoutMs?: number): Promise<Truth>;
  /** Restarts the daemon (same socket, status port, TIMELINE file); truths of earlier lives are kept. */
  restart(): Promise<void>;
}

export type Kind = 'porep-c2' | 'snap-update' | 'window-post' | 'winning-post';
const PROTO: Record<Kind, string> = { 'porep-c2': 'POREP_SEAL_COMMIT', 'snap-update': 'SNAP_DEALS_UPDATE', 'window-post': 'WINDOW_POST_PARTITION', 'winning-post': 'WINNING_POST' };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Truth = Record<string, any>;

export interface Row {
  id: string;
  /** simulate flags beyond the harness's base ones. */
  flags: string[];
  /** Engine config (sim timings…), written to --engine.config. */
  engine?: Record<string, unknown>;
  workload(ctx: WorkloadCtx): Promise<void>;
  /** Upstream paths (truth.upstream.paths) the row must have taken: at least this many. */
  paths?: Record<string, number>;
  /** No mismatch reason may ever be set (sampled during the run and at the end). */
  healthy: boolean;
  /**
   * /status sees every partitioned partition end as it happened (no failure, skip or
   * duplicate hides one): without TIMELINE, its per-partition figures are checked exactly.
   */
  statusExact?: boolean;
  /** Checks to skip, per combo or for all ('*'), each with the reason (rules.ts names them). */
  unknowable?: Partial<Record<Combo | '*', Partial<Record<CheckName, string>>>>;
}

export type CheckName = 'busy' | 'gpu_seconds' | 'synth_seconds' | 'partitions' | 'proofs' | 'idle' | 'healthy';

export interface RowRun {
  row: Row;
  sim: SimProcess;
  /** The ground truth once quiescent (after a restart: the last life; `lives` has them all). */
  truth: Truth;
  lives: Truth[];
  attach: Map<Combo, MergedHarness>;
  /** Per combo: highest cuzk_status_mismatch seen in samples taken during the run. */
  mismatchSeen: Map<Combo, number>;
  timelineFile: string;
  close(): Promise<void>;
}

export interface RunOptions {
  combos?: readonly Combo[];
  /** Attach poll interval (ms). */
  pollMs?: number;
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });

/** Base flags: sim backend, fast, one GPU × two workers, no own workload, every surface (a row's own flags win). */
const KINDS = ['porep-c2', 'snap-update', 'window-post', 'winning-post'] as const;

export function baseFlags(sock: string, statusPort: number, timeline: string, engineCfg: string, rowFlags: readonly string[] = []): string[] {
  // CONFORMANCE_EXTRA_FLAGS (a trace run): more simulate flags, e.g. another box shape.
  const extra = (process.env.CONFORMANCE_EXTRA_FLAGS ?? '').split(' ').filter(Boolean);
  rowFlags = [...rowFlags, ...extra];
  const own = (f: string, v: string) => (rowFlags.includes(f) ? [] : [f, v]);
  return [
    ...own('--engine.backend', 'sim'),
    ...own('--engine.time-scale', '0.02'),
    ...own('--engine.gpus', '1'),
    ...own('--engine.workers-per-gpu', '2'),
    ...own('--engine.synthesis-concurrency', '4'),
    '--engine.config', engineCfg,
    '--workload.concurrency', '0',
    '--simulate.grpc-listen', `unix://${sock}`,
    '--simulate.status-listen', `127.0.0.1:${statusPort}`,
    '--simulate.truth-listen', '127.0.0.1:0',
    '--simulate.timeline-file', timeline,
    // Torn lines only where a row asks (row torn-lines): elsewhere they would blur what the row tests.
    ...own('--simulate.tear-rate', '0'),
    // Upstream's GPU-queue key collision (a monolithic job and the first partitioned job's
    // partition 0 share key (0,0)) loses a job at random under concurrency: only its own row.
    ...own('--simulate.gpu-queue-collisions', 'false'),
    '--log.level', 'warn',
    ...extra,
  ];
}

function kill(sim: SimProcess | null): void {
  const c = sim?.child;
  if (!c || c.exitCode !== null || c.signalCode !== null || c.pid === undefined) return;
  try {
    process.kill(-c.pid, 'SIGKILL');
  } catch {
    // gone
  }
}

export async function runRow(row: Row, o: RunOptions = {}): Promise<RowRun> {
  const combos = o.combos ?? ALL_COMBOS;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `cuzk-conf-${row.id}-`));
  const sock = path.join(tmp, 'cuzk.sock');
  const timeline = path.join(tmp, 'cuzk.log');
  const engineCfg = path.join(tmp, 'engine.json');
  // CONFORMANCE_ENGINE (a trace run): the engine config as JSON, instead of the row's.
  fs.writeFileSync(engineCfg, process.env.CONFORMANCE_ENGINE ?? JSON.stringify(row.engine ?? {}));
  const statusPort = await freePort();
  const flags = [...baseFlags(sock, statusPort, timeline, engineCfg, row.flags), ...row.flags];
  let sim: SimProcess | null = await startSim(flags, 60_000);
  const attach = new Map<Combo, MergedHarness>();
  const mismatchSeen = new Map<Combo, number>();
  const lives: Truth[] = [];
  let sampling = true;
  let sampler: Promise<void> = Promise.resolve();
  const close = async () => {
    sampling = false;
    await sampler;
    for (const h of attach.values()) await h.close().catch(() => undefined);
    kill(sim);
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  try {
    const statusUrl = sim.statusUrl!;
    for (const c of combos) {
      attach.set(
        c,
        await startMerged({
          statusUrl: c.includes('s') ? statusUrl : undefined,
          grpcAddress: c.includes('g') ? `unix://${sock}` : undefined,
          timelineFile: c.includes('t') ? timeline : undefined,
          pollIntervalMs: o.pollMs ?? 100,
          grpcStatusIntervalMs: 5000,
          timeoutMs: 2000,
          skewToleranceMs: 2000,
          timelinePollMs: 50,
          start: true,
          // This box's stages last milliseconds (time scale 0.02): the give-up timeouts for a
          // stage with no end line and for what cuzk's /status never clears are scaled down
          // with them (their production defaults are tested in test/attach).
          ...(process.env.CONFORMANCE_DEFAULT_THRESHOLDS ? {} : { timeline: { gpuTimeoutMs: 2000, confirmMs: 1000 }, statusStale: { minUnownedMs: 1500, minOwnedMs: 3000 } }),
        }),
      );
    }
    for (const [c, h] of attach) await waitFor(`${row.id}/${c}: attach up`, async () => sampleValue((await h.metrics()).samples, 'cuzk_up') === 1, 30_000);
    // Mismatch flags sampled through the run (a healthy row must never set one).
    sampler = (async () => {
      while (sampling) {
        for (const [c, h] of attach) {
          const m = await h.metrics().catch(() => null);
          const v = m ? (sampleValue(m.samples, 'cuzk_status_mismatch') ?? 0) : 0;
          mismatchSeen.set(c, Math.max(mismatchSeen.get(c) ?? 0, v));
          if (v && process.env.CONFORMANCE_TRACE) {
            const reasons = m!.samples.filter((x) => x.name === 'cuzk_status_mismatch_reason' && x.value > 0).map((x) => x.labels.reason);
            const live = m!.samples.filter((x) => x.name === 'cuzk_partitions' && x.value > 0).map((x) => `${x.labels.proof_kind}/${x.labels.state}=${x.value}`);
            const busy = m!.samples.filter((x) => x.name === 'cuzk_gpu_worker_busy' && x.value > 0).map((x) => x.labels.worker);
            process.stderr.write(`conformance trace ${row.id}/${c}: mismatch ${reasons.join(',')} live ${live.join(' ')} busy [${busy.join(',')}]\n`);
          }
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    })();

    let client = grpcClient(sim.grpcAddress);
    const detached: Promise<unknown>[] = [];
    const request = (kind: Kind, id: string, extra: Record<string, unknown> = {}) => ({ submit: { request_id: id, proof_kind: PROTO[kind], ...extra } });
    const ctx: WorkloadCtx = {
      rpc: (m, r, d) => client.rpc(m, r, d),
      prove: async (kind, id, extra) => (await client.rpc('Prove', request(kind, id, extra), 180_000)).result as Record<string, unknown>,
      proveDetached: (kind, id, extra) => {
        const p = client.rpc('Prove', request(kind, id, extra), 600_000);
        p.catch(() => undefined);
        detached.push(p);
      },
      truthUntil: (what, pred, timeoutMs = 120_000) => waitFor(`${row.id}: ${what}`, async () => {
        const t = await getJson(sim!.truthUrl!);
        return pred(t) ? t : undefined;
      }, timeoutMs),
      restart: async () => {
        const before = await getJson(sim!.truthUrl!);
        // Counts a daemon makes between the last poll and its death are lost to any observer
        // (the next process starts from zero): the row tests what a restart does to counters
        // seen, so the exporters see this life's counts first (bounded wait).
        const done = KINDS.reduce((a, k) => a + (before.upstream.kinds[k]?.proofs_completed ?? 0) + (before.upstream.kinds[k]?.proofs_failed ?? 0), 0);
        for (const [c, h] of attach) {
          if (!c.includes('g')) continue;
          await waitFor(`${row.id}/${c}: saw this life's proofs`, async () => {
            const m = await h.metrics();
            const got = m.samples.filter((x) => x.name === 'cuzk_proofs_completed_total' || x.name === 'cuzk_proofs_failed_total').reduce((a, x) => a + x.value, 0);
            return got >= done;
          }, 10_000).catch(() => undefined);
        }
        lives.push(await getJson(sim!.truthUrl!));
        client.close();
        sim!.child.kill('SIGTERM');
        await sim!.exit;
        sim = await startSim(flags, 60_000);
        client = grpcClient(sim.grpcAddress);
      },
    };
    try {
      await row.workload(ctx);
    } finally {
      // Detached calls may never be answered (lost or failed-forever jobs): not awaited.
      client.close();
    }
    const truth = await ctx.truthUntil('quiescent', (t) => t.quiescent === true);
    lives.push(truth);
    // Attach caught up: its TIMELINE read to the end and a few polls of every surface later.
    const size = fs.statSync(timeline).size;
    for (const [c, h] of attach) {
      await waitFor(`${row.id}/${c}: caught up`, async () => {
        const m = await h.metrics();
        const read = sampleValue(m.samples, 'cuzk_exporter_timeline_bytes_total') ?? size;
        return read >= size || !c.includes('t');
      }, 30_000).catch(() => undefined);
    }
    await settle(attach, o.pollMs ?? 100);
    sampling = false;
    await sampler;
    return { row, sim, truth, lives, attach, mismatchSeen, timelineFile: timeline, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** Waits until every attach exporter's counters stop moving for several polls (bounded). */
async function settle(attach: Map<Combo, MergedHarness>, pollMs: number): Promise<void> {
  const compared = new Set([
    'cuzk_gpu_worker_busy_seconds_total',
    'cuzk_partition_gpu_seconds_total',
    'cuzk_partition_synthesis_seconds_total',
    'cuzk_partitions_completed_total',
    'cuzk_proofs_completed_total',
    'cuzk_proofs_failed_total',
    'cuzk_gpu_worker_busy',
    'cuzk_partitions',
  ]);
  const key = async (h: MergedHarness) =>
    (await h.metrics()).samples
      .filter((s) => compared.has(s.name))
      .map((s) => `${s.name}${JSON.stringify(s.labels)}=${s.value}`)
      .join('|');
  const quietMs = Math.max(1000, 10 * pollMs);
  await Promise.all([...attach.values()].map(async (h) => {
    let last = '';
    let since = Date.now();
    await waitFor(
      'attach counters settled',
      async () => {
        const k = await key(h);
        if (k !== last) {
          last = k;
          since = Date.now();
        }
        // Stable, and idle (what ends by a timeout has ended) — or stable for long.
        const idle = !/cuzk_gpu_worker_busy\{[^}]*\}=1|cuzk_partitions\{[^}]*"state":"(gpu|finalizing)"[^}]*\}=[1-9]/.test(k);
        // Not idle yet: a sampled surface (GetStatus every 5 s) may still be about to say so.
        return Date.now() - since >= (idle ? quietMs : Math.max(4 * quietMs, 7000));
      },
      15_000 + quietMs,
    ).catch(() => undefined);
  }));
}
