/* test_rans.c: index/format/rans.c round trips at the coder's edges: single-symbol tables, rare
 * symbols in full-precision tables (two bytes out per symbol), lanes of unequal length. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>

#include "index/format/rans.h"
#include "xorshift.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) {
    return xorshift64(&rng);
}

enum { NCTX = 6, MAXSYM = 200000 };

typedef struct sym {
    uint8_t lane, ctx, kind; /* kind 0: symbol, 1: integer */
    uint64_t v;
} sym;

/* A symbol of context ctx: 0 a single symbol, 1 one common symbol and rare others (each seen
 * about once, so they get frequency 1 in a 2^10 table), 2 uniform bytes, 3 small skewed, 4 and 5
 * integers of any size (classes plus raw bits). */
static sym draw(int lane, int ctx) {
    sym s = {(uint8_t)lane, (uint8_t)ctx, 0, 0};
    uint64_t r = rnd();
    switch (ctx) {
    case 0:
        s.v = 42;
        break;
    case 1:
        s.v = r % 64 ? 7 : 1 + (r >> 8) % 255;
        break;
    case 2:
        s.v = r & 255;
        break;
    case 3:
        s.v = (r & 7) ? 0 : (r & 15);
        break;
    default:
        s.kind = 1;
        s.v = (r >> 8) >> (r % 64);
        break;
    }
    return s;
}

/* Codes n symbols (lane chosen by weights), decodes them and compares. */
static void round_trip(size_t n, const unsigned *lane_weight) {
    sym *v = malloc(n * sizeof *v);
    cr_assert_not_null(v);
    unsigned total = 0;
    for (int l = 0; l < TDX_RANS_LANES; l++) total += lane_weight[l];
    for (size_t i = 0; i < n; i++) {
        unsigned pick = (unsigned)(rnd() % total);
        int lane = 0;
        while (pick >= lane_weight[lane]) pick -= lane_weight[lane++];
        v[i] = draw(lane, (int)(rnd() % NCTX));
    }
    tdx_rans_enc e;
    tdx_rans_enc_init(&e);
    cr_assert_eq(tdx_rans_enc_reset(&e, NCTX), 0);
    cr_assert_eq(tdx_rans_enc_reserve(&e, n, n * 64), 0);
    for (size_t i = 0; i < n; i++) {
        if (v[i].kind)
            tdx_rans_put_uint(&e, v[i].lane, v[i].ctx, v[i].v);
        else
            tdx_rans_put(&e, v[i].lane, v[i].ctx, (unsigned)v[i].v);
    }
    tdx_buf out = {0};
    cr_assert_eq(tdx_rans_enc_finish(&e, &out), 0);
    tdx_rans_dec d;
    tdx_rans_dec_init(&d);
    cr_assert_eq(tdx_rans_dec_start(&d, NCTX, out.v, out.n), 0);
    for (size_t i = 0; i < n; i++) {
        uint64_t got = v[i].kind ? tdx_rans_get_uint(&d, v[i].lane, v[i].ctx)
                                 : tdx_rans_get(&d, v[i].lane, v[i].ctx);
        cr_assert_eq(got, v[i].v, "symbol %zu (lane %d, context %d): %llu, want %llu", i, v[i].lane,
                     v[i].ctx, (unsigned long long)got, (unsigned long long)v[i].v);
    }
    cr_expect(tdx_rans_dec_ok(&d), "the block was not consumed exactly");
    tdx_rans_dec_free(&d);
    tdx_vec_free(&out);
    tdx_rans_enc_free(&e);
    free(v);
}

Test(rans, even_lanes_round_trip) {
    const unsigned w[TDX_RANS_LANES] = {1, 1, 1, 1};
    for (int k = 0; k < 4; k++) round_trip(20000 + (size_t)k * 777, w);
}

Test(rans, uneven_and_empty_lanes_round_trip) {
    const unsigned w1[TDX_RANS_LANES] = {10, 1, 0, 3};
    const unsigned w2[TDX_RANS_LANES] = {0, 0, 0, 1};
    const unsigned w3[TDX_RANS_LANES] = {1, 50, 2, 0};
    round_trip(30000, w1);
    round_trip(5000, w2);
    round_trip(MAXSYM, w3);
    round_trip(1, w1);
}

/* Rare symbols (frequency 1 of 2^10) with the state near its top push two bytes out at once. */
Test(rans, rare_symbols_round_trip) {
    tdx_rans_enc e;
    tdx_rans_enc_init(&e);
    for (int rep = 0; rep < 20; rep++) {
        size_t n = 3000 + (size_t)(rnd() % 3000);
        sym *v = malloc(n * sizeof *v);
        cr_assert_not_null(v);
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rnd();
            v[i] = (sym){0, 1, 0, r % 200 ? 3 : 100 + r % 100};
        }
        cr_assert_eq(tdx_rans_enc_reset(&e, NCTX), 0);
        cr_assert_eq(tdx_rans_enc_reserve(&e, n, 0), 0);
        for (size_t i = 0; i < n; i++) tdx_rans_put(&e, 0, 1, (unsigned)v[i].v);
        tdx_buf out = {0};
        cr_assert_eq(tdx_rans_enc_finish(&e, &out), 0);
        tdx_rans_dec d;
        tdx_rans_dec_init(&d);
        cr_assert_eq(tdx_rans_dec_start(&d, NCTX, out.v, out.n), 0);
        for (size_t i = 0; i < n; i++) cr_assert_eq(tdx_rans_get(&d, 0, 1), v[i].v);
        cr_expect(tdx_rans_dec_ok(&d));
        tdx_rans_dec_free(&d);
        tdx_vec_free(&out);
        free(v);
    }
    tdx_rans_enc_free(&e);
}
