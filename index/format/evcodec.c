/* evcodec.c: event block encoding.
 *
 * Events are delivered in time order, and times are strictly increasing, so a block is the merge
 * of its threads' event sequences by time: each thread's sequence is coded on its own (type given
 * the thread's previous type, time as the delta to the thread's previous event) and the decoder
 * merges them back with a heap, which makes the interleaving of threads free. To keep one pass,
 * a thread's next type and time are coded right after its current event ("lookahead"), which is
 * when the decoder needs them to place the thread in its heap. Blocks whose times are not
 * strictly increasing (never produced by Go's fix-up, but possible in principle) name each
 * event's thread instead.
 *
 * Every field is coded as a symbol of a context-selected rANS table (rans.c); integers as a
 * size class (the symbol) plus raw low bits. Context P and G are predicted per thread; goroutines
 * by recency; stacks and strings by recency per (type, slot); values as deltas. Fields Go derives
 * from the type or the context (fixed transition states, resources that are the current P or G,
 * transition stacks equal to the event stack) are not stored. See docs/index-format.md. */
#include "index/format/evcodec.h"

#include <string.h>

#include "core/spec.h"
#include "core/varint.h"
#include "index/common/evstore.h"

enum {
    X_RES = 1 << 0,       /* transition resource from the arguments */
    X_RES_G = 1 << 1,     /* transition resource = context goroutine */
    X_RES_P = 1 << 2,     /* transition resource = context proc */
    X_STATE = 1 << 3,     /* from/to vary: stored */
    X_STACK = 1 << 4,     /* event stack stored */
    X_TSTACK = 1 << 5,    /* a separate transition stack stored (GoCreate*) */
    X_TSTACK_EQ = 1 << 6, /* transition stack = event stack */
    X_STR0 = 1 << 7,
    X_STR1 = 1 << 8,
};

typedef struct {
    uint16_t flags;
    uint8_t res_kind, from, to;
    uint8_t nvals;
    int8_t vals[4]; /* which args[] are stored */
} tfacts;

#define G TDX_RES_GOROUTINE
#define P TDX_RES_PROC
static const tfacts facts[TDX_EV_NTYPES] = {
    [TDX_EV_CPU_SAMPLE] = {X_STACK, 0, 0, 0, 0, {0}},
    [TDX_EV_PROCS_CHANGE] = {X_STACK, 0, 0, 0, 1, {0}},
    [TDX_EV_PROC_START] = {X_RES, P, TDX_PROC_IDLE, TDX_PROC_RUNNING, 0, {0}},
    [TDX_EV_PROC_STOP] = {X_RES_P, P, TDX_PROC_RUNNING, TDX_PROC_IDLE, 0, {0}},
    [TDX_EV_PROC_STEAL] = {X_RES | X_STATE, P, 0, 0, 0, {0}},
    [TDX_EV_PROC_STATUS] = {X_RES | X_STATE, P, 0, 0, 0, {0}},
    [TDX_EV_GO_CREATE] = {X_RES | X_STACK | X_TSTACK, G, TDX_GO_NOTEXIST, TDX_GO_RUNNABLE, 0, {0}},
    [TDX_EV_GO_CREATE_BLOCKED] =
        {X_RES | X_STACK | X_TSTACK, G, TDX_GO_NOTEXIST, TDX_GO_WAITING, 0, {0}},
    [TDX_EV_GO_CREATE_SYSCALL] = {X_RES, G, TDX_GO_NOTEXIST, TDX_GO_SYSCALL, 0, {0}},
    [TDX_EV_GO_START] = {X_RES, G, TDX_GO_RUNNABLE, TDX_GO_RUNNING, 0, {0}},
    [TDX_EV_GO_DESTROY] = {X_RES_G, G, TDX_GO_RUNNING, TDX_GO_NOTEXIST, 0, {0}},
    [TDX_EV_GO_DESTROY_SYSCALL] = {X_RES_G, G, TDX_GO_SYSCALL, TDX_GO_NOTEXIST, 0, {0}},
    [TDX_EV_GO_STOP] =
        {X_RES_G | X_STACK | X_TSTACK_EQ | X_STR0, G, TDX_GO_RUNNING, TDX_GO_RUNNABLE, 0, {0}},
    [TDX_EV_GO_BLOCK] =
        {X_RES_G | X_STACK | X_TSTACK_EQ | X_STR0, G, TDX_GO_RUNNING, TDX_GO_WAITING, 0, {0}},
    [TDX_EV_GO_UNBLOCK] = {X_RES | X_STACK, G, TDX_GO_WAITING, TDX_GO_RUNNABLE, 0, {0}},
    [TDX_EV_GO_SWITCH] = {X_RES, G, TDX_GO_WAITING, TDX_GO_RUNNABLE, 0, {0}},
    [TDX_EV_GO_SWITCH_DESTROY] = {X_RES, G, TDX_GO_WAITING, TDX_GO_RUNNABLE, 0, {0}},
    [TDX_EV_GO_SYSCALL_BEGIN] =
        {X_RES_G | X_STACK | X_TSTACK_EQ, G, TDX_GO_RUNNING, TDX_GO_SYSCALL, 0, {0}},
    [TDX_EV_GO_SYSCALL_END] = {X_RES_G, G, TDX_GO_SYSCALL, TDX_GO_RUNNING, 0, {0}},
    [TDX_EV_GO_SYSCALL_END_BLOCKED] = {X_RES_G, G, TDX_GO_SYSCALL, TDX_GO_RUNNABLE, 0, {0}},
    [TDX_EV_GO_STATUS] = {X_RES | X_STATE, G, 0, 0, 0, {0}},
    [TDX_EV_GO_STATUS_STACK] = {X_RES | X_STATE | X_STACK | X_TSTACK_EQ, G, 0, 0, 0, {0}},
    [TDX_EV_STW_BEGIN] = {X_STACK | X_STR0, 0, 0, 0, 0, {0}},
    [TDX_EV_STW_END] = {X_STR0, 0, 0, 0, 0, {0}},
    [TDX_EV_GC_BEGIN] = {X_STACK, 0, 0, 0, 0, {0}},
    [TDX_EV_GC_SWEEP_ACTIVE] = {0, 0, 0, 0, 1, {0}},
    [TDX_EV_GC_SWEEP_BEGIN] = {X_STACK, 0, 0, 0, 0, {0}},
    [TDX_EV_GC_SWEEP_END] = {0, 0, 0, 0, 2, {0, 1}},
    [TDX_EV_GC_MARK_ASSIST_ACTIVE] = {0, 0, 0, 0, 1, {0}},
    [TDX_EV_GC_MARK_ASSIST_BEGIN] = {X_STACK, 0, 0, 0, 0, {0}},
    [TDX_EV_HEAP_ALLOC] = {0, 0, 0, 0, 1, {0}},
    [TDX_EV_HEAP_GOAL] = {0, 0, 0, 0, 1, {0}},
    [TDX_EV_GO_LABEL] = {X_STR0, 0, 0, 0, 0, {0}},
    [TDX_EV_USER_TASK_BEGIN] = {X_STACK | X_STR0, 0, 0, 0, 2, {0, 1}},
    [TDX_EV_USER_TASK_END] = {X_STACK | X_STR0, 0, 0, 0, 2, {0, 2}},
    [TDX_EV_USER_REGION_BEGIN] = {X_STACK | X_STR0, 0, 0, 0, 1, {0}},
    [TDX_EV_USER_REGION_END] = {X_STACK | X_STR0, 0, 0, 0, 1, {0}},
    [TDX_EV_USER_LOG] = {X_STACK | X_STR0 | X_STR1, 0, 0, 0, 1, {0}},
    [TDX_EV_SPAN] = {0, 0, 0, 0, 3, {0, 1, 2}},
    [TDX_EV_SPAN_ALLOC] = {0, 0, 0, 0, 3, {0, 1, 2}},
    [TDX_EV_SPAN_FREE] = {0, 0, 0, 0, 1, {0}},
    [TDX_EV_HEAP_OBJECT] = {0, 0, 0, 0, 2, {0, 1}},
    [TDX_EV_HEAP_OBJECT_ALLOC] = {0, 0, 0, 0, 2, {0, 1}},
    [TDX_EV_HEAP_OBJECT_FREE] = {0, 0, 0, 0, 1, {0}},
    [TDX_EV_GOROUTINE_STACK] = {0, 0, 0, 0, 2, {0, 1}},
    [TDX_EV_GOROUTINE_STACK_ALLOC] = {0, 0, 0, 0, 2, {0, 1}},
    [TDX_EV_GOROUTINE_STACK_FREE] = {0, 0, 0, 0, 1, {0}},
};
#undef G
#undef P

