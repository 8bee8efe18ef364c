/* test_stress.c — event groups under load: drain as fast as possible while the engine runs
 * at full speed (tiny circuits on the cpu backend, split proving on, jobs kept in flight,
 * some cancelled, some failing by injection), and check after EVERY drain that
 *   - a non-empty drain ends on a group end (CUZK_EVF_GROUP_END), sequence numbers are
 *     consecutive and nothing was dropped;
 *   - the state replayed from everything drained so far never shows a half-applied
 *     transition: a partition in gpu/finalizing whose worker is already idle (the take-back
 *     split in two), nor a worker busy without a partition of its own.
 * CUZK_STRESS_DRAINS sets the number of drains (default 10^6, 2*10^5 under
 * CUZK_TEST_SMALL); the acceptance run uses 10^7. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define SLOTS 1024u /* job handles in flight map to handle % SLOTS (far fewer in flight) */
#define MAXP 16u
#define NW 4

typedef struct rjob {
  uint64_t handle;
  uint8_t state[MAXP];
  uint16_t worker[MAXP];
} rjob;

typedef struct rmodel {
  rjob jobs[SLOTS];
  int busy[NW];
  uint64_t own_job[NW];
  uint32_t own_part[NW];
  int open[NW]; /* partitions in gpu/finalizing handed to this worker */
  int unfinished;
  uint64_t next_seq;
} rmodel;

static int on_gpu(uint8_t s) { return s == CUZK_PART_GPU || s == CUZK_PART_FINALIZING; }

static void apply(rmodel *m, const cuzk_event *ev) {
  CHECK(ev->seq == m->next_seq, "seq %llu, expected %llu", (unsigned long long)ev->seq,
        (unsigned long long)m->next_seq);
  m->next_seq++;
  rjob *j = &m->jobs[ev->job % SLOTS];
  switch (ev->type) {
  case CUZK_EV_JOB_QUEUED:
    CHECK(j->handle == 0, "job slot %llu still in use", (unsigned long long)(ev->job % SLOTS));
    memset(j, 0, sizeof *j);
    j->handle = ev->job;
    m->unfinished++;
    break;
  case CUZK_EV_JOB_DONE:
    CHECK(j->handle == ev->job, "JOB_DONE of an unknown job");
    for (uint32_t p = 0; p < MAXP; p++) CHECK(!on_gpu(j->state[p]), "job done with a partition on the GPU");
    j->handle = 0;
    m->unfinished--;
    break;
  case CUZK_EV_PARTITION: {
    CHECK(j->handle == ev->job && ev->partition < MAXP, "partition event of an unknown job");
    uint8_t old = j->state[ev->partition];
    if (ev->aux == CUZK_PART_GPU) {
      CHECK(ev->worker < NW, "hand-off names a worker");
      j->worker[ev->partition] = ev->worker;
      m->open[ev->worker]++;
    } else if (on_gpu(old) && !on_gpu((uint8_t)ev->aux)) {
      int w = j->worker[ev->partition];
      CHECK(ev->worker == w, "the end of a GPU stage names its worker");
      m->open[w]--;
    }
    j->state[ev->partition] = (uint8_t)ev->aux;
    break;
  }
  case CUZK_EV_WORKER:
    CHECK(ev->worker < NW, "worker id");
    m->busy[ev->worker] = (int)ev->aux;
    m->own_job[ev->worker] = ev->job;
    m->own_part[ev->worker] = ev->partition;
    break;
  default: break;
  }
}

/* What no whole-group drain may ever show. */
static void check_model(const rmodel *m, uint64_t drain) {
  for (int w = 0; w < NW; w++) {
    CHECK(m->busy[w] || m->open[w] == 0,
          "drain %llu: worker %d idle with %d partitions of its own in gpu/finalizing "
          "(a half-applied transition)",
          (unsigned long long)drain, w, m->open[w]);
    if (!m->busy[w]) continue;
    const rjob *j = &m->jobs[m->own_job[w] % SLOTS];
    CHECK(j->handle == m->own_job[w] && m->own_part[w] < MAXP &&
              on_gpu(j->state[m->own_part[w]]) && j->worker[m->own_part[w]] == w,
          "drain %llu: worker %d busy on job %llu partition %u, which is not its own on the GPU",
          (unsigned long long)drain, w, (unsigned long long)m->own_job[w], m->own_part[w]);
  }
}

static uint64_t env_count(const char *name, uint64_t dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  CHECK(*end == '\0' && v > 0, "%s=%s is not a positive integer", name, s);
  return v;
}

