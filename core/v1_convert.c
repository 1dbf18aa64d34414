/* v1_convert.c: turns a parsed v1 trace into the v2 event model as Go's tracev1.go does: one
 * generation framed by two Syncs, pre-existing goroutines as GoStatus events, syscalls as
 * begin/end pairs, reasons and STW kinds as strings of one synthetic table. */
#include "v1.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "reader.h"
#include "source.h"
#include "spec.h"

#define OOM(err) tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory")
#define NO_ID TDX_NO_ID

/* Strings the converter adds to the table, in Go's order (block reasons, then STW reasons). */
enum {
    S_FOREVER,
    S_PREEMPTED,
    S_GOSCHED,
    S_SLEEP,
    S_CHAN_SEND,
    S_CHAN_RECV,
    S_NETWORK,
    S_SYNC,
    S_SYNC_COND,
    S_SELECT,
    S_EMPTY,
    S_MARK_ASSIST_WAIT,
    S_STW_UNKNOWN,
    S_COUNT = S_STW_UNKNOWN + 17
};

static const char *const builtin[S_COUNT] = {
    "forever", "preempted", "runtime.Gosched", "sleep", "chan send", "chan receive", "network",
    "sync", "sync.(*Cond).Wait", "select", "", "GC mark assist wait for work",
    /* STW reasons, indexed by reason number */
    "", "GC mark termination", "GC sweep termination", "write heap dump", "goroutine profile",
    "goroutine profile cleanup", "all goroutine stack trace", "read mem stats", "AllThreadsSyscall",
    "GOMAXPROCS", "start trace", "stop trace", "CountPagesInUse (test)", "ReadMetricsSlow (test)",
    "ReadMemStatsSlow (test)", "PageCachePagesLeaked (test)", "ResetDebugLog (test)"};

/* v2 goroutine and proc status numbers as the wire uses them. */
enum { W_GO_RUNNABLE = 1, W_GO_RUNNING = 2, W_GO_SYSCALL = 3, W_GO_WAITING = 4 };
enum { W_PROC_RUNNING = 1, W_PROC_IDLE = 2 };

static const uint8_t kind_of[TDX_EV_NTYPES] = {
    [TDX_EV_CPU_SAMPLE] = TDX_KIND_STACK_SAMPLE,
    [TDX_EV_PROCS_CHANGE] = TDX_KIND_METRIC,
    [TDX_EV_PROC_START] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_PROC_STOP] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_PROC_STATUS] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_CREATE] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_START] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_DESTROY] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_STOP] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_BLOCK] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_UNBLOCK] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_SYSCALL_BEGIN] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_SYSCALL_END] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_SYSCALL_END_BLOCKED] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_GO_STATUS] = TDX_KIND_STATE_TRANSITION,
    [TDX_EV_STW_BEGIN] = TDX_KIND_RANGE_BEGIN,
    [TDX_EV_STW_END] = TDX_KIND_RANGE_END,
    [TDX_EV_GC_BEGIN] = TDX_KIND_RANGE_BEGIN,
    [TDX_EV_GC_END] = TDX_KIND_RANGE_END,
    [TDX_EV_GC_SWEEP_BEGIN] = TDX_KIND_RANGE_BEGIN,
    [TDX_EV_GC_SWEEP_END] = TDX_KIND_RANGE_END,
    [TDX_EV_GC_MARK_ASSIST_BEGIN] = TDX_KIND_RANGE_BEGIN,
    [TDX_EV_GC_MARK_ASSIST_END] = TDX_KIND_RANGE_END,
    [TDX_EV_HEAP_ALLOC] = TDX_KIND_METRIC,
    [TDX_EV_HEAP_GOAL] = TDX_KIND_METRIC,
    [TDX_EV_GO_LABEL] = TDX_KIND_LABEL,
    [TDX_EV_USER_TASK_BEGIN] = TDX_KIND_TASK_BEGIN,
    [TDX_EV_USER_TASK_END] = TDX_KIND_TASK_END,
    [TDX_EV_USER_REGION_BEGIN] = TDX_KIND_REGION_BEGIN,
    [TDX_EV_USER_REGION_END] = TDX_KIND_REGION_END,
    [TDX_EV_USER_LOG] = TDX_KIND_LOG,
};

