/* bench.c — `make bench`: NTT throughput (2^16, 2^20), the cpu backend's per-partition
 * stage times at the default sizes, the cost of emitting an event, and the cost of the
 * observation calls (counters, status snapshot) the exporter makes on every scrape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "circuit.h"
#include "cuzk_engine.h"
#include "event_ring.h"
#include "kinds.h"
#include "ntt.h"
#include "quotient.h"

static double secs(uint64_t a, uint64_t b) { return (double)(b - a) / 1e9; }

static void bench_ntt(unsigned k) {
  size_t n = (size_t)1 << k;
  ntt_plan plan;
  if (ntt_plan_init(&plan, k)) exit(1);
  gl_t *a = malloc(n * sizeof *a);
  for (size_t i = 0; i < n; i++) a[i] = gl_from_u64(i * 0x9e3779b97f4a7c15ull);
  int reps = k >= 20 ? 8 : 200;
  const char *names[3] = {"forward (natural order)", "inverse (natural order)", "coset forward"};
  for (int which = 0; which < 3; which++) {
    double best = 1e9;
    for (int round = 0; round < 3; round++) {
      uint64_t t0 = cuzk_now_ns();
      for (int r = 0; r < reps; r++) {
        if (which == 0) ntt_forward(&plan, a);
        else if (which == 1) ntt_inverse(&plan, a);
        else ntt_coset_forward(&plan, a, GL_GENERATOR);
      }
      double t = secs(t0, cuzk_now_ns()) / reps;
      if (t < best) best = t;
    }
    double butterflies = (double)(n / 2) * k;
    printf("  NTT 2^%-2u %-24s %8.3f ms  %7.1f M elements/s  %5.2f ns/butterfly\n", k, names[which],
           best * 1e3, n / best / 1e6, best * 1e9 / butterflies);
  }
  free(a);
  ntt_plan_free(&plan);
}

static void bench_stages(void) {
  printf("\ncpu backend, one partition at the default sizes (single thread):\n");
  for (uint32_t kind = 0; kind < CUZK_KIND_COUNT; kind++) {
    unsigned k = KINDS[kind].log2_size;
    size_t n = (size_t)1 << k;
    gl_t *w = malloc(circuit_witness_bytes(k));
    double synth = 1e9, gpu = 1e9;
    for (int r = 0; r < 5; r++) {
      uint64_t t0 = cuzk_now_ns();
      circuit_synthesize(42 + r, k, w, w + n, w + 2 * n, NULL);
      uint64_t t1 = cuzk_now_ns();
      quotient_work q;
      quotient_prepare(&q, k);
      partition_proof pp;
      quotient_run(&q, w, w + n, w + 2 * n, kind, 0, 42 + r, 7, &pp, NULL);
      quotient_release(&q);
      uint64_t t2 = cuzk_now_ns();
      if (secs(t0, t1) < synth) synth = secs(t0, t1);
      if (secs(t1, t2) < gpu) gpu = secs(t1, t2);
    }
    printf("  %-13s 2^%-2u constraints: synthesis %7.3f ms, GPU stage (prep+kernels+finalize) "
           "%7.3f ms, witness %llu KiB\n",
           KINDS[kind].name, k, synth * 1e3, gpu * 1e3,
           (unsigned long long)(circuit_witness_bytes(k) >> 10));
    free(w);
  }
}

static void bench_verify(void) {
  char err[256];
  cuzk_engine *e;
  if (cuzk_engine_open("{}", &e, err, sizeof err)) exit(1);
  uint64_t job;
  cuzk_proof_result r;
  cuzk_submit(e, CUZK_KIND_POREP_C2, -1, 0, 0, NULL, &job, err, sizeof err);
  cuzk_await(e, job, UINT32_MAX, &r, err, sizeof err);
  static uint8_t proof[4096];
  uint32_t len, valid = 0;
  cuzk_proof_copy(e, job, proof, sizeof proof, &len, err, sizeof err);
  uint64_t t0 = cuzk_now_ns();
  char id[256];
  cuzk_job_id(e, job, id, sizeof id, err, sizeof err);
  cuzk_proof_verify(proof, len, id, &valid, err, sizeof err);
  double t = secs(t0, cuzk_now_ns());
  unsigned k = KINDS[CUZK_KIND_POREP_C2].log2_size;
  printf("\ncuzk_proof_verify, porep-c2 (%u partitions of 2^%u): %.1f ms (valid=%u), %.1f ns per "
         "constraint\n", r.partitions, k, t * 1e3, valid, t * 1e9 / r.partitions / (1 << k));
  cuzk_engine_close(&e, err, sizeof err);
}

static void bench_emit(void) {
  printf("\nevent emit (event_emit into a 65536-slot ring, one producer, no consumer; a group\n"
         "commit every 3 events, as a hand-off/take-back emits):\n");
  for (int enabled = 1; enabled >= 0; enabled--) {
    event_ring r;
    event_ring_init(&r, 65536, enabled);
    const int N = 20000000;
    double best = 1e9;
    for (int round = 0; round < 3; round++) {
      uint64_t t0 = cuzk_now_ns();
      for (int i = 0; i < N; i++) {
        event_emit(&r, CUZK_EV_PARTITION, t0 + (uint64_t)i, (uint64_t)i, 42, (uint32_t)i & 15, 1, 0, 1, 0, 3);
        if (i % 3 == 2) event_ring_commit(&r);
      }
      double t = secs(t0, cuzk_now_ns()) / N;
      if (t < best) best = t;
    }
    uint64_t last, over;
    event_ring_stats(&r, &last, &over);
    printf("  events %-8s %6.1f ns/event (%llu emitted, %llu overwritten)\n",
           enabled ? "enabled" : "disabled", best * 1e9, (unsigned long long)last,
           (unsigned long long)over);
    if (enabled) { /* drain the full ring in batches of 256, as the host does */
      static cuzk_event batch[256];
      uint64_t dropped, total = 0, t0 = cuzk_now_ns();
      uint32_t need;
      int64_t got;
      while ((got = event_ring_drain(&r, batch, 256, &dropped, &need)) > 0) total += (uint64_t)got;
      printf("  drain (batches of 256) %6.1f ns/event (%llu events)\n",
             secs(t0, cuzk_now_ns()) / (double)total * 1e9, (unsigned long long)total);
    }
    event_ring_destroy(&r);
  }
}

