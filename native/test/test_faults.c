/* test_faults.c — fault injection (n-th / rate partition failures fail their job with a
 * message naming the partition) and the memory budget (synthesis waits; never exceeded). */
#include <string.h>

#include "harness.h"

void test_fault_fail_partition_nth(void) {
  char cfg[256];
  snprintf(cfg, sizeof cfg,
           "{\"gpus\":2,\"workers_per_gpu\":2,\"faults\":{\"fail_partition_nth\":3},"
           "\"sizes\":{\"porep-c2\":%u,\"winning-post\":8}}", tsize(11, 8));
  cuzk_engine *e = open_engine(cfg);
  uint64_t j = submit_job(e, CUZK_KIND_POREP_C2, -1, 0, 0, "porep-f01234-s000777-3");
  cuzk_proof_result r = await_job(e, j);
  CHECK(r.outcome == CUZK_OUTCOME_FAILED, "outcome %u", r.outcome);
  CHECK(r.failed_partition < 10, "failed partition index %u", r.failed_partition);
  char want[64];
  snprintf(want, sizeof want, "partition %u failed", r.failed_partition);
  CHECK(strstr(r.error, want) && strstr(r.error, "fail_partition_nth"), "error: %s", r.error);
  uint32_t n;
  CHECK_RC(cuzk_proof_copy(e, j, NULL, 0, &n, ERR), CUZK_EINVAL);
  json_value *s = snapshot(e);
  const json_value *job = &jget(s, "pipelines")->items[0];
  CHECK(!strcmp(jstr(job, "outcome"), "failed"), "snapshot outcome");
  const json_value *part = &jget(job, "partitions")->items[r.failed_partition];
  CHECK(!strcmp(jstr(part, "state"), "failed") && !jis_null(part, "gpu_ms"), "failed partition shown");
  CHECK(jint(jget(jget(s, "counters"), "failed_by_kind"), "porep-c2") == 1 &&
            jint(jget(s, "counters"), "total_failed") == 1,
        "failed counters");
  CHECK(jint(jget(s, "memory"), "used_bytes") == 0, "memory released");
  json_free(s);
  uint32_t words;
  uint64_t *c = read_counters(e, &words);
  const uint64_t *kc = c + CUZK_CTR_HDR_WORDS;
  CHECK(kc[CUZK_CTRK_PARTS_FAILED] == 1 && kc[CUZK_CTRK_PROOFS_FAILED] == 1, "counters");
  free(c);
  /* only the n-th: the next job is fine */
  j = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, NULL);
  CHECK(await_job(e, j).outcome == CUZK_OUTCOME_COMPLETED && verify_job(e, j) == 1, "next job");
  test_note("%s", r.error);
  close_engine(&e);
}

void test_fault_fail_partition_rate(void) {
  cuzk_engine *e = open_engine("{\"faults\":{\"fail_partition_rate\":0.3,\"seed\":11},"
                               "\"sizes\":{\"winning-post\":6}}");
  int failed = 0, completed = 0;
  uint64_t jobs[40];
  for (int i = 0; i < 40; i++) jobs[i] = submit_job(e, CUZK_KIND_WINNING_POST, -1, 0, 0, NULL);
  for (int i = 0; i < 40; i++) {
    cuzk_proof_result r = await_job(e, jobs[i]);
    if (r.outcome == CUZK_OUTCOME_FAILED) {
      failed++;
      CHECK(strstr(r.error, "fail_partition_rate") && r.failed_partition == 0, "%s", r.error);
    } else {
      completed++;
      CHECK(verify_job(e, jobs[i]) == 1, "completed proofs verify");
    }
  }
  CHECK(failed > 0 && completed > 0, "rate 0.3 over 40 jobs: %d failed, %d completed", failed, completed);
  close_engine(&e);
  e = open_engine("{\"faults\":{\"fail_partition_rate\":1},\"sizes\":{\"snap-update\":6}}");
  uint64_t j = submit_job(e, CUZK_KIND_SNAP_UPDATE, -1, 0, 0, NULL);
  CHECK(await_job(e, j).outcome == CUZK_OUTCOME_FAILED, "rate 1 fails every job");
  close_engine(&e);
}

void test_memory_budget_waits_and_is_never_exceeded(void) {
  unsigned k = tsize(12, 9);
  uint64_t part = 3ull * 8 << k, budget = 3 * part;
  char cfg[256];
  snprintf(cfg, sizeof cfg,
           "{\"gpus\":1,\"workers_per_gpu\":1,\"synthesis_concurrency\":4,"
           "\"memory_budget_bytes\":%llu,\"sizes\":{\"snap-update\":%u}}",
           (unsigned long long)budget, k);
  cuzk_engine *e = open_engine(cfg);
  uint64_t j = submit_job(e, CUZK_KIND_SNAP_UPDATE, -1, 0, 0, NULL);
  CHECK(await_job(e, j).outcome == CUZK_OUTCOME_COMPLETED && verify_job(e, j) == 1, "job");
  event_log log = {0};
  drain_all(e, &log);
  uint64_t max_used = 0, max_synth = 0;
  for (size_t i = 0; i < log.n; i++) {
    if (log.ev[i].type == CUZK_EV_MEMORY) {
      CHECK(log.ev[i].value <= budget, "memory %llu over budget %llu",
            (unsigned long long)log.ev[i].value, (unsigned long long)budget);
      CHECK(log.ev[i].value % part == 0, "reservations are whole witnesses");
      if (log.ev[i].value > max_used) max_used = log.ev[i].value;
    }
    if (log.ev[i].type == CUZK_EV_SYNTH_ACTIVE && log.ev[i].value > max_synth) max_synth = log.ev[i].value;
  }
  CHECK(max_used == budget, "the budget must have been reached (max %llu of %llu)",
        (unsigned long long)max_used, (unsigned long long)budget);
  CHECK(max_synth <= 3, "never more syntheses than the budget allows (%llu)", (unsigned long long)max_synth);
  uint32_t words;
  uint64_t *c = read_counters(e, &words);
  CHECK(c[CUZK_CTR_MEM_USED] == 0 && c[CUZK_CTR_MEM_BUDGET] == budget, "released at the end");
  free(c);
  event_log_free(&log);
  test_note("budget %llu bytes = 3 witnesses of 2^%u; peak use %llu", (unsigned long long)budget,
            k, (unsigned long long)max_used);
  close_engine(&e);
}

