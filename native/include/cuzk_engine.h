/*
 * cuzk_engine.h — C ABI of the cuzk-exporter reference GPU proving engine.
 *
 * Plain C, no C++ types, safe to include from C++ (extern "C"). Any library that
 * implements this header can be driven by src/engine/ (koffi). Conventions:
 *
 *  - Every fallible call returns an int status (CUZK_OK == 0) and, on failure, writes a
 *    NUL-terminated human-readable message into the caller's (err, errlen) buffer
 *    (truncated to errlen; err may be NULL when errlen == 0). Nothing aborts the process.
 *  - Integers crossing the ABI are fixed width; all timestamps/durations are nanoseconds
 *    on CLOCK_MONOTONIC (cuzk_now_ns()).
 *  - All calls on one engine are thread-safe unless stated otherwise. The calls that block
 *    (cuzk_events_wait, cuzk_await) are meant to be made from a worker thread (koffi async).
 *  - The engine owns everything it allocates; the caller owns every buffer it passes in.
 */
#ifndef CUZK_ENGINE_H
#define CUZK_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change of a signature, struct layout or enum value. */
#define CUZK_ABI_VERSION 2u
/* v2 (from v1): partition state CUZK_PART_FINALIZING and split proving (a worker's
 * finalize tail runs while it picks its next partition; worker busy = cuzk's fixed
 * semantics), event groups (CUZK_EVF_GROUP_END; cuzk_events_drain returns whole groups
 * only), CUZK_CTR_KIND_WORDS 10 with CUZK_CTRK_FINALIZE_NS, proofs bound to their job
 * (cuzk_proof_verify takes the request id; proof format version 2). */

/* ---- status codes ------------------------------------------------------------------- */
enum cuzk_status {
  CUZK_OK = 0,
  CUZK_EINVAL = 1,     /* bad argument or config (message says which) */
  CUZK_ENOMEM = 2,     /* allocation failed */
  CUZK_ENOTFOUND = 3,  /* unknown job handle (never submitted, or evicted) */
  CUZK_ETIMEDOUT = 4,  /* await/wait timed out; not an error of the engine */
  CUZK_ECLOSED = 5,    /* engine is closing/closed; blocking calls return this on close */
  CUZK_EFULL = 6,      /* queue limit reached; submit again later */
  CUZK_ERANGE = 7,     /* caller buffer too small; *needed/len out-params say how much */
  CUZK_EINTERNAL = 8,  /* thread creation or other system failure */
};

/* ---- enumerations (values are part of the ABI) -------------------------------------- */
enum cuzk_proof_kind { /* canonical names: cuzk_kind_name() */
  CUZK_KIND_POREP_C2 = 0,     /* "porep-c2",     10 partitions */
  CUZK_KIND_SNAP_UPDATE = 1,  /* "snap-update",  16 partitions */
  CUZK_KIND_WINDOW_POST = 2,  /* "window-post",   1 partition  */
  CUZK_KIND_WINNING_POST = 3, /* "winning-post",  1 partition, highest priority */
  CUZK_KIND_COUNT = 4
};

enum cuzk_partition_state { /* names as in cuzk's /status */
  CUZK_PART_PENDING = 0,      /* "pending" */
  CUZK_PART_SYNTHESIZING = 1, /* "synthesizing" */
  CUZK_PART_SYNTH_DONE = 2,   /* "synth_done": waiting for a GPU worker */
  CUZK_PART_GPU = 3,          /* "gpu": handed to a GPU worker (prep, kernels) */
  CUZK_PART_DONE = 4,         /* "done" */
  CUZK_PART_FAILED = 5,       /* "failed" (also partitions of a cancelled job) */
  CUZK_PART_FINALIZING = 6,   /* "finalizing": kernels done, GPU lock released, the CPU
                               * finalize tail runs (split proving). The status snapshot
                               * shows it as "gpu" with "finalizing": true, as cuzk does. */
  CUZK_PART_STATE_COUNT = 7
};

