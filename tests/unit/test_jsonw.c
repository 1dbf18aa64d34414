/* test_jsonw.c: index/views/jsonout.h's writer: stackFrames holds every frame a written event names
 * and their callers, each once, keyed in the order encoding/json sorts map keys (the decimal text
 * of the ids), with Go's name and parent fields; the size of an event's JSON without writing it. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/views/jsonout.h"

/* A flat tree: frame id i's parent is i / 7 (0 at the top), its name "f<i>", line i. */
enum { NFRAMES = 150000 };

static int frame(void *self, uint32_t id, tdx_str *func, uint64_t *line, uint32_t *parent) {
    (void)self;
    static char names[16][16];
    static unsigned next;
    if (id == 0 || id > NFRAMES) return -1;
    if (func) {
        char *b = names[next++ % 16];
        int n = snprintf(b, 16, "f%u", id);
        *func = (tdx_str){(const uint8_t *)b, (size_t)n};
    }
    if (line) *line = id;
    *parent = id / 7;
    return 0;
}

static int sink(void *ctx, const void *p, size_t n) {
    return tdx_buf_append(ctx, p, n);
}

static int cmp_text(const void *a, const void *b) {
    char x[16], y[16];
    snprintf(x, sizeof x, "%u", *(const uint32_t *)a);
    snprintf(y, sizeof y, "%u", *(const uint32_t *)b);
    return strcmp(x, y);
}

/* Writes one slice per id in ids (stack = the id) and checks the stackFrames that follow. */
static void check(const uint32_t *ids, size_t n) {
    tdx_vgframes fr = {NULL, NULL, frame, NULL, NULL};
    tdx_buf out = {0};
    tdx_jsonw w;
    cr_assert_eq(tdx_jsonw_init(&w, sink, &out, &fr, 0, INT64_MAX), 0);
    uint8_t *want = calloc(NFRAMES + 1, 1);
    for (size_t i = 0; i < n; i++) {
        tdx_vev ev = {.name = {(const uint8_t *)"s", 1}, .ph = 'X', .ts = 1, .sf = ids[i]};
        cr_assert_eq(tdx_jsonw_event(&w, &ev), 0);
        for (uint32_t id = ids[i]; id; id /= 7) want[id] = 1;
    }
    cr_assert_eq(tdx_jsonw_finish(&w), 0);
    cr_assert_eq(tdx_buf_append(&out, "", 1), 0);
    uint32_t *expect = malloc((NFRAMES + 1) * sizeof *expect);
    size_t ne = 0;
    for (uint32_t id = 1; id <= NFRAMES; id++)
        if (want[id]) expect[ne++] = id;
    qsort(expect, ne, sizeof *expect, cmp_text);
    const char *p = strstr((const char *)out.v, "\"stackFrames\":{");
    cr_assert_not_null(p);
    p += strlen("\"stackFrames\":{");
    for (size_t i = 0; i < ne; i++) {
        char rec[96];
        uint32_t id = expect[i];
        if (id / 7)
            snprintf(rec, sizeof rec, "%s\"%u\":{\"name\":\"f%u:%u\",\"parent\":%u}", i ? "," : "",
                     id, id, id, id / 7);
        else
            snprintf(rec, sizeof rec, "%s\"%u\":{\"name\":\"f%u:%u\"}", i ? "," : "", id, id, id);
        cr_assert(strncmp(p, rec, strlen(rec)) == 0, "frame %zu of %zu: want %s, have %.60s", i, ne,
                  rec, p);
        p += strlen(rec);
    }
    cr_expect(*p == '}', "nothing after the last frame: %.40s", p);
    free(expect);
    free(want);
    tdx_jsonw_free(&w);
    tdx_vec_free(&out);
}

Test(jsonw, stack_frames_in_decimal_text_order) {
    /* Ids of 1 to 6 digits, few and many (nearly every frame). */
    uint32_t few[] = {1, 10, 9, 100000, 99999, 12345, 7, 70, 700, 149999, 2, 20, 21, 200};
    check(few, sizeof few / sizeof *few);
    uint32_t *many = malloc(NFRAMES * sizeof *many);
    srand(7);
    size_t n = 0;
    for (uint32_t id = NFRAMES; id > 0; id--)
        if (rand() % 3) many[n++] = id;
    check(many, n);
    free(many);
}

