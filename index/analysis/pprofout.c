/* pprofout.c: profile.proto written by hand (the few messages a trace profile uses): varints and
 * length-delimited fields, zero values left out, repeated numbers packed. */
#include "index/analysis/pprofout.h"

#include <string.h>

#include "core/hmap.h"
#include "core/varint.h"
#include "index/views/viewgen_store.h"

/* profile.proto field numbers */
enum { P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_LOCATION = 4, P_FUNCTION = 5, P_STRINGS = 6 };
enum { P_PERIOD_TYPE = 11, P_PERIOD = 12 };

typedef struct wr {
    const tdx_gen *tabs;
    tdx_vgstore strs; /* the string table: "" first, the rest by content in the order added */
    tdx_hmap fn_idx;  /* file << 32 | func -> function number */
    tdx_hmap loc_idx; /* PC -> location number */
    tdx_buf fns, locs, samples, msg, ids;
    int oom;
} wr;

static void put_key(tdx_buf *b, unsigned field, unsigned wire, int *rc) {
    *rc |= tdx_buf_uvarint(b, (uint64_t)field << 3 | wire);
}

static void put_u(tdx_buf *b, unsigned field, uint64_t v, int *rc) {
    if (!v) return;
    put_key(b, field, 0, rc);
    *rc |= tdx_buf_uvarint(b, v);
}

static void put_bytes(tdx_buf *b, unsigned field, const void *p, size_t n, int *rc) {
    put_key(b, field, 2, rc);
    *rc |= tdx_buf_uvarint(b, n) | tdx_buf_append(b, p, n);
}

/* The string table's index of s[0..n), added at the end when new. */
static uint64_t str_of(wr *w, const uint8_t *p, size_t n) {
    uint32_t id = tdx_vgstore_intern(&w->strs, p, n);
    if (w->strs.oom) w->oom = 1;
    return id;
}

static uint64_t lit(wr *w, const char *s) {
    return str_of(w, (const uint8_t *)s, strlen(s));
}

static uint64_t tab_str(wr *w, uint32_t id) {
    tdx_str t = tdx_gen_str(w->tabs, id);
    return str_of(w, t.p, t.n);
}

static void value_type(wr *w, tdx_buf *out, unsigned field, uint64_t type, uint64_t unit, int *rc) {
    w->msg.n = 0;
    put_u(&w->msg, 1, type, rc);
    put_u(&w->msg, 2, unit, rc);
    put_bytes(out, field, w->msg.v, w->msg.n, rc);
}

/* The function of a frame, added (with its strings) when new: its number. */
static uint64_t function_of(wr *w, const tdx_frame *f, int *rc) {
    uint64_t key = (uint64_t)f->file << 32 | f->func;
    int inserted;
    uint32_t next = (uint32_t)(w->fn_idx.n + 1);
    uint32_t *slot = tdx_hmap_upsert(&w->fn_idx, key, next, &inserted);
    if (!slot) {
        w->oom = 1;
        return 0;
    }
    if (!inserted) return *slot;
    uint64_t name = tab_str(w, f->func), file = tab_str(w, f->file);
    w->msg.n = 0;
    put_u(&w->msg, 1, next, rc);
    put_u(&w->msg, 2, name, rc);
    put_u(&w->msg, 3, name, rc); /* system name: the same, as in Go */
    put_u(&w->msg, 4, file, rc);
    put_bytes(&w->fns, P_FUNCTION, w->msg.v, w->msg.n, rc);
    return next;
}

/* The location of a frame's PC, added when new (the first frame with the PC names it). */
static uint64_t location_of(wr *w, const tdx_frame *f, int *rc) {
    uint32_t at = tdx_hmap_get(&w->loc_idx, f->pc);
    if (at != TDX_HMAP_EMPTY) return at;
    uint64_t fn = function_of(w, f, rc);
    uint32_t id = (uint32_t)(w->loc_idx.n + 1);
    if (tdx_hmap_put(&w->loc_idx, f->pc, id)) w->oom = 1;
    tdx_buf line = {0};
    put_u(&line, 1, fn, rc);
    put_u(&line, 2, f->line, rc);
    w->msg.n = 0;
    put_u(&w->msg, 1, id, rc);
    put_u(&w->msg, 3, f->pc, rc);
    put_bytes(&w->msg, 4, line.v, line.n, rc);
    put_bytes(&w->locs, P_LOCATION, w->msg.v, w->msg.n, rc);
    tdx_vec_free(&line);
    return id;
}

static void sample(wr *w, const tdx_goprof_rec *r, int *rc) {
    w->ids.n = 0;
    if (r->stack && r->stack < w->tabs->stacks.n) {
        const tdx_stack *st = &w->tabs->stacks.v[r->stack];
        for (uint32_t i = 0; i < st->nframes && i < TDX_PPROF_MAX_FRAMES; i++) {
            const tdx_frame *f = &w->tabs->frames.v[w->tabs->stack_frames.v[st->first + i]];
            *rc |= tdx_buf_uvarint(&w->ids, location_of(w, f, rc));
        }
    }
    tdx_buf vals = {0};
    *rc |= tdx_buf_uvarint(&vals, r->count) | tdx_buf_uvarint(&vals, (uint64_t)r->ns);
    tdx_buf m = {0};
    if (w->ids.n) put_bytes(&m, 1, w->ids.v, w->ids.n, rc);
    put_bytes(&m, 2, vals.v, vals.n, rc);
    put_bytes(&w->samples, P_SAMPLE, m.v, m.n, rc);
    tdx_vec_free(&vals);
    tdx_vec_free(&m);
}

int tdx_pprof_write(tdx_buf *out, const tdx_gen *tabs, const tdx_goprof_rec *recs, size_t n) {
    wr w;
    memset(&w, 0, sizeof w);
    w.tabs = tabs;
    if (tdx_vgstore_init(&w.strs)) return -1;
    int rc = 0;
    /* Go's string table order: "" (the store's 0), the sample types, the functions' strings,
     * the period type */
    uint64_t contentions = lit(&w, "contentions"), count = lit(&w, "count");
    uint64_t delay = lit(&w, "delay"), nanoseconds = lit(&w, "nanoseconds");
    for (size_t i = 0; i < n && !w.oom; i++) sample(&w, &recs[i], &rc);
    uint64_t trace = lit(&w, "trace");
    value_type(&w, out, P_SAMPLE_TYPE, contentions, count, &rc);
    value_type(&w, out, P_SAMPLE_TYPE, delay, nanoseconds, &rc);
    rc |= tdx_buf_append(out, w.samples.v, w.samples.n) | tdx_buf_append(out, w.locs.v, w.locs.n) |
          tdx_buf_append(out, w.fns.v, w.fns.n);
    for (size_t i = 0; i < w.strs.strs.n; i++)
        put_bytes(out, P_STRINGS, w.strs.strs.v[i].p, w.strs.strs.v[i].n, &rc);
    value_type(&w, out, P_PERIOD_TYPE, trace, count, &rc);
    put_u(out, P_PERIOD, 1, &rc);
    tdx_vgstore_free(&w.strs);
    tdx_hmap_free(&w.fn_idx);
    tdx_hmap_free(&w.loc_idx);
    tdx_vec_free(&w.fns);
    tdx_vec_free(&w.locs);
    tdx_vec_free(&w.samples);
    tdx_vec_free(&w.msg);
    tdx_vec_free(&w.ids);
    return rc || w.oom ? -1 : 0;
}
