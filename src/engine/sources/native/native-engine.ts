/**
 * NativeEngine: drives a library implementing the cuzk ABI and keeps a StateModel of it.
 *
 * Ingestion is event-driven: while the engine is quiet, one blocking cuzk_events_wait runs
 * on a koffi worker thread; when it returns, the JS thread drains every pending event in
 * batches of up to BATCH_EVENTS into one preallocated buffer (one FFI call per batch) and
 * applies them. While events keep coming, the JS thread drains on a timer every linger
 * instead (a synchronous ~1 µs FFI call each) and goes back to the blocking wait only when
 * a drain finds nothing; so wake-ups are at most 1000 / linger per second whatever the
 * event rate, and the koffi async round trip (~18 µs plus two cross-thread wake-ups) is
 * paid once per quiet spell, not per drain. Collections call refresh() first, so gauges
 * are exact at the moment of a scrape.
 *
 * The linger is short (lingerMs) only while something in this process waits on the push
 * path — an awaitProof, an onBatch or onEvents hook; the exporter itself does not (every
 * /metrics and /status answer drains first), so then drains only keep the ring from
 * overflowing, every backgroundLingerMs. Each wake-up of the JS thread costs 100–150 µs
 * of CPU on the shared 2-core VMs this is measured on (a bare 5 ms setInterval: ~150 µs a
 * tick), far more than the drain itself; bench/ (overhead) has the figures.
 *
 * Proof completion is learned from JOB_DONE events too; the result is then fetched with a
 * non-blocking cuzk_await(timeout 0). So no worker thread ever blocks per proof.
 *
 * Past ~500 lines on purpose: one native handle's lifecycle (open, ingest loop, resync after a
 * gap, awaits, close); every part shares the handle and the ingest state described above.
 */
import { CTR, CuzkLib, ERR_BUF_SIZE, NativeError, RawProofResult, STATUS, check, errText, loadLibrary } from './abi';
import { EVENT_SIZE } from '../../model/event-layout';
import { KIND_LABELS, OUTCOMES, PROOF_KINDS, ProofKind, kindIndex } from '../../model/kinds';
import { snapshotToEvents, viewFromStatus } from '../snapshot-sync';
import { CounterTotals, StateModel, Topology } from '../../model/state-model';
import type { MetricsSource, RunningTotals } from '../source';
import { CuzkStatus, validateStatus } from '../status-schema';

export const BATCH_EVENTS = 4096;
/**
 * Bound on one blocking native call. close() waits for the calls in flight to come back
 * before freeing the engine (a call queued on koffi's pool must never start on freed
 * memory), so this is also the most close() waits for them.
 */
const WAIT_TIMEOUT_MS = 250;
/**
 * Drain cadence while events keep coming and something waits on the push path (awaitProof
 * results, onBatch/onEvents: `prove` progress, `simulate`'s TIMELINE and gRPC views):
 * after the blocking wait reports events, and after every drain that found some, the next
 * drain runs this much later, so a burst is taken in one batch and drains stay at most
 * 1000 / linger per second whatever the event rate. Scrapes and /status drain first, so
 * what they show is exact regardless.
 */
export const DEFAULT_INGEST_LINGER_MS = 10;
/**
 * The same while nothing waits on the push path (the exporter alone): drains then only
 * keep the ring from overflowing, as every answer (/metrics, /status and so the status
 * page, which polls /status; OTLP pushes) drains first and nothing is shown from the push
 * path alone. Each drain is a wake-up of the JS thread (~150 µs of CPU here, bench/
 * overhead), so 4 a second instead of 10 (100 ms before issue 21) keep the exporter under
 * 0.5 % of a CPU-bound prover's CPU. The ring is still safe: at an event rate that would
 * fill more than an eighth of it in one linger, the next linger is shortened to what an
 * eighth takes at that rate (nextLinger), down to lingerMs.
 */
export const DEFAULT_BACKGROUND_LINGER_MS = 250;
/** The native ring's default size (native/README.md, event_ring_capacity). */
const DEFAULT_RING_CAPACITY = 65536;

