/* names.c — static names, the ABI version and the clock. */
#include "cuzk_engine.h"
#include "kinds.h"
#include "util.h"

CUZK_EXPORT uint32_t cuzk_abi_version(void) { return CUZK_ABI_VERSION; }

CUZK_EXPORT const char *cuzk_status_name(int status) {
  static const char *const names[] = {"OK",       "EINVAL",  "ENOMEM", "ENOTFOUND", "ETIMEDOUT",
                                      "ECLOSED",  "EFULL",   "ERANGE", "EINTERNAL"};
  return status >= 0 && status < (int)(sizeof names / sizeof *names) ? names[status]
                                                                       : "unknown";
}

CUZK_EXPORT const char *cuzk_kind_name(uint32_t kind) {
  return kind < CUZK_KIND_COUNT ? KINDS[kind].name : "unknown";
}

CUZK_EXPORT const char *cuzk_partition_state_name(uint32_t state) {
  static const char *const names[CUZK_PART_STATE_COUNT] = {
      "pending", "synthesizing", "synth_done", "gpu", "done", "failed", "finalizing"};
  return state < CUZK_PART_STATE_COUNT ? names[state] : "unknown";
}

CUZK_EXPORT uint64_t cuzk_now_ns(void) { return mono_ns(); }