typedef struct cproc {
    int64_t m;  /* thread of the P's last ProcStart */
    bool has_m; /* ... and no ProcStop since */
    bool seen;  /* a ProcStart or ProcStop of the P was converted */
} cproc;

typedef struct ctask {
    uint64_t parent; /* as written (0 for none) */
    uint32_t name;   /* dense string index */
    bool live;
} ctask;

typedef struct conv {
    tdx_v1_trace *t;
    tdx_gen *g;
    const tdx_read_opts *opts;
    tdx_read_stats *st;
    int64_t last_ts;
    bool pre_init; /* before the first Gomaxprocs: the runtime lists what already exists */
    TDX_VEC(uint64_t) pre_gs; /* goroutines created in that phase, in order */
    tdx_hmap pre_of;          /* ... goroutine -> index in pre_gs while still pending */
    TDX_VEC(cproc) procs;
    tdx_hmap proc_of;
    TDX_VEC(ctask) tasks;
    tdx_hmap task_of;
    uint64_t last_stw;                  /* string id of the last STW reason */
    uint64_t inline_base, builtin_base; /* string id of inline message 0 / builtin 0 */
} conv;

static void conv_free(conv *c) {
    tdx_vec_free(&c->pre_gs);
    tdx_hmap_free(&c->pre_of);
    tdx_vec_free(&c->procs);
    tdx_hmap_free(&c->proc_of);
    tdx_vec_free(&c->tasks);
    tdx_hmap_free(&c->task_of);
}

/* ---- the synthetic table ---- */

/* Go numbers the strings it adds after the largest id of the trace: first the UserLog messages,
 * then the builtin strings. Frames are resolved once all ids are known. */
static int build_tables(conv *c, tdx_err *err) {
    tdx_v1_trace *t = c->t;
    tdx_gen *g = c->g;
    uint64_t max = 0;
    size_t imax = 0;
    for (size_t i = 0; i < t->strings.v.n; i++)
        if (t->strings.wire.v[i] > max) max = t->strings.wire.v[i], imax = i;
    uint64_t ninl = t->inline_strings.n;
    if (max + ninl < max || max + ninl + S_COUNT < max + ninl) {
        /* Go's message; what runs out is the id space above the largest id, so name that
         * string (its bytes: the record keeps no offset of its own). */
        const uint8_t *p = t->strings.v.v[imax].p;
        uint64_t off = p && p >= g->data && p - g->data <= (ptrdiff_t)g->frame.end_off
                           ? (uint64_t)(p - g->data)
                           : TDX_NO_OFFSET;
        return tdx_errf(err, TDX_EFORMAT, off,
                        "trace contains too many strings (string id %" PRIu64
                        " leaves no room for the %" PRIu64 " ids Go numbers after the largest)",
                        max, ninl + S_COUNT);
    }
    size_t total = 1 + t->strings.v.n + ninl + S_COUNT;
    if (total >= UINT32_MAX || tdx_vec_reserve(&g->strings, total)) return OOM(err);
    for (size_t i = 0; i < t->strings.v.n; i++) {
        if (tdx_hmap_put(&g->string_ids, t->strings.wire.v[i], (uint32_t)g->strings.n))
            return OOM(err);
        g->strings.v[g->strings.n++] = t->strings.v.v[i];
    }
    c->inline_base = max + 1;
    for (size_t i = 0; i < ninl; i++) {
        if (tdx_hmap_put(&g->string_ids, max + 1 + i, (uint32_t)g->strings.n)) return OOM(err);
        g->strings.v[g->strings.n++] = t->inline_strings.v[i];
    }
    c->builtin_base = max + 1 + ninl;
    for (size_t i = 0; i < S_COUNT; i++) {
        uint32_t n = (uint32_t)strlen(builtin[i]);
        uint32_t dense = 0; /* the empty ones share index 0 */
        if (n) {
            dense = (uint32_t)g->strings.n;
            g->strings.v[g->strings.n++] = (tdx_str){(const uint8_t *)builtin[i], n};
        }
        if (tdx_hmap_put(&g->string_ids, c->builtin_base + i, dense)) return OOM(err);
    }
    g->nwire_strings = (uint32_t)g->strings.n;
    for (size_t i = 0; i < g->frames.n; i++) {
        tdx_frame *f = &g->frames.v[i];
        uint32_t fn = tdx_gen_string(g, f->func_id), file = tdx_gen_string(g, f->file_id);
        /* Go has no answer for an undefined id (it would panic); show the empty string. */
        f->func = fn == UINT32_MAX ? 0 : fn;
        f->file = file == UINT32_MAX ? 0 : file;
    }
    g->freq = (uint64_t)t->ticks_per_sec;
    g->ns_per_tick = 1e9 / (double)t->ticks_per_sec;
    g->frame.gen = 1;
    g->frame.start_off = TDX_HEADER_SIZE;
    return 0;
}

