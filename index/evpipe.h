/* evpipe.h: reads a run of an index's event blocks one block ahead on a second thread, so a
 * query's replay overlaps decoding (rANS, checks) with the viewer generator and JSON output. */
#ifndef TDX_EVPIPE_H
#define TDX_EVPIPE_H

#include <stddef.h>

#include "core/error.h"
#include "core/event.h"
#include "index/reader.h"

typedef struct tdx_evpipe tdx_evpipe;

/* Starts reading blocks first..last-1 of ix at once, so the caller may do other work while the
 * first blocks decode (decoding on the calling thread instead, in tdx_evpipe_next, when a thread
 * cannot be started). NULL when out of memory. */
tdx_evpipe *tdx_evpipe_start(const tdx_index *ix, size_t first, size_t last);

/* The next block, in order: 1 with its events in *evs (valid until the next call or stop) and
 * their count in *n; 0 after the last block; -1 with *err set when the block is damaged. */
int tdx_evpipe_next(tdx_evpipe *p, const tdx_event **evs, size_t *n, tdx_err *err);

/* Stops the reader (wherever it is) and frees everything. NULL is fine. */
void tdx_evpipe_stop(tdx_evpipe *p);

#endif
