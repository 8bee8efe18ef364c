/**
 * NativeEngine's calls on the real reference library (src/engine/sources/native/native-engine.ts),
 * one behaviour at a time: what open, submit, awaitProof, cancel, proof, verify and close
 * give back, and how each refusal of the library reaches the caller. Expectations come from
 * native/include/cuzk_engine.h and native/README.md (defaults of submit, the proof byte
 * format, the counter layout, which call answers which status), never from the TS code.
 * Every engine opened here is closed in `finally`; nothing waits on wall time.
 */
import { CTR, NativeError, STATUS } from '../../src/engine/sources/native/abi';
import { EngineConfig, IngestOptions, NativeEngine } from '../../src/engine/sources/native/native-engine';
import type { CounterTotals } from '../../src/engine/model/state-model';

/** Opens an engine, runs `fn`, closes the engine whatever happens. */
async function withEngine<T>(config: EngineConfig, fn: (e: NativeEngine) => Promise<T> | T, ingest: IngestOptions = {}): Promise<T> {
  const engine = NativeEngine.open(config, undefined, ingest);
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

/** The error a call throws (or undefined). */
function thrown(f: () => unknown): Error | undefined {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  return undefined;
}

/** `p`, or a readable failure instead of hanging until jest's timeout. */
function within<T>(p: Promise<T>, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('did not settle')), ms)));
  return Promise.race([p, cap]).finally(() => clearTimeout(timer));
}

