/* extsort.c: sorted runs in memory, spilled to one scratch file when over budget, k-way merged
 * through a small heap (groups of runs first, when they are too many to read within the budget).
 * A run on disk is a sequence of (k1, k2: u64 LE, n: u32 LE, payload). */
#include "index/common/extsort.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "index/format/format.h"

#define HDR 20
/* Bytes a merge reads from a run at a time: the budget shared among the runs, within these
 * bounds, so that merging as many runs as a long trace makes stays within it too (734 runs of
 * task parts for the 4 GiB bench trace held 92 MiB of 128 KiB buffers). Reads of 4 KiB rather
 * than 16 cost the 4 GiB SUMMARY about a second (tail 110 -> 95 MiB); merging groups of runs
 * first (premerge) with 16 KiB reads cost six. */
#define CHUNK_MIN TDX_XSORT_READ_MIN
#define CHUNK_MAX (64u << 10)

typedef struct mrec {
    uint64_t k1, k2;
    size_t off; /* in data */
    uint32_t n;
    uint32_t seq; /* order of insertion (offsets repeat after empty records) */
} mrec;

typedef struct run {
    uint64_t off, len; /* in the scratch file */
    uint64_t pos;      /* next byte to read */
    tdx_buf buf;
    size_t at;     /* the head's first byte in buf */
    size_t curlen; /* and its length (0: none yet) */
    tdx_xrec cur;  /* the run's head */
} run;

struct tdx_xsort {
    const char *beside;
    size_t budget;
    tdx_buf data;
    TDX_VEC(mrec) recs;
    tdx_scratch file;
    TDX_VEC(run) runs;
    size_t *heap; /* run indexes, smallest head first */
    size_t nheap;
    size_t next;  /* reading the in-memory run: next record */
    size_t chunk; /* merging: bytes read from a run at a time (a power of two) */
    int reading;  /* 0: adding; 1: in memory; 2: merging runs */
    uint64_t count;
    size_t nspilled;  /* runs spilled (before premerge joined any) */
    size_t premerges; /* passes premerge made */
};

static int nomem(tdx_err *err) {
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

tdx_xsort *tdx_xsort_new(const char *beside, size_t budget) {
    tdx_xsort *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->beside = beside;
    x->budget = budget < 4096 ? 4096 : budget;
    x->file.fd = -1;
    return x;
}

void tdx_xsort_free(tdx_xsort *x) {
    if (!x) return;
    tdx_vec_free(&x->data);
    tdx_vec_free(&x->recs);
    for (size_t i = 0; i < x->runs.n; i++) tdx_vec_free(&x->runs.v[i].buf);
    tdx_vec_free(&x->runs);
    free(x->heap);
    tdx_scratch_close(&x->file);
    free(x);
}

uint64_t tdx_xsort_count(const tdx_xsort *x) {
    return x->count;
}
size_t tdx_xsort_runs(const tdx_xsort *x) {
    return x->reading ? x->nspilled : x->runs.n;
}
size_t tdx_xsort_merged(const tdx_xsort *x, size_t *passes) {
    if (passes) *passes = x->premerges;
    return x->reading == 2 ? x->runs.n : 0;
}

static int cmp_mrec(const void *a, const void *b) {
    const mrec *x = a, *y = b;
    if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
    if (x->k2 != y->k2) return x->k2 < y->k2 ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* An in-place sort: glibc's qsort merges through a copy of the array (the budget again). Keys
 * are distinct (seq breaks ties), so any correct sort gives the same order. */
static void swap_mrec(mrec *a, mrec *b) {
    mrec t = *a;
    *a = *b;
    *b = t;
}

static void sift_mrec(mrec *v, size_t i, size_t n) {
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && cmp_mrec(&v[c], &v[c + 1]) < 0) c++;
        if (cmp_mrec(&v[i], &v[c]) >= 0) return;
        swap_mrec(&v[i], &v[c]);
        i = c;
    }
}

