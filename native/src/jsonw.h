/* jsonw.h — a growable JSON text writer with correct string escaping and locale-free
 * number formatting (the host process may have set a locale with a decimal comma). */
#ifndef CUZK_JSONW_H
#define CUZK_JSONW_H

#include <stddef.h>
#include <stdint.h>

typedef struct jsonw {
  char *buf;
  size_t len, cap;
  int oom; /* an allocation failed; the text is incomplete */
} jsonw;

void jw_reset(jsonw *w);
void jw_free(jsonw *w);
void jw_raw(jsonw *w, const char *s);
/* Comma if the previous token needs one (not after '{', '[' or ':'). */
void jw_sep(jsonw *w);
void jw_key(jsonw *w, const char *key); /* sep + "key": */
/* Quoted, escaped string: '"' '\\' and control characters escaped, valid UTF-8 passed
 * through, invalid bytes replaced by U+FFFD so the output is always valid JSON. */
void jw_str(jsonw *w, const char *s, size_t len);
void jw_u64(jsonw *w, uint64_t v);
void jw_i64(jsonw *w, int64_t v);
void jw_null(jsonw *w);
void jw_bool(jsonw *w, int v);
/* ns as seconds with `decimals` (1..9) fractional digits, e.g. 1.234567. */
void jw_secs(jsonw *w, uint64_t ns, int decimals);
/* ns as whole milliseconds (truncated). */
void jw_ms(jsonw *w, uint64_t ns);

#endif
