/* backend_sim.h — the sim backend's timing model: stage durations drawn from per-kind
 * means with uniform relative jitter, scaled by time_scale, slept (interruptibly) instead
 * of computed. */
#ifndef CUZK_BACKEND_SIM_H
#define CUZK_BACKEND_SIM_H

#include <stdint.h>

struct cuzk_engine;
struct job;

enum sim_stage { SIM_STAGE_SYNTH, SIM_STAGE_GPU, SIM_STAGE_FINALIZE };

/* Draws a duration in ns; call with e->mu held (uses the engine's sim PRNG). */
uint64_t sim_draw_ns(struct cuzk_engine *e, uint32_t kind, int stage);
/* Sleeps ns unless the job is aborted or the engine stops first; call WITHOUT e->mu.
 * Returns 0 when the full time passed, 1 when cut short. */
int sim_sleep(struct cuzk_engine *e, struct job *j, uint64_t ns);

#endif
