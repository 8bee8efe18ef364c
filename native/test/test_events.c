/* test_events.c — acceptance 4 and the event ring's contract: with a tiny ring and a slow
 * consumer the sequence gap is reported (and equals the overwritten counter), cumulative
 * counters stay exact, and a snapshot + the events after its last_seq restore the current
 * state. Also: eviction on time while idle, events disabled, waits woken by emits. */
#include <pthread.h>
#include <string.h>

#include "harness.h"

/* ---- a consumer-side model: partition states per job and worker ownership ------------- */
#define MAXJ 64
typedef struct model {
  int n;
  uint64_t handle[MAXJ];
  uint32_t parts[MAXJ];
  uint8_t state[MAXJ][32];
  int busy[8];
  uint64_t busy_job[8];
  uint32_t busy_part[8];
} model;

static int mjob(model *m, uint64_t h) {
  for (int i = 0; i < m->n; i++)
    if (m->handle[i] == h) return i;
  return -1;
}

static uint8_t state_code(const char *s) {
  for (uint32_t i = 0; i < CUZK_PART_STATE_COUNT; i++)
    if (!strcmp(cuzk_partition_state_name(i), s)) return (uint8_t)i;
  CHECK(0, "unknown state %s", s);
  return 0;
}

static uint64_t model_from_snapshot(model *m, cuzk_engine *e) {
  json_value *s = snapshot(e);
  memset(m, 0, sizeof *m);
  const json_value *pl = jget(s, "pipelines");
  for (size_t p = 0; p < pl->count; p++) {
    int j = m->n++;
    CHECK(j < MAXJ, "too many jobs");
    m->handle[j] = (uint64_t)jint(&pl->items[p], "job_handle");
    const json_value *parts = jget(&pl->items[p], "partitions");
    m->parts[j] = (uint32_t)parts->count;
    for (size_t i = 0; i < parts->count; i++) {
      const json_value *pt = &parts->items[i];
      uint8_t st = state_code(jstr(pt, "state"));
      const json_value *fin = jget(pt, "finalizing");
      CHECK(fin->type == JSON_BOOL && (!fin->boolean || st == CUZK_PART_GPU),
            "finalizing is a boolean, true only on a \"gpu\" partition");
      m->state[j][i] = fin->boolean ? CUZK_PART_FINALIZING : st; /* shown as "gpu", as cuzk */
    }
  }
  const json_value *ws = jget(s, "gpu_workers");
  for (size_t w = 0; w < ws->count; w++) {
    m->busy[w] = !strcmp(jstr(&ws->items[w], "state"), "proving");
    if (m->busy[w]) {
      m->busy_job[w] = (uint64_t)jint(&ws->items[w], "current_job_handle");
      m->busy_part[w] = (uint32_t)jint(&ws->items[w], "current_partition");
    }
  }
  uint64_t last = (uint64_t)jint(s, "last_seq");
  json_free(s);
  return last;
}

/* Applies one event; returns 1 if it changed the model. */
static int model_apply(model *m, const cuzk_event *ev) {
  int j;
  switch (ev->type) {
  case CUZK_EV_JOB_QUEUED:
    j = m->n++;
    CHECK(j < MAXJ, "too many jobs");
    m->handle[j] = ev->job;
    m->parts[j] = ev->partition;
    memset(m->state[j], CUZK_PART_PENDING, sizeof m->state[j]);
    return 1;
  case CUZK_EV_PARTITION:
    j = mjob(m, ev->job);
    CHECK(j >= 0 && ev->partition < m->parts[j], "partition event for an unknown job/partition");
    m->state[j][ev->partition] = (uint8_t)ev->aux;
    return 1;
  case CUZK_EV_WORKER:
    m->busy[ev->worker] = (int)ev->aux;
    m->busy_job[ev->worker] = ev->job;
    m->busy_part[ev->worker] = ev->partition;
    return 1;
  default: return 0;
  }
}

static void model_compare(model *a, model *b) {
  CHECK(a->n == b->n, "model has %d jobs, snapshot %d", a->n, b->n);
  for (int i = 0; i < a->n; i++) {
    int j = mjob(b, a->handle[i]);
    CHECK(j >= 0 && a->parts[i] == b->parts[j], "job %llu", (unsigned long long)a->handle[i]);
    for (uint32_t p = 0; p < a->parts[i]; p++)
      CHECK(a->state[i][p] == b->state[j][p], "job %llu partition %u: model %s, snapshot %s",
            (unsigned long long)a->handle[i], p, cuzk_partition_state_name(a->state[i][p]),
            cuzk_partition_state_name(b->state[j][p]));
  }
  for (int w = 0; w < 8; w++) CHECK(a->busy[w] == b->busy[w], "worker %d busy", w);
}

