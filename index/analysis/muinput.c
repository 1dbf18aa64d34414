/* muinput.c: recording and reading the mutator utilization's inputs (section MUTIL). */
#include "index/analysis/muinput.h"

#include <string.h>
#include <xxhash.h>

#include "core/checksum.h"
#include "core/spec.h"
#include "core/varint.h"
#include "index/format/format.h"
#include "index/format/rans.h"
#include "index/format/reader.h"

/* The section: magic, u64 records, i64 last event time; the records; the XXH3-64 of every byte
 * before it (the section is streamed, so the table holds no hash). */
#define MAGIC "TDXMUT03"
#define HDR 32 /* magic, u64 records, i64 last event time, i64 origin */
#define TRAILER 8
#define BLOCK 16384 /* records a block (its tables cost some 2 kB; its buffers 1 MB) */

void tdx_muin_init(tdx_muin *w, const char *beside) {
    memset(w, 0, sizeof *w);
    w->file.fd = -1;
    w->beside = beside;
    tdx_rans_enc_init(&w->enc);
}

void tdx_muin_free(tdx_muin *w) {
    tdx_scratch_close(&w->file);
    tdx_vec_free(&w->rec);
    tdx_vec_free(&w->blk);
    tdx_vec_free(&w->coded);
    tdx_rans_enc_free(&w->enc);
    tdx_hmap_free(&w->assist);
    tdx_hmap_free(&w->worker);
}

static int oom(tdx_err *err) {
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

/* ---- coding: blocks of up to BLOCK records, rANS-coded with contexts ---- */

/* Contexts: a kind by the previous kind; per kind, its time step (in the block's unit), its P
 * (from the last P of its kind, or an end's from its begin's) and why it may count (starts and
 * stops); the time's remainder below the unit; GOMAXPROCS. */
enum {
    C_KIND = 0,
    C_DT = C_KIND + TDX_MU_NKINDS,
    C_P = C_DT + TDX_MU_NKINDS,
    C_WHY = C_P + TDX_MU_NKINDS,
    C_N = C_WHY + TDX_MU_NKINDS,
    C_REM,
    NCTX
};

/* The kind whose last P predicts a record's P: an end's begin, else its own. */
static int p_pred(int kind) {
    return kind == TDX_MU_SWEEP_END || kind == TDX_MU_ASSIST_END || kind == TDX_MU_STOP ? kind - 1
                                                                                        : kind;
}

/* A block's time unit: the largest power of two up to 2^12 that divides 7 in 8 of its times
 * (Go's clocks tick in 64 ns, but for the reader's +1 ns fix-ups), 1 with a negative time
 * (before is the time the first record steps from). */
static uint64_t time_unit(const tdx_murec *r, size_t n, int64_t before) {
    uint64_t best = 1;
    if (before < 0) return 1;
    for (uint64_t u = 2; u <= 4096; u *= 2) {
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
            if (r[i].time < 0) return 1;
            off += (uint64_t)r[i].time % u != 0;
        }
        if (off > n / 8) break;
        best = u;
    }
    return best;
}

static bool has_p(int kind) {
    return kind >= TDX_MU_SWEEP_BEGIN && kind <= TDX_MU_LABEL_DEDICATED;
}
static bool has_why(int kind) {
    return kind == TDX_MU_RUN || kind == TDX_MU_STOP;
}

static void putv(tdx_muin *w, uint32_t ctx, uint64_t v) {
    tdx_rans_put_uint(&w->enc, (int)(ctx & (TDX_RANS_LANES - 1)), ctx, v);
    w->nvals++;
}

/* Codes the block's records and appends them to the scratch file: uvarint records, unit,
 * values and coded length, then the coded bytes. */