/* Quicksort (median of three) that turns to a heap sort when its depth runs out, so no input
 * order makes it quadratic. */
static void sort_recs(mrec *v, size_t n, int depth) {
    while (n > 16) {
        if (depth-- == 0) {
            for (size_t i = n / 2; i-- > 0;) sift_mrec(v, i, n);
            for (size_t end = n; end-- > 1;) {
                swap_mrec(&v[0], &v[end]);
                sift_mrec(v, 0, end);
            }
            return;
        }
        size_t m = n / 2;
        if (cmp_mrec(&v[m], &v[0]) < 0) swap_mrec(&v[m], &v[0]);
        if (cmp_mrec(&v[n - 1], &v[0]) < 0) swap_mrec(&v[n - 1], &v[0]);
        if (cmp_mrec(&v[n - 1], &v[m]) < 0) swap_mrec(&v[n - 1], &v[m]);
        swap_mrec(&v[m], &v[n - 1]); /* the pivot waits at the end */
        size_t i = 0;
        for (size_t j = 0; j + 1 < n; j++)
            if (cmp_mrec(&v[j], &v[n - 1]) < 0) swap_mrec(&v[i++], &v[j]);
        swap_mrec(&v[i], &v[n - 1]);
        /* recurse into the smaller side, loop on the larger: the stack stays logarithmic */
        if (i < n - 1 - i) {
            sort_recs(v, i, depth);
            v += i + 1;
            n -= i + 1;
        } else {
            sort_recs(v + i + 1, n - 1 - i, depth);
            n = i;
        }
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && cmp_mrec(&v[j], &v[j - 1]) < 0; j--)
            swap_mrec(&v[j], &v[j - 1]);
}

static void sort_mem(tdx_xsort *x) {
    int depth = 0;
    for (size_t n = x->recs.n; n > 1; n >>= 1) depth += 2;
    sort_recs(x->recs.v, x->recs.n, depth);
}

/* Sorts the records in memory and appends them to the scratch file as one run. */
static int spill(tdx_xsort *x, tdx_err *err) {
    if (x->file.fd < 0 && tdx_scratch_open(&x->file, x->beside, err)) return -1;
    sort_mem(x);
    run r;
    memset(&r, 0, sizeof r);
    r.off = x->file.len;
    for (size_t i = 0; i < x->recs.n; i++) {
        const mrec *m = &x->recs.v[i];
        uint8_t h[HDR];
        tdx_le64(h, m->k1);
        tdx_le64(h + 8, m->k2);
        tdx_le32(h + 16, m->n);
        if (tdx_scratch_put(&x->file, h, HDR, err) ||
            (m->n && tdx_scratch_put(&x->file, x->data.v + m->off, m->n, err)))
            return -1;
    }
    r.len = x->file.len - r.off;
    if (tdx_vec_push(&x->runs, r)) return nomem(err);
    x->recs.n = 0;
    x->data.n = 0;
    return 0;
}

/* The capacity a vector of capacity cap has once it holds want elements (tdx_vec_grow_'s rule). */
static size_t grown(size_t cap, size_t want) {
    size_t c = cap ? cap : 8;
    while (c < want) c *= 2;
    return c;
}

int tdx_xsort_add(tdx_xsort *x, uint64_t k1, uint64_t k2, const void *p, size_t n, tdx_err *err) {
    if (x->reading)
        return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET, "internal error: sort input after reading");
    if (n > UINT32_MAX) return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET, "sort record too large");
    /* Spill before a buffer would grow past the budget: what counts is their capacity (they
     * double), not the bytes in use. */
    bool over =
        grown(x->data.cap, x->data.n + n) + grown(x->recs.cap, x->recs.n + 1) * sizeof(mrec) >
        x->budget;
    if (x->recs.n && (over || x->recs.n == UINT32_MAX) && spill(x, err)) return -1;
    mrec m = {k1, k2, x->data.n, (uint32_t)n, (uint32_t)x->recs.n};
    if (tdx_vec_push(&x->recs, m) || (n && tdx_buf_append(&x->data, p, n))) return nomem(err);
    x->count++;
    return 0;
}