void test_tiny_ring_gap_counters_and_resync(void) {
  char cfg[300];
  snprintf(cfg, sizeof cfg,
           "{\"gpus\":2,\"workers_per_gpu\":2,\"event_ring_capacity\":8,"
           "\"sizes\":{\"porep-c2\":%u,\"snap-update\":%u,\"window-post\":%u,\"winning-post\":%u}}",
           tsize(11, 8), tsize(11, 8), tsize(11, 8), tsize(10, 8));
  cuzk_engine *e = open_engine(cfg);
  uint64_t jobs[16];
  int n = 0;
  for (int rep = 0; rep < 2; rep++)
    for (uint32_t k = 0; k < CUZK_KIND_COUNT; k++) jobs[n++] = submit_job(e, k, -1, 0, 0, NULL);

  /* a slow consumer (4 events per 2 ms) — every gap must be reported exactly */
  uint64_t expect_seq = 1, dropped_total = 0, gaps = 0, got = 0;
  for (int round = 0;; round++) {
    cuzk_event ev[8];
    uint32_t k = 0;
    uint64_t dropped = 0;
    int rc = cuzk_events_drain(e, ev, 4, &k, &dropped, ERR);
    if (rc == CUZK_ERANGE) { /* a group of 5..8 events: take it whole */
      CHECK(k > 4 && k <= 8 && dropped == 0, "ERANGE reports the group's size (%u)", k);
      rc = cuzk_events_drain(e, ev, 8, &k, &dropped, ERR);
    }
    CHECK(rc == CUZK_OK, "drain: %s", g_err);
    CHECK(k == 0 || (ev[k - 1].flags & CUZK_EVF_GROUP_END), "whole groups only");
    if (k) {
      CHECK(ev[0].seq == expect_seq + dropped, "first seq %llu, expected %llu + dropped %llu",
            (unsigned long long)ev[0].seq, (unsigned long long)expect_seq,
            (unsigned long long)dropped);
      for (uint32_t i = 1; i < k; i++) CHECK(ev[i].seq == ev[i - 1].seq + 1, "consecutive");
      expect_seq = ev[k - 1].seq + 1;
    } else {
      expect_seq += dropped;
    }
    dropped_total += dropped;
    gaps += dropped > 0;
    got += k;
    int all = 1;
    for (int i = 0; i < n && all; i++) {
      cuzk_proof_result r;
      all = cuzk_await(e, jobs[i], 0, &r, ERR) == CUZK_OK;
    }
    if (all && k == 0) break;
    sleep_ms(2); /* the slow consumer */
  }
  CHECK(gaps > 0 && dropped_total > 0, "a slow consumer of an 8-event ring must see a gap");

  /* the cumulative counters are exact despite every lost event */
  uint32_t words;
  uint64_t *c = read_counters(e, &words);
  CHECK(c[CUZK_CTR_EVENTS_OVERWRITTEN] == dropped_total,
        "overwritten %llu != reported dropped %llu", (unsigned long long)c[CUZK_CTR_EVENTS_OVERWRITTEN],
        (unsigned long long)dropped_total);
  CHECK(c[CUZK_CTR_EVENTS_EMITTED] == got + dropped_total && c[CUZK_CTR_LAST_SEQ] == got + dropped_total,
        "emitted %llu = read %llu + lost %llu", (unsigned long long)c[CUZK_CTR_EVENTS_EMITTED],
        (unsigned long long)got, (unsigned long long)dropped_total);
  uint64_t busy = 0, gpu = 0, parts = 0, results_gpu = 0, proofs = 0;
  const uint64_t *w = c + CUZK_CTR_HDR_WORDS + CUZK_KIND_COUNT * CUZK_CTR_KIND_WORDS + 2 * CUZK_CTR_GPU_WORDS;
  for (int i = 0; i < 4; i++) busy += w[i * CUZK_CTR_WORKER_WORDS + CUZK_CTRW_BUSY_NS];
  for (int k = 0; k < CUZK_KIND_COUNT; k++) {
    gpu += c[CUZK_CTR_HDR_WORDS + k * CUZK_CTR_KIND_WORDS + CUZK_CTRK_GPU_NS];
    parts += c[CUZK_CTR_HDR_WORDS + k * CUZK_CTR_KIND_WORDS + CUZK_CTRK_PARTS_COMPLETED];
    proofs += c[CUZK_CTR_HDR_WORDS + k * CUZK_CTR_KIND_WORDS + CUZK_CTRK_PROOFS_COMPLETED];
  }
  for (int i = 0; i < n; i++) results_gpu += await_job(e, jobs[i]).gpu_ns;
  CHECK(parts == 2 * (10 + 16 + 1 + 1) && proofs == 8, "partitions %llu, proofs %llu",
        (unsigned long long)parts, (unsigned long long)proofs);
  /* split proving: busy time is the union of each worker's partition intervals, at most
   * their sum (exact checks from the events are in test_counters.c) */
  CHECK(busy > 0 && busy <= gpu && gpu == results_gpu, "busy %llu, kind gpu %llu, results %llu",
        (unsigned long long)busy, (unsigned long long)gpu, (unsigned long long)results_gpu);
  /* and the snapshot shows the true current state */
  model snap;
  uint64_t last = model_from_snapshot(&snap, e);
  CHECK(last == got + dropped_total, "snapshot last_seq %llu", (unsigned long long)last);
  for (int i = 0; i < snap.n; i++)
    for (uint32_t p = 0; p < snap.parts[i]; p++)
      CHECK(snap.state[i][p] == CUZK_PART_DONE, "all partitions done in the snapshot");
  test_note("slow consumer of an 8-event ring: %llu events read, %llu gaps, %llu lost "
            "(= overwritten counter); counters exact",
            (unsigned long long)got, (unsigned long long)gaps, (unsigned long long)dropped_total);
  free(c);
  close_engine(&e);
}

