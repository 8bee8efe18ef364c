/* test_counters.c — acceptance 3, with split proving: per-worker busy time equals the union
 * of the worker's partition intervals replayed from the events (exact to the ns), the kind
 * GPU and finalize counters equal the partitions' stage durations, and with split proving
 * off busy equals the summed GPU-stage durations exactly; per-GPU lock-held time never
 * exceeds wall time; cumulative counters never go backwards while sampled mid-run. */
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
    for (unsigned i = 0; i <= CUZK_CTRK_FINALIZE_NS; i++)
      if (i != CUZK_CTRK_QUEUE_DEPTH)
      CHECK(v.kind[k][i] >= p.kind[k][i], "kind %d word %u went backwards", k, i);
  for (int g = 0; g < G; g++)
    for (unsigned i = 0; i <= CUZK_CTRG_LOCK_ACQUIRES; i++)
      CHECK(v.gpu[g][i] >= p.gpu[g][i], "gpu %d word %u went backwards", g, i);
  for (int w = 0; w < G * W; w++)
    for (unsigned i = 0; i <= CUZK_CTRW_PARTITIONS; i++)
      CHECK(v.worker[w][i] >= p.worker[w][i], "worker %d word %u went backwards", w, i);
}

/* Replays the event stream: every identity of the counters, from the events alone. */
typedef struct replay {
  uint64_t part_gpu_ns[CUZK_KIND_COUNT], fin_ns[CUZK_KIND_COUNT];
  uint64_t union_ns[G * W], stint_ns[G * W], lock_ns[G];
  uint32_t ended, finalized, ownership_moves;
} replay;

#define RJ 64
#define RP 16

static void replay_events(const event_log *log, replay *r) {
  memset(r, 0, sizeof *r);
  static uint64_t t_gpu[RJ][RP], t_fin[RJ][RP], v_fin[RJ][RP];
  static uint8_t st[RJ][RP];
  memset(st, 0, sizeof st);
  int open[G * W] = {0}, busy[G * W] = {0};
  uint64_t ustart[G * W] = {0}, bstart[G * W] = {0};
  /* per worker: partitions picked up and not ended, in pickup order (ends must be FIFO) */
  uint64_t fifo[G * W][64];
  int head[G * W] = {0}, len[G * W] = {0};
  for (size_t i = 0; i < log->n; i++) {
    const cuzk_event *ev = &log->ev[i];
    CHECK(ev->seq == i + 1, "seq %llu at %zu", (unsigned long long)ev->seq, i);
    if (i) CHECK(ev->t_ns >= log->ev[i - 1].t_ns, "event timestamps are monotonic");
    if (ev->type == CUZK_EV_GPU_LOCK && ev->aux == 0) r->lock_ns[ev->gpu] += ev->value;
    if (ev->type == CUZK_EV_WORKER) {
      int w = ev->worker;
      CHECK(w < G * W, "worker id");
      if (ev->aux == 1) {
        CHECK(ev->value == 0, "a hand-off's WORKER event has value 0");
        if (!busy[w]) bstart[w] = ev->t_ns;
        else r->ownership_moves++;
        busy[w] = 1;
      } else {
        CHECK(busy[w], "worker %d idle twice", w);
        CHECK(ev->value == ev->t_ns - bstart[w], "stint value = ns since its first pickup");
        r->stint_ns[w] += ev->value;
        busy[w] = 0;
      }
    }
    if (ev->type != CUZK_EV_PARTITION) continue;
    CHECK(ev->job < RJ && ev->partition < RP, "replay bounds");
    uint64_t j = ev->job;
    uint32_t p = ev->partition;
    uint8_t old = st[j][p];
    st[j][p] = (uint8_t)ev->aux;
    int w = ev->worker;
    if (ev->aux == CUZK_PART_GPU) {
      CHECK(w < G * W && ev->gpu == w / W, "GPU hand-off carries worker and gpu");
      t_gpu[j][p] = ev->t_ns;
      if (open[w]++ == 0) ustart[w] = ev->t_ns;
      CHECK(len[w] < 64, "fifo");
      fifo[w][(head[w] + len[w]++) % 64] = j * RP + p;
    } else if (ev->aux == CUZK_PART_FINALIZING) {
      CHECK(old == CUZK_PART_GPU && w < G * W, "GPU -> FINALIZING with its worker");
      CHECK(ev->value == ev->t_ns - t_gpu[j][p], "FINALIZING value = hand-off to lock release");
      t_fin[j][p] = ev->t_ns;
      v_fin[j][p] = ev->value;
    } else if ((ev->aux == CUZK_PART_DONE || ev->aux == CUZK_PART_FAILED) &&
               (old == CUZK_PART_GPU || old == CUZK_PART_FINALIZING)) {
      CHECK(w < G * W, "the end of a GPU stage carries its worker");
      uint64_t d = ev->t_ns - t_gpu[j][p];
      CHECK(ev->value == d, "end value = hand-off to end");
      r->part_gpu_ns[ev->kind] += d;
      r->ended++;
      if (old == CUZK_PART_FINALIZING) {
        r->fin_ns[ev->kind] += ev->t_ns - t_fin[j][p];
        CHECK(ev->value - v_fin[j][p] == ev->t_ns - t_fin[j][p], "tail = end - finalizing");
        r->finalized++;
      }
      CHECK(len[w] > 0 && fifo[w][head[w]] == j * RP + p,
            "worker %d's partitions must end in the order it picked them up", w);
      head[w] = (head[w] + 1) % 64;
      len[w]--;
      if (--open[w] == 0) r->union_ns[w] += ev->t_ns - ustart[w];
    }
  }
  for (int w = 0; w < G * W; w++) CHECK(open[w] == 0 && !busy[w], "worker %d idle at the end", w);
}

