/* test_evcodec.c: the event block codec (index/format/evcodec.c, index/format/rans.c) and the
 * string table packing (index/format/strpack.c): random blocks round trip exactly, and truncated or
 * damaged input is refused cleanly. Every decode reads an exact-size heap copy, so an over-read is
 * caught by AddressSanitizer in the sanitizer build. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/event.h"
#include "core/spec.h"
#include "index/format/evcodec.h"
#include "index/format/format.h"
#include "index/format/strpack.h"

/* A small deterministic generator (xorshift64*), so failures reproduce. */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}
static uint64_t below(uint64_t n) {
    return n ? rnd() % n : 0;
}

/* Wire types that are events (Go's kinds), plus Sync. */
static uint8_t types[TDX_EV_NTYPES];
static int ntypes;
static void init_types(void) {
    ntypes = 0;
    for (int t = 0; t < TDX_EV_NTYPES; t++)
        if (t == TDX_TYPE_SYNC || tdx_type_kind((uint8_t)t)) types[ntypes++] = (uint8_t)t;
}

/* A value that is small, near a recent one, or anything at all. */
static uint64_t value(uint64_t near) {
    switch (below(4)) {
    case 0:
        return below(16);
    case 1:
        return near + below(1000) - 500;
    case 2:
        return below(1u << 20);
    default:
        return rnd();
    }
}

/* Random events: times increasing (strictly when `strict`), a handful of threads, goroutine and
 * stack ids drawn from pools so that repeats occur as in traces. */
static void gen_block(tdx_event *ev, size_t n, int strict, int nthreads) {
    int64_t t = (int64_t)(rnd() >> 2) - (int64_t)(1ull << 60);
    int64_t gpool[64];
    for (int i = 0; i < 64; i++) gpool[i] = (int64_t)below(100000) - 1;
    for (size_t i = 0; i < n; i++) {
        tdx_event *e = &ev[i];
        memset(e, 0, sizeof *e);
        uint64_t d = below(3) ? 64 * below(200) : below(4) ? below(1u << 20) : below(1ull << 40);
        if (strict && d == 0) d = 1;
        if (!strict && below(10) == 0) d = (uint64_t) - (int64_t)below(5000);
        t += (int64_t)d;
        e->time = t;
        e->type = types[below((uint64_t)ntypes)];
        e->kind = tdx_type_kind(e->type);
        e->m = below(20) == 0 ? -1 : (int64_t)(262000 + below((uint64_t)nthreads));
        e->p = (int64_t)below(9) - 1;
        e->g = gpool[below(64)];
        e->res = below(3) ? gpool[below(64)] : (int64_t)value(1000);
        e->res_kind = (uint8_t)below(3);
        e->from = (uint8_t)below(16);
        e->to = (uint8_t)below(16);
        e->stack = (uint32_t)(below(4) ? below(300) : rnd());
        e->tstack = (uint32_t)(below(4) ? below(300) : rnd());
        e->has_tstack = (uint8_t)below(2);
        e->str[0] = (uint32_t)(below(3) ? below(50) : rnd());
        e->str[1] = (uint32_t)(below(3) ? below(50) : rnd());
        for (int k = 0; k < 4; k++) e->args[k] = value(i ? ev[i - 1].args[k] : 0);
        e->has_clock = (uint8_t)below(2);
        e->sync_nsec = rnd();
        if (below(50) == 0) gpool[below(64)] = (int64_t)rnd();
    }
}

static int ev_eq(const tdx_event *a, const tdx_event *b) {
    return a->time == b->time && a->m == b->m && a->p == b->p && a->g == b->g &&
           !memcmp(a->args, b->args, sizeof a->args) && a->stack == b->stack &&
           a->tstack == b->tstack && a->str[0] == b->str[0] && a->str[1] == b->str[1] &&
           a->type == b->type && a->kind == b->kind && a->res_kind == b->res_kind &&
           a->from == b->from && a->to == b->to && a->has_clock == b->has_clock &&
           a->has_tstack == b->has_tstack && a->res == b->res && a->sync_nsec == b->sync_nsec;
}