enum cuzk_job_outcome {
  CUZK_OUTCOME_COMPLETED = 0,
  CUZK_OUTCOME_FAILED = 1,
  CUZK_OUTCOME_CANCELLED = 2
};

/* ---- events ------------------------------------------------------------------------- */
enum cuzk_event_type {
  /* job, kind; partition = total partitions; value = priority; aux = queue depth of kind */
  CUZK_EV_JOB_QUEUED = 1,
  /* job, kind; value = queue wait ns (submit -> first synthesis start) */
  CUZK_EV_JOB_STARTED = 2,
  /* job, kind, partition; aux = new cuzk_partition_state; value = ns of the stage just
   * left: synthesis ns on -> SYNTH_DONE; on GPU -> FINALIZING, ns from the hand-off to the
   * kernel lock's release; on GPU or FINALIZING -> DONE/FAILED, the whole GPU-stage ns from
   * the hand-off to the end (as CUZK_CTRK_GPU_NS counts it); else 0. gpu, worker set on
   * every transition into or out of GPU/FINALIZING. The GPU stage goes SYNTH_DONE -> GPU
   * (hand-off) -> FINALIZING (kernels done) -> DONE/FAILED (tail ended); GPU -> FAILED
   * directly when it fails or is abandoned before the tail. Into FAILED, flags has
   * CUZK_EVF_ABANDONED when the partition failed because of its job (cancel, a sibling's
   * failure, close) rather than by its own error. */
  CUZK_EV_PARTITION = 3,
  /* gpu, worker, job, kind, partition. Busy semantics (cuzk after its race fix): a worker is
   * busy from a pickup until the end of the LATEST partition it picked up.
   * aux = 1 at EVERY hand-off, also when the worker is already busy (ownership moves to the
   * new job/partition; value 0; the stint and its start continue).
   * aux = 0 when the partition the worker owns ends: value = ns of the stint since its
   * first pickup; job/partition = the partition whose end cleared the worker.
   * A worker's partitions end in the order it picked them up, so on a healthy engine every
   * partition in GPU/FINALIZING has a busy worker. Emitted only by the hand-off and the
   * partition end (faults.status_bug_kind/mode change this, reproducing the historical
   * bug: "clobber" clears the worker when a partition of that kind ends even if it owns a
   * newer one; "skip" emits nothing for that kind). */
  CUZK_EV_WORKER = 4,
  /* gpu, worker; aux = 1 acquired / 0 released. Acquire: value = idle gap ns since the
   * previous release on that GPU (flags & CUZK_EVF_FIRST: first acquire, no gap).
   * Release: value = lock-held ns. */
  CUZK_EV_GPU_LOCK = 5,
  /* job, kind; aux = cuzk_job_outcome; value = total ns (submit -> result) */
  CUZK_EV_JOB_DONE = 6,
  /* job, kind: finished job left the status snapshot (after finished_retention_ms) */
  CUZK_EV_JOB_EVICTED = 7,
  /* kind; value = queued (not started) jobs of that kind */
  CUZK_EV_QUEUE_DEPTH = 8,
  /* value = synthesis slots in use */
  CUZK_EV_SYNTH_ACTIVE = 9,
  /* value = memory budget bytes in use */
  CUZK_EV_MEMORY = 10
};

#define CUZK_EVF_FIRST 0x1u
/* (addition) CUZK_EV_PARTITION into FAILED: the partition did not fail by itself; its job
 * was cancelled or another partition failed. Not counted in CUZK_CTRK_PARTS_FAILED. */
#define CUZK_EVF_ABANDONED 0x2u
/* Event groups. Every event emitted inside one critical section of the engine's state lock
 * (one state transition: e.g. a take-back's worker idle + memory + partition done) belongs
 * to one group, and the LAST event of every group carries CUZK_EVF_GROUP_END.
 * cuzk_events_drain returns whole groups only, so a consumer that applies what one drain
 * returned never observes half a transition. */
#define CUZK_EVF_GROUP_END 0x4u

