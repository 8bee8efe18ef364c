/* test_kernels.c — known-answer tests of the arithmetic: Goldilocks field, NTT against a
 * naive DFT (2^1..2^8), NTT and coset-NTT round trips up to 2^20, the quotient identity,
 * and a proof made directly from the kernels verifying (and failing when corrupted). */
#include <string.h>

#include "circuit.h"
#include "field.h"
#include "harness.h"
#include "ntt.h"
#include "proof.h"
#include "quotient.h"

static uint64_t rng_state = 0x1234567;
static gl_t rnd(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  uint64_t z = rng_state ^ (rng_state >> 29);
  return gl_from_u64(z * 0xbf58476d1ce4e5b9ull);
}

void test_field_known_answers(void) {
  CHECK(gl_add(GL_P - 1, 1) == 0, "(p-1)+1 != 0");
  CHECK(gl_add(GL_P - 1, GL_P - 1) == GL_P - 2, "(p-1)+(p-1) != p-2");
  CHECK(gl_sub(0, 1) == GL_P - 1, "0-1 != p-1");
  CHECK(gl_mul(GL_P - 1, GL_P - 1) == 1, "(-1)^2 != 1");
  CHECK(gl_mul(1ull << 32, 1ull << 32) == GL_EPS, "2^64 mod p != 2^32-1");
  CHECK(gl_mul(1ull << 48, 1ull << 48) == GL_P - 1, "2^96 mod p != -1");
  CHECK(gl_pow(GL_GENERATOR, GL_P - 1) == 1, "Fermat");
  CHECK(gl_pow(GL_GENERATOR, (GL_P - 1) / 2) == GL_P - 1, "7 must be a non-residue");
  /* 2^32-th root of unity of Goldilocks with generator 7 (as in plonky2) */
  CHECK(gl_root_of_unity(32) == 1753635133440165772ull, "2^32 root of unity %llu",
        (unsigned long long)gl_root_of_unity(32));
  for (unsigned k = 1; k <= 24; k++) {
    gl_t w = gl_root_of_unity(k);
    CHECK(gl_pow(w, 1ull << k) == 1 && gl_pow(w, 1ull << (k - 1)) == GL_P - 1,
          "root of unity of order 2^%u is not primitive", k);
  }
  for (int i = 0; i < 20000; i++) {
    gl_t a = rnd(), b = rnd(), c = rnd();
    unsigned __int128 prod = (unsigned __int128)a * b % GL_P;
    CHECK(gl_mul(a, b) == (gl_t)prod, "mul mismatch for %llu * %llu", (unsigned long long)a,
          (unsigned long long)b);
    CHECK(gl_add(a, b) == (gl_t)(((unsigned __int128)a + b) % GL_P), "add mismatch");
    CHECK(gl_sub(gl_add(a, b), b) == a, "sub mismatch");
    CHECK(gl_mul(gl_mul(a, b), c) == gl_mul(a, gl_mul(b, c)), "mul not associative");
    if (a) CHECK(gl_mul(a, gl_inv(a)) == 1, "inverse of %llu", (unsigned long long)a);
  }
  /* values at and above p reduce */
  CHECK(gl_from_u64(GL_P) == 0 && gl_from_u64(UINT64_MAX) == GL_EPS - 1, "canonicalisation");
  gl_t in[5] = {3, 5, 7, GL_P - 1, 123456789}, out[5], scratch[5];
  CHECK(gl_batch_inv(in, out, scratch, 5), "batch inverse");
  for (int i = 0; i < 5; i++) CHECK(gl_mul(in[i], out[i]) == 1, "batch inverse %d", i);
}

static void naive_dft(const gl_t *a, gl_t *out, size_t n, gl_t w) {
  for (size_t k = 0; k < n; k++) {
    gl_t acc = 0, wk = gl_pow(w, k), x = 1;
    for (size_t i = 0; i < n; i++) {
      acc = gl_add(acc, gl_mul(a[i], x));
      x = gl_mul(x, wk);
    }
    out[k] = acc;
  }
}

void test_ntt_vs_naive_dft(void) {
  for (unsigned k = 1; k <= 8; k++) {
    size_t n = (size_t)1 << k;
    ntt_plan plan;
    CHECK(ntt_plan_init(&plan, k) == 0, "plan 2^%u", k);
    gl_t a[256], x[256], ref[256];
    for (size_t i = 0; i < n; i++) a[i] = rnd();
    memcpy(x, a, n * sizeof *a);
    naive_dft(a, ref, n, plan.omega);
    ntt_forward(&plan, x);
    CHECK(memcmp(x, ref, n * sizeof *x) == 0, "forward NTT != DFT at 2^%u", k);
    /* inverse: DFT with omega^-1, scaled by 1/n */
    naive_dft(a, ref, n, gl_inv(plan.omega));
    for (size_t i = 0; i < n; i++) ref[i] = gl_mul(ref[i], plan.n_inv);
    memcpy(x, a, n * sizeof *a);
    ntt_inverse(&plan, x);
    CHECK(memcmp(x, ref, n * sizeof *x) == 0, "inverse NTT != inverse DFT at 2^%u", k);
    /* coset: evaluations of the polynomial a at g * omega^i */
    memcpy(x, a, n * sizeof *a);
    ntt_coset_forward(&plan, x, GL_GENERATOR);
    for (size_t i = 0; i < n; i++) {
      gl_t pt = gl_mul(GL_GENERATOR, gl_pow(plan.omega, i));
      CHECK(x[i] == poly_eval(a, n, pt), "coset NTT point %zu at 2^%u", i, k);
    }
    ntt_plan_free(&plan);
  }
}