/* ---- contexts: every (field, context) pair has its own table ---- */

#define NT TDX_EV_NTYPES /* type codes; the type symbol 0 (no such type) ends a thread */
#define T_START NT       /* the "previous type" of a thread's first event */
#define END_TYPE 0
#define HEAP_SHIFT_MAX 7 /* a block's HeapAlloc unit 2^hz: flag bits 3-5 */

enum {
    C_TYPE = 0,                /* + the thread's previous type (NT + 1) */
    C_DT = C_TYPE + NT + 1,    /* + type: time delta to the thread's previous event, in granules */
    C_RES = C_DT + NT,         /* + 8: time modulo the granule */
    C_THR = C_RES + 8,         /* explicit order: the thread index */
    C_MISS = C_THR + 1,        /* + type: which of P, G differ from the prediction */
    C_P = C_MISS + NT,         /* P + 1 when mispredicted */
    C_GOR = C_P + 1,           /* + type (NT: a mispredicted G): goroutine recency rank */
    C_GLIT = C_GOR + NT + 1,   /* + 2: goroutine literal (0: created ones, 1: others) */
    C_PROC = C_GLIT + 2,       /* + type: proc resource + 1 */
    C_STATE = C_PROC + NT,     /* + type: from | to << 4 */
    C_STK = C_STATE + NT,      /* + type * 2 + slot: stack recency rank */
    C_SLIT = C_STK + 2 * NT,   /* + type * 2 + slot: stack literal */
    C_STR = C_SLIT + 2 * NT,   /* + type * 2 + slot: string recency rank / new / literal */
    C_STRLIT = C_STR + 2 * NT, /* string literal */
    C_VAL = C_STRLIT + 1,      /* + type * 4 + k: value delta */
    C_TASK = C_VAL + 4 * NT,   /* + 6: task references (see put_task) */
    C_TASKLIT = C_TASK + 6,    /* task literal */
    C_COUNT = C_TASKLIT + 1
};

/* The lanes (independent coder states) fields go to. */
enum { L_SEQ = 0, L_IDS = 1, L_STK = 2, L_VAL = 3 };

static int ctx_field(uint32_t c) {
    if (c < C_DT) return TDX_EF_TYPE;
    if (c < C_THR) return TDX_EF_TIME;
    if (c < C_MISS) return TDX_EF_THREAD;
    if (c < C_GOR) return TDX_EF_CTX;
    if (c < C_STK) return TDX_EF_IDS;
    if (c < C_STR) return TDX_EF_STACK;
    if (c < C_VAL) return TDX_EF_STR;
    return TDX_EF_VAL;
}

const char *tdx_evcodec_field_name(int f) {
    static const char *const n[TDX_EF_COUNT] = {"type",  "time",   "thread", "ctx",   "ids",
                                                "stack", "string", "value",  "header"};
    return f >= 0 && f < TDX_EF_COUNT ? n[f] : "?";
}

/* Recency lists (move to front): a value in the list is coded as its position + 1, one that is not
 * as 0 and a literal. The decoder keeps the lists; the encoder computes positions (encrec). */
#define GOR_N 256
#define STK_N 256
#define STR_N 16
enum { STR_NEW = STR_N, STR_LIT = STR_N + 1 };

typedef struct {
    int64_t v[GOR_N];
    int n;
} gmtf;

typedef struct {
    uint32_t *v; /* STK_N entries, allocated on first use (decoder) */
    int n;
} smtf;

static inline int find32(const uint32_t *v, int n, uint32_t x) {
    for (int i = 0; i < n; i++)
        if (v[i] == x) return i;
    return -1;
}

/* Moves position pos (or, when pos < 0, a new value) to the front. */
static inline void front64(int64_t *v, int *n, int cap, int pos, int64_t x) {
    if (pos < 0) pos = *n < cap ? (*n)++ : cap - 1;
    memmove(v + 1, v, (size_t)pos * sizeof *v);
    v[0] = x;
}

static inline void front32(uint32_t *v, int *n, int cap, int pos, uint32_t x) {
    if (pos < 0) pos = *n < cap ? (*n)++ : cap - 1;
    memmove(v + 1, v, (size_t)pos * sizeof *v);
    v[0] = x;
}

/* Per-thread prediction of the next event's context: the previous event's context with the
 * effect of that event applied (a start binds its goroutine, a stop unbinds it, ...). */
static inline void predict_after(const tdx_event *e, int64_t *pp, int64_t *pg) {
    *pp = e->p;
    *pg = e->g;
    switch (e->type) {
    case TDX_EV_GO_START:
    case TDX_EV_GO_CREATE_SYSCALL:
        *pg = e->res;
        break;
    case TDX_EV_GO_STATUS:
    case TDX_EV_GO_STATUS_STACK:
        if (e->to == TDX_GO_RUNNING || e->to == TDX_GO_SYSCALL) *pg = e->res;
        break;
    case TDX_EV_GO_STOP:
    case TDX_EV_GO_BLOCK:
    case TDX_EV_GO_DESTROY:
    case TDX_EV_GO_SYSCALL_END_BLOCKED:
    case TDX_EV_GO_DESTROY_SYSCALL:
        *pg = TDX_NO_ID;
        break;
    case TDX_EV_PROC_START:
        *pp = e->res;
        break;
    case TDX_EV_PROC_STATUS:
        if (e->to == TDX_PROC_RUNNING) *pp = e->res;
        break;
    case TDX_EV_PROC_STOP:
        *pp = TDX_NO_ID;
        break;
    }
}

