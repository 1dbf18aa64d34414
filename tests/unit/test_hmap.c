/* test_hmap.c: core/hmap.h (open addressing, linear probing, backward-shift deletion), and the
 * huge-page hint of core/mem.h that reserved maps use. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/hmap.h"
#include "core/mem.h"
#include "xorshift.h"

static uint64_t rng = 0x853c49e6748fea9bULL;
static uint64_t rnd(void) {
    return xorshift64(&rng);
}

static void hmap__empty_map(void) {
    tdx_hmap m = {0};
    cr_expect_eq(tdx_hmap_get(&m, 0), TDX_HMAP_EMPTY);
    cr_expect_eq(tdx_hmap_get(&m, 12345), TDX_HMAP_EMPTY);
    tdx_hmap_del(&m, 7); /* no-op on an unallocated map */
    cr_expect_eq(m.n, 0);
    tdx_hmap_clear(&m);
    tdx_hmap_free(&m);
}

static void hmap__put_get_overwrite(void) {
    tdx_hmap m = {0};
    cr_assert_eq(tdx_hmap_put(&m, 1, 10), 0);
    cr_assert_eq(tdx_hmap_put(&m, 2, 20), 0);
    cr_expect_eq(tdx_hmap_get(&m, 1), 10);
    cr_expect_eq(tdx_hmap_get(&m, 2), 20);
    cr_expect_eq(tdx_hmap_get(&m, 3), TDX_HMAP_EMPTY);
    cr_assert_eq(tdx_hmap_put(&m, 1, 11), 0);
    cr_expect_eq(tdx_hmap_get(&m, 1), 11);
    cr_expect_eq(m.n, 2);
    /* Value 0 and the largest storable value. */
    cr_assert_eq(tdx_hmap_put(&m, 5, 0), 0);
    cr_assert_eq(tdx_hmap_put(&m, 6, UINT32_MAX - 1), 0);
    cr_expect_eq(tdx_hmap_get(&m, 5), 0);
    cr_expect_eq(tdx_hmap_get(&m, 6), UINT32_MAX - 1);
    tdx_hmap_free(&m);
    cr_expect_eq(m.n, 0);
    cr_expect_null(m.keys);
}

static void hmap__extreme_keys(void) {
    tdx_hmap m = {0};
    cr_assert_eq(tdx_hmap_put(&m, 0, 100), 0);
    cr_assert_eq(tdx_hmap_put(&m, UINT64_MAX, 200), 0);
    cr_assert_eq(tdx_hmap_put(&m, (uint64_t)1 << 63, 300), 0);
    cr_expect_eq(tdx_hmap_get(&m, 0), 100);
    cr_expect_eq(tdx_hmap_get(&m, UINT64_MAX), 200);
    cr_expect_eq(tdx_hmap_get(&m, (uint64_t)1 << 63), 300);
    cr_expect_eq(tdx_hmap_get(&m, UINT64_MAX - 1), TDX_HMAP_EMPTY);
    tdx_hmap_del(&m, 0);
    cr_expect_eq(tdx_hmap_get(&m, 0), TDX_HMAP_EMPTY);
    cr_expect_eq(tdx_hmap_get(&m, UINT64_MAX), 200);
    tdx_hmap_del(&m, UINT64_MAX);
    cr_expect_eq(tdx_hmap_get(&m, UINT64_MAX), TDX_HMAP_EMPTY);
    cr_expect_eq(tdx_hmap_get(&m, (uint64_t)1 << 63), 300);
    cr_expect_eq(m.n, 1);
    tdx_hmap_free(&m);
}

static void hmap__upsert(void) {
    tdx_hmap m = {0};
    int ins = -1;
    uint32_t *s = tdx_hmap_upsert(&m, 42, 7, &ins);
    cr_assert_not_null(s);
    cr_expect_eq(ins, 1);
    cr_expect_eq(*s, 7);
    *s = 8;
    cr_expect_eq(tdx_hmap_get(&m, 42), 8);
    s = tdx_hmap_upsert(&m, 42, 99, &ins);
    cr_assert_not_null(s);
    cr_expect_eq(ins, 0);
    cr_expect_eq(*s, 8, "an existing value is not replaced by init");
    cr_expect_eq(m.n, 1);
    /* inserted may be NULL. */
    s = tdx_hmap_upsert(&m, 0, 5, NULL);
    cr_assert_not_null(s);
    cr_expect_eq(tdx_hmap_get(&m, 0), 5);
    cr_expect_eq(m.n, 2);
    tdx_hmap_free(&m);
}

