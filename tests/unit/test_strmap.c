/* test_strmap.c: index/format/strmap.c: every id stored is found again, through spills to the run
 * and back, keys that share their low 64 bits stay apart, absent keys are absent, and a run that
 * cannot be created fails cleanly. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "index/format/strmap.h"
#include "core/hmap.h"

static const char beside[] = "/tmp/strmap-test.tidx";

/* Key i: random low half; every 16th shares it with key i - 1 and differs in hi only. */
static void key(uint64_t i, uint64_t *lo, uint32_t *hi) {
    uint64_t base = i % 16 == 15 ? i - 1 : i;
    *lo = tdx_hash64(base * 2 + 1);
    *hi = (uint32_t)tdx_hash64(i * 2 + 2);
}

static void fill_and_check(size_t budget, uint64_t n, uint64_t *spills) {
    tdx_strmap m;
    tdx_err err;
    cr_assert_eq(tdx_strmap_init(&m, beside, budget, &err), 0);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t lo;
        uint32_t hi;
        key(i, &lo, &hi);
        cr_assert_eq(tdx_strmap_get(&m, lo, hi, &err), 0, "key %llu found before it was added",
                     (unsigned long long)i);
        cr_assert_eq(tdx_strmap_add(&m, lo, hi, (uint32_t)i + 1, &err), 0, "%s", err.msg);
        /* an earlier key, wherever it is now (table or run) */
        uint64_t j = tdx_hash64(i) % (i + 1);
        key(j, &lo, &hi);
        cr_assert_eq(tdx_strmap_get(&m, lo, hi, &err), (uint32_t)j + 1, "key %llu after %llu",
                     (unsigned long long)j, (unsigned long long)i);
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t lo;
        uint32_t hi;
        key(i, &lo, &hi);
        cr_assert_eq(tdx_strmap_get(&m, lo, hi, &err), (uint32_t)i + 1, "key %llu at the end",
                     (unsigned long long)i);
        /* the same low half with another hi, and keys never added, are absent */
        cr_assert_eq(tdx_strmap_get(&m, lo, hi ^ 0x80000000u, &err), 0);
        key(n + i, &lo, &hi);
        cr_assert_eq(tdx_strmap_get(&m, lo + 1, hi, &err), 0);
    }
    *spills = m.spills;
    tdx_strmap_free(&m);
}

Test(strmap, in_memory_within_the_budget) {
    uint64_t spills;
    fill_and_check((size_t)64 << 20, 100000, &spills);
    cr_assert_eq(spills, 0);
}

/* 64 KiB: a table of 4096 slots, spilled every 3072 keys; ~65 spills, the run growing to 200000
 * entries (782 blocks). */
Test(strmap, spills_and_reads_back) {
    uint64_t spills;
    fill_and_check(0, 200000, &spills);
    cr_assert_geq(spills, 60);
}

/* A recurring key comes back into the table: after a spill, one block read serves it until the
 * next one. */
Test(strmap, recurring_keys_read_once_per_spill) {
    tdx_strmap m;
    tdx_err err;
    cr_assert_eq(tdx_strmap_init(&m, beside, 0, &err), 0);
    for (uint32_t i = 1; i <= 3100; i++)
        cr_assert_eq(tdx_strmap_add(&m, (uint64_t)i * 77, i, i, &err), 0);
    cr_assert_eq(m.spills, 1);
    uint64_t before = m.run_reads;
    for (int r = 0; r < 100; r++) cr_assert_eq(tdx_strmap_get(&m, 77, 1, &err), 1);
    cr_assert_eq(m.run_reads, before + 1);
    tdx_strmap_free(&m);
}

Test(strmap, no_scratch_file_fails_cleanly) {
    tdx_strmap m;
    tdx_err err;
    cr_assert_eq(tdx_strmap_init(&m, "/nonexistent-dir/x.tidx", 0, &err), 0);
    int rc = 0;
    for (uint32_t i = 1; i <= 5000 && !rc; i++)
        rc = tdx_strmap_add(&m, (uint64_t)i * 77, i, i, &err);
    cr_assert_eq(rc, -1);
    cr_assert_eq(err.kind, TDX_EIO);
    cr_assert(strstr(err.msg, "scratch file") != NULL, "%s", err.msg);
    tdx_strmap_free(&m);
}
