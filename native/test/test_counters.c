/* test_counters.c — acceptance 3: per-worker busy time summed equals the summed
 * per-partition GPU-stage durations (exactly; the brief allows 1 us per partition), seen
 * through counters, results and events alike; per-GPU lock-held time never exceeds wall
 * time; cumulative counters never go backwards while sampled mid-run. */
#include <string.h>

#include "harness.h"

#define G 2
#define W 2

typedef struct ctr_view {
  const uint64_t *hdr, *kind[CUZK_KIND_COUNT], *gpu[G], *worker[G * W];
} ctr_view;

static ctr_view view(const uint64_t *c) {
  ctr_view v;
  v.hdr = c;
  const uint64_t *p = c + CUZK_CTR_HDR_WORDS;
  for (int k = 0; k < CUZK_KIND_COUNT; k++, p += CUZK_CTR_KIND_WORDS) v.kind[k] = p;
  for (int g = 0; g < G; g++, p += CUZK_CTR_GPU_WORDS) v.gpu[g] = p;
  for (int w = 0; w < G * W; w++, p += CUZK_CTR_WORKER_WORDS) v.worker[w] = p;
  return v;
}

/* Lock-held <= wall, held + starved <= wall (disjoint by definition), and every
 * cumulative word non-decreasing since the previous sample. */
static void check_sample(const uint64_t *c, const uint64_t *prev) {
  ctr_view v = view(c);
  uint64_t wall = v.hdr[CUZK_CTR_UPTIME_NS];
  for (int g = 0; g < G; g++) {
    uint64_t held = v.gpu[g][CUZK_CTRG_LOCK_HELD_NS], starved = v.gpu[g][CUZK_CTRG_STARVED_NS];
    CHECK(held <= wall, "GPU %d lock held %llu ns > wall %llu ns", g, (unsigned long long)held,
          (unsigned long long)wall);
    CHECK(held + starved <= wall, "GPU %d held + starved > wall", g);
    uint64_t busy = 0; /* the lock is only ever held inside a stint of one of its workers */
    for (int w = 0; w < W; w++) busy += v.worker[g * W + w][CUZK_CTRW_BUSY_NS];
    CHECK(held <= busy, "GPU %d lock held %llu > its workers' busy %llu", g,
          (unsigned long long)held, (unsigned long long)busy);
  }
  if (!prev) return;
  ctr_view p = view(prev);
  CHECK(v.hdr[CUZK_CTR_NOW_NS] >= p.hdr[CUZK_CTR_NOW_NS], "clock");
  for (int k = 0; k < CUZK_KIND_COUNT; k++)
    for (unsigned i = 0; i <= CUZK_CTRK_PROOFS_CANCELLED; i++)
      CHECK(v.kind[k][i] >= p.kind[k][i], "kind %d word %u went backwards", k, i);
  for (int g = 0; g < G; g++)
    for (unsigned i = 0; i <= CUZK_CTRG_LOCK_ACQUIRES; i++)
      CHECK(v.gpu[g][i] >= p.gpu[g][i], "gpu %d word %u went backwards", g, i);
  for (int w = 0; w < G * W; w++)
    for (unsigned i = 0; i <= CUZK_CTRW_PARTITIONS; i++)
      CHECK(v.worker[w][i] >= p.worker[w][i], "worker %d word %u went backwards", w, i);
}

