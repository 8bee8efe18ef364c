/* test_invariant.c — acceptance: continuous snapshots during a mixed workload with split
 * proving on (the finalize tail runs while the worker already owns its next partition)
 * never show a partition in gpu/finalizing whose worker is idle, nor partitions in gpu
 * while no worker is busy; the split-proving window (a finalizing partition whose worker
 * owns a newer one) is observed, so the check is not vacuous. With the historical bug
 * injected the same checks fire within a bounded number of snapshots: "clobber" (the
 * finalizer clears the worker unconditionally) breaks ownership, "skip" (workers never
 * marked busy for the kind) breaks the count. */
#include <string.h>

#include "harness.h"
#include "invariant.h"

typedef struct run_stats {
  int snapshots, with_gpu, violations, count_violations, owner_violations, structure;
  int snap_violations, max_busy, split_window, finalizing;
  char first[256];
} run_stats;

static void submit_mix(cuzk_engine *e, uint64_t *jobs, int *n, int snap_only) {
  static const uint32_t mix[] = {CUZK_KIND_POREP_C2,    CUZK_KIND_SNAP_UPDATE,
                                 CUZK_KIND_WINNING_POST, CUZK_KIND_WINDOW_POST,
                                 CUZK_KIND_SNAP_UPDATE, CUZK_KIND_WINNING_POST,
                                 CUZK_KIND_WINDOW_POST,  CUZK_KIND_POREP_C2};
  for (size_t i = 0; i < sizeof mix / sizeof *mix; i++) {
    uint32_t kind = snap_only ? CUZK_KIND_SNAP_UPDATE : mix[i];
    char id[96];
    /* long ids with a shared prefix: identity must never come from a truncated id */
    snprintf(id, sizeof id, "ps-snap-%s-7f3a9c2e-41d8-4b6a-9a0e-%012zu", cuzk_kind_name(kind), i);
    jobs[(*n)++] = submit_job(e, kind, -1, 0, 0, id);
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
static void watch(cuzk_engine *e, const uint64_t *jobs, int n, run_stats *st,
                  int stop_on_violation) {
  for (;;) {
    int done = all_done(e, jobs, n);
    json_value *s = snapshot(e);
    inv_report r;
    check_invariant(s, &r);
    json_free(s);
    st->snapshots++;
    st->with_gpu += r.gpu_partitions > 0;
    st->finalizing += r.finalizing > 0;
    st->split_window += r.finalizing_not_owned > 0;
    if (r.busy_workers > st->max_busy) st->max_busy = r.busy_workers;
    if (r.violations && !st->violations) memcpy(st->first, r.first, sizeof st->first);
    st->violations += r.violations;
    st->count_violations += r.count_violations;
    st->owner_violations += r.owner_violations;
    st->structure += r.structure_violations;
    st->snap_violations += r.snap_violations;
    if (done || (stop_on_violation && st->violations)) return;
  }
}

/* sim: kernels and tails as sleeps in production's ratio (tail ~0.7 of the kernels), short
 * enough for a test; cpu: real kernels and a real tail */
static const char *config(int sim, const char *faults) {
  static char buf[1024];
  if (sim)
    snprintf(buf, sizeof buf,
             "{\"backend\":\"sim\",\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":4,"
             "\"sim\":{\"porep-c2\":{\"synth_ms\":6,\"gpu_ms\":4,\"finalize_ms\":3},"
             "\"snap-update\":{\"synth_ms\":4,\"gpu_ms\":3,\"finalize_ms\":2},"
             "\"window-post\":{\"synth_ms\":5,\"gpu_ms\":5,\"finalize_ms\":3},"
             "\"winning-post\":{\"synth_ms\":2,\"gpu_ms\":2,\"finalize_ms\":1}}%s%s%s}",
             faults ? ",\"faults\":{" : "", faults ? faults : "", faults ? "}" : "");
  else
    snprintf(buf, sizeof buf,
             "{\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":2,\"finalize_passes\":6,"
             "\"sizes\":{\"porep-c2\":%u,\"snap-update\":%u,\"window-post\":%u,\"winning-post\":%u}"
             "%s%s%s}",
             tsize(12, 9), tsize(12, 9), tsize(13, 10), tsize(11, 9),
             faults ? ",\"faults\":{" : "", faults ? faults : "", faults ? "}" : "");
  return buf;
}

static void healthy(int sim, int rounds) {
  cuzk_engine *e = open_engine(config(sim, NULL));
  uint64_t jobs[64];
  int n = 0;
  run_stats st = {0};
  for (int round = 0; round < rounds; round++) {
    submit_mix(e, jobs, &n, 0);
    watch(e, jobs, n, &st, 0);
  }
  CHECK(st.violations == 0, "%s: invariant violated %d times (count %d, owner %d, structure %d); "
        "first: %s", sim ? "sim" : "cpu", st.violations, st.count_violations,
        st.owner_violations, st.structure, st.first);
  CHECK(st.with_gpu > 0, "no snapshot caught a partition on the GPU (%d snapshots): vacuous",
        st.snapshots);
  for (int i = 0; i < n; i++) {
    cuzk_proof_result r = await_job(e, jobs[i]);
    CHECK(r.outcome == CUZK_OUTCOME_COMPLETED, "job %d: %s", i, r.error);
    if (!sim) CHECK(verify_job(e, jobs[i]) == 1, "job %d: %s", i, g_err);
  }
  test_note("%s: %d snapshots, %d with partitions on the GPU (up to %d busy workers), %d with "
            "a partition finalizing, %d with a finalizing partition whose worker owns a newer "
            "one; 0 violations",
            sim ? "sim" : "cpu", st.snapshots, st.with_gpu, st.max_busy, st.finalizing,
            st.split_window);
  if (sim)
    CHECK(st.split_window > 0,
          "the split-proving window (finalizing while the worker owns a newer partition) "
          "was never observed: the test would not see the clobber either");
  close_engine(&e);
}

void test_invariant_holds_on_continuous_snapshots(void) {
  healthy(1, 3);
  healthy(0, 2);
}

/* The bound: the fault must show within this many snapshots (each snapshot takes well
 * under a millisecond; a round of the mix keeps the GPUs busy for ~100 ms of sim time). */
#define FAULT_BOUND_SNAPSHOTS 100000

static run_stats run_fault(const char *faults, int snap_only, int want_count) {
  cuzk_engine *e = open_engine(config(1, faults));
  uint64_t jobs[256];
  int n = 0;
  run_stats st = {0};
  for (int round = 0; round < 20 && (want_count ? !st.count_violations : !st.owner_violations);
       round++) {
    submit_mix(e, jobs, &n, snap_only);
    for (;;) {
      watch(e, jobs, n, &st, 1);
      if ((want_count ? st.count_violations : st.owner_violations) || all_done(e, jobs, n)) break;
    }
  }
  for (int i = 0; i < n; i++) await_job(e, jobs[i]);
  /* the bug in the other views too */
  event_log log = {0};
  drain_all(e, &log);
  int snap_worker_events = 0;
  for (size_t i = 0; i < log.n; i++)
    snap_worker_events += log.ev[i].type == CUZK_EV_WORKER && log.ev[i].kind == CUZK_KIND_SNAP_UPDATE;
  event_log_free(&log);
  if (strstr(faults, "skip"))
    CHECK(snap_worker_events == 0, "skip: no CUZK_EV_WORKER for the fault-injected kind (%d)",
          snap_worker_events);
  else
    CHECK(snap_worker_events > 0, "clobber: the kind's workers are still marked busy");
  close_engine(&e);
  return st;
}

void test_invariant_detects_historical_bug(void) {
  /* clobber (the default mode): the finalizer of a snap-update partition clears its worker
   * although the worker already owns a newer partition — seen by ownership */
  run_stats c = run_fault("\"status_bug_kind\":\"snap-update\"", 0, 0);
  CHECK(c.owner_violations > 0 && c.snapshots <= FAULT_BOUND_SNAPSHOTS,
        "clobber: the ownership check must fire within %d snapshots (%d snapshots, %d owner "
        "violations)",
        FAULT_BOUND_SNAPSHOTS, c.snapshots, c.owner_violations);
  test_note("clobber detected by ownership after %d snapshots: %s", c.snapshots, c.first);
  /* skip: workers never marked busy for snap-update — seen by the count alone */
  run_stats k = run_fault("\"status_bug_kind\":\"snap-update\",\"status_bug_mode\":\"skip\"", 1, 1);
  CHECK(k.count_violations > 0 && k.snapshots <= FAULT_BOUND_SNAPSHOTS,
        "skip: the count check must fire within %d snapshots (%d snapshots)",
        FAULT_BOUND_SNAPSHOTS, k.snapshots);
  CHECK(k.snap_violations == k.owner_violations,
        "every ownership violation must involve snap-update (%d of %d)", k.snap_violations,
        k.owner_violations);
  test_note("skip detected by the count after %d snapshots: %s", k.snapshots, k.first);
}
