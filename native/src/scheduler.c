/* scheduler.c — see scheduler.h. All functions run under e->mu. */
#include "scheduler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_sim.h"
#include "circuit.h"
#include "util.h"

static inline uint8_t k8(const job *j) { return (uint8_t)j->kind; }

/* GPU starvation: the kernel lock is free, no synthesized partition waits for a worker,
 * and there is outstanding work (an idle engine is not "synthesis-bound"). */
static void starvation_update(cuzk_engine *e, uint64_t now) {
  int want = e->ready_total == 0 && e->n_unfinished > 0;
  for (uint32_t g = 0; g < e->cfg.gpus; g++) {
    gpu_state *gs = &e->gpus[g];
    int starved = want && !gs->held;
    if (starved && !gs->starved) {
      gs->starved = 1;
      gs->starved_since = now;
    } else if (!starved && gs->starved) {
      gs->starved = 0;
      gs->starved_ns += now - gs->starved_since;
    }
  }
}

static void memory_reserve(cuzk_engine *e, partition *p, uint64_t bytes, uint64_t now) {
  p->mem_bytes = bytes;
  e->mem_used += bytes;
  emit(e, CUZK_EV_MEMORY, now, 0, e->mem_used, 0, NO_KIND, NO_GPU, NO_WORKER, 0, 0);
}

static void memory_release(cuzk_engine *e, partition *p, uint64_t now) {
  free(p->witness);
  p->witness = NULL;
  if (!p->mem_bytes) return;
  e->mem_used -= p->mem_bytes;
  p->mem_bytes = 0;
  emit(e, CUZK_EV_MEMORY, now, 0, e->mem_used, 0, NO_KIND, NO_GPU, NO_WORKER, 0, 0);
  pthread_cond_broadcast(&e->cv_synth); /* a synthesis may have waited for budget */
}

static void queue_depth_changed(cuzk_engine *e, uint32_t kind, uint64_t now) {
  emit(e, CUZK_EV_QUEUE_DEPTH, now, 0, e->queued_by_kind[kind], 0, (uint8_t)kind, NO_GPU,
       NO_WORKER, 0, 0);
}

static void dequeue(cuzk_engine *e, job *j, uint64_t now) {
  if (!j->queued) return;
  j->queued = 0;
  e->queued_by_kind[j->kind]--;
  e->queued_total--;
  queue_depth_changed(e, j->kind, now);
}

job *sched_find(cuzk_engine *e, uint64_t handle) {
  for (job *j = e->jobs_head; j; j = j->next)
    if (j->handle == handle) return j;
  return NULL;
}

void sched_enqueue(cuzk_engine *e, job *j, uint64_t now) {
  if (e->jobs_tail) e->jobs_tail->next = j;
  else e->jobs_head = j;
  e->jobs_tail = j;
  e->n_jobs++;
  e->n_unfinished++;
  e->unfinished_by_kind[j->kind]++;
  j->queued = 1;
  e->queued_by_kind[j->kind]++;
  e->queued_total++;
  emit(e, CUZK_EV_JOB_QUEUED, now, j->handle, (uint64_t)(int64_t)j->priority, j->n_parts,
       k8(j), NO_GPU, NO_WORKER, 0, e->queued_by_kind[j->kind]);
  queue_depth_changed(e, j->kind, now);
  starvation_update(e, now);
  pthread_cond_broadcast(&e->cv_synth);
}

static job *pick(cuzk_engine *e, int ready, uint32_t *idx) {
  job *best = NULL;
  for (job *j = e->jobs_head; j; j = j->next) {
    if (j->finished || (ready ? j->n_ready == 0 : j->n_pending == 0)) continue;
    if (!best || j->priority > best->priority) best = j; /* list is in submit order */
  }
  if (!best) return NULL;
  uint8_t want = ready ? CUZK_PART_SYNTH_DONE : CUZK_PART_PENDING;
  for (uint32_t i = 0; i < best->n_parts; i++) {
    if (best->parts[i].state == want) {
      *idx = i;
      return best;
    }
  }
  return NULL; /* counts out of sync: cannot happen */
}

