/**
 * NativeEngine and the koffi binding at the edges the other native suites leave open
 * (src/engine/sources/native/{abi,native-engine}.ts), on the real reference library, some
 * calls of the cached binding replaced by a test double that follows the header
 * (native/include/cuzk_engine.h) where the reference library happens to do more than the
 * header promises:
 *  - the default library missing: the message says how to build it;
 *  - cuzk_engine_open answering OK without a handle is refused with a readable message;
 *  - verify: the header writes err only on failure (and with valid = 0), so a valid proof
 *    has no reason even when the shared error buffer still holds an older message;
 *  - cuzk_status_json: a snapshot of exactly the limit (64 MiB) is read, not refused; one
 *    that does not fit the buffer is read after exactly one ERANGE (the header: len_out
 *    says the size needed, a caller that allocates it succeeds on its next call);
 *  - refresh() counts a drain only when it applied events (IngestStats.drains);
 *  - the background linger (README: 250 ms; shortened only when events would fill an
 *    eighth of the ring in one linger): a few events keep it; a rate that would fill an
 *    eighth of a small ring shortens the next tick to what an eighth takes at that rate.
 *    performance.now() is replaced by a test clock, so no wall-clock amount is asserted;
 *  - a re-sync after a sequence gap: snapshot and counters are re-read until they agree
 *    (the pair that agrees is adopted, also when later reads would disagree again), a
 *    bounded number of times; an awaited proof whose JOB_DONE was lost in the gap settles;
 *    a pipeline or a queue of a kind this exporter does not know counts as "other", a
 *    worker outside the topology is ignored.
 * Every engine is closed in `finally`, every replaced function restored there.
 */
import * as path from 'node:path';
import { CTR, ERR_BUF_SIZE, STATUS, loadLibrary } from '../../src/engine/sources/native/abi';
import { DEFAULT_BACKGROUND_LINGER_MS, EngineConfig, IngestOptions, NativeEngine, ProofResult } from '../../src/engine/sources/native/native-engine';
import { OTHER_KIND_INDEX } from '../../src/engine/model/kinds';
import type { CounterTotals } from '../../src/engine/model/state-model';
import { Any, patch, until, withEngine } from './native-harness';


/** A cuzk_status_json that edits the library's snapshot before the binding reads it. */
function rewriteStatus(edit: (j: Record<string, unknown>) => void) {
  const real = loadLibrary().statusJson as unknown as Any;
  return (h: unknown, buf: Buffer, cap: number, len: number[], err: Buffer, errlen: number) => {
    const rc = real(h, buf, cap, len, err, errlen);
    if (rc !== STATUS.OK) return rc;
    const j = JSON.parse(buf.toString('utf8', 0, len[0])) as Record<string, unknown>;
    edit(j);
    len[0] = buf.write(JSON.stringify(j));
    return rc;
  };
}

const FAST_SIM: EngineConfig = { backend: 'sim', time_scale: 0.001 };
const FOREVER = { synth_ms: 1e7, gpu_ms: 1e7, finalize_ms: 1e7, jitter: 0 };
const SLOW_SIM: EngineConfig = { backend: 'sim', sim: { 'porep-c2': FOREVER, 'snap-update': FOREVER, 'window-post': FOREVER, 'winning-post': FOREVER } };
/** No drain from the timers (the test drains with refresh()); the wait still runs. */
const NO_TICKS: IngestOptions = { lingerMs: 60_000, backgroundLingerMs: 60_000 };
const SNAP_DONE = CTR.HDR_WORDS + 1 * CTR.KIND_WORDS + CTR.K_PROOFS_COMPLETED;

