/* observe_api.c — the observation calls: cuzk_events_drain, cuzk_events_wait,
 * cuzk_counters_read, cuzk_status_json. */
#include <string.h>

#include "counters.h"
#include "engine.h"
#include "status_json.h"
#include "util.h"

CUZK_EXPORT int cuzk_events_drain(cuzk_engine *e, cuzk_event *buf, uint32_t cap,
                                  uint32_t *n_out, uint64_t *dropped_out, char *err,
                                  size_t errlen) {
  int r = api_enter(e, "cuzk_events_drain", err, errlen);
  if (r != CUZK_OK) return r;
  if (!n_out || !dropped_out || (!buf && cap)) {
    err_set(err, errlen,
            "cuzk_events_drain: n_out and dropped_out must not be NULL, nor buf when cap > 0");
    api_leave(e);
    return CUZK_EINVAL;
  }
  uint32_t needed = 0;
  int64_t n = event_ring_drain(&e->ring, buf, cap, dropped_out, &needed);
  if (n < 0) {
    *n_out = needed;
    err_set(err, errlen,
            "cuzk_events_drain: the oldest event group has %u events, buffer holds %u "
            "(groups are returned whole)",
            needed, cap);
    api_leave(e);
    return CUZK_ERANGE;
  }
  *n_out = (uint32_t)n;
  api_leave(e);
  return CUZK_OK;
}

CUZK_EXPORT int cuzk_events_wait(cuzk_engine *e, uint32_t timeout_ms, char *err,
                                 size_t errlen) {
  int r = api_enter(e, "cuzk_events_wait", err, errlen);
  if (r != CUZK_OK) return r;
  uint64_t ns = timeout_ms == UINT32_MAX ? UINT64_MAX : (uint64_t)timeout_ms * 1000000ull;
  int w = event_ring_wait(&e->ring, ns);
  if (w == 1) {
    r = CUZK_ETIMEDOUT;
    err_set(err, errlen, "cuzk_events_wait: no event within %u ms", timeout_ms);
  } else if (w == 2) {
    r = CUZK_ECLOSED;
    err_set(err, errlen, "cuzk_events_wait: engine is closing");
  }
  api_leave(e);
  return r;
}

CUZK_EXPORT int cuzk_counters_read(cuzk_engine *e, uint64_t *buf, uint32_t cap,
                                   uint32_t *words_out, char *err, size_t errlen) {
  int r = api_enter(e, "cuzk_counters_read", err, errlen);
  if (r != CUZK_OK) return r;
  if (!words_out || (!buf && cap)) {
    err_set(err, errlen, "cuzk_counters_read: words_out must not be NULL, nor buf when cap > 0");
    api_leave(e);
    return CUZK_EINVAL;
  }
  uint32_t need = counters_words(e);
  *words_out = need;
  if (cap < need) {
    err_set(err, errlen, "cuzk_counters_read: %u words needed, buffer holds %u", need, cap);
    api_leave(e);
    return CUZK_ERANGE;
  }
  state_lock(e);
  counters_fill(e, buf, mono_ns());
  state_unlock(e);
  api_leave(e);
  return CUZK_OK;
}

CUZK_EXPORT int cuzk_status_json(cuzk_engine *e, char *buf, uint32_t cap, uint32_t *len_out,
                                 char *err, size_t errlen) {
  int r = api_enter(e, "cuzk_status_json", err, errlen);
  if (r != CUZK_OK) return r;
  if (!len_out || (!buf && cap)) {
    err_set(err, errlen, "cuzk_status_json: len_out must not be NULL, nor buf when cap > 0");
    api_leave(e);
    return CUZK_EINVAL;
  }
  state_lock(e);
  jsonw *w = &e->status_buf;
  status_json_write(e, w, mono_ns());
  if (w->oom) {
    r = CUZK_ENOMEM;
    *len_out = 0;
    err_set(err, errlen, "cuzk_status_json: out of memory building the snapshot");
  } else if (w->len + 1 > UINT32_MAX) {
    /* cannot be said in a uint32 length: refuse rather than report a wrapped size */
    r = CUZK_EINTERNAL;
    *len_out = 0;
    err_set(err, errlen, "cuzk_status_json: snapshot of %zu bytes exceeds 4 GiB", w->len + 1);
  } else if (w->len + 1 > cap) {
    r = CUZK_ERANGE;
    *len_out = (uint32_t)(w->len + 1);
    err_set(err, errlen, "cuzk_status_json: snapshot needs %zu bytes (with NUL), buffer holds %u",
            w->len + 1, cap);
  } else {
    memcpy(buf, w->buf, w->len + 1);
    *len_out = (uint32_t)w->len;
  }
  state_unlock(e);
  api_leave(e);
  return r;
}