job *sched_pick_synth(cuzk_engine *e, uint32_t *idx) { return pick(e, 0, idx); }
job *sched_pick_gpu(cuzk_engine *e, uint32_t *idx) { return pick(e, 1, idx); }

static void job_maybe_finish(cuzk_engine *e, job *j, uint64_t now);

/* Partition -> FAILED. abandoned: because of its job, not its own error. */
static void partition_fail(cuzk_engine *e, job *j, uint32_t idx, uint64_t now, int abandoned,
                           uint64_t value) {
  partition *p = &j->parts[idx];
  int on_gpu = p->state == CUZK_PART_GPU || p->state == CUZK_PART_FINALIZING;
  p->state = CUZK_PART_FAILED;
  p->abandoned = abandoned != 0;
  j->n_failed++;
  if (!abandoned) e->kc[j->kind].parts_failed++;
  emit(e, CUZK_EV_PARTITION, now, j->handle, value, idx, k8(j), on_gpu ? p->gpu : NO_GPU,
       on_gpu ? p->worker : NO_WORKER, abandoned ? EVF_ABANDONED : 0, CUZK_PART_FAILED);
}

void sched_start_synthesis(cuzk_engine *e, job *j, uint32_t idx, uint64_t now) {
  partition *p = &j->parts[idx];
  if (!j->started) {
    j->started = 1;
    j->start_ns = now;
    dequeue(e, j, now);
    emit(e, CUZK_EV_JOB_STARTED, now, j->handle, now - j->submit_ns, 0, k8(j), NO_GPU,
         NO_WORKER, 0, 0);
  }
  p->state = CUZK_PART_SYNTHESIZING;
  p->synth_started = 1;
  p->synth_start = now;
  e->synth_count++;
  p->inject_synth_fail = e->cfg.faults.fail_synthesis_nth && e->synth_count == e->cfg.faults.fail_synthesis_nth;
  j->n_pending--;
  e->alloc[j->kind].used = 1;
  e->alloc[j->kind].log2n = j->log2n;
  memory_reserve(e, p, circuit_witness_bytes(j->log2n), now);
  e->synth_active++;
  emit(e, CUZK_EV_SYNTH_ACTIVE, now, 0, e->synth_active, 0, NO_KIND, NO_GPU, NO_WORKER, 0, 0);
  emit(e, CUZK_EV_PARTITION, now, j->handle, 0, idx, k8(j), NO_GPU, NO_WORKER, 0,
       CUZK_PART_SYNTHESIZING);
}

void sched_finish_synthesis(cuzk_engine *e, job *j, uint32_t idx, uint64_t now,
                            synth_outcome outcome, gl_t *witness) {
  partition *p = &j->parts[idx];
  e->synth_active--;
  emit(e, CUZK_EV_SYNTH_ACTIVE, now, 0, e->synth_active, 0, NO_KIND, NO_GPU, NO_WORKER, 0, 0);
  p->synth_ns = now - p->synth_start;
  p->witness = witness;
  int aborted = atomic_load(&j->abort) != 0;
  if (outcome == SYNTH_OK && !aborted) {
    p->state = CUZK_PART_SYNTH_DONE;
    p->synth_completed = 1;
    j->n_ready++;
    e->ready_total++;
    j->synth_ns += p->synth_ns;
    e->kc[j->kind].synth_ns += p->synth_ns;
    emit(e, CUZK_EV_PARTITION, now, j->handle, p->synth_ns, idx, k8(j), NO_GPU, NO_WORKER, 0,
         CUZK_PART_SYNTH_DONE);
    starvation_update(e, now);
    pthread_cond_signal(&e->cv_gpu);
    return;
  }
  memory_release(e, p, now);
  if (outcome == SYNTH_OOM && !aborted) {
    partition_fail(e, j, idx, now, 0, 0);
    sched_abort_job(e, j, now, 0, idx, "out of memory allocating the witness");
  } else if (outcome == SYNTH_INJECTED && !aborted) {
    char reason[96];
    snprintf(reason, sizeof reason, "injected fault (faults.fail_synthesis_nth = %llu)",
             (unsigned long long)e->cfg.faults.fail_synthesis_nth);
    partition_fail(e, j, idx, now, 0, 0);
    sched_abort_job(e, j, now, 0, idx, reason);
  } else {
    partition_fail(e, j, idx, now, 1, 0);
  }
  job_maybe_finish(e, j, now);
}

