/* test_proofs.c — acceptance 1: every proof kind proves and verifies on 2 GPUs x 2
 * workers with concurrent jobs; a corrupted proof fails verification; a cancelled job
 * frees its workers and memory; priority is honoured (WinningPoSt overtakes queued PoReps). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../src/ntt.h"
#include "../src/proof.h"
#include "../src/quotient.h"
#include "../src/circuit.h"

static char cfg_buf[1024];
static const char *cfg_2x2(const char *extra) {
  snprintf(cfg_buf, sizeof cfg_buf,
           "{\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":2,"
           "\"sizes\":{\"porep-c2\":%u,\"snap-update\":%u,\"window-post\":%u,"
           "\"winning-post\":%u}%s%s}",
           tsize(12, 9), tsize(11, 8), tsize(12, 9), tsize(11, 8), extra ? "," : "",
           extra ? extra : "");
  return cfg_buf;
}

void test_every_kind_proves_and_verifies(void) {
  cuzk_engine *e = open_engine(cfg_2x2(NULL));
  uint64_t jobs[CUZK_KIND_COUNT * 2];
  uint32_t total_parts = 0;
  for (int rep = 0; rep < 2; rep++)
    for (uint32_t k = 0; k < CUZK_KIND_COUNT; k++) {
      char id[64];
      snprintf(id, sizeof id, "%s-rep%d", cuzk_kind_name(k), rep);
      jobs[rep * CUZK_KIND_COUNT + k] = submit_job(e, k, -1, 0, 0, id);
    }
  const uint32_t want_parts[CUZK_KIND_COUNT] = {10, 16, 1, 1};
  for (int i = 0; i < CUZK_KIND_COUNT * 2; i++) {
    cuzk_proof_result r = await_job(e, jobs[i]);
    uint32_t k = (uint32_t)i % CUZK_KIND_COUNT;
    CHECK(r.outcome == CUZK_OUTCOME_COMPLETED, "%s job failed: %s", cuzk_kind_name(k), r.error);
    CHECK(r.kind == k && r.partitions == want_parts[k], "%s: %u partitions", cuzk_kind_name(k),
          r.partitions);
    CHECK(r.failed_partition == UINT32_MAX && r.error[0] == 0, "no failure expected");
    CHECK(r.synth_ns > 0 && r.gpu_ns > 0 && r.total_ns >= r.queue_wait_ns, "timings");
    CHECK(r.proof_len == PROOF_HEADER_BYTES + PROOF_PARTITION_BYTES * r.partitions,
          "proof length %u", r.proof_len);
    CHECK(verify_job(e, jobs[i]) == 1, "%s proof must verify: %s", cuzk_kind_name(k), g_err);
    char id[300];
    CHECK_RC(cuzk_job_id(e, jobs[i], id, sizeof id, ERR), CUZK_OK);
    CHECK(strstr(id, cuzk_kind_name(k)) == id, "job id round trip: %s", id);
    total_parts += r.partitions;
  }
  uint32_t words;
  uint64_t *c = read_counters(e, &words);
  uint64_t worker_parts = 0, acquires[2];
  const uint64_t *g = c + CUZK_CTR_HDR_WORDS + CUZK_KIND_COUNT * CUZK_CTR_KIND_WORDS;
  const uint64_t *w = g + 2 * CUZK_CTR_GPU_WORDS;
  for (int i = 0; i < 4; i++) worker_parts += w[i * CUZK_CTR_WORKER_WORDS + CUZK_CTRW_PARTITIONS];
  for (int i = 0; i < 2; i++) acquires[i] = g[i * CUZK_CTR_GPU_WORDS + CUZK_CTRG_LOCK_ACQUIRES];
  CHECK(worker_parts == total_parts, "workers took back %llu of %u partitions",
        (unsigned long long)worker_parts, total_parts);
  CHECK(acquires[0] + acquires[1] == total_parts, "one kernel-lock acquire per partition");
  for (uint32_t k = 0; k < CUZK_KIND_COUNT; k++) {
    const uint64_t *kc = c + CUZK_CTR_HDR_WORDS + k * CUZK_CTR_KIND_WORDS;
    CHECK(kc[CUZK_CTRK_PROOFS_COMPLETED] == 2 && kc[CUZK_CTRK_PARTS_COMPLETED] == 2 * want_parts[k],
          "%s counters", cuzk_kind_name(k));
  }
  test_note("%u partitions over 2 GPUs (lock acquires %llu / %llu), all proofs verify",
            total_parts, (unsigned long long)acquires[0], (unsigned long long)acquires[1]);
  free(c);
  close_engine(&e);
}

void test_corrupted_proof_fails(void) {
  cuzk_engine *e = open_engine(cfg_2x2("\"faults\":{\"corrupt_proof_nth\":2}"));
  for (int i = 1; i <= 3; i++) {
    uint64_t j = submit_job(e, CUZK_KIND_SNAP_UPDATE, -1, 3, 0, NULL);
    cuzk_proof_result r = await_job(e, j);
    CHECK(r.outcome == CUZK_OUTCOME_COMPLETED, "job %d: %s", i, r.error);
    uint32_t valid = verify_job(e, j);
    if (i == 2) {
      CHECK(valid == 0, "the corrupted (2nd) proof must fail verification");
      CHECK(strstr(g_err, "partition 0") && strstr(g_err, "H(s)"), "reason: %s", g_err);
      test_note("corrupted proof rejected: %s", g_err);
    } else {
      CHECK(valid == 1, "proof %d must verify: %s", i, g_err);
    }
  }
  close_engine(&e);
}

static uint64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static void wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The check A(s)B(s) - C(s) = H(s)(s^n - 1) alone can be met without computing H: pick any
 * H digest, derive s from it, evaluate the (public) witness at s and solve for H(s). The
 * verifier must see that H is not the quotient of the witness. */
