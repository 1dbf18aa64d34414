/* test_gostats.c: index/analysis/gostats.c computes Go's goroutine statistics event by event
 * (values worked out by hand), keeps the latest record of a reused id across spills, and
 * index/analysis/gsindex.c stores them so that every byte of the section is checked: any flipped
 * byte or truncation is refused. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/event.h"
#include "core/spec.h"
#include "core/varint.h"
#include "index/analysis/gostats.h"
#include "index/analysis/gsindex.h"
#include "index/format/rans.h"

/* Strings 1 "chan receive", 2 "forever", 3 "main.f", 4 "main.g"; stack 1 [main.f], 2 [main.g]. */
static void make_gen(tdx_gen *g) {
    memset(g, 0, sizeof *g);
    static const char *const s[] = {"", "chan receive", "forever", "main.f", "main.g"};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(
            tdx_vec_push(&g->strings, ((tdx_str){(const uint8_t *)s[i], (uint32_t)strlen(s[i])})),
            0);
    cr_assert_eq(tdx_vec_push(&g->stacks, ((tdx_stack){0, 0, 0})), 0);
    for (uint32_t k = 0; k < 2; k++) {
        cr_assert_eq(tdx_vec_push(&g->frames, ((tdx_frame){0x100 + k, 1, 3 + k, 0, 0, 0})), 0);
        cr_assert_eq(tdx_vec_push(&g->stack_frames, k), 0);
        cr_assert_eq(tdx_vec_push(&g->stacks, ((tdx_stack){k + 1, k, 1})), 0);
    }
}

static void free_gen(tdx_gen *g) {
    tdx_vec_free(&g->strings);
    tdx_vec_free(&g->stacks);
    tdx_vec_free(&g->frames);
    tdx_vec_free(&g->stack_frames);
}

static tdx_event go(int type, int64_t t, int64_t p, int64_t ctxg, int64_t id, int from, int to) {
    tdx_event e;
    memset(&e, 0, sizeof e);
    e.type = (uint8_t)type;
    e.kind = TDX_KIND_STATE_TRANSITION;
    e.res_kind = TDX_RES_GOROUTINE;
    e.time = t;
    e.p = p;
    e.g = ctxg;
    e.res = id;
    e.from = (uint8_t)from;
    e.to = (uint8_t)to;
    return e;
}

static tdx_event proc(int64_t t, int64_t id, int from, int to) {
    tdx_event e = go(TDX_EV_PROC_STEAL, t, TDX_NO_ID, TDX_NO_ID, id, from, to);
    e.res_kind = TDX_RES_PROC;
    return e;
}

static tdx_event sync_at(int64_t t) {
    tdx_event e;
    memset(&e, 0, sizeof e);
    e.type = TDX_TYPE_SYNC;
    e.kind = TDX_KIND_SYNC;
    e.time = t;
    return e;
}

static tdx_event assist(int kind, int64_t t, int64_t g) {
    tdx_event e;
    memset(&e, 0, sizeof e);
    e.type = kind == TDX_KIND_RANGE_BEGIN ? TDX_EV_GC_MARK_ASSIST_BEGIN : TDX_EV_GC_MARK_ASSIST_END;
    e.kind = (uint8_t)kind;
    e.time = t;
    e.g = g;
    return e;
}

enum {
    NOTEXIST = TDX_GO_NOTEXIST,
    RUNNABLE = TDX_GO_RUNNABLE,
    RUNNING = TDX_GO_RUNNING,
    WAITING = TDX_GO_WAITING,
    SYSCALL = TDX_GO_SYSCALL
};

/* Feeds the scenario below: goroutine 7 (main.f) runs, blocks on a channel, runs, enters a
 * syscall whose P is stolen, returns, exits; then id 7 is created again (main.g) and is left
 * running at the end; goroutine 9 blocks forever. */