describe('the binding', () => {
  test('the default library missing: the message names it and says how to build it', () => {
    // A fresh module (nothing loaded yet) that sees the default path as absent.
    const realFs = require('node:fs') as typeof import('node:fs'); // eslint-disable-line @typescript-eslint/no-require-imports
    const exists = realFs.existsSync;
    jest.isolateModules(() => {
      const abi = require('../../src/engine/sources/native/abi') as typeof import('../../src/engine/sources/native/abi'); // eslint-disable-line @typescript-eslint/no-require-imports
      const def = abi.defaultLibraryPath();
      expect(def).toBe(path.join(__dirname, '..', '..', 'native', 'build', 'libcuzk_engine.so'));
      const spy = jest.spyOn(realFs, 'existsSync').mockImplementation((p) => (p === def ? false : exists(p)));
      try {
        expect(() => abi.loadLibrary()).toThrow(`native library not found at ${def} (run "npm install" or "make -C native" to build it)`);
      } finally {
        spy.mockRestore();
      }
    });
  });

  test('cuzk_engine_open answering OK without a handle is refused with a readable message', () => {
    const restore = patch('open', () => STATUS.OK);
    try {
      expect(() => NativeEngine.open(FAST_SIM)).toThrow(new Error('cuzk_engine_open returned no handle'));
    } finally {
      restore();
    }
  });

  test('a valid proof has no reason, even after an invalid one left its reason in the error buffer', async () => {
    // The header's cuzk_proof_verify: "with *valid = 0 the err buffer says why"; on success
    // nothing is promised about err. This double writes err only then (the reference
    // library clears it on every call, which would hide a stale read).
    const real = loadLibrary().proofVerify as unknown as Any;
    const restore = patch('proofVerify', (proof: Buffer, len: number, id: string, valid: number[], err: Buffer, errlen: number) => {
      const own = Buffer.alloc(ERR_BUF_SIZE);
      const rc = real(proof, len, id, valid, own, own.length);
      if (rc !== STATUS.OK || valid[0] !== 1) own.copy(err, 0, 0, Math.min(errlen, own.length));
      return rc;
    });
    try {
      await withEngine({ sizes: { 'winning-post': 2 } }, async (e) => {
        const job = e.submit('winning-post', { requestId: 'mine' });
        const r: ProofResult = await e.awaitProof(job);
        expect(r.outcome).toBe('completed');
        const proof = e.proof(job);
        const other = e.verifyWithReason(proof, 'someone-else');
        expect(other.valid).toBe(false);
        expect(other.reason).not.toBe('');
        expect(e.verifyWithReason(proof, 'mine')).toEqual({ valid: true, reason: '' });
      });
    } finally {
      restore();
    }
  });
});

describe('cuzk_status_json sizes', () => {
  /** A cuzk_status_json serving `text` by the header's rules, its calls counted. */
  function serve(text: () => string) {
    const calls = { ok: 0, erange: 0 };
    const f = (_h: unknown, buf: Buffer, cap: number, len: number[]) => {
      const t = text();
      const need = Buffer.byteLength(t) + 1; // plus the NUL
      if (cap < need) {
        calls.erange++;
        len[0] = need;
        return STATUS.ERANGE;
      }
      len[0] = buf.write(t);
      buf[len[0]] = 0;
      calls.ok++;
      return STATUS.OK;
    };
    return { calls, f };
  }

  test('a snapshot needing exactly 64 MiB is read, not refused', async () => {
    await withEngine(FAST_SIM, (e) => {
      const real = loadLibrary().statusJson as unknown as Any;
      let first = true;
      // The library first says the snapshot needs exactly the limit, then answers.
      const restore = patch('statusJson', (h: unknown, buf: Buffer, cap: number, len: number[], err: Buffer, errlen: number) => {
        if (first) {
          first = false;
          len[0] = 64 << 20;
          return STATUS.ERANGE;
        }
        return real(h, buf, cap, len, err, errlen);
      });
      try {
        expect(JSON.parse(e.statusText())).toMatchObject({ backend: 'sim', pipelines: [] });
      } finally {
        restore();
      }
    });
  });

  test('a snapshot over twice the first buffer: one ERANGE, then the buffer the library asked for', async () => {
    await withEngine(FAST_SIM, (e) => {
      const big = JSON.stringify({ pad: 'x'.repeat(600 << 10) });
      const { calls, f } = serve(() => big);
      const restore = patch('statusJson', f);
      try {
        expect(e.statusText()).toBe(big);
        expect(calls).toEqual({ ok: 1, erange: 1 });
      } finally {
        restore();
      }
    });
  });
});