/** Polls `cond` on the event loop (no fixed sleep), bounded so a hung run fails. */
async function until(cond: () => boolean, what: string, capMs = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > capMs) throw new Error(`not reached: ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Stages that never end by themselves (cancel or close cuts sim sleeps short). */
const FOREVER = { synth_ms: 1e7, gpu_ms: 1e7, finalize_ms: 1e7, jitter: 0 };
const SLOW_SIM: EngineConfig = { backend: 'sim', sim: { 'porep-c2': FOREVER, 'snap-update': FOREVER, 'window-post': FOREVER, 'winning-post': FOREVER } };
const FAST_SIM: EngineConfig = { backend: 'sim', time_scale: 0.001 };

interface Pipeline {
  job_id: string;
  job_handle: number;
  proof_kind: string;
  priority: number;
  total_partitions: number;
  outcome: string;
}
const pipelines = (e: NativeEngine) => (e.statusBody() as { pipelines: Pipeline[] }).pipelines;

describe('open', () => {
  test('a bad config is the library\'s EINVAL naming the key; a missing library is named', () => {
    const e = thrown(() => NativeEngine.open({ workers_per_gpu: 9 }));
    expect(e).toBeInstanceOf(NativeError);
    expect(e).toMatchObject({ fn: 'cuzk_engine_open', status: STATUS.EINVAL });
    expect(e?.message).toMatch(/workers_per_gpu/);
    expect(thrown(() => NativeEngine.open({ no_such_key: 1 }))?.message).toMatch(/no_such_key/);
    expect(thrown(() => NativeEngine.open({}, '/nonexistent/libcuzk_engine.so'))?.message).toBe('native library not found at /nonexistent/libcuzk_engine.so');
  });

  test('topology, backend, budget and the counter layout follow the config', async () => {
    const budget = 2 ** 40 + 12345; // above 2^32: the high word of a counter must be decoded
    await withEngine({ backend: 'sim', gpus: 2, workers_per_gpu: 3, synthesis_concurrency: 5, memory_budget_bytes: budget, gpu_names: ['alpha', 'beta'] }, (e) => {
      expect(e.backend).toBe('sim');
      expect(e.source).toBe('run');
      expect(e.closed).toBe(false);
      expect(e.model.topology.gpus.map((g) => [g.ordinal, g.name])).toEqual([
        [0, 'alpha'],
        [1, 'beta'],
      ]);
      // README: uuid a stable fake GPU-...-<ordinal>, pci_bus_id null (so none here).
      expect(e.model.topology.gpus.map((g) => g.uuid)).toEqual([expect.stringMatching(/^GPU-.*0$/), expect.stringMatching(/^GPU-.*1$/)]);
      expect(e.model.topology.gpus.map((g) => g.pciBusId)).toEqual([undefined, undefined]);
      // Global worker id = gpu * workers_per_gpu + index.
      expect(e.model.topology.workers).toEqual([0, 1, 2, 3, 4, 5].map((id) => ({ id, gpu: Math.floor(id / 3) })));
      expect(e.model.topology.lockEvents).toBe(true);
      expect(e.model.synthMax).toBe(5);
      expect(e.model.memoryBudgetBytes).toBe(budget);
      expect(e.ready()).toEqual({ ok: true, reason: '' });
      expect(e.snapshotAgeSeconds()).toBe(0);
      expect(e.statusBody()).toMatchObject({ backend: 'sim', synthesis: { max_concurrent: 5 } });
      // The reasons the ingest path can count exist at 0 from the start.
      expect(['event_wait', 'event_drain', 'resync'].map((r) => [...e.model.errors.entries()].find(([k]) => k === r))).toEqual([
        ['event_wait', 0],
        ['event_drain', 0],
        ['resync', 0],
      ]);

      const t0 = e.now();
      const c = e.readCounters();
      const t1 = e.nowNs();
      // Header 16 words, 4 kinds x 10, 2 GPUs x 4, 6 workers x 4.
      expect(c.words.length).toBe(16 + 40 + 8 + 24);
      expect([c.words[0], c.words[CTR.GPUS], c.words[CTR.WORKERS_PER_GPU], c.words[CTR.KINDS], c.words[CTR.SYNTH_MAX], c.words[CTR.MEM_BUDGET]]).toEqual([2, 2, 3, 4, 5, budget]);
      expect(c.nowNs).toBe(c.words[CTR.NOW_NS]);
      expect(c.lastSeq).toBe(c.words[CTR.LAST_SEQ]);
      expect(c.nowNs).toBeGreaterThanOrEqual(t0);
      expect(c.nowNs).toBeLessThanOrEqual(t1);

      const t = e.runningTotals()!;
      expect(t.nowNs).toBeGreaterThanOrEqual(t1);
      expect([t.workerBusyNs.length, t.gpuLockHeldNs.length, t.gpuStarvedNs.length]).toEqual([6, 2, 2]);
    });
    // The default backend.
    await withEngine({ sizes: { 'winning-post': 2 } }, (e) => expect([e.backend, (e.statusBody() as { backend: string }).backend]).toEqual(['cpu', 'cpu']));
  });
});

describe('submit', () => {
  test('options reach the engine; omitted ones are the kind\'s defaults; ids default to job-<handle>', async () => {
    await withEngine(SLOW_SIM, (e) => {
      const a = e.submit('winning-post');
      const b = e.submit('porep-c2', { priority: 7, partitions: 3, requestId: 'my-porep' });
      const c = e.submit('snap-update', { requestId: '' });
      const p = pipelines(e);
      const row = (h: number) => {
        const x = p.find((q) => q.job_handle === h)!;
        return [x.job_id, x.proof_kind, x.priority, x.total_partitions];
      };
      // README: default priorities winning-post 100, snap-update 10; partitions 1 / 16.
      expect(row(a)).toEqual([`job-${a}`, 'winning-post', 100, 1]);
      expect(row(b)).toEqual(['my-porep', 'porep-c2', 7, 3]);
      expect(row(c)).toEqual([`job-${c}`, 'snap-update', 10, 16]);
      expect([e.requestId(a), e.requestId(b), e.requestId(c)]).toEqual([`job-${a}`, 'my-porep', `job-${c}`]);
      expect([e.jobId(a), e.jobId(b)]).toEqual([`job-${a}`, 'my-porep']);
      // Handles the engine never gave: no id from the engine, the handle as text for requestId.
      expect(e.jobId(a + b + c + 1000)).toBeUndefined();
      expect(e.requestId(a + b + c + 1000)).toBe(String(a + b + c + 1000));
    });
  });

  test('refusals: unknown kind before the engine; out-of-range values and a full queue as NativeErrors of cuzk_submit', async () => {
    await withEngine({ ...SLOW_SIM, queue_limit: 1, synthesis_concurrency: 1 }, (e) => {
      expect(thrown(() => e.submit('porep-c3'))?.message).toBe('unknown proof kind "porep-c3" (expected one of porep-c2, snap-update, window-post, winning-post)');
      const big = thrown(() => e.submit('snap-update', { partitions: 257 }));
      expect(big).toBeInstanceOf(NativeError);
      expect(big).toMatchObject({ fn: 'cuzk_submit', status: STATUS.EINVAL });
      expect(big?.message).toMatch(/257 partitions is out of range/);
      expect(thrown(() => e.submit('snap-update', { log2Size: 23 }))?.message).toMatch(/^cuzk_submit: EINVAL: .*log2_size 23/);
      // queue_limit 1: at most one job submitted and not started; the one synthesis slot is
      // taken by a stage that never ends, so the queue fills within three submits.
      let full: Error | undefined;
      for (let i = 0; i < 3 && !full; i++) full = thrown(() => e.submit('window-post'));
      expect(full).toBeInstanceOf(NativeError);
      expect(full).toMatchObject({ fn: 'cuzk_submit', status: STATUS.EFULL, statusName: 'EFULL' });
    });
  });
});

describe('results, proofs and verification (cpu backend)', () => {
  test('awaitProof gives cuzk_await\'s result; the proof has the header format and verifies for its own job only', async () => {
    await withEngine({}, async (e) => {
      const job = e.submit('snap-update', { partitions: 2, log2Size: 4, requestId: 'edge-a' });
      const [r, again] = await Promise.all([e.awaitProof(job), e.awaitProof(job)]);
      expect(again).toEqual(r);
      expect(r).toMatchObject({ job, jobId: 'edge-a', kind: 'snap-update', outcome: 'completed', partitions: 2, failedPartition: null, error: '' });
      // README: header 24 bytes + 64 per partition.
      expect(r.proofBytes).toBe(24 + 2 * 64);
      expect(r.gpuNs).toBeGreaterThan(0);
      expect(r.synthNs).toBeGreaterThan(0);
      expect(r.gpuSeconds).toBe(r.gpuNs / 1e9);
      expect(r.synthesisSeconds).toBe(r.synthNs / 1e9);
      expect(r.totalSeconds).toBeGreaterThan(0);
      expect(r.totalSeconds).toBeGreaterThanOrEqual(r.queueWaitSeconds);
      // (gpu and synthesis ns are sums over partitions that may run side by side, so they
      // can exceed the total; the queue wait is a part of it.)
      // The per-proof GPU and synthesis ns are what the kind's counters sum ("as in the counters").
      const totals = e.runningTotals() as unknown as CounterTotals;
      expect([totals.kindGpuNs[1], totals.kindSynthNs[1]]).toEqual([r.gpuNs, r.synthNs]);
      // A finished job: awaited again, at once.
      await expect(e.awaitProof(job)).resolves.toEqual(r);

      const proof = e.proof(job);
      expect(proof.length).toBe(r.proofBytes);
      expect(proof.toString('latin1', 0, 4)).toBe('CZKP');
      expect([proof.readUInt16LE(4), proof.readUInt8(6), proof.readUInt32LE(8), Number(proof.readBigUInt64LE(16))]).toEqual([2, 1, 2, job]);
      // Each record: u32 index, u32 log2 n (the size submitted).
      expect([0, 1].map((i) => [proof.readUInt32LE(24 + 64 * i), proof.readUInt32LE(28 + 64 * i)])).toEqual([
        [0, 4],
        [1, 4],
      ]);
      expect(e.verify(proof, 'edge-a')).toBe(true);
      expect(e.verifyWithReason(proof, 'edge-a')).toEqual({ valid: true, reason: '' });
      const other = e.verifyWithReason(proof, 'edge-b');
      expect(other.valid).toBe(false);
      expect(other.reason).toMatch(/not this job/);
      expect(e.verify(proof, 'edge-b')).toBe(false);
      const bad = thrown(() => e.verify(Buffer.from('not a proof'), 'edge-a'));
      expect(bad).toBeInstanceOf(NativeError);
      expect(bad).toMatchObject({ fn: 'cuzk_proof_verify', status: STATUS.EINVAL });
    });
  });

  test('a proof longer than 4 KiB is copied whole', async () => {
    await withEngine({}, async (e) => {
      const job = e.submit('porep-c2', { partitions: 70, log2Size: 1, requestId: 'long-proof' });
      const r = await e.awaitProof(job);
      expect(r.outcome).toBe('completed');
      const proof = e.proof(job);
      expect(proof.length).toBe(24 + 70 * 64);
      expect(proof.readUInt32LE(8)).toBe(70);
      expect(proof.readUInt32LE(24 + 69 * 64)).toBe(69);
      expect(e.verify(proof, 'long-proof')).toBe(true);
    });
  });

  test('a corrupted proof does not verify, with the verifier\'s reason', async () => {
    await withEngine({ faults: { corrupt_proof_nth: 1 } }, async (e) => {
      const job = e.submit('winning-post', { log2Size: 3, requestId: 'bent' });
      expect((await e.awaitProof(job)).outcome).toBe('completed');
      const v = e.verifyWithReason(e.proof(job), 'bent');
      expect(v.valid).toBe(false);
      expect(v.reason.length).toBeGreaterThan(0);
    });
  });
});

describe('failures and cancellation (sim backend)', () => {
  test('an injected partition failure: outcome failed, the partition and the reason; no proof to copy', async () => {
    await withEngine({ ...FAST_SIM, faults: { fail_partition_nth: 2 } }, async (e) => {
      const job = e.submit('snap-update', { partitions: 3 });
      const r = await e.awaitProof(job);
      expect(r.outcome).toBe('failed');
      expect(r.failedPartition).toEqual(expect.any(Number));
      expect(r.failedPartition).toBeLessThan(3);
      expect(r.error).toMatch(new RegExp(`partition ${r.failedPartition} failed: injected fault`));
      const copy = thrown(() => e.proof(job));
      expect(copy).toBeInstanceOf(NativeError);
      expect(copy).toMatchObject({ fn: 'cuzk_proof_copy', status: STATUS.EINVAL });
      const t = e.runningTotals() as unknown as CounterTotals;
      expect([t.kindProofsFailed[1], t.kindPartsFailed[1], t.kindProofsCompleted[1]]).toEqual([1, 1, 0]);
    });
  });

  test('a sim proof completes but carries no arithmetic: not valid, with a reason', async () => {
    await withEngine(FAST_SIM, async (e) => {
      const job = e.submit('winning-post', { requestId: 'sim-1' });
      const r = await e.awaitProof(job);
      expect(r.outcome).toBe('completed');
      const v = e.verifyWithReason(e.proof(job), 'sim-1');
      expect(v.valid).toBe(false);
      expect(v.reason).not.toBe('');
    });
  });

  test('cancel: the awaited result says cancelled; unknown handles are ENOTFOUND for cancel, await and proof', async () => {
    await withEngine(SLOW_SIM, async (e) => {
      const job = e.submit('porep-c2', { partitions: 2 });
      const waiting = e.awaitProof(job);
      e.cancel(job);
      const r = await waiting;
      expect([r.job, r.outcome, r.kind]).toEqual([job, 'cancelled', 'porep-c2']);
      expect(r.error).not.toBe('');
      // A finished job: OK, no effect.
      expect(() => e.cancel(job)).not.toThrow();
      expect((e.runningTotals() as unknown as CounterTotals).kindProofsCancelled).toEqual([1, 0, 0, 0]);
      const unknown = job + 1000;
      const c = thrown(() => e.cancel(unknown));
      expect(c).toBeInstanceOf(NativeError);
      expect(c).toMatchObject({ fn: 'cuzk_cancel', status: STATUS.ENOTFOUND });
      await expect(e.awaitProof(unknown)).rejects.toMatchObject({ fn: 'cuzk_await', status: STATUS.ENOTFOUND });
      expect(thrown(() => e.proof(unknown))).toMatchObject({ fn: 'cuzk_proof_copy', status: STATUS.ENOTFOUND });
    });
  });
});

describe('several awaiters of one job', () => {
  test('all get the result; all are rejected when the engine closes', async () => {
    await withEngine(SLOW_SIM, async (e) => {
      const job = e.submit('porep-c2', { partitions: 1 });
      const all = [e.awaitProof(job), e.awaitProof(job), e.awaitProof(job)];
      e.cancel(job);
      const rs = await within(Promise.all(all));
      expect(rs.map((r) => [r.job, r.outcome])).toEqual([
        [job, 'cancelled'],
        [job, 'cancelled'],
        [job, 'cancelled'],
      ]);
    });
    const e = NativeEngine.open(SLOW_SIM);
    try {
      const job = e.submit('porep-c2', { partitions: 1 });
      const all = [e.awaitProof(job), e.awaitProof(job)].map((p) => p.then(() => 'resolved', (x: Error) => x.message));
      await e.close();
      expect(await within(Promise.all(all))).toEqual(['engine closed before the proof finished', 'engine closed before the proof finished']);
    } finally {
      await e.close();
    }
  });
});

describe('close', () => {
  test('pending awaits reject; every call after close began is refused; close is idempotent', async () => {
    const e = NativeEngine.open(SLOW_SIM);
    let closing: Promise<void> | undefined;
    try {
      const job = e.submit('window-post', { requestId: 'kept' });
      const waiting = e.awaitProof(job);
      waiting.catch(() => {});
      closing = e.close();
      expect(e.close()).toBe(closing);
      // While closing (before the native close returned) and after it.
      for (const phase of ['closing', 'closed']) {
        expect([phase, e.ready()]).toEqual([phase, { ok: false, reason: 'engine closed' }]);
        expect(e.statusBody()).toBeNull();
        expect(e.runningTotals()).toBeNull();
        for (const call of [() => e.submit('window-post'), () => e.cancel(job), () => e.proof(job), () => e.status(), () => e.readCounters(), () => e.statusText()]) {
          expect(thrown(call)?.message).toBe('engine is closed');
        }
        expect(() => e.refresh()).not.toThrow();
        // Ids known here are still answered; the engine is not asked for others.
        expect(e.jobId(job)).toBe('kept');
        expect(e.jobId(job + 1)).toBeUndefined();
        if (phase === 'closing') {
          expect(e.closed).toBe(false);
          await closing;
          expect(e.closed).toBe(true);
        }
      }
      await expect(waiting).rejects.toThrow('engine closed before the proof finished');
      await expect(e.awaitProof(job)).rejects.toThrow('engine is closed');
    } finally {
      await (closing ?? e.close());
    }
  });
});

describe('events off (benchmarks): awaits block on the pool', () => {
  test('results arrive without events; the model sees none; close rejects a blocked await', async () => {
    // Retention short, but long enough that the blocking await starts before the eviction
    // (a job evicted before anyone awaits it has no result left: ENOTFOUND). 300 ms failed
    // with a 400 ms busy-wait between submit and awaitProof (a stalled JS thread); 1 s.
    await withEngine({ ...FAST_SIM, events: false, finished_retention_ms: 1000 }, async (e) => {
      expect(e.stats.waits).toBe(0);
      const job = e.submit('winning-post', { requestId: 'quiet' });
      const r = await e.awaitProof(job);
      expect([r.outcome, r.jobId]).toEqual(['completed', 'quiet']);
      e.refresh();
      expect(e.model.eventsTotal).toBe(0);
      expect(e.stats.batches).toBe(0);
      // The id is forgotten with the result: once the engine evicts the job
      // nothing answers for it any more (retention 1 s).
      await until(() => !pipelines(e).some((p) => p.job_handle === job), 'job evicted');
      expect(e.requestId(job)).toBe(String(job));
      expect(e.jobId(job)).toBeUndefined();
    });
    // Retained (default 30 s): once the result is taken the id is the engine's answer.
    await withEngine({ ...FAST_SIM, events: false }, async (e) => {
      const job = e.submit('window-post', { requestId: 'asked-again' });
      expect((await e.awaitProof(job)).jobId).toBe('asked-again');
      expect([e.requestId(job), e.jobId(job)]).toEqual(['asked-again', 'asked-again']);
      expect((await e.awaitProof(job)).jobId).toBe('asked-again');
    });
    const e = NativeEngine.open({ ...SLOW_SIM, events: false });
    try {
      const waiting = e.awaitProof(e.submit('winning-post'));
      waiting.catch(() => {});
      await e.close();
      await expect(waiting).rejects.toThrow('engine closed before the proof finished');
    } finally {
      await e.close();
    }
  });
});