static int flush_block(tdx_muin *w, tdx_err *err) {
    size_t n = w->blk.n;
    if (!n) return 0;
    /* the first record steps from 0, or from itself when it is below 0 */
    if (!w->coded_any) w->coded_t = w->origin = w->blk.v[0].time < 0 ? w->blk.v[0].time : 0;
    w->coded_any = true;
    uint64_t unit = time_unit(w->blk.v, n, w->coded_t);
    if (tdx_rans_enc_reset(&w->enc, NCTX)) return oom(err);
    int64_t lastp[TDX_MU_NKINDS] = {0};
    unsigned prev = 0;
    w->nvals = 0;
    int64_t t = w->coded_t;
    for (size_t i = 0; i < n; i++) {
        const tdx_murec *r = &w->blk.v[i];
        /* (room for the record's values as they come: a lane may take them all) */
        if (tdx_rans_enc_reserve(&w->enc, 7, (size_t)7 * 64)) return oom(err);
        putv(w, C_KIND + prev, r->kind);
        /* (unit 1 when a time is negative: then this is the plain step) */
        putv(w, C_DT + r->kind, (uint64_t)r->time / unit - (uint64_t)t / unit);
        if (unit > 1) putv(w, C_REM, (uint64_t)r->time % unit);
        if (r->kind == TDX_MU_PROCS) putv(w, C_N, r->n);
        if (has_p(r->kind)) {
            putv(w, C_P + r->kind, tdx_zigzag(tdx_wsub(r->p, lastp[p_pred(r->kind)])));
            lastp[r->kind] = r->p;
        }
        if (has_why(r->kind)) putv(w, C_WHY + r->kind, r->why);
        prev = r->kind;
        t = r->time;
    }
    w->coded.n = 0;
    tdx_buf *b = &w->rec;
    b->n = 0;
    if (w->enc.oom || tdx_rans_enc_finish(&w->enc, &w->coded) || tdx_buf_uvarint(b, n) ||
        tdx_buf_uvarint(b, unit) || tdx_buf_uvarint(b, w->nvals) || tdx_buf_uvarint(b, w->coded.n))
        return oom(err);
    if (w->file.fd < 0 && tdx_scratch_open(&w->file, w->beside, err)) return -1;
    if (tdx_scratch_put(&w->file, b->v, b->n, err) ||
        tdx_scratch_put(&w->file, w->coded.v, w->coded.n, err))
        return -1;
    w->coded_t = t;
    w->blk.n = 0;
    return 0;
}

static int put(tdx_muin *w, int64_t time, int kind, int64_t p, uint8_t why, uint64_t n,
               tdx_err *err) {
    tdx_murec r = {time, (uint8_t)kind, has_why(kind) ? why : 0, has_p(kind) ? p : TDX_NO_ID,
                   kind == TDX_MU_PROCS ? n : 0};
    if (tdx_vec_push(&w->blk, r)) return oom(err);
    w->n++;
    w->prev = time;
    return w->blk.n == BLOCK ? flush_block(w, err) : 0;
}

static bool executing(int s) {
    return s == TDX_GO_RUNNING || s == TDX_GO_SYSCALL;
}

/* A worker's labels so far, in the bits of TDX_MU_WHY_*. */
static uint32_t labels_of(const tdx_muin *w, int64_t g) {
    uint32_t v = tdx_hmap_get(&w->worker, (uint64_t)g);
    return v == TDX_HMAP_EMPTY ? 0 : v;
}

/* The record an event makes (0: none), with its proc and, for a start or a stop, why it may
 * count. Go reads goroutines' assists and labels only while GOMAXPROCS is known (not 0). */
static int classify(tdx_muin *w, const tdx_event *e, const tdx_gen *g, int64_t *p, uint8_t *why,
                    int *oomed) {
    *p = e->p;
    *why = 0;
    bool known = w->procs > 0;
    switch (e->type) {
    case TDX_EV_PROCS_CHANGE:
        w->procs = e->args[0];
        return TDX_MU_PROCS;
    case TDX_EV_STW_BEGIN:
    case TDX_EV_STW_END: { /* Go counts a stop-the-world whose name contains "GC" */
        tdx_str k = e->str[0] < g->strings.n ? tdx_gen_str(g, e->str[0]) : (tdx_str){NULL, 0};
        for (size_t i = 0; i + 1 < k.n; i++)
            if (k.p[i] == 'G' && k.p[i + 1] == 'C')
                return e->type == TDX_EV_STW_BEGIN ? TDX_MU_STW_BEGIN : TDX_MU_STW_END;
        return 0;
    }
    case TDX_EV_GC_SWEEP_BEGIN:
        return TDX_MU_SWEEP_BEGIN;
    case TDX_EV_GC_SWEEP_END:
        return TDX_MU_SWEEP_END;
    case TDX_EV_GC_MARK_ASSIST_BEGIN: /* (the assist's goroutine is the event's) */
        if (known && e->g != TDX_NO_ID && tdx_hmap_put(&w->assist, (uint64_t)e->g, 1)) *oomed = 1;
        return TDX_MU_ASSIST_BEGIN;
    case TDX_EV_GC_MARK_ASSIST_END:
        if (known && e->g != TDX_NO_ID) tdx_hmap_del(&w->assist, (uint64_t)e->g);
        return TDX_MU_ASSIST_END;
    case TDX_EV_GO_LABEL: {
        tdx_str l = e->str[0] < g->strings.n ? tdx_gen_str(g, e->str[0]) : (tdx_str){NULL, 0};
        if (l.n < 3 || memcmp(l.p, "GC ", 3) != 0 || (l.n == 9 && !memcmp(l.p, "GC (idle)", 9)))
            return 0;
        bool dedicated = l.n == 14 && !memcmp(l.p, "GC (dedicated)", 14);
        if (known) {
            uint32_t v = labels_of(w, e->g) | TDX_MU_WHY_LABEL |
                         (dedicated ? 0u : (uint32_t)TDX_MU_WHY_SHARED);
            if (tdx_hmap_put(&w->worker, (uint64_t)e->g, v)) *oomed = 1;
        }
        return dedicated ? TDX_MU_LABEL_DEDICATED : TDX_MU_LABEL;
    }
    default:
        break;
    }
    if (e->kind != TDX_KIND_STATE_TRANSITION || e->res_kind != TDX_RES_GOROUTINE) return 0;
    if (executing(e->from) == executing(e->to)) return 0;
    /* Only a goroutine that could count, whatever the flags: assisting, or a GC worker. */
    uint32_t v = labels_of(w, e->res);
    if (tdx_hmap_get(&w->assist, (uint64_t)e->res) != TDX_HMAP_EMPTY) v |= TDX_MU_WHY_ASSIST;
    if (!v) return 0;
    *why = (uint8_t)v;
    return executing(e->to) ? TDX_MU_RUN : TDX_MU_STOP;
}