static void round_trip(unsigned k, int coset) {
  size_t n = (size_t)1 << k;
  ntt_plan plan;
  CHECK(ntt_plan_init(&plan, k) == 0, "plan 2^%u", k);
  gl_t *a = malloc(n * sizeof *a), *x = malloc(n * sizeof *x);
  CHECK(a && x, "oom");
  for (size_t i = 0; i < n; i++) a[i] = rnd();
  memcpy(x, a, n * sizeof *a);
  if (coset) {
    ntt_coset_forward(&plan, x, GL_GENERATOR);
    ntt_coset_inverse(&plan, x, GL_GENERATOR);
  } else {
    ntt_forward(&plan, x);
    CHECK(memcmp(x, a, n * sizeof *a) != 0, "forward NTT changed nothing");
    ntt_inverse(&plan, x);
  }
  CHECK(memcmp(x, a, n * sizeof *a) == 0, "%s NTT round trip at 2^%u", coset ? "coset" : "plain", k);
  free(a);
  free(x);
  ntt_plan_free(&plan);
}

void test_ntt_round_trips(void) {
  unsigned big = tsize(20, 16);
  round_trip(big, 0);
  round_trip(big, 1);
  round_trip(12, 1);
  test_note("NTT and coset NTT round trips at 2^%u", big);
}

void test_quotient_and_direct_proof(void) {
  unsigned k = tsize(12, 8);
  size_t n = (size_t)1 << k;
  gl_t *w = malloc(circuit_witness_bytes(k));
  CHECK(w, "oom");
  uint64_t seed = circuit_partition_seed(circuit_job_seed("kat", 3, 1), 1, 0);
  CHECK(circuit_synthesize(seed, k, w, w + n, w + 2 * n, NULL) == 0, "synthesis");
  for (size_t i = 0; i < n; i++) CHECK(gl_mul(w[i], w[n + i]) == w[2 * n + i], "A*B != C at %zu", i);
  quotient_work q;
  CHECK(quotient_prepare(&q, k) == 0, "prepare");
  partition_proof pp;
  CHECK(quotient_run(&q, w, w + n, w + 2 * n, 1, 0, seed, circuit_job_seed("kat", 3, 1), &pp,
                    NULL) == 0,
        "quotient");
  /* H has degree <= n - 2 and H*Z == A*B - C at a random point */
  CHECK(q.x[n - 1] == 0, "H must have degree < n - 1");
  gl_t r = rnd();
  gl_t lhs = gl_sub(gl_mul(poly_eval(w, n, r), poly_eval(w + n, n, r)), poly_eval(w + 2 * n, n, r));
  gl_t rhs = gl_mul(poly_eval(q.x, n, r), gl_sub(gl_pow(r, n), 1));
  CHECK(lhs == rhs, "A(r)B(r) - C(r) != H(r)(r^n - 1)");
  quotient_release(&q);
  uint8_t buf[PROOF_HEADER_BYTES + PROOF_PARTITION_BYTES];
  proof_serialize(buf, 1, 0, 1, &pp, 1); /* job handle 1, request id "kat" */
  uint32_t valid = 9;
  CHECK_RC(cuzk_proof_verify(buf, sizeof buf, "kat", &valid, ERR), CUZK_OK);
  CHECK(valid == 1, "direct proof must verify: %s", g_err);
  /* bound to its job: another request id, or another job handle, does not verify */
  CHECK_RC(cuzk_proof_verify(buf, sizeof buf, "kat2", &valid, ERR), CUZK_OK);
  CHECK(valid == 0 && strstr(g_err, "not this job's"), "wrong request id: %s", g_err);
  {
    uint8_t other[sizeof buf];
    memcpy(other, buf, sizeof buf);
    other[16] ^= 3; /* job handle */
    CHECK_RC(cuzk_proof_verify(other, sizeof other, "kat", &valid, ERR), CUZK_OK);
    CHECK(valid == 0, "another job handle must not verify");
  }
  /* every field of the partition record matters */
  for (uint32_t off = PROOF_HEADER_BYTES; off < sizeof buf; off += 8) {
    uint8_t bad[sizeof buf];
    memcpy(bad, buf, sizeof buf);
    bad[off + 1] ^= 0x10;
    int rc = cuzk_proof_verify(bad, sizeof bad, "kat", &valid, ERR);
    CHECK(rc == CUZK_OK && valid == 0, "corrupting byte %u must fail verification (rc %s)",
          off + 1, cuzk_status_name(rc));
  }
  free(w);
}
