/* engine.c — engine lifecycle: open (config, state, threads), close (cancel, wake, join,
 * free), the API call guard, and the housekeeping thread that evicts finished jobs on time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "scheduler.h"
#include "util.h"
#include "workers.h"

int api_enter(cuzk_engine *e, const char *fn, char *err, size_t errlen) {
  err_clear(err, errlen);
  if (!e) {
    err_set(err, errlen, "%s: engine handle is NULL", fn);
    return CUZK_EINVAL;
  }
  if (e->magic != ENGINE_MAGIC) {
    err_set(err, errlen, "%s: not a live engine handle (closed, or not from cuzk_engine_open)",
            fn);
    return CUZK_EINVAL;
  }
  state_lock(e);
  int closing = e->closing;
  if (!closing) e->calls++;
  state_unlock(e);
  if (closing) {
    err_set(err, errlen, "%s: engine is closing", fn);
    return CUZK_ECLOSED;
  }
  return CUZK_OK;
}

void api_leave(cuzk_engine *e) {
  state_lock(e);
  if (--e->calls == 0 && e->closing) pthread_cond_broadcast(&e->cv_calls);
  state_unlock(e);
}

void *housekeeping_main(void *arg) {
  cuzk_engine *e = arg;
  state_lock(e);
  while (!e->stopping) {
    uint64_t next = sched_evict_due(e, mono_ns());
    if (next == UINT64_MAX) {
      state_wait(e, &e->cv_house);
    } else {
      struct timespec dl;
      ts_from_ns(&dl, next);
      state_timedwait(e, &e->cv_house, &dl);
    }
  }
  state_unlock(e);
  return NULL;
}

static void init_cond(pthread_cond_t *cv) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(cv, &ca);
  pthread_condattr_destroy(&ca);
}

/* Stops and joins every started thread, then frees all state. Safe on a partly opened
 * engine. Jobs must already be aborted (close) or absent (failed open). */
static void engine_teardown(cuzk_engine *e) {
  if (e->sync_init) {
    state_lock(e);
    e->stopping = 1;
    pthread_cond_broadcast(&e->cv_synth);
    pthread_cond_broadcast(&e->cv_gpu);
    pthread_cond_broadcast(&e->cv_house);
    pthread_cond_broadcast(&e->cv_sleep);
    pthread_cond_broadcast(&e->cv_done);
    state_unlock(e);
  }
  for (uint32_t i = 0; i < e->n_synth_started; i++) pthread_join(e->synth_threads[i], NULL);
  /* workers first (one may wait for a queue slot its finalizer frees), then finalizers,
   * which end every partition still queued (its job is aborted: tails are cut short) */
  for (uint32_t i = 0; e->workers && i < e->n_workers; i++)
    if (e->workers[i].thread_started) pthread_join(e->workers[i].thread, NULL);
  if (e->sync_init && e->workers) {
    state_lock(e);
    for (uint32_t i = 0; i < e->n_workers; i++) {
      e->workers[i].exited = 1; /* also those whose thread never started */
      if (e->workers[i].fin_cv_init) pthread_cond_signal(&e->workers[i].fin_cv);
    }
    state_unlock(e);
  }
  for (uint32_t i = 0; e->workers && i < e->n_workers; i++)
    if (e->workers[i].fin_started) pthread_join(e->workers[i].fin_thread, NULL);
  if (e->house_started) pthread_join(e->house_thread, NULL);
  while (e->jobs_head) {
    job *j = e->jobs_head;
    e->jobs_head = j->next;
    job_free(j);
  }
  for (uint32_t i = 0; e->workers && i < e->n_workers; i++) {
    worker *w = &e->workers[i];
    if (w->fin_cv_init) {
      pthread_cond_destroy(&w->fin_cv);
      pthread_cond_destroy(&w->space_cv);
    }
    for (uint32_t k = 0; k < w->fq_len; k++) /* never left by a finalizer; defensive */
      free(w->fq[(w->fq_head + k) % e->cfg.finalize_queue].h);
    free(w->fq);
  }
  for (uint32_t g = 0; e->gpus && g < e->cfg.gpus; g++) {
    if (!e->gpus[g].kernel_lock_init) continue;
    pthread_mutex_destroy(&e->gpus[g].kernel_mu);
    pthread_cond_destroy(&e->gpus[g].kernel_cv);
  }
  if (e->sync_init) {
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv_synth);
    pthread_cond_destroy(&e->cv_gpu);
    pthread_cond_destroy(&e->cv_done);
    pthread_cond_destroy(&e->cv_house);
    pthread_cond_destroy(&e->cv_sleep);
    pthread_cond_destroy(&e->cv_calls);
  }
  event_ring_destroy(&e->ring);
  jw_free(&e->status_buf);
  free(e->gpus);
  free(e->workers);
  free(e->synth_threads);
  e->magic = 0;
  free(e);
}

