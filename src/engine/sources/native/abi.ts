/**
 * koffi binding of native/include/cuzk_engine.h. Any shared library implementing that ABI
 * can be loaded (the path is configurable); its cuzk_abi_version() must match ours.
 *
 * Conventions kept here so callers do not repeat them: every fallible call takes a
 * caller-owned error buffer, and a non-zero status becomes a NativeError with the
 * library's message. Pointers are BigInts (koffi 3).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import koffi, { type LibraryHandle, type TypeObject } from 'koffi';
import { findPackageRoot } from '../../../util/package-root';

/**
 * v2: split proving (partition state finalizing = 6), event groups (EVF_GROUP_END; a drain
 * returns whole groups only, ERANGE when the oldest group exceeds the buffer), counters
 * KIND_WORDS 10 with K_FINALIZE_NS, cuzk_proof_verify takes the job's request id.
 */
export const ABI_VERSION = 2;

export const STATUS = {
  OK: 0,
  EINVAL: 1,
  ENOMEM: 2,
  ENOTFOUND: 3,
  ETIMEDOUT: 4,
  ECLOSED: 5,
  EFULL: 6,
  ERANGE: 7,
  EINTERNAL: 8,
} as const;

// Counter layout (cuzk_counters_read), word offsets.
export const CTR = {
  HDR_WORDS: 16,
  NOW_NS: 1,
  LAST_SEQ: 2,
  GPUS: 3,
  WORKERS_PER_GPU: 4,
  KINDS: 5,
  EVENTS_EMITTED: 6,
  EVENTS_OVERWRITTEN: 7,
  SYNTH_ACTIVE: 8,
  SYNTH_MAX: 9,
  MEM_BUDGET: 10,
  MEM_USED: 11,
  UPTIME_NS: 12,
  KIND_WORDS: 10,
  K_GPU_NS: 0,
  K_SYNTH_NS: 1,
  K_PARTS_COMPLETED: 2,
  K_PARTS_FAILED: 3,
  K_PROOFS_COMPLETED: 4,
  K_PROOFS_FAILED: 5,
  K_PROOFS_CANCELLED: 6,
  K_QUEUE_DEPTH: 7,
  K_FINALIZE_NS: 8,
  GPU_WORDS: 4,
  G_LOCK_HELD_NS: 0,
  G_STARVED_NS: 1,
  G_LOCK_ACQUIRES: 2,
  WORKER_WORDS: 4,
  W_BUSY_NS: 0,
  W_PARTITIONS: 1,
  W_BUSY: 2,
} as const;

export const ERR_BUF_SIZE = 512;

/** A non-OK status from the native library, with its readable message. */
export class NativeError extends Error {
  constructor(
    readonly fn: string,
    readonly status: number,
    readonly statusName: string,
    message: string,
  ) {
    super(`${fn}: ${statusName}: ${message || 'no message'}`);
    this.name = 'NativeError';
  }
}

/** Result of cuzk_await, as koffi decodes the struct. */
export interface RawProofResult {
  job: number;
  queue_wait_ns: number;
  synth_ns: number;
  gpu_ns: number;
  total_ns: number;
  kind: number;
  outcome: number;
  partitions: number;
  failed_partition: number;
  proof_len: number;
  reserved: number;
  error: string;
}

type Fn = ReturnType<LibraryHandle['func']>;

export interface CuzkLib {
  path: string;
  abiVersion: Fn;
  statusName: Fn;
  nowNs: Fn;
  open: Fn;
  close: Fn;
  submit: Fn;
  await: Fn;
  cancel: Fn;
  proofCopy: Fn;
  proofVerify: Fn;
  eventsDrain: Fn;
  eventsWait: Fn;
  countersRead: Fn;
  statusJson: Fn;
  jobId: Fn;
}

let resultType: TypeObject | undefined;
function proofResultType(): TypeObject {
  // Anonymous: koffi's named types are process-global, and a test runner may load this
  // module more than once into one process.
  resultType ??= koffi.struct({
    job: 'uint64_t',
    queue_wait_ns: 'uint64_t',
    synth_ns: 'uint64_t',
    gpu_ns: 'uint64_t',
    total_ns: 'uint64_t',
    kind: 'uint32_t',
    outcome: 'uint32_t',
    partitions: 'uint32_t',
    failed_partition: 'uint32_t',
    proof_len: 'uint32_t',
    reserved: 'uint32_t',
    error: 'char[256]',
  });
  return resultType;
}

