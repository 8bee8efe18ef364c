/* proof.c — challenge derivation, job proof serialization, and cuzk_proof_verify.
 * The verifier is independent of the prover's NTT path: it re-synthesizes the witness and
 * evaluates A, B, C at s by the barycentric formula over the domain. */
#include "proof.h"
#include "quotient.h"

#include <stdlib.h>
#include <string.h>

#include "circuit.h"
#include "cuzk_engine.h"
#include "hash.h"
#include "util.h"

#define CHALLENGE_TAG 0x6368616cull /* "chal" */
#define DIGEST_TAG 0x48646967ull    /* "Hdig" */
#define MAX_VERIFY_ID 255u          /* = the longest request id cuzk_submit accepts */

gl_t proof_challenge(uint32_t kind, uint32_t index, uint32_t log2n, uint64_t seed,
                     uint64_t job_seed, uint64_t h_digest) {
  hash_state h;
  hash_init(&h, CHALLENGE_TAG);
  hash_u64(&h, ((uint64_t)kind << 32) | index);
  hash_u64(&h, log2n);
  hash_u64(&h, job_seed);
  hash_u64(&h, seed);
  hash_u64(&h, h_digest);
  uint64_t n = (uint64_t)1 << log2n;
  for (uint64_t ctr = 0;; ctr++) {
    hash_u64(&h, ctr); /* rejection sampling: canonical and outside the domain */
    uint64_t v = hash_final(&h);
    if (v < GL_P && v != 0 && gl_pow(v, n) != 1) return v;
  }
}

uint64_t proof_digest(const gl_t *coeffs, size_t n) {
  hash_state h;
  hash_init(&h, DIGEST_TAG);
  hash_u64(&h, n);
  hash_words(&h, coeffs, n);
  return hash_final(&h);
}

void proof_serialize(uint8_t *out, uint32_t kind, int sim, uint64_t job_handle,
                     const partition_proof *parts, uint32_t n) {
  put_u32(out, PROOF_MAGIC);
  out[4] = (uint8_t)PROOF_VERSION;
  out[5] = (uint8_t)(PROOF_VERSION >> 8);
  out[6] = (uint8_t)kind;
  out[7] = sim ? PROOF_FLAG_SIM : 0;
  put_u32(out + 8, n);
  put_u32(out + 12, 0);
  put_u64(out + 16, job_handle);
  if (sim) return;
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *p = out + PROOF_HEADER_BYTES + i * PROOF_PARTITION_BYTES;
    const partition_proof *pp = &parts[i];
    put_u32(p, pp->index);
    put_u32(p + 4, pp->log2n);
    put_u64(p + 8, pp->seed);
    put_u64(p + 16, pp->s);
    put_u64(p + 24, pp->a_s);
    put_u64(p + 32, pp->b_s);
    put_u64(p + 40, pp->c_s);
    put_u64(p + 48, pp->h_s);
    put_u64(p + 56, pp->h_digest);
  }
}

/* A(s), B(s), C(s) from evaluations over <w>, |<w>| = n:
 *   f(s) = (s^n - 1)/n * sum_i f_i w^i / (s - w^i).  s is never in the domain. */
static int barycentric3(const gl_t *a, const gl_t *b, const gl_t *c, unsigned log2n, gl_t s,
                        gl_t *out, gl_t *d, gl_t *scratch) {
  size_t n = (size_t)1 << log2n;
  gl_t w = gl_root_of_unity(log2n), wi = 1;
  for (size_t i = 0; i < n; i++) {
    d[i] = gl_sub(s, wi);
    wi = gl_mul(wi, w);
  }
  if (!gl_batch_inv(d, d, scratch, n)) return 0;
  gl_t sa = 0, sb = 0, sc = 0;
  wi = 1;
  for (size_t i = 0; i < n; i++) {
    gl_t l = gl_mul(wi, d[i]);
    sa = gl_add(sa, gl_mul(a[i], l));
    sb = gl_add(sb, gl_mul(b[i], l));
    sc = gl_add(sc, gl_mul(c[i], l));
    wi = gl_mul(wi, w);
  }
  gl_t f = gl_mul(gl_sub(gl_pow(s, n), 1), gl_inv((gl_t)n));
  out[0] = gl_mul(f, sa);
  out[1] = gl_mul(f, sb);
  out[2] = gl_mul(f, sc);
  return 1;
}

