/* harness.h — a tiny test framework and engine helpers for the C test harness.
 * A failed CHECK prints file:line, the condition and a message, and exits non-zero. */
#ifndef CUZK_TEST_HARNESS_H
#define CUZK_TEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuzk_engine.h"
#include "json.h"

#define CHECK(cond, ...)                                                                   \
  do {                                                                                     \
    if (!(cond)) test_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                        \
  } while (0)

/* CHECK that an ABI call returned want; prints the engine's message otherwise. */
#define CHECK_RC(call, want)                                                               \
  do {                                                                                     \
    int rc_ = (call);                                                                      \
    if (rc_ != (want))                                                                     \
      test_fail(__FILE__, __LINE__, #call, "returned %s, expected %s: %s",                 \
                cuzk_status_name(rc_), cuzk_status_name(want), g_err);                     \
  } while (0)

void test_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
void test_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Shared error buffer passed to every call (tests run one at a time). */
extern char g_err[512];
#define ERR g_err, sizeof g_err

/* CUZK_TEST_SMALL=1 (sanitizer runs): smaller sizes and fewer repetitions. */
int test_small(void);
/* log2 size for tests: normal unless small mode. */
static inline unsigned tsize(unsigned normal, unsigned small) { return test_small() ? small : normal; }

cuzk_engine *open_engine(const char *config_json);
void close_engine(cuzk_engine **e);
uint64_t submit_job(cuzk_engine *e, uint32_t kind, int32_t prio, uint32_t parts,
                    uint32_t log2n, const char *id);
cuzk_proof_result await_job(cuzk_engine *e, uint64_t job);
#define MAX_ID_BYTES 256 /* a request id and its NUL */
/* Copies the proof and verifies it for its own job id: returns valid (0/1); reason in
 * g_err. */
uint32_t verify_job(cuzk_engine *e, uint64_t job);

/* Status snapshot parsed; free with json_free. */
json_value *snapshot(cuzk_engine *e);
/* Counters into a malloc'd array (*words set). */
uint64_t *read_counters(cuzk_engine *e, uint32_t *words);

/* Accessors on parsed JSON (CHECK-fail when missing / wrong type). */
const json_value *jget(const json_value *obj, const char *key);
int64_t jint(const json_value *obj, const char *key);
int jis_null(const json_value *obj, const char *key);
const char *jstr(const json_value *obj, const char *key);

/* Drains every pending event into a growing array (appends); returns count appended. */
typedef struct event_log {
  cuzk_event *ev;
  size_t n, cap;
  uint64_t dropped;
} event_log;
size_t drain_all(cuzk_engine *e, event_log *log);
void event_log_free(event_log *log);

uint64_t now_ns(void);
void sleep_ms(unsigned ms);

/* Tests (one function per acceptance area; see the files). */
typedef struct test_case {
  const char *name;
  void (*fn)(void);
} test_case;

#endif
