/* config.c — maps the JSON config tree onto engine_config, rejecting unknown keys, wrong
 * types and out-of-range values with a message that names the key. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "circuit.h"
#include "json.h"
#include "kinds.h"
#include "util.h"

void config_defaults(engine_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->gpus = 1;
  cfg->workers_per_gpu = 2;
  cfg->synthesis_concurrency = 2;
  cfg->queue_limit = 256;
  cfg->backend = BACKEND_CPU;
  cfg->event_ring_capacity = 65536;
  cfg->events = 1;
  cfg->finished_retention_ms = 30000;
  cfg->memory_budget_bytes = 1ull << 30;
  for (int k = 0; k < CUZK_KIND_COUNT; k++) {
    cfg->sizes[k] = KINDS[k].log2_size;
    cfg->sim[k].synth_ms = KINDS[k].sim_synth_ms;
    cfg->sim[k].gpu_ms = KINDS[k].sim_gpu_ms;
    cfg->sim[k].finalize_ms = KINDS[k].sim_finalize_ms;
    cfg->sim[k].jitter = KINDS[k].sim_jitter;
  }
  cfg->time_scale = 1.0;
  cfg->split_proving = 1;
  cfg->finalize_queue = 4;
  cfg->finalize_passes = CFG_DEFAULT_FINALIZE_PASSES;
  cfg->seed = 1;
  cfg->faults.seed = 1;
  cfg->faults.fail_aborts_job = 1;
  cfg->faults.status_bug_kind = -1;
  cfg->faults.status_bug_mode = STATUS_BUG_CLOBBER;
}

const char *backend_name(int backend) { return backend == BACKEND_SIM ? "sim" : "cpu"; }

typedef struct ctx {
  char *err;
  size_t errlen;
} ctx;

static int bad(ctx *c, const char *key, const char *fmt, const char *detail) {
  char msg[256];
  snprintf(msg, sizeof msg, fmt, detail);
  err_set(c->err, c->errlen, "config: key \"%s\": %s", key, msg);
  return CUZK_EINVAL;
}

static int cfg_uint(ctx *c, const char *key, const json_value *v, uint64_t lo, uint64_t hi,
                    uint64_t *out) {
  if (v->type != JSON_NUMBER || !v->is_integer) {
    char range[96];
    snprintf(range, sizeof range, "%llu..%llu", (unsigned long long)lo, (unsigned long long)hi);
    return bad(c, key, "must be an integer in %s", range);
  }
  if (v->integer < 0 || (uint64_t)v->integer < lo || (uint64_t)v->integer > hi) {
    err_set(c->err, c->errlen, "config: key \"%s\": %lld is out of range %llu..%llu", key,
            (long long)v->integer, (unsigned long long)lo, (unsigned long long)hi);
    return CUZK_EINVAL;
  }
  *out = (uint64_t)v->integer;
  return CUZK_OK;
}

static int cfg_u32(ctx *c, const char *key, const json_value *v, uint32_t lo, uint32_t hi,
                   uint32_t *out) {
  uint64_t x;
  int r = cfg_uint(c, key, v, lo, hi, &x);
  if (r == CUZK_OK) *out = (uint32_t)x;
  return r;
}

static int cfg_double(ctx *c, const char *key, const json_value *v, double lo, double hi,
                      int lo_open, double *out) {
  if (v->type != JSON_NUMBER) return bad(c, key, "must be a number%s", "");
  double d = v->number;
  if (!(d >= lo) || d > hi || (lo_open && d == lo)) {
    err_set(c->err, c->errlen, "config: key \"%s\": %g is out of range %s%g..%g", key, d,
            lo_open ? "(exclusive) " : "", lo, hi);
    return CUZK_EINVAL;
  }
  *out = d;
  return CUZK_OK;
}

static int expect_object(ctx *c, const char *key, const json_value *v) {
  if (v->type != JSON_OBJECT) return bad(c, key, "must be an object, not %s", json_type_name(v->type));
  return CUZK_OK;
}

/* A member of a per-kind section ("sizes", "sim"): writes "section.kind" into key and
 * returns the kind, or -1 after reporting an unknown kind. */
