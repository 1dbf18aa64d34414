/* test_gen.c: core/gen.h tdx_gen_load: string/stack/CPU-sample tables, the sync batch, the checks
 * that finish a generation and the per-thread batch lists (wire-format spec 2.5-2.6, 3.5, 5.4-5.6,
 * Appendix B). Inputs are exact-size heap copies so that over-reads are ASan errors. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gen.h"
#include "core/varint.h"

/* ---- byte builder ---- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} bld;

static void b_bytes(bld *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 64;
        while (c < b->n + n) c *= 2;
        b->p = realloc(b->p, c);
        cr_assert_not_null(b->p);
        b->cap = c;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void b_byte(bld *b, uint8_t v) {
    b_bytes(b, &v, 1);
}
static void b_uv(bld *b, uint64_t v) {
    uint8_t t[TDX_VARINT_MAX];
    b_bytes(b, t, (size_t)tdx_put_uvarint(t, v));
}
static void b_free(bld *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}
static void b_header(bld *b, int version) {
    char h[16] = {0};
    snprintf(h, sizeof h, "go 1.%d trace", version);
    b_bytes(b, h, 16);
}
/* Appends an EventBatch whose payload is pl (freed). */
static void b_batch(bld *b, uint64_t gen, uint64_t m, uint64_t time, bld *pl) {
    b_byte(b, 1);
    b_uv(b, gen);
    b_uv(b, m);
    b_uv(b, time);
    b_uv(b, pl->n);
    b_bytes(b, pl->p, pl->n);
    b_free(pl);
}
static void b_batch_raw(bld *b, uint64_t gen, uint64_t m, uint64_t time, const void *p, size_t n) {
    bld pl = {0};
    b_bytes(&pl, p, n);
    b_batch(b, gen, m, time, &pl);
}
static void b_expbatch(bld *b, uint8_t exp, uint64_t gen, uint64_t m, uint64_t time, const void *p,
                       size_t n) {
    b_byte(b, 49);
    b_byte(b, exp);
    b_uv(b, gen);
    b_uv(b, m);
    b_uv(b, time);
    b_uv(b, n);
    b_bytes(b, p, n);
}

#define PL(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})
#define NONE UINT64_MAX

/* Payload helpers. */
static void p_string(bld *pl, uint64_t id, const char *s) {
    b_byte(pl, 5);
    b_uv(pl, id);
    b_uv(pl, strlen(s));
    b_bytes(pl, s, strlen(s));
}
/* A stack whose frames are given as {pc, func, file, line} quadruples. */
static void p_stack(bld *pl, uint64_t id, size_t nframes, const uint64_t (*fr)[4]) {
    b_byte(pl, 3);
    b_uv(pl, id);
    b_uv(pl, nframes);
    for (size_t i = 0; i < nframes; i++)
        for (int k = 0; k < 4; k++) b_uv(pl, fr[i][k]);
}
static void p_sample(bld *pl, uint64_t t, uint64_t m, uint64_t p, uint64_t g, uint64_t stack) {
    b_byte(pl, 7);
    b_uv(pl, t);
    b_uv(pl, m);
    b_uv(pl, p);
    b_uv(pl, g);
    b_uv(pl, stack);
}

/* The frequency batch of the version: old form (Frequency first) or new form (Sync, Frequency,
 * ClockSnapshot). */
static void b_sync(bld *b, int version, uint64_t gen, uint64_t time, uint64_t freq) {
    bld pl = {0};
    if (version >= 25) b_byte(&pl, 50);
    b_byte(&pl, 8);
    b_uv(&pl, freq);
    if (version >= 25) {
        b_byte(&pl, 51);
        b_uv(&pl, 1);
        b_uv(&pl, 99);
        b_uv(&pl, 1740755049);
        b_uv(&pl, 123);
    }
    b_batch(b, gen, NONE, time, &pl);
}

static const uint8_t EV_PL[] = {13, 1, 0, 1}; /* ProcStatus dt=1 p=0 pstatus=1 */

/* ---- loading ---- */

typedef struct {
    uint8_t *data;
    size_t n;
    tdx_framer f;
    tdx_gen g;
    tdx_err e;
    int rc;
} loaded;

/* Frames the first generation of b (must exist) and loads it. */
static void load(loaded *l, const bld *b, int version) {
    memset(l, 0, sizeof *l);
    uint8_t *data = malloc(b->n);
    cr_assert_not_null(data);
    memcpy(data, b->p, b->n);
    l->n = b->n;
    tdx_framer_init(&l->f, data, l->n, version);
    tdx_gen_init(&l->g, data, version);
    l->data = data; /* after the calls, which the analyzer takes to clobber all of *l */
    tdx_err_clear(&l->e);
    int r = tdx_framer_next(&l->f, &l->g.frame, &l->e);
    cr_assert_eq(r, 1, "framer returned %d: %s", r, l->e.msg);
    l->rc = tdx_gen_load(&l->g, &l->e);
}
/* Loads the next generation of the same trace into the same tdx_gen. */
static int load_next(loaded *l) {
    int r = tdx_framer_next(&l->f, &l->g.frame, &l->e);
    cr_assert_neq(r, -1, "%s", l->e.msg);
    if (r == 0) return 0;
    l->rc = tdx_gen_load(&l->g, &l->e);
    return 1;
}
static void unload(loaded *l) {
    tdx_gen_free(&l->g);
    free(l->data);
}