/* A decoder kept across every block this file decodes (good, damaged, any size), as a query's
 * pipe keeps one: each decode through it must equal a fresh decoder's. */
static tdx_evdec *reused;
/* One that stores its output with streaming stores (as the views' ring asks). */
static tdx_evdec *streamed;

/* The block decoded `piece` events at a time (tdx_evdec_begin/_next): 0 or -1. */
static int decode_pieces(tdx_evdec *x, const uint8_t *p, size_t len, size_t n, size_t piece,
                         tdx_event *out) {
    if (tdx_evdec_begin(x, p, len, n)) return -1;
    for (size_t at = 0, got;; at += got) {
        if (tdx_evdec_next(x, out + at, piece, &got)) return -1;
        cr_assert_leq(got, piece);
        if (!got) return at == n ? 0 : -1;
        cr_assert_leq(at + got, n);
    }
}

/* Decodes from an exact-size heap copy, with a fresh decoder and with the reused one, whole and
 * a piece at a time: every way must agree on the outcome and, when it decodes, on the events. */
static int decode_guarded(const uint8_t *p, size_t len, size_t n, tdx_event *out) {
    uint8_t *buf = malloc(len ? len : 1);
    tdx_event *again = calloc(n + 1, sizeof *again);
    cr_assert(buf && again);
    memcpy(buf, p, len);
    int rc = tdx_evdec_block(NULL, buf, len, n, out);
    if (!reused) reused = tdx_evdec_new();
    cr_assert_not_null(reused);
    cr_assert_eq(tdx_evdec_block(reused, buf, len, n, again), rc, "a reused decoder disagrees");
    for (size_t i = 0; i < n && rc == 0; i++)
        cr_assert(ev_eq(&out[i], &again[i]), "event %zu differs with a reused decoder", i);
    /* Streamed output equals ordinary output, in 16-byte aligned memory and in memory 8 bytes off
     * (which takes ordinary stores). */
    if (!streamed) streamed = tdx_evdec_new();
    cr_assert_not_null(streamed);
    tdx_evdec_set_streaming(streamed, true);
    uint8_t *raw = malloc((n + 1) * sizeof(tdx_event) + 8);
    cr_assert_not_null(raw);
    for (size_t off = 0; off <= 8; off += 8) {
        tdx_event *st = (tdx_event *)(void *)(raw + off);
        memset(st, 0, n * sizeof *st);
        cr_assert_eq(tdx_evdec_block(streamed, buf, len, n, st), rc,
                     "a streaming decoder disagrees");
        for (size_t i = 0; i < n && rc == 0; i++)
            cr_assert(ev_eq(&out[i], &st[i]), "event %zu differs when streamed (offset %zu)", i,
                      off);
    }
    free(raw);
    static const size_t pieces[] = {1, 7, 1000};
    for (size_t k = 0; k < sizeof pieces / sizeof *pieces; k++) {
        memset(again, 0, (n + 1) * sizeof *again);
        cr_assert_eq(decode_pieces(reused, buf, len, n, pieces[k], again), rc,
                     "decoding %zu events at a time disagrees", pieces[k]);
        for (size_t i = 0; i < n && rc == 0; i++)
            cr_assert(ev_eq(&out[i], &again[i]), "event %zu differs, %zu at a time", i, pieces[k]);
    }
    free(again);
    free(buf);
    return rc;
}

/* Encodes x, decodes it (y, the fields the format keeps), then checks that y survives another
 * round exactly and that every field the format always keeps came through. */