static int kind_member(ctx *c, const char *section, const json_member *m, char *key, size_t n) {
  snprintf(key, n, "%s.%s", section, m->key);
  int k = kind_from_name(m->key, m->key_len);
  if (k < 0)
    bad(c, key, "unknown proof kind (expected %s)",
        "porep-c2, snap-update, window-post or winning-post");
  return k;
}

static int parse_sizes(ctx *c, const json_value *v, engine_config *cfg) {
  int r = expect_object(c, "sizes", v);
  for (size_t i = 0; r == CUZK_OK && i < v->count; i++) {
    const json_member *m = &v->members[i];
    char key[96];
    int k = kind_member(c, "sizes", m, key, sizeof key);
    if (k < 0) return CUZK_EINVAL;
    r = cfg_u32(c, key, &m->value, CIRCUIT_MIN_LOG2, CIRCUIT_MAX_LOG2, &cfg->sizes[k]);
  }
  return r;
}

static int parse_sim(ctx *c, const json_value *v, engine_config *cfg) {
  int r = expect_object(c, "sim", v);
  for (size_t i = 0; r == CUZK_OK && i < v->count; i++) {
    const json_member *m = &v->members[i];
    char key[96];
    int k = kind_member(c, "sim", m, key, sizeof key);
    if (k < 0) return CUZK_EINVAL;
    if ((r = expect_object(c, key, &m->value)) != CUZK_OK) return r;
    for (size_t j = 0; r == CUZK_OK && j < m->value.count; j++) {
      const json_member *f = &m->value.members[j];
      char fkey[160];
      snprintf(fkey, sizeof fkey, "sim.%s.%s", m->key, f->key);
      if (strcmp(f->key, "synth_ms") == 0)
        r = cfg_double(c, fkey, &f->value, 0, CFG_MAX_SIM_MS, 0, &cfg->sim[k].synth_ms);
      else if (strcmp(f->key, "gpu_ms") == 0)
        r = cfg_double(c, fkey, &f->value, 0, CFG_MAX_SIM_MS, 0, &cfg->sim[k].gpu_ms);
      else if (strcmp(f->key, "finalize_ms") == 0)
        r = cfg_double(c, fkey, &f->value, 0, CFG_MAX_SIM_MS, 0, &cfg->sim[k].finalize_ms);
      else if (strcmp(f->key, "jitter") == 0)
        r = cfg_double(c, fkey, &f->value, 0, 1, 0, &cfg->sim[k].jitter);
      else
        return bad(c, fkey, "unknown key (expected %s)",
                   "synth_ms, gpu_ms, finalize_ms or jitter");
    }
  }
  return r;
}

