/* strmap.c: string hashes to ids: a bounded hash table, a sorted run on disk, a Bloom filter. */
#include "index/format/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "core/hmap.h"

#define FIRST_CAP 4096 /* slots (64 KiB) */
#define BLOCK 256      /* run entries a lookup reads at once (4 KiB) */
#define BLOOM_BITS 10  /* per run entry: about 1% of new strings read a block in vain */
#define MERGE_READ 4096

_Static_assert(sizeof(tdx_strmap_ent) == 16, "run entries are 16 bytes");

int tdx_strmap_init(tdx_strmap *m, const char *beside, size_t budget, tdx_err *err) {
    memset(m, 0, sizeof *m);
    m->run.fd = -1;
    /* The budget covers a table and the half-size one it grows from (both live while it does). */
    m->max_cap = FIRST_CAP;
    while (m->max_cap * 2 * sizeof(tdx_strmap_ent) * 3 / 2 <= budget) m->max_cap *= 2;
    m->beside = strdup(beside);
    if (!m->beside) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return 0;
}

void tdx_strmap_free(tdx_strmap *m) {
    free(m->tab);
    if (m->run.fd >= 0) tdx_scratch_close(&m->run);
    tdx_vec_free(&m->first);
    free(m->bloom);
    free(m->beside);
    memset(m, 0, sizeof *m);
    m->run.fd = -1;
}

static inline int cmp_key(uint64_t alo, uint32_t ahi, uint64_t blo, uint32_t bhi) {
    return alo != blo ? (alo < blo ? -1 : 1) : ahi != bhi ? (ahi < bhi ? -1 : 1) : 0;
}

static int cmp_ent(const void *a, const void *b) {
    const tdx_strmap_ent *x = a, *y = b;
    return cmp_key(x->lo, x->hi, y->lo, y->hi);
}

/* ---- the table in memory ---- */

static tdx_strmap_ent *slot(const tdx_strmap *m, uint64_t lo, uint32_t hi) {
    size_t mask = m->cap - 1, i = (size_t)lo & mask;
    for (;; i = (i + 1) & mask) {
        tdx_strmap_ent *e = &m->tab[i];
        if (!e->id || (e->lo == lo && e->hi == hi)) return e;
    }
}

static int grow(tdx_strmap *m, tdx_err *err) {
    size_t ocap = m->cap;
    tdx_strmap_ent *old = m->tab;
    m->cap = ocap ? ocap * 2 : FIRST_CAP;
    m->tab = calloc(m->cap, sizeof *m->tab);
    if (!m->tab) {
        m->tab = old;
        m->cap = ocap;
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    }
    for (size_t i = 0; i < ocap; i++)
        if (old[i].id) *slot(m, old[i].lo, old[i].hi) = old[i];
    free(old);
    return 0;
}

/* ---- the Bloom filter over the run ---- */

typedef struct {
    uint64_t *w;
    size_t nb; /* 64-byte blocks */
} bloom;

static inline uint64_t *bloom_block(bloom f, uint64_t lo, uint32_t hi, uint64_t *bits) {
    uint64_t x = tdx_hash64(lo + (uint64_t)hi * 0x9e3779b97f4a7c15ull);
    size_t b = (size_t)(((x >> 32) * (uint64_t)f.nb) >> 32);
    *bits = tdx_hash64(x);
    return f.w + 8 * b;
}

static void bloom_add(bloom f, uint64_t lo, uint32_t hi) {
    uint64_t y, *w = bloom_block(f, lo, hi, &y);
    for (int k = 0; k < 7; k++, y >>= 9) w[(y >> 6) & 7] |= 1ull << (y & 63);
}

static int bloom_maybe(bloom f, uint64_t lo, uint32_t hi) {
    uint64_t y, *w = bloom_block(f, lo, hi, &y);
    for (int k = 0; k < 7; k++, y >>= 9)
        if (!(w[(y >> 6) & 7] >> (y & 63) & 1)) return 0;
    return 1;
}

/* ---- the run ---- */

static uint32_t run_find(tdx_strmap *m, uint64_t lo, uint32_t hi, tdx_err *err) {
    size_t a = 0, b = m->first.n; /* the last block whose first key is <= (lo, hi) */
    while (b - a > 1) {
        size_t c = a + (b - a) / 2;
        if (cmp_key(m->first.v[c].lo, m->first.v[c].hi, lo, hi) <= 0)
            a = c;
        else
            b = c;
    }
    if (cmp_key(m->first.v[a].lo, m->first.v[a].hi, lo, hi) > 0) return 0;
    tdx_strmap_ent blk[BLOCK];
    uint64_t at = (uint64_t)a * BLOCK, n = m->run_n - at < BLOCK ? m->run_n - at : BLOCK;
    if (tdx_scratch_read(&m->run, at * sizeof *blk, blk, (size_t)n * sizeof *blk, err))
        return UINT32_MAX;
    m->run_reads++;
    size_t x = 0, y = (size_t)n;
    while (x < y) {
        size_t c = x + (y - x) / 2;
        int r = cmp_key(blk[c].lo, blk[c].hi, lo, hi);
        if (!r) return blk[c].id;
        if (r < 0)
            x = c + 1;
        else
            y = c;
    }
    return 0;
}

