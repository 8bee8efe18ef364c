/* kinds.c — the per-kind table. Sim timings are per partition as seen on a production
 * cuzk box (PoRep C2 32 GiB: ~38 s synthesis / ~2.1 s GPU kernels; SnapDeals ~9.2 s /
 * ~0.6 s; WindowPoSt ~20 s / ~3 s; WinningPoSt ~1.5 s / ~0.4 s), and the finalize tail
 * split proving runs after the kernels release the GPU lock (cuzk's b_g2_msm CPU epilogue,
 * ~0.4-1.7 s against 0.6-several s of kernels). Default sizes keep one cpu-backend GPU
 * stage in the 5-30 ms range on a 2-core machine. */
#include "kinds.h"

#include <string.h>

#include "cuzk_engine.h"

const kind_info KINDS[CUZK_KIND_COUNT] = {
    [CUZK_KIND_POREP_C2] = {"porep-c2", 10, 10, 16, 38000.0, 2100.0, 1100.0, 0.05},
    [CUZK_KIND_SNAP_UPDATE] = {"snap-update", 16, 10, 15, 9200.0, 600.0, 400.0, 0.05},
    [CUZK_KIND_WINDOW_POST] = {"window-post", 1, 50, 16, 20000.0, 3000.0, 1700.0, 0.05},
    [CUZK_KIND_WINNING_POST] = {"winning-post", 1, 100, 15, 1500.0, 400.0, 250.0, 0.05},
};

int kind_from_name(const char *s, size_t len) {
  for (int k = 0; k < CUZK_KIND_COUNT; k++)
    if (strlen(KINDS[k].name) == len && memcmp(KINDS[k].name, s, len) == 0) return k;
  return -1;
}
