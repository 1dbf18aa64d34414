/* jsonout.h: the bytes of cmd/trace's /jsontrace: viewer events and their compact JSON, Go's float
 * and integer formats, the streaming writer with the index-range cut and stackFrames, and the
 * splitter. */
#ifndef TDX_JSONOUT_H
#define TDX_JSONOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/mem.h"
#include "index/views/viewgen_store.h"

/* ---- viewer events ---- */

/* Argument payloads (keys in Go's order; see the spec, section 2.6). */
enum tdx_varg {
    TDX_VARG_NONE = 0,   /* no "args" key */
    TDX_VARG_NAME,       /* {"name":s} */
    TDX_VARG_SORT_INDEX, /* {"sort_index":(int64)u[0]} */
    TDX_VARG_BLOCKED,    /* {"blocked":"yes"} when u[0] != 0, else {"blocked":"no"} */
    TDX_VARG_HEAP,       /* {"Allocated":u[0],"NextGC":u[1]} */
    TDX_VARG_GOROUTINES, /* {"Running":u[0],"Runnable":u[1],"GCWaiting":u[2]} */
    TDX_VARG_THREADS,    /* {"Running":(int64)u[0],"InSyscall":(int64)u[1]} */
    TDX_VARG_SCHED,      /* {"thread":u[0],"proc":u[1]}, each key omitted when 0 */
    TDX_VARG_TASK,       /* {"id":u[0],"start_g":u[1],"end_g":u[2]}, the _g keys omitted when 0 */
    TDX_VARG_TASKID,     /* {"taskid":u[0]} */
};

typedef struct tdx_vargs {
    uint8_t kind; /* enum tdx_varg */
    uint64_t u[3];
    tdx_str s; /* TDX_VARG_NAME */
} tdx_vargs;

/* One trace-viewer event as the generator emits it. Times are nanoseconds (elapsed since T0);
 * strings are only valid during the callback. Zero/empty fields are omitted from the JSON exactly
 * as Go's omitempty does (ts, pid and tid are always written). */
typedef struct tdx_vev {
    tdx_str name;
    char ph;         /* 'X' 'I' 'C' 'M' 's' 't' 'b' 'e' */
    bool required;   /* metadata: never cut by the index range */
    bool name_plain; /* the name is known to need no escapes (a literal); false: unknown */
    tdx_str scope;   /* "s": "t" for instants, the task id in hex for async slices */
    int64_t ts, dur;
    uint64_t pid, tid, id;
    int64_t sf, esf;
    tdx_vargs args;
    const char *cname; /* NULL = none */
    const char *cat;   /* NULL = none */
} tdx_vev;

/* The consumer of the generator's events; return non-zero to abort generation. */
typedef int (*tdx_vev_fn)(void *ctx, const tdx_vev *ev);

/* ---- number formats ---- */

/* encoding/json's text of float64(ns)/1000 (the viewer time in microseconds): shortest
 * round-trip digits in positional notation. buf needs 40 bytes; returns the length. */
size_t tdx_json_usec(char *buf, int64_t ns);
/* Decimal text of an unsigned/signed integer; buf needs 21 bytes; returns the length. */
size_t tdx_json_u64(char *buf, uint64_t v);
size_t tdx_json_i64(char *buf, int64_t v);

/* Appends the compact JSON of ev (no line feed) to out; 0 or -1 (OOM). */
int tdx_json_event(tdx_buf *out, const tdx_vev *ev);
/* The length tdx_json_event would append, without writing anything. */
size_t tdx_json_event_size(const tdx_vev *ev);

/* ---- the /jsontrace writer ---- */

/* Output sink: writes p[0..n); returns 0 or -1. */
typedef int (*tdx_write_fn)(void *ctx, const void *p, size_t n);

