/* gsindex.c: the GSTATS section. The groups' table comes first and is small, so listing the groups
 * reads only it; a group's goroutines are one run of rANS-coded blocks, read (and checksummed)
 * only when asked for. */
#include "index/analysis/gsindex.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/checksum.h"
#include "core/hmap.h"
#include "core/varint.h"
#include "index/common/extsort.h"
#include "index/format/format.h"
#include "index/format/rans.h"
#include "index/format/reader.h"
#include "index/common/scratch.h"

#define MAGIC "TDXGST02"
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

/* A run's blocks: up to this many records each, so that coding one holds a bounded number of
 * symbols. Each field has its own context (and so its own frequency table in each block). */
#define BLOCK_RECS 4096
enum {
    R_ID,     /* the first of a run: zigzag(id); then id - previous id - 1 */
    R_FLAGS,  /* has start | has end << 1 */
    R_CREATE, /* zigzag(creation - the previous record's, the first's - t0) */
    R_START,  /* start - creation */
    R_END,    /* end - (start, else creation) */
    R_TOTAL,  /* zigzag(total - the total Go's finalize would give) */
    R_EXEC,   /* the four durations, then the maps' values: as 64-bit two's complement */
    R_SCHED,
    R_SYSCALL,
    R_SYSBLOCK,
    R_PC,     /* zigzag(pc - the previous record's) */
    R_NBLOCK, /* block reasons: count, then per entry key code and ns */
    R_BKEY,   /* 0: the previous record's key at this place; else string id + 1 */
    R_BNS,
    R_NRANGE, /* the same for range names */
    R_RKEY,
    R_RNS,
    R_COUNT
};