/* Resync mid-run: after a gap, a snapshot plus the events after its last_seq restore the
 * state; following the events from there reproduces the final snapshot exactly. The sim
 * backend paces the events (stages are sleeps) so an event-driven consumer can follow a
 * 16-event ring between gaps. */
static int resync_scenario(int attempt) {
  cuzk_engine *e = open_engine(
      "{\"backend\":\"sim\",\"gpus\":1,\"workers_per_gpu\":2,\"synthesis_concurrency\":1,"
      "\"event_ring_capacity\":16,\"sim\":{\"porep-c2\":{\"synth_ms\":6,\"gpu_ms\":3,"
      "\"finalize_ms\":2,\"jitter\":0.3},\"snap-update\":{\"synth_ms\":4,\"gpu_ms\":2,"
      "\"finalize_ms\":1.5,\"jitter\":0.3},\"window-post\":{\"synth_ms\":5,\"gpu_ms\":3,"
      "\"finalize_ms\":2}}}");
  uint64_t jobs[4];
  jobs[0] = submit_job(e, CUZK_KIND_POREP_C2, -1, 0, 0, NULL);
  jobs[1] = submit_job(e, CUZK_KIND_SNAP_UPDATE, -1, 0, 0, NULL);
  jobs[2] = submit_job(e, CUZK_KIND_POREP_C2, -1, 0, 0, NULL);
  jobs[3] = submit_job(e, CUZK_KIND_WINDOW_POST, -1, 0, 0, NULL);
  /* a slow start: let the ring overflow */
  uint64_t dropped = 0;
  uint32_t k = 0;
  cuzk_event ev[16];
  for (int i = 0; i < 10 && !dropped; i++) {
    sleep_ms(10);
    int rc = cuzk_events_drain(e, ev, 2, &k, &dropped, ERR); /* ERANGE: a group of > 2 */
    CHECK(rc == CUZK_OK || (rc == CUZK_ERANGE && k > 2 && dropped == 0), "%s", g_err);
  }
  CHECK(dropped > 0, "the slow start must overflow the 16-event ring");
  model m;
  uint64_t last = model_from_snapshot(&m, e);
  int resyncs = 1, applied_since_resync = 0, unfinished_at_resync = 0;
  for (;;) {
    CHECK_RC(cuzk_events_drain(e, ev, 16, &k, &dropped, ERR), CUZK_OK);
    if (dropped) { /* a gap: re-sync from a snapshot */
      last = model_from_snapshot(&m, e);
      resyncs++;
      applied_since_resync = 0;
    }
    if (applied_since_resync == 0 && (dropped || resyncs == 1)) {
      unfinished_at_resync = 0;
      for (int i = 0; i < m.n; i++)
        for (uint32_t p = 0; p < m.parts[i]; p++)
          unfinished_at_resync += m.state[i][p] < CUZK_PART_DONE;
    }
    for (uint32_t i = 0; i < k; i++)
      if (ev[i].seq > last) applied_since_resync += model_apply(&m, &ev[i]);
    if (k) continue;
    int all = 1;
    for (int i = 0; i < 4 && all; i++) {
      cuzk_proof_result r;
      all = cuzk_await(e, jobs[i], 0, &r, ERR) == CUZK_OK;
    }
    if (all) {
      CHECK_RC(cuzk_events_drain(e, ev, 16, &k, &dropped, ERR), CUZK_OK);
      CHECK(k == 0 && dropped == 0, "events after the last job finished");
      break;
    }
    int rc = cuzk_events_wait(e, 100, ERR);
    CHECK(rc == CUZK_OK || rc == CUZK_ETIMEDOUT, "events_wait %s", g_err);
  }
  model final;
  model_from_snapshot(&final, e);
  model_compare(&m, &final);
  close_engine(&e);
  test_note("attempt %d: %d resyncs; the last one had %d partitions unfinished, then %d events "
            "rebuilt the final state exactly", attempt, resyncs, unfinished_at_resync,
            applied_since_resync);
  return unfinished_at_resync > 0 && applied_since_resync >= 10;
}

