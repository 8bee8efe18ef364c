/* counters.c — see counters.h. Cumulative totals are kept in the engine state; running
 * intervals (a worker's stint, a held lock, a starved GPU) are added up to `now`, so the
 * numbers are exact at the moment of the read and never go backwards. */
#include "counters.h"

#include <string.h>

uint32_t counters_words(const cuzk_engine *e) {
  return CUZK_CTR_HDR_WORDS + CUZK_KIND_COUNT * CUZK_CTR_KIND_WORDS +
         e->cfg.gpus * CUZK_CTR_GPU_WORDS + e->n_workers * CUZK_CTR_WORKER_WORDS;
}

void counters_fill(cuzk_engine *e, uint64_t *buf, uint64_t now) {
  memset(buf, 0, counters_words(e) * sizeof *buf);
  uint64_t last_seq, overwritten;
  event_ring_stats(&e->ring, &last_seq, &overwritten);
  buf[CUZK_CTR_LAYOUT] = CUZK_ABI_VERSION;
  buf[CUZK_CTR_NOW_NS] = now;
  buf[CUZK_CTR_LAST_SEQ] = last_seq;
  buf[CUZK_CTR_GPUS] = e->cfg.gpus;
  buf[CUZK_CTR_WORKERS_PER_GPU] = e->cfg.workers_per_gpu;
  buf[CUZK_CTR_KINDS] = CUZK_KIND_COUNT;
  buf[CUZK_CTR_EVENTS_EMITTED] = last_seq; /* every emitted event takes one seq */
  buf[CUZK_CTR_EVENTS_OVERWRITTEN] = overwritten;
  buf[CUZK_CTR_SYNTH_ACTIVE] = e->synth_active;
  buf[CUZK_CTR_SYNTH_MAX] = e->cfg.synthesis_concurrency;
  buf[CUZK_CTR_MEM_BUDGET] = e->cfg.memory_budget_bytes;
  buf[CUZK_CTR_MEM_USED] = e->mem_used;
  buf[CUZK_CTR_UPTIME_NS] = now - e->open_ns;
  uint64_t *k = buf + CUZK_CTR_HDR_WORDS;
  for (int i = 0; i < CUZK_KIND_COUNT; i++, k += CUZK_CTR_KIND_WORDS) {
    const kind_counters *c = &e->kc[i];
    k[CUZK_CTRK_GPU_NS] = c->gpu_ns;
    k[CUZK_CTRK_SYNTH_NS] = c->synth_ns;
    k[CUZK_CTRK_PARTS_COMPLETED] = c->parts_completed;
    k[CUZK_CTRK_PARTS_FAILED] = c->parts_failed;
    k[CUZK_CTRK_PROOFS_COMPLETED] = c->proofs_completed;
    k[CUZK_CTRK_PROOFS_FAILED] = c->proofs_failed;
    k[CUZK_CTRK_PROOFS_CANCELLED] = c->proofs_cancelled;
    k[CUZK_CTRK_QUEUE_DEPTH] = e->queued_by_kind[i];
    k[CUZK_CTRK_FINALIZE_NS] = c->finalize_ns;
  }
  uint64_t *g = k;
  for (uint32_t i = 0; i < e->cfg.gpus; i++, g += CUZK_CTR_GPU_WORDS) {
    const gpu_state *gs = &e->gpus[i];
    g[CUZK_CTRG_LOCK_HELD_NS] = gs->held_ns + (gs->held ? now - gs->acquired_at : 0);
    g[CUZK_CTRG_STARVED_NS] = gs->starved_ns + (gs->starved ? now - gs->starved_since : 0);
    g[CUZK_CTRG_LOCK_ACQUIRES] = gs->acquires;
  }
  uint64_t *w = g;
  for (uint32_t i = 0; i < e->n_workers; i++, w += CUZK_CTR_WORKER_WORDS) {
    const worker *wk = &e->workers[i];
    w[CUZK_CTRW_BUSY_NS] = wk->busy_ns + (wk->busy ? now - wk->busy_since : 0);
    w[CUZK_CTRW_PARTITIONS] = wk->partitions;
    w[CUZK_CTRW_BUSY] = wk->busy ? 1 : 0;
  }
}
