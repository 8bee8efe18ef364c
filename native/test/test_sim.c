/* test_sim.c — the sim backend: stage durations follow the timing model (scaled by
 * time_scale), the metrics look exactly like the cpu backend's, and its proofs are marked
 * sim: cuzk_proof_verify says valid = 0 and why. */
#include <string.h>

#include "harness.h"
#include "invariant.h"

void test_sim_backend_timing_and_proofs(void) {
  /* time_scale 0.002: porep synth 38 s -> 76 ms, GPU stage (kernels 2.1 s + finalize tail
   * 1.1 s) -> 6.4 ms per partition */
  cuzk_engine *e = open_engine(
      "{\"backend\":\"sim\",\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":4,"
      "\"time_scale\":0.002,\"sim\":{\"window-post\":{\"synth_ms\":10000,\"gpu_ms\":5000,"
      "\"jitter\":0}}}");
  /* the GPU stage runs from the hand-off to the end of the finalize tail: kernels + tail */
  static const double mean_synth[] = {38000, 9200, 10000, 1500},
                      mean_gpu[] = {2100 + 1100, 600 + 400, 5000 + 1700, 400 + 250};
  uint64_t jobs[CUZK_KIND_COUNT];
  for (uint32_t k = 0; k < CUZK_KIND_COUNT; k++) jobs[k] = submit_job(e, k, -1, 0, 0, NULL);
  int snapshots = 0;
  for (;;) { /* the invariant holds under sim too */
    json_value *s = snapshot(e);
    inv_report r;
    check_invariant(s, &r);
    CHECK(r.violations == 0, "sim invariant: %s", r.first);
    CHECK(!strcmp(jstr(s, "backend"), "sim"), "backend");
    json_free(s);
    snapshots++;
    cuzk_proof_result res;
    if (cuzk_await(e, jobs[CUZK_KIND_POREP_C2], 5, &res, ERR) == CUZK_OK) break;
  }
  uint64_t gpu_total = 0;
  for (uint32_t k = 0; k < CUZK_KIND_COUNT; k++) {
    cuzk_proof_result r = await_job(e, jobs[k]);
    CHECK(r.outcome == CUZK_OUTCOME_COMPLETED, "%s: %s", cuzk_kind_name(k), r.error);
    double synth_ms = r.synth_ns / 1e6 / r.partitions, gpu_ms = r.gpu_ns / 1e6 / r.partitions;
    double want_s = mean_synth[k] * 0.002, want_g = mean_gpu[k] * 0.002;
    /* jitter is +/-5 %; sleeping can only overrun */
    CHECK(synth_ms >= want_s * 0.94 && synth_ms <= want_s * 1.06 + (test_small() ? 300 : 100),
          "%s synthesis %.2f ms per partition, model %.2f", cuzk_kind_name(k), synth_ms, want_s);
    CHECK(gpu_ms >= want_g * 0.94 && gpu_ms <= want_g * 1.06 + (test_small() ? 300 : 100),
          "%s GPU %.2f ms per partition, model %.2f", cuzk_kind_name(k), gpu_ms, want_g);
    gpu_total += r.gpu_ns;
    uint32_t len = 0;
    uint8_t buf[64];
    CHECK_RC(cuzk_proof_copy(e, jobs[k], buf, sizeof buf, &len, ERR), CUZK_OK);
    CHECK(len == 24, "sim proofs are a header only (%u bytes)", len);
    uint32_t valid = 7;
    g_err[0] = 0;
    char id[MAX_ID_BYTES];
    CHECK_RC(cuzk_job_id(e, jobs[k], id, sizeof id, ERR), CUZK_OK);
    CHECK_RC(cuzk_proof_verify(buf, len, id, &valid, ERR), CUZK_OK);
    CHECK(valid == 0 && strstr(g_err, "sim"), "sim proof: valid %u, %s", valid, g_err);
  }
  uint32_t words;
  uint64_t *c = read_counters(e, &words);
  uint64_t busy = 0;
  const uint64_t *w = c + CUZK_CTR_HDR_WORDS + CUZK_KIND_COUNT * CUZK_CTR_KIND_WORDS + 2 * CUZK_CTR_GPU_WORDS;
  for (int i = 0; i < 4; i++) busy += w[i * CUZK_CTR_WORKER_WORDS + CUZK_CTRW_BUSY_NS];
  /* split proving: busy is the union of each worker's partition intervals (exactness is
   * checked from the events in test_counters.c), so at most their sum */
  CHECK(busy > 0 && busy <= gpu_total, "sim: busy %llu <= partition GPU time %llu",
        (unsigned long long)busy, (unsigned long long)gpu_total);
  free(c);
  json_value *s = snapshot(e);
  const json_value *g = jget(s, "gpus");
  CHECK(!strcmp(jstr(&g->items[0], "name"), "sim-gpu-0") &&
            !strcmp(jstr(&g->items[1], "uuid"), "GPU-00000000-0000-0000-0000-000000000001") &&
            jis_null(&g->items[0], "pci_bus_id"),
        "sim GPU identity");
  CHECK(jget(jget(s, "allocations"), "srs")->count == 4, "one srs entry per kind that ran");
  json_free(s);
  test_note("%d snapshots while the sim workload ran", snapshots);
  close_engine(&e);
}