static void bench_observe(void) {
  char err[256];
  cuzk_engine *e;
  if (cuzk_engine_open("{\"backend\":\"sim\",\"gpus\":2,\"workers_per_gpu\":2,"
                       "\"sim\":{\"snap-update\":{\"synth_ms\":100000}}}",
                       &e, err, sizeof err))
    exit(1);
  uint64_t job;
  for (int i = 0; i < 16; i++) cuzk_submit(e, CUZK_KIND_SNAP_UPDATE, -1, 0, 0, NULL, &job, err, sizeof err);
  static char buf[1 << 20];
  uint64_t ctr[512];
  uint32_t len, words;
  const int N = 2000;
  uint64_t t0 = cuzk_now_ns();
  for (int i = 0; i < N; i++) cuzk_counters_read(e, ctr, 512, &words, err, sizeof err);
  uint64_t t1 = cuzk_now_ns();
  for (int i = 0; i < N; i++) cuzk_status_json(e, buf, sizeof buf, &len, err, sizeof err);
  uint64_t t2 = cuzk_now_ns();
  printf("\nobservation calls (2 GPUs x 2 workers, 16 queued 16-partition jobs):\n");
  printf("  cuzk_counters_read  %7.2f us (%u words)\n", secs(t0, t1) / N * 1e6, words);
  printf("  cuzk_status_json    %7.2f us (%u bytes)\n", secs(t1, t2) / N * 1e6, len);
  cuzk_engine_close(&e, err, sizeof err);
}

int main(void) {
  printf("NTT throughput (Goldilocks, radix-2, single thread):\n");
  bench_ntt(16);
  bench_ntt(20);
  bench_stages();
  bench_verify();
  bench_emit();
  bench_observe();
  return 0;
}
