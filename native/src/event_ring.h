/* event_ring.h — bounded, overwrite-oldest event ring with one read cursor, in groups.
 * Producers never block on the consumer: when the ring is full the oldest undrained event
 * is overwritten and counted. The ring has its own small mutex (held for a 48-byte copy),
 * so the engine's state lock is never held by a drain.
 * Groups: the events emitted between two event_ring_commit calls form one group (the
 * engine commits at the end of every critical section of its state lock); commit sets
 * CUZK_EVF_GROUP_END on the group's last event. A drain returns whole committed groups
 * only; after an overflow it skips the rest of a group whose head was lost. */
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
  uint64_t overwritten; /* undrained events lost to overflow (incl. skipped group tails) */
  uint64_t committed;   /* seq of the last event of the last committed group */
  uint8_t *starts;      /* per slot: 1 if that event opened a group */
  int open;             /* a group is being emitted (events since the last commit) */
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

/* Ends the open group (if any): CUZK_EVF_GROUP_END on its last event, wakes waiters.
 * Called by the engine at the end of every critical section of its state lock. */
void event_ring_commit(event_ring *r);

/* Copies the oldest whole committed groups that fit in cap events; returns the number
 * copied (>= 0) and *dropped = events lost since the last drain (overwritten, or the rest
 * of a group whose head was overwritten: the cursor then moves to the next group start).
 * When the oldest whole group alone exceeds cap, copies nothing, consumes nothing, sets
 * *dropped = 0 and *needed = that group's size, and returns -1. */
int64_t event_ring_drain(event_ring *r, cuzk_event *buf, uint32_t cap, uint64_t *dropped,
                         uint32_t *needed);
/* Waits until an undrained committed group exists (0), the timeout passes (1) or close (2).
 * timeout_ns == UINT64_MAX waits without a deadline. */
int event_ring_wait(event_ring *r, uint64_t timeout_ns);
void event_ring_close(event_ring *r);
/* Consistent reads of the counters (under the ring mutex). */
void event_ring_stats(event_ring *r, uint64_t *last_seq, uint64_t *overwritten);

#endif