static inline int bitlen64(uint64_t v) {
    return v ? 64 - __builtin_clzll(v) : 0;
}

/* The model state both sides keep while walking a block. */
typedef struct {
    gmtf gor;
    int64_t gmax;    /* largest goroutine id coded so far (new goroutines come after it) */
    int64_t glast;   /* the last created goroutine's id */
    uint32_t maxstr; /* largest string id so far */
    smtf stk[2 * NT];
    struct {
        uint32_t v[STR_N];
        int n;
    } str[2 * NT];
    uint64_t val[NT][4];
    uint64_t lasttask; /* id of the last task begun */
    uint64_t gheap;    /* last HeapAlloc value */
    uint64_t hmax;     /* largest HeapAlloc value */
    /* goroutine -> its current task (open addressing; key INT64_MIN: empty) */
    struct gtask {
        int64_t g;
        uint64_t task;
    } * gt;
    size_t gtcap, gtn;
} model;

#define GT_EMPTY INT64_MIN

static int gt_reset(model *m) {
    if (!m->gt) {
        m->gtcap = 1024;
        if (!(m->gt = malloc(m->gtcap * sizeof *m->gt))) return -1;
    }
    for (size_t i = 0; i < m->gtcap; i++) m->gt[i].g = GT_EMPTY;
    m->gtn = 0;
    return 0;
}

