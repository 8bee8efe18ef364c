/* test_lifecycle.c — open/close cycles, close with work in flight, close waking blocked
 * calls (they return CUZK_ECLOSED), and request ids of any bytes in the snapshot. */
#include <pthread.h>
#include <string.h>

#include "harness.h"

void test_open_close_cycles_with_work(void) {
  int cycles = test_small() ? 10 : 30;
  for (int i = 0; i < cycles; i++) {
    cuzk_engine *e = open_engine(i % 2 ? "{\"backend\":\"sim\",\"time_scale\":0.0005}"
                                       : "{\"gpus\":2,\"sizes\":{\"porep-c2\":8,\"winning-post\":7}}");
    uint64_t a = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, NULL);
    submit_job(e, CUZK_KIND_POREP_C2, -1, 0, 0, NULL); /* left running at close */
    await_job(e, a);
    close_engine(&e);
  }
}

typedef struct blocked {
  cuzk_engine *e;
  uint64_t job;
  int await_rc, wait_rc;
} blocked;

static void *block_await(void *arg) {
  blocked *b = arg;
  cuzk_proof_result r;
  char err[128];
  b->await_rc = cuzk_await(b->e, b->job, UINT32_MAX, &r, err, sizeof err);
  return NULL;
}

static void *block_events(void *arg) {
  blocked *b = arg;
  char err[128];
  /* one blocking call, as the ABI asks: no call may start once close has begun, so a
   * thread must not loop back for a drain that could race the close */
  b->wait_rc = cuzk_events_wait(b->e, UINT32_MAX, err, sizeof err);
  return NULL;
}

void test_close_wakes_blocked_calls(void) {
  cuzk_engine *e = open_engine("{\"backend\":\"sim\",\"sim\":{\"porep-c2\":{\"synth_ms\":60000}}}");
  blocked b = {e, submit_job(e, CUZK_KIND_POREP_C2, -1, 0, 0, NULL), -1, -1};
  /* Let the job settle (both synthesis slots busy for 60 s, nothing else will happen until
   * close), then empty the ring, so the events waiter really blocks. */
  char json[8192];
  uint32_t len;
  char err[128];
  for (int i = 0; i < 2000; i++) {
    CHECK(cuzk_status_json(e, json, sizeof json, &len, err, sizeof err) == CUZK_OK, "%s", err);
    if (strstr(json, "\"active\":2")) break;
    sleep_ms(1);
  }
  CHECK(strstr(json, "\"active\":2") != NULL, "both synthesis slots busy");
  cuzk_event ev[64];
  uint32_t n;
  uint64_t d;
  do CHECK(cuzk_events_drain(e, ev, 64, &n, &d, err, sizeof err) == CUZK_OK, "%s", err);
  while (n > 0);
  pthread_t t1, t2;
  CHECK(pthread_create(&t1, NULL, block_await, &b) == 0, "thread");
  CHECK(pthread_create(&t2, NULL, block_events, &b) == 0, "thread");
  sleep_ms(50); /* let both block (the test is that close wakes them, not timing) */
  uint64_t t0 = now_ns();
  close_engine(&e); /* returns only after both calls left */
  double ms = (now_ns() - t0) / 1e6;
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CHECK(b.await_rc == CUZK_ECLOSED, "await -> %s", cuzk_status_name(b.await_rc));
  CHECK(b.wait_rc == CUZK_ECLOSED, "events_wait -> %s", cuzk_status_name(b.wait_rc));
  CHECK(ms < 2000, "close took %.1f ms with a 60 s sim synthesis in flight", ms);
  test_note("close with blocked await/events_wait and a 60 s stage in flight: %.2f ms", ms);
}

void test_request_ids_any_bytes_in_snapshot(void) {
  cuzk_engine *e = open_engine("{\"sizes\":{\"winning-post\":6}}");
  const char *ids[] = {"quote\"back\\slash", "ctl\x01\x02\t\n\r\x1f", "utf8-\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
                       "</script><b>", "ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50"};
  uint64_t h[5];
  for (int i = 0; i < 5; i++) h[i] = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, ids[i]);
  uint64_t gen = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, NULL);
  uint64_t empty = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, "");
  for (int i = 0; i < 5; i++) await_job(e, h[i]);
  await_job(e, gen);
  await_job(e, empty);
  json_value *s = snapshot(e);
  const json_value *pl = jget(s, "pipelines");
  CHECK(pl->count == 7, "7 pipelines");
  for (int i = 0; i < 5; i++) {
    const json_value *job = &pl->items[i];
    CHECK(jint(job, "job_handle") == (int64_t)h[i], "order");
    CHECK(!strcmp(jstr(job, "job_id"), ids[i]), "job_id bytes round trip for %d", i);
  }
  char want[32];
  snprintf(want, sizeof want, "job-%llu", (unsigned long long)gen);
  CHECK(!strcmp(jstr(&pl->items[5], "job_id"), want), "generated id %s", jstr(&pl->items[5], "job_id"));
  snprintf(want, sizeof want, "job-%llu", (unsigned long long)empty);
  CHECK(!strcmp(jstr(&pl->items[6], "job_id"), want), "generated id for \"\"");
  /* cuzk's shape: every field of docs/status-json.md */
  const char *top[] = {"uptime_secs", "memory", "synthesis", "pipelines", "gpu_workers",
                       "allocations", "counters", "buffers", "last_seq", "backend", "gpus"};
  for (size_t i = 0; i < sizeof top / sizeof *top; i++) jget(s, top[i]);
  const char *jobf[] = {"job_id", "proof_kind", "started_secs_ago", "total_partitions",
                        "partitions_done", "partitions", "job_handle", "priority", "outcome",
                        "finished_secs_ago"};
  for (size_t i = 0; i < sizeof jobf / sizeof *jobf; i++) jget(&pl->items[0], jobf[i]);
  const char *partf[] = {"index", "state", "synth_ms", "gpu_ms", "gpu_ordinal", "worker_id"};
  for (size_t i = 0; i < sizeof partf / sizeof *partf; i++)
    jget(&jget(&pl->items[0], "partitions")->items[0], partf[i]);
  const char *wf[] = {"worker_id", "gpu_ordinal", "state", "current_job", "current_partition",
                      "busy_secs", "busy_total_secs", "current_job_handle", "current_kind"};
  for (size_t i = 0; i < sizeof wf / sizeof *wf; i++) jget(&jget(s, "gpu_workers")->items[0], wf[i]);
  const char *cf[] = {"total_completed", "total_failed", "completed_by_kind", "failed_by_kind",
                      "queue_depth", "cancelled_by_kind", "queue_depth_by_kind"};
  for (size_t i = 0; i < sizeof cf / sizeof *cf; i++) jget(jget(s, "counters"), cf[i]);
  const char *bf[] = {"synth_in_flight", "provers_in_flight", "aux_in_flight", "shells_in_flight",
                      "pending_handles"};
  for (size_t i = 0; i < sizeof bf / sizeof *bf; i++) jget(jget(s, "buffers"), bf[i]);
  const json_value *srs = &jget(jget(s, "allocations"), "srs")->items[0];
  CHECK(!strcmp(jstr(srs, "circuit_id"), "winning-post-k6") && jint(srs, "bytes") == 576 * 64 &&
            jget(srs, "evictable")->boolean,
        "srs entry");
  CHECK(jint(jget(jget(s, "counters"), "completed_by_kind"), "winning-post") == 7, "completed");
  json_free(s);
  close_engine(&e);
}