int tdx_muin_event(tdx_muin *w, const tdx_event *e, const tdx_gen *g, tdx_err *err) {
    w->last = e->time;
    if (e->kind == TDX_KIND_SYNC) goto other; /* carries no table; changes nothing */
    int64_t p;
    uint8_t why;
    int oomed = 0;
    int kind = classify(w, e, g, &p, &why, &oomed);
    if (oomed) return oom(err);
    if (kind) {
        /* Only a second change at one time stamp can leave Go's value below the state's (its
         * times increase strictly but in converted old traces) */
        w->tick = w->n && e->time == w->prev;
        return put(w, e->time, kind, p, why, e->args[0], err);
    }
other:
    if (w->tick && e->time > w->prev) {
        w->tick = false;
        return put(w, e->time, TDX_MU_TICK, TDX_NO_ID, TDX_NO_ID, 0, err);
    }
    return 0;
}

typedef struct hashed {
    int (*put)(void *ctx, const void *p, size_t n, tdx_err *err);
    void *ctx;
    XXH3_state_t *h;
} hashed;

static int put_hashed(void *ctx, const void *p, size_t n, tdx_err *err) {
    hashed *x = ctx;
    XXH3_64bits_update(x->h, p, n);
    return x->put(x->ctx, p, n, err);
}

int tdx_muin_write(tdx_muin *w, int (*putf)(void *ctx, const void *p, size_t n, tdx_err *err),
                   void *ctx, tdx_err *err) {
    hashed x = {putf, ctx, XXH3_createState()};
    if (!x.h) return oom(err);
    XXH3_64bits_reset(x.h);
    uint8_t h[HDR];
    for (int i = 0; i < 8; i++) h[i] = (uint8_t)MAGIC[i];
    tdx_le64(h + 8, w->n);
    tdx_le64(h + 16, (uint64_t)w->last);
    int rc = flush_block(w, err);
    tdx_le64(h + 24, (uint64_t)w->origin);
    rc = rc || put_hashed(&x, h, sizeof h, err) ||
         (w->file.fd >= 0 && tdx_scratch_copy(&w->file, put_hashed, &x, err));
    if (!rc) {
        tdx_le64(h, XXH3_64bits_digest(x.h));
        rc = putf(ctx, h, TRAILER, err);
    }
    XXH3_freeState(x.h);
    return rc ? -1 : 0;
}

/* ---- reading ---- */

static int corrupt(tdx_muread *r, const uint8_t *at, tdx_err *err) {
    return tdx_index_corrupt(err, r->off + (uint64_t)(at - r->base), "section MUTIL");
}

