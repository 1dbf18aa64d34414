/* test_regprof.c: index/analysis/regprof.c counts a wait only within its goroutine's selected
 * regions, as cmd/trace's region profiles do (values worked out by hand): nested regions left out,
 * a wait summed over every region it overlaps, the blocking profiles by their reason. */
#include <criterion/criterion.h>

#include <string.h>

#include "core/event.h"
#include "core/spec.h"
#include "index/analysis/regprof.h"

enum { RUNNING = TDX_GO_RUNNING, RUNNABLE = TDX_GO_RUNNABLE, WAITING = TDX_GO_WAITING };

/* Strings: 1 "chan receive", 2 "sleep". Stacks 1..3, one frame each, PCs 0x10, 0x20, 0x30. */
static void make_gen(tdx_gen *g) {
    memset(g, 0, sizeof *g);
    static const char *const s[] = {"", "chan receive", "sleep"};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(
            tdx_vec_push(&g->strings, ((tdx_str){(const uint8_t *)s[i], (uint32_t)strlen(s[i])})),
            0);
    cr_assert_eq(tdx_vec_push(&g->stacks, ((tdx_stack){0, 0, 0})), 0);
    for (uint32_t i = 0; i < 3; i++) {
        tdx_frame f = {0x10 * ((uint64_t)i + 1), 1, 0, 0, 0, 0};
        cr_assert_eq(tdx_vec_push(&g->frames, f), 0);
        cr_assert_eq(tdx_vec_push(&g->stack_frames, i), 0);
        cr_assert_eq(tdx_vec_push(&g->stacks, ((tdx_stack){(uint64_t)i + 1, i, 1})), 0);
    }
}

static void free_gen(tdx_gen *g) {
    tdx_vec_free(&g->strings);
    tdx_vec_free(&g->stacks);
    tdx_vec_free(&g->frames);
    tdx_vec_free(&g->stack_frames);
}

/* A profile of regions {goroutine, start, end}[n], sealed; the sort spills beyond budget. */
static tdx_regprof *with_regions(int which, const int64_t (*r)[3], size_t n, size_t budget) {
    tdx_regprof *p = tdx_regprof_new(which, "/tmp/test_regprof.tidx", budget);
    cr_assert(p != NULL);
    tdx_err err = {0};
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(tdx_regprof_region(p, r[i][0], r[i][1], r[i][2], &err), 0, "%s", err.msg);
    cr_assert_eq(tdx_regprof_seal(p, &err), 0, "%s", err.msg);
    return p;
}

/* Goroutine g's transition at t to state `to`, by an event of wire type `type` with its reason
 * (string id) and stack. */
static void step(tdx_regprof *p, const tdx_gen *tabs, int64_t g, int64_t t, uint8_t to,
                 uint8_t type, uint32_t reason, uint32_t stack) {
    tdx_event e = {.time = t,
                   .stack = stack,
                   .str = {reason, 0},
                   .type = type,
                   .kind = TDX_KIND_STATE_TRANSITION,
                   .res_kind = TDX_RES_GOROUTINE,
                   .to = to,
                   .res = g};
    tdx_err err = {0};
    cr_assert_eq(tdx_regprof_event(p, &e, tabs, &err), 0, "%s", err.msg);
}

/* Goroutine g waits to run from `from` (made runnable by stack) to `to`. */
static void sched_wait(tdx_regprof *p, const tdx_gen *tabs, int64_t g, int64_t from, int64_t to,
                       uint32_t stack) {
    step(p, tabs, g, from, RUNNABLE, TDX_EV_GO_START, 0, stack);
    step(p, tabs, g, to, RUNNING, TDX_EV_GO_START, 0, 0);
}

