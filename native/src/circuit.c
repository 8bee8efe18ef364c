/* circuit.c — witness synthesis for the MiMC-3 chain x' = (x + k + c_j)^3.
 * Each round is two constraints (one multiplication gate each):
 *   t * t = t2      (A = t,  B = t, C = t2)
 *   t2 * t = x'     (A = t2, B = t, C = x')
 * so A[i] * B[i] = C[i] on every row, and the quotient (A*B - C) / (x^n - 1) exists. */
#include "circuit.h"

#include "hash.h"

#define SEED_TAG_JOB 0x6a6f62ull       /* "job" */
#define SEED_TAG_PART 0x70617274ull    /* "part" */
#define SEED_TAG_WITNESS 0x77746e73ull /* "wtns" */
#define ROUND_TAG 0x4d694d43ull        /* "MiMC" */
#define ABORT_CHECK_MASK 4095u

uint64_t circuit_job_seed(const char *request_id, size_t len, uint64_t job_handle) {
  hash_state h;
  hash_init(&h, SEED_TAG_JOB);
  hash_bytes(&h, request_id, len);
  hash_u64(&h, job_handle);
  return hash_final(&h);
}

uint64_t circuit_partition_seed(uint64_t job_seed, uint32_t kind, uint32_t index) {
  hash_state h;
  hash_init(&h, SEED_TAG_PART);
  hash_u64(&h, job_seed);
  hash_u64(&h, ((uint64_t)kind << 32) | index);
  return hash_final(&h);
}

/* Round constants are a fixed public function of the round index. */
static inline gl_t round_constant(uint64_t j) { return gl_from_u64(mix64(j ^ ROUND_TAG)); }

int circuit_synthesize(uint64_t seed, unsigned log2n, gl_t *a, gl_t *b, gl_t *c,
                       const atomic_int *abort) {
  hash_state h;
  hash_init(&h, SEED_TAG_WITNESS);
  hash_u64(&h, seed);
  gl_t x = gl_from_u64(hash_final(&h)); /* chain input */
  hash_u64(&h, 1);
  gl_t k = gl_from_u64(hash_final(&h)); /* MiMC key */
  size_t rounds = ((size_t)1 << log2n) / 2;
  for (size_t j = 0; j < rounds; j++) {
    if ((j & ABORT_CHECK_MASK) == 0 && abort &&
        atomic_load_explicit(abort, memory_order_relaxed))
      return 1;
    gl_t t = gl_add(gl_add(x, k), round_constant(j));
    gl_t t2 = gl_sqr(t);
    gl_t t3 = gl_mul(t2, t);
    a[2 * j] = t;
    b[2 * j] = t;
    c[2 * j] = t2;
    a[2 * j + 1] = t2;
    b[2 * j + 1] = t;
    c[2 * j + 1] = t3;
    x = t3;
  }
  return 0;
}
