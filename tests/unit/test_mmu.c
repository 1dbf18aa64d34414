/* test_mmu.c: index/analysis/muinput.c records what the mutator utilization depends on and reads it
 * back refusing every malformed record; index/analysis/mmu.c turns it into Go's utilization
 * functions and their MMU curve (values worked out by hand). */
#include <criterion/criterion.h>

#include <string.h>
#include <xxhash.h>

#include "core/spec.h"
#include "core/varint.h"
#include "index/format/format.h"
#include "index/analysis/mmu.h"
#include "index/analysis/muinput.h"

/* Strings: 1 "GC mark termination" (a GC stop-the-world), 2 "GC (fractional)" (a worker),
 * 3 "GC (idle)" (not one), 4 "GC (dedicated)", 5 "GOMAXPROCS" (a stop-the-world, not the GC's). */
static tdx_str strs[] = {{(const uint8_t *)"", 0},
                         {(const uint8_t *)"GC mark termination", 19},
                         {(const uint8_t *)"GC (fractional)", 15},
                         {(const uint8_t *)"GC (idle)", 9},
                         {(const uint8_t *)"GC (dedicated)", 14},
                         {(const uint8_t *)"GOMAXPROCS", 10}};

typedef struct feed {
    tdx_muin w;
    tdx_gen g;
    tdx_err err;
} feed;

static void feed_init(feed *f) {
    memset(f, 0, sizeof *f);
    tdx_muin_init(&f->w, "/tmp/test_mmu");
    f->g.strings.v = strs;
    f->g.strings.n = sizeof strs / sizeof *strs;
}

static void ev(feed *f, int64_t t, uint8_t type, int64_t p, int64_t g, uint64_t arg) {
    tdx_event e;
    memset(&e, 0, sizeof e);
    e.time = t;
    e.type = type;
    e.kind = tdx_type_kind(type);
    e.p = p;
    e.g = g;
    e.m = 0;
    e.args[0] = arg;
    e.str[0] = (uint32_t)arg;
    cr_assert_eq(tdx_muin_event(&f->w, &e, &f->g, &f->err), 0);
}

/* A goroutine's state transition from..to on p. */
static void st(feed *f, int64_t t, int64_t p, int64_t g, uint8_t from, uint8_t to) {
    tdx_event e;
    memset(&e, 0, sizeof e);
    e.time = t;
    e.type = TDX_EV_GO_START;
    e.kind = TDX_KIND_STATE_TRANSITION;
    e.res_kind = TDX_RES_GOROUTINE;
    e.res = g;
    e.from = from;
    e.to = to;
    e.p = p;
    e.g = TDX_NO_ID;
    cr_assert_eq(tdx_muin_event(&f->w, &e, &f->g, &f->err), 0);
}

static int put(void *ctx, const void *p, size_t n, tdx_err *err) {
    (void)err;
    return tdx_buf_append((tdx_buf *)ctx, p, n);
}

static tdx_buf section(feed *f) {
    tdx_buf b = {0};
    cr_assert_eq(tdx_muin_write(&f->w, put, &b, &f->err), 0);
    tdx_muin_free(&f->w);
    return b;
}

static tdx_mmu *curve(const tdx_buf *b, unsigned flags) {
    tdx_muread r;
    tdx_err err;
    cr_assert_eq(tdx_muread_init(&r, b->v, b->n, 0, &err), 0, "%s", err.msg);
    tdx_mmu *m;
    cr_assert_eq(tdx_mmu_new(&m, &r, flags, &err), 0, "%s", err.msg);
    tdx_muread_free(&r);
    return m;
}

static void expect_series(tdx_mmu *m, size_t i, const tdx_mu *want, size_t n) {
    size_t got;
    const tdx_mu *u = tdx_mmu_series(m, i, &got);
    for (size_t k = 0; k < got && got != n; k++)
        cr_log_info("series %zu: (%ld, %g)", i, (long)u[k].time, u[k].util);
    cr_assert_eq(got, n, "series %zu: %zu changes, want %zu", i, got, n);
    for (size_t k = 0; k < n; k++)
        cr_expect(u[k].time == want[k].time && u[k].util == want[k].util,
                  "series %zu change %zu: (%ld, %g), want (%ld, %g)", i, k, (long)u[k].time,
                  u[k].util, (long)want[k].time, want[k].util);
}

static double mmu(tdx_mmu *m, int64_t w) {
    double v;
    cr_assert_eq(tdx_mmu_min(m, w, &v), 0);
    return v;
}