static void expect_ok(const bld *b, int version) {
    loaded l;
    load(&l, b, version);
    cr_expect_eq(l.rc, 0, "unexpected error: %s", l.e.msg);
    unload(&l);
}
static void expect_fail(const bld *b, int version, const char *msg) {
    loaded l;
    load(&l, b, version);
    cr_expect_eq(l.rc, -1, "want error \"%s\"", msg);
    cr_expect_str_eq(l.e.msg, msg);
    cr_expect_eq(l.e.kind, TDX_EFORMAT);
    unload(&l);
}

static const char *str_at(const tdx_gen *g, uint32_t idx, char *buf, size_t cap) {
    cr_assert(idx < g->strings.n, "string index %u out of range", idx);
    tdx_str s = g->strings.v[idx];
    size_t n = s.n < cap - 1 ? s.n : cap - 1;
    memcpy(buf, s.p, n);
    buf[n] = 0;
    return buf;
}

/* ---- minimal generations ---- */

static void gen__minimal_v22_and_time_base(void) {
    bld b = {0};
    b_header(&b, 22);
    b_batch_raw(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_sync(&b, 22, 1, 0, 15625000);
    loaded l;
    load(&l, &b, 22);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    cr_expect_eq(l.g.freq, 15625000);
    cr_expect(l.g.ns_per_tick == 64.0, "ns_per_tick %.17g", l.g.ns_per_tick);
    cr_expect(!l.g.has_clock);
    cr_expect_eq(l.g.strings.n, 1, "dense index 0 is the empty string");
    cr_expect_eq(l.g.stacks.n, 1, "dense index 0 is the empty stack");
    cr_expect_eq(tdx_gen_string(&l.g, 0), 0);
    cr_expect_eq(tdx_gen_stack(&l.g, 0), 0);
    cr_expect_eq(tdx_gen_string(&l.g, 1), UINT32_MAX);
    cr_expect_eq(tdx_gen_stack(&l.g, 1), UINT32_MAX);
    cr_expect_eq(tdx_ticks_to_ns(&l.g, 3), 192);
    unload(&l);
    b_free(&b);
}

static void gen__ns_per_tick_is_go_formula(void) {
    static const uint64_t freqs[] = {1,
                                     3,
                                     7,
                                     1000,
                                     15625000,
                                     999999937,
                                     1000000000,
                                     3000000000ULL,
                                     2400000000ULL,
                                     123456789012ULL,
                                     UINT64_MAX};
    for (size_t i = 0; i < sizeof freqs / sizeof freqs[0]; i++) {
        bld b = {0};
        b_header(&b, 23);
        b_sync(&b, 23, 1, 0, freqs[i]);
        loaded l;
        load(&l, &b, 23);
        cr_assert_eq(l.rc, 0, "%s", l.e.msg);
        volatile double want = 1.0 / ((double)freqs[i] / 1e9);
        cr_expect(l.g.ns_per_tick == want, "freq %llu: ns_per_tick %.17g, want %.17g",
                  (unsigned long long)freqs[i], l.g.ns_per_tick, (double)want);
        /* Conversion truncates toward zero. */
        volatile double t = (double)12345 * want;
        cr_expect_eq(tdx_ticks_to_ns(&l.g, 12345), (int64_t)t);
        unload(&l);
        b_free(&b);
    }
}

/* Out-of-range products convert as Go does on amd64: to INT64_MIN. */
static void gen__ticks_to_ns_out_of_range(void) {
    bld b = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 1); /* 1e9 ns per tick */
    loaded l;
    load(&l, &b, 22);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    volatile double npt = 1.0 / (1.0 / 1e9);
    volatile double in_range = 9223372036.0 * npt;
    cr_expect_eq(tdx_ticks_to_ns(&l.g, 9223372036ULL), (int64_t)in_range);
    cr_expect_gt(tdx_ticks_to_ns(&l.g, 9223372036ULL), 9223372035000000000LL);
    cr_expect_eq(tdx_ticks_to_ns(&l.g, 9223372037ULL), INT64_MIN);
    cr_expect_eq(tdx_ticks_to_ns(&l.g, UINT64_MAX), INT64_MIN);
    unload(&l);
    b_free(&b);
}

static void gen__minimal_v25_clock_snapshot(void) {
    bld b = {0};
    b_header(&b, 25);
    bld pl = {0};
    b_bytes(&pl, PL(50, 51));
    b_uv(&pl, 7);          /* dt */
    b_uv(&pl, 99);         /* mono */
    b_uv(&pl, 1740755049); /* sec */
    b_uv(&pl, 123);        /* nsec */
    b_byte(&pl, 8);
    b_uv(&pl, 1000000000);
    b_batch(&b, 1, NONE, 9, &pl);
    b_batch_raw(&b, 1, 1, 15, EV_PL, sizeof EV_PL);
    loaded l;
    load(&l, &b, 25);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    cr_expect(l.g.has_clock);
    cr_expect_eq(l.g.snap_ticks, 16, "batch time + dt");
    cr_expect_eq(l.g.snap_mono, 99);
    cr_expect_eq(l.g.snap_sec, 1740755049);
    cr_expect_eq(l.g.snap_nsec, 123);
    cr_expect_eq(l.g.freq, 1000000000);
    cr_expect(l.g.ns_per_tick == 1.0);
    unload(&l);
    b_free(&b);
}