static uint32_t dense_string(const tdx_gen *g, uint64_t id) {
    uint32_t d = tdx_gen_string(g, id);
    return d == UINT32_MAX ? 0 : d;
}

static uint32_t dense_stack(const tdx_gen *g, uint64_t id) {
    uint32_t d = tdx_gen_stack(g, id);
    return d == UINT32_MAX ? 0 : d;
}

/* ---- emission ---- */

static const uint8_t go_status_state[5] = {TDX_GO_UNDETERMINED, TDX_GO_RUNNABLE, TDX_GO_RUNNING,
                                           TDX_GO_SYSCALL, TDX_GO_WAITING};

/* Fills the derived fields the v2 ordering stage fills (core/order.c finish_event), from the
 * type, arguments and context alone. */
static void finish(const conv *c, tdx_event *e) {
    const tdx_gen *g = c->g;
    const tdx_evspec *sp = &tdx_specs[e->type];
    e->kind = kind_of[e->type];
    if (e->type == TDX_EV_CPU_SAMPLE) {
        e->stack = dense_stack(g, e->args[0]);
        return;
    }
    if (sp->stack_args[0] >= 0) e->stack = dense_stack(g, e->args[(int)sp->stack_args[0]]);
    for (int i = 0; i < 2 && sp->string_args[i] >= 0; i++)
        e->str[i] = dense_string(g, e->args[(int)sp->string_args[i]]);
    /* An STWEnd is named after the reason of the STWBegin before it, carried in args[0]. */
    if (e->type == TDX_EV_STW_END) e->str[0] = dense_string(g, e->args[0]);
    if (e->kind != TDX_KIND_STATE_TRANSITION) return;
    e->res_kind = TDX_RES_GOROUTINE;
    e->res = e->g;
    switch (e->type) {
    case TDX_EV_PROC_START:
        e->res_kind = TDX_RES_PROC;
        e->res = (int64_t)e->args[0];
        e->from = TDX_PROC_IDLE;
        e->to = TDX_PROC_RUNNING;
        break;
    case TDX_EV_PROC_STATUS:
        e->res_kind = TDX_RES_PROC;
        e->res = (int64_t)e->args[0];
        e->from = TDX_PROC_UNDETERMINED;
        e->to = e->args[1] == W_PROC_RUNNING ? TDX_PROC_RUNNING : TDX_PROC_IDLE;
        break;
    case TDX_EV_PROC_STOP:
        e->res_kind = TDX_RES_PROC;
        e->res = e->p;
        e->from = TDX_PROC_RUNNING;
        e->to = TDX_PROC_IDLE;
        break;
    case TDX_EV_GO_CREATE:
        e->res = (int64_t)e->args[0];
        e->tstack = dense_stack(g, e->args[1]);
        e->has_tstack = 1; /* Go keeps a handle to new_stack even when it is 0 */
        e->from = TDX_GO_NOTEXIST;
        e->to = TDX_GO_RUNNABLE;
        break;
    case TDX_EV_GO_START:
        e->res = (int64_t)e->args[0];
        e->from = TDX_GO_RUNNABLE;
        e->to = TDX_GO_RUNNING;
        break;
    case TDX_EV_GO_UNBLOCK:
        e->res = (int64_t)e->args[0];
        e->from = TDX_GO_WAITING;
        e->to = TDX_GO_RUNNABLE;
        break;
    case TDX_EV_GO_STATUS:
        e->res = (int64_t)e->args[0];
        e->from = (uint8_t)(e->args[2] >> 32);
        e->to = go_status_state[(e->args[2] & 0xffffffffu) < 5 ? (e->args[2] & 0xffffffffu) : 0];
        break;
    case TDX_EV_GO_DESTROY:
        e->from = TDX_GO_RUNNING;
        e->to = TDX_GO_NOTEXIST;
        break;
    case TDX_EV_GO_STOP:
    case TDX_EV_GO_BLOCK:
    case TDX_EV_GO_SYSCALL_BEGIN:
        e->tstack = e->stack;
        e->has_tstack = e->stack != 0;
        e->from = TDX_GO_RUNNING;
        e->to = e->type == TDX_EV_GO_STOP    ? TDX_GO_RUNNABLE
                : e->type == TDX_EV_GO_BLOCK ? TDX_GO_WAITING
                                             : TDX_GO_SYSCALL;
        break;
    case TDX_EV_GO_SYSCALL_END:
        e->from = TDX_GO_SYSCALL;
        e->to = TDX_GO_RUNNING;
        break;
    case TDX_EV_GO_SYSCALL_END_BLOCKED:
        e->from = TDX_GO_SYSCALL;
        e->to = TDX_GO_RUNNABLE;
        break;
    default:
        break;
    }
}