describe('ingest stats and cadence', () => {
  test('refresh() counts a drain only when it applied events', async () => {
    await withEngine(SLOW_SIM, async (e) => {
      // Nothing submitted: an idle engine emits no events (not even at open).
      e.refresh();
      const drains = e.stats.drains;
      expect(drains).toBe(0);
      e.refresh();
      e.refresh();
      expect(e.stats.drains).toBe(drains);
      e.submit('winning-post');
      await until(() => e.readCounters().lastSeq > e.model.lastSeq, 'the submit emitted events');
      // One refresh that applied events (however many batches): one drain.
      e.refresh();
      expect(e.stats.drains).toBe(drains + 1);
    }, NO_TICKS);
  });

  /**
   * Runs `fn` with performance.now() on a test clock and records every linger tick the engine
   * arms: its delay and the events (applied + dropped) the engine had seen when it armed it.
   */
  async function withClockAndTicks(config: EngineConfig, fn: (e: NativeEngine, clock: { ms: number }, ticks: Array<{ ms: number; seen: number }>) => Promise<void>): Promise<void> {
    const clock = { ms: 1_000 };
    const ticks: Array<{ ms: number; seen: number }> = [];
    let engine: NativeEngine | null = null;
    const realSetTimeout = global.setTimeout;
    const nowSpy = jest.spyOn(performance, 'now').mockImplementation(() => clock.ms);
    const spy = jest.spyOn(global, 'setTimeout').mockImplementation(((cb: Any, ms?: number, ...rest: unknown[]) => {
      const e = engine;
      if (e && cb === (e as unknown as { lingerTick: unknown }).lingerTick) ticks.push({ ms: ms as number, seen: e.model.eventsTotal + e.stats.dropped });
      return realSetTimeout(cb, ms, ...rest);
    }) as typeof setTimeout);
    try {
      await withEngine(config, async (e) => {
        engine = e;
        await fn(e, clock, ticks);
      });
    } finally {
      spy.mockRestore();
      nowSpy.mockRestore();
    }
  }

  test('a few events over a whole background linger (far below an eighth of the ring) keep the background linger', async () => {
    await withClockAndTicks(SLOW_SIM, async (e, clock, ticks) => {
      e.refresh();
      const seen0 = e.model.eventsTotal + e.stats.dropped;
      // 250 ms of the test clock pass; meanwhile a few events.
      clock.ms += DEFAULT_BACKGROUND_LINGER_MS;
      for (let i = 0; i < 3; i++) e.submit('window-post');
      await until(() => ticks.length >= 2, 'the tick after the first drain armed');
      expect(ticks[0].ms).toBe(DEFAULT_BACKGROUND_LINGER_MS);
      // The first tick drained these events: at least the three submits, far below 65536 / 8.
      expect(ticks[1].seen - seen0).toBeGreaterThanOrEqual(3);
      expect(ticks[1].seen - seen0).toBeLessThan(100);
      expect(ticks[1].ms).toBe(DEFAULT_BACKGROUND_LINGER_MS);
    });
  });

  test.each([
    ['ring 128, no gap', 128, 40, false],
    ['ring 16, a gap: the dropped events count too', 16, 12, true],
  ] as const)('events that would fill an eighth of the ring in one linger shorten the next tick to what an eighth takes (%s)', async (_what, ring, submits, gap) => {
    // n events (applied + dropped) over 250 ms of the test clock: an eighth of the ring
    // takes (ring / 8) * 250 / n ms at that rate; never less than the linger (10 ms).
    await withClockAndTicks({ ...SLOW_SIM, event_ring_capacity: ring }, async (e, clock, ticks) => {
      e.refresh();
      const seen0 = e.model.eventsTotal + e.stats.dropped;
      clock.ms += DEFAULT_BACKGROUND_LINGER_MS;
      for (let i = 0; i < submits; i++) e.submit('window-post');
      await until(() => ticks.length >= 2, 'the tick after the first drain armed');
      const n = ticks[1].seen - seen0;
      expect(n).toBeGreaterThanOrEqual(submits);
      expect(e.stats.dropped > 0).toBe(gap);
      expect(ticks[0].ms).toBe(DEFAULT_BACKGROUND_LINGER_MS);
      expect(ticks[1].ms).toBe(Math.max(10, Math.min(DEFAULT_BACKGROUND_LINGER_MS, ((ring / 8) * DEFAULT_BACKGROUND_LINGER_MS) / n)));
      expect(ticks[1].ms).toBeLessThan(DEFAULT_BACKGROUND_LINGER_MS);
      expect(ticks[1].ms).toBeGreaterThan(10);
    });
  });
});