static void gen__zero_frequency_rejected(void) {
    bld b = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 0);
    expect_fail(&b, 22, "invalid frequency: 0 ticks per second");
    b_free(&b);
}

/* ---- strings ---- */

static void strings__table_contents(void) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    p_string(&pl, 1, "foo");
    p_string(&pl, 7, "bar");
    p_string(&pl, 3, "");
    b_batch(&b, 1, NONE, 0, &pl);
    /* A table may be split over several batches. */
    b_byte(&pl, 4);
    p_string(&pl, 2107684625609392127ULL, "large id");
    b_batch(&b, 1, NONE, 0, &pl);
    loaded l;
    load(&l, &b, 22);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    char buf[64];
    cr_expect_str_eq(str_at(&l.g, tdx_gen_string(&l.g, 1), buf, sizeof buf), "foo");
    cr_expect_str_eq(str_at(&l.g, tdx_gen_string(&l.g, 7), buf, sizeof buf), "bar");
    cr_expect_str_eq(str_at(&l.g, tdx_gen_string(&l.g, 3), buf, sizeof buf), "");
    cr_expect_neq(tdx_gen_string(&l.g, 3), 0u, "a defined empty string has its own index");
    cr_expect_str_eq(str_at(&l.g, tdx_gen_string(&l.g, 2107684625609392127ULL), buf, sizeof buf),
                     "large id");
    cr_expect_eq(tdx_gen_string(&l.g, 2), UINT32_MAX);
    cr_expect_eq(l.g.nwire_strings, 5);
    unload(&l);
    b_free(&b);
}

static void strings__size_limit(void) {
    char *s = malloc(1026);
    cr_assert_not_null(s);
    memset(s, 'x', 1025);
    s[1025] = 0;
    /* 1024 accepted. */
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    s[1024] = 0;
    p_string(&pl, 1, s);
    b_batch(&b, 1, NONE, 0, &pl);
    loaded l;
    load(&l, &b, 22);
    cr_expect_eq(l.rc, 0, "%s", l.e.msg);
    if (l.rc == 0) cr_expect_eq(l.g.strings.v[tdx_gen_string(&l.g, 1)].n, 1024);
    unload(&l);
    b_free(&b);
    /* 1025 rejected. */
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    s[1024] = 'x';
    p_string(&pl, 1, s);
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 22, "invalid string size 1025, maximum is 1024");
    b_free(&b);
    /* The size is checked before the bytes are looked for. */
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(4, 5, 1, 0xff, 0xff, 0x03));
    expect_fail(&b, 22, "invalid string size 65535, maximum is 1024");
    b_free(&b);
    free(s);
}

static void strings__short_string(void) {
    bld b = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(4, 5, 1, 5, 'a', 'b'));
    expect_fail(&b, 22, "failed to read full string: read 2 but wanted 5");
    b_free(&b);

    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(4, 5, 1, 1, 'z', 5, 2, 3));
    expect_fail(&b, 22, "failed to read full string: read 0 but wanted 3");
    b_free(&b);
}

static void strings__wrong_event(void) {
    bld b = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(4, 5, 1, 1, 'a', 7, 1, 1, 'b'));
    expect_fail(&b, 22, "expected string event, got 7");
    b_free(&b);

    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(4, 4));
    expect_fail(&b, 22, "expected string event, got 4");
    b_free(&b);
}

static void strings__truncated_varints_are_bare_causes(void) {
    bld b = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(4, 5));
    expect_fail(&b, 22, "EOF");
    b_free(&b);

    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(4, 5, 1, 0x81));
    expect_fail(&b, 22, "unexpected EOF");
    b_free(&b);

    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0,
                PL(4, 5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0));
    expect_fail(&b, 22, "binary: varint overflows a 64-bit integer");
    b_free(&b);
}

static void strings__duplicate_ids(void) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    p_string(&pl, 1, "foo");
    p_string(&pl, 1, "bar");
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 22, "multiple strings with the same ID: id=1, new=bar, existing=foo");
    b_free(&b);

    /* Across two string batches. */
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    p_string(&pl, 42, "first");
    b_batch(&b, 1, NONE, 0, &pl);
    b_byte(&pl, 4);
    p_string(&pl, 42, "second");
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 22, "multiple strings with the same ID: id=42, new=second, existing=first");
    b_free(&b);

    /* ID 0 is predefined as "". */
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    p_string(&pl, 0, "x");
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 22, "multiple strings with the same ID: id=0, new=x, existing=");
    b_free(&b);
}

/* ---- stacks ---- */

