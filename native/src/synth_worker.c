/* synth_worker.c — the bounded synthesis pool: each thread takes the next pending
 * partition (priority, then submit order) once its witness fits the memory budget,
 * synthesizes it outside the state lock, and hands it to the GPU queue. */
#include <stdlib.h>

#include "backend_sim.h"
#include "circuit.h"
#include "scheduler.h"
#include "util.h"
#include "workers.h"

void *synth_thread_main(void *arg) {
  cuzk_engine *e = arg;
  state_lock(e);
  for (;;) {
    job *j = NULL;
    uint32_t idx = 0;
    for (;;) {
      if (e->stopping) goto out;
      j = sched_pick_synth(e, &idx);
      /* strict priority: the top candidate waits for budget rather than being overtaken */
      if (j && e->mem_used + circuit_witness_bytes(j->log2n) <= e->cfg.memory_budget_bytes)
        break;
      state_wait(e, &e->cv_synth);
    }
    sched_start_synthesis(e, j, idx, mono_ns());
    const uint64_t seed = j->parts[idx].seed;
    const unsigned log2n = j->log2n;
    const int sim = e->cfg.backend == BACKEND_SIM;
    const uint64_t sim_ns = sim ? sim_draw_ns(e, j->kind, SIM_STAGE_SYNTH) : 0;
    const int inject = j->parts[idx].inject_synth_fail;
    state_unlock(e);

    synth_outcome outcome = SYNTH_OK;
    gl_t *wit = NULL;
    if (sim) {
      if (sim_sleep(e, j, sim_ns)) outcome = SYNTH_ABANDONED;
    } else {
      size_t n = (size_t)1 << log2n;
      wit = malloc(circuit_witness_bytes(log2n));
      if (!wit) outcome = SYNTH_OOM;
      else if (circuit_synthesize(seed, log2n, wit, wit + n, wit + 2 * n, &j->abort))
        outcome = SYNTH_ABANDONED;
    }

    if (inject && outcome == SYNTH_OK) { /* the synthesis ran, then failed */
      outcome = SYNTH_INJECTED;
      free(wit);
      wit = NULL;
    }
    state_lock(e);
    sched_finish_synthesis(e, j, idx, mono_ns(), outcome, wit);
  }
out:
  state_unlock(e);
  return NULL;
}