/* GOMAXPROCS 2 at 10; at 20 an assist begins and ends (old traces repeat times), and the next
 * event, at 30, records nothing: Go's value at 20 is the lower one, 0.5, and the event at 30
 * sets 1 again; the last event is at 40. */
Test(mmu, same_time_changes_then_any_event) {
    feed f;
    feed_init(&f);
    ev(&f, 1, TDX_TYPE_SYNC, -1, -1, 0);
    ev(&f, 10, TDX_EV_PROCS_CHANGE, 0, 1, 2);
    ev(&f, 20, TDX_EV_GC_MARK_ASSIST_BEGIN, 0, 1, 0);
    ev(&f, 20, TDX_EV_GC_MARK_ASSIST_END, 0, 1, 0);
    ev(&f, 30, TDX_EV_HEAP_ALLOC, 0, 1, 12345);
    ev(&f, 40, TDX_EV_HEAP_ALLOC, 0, 1, 12346);
    tdx_buf b = section(&f);
    tdx_mmu *m = curve(&b, TDX_MMU_ASSIST);
    cr_assert_eq(tdx_mmu_nseries(m), 1);
    tdx_mu want[] = {{10, 1}, {20, 0.5}, {30, 1}, {40, 0}};
    expect_series(m, 0, want, 4);
    tdx_mmu_free(m);
    tdx_vec_free(&b);
}

/* Every flag, system-wide: 2 Ps from 100. A GC stop-the-world 200-300 (both Ps); a non-GC one
 * 1200-1300 changes nothing (its kind has no "GC"); an assist by G1 on P0 300-500 with G1 off its P
 * 350-400; a worker G2 labelled on P1 600-700, then running again 800-900 without a label
 * (it still counts); a "GC (idle)" label counts nothing; a sweep on P0 1000-1100. End 2000. */
Test(mmu, what_each_flag_counts) {
    feed f;
    feed_init(&f);
    ev(&f, 1, TDX_TYPE_SYNC, -1, -1, 0);
    ev(&f, 100, TDX_EV_PROCS_CHANGE, 0, 1, 2);
    ev(&f, 200, TDX_EV_STW_BEGIN, 0, 1, 1);
    ev(&f, 300, TDX_EV_STW_END, 0, 1, 1);
    ev(&f, 300, TDX_EV_GC_MARK_ASSIST_BEGIN, 0, 1, 0);
    st(&f, 350, 0, 1, TDX_GO_RUNNING, TDX_GO_WAITING);
    st(&f, 400, 0, 1, TDX_GO_RUNNABLE, TDX_GO_RUNNING);
    ev(&f, 500, TDX_EV_GC_MARK_ASSIST_END, 0, 1, 0);
    st(&f, 550, 0, 1, TDX_GO_RUNNING, TDX_GO_RUNNABLE); /* (no longer assisting) */
    st(&f, 600, 1, 2, TDX_GO_RUNNABLE, TDX_GO_RUNNING);
    ev(&f, 600, TDX_EV_GO_LABEL, 1, 2, 2);
    st(&f, 700, 1, 2, TDX_GO_RUNNING, TDX_GO_WAITING);
    st(&f, 800, 1, 2, TDX_GO_RUNNABLE, TDX_GO_RUNNING);
    st(&f, 900, 1, 2, TDX_GO_RUNNING, TDX_GO_SYSCALL); /* (still executing) */
    st(&f, 950, 1, 2, TDX_GO_SYSCALL, TDX_GO_WAITING);
    ev(&f, 960, TDX_EV_GO_LABEL, 1, 3, 3);
    ev(&f, 1000, TDX_EV_GC_SWEEP_BEGIN, 0, 1, 0);
    ev(&f, 1100, TDX_EV_GC_SWEEP_END, 0, 1, 0);
    ev(&f, 1200, TDX_EV_STW_BEGIN, 0, 1, 5);
    ev(&f, 1300, TDX_EV_STW_END, 0, 1, 5);
    ev(&f, 2000, TDX_EV_HEAP_ALLOC, 0, 1, 1);
    tdx_buf b = section(&f);

    tdx_mmu *m = curve(&b, TDX_MMU_STW);
    tdx_mu stw[] = {{100, 1}, {200, 0}, {300, 1}, {2000, 0}};
    expect_series(m, 0, stw, 4);
    cr_expect_eq(mmu(m, 100), 0.0);
    cr_expect_eq(mmu(m, 200), 0.5);
    tdx_mmu_free(m);

    m = curve(&b, TDX_MMU_ASSIST);
    tdx_mu assist[] = {{100, 1}, {300, 0.5}, {350, 1}, {400, 0.5}, {500, 1}, {2000, 0}};
    expect_series(m, 0, assist, 6);
    tdx_mmu_free(m);

    m = curve(&b, TDX_MMU_BACKGROUND);
    tdx_mu bg[] = {{100, 1}, {600, 0.5}, {700, 1}, {800, 0.5}, {950, 1}, {2000, 0}};
    expect_series(m, 0, bg, 6);
    tdx_mmu_free(m);

    m = curve(&b, TDX_MMU_SWEEP);
    tdx_mu sweep[] = {{100, 1}, {1000, 0.5}, {1100, 1}, {2000, 0}};
    expect_series(m, 0, sweep, 4);
    /* windows inside the function only: the whole span's mean, and a window past it is cut */
    cr_expect_float_eq(mmu(m, 1900), (1900 - 50.0) / 1900, 1e-15);
    cr_expect_float_eq(mmu(m, 5000), (1900 - 50.0) / 1900, 1e-15);
    cr_expect_eq(mmu(m, 0), 0.0);
    tdx_mmu_free(m);

    /* per P: a P's function is 0 while it does GC work, and both are 0 in a stop-the-world */
    m = curve(&b, TDX_MMU_STW | TDX_MMU_ASSIST | TDX_MMU_PERPROC);
    cr_assert_eq(tdx_mmu_nseries(m), 2);
    /* (at 300 the stop-the-world's end appends 1, then the assist's begin lowers it to 0 in
     * place: Go leaves two zeros in a row) */
    tdx_mu p0[] = {{100, 1}, {200, 0}, {300, 0}, {350, 1}, {400, 0}, {500, 1}, {2000, 0}};
    tdx_mu p1[] = {{100, 1}, {200, 0}, {300, 1}, {2000, 0}};
    expect_series(m, 0, p0, 7);
    expect_series(m, 1, p1, 4);
    tdx_mmu_free(m);

    /* nothing counted: 1 to the end */
    m = curve(&b, 0);
    tdx_mu none[] = {{100, 1}, {2000, 0}};
    expect_series(m, 0, none, 2);
    cr_expect_eq(mmu(m, 10), 1.0);
    tdx_mmu_free(m);
    tdx_vec_free(&b);
}