/* The profile has one record: stack's, of count waits and ns in all. Frees p and tabs. */
static void expect_one(tdx_regprof *p, tdx_gen *tabs, uint32_t stack, uint64_t count, int64_t ns) {
    tdx_goprof_recs r = {0};
    tdx_err err = {0};
    cr_assert_eq(tdx_regprof_records(p, tabs, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(r.n, 1, "%zu records", r.n);
    cr_expect_eq(r.v[0].stack, stack, "stack %u", r.v[0].stack);
    cr_expect_eq(r.v[0].count, count, "count %lu", (unsigned long)r.v[0].count);
    cr_expect_eq(r.v[0].ns, ns, "%ld ns", (long)r.v[0].ns);
    tdx_vec_free(&r);
    tdx_regprof_free(p);
    free_gen(tabs);
}

/* Goroutine 1's regions [100, 200], [120, 150] (inside the first: left out), [200, 300] (starts
 * where the first ends: kept) and [250, 400] (starts inside the third: left out). A wait to run
 * from 90 to 210 counts 100 + 10; the same state again (at 150) does not restart it. */
Test(regprof, nested_regions_left_out) {
    static const int64_t regs[][3] = {{1, 250, 400}, {1, 120, 150}, {1, 200, 300}, {1, 100, 200}};
    tdx_gen tabs;
    make_gen(&tabs);
    tdx_regprof *p = with_regions(TDX_PROF_SCHED, regs, 4, 1u << 20);
    step(p, &tabs, 1, 90, RUNNABLE, TDX_EV_GO_START, 0, 2);
    sched_wait(p, &tabs, 1, 150, 210, 3);
    expect_one(p, &tabs, 2, 1, 110);
}

/* Of two regions starting together the shorter is kept (sorted by end too), so a wait from 550
 * to 800 overlaps [500, 600] only; a region that starts before time 0 is left out (Go's last
 * end starts at 0), and a goroutine without regions counts nothing. A wait over three regions
 * sums them, and one that ends where a region starts overlaps it by 0: not counted. */
Test(regprof, overlaps_summed) {
    int64_t regs[13][3] = {{7, 500, 900}, {7, 500, 600}, {8, -50, 40}};
    for (int64_t k = 0; k < 10; k++) {
        regs[3 + k][0] = 9;
        regs[3 + k][1] = 1000 + 100 * k;
        regs[3 + k][2] = 1050 + 100 * k;
    }
    tdx_gen tabs;
    make_gen(&tabs);
    tdx_regprof *p = with_regions(TDX_PROF_SCHED, (const int64_t(*)[3])regs, 13, 1u << 20);
    sched_wait(p, &tabs, 7, 550, 800, 1);
    sched_wait(p, &tabs, 8, -10, 30, 2);
    sched_wait(p, &tabs, 5, 550, 800, 2);
    sched_wait(p, &tabs, 9, 990, 1220, 1);  /* 50 + 50 + 20 */
    sched_wait(p, &tabs, 9, 1300, 1400, 1); /* [1300, 1350]: 50 */
    sched_wait(p, &tabs, 9, 1360, 1400, 3); /* between two: 0 */
    expect_one(p, &tabs, 1, 3, 50 + 120 + 50);
}

/* The blocking profile begins a wait only at a block whose reason names a channel (not at
 * "sleep"), and ends it at the goroutine's next other state. */
Test(regprof, blocking_by_reason) {
    static const int64_t regs[][3] = {{3, 0, 1000}};
    tdx_gen tabs;
    make_gen(&tabs);
    tdx_regprof *p = with_regions(TDX_PROF_SYNC, regs, 1, 1u << 20);
    step(p, &tabs, 3, 10, WAITING, TDX_EV_GO_BLOCK, 2, 1);
    step(p, &tabs, 3, 20, RUNNABLE, TDX_EV_GO_START, 0, 0);
    step(p, &tabs, 3, 100, WAITING, TDX_EV_GO_BLOCK, 1, 3);
    step(p, &tabs, 3, 130, RUNNABLE, TDX_EV_GO_START, 0, 0);
    cr_expect(tdx_regprof_new(TDX_PROF_COUNT, "/tmp/test_regprof.tidx", 4096) == NULL);
    expect_one(p, &tabs, 3, 1, 30);
}

/* A wait that begins before its goroutine's first region counts from the region's start; one
 * spanning 3,000 regions (added last first, through a sort that spills) counts each. */
Test(regprof, regions_arriving_during_waits) {
    enum { N = 3000 };
    static int64_t regs[N + 1][3];
    regs[0][0] = 2, regs[0][1] = 500, regs[0][2] = 700;
    for (int64_t k = 0; k < N; k++) {
        regs[1 + k][0] = 4;
        regs[1 + k][1] = 1000000 - 100 * k;
        regs[1 + k][2] = 1000000 - 100 * k + 30;
    }
    tdx_gen tabs;
    make_gen(&tabs);
    tdx_regprof *p = with_regions(TDX_PROF_SCHED, (const int64_t(*)[3])regs, N + 1, 4096);
    step(p, &tabs, 4, 50, RUNNABLE, TDX_EV_GO_START, 0, 2);
    sched_wait(p, &tabs, 2, 100, 600, 2); /* 100 */
    step(p, &tabs, 2, 650, RUNNABLE, TDX_EV_GO_START, 0, 2);
    step(p, &tabs, 4, 2000000, RUNNING, TDX_EV_GO_START, 0, 0); /* 30 each */
    step(p, &tabs, 2, 2000001, RUNNING, TDX_EV_GO_START, 0, 0); /* 50 */
    expect_one(p, &tabs, 2, 3, 100 + 30 * N + 50);
}

/* A goroutine that ends ends its wait; the goroutine its id names next has its own regions and
 * waits (Go keys both by the id: the same sums). */
Test(regprof, ended_goroutines) {
    static const int64_t regs[][3] = {{6, 100, 200}, {6, 400, 500}};
    tdx_gen tabs;
    make_gen(&tabs);
    tdx_regprof *p = with_regions(TDX_PROF_SCHED, regs, 2, 1u << 20);
    step(p, &tabs, 6, 150, RUNNABLE, TDX_EV_GO_START, 0, 1);
    step(p, &tabs, 6, 170, TDX_GO_NOTEXIST, TDX_EV_GO_START, 0, 0); /* 20 */
    step(p, &tabs, 6, 300, RUNNABLE, TDX_EV_GO_START, 0, 1);
    step(p, &tabs, 6, 350, RUNNING, TDX_EV_GO_START, 0, 0); /* between its regions: 0 */
    sched_wait(p, &tabs, 6, 450, 470, 1);                   /* 20 */
    expect_one(p, &tabs, 1, 2, 40);
}
