/* jobs_api.c — proof requests: cuzk_submit, cuzk_await, cuzk_cancel, cuzk_proof_copy,
 * cuzk_job_id. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "circuit.h"
#include "engine.h"
#include "kinds.h"
#include "scheduler.h"
#include "util.h"

#define WAIT_FOREVER UINT32_MAX

CUZK_EXPORT int cuzk_submit(cuzk_engine *e, uint32_t kind, int32_t priority,
                            uint32_t partitions, uint32_t log2_size, const char *request_id,
                            uint64_t *job_out, char *err, size_t errlen) {
  int r = api_enter(e, "cuzk_submit", err, errlen);
  if (r != CUZK_OK) return r;
  r = CUZK_EINVAL;
  size_t id_len = request_id ? strnlen(request_id, MAX_REQUEST_ID + 1) : 0;
  if (!job_out) {
    err_set(err, errlen, "cuzk_submit: job_out must not be NULL");
  } else if (kind >= CUZK_KIND_COUNT) {
    err_set(err, errlen,
            "cuzk_submit: unknown proof kind %u (0 porep-c2, 1 snap-update, 2 window-post, "
            "3 winning-post)",
            kind);
  } else if (partitions > MAX_PARTITIONS) {
    err_set(err, errlen, "cuzk_submit: %u partitions is out of range 1..%u (0 = default)",
            partitions, MAX_PARTITIONS);
  } else if (log2_size != 0 && (log2_size < CIRCUIT_MIN_LOG2 || log2_size > CIRCUIT_MAX_LOG2)) {
    err_set(err, errlen, "cuzk_submit: log2_size %u is out of range %u..%u (0 = configured)",
            log2_size, CIRCUIT_MIN_LOG2, CIRCUIT_MAX_LOG2);
  } else if (id_len > MAX_REQUEST_ID) {
    err_set(err, errlen, "cuzk_submit: request_id longer than %u bytes", MAX_REQUEST_ID);
  } else if (!utf8_valid(request_id ? request_id : "", id_len)) {
    err_set(err, errlen, "cuzk_submit: request_id is not valid UTF-8");
  } else {
    r = CUZK_OK;
  }
  if (r != CUZK_OK) {
    api_leave(e);
    return r;
  }
  uint32_t log2n = log2_size ? log2_size : e->cfg.sizes[kind];
  uint64_t need = circuit_witness_bytes(log2n);
  if (need > e->cfg.memory_budget_bytes) {
    err_set(err, errlen,
            "cuzk_submit: one %s partition at 2^%u constraints needs %llu bytes, more than "
            "memory_budget_bytes (%llu)",
            KINDS[kind].name, log2n, (unsigned long long)need,
            (unsigned long long)e->cfg.memory_budget_bytes);
    api_leave(e);
    return CUZK_EINVAL;
  }
  uint32_t n_parts = partitions ? partitions : KINDS[kind].partitions;
  job *j = calloc(1, sizeof *j);
  partition *parts = calloc(n_parts, sizeof *parts);
  if (!j || !parts) {
    free(j);
    free(parts);
    err_set(err, errlen, "cuzk_submit: out of memory");
    api_leave(e);
    return CUZK_ENOMEM;
  }
  j->parts = parts;
  j->kind = kind;
  j->priority = priority < 0 ? KINDS[kind].priority : priority;
  j->n_parts = n_parts;
  j->n_pending = n_parts;
  j->log2n = log2n;
  j->failed_partition = UINT32_MAX;
  atomic_init(&j->abort, 0);
  for (uint32_t i = 0; i < n_parts; i++) {
    parts[i].state = CUZK_PART_PENDING;
    parts[i].gpu = NO_GPU;
    parts[i].worker = NO_WORKER;
  }

  state_lock(e);
  if (e->closing) { /* close began after our api_enter: it has already cancelled everything */
    state_unlock(e);
    job_free(j);
    err_set(err, errlen, "cuzk_submit: engine is closing");
    api_leave(e);
    return CUZK_ECLOSED;
  }
  if (e->queued_total >= e->cfg.queue_limit) {
    state_unlock(e);
    job_free(j);
    err_set(err, errlen, "cuzk_submit: queue full (%u jobs waiting to start, queue_limit %u)",
            e->cfg.queue_limit, e->cfg.queue_limit);
    api_leave(e);
    return CUZK_EFULL;
  }
  j->handle = e->next_handle++;
  if (id_len) {
    memcpy(j->id, request_id, id_len);
    j->id_len = (uint32_t)id_len;
  } else {
    j->id_len = (uint32_t)snprintf(j->id, sizeof j->id, "job-%llu",
                                   (unsigned long long)j->handle);
  }
  j->seed = circuit_job_seed(j->id, j->id_len, j->handle);
  for (uint32_t i = 0; i < n_parts; i++) parts[i].seed = circuit_partition_seed(j->seed, kind, i);
  uint64_t now = mono_ns();
  j->submit_ns = now;
  sched_enqueue(e, j, now);
  *job_out = j->handle;
  state_unlock(e);
  api_leave(e);
  return CUZK_OK;
}

static void fill_result(const job *j, cuzk_proof_result *res) {
  memset(res, 0, sizeof *res);
  res->job = j->handle;
  res->queue_wait_ns = (j->started ? j->start_ns : j->finish_ns) - j->submit_ns;
  res->synth_ns = j->synth_ns;
  res->gpu_ns = j->gpu_ns;
  res->total_ns = j->finish_ns - j->submit_ns;
  res->kind = j->kind;
  res->outcome = j->outcome;
  res->partitions = j->n_parts;
  res->failed_partition = j->failing ? j->failed_partition : UINT32_MAX;
  res->proof_len = j->outcome == CUZK_OUTCOME_COMPLETED ? j->proof_len : 0;
  if (j->outcome != CUZK_OUTCOME_COMPLETED)
    snprintf(res->error, sizeof res->error, "%s", j->error);
}