/* GOMAXPROCS 1 then 3 then 2: per P, a new P starts a function at 1, a P taken away ends its
 * with 0; system-wide there is one function. A dedicated worker counts system-wide only. */
Test(mmu, procs_change_and_dedicated_workers) {
    feed f;
    feed_init(&f);
    ev(&f, 1, TDX_TYPE_SYNC, -1, -1, 0);
    st(&f, 5, 0, 9, TDX_GO_RUNNABLE, TDX_GO_RUNNING); /* before GOMAXPROCS: nothing counts */
    ev(&f, 10, TDX_EV_PROCS_CHANGE, 0, 1, 1);
    ev(&f, 20, TDX_EV_PROCS_CHANGE, 0, 1, 3);
    st(&f, 30, 2, 4, TDX_GO_RUNNABLE, TDX_GO_RUNNING);
    ev(&f, 30, TDX_EV_GO_LABEL, 2, 4, 4);
    ev(&f, 40, TDX_EV_PROCS_CHANGE, 0, 1, 2);
    st(&f, 45, 7, 4, TDX_GO_RUNNING, TDX_GO_WAITING); /* a P out of range: ignored, as Go */
    ev(&f, 50, TDX_EV_HEAP_ALLOC, 0, 1, 1);
    tdx_buf b = section(&f);
    tdx_mmu *m = curve(&b, TDX_MMU_BACKGROUND | TDX_MMU_PERPROC);
    cr_assert_eq(tdx_mmu_nseries(m), 3);
    tdx_mu a[] = {{10, 1}, {50, 0}}, b1[] = {{20, 1}, {50, 0}}, c[] = {{20, 1}, {40, 0}};
    expect_series(m, 0, a, 2);
    expect_series(m, 1, b1, 2);
    expect_series(m, 2, c, 2); /* P2, taken away at 40 */
    tdx_mmu_free(m);
    m = curve(&b, TDX_MMU_BACKGROUND);
    cr_assert_eq(tdx_mmu_nseries(m), 1);
    tdx_mu sys[] = {{10, 1}, {30, 1 - 1.0 / 3}, {40, 1}, {50, 0}}; /* (as Go computes it) */
    expect_series(m, 0, sys, 4);
    tdx_mmu_free(m);
    tdx_vec_free(&b);
}