void test_snapshot_resync_mid_run(void) {
  /* the model must equal the final snapshot on every attempt; an attempt only counts as a
   * demonstration when its last resync was mid-run and followed by events (a late gap on a
   * loaded machine can spoil that, hence up to three attempts) */
  int ok = 0;
  for (int attempt = 1; attempt <= 3 && !ok; attempt++) ok = resync_scenario(attempt);
  CHECK(ok, "no attempt resynced mid-run and then followed >= 10 events");
}

void test_eviction_on_time_while_idle(void) {
  cuzk_engine *e = open_engine("{\"finished_retention_ms\":150,\"sizes\":{\"winning-post\":8}}");
  uint64_t j = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, "evict-me");
  CHECK(await_job(e, j).outcome == CUZK_OUTCOME_COMPLETED, "completed");
  uint64_t done_t = 0, evict_t = 0;
  event_log log = {0};
  uint64_t deadline = now_ns() + 5000000000ull;
  while (!evict_t) { /* event-driven: block until the eviction event arrives */
    CHECK(now_ns() < deadline, "no eviction within 5 s");
    int rc = cuzk_events_wait(e, 1000, ERR);
    CHECK(rc == CUZK_OK || rc == CUZK_ETIMEDOUT, "%s", g_err);
    size_t from = log.n;
    drain_all(e, &log);
    for (size_t i = from; i < log.n; i++) {
      if (log.ev[i].type == CUZK_EV_JOB_DONE && log.ev[i].job == j) done_t = log.ev[i].t_ns;
      if (log.ev[i].type == CUZK_EV_JOB_EVICTED && log.ev[i].job == j) evict_t = log.ev[i].t_ns;
    }
  }
  double late_ms = ((double)evict_t - (double)done_t) / 1e6 - 150;
  CHECK(done_t && late_ms >= 0, "evicted %.3f ms early", -late_ms);
  CHECK(late_ms < (test_small() ? 1000 : 100), "evicted %.1f ms late", late_ms);
  cuzk_proof_result r;
  CHECK_RC(cuzk_await(e, j, 0, &r, ERR), CUZK_ENOTFOUND);
  json_value *s = snapshot(e);
  CHECK(jget(s, "pipelines")->count == 0, "evicted job left the snapshot");
  json_free(s);
  test_note("evicted %.2f ms after the 150 ms retention", late_ms);
  close_engine(&e);
  event_log_free(&log);

  /* retention 0: a blocked awaiter still gets its result (the wait pins the job); the
   * 30 ms sim synthesis guarantees the await starts before the job can finish */
  e = open_engine("{\"finished_retention_ms\":0,\"backend\":\"sim\","
                  "\"sim\":{\"winning-post\":{\"synth_ms\":30,\"gpu_ms\":1,\"finalize_ms\":1}}}");
  for (int i = 0; i < 3; i++) {
    j = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, NULL);
    CHECK_RC(cuzk_await(e, j, 60000, &r, ERR), CUZK_OK);
    CHECK(r.outcome == CUZK_OUTCOME_COMPLETED, "retention 0");
    int evicted = 0; /* and it is evicted as soon as the awaiter left */
    for (uint64_t until = now_ns() + 5000000000ull; !evicted;) {
      CHECK(now_ns() < until, "not evicted after the awaiter left");
      int rc = cuzk_events_wait(e, 1000, ERR);
      CHECK(rc == CUZK_OK || rc == CUZK_ETIMEDOUT, "%s", g_err);
      size_t from = log.n;
      drain_all(e, &log);
      for (size_t x = from; x < log.n; x++)
        evicted |= log.ev[x].type == CUZK_EV_JOB_EVICTED && log.ev[x].job == j;
    }
  }
  event_log_free(&log);
  close_engine(&e);
}

