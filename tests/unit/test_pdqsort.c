/* test_pdqsort.c: core/pdqsort.h against an independent, literal transcription of the
 * pseudo-code of the ordering document's Appendix C (Go's pdqsortCmpFunc). Ties among equal keys
 * must be broken exactly as the reference breaks them, so whole permutations are compared. */
#include <criterion/criterion.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/pdqsort.h"
#include "xorshift.h"

/* ---- reference: Appendix C, written with signed indices as in the pseudo-code ---- */

typedef struct ref ref;
struct ref {
    bool (*less)(ref *r, long i, long j); /* less(d[i], d[j]) */
    int64_t *k;
    uint32_t *v;
    /* adversary mode (see make_killer) */
    long *item; /* item id at each position */
    long *val;  /* value of each item id; `gas` until frozen */
    long gas, nsolid, candidate;
    /* which paths ran */
    long n_insertion, n_heapsort, n_break, n_reverse, n_partial_ok, n_partial_fail, n_equal,
        n_partition;
};

static bool key_less(ref *r, long i, long j) {
    return r->k[i] < r->k[j];
}

static void r_swap(ref *r, long i, long j) {
    if (r->k) {
        int64_t t = r->k[i];
        r->k[i] = r->k[j];
        r->k[j] = t;
        uint32_t u = r->v[i];
        r->v[i] = r->v[j];
        r->v[j] = u;
    }
    if (r->item) {
        long t = r->item[i];
        r->item[i] = r->item[j];
        r->item[j] = t;
    }
}

static int ref_bitlen(unsigned long x) {
    int n = 0;
    for (; x; x >>= 1) n++;
    return n;
}

static void R_INSERTION(ref *r, long a, long b) {
    r->n_insertion++;
    for (long i = a + 1; i <= b - 1; i++) {
        long j = i;
        while (j > a && r->less(r, j, j - 1)) {
            r_swap(r, j, j - 1);
            j = j - 1;
        }
    }
}

static void R_SIFT(ref *r, long first, long root, long hi) {
    for (;;) {
        long child = 2 * root + 1;
        if (child >= hi) return;
        if (child + 1 < hi && r->less(r, first + child, first + child + 1)) child = child + 1;
        if (!r->less(r, first + root, first + child)) return;
        r_swap(r, first + root, first + child);
        root = child;
    }
}

static void R_HEAPSORT(ref *r, long a, long b) {
    r->n_heapsort++;
    long hi = b - a;
    for (long i = (hi - 1) / 2; i >= 0; i--) R_SIFT(r, a, i, hi);
    for (long i = hi - 1; i >= 0; i--) {
        r_swap(r, a, a + i);
        R_SIFT(r, a, 0, i);
    }
}

static void R_BREAK_PATTERNS(ref *r, long a, long b) {
    long len = b - a;
    if (len >= 8) {
        r->n_break++;
        uint64_t x = (uint64_t)len;
        uint64_t modulus = (uint64_t)1 << ref_bitlen((unsigned long)len);
        for (long idx = a + (len / 4) * 2 - 1; idx <= a + (len / 4) * 2 + 1; idx++) {
            x = x ^ (x << 13);
            x = x ^ (x >> 17);
            x = x ^ (x << 5);
            long other = (long)(x & (modulus - 1));
            if (other >= len) other = other - len;
            r_swap(r, idx, a + other);
        }
    }
}

enum { INCREASING, DECREASING, UNKNOWN };

/* ORDER2 and MED update the caller's (x, y) pair and swap counter. */
static void R_ORDER2(ref *r, long *x, long *y, int *swaps) {
    if (r->less(r, *y, *x)) {
        *swaps = *swaps + 1;
        long t = *x;
        *x = *y;
        *y = t;
    }
}
static long R_MED(ref *r, long x, long y, long z, int *swaps) {
    R_ORDER2(r, &x, &y, swaps);
    R_ORDER2(r, &y, &z, swaps);
    R_ORDER2(r, &x, &y, swaps);
    return y;
}

