/* regstats.c: the user region table (see regstats.h) and its section. */
#include "index/analysis/regstats.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/varint.h"
#include "index/format/reader.h"
#include "index/common/viewgen_ser.h"

#define MAGIC "TDXRGN01"

void tdx_regstats_free(tdx_regstats *r) {
    tdx_vec_free(&r->groups);
    tdx_hmap_free(&r->idx);
    memset(r, 0, sizeof *r);
}

static bool same(const tdx_rgkey *a, const tdx_rgkey *b) {
    return a->type == b->type && a->func == b->func && a->file == b->file && a->pc == b->pc &&
           a->line == b->line;
}

void tdx_regstats_add(tdx_regstats *r, const tdx_rgkey *k, int64_t ns) {
    uint64_t w[4] = {k->type | (uint64_t)k->func << 32, k->file, k->pc, k->line};
    uint64_t h = XXH3_64bits(w, sizeof w);
    uint32_t at;
    for (;; h++) { /* a hash two keys share: the next */
        at = tdx_hmap_get(&r->idx, h);
        if (at == TDX_HMAP_EMPTY || same(&r->groups.v[at].key, k)) break;
    }
    if (at == TDX_HMAP_EMPTY) {
        tdx_rgroup g;
        memset(&g, 0, sizeof g);
        g.key = *k;
        if (r->groups.n >= UINT32_MAX - 1 || tdx_vec_push(&r->groups, g) ||
            tdx_hmap_put(&r->idx, h, (uint32_t)(r->groups.n - 1))) {
            r->oom = 1;
            return;
        }
        at = (uint32_t)(r->groups.n - 1);
    }
    tdx_timehist_add(&r->groups.v[at].h, ns);
}

typedef struct sortctx {
    tdx_rgstr_fn str;
    const void *ctx;
} sortctx;

static int cmp_u64(uint64_t a, uint64_t b) {
    return a < b ? -1 : a > b;
}

static int cmp_group(const void *pa, const void *pb, void *pc) {
    const tdx_rgkey *a = &((const tdx_rgroup *)pa)->key, *b = &((const tdx_rgroup *)pb)->key;
    const sortctx *c = pc;
    int d = tdx_str_cmp(c->str(c->ctx, a->type), c->str(c->ctx, b->type));
    if (!d) d = cmp_u64(a->pc, b->pc);
    if (!d) d = tdx_str_cmp(c->str(c->ctx, a->func), c->str(c->ctx, b->func));
    if (!d) d = tdx_str_cmp(c->str(c->ctx, a->file), c->str(c->ctx, b->file));
    if (!d) d = cmp_u64(a->line, b->line);
    return d;
}

static int put_str(tdx_buf *b, tdx_str s) {
    return tdx_ser_bytes(b, s.p, s.n);
}

int tdx_regstats_encode(const tdx_regstats *r, tdx_rgstr_fn str, const void *ctx, tdx_buf *out) {
    size_t n = r->groups.n;
    tdx_rgroup *g = malloc((n ? n : 1) * sizeof *g);
    if (!g) return -1;
    if (n) memcpy(g, r->groups.v, n * sizeof *g);
    sortctx c = {str, ctx};
    if (n > 1) qsort_r(g, n, sizeof *g, cmp_group, &c);
    int rc = tdx_buf_append(out, MAGIC, 8) | tdx_buf_uvarint(out, n);
    for (size_t i = 0; i < n && !rc; i++) {
        const tdx_rgkey *k = &g[i].key;
        const tdx_timehist *h = &g[i].h;
        rc = put_str(out, str(ctx, k->type)) | tdx_buf_uvarint(out, k->pc) |
             put_str(out, str(ctx, k->func)) | put_str(out, str(ctx, k->file)) |
             tdx_buf_uvarint(out, k->line) | tdx_buf_uvarint(out, h->count) |
             tdx_buf_uvarint(out, (uint64_t)h->min) | tdx_buf_uvarint(out, (uint64_t)h->max);
        for (int b = h->min; b <= h->max && !rc; b++) rc = tdx_buf_uvarint(out, h->bucket[b]);
    }
    free(g);
    return rc ? -1 : 0;
}

static tdx_str get_str(tdx_deser *d) {
    size_t n;
    const uint8_t *p = tdx_deser_bytes(d, &n);
    return (tdx_str){p, (uint32_t)n};
}

int tdx_regstats_decode(const uint8_t *p, size_t n, uint64_t off,
                        int (*fn)(void *ctx, const tdx_rgrow *row), void *ctx, tdx_err *err) {
    if (n < 8 || memcmp(p, MAGIC, 8) != 0) return tdx_index_corrupt(err, off, "section REGIONS");
    tdx_deser d = {p + 8, p + n, 0};
    uint64_t count = tdx_deser_u(&d);
    if (count > (uint64_t)(d.end - d.p) / 9) /* a group takes 9 bytes at least */
        d.bad = 1;
    tdx_rgrow row;
    for (uint64_t i = 0; i < count && !d.bad; i++) {
        memset(&row, 0, sizeof row);
        const uint8_t *at = d.p;
        row.type = get_str(&d);
        row.pc = tdx_deser_u(&d);
        row.func = get_str(&d);
        row.file = get_str(&d);
        row.line = tdx_deser_u(&d);
        row.h.count = tdx_deser_u(&d);
        uint64_t lo = tdx_deser_u(&d), hi = tdx_deser_u(&d);
        /* the rows Go shows: within the buckets, none of them more than the count */
        uint64_t sum = 0;
        if (lo > hi || hi >= TDX_HIST_BUCKETS || row.h.count == 0) d.bad = 1;
        for (uint64_t b = lo; b <= hi && !d.bad; b++) {
            row.h.bucket[b] = tdx_deser_u(&d);
            sum += row.h.bucket[b];
            if (row.h.bucket[b] > row.h.count || sum > row.h.count) d.bad = 1;
        }
        /* Go's smallest and largest buckets each hold a sample */
        if (!d.bad && (!row.h.bucket[lo] || !row.h.bucket[hi])) d.bad = 1;
        if (d.bad) {
            d.p = at;
            break;
        }
        row.h.min = (int)lo;
        row.h.max = (int)hi;
        int rc = fn(ctx, &row);
        if (rc) return rc;
    }
    if (d.bad || d.p != d.end)
        return tdx_index_corrupt(err, off + (uint64_t)(d.p - p), "section REGIONS");
    return 0;
}