static void stacks__table_contents(void) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    p_string(&pl, 1, "main.f");
    p_string(&pl, 2, "f.go");
    b_batch(&b, 1, NONE, 0, &pl);
    b_byte(&pl, 2);
    p_stack(&pl, 7, 2, (const uint64_t[][4]){{100, 1, 2, 10}, {200, 0, 0, 20}});
    p_stack(&pl, 9, 0, NULL);
    b_batch(&b, 1, NONE, 0, &pl);
    loaded l;
    load(&l, &b, 22);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    uint32_t si = tdx_gen_stack(&l.g, 7);
    cr_assert_neq(si, UINT32_MAX);
    tdx_stack st = l.g.stacks.v[si];
    cr_expect_eq(st.id, 7);
    cr_assert_eq(st.nframes, 2);
    tdx_frame f0 = l.g.frames.v[l.g.stack_frames.v[st.first]];
    tdx_frame f1 = l.g.frames.v[l.g.stack_frames.v[st.first + 1]];
    char buf[64];
    cr_expect_eq(f0.pc, 100);
    cr_expect_eq(f0.line, 10);
    cr_expect_str_eq(str_at(&l.g, f0.func, buf, sizeof buf), "main.f");
    cr_expect_str_eq(str_at(&l.g, f0.file, buf, sizeof buf), "f.go");
    cr_expect_eq(f1.pc, 200);
    cr_expect_eq(f1.line, 20);
    cr_expect_eq(f1.func, 0);
    cr_expect_eq(f1.file, 0);
    uint32_t s9 = tdx_gen_stack(&l.g, 9);
    cr_assert_neq(s9, UINT32_MAX);
    cr_expect_eq(l.g.stacks.v[s9].nframes, 0);
    unload(&l);
    b_free(&b);
}

static void stacks__wrong_event_and_size_limit(void) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(2, 3, 1, 0, 5));
    expect_fail(&b, 22, "expected stack event, got 5");
    b_free(&b);

    uint64_t(*fr)[4] = calloc(129, sizeof *fr);
    cr_assert_not_null(fr);
    for (int i = 0; i < 129; i++) fr[i][0] = 1000 + (uint64_t)i;
    /* 128 frames accepted. */
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 2);
    p_stack(&pl, 1, 128, (const uint64_t(*)[4])fr);
    b_batch(&b, 1, NONE, 0, &pl);
    loaded l;
    load(&l, &b, 22);
    cr_expect_eq(l.rc, 0, "%s", l.e.msg);
    if (l.rc == 0) cr_expect_eq(l.g.stacks.v[tdx_gen_stack(&l.g, 1)].nframes, 128);
    unload(&l);
    b_free(&b);
    /* 129 rejected. */
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 2);
    p_stack(&pl, 1, 129, (const uint64_t(*)[4])fr);
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 22, "invalid stack size 129, maximum is 128");
    b_free(&b);
    free(fr);
}

static void stacks__truncated_frames(void) {
    static const char *const field[4] = {"PC", "funcID", "fileID", "line"};
    for (int k = 0; k < 4; k++) {
        for (int how = 0; how < 3; how++) {
            bld b = {0}, pl = {0};
            b_header(&b, 22);
            b_sync(&b, 22, 1, 0, 15625000);
            b_bytes(&pl, PL(2, 3, 7, 2));
            b_bytes(&pl, PL(1, 0, 0, 1)); /* frame 1 complete */
            for (int i = 0; i < k; i++) b_byte(&pl, 1);
            if (how == 1) b_byte(&pl, 0x80);
            if (how == 2) {
                for (int i = 0; i < 10; i++) b_byte(&pl, 0xff);
                b_bytes(&pl, PL(1, 1, 1, 1));
            }
            b_batch(&b, 1, NONE, 0, &pl);
            static const char *const cause[3] = {"EOF", "unexpected EOF",
                                                 "binary: varint overflows a 64-bit integer"};
            char want[128];
            snprintf(want, sizeof want, "reading frame 2's %s for stack 7: %s", field[k],
                     cause[how]);
            expect_fail(&b, 22, want);
            b_free(&b);
        }
    }
}

static void stacks__truncated_stack_header(void) {
    bld b = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(2, 3, 7));
    expect_fail(&b, 22, "EOF");
    b_free(&b);
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(2, 3, 0x87));
    expect_fail(&b, 22, "unexpected EOF");
    b_free(&b);
}

/* Go formats the stacks of this message with stack.String(): "\t%#v\n" per PC, no braces. */
Test(stacks, duplicate_ids) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 2);
    p_stack(&pl, 7, 1, (const uint64_t[][4]){{200, 0, 0, 1}});
    p_stack(&pl, 7, 2, (const uint64_t[][4]){{100, 0, 0, 1}, {255, 0, 0, 2}});
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(
        &b, 22,
        "multiple trace.stacks with the same ID: id=7, new=\t0x64\n\t0xff\n, existing=\t0xc8\n");
    b_free(&b);

    /* ID 0 is predefined as the empty stack. */
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 2);
    p_stack(&pl, 0, 0, NULL);
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 22, "multiple trace.stacks with the same ID: id=0, new=, existing=");
    b_free(&b);
}

