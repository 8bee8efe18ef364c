/* harness.c — test runner and helpers. Usage: cuzk_test [name-substring ...] */
#include "harness.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

char g_err[512];

void test_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
  fflush(stdout);
  fprintf(stderr, "\nFAIL %s:%d: %s\n  ", file, line, cond);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  fflush(stderr);
  exit(1);
}

void test_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("    ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
}

int test_small(void) {
  const char *s = getenv("CUZK_TEST_SMALL");
  return s && *s && strcmp(s, "0") != 0;
}

uint64_t now_ns(void) { return cuzk_now_ns(); }

void sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

cuzk_engine *open_engine(const char *config_json) {
  cuzk_engine *e = NULL;
  int rc = cuzk_engine_open(config_json, &e, ERR);
  CHECK(rc == CUZK_OK && e, "cuzk_engine_open(%s) -> %s: %s", config_json, cuzk_status_name(rc),
        g_err);
  return e;
}

void close_engine(cuzk_engine **e) {
  CHECK_RC(cuzk_engine_close(e, ERR), CUZK_OK);
  CHECK(*e == NULL, "close must clear the handle");
}

uint64_t submit_job(cuzk_engine *e, uint32_t kind, int32_t prio, uint32_t parts,
                    uint32_t log2n, const char *id) {
  uint64_t job = 0;
  CHECK_RC(cuzk_submit(e, kind, prio, parts, log2n, id, &job, ERR), CUZK_OK);
  CHECK(job != 0, "job handle must not be 0");
  return job;
}

cuzk_proof_result await_job(cuzk_engine *e, uint64_t job) {
  cuzk_proof_result r;
  CHECK_RC(cuzk_await(e, job, 120000, &r, ERR), CUZK_OK);
  CHECK(r.job == job, "result for job %llu carries job %llu", (unsigned long long)job,
        (unsigned long long)r.job);
  return r;
}

uint32_t verify_job(cuzk_engine *e, uint64_t job) {
  uint32_t len = 0;
  CHECK_RC(cuzk_proof_copy(e, job, NULL, 0, &len, ERR), CUZK_ERANGE);
  CHECK(len >= 16, "proof of %u bytes", len);
  uint8_t *buf = malloc(len);
  CHECK(buf, "oom");
  uint32_t len2 = 0;
  CHECK_RC(cuzk_proof_copy(e, job, buf, len, &len2, ERR), CUZK_OK);
  CHECK(len2 == len, "proof length changed");
  char id[MAX_ID_BYTES];
  CHECK_RC(cuzk_job_id(e, job, id, sizeof id, ERR), CUZK_OK);
  uint32_t valid = 99;
  CHECK_RC(cuzk_proof_verify(buf, len, id, &valid, ERR), CUZK_OK);
  free(buf);
  CHECK(valid == 0 || valid == 1, "valid must be 0/1");
  return valid;
}

json_value *snapshot(cuzk_engine *e) {
  uint32_t cap = 1 << 16, len = 0;
  char *b = NULL;
  for (;;) {
    b = realloc(b, cap);
    CHECK(b, "oom");
    int rc = cuzk_status_json(e, b, cap, &len, ERR);
    if (rc == CUZK_OK) break;
    CHECK(rc == CUZK_ERANGE, "cuzk_status_json -> %s: %s", cuzk_status_name(rc), g_err);
    CHECK(len > cap, "ERANGE must report a larger size (%u <= %u)", len, cap);
    cap = len;
  }
  CHECK(strlen(b) == len, "len_out %u != strlen %zu", len, strlen(b));
  json_value *v = NULL;
  char jerr[256];
  int pr = json_parse(b, len, &v, jerr, sizeof jerr);
  CHECK(pr == 0, "status JSON does not parse: %s\n%.400s", jerr, b);
  free(b);
  return v;
}