static int deliver(conv *c, tdx_event *e, const tdx_gen *g, tdx_err *err) {
    tdx_read_stats *st = c->st;
    if (e->kind != TDX_KIND_SYNC) {
        /* Converted events must have strictly increasing times. */
        if (e->time <= c->last_ts) e->time = (int64_t)((uint64_t)c->last_ts + 1);
        c->last_ts = e->time;
    }
    if (st->events == 0) st->first_time = e->time;
    st->events++;
    st->last_time = e->time;
    if (e->kind == TDX_KIND_SYNC) st->syncs++;
    if (c->opts->emit && c->opts->emit(c->opts->emit_ctx, e, g))
        return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "event consumer failed");
    return 0;
}

static int emit(conv *c, tdx_event *e, tdx_err *err) {
    finish(c, e);
    return deliver(c, e, c->g, err);
}

static int deliver_sync(conv *c, int64_t time, const tdx_gen *g, tdx_err *err) {
    tdx_event s;
    memset(&s, 0, sizeof s);
    s.type = TDX_TYPE_SYNC;
    s.kind = TDX_KIND_SYNC;
    s.m = s.p = s.g = NO_ID;
    s.time = time;
    s.args[0] = c->st->syncs + 1;
    return deliver(c, &s, g, err);
}

/* ---- per-event conversion ---- */

static cproc *proc_of(conv *c, int32_t p) {
    int ins;
    uint32_t *slot = tdx_hmap_upsert(&c->proc_of, (uint32_t)p, (uint32_t)c->procs.n, &ins);
    if (!slot) return NULL;
    if (ins) {
        cproc x = {0, false, false};
        if (tdx_vec_push(&c->procs, x)) return NULL;
    }
    return &c->procs.v[*slot];
}

/* The thread of P, or NoThread (Go's ctx.M for ordinary events). */
static int64_t thread_of(conv *c, int32_t p) {
    uint32_t i = tdx_hmap_get(&c->proc_of, (uint32_t)p);
    return i != TDX_HMAP_EMPTY && c->procs.v[i].has_m ? c->procs.v[i].m : NO_ID;
}

