/* ntt.h — radix-2 number-theoretic transforms over Goldilocks on a size-2^k domain. */
#ifndef CUZK_NTT_H
#define CUZK_NTT_H

#include "field.h"

#define NTT_MAX_LOG2 24u

/* Twiddle tables for one domain size; built once per partition (CPU preparation). */
typedef struct ntt_plan {
  unsigned log2n;
  size_t n;
  gl_t omega;     /* primitive n-th root of unity */
  gl_t n_inv;     /* 1/n */
  gl_t *tw;       /* forward twiddles, stage-major: stage len at tw[len - 1 + j] */
  gl_t *itw;      /* inverse twiddles, same layout */
} ntt_plan;

/* 0 on success, -1 on bad size or allocation failure. */
int ntt_plan_init(ntt_plan *plan, unsigned log2n);
void ntt_plan_free(ntt_plan *plan);

void ntt_bitrev_permute(gl_t *a, unsigned log2n);
/* Decimation in frequency: natural-order input, bit-reversed DFT output. */
void ntt_forward_nr(const ntt_plan *plan, gl_t *a);
/* Decimation in time with inverse twiddles: bit-reversed input, natural output, NOT scaled
 * by 1/n (callers fold the scale into a pass they make anyway). */
void ntt_inverse_rn_unscaled(const ntt_plan *plan, gl_t *a);

/* Natural-order convenience forms. */
void ntt_forward(const ntt_plan *plan, gl_t *a);   /* evaluations at omega^i */
void ntt_inverse(const ntt_plan *plan, gl_t *a);   /* coefficients from evaluations */
/* Evaluations on the coset shift*<omega> from coefficients, and back. */
void ntt_coset_forward(const ntt_plan *plan, gl_t *a, gl_t shift);
void ntt_coset_inverse(const ntt_plan *plan, gl_t *a, gl_t shift);

/* Multiplies a[i] by scale * shift^i. */
void ntt_scale_powers(gl_t *a, size_t n, gl_t scale, gl_t shift);

#endif