static void hmap__delete_absent_and_twice(void) {
    tdx_hmap m = {0};
    cr_assert_eq(tdx_hmap_put(&m, 1, 1), 0);
    tdx_hmap_del(&m, 2);
    cr_expect_eq(m.n, 1);
    tdx_hmap_del(&m, 1);
    cr_expect_eq(m.n, 0);
    tdx_hmap_del(&m, 1);
    cr_expect_eq(m.n, 0);
    cr_expect_eq(tdx_hmap_get(&m, 1), TDX_HMAP_EMPTY);
    cr_assert_eq(tdx_hmap_put(&m, 1, 3), 0);
    cr_expect_eq(tdx_hmap_get(&m, 1), 3);
    tdx_hmap_free(&m);
}

static void hmap__clear_keeps_storage(void) {
    tdx_hmap m = {0};
    for (uint64_t k = 0; k < 100; k++) cr_assert_eq(tdx_hmap_put(&m, k * 977, (uint32_t)k), 0);
    size_t mask = m.mask;
    tdx_hmap_clear(&m);
    cr_expect_eq(m.n, 0);
    cr_expect_eq(m.mask, mask);
    for (uint64_t k = 0; k < 100; k++) cr_expect_eq(tdx_hmap_get(&m, k * 977), TDX_HMAP_EMPTY);
    cr_assert_eq(tdx_hmap_put(&m, 977, 1), 0);
    cr_expect_eq(tdx_hmap_get(&m, 977), 1);
    cr_expect_eq(m.n, 1);
    tdx_hmap_free(&m);
}

Test(hmap, growth_keeps_everything) {
    tdx_hmap m = {0};
    for (uint64_t k = 0; k < 100000; k++) cr_assert_eq(tdx_hmap_put(&m, k << 20, (uint32_t)k), 0);
    cr_expect_eq(m.n, 100000);
    cr_expect(((m.mask + 1) & m.mask) == 0, "capacity is a power of two");
    cr_expect(m.n * 4 <= (m.mask + 1) * 3, "load factor at most 3/4");
    for (uint64_t k = 0; k < 100000; k++) cr_assert_eq(tdx_hmap_get(&m, k << 20), (uint32_t)k);
    cr_expect_eq(tdx_hmap_get(&m, 1), TDX_HMAP_EMPTY);
    tdx_hmap_free(&m);
}

/* Finds `count` different keys, from `start` on, whose home slot in a 16-slot table is `home`. */
static void keys_with_home(size_t home, uint64_t *out, int count, uint64_t start) {
    int got = 0;
    for (uint64_t k = start; got < count; k++)
        if ((tdx_hash64(k) & 15) == home) out[got++] = k;
}

/* Collisions in the initial 16-slot table, including a probe run that wraps from slot 15 to 0. */
static void hmap__backward_shift_with_wraparound(void) {
    for (int victim = 0; victim < 5; victim++) {
        tdx_hmap m = {0};
        uint64_t a[3], z[2];
        keys_with_home(15, a, 3, 1);      /* home 15: slots 15, 0, 1 */
        keys_with_home(0, z, 2, 1000000); /* home 0: pushed to slots 2, 3 */
        uint64_t all[5] = {a[0], a[1], a[2], z[0], z[1]};
        for (int i = 0; i < 5; i++) cr_assert_eq(tdx_hmap_put(&m, all[i], (uint32_t)i + 1), 0);
        cr_assert_eq(m.mask, 15, "the test relies on the initial capacity of 16");
        cr_expect_eq(m.keys[15], a[0]);
        cr_expect_eq(m.keys[0], a[1]);
        cr_expect_eq(m.keys[1], a[2]);
        cr_expect_eq(m.keys[2], z[0]);
        cr_expect_eq(m.keys[3], z[1]);
        /* Delete one of them; all others stay reachable, and the run has no hole. */
        int d = victim;
        tdx_hmap_del(&m, all[d]);
        cr_expect_eq(m.n, 4);
        cr_expect_eq(tdx_hmap_get(&m, all[d]), TDX_HMAP_EMPTY);
        for (int i = 0; i < 5; i++)
            if (i != d)
                cr_expect_eq(tdx_hmap_get(&m, all[i]), (uint32_t)i + 1, "victim %d, key %d", d, i);
        /* The run 15,0,1,2 is now contiguous and slot 3 is free. */
        cr_expect_neq(m.vals[15], TDX_HMAP_EMPTY);
        cr_expect_neq(m.vals[0], TDX_HMAP_EMPTY);
        cr_expect_neq(m.vals[1], TDX_HMAP_EMPTY);
        cr_expect_neq(m.vals[2], TDX_HMAP_EMPTY);
        cr_expect_eq(m.vals[3], TDX_HMAP_EMPTY);
        tdx_hmap_free(&m);
    }
}