uint64_t *read_counters(cuzk_engine *e, uint32_t *words) {
  uint32_t need = 0;
  CHECK_RC(cuzk_counters_read(e, NULL, 0, &need, ERR), CUZK_ERANGE);
  uint64_t *buf = calloc(need, sizeof *buf);
  CHECK(buf, "oom");
  CHECK_RC(cuzk_counters_read(e, buf, need, words, ERR), CUZK_OK);
  CHECK(*words == need, "words %u != %u", *words, need);
  return buf;
}

const json_value *jget(const json_value *obj, const char *key) {
  const json_value *v = json_get(obj, key);
  CHECK(v, "JSON key \"%s\" missing", key);
  return v;
}

int64_t jint(const json_value *obj, const char *key) {
  const json_value *v = jget(obj, key);
  CHECK(v->type == JSON_NUMBER && v->is_integer, "JSON key \"%s\" is not an integer", key);
  return v->integer;
}

int jis_null(const json_value *obj, const char *key) { return jget(obj, key)->type == JSON_NULL; }

const char *jstr(const json_value *obj, const char *key) {
  const json_value *v = jget(obj, key);
  CHECK(v->type == JSON_STRING, "JSON key \"%s\" is not a string", key);
  return v->str;
}

size_t drain_all(cuzk_engine *e, event_log *log) {
  size_t before = log->n;
  for (;;) {
    if (log->cap - log->n < 256) {
      log->cap = log->cap ? log->cap * 2 : 4096;
      log->ev = realloc(log->ev, log->cap * sizeof *log->ev);
      CHECK(log->ev, "oom");
    }
    uint32_t n = 0;
    uint64_t dropped = 0;
    /* whole groups only: a drain may return fewer than 256 with more pending, so stop at
     * an empty one; a group larger than the buffer comes back as ERANGE + its size */
    int rc = cuzk_events_drain(e, log->ev + log->n, 256, &n, &dropped, ERR);
    if (rc == CUZK_ERANGE) {
      CHECK(n > 256, "ERANGE must report a group larger than the buffer (%u)", n);
      if (log->cap - log->n < n) {
        log->cap = log->n + 2 * n;
        log->ev = realloc(log->ev, log->cap * sizeof *log->ev);
        CHECK(log->ev, "oom");
      }
      rc = cuzk_events_drain(e, log->ev + log->n, n, &n, &dropped, ERR);
    }
    CHECK(rc == CUZK_OK, "cuzk_events_drain -> %s: %s", cuzk_status_name(rc), g_err);
    CHECK(n == 0 || (log->ev[log->n + n - 1].flags & CUZK_EVF_GROUP_END),
          "a drain must end on a group end");
    log->dropped += dropped;
    log->n += n;
    if (n == 0 && dropped == 0) break;
  }
  return log->n - before;
}

void event_log_free(event_log *log) {
  free(log->ev);
  memset(log, 0, sizeof *log);
}

/* ---- runner ---------------------------------------------------------------------------- */
#define T(name) void name(void);
#include "test_list.h"
#undef T

static const test_case TESTS[] = {
#define T(name) {#name, name},
#include "test_list.h"
#undef T
};

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  uint64_t t0 = now_ns();
  int ran = 0;
  printf("cuzk native tests%s\n", test_small() ? " (CUZK_TEST_SMALL)" : "");
  for (size_t i = 0; i < sizeof TESTS / sizeof *TESTS; i++) {
    int selected = argc < 2;
    for (int a = 1; a < argc; a++)
      if (strstr(TESTS[i].name, argv[a])) selected = 1;
    if (!selected) continue;
    uint64_t t = now_ns();
    printf("  %-40s ...\n", TESTS[i].name);
    TESTS[i].fn();
    printf("  %-40s ok (%.2f s)\n", TESTS[i].name, (double)(now_ns() - t) / 1e9);
    ran++;
  }
  printf("%d tests passed in %.2f s\n", ran, (double)(now_ns() - t0) / 1e9);
  return ran > 0 ? 0 : 1;
}