/* faults.fail_synthesis_nth: the n-th synthesis fails its partition (not abandoned, no
 * worker) and aborts the job; the other partitions are abandoned; the next job is fine. */
void test_fault_fail_synthesis_nth(void) {
  char cfg[256];
  snprintf(cfg, sizeof cfg,
           "{\"gpus\":1,\"workers_per_gpu\":2,\"synthesis_concurrency\":1,"
           "\"faults\":{\"fail_synthesis_nth\":2},\"sizes\":{\"snap-update\":%u}}", tsize(10, 7));
  cuzk_engine *e = open_engine(cfg);
  uint64_t j = submit_job(e, CUZK_KIND_SNAP_UPDATE, -1, 4, 0, "snap-1000-7");
  cuzk_proof_result r = await_job(e, j);
  CHECK(r.outcome == CUZK_OUTCOME_FAILED && r.failed_partition == 1, "outcome %u partition %u",
        r.outcome, r.failed_partition);
  CHECK(strstr(r.error, "partition 1 failed") && strstr(r.error, "fail_synthesis_nth = 2"), "error: %s",
        r.error);
  event_log log = {0};
  drain_all(e, &log);
  int own = 0, abandoned = 0;
  for (size_t i = 0; i < log.n; i++) {
    const cuzk_event *ev = &log.ev[i];
    if (ev->type != CUZK_EV_PARTITION || ev->job != j || ev->aux != CUZK_PART_FAILED) continue;
    if (ev->flags & CUZK_EVF_ABANDONED) abandoned++;
    else {
      own++;
      CHECK(ev->partition == 1 && ev->worker == 0xffff, "synthesis failure: no worker");
    }
  }
  CHECK(own == 1 && abandoned >= 1, "one own failure (%d), abandoned siblings (%d)", own, abandoned);
  event_log_free(&log);
  uint32_t words;
  uint64_t *c = read_counters(e, &words);
  const uint64_t *kc = c + CUZK_CTR_HDR_WORDS + CUZK_KIND_SNAP_UPDATE * CUZK_CTR_KIND_WORDS;
  CHECK(kc[CUZK_CTRK_PARTS_FAILED] == 1 && kc[CUZK_CTRK_PROOFS_FAILED] == 1, "counters");
  CHECK(c[CUZK_CTR_MEM_USED] == 0, "memory released");
  free(c);
  j = submit_job(e, CUZK_KIND_SNAP_UPDATE, -1, 4, 0, NULL);
  CHECK(await_job(e, j).outcome == CUZK_OUTCOME_COMPLETED && verify_job(e, j) == 1, "next job");
  close_engine(&e);
}

/* faults.fail_aborts_job = false: the failed partition fails its job, but its siblings run
 * to the end (none abandoned) and the job ends failed when they are all done. */
void test_fault_fail_without_abort(void) {
  char cfg[256];
  snprintf(cfg, sizeof cfg,
           "{\"gpus\":1,\"workers_per_gpu\":2,\"faults\":{\"fail_partition_nth\":2,"
           "\"fail_aborts_job\":false},\"sizes\":{\"porep-c2\":%u}}", tsize(10, 7));
  cuzk_engine *e = open_engine(cfg);
  uint64_t j = submit_job(e, CUZK_KIND_POREP_C2, -1, 6, 0, "porep-1000-9");
  cuzk_proof_result r = await_job(e, j);
  CHECK(r.outcome == CUZK_OUTCOME_FAILED && r.failed_partition < 6, "outcome %u", r.outcome);
  CHECK(strstr(r.error, "fail_partition_nth"), "error: %s", r.error);
  event_log log = {0};
  drain_all(e, &log);
  int done = 0, failed = 0, abandoned = 0;
  for (size_t i = 0; i < log.n; i++) {
    const cuzk_event *ev = &log.ev[i];
    if (ev->type != CUZK_EV_PARTITION || ev->job != j) continue;
    if (ev->aux == CUZK_PART_DONE) done++;
    if (ev->aux == CUZK_PART_FAILED) (ev->flags & CUZK_EVF_ABANDONED) ? abandoned++ : failed++;
  }
  CHECK(done == 5 && failed == 1 && abandoned == 0, "done %d failed %d abandoned %d", done, failed,
        abandoned);
  event_log_free(&log);
  uint32_t n;
  CHECK_RC(cuzk_proof_copy(e, j, NULL, 0, &n, ERR), CUZK_EINVAL);
  uint32_t words;
  uint64_t *c = read_counters(e, &words);
  const uint64_t *kc = c + CUZK_CTR_HDR_WORDS;
  CHECK(kc[CUZK_CTRK_PARTS_FAILED] == 1 && kc[CUZK_CTRK_PARTS_COMPLETED] == 5 &&
            kc[CUZK_CTRK_PROOFS_FAILED] == 1 && kc[CUZK_CTRK_PROOFS_COMPLETED] == 0,
        "counters");
  free(c);
  close_engine(&e);
}