void test_forged_quotient_rejected(void) {
  cuzk_engine *e = open_engine(cfg_2x2(NULL));
  uint64_t j = submit_job(e, CUZK_KIND_WINNING_POST, -1, 1, 0, NULL);
  CHECK(await_job(e, j).outcome == CUZK_OUTCOME_COMPLETED, "proof");
  uint32_t len = 0;
  CHECK_RC(cuzk_proof_copy(e, j, NULL, 0, &len, ERR), CUZK_ERANGE);
  uint8_t *buf = malloc(len);
  CHECK(buf != NULL, "alloc");
  CHECK_RC(cuzk_proof_copy(e, j, buf, len, &len, ERR), CUZK_OK);
  char id[MAX_ID_BYTES];
  CHECK_RC(cuzk_job_id(e, j, id, sizeof id, ERR), CUZK_OK);
  uint64_t job_seed = circuit_job_seed(id, strlen(id), j);
  uint32_t valid = 0;
  CHECK_RC(cuzk_proof_verify(buf, len, id, &valid, ERR), CUZK_OK);
  CHECK(valid == 1, "the honest proof verifies: %s", g_err);

  uint8_t *p = buf + PROOF_HEADER_BYTES;
  unsigned log2n = p[4] | (unsigned)p[5] << 8;
  uint64_t seed = rd64(p + 8);
  size_t n = (size_t)1 << log2n;
  gl_t *a = malloc(3 * n * sizeof(gl_t)), *b = a + n, *c = a + 2 * n;
  CHECK(a != NULL, "alloc");
  circuit_synthesize(seed, log2n, a, b, c, NULL);
  ntt_plan plan;
  CHECK(ntt_plan_init(&plan, log2n) == 0, "plan");
  ntt_inverse(&plan, a);
  ntt_inverse(&plan, b);
  ntt_inverse(&plan, c);
  uint64_t digest = 0x1234;
  gl_t s = proof_challenge(CUZK_KIND_WINNING_POST, 0, log2n, seed, job_seed, digest);
  gl_t as = poly_eval(a, n, s), bs = poly_eval(b, n, s), cs = poly_eval(c, n, s);
  gl_t hs = gl_mul(gl_sub(gl_mul(as, bs), cs), gl_inv(gl_sub(gl_pow(s, n), 1)));
  wr64(p + 16, s);
  wr64(p + 24, as);
  wr64(p + 32, bs);
  wr64(p + 40, cs);
  wr64(p + 48, hs);
  wr64(p + 56, digest);
  CHECK_RC(cuzk_proof_verify(buf, len, id, &valid, ERR), CUZK_OK);
  CHECK(valid == 0, "a proof whose H was never computed must not verify");
  CHECK(strstr(g_err, "not the quotient") != NULL, "reason: %s", g_err);
  test_note("forged H rejected: %s", g_err);
  ntt_plan_free(&plan);
  free(a);
  free(buf);
  close_engine(&e);
}