/* The historical status bug, if injected for this kind: STATUS_BUG_CLOBBER or SKIP, or -1. */
static int status_bug(const cuzk_engine *e, const job *j) {
  return (int)j->kind == e->cfg.faults.status_bug_kind ? e->cfg.faults.status_bug_mode : -1;
}

static void worker_clear(cuzk_engine *e, worker *w, job *j, uint32_t idx, uint64_t now) {
  uint64_t stint = now - w->busy_since;
  w->busy = 0;
  w->job = NULL;
  w->busy_ns += stint;
  emit(e, CUZK_EV_WORKER, now, j->handle, stint, idx, k8(j), (uint8_t)w->gpu, (uint16_t)w->id, 0,
       0);
}

void sched_handoff(cuzk_engine *e, worker *w, job *j, uint32_t idx, uint64_t now) {
  partition *p = &j->parts[idx];
  p->state = CUZK_PART_GPU;
  p->gpu_started = 1;
  p->gpu_start = now;
  p->gpu = (uint8_t)w->gpu;
  p->worker = (uint16_t)w->id;
  j->n_ready--;
  e->ready_total--;
  e->gpu_active++;
  e->gpu_stage_count++;
  const engine_config *c = &e->cfg;
  /* one draw per hand-off whatever else is configured, so a seed reproduces the sequence */
  int rate_hit = c->faults.fail_partition_rate > 0 &&
                 prng_unit(&e->fault_rng) < c->faults.fail_partition_rate;
  if (c->faults.fail_partition_nth && e->gpu_stage_count == c->faults.fail_partition_nth)
    p->inject_fail = 1;
  else if (rate_hit)
    p->inject_fail = 2;
  if (c->backend == BACKEND_SIM) {
    p->sim_gpu_ns = sim_draw_ns(e, j->kind, SIM_STAGE_GPU);
    p->sim_fin_ns = sim_draw_ns(e, j->kind, SIM_STAGE_FINALIZE);
  }
  e->alloc[j->kind].last_used_ns = now;
  emit(e, CUZK_EV_PARTITION, now, j->handle, 0, idx, k8(j), p->gpu, p->worker, 0,
       CUZK_PART_GPU);
  if (status_bug(e, j) != STATUS_BUG_SKIP) {
    /* busy from a pickup until the end of the LATEST partition picked up: a busy worker's
     * stint continues and ownership moves to this partition */
    if (!w->busy) {
      w->busy = 1;
      w->busy_since = now;
    }
    w->job = j;
    w->partition = idx;
    emit(e, CUZK_EV_WORKER, now, j->handle, 0, idx, k8(j), (uint8_t)w->gpu, (uint16_t)w->id, 0,
         1);
  }
  starvation_update(e, now);
}

void sched_finalizing(cuzk_engine *e, worker *w, job *j, uint32_t idx, uint64_t now) {
  partition *p = &j->parts[idx];
  p->state = CUZK_PART_FINALIZING;
  p->fin_started = 1;
  p->fin_start = now;
  emit(e, CUZK_EV_PARTITION, now, j->handle, now - p->gpu_start, idx, k8(j), (uint8_t)w->gpu,
       (uint16_t)w->id, 0, CUZK_PART_FINALIZING);
}

