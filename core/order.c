/* order.c: Go's ordering state machine (order.go) and merge loop (reader.go, batchcursor.go) for
 * one generation, over working records that read the carried state lazily. */
#include "order.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdqsort.h"
#include "spec.h"
#include "varint.h"

/* Wire goroutine statuses and proc statuses. */
enum { GS_BAD = 0, GS_RUNNABLE, GS_RUNNING, GS_SYSCALL, GS_WAITING };
enum { PS_BAD = 0, PS_RUNNING, PS_IDLE, PS_SYSCALL, PS_ABANDONED };

static const uint8_t gostatus_to_state[5] = {TDX_GO_UNDETERMINED, TDX_GO_RUNNABLE, TDX_GO_RUNNING,
                                             TDX_GO_SYSCALL, TDX_GO_WAITING};
static const uint8_t procstatus_to_state[5] = {TDX_PROC_UNDETERMINED, TDX_PROC_RUNNING,
                                               TDX_PROC_IDLE, TDX_PROC_RUNNING, TDX_PROC_IDLE};

static const char *gostatus_name(unsigned s) {
    static const char *const n[] = {"Bad", "Runnable", "Running", "Syscall", "Waiting"};
    return s < 5 ? n[s] : "Bad";
}
static const char *procstatus_name(unsigned s) {
    static const char *const n[] = {"Bad", "Running", "Idle", "Syscall"};
    return s < 4 ? n[s] : "Bad";
}

/* ---- working records ---- */

enum { FS_UNKNOWN = 0, FS_ASSUMED, FS_WRITTEN };

/* A resource's in-flight special ranges: either a full copy of the carried list (known), or, when
 * speculating, only the local additions over an unknown carried list (delta), with what was assumed
 * about the carried list and the operations to replay on it at merge time. A delta assumes the
 * carried list holds at most one entry of each range type. */
typedef struct rsop {
    uint8_t op; /* OP_* */
    tdx_range r;
} rsop;

typedef struct rset {
    uint8_t known, delta;
    uint8_t cstate[3]; /* delta: the carried sweep / mark-assist / STW entry, CS_* */
    tdx_rangevec v;    /* known: the whole list; delta: local additions */
    TDX_VEC(rsop) ops; /* delta: begins and ends in order */
} rset;
enum { CS_UNKNOWN = 0, CS_PRESENT, CS_ABSENT, CS_REMOVED };
enum { OP_BEGIN = 0, OP_END = 1 };

typedef struct wg {
    uint64_t id;
    uint8_t st_fs, exists, status;
    uint8_t seq_valid; /* seq was set in this generation */
    /* Regions: known = a copy of the carried stack; delta = pushes on top of an unknown carried
     * stack, of which rg_pops entries were popped. */
    uint8_t rg_known, rg_delta;
    uint32_t rg_pops;
    uint64_t seq;
    tdx_regionvec regions;
    rset rs;
} wg;

typedef struct wp {
    uint64_t id;
    uint8_t st_fs, exists, status;
    uint8_t seq_valid;
    uint64_t seq;
    rset rs;
} wp;

typedef struct wm {
    uint64_t id;
    uint8_t ex_fs, p_fs, g_fs;
    uint8_t exists;
    int64_t p, g;
    /* Guesses for a speculative run, from the thread's first events. */
    uint8_t guessed;
    int64_t guess_p, guess_g;
} wm;

typedef struct wt {
    uint64_t id;
    uint8_t fs, exists;
    uint64_t parent;
    tdx_str name;
} wt;

enum { A_G, A_P, A_M_EX, A_M_P, A_M_G, A_TASK, A_GC, A_GRANGE, A_PRANGE, A_REGION };

typedef struct assume {
    uint8_t kind;
    uint64_t id, a, b;
    tdx_str s; /* A_REGION: the region name */
} assume;

/* ---- cursors ---- */

typedef struct cursor {
    uint64_t m;
    uint32_t mslot;         /* index of the thread's working record + 1, 0 until first used */
    uint32_t batch;         /* current batch index, UINT32_MAX when exhausted */
    bool loaded;            /* p/end/base describe `batch` */
    const uint8_t *p, *end; /* unread bytes of the current batch */
    const uint8_t *base;    /* the current batch's payload */
    uint64_t data_off;      /* its file offset */
    int64_t last_ts;
    /* current event */
    uint8_t type;
    int64_t time;
    uint64_t args[4];
    uint64_t ev_off; /* file offset of the current event */
} cursor;

static void cursor_init(cursor *c, uint64_t m, uint32_t first_batch) {
    memset(c, 0, sizeof *c);
    c->m = m;
    c->batch = first_batch;
}

/* An event the rules produced: built in place (push, then the rule's details), completed by
 * finish_event and handed to the consumer from here, with no copy. */
typedef struct qev {
    tdx_event ev;
    uint32_t extra_str; /* TaskEnd name / STWEnd kind (dense), when set */
    uint8_t has_extra_str;
    uint8_t fixup; /* TDX_FIX_*: details the in-order stage takes from the true state */
} qev;

struct tdx_order {
    uint8_t nargs[256]; /* per type byte: wire arguments after dt, or 0xff if not a timed event */
    /* per-run inputs */
    tdx_gen *g;
    const tdx_carry *carry; /* NULL when speculating */
    bool initial;
    uint64_t gen;
    tdx_emit_fn emit;
    void *emit_ctx;
    /* working state */
    TDX_VEC(wg) gs;
    /* Goroutine id -> index into gs: open addressing with id and index side by side, so a probe
     * touches one cache line (tdx_hmap keeps keys and values apart: two misses per lookup, which
     * showed with tens of thousands of goroutines per generation). Cleared every generation. */
    struct gslot {
        uint64_t id;
        uint32_t idx1;
    } * gt; /* idx1 = index + 1, 0 = free */
    size_t gt_cap, gt_n;
    unsigned gt_shift; /* 64 - log2(gt_cap) */
    /* Direct-mapped caches in front of the maps: most lookups hit the few ids in use right now.
     * Entries hold index + 1 (0 = empty); records never move index within a generation. */
    struct {
        uint64_t id;
        uint32_t idx1;
    } gcache[512], pcache[64];
    TDX_VEC(wp) ps;
    tdx_hmap p_idx;
    TDX_VEC(wm) ms;
    tdx_hmap m_idx;
    TDX_VEC(wt) ts;
    tdx_hmap t_idx;
    uint8_t gc_fs, gc_state;
    uint64_t gc_seq;
    TDX_VEC(assume) log;
    /* merge */
    TDX_VEC(cursor) cur;
    TDX_VEC(uint32_t) heap; /* cursor indexes */
    TDX_VEC(int64_t) hk;    /* hk.v[i]: current event time of cursor heap.v[i] (kept inline) */
    qev q[4];
    int nq;
    int64_t first_local, last_local;
    bool final_times;
    int64_t floor;
    uint64_t nemitted;
    const char *why; /* why the last speculative run stopped or failed its proof */
    TDX_VEC(tdx_task_fixup) fixups;
    size_t next_sample;
};

#define NO_ID TDX_NO_ID
#define OOM(err) tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory")

enum { R_DEFER = 0, R_ADVANCE = 1, R_ERROR = -1, R_SPEC = -2 };

tdx_order *tdx_order_new(void) {
    tdx_order *o = calloc(1, sizeof(tdx_order));
    if (!o) return NULL;
    memset(o->nargs, 0xff, sizeof o->nargs);
    for (unsigned t = 0; t < TDX_EV_NTYPES; t++)
        if (tdx_specs[t].nargs > 0 && tdx_specs[t].timed)
            o->nargs[t] = (uint8_t)(tdx_specs[t].nargs - 1);
    return o;
}

static void clear_working(tdx_order *o) {
    for (size_t i = 0; i < o->gs.n; i++) {
        tdx_vec_free(&o->gs.v[i].regions);
        tdx_vec_free(&o->gs.v[i].rs.v);
        tdx_vec_free(&o->gs.v[i].rs.ops);
    }
    for (size_t i = 0; i < o->ps.n; i++) {
        tdx_vec_free(&o->ps.v[i].rs.v);
        tdx_vec_free(&o->ps.v[i].rs.ops);
    }
    o->gs.n = o->ps.n = o->ms.n = o->ts.n = 0;
    if (o->gt) memset(o->gt, 0, o->gt_cap * sizeof *o->gt);
    o->gt_n = 0;
    tdx_hmap_clear(&o->p_idx);
    memset(o->gcache, 0, sizeof o->gcache);
    memset(o->pcache, 0, sizeof o->pcache);
    tdx_hmap_clear(&o->m_idx);
    tdx_hmap_clear(&o->t_idx);
    o->gc_fs = FS_UNKNOWN;
    o->log.n = 0;
}

void tdx_order_free(tdx_order *o) {
    if (!o) return;
    clear_working(o);
    tdx_vec_free(&o->gs);
    tdx_vec_free(&o->ps);
    tdx_vec_free(&o->ms);
    tdx_vec_free(&o->ts);
    free(o->gt);
    tdx_hmap_free(&o->p_idx);
    tdx_hmap_free(&o->m_idx);
    tdx_hmap_free(&o->t_idx);
    tdx_vec_free(&o->log);
    tdx_vec_free(&o->fixups);
    tdx_vec_free(&o->cur);
    tdx_vec_free(&o->heap);
    tdx_vec_free(&o->hk);
    free(o);
}

uint64_t tdx_order_nevents(const tdx_order *o) {
    return o->nemitted;
}

void tdx_order_span(const tdx_order *o, int64_t *first, int64_t *last) {
    *first = o->first_local;
    *last = o->last_local;
}

static int log_assume(tdx_order *o, uint8_t kind, uint64_t id, uint64_t a, uint64_t b) {
    if (o->carry) return 0; /* exact runs need no proof */
    assume x = {kind, id, a, b, {0, 0}};
    return tdx_vec_push(&o->log, x);
}

/* ---- carried-state lookups ---- */

static const tdx_cg *carry_g(const tdx_carry *c, uint64_t id) {
    uint32_t i = tdx_hmap_get(&c->g_idx, id);
    return i == TDX_HMAP_EMPTY ? NULL : &c->gs.v[i];
}
static const tdx_cp *carry_p(const tdx_carry *c, uint64_t id) {
    uint32_t i = tdx_hmap_get(&c->p_idx, id);
    return i == TDX_HMAP_EMPTY ? NULL : &c->ps.v[i];
}
static const tdx_cm *carry_m(const tdx_carry *c, uint64_t id) {
    uint32_t i = tdx_hmap_get(&c->m_idx, id);
    return i == TDX_HMAP_EMPTY ? NULL : &c->ms.v[i];
}
static const tdx_ctask *carry_t(const tdx_carry *c, uint64_t id) {
    uint32_t i = tdx_hmap_get(&c->t_idx, id);
    return i == TDX_HMAP_EMPTY ? NULL : &c->tasks.v[i];
}

/* ---- working record access ---- */

static inline size_t gt_home(const tdx_order *o, uint64_t id) {
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> o->gt_shift); /* Fibonacci hashing */
}

/* The slot of id, or the free slot where it belongs. The table is never full (load <= 1/2). */
static inline struct gslot *gt_slot(const tdx_order *o, uint64_t id) {
    size_t mask = o->gt_cap - 1, i = gt_home(o, id);
    while (o->gt[i].idx1 && o->gt[i].id != id) i = (i + 1) & mask;
    return &o->gt[i];
}

static int gt_grow(tdx_order *o) {
    size_t cap = o->gt_cap ? o->gt_cap * 2 : 1024;
    struct gslot *old = o->gt, *nt = calloc(cap, sizeof *nt);
    if (!nt) return -1;
    size_t old_cap = o->gt_cap;
    o->gt = nt;
    o->gt_cap = cap;
    o->gt_shift = 64 - (unsigned)__builtin_ctzll(cap);
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].idx1) *gt_slot(o, old[i].id) = old[i];
    free(old);
    return 0;
}

static wg *wg_get(tdx_order *o, uint64_t id) {
    size_t c = (size_t)(id ^ (id >> 9)) & 511;
    if (o->gcache[c].idx1 && o->gcache[c].id == id) return &o->gs.v[o->gcache[c].idx1 - 1];
    if ((o->gt_n + 1) * 2 > o->gt_cap && gt_grow(o)) return NULL;
    struct gslot *sl = gt_slot(o, id);
    if (!sl->idx1) {
        wg r = {.id = id};
        if (tdx_vec_push(&o->gs, r)) return NULL;
        sl->id = id;
        sl->idx1 = (uint32_t)o->gs.n;
        o->gt_n++;
    }
    o->gcache[c].id = id;
    o->gcache[c].idx1 = sl->idx1;
    return &o->gs.v[sl->idx1 - 1];
}

