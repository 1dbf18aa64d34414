/* viewgen.c: the trace-viewer generator of cmd/trace (gen.go, procgen.go, threadgen.go,
 * goroutinegen.go, gstate.go and traceviewer's Emitter), reimplemented over our event stream.
 *
 * Determinism: Go iterates hash maps in several places (spec 0.3). We use fixed orders instead:
 * outstanding proc ranges by (name, proc), outstanding global ranges by name, goroutines by
 * ascending id at Finish, a goroutine's active ranges by name inside stop, and metadata of tasks
 * and resources by ascending id.
 *
 * Invariant failures (spec 4.17) that make Go panic never abort here; each spot says what is
 * emitted instead (old-format traces such as go119-annotations reach them). */
#include "index/views/viewgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hmap.h"
#include "core/spec.h"
#include "index/format/rans.h"
#include "index/common/viewgen_ser.h"

#define NONE UINT64_MAX /* no lane: R(noResource) converted to uint64 */

enum { VS_DEAD = 0, VS_RUNNABLE, VS_RUNNING, VS_WAITING, VS_WAITING_GC };
enum { CAUSE_NONE = 0, CAUSE_GO, CAUSE_SYSCALL, CAUSE_UNBLOCK };
enum { ARG_NONE = 0, ARG_BLOCKED_NO, ARG_BLOCKED_YES };

typedef struct arange { /* an active range of a goroutine */
    uint32_t name, stack;
    int64_t time; /* 0: pending until the goroutine runs */
} arange;

typedef struct crange { /* a completed range waiting for the goroutine's next stop */
    uint32_t name, sstack, estack;
    uint8_t arg;
    int64_t start, end;
} crange;

typedef struct vg_g { /* gState */
    int64_t id;
    uint64_t lane; /* executing */
    int64_t run_start;
    int64_t sys_time;
    int64_t cause_time;
    uint64_t cause_lane;
    uint32_t func, label, block_reason, last_stop;
    uint32_t sys_stack, cause_stack, cause_reason;
    uint8_t named, sys_active, cause;
    struct vg_ranges *r; /* NULL until the goroutine's first range */
} vg_g;

/* A goroutine's ranges, apart from its record: most goroutines never have one, and a server's
 * idle connections are hundreds of thousands of records in each view (88 bytes, not 128). */
typedef struct vg_ranges {
    TDX_VEC(arange) active; /* sorted by name */
    TDX_VEC(crange) done;
} vg_ranges;

/* g's ranges, made on first use (NULL, with *err set, when memory is exhausted). */
static vg_ranges *g_ranges(int *err, vg_g *g) {
    if (!g->r && !(g->r = calloc(1, sizeof *g->r))) *err = 1;
    return g->r;
}

static void g_free_ranges(vg_g *g) {
    if (!g->r) return;
    tdx_vec_free(&g->r->active);
    tdx_vec_free(&g->r->done);
    free(g->r);
    g->r = NULL;
}

typedef struct grange {
    uint32_t name, stack;
    int64_t time;
} grange;

typedef struct prange {
    uint32_t name, stack;
    int64_t proc, time;
} prange;

typedef struct named_lane { /* a resource or task lane named at Flush */
    uint64_t id;
    int64_t sort;
    size_t off, len; /* name in names */
} named_lane;

struct tdx_viewgen {
    /* options */
    int view;
    int64_t wstart, wend;
    bool has_filter;
    tdx_hmap filter;
    int64_t focus;
    const tdx_summary *sum;
    uint32_t *tasks;
    size_t ntasks;
    bool regions;
    int64_t opt_tend;
    bool overlap;
    /* plumbing */
    tdx_vgstore *store;
    tdx_vgframes fr;
    tdx_vev_fn sink;
    void *sink_ctx;
    tdx_vgcache cache;
    uint32_t s_syscall, s_mark_assist, s_gc_mark, s_sweep;
    tdx_buf nbuf, tbuf;
    int err;
    /* The sink drops optional events while *quiet_index < quiet_below (tdx_viewgen_set_quiet). */
    const int64_t *quiet_index;
    int64_t quiet_below;
    /* state */
    bool started, finished;
    int64_t t0, tlast;
    uint64_t nsync;
    uint64_t nopt, arrow_seq, async_seq;
    uint64_t broken; /* places where Go's generator would have panicked */
    int64_t gst[5], gst_prev[5];
    int64_t th[3], th_prev[3]; /* InSyscall, InSyscallRuntime, Running */
    uint64_t heap_alloc, heap_goal, prev_alloc, prev_goal;
    tdx_vev cev; /* the counter template (ph 'C', pid 1; the rest set per counter) */
    uint64_t gomaxprocs;
    int64_t max_proc;
    TDX_VEC(vg_g) gs;
    tdx_hmap g_idx;
    tdx_hmap insys;          /* proc view: P -> index of the goroutine in a syscall on it */
    TDX_VEC(grange) granges; /* sorted by name */
    TDX_VEC(prange) pranges; /* sorted by (name, proc) */
    TDX_VEC(int64_t) threads;
    tdx_hmap thread_set;
    /* Finish-time lists */
    TDX_VEC(named_lane) lanes;
    TDX_VEC(named_lane) tlanes;
    tdx_buf names;
};

const char *const tdx_task_colors[TDX_NTASK_COLORS] = {"thread_state_uninterruptible",
                                                       "thread_state_iowait",
                                                       "thread_state_running",
                                                       "thread_state_runnable",
                                                       "thread_state_unknown",
                                                       "light_memory_dump",
                                                       "background_memory_dump",
                                                       "detailed_memory_dump",
                                                       "good",
                                                       "bad",
                                                       "terrible",
                                                       "olive",
                                                       "rail_response",
                                                       "rail_animation",
                                                       "rail_idle",
                                                       "rail_load",
                                                       "heap_dump_child_node_arrow",
                                                       "cq_build_running",
                                                       "cq_build_passed",
                                                       "cq_build_failed",
                                                       "cq_build_abandoned",
                                                       "cq_build_attempt_runnig",
                                                       "cq_build_attempt_passed"};

static tdx_str cstr(const char *s) {
    return (tdx_str){(const uint8_t *)s, (uint32_t)strlen(s)};
}
/* A string literal's tdx_str, its length known at compile time. */
#define lit(s) ((tdx_str){(const uint8_t *)(s), (uint32_t)(sizeof(s) - 1)})

static tdx_str sid(const tdx_viewgen *vg, uint32_t id) {
    return tdx_vgstore_str(vg->store, id);
}

static int str_cmp(const tdx_viewgen *vg, uint32_t a, uint32_t b) {
    if (a == b) return 0;
    tdx_str x = sid(vg, a), y = sid(vg, b);
    size_t n = x.n < y.n ? x.n : y.n;
    int c = n ? memcmp(x.p, y.p, n) : 0;
    if (c) return c;
    return x.n < y.n ? -1 : x.n > y.n;
}

static bool str_contains(tdx_str s, const char *lit) {
    size_t n = strlen(lit);
    if (s.n < n) return false;
    for (size_t i = 0; i + n <= s.n; i++)
        if (memcmp(s.p + i, lit, n) == 0) return true;
    return false;
}

/* ---- emitter primitives ---- */

static inline bool within(const tdx_viewgen *vg, int64_t t) {
    return vg->wstart <= t && t <= vg->wend;
}
static inline bool pass(const tdx_viewgen *vg, uint64_t lane) {
    return !vg->has_filter || tdx_hmap_get(&vg->filter, lane) != TDX_HMAP_EMPTY;
}
static inline int64_t elapsed(const tdx_viewgen *vg, int64_t t) {
    return tdx_wsub(t, vg->t0);
}

/* Go's Emitter.Stack: the frame id of a stored stack (creating frames). */
static uint32_t stk(tdx_viewgen *vg, uint32_t key) {
    return key ? vg->fr.stack(vg->fr.self, key) : 0;
}

static void out(tdx_viewgen *vg, const tdx_vev *ev) {
    if (!ev->required) vg->nopt++;
    if (!vg->err && vg->sink(vg->sink_ctx, ev)) vg->err = 1;
}

/* The window rule of slices and async slices. */
static inline bool keep_span(const tdx_viewgen *vg, int64_t ts, int64_t dur) {
    int64_t end = tdx_wadd(ts, dur);
    if (vg->overlap) return ts <= vg->wend && end >= vg->wstart;
    return within(vg, ts) || within(vg, end);
}

/* The window rule of arrows. */
static inline bool keep_arrow(const tdx_viewgen *vg, int64_t from, int64_t to) {
    if (vg->overlap) {
        int64_t lo = from < to ? from : to, hi = from < to ? to : from;
        return lo <= vg->wend && hi >= vg->wstart;
    }
    return within(vg, from) && within(vg, to);
}

static void slice_any(tdx_viewgen *vg, tdx_str name, int64_t ts, int64_t dur, uint64_t lane,
                      uint32_t sf, uint32_t esf, const tdx_vargs *a, uint64_t pid,
                      const char *cname) {
    if (!keep_span(vg, ts, dur)) return;
    tdx_vev ev;
    memset(&ev, 0, sizeof ev);
    ev.name = name;
    ev.ph = 'X';
    ev.ts = ts;
    ev.dur = dur;
    ev.pid = pid;
    ev.tid = lane;
    ev.sf = sf;
    ev.esf = esf;
    if (a) ev.args = *a;
    ev.cname = cname;
    out(vg, &ev);
}

static void slice(tdx_viewgen *vg, tdx_str name, int64_t ts, int64_t dur, uint64_t lane,
                  uint32_t sf, uint32_t esf, const tdx_vargs *a) {
    if (!pass(vg, lane)) return;
    slice_any(vg, name, ts, dur, lane, sf, esf, a, 0, NULL);
}

static void instant(tdx_viewgen *vg, tdx_str name, int64_t ts, uint64_t lane, uint32_t sf,
                    const tdx_vargs *a, const char *cat) {
    if (!within(vg, ts) || !pass(vg, lane)) return;
    tdx_vev ev;
    memset(&ev, 0, sizeof ev);
    ev.name = name;
    ev.ph = 'I';
    ev.scope = cstr("t");
    ev.ts = ts;
    ev.tid = lane;
    ev.sf = sf;
    if (a) ev.args = *a;
    ev.cat = cat;
    out(vg, &ev);
}

static void arrow(tdx_viewgen *vg, tdx_str name, int64_t from, int64_t to, uint64_t lfrom,
                  uint64_t lto, uint32_t sf, uint64_t pid) {
    if (pid == 0 && (!pass(vg, lfrom) || !pass(vg, lto))) return;
    if (!keep_arrow(vg, from, to)) return;
    vg->arrow_seq++;
    tdx_vev ev;
    memset(&ev, 0, sizeof ev);
    ev.name = name;
    ev.ph = 's';
    ev.ts = from;
    ev.pid = pid;
    ev.tid = lfrom;
    ev.id = vg->arrow_seq;
    ev.sf = sf;
    out(vg, &ev);
    ev.ph = 't';
    ev.ts = to;
    ev.tid = lto;
    ev.sf = 0;
    out(vg, &ev);
}

/* Counters are the most frequent output (a Heap one per heap metric, most of a trace's events), so
 * they are built in the generator's template: only the fields a counter sets change, and nothing
 * is cleared per event. */
static void counter(tdx_viewgen *vg, tdx_str name, int64_t ts, int kind, uint64_t a, uint64_t b,
                    uint64_t c) {
    tdx_vev *ev = &vg->cev;
    ev->name = name;
    ev->ts = ts;
    ev->args.kind = (uint8_t)kind;
    ev->args.u[0] = a;
    ev->args.u[1] = b;
    ev->args.u[2] = c;
    out(vg, ev);
}

