/* util.c — error formatting, monotonic clock, UTF-8 validation. */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

void err_set(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ts_from_ns(struct timespec *ts, uint64_t mono) {
  ts->tv_sec = (time_t)(mono / 1000000000ull);
  ts->tv_nsec = (long)(mono % 1000000000ull);
}

void deadline_after_ns(struct timespec *ts, uint64_t ns_from_now) {
  uint64_t now = mono_ns();
  uint64_t at = ns_from_now > UINT64_MAX - now ? UINT64_MAX / 2 : now + ns_from_now;
  ts_from_ns(ts, at);
}

int utf8_valid(const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < len) {
    unsigned c = s[i];
    if (c == 0) return 0;
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t need;
    unsigned min;
    unsigned cp;
    if ((c & 0xe0) == 0xc0) {
      need = 1, min = 0x80, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      need = 2, min = 0x800, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      need = 3, min = 0x10000, cp = c & 0x07;
    } else {
      return 0;
    }
    if (len - i <= need) return 0; /* truncated sequence */
    for (size_t k = 1; k <= need; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    i += need + 1;
  }
  return 1;
}
