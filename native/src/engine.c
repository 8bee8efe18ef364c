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
  pthread_mutex_lock(&e->mu);
  int closing = e->closing;
  if (!closing) e->calls++;
  pthread_mutex_unlock(&e->mu);
  if (closing) {
    err_set(err, errlen, "%s: engine is closing", fn);
    return CUZK_ECLOSED;
  }
  return CUZK_OK;
}

void api_leave(cuzk_engine *e) {
  pthread_mutex_lock(&e->mu);
  if (--e->calls == 0 && e->closing) pthread_cond_broadcast(&e->cv_calls);
  pthread_mutex_unlock(&e->mu);
}

void *housekeeping_main(void *arg) {
  cuzk_engine *e = arg;
  pthread_mutex_lock(&e->mu);
  while (!e->stopping) {
    uint64_t next = sched_evict_due(e, mono_ns());
    if (next == UINT64_MAX) {
      pthread_cond_wait(&e->cv_house, &e->mu);
    } else {
      struct timespec dl;
      ts_from_ns(&dl, next);
      pthread_cond_timedwait(&e->cv_house, &e->mu, &dl);
    }
  }
  pthread_mutex_unlock(&e->mu);
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
    pthread_mutex_lock(&e->mu);
    e->stopping = 1;
    pthread_cond_broadcast(&e->cv_synth);
    pthread_cond_broadcast(&e->cv_gpu);
    pthread_cond_broadcast(&e->cv_house);
    pthread_cond_broadcast(&e->cv_sleep);
    pthread_cond_broadcast(&e->cv_done);
    pthread_mutex_unlock(&e->mu);
  }
  for (uint32_t i = 0; i < e->n_synth_started; i++) pthread_join(e->synth_threads[i], NULL);
  for (uint32_t i = 0; e->workers && i < e->n_workers; i++)
    if (e->workers[i].thread_started) pthread_join(e->workers[i].thread, NULL);
  if (e->house_started) pthread_join(e->house_thread, NULL);
  while (e->jobs_head) {
    job *j = e->jobs_head;
    e->jobs_head = j->next;
    job_free(j);
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
  int terr = 0;
  for (uint32_t i = 0; i < e->n_workers && !terr; i++) {
    worker *w = &e->workers[i];
    w->e = e;
    w->id = i;
    w->gpu = i / c->workers_per_gpu;
    w->index = i % c->workers_per_gpu;
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
  pthread_mutex_lock(&e->mu);
  if (e->closing) {
    pthread_mutex_unlock(&e->mu);
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
  pthread_mutex_unlock(&e->mu);
  pthread_mutex_lock(&e->mu);
  while (e->calls > 0) pthread_cond_wait(&e->cv_calls, &e->mu);
  pthread_mutex_unlock(&e->mu);
  engine_teardown(e);
  *engine = NULL;
  return CUZK_OK;
}
