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
 * the size-n domain and are turned into coefficients in place; H's coefficients are left
 * in q->x. Returns 0 when done, 1 when abandoned at a kernel boundary because *abort
 * became set (abort may be NULL). */
int quotient_kernels(quotient_work *q, gl_t *a, gl_t *b, gl_t *c, const atomic_int *abort);

/* The finalize tail (split proving's CPU epilogue, outside the lock), from the
 * coefficients of A, B, C and H: H's commitment (digest), the Fiat-Shamir challenge s
 * (bound to the job seed), and A(s), B(s), C(s), H(s) into out. With passes > 1 the prover
 * also checks its quotient at passes - 1 further points derived from s
 * (A(x)B(x) - C(x) = H(x)(x^n - 1)): real work whose amount the finalize_passes key scales.
 * Returns 0 done, 1 abandoned (*abort set between passes), -1 a self-check failed. */
int quotient_finish(const gl_t *h, const gl_t *a, const gl_t *b, const gl_t *c,
                    unsigned log2n, uint32_t kind, uint32_t index, uint64_t seed,
                    uint64_t job_seed, unsigned passes, partition_proof *out,
                    const atomic_int *abort);

/* Kernels then a one-pass finish (the verifier's path). */
int quotient_run(quotient_work *q, gl_t *a, gl_t *b, gl_t *c, uint32_t kind,
                 uint32_t index, uint64_t seed, uint64_t job_seed, partition_proof *out,
                 const atomic_int *abort);

/* Horner evaluation of a coefficient vector at s. */
gl_t poly_eval(const gl_t *coeffs, size_t n, gl_t s);

#endif