/* Waits (event-driven) until job has a partition on a worker; returns its event log. */
static void wait_worker_busy(cuzk_engine *e, uint64_t job, event_log *log) {
  uint64_t deadline = now_ns() + 60000000000ull;
  for (;;) {
    size_t from = log->n;
    drain_all(e, log);
    for (size_t i = from; i < log->n; i++)
      if (log->ev[i].type == CUZK_EV_WORKER && log->ev[i].job == job && log->ev[i].aux == 1)
        return;
    CHECK(now_ns() < deadline, "job never reached a worker");
    int rc = cuzk_events_wait(e, 1000, ERR);
    CHECK(rc == CUZK_OK || rc == CUZK_ETIMEDOUT, "events_wait: %s", g_err);
  }
}

void test_cancel_frees_workers_and_memory(void) {
  cuzk_engine *e = open_engine(cfg_2x2(NULL));
  unsigned big = tsize(15, 11);
  uint64_t a = submit_job(e, CUZK_KIND_POREP_C2, -1, 32, big, "porep-to-cancel");
  uint64_t b = submit_job(e, CUZK_KIND_POREP_C2, -1, 0, big, "porep-queued-cancel");
  event_log log = {0};
  wait_worker_busy(e, a, &log);
  CHECK_RC(cuzk_cancel(e, b, ERR), CUZK_OK); /* queued behind a (or just started) */
  CHECK_RC(cuzk_cancel(e, a, ERR), CUZK_OK); /* partitions on workers right now */
  cuzk_proof_result ra = await_job(e, a), rb = await_job(e, b);
  CHECK(ra.outcome == CUZK_OUTCOME_CANCELLED && strstr(ra.error, "cancelled"), "a: %u %s",
        ra.outcome, ra.error);
  CHECK(rb.outcome == CUZK_OUTCOME_CANCELLED, "b: %u %s", rb.outcome, rb.error);
  CHECK(ra.gpu_ns > 0, "a had GPU time before the cancel");
  CHECK_RC(cuzk_cancel(e, a, ERR), CUZK_OK); /* finished: no effect */
  uint32_t len;
  CHECK_RC(cuzk_proof_copy(e, a, NULL, 0, &len, ERR), CUZK_EINVAL);
  CHECK(strstr(g_err, "cancelled"), "proof_copy of a cancelled job: %s", g_err);

  json_value *s = snapshot(e);
  const json_value *ws = jget(s, "gpu_workers");
  CHECK(ws->count == 4, "4 workers");
  for (size_t i = 0; i < ws->count; i++)
    CHECK(strcmp(jstr(&ws->items[i], "state"), "idle") == 0 && jis_null(&ws->items[i], "current_job"),
          "worker %zu must be idle after the cancel", i);
  CHECK(jint(jget(s, "memory"), "used_bytes") == 0, "memory must be released");
  CHECK(jint(jget(s, "counters"), "queue_depth") == 0, "queue emptied");
  const json_value *pl = jget(s, "pipelines");
  size_t failed = 0;
  for (size_t p = 0; p < pl->count; p++) {
    CHECK(strcmp(jstr(&pl->items[p], "outcome"), "cancelled") == 0, "outcome");
    const json_value *parts = jget(&pl->items[p], "partitions");
    for (size_t i = 0; i < parts->count; i++) {
      const char *st = jstr(&parts->items[i], "state");
      CHECK(!strcmp(st, "done") || !strcmp(st, "failed"), "partition left in %s", st);
      failed += !strcmp(st, "failed");
    }
  }
  CHECK(failed > 0, "cancelled partitions must show as failed (%zu)", failed);
  json_free(s);
  uint32_t words;
  uint64_t *c = read_counters(e, &words);
  CHECK(c[CUZK_CTR_MEM_USED] == 0, "counter memory used");
  const uint64_t *kc = c + CUZK_CTR_HDR_WORDS + CUZK_KIND_POREP_C2 * CUZK_CTR_KIND_WORDS;
  CHECK(kc[CUZK_CTRK_PROOFS_CANCELLED] == 2 && kc[CUZK_CTRK_PROOFS_FAILED] == 0,
        "2 cancelled, 0 failed");
  CHECK(kc[CUZK_CTRK_PARTS_FAILED] == 0, "abandoned partitions are not failures");
  const uint64_t *w = c + CUZK_CTR_HDR_WORDS + CUZK_KIND_COUNT * CUZK_CTR_KIND_WORDS +
                      2 * CUZK_CTR_GPU_WORDS;
  for (int i = 0; i < 4; i++) CHECK(w[i * CUZK_CTR_WORKER_WORDS + CUZK_CTRW_BUSY] == 0, "busy");
  free(c);
  /* abandoned partitions carry the flag in their events */
  drain_all(e, &log);
  size_t abandoned = 0;
  for (size_t i = 0; i < log.n; i++)
    if (log.ev[i].type == CUZK_EV_PARTITION && log.ev[i].aux == CUZK_PART_FAILED)
      abandoned += (log.ev[i].flags & CUZK_EVF_ABANDONED) != 0;
  CHECK(abandoned == failed, "%zu abandoned events for %zu failed partitions", abandoned, failed);
  event_log_free(&log);
  /* the engine still works afterwards */
  uint64_t j = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, NULL);
  CHECK(await_job(e, j).outcome == CUZK_OUTCOME_COMPLETED && verify_job(e, j) == 1, "after cancel");
  close_engine(&e);
}

