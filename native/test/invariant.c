/* invariant.c — see invariant.h. */
#include "invariant.h"

#include <stdio.h>
#include <string.h>

#include "harness.h"

static void violation(inv_report *r, const char *fmt, long long a, long long b, long long c) {
  if (r->violations++ == 0) snprintf(r->first, sizeof r->first, fmt, a, b, c);
}

#define MAXW 64

void check_invariant(const json_value *snap, inv_report *r) {
  memset(r, 0, sizeof *r);
  const json_value *pl = jget(snap, "pipelines"), *ws = jget(snap, "gpu_workers");
  CHECK(ws->count <= MAXW, "too many workers");
  int busy[MAXW] = {0};
  int64_t own_job[MAXW], own_part[MAXW], own_gpu_ms[MAXW];
  for (size_t w = 0; w < ws->count; w++) {
    const json_value *wk = &ws->items[w];
    CHECK(jint(wk, "worker_id") == (int64_t)w, "workers in id order");
    busy[w] = strcmp(jstr(wk, "state"), "proving") == 0;
    r->busy_workers += busy[w];
    own_gpu_ms[w] = -1;
    if (!busy[w]) {
      CHECK(jis_null(wk, "current_job") && jis_null(wk, "busy_secs"), "idle worker fields");
      continue;
    }
    own_job[w] = jint(wk, "current_job_handle");
    own_part[w] = jint(wk, "current_partition");
  }
  /* newest unfinished partition per worker = smallest gpu_ms (ms resolution) */
  int64_t newest_ms[MAXW];
  for (size_t w = 0; w < MAXW; w++) newest_ms[w] = INT64_MAX;
  for (size_t p = 0; p < pl->count; p++) {
    const json_value *job = &pl->items[p];
    int64_t handle = jint(job, "job_handle");
    int is_snap = strcmp(jstr(job, "proof_kind"), "snap-update") == 0;
    const json_value *parts = jget(job, "partitions");
    for (size_t i = 0; i < parts->count; i++) {
      const json_value *pt = &parts->items[i];
      const json_value *fin = jget(pt, "finalizing");
      CHECK(fin->type == JSON_BOOL, "finalizing is a boolean");
      if (strcmp(jstr(pt, "state"), "gpu") != 0) {
        CHECK(!fin->boolean, "finalizing only on gpu partitions");
        continue;
      }
      r->gpu_partitions++;
      r->finalizing += fin->boolean;
      int64_t w = jint(pt, "worker_id");
      CHECK(w >= 0 && (size_t)w < ws->count, "a gpu partition names its worker");
      int64_t ms = jint(pt, "gpu_ms");
      if (ms < newest_ms[w]) newest_ms[w] = ms;
      int owned = busy[w] && own_job[w] == handle && own_part[w] == (int64_t)i;
      if (owned) {
        own_gpu_ms[w] = ms;
        CHECK(strcmp(jstr(&ws->items[w], "current_job"), jstr(job, "job_id")) == 0,
              "worker's current_job must be the full job id");
      }
      if (fin->boolean && !owned) r->finalizing_not_owned++;
      if (!busy[w]) {
        r->owner_violations++;
        r->snap_violations += is_snap;
        violation(r, "job %lld partition %lld is in gpu while its worker %lld is idle",
                  (long long)handle, (long long)i, (long long)w);
      } else if (!fin->boolean && !owned) {
        r->structure_violations++;
        violation(r, "job %lld partition %lld is in its kernels but worker %lld owns another",
                  (long long)handle, (long long)i, (long long)w);
      }
    }
  }
  if (r->gpu_partitions > 0 && r->busy_workers == 0) {
    r->count_violations = 1;
    violation(r, "%lld partitions in gpu (%lld finalizing) while %lld workers are busy",
              (long long)r->gpu_partitions, (long long)r->finalizing, 0);
  }
  for (size_t w = 0; w < ws->count; w++) {
    if (!busy[w]) continue;
    if (own_gpu_ms[w] < 0) {
      r->structure_violations++;
      violation(r, "worker %lld busy on job %lld partition %lld, which is not its own in gpu",
                (long long)w, (long long)own_job[w], (long long)own_part[w]);
    } else if (own_gpu_ms[w] != newest_ms[w]) {
      r->structure_violations++;
      violation(r, "worker %lld owns a partition %lld ms into its GPU stage, not its newest "
                   "(%lld ms)",
                (long long)w, (long long)own_gpu_ms[w], (long long)newest_ms[w]);
    }
  }
}