static int nomem(tdx_err *err) {
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

/* ---- a run's records ---- */

typedef tdx_gsindex_chain chain;

static void chain_reset(chain *c, int64_t t0, int64_t tlast) {
    c->any = false;
    c->id = c->creation = 0;
    c->pc = 0;
    c->t0 = t0;
    c->tlast = tlast;
    c->keys[0].n = c->keys[1].n = 0;
}

static void chain_free(chain *c) {
    tdx_vec_free(&c->keys[0]);
    tdx_vec_free(&c->keys[1]);
}

/* Moves the chain on past record g (its maps' keys are kept apart: see keep_keys). */
static void chain_past(chain *c, const tdx_gostat *g) {
    c->any = true;
    c->id = g->id;
    c->creation = g->creation;
    c->pc = g->pc;
}

/* The total Go's finalize gives a goroutine: to its end, or to the trace's last event. */
static int64_t expected_total(const tdx_gostat *g, int64_t tlast) {
    return tdx_wsub(g->end ? g->end : tlast, g->creation);
}

static int keep_keys(chain *c, int m, const tdx_gostat_kv *kv, size_t n) {
    if (tdx_vec_reserve(&c->keys[m], n)) return -1;
    for (size_t i = 0; i < n; i++) c->keys[m].v[i] = kv[i].key;
    c->keys[m].n = n;
    return 0;
}

/* A block being coded. */
typedef struct runw {
    tdx_rans_enc e;
    tdx_buf coded;
    uint32_t nrec;
    uint64_t nvals;
    chain ch;
} runw;

static void put_val(runw *w, int f, uint64_t v) {
    tdx_rans_put_uint(&w->e, f & (TDX_RANS_LANES - 1), (uint32_t)f, v);
    w->nvals++;
}

static void put_kvs(runw *w, int f, const tdx_gostat_kv *kv, size_t n, int m) {
    const chain *c = &w->ch;
    put_val(w, f, n);
    for (size_t i = 0; i < n; i++) {
        uint32_t k = kv[i].key;
        put_val(w, f + 1, i < c->keys[m].n && c->keys[m].v[i] == k ? 0 : (uint64_t)k + 1);
        put_val(w, f + 2, (uint64_t)kv[i].ns);
    }
}

/* Adds g to the open block (starting one). 0, or -1 on memory exhaustion. */
static int run_put(runw *w, const tdx_gostat *g) {
    chain *c = &w->ch;
    size_t nv = 16 + 2 * (g->nblock + g->nrange);
    if ((w->nrec == 0 && tdx_rans_enc_reset(&w->e, R_COUNT)) ||
        tdx_rans_enc_reserve(&w->e, nv, nv * 64))
        return -1;
    put_val(w, R_ID, c->any ? (uint64_t)g->id - (uint64_t)c->id - 1 : tdx_zigzag(g->id));
    put_val(w, R_FLAGS, (g->start ? 1u : 0u) | (g->end ? 2u : 0u));
    put_val(w, R_CREATE, tdx_zigzag(tdx_wsub(g->creation, c->any ? c->creation : c->t0)));
    if (g->start) put_val(w, R_START, (uint64_t)g->start - (uint64_t)g->creation);
    if (g->end) put_val(w, R_END, (uint64_t)g->end - (uint64_t)(g->start ? g->start : g->creation));
    put_val(w, R_TOTAL, tdx_zigzag(tdx_wsub(g->total, expected_total(g, c->tlast))));
    put_val(w, R_EXEC, (uint64_t)g->exec);
    put_val(w, R_SCHED, (uint64_t)g->sched);
    put_val(w, R_SYSCALL, (uint64_t)g->syscall);
    put_val(w, R_SYSBLOCK, (uint64_t)g->syscall_block);
    put_val(w, R_PC, tdx_zigzag((int64_t)(g->pc - c->pc)));
    put_kvs(w, R_NBLOCK, g->block, g->nblock, 0);
    put_kvs(w, R_NRANGE, g->range, g->nrange, 1);
    chain_past(c, g);
    w->nrec++;
    return w->e.oom || keep_keys(c, 0, g->block, g->nblock) || keep_keys(c, 1, g->range, g->nrange)
               ? -1
               : 0;
}

/* Appends the open block, framed (records, values, coded length, the coded bytes), to out. */
static int run_flush(runw *w, tdx_buf *out) {
    if (!w->nrec) return 0;
    w->coded.n = 0;
    int rc = tdx_rans_enc_finish(&w->e, &w->coded) || tdx_buf_uvarint(out, w->nrec) ||
             tdx_buf_uvarint(out, w->nvals) || tdx_buf_uvarint(out, w->coded.n) ||
             tdx_buf_append(out, w->coded.v, w->coded.n);
    w->nrec = 0;
    w->nvals = 0;
    return rc ? -1 : 0;
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
    return tdx_gostats_group_cmp(ctx, a->name, a->exec, b->name, b->exec);
}

/* Moves the framed blocks in b to the scratch file and the run's hash. */
static int drain(tdx_buf *b, tdx_scratch *data, XXH3_state_t *h, tdx_err *err) {
    if (!b->n) return 0;
    if (tdx_scratch_put(data, b->v, b->n, err)) return -1;
    XXH3_64bits_update(h, b->v, b->n);
    b->n = 0;
    return 0;
}

/* Ends a group's run: its last block, its length and hash. */
static int close_run(runw *w, tdx_buf *b, tdx_scratch *data, XXH3_state_t *h, wgroup *g,
                     tdx_err *err) {
    if (run_flush(w, b)) return nomem(err);
    if (drain(b, data, h, err)) return -1;
    g->len = data->len - g->off;
    g->hash = XXH3_64bits_digest(h);
    return 0;
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
    runw w = {0};
    uint64_t total = 0;
    int64_t exec = 0;
    int rc = -1, got;
    tdx_rans_enc_init(&w.e);
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
        wgroup *gr = &groups.v[*slot];
        // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): the push above made groups.v
        gr->count++;
        gr->exec = tdx_wadd(gr->exec, g.exec);
        total++;
        exec = tdx_wadd(exec, g.exec);
        b.n = 0;
        if (tdx_gostat_encode(&b, &g)) {
            nomem(err);
            goto out;
        }
        if (tdx_xsort_add(x, g.name, (uint64_t)g.id ^ TDX_XSORT_SIGN, b.v, b.n, err)) goto out;
    }
    if (got < 0 || tdx_xsort_rewind(x, err)) goto out;
    b.n = 0;
    /* Each group's run, to the scratch file, with its checksum. */
    if (groups.n && tdx_scratch_open(&data, beside, err)) goto out;
    tdx_xrec r;
    wgroup *cur = NULL;
    while ((got = tdx_xsort_next(x, &r, err)) == 1) {
        if (!cur || r.k1 != cur->name) {
            if (cur && (close_run(&w, &b, &data, h, cur, err))) goto out;
            uint32_t gi = tdx_hmap_get(&by_name, r.k1);
            if (gi == TDX_HMAP_EMPTY || gi >= groups.n || !groups.v) {
                tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "goroutine statistics: a sorted name is new");
                goto out;
            }
            cur = &groups.v[gi];
            cur->off = data.len;
            chain_reset(&w.ch, t0, tlast);
            if (XXH3_64bits_reset(h) != XXH_OK) {
                nomem(err);
                goto out;
            }
        }
        const uint8_t *rp = r.p;
        if (tdx_gostat_decode(&rp, r.p + r.n, UINT32_MAX, &g, &kv)) {
            tdx_errf(err, TDX_EIO, TDX_NO_OFFSET,
                     "goroutine statistics: a sorted record is damaged");
            goto out;
        }
        if (run_put(&w, &g) || (w.nrec == BLOCK_RECS && run_flush(&w, &b))) {
            nomem(err);
            goto out;
        }
        if (drain(&b, &data, h, err)) goto out;
    }
    if (got < 0 || (cur && close_run(&w, &b, &data, h, cur, err))) goto out;
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
        const wgroup *gr = &groups.v[i];
        tdx_le64(e + T_NAME, gr->name);
        tdx_le64(e + T_COUNT, gr->count);
        tdx_le64(e + T_EXEC, (uint64_t)gr->exec);
        tdx_le64(e + T_OFF, gr->off);
        tdx_le64(e + T_LEN, gr->len);
        tdx_le64(e + T_HASH, gr->hash);
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
    tdx_rans_enc_free(&w.e);
    tdx_vec_free(&w.coded);
    chain_free(&w.ch);
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
    chain_free(&x->ch);
    tdx_rans_dec_free(&x->dec);
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