static void round_trip(tdx_event *x, size_t n, tdx_buf *enc_out) {
    tdx_evenc enc;
    tdx_evenc_init(&enc);
    tdx_buf b = {0};
    tdx_event *y = calloc(n + 1, sizeof *y), *z = calloc(n + 1, sizeof *z);
    cr_assert(y && z);
    cr_assert_eq(tdx_evenc_block(&enc, x, n, &b), 0);
    cr_assert_eq(decode_guarded(b.v, b.n, n, y), 0, "a block of %zu events does not decode", n);
    for (size_t i = 0; i < n; i++) {
        cr_assert(y[i].time == x[i].time && y[i].m == x[i].m && y[i].p == x[i].p &&
                      y[i].g == x[i].g && y[i].type == x[i].type && y[i].kind == x[i].kind,
                  "event %zu of %zu: time/thread/context/type changed", i, n);
        /* Fields the format stores for these types come back as they were. */
        if (x[i].type == TDX_EV_HEAP_ALLOC) cr_assert_eq(y[i].args[0], x[i].args[0]);
        if (x[i].type == TDX_EV_GO_START || x[i].type == TDX_EV_GO_UNBLOCK)
            cr_assert_eq(y[i].res, x[i].res);
        if (x[i].type == TDX_EV_GO_BLOCK)
            cr_assert(y[i].stack == x[i].stack && y[i].str[0] == x[i].str[0]);
        if (x[i].type == TDX_EV_USER_LOG)
            cr_assert(y[i].str[0] == x[i].str[0] && y[i].str[1] == x[i].str[1] &&
                      y[i].args[0] == x[i].args[0]);
        if (x[i].type == TDX_EV_USER_TASK_BEGIN)
            cr_assert(y[i].args[0] == x[i].args[0] && y[i].args[1] == x[i].args[1] &&
                      y[i].stack == x[i].stack);
        if (x[i].type == TDX_EV_GO_STATUS) cr_assert(y[i].from == x[i].from && y[i].to == x[i].to);
        if (x[i].type == TDX_TYPE_SYNC)
            cr_assert(y[i].has_clock == x[i].has_clock && y[i].args[0] == x[i].args[0]);
    }
    tdx_buf b2 = {0};
    cr_assert_eq(tdx_evenc_block(&enc, y, n, &b2), 0);
    cr_assert_eq(decode_guarded(b2.v, b2.n, n, z), 0);
    for (size_t i = 0; i < n; i++)
        cr_assert(ev_eq(&y[i], &z[i]), "event %zu of %zu differs after two rounds", i, n);
    cr_assert(b.n == b2.n && !memcmp(b.v, b2.v, b.n),
              "re-encoding the decoded block gives other bytes");
    if (enc_out) {
        enc_out->n = 0;
        cr_assert_eq(tdx_buf_append(enc_out, b.v, b.n), 0);
    }
    tdx_vec_free(&b);
    tdx_vec_free(&b2);
    free(y);
    free(z);
    tdx_evenc_free(&enc);
}

Test(evcodec, random_blocks_round_trip) {
    init_types();
    static const size_t sizes[] = {1, 2, 3, 17, 100, 1000, 5000, TDX_EVBLOCK_EVENTS};
    tdx_event *x = malloc(TDX_EVBLOCK_EVENTS * sizeof *x);
    cr_assert_not_null(x);
    for (int rep = 0; rep < 3; rep++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            gen_block(x, sizes[k], 1, 1 + (int)below(40));
            round_trip(x, sizes[k], NULL);
        }
    free(x);
}

Test(evcodec, unordered_times_and_many_threads) {
    init_types();
    size_t n = 3000;
    tdx_event *x = malloc(n * sizeof *x);
    cr_assert_not_null(x);
    gen_block(x, n, 0, 5); /* equal and decreasing times: threads named explicitly */
    round_trip(x, n, NULL);
    gen_block(x, n, 1, 2000); /* more threads than a byte can count */
    round_trip(x, n, NULL);
    free(x);
}

/* Makes every third event of the block a HeapAlloc too, and sets the k-th HeapAlloc to walk[k] *
 * unit + off: the same walk (up and down, so deltas of both signs) gives the same deltas whatever
 * the offset. */
