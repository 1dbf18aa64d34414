/* gsindex.c: the GSTATS section. The groups' table comes first and is small, so listing the groups
 * reads only it; a group's goroutines are one run, read (and checksummed) only when asked for. */
#include "gsindex.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/hmap.h"
#include "core/varint.h"
#include "index/extsort.h"
#include "index/format.h"
#include "index/reader.h"
#include "index/scratch.h"

#define MAGIC "TDXGST01"
enum {
    GH_MAGIC = 0,
    GH_GOROUTINES = 8,
    GH_EXEC = 16,
    GH_T0 = 24,
    GH_TLAST = 32,
    GH_NSTR = 40,
    GH_NGROUPS = 48,
    GH_HEADLEN = 56,
    GH_SIZE = 64
};
enum { T_NAME = 0, T_COUNT = 8, T_EXEC = 16, T_OFF = 24, T_LEN = 32, T_HASH = 40, T_SIZE = 48 };
enum { F_START = 1, F_END = 2 };

static int nomem(tdx_err *err) {
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

/* ---- records ---- */

static int put_z(tdx_buf *b, int64_t v) {
    return tdx_buf_uvarint(b, tdx_zigzag(v));
}

static int put_kvs(tdx_buf *b, const tdx_gostat_kv *kv, size_t n) {
    int rc = tdx_buf_uvarint(b, n);
    for (size_t i = 0; i < n; i++) rc |= tdx_buf_uvarint(b, kv[i].key) | put_z(b, kv[i].ns);
    return rc;
}

/* What a record is coded against: the previous record of its run (none: zeros) and the end. */
typedef struct chain {
    bool any; /* a previous record (else its fields are 0 and creation counts from t0) */
    int64_t id, creation;
    uint64_t pc;
    int64_t t0, tlast;
} chain;

/* The total Go's finalize gives a goroutine: to its end, or to the trace's last event. */
static int64_t expected_total(const tdx_gostat *g, int64_t tlast) {
    return tdx_wsub(g->end ? g->end : tlast, g->creation);
}

/* One goroutine, its id, creation and PC as differences to the previous record's (wrapping). */
static int enc_rec(tdx_buf *b, const tdx_gostat *g, chain *ch) {
    unsigned flags = (g->start ? F_START : 0) | (g->end ? F_END : 0);
    int rc = put_z(b, tdx_wsub(g->id, ch->id)) | tdx_buf_uvarint(b, flags) |
             put_z(b, tdx_wsub(g->creation, ch->any ? ch->creation : ch->t0));
    if (g->start) rc |= put_z(b, tdx_wsub(g->start, g->creation));
    if (g->end) rc |= put_z(b, tdx_wsub(g->end, g->creation));
    rc |= put_z(b, tdx_wsub(g->total, expected_total(g, ch->tlast))) | put_z(b, g->exec) |
          put_z(b, g->sched) | put_z(b, g->syscall) | put_z(b, g->syscall_block) |
          put_z(b, (int64_t)(g->pc - ch->pc)) | put_kvs(b, g->block, g->nblock) |
          put_kvs(b, g->range, g->nrange);
    ch->any = true, ch->id = g->id, ch->creation = g->creation, ch->pc = g->pc;
    return rc ? -1 : 0;
}

typedef struct cursor {
    const uint8_t *p, *end;
    int bad;
} cursor;

static uint64_t get_u(cursor *c) {
    uint64_t v = 0;
    int k = tdx_uvarint(c->p, c->end, &v);
    if (k < 0) {
        c->bad = 1;
        return 0;
    }
    c->p += k;
    return v;
}

static int64_t get_z(cursor *c) {
    return tdx_unzigzag(get_u(c));
}

/* Decodes a record; its maps go to kv (string ids up to nstr). 0, or -1 when malformed. */
static int dec_rec(cursor *c, chain *ch, uint64_t nstr, tdx_gostat *g, tdx_gostat_kvvec *kv) {
    memset(g, 0, sizeof *g);
    g->id = tdx_wadd(ch->id, get_z(c));
    uint64_t flags = get_u(c);
    g->creation = tdx_wadd(ch->any ? ch->creation : ch->t0, get_z(c));
    if (flags & F_START) g->start = tdx_wadd(g->creation, get_z(c));
    if (flags & F_END) g->end = tdx_wadd(g->creation, get_z(c));
    g->total = tdx_wadd(expected_total(g, ch->tlast), get_z(c));
    g->exec = get_z(c);
    g->sched = get_z(c);
    g->syscall = get_z(c);
    g->syscall_block = get_z(c);
    g->pc = ch->pc + (uint64_t)get_z(c);
    kv->n = 0;
    size_t nb = 0;
    for (int m = 0; m < 2 && !c->bad; m++) {
        uint64_t n = get_u(c);
        if (n > (uint64_t)(c->end - c->p) || tdx_vec_reserve(kv, kv->n + (size_t)n)) return -1;
        for (uint64_t i = 0; i < n && !c->bad; i++) {
            uint64_t key = get_u(c);
            int64_t ns = get_z(c);
            if (key > nstr) return -1;
            kv->v[kv->n++] = (tdx_gostat_kv){(uint32_t)key, ns};
        }
        if (m == 0) nb = kv->n;
    }
    if (c->bad || flags > (F_START | F_END) || (!!(flags & F_START) != (g->start != 0)) ||
        (!!(flags & F_END) != (g->end != 0)))
        return -1;
    g->block = kv->v;
    g->nblock = nb;
    g->range = kv->v + nb;
    g->nrange = kv->n - nb;
    ch->any = true, ch->id = g->id, ch->creation = g->creation, ch->pc = g->pc;
    return 0;
}

/* ---- writing ---- */

typedef struct wgroup {
    uint32_t name;
    uint64_t count;
    int64_t exec;
    uint64_t off, len, hash;
} wgroup;

static int wgroup_cmp(const void *pa, const void *pb, void *ctx) {
    const wgroup *a = pa, *b = pb;
    const tdx_gostats *s = ctx;
    if (a->exec != b->exec) return a->exec > b->exec ? -1 : 1;
    tdx_str x = tdx_gostats_str(s, a->name), y = tdx_gostats_str(s, b->name);
    size_t n = x.n < y.n ? x.n : y.n;
    int c = n ? memcmp(x.p, y.p, n) : 0;
    return c ? c : (x.n > y.n) - (x.n < y.n);
}

int tdx_gsindex_write(tdx_gostats *s, const char *beside, size_t budget, tdx_gsindex_put put,
                      void *ctx, tdx_err *err) {
    int64_t t0 = tdx_gostats_first_time(s), tlast = tdx_gostats_last_time(s);
    tdx_xsort *x = tdx_xsort_new(beside, budget);
    XXH3_state_t *h = XXH3_createState();
    TDX_VEC(wgroup) groups = {0};
    tdx_gostat_kvvec kv = {0};
    tdx_hmap by_name = {0};
    tdx_buf b = {0};
    tdx_scratch data = {-1, 0, {0}};
    uint64_t total = 0;
    int64_t exec = 0;
    int rc = -1, got;
    if (!x || !h) {
        nomem(err);
        goto out;
    }
    /* Regroup the records, which come by id, by name (then id). */
    tdx_gostat g;
    while ((got = tdx_gostats_next(s, &g, err)) == 1) {
        int ins;
        uint32_t *slot = tdx_hmap_upsert(&by_name, g.name, (uint32_t)groups.n, &ins);
        if (!slot || (ins && tdx_vec_push(&groups, ((wgroup){g.name, 0, 0, 0, 0, 0})))) {
            nomem(err);
            goto out;
        }
        wgroup *w = &groups.v[*slot];
        // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): the push above made groups.v
        w->count++;
        w->exec = tdx_wadd(w->exec, g.exec);
        total++;
        exec = tdx_wadd(exec, g.exec);
        b.n = 0;
        chain solo = {false, 0, 0, 0, t0, tlast};
        if (enc_rec(&b, &g, &solo)) {
            nomem(err);
            goto out;
        }
        if (tdx_xsort_add(x, g.name, (uint64_t)g.id ^ TDX_XSORT_SIGN, b.v, b.n, err)) goto out;
    }
    if (got < 0 || tdx_xsort_rewind(x, err)) goto out;
    /* Each group's run, to the scratch file, with its checksum. */
    if (groups.n && tdx_scratch_open(&data, beside, err)) goto out;
    tdx_xrec r;
    wgroup *cur = NULL;
    chain ch = {false, 0, 0, 0, t0, tlast};
    while ((got = tdx_xsort_next(x, &r, err)) == 1) {
        if (!cur || r.k1 != cur->name) {
            if (cur) cur->len = data.len - cur->off, cur->hash = XXH3_64bits_digest(h);
            uint32_t gi = tdx_hmap_get(&by_name, r.k1);
            if (gi == TDX_HMAP_EMPTY || gi >= groups.n || !groups.v) {
                tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "goroutine statistics: a sorted name is new");
                goto out;
            }
            cur = &groups.v[gi];
            cur->off = data.len;
            ch = (chain){false, 0, 0, 0, t0, tlast};
            if (XXH3_64bits_reset(h) != XXH_OK) {
                nomem(err);
                goto out;
            }
        }
        cursor c = {r.p, r.p + r.n, 0};
        chain solo = {false, 0, 0, 0, t0, tlast};
        if (dec_rec(&c, &solo, UINT32_MAX, &g, &kv)) {
            tdx_errf(err, TDX_EIO, TDX_NO_OFFSET,
                     "goroutine statistics: a sorted record is damaged");
            goto out;
        }
        b.n = 0;
        if (enc_rec(&b, &g, &ch)) {
            nomem(err);
            goto out;
        }
        if (tdx_scratch_put(&data, b.v, b.n, err)) goto out;
        XXH3_64bits_update(h, b.v, b.n);
    }
    if (got < 0) goto out;
    if (cur) cur->len = data.len - cur->off, cur->hash = XXH3_64bits_digest(h);
    if (groups.n) qsort_r(groups.v, groups.n, sizeof *groups.v, wgroup_cmp, s);
    /* The head: header, strings, table, its checksum. */
    b.n = 0;
    size_t nstr = tdx_gostats_nstrings(s);
    if (tdx_vec_reserve(&b, GH_SIZE)) {
        nomem(err);
        goto out;
    }
    b.n = GH_SIZE;
    memcpy(b.v, MAGIC, 8);
    tdx_le64(b.v + GH_GOROUTINES, total);
    tdx_le64(b.v + GH_EXEC, (uint64_t)exec);
    tdx_le64(b.v + GH_T0, (uint64_t)t0);
    tdx_le64(b.v + GH_TLAST, (uint64_t)tlast);
    tdx_le64(b.v + GH_NSTR, nstr);
    tdx_le64(b.v + GH_NGROUPS, groups.n);
    int bad = 0;
    for (uint32_t i = 1; i <= nstr; i++) {
        tdx_str t = tdx_gostats_str(s, i);
        bad |= tdx_buf_uvarint(&b, t.n) | tdx_buf_append(&b, t.p, t.n);
    }
    for (size_t i = 0; i < groups.n; i++) {
        uint8_t e[T_SIZE];
        const wgroup *w = &groups.v[i];
        tdx_le64(e + T_NAME, w->name);
        tdx_le64(e + T_COUNT, w->count);
        tdx_le64(e + T_EXEC, (uint64_t)w->exec);
        tdx_le64(e + T_OFF, w->off);
        tdx_le64(e + T_LEN, w->len);
        tdx_le64(e + T_HASH, w->hash);
        bad |= tdx_buf_append(&b, e, sizeof e);
    }
    uint8_t tail[8];
    if (bad || tdx_vec_reserve(&b, b.n + 8)) {
        nomem(err);
        goto out;
    }
    tdx_le64(b.v + GH_HEADLEN, b.n + 8);
    tdx_le64(tail, XXH3_64bits(b.v, b.n));
    if (tdx_buf_append(&b, tail, 8) || put(ctx, b.v, b.n, err)) goto out;
    if (groups.n && tdx_scratch_copy(&data, put, ctx, err)) goto out;
    rc = 0;
out:
    tdx_scratch_close(&data);
    tdx_xsort_free(x);
    XXH3_freeState(h);
    tdx_vec_free(&groups);
    tdx_vec_free(&kv);
    tdx_vec_free(&b);
    tdx_hmap_free(&by_name);
    return rc;
}

