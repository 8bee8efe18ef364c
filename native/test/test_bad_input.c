/* test_bad_input.c — acceptance 5: bad input everywhere returns an error code and a
 * readable message; nothing crashes. */
#include <string.h>

#include "harness.h"

#define EXPECT(call, want, needle)                                                         \
  do {                                                                                     \
    g_err[0] = '\0';                                                                       \
    int rc_ = (call);                                                                      \
    CHECK(rc_ == (want), "%s -> %s, expected %s (%s)", #call, cuzk_status_name(rc_),      \
          cuzk_status_name(want), g_err);                                                  \
    CHECK(strlen(g_err) > 10 && strstr(g_err, needle), "%s: message \"%s\" lacks \"%s\"", \
          #call, g_err, needle);                                                           \
  } while (0)

void test_bad_input_null_and_closed_handles(void) {
  uint64_t job = 0, buf64[4];
  uint32_t n = 0, valid = 0;
  uint64_t dropped;
  cuzk_event ev[2];
  cuzk_proof_result res;
  char text[64];
  uint8_t bytes[64];
  EXPECT(cuzk_submit(NULL, 0, -1, 0, 0, "x", &job, ERR), CUZK_EINVAL, "NULL");
  EXPECT(cuzk_await(NULL, 1, 0, &res, ERR), CUZK_EINVAL, "cuzk_await");
  EXPECT(cuzk_cancel(NULL, 1, ERR), CUZK_EINVAL, "NULL");
  EXPECT(cuzk_proof_copy(NULL, 1, bytes, 64, &n, ERR), CUZK_EINVAL, "NULL");
  EXPECT(cuzk_events_drain(NULL, ev, 2, &n, &dropped, ERR), CUZK_EINVAL, "NULL");
  EXPECT(cuzk_events_wait(NULL, 0, ERR), CUZK_EINVAL, "NULL");
  EXPECT(cuzk_counters_read(NULL, buf64, 4, &n, ERR), CUZK_EINVAL, "NULL");
  EXPECT(cuzk_status_json(NULL, text, 64, &n, ERR), CUZK_EINVAL, "NULL");
  EXPECT(cuzk_job_id(NULL, 1, text, 64, ERR), CUZK_EINVAL, "NULL");
  EXPECT(cuzk_engine_close(NULL, ERR), CUZK_EINVAL, "NULL");
  cuzk_engine *none = NULL;
  EXPECT(cuzk_engine_close(&none, ERR), CUZK_EINVAL, "already closed");
  /* something that is not an engine: the magic check refuses it */
  static uint64_t fake[512];
  EXPECT(cuzk_cancel((cuzk_engine *)fake, 1, ERR), CUZK_EINVAL, "not a live engine");
  EXPECT(cuzk_status_json((cuzk_engine *)fake, text, 64, &n, ERR), CUZK_EINVAL, "engine");
  /* open */
  EXPECT(cuzk_engine_open("{}", NULL, ERR), CUZK_EINVAL, "out");
  cuzk_engine *e = (cuzk_engine *)0x1;
  EXPECT(cuzk_engine_open(NULL, &e, ERR), CUZK_EINVAL, "NULL");
  CHECK(e == NULL, "*out cleared on failure");
  EXPECT(cuzk_engine_open("{\"gpus\":", &e, ERR), CUZK_EINVAL, "invalid JSON");
  EXPECT(cuzk_engine_open("{\"backend\":\"cuda\"}", &e, ERR), CUZK_EINVAL, "not built");
  /* double close */
  e = open_engine("{}");
  cuzk_engine *copy = e;
  (void)copy;
  CHECK_RC(cuzk_engine_close(&e, ERR), CUZK_OK);
  CHECK(e == NULL, "close clears the handle");
  EXPECT(cuzk_engine_close(&e, ERR), CUZK_EINVAL, "already closed");
  /* err may be NULL with errlen 0; a 1-byte buffer gets a NUL */
  CHECK(cuzk_submit(NULL, 0, -1, 0, 0, NULL, &job, NULL, 0) == CUZK_EINVAL, "NULL err");
  char one[1] = {'x'};
  CHECK(cuzk_submit(NULL, 0, -1, 0, 0, NULL, &job, one, 1) == CUZK_EINVAL && one[0] == 0,
        "1-byte err buffer");
  char small[12];
  cuzk_submit(NULL, 0, -1, 0, 0, NULL, &job, small, sizeof small);
  CHECK(strlen(small) == sizeof small - 1, "truncated message is NUL-terminated");
  /* static names */
  CHECK(!strcmp(cuzk_status_name(-1), "unknown") && !strcmp(cuzk_status_name(99), "unknown") &&
            !strcmp(cuzk_status_name(CUZK_EFULL), "EFULL"),
        "status names");
  CHECK(!strcmp(cuzk_kind_name(4), "unknown") && !strcmp(cuzk_kind_name(1), "snap-update"),
        "kind names");
  CHECK(!strcmp(cuzk_partition_state_name(7), "unknown") &&
            !strcmp(cuzk_partition_state_name(CUZK_PART_FINALIZING), "finalizing") &&
            !strcmp(cuzk_partition_state_name(2), "synth_done"),
        "state names");
  CHECK(cuzk_abi_version() == CUZK_ABI_VERSION && CUZK_ABI_VERSION == 2, "abi version");
  CHECK(cuzk_now_ns() > 0, "clock");
  (void)valid;
}

void test_bad_input_calls_on_live_engine(void) {
  cuzk_engine *e = open_engine("{\"memory_budget_bytes\":100000,\"queue_limit\":2,"
                               "\"sizes\":{\"porep-c2\":8,\"snap-update\":8,\"window-post\":8,"
                               "\"winning-post\":8}}");
  uint64_t job = 0;
  EXPECT(cuzk_submit(e, 4, -1, 0, 0, NULL, &job, ERR), CUZK_EINVAL, "unknown proof kind 4");
  EXPECT(cuzk_submit(e, UINT32_MAX, -1, 0, 0, NULL, &job, ERR), CUZK_EINVAL, "kind");
  EXPECT(cuzk_submit(e, 0, -1, 257, 0, NULL, &job, ERR), CUZK_EINVAL, "partitions");
  EXPECT(cuzk_submit(e, 0, -1, UINT32_MAX, 0, NULL, &job, ERR), CUZK_EINVAL, "partitions");
  EXPECT(cuzk_submit(e, 0, -1, 0, 23, NULL, &job, ERR), CUZK_EINVAL, "log2_size 23");
  EXPECT(cuzk_submit(e, 0, -1, 0, UINT32_MAX, NULL, &job, ERR), CUZK_EINVAL, "log2_size");
  EXPECT(cuzk_submit(e, 0, -1, 0, 14, NULL, &job, ERR), CUZK_EINVAL, "memory_budget_bytes");
  EXPECT(cuzk_submit(e, 0, -1, 0, 0, NULL, NULL, ERR), CUZK_EINVAL, "job_out");
  char longid[400];
  memset(longid, 'a', sizeof longid - 1);
  longid[sizeof longid - 1] = 0;
  EXPECT(cuzk_submit(e, 0, -1, 0, 0, longid, &job, ERR), CUZK_EINVAL, "255");
  EXPECT(cuzk_submit(e, 0, -1, 0, 0, "bad\xff utf8", &job, ERR), CUZK_EINVAL, "UTF-8");
  EXPECT(cuzk_submit(e, 0, -1, 0, 0, "\xc0\x80", &job, ERR), CUZK_EINVAL, "UTF-8");
  longid[255] = 0; /* exactly 255 bytes is fine */
  uint64_t ok = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, longid);
  cuzk_proof_result res;
  EXPECT(cuzk_await(e, 987654321, 0, &res, ERR), CUZK_ENOTFOUND, "987654321");
  EXPECT(cuzk_await(e, ok, 10, NULL, ERR), CUZK_EINVAL, "result");
  EXPECT(cuzk_cancel(e, 0, ERR), CUZK_ENOTFOUND, "unknown job");
  uint32_t n;
  uint8_t bytes[8];
  EXPECT(cuzk_proof_copy(e, 424242, bytes, 8, &n, ERR), CUZK_ENOTFOUND, "unknown");
  EXPECT(cuzk_proof_copy(e, ok, bytes, 8, NULL, ERR), CUZK_EINVAL, "len_out");
  CHECK(await_job(e, ok).outcome == CUZK_OUTCOME_COMPLETED, "job");
  EXPECT(cuzk_proof_copy(e, ok, bytes, 8, &n, ERR), CUZK_ERANGE, "88 bytes");
  CHECK(n == 88, "needed length reported: %u", n);
  char id[300];
  EXPECT(cuzk_job_id(e, ok, id, 255, ERR), CUZK_ERANGE, "255 bytes");
  CHECK_RC(cuzk_job_id(e, ok, id, 256, ERR), CUZK_OK);
  CHECK(strlen(id) == 255, "255-byte id round trip, never truncated");
  EXPECT(cuzk_job_id(e, 999, id, sizeof id, ERR), CUZK_ENOTFOUND, "999");
  EXPECT(cuzk_job_id(e, ok, NULL, 10, ERR), CUZK_EINVAL, "buf");
  cuzk_event ev[1];
  uint64_t dropped;
  EXPECT(cuzk_events_drain(e, NULL, 4, &n, &dropped, ERR), CUZK_EINVAL, "buf");
  EXPECT(cuzk_events_drain(e, ev, 1, NULL, &dropped, ERR), CUZK_EINVAL, "n_out");
  EXPECT(cuzk_events_drain(e, ev, 1, &n, NULL, ERR), CUZK_EINVAL, "dropped_out");
  uint64_t words[8];
  uint32_t need = 0;
  EXPECT(cuzk_counters_read(e, words, 8, &need, ERR), CUZK_ERANGE, "words needed");
  CHECK(need == 16 + 4 * CUZK_CTR_KIND_WORDS + 1 * 4 + 2 * 4 && CUZK_CTR_KIND_WORDS == 10, "counter words for 1 GPU x 2 workers: %u", need);
  EXPECT(cuzk_counters_read(e, words, 8, NULL, ERR), CUZK_EINVAL, "words_out");
  char small[16];
  uint32_t len = 0;
  EXPECT(cuzk_status_json(e, small, sizeof small, &len, ERR), CUZK_ERANGE, "bytes");
  CHECK(len > sizeof small, "needed size reported (%u)", len);
  char *big = malloc(len);
  uint32_t len2 = 0;
  CHECK_RC(cuzk_status_json(e, big, len, &len2, ERR), CUZK_OK);
  CHECK(len2 + 1 == len || len2 < len, "ERANGE size (+NUL) is enough: %u then %u", len, len2);
  free(big);
  EXPECT(cuzk_status_json(e, small, sizeof small, NULL, ERR), CUZK_EINVAL, "len_out");
  /* queue limit */
  cuzk_engine *q = open_engine("{\"backend\":\"sim\",\"synthesis_concurrency\":1,\"queue_limit\":2,"
                               "\"sim\":{\"porep-c2\":{\"synth_ms\":60000}}}");
  uint64_t first = submit_job(q, CUZK_KIND_POREP_C2, -1, 1, 0, NULL);
  for (;;) { /* wait (event-driven) until the first job has started, so two can queue */
    event_log log = {0};
    CHECK_RC(cuzk_events_wait(q, 5000, ERR), CUZK_OK);
    drain_all(q, &log);
    int started = 0;
    for (size_t i = 0; i < log.n; i++) started |= log.ev[i].type == CUZK_EV_JOB_STARTED;
    event_log_free(&log);
    if (started) break;
  }
  submit_job(q, CUZK_KIND_POREP_C2, -1, 1, 0, NULL);
  submit_job(q, CUZK_KIND_POREP_C2, -1, 1, 0, NULL);
  EXPECT(cuzk_submit(q, CUZK_KIND_POREP_C2, -1, 1, 0, NULL, &job, ERR), CUZK_EFULL, "queue full");
  CHECK_RC(cuzk_cancel(q, first, ERR), CUZK_OK);
  close_engine(&q); /* cancels the queued sim jobs promptly */
  close_engine(&e);
}

