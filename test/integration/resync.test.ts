/**
 * Sequence gaps: a tiny native event ring and a consumer that falls behind. The gap must
 * be detected and counted, the model re-synced from a snapshot, and the totals must stay
 * exact — checked against expectations that do not come from the counter under test:
 *  - per-kind counters against the sums of the per-proof results (cuzk_await);
 *  - the running stint and GPU-lock hold whose starting events the gap swallowed, right
 *    after the re-sync, against the engine's own snapshot (busy_since_ns, lock_since_ns):
 *    restored from their real start, not from the moment of the re-sync;
 *  - the model's event-derived busy and lock-held totals (what it rebuilt from the
 *    snapshots plus the events after them) against the engine's C accumulators.
 * (Exported busy/lock/starved seconds are the engine's counter read itself in run mode;
 * comparing them with the counters again would compare a value with itself.)
 * Mutations these catch are listed in test/README.md.
 */
import { CTR } from '../../src/engine/sources/native/abi';
import { EVENT_SIZE, EV_GPU_LOCK, EV_OFF_AUX, EV_OFF_GPU, EV_OFF_TYPE, EV_OFF_WORKER, EV_WORKER } from '../../src/engine/model/event-layout';
import { PROOF_KINDS } from '../../src/engine/model/kinds';
import type { NativeEngine, ProofResult } from '../../src/engine/sources/native/native-engine';
import type { CuzkStatus } from '../../src/engine/sources/status-schema';
import { Workload } from '../../src/engine/sources/native/workload';
import { startNativeExporter } from '../helpers/native-exporter';
import { parse, sum, value } from '../helpers/prom-text';

const RING = 64;
/** Size of the proofs that start a new stint: a GPU stage of some milliseconds, so the stint outlives the re-sync that follows. */
const KICK_LOG2 = 18;

interface Snap {
  last_seq: number;
  pipelines: { outcome?: string }[];
  counters: { queue_depth: number };
  gpu_workers: { worker_id: number; gpu_ordinal: number; state: string; busy_since_ns?: number | null; current_job_handle?: number | null; current_partition?: number | null }[];
  gpus?: { ordinal: number; lock_held?: boolean; lock_since_ns?: number | null }[];
}

const snap = (engine: NativeEngine) => JSON.parse(engine.statusText()) as Snap;

type GapMode = 'moved' | 'ended' | 'handoff-kept';

interface Lost {
  worker: number;
  since: number;
  /** A GPU-lock hold whose start the gap swallowed (not in handoff-kept). */
  gpu: number;
  lockSince: number;
  /** The model held that worker busy (in an older stint) when the gap began. */
  modelBusy: boolean;
}

/** The promise, marked handled: if the test fails first, closing the engine rejects it. */
function settled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

/** Proofs submitted and cancelled at once (queue events only) until the engine's last seq exceeds `seq`. */
function junk(engine: NativeEngine, extra: Promise<ProofResult>[], seq: number): number {
  let last = engine.readCounters().lastSeq;
  while (last <= seq) {
    const job = engine.submit('window-post');
    engine.cancel(job);
    extra.push(settled(engine.awaitProof(job)));
    last = engine.readCounters().lastSeq;
  }
  return last;
}

/**
 * Makes the next drain see a sequence gap that swallowed what the re-sync must restore
 * from the snapshot (busy_since_ns, lock_since_ns):
 *  - `moved`: a running stint's latest hand-off and a running GPU-lock hold's start;
 *  - `ended`: also the end of the stint the model last saw and the start of the running one
 *    (the ended stint's busy time then exists only in the engine's counters);
 *  - `handoff-kept`: the end of the stint the model last saw, while the new stint's
 *    hand-off is drained before the re-sync (the model takes it for a move within the old
 *    stint: only busy_since_ns tells them apart).
 * Blocks the JS thread, so nothing is drained from here on. The events to lose happen after
 * that (they were never drained) and before a snapshot with last_seq S; then the engine
 * emits more than two ring capacities of events (junk) and the same stint, partition and
 * hold are checked to be still running: events with seq <= S are certainly overwritten.
 * Under load a stint never ends (busy from pickup to pickup), so where one must end, the
 * proofs in flight run out (nothing refills them while we block) and one more is started.
 * Conditions, not durations: a loaded machine only makes this take longer.
 */