/* tdx_json_event_size (the splitter's measure) equals what tdx_json_event writes, for events of
 * every kind with fields of every size, escapes and times past the fast path included. */
Test(jsonw, event_size_is_the_written_length) {
    static const char *const names[] = {"",          "G1 main.main", "a<b>&c",
                                        "tab\there", "é\"q\\",       "GC (dedicated)"};
    static const char ph[] = "XICMstbe";
    static const int64_t times[] = {0,
                                    1,
                                    999,
                                    1000,
                                    1001,
                                    1010,
                                    1100,
                                    123456789,
                                    -5,
                                    -1500,
                                    8796093022208000LL,
                                    -8796093022208001LL,
                                    INT64_MAX};
    static const uint64_t nums[] = {0, 1, 9, 10, 99, 100, 12345678901ULL, UINT64_MAX};
    srand(11);
    tdx_buf b = {0};
    for (int it = 0; it < 200000; it++) {
        tdx_vev ev;
        memset(&ev, 0, sizeof ev);
        int ni = rand() % 6;
        const char *nm = names[ni], *sc = names[rand() % 6];
        ev.name = (tdx_str){(const uint8_t *)nm, strlen(nm)};
        ev.name_plain =
            (ni == 0 || ni == 1 || ni == 5) && rand() % 2; /* names needing no escapes */
        ev.ph = ph[rand() % 8];
        if (rand() % 4 == 0) ev.scope = (tdx_str){(const uint8_t *)sc, strlen(sc)};
        ev.ts = times[rand() % 13];
        ev.dur = rand() % 2 ? times[rand() % 13] : 0;
        ev.pid = nums[rand() % 8];
        ev.tid = nums[rand() % 8];
        ev.id = rand() % 2 ? nums[rand() % 8] : 0;
        ev.sf = rand() % 2 ? (int64_t)nums[rand() % 8] : 0;
        ev.esf = rand() % 2 ? -(int64_t)nums[rand() % 7] : 0;
        ev.args.kind = (uint8_t)(rand() % 10);
        for (int k = 0; k < 3; k++) ev.args.u[k] = rand() % 3 ? nums[rand() % 8] : 0;
        ev.args.s = ev.name;
        ev.cname = rand() % 3 ? NULL : "thread_state_runnable";
        ev.cat = rand() % 3 ? NULL : names[rand() % 6];
        b.n = 0;
        cr_assert_eq(tdx_json_event(&b, &ev), 0);
        cr_assert_eq(tdx_json_event_size(&ev), b.n, "event %d: %.*s", it, (int)b.n,
                     (const char *)b.v);
    }
    tdx_vec_free(&b);
}

/* Integers print as printf prints them at every digit-count boundary (10^k - 1, 10^k, and both
 * sides of each power of two), where a digit count off by one would show. */
Test(jsonw, integers_at_digit_boundaries) {
    uint64_t vals[3 * 20 + 3 * 64 + 2];
    size_t n = 0;
    uint64_t p = 1;
    for (int k = 0; k < 20; k++, p *= 10) {
        vals[n++] = p - 1;
        vals[n++] = p;
        vals[n++] = p + 1;
        if (k == 19) break;
    }
    for (int b = 0; b < 64; b++) {
        vals[n++] = (1ull << b) - 1;
        vals[n++] = 1ull << b;
        vals[n++] = (1ull << b) + 1;
    }
    vals[n++] = UINT64_MAX;
    vals[n++] = UINT64_MAX - 1;
    for (size_t i = 0; i < n; i++) {
        char got[24], want[24];
        size_t len = tdx_json_u64(got, vals[i]);
        int wl = snprintf(want, sizeof want, "%llu", (unsigned long long)vals[i]);
        cr_assert_eq(len, (size_t)wl, "%s: length %zu", want, len);
        cr_assert(memcmp(got, want, len) == 0, "%s: got %.*s", want, (int)len, got);
        int64_t s = -(int64_t)(vals[i] >> 1);
        len = tdx_json_i64(got, s);
        wl = snprintf(want, sizeof want, "%lld", (long long)s);
        cr_assert_eq(len, (size_t)wl, "%s: length %zu", want, len);
        cr_assert(memcmp(got, want, len) == 0, "%s: got %.*s", want, (int)len, got);
    }
}
