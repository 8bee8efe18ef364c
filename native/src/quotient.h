/* quotient.h — the GPU stage of the cpu backend: Groth16-style quotient H = (A*B - C) / Z
 * by NTTs, then evaluations of A, B, C, H at the Fiat-Shamir challenge. */
#ifndef CUZK_QUOTIENT_H
#define CUZK_QUOTIENT_H

#include <stdatomic.h>

#include "ntt.h"
#include "proof.h"

/* Per-partition scratch built during CPU preparation (outside the kernel lock). */
typedef struct quotient_work {
  ntt_plan plan;
  gl_t *x, *y; /* two n-element coset buffers */
} quotient_work;

/* CPU preparation: twiddle tables and scratch. 0 ok, -1 out of memory / bad size. */
int quotient_prepare(quotient_work *q, unsigned log2n);
void quotient_release(quotient_work *q);

/* The kernels (run under the per-GPU lock). a, b, c hold the witness as evaluations over
 * the size-n domain and are turned into coefficients in place. Fills out (all fields).
 * Returns 0 when done, 1 when abandoned at a kernel boundary because *abort became set. */
int quotient_run(quotient_work *q, gl_t *a, gl_t *b, gl_t *c, uint32_t kind,
                 uint32_t index, uint64_t seed, partition_proof *out,
                 const atomic_int *abort);

/* Horner evaluation of a coefficient vector at s. */
gl_t poly_eval(const gl_t *coeffs, size_t n, gl_t s);

#endif