/* Split proving (on by default): each worker's busy time is exactly the union of its
 * partitions' GPU-stage intervals (from the events, to the ns) and of its stints; the kind
 * GPU and finalize counters are exactly the partitions' stage durations. Split proving
 * off: the old identity, busy == sum of partition GPU time. */
static void busy_run(int split) {
  char cfg[400];
  snprintf(cfg, sizeof cfg,
           "{\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":2,\"split_proving\":%s,"
           "\"sizes\":{\"porep-c2\":%u,\"snap-update\":%u,\"window-post\":%u,\"winning-post\":%u}}",
           split ? "true" : "false", tsize(12, 9), tsize(11, 8), tsize(12, 9), tsize(11, 8));
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
    CHECK(verify_job(e, jobs[i]) == 1, "job %d verifies: %s", i, g_err);
    results_gpu += r.gpu_ns;
    results_synth += r.synth_ns;
    parts += r.partitions;
  }
  uint64_t *c = read_counters(e, &words);
  check_sample(c, prev);
  ctr_view v = view(c);
  uint64_t busy = 0, kind_gpu = 0, kind_synth = 0, kind_fin = 0, worker_parts = 0;
  for (int w = 0; w < G * W; w++) {
    CHECK(v.worker[w][CUZK_CTRW_BUSY] == 0, "idle at the end");
    busy += v.worker[w][CUZK_CTRW_BUSY_NS];
    worker_parts += v.worker[w][CUZK_CTRW_PARTITIONS];
  }
  for (int k = 0; k < CUZK_KIND_COUNT; k++) {
    kind_gpu += v.kind[k][CUZK_CTRK_GPU_NS];
    kind_synth += v.kind[k][CUZK_CTRK_SYNTH_NS];
    kind_fin += v.kind[k][CUZK_CTRK_FINALIZE_NS];
    CHECK(v.kind[k][CUZK_CTRK_RESERVED] == 0, "reserved word");
  }
  CHECK(worker_parts == parts, "workers ended %llu partitions of %u",
        (unsigned long long)worker_parts, parts);
  CHECK(results_gpu == kind_gpu, "results' gpu_ns %llu != counters %llu",
        (unsigned long long)results_gpu, (unsigned long long)kind_gpu);
  CHECK(results_synth == kind_synth, "results' synth_ns != counters");

  /* every identity again, independently, from the event stream */
  event_log log = {0};
  drain_all(e, &log);
  CHECK(log.dropped == 0, "default ring must not overflow here");
  replay r;
  replay_events(&log, &r);
  CHECK(r.ended == parts && r.finalized == parts, "%u ends, %u finalized, %u partitions",
        r.ended, r.finalized, parts);
  for (int k = 0; k < CUZK_KIND_COUNT; k++) {
    CHECK(r.part_gpu_ns[k] == v.kind[k][CUZK_CTRK_GPU_NS],
          "%s: CTRK_GPU_NS %llu != sum of partition GPU stages %llu", cuzk_kind_name(k),
          (unsigned long long)v.kind[k][CUZK_CTRK_GPU_NS], (unsigned long long)r.part_gpu_ns[k]);
    CHECK(r.fin_ns[k] == v.kind[k][CUZK_CTRK_FINALIZE_NS],
          "%s: CTRK_FINALIZE_NS %llu != sum of finalize tails %llu", cuzk_kind_name(k),
          (unsigned long long)v.kind[k][CUZK_CTRK_FINALIZE_NS], (unsigned long long)r.fin_ns[k]);
  }
  uint64_t union_total = 0;
  for (int w = 0; w < G * W; w++) {
    uint64_t ctr = v.worker[w][CUZK_CTRW_BUSY_NS];
    CHECK(r.union_ns[w] == ctr, "worker %d: busy %llu ns != union of its partitions' intervals "
          "%llu ns (diff %lld)", w, (unsigned long long)ctr, (unsigned long long)r.union_ns[w],
          (long long)(ctr - r.union_ns[w]));
    CHECK(r.stint_ns[w] == ctr, "worker %d: busy != sum of its WORKER stints", w);
    union_total += r.union_ns[w];
  }
  for (int g = 0; g < G; g++)
    CHECK(r.lock_ns[g] == v.gpu[g][CUZK_CTRG_LOCK_HELD_NS], "gpu %d: lock events vs counters", g);
  CHECK(kind_fin > 0, "finalize tails took time");
  if (split) {
    CHECK(r.ownership_moves > 0 && busy < kind_gpu,
          "split proving: workers picked up partitions while busy (%u ownership moves) and "
          "busy %llu < sum of GPU stages %llu",
          r.ownership_moves, (unsigned long long)busy, (unsigned long long)kind_gpu);
  } else {
    CHECK(r.ownership_moves == 0 && busy == kind_gpu,
          "split proving off: busy %llu == sum of partition GPU time %llu exactly "
          "(%u ownership moves)",
          (unsigned long long)busy, (unsigned long long)kind_gpu, r.ownership_moves);
  }
  /* dual-worker interlock: a worker takes a partition (its CPU preparation) while the
   * other worker of its GPU holds the kernel lock */
  int holder[G] = {-1, -1}, overlaps = 0;
  for (size_t i = 0; i < log.n; i++) {
    const cuzk_event *ev = &log.ev[i];
    if (ev->type == CUZK_EV_GPU_LOCK) holder[ev->gpu] = ev->aux ? ev->worker : -1;
    if (ev->type == CUZK_EV_WORKER && ev->aux == 1 && holder[ev->gpu] >= 0 &&
        holder[ev->gpu] != ev->worker)
      overlaps++;
  }
  CHECK(v.hdr[CUZK_CTR_EVENTS_EMITTED] == log.n && v.hdr[CUZK_CTR_LAST_SEQ] == log.n &&
            v.hdr[CUZK_CTR_EVENTS_OVERWRITTEN] == 0,
        "event counters");
  test_note("split proving %s: %d mid-run samples (%d busy-worker observations); %u partitions: "
            "busy %.3f ms == union of intervals (sum of GPU stages %.3f ms, finalize %.3f ms, "
            "%u ownership moves); lock held %.3f / %.3f ms of %.3f ms wall; %d hand-offs "
            "overlapped the other worker's kernels",
            split ? "on" : "off", samples, running_seen, parts, union_total / 1e6,
            kind_gpu / 1e6, kind_fin / 1e6, r.ownership_moves, v.gpu[0][CUZK_CTRG_LOCK_HELD_NS] / 1e6,
            v.gpu[1][CUZK_CTRG_LOCK_HELD_NS] / 1e6, v.hdr[CUZK_CTR_UPTIME_NS] / 1e6, overlaps);
  event_log_free(&log);
  free(c);
  free(prev);
  close_engine(&e);
}

