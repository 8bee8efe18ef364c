/* field.h — Goldilocks field arithmetic, p = 2^64 - 2^32 + 1.
 * Elements are kept canonical (< p). The hot operations are static inline because the NTT
 * loops in ntt.c/quotient.c are bound by them. */
#ifndef CUZK_FIELD_H
#define CUZK_FIELD_H

#include <stddef.h>
#include <stdint.h>

#define GL_P 0xFFFFFFFF00000001ull
#define GL_EPS 0xFFFFFFFFull /* 2^64 mod p = 2^32 - 1 */
#define GL_TWO_ADICITY 32u
#define GL_GENERATOR 7ull /* generator of the multiplicative group */

typedef uint64_t gl_t;

/* Branch-free: the carries are data-dependent and would mispredict half the time. */
static inline gl_t gl_add(gl_t a, gl_t b) {
  gl_t t = a + b;
  t += GL_EPS & -(uint64_t)(t < a); /* wrapped: a + b - 2^64 + (2^64 mod p), cannot wrap again */
  t -= GL_P & -(uint64_t)(t >= GL_P);
  return t;
}

static inline gl_t gl_sub(gl_t a, gl_t b) {
  gl_t t = a - b;
  t -= GL_EPS & -(uint64_t)(a < b); /* wrapped: a - b + 2^64, and 2^64 - p = EPS */
  return t;
}

static inline gl_t gl_neg(gl_t a) { return a ? GL_P - a : 0; }

/* Reduce a 128-bit product using 2^64 = 2^32 - 1 and 2^96 = -1 (mod p). */
static inline gl_t gl_reduce128(unsigned __int128 x) {
  uint64_t lo = (uint64_t)x;
  uint64_t hi = (uint64_t)(x >> 64);
  uint64_t hi_hi = hi >> 32;
  uint64_t hi_lo = hi & GL_EPS;
  uint64_t t0 = lo - hi_hi;
  t0 -= GL_EPS & -(uint64_t)(lo < hi_hi);
  uint64_t t1 = hi_lo * GL_EPS;
  uint64_t t2 = t0 + t1;
  t2 += GL_EPS & -(uint64_t)(t2 < t1);
  t2 -= GL_P & -(uint64_t)(t2 >= GL_P);
  return t2;
}

static inline gl_t gl_mul(gl_t a, gl_t b) { return gl_reduce128((unsigned __int128)a * b); }

static inline gl_t gl_sqr(gl_t a) { return gl_mul(a, a); }

/* Canonical form of an arbitrary 64-bit value. */
static inline gl_t gl_from_u64(uint64_t v) { return v >= GL_P ? v - GL_P : v; }

gl_t gl_pow(gl_t base, uint64_t exp);
gl_t gl_inv(gl_t a); /* a != 0; gl_inv(0) returns 0 */
/* Primitive 2^log2n-th root of unity (log2n <= 32). */
gl_t gl_root_of_unity(unsigned log2n);
/* out[i] = 1 / in[i] for nonzero inputs (Montgomery's trick); scratch holds n elements.
 * in and out may alias. Returns 0 if some input was zero (out is then undefined). */
int gl_batch_inv(const gl_t *in, gl_t *out, gl_t *scratch, size_t n);

#endif