/* The head's length, when its checksum holds (0 otherwise). */
static uint64_t head_len(const uint8_t *p, size_t n) {
    if (n < GH_SIZE + 8) return 0;
    uint64_t head = tdx_rd64(p + GH_HEADLEN);
    if (head < GH_SIZE + 8 || head > n ||
        !tdx_checksum_ok(p, (size_t)head - 8, tdx_rd64(p + head - 8)))
        return 0;
    return head;
}

int tdx_gsindex_open(tdx_gsindex *x, const uint8_t *p, size_t n, uint64_t base, tdx_err *err) {
    memset(x, 0, sizeof *x);
    tdx_rans_dec_init(&x->dec);
    x->p = p;
    x->n = n;
    x->base = base;
    uint64_t head = head_len(p, n);
    if (!head || memcmp(p, MAGIC, 8) != 0) return corrupt(x, 0, "header", err);
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
    if (!tdx_checksum_ok(run, (size_t)len, tdx_rd64(e + T_HASH)))
        return corrupt(x, (uint64_t)(run - x->p), "a group's goroutines", err);
    x->rp = run;
    x->rend = run + len;
    x->left = tdx_rd64(e + T_COUNT);
    x->want_exec = (int64_t)tdx_rd64(e + T_EXEC);
    x->run_exec = 0;
    x->block = run;
    x->bleft = x->vleft = 0;
    x->bad = false;
    chain_reset(&x->ch, x->t0, x->tlast);
    return 0;
}

/* The next value of the block, of field f (0, and the run marked bad, past its values). */
static uint64_t get(tdx_gsindex *x, int f) {
    if (x->vleft == 0) {
        x->bad = true;
        return 0;
    }
    x->vleft--;
    uint64_t v = tdx_rans_get_uint(&x->dec, f & (TDX_RANS_LANES - 1), (uint32_t)f);
    if (x->dec.bad) x->bad = true;
    return v;
}

/* Starts the run's next block (its records, values and coded length, then the coded bytes). */
static bool next_block(tdx_gsindex *x) {
    uint64_t nrec, nvals, len;
    const uint8_t *p = x->rp;
    int k1 = tdx_uvarint(p, x->rend, &nrec);
    if (k1 < 0) return false;
    p += k1;
    int k2 = tdx_uvarint(p, x->rend, &nvals);
    if (k2 < 0) return false;
    p += k2;
    int k3 = tdx_uvarint(p, x->rend, &len);
    if (k3 < 0) return false;
    p += k3;
    if (nrec == 0 || nrec > BLOCK_RECS || nrec > x->left || len > (uint64_t)(x->rend - p) ||
        tdx_rans_dec_start(&x->dec, R_COUNT, p, (size_t)len))
        return false;
    x->block = x->rp;
    x->rp = p + len;
    x->bleft = nrec;
    x->vleft = nvals;
    return true;
}