/** Where `npm install` puts the reference engine. */
export function defaultLibraryPath(): string {
  return path.join(findPackageRoot(), 'native', 'build', 'libcuzk_engine.so');
}

const loaded = new Map<string, CuzkLib>();

/** Loads (once per path) and checks the ABI version. Throws a readable Error. */
export function loadLibrary(libPath = defaultLibraryPath()): CuzkLib {
  const abs = path.resolve(libPath);
  const cached = loaded.get(abs);
  if (cached) return cached;
  if (!fs.existsSync(abs)) {
    throw new Error(
      `native library not found at ${abs}` +
        (abs === defaultLibraryPath() ? ' (run "npm install" or "make -C native" to build it)' : ''),
    );
  }
  let lib: LibraryHandle;
  try {
    lib = koffi.load(abs);
  } catch (e) {
    throw new Error(`cannot load native library ${abs}: ${(e as Error).message}`);
  }
  const fn = (decl: string): Fn => {
    try {
      return lib.func(decl);
    } catch (e) {
      throw new Error(`${abs} does not implement the cuzk ABI (${(e as Error).message})`);
    }
  };
  const res = proofResultType();
  const out: CuzkLib = {
    path: abs,
    abiVersion: fn('uint32_t cuzk_abi_version(void)'),
    statusName: fn('const char *cuzk_status_name(int status)'),
    nowNs: fn('uint64_t cuzk_now_ns(void)'),
    open: fn('int cuzk_engine_open(const char *config, _Out_ void **out, char *err, size_t errlen)'),
    close: fn('int cuzk_engine_close(_Inout_ void **engine, char *err, size_t errlen)'),
    submit: fn(
      'int cuzk_submit(void *e, uint32_t kind, int32_t priority, uint32_t partitions, uint32_t log2_size, const char *request_id, _Out_ uint64_t *job, char *err, size_t errlen)',
    ),
    await: lib.func('cuzk_await', 'int', ['void *', 'uint64_t', 'uint32_t', koffi.out(koffi.pointer(res)), 'char *', 'size_t']),
    cancel: fn('int cuzk_cancel(void *e, uint64_t job, char *err, size_t errlen)'),
    proofCopy: fn('int cuzk_proof_copy(void *e, uint64_t job, uint8_t *buf, uint32_t cap, _Out_ uint32_t *len, char *err, size_t errlen)'),
    proofVerify: fn('int cuzk_proof_verify(const uint8_t *proof, uint32_t len, const char *request_id, _Out_ uint32_t *valid, char *err, size_t errlen)'),
    eventsDrain: fn('int cuzk_events_drain(void *e, void *buf, uint32_t cap, uint32_t *n, uint64_t *dropped, char *err, size_t errlen)'),
    eventsWait: fn('int cuzk_events_wait(void *e, uint32_t timeout_ms, char *err, size_t errlen)'),
    countersRead: fn('int cuzk_counters_read(void *e, uint64_t *buf, uint32_t cap, _Out_ uint32_t *words, char *err, size_t errlen)'),
    statusJson: fn('int cuzk_status_json(void *e, char *buf, uint32_t cap, _Out_ uint32_t *len, char *err, size_t errlen)'),
    jobId: fn('int cuzk_job_id(void *e, uint64_t job, char *buf, uint32_t cap, char *err, size_t errlen)'),
  };
  const v = out.abiVersion() as number;
  if (v !== ABI_VERSION) {
    throw new Error(`${abs} implements cuzk ABI version ${v}, this exporter speaks version ${ABI_VERSION}`);
  }
  loaded.set(abs, out);
  return out;
}

/** Reads the NUL-terminated message a call left in an error buffer. */
export function errText(buf: Buffer): string {
  const end = buf.indexOf(0);
  return buf.toString('utf8', 0, end < 0 ? buf.length : end);
}

/** Throws NativeError unless status is OK. */
export function check(lib: CuzkLib, fnName: string, status: number, err: Buffer): void {
  if (status === STATUS.OK) return;
  throw new NativeError(fnName, status, lib.statusName(status) as string, errText(err));
}