/* ---- reading ---- */

static int corrupt(const tdx_gsindex *x, uint64_t at, const char *what, tdx_err *err) {
    char buf[96];
    snprintf(buf, sizeof buf, "section GSTATS (%s)", what);
    return tdx_index_corrupt(err, x->base + at, buf);
}

void tdx_gsindex_free(tdx_gsindex *x) {
    tdx_vec_free(&x->strs);
    tdx_vec_free(&x->kv);
    memset(x, 0, sizeof *x);
}

static int str_order(const void *pa, const void *pb) {
    const tdx_str *a = pa, *b = pb;
    size_t m = a->n < b->n ? a->n : b->n;
    int o = m ? memcmp(a->p, b->p, m) : 0;
    return o ? o : (a->n > b->n) - (a->n < b->n);
}

/* Whether no two groups have the same name (by content: the string table might repeat one). */
static bool names_unique(const tdx_gsindex *x) {
    if (x->ngroups < 2) return true;
    tdx_str *v = malloc((size_t)x->ngroups * sizeof *v);
    if (!v) return false;
    for (uint64_t i = 0; i < x->ngroups; i++)
        v[i] = tdx_gsindex_str(x, tdx_gsindex_group(x, i).name);
    qsort(v, (size_t)x->ngroups, sizeof *v, str_order);
    bool ok = true;
    for (uint64_t i = 1; i < x->ngroups && ok; i++) ok = str_order(&v[i - 1], &v[i]) != 0;
    free(v);
    return ok;
}

