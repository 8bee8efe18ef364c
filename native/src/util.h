/* util.h — small helpers shared by every file: error messages, the clock, export macro. */
#ifndef CUZK_UTIL_H
#define CUZK_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Only the ABI is exported; everything else is hidden by -fvisibility=hidden. */
#define CUZK_EXPORT __attribute__((visibility("default")))

/* Writes a NUL-terminated message into (err, errlen), truncating; no-op if errlen == 0. */
void err_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void err_clear(char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
}

uint64_t mono_ns(void);
/* Absolute CLOCK_MONOTONIC deadline (for condvars using that clock), ns from now. */
struct timespec;
void deadline_after_ns(struct timespec *ts, uint64_t ns_from_now);
void ts_from_ns(struct timespec *ts, uint64_t mono);

/* Little-endian stores/loads for the proof format. */
static inline void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static inline uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* 1 if s[0..len) is valid UTF-8 without NUL bytes. */
int utf8_valid(const char *s, size_t len);

#endif