static long R_CHOOSE_PIVOT(ref *r, long a, long b, int *hint) {
    long l = b - a;
    int swaps = 0;
    long i = a + (l / 4) * 1, j = a + (l / 4) * 2, k = a + (l / 4) * 3;
    if (l >= 8) {
        if (l >= 50) {
            i = R_MED(r, i - 1, i, i + 1, &swaps);
            j = R_MED(r, j - 1, j, j + 1, &swaps);
            k = R_MED(r, k - 1, k, k + 1, &swaps);
        }
        j = R_MED(r, i, j, k, &swaps);
    }
    *hint = swaps == 0 ? INCREASING : swaps == 12 ? DECREASING : UNKNOWN;
    return j;
}

static void R_REVERSE(ref *r, long a, long b) {
    r->n_reverse++;
    long i = a, j = b - 1;
    while (i < j) {
        r_swap(r, i, j);
        i = i + 1;
        j = j - 1;
    }
}

static bool R_PARTIAL_INSERTION(ref *r, long a, long b) {
    long i = a + 1;
    for (int step = 0; step < 5; step++) {
        while (i < b && !r->less(r, i, i - 1)) i = i + 1;
        if (i == b) return true;
        if (b - a < 50) return false;
        r_swap(r, i, i - 1);
        if (i - a >= 2) {
            for (long j = i - 1; j >= 1; j--) { /* lower bound: absolute index 1 */
                if (!r->less(r, j, j - 1)) break;
                r_swap(r, j, j - 1);
            }
        }
        if (b - i >= 2) {
            for (long j = i + 1; j <= b - 1; j++) {
                if (!r->less(r, j, j - 1)) break;
                r_swap(r, j, j - 1);
            }
        }
    }
    return false;
}

static long R_PARTITION_EQUAL(ref *r, long a, long b, long pivot) {
    r->n_equal++;
    r_swap(r, a, pivot);
    long i = a + 1, j = b - 1;
    for (;;) {
        while (i <= j && !r->less(r, a, i)) i = i + 1;
        while (i <= j && r->less(r, a, j)) j = j - 1;
        if (i > j) break;
        r_swap(r, i, j);
        i = i + 1;
        j = j - 1;
    }
    return i;
}

static long R_PARTITION(ref *r, long a, long b, long pivot, bool *already) {
    r->n_partition++;
    r_swap(r, a, pivot);
    long i = a + 1, j = b - 1;
    while (i <= j && r->less(r, i, a)) i = i + 1;
    while (i <= j && !r->less(r, j, a)) j = j - 1;
    if (i > j) {
        r_swap(r, j, a);
        *already = true;
        return j;
    }
    r_swap(r, i, j);
    i = i + 1;
    j = j - 1;
    for (;;) {
        while (i <= j && r->less(r, i, a)) i = i + 1;
        while (i <= j && !r->less(r, j, a)) j = j - 1;
        if (i > j) break;
        r_swap(r, i, j);
        i = i + 1;
        j = j - 1;
    }
    r_swap(r, j, a);
    *already = false;
    return j;
}