/* Deterministic timing with the sim backend: b is certainly still queued when cancelled,
 * and a's partitions are inside 5-second GPU stages, which the cancel cuts short. */
void test_cancel_queued_and_in_flight_sim(void) {
  cuzk_engine *e = open_engine("{\"backend\":\"sim\",\"gpus\":2,\"workers_per_gpu\":2,"
                               "\"sim\":{\"porep-c2\":{\"synth_ms\":20,\"gpu_ms\":5000}}}");
  uint64_t a = submit_job(e, CUZK_KIND_POREP_C2, -1, 64, 0, "sim-running");
  uint64_t b = submit_job(e, CUZK_KIND_POREP_C2, -1, 0, 0, "sim-queued");
  event_log log = {0};
  wait_worker_busy(e, a, &log);
  uint64_t t0 = now_ns();
  CHECK_RC(cuzk_cancel(e, b, ERR), CUZK_OK);
  CHECK_RC(cuzk_cancel(e, a, ERR), CUZK_OK);
  cuzk_proof_result ra = await_job(e, a), rb = await_job(e, b);
  double ms = (now_ns() - t0) / 1e6;
  CHECK(ra.outcome == CUZK_OUTCOME_CANCELLED && rb.outcome == CUZK_OUTCOME_CANCELLED, "outcomes");
  CHECK(ms < 1000, "cancel must cut the 5 s GPU stages short (took %.1f ms)", ms);
  CHECK(rb.queue_wait_ns == rb.total_ns && rb.synth_ns == 0 && rb.gpu_ns == 0,
        "b was cancelled while queued");
  CHECK(ra.gpu_ns > 0 && ra.gpu_ns < 4 * 1000000000ull, "a's GPU stages were cut short");
  json_value *s = snapshot(e);
  const json_value *ws = jget(s, "gpu_workers");
  for (size_t i = 0; i < ws->count; i++)
    CHECK(!strcmp(jstr(&ws->items[i], "state"), "idle"), "worker %zu idle", i);
  CHECK(jint(jget(s, "memory"), "used_bytes") == 0 && jint(jget(s, "counters"), "queue_depth") == 0,
        "memory and queue released");
  const json_value *pb = jget(&jget(s, "pipelines")->items[1], "partitions");
  for (size_t i = 0; i < pb->count; i++)
    CHECK(!strcmp(jstr(&pb->items[i], "state"), "failed") && jis_null(&pb->items[i], "synth_ms"),
          "queued partitions fail without ever starting");
  json_free(s);
  test_note("cancelled a queued job and a job with GPU stages in flight in %.2f ms", ms);
  event_log_free(&log);
  close_engine(&e);
}

static size_t find_event(const event_log *log, uint16_t type, uint64_t job, uint32_t aux,
                         int match_aux) {
  for (size_t i = 0; i < log->n; i++)
    if (log->ev[i].type == type && log->ev[i].job == job && (!match_aux || log->ev[i].aux == aux))
      return i;
  return SIZE_MAX;
}

