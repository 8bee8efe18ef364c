/* ntt.c — iterative radix-2 NTT kernels (the "GPU" kernels of the cpu backend). */
#include "ntt.h"

#include <stdlib.h>

int ntt_plan_init(ntt_plan *plan, unsigned log2n) {
  plan->tw = plan->itw = NULL;
  if (log2n == 0 || log2n > NTT_MAX_LOG2) return -1;
  size_t n = (size_t)1 << log2n, half = n / 2;
  plan->log2n = log2n;
  plan->n = n;
  plan->omega = gl_root_of_unity(log2n);
  plan->n_inv = gl_inv((gl_t)n);
  /* Stage-major layout: the stage with half-length len reads its len twiddles
   * contiguously at offset len - 1 (n - 1 entries in all), so no stage strides through
   * memory. */
  plan->tw = malloc(n * sizeof(gl_t));
  plan->itw = malloc(n * sizeof(gl_t));
  if (!plan->tw || !plan->itw) {
    ntt_plan_free(plan);
    return -1;
  }
  gl_t *w = plan->tw + half - 1, *wi = plan->itw + half - 1; /* largest stage first */
  gl_t x = 1, xi = 1, omega_inv = gl_inv(plan->omega);
  for (size_t j = 0; j < half; j++) {
    w[j] = x;
    wi[j] = xi;
    x = gl_mul(x, plan->omega);
    xi = gl_mul(xi, omega_inv);
  }
  /* stage len uses omega^(j * n / (2 len)) = the even entries of stage 2 len */
  for (size_t len = half / 2; len >= 1; len >>= 1) {
    for (size_t j = 0; j < len; j++) {
      plan->tw[len - 1 + j] = plan->tw[2 * len - 1 + 2 * j];
      plan->itw[len - 1 + j] = plan->itw[2 * len - 1 + 2 * j];
    }
  }
  return 0;
}

void ntt_plan_free(ntt_plan *plan) {
  free(plan->tw);
  free(plan->itw);
  plan->tw = plan->itw = NULL;
}

void ntt_bitrev_permute(gl_t *a, unsigned log2n) {
  size_t n = (size_t)1 << log2n;
  for (size_t i = 1, j = 0; i < n; i++) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) {
      gl_t t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }
}

void ntt_forward_nr(const ntt_plan *plan, gl_t *a) {
  size_t n = plan->n;
  for (size_t len = n / 2; len >= 1; len >>= 1) {
    const gl_t *tw = plan->tw + len - 1;
    for (size_t start = 0; start < n; start += 2 * len) {
      gl_t *lo = a + start, *hi = a + start + len;
      /* j == 0: twiddle is 1, skip the multiplication */
      gl_t u = lo[0], v = hi[0];
      lo[0] = gl_add(u, v);
      hi[0] = gl_sub(u, v);
      for (size_t j = 1; j < len; j++) {
        u = lo[j];
        v = hi[j];
        lo[j] = gl_add(u, v);
        hi[j] = gl_mul(gl_sub(u, v), tw[j]);
      }
    }
  }
}

void ntt_inverse_rn_unscaled(const ntt_plan *plan, gl_t *a) {
  size_t n = plan->n;
  for (size_t len = 1; len < n; len <<= 1) {
    const gl_t *itw = plan->itw + len - 1;
    for (size_t start = 0; start < n; start += 2 * len) {
      gl_t *lo = a + start, *hi = a + start + len;
      gl_t u = lo[0], v = hi[0];
      lo[0] = gl_add(u, v);
      hi[0] = gl_sub(u, v);
      for (size_t j = 1; j < len; j++) {
        u = lo[j];
        v = gl_mul(hi[j], itw[j]);
        lo[j] = gl_add(u, v);
        hi[j] = gl_sub(u, v);
      }
    }
  }
}

void ntt_scale_powers(gl_t *a, size_t n, gl_t scale, gl_t shift) {
  gl_t f = scale;
  for (size_t i = 0; i < n; i++) {
    a[i] = gl_mul(a[i], f);
    f = gl_mul(f, shift);
  }
}

void ntt_forward(const ntt_plan *plan, gl_t *a) {
  ntt_forward_nr(plan, a);
  ntt_bitrev_permute(a, plan->log2n);
}

void ntt_inverse(const ntt_plan *plan, gl_t *a) {
  ntt_bitrev_permute(a, plan->log2n);
  ntt_inverse_rn_unscaled(plan, a);
  ntt_scale_powers(a, plan->n, plan->n_inv, 1);
}

void ntt_coset_forward(const ntt_plan *plan, gl_t *a, gl_t shift) {
  ntt_scale_powers(a, plan->n, 1, shift);
  ntt_forward(plan, a);
}

void ntt_coset_inverse(const ntt_plan *plan, gl_t *a, gl_t shift) {
  ntt_bitrev_permute(a, plan->log2n);
  ntt_inverse_rn_unscaled(plan, a);
  ntt_scale_powers(a, plan->n, plan->n_inv, gl_inv(shift));
}
