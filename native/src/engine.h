/* engine.h — lifecycle helpers shared by the API files. */
#ifndef CUZK_ENGINE_H_INTERNAL
#define CUZK_ENGINE_H_INTERNAL

#include "engine_state.h"

/* Validates the handle and registers an API call in flight (so close waits for it).
 * Returns CUZK_OK, or an error (message written) when e is NULL/invalid/closing. */
int api_enter(cuzk_engine *e, const char *fn, char *err, size_t errlen);
void api_leave(cuzk_engine *e);

#endif
