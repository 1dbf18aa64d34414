/* test_goprof.c: index/analysis/goprof.c measures waits as cmd/trace does (values worked out by
 * hand), takes stacks with equal first 128 PCs as one named by the latest, and its section refuses
 * every malformed record; index/analysis/pprofout.c writes one location per PC and one function per
 * name. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "core/event.h"
#include "core/varint.h"
#include "index/analysis/goprof.h"
#include "index/analysis/pprofout.h"

enum { RUNNING = TDX_GO_RUNNING, RUNNABLE = TDX_GO_RUNNABLE, WAITING = TDX_GO_WAITING };
enum { SYSCALL = TDX_GO_SYSCALL, NOTEXIST = TDX_GO_NOTEXIST };
#define SYNC_BITS (1u << TDX_PROF_SYNC)
#define NET_BITS (1u << TDX_PROF_NET)

static const tdx_goprof_sum *find(const tdx_goprof *p, int which, uint32_t stack) {
    for (size_t i = 0; i < p->sums.n; i++)
        if (p->sums.v[i].which == which && p->sums.v[i].stack == stack) return &p->sums.v[i];
    return NULL;
}

static void expect(const tdx_goprof *p, int which, uint32_t stack, uint64_t count, int64_t ns) {
    const tdx_goprof_sum *s = find(p, which, stack);
    cr_assert(s != NULL, "profile %d has no stack %u", which, stack);
    cr_expect_eq(s->count, count, "profile %d stack %u: count %lu", which, stack,
                 (unsigned long)s->count);
    cr_expect_eq(s->ns, ns, "profile %d stack %u: %ld ns", which, stack, (long)s->ns);
}

Test(goprof, reasons) {
    cr_expect_eq(tdx_goprof_reason_bits((const uint8_t *)"network", 7), NET_BITS);
    cr_expect_eq(tdx_goprof_reason_bits((const uint8_t *)"network!", 8), 0);
    cr_expect_eq(tdx_goprof_reason_bits((const uint8_t *)"chan receive", 12), SYNC_BITS);
    cr_expect_eq(tdx_goprof_reason_bits((const uint8_t *)"sync.Mutex.Lock", 15), SYNC_BITS);
    cr_expect_eq(tdx_goprof_reason_bits((const uint8_t *)"select (no cases)", 17), SYNC_BITS);
    cr_expect_eq(tdx_goprof_reason_bits((const uint8_t *)"sleep", 5), 0);
    cr_expect_eq(tdx_goprof_parse("sched"), TDX_PROF_SCHED);
    cr_expect_eq(tdx_goprof_parse("block"), -1);
    cr_expect_str_eq(tdx_goprof_name(TDX_PROF_SYSCALL), "syscall");
}

/* One goroutine created at 100 by stack 7, first run at 150: its wait to be scheduled counts
 * nothing (its life starts at 150). Then it blocks on a channel (stack 3) for 50, waits 20 to
 * run again (made runnable by stack 4), blocks for "sleep" (no profile), and blocks on the
 * network (stack 5) when it ends. */
Test(goprof, waits_within_the_life) {
    tdx_goprof p = {0};
    tdx_goprof_g g = {0};
    tdx_goprof_step(&p, &g, 100, 1, RUNNABLE, 0, 7, 0, 0, 1);
    tdx_goprof_step(&p, &g, 150, 2, RUNNING, 0, 0, 150, 0, 1);
    cr_expect_eq(p.sums.n, 0, "the first run's wait counted");
    tdx_goprof_step(&p, &g, 200, 3, WAITING, SYNC_BITS, 3, 150, 0, 1);
    tdx_goprof_step(&p, &g, 210, 4, WAITING, 0, 0, 150, 0, 1); /* the same state: still from 200 */
    tdx_goprof_step(&p, &g, 250, 5, RUNNABLE, 0, 4, 150, 0, 1);
    tdx_goprof_step(&p, &g, 270, 6, RUNNING, 0, 0, 150, 0, 1);
    tdx_goprof_step(&p, &g, 300, 7, WAITING, 0, 6, 150, 0, 1);
    tdx_goprof_step(&p, &g, 400, 8, RUNNABLE, 0, 0, 150, 0, 1);
    tdx_goprof_step(&p, &g, 410, 9, RUNNING, 0, 0, 150, 0, 1);
    tdx_goprof_step(&p, &g, 500, 10, WAITING, NET_BITS, 5, 150, 0, 1);
    tdx_goprof_step(&p, &g, 530, 11, NOTEXIST, 0, 0, 150, 530, 1);
    expect(&p, TDX_PROF_SYNC, 3, 1, 50);
    expect(&p, TDX_PROF_SCHED, 4, 1, 20);
    expect(&p, TDX_PROF_SCHED, 0, 1, 10); /* after the sleep: runnable by no stack */
    expect(&p, TDX_PROF_NET, 5, 1, 30);
    cr_expect_eq(p.sums.n, 4);
    cr_expect_eq(find(&p, TDX_PROF_SYNC, 3)->seq, 5);
    tdx_goprof_g_free(&g);
    tdx_goprof_free(&p);
}

