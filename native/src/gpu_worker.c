/* gpu_worker.c — GPU worker threads and their finalizers. Per partition:
 *   hand-off (state lock) -> CPU preparation (no lock) -> kernels under the per-GPU kernel
 *   lock -> lock release, partition -> finalizing (one critical section) -> finalize tail
 *   (no lock) -> end of the GPU stage (state lock).
 * With split proving (the default, as cuzk does it) the tail runs on the worker's own
 * finalizer thread, fed through a bounded FIFO, while the worker picks its next partition
 * at once; the FIFO makes a worker's partitions end in the order it picked them up, which
 * is what keeps "busy until the end of the latest partition" true. With split proving off
 * the worker runs the tail itself before its next pickup. Failures and abandons before the
 * tail go through the same FIFO (no tail), so the order holds for them too.
 * With two workers per GPU one worker's preparation overlaps the other's kernels (cuzk's
 * dual-worker interlock). */
#include <stdio.h>
#include <stdlib.h>

#include "backend_sim.h"
#include "quotient.h"
#include "scheduler.h"
#include "util.h"
#include "workers.h"

typedef struct stage_input { /* copied under the state lock at hand-off */
  gl_t *witness;
  unsigned log2n;
  uint32_t kind, idx;
  uint64_t seed, job_seed, sim_gpu_ns, sim_fin_ns;
  int inject_fail;
} stage_input;

/* FIFO: workers get the GPU in the order they asked for it. */
static void kernel_lock(cuzk_engine *e, worker *w) {
  gpu_state *g = &e->gpus[w->gpu];
  pthread_mutex_lock(&g->kernel_mu);
  uint64_t ticket = g->next_ticket++;
  while (g->serving != ticket) pthread_cond_wait(&g->kernel_cv, &g->kernel_mu);
  pthread_mutex_unlock(&g->kernel_mu);
  state_lock(e);
  sched_gpu_lock_acquired(e, w, mono_ns());
  state_unlock(e);
}

/* Releases the kernel lock; finalizing: the partition's kernels completed, so it enters
 * FINALIZING in the same critical section (one event group) as the release. */
static void kernel_unlock(cuzk_engine *e, worker *w, job *j, uint32_t idx, int finalizing) {
  gpu_state *g = &e->gpus[w->gpu];
  state_lock(e);
  uint64_t now = mono_ns();
  sched_gpu_lock_released(e, w, now);
  if (finalizing) sched_finalizing(e, w, j, idx, now);
  state_unlock(e);
  pthread_mutex_lock(&g->kernel_mu);
  g->serving++;
  pthread_cond_broadcast(&g->kernel_cv);
  pthread_mutex_unlock(&g->kernel_mu);
}

static void injected(cuzk_engine *e, int inject_fail, fin_item *it) {
  it->outcome = GPU_FAILED;
  if (inject_fail == 1)
    snprintf(it->reason, sizeof it->reason,
             "injected fault (faults.fail_partition_nth = %llu)",
             (unsigned long long)e->cfg.faults.fail_partition_nth);
  else
    snprintf(it->reason, sizeof it->reason, "injected fault (faults.fail_partition_rate = %g)",
             e->cfg.faults.fail_partition_rate);
}

/* Preparation and kernels; fills the finalize item. An injected failure fails the
 * partition when its kernels end (no tail), as a GPU error would. */
static void run_kernels(cuzk_engine *e, worker *w, job *j, const stage_input *in, fin_item *it) {
  it->j = j;
  it->idx = in->idx;
  it->outcome = GPU_OK;
  it->reason[0] = '\0';
  it->h = NULL;
  it->witness = in->witness;
  it->log2n = in->log2n;
  it->kind = in->kind;
  it->seed = in->seed;
  it->job_seed = in->job_seed;
  it->sim_fin_ns = in->sim_fin_ns;
  if (e->cfg.backend == BACKEND_SIM) {
    kernel_lock(e, w);
    int cut = sim_sleep(e, j, in->sim_gpu_ns);
    kernel_unlock(e, w, j, in->idx, !cut && !in->inject_fail);
    if (cut) it->outcome = GPU_ABANDONED;
    else if (in->inject_fail) injected(e, in->inject_fail, it);
    return;
  }
  quotient_work q;
  if (quotient_prepare(&q, in->log2n) != 0) { /* CPU preparation: twiddles, scratch */
    it->outcome = GPU_FAILED;
    snprintf(it->reason, sizeof it->reason, "out of memory preparing the GPU stage");
    return;
  }
  if (atomic_load(&j->abort)) {
    quotient_release(&q);
    it->outcome = GPU_ABANDONED;
    return;
  }
  size_t n = (size_t)1 << in->log2n;
  kernel_lock(e, w);
  int cut = quotient_kernels(&q, in->witness, in->witness + n, in->witness + 2 * n, &j->abort);
  kernel_unlock(e, w, j, in->idx, !cut && !in->inject_fail);
  if (cut) it->outcome = GPU_ABANDONED;
  else if (in->inject_fail) injected(e, in->inject_fail, it);
  else {
    it->h = q.x; /* H's coefficients travel to the tail; the rest of the scratch goes now */
    q.x = NULL;
  }
  quotient_release(&q);
}