int tdx_gsindex_open(tdx_gsindex *x, const uint8_t *p, size_t n, uint64_t base, tdx_err *err) {
    memset(x, 0, sizeof *x);
    x->p = p;
    x->n = n;
    x->base = base;
    if (n < GH_SIZE + 8 || memcmp(p, MAGIC, 8) != 0) return corrupt(x, 0, "header", err);
    uint64_t head = tdx_rd64(p + GH_HEADLEN);
    if (head < GH_SIZE + 8 || head > n ||
        XXH3_64bits(p, (size_t)head - 8) != tdx_rd64(p + head - 8))
        return corrupt(x, 0, "header", err);
    x->goroutines = tdx_rd64(p + GH_GOROUTINES);
    x->exec = (int64_t)tdx_rd64(p + GH_EXEC);
    x->t0 = (int64_t)tdx_rd64(p + GH_T0);
    x->tlast = (int64_t)tdx_rd64(p + GH_TLAST);
    uint64_t nstr = tdx_rd64(p + GH_NSTR);
    x->ngroups = tdx_rd64(p + GH_NGROUPS);
    cursor c = {p + GH_SIZE, p + head - 8, 0};
    if (nstr > (uint64_t)(c.end - c.p) || nstr >= UINT32_MAX ||
        tdx_vec_reserve(&x->strs, (size_t)nstr + 1))
        goto bad;
    x->strs.v[x->strs.n++] = (tdx_str){(const uint8_t *)"", 0};
    for (uint64_t i = 0; i < nstr; i++) {
        uint64_t len = get_u(&c);
        if (c.bad || len > (uint64_t)(c.end - c.p)) goto bad;
        x->strs.v[x->strs.n++] = (tdx_str){c.p, (uint32_t)len};
        c.p += len;
    }
    if (x->ngroups > (uint64_t)(c.end - c.p) / T_SIZE ||
        (uint64_t)(c.end - c.p) != x->ngroups * T_SIZE)
        goto bad;
    x->table = c.p;
    x->data = p + head;
    x->ndata = n - (size_t)head;
    /* The table as a reader relies on it: bounds, display order (each name once, so that
     * --name finds the one group), no empty group, counts and times adding up to the header's. */
    uint64_t total = 0;
    int64_t exec = 0;
    for (uint64_t i = 0; i < x->ngroups; i++) {
        const uint8_t *e = x->table + i * T_SIZE;
        uint64_t off = tdx_rd64(e + T_OFF), len = tdx_rd64(e + T_LEN);
        if (tdx_rd64(e + T_NAME) > nstr || off > x->ndata || len > x->ndata - off) goto bad;
        tdx_gsgroup gr = tdx_gsindex_group(x, i);
        if (gr.count == 0 || gr.count > UINT64_MAX - total) goto bad;
        total += gr.count;
        exec = tdx_wadd(exec, gr.exec);
        if (i) {
            tdx_gsgroup pr = tdx_gsindex_group(x, i - 1);
            tdx_str a = tdx_gsindex_str(x, pr.name), b = tdx_gsindex_str(x, gr.name);
            if (pr.exec < gr.exec || (pr.exec == gr.exec && str_order(&a, &b) >= 0)) goto bad;
        }
    }
    if (total != x->goroutines || exec != x->exec || !names_unique(x)) goto bad;
    return 0;
bad:
    tdx_gsindex_free(x);
    x->base = base;
    return corrupt(x, 0, "header", err);
}