/* Goroutines in a syscall when the trace starts, whose syscalls end before they ever run: the
 * first never runs (its wait counts, from 10 to 60), the second runs at 90 (nothing counts). */
Test(goprof, before_the_first_run) {
    tdx_goprof p = {0};
    tdx_goprof_g a = {0}, b = {0};
    tdx_goprof_step(&p, &a, 10, 1, SYSCALL, 0, 0, 0, 0, 1);
    tdx_goprof_step(&p, &b, 20, 2, SYSCALL, 0, 2, 0, 0, 1);
    tdx_goprof_step(&p, &a, 60, 3, RUNNABLE, 0, 0, 0, 0, 1);
    tdx_goprof_step(&p, &b, 70, 4, RUNNABLE, 0, 0, 0, 0, 1);
    cr_expect_eq(a.pending.n, 1);
    tdx_goprof_step(&p, &b, 90, 5, RUNNING, 0, 0, 90, 0, 1);
    cr_expect_eq(b.pending.n, 0, "the first run keeps a pending wait");
    cr_expect_eq(p.sums.n, 0);
    tdx_goprof_settle(&p, &a, 1000, 1);
    tdx_goprof_settle(&p, &b, 1000, 1);
    expect(&p, TDX_PROF_SYSCALL, 0, 1, 50);
    cr_expect_eq(p.sums.n, 1);
    /* a life that ends before the wait began counts nothing, one that ends within it a part */
    tdx_goprof_g c = {0};
    tdx_goprof_step(&p, &c, 100, 6, WAITING, SYNC_BITS, 9, 0, 0, 1);
    tdx_goprof_step(&p, &c, 200, 7, RUNNABLE, 0, 0, 0, 0, 1);
    tdx_goprof_settle(&p, &c, 150, 1);
    expect(&p, TDX_PROF_SYNC, 9, 1, 50);
    tdx_goprof_step(&p, &c, 300, 8, WAITING, SYNC_BITS, 8, 0, 0, 1);
    tdx_goprof_step(&p, &c, 400, 9, RUNNABLE, 0, 0, 0, 0, 1);
    tdx_goprof_settle(&p, &c, 250, 1);
    cr_expect(find(&p, TDX_PROF_SYNC, 8) == NULL);
    tdx_goprof_g_free(&a);
    tdx_goprof_g_free(&b);
    tdx_goprof_g_free(&c);
    tdx_goprof_free(&p);
}

/* Stacks: 1 [pc 0x10 line 1, 0x20], 2 [0x10 line 9, 0x20] (the same PCs), 3 [0x10, 0x20, pc 0]
 * (the same padded with zeros), 4 [0x30], and 5 and 6 of 129 frames that differ only in the
 * last. Strings: 1 "f", 2 "g", 3 "x.go". */