static void go_counter(tdx_viewgen *vg, int64_t ts, int from, int to) {
    vg->gst[from]--;
    vg->gst[to]++;
    if (memcmp(vg->gst, vg->gst_prev, sizeof vg->gst) == 0) return;
    if (within(vg, ts))
        counter(vg, lit("Goroutines"), ts, TDX_VARG_GOROUTINES, (uint64_t)vg->gst[VS_RUNNING],
                (uint64_t)vg->gst[VS_RUNNABLE], (uint64_t)vg->gst[VS_WAITING_GC]);
    memcpy(vg->gst_prev, vg->gst, sizeof vg->gst);
}

static void thread_counter(tdx_viewgen *vg, int64_t ts, int64_t delta) {
    vg->th[2] += delta;
    if (memcmp(vg->th, vg->th_prev, sizeof vg->th) == 0) return;
    if (within(vg, ts))
        counter(vg, lit("Threads"), ts, TDX_VARG_THREADS, (uint64_t)vg->th[2], (uint64_t)vg->th[0],
                0);
    memcpy(vg->th_prev, vg->th, sizeof vg->th);
}

/* alloc and goal come in registers: reading the fields right after storing them stalled on
 * store forwarding (the compiler loads the pair as one 16-byte word). */
static void heap_counter(tdx_viewgen *vg, int64_t ts, uint64_t alloc, uint64_t goal) {
    vg->heap_alloc = alloc;
    vg->heap_goal = goal;
    if (alloc == vg->prev_alloc && goal == vg->prev_goal) return;
    uint64_t diff = goal > alloc ? goal - alloc : 0;
    if (within(vg, ts)) counter(vg, lit("Heap"), ts, TDX_VARG_HEAP, alloc, diff, 0);
    vg->prev_alloc = alloc;
    vg->prev_goal = goal;
}

/* ---- names ---- */

static void put_num(tdx_buf *b, int64_t v, tdx_viewgen *vg) {
    char num[24];
    if (tdx_buf_append(b, num, tdx_json_i64(num, v))) vg->err = 1;
}

static void put_str(tdx_buf *b, tdx_str s, tdx_viewgen *vg) {
    if (tdx_buf_append(b, s.p, s.n)) vg->err = 1;
}

/* gState.name(): "G<id>[ <entry function>][ (<label>)]" */
static tdx_str gname(tdx_viewgen *vg, const vg_g *g) {
    tdx_buf *b = &vg->nbuf;
    b->n = 0;
    put_str(b, cstr("G"), vg);
    put_num(b, g->id, vg);
    if (g->named) {
        put_str(b, cstr(" "), vg);
        put_str(b, sid(vg, g->func), vg);
    }
    if (g->label) {
        put_str(b, cstr(" ("), vg);
        put_str(b, sid(vg, g->label), vg);
        put_str(b, cstr(")"), vg);
    }
    return (tdx_str){b->v, (uint32_t)b->n};
}

/* The start cause's name ("go", "exit blocked syscall", "unblock[ (<reason>)]"). */
static tdx_str cause_name(tdx_viewgen *vg, int kind, uint32_t reason) {
    switch (kind) {
    case CAUSE_GO:
        return cstr("go");
    case CAUSE_SYSCALL:
        return cstr("exit blocked syscall");
    default:
        break;
    }
    if (!reason) return cstr("unblock");
    tdx_buf *b = &vg->tbuf;
    b->n = 0;
    put_str(b, cstr("unblock ("), vg);
    put_str(b, sid(vg, reason), vg);
    put_str(b, cstr(")"), vg);
    return (tdx_str){b->v, (uint32_t)b->n};
}

/* ---- goroutine state ---- */

static vg_g *g_find(tdx_viewgen *vg, int64_t id) {
    uint32_t i = tdx_hmap_get(&vg->g_idx, (uint64_t)id);
    return i == TDX_HMAP_EMPTY ? NULL : &vg->gs.v[i];
}

static vg_g *g_get(tdx_viewgen *vg, int64_t id) {
    vg_g *g = g_find(vg, id);
    if (g) return g;
    vg_g ng;
    memset(&ng, 0, sizeof ng);
    ng.id = id;
    ng.lane = NONE;
    ng.cause_lane = 0;
    /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): gs.v is set while gs.cap > 0 */
    if (vg->gs.n >= UINT32_MAX - 1 || tdx_vec_push(&vg->gs, ng) ||
        tdx_hmap_put(&vg->g_idx, (uint64_t)id, (uint32_t)(vg->gs.n - 1))) {
        vg->err = 1;
        return NULL;
    }
    return &vg->gs.v[vg->gs.n - 1];
}

/* Index of range `name` in g's active ranges (or where it would go, with *found false). */
static size_t ar_find(tdx_viewgen *vg, const vg_g *g, uint32_t name, bool *found) {
    size_t i = 0, n = g->r ? g->r->active.n : 0;
    for (; i < n; i++) {
        int c = str_cmp(vg, g->r->active.v[i].name, name);
        if (c == 0) {
            *found = true;
            return i;
        }
        if (c > 0) break;
    }
    *found = false;
    return i;
}

static void ar_set(tdx_viewgen *vg, vg_g *g, uint32_t name, int64_t time, uint32_t stack) {
    bool found;
    size_t i = ar_find(vg, g, name, &found);
    vg_ranges *r = g_ranges(&vg->err, g);
    if (!r) return;
    if (!found) {
        if (tdx_vec_reserve(&r->active, r->active.n + 1)) {
            vg->err = 1;
            return;
        }
        memmove(r->active.v + i + 1, r->active.v + i, (r->active.n - i) * sizeof *r->active.v);
        r->active.n++;
    }
    r->active.v[i] = (arange){name, stack, time};
}

static void cr_add(tdx_viewgen *vg, vg_g *g, uint32_t name, int64_t start, int64_t end,
                   uint32_t sstack, uint32_t estack, uint8_t arg) {
    crange c = {name, sstack, estack, arg, start, end};
    vg_ranges *r = g_ranges(&vg->err, g);
    if (r && tdx_vec_push(&r->done, c)) vg->err = 1;
}

static void augment_name(tdx_viewgen *vg, vg_g *g, const tdx_event *e, const tdx_gen *gen) {
    /* Go names the goroutine from the first transition stack that is not NoStack, even one
     * without frames (a handle with id 0, e.g. GoCreate's start stack): the name is then "". */
    if (g->named || !(e->has_tstack || e->tstack)) return;
    uint32_t func = 0;
    if (gen && e->tstack && e->tstack < gen->stacks.n) {
        const tdx_stack *st = &gen->stacks.v[e->tstack];
        if (st->nframes) {
            const tdx_frame *f = &gen->frames.v[gen->stack_frames.v[st->first + st->nframes - 1]];
            func = tdx_vgstore_gen_string(vg->store, &vg->cache, gen, f->func);
        }
    }
    g->func = func;
    g->named = 1;
}

static void g_created(vg_g *g, int64_t t, uint64_t creator, uint32_t stack) {
    if (creator == NONE) return;
    g->cause = CAUSE_GO;
    g->cause_reason = 0;
    g->cause_time = t;
    g->cause_lane = creator;
    g->cause_stack = stack;
}

static void g_start(tdx_viewgen *vg, vg_g *g, int64_t t, uint64_t lane) {
    for (size_t i = 0; g->r && i < g->r->active.n; i++) {
        g->r->active.v[i].time = t;
        g->r->active.v[i].stack = 0;
    }
    if (g->cause) {
        uint32_t sf = stk(vg, g->cause_stack);
        arrow(vg, cause_name(vg, g->cause, g->cause_reason), elapsed(vg, g->cause_time),
              elapsed(vg, t), g->cause_lane, lane, sf, 0);
        g->cause = CAUSE_NONE;
        g->cause_reason = 0;
        g->cause_time = 0;
        g->cause_lane = 0;
        g->cause_stack = 0;
    }
    g->lane = lane;
    g->run_start = t;
}

static void g_syscall_begin(vg_g *g, int64_t t, uint64_t lane, uint32_t stack) {
    g->sys_time = t;
    g->sys_stack = stack;
    g->sys_active = 1;
    if (g->lane == NONE) {
        g->lane = lane;
        g->run_start = t;
    }
}

static void g_syscall_end(tdx_viewgen *vg, vg_g *g, int64_t t, bool blocked) {
    if (!g->sys_active) return;
    cr_add(vg, g, vg->s_syscall, g->sys_time, t, g->sys_stack, 0,
           blocked ? ARG_BLOCKED_YES : ARG_BLOCKED_NO);
    g->sys_active = 0;
    g->sys_time = 0;
    g->sys_stack = 0;
}

static void g_blocked_syscall_end(tdx_viewgen *vg, vg_g *g, int64_t t, uint32_t stack) {
    g->cause = CAUSE_SYSCALL;
    g->cause_reason = 0;
    g->cause_time = t;
    g->cause_lane = TDX_LANE_SYSCALL;
    g->cause_stack = stack;
    instant(vg, cstr("exit blocked syscall"), elapsed(vg, t), TDX_LANE_SYSCALL, stk(vg, stack),
            NULL, NULL);
}

static void g_unblock(tdx_viewgen *vg, vg_g *g, int64_t t, uint32_t stack, uint64_t lane) {
    uint64_t vlane = lane;
    uint32_t reason = g->block_reason;
    if (reason && str_contains(sid(vg, reason), "network")) {
        if (vg->view != TDX_VIEW_THREAD) vlane = TDX_LANE_NETPOLL;
        uint32_t sf = stk(vg, stack);
        instant(vg, cause_name(vg, CAUSE_UNBLOCK, reason), elapsed(vg, t), vlane, sf, NULL, NULL);
    }
    g->block_reason = 0;
    if (vlane != 0) {
        g->cause = CAUSE_UNBLOCK;
        g->cause_reason = reason;
        g->cause_time = t;
        g->cause_lane = vlane;
        g->cause_stack = stack;
    }
}

static void g_stop(tdx_viewgen *vg, vg_g *g, int64_t t, uint32_t stack) {
    uint32_t sf = stk(vg, g->last_stop);
    uint32_t esf = stk(vg, stack);
    /* Go panics when the goroutine is not executing (no lane) or has no start time. Without a
     * lane nothing can be drawn: the execution slice and the range pieces are skipped, but the
     * state is reset as a stop would. A missing start time is drawn as it stands. */
    bool drawable = g->lane != NONE;
    if (!drawable || g->run_start == 0) vg->broken++;
    /* The name (its strings unpacked on first use) only for a slice the window keeps. */
    int64_t ts = elapsed(vg, g->run_start), dur = tdx_wsub(t, g->run_start);
    if (drawable && pass(vg, g->lane) && keep_span(vg, ts, dur))
        slice(vg, gname(vg, g), ts, dur, g->lane, sf, esf, NULL);
    vg_ranges *gr = g->r;
    for (size_t i = 0; gr && i < gr->done.n; i++) {
        const crange *c = &gr->done.v[i];
        uint32_t s1 = stk(vg, c->sstack), s2 = stk(vg, c->estack);
        if (!drawable) continue;
        tdx_vargs a;
        memset(&a, 0, sizeof a);
        if (c->arg) {
            a.kind = TDX_VARG_BLOCKED;
            a.u[0] = c->arg == ARG_BLOCKED_YES;
        }
        slice(vg, sid(vg, c->name), elapsed(vg, c->start), tdx_wsub(c->end, c->start), g->lane, s1,
              s2, c->arg ? &a : NULL);
    }
    if (gr) gr->done.n = 0;
    for (size_t i = 0; gr && i < gr->active.n; i++) {
        arange *r = &gr->active.v[i];
        /* Go panics on a range that has not started (time 0); such a range is skipped. */
        if (r->time == 0 && drawable) vg->broken++;
        if (r->time == 0 || !drawable) continue;
        uint32_t s1 = stk(vg, r->stack);
        slice(vg, sid(vg, r->name), elapsed(vg, r->time), tdx_wsub(t, r->time), g->lane, s1, 0,
              NULL);
    }
    for (size_t i = 0; gr && i < gr->active.n; i++) {
        gr->active.v[i].time = 0;
        gr->active.v[i].stack = 0;
    }
    g->run_start = 0;
    g->last_stop = stack;
    g->lane = NONE;
}