tdx_str tdx_gsindex_str(const tdx_gsindex *x, uint32_t id) {
    return id < x->strs.n ? x->strs.v[id] : (tdx_str){(const uint8_t *)"", 0};
}

tdx_gsgroup tdx_gsindex_group(const tdx_gsindex *x, uint64_t i) {
    const uint8_t *e = x->table + i * T_SIZE;
    return (tdx_gsgroup){(uint32_t)tdx_rd64(e + T_NAME), tdx_rd64(e + T_COUNT),
                         (int64_t)tdx_rd64(e + T_EXEC)};
}

int tdx_gsindex_begin(tdx_gsindex *x, uint64_t i, tdx_err *err) {
    const uint8_t *e = x->table + i * T_SIZE;
    uint64_t off = tdx_rd64(e + T_OFF), len = tdx_rd64(e + T_LEN);
    const uint8_t *run = x->data + off;
    if (XXH3_64bits(run, (size_t)len) != tdx_rd64(e + T_HASH))
        return corrupt(x, (uint64_t)(run - x->p), "a group's goroutines", err);
    x->rp = run;
    x->rend = run + len;
    x->left = tdx_rd64(e + T_COUNT);
    x->want_exec = (int64_t)tdx_rd64(e + T_EXEC);
    x->run_exec = 0;
    memset(&x->ch, 0, sizeof x->ch);
    return 0;
}