void test_priority_winning_first(void) {
  /* One synthesis slot and 10 ms syntheses (sim backend): each PoRep keeps the slot for
   * ~100 ms, so PoReps 2..5 are still queued when the WinningPoSt arrives, however slowly
   * this thread runs (sanitizers, a loaded machine). Scheduling is backend-independent. */
  cuzk_engine *e = open_engine(
      "{\"backend\":\"sim\",\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":1,"
      "\"sim\":{\"porep-c2\":{\"synth_ms\":10,\"gpu_ms\":1,\"finalize_ms\":1,\"jitter\":0},"
      "\"winning-post\":{\"synth_ms\":1,\"gpu_ms\":1,\"finalize_ms\":1,\"jitter\":0}}}");
  enum { NP = 5 };
  uint64_t porep[NP];
  for (int i = 0; i < NP; i++) porep[i] = submit_job(e, CUZK_KIND_POREP_C2, -1, 0, 0, NULL);
  uint64_t win = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, "winning-behind-poreps");
  CHECK(await_job(e, win).outcome == CUZK_OUTCOME_COMPLETED, "winning");
  for (int i = 0; i < NP; i++) await_job(e, porep[i]);
  event_log log = {0};
  drain_all(e, &log);
  CHECK(log.dropped == 0, "no overflow expected");
  size_t win_queued = find_event(&log, CUZK_EV_JOB_QUEUED, win, 0, 0);
  size_t win_started = find_event(&log, CUZK_EV_JOB_STARTED, win, 0, 0);
  size_t win_gpu = find_event(&log, CUZK_EV_PARTITION, win, CUZK_PART_GPU, 1);
  CHECK(win_queued != SIZE_MAX && win_started != SIZE_MAX && win_gpu != SIZE_MAX, "events");
  CHECK(log.ev[win_queued].value == 100, "winning default priority 100 (got %llu)",
        (unsigned long long)log.ev[win_queued].value);
  int overtaken = 0;
  for (int i = 0; i < NP; i++) {
    size_t st = find_event(&log, CUZK_EV_JOB_STARTED, porep[i], 0, 0);
    CHECK(st != SIZE_MAX, "porep %d started", i);
    if (st < win_queued) continue; /* already running when the WinningPoSt arrived */
    overtaken++;
    CHECK(win_started < st, "WinningPoSt must start before porep %d queued ahead of it", i);
  }
  /* GPU side: once the WinningPoSt partition is synthesized, the very next hand-off to a
   * worker is that partition, whatever else is waiting */
  size_t win_ready = find_event(&log, CUZK_EV_PARTITION, win, CUZK_PART_SYNTH_DONE, 1);
  CHECK(win_ready != SIZE_MAX && win_ready < win_gpu, "synth_done before gpu");
  for (size_t i = win_ready + 1; i < win_gpu; i++)
    CHECK(!(log.ev[i].type == CUZK_EV_PARTITION && log.ev[i].aux == CUZK_PART_GPU),
          "job %llu was handed to a worker while the WinningPoSt waited",
          (unsigned long long)log.ev[i].job);
  CHECK(overtaken > 0, "at least one PoRep must still have been queued (test not vacuous)");
  test_note("WinningPoSt overtook %d queued PoRep jobs", overtaken);
  event_log_free(&log);
  close_engine(&e);
}

/* The smallest circuits (2, 4, 8 constraints) go through the whole pipeline and verify. */
void test_smallest_sizes_verify(void) {
  cuzk_engine *e = open_engine("{\"gpus\":2}");
  uint64_t jobs[CUZK_KIND_COUNT * 3];
  int n = 0;
  for (uint32_t log2 = 1; log2 <= 3; log2++)
    for (uint32_t k = 0; k < CUZK_KIND_COUNT; k++) jobs[n++] = submit_job(e, k, -1, 2, log2, NULL);
  for (int i = 0; i < n; i++) {
    cuzk_proof_result r = await_job(e, jobs[i]);
    CHECK(r.outcome == CUZK_OUTCOME_COMPLETED && r.partitions == 2, "job %d: %s", i, r.error);
    CHECK(verify_job(e, jobs[i]) == 1, "2^%d proof must verify: %s", 1 + i / CUZK_KIND_COUNT, g_err);
  }
  close_engine(&e);
}