static void feed(tdx_gostats *s, const tdx_gen *g, int64_t until) {
    tdx_event ev[32];
    int n = 0;
    ev[n++] = sync_at(10);
    ev[n] = go(TDX_EV_GO_CREATE, 100, 0, TDX_NO_ID, 7, NOTEXIST, RUNNABLE);
    ev[n++].tstack = 1;
    ev[n++] = go(TDX_EV_GO_START, 150, 0, TDX_NO_ID, 7, RUNNABLE, RUNNING); /* sched 50 */
    ev[n++] = assist(TDX_KIND_RANGE_BEGIN, 160, 7);
    ev[n++] = assist(TDX_KIND_RANGE_END, 170, 7);                             /* mark assist 10 */
    ev[n] = go(TDX_EV_GO_BLOCK, 200, 0, 7, 7, RUNNING, WAITING);              /* exec 50 */
    ev[n++].str[0] = 1;                                                       /* chan receive */
    ev[n++] = go(TDX_EV_GO_UNBLOCK, 260, 0, TDX_NO_ID, 7, WAITING, RUNNABLE); /* block 60 */
    ev[n++] = go(TDX_EV_GO_START, 300, 0, TDX_NO_ID, 7, RUNNABLE, RUNNING);   /* sched 40 */
    ev[n++] = go(TDX_EV_GO_SYSCALL_BEGIN, 330, 0, 7, 7, RUNNING, SYSCALL);    /* exec 30 */
    ev[n++] = proc(350, 0, TDX_PROC_RUNNING, TDX_PROC_IDLE);                  /* syscall 20 */
    ev[n++] = go(TDX_EV_GO_SYSCALL_END_BLOCKED, 400, TDX_NO_ID, 7, 7, SYSCALL, RUNNABLE);
    ev[n++] = go(TDX_EV_GO_START, 420, 0, TDX_NO_ID, 7, RUNNABLE, RUNNING); /* sched 20 */
    ev[n++] = go(TDX_EV_GO_DESTROY, 500, 0, 7, 7, RUNNING, NOTEXIST);       /* exec 80 */
    ev[n] = go(TDX_EV_GO_CREATE, 510, 0, TDX_NO_ID, 9, NOTEXIST, RUNNABLE);
    ev[n++].tstack = 1;
    ev[n++] = sync_at(600); /* 7's first record leaves memory here */
    ev[n++] = go(TDX_EV_GO_START, 610, 0, TDX_NO_ID, 9, RUNNABLE, RUNNING); /* 9: sched 100 */
    ev[n] = go(TDX_EV_GO_BLOCK, 640, 0, 9, 9, RUNNING, WAITING);            /* 9: exec 30 */
    ev[n++].str[0] = 2;                                                     /* forever */
    ev[n] = go(TDX_EV_GO_CREATE, 700, 0, TDX_NO_ID, 7, NOTEXIST, RUNNABLE);
    ev[n++].tstack = 2;
    ev[n++] = go(TDX_EV_GO_START, 750, 0, TDX_NO_ID, 7, RUNNABLE, RUNNING);
    ev[n++] = sync_at(1000);
    tdx_err err;
    for (int i = 0; i < n && ev[i].time <= until; i++)
        cr_assert_eq(tdx_gostats_event(s, &ev[i], g, &err), 0, "event %d: %s", i, err.msg);
}

/* The statistics of the scenario up to `until`, finished (its spills beside `beside`). */
static tdx_gostats *fed(const tdx_gen *gen, const char *beside, size_t budget, int64_t until) {
    tdx_gostats *s = tdx_gostats_new(beside, budget);
    cr_assert_not_null(s);
    feed(s, gen, until);
    tdx_err err;
    cr_assert_eq(tdx_gostats_finish(s, &err), 0, "%s", err.msg);
    return s;
}

static int64_t kv(const tdx_gostat_kv *v, size_t n, const tdx_gostats *s, const char *key) {
    for (size_t i = 0; i < n; i++) {
        tdx_str k = tdx_gostats_str(s, v[i].key);
        if (k.n == strlen(key) && memcmp(k.p, key, k.n) == 0) return v[i].ns;
    }
    return -1;
}

static void check_records(tdx_gostats *s) {
    tdx_err err;
    tdx_gostat g;
    /* id 7: only its second record (Go's map keeps the latest) */
    cr_assert_eq(tdx_gostats_next(s, &g, &err), 1, "%s", err.msg);
    cr_assert_eq(g.id, 7);
    tdx_str name = tdx_gostats_str(s, g.name);
    cr_assert(name.n == 6 && memcmp(name.p, "main.g", 6) == 0, "the re-created goroutine's name");
    cr_assert_eq(g.creation, 700);
    cr_assert_eq(g.start, 750);
    cr_assert_eq(g.end, 0);
    cr_assert_eq(g.exec, 250, "running from 750 to the last event (1000)");
    cr_assert_eq(g.sched, 50);
    cr_assert_eq(g.total, 300);
    cr_assert_eq(tdx_gostat_unknown(&g), 0);
    /* id 9: blocked forever is an end, with no block time */
    cr_assert_eq(tdx_gostats_next(s, &g, &err), 1, "%s", err.msg);
    cr_assert_eq(g.id, 9);
    cr_assert_eq(g.end, 640);
    cr_assert_eq(g.exec, 30);
    cr_assert_eq(g.sched, 100);
    cr_assert_eq(g.total, 130);
    cr_assert_eq(g.nblock, 0);
    cr_assert_eq(tdx_gostats_next(s, &g, &err), 0, "two goroutines");
}