/* Worst windows: disjoint, the lowest first, ties by time; windows past the function are cut. */
Test(mmu, worst_windows) {
    feed f;
    feed_init(&f);
    ev(&f, 1, TDX_TYPE_SYNC, -1, -1, 0);
    ev(&f, 0 + 10, TDX_EV_PROCS_CHANGE, 0, 1, 1);
    /* sweeps at 100-110, 300-310 and 500-505 on the only P */
    int64_t at[][2] = {{100, 110}, {300, 310}, {500, 505}};
    for (int i = 0; i < 3; i++) {
        ev(&f, at[i][0], TDX_EV_GC_SWEEP_BEGIN, 0, 1, 0);
        ev(&f, at[i][1], TDX_EV_GC_SWEEP_END, 0, 1, 0);
    }
    ev(&f, 1000, TDX_EV_HEAP_ALLOC, 0, 1, 1);
    tdx_buf b = section(&f);
    tdx_mmu *m = curve(&b, TDX_MMU_SWEEP);
    tdx_muwin w[4];
    size_t n;
    cr_assert_eq(tdx_mmu_worst(m, 10, 2, w, &n), 0);
    cr_assert_eq(n, 2);
    cr_expect(w[0].time == 100 && w[0].util == 0 && w[1].time == 300 && w[1].util == 0);
    cr_assert_eq(tdx_mmu_worst(m, 10, 4, w, &n), 0);
    cr_assert_eq(n, 4);
    cr_expect(w[2].util == 0.5 && w[2].time >= 495 && w[2].time <= 500, "%ld %g", (long)w[2].time,
              w[2].util);
    cr_expect(w[3].util == 1.0);
    cr_assert_eq(tdx_mmu_worst(m, 0, 4, w, &n), 0);
    cr_expect_eq(n, 0);
    tdx_mmu_free(m);
    tdx_vec_free(&b);
}

/* No GOMAXPROCS: no function; an absurd one is refused, not allocated. */
Test(mmu, no_or_absurd_gomaxprocs) {
    feed f;
    feed_init(&f);
    ev(&f, 1, TDX_TYPE_SYNC, -1, -1, 0);
    ev(&f, 10, TDX_EV_HEAP_ALLOC, 0, 1, 1);
    tdx_buf b = section(&f);
    tdx_muread r;
    tdx_err err;
    cr_assert_eq(tdx_muread_init(&r, b.v, b.n, 0, &err), 0);
    tdx_mmu *m = (tdx_mmu *)&b;
    cr_assert_eq(tdx_mmu_new(&m, &r, TDX_MMU_STW, &err), 0);
    cr_expect_null(m);
    tdx_muread_free(&r);
    tdx_vec_free(&b);

    feed_init(&f);
    ev(&f, 10, TDX_EV_PROCS_CHANGE, 0, 1, 1ull << 40);
    b = section(&f);
    cr_assert_eq(tdx_muread_init(&r, b.v, b.n, 0, &err), 0);
    cr_assert_eq(tdx_mmu_new(&m, &r, TDX_MMU_STW, &err), -1);
    cr_expect(strstr(err.msg, "GOMAXPROCS") != NULL, "%s", err.msg);
    tdx_muread_free(&r);
    tdx_vec_free(&b);
}

static void reseal(tdx_buf *b) {
    tdx_le64(b->v + b->n - 8, XXH3_64bits(b->v, b->n - 8));
}

static int read_all(const tdx_buf *b, tdx_err *err) {
    tdx_muread r;
    int rc = tdx_muread_init(&r, b->v, b->n, 1000, err);
    tdx_murec rec;
    while (!rc && (rc = tdx_muread_next(&r, &rec, err)) == 1) rc = 0;
    tdx_muread_free(&r);
    return rc;
}

