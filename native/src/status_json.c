/* status_json.c — see status_json.h. Field names and shapes follow cuzk; additions are new
 * fields only. */
#include "status_json.h"

#include <stdio.h>
#include <string.h>

#include "kinds.h"

/* What Groth16 parameters for 2^k constraints would occupy on a BLS12-381 prover (the
 * engine does not allocate these; see native/README.md): SRS = A, B(G1), L, H in G1 (96 B
 * uncompressed) + B in G2 (192 B) per constraint; PCE = three sparse R1CS matrices with
 * ~2 entries per row of (4-byte index + 32-byte scalar). */
static uint64_t srs_bytes(uint32_t log2n) { return (4ull * 96 + 192) << log2n; }
static uint64_t pce_bytes(uint32_t log2n) { return (3ull * 2 * (4 + 32)) << log2n; }

static const char *outcome_name(const job *j) {
  if (!j->finished) return "running";
  switch (j->outcome) {
  case CUZK_OUTCOME_COMPLETED: return "completed";
  case CUZK_OUTCOME_FAILED: return "failed";
  default: return "cancelled";
  }
}

static void str(jsonw *w, const char *s) { jw_str(w, s, strlen(s)); }

static void kind_map(jsonw *w, const char *key, const uint64_t *vals) {
  jw_key(w, key);
  jw_raw(w, "{");
  for (int k = 0; k < CUZK_KIND_COUNT; k++) {
    jw_key(w, KINDS[k].name);
    jw_u64(w, vals[k]);
  }
  jw_raw(w, "}");
}

static void write_partition(jsonw *w, const partition *p, uint32_t i, uint64_t now) {
  jw_sep(w);
  jw_raw(w, "{");
  jw_key(w, "index");
  jw_u64(w, i);
  int finalizing = p->state == CUZK_PART_FINALIZING;
  jw_key(w, "state"); /* a finalizing partition is "gpu", as cuzk shows it */
  str(w, cuzk_partition_state_name(finalizing ? CUZK_PART_GPU : p->state));
  /* synthesis: running time while it runs; the duration once it completed; null when it
   * never ran or was cut short (so no consumer counts a synthesis that did not finish) */
  jw_key(w, "synth_ms");
  if (p->state == CUZK_PART_SYNTHESIZING) jw_ms(w, now - p->synth_start);
  else if (p->synth_completed) jw_ms(w, p->synth_ns);
  else jw_null(w);
  jw_key(w, "gpu_ms");
  if (!p->gpu_started) jw_null(w);
  else jw_ms(w, p->state == CUZK_PART_GPU || finalizing ? now - p->gpu_start : p->gpu_ns);
  jw_key(w, "finalizing");
  jw_bool(w, finalizing);
  /* when its kernels released the GPU lock (cuzk_now_ns clock): a re-sync after an event gap
   * counts its finalize time to the nanosecond, as busy_since_ns does for stints */
  jw_key(w, "finalizing_since_ns");
  if (finalizing) jw_u64(w, p->fin_start);
  else jw_null(w);
  jw_key(w, "abandoned");
  jw_bool(w, p->state == CUZK_PART_FAILED && p->abandoned);
  jw_key(w, "gpu_ordinal");
  if (p->gpu == NO_GPU) jw_null(w);
  else jw_u64(w, p->gpu);
  jw_key(w, "worker_id");
  if (p->worker == NO_WORKER) jw_null(w);
  else jw_u64(w, p->worker);
  jw_raw(w, "}");
}