static void stacks__duplicate_ids_message_prefix(void) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 2);
    p_stack(&pl, 3, 0, NULL);
    b_batch(&b, 1, NONE, 0, &pl);
    b_byte(&pl, 2);
    p_stack(&pl, 3, 0, NULL);
    b_batch(&b, 1, NONE, 0, &pl);
    loaded l;
    load(&l, &b, 22);
    cr_expect_eq(l.rc, -1);
    const char *want = "multiple trace.stacks with the same ID: id=3, new=";
    cr_expect(strncmp(l.e.msg, want, strlen(want)) == 0, "got \"%s\"", l.e.msg);
    unload(&l);
    b_free(&b);
}

static void stacks__invalid_string_ids(void) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    p_string(&pl, 1, "f");
    b_batch(&b, 1, NONE, 0, &pl);
    b_byte(&pl, 2);
    p_stack(&pl, 7, 2, (const uint64_t[][4]){{100, 1, 1, 1}, {101, 9, 1, 1}});
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 22, "found invalid func string ID 9 for stack 7");
    b_free(&b);

    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    p_string(&pl, 1, "f");
    b_batch(&b, 1, NONE, 0, &pl);
    b_byte(&pl, 2);
    p_stack(&pl, 8, 1, (const uint64_t[][4]){{100, 1, 12, 1}});
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 22, "found invalid file string ID 12 for stack 8");
    b_free(&b);

    /* func is checked before file. */
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 2);
    p_stack(&pl, 5, 1, (const uint64_t[][4]){{100, 3, 4, 1}});
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 22, "found invalid func string ID 3 for stack 5");
    b_free(&b);

    /* The string table may come after the stack table. */
    b_header(&b, 22);
    b_byte(&pl, 2);
    p_stack(&pl, 5, 1, (const uint64_t[][4]){{100, 3, 4, 1}});
    b_batch(&b, 1, NONE, 0, &pl);
    b_byte(&pl, 4);
    p_string(&pl, 3, "fn");
    p_string(&pl, 4, "file");
    b_batch(&b, 1, NONE, 0, &pl);
    b_sync(&b, 22, 1, 0, 15625000);
    expect_ok(&b, 22);
    b_free(&b);
}

static void stacks__frames_deduplicated_by_pc_first_wins(void) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    p_string(&pl, 1, "first");
    p_string(&pl, 2, "first.go");
    b_batch(&b, 1, NONE, 0, &pl);
    b_byte(&pl, 2);
    p_stack(&pl, 1, 1, (const uint64_t[][4]){{100, 1, 2, 10}});
    b_batch(&b, 1, NONE, 0, &pl);
    /* Same PC again with different (and invalid) fields: ignored, never validated. */
    b_byte(&pl, 2);
    p_stack(&pl, 2, 2, (const uint64_t[][4]){{300, 1, 2, 30}, {100, 77, 78, 99}});
    b_batch(&b, 1, NONE, 0, &pl);
    loaded l;
    load(&l, &b, 22);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    cr_expect_eq(l.g.frames.n, 2, "one frame per distinct PC");
    tdx_stack s1 = l.g.stacks.v[tdx_gen_stack(&l.g, 1)];
    tdx_stack s2 = l.g.stacks.v[tdx_gen_stack(&l.g, 2)];
    cr_expect_eq(l.g.stack_frames.v[s1.first], l.g.stack_frames.v[s2.first + 1]);
    tdx_frame f = l.g.frames.v[l.g.stack_frames.v[s2.first + 1]];
    char buf[64];
    cr_expect_eq(f.pc, 100);
    cr_expect_eq(f.line, 10);
    cr_expect_eq(f.func_id, 1);
    cr_expect_eq(f.file_id, 2);
    cr_expect_str_eq(str_at(&l.g, f.func, buf, sizeof buf), "first");
    cr_expect_str_eq(str_at(&l.g, f.file, buf, sizeof buf), "first.go");
    unload(&l);
    b_free(&b);
}

/* ---- CPU samples ---- */

static void cpu__samples_converted_and_sorted(void) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 6);
    p_sample(&pl, 30, 1, 2, 3, 0);
    p_sample(&pl, 10, 4, NONE, 0, 0);
    b_batch(&b, 1, NONE, 0, &pl);
    b_byte(&pl, 6);
    p_sample(&pl, 20, 7, 8, 9, 0);
    b_batch(&b, 1, NONE, 0, &pl);
    loaded l;
    load(&l, &b, 22);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    cr_assert_eq(l.g.samples.n, 3);
    tdx_cpusample *s = l.g.samples.v;
    cr_expect_eq(s[0].time, 640);
    cr_expect_eq(s[0].m, 4);
    cr_expect_eq(s[0].p, NONE);
    cr_expect_eq(s[0].g, 0);
    cr_expect_eq(s[1].time, 1280);
    cr_expect_eq(s[1].m, 7);
    cr_expect_eq(s[1].g, 9);
    cr_expect_eq(s[2].time, 1920);
    cr_expect_eq(s[2].m, 1);
    cr_expect_eq(s[2].p, 2);
    cr_expect_eq(s[2].g, 3);
    unload(&l);
    b_free(&b);
}

