/* test_batch.c: core/batch.h framing (wire-format spec sections 3 and 5.2-5.3, Appendix B).
 * Traces are built byte by byte and handed to the library as exact-size heap copies so that any
 * read past the end of the input is an AddressSanitizer error. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/batch.h"
#include "core/varint.h"

/* ---- trace builder ---- */

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
static void b_header(bld *b, int version) {
    char h[16] = {0};
    snprintf(h, sizeof h, "go 1.%d trace", version);
    b_bytes(b, h, 16);
}
/* EventBatch header + payload (size written minimally). */
static void b_batch(bld *b, uint64_t gen, uint64_t m, uint64_t time, const void *pl, size_t n) {
    b_byte(b, 1);
    b_uv(b, gen);
    b_uv(b, m);
    b_uv(b, time);
    b_uv(b, n);
    b_bytes(b, pl, n);
}
static void b_expbatch(bld *b, uint8_t exp, uint64_t gen, uint64_t m, uint64_t time, const void *pl,
                       size_t n) {
    b_byte(b, 49);
    b_byte(b, exp);
    b_uv(b, gen);
    b_uv(b, m);
    b_uv(b, time);
    b_uv(b, n);
    b_bytes(b, pl, n);
}
/* An exact-size heap copy of the built bytes (caller frees). */
static uint8_t *b_exact(const bld *b) {
    uint8_t *p = malloc(b->n ? b->n : 1);
    cr_assert_not_null(p);
    if (b->n) memcpy(p, b->p, b->n);
    return p;
}
static void b_free(bld *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

#define PL(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})
#define NONE UINT64_MAX

/* Typical payloads. */
static const uint8_t EV_PL[] = {13, 1, 0, 1};              /* ProcStatus dt=1 p=0 pstatus=1 */
static const uint8_t STR_PL[] = {4, 5, 1, 1, 'a'};         /* Strings, String id=1 "a" */
static const uint8_t STK_PL[] = {2};                       /* Stacks (empty table) */
static const uint8_t FREQ_PL[] = {8, 0xa8, 0xd6, 0xb9, 7}; /* Frequency 15625000 (v < 25) */
static const uint8_t SYNC_PL[] = {50, 8, 1};               /* Sync, Frequency 1 (v >= 25) */

/* ---- tdx_read_batch ---- */

typedef struct {
    int rc;
    size_t pos;
    tdx_batch b;
    tdx_err e;
} rb_result;

/* Reads one batch of the bytes after the 16-byte header (or at `at`). */
static rb_result read_one_at(const bld *b, size_t at, int version) {
    uint8_t *d = b_exact(b);
    rb_result r;
    memset(&r, 0, sizeof r);
    tdx_err_clear(&r.e);
    r.pos = at;
    r.rc = tdx_read_batch(d, b->n, &r.pos, version, &r.b, &r.e);
    free(d);
    return r;
}
static rb_result read_one(const bld *b, int version) {
    return read_one_at(b, 16, version);
}

static void expect_read_err(const bld *b, int version, const char *msg) {
    rb_result r = read_one(b, version);
    cr_expect_eq(r.rc, -1, "want error \"%s\", rc=%d", msg, r.rc);
    cr_expect_str_eq(r.e.msg, msg);
    cr_expect_eq(r.e.kind, TDX_EFORMAT);
}

static void read_batch__event_batch_fields(void) {
    bld b = {0};
    b_header(&b, 22);
    b_batch(&b, 1, 5, 10, EV_PL, sizeof EV_PL);
    rb_result r = read_one(&b, 22);
    cr_assert_eq(r.rc, 1, "%s", r.e.msg);
    cr_expect_eq(r.pos, b.n);
    cr_expect_eq(r.b.hdr_off, 16);
    cr_expect_eq(r.b.data_off, 21);
    cr_expect_eq(r.b.size, 4);
    cr_expect_eq(r.b.gen, 1);
    cr_expect_eq(r.b.m, 5);
    cr_expect_eq(r.b.time, 10);
    cr_expect_eq(r.b.exp, 0);
    cr_expect_eq(r.b.kind, TDX_BATCH_EVENTS);
    b_free(&b);
}

static void read_batch__padded_size_and_none_thread(void) {
    bld b = {0};
    b_header(&b, 22);
    b_byte(&b, 1);
    b_uv(&b, 3);
    b_uv(&b, NONE);
    b_uv(&b, 28113086279559ULL);
    /* Size 5 as the runtime writes it: ten bytes. */
    b_bytes(&b, PL(0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00));
    b_bytes(&b, FREQ_PL, sizeof FREQ_PL);
    rb_result r = read_one(&b, 22);
    cr_assert_eq(r.rc, 1, "%s", r.e.msg);
    cr_expect_eq(r.b.m, UINT64_MAX);
    cr_expect_eq(r.b.gen, 3);
    cr_expect_eq(r.b.time, 28113086279559ULL);
    cr_expect_eq(r.b.size, 5);
    cr_expect_eq(r.b.data_off, 16 + 1 + 1 + 10 + 7 + 10);
    cr_expect_eq(r.b.kind, TDX_BATCH_SYNC);
    cr_expect_eq(r.pos, b.n);
    b_free(&b);
}

static void read_batch__experimental_batch_fields(void) {
    bld b = {0};
    b_header(&b, 23);
    b_expbatch(&b, 1, 2, 9, 77, PL(0, 1, 2));
    rb_result r = read_one(&b, 23);
    cr_assert_eq(r.rc, 1, "%s", r.e.msg);
    cr_expect_eq(r.b.exp, 1);
    cr_expect_eq(r.b.gen, 2);
    cr_expect_eq(r.b.m, 9);
    cr_expect_eq(r.b.time, 77);
    cr_expect_eq(r.b.size, 3);
    cr_expect_eq(r.b.hdr_off, 16);
    cr_expect_eq(r.b.data_off, 16 + 6);
    cr_expect_eq(r.b.kind, TDX_BATCH_EXPERIMENTAL);
    cr_expect_eq(r.pos, b.n);
    b_free(&b);
}

static void read_batch__end_of_generation_byte(void) {
    bld b = {0};
    b_header(&b, 26);
    b_byte(&b, 52);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    rb_result r = read_one(&b, 26);
    cr_expect_eq(r.rc, 2);
    cr_expect_eq(r.pos, 17);
    /* Recognised regardless of the header version. */
    r = read_one(&b, 22);
    cr_expect_eq(r.rc, 2);
    cr_expect_eq(r.pos, 17);
    b_free(&b);
}

static void read_batch__clean_end(void) {
    bld b = {0};
    b_header(&b, 22);
    rb_result r = read_one(&b, 22);
    cr_expect_eq(r.rc, 0);
    cr_expect_eq(r.pos, 16);
    /* EOF right after an ExperimentalBatch header byte is the clean end too. */
    b_byte(&b, 49);
    r = read_one(&b, 22);
    cr_expect_eq(r.rc, 0);
    r = read_one(&b, 26);
    cr_expect_eq(r.rc, 0);
    b_free(&b);
}

static void read_batch__expected_batch_event(void) {
    static const uint8_t bad[] = {0, 2, 7, 8, 13, 48, 50, 51, 53, 128, 255};
    for (size_t i = 0; i < sizeof bad; i++) {
        bld b = {0};
        b_header(&b, 25);
        b_byte(&b, bad[i]);
        b_bytes(&b, EV_PL, sizeof EV_PL);
        char want[64];
        snprintf(want, sizeof want, "expected batch event, got event %u", bad[i]);
        rb_result r = read_one(&b, 25);
        cr_expect_eq(r.rc, -1);
        cr_expect_str_eq(r.e.msg, want);
        cr_expect_eq(r.e.offset, 16);
        b_free(&b);
    }
}

/* Builds a header cut or broken at field `field` (0 gen, 1 M ID, 2 timestamp, 3 size);
 * how: 0 = input ends there, 1 = one continuation byte then end, 2 = an overflowing varint. */
static void b_broken_header(bld *b, int exp_batch, int field, int how) {
    if (exp_batch) {
        b_byte(b, 49);
        b_byte(b, 1);
    } else {
        b_byte(b, 1);
    }
    static const uint64_t vals[4] = {1, 300, 70000, 2};
    for (int f = 0; f < field; f++) b_uv(b, vals[f]);
    if (how == 1) b_byte(b, 0x80);
    if (how == 2) {
        for (int i = 0; i < 10; i++) b_byte(b, 0xff);
        b_bytes(b, EV_PL, sizeof EV_PL); /* more input follows: still an overflow */
    }
}

static void read_batch__header_field_errors(void) {
    static const char *const names[4] = {"gen", "M ID", "timestamp", "size"};
    static const char *const causes[3] = {"EOF", "unexpected EOF",
                                          "binary: varint overflows a 64-bit integer"};
    for (int exp = 0; exp < 2; exp++)
        for (int field = 0; field < 4; field++)
            for (int how = 0; how < 3; how++) {
                bld b = {0};
                b_header(&b, 23);
                b_broken_header(&b, exp, field, how);
                char want[128];
                snprintf(want, sizeof want, "error reading batch %s: %s", names[field],
                         causes[how]);
                expect_read_err(&b, 23, want);
                b_free(&b);
            }
}

static void read_batch__ten_byte_overflow_in_size_with_tenth_byte_two(void) {
    bld b = {0};
    b_header(&b, 22);
    b_byte(&b, 1);
    b_uv(&b, 1);
    b_uv(&b, 0);
    b_uv(&b, 0);
    b_bytes(&b, PL(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02));
    expect_read_err(&b, 22, "error reading batch size: binary: varint overflows a 64-bit integer");
    b_free(&b);
}

static void b_header_with_size(bld *b, uint64_t size) {
    b_byte(b, 1);
    b_uv(b, 1);
    b_uv(b, 0);
    b_uv(b, 0);
    b_uv(b, size);
}

static void read_batch__size_limit(void) {
    bld b = {0};
    b_header(&b, 22);
    b_header_with_size(&b, 65537);
    expect_read_err(&b, 22, "invalid batch size 65537, maximum is 65536");
    b_free(&b);

    b_header(&b, 22);
    b_header_with_size(&b, UINT64_MAX);
    expect_read_err(&b, 22, "invalid batch size 18446744073709551615, maximum is 65536");
    b_free(&b);

    /* The size check comes before the payload is read. */
    b_header(&b, 22);
    b_header_with_size(&b, 100000);
    b_bytes(&b, EV_PL, sizeof EV_PL);
    expect_read_err(&b, 22, "invalid batch size 100000, maximum is 65536");
    b_free(&b);
}

static void read_batch__size_65536_accepted(void) {
    bld b = {0};
    b_header(&b, 22);
    b_header_with_size(&b, 65536);
    size_t data_off = b.n;
    uint8_t *pl = calloc(65536, 1);
    cr_assert_not_null(pl);
    pl[0] = 13;
    b_bytes(&b, pl, 65536);
    free(pl);
    rb_result r = read_one(&b, 22);
    cr_assert_eq(r.rc, 1, "%s", r.e.msg);
    cr_expect_eq(r.b.size, 65536);
    cr_expect_eq(r.b.data_off, data_off);
    cr_expect_eq(r.pos, b.n);
    b_free(&b);
}

static void read_batch__short_payload(void) {
    bld b = {0};
    b_header(&b, 22);
    b_header_with_size(&b, 5);
    b_bytes(&b, PL(13, 1, 0));
    expect_read_err(&b, 22, "failed to read full batch: read 3 but wanted 5");
    b_free(&b);

    b_header(&b, 22);
    b_header_with_size(&b, 1);
    expect_read_err(&b, 22, "failed to read full batch: read 0 but wanted 1");
    b_free(&b);

    b_header(&b, 22);
    b_header_with_size(&b, 65536);
    b_bytes(&b, PL(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
    expect_read_err(&b, 22, "failed to read full batch: read 10 but wanted 65536");
    b_free(&b);

    /* Experimental batches have the same check. */
    b_header(&b, 23);
    b_byte(&b, 49);
    b_byte(&b, 1);
    b_uv(&b, 1);
    b_uv(&b, 0);
    b_uv(&b, 0);
    b_uv(&b, 4);
    b_byte(&b, 0);
    expect_read_err(&b, 23, "failed to read full batch: read 1 but wanted 4");
    b_free(&b);
}

static void read_batch__consecutive_reads(void) {
    bld b = {0};
    b_header(&b, 26);
    b_batch(&b, 1, 2, 3, EV_PL, sizeof EV_PL);
    size_t second = b.n;
    b_expbatch(&b, 1, 1, 2, 4, PL(9));
    size_t third = b.n;
    b_byte(&b, 52);
    uint8_t *d = b_exact(&b);
    size_t pos = 16;
    tdx_batch bt;
    tdx_err e;
    cr_assert_eq(tdx_read_batch(d, b.n, &pos, 26, &bt, &e), 1);
    cr_expect_eq(pos, second);
    cr_assert_eq(tdx_read_batch(d, b.n, &pos, 26, &bt, &e), 1);
    cr_expect_eq(bt.hdr_off, second);
    cr_expect_eq(bt.exp, 1);
    cr_expect_eq(pos, third);
    cr_assert_eq(tdx_read_batch(d, b.n, &pos, 26, &bt, &e), 2);
    cr_expect_eq(pos, b.n);
    cr_expect_eq(tdx_read_batch(d, b.n, &pos, 26, &bt, &e), 0);
    free(d);
    b_free(&b);
}

/* ---- classification ---- */

static int kind_of(int version, int exp_batch, uint8_t exp, const uint8_t *pl, size_t n) {
    bld b = {0};
    b_header(&b, version);
    if (exp_batch)
        b_expbatch(&b, exp, 1, 0, 0, pl, n);
    else
        b_batch(&b, 1, 0, 0, pl, n);
    rb_result r = read_one(&b, version);
    cr_assert_eq(r.rc, 1, "%s", r.e.msg);
    b_free(&b);
    return r.b.kind;
}

static void classify__table_batches_every_version(void) {
    static const int versions[] = {22, 23, 25, 26};
    for (size_t i = 0; i < 4; i++) {
        int v = versions[i];
        cr_expect_eq(kind_of(v, 0, 0, PL(4)), TDX_BATCH_STRINGS, "v%d", v);
        cr_expect_eq(kind_of(v, 0, 0, STR_PL, sizeof STR_PL), TDX_BATCH_STRINGS, "v%d", v);
        cr_expect_eq(kind_of(v, 0, 0, PL(2)), TDX_BATCH_STACKS, "v%d", v);
        cr_expect_eq(kind_of(v, 0, 0, PL(6, 7, 1, 2, 3, 4, 5)), TDX_BATCH_CPU, "v%d", v);
        cr_expect_eq(kind_of(v, 0, 0, EV_PL, sizeof EV_PL), TDX_BATCH_EVENTS, "v%d", v);
        cr_expect_eq(kind_of(v, 0, 0, NULL, 0), TDX_BATCH_EVENTS, "empty batch v%d", v);
        /* A payload starting with a structural event that is no table marker is ordinary. */
        cr_expect_eq(kind_of(v, 0, 0, PL(5, 1, 0)), TDX_BATCH_EVENTS, "v%d", v);
        cr_expect_eq(kind_of(v, 0, 0, PL(3, 1, 0)), TDX_BATCH_EVENTS, "v%d", v);
        cr_expect_eq(kind_of(v, 0, 0, PL(7)), TDX_BATCH_EVENTS, "v%d", v);
    }
}

static void classify__sync_batch_before_25_starts_with_frequency(void) {
    cr_expect_eq(kind_of(22, 0, 0, FREQ_PL, sizeof FREQ_PL), TDX_BATCH_SYNC);
    cr_expect_eq(kind_of(23, 0, 0, FREQ_PL, sizeof FREQ_PL), TDX_BATCH_SYNC);
    /* The Sync marker means nothing before 25. */
    cr_expect_eq(kind_of(22, 0, 0, SYNC_PL, sizeof SYNC_PL), TDX_BATCH_EVENTS);
    cr_expect_eq(kind_of(23, 0, 0, SYNC_PL, sizeof SYNC_PL), TDX_BATCH_EVENTS);
}

static void classify__sync_batch_from_25_starts_with_sync(void) {
    cr_expect_eq(kind_of(25, 0, 0, SYNC_PL, sizeof SYNC_PL), TDX_BATCH_SYNC);
    cr_expect_eq(kind_of(26, 0, 0, SYNC_PL, sizeof SYNC_PL), TDX_BATCH_SYNC);
    cr_expect_eq(kind_of(25, 0, 0, PL(50)), TDX_BATCH_SYNC);
    /* A Frequency-first batch in a v25/v26 file is an ordinary event batch. */
    cr_expect_eq(kind_of(25, 0, 0, FREQ_PL, sizeof FREQ_PL), TDX_BATCH_EVENTS);
    cr_expect_eq(kind_of(26, 0, 0, FREQ_PL, sizeof FREQ_PL), TDX_BATCH_EVENTS);
}

static void classify__experimental(void) {
    cr_expect_eq(kind_of(23, 1, 1, PL(0, 1, 2)), TDX_BATCH_EXPERIMENTAL);
    /* exp != 0 wins over the first payload byte, and an empty one is still experimental. */
    cr_expect_eq(kind_of(23, 1, 1, STR_PL, sizeof STR_PL), TDX_BATCH_EXPERIMENTAL);
    cr_expect_eq(kind_of(25, 1, 1, SYNC_PL, sizeof SYNC_PL), TDX_BATCH_EXPERIMENTAL);
    cr_expect_eq(kind_of(23, 1, 1, NULL, 0), TDX_BATCH_EXPERIMENTAL);
    cr_expect_eq(kind_of(26, 1, 2, PL(9)), TDX_BATCH_EXPERIMENTAL);
    cr_expect_eq(kind_of(26, 1, 255, PL(9)), TDX_BATCH_EXPERIMENTAL);
    /* exp == 0 is exactly an EventBatch. */
    cr_expect_eq(kind_of(23, 1, 0, STR_PL, sizeof STR_PL), TDX_BATCH_STRINGS);
    cr_expect_eq(kind_of(23, 1, 0, PL(2)), TDX_BATCH_STACKS);
    cr_expect_eq(kind_of(23, 1, 0, FREQ_PL, sizeof FREQ_PL), TDX_BATCH_SYNC);
    cr_expect_eq(kind_of(23, 1, 0, EV_PL, sizeof EV_PL), TDX_BATCH_EVENTS);
    cr_expect_eq(kind_of(23, 1, 0, NULL, 0), TDX_BATCH_EVENTS);
}

/* ---- the framer ---- */

typedef struct {
    uint8_t *data;
    size_t n;
    int version;
    tdx_framer f;
    tdx_genframe g;
} frm;

static void frm_open(frm *x, const bld *b, int version) {
    memset(x, 0, sizeof *x);
    uint8_t *data = b_exact(b);
    x->n = b->n;
    x->version = version;
    tdx_framer_init(&x->f, data, x->n, version);
    x->data = data; /* after the call, which the analyzer takes to clobber all of *x */
}
static int frm_next(frm *x) {
    tdx_err e;
    tdx_err_clear(&e);
    int r = tdx_framer_next(&x->f, &x->g, &e);
    cr_assert_neq(r, -1, "framer: %s", e.msg);
    return r;
}
static void frm_close(frm *x) {
    tdx_genframe_free(&x->g);
    free(x->data);
}

/* Asserts one generation: its number, sequence, batch count and error. */
static void expect_gen(frm *x, uint64_t gen, uint64_t seq, size_t nbatches, int err_kind,
                       const char *msg) {
    int r = frm_next(x);
    cr_assert_eq(r, 1, "expected generation %llu", (unsigned long long)gen);
    cr_expect_eq(x->g.gen, gen, "gen %llu, want %llu", (unsigned long long)x->g.gen,
                 (unsigned long long)gen);
    cr_expect_eq(x->g.seq, seq);
    cr_expect_eq(x->g.batches.n, nbatches, "gen %llu: %zu batches, want %zu",
                 (unsigned long long)gen, x->g.batches.n, nbatches);
    cr_expect_eq(x->g.err_kind, err_kind, "gen %llu: err_kind %d, want %d (%s)",
                 (unsigned long long)gen, x->g.err_kind, err_kind, x->g.err.msg);
    if (msg) {
        cr_expect_str_eq(x->g.err.msg, msg);
        cr_expect_eq(x->g.err.kind, TDX_EFORMAT);
    }
}
static void expect_end(frm *x) {
    cr_expect_eq(frm_next(x), 0, "expected the end of the trace");
    cr_expect_eq(frm_next(x), 0, "the end of the trace must be sticky");
}

static void framer__single_generation_v22(void) {
    bld b = {0};
    b_header(&b, 22);
    b_batch(&b, 1, 0, 5, EV_PL, sizeof EV_PL);
    b_batch(&b, 1, NONE, 6, FREQ_PL, sizeof FREQ_PL);
    b_batch(&b, 1, NONE, 7, STR_PL, sizeof STR_PL);
    frm x;
    frm_open(&x, &b, 22);
    expect_gen(&x, 1, 0, 3, TDX_GENERR_NONE, NULL);
    cr_expect(x.g.has_event_batches);
    cr_expect_eq(x.g.batches.v[0].kind, TDX_BATCH_EVENTS);
    cr_expect_eq(x.g.batches.v[1].kind, TDX_BATCH_SYNC);
    cr_expect_eq(x.g.batches.v[2].kind, TDX_BATCH_STRINGS);
    cr_expect_eq(x.g.batches.v[0].hdr_off, 16);
    cr_expect_eq(x.g.min_ts, 5);
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__spill_splits_generations_by_number(void) {
    static const int versions[] = {22, 23, 25};
    for (size_t vi = 0; vi < 3; vi++) {
        int v = versions[vi];
        bld b = {0};
        b_header(&b, v);
        b_batch(&b, 1, 0, 1, EV_PL, sizeof EV_PL);
        b_batch(&b, 1, 1, 2, EV_PL, sizeof EV_PL);
        size_t g2 = b.n;
        b_batch(&b, 2, 0, 3, STR_PL, sizeof STR_PL);
        b_batch(&b, 2, 0, 4, EV_PL, sizeof EV_PL);
        b_expbatch(&b, 1, 2, 0, 4, PL(1));
        size_t g3 = b.n;
        b_batch(&b, 3, 7, 5, NULL, 0);
        frm x;
        frm_open(&x, &b, v);
        expect_gen(&x, 1, 0, 2, TDX_GENERR_NONE, NULL);
        expect_gen(&x, 2, 1, 3, TDX_GENERR_NONE, NULL);
        cr_expect_eq(x.g.batches.v[0].hdr_off, g2, "v%d: the spilled batch opens generation 2", v);
        cr_expect_eq(x.g.batches.v[0].kind, TDX_BATCH_STRINGS);
        cr_expect_eq(x.g.batches.v[2].kind, TDX_BATCH_EXPERIMENTAL);
        expect_gen(&x, 3, 2, 1, TDX_GENERR_NONE, NULL);
        cr_expect_eq(x.g.batches.v[0].hdr_off, g3);
        cr_expect_eq(x.g.batches.v[0].m, 7);
        cr_expect(x.g.has_event_batches, "an empty batch is an ordinary event batch");
        expect_end(&x);
        frm_close(&x);
        b_free(&b);
    }
}

static void framer__generation_numbers_need_not_start_at_one(void) {
    bld b = {0};
    b_header(&b, 22);
    b_batch(&b, 3, 0, 0, EV_PL, sizeof EV_PL);
    b_batch(&b, 4, 0, 0, EV_PL, sizeof EV_PL);
    frm x;
    frm_open(&x, &b, 22);
    expect_gen(&x, 3, 0, 1, TDX_GENERR_NONE, NULL);
    expect_gen(&x, 4, 1, 1, TDX_GENERR_NONE, NULL);
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__generations_out_of_order(void) {
    /* A gap. */
    bld b = {0};
    b_header(&b, 22);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_batch(&b, 3, 0, 0, EV_PL, sizeof EV_PL);
    frm x;
    frm_open(&x, &b, 22);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_HARD, "generations out of order");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);

    /* Going backwards. */
    b_header(&b, 23);
    b_batch(&b, 2, 0, 0, EV_PL, sizeof EV_PL);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    frm_open(&x, &b, 23);
    expect_gen(&x, 2, 0, 1, TDX_GENERR_HARD, "generations out of order");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);

    /* Back to an earlier generation after a spill. */
    b_header(&b, 25);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_batch(&b, 2, 0, 0, EV_PL, sizeof EV_PL);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    frm_open(&x, &b, 25);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_NONE, NULL);
    expect_gen(&x, 2, 1, 1, TDX_GENERR_HARD, "generations out of order");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__invalid_generation_number_zero(void) {
    frm x;
    bld b = {0};
    /* First batch. */
    b_header(&b, 22);
    b_batch(&b, 0, 0, 0, EV_PL, sizeof EV_PL);
    frm_open(&x, &b, 22);
    expect_gen(&x, 0, 0, 0, TDX_GENERR_HARD, "invalid generation number 0");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);

    /* After a batch: a hard error, not a deferred one. */
    b_header(&b, 22);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_batch(&b, 0, 0, 0, EV_PL, sizeof EV_PL);
    frm_open(&x, &b, 22);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_HARD, "invalid generation number 0");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__end_of_generation_byte_before_26(void) {
    static const int versions[] = {22, 23, 25};
    for (size_t vi = 0; vi < 3; vi++) {
        int v = versions[vi];
        frm x;
        bld b = {0};
        b_header(&b, v);
        b_byte(&b, 52);
        frm_open(&x, &b, v);
        expect_gen(&x, 0, 0, 0, TDX_GENERR_HARD, "invalid generation number 0");
        expect_end(&x);
        frm_close(&x);
        b_free(&b);

        b_header(&b, v);
        b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
        b_byte(&b, 52);
        b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
        frm_open(&x, &b, v);
        expect_gen(&x, 1, 0, 1, TDX_GENERR_HARD, "invalid generation number 0");
        expect_end(&x);
        frm_close(&x);
        b_free(&b);
    }
}

static void framer__header_only_before_26_yields_an_empty_generation(void) {
    /* Go still finishes a generation (and fails with "no frequency event found"). */
    bld b = {0};
    b_header(&b, 22);
    frm x;
    frm_open(&x, &b, 22);
    expect_gen(&x, 0, 0, 0, TDX_GENERR_NONE, NULL);
    cr_expect(!x.g.has_event_batches);
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__deferred_errors_before_26(void) {
    struct {
        const uint8_t *tail;
        size_t n;
        const char *msg;
    } cases[] = {
        {PL(9), "expected batch event, got event 9"},
        {PL(1), "error reading batch gen: EOF"},
        {PL(1, 1, 0x80), "error reading batch M ID: unexpected EOF"},
        {PL(1, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
         "error reading batch size: binary: varint overflows a 64-bit integer"},
        {PL(1, 1, 0, 0, 0x80, 0x80, 0x08), "invalid batch size 131072, maximum is 65536"},
        {PL(1, 1, 0, 0, 9, 13, 1), "failed to read full batch: read 2 but wanted 9"},
        {PL(49, 1, 1), "error reading batch M ID: EOF"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bld b = {0};
        b_header(&b, 23);
        b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
        b_batch(&b, 1, 0, 0, STR_PL, sizeof STR_PL);
        size_t bad_at = b.n;
        b_bytes(&b, cases[i].tail, cases[i].n);
        frm x;
        frm_open(&x, &b, 23);
        expect_gen(&x, 1, 0, 2, TDX_GENERR_DEFERRED, cases[i].msg);
        if (i == 0) cr_expect_eq(x.g.err.offset, bad_at);
        expect_end(&x);
        frm_close(&x);
        b_free(&b);
    }
}

static void framer__deferred_error_in_a_spilled_generation(void) {
    bld b = {0};
    b_header(&b, 22);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_batch(&b, 2, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 200);
    frm x;
    frm_open(&x, &b, 22);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_NONE, NULL);
    expect_gen(&x, 2, 1, 1, TDX_GENERR_DEFERRED, "expected batch event, got event 200");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__read_error_before_any_batch_is_hard(void) {
    bld b = {0};
    b_header(&b, 22);
    b_byte(&b, 9);
    frm x;
    frm_open(&x, &b, 22);
    expect_gen(&x, 0, 0, 0, TDX_GENERR_HARD, "expected batch event, got event 9");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);

    b_header(&b, 25);
    b_header_with_size(&b, 3);
    frm_open(&x, &b, 25);
    expect_gen(&x, 0, 0, 0, TDX_GENERR_HARD, "failed to read full batch: read 0 but wanted 3");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__eof_after_experimental_header_byte_is_clean_before_26(void) {
    bld b = {0};
    b_header(&b, 23);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 49);
    frm x;
    frm_open(&x, &b, 23);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_NONE, NULL);
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__v26_generations_end_at_end_of_generation(void) {
    bld b = {0};
    b_header(&b, 26);
    b_batch(&b, 1, NONE, 1, SYNC_PL, sizeof SYNC_PL);
    b_batch(&b, 1, 0, 2, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    b_batch(&b, 2, 0, 3, EV_PL, sizeof EV_PL);
    b_expbatch(&b, 1, 2, 0, 4, PL(1));
    b_byte(&b, 52);
    /* Version 26 does not need consecutive generation numbers. */
    b_batch(&b, 5, 0, 3, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    frm x;
    frm_open(&x, &b, 26);
    expect_gen(&x, 1, 0, 2, TDX_GENERR_NONE, NULL);
    cr_expect_eq(x.g.batches.v[0].kind, TDX_BATCH_SYNC);
    expect_gen(&x, 2, 1, 2, TDX_GENERR_NONE, NULL);
    cr_expect_eq(x.g.batches.v[1].kind, TDX_BATCH_EXPERIMENTAL);
    expect_gen(&x, 5, 2, 1, TDX_GENERR_NONE, NULL);
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__v26_missing_end_of_generation(void) {
    bld b = {0};
    b_header(&b, 26);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_batch(&b, 2, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    frm x;
    frm_open(&x, &b, 26);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_HARD,
               "broken trace: missing end-of-generation event, or generations are interleaved");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__v26_invalid_generation_number_zero(void) {
    bld b = {0};
    b_header(&b, 26);
    b_batch(&b, 0, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    frm x;
    frm_open(&x, &b, 26);
    expect_gen(&x, 0, 0, 0, TDX_GENERR_HARD, "invalid generation number 0");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);

    /* Zero is reported before the mismatch with the current generation. */
    b_header(&b, 26);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_batch(&b, 0, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    frm_open(&x, &b, 26);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_HARD, "invalid generation number 0");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__v26_incomplete_generation(void) {
    /* An event batch and no EndOfGeneration. */
    bld b = {0};
    b_header(&b, 26);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    b_batch(&b, 2, NONE, 0, SYNC_PL, sizeof SYNC_PL);
    b_batch(&b, 2, 0, 0, EV_PL, sizeof EV_PL);
    frm x;
    frm_open(&x, &b, 26);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_NONE, NULL);
    expect_gen(&x, 2, 1, 2, TDX_GENERR_HARD, "incomplete generation found; trace likely truncated");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);

    /* An empty ordinary batch counts. */
    b_header(&b, 26);
    b_batch(&b, 1, 0, 0, NULL, 0);
    frm_open(&x, &b, 26);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_HARD, "incomplete generation found; trace likely truncated");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);

    /* EOF after an ExperimentalBatch byte with an event batch pending. */
    b_header(&b, 26);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 49);
    frm_open(&x, &b, 26);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_HARD, "incomplete generation found; trace likely truncated");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__v26_structural_tail_dropped(void) {
    bld b = {0};
    b_header(&b, 26);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    b_batch(&b, 2, NONE, 0, SYNC_PL, sizeof SYNC_PL);
    b_batch(&b, 2, NONE, 0, STR_PL, sizeof STR_PL);
    b_batch(&b, 2, NONE, 0, STK_PL, sizeof STK_PL);
    b_batch(&b, 2, NONE, 0, PL(6));
    b_expbatch(&b, 1, 2, 0, 0, PL(1, 2));
    b_byte(&b, 49); /* and a lone ExperimentalBatch byte */
    frm x;
    frm_open(&x, &b, 26);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_NONE, NULL);
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__v26_header_only_is_a_clean_end(void) {
    bld b = {0};
    b_header(&b, 26);
    frm x;
    frm_open(&x, &b, 26);
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__v26_empty_generations(void) {
    bld b = {0};
    b_header(&b, 26);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    b_byte(&b, 52);
    frm x;
    frm_open(&x, &b, 26);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_NONE, NULL);
    /* Two EndOfGeneration bytes in a row: an empty generation (Go then fails on frequency). */
    expect_gen(&x, 0, 1, 0, TDX_GENERR_NONE, NULL);
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

static void framer__v26_read_errors_are_hard(void) {
    bld b = {0};
    b_header(&b, 26);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 9);
    frm x;
    frm_open(&x, &b, 26);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_HARD, "expected batch event, got event 9");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);

    b_header(&b, 26);
    b_batch(&b, 1, 0, 0, EV_PL, sizeof EV_PL);
    b_byte(&b, 52);
    b_batch(&b, 2, 0, 0, EV_PL, sizeof EV_PL);
    b_header_with_size(&b, 70000);
    frm_open(&x, &b, 26);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_NONE, NULL);
    expect_gen(&x, 2, 1, 1, TDX_GENERR_HARD, "invalid batch size 70000, maximum is 65536");
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

/* ---- min_ts: 0 means unset ---- */

static uint64_t min_ts_of(int version, const uint64_t *times, size_t n) {
    bld b = {0};
    b_header(&b, version);
    for (size_t i = 0; i < n; i++)
        b_batch(&b, 1, i, times[i], i == 1 ? STR_PL : EV_PL, i == 1 ? sizeof STR_PL : sizeof EV_PL);
    if (version >= 26) b_byte(&b, 52);
    frm x;
    frm_open(&x, &b, version);
    cr_assert_eq(frm_next(&x), 1);
    uint64_t r = x.g.min_ts;
    frm_close(&x);
    b_free(&b);
    return r;
}

static void min_ts__zero_means_unset(void) {
    static const int versions[] = {22, 25, 26};
    for (size_t vi = 0; vi < 3; vi++) {
        int v = versions[vi];
        cr_expect_eq(min_ts_of(v, (uint64_t[]){0, 50}, 2), 50, "v%d: 0,50", v);
        cr_expect_eq(min_ts_of(v, (uint64_t[]){50, 0}, 2), 0, "v%d: 50,0", v);
        cr_expect_eq(min_ts_of(v, (uint64_t[]){50, 0, 40}, 3), 40, "v%d: 50,0,40", v);
        cr_expect_eq(min_ts_of(v, (uint64_t[]){30, 10, 20}, 3), 10, "v%d", v);
        cr_expect_eq(min_ts_of(v, (uint64_t[]){0, 0}, 2), 0, "v%d", v);
        cr_expect_eq(min_ts_of(v, (uint64_t[]){7}, 1), 7, "v%d", v);
    }
}

static void min_ts__spilled_batch_and_experimental_batches_count(void) {
    bld b = {0};
    b_header(&b, 23);
    b_batch(&b, 1, 0, 100, EV_PL, sizeof EV_PL);
    b_batch(&b, 2, 0, 0, EV_PL, sizeof EV_PL); /* spilled, time 0 */
    b_batch(&b, 2, 0, 70, EV_PL, sizeof EV_PL);
    b_expbatch(&b, 1, 2, 0, 60, PL(1));
    b_batch(&b, 3, 0, 90, EV_PL, sizeof EV_PL); /* spilled */
    b_expbatch(&b, 1, 3, 0, 80, PL(1));
    frm x;
    frm_open(&x, &b, 23);
    expect_gen(&x, 1, 0, 1, TDX_GENERR_NONE, NULL);
    cr_expect_eq(x.g.min_ts, 100);
    expect_gen(&x, 2, 1, 3, TDX_GENERR_NONE, NULL);
    cr_expect_eq(x.g.min_ts, 60, "spilled time 0 is overwritten by later batches");
    expect_gen(&x, 3, 2, 2, TDX_GENERR_NONE, NULL);
    cr_expect_eq(x.g.min_ts, 80);
    expect_end(&x);
    frm_close(&x);
    b_free(&b);
}

/* ---- registered tests (grouped to keep the number of forked test processes small) ---- */

Test(read_batch, headers) {
    read_batch__event_batch_fields();
    read_batch__padded_size_and_none_thread();
    read_batch__experimental_batch_fields();
    read_batch__end_of_generation_byte();
    read_batch__clean_end();
    read_batch__consecutive_reads();
    read_batch__expected_batch_event();
}

Test(read_batch, errors) {
    read_batch__header_field_errors();
    read_batch__ten_byte_overflow_in_size_with_tenth_byte_two();
    read_batch__size_limit();
    read_batch__size_65536_accepted();
    read_batch__short_payload();
}

Test(classify, kinds) {
    classify__table_batches_every_version();
    classify__sync_batch_before_25_starts_with_frequency();
    classify__sync_batch_from_25_starts_with_sync();
    classify__experimental();
}

Test(framer, spill_before_26) {
    framer__single_generation_v22();
    framer__spill_splits_generations_by_number();
    framer__generation_numbers_need_not_start_at_one();
}

Test(framer, hard_errors_before_26) {
    framer__generations_out_of_order();
    framer__invalid_generation_number_zero();
    framer__end_of_generation_byte_before_26();
}

Test(framer, deferred_errors_and_end_before_26) {
    framer__header_only_before_26_yields_an_empty_generation();
    framer__deferred_errors_before_26();
    framer__deferred_error_in_a_spilled_generation();
    framer__read_error_before_any_batch_is_hard();
    framer__eof_after_experimental_header_byte_is_clean_before_26();
}

Test(framer, v26_generations) {
    framer__v26_generations_end_at_end_of_generation();
    framer__v26_header_only_is_a_clean_end();
    framer__v26_empty_generations();
    framer__v26_structural_tail_dropped();
}

Test(framer, v26_errors) {
    framer__v26_missing_end_of_generation();
    framer__v26_invalid_generation_number_zero();
    framer__v26_incomplete_generation();
    framer__v26_read_errors_are_hard();
}

Test(min_ts, zero_means_unset) {
    min_ts__zero_means_unset();
    min_ts__spilled_batch_and_experimental_batches_count();
}
