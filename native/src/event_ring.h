/* event_ring.h — bounded, overwrite-oldest event ring with one read cursor.
 * Producers never block on the consumer: when the ring is full the oldest undrained event
 * is overwritten and counted. The ring has its own small mutex (held for a 48-byte copy),
 * so the engine's state lock is never held by a drain. */
#ifndef CUZK_EVENT_RING_H
#define CUZK_EVENT_RING_H

#include <pthread.h>
#include <stdint.h>

#include "cuzk_engine.h"

typedef struct event_ring {
  pthread_mutex_t mu;
  pthread_cond_t cv;    /* signalled on emit when a waiter sleeps, and on close */
  cuzk_event *slots;
  uint64_t mask;        /* capacity - 1 (capacity is a power of two) */
  uint64_t last_seq;    /* seq of the newest event (0 = none yet) */
  uint64_t next_read;   /* seq the consumer reads next */
  uint64_t overwritten; /* undrained events lost to overflow */
  int enabled;
  int closed;
  int waiters;
} event_ring;

int event_ring_init(event_ring *r, uint32_t capacity, int enabled); /* 0 ok, -1 ENOMEM */
void event_ring_destroy(event_ring *r);

/* Appends one event (seq assigned here). Cheap and non-blocking apart from the ring mutex. */
void event_emit(event_ring *r, uint16_t type, uint64_t t_ns, uint64_t job, uint64_t value,
                uint32_t partition, uint8_t kind, uint8_t gpu, uint16_t worker, uint16_t flags,
                uint32_t aux);

/* Copies up to cap oldest undrained events; *dropped = events overwritten since the last
 * drain (the cursor then jumps to the oldest event still held). */
uint32_t event_ring_drain(event_ring *r, cuzk_event *buf, uint32_t cap, uint64_t *dropped);
/* Waits until an undrained event exists (0), the timeout passes (1) or close (2).
 * timeout_ns == UINT64_MAX waits without a deadline. */
int event_ring_wait(event_ring *r, uint64_t timeout_ns);
void event_ring_close(event_ring *r);
/* Consistent reads of the counters (under the ring mutex). */
void event_ring_stats(event_ring *r, uint64_t *last_seq, uint64_t *overwritten);

#endif