typedef struct {
    tdx_scratch out;
    uint64_t n;
    tdx_strmap_ents first;
    bloom f;
} merge_out;

static int emit(merge_out *o, const tdx_strmap_ent *e, tdx_err *err) {
    if (o->n % BLOCK == 0 && tdx_vec_push(&o->first, *e))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    o->n++;
    bloom_add(o->f, e->lo, e->hi);
    return tdx_scratch_put(&o->out, e, sizeof *e, err);
}

/* Merges the table's n entries (sorted, at its front) with the run into a new run, with its
 * block keys and filter. A key in both (a string that came back from the run) is written once. */
static int merge(tdx_strmap *m, size_t n, tdx_err *err) {
    merge_out o;
    memset(&o, 0, sizeof o);
    o.f.nb = (size_t)(((m->run_n + n) * BLOOM_BITS + 511) / 512);
    o.f.w = calloc(o.f.nb, 64);
    tdx_strmap_ent *rd = malloc(MERGE_READ * sizeof *rd);
    if (!o.f.w || !rd) {
        free(o.f.w);
        free(rd);
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    }
    int rc = tdx_scratch_open(&o.out, m->beside, err);
    uint64_t ri = 0;               /* run entries read */
    size_t rn = 0, rk = 0, ti = 0; /* entries in rd, taken from rd, taken from the table */
    while (!rc && (ti < n || rk < rn || ri < m->run_n)) {
        if (rk == rn && ri < m->run_n) {
            uint64_t left = m->run_n - ri;
            rn = left < MERGE_READ ? (size_t)left : MERGE_READ;
            rk = 0;
            rc = tdx_scratch_read(&m->run, ri * sizeof *rd, rd, rn * sizeof *rd, err);
            ri += rn;
            if (rc) break;
        }
        const tdx_strmap_ent *t = ti < n ? &m->tab[ti] : NULL, *r = rk < rn ? &rd[rk] : NULL;
        if (!t && !r) break; /* (the loop's condition already says so) */
        int c = !t ? 1 : !r ? -1 : cmp_key(t->lo, t->hi, r->lo, r->hi);
        if (c <= 0) ti++;
        if (c >= 0) rk++;
        rc = emit(&o, c < 0 ? t : r, err);
    }
    free(rd);
    if (!rc) rc = tdx_scratch_flush(&o.out, err);
    if (rc) {
        if (o.out.fd >= 0) tdx_scratch_close(&o.out);
        tdx_vec_free(&o.first);
        free(o.f.w);
        return -1;
    }
    if (m->run.fd >= 0) tdx_scratch_close(&m->run);
    m->run = o.out;
    m->run_n = o.n;
    tdx_vec_free(&m->first);
    m->first = o.first;
    free(m->bloom);
    m->bloom = o.f.w;
    m->bloom_blocks = o.f.nb;
    return 0;
}

/* Moves every entry of the full table into the run; the table starts again empty. */
static int spill(tdx_strmap *m, tdx_err *err) {
    size_t n = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->tab[i].id) m->tab[n++] = m->tab[i];
    qsort(m->tab, n, sizeof *m->tab, cmp_ent);
    int rc = merge(m, n, err);
    /* Not a hash table any more (even when the merge failed, which fails the build). */
    memset(m->tab, 0, m->cap * sizeof *m->tab);
    m->n = 0;
    if (rc) return -1;
    m->spills++;
    return 0;
}

/* ---- lookups ---- */

uint32_t tdx_strmap_get(tdx_strmap *m, uint64_t lo, uint32_t hi, tdx_err *err) {
    if (m->cap) {
        const tdx_strmap_ent *e = slot(m, lo, hi);
        if (e->id) return e->id;
    }
    if (!m->run_n || !bloom_maybe((bloom){m->bloom, m->bloom_blocks}, lo, hi)) return 0;
    uint32_t id = run_find(m, lo, hi, err);
    /* A string that recurs stays in memory until the next spill (which keeps it once). */
    if (id && id != UINT32_MAX && (m->n + 1) * 4 <= m->cap * 3) {
        *slot(m, lo, hi) = (tdx_strmap_ent){lo, hi, id};
        m->n++;
    }
    return id;
}

int tdx_strmap_add(tdx_strmap *m, uint64_t lo, uint32_t hi, uint32_t id, tdx_err *err) {
    if ((m->n + 1) * 4 > m->cap * 3 && (m->cap < m->max_cap ? grow(m, err) : spill(m, err)))
        return -1;
    *slot(m, lo, hi) = (tdx_strmap_ent){lo, hi, id};
    m->n++;
    return 0;
}