describe('re-sync after a sequence gap', () => {
  /**
   * An engine whose ring (16 events) overflowed while nothing drained: one snap-update
   * (16 partitions) ran to its end. The next refresh() sees the gap and re-syncs.
   */
  async function withGap(config: EngineConfig, fn: (e: NativeEngine) => Promise<void> | void): Promise<void> {
    await withEngine({ ...FAST_SIM, event_ring_capacity: 16, ...config }, async (e) => {
      e.submit('snap-update');
      await until(() => e.readCounters().words[SNAP_DONE] === 1, 'the proof completed');
      await fn(e);
    }, NO_TICKS);
  }

  /** Snapshots whose last_seq is off (as if taken at another moment than the counters) on the calls `off` picks. */
  function skewedSnapshots(off: (call: number) => boolean) {
    const state = { calls: 0 };
    const restore = patch(
      'statusJson',
      rewriteStatus((j) => {
        state.calls++;
        if (off(state.calls)) j.last_seq = (j.last_seq as number) + 1000;
      }),
    );
    return { state, restore };
  }

  test.each([
    ['the first snapshot disagrees with the counters: both are read again', (c: number) => c === 1],
    ['the first pair agrees: it is adopted, later reads do not matter', (c: number) => c >= 2],
  ])('%s; the model ends at the engine\'s sequence number', async (_what, off) => {
    await withGap({}, (e) => {
      const { state, restore } = skewedSnapshots(off);
      try {
        e.refresh();
        expect(state.calls).toBeGreaterThanOrEqual(1);
      } finally {
        restore();
      }
      expect(e.stats.dropped).toBeGreaterThan(0);
      expect(e.stats.resyncs).toBe(1);
      expect(e.model.lastSeq).toBe(e.readCounters().lastSeq);
      expect(Array.from(e.model.kProofsCompleted)).toEqual([0, 1, 0, 0, 0]);
      // Re-synced: the next refresh (no gap) only drains.
      e.refresh();
      expect(e.stats.resyncs).toBe(1);
    });
  });

  test('snapshot and counters that never agree: the re-sync still ends after a few re-reads', async () => {
    await withGap({}, (e) => {
      // Off for a thousand reads (then the double gives up, so a run that retried without
      // bound still ends, and fails below).
      const { state, restore } = skewedSnapshots((c) => c <= 1000);
      try {
        e.refresh();
      } finally {
        restore();
      }
      expect(e.stats.resyncs).toBe(1);
      expect(state.calls).toBeGreaterThan(1);
      expect(state.calls).toBeLessThan(50);
    });
  });

  test('an awaited proof whose JOB_DONE was lost in the gap settles at the re-sync', async () => {
    await withEngine({ ...FAST_SIM, event_ring_capacity: 16 }, async (e) => {
      const job = e.submit('snap-update', { requestId: 'done-in-gap' });
      let result: ProofResult | undefined;
      const waiting = e.awaitProof(job).then((r) => (result = r));
      await until(() => e.readCounters().words[SNAP_DONE] === 1, 'the proof completed');
      // More than a ring of later events, so its JOB_DONE is overwritten, not drained.
      const before = e.readCounters().lastSeq;
      while (e.readCounters().lastSeq < before + 40) e.cancel(e.submit('window-post'));
      expect(result).toBeUndefined();
      e.refresh();
      expect(e.stats.dropped).toBeGreaterThan(0);
      // Settled in the refresh (the promise callbacks run on the next turns).
      await new Promise((r) => setImmediate(r));
      expect(result).toMatchObject({ job, jobId: 'done-in-gap', kind: 'snap-update', outcome: 'completed' });
      await waiting;
    }, NO_TICKS);
  });

  test('a snapshot with a kind this exporter does not know and a worker outside the topology', async () => {
    await withGap({ gpus: 1, workers_per_gpu: 2 }, (e) => {
      const since = e.now() - 1e6;
      const restore = patch(
        'statusJson',
        rewriteStatus((j) => {
          (j.pipelines as unknown[]).push({
            job_id: 'from-a-newer-cuzk', proof_kind: 'porep-c3', started_secs_ago: 0.01, total_partitions: 1, partitions_done: 0,
            partitions: [{ index: 0, state: 'synthesizing', synth_ms: 1, gpu_ms: null, finalizing: false, finalizing_since_ns: null, abandoned: false, gpu_ordinal: null, worker_id: null }],
            job_handle: 999, priority: 50, outcome: 'running', finished_secs_ago: null,
          });
          (j.gpu_workers as unknown[]).push({
            worker_id: 2, gpu_ordinal: 0, state: 'proving', current_job: 'from-a-newer-cuzk', current_partition: 0, busy_secs: 0.001,
            busy_total_secs: 0.001, busy_since_ns: since, current_job_handle: 999, current_kind: 'porep-c3',
          });
          const byKind = (j.counters as { queue_depth_by_kind: Record<string, number> }).queue_depth_by_kind;
          byKind['porep-c3'] = 2;
          byKind['porep-c2'] = 3;
        }),
      );
      try {
        e.refresh();
      } finally {
        restore();
      }
      expect(e.stats.resyncs).toBe(1);
      expect(e.model.jobs.get(999)?.kind).toBe(OTHER_KIND_INDEX);
      expect(Array.from(e.model.kQueueDepth)).toEqual([3, 0, 0, 0, 2]);
      // Workers 0 and 1 are the topology; the snapshot's worker 2 is no one's.
      expect(Array.from(e.model.wBusy)).toEqual([0, 0]);
    });
  });
});