static void stress(const char *what, const char *config, uint64_t drains) {
  cuzk_engine *e = open_engine(config);
  rmodel *m = calloc(1, sizeof *m);
  CHECK(m, "oom");
  m->next_seq = 1;
  enum { CAP = 256 };
  cuzk_event *buf = malloc(65536 * sizeof *buf);
  CHECK(buf, "oom");
  uint64_t events = 0, nonempty = 0, submitted = 0, cancelled = 0, max_group = 0;
  uint64_t t0 = now_ns();
  /* at least `drains` drains, and on until the engine produced enough events that the
   * run is not vacuous (a sanitizer build drains fast and computes slowly) */
  uint64_t d = 0;
  for (; d < drains || events < 5000; d++) {
    CHECK(d < drains || now_ns() - t0 < 120000000000ull, "the engine produced only %llu events "
          "in 120 s", (unsigned long long)events);
    /* keep ~8 jobs in flight; cancel every 7th right away (abort groups) */
    if (m->unfinished < 8) { /* its JOB_QUEUED is committed before submit returns */
      uint64_t job = submit_job(e, (uint32_t)(submitted % CUZK_KIND_COUNT), -1, 0, 0, NULL);
      if (++submitted % 7 == 0) {
        int rc = cuzk_cancel(e, job, ERR); /* tiny jobs may be done and evicted already */
        CHECK(rc == CUZK_OK || rc == CUZK_ENOTFOUND, "cancel: %s", g_err);
        cancelled += rc == CUZK_OK;
      }
    }
    uint32_t n = 0;
    uint64_t dropped = 0;
    int rc = cuzk_events_drain(e, buf, CAP, &n, &dropped, ERR);
    if (rc == CUZK_ERANGE) { /* one group larger than CAP: take it whole */
      CHECK(n > CAP && n <= 65536, "ERANGE size %u", n);
      rc = cuzk_events_drain(e, buf, n, &n, &dropped, ERR);
    }
    CHECK(rc == CUZK_OK, "drain %llu: %s", (unsigned long long)d, g_err);
    CHECK(dropped == 0, "drain %llu: %llu events dropped (the ring must keep up)",
          (unsigned long long)d, (unsigned long long)dropped);
    if (n == 0) continue;
    CHECK(buf[n - 1].flags & CUZK_EVF_GROUP_END,
          "drain %llu ended inside a group (seq %llu has no GROUP_END)", (unsigned long long)d,
          (unsigned long long)buf[n - 1].seq);
    uint64_t group = 0;
    for (uint32_t i = 0; i < n; i++) {
      apply(m, &buf[i]);
      group++;
      if (buf[i].flags & CUZK_EVF_GROUP_END) {
        if (group > max_group) max_group = group;
        group = 0;
      }
    }
    check_model(m, d);
    events += n;
    nonempty++;
  }
  double secs = (now_ns() - t0) / 1e9;
  drains = d;
  test_note("%s: %llu drains in %.2f s (%.0f ns each), %llu non-empty, %llu events (largest group "
            "%llu), %llu jobs submitted (%llu cancelled): no drain ended inside a group, no "
            "half-applied transition",
            what, (unsigned long long)drains, secs, secs * 1e9 / (double)drains,
            (unsigned long long)nonempty, (unsigned long long)events,
            (unsigned long long)max_group, (unsigned long long)submitted,
            (unsigned long long)cancelled);
  free(buf);
  free(m);
  close_engine(&e);
}

void test_stress_drains_whole_groups(void) {
  uint64_t drains = env_count("CUZK_STRESS_DRAINS", test_small() ? 200000 : 1000000);
  /* sim with zero-length stages: nothing but state transitions, as fast as they go */
  stress("sim, zero-length stages",
         "{\"backend\":\"sim\",\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":2,"
         "\"event_ring_capacity\":1048576,\"finished_retention_ms\":0,"
         "\"sim\":{\"porep-c2\":{\"synth_ms\":0,\"gpu_ms\":0,\"finalize_ms\":0},"
         "\"snap-update\":{\"synth_ms\":0,\"gpu_ms\":0,\"finalize_ms\":0},"
         "\"window-post\":{\"synth_ms\":0,\"gpu_ms\":0,\"finalize_ms\":0},"
         "\"winning-post\":{\"synth_ms\":0,\"gpu_ms\":0,\"finalize_ms\":0}},"
         "\"faults\":{\"fail_partition_rate\":0.01}}",
         drains - drains / 2);
  /* cpu with tiny circuits: real kernels and tails */
  stress("cpu, tiny circuits",
         "{\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":2,"
         "\"event_ring_capacity\":1048576,\"finished_retention_ms\":0,"
         "\"sizes\":{\"porep-c2\":5,\"snap-update\":4,\"window-post\":6,\"winning-post\":4},"
         "\"faults\":{\"fail_partition_rate\":0.01}}",
         drains / 2);
}