typedef struct tdx_jsonw {
    tdx_write_fn write;
    void *wctx;
    tdx_vgframes frames;
    int64_t start, end; /* optional events with index in [start, end] are written */
    int64_t index;      /* index of the next event received (required ones included); when a
                         * generator restored from a checkpoint feeds the writer, set it to the
                         * checkpoint's optional-event count first */
    uint64_t written;
    tdx_buf out;
    TDX_VEC(uint8_t) mark; /* per frame id: referenced by a written event */
    TDX_VEC(uint32_t) marked;
    int err;
} tdx_jsonw;

/* Starts the document ("{" and the time unit). start/end as /jsontrace's parameters (defaults
 * 0 and INT64_MAX). */
int tdx_jsonw_init(tdx_jsonw *w, tdx_write_fn write, void *wctx, const tdx_vgframes *frames,
                   int64_t start, int64_t end);
/* A tdx_vev_fn: ctx is the tdx_jsonw. */
int tdx_jsonw_event(void *ctx, const tdx_vev *ev);
/* Ends the document: "], \"stackFrames\":" + the frames reachable from written events + "}". */
int tdx_jsonw_finish(tdx_jsonw *w);
void tdx_jsonw_free(tdx_jsonw *w);

/* ---- splitting into ranges (cmd/trace's SplittingTraceConsumer) ---- */

#define TDX_SPLIT_MAX (100 << 20) /* cmd/trace's budget per range: 100 MiB */

typedef struct tdx_vrange {
    char name[96];
    int64_t start, end;           /* optional-event indexes, both inclusive */
    int64_t start_time, end_time; /* ns */
    uint64_t bytes;               /* the size estimate that closed the range (cmd/trace's sum) */
} tdx_vrange;

typedef struct tdx_jsplit_rec {
    int64_t ts;    /* ns */
    uint32_t size; /* JSON length + 2 (line feed and comma), as cmd/trace counts */
    uint32_t sf, esf;
} tdx_jsplit_rec;

typedef struct tdx_jsplit {
    tdx_vgframes frames;
    int64_t max;
    bool online;                  /* the required size was known up front: nothing is recorded */
    uint64_t required;            /* online: requiredSize */
    TDX_VEC(tdx_jsplit_rec) recs; /* record mode: one per optional event (24 bytes each) */
    uint64_t nrequired, required_bytes;
    /* the walk over the optional events */
    uint64_t n, start;
    int64_t start_ts, last_ts;
    uint64_t events, frames_size;
    uint32_t piece;
    TDX_VEC(uint32_t) seen; /* per frame id: piece that counted it */
    TDX_VEC(tdx_vrange) ranges;
    int err;
} tdx_jsplit;

/* Record mode: remembers size, time and stacks of every optional event (24 bytes each) and splits
 * at the end, once the metadata (requiredSize) is known. */
void tdx_jsplit_init(tdx_jsplit *s, const tdx_vgframes *frames, int64_t max);
/* Online mode: requiredSize is given up front (see tdx_jsplit_required_size and
 * tdx_viewgen_meta_size), so ranges are cut as events arrive, in memory proportional to the
 * frames only. The result is identical to record mode when the given size is right. */
void tdx_jsplit_init_online(tdx_jsplit *s, const tdx_vgframes *frames, int64_t max,
                            uint64_t required_size);
/* cmd/trace's requiredSize for n metadata events whose compact JSON totals `bytes`:
 * the length of {"traceEvents":[...],"stackFrames":{},"displayTimeUnit":"ns"} plus a line feed. */
uint64_t tdx_jsplit_required_size(uint64_t n, uint64_t bytes);
/* A tdx_vev_fn: ctx is the tdx_jsplit. */
int tdx_jsplit_event(void *ctx, const tdx_vev *ev);
/* Computes the ranges once generation is complete. *out is malloc'd (NULL and 0 when the trace
 * is not split). In online mode the metadata seen is checked against the size given up front. */
int tdx_jsplit_finish(tdx_jsplit *s, tdx_vrange **out, size_t *n);
void tdx_jsplit_free(tdx_jsplit *s);

/* The range list as Go's json.MarshalIndent(ranges, "", "  ") prints it ("[]" when empty). */
int tdx_vranges_json(tdx_buf *out, const tdx_vrange *r, size_t n);

#endif