static void make_gen(tdx_gen *g) {
    memset(g, 0, sizeof *g);
    static const char *const s[] = {"", "f", "g", "x.go"};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(
            tdx_vec_push(&g->strings, ((tdx_str){(const uint8_t *)s[i], (uint32_t)strlen(s[i])})),
            0);
    static const uint64_t pcs[][3] = {{0x10, 0x20, 1}, {0x10, 0x20, 9}, {0x30, 0, 0}};
    for (int i = 0; i < 3; i++) {
        tdx_frame f = {pcs[i][0], pcs[i][2], 1, 3, 0, 0};
        tdx_frame h = {pcs[i][1], 2, 2, 3, 0, 0};
        cr_assert_eq(tdx_vec_push(&g->frames, f), 0);
        cr_assert_eq(tdx_vec_push(&g->frames, h), 0);
    }
    tdx_frame zero = {0, 0, 2, 3, 0, 0};
    cr_assert_eq(tdx_vec_push(&g->frames, zero), 0); /* frame 6 */
    for (uint64_t k = 0; k < 129; k++) {
        tdx_frame f = {0x1000 + k, k, 1, 3, 0, 0}; /* frames 7..135 */
        cr_assert_eq(tdx_vec_push(&g->frames, f), 0);
    }
    tdx_frame last = {0x9999, 1, 2, 3, 0, 0}; /* frame 136 */
    cr_assert_eq(tdx_vec_push(&g->frames, last), 0);
    static const uint32_t lists[][3] = {{0, 1, 0}, {2, 3, 0}, {0, 1, 6}, {4, 0, 0}};
    static const uint32_t lens[] = {2, 2, 3, 1};
    cr_assert_eq(tdx_vec_push(&g->stacks, ((tdx_stack){0, 0, 0})), 0);
    for (int i = 0; i < 4; i++) {
        tdx_stack st = {(uint64_t)i + 1, (uint32_t)g->stack_frames.n, lens[i]};
        for (uint32_t k = 0; k < lens[i]; k++)
            cr_assert_eq(tdx_vec_push(&g->stack_frames, lists[i][k]), 0);
        cr_assert_eq(tdx_vec_push(&g->stacks, st), 0);
    }
    for (int i = 0; i < 2; i++) {
        tdx_stack st = {(uint64_t)i + 5, (uint32_t)g->stack_frames.n, 129};
        for (uint32_t k = 0; k < 128; k++) cr_assert_eq(tdx_vec_push(&g->stack_frames, 7 + k), 0);
        cr_assert_eq(tdx_vec_push(&g->stack_frames, i ? 136u : 135u), 0);
        cr_assert_eq(tdx_vec_push(&g->stacks, st), 0);
    }
}

static void free_gen(tdx_gen *g) {
    tdx_vec_free(&g->strings);
    tdx_vec_free(&g->stacks);
    tdx_vec_free(&g->frames);
    tdx_vec_free(&g->stack_frames);
}

/* A wait of `ns` on stack, ending with event seq, in profile which, of a goroutine named name
 * (string ids: 1 "f", 2 "g"). */
static void wait(tdx_goprof *p, int which, uint32_t stack, int64_t ns, uint64_t seq,
                 uint32_t name) {
    static const uint8_t state[] = {WAITING, WAITING, SYSCALL, RUNNABLE};
    tdx_goprof_g g = {0};
    unsigned bits = which == TDX_PROF_NET ? NET_BITS : SYNC_BITS;
    tdx_goprof_step(p, &g, 1000, seq - 1, state[which], bits, stack, 1, 0, name);
    tdx_goprof_step(p, &g, 1000 + ns, seq, RUNNING, 0, 0, 1, 0, name);
    tdx_goprof_settle(p, &g, 0, name);
    tdx_goprof_g_free(&g);
}

static tdx_str name_of(const void *ctx, uint32_t id) {
    static const char *const s[] = {"", "f", "g"};
    return ((const tdx_gen *)ctx)->strings.v[id].n ? (tdx_str){(const uint8_t *)s[id], 1}
                                                   : (tdx_str){(const uint8_t *)"", 0};
}

static tdx_goprof_recs read_back(const tdx_buf *b, const tdx_gen *g, int which, const char *name,
                                 bool *named) {
    tdx_goprof_recs r = {0};
    tdx_err err;
    tdx_str want = {(const uint8_t *)(name ? name : ""), name ? (uint32_t)strlen(name) : 0};
    cr_assert_eq(tdx_goprof_read(b->v, b->n, 0, g, which, name ? &want : NULL, &r, named, &err), 0,
                 "%s", err.msg);
    return r;
}