/* Every malformed section is refused, naming MUTIL and an offset in it; no damage crashes. */
Test(mmu, malformed) {
    feed f;
    feed_init(&f);
    ev(&f, 10, TDX_EV_PROCS_CHANGE, 0, 1, 2);
    for (int i = 0; i < 9000; i++) { /* two blocks (16384 records a block) */
        ev(&f, 20 + 64 * i, TDX_EV_GC_MARK_ASSIST_BEGIN, i % 2, 100 + i, 0);
        ev(&f, 50 + 64 * i, TDX_EV_GC_MARK_ASSIST_END, i % 2, 100 + i, 0);
    }
    ev(&f, 4000000, TDX_EV_HEAP_ALLOC, 0, 1, 0);
    tdx_buf good = section(&f);
    tdx_err err;
    cr_assert_eq(read_all(&good, &err), 0, "%s", err.msg);
    /* [32] the first block: uvarint records (16384: 3 bytes), unit, values, coded length */
    uint64_t nrec, unit;
    cr_assert_eq(tdx_uvarint(good.v + 32, good.v + good.n, &nrec), 3);
    cr_assert_eq(tdx_uvarint(good.v + 35, good.v + good.n, &unit), 1);
    cr_expect_eq(nrec, 16384);
    cr_expect_eq(unit, 2); /* (4 divides the begins' times only) */
    struct {
        size_t at;
        uint8_t v;
        bool hash;
    } cases[] = {
        {30, 0xff, false}, /* any byte, unsealed: the checksum */
        {0, 'X', true},    /* the magic */
        {8, 0xff, true},   /* more records than the section can hold */
        {8, 3, true},      /* fewer records than the blocks hold */
        {24, 1, true},     /* an origin above 0 */
        {32, 0, true},     /* a block of no records (0, then stray bytes) */
        {35, 0, true},     /* a unit of 0 */
        {35, 3, true},     /* a unit not a power of two */
        {35, 64, true},    /* another unit: times past the last event */
        {36, 1, true},     /* too few values */
        {18, 0, true},     /* the last event (4000000 -> 2304) before a record */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tdx_buf b = {0};
        cr_assert_eq(tdx_buf_append(&b, good.v, good.n), 0);
        b.v[cases[i].at] = cases[i].v;
        if (cases[i].hash) reseal(&b);
        tdx_err_clear(&err);
        cr_expect_eq(read_all(&b, &err), -1, "case %zu read", i);
        cr_expect(strstr(err.msg, "MUTIL") != NULL && err.offset >= 1000 && err.offset < 1000 + b.n,
                  "case %zu: %s at %lu", i, err.msg, (unsigned long)err.offset);
        tdx_vec_free(&b);
    }
    /* any byte of the coded blocks, resealed: refused or read, never out of bounds (ASan) */
    int refused = 0;
    for (size_t at = 32; at < good.n - 8; at += 7) {
        tdx_buf b = {0};
        cr_assert_eq(tdx_buf_append(&b, good.v, good.n), 0);
        b.v[at] ^= 0x5a;
        reseal(&b);
        refused += read_all(&b, &err) == -1;
        tdx_vec_free(&b);
    }
    cr_expect_gt(refused, 0);
    /* too short for a header and a trailer */
    cr_expect_eq(read_all(&(tdx_buf){good.v, 20, 20}, &err), -1);
    tdx_vec_free(&good);
}

/* Times below 0 (crossing 0 between two blocks) read back as they were written. */
Test(mmu, negative_times) {
    feed f;
    feed_init(&f);
    ev(&f, -400000, TDX_EV_PROCS_CHANGE, 0, 1, 1);
    for (int i = 0; i < 9000; i++) { /* 18001 records: the second block starts above 0 */
        ev(&f, -327680 + 64 * i, TDX_EV_GC_SWEEP_BEGIN, 0, 1, 0);
        ev(&f, -327680 + 64 * i + 33, TDX_EV_GC_SWEEP_END, 0, 1, 0);
    }
    ev(&f, 500000, TDX_EV_HEAP_ALLOC, 0, 1, 0);
    tdx_buf b = section(&f);
    tdx_muread r;
    tdx_err err;
    cr_assert_eq(tdx_muread_init(&r, b.v, b.n, 0, &err), 0, "%s", err.msg);
    tdx_murec rec;
    cr_assert_eq(tdx_muread_next(&r, &rec, &err), 1, "%s", err.msg);
    cr_expect(rec.kind == TDX_MU_PROCS && rec.time == -400000 && rec.n == 1);
    for (int i = 0; i < 18000; i++) {
        cr_assert_eq(tdx_muread_next(&r, &rec, &err), 1, "record %d: %s", i, err.msg);
        int64_t want = -327680 + 64 * (i / 2) + (i % 2 ? 33 : 0);
        cr_assert(rec.time == want && rec.p == 0, "record %d: %ld, want %ld", i, (long)rec.time,
                  (long)want);
    }
    cr_expect_eq(tdx_muread_next(&r, &rec, &err), 0);
    tdx_muread_free(&r);
    tdx_vec_free(&b);
}
