/* hash.h — a small deterministic sponge (SipHash rounds over a fixed key) used for
 * Fiat-Shamir challenges, witness seeds and digests. Deterministic and well mixed; NOT a
 * cryptographic commitment (see native/README.md). */
#ifndef CUZK_HASH_H
#define CUZK_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct hash_state {
  uint64_t v0, v1, v2, v3;
  uint64_t absorbed;
} hash_state;

void hash_init(hash_state *h, uint64_t domain_tag);
void hash_u64(hash_state *h, uint64_t word);
void hash_bytes(hash_state *h, const void *data, size_t len);
void hash_words(hash_state *h, const uint64_t *words, size_t n);
uint64_t hash_final(hash_state *h); /* does not consume h; may be called repeatedly */

/* SplitMix64 finalizer: a cheap bijective mixer (round constants, PRNG). */
static inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Engine-owned PRNG (xorshift-style SplitMix stream); one per purpose, never global. */
typedef struct prng {
  uint64_t s;
} prng;
static inline uint64_t prng_next(prng *r) { return mix64(r->s += 0x9e3779b97f4a7c15ull); }
/* Uniform double in [0, 1). */
static inline double prng_unit(prng *r) { return (double)(prng_next(r) >> 11) * 0x1.0p-53; }

#endif