/* 48 bytes, little-endian host layout, no padding. Decoded in JS with DataView. */
typedef struct cuzk_event {
  uint64_t seq;       /*  0: 1, 2, 3, ... per engine, no reuse */
  uint64_t t_ns;      /*  8: CLOCK_MONOTONIC ns when the transition happened */
  uint64_t job;       /* 16: job handle (0 = none) */
  uint64_t value;     /* 24: type-specific (see above) */
  uint32_t partition; /* 32: partition index */
  uint16_t type;      /* 36: cuzk_event_type */
  uint8_t kind;       /* 38: cuzk_proof_kind (0xff = none) */
  uint8_t gpu;        /* 39: GPU ordinal (0xff = none) */
  uint16_t worker;    /* 40: global worker id = gpu * workers_per_gpu + index (0xffff = none) */
  uint16_t flags;     /* 42: CUZK_EVF_* */
  uint32_t aux;       /* 44: type-specific (see above) */
} cuzk_event;

/* ---- counters ----------------------------------------------------------------------- */
/* cuzk_counters_read() fills a flat uint64 array. Running intervals (a worker's current
 * stint, a held GPU lock, a starved GPU) are included up to now_ns, so totals are exact at
 * the moment of the call. Layout (word offsets):                                        */
#define CUZK_CTR_HDR_WORDS 16u
#define CUZK_CTR_LAYOUT 0u        /* = CUZK_ABI_VERSION */
#define CUZK_CTR_NOW_NS 1u        /* cuzk_now_ns() at the read */
#define CUZK_CTR_LAST_SEQ 2u      /* last event seq emitted */
#define CUZK_CTR_GPUS 3u
#define CUZK_CTR_WORKERS_PER_GPU 4u
#define CUZK_CTR_KINDS 5u         /* = CUZK_KIND_COUNT */
#define CUZK_CTR_EVENTS_EMITTED 6u
#define CUZK_CTR_EVENTS_OVERWRITTEN 7u /* lost to ring overflow before being drained */
#define CUZK_CTR_SYNTH_ACTIVE 8u
#define CUZK_CTR_SYNTH_MAX 9u
#define CUZK_CTR_MEM_BUDGET 10u
#define CUZK_CTR_MEM_USED 11u
#define CUZK_CTR_UPTIME_NS 12u
/* then CUZK_KIND_COUNT blocks of CUZK_CTR_KIND_WORDS: */
#define CUZK_CTR_KIND_WORDS 10u
#define CUZK_CTRK_GPU_NS 0u             /* GPU-stage ns (hand-off -> end, finalize tail
                                         * included) of partitions that left the GPU stage
                                         * (done, failed or abandoned) */
#define CUZK_CTRK_SYNTH_NS 1u           /* synthesis ns of completed syntheses */
#define CUZK_CTRK_PARTS_COMPLETED 2u
#define CUZK_CTRK_PARTS_FAILED 3u       /* own failures only (not CUZK_EVF_ABANDONED) */
#define CUZK_CTRK_PROOFS_COMPLETED 4u
#define CUZK_CTRK_PROOFS_FAILED 5u
#define CUZK_CTRK_PROOFS_CANCELLED 6u
#define CUZK_CTRK_QUEUE_DEPTH 7u        /* jobs queued, not started (now, not cumulative) */
#define CUZK_CTRK_FINALIZE_NS 8u        /* ns spent in FINALIZING by partitions that left it */
#define CUZK_CTRK_RESERVED 9u
/* then n_gpus blocks of CUZK_CTR_GPU_WORDS: */
#define CUZK_CTR_GPU_WORDS 4u
#define CUZK_CTRG_LOCK_HELD_NS 0u  /* per-GPU kernel lock held */
#define CUZK_CTRG_STARVED_NS 1u    /* lock free while no synth_done partition waited and
                                    * work was outstanding (an idle engine is not starved) */
