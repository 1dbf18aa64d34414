/* pdqsort.c: the algorithm of the ordering document's Appendix C (Go's pdqsortCmpFunc). */
#include "pdqsort.h"

#include <stdbool.h>

typedef struct {
    int64_t *k;
    uint32_t *v;
} arr;

enum { HINT_UNKNOWN, HINT_INCREASING, HINT_DECREASING };

static inline bool less(const arr *d, size_t i, size_t j) {
    return d->k[i] < d->k[j];
}

static inline void swap(const arr *d, size_t i, size_t j) {
    int64_t tk = d->k[i];
    d->k[i] = d->k[j];
    d->k[j] = tk;
    uint32_t tv = d->v[i];
    d->v[i] = d->v[j];
    d->v[j] = tv;
}

static int bitlen(uint64_t x) {
    int n = 0;
    while (x) {
        n++;
        x >>= 1;
    }
    return n;
}

static void insertion(const arr *d, size_t a, size_t b) {
    for (size_t i = a + 1; i < b; i++)
        for (size_t j = i; j > a && less(d, j, j - 1); j--) swap(d, j, j - 1);
}

static void sift(const arr *d, size_t first, size_t root, size_t hi) {
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= hi) return;
        if (child + 1 < hi && less(d, first + child, first + child + 1)) child++;
        if (!less(d, first + root, first + child)) return;
        swap(d, first + root, first + child);
        root = child;
    }
}

static void heapsort(const arr *d, size_t a, size_t b) {
    size_t hi = b - a;
    for (size_t i = (hi - 1) / 2 + 1; i-- > 0;) sift(d, a, i, hi);
    for (size_t i = hi; i-- > 0;) {
        swap(d, a, a + i);
        sift(d, a, 0, i);
    }
}

static void break_patterns(const arr *d, size_t a, size_t b) {
    size_t len = b - a;
    if (len < 8) return;
    uint64_t r = len;
    uint64_t mod = (uint64_t)1 << bitlen(len);
    for (size_t idx = a + (len / 4) * 2 - 1; idx <= a + (len / 4) * 2 + 1; idx++) {
        r ^= r << 13;
        r ^= r >> 17;
        r ^= r << 5;
        size_t other = (size_t)(r & (mod - 1));
        if (other >= len) other -= len;
        swap(d, idx, a + other);
    }
}

static size_t order2(const arr *d, size_t x, size_t y, int *swaps, size_t *hi) {
    if (less(d, y, x)) {
        (*swaps)++;
        *hi = x;
        return y;
    }
    *hi = y;
    return x;
}

static size_t median(const arr *d, size_t x, size_t y, size_t z, int *swaps) {
    size_t h;
    x = order2(d, x, y, swaps, &h);
    y = h;
    y = order2(d, y, z, swaps, &h);
    z = h;
    x = order2(d, x, y, swaps, &h);
    y = h;
    (void)x;
    (void)z;
    return y;
}

static size_t median_adjacent(const arr *d, size_t a, int *swaps) {
    return median(d, a - 1, a, a + 1, swaps);
}

static size_t choose_pivot(const arr *d, size_t a, size_t b, int *hint) {
    size_t l = b - a;
    int swaps = 0;
    size_t i = a + l / 4 * 1, j = a + l / 4 * 2, k = a + l / 4 * 3;
    if (l >= 8) {
        if (l >= 50) {
            i = median_adjacent(d, i, &swaps);
            j = median_adjacent(d, j, &swaps);
            k = median_adjacent(d, k, &swaps);
        }
        j = median(d, i, j, k, &swaps);
    }
    if (swaps == 0)
        *hint = HINT_INCREASING;
    else if (swaps == 12)
        *hint = HINT_DECREASING;
    else
        *hint = HINT_UNKNOWN;
    return j;
}

static void reverse(const arr *d, size_t a, size_t b) {
    size_t i = a, j = b - 1;
    while (i < j) swap(d, i++, j--);
}

static bool partial_insertion(const arr *d, size_t a, size_t b) {
    size_t i = a + 1;
    for (int step = 0; step < 5; step++) {
        while (i < b && !less(d, i, i - 1)) i++;
        if (i == b) return true;
        if (b - a < 50) return false;
        swap(d, i, i - 1);
        if (i - a >= 2) {
            /* Go's lower bound here is the absolute index 1, not a + 1. */
            for (size_t j = i - 1; j >= 1; j--) {
                if (!less(d, j, j - 1)) break;
                swap(d, j, j - 1);
            }
        }
        if (b - i >= 2) {
            for (size_t j = i + 1; j < b; j++) {
                if (!less(d, j, j - 1)) break;
                swap(d, j, j - 1);
            }
        }
    }
    return false;
}

static size_t partition_equal(const arr *d, size_t a, size_t b, size_t pivot) {
    swap(d, a, pivot);
    size_t i = a + 1, j = b - 1;
    for (;;) {
        while (i <= j && !less(d, a, i)) i++;
        while (i <= j && less(d, a, j)) j--;
        if (i > j) break;
        swap(d, i, j);
        i++;
        j--;
    }
    return i;
}

static size_t partition(const arr *d, size_t a, size_t b, size_t pivot, bool *already) {
    swap(d, a, pivot);
    size_t i = a + 1, j = b - 1;
    while (i <= j && less(d, i, a)) i++;
    while (i <= j && !less(d, j, a)) j--;
    if (i > j) {
        swap(d, j, a);
        *already = true;
        return j;
    }
    swap(d, i, j);
    i++;
    j--;
    for (;;) {
        while (i <= j && less(d, i, a)) i++;
        while (i <= j && !less(d, j, a)) j--;
        if (i > j) break;
        swap(d, i, j);
        i++;
        j--;
    }
    swap(d, j, a);
    *already = false;
    return j;
}

static void pdq(const arr *d, size_t a, size_t b, int limit) {
    bool was_balanced = true, was_partitioned = true;
    for (;;) {
        size_t len = b - a;
        if (len <= 12) {
            insertion(d, a, b);
            return;
        }
        if (limit == 0) {
            heapsort(d, a, b);
            return;
        }
        if (!was_balanced) {
            break_patterns(d, a, b);
            limit--;
        }
        int hint;
        size_t pivot = choose_pivot(d, a, b, &hint);
        if (hint == HINT_DECREASING) {
            reverse(d, a, b);
            pivot = (b - 1) - (pivot - a);
            hint = HINT_INCREASING;
        }
        if (was_balanced && was_partitioned && hint == HINT_INCREASING) {
            if (partial_insertion(d, a, b)) return;
        }
        if (a > 0 && !less(d, a - 1, pivot)) {
            a = partition_equal(d, a, b, pivot);
            continue;
        }
        bool already;
        size_t mid = partition(d, a, b, pivot, &already);
        was_partitioned = already;
        size_t left = mid - a, right = b - mid;
        size_t threshold = len / 8;
        if (left < right) {
            was_balanced = left >= threshold;
            pdq(d, a, mid, limit);
            a = mid + 1;
        } else {
            was_balanced = right >= threshold;
            pdq(d, mid + 1, b, limit);
            b = mid;
        }
    }
}

void tdx_pdqsort(int64_t *keys, uint32_t *vals, size_t n) {
    arr d = {keys, vals};
    pdq(&d, 0, n, bitlen(n));
}