static void R_PDQ(ref *r, long a, long b, int limit) {
    bool wasBalanced = true, wasPartitioned = true;
    for (;;) {
        long len = b - a;
        if (len <= 12) {
            R_INSERTION(r, a, b);
            return;
        }
        if (limit == 0) {
            R_HEAPSORT(r, a, b);
            return;
        }
        if (!wasBalanced) {
            R_BREAK_PATTERNS(r, a, b);
            limit = limit - 1;
        }
        int hint;
        long pivot = R_CHOOSE_PIVOT(r, a, b, &hint);
        if (hint == DECREASING) {
            R_REVERSE(r, a, b);
            pivot = (b - 1) - (pivot - a);
            hint = INCREASING;
        }
        if (wasBalanced && wasPartitioned && hint == INCREASING) {
            if (R_PARTIAL_INSERTION(r, a, b)) {
                r->n_partial_ok++;
                return;
            }
            r->n_partial_fail++;
        }
        if (a > 0 && !r->less(r, a - 1, pivot)) {
            a = R_PARTITION_EQUAL(r, a, b, pivot);
            continue;
        }
        bool already;
        long mid = R_PARTITION(r, a, b, pivot, &already);
        wasPartitioned = already;
        long left = mid - a, right = b - mid, threshold = len / 8;
        if (left < right) {
            wasBalanced = left >= threshold;
            R_PDQ(r, a, mid, limit);
            a = mid + 1;
        } else {
            wasBalanced = right >= threshold;
            R_PDQ(r, mid + 1, b, limit);
            b = mid;
        }
    }
}

static void ref_sort(ref *r, long n) {
    R_PDQ(r, 0, n, ref_bitlen((unsigned long)n));
}

/* Paths exercised by all reference runs of a test. */
static ref totals;
static void add_totals(const ref *r) {
    totals.n_insertion += r->n_insertion;
    totals.n_heapsort += r->n_heapsort;
    totals.n_break += r->n_break;
    totals.n_reverse += r->n_reverse;
    totals.n_partial_ok += r->n_partial_ok;
    totals.n_partial_fail += r->n_partial_fail;
    totals.n_equal += r->n_equal;
    totals.n_partition += r->n_partition;
}

/* ---- helpers ---- */

static uint64_t rng = 0x243f6a8885a308d3ULL;
static uint64_t rnd(void) {
    return xorshift64(&rng);
}

/* Sorts keys with the library and with the reference; both permutations must be identical. */
static void compare_with_reference(const int64_t *keys, size_t n, const char *what) {
    int64_t *k1 = malloc((n ? n : 1) * sizeof *k1), *k2 = malloc((n ? n : 1) * sizeof *k2);
    uint32_t *v1 = malloc((n ? n : 1) * sizeof *v1), *v2 = malloc((n ? n : 1) * sizeof *v2);
    cr_assert(k1 && k2 && v1 && v2);
    for (size_t i = 0; i < n; i++) {
        k1[i] = k2[i] = keys[i];
        v1[i] = v2[i] = (uint32_t)i;
    }
    tdx_pdqsort(k1, v1, n);
    ref r;
    memset(&r, 0, sizeof r);
    r.less = key_less;
    r.k = k2;
    r.v = v2;
    ref_sort(&r, (long)n);
    add_totals(&r);
    for (size_t i = 0; i < n; i++) {
        if (i) cr_assert(k1[i - 1] <= k1[i], "%s n=%zu: not sorted at %zu", what, n, i);
        cr_assert_eq(k1[i], keys[v1[i]], "%s n=%zu: vals do not follow keys at %zu", what, n, i);
        cr_assert_eq(v1[i], v2[i],
                     "%s n=%zu: permutation differs from Appendix C at %zu (%u vs %u)", what, n, i,
                     v1[i], v2[i]);
    }
    free(k1);
    free(k2);
    free(v1);
    free(v2);
}

/* ---- adversary input (McIlroy's "killer adversary") that drives the reference to heapsort ---- */

static bool adv_less(ref *r, long i, long j) {
    long x = r->item[i], y = r->item[j];
    if (r->val[x] == r->gas && r->val[y] == r->gas) {
        if (x == r->candidate)
            r->val[x] = r->nsolid++;
        else
            r->val[y] = r->nsolid++;
    }
    if (r->val[x] == r->gas)
        r->candidate = x;
    else if (r->val[y] == r->gas)
        r->candidate = y;
    return r->val[x] < r->val[y];
}

