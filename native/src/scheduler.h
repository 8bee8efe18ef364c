/* scheduler.h — job and partition state transitions. Every function here is called with
 * e->mu held and emits the events of the transition it makes. The worker busy state is set
 * in sched_handoff and cleared in sched_takeback and nowhere else, for every proof kind. */
#ifndef CUZK_SCHEDULER_H
#define CUZK_SCHEDULER_H

#include "engine_state.h"

typedef enum synth_outcome { SYNTH_OK, SYNTH_ABANDONED, SYNTH_OOM, SYNTH_INJECTED } synth_outcome;
typedef enum gpu_outcome { GPU_OK, GPU_FAILED, GPU_ABANDONED } gpu_outcome;

/* Partition flag in CUZK_EV_PARTITION events: failed because its job was cancelled or
 * another partition failed, not by its own error (not counted in PARTS_FAILED). */
#define EVF_ABANDONED CUZK_EVF_ABANDONED

job *sched_find(cuzk_engine *e, uint64_t handle);
void sched_enqueue(cuzk_engine *e, job *j, uint64_t now);

/* Highest-priority (then oldest) job with a pending partition; *idx = its lowest pending
 * partition. NULL when none. */
job *sched_pick_synth(cuzk_engine *e, uint32_t *idx);
void sched_start_synthesis(cuzk_engine *e, job *j, uint32_t idx, uint64_t now);
/* witness: the buffer synthesis filled (NULL for sim/failed); ownership passes here. */
void sched_finish_synthesis(cuzk_engine *e, job *j, uint32_t idx, uint64_t now,
                            synth_outcome outcome, gl_t *witness);

/* Highest-priority (then oldest) job with a synth_done partition; *idx = that partition. */
job *sched_pick_gpu(cuzk_engine *e, uint32_t *idx);
/* The ONE place a partition is handed to a worker (partition -> gpu; worker -> busy, or,
 * already busy, its ownership moves to this partition; the stint continues). */
void sched_handoff(cuzk_engine *e, worker *w, job *j, uint32_t idx, uint64_t now);
/* Kernels done and the GPU lock released: partition -> finalizing (same critical section
 * as the lock release). */
void sched_finalizing(cuzk_engine *e, worker *w, job *j, uint32_t idx, uint64_t now);
/* The ONE place a partition's GPU stage ends (from gpu or finalizing; worker -> idle if it
 * still owns (job, idx): the end of its latest partition). A worker's partitions reach
 * this in the order it picked them up (its finalizer is FIFO). */
void sched_takeback(cuzk_engine *e, worker *w, job *j, uint32_t idx, uint64_t now,
                    gpu_outcome outcome, const char *reason, const partition_proof *proof);

/* Cancels (cancelled = 1) or fails the job: pending and synth_done partitions fail now,
 * running ones at their next stage boundary. */
void sched_abort_job(cuzk_engine *e, job *j, uint64_t now, int cancelled,
                     uint32_t failed_idx, const char *reason);

void sched_gpu_lock_acquired(cuzk_engine *e, worker *w, uint64_t now);
void sched_gpu_lock_released(cuzk_engine *e, worker *w, uint64_t now);

/* Evicts finished jobs past their retention (and not awaited); returns the next eviction
 * deadline, or UINT64_MAX when none is pending. */
/* Finished jobs kept for the snapshot at most (the oldest go first beyond it). */
#define SCHED_MAX_RETAINED 4096u

uint64_t sched_evict_due(cuzk_engine *e, uint64_t now);

void job_free(job *j);

#endif
