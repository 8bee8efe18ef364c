/* counters.h — the flat counter array of cuzk_counters_read (layout in cuzk_engine.h). */
#ifndef CUZK_COUNTERS_H
#define CUZK_COUNTERS_H

#include "engine_state.h"

uint32_t counters_words(const cuzk_engine *e);
/* Fills counters_words(e) words; call with e->mu held. Running intervals up to now. */
void counters_fill(cuzk_engine *e, uint64_t *buf, uint64_t now);

#endif