/* Keys for which the comparisons the algorithm makes are as bad as possible. */
static void make_killer(int64_t *keys, long n) {
    ref r;
    memset(&r, 0, sizeof r);
    r.less = adv_less;
    r.item = malloc((size_t)n * sizeof *r.item);
    r.val = malloc((size_t)n * sizeof *r.val);
    cr_assert(r.item && r.val);
    r.gas = n;
    r.candidate = -1;
    for (long i = 0; i < n; i++) {
        r.item[i] = i;
        r.val[i] = r.gas;
    }
    ref_sort(&r, n);
    for (long i = 0; i < n; i++) keys[i] = r.val[i];
    free(r.item);
    free(r.val);
}

/* ---- tests ---- */

static void fill(int64_t *k, size_t n, int pattern, int64_t range) {
    for (size_t i = 0; i < n; i++) {
        int64_t x = (int64_t)(rnd() % (uint64_t)range);
        switch (pattern) {
        case 0:
            k[i] = x;
            break; /* random */
        case 1:
            k[i] = (int64_t)i;
            break; /* sorted */
        case 2:
            k[i] = (int64_t)(n - i);
            break; /* reversed */
        case 3:
            k[i] = 7;
            break; /* all equal */
        case 4:
            k[i] = (int64_t)(i < n / 2 ? i : n - i);
            break; /* organ pipe */
        case 5:
            k[i] = (int64_t)(i % 5);
            break; /* sawtooth */
        case 6:
            k[i] = (int64_t)i / 4;
            break; /* sorted runs of ties */
        case 7:
            k[i] = (int64_t)(n - i) / 3;
            break; /* reversed ties */
        case 8:
            k[i] = rnd() % 10 ? (int64_t)i : x;
            break; /* nearly sorted */
        case 9:
            k[i] = rnd() % 10 ? (int64_t)(n - i) : x;
            break; /* nearly reversed */
        case 10:
            k[i] = (int64_t)rnd();
            break; /* full 64-bit range */
        case 11:
            k[i] = i % 2 ? INT64_MIN : INT64_MAX;
            break; /* extremes */
        }
    }
}

static void pdqsort__empty_and_one(void) {
    tdx_pdqsort(NULL, NULL, 0);
    int64_t k = 5;
    uint32_t v = 9;
    tdx_pdqsort(&k, &v, 1);
    cr_expect_eq(k, 5);
    cr_expect_eq(v, 9);
}

static void pdqsort__fixed_small_example(void) {
    int64_t k[] = {3, 1, 2, 1, 3, 0};
    uint32_t v[] = {0, 1, 2, 3, 4, 5};
    tdx_pdqsort(k, v, 6);
    static const int64_t wk[] = {0, 1, 1, 2, 3, 3};
    static const uint32_t wv[] = {5, 1, 3, 2, 0, 4};
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(k[i], wk[i]);
        cr_expect_eq(v[i], wv[i], "v[%d] = %u, want %u", i, v[i], wv[i]);
    }
}

/* Up to 12 elements the sort is an insertion sort, hence stable. */
static void pdqsort__small_arrays_are_stable(void) {
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = (size_t)(rnd() % 13);
        int64_t k[12], orig[12];
        uint32_t v[12];
        int64_t range = (int64_t)(rnd() % 4) + 1;
        for (size_t i = 0; i < n; i++) {
            k[i] = orig[i] = (int64_t)(rnd() % (uint64_t)range) - 1;
            v[i] = (uint32_t)i;
        }
        tdx_pdqsort(k, v, n);
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(k[i], orig[v[i]]);
            if (i) {
                cr_assert(k[i - 1] <= k[i]);
                if (k[i - 1] == k[i]) cr_assert(v[i - 1] < v[i], "n=%zu: not stable at %zu", n, i);
            }
        }
    }
}

