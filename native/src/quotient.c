/* quotient.c — the quotient pipeline the GPU stage runs:
 *   A, B, C evaluations --iNTT--> coefficients --coset NTT--> evaluations on g*<w>
 *   --pointwise (A*B - C) / Z(g w^i), Z = x^n - 1 is the constant g^n - 1 there-->
 *   --inverse coset NTT--> H coefficients (the kernels, under the GPU lock); then, in the
 *   finalize tail outside the lock, s = challenge(inputs, job seed, digest(H)) and
 *   A(s), B(s), C(s), H(s) by Horner. A*B - C is divisible by Z, so H*Z = A*B - C exactly
 *   even though A*B has degree 2n - 2 (reducing modulo x^n - g^n only rescales by g^n - 1). */
#include "quotient.h"

#include "hash.h"

#include <stdlib.h>
#include <string.h>

#define COSET_SHIFT GL_GENERATOR

int quotient_prepare(quotient_work *q, unsigned log2n) {
  q->x = q->y = NULL;
  if (ntt_plan_init(&q->plan, log2n) != 0) return -1;
  q->x = malloc(q->plan.n * sizeof(gl_t));
  q->y = malloc(q->plan.n * sizeof(gl_t));
  if (!q->x || !q->y) {
    quotient_release(q);
    return -1;
  }
  return 0;
}

void quotient_release(quotient_work *q) {
  ntt_plan_free(&q->plan);
  free(q->x);
  free(q->y);
  q->x = q->y = NULL;
}

gl_t poly_eval(const gl_t *coeffs, size_t n, gl_t s) {
  gl_t acc = 0;
  for (size_t i = n; i-- > 0;) acc = gl_add(gl_mul(acc, s), coeffs[i]);
  return acc;
}

static int aborted(const atomic_int *abort) {
  return abort && atomic_load_explicit(abort, memory_order_relaxed);
}

/* Coefficients -> evaluations on the coset, bit-reversed order (pointwise ops only). */
static void coset_evals(const ntt_plan *plan, gl_t *dst, const gl_t *coeffs) {
  memcpy(dst, coeffs, plan->n * sizeof(gl_t));
  ntt_scale_powers(dst, plan->n, 1, COSET_SHIFT);
  ntt_forward_nr(plan, dst);
}

int quotient_kernels(quotient_work *q, gl_t *a, gl_t *b, gl_t *c, const atomic_int *abort) {
  const ntt_plan *plan = &q->plan;
  size_t n = plan->n;
  gl_t *vec[3] = {a, b, c};
  for (int v = 0; v < 3; v++) {
    if (aborted(abort)) return 1;
    ntt_inverse(plan, vec[v]);
  }
  if (aborted(abort)) return 1;
  coset_evals(plan, q->x, a);
  coset_evals(plan, q->y, b);
  for (size_t i = 0; i < n; i++) q->x[i] = gl_mul(q->x[i], q->y[i]);
  if (aborted(abort)) return 1;
  coset_evals(plan, q->y, c);
  gl_t z_inv = gl_inv(gl_sub(gl_pow(COSET_SHIFT, n), 1));
  for (size_t i = 0; i < n; i++) q->x[i] = gl_mul(gl_sub(q->x[i], q->y[i]), z_inv);
  if (aborted(abort)) return 1;
  ntt_inverse_rn_unscaled(plan, q->x);
  ntt_scale_powers(q->x, n, plan->n_inv, gl_inv(COSET_SHIFT)); /* H coefficients */
  return 0;
}

#define CHECKPOINT_TAG 0x63686b70ull /* "chkp" */

int quotient_finish(const gl_t *h, const gl_t *a, const gl_t *b, const gl_t *c,
                    unsigned log2n, uint32_t kind, uint32_t index, uint64_t seed,
                    uint64_t job_seed, unsigned passes, partition_proof *out,
                    const atomic_int *abort) {
  size_t n = (size_t)1 << log2n;
  out->index = index;
  out->log2n = log2n;
  out->seed = seed;
  out->h_digest = proof_digest(h, n);
  out->s = proof_challenge(kind, index, log2n, seed, job_seed, out->h_digest);
  out->a_s = poly_eval(a, n, out->s);
  out->b_s = poly_eval(b, n, out->s);
  out->c_s = poly_eval(c, n, out->s);
  out->h_s = poly_eval(h, n, out->s);
  for (unsigned k = 1; k < passes; k++) {
    if (aborted(abort)) return 1;
    /* a further point, derived from s; never in the domain with overwhelming probability
     * (a point in it would only make this check vacuous, not wrong) */
    gl_t x = gl_from_u64(mix64(out->s ^ (CHECKPOINT_TAG + k)));
    gl_t lhs = gl_sub(gl_mul(poly_eval(a, n, x), poly_eval(b, n, x)), poly_eval(c, n, x));
    gl_t rhs = gl_mul(poly_eval(h, n, x), gl_sub(gl_pow(x, n), 1));
    if (lhs != rhs) return -1;
  }
  return 0;
}

int quotient_run(quotient_work *q, gl_t *a, gl_t *b, gl_t *c, uint32_t kind,
                 uint32_t index, uint64_t seed, uint64_t job_seed, partition_proof *out,
                 const atomic_int *abort) {
  if (quotient_kernels(q, a, b, c, abort)) return 1;
  return quotient_finish(q->x, a, b, c, q->plan.log2n, kind, index, seed, job_seed, 1, out,
                         abort) != 0;
}