CUZK_EXPORT int cuzk_engine_open(const char *config_json, cuzk_engine **out, char *err,
                                 size_t errlen) {
  err_clear(err, errlen);
  if (!out) {
    err_set(err, errlen, "cuzk_engine_open: out must not be NULL");
    return CUZK_EINVAL;
  }
  *out = NULL;
  cuzk_engine *e = calloc(1, sizeof *e);
  if (!e) {
    err_set(err, errlen, "cuzk_engine_open: out of memory");
    return CUZK_ENOMEM;
  }
  int r = config_parse(config_json, &e->cfg, err, errlen);
  if (r != CUZK_OK) {
    free(e);
    return r;
  }
  const engine_config *c = &e->cfg;
  e->open_ns = mono_ns();
  e->next_handle = 1;
  e->sim_rng.s = c->seed;
  e->fault_rng.s = c->faults.seed ^ 0x6661756c74ull; /* "fault": independent stream */
  e->n_workers = c->gpus * c->workers_per_gpu;
  if (event_ring_init(&e->ring, c->event_ring_capacity, c->events) != 0) {
    err_set(err, errlen, "cuzk_engine_open: out of memory for a %u-event ring",
            c->event_ring_capacity);
    free(e);
    return CUZK_ENOMEM;
  }
  pthread_mutex_init(&e->mu, NULL);
  init_cond(&e->cv_synth);
  init_cond(&e->cv_gpu);
  init_cond(&e->cv_done);
  init_cond(&e->cv_house);
  init_cond(&e->cv_sleep);
  init_cond(&e->cv_calls);
  e->sync_init = 1;
  e->magic = ENGINE_MAGIC;
  e->gpus = calloc(c->gpus, sizeof *e->gpus);
  e->workers = calloc(e->n_workers, sizeof *e->workers);
  e->synth_threads = calloc(c->synthesis_concurrency, sizeof *e->synth_threads);
  if (!e->gpus || !e->workers || !e->synth_threads) {
    engine_teardown(e);
    err_set(err, errlen, "cuzk_engine_open: out of memory");
    return CUZK_ENOMEM;
  }
  for (uint32_t g = 0; g < c->gpus; g++) {
    gpu_state *gs = &e->gpus[g];
    pthread_mutex_init(&gs->kernel_mu, NULL);
    pthread_cond_init(&gs->kernel_cv, NULL);
    gs->kernel_lock_init = 1;
    if (c->gpu_names[g][0])
      snprintf(gs->name, sizeof gs->name, "%s", c->gpu_names[g]);
    else
      snprintf(gs->name, sizeof gs->name, "%s-%u",
               c->backend == BACKEND_SIM ? "sim-gpu" : "cpu-backend", g);
    snprintf(gs->uuid, sizeof gs->uuid, "GPU-00000000-0000-0000-0000-%012x", g);
  }
  /* start idle GPUs' starvation clocks: nothing outstanding yet, so none is starved */
  for (uint32_t i = 0; i < e->n_workers; i++) {
    worker *w = &e->workers[i];
    w->e = e;
    w->id = i;
    w->gpu = i / c->workers_per_gpu;
    w->index = i % c->workers_per_gpu;
    if (c->split_proving) {
      w->fq = calloc(c->finalize_queue, sizeof *w->fq);
      if (!w->fq) {
        engine_teardown(e);
        err_set(err, errlen, "cuzk_engine_open: out of memory");
        return CUZK_ENOMEM;
      }
      init_cond(&w->fin_cv);
      init_cond(&w->space_cv);
      w->fin_cv_init = 1;
    }
  }
  int terr = 0;
  for (uint32_t i = 0; i < e->n_workers && !terr && c->split_proving; i++) {
    worker *w = &e->workers[i];
    terr = pthread_create(&w->fin_thread, NULL, gpu_finalizer_main, w);
    w->fin_started = terr == 0;
  }
  for (uint32_t i = 0; i < e->n_workers && !terr; i++) {
    worker *w = &e->workers[i];
    terr = pthread_create(&w->thread, NULL, gpu_worker_main, w);
    w->thread_started = terr == 0;
  }
  for (uint32_t i = 0; i < c->synthesis_concurrency && !terr; i++) {
    terr = pthread_create(&e->synth_threads[i], NULL, synth_thread_main, e);
    if (!terr) e->n_synth_started++;
  }
  if (!terr) {
    terr = pthread_create(&e->house_thread, NULL, housekeeping_main, e);
    e->house_started = terr == 0;
  }
  if (terr) {
    engine_teardown(e);
    err_set(err, errlen, "cuzk_engine_open: cannot start threads: %s", strerror(terr));
    return CUZK_EINTERNAL;
  }
  *out = e;
  return CUZK_OK;
}

CUZK_EXPORT int cuzk_engine_close(cuzk_engine **engine, char *err, size_t errlen) {
  err_clear(err, errlen);
  if (!engine) {
    err_set(err, errlen, "cuzk_engine_close: engine pointer is NULL");
    return CUZK_EINVAL;
  }
  cuzk_engine *e = *engine;
  if (!e) {
    err_set(err, errlen, "cuzk_engine_close: engine is NULL (already closed?)");
    return CUZK_EINVAL;
  }
  if (e->magic != ENGINE_MAGIC) {
    err_set(err, errlen, "cuzk_engine_close: not a live engine handle");
    return CUZK_EINVAL;
  }
  state_lock(e);
  if (e->closing) {
    state_unlock(e);
    err_set(err, errlen, "cuzk_engine_close: close already in progress");
    return CUZK_EINVAL;
  }
  e->closing = 1; /* no new API calls from here on */
  /* Wake event waiters with CUZK_ECLOSED before the cancellations below emit events, so
   * none of them returns CUZK_OK and comes back for a drain (the ring lock nests inside
   * e->mu elsewhere, so taking it here keeps the order). */
  event_ring_close(&e->ring);
  uint64_t now = mono_ns();
  for (job *j = e->jobs_head; j; j = j->next)
    if (!j->finished) sched_abort_job(e, j, now, 1, 0, "cancelled: engine closed");
  pthread_cond_broadcast(&e->cv_done); /* blocked awaits return CUZK_ECLOSED */
  state_unlock(e);
  state_lock(e);
  while (e->calls > 0) state_wait(e, &e->cv_calls);
  state_unlock(e);
  engine_teardown(e);
  *engine = NULL;
  return CUZK_OK;
}