/* A map's entries (count, then key code and value each) into x->kv, keys up to nstr. A map
 * holds each key once, so at most nstr + 1 entries: values coded in no bits at all (a context
 * with a single symbol) cannot make a few bytes claim more. */
static void get_kvs(tdx_gsindex *x, int f, int m, uint64_t nstr) {
    uint64_t n = get(x, f);
    if (x->bad || n > x->vleft / 2 || n > nstr + 1 ||
        tdx_vec_reserve(&x->kv, x->kv.n + (size_t)n) ||
        tdx_vec_reserve(&x->ch.keys[m], (size_t)n)) {
        x->bad = true;
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t code = get(x, f + 1), key = code - 1;
        if (code == 0 && i < x->ch.keys[m].n) key = x->ch.keys[m].v[i];
        if (x->bad || (code == 0 && i >= x->ch.keys[m].n) || key > nstr) {
            x->bad = true;
            return;
        }
        x->kv.v[x->kv.n++] = (tdx_gostat_kv){(uint32_t)key, (int64_t)get(x, f + 2)};
        x->ch.keys[m].v[i] = (uint32_t)key; /* the previous record's entry i is read: replace it */
    }
    x->ch.keys[m].n = (size_t)n;
}

/* Decodes one record of the open block into out (x->bad when malformed). */
static void get_record(tdx_gsindex *x, tdx_gostat *g) {
    memset(g, 0, sizeof *g);
    uint64_t d = get(x, R_ID);
    const chain *c = &x->ch;
    g->id = c->any ? (int64_t)((uint64_t)c->id + 1 + d) : tdx_unzigzag(d);
    uint64_t flags = get(x, R_FLAGS);
    g->creation = tdx_wadd(c->any ? c->creation : c->t0, tdx_unzigzag(get(x, R_CREATE)));
    if (flags & 1) g->start = (int64_t)((uint64_t)g->creation + get(x, R_START));
    if (flags & 2)
        g->end = (int64_t)((uint64_t)(g->start ? g->start : g->creation) + get(x, R_END));
    g->total = tdx_wadd(expected_total(g, c->tlast), tdx_unzigzag(get(x, R_TOTAL)));
    g->exec = (int64_t)get(x, R_EXEC);
    g->sched = (int64_t)get(x, R_SCHED);
    g->syscall = (int64_t)get(x, R_SYSCALL);
    g->syscall_block = (int64_t)get(x, R_SYSBLOCK);
    g->pc = c->pc + (uint64_t)tdx_unzigzag(get(x, R_PC));
    /* has start/end and a time 0 would read back as neither */
    if (flags > 3 || (!!(flags & 1) != (g->start != 0)) || (!!(flags & 2) != (g->end != 0)))
        x->bad = true;
    x->kv.n = 0;
    uint64_t nstr = x->strs.n - 1;
    get_kvs(x, R_NBLOCK, 0, nstr);
    size_t nb = x->kv.n;
    get_kvs(x, R_NRANGE, 1, nstr);
    g->block = x->kv.v;
    g->nblock = nb;
    g->range = x->kv.v ? x->kv.v + nb : NULL; /* (NULL + 0 is undefined) */
    g->nrange = x->kv.n - nb;
}

int tdx_gsindex_next(tdx_gsindex *x, tdx_gostat *out, tdx_err *err) {
    if (x->left == 0) {
        if (x->rp != x->rend) return corrupt(x, (uint64_t)(x->rp - x->p), "a group's end", err);
        if (x->run_exec != x->want_exec)
            return corrupt(x, (uint64_t)(x->rp - x->p), "a group's total", err);
        return 0;
    }
    if (x->bleft == 0 && !next_block(x))
        return corrupt(x, (uint64_t)(x->rp - x->p), "a block of goroutines", err);
    get_record(x, out);
    if (x->bad) return corrupt(x, (uint64_t)(x->block - x->p), "a goroutine's record", err);
    if (x->ch.any && out->id <= x->ch.id)
        return corrupt(x, (uint64_t)(x->block - x->p), "goroutine ids out of order", err);
    chain_past(&x->ch, out);
    x->run_exec = tdx_wadd(x->run_exec, out->exec);
    x->left--;
    /* every value of a finished block was read, and nothing else was there */
    if (--x->bleft == 0 && (x->vleft != 0 || !tdx_rans_dec_ok(&x->dec)))
        return corrupt(x, (uint64_t)(x->block - x->p), "a block of goroutines", err);
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
