/* proof.h — partition proof records, the job proof byte format, and verification. */
#ifndef CUZK_PROOF_H
#define CUZK_PROOF_H

#include <stddef.h>
#include <stdint.h>

#include "field.h"

/* What the GPU stage produces for one partition (and what the verifier needs). */
typedef struct partition_proof {
  uint32_t index;
  uint32_t log2n;
  uint64_t seed;     /* witness seed: the verifier re-synthesizes from it */
  gl_t s;            /* Fiat-Shamir challenge */
  gl_t a_s, b_s, c_s, h_s;
  uint64_t h_digest; /* digest of H's coefficients, bound into s */
} partition_proof;

/* Byte format (little-endian):
 *   header, 24 bytes: u32 magic "CZKP" | u16 version | u8 kind | u8 flags | u32 partitions
 *                     | u32 reserved (0) | u64 job handle (with the request id the
 *                     verifier is given, it fixes the job seed)
 *   then, unless flags & PROOF_FLAG_SIM, per partition 64 bytes:
 *                     u32 index | u32 log2n | u64 seed | u64 s | u64 A(s) | u64 B(s)
 *                     | u64 C(s) | u64 H(s) | u64 H digest                                 */
#define PROOF_MAGIC 0x504b5a43u /* "CZKP" read as little-endian u32 */
#define PROOF_VERSION 2u
#define PROOF_HEADER_BYTES 24u
#define PROOF_PARTITION_BYTES 64u
#define PROOF_FLAG_SIM 0x1u
#define PROOF_MAX_PARTITIONS 256u
/* cuzk_proof_verify re-proves every partition: at most 2^26 constraints in all (10 PoRep
 * partitions at the largest configurable size, 2^22, fit). */
#define PROOF_MAX_VERIFY_LOG2 26u

/* The challenge s for a partition: hash of the public inputs, the job seed (binding the
 * proof to its job) and H's digest, never a point of the domain (s^n != 1). */
gl_t proof_challenge(uint32_t kind, uint32_t index, uint32_t log2n, uint64_t seed,
                     uint64_t job_seed, uint64_t h_digest);
uint64_t proof_digest(const gl_t *coeffs, size_t n);

static inline uint32_t proof_bytes(uint32_t partitions, int sim) {
  return PROOF_HEADER_BYTES + (sim ? 0 : partitions * PROOF_PARTITION_BYTES);
}
/* Writes proof_bytes(n, sim) bytes into out. */
void proof_serialize(uint8_t *out, uint32_t kind, int sim, uint64_t job_handle,
                     const partition_proof *parts, uint32_t n);

/* Offset of partition i's H(s) field (the fault injector corrupts it). */
static inline uint32_t proof_h_s_offset(uint32_t i) {
  return PROOF_HEADER_BYTES + i * PROOF_PARTITION_BYTES + 48u;
}

#endif