void sched_takeback(cuzk_engine *e, worker *w, job *j, uint32_t idx, uint64_t now,
                    gpu_outcome outcome, const char *reason, const partition_proof *proof) {
  partition *p = &j->parts[idx];
  uint64_t d = now - p->gpu_start; /* one duration for partition, kind, result, event */
  p->gpu_ns = d;
  j->gpu_ns += d;
  e->kc[j->kind].gpu_ns += d;
  if (p->state == CUZK_PART_FINALIZING) e->kc[j->kind].finalize_ns += now - p->fin_start;
  e->gpu_active--;
  e->alloc[j->kind].last_used_ns = now;
  w->partitions++;
  int bug = status_bug(e, j);
  if (bug == STATUS_BUG_CLOBBER) {
    /* fault: the finalizer race cuzk shipped — clear the worker whatever it owns now */
    if (w->busy) worker_clear(e, w, j, idx, now);
  } else if (bug != STATUS_BUG_SKIP && w->busy && w->job == j && w->partition == idx) {
    worker_clear(e, w, j, idx, now); /* only if this is still the partition it owns */
  }
  memory_release(e, p, now);
  if (outcome == GPU_OK) {
    if (proof) p->proof = *proof;
    p->state = CUZK_PART_DONE;
    j->n_done++;
    e->kc[j->kind].parts_completed++;
    emit(e, CUZK_EV_PARTITION, now, j->handle, d, idx, k8(j), p->gpu, p->worker, 0,
         CUZK_PART_DONE);
  } else if (outcome == GPU_FAILED && !atomic_load(&j->abort) && !e->cfg.faults.fail_aborts_job) {
    /* fault option: the job fails but its other partitions go on (cuzk's gpu_prove_start
     * failure does not mark the job failed); the first failure names the partition */
    partition_fail(e, j, idx, now, 0, d);
    if (!j->failing) {
      j->failing = 1;
      j->failed_partition = idx;
      snprintf(j->error, sizeof j->error, "partition %u failed: %s", idx,
               reason ? reason : "GPU stage failed");
    }
  } else if (outcome == GPU_FAILED && !atomic_load(&j->abort)) {
    partition_fail(e, j, idx, now, 0, d);
    sched_abort_job(e, j, now, 0, idx, reason ? reason : "GPU stage failed");
  } else {
    partition_fail(e, j, idx, now, outcome != GPU_FAILED, d);
  }
  starvation_update(e, now);
  job_maybe_finish(e, j, now);
}

void sched_abort_job(cuzk_engine *e, job *j, uint64_t now, int cancelled,
                     uint32_t failed_idx, const char *reason) {
  if (j->finished) return;
  if (!atomic_load(&j->abort)) {
    atomic_store(&j->abort, 1);
    if (cancelled) {
      j->cancel_requested = 1;
      snprintf(j->error, sizeof j->error, "%s", reason);
    } else {
      j->failing = 1;
      j->failed_partition = failed_idx;
      snprintf(j->error, sizeof j->error, "partition %u failed: %s", failed_idx, reason);
    }
  }
  dequeue(e, j, now);
  for (uint32_t i = 0; i < j->n_parts; i++) {
    partition *p = &j->parts[i];
    if (p->state == CUZK_PART_PENDING) {
      j->n_pending--;
      partition_fail(e, j, i, now, 1, 0);
    } else if (p->state == CUZK_PART_SYNTH_DONE) {
      j->n_ready--;
      e->ready_total--;
      memory_release(e, p, now);
      partition_fail(e, j, i, now, 1, 0);
    }
  }
  pthread_cond_broadcast(&e->cv_sleep); /* sim stages of this job wake up and bail out */
  pthread_cond_broadcast(&e->cv_synth); /* its pending partition may have been the top
                                          * candidate a synthesis thread waited budget for */
  starvation_update(e, now);
  job_maybe_finish(e, j, now);
}

static void assemble_proof(cuzk_engine *e, job *j) {
  int sim = e->cfg.backend == BACKEND_SIM;
  uint32_t len = proof_bytes(j->n_parts, sim);
  partition_proof *pp = NULL;
  j->proof = malloc(len);
  if (!sim) pp = malloc(j->n_parts * sizeof *pp);
  if (!j->proof || (!sim && !pp)) {
    free(j->proof);
    free(pp);
    j->proof = NULL;
    j->outcome = CUZK_OUTCOME_FAILED;
    snprintf(j->error, sizeof j->error, "out of memory assembling the proof");
    return;
  }
  for (uint32_t i = 0; !sim && i < j->n_parts; i++) pp[i] = j->parts[i].proof;
  proof_serialize(j->proof, j->kind, sim, j->handle, pp, j->n_parts);
  free(pp);
  j->proof_len = len;
  e->completed_proofs++;
  if (!sim && e->cfg.faults.corrupt_proof_nth &&
      e->completed_proofs == e->cfg.faults.corrupt_proof_nth) {
    /* fault: H(s) of partition 0 off by one, so A(s)B(s) - C(s) = H(s)(s^n - 1) fails */
    uint8_t *h = j->proof + proof_h_s_offset(0);
    put_u64(h, gl_add(get_u64(h), 1));
  }
}