static void g_block(tdx_viewgen *vg, vg_g *g, int64_t t, uint32_t stack, uint32_t reason) {
    g->block_reason = reason;
    g_stop(vg, g, t, stack);
}

static void g_finish(tdx_viewgen *vg, vg_g *g, int64_t tend) {
    if (g->lane == NONE) return;
    g_syscall_end(vg, g, tend, false);
    g_stop(vg, g, tend, 0);
}

static bool in_mark_assist(tdx_viewgen *vg, const vg_g *g) {
    bool found;
    ar_find(vg, g, vg->s_mark_assist, &found);
    return found;
}

static int viewer_state(int s, bool assist) {
    switch (s) {
    case TDX_GO_RUNNABLE:
        return VS_RUNNABLE;
    case TDX_GO_RUNNING:
    case TDX_GO_SYSCALL:
        return VS_RUNNING;
    case TDX_GO_WAITING:
        return assist ? VS_WAITING_GC : VS_WAITING;
    default:
        return VS_DEAD;
    }
}

static bool executing(int s) {
    return s == TDX_GO_RUNNING || s == TDX_GO_SYSCALL;
}

/* ---- per-event handlers ---- */

static uint32_t ekey(tdx_viewgen *vg, const tdx_gen *g, uint32_t stack) {
    return tdx_vgstore_gen_stack(vg->store, &vg->cache, g, stack);
}

static void thread_add(tdx_viewgen *vg, int64_t m) {
    if (m == TDX_NO_ID) return;
    int ins;
    uint32_t *slot = tdx_hmap_upsert(&vg->thread_set, (uint64_t)m, 1, &ins);
    if (!slot || (ins && tdx_vec_push(&vg->threads, m))) vg->err = 1;
}

static void go_transition(tdx_viewgen *vg, const tdx_event *e, const tdx_gen *gen) {
    if (vg->view == TDX_VIEW_THREAD) thread_add(vg, e->m);
    vg_g *g = g_get(vg, e->res);
    if (!g) return;
    augment_name(vg, g, e, gen);
    int from = e->from, to = e->to;
    if (from == to) return;
    int64_t t = e->time;
    uint32_t st = ekey(vg, gen, e->stack);
    uint32_t reason = 0;
    if (to == TDX_GO_WAITING && (e->type == TDX_EV_GO_BLOCK || e->type == TDX_EV_GO_STOP))
        reason = tdx_vgstore_gen_string(vg->store, &vg->cache, gen, e->str[0]);
    int64_t tstart = from == TDX_GO_UNDETERMINED ? vg->t0 : t;
    switch (vg->view) {
    case TDX_VIEW_PROC: {
        uint64_t p = (uint64_t)e->p;
        if (from == TDX_GO_RUNNING && !executing(to)) {
            if (to == TDX_GO_WAITING)
                g_block(vg, g, t, st, reason);
            else
                g_stop(vg, g, t, st);
        }
        if (!executing(from) && to == TDX_GO_RUNNING) g_start(vg, g, tstart, p);
        if (from == TDX_GO_WAITING) g_unblock(vg, g, t, st, p);
        if (from == TDX_GO_NOTEXIST && to == TDX_GO_RUNNABLE) g_created(g, t, p, st);
        if (from == TDX_GO_SYSCALL && to != TDX_GO_RUNNING) g_blocked_syscall_end(vg, g, t, st);
        if (to == TDX_GO_SYSCALL && e->p != TDX_NO_ID) {
            g_syscall_begin(g, tstart, p, st);
            if (tdx_hmap_put(&vg->insys, p, (uint32_t)(g - vg->gs.v))) vg->err = 1;
        }
        if (from == TDX_GO_SYSCALL && tdx_hmap_get(&vg->insys, p) != TDX_HMAP_EMPTY) {
            g_syscall_end(vg, g, t, false);
            tdx_hmap_del(&vg->insys, p);
        }
        break;
    }
    case TDX_VIEW_THREAD: {
        uint64_t m = (uint64_t)e->m;
        if (executing(from) && !executing(to)) {
            if (to == TDX_GO_WAITING)
                g_block(vg, g, t, st, reason);
            else
                g_stop(vg, g, t, st);
        }
        if (!executing(from) && executing(to)) g_start(vg, g, tstart, m);
        if (from == TDX_GO_WAITING) g_unblock(vg, g, t, st, m);
        if (from == TDX_GO_NOTEXIST && to == TDX_GO_RUNNABLE) g_created(g, t, m, st);
        if (from == TDX_GO_SYSCALL) g_syscall_end(vg, g, t, to != TDX_GO_RUNNING);
        if (to == TDX_GO_SYSCALL) g_syscall_begin(g, tstart, m, st);
        break;
    }
    default: {
        uint64_t self = (uint64_t)e->res, cur = (uint64_t)e->g;
        if (executing(from) && !executing(to)) {
            if (to == TDX_GO_WAITING)
                g_block(vg, g, t, st, reason);
            else
                g_stop(vg, g, t, st);
        }
        if (!executing(from) && executing(to)) g_start(vg, g, tstart, self);
        if (from == TDX_GO_WAITING) g_unblock(vg, g, t, st, cur);
        if (from == TDX_GO_NOTEXIST && to == TDX_GO_RUNNABLE) g_created(g, t, cur, st);
        if (from == TDX_GO_SYSCALL && to != TDX_GO_RUNNING) {
            g_syscall_end(vg, g, t, true);
            g_blocked_syscall_end(vg, g, t, st);
        } else if (from == TDX_GO_SYSCALL) {
            g_syscall_end(vg, g, t, false);
        }
        if (to == TDX_GO_SYSCALL) g_syscall_begin(g, tstart, self, st);
        break;
    }
    }
    bool assist = in_mark_assist(vg, g);
    go_counter(vg, elapsed(vg, t), viewer_state(from, assist), viewer_state(to, assist));
    /* An ended goroutine keeps its record (Go's generator keeps its state, which an id that comes
     * back reuses) but not its emptied range lists: a replay of the whole trace holds a record
     * for every goroutine the trace ever had. */
    if (to == TDX_GO_NOTEXIST && g->r && !g->r->active.n && !g->r->done.n) g_free_ranges(g);
}

static void proc_transition(tdx_viewgen *vg, const tdx_event *e, const tdx_gen *gen) {
    if (vg->view == TDX_VIEW_GOROUTINE) return;
    int64_t p = e->res;
    if (vg->view == TDX_VIEW_PROC) {
        if (p > vg->max_proc) vg->max_proc = p;
    } else {
        thread_add(vg, e->m);
    }
    uint32_t st = ekey(vg, gen, e->stack);
    uint32_t sf = stk(vg, st);
    int from = e->from, to = e->to;
    if (from == to) return;
    const char *name = NULL;
    int64_t ts = e->time;
    if (to == TDX_PROC_RUNNING) {
        if (from == TDX_PROC_UNDETERMINED) ts = vg->t0;
        name = "proc start";
        thread_counter(vg, elapsed(vg, ts), 1);
    }
    if (from == TDX_PROC_RUNNING) {
        ts = e->time;
        name = "proc stop";
        thread_counter(vg, elapsed(vg, ts), -1);
        if (vg->view == TDX_VIEW_PROC) {
            uint32_t gi = tdx_hmap_get(&vg->insys, (uint64_t)p);
            if (gi != TDX_HMAP_EMPTY) {
                vg_g *g = &vg->gs.v[gi];
                g_syscall_end(vg, g, ts, true);
                g_stop(vg, g, ts, st);
                tdx_hmap_del(&vg->insys, (uint64_t)p);
            }
        }
    }
    if (!name) return;
    tdx_vargs a;
    memset(&a, 0, sizeof a);
    a.kind = TDX_VARG_SCHED;
    a.u[0] = (uint64_t)e->m;
    a.u[1] = (uint64_t)p;
    uint64_t lane = vg->view == TDX_VIEW_PROC ? (uint64_t)p : (uint64_t)e->m;
    instant(vg, cstr(name), elapsed(vg, ts), lane, sf, &a, NULL);
}

static uint64_t event_lane(const tdx_viewgen *vg, const tdx_event *e, bool *ok) {
    int64_t id = vg->view == TDX_VIEW_PROC ? e->p : vg->view == TDX_VIEW_THREAD ? e->m : e->g;
    *ok = id != TDX_NO_ID;
    return (uint64_t)id;
}

static void stack_sample(tdx_viewgen *vg, const tdx_event *e, const tdx_gen *gen) {
    bool ok;
    uint64_t lane = event_lane(vg, e, &ok);
    if (!ok) return;
    uint32_t sf = stk(vg, ekey(vg, gen, e->stack));
    instant(vg, cstr("CPU profile sample"), elapsed(vg, e->time), lane, sf, NULL, NULL);
}

static void log_event(tdx_viewgen *vg, const tdx_event *e, const tdx_gen *gen) {
    bool ok;
    uint64_t lane = event_lane(vg, e, &ok);
    if (!ok) return;
    int64_t ts = elapsed(vg, e->time);
    uint32_t sf = stk(vg, ekey(vg, gen, e->stack)); /* first: it may give the stack its ids */
    if (!within(vg, ts) || !pass(vg, lane)) return; /* what instant() would drop */
    /* A log's text is the one string a replay would otherwise unpack for nothing (reader.c
     * unpacks strings on first use): skip it for an instant the sink is about to drop. */
    bool dropped = vg->quiet_index && *vg->quiet_index < vg->quiet_below;
    tdx_str cat = {(const uint8_t *)"", 0}, msg = cat;
    if (!dropped && gen && e->str[0] < gen->strings.n) cat = tdx_gen_str(gen, e->str[0]);
    if (!dropped && gen && e->str[1] < gen->strings.n) msg = tdx_gen_str(gen, e->str[1]);
    tdx_str name = msg;
    if (cat.n) {
        tdx_buf *b = &vg->tbuf;
        b->n = 0;
        put_str(b, cstr("["), vg);
        put_str(b, cat, vg);
        put_str(b, cstr("] "), vg);
        put_str(b, msg, vg);
        name = (tdx_str){b->v, (uint32_t)b->n};
    }
    instant(vg, name, ts, lane, sf, NULL, "user event");
}

static void metric(tdx_viewgen *vg, const tdx_event *e) {
    uint64_t v = e->args[0];
    switch (e->type) {
    case TDX_EV_HEAP_ALLOC:
        heap_counter(vg, elapsed(vg, e->time), v, vg->heap_goal);
        break;
    case TDX_EV_HEAP_GOAL:
        if (v > (1ULL << 50)) v = 0; /* Go's workaround for golang.org/issue/63864 */
        heap_counter(vg, elapsed(vg, e->time), vg->heap_alloc, v);
        break;
    case TDX_EV_PROCS_CHANGE:
        if (v > vg->gomaxprocs) vg->gomaxprocs = v;
        break;
    default:
        break;
    }
}

