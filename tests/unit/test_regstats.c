/* test_regstats.c: index/analysis/regstats.c groups regions by type and start frame with Go's
 * histogram, writes REGIONS sorted as cmd/trace sorts its table, and refuses every malformed group.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "index/analysis/regstats.h"

/* String ids: 0 "", 1 "b", 2 "a", 3 "f", 4 "x.go". */
static tdx_str str(const void *ctx, uint32_t id) {
    (void)ctx;
    static const char *const s[] = {"", "b", "a", "f", "x.go"};
    return (tdx_str){(const uint8_t *)s[id], (uint32_t)strlen(s[id])};
}

typedef struct rows {
    tdx_rgrow r[8];
    int n;
} rows;

static int keep(void *ctx, const tdx_rgrow *row) {
    rows *w = ctx;
    cr_assert_lt(w->n, 8);
    w->r[w->n++] = *row;
    return 0;
}

static int decode(const tdx_buf *b, size_t n, rows *w) {
    tdx_err err;
    w->n = 0;
    int rc = tdx_regstats_decode(b->v, n, 0, keep, w, &err);
    if (rc) cr_expect(strstr(err.msg, "REGIONS") != NULL, "%s", err.msg);
    return rc;
}

Test(regstats, groups_sorted_and_read_back) {
    tdx_regstats r = {0};
    tdx_rgkey k1 = {1, 3, 4, 0x20, 7}, k2 = {2, 3, 4, 0x30, 8}, k3 = {1, 3, 4, 0x10, 9};
    tdx_regstats_add(&r, &k1, 150);
    tdx_regstats_add(&r, &k2, 2000);
    tdx_regstats_add(&r, &k1, 1600);
    tdx_regstats_add(&r, &k3, 0);
    cr_assert_eq(r.groups.n, 3);
    tdx_buf b = {0};
    cr_assert_eq(tdx_regstats_encode(&r, str, NULL, &b), 0);
    rows w;
    cr_assert_eq(decode(&b, b.n, &w), 0);
    cr_assert_eq(w.n, 3);
    /* by type ("a" before "b"), then PC */
    cr_expect(w.r[0].type.n == 1 && w.r[0].type.p[0] == 'a' && w.r[0].pc == 0x30);
    cr_expect(w.r[1].pc == 0x10 && w.r[1].line == 9 && w.r[1].h.count == 1);
    cr_expect(w.r[2].pc == 0x20 && w.r[2].h.count == 2);
    /* 150 ns is in bucket 10 (from 100 ns), 1600 in 16 (from 1584 ns); a 0 in bucket 0 */
    cr_expect(w.r[2].h.min == 10 && w.r[2].h.max == 16 && w.r[2].h.bucket[10] == 1 &&
              w.r[2].h.bucket[16] == 1 && w.r[2].h.bucket[13] == 0);
    cr_expect(w.r[1].h.min == 0 && w.r[1].h.max == 0 && w.r[1].h.bucket[0] == 1);
    cr_expect_eq(tdx_timehist_bucket_min(16), 1584);
    cr_expect(w.r[0].func.n == 1 && w.r[0].file.n == 4 && !memcmp(w.r[0].file.p, "x.go", 4));
    /* every truncation, and a byte more, are refused */
    for (size_t n = 0; n < b.n; n++) cr_expect_neq(decode(&b, n, &w), 0, "truncated to %zu", n);
    cr_assert_eq(tdx_buf_append(&b, "", 1), 0);
    cr_expect_neq(decode(&b, b.n, &w), 0);
    tdx_vec_free(&b);
    tdx_regstats_free(&r);
}

/* Go's quirk: while the largest bucket is 0, a sample moves the smallest (0, then 150 ns: the
 * rows shown start at 150's bucket). */
Test(regstats, smallest_bucket_quirk) {
    tdx_timehist h;
    memset(&h, 0, sizeof h);
    tdx_timehist_add(&h, 1);
    tdx_timehist_add(&h, 150);
    cr_expect(h.min == 10 && h.max == 10 && h.count == 2 && h.bucket[0] == 1);
    tdx_timehist_add(&h, 1);
    cr_expect(h.min == 0 && h.max == 10);
}

Test(regstats, malformed_groups) {
    /* magic, 1 group: type "a", pc 1, func "", file "", line 0, count 2, buckets 3..4: 1, 1 */
    static const uint8_t ok[] = {'T', 'D', 'X', 'R', 'G', 'N', '0', '1', 1, 1,
                                 'a', 1,   0,   0,   0,   2,   3,   4,   1, 1};
    tdx_buf b = {0};
    cr_assert_eq(tdx_buf_append(&b, ok, sizeof ok), 0);
    rows w;
    cr_assert_eq(decode(&b, b.n, &w), 0);
    cr_expect(w.n == 1 && w.r[0].h.count == 2 && w.r[0].h.min == 3 && w.r[0].h.bucket[4] == 1);
    static const struct {
        size_t at;
        uint8_t v;
    } bad[] = {
        {0, 'X'},  /* magic */
        {8, 9},    /* more groups than bytes */
        {9, 40},   /* a type past the end */
        {15, 0},   /* no regions */
        {15, 1},   /* buckets past the count */
        {16, 5},   /* min past max */
        {17, 100}, /* max past the buckets */
        {18, 3},   /* a bucket past the count */
        {18, 0},   /* the smallest bucket empty */
        {19, 0},   /* the largest bucket empty */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memcpy(b.v, ok, sizeof ok);
        b.v[bad[i].at] = bad[i].v;
        cr_expect_neq(decode(&b, b.n, &w), 0, "byte %zu = %u", bad[i].at, bad[i].v);
    }
    tdx_vec_free(&b);
}