#define CUZK_CTRG_LOCK_ACQUIRES 2u
#define CUZK_CTRG_RESERVED 3u
/* then n_gpus * workers_per_gpu blocks of CUZK_CTR_WORKER_WORDS (global worker order): */
#define CUZK_CTR_WORKER_WORDS 4u
#define CUZK_CTRW_BUSY_NS 0u       /* busy time (from a pickup to the end of the latest
                                    * partition picked up), incl. the running stint: the
                                    * union of its partitions' GPU-stage intervals */
#define CUZK_CTRW_PARTITIONS 1u    /* partitions whose GPU stage this worker ran that ended */
#define CUZK_CTRW_BUSY 2u          /* 1 if it owns a partition now */
#define CUZK_CTRW_RESERVED 3u

/* ---- proof results ------------------------------------------------------------------ */
typedef struct cuzk_proof_result {
  uint64_t job;
  uint64_t queue_wait_ns;  /* submit -> first synthesis start */
  uint64_t synth_ns;       /* sum of partition synthesis durations */
  uint64_t gpu_ns;         /* sum of partition GPU-stage durations (as in the counters) */
  uint64_t total_ns;       /* submit -> result */
  uint32_t kind;
  uint32_t outcome;        /* cuzk_job_outcome */
  uint32_t partitions;
  uint32_t failed_partition; /* index of the first failed partition, or UINT32_MAX */
  uint32_t proof_len;      /* bytes of the proof (cuzk_proof_copy) */
  uint32_t reserved;
  char error[256];         /* reason when outcome != COMPLETED, else "" */
} cuzk_proof_result;

/* ---- opaque engine -------------------------------------------------------------------- */
typedef struct cuzk_engine cuzk_engine;

/* ABI version this library implements (== CUZK_ABI_VERSION it was built with). */
uint32_t cuzk_abi_version(void);
/* Static strings; "unknown" for out-of-range values. Never NULL. */
const char *cuzk_status_name(int status);
const char *cuzk_kind_name(uint32_t kind);
const char *cuzk_partition_state_name(uint32_t state);
/* CLOCK_MONOTONIC in ns (the clock of every timestamp here). */
uint64_t cuzk_now_ns(void);

/* Opens an engine from a JSON config (see native/README.md for every key and its default;
 * "{}" is a valid config). Unknown keys and out-of-range values are errors. Starts all
 * threads. On success *out receives the handle, owned by the caller until cuzk_engine_close. */
int cuzk_engine_open(const char *config_json, cuzk_engine **out, char *err, size_t errlen);

/* Stops intake, cancels queued and running jobs, wakes every blocked call (they return
 * CUZK_ECLOSED), waits for them to leave, joins all threads and frees everything.
 * Sets *engine to NULL, so a second close of the same variable returns CUZK_EINVAL.
 * No new call on the handle may start once close has begun (the memory is freed). */
int cuzk_engine_close(cuzk_engine **engine, char *err, size_t errlen);

/* Submits a proof. kind: cuzk_proof_kind. priority < 0: the kind's default (higher runs
 * first; winning-post is highest). partitions == 0: the kind's default; log2_size == 0: the
 * configured size for the kind. request_id: caller id shown as job_id in the status
 * snapshot (copied; NULL or "" -> generated), at most 255 bytes of UTF-8.
 * *job_out receives the job handle (never 0). Never blocks. */
int cuzk_submit(cuzk_engine *e, uint32_t kind, int32_t priority, uint32_t partitions,
                uint32_t log2_size, const char *request_id, uint64_t *job_out, char *err,
                size_t errlen);

/* Blocks until the job finishes or timeout_ms passes (CUZK_ETIMEDOUT), then fills *result.
 * timeout_ms 0 polls; UINT32_MAX waits without a limit. Results stay available until the
 * job is evicted (finished_retention_ms after it ends; a blocked await defers eviction). */
int cuzk_await(cuzk_engine *e, uint64_t job, uint32_t timeout_ms, cuzk_proof_result *result,
               char *err, size_t errlen);