static size_t set_heap(tdx_event *x, size_t n, const uint64_t *walk, uint64_t unit, uint64_t off) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 0) {
            x[i].type = TDX_EV_HEAP_ALLOC;
            x[i].kind = tdx_type_kind(TDX_EV_HEAP_ALLOC);
        }
        if (x[i].type == TDX_EV_HEAP_ALLOC) x[i].args[0] = walk[k++] * unit + off;
    }
    return k;
}

/* Go's heap figures are multiples of 8: a block codes its HeapAlloc values in their largest
 * common power of two (up to 2^7), so they take at least 2 bits fewer each than the same values
 * plus one; any unit, zeros and values that wrap around come back exactly. */
Test(evcodec, heap_values_in_a_common_unit) {
    init_types();
    size_t n = 6000;
    tdx_event *x = malloc(n * sizeof *x);
    uint64_t *walk = malloc(n * sizeof *walk);
    cr_assert(x && walk);
    tdx_buf a = {0}, b = {0};
    for (int rep = 0; rep < 4; rep++) {
        uint64_t v = rnd() >> 30;
        for (size_t k = 0; k < n; k++) walk[k] = v += below(4) ? below(5000) : 0 - below(20000);
        gen_block(x, n, 1, 1 + (int)below(8));
        size_t nheap = set_heap(x, n, walk, 8, 0);
        round_trip(x, n, &a);
        set_heap(x, n, walk, 8, 1);
        round_trip(x, n, &b);
        cr_assert_leq(a.n * 8 + 2 * nheap, b.n * 8,
                      "%zu HeapAllocs in multiples of 8 took %zu bytes, plus one %zu", nheap, a.n,
                      b.n);
        static const uint64_t units[] = {2, 64, 128, 1ull << 20, 1ull << 63};
        for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
            set_heap(x, n, walk, units[u], 0);
            round_trip(x, n, NULL);
        }
        memset(walk, 0, n * sizeof *walk); /* all zero */
        set_heap(x, n, walk, 8, 0);
        round_trip(x, n, NULL);
    }
    tdx_vec_free(&a);
    tdx_vec_free(&b);
    free(walk);
    free(x);
}

Test(evcodec, empty_block) {
    tdx_evenc enc;
    tdx_evenc_init(&enc);
    tdx_buf b = {0};
    cr_assert_eq(tdx_evenc_block(&enc, NULL, 0, &b), 0);
    tdx_event e;
    cr_assert_eq(decode_guarded(b.v, b.n, 0, &e), 0);
    cr_assert_neq(decode_guarded(b.v, b.n, 1, &e), 0, "an empty block must not yield an event");
    tdx_vec_free(&b);
    tdx_evenc_free(&enc);
}

/* A block cut short anywhere, or given the wrong event count, is refused. */
Test(evcodec, truncated_blocks_fail) {
    init_types();
    tdx_event *x = malloc(2000 * sizeof *x), *y = malloc(2001 * sizeof *y);
    cr_assert(x && y);
    tdx_buf b = {0};
    for (int rep = 0; rep < 2; rep++) {
        size_t n = rep ? 2000 : 40;
        gen_block(x, n, 1, 8);
        round_trip(x, n, &b);
        size_t step = b.n > 3000 ? b.n / 1500 : 1;
        for (size_t cut = 0; cut < b.n; cut += step)
            cr_assert_neq(decode_guarded(b.v, cut, n, y), 0,
                          "a block cut to %zu of %zu bytes decoded", cut, b.n);
        cr_assert_neq(decode_guarded(b.v, b.n, n + 1, y), 0,
                      "a block decoded with one event too many");
        cr_assert_neq(decode_guarded(b.v, b.n, n - 1, y), 0,
                      "a block decoded with one event too few");
    }
    tdx_vec_free(&b);
    free(x);
    free(y);
}

/* Flipped bits never crash the decoder (the sanitizer build checks every access). Many are
 * caught by the structure checks, but a flip among the raw low bits of values only changes a
 * value: in an index the block's checksum (EVDIR) catches those. */
