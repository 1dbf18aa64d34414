/* taskevents.h: one user task's events as go tool trace's /usertask page lists them (its begin
 * and end, its logs, its regions' begins and ends), from SUMMARY and the event blocks. */
#ifndef TDX_TASKEVENTS_H
#define TDX_TASKEVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "core/mem.h"
#include "index/format/reader.h"
#include "index/views/viewgen_store.h"

/* What the page shows of one event. Strings are ids of the index's tables (ix->tabs). */
typedef struct tdx_taskrow {
    int64_t time;
    int64_t g;        /* Go's primaryGoroutine: a transition's goroutine, else the event's */
    uint64_t a0, a1;  /* task begin: id, parent; log: task */
    uint64_t seq;     /* the page's order among events of one time */
    uint32_t s0, s1;  /* task or region type; log category, message */
    uint8_t kind;     /* enum tdx_kind */
    uint8_t from, to; /* a transition (a region ended by its goroutine's end) */
} tdx_taskrow;

typedef struct tdx_taskevents {
    uint64_t id;
    uint32_t name; /* task type: a string id of the viewer store */
    bool has_start, has_end;
    int64_t start, end;        /* a missing begin is the trace's first event, a missing end its last
                                  Sync (cmd/trace's taskInterval) */
    int64_t t0;                /* the trace's first event */
    TDX_VEC(tdx_taskrow) rows; /* by time; ties in the page's order */
    bool found_;               /* (the index has the task) */
} tdx_taskevents;

/* Fills out (zeroed first) with task id's events. store is the index's viewer store, loaded.
 * The logs are found by reading the blocks from the task's first log on until all its logs are
 * read; every other event by its time (event times are unique). Returns 0, 1 when the index has
 * no task id, or -1 with err set. */
int tdx_taskevents_read(tdx_index *ix, tdx_vgstore *store, uint64_t id, tdx_taskevents *out,
                        tdx_err *err);
/* The same for tasks[0..n), each with its id set (the rest is overwritten), in one pass over the
 * blocks their events lie in (each decoded once). Returns 0, 1 when a task is not in the index
 * (the others are filled), or -1 with err set (then all are freed). */
int tdx_taskevents_read_all(tdx_index *ix, tdx_vgstore *store, tdx_taskevents *tasks, size_t n,
                            tdx_err *err);
void tdx_taskevents_free(tdx_taskevents *t);

/* Go's describeEvent of a row, as the page prints it (Go's quirks kept: "(D 7, parent 0)" for
 * the task's ID, and a log's category shown only when it is empty). Returns 0 or -1 (OOM). */
int tdx_taskrow_describe(tdx_buf *out, const tdx_taskrow *r, const tdx_gen *tabs);

#endif