static int parse_faults(ctx *c, const json_value *v, engine_config *cfg) {
  int r = expect_object(c, "faults", v);
  for (size_t i = 0; r == CUZK_OK && i < v->count; i++) {
    const json_member *m = &v->members[i];
    const json_value *x = &m->value;
    char key[96];
    snprintf(key, sizeof key, "faults.%s", m->key);
    if (strcmp(m->key, "fail_partition_nth") == 0) {
      r = cfg_uint(c, key, x, 0, INT64_MAX, &cfg->faults.fail_partition_nth);
    } else if (strcmp(m->key, "fail_partition_rate") == 0) {
      r = cfg_double(c, key, x, 0, 1, 0, &cfg->faults.fail_partition_rate);
    } else if (strcmp(m->key, "seed") == 0) {
      r = cfg_uint(c, key, x, 0, INT64_MAX, &cfg->faults.seed);
    } else if (strcmp(m->key, "fail_synthesis_nth") == 0) {
      r = cfg_uint(c, key, x, 0, INT64_MAX, &cfg->faults.fail_synthesis_nth);
    } else if (strcmp(m->key, "fail_aborts_job") == 0) {
      if (x->type != JSON_BOOL) return bad(c, key, "must be true or false, not %s", json_type_name(x->type));
      cfg->faults.fail_aborts_job = x->boolean;
    } else if (strcmp(m->key, "corrupt_proof_nth") == 0) {
      r = cfg_uint(c, key, x, 0, INT64_MAX, &cfg->faults.corrupt_proof_nth);
    } else if (strcmp(m->key, "status_bug_kind") == 0) {
      if (x->type == JSON_NULL) {
        cfg->faults.status_bug_kind = -1;
      } else if (x->type != JSON_STRING) {
        return bad(c, key, "must be a proof kind name or null, not %s", json_type_name(x->type));
      } else {
        int k = kind_from_name(x->str, x->len);
        if (k < 0)
          return bad(c, key, "unknown proof kind (expected %s)",
                     "porep-c2, snap-update, window-post or winning-post");
        cfg->faults.status_bug_kind = k;
      }
    } else if (strcmp(m->key, "status_bug_mode") == 0) {
      if (x->type != JSON_STRING)
        return bad(c, key, "must be \"clobber\" or \"skip\", not %s", json_type_name(x->type));
      if (strcmp(x->str, "clobber") == 0) cfg->faults.status_bug_mode = STATUS_BUG_CLOBBER;
      else if (strcmp(x->str, "skip") == 0) cfg->faults.status_bug_mode = STATUS_BUG_SKIP;
      else return bad(c, key, "unknown mode (expected %s)", "\"clobber\" or \"skip\"");
    } else {
      return bad(c, key, "unknown key (expected %s)",
                 "fail_partition_nth, fail_partition_rate, fail_synthesis_nth, fail_aborts_job, "
                 "seed, corrupt_proof_nth, status_bug_kind or status_bug_mode");
    }
  }
  return r;
}

static int parse_gpu_names(ctx *c, const json_value *v, engine_config *cfg, size_t *count) {
  if (v->type != JSON_ARRAY) return bad(c, "gpu_names", "must be an array of strings, not %s", json_type_name(v->type));
  if (v->count > CFG_MAX_GPUS) return bad(c, "gpu_names", "has more than %s entries", "64");
  for (size_t i = 0; i < v->count; i++) {
    const json_value *s = &v->items[i];
    if (s->type != JSON_STRING || s->len == 0 || s->len >= CFG_NAME_MAX)
      return bad(c, "gpu_names", "entries must be non-empty strings of at most %s bytes", "63");
    memcpy(cfg->gpu_names[i], s->str, s->len + 1);
  }
  *count = v->count;
  return CUZK_OK;
}