Test(evcodec, flipped_bits_fail_cleanly) {
    init_types();
    size_t n = 1500;
    tdx_event *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    cr_assert(x && y);
    tdx_buf b = {0};
    gen_block(x, n, 1, 6);
    round_trip(x, n, &b);
    int refused = 0, tries = 3000;
    for (int i = 0; i < tries; i++) {
        size_t at = (size_t)below(b.n);
        uint8_t bit = (uint8_t)(1u << below(8));
        b.v[at] ^= bit;
        refused += decode_guarded(b.v, b.n, n, y) != 0;
        b.v[at] ^= bit;
    }
    cr_expect_geq(refused, tries / 3, "only %d of %d damaged blocks were refused", refused, tries);
    /* Random bytes of every size. */
    for (int i = 0; i < 2000; i++) {
        size_t len = (size_t)below(300);
        uint8_t junk[300];
        for (size_t k = 0; k < len; k++) junk[k] = (uint8_t)rnd();
        (void)decode_guarded(junk, len, (size_t)below(50), y);
    }
    tdx_vec_free(&b);
    free(x);
    free(y);
}

/* ---- string table ---- */

typedef struct {
    tdx_buf b;
    size_t pieces, ticks;
} collect;

static int collect_put(void *ctx, const void *p, size_t n, tdx_err *err) {
    (void)err;
    collect *c = ctx;
    c->pieces++;
    return tdx_buf_append(&c->b, p, n);
}

static void collect_tick(void *ctx) {
    ((collect *)ctx)->ticks++;
}

static int stored_seen;