/* ---- ranges ---- */

static size_t gr_find(tdx_viewgen *vg, uint32_t name, bool *found) {
    size_t i = 0;
    for (; i < vg->granges.n; i++) {
        int c = str_cmp(vg, vg->granges.v[i].name, name);
        if (c == 0) {
            *found = true;
            return i;
        }
        if (c > 0) break;
    }
    *found = false;
    return i;
}

static void gr_set(tdx_viewgen *vg, uint32_t name, int64_t time, uint32_t stack) {
    bool found;
    size_t i = gr_find(vg, name, &found);
    if (!found) {
        if (tdx_vec_reserve(&vg->granges, vg->granges.n + 1)) {
            vg->err = 1;
            return;
        }
        memmove(vg->granges.v + i + 1, vg->granges.v + i,
                (vg->granges.n - i) * sizeof *vg->granges.v);
        vg->granges.n++;
    }
    vg->granges.v[i] = (grange){name, stack, time};
}

static size_t pr_find(tdx_viewgen *vg, uint32_t name, int64_t proc, bool *found) {
    size_t i = 0;
    for (; i < vg->pranges.n; i++) {
        const prange *r = &vg->pranges.v[i];
        int c = str_cmp(vg, r->name, name);
        if (c == 0) c = r->proc < proc ? -1 : r->proc > proc;
        if (c == 0) {
            *found = true;
            return i;
        }
        if (c > 0) break;
    }
    *found = false;
    return i;
}

static void pr_set(tdx_viewgen *vg, uint32_t name, int64_t proc, int64_t time, uint32_t stack) {
    bool found;
    size_t i = pr_find(vg, name, proc, &found);
    if (!found) {
        if (tdx_vec_reserve(&vg->pranges, vg->pranges.n + 1)) {
            vg->err = 1;
            return;
        }
        memmove(vg->pranges.v + i + 1, vg->pranges.v + i,
                (vg->pranges.n - i) * sizeof *vg->pranges.v);
        vg->pranges.n++;
    }
    vg->pranges.v[i] = (prange){name, stack, proc, time};
}

static void range_event(tdx_viewgen *vg, const tdx_event *e, const tdx_gen *gen) {
    enum { SC_NONE, SC_PROC, SC_G } scope;
    int64_t id = 0;
    uint32_t name;
    switch (e->type) {
    case TDX_EV_GC_BEGIN:
    case TDX_EV_GC_ACTIVE:
    case TDX_EV_GC_END:
        scope = SC_NONE;
        name = vg->s_gc_mark;
        break;
    case TDX_EV_GC_SWEEP_BEGIN:
    case TDX_EV_GC_SWEEP_ACTIVE:
    case TDX_EV_GC_SWEEP_END:
        scope = SC_PROC;
        id = e->type == TDX_EV_GC_SWEEP_ACTIVE ? (int64_t)e->args[0] : e->p;
        name = vg->s_sweep;
        break;
    case TDX_EV_GC_MARK_ASSIST_BEGIN:
    case TDX_EV_GC_MARK_ASSIST_ACTIVE:
    case TDX_EV_GC_MARK_ASSIST_END:
        scope = SC_G;
        id = e->type == TDX_EV_GC_MARK_ASSIST_ACTIVE ? (int64_t)e->args[0] : e->g;
        name = vg->s_mark_assist;
        break;
    default: { /* stop-the-world (<reason>) */
        char buf[1200];
        int n = tdx_range_name(e, gen, buf, sizeof buf);
        if (n < 0) n = 0;
        if ((size_t)n >= sizeof buf) n = (int)sizeof buf - 1;
        scope = SC_G;
        id = e->g;
        name = tdx_vgstore_intern(vg->store, buf, (size_t)n);
        break;
    }
    }
    int64_t t = e->time;
    if (scope == SC_G) {
        vg_g *g = g_find(vg, id);
        if (!g) return; /* Go dereferences a nil gState here; there is nothing to draw on */
        uint32_t st = ekey(vg, gen, e->stack);
        switch (e->kind) {
        case TDX_KIND_RANGE_BEGIN:
            ar_set(vg, g, name, g->lane != NONE ? t : 0, st);
            break;
        case TDX_KIND_RANGE_ACTIVE:
            ar_set(vg, g, name, g->lane != NONE ? g->run_start : 0, 0);
            break;
        default: {
            bool found;
            size_t i = ar_find(vg, g, name, &found);
            if (g->lane != NONE) {
                arange r = found ? g->r->active.v[i] : (arange){name, 0, 0};
                cr_add(vg, g, name, r.time, t, r.stack, st, ARG_NONE);
            }
            if (found) { /* found: g->r holds it */
                vg_ranges *gr = g->r;
                memmove(gr->active.v + i, gr->active.v + i + 1,
                        (gr->active.n - i - 1) * sizeof *gr->active.v);
                gr->active.n--;
            }
            break;
        }
        }
        return;
    }
    if (scope == SC_PROC && vg->view != TDX_VIEW_PROC) return;
    uint32_t st = ekey(vg, gen, e->stack);
    if (scope == SC_NONE) {
        switch (e->kind) {
        case TDX_KIND_RANGE_BEGIN:
            gr_set(vg, name, t, st);
            break;
        case TDX_KIND_RANGE_ACTIVE:
            if (vg->nsync < 2) gr_set(vg, name, vg->t0, st);
            break;
        default: {
            bool found;
            size_t i = gr_find(vg, name, &found);
            grange r = found ? vg->granges.v[i] : (grange){name, 0, 0};
            if (str_contains(sid(vg, name), "GC")) {
                uint32_t s1 = stk(vg, r.stack), s2 = stk(vg, st);
                slice(vg, sid(vg, name), elapsed(vg, r.time), tdx_wsub(t, r.time), TDX_LANE_GC, s1,
                      s2, NULL);
            }
            if (found) {
                memmove(vg->granges.v + i, vg->granges.v + i + 1,
                        (vg->granges.n - i - 1) * sizeof *vg->granges.v);
                vg->granges.n--;
            }
            break;
        }
        }
        return;
    }
    switch (e->kind) {
    case TDX_KIND_RANGE_BEGIN:
        pr_set(vg, name, id, t, st);
        break;
    case TDX_KIND_RANGE_ACTIVE:
        if (vg->nsync < 2) pr_set(vg, name, id, vg->t0, st);
        break;
    default: {
        bool found;
        size_t i = pr_find(vg, name, id, &found);
        prange r = found ? vg->pranges.v[i] : (prange){name, 0, id, 0};
        uint32_t s1 = stk(vg, r.stack), s2 = stk(vg, st);
        slice(vg, sid(vg, name), elapsed(vg, r.time), tdx_wsub(t, r.time), (uint64_t)id, s1, s2,
              NULL);
        if (found) {
            memmove(vg->pranges.v + i, vg->pranges.v + i + 1,
                    (vg->pranges.n - i - 1) * sizeof *vg->pranges.v);
            vg->pranges.n--;
        }
        break;
    }
    }
}

int tdx_viewgen_event(tdx_viewgen *vg, const tdx_event *e, const tdx_gen *gen) {
    if (vg->err || vg->finished) return -1;
    if (e->kind == TDX_KIND_SYNC) tdx_vgcache_reset(&vg->cache);
    if (!vg->started) {
        vg->started = true;
        vg->t0 = e->time;
    }
    vg->tlast = e->time;
    switch (e->kind) {
    case TDX_KIND_SYNC:
        vg->nsync++;
        break;
    case TDX_KIND_STACK_SAMPLE:
        stack_sample(vg, e, gen);
        break;
    case TDX_KIND_RANGE_BEGIN:
    case TDX_KIND_RANGE_ACTIVE:
    case TDX_KIND_RANGE_END:
        range_event(vg, e, gen);
        break;
    case TDX_KIND_METRIC:
        metric(vg, e);
        break;
    case TDX_KIND_LABEL: {
        vg_g *g = g_find(vg, e->g);
        if (g) g->label = tdx_vgstore_gen_string(vg->store, &vg->cache, gen, e->str[0]);
        break; /* Go dereferences a nil gState for an unknown goroutine; ignored here */
    }
    case TDX_KIND_STATE_TRANSITION:
        if (e->res_kind == TDX_RES_GOROUTINE)
            go_transition(vg, e, gen);
        else if (e->res_kind == TDX_RES_PROC)
            proc_transition(vg, e, gen);
        break;
    case TDX_KIND_LOG:
        log_event(vg, e, gen);
        break;
    default:
        break;
    }
    if (vg->store->oom) vg->err = 1;
    return vg->err ? -1 : 0;
}

/* ---- tasks and regions (after the main loop) ---- */

static void emit_task(tdx_viewgen *vg, uint32_t ti, int64_t sort, int64_t tend) {
    const tdx_sumtask *t = &vg->sum->tasks.v[ti];
    int64_t st = t->start.present ? t->start.time : vg->t0;
    int64_t et = t->end.present ? t->end.time : tend;
    uint64_t sg = t->start.present ? (uint64_t)t->start.g : 0;
    uint64_t eg = t->end.present ? (uint64_t)t->end.g : 0;
    /* Task(id, "T<id> <name>", sortIndex) */
    named_lane nl = {t->id, sort, vg->names.n, 0};
    put_str(&vg->names, cstr("T"), vg);
    char num[24];
    put_str(&vg->names, (tdx_str){(const uint8_t *)num, (uint32_t)tdx_json_u64(num, t->id)}, vg);
    put_str(&vg->names, cstr(" "), vg);
    put_str(&vg->names, sid(vg, t->name), vg);
    nl.len = vg->names.n - nl.off;
    if (tdx_vec_push(&vg->tlanes, nl)) vg->err = 1;
    uint32_t sf = stk(vg, t->start.present ? t->start.stack : 0);
    uint32_t esf = stk(vg, t->end.present ? t->end.stack : 0);
    tdx_vargs a;
    memset(&a, 0, sizeof a);
    a.kind = TDX_VARG_TASK;
    a.u[0] = t->id;
    a.u[1] = sg;
    a.u[2] = eg;
    slice_any(vg, sid(vg, t->name), elapsed(vg, st), tdx_wsub(et, st), t->id, sf, esf, &a, 2,
              tdx_task_colors[t->id % TDX_NTASK_COLORS]);
    if (t->parent != TDX_SUM_NONE && t->start.present) {
        uint32_t psf = stk(vg, t->start.stack);
        arrow(vg, cstr("newTask"), elapsed(vg, t->start.time), elapsed(vg, t->start.time),
              vg->sum->tasks.v[t->parent].id, t->id, psf, 2);
    }
}

static void emit_region(tdx_viewgen *vg, uint32_t ri, int64_t tend) {
    const tdx_sumregion *r = &vg->sum->regions.v[ri];
    if (r->name == 0) return;
    int64_t st = r->start.present ? r->start.time : vg->t0;
    int64_t et = r->end.present ? r->end.time : tend;
    int64_t gid = TDX_NO_ID;
    if (r->start.present) gid = r->start.g;
    if (r->end.present) gid = r->end.g;
    if (gid == TDX_NO_ID) return;
    uint32_t sf = stk(vg, r->start.present ? r->start.stack : 0);
    uint32_t esf = stk(vg, r->end.present ? r->end.stack : 0);
    int64_t ts = elapsed(vg, st), dur = tdx_wsub(et, st);
    uint64_t lane = (uint64_t)gid;
    if (!keep_span(vg, ts, dur)) return;
    if (!pass(vg, lane)) return;
    char scope[20];
    int sn = snprintf(scope, sizeof scope, "%llx", (unsigned long long)r->task);
    const char *cname = r->task ? tdx_task_colors[r->task % TDX_NTASK_COLORS] : NULL;
    vg->async_seq++;
    tdx_vev ev;
    memset(&ev, 0, sizeof ev);
    ev.name = sid(vg, r->name);
    ev.ph = 'b';
    ev.scope = (tdx_str){(const uint8_t *)scope, (uint32_t)sn};
    ev.ts = ts;
    ev.tid = lane;
    ev.id = vg->async_seq;
    ev.sf = sf;
    ev.cname = cname;
    ev.cat = "Region";
    out(vg, &ev);
    ev.ph = 'e';
    ev.ts = tdx_wadd(ts, dur);
    ev.sf = esf;
    ev.args.kind = TDX_VARG_TASKID;
    ev.args.u[0] = r->task;
    out(vg, &ev);
}

