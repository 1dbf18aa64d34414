/* summary.h: Go's trace summary as far as the viewer needs it: goroutines (creation, first run,
 * end, name), user tasks with their events, regions, goroutines and logs, and related goroutines.
 */
#ifndef TDX_SUMMARY_H
#define TDX_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/hmap.h"
#include "core/mem.h"
#include "index/views/viewgen_store.h"

/* An event the summary refers to (task/region start or end, a log): what the viewer uses of it. */
typedef struct tdx_sumev {
    int64_t time;
    int64_t g;      /* ev.Goroutine() (-1 = none) */
    uint32_t stack; /* store key of ev.Stack() */
    bool present;
} tdx_sumev;

typedef struct tdx_sumg {
    int64_t id;
    int64_t creation; /* CreationTime */
    int64_t start;    /* StartTime: first time it ran (0 = never) */
    int64_t end;      /* EndTime (0 = did not end) */
    uint32_t name;    /* string id of the entry function (0 = unnamed) */
    uint64_t pc;
    bool gone;                /* it ended (NotExist): nothing changes its record any more */
    TDX_VEC(uint32_t) active; /* open regions: region index, or TDX_SUM_SYNTH */
} tdx_sumg;

#define TDX_SUM_SYNTH UINT32_MAX /* a synthetic region inherited at creation (never listed) */
#define TDX_SUM_NONE UINT32_MAX

typedef struct tdx_sumregion {
    uint64_t seq; /* index of the event that made it: regions are listed in this order */
    uint64_t task;
    uint32_t name; /* region type (string id) */
    tdx_sumev start, end;
} tdx_sumregion;

typedef struct tdx_sumtask {
    uint64_t id;
    uint32_t name;      /* task type (string id) */
    uint32_t parent;    /* task index, or TDX_SUM_NONE */
    uint64_t parent_ev; /* index of the event that set the parent: children are in this order */
    tdx_sumev start, end;
    tdx_sumev first_log; /* earliest log event (first wins on ties) */
    uint64_t nlogs;
    TDX_VEC(uint32_t) children;  /* task indexes, in the order they were attached */
    TDX_VEC(uint32_t) regions;   /* region indexes, in the order the summary recorded them */
    TDX_VEC(int64_t) goroutines; /* Goroutines set, in first-seen order (may hold -1) */
} tdx_sumtask;

/* A hash map from pairs of 64-bit values to 32-bit values. */
typedef struct tdx_pairmap {
    uint64_t *a, *b;
    uint32_t *v; /* value + 1; 0 = free slot */
    size_t mask, n;
} tdx_pairmap;

typedef struct tdx_summary {
    tdx_vgstore *store;
    tdx_vgcache cache;
    /* the event list */
    uint64_t nevents;
    int64_t t0;             /* first event's time */
    int64_t last_ts;        /* last event's time */
    int64_t sync_ts;        /* last Sync time (summary's syncTs) */
    uint64_t valid_events;  /* events up to and including the last Sync (what cmd/trace keeps) */
    int64_t valid_end;      /* time of that Sync: cmd/trace's endTime */
    int64_t max_proc;       /* largest proc id of any proc transition (at least 0) ... */
    int64_t valid_max_proc; /* ... among the events cmd/trace keeps (the proc view's maxProc) */
    /* goroutines: records, the latest per id */
    TDX_VEC(tdx_sumg) gs;
    tdx_hmap g_idx;
    TDX_VEC(tdx_sumregion) regions;
    TDX_VEC(tdx_sumtask) tasks;
    tdx_hmap t_idx;
    /* unblock edges (operator, operand) with the index of the first event that made them */
    TDX_VEC(int64_t) edge_a;
    TDX_VEC(int64_t) edge_b;
    TDX_VEC(uint64_t) edge_ev;
    tdx_pairmap edges;   /* (operator, operand) -> edge index */
    tdx_pairmap task_gs; /* (task index, goroutine) membership */
    int oom;
} tdx_summary;

int tdx_summary_init(tdx_summary *s, tdx_vgstore *store);
/* Frees what s holds, leaving its scalars (t0, ...); safe to call again. */
void tdx_summary_free(tdx_summary *s);
/* Feeds every event the reader delivers, in order (as cmd/trace does while parsing). */
int tdx_summary_event(tdx_summary *s, const tdx_event *e, const tdx_gen *g);

const tdx_sumg *tdx_summary_goroutine(const tdx_summary *s, int64_t id);
/* Index of a task, or TDX_SUM_NONE. */
uint32_t tdx_summary_task(const tdx_summary *s, uint64_t id);
/* Index of a task, added (without parent) if new; TDX_SUM_NONE (and s->oom) on exhaustion. */
uint32_t tdx_summary_task_add(tdx_summary *s, uint64_t id);

/* Go's IsSystemGoroutine of a goroutine's entry-function name. */
bool tdx_summary_is_system(const tdx_summary *s, uint32_t name);

/* RelatedGoroutinesV2: goid, the goroutines that unblocked it and those that unblocked them,
 * over the first `nevents` events. *out (malloc'd) is sorted ascending. */
int tdx_summary_related(const tdx_summary *s, int64_t goid, uint64_t nevents, int64_t **out,
                        size_t *n);

/* The task and its descendants (Descendents()), stably sorted as cmd/trace's setTask does, using
 * t0/tend for missing start/end events. *out (malloc'd) holds task indexes. */
int tdx_summary_task_list(const tdx_summary *s, uint32_t task, int64_t t0, int64_t tend,
                          uint32_t **out, size_t *n);

#endif
