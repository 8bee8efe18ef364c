/* json.c — recursive-descent strict JSON parser (locale independent: no strtod). */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct parser {
  const char *s;
  size_t len, pos;
  int depth;
  int oom;
  char *err;
  size_t errlen;
  int failed;
} parser;

static void fail(parser *p, const char *what) {
  if (p->failed) return;
  p->failed = 1;
  size_t line = 1, col = 1;
  for (size_t i = 0; i < p->pos && i < p->len; i++) {
    if (p->s[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  err_set(p->err, p->errlen, "invalid JSON at line %zu column %zu: %s", line, col, what);
}

static void skip_ws(parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static int peek(parser *p) { return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1; }

static int parse_value(parser *p, json_value *v);

static int literal(parser *p, const char *word) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) {
    fail(p, "unexpected token (expected a value)");
    return -1;
  }
  p->pos += n;
  return 0;
}

static int parse_number(parser *p, json_value *v) {
  size_t start = p->pos;
  int neg = 0;
  if (peek(p) == '-') {
    neg = 1;
    p->pos++;
  }
  int c = peek(p);
  if (c < '0' || c > '9') {
    fail(p, "expected a digit");
    return -1;
  }
  double mant = 0;
  uint64_t ival = 0;
  int int_overflow = 0;
  if (c == '0') {
    p->pos++;
    c = peek(p);
    if (c >= '0' && c <= '9') {
      fail(p, "leading zeros are not allowed");
      return -1;
    }
  } else {
    while ((c = peek(p)) >= '0' && c <= '9') {
      mant = mant * 10 + (c - '0');
      if (ival > (UINT64_MAX - 9) / 10) int_overflow = 1;
      else ival = ival * 10 + (uint64_t)(c - '0');
      p->pos++;
    }
  }
  int is_int = 1;
  long exp10 = 0;
  if (peek(p) == '.') {
    is_int = 0;
    p->pos++;
    c = peek(p);
    if (c < '0' || c > '9') {
      fail(p, "expected a digit after '.'");
      return -1;
    }
    while ((c = peek(p)) >= '0' && c <= '9') {
      mant = mant * 10 + (c - '0');
      exp10--;
      p->pos++;
    }
  }
  if (peek(p) == 'e' || peek(p) == 'E') {
    is_int = 0;
    p->pos++;
    int eneg = 0;
    if (peek(p) == '+' || peek(p) == '-') eneg = p->s[p->pos++] == '-';
    c = peek(p);
    if (c < '0' || c > '9') {
      fail(p, "expected a digit in the exponent");
      return -1;
    }
    long e = 0;
    while ((c = peek(p)) >= '0' && c <= '9') {
      if (e < 100000) e = e * 10 + (c - '0');
      p->pos++;
    }
    exp10 += eneg ? -e : e;
  }
  double d = mant * pow(10.0, (double)exp10);
  if (!isfinite(d)) {
    p->pos = start;
    fail(p, "number out of range");
    return -1;
  }
  v->type = JSON_NUMBER;
  v->number = neg ? -d : d;
  if (is_int && !int_overflow && ival <= (uint64_t)INT64_MAX) {
    v->is_integer = 1;
    v->integer = neg ? -(int64_t)ival : (int64_t)ival;
  }
  return 0;
}

static int hex4(parser *p, unsigned *out) {
  if (p->len - p->pos < 4) {
    fail(p, "truncated \\u escape");
    return -1;
  }
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p->s[p->pos++];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else {
      fail(p, "bad hex digit in \\u escape");
      return -1;
    }
  }
  *out = v;
  return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xc0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Parses a string at p->pos (on the opening quote) into a fresh buffer. */
static int parse_string(parser *p, char **out, size_t *out_len) {
  p->pos++; /* opening quote */
  size_t start = p->pos;
  /* decoded output is never longer than the raw text */
  size_t end = start;
  while (end < p->len && p->s[end] != '"') end += (p->s[end] == '\\') ? 2 : 1;
  if (end >= p->len) {
    fail(p, "unterminated string");
    return -1;
  }
  char *buf = malloc(end - start + 1);
  if (!buf) {
    p->oom = 1;
    fail(p, "out of memory");
    return -1;
  }
  size_t o = 0;
  while (p->pos < p->len) {
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '"') break;
    if (c < 0x20) {
      fail(p, "raw control character in string (must be escaped)");
      goto bad;
    }
    if (c != '\\') {
      buf[o++] = (char)c;
      p->pos++;
      continue;
    }
    p->pos++;
    if (p->pos >= p->len) {
      fail(p, "unterminated escape");
      goto bad;
    }
    char e = p->s[p->pos++];
    switch (e) {
    case '"': buf[o++] = '"'; break;
    case '\\': buf[o++] = '\\'; break;
    case '/': buf[o++] = '/'; break;
    case 'b': buf[o++] = '\b'; break;
    case 'f': buf[o++] = '\f'; break;
    case 'n': buf[o++] = '\n'; break;
    case 'r': buf[o++] = '\r'; break;
    case 't': buf[o++] = '\t'; break;
    case 'u': {
      unsigned cp;
      if (hex4(p, &cp)) goto bad;
      if (cp >= 0xdc00 && cp <= 0xdfff) {
        fail(p, "lone low surrogate in \\u escape");
        goto bad;
      }
      if (cp >= 0xd800 && cp <= 0xdbff) {
        unsigned lo;
        if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
          fail(p, "high surrogate not followed by a low surrogate");
          goto bad;
        }
        p->pos += 2;
        if (hex4(p, &lo)) goto bad;
        if (lo < 0xdc00 || lo > 0xdfff) {
          fail(p, "high surrogate not followed by a low surrogate");
          goto bad;
        }
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      }
      if (cp == 0) {
        fail(p, "\\u0000 is not allowed in strings here");
        goto bad;
      }
      o += put_utf8(buf + o, cp); /* 6+ escape chars always >= 4 output bytes */
      break;
    }
    default: fail(p, "unknown escape sequence"); goto bad;
    }
  }
  p->pos++; /* closing quote */
  buf[o] = '\0';
  if (!utf8_valid(buf, o)) {
    p->pos = start;
    fail(p, "string is not valid UTF-8");
    goto bad;
  }
  *out = buf;
  *out_len = o;
  return 0;
bad:
  free(buf);
  return -1;
}

