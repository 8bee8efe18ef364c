/**
 * How NativeEngine ingests the reference library's events and counters
 * (src/engine/sources/native/native-engine.ts), on the real library:
 *  - batches: every drained event reaches the model and the onEvents/onBatch hooks once, in
 *    sequence, each batch ending on a whole group (cuzk_engine.h: CUZK_EVF_GROUP_END);
 *  - a group larger than the drain buffer (cuzk_events_drain's CUZK_ERANGE, provoked by
 *    clamping the buffer the binding passes) is taken whole;
 *  - a sequence gap (tiny ring) is counted and re-synced, and awaited proofs still settle;
 *  - awaits settle and request ids are forgotten from the model's jobEnds: every JOB_DONE /
 *    JOB_EVICTED of a batch (several in one), of jobs the model knows or not; the list is
 *    emptied after each batch and after a re-sync;
 *  - the per-kind, per-GPU and per-worker blocks of cuzk_counters_read land where the
 *    header's layout puts them (2 GPUs x 3 workers, so the blocks have different lengths);
 *  - failures of cuzk_events_wait / cuzk_events_drain / cuzk_engine_close (injected at the
 *    binding, the library's own answers otherwise) are counted and surfaced, not thrown away;
 *  - the drain cadence (README: once per 10 ms while something waits on the push path, once
 *    per 250 ms otherwise, sooner when the ring would fill), read from the timers armed.
 * Every engine is closed in `finally`, every patched binding restored there.
 */
import { CTR, ERR_BUF_SIZE, NativeError, STATUS, loadLibrary } from '../../src/engine/sources/native/abi';
import { EVENT_SIZE, EVF_GROUP_END, EV_JOB_DONE, EV_JOB_QUEUED, EV_JOB_STARTED, EV_OFF_FLAGS, EV_OFF_JOB, EV_OFF_SEQ, EV_OFF_TYPE, EV_OFF_VALUE, readU64 } from '../../src/engine/model/event-layout';
import type { CounterTotals } from '../../src/engine/model/state-model';
import { DEFAULT_BACKGROUND_LINGER_MS, DEFAULT_INGEST_LINGER_MS, EngineConfig, NativeEngine, ProofResult } from '../../src/engine/sources/native/native-engine';
import { Any, patch, until, withEngine } from './native-harness';


/** A proof result, or a readable failure instead of hanging until jest's timeout. */
function settleWithin(p: Promise<ProofResult>, ms = 10_000): Promise<ProofResult> {
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('proof did not settle')), ms)));
  return Promise.race([p, cap]).finally(() => clearTimeout(timer));
}

const FAST_SIM: EngineConfig = { backend: 'sim', time_scale: 0.001 };
const FOREVER = { synth_ms: 1e7, gpu_ms: 1e7, finalize_ms: 1e7, jitter: 0 };
const SLOW_SIM: EngineConfig = { backend: 'sim', sim: { 'porep-c2': FOREVER, 'snap-update': FOREVER, 'window-post': FOREVER, 'winning-post': FOREVER } };

interface Batch {
  n: number;
  seqs: number[];
  groupEnds: number[];
}
function recordBatches(e: NativeEngine): Batch[] {
  const batches: Batch[] = [];
  e.onEvents = (v, n) => {
    const b: Batch = { n, seqs: [], groupEnds: [] };
    for (let i = 0; i < n; i++) {
      b.seqs.push(readU64(v, i * EVENT_SIZE + EV_OFF_SEQ));
      if (v.getUint16(i * EVENT_SIZE + EV_OFF_FLAGS, true) & EVF_GROUP_END) b.groupEnds.push(i);
    }
    batches.push(b);
  };
  return batches;
}

