/* cycles.c — `make valgrind`: N open/close cycles with work in between (submit, await,
 * verify, cancel, snapshot, counters, events, and jobs left in flight at close), so a
 * leak-checker sees every allocation path of the engine. Exit 0 when all calls behaved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuzk_engine.h"

#define OK(call)                                                                           \
  do {                                                                                     \
    int rc_ = (call);                                                                      \
    if (rc_ != CUZK_OK) {                                                                  \
      fprintf(stderr, "cycle %d: %s -> %s: %s\n", i, #call, cuzk_status_name(rc_), err);  \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

int main(int argc, char **argv) {
  int cycles = argc > 1 ? atoi(argv[1]) : 100;
  char err[256] = "";
  static char status[1 << 16];
  static cuzk_event ev[256];
  uint64_t ctr[256];
  for (int i = 0; i < cycles; i++) {
    const char *cfg = i % 3 == 2
                          ? "{\"backend\":\"sim\",\"gpus\":2,\"event_ring_capacity\":16,"
                            "\"finished_retention_ms\":0,\"sim\":{\"winning-post\":{\"synth_ms\":20,\"gpu_ms\":1,\"finalize_ms\":1}}}"
                          : "{\"gpus\":2,\"workers_per_gpu\":2,\"event_ring_capacity\":64,"
                            "\"finished_retention_ms\":2000,\"sizes\":{\"porep-c2\":6,\"snap-update\":5,"
                            "\"window-post\":6,\"winning-post\":5},\"faults\":{\"corrupt_proof_nth\":3}}";
    cuzk_engine *e = NULL;
    OK(cuzk_engine_open(cfg, &e, err, sizeof err));
    uint64_t done, cancelled, left;
    OK(cuzk_submit(e, CUZK_KIND_WINNING_POST, -1, 0, 0, "cycle-\"winning\"", &done, err, sizeof err));
    OK(cuzk_submit(e, CUZK_KIND_POREP_C2, -1, 0, 0, NULL, &cancelled, err, sizeof err));
    OK(cuzk_submit(e, CUZK_KIND_SNAP_UPDATE, -1, 0, 0, NULL, &left, err, sizeof err));
    OK(cuzk_cancel(e, cancelled, err, sizeof err));
    cuzk_proof_result r;
    OK(cuzk_await(e, done, 60000, &r, err, sizeof err));
    if (r.outcome != CUZK_OUTCOME_COMPLETED) {
      fprintf(stderr, "cycle %d: job failed: %s\n", i, r.error);
      return 1;
    }
    uint8_t proof[256];
    uint32_t len = 0, valid = 0, n = 0, words = 0;
    if (i % 3 != 2) { /* sim cycles keep no finished jobs (retention 0) */
      OK(cuzk_proof_copy(e, done, proof, sizeof proof, &len, err, sizeof err));
      char id[256];
      OK(cuzk_job_id(e, done, id, sizeof id, err, sizeof err));
      OK(cuzk_proof_verify(proof, len, id, &valid, err, sizeof err));
    }
    OK(cuzk_status_json(e, status, sizeof status, &len, err, sizeof err));
    OK(cuzk_counters_read(e, ctr, 256, &words, err, sizeof err));
    uint64_t dropped;
    OK(cuzk_events_drain(e, ev, 256, &n, &dropped, err, sizeof err));
    cuzk_submit(e, 9, -1, 0, 0, NULL, &left, err, sizeof err); /* error path */
    OK(cuzk_engine_close(&e, err, sizeof err)); /* with the snap job possibly in flight */
  }
  printf("%d open/close cycles with work: ok\n", cycles);
  return 0;
}
