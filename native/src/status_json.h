/* status_json.h — the status snapshot (cuzk's GET /status shape plus our additions, see
 * docs/status-json.md). */
#ifndef CUZK_STATUS_JSON_H
#define CUZK_STATUS_JSON_H

#include "engine_state.h"

/* Writes the snapshot into w; call with e->mu held (the snapshot is then consistent with
 * the events up to its last_seq). */
void status_json_write(cuzk_engine *e, jsonw *w, uint64_t now);

#endif
