/* json.h — a small strict JSON (RFC 8259) parser producing a tree. Used for the engine
 * config; the test harness also uses it to read status snapshots. Rejects: trailing
 * commas, comments, duplicate keys, raw control characters in strings, invalid UTF-8,
 * lone surrogates, leading zeros, NaN/Infinity, trailing garbage, nesting deeper than 64. */
#ifndef CUZK_JSON_H
#define CUZK_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum json_type {
  JSON_NULL,
  JSON_BOOL,
  JSON_NUMBER,
  JSON_STRING,
  JSON_ARRAY,
  JSON_OBJECT
} json_type;

typedef struct json_member json_member;

typedef struct json_value {
  json_type type;
  int boolean;
  double number;     /* every number */
  int is_integer;    /* literal had no fraction/exponent and fits int64 */
  int64_t integer;
  char *str;         /* JSON_STRING: UTF-8, NUL-terminated (may contain no NUL itself) */
  size_t len;
  struct json_value *items; /* JSON_ARRAY */
  json_member *members;     /* JSON_OBJECT, in document order */
  size_t count;
} json_value;

struct json_member {
  char *key;
  size_t key_len;
  json_value value;
};

#define JSON_MAX_DEPTH 64
#define JSON_MAX_INPUT (16u << 20)

/* Parses text[0..len). On success *out owns a tree to free with json_free. On failure
 * returns -1 with a message naming line and column (or -2 when out of memory). */
int json_parse(const char *text, size_t len, json_value **out, char *err, size_t errlen);
void json_free(json_value *v);

/* Member lookup on an object (NULL if absent or v is not an object). */
const json_value *json_get(const json_value *v, const char *key);
const char *json_type_name(json_type t);

#endif