static wg *wg_find(tdx_order *o, uint64_t id) {
    size_t c = (size_t)(id ^ (id >> 9)) & 511;
    if (o->gcache[c].idx1 && o->gcache[c].id == id) return &o->gs.v[o->gcache[c].idx1 - 1];
    if (!o->gt_n) return NULL;
    const struct gslot *sl = gt_slot(o, id);
    if (!sl->idx1) return NULL;
    o->gcache[c].id = id;
    o->gcache[c].idx1 = sl->idx1;
    return &o->gs.v[sl->idx1 - 1];
}

/* Guess hints for a speculative first read. */
enum { HINT_NONE = -1, HINT_ABSENT = -2 };

/* Makes r's exists/status known. Returns 0, or R_SPEC when speculating without a usable hint. */
static int g_status(tdx_order *o, wg *r, int hint) {
    if (r->st_fs != FS_UNKNOWN) return 0;
    if (o->carry) {
        const tdx_cg *c = carry_g(o->carry, r->id);
        r->exists = c != NULL;
        r->status = c ? c->status : 0;
    } else {
        if (hint == HINT_NONE)
            return o->why = "goroutine state read without a status event", R_SPEC;
        r->exists = hint != HINT_ABSENT;
        r->status = hint >= 0 ? (uint8_t)hint : 0;
        if (log_assume(o, A_G, r->id, r->exists, r->status)) return R_ERROR;
    }
    r->st_fs = FS_ASSUMED;
    return 0;
}

/* Makes r's region stack usable: a copy of the carried one, or (speculating) a delta over it. */
static int g_regions(tdx_order *o, wg *r) {
    if (r->rg_known || r->rg_delta) return 0;
    r->regions.n = 0;
    if (!o->carry) {
        r->rg_delta = 1;
        r->rg_pops = 0;
        return 0;
    }
    const tdx_cg *c = carry_g(o->carry, r->id);
    if (c)
        for (size_t i = 0; i < c->regions.n; i++)
            if (tdx_vec_push(&r->regions, c->regions.v[i])) return R_ERROR;
    r->rg_known = 1;
    return 0;
}

/* Makes a range set usable for an operation on range type typ. carried is the carried list in an
 * exact run (NULL when the resource had none). */
static int rs_prepare(tdx_order *o, rset *rs, const tdx_rangevec *carried, uint8_t typ) {
    if (rs->known) return 0;
    if (rs->delta) return 0;
    rs->v.n = rs->ops.n = 0;
    (void)typ;
    if (!o->carry) {
        rs->delta = 1;
        rs->cstate[0] = rs->cstate[1] = rs->cstate[2] = CS_UNKNOWN;
        return 0;
    }
    if (carried)
        for (size_t i = 0; i < carried->n; i++)
            if (tdx_vec_push(&rs->v, carried->v[i])) return R_ERROR;
    rs->known = 1;
    return 0;
}

static void rs_reset_known(rset *rs) {
    rs->v.n = rs->ops.n = 0;
    rs->known = 1;
    rs->delta = 0;
}

static void g_create(wg *r, uint8_t status, uint64_t seq) {
    r->st_fs = FS_WRITTEN;
    r->exists = 1;
    r->status = status;
    r->seq_valid = 1;
    r->seq = seq;
    r->regions.n = 0;
    r->rg_known = 1;
    r->rg_delta = 0;
    rs_reset_known(&r->rs);
}

static wp *wp_get(tdx_order *o, uint64_t id) {
    size_t c = (size_t)id & 63;
    if (o->pcache[c].idx1 && o->pcache[c].id == id) return &o->ps.v[o->pcache[c].idx1 - 1];
    int ins;
    uint32_t *slot = tdx_hmap_upsert(&o->p_idx, id, (uint32_t)o->ps.n, &ins);
    if (!slot) return NULL;
    if (ins) {
        wp r = {.id = id};
        if (tdx_vec_push(&o->ps, r)) return NULL;
    }
    o->pcache[c].id = id;
    o->pcache[c].idx1 = *slot + 1;
    return &o->ps.v[*slot];
}

static wp *wp_find(tdx_order *o, uint64_t id) {
    size_t c = (size_t)id & 63;
    if (o->pcache[c].idx1 && o->pcache[c].id == id) return &o->ps.v[o->pcache[c].idx1 - 1];
    uint32_t i = tdx_hmap_get(&o->p_idx, id);
    return i == TDX_HMAP_EMPTY ? NULL : &o->ps.v[i];
}

static int p_status(tdx_order *o, wp *r, int hint) {
    if (r->st_fs != FS_UNKNOWN) return 0;
    if (o->carry) {
        const tdx_cp *c = carry_p(o->carry, r->id);
        r->exists = c != NULL;
        r->status = c ? c->status : 0;
    } else {
        if (hint == HINT_NONE) return o->why = "proc state read without a status event", R_SPEC;
        r->exists = hint != HINT_ABSENT;
        r->status = hint >= 0 ? (uint8_t)hint : 0;
        if (log_assume(o, A_P, r->id, r->exists, r->status)) return R_ERROR;
    }
    r->st_fs = FS_ASSUMED;
    return 0;
}

static int p_ranges(tdx_order *o, wp *r, uint8_t typ) {
    const tdx_cp *c = o->carry ? carry_p(o->carry, r->id) : NULL;
    return rs_prepare(o, &r->rs, c ? &c->ranges : NULL, typ);
}

static int g_ranges(tdx_order *o, wg *r, uint8_t typ) {
    const tdx_cg *c = o->carry ? carry_g(o->carry, r->id) : NULL;
    return rs_prepare(o, &r->rs, c ? &c->ranges : NULL, typ);
}

/* Speculation: guesses a thread's context at the start of the generation from its own first
 * events (a thread that held a proc or goroutine re-announces them with status events). */
static void m_guess(tdx_order *o, wm *r);

static wm *wm_get(tdx_order *o, uint64_t id) {
    int ins;
    uint32_t *slot = tdx_hmap_upsert(&o->m_idx, id, (uint32_t)o->ms.n, &ins);
    if (!slot) return NULL;
    if (ins) {
        wm r = {.id = id, .p = NO_ID, .g = NO_ID};
        if (tdx_vec_push(&o->ms, r)) return NULL;
    }
    return &o->ms.v[*slot];
}

static int m_exists(tdx_order *o, wm *r, int hint_exists) {
    if (r->ex_fs != FS_UNKNOWN) return 0;
    if (o->carry) {
        r->exists = carry_m(o->carry, r->id) != NULL;
    } else {
        r->exists = (uint8_t)hint_exists;
        if (log_assume(o, A_M_EX, r->id, r->exists, 0)) return R_ERROR;
    }
    r->ex_fs = FS_ASSUMED;
    return 0;
}

static int m_p(tdx_order *o, wm *r) {
    if (r->p_fs != FS_UNKNOWN) return 0;
    if (o->carry) {
        const tdx_cm *c = carry_m(o->carry, r->id);
        r->p = c ? c->p : NO_ID;
    } else {
        m_guess(o, r);
        r->p = r->guess_p;
        if (log_assume(o, A_M_P, r->id, 0, (uint64_t)r->p)) return R_ERROR;
    }
    r->p_fs = FS_ASSUMED;
    return 0;
}

static int m_g(tdx_order *o, wm *r) {
    if (r->g_fs != FS_UNKNOWN) return 0;
    if (o->carry) {
        const tdx_cm *c = carry_m(o->carry, r->id);
        r->g = c ? c->g : NO_ID;
    } else {
        m_guess(o, r);
        r->g = r->guess_g;
        if (log_assume(o, A_M_G, r->id, 0, (uint64_t)r->g)) return R_ERROR;
    }
    r->g_fs = FS_ASSUMED;
    return 0;
}

static void m_set_p(wm *r, int64_t p) {
    r->p = p;
    r->p_fs = FS_WRITTEN;
}
static void m_set_g(wm *r, int64_t g) {
    r->g = g;
    r->g_fs = FS_WRITTEN;
}

static wt *wt_get(tdx_order *o, uint64_t id) {
    int ins;
    uint32_t *slot = tdx_hmap_upsert(&o->t_idx, id, (uint32_t)o->ts.n, &ins);
    if (!slot) return NULL;
    if (ins) {
        wt r = {.id = id};
        if (tdx_vec_push(&o->ts, r)) return NULL;
    }
    return &o->ts.v[*slot];
}

/* hint_absent: the read only asks whether the task is active (TaskBegin); a guess of "absent" is
 * safe to prove later. Reads that need the name cannot be guessed. */
static int t_load(tdx_order *o, wt *r, bool hint_absent) {
    if (r->fs != FS_UNKNOWN) return 0;
    if (o->carry) {
        const tdx_ctask *c = carry_t(o->carry, r->id);
        r->exists = c != NULL;
        if (c) {
            r->parent = c->parent;
            r->name = c->name;
        }
    } else {
        if (!hint_absent) return o->why = "task ended in a later generation", R_SPEC;
        r->exists = 0;
        if (log_assume(o, A_TASK, r->id, 0, 0)) return R_ERROR;
    }
    r->fs = FS_ASSUMED;
    return 0;
}

static int gc_load(tdx_order *o, uint8_t type, uint64_t seq) {
    if (o->gc_fs != FS_UNKNOWN) return 0;
    if (o->carry) {
        o->gc_state = o->carry->gc_state;
        o->gc_seq = o->carry->gc_seq;
    } else {
        /* The first GC event tells what the state must have been for the trace to be valid.
         * A GCBegin also advances, with the same effects and output, when no GC was seen yet
         * (undetermined): the proof accepts that too (id 1), or every trace whose first GC
         * happens after its first generation would be ordered twice. */
        o->gc_seq = seq - 1;
        o->gc_state = type == TDX_EV_GC_BEGIN ? TDX_GC_NOTRUNNING : TDX_GC_RUNNING;
        if (log_assume(o, A_GC, type == TDX_EV_GC_BEGIN, o->gc_state, o->gc_seq)) return R_ERROR;
    }
    o->gc_fs = FS_ASSUMED;
    return 0;
}

/* ---- cursor decoding (batchcursor.go) ---- */

/* Moves to the next non-empty batch of the cursor's thread (Go skips empty batches). Returns false
 * when the thread has no more. */
static bool cursor_load(tdx_order *o, cursor *c) {
    const tdx_gen *g = o->g;
    for (;;) {
        if (c->batch == UINT32_MAX) return false;
        if (c->loaded) {
            c->batch = g->next_batch.v[c->batch];
            c->loaded = false;
            c->last_ts = 0;
            continue;
        }
        const tdx_batch *b = &g->frame.batches.v[c->batch];
        c->loaded = true;
        c->base = c->p = g->data + b->data_off;
        c->end = c->base + b->size;
        c->data_off = b->data_off;
        if (b->size > 0) return true;
    }
}

/* The error for an event whose type byte t has no timed spec. */
static int bad_type(uint8_t t, uint64_t at, tdx_err *err) {
    if (t >= TDX_EV_NTYPES)
        return tdx_errf(err, TDX_EFORMAT, at, "found invalid event type: %u", t);
    return tdx_errf(err, TDX_EFORMAT, at, "found event without a timestamp: type=%u", t);
}

/* Reads the cursor's next event (Go's batchCursor.nextEvent). Returns 1, 0 when the thread has no
 * more events, or -1 with err. This runs once per event: the common case (a known type far from
 * the end of the batch) takes one table lookup and unchecked varint reads. */