int config_parse(const char *json, engine_config *cfg, char *err, size_t errlen) {
  config_defaults(cfg);
  if (!json) {
    err_set(err, errlen, "config: config_json must not be NULL (use \"{}\" for the defaults)");
    return CUZK_EINVAL;
  }
  /* A config is a few hundred bytes; bound it well before the parser's own limit, so an
   * absurd input costs nothing (the duplicate-key check is quadratic in members). */
  size_t len = strnlen(json, CONFIG_MAX_BYTES + 1);
  if (len > CONFIG_MAX_BYTES) {
    err_set(err, errlen, "config: larger than %u bytes", CONFIG_MAX_BYTES);
    return CUZK_EINVAL;
  }
  json_value *root;
  char jerr[200];
  int pr = json_parse(json, len, &root, jerr, sizeof jerr);
  if (pr != 0) {
    err_set(err, errlen, "config: %s", jerr);
    return pr == -2 ? CUZK_ENOMEM : CUZK_EINVAL;
  }
  ctx c = {err, errlen};
  int r = CUZK_OK;
  size_t n_names = 0;
  if (root->type != JSON_OBJECT) {
    err_set(err, errlen, "config: must be a JSON object, not %s", json_type_name(root->type));
    r = CUZK_EINVAL;
  }
  for (size_t i = 0; r == CUZK_OK && root->type == JSON_OBJECT && i < root->count; i++) {
    const char *k = root->members[i].key;
    const json_value *v = &root->members[i].value;
    if (strcmp(k, "gpus") == 0) {
      r = cfg_u32(&c, k, v, 1, CFG_MAX_GPUS, &cfg->gpus);
    } else if (strcmp(k, "workers_per_gpu") == 0) {
      r = cfg_u32(&c, k, v, 1, CFG_MAX_WORKERS_PER_GPU, &cfg->workers_per_gpu);
    } else if (strcmp(k, "synthesis_concurrency") == 0) {
      r = cfg_u32(&c, k, v, 1, CFG_MAX_SYNTH, &cfg->synthesis_concurrency);
    } else if (strcmp(k, "queue_limit") == 0) {
      r = cfg_u32(&c, k, v, 1, CFG_MAX_QUEUE, &cfg->queue_limit);
    } else if (strcmp(k, "backend") == 0) {
      if (v->type != JSON_STRING) {
        r = bad(&c, k, "must be \"cpu\", \"sim\" or \"cuda\", not %s", json_type_name(v->type));
      } else if (strcmp(v->str, "cpu") == 0) {
        cfg->backend = BACKEND_CPU;
      } else if (strcmp(v->str, "sim") == 0) {
        cfg->backend = BACKEND_SIM;
      } else if (strcmp(v->str, "cuda") == 0) {
        r = bad(&c, k, "%s",
                "\"cuda\" is not built: this library was compiled without nvcc/CUDA; use "
                "\"cpu\" (same kernels on CPU threads) or \"sim\"");
      } else {
        r = bad(&c, k, "unknown backend (expected %s)", "\"cpu\", \"sim\" or \"cuda\"");
      }
    } else if (strcmp(k, "event_ring_capacity") == 0) {
      r = cfg_u32(&c, k, v, CFG_MIN_RING, CFG_MAX_RING, &cfg->event_ring_capacity);
      if (r == CUZK_OK && (cfg->event_ring_capacity & (cfg->event_ring_capacity - 1)))
        r = bad(&c, k, "must be a power of two (got %s)", "a non-power of two");
    } else if (strcmp(k, "events") == 0) {
      if (v->type != JSON_BOOL) r = bad(&c, k, "must be true or false, not %s", json_type_name(v->type));
      else cfg->events = v->boolean;
    } else if (strcmp(k, "finished_retention_ms") == 0) {
      r = cfg_uint(&c, k, v, 0, CFG_MAX_RETENTION_MS, &cfg->finished_retention_ms);
    } else if (strcmp(k, "memory_budget_bytes") == 0) {
      r = cfg_uint(&c, k, v, 1, CFG_MAX_BUDGET, &cfg->memory_budget_bytes);
    } else if (strcmp(k, "sizes") == 0) {
      r = parse_sizes(&c, v, cfg);
    } else if (strcmp(k, "sim") == 0) {
      r = parse_sim(&c, v, cfg);
    } else if (strcmp(k, "split_proving") == 0) {
      if (v->type != JSON_BOOL) r = bad(&c, k, "must be true or false, not %s", json_type_name(v->type));
      else cfg->split_proving = v->boolean;
    } else if (strcmp(k, "finalize_queue") == 0) {
      r = cfg_u32(&c, k, v, 1, CFG_MAX_FINALIZE_QUEUE, &cfg->finalize_queue);
    } else if (strcmp(k, "finalize_passes") == 0) {
      r = cfg_u32(&c, k, v, 1, CFG_MAX_FINALIZE_PASSES, &cfg->finalize_passes);
    } else if (strcmp(k, "time_scale") == 0) {
      r = cfg_double(&c, k, v, 0, 1000, 1, &cfg->time_scale);
    } else if (strcmp(k, "seed") == 0) {
      r = cfg_uint(&c, k, v, 0, INT64_MAX, &cfg->seed);
    } else if (strcmp(k, "gpu_names") == 0) {
      r = parse_gpu_names(&c, v, cfg, &n_names);
    } else if (strcmp(k, "faults") == 0) {
      r = parse_faults(&c, v, cfg);
    } else {
      err_set(err, errlen, "config: unknown key \"%s\"", k);
      r = CUZK_EINVAL;
    }
  }
  if (r == CUZK_OK && n_names > cfg->gpus) {
    err_set(err, errlen, "config: key \"gpu_names\": %zu names for %u gpus", n_names, cfg->gpus);
    r = CUZK_EINVAL;
  }
  json_free(root);
  return r;
}