Test(goprof, stacks_by_their_first_pcs) {
    tdx_gen g;
    make_gen(&g);
    tdx_goprof p = {0};
    wait(&p, TDX_PROF_SYNC, 2, 10, 100, 1);
    wait(&p, TDX_PROF_SYNC, 1, 20, 300, 2); /* the latest of 1, 2 and 3: it names them */
    wait(&p, TDX_PROF_SYNC, 3, 40, 200, 1);
    wait(&p, TDX_PROF_SYNC, 4, 5, 50, 2);
    wait(&p, TDX_PROF_SCHED, 2, 7, 400, 1); /* another profile: apart */
    wait(&p, TDX_PROF_SCHED, 5, 1, 500, 1);
    wait(&p, TDX_PROF_SCHED, 6, 2, 600, 1);
    tdx_buf b = {0};
    cr_assert_eq(tdx_goprof_encode(&p, name_of, &g, &b), 0);
    bool named;
    tdx_goprof_recs r = read_back(&b, &g, TDX_PROF_SYNC, NULL, &named);
    cr_assert_eq(r.n, 2);
    cr_expect(named);
    cr_expect(r.v[0].stack == 1 && r.v[0].count == 3 && r.v[0].ns == 70);
    cr_expect(r.v[1].stack == 4 && r.v[1].count == 1 && r.v[1].ns == 5);
    tdx_vec_free(&r);
    /* one name's goroutines: their own latest names the merged stack */
    r = read_back(&b, &g, TDX_PROF_SYNC, "f", &named);
    cr_assert_eq(r.n, 1);
    cr_expect(r.v[0].stack == 3 && r.v[0].count == 2 && r.v[0].ns == 50, "stack %u", r.v[0].stack);
    tdx_vec_free(&r);
    r = read_back(&b, &g, TDX_PROF_SYNC, "", &named); /* "": all, as in Go */
    cr_expect(r.n == 2 && named);
    tdx_vec_free(&r);
    r = read_back(&b, &g, TDX_PROF_SYNC, "h", &named);
    cr_expect(r.n == 0 && !named);
    tdx_vec_free(&r);
    r = read_back(&b, &g, TDX_PROF_SCHED, NULL, &named);
    cr_assert_eq(r.n, 2);
    cr_expect(r.v[0].stack == 2 && r.v[0].count == 1 && r.v[0].ns == 7);
    cr_expect(r.v[1].stack == 6 && r.v[1].count == 2 && r.v[1].ns == 3, "129 frames: %u %lu",
              r.v[1].stack, (unsigned long)r.v[1].count);
    tdx_vec_free(&r);
    r = read_back(&b, &g, TDX_PROF_NET, NULL, &named);
    cr_expect_eq(r.n, 0);
    tdx_vec_free(&r);
    /* the same sums give the same bytes, in whatever order they were met */
    tdx_goprof q = {0};
    wait(&q, TDX_PROF_SCHED, 6, 2, 600, 1);
    wait(&q, TDX_PROF_SYNC, 4, 5, 50, 2);
    wait(&q, TDX_PROF_SCHED, 5, 1, 500, 1);
    wait(&q, TDX_PROF_SYNC, 3, 40, 200, 1);
    wait(&q, TDX_PROF_SCHED, 2, 7, 400, 1);
    wait(&q, TDX_PROF_SYNC, 1, 20, 300, 2);
    wait(&q, TDX_PROF_SYNC, 2, 10, 100, 1);
    tdx_buf c = {0};
    cr_assert_eq(tdx_goprof_encode(&q, name_of, &g, &c), 0);
    cr_expect(b.n == c.n && !memcmp(b.v, c.v, b.n));
    tdx_vec_free(&b);
    tdx_vec_free(&c);
    tdx_goprof_free(&p);
    tdx_goprof_free(&q);
    free_gen(&g);
}

/* A goroutine's waits before it has a name are filed under the name it gets. */
Test(goprof, waits_before_the_name) {
    tdx_goprof p = {0};
    tdx_goprof_g g = {0};
    tdx_goprof_step(&p, &g, 100, 1, RUNNING, 0, 0, 100, 0, 0);
    /* 100 waits of 20 ns on stack 4: one entry however many (memory follows the stacks) */
    for (int i = 0; i < 100; i++) {
        tdx_goprof_step(&p, &g, 110 + 30 * i, 2 + 2 * (uint64_t)i, RUNNABLE, 0, 4, 100, 0, 0);
        tdx_goprof_step(&p, &g, 130 + 30 * i, 3 + 2 * (uint64_t)i, RUNNING, 0, 0, 100, 0, 0);
    }
    cr_expect(p.sums.n == 0 && g.unnamed.n == 1);
    tdx_goprof_step(&p, &g, 5000, 300, WAITING, SYNC_BITS, 2, 100, 0, 2);
    cr_assert_eq(p.sums.n, 1);
    cr_expect(p.sums.v[0].name == 2 && p.sums.v[0].stack == 4 && p.sums.v[0].ns == 2000 &&
              p.sums.v[0].count == 100 && p.sums.v[0].seq == 201);
    tdx_goprof_g_free(&g);
    tdx_goprof_free(&p);
}

/* A section written by hand: magic, the names, then per profile a count and records (name
 * place delta, stack (delta within a name), count, zigzag ns, seq). */
static const uint8_t hand[] = {'T', 'D', 'X', 'P', 'P', 'F', '0', '2', 1, 0, 0, 2,
                               0,   1,   1,   2,   5,   0,   3,   1,   4, 6, 0, 0};