/* ---- Finish and Flush ---- */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_lane(const void *a, const void *b) {
    uint64_t x = ((const named_lane *)a)->id, y = ((const named_lane *)b)->id;
    return x < y ? -1 : x > y;
}

typedef struct gorder {
    int64_t id;
    uint32_t idx;
} gorder;

static int cmp_gorder(const void *a, const void *b) {
    int64_t x = ((const gorder *)a)->id, y = ((const gorder *)b)->id;
    return x < y ? -1 : x > y;
}

/* Emitter.Resource: records a lane name for Flush (the filter applies). */
static void resource(tdx_viewgen *vg, uint64_t id, tdx_str name) {
    if (!pass(vg, id)) return;
    named_lane nl = {id, (int64_t)id, vg->names.n, name.n};
    put_str(&vg->names, name, vg);
    if (tdx_vec_push(&vg->lanes, nl)) vg->err = 1;
}

static void meta(tdx_viewgen *vg, const char *what, uint64_t pid, uint64_t tid, tdx_str name,
                 bool is_sort, int64_t sort) {
    tdx_vev ev;
    memset(&ev, 0, sizeof ev);
    ev.name = cstr(what);
    ev.ph = 'M';
    ev.required = true;
    ev.pid = pid;
    ev.tid = tid;
    if (is_sort) {
        ev.args.kind = TDX_VARG_SORT_INDEX;
        ev.args.u[0] = (uint64_t)sort;
    } else {
        ev.args.kind = TDX_VARG_NAME;
        ev.args.s = name;
    }
    out(vg, &ev);
}

static void thread_meta(tdx_viewgen *vg, uint64_t pid, uint64_t tid, tdx_str name, int64_t sort) {
    meta(vg, "thread_name", pid, tid, name, false, 0);
    meta(vg, "thread_sort_index", pid, tid, name, true, sort);
}

static void process_meta(tdx_viewgen *vg, uint64_t pid, const char *name, int64_t sort) {
    meta(vg, "process_name", pid, 0, cstr(name), false, 0);
    meta(vg, "process_sort_index", pid, 0, cstr(name), true, sort);
}

/* procGenerator.Finish's lane names: "Proc 0" .. "Proc <maxProc>". */
static void proc_lanes(tdx_viewgen *vg) {
    char nm[48];
    for (int64_t p = 0; p <= vg->max_proc; p++) {
        int n = snprintf(nm, sizeof nm, "Proc %lld", (long long)p);
        resource(vg, (uint64_t)p, (tdx_str){(const uint8_t *)nm, (uint32_t)n});
    }
}

/* Emitter.Flush: the metadata events, in the fixed order of the spec (2.8). */
static void flush_meta(tdx_viewgen *vg) {
    const char *rtype = vg->view == TDX_VIEW_PROC     ? "PROCS"
                        : vg->view == TDX_VIEW_THREAD ? "OS THREADS"
                                                      : "G";
    uint64_t focus =
        vg->view == TDX_VIEW_GOROUTINE && vg->focus != TDX_NO_ID ? (uint64_t)vg->focus : 0;
    process_meta(vg, 1, "STATS", 0);
    if (vg->tlanes.n) process_meta(vg, 2, "TASKS", 1);
    if (vg->tlanes.n) qsort(vg->tlanes.v, vg->tlanes.n, sizeof *vg->tlanes.v, cmp_lane);
    for (size_t i = 0; i < vg->tlanes.n; i++) {
        const named_lane *l = &vg->tlanes.v[i];
        if (i && l->id == vg->tlanes.v[i - 1].id) continue;
        thread_meta(vg, 2, l->id, (tdx_str){vg->names.v + l->off, (uint32_t)l->len}, l->sort);
    }
    process_meta(vg, 0, rtype, 2);
    thread_meta(vg, 0, TDX_LANE_GC, cstr("GC"), -6);
    thread_meta(vg, 0, TDX_LANE_NETPOLL, cstr("Network"), -5);
    thread_meta(vg, 0, TDX_LANE_TIMERS, cstr("Timers"), -4);
    thread_meta(vg, 0, TDX_LANE_SYSCALL, cstr("Syscalls"), -3);
    if (vg->lanes.n) qsort(vg->lanes.v, vg->lanes.n, sizeof *vg->lanes.v, cmp_lane);
    for (size_t i = 0; i < vg->lanes.n; i++) {
        const named_lane *l = &vg->lanes.v[i];
        if (i && l->id == vg->lanes.v[i - 1].id) continue;
        int64_t sort = focus != 0 && l->id == focus ? -2 : (int64_t)l->id;
        thread_meta(vg, 0, l->id, (tdx_str){vg->names.v + l->off, (uint32_t)l->len}, sort);
    }
}

int tdx_viewgen_finish(tdx_viewgen *vg) {
    if (vg->err || vg->finished || !vg->started) return -1;
    vg->finished = true;
    int64_t tend = vg->opt_tend ? vg->opt_tend : vg->tlast;
    /* Tasks and their regions. */
    for (size_t i = 0; i < vg->ntasks && vg->sum; i++) {
        emit_task(vg, vg->tasks[i], (int64_t)i, tend);
        if (vg->regions) {
            const tdx_sumtask *t = &vg->sum->tasks.v[vg->tasks[i]];
            for (size_t k = 0; k < t->regions.n; k++) emit_region(vg, t->regions.v[k], tend);
        }
    }
    /* Outstanding proc ranges (proc view), by (name, proc). */
    for (size_t i = 0; i < vg->pranges.n; i++) {
        const prange *r = &vg->pranges.v[i];
        uint32_t sf = stk(vg, r->stack);
        slice(vg, sid(vg, r->name), elapsed(vg, r->time), tdx_wsub(tend, r->time),
              (uint64_t)r->proc, sf, 0, NULL);
    }
    /* Outstanding global ranges, by name. */
    for (size_t i = 0; i < vg->granges.n; i++) {
        const grange *r = &vg->granges.v[i];
        if (!str_contains(sid(vg, r->name), "GC")) continue;
        uint32_t sf = stk(vg, r->stack);
        slice(vg, sid(vg, r->name), elapsed(vg, r->time), tdx_wsub(tend, r->time), TDX_LANE_GC, sf,
              0, NULL);
    }
    /* Goroutines, by ascending id. */
    gorder *ord = malloc((vg->gs.n ? vg->gs.n : 1) * sizeof *ord);
    if (!ord) return vg->err = 1, -1;
    for (size_t i = 0; i < vg->gs.n; i++) ord[i] = (gorder){vg->gs.v[i].id, (uint32_t)i};
    if (vg->gs.n) qsort(ord, vg->gs.n, sizeof *ord, cmp_gorder);
    for (size_t i = 0; i < vg->gs.n; i++) {
        vg_g *g = &vg->gs.v[ord[i].idx];
        g_finish(vg, g, tend);
        if (vg->view == TDX_VIEW_GOROUTINE) resource(vg, (uint64_t)g->id, gname(vg, g));
    }
    free(ord);
    char nm[48];
    if (vg->view == TDX_VIEW_PROC) {
        proc_lanes(vg);
    } else if (vg->view == TDX_VIEW_THREAD) {
        int64_t *ms = malloc((vg->threads.n ? vg->threads.n : 1) * sizeof *ms);
        if (!ms) return vg->err = 1, -1;
        if (vg->threads.n) {
            memcpy(ms, vg->threads.v, vg->threads.n * sizeof *ms);
            if (vg->threads.n > 1) qsort(ms, vg->threads.n, sizeof *ms, cmp_i64);
        }
        for (size_t i = 0; i < vg->threads.n; i++) {
            int n = snprintf(nm, sizeof nm, "Thread %lld", (long long)ms[i]);
            resource(vg, (uint64_t)ms[i], (tdx_str){(const uint8_t *)nm, (uint32_t)n});
        }
        free(ms);
    }
    flush_meta(vg);
    if (vg->store->oom) vg->err = 1;
    return vg->err ? -1 : 0;
}

typedef struct meta_count {
    uint64_t n, bytes;
    tdx_buf b;
} meta_count;

static int count_meta(void *ctx, const tdx_vev *ev) {
    meta_count *c = ctx;
    c->b.n = 0;
    if (tdx_json_event(&c->b, ev)) return -1;
    c->n++;
    c->bytes += c->b.n;
    return 0;
}

int tdx_viewgen_proc_meta_size(int64_t max_proc, uint64_t *n, uint64_t *bytes) {
    tdx_vgstore st;
    if (tdx_vgstore_init(&st)) return -1;
    tdx_vgtree tr;
    tdx_vgtree_init(&tr, &st);
    tdx_vgframes fr = tdx_vgtree_frames(&tr);
    meta_count c = {0, 0, {0}};
    tdx_viewgen_opts o;
    tdx_viewgen_opts_default(&o);
    tdx_viewgen *vg = tdx_viewgen_new(&o, &st, &fr, count_meta, &c);
    int rc = -1;
    if (vg) {
        vg->max_proc = max_proc;
        proc_lanes(vg);
        flush_meta(vg);
        rc = vg->err ? -1 : 0;
    }
    *n = c.n;
    *bytes = c.bytes;
    tdx_viewgen_free(vg);
    tdx_vec_free(&c.b);
    tdx_vgtree_free(&tr);
    tdx_vgstore_free(&st);
    return rc;
}

/* ---- construction ---- */

void tdx_viewgen_opts_default(tdx_viewgen_opts *o) {
    memset(o, 0, sizeof *o);
    o->view = TDX_VIEW_PROC;
    o->wstart = 0;
    o->wend = INT64_MAX;
    o->focus = TDX_NO_ID;
}

tdx_viewgen *tdx_viewgen_new(const tdx_viewgen_opts *o, tdx_vgstore *store,
                             const tdx_vgframes *frames, tdx_vev_fn sink, void *sink_ctx) {
    tdx_viewgen *vg = calloc(1, sizeof *vg);
    if (!vg) return NULL;
    vg->cev.ph = 'C';
    vg->cev.pid = 1;
    vg->cev.name_plain = true; /* "Heap", "Goroutines", "Threads" */
    vg->view = o->view;
    vg->wstart = o->wstart;
    vg->wend = o->wend;
    vg->has_filter = o->has_filter;
    vg->focus = o->focus;
    vg->sum = o->summary;
    vg->regions = o->regions;
    vg->opt_tend = o->tend;
    vg->overlap = o->overlap;
    vg->store = store;
    vg->fr = *frames;
    vg->sink = sink;
    vg->sink_ctx = sink_ctx;
    tdx_vgcache_init(&vg->cache);
    for (size_t i = 0; i < o->nfilter && o->has_filter; i++)
        if (tdx_hmap_put(&vg->filter, (uint64_t)o->filter[i], 1)) vg->err = 1;
    if (o->ntasks && o->summary) {
        vg->tasks = malloc(o->ntasks * sizeof *vg->tasks);
        if (!vg->tasks)
            vg->err = 1;
        else {
            memcpy(vg->tasks, o->tasks, o->ntasks * sizeof *vg->tasks);
            vg->ntasks = o->ntasks;
        }
    }
    vg->s_syscall = tdx_vgstore_intern(store, "syscall", 7);
    vg->s_mark_assist = tdx_vgstore_intern(store, "GC mark assist", 14);
    vg->s_gc_mark = tdx_vgstore_intern(store, "GC concurrent mark phase", 24);
    vg->s_sweep = tdx_vgstore_intern(store, "GC incremental sweep", 20);
    if (vg->err || store->oom) {
        tdx_viewgen_free(vg);
        return NULL;
    }
    return vg;
}