static int cursor_next(tdx_order *o, cursor *c, tdx_err *err) {
    if (c->p >= c->end && !cursor_load(o, c)) return 0;
    const tdx_gen *g = o->g;
    if (c->last_ts == 0) c->last_ts = tdx_ticks_to_ns(g, g->frame.batches.v[c->batch].time);
    const uint8_t *p = c->p, *end = c->end;
    uint64_t at = c->data_off + (uint64_t)(p - c->base);
    uint8_t t = *p++;
    unsigned na = o->nargs[t]; /* arguments after dt, or 0xff: not a timed event */
    if (na == 0xff) return bad_type(t, at, err);
    uint64_t dt;
    c->args[0] = c->args[1] = c->args[2] = c->args[3] = 0;
    if (end - p >= (ptrdiff_t)(TDX_MAX_ARGS * TDX_VARINT_MAX)) {
        /* Far from the end of the batch: no bounds checks needed. */
        p = tdx_uvarint_fast(p, &dt);
        if (!p) return tdx_errf(err, TDX_EFORMAT, at, "found invalid uvarint for timestamp");
        for (unsigned i = 0; i < na; i++) {
            p = tdx_uvarint_fast(p, &c->args[i]);
            if (!p) return tdx_errf(err, TDX_EFORMAT, at, "found invalid uvarint");
        }
    } else {
        int k = tdx_uvarint(p, end, &dt);
        if (k < 0) return tdx_errf(err, TDX_EFORMAT, at, "found invalid uvarint for timestamp");
        p += k;
        for (unsigned i = 0; i < na; i++) {
            k = tdx_uvarint(p, end, &c->args[i]);
            if (k < 0) return tdx_errf(err, TDX_EFORMAT, at, "found invalid uvarint");
            p += k;
        }
    }
    c->type = t;
    /* Go adds in int64 with wrap-around. */
    c->time = (int64_t)((uint64_t)tdx_ticks_to_ns(g, dt) + (uint64_t)c->last_ts);
    c->last_ts = c->time;
    c->ev_off = at;
    c->p = p;
    return 1;
}

static void m_guess(tdx_order *o, wm *r) {
    if (r->guessed) return;
    r->guessed = 1;
    r->guess_p = r->guess_g = NO_ID;
    /* Find the thread's first batch and look at its leading status events. */
    const tdx_gen *g = o->g;
    uint32_t bi = UINT32_MAX;
    for (size_t i = 0; i < g->threads.n; i++)
        if (g->threads.v[i].m == r->id) bi = g->threads.v[i].first;
    if (bi == UINT32_MAX) return;
    cursor c;
    cursor_init(&c, r->id, bi);
    tdx_err scratch;
    /* The runtime re-announces a thread's context at the start of a generation: ProcStatus, then
     * GoStatus, with the ranges in progress (sweeping, mark assist, GC) in between. */
    for (int n = 0; n < 6; n++) {
        if (cursor_next(o, &c, &scratch) != 1) return;
        if (c.type == TDX_EV_GC_SWEEP_ACTIVE || c.type == TDX_EV_GC_MARK_ASSIST_ACTIVE ||
            c.type == TDX_EV_GC_ACTIVE)
            continue;
        if (c.type == TDX_EV_PROC_STATUS) {
            if ((c.args[1] == PS_RUNNING || c.args[1] == PS_SYSCALL) && r->guess_p == NO_ID)
                r->guess_p = (int64_t)c.args[0];
        } else if (c.type == TDX_EV_GO_STATUS || c.type == TDX_EV_GO_STATUS_STACK) {
            if ((c.args[2] == GS_RUNNING || (c.args[2] == GS_SYSCALL && c.args[1] == r->id)) &&
                r->guess_g == NO_ID)
                r->guess_g = (int64_t)c.args[0];
        } else {
            return;
        }
    }
}

/* ---- the frontier heap (exact tie behaviour matters) ---- */

static inline int64_t htime(const tdx_order *o, size_t i) {
    return o->hk.v[i];
}

static inline void hswap(tdx_order *o, size_t a, size_t b) {
    uint32_t t = o->heap.v[a];
    o->heap.v[a] = o->heap.v[b];
    o->heap.v[b] = t;
    int64_t k = o->hk.v[a];
    o->hk.v[a] = o->hk.v[b];
    o->hk.v[b] = k;
}

/* Go's heapSiftUp / heapSiftDown, moving a hole instead of swapping (the same comparisons, so the
 * same arrangement, ties included). */
static size_t sift_up(tdx_order *o, size_t i) {
    uint32_t *hv = o->heap.v;
    int64_t *hk = o->hk.v;
    int64_t t = hk[i];
    uint32_t x = hv[i];
    size_t i0 = i;
    while (i > 0 && hk[(i - 1) / 2] > t) {
        hk[i] = hk[(i - 1) / 2];
        hv[i] = hv[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    if (i != i0) {
        hk[i] = t;
        hv[i] = x;
    }
    return i;
}

/* hk.v[heap.n] is always INT64_MAX, so a missing right child never wins and the child choice
 * needs no bounds test or branch. */
static void sift_down(tdx_order *o, size_t i) {
    uint32_t *hv = o->heap.v;
    int64_t *hk = o->hk.v;
    size_t n = o->heap.n;
    if (i >= n) return;
    int64_t t = hk[i];
    uint32_t x = hv[i];
    for (;;) {
        /* Go's min3: the parent unless a child is strictly earlier; the right child only when
         * strictly earlier than the left. */
        size_t m = 2 * i + 1;
        if (m >= n) break;
        int64_t a = hk[m], b = hk[m + 1];
        size_t right = b < a;
        int64_t mt = right ? b : a;
        m += right;
        if (!(mt < t)) break;
        hk[i] = mt;
        hv[i] = hv[m];
        i = m;
    }
    hk[i] = t;
    hv[i] = x;
}

static void heap_update(tdx_order *o, size_t i) {
    if (sift_up(o, i) != i) return;
    sift_down(o, i);
}

static void heap_remove(tdx_order *o, size_t i) {
    while (i > 0) {
        hswap(o, (i - 1) / 2, i);
        i = (i - 1) / 2;
    }
    hswap(o, 0, o->heap.n - 1);
    o->heap.n--;
    o->hk.v[o->heap.n] = INT64_MAX; /* the sentinel (see sift_down) */
    sift_down(o, 0);
}

/* ---- output queue ---- */

static qev *push(tdx_order *o, uint8_t type, const cursor *c, int64_t m, int64_t p, int64_t g) {
    qev *q = &o->q[o->nq++];
    tdx_event *e = &q->ev;
    e->time = c->time;
    e->m = m;
    e->p = p;
    e->g = g;
    memcpy(e->args, c->args, sizeof e->args);
    e->stack = e->tstack = 0;
    e->str[0] = e->str[1] = 0;
    e->type = type;
    e->kind = tdx_type_kind(type);
    e->res_kind = e->from = e->to = e->has_clock = e->has_tstack = 0;
    e->res = 0;
    e->sync_nsec = 0;
    e->off = c->ev_off;
    q->extra_str = 0;
    q->has_extra_str = 0;
    q->fixup = 0;
    return q;
}

/* ---- context validation ---- */

enum { MUST_NOT = 0, MAY, MUST };

typedef struct ctx {
    int64_t m, p, g;
} ctx;

static int check_ctx(ctx c, int rm, int rp, int rg, uint64_t off, tdx_err *err) {
    const char *msg = NULL;
    if (rm == MUST && c.m == NO_ID)
        msg = "expected a thread but didn't have one";
    else if (rm == MUST_NOT && c.m != NO_ID)
        msg = "expected no thread but had one";
    else if (rp == MUST && c.p == NO_ID)
        msg = "expected a proc but didn't have one";
    else if (rp == MUST_NOT && c.p != NO_ID)
        msg = "expected no proc but had one";
    else if (rg == MUST && c.g == NO_ID)
        msg = "expected a goroutine but didn't have one";
    else if (rg == MUST_NOT && c.g != NO_ID)
        msg = "expected no goroutine but had one";
    if (!msg) return 0;
    tdx_errf(err, TDX_EVALIDATE, off, "%s", msg);
    return R_ERROR;
}

#define CHECK(c, rm, rp, rg)                                                                       \
    do {                                                                                           \
        if (check_ctx(c, rm, rp, rg, cu->ev_off, err)) return R_ERROR;                             \
    } while (0)
#define TRY(x)                                                                                     \
    do {                                                                                           \
        int rc_ = (x);                                                                             \
        if (rc_ == R_ERROR) return OOM(err);                                                       \
        if (rc_) return rc_;                                                                       \
    } while (0)
#define VERR(...) tdx_errf(err, TDX_EVALIDATE, cu->ev_off, __VA_ARGS__)

static const char *evname(const tdx_order *o, uint8_t t, char *buf) {
    return tdx_spec_version_name(o->g->version, t, buf);
}

/* Whether counter (gen, n) succeeds a working record's counter. */
static inline bool seq_ok(uint8_t valid, uint64_t have, uint64_t n) {
    return valid && n == have + 1;
}

static bool has_range(const tdx_rangevec *v, uint8_t typ, uint64_t desc) {
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i].typ == typ && v->v[i].desc == desc) return true;
    return false;
}

static int begin_range(tdx_rangevec *v, uint8_t typ, uint64_t desc, tdx_str name, const cursor *cu,
                       tdx_err *err) {
    if (has_range(v, typ, desc))
        return VERR("discovered event already in-flight for when starting event %s",
                    tdx_specs[typ].name);
    tdx_range r = {typ, desc, name};
    return tdx_vec_push(v, r) ? OOM(err) : 0;
}

static int active_range(tdx_rangevec *v, uint8_t typ, bool initial, const cursor *cu,
                        tdx_err *err) {
    if (initial) {
        if (has_range(v, typ, 0))
            return VERR("found named active range already in first gen: {%u 0}", typ);
        tdx_range r = {typ, 0, {0, 0}};
        return tdx_vec_push(v, r) ? OOM(err) : 0;
    }
    if (!has_range(v, typ, 0)) {
        char list[300];
        size_t n = 0;
        list[0] = 0;
        for (size_t i = 0; i < v->n && n + 48 < sizeof list; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s{%u %" PRIu64 "}", i ? " " : "",
                                  v->v[i].typ, v->v[i].desc);
        return VERR("resource is missing active range: %s [%s]", tdx_specs[typ].name, list);
    }
    return 0;
}

/* Removes the first entry of the range's Begin type; returns its desc via *desc. */
static int end_range(tdx_rangevec *v, uint8_t start_typ, uint64_t *desc, tdx_str *name,
                     const cursor *cu, tdx_err *err) {
    for (size_t i = 0; i < v->n; i++) {
        if (v->v[i].typ != start_typ) continue;
        *desc = v->v[i].desc;
        *name = v->v[i].name;
        v->v[i] = v->v[v->n - 1];
        v->n--;
        return 0;
    }
    return VERR("tried to end event %s, but not in-flight", tdx_specs[start_typ].name);
}

/* ---- range sets: known lists use Go's list semantics directly; delta sets track the carried
 * sweep / mark-assist entry by assumption ---- */

static int rs_slot(uint8_t typ) {
    return typ == TDX_EV_GC_SWEEP_BEGIN ? 0 : typ == TDX_EV_GC_MARK_ASSIST_BEGIN ? 1 : 2;
}

static int rs_local_take(tdx_rangevec *v, uint8_t typ, bool remove) {
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i].typ == typ) {
            if (remove) v->v[i] = v->v[--v->n];
            return 1;
        }
    return 0;
}

static int rs_op(rset *rs, uint8_t op, tdx_range r) {
    rsop x = {op, r};
    return tdx_vec_push(&rs->ops, x);
}

static int rs_begin(tdx_order *o, rset *rs, uint8_t akind, uint64_t id, uint8_t typ, uint64_t desc,
                    tdx_str name, const cursor *cu, tdx_err *err) {
    if (rs->known) return begin_range(&rs->v, typ, desc, name, cu, err);
    uint8_t *cs = &rs->cstate[rs_slot(typ)];
    if (*cs == CS_UNKNOWN) {
        if (log_assume(o, akind, id, typ, 0)) return OOM(err);
        *cs = CS_ABSENT;
    }
    if (*cs == CS_PRESENT || has_range(&rs->v, typ, desc))
        return VERR("discovered event already in-flight for when starting event %s",
                    tdx_specs[typ].name);
    tdx_range r = {typ, desc, name};
    if (tdx_vec_push(&rs->v, r) || rs_op(rs, OP_BEGIN, r)) return OOM(err);
    return 0;
}

/* *from_carried tells the caller that the ended entry (and so its desc) is the carried one. */
static int rs_end(tdx_order *o, rset *rs, uint8_t akind, uint64_t id, uint8_t typ, uint64_t *desc,
                  tdx_str *name, bool *from_carried, const cursor *cu, tdx_err *err) {
    *from_carried = false;
    if (rs->known) return end_range(&rs->v, typ, desc, name, cu, err);
    uint8_t *cs = &rs->cstate[rs_slot(typ)];
    tdx_range ended = {typ, 0, {0, 0}};
    /* Carried entries come first in Go's list, so a carried entry is the one ended if present. */
    bool local = false;
    if (*cs == CS_UNKNOWN) {
        bool want = true;
        for (size_t i = 0; i < rs->v.n; i++)
            if (rs->v.v[i].typ == typ) want = false; /* assume none carried: end the local one */
        if (log_assume(o, akind, id, typ, want)) return OOM(err);
        *cs = want ? CS_PRESENT : CS_ABSENT;
    }
    if (*cs == CS_PRESENT) {
        *cs = CS_REMOVED;
        *from_carried = true;
    } else {
        for (size_t i = 0; i < rs->v.n; i++)
            if (rs->v.v[i].typ == typ) {
                ended = rs->v.v[i];
                rs->v.v[i] = rs->v.v[--rs->v.n];
                local = true;
                break;
            }
        if (!local) return VERR("tried to end event %s, but not in-flight", tdx_specs[typ].name);
    }
    *desc = ended.desc;
    *name = ended.name;
    return rs_op(rs, OP_END, ended) ? OOM(err) : 0;
}