/* The finalize tail and the end of the partition's GPU stage. Called without the state
 * lock; returns with it held. */
static void finalize(cuzk_engine *e, worker *w, fin_item *it) {
  job *j = it->j;
  partition_proof proof = {0}; /* sim stages leave the proof record zeroed */
  int outcome = it->outcome;
  if (outcome == GPU_OK) {
    int r;
    if (e->cfg.backend == BACKEND_SIM) {
      r = sim_sleep(e, j, it->sim_fin_ns);
    } else {
      /* the witness (coefficients now) stays with the partition until its end, below */
      size_t n = (size_t)1 << it->log2n;
      const gl_t *a = it->witness;
      r = quotient_finish(it->h, a, a + n, a + 2 * n, it->log2n, it->kind, it->idx, it->seed,
                          it->job_seed, e->cfg.finalize_passes, &proof, &j->abort);
    }
    if (r > 0) {
      outcome = GPU_ABANDONED;
    } else if (r < 0) {
      outcome = GPU_FAILED;
      snprintf(it->reason, sizeof it->reason,
               "finalize self-check failed: A(x)B(x) - C(x) != H(x)(x^n - 1)");
    }
  }
  free(it->h);
  it->h = NULL;
  state_lock(e);
  sched_takeback(e, w, j, it->idx, mono_ns(), (gpu_outcome)outcome, it->reason,
                 outcome == GPU_OK ? &proof : NULL);
}

void *gpu_finalizer_main(void *arg) {
  worker *w = arg;
  cuzk_engine *e = w->e;
  state_lock(e);
  for (;;) {
    while (w->fq_len == 0 && !w->exited) state_wait(e, &w->fin_cv);
    if (w->fq_len == 0) break; /* the worker is gone and everything it queued has ended */
    fin_item it = w->fq[w->fq_head];
    w->fq_head = (w->fq_head + 1) % e->cfg.finalize_queue;
    w->fq_len--;
    pthread_cond_signal(&w->space_cv);
    state_unlock(e);
    finalize(e, w, &it);
  }
  state_unlock(e);
  return NULL;
}

void *gpu_worker_main(void *arg) {
  worker *w = arg;
  cuzk_engine *e = w->e;
  const int split = e->cfg.split_proving;
  state_lock(e);
  for (;;) {
    job *j = NULL;
    uint32_t idx = 0;
    while (!e->stopping && !(j = sched_pick_gpu(e, &idx))) state_wait(e, &e->cv_gpu);
    if (!j) break;
    sched_handoff(e, w, j, idx, mono_ns());
    const partition *p = &j->parts[idx];
    stage_input in = {p->witness,     j->log2n,      j->kind,       idx,           p->seed,
                      j->seed,        p->sim_gpu_ns, p->sim_fin_ns, p->inject_fail};
    state_unlock(e);

    fin_item it;
    run_kernels(e, w, j, &in, &it);

    if (!split) {
      finalize(e, w, &it); /* the tail on this thread, before the next pickup */
      continue;
    }
    state_lock(e);
    /* bounded: at most finalize_queue partitions wait for this worker's finalizer */
    while (w->fq_len == e->cfg.finalize_queue) state_wait(e, &w->space_cv);
    w->fq[(w->fq_head + w->fq_len) % e->cfg.finalize_queue] = it;
    w->fq_len++;
    pthread_cond_signal(&w->fin_cv);
  }
  w->exited = 1;
  pthread_cond_signal(&w->fin_cv);
  state_unlock(e);
  return NULL;
}