static int read_bytes(const tdx_gen *g, const uint8_t *p, size_t n, int which) {
    tdx_goprof_recs r = {0};
    tdx_err err;
    bool named;
    int rc = tdx_goprof_read(p, n, 0, g, which, NULL, &r, &named, &err);
    if (rc) cr_expect(strstr(err.msg, "PPROF") != NULL, "%s", err.msg);
    tdx_vec_free(&r);
    return rc;
}

Test(goprof, malformed_sections) {
    tdx_gen g;
    make_gen(&g);
    tdx_goprof_recs r = {0};
    tdx_err err;
    bool named;
    cr_assert_eq(tdx_goprof_read(hand, sizeof hand, 0, &g, TDX_PROF_SYNC, NULL, &r, &named, &err),
                 0, "%s", err.msg);
    cr_assert_eq(r.n, 2);
    cr_expect(r.v[0].stack == 1 && r.v[0].count == 1 && r.v[0].ns == 1 && r.v[0].seq == 5);
    cr_expect(r.v[1].stack == 4 && r.v[1].count == 1 && r.v[1].ns == 2 && r.v[1].seq == 6);
    tdx_vec_free(&r);
    for (size_t n = 0; n < sizeof hand; n++)
        cr_expect_neq(read_bytes(&g, hand, n, TDX_PROF_SYNC), 0, "truncated to %zu", n);
    uint8_t bad[sizeof hand + 1];
    memcpy(bad, hand, sizeof hand);
    bad[sizeof hand] = 0;
    cr_expect_neq(read_bytes(&g, bad, sizeof bad, TDX_PROF_NET), 0, "a byte more");
    static const struct {
        size_t at;
        uint8_t v;
    } flips[] = {
        {7, '1'}, /* the first layout's magic */
        {8, 30},  /* more names than bytes */
        {11, 9},  /* more records than bytes */
        {13, 7},  /* a stack past the table */
        {14, 0},  /* no waits */
        {17, 1},  /* a name past the table */
        {18, 0},  /* the same stack again */
        {18, 6},  /* past the table, from the previous */
    };
    for (size_t i = 0; i < sizeof flips / sizeof *flips; i++) {
        memcpy(bad, hand, sizeof hand);
        bad[flips[i].at] = flips[i].v;
        cr_expect_neq(read_bytes(&g, bad, sizeof hand, TDX_PROF_SCHED), 0, "byte %zu = %u",
                      flips[i].at, flips[i].v);
    }
    free_gen(&g);
}

/* Top-level fields of a profile.proto: how many of field f. */
static int count_field(const tdx_buf *b, unsigned f) {
    const uint8_t *p = b->v, *end = b->v + b->n;
    int n = 0;
    while (p < end) {
        uint64_t key, v;
        int k = tdx_uvarint(p, end, &key);
        cr_assert(k > 0);
        p += k;
        k = tdx_uvarint(p, end, &v);
        cr_assert(k > 0);
        p += k;
        if ((key & 7) == 2) p += v;
        cr_assert(p <= end && ((key & 7) == 0 || (key & 7) == 2));
        n += (key >> 3) == f;
    }
    return n;
}

Test(pprofout, one_location_per_pc) {
    tdx_gen g;
    make_gen(&g);
    /* stacks 1 and 2 share both PCs (the first met names them), 4 adds one; no stack: none */
    tdx_goprof_rec recs[] = {{1, 3, 70, 0}, {2, 1, 7, 0}, {4, 1, 5, 0}, {0, 1, 1, 0}};
    tdx_buf b = {0};
    cr_assert_eq(tdx_pprof_write(&b, &g, recs, 4), 0);
    cr_expect_eq(count_field(&b, 1), 2, "sample types");
    cr_expect_eq(count_field(&b, 2), 4, "samples");
    cr_expect_eq(count_field(&b, 4), 3, "locations");
    cr_expect_eq(count_field(&b, 5), 2, "functions f and g (one file)");
    /* "", contentions, count, delay, nanoseconds, f, x.go, g, trace */
    cr_expect_eq(count_field(&b, 6), 9, "strings");
    cr_expect_eq(count_field(&b, 12), 1, "period");
    /* a profile of 129-frame stacks keeps 128 locations */
    tdx_goprof_rec deep[] = {{5, 1, 1, 0}};
    b.n = 0;
    cr_assert_eq(tdx_pprof_write(&b, &g, deep, 1), 0);
    cr_expect_eq(count_field(&b, 4), 128);
    tdx_vec_free(&b);
    free_gen(&g);
}