static int rs_active(tdx_order *o, rset *rs, uint8_t akind, uint64_t id, uint8_t typ,
                     const cursor *cu, tdx_err *err) {
    if (rs->known) return active_range(&rs->v, typ, o->initial, cu, err);
    if (has_range(&rs->v, typ, 0)) return 0;
    uint8_t *cs = &rs->cstate[rs_slot(typ)];
    if (*cs == CS_UNKNOWN) {
        if (log_assume(o, akind, id, typ, 1)) return OOM(err);
        *cs = CS_PRESENT;
    }
    if (*cs != CS_PRESENT)
        return VERR("resource is missing active range: %s [...]", tdx_specs[typ].name);
    return 0;
}

static int string_for_rule(tdx_order *o, uint64_t id, uint8_t type, tdx_str *out, const cursor *cu,
                           tdx_err *err) {
    uint32_t i = tdx_gen_string(o->g, id);
    if (i == UINT32_MAX) return VERR("invalid string ID %" PRIu64 " for %u event", id, type);
    *out = o->g->strings.v[i];
    return 0;
}

static bool str_eq(tdx_str a, tdx_str b) {
    return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

/* ---- the rules (order.go) ---- */

static int adv_proc_status(tdx_order *o, cursor *cu, wm *ms, ctx cur, ctx *nc, tdx_err *err) {
    uint64_t pid = cu->args[0], status = cu->args[1];
    if (status >= 5)
        return VERR("invalid status for proc %" PRId64 ": %" PRIu64, (int64_t)pid, status);
    uint8_t old = procstatus_to_state[status];
    wp *s = wp_get(o, pid);
    if (!s) return OOM(err);
    TRY(p_status(o, s, status == PS_ABANDONED ? HINT_NONE : (int)status));
    uint64_t out_status = status;
    if (s->exists) {
        if (status == PS_ABANDONED && s->status == PS_SYSCALL) {
            old = TDX_PROC_RUNNING;
            out_status = PS_SYSCALL;
        } else if (status == PS_ABANDONED && s->status == PS_ABANDONED) {
            old = TDX_PROC_IDLE;
        } else if (s->status != status) {
            return VERR("inconsistent status for proc %" PRId64 ": old %s vs. new %s", (int64_t)pid,
                        procstatus_name(s->status), procstatus_name((unsigned)status));
        }
    } else {
        s->exists = 1;
        s->status = (uint8_t)status;
        s->st_fs = FS_WRITTEN;
        rs_reset_known(&s->rs);
        old = o->initial ? TDX_PROC_UNDETERMINED : TDX_PROC_NOTEXIST;
    }
    s->seq_valid = 1;
    s->seq = 0;
    *nc = cur;
    if (status == PS_RUNNING || status == PS_SYSCALL) nc->p = (int64_t)pid;
    ctx outc = cur;
    if (status == PS_ABANDONED && old == TDX_PROC_RUNNING) {
        /* Emit the status in the context of the thread holding the proc. */
        wm *found = NULL;
        for (size_t i = 0; i < o->ms.n; i++) {
            wm *r = &o->ms.v[i];
            if (r->p_fs != FS_UNKNOWN && r->p == (int64_t)pid) found = r;
        }
        if (found) {
            TRY(m_g(o, found));
            outc = (ctx){(int64_t)found->id, (int64_t)pid, found->g};
        } else if (!o->carry) {
            return o->why = "abandoned proc promoted across generations", R_SPEC;
        } else {
            const tdx_cm *best = NULL;
            for (size_t i = 0; i < o->carry->ms.n; i++) {
                const tdx_cm *c = &o->carry->ms.v[i];
                if (c->p == (int64_t)pid && tdx_hmap_get(&o->m_idx, c->id) == TDX_HMAP_EMPTY)
                    best = c;
            }
            if (!best)
                return VERR("failed to find sched context for proc %" PRId64
                            " that's about to be stolen",
                            (int64_t)pid);
            outc = (ctx){(int64_t)best->id, (int64_t)pid, best->g};
        }
    }
    qev *e = push(o, TDX_EV_PROC_STATUS, cu, outc.m, outc.p, outc.g);
    e->ev.args[1] = out_status;
    e->ev.from = old;
    e->ev.to = procstatus_to_state[out_status];
    (void)ms;
    return R_ADVANCE;
}

static int adv_proc_start(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    uint64_t pid = cu->args[0], seq = cu->args[1];
    wp *s = wp_find(o, pid);
    /* A counter from an earlier generation never succeeds, so a proc not yet seen in this
     * generation always makes this wait. */
    if (!s || s->st_fs == FS_UNKNOWN || !s->exists || s->status != PS_IDLE ||
        !seq_ok(s->seq_valid, s->seq, seq) || cur.p != NO_ID)
        return R_DEFER;
    CHECK(cur, MUST, MUST_NOT, MAY);
    s->status = PS_RUNNING;
    s->st_fs = FS_WRITTEN;
    s->seq = seq;
    *nc = cur;
    nc->p = (int64_t)pid;
    qev *e = push(o, TDX_EV_PROC_START, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_PROC_IDLE;
    e->ev.to = TDX_PROC_RUNNING;
    return R_ADVANCE;
}

static int adv_proc_stop(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    char nb[24];
    wp *s = cur.p == NO_ID ? NULL : wp_get(o, (uint64_t)cur.p);
    if (s) TRY(p_status(o, s, HINT_NONE));
    if (!s || !s->exists)
        return VERR("event %s for proc (%" PRId64 ") that doesn't exist", evname(o, cu->type, nb),
                    cur.p);
    if (s->status != PS_RUNNING && s->status != PS_SYSCALL)
        return VERR("%s event for proc that's not Running or Syscall", evname(o, cu->type, nb));
    CHECK(cur, MUST, MUST, MAY);
    s->status = PS_IDLE;
    s->st_fs = FS_WRITTEN;
    *nc = cur;
    nc->p = NO_ID;
    qev *e = push(o, TDX_EV_PROC_STOP, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_PROC_RUNNING;
    e->ev.to = TDX_PROC_IDLE;
    return R_ADVANCE;
}

static int adv_proc_steal(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    uint64_t pid = cu->args[0], seq = cu->args[1];
    wp *s = wp_find(o, pid);
    if (!s || s->st_fs == FS_UNKNOWN || !s->exists ||
        (s->status != PS_SYSCALL && s->status != PS_ABANDONED) ||
        !seq_ok(s->seq_valid, s->seq, seq))
        return R_DEFER;
    CHECK(cur, MUST, MAY, MAY);
    uint8_t old_status = s->status;
    s->status = PS_IDLE;
    s->st_fs = FS_WRITTEN;
    s->seq = seq;
    *nc = cur;
    qev *e;
    if (old_status == PS_ABANDONED) {
        e = push(o, TDX_EV_PROC_STEAL, cu, cur.m, cur.p, cur.g);
        e->ev.args[3] = old_status;
        e->ev.from = TDX_PROC_IDLE;
        e->ev.to = TDX_PROC_IDLE;
        return R_ADVANCE;
    }
    uint64_t mid = cu->args[2];
    if ((int64_t)mid == cur.m) {
        if (cur.p != (int64_t)pid)
            return VERR("tried to self-steal proc %" PRId64 " (thread %" PRId64
                        "), but got proc %" PRId64 " instead",
                        (int64_t)pid, (int64_t)mid, cur.p);
        nc->p = NO_ID;
    } else {
        wm *v = wm_get(o, mid);
        if (!v) return OOM(err);
        TRY(m_exists(o, v, 1));
        if (!v->exists) return VERR("stole proc from non-existent thread %" PRId64, (int64_t)mid);
        if (v->p_fs == FS_UNKNOWN && !o->carry) {
            /* The victim must hold the proc for the trace to be valid: assume exactly that. */
            v->guessed = 1;
            v->guess_p = (int64_t)pid;
            v->guess_g = NO_ID;
        }
        TRY(m_p(o, v));
        if (v->p != (int64_t)pid)
            return VERR("tried to steal proc %" PRId64 " from thread %" PRId64
                        ", but got proc %" PRId64 " instead",
                        (int64_t)pid, (int64_t)mid, v->p);
        m_set_p(v, NO_ID);
    }
    e = push(o, TDX_EV_PROC_STEAL, cu, cur.m, cur.p, cur.g);
    e->ev.args[3] = old_status;
    e->ev.from = TDX_PROC_RUNNING;
    e->ev.to = TDX_PROC_IDLE;
    return R_ADVANCE;
}

static int adv_go_status(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    uint64_t gid = cu->args[0], mid = cu->args[1], status = cu->args[2];
    if (status >= 5)
        return VERR("invalid status for goroutine %" PRId64 ": %" PRIu64, (int64_t)gid, status);
    uint8_t old = gostatus_to_state[status];
    wg *s = wg_get(o, gid);
    if (!s) return OOM(err);
    TRY(g_status(o, s, o->initial ? HINT_NONE : (int)status));
    if (s->exists) {
        if (s->status != status)
            return VERR("inconsistent status for goroutine %" PRId64 ": old %s vs. new %s",
                        (int64_t)gid, gostatus_name(s->status), gostatus_name((unsigned)status));
        s->seq_valid = 1;
        s->seq = 0;
    } else if (o->initial) {
        g_create(s, (uint8_t)status, 0);
        old = TDX_GO_UNDETERMINED;
    } else {
        return VERR(
            "found goroutine status for new goroutine after the first generation: id=%" PRId64
            " status=%s",
            (int64_t)gid, gostatus_name((unsigned)status));
    }
    *nc = cur;
    ctx outc = cur;
    if (status == GS_RUNNING) {
        nc->g = (int64_t)gid;
    } else if (status == GS_SYSCALL) {
        if (mid == TDX_NONE64)
            return VERR("found goroutine %" PRId64 " in syscall without a thread", (int64_t)gid);
        if ((int64_t)mid == cur.m) {
            if (!o->initial && cur.g != (int64_t)gid)
                return VERR("inconsistent thread for syscalling goroutine %" PRId64
                            ": thread has goroutine %" PRId64,
                            (int64_t)gid, cur.g);
            nc->g = (int64_t)gid;
        } else {
            wm *v = wm_get(o, mid);
            if (!v) return OOM(err);
            if (v->ex_fs == FS_UNKNOWN && !o->carry && v->g_fs == FS_UNKNOWN) {
                v->guessed = 1;
                v->guess_p = NO_ID;
                v->guess_g = (int64_t)gid;
            }
            TRY(m_exists(o, v, !o->initial));
            if (v->exists) {
                TRY(m_g(o, v));
                if (v->g != (int64_t)gid)
                    return VERR("inconsistent thread for syscalling goroutine %" PRId64
                                ": thread has goroutine %" PRId64,
                                (int64_t)gid, v->g);
                outc.g = v->g;
            } else {
                v->exists = 1;
                v->ex_fs = FS_WRITTEN;
                m_set_g(v, (int64_t)gid);
                m_set_p(v, NO_ID);
            }
            outc.m = (int64_t)mid;
        }
    }
    uint8_t t = cu->type;
    qev *e = push(o, t, cu, outc.m, outc.p, outc.g);
    e->ev.from = old;
    e->ev.to = gostatus_to_state[status];
    return R_ADVANCE;
}

static int adv_go_create(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    char nb[24];
    CHECK(cur, MUST, MUST, MAY);
    if (cur.g != NO_ID) {
        wg *c = wg_get(o, (uint64_t)cur.g);
        if (!c) return OOM(err);
        TRY(g_status(o, c, HINT_NONE));
        if (c->exists && c->status != GS_RUNNING)
            return VERR("%s event for goroutine that's not Running", evname(o, cu->type, nb));
    }
    uint64_t ng = cu->args[0];
    wg *s = wg_get(o, ng);
    if (!s) return OOM(err);
    TRY(g_status(o, s, HINT_ABSENT));
    if (s->exists)
        return VERR("tried to create goroutine (%" PRId64 ") that already exists", (int64_t)ng);
    bool blocked = cu->type == TDX_EV_GO_CREATE_BLOCKED;
    g_create(s, blocked ? GS_WAITING : GS_RUNNABLE, 0);
    *nc = cur;
    qev *e = push(o, cu->type, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_GO_NOTEXIST;
    e->ev.to = blocked ? TDX_GO_WAITING : TDX_GO_RUNNABLE;
    return R_ADVANCE;
}

/* The current goroutine's record, which must exist and have status `want`. */
static int cur_g(tdx_order *o, cursor *cu, ctx cur, uint8_t want, const char *state_name, wg **out,
                 tdx_err *err) {
    char nb[24];
    wg *s = cur.g == NO_ID ? NULL : wg_get(o, (uint64_t)cur.g);
    if (s) TRY(g_status(o, s, HINT_NONE));
    if (!s || !s->exists)
        return VERR("event %s for goroutine (%" PRId64 ") that doesn't exist",
                    evname(o, cu->type, nb), cur.g);
    if (s->status != want)
        return VERR("%s event for goroutine that's not %s", evname(o, cu->type, nb), state_name);
    *out = s;
    return 0;
}

static int adv_go_stop_exec(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    CHECK(cur, MUST, MUST, MUST);
    wg *s;
    int rc = cur_g(o, cu, cur, GS_RUNNING, "Running", &s, err);
    if (rc) return rc;
    *nc = cur;
    nc->g = NO_ID;
    qev *e = push(o, cu->type, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_GO_RUNNING;
    switch (cu->type) {
    case TDX_EV_GO_DESTROY:
        s->exists = 0;
        s->st_fs = FS_WRITTEN;
        e->ev.to = TDX_GO_NOTEXIST;
        break;
    case TDX_EV_GO_STOP:
        s->status = GS_RUNNABLE;
        s->st_fs = FS_WRITTEN;
        e->ev.to = TDX_GO_RUNNABLE;
        break;
    default:
        s->status = GS_WAITING;
        s->st_fs = FS_WRITTEN;
        e->ev.to = TDX_GO_WAITING;
        break;
    }
    return R_ADVANCE;
}

static int adv_go_start(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    uint64_t gid = cu->args[0], seq = cu->args[1];
    wg *s = wg_find(o, gid);
    if (!s || s->st_fs == FS_UNKNOWN || !s->exists || s->status != GS_RUNNABLE ||
        !seq_ok(s->seq_valid, s->seq, seq))
        return R_DEFER;
    CHECK(cur, MUST, MUST, MUST_NOT);
    s->status = GS_RUNNING;
    s->st_fs = FS_WRITTEN;
    s->seq = seq;
    *nc = cur;
    nc->g = (int64_t)gid;
    qev *e = push(o, TDX_EV_GO_START, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_GO_RUNNABLE;
    e->ev.to = TDX_GO_RUNNING;
    return R_ADVANCE;
}

static int adv_go_unblock(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    uint64_t gid = cu->args[0], seq = cu->args[1];
    wg *s = wg_find(o, gid);
    if (!s || s->st_fs == FS_UNKNOWN || !s->exists || s->status != GS_WAITING ||
        !seq_ok(s->seq_valid, s->seq, seq))
        return R_DEFER;
    s->status = GS_RUNNABLE;
    s->st_fs = FS_WRITTEN;
    s->seq = seq;
    *nc = cur;
    qev *e = push(o, TDX_EV_GO_UNBLOCK, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_GO_WAITING;
    e->ev.to = TDX_GO_RUNNABLE;
    (void)err;
    return R_ADVANCE;
}

static int adv_go_switch(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    CHECK(cur, MUST, MUST, MUST);
    wg *s;
    int rc = cur_g(o, cu, cur, GS_RUNNING, "Running", &s, err);
    if (rc) return rc;
    uint64_t next = cu->args[0], seq = cu->args[1];
    wg *n = wg_find(o, next);
    if (!n || n->st_fs == FS_UNKNOWN || !n->exists || n->status != GS_WAITING ||
        !seq_ok(n->seq_valid, n->seq, seq))
        return R_DEFER;
    qev *e = push(o, cu->type, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_GO_WAITING;
    e->ev.to = TDX_GO_RUNNABLE;
    if (cu->type == TDX_EV_GO_SWITCH) {
        s->status = GS_WAITING;
        s->st_fs = FS_WRITTEN;
        e = push(o, TDX_EV_GO_BLOCK, cu, cur.m, cur.p, cur.g);
        memset(e->ev.args, 0, sizeof e->ev.args); /* no reason, no stack */
        e->ev.from = TDX_GO_RUNNING;
        e->ev.to = TDX_GO_WAITING;
    } else {
        s->exists = 0;
        s->st_fs = FS_WRITTEN;
        e = push(o, TDX_EV_GO_DESTROY, cu, cur.m, cur.p, cur.g);
        memset(e->ev.args, 0, sizeof e->ev.args);
        e->ev.from = TDX_GO_RUNNING;
        e->ev.to = TDX_GO_NOTEXIST;
    }
    /* s may have moved if the vector grew; n was found before any insertion. */
    n = wg_find(o, next);
    n->status = GS_RUNNING;
    n->st_fs = FS_WRITTEN;
    n->seq = seq;
    *nc = cur;
    nc->g = (int64_t)next;
    e = push(o, TDX_EV_GO_START, cu, cur.m, cur.p, NO_ID);
    memset(e->ev.args, 0, sizeof e->ev.args);
    e->ev.args[0] = next;
    e->ev.args[1] = seq;
    e->ev.from = TDX_GO_RUNNABLE;
    e->ev.to = TDX_GO_RUNNING;
    return R_ADVANCE;
}

static int adv_syscall_begin(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    char nb[24];
    CHECK(cur, MUST, MUST, MUST);
    wg *s;
    int rc = cur_g(o, cu, cur, GS_RUNNING, "Running", &s, err);
    if (rc) return rc;
    s->status = GS_SYSCALL;
    s->st_fs = FS_WRITTEN;
    wp *p = wp_get(o, (uint64_t)cur.p);
    if (!p) return OOM(err);
    TRY(p_status(o, p, HINT_NONE));
    if (!p->exists)
        return VERR("uninitialized proc %" PRId64 " found during %s", cur.p,
                    evname(o, cu->type, nb));
    p->status = PS_SYSCALL;
    p->st_fs = FS_WRITTEN;
    uint64_t pseq = cu->args[0];
    if (!seq_ok(p->seq_valid, p->seq, pseq)) {
        char have[64];
        if (p->seq_valid)
            snprintf(have, sizeof have, "%" PRIu64 " (gen=%" PRIu64 ")", p->seq, o->gen);
        else
            snprintf(have, sizeof have, "? (gen<%" PRIu64 ")", o->gen);
        return VERR("failed to advance %s: can't make sequence: %s -> %" PRIu64 " (gen=%" PRIu64
                    ")",
                    evname(o, cu->type, nb), have, pseq, o->gen);
    }
    p->seq = pseq;
    *nc = cur;
    qev *e = push(o, TDX_EV_GO_SYSCALL_BEGIN, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_GO_RUNNING;
    e->ev.to = TDX_GO_SYSCALL;
    return R_ADVANCE;
}

static int adv_syscall_end(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    char nb[24];
    CHECK(cur, MUST, MUST, MUST);
    wg *s;
    int rc = cur_g(o, cu, cur, GS_SYSCALL, "Running", &s, err);
    if (rc) return rc;
    s->status = GS_RUNNING;
    s->st_fs = FS_WRITTEN;
    wp *p = wp_get(o, (uint64_t)cur.p);
    if (!p) return OOM(err);
    TRY(p_status(o, p, HINT_NONE));
    if (!p->exists)
        return VERR("uninitialized proc %" PRId64 " found during %s", cur.p,
                    evname(o, cu->type, nb));
    if (p->status != PS_SYSCALL)
        return VERR("expected proc %" PRId64 " in state Syscall, but got %s instead", cur.p,
                    procstatus_name(p->status));
    p->status = PS_RUNNING;
    p->st_fs = FS_WRITTEN;
    *nc = cur;
    qev *e = push(o, TDX_EV_GO_SYSCALL_END, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_GO_SYSCALL;
    e->ev.to = TDX_GO_RUNNING;
    return R_ADVANCE;
}

static int adv_syscall_end_blocked(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    char nb[24];
    if (cur.p != NO_ID) {
        wp *p = wp_get(o, (uint64_t)cur.p);
        if (!p) return OOM(err);
        TRY(p_status(o, p, HINT_NONE));
        if (!p->exists)
            return VERR("uninitialized proc %" PRId64 " found during %s", cur.p,
                        evname(o, cu->type, nb));
        if (p->status == PS_SYSCALL) return R_DEFER;
    }
    CHECK(cur, MUST, MAY, MUST);
    wg *s;
    int rc = cur_g(o, cu, cur, GS_SYSCALL, "Running", &s, err);
    if (rc) return rc;
    s->status = GS_RUNNABLE;
    s->st_fs = FS_WRITTEN;
    *nc = cur;
    nc->g = NO_ID;
    qev *e = push(o, TDX_EV_GO_SYSCALL_END_BLOCKED, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_GO_SYSCALL;
    e->ev.to = TDX_GO_RUNNABLE;
    return R_ADVANCE;
}

static int adv_create_syscall(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    CHECK(cur, MUST, MAY, MUST_NOT);
    uint64_t ng = cu->args[0];
    wg *s = wg_get(o, ng);
    if (!s) return OOM(err);
    TRY(g_status(o, s, HINT_ABSENT));
    if (s->exists)
        return VERR("tried to create goroutine (%" PRId64 ") in syscall that already exists",
                    (int64_t)ng);
    g_create(s, GS_SYSCALL, 0);
    *nc = cur;
    nc->g = (int64_t)ng;
    qev *e = push(o, TDX_EV_GO_CREATE_SYSCALL, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_GO_NOTEXIST;
    e->ev.to = TDX_GO_SYSCALL;
    return R_ADVANCE;
}

static int adv_destroy_syscall(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    char nb[24];
    CHECK(cur, MUST, MAY, MUST);
    wg *s;
    int rc = cur_g(o, cu, cur, GS_SYSCALL, "Syscall", &s, err);
    if (rc) return rc;
    s->exists = 0;
    s->st_fs = FS_WRITTEN;
    *nc = cur;
    nc->g = NO_ID;
    if (cur.p != NO_ID) {
        wp *p = wp_get(o, (uint64_t)cur.p);
        if (!p) return OOM(err);
        TRY(p_status(o, p, HINT_NONE));
        if (!p->exists)
            return VERR("found invalid proc %" PRId64 " during %s", cur.p, evname(o, cu->type, nb));
        if (p->status != PS_SYSCALL)
            return VERR("proc %" PRId64 " in unexpected state %s during %s", cur.p,
                        procstatus_name(p->status), evname(o, cu->type, nb));
        p->status = PS_ABANDONED;
        p->st_fs = FS_WRITTEN;
        nc->p = NO_ID;
        qev *x = push(o, TDX_EV_PROC_STEAL, cu, cur.m, cur.p, cur.g);
        memset(x->ev.args, 0, sizeof x->ev.args);
        x->ev.args[0] = (uint64_t)cur.p;
        x->ev.args[3] = PS_SYSCALL;
        x->ev.from = TDX_PROC_RUNNING;
        x->ev.to = TDX_PROC_IDLE;
    }
    qev *e = push(o, TDX_EV_GO_DESTROY_SYSCALL, cu, cur.m, cur.p, cur.g);
    e->ev.from = TDX_GO_SYSCALL;
    e->ev.to = TDX_GO_NOTEXIST;
    return R_ADVANCE;
}

static int adv_task_begin(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    uint64_t id = cu->args[0];
    wt *t = wt_get(o, id);
    if (!t) return OOM(err);
    TRY(t_load(o, t, true));
    if (t->exists) return VERR("task ID conflict: %" PRIu64, id);
    uint64_t parent = cu->args[1] == 0 ? TDX_NO_TASK : cu->args[1];
    tdx_str name;
    if (string_for_rule(o, cu->args[2], cu->type, &name, cu, err)) return R_ERROR;
    t->exists = 1;
    t->fs = FS_WRITTEN;
    t->parent = parent;
    t->name = name;
    CHECK(cur, MUST, MUST, MUST);
    *nc = cur;
    qev *e = push(o, TDX_EV_USER_TASK_BEGIN, cu, cur.m, cur.p, cur.g);
    e->ev.args[1] = parent;
    return R_ADVANCE;
}

static int adv_task_end(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    uint64_t id = cu->args[0];
    wt *t = wt_get(o, id);
    if (!t) return OOM(err);
    uint64_t parent = TDX_NO_TASK;
    uint32_t name = 0;
    bool fixup = false;
    if (t->fs == FS_UNKNOWN && !o->carry) {
        /* A task begun in an earlier generation: only this event's details depend on it, so
         * the in-order stage fills them in from the true state (tdx_order_fixups). */
        fixup = true;
        t->exists = 0;
        t->fs = FS_WRITTEN;
    }
    TRY(t_load(o, t, false));
    if (!fixup && t->exists) {
        parent = t->parent;
        name = tdx_gen_extra_string(o->g, t->name.p, t->name.n);
        if (name == UINT32_MAX) return OOM(err);
        t->exists = 0;
        t->fs = FS_WRITTEN;
    }
    CHECK(cur, MUST, MUST, MUST);
    *nc = cur;
    qev *e = push(o, TDX_EV_USER_TASK_END, cu, cur.m, cur.p, cur.g);
    e->ev.args[2] = parent;
    e->extra_str = name;
    e->has_extra_str = 1;
    e->fixup = fixup ? TDX_FIX_TASK : 0;
    return R_ADVANCE;
}

static int adv_region(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    CHECK(cur, MUST, MUST, MUST);
    bool begin = cu->type == TDX_EV_USER_REGION_BEGIN;
    tdx_region r = {cu->args[0], {0, 0}};
    if (string_for_rule(o, cu->args[1], cu->type, &r.name, cu, err)) return R_ERROR;
    wg *s = wg_get(o, (uint64_t)cur.g);
    if (!s) return OOM(err);
    TRY(g_status(o, s, HINT_NONE));
    if (!s->exists)
        return VERR("encountered EvUserRegion%s without known state for current goroutine %" PRId64,
                    begin ? "Begin" : "End", cur.g);
    TRY(g_regions(o, s));
    if (begin) {
        if (tdx_vec_push(&s->regions, r)) return OOM(err);
    } else if (s->rg_delta && !s->regions.n) {
        /* Popping into the carried stack: it must be empty there or hold this region. */
        if (!o->carry) {
            assume x = {A_REGION, s->id, s->rg_pops, r.task, r.name};
            if (tdx_vec_push(&o->log, x)) return OOM(err);
        }
        s->rg_pops++;
    } else if (s->regions.n) {
        tdx_region top = s->regions.v[s->regions.n - 1];
        if (top.task != r.task || !str_eq(top.name, r.name))
            return VERR("misuse of region in goroutine %" PRId64 ": region end {%" PRIu64
                        " %.*s} when the "
                        "inner-most active region start event is {%" PRIu64 " %.*s}",
                        cur.g, r.task, (int)r.name.n, (const char *)r.name.p, top.task,
                        (int)top.name.n, (const char *)top.name.p);
        s->regions.n--;
    }
    *nc = cur;
    push(o, cu->type, cu, cur.m, cur.p, cur.g);
    return R_ADVANCE;
}

static int adv_gc(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    uint64_t seq = cu->args[0];
    TRY(gc_load(o, cu->type, seq));
    *nc = cur;
    switch (cu->type) {
    case TDX_EV_GC_ACTIVE:
        if (o->initial) {
            if (o->gc_state != TDX_GC_UNDETERMINED)
                return VERR("GCActive in the first generation isn't first GC event");
            o->gc_seq = seq;
            o->gc_state = TDX_GC_RUNNING;
            o->gc_fs = FS_WRITTEN;
            break;
        }
        if (seq != o->gc_seq + 1) return R_DEFER;
        if (o->gc_state != TDX_GC_RUNNING)
            return VERR("encountered GCActive while GC was not in progress");
        o->gc_seq = seq;
        o->gc_fs = FS_WRITTEN;
        CHECK(cur, MUST, MUST, MUST);
        break;
    case TDX_EV_GC_BEGIN:
        if (o->gc_state == TDX_GC_UNDETERMINED) {
            o->gc_seq = seq;
            o->gc_state = TDX_GC_RUNNING;
            o->gc_fs = FS_WRITTEN;
            break;
        }
        if (seq != o->gc_seq + 1) return R_DEFER;
        if (o->gc_state == TDX_GC_RUNNING)
            return VERR("encountered GCBegin while GC was already in progress");
        o->gc_seq = seq;
        o->gc_state = TDX_GC_RUNNING;
        o->gc_fs = FS_WRITTEN;
        CHECK(cur, MUST, MUST, MUST);
        break;
    default: /* GCEnd */
        if (seq != o->gc_seq + 1) return R_DEFER;
        if (o->gc_state == TDX_GC_NOTRUNNING)
            return VERR("encountered GCEnd when GC was not in progress");
        if (o->gc_state == TDX_GC_UNDETERMINED)
            return VERR("encountered GCEnd when GC was in an undetermined state");
        o->gc_seq = seq;
        o->gc_state = TDX_GC_NOTRUNNING;
        o->gc_fs = FS_WRITTEN;
        CHECK(cur, MUST, MUST, MUST);
        break;
    }
    push(o, cu->type, cu, cur.m, cur.p, cur.g);
    return R_ADVANCE;
}

static int adv_simple(tdx_order *o, cursor *cu, ctx cur, ctx *nc, int rp, int rg, tdx_err *err) {
    CHECK(cur, MUST, rp, rg);
    *nc = cur;
    push(o, cu->type, cu, cur.m, cur.p, cur.g);
    return R_ADVANCE;
}

static int adv_sweep(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    if (cu->type == TDX_EV_GC_SWEEP_ACTIVE) {
        uint64_t pid = cu->args[0];
        wp *p = wp_get(o, pid);
        if (!p) return OOM(err);
        TRY(p_status(o, p, HINT_NONE));
        if (!p->exists)
            return VERR("encountered GCSweepActive for unknown proc %" PRId64, (int64_t)pid);
        TRY(p_ranges(o, p, TDX_EV_GC_SWEEP_BEGIN));
        if (rs_active(o, &p->rs, A_PRANGE, pid, TDX_EV_GC_SWEEP_BEGIN, cu, err)) return R_ERROR;
    } else {
        CHECK(cur, MUST, MUST, MAY);
        wp *p = wp_get(o, (uint64_t)cur.p);
        if (!p) return OOM(err);
        TRY(p_status(o, p, HINT_NONE));
        TRY(p_ranges(o, p, TDX_EV_GC_SWEEP_BEGIN));
        if (cu->type == TDX_EV_GC_SWEEP_BEGIN) {
            tdx_str none = {0, 0};
            if (rs_begin(o, &p->rs, A_PRANGE, p->id, TDX_EV_GC_SWEEP_BEGIN, 0, none, cu, err))
                return R_ERROR;
        } else {
            uint64_t desc;
            tdx_str name;
            bool carried;
            if (rs_end(o, &p->rs, A_PRANGE, p->id, TDX_EV_GC_SWEEP_BEGIN, &desc, &name, &carried,
                       cu, err))
                return R_ERROR;
        }
    }
    *nc = cur;
    push(o, cu->type, cu, cur.m, cur.p, cur.g);
    return R_ADVANCE;
}

static int adv_go_range(tdx_order *o, cursor *cu, ctx cur, ctx *nc, tdx_err *err) {
    char nb[24];
    uint8_t t = cu->type;
    if (t == TDX_EV_GC_MARK_ASSIST_ACTIVE) {
        uint64_t gid = cu->args[0];
        wg *s = wg_get(o, gid);
        if (!s) return OOM(err);
        TRY(g_status(o, s, HINT_NONE));
        if (!s->exists)
            return VERR("uninitialized goroutine %" PRId64 " found during %s", (int64_t)gid,
                        evname(o, t, nb));
        TRY(g_ranges(o, s, TDX_EV_GC_MARK_ASSIST_BEGIN));
        if (rs_active(o, &s->rs, A_GRANGE, gid, TDX_EV_GC_MARK_ASSIST_BEGIN, cu, err))
            return R_ERROR;
        *nc = cur;
        push(o, t, cu, cur.m, cur.p, cur.g);
        return R_ADVANCE;
    }
    CHECK(cur, MUST, MUST, MUST);
    wg *s = wg_get(o, (uint64_t)cur.g);
    if (!s) return OOM(err);
    TRY(g_status(o, s, HINT_NONE));
    if (!s->exists)
        return VERR(
            "encountered event of type %u without known state for current goroutine %" PRId64, t,
            cur.g);
    uint8_t rtyp = (t == TDX_EV_STW_BEGIN || t == TDX_EV_STW_END) ? TDX_EV_STW_BEGIN
                                                                  : TDX_EV_GC_MARK_ASSIST_BEGIN;
    TRY(g_ranges(o, s, rtyp));
    qev *e;
    uint32_t extra = 0;
    bool has_extra = false;
    uint64_t desc = 0;
    tdx_str kind = {0, 0};
    uint8_t fixup = 0;
    if (t == TDX_EV_STW_BEGIN || t == TDX_EV_GC_MARK_ASSIST_BEGIN) {
        if (t == TDX_EV_STW_BEGIN) {
            desc = cu->args[0];
            uint32_t si = tdx_gen_string(o->g, desc);
            if (si != UINT32_MAX) kind = o->g->strings.v[si];
        }
        if (rs_begin(o, &s->rs, A_GRANGE, s->id, t, desc, kind, cu, err)) return R_ERROR;
    } else {
        uint8_t st = t == TDX_EV_STW_END ? TDX_EV_STW_BEGIN : TDX_EV_GC_MARK_ASSIST_BEGIN;
        bool carried;
        if (rs_end(o, &s->rs, A_GRANGE, s->id, st, &desc, &kind, &carried, cu, err)) return R_ERROR;
        if (t == TDX_EV_STW_END && carried && !o->carry) {
            fixup = TDX_FIX_STW;
        } else if (t == TDX_EV_STW_END) {
            /* Go names the end from the begin's string id looked up in this generation; when
             * this generation lacks the id (Go would crash), keep the begin's own name. */
            uint32_t si = tdx_gen_string(o->g, desc);
            if (si == UINT32_MAX) {
                si = tdx_gen_extra_string(o->g, kind.p ? kind.p : (const uint8_t *)"", kind.n);
                if (si == UINT32_MAX) return OOM(err);
            }
            extra = si;
            has_extra = true;
        }
    }
    *nc = cur;
    e = push(o, t, cu, cur.m, cur.p, cur.g);
    if (t == TDX_EV_STW_END) e->ev.args[0] = desc;
    e->extra_str = extra;
    e->has_extra_str = has_extra;
    e->fixup = fixup;
    return R_ADVANCE;
}

/* Tries to advance the cursor's current event through the rules. */
static int advance(tdx_order *o, cursor *cu, tdx_err *err) {
    ctx cur = {NO_ID, NO_ID, NO_ID}, nc;
    wm *ms = NULL;
    if (cu->m != TDX_NONE64) {
        if (cu->mslot) {
            ms = &o->ms.v[cu->mslot - 1];
        } else {
            ms = wm_get(o, cu->m);
            if (!ms) return OOM(err);
            cu->mslot = (uint32_t)(ms - o->ms.v) + 1;
        }
        if (ms->ex_fs != FS_WRITTEN) {
            ms->exists = 1;
            ms->ex_fs = FS_WRITTEN;
        }
        if (ms->p_fs == FS_UNKNOWN) TRY(m_p(o, ms)); /* only the thread's first event reads */
        if (ms->g_fs == FS_UNKNOWN) TRY(m_g(o, ms));
        cur = (ctx){(int64_t)cu->m, ms->p, ms->g};
    }
    nc = cur;
    int rc;
    switch (cu->type) {
    case TDX_EV_PROCS_CHANGE:
    case TDX_EV_GO_LABEL:
    case TDX_EV_USER_LOG:
        rc = adv_simple(o, cu, cur, &nc, MUST, MUST, err);
        break;
    case TDX_EV_HEAP_ALLOC:
    case TDX_EV_HEAP_GOAL:
        rc = adv_simple(o, cu, cur, &nc, MUST, MAY, err);
        break;
    case TDX_EV_PROC_START:
        rc = adv_proc_start(o, cu, cur, &nc, err);
        break;
    case TDX_EV_PROC_STOP:
        rc = adv_proc_stop(o, cu, cur, &nc, err);
        break;
    case TDX_EV_PROC_STEAL:
        rc = adv_proc_steal(o, cu, cur, &nc, err);
        break;
    case TDX_EV_PROC_STATUS:
        rc = adv_proc_status(o, cu, ms, cur, &nc, err);
        break;
    case TDX_EV_GO_CREATE:
    case TDX_EV_GO_CREATE_BLOCKED:
        rc = adv_go_create(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GO_CREATE_SYSCALL:
        rc = adv_create_syscall(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GO_START:
        rc = adv_go_start(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GO_DESTROY:
    case TDX_EV_GO_STOP:
    case TDX_EV_GO_BLOCK:
        rc = adv_go_stop_exec(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GO_DESTROY_SYSCALL:
        rc = adv_destroy_syscall(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GO_UNBLOCK:
        rc = adv_go_unblock(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GO_SYSCALL_BEGIN:
        rc = adv_syscall_begin(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GO_SYSCALL_END:
        rc = adv_syscall_end(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GO_SYSCALL_END_BLOCKED:
        rc = adv_syscall_end_blocked(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GO_STATUS:
    case TDX_EV_GO_STATUS_STACK:
        rc = adv_go_status(o, cu, cur, &nc, err);
        break;
    case TDX_EV_STW_BEGIN:
    case TDX_EV_STW_END:
    case TDX_EV_GC_MARK_ASSIST_ACTIVE:
    case TDX_EV_GC_MARK_ASSIST_BEGIN:
    case TDX_EV_GC_MARK_ASSIST_END:
        rc = adv_go_range(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GC_ACTIVE:
    case TDX_EV_GC_BEGIN:
    case TDX_EV_GC_END:
        rc = adv_gc(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GC_SWEEP_ACTIVE:
    case TDX_EV_GC_SWEEP_BEGIN:
    case TDX_EV_GC_SWEEP_END:
        rc = adv_sweep(o, cu, cur, &nc, err);
        break;
    case TDX_EV_USER_TASK_BEGIN:
        rc = adv_task_begin(o, cu, cur, &nc, err);
        break;
    case TDX_EV_USER_TASK_END:
        rc = adv_task_end(o, cu, cur, &nc, err);
        break;
    case TDX_EV_USER_REGION_BEGIN:
    case TDX_EV_USER_REGION_END:
        rc = adv_region(o, cu, cur, &nc, err);
        break;
    case TDX_EV_GO_SWITCH:
    case TDX_EV_GO_SWITCH_DESTROY:
        rc = adv_go_switch(o, cu, cur, &nc, err);
        break;
    default:
        if (cu->type >= TDX_EV_SPAN && cu->type <= TDX_EV_GOROUTINE_STACK_FREE) {
            rc = adv_simple(o, cu, cur, &nc, MAY, MAY, err);
            break;
        }
        return VERR("bad event type found while ordering: %u", cu->type);
    }
    if (rc != R_ADVANCE) return rc;
    if (ms) {
        /* ms may have moved: the rules can add thread records. */
        ms = &o->ms.v[cu->mslot - 1];
        if (ms->p != nc.p) m_set_p(ms, nc.p);
        if (ms->g != nc.g) m_set_g(ms, nc.g);
    }
    return R_ADVANCE;
}

/* ---- post-processing and emission ---- */

static int deliver(tdx_order *o, tdx_event *e, tdx_err *err) {
    /* Go's "strictly increasing" fix-up within the generation (the first event is the Sync). */
    int64_t t = e->time;
    if (o->nemitted > 0 && t <= o->last_local) t = (int64_t)((uint64_t)o->last_local + 1);
    if (o->nemitted == 0) o->first_local = t;
    o->last_local = t;
    if (!o->emit) {
        o->nemitted++;
        return 0;
    }
    e->time = o->final_times ? tdx_time_floor(t, o->floor, o->nemitted) : t;
    o->nemitted++;
    if (o->emit(o->emit_ctx, e, o->g))
        return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "event consumer failed");
    return 0;
}

/* Resolves a queued event's ids against the generation tables (Go's validateTableIDs) and fills
 * in the details, then delivers it. */
static int finish_event(tdx_order *o, qev *q, tdx_err *err) {
    tdx_event *e = &q->ev;
    const tdx_evspec *sp = &tdx_specs[e->type];
    uint32_t stacks[2] = {0, 0}, strs[2] = {0, 0};
    for (int i = 0; i < 2 && sp->stack_args[i] >= 0; i++) {
        uint64_t id = e->args[(int)sp->stack_args[i]];
        uint32_t d = tdx_gen_stack(o->g, id);
        if (d == UINT32_MAX)
            return tdx_errf(err, TDX_EVALIDATE, e->off,
                            "found invalid stack ID %" PRIu64 " for event %s", id, sp->name);
        stacks[i] = d;
    }
    for (int i = 0; i < 2 && sp->string_args[i] >= 0; i++) {
        uint64_t id = e->args[(int)sp->string_args[i]];
        uint32_t d = tdx_gen_string(o->g, id);
        if (d == UINT32_MAX)
            return tdx_errf(err, TDX_EVALIDATE, e->off,
                            "found invalid string ID %" PRIu64 " for event %s", id, sp->name);
        strs[i] = d;
    }
    e->stack = stacks[0];
    e->str[0] = strs[0];
    e->str[1] = strs[1];
    if (q->has_extra_str) e->str[0] = q->extra_str;
    if (e->kind == TDX_KIND_STATE_TRANSITION) {
        switch (e->type) {
        case TDX_EV_PROC_START:
        case TDX_EV_PROC_STEAL:
        case TDX_EV_PROC_STATUS:
            e->res_kind = TDX_RES_PROC;
            e->res = (int64_t)e->args[0];
            break;
        case TDX_EV_PROC_STOP:
            e->res_kind = TDX_RES_PROC;
            e->res = e->p;
            break;
        case TDX_EV_GO_CREATE:
        case TDX_EV_GO_CREATE_BLOCKED:
            e->res_kind = TDX_RES_GOROUTINE;
            e->res = (int64_t)e->args[0];
            e->tstack = stacks[1];
            e->has_tstack = 1; /* Go keeps a handle to new_stack even when it is 0 */
            break;
        case TDX_EV_GO_CREATE_SYSCALL:
        case TDX_EV_GO_START:
        case TDX_EV_GO_UNBLOCK:
        case TDX_EV_GO_SWITCH:
        case TDX_EV_GO_SWITCH_DESTROY:
        case TDX_EV_GO_STATUS:
            e->res_kind = TDX_RES_GOROUTINE;
            e->res = (int64_t)e->args[0];
            break;
        case TDX_EV_GO_STATUS_STACK:
            e->res_kind = TDX_RES_GOROUTINE;
            e->res = (int64_t)e->args[0];
            e->tstack = e->stack;
            e->has_tstack = e->stack != 0;
            break;
        case TDX_EV_GO_STOP:
        case TDX_EV_GO_BLOCK:
        case TDX_EV_GO_SYSCALL_BEGIN:
            e->res_kind = TDX_RES_GOROUTINE;
            e->res = e->g;
            e->tstack = e->stack;
            e->has_tstack = e->stack != 0;
            break;
        default:
            e->res_kind = TDX_RES_GOROUTINE;
            e->res = e->g;
            break;
        }
    }
    if (q->fixup) {
        tdx_task_fixup f = {o->nemitted, q->fixup == TDX_FIX_TASK ? e->args[0] : (uint64_t)e->g,
                            q->fixup};
        if (tdx_vec_push(&o->fixups, f)) return OOM(err);
    }
    return deliver(o, e, err);
}

static int flush_queue(tdx_order *o, tdx_err *err) {
    for (int i = 0; i < o->nq; i++)
        if (finish_event(o, &o->q[i], err)) {
            o->nq = 0;
            return -1;
        }
    o->nq = 0;
    return 0;
}

static int emit_sample(tdx_order *o, const tdx_cpusample *s, tdx_err *err) {
    tdx_event e;
    memset(&e, 0, sizeof e);
    e.type = TDX_EV_CPU_SAMPLE;
    e.kind = TDX_KIND_STACK_SAMPLE;
    e.time = s->time;
    e.m = (int64_t)s->m;
    e.p = (int64_t)s->p;
    e.g = s->g == 0 ? NO_ID : (int64_t)s->g;
    e.off = s->off;
    e.args[0] = s->stack;
    uint32_t d = tdx_gen_stack(o->g, s->stack);
    if (d == UINT32_MAX)
        return tdx_errf(err, TDX_EVALIDATE, s->off,
                        "found invalid stack ID %" PRIu64 " for event CPUSample", s->stack);
    e.stack = d;
    return deliver(o, &e, err);
}

static int try_advance(tdx_order *o, size_t hi, tdx_err *err) {
    cursor *c = &o->cur.v[o->heap.v[hi]];
    int rc = advance(o, c, err);
    if (rc != R_ADVANCE) return rc;
    c = &o->cur.v[o->heap.v[hi]];
    int ok = cursor_next(o, c, err);
    if (ok < 0) return R_ERROR;
    if (ok) {
        o->hk.v[hi] = c->time;
        if (hi == 0)
            sift_down(o, 0); /* the usual case: nothing above the root */
        else
            heap_update(o, hi);
    } else {
        heap_remove(o, hi);
    }
    return R_ADVANCE;
}

static void dump_frontier(tdx_order *o, tdx_err *err) {
    char buf[sizeof err->msg];
    size_t n = (size_t)snprintf(buf, sizeof buf,
                                "broken trace: failed to advance: frontier:\n[gen=%" PRIu64 "]\n\n",
                                o->gen);
    for (size_t i = 0; i < o->heap.n && n < sizeof buf - 1; i++) {
        const cursor *c = &o->cur.v[o->heap.v[i]];
        const tdx_evspec *sp = &tdx_specs[c->type];
        n += (size_t)snprintf(buf + n, sizeof buf - n, "M %" PRId64 " [%s time=%" PRId64,
                              (int64_t)c->m, sp->name, c->time);
        for (int k = 1; k < sp->nargs && n < sizeof buf - 1; k++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, " %s=%" PRIu64, sp->args[k],
                                  c->args[k - 1]);
        if (n < sizeof buf - 1) n += (size_t)snprintf(buf + n, sizeof buf - n, "]\n");
    }
    uint64_t off = o->heap.n ? o->cur.v[o->heap.v[0]].ev_off : TDX_NO_OFFSET;
    tdx_errf(err, TDX_EVALIDATE, off, "%s", buf);
}

int tdx_order_generation(tdx_order *o, tdx_gen *g, const tdx_order_params *prm, tdx_err *err) {
    o->g = g;
    o->carry = prm->carry;
    o->initial = prm->initial;
    o->gen = g->frame.gen;
    o->emit = prm->emit;
    o->emit_ctx = prm->emit_ctx;
    o->final_times = prm->final_times;
    o->floor = prm->floor;
    o->nq = 0;
    o->why = NULL;
    o->fixups.n = 0;
    o->nemitted = 0;
    o->first_local = o->last_local = 0;
    o->next_sample = 0;
    clear_working(o);
    /* Frontier: one cursor per thread, in order of first appearance. */
    o->cur.n = o->heap.n = 0;
    if (tdx_vec_reserve(&o->cur, g->threads.n) || tdx_vec_reserve(&o->heap, g->threads.n) ||
        tdx_vec_reserve(&o->hk, g->threads.n + 1))
        return OOM(err);
    for (size_t i = 0; i < g->threads.n; i++) {
        cursor c;
        cursor_init(&c, g->threads.v[i].m, g->threads.v[i].first);
        int ok = cursor_next(o, &c, err);
        if (ok < 0) return TDX_ORDER_ERROR;
        if (!ok) continue;
        o->cur.v[o->cur.n] = c;
        o->heap.v[o->heap.n] = (uint32_t)o->cur.n;
        o->hk.v[o->heap.n] = c.time;
        o->cur.n++;
        o->heap.n++;
        o->hk.n = o->heap.n;
        sift_up(o, o->heap.n - 1);
    }
    o->hk.v[o->heap.n] = INT64_MAX; /* the sentinel (see sift_down) */
    /* The generation's Sync. */
    tdx_event s;
    memset(&s, 0, sizeof s);
    s.type = TDX_TYPE_SYNC;
    s.kind = TDX_KIND_SYNC;
    s.m = s.p = s.g = NO_ID;
    s.time = tdx_ticks_to_ns(g, g->frame.min_ts);
    s.off = g->frame.start_off;
    s.args[0] = prm->sync_n;
    if (g->has_clock) {
        s.has_clock = 1;
        s.args[1] = (uint64_t)tdx_ticks_to_ns(g, g->snap_ticks);
        s.args[2] = g->snap_mono;
        s.args[3] = g->snap_sec;
        s.sync_nsec = g->snap_nsec;
    }
    if (deliver(o, &s, err)) return TDX_ORDER_ERROR;
    for (;;) {
        bool samples_left = o->next_sample < g->samples.n;
        if (o->heap.n == 0 && !samples_left) break;
        if (samples_left && (o->heap.n == 0 || g->samples.v[o->next_sample].time < htime(o, 0))) {
            if (emit_sample(o, &g->samples.v[o->next_sample++], err)) return TDX_ORDER_ERROR;
            continue;
        }
        int rc = try_advance(o, 0, err);
        if (rc == R_DEFER) {
            /* Sort the frontier by time (a sorted array is still a heap) and try the others. */
            tdx_pdqsort(o->hk.v, o->heap.v, o->heap.n);
            rc = R_DEFER;
            for (size_t i = 1; i < o->heap.n; i++) {
                rc = try_advance(o, i, err);
                if (rc != R_DEFER) break;
            }
            if (rc == R_DEFER) {
                dump_frontier(o, err);
                return TDX_ORDER_ERROR;
            }
        }
        if (rc == R_SPEC) return TDX_ORDER_SPECULATION;
        if (rc < 0) return TDX_ORDER_ERROR; /* Go reports the error before queued events */
        if (flush_queue(o, err)) return TDX_ORDER_ERROR;
    }
    return TDX_ORDER_OK;
}

/* ---- proving a speculative run, and folding a generation into the carried state ---- */

bool tdx_order_check(tdx_order *o, const tdx_carry *c) {
    static const char *const names[] = {
        "goroutine", "proc",     "thread existence", "thread proc", "thread goroutine",
        "task",      "GC state", "goroutine range",  "proc range",  "region"};
    for (size_t i = 0; i < o->log.n; i++) {
        const assume *a = &o->log.v[i];
        o->why = names[a->kind];
        switch (a->kind) {
        case A_G: {
            const tdx_cg *x = carry_g(c, a->id);
            if ((x != NULL) != (a->a != 0)) return false;
            if (x && x->status != a->b) return false;
            break;
        }
        case A_P: {
            const tdx_cp *x = carry_p(c, a->id);
            if ((x != NULL) != (a->a != 0)) return false;
            if (x && x->status != a->b) return false;
            break;
        }
        case A_M_EX:
            if ((carry_m(c, a->id) != NULL) != (a->a != 0)) return false;
            break;
        case A_M_P: {
            const tdx_cm *x = carry_m(c, a->id);
            if ((x ? x->p : NO_ID) != (int64_t)a->b) return false;
            break;
        }
        case A_M_G: {
            const tdx_cm *x = carry_m(c, a->id);
            if ((x ? x->g : NO_ID) != (int64_t)a->b) return false;
            break;
        }
        case A_TASK:
            if ((carry_t(c, a->id) != NULL) != (a->a != 0)) return false;
            break;
        case A_GC:
            if (a->id == 1 && c->gc_state == TDX_GC_UNDETERMINED) break;
            if (c->gc_state != a->a || c->gc_seq != a->b) return false;
            break;
        case A_GRANGE:
        case A_PRANGE: {
            const tdx_rangevec *v = NULL;
            if (a->kind == A_GRANGE) {
                const tdx_cg *x = carry_g(c, a->id);
                v = x ? &x->ranges : NULL;
            } else {
                const tdx_cp *x = carry_p(c, a->id);
                v = x ? &x->ranges : NULL;
            }
            size_t cnt = 0;
            for (size_t k = 0; v && k < v->n; k++) cnt += v->v[k].typ == (uint8_t)a->a;
            if (a->a == TDX_EV_STW_BEGIN ? cnt != a->b : (cnt != 0) != (a->b != 0)) return false;
            break;
        }
        case A_REGION: {
            const tdx_cg *x = carry_g(c, a->id);
            size_t n = x ? x->regions.n : 0;
            if (a->a < n) {
                const tdx_region *r = &x->regions.v[n - 1 - a->a];
                if (r->task != a->b || !str_eq(r->name, a->s)) return false;
            }
            break;
        }
        }
    }
    o->why = NULL;
    return true;
}

const char *tdx_order_why(const tdx_order *o) {
    return o->why;
}

const tdx_task_fixup *tdx_order_fixups(const tdx_order *o, size_t *n) {
    *n = o->fixups.n;
    return o->fixups.v;
}

int tdx_task_fixup_apply(const tdx_carry *c, const tdx_task_fixup *f, tdx_gen *g, tdx_event *e) {
    if (f->kind == TDX_FIX_STW) {
        /* The first STW entry of the goroutine's carried list is the one this event ended. */
        const tdx_cg *x = carry_g(c, f->id);
        const tdx_range *r = NULL;
        for (size_t i = 0; x && i < x->ranges.n && !r; i++)
            if (x->ranges.v[i].typ == TDX_EV_STW_BEGIN) r = &x->ranges.v[i];
        if (!r) return 0; /* unreachable once the generation's assumptions are proven */
        e->args[0] = r->desc;
        uint32_t si = tdx_gen_string(g, r->desc);
        if (si == UINT32_MAX)
            si = tdx_gen_extra_string(g, r->name.p ? r->name.p : (const uint8_t *)"", r->name.n);
        if (si == UINT32_MAX) return -1;
        e->str[0] = si;
        return 0;
    }
    const tdx_ctask *t = carry_t(c, e->args[0]);
    e->args[2] = t ? t->parent : TDX_NO_TASK;
    e->str[0] = 0;
    if (t) {
        uint32_t s = tdx_gen_extra_string(g, t->name.p, t->name.n);
        if (s == UINT32_MAX) return -1;
        e->str[0] = s;
    }
    return 0;
}

void tdx_carry_init(tdx_carry *c) {
    memset(c, 0, sizeof *c);
}

void tdx_carry_free(tdx_carry *c) {
    for (size_t i = 0; i < c->gs.n; i++) {
        tdx_vec_free(&c->gs.v[i].regions);
        tdx_vec_free(&c->gs.v[i].ranges);
    }
    for (size_t i = 0; i < c->ps.n; i++) tdx_vec_free(&c->ps.v[i].ranges);
    tdx_vec_free(&c->gs);
    tdx_vec_free(&c->g_free);
    tdx_vec_free(&c->ps);
    tdx_vec_free(&c->ms);
    tdx_vec_free(&c->tasks);
    tdx_vec_free(&c->t_free);
    tdx_hmap_free(&c->g_idx);
    tdx_hmap_free(&c->p_idx);
    tdx_hmap_free(&c->m_idx);
    tdx_hmap_free(&c->t_idx);
    memset(c, 0, sizeof *c);
}

/* Applies a working range set to the carried list: a copy replaces it, a delta is replayed on it
 * with Go's list operations (append; remove the first entry of a type by swapping in the last). */
static int merge_ranges(tdx_rangevec *dst, const rset *rs) {
    if (rs->known) {
        dst->n = 0;
        if (tdx_vec_reserve(dst, rs->v.n)) return -1;
        if (rs->v.n) memcpy(dst->v, rs->v.v, rs->v.n * sizeof *rs->v.v);
        dst->n = rs->v.n;
        return 0;
    }
    if (!rs->delta) return 0;
    for (size_t i = 0; i < rs->ops.n; i++) {
        const rsop *op = &rs->ops.v[i];
        if (op->op == OP_BEGIN) {
            if (tdx_vec_push(dst, op->r)) return -1;
        } else {
            rs_local_take(dst, op->r.typ, true);
        }
    }
    return 0;
}

int tdx_order_merge(const tdx_order *o, tdx_carry *c, tdx_err *err) {
    for (size_t i = 0; i < o->gs.n; i++) {
        const wg *w = &o->gs.v[i];
        uint32_t idx = tdx_hmap_get(&c->g_idx, w->id);
        if (w->st_fs == FS_WRITTEN && !w->exists) {
            if (idx != TDX_HMAP_EMPTY) {
                c->gs.v[idx].regions.n = 0;
                c->gs.v[idx].ranges.n = 0;
                tdx_hmap_del(&c->g_idx, w->id);
                if (tdx_vec_push(&c->g_free, idx)) return OOM(err);
            }
            continue;
        }
        if (!w->exists && w->st_fs != FS_WRITTEN) continue; /* only looked at */
        if (idx == TDX_HMAP_EMPTY) {
            if (c->g_free.n) {
                idx = c->g_free.v[--c->g_free.n];
            } else {
                tdx_cg z = {0};
                if (tdx_vec_push(&c->gs, z)) return OOM(err);
                idx = (uint32_t)c->gs.n - 1;
            }
            c->gs.v[idx].id = w->id;
            c->gs.v[idx].regions.n = 0;
            c->gs.v[idx].ranges.n = 0;
            if (tdx_hmap_put(&c->g_idx, w->id, idx)) return OOM(err);
        }
        tdx_cg *cg = &c->gs.v[idx];
        if (w->st_fs == FS_WRITTEN) cg->status = w->status;
        if (w->rg_known || w->rg_delta) {
            if (w->rg_known)
                cg->regions.n = 0;
            else
                cg->regions.n -= w->rg_pops < cg->regions.n ? w->rg_pops : cg->regions.n;
            size_t base = cg->regions.n;
            if (tdx_vec_reserve(&cg->regions, base + w->regions.n)) return OOM(err);
            if (w->regions.n)
                memcpy(cg->regions.v + base, w->regions.v, w->regions.n * sizeof *w->regions.v);
            cg->regions.n = base + w->regions.n;
        }
        if (merge_ranges(&cg->ranges, &w->rs)) return OOM(err);
    }
    for (size_t i = 0; i < o->ps.n; i++) {
        const wp *w = &o->ps.v[i];
        if (!w->exists) continue; /* procs are never removed */
        uint32_t idx = tdx_hmap_get(&c->p_idx, w->id);
        if (idx == TDX_HMAP_EMPTY) {
            tdx_cp z = {.id = w->id};
            if (tdx_vec_push(&c->ps, z) || tdx_hmap_put(&c->p_idx, w->id, (uint32_t)c->ps.n - 1))
                return OOM(err);
            idx = (uint32_t)c->ps.n - 1;
        }
        tdx_cp *cp = &c->ps.v[idx];
        if (w->st_fs == FS_WRITTEN) cp->status = w->status;
        if (merge_ranges(&cp->ranges, &w->rs)) return OOM(err);
    }
    for (size_t i = 0; i < o->ms.n; i++) {
        const wm *w = &o->ms.v[i];
        uint32_t idx = tdx_hmap_get(&c->m_idx, w->id);
        if (idx == TDX_HMAP_EMPTY) {
            if (!(w->ex_fs == FS_WRITTEN && w->exists)) continue;
            tdx_cm z = {.id = w->id, .p = NO_ID, .g = NO_ID};
            if (tdx_vec_push(&c->ms, z) || tdx_hmap_put(&c->m_idx, w->id, (uint32_t)c->ms.n - 1))
                return OOM(err);
            idx = (uint32_t)c->ms.n - 1;
        }
        tdx_cm *cm = &c->ms.v[idx];
        if (w->p_fs == FS_WRITTEN) cm->p = w->p;
        if (w->g_fs == FS_WRITTEN) cm->g = w->g;
    }
    for (size_t i = 0; i < o->ts.n; i++) {
        const wt *w = &o->ts.v[i];
        if (w->fs != FS_WRITTEN) continue;
        uint32_t idx = tdx_hmap_get(&c->t_idx, w->id);
        if (!w->exists) {
            if (idx != TDX_HMAP_EMPTY) {
                tdx_hmap_del(&c->t_idx, w->id);
                if (tdx_vec_push(&c->t_free, idx)) return OOM(err);
            }
            continue;
        }
        if (idx == TDX_HMAP_EMPTY) {
            if (c->t_free.n) {
                idx = c->t_free.v[--c->t_free.n];
            } else {
                tdx_ctask z = {0};
                if (tdx_vec_push(&c->tasks, z)) return OOM(err);
                idx = (uint32_t)c->tasks.n - 1;
            }
            if (tdx_hmap_put(&c->t_idx, w->id, idx)) return OOM(err);
        }
        c->tasks.v[idx] = (tdx_ctask){w->id, w->parent, w->name};
    }
    if (o->gc_fs == FS_WRITTEN) {
        c->gc_state = o->gc_state;
        c->gc_seq = o->gc_seq;
    }
    c->ngens++;
    return 0;
}