static void pack_round_trip(const uint8_t *bytes, const uint64_t *off, uint64_t n, tdx_buf *out) {
    out->n = 0;
    cr_assert_eq(tdx_strpack_encode(out, bytes, off, n), 0);
    /* Streamed (chunks through a scratch file, the output in pieces): the same bytes. */
    collect c = {0};
    tdx_strpack_out o = {collect_put, &c, "/tmp/strpack-test.tidx", collect_tick, &c};
    tdx_err err;
    cr_assert_eq(tdx_strpack_write(bytes, off, n, &o, &err), 0, "%s", err.msg);
    cr_assert(c.b.n == out->n && !memcmp(c.b.v, out->v, out->n),
              "%llu strings: streamed %zu bytes, encoded %zu", (unsigned long long)n, c.b.n,
              out->n);
    uint64_t total = n ? off[n] - off[0] : 0;
    cr_assert_geq(c.ticks, total / (4u << 20), "%zu ticks for %llu bytes", c.ticks,
                  (unsigned long long)total);
    if (out->n && out->v[0] == 0) stored_seen++;
    tdx_vec_free(&c.b);
    uint8_t *buf = malloc(out->n ? out->n : 1);
    cr_assert_not_null(buf);
    memcpy(buf, out->v, out->n);
    tdx_arena a;
    tdx_arena_init(&a);
    tdx_str *s = malloc((n + 1) * sizeof *s);
    int oom;
    cr_assert_eq(tdx_strpack_decode(buf, out->n, n, &a, s, &oom), 0, "%llu strings do not unpack",
                 (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++)
        cr_assert(s[i].n == off[i + 1] - off[i] &&
                      (!s[i].n || !memcmp(s[i].p, bytes + off[i], s[i].n)),
                  "string %llu differs", (unsigned long long)i);
    /* Chunks are independent: unpacked alone, last first, they give the same strings. */
    tdx_strpack sp;
    tdx_str *t = calloc(n + 1, sizeof *t);
    cr_assert_not_null(t);
    cr_assert_eq(tdx_strpack_open(&sp, buf, out->n, n, t, &oom), 0);
    /* (a stored table, mode 0, is one unit: open filled it) */
    uint64_t nck = sp.stored ? 1 : (n + TDX_STR_CHUNK - 1) / TDX_STR_CHUNK;
    if (!sp.stored) cr_assert_eq(sp.nchunks, nck);
    for (uint64_t k = nck; k-- > 0;) {
        cr_assert_eq(tdx_strpack_chunk(&sp, k, &a, t, &oom), 0, "chunk %llu",
                     (unsigned long long)k);
        if (sp.stored) break;
        uint64_t last = (k + 1) * TDX_STR_CHUNK < n ? (k + 1) * TDX_STR_CHUNK : n;
        for (uint64_t i = k * TDX_STR_CHUNK; i < last; i++)
            cr_assert(t[i].n == s[i].n && (!t[i].n || !memcmp(t[i].p, s[i].p, t[i].n)),
                      "string %llu differs when its chunk unpacks alone", (unsigned long long)i);
    }
    if (sp.stored)
        for (uint64_t i = 0; i < n; i++) cr_assert(t[i].n == s[i].n);
    else
        cr_assert_neq(tdx_strpack_chunk(&sp, sp.nchunks, &a, t, &oom), 0);
    tdx_strpack_close(&sp);
    free(t);
    free(s);
    free(buf);
    tdx_arena_free(&a);
}

/* Strings like a trace's: templated messages with numbers, names, paths, and some binary. */
static uint64_t gen_strings(tdx_buf *bytes, uint64_t *off, uint64_t n) {
    static const char *const tmpl[] = {
        "GET /api/v2/orders/", "rows=", " took=", "us", "github.com/acme/orders/internal/",
        "/usr/local/go/src/",  ".go"};
    bytes->n = 0;
    off[0] = 0;
    for (uint64_t i = 0; i < n; i++) {
        int kind = i == 0 ? -1 : (int)below(4);
        char s[200];
        size_t len = 0;
        if (kind == 0 || kind == 1) {
            int parts = 1 + (int)below(4);
            for (int k = 0; k < parts; k++) {
                const char *t = tmpl[below(7)];
                len += (size_t)snprintf(s + len, sizeof s - len, "%s%llu", t,
                                        (unsigned long long)below(1000000));
            }
        } else if (kind == 2) {
            len = (size_t)below(40);
            for (size_t k = 0; k < len; k++) s[k] = (char)rnd();
        } else if (kind == 3) {
            len = (size_t)below(3);
            for (size_t k = 0; k < len; k++) s[k] = (char)('a' + below(3));
        }
        cr_assert_eq(tdx_buf_append(bytes, s, len), 0);
        off[i + 1] = bytes->n;
    }
    return n;
}

Test(strpack, random_tables_round_trip) {
    tdx_buf bytes = {0}, out = {0};
    static const uint64_t sizes[] = {1, 2, 10, 1000, 60000};
    uint64_t *off = malloc((60000 + 1) * sizeof *off);
    cr_assert_not_null(off);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        gen_strings(&bytes, off, sizes[k]);
        pack_round_trip(bytes.v, off, sizes[k], &out);
    }
    /* One long repetitive string (overlapping matches, a chunk of megabytes). */
    bytes.n = 0;
    off[0] = 0;
    for (int i = 0; i < 3000000; i++)
        cr_assert_eq(tdx_vec_push(&bytes, (uint8_t) "abcab"[i % 5]), 0);
    off[1] = 1;
    off[2] = bytes.n;
    pack_round_trip(bytes.v, off, 2, &out);
    /* that one packs so well that it is stored (mode 0), streamed in pieces too */
    cr_assert_eq(stored_seen, 1);
    /* Several ticks: 20 MB of templated strings. */
    static uint64_t off2[200001];
    gen_strings(&bytes, off2, 200000);
    while (bytes.n < (20u << 20)) {
        size_t m = bytes.n;
        cr_assert_eq(tdx_vec_reserve(&bytes, 2 * m), 0);
        memcpy(bytes.v + m, bytes.v, m);
        bytes.n = 2 * m;
        for (uint64_t i = 1; i <= 200000; i++) off2[i] = off2[i] * 2;
    }
    pack_round_trip(bytes.v, off2, 200000, &out);
    tdx_vec_free(&bytes);
    tdx_vec_free(&out);
    free(off);
}

