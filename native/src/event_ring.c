/* event_ring.c — see event_ring.h. */
#include "event_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

int event_ring_init(event_ring *r, uint32_t capacity, int enabled) {
  memset(r, 0, sizeof *r);
  r->slots = calloc(capacity, sizeof *r->slots);
  r->starts = calloc(capacity, 1);
  if (!r->slots || !r->starts) {
    free(r->slots);
    free(r->starts);
    r->slots = NULL;
    r->starts = NULL;
    return -1;
  }
  r->mask = (uint64_t)capacity - 1;
  r->next_read = 1;
  r->enabled = enabled;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&r->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&r->mu, NULL);
  return 0;
}

void event_ring_destroy(event_ring *r) {
  if (!r->slots) return;
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r->slots);
  free(r->starts);
  r->slots = NULL;
  r->starts = NULL;
}

void event_emit(event_ring *r, uint16_t type, uint64_t t_ns, uint64_t job, uint64_t value,
                uint32_t partition, uint8_t kind, uint8_t gpu, uint16_t worker, uint16_t flags,
                uint32_t aux) {
  if (!r->enabled) return; /* fixed at open: read without the lock */
  pthread_mutex_lock(&r->mu);
  uint64_t seq = ++r->last_seq;
  /* the slot's previous occupant is seq - capacity; lost if not yet drained */
  if (seq > r->mask + 1 && seq - (r->mask + 1) >= r->next_read) r->overwritten++;
  cuzk_event *ev = &r->slots[seq & r->mask];
  ev->seq = seq;
  ev->t_ns = t_ns;
  ev->job = job;
  ev->value = value;
  ev->partition = partition;
  ev->type = type;
  ev->kind = kind;
  ev->gpu = gpu;
  ev->worker = worker;
  ev->flags = flags;
  ev->aux = aux;
  r->starts[seq & r->mask] = !r->open;
  r->open = 1;
  pthread_mutex_unlock(&r->mu);
}

void event_ring_commit(event_ring *r) {
  if (!r->enabled) return;
  pthread_mutex_lock(&r->mu);
  if (r->open) {
    r->open = 0;
    r->slots[r->last_seq & r->mask].flags |= CUZK_EVF_GROUP_END;
    r->committed = r->last_seq;
    if (r->waiters) pthread_cond_broadcast(&r->cv);
  }
  pthread_mutex_unlock(&r->mu);
}

int64_t event_ring_drain(event_ring *r, cuzk_event *buf, uint32_t cap, uint64_t *dropped,
                         uint32_t *needed) {
  pthread_mutex_lock(&r->mu);
  uint64_t capacity = r->mask + 1;
  uint64_t oldest = r->last_seq >= capacity ? r->last_seq - capacity + 1 : 1;
  /* computed on locals: an ERANGE answer consumes nothing */
  uint64_t next = r->next_read, lost = 0, skipped = 0;
  if (next < oldest) { /* overwritten before we read them (counted at emit) */
    lost = oldest - next;
    next = oldest;
  }
  /* the head of this group was overwritten: skip the rest of it, never half a group */
  while (next <= r->last_seq && !r->starts[next & r->mask]) {
    next++;
    skipped++;
  }
  int64_t n = 0;
  if (r->committed >= next) {
    uint64_t limit = r->committed;
    if (limit - next + 1 > cap) limit = next + cap - 1; /* cap 0: limit < next */
    uint64_t end = 0;
    for (uint64_t q = limit; q >= next && q > 0; q--) {
      if (r->slots[q & r->mask].flags & CUZK_EVF_GROUP_END) {
        end = q;
        break;
      }
    }
    if (!end) { /* the oldest whole group alone exceeds cap */
      uint64_t g = next;
      while (!(r->slots[g & r->mask].flags & CUZK_EVF_GROUP_END)) g++;
      *needed = (uint32_t)(g - next + 1);
      *dropped = 0;
      pthread_mutex_unlock(&r->mu);
      return -1;
    }
    n = (int64_t)(end - next + 1);
    uint64_t first = next & r->mask;
    uint64_t run = capacity - first < (uint64_t)n ? capacity - first : (uint64_t)n;
    memcpy(buf, &r->slots[first], run * sizeof *buf);
    memcpy(buf + run, &r->slots[0], ((uint64_t)n - run) * sizeof *buf);
    next += (uint64_t)n;
  }
  r->next_read = next;
  r->overwritten += skipped;
  *dropped = lost + skipped;
  pthread_mutex_unlock(&r->mu);
  return n;
}

int event_ring_wait(event_ring *r, uint64_t timeout_ns) {
  struct timespec dl;
  if (timeout_ns != UINT64_MAX) deadline_after_ns(&dl, timeout_ns);
  pthread_mutex_lock(&r->mu);
  int rc = 1;
  r->waiters++;
  for (;;) {
    /* closing wins over pending events: a caller woken by close must not come back for a
     * drain on an engine that is being freed */
    if (r->closed) {
      rc = 2;
      break;
    }
    if (r->committed >= r->next_read) {
      rc = 0;
      break;
    }
    if (timeout_ns == 0) break;
    int w = timeout_ns == UINT64_MAX ? pthread_cond_wait(&r->cv, &r->mu)
                                     : pthread_cond_timedwait(&r->cv, &r->mu, &dl);
    if (w == ETIMEDOUT) {
      rc = r->closed ? 2 : (r->committed >= r->next_read ? 0 : 1);
      break;
    }
  }
  r->waiters--;
  pthread_mutex_unlock(&r->mu);
  return rc;
}

void event_ring_close(event_ring *r) {
  pthread_mutex_lock(&r->mu);
  r->closed = 1;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

void event_ring_stats(event_ring *r, uint64_t *last_seq, uint64_t *overwritten) {
  pthread_mutex_lock(&r->mu);
  *last_seq = r->last_seq;
  *overwritten = r->overwritten;
  pthread_mutex_unlock(&r->mu);
}
