/* muinput.c: recording and reading the mutator utilization's inputs (section MUTIL). */
#include "muinput.h"

#include <string.h>
#include <xxhash.h>

#include "core/spec.h"
#include "core/varint.h"
#include "index/format.h"
#include "index/reader.h"
#include "index/viewgen_ser.h"

/* The section: magic, u64 records, i64 last event time; the records; the XXH3-64 of every byte
 * before it (the section is streamed, so the table holds no hash). */
#define MAGIC "TDXMUT01"
#define HDR 24
#define TRAILER 8

void tdx_muin_init(tdx_muin *w, const char *beside) {
    memset(w, 0, sizeof *w);
    w->file.fd = -1;
    w->beside = beside;
}

void tdx_muin_free(tdx_muin *w) {
    tdx_scratch_close(&w->file);
    tdx_vec_free(&w->rec);
    tdx_hmap_free(&w->assist);
    tdx_hmap_free(&w->worker);
}

static int oom(tdx_err *err) {
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

static int put(tdx_muin *w, int64_t time, int kind, int64_t p, int64_t g, uint64_t n,
               tdx_err *err) {
    tdx_buf *b = &w->rec;
    b->n = 0;
    uint8_t k = (uint8_t)kind;
    int rc = tdx_buf_append(b, &k, 1) || tdx_ser_i(b, time - w->prev);
    if (kind == TDX_MU_PROCS)
        rc = rc || tdx_buf_uvarint(b, n);
    else if (kind != TDX_MU_STW_BEGIN && kind != TDX_MU_STW_END && kind != TDX_MU_TICK)
        rc = rc || tdx_ser_i(b, p);
    if (kind >= TDX_MU_ASSIST_BEGIN && kind <= TDX_MU_LABEL_DEDICATED) rc = rc || tdx_ser_i(b, g);
    if (rc) return oom(err);
    if (w->file.fd < 0 && tdx_scratch_open(&w->file, w->beside, err)) return -1;
    if (tdx_scratch_put(&w->file, b->v, b->n, err)) return -1;
    w->n++;
    w->prev = time;
    return 0;
}

static bool executing(int s) {
    return s == TDX_GO_RUNNING || s == TDX_GO_SYSCALL;
}

/* The record an event makes (0: none), with its proc and goroutine. */
static int classify(tdx_muin *w, const tdx_event *e, const tdx_gen *g, int64_t *p, int64_t *gid,
                    int *oomed) {
    *p = e->p;
    *gid = e->g;
    switch (e->type) {
    case TDX_EV_PROCS_CHANGE:
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
    case TDX_EV_GC_MARK_ASSIST_BEGIN:
        if (e->g != TDX_NO_ID && tdx_hmap_put(&w->assist, (uint64_t)e->g, 1)) *oomed = 1;
        return TDX_MU_ASSIST_BEGIN;
    case TDX_EV_GC_MARK_ASSIST_END:
        if (e->g != TDX_NO_ID) tdx_hmap_del(&w->assist, (uint64_t)e->g);
        return TDX_MU_ASSIST_END;
    case TDX_EV_GO_LABEL: {
        tdx_str l = e->str[0] < g->strings.n ? tdx_gen_str(g, e->str[0]) : (tdx_str){NULL, 0};
        if (l.n < 3 || memcmp(l.p, "GC ", 3) != 0 || (l.n == 9 && !memcmp(l.p, "GC (idle)", 9)))
            return 0;
        if (tdx_hmap_put(&w->worker, (uint64_t)e->g, 1)) *oomed = 1;
        return l.n == 14 && !memcmp(l.p, "GC (dedicated)", 14) ? TDX_MU_LABEL_DEDICATED
                                                               : TDX_MU_LABEL;
    }
    default:
        break;
    }
    if (e->kind != TDX_KIND_STATE_TRANSITION || e->res_kind != TDX_RES_GOROUTINE) return 0;
    if (executing(e->from) == executing(e->to)) return 0;
    /* Only a goroutine that could count, whatever the flags: assisting, or a GC worker. */
    if (tdx_hmap_get(&w->assist, (uint64_t)e->res) == TDX_HMAP_EMPTY &&
        tdx_hmap_get(&w->worker, (uint64_t)e->res) == TDX_HMAP_EMPTY)
        return 0;
    *gid = e->res;
    return executing(e->to) ? TDX_MU_RUN : TDX_MU_STOP;
}

int tdx_muin_event(tdx_muin *w, const tdx_event *e, const tdx_gen *g, tdx_err *err) {
    w->last = e->time;
    if (e->kind == TDX_KIND_SYNC) goto other; /* carries no table; changes nothing */
    int64_t p, gid;
    int oomed = 0;
    int kind = classify(w, e, g, &p, &gid, &oomed);
    if (oomed) return oom(err);
    if (kind) {
        /* Only a second change at one time stamp can leave Go's value below the state's (its
         * times increase strictly but in converted old traces) */
        w->tick = w->n && e->time == w->prev;
        return put(w, e->time, kind, p, gid, e->args[0], err);
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
    int rc = put_hashed(&x, h, sizeof h, err) ||
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
    r->base = p;
    r->p = p + (n < HDR ? n : HDR);
    r->end = p + (n < HDR + TRAILER ? n : n - TRAILER);
    r->off = off;
    if (n < HDR + TRAILER || memcmp(p, MAGIC, 8) != 0 ||
        XXH3_64bits(p, n - TRAILER) != tdx_rd64(p + n - TRAILER))
        return corrupt(r, p, err);
    r->left = tdx_rd64(p + 8);
    r->last = (int64_t)tdx_rd64(p + 16);
    /* every record takes at least 2 bytes */
    if (r->left > (uint64_t)(n - HDR - TRAILER) / 2) return corrupt(r, p + 8, err);
    return 0;
}

int tdx_muread_next(tdx_muread *r, tdx_murec *out, tdx_err *err) {
    if (!r->left) return r->p == r->end ? 0 : corrupt(r, r->p, err);
    const uint8_t *at = r->p;
    tdx_deser d = {r->p, r->end, 0};
    uint8_t kind = d.p < d.end ? *d.p++ : 0;
    int64_t dt = tdx_deser_i(&d);
    memset(out, 0, sizeof *out);
    out->kind = kind;
    out->p = out->g = TDX_NO_ID;
    if (kind == TDX_MU_PROCS)
        out->n = tdx_deser_u(&d);
    else if (kind != TDX_MU_STW_BEGIN && kind != TDX_MU_STW_END && kind != TDX_MU_TICK)
        out->p = tdx_deser_i(&d);
    if (kind >= TDX_MU_ASSIST_BEGIN && kind <= TDX_MU_LABEL_DEDICATED) out->g = tdx_deser_i(&d);
    /* times never go back, nor past the last event */
    if (d.bad || kind < 1 || kind >= TDX_MU_NKINDS || dt < 0 || dt > r->last - r->t)
        return corrupt(r, at, err);
    r->t += dt;
    out->time = r->t;
    r->p = d.p;
    r->left--;
    return 1;
}