/*
 * Mutants the partial run recorded as killed only by a test removed since (commit 18ff408:
 * the wall-clock background-linger test): what they change, pinned without wall time.
 */
describe('open, counters and re-sync details', () => {
  test('what the snapshot at open shows is the model\'s starting state', async () => {
    // A fresh engine shows nothing; this double's snapshot at open has memory in use and
    // queued window-posts, as an engine that ran before we attached would.
    const restore = patch(
      'statusJson',
      rewriteStatus((j) => {
        (j.memory as { used_bytes: number }).used_bytes = 4096;
        (j.counters as { queue_depth_by_kind: Record<string, number> }).queue_depth_by_kind['window-post'] = 2;
      }),
    );
    let e: NativeEngine;
    try {
      e = NativeEngine.open(SLOW_SIM, undefined, NO_TICKS);
    } finally {
      restore();
    }
    try {
      expect(e.model.memoryUsedBytes).toBe(4096);
      expect(Array.from(e.model.kQueueDepth)).toEqual([0, 0, 2, 0, 0]);
    } finally {
      await e.close();
    }
  });

  test('four GPUs: the counter blocks of every GPU and worker are read', async () => {
    await withEngine({ ...SLOW_SIM, gpus: 4, workers_per_gpu: 1 }, (e) => {
      const t = e.runningTotals() as unknown as CounterTotals;
      expect([t.gpuLockHeldNs.length, t.gpuStarvedNs.length, t.workerBusyNs.length, t.workerPartitions.length]).toEqual([4, 4, 4, 4]);
    });
  });

  test('per-GPU totals are the words at the header\'s offsets of each GPU\'s block', async () => {
    await withEngine({ backend: 'sim', gpus: 2, workers_per_gpu: 1, time_scale: 0.01 }, async (e) => {
      const jobs = [e.submit('snap-update', { partitions: 6 }), e.submit('window-post'), e.submit('winning-post'), e.submit('snap-update', { partitions: 4 })];
      for (const j of jobs) expect((await e.awaitProof(j)).outcome).toBe('completed');
      // Quiet now: both reads see the same counters.
      const t = e.runningTotals() as unknown as CounterTotals;
      const { words } = e.readCounters();
      const nKinds = words[CTR.KINDS];
      const at = (g: number, f: number) => words[CTR.HDR_WORDS + nKinds * CTR.KIND_WORDS + g * CTR.GPU_WORDS + f];
      expect(t.gpuLockHeldNs).toEqual([at(0, CTR.G_LOCK_HELD_NS), at(1, CTR.G_LOCK_HELD_NS)]);
      expect(t.gpuStarvedNs).toEqual([at(0, CTR.G_STARVED_NS), at(1, CTR.G_STARVED_NS)]);
      // Both GPUs held the lock; the values differ from the neighbouring words.
      expect(Array.from(t.gpuLockHeldNs).every((ns) => ns > 0)).toBe(true);
    });
  });

  test('cuzk_counters_read failing: its NativeError reaches the caller', async () => {
    await withEngine(SLOW_SIM, (e) => {
      const restore = patch('countersRead', (_h: unknown, _b: unknown, _c: unknown, _n: unknown, err: Buffer) => {
        err.write('counters broke\0');
        return STATUS.EINTERNAL;
      });
      try {
        expect(() => e.runningTotals()).toThrow('cuzk_counters_read: EINTERNAL: counters broke');
      } finally {
        restore();
      }
    });
  });

  test('one refresh takes every pending event, also more than one batch (4096) of them', async () => {
    await withEngine(SLOW_SIM, (e) => {
      while (e.readCounters().lastSeq < 5000) e.cancel(e.submit('window-post'));
      e.refresh();
      expect(e.stats.batches).toBeGreaterThanOrEqual(2);
      expect(e.model.lastSeq).toBe(e.readCounters().lastSeq);
      expect(e.stats.dropped).toBe(0);
    }, NO_TICKS);
  });

  test('after a re-sync the model stands at the snapshot\'s sequence number, also past the last event drained', async () => {
    // Snapshot and counters both taken 5 events after the drain (events the snapshot already
    // reflects must not be applied again).
    await withEngine({ ...FAST_SIM, event_ring_capacity: 16 }, async (e) => {
      e.submit('snap-update');
      await until(() => e.readCounters().words[SNAP_DONE] === 1, 'the proof completed');
      const real = e.readCounters().lastSeq;
      const realCounters = loadLibrary().countersRead as unknown as Any;
      const restoreCounters = patch('countersRead', (h: unknown, buf: BigUint64Array, ...rest: unknown[]) => {
        const rc = realCounters(h, buf, ...rest);
        if (rc === STATUS.OK) buf[CTR.LAST_SEQ] += 5n;
        return rc;
      });
      const restoreStatus = patch('statusJson', rewriteStatus((j) => (j.last_seq = (j.last_seq as number) + 5)));
      try {
        e.refresh();
      } finally {
        restoreStatus();
        restoreCounters();
      }
      expect(e.stats.resyncs).toBe(1);
      expect(e.model.lastSeq).toBe(real + 5);
    }, NO_TICKS);
  });

  test('a worker that started proving inside a gap is busy after the re-sync', async () => {
    const gpuForever = { synth_ms: 1, gpu_ms: 1e7, finalize_ms: 1e7, jitter: 0 };
    await withEngine({ backend: 'sim', event_ring_capacity: 16, gpus: 1, workers_per_gpu: 2, sim: { ...SLOW_SIM.sim as object, 'porep-c2': gpuForever } }, async (e) => {
      const job = e.submit('porep-c2', { partitions: 1 });
      type W = { worker_id: number; state: string; current_job_handle: number | null };
      const proving = () => (JSON.parse(e.statusText()).gpu_workers as W[]).filter((w) => w.state === 'proving');
      await until(() => proving().length === 1, 'a worker proving');
      const w = proving()[0].worker_id;
      // More than a ring of later events: the worker's start is lost.
      const before = e.readCounters().lastSeq;
      while (e.readCounters().lastSeq < before + 40) e.cancel(e.submit('window-post'));
      e.refresh();
      expect(e.stats.dropped).toBeGreaterThan(0);
      expect(e.stats.resyncs).toBeGreaterThanOrEqual(1);
      expect(Array.from(e.model.wBusy)).toEqual([0, 1].map((i) => (i === w ? 1 : 0)));
      expect(e.model.wJob[w]).toBe(job);
    }, NO_TICKS);
  });
  test('a proving stint that ended inside a gap: the worker\'s busy time is the engine\'s, no duration observed by the re-sync', async () => {
    const gpuForever = { synth_ms: 1, gpu_ms: 1e7, finalize_ms: 1e7, jitter: 0 };
    await withEngine({ backend: 'sim', event_ring_capacity: 16, gpus: 1, workers_per_gpu: 1, sim: { ...SLOW_SIM.sim as object, 'porep-c2': gpuForever } }, async (e) => {
      const job = e.submit('porep-c2', { partitions: 1 });
      await until(() => {
        e.refresh();
        return e.model.wBusy[0] === 1;
      }, 'the model sees the worker proving');
      // Runbook (events dropped): state changes inside a gap are not seen, so the re-sync
      // observes no durations; the totals come from the engine's counters.
      const gpuObserved: number[] = [];
      e.model.observer = {
        partitionGpu: (kind) => gpuObserved.push(kind),
        partitionSynthesis: () => {},
        proofDone: () => {},
        queueWait: () => {},
        gpuIdleGap: () => {},
      };
      // The stint ends (cancel cuts the sim's GPU sleep short); its end is then lost in a gap.
      e.cancel(job);
      const cancelled = CTR.HDR_WORDS + 0 * CTR.KIND_WORDS + CTR.K_PROOFS_CANCELLED;
      await until(() => e.readCounters().words[cancelled] === 1 && e.readCounters().words[CTR.HDR_WORDS + 4 * CTR.KIND_WORDS + 1 * CTR.GPU_WORDS + CTR.W_BUSY] === 0, 'the job cancelled, the worker idle');
      const before = e.readCounters().lastSeq;
      while (e.readCounters().lastSeq < before + 40) e.cancel(e.submit('window-post'));
      e.refresh();
      expect(e.stats.dropped).toBeGreaterThan(0);
      expect(e.model.wBusy[0]).toBe(0);
      const engineBusy = e.runningTotals()!.workerBusyNs[0];
      expect(engineBusy).toBeGreaterThan(0);
      expect(e.model.wBusyNs[0]).toBe(engineBusy);
      expect(gpuObserved).toEqual([]);
    }, NO_TICKS);
  });
});
