/* invariant.h — the status invariants the historical bug broke, checked on a parsed
 * snapshot, with split proving (ABI v2: a finalizing partition is shown as "gpu" with
 * "finalizing": true, and its worker may already own a newer partition):
 *   count:     partitions in gpu (finalizing included) while no worker is busy at all
 *              (cuzk_status_mismatch_reason "idle_with_partitions_on_gpu");
 *   owner:     a partition in gpu whose worker is idle — on a healthy engine a worker is
 *              busy until its latest partition ends and its partitions end in pickup order,
 *              so a worker with any unfinished partition is busy ("owner_idle");
 *   structure: a busy worker's current partition is in gpu, is its own, and is its newest;
 *              a partition still in its kernels (gpu, not finalizing) is its worker's
 *              current one. */
#ifndef CUZK_TEST_INVARIANT_H
#define CUZK_TEST_INVARIANT_H

#include "json.h"

typedef struct inv_report {
  int violations;       /* all of the below */
  int count_violations; /* 0/1 per snapshot */
  int owner_violations; /* partitions in gpu with an idle worker */
  int structure_violations;
  int gpu_partitions;   /* partitions in gpu (finalizing included) in this snapshot */
  int finalizing;       /* of which finalizing */
  int finalizing_not_owned; /* finalizing partitions whose worker owns a newer one */
  int busy_workers;
  int snap_violations;  /* owner violations involving a snap-update partition */
  char first[256];      /* description of the first violation */
} inv_report;

void check_invariant(const json_value *snap, inv_report *r);

#endif