static inline size_t gt_hash(int64_t g, size_t cap) {
    return (size_t)(((uint64_t)g * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* The slot of goroutine g (a new one reads task 0), or NULL on OOM. */
static struct gtask *gt_slot(model *m, int64_t g) {
    size_t i = gt_hash(g, m->gtcap);
    while (m->gt[i].g != GT_EMPTY) {
        if (m->gt[i].g == g) return &m->gt[i];
        i = (i + 1) & (m->gtcap - 1);
    }
    if (2 * (m->gtn + 1) > m->gtcap) {
        size_t ncap = m->gtcap * 2;
        struct gtask *n = malloc(ncap * sizeof *n);
        if (!n) return NULL;
        for (size_t k = 0; k < ncap; k++) n[k].g = GT_EMPTY;
        for (size_t k = 0; k < m->gtcap; k++)
            if (m->gt[k].g != GT_EMPTY) {
                size_t j = gt_hash(m->gt[k].g, ncap);
                /* n[] set above */
                // NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult)
                while (n[j].g != GT_EMPTY) j = (j + 1) & (ncap - 1);
                n[j] = m->gt[k];
            }
        free(m->gt);
        m->gt = n;
        m->gtcap = ncap;
        i = gt_hash(g, ncap);
        /* NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): n[] set above */
        while (m->gt[i].g != GT_EMPTY) i = (i + 1) & (ncap - 1);
    }
    m->gt[i] = (struct gtask){g, 0};
    m->gtn++;
    return &m->gt[i];
}

/* The stack list of context c, its storage allocated on first use (few contexts are used). */
static smtf *stk_list(model *m, int c) {
    smtf *l = &m->stk[c];
    if (!l->v && !(l->v = malloc(STK_N * sizeof *l->v))) return NULL;
    return l;
}

static void model_free(model *m) {
    free(m->gt);
    for (int i = 0; i < 2 * NT; i++) free(m->stk[i].v);
}

static void model_init(model *m) {
    m->gor.n = 0;
    m->gmax = m->glast = 0;
    m->maxstr = 0;
    for (int i = 0; i < 2 * NT; i++) m->stk[i].n = m->str[i].n = 0;
    memset(m->val, 0, sizeof m->val);
    m->lasttask = 0;
    m->gheap = m->hmax = 0;
}

typedef struct {
    int64_t m;
    int64_t pp, pg; /* predicted P and G of the next event */
    uint64_t q;     /* time of the previous event, in granules */
    uint64_t r;     /* and its remainder */
    int32_t first;  /* encoder: the thread's first event */
    uint8_t prev;   /* type of the previous event (T_START before the first) */
    uint8_t next;   /* decoder: type of the next event (END_TYPE: none) */
    int64_t next_t; /* decoder: time of the next event */
    uint64_t heap;  /* last HeapAlloc value of the thread (valid when has_heap) */
    uint8_t has_heap;
} thr;

/* ---- encoding ---- */

void tdx_evenc_init(tdx_evenc *e) {
    memset(e, 0, sizeof *e);
    tdx_rans_enc_init(&e->rc);
}

static void rec_free(void *r);

void tdx_evenc_free(tdx_evenc *e) {
    e->rc.xbits = NULL;
    free(e->xbits);
    tdx_rans_enc_free(&e->rc);
    free(e->work);
    if (e->model) model_free(e->model);
    free(e->model);
    rec_free(e->rec);
    memset(e, 0, sizeof *e);
}

/* The encoder's view of the recency lists. A value's position in a move-to-front list is the
 * number of distinct values used since its own last use; rather than searching the list, the
 * encoder keeps each value's last-use stamp (in a hash) and counts the later stamps with a
 * Fenwick tree holding a mark at every value's latest stamp: O(log n) per use. A value whose
 * position reaches the list's capacity has dropped out of the decoder's list: a miss. */
typedef struct {
    uint32_t *fw; /* 1-based over stamps 1..n */
    uint32_t n, now, marks;
} rtree;

static inline uint32_t fw_sum(const uint32_t *fw, uint32_t i) {
    uint32_t s = 0;
    for (; i; i &= i - 1) s += fw[i];
    return s;
}

static inline void fw_add(uint32_t *fw, uint32_t n, uint32_t i, uint32_t d) {
    for (; i <= n; i += i & (0u - i)) fw[i] += d;
}

/* Uses the value whose last stamp is *stamp (0: not used yet); returns its list position, or -1
 * when it is not in the list. */
static inline int rt_use(rtree *t, uint32_t *stamp, uint32_t cap) {
    int pos = -1;
    if (*stamp) {
        uint32_t r = t->marks - fw_sum(t->fw, *stamp);
        if (r < cap) pos = (int)r;
        fw_add(t->fw, t->n, *stamp, (uint32_t)-1);
        t->marks--;
    }
    *stamp = ++t->now;
    fw_add(t->fw, t->n, *stamp, 1);
    t->marks++;
    return pos;
}

/* Last-use stamps by key, valid for the block whose number they carry (no clearing). */
typedef struct {
    uint64_t key;
    uint32_t stamp, blk;
} stampe;

typedef struct {
    stampe *v;
    size_t cap; /* power of two, at least twice the uses of a block */
    uint32_t blk;
} stampmap;

static int sm_reset(stampmap *m, size_t uses) {
    size_t want = 1024;
    while (want < 2 * uses + 2) want <<= 1;
    if (want > m->cap) {
        free(m->v);
        if (!(m->v = calloc(want, sizeof *m->v))) return m->cap = 0, -1;
        m->cap = want;
        m->blk = 0;
    }
    if (++m->blk == 0) { /* wrapped: clear once */
        memset(m->v, 0, m->cap * sizeof *m->v);
        m->blk = 1;
    }
    return 0;
}

static inline uint32_t *sm_slot(stampmap *m, uint64_t key) {
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (m->cap - 1);
    while (m->v[i].blk == m->blk && m->v[i].key != key) i = (i + 1) & (m->cap - 1);
    if (m->v[i].blk != m->blk) m->v[i] = (stampe){key, 0, m->blk};
    return &m->v[i].stamp;
}

typedef struct {
    stampmap gmap, smap;
    rtree gor;
    rtree stk[2 * NT];
    uint32_t *pool;
    size_t poolcap;
} encrec;

static void rec_free(void *r) {
    encrec *R = r;
    if (!R) return;
    free(R->gmap.v);
    free(R->smap.v);
    free(R->pool);
    free(R);
}

static void put_gor(tdx_rans_enc *rc, model *M, encrec *R, uint32_t ctx, int lit, int64_t g) {
    int pos = rt_use(&R->gor, sm_slot(&R->gmap, (uint64_t)g), GOR_N);
    tdx_rans_put_uint(rc, L_IDS, ctx, (uint32_t)(pos + 1));
    if (pos < 0) {
        int64_t *ref = lit ? &M->gmax : &M->glast;
        tdx_rans_put_uint(rc, L_IDS, C_GLIT + lit,
                          tdx_zigzag((int64_t)((uint64_t)g - (uint64_t)*ref)));
        M->glast = lit ? M->glast : g;
    }
    if (g > M->gmax) M->gmax = g;
}

static void put_stack(tdx_rans_enc *rc, encrec *R, int c, uint32_t s) {
    int pos = rt_use(&R->stk[c], sm_slot(&R->smap, (uint64_t)c << 32 | s), STK_N);
    tdx_rans_put_uint(rc, L_STK, C_STK + c, (uint32_t)(pos + 1));
    if (pos < 0) tdx_rans_put_uint(rc, L_STK, C_SLIT + c, s);
}

/* Sizes the trees for a block: stack contexts get one stamp per event of their type. */
static int rec_reset(encrec *R, const uint32_t *type_count, size_t n) {
    size_t need = 2 * n + 2;
    for (int ty = 0; ty < NT; ty++)
        if (facts[ty].flags & (X_STACK | X_TSTACK)) need += 2 * ((size_t)type_count[ty] + 1);
    if (need > R->poolcap) {
        free(R->pool);
        if (!(R->pool = malloc(need * sizeof *R->pool))) return R->poolcap = 0, -1;
        R->poolcap = need;
    }
    memset(R->pool, 0, need * sizeof *R->pool);
    uint32_t *p = R->pool;
    R->gor = (rtree){p, (uint32_t)(2 * n + 1), 0, 0};
    p += 2 * n + 2;
    for (int c = 0; c < 2 * NT; c++) {
        uint32_t k = facts[c / 2].flags & (X_STACK | X_TSTACK) ? type_count[c / 2] : 0;
        R->stk[c] = (rtree){p, k, 0, 0};
        p += k ? k + 1 : 0;
    }
    if (sm_reset(&R->gmap, 2 * n) || sm_reset(&R->smap, 2 * n)) return -1;
    return 0;
}

static void put_str(tdx_rans_enc *rc, model *M, int c, uint32_t s) {
    int pos = find32(M->str[c].v, M->str[c].n, s);
    if (pos >= 0) {
        tdx_rans_put(rc, L_VAL, C_STR + c, (unsigned)pos);
    } else if (s == M->maxstr + 1) {
        tdx_rans_put(rc, L_VAL, C_STR + c, STR_NEW);
    } else {
        tdx_rans_put(rc, L_VAL, C_STR + c, STR_LIT);
        tdx_rans_put_uint(rc, L_VAL, C_STRLIT, tdx_zigzag((int64_t)s - (int64_t)M->maxstr));
    }
    if (s > M->maxstr) M->maxstr = s;
    front32(M->str[c].v, &M->str[c].n, STR_N, pos, s);
}

/* Task references: tokens 0: the goroutine's current task, 1: a literal (delta to the last task
 * begun), 2: no task (parents). */
enum { TK_CUR = 0, TK_LIT = 1, TK_NONE = 2 };

static void put_task(tdx_rans_enc *rc, model *M, int c, uint64_t v, uint64_t cur, int none_ok) {
    if (v == cur) {
        tdx_rans_put(rc, L_VAL, C_TASK + c, TK_CUR);
    } else if (none_ok && v == TDX_NO_TASK) {
        tdx_rans_put(rc, L_VAL, C_TASK + c, TK_NONE);
    } else {
        tdx_rans_put(rc, L_VAL, C_TASK + c, TK_LIT);
        tdx_rans_put_uint(rc, L_VAL, C_TASKLIT, tdx_zigzag((int64_t)(v - M->lasttask)));
    }
}

static int get_task(tdx_rans_dec *d, model *M, int c, uint64_t cur, int none_ok, uint64_t *v) {
    unsigned k = tdx_rans_get(d, L_VAL, C_TASK + c);
    if (k == TK_CUR)
        *v = cur;
    else if (k == TK_NONE && none_ok)
        *v = TDX_NO_TASK;
    else if (k == TK_LIT)
        *v = M->lasttask + (uint64_t)tdx_unzigzag(tdx_rans_get_uint(d, L_VAL, C_TASKLIT));
    else
        return -1;
    if (k == TK_LIT && (*v == cur || (none_ok && *v == TDX_NO_TASK))) return -1;
    return 0;
}

static inline void heap_seen(model *M, thr *t, uint64_t v) {
    t->heap = M->gheap = v;
    t->has_heap = 1;
    if (v > M->hmax) M->hmax = v;
}

/* Values of the event: tasks against the goroutine's current task; HeapAlloc against the block's
 * last value, or (heap_thr) in a run of the thread's HeapAllocs against the thread's last value
 * and otherwise against the block's largest, in units of 2^hz (every HeapAlloc value of the block
 * is a multiple of it); the rest as deltas per (type, arg). */
static int put_vals(tdx_rans_enc *rc, model *M, thr *t, const tdx_event *e, const tfacts *f,
                    int heap_thr, int hz) {
    switch (e->type) {
    case TDX_EV_HEAP_ALLOC: {
        int run = heap_thr && t->prev == TDX_EV_HEAP_ALLOC && t->has_heap;
        uint64_t pred = run ? t->heap : heap_thr ? M->hmax : M->gheap;
        /* a multiple of 2^hz (so is pred, a value of the block or 0): the division is exact */
        int64_t delta = (int64_t)(e->args[0] - pred) / ((int64_t)1 << hz);
        tdx_rans_put_uint(rc, L_VAL, C_VAL + e->type * 4 + run, tdx_zigzag(delta));
        heap_seen(M, t, e->args[0]);
        return 0;
    }
    case TDX_EV_USER_TASK_BEGIN:
    case TDX_EV_USER_TASK_END:
    case TDX_EV_USER_REGION_BEGIN:
    case TDX_EV_USER_REGION_END:
    case TDX_EV_USER_LOG: {
        struct gtask *gt = gt_slot(M, e->g);
        if (!gt) return -1;
        uint64_t id = e->args[0];
        if (e->type == TDX_EV_USER_TASK_BEGIN) {
            tdx_rans_put_uint(rc, L_VAL, C_VAL + e->type * 4,
                              tdx_zigzag((int64_t)(id - M->lasttask)));
            put_task(rc, M, 0, e->args[1], gt->task, 1);
            M->lasttask = id;
        } else if (e->type == TDX_EV_USER_TASK_END) {
            put_task(rc, M, 1, id, gt->task, 0);
            put_task(rc, M, 2, e->args[2], gt->task, 1);
            id = 0;
        } else {
            put_task(rc, M, 3 + (e->type - TDX_EV_USER_REGION_BEGIN), id, gt->task, 0);
        }
        gt->task = id;
        return 0;
    }
    }
    for (int k = 0; k < f->nvals; k++) {
        uint64_t v = e->args[(int)f->vals[k]];
        /* Metrics move slowly: code the change from the last value of the same metric. */
        uint64_t *last = &M->val[e->type][k];
        tdx_rans_put_uint(rc, L_VAL, C_VAL + e->type * 4 + k, tdx_zigzag((int64_t)(v - *last)));
        *last = v;
    }
    return 0;
}

static int get_vals(tdx_rans_dec *d, model *M, thr *t, tdx_event *e, const tfacts *f, int heap_thr,
                    int hz) {
    switch (e->type) {
    case TDX_EV_HEAP_ALLOC: {
        int run = heap_thr && t->prev == TDX_EV_HEAP_ALLOC && t->has_heap;
        uint64_t pred = run ? t->heap : heap_thr ? M->hmax : M->gheap;
        uint64_t delta =
            (uint64_t)tdx_unzigzag(tdx_rans_get_uint(d, L_VAL, C_VAL + e->type * 4 + run));
        e->args[0] = pred + (delta << hz);
        heap_seen(M, t, e->args[0]);
        return 0;
    }
    case TDX_EV_USER_TASK_BEGIN:
    case TDX_EV_USER_TASK_END:
    case TDX_EV_USER_REGION_BEGIN:
    case TDX_EV_USER_REGION_END:
    case TDX_EV_USER_LOG: {
        struct gtask *gt = gt_slot(M, e->g);
        if (!gt) return -1;
        uint64_t id;
        if (e->type == TDX_EV_USER_TASK_BEGIN) {
            id = M->lasttask +
                 (uint64_t)tdx_unzigzag(tdx_rans_get_uint(d, L_VAL, C_VAL + e->type * 4));
            if (get_task(d, M, 0, gt->task, 1, &e->args[1])) return -1;
            M->lasttask = id;
        } else if (e->type == TDX_EV_USER_TASK_END) {
            if (get_task(d, M, 1, gt->task, 0, &id) || get_task(d, M, 2, gt->task, 1, &e->args[2]))
                return -1;
        } else {
            if (get_task(d, M, 3 + (e->type - TDX_EV_USER_REGION_BEGIN), gt->task, 0, &id))
                return -1;
        }
        e->args[0] = id;
        gt->task = e->type == TDX_EV_USER_TASK_END ? 0 : id;
        return 0;
    }
    }
    for (int k = 0; k < f->nvals; k++) {
        uint64_t *last = &M->val[e->type][k];
        *last += (uint64_t)tdx_unzigzag(tdx_rans_get_uint(d, L_VAL, C_VAL + e->type * 4 + k));
        e->args[(int)f->vals[k]] = *last;
    }
    return 0;
}

/* The thread's next type and time (lookahead), or END_TYPE when it has no more events. */
static void put_ahead(tdx_rans_enc *rc, model *M, thr *t, const tdx_event *e, int gs) {
    tdx_rans_put(rc, L_SEQ, C_TYPE + t->prev, e ? e->type : END_TYPE);
    if (!e) return;
    uint64_t q = (uint64_t)e->time >> gs, dq = q - t->q;
    tdx_rans_put_uint(rc, L_SEQ, C_DT + e->type, dq);
    if (gs) {
        uint64_t r = (uint64_t)e->time & ((1u << gs) - 1);
        tdx_rans_put(rc, L_SEQ, C_RES + (dq < 3 ? (unsigned)dq : 3) * 2 + (t->r != 0), (unsigned)r);
        t->r = r;
    }
    t->q = q;
}

typedef struct {
    thr *t;
    int32_t *ti, *next;
    uint32_t *hash; /* thread lookup by m: open addressing, index + 1 */
} encwork;

static int enc_work(tdx_evenc *enc, size_t n, encwork *w) {
    size_t hcap = 64;
    while (hcap < 2 * (n + 1)) hcap <<= 1;
    size_t need = (n + 1) * sizeof(thr) + 2 * (n + 1) * sizeof(int32_t) + hcap * sizeof(uint32_t);
    if (need > enc->work_cap) {
        free(enc->work);
        enc->work = malloc(need);
        if (!enc->work) {
            enc->work_cap = 0;
            return -1;
        }
        enc->work_cap = need;
    }
    uint8_t *p = enc->work;
    w->t = (thr *)p;
    p += (n + 1) * sizeof(thr);
    w->ti = (int32_t *)p;
    p += (n + 1) * sizeof(int32_t);
    w->next = (int32_t *)p;
    p += (n + 1) * sizeof(int32_t);
    w->hash = (uint32_t *)p;
    memset(w->hash, 0, hcap * sizeof(uint32_t));
    return (int)(hcap - 1);
}

static void add_stats(tdx_evenc *enc, size_t bytes) {
    const tdx_rans_enc *rc = &enc->rc;
    double tot = 0;
    for (uint32_t c = 0; c < C_COUNT; c++) {
        enc->stat[ctx_field(c)] += (double)rc->xbits[c];
        tot += (double)rc->xbits[c];
        rc->xbits[c] = 0;
    }
    for (size_t i = 0; i < rc->tabs.n; i++) {
        const tdx_rans_etab *t = &rc->tabs.v[i];
        if (!t->bits) continue;
        double b = 0;
        for (int s = 0; s < 256; s++)
            if (t->count[s])
                b +=
                    t->count[s] * ((double)t->bits -
                                   __builtin_log2((double)((1u << t->bits) - t->sym[s].cmpl_freq)));
        enc->stat[ctx_field(t->ctx)] += b;
        tot += b;
    }
    enc->stat[TDX_EF_HEADER] += (double)bytes * 8 - tot;
}

int tdx_evenc_block(tdx_evenc *enc, const tdx_event *ev, size_t n, tdx_buf *out) {
    encwork w;
    for (size_t i = 0; i < n; i++)
        if (ev[i].type >= NT || ev[i].type == END_TYPE) return -1;
    int hmask = enc_work(enc, n, &w);
    if (hmask < 0) return -1;
    if (!enc->rec && !(enc->rec = calloc(1, sizeof(encrec)))) return -1;
    encrec *R = enc->rec;
    uint32_t type_count[NT] = {0};
    if (!enc->model && !(enc->model = calloc(1, sizeof(model)))) return -1;
    if (enc->stats && !enc->xbits && !(enc->xbits = calloc(C_COUNT, sizeof(uint64_t)))) return -1;
    enc->rc.xbits = enc->stats ? enc->xbits : NULL;
    model *M = enc->model;
    /* Threads in first-use order, each event's thread and the next event of the same thread;
     * whether times increase strictly (then the decoder merges by time); the time granule; the
     * HeapAlloc values' common power of two (Go's heap figures are multiples of 8). */
    size_t nthr = 0, odd = 0;
    int hz = HEAP_SHIFT_MAX;
    int mono = 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = ((uint64_t)ev[i].m * 0x9E3779B97F4A7C15ull) >> 40;
        uint32_t j;
        for (;;) {
            uint32_t x = w.hash[h & (uint64_t)hmask];
            if (!x) {
                j = (uint32_t)nthr++;
                w.hash[h & (uint64_t)hmask] = j + 1;
                w.t[j] = (thr){.m = ev[i].m,
                               .pp = TDX_NO_ID,
                               .pg = TDX_NO_ID,
                               .first = (int32_t)i,
                               .prev = T_START};
                w.t[j].q = (uint64_t)i; /* last event so far (relinked below) */
                break;
            }
            if (w.t[x - 1].m == ev[i].m) {
                j = x - 1;
                w.next[w.t[j].q] = (int32_t)i;
                w.t[j].q = (uint64_t)i;
                break;
            }
            h++;
        }
        w.ti[i] = (int32_t)j;
        w.next[i] = -1;
        type_count[ev[i].type]++;
        if (i && ev[i].time <= ev[i - 1].time) mono = 0;
        odd += (ev[i].time & 63) != 0;
        if (ev[i].type == TDX_EV_HEAP_ALLOC && ev[i].args[0]) {
            int z = __builtin_ctzll(ev[i].args[0]);
            if (z < hz) hz = z;
        }
    }
    if (!type_count[TDX_EV_HEAP_ALLOC]) hz = 0;
    /* HeapAlloc: predicted from the thread's last value or from the block's, whichever the
     * block's values fit better (Go's heap total moves a little between events; a simulation
     * may keep a figure per thread). Estimated by the bits of the deltas. */
    uint64_t cost_blk = 0, cost_thr = 0, lastb = 0, maxb = 0;
    for (size_t i = 0; i < n; i++) {
        thr *t = &w.t[w.ti[i]];
        if (ev[i].type == TDX_EV_HEAP_ALLOC) {
            uint64_t v = ev[i].args[0];
            int run = t->prev == TDX_EV_HEAP_ALLOC && t->has_heap;
            cost_blk += (uint64_t)bitlen64(tdx_zigzag((int64_t)(v - lastb)));
            cost_thr += (uint64_t)bitlen64(tdx_zigzag((int64_t)(v - (run ? t->heap : maxb))));
            t->heap = lastb = v;
            t->has_heap = 1;
            if (v > maxb) maxb = v;
        }
        t->prev = ev[i].type;
    }
    int heap_thr = cost_thr < cost_blk;
    for (size_t j = 0; j < nthr; j++) w.t[j].has_heap = 0, w.t[j].heap = 0, w.t[j].prev = T_START;
    /* Granule 64 ns (Go's tick) unless many times are not multiples of it. */
    int gs = odd * 8 <= n ? 6 : 0;
    int64_t t0 = n ? ev[0].time : 0;
    tdx_rans_enc *rc = &enc->rc;
    if (tdx_rans_enc_reset(rc, C_COUNT) || tdx_rans_enc_reserve(rc, 12 * n + 4 * nthr + 64, 0))
        return -1;
    model_init(M);
    if (gt_reset(M) || rec_reset(R, type_count, n)) return -1;
    for (size_t j = 0; j < nthr; j++) {
        thr *t = &w.t[j];
        t->q = (uint64_t)t0 >> gs;
        t->r = 0;
        put_ahead(rc, M, t, &ev[t->first], gs);
    }
    for (size_t i = 0; i < n; i++) {
        const tdx_event *e = &ev[i];
        thr *t = &w.t[w.ti[i]];
        if (!mono) tdx_rans_put_uint(rc, L_SEQ, C_THR, (uint64_t)w.ti[i]);
        unsigned miss = (e->p != t->pp) | (e->g != t->pg) << 1;
        tdx_rans_put(rc, L_IDS, C_MISS + e->type, miss);
        if (miss & 1) tdx_rans_put_uint(rc, L_IDS, C_P, (uint64_t)e->p + 1);
        if (miss & 2) put_gor(rc, M, R, C_GOR + NT, 1, e->g);
        if (e->type == TDX_TYPE_SYNC) {
            tdx_rans_putbits(rc, e->args[0], 64);
            tdx_rans_putbits(rc, e->has_clock != 0, 1);
            if (e->has_clock) {
                for (int k = 1; k < 4; k++) tdx_rans_putbits(rc, e->args[k], 64);
                tdx_rans_putbits(rc, e->sync_nsec, 64);
            }
        } else {
            const tfacts *f = &facts[e->type < NT ? e->type : 0];
            if (f->flags & X_RES) {
                if (f->res_kind == TDX_RES_GOROUTINE)
                    put_gor(rc, M, R, C_GOR + e->type,
                            e->type != TDX_EV_GO_CREATE && e->type != TDX_EV_GO_CREATE_BLOCKED &&
                                e->type != TDX_EV_GO_CREATE_SYSCALL,
                            e->res);
                else
                    tdx_rans_put_uint(rc, L_IDS, C_PROC + e->type, (uint64_t)e->res + 1);
            }
            if (f->flags & X_STATE)
                tdx_rans_put(rc, L_IDS, C_STATE + e->type, (unsigned)(e->from | e->to << 4));
            if (f->flags & X_STACK) put_stack(rc, R, e->type * 2, e->stack);
            if (f->flags & X_TSTACK) put_stack(rc, R, e->type * 2 + 1, e->tstack);
            if (f->flags & X_STR0) put_str(rc, M, e->type * 2, e->str[0]);
            if (f->flags & X_STR1) put_str(rc, M, e->type * 2 + 1, e->str[1]);
            if (put_vals(rc, M, t, e, f, heap_thr, hz)) return -1;
        }
        predict_after(e, &t->pp, &t->pg);
        t->prev = e->type;
        put_ahead(rc, M, t, w.next[i] >= 0 ? &ev[w.next[i]] : NULL, gs);
    }
    size_t start = out->n;
    int rc2 = 0;
    uint8_t flags = (uint8_t)((mono ? 0 : 1) | heap_thr << 1 | (gs ? 4 : 0) | hz << 3);
    rc2 |= tdx_vec_push(out, flags);
    rc2 |= tdx_buf_uvarint(out, nthr);
    int64_t pm = 0;
    for (size_t j = 0; j < nthr; j++) {
        rc2 |= tdx_buf_uvarint(out, tdx_zigzag((int64_t)((uint64_t)w.t[j].m - (uint64_t)pm)));
        pm = w.t[j].m;
    }
    rc2 |= tdx_buf_uvarint(out, tdx_zigzag(t0));
    if (rc2 || tdx_rans_enc_finish(rc, out)) return -1;
    if (enc->stats) add_stats(enc, out->n - start);
    return 0;
}

/* ---- decoding ---- */

typedef struct {
    tdx_rans_dec d;
    model M;
} decwork;

static int get_gor(tdx_rans_dec *d, model *M, uint32_t ctx, int lit, int64_t *g) {
    uint64_t c = tdx_rans_get_uint(d, L_IDS, ctx);
    int pos;
    if (c && c <= (uint64_t)M->gor.n) {
        *g = M->gor.v[c - 1];
        pos = (int)c - 1;
    } else if (c == 0) {
        int64_t *ref = lit ? &M->gmax : &M->glast;
        *g = (int64_t)((uint64_t)*ref +
                       (uint64_t)tdx_unzigzag(tdx_rans_get_uint(d, L_IDS, C_GLIT + lit)));
        M->glast = lit ? M->glast : *g;
        pos = -1; /* (corrupt input could repeat a listed value: harmless) */
    } else {
        return -1;
    }
    front64(M->gor.v, &M->gor.n, GOR_N, pos, *g);
    if (*g > M->gmax) M->gmax = *g;
    return 0;
}

static int get_stack(tdx_rans_dec *d, model *M, int c, uint32_t *s) {
    smtf *l = stk_list(M, c);
    if (!l) return -1;
    uint64_t code = tdx_rans_get_uint(d, L_STK, C_STK + c);
    int pos;
    if (code && code <= (uint64_t)l->n) {
        *s = l->v[code - 1];
        pos = (int)code - 1;
    } else if (code == 0) {
        uint64_t v = tdx_rans_get_uint(d, L_STK, C_SLIT + c);
        if (v > UINT32_MAX) return -1;
        *s = (uint32_t)v;
        pos = -1;
    } else {
        return -1;
    }
    front32(l->v, &l->n, STK_N, pos, *s);
    return 0;
}

static int get_str(tdx_rans_dec *d, model *M, int c, uint32_t *s) {
    unsigned code = tdx_rans_get(d, L_VAL, C_STR + c);
    int pos = -1;
    if (code < (unsigned)M->str[c].n) {
        *s = M->str[c].v[code];
        pos = (int)code;
    } else if (code == STR_NEW) {
        if (M->maxstr == UINT32_MAX) return -1;
        *s = M->maxstr + 1;
    } else if (code == STR_LIT) {
        int64_t v = (int64_t)M->maxstr + tdx_unzigzag(tdx_rans_get_uint(d, L_VAL, C_STRLIT));
        if (v < 0 || v > UINT32_MAX) return -1;
        *s = (uint32_t)v;
    } else {
        return -1;
    }
    if (*s > M->maxstr) M->maxstr = *s;
    front32(M->str[c].v, &M->str[c].n, STR_N, pos, *s);
    return 0;
}

/* Reads the thread's next type and time; returns 1 when it has one, 0 at its end, -1 when bad. */
static int get_ahead(tdx_rans_dec *d, model *M, thr *t, int gs) {
    unsigned ty = tdx_rans_get(d, L_SEQ, C_TYPE + t->prev);
    t->next = (uint8_t)ty;
    if (ty == END_TYPE) return 0;
    if (ty != TDX_TYPE_SYNC && (ty >= NT || !tdx_type_kind((uint8_t)ty))) return -1;
    uint64_t dq = tdx_rans_get_uint(d, L_SEQ, C_DT + ty);
    t->q += dq;
    uint64_t r = 0;
    if (gs) {
        r = tdx_rans_get(d, L_SEQ, C_RES + (dq < 3 ? (unsigned)dq : 3) * 2 + (t->r != 0));
        if (r >> gs) return -1;
        t->r = r;
    }
    t->next_t = (int64_t)(t->q << gs | r);
    return 1;
}

/* Min-heap of threads by the time of their next event, the time kept inline (times are
 * distinct in a valid block). */
typedef struct {
    int64_t t;
    uint32_t j;
} hent;

static void hdown(hent *h, size_t n, size_t i) {
    hent x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1].t < h[c].t) c++;
        if (h[c].t >= x.t) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static void hup(hent *h, size_t i) {
    hent x = h[i];
    while (i > 0) {
        size_t par = (i - 1) / 2;
        if (x.t >= h[par].t) break;
        h[i] = h[par];
        i = par;
    }
    h[i] = x;
}

struct tdx_evdec {
    decwork W;
    thr *T;
    hent *heap;
    size_t cap; /* threads T and heap have room for */
    /* The block being decoded (tdx_evdec_begin): events in all and given so far, threads, heap
     * entries in use, and the header's flags. */
    size_t n, done, nthr, nh;
    int explicit_order, heap_thr, gs, hz;
    bool open;
    bool stream; /* tdx_evdec_set_streaming */
};

void tdx_evdec_set_streaming(tdx_evdec *x, bool on) {
    x->stream = on;
}

tdx_evdec *tdx_evdec_new(void) {
    tdx_evdec *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    tdx_rans_dec_init(&x->W.d);
    /* the model's lazily allocated parts start empty */
    x->W.M.gt = NULL;
    for (int i = 0; i < 2 * NT; i++) x->W.M.stk[i].v = NULL;
    return x;
}

void tdx_evdec_free(tdx_evdec *x) {
    if (!x) return;
    model_free(&x->W.M);
    tdx_rans_dec_free(&x->W.d);
    free(x->T);
    free(x->heap);
    free(x);
}

static int dec_run(tdx_evdec *X, tdx_event *out, size_t m);

static int decode_block(tdx_evdec *X, const uint8_t *p, size_t len, size_t n, tdx_event *out) {
    return tdx_evdec_begin(X, p, len, n) || dec_run(X, out, n) ? -1 : 0;
}

int tdx_evdec_next(tdx_evdec *x, tdx_event *out, size_t max, size_t *got) {
    *got = 0;
    if (!x->open) return x->done == x->n ? 0 : -1;
    size_t m = x->n - x->done < max ? x->n - x->done : max;
    if (dec_run(x, out, m)) return -1;
    *got = m;
    return 0;
}

int tdx_evdec_block(tdx_evdec *x, const uint8_t *p, size_t len, size_t n, tdx_event *out) {
    if (x) return decode_block(x, p, len, n, out);
    tdx_evdec *t = tdx_evdec_new();
    int rc = t ? decode_block(t, p, len, n, out) : -1;
    tdx_evdec_free(t);
    return rc;
}

/* Reads the block's header and each thread's first event: the state dec_run goes on from. */
int tdx_evdec_begin(tdx_evdec *X, const uint8_t *p, size_t len, size_t n) {
    X->open = false;
    X->n = n;
    X->done = 0;
    const uint8_t *end = p + len;
    if (len < 1) return -1;
    uint8_t flags = *p++;
    int explicit_order = flags & 1, heap_thr = (flags >> 1) & 1, gs = flags & 4 ? 6 : 0;
    int hz = (flags >> 3) & HEAP_SHIFT_MAX;
    if (flags >> 6) return -1;
    uint64_t nthr, v;
    int k = tdx_uvarint(p, end, &nthr);
    if (k < 0 || nthr > n || nthr > len || (n && !nthr)) return -1;
    p += k;
    if (nthr + 1 > X->cap) {
        size_t cap = (size_t)nthr + 1 + X->cap;
        thr *nt = realloc(X->T, cap * sizeof *nt);
        if (nt) X->T = nt;
        hent *nh = realloc(X->heap, cap * sizeof *nh);
        if (nh) X->heap = nh;
        if (!nt || !nh) return -1;
        X->cap = cap;
    }
    decwork *W = &X->W;
    thr *T = X->T;
    hent *heap = X->heap;
    int rc = -1;
    int64_t pm = 0;
    for (uint64_t j = 0; j < nthr; j++) {
        if ((k = tdx_uvarint(p, end, &v)) < 0) goto out;
        p += k;
        pm = (int64_t)((uint64_t)pm + (uint64_t)tdx_unzigzag(v));
        T[j] = (thr){.m = pm, .pp = TDX_NO_ID, .pg = TDX_NO_ID, .prev = T_START};
    }
    if ((k = tdx_uvarint(p, end, &v)) < 0) goto out;
    p += k;
    int64_t t0 = tdx_unzigzag(v);
    tdx_rans_dec *d = &W->d;
    if (tdx_rans_dec_start(d, C_COUNT, p, (size_t)(end - p))) goto out;
    model *M = &W->M;
    model_init(M);
    if (gt_reset(M)) goto out;
    size_t nh = 0;
    for (uint64_t j = 0; j < nthr; j++) {
        T[j].q = (uint64_t)t0 >> gs;
        T[j].r = 0;
        int a = get_ahead(d, M, &T[j], gs);
        if (a < 0) goto out;
        if (a) {
            heap[nh] = (hent){T[j].next_t, (uint32_t)j};
            hup(heap, nh++);
        }
    }
    X->nthr = (size_t)nthr;
    X->nh = nh;
    X->explicit_order = explicit_order;
    X->heap_thr = heap_thr;
    X->gs = gs;
    X->hz = hz;
    X->open = true;
    rc = 0;
out:
    return rc;
}

/* Decodes the block's next m events into out[0..m) (m <= what is left); after its last event,
 * checks that every thread and stream ended exactly there. */
static int dec_run(tdx_evdec *X, tdx_event *out, size_t m) {
    if (!X->open || m > X->n - X->done) return -1;
    X->open = false; /* until this run succeeds */
    tdx_rans_dec *d = &X->W.d;
    model *M = &X->W.M;
    thr *T = X->T;
    hent *heap = X->heap;
    uint64_t nthr = X->nthr;
    size_t nh = X->nh;
    int explicit_order = X->explicit_order, heap_thr = X->heap_thr, gs = X->gs, hz = X->hz;
    int rc = -1;
    for (size_t i = 0; i < m; i++) {
        /* Built on the stack and stored whole: out may be memory another core read last (the
         * views' block ring), where clearing and filling it field by field waited on each line. */
        tdx_event ev, *e = &ev;
        uint64_t j;
        if (explicit_order) {
            j = tdx_rans_get_uint(d, L_SEQ, C_THR);
            if (j >= nthr || T[j].next == END_TYPE) goto out;
        } else {
            if (!nh) goto out;
            j = heap[0].j;
        }
        thr *t = &T[j];
        memset(e, 0, sizeof *e);
        e->type = t->next;
        e->kind = tdx_type_kind(e->type);
        e->time = t->next_t;
        e->m = t->m;
        unsigned miss = tdx_rans_get(d, L_IDS, C_MISS + e->type);
        if (miss > 3) goto out;
        e->p = (miss & 1) ? (int64_t)(tdx_rans_get_uint(d, L_IDS, C_P) - 1) : t->pp;
        if (miss & 2) {
            if (get_gor(d, M, C_GOR + NT, 1, &e->g)) goto out;
        } else {
            e->g = t->pg;
        }
        if (e->type == TDX_TYPE_SYNC) {
            e->args[0] = tdx_rans_getbits(d, 64);
            e->has_clock = (uint8_t)tdx_rans_getbits(d, 1);
            if (e->has_clock) {
                for (int a = 1; a < 4; a++) e->args[a] = tdx_rans_getbits(d, 64);
                e->sync_nsec = tdx_rans_getbits(d, 64);
            }
        } else {
            const tfacts *f = &facts[e->type];
            e->res_kind = f->res_kind;
            e->from = f->from;
            e->to = f->to;
            if (f->flags & X_RES) {
                if (f->res_kind == TDX_RES_GOROUTINE) {
                    int lit = e->type != TDX_EV_GO_CREATE && e->type != TDX_EV_GO_CREATE_BLOCKED &&
                              e->type != TDX_EV_GO_CREATE_SYSCALL;
                    if (get_gor(d, M, C_GOR + e->type, lit, &e->res)) goto out;
                } else {
                    e->res = (int64_t)(tdx_rans_get_uint(d, L_IDS, C_PROC + e->type) - 1);
                }
            }
            if (f->flags & X_RES_G) e->res = e->g;
            if (f->flags & X_RES_P) e->res = e->p;
            if (f->flags & X_STATE) {
                unsigned x = tdx_rans_get(d, L_IDS, C_STATE + e->type);
                e->from = x & 15;
                e->to = (uint8_t)(x >> 4);
            }
            if ((f->flags & X_STACK) && get_stack(d, M, e->type * 2, &e->stack)) goto out;
            if (f->flags & X_TSTACK) {
                if (get_stack(d, M, e->type * 2 + 1, &e->tstack)) goto out;
                e->has_tstack = 1;
            }
            if (f->flags & X_TSTACK_EQ) {
                e->tstack = e->stack;
                e->has_tstack = e->stack != 0;
            }
            if ((f->flags & X_STR0) && get_str(d, M, e->type * 2, &e->str[0])) goto out;
            if ((f->flags & X_STR1) && get_str(d, M, e->type * 2 + 1, &e->str[1])) goto out;
            if (get_vals(d, M, t, e, f, heap_thr, hz)) goto out;
        }
        predict_after(e, &t->pp, &t->pg);
        t->prev = e->type;
        int a = get_ahead(d, M, t, gs);
        if (a < 0) goto out;
        if (!explicit_order) {
            if (a) {
                heap[0].t = t->next_t;
                hdown(heap, nh, 0);
            } else {
                heap[0] = heap[--nh];
                if (nh) hdown(heap, nh, 0);
            }
        }
        tdx_evstore(&out[i], e, X->stream);
        if (d->bad) goto out;
    }
    X->nh = nh;
    X->done += m;
    if (X->done == X->n) {
        /* Every thread must have ended, and every stream been consumed exactly. */
        for (uint64_t j = 0; j < nthr; j++)
            if (T[j].next != END_TYPE) goto out;
        if (!tdx_rans_dec_ok(d)) goto out;
        rc = 0;
        goto out;
    }
    X->open = true;
    rc = 0;
out:
    if (X->stream) tdx_evstore_fence(); /* the streamed events before whoever reads them */
    return rc;
}