static int parse_array(parser *p, json_value *v) {
  p->pos++;
  v->type = JSON_ARRAY;
  size_t cap = 0;
  skip_ws(p);
  if (peek(p) == ']') {
    p->pos++;
    return 0;
  }
  for (;;) {
    if (v->count == cap) {
      size_t ncap = cap ? cap * 2 : 4;
      json_value *n = realloc(v->items, ncap * sizeof *n);
      if (!n) {
        p->oom = 1;
        fail(p, "out of memory");
        return -1;
      }
      v->items = n;
      cap = ncap;
    }
    json_value *item = &v->items[v->count];
    memset(item, 0, sizeof *item);
    v->count++;
    skip_ws(p);
    if (parse_value(p, item)) return -1;
    skip_ws(p);
    int c = peek(p);
    if (c == ',') {
      p->pos++;
      continue;
    }
    if (c == ']') {
      p->pos++;
      return 0;
    }
    fail(p, "expected ',' or ']' in array");
    return -1;
  }
}

static int parse_object(parser *p, json_value *v) {
  p->pos++;
  v->type = JSON_OBJECT;
  size_t cap = 0;
  skip_ws(p);
  if (peek(p) == '}') {
    p->pos++;
    return 0;
  }
  for (;;) {
    skip_ws(p);
    if (peek(p) != '"') {
      fail(p, "expected a string key");
      return -1;
    }
    if (v->count == cap) {
      size_t ncap = cap ? cap * 2 : 4;
      json_member *n = realloc(v->members, ncap * sizeof *n);
      if (!n) {
        p->oom = 1;
        fail(p, "out of memory");
        return -1;
      }
      v->members = n;
      cap = ncap;
    }
    json_member *m = &v->members[v->count];
    memset(m, 0, sizeof *m);
    size_t key_pos = p->pos;
    if (parse_string(p, &m->key, &m->key_len)) return -1;
    v->count++; /* owned from here on (freed by json_free) */
    for (size_t i = 0; i + 1 < v->count; i++) {
      if (v->members[i].key_len == m->key_len &&
          memcmp(v->members[i].key, m->key, m->key_len) == 0) {
        p->pos = key_pos;
        fail(p, "duplicate object key");
        return -1;
      }
    }
    skip_ws(p);
    if (peek(p) != ':') {
      fail(p, "expected ':' after object key");
      return -1;
    }
    p->pos++;
    skip_ws(p);
    if (parse_value(p, &m->value)) return -1;
    skip_ws(p);
    int c = peek(p);
    if (c == ',') {
      p->pos++;
      continue;
    }
    if (c == '}') {
      p->pos++;
      return 0;
    }
    fail(p, "expected ',' or '}' in object");
    return -1;
  }
}