static void cpu__non_integral_tick(void) {
    /* 3 ticks per ns: each sample time is (int64)(t * (1/3)). */
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 3000000000ULL);
    b_byte(&pl, 6);
    p_sample(&pl, 10, 1, 1, 1, 5);
    p_sample(&pl, 2, 1, 1, 1, 6);
    b_batch(&b, 1, NONE, 0, &pl);
    loaded l;
    load(&l, &b, 22);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    volatile double npt = 1.0 / (3000000000.0 / 1e9);
    volatile double t0 = 2.0 * npt, t1 = 10.0 * npt;
    cr_assert_eq(l.g.samples.n, 2);
    cr_expect_eq(l.g.samples.v[0].time, (int64_t)t0);
    cr_expect_eq(l.g.samples.v[0].stack, 6);
    cr_expect_eq(l.g.samples.v[1].time, (int64_t)t1);
    cr_expect_eq(l.g.samples.v[1].stack, 5);
    unload(&l);
    b_free(&b);
}

static void cpu__errors(void) {
    bld b = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(6, 7, 1, 1, 1, 1, 1, 3, 1));
    expect_fail(&b, 22, "expected CPU sample event, got 3");
    b_free(&b);

    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(6, 7, 1, 1, 1, 1));
    expect_fail(&b, 22, "EOF");
    b_free(&b);

    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, NONE, 0, PL(6, 7, 1, 1, 0x80));
    expect_fail(&b, 22, "unexpected EOF");
    b_free(&b);
}

/* ---- the sync batch ---- */

static void sync__unexpected_event(void) {
    bld b = {0};
    b_header(&b, 22);
    b_batch_raw(&b, 1, NONE, 0, PL(8, 48, 48, 48, 49));
    expect_fail(&b, 22, "expected frequency or clock snapshot event, got 48");
    b_free(&b);

    /* ClockSnapshot is only known from version 25. */
    b_header(&b, 23);
    b_batch_raw(&b, 1, NONE, 0, PL(8, 1, 51, 1, 2, 3, 4));
    expect_fail(&b, 23, "expected frequency or clock snapshot event, got 51");
    b_free(&b);

    b_header(&b, 25);
    b_batch_raw(&b, 1, NONE, 0, PL(50, 8, 1, 13, 1, 0, 1));
    expect_fail(&b, 25, "expected frequency or clock snapshot event, got 13");
    b_free(&b);

    /* A second Sync marker inside the batch is no frequency or snapshot either. */
    b_header(&b, 26);
    b_batch_raw(&b, 1, NONE, 0, PL(50, 50));
    b_byte(&b, 52);
    expect_fail(&b, 26, "expected frequency or clock snapshot event, got 50");
    b_free(&b);
}

static void sync__multiple_frequencies(void) {
    bld b = {0};
    b_header(&b, 22);
    b_batch_raw(&b, 1, NONE, 0, PL(8, 1, 8, 2));
    expect_fail(&b, 22, "found multiple frequency events");
    b_free(&b);

    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_sync(&b, 22, 1, 0, 15625000);
    expect_fail(&b, 22, "found multiple frequency events");
    b_free(&b);

    b_header(&b, 25);
    b_batch_raw(&b, 1, NONE, 0, PL(50, 8, 1, 51, 1, 2, 3, 4));
    b_batch_raw(&b, 1, NONE, 0, PL(50, 8, 1));
    expect_fail(&b, 25, "found multiple frequency events");
    b_free(&b);
}

static void sync__multiple_clock_snapshots(void) {
    bld b = {0};
    b_header(&b, 25);
    b_batch_raw(&b, 1, NONE, 0, PL(50, 8, 1, 51, 1, 2, 3, 4, 51, 1, 2, 3, 4));
    expect_fail(&b, 25, "found multiple clock snapshot events");
    b_free(&b);

    b_header(&b, 26);
    b_batch_raw(&b, 1, NONE, 0, PL(50, 51, 1, 2, 3, 4));
    b_batch_raw(&b, 1, NONE, 0, PL(50, 8, 1, 51, 1, 2, 3, 4));
    b_byte(&b, 52);
    expect_fail(&b, 26, "found multiple clock snapshot events");
    b_free(&b);
}

static void sync__missing_frequency(void) {
    bld b = {0};
    /* No sync batch at all. */
    b_header(&b, 22);
    b_batch_raw(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    expect_fail(&b, 22, "no frequency event found");
    b_free(&b);
    /* v25: a snapshot but no frequency; a frequency-first batch is not a sync batch. */
    b_header(&b, 25);
    b_batch_raw(&b, 1, NONE, 0, PL(50, 51, 1, 2, 3, 4));
    b_batch_raw(&b, 1, NONE, 0, PL(8, 1));
    expect_fail(&b, 25, "no frequency event found");
    b_free(&b);
    /* v22: a Sync-first batch is not a sync batch. */
    b_header(&b, 22);
    b_batch_raw(&b, 1, NONE, 0, PL(50, 8, 1));
    expect_fail(&b, 22, "no frequency event found");
    b_free(&b);
    /* v25: neither; the frequency is reported first. */
    b_header(&b, 25);
    b_batch_raw(&b, 1, NONE, 0, PL(50));
    expect_fail(&b, 25, "no frequency event found");
    b_free(&b);
    /* No frequency beats an invalid stack string. */
    b_header(&b, 22);
    bld pl = {0};
    b_byte(&pl, 2);
    p_stack(&pl, 1, 1, (const uint64_t[][4]){{1, 5, 5, 1}});
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 22, "no frequency event found");
    b_free(&b);
}

