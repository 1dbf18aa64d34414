/* test_blockcoder.c: index/format/blockcoder.c gives each stream's blocks in order, the same bytes
 * with and without its thread, values intact across chunk boundaries, and stops at a sink's
 * failure. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/varint.h"
#include "index/format/blockcoder.h"
#include "index/format/rans.h"
#include "xorshift.h"

enum { NS = 3, NCTX = 40, NBLOCKS = 24, NLOG = NS * NBLOCKS };

typedef struct blk {
    int s;
    uint64_t key;
    size_t start, end; /* in the stream's output */
} blk;

typedef struct run {
    tdx_buf out[NS];
    blk log[NLOG];
    size_t n;
    size_t fail_at; /* the sink call that fails (0: none) */
} run;

static int sink(void *ctx, int s, uint64_t key, size_t start, tdx_err *err) {
    run *r = ctx;
    cr_assert_lt(r->n, (size_t)NLOG);
    r->log[r->n] = (blk){s, key, start, r->out[s].n};
    if (++r->n != r->fail_at) return 0;
    tdx_errf(err, TDX_EIO, 7, "sink failed");
    return -3;
}

/* Block b of stream s: its length (0 to three chunks and a bit) and its values. */
static size_t block_len(int s, int b) {
    static const size_t lens[] = {0,
                                  1,
                                  100,
                                  TDX_BCODER_CHUNK_VALS - 1,
                                  TDX_BCODER_CHUNK_VALS,
                                  TDX_BCODER_CHUNK_VALS + 1,
                                  3 * TDX_BCODER_CHUNK_VALS + 5,
                                  2};
    return lens[(size_t)(s + b) % (sizeof lens / sizeof *lens)];
}
static uint64_t value(uint64_t *rng, uint32_t *ctx) {
    uint64_t r = xorshift64(rng);
    *ctx = (uint32_t)(r % NCTX);
    switch (r >> 60 & 3) {
    case 0:
        return r >> 40 & 7;
    case 1:
        return r >> 32 & 0xfff;
    case 2:
        return xorshift64(rng); /* every bit */
    default:
        return r >> 62;
    }
}

/* Every stream's blocks, interleaved: a value to each stream in turn, a stream's block closing
 * once it has its length. */
static void produce(tdx_bcoder *c) {
    tdx_bcopen *o[NS];
    for (int s = 0; s < NS; s++) o[s] = tdx_bcoder_stream(c, s);
    uint64_t rng[NS];
    size_t left[NS];
    int b[NS];
    for (int s = 0; s < NS; s++) {
        rng[s] = 0x9e3779b97f4a7c15ULL + (uint64_t)s;
        b[s] = 0;
        left[s] = block_len(s, 0);
    }
    for (int busy = NS; busy;) {
        busy = 0;
        for (int s = 0; s < NS; s++) {
            if (b[s] == NBLOCKS) continue;
            busy++;
            if (left[s]) {
                uint32_t ctx;
                uint64_t v = value(&rng[s], &ctx);
                tdx_bcoder_put(c, o[s], ctx, v);
                left[s]--;
                continue;
            }
            tdx_bcoder_close(c, o[s], (uint64_t)s << 32 | (uint64_t)b[s], (uint64_t)b[s] + 1);
            if (++b[s] < NBLOCKS) left[s] = block_len(s, b[s]);
        }
    }
}

static int code_all(run *r, bool thread, tdx_err *err) {
    memset(r->out, 0, sizeof r->out);
    r->n = 0;
    tdx_buf *out[NS];
    for (int s = 0; s < NS; s++) out[s] = &r->out[s];
    tdx_bcoder *c = tdx_bcoder_new(NS, NCTX, out, sink, r, thread);
    cr_assert_not_null(c);
    produce(c);
    int rc = tdx_bcoder_end(c, err);
    tdx_bcoder_free(c);
    return rc;
}

static void run_free(run *r) {
    for (int s = 0; s < NS; s++) tdx_vec_free(&r->out[s]);
}

Test(blockcoder, blocks_decode_to_their_values_in_order) {
    run r = {0};
    tdx_err err;
    cr_assert_eq(code_all(&r, true, &err), 0);
    cr_assert_eq(r.n, (size_t)NLOG);
    uint64_t rng[NS];
    int next[NS] = {0};
    size_t pos[NS] = {0};
    for (int s = 0; s < NS; s++) rng[s] = 0x9e3779b97f4a7c15ULL + (uint64_t)s;
    tdx_rans_dec d;
    tdx_rans_dec_init(&d);
    for (size_t i = 0; i < r.n; i++) {
        const blk *k = &r.log[i];
        int b = next[k->s]++;
        cr_assert_eq(k->key, (uint64_t)k->s << 32 | (uint64_t)b, "stream %d: block out of order",
                     k->s);
        cr_assert_eq(k->start, pos[k->s], "stream %d block %d: not where the last one ended", k->s,
                     b);
        pos[k->s] = k->end;
        const uint8_t *p = r.out[k->s].v + k->start, *end = r.out[k->s].v + k->end;
        uint64_t nrec, nv;
        int m = tdx_uvarint(p, end, &nrec);
        cr_assert_gt(m, 0);
        p += m;
        cr_assert_gt(m = tdx_uvarint(p, end, &nv), 0);
        p += m;
        cr_assert_eq(nrec, (uint64_t)b + 1);
        cr_assert_eq(nv, (uint64_t)block_len(k->s, b), "stream %d block %d: %llu values", k->s, b,
                     (unsigned long long)nv);
        cr_assert_eq(tdx_rans_dec_start(&d, NCTX, p, (size_t)(end - p)), 0);
        for (uint64_t j = 0; j < nv; j++) {
            uint32_t ctx;
            uint64_t want = value(&rng[k->s], &ctx);
            uint64_t got = tdx_rans_get_uint(&d, (int)(ctx & (TDX_RANS_LANES - 1)), ctx);
            cr_assert_eq(got, want, "stream %d block %d value %llu", k->s, b,
                         (unsigned long long)j);
        }
        cr_assert(tdx_rans_dec_ok(&d), "stream %d block %d: not consumed exactly", k->s, b);
    }
    for (int s = 0; s < NS; s++) cr_assert_eq(pos[s], r.out[s].n);
    tdx_rans_dec_free(&d);
    run_free(&r);
}