static void free_state(tdx_viewgen *vg) {
    for (size_t i = 0; i < vg->gs.n; i++) g_free_ranges(&vg->gs.v[i]);
    tdx_vec_free(&vg->gs);
    tdx_hmap_free(&vg->g_idx);
    tdx_hmap_free(&vg->insys);
    tdx_vec_free(&vg->granges);
    tdx_vec_free(&vg->pranges);
    tdx_vec_free(&vg->threads);
    tdx_hmap_free(&vg->thread_set);
}

void tdx_viewgen_free(tdx_viewgen *vg) {
    if (!vg) return;
    free_state(vg);
    tdx_hmap_free(&vg->filter);
    free(vg->tasks);
    tdx_vgcache_free(&vg->cache);
    tdx_vec_free(&vg->nbuf);
    tdx_vec_free(&vg->tbuf);
    tdx_vec_free(&vg->lanes);
    tdx_vec_free(&vg->tlanes);
    tdx_vec_free(&vg->names);
    free(vg);
}

tdx_viewgen_counters tdx_viewgen_counters_get(const tdx_viewgen *vg) {
    return (tdx_viewgen_counters){vg->nopt, vg->arrow_seq, vg->async_seq, vg->broken};
}

/* ---- query resolution (jsontrace.go's handler) ---- */

void tdx_viewgen_resolved_free(tdx_viewgen_resolved *r) {
    free(r->filter);
    free(r->tasks);
    r->filter = NULL;
    r->tasks = NULL;
}

static int set_task(const tdx_summary *s, uint32_t ti, int64_t t0, int64_t tend,
                    tdx_viewgen_resolved *r, tdx_err *err) {
    const tdx_sumtask *t = &s->tasks.v[ti];
    /* the index's times: wrapping differences (a crafted one must not overflow) */
    r->opts.wstart = t->start.present ? tdx_wsub(t->start.time, t0) : 0;
    r->opts.wend = tdx_wsub(t->end.present ? t->end.time : tend, t0);
    size_t n;
    if (tdx_summary_task_list(s, ti, t0, tend, &r->tasks, &n))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    r->opts.summary = s;
    r->opts.tasks = r->tasks;
    r->opts.ntasks = n;
    return 0;
}

int tdx_viewgen_resolve(const tdx_viewquery *q, const tdx_summary *s, int64_t t0, int64_t tend,
                        uint64_t nevents, tdx_viewgen_resolved *r, tdx_err *err) {
    memset(r, 0, sizeof *r);
    tdx_viewgen_opts_default(&r->opts);
    if (q->thread) r->opts.view = TDX_VIEW_THREAD;
    if (q->has_goid) {
        const tdx_sumg *g = tdx_summary_goroutine(s, (int64_t)q->goid);
        if (!g)
            return tdx_errf(err, TDX_EUSAGE, TDX_NO_OFFSET, "failed to find goroutine %lld",
                            (long long)q->goid);
        r->opts.view = TDX_VIEW_GOROUTINE;
        r->opts.wstart = g->start ? tdx_wsub(g->start, t0) : 0;
        r->opts.wend = tdx_wsub(g->end ? g->end : tend, t0);
        r->opts.focus = (int64_t)q->goid;
        size_t n;
        if (tdx_summary_related(s, (int64_t)q->goid, nevents, &r->filter, &n))
            return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        r->opts.has_filter = true;
        r->opts.filter = r->filter;
        r->opts.nfilter = n;
    } else if (q->has_focustask) {
        uint32_t ti = tdx_summary_task(s, q->focustask);
        if (ti == TDX_SUM_NONE || (!s->tasks.v[ti].start.present && !s->tasks.v[ti].end.present))
            return tdx_errf(err, TDX_EUSAGE, TDX_NO_OFFSET, "failed to find task with id %llu",
                            (unsigned long long)q->focustask);
        if (set_task(s, ti, t0, tend, r, err)) return -1;
    } else if (q->has_taskid) {
        uint32_t ti = tdx_summary_task(s, q->taskid);
        if (ti == TDX_SUM_NONE)
            return tdx_errf(err, TDX_EUSAGE, TDX_NO_OFFSET, "failed to find task with id %llu",
                            (unsigned long long)q->taskid);
        r->opts.view = TDX_VIEW_GOROUTINE;
        if (set_task(s, ti, t0, tend, r, err)) return -1;
        r->opts.regions = true;
        /* The goroutine to orient around: the start event's, else the earliest log's, else the
         * end event's when earlier. */
        const tdx_sumtask *t = &s->tasks.v[ti];
        const tdx_sumev *first = NULL;
        if (t->start.present) {
            first = &t->start;
        } else {
            if (t->first_log.present) first = &t->first_log;
            if (t->end.present && (!first || t->end.time < first->time)) first = &t->end;
        }
        if (!first || first->g == TDX_NO_ID) {
            tdx_viewgen_resolved_free(r);
            return tdx_errf(err, TDX_EUSAGE, TDX_NO_OFFSET, "failed to find task with id %llu",
                            (unsigned long long)q->taskid);
        }
        r->opts.focus = first->g;
        /* Filter: the goroutines directly involved in any listed task. */
        tdx_hmap seen = {0};
        TDX_VEC(int64_t) ids = {0};
        for (size_t i = 0; i < r->opts.ntasks; i++) {
            const tdx_sumtask *lt = &s->tasks.v[r->tasks[i]];
            for (size_t k = 0; k < lt->goroutines.n; k++) {
                int ins;
                if (!tdx_hmap_upsert(&seen, (uint64_t)lt->goroutines.v[k], 1, &ins) ||
                    (ins && tdx_vec_push(&ids, lt->goroutines.v[k]))) {
                    tdx_hmap_free(&seen);
                    tdx_vec_free(&ids);
                    tdx_viewgen_resolved_free(r);
                    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
                }
            }
        }
        tdx_hmap_free(&seen);
        r->filter = ids.v;
        r->opts.has_filter = true;
        r->opts.filter = ids.v;
        r->opts.nfilter = ids.n;
    }
    return 0;
}

/* ---- checkpoints ---- */

#define MAGIC "TDXVG2"

/* A checkpoint is the magic, a plain header of varints (the generator's scalars and the counts
 * of its tables), then the tables' fields coded with rANS, one context per field: most of a
 * state is thousands of goroutine records whose fields repeat a few values (lane none, the same
 * block reason), which per-field tables code in a fraction of their varint size. Times are coded
 * back from the generator's last event time, which they are all close to. */
enum {
    SF_ID,    /* zigzag delta to the previous record's id */
    SF_LANE,  /* lane + 1, so that "none" is 0 */
    SF_TIMES, /* which of run start, syscall time and cause time are set */
    SF_RUN,   /* zigzag(tlast - time), the three times when set */
    SF_SYS,
    SF_CAUSE,
    SF_CLANE, /* cause lane + 1 */
    SF_FUNC,
    SF_LABEL,
    SF_BREASON,
    SF_LASTSTOP,
    SF_SYSSTACK,
    SF_CSTACK,
    SF_CREASON,
    SF_FLAGS, /* named | syscall active << 1 | cause << 2 */
    SF_NACTIVE,
    SF_ANAME,
    SF_ASTACK,
    SF_ATIME,
    SF_NDONE,
    SF_DNAME,
    SF_DSSTACK,
    SF_DESTACK,
    SF_DARG,
    SF_DSTART, /* zigzag(tlast - start) */
    SF_DLEN,   /* zigzag(end - start) */
    SF_SPROC,  /* inSyscall: proc delta (ascending), record index */
    SF_SGI,
    SF_GNAME, /* goroutine-less ranges */
    SF_GSTACK,
    SF_GTIME,
    SF_PNAME, /* proc ranges */
    SF_PSTACK,
    SF_PPROC,
    SF_PTIME,
    SF_THREAD, /* thread ids: zigzag delta */
    SF_COUNT
};

static inline void fput(tdx_rans_enc *e, int f, uint64_t v) {
    tdx_rans_put_uint(e, f & 3, (uint32_t)f, v);
}
static inline void fput_i(tdx_rans_enc *e, int f, int64_t v) {
    fput(e, f, tdx_zigzag(v));
}
static inline uint64_t fget(tdx_rans_dec *d, int f) {
    return tdx_rans_get_uint(d, f & 3, (uint32_t)f);
}
static inline int64_t fget_i(tdx_rans_dec *d, int f) {
    return tdx_unzigzag(fget(d, f));
}
/* A value that must be below `lim`. */
static inline uint32_t fget_lim(tdx_rans_dec *d, int f, uint64_t lim) {
    uint64_t v = fget(d, f);
    if (v >= lim) {
        d->bad = 1;
        return 0;
    }
    return (uint32_t)v;
}

int tdx_viewgen_save(const tdx_viewgen *vg, tdx_buf *b) {
    return tdx_viewgen_save_pruned(vg, b, NULL, NULL, NULL);
}

void tdx_viewgen_set_quiet(tdx_viewgen *vg, const int64_t *next_index, int64_t first_kept) {
    vg->quiet_index = next_index;
    vg->quiet_below = first_kept;
}

void tdx_viewgen_counters_set(tdx_viewgen *vg, uint64_t arrow_seq, uint64_t async_seq) {
    vg->arrow_seq = arrow_seq;
    vg->async_seq = async_seq;
}

static int save_state(const tdx_viewgen *vg, tdx_buf *b, bool (*keep)(void *, int64_t), void *kctx,
                      tdx_rans_enc *enc, bool final);

int tdx_viewgen_save_pruned(const tdx_viewgen *vg, tdx_buf *b, bool (*keep)(void *, int64_t),
                            void *kctx, tdx_rans_enc *enc) {
    return save_state(vg, b, keep, kctx, enc, false);
}

