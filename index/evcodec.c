/* evcodec.c: event block encoding.
 *
 * Block layout: uvarint nthreads, zigzag thread ids, zigzag first time, uvarint time granule,
 * then for each stream its raw length (uvarint) and its Huffman encoding.
 * Per event: TYPE gets the type byte; TIME the delta to the previous event divided by the granule
 * and TIMEREM the remainder; THREAD the index of the event's thread in the block's list; CTX one
 * byte telling whether P and G differ from what the thread's previous event predicts (the
 * differing values go to IDS); then per type: the transition's resource (IDS), its states
 * (STATE), stacks (STACK), strings (STR) and values (VAL). Fields Go derives from the type or the
 * context (fixed transition states, resources that are the current P or G, transition stacks
 * equal to the event stack) are not stored. */
#include "evcodec.h"

#include <string.h>

#include "core/spec.h"
#include "core/varint.h"
#include "huff.h"

enum {
    X_RES = 1 << 0,      /* transition resource from the arguments */
    X_RES_G = 1 << 1,    /* transition resource = context goroutine */
    X_RES_P = 1 << 2,    /* transition resource = context proc */
    X_STATE = 1 << 3,    /* from/to vary: stored */
    X_STACK = 1 << 4,    /* event stack stored */
    X_TSTACK = 1 << 5,   /* a separate transition stack stored (GoCreate*) */
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
    [TDX_EV_GO_CREATE_BLOCKED] = {X_RES | X_STACK | X_TSTACK, G, TDX_GO_NOTEXIST, TDX_GO_WAITING, 0, {0}},
    [TDX_EV_GO_CREATE_SYSCALL] = {X_RES, G, TDX_GO_NOTEXIST, TDX_GO_SYSCALL, 0, {0}},
    [TDX_EV_GO_START] = {X_RES, G, TDX_GO_RUNNABLE, TDX_GO_RUNNING, 0, {0}},
    [TDX_EV_GO_DESTROY] = {X_RES_G, G, TDX_GO_RUNNING, TDX_GO_NOTEXIST, 0, {0}},
    [TDX_EV_GO_DESTROY_SYSCALL] = {X_RES_G, G, TDX_GO_SYSCALL, TDX_GO_NOTEXIST, 0, {0}},
    [TDX_EV_GO_STOP] = {X_RES_G | X_STACK | X_TSTACK_EQ | X_STR0, G, TDX_GO_RUNNING, TDX_GO_RUNNABLE, 0, {0}},
    [TDX_EV_GO_BLOCK] = {X_RES_G | X_STACK | X_TSTACK_EQ | X_STR0, G, TDX_GO_RUNNING, TDX_GO_WAITING, 0, {0}},
    [TDX_EV_GO_UNBLOCK] = {X_RES | X_STACK, G, TDX_GO_WAITING, TDX_GO_RUNNABLE, 0, {0}},
    [TDX_EV_GO_SWITCH] = {X_RES, G, TDX_GO_WAITING, TDX_GO_RUNNABLE, 0, {0}},
    [TDX_EV_GO_SWITCH_DESTROY] = {X_RES, G, TDX_GO_WAITING, TDX_GO_RUNNABLE, 0, {0}},
    [TDX_EV_GO_SYSCALL_BEGIN] = {X_RES_G | X_STACK | X_TSTACK_EQ, G, TDX_GO_RUNNING, TDX_GO_SYSCALL, 0, {0}},
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

void tdx_evenc_init(tdx_evenc *e) { memset(e, 0, sizeof *e); }

void tdx_evenc_free(tdx_evenc *e) {
    for (int i = 0; i < TDX_ST_COUNT; i++) tdx_vec_free(&e->st[i]);
    tdx_vec_free(&e->ev);
}

static inline uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t unzz(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static inline int put(tdx_buf *b, uint64_t v) {
    if (tdx_vec_reserve(b, b->n + TDX_VARINT_MAX)) return -1;
    b->n += (size_t)tdx_put_uvarint(b->v + b->n, v);
    return 0;
}

/* Stream writers for the per-event loop: room for every event is reserved up front. */
static inline void wv(tdx_buf *b, uint64_t v) { b->n += (size_t)tdx_put_uvarint(b->v + b->n, v); }
static inline void w8(tdx_buf *b, uint8_t v) { b->v[b->n++] = v; }

/* Move-to-front lists: recently used values get small codes. A hit is coded as its position; a
 * miss as MTF_N followed by the value's own coding. */
#define MTF_N 63
typedef struct {
    uint64_t v[MTF_N];
    int n;
} mtf;

static int mtf_find(const mtf *m, uint64_t x) {
    for (int i = 0; i < m->n; i++)
        if (m->v[i] == x) return i;
    return -1;
}

static void mtf_front(mtf *m, int pos, uint64_t x) {
    if (pos < 0) pos = m->n < MTF_N ? m->n++ : MTF_N - 1;
    memmove(m->v + 1, m->v, (size_t)pos * sizeof *m->v);
    m->v[0] = x;
}

/* Per-thread prediction of the next event's context: the previous event's context with the
 * effect of that event applied (a start binds its goroutine, a stop unbinds it, ...). */
typedef struct {
    int64_t p, g;
} pred;

static void predict_after(const tdx_event *e, pred *pr) {
    pr->p = e->p;
    pr->g = e->g;
    switch (e->type) {
    case TDX_EV_GO_START:
    case TDX_EV_GO_CREATE_SYSCALL: pr->g = e->res; break;
    case TDX_EV_GO_STATUS:
    case TDX_EV_GO_STATUS_STACK:
        if (e->to == TDX_GO_RUNNING || e->to == TDX_GO_SYSCALL) pr->g = e->res;
        break;
    case TDX_EV_GO_STOP:
    case TDX_EV_GO_BLOCK:
    case TDX_EV_GO_DESTROY:
    case TDX_EV_GO_SYSCALL_END_BLOCKED:
    case TDX_EV_GO_DESTROY_SYSCALL: pr->g = TDX_NO_ID; break;
    case TDX_EV_PROC_START: pr->p = e->res; break;
    case TDX_EV_PROC_STATUS:
        if (e->to == TDX_PROC_RUNNING) pr->p = e->res;
        break;
    case TDX_EV_PROC_STOP: pr->p = TDX_NO_ID; break;
    }
}

typedef struct {
    int64_t m;
    pred pr;
} thr;

/* Finds or adds thread m in the block's list (blocks have few threads: linear scan). */
static int thread_index(thr *t, size_t *n, int64_t m) {
    for (size_t i = 0; i < *n; i++)
        if (t[i].m == m) return (int)i;
    t[*n] = (thr){m, {TDX_NO_ID, TDX_NO_ID}};
    return (int)(*n)++;
}

/* The adaptive context both sides keep while walking a block. */
typedef struct {
    mtf thr;        /* thread indexes */
    mtf stk;        /* stack ids */
    mtf gor;        /* goroutine ids */
    uint64_t gmiss; /* last goroutine id coded literally (new goroutines have rising ids) */
    uint64_t val[TDX_EV_NTYPES][4];
} mdl;

static void mdl_init(mdl *m) { memset(m, 0, sizeof *m); }

static void put_stack(mdl *m, tdx_buf *b, uint32_t s) {
    int pos = mtf_find(&m->stk, s);
    if (pos >= 0) {
        w8(b, (uint8_t)pos);
    } else {
        w8(b, MTF_N);
        wv(b, s);
    }
    mtf_front(&m->stk, pos, s);
}

static void put_gor(mdl *m, tdx_buf *b, int64_t g) {
    int pos = mtf_find(&m->gor, (uint64_t)g);
    if (pos >= 0) {
        w8(b, (uint8_t)pos);
    } else {
        w8(b, MTF_N);
        wv(b, zz((int64_t)((uint64_t)g - m->gmiss)));
        m->gmiss = (uint64_t)g;
    }
    mtf_front(&m->gor, pos, (uint64_t)g);
}

int tdx_evenc_block(tdx_evenc *enc, const tdx_event *ev, size_t n, tdx_buf *out) {
    for (int i = 0; i < TDX_ST_COUNT; i++) enc->st[i].n = 0;
    thr *threads = malloc((n + 1) * sizeof *threads);
    if (!threads) return -1;
    size_t nthr = 0;
    /* Time granule: 64 ns (the usual tick) when that makes the deltas smaller, else 1. */
    uint64_t cost1 = 0, cost64 = 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t d = (uint64_t)ev[i].time - (uint64_t)ev[i - 1].time;
        cost1 += (uint64_t)tdx_uvarint_len(d);
        cost64 += (uint64_t)tdx_uvarint_len(d / 64) + (d % 64 ? 2 : 0);
    }
    uint64_t gran = cost64 < cost1 ? 64 : 1;
    int rc = 0;
    /* The most bytes one event can put in each stream (see the writes below). */
    static const uint8_t worst[TDX_ST_COUNT] = {
        [TDX_ST_TYPE] = 1, [TDX_ST_TIME] = 10, [TDX_ST_TIMEREM] = 10, [TDX_ST_THREAD] = 11,
        [TDX_ST_CTX] = 1,  [TDX_ST_IDS] = 32,  [TDX_ST_STACK] = 22,   [TDX_ST_STR] = 20,
        [TDX_ST_VAL] = 60, [TDX_ST_STATE] = 1};
    for (int s = 0; s < TDX_ST_COUNT; s++)
        if (tdx_vec_reserve(&enc->st[s], n * worst[s] + 16)) rc = -1;
    mdl M;
    mdl_init(&M);
    tdx_buf *S = enc->st;
    for (size_t i = 0; i < n && !rc; i++) {
        const tdx_event *e = &ev[i];
        const tfacts *f = e->type < TDX_EV_NTYPES ? &facts[e->type] : &facts[0];
        w8(&S[TDX_ST_TYPE], e->type);
        if (i > 0) {
            uint64_t d = (uint64_t)e->time - (uint64_t)ev[i - 1].time;
            wv(&S[TDX_ST_TIME], d / gran);
            if (gran > 1) wv(&S[TDX_ST_TIMEREM], d % gran);
        }
        int ti = thread_index(threads, &nthr, e->m);
        int pos = mtf_find(&M.thr, (uint64_t)ti);
        if (pos < 0) {
            wv(&S[TDX_ST_THREAD], MTF_N);
            wv(&S[TDX_ST_THREAD], (uint64_t)ti);
        } else {
            wv(&S[TDX_ST_THREAD], (uint64_t)pos);
        }
        mtf_front(&M.thr, pos, (uint64_t)ti);
        pred *pr = &threads[ti].pr;
        uint8_t miss = (uint8_t)((e->p != pr->p) | ((e->g != pr->g) << 1));
        w8(&S[TDX_ST_CTX], miss);
        if (miss & 1) wv(&S[TDX_ST_IDS], zz(e->p));
        if (miss & 2) put_gor(&M, &S[TDX_ST_IDS], e->g);
        if (e->type == TDX_TYPE_SYNC) {
            wv(&S[TDX_ST_VAL], e->args[0]);
            wv(&S[TDX_ST_VAL], e->has_clock);
            if (e->has_clock) {
                for (int k = 1; k < 4; k++) wv(&S[TDX_ST_VAL], e->args[k]);
                wv(&S[TDX_ST_VAL], e->sync_nsec);
            }
        } else {
            if (f->flags & X_RES) {
                if (f->res_kind == TDX_RES_GOROUTINE) put_gor(&M, &S[TDX_ST_IDS], e->res);
                else wv(&S[TDX_ST_IDS], zz(e->res));
            }
            if (f->flags & X_STATE) w8(&S[TDX_ST_STATE], (uint8_t)(e->from | (e->to << 4)));
            if (f->flags & X_STACK) put_stack(&M, &S[TDX_ST_STACK], e->stack);
            if (f->flags & X_TSTACK) put_stack(&M, &S[TDX_ST_STACK], e->tstack);
            if (f->flags & X_STR0) wv(&S[TDX_ST_STR], e->str[0]);
            if (f->flags & X_STR1) wv(&S[TDX_ST_STR], e->str[1]);
            for (int k = 0; k < f->nvals; k++) {
                uint64_t v = e->args[(int)f->vals[k]];
                /* Metrics move slowly: code the change from the last value of the same metric. */
                uint64_t *last = &M.val[e->type][k];
                wv(&S[TDX_ST_VAL], zz((int64_t)(v - *last)));
                *last = v;
            }
        }
        predict_after(e, pr);
    }
    if (!rc) {
        rc |= put(out, nthr);
        for (size_t i = 0; i < nthr; i++) rc |= put(out, zz(threads[i].m));
        rc |= put(out, zz(n ? ev[0].time : 0));
        rc |= put(out, gran);
        for (int s = 0; s < TDX_ST_COUNT && !rc; s++) {
            rc |= put(out, enc->st[s].n);
            rc |= tdx_huff_encode(out, enc->st[s].v, enc->st[s].n);
        }
    }
    free(threads);
    return rc ? -1 : 0;
}

/* ---- decoding ---- */

typedef struct {
    const uint8_t *p, *end;
    int bad;
} rd;

static inline uint64_t get(rd *r) {
    uint64_t v = 0;
    int k = tdx_uvarint(r->p, r->end, &v);
    if (k < 0) {
        r->bad = 1;
        return 0;
    }
    r->p += k;
    return v;
}

static inline uint8_t get8(rd *r) {
    if (r->p >= r->end) {
        r->bad = 1;
        return 0;
    }
    return *r->p++;
}

static uint32_t get_stack(mdl *m, rd *r) {
    uint8_t code = get8(r);
    uint64_t s;
    if (code < m->stk.n) s = m->stk.v[code];
    else if (code == MTF_N) s = get(r);
    else return r->bad = 1, 0;
    mtf_front(&m->stk, code == MTF_N ? mtf_find(&m->stk, s) : code, s);
    return (uint32_t)s;
}

static int64_t get_gor(mdl *m, rd *r) {
    uint8_t code = get8(r);
    uint64_t g;
    if (code < m->gor.n) {
        g = m->gor.v[code];
    } else if (code == MTF_N) {
        g = m->gmiss + (uint64_t)unzz(get(r));
        m->gmiss = g;
    } else {
        r->bad = 1;
        return 0;
    }
    mtf_front(&m->gor, code == MTF_N ? mtf_find(&m->gor, g) : code, g);
    return (int64_t)g;
}

int tdx_evdec_block(const uint8_t *p, size_t len, size_t n, tdx_event *out) {
    rd h = {p, p + len, 0};
    uint64_t nthr = get(&h);
    if (h.bad || nthr > n + 1 || nthr > (uint64_t)len) return -1;
    thr *threads = malloc((nthr + 1) * sizeof *threads);
    uint8_t *bufs = NULL;
    if (!threads) return -1;
    int rc = -1;
    for (uint64_t i = 0; i < nthr; i++) threads[i] = (thr){unzz(get(&h)), {TDX_NO_ID, TDX_NO_ID}};
    int64_t t = unzz(get(&h));
    uint64_t gran = get(&h);
    if (h.bad || gran == 0) goto out;
    /* Decode every stream into one scratch area. */
    size_t raw[TDX_ST_COUNT], total = 0;
    const uint8_t *enc[TDX_ST_COUNT];
    size_t enclen[TDX_ST_COUNT];
    for (int s = 0; s < TDX_ST_COUNT; s++) {
        raw[s] = (size_t)get(&h);
        if (h.bad || raw[s] > (size_t)64 << 20) goto out;
        enc[s] = h.p;
        /* The encoded length is only known by decoding; do it now into a temporary. */
        uint8_t *tmp = realloc(bufs, total + raw[s] + 1);
        if (!tmp) goto out;
        bufs = tmp;
        long used = tdx_huff_decode(h.p, (size_t)(h.end - h.p), bufs + total, raw[s]);
        if (used < 0) goto out;
        enclen[s] = (size_t)used;
        h.p += used;
        total += raw[s];
    }
    (void)enc;
    (void)enclen;
    rd st[TDX_ST_COUNT];
    size_t off = 0;
    for (int s = 0; s < TDX_ST_COUNT; s++) {
        st[s] = (rd){bufs + off, bufs + off + raw[s], 0};
        off += raw[s];
    }
    mdl M;
    mdl_init(&M);
    for (size_t i = 0; i < n; i++) {
        tdx_event *e = &out[i];
        memset(e, 0, sizeof *e);
        e->type = get8(&st[TDX_ST_TYPE]);
        if (e->type != TDX_TYPE_SYNC && (e->type >= TDX_EV_NTYPES || !tdx_type_kind(e->type))) goto out;
        e->kind = tdx_type_kind(e->type);
        if (i > 0) {
            uint64_t d = get(&st[TDX_ST_TIME]) * gran;
            if (gran > 1) d += get(&st[TDX_ST_TIMEREM]);
            t = (int64_t)((uint64_t)t + d);
        }
        e->time = t;
        uint64_t code = get(&st[TDX_ST_THREAD]), ti;
        if (code < (uint64_t)M.thr.n) {
            ti = M.thr.v[code];
            mtf_front(&M.thr, (int)code, ti);
        } else if (code == MTF_N) {
            ti = get(&st[TDX_ST_THREAD]);
            if (ti >= nthr) goto out;
            mtf_front(&M.thr, mtf_find(&M.thr, ti), ti);
        } else {
            goto out;
        }
        pred *pr = &threads[ti].pr;
        e->m = threads[ti].m;
        uint8_t miss = get8(&st[TDX_ST_CTX]);
        e->p = (miss & 1) ? unzz(get(&st[TDX_ST_IDS])) : pr->p;
        e->g = (miss & 2) ? get_gor(&M, &st[TDX_ST_IDS]) : pr->g;
        if (e->type == TDX_TYPE_SYNC) {
            e->args[0] = get(&st[TDX_ST_VAL]);
            e->has_clock = get(&st[TDX_ST_VAL]) != 0;
            if (e->has_clock) {
                for (int k = 1; k < 4; k++) e->args[k] = get(&st[TDX_ST_VAL]);
                e->sync_nsec = get(&st[TDX_ST_VAL]);
            }
        } else {
            const tfacts *f = &facts[e->type];
            e->res_kind = f->res_kind;
            e->from = f->from;
            e->to = f->to;
            if (f->flags & X_RES)
                e->res = f->res_kind == TDX_RES_GOROUTINE ? get_gor(&M, &st[TDX_ST_IDS])
                                                         : unzz(get(&st[TDX_ST_IDS]));
            if (f->flags & X_RES_G) e->res = e->g;
            if (f->flags & X_RES_P) e->res = e->p;
            if (f->flags & X_STATE) {
                uint8_t x = get8(&st[TDX_ST_STATE]);
                e->from = x & 15;
                e->to = x >> 4;
            }
            if (f->flags & X_STACK) e->stack = get_stack(&M, &st[TDX_ST_STACK]);
            if (f->flags & X_TSTACK) {
                e->tstack = get_stack(&M, &st[TDX_ST_STACK]);
                e->has_tstack = 1;
            }
            if (f->flags & X_TSTACK_EQ) {
                e->tstack = e->stack;
                e->has_tstack = e->stack != 0;
            }
            if (f->flags & X_STR0) e->str[0] = (uint32_t)get(&st[TDX_ST_STR]);
            if (f->flags & X_STR1) e->str[1] = (uint32_t)get(&st[TDX_ST_STR]);
            for (int k = 0; k < f->nvals; k++) {
                uint64_t *last = &M.val[e->type][k];
                *last += (uint64_t)unzz(get(&st[TDX_ST_VAL]));
                e->args[(int)f->vals[k]] = *last;
            }
        }
        predict_after(e, pr);
    }
    rc = 0;
    for (int s = 0; s < TDX_ST_COUNT; s++)
        if (st[s].bad || st[s].p != st[s].end) rc = -1;
out:
    free(threads);
    free(bufs);
    return rc;
}