static int parse_value(parser *p, json_value *v) {
  if (++p->depth > JSON_MAX_DEPTH) {
    fail(p, "nesting too deep");
    return -1;
  }
  int r;
  switch (peek(p)) {
  case '{': r = parse_object(p, v); break;
  case '[': r = parse_array(p, v); break;
  case '"':
    v->type = JSON_STRING;
    r = parse_string(p, &v->str, &v->len);
    break;
  case 't':
    v->type = JSON_BOOL;
    v->boolean = 1;
    r = literal(p, "true");
    break;
  case 'f':
    v->type = JSON_BOOL;
    r = literal(p, "false");
    break;
  case 'n':
    v->type = JSON_NULL;
    r = literal(p, "null");
    break;
  case -1: fail(p, "unexpected end of input"); r = -1; break;
  default:
    if (peek(p) == '-' || (peek(p) >= '0' && peek(p) <= '9')) {
      r = parse_number(p, v);
    } else {
      fail(p, "unexpected character");
      r = -1;
    }
  }
  p->depth--;
  return r;
}

static void free_inner(json_value *v) {
  if (v->type == JSON_STRING) free(v->str);
  if (v->type == JSON_ARRAY) {
    for (size_t i = 0; i < v->count; i++) free_inner(&v->items[i]);
    free(v->items);
  }
  if (v->type == JSON_OBJECT) {
    for (size_t i = 0; i < v->count; i++) {
      free(v->members[i].key);
      free_inner(&v->members[i].value);
    }
    free(v->members);
  }
}

void json_free(json_value *v) {
  if (!v) return;
  free_inner(v);
  free(v);
}

int json_parse(const char *text, size_t len, json_value **out, char *err, size_t errlen) {
  *out = NULL;
  if (!text) {
    err_set(err, errlen, "invalid JSON: NULL text");
    return -1;
  }
  if (len > JSON_MAX_INPUT) {
    err_set(err, errlen, "invalid JSON: input of %zu bytes exceeds %u", len, JSON_MAX_INPUT);
    return -1;
  }
  json_value *root = calloc(1, sizeof *root);
  if (!root) {
    err_set(err, errlen, "out of memory parsing JSON");
    return -2;
  }
  parser p = {.s = text, .len = len, .err = err, .errlen = errlen};
  skip_ws(&p);
  int r = parse_value(&p, root);
  if (r == 0) {
    skip_ws(&p);
    if (p.pos != p.len) {
      fail(&p, "unexpected content after the JSON value");
      r = -1;
    }
  }
  if (r != 0) {
    json_free(root);
    return p.oom ? -2 : -1;
  }
  *out = root;
  return 0;
}

const json_value *json_get(const json_value *v, const char *key) {
  if (!v || v->type != JSON_OBJECT) return NULL;
  size_t kl = strlen(key);
  for (size_t i = 0; i < v->count; i++)
    if (v->members[i].key_len == kl && memcmp(v->members[i].key, key, kl) == 0)
      return &v->members[i].value;
  return NULL;
}

const char *json_type_name(json_type t) {
  switch (t) {
  case JSON_NULL: return "null";
  case JSON_BOOL: return "boolean";
  case JSON_NUMBER: return "number";
  case JSON_STRING: return "string";
  case JSON_ARRAY: return "array";
  case JSON_OBJECT: return "object";
  }
  return "unknown";
}