void test_counters_split_proving_exact(void) { busy_run(1); }
void test_counters_busy_equals_partition_gpu_time(void) { busy_run(0); }

/* Starvation: recomputed exactly from the event stream (lock free, nothing in synth_done,
 * work outstanding) it must equal the counter to the nanosecond; an idle engine is not
 * starved at all. The workload is synthesis-bound (sim: 20 ms synthesis, 2 ms GPU). */
void test_counters_starvation(void) {
  cuzk_engine *e = open_engine("{\"backend\":\"sim\",\"synthesis_concurrency\":1,"
                               "\"sim\":{\"snap-update\":{\"synth_ms\":20,\"gpu_ms\":2,\"finalize_ms\":1,"
                               "\"jitter\":0}}}");
  sleep_ms(30); /* idle time that must not count */
  uint32_t words;
  uint64_t *c0 = read_counters(e, &words);
  const unsigned g0 = CUZK_CTR_HDR_WORDS + CUZK_KIND_COUNT * CUZK_CTR_KIND_WORDS;
  CHECK(c0[g0 + CUZK_CTRG_STARVED_NS] == 0, "idle engine starved %llu ns",
        (unsigned long long)c0[g0 + CUZK_CTRG_STARVED_NS]);
  uint64_t j1 = submit_job(e, CUZK_KIND_SNAP_UPDATE, -1, 4, 0, NULL);
  uint64_t j2 = submit_job(e, CUZK_KIND_SNAP_UPDATE, -1, 3, 0, NULL);
  cuzk_proof_result r1 = await_job(e, j1), r2 = await_job(e, j2);
  sleep_ms(20); /* idle again: must not add */
  uint64_t *c = read_counters(e, &words);
  uint64_t starved = c[g0 + CUZK_CTRG_STARVED_NS], held = c[g0 + CUZK_CTRG_LOCK_HELD_NS];
  event_log log = {0};
  drain_all(e, &log);
  CHECK(log.dropped == 0, "no overflow");
  uint8_t state[2][8] = {{0}};
  int ready = 0, lock = 0, unfinished = 0, was = 0;
  uint64_t replay = 0, since = 0;
  for (size_t i = 0; i < log.n; i++) {
    const cuzk_event *ev = &log.ev[i];
    int jx = ev->job == j1 ? 0 : 1;
    if (ev->type == CUZK_EV_JOB_QUEUED) unfinished++;
    if (ev->type == CUZK_EV_JOB_DONE) unfinished--;
    if (ev->type == CUZK_EV_GPU_LOCK) lock = (int)ev->aux;
    if (ev->type == CUZK_EV_PARTITION) {
      uint8_t old = state[jx][ev->partition];
      ready += (ev->aux == CUZK_PART_SYNTH_DONE) - (old == CUZK_PART_SYNTH_DONE);
      state[jx][ev->partition] = (uint8_t)ev->aux;
    }
    int now = !lock && ready == 0 && unfinished > 0;
    if (now && !was) since = ev->t_ns;
    if (!now && was) replay += ev->t_ns - since;
    was = now;
  }
  CHECK(!was, "starvation interval still open at the end");
  CHECK(replay == starved, "starved counter %llu ns != %llu ns replayed from events",
        (unsigned long long)starved, (unsigned long long)replay);
  uint64_t first_queued = UINT64_MAX, last_done = 0; /* the span with work outstanding */
  for (size_t i = 0; i < log.n; i++) {
    if (log.ev[i].type == CUZK_EV_JOB_QUEUED && log.ev[i].t_ns < first_queued) first_queued = log.ev[i].t_ns;
    if (log.ev[i].type == CUZK_EV_JOB_DONE && log.ev[i].t_ns > last_done) last_done = log.ev[i].t_ns;
  }
  uint64_t span = last_done - first_queued;
  CHECK(r1.outcome == CUZK_OUTCOME_COMPLETED && r2.outcome == CUZK_OUTCOME_COMPLETED, "jobs");
  CHECK(starved > 0 && held + starved <= span, "held %.1f + starved %.1f > %.1f ms", held / 1e6,
        starved / 1e6, span / 1e6);
  test_note("synthesis-bound run of %.1f ms: GPU starved %.1f ms (= replay of the events), "
            "lock held %.1f ms; 0 while idle", span / 1e6, starved / 1e6, held / 1e6);
  event_log_free(&log);
  free(c0);
  free(c);
  close_engine(&e);
}

