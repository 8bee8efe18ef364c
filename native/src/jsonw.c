/* jsonw.c — see jsonw.h. */
#include "jsonw.h"

#include <stdlib.h>
#include <string.h>

static int reserve(jsonw *w, size_t extra) {
  if (w->oom) return 0;
  if (w->len + extra + 1 <= w->cap) return 1;
  size_t cap = w->cap ? w->cap : 4096;
  while (cap < w->len + extra + 1) cap *= 2;
  char *b = realloc(w->buf, cap);
  if (!b) {
    w->oom = 1;
    return 0;
  }
  w->buf = b;
  w->cap = cap;
  return 1;
}

static void put(jsonw *w, const char *s, size_t n) {
  if (!reserve(w, n)) return;
  memcpy(w->buf + w->len, s, n);
  w->len += n;
  w->buf[w->len] = '\0';
}

void jw_reset(jsonw *w) {
  w->len = 0;
  w->oom = 0;
  if (w->buf) w->buf[0] = '\0';
}

void jw_free(jsonw *w) {
  free(w->buf);
  w->buf = NULL;
  w->len = w->cap = 0;
}

void jw_raw(jsonw *w, const char *s) { put(w, s, strlen(s)); }

void jw_sep(jsonw *w) {
  if (w->len == 0) return;
  char c = w->buf[w->len - 1];
  if (c != '{' && c != '[' && c != ':') put(w, ",", 1);
}

void jw_key(jsonw *w, const char *key) {
  jw_sep(w);
  jw_str(w, key, strlen(key));
  put(w, ":", 1);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t avail) {
  unsigned c = s[0];
  size_t need;
  unsigned cp, min;
  if ((c & 0xe0) == 0xc0) need = 1, cp = c & 0x1f, min = 0x80;
  else if ((c & 0xf0) == 0xe0) need = 2, cp = c & 0x0f, min = 0x800;
  else if ((c & 0xf8) == 0xf0) need = 3, cp = c & 0x07, min = 0x10000;
  else return 0;
  if (avail <= need) return 0;
  for (size_t k = 1; k <= need; k++) {
    if ((s[k] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[k] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return need + 1;
}

void jw_str(jsonw *w, const char *str, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  put(w, "\"", 1);
  size_t run = 0; /* bytes copied verbatim in one go */
  for (size_t i = 0; i < len;) {
    unsigned c = s[i];
    size_t seq = c < 0x80 ? 1 : utf8_seq(s + i, len - i);
    if (c >= 0x20 && c != '"' && c != '\\' && seq) {
      i += seq;
      run += seq;
      continue;
    }
    put(w, (const char *)s + i - run, run);
    run = 0;
    char esc[8];
    switch (c) {
    case '"': put(w, "\\\"", 2); break;
    case '\\': put(w, "\\\\", 2); break;
    case '\n': put(w, "\\n", 2); break;
    case '\r': put(w, "\\r", 2); break;
    case '\t': put(w, "\\t", 2); break;
    case '\b': put(w, "\\b", 2); break;
    case '\f': put(w, "\\f", 2); break;
    default:
      if (c < 0x20) {
        memcpy(esc, "\\u00", 4);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        put(w, esc, 6);
      } else {
        put(w, "\\ufffd", 6); /* invalid UTF-8 byte */
      }
    }
    i++;
  }
  put(w, (const char *)s + len - run, run);
  put(w, "\"", 1);
}

void jw_u64(jsonw *w, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  put(w, tmp + sizeof tmp - n, n);
}

void jw_i64(jsonw *w, int64_t v) {
  if (v < 0) {
    put(w, "-", 1);
    jw_u64(w, (uint64_t)0 - (uint64_t)v);
  } else {
    jw_u64(w, (uint64_t)v);
  }
}

void jw_null(jsonw *w) { put(w, "null", 4); }
void jw_bool(jsonw *w, int v) { v ? put(w, "true", 4) : put(w, "false", 5); }

void jw_secs(jsonw *w, uint64_t ns, int decimals) {
  if (decimals < 1) decimals = 1;
  if (decimals > 9) decimals = 9;
  uint64_t unit = 1;
  for (int i = decimals; i < 9; i++) unit *= 10;
  uint64_t frac_scale = 1000000000ull / unit;
  uint64_t q = ns / unit; /* fixed-point with `decimals` digits, truncated */
  jw_u64(w, q / frac_scale);
  char tmp[10];
  uint64_t f = q % frac_scale;
  for (int i = decimals - 1; i >= 0; i--) {
    tmp[i] = (char)('0' + f % 10);
    f /= 10;
  }
  put(w, ".", 1);
  put(w, tmp, (size_t)decimals);
}

void jw_ms(jsonw *w, uint64_t ns) { jw_u64(w, ns / 1000000ull); }