describe('event batches', () => {
  test('every event reaches the model and the hooks once, in sequence, in whole groups', async () => {
    await withEngine(FAST_SIM, async (e) => {
      const batches = recordBatches(e);
      let onBatch = 0;
      e.onBatch = () => onBatch++;
      const jobs = [e.submit('snap-update', { partitions: 4 }), e.submit('winning-post'), e.submit('window-post')];
      const results = await Promise.all(jobs.map((j) => settleWithin(e.awaitProof(j))));
      expect(results.map((r) => r.outcome)).toEqual(['completed', 'completed', 'completed']);
      e.refresh();
      const seqs = batches.flatMap((b) => b.seqs);
      expect(seqs.length).toBeGreaterThan(20);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
      expect(batches.every((b) => b.n > 0 && b.groupEnds[b.groupEnds.length - 1] === b.n - 1)).toBe(true);
      expect(onBatch).toBe(batches.length);
      expect(e.stats.batches).toBe(batches.length);
      expect(e.stats.drains).toBeGreaterThanOrEqual(1);
      expect(e.stats.drains).toBeLessThanOrEqual(batches.length);
      expect(e.stats.waits).toBeGreaterThanOrEqual(1);
      expect([e.stats.dropped, e.stats.resyncs]).toEqual([0, 0]);
      expect(e.model.eventsTotal).toBe(seqs.length);
      // Quiet now: the model is at the engine's last sequence number.
      expect(e.model.lastSeq).toBe(e.readCounters().lastSeq);
      expect(e.model.up).toBe(true);
    });
  });

  test('a group larger than the drain buffer is taken whole (cuzk_events_drain ERANGE)', async () => {
    const lib = loadLibrary();
    const real = lib.eventsDrain as unknown as Any;
    let ranged = 0;
    // The binding's batch buffer, clamped to one event: every group of two or more events
    // comes back as ERANGE with its size, as an abort of a huge job would.
    const restore = patch('eventsDrain', (h: unknown, buf: Buffer, cap: number, ...rest: unknown[]) => {
      const rc = real(h, buf, cap >= 4096 ? 1 : cap, ...rest);
      if (rc === STATUS.ERANGE) ranged++;
      return rc;
    });
    try {
      await withEngine(FAST_SIM, async (e) => {
        const batches = recordBatches(e);
        const r = await settleWithin(e.awaitProof(e.submit('snap-update', { partitions: 3 })));
        expect(r.outcome).toBe('completed');
        e.refresh();
        expect(ranged).toBeGreaterThan(0);
        const seqs = batches.flatMap((b) => b.seqs);
        expect(seqs).toEqual(seqs.map((_, i) => i + 1));
        // Each batch is exactly one group here.
        expect(batches.every((b) => b.groupEnds.length === 1 && b.groupEnds[0] === b.n - 1)).toBe(true);
        expect(Math.max(...batches.map((b) => b.n))).toBeGreaterThan(1);
        expect(e.model.errors.get('event_drain')).toBe(0);
        expect(e.model.eventsTotal).toBe(seqs.length);
      }, { lingerMs: 1 });
    } finally {
      restore();
    }
  });

  test('a sequence gap (tiny ring) is counted and re-synced; the awaited proof still settles', async () => {
    await withEngine({ ...FAST_SIM, event_ring_capacity: 16 }, async (e) => {
      const r = await settleWithin(e.awaitProof(e.submit('snap-update')));
      expect(r.outcome).toBe('completed');
      e.refresh();
      expect(e.stats.dropped).toBeGreaterThan(0);
      expect(e.stats.resyncs).toBeGreaterThanOrEqual(1);
      expect(e.model.eventsDropped).toBe(e.stats.dropped);
      // The totals the gap swallowed come from the counters.
      expect(Array.from(e.model.kProofsCompleted)).toEqual([0, 1, 0, 0, 0]);
      expect(e.model.lastSeq).toBe(e.readCounters().lastSeq);
    }, { lingerMs: 40 });
  });

  test('an evicted job\'s id is forgotten when its JOB_EVICTED event is drained', async () => {
    // Retention long enough for the result to be fetched first (a job evicted before its
    // JOB_DONE is drained has no result left: cuzk_await ENOTFOUND). It is how long the JS
    // thread may stall between the proof's end and its drain: 600 ms failed with a 700 ms
    // busy-wait after submit; 1 s, as ingest-cadence's job-ids test.
    await withEngine({ ...FAST_SIM, finished_retention_ms: 1000 }, async (e) => {
      const job = e.submit('winning-post', { requestId: 'gone-soon' });
      const r = await settleWithin(e.awaitProof(job));
      expect(r.jobId).toBe('gone-soon');
      await until(() => {
        e.refresh();
        return !e.model.jobs.has(job) && !(e.statusBody() as { pipelines: { job_handle: number }[] }).pipelines.some((p) => p.job_handle === job);
      }, 'job evicted');
      expect(e.requestId(job)).toBe(String(job));
      expect(e.jobId(job)).toBeUndefined();
    }, { lingerMs: 0 });
  });

  test('proofs awaited together whose JOB_DONEs come in one batch all settle, each with its own result', async () => {
    // Drains held off (cuzk_events_drain answers "nothing") until all three proofs ended,
    // so their JOB_DONEs reach the model in one batch: afterBatch settles every one of them
    // from the model's jobEnds, not only the first.
    const lib = loadLibrary();
    const real = lib.eventsDrain as unknown as Any;
    let hold = true;
    const restore = patch('eventsDrain', (h: unknown, buf: Buffer, cap: number, nOut: Uint32Array, dropped: BigUint64Array, ...rest: unknown[]) => {
      if (!hold) return real(h, buf, cap, nOut, dropped, ...rest);
      nOut[0] = 0;
      dropped[0] = 0n;
      return STATUS.OK;
    });
    // ~100 ms each at scale 1: none has ended when its await is armed (submit and await run
    // back to back below), so each await waits on a drain.
    const t = { synth_ms: 50, gpu_ms: 50, finalize_ms: 0, jitter: 0 };
    try {
      await withEngine({ backend: 'sim', gpus: 2, sim: { 'winning-post': t, 'window-post': t, 'snap-update': t }, finished_retention_ms: 60_000 }, async (e) => {
        const batches: number[][] = [];
        e.onEvents = (v, n) => {
          const done: number[] = [];
          for (let i = 0; i < n; i++) if (v.getUint16(i * EVENT_SIZE + EV_OFF_TYPE, true) === EV_JOB_DONE) done.push(readU64(v, i * EVENT_SIZE + EV_OFF_JOB));
          batches.push(done);
        };
        const asked = [
          { kind: 'winning-post', id: 'one', partitions: 1 },
          { kind: 'window-post', id: 'two', partitions: 1 },
          { kind: 'snap-update', id: 'three', partitions: 2 },
        ] as const;
        const settled: ProofResult[] = [];
        const jobs = asked.map((a) => e.submit(a.kind, { requestId: a.id, partitions: a.partitions }));
        const waits = jobs.map((j) => e.awaitProof(j).then((r) => (settled.push(r), r)));
        await until(() => {
          const w = e.readCounters().words;
          return [1, 2, 3].every((k) => w[CTR.HDR_WORDS + k * CTR.KIND_WORDS + CTR.K_PROOFS_COMPLETED] === 1);
        }, 'all three proofs completed in the engine');
        // Ended in the engine, nothing drained: no await settled yet.
        expect([settled.length, batches.length]).toEqual([0, 0]);
        hold = false;
        const rs = await Promise.all(waits.map((w) => settleWithin(w)));
        expect(batches.filter((b) => b.length > 0)).toEqual([expect.arrayContaining(jobs)]);
        expect(rs.map((r) => [r.job, r.jobId, r.kind, r.outcome, r.partitions])).toEqual(asked.map((a, i) => [jobs[i], a.id, a.kind, 'completed', a.partitions]));
        // The model's list is emptied after each batch (it would grow by every job otherwise).
        expect(e.model.jobEnds).toEqual([]);
      });
    } finally {
      restore();
    }
  });

  test('a job the model never saw queued still settles its await and has its id forgotten at JOB_EVICTED', async () => {
    // Its JOB_QUEUED record is given a type the model skips, so the model holds no job under
    // the handle: the awaits and ids are the engine's, settled from every JOB_DONE/JOB_EVICTED.
    const lib = loadLibrary();
    const real = lib.eventsDrain as unknown as Any;
    let hidden = -1;
    const restore = patch('eventsDrain', (h: unknown, buf: Buffer, cap: number, nOut: Uint32Array, ...rest: unknown[]) => {
      const rc = real(h, buf, cap, nOut, ...rest);
      if (rc === STATUS.OK) {
        for (let i = 0; i < nOut[0]; i++) {
          const off = i * EVENT_SIZE;
          if (buf.readUInt16LE(off + EV_OFF_TYPE) === EV_JOB_QUEUED && readU64(new DataView(buf.buffer, buf.byteOffset), off + EV_OFF_JOB) === hidden) buf.writeUInt16LE(999, off + EV_OFF_TYPE);
        }
      }
      return rc;
    });
    const t = { synth_ms: 20, gpu_ms: 20, finalize_ms: 0, jitter: 0 };
    try {
      // Retention long enough for the result to be fetched before the eviction even on a
      // stalled box (the eviction is then waited for as a condition).
      await withEngine({ backend: 'sim', sim: { 'winning-post': t }, finished_retention_ms: 3000 }, async (e) => {
        const job = e.submit('winning-post', { requestId: 'unseen' });
        hidden = job;
        const r = await settleWithin(e.awaitProof(job));
        expect([r.job, r.jobId, r.outcome]).toEqual([job, 'unseen', 'completed']);
        expect(e.model.jobs.has(job)).toBe(false);
        expect(e.model.kProofsCompleted[3]).toBe(0); // the model ignored its JOB_DONE
        await until(() => !(e.statusBody() as { pipelines: { job_handle: number }[] }).pipelines.some((p) => p.job_handle === job), 'job evicted');
        e.refresh();
        expect(e.requestId(job)).toBe(String(job));
        expect(e.model.jobEnds).toEqual([]);
      }, { lingerMs: 1 });
    } finally {
      restore();
    }
  });
});

