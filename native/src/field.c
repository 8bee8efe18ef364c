/* field.c — the non-inline Goldilocks operations (exponentiation, inversion, roots). */
#include "field.h"

gl_t gl_pow(gl_t base, uint64_t exp) {
  gl_t acc = 1;
  while (exp) {
    if (exp & 1) acc = gl_mul(acc, base);
    base = gl_sqr(base);
    exp >>= 1;
  }
  return acc;
}

gl_t gl_inv(gl_t a) { return a ? gl_pow(a, GL_P - 2) : 0; } /* Fermat */

gl_t gl_root_of_unity(unsigned log2n) {
  if (log2n > GL_TWO_ADICITY) return 0;
  /* g^((p-1)/2^32) has order exactly 2^32; square it down to the order we want. */
  gl_t w = gl_pow(GL_GENERATOR, (GL_P - 1) >> GL_TWO_ADICITY);
  for (unsigned i = log2n; i < GL_TWO_ADICITY; i++) w = gl_sqr(w);
  return w;
}

int gl_batch_inv(const gl_t *in, gl_t *out, gl_t *scratch, size_t n) {
  if (n == 0) return 1;
  gl_t acc = 1;
  for (size_t i = 0; i < n; i++) {
    if (in[i] == 0) return 0;
    scratch[i] = acc; /* product of in[0..i) */
    acc = gl_mul(acc, in[i]);
  }
  gl_t inv = gl_inv(acc);
  for (size_t i = n; i-- > 0;) {
    gl_t x = in[i]; /* read before writing: in and out may alias */
    out[i] = gl_mul(inv, scratch[i]);
    inv = gl_mul(inv, x);
  }
  return 1;
}
