/* engine_state.h — the engine handle and the state it owns. Everything mutable lives in
 * struct cuzk_engine (no globals). Locking:
 *   - e->mu (the "state lock") guards every field marked [mu]: jobs, partitions, workers'
 *     and GPUs' bookkeeping, counters. Every event is emitted while holding it, so a
 *     snapshot taken under it reflects exactly the events up to its last_seq. Take and
 *     leave it ONLY through state_lock/state_unlock/state_wait/state_timedwait: leaving a
 *     critical section (unlock, or a condvar wait) ends its event group (CUZK_EVF_GROUP_END),
 *     which is what lets a drain return whole transitions only.
 *   - the per-GPU "kernel lock" (a ticket lock on gpu_state.kernel_mu/kernel_cv) is held
 *     only around the kernels; kernel_mu itself is held only for the ticket bookkeeping.
 *   - the event ring has its own mutex.
 *   Order: (kernel lock held) -> mu -> ring.mu; kernel_mu is never held with another lock.
 *   Fields marked [thread] belong to one thread. */
#ifndef CUZK_ENGINE_STATE_H
#define CUZK_ENGINE_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "cuzk_engine.h"
#include "event_ring.h"
#include "field.h"
#include "hash.h"
#include "jsonw.h"
#include "proof.h"

#define ENGINE_MAGIC 0x636b7a75656e6731ull /* "1gneuzkc" */
#define MAX_PARTITIONS 256u
#define MAX_REQUEST_ID 255u
#define NO_GPU 0xffu
#define NO_WORKER 0xffffu
#define NO_KIND 0xffu

typedef struct partition { /* all [mu] */
  uint8_t state;          /* cuzk_partition_state */
  uint8_t synth_started;  /* synth_start valid */
  uint8_t gpu_started;    /* gpu_start valid */
  uint8_t inject_fail;    /* fault injector chose this partition at hand-off */
  uint8_t inject_synth_fail; /* fault injector chose its synthesis (fail_synthesis_nth) */
  uint8_t gpu;            /* GPU ordinal that owns/owned its GPU stage, NO_GPU */
  uint16_t worker;        /* global worker id, NO_WORKER */
  uint64_t synth_start, synth_ns;
  uint64_t gpu_start, gpu_ns;
  uint64_t fin_start;     /* FINALIZING since (valid in FINALIZING and after it) */
  uint8_t fin_started;    /* the partition entered FINALIZING */
  uint8_t synth_completed;/* its synthesis ran to the end (snapshot synth_ms) */
  uint8_t abandoned;      /* FAILED because of its job (CUZK_EVF_ABANDONED) */
  uint64_t seed;          /* witness seed (job seed, kind, index) */
  uint64_t sim_gpu_ns;    /* sim backend: drawn kernel duration (under the GPU lock) */
  uint64_t sim_fin_ns;    /* sim backend: drawn finalize-tail duration */
  gl_t *witness;          /* A | B | C, 3n elements; synthesis -> take-back */
  uint64_t mem_bytes;     /* bytes reserved from the memory budget, 0 when none */
  partition_proof proof;  /* filled by the GPU stage */
} partition;

typedef struct job {
  struct job *next;       /* submit order [mu] */
  uint64_t handle;
  uint32_t kind;
  int32_t priority;
  uint32_t n_parts;
  uint32_t log2n;
  uint64_t seed;
  char id[MAX_REQUEST_ID + 1];
  uint32_t id_len;
  atomic_int abort;       /* set when cancelled/failed: stage code polls it unlocked */
  /* [mu] */
  uint64_t submit_ns, start_ns, finish_ns, evict_at_ns;
  uint8_t queued;          /* counted in queue depth: submitted, not started, not aborted */
  uint8_t started, finished, outcome, cancel_requested, failing;
  uint32_t n_pending, n_ready, n_done, n_failed;
  uint32_t failed_partition;
  char error[256];
  uint64_t synth_ns, gpu_ns;
  uint8_t *proof;
  uint32_t proof_len;
  uint32_t awaiters;      /* blocked cuzk_await calls: eviction waits for them */
  partition *parts;
} job;

/* A partition whose kernels are done, on its way through the finalize tail to its end
 * (the worker's finalizer runs it; with split proving off, the worker itself). */
typedef struct fin_item {
  job *j;
  uint32_t idx;
  int outcome;            /* gpu_outcome of the kernel stage */
  char reason[160];
  gl_t *h;                /* cpu: H coefficients from the kernels (owned), else NULL */
  const gl_t *witness;    /* cpu: A | B | C coefficients (the partition's, freed at its end) */
  unsigned log2n;
  uint32_t kind;
  uint64_t seed, job_seed, sim_fin_ns;
} fin_item;

