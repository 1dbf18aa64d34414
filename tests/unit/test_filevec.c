/* test_filevec.c: index/common/filevec.c: appended ranges read back the same before and after they
 * are written out and after the mapping's pages are given back; reading maps pages into the
 * resident count and a release takes them out; the mapping grows with the file, reading back the
 * same; the page budget stays within the build's memory target (0.1 x trace + 64 MB) on small
 * traces. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "index/common/filevec.h"

static const char beside[] = "/tmp/filevec-test.tidx";

/* Record i: i % 97 + 1 bytes, each (i * 31 + k) & 0xff. */
static size_t rec(size_t i, uint8_t *out) {
    size_t n = i % 97 + 1;
    for (size_t k = 0; k < n; k++) out[k] = (uint8_t)(i * 31 + k);
    return n;
}

static void check_all(const tdx_fvec *v, const uint64_t *off, size_t n) {
    uint8_t want[128];
    for (size_t i = 0; i < n; i++) {
        size_t len = rec(i, want);
        cr_assert_eq(memcmp(tdx_fvec_at(v, off[i]), want, len), 0, "record %zu", i);
    }
}

Test(filevec, appends_read_back_through_buffer_file_and_release) {
    tdx_fvec v;
    tdx_err err;
    cr_assert_eq(tdx_fvec_open(&v, beside, (size_t)64 << 20, &err), 0, "%s", err.msg);
    /* Enough records that the scratch file's 1 MiB buffer is written out several times. */
    enum { N = 60000 };
    uint64_t *off = malloc(N * sizeof *off);
    cr_assert_not_null(off);
    uint8_t buf[128];
    for (size_t i = 0; i < N; i++) {
        off[i] = tdx_fvec_len(&v);
        size_t n = rec(i, buf);
        cr_assert_eq(tdx_fvec_append(&v, buf, n, &err), 0, "%s", err.msg);
        /* The newest record reads back at once, from the buffer or the file. */
        cr_assert_eq(memcmp(tdx_fvec_at(&v, off[i]), buf, n), 0, "record %zu", i);
    }
    cr_assert_gt(tdx_fvec_len(&v), (uint64_t)2 << 20);
    check_all(&v, off, N);
    cr_assert_eq(tdx_fvec_flush(&v, &err), 0, "%s", err.msg);
    check_all(&v, off, N);
    tdx_fvec_release(&v); /* pages come back from the page cache */
    check_all(&v, off, N);
    tdx_fvec_close(&v);
    free(off);
}

/* What phase 2's budget rests on: reading the table maps its pages into the count, a release
 * takes them out again. */
Test(filevec, resident_counts_the_mapped_pages_a_release_gives_back) {
    if (tdx_fvec_resident() < 0) cr_skip_test("SKIP: /proc/self/statm cannot be read here");
    tdx_fvec v;
    tdx_err err;
    cr_assert_eq(tdx_fvec_open(&v, beside, (size_t)64 << 20, &err), 0, "%s", err.msg);
    enum { MIB = 1 << 20, SIZE = 16 * MIB };
    static uint8_t page[4096];
    for (size_t i = 0; i < SIZE / sizeof page; i++) {
        memset(page, (int)(i & 0xff), sizeof page);
        cr_assert_eq(tdx_fvec_append(&v, page, sizeof page, &err), 0, "%s", err.msg);
    }
    cr_assert_eq(tdx_fvec_flush(&v, &err), 0, "%s", err.msg);
    int64_t before = tdx_fvec_resident();
    unsigned sum = 0;
    for (size_t off = 0; off < SIZE; off += sizeof page) sum += *tdx_fvec_at(&v, off);
    cr_assert_eq(sum, (SIZE / sizeof page / 256) * (255 * 256 / 2), "the pages read back");
    int64_t mapped = tdx_fvec_resident();
    cr_assert_geq(mapped - before, (int64_t)12 * MIB, "reading 16 MiB mapped %lld bytes",
                  (long long)(mapped - before));
    tdx_fvec_release(&v);
    int64_t after = tdx_fvec_resident();
    cr_assert_geq(mapped - after, (int64_t)12 * MIB, "the release gave back %lld bytes",
                  (long long)(mapped - after));
    tdx_fvec_close(&v);
}

/* The mapping starts at a page and doubles as the file grows (a build's reservation had been
 * sized for the worst case: 2.8 GB of address space for a 256 MiB trace); what was written
 * reads back wherever the mapping moved. */
Test(filevec, mapping_grows_with_the_file) {
    tdx_fvec v;
    tdx_err err;
    cr_assert_eq(tdx_fvec_open(&v, beside, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(v.reserved, 4096, "the start is rounded up to a page");
    enum { N = 40000 };
    uint64_t *off = malloc(N * sizeof *off);
    cr_assert_not_null(off);
    uint8_t buf[128];
    for (size_t i = 0; i < N; i++) {
        off[i] = tdx_fvec_len(&v);
        size_t n = rec(i, buf);
        cr_assert_eq(tdx_fvec_append(&v, buf, n, &err), 0, "%s", err.msg);
        cr_assert_geq(v.reserved, tdx_fvec_len(&v), "the mapping covers the file");
        cr_assert_leq(v.reserved, 2 * tdx_fvec_len(&v) + 4096, "and not much more");
    }
    cr_assert_eq(tdx_fvec_flush(&v, &err), 0, "%s", err.msg);
    check_all(&v, off, N);
    /* One append larger than twice the mapping. */
    size_t big = 4 * v.reserved;
    uint8_t *p = malloc(big);
    cr_assert_not_null(p);
    memset(p, 0x5a, big);
    uint64_t at = tdx_fvec_len(&v);
    cr_assert_eq(tdx_fvec_append(&v, p, big, &err), 0, "%s", err.msg);
    cr_assert_geq(v.reserved, tdx_fvec_len(&v));
    cr_assert_eq(tdx_fvec_flush(&v, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(tdx_fvec_at(&v, at), p, big), 0);
    check_all(&v, off, N);
    tdx_fvec_close(&v);
    free(p);
    free(off);
}

#define MiB ((uint64_t)1 << 20)

Test(filevec, budget_is_capped_on_small_traces) {
    /* 256 MiB: half the allowance (12.8 MiB) left too little for the rest; the allowance less
     * 20 MiB instead */
    uint64_t t = 256 * MiB;
    cr_assert_eq(tdx_fvec_budget(t), t / 10 - 20 * MiB);
    /* 1 GiB: half the allowance */
    t = 1024 * MiB;
    cr_assert_eq(tdx_fvec_budget(t), t / 10 / 2);
    /* the bounds: 4 MiB for tiny traces, 128 MiB for huge ones */
    cr_assert_eq(tdx_fvec_budget(0), 4 * MiB);
    cr_assert_eq(tdx_fvec_budget(100 * MiB), 4 * MiB);
    cr_assert_eq(tdx_fvec_budget(4096 * MiB), 128 * MiB);
    cr_assert_eq(tdx_fvec_budget(UINT64_MAX), 128 * MiB);
}
