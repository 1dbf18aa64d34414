/* order.h: the ordering and validation stage: merges one generation's per-thread event streams
 * with Go's frontier and state machine and emits the ordered high-level events.
 *
 * State that crosses generations (goroutines, procs, threads, tasks, GC) lives in a tdx_carry.
 * A generation is ordered against that state through lazy reads: either the true state (exact,
 * sequential), or guesses (speculative, in parallel with the previous generation) whose every read
 * is logged so tdx_carry_check can later prove the guessed run identical to the exact one. */
#ifndef TDX_ORDER_H
#define TDX_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "event.h"
#include "gen.h"
#include "hmap.h"
#include "mem.h"

/* ---- trace-wide state carried from one generation to the next ---- */

typedef struct tdx_region {
    uint64_t task;
    tdx_str name; /* points into the trace bytes */
} tdx_region;

typedef struct tdx_range {
    uint8_t typ;   /* the Begin event type */
    uint64_t desc; /* STW kind string id, else 0 */
    tdx_str name;  /* STW kind as resolved at the begin (points into the trace bytes) */
} tdx_range;

typedef TDX_VEC(tdx_region) tdx_regionvec;
typedef TDX_VEC(tdx_range) tdx_rangevec;

typedef struct tdx_cg { /* a goroutine */
    uint64_t id;
    uint8_t status; /* wire goroutine status */
    tdx_regionvec regions;
    tdx_rangevec ranges;
} tdx_cg;

typedef struct tdx_cp { /* a proc */
    uint64_t id;
    uint8_t status; /* wire proc status */
    tdx_rangevec ranges;
} tdx_cp;

typedef struct tdx_cm { /* a thread */
    uint64_t id;
    int64_t p, g;
} tdx_cm;

typedef struct tdx_ctask {
    uint64_t id;
    uint64_t parent;
    tdx_str name;
} tdx_ctask;

enum { TDX_GC_UNDETERMINED = 0, TDX_GC_NOTRUNNING, TDX_GC_RUNNING };

typedef struct tdx_carry {
    TDX_VEC(tdx_cg) gs;
    tdx_hmap g_idx;
    TDX_VEC(uint32_t) g_free;
    TDX_VEC(tdx_cp) ps;
    tdx_hmap p_idx;
    TDX_VEC(tdx_cm) ms;
    tdx_hmap m_idx;
    TDX_VEC(tdx_ctask) tasks;
    tdx_hmap t_idx;
    TDX_VEC(uint32_t) t_free;
    uint8_t gc_state;
    uint64_t gc_seq;
    uint64_t ngens; /* generations merged so far */
} tdx_carry;

void tdx_carry_init(tdx_carry *c);
void tdx_carry_free(tdx_carry *c);

/* ---- ordering one generation ---- */

typedef struct tdx_order tdx_order;
typedef struct tdx_task_fixup tdx_task_fixup;

/* Receives the ordered events of a generation. Times are fixed up within the generation only
 * (strictly increasing from its first event); see tdx_time_floor. Return non-zero to stop. */
typedef int (*tdx_emit_fn)(void *ctx, const tdx_event *e, const tdx_gen *g);

typedef struct tdx_order_params {
    const tdx_carry *carry; /* true state before this generation, or NULL to speculate */
    bool initial;           /* this is the trace's initial generation (first with events) */
    uint64_t sync_n;        /* N of this generation's Sync event */
    tdx_emit_fn emit;       /* may be NULL: the run only validates (see tdx_order_span) */
    void *emit_ctx;
    /* When the previous generation's last time is already known (sequential reading, a rerun in
     * order), the stream-wide fix-up is applied as events are emitted: emitted times are final,
     * tdx_time_floor(local, floor, i). Saves the caller a pass over every event. */
    bool final_times;
    int64_t floor;
} tdx_order_params;

enum tdx_order_result {
    TDX_ORDER_OK = 0,
    TDX_ORDER_ERROR = -1,      /* the trace is invalid; err holds Go's message */
    TDX_ORDER_SPECULATION = -2 /* speculative run needed unknowable state; rerun with the truth */
};

tdx_order *tdx_order_new(void);
void tdx_order_free(tdx_order *o);

/* Orders generation g (already loaded) and emits its Sync event and all its events, including
 * CPU samples, in Go's order. Returns an enum tdx_order_result. N of the emitted Sync is left 0
 * (the caller knows how many Syncs came before). */
int tdx_order_generation(tdx_order *o, tdx_gen *g, const tdx_order_params *prm, tdx_err *err);

/* After a speculative run: whether every carried value it read equals the truth in c. */
bool tdx_order_check(tdx_order *o, const tdx_carry *c);

/* A speculative TaskEnd of a task, or STWEnd of a stop-the-world, begun in an earlier generation:
 * event `index` (within the generation) takes those details from the true state, via
 * tdx_task_fixup_apply, before the generation is merged. */
enum { TDX_FIX_TASK = 1, TDX_FIX_STW = 2 };
typedef struct tdx_task_fixup {
    uint64_t index;
    uint64_t id; /* the task (TDX_FIX_TASK), or the goroutine whose STW ended (TDX_FIX_STW) */
    uint8_t kind;
} tdx_task_fixup;
const tdx_task_fixup *tdx_order_fixups(const tdx_order *o, size_t *n);
int tdx_task_fixup_apply(const tdx_carry *c, const tdx_task_fixup *f, tdx_gen *g, tdx_event *e);

/* Why the last speculative run stopped or failed its proof (NULL if it did not). */
const char *tdx_order_why(const tdx_order *o);

/* Folds the generation's effects into c (after an exact run, or a speculative run that passed
 * tdx_order_check). */
int tdx_order_merge(const tdx_order *o, tdx_carry *c, tdx_err *err);

/* Number of events emitted by the last run (Sync included). */
uint64_t tdx_order_nevents(const tdx_order *o);

/* Generation-local times of the first and last events the last run emitted (when it emitted any).
 * The run's first event is its Sync, and local times strictly increase, so with the stream-wide
 * fix-up the final times are tdx_time_floor(first, floor, 0) and tdx_time_floor(last, floor, n-1):
 * a consumer-less reader needs nothing else from the events. */
void tdx_order_span(const tdx_order *o, int64_t *first, int64_t *last);

/* The stream-wide fix-up: event i (0-based within its generation) whose generation-local time is
 * t gets max(t, floor + i + 1), where floor is the last time of the previous generation (0 for
 * the first). */
static inline int64_t tdx_time_floor(int64_t t, int64_t floor, uint64_t i) {
    int64_t f = (int64_t)((uint64_t)floor + i + 1);
    return t > f ? t : f;
}

#endif
