/* test_writer.c: the index writer's event blocks (index/build/writer.c) are the same bytes
 * whichever thread codes them: on the delivering thread alone, on an encoder thread, or shared
 * between the two (the delivering thread coding every k-th block, or whenever the encoder falls
 * behind). The blocks also read back as the events given. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/event.h"
#include "core/mem.h"
#include "core/spec.h"
#include "index/format/evcodec.h"
#include "index/build/writer.h"

static uint64_t rng;
static uint64_t rnd(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

/* A stream of n events of a few threads, procs and goroutines, times strictly increasing: metric
 * events (most of a real trace), goroutine transitions and user logs, global ids as given. */
static tdx_event *gen_events(size_t n, uint64_t seed) {
    rng = seed;
    tdx_event *ev = calloc(n, sizeof *ev);
    cr_assert(ev);
    int64_t t = 1000;
    for (size_t i = 0; i < n; i++) {
        tdx_event *e = &ev[i];
        t += 1 + (int64_t)(rnd() % 5000);
        e->time = t;
        e->m = 100 + (int64_t)(rnd() % 6);
        e->p = (int64_t)(rnd() % 4);
        e->g = 1 + (int64_t)(rnd() % 300);
        switch (rnd() % 4) {
        case 0:
        case 1:
            e->type = TDX_EV_HEAP_ALLOC;
            e->args[0] = (rnd() % 100000) * 8;
            break;
        case 2:
            e->type = TDX_EV_GO_UNBLOCK;
            e->res_kind = TDX_RES_GOROUTINE;
            e->res = 1 + (int64_t)(rnd() % 300);
            e->from = 4; /* Waiting */
            e->to = 2;   /* Runnable */
            e->stack = 1 + (uint32_t)(rnd() % 40);
            break;
        default:
            e->type = TDX_EV_USER_LOG;
            e->args[0] = rnd() % 50;
            e->stack = 1 + (uint32_t)(rnd() % 40);
            e->str[0] = 1 + (uint32_t)(rnd() % 20);
            e->str[1] = 1 + (uint32_t)(rnd() % 2000);
            break;
        }
        e->kind = tdx_type_kind(e->type);
    }
    return ev;
}

static char dir[64];

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/tdx-writer-XXXXXX");
    cr_assert(mkdtemp(dir));
}
static void teardown(void) {
    rmdir(dir);
}

static void read_file(const char *path, tdx_buf *out) {
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "cannot open %s", path);
    struct stat sb;
    cr_assert(fstat(fd, &sb) == 0);
    cr_assert(tdx_vec_reserve(out, (size_t)sb.st_size) == 0);
    out->n = 0;
    while (out->n < (size_t)sb.st_size) {
        ssize_t k = read(fd, out->v + out->n, (size_t)sb.st_size - out->n);
        cr_assert(k > 0);
        out->n += (size_t)k;
    }
    close(fd);
}

/* Writes ev[0..n) in generations of gen_len events. mode -1: no encoder thread; otherwise the
 * encoder thread with tdx_iwriter_async(w, mode). The EVENTS section's bytes go to out, and the
 * blocks must read back as ev. Returns the blocks the delivering thread coded. */
static uint64_t write_events(const tdx_event *ev, size_t n, size_t gen_len, int mode, tdx_buf *out,
                             size_t *nblocks) {
    char path[128];
    snprintf(path, sizeof path, "%s/out.tidx", dir);
    static const uint8_t trace[16] = "go 1.25 trace\0\0\0";
    tdx_err err;
    tdx_iwriter *w = tdx_iwriter_new(path, 25, trace, sizeof trace, 0, &err);
    cr_assert(w, "%s", err.msg);
    if (mode >= 0) cr_assert(tdx_iwriter_async(w, (unsigned)mode) == 0);
    for (size_t i = 0; i < n; i++) {
        cr_assert(tdx_iwriter_event(w, &ev[i], NULL) == 0, "event %zu: %s", i,
                  tdx_iwriter_error(w)->msg);
        if ((i + 1) % gen_len == 0 || i + 1 == n) {
            tdx_gen g;
            memset(&g, 0, sizeof g);
            g.frame.gen = (i + 1) / gen_len;
            cr_assert(tdx_iwriter_gen_done(w, &g, 0, 0) == 0);
        }
    }
    cr_assert(tdx_iwriter_end_events(w, &err) == 0, "%s", err.msg);
    uint64_t shared = tdx_iwriter_blocks_shared(w);
    *nblocks = tdx_iwriter_nblocks(w);
    /* What the file holds so far: the reserved header, then every block in order. */
    read_file(tdx_iwriter_temp_path(w), out);
    tdx_evdec *dec = tdx_evdec_new();
    cr_assert(dec);
    tdx_buf scratch = {0};
    tdx_event *got = malloc(TDX_EVBLOCK_EVENTS * sizeof *got);
    cr_assert(got);
    size_t at = 0;
    for (size_t b = 0; b < *nblocks; b++) {
        size_t k = 0;
        cr_assert(tdx_iwriter_read_block(w, dec, b, &scratch, got, &k, &err) == 0, "%s", err.msg);
        for (size_t i = 0; i < k; i++, at++) {
            cr_assert(at < n);
            cr_assert(got[i].time == ev[at].time && got[i].type == ev[at].type &&
                          got[i].m == ev[at].m && got[i].g == ev[at].g &&
                          got[i].args[0] == ev[at].args[0] && got[i].stack == ev[at].stack &&
                          got[i].str[1] == ev[at].str[1],
                      "block %zu, event %zu differs", b, i);
        }
    }
    cr_assert_eq(at, n, "the blocks hold %zu of %zu events", at, n);
    free(got);
    tdx_vec_free(&scratch);
    tdx_evdec_free(dec);
    tdx_iwriter_abort(w);
    return shared;
}

Test(writer, blocks_are_the_same_whoever_codes_them) {
    setup();
    /* 9.4 blocks in generations that end mid-block (short blocks, an empty one at the end). */
    size_t n = 9 * TDX_EVBLOCK_EVENTS + 6000, gen_len = 3 * TDX_EVBLOCK_EVENTS + 100;
    tdx_event *ev = gen_events(n, 0x9e3779b97f4a7c15ull);
    tdx_buf ref = {0}, got = {0};
    size_t nb_ref, nb;
    cr_assert_eq(write_events(ev, n, gen_len, -1, &ref, &nb_ref), 0);
    cr_assert_geq(nb_ref, 10);
    static const int modes[] = {0, 1, 2, 3};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        uint64_t shared = write_events(ev, n, gen_len, modes[m], &got, &nb);
        cr_assert_eq(nb, nb_ref, "mode %d: %zu blocks, %zu without a thread", modes[m], nb, nb_ref);
        cr_assert_eq(got.n, ref.n, "mode %d: %zu bytes of blocks, %zu without a thread", modes[m],
                     got.n, ref.n);
        cr_assert(memcmp(got.v, ref.v, ref.n) == 0, "mode %d: the blocks differ", modes[m]);
        /* every k-th block: at least the forced ones (more when the encoder fell behind) */
        if (modes[m] > 0)
            cr_assert_geq(shared, nb_ref / (size_t)modes[m], "mode %d: %llu shared", modes[m],
                          (unsigned long long)shared);
    }
    tdx_vec_free(&ref);
    tdx_vec_free(&got);
    free(ev);
    teardown();
}
