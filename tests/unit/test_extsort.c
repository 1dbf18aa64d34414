/* test_extsort.c: index/common/extsort.c: random records sorted in memory and through many spilled
 * runs (a tiny budget, so groups of runs are merged first), compared with a stable in-memory sort;
 * reading twice gives the same stream. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/common/extsort.h"
#include "index/format/format.h"

typedef struct ref {
    uint64_t k1, k2;
    size_t seq;
    uint8_t p[40];
    uint32_t n;
} ref;

static int cmp_ref(const void *a, const void *b) {
    const ref *x = a, *y = b;
    if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
    if (x->k2 != y->k2) return x->k2 < y->k2 ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint64_t rnd(uint64_t *st) {
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return *st >> 17;
}

/* Key patterns beside random ones: the in-memory sort must not depend on the input's order. */
enum { RANDOM, ASCENDING, DESCENDING, SAWTOOTH };

static void check_pattern(size_t n, size_t budget, uint64_t keys, size_t want_runs_min,
                          int pattern) {
    char beside[] = "/tmp/extsort-test.tidx";
    tdx_xsort *x = tdx_xsort_new(beside, budget);
    cr_assert_not_null(x);
    ref *r = calloc(n ? n : 1, sizeof *r);
    cr_assert_not_null(r);
    uint64_t st = n * 31 + budget;
    tdx_err err;
    for (size_t i = 0; i < n; i++) {
        r[i].k1 = pattern == ASCENDING    ? i / 3
                  : pattern == DESCENDING ? (n - i) / 3
                  : pattern == SAWTOOTH   ? i % 97
                                          : rnd(&st) % keys;
        r[i].k2 = rnd(&st) % 3;
        r[i].seq = i;
        r[i].n = (uint32_t)(rnd(&st) % sizeof r[i].p);
        for (uint32_t k = 0; k < r[i].n; k++) r[i].p[k] = (uint8_t)(i + k);
        cr_assert_eq(tdx_xsort_add(x, r[i].k1, r[i].k2, r[i].p, r[i].n, &err), 0, "%s", err.msg);
    }
    qsort(r, n, sizeof *r, cmp_ref);
    for (int pass = 0; pass < 2; pass++) {
        cr_assert_eq(tdx_xsort_rewind(x, &err), 0, "%s", err.msg);
        tdx_xrec got;
        size_t i = 0;
        int k;
        while ((k = tdx_xsort_next(x, &got, &err)) == 1) {
            cr_assert_lt(i, n, "more records than added");
            cr_assert_eq(got.k1, r[i].k1, "record %zu: k1", i);
            cr_assert_eq(got.k2, r[i].k2, "record %zu: k2", i);
            cr_assert_eq(got.n, r[i].n, "record %zu: length", i);
            cr_assert_eq(memcmp(got.p, r[i].p, got.n), 0, "record %zu: payload (order)", i);
            i++;
        }
        cr_assert_eq(k, 0, "%s", err.msg);
        cr_assert_eq(i, n, "%zu records read back of %zu", i, n);
    }
    cr_assert_eq(tdx_xsort_count(x), n);
    cr_assert_geq(tdx_xsort_runs(x), want_runs_min, "runs spilled: %zu", tdx_xsort_runs(x));
    /* the merge reads at least TDX_XSORT_READ_MIN a run within the budget: more runs are
     * merged first */
    size_t passes, merged = tdx_xsort_merged(x, &passes);
    size_t fan = budget / TDX_XSORT_READ_MIN < 2 ? 2 : budget / TDX_XSORT_READ_MIN;
    if (tdx_xsort_runs(x) > 1)
        cr_assert(merged >= 1 && merged <= fan, "%zu runs merged at once, at most %zu", merged,
                  fan);
    if (tdx_xsort_runs(x) > fan) cr_assert_geq(passes, 1);
    tdx_xsort_free(x);
    free(r);
}

static void check(size_t n, size_t budget, uint64_t keys, size_t want_runs_min) {
    check_pattern(n, budget, keys, want_runs_min, RANDOM);
}

Test(extsort, empty) {
    check(0, 1 << 20, 10, 0);
}

Test(extsort, in_memory) {
    check(5000, 64 << 20, 100, 0);
}

/* 4 KiB budget: hundreds of runs; few keys, so equal keys span runs and must keep their order. */
Test(extsort, many_runs_stable) {
    check(20000, 4096, 50, 100);
}

/* Ordered, reversed and repeating keys (the in-memory quicksort's bad cases), with empty
 * payloads among them: same order as a stable sort, in memory and spilled. */
Test(extsort, patterns) {
    for (int p = ASCENDING; p <= SAWTOOTH; p++) {
        check_pattern(40000, 64 << 20, 0, 0, p);
        check_pattern(40000, 64 << 10, 0, 10, p);
    }
}

Test(extsort, spilled_wide_keys) {
    check(30000, 64 << 10, UINT64_MAX, 10);
}

Test(extsort, add_after_reading_fails) {
    tdx_xsort *x = tdx_xsort_new("/tmp/x.tidx", 4096);
    tdx_err err;
    cr_assert_eq(tdx_xsort_add(x, 1, 2, "ab", 2, &err), 0);
    cr_assert_eq(tdx_xsort_rewind(x, &err), 0);
    cr_assert_neq(tdx_xsort_add(x, 1, 2, "ab", 2, &err), 0);
    tdx_xsort_free(x);
}

/* Records larger than a merge's read chunk (16-64 KiB a run) come back whole, in order. Each
 * payload starts with its own length; the rest is a pattern of its key. */
Test(extsort, records_larger_than_a_chunk) {
    enum { N = 120 };
    tdx_xsort *x = tdx_xsort_new("/tmp/extsort-big.tidx", 512 << 10);
    cr_assert_not_null(x);
    static uint8_t buf[200 << 10];
    uint64_t st = 7;
    tdx_err err;
    for (size_t i = 0; i < N; i++) {
        uint64_t key = rnd(&st) % 1000 * N + i; /* distinct, so the order is the keys' */
        uint32_t len = 4 + (uint32_t)(rnd(&st) % (sizeof buf - 4));
        tdx_le32(buf, len);
        for (uint32_t b = 4; b < len; b++) buf[b] = (uint8_t)(key * 31 + b);
        cr_assert_eq(tdx_xsort_add(x, key, 0, buf, len, &err), 0, "%s", err.msg);
    }
    cr_assert_geq(tdx_xsort_runs(x), 10);
    for (int pass = 0; pass < 2; pass++) {
        cr_assert_eq(tdx_xsort_rewind(x, &err), 0, "%s", err.msg);
        uint64_t prev = 0;
        size_t got_n = 0;
        tdx_xrec r;
        int k;
        while ((k = tdx_xsort_next(x, &r, &err)) == 1) {
            cr_assert(got_n == 0 || r.k1 > prev, "record %zu out of order", got_n);
            cr_assert_geq(r.n, 4, "record %zu: length %u", got_n, r.n);
            cr_assert_eq(r.n, tdx_rd32(r.p), "record %zu: length", got_n);
            for (uint32_t b = 4; b < r.n; b++)
                cr_assert_eq(r.p[b], (uint8_t)(r.k1 * 31 + b), "record %zu byte %u", got_n, b);
            prev = r.k1;
            got_n++;
        }
        cr_assert_eq(k, 0, "%s", err.msg);
        cr_assert_eq(got_n, N);
    }
    tdx_xsort_free(x);
}
