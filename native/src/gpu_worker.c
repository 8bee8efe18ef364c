/* gpu_worker.c — GPU worker threads. Per partition: hand-off (state lock) -> CPU
 * preparation (no lock) -> kernels under the per-GPU kernel lock -> finalize (no lock) ->
 * take-back (state lock). With two workers per GPU one worker's preparation/finalize
 * overlaps the other's kernels (cuzk's dual-worker interlock). */
#include <stdio.h>

#include "backend_sim.h"
#include "quotient.h"
#include "scheduler.h"
#include "util.h"
#include "workers.h"

typedef struct stage_input { /* copied under the state lock at hand-off */
  gl_t *witness;
  unsigned log2n;
  uint32_t kind, idx;
  uint64_t seed, sim_gpu_ns;
  int inject_fail;
} stage_input;

typedef struct stage_result {
  gpu_outcome outcome;
  char reason[160];
  partition_proof proof;
} stage_result;

/* FIFO: workers get the GPU in the order they asked for it. */
static void kernel_lock(cuzk_engine *e, worker *w) {
  gpu_state *g = &e->gpus[w->gpu];
  pthread_mutex_lock(&g->kernel_mu);
  uint64_t ticket = g->next_ticket++;
  while (g->serving != ticket) pthread_cond_wait(&g->kernel_cv, &g->kernel_mu);
  pthread_mutex_unlock(&g->kernel_mu);
  pthread_mutex_lock(&e->mu);
  sched_gpu_lock_acquired(e, w, mono_ns());
  pthread_mutex_unlock(&e->mu);
}

static void kernel_unlock(cuzk_engine *e, worker *w) {
  gpu_state *g = &e->gpus[w->gpu];
  pthread_mutex_lock(&e->mu);
  sched_gpu_lock_released(e, w, mono_ns());
  pthread_mutex_unlock(&e->mu);
  pthread_mutex_lock(&g->kernel_mu);
  g->serving++;
  pthread_cond_broadcast(&g->kernel_cv);
  pthread_mutex_unlock(&g->kernel_mu);
}

static void injected(cuzk_engine *e, const stage_input *in, stage_result *r) {
  r->outcome = GPU_FAILED;
  if (in->inject_fail == 1)
    snprintf(r->reason, sizeof r->reason, "injected fault (faults.fail_partition_nth = %llu)",
             (unsigned long long)e->cfg.faults.fail_partition_nth);
  else
    snprintf(r->reason, sizeof r->reason, "injected fault (faults.fail_partition_rate = %g)",
             e->cfg.faults.fail_partition_rate);
}

static void run_stage(cuzk_engine *e, worker *w, job *j, const stage_input *in,
                      stage_result *r) {
  r->outcome = GPU_OK;
  r->reason[0] = '\0';
  if (e->cfg.backend == BACKEND_SIM) {
    kernel_lock(e, w);
    int cut = sim_sleep(e, j, in->sim_gpu_ns);
    kernel_unlock(e, w);
    if (cut) r->outcome = GPU_ABANDONED;
    else if (in->inject_fail) injected(e, in, r);
    return;
  }
  quotient_work q;
  if (quotient_prepare(&q, in->log2n) != 0) { /* CPU preparation: twiddles, scratch */
    r->outcome = GPU_FAILED;
    snprintf(r->reason, sizeof r->reason, "out of memory preparing the GPU stage");
    return;
  }
  if (atomic_load(&j->abort)) {
    quotient_release(&q);
    r->outcome = GPU_ABANDONED;
    return;
  }
  size_t n = (size_t)1 << in->log2n;
  kernel_lock(e, w);
  int cut = quotient_run(&q, in->witness, in->witness + n, in->witness + 2 * n, in->kind,
                         in->idx, in->seed, &r->proof, &j->abort);
  kernel_unlock(e, w);
  quotient_release(&q); /* finalize, outside the lock */
  if (cut) r->outcome = GPU_ABANDONED;
  else if (in->inject_fail) injected(e, in, r);
}

void *gpu_worker_main(void *arg) {
  worker *w = arg;
  cuzk_engine *e = w->e;
  pthread_mutex_lock(&e->mu);
  for (;;) {
    job *j = NULL;
    uint32_t idx = 0;
    while (!e->stopping && !(j = sched_pick_gpu(e, &idx))) pthread_cond_wait(&e->cv_gpu, &e->mu);
    if (!j) break;
    sched_handoff(e, w, j, idx, mono_ns());
    const partition *p = &j->parts[idx];
    stage_input in = {p->witness, j->log2n, j->kind, idx, p->seed, p->sim_gpu_ns,
                      p->inject_fail};
    pthread_mutex_unlock(&e->mu);

    stage_result r = {0}; /* sim stages leave the proof record zeroed */
    run_stage(e, w, j, &in, &r);

    pthread_mutex_lock(&e->mu);
    sched_takeback(e, w, j, idx, mono_ns(), r.outcome, r.reason,
                   r.outcome == GPU_OK ? &r.proof : NULL);
  }
  pthread_mutex_unlock(&e->mu);
  return NULL;
}