int tdx_viewgen_save_final(const tdx_viewgen *vg, tdx_buf *b, bool (*keep)(void *, int64_t),
                           void *kctx, tdx_rans_enc *enc) {
    return save_state(vg, b, keep, kctx, enc, vg->view != TDX_VIEW_GOROUTINE);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* final: also leave out goroutines that are not executing (Finish draws nothing for them in the
 * proc and thread views) unless a proc's syscall refers to them. */
static int save_state(const tdx_viewgen *vg, tdx_buf *b, bool (*keep)(void *, int64_t), void *kctx,
                      tdx_rans_enc *enc, bool final) {
    int rc = 0;
    /* inSyscall, sorted by proc so the bytes do not depend on the hash layout */
    TDX_VEC(int64_t) ps = {0};
    TDX_VEC(uint32_t) sys = {0}; /* final: the goroutines in syscalls, ascending */
    for (size_t i = 0; vg->insys.n && i <= vg->insys.mask && !rc; i++)
        if (vg->insys.vals[i] != TDX_HMAP_EMPTY &&
            (tdx_vec_push(&ps, (int64_t)vg->insys.keys[i]) ||
             (final && tdx_vec_push(&sys, vg->insys.vals[i]))))
            rc = -1;
    if (ps.n) qsort(ps.v, ps.n, sizeof *ps.v, cmp_i64);
    if (sys.n > 1) qsort(sys.v, sys.n, sizeof *sys.v, cmp_u32);
    /* rank[i]: the records kept before record i, so each is asked about once (a state can hold
     * hundreds of thousands of goroutines, a few thousand of them in syscalls) */
    uint32_t *rank = keep || final ? malloc((vg->gs.n + 1) * sizeof *rank) : NULL;
    if ((keep || final) && !rank) rc = -1;
    size_t kept = vg->gs.n;
    if (rank && !rc) {
        rank[0] = 0;
        size_t si = 0;
        for (size_t i = 0; i < vg->gs.n; i++) {
            while (si < sys.n && sys.v[si] < i) si++;
            bool k = !keep || keep(kctx, vg->gs.v[i].id);
            if (final && k) k = vg->gs.v[i].lane != NONE || (si < sys.n && sys.v[si] == i);
            rank[i + 1] = rank[i] + (uint32_t)k;
        }
        kept = rank[vg->gs.n];
    }
    tdx_vec_free(&sys);

    rc |= tdx_buf_append(b, MAGIC, 6);
    rc |= tdx_buf_uvarint(b, (uint64_t)vg->view);
    rc |= tdx_buf_uvarint(b, (uint64_t)vg->started | (uint64_t)vg->finished << 1);
    rc |= tdx_ser_i(b, vg->t0) | tdx_ser_i(b, vg->tlast) | tdx_buf_uvarint(b, vg->nsync);
    rc |= tdx_buf_uvarint(b, vg->nopt) | tdx_buf_uvarint(b, vg->arrow_seq) |
          tdx_buf_uvarint(b, vg->async_seq);
    rc |= tdx_buf_uvarint(b, vg->broken);
    for (int i = 0; i < 5; i++) rc |= tdx_ser_i(b, vg->gst[i]) | tdx_ser_i(b, vg->gst_prev[i]);
    for (int i = 0; i < 3; i++) rc |= tdx_ser_i(b, vg->th[i]) | tdx_ser_i(b, vg->th_prev[i]);
    rc |= tdx_buf_uvarint(b, vg->heap_alloc) | tdx_buf_uvarint(b, vg->heap_goal);
    rc |= tdx_buf_uvarint(b, vg->prev_alloc) | tdx_buf_uvarint(b, vg->prev_goal);
    rc |= tdx_buf_uvarint(b, vg->gomaxprocs) | tdx_ser_i(b, vg->max_proc);
    rc |= tdx_buf_uvarint(b, kept) | tdx_buf_uvarint(b, ps.n) | tdx_buf_uvarint(b, vg->granges.n);
    rc |= tdx_buf_uvarint(b, vg->pranges.n) | tdx_buf_uvarint(b, vg->threads.n);

    tdx_rans_enc own; /* used without enc; empty (nothing to free) with it */
    tdx_rans_enc_init(&own);
    tdx_rans_enc *e = enc ? enc : &own;
    if (!rc && tdx_rans_enc_reset(e, SF_COUNT)) rc = -1;
    const int64_t tl = vg->tlast;
    int64_t prev = 0;
    for (size_t i = 0; i < vg->gs.n && !rc; i++) {
        const vg_g *g = &vg->gs.v[i];
        if (rank && rank[i + 1] == rank[i]) continue;
        const vg_ranges *gr = g->r;
        size_t na = gr ? gr->active.n : 0, nd = gr ? gr->done.n : 0;
        if (tdx_rans_enc_reserve(e, 24 + 3 * na + 6 * nd, 0)) {
            rc = -1;
            break;
        }
        fput_i(e, SF_ID, tdx_wsub(g->id, prev));
        prev = g->id;
        fput(e, SF_LANE, g->lane + 1);
        fput(e, SF_TIMES,
             (uint64_t)(g->run_start != 0) | (uint64_t)(g->sys_time != 0) << 1 |
                 (uint64_t)(g->cause_time != 0) << 2);
        if (g->run_start) fput_i(e, SF_RUN, tdx_wsub(tl, g->run_start));
        if (g->sys_time) fput_i(e, SF_SYS, tdx_wsub(tl, g->sys_time));
        if (g->cause_time) fput_i(e, SF_CAUSE, tdx_wsub(tl, g->cause_time));
        fput(e, SF_CLANE, g->cause_lane + 1);
        fput(e, SF_FUNC, g->func);
        fput(e, SF_LABEL, g->label);
        fput(e, SF_BREASON, g->block_reason);
        fput(e, SF_LASTSTOP, g->last_stop);
        fput(e, SF_SYSSTACK, g->sys_stack);
        fput(e, SF_CSTACK, g->cause_stack);
        fput(e, SF_CREASON, g->cause_reason);
        fput(e, SF_FLAGS,
             (uint64_t)g->named | (uint64_t)g->sys_active << 1 | (uint64_t)g->cause << 2);
        fput(e, SF_NACTIVE, na);
        for (size_t k = 0; k < na; k++) {
            fput(e, SF_ANAME, gr->active.v[k].name);
            fput(e, SF_ASTACK, gr->active.v[k].stack);
            fput_i(e, SF_ATIME, tdx_wsub(tl, gr->active.v[k].time));
        }
        fput(e, SF_NDONE, nd);
        for (size_t k = 0; k < nd; k++) {
            const crange *c = &gr->done.v[k];
            fput(e, SF_DNAME, c->name);
            fput(e, SF_DSSTACK, c->sstack);
            fput(e, SF_DESTACK, c->estack);
            fput(e, SF_DARG, c->arg);
            fput_i(e, SF_DSTART, tdx_wsub(tl, c->start));
            fput_i(e, SF_DLEN, tdx_wsub(c->end, c->start));
        }
    }
    if (!rc && tdx_rans_enc_reserve(
                   e, 2 * ps.n + 3 * vg->granges.n + 4 * vg->pranges.n + vg->threads.n + 1, 0))
        rc = -1;
    prev = 0;
    for (size_t i = 0; i < ps.n && !rc; i++) {
        /* Record indexes shift when records are pruned; a goroutine in a syscall is never pruned.
         */
        uint32_t gi = tdx_hmap_get(&vg->insys, (uint64_t)ps.v[i]);
        uint32_t ni = rank && gi < vg->gs.n ? rank[gi] : gi;
        fput_i(e, SF_SPROC, tdx_wsub(ps.v[i], prev));
        prev = ps.v[i];
        fput(e, SF_SGI, ni);
    }
    for (size_t i = 0; i < vg->granges.n && !rc; i++) {
        fput(e, SF_GNAME, vg->granges.v[i].name);
        fput(e, SF_GSTACK, vg->granges.v[i].stack);
        fput_i(e, SF_GTIME, tdx_wsub(tl, vg->granges.v[i].time));
    }
    for (size_t i = 0; i < vg->pranges.n && !rc; i++) {
        fput(e, SF_PNAME, vg->pranges.v[i].name);
        fput(e, SF_PSTACK, vg->pranges.v[i].stack);
        fput_i(e, SF_PPROC, vg->pranges.v[i].proc);
        fput_i(e, SF_PTIME, tdx_wsub(tl, vg->pranges.v[i].time));
    }
    prev = 0;
    for (size_t i = 0; i < vg->threads.n && !rc; i++) {
        fput_i(e, SF_THREAD, tdx_wsub(vg->threads.v[i], prev));
        prev = vg->threads.v[i];
    }
    if (!rc && (e->oom || tdx_rans_enc_finish(e, b))) rc = -1;
    tdx_rans_enc_free(&own);
    tdx_vec_free(&ps);
    free(rank);
    return rc ? -1 : 0;
}

/* Decodes the goroutine records of a checkpoint. Counts are capped (ids are u32 indexes); the
 * blob itself is checksummed by the index before it gets here. */
static void restore_goroutines(tdx_viewgen *vg, tdx_rans_dec *d, uint64_t ng, uint64_t nstr,
                               uint64_t nnodes) {
    const int64_t tl = vg->tlast;
    int64_t prev = 0;
    /* Room for the goroutines up front (300,000 idle connections: a third of a window query
     * went to growing these), but not on a count that may be damaged beyond a million. */
    const size_t first = vg->gs.n;
    size_t room = first + (size_t)(ng < (1u << 20) ? ng : 1u << 20);
    if (tdx_vec_reserve(&vg->gs, room) || tdx_hmap_reserve(&vg->g_idx, room)) vg->err = 1;
    /* filled at once, so huge pages: a window's page faults 12,561 -> 2,852 (idle connections) */
    if (!vg->err) tdx_mem_huge(vg->gs.v, room * sizeof *vg->gs.v);
    for (uint64_t i = 0; i < ng && !d->bad && !vg->err; i++) {
        vg_g g;
        memset(&g, 0, sizeof g);
        g.id = tdx_wadd(prev, fget_i(d, SF_ID));
        prev = g.id;
        g.lane = fget(d, SF_LANE) - 1;
        uint64_t tm = fget(d, SF_TIMES);
        if (tm > 7) d->bad = 1;
        if (tm & 1) g.run_start = tdx_wsub(tl, fget_i(d, SF_RUN));
        if (tm & 2) g.sys_time = tdx_wsub(tl, fget_i(d, SF_SYS));
        if (tm & 4) g.cause_time = tdx_wsub(tl, fget_i(d, SF_CAUSE));
        g.cause_lane = fget(d, SF_CLANE) - 1;
        g.func = fget_lim(d, SF_FUNC, nstr);
        g.label = fget_lim(d, SF_LABEL, nstr);
        g.block_reason = fget_lim(d, SF_BREASON, nstr);
        g.last_stop = fget_lim(d, SF_LASTSTOP, nnodes);
        g.sys_stack = fget_lim(d, SF_SYSSTACK, nnodes);
        g.cause_stack = fget_lim(d, SF_CSTACK, nnodes);
        g.cause_reason = fget_lim(d, SF_CREASON, nstr);
        uint64_t fl = fget(d, SF_FLAGS);
        g.named = fl & 1;
        g.sys_active = (fl >> 1) & 1;
        g.cause = (uint8_t)(fl >> 2);
        if ((fl >> 2) > CAUSE_UNBLOCK) d->bad = 1;
        uint64_t na = fget(d, SF_NACTIVE);
        if (na > UINT32_MAX) d->bad = 1;
        for (uint64_t k = 0; k < na && !d->bad && !vg->err; k++) {
            arange r;
            r.name = fget_lim(d, SF_ANAME, nstr);
            r.stack = fget_lim(d, SF_ASTACK, nnodes);
            r.time = tdx_wsub(tl, fget_i(d, SF_ATIME));
            vg_ranges *gr = g_ranges(&vg->err, &g);
            if (gr && tdx_vec_push(&gr->active, r)) vg->err = 1;
        }
        uint64_t nd = fget(d, SF_NDONE);
        if (nd > UINT32_MAX) d->bad = 1;
        for (uint64_t k = 0; k < nd && !d->bad && !vg->err; k++) {
            crange c;
            c.name = fget_lim(d, SF_DNAME, nstr);
            c.sstack = fget_lim(d, SF_DSSTACK, nnodes);
            c.estack = fget_lim(d, SF_DESTACK, nnodes);
            c.arg = (uint8_t)fget_lim(d, SF_DARG, 3);
            c.start = tdx_wsub(tl, fget_i(d, SF_DSTART));
            c.end = tdx_wadd(c.start, fget_i(d, SF_DLEN));
            vg_ranges *gr = g_ranges(&vg->err, &g);
            if (gr && tdx_vec_push(&gr->done, c)) vg->err = 1;
        }
        if (!d->bad && !vg->err && tdx_vec_push(&vg->gs, g)) vg->err = 1;
        if (d->bad || vg->err) g_free_ranges(&g);
    }
    /* Indexed after decoding, a few ahead: the map outgrows the cache, and inserting each record
     * as it was decoded waited on a miss each time (idle-connections windows: 231 -> 200 ms). */
    enum { AHEAD = 16 };
    for (size_t i = first; i < vg->gs.n && !d->bad && !vg->err; i++) {
        if (i + AHEAD < vg->gs.n) tdx_hmap_prefetch(&vg->g_idx, (uint64_t)vg->gs.v[i + AHEAD].id);
        int added = 0;
        if (!tdx_hmap_upsert(&vg->g_idx, (uint64_t)vg->gs.v[i].id, (uint32_t)i, &added))
            vg->err = 1;
        else if (!added)
            d->bad = 1; /* the same goroutine twice */
    }
}

/* The tables after the goroutines: inSyscall, the goroutine-less and proc ranges, threads. */
static void restore_rest(tdx_viewgen *vg, tdx_rans_dec *d, const uint64_t cnt[4], uint64_t nstr,
                         uint64_t nnodes) {
    const int64_t tl = vg->tlast;
    int64_t prev = 0;
    for (uint64_t i = 0; i < cnt[0] && !d->bad && !vg->err; i++) {
        int64_t proc = tdx_wadd(prev, fget_i(d, SF_SPROC));
        prev = proc;
        uint32_t gi = fget_lim(d, SF_SGI, vg->gs.n);
        if (!d->bad && tdx_hmap_put(&vg->insys, (uint64_t)proc, gi)) vg->err = 1;
    }
    for (uint64_t i = 0; i < cnt[1] && !d->bad && !vg->err; i++) {
        grange r;
        r.name = fget_lim(d, SF_GNAME, nstr);
        r.stack = fget_lim(d, SF_GSTACK, nnodes);
        r.time = tdx_wsub(tl, fget_i(d, SF_GTIME));
        if (tdx_vec_push(&vg->granges, r)) vg->err = 1;
    }
    for (uint64_t i = 0; i < cnt[2] && !d->bad && !vg->err; i++) {
        prange r;
        r.name = fget_lim(d, SF_PNAME, nstr);
        r.stack = fget_lim(d, SF_PSTACK, nnodes);
        r.proc = fget_i(d, SF_PPROC);
        r.time = tdx_wsub(tl, fget_i(d, SF_PTIME));
        if (tdx_vec_push(&vg->pranges, r)) vg->err = 1;
    }
    prev = 0;
    for (uint64_t i = 0; i < cnt[3] && !d->bad && !vg->err; i++) {
        prev = tdx_wadd(prev, fget_i(d, SF_THREAD));
        thread_add(vg, prev);
    }
}

bool tdx_viewgen_started(const tdx_viewgen *vg) {
    return vg->started;
}

int tdx_viewgen_restore(tdx_viewgen *vg, const uint8_t *p, size_t n, tdx_err *err) {
    if (vg->started || vg->finished)
        return tdx_errf(err, TDX_EUSAGE, TDX_NO_OFFSET, "restore into a generator already in use");
    tdx_deser d = {p, p + n, 0};
    if (n < 6 || memcmp(p, MAGIC, 6) != 0) d.bad = 1;
    d.p += n < 6 ? n : 6;
    uint64_t nstr = tdx_vgstore_nstrings(vg->store), nnodes = tdx_vgstore_nnodes(vg->store);
    if ((int)tdx_deser_u(&d) != vg->view) d.bad = 1;
    uint64_t flags = tdx_deser_u(&d);
    vg->started = flags & 1;
    vg->finished = (flags >> 1) & 1;
    if (flags > 1) d.bad = 1; /* (states are saved before Finish) */
    vg->t0 = tdx_deser_i(&d);
    vg->tlast = tdx_deser_i(&d);
    vg->nsync = tdx_deser_u(&d);
    vg->nopt = tdx_deser_u(&d);
    vg->arrow_seq = tdx_deser_u(&d);
    vg->async_seq = tdx_deser_u(&d);
    vg->broken = tdx_deser_u(&d);
    /* Counters a replay steps by small amounts: far from the int64 limits or damaged. */
    const int64_t far = INT64_MAX / 4;
    for (int i = 0; i < 5; i++) {
        vg->gst[i] = tdx_deser_i(&d);
        vg->gst_prev[i] = tdx_deser_i(&d);
        if (vg->gst[i] < -far || vg->gst[i] > far) d.bad = 1;
    }
    for (int i = 0; i < 3; i++) {
        vg->th[i] = tdx_deser_i(&d);
        vg->th_prev[i] = tdx_deser_i(&d);
        if (vg->th[i] < -far || vg->th[i] > far) d.bad = 1;
    }
    vg->heap_alloc = tdx_deser_u(&d);
    vg->heap_goal = tdx_deser_u(&d);
    vg->prev_alloc = tdx_deser_u(&d);
    vg->prev_goal = tdx_deser_u(&d);
    vg->gomaxprocs = tdx_deser_u(&d);
    vg->max_proc = tdx_deser_i(&d);
    if (vg->max_proc < 0 || vg->max_proc > TDX_VIEW_MAX_PROC) d.bad = 1; /* a lane per id */
    uint64_t ng = tdx_deser_u(&d), cnt[4];
    if (ng > UINT32_MAX) d.bad = 1;
    for (int i = 0; i < 4; i++)
        if ((cnt[i] = tdx_deser_u(&d)) > UINT32_MAX) d.bad = 1;
    tdx_rans_dec rd;
    tdx_rans_dec_init(&rd);
    if (!d.bad && tdx_rans_dec_start(&rd, SF_COUNT, d.p, (size_t)(d.end - d.p))) d.bad = 1;
    if (!d.bad) {
        restore_goroutines(vg, &rd, ng, nstr, nnodes);
        restore_rest(vg, &rd, cnt, nstr, nnodes);
        if (!tdx_rans_dec_ok(&rd)) d.bad = 1;
    }
    tdx_rans_dec_free(&rd);
    tdx_vgcache_reset(&vg->cache);
    if (d.bad || vg->err) {
        int oom = vg->err;
        free_state(vg);
        memset(&vg->gs, 0, sizeof vg->gs);
        vg->started = vg->finished = false;
        vg->err = 0;
        return tdx_errf(err, oom ? TDX_ENOMEM : TDX_EINDEX, TDX_NO_OFFSET,
                        oom ? "out of memory" : "damaged viewer-generator checkpoint");
    }
    return 0;
}

/* ---- serving windows from the index ---- */

void tdx_viewgen_emit_item(tdx_viewgen *vg, const tdx_vev *ev, size_t n) {
    tdx_vev a = ev[0];
    switch (a.ph) {
    case 'X':
        if (a.pid == 0 && !pass(vg, a.tid)) return;
        if (!keep_span(vg, a.ts, a.dur)) return;
        out(vg, &a);
        return;
    case 'I':
        if (!within(vg, a.ts) || !pass(vg, a.tid)) return;
        out(vg, &a);
        return;
    case 'C':
        if (within(vg, a.ts)) out(vg, &a);
        return;
    case 's': {
        if (n < 2) return;
        tdx_vev b = ev[1];
        if (a.pid == 0 && (!pass(vg, a.tid) || !pass(vg, b.tid))) return;
        if (!keep_arrow(vg, a.ts, b.ts)) return;
        a.id = b.id = ++vg->arrow_seq;
        out(vg, &a);
        out(vg, &b);
        return;
    }
    case 'b': {
        if (n < 2) return;
        tdx_vev b = ev[1];
        if (!keep_span(vg, a.ts, tdx_wsub(b.ts, a.ts)) || !pass(vg, a.tid)) return;
        a.id = b.id = ++vg->async_seq;
        out(vg, &a);
        out(vg, &b);
        return;
    }
    default:
        out(vg, &a);
        return;
    }
}

void tdx_viewgen_emit_counters(tdx_viewgen *vg, int64_t ts) {
    static const int64_t zero[5];
    if (!within(vg, ts)) return;
    if (memcmp(vg->gst_prev, zero, sizeof vg->gst_prev) != 0)
        counter(vg, lit("Goroutines"), ts, TDX_VARG_GOROUTINES, (uint64_t)vg->gst_prev[VS_RUNNING],
                (uint64_t)vg->gst_prev[VS_RUNNABLE], (uint64_t)vg->gst_prev[VS_WAITING_GC]);
    if (vg->view != TDX_VIEW_GOROUTINE && memcmp(vg->th_prev, zero, sizeof vg->th_prev) != 0)
        counter(vg, lit("Threads"), ts, TDX_VARG_THREADS, (uint64_t)vg->th_prev[2],
                (uint64_t)vg->th_prev[0], 0);
    if (vg->prev_alloc || vg->prev_goal) {
        uint64_t diff = vg->prev_goal > vg->prev_alloc ? vg->prev_goal - vg->prev_alloc : 0;
        counter(vg, lit("Heap"), ts, TDX_VARG_HEAP, vg->prev_alloc, diff, 0);
    }
}

static int cmp_name(const void *a, const void *b) {
    int64_t x = ((const tdx_vgname *)a)->id, y = ((const tdx_vgname *)b)->id;
    return x < y ? -1 : x > y;
}

int tdx_viewgen_names(const tdx_viewgen *vg, bool (*keep)(void *, int64_t), void *ctx,
                      tdx_vgname **out, size_t *n) {
    size_t k = 0;
    tdx_vgname *v = malloc((vg->gs.n ? vg->gs.n : 1) * sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < vg->gs.n; i++) {
        const vg_g *g = &vg->gs.v[i];
        if (keep && keep(ctx, g->id)) continue;
        v[k++] = (tdx_vgname){g->id, g->func, g->label, g->named != 0};
    }
    if (k) qsort(v, k, sizeof *v, cmp_name);
    *out = v;
    *n = k;
    return 0;
}

int tdx_viewgen_add_named(tdx_viewgen *vg, const tdx_vgname *nm) {
    if (g_find(vg, nm->id)) return 0;
    vg_g *g = g_get(vg, nm->id);
    if (!g) return -1;
    g->func = nm->func;
    g->label = nm->label;
    g->named = nm->named;
    return 0;
}

int tdx_viewgen_drop(tdx_viewgen *vg, int64_t id, tdx_vgname *name) {
    uint32_t i = tdx_hmap_get(&vg->g_idx, (uint64_t)id);
    if (i == TDX_HMAP_EMPTY) return 0;
    vg_g *g = &vg->gs.v[i];
    if (g->lane != NONE) return 0;
    *name = (tdx_vgname){g->id, g->func, g->label, g->named != 0};
    g_free_ranges(g);
    tdx_hmap_del(&vg->g_idx, (uint64_t)id);
    uint32_t last = (uint32_t)(vg->gs.n - 1);
    if (i != last) {
        vg->gs.v[i] = vg->gs.v[last];
        if (tdx_hmap_put(&vg->g_idx, (uint64_t)vg->gs.v[i].id, i)) vg->err = 1;
        /* a goroutine in a syscall on a proc is referenced by index */
        for (size_t k = 0; vg->insys.n && k <= vg->insys.mask; k++)
            if (vg->insys.vals[k] == last) vg->insys.vals[k] = i;
    }
    vg->gs.n--;
    return 1;
}
