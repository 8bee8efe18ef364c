/* invariant.c — see invariant.h. */
#include "invariant.h"

#include <stdio.h>
#include <string.h>

#include "harness.h"

static void violation(inv_report *r, int snap_kind, const char *fmt, long long a, long long b,
                      long long c) {
  if (r->violations++ == 0) snprintf(r->first, sizeof r->first, fmt, a, b, c);
  if (snap_kind) r->snap_violations++;
}

void check_invariant(const json_value *snap, inv_report *r) {
  memset(r, 0, sizeof *r);
  const json_value *pl = jget(snap, "pipelines"), *ws = jget(snap, "gpu_workers");
  for (size_t w = 0; w < ws->count; w++)
    r->busy_workers += strcmp(jstr(&ws->items[w], "state"), "proving") == 0;
  for (size_t p = 0; p < pl->count; p++) {
    const json_value *job = &pl->items[p];
    int64_t handle = jint(job, "job_handle");
    int is_snap = strcmp(jstr(job, "proof_kind"), "snap-update") == 0;
    const json_value *parts = jget(job, "partitions");
    for (size_t i = 0; i < parts->count; i++) {
      if (strcmp(jstr(&parts->items[i], "state"), "gpu") != 0) continue;
      r->gpu_partitions++;
      int owners = 0;
      for (size_t w = 0; w < ws->count; w++) {
        const json_value *wk = &ws->items[w];
        if (strcmp(jstr(wk, "state"), "proving") != 0) continue;
        if (jint(wk, "current_job_handle") == handle &&
            jint(wk, "current_partition") == (int64_t)i) {
          owners++;
          CHECK(strcmp(jstr(wk, "current_job"), jstr(job, "job_id")) == 0,
                "worker's current_job must be the full job id");
        }
      }
      if (owners != 1)
        violation(r, is_snap, "job %lld partition %lld is in gpu with %lld busy owners",
                  (long long)handle, (long long)i, (long long)owners);
    }
  }
  for (size_t w = 0; w < ws->count; w++) {
    const json_value *wk = &ws->items[w];
    if (strcmp(jstr(wk, "state"), "proving") != 0) {
      CHECK(jis_null(wk, "current_job") && jis_null(wk, "busy_secs"), "idle worker fields");
      continue;
    }
    int64_t handle = jint(wk, "current_job_handle"), idx = jint(wk, "current_partition");
    int found = 0;
    for (size_t p = 0; p < pl->count && !found; p++) {
      const json_value *job = &pl->items[p];
      if (jint(job, "job_handle") != handle) continue;
      const json_value *parts = jget(job, "partitions");
      found = idx >= 0 && (size_t)idx < parts->count &&
              strcmp(jstr(&parts->items[idx], "state"), "gpu") == 0;
    }
    if (!found)
      violation(r, 0, "worker %lld busy on job %lld partition %lld, which is not in gpu",
                (long long)jint(wk, "worker_id"), (long long)handle, (long long)idx);
  }
}