/* An entry already at its home slot must not be moved back into a hole before its home. */
static void hmap__backward_shift_stops_at_home_slots(void) {
    tdx_hmap m = {0};
    uint64_t a[2], b[1];
    keys_with_home(4, a, 2, 1); /* slots 4, 5 */
    keys_with_home(6, b, 1, 1); /* slot 6, at home */
    cr_assert_eq(tdx_hmap_put(&m, a[0], 1), 0);
    cr_assert_eq(tdx_hmap_put(&m, a[1], 2), 0);
    cr_assert_eq(tdx_hmap_put(&m, b[0], 3), 0);
    tdx_hmap_del(&m, a[0]);
    cr_expect_eq(m.keys[4], a[1], "the colliding key moves back to its home");
    cr_expect_eq(m.vals[5], TDX_HMAP_EMPTY);
    cr_expect_eq(m.keys[6], b[0], "a key at its home stays");
    cr_expect_eq(tdx_hmap_get(&m, a[1]), 2);
    cr_expect_eq(tdx_hmap_get(&m, b[0]), 3);
    tdx_hmap_free(&m);
}

/* Random operations checked against a plain array after every step. */
Test(hmap, random_against_reference) {
    enum { U = 48 };
    for (int round = 0; round < 60; round++) {
        uint64_t universe[U];
        for (int i = 0; i < U; i++) universe[i] = rnd();
        universe[0] = 0;
        universe[1] = UINT64_MAX;
        /* Bias the rest towards a few home slots of small tables to force long probe runs. */
        int nh = 0;
        for (uint64_t k = 2; nh < U / 2; k++)
            if ((tdx_hash64(k) & 7) == (uint64_t)(round % 8)) universe[2 + nh++] = k;
        uint32_t ref[U];
        for (int i = 0; i < U; i++) ref[i] = TDX_HMAP_EMPTY;
        size_t live = 0;
        tdx_hmap m = {0};
        int limit = round % 2 ? 11 : U; /* stay in the 16-slot table, or let it grow */
        for (int step = 0; step < 3000; step++) {
            int i = (int)(rnd() % (uint64_t)limit);
            uint64_t op = rnd() % 10;
            if (op < 5) {
                uint32_t v = (uint32_t)(rnd() % 1000000);
                cr_assert_eq(tdx_hmap_put(&m, universe[i], v), 0);
                if (ref[i] == TDX_HMAP_EMPTY) live++;
                ref[i] = v;
            } else if (op < 6) {
                int ins;
                uint32_t v = (uint32_t)(rnd() % 1000000);
                uint32_t *s = tdx_hmap_upsert(&m, universe[i], v, &ins);
                cr_assert_not_null(s);
                cr_assert_eq(ins, ref[i] == TDX_HMAP_EMPTY);
                if (ins) {
                    live++;
                    ref[i] = v;
                }
                cr_assert_eq(*s, ref[i]);
            } else {
                tdx_hmap_del(&m, universe[i]);
                if (ref[i] != TDX_HMAP_EMPTY) live--;
                ref[i] = TDX_HMAP_EMPTY;
            }
            cr_assert_eq(m.n, live, "round %d step %d: n=%zu, want %zu", round, step, m.n, live);
            for (int j = 0; j < U; j++)
                cr_assert_eq(tdx_hmap_get(&m, universe[j]), ref[j], "round %d step %d key %d",
                             round, step, j);
        }
        if (limit == 11) cr_expect_eq(m.mask, 15);
        tdx_hmap_free(&m);
    }
}