/* 1 valid, 0 invalid (reason in err), -1 out of memory. */
static int verify_partition(uint32_t kind, uint32_t i, uint64_t job_seed, const uint8_t *p,
                            char *err, size_t errlen) {
  partition_proof pp = {
      .index = get_u32(p),
      .log2n = get_u32(p + 4),
      .seed = get_u64(p + 8),
      .s = get_u64(p + 16),
      .a_s = get_u64(p + 24),
      .b_s = get_u64(p + 32),
      .c_s = get_u64(p + 40),
      .h_s = get_u64(p + 48),
      .h_digest = get_u64(p + 56),
  };
  if (pp.index != i) {
    err_set(err, errlen, "partition %u: index field says %u", i, pp.index);
    return 0;
  }
  if (pp.log2n < CIRCUIT_MIN_LOG2 || pp.log2n > CIRCUIT_MAX_LOG2) {
    err_set(err, errlen, "partition %u: log2 size %u out of range 1..22", i, pp.log2n);
    return 0;
  }
  if (pp.s >= GL_P || pp.a_s >= GL_P || pp.b_s >= GL_P || pp.c_s >= GL_P || pp.h_s >= GL_P) {
    err_set(err, errlen, "partition %u: field element not canonical", i);
    return 0;
  }
  if (pp.seed != circuit_partition_seed(job_seed, kind, i)) {
    err_set(err, errlen,
            "partition %u: witness seed is not this job's (a proof of another job, or a "
            "changed seed)",
            i);
    return 0;
  }
  if (proof_challenge(kind, i, pp.log2n, pp.seed, job_seed, pp.h_digest) != pp.s) {
    err_set(err, errlen, "partition %u: challenge s does not match the transcript", i);
    return 0;
  }
  size_t n = (size_t)1 << pp.log2n;
  gl_t *mem = malloc(5 * n * sizeof(gl_t));
  if (!mem) return -1;
  gl_t *a = mem, *b = mem + n, *c = mem + 2 * n, *d = mem + 3 * n, *scratch = mem + 4 * n;
  circuit_synthesize(pp.seed, pp.log2n, a, b, c, NULL);
  gl_t ev[3];
  int ok = barycentric3(a, b, c, pp.log2n, pp.s, ev, d, scratch);
  if (!ok) {
    free(mem);
    err_set(err, errlen, "partition %u: challenge lies in the domain", i);
    return 0;
  }
  if (ev[0] != pp.a_s || ev[1] != pp.b_s || ev[2] != pp.c_s) {
    free(mem);
    err_set(err, errlen, "partition %u: A(s), B(s) or C(s) disagrees with the witness", i);
    return 0;
  }
  gl_t lhs = gl_sub(gl_mul(pp.a_s, pp.b_s), pp.c_s);
  gl_t rhs = gl_mul(pp.h_s, gl_sub(gl_pow(pp.s, n), 1));
  if (lhs != rhs) {
    free(mem);
    err_set(err, errlen, "partition %u: A(s)*B(s) - C(s) != H(s)*(s^n - 1)", i);
    return 0;
  }
  /* The equation alone can be met by choosing H(s) after the fact; the quotient is what the
   * GPU stage computes, so recompute it from the witness: its digest (which fixed the
   * challenge) and H(s) must be the proof's. This costs what the GPU stage costs. */
  quotient_work q;
  if (quotient_prepare(&q, pp.log2n) != 0) {
    free(mem);
    return -1;
  }
  partition_proof expect;
  quotient_run(&q, a, b, c, kind, i, pp.seed, job_seed, &expect, NULL);
  quotient_release(&q);
  free(mem);
  if (expect.h_digest != pp.h_digest || expect.h_s != pp.h_s || expect.s != pp.s) {
    err_set(err, errlen, "partition %u: H is not the quotient of the witness", i);
    return 0;
  }
  return 1;
}