describe('counter blocks (2 GPUs x 3 workers)', () => {
  test('per-kind, per-GPU and per-worker totals land in their own blocks', async () => {
    await withEngine({ ...FAST_SIM, gpus: 2, workers_per_gpu: 3 }, async (e) => {
      const jobs = [e.submit('winning-post'), e.submit('winning-post'), e.submit('window-post'), e.submit('snap-update', { partitions: 3 })];
      const rs = await Promise.all(jobs.map((j) => settleWithin(e.awaitProof(j))));
      expect(rs.every((r) => r.outcome === 'completed')).toBe(true);
      const t = e.runningTotals() as unknown as CounterTotals;
      const byKind = (f: (r: ProofResult) => number) => [0, 1, 2, 3].map((k) => rs.filter((r) => ['porep-c2', 'snap-update', 'window-post', 'winning-post'][k] === r.kind).reduce((a, r) => a + f(r), 0));
      expect(t.kindProofsCompleted).toEqual([0, 1, 1, 2]);
      expect(t.kindPartsCompleted).toEqual([0, 3, 1, 2]);
      expect(t.kindPartsFailed).toEqual([0, 0, 0, 0]);
      expect(t.kindProofsFailed).toEqual([0, 0, 0, 0]);
      expect(t.kindProofsCancelled).toEqual([0, 0, 0, 0]);
      expect(t.kindGpuNs).toEqual(byKind((r) => r.gpuNs));
      expect(t.kindSynthNs).toEqual(byKind((r) => r.synthNs));
      expect(t.kindFinalizeNs![0]).toBe(0);
      expect([1, 2, 3].every((k) => t.kindFinalizeNs![k] > 0)).toBe(true);
      expect(t.workerPartitions.length).toBe(6);
      expect(Array.from(t.workerPartitions).reduce((a, b) => a + b, 0)).toBe(6);
      expect(t.workerBusyNs.length).toBe(6);
      expect(Array.from(t.workerBusyNs).every((ns, w) => (t.workerPartitions[w] > 0 ? ns > 0 : ns === 0))).toBe(true);
      expect(t.gpuLockHeldNs.length).toBe(2);
      expect(Array.from(t.gpuLockHeldNs).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(t.gpuStarvedNs.length).toBe(2);
      // Held and starved time of a GPU are disjoint, so together within the uptime.
      const up = e.readCounters().words[12];
      expect([0, 1].every((g) => t.gpuLockHeldNs[g] + t.gpuStarvedNs[g] <= up)).toBe(true);
    });
  });
});

describe('failures of the library reach the caller and the error counters', () => {
  test('cuzk_events_drain failing: refresh throws its NativeError, the model is down, background drains count it', async () => {
    await withEngine(FAST_SIM, async (e) => {
      const restore = patch('eventsDrain', (_h: unknown, _b: unknown, _c: unknown, _n: unknown, _d: unknown, err: Buffer) => {
        err.write('drain broke\0');
        return STATUS.EINTERNAL;
      });
      try {
        let thrown: unknown;
        try {
          e.refresh();
        } catch (x) {
          thrown = x;
        }
        expect(thrown).toBeInstanceOf(NativeError);
        expect(thrown).toMatchObject({ fn: 'cuzk_events_drain', status: STATUS.EINTERNAL, message: 'cuzk_events_drain: EINTERNAL: drain broke' });
        expect(e.model.up).toBe(false);
        e.submit('winning-post');
        await until(() => e.model.errors.get('event_drain') >= 1, 'a background drain failed');
        expect(e.model.errors.lastMessage).toBe('cuzk_events_drain: EINTERNAL: drain broke');
      } finally {
        restore();
      }
      e.refresh();
      expect(e.model.up).toBe(true);
    }, { lingerMs: 1, backgroundLingerMs: 1 });
  });

  test('cuzk_events_wait failing is counted and retried; its timeouts are not failures', async () => {
    let calls = 0;
    let answer: (cb: Any, err: Buffer) => void = (cb, err) => {
      err.write('wait broke\0');
      cb(null, STATUS.EINTERNAL);
    };
    const restore = patch('eventsWait', {
      async: (...args: unknown[]) => {
        const cb = args.pop() as Any;
        const err = args[2] as Buffer;
        calls++;
        setImmediate(() => answer(cb, err));
      },
    });
    try {
      await withEngine(FAST_SIM, async (e) => {
        await until(() => calls >= 2, 'the wait re-armed after its failure');
        expect(e.model.errors.get('event_wait')).toBeGreaterThanOrEqual(1);
        expect(e.model.errors.lastMessage).toBe('cuzk_events_wait failed: EINTERNAL: wait broke');
        answer = (cb) => cb(new Error('pool gone'), 0);
        const n = calls;
        await until(() => calls >= n + 2, 'retried after a thrown error');
        expect(e.model.errors.lastMessage).toBe('cuzk_events_wait failed: pool gone');
        // ETIMEDOUT: the wait is simply armed again at once, nothing counted, nothing drained.
        answer = (cb) => cb(null, STATUS.ETIMEDOUT);
        await until(() => calls >= n + 4, 'timeouts re-armed');
        const errors = e.model.errors.get('event_wait');
        const m = calls;
        const spy = jest.spyOn(global, 'setTimeout');
        try {
          await until(() => calls >= m + 20, 'timeouts re-armed at once');
          const tick = (e as unknown as { lingerTick: unknown }).lingerTick;
          expect(spy.mock.calls.filter((c) => c[0] === tick)).toEqual([]);
        } finally {
          spy.mockRestore();
        }
        expect(e.model.errors.get('event_wait')).toBe(errors);
        expect(e.stats.waits).toBe(calls);
      });
    } finally {
      restore();
    }
  });

  test('cuzk_engine_close failing: close rejects with its NativeError, the engine counts as closed', async () => {
    const lib = loadLibrary();
    const realClose = lib.close as unknown as { async: Any };
    const restore = patch('close', {
      async: (ref: unknown, err: Buffer, len: number, cb: Any) =>
        realClose.async(ref, err, len, (e: Error | null) => {
          err.write('close broke\0');
          cb(e, STATUS.EINTERNAL);
        }),
    });
    try {
      const e = NativeEngine.open(SLOW_SIM);
      const waiting = e.awaitProof(e.submit('porep-c2'));
      waiting.catch(() => {});
      await expect(e.close()).rejects.toMatchObject({ fn: 'cuzk_engine_close', status: STATUS.EINTERNAL, message: 'cuzk_engine_close: EINTERNAL: close broke' });
      expect(e.closed).toBe(true);
      await expect(waiting).rejects.toThrow('engine closed before the proof finished');
    } finally {
      restore();
    }
    const restore2 = patch('close', {
      async: (ref: unknown, err: Buffer, len: number, cb: Any) => realClose.async(ref, err, len, () => cb(new Error('pool gone'), 0)),
    });
    try {
      const e = NativeEngine.open(SLOW_SIM);
      await expect(e.close()).rejects.toThrow('pool gone');
      expect(e.closed).toBe(true);
    } finally {
      restore2();
    }
  });

  test('cuzk_await answers: unknown kind refused; outcome and failed partition decoded', async () => {
    const lib = loadLibrary();
    const real = lib.await as unknown as Any;
    let edit: (res: Record<string, number>) => void = () => {};
    const restore = patch('await', (h: unknown, job: unknown, ms: unknown, res: Record<string, number>, err: Buffer, len: number) => {
      const rc = real(h, job, ms, res, err, len);
      if (rc === STATUS.OK) edit(res);
      return rc;
    });
    try {
      await withEngine(FAST_SIM, async (e) => {
        const job = e.submit('winning-post');
        const r = await settleWithin(e.awaitProof(job));
        expect([r.outcome, r.failedPartition]).toEqual(['completed', null]);
        edit = (res) => (res.kind = 9);
        await expect(e.awaitProof(job)).rejects.toThrow(`cuzk_await: result of job ${job} has unknown proof kind 9`);
        edit = (res) => ((res.outcome = 2), (res.failed_partition = 0));
        expect(await e.awaitProof(job)).toMatchObject({ outcome: 'cancelled', failedPartition: 0 });
        edit = (res) => (res.outcome = 1);
        expect((await e.awaitProof(job)).outcome).toBe('failed');
        edit = (res) => (res.outcome = 7);
        expect((await e.awaitProof(job)).outcome).toBe('failed');
      });
    } finally {
      restore();
    }
  });

  test('a status snapshot larger than the first buffer is read whole', async () => {
    await withEngine({ ...SLOW_SIM, synthesis_concurrency: 1 }, (e) => {
      for (let i = 0; i < 12; i++) e.submit('porep-c2', { partitions: 256, requestId: `big-${i}` });
      const text = e.statusText();
      expect(text.length).toBeGreaterThan(256 << 10);
      const s = e.status();
      expect(s.pipelines.map((p) => p.job_id)).toEqual(Array.from({ length: 12 }, (_, i) => `big-${i}`));
      expect(s.pipelines.every((p) => p.partitions.length === 256)).toBe(true);
    });
  });
});

/** A cuzk_status_json that edits the library's snapshot before the binding reads it. */
function rewriteStatus(real: Any, edit: (j: Record<string, unknown>) => void) {
  return (h: unknown, buf: Buffer, cap: number, len: number[], err: Buffer, errlen: number) => {
    const rc = real(h, buf, cap, len, err, errlen);
    if (rc !== STATUS.OK) return rc;
    const j = JSON.parse(buf.toString('utf8', 0, len[0])) as Record<string, unknown>;
    edit(j);
    const t = JSON.stringify(j);
    len[0] = buf.write(t);
    return rc;
  };
}

describe('snapshots and awaits at the edges', () => {
  test('a snapshot the binding cannot use: open throws a readable error and closes the engine it opened', () => {
    const lib = loadLibrary();
    const realClose = lib.close as unknown as Any & { async: Any };
    let closes = 0;
    let edit: (j: Record<string, unknown>) => void = (j) => delete j.uptime_secs;
    const restoreStatus = patch('statusJson', rewriteStatus(lib.statusJson as unknown as Any, (j) => edit(j)));
    const closeFn = Object.assign((...a: unknown[]) => (closes++, realClose(...a)), { async: (...a: unknown[]) => (closes++, realClose.async(...a)) });
    const restoreClose = patch('close', closeFn);
    try {
      expect(() => NativeEngine.open(FAST_SIM)).toThrow(/^native status snapshot is invalid: uptime_secs/);
      expect(closes).toBe(1);
    } finally {
      restoreClose();
      restoreStatus();
    }
  });

  test('a snapshot without gpus[]: the engine opens but is not ready (no GPU)', async () => {
    const lib = loadLibrary();
    const restore = patch('statusJson', rewriteStatus(lib.statusJson as unknown as Any, (j) => delete j.gpus));
    try {
      await withEngine(FAST_SIM, (e) => {
        expect(e.model.topology.gpus).toEqual([]);
        expect(e.ready()).toEqual({ ok: false, reason: 'no GPU' });
      });
    } finally {
      restore();
    }
  });

  test('a snapshot without the optional backend, synthesis and memory sections: backend from the config, no slots, no budget', async () => {
    const lib = loadLibrary();
    const restore = patch(
      'statusJson',
      rewriteStatus(lib.statusJson as unknown as Any, (j) => {
        delete j.backend;
        delete j.synthesis;
        delete j.memory;
      }),
    );
    try {
      await withEngine({ ...FAST_SIM, synthesis_concurrency: 3 }, (e) => {
        expect([e.backend, e.model.synthMax, e.model.memoryBudgetBytes]).toEqual(['sim', 0, 0]);
        expect(e.ready()).toEqual({ ok: true, reason: '' });
      });
      await withEngine({ sizes: { 'winning-post': 2 } }, (e) => expect(e.backend).toBe('cpu'));
    } finally {
      restore();
    }
  });

  test('a snapshot the library says is over 64 MiB is refused, not allocated', async () => {
    await withEngine(FAST_SIM, (e) => {
      const restore = patch('statusJson', (_h: unknown, _b: unknown, _c: unknown, len: number[]) => {
        len[0] = 2 ** 27;
        return STATUS.ERANGE;
      });
      try {
        expect(() => e.statusText()).toThrow('status snapshot of 134217728 bytes exceeds 67108864');
      } finally {
        restore();
      }
    });
  });

  test('jobs evicted inside a sequence gap leave the model and their ids are forgotten', async () => {
    // The first job lasts ~0.6 s (one partition, 500 + 100 ms at time_scale 0.001): at the
    // default ~30 ms a 200 ms stall of the JS thread before the refresh let it end and be
    // evicted (retention 0) before the model ever held it.
    const slowSnap = { 'snap-update': { synth_ms: 500_000, gpu_ms: 100_000, finalize_ms: 0, jitter: 0 } };
    await withEngine({ ...FAST_SIM, sim: slowSnap, event_ring_capacity: 16, finished_retention_ms: 0 }, async (e) => {
      const job = e.submit('snap-update', { requestId: 'lost-in-gap', partitions: 1 });
      e.refresh();
      expect(e.model.jobs.has(job)).toBe(true);
      // Never awaited (the background linger lets the ring overflow); wait until the engine
      // ended and evicted it.
      await until(() => {
        const done = e.readCounters().words[CTR.HDR_WORDS + 1 * CTR.KIND_WORDS + CTR.K_PROOFS_COMPLETED] === 1;
        return done && JSON.parse(e.statusText()).pipelines.length === 0;
      }, 'the proof completed and was evicted');
      expect(e.requestId(job)).toBe('lost-in-gap');
      // More than a ring of later events, so its JOB_EVICTED is overwritten, not drained.
      const before = e.readCounters().lastSeq;
      while (e.readCounters().lastSeq < before + 40) {
        const j = e.submit('window-post');
        try {
          e.cancel(j);
        } catch (x) {
          // Ended and evicted first (retention 0; a 50 ms stall between the two calls did it).
          if ((x as NativeError).status !== STATUS.ENOTFOUND) throw x;
        }
      }
      await until(() => JSON.parse(e.statusText()).pipelines.length === 0, 'the cancelled ones evicted');
      e.refresh();
      expect(e.stats.dropped).toBeGreaterThan(0);
      expect(e.stats.resyncs).toBeGreaterThanOrEqual(1);
      expect(e.model.jobs.size).toBe(0);
      expect(e.requestId(job)).toBe(String(job));
      // The re-sync's own JOB_EVICTED records (the job the gap hid) are not left in the
      // model's jobEnds: resync() settled them itself.
      expect(e.model.jobEnds).toEqual([]);
    }, { backgroundLingerMs: 60_000 });
  });

  test('a result\'s queue wait and total time are the values of its JOB_STARTED and JOB_DONE events', async () => {
    await withEngine({ ...FAST_SIM, synthesis_concurrency: 1 }, async (e) => {
      const seen = new Map<string, number>();
      e.onEvents = (v, n) => {
        for (let i = 0; i < n; i++) {
          const off = i * EVENT_SIZE;
          const type = v.getUint16(off + EV_OFF_TYPE, true);
          if (type === EV_JOB_STARTED || type === EV_JOB_DONE) seen.set(`${type}:${readU64(v, off + EV_OFF_JOB)}`, readU64(v, off + EV_OFF_VALUE));
        }
      };
      // The second job waits for the first one's synthesis slot: a queue wait well above 0.
      const jobs = [e.submit('window-post'), e.submit('window-post')];
      const rs = await Promise.all(jobs.map((j) => settleWithin(e.awaitProof(j))));
      // A result may come from cuzk_await before any drain (a JS thread stalled past the
      // proofs' end): wait for the hook to have seen both JOB_DONEs (JOB_STARTED precede them).
      await until(() => rs.every((r) => seen.has(`${EV_JOB_DONE}:${r.job}`)), 'both JOB_DONE events drained');
      for (const r of rs) {
        expect(r.queueWaitSeconds).toBe(seen.get(`${EV_JOB_STARTED}:${r.job}`)! / 1e9);
        expect(r.totalSeconds).toBe(seen.get(`${EV_JOB_DONE}:${r.job}`)! / 1e9);
      }
      expect(rs[1].queueWaitSeconds).toBeGreaterThan(0);
    });
  });

  test('a job evicted before its result was fetched: the await rejects ENOTFOUND instead of hanging', async () => {
    // Retention 0: the engine evicts the job as it ends, before the linger's drain sees JOB_DONE.
    await withEngine({ ...FAST_SIM, finished_retention_ms: 0 }, async (e) => {
      const job = e.submit('winning-post');
      await expect(settleWithin(e.awaitProof(job))).rejects.toMatchObject({ fn: 'cuzk_await', status: STATUS.ENOTFOUND });
    }, { lingerMs: 50 });
  });

  test('a proof nobody awaits ends while another is awaited: nothing fails, the awaited one still settles', async () => {
    const fast = { synth_ms: 1, gpu_ms: 1, finalize_ms: 1, jitter: 0 };
    await withEngine({ backend: 'sim', sim: { 'porep-c2': FOREVER, 'winning-post': fast } }, async (e) => {
      const slow = e.submit('porep-c2', { partitions: 1 });
      const waiting = e.awaitProof(slow);
      waiting.catch(() => {});
      const quick = e.submit('winning-post');
      await until(() => e.model.kProofsCompleted[3] === 1, 'the unawaited proof ended in the model');
      expect(e.requestId(quick)).toBe(`job-${quick}`);
      expect([e.model.errors.get('event_drain'), e.model.errors.lastMessage]).toEqual([0, null]);
      e.cancel(slow);
      expect((await settleWithin(waiting)).outcome).toBe('cancelled');
      expect(e.model.errors.get('event_drain')).toBe(0);
    }, { lingerMs: 1 });
  });

  test('a re-sync that fails is retried at the next refresh', async () => {
    await withEngine({ ...FAST_SIM, event_ring_capacity: 16 }, async (e) => {
      // Never awaited: the background linger lets the ring overflow; wait on the counters.
      e.submit('snap-update');
      await until(() => e.readCounters().words[CTR.HDR_WORDS + 1 * CTR.KIND_WORDS + CTR.K_PROOFS_COMPLETED] === 1, 'the proof completed');
      const restore = patch('statusJson', (_h: unknown, _b: unknown, _c: unknown, _l: unknown, err: Buffer) => {
        err.write('snapshot broke\0');
        return STATUS.EINTERNAL;
      });
      try {
        expect(() => e.refresh()).toThrow('cuzk_status_json: EINTERNAL: snapshot broke');
        expect(e.stats.resyncs).toBe(1);
        expect(e.stats.dropped).toBeGreaterThan(0);
      } finally {
        restore();
      }
      e.refresh();
      expect(e.stats.resyncs).toBe(2);
      expect(Array.from(e.model.kProofsCompleted)).toEqual([0, 1, 0, 0, 0]);
      expect(e.model.lastSeq).toBe(e.readCounters().lastSeq);
    }, { backgroundLingerMs: 60_000 });
  });
});

describe('events off: the blocking await on the pool', () => {
  /** cuzk_await with its pool calls counted and, optionally, answered by the test. */
  function countAwaits(answer?: (cb: Any, err: Buffer) => boolean) {
    const real = loadLibrary().await as unknown as Any & { async: Any };
    const state = { calls: 0 };
    const f = Object.assign((...a: unknown[]) => real(...a), {
      async: (...a: unknown[]) => {
        state.calls++;
        const cb = a[a.length - 1] as Any;
        if (answer && answer(cb, a[4] as Buffer)) return;
        real.async(...a);
      },
    });
    return { state, restore: patch('await', f) };
  }

  test('its timeouts are waited through until the result comes', async () => {
    const { state, restore } = countAwaits();
    try {
      await withEngine({ ...SLOW_SIM, events: false }, async (e) => {
        const job = e.submit('winning-post');
        const waiting = e.awaitProof(job);
        waiting.catch(() => {});
        // Each pool call times out after 250 ms; after the second call one timeout has passed.
        await until(() => state.calls >= 2, 'the await re-armed after a timeout');
        e.cancel(job);
        expect((await settleWithin(waiting)).outcome).toBe('cancelled');
      });
    } finally {
      restore();
    }
  });

  test('a failure of the pool call or of cuzk_await rejects', async () => {
    let mode: 'status' | 'error' = 'status';
    const { restore } = countAwaits((cb, err) => {
      if (mode === 'status') {
        err.write('await broke\0');
        setImmediate(() => cb(null, STATUS.EINTERNAL));
      } else setImmediate(() => cb(new Error('pool gone'), 0));
      return true;
    });
    try {
      await withEngine({ ...SLOW_SIM, events: false }, async (e) => {
        await expect(settleWithin(e.awaitProof(e.submit('winning-post')))).rejects.toMatchObject({ fn: 'cuzk_await', status: STATUS.EINTERNAL, message: 'cuzk_await: EINTERNAL: await broke' });
        mode = 'error';
        await expect(settleWithin(e.awaitProof(e.submit('winning-post')))).rejects.toThrow('pool gone');
      });
    } finally {
      restore();
    }
  });
});

describe('drain cadence (the linger timers armed)', () => {
  /** The delays of the linger ticks an engine arms, recorded from setTimeout. */
  function lingerDelays(e: NativeEngine, spy: jest.SpyInstance): number[] {
    const tick = (e as unknown as { lingerTick: unknown }).lingerTick;
    return spy.mock.calls.filter((c) => c[0] === tick).map((c) => c[1] as number);
  }

  test('README defaults: 10 ms while something waits on the push path, 250 ms otherwise', () => {
    expect(DEFAULT_INGEST_LINGER_MS).toBe(10);
    expect(DEFAULT_BACKGROUND_LINGER_MS).toBe(250);
  });

  test.each([
    ['defaults, nothing waiting', {}, false, 250],
    ['defaults, a hook on the push path', {}, true, 10],
    ['a linger longer than the background default, nothing waiting', { lingerMs: 400 }, false, 400],
    ['a short linger, nothing waiting', { lingerMs: 40 }, false, 250],
    ['an explicit background linger', { lingerMs: 5, backgroundLingerMs: 60 }, false, 60],
    ['an explicit linger, a hook', { lingerMs: 7, backgroundLingerMs: 60 }, true, 7],
  ] as const)('%s: the first tick after the wait is armed at the linger', async (_what, ingest, hook, expected) => {
    const spy = jest.spyOn(global, 'setTimeout');
    try {
      await withEngine(SLOW_SIM, async (e) => {
        if (hook) e.onEvents = () => {};
        e.submit('winning-post');
        await until(() => lingerDelays(e, spy).length >= 1, 'a linger tick armed');
        expect(lingerDelays(e, spy)[0]).toBe(expected);
      }, ingest);
    } finally {
      spy.mockRestore();
    }
  });

  test('awaiting a proof brings a pending background tick forward to the linger', async () => {
    const spy = jest.spyOn(global, 'setTimeout');
    try {
      await withEngine(SLOW_SIM, async (e) => {
        const job = e.submit('winning-post');
        await until(() => lingerDelays(e, spy).length >= 1, 'a background tick armed');
        expect(lingerDelays(e, spy)).toEqual([250]);
        const waiting = e.awaitProof(job);
        waiting.catch(() => {});
        // At once, in the call: the tick is re-armed at the linger.
        expect(lingerDelays(e, spy)).toEqual([250, 10]);
        e.cancel(job);
        expect((await settleWithin(waiting)).outcome).toBe('cancelled');
      });
    } finally {
      spy.mockRestore();
    }
  });

  test('a tick that finds nothing hands back to the blocking wait; no more ticks while quiet', async () => {
    const spy = jest.spyOn(global, 'setTimeout');
    try {
      await withEngine(FAST_SIM, async (e) => {
        e.submit('winning-post');
        // Applied by the background drains themselves (no refresh here).
        await until(() => e.model.kProofsCompleted[3] === 1, 'the proof ended in the model');
        const w0 = e.stats.waits;
        await until(() => e.stats.waits >= w0 + 1, 'the wait re-armed');
        const ticks = lingerDelays(e, spy).length;
        // The re-armed wait times out (250 ms) and is armed again: quiet, no tick between.
        const w1 = e.stats.waits;
        await until(() => e.stats.waits >= w1 + 1, 'the wait timed out and re-armed');
        expect(lingerDelays(e, spy).length).toBe(ticks);
      }, { lingerMs: 5, backgroundLingerMs: 5 });
    } finally {
      spy.mockRestore();
    }
  });

  test('lingerMs 0: each wake drains at once and re-arms the wait, no tick', async () => {
    const spy = jest.spyOn(global, 'setTimeout');
    try {
      await withEngine(FAST_SIM, async (e) => {
        // A hook on the push path throughout: the awaitProof alone is not one when the proof
        // is done before it runs (a JS thread stalled after submit, as in CI): it then
        // resolves from cuzk_await and the wake's drain, with nothing waiting, armed the
        // background tick (250 ms) -- shown with a 10 ms busy-wait after submit.
        e.onBatch = () => {};
        const waits = e.stats.waits;
        const r = await settleWithin(e.awaitProof(e.submit('winning-post')));
        expect(r.outcome).toBe('completed');
        // The proof may be done before awaitProof runs (a stalled JS thread): wait for a drain
        // to apply its end (ingest-cadence's lingerMs 0 test failed in CI on exactly that).
        await until(() => e.model.kProofsCompleted[3] === 1, 'the proof ended in the model');
        expect(lingerDelays(e, spy)).toEqual([]);
        expect(e.stats.waits).toBeGreaterThan(waits);
        expect(e.stats.drains).toBeGreaterThanOrEqual(1);
      }, { lingerMs: 0 });
    } finally {
      spy.mockRestore();
    }
  });
});

test('ERR_BUF_SIZE error buffers hold a whole library message', () => {
  // The longest message the library writes is a config key and its allowed range.
  expect(ERR_BUF_SIZE).toBeGreaterThanOrEqual(256);
});