/* Go reads the thread from its map without a presence check for a few events, so a P without
 * one shows thread 0 there. */
static int64_t thread_or_zero(conv *c, int32_t p) {
    int64_t m = thread_of(c, p);
    return m == NO_ID ? 0 : m;
}

static uint64_t builtin_id(const conv *c, int s) {
    return c->builtin_base + (uint64_t)s;
}

/* v2 type and reason string for the v1 blocking events. */
static bool block_kind(uint8_t t, uint8_t *type, int *reason) {
    switch (t) {
    case TDX_V1_GO_STOP:
        *type = TDX_EV_GO_BLOCK, *reason = S_FOREVER;
        return true;
    case TDX_V1_GO_SCHED:
        *type = TDX_EV_GO_STOP, *reason = S_GOSCHED;
        return true;
    case TDX_V1_GO_PREEMPT:
        *type = TDX_EV_GO_STOP, *reason = S_PREEMPTED;
        return true;
    case TDX_V1_GO_SLEEP:
        *type = TDX_EV_GO_BLOCK, *reason = S_SLEEP;
        return true;
    case TDX_V1_GO_BLOCK:
        *type = TDX_EV_GO_BLOCK, *reason = S_EMPTY;
        return true;
    case TDX_V1_GO_BLOCK_SEND:
        *type = TDX_EV_GO_BLOCK, *reason = S_CHAN_SEND;
        return true;
    case TDX_V1_GO_BLOCK_RECV:
        *type = TDX_EV_GO_BLOCK, *reason = S_CHAN_RECV;
        return true;
    case TDX_V1_GO_BLOCK_SELECT:
        *type = TDX_EV_GO_BLOCK, *reason = S_SELECT;
        return true;
    case TDX_V1_GO_BLOCK_SYNC:
        *type = TDX_EV_GO_BLOCK, *reason = S_SYNC;
        return true;
    case TDX_V1_GO_BLOCK_COND:
        *type = TDX_EV_GO_BLOCK, *reason = S_SYNC_COND;
        return true;
    case TDX_V1_GO_BLOCK_NET:
        *type = TDX_EV_GO_BLOCK, *reason = S_NETWORK;
        return true;
    case TDX_V1_GO_BLOCK_GC:
        *type = TDX_EV_GO_BLOCK, *reason = S_MARK_ASSIST_WAIT;
        return true;
    }
    return false;
}

static int stw_reason(int version, uint64_t kind) {
    if (version < 21) return kind <= 1 ? (int)kind + 1 : 0;
    return kind < 17 ? (int)kind : 0;
}

/* Leaves the initialization phase: goroutines that were listed but neither started, waiting nor
 * in a syscall were runnable when tracing began. */
static int end_pre_init(conv *c, const tdx_v1_event *v, tdx_err *err) {
    c->pre_init = false;
    for (size_t i = 0; i < c->pre_gs.n; i++) {
        uint64_t gid = c->pre_gs.v[i];
        if (tdx_hmap_get(&c->pre_of, gid) != (uint32_t)i) continue;
        tdx_event e;
        memset(&e, 0, sizeof e);
        e.type = TDX_EV_GO_STATUS;
        e.time = v->ts;
        e.m = e.p = e.g = NO_ID;
        e.args[0] = gid;
        e.args[1] = UINT64_MAX;
        e.args[2] = W_GO_RUNNABLE;
        if (emit(c, &e, err)) return -1;
    }
    tdx_hmap_free(&c->pre_of);
    tdx_vec_free(&c->pre_gs);
    return 0;
}