export interface IngestOptions {
  /** See DEFAULT_INGEST_LINGER_MS; 0 drains as soon as the wait returns and re-arms it at once. */
  lingerMs?: number;
  /** See DEFAULT_BACKGROUND_LINGER_MS. */
  backgroundLingerMs?: number;
}
const MAX_STATUS_BYTES = 64 << 20;

/** Engine configuration, passed to cuzk_engine_open as JSON (native/README.md). */
export type EngineConfig = Record<string, unknown>;

export interface SubmitOptions {
  priority?: number;
  partitions?: number;
  log2Size?: number;
  requestId?: string;
}

export interface ProofResult {
  job: number;
  jobId: string;
  kind: ProofKind;
  outcome: (typeof OUTCOMES)[number];
  partitions: number;
  failedPartition: number | null;
  queueWaitSeconds: number;
  synthesisSeconds: number;
  gpuSeconds: number;
  totalSeconds: number;
  proofBytes: number;
  error: string;
  /** Raw nanoseconds, for exact comparisons. */
  gpuNs: number;
  synthNs: number;
}

export interface IngestStats {
  /** Non-empty drain calls (one drain takes several when events keep arriving meanwhile). */
  batches: number;
  /** refresh() calls that applied events: linger ticks, wakes and collections. */
  drains: number;
  /** Blocking waits armed on koffi's pool (one per quiet spell, plus its timeouts). */
  waits: number;
  resyncs: number;
  /** Events the native ring overwrote before we drained them. */
  dropped: number;
}

interface Pending {
  resolve(r: ProofResult): void;
  reject(e: Error): void;
}

export class NativeEngine implements MetricsSource {
  readonly source = 'run' as const;
  readonly model = new StateModel();
  readonly lib: CuzkLib;
  readonly backend: string;
  readonly stats: IngestStats = { batches: 0, drains: 0, waits: 0, resyncs: 0, dropped: 0 };
  /** Called after each applied batch (progress displays, benchmarks, tests). */
  onBatch: (() => void) | null = null;
  /**
   * Sees every drained batch (the engine's one drain cursor) right after the model applied
   * it: `n` events of EVENT_SIZE bytes in `view`, valid only during the call (the buffer is
   * reused). `simulate` derives cuzk's TIMELINE and gRPC views from it.
   */
  onEvents: ((view: DataView, n: number) => void) | null = null;

  private handle: bigint | null;
  private readonly err = Buffer.alloc(ERR_BUF_SIZE);
  private readonly waitErr = Buffer.alloc(ERR_BUF_SIZE);
  /** cuzk_job_id's answer: request ids are at most 255 bytes (native/README.md). */
  private readonly idBuf = Buffer.alloc(512);
  private readonly eventBuf = Buffer.alloc(BATCH_EVENTS * EVENT_SIZE);
  private readonly eventView = new DataView(this.eventBuf.buffer, this.eventBuf.byteOffset, this.eventBuf.byteLength);
  private readonly nOut = new Uint32Array(1);
  private readonly droppedOut = new BigUint64Array(1);
  private readonly counterBuf: BigUint64Array;
  private readonly counterWords: Uint32Array;
  private statusBuf = Buffer.alloc(256 << 10);
  private readonly pending = new Map<number, Pending>();
  /**
   * Request ids of the jobs submitted here (the caller's, or the engine's default
   * `job-<handle>`), from submit until the engine evicts the job (its JOB_EVICTED event;
   * with events off, until its result is taken). Asking the engine instead costs a
   * locked walk of its job list per lookup, tens of µs with a thousand jobs retained.
   */
  private readonly jobIds = new Map<number, string>();
  /** The model's jobEnds (afterBatch). */
  private readonly jobEnds: number[] = [];
  /** Native calls in flight on koffi's worker threads; close() waits for them. */
  private asyncCalls = 0;
  private asyncDrained: (() => void) | null = null;
  /** A gap was seen but the re-sync failed: retry at the next refresh. */
  private needResync = false;
  private waiting = false;
  private closing = false;
  private closedPromise: Promise<void> | null = null;
  private readonly eventsEnabled: boolean;
  private readonly lingerMs: number;
  private readonly backgroundLingerMs: number;
  /** Events one linger may bring before the next comes sooner: an eighth of the ring. */
  private readonly lingerEvents: number;
  private lingerTimer: NodeJS.Timeout | null = null;
  /** When refresh() last drained (performance.now()): the events of the next drain arrived since. */
  private lastDrainMs = 0;
  /** When the pending linger tick is due (performance.now()); 0 when none is (a backoff may be). */
  private tickDueMs = 0;