/* A header-only file before version 26 is one empty generation that Go finishes (spec 5.2). */
Test(sync, header_only_has_no_frequency) {
    bld b = {0};
    b_header(&b, 23);
    expect_fail(&b, 23, "no frequency event found");
    b_free(&b);
}

static void sync__missing_clock_snapshot(void) {
    bld b = {0};
    b_header(&b, 25);
    b_batch_raw(&b, 1, NONE, 0, PL(50, 8, 1));
    expect_fail(&b, 25, "no clock snapshot event found");
    b_free(&b);

    b_header(&b, 26);
    b_batch_raw(&b, 1, NONE, 0, PL(50, 8, 1));
    b_batch_raw(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    expect_fail(&b, 26, "no clock snapshot event found");
    b_free(&b);

    /* The snapshot check comes before the stack string check. */
    b_header(&b, 25);
    b_batch_raw(&b, 1, NONE, 0, PL(50, 8, 1));
    bld pl = {0};
    b_byte(&pl, 2);
    p_stack(&pl, 1, 1, (const uint64_t[][4]){{1, 5, 5, 1}});
    b_batch(&b, 1, NONE, 0, &pl);
    expect_fail(&b, 25, "no clock snapshot event found");
    b_free(&b);
}

static void sync__v26_empty_generation_has_no_frequency(void) {
    bld b = {0};
    b_header(&b, 26);
    b_sync(&b, 26, 1, 0, 15625000);
    b_batch_raw(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    b_byte(&b, 52);
    loaded l;
    load(&l, &b, 26);
    cr_expect_eq(l.rc, 0, "%s", l.e.msg);
    cr_assert_eq(load_next(&l), 1);
    cr_expect_eq(l.rc, -1);
    cr_expect_str_eq(l.e.msg, "no frequency event found");
    unload(&l);
    b_free(&b);
}

/* ---- batches, threads, experimental data ---- */

static void threads__grouped_in_order_of_first_appearance(void) {
    bld b = {0};
    b_header(&b, 22);
    b_batch_raw(&b, 1, 5, 0, EV_PL, sizeof EV_PL);    /* 0 */
    b_batch_raw(&b, 1, NONE, 0, PL(4));               /* 1 strings */
    b_batch_raw(&b, 1, 3, 0, EV_PL, sizeof EV_PL);    /* 2 */
    b_batch_raw(&b, 1, 5, 0, NULL, 0);                /* 3 empty, still thread 5's */
    b_batch_raw(&b, 1, NONE, 0, EV_PL, sizeof EV_PL); /* 4 no thread */
    b_sync(&b, 22, 1, 0, 15625000);                   /* 5 */
    b_batch_raw(&b, 1, 3, 0, EV_PL, sizeof EV_PL);    /* 6 */
    b_batch_raw(&b, 1, 5, 0, EV_PL, sizeof EV_PL);    /* 7 */
    b_expbatch(&b, 1, 1, 5, 0, PL(0, 1));             /* 8 experimental: not a thread batch */
    loaded l;
    load(&l, &b, 22);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    cr_assert_eq(l.g.threads.n, 3);
    cr_expect_eq(l.g.threads.v[0].m, 5);
    cr_expect_eq(l.g.threads.v[0].first, 0);
    cr_expect_eq(l.g.threads.v[1].m, 3);
    cr_expect_eq(l.g.threads.v[1].first, 2);
    cr_expect_eq(l.g.threads.v[2].m, NONE);
    cr_expect_eq(l.g.threads.v[2].first, 4);
    cr_assert_eq(l.g.next_batch.n, 9);
    static const uint32_t want[9] = {3,          UINT32_MAX, 6,          7,         UINT32_MAX,
                                     UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
    for (int i = 0; i < 9; i++)
        cr_expect_eq(l.g.next_batch.v[i], want[i], "next_batch[%d] = %u, want %u", i,
                     l.g.next_batch.v[i], want[i]);
    unload(&l);
    b_free(&b);
}

static void threads__experimental_batches_kept_in_order(void) {
    bld b = {0};
    b_header(&b, 23);
    b_sync(&b, 23, 1, 0, 15625000);
    b_expbatch(&b, 1, 1, 4, 0, PL(0, 9, 9));
    size_t second = b.n;
    b_expbatch(&b, 2, 1, NONE, 0, NULL, 0);
    loaded l;
    load(&l, &b, 23);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    cr_assert_eq(l.g.exp.n, 2);
    cr_expect_eq(l.g.exp.v[0].exp, 1);
    cr_expect_eq(l.g.exp.v[0].m, 4);
    cr_expect_eq(l.g.exp.v[0].size, 3);
    cr_expect_eq(l.data[l.g.exp.v[0].data_off + 1], 9);
    cr_expect_eq(l.g.exp.v[1].exp, 2);
    cr_expect_eq(l.g.exp.v[1].m, NONE);
    cr_expect_eq(l.g.exp.v[1].size, 0);
    cr_expect_eq(l.g.exp.v[1].data_off, second + 1 + 1 + 1 + 10 + 1 + 1);
    cr_expect_eq(l.g.threads.n, 0);
    unload(&l);
    b_free(&b);
}

/* ---- framing errors as seen by the loader ---- */

static void framing__table_error_before_hard_framing_error(void) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    p_string(&pl, 1, "a");
    p_string(&pl, 1, "b");
    b_batch(&b, 1, NONE, 0, &pl);
    b_batch_raw(&b, 3, 0, 0, EV_PL, sizeof EV_PL);
    expect_fail(&b, 22, "multiple strings with the same ID: id=1, new=b, existing=a");
    b_free(&b);
}

static void framing__hard_error_reported_by_load(void) {
    bld b = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_batch_raw(&b, 3, 0, 0, EV_PL, sizeof EV_PL);
    expect_fail(&b, 22, "generations out of order");
    b_free(&b);

    b_header(&b, 26);
    b_sync(&b, 26, 1, 0, 15625000);
    b_batch_raw(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    expect_fail(&b, 26, "incomplete generation found; trace likely truncated");
    b_free(&b);

    /* A hard framing error comes before the generation's own checks. */
    b_header(&b, 22);
    b_batch_raw(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_batch_raw(&b, 0, 0, 0, EV_PL, sizeof EV_PL);
    expect_fail(&b, 22, "invalid generation number 0");
    b_free(&b);
}

static void framing__deferred_error_left_to_the_caller(void) {
    bld b = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_batch_raw(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 9);
    loaded l;
    load(&l, &b, 22);
    cr_expect_eq(l.rc, 0, "%s", l.e.msg);
    cr_expect_eq(l.g.frame.err_kind, TDX_GENERR_DEFERRED);
    cr_expect_str_eq(l.g.frame.err.msg, "expected batch event, got event 9");
    cr_expect_eq(l.g.threads.n, 1);
    unload(&l);
    b_free(&b);

    /* A deferred error does not hide the generation's own failure. */
    b_header(&b, 22);
    b_batch_raw(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 9);
    expect_fail(&b, 22, "no frequency event found");
    b_free(&b);
}

static void framing__tables_reset_between_generations(void) {
    bld b = {0}, pl = {0};
    b_header(&b, 22);
    b_sync(&b, 22, 1, 0, 15625000);
    b_byte(&pl, 4);
    p_string(&pl, 1, "gen1");
    b_batch(&b, 1, NONE, 0, &pl);
    b_sync(&b, 22, 2, 0, 1000000000);
    b_byte(&pl, 4);
    p_string(&pl, 1, "gen2"); /* same ID in a new generation: fine */
    b_batch(&b, 2, NONE, 0, &pl);
    loaded l;
    load(&l, &b, 22);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    char buf[16];
    cr_expect_str_eq(str_at(&l.g, tdx_gen_string(&l.g, 1), buf, sizeof buf), "gen1");
    cr_assert_eq(load_next(&l), 1);
    cr_assert_eq(l.rc, 0, "%s", l.e.msg);
    cr_expect_eq(l.g.frame.gen, 2);
    cr_expect_eq(l.g.freq, 1000000000);
    cr_expect_eq(l.g.strings.n, 2);
    cr_expect_str_eq(str_at(&l.g, tdx_gen_string(&l.g, 1), buf, sizeof buf), "gen2");
    cr_expect_eq(load_next(&l), 0);
    unload(&l);
    b_free(&b);
}

/* ---- registered tests (grouped to keep the number of forked test processes small) ---- */

Test(gen, time_base) {
    gen__minimal_v22_and_time_base();
    gen__ns_per_tick_is_go_formula();
    gen__ticks_to_ns_out_of_range();
    gen__minimal_v25_clock_snapshot();
    gen__zero_frequency_rejected();
}

Test(strings, table_and_errors) {
    strings__table_contents();
    strings__size_limit();
    strings__short_string();
    strings__wrong_event();
    strings__truncated_varints_are_bare_causes();
    strings__duplicate_ids();
}

Test(stacks, table_and_errors) {
    stacks__table_contents();
    stacks__wrong_event_and_size_limit();
    stacks__truncated_frames();
    stacks__truncated_stack_header();
    stacks__duplicate_ids_message_prefix();
    stacks__invalid_string_ids();
    stacks__frames_deduplicated_by_pc_first_wins();
}

Test(cpu, samples) {
    cpu__samples_converted_and_sorted();
    cpu__non_integral_tick();
    cpu__errors();
}

Test(sync, batch_checks) {
    sync__unexpected_event();
    sync__multiple_frequencies();
    sync__multiple_clock_snapshots();
    sync__missing_frequency();
    sync__missing_clock_snapshot();
    sync__v26_empty_generation_has_no_frequency();
}

Test(threads, batch_lists) {
    threads__grouped_in_order_of_first_appearance();
    threads__experimental_batches_kept_in_order();
}

Test(framing, errors_seen_by_load) {
    framing__table_error_before_hard_framing_error();
    framing__hard_error_reported_by_load();
    framing__deferred_error_left_to_the_caller();
    framing__tables_reset_between_generations();
}