typedef struct worker {
  struct cuzk_engine *e;
  uint32_t gpu, index, id;
  pthread_t thread;
  int thread_started;
  /* [mu] — set by sched_handoff, cleared by sched_takeback, nowhere else. job/partition:
   * the partition the worker owns now (its latest pickup); busy_since: the stint's start */
  int busy;
  job *job;
  uint32_t partition;
  uint64_t busy_since, busy_ns, partitions;
  /* split proving: this worker's finalizer thread and its bounded FIFO [mu] */
  pthread_t fin_thread;
  int fin_started;
  pthread_cond_t fin_cv;   /* finalizer: an item arrived, or the worker exited */
  pthread_cond_t space_cv; /* worker: a queue slot became free */
  int fin_cv_init;
  fin_item *fq;            /* finalize_queue slots */
  uint32_t fq_head, fq_len;
  int exited;              /* the worker thread left its loop (no more items) */
} worker;

typedef struct gpu_state {
  /* The kernel lock: a FIFO ticket lock, so the two workers of a GPU alternate (a plain
   * mutex lets the releasing worker re-acquire before the waiting one wakes up). */
  pthread_mutex_t kernel_mu;
  pthread_cond_t kernel_cv;
  uint64_t next_ticket, serving; /* [kernel_mu] */
  int kernel_lock_init;
  /* [mu] */
  int held;
  uint16_t holder;
  uint64_t acquired_at, held_ns, acquires, last_release;
  int starved;
  uint64_t starved_since, starved_ns;
  char name[CFG_NAME_MAX];
  char uuid[48];
} gpu_state;

typedef struct kind_counters {
  uint64_t gpu_ns, synth_ns, finalize_ns, parts_completed, parts_failed;
  uint64_t proofs_completed, proofs_failed, proofs_cancelled;
} kind_counters;

typedef struct kind_alloc { /* modelled parameter memory (status "allocations") */
  int used;
  uint32_t log2n;
  uint64_t last_used_ns;
} kind_alloc;

struct cuzk_engine {
  uint64_t magic;
  engine_config cfg;
  uint64_t open_ns;

  pthread_mutex_t mu;
  pthread_cond_t cv_synth; /* synthesis threads: work or memory became available */
  pthread_cond_t cv_gpu;   /* GPU workers: a partition reached synth_done */
  pthread_cond_t cv_done;  /* a job finished (cuzk_await) */
  pthread_cond_t cv_house; /* housekeeping: new eviction deadline */
  pthread_cond_t cv_sleep; /* sim sleeps: a job was aborted */
  pthread_cond_t cv_calls; /* close: the last API call left */
  int sync_init;

  event_ring ring;

  /* [mu] */
  int group_open;          /* events emitted since the critical section began */
  int closing, stopping;
  uint32_t calls;
  job *jobs_head, *jobs_tail;
  uint32_t n_jobs, n_unfinished;
  uint64_t next_handle;
  uint32_t queued_by_kind[CUZK_KIND_COUNT], queued_total;
  uint32_t unfinished_by_kind[CUZK_KIND_COUNT];
  uint32_t ready_total;   /* partitions in synth_done, engine-wide */
  uint32_t synth_active;
  uint32_t gpu_active;    /* partitions in gpu state */
  uint64_t mem_used;
  kind_counters kc[CUZK_KIND_COUNT];
  kind_alloc alloc[CUZK_KIND_COUNT];
  uint64_t gpu_stage_count;   /* partitions handed to a worker so far (fault nth) */
  uint64_t synth_count;       /* partition syntheses started so far (fault synth nth) */
  uint64_t completed_proofs;  /* fault corrupt nth */
  prng sim_rng, fault_rng;
  jsonw status_buf;           /* reused snapshot buffer */

  gpu_state *gpus;
  worker *workers;
  uint32_t n_workers;
  pthread_t *synth_threads;
  uint32_t n_synth_started;
  pthread_t house_thread;
  int house_started;
};

/* Emits an event into the current critical section's group; call with e->mu held. */
static inline void emit(struct cuzk_engine *e, uint16_t type, uint64_t t, uint64_t job,
                        uint64_t value, uint32_t partition, uint8_t kind, uint8_t gpu,
                        uint16_t worker, uint16_t flags, uint32_t aux) {
  event_emit(&e->ring, type, t, job, value, partition, kind, gpu, worker, flags, aux);
  e->group_open = 1;
}

/* The state lock. Leaving a critical section (unlock or condvar wait) commits the events
 * it emitted as one group. */
static inline void state_lock(struct cuzk_engine *e) { pthread_mutex_lock(&e->mu); }
static inline void state_commit(struct cuzk_engine *e) {
  if (e->group_open) {
    event_ring_commit(&e->ring);
    e->group_open = 0;
  }
}
static inline void state_unlock(struct cuzk_engine *e) {
  state_commit(e);
  pthread_mutex_unlock(&e->mu);
}
static inline void state_wait(struct cuzk_engine *e, pthread_cond_t *cv) {
  state_commit(e);
  pthread_cond_wait(cv, &e->mu);
}
/* Returns pthread_cond_timedwait's result (ETIMEDOUT on timeout). */
static inline int state_timedwait(struct cuzk_engine *e, pthread_cond_t *cv,
                                  const struct timespec *deadline) {
  state_commit(e);
  return pthread_cond_timedwait(cv, &e->mu, deadline);
}

#endif