  private constructor(lib: CuzkLib, handle: bigint, config: EngineConfig, ingest: IngestOptions) {
    this.lib = lib;
    this.handle = handle;
    this.lingerMs = ingest.lingerMs ?? DEFAULT_INGEST_LINGER_MS;
    this.backgroundLingerMs = ingest.backgroundLingerMs ?? Math.max(this.lingerMs, DEFAULT_BACKGROUND_LINGER_MS);
    this.eventsEnabled = config.events !== false;
    const ring = typeof config.event_ring_capacity === 'number' && config.event_ring_capacity > 0 ? config.event_ring_capacity : DEFAULT_RING_CAPACITY;
    this.lingerEvents = Math.max(1, Math.floor(ring / 8));
    for (const r of ['event_wait', 'event_drain', 'resync']) this.model.errors.declare(r);
    const status = this.status();
    this.backend = typeof status.backend === 'string' ? status.backend : String(config.backend ?? 'cpu');
    const gpus = status.gpus ?? [];
    const topology: Topology = {
      gpus: gpus.map((g) => ({ ordinal: g.ordinal, name: g.name, uuid: g.uuid ?? undefined, pciBusId: g.pci_bus_id ?? undefined })),
      workers: status.gpu_workers.map((w) => ({ id: w.worker_id, gpu: w.gpu_ordinal })),
      lockEvents: true,
    };
    const words = CTR.HDR_WORDS + KIND_LABELS.length * CTR.KIND_WORDS + gpus.length * CTR.GPU_WORDS + topology.workers.length * CTR.WORKER_WORDS;
    this.counterBuf = new BigUint64Array(words);
    this.counterWords = new Uint32Array(this.counterBuf.buffer);
    this.model.setTopology(topology, this.now());
    this.model.jobEnds = this.jobEnds;
    this.model.synthMax = status.synthesis?.max_concurrent ?? 0;
    this.model.memoryBudgetBytes = status.memory?.total_bytes ?? 0;
    // Whatever happened before we attached (nothing, for a fresh engine) comes from the
    // snapshot; events after its last_seq follow.
    this.resyncFrom(status, this.readCounterTotals());
    if (this.eventsEnabled) this.armWait();
  }

  /** Opens an engine. Throws a readable Error (bad config, missing library). */
  static open(config: EngineConfig = {}, libraryPath?: string, ingest: IngestOptions = {}): NativeEngine {
    const lib = loadLibrary(libraryPath);
    const err = Buffer.alloc(ERR_BUF_SIZE);
    const out: [bigint | null] = [null];
    const rc = lib.open(JSON.stringify(config), out, err, err.length) as number;
    check(lib, 'cuzk_engine_open', rc, err);
    if (out[0] === null) throw new Error('cuzk_engine_open returned no handle');
    try {
      return new NativeEngine(lib, out[0], config, ingest);
    } catch (e) {
      // The engine runs (threads started): close it, or nothing ever could.
      lib.close([out[0]], err, err.length);
      throw e;
    }
  }

  get closed(): boolean {
    return this.handle === null;
  }

  /** The engine's clock (CLOCK_MONOTONIC ns), the clock of every event timestamp. */
  now(): number {
    return this.lib.nowNs() as number;
  }

  nowNs(): number {
    return this.now();
  }

  statusBody(): Record<string, unknown> | null {
    if (this.handle === null || this.closing) return null;
    return JSON.parse(this.statusText()) as Record<string, unknown>;
  }

  snapshotAgeSeconds(): number {
    return 0;
  }

  runningTotals(): RunningTotals | null {
    if (this.handle === null || this.closing) return null;
    return this.readCounterTotals();
  }

  ready(): { ok: boolean; reason: string } {
    if (this.handle === null || this.closing) return { ok: false, reason: 'engine closed' };
    if (this.model.topology.gpus.length === 0) return { ok: false, reason: 'no GPU' };
    return { ok: true, reason: '' };
  }