function makeGap(engine: NativeEngine, extra: Promise<ProofResult>[], mode: GapMode, capMs = 50_000): Lost {
  const end = Date.now() + capMs;
  const m = engine.model;
  const undrained = engine.now();
  const modelBusy = Array.from(m.wBusy);
  const same = (a: Snap['gpu_workers'][number], b: Snap['gpu_workers'][number]) =>
    a.worker_id === b.worker_id && b.state === 'proving' && a.busy_since_ns === b.busy_since_ns && a.current_job_handle === b.current_job_handle && a.current_partition === b.current_partition;
  let kicked = false;
  let buried = -1; // handoff-kept: last seq of the junk that buried the ended stints
  let kick = -1;
  while (Date.now() < end) {
    const a = snap(engine);
    // Quiet: no worker busy and no proof unfinished (a worker can be idle between partitions).
    const idle = a.gpu_workers.every((w) => w.state !== 'proving') && a.pipelines.every((p) => p.outcome !== 'running') && a.counters.queue_depth === 0;
    if (!idle) kicked = false;
    if (mode === 'handoff-kept') {
      if (buried < 0) {
        if (!idle) continue;
        // Every stint the model holds has ended: lose their ends, then start a new stint.
        buried = junk(engine, extra, a.last_seq + 2 * RING);
      }
      if (idle && !kicked) {
        kick = engine.submit('winning-post', { log2Size: KICK_LOG2 });
        extra.push(settled(engine.awaitProof(kick)));
        kicked = true;
      }
      const wk = a.gpu_workers.find((w) => w.state === 'proving' && w.current_job_handle === kick && typeof w.busy_since_ns === 'number' && modelBusy[w.worker_id] === 1);
      // Its hand-off is still in the ring (fewer than RING events since the junk).
      if (wk && a.last_seq < buried + RING - 8) return { worker: wk.worker_id, since: wk.busy_since_ns!, gpu: -1, lockSince: -1, modelBusy: true };
      if (wk || (idle && kicked && a.last_seq >= buried + RING - 8)) buried = -1; // too late: again
      continue;
    }
    if (idle && !kicked) {
      extra.push(settled(engine.awaitProof(engine.submit('winning-post', { log2Size: KICK_LOG2 }))));
      kicked = true;
    }
    const wk = a.gpu_workers.find(
      (w) =>
        w.state === 'proving' &&
        typeof w.busy_since_ns === 'number' &&
        (mode === 'ended'
          ? modelBusy[w.worker_id] === 1 && w.busy_since_ns > undrained
          : m.wBusy[w.worker_id] !== 1 || m.wJob[w.worker_id] !== w.current_job_handle || m.wPartition[w.worker_id] !== w.current_partition),
    );
    const g = a.gpus?.find((x) => x.lock_held === true && typeof x.lock_since_ns === 'number' && x.lock_since_ns > undrained);
    if (!wk || !g) continue;
    junk(engine, extra, a.last_seq + 2 * RING);
    const b = snap(engine);
    const stillStint = b.gpu_workers.some((w) => same(wk, w));
    const stillHold = b.gpus?.some((x) => x.ordinal === g.ordinal && x.lock_since_ns === g.lock_since_ns);
    if (stillStint && stillHold) return { worker: wk.worker_id, since: wk.busy_since_ns!, gpu: g.ordinal, lockSince: g.lock_since_ns!, modelBusy: modelBusy[wk.worker_id] === 1 };
  }
  throw new Error(`no ${mode} gap within ${capMs} ms`);
}

