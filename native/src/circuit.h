/* circuit.h — the R1CS workload: a MiMC-style hash chain, one multiplication gate per
 * constraint, whose witness (A, B, C with A[i] * B[i] = C[i]) is what synthesis produces. */
#ifndef CUZK_CIRCUIT_H
#define CUZK_CIRCUIT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "field.h"

#define CIRCUIT_MIN_LOG2 1u
#define CIRCUIT_MAX_LOG2 22u

/* Bytes of the three witness vectors of a 2^log2n-constraint partition (what synthesis
 * allocates and the memory budget reserves). */
static inline uint64_t circuit_witness_bytes(unsigned log2n) {
  return (uint64_t)3 * ((uint64_t)1 << log2n) * sizeof(gl_t);
}

/* Seed of a job: request id bytes and handle; of a partition: job seed, kind and index. */
uint64_t circuit_job_seed(const char *request_id, size_t len, uint64_t job_handle);
uint64_t circuit_partition_seed(uint64_t job_seed, uint32_t kind, uint32_t index);

/* Fills a, b, c (2^log2n elements each). Checks *abort (may be NULL) every few thousand
 * constraints; returns 0 when complete, 1 when abandoned because *abort became nonzero. */
int circuit_synthesize(uint64_t seed, unsigned log2n, gl_t *a, gl_t *b, gl_t *c,
                       const atomic_int *abort);

#endif