/* reserve: room for n keys without a rehash, kept contents, no shrinking, an empty map too */
static void hmap__reserve(void) {
    tdx_hmap m = {0};
    cr_assert_eq(tdx_hmap_reserve(&m, 1000), 0);
    size_t mask = m.mask;
    cr_expect(mask + 1 >= 1334 && mask + 1 <= 2048, "capacity %zu for 1000 keys", mask + 1);
    cr_expect_eq(m.n, 0);
    for (uint64_t k = 0; k < 1000; k++) cr_assert_eq(tdx_hmap_put(&m, k * 7919, (uint32_t)k), 0);
    cr_expect_eq(m.mask, mask, "a rehash below the reserved count");
    cr_assert_eq(tdx_hmap_reserve(&m, 10), 0);
    cr_expect_eq(m.mask, mask, "reserve shrank the map");
    cr_assert_eq(tdx_hmap_reserve(&m, 5000), 0);
    cr_expect(m.mask > mask);
    cr_expect_eq(m.n, 1000);
    for (uint64_t k = 0; k < 1000; k++) cr_expect_eq(tdx_hmap_get(&m, k * 7919), (uint32_t)k);
    cr_expect_eq(tdx_hmap_get(&m, 3), TDX_HMAP_EMPTY);
    tdx_hmap_free(&m);
}

/* Whether the mapping holding p carries the huge-page hint ("hg" in its smaps VmFlags); -1 when
 * smaps cannot tell. */
static int has_huge_hint(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0, found = -1;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a >= lo && a < hi;
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            found = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

/* The hint marks the 2 MiB-aligned interior of a large block, leaves small blocks and the
 * contents alone; a reserved map asks for it, a grown one does not. */
static void hmap__huge_page_hint(void) {
    const size_t two = (size_t)2 << 20;
    /* a kernel without transparent huge pages refuses the advice: nothing to check there */
    uint8_t *probe =
        mmap(NULL, 2 * two, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(probe != MAP_FAILED);
    uint8_t *al = probe + ((two - ((uintptr_t)probe & (two - 1))) & (two - 1));
    int thp = madvise(al, two, MADV_HUGEPAGE) == 0 && has_huge_hint(al) == 1;
    munmap(probe, 2 * two);
    if (!thp) {
        cr_log_warn("SKIP huge-page hint: this kernel does not take MADV_HUGEPAGE");
        return;
    }
    size_t n = 3 * two;
    uint8_t *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(m != MAP_FAILED);
    memset(m, 0x5a, n);
    tdx_mem_huge(m + 1, TDX_MEM_HUGE_MIN - 1); /* below the size: no advice */
    cr_expect_eq(has_huge_hint(m + two + 1), 0, "a block under TDX_MEM_HUGE_MIN was advised");
    tdx_mem_huge(m + 1, n - 1);
    uint8_t *in = m + 1 + ((two - ((uintptr_t)(m + 1) & (two - 1))) & (two - 1));
    cr_expect_eq(has_huge_hint(in), 1, "the aligned interior of a large block was not advised");
    for (size_t i = 0; i < n; i += 4093) cr_assert_eq(m[i], 0x5a, "contents changed at %zu", i);
    munmap(m, n);
    tdx_mem_huge(NULL, n); /* no block: no advice, no crash */

    tdx_hmap r = {0}, g = {0};
    cr_assert_eq(tdx_hmap_reserve(&r, 1u << 20), 0); /* 2^21 slots: 16 MiB of keys */
    cr_expect_eq(has_huge_hint(r.keys + (r.mask + 1) / 2), 1, "a reserved map was not advised");
    cr_expect_eq(has_huge_hint(r.vals + (r.mask + 1) / 2), 1);
    for (uint64_t k = 0; k < (1u << 20); k++) {
        tdx_hmap_prefetch(&r, k * 7919 + 1);
        cr_assert_eq(tdx_hmap_put(&r, k * 7919, (uint32_t)k), 0);
        cr_assert_eq(tdx_hmap_put(&g, k * 7919, (uint32_t)k), 0);
    }
    cr_expect_eq(has_huge_hint(g.keys + (g.mask + 1) / 2), 0, "a map grown by puts was advised");
    cr_expect_eq(r.n, 1u << 20);
    for (uint64_t k = 0; k < (1u << 20); k += 997) cr_expect_eq(tdx_hmap_get(&r, k * 7919), k);
    tdx_hmap_free(&r);
    tdx_hmap_free(&g);
    tdx_hmap e = {0};
    tdx_hmap_prefetch(&e, 42); /* an unallocated map */
}

/* ---- registered tests (grouped to keep the number of forked test processes small) ---- */

Test(hmap, basics) {
    hmap__empty_map();
    hmap__put_get_overwrite();
    hmap__extreme_keys();
    hmap__upsert();
    hmap__delete_absent_and_twice();
    hmap__clear_keeps_storage();
    hmap__reserve();
}

Test(hmap, huge_page_hint) {
    hmap__huge_page_hint();
}

Test(hmap, backward_shift_deletion) {
    hmap__backward_shift_with_wraparound();
    hmap__backward_shift_stops_at_home_slots();
}