test('a sequence gap is counted; state and totals re-synced exactly, running stints from their real start', async () => {
  const x = await startNativeExporter({ gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2, event_ring_capacity: RING });
  try {
    const m = x.engine.model;
    // The snapshot the last re-sync was built from (its last status() read), and the
    // workers and GPUs whose state an applied event changed since.
    let lastStatus: CuzkStatus | null = null;
    const touched = new Set<number>();
    const lockTouched = new Set<number>();
    const status = x.engine.status.bind(x.engine);
    // Workers whose hand-off (WORKER busy) was in the last batch drained before that
    // status() read (a re-sync may read the status several times).
    let handoffs = new Set<number>();
    let handoffsBeforeStatus = new Set<number>();
    x.engine.status = () => {
      lastStatus = status();
      touched.clear();
      lockTouched.clear();
      if (handoffs.size > 0) handoffsBeforeStatus = handoffs;
      handoffs = new Set();
      return lastStatus;
    };
    x.engine.onEvents = (v: DataView, count: number) => {
      for (let i = 0; i < count; i++) {
        const off = i * EVENT_SIZE;
        const type = v.getUint16(off + EV_OFF_TYPE, true);
        if (type === EV_WORKER) {
          touched.add(v.getUint16(off + EV_OFF_WORKER, true));
          if (v.getUint32(off + EV_OFF_AUX, true) !== 0) handoffs.add(v.getUint16(off + EV_OFF_WORKER, true));
        }
        if (type === EV_GPU_LOCK) lockTouched.add(v.getUint8(off + EV_OFF_GPU));
      }
    };
    const results: ProofResult[] = [];
    const w = new Workload(x.engine, { concurrency: 4, onResult: (r) => results.push(r) });
    void w.run();
    const extra: Promise<ProofResult>[] = [];
    const restored: Record<GapMode, number> = { moved: 0, ended: 0, 'handoff-kept': 0 };
    let restoredHolds = 0;
    const MODES: GapMode[] = ['moved', 'ended', 'handoff-kept'];
    for (let round = 0; round < 9; round++) {
      const mode = MODES[round % MODES.length];
      const lost = makeGap(x.engine, extra, mode);
      handoffsBeforeStatus = new Set();
      // The next drain, now (still without yielding): it sees the gap and re-syncs.
      const resyncs = x.engine.stats.resyncs;
      x.engine.refresh();
      expect(x.engine.stats.resyncs).toBeGreaterThan(resyncs);
      const used = lastStatus!;
      // Every stint and hold running in that snapshot is restored from its real start (the
      // engine's busy_since_ns / lock_since_ns), not from the moment of the re-sync.
      for (const wk of used.gpu_workers) {
        if (typeof wk.busy_since_ns !== 'number' || touched.has(wk.worker_id)) continue;
        expect([`round ${round} (${mode}) worker ${wk.worker_id}`, m.wBusy[wk.worker_id], m.wSinceNs[wk.worker_id]]).toEqual([`round ${round} (${mode}) worker ${wk.worker_id}`, 1, wk.busy_since_ns]);
        if (wk.worker_id !== lost.worker || wk.busy_since_ns !== lost.since) continue;
        // The case the round is about really happened.
        if (mode !== 'handoff-kept' || (lost.modelBusy && handoffsBeforeStatus.has(lost.worker))) restored[mode]++;
      }
      for (const g of used.gpus ?? []) {
        if (g.lock_held !== true || typeof g.lock_since_ns !== 'number' || lockTouched.has(g.ordinal)) continue;
        expect([`round ${round} (${mode}) gpu ${g.ordinal}`, m.gLockHeld[g.ordinal], m.gLockSinceNs[g.ordinal]]).toEqual([`round ${round} (${mode}) gpu ${g.ordinal}`, 1, g.lock_since_ns]);
        if (g.ordinal === lost.gpu && g.lock_since_ns === lost.lockSince) restoredHolds++;
      }

      const samples = parse((await x.get('/metrics')).body);
      // State at the scrape: consistent, and no false alarm.
      const busy = sum(samples, 'cuzk_gpu_worker_busy');
      const onGpu = sum(samples, 'cuzk_partitions', { state: 'gpu' });
      const finalizing = sum(samples, 'cuzk_partitions', { state: 'finalizing' });
      if (busy < onGpu || busy > onGpu + finalizing) throw new Error(`round ${round}: ${busy} busy workers, ${onGpu} partitions on the GPU, ${finalizing} finalizing`);
      expect(value(samples, 'cuzk_status_mismatch')).toBe(0);
    }
    // Each kind of gap really happened, and its stint (and hold) were restored: most rounds
    // count (one can end in the microseconds between the check and the re-sync).
    expect([restored.moved > 0, restored.ended > 0, restored['handoff-kept'] > 0, restoredHolds > 0]).toEqual([true, true, true, true]);
    // Every proof runs to its end: the results are then complete.
    await w.stop(120_000);
    results.push(...(await Promise.all(extra)));
    expect(results.filter((r) => r.outcome === 'completed').length).toBeGreaterThan(0);
    const body = (await x.get('/metrics')).body;
    const dropped = value(body, 'cuzk_exporter_events_dropped_total');
    expect(dropped).toBeGreaterThan(0);
    expect(dropped).toBe(x.engine.readCounters().words[CTR.EVENTS_OVERWRITTEN]);

    // Per-kind counters: the per-proof results, summed by the test.
    let gpuTotalNs = 0;
    for (const kind of PROOF_KINDS) {
      const mine = results.filter((r) => r.kind === kind);
      const done = mine.filter((r) => r.outcome === 'completed');
      const gpuNs = mine.reduce((a, r) => a + r.gpuNs, 0);
      const synthNs = mine.reduce((a, r) => a + r.synthNs, 0);
      gpuTotalNs += gpuNs;
      const got = {
        gpu: Math.abs(value(body, 'cuzk_partition_gpu_seconds_total', { proof_kind: kind }) - gpuNs / 1e9) < 1e-9,
        synth: Math.abs(value(body, 'cuzk_partition_synthesis_seconds_total', { proof_kind: kind }) - synthNs / 1e9) < 1e-9,
        partitions: value(body, 'cuzk_partitions_completed_total', { proof_kind: kind }),
        proofs: value(body, 'cuzk_proofs_completed_total', { proof_kind: kind }),
        failed: value(body, 'cuzk_proofs_failed_total', { proof_kind: kind }),
        cancelled: value(body, 'cuzk_proofs_cancelled_total', { proof_kind: kind }),
      };
      const n = (o: string) => mine.filter((r) => r.outcome === o).length;
      expect([kind, got]).toEqual([kind, { gpu: true, synth: true, partitions: done.reduce((a, r) => a + r.partitions, 0), proofs: done.length, failed: n('failed'), cancelled: n('cancelled') }]);
    }

    // Finalize time (split proving): partitions seen finalizing before a gap counted from
    // events, the others from the snapshot's finalizing_since_ns or the adopted native
    // total; against the engine's C accumulator.
    const { words } = x.engine.readCounters();
    PROOF_KINDS.forEach((kind, k) => {
      const finNs = words[CTR.HDR_WORDS + k * CTR.KIND_WORDS + CTR.K_FINALIZE_NS];
      expect([kind, Math.abs(value(body, 'cuzk_partition_finalize_seconds_total', { proof_kind: kind }) - finNs / 1e9) < 1e-9]).toEqual([kind, true]);
    });

    // Time totals: what the model rebuilt (snapshot at each gap + the events after it)
    // against the engine's C accumulators, to the nanosecond. Everything is idle now, so
    // no running interval is involved on either side. (Starved time is left out: the model
    // derives it from state edges, and events drained after a gap are applied to the stale
    // state before the re-sync corrects it, so the model's figure is approximate across a
    // gap; /metrics exports the engine's own in run mode.)
    const native = x.engine.runningTotals()!;
    let busyTotal = 0;
    for (let wk = 0; wk < m.topology.workers.length; wk++) {
      expect([`worker ${wk}`, m.workerBusyNsAt(wk, native.nowNs)]).toEqual([`worker ${wk}`, native.workerBusyNs[wk]]);
      busyTotal += native.workerBusyNs[wk];
    }
    for (let g = 0; g < m.topology.gpus.length; g++) {
      expect([`gpu ${g} lock`, m.gpuLockHeldNsAt(g, native.nowNs)]).toEqual([`gpu ${g} lock`, native.gpuLockHeldNs[g]]);
    }
    // And the exported busy time against the proofs' GPU stages: never more (equal without
    // split proving).
    expect(busyTotal).toBeGreaterThan(0);
    expect(sum(body, 'cuzk_gpu_worker_busy_seconds_total')).toBeLessThanOrEqual(gpuTotalNs / 1e9 + 1e-9);
    expect(sum(body, 'cuzk_gpu_worker_busy')).toBe(0);
    expect(sum(body, 'cuzk_partitions')).toBe(0);
    expect(value(body, 'cuzk_status_mismatch')).toBe(0);
  } finally {
    await x.close();
  }
}, 180_000);