CUZK_EXPORT int cuzk_proof_verify(const uint8_t *proof, uint32_t len, const char *request_id,
                                  uint32_t *valid, char *err, size_t errlen) {
  err_clear(err, errlen);
  if (!valid) {
    err_set(err, errlen, "cuzk_proof_verify: valid must not be NULL");
    return CUZK_EINVAL;
  }
  *valid = 0;
  if (!proof) {
    err_set(err, errlen, "cuzk_proof_verify: proof must not be NULL");
    return CUZK_EINVAL;
  }
  if (!request_id) {
    err_set(err, errlen,
            "cuzk_proof_verify: request_id must not be NULL (the id of the job the proof is "
            "presented for)");
    return CUZK_EINVAL;
  }
  size_t id_len = strnlen(request_id, MAX_VERIFY_ID + 1);
  if (id_len > MAX_VERIFY_ID) {
    err_set(err, errlen, "cuzk_proof_verify: request_id longer than %u bytes", MAX_VERIFY_ID);
    return CUZK_EINVAL;
  }
  if (len < PROOF_HEADER_BYTES) {
    err_set(err, errlen, "cuzk_proof_verify: %u bytes is shorter than the %u-byte header", len,
            PROOF_HEADER_BYTES);
    return CUZK_EINVAL;
  }
  if (get_u32(proof) != PROOF_MAGIC) {
    err_set(err, errlen, "cuzk_proof_verify: bad magic (not a cuzk reference proof)");
    return CUZK_EINVAL;
  }
  uint32_t version = proof[4] | (uint32_t)proof[5] << 8;
  uint32_t kind = proof[6], flags = proof[7], parts = get_u32(proof + 8);
  if (version != PROOF_VERSION) {
    err_set(err, errlen, "cuzk_proof_verify: unsupported proof version %u (expected %u)",
            version, PROOF_VERSION);
    return CUZK_EINVAL;
  }
  if (kind >= CUZK_KIND_COUNT || (flags & ~PROOF_FLAG_SIM) || get_u32(proof + 12) != 0 ||
      parts == 0 || parts > PROOF_MAX_PARTITIONS) {
    err_set(err, errlen, "cuzk_proof_verify: malformed header (kind %u, flags %u, %u partitions)",
            kind, flags, parts);
    return CUZK_EINVAL;
  }
  int sim = (flags & PROOF_FLAG_SIM) != 0;
  if (len != proof_bytes(parts, sim)) {
    err_set(err, errlen, "cuzk_proof_verify: length %u, expected %u for %u partitions", len,
            proof_bytes(parts, sim), parts);
    return CUZK_EINVAL;
  }
  if (sim) {
    err_set(err, errlen,
            "sim backend proof: it carries no arithmetic, so there is nothing to verify");
    return CUZK_OK;
  }
  /* Bound the work an untrusted proof can ask for before doing any: every partition of a
   * proof has one size, and re-proving all of them stays within PROOF_MAX_VERIFY_LOG2. */
  uint32_t log2n = get_u32(proof + PROOF_HEADER_BYTES + 4);
  for (uint32_t i = 1; i < parts; i++) {
    if (get_u32(proof + PROOF_HEADER_BYTES + i * PROOF_PARTITION_BYTES + 4) != log2n) {
      err_set(err, errlen, "partition %u: size differs from partition 0 (one size per proof)", i);
      return CUZK_OK;
    }
  }
  if (log2n <= CIRCUIT_MAX_LOG2 && ((uint64_t)parts << log2n) > ((uint64_t)1 << PROOF_MAX_VERIFY_LOG2)) {
    err_set(err, errlen,
            "cuzk_proof_verify: %u partitions of 2^%u constraints exceed the verification bound "
            "of 2^%u constraints",
            parts, log2n, PROOF_MAX_VERIFY_LOG2);
    return CUZK_EINVAL;
  }
  uint64_t job_seed = circuit_job_seed(request_id, id_len, get_u64(proof + 16));
  for (uint32_t i = 0; i < parts; i++) {
    int r = verify_partition(kind, i, job_seed,
                             proof + PROOF_HEADER_BYTES + i * PROOF_PARTITION_BYTES, err, errlen);
    if (r < 0) {
      err_set(err, errlen, "cuzk_proof_verify: out of memory re-synthesizing partition %u", i);
      return CUZK_ENOMEM;
    }
    if (r == 0) return CUZK_OK;
  }
  *valid = 1;
  return CUZK_OK;
}
