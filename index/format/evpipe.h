/* evpipe.h: reads a run of an index's event blocks a few pieces ahead on a second thread, so a
 * query's replay overlaps decoding (rANS, checks) with the viewer generator and JSON output. */
#ifndef TDX_EVPIPE_H
#define TDX_EVPIPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "index/format/reader.h"

typedef struct tdx_evpipe tdx_evpipe;

/* Starts reading blocks first..last-1 of ix at once, so the caller may do other work while the
 * first blocks decode (decoding on the calling thread instead, in tdx_evpipe_next, when a thread
 * cannot be started); the reader also unpacks the string chunks named by the events timed in
 * [tmin, tmax] (tdx_index_strings_ahead: one pipe per index at a time). NULL when out of memory. */
tdx_evpipe *tdx_evpipe_start(tdx_index *ix, size_t first, size_t last, int64_t tmin, int64_t tmax);

/* Reads every block of ix, a whole block at a time, one ahead of the consumer: for a pass over
 * all the events (tools' cli_index_events). Each piece is a block, handed over only once its
 * end checked, so a damaged block gives none of its events. No strings are unpacked ahead.
 * NULL when out of memory. */
tdx_evpipe *tdx_evpipe_start_blocks(tdx_index *ix);

/* The next piece of events, in order (up to ~1000 of a block; a whole block with
 * tdx_evpipe_start_blocks): 1 with them in *evs (valid until the next call or stop), their
 * count in *n and the index of the first in *first; 0 after the last block; -1 with *err set
 * when a block is damaged (with ~1000-event pieces, events of that block may have come before:
 * only the end of a block shows some damage). */
int tdx_evpipe_next(tdx_evpipe *p, const tdx_event **evs, size_t *n, uint64_t *first, tdx_err *err);

/* Stops the reader (wherever it is) and frees everything. NULL is fine. */
void tdx_evpipe_stop(tdx_evpipe *p);

#endif