Test(strpack, damaged_tables_fail_cleanly) {
    tdx_buf bytes = {0}, out = {0};
    uint64_t n = 3000, *off = malloc((n + 1) * sizeof *off);
    tdx_str *s = malloc(n * sizeof *s);
    cr_assert(off && s);
    gen_strings(&bytes, off, n);
    pack_round_trip(bytes.v, off, n, &out);
    int oom;
    for (size_t cut = 0; cut < out.n; cut += 1 + out.n / 700) {
        uint8_t *buf = malloc(cut ? cut : 1);
        memcpy(buf, out.v, cut);
        tdx_arena a;
        tdx_arena_init(&a);
        cr_assert_neq(tdx_strpack_decode(buf, cut, n, &a, s, &oom), 0,
                      "a table cut to %zu bytes unpacked", cut);
        tdx_arena_free(&a);
        free(buf);
    }
    int refused = 0;
    cr_assert_gt(out.n, 0);
    for (int i = 0; i < 1000; i++) {
        size_t at = (size_t)below(out.n);
        uint8_t bit = (uint8_t)(1u << below(8));
        out.v[at] ^= bit;
        uint8_t *buf = malloc(out.n);
        memcpy(buf, out.v, out.n);
        tdx_arena a;
        tdx_arena_init(&a);
        refused += tdx_strpack_decode(buf, out.n, n, &a, s, &oom) != 0;
        tdx_arena_free(&a);
        free(buf);
        out.v[at] ^= bit;
    }
    cr_expect_geq(refused, 900, "only %d of 1000 damaged tables were refused", refused);
    tdx_vec_free(&bytes);
    tdx_vec_free(&out);
    free(off);
    free(s);
}

/* Opening reads only the header and directory; each chunk is checked when it unpacks, so damage
 * inside one chunk fails that chunk alone. */
Test(strpack, damaged_chunk_fails_alone) {
    tdx_buf bytes = {0}, out = {0};
    uint64_t n = 3000, *off = malloc((n + 1) * sizeof *off);
    tdx_str *s = calloc(n, sizeof *s);
    cr_assert(off && s);
    gen_strings(&bytes, off, n);
    cr_assert_eq(tdx_strpack_encode(&out, bytes.v, off, n), 0);
    tdx_strpack sp;
    int oom;
    cr_assert_eq(tdx_strpack_open(&sp, out.v, out.n, n, s, &oom), 0);
    cr_assert_eq(sp.stored, 0);
    cr_assert_gt(sp.nchunks, 6);
    /* a byte in the middle of chunk 5's coded symbols */
    const uint8_t *e5 = sp.dir + (size_t)5 * 24; /* its directory entry */
    uint64_t at = tdx_rd64(e5), len = tdx_rd32(e5 + 8);
    size_t pos = (size_t)(sp.p - out.v) + (size_t)(at + len / 2), dir = (size_t)(sp.dir - out.v);
    tdx_strpack_close(&sp);
    out.v[pos] ^= 0x10;
    cr_assert_eq(tdx_strpack_open(&sp, out.v, out.n, n, s, &oom), 0, "open read a chunk");
    tdx_arena a;
    tdx_arena_init(&a);
    for (uint64_t k = 0; k < sp.nchunks; k++)
        cr_expect_eq(tdx_strpack_chunk(&sp, k, &a, s, &oom) != 0, k == 5, "chunk %llu",
                     (unsigned long long)k);
    tdx_strpack_close(&sp);
    /* damage in the directory fails the open */
    out.v[pos] ^= 0x10;
    out.v[dir + 30] ^= 1;
    cr_expect_neq(tdx_strpack_open(&sp, out.v, out.n, n, s, &oom), 0);
    tdx_arena_free(&a);
    tdx_vec_free(&bytes);
    tdx_vec_free(&out);
    free(off);
    free(s);
}