static void write_job(jsonw *w, const job *j, uint64_t now) {
  jw_sep(w);
  jw_raw(w, "{");
  jw_key(w, "job_id");
  jw_str(w, j->id, j->id_len);
  jw_key(w, "proof_kind");
  str(w, KINDS[j->kind].name);
  jw_key(w, "started_secs_ago");
  jw_secs(w, now - j->submit_ns, 3);
  jw_key(w, "total_partitions");
  jw_u64(w, j->n_parts);
  jw_key(w, "partitions_done");
  jw_u64(w, j->n_done);
  jw_key(w, "partitions");
  jw_raw(w, "[");
  for (uint32_t i = 0; i < j->n_parts; i++) write_partition(w, &j->parts[i], i, now);
  jw_raw(w, "]");
  jw_key(w, "job_handle");
  jw_u64(w, j->handle);
  jw_key(w, "priority");
  jw_i64(w, j->priority);
  jw_key(w, "outcome");
  str(w, outcome_name(j));
  jw_key(w, "finished_secs_ago");
  if (j->finished) jw_secs(w, now - j->finish_ns, 3);
  else jw_null(w);
  jw_raw(w, "}");
}

static void write_worker(jsonw *w, const worker *wk, uint64_t now) {
  jw_sep(w);
  jw_raw(w, "{");
  jw_key(w, "worker_id");
  jw_u64(w, wk->id);
  jw_key(w, "gpu_ordinal");
  jw_u64(w, wk->gpu);
  jw_key(w, "state");
  str(w, wk->busy ? "proving" : "idle");
  jw_key(w, "current_job");
  if (wk->busy) jw_str(w, wk->job->id, wk->job->id_len);
  else jw_null(w);
  jw_key(w, "current_partition");
  if (wk->busy) jw_u64(w, wk->partition);
  else jw_null(w);
  jw_key(w, "busy_secs");
  if (wk->busy) jw_secs(w, now - wk->busy_since, 3);
  else jw_null(w);
  jw_key(w, "busy_total_secs");
  jw_secs(w, wk->busy_ns + (wk->busy ? now - wk->busy_since : 0), 6);
  /* exact start of the running stint (cuzk_now_ns clock): a re-sync after an event gap
   * restores the stint to the nanosecond, which busy_secs (ms) cannot */
  jw_key(w, "busy_since_ns");
  if (wk->busy) jw_u64(w, wk->busy_since);
  else jw_null(w);
  jw_key(w, "current_job_handle");
  if (wk->busy) jw_u64(w, wk->job->handle);
  else jw_null(w);
  jw_key(w, "current_kind");
  if (wk->busy) str(w, KINDS[wk->job->kind].name);
  else jw_null(w);
  jw_raw(w, "}");
}

static void write_allocs(jsonw *w, cuzk_engine *e, uint64_t now, int pce) {
  jw_raw(w, "[");
  for (int k = 0; k < CUZK_KIND_COUNT; k++) {
    const kind_alloc *a = &e->alloc[k];
    if (!a->used) continue;
    char id[48];
    snprintf(id, sizeof id, "%s-k%u", KINDS[k].name, a->log2n);
    jw_sep(w);
    jw_raw(w, "{");
    jw_key(w, "circuit_id");
    str(w, id);
    jw_key(w, "bytes");
    jw_u64(w, pce ? pce_bytes(a->log2n) : srs_bytes(a->log2n));
    jw_key(w, "last_used_secs_ago");
    /* before the first GPU stage, "last used" is the first synthesis */
    jw_secs(w, a->last_used_ns && now > a->last_used_ns ? now - a->last_used_ns : 0, 3);
    jw_key(w, "evictable");
    jw_bool(w, e->unfinished_by_kind[k] == 0);
    jw_raw(w, "}");
  }
  jw_raw(w, "]");
}

