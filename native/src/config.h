/* config.h — the engine configuration and its strict reader (cuzk_engine_open's JSON). */
#ifndef CUZK_CONFIG_H
#define CUZK_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "cuzk_engine.h"

#define CONFIG_MAX_BYTES 65536u
#define CFG_MAX_GPUS 64u
#define CFG_MAX_WORKERS_PER_GPU 8u
#define CFG_MAX_SYNTH 64u
#define CFG_MAX_QUEUE 1000000u
#define CFG_MIN_RING 2u
#define CFG_MAX_RING (1u << 22)
#define CFG_MAX_RETENTION_MS 86400000u
#define CFG_MAX_BUDGET (1ull << 50)
#define CFG_MAX_SIM_MS 1.0e7
#define CFG_NAME_MAX 64u /* bytes incl. NUL */
#define CFG_MAX_FINALIZE_QUEUE 64u
#define CFG_MAX_FINALIZE_PASSES 256u
#define CFG_DEFAULT_FINALIZE_PASSES 4u

enum backend_kind { BACKEND_CPU = 0, BACKEND_SIM = 1 };
enum status_bug_mode { STATUS_BUG_CLOBBER = 0, STATUS_BUG_SKIP = 1 };

typedef struct sim_timing {
  double synth_ms, gpu_ms, finalize_ms, jitter;
} sim_timing;

typedef struct engine_config {
  uint32_t gpus;
  uint32_t workers_per_gpu;
  uint32_t synthesis_concurrency;
  uint32_t queue_limit;
  int backend;
  uint32_t event_ring_capacity;
  int events;
  uint64_t finished_retention_ms;
  uint64_t memory_budget_bytes;
  uint32_t sizes[CUZK_KIND_COUNT];
  sim_timing sim[CUZK_KIND_COUNT];
  double time_scale;
  int split_proving;         /* the finalize tail runs on the worker's finalizer thread */
  uint32_t finalize_queue;   /* per-worker bound of partitions waiting for the finalizer */
  uint32_t finalize_passes;  /* cpu backend: evaluation passes of the finalize tail */
  uint64_t seed;
  char gpu_names[CFG_MAX_GPUS][CFG_NAME_MAX]; /* "" = default name */
  struct {
    uint64_t fail_partition_nth;
    double fail_partition_rate;
    uint64_t seed;
    uint64_t corrupt_proof_nth;
    uint64_t fail_synthesis_nth; /* the n-th partition synthesis fails */
    int fail_aborts_job;         /* a failed partition aborts its job (default 1) */
    int status_bug_kind; /* -1 = off */
    int status_bug_mode; /* enum status_bug_mode */
  } faults;
} engine_config;

void config_defaults(engine_config *cfg);
/* Parses and validates; CUZK_OK or CUZK_EINVAL/CUZK_ENOMEM with a message naming the key. */
int config_parse(const char *json, engine_config *cfg, char *err, size_t errlen);
const char *backend_name(int backend);

#endif