static int convert(conv *c, const tdx_v1_event *v, tdx_err *err) {
    tdx_event e;
    memset(&e, 0, sizeof e);
    e.time = v->ts;
    e.off = tdx_v1_event_off(v);
    e.p = v->p;
    e.g = v->g == 0 ? NO_ID : (int64_t)v->g;
    memcpy(e.args, v->args, sizeof v->args);
    e.args[3] = 0;
    uint8_t type;
    int reason;
    uint32_t task_name = 0; /* TaskEnd: the name remembered from its TaskBegin */
    switch (v->type) {
    case TDX_V1_GOMAXPROCS:
        if (c->pre_init) return end_pre_init(c, v, err);
        type = TDX_EV_PROCS_CHANGE;
        break;
    case TDX_V1_PROC_START: {
        cproc *p = proc_of(c, v->p);
        if (!p) return OOM(err);
        p->m = (int64_t)v->args[0];
        p->has_m = true;
        memset(e.args, 0, sizeof e.args);
        e.args[0] = (uint64_t)(int64_t)v->p;
        if (p->seen) {
            type = TDX_EV_PROC_START;
        } else {
            p->seen = true;
            type = TDX_EV_PROC_STATUS;
            e.args[1] = W_PROC_RUNNING;
        }
        break;
    }
    case TDX_V1_PROC_STOP: {
        cproc *p = proc_of(c, v->p);
        if (!p) return OOM(err);
        memset(e.args, 0, sizeof e.args);
        e.args[0] = (uint64_t)(int64_t)v->p;
        if (p->seen) {
            type = TDX_EV_PROC_STOP;
        } else {
            p->seen = true;
            type = TDX_EV_PROC_STATUS;
            e.args[1] = W_PROC_IDLE;
        }
        break;
    }
    case TDX_V1_GC_START:
        type = TDX_EV_GC_BEGIN;
        break;
    case TDX_V1_GC_DONE:
        type = TDX_EV_GC_END;
        break;
    case TDX_V1_STW_START:
        type = TDX_EV_STW_BEGIN;
        c->last_stw = builtin_id(c, S_STW_UNKNOWN + stw_reason(c->t->version, v->args[0]));
        memset(e.args, 0, sizeof e.args);
        e.args[0] = c->last_stw;
        break;
    case TDX_V1_STW_DONE:
        type = TDX_EV_STW_END;
        memset(e.args, 0, sizeof e.args);
        e.args[0] = c->last_stw;
        break;
    case TDX_V1_GC_SWEEP_START:
        type = TDX_EV_GC_SWEEP_BEGIN;
        break;
    case TDX_V1_GC_SWEEP_DONE:
        type = TDX_EV_GC_SWEEP_END;
        break;
    case TDX_V1_GO_CREATE:
        if (c->pre_init) {
            int ins;
            uint32_t *slot = tdx_hmap_upsert(&c->pre_of, v->args[0], (uint32_t)c->pre_gs.n, &ins);
            if (!slot || (ins && tdx_vec_push(&c->pre_gs, v->args[0]))) return OOM(err);
            return 0;
        }
        type = TDX_EV_GO_CREATE;
        break;
    case TDX_V1_GO_START:
        if (c->pre_init) {
            type = TDX_EV_GO_STATUS;
            e.args[1] = UINT64_MAX;
            e.args[2] = W_GO_RUNNING;
            tdx_hmap_del(&c->pre_of, v->args[0]);
        } else {
            type = TDX_EV_GO_START;
        }
        break;
    case TDX_V1_GO_START_LABEL: {
        /* A GoStart and a GoLabel, both with the raw goroutine and the P's thread or 0. */
        e.type = TDX_EV_GO_START;
        e.g = (int64_t)v->g;
        e.m = thread_or_zero(c, v->p);
        tdx_event l = e;
        if (emit(c, &e, err)) return -1;
        memset(l.args, 0, sizeof l.args);
        l.type = TDX_EV_GO_LABEL;
        l.args[0] = v->args[2];
        l.time = v->ts;
        return emit(c, &l, err);
    }
    case TDX_V1_GO_END:
        type = TDX_EV_GO_DESTROY;
        break;
    case TDX_V1_GO_UNBLOCK:
        type = TDX_EV_GO_UNBLOCK;
        break;
    case TDX_V1_GO_SYSCALL:
        memset(e.args, 0, sizeof e.args);
        e.args[1] = v->stk;
        type = TDX_EV_GO_SYSCALL_BEGIN;
        if (!(v->flags & TDX_V1F_SYSCALL_BLOCKED)) {
            /* A syscall that kept its P: a 1 ns begin/end pair. */
            e.type = type;
            e.g = (int64_t)v->g;
            e.m = thread_or_zero(c, v->p);
            tdx_event end = e;
            if (emit(c, &e, err)) return -1;
            memset(end.args, 0, sizeof end.args);
            end.type = TDX_EV_GO_SYSCALL_END;
            end.time = (int64_t)((uint64_t)v->ts + 1);
            return emit(c, &end, err);
        }
        break;
    case TDX_V1_GO_SYSEXIT:
        type = TDX_EV_GO_SYSCALL_END_BLOCKED;
        break;
    case TDX_V1_GO_SYSBLOCK:
        return 0;
    case TDX_V1_GO_WAITING:
    case TDX_V1_GO_INSYSCALL:
        type = TDX_EV_GO_STATUS;
        memset(e.args, 0, sizeof e.args);
        e.args[0] = v->args[0];
        e.args[1] = UINT64_MAX;
        e.args[2] = v->type == TDX_V1_GO_WAITING ? W_GO_WAITING : W_GO_SYSCALL;
        tdx_hmap_del(&c->pre_of, v->args[0]);
        break;
    case TDX_V1_HEAP_ALLOC:
        type = TDX_EV_HEAP_ALLOC;
        break;
    case TDX_V1_HEAP_GOAL:
        type = TDX_EV_HEAP_GOAL;
        break;
    case TDX_V1_GC_MARK_ASSIST_START:
        type = TDX_EV_GC_MARK_ASSIST_BEGIN;
        break;
    case TDX_V1_GC_MARK_ASSIST_DONE:
        type = TDX_EV_GC_MARK_ASSIST_END;
        break;
    case TDX_V1_USER_TASK_CREATE: {
        type = TDX_EV_USER_TASK_BEGIN;
        e.args[1] = v->args[1] == 0 ? TDX_NO_TASK : v->args[1];
        e.args[2] = v->args[2];
        e.args[3] = v->stk;
        int ins;
        uint32_t *slot = tdx_hmap_upsert(&c->task_of, v->args[0], (uint32_t)c->tasks.n, &ins);
        if (!slot) return OOM(err);
        ctask tk = {v->args[1], dense_string(c->g, v->args[2]), true};
        if (ins) {
            if (tdx_vec_push(&c->tasks, tk)) return OOM(err);
        } else {
            c->tasks.v[*slot] = tk;
        }
        break;
    }
    case TDX_V1_USER_TASK_END: {
        type = TDX_EV_USER_TASK_END;
        uint32_t i = tdx_hmap_get(&c->task_of, v->args[0]);
        uint32_t name = 0;
        e.args[2] = TDX_NO_TASK;
        if (i != TDX_HMAP_EMPTY && c->tasks.v[i].live) {
            /* The parent as written: 0 (not NoTask) for a top-level task, as Go shows it. */
            e.args[2] = c->tasks.v[i].parent;
            name = c->tasks.v[i].name;
            c->tasks.v[i].live = false;
        }
        e.args[1] = v->stk;
        task_name = name;
        break;
    }
    case TDX_V1_USER_REGION:
        type = v->args[1] == 0 ? TDX_EV_USER_REGION_BEGIN : TDX_EV_USER_REGION_END;
        e.args[1] = v->args[2];
        e.args[2] = v->stk;
        break;
    case TDX_V1_USER_LOG:
        type = TDX_EV_USER_LOG;
        e.args[2] = c->inline_base + v->args[2];
        e.args[3] = v->stk;
        break;
    case TDX_V1_CPU_SAMPLE:
        e.type = TDX_EV_CPU_SAMPLE;
        e.m = NO_ID;
        e.args[0] = v->stk;
        e.args[1] = UINT64_MAX;
        e.args[2] = (uint64_t)(int64_t)v->p;
        e.args[3] = v->g;
        return emit(c, &e, err);
    default:
        if (block_kind(v->type, &type, &reason)) {
            memset(e.args, 0, sizeof e.args);
            e.args[0] = builtin_id(c, reason);
            break;
        }
        return tdx_errf(err, TDX_EFORMAT, e.off, "unexpected event type %u", v->type);
    }
    e.type = type;
    const tdx_evspec *sp = &tdx_specs[type];
    /* The v1 stack goes into the v2 type's stack slot (v1 types without a stack have 0 there). */
    if (sp->stack_args[0] >= 0) e.args[(int)sp->stack_args[0]] = v->stk;
    e.m = v->p != -1 ? thread_of(c, v->p) : NO_ID;
    if (v->type == TDX_V1_PROC_STOP) {
        cproc *p = proc_of(c, v->p);
        if (!p) return OOM(err);
        p->has_m = false;
    }
    finish(c, &e);
    if (type == TDX_EV_USER_TASK_END) e.str[0] = task_name;
    return deliver(c, &e, c->g, err);
}