/* Makes the run's next record its head; 0 at its end. */
static int run_advance(tdx_xsort *x, run *r, tdx_err *err) {
    r->at += r->curlen;
    r->curlen = 0;
    for (;;) {
        size_t have = r->buf.n - r->at;
        size_t need = HDR;
        if (have >= HDR) need = HDR + tdx_rd32(r->buf.v + r->at + 16);
        if (have >= need) break;
        uint64_t left = r->off + r->len - r->pos;
        if (!left) {
            if (have)
                return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "the sort's scratch file is short");
            return 0;
        }
        if (have) memmove(r->buf.v, r->buf.v + r->at, have);
        r->buf.n = have;
        r->at = 0;
        /* Fill the buffer up to the chunk (its capacity stays that power of two) or the record. */
        size_t want = (need > x->chunk ? need : x->chunk) - have;
        if (want > left) want = (size_t)left;
        if (tdx_vec_reserve(&r->buf, have + want)) return nomem(err);
        if (tdx_scratch_read(&x->file, r->pos, r->buf.v + have, want, err)) return -1;
        r->buf.n += want;
        r->pos += want;
    }
    const uint8_t *h = r->buf.v + r->at;
    r->cur.k1 = tdx_rd64(h);
    r->cur.k2 = tdx_rd64(h + 8);
    r->cur.n = tdx_rd32(h + 16);
    r->cur.p = h + HDR;
    r->curlen = HDR + (size_t)r->cur.n;
    return 1;
}

/* Heap order: keys, then the earlier run (so equal keys keep their order of insertion). */
static int less(const tdx_xsort *x, size_t a, size_t b) {
    const tdx_xrec *p = &x->runs.v[a].cur, *q = &x->runs.v[b].cur;
    if (p->k1 != q->k1) return p->k1 < q->k1;
    if (p->k2 != q->k2) return p->k2 < q->k2;
    return a < b;
}

static void sift_down(tdx_xsort *x, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < x->nheap && less(x, x->heap[l], x->heap[m])) m = l;
        if (l + 1 < x->nheap && less(x, x->heap[l + 1], x->heap[m])) m = l + 1;
        if (m == i) return;
        size_t t = x->heap[i];
        x->heap[i] = x->heap[m];
        x->heap[m] = t;
        i = m;
    }
}

/* The read size for merging n runs at once: the budget shared, within CHUNK_MIN..CHUNK_MAX. */
static size_t chunk_for(const tdx_xsort *x, size_t n) {
    size_t c = CHUNK_MAX;
    while (c > CHUNK_MIN && c * n > x->budget) c /= 2;
    return c;
}

/* Starts reading runs [a, b) from their beginnings: their heads in x->heap. */
static int heads(tdx_xsort *x, size_t a, size_t b, tdx_err *err) {
    x->nheap = 0;
    for (size_t i = a; i < b; i++) {
        run *r = &x->runs.v[i];
        r->pos = r->off;
        r->buf.n = r->at = r->curlen = 0;
        int k = run_advance(x, r, err);
        if (k < 0) return -1;
        if (k) x->heap[x->nheap++] = i;
    }
    for (size_t i = x->nheap / 2; i-- > 0;) sift_down(x, i);
    return 0;
}

/* Merges the consecutive runs [a, b) into one run appended to the file (*out); equal keys keep
 * their order, since the heap breaks ties by run. */