  private h(): bigint {
    if (this.handle === null || this.closing) throw new Error('engine is closed');
    return this.handle;
  }

  submit(kind: ProofKind | string, opts: SubmitOptions = {}): number {
    const k = kindIndex(kind);
    if (k < 0) throw new Error(`unknown proof kind "${kind}" (expected one of ${PROOF_KINDS.join(', ')})`);
    const out: [number | bigint] = [0];
    const rc = this.lib.submit(
      this.h(),
      k,
      opts.priority ?? -1,
      opts.partitions ?? 0,
      opts.log2Size ?? 0,
      opts.requestId ?? null,
      out,
      this.err,
      this.err.length,
    ) as number;
    check(this.lib, 'cuzk_submit', rc, this.err);
    const job = Number(out[0]);
    // The engine names a job without a request id `job-<handle>` (native/README.md).
    this.jobIds.set(job, opts.requestId || `job-${job}`);
    return job;
  }

  /**
   * Resolves when the job ends (completed, failed or cancelled). Rejects, never throws: an
   * unknown or evicted job (NativeError ENOTFOUND) and a closed engine reject too.
   */
  awaitProof(job: number): Promise<ProofResult> {
    let ready: ProofResult | null;
    try {
      ready = this.tryResult(job);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    if (ready) return Promise.resolve(ready);
    if (!this.eventsEnabled) return this.awaitBlocking(job);
    return new Promise<ProofResult>((resolve, reject) => {
      const prev = this.pending.get(job);
      if (prev) {
        // Several awaiters of one job: chain them.
        this.pending.set(job, {
          resolve: (r) => (prev.resolve(r), resolve(r)),
          reject: (e) => (prev.reject(e), reject(e)),
        });
      } else this.pending.set(job, { resolve, reject });
      this.hurry();
    });
  }

  cancel(job: number): void {
    const rc = this.lib.cancel(this.h(), job, this.err, this.err.length) as number;
    check(this.lib, 'cuzk_cancel', rc, this.err);
  }

  /** Copies a finished job's proof bytes. */
  proof(job: number): Buffer {
    let buf = Buffer.alloc(4096);
    for (;;) {
      const len: [number] = [0];
      const rc = this.lib.proofCopy(this.h(), job, buf, buf.length, len, this.err, this.err.length) as number;
      if (rc === STATUS.ERANGE) {
        buf = Buffer.alloc(len[0]);
        continue;
      }
      check(this.lib, 'cuzk_proof_copy', rc, this.err);
      return buf.subarray(0, len[0]);
    }
  }

  /**
   * Verifies proof bytes with the library's verifier (needs no engine) for the job they are
   * presented for: `jobId` is that job's request id (ProofResult.jobId). Proofs are bound
   * to their job, so another job's proof does not verify.
   */
  verify(proof: Buffer, jobId: string): boolean {
    return this.verifyWithReason(proof, jobId).valid;
  }

  /** verify(), with the verifier's reason when the proof is not valid. */
  verifyWithReason(proof: Buffer, jobId: string): { valid: boolean; reason: string } {
    const valid: [number] = [0];
    const rc = this.lib.proofVerify(proof, proof.length, jobId, valid, this.err, this.err.length) as number;
    check(this.lib, 'cuzk_proof_verify', rc, this.err);
    return { valid: valid[0] === 1, reason: valid[0] === 1 ? '' : errText(this.err) };
  }

  /** The native status snapshot (cuzk /status shape plus the engine's additions). */
  status(): CuzkStatus {
    const text = this.statusText();
    const v = validateStatus(JSON.parse(text));
    if (!v.ok) throw new Error(`native status snapshot is invalid: ${v.error}`);
    return v.status;
  }

  statusText(): string {
    for (;;) {
      const len: [number] = [0];
      const rc = this.lib.statusJson(this.h(), this.statusBuf, this.statusBuf.length, len, this.err, this.err.length) as number;
      if (rc === STATUS.ERANGE) {
        if (len[0] > MAX_STATUS_BYTES) throw new Error(`status snapshot of ${len[0]} bytes exceeds ${MAX_STATUS_BYTES}`);
        this.statusBuf = Buffer.alloc(Math.max(len[0] + 1, this.statusBuf.length * 2));
        continue;
      }
      check(this.lib, 'cuzk_status_json', rc, this.err);
      return this.statusBuf.toString('utf8', 0, len[0]);
    }
  }

  /** Raw counter words (see native header), as Numbers. */
  readCounters(): { words: Float64Array; lastSeq: number; nowNs: number } {
    const n: [number] = [0];
    const rc = this.lib.countersRead(this.h(), this.counterBuf, this.counterBuf.length, n, this.err, this.err.length) as number;
    check(this.lib, 'cuzk_counters_read', rc, this.err);
    const words = new Float64Array(n[0]);
    for (let i = 0; i < n[0]; i++) words[i] = this.counterWords[2 * i + 1] * 4294967296 + this.counterWords[2 * i];
    return { words, lastSeq: words[CTR.LAST_SEQ], nowNs: words[CTR.NOW_NS] };
  }

  private readCounterTotals(): CounterTotals & { lastSeq: number; kindFinalizeNs: number[] } {
    const { words, lastSeq, nowNs } = this.readCounters();
    const nKinds = words[CTR.KINDS];
    const nGpus = words[CTR.GPUS];
    const nWorkers = nGpus * words[CTR.WORKERS_PER_GPU];
    const kindBase = CTR.HDR_WORDS;
    const gpuBase = kindBase + nKinds * CTR.KIND_WORDS;
    const workerBase = gpuBase + nGpus * CTR.GPU_WORDS;
    const kind = (field: number) => Array.from({ length: nKinds }, (_, k) => words[kindBase + k * CTR.KIND_WORDS + field]);
    const gpu = (field: number) => Array.from({ length: nGpus }, (_, g) => words[gpuBase + g * CTR.GPU_WORDS + field]);
    const worker = (field: number) => Array.from({ length: nWorkers }, (_, w) => words[workerBase + w * CTR.WORKER_WORDS + field]);
    return {
      lastSeq,
      nowNs,
      workerBusyNs: worker(CTR.W_BUSY_NS),
      workerPartitions: worker(CTR.W_PARTITIONS),
      gpuLockHeldNs: gpu(CTR.G_LOCK_HELD_NS),
      gpuStarvedNs: gpu(CTR.G_STARVED_NS),
      kindGpuNs: kind(CTR.K_GPU_NS),
      kindSynthNs: kind(CTR.K_SYNTH_NS),
      kindPartsCompleted: kind(CTR.K_PARTS_COMPLETED),
      kindPartsFailed: kind(CTR.K_PARTS_FAILED),
      kindProofsCompleted: kind(CTR.K_PROOFS_COMPLETED),
      kindProofsFailed: kind(CTR.K_PROOFS_FAILED),
      kindProofsCancelled: kind(CTR.K_PROOFS_CANCELLED),
      kindFinalizeNs: kind(CTR.K_FINALIZE_NS),
    };
  }

  /**
   * Applies every pending event now (synchronously). Called before each collection so
   * gauges are exact at the scrape; the blocking wait only wakes us between scrapes.
   */
  refresh(): void {
    if (this.handle === null || this.closing || !this.eventsEnabled) return;
    const before = this.model.eventsTotal;
    this.lastDrainMs = performance.now();
    try {
      this.drainAll(this.handle);
      if (this.model.eventsTotal !== before) this.stats.drains++;
      this.model.up = true;
    } catch (e) {
      this.model.up = false;
      throw e;
    }
  }

  private drainAll(h: bigint): void {
    if (this.needResync) this.resync();
    for (;;) {
      // Whole event groups only (ABI v2): a batch never ends inside a transition.
      let rc = this.lib.eventsDrain(h, this.eventBuf, BATCH_EVENTS, this.nOut, this.droppedOut, this.err, this.err.length) as number;
      let view = this.eventView;
      if (rc === STATUS.ERANGE) {
        // One group larger than our batch (an abort of a job with very many partitions):
        // take it whole in a buffer of its size.
        const big = Buffer.alloc(this.nOut[0] * EVENT_SIZE);
        view = new DataView(big.buffer, big.byteOffset, big.byteLength);
        rc = this.lib.eventsDrain(h, big, this.nOut[0], this.nOut, this.droppedOut, this.err, this.err.length) as number;
      }
      check(this.lib, 'cuzk_events_drain', rc, this.err);
      const n = this.nOut[0];
      const dropped = Number(this.droppedOut[0]);
      if (n > 0) {
        this.stats.batches++;
        this.model.applyEvents(view, n);
        this.onEvents?.(view, n);
        if (this.jobEnds.length > 0) this.afterBatch();
      }
      if (dropped > 0) {
        this.stats.dropped += dropped;
        this.model.eventsDropped += dropped;
        this.needResync = true;
        this.resync();
      }
      if (n > 0) this.onBatch?.();
      // Whole groups: a batch ends short of full when the next group does not fit, so only
      // an empty drain says nothing committed is left (one ~1 us call per refresh).
      if (n === 0) return;
    }
  }

  /**
   * Re-syncs after a sequence gap: state from a snapshot, totals from the counters, both
   * taken at the same sequence number when the engine allows (it usually does at once).
   */
  private resync(): void {
    this.stats.resyncs++;
    let status = this.status();
    let totals = this.readCounterTotals();
    for (let i = 0; i < 10 && status.last_seq !== totals.lastSeq; i++) {
      status = this.status();
      totals = this.readCounterTotals();
    }
    this.resyncFrom(status, totals);
    this.needResync = false;
    // Jobs whose JOB_DONE was lost in the gap.
    for (const job of [...this.pending.keys()]) this.settle(job);
    // Ids of jobs evicted in the gap (the engine is asked for any this forgets too early).
    for (const job of [...this.jobIds.keys()]) if (!this.model.jobs.has(job) && !this.pending.has(job)) this.jobIds.delete(job);
  }

  private resyncFrom(status: CuzkStatus, totals: CounterTotals): void {
    const nowNs = totals.nowNs;
    const view = viewFromStatus(status, {
      pipelineHandle: (p) => p.job_handle ?? 0,
      workerJobHandle: (w) => w.current_job_handle ?? 0,
      kindSlot: (name) => {
        const k = kindIndex(name);
        return k < 0 ? KIND_LABELS.length - 1 : k;
      },
      workerSlot: (w) => (w.worker_id < this.model.wBusy.length ? w.worker_id : -1),
      snapshotNs: nowNs,
    });
    const records = snapshotToEvents(this.model, view, { tNs: nowNs, resync: true, evictMissing: true, countProofs: false });
    this.model.applyRecords(records, false);
    if (typeof status.last_seq === 'number') this.model.lastSeq = Math.max(this.model.lastSeq, status.last_seq);
    this.model.adoptTotals(totals);
    // What the snapshot's records ended is settled by resync() itself (every await, every id).
    this.jobEnds.length = 0;
  }

  /**
   * Settles awaited jobs that finished in a batch and forgets the ids of evicted ones, in
   * event order (the model's jobEnds: what it read of JOB_DONE and JOB_EVICTED records).
   */
  private afterBatch(): void {
    const ends = this.jobEnds;
    for (let i = 0; i < ends.length; i++) {
      const e = ends[i];
      if (e >= 0) {
        if (this.pending.size > 0) this.settle(e);
      } else this.jobIds.delete(-1 - e);
    }
    ends.length = 0;
  }

  private settle(job: number): void {
    const p = this.pending.get(job);
    if (!p) return;
    try {
      const r = this.tryResult(job);
      if (!r) return;
      this.pending.delete(job);
      p.resolve(r);
    } catch (e) {
      this.pending.delete(job);
      p.reject(e as Error);
    }
  }

  /** The result if the job has ended, else null. */
  private tryResult(job: number): ProofResult | null {
    const res = {} as RawProofResult;
    const rc = this.lib.await(this.h(), job, 0, res, this.err, this.err.length) as number;
    if (rc === STATUS.ETIMEDOUT) return null;
    check(this.lib, 'cuzk_await', rc, this.err);
    return this.toResult(res);
  }

  /** Only with events off (benchmarks): one pool thread per awaited proof. */
  private awaitBlocking(job: number): Promise<ProofResult> {
    return new Promise((resolve, reject) => {
      const res = {} as RawProofResult;
      const err = Buffer.alloc(ERR_BUF_SIZE);
      const loop = () => {
        if (this.handle === null || this.closing) return reject(new Error('engine closed before the proof finished'));
        this.callAsync(this.lib.await, [this.handle, job, WAIT_TIMEOUT_MS, res, err, err.length], (e, rc) => {
          if (this.closing) return reject(new Error('engine closed before the proof finished'));
          if (e) return reject(e);
          if (rc === STATUS.ETIMEDOUT) return loop();
          if (rc !== STATUS.OK) return reject(new NativeError('cuzk_await', rc, this.lib.statusName(rc) as string, errText(err)));
          resolve(this.toResult(res));
        });
      };
      loop();
    });
  }

  private toResult(r: RawProofResult): ProofResult {
    const job = Number(r.job);
    const jobId = this.jobIds.get(job) ?? this.jobIdOf(job);
    // Without events no eviction is seen: forget the id with the result.
    if (!this.eventsEnabled) this.jobIds.delete(job);
    const kind = PROOF_KINDS[r.kind];
    if (!kind) throw new Error(`cuzk_await: result of job ${job} has unknown proof kind ${r.kind}`);
    return {
      job,
      jobId,
      kind,
      outcome: OUTCOMES[r.outcome] ?? 'failed',
      partitions: r.partitions,
      failedPartition: r.failed_partition === 0xffffffff ? null : r.failed_partition,
      queueWaitSeconds: Number(r.queue_wait_ns) / 1e9,
      synthesisSeconds: Number(r.synth_ns) / 1e9,
      gpuSeconds: Number(r.gpu_ns) / 1e9,
      totalSeconds: Number(r.total_ns) / 1e9,
      proofBytes: r.proof_len,
      error: r.error,
      gpuNs: Number(r.gpu_ns),
      synthNs: Number(r.synth_ns),
    };
  }

  /** The request id of a job (submitted here or not), or its handle as text if unknown. */
  requestId(job: number): string {
    return this.jobIds.get(job) ?? this.jobIdOf(job);
  }

  /**
   * MetricsSource.jobId (exemplars): the request id of a job, asked of the engine for jobs
   * it knows and we do not; undefined once the engine no longer knows the job.
   */
  jobId(handle: number): string | undefined {
    const known = this.jobIds.get(handle);
    if (known !== undefined || this.handle === null || this.closing) return known;
    // One reused buffer: this runs once per job on the ingest path (exemplars).
    const rc = this.lib.jobId(this.handle, handle, this.idBuf, this.idBuf.length, this.err, this.err.length) as number;
    return rc === STATUS.OK ? errText(this.idBuf) : undefined;
  }

  private jobIdOf(job: number): string {
    const rc = this.lib.jobId(this.h(), job, this.idBuf, this.idBuf.length, this.err, this.err.length) as number;
    return rc === STATUS.OK ? errText(this.idBuf) : String(job);
  }

  /** One blocking wait at a time on a koffi worker thread; the drain runs on our thread. */
  private armWait(): void {
    if (this.waiting || this.lingerTimer || this.handle === null || this.closing) return;
    this.waiting = true;
    this.stats.waits++;
    this.callAsync(this.lib.eventsWait, [this.handle, WAIT_TIMEOUT_MS, this.waitErr, this.waitErr.length], (e, rc) => {
      this.waiting = false;
      if (this.handle === null || this.closing) return;
      if (e || (rc !== STATUS.OK && rc !== STATUS.ETIMEDOUT)) {
        const why = e ? e.message : `${this.lib.statusName(rc) as string}: ${errText(this.waitErr)}`;
        this.model.errors.inc('event_wait', `cuzk_events_wait failed: ${why}`);
        // Back off, so a persistent failure does not spin; scrapes still drain.
        this.lingerTimer = setTimeout(() => {
          this.lingerTimer = null;
          this.armWait();
        }, 100);
        return;
      }
      if (rc !== STATUS.OK) return this.armWait();
      const linger = this.linger();
      if (linger <= 0) {
        this.drain();
        return this.armWait();
      }
      this.scheduleTick(linger);
    });
  }

  /** The linger now: short while something waits on the push path. */
  private linger(): number {
    return this.pending.size > 0 || this.onBatch !== null || this.onEvents !== null ? this.lingerMs : this.backgroundLingerMs;
  }

  /**
   * The linger after a drain that took `n` events (dropped ones included) that arrived
   * over `sinceMs`: at that rate the ring gets an eighth full in lingerEvents / rate; the
   * linger is never longer than that (nor shorter than lingerMs), so the ring keeps its
   * headroom whatever the background linger.
   */
  private nextLinger(n: number, sinceMs: number): number {
    const linger = this.linger();
    if (n === 0 || linger <= this.lingerMs) return linger;
    return Math.min(linger, Math.max(this.lingerMs, (this.lingerEvents * Math.max(sinceMs, 0)) / n));
  }

  private scheduleTick(ms: number): void {
    this.tickDueMs = performance.now() + ms;
    this.lingerTimer = setTimeout(this.lingerTick, ms);
  }

  /** Someone started waiting on the push path: a background tick due later than a linger comes sooner. */
  private hurry(): void {
    if (this.tickDueMs === 0 || this.tickDueMs - performance.now() <= this.lingerMs) return;
    clearTimeout(this.lingerTimer!);
    this.scheduleTick(this.lingerMs);
  }

  /**
   * A linger has passed: drain, and while drains keep finding events, drain again a linger
   * later from this timer; the first drain that finds none (a scrape may have taken them)
   * hands back to the blocking wait.
   */
  private readonly lingerTick = (): void => {
    this.lingerTimer = null;
    this.tickDueMs = 0;
    if (this.handle === null || this.closing) return;
    const since = performance.now() - this.lastDrainMs;
    const dropped = this.stats.dropped;
    const n = this.drain();
    // After the drain: it may have settled the last awaited proof.
    const linger = this.nextLinger(n + this.stats.dropped - dropped, since);
    if (n > 0 && linger > 0) this.scheduleTick(linger);
    else this.armWait();
  };

  /** refresh(), failures counted; returns the events it applied. */
  private drain(): number {
    const before = this.model.eventsTotal;
    try {
      this.refresh();
    } catch (err) {
      this.model.errors.inc('event_drain', (err as Error).message);
    }
    return this.model.eventsTotal - before;
  }

  /** A native call on koffi's worker pool, counted so close() can wait for it. */
  private callAsync(fn: CuzkLib['eventsWait'], args: unknown[], done: (e: Error | null, rc: number) => void): void {
    this.asyncCalls++;
    fn.async(...args, (e: Error | null, rc: number) => {
      if (--this.asyncCalls === 0) this.asyncDrained?.();
      done(e, rc);
    });
  }

  /**
   * Closes the engine: running jobs are cancelled, threads joined, memory freed. Pending
   * awaits reject. Idempotent; later calls return the same promise. Native calls already
   * queued on koffi's pool come back first (each within WAIT_TIMEOUT_MS), so none can start
   * on an engine being freed.
   */
  close(): Promise<void> {
    if (this.closedPromise) return this.closedPromise;
    this.closing = true;
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    this.tickDueMs = 0;
    const quiet = this.asyncCalls === 0 ? Promise.resolve() : new Promise<void>((r) => (this.asyncDrained = r));
    this.closedPromise = quiet.then(() => this.closeNative());
    return this.closedPromise;
  }

  private closeNative(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const ref: [bigint | null] = [this.handle];
      const err = Buffer.alloc(ERR_BUF_SIZE);
      // Off the JS thread: joining prover threads can take a partition's length.
      this.lib.close.async(ref, err, err.length, (e: Error | null, rc: number) => {
        this.handle = null;
        for (const [, p] of this.pending) p.reject(new Error('engine closed before the proof finished'));
        this.pending.clear();
        if (e) return reject(e);
        if (rc !== STATUS.OK) return reject(new NativeError('cuzk_engine_close', rc, this.lib.statusName(rc) as string, errText(err)));
        resolve();
      });
    });
  }
}
