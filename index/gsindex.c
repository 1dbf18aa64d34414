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

static int nomem(tdx_err *err) {
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
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
    return tdx_str_cmp(tdx_gostats_str(s, a->name), tdx_gostats_str(s, b->name));
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
        tdx_gostat_chain solo = {false, 0, 0, 0, t0, tlast};
        if (tdx_gostat_encode(&b, &g, &solo)) {
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
    tdx_gostat_chain ch = {false, 0, 0, 0, t0, tlast};
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
            ch = (tdx_gostat_chain){false, 0, 0, 0, t0, tlast};
            if (XXH3_64bits_reset(h) != XXH_OK) {
                nomem(err);
                goto out;
            }
        }
        const uint8_t *rp = r.p;
        tdx_gostat_chain solo = {false, 0, 0, 0, t0, tlast};
        if (tdx_gostat_decode(&rp, r.p + r.n, &solo, UINT32_MAX, &g, &kv)) {
            tdx_errf(err, TDX_EIO, TDX_NO_OFFSET,
                     "goroutine statistics: a sorted record is damaged");
            goto out;
        }
        b.n = 0;
        if (tdx_gostat_encode(&b, &g, &ch)) {
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
    return tdx_str_cmp(*(const tdx_str *)pa, *(const tdx_str *)pb);
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
    for (uint64_t i = 1; i < x->ngroups && ok; i++) ok = tdx_str_cmp(v[i - 1], v[i]) != 0;
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
    const uint8_t *q = p + GH_SIZE, *qend = p + head - 8;
    if (nstr > (uint64_t)(qend - q) || nstr >= UINT32_MAX ||
        tdx_vec_reserve(&x->strs, (size_t)nstr + 1))
        goto bad;
    x->strs.v[x->strs.n++] = (tdx_str){(const uint8_t *)"", 0};
    for (uint64_t i = 0; i < nstr; i++) {
        uint64_t len;
        int k = tdx_uvarint(q, qend, &len);
        if (k < 0 || len > (uint64_t)(qend - q - k)) goto bad;
        x->strs.v[x->strs.n++] = (tdx_str){q + k, (uint32_t)len};
        q += k + len;
    }
    if (x->ngroups > (uint64_t)(qend - q) / T_SIZE || (uint64_t)(qend - q) != x->ngroups * T_SIZE)
        goto bad;
    x->table = q;
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
            if (pr.exec < gr.exec || (pr.exec == gr.exec && tdx_str_cmp(a, b) >= 0)) goto bad;
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
    x->ch = (tdx_gostat_chain){false, 0, 0, 0, x->t0, x->tlast};
    return 0;
}

int tdx_gsindex_next(tdx_gsindex *x, tdx_gostat *out, tdx_err *err) {
    if (x->left == 0) {
        if (x->rp != x->rend) return corrupt(x, (uint64_t)(x->rp - x->p), "a group's end", err);
        if (x->run_exec != x->want_exec)
            return corrupt(x, (uint64_t)(x->rp - x->p), "a group's total", err);
        return 0;
    }
    const uint8_t *at = x->rp;
    bool any = x->ch.any;
    int64_t prev = x->ch.id;
    if (tdx_gostat_decode(&x->rp, x->rend, &x->ch, x->strs.n - 1, out, &x->kv))
        return corrupt(x, (uint64_t)(at - x->p), "a goroutine's record", err);
    if (any && out->id <= prev)
        return corrupt(x, (uint64_t)(at - x->p), "goroutine ids out of order", err);
    x->run_exec = tdx_wadd(x->run_exec, out->exec);
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