void test_counters_busy_equals_partition_gpu_time(void) {
  char cfg[300];
  snprintf(cfg, sizeof cfg,
           "{\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":2,"
           "\"sizes\":{\"porep-c2\":%u,\"snap-update\":%u,\"window-post\":%u,\"winning-post\":%u}}",
           tsize(12, 9), tsize(11, 8), tsize(12, 9), tsize(11, 8));
  cuzk_engine *e = open_engine(cfg);
  uint64_t jobs[32];
  int n = 0;
  for (int rep = 0; rep < 3; rep++)
    for (uint32_t k = 0; k < CUZK_KIND_COUNT; k++) jobs[n++] = submit_job(e, k, -1, 0, 0, NULL);
  /* sample mid-run */
  uint32_t words;
  uint64_t *prev = NULL;
  int samples = 0, running_seen = 0;
  for (;;) {
    int rc = CUZK_OK;
    for (int i = 0; i < n && rc == CUZK_OK; i++) {
      cuzk_proof_result r;
      rc = cuzk_await(e, jobs[i], 0, &r, ERR);
    }
    uint64_t *c = read_counters(e, &words);
    CHECK(c[CUZK_CTR_LAYOUT] == CUZK_ABI_VERSION && c[CUZK_CTR_GPUS] == G &&
              c[CUZK_CTR_WORKERS_PER_GPU] == W && c[CUZK_CTR_KINDS] == CUZK_KIND_COUNT,
          "header");
    check_sample(c, prev);
    ctr_view v = view(c);
    for (int w = 0; w < G * W; w++) running_seen += v.worker[w][CUZK_CTRW_BUSY] != 0;
    free(prev);
    prev = c;
    samples++;
    if (rc == CUZK_OK) break;
  }
  uint64_t results_gpu = 0, results_synth = 0;
  uint32_t parts = 0;
  for (int i = 0; i < n; i++) {
    cuzk_proof_result r = await_job(e, jobs[i]);
    CHECK(r.outcome == CUZK_OUTCOME_COMPLETED, "job %d: %s", i, r.error);
    results_gpu += r.gpu_ns;
    results_synth += r.synth_ns;
    parts += r.partitions;
  }
  uint64_t *c = read_counters(e, &words);
  check_sample(c, prev);
  ctr_view v = view(c);
  uint64_t busy = 0, kind_gpu = 0, kind_synth = 0, held[G] = {0};
  for (int w = 0; w < G * W; w++) {
    CHECK(v.worker[w][CUZK_CTRW_BUSY] == 0, "idle at the end");
    busy += v.worker[w][CUZK_CTRW_BUSY_NS];
  }
  for (int k = 0; k < CUZK_KIND_COUNT; k++) {
    kind_gpu += v.kind[k][CUZK_CTRK_GPU_NS];
    kind_synth += v.kind[k][CUZK_CTRK_SYNTH_NS];
  }
  for (int g = 0; g < G; g++) held[g] = v.gpu[g][CUZK_CTRG_LOCK_HELD_NS];
  long long diff = (long long)busy - (long long)kind_gpu;
  CHECK(diff == 0, "sum worker busy %llu != sum partition GPU %llu (diff %lld ns; allowed "
                   "%u ns but the design makes them identical)",
        (unsigned long long)busy, (unsigned long long)kind_gpu, diff, parts * 1000);
  CHECK(results_gpu == kind_gpu, "results' gpu_ns %llu != counters %llu",
        (unsigned long long)results_gpu, (unsigned long long)kind_gpu);
  CHECK(results_synth == kind_synth, "results' synth_ns != counters");

  /* the same identities through the event stream */
  event_log log = {0};
  drain_all(e, &log);
  CHECK(log.dropped == 0, "default ring must not overflow here");
  uint64_t ev_part_gpu = 0, ev_worker_busy[G * W] = {0}, ev_lock[G] = {0};
  uint32_t ev_done = 0;
  for (size_t i = 0; i < log.n; i++) {
    const cuzk_event *ev = &log.ev[i];
    CHECK(ev->seq == i + 1, "seq %llu at %zu", (unsigned long long)ev->seq, i);
    if (i) CHECK(ev->t_ns >= log.ev[i - 1].t_ns, "event timestamps are monotonic");
    if (ev->type == CUZK_EV_PARTITION && ev->aux == CUZK_PART_DONE) {
      ev_part_gpu += ev->value;
      ev_done++;
      CHECK(ev->gpu < G && ev->worker < G * W, "GPU->DONE carries gpu and worker");
    }
    if (ev->type == CUZK_EV_WORKER && ev->aux == 0) ev_worker_busy[ev->worker] += ev->value;
    if (ev->type == CUZK_EV_GPU_LOCK && ev->aux == 0) ev_lock[ev->gpu] += ev->value;
  }
  CHECK(ev_done == parts, "%u DONE events for %u partitions", ev_done, parts);
  CHECK(ev_part_gpu == kind_gpu, "events' partition GPU ns != counters");
  for (int w = 0; w < G * W; w++)
    CHECK(ev_worker_busy[w] == v.worker[w][CUZK_CTRW_BUSY_NS], "worker %d: events vs counters", w);
  for (int g = 0; g < G; g++) CHECK(ev_lock[g] == held[g], "gpu %d: lock events vs counters", g);
  CHECK(v.hdr[CUZK_CTR_EVENTS_EMITTED] == log.n && v.hdr[CUZK_CTR_LAST_SEQ] == log.n &&
            v.hdr[CUZK_CTR_EVENTS_OVERWRITTEN] == 0,
        "event counters");
  test_note("%d mid-run samples (%d busy-worker observations); %u partitions: busy %.3f ms == "
            "partition GPU %.3f ms; lock held %.3f / %.3f ms of %.3f ms wall",
            samples, running_seen, parts, busy / 1e6, kind_gpu / 1e6, held[0] / 1e6,
            held[1] / 1e6, v.hdr[CUZK_CTR_UPTIME_NS] / 1e6);
  event_log_free(&log);
  free(c);
  free(prev);
  close_engine(&e);
}