Test(gostats, by_hand_with_spills) {
    tdx_gen gen;
    make_gen(&gen);
    /* a budget of 1 byte: every record spilled goes to the scratch file alone */
    tdx_gostats *s = fed(&gen, "/tmp/gostats-test.tidx", 1, INT64_MAX);
    tdx_err err;
    check_records(s);
    cr_assert_eq(tdx_gostats_rewind(s, &err), 0);
    check_records(s);
    tdx_gostats_free(s);
    free_gen(&gen);
}

Test(gostats, first_record_before_reuse) {
    /* The first record of id 7, alone: the steal split its syscall into 20 ns of execution and
     * 50 of blocked syscall. */
    tdx_gen gen;
    make_gen(&gen);
    tdx_gostats *s =
        fed(&gen, NULL, 1 << 20, 600); /* up to the Sync before id 7 is created again */
    tdx_err err;
    tdx_gostat g;
    cr_assert_eq(tdx_gostats_next(s, &g, &err), 1);
    cr_assert_eq(g.exec, 50 + 30 + 80);
    cr_assert_eq(g.sched, 50 + 40 + 20);
    cr_assert_eq(g.syscall, 20);
    cr_assert_eq(g.syscall_block, 50);
    cr_assert_eq(g.total, 400);
    cr_assert_eq(g.end, 500);
    cr_assert_eq(kv(g.block, g.nblock, s, "chan receive"), 60);
    cr_assert_eq(kv(g.range, g.nrange, s, "GC mark assist"), 10);
    cr_assert_eq(tdx_gostat_unknown(&g), 400 - (160 + 110 + 20 + 50 + 60));
    tdx_gostats_free(s);
    free_gen(&gen);
}

/* ---- the section ---- */

static int put_buf(void *ctx, const void *p, size_t n, tdx_err *err) {
    (void)err;
    return tdx_buf_append(ctx, p, n);
}

static tdx_buf section(void) {
    tdx_gen gen;
    make_gen(&gen);
    tdx_gostats *s = fed(&gen, "/tmp/gostats-test.tidx", 1, INT64_MAX);
    tdx_err err;
    tdx_buf b = {0};
    cr_assert_eq(tdx_gsindex_write(s, "/tmp/gostats-test.tidx", 1, put_buf, &b, &err), 0, "%s",
                 err.msg);
    tdx_gostats_free(s);
    free_gen(&gen);
    return b;
}

