/* backend_sim.c — see backend_sim.h. */
#include "backend_sim.h"

#include <errno.h>
#include <time.h>

#include "engine_state.h"
#include "util.h"

uint64_t sim_draw_ns(cuzk_engine *e, uint32_t kind, int stage) {
  const sim_timing *t = &e->cfg.sim[kind];
  double ms = stage == SIM_STAGE_SYNTH ? t->synth_ms
             : stage == SIM_STAGE_GPU ? t->gpu_ms
                                      : t->finalize_ms;
  double f = 1.0 + t->jitter * (2.0 * prng_unit(&e->sim_rng) - 1.0);
  double ns = ms * f * e->cfg.time_scale * 1e6;
  return ns <= 0 ? 0 : (uint64_t)ns;
}

int sim_sleep(cuzk_engine *e, job *j, uint64_t ns) {
  struct timespec dl;
  uint64_t until = mono_ns() + ns;
  ts_from_ns(&dl, until);
  int cut = 0;
  state_lock(e);
  for (;;) {
    if (atomic_load(&j->abort) || e->stopping) {
      cut = 1;
      break;
    }
    if (mono_ns() >= until) break;
    if (state_timedwait(e, &e->cv_sleep, &dl) == ETIMEDOUT) break;
  }
  state_unlock(e);
  return cut;
}
