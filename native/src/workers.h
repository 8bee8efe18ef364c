/* workers.h — thread bodies: synthesis pool, GPU workers, housekeeping. */
#ifndef CUZK_WORKERS_H
#define CUZK_WORKERS_H

void *synth_thread_main(void *engine);
void *gpu_worker_main(void *worker);
void *gpu_finalizer_main(void *worker); /* split proving: one per GPU worker */
void *housekeeping_main(void *engine);

#endif