Test(gsindex, round_trip) {
    tdx_buf b = section();
    tdx_err err;
    cr_assert_eq(tdx_gsindex_verify(b.v, b.n, 0, &err), 0, "%s", err.msg);
    tdx_gsindex x;
    cr_assert_eq(tdx_gsindex_open(&x, b.v, b.n, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(x.goroutines, 2);
    cr_assert_eq(x.exec, 280);
    cr_assert_eq(x.ngroups, 2);
    /* display order: main.g (250 ns of execution), then main.f (30: goroutine 9) */
    tdx_gsgroup g0 = tdx_gsindex_group(&x, 0), g1 = tdx_gsindex_group(&x, 1);
    tdx_str n0 = tdx_gsindex_str(&x, g0.name), n1 = tdx_gsindex_str(&x, g1.name);
    cr_assert(n0.n == 6 && memcmp(n0.p, "main.g", 6) == 0);
    cr_assert(n1.n == 6 && memcmp(n1.p, "main.f", 6) == 0);
    cr_assert_eq(g0.exec, 250);
    cr_assert_eq(g1.count, 1);
    tdx_gostat g;
    cr_assert_eq(tdx_gsindex_begin(&x, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(tdx_gsindex_next(&x, &g, &err), 1, "%s", err.msg);
    cr_assert_eq(g.id, 9);
    cr_assert_eq(g.creation, 510);
    cr_assert_eq(g.start, 610);
    cr_assert_eq(g.end, 640);
    cr_assert_eq(g.total, 130);
    cr_assert_eq(g.pc, 0x100);
    cr_assert_eq(tdx_gsindex_next(&x, &g, &err), 0);
    tdx_gsindex_free(&x);
    tdx_vec_free(&b);
}

Test(gsindex, every_byte_checked) {
    tdx_buf b = section();
    tdx_err err;
    uint8_t *c = malloc(b.n);
    cr_assert_not_null(c);
    for (size_t i = 0; i < b.n; i++) {
        memcpy(c, b.v, b.n);
        c[i] ^= 0x10;
        cr_assert_neq(tdx_gsindex_verify(c, b.n, 1000, &err), 0, "byte %zu flipped unnoticed", i);
        cr_assert_eq(err.kind, TDX_EINDEX);
        cr_assert(strstr(err.msg, "GSTATS") && strstr(err.msg, "rebuild"), "%s", err.msg);
        cr_assert(err.offset >= 1000 && err.offset < 1000 + b.n, "offset %llu",
                  (unsigned long long)err.offset);
    }
    for (size_t n = 0; n < b.n; n++)
        cr_assert_neq(tdx_gsindex_verify(b.v, n, 0, &err), 0, "truncated to %zu unnoticed", n);
    free(c);
    tdx_vec_free(&b);
}

/* section() with main.f's run (goroutine 9, the display's second group) coded anew by hand, as
 * docs/index-format.md lays it out, with `nkeys` block reasons of string id 0 and 0 ns. */
static tdx_buf crafted_run(size_t nkeys) {
    tdx_buf b = section();
    tdx_err err;
    tdx_gsindex x;
    cr_assert_eq(tdx_gsindex_open(&x, b.v, b.n, 0, &err), 0, "%s", err.msg);
    size_t head = (size_t)(x.data - b.v), table = (size_t)(x.table - b.v);
    tdx_gsindex_free(&x);
    uint64_t v[32 + 64], nv = 0;
    uint32_t f[32 + 64];
#define PUT(field, val) (f[nv] = (field), v[nv++] = (val))
    PUT(0, 18);     /* id 9, zigzag */
    PUT(1, 3);      /* has start, has end */
    PUT(2, 1000);   /* creation 510: zigzag(510 - t0 10) */
    PUT(3, 100);    /* start 610 */
    PUT(4, 30);     /* end 640, after start */
    PUT(5, 0);      /* total 130, as expected */
    PUT(6, 30);     /* execution */
    PUT(7, 100);    /* scheduler wait */
    PUT(8, 0);      /* syscall */
    PUT(9, 0);      /* blocked syscall */
    PUT(10, 0x200); /* PC 0x100, zigzag */
    PUT(11, nkeys); /* block reasons */
    for (size_t i = 0; i < nkeys; i++) PUT(12, 1), PUT(13, 0);
    PUT(14, 0); /* no ranges */
#undef PUT
    tdx_rans_enc e;
    tdx_rans_enc_init(&e);
    tdx_buf coded = {0}, run = {0};
    cr_assert_eq(tdx_rans_enc_reset(&e, 17), 0);
    cr_assert_eq(tdx_rans_enc_reserve(&e, nv, nv * 64), 0);
    for (size_t i = 0; i < nv; i++) tdx_rans_put_uint(&e, (int)(f[i] & 3), f[i], v[i]);
    cr_assert_eq(tdx_rans_enc_finish(&e, &coded), 0);
    tdx_rans_enc_free(&e);
    cr_assert_eq(tdx_buf_uvarint(&run, 1) | tdx_buf_uvarint(&run, nv) |
                     tdx_buf_uvarint(&run, coded.n) | tdx_buf_append(&run, coded.v, coded.n),
                 0);
    /* the new run goes last; the table's second record points at it */
    uint8_t *t1 = b.v + table + 48;
    uint64_t off = b.n - head;
    memcpy(t1 + 24, &off, 8);
    uint64_t len = run.n, hash = XXH3_64bits(run.v, run.n);
    memcpy(t1 + 32, &len, 8);
    memcpy(t1 + 40, &hash, 8);
    hash = XXH3_64bits(b.v, head - 8);
    memcpy(b.v + head - 8, &hash, 8);
    cr_assert_eq(tdx_buf_append(&b, run.v, run.n), 0);
    tdx_vec_free(&coded);
    tdx_vec_free(&run);
    return b;
}

Test(gsindex, map_no_larger_than_strings) {
    tdx_err err;
    tdx_buf b = crafted_run(1); /* the crafting itself is sound */
    cr_assert_eq(tdx_gsindex_verify(b.v, b.n, 0, &err), 0, "%s", err.msg);
    tdx_gsindex x;
    cr_assert_eq(tdx_gsindex_open(&x, b.v, b.n, 0, &err), 0, "%s", err.msg);
    size_t nstr = x.strs.n - 1;
    tdx_gsindex_free(&x);
    tdx_vec_free(&b);
    /* a map with more entries than there are keys: values that cost no bits could make a few
     * bytes claim any number */
    b = crafted_run(nstr + 2);
    cr_assert_neq(tdx_gsindex_verify(b.v, b.n, 0, &err), 0, "%zu reasons from %zu strings",
                  nstr + 2, nstr);
    cr_assert(strstr(err.msg, "a goroutine's record"), "%s", err.msg);
    tdx_vec_free(&b);
}

/* One goroutine with more distinct reasons and open ranges than a record searches in place: 40
 * block reasons (the k-th blocks for k + 1 ns) and 30 stop-the-world ranges of distinct kinds,
 * 20 open at once, half of them closed, 10 more opened (taking the places the closed ones left),
 * then all closed, in an order that moves entries around. */
static void stw(tdx_gostats *s, const tdx_gen *g, int begin, int k, int64_t t) {
    tdx_event e;
    memset(&e, 0, sizeof e);
    e.type = begin ? TDX_EV_STW_BEGIN : TDX_EV_STW_END;
    e.kind = begin ? TDX_KIND_RANGE_BEGIN : TDX_KIND_RANGE_END;
    e.g = 5;
    e.str[0] = (uint32_t)(41 + k);
    e.time = t;
    tdx_err err;
    cr_assert_eq(tdx_gostats_event(s, &e, g, &err), 0, "%s", err.msg);
}

Test(gostats, many_keys) {
    tdx_gen g;
    memset(&g, 0, sizeof g);
    char names[70][16];
    cr_assert_eq(tdx_vec_push(&g.strings, ((tdx_str){(const uint8_t *)"", 0})), 0);
    for (int k = 0; k < 70; k++) {
        snprintf(names[k], sizeof names[k], k < 40 ? "reason %d" : "kind %d", k);
        cr_assert_eq(tdx_vec_push(&g.strings, ((tdx_str){(const uint8_t *)names[k],
                                                         (uint32_t)strlen(names[k])})),
                     0);
    }
    tdx_gostats *s = tdx_gostats_new(NULL, 1 << 20);
    cr_assert_not_null(s);
    tdx_err err;
    int64_t t = 1000;
    tdx_event e = sync_at(10);
    cr_assert_eq(tdx_gostats_event(s, &e, &g, &err), 0);
    e = go(TDX_EV_GO_CREATE, t, 0, TDX_NO_ID, 5, NOTEXIST, RUNNABLE);
    cr_assert_eq(tdx_gostats_event(s, &e, &g, &err), 0);
    e = go(TDX_EV_GO_START, t += 10, 0, TDX_NO_ID, 5, RUNNABLE, RUNNING);
    cr_assert_eq(tdx_gostats_event(s, &e, &g, &err), 0);
    for (int k = 0; k < 40; k++) {
        e = go(TDX_EV_GO_BLOCK, t += 10, 0, 5, 5, RUNNING, WAITING);
        e.str[0] = (uint32_t)(1 + k);
        cr_assert_eq(tdx_gostats_event(s, &e, &g, &err), 0);
        e = go(TDX_EV_GO_UNBLOCK, t += k + 1, 0, TDX_NO_ID, 5, WAITING, RUNNABLE);
        cr_assert_eq(tdx_gostats_event(s, &e, &g, &err), 0);
        e = go(TDX_EV_GO_START, t += 10, 0, TDX_NO_ID, 5, RUNNABLE, RUNNING);
        cr_assert_eq(tdx_gostats_event(s, &e, &g, &err), 0);
    }
    int64_t begun[30], ended[30];
    for (int k = 0; k < 20; k++) stw(s, &g, 1, k, begun[k] = t += 1 + k);
    for (int step = 0; step < 10; step++) { /* kinds 0, 7, 14, 1, 8, 15, 2, 9, 16, 3 */
        int k = (step * 7) % 20;
        stw(s, &g, 0, k, ended[k] = t += 3);
    }
    for (int k = 20; k < 30; k++) stw(s, &g, 1, k, begun[k] = t += 2);
    for (int step = 0; step < 30; step++) {
        int k = (step * 11) % 30;
        if (k < 20 &&
            (k % 7 == 0 || k == 1 || k == 2 || k == 3 || k == 8 || k == 9 || k == 15 || k == 16))
            continue; /* closed above */
        stw(s, &g, 0, k, ended[k] = t += 5);
    }
    e = sync_at(t + 1);
    cr_assert_eq(tdx_gostats_event(s, &e, &g, &err), 0);
    cr_assert_eq(tdx_gostats_finish(s, &err), 0, "%s", err.msg);
    tdx_gostat r;
    cr_assert_eq(tdx_gostats_next(s, &r, &err), 1);
    cr_assert_eq(r.nblock, 40);
    for (int k = 0; k < 40; k++)
        cr_assert_eq(kv(r.block, r.nblock, s, names[k]), k + 1, "reason %d", k);
    cr_assert_eq(r.nrange, 30);
    for (int k = 0; k < 30; k++) {
        char want[40];
        snprintf(want, sizeof want, "stop-the-world (%s)", names[40 + k]);
        cr_assert_eq(kv(r.range, r.nrange, s, want), ended[k] - begun[k], "range %d", k);
    }
    tdx_gostats_free(s);
    tdx_vec_free(&g.strings);
}

/* ---- many goroutines: a group's run in several blocks ---- */

typedef struct want {
    tdx_gostat g;
    tdx_gostat_kv kv[16];
} want;

/* Goroutine i: created (main.f, every fifth main.g), then either never run, or run and blocked
 * up to three times for reasons in an order that turns every 7th i, and then ended or left running;
 * times grow unevenly, ids with gaps. Syncs now and then; a 4 KiB spill budget. */
static tdx_gostats *many(int n, tdx_gen *gen) {
    make_gen(gen);
    static const char *const more[] = {"select", "sync", "sleep"};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tdx_vec_push(&gen->strings,
                                  ((tdx_str){(const uint8_t *)more[i], (uint32_t)strlen(more[i])})),
                     0);
    static const uint32_t reason[4] = {1, 5, 6, 7};
    tdx_gostats *s = tdx_gostats_new("/tmp/gostats-test.tidx", 4096);
    cr_assert_not_null(s);
    tdx_err err;
    int64_t t = (int64_t)1 << 40;
    tdx_event e[16];
    for (int i = 0; i < n; i++) {
        int k = 0;
        if (i % 1000 == 0) e[k++] = sync_at(t += 7);
        int64_t id = 1 + 3 * (int64_t)i + i % 2;
        e[k] = go(TDX_EV_GO_CREATE, t += 1000 + (i * 7919) % 100000, 0, TDX_NO_ID, id, NOTEXIST,
                  RUNNABLE);
        e[k++].tstack = i % 5 ? 1 : 2;
        if (i % 11 != 3) {
            e[k++] = go(TDX_EV_GO_START, t += i % 50 + 1, 0, TDX_NO_ID, id, RUNNABLE, RUNNING);
            for (int j = 0; j < i % 4; j++) {
                e[k] = go(TDX_EV_GO_BLOCK, t += 13, 0, id, id, RUNNING, WAITING);
                e[k++].str[0] = reason[(i / 7 + j) % 4];
                e[k++] = go(TDX_EV_GO_UNBLOCK, t += (int64_t)(j + 1) * (i % 1000 + 1), 0, TDX_NO_ID,
                            id, WAITING, RUNNABLE);
                e[k++] = go(TDX_EV_GO_START, t += 3, 0, TDX_NO_ID, id, RUNNABLE, RUNNING);
            }
            if (i % 3) e[k++] = go(TDX_EV_GO_DESTROY, t += 5, 0, id, id, RUNNING, NOTEXIST);
        }
        for (int j = 0; j < k; j++)
            cr_assert_eq(tdx_gostats_event(s, &e[j], gen, &err), 0, "%s", err.msg);
    }
    e[0] = sync_at(t + 1);
    cr_assert_eq(tdx_gostats_event(s, &e[0], gen, &err), 0, "%s", err.msg);
    cr_assert_eq(tdx_gostats_finish(s, &err), 0, "%s", err.msg);
    return s;
}

static void same(const tdx_gostat *a, const want *w) {
    const tdx_gostat *b = &w->g;
    cr_assert(a->id == b->id && a->pc == b->pc && a->creation == b->creation &&
                  a->start == b->start && a->end == b->end,
              "goroutine %lld", (long long)b->id);
    cr_assert(a->exec == b->exec && a->sched == b->sched && a->syscall == b->syscall &&
                  a->syscall_block == b->syscall_block && a->total == b->total,
              "goroutine %lld", (long long)b->id);
    cr_assert(a->nblock == b->nblock && a->nrange == b->nrange, "goroutine %lld", (long long)b->id);
    for (size_t i = 0; i < a->nblock; i++)
        cr_assert(a->block[i].key == b->block[i].key && a->block[i].ns == b->block[i].ns,
                  "goroutine %lld reason %zu", (long long)b->id, i);
    for (size_t i = 0; i < a->nrange; i++)
        cr_assert(a->range[i].key == b->range[i].key && a->range[i].ns == b->range[i].ns);
}

Test(gsindex, many_blocks) {
    enum { N = 9000 }; /* main.f's 7200 goroutines take two blocks */
    tdx_gen gen;
    tdx_gostats *s = many(N, &gen);
    want *w = calloc(N, sizeof *w);
    cr_assert_not_null(w);
    tdx_err err;
    tdx_gostat g;
    int n = 0, same_key = 0, new_key = 0;
    while (tdx_gostats_next(s, &g, &err) == 1) {
        cr_assert_lt(n, N);
        cr_assert_leq(g.nblock + g.nrange, 16);
        w[n].g = g;
        if (g.nblock) memcpy(w[n].kv, g.block, g.nblock * sizeof *g.block);
        if (g.nrange) memcpy(w[n].kv + g.nblock, g.range, g.nrange * sizeof *g.range);
        w[n].g.block = w[n].kv;
        w[n].g.range = w[n].kv + g.nblock;
        if (n && g.nblock && w[n - 1].g.nblock) { /* what a record's keys are coded against */
            same_key += g.block[0].key == w[n - 1].kv[0].key;
            new_key += g.block[0].key != w[n - 1].kv[0].key;
        }
        n++;
    }
    cr_assert_eq(n, N);
    cr_assert(same_key > 300 && new_key > 300, "keys repeat (%d) and change (%d)", same_key,
              new_key);
    cr_assert_eq(tdx_gostats_rewind(s, &err), 0, "%s", err.msg);
    tdx_buf b = {0};
    cr_assert_eq(tdx_gsindex_write(s, "/tmp/gostats-test.tidx", 4096, put_buf, &b, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(tdx_gsindex_verify(b.v, b.n, 0, &err), 0, "%s", err.msg);
    tdx_gsindex x;
    cr_assert_eq(tdx_gsindex_open(&x, b.v, b.n, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(x.ngroups, 2);
    int seen = 0;
    for (uint64_t gi = 0; gi < 2; gi++) {
        cr_assert_eq(tdx_gsindex_begin(&x, gi, &err), 0, "%s", err.msg);
        int at = 0, got;
        while ((got = tdx_gsindex_next(&x, &g, &err)) == 1) {
            while (at < N && w[at].g.id != g.id) at++; /* a run holds its ids in order */
            cr_assert_lt(at, N, "goroutine %lld", (long long)g.id);
            same(&g, &w[at]);
            cr_assert_eq(tdx_gsindex_group(&x, gi).name, w[at].g.name);
            seen++;
        }
        cr_assert_eq(got, 0, "%s", err.msg);
    }
    cr_assert_eq(seen, N);
    tdx_gsindex_free(&x);
    /* damage anywhere in the runs' blocks, the later ones included, is found */
    uint8_t *c = malloc(b.n);
    cr_assert_not_null(c);
    for (size_t i = 0; i < b.n; i += 251) {
        memcpy(c, b.v, b.n);
        c[i] ^= 0x04;
        cr_assert_neq(tdx_gsindex_verify(c, b.n, 0, &err), 0, "byte %zu flipped unnoticed", i);
    }
    free(c);
    tdx_vec_free(&b);
    free(w);
    tdx_gostats_free(s);
    free_gen(&gen);
}

/* ---- the region detail query ---- */

static tdx_event region(int kind, int64_t t, int64_t g, uint32_t type, uint64_t task) {
    tdx_event e;
    memset(&e, 0, sizeof e);
    e.type = kind == TDX_KIND_REGION_BEGIN ? TDX_EV_USER_REGION_BEGIN : TDX_EV_USER_REGION_END;
    e.kind = (uint8_t)kind;
    e.time = t;
    e.g = g;
    e.str[0] = type;
    e.args[0] = task;
    e.stack = 1;
    return e;
}

typedef struct got_regions {
    tdx_gostat_region r[8];
    tdx_gostat_kv kv[8][4];
    int n;
} got_regions;

static int collect(void *ctx, const tdx_gostat_region *r, tdx_err *err) {
    (void)err;
    got_regions *g = ctx;
    cr_assert_lt(g->n, 8);
    cr_assert_leq(r->st.nblock + r->st.nrange, 4);
    g->r[g->n] = *r;
    memcpy(g->kv[g->n], r->st.block, r->st.nblock * sizeof *r->st.block);
    g->r[g->n].st.block = g->kv[g->n];
    g->n++;
    return 0;
}

/* Go's snapshotStat counts the pending state up to the snapshot: a region that ends while its
 * goroutine is blocked has the block so far; one begun and ended in a syscall whose P went idle
 * has the syscall's time so far as syscall time, and the time since the P left as scheduler
 * wait too (Go's quirk). Traces never end a region off-CPU; the module follows Go regardless. A
 * region of another type is not reported; an end without a begin has the goroutine's whole. */
Test(gostats, region_detail) {
    tdx_gen gen;
    make_gen(&gen);
    tdx_gostats *s = tdx_gostats_new(NULL, 1 << 20);
    cr_assert_not_null(s);
    got_regions got;
    memset(&got, 0, sizeof got);
    tdx_gostats_region_detail(s, (const uint8_t *)"main.f", 6, true, 0, false, collect, &got);
    tdx_event ev[16];
    int n = 0;
    ev[n++] = sync_at(10);
    ev[n++] = go(TDX_EV_GO_STATUS, 10, 0, TDX_NO_ID, 1, TDX_GO_UNDETERMINED, RUNNING);
    ev[n++] = region(TDX_KIND_REGION_BEGIN, 20, 1, 3, 7);
    ev[n] = go(TDX_EV_GO_BLOCK, 30, 0, 1, 1, RUNNING, WAITING); /* exec 10 in the region */
    ev[n++].str[0] = 1;
    ev[n++] = region(TDX_KIND_REGION_END, 50, 1, 3, 7);   /* chan receive 20 so far */
    ev[n++] = region(TDX_KIND_REGION_BEGIN, 55, 1, 4, 7); /* main.g: not reported */
    ev[n++] = go(TDX_EV_GO_UNBLOCK, 60, 0, TDX_NO_ID, 1, WAITING, RUNNABLE);
    ev[n++] = go(TDX_EV_GO_START, 65, 0, TDX_NO_ID, 1, RUNNABLE, RUNNING);
    ev[n++] = region(TDX_KIND_REGION_END, 66, 1, 4, 7);
    ev[n++] = go(TDX_EV_GO_SYSCALL_BEGIN, 70, 0, 1, 1, RUNNING, SYSCALL);
    ev[n++] = proc(80, 0, TDX_PROC_RUNNING, TDX_PROC_IDLE);
    ev[n++] = region(TDX_KIND_REGION_BEGIN, 90, 1, 3, 8);
    ev[n++] = region(TDX_KIND_REGION_END, 120, 1, 3, 8);
    ev[n++] = region(TDX_KIND_REGION_END, 130, 1, 3, 9); /* no begin */
    tdx_err err;
    for (int i = 0; i < n; i++)
        cr_assert_eq(tdx_gostats_event(s, &ev[i], &gen, &err), 0, "event %d: %s", i, err.msg);
    cr_assert_eq(tdx_gostats_finish(s, &err), 0, "%s", err.msg);
    cr_assert_eq(got.n, 3);
    const tdx_gostat_region *a = &got.r[0], *b = &got.r[1], *c = &got.r[2];
    cr_assert(a->goroutine == 1 && a->task == 7 && a->start == 20 && a->end == 50 && a->has_start);
    cr_assert_eq(a->pc, 0x100);                      /* stack 1's outermost frame */
    tdx_str ty = tdx_gostats_region_str(s, a->type); /* (not NUL-terminated) */
    cr_assert(ty.n == 6 && memcmp(ty.p, "main.f", 6) == 0, "type %.*s", (int)ty.n,
              (const char *)ty.p);
    cr_assert(a->st.exec == 10 && a->st.sched == 0 && a->st.total == 30);
    cr_assert_eq(a->st.nblock, 1);
    cr_assert_eq(kv(a->st.block, a->st.nblock, s, "chan receive"), 20);
    /* the later regions carry the reason with what it was at their begin taken off: 0 */
    cr_assert(b->task == 8 && b->start == 90 && b->end == 120 && b->st.total == 30);
    cr_assert(b->st.syscall == 30 && b->st.sched == 30 && b->st.exec == 0, "%ld %ld %ld",
              (long)b->st.syscall, (long)b->st.sched, (long)b->st.exec);
    cr_assert(b->st.nblock == 1 && b->st.block[0].ns == 0);
    /* from the goroutine's creation at the Sync (10): exec 20 + 5, chan receive 30, sched 5,
     * syscall 60 and, of its blocked part, 50 as scheduler wait */
    cr_assert(c->task == 9 && !c->has_start && c->start == 10 && c->end == 130);
    cr_assert(c->st.total == 120 && c->st.exec == 25 && c->st.sched == 55 && c->st.syscall == 60,
              "%ld %ld %ld %ld", (long)c->st.total, (long)c->st.exec, (long)c->st.sched,
              (long)c->st.syscall);
    cr_assert_eq(kv(c->st.block, c->st.nblock, s, "chan receive"), 30);
    tdx_gostats_free(s);
    free_gen(&gen);
}