int tdx_gsindex_next(tdx_gsindex *x, tdx_gostat *out, tdx_err *err) {
    if (x->left == 0) {
        if (x->rp != x->rend) return corrupt(x, (uint64_t)(x->rp - x->p), "a group's end", err);
        if (x->run_exec != x->want_exec)
            return corrupt(x, (uint64_t)(x->rp - x->p), "a group's total", err);
        return 0;
    }
    cursor c = {x->rp, x->rend, 0};
    chain ch = {x->ch.any, x->ch.id, x->ch.creation, x->ch.pc, x->t0, x->tlast};
    if (dec_rec(&c, &ch, x->strs.n - 1, out, &x->kv))
        return corrupt(x, (uint64_t)(x->rp - x->p), "a goroutine's record", err);
    if (x->ch.any && out->id <= x->ch.id)
        return corrupt(x, (uint64_t)(x->rp - x->p), "goroutine ids out of order", err);
    x->run_exec = tdx_wadd(x->run_exec, out->exec);
    x->rp = c.p;
    x->ch.any = true, x->ch.id = ch.id, x->ch.creation = ch.creation, x->ch.pc = ch.pc;
    x->left--;
    return 1;
}

int tdx_gsindex_check_span(const tdx_gsindex *x, int64_t t0, int64_t tlast, tdx_err *err) {
    return x->t0 != t0 || x->tlast != tlast ? corrupt(x, 0, "its first or last time", err) : 0;
}

int tdx_gsindex_verify(const uint8_t *p, size_t n, uint64_t base, tdx_err *err) {
    tdx_gsindex x;
    if (tdx_gsindex_open(&x, p, n, base, err)) return -1; /* the table's checks */
    int rc = 0;
    for (uint64_t i = 0; i < x.ngroups && !rc; i++) { /* each run's, as a reader meets them */
        tdx_gostat g;
        int got = tdx_gsindex_begin(&x, i, err) ? -1 : 1;
        while (got == 1) got = tdx_gsindex_next(&x, &g, err);
        rc = got < 0 ? -1 : 0;
    }
    tdx_gsindex_free(&x);
    return rc;
}