CUZK_EXPORT int cuzk_await(cuzk_engine *e, uint64_t handle, uint32_t timeout_ms,
                           cuzk_proof_result *result, char *err, size_t errlen) {
  int r = api_enter(e, "cuzk_await", err, errlen);
  if (r != CUZK_OK) return r;
  if (!result) {
    err_set(err, errlen, "cuzk_await: result must not be NULL");
    api_leave(e);
    return CUZK_EINVAL;
  }
  struct timespec dl;
  if (timeout_ms != WAIT_FOREVER) deadline_after_ns(&dl, (uint64_t)timeout_ms * 1000000ull);
  state_lock(e);
  job *j = sched_find(e, handle);
  if (!j) {
    r = CUZK_ENOTFOUND;
    err_set(err, errlen, "cuzk_await: unknown job %llu (never submitted, or evicted)",
            (unsigned long long)handle);
  } else {
    j->awaiters++; /* pins the job against eviction while we sleep */
    while (!j->finished && !e->closing && timeout_ms != 0) {
      if (timeout_ms == WAIT_FOREVER) state_wait(e, &e->cv_done);
      else if (state_timedwait(e, &e->cv_done, &dl) == ETIMEDOUT) break;
    }
    if (e->closing) {
      r = CUZK_ECLOSED;
      err_set(err, errlen, "cuzk_await: engine is closing");
    } else if (!j->finished) {
      r = CUZK_ETIMEDOUT;
      err_set(err, errlen, "cuzk_await: job %llu not finished after %u ms",
              (unsigned long long)handle, timeout_ms);
    } else {
      fill_result(j, result);
    }
    if (--j->awaiters == 0 && j->finished) pthread_cond_signal(&e->cv_house);
  }
  state_unlock(e);
  api_leave(e);
  return r;
}

CUZK_EXPORT int cuzk_cancel(cuzk_engine *e, uint64_t handle, char *err, size_t errlen) {
  int r = api_enter(e, "cuzk_cancel", err, errlen);
  if (r != CUZK_OK) return r;
  state_lock(e);
  job *j = sched_find(e, handle);
  if (!j) {
    r = CUZK_ENOTFOUND;
    err_set(err, errlen, "cuzk_cancel: unknown job %llu", (unsigned long long)handle);
  } else {
    sched_abort_job(e, j, mono_ns(), 1, 0, "cancelled by request");
  }
  state_unlock(e);
  api_leave(e);
  return r;
}

CUZK_EXPORT int cuzk_proof_copy(cuzk_engine *e, uint64_t handle, uint8_t *buf, uint32_t cap,
                                uint32_t *len_out, char *err, size_t errlen) {
  int r = api_enter(e, "cuzk_proof_copy", err, errlen);
  if (r != CUZK_OK) return r;
  if (!len_out || (!buf && cap)) {
    err_set(err, errlen, "cuzk_proof_copy: len_out must not be NULL, nor buf when cap > 0");
    api_leave(e);
    return CUZK_EINVAL;
  }
  *len_out = 0;
  state_lock(e);
  job *j = sched_find(e, handle);
  if (!j) {
    r = CUZK_ENOTFOUND;
    err_set(err, errlen, "cuzk_proof_copy: unknown job %llu", (unsigned long long)handle);
  } else if (!j->finished) {
    r = CUZK_EINVAL;
    err_set(err, errlen, "cuzk_proof_copy: job %llu has not finished",
            (unsigned long long)handle);
  } else if (j->outcome != CUZK_OUTCOME_COMPLETED) {
    r = CUZK_EINVAL;
    err_set(err, errlen, "cuzk_proof_copy: job %llu %s, it has no proof",
            (unsigned long long)handle,
            j->outcome == CUZK_OUTCOME_FAILED ? "failed" : "was cancelled");
  } else {
    *len_out = j->proof_len;
    if (cap < j->proof_len) {
      r = CUZK_ERANGE;
      err_set(err, errlen, "cuzk_proof_copy: proof is %u bytes, buffer holds %u",
              j->proof_len, cap);
    } else {
      memcpy(buf, j->proof, j->proof_len);
    }
  }
  state_unlock(e);
  api_leave(e);
  return r;
}

CUZK_EXPORT int cuzk_job_id(cuzk_engine *e, uint64_t handle, char *buf, uint32_t cap,
                            char *err, size_t errlen) {
  int r = api_enter(e, "cuzk_job_id", err, errlen);
  if (r != CUZK_OK) return r;
  if (!buf && cap) {
    err_set(err, errlen, "cuzk_job_id: buf must not be NULL when cap > 0");
    api_leave(e);
    return CUZK_EINVAL;
  }
  state_lock(e);
  job *j = sched_find(e, handle);
  if (!j) {
    r = CUZK_ENOTFOUND;
    err_set(err, errlen, "cuzk_job_id: unknown job %llu", (unsigned long long)handle);
  } else if (cap < j->id_len + 1) {
    r = CUZK_ERANGE;
    err_set(err, errlen, "cuzk_job_id: id is %u bytes plus NUL, buffer holds %u", j->id_len,
            cap);
  } else {
    memcpy(buf, j->id, j->id_len);
    buf[j->id_len] = '\0';
  }
  state_unlock(e);
  api_leave(e);
  return r;
}