void test_bad_input_proof_bytes(void) {
  uint32_t valid = 7;
  uint8_t p[24 + 64] = {0};
  EXPECT(cuzk_proof_verify(NULL, 88, "id", &valid, ERR), CUZK_EINVAL, "NULL");
  EXPECT(cuzk_proof_verify(p, 88, "id", NULL, ERR), CUZK_EINVAL, "valid");
  EXPECT(cuzk_proof_verify(p, 3, "id", &valid, ERR), CUZK_EINVAL, "header");
  EXPECT(cuzk_proof_verify(p, 88, "id", &valid, ERR), CUZK_EINVAL, "magic");
  memcpy(p, "CZKP", 4);
  EXPECT(cuzk_proof_verify(p, 88, "id", &valid, ERR), CUZK_EINVAL, "version");
  p[4] = 1;
  EXPECT(cuzk_proof_verify(p, 88, "id", &valid, ERR), CUZK_EINVAL, "version 1");
  p[4] = 2;
  EXPECT(cuzk_proof_verify(p, 88, "id", &valid, ERR), CUZK_EINVAL, "0 partitions");
  p[8] = 1;
  p[6] = 9;
  EXPECT(cuzk_proof_verify(p, 88, "id", &valid, ERR), CUZK_EINVAL, "kind 9");
  p[6] = 0;
  EXPECT(cuzk_proof_verify(p, 87, "id", &valid, ERR), CUZK_EINVAL, "length 87");
  p[8] = 0xff;
  p[9] = 0xff;
  EXPECT(cuzk_proof_verify(p, 88, "id", &valid, ERR), CUZK_EINVAL, "partitions");
  p[8] = 1;
  p[9] = 0;
  EXPECT(cuzk_proof_verify(p, 88, NULL, &valid, ERR), CUZK_EINVAL, "request_id");
  /* well-formed but meaningless: verifies as invalid, with a reason */
  g_err[0] = 0;
  CHECK_RC(cuzk_proof_verify(p, 88, "id", &valid, ERR), CUZK_OK);
  CHECK(valid == 0 && strstr(g_err, "partition 0"), "garbage proof invalid: %s", g_err);
  /* random garbage of many lengths never crashes */
  uint8_t junk[24 + 64 * 3];
  uint64_t x = 42;
  for (int round = 0; round < 2000; round++) {
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)((x = x * 6364136223846793005ull + 1) >> 56);
    if (round & 1) memcpy(junk, "CZKP\x02\x00", 6), junk[8] = (uint8_t)(round % 4), junk[9] = junk[10] = junk[11] = 0, junk[12] = junk[13] = junk[14] = junk[15] = 0;
    uint32_t len = (uint32_t)(round % sizeof junk);
    int rc = cuzk_proof_verify(junk, len, "job-1", &valid, ERR);
    CHECK(rc == CUZK_OK || rc == CUZK_EINVAL, "rc %d", rc);
    CHECK(rc != CUZK_OK || valid == 0, "garbage must not verify");
  }
}
