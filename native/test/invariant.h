/* invariant.h — the status invariant the historical bug broke, checked on a parsed
 * snapshot: every partition in `gpu` is owned by exactly one busy worker, and every busy
 * worker owns a partition in `gpu`. */
#ifndef CUZK_TEST_INVARIANT_H
#define CUZK_TEST_INVARIANT_H

#include "json.h"

typedef struct inv_report {
  int violations;
  int gpu_partitions;   /* partitions in `gpu` in this snapshot */
  int busy_workers;
  int snap_violations;  /* violations involving a snap-update partition */
  char first[256];      /* description of the first violation */
} inv_report;

void check_invariant(const json_value *snap, inv_report *r);

#endif
