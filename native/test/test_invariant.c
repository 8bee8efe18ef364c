/* test_invariant.c — acceptance 2: continuous snapshots during a mixed workload never show
 * a partition in `gpu` without exactly one busy owner, nor a busy worker without one; with
 * the historical-bug fault on for snap-update, the same check reports the violation. */
#include <string.h>

#include "harness.h"
#include "invariant.h"

typedef struct run_stats {
  int snapshots, with_gpu, violations, snap_violations, max_busy;
  char first[256];
} run_stats;

static void submit_mix(cuzk_engine *e, uint64_t *jobs, int *n) {
  static const uint32_t mix[] = {CUZK_KIND_POREP_C2,    CUZK_KIND_SNAP_UPDATE,
                                 CUZK_KIND_WINNING_POST, CUZK_KIND_WINDOW_POST,
                                 CUZK_KIND_SNAP_UPDATE, CUZK_KIND_WINNING_POST,
                                 CUZK_KIND_WINDOW_POST,  CUZK_KIND_POREP_C2};
  for (size_t i = 0; i < sizeof mix / sizeof *mix; i++) {
    char id[96];
    /* long ids with a shared prefix: identity must never come from a truncated id */
    snprintf(id, sizeof id, "ps-snap-%s-7f3a9c2e-41d8-4b6a-9a0e-%012zu", cuzk_kind_name(mix[i]), i);
    jobs[(*n)++] = submit_job(e, mix[i], -1, 0, 0, id);
  }
}

static int all_done(cuzk_engine *e, const uint64_t *jobs, int n) {
  for (int i = 0; i < n; i++) {
    cuzk_proof_result r;
    int rc = cuzk_await(e, jobs[i], 0, &r, ERR);
    if (rc == CUZK_ETIMEDOUT) return 0;
    CHECK(rc == CUZK_OK, "await: %s", g_err);
  }
  return 1;
}

/* Polls snapshots until the workload finishes (or, with stop_on_violation, until the
 * check has failed once). */
static void watch(cuzk_engine *e, const uint64_t *jobs, int n, run_stats *st, int stop_on_violation) {
  for (;;) {
    int done = all_done(e, jobs, n);
    json_value *s = snapshot(e);
    inv_report r;
    check_invariant(s, &r);
    json_free(s);
    st->snapshots++;
    st->with_gpu += r.gpu_partitions > 0;
    if (r.busy_workers > st->max_busy) st->max_busy = r.busy_workers;
    if (r.violations && !st->violations) memcpy(st->first, r.first, sizeof st->first);
    st->violations += r.violations;
    st->snap_violations += r.snap_violations;
    if (done || (stop_on_violation && st->violations)) return;
  }
}

static const char *config(int bug) {
  static char buf[512];
  snprintf(buf, sizeof buf,
           "{\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":2,"
           "\"sizes\":{\"porep-c2\":%u,\"snap-update\":%u,\"window-post\":%u,\"winning-post\":%u}"
           "%s}",
           tsize(12, 9), tsize(12, 9), tsize(13, 10), tsize(11, 9),
           bug ? ",\"faults\":{\"status_bug_kind\":\"snap-update\"}" : "");
  return buf;
}

void test_invariant_holds_on_continuous_snapshots(void) {
  cuzk_engine *e = open_engine(config(0));
  uint64_t jobs[64];
  int n = 0;
  run_stats st = {0};
  for (int round = 0; round < 2; round++) {
    submit_mix(e, jobs, &n);
    watch(e, jobs, n, &st, 0);
  }
  CHECK(st.violations == 0, "invariant violated %d times; first: %s", st.violations, st.first);
  CHECK(st.with_gpu > 0, "no snapshot caught a partition on the GPU (%d snapshots): vacuous",
        st.snapshots);
  for (int i = 0; i < n; i++) {
    cuzk_proof_result r = await_job(e, jobs[i]);
    CHECK(r.outcome == CUZK_OUTCOME_COMPLETED && verify_job(e, jobs[i]) == 1, "job %d", i);
  }
  test_note("%d snapshots, %d with partitions on the GPU (up to %d busy workers), 0 violations",
            st.snapshots, st.with_gpu, st.max_busy);
  close_engine(&e);
}

void test_invariant_detects_historical_bug(void) {
  cuzk_engine *e = open_engine(config(1));
  uint64_t jobs[256];
  int n = 0;
  run_stats st = {0};
  for (int round = 0; round < 20 && st.violations == 0; round++) {
    submit_mix(e, jobs, &n);
    watch(e, jobs, n, &st, 1);
  }
  CHECK(st.violations > 0, "the check must report the injected status bug (%d snapshots)",
        st.snapshots);
  CHECK(st.snap_violations == st.violations,
        "every violation must involve snap-update (%d of %d); first: %s", st.snap_violations,
        st.violations, st.first);
  test_note("bug detected after %d snapshots: %s", st.snapshots, st.first);
  for (int i = 0; i < n; i++) await_job(e, jobs[i]);
  /* the bug in the other views: no worker events for snap jobs, and worker busy time is
   * exactly the GPU time of the other kinds */
  event_log log = {0};
  drain_all(e, &log);
  for (size_t i = 0; i < log.n; i++)
    CHECK(!(log.ev[i].type == CUZK_EV_WORKER && log.ev[i].kind == CUZK_KIND_SNAP_UPDATE),
          "no CUZK_EV_WORKER for the fault-injected kind");
  event_log_free(&log);
  uint32_t words;
  uint64_t *c = read_counters(e, &words);
  uint64_t busy = 0, other_gpu = 0, snap_gpu;
  const uint64_t *w = c + CUZK_CTR_HDR_WORDS + CUZK_KIND_COUNT * CUZK_CTR_KIND_WORDS +
                      2 * CUZK_CTR_GPU_WORDS;
  for (int i = 0; i < 4; i++) busy += w[i * CUZK_CTR_WORKER_WORDS + CUZK_CTRW_BUSY_NS];
  for (uint32_t k = 0; k < CUZK_KIND_COUNT; k++)
    if (k != CUZK_KIND_SNAP_UPDATE)
      other_gpu += c[CUZK_CTR_HDR_WORDS + k * CUZK_CTR_KIND_WORDS + CUZK_CTRK_GPU_NS];
  snap_gpu = c[CUZK_CTR_HDR_WORDS + CUZK_KIND_SNAP_UPDATE * CUZK_CTR_KIND_WORDS + CUZK_CTRK_GPU_NS];
  CHECK(busy == other_gpu && snap_gpu > 0, "busy %llu vs non-snap GPU %llu (snap %llu)",
        (unsigned long long)busy, (unsigned long long)other_gpu, (unsigned long long)snap_gpu);
  free(c);
  /* snap proofs are still correct: only the status is wrong */
  for (int i = 0; i < n; i++) CHECK(verify_job(e, jobs[i]) == 1, "job %d", i);
  close_engine(&e);
}
