/* kinds.h — static per-proof-kind facts: names, partition counts, priorities, default
 * sizes and the sim backend's default timing model. */
#ifndef CUZK_KINDS_H
#define CUZK_KINDS_H

#include <stddef.h>
#include <stdint.h>

typedef struct kind_info {
  const char *name;        /* canonical cuzk name */
  uint32_t partitions;     /* default partitions per proof (cuzk's shapes) */
  int32_t priority;        /* default priority: higher runs first */
  uint32_t log2_size;      /* default constraints per partition (log2), scaled down */
  double sim_synth_ms;     /* sim backend: synthesis time per partition on a real box */
  double sim_gpu_ms;       /* sim backend: kernel time per partition (under the GPU lock) */
  double sim_finalize_ms;  /* sim backend: finalize tail per partition (CPU epilogue) */
  double sim_jitter;       /* sim backend: uniform relative jitter (+/-) */
} kind_info;

extern const kind_info KINDS[]; /* indexed by cuzk_proof_kind */

/* Index of the kind named s[0..len), or -1. */
int kind_from_name(const char *s, size_t len);

#endif