/* Marks each GoSysCall whose goroutine's next event is a GoSysBlock (one backward pass instead of
 * Go's forward scan per syscall). */
static int mark_blocking_syscalls(tdx_v1_trace *t, tdx_err *err) {
    tdx_hmap next = {0};
    for (size_t i = t->events.n; i-- > 0;) {
        tdx_v1_event *e = &t->events.v[i];
        if (e->type == TDX_V1_GO_SYSCALL && tdx_hmap_get(&next, e->g) == TDX_V1_GO_SYSBLOCK)
            e->flags |= TDX_V1F_SYSCALL_BLOCKED;
        if (tdx_hmap_put(&next, e->g, e->type)) {
            tdx_hmap_free(&next);
            return OOM(err);
        }
    }
    tdx_hmap_free(&next);
    return 0;
}

int tdx_read_v1(const uint8_t *data, size_t size, int version, const tdx_read_opts *opts,
                tdx_read_stats *stats, tdx_err *err) {
    memset(stats, 0, sizeof *stats);
    stats->version = version;
    tdx_err_clear(err);
    tdx_v1_trace *t = malloc(sizeof *t);
    if (!t) return OOM(err);
    tdx_v1_trace_init(t, data, version);
    conv c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.g = &t->gen;
    c.opts = opts;
    c.st = stats;
    c.last_ts = -1;
    c.pre_init = true;
    t->gen.frame.end_off = size;
    int rc = tdx_v1_parse(data, size, version, t, err);
    if (!rc) rc = build_tables(&c, err);
    if (!rc) rc = mark_blocking_syscalls(t, err);
    if (rc) goto out;
    uint64_t nev = 0;
    if (t->events.n > 0) {
        if ((rc = deliver_sync(&c, t->events.v[0].ts - 1, c.g, err))) goto out;
        for (size_t i = 0; i < t->events.n; i++)
            if ((rc = convert(&c, &t->events.v[i], err))) goto out;
        nev = stats->events;
        stats->generations = 1;
        stats->bytes = size;
        if (opts->gen_done && opts->gen_done(opts->gen_done_ctx, c.g, 0, nev)) {
            rc = tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "event consumer failed");
            goto out;
        }
    }
    if (opts->progress) opts->progress(opts->progress_ctx, size, size, stats->events);
    rc = deliver_sync(&c, c.last_ts + 1, NULL, err);
    /* An old trace is parsed whole (nothing is released early), so hashing it at the end costs
     * no extra residency. */
    if (!rc && opts->hash_input) {
        stats->input_hash = XXH3_64bits(data, size);
        stats->input_sample = tdx_trace_sample_hash(data, size);
    }
out:
    conv_free(&c);
    tdx_v1_trace_free(t);
    free(t);
    return rc;
}
