/* query.h: answers viewer queries from an index: cmd/trace's /jsontrace bytes for a view, an
 * output-index range or a time window, replaying only from the nearest checkpoint. */
#ifndef TDX_QUERY_H
#define TDX_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "index/views/jsonout.h"
#include "index/format/reader.h"

typedef struct tdx_query {
    bool thread;                              /* view=thread */
    bool has_goid, has_focustask, has_taskid; /* first present wins, as in cmd/trace */
    uint64_t goid, focustask, taskid;
    bool has_index; /* /jsontrace's start and end: output-event indexes, both inclusive */
    int64_t start, end;
    bool has_window; /* traceidx's time window: elapsed ns since the first event, inclusive;
                      * slices overlapping it are kept and counters start with their values
                      * as of wstart */
    int64_t wstart, wend;
} tdx_query;

typedef struct tdx_query_stats {
    uint64_t checkpoint; /* the checkpoint replay started from */
    uint64_t replayed;   /* events fed to the generator */
    uint64_t skipped;    /* events a time window's stop table spared (viewsec.h) */
    uint64_t long_items; /* recorded events read after the replay */
    uint64_t written;    /* optional events written */
} tdx_query_stats;

/* Writes the document to write(wctx, ...). Like cmd/trace, an unknown goroutine or task is an
 * error (TDX_EUSAGE, before anything is written). */
int tdx_query_run(tdx_index *ix, const tdx_query *q, tdx_write_fn write, void *wctx,
                  tdx_query_stats *st, tdx_err *err);

/* The split ranges stored in the index (*out malloc'd; NULL and 0 when the trace is not split). */
int tdx_query_ranges(tdx_index *ix, tdx_vrange **out, size_t *n, tdx_err *err);

#endif
