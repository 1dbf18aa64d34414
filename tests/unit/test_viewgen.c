/* test_viewgen.c: index/views/viewgen.c restores a saved generator state, and refuses one whose
 * counters or largest proc id are out of range (an index with matching checksums can still carry
 * them: the proc view would lay out a lane per proc id up to the largest, and counters at the int64
 * limits would overflow on the next step). */
#include <criterion/criterion.h>

#include <string.h>

#include "core/varint.h"
#include "index/views/viewgen.h"

static int drop(void *ctx, const tdx_vev *ev) {
    (void)ctx;
    (void)ev;
    return 0;
}

typedef struct fixture {
    tdx_vgstore store;
    tdx_vgtree tree;
    tdx_vgframes frames;
    tdx_viewgen_opts opts;
} fixture;

static void setup(fixture *f, int view) {
    cr_assert_eq(tdx_vgstore_init(&f->store), 0);
    tdx_vgtree_init(&f->tree, &f->store);
    f->frames = tdx_vgtree_frames(&f->tree);
    tdx_viewgen_opts_default(&f->opts);
    f->opts.view = view;
}

static void teardown(fixture *f) {
    tdx_vgtree_free(&f->tree);
    tdx_vgstore_free(&f->store);
}

static int restore(fixture *f, const uint8_t *p, size_t n) {
    tdx_viewgen *vg = tdx_viewgen_new(&f->opts, &f->store, &f->frames, drop, NULL);
    cr_assert_not_null(vg);
    tdx_err err;
    int rc = tdx_viewgen_restore(vg, p, n, &err);
    tdx_viewgen_free(vg);
    return rc;
}

/* The scalar fields a state opens with (after its 6-byte magic), in order: u unsigned, i zigzag. */
static const char FIELDS[] = "uuiiuuuuu"
                             "iiiiiiiiii"
                             "iiiiii"
                             "uuuuui";
enum { F_GST0 = 9, F_TH0 = 19, F_MAX_PROC = 30 };

/* s with scalar field k set to v (zigzag for a signed one). */
static void with_field(const tdx_buf *s, int k, int64_t v, tdx_buf *out) {
    const uint8_t *p = s->v + 6, *end = s->v + s->n;
    for (int i = 0; i < k; i++) {
        uint64_t x;
        int r = tdx_uvarint(p, end, &x);
        cr_assert_gt(r, 0);
        p += r;
    }
    uint64_t old;
    int r = tdx_uvarint(p, end, &old);
    cr_assert_gt(r, 0);
    out->n = 0;
    uint8_t enc[TDX_VARINT_MAX];
    uint64_t u = FIELDS[k] == 'i' ? tdx_zigzag(v) : (uint64_t)v;
    cr_assert_eq(tdx_buf_append(out, s->v, (size_t)(p - s->v)), 0);
    cr_assert_eq(tdx_buf_append(out, enc, (size_t)tdx_put_uvarint(enc, u)), 0);
    cr_assert_eq(tdx_buf_append(out, p + r, (size_t)(end - p - r)), 0);
}

static void check_bounds(int view) {
    fixture f;
    setup(&f, view);
    tdx_viewgen *vg = tdx_viewgen_new(&f.opts, &f.store, &f.frames, drop, NULL);
    cr_assert_not_null(vg);
    tdx_buf saved = {0}, b = {0};
    cr_assert_eq(tdx_viewgen_save(vg, &saved), 0);
    tdx_viewgen_free(vg);
    cr_assert_eq(restore(&f, saved.v, saved.n), 0, "the saved state itself");
    /* in range: accepted (the rewriting is right) */
    with_field(&saved, F_MAX_PROC, TDX_VIEW_MAX_PROC, &b);
    cr_expect_eq(restore(&f, b.v, b.n), 0, "largest proc id %d", TDX_VIEW_MAX_PROC);
    with_field(&saved, F_GST0 + 2, -5, &b);
    cr_expect_eq(restore(&f, b.v, b.n), 0, "a goroutine counter of -5");
    /* out of range: refused */
    int64_t procs[] = {TDX_VIEW_MAX_PROC + 1, (int64_t)1 << 40, INT64_MAX, -1};
    for (size_t i = 0; i < sizeof procs / sizeof *procs; i++) {
        with_field(&saved, F_MAX_PROC, procs[i], &b);
        cr_expect_eq(restore(&f, b.v, b.n), -1, "largest proc id %lld", (long long)procs[i]);
    }
    int64_t counters[] = {INT64_MIN, INT64_MAX, INT64_MAX / 2};
    for (size_t i = 0; i < sizeof counters / sizeof *counters; i++)
        for (int k = 0; k < 5; k += 2) {
            with_field(&saved, F_GST0 + 2 * k, counters[i], &b);
            cr_expect_eq(restore(&f, b.v, b.n), -1, "goroutine counter %d = %lld", k,
                         (long long)counters[i]);
            if (k < 3) {
                with_field(&saved, F_TH0 + 2 * k, counters[i], &b);
                cr_expect_eq(restore(&f, b.v, b.n), -1, "thread counter %d = %lld", k,
                             (long long)counters[i]);
            }
        }
    tdx_vec_free(&saved);
    tdx_vec_free(&b);
    teardown(&f);
}

Test(viewgen, restore_refuses_out_of_range_state) {
    check_bounds(TDX_VIEW_PROC);
    check_bounds(TDX_VIEW_THREAD);
}