void status_json_write(cuzk_engine *e, jsonw *w, uint64_t now) {
  uint64_t last_seq, overwritten;
  event_ring_stats(&e->ring, &last_seq, &overwritten);
  jw_reset(w);
  jw_raw(w, "{");
  jw_key(w, "uptime_secs");
  jw_secs(w, now - e->open_ns, 3);

  jw_key(w, "memory");
  jw_raw(w, "{");
  jw_key(w, "total_bytes");
  jw_u64(w, e->cfg.memory_budget_bytes);
  jw_key(w, "used_bytes");
  jw_u64(w, e->mem_used);
  jw_key(w, "available_bytes");
  jw_u64(w, e->cfg.memory_budget_bytes - e->mem_used);
  jw_raw(w, "}");

  jw_key(w, "synthesis");
  jw_raw(w, "{");
  jw_key(w, "max_concurrent");
  jw_u64(w, e->cfg.synthesis_concurrency);
  jw_key(w, "active");
  jw_u64(w, e->synth_active);
  jw_raw(w, "}");

  jw_key(w, "pipelines");
  jw_raw(w, "[");
  for (const job *j = e->jobs_head; j; j = j->next) write_job(w, j, now);
  jw_raw(w, "]");

  jw_key(w, "gpu_workers");
  jw_raw(w, "[");
  for (uint32_t i = 0; i < e->n_workers; i++) write_worker(w, &e->workers[i], now);
  jw_raw(w, "]");

  jw_key(w, "allocations");
  jw_raw(w, "{");
  jw_key(w, "srs");
  write_allocs(w, e, now, 0);
  jw_key(w, "pce");
  write_allocs(w, e, now, 1);
  jw_raw(w, "}");

  uint64_t completed[CUZK_KIND_COUNT], failed[CUZK_KIND_COUNT], cancelled[CUZK_KIND_COUNT],
      depth[CUZK_KIND_COUNT], total_completed = 0, total_failed = 0;
  for (int k = 0; k < CUZK_KIND_COUNT; k++) {
    completed[k] = e->kc[k].proofs_completed;
    failed[k] = e->kc[k].proofs_failed;
    cancelled[k] = e->kc[k].proofs_cancelled;
    depth[k] = e->queued_by_kind[k];
    total_completed += completed[k];
    total_failed += failed[k];
  }
  jw_key(w, "counters");
  jw_raw(w, "{");
  jw_key(w, "total_completed");
  jw_u64(w, total_completed);
  jw_key(w, "total_failed");
  jw_u64(w, total_failed);
  kind_map(w, "completed_by_kind", completed);
  kind_map(w, "failed_by_kind", failed);
  jw_key(w, "queue_depth");
  jw_u64(w, e->queued_total);
  kind_map(w, "cancelled_by_kind", cancelled);
  kind_map(w, "queue_depth_by_kind", depth);
  jw_raw(w, "}");

  /* cuzk's buffer gauges, mapped onto this pipeline's stages */
  jw_key(w, "buffers");
  jw_raw(w, "{");
  jw_key(w, "synth_in_flight");
  jw_u64(w, e->synth_active);
  jw_key(w, "provers_in_flight");
  jw_u64(w, e->gpu_active);
  jw_key(w, "aux_in_flight");
  jw_u64(w, e->ready_total);
  jw_key(w, "shells_in_flight");
  jw_u64(w, 0);
  jw_key(w, "pending_handles");
  jw_u64(w, e->n_unfinished);
  jw_raw(w, "}");

  jw_key(w, "last_seq");
  jw_u64(w, last_seq);
  jw_key(w, "backend");
  str(w, backend_name(e->cfg.backend));
  jw_key(w, "gpus");
  jw_raw(w, "[");
  for (uint32_t g = 0; g < e->cfg.gpus; g++) {
    const gpu_state *gs = &e->gpus[g];
    jw_sep(w);
    jw_raw(w, "{");
    jw_key(w, "ordinal");
    jw_u64(w, g);
    jw_key(w, "name");
    str(w, gs->name);
    jw_key(w, "uuid");
    str(w, gs->uuid);
    jw_key(w, "pci_bus_id");
    jw_null(w);
    jw_key(w, "lock_held");
    jw_bool(w, gs->held);
    jw_key(w, "lock_since_ns");
    if (gs->held) jw_u64(w, gs->acquired_at);
    else jw_null(w);
    jw_key(w, "busy_total_secs");
    jw_secs(w, gs->held_ns + (gs->held ? now - gs->acquired_at : 0), 6);
    jw_raw(w, "}");
  }
  jw_raw(w, "]");
  jw_raw(w, "}");
}