/* Dual-worker interlock on the sim backend (kernels are sleeps, as on a real GPU the CPU is
 * free during them): in a GPU-bound run, a worker takes its next partition while the other
 * worker of the GPU holds the kernel lock, so the lock passes from one worker to the other
 * with no idle gap. */
void test_dual_worker_interlock_sim(void) {
  cuzk_engine *e = open_engine("{\"backend\":\"sim\",\"gpus\":1,\"workers_per_gpu\":2,"
                               "\"synthesis_concurrency\":2,\"sim\":{\"snap-update\":"
                               "{\"synth_ms\":1,\"gpu_ms\":4,\"finalize_ms\":2,\"jitter\":0}}}");
  uint64_t j = submit_job(e, CUZK_KIND_SNAP_UPDATE, -1, 0, 0, NULL);
  await_job(e, j);
  event_log log = {0};
  drain_all(e, &log);
  /* a worker's preparation interval runs from its hand-off to its lock acquire; it
   * overlaps the other worker's kernels if the other worker held the lock at the hand-off
   * or took/released it before our acquire */
  int holder = -1, overlaps = 0, handoffs = 0, acquires = 0, small_gaps = 0;
  int prep_open[2] = {0, 0}, overlapped[2] = {0, 0};
  for (size_t i = 0; i < log.n; i++) {
    const cuzk_event *ev = &log.ev[i];
    if (ev->type == CUZK_EV_WORKER && ev->aux == 1) {
      handoffs++;
      prep_open[ev->worker] = 1;
      overlapped[ev->worker] = holder >= 0 && holder != ev->worker;
    }
    if (ev->type != CUZK_EV_GPU_LOCK) continue;
    int other = 1 - ev->worker;
    if (prep_open[other]) overlapped[other] = 1;
    if (ev->aux) {
      if (prep_open[ev->worker]) overlaps += overlapped[ev->worker];
      prep_open[ev->worker] = 0;
      if (!(ev->flags & CUZK_EVF_FIRST)) {
        acquires++;
        small_gaps += ev->value < 1000000; /* < 1 ms idle between partitions */
      }
    }
    holder = ev->aux ? ev->worker : -1;
  }
  CHECK(handoffs == 16 && acquires == 15, "handoffs %d, acquires %d", handoffs, acquires);
  CHECK(overlaps >= 12, "only %d of 16 preparations overlapped the other worker's kernels", overlaps);
  test_note("%d of 16 preparations overlapped the other worker's kernels; %d of 15 idle gaps < 1 ms",
            overlaps, small_gaps);
  event_log_free(&log);
  close_engine(&e);
}