void test_events_disabled(void) {
  cuzk_engine *e = open_engine("{\"events\":false,\"sizes\":{\"snap-update\":8}}");
  uint64_t j = submit_job(e, CUZK_KIND_SNAP_UPDATE, -1, 0, 0, NULL);
  cuzk_proof_result r = await_job(e, j);
  CHECK(r.outcome == CUZK_OUTCOME_COMPLETED, "completed");
  cuzk_event ev[4];
  uint32_t n = 9;
  uint64_t dropped = 9;
  CHECK_RC(cuzk_events_drain(e, ev, 4, &n, &dropped, ERR), CUZK_OK);
  CHECK(n == 0 && dropped == 0, "no events when disabled");
  CHECK_RC(cuzk_events_wait(e, 10, ERR), CUZK_ETIMEDOUT);
  uint32_t words;
  uint64_t *c = read_counters(e, &words);
  CHECK(c[CUZK_CTR_EVENTS_EMITTED] == 0 && c[CUZK_CTR_LAST_SEQ] == 0, "nothing emitted");
  CHECK(c[CUZK_CTR_HDR_WORDS + CUZK_KIND_SNAP_UPDATE * CUZK_CTR_KIND_WORDS + CUZK_CTRK_GPU_NS] == r.gpu_ns,
        "counters still exact");
  free(c);
  close_engine(&e);
}

typedef struct waiter {
  cuzk_engine *e;
  int rc;
  uint64_t woke_ns;
  char err[256];
} waiter;

static void *wait_events(void *arg) {
  waiter *w = arg;
  w->rc = cuzk_events_wait(w->e, 30000, w->err, sizeof w->err);
  w->woke_ns = now_ns();
  return NULL;
}

void test_events_wait_wakes_on_emit(void) {
  cuzk_engine *e = open_engine("{\"sizes\":{\"winning-post\":8}}");
  waiter w = {e, -1, 0, ""};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, wait_events, &w) == 0, "thread");
  sleep_ms(20); /* let it block (only to make the wake-up observable, not to synchronise) */
  uint64_t submitted = now_ns();
  uint64_t j = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, NULL);
  pthread_join(t, NULL);
  CHECK(w.rc == CUZK_OK, "events_wait -> %s: %s", cuzk_status_name(w.rc), w.err);
  CHECK(w.woke_ns - submitted < 1000000000ull, "woke %.3f ms after the emit",
        (w.woke_ns - submitted) / 1e6);
  await_job(e, j);
  event_log log = {0};
  drain_all(e, &log);
  CHECK(log.n > 0 && log.ev[0].type == CUZK_EV_JOB_QUEUED && log.ev[0].seq == 1 &&
            log.ev[0].job == j && log.ev[0].partition == 1 && log.ev[0].kind == CUZK_KIND_WINNING_POST,
        "first event is JOB_QUEUED of the job");
  /* every event type's fixed fields */
  for (size_t i = 0; i < log.n; i++) {
    const cuzk_event *ev = &log.ev[i];
    CHECK(ev->type >= CUZK_EV_JOB_QUEUED && ev->type <= CUZK_EV_MEMORY, "type %u", ev->type);
    if (ev->type == CUZK_EV_GPU_LOCK || ev->type == CUZK_EV_WORKER)
      CHECK(ev->gpu == 0 && ev->worker < 2, "gpu/worker set");
    if (ev->type == CUZK_EV_SYNTH_ACTIVE || ev->type == CUZK_EV_MEMORY)
      CHECK(ev->kind == 0xff && ev->gpu == 0xff && ev->worker == 0xffff, "none markers");
    if (ev->type == CUZK_EV_GPU_LOCK && ev->aux == 1)
      CHECK((ev->flags & CUZK_EVF_FIRST) != 0, "first acquire flagged");
  }
  CHECK(sizeof(cuzk_event) == 48, "event is 48 bytes");
  event_log_free(&log);
  close_engine(&e);
}