static void job_maybe_finish(cuzk_engine *e, job *j, uint64_t now) {
  if (j->finished || j->n_done + j->n_failed < j->n_parts) return;
  j->finished = 1;
  j->finish_ns = now;
  if (j->failing) j->outcome = CUZK_OUTCOME_FAILED;
  else if (j->cancel_requested) j->outcome = CUZK_OUTCOME_CANCELLED;
  else {
    j->outcome = CUZK_OUTCOME_COMPLETED;
    assemble_proof(e, j);
  }
  kind_counters *kc = &e->kc[j->kind];
  if (j->outcome == CUZK_OUTCOME_COMPLETED) kc->proofs_completed++;
  else if (j->outcome == CUZK_OUTCOME_FAILED) kc->proofs_failed++;
  else kc->proofs_cancelled++;
  e->n_unfinished--;
  e->unfinished_by_kind[j->kind]--;
  j->evict_at_ns = now + e->cfg.finished_retention_ms * 1000000ull;
  emit(e, CUZK_EV_JOB_DONE, now, j->handle, now - j->submit_ns, 0, k8(j), NO_GPU, NO_WORKER, 0,
       j->outcome);
  starvation_update(e, now);
  pthread_cond_broadcast(&e->cv_done);
  pthread_cond_signal(&e->cv_house);
}

void sched_gpu_lock_acquired(cuzk_engine *e, worker *w, uint64_t now) {
  gpu_state *g = &e->gpus[w->gpu];
  int first = g->acquires == 0;
  g->held = 1;
  g->holder = (uint16_t)w->id;
  g->acquired_at = now;
  g->acquires++;
  emit(e, CUZK_EV_GPU_LOCK, now, 0, first ? 0 : now - g->last_release, 0, NO_KIND,
       (uint8_t)w->gpu, (uint16_t)w->id, first ? CUZK_EVF_FIRST : 0, 1);
  starvation_update(e, now);
}

void sched_gpu_lock_released(cuzk_engine *e, worker *w, uint64_t now) {
  gpu_state *g = &e->gpus[w->gpu];
  uint64_t held = now - g->acquired_at;
  g->held = 0;
  g->held_ns += held;
  g->last_release = now;
  emit(e, CUZK_EV_GPU_LOCK, now, 0, held, 0, NO_KIND, (uint8_t)w->gpu, (uint16_t)w->id, 0, 0);
  starvation_update(e, now);
}

void job_free(job *j) {
  if (!j) return;
  for (uint32_t i = 0; j->parts && i < j->n_parts; i++) free(j->parts[i].witness);
  free(j->parts);
  free(j->proof);
  free(j);
}

uint64_t sched_evict_due(cuzk_engine *e, uint64_t now) {
  uint64_t next = UINT64_MAX;
  /* Finished jobs beyond SCHED_MAX_RETAINED go first, oldest first, whatever their
   * retention: memory and the O(jobs) scans under e->mu stay bounded however fast jobs
   * are submitted and cancelled. */
  uint32_t finished = e->n_jobs - e->n_unfinished;
  uint32_t excess = finished > SCHED_MAX_RETAINED ? finished - SCHED_MAX_RETAINED : 0;
  job **link = &e->jobs_head, *prev = NULL;
  while (*link) {
    job *j = *link;
    if (j->finished && j->awaiters == 0 && (j->evict_at_ns <= now || excess > 0)) {
      if (excess > 0) excess--;
      *link = j->next;
      if (e->jobs_tail == j) e->jobs_tail = prev;
      e->n_jobs--;
      emit(e, CUZK_EV_JOB_EVICTED, now, j->handle, 0, 0, k8(j), NO_GPU, NO_WORKER, 0, 0);
      job_free(j);
      continue;
    }
    if (j->finished && j->awaiters == 0 && j->evict_at_ns < next) next = j->evict_at_ns;
    prev = j;
    link = &j->next;
  }
  return next;
}
