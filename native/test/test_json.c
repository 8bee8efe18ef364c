/* test_json.c — the strict JSON parser, the JSON string writer (escaping round trip for
 * arbitrary bytes), and config validation messages that name the key. */
#include <string.h>

#include "harness.h"
#include "jsonw.h"

static int parses(const char *s) {
  json_value *v = NULL;
  char err[200];
  int r = json_parse(s, strlen(s), &v, err, sizeof err);
  json_free(v);
  return r == 0;
}

void test_json_parser_strict(void) {
  const char *good[] = {"{}", "[]", "0", "-0", "1.5e3", "\"a\\u00e9\\ud83d\\ude00\"",
                        "{\"a\":[1,2,{\"b\":null}],\"c\":true}", " \n{ \"x\" : -12 } \t",
                        "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    CHECK(parses(good[i]), "must parse: %s", good[i]);
  const char *bad[] = {"",          "{",          "{\"a\":1,}",   "[1,]",     "01",
                       "1.",        ".5",         "+1",           "NaN",      "{'a':1}",
                       "{\"a\" 1}", "{\"a\":1}x", "\"\x01\"",     "\"\\x\"",  "\"\\ud800\"",
                       "\"\\udc00\"", "\"\xff\"", "\"\xc0\xaf\"", "tru",      "nul",
                       "{\"a\":1,\"a\":2}", "[1 2]", "1e999", "//c\n{}", "\"\\u0000\"",
                       "\"\xed\xa0\x80\""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK(!parses(bad[i]), "must be rejected: %s", bad[i]);
  char deep[201];
  memset(deep, '[', 100);
  memset(deep + 100, ']', 100);
  deep[200] = '\0';
  CHECK(!parses(deep), "nesting beyond %d must be rejected", JSON_MAX_DEPTH);
  memset(deep, ' ', 40);
  memset(deep + 160, ' ', 40);
  CHECK(parses(deep), "60 levels of nesting must parse");
  json_value *v;
  char err[200];
  CHECK(json_parse("{\"n\": 9007199254740993, \"f\": 0.25, \"m\": -3}", 43, &v, err, sizeof err) == 0, "%s", err);
  CHECK(json_get(v, "n")->is_integer && json_get(v, "n")->integer == 9007199254740993ll, "int64 exact");
  CHECK(!json_get(v, "f")->is_integer && json_get(v, "f")->number == 0.25, "fraction");
  CHECK(json_get(v, "m")->integer == -3, "negative");
  json_free(v);
  CHECK(json_parse("{\"a\":\n  tru}", 12, &v, err, sizeof err) != 0 && strstr(err, "line 2"),
        "error must name the line: %s", err);
}

void test_json_string_escaping(void) {
  jsonw w = {0};
  /* every byte 1..255 (invalid UTF-8 bytes become U+FFFD) */
  char all[256];
  for (int i = 1; i < 256; i++) all[i - 1] = (char)i;
  jw_str(&w, all, 255);
  json_value *v;
  char err[200];
  CHECK(json_parse(w.buf, w.len, &v, err, sizeof err) == 0, "escaped bytes must parse: %s", err);
  CHECK(v->type == JSON_STRING, "string");
  for (int i = 1; i < 128; i++) CHECK(v->str[i - 1] == (char)i, "ASCII byte %d round trip", i);
  json_free(v);
  /* quotes, backslashes, controls, and valid multi-byte UTF-8 pass through verbatim */
  const char *s = "a\"b\\c\n\t\x01\x1f/\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 end";
  jw_reset(&w);
  jw_str(&w, s, strlen(s));
  CHECK(strstr(w.buf, "\\u0001") && strstr(w.buf, "\\u001f") && strstr(w.buf, "\\\""),
        "control/quote escapes: %s", w.buf);
  CHECK(strstr(w.buf, "\xf0\x9f\x98\x80"), "valid UTF-8 must pass through: %s", w.buf);
  CHECK(json_parse(w.buf, w.len, &v, err, sizeof err) == 0, "%s", err);
  CHECK(strcmp(v->str, s) == 0, "round trip: %s", v->str);
  json_free(v);
  /* numbers are locale-free */
  jw_reset(&w);
  jw_secs(&w, 1234567891ull, 6);
  jw_raw(&w, " ");
  jw_secs(&w, 5ull, 3);
  CHECK(strcmp(w.buf, "1.234567 0.000") == 0, "seconds format: %s", w.buf);
  jw_free(&w);
}

void test_config_validation(void) {
  struct {
    const char *cfg, *must_mention;
  } bad[] = {
      {"{\"gpus\":0}", "gpus"},
      {"{\"gpus\":65}", "gpus"},
      {"{\"gpus\":1.5}", "gpus"},
      {"{\"gpus\":\"2\"}", "gpus"},
      {"{\"workers_per_gpu\":1000000000}", "workers_per_gpu"},
      {"{\"synthesis_concurrency\":0}", "synthesis_concurrency"},
      {"{\"queue_limit\":-1}", "queue_limit"},
      {"{\"backend\":\"cuda\"}", "not built"},
      {"{\"backend\":\"opencl\"}", "backend"},
      {"{\"event_ring_capacity\":1000}", "power of two"},
      {"{\"event_ring_capacity\":1}", "event_ring_capacity"},
      {"{\"events\":1}", "events"},
      {"{\"finished_retention_ms\":-5}", "finished_retention_ms"},
      {"{\"memory_budget_bytes\":0}", "memory_budget_bytes"},
      {"{\"sizes\":{\"porep-c2\":23}}", "sizes.porep-c2"},
      {"{\"sizes\":{\"porep-c2\":-1}}", "sizes.porep-c2"},
      {"{\"sizes\":{\"porep-c2\":0}}", "sizes.porep-c2"},
      {"{\"sizes\":{\"porep\":12}}", "sizes.porep"},
      {"{\"sizes\":[]}", "sizes"},
      {"{\"sim\":{\"snap-update\":{\"gpu_ms\":-1}}}", "sim.snap-update.gpu_ms"},
      {"{\"sim\":{\"snap-update\":{\"speed\":1}}}", "sim.snap-update.speed"},
      {"{\"time_scale\":0}", "time_scale"},
      {"{\"gpus\":1,\"gpu_names\":[\"a\",\"b\"]}", "gpu_names"},
      {"{\"faults\":{\"fail_partition_rate\":1.5}}", "faults.fail_partition_rate"},
      {"{\"faults\":{\"status_bug_kind\":\"snap\"}}", "faults.status_bug_kind"},
      {"{\"faults\":{\"explode\":true}}", "faults.explode"},
      {"{\"colour\":\"blue\"}", "unknown key \"colour\""},
      {"{\"gpus\":2", "invalid JSON"},
      {"[1]", "object"},
      {"", "invalid JSON"},
      {"{\"gpus\":1,\"gpus\":2}", "duplicate"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cuzk_engine *e = (cuzk_engine *)0x1;
    g_err[0] = 0;
    int rc = cuzk_engine_open(bad[i].cfg, &e, ERR);
    CHECK(rc == CUZK_EINVAL && e == NULL, "config %s -> %s (handle %p)", bad[i].cfg,
          cuzk_status_name(rc), (void *)e);
    CHECK(strstr(g_err, bad[i].must_mention), "message for %s must mention \"%s\": %s",
          bad[i].cfg, bad[i].must_mention, g_err);
  }
  /* a full valid config */
  cuzk_engine *e = open_engine(
      "{\"gpus\":2,\"workers_per_gpu\":2,\"synthesis_concurrency\":2,\"queue_limit\":8,"
      "\"backend\":\"sim\",\"event_ring_capacity\":8,\"events\":true,"
      "\"finished_retention_ms\":0,\"memory_budget_bytes\":1048576,"
      "\"sizes\":{\"porep-c2\":10,\"snap-update\":9,\"window-post\":8,\"winning-post\":7},"
      "\"sim\":{\"porep-c2\":{\"synth_ms\":1,\"gpu_ms\":0.5,\"jitter\":0}},\"time_scale\":0.5,"
      "\"seed\":7,\"gpu_names\":[\"NVIDIA RTX \\\"A\\\"\"],"
      "\"faults\":{\"fail_partition_nth\":0,\"fail_partition_rate\":0,\"seed\":3,"
      "\"corrupt_proof_nth\":0,\"status_bug_kind\":null}}");
  json_value *s = snapshot(e);
  const json_value *gpus = jget(s, "gpus");
  CHECK(gpus->count == 2, "2 gpus");
  CHECK(strcmp(jstr(&gpus->items[0], "name"), "NVIDIA RTX \"A\"") == 0, "configured name");
  CHECK(strcmp(jstr(&gpus->items[1], "name"), "sim-gpu-1") == 0, "default name: %s",
        jstr(&gpus->items[1], "name"));
  CHECK(strcmp(jstr(s, "backend"), "sim") == 0, "backend");
  json_free(s);
  close_engine(&e);
}