/* Requests cancellation: queued partitions are dropped, running ones are abandoned at the
 * next stage boundary, workers and memory are released, and its await reports CANCELLED.
 * A job that already finished: CUZK_OK, no effect. Unknown handle: CUZK_ENOTFOUND. */
int cuzk_cancel(cuzk_engine *e, uint64_t job, char *err, size_t errlen);

/* Copies the finished job's proof bytes into buf (cap bytes). *len_out = proof length;
 * CUZK_ERANGE if cap is too small. */
int cuzk_proof_copy(cuzk_engine *e, uint64_t job, uint8_t *buf, uint32_t cap,
                    uint32_t *len_out, char *err, size_t errlen);

/* Verifies a proof produced by this engine without an engine, for the job it is presented
 * for: request_id is that job's id (NUL-terminated, as cuzk_job_id returns it; must not be
 * NULL). Proofs are bound to their job: the job seed (from the request id and the job
 * handle in the proof header) enters every partition's Fiat-Shamir transcript and derives
 * its witness seed, so a proof presented for another job does not verify. Re-synthesizes
 * each partition's witness and checks A(s)*B(s) - C(s) == H(s) * (s^n - 1) at the
 * challenge. Returns CUZK_OK and *valid = 1 or 0 (with *valid = 0 the err buffer says why;
 * sim-backend proofs carry no arithmetic and always give 0); CUZK_EINVAL for malformed
 * bytes or a NULL request_id. */
int cuzk_proof_verify(const uint8_t *proof, uint32_t len, const char *request_id,
                      uint32_t *valid, char *err, size_t errlen);

/* Copies the oldest undrained events into buf, WHOLE GROUPS ONLY (see CUZK_EVF_GROUP_END):
 * as many complete groups as fit in cap events, so the last event copied always carries
 * CUZK_EVF_GROUP_END and a group still being emitted is never returned. Advances the
 * engine's single read cursor past what was copied. *n_out = events copied.
 * *dropped_out = events lost since the previous drain: overwritten by ring overflow, plus
 * the rest of any group whose head was overwritten (skipped so no partial group is ever
 * returned) — a sequence gap: the caller should re-sync from cuzk_status_json and
 * cuzk_counters_read. If the oldest whole group has more events than cap (a group is
 * normally 1-6 events; aborting a job emits one per partition), nothing is copied or
 * consumed and the call returns CUZK_ERANGE with *n_out = that group's size and
 * *dropped_out = 0: call again with a buffer of at least *n_out events. Never blocks.
 * One consumer at a time. */
int cuzk_events_drain(cuzk_engine *e, cuzk_event *buf, uint32_t cap, uint32_t *n_out,
                      uint64_t *dropped_out, char *err, size_t errlen);

/* Blocks until at least one undrained whole group exists (CUZK_OK), timeout_ms passes
 * (CUZK_ETIMEDOUT) or the engine closes (CUZK_ECLOSED). Call it from a worker thread.
 * timeout_ms 0 polls; UINT32_MAX waits without a limit. */
int cuzk_events_wait(cuzk_engine *e, uint32_t timeout_ms, char *err, size_t errlen);

/* Fills buf (cap words) with the counter layout above; *words_out = words written or, with
 * CUZK_ERANGE, words needed. */
int cuzk_counters_read(cuzk_engine *e, uint64_t *buf, uint32_t cap, uint32_t *words_out,
                       char *err, size_t errlen);

/* Writes the status snapshot as JSON (cuzk /status shape plus additions, see
 * native/README.md) into buf; *len_out = length without the NUL, or the size needed
 * (plus one for the NUL) with CUZK_ERANGE. The snapshot is consistent: taken under the
 * engine's state lock, with "last_seq" = the last event it reflects. */
int cuzk_status_json(cuzk_engine *e, char *buf, uint32_t cap, uint32_t *len_out, char *err,
                     size_t errlen);

/* Copies the caller's request id (job_id in the snapshot) of a known job into buf. */
int cuzk_job_id(cuzk_engine *e, uint64_t job, char *buf, uint32_t cap, char *err,
                size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* CUZK_ENGINE_H */