static int merge_runs(tdx_xsort *x, size_t a, size_t b, run *out, tdx_err *err) {
    memset(out, 0, sizeof *out);
    out->off = x->file.len;
    if (heads(x, a, b, err)) return -1;
    while (x->nheap) {
        run *top = &x->runs.v[x->heap[0]];
        uint8_t h[HDR];
        tdx_le64(h, top->cur.k1);
        tdx_le64(h + 8, top->cur.k2);
        tdx_le32(h + 16, top->cur.n);
        if (tdx_scratch_put(&x->file, h, HDR, err) ||
            tdx_scratch_put(&x->file, top->cur.p, top->cur.n, err))
            return -1;
        int k = run_advance(x, top, err);
        if (k < 0) return -1;
        if (!k) x->heap[0] = x->heap[--x->nheap];
        if (x->nheap) sift_down(x, 0);
    }
    out->len = x->file.len - out->off;
    for (size_t i = a; i < b; i++) tdx_vec_free(&x->runs.v[i].buf);
    return 0;
}

/* While merging every run at once would read less than CHUNK_MIN from each within the budget,
 * merges groups of consecutive runs into longer ones first, so that a long trace's many runs do
 * not make the merge outgrow the budget. A pass merges only as many runs as it must to leave
 * `fan`: 400 runs and a fan of 128 merge 128, 128 and 19 of them. */
static int premerge(tdx_xsort *x, tdx_err *err) {
    size_t fan = x->budget / CHUNK_MIN < 2 ? 2 : x->budget / CHUNK_MIN;
    while (x->runs.n > fan) {
        x->chunk = chunk_for(x, fan);
        size_t n = 0, a = 0;
        while (a < x->runs.n) {
            size_t rem = x->runs.n - a;
            if (n + rem <= fan) {
                while (a < x->runs.n) x->runs.v[n++] = x->runs.v[a++];
                break;
            }
            size_t g = n + rem + 1 - fan; /* merged into one, they would leave `fan` runs */
            if (g > fan) g = fan;
            if (g > rem) g = rem;
            if (g < 2) { /* the last run (another pass follows) */
                x->runs.v[n++] = x->runs.v[a++];
                continue;
            }
            run merged;
            if (merge_runs(x, a, a + g, &merged, err)) return -1;
            x->runs.v[n++] = merged;
            a += g;
        }
        x->runs.n = n;
        x->premerges++;
        if (tdx_scratch_flush(&x->file, err)) return -1;
    }
    return 0;
}

int tdx_xsort_rewind(tdx_xsort *x, tdx_err *err) {
    if (!x->reading) {
        if (x->runs.n && x->recs.n && spill(x, err)) return -1;
        if (x->runs.n) {
            if (tdx_scratch_flush(&x->file, err)) return -1;
            tdx_vec_free(&x->data);
            tdx_vec_free(&x->recs);
            x->heap = malloc(x->runs.n * sizeof *x->heap);
            if (!x->heap) return nomem(err);
            x->nspilled = x->runs.n;
            if (premerge(x, err)) return -1;
            x->chunk = chunk_for(x, x->runs.n);
            x->reading = 2;
        } else {
            sort_mem(x);
            x->reading = 1;
        }
    }
    x->next = 0;
    if (x->reading == 1) return 0;
    return heads(x, 0, x->runs.n, err);
}

int tdx_xsort_next(tdx_xsort *x, tdx_xrec *r, tdx_err *err) {
    if (x->reading == 1) {
        if (x->next >= x->recs.n) return 0;
        const mrec *m = &x->recs.v[x->next++];
        static const uint8_t none[1]; /* the payload of records that all had none */
        *r = (tdx_xrec){m->k1, m->k2, x->data.v ? x->data.v + m->off : none, m->n};
        return 1;
    }
    if (x->reading != 2 || !x->nheap) return 0;
    /* The head handed out last time is advanced only now, so its payload stayed valid. */
    if (x->next) {
        run *top = &x->runs.v[x->heap[0]];
        int k = run_advance(x, top, err);
        if (k < 0) return -1;
        if (!k) x->heap[0] = x->heap[--x->nheap];
        if (x->nheap) sift_down(x, 0);
        if (!x->nheap) return 0;
    }
    x->next = 1;
    *r = x->runs.v[x->heap[0]].cur;
    return 1;
}