Test(blockcoder, the_thread_changes_no_byte) {
    run a = {0}, b = {0};
    tdx_err err;
    cr_assert_eq(code_all(&a, false, &err), 0);
    cr_assert_eq(code_all(&b, true, &err), 0);
    cr_assert_eq(a.n, b.n);
    cr_assert(memcmp(a.log, b.log, a.n * sizeof *a.log) == 0, "the blocks were sunk otherwise");
    for (int s = 0; s < NS; s++)
        cr_assert(a.out[s].n == b.out[s].n && memcmp(a.out[s].v, b.out[s].v, a.out[s].n) == 0,
                  "stream %d differs", s);
    run_free(&a);
    run_free(&b);
}

/* After the sink fails, nothing more is coded and the failure (with its message) comes back. */
Test(blockcoder, a_failing_sink_stops_the_coder) {
    for (int thread = 0; thread < 2; thread++) {
        run r = {0};
        r.fail_at = 5;
        tdx_err err = {0};
        cr_assert_eq(code_all(&r, thread, &err), -3);
        cr_assert_eq(r.n, 5, "thread %d: %zu blocks sunk", thread, r.n);
        cr_assert_str_eq(err.msg, "sink failed");
        cr_assert_eq(err.offset, 7);
        run_free(&r);
    }
}

/* Deferred pairs: the map sees them in the order they were put, stream by stream, and its
 * answers are what the blocks hold; after a sync every pair handed over has been mapped. */
typedef struct dict {
    uint64_t seen[64]; /* a first-use dictionary of the pairs' sums, as SUMMARY's shapes */
    size_t n, calls;
} dict;

static int first_use(void *ctx, uint32_t cx, uint64_t a, uint64_t b, uint64_t *v) {
    dict *d = ctx;
    cr_assert_eq(cx, 5);
    d->calls++;
    for (size_t i = 0; i < d->n; i++)
        if (d->seen[i] == a + b) {
            *v = i;
            return 0;
        }
    cr_assert_lt(d->n, 64);
    d->seen[d->n] = a + b;
    *v = d->n++;
    return 0;
}

Test(blockcoder, deferred_pairs_are_mapped_in_order) {
    for (int thread = 0; thread < 2; thread++) {
        run r = {0};
        tdx_buf *out[1] = {&r.out[0]};
        tdx_bcoder *c = tdx_bcoder_new(1, NCTX, out, sink, &r, thread);
        cr_assert_not_null(c);
        dict d = {0};
        tdx_bcoder_set_map(c, first_use, &d);
        tdx_bcopen *o = tdx_bcoder_stream(c, 0);
        /* an odd count of plain values first, so pairs straddle the chunks' ends */
        enum { PAIRS = 3 * TDX_BCODER_CHUNK_VALS / 2 };
        tdx_bcoder_put(c, o, 1, 9);
        for (uint64_t i = 0; i < PAIRS; i++) tdx_bcoder_put2(c, o, 5, i % 40, (i * 7) % 13);
        tdx_bcoder_close(c, o, 0, 1);
        cr_assert_eq(tdx_bcoder_sync(c), 0);
        cr_assert_eq(d.calls, PAIRS, "thread %d: %zu pairs mapped after the sync", thread, d.calls);
        cr_assert_eq(r.n, 1);
        cr_assert_eq(tdx_bcoder_end(c, NULL), 0);
        tdx_bcoder_free(c);
        /* decode: the plain value, then the ordinals the dictionary gave, in order */
        const uint8_t *p = r.out[0].v, *end = p + r.out[0].n;
        uint64_t nrec, nv;
        p += tdx_uvarint(p, end, &nrec);
        p += tdx_uvarint(p, end, &nv);
        cr_assert_eq(nv, (uint64_t)PAIRS + 1);
        tdx_rans_dec dec;
        tdx_rans_dec_init(&dec);
        cr_assert_eq(tdx_rans_dec_start(&dec, NCTX, p, (size_t)(end - p)), 0);
        cr_assert_eq(tdx_rans_get_uint(&dec, 1, 1), 9);
        dict again = {0};
        for (uint64_t i = 0; i < PAIRS; i++) {
            uint64_t want;
            first_use(&again, 5, i % 40, (i * 7) % 13, &want);
            cr_assert_eq(tdx_rans_get_uint(&dec, 1, 5), want, "pair %llu", (unsigned long long)i);
        }
        cr_assert(tdx_rans_dec_ok(&dec));
        tdx_rans_dec_free(&dec);
        run_free(&r);
    }
}