Test(pdqsort, matches_appendix_c_on_many_sizes) {
    memset(&totals, 0, sizeof totals);
    int64_t *k = malloc(4096 * sizeof *k);
    cr_assert_not_null(k);
    for (size_t n = 0; n <= 300; n++) {
        for (int pattern = 0; pattern < 12; pattern++) {
            fill(k, n, pattern, 1000000);
            compare_with_reference(k, n, "pattern");
        }
    }
    static const size_t big[] = {511, 512, 513, 1000, 1024, 2047, 4096};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        for (int pattern = 0; pattern < 12; pattern++) {
            fill(k, big[i], pattern, 1000000);
            compare_with_reference(k, big[i], "pattern");
        }
    free(k);
    cr_expect_gt(totals.n_partial_ok, 0);
    cr_expect_gt(totals.n_partial_fail, 0);
    cr_expect_gt(totals.n_reverse, 0);
    cr_expect_gt(totals.n_equal, 0);
    cr_expect_gt(totals.n_partition, 0);
}

Test(pdqsort, matches_appendix_c_with_heavy_ties) {
    memset(&totals, 0, sizeof totals);
    int64_t *k = malloc(2000 * sizeof *k);
    cr_assert_not_null(k);
    static const int64_t ranges[] = {1, 2, 3, 5, 8, 16, 100};
    for (int iter = 0; iter < 6000; iter++) {
        size_t n = 13 + (size_t)(rnd() % 240);
        if (iter % 100 == 0) n = 500 + (size_t)(rnd() % 1500);
        int64_t range = ranges[rnd() % (sizeof ranges / sizeof ranges[0])];
        fill(k, n, 0, range);
        compare_with_reference(k, n, "ties");
    }
    free(k);
    cr_expect_gt(totals.n_equal, 0);
    cr_expect_gt(totals.n_break, 0, "no random input made an unbalanced partition");
}

/* Inputs built against the reference to exhaust the bad-pivot limit: heapsort and
 * break_patterns run, and the library must make the same moves. */
Test(pdqsort, matches_appendix_c_on_adversarial_inputs) {
    memset(&totals, 0, sizeof totals);
    int64_t *k = malloc(3000 * sizeof *k);
    cr_assert_not_null(k);
    for (long n = 13; n <= 3000; n += (n < 200 ? 1 : 97)) {
        make_killer(k, n);
        compare_with_reference(k, (size_t)n, "killer");
        /* The same shape with ties: halve every key. */
        for (long i = 0; i < n; i++) k[i] /= 2;
        compare_with_reference(k, (size_t)n, "killer/2");
    }
    free(k);
    cr_expect_gt(totals.n_heapsort, 0, "the adversary never reached heapsort");
    cr_expect_gt(totals.n_break, 0);
}

Test(pdqsort, vals_follow_keys_random) {
    int64_t *k = malloc(5000 * sizeof *k), *orig = malloc(5000 * sizeof *orig);
    uint32_t *v = malloc(5000 * sizeof *v);
    char *seen = malloc(5000);
    cr_assert(k && orig && v && seen);
    for (int iter = 0; iter < 300; iter++) {
        size_t n = (size_t)(rnd() % 5000);
        fill(orig, n, (int)(rnd() % 12), (int64_t)(rnd() % 50) + 1);
        memcpy(k, orig, n * sizeof *k);
        for (size_t i = 0; i < n; i++) v[i] = (uint32_t)i;
        tdx_pdqsort(k, v, n);
        memset(seen, 0, n);
        for (size_t i = 0; i < n; i++) {
            cr_assert(v[i] < n && !seen[v[i]], "vals are not a permutation");
            seen[v[i]] = 1;
            cr_assert_eq(k[i], orig[v[i]]);
            if (i) cr_assert(k[i - 1] <= k[i]);
        }
    }
    free(k);
    free(orig);
    free(v);
    free(seen);
}

/* ---- registered tests (grouped to keep the number of forked test processes small) ---- */

Test(pdqsort, small_inputs) {
    pdqsort__empty_and_one();
    pdqsort__fixed_small_example();
    pdqsort__small_arrays_are_stable();
}
