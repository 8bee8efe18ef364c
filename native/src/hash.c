/* hash.c — sponge over SipHash-2-4 style rounds with a fixed key. */
#include "hash.h"

#include <string.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static inline void sip_round(hash_state *h) {
  h->v0 += h->v1; h->v1 = ROTL(h->v1, 13); h->v1 ^= h->v0; h->v0 = ROTL(h->v0, 32);
  h->v2 += h->v3; h->v3 = ROTL(h->v3, 16); h->v3 ^= h->v2;
  h->v0 += h->v3; h->v3 = ROTL(h->v3, 21); h->v3 ^= h->v0;
  h->v2 += h->v1; h->v1 = ROTL(h->v1, 17); h->v1 ^= h->v2; h->v2 = ROTL(h->v2, 32);
}

void hash_init(hash_state *h, uint64_t domain_tag) {
  /* SipHash's initialisation constants with a fixed key derived from "cuzk-ref". */
  const uint64_t k0 = 0x63757a6b2d726566ull, k1 = domain_tag ^ 0x0123456789abcdefull;
  h->v0 = k0 ^ 0x736f6d6570736575ull;
  h->v1 = k1 ^ 0x646f72616e646f6dull;
  h->v2 = k0 ^ 0x6c7967656e657261ull;
  h->v3 = k1 ^ 0x7465646279746573ull;
  h->absorbed = 0;
}

void hash_u64(hash_state *h, uint64_t m) {
  h->v3 ^= m;
  sip_round(h);
  sip_round(h);
  h->v0 ^= m;
  h->absorbed++;
}

void hash_words(hash_state *h, const uint64_t *words, size_t n) {
  for (size_t i = 0; i < n; i++) hash_u64(h, words[i]);
}

void hash_bytes(hash_state *h, const void *data, size_t len) {
  const unsigned char *p = data;
  hash_u64(h, (uint64_t)len); /* length first: no two byte strings absorb alike */
  while (len >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    hash_u64(h, w);
    p += 8;
    len -= 8;
  }
  if (len) {
    uint64_t w = 0;
    memcpy(&w, p, len);
    hash_u64(h, w);
  }
}

uint64_t hash_final(hash_state *h) {
  hash_state t = *h;
  t.v2 ^= 0xff ^ t.absorbed;
  for (int i = 0; i < 4; i++) sip_round(&t);
  return t.v0 ^ t.v1 ^ t.v2 ^ t.v3;
}