int tdx_muread_init(tdx_muread *r, const uint8_t *p, size_t n, uint64_t off, tdx_err *err) {
    memset(r, 0, sizeof *r);
    tdx_rans_dec_init(&r->dec);
    r->base = p;
    r->p = p + (n < HDR ? n : HDR);
    r->end = p + (n < HDR + TRAILER ? n : n - TRAILER);
    r->off = off;
    if (n < HDR + TRAILER || memcmp(p, MAGIC, 8) != 0 ||
        !tdx_checksum_ok(p, n - TRAILER, tdx_rd64(p + n - TRAILER)))
        return corrupt(r, p, err);
    r->left = tdx_rd64(p + 8);
    r->last = (int64_t)tdx_rd64(p + 16);
    r->t = (int64_t)tdx_rd64(p + 24);
    /* (with no records the last event may lie before the origin: a lone Sync at -1) */
    if (r->t > 0 || (r->left && r->t > r->last)) return corrupt(r, p + 24, err);
    /* a record takes at least a bit: no count beyond the bytes (memory follows the section) */
    if (r->left / 8 > (uint64_t)(n - HDR - TRAILER)) return corrupt(r, p + 8, err);
    return 0;
}

void tdx_muread_free(tdx_muread *r) {
    tdx_rans_dec_free(&r->dec);
}

/* Starts the next block: its records, unit, values and coded length, then the coded bytes. */
static int next_block(tdx_muread *r, tdx_err *err) {
    uint64_t f[4];
    const uint8_t *p = r->p;
    for (int i = 0; i < 4; i++) {
        int k = tdx_uvarint(p, r->end, &f[i]);
        if (k < 0) return corrupt(r, r->p, err);
        p += k;
    }
    if (f[0] == 0 || f[0] > BLOCK || f[0] > r->left || f[1] == 0 || f[1] > 4096 ||
        (f[1] & (f[1] - 1)) || f[2] > 7 * f[0] || f[3] > (uint64_t)(r->end - p) ||
        tdx_rans_dec_start(&r->dec, NCTX, p, (size_t)f[3]))
        return corrupt(r, r->p, err);
    r->block = r->p;
    r->p = p + f[3];
    r->bleft = f[0];
    r->unit = f[1];
    r->vleft = f[2];
    r->prev_kind = 0;
    memset(r->lastp, 0, sizeof r->lastp);
    return 0;
}

/* The next value of the block (0, and the block marked bad, past its values). */
static uint64_t getv(tdx_muread *r, uint32_t ctx) {
    if (!r->vleft) {
        r->bad = true;
        return 0;
    }
    r->vleft--;
    return tdx_rans_get_uint(&r->dec, (int)(ctx & (TDX_RANS_LANES - 1)), ctx);
}

int tdx_muread_next(tdx_muread *r, tdx_murec *out, tdx_err *err) {
    if (!r->left) return r->p == r->end ? 0 : corrupt(r, r->p, err);
    if (!r->bleft && next_block(r, err)) return -1;
    uint64_t kind = getv(r, C_KIND + r->prev_kind);
    memset(out, 0, sizeof *out);
    out->p = TDX_NO_ID;
    bool known = kind >= 1 && kind < TDX_MU_NKINDS;
    uint64_t dq = known ? getv(r, C_DT + (uint32_t)kind) : 0;
    uint64_t rem = known && r->unit > 1 ? getv(r, C_REM) : 0;
    if (known) {
        out->kind = (uint8_t)kind;
        if (kind == TDX_MU_PROCS) out->n = getv(r, C_N);
        if (has_p((int)kind)) {
            out->p = (int64_t)((uint64_t)r->lastp[p_pred((int)kind)] +
                               (uint64_t)tdx_unzigzag(getv(r, C_P + (uint32_t)kind)));
            r->lastp[kind] = out->p;
        }
        if (has_why((int)kind)) {
            uint64_t why = getv(r, C_WHY + (uint32_t)kind);
            if (!why || why > TDX_MU_WHY_ALL) r->bad = true;
            out->why = (uint8_t)why;
        }
    }
    /* times never go back, nor past the last event (a unit above 1: times are not negative) */
    uint64_t q = (uint64_t)r->t / r->unit;
    if (r->bad || r->dec.bad || !known || rem >= r->unit ||
        (r->unit > 1 && (r->t < 0 || r->last < 0)) ||
        dq > (uint64_t)r->last / r->unit - (r->unit > 1 ? q : (uint64_t)r->t))
        return corrupt(r, r->block, err);
    int64_t t = (int64_t)((q + dq) * r->unit + rem);
    if (r->unit == 1) t = (int64_t)((uint64_t)r->t + dq);
    if (t < r->t || t > r->last) return corrupt(r, r->block, err);
    r->t = t;
    out->time = t;
    r->prev_kind = (uint32_t)kind;
    r->left--;
    /* a block's end: every value and coded byte used */
    if (!--r->bleft && (r->vleft || !tdx_rans_dec_ok(&r->dec))) return corrupt(r, r->block, err);
    return 1;
}
