/* test_filevec.c: index/filevec.c: appended ranges read back the same before and after they are
 * written out and after the mapping's pages are given back; the reservation is a hard limit. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "index/filevec.h"

static const char beside[] = "/tmp/filevec-test.tidx";

/* Record i: i % 97 + 1 bytes, each (i * 31 + k) & 0xff. */
static size_t rec(size_t i, uint8_t *out) {
    size_t n = i % 97 + 1;
    for (size_t k = 0; k < n; k++) out[k] = (uint8_t)(i * 31 + k);
    return n;
}

static void check_all(const tdx_fvec *v, const uint64_t *off, size_t n) {
    uint8_t want[128];
    for (size_t i = 0; i < n; i++) {
        size_t len = rec(i, want);
        cr_assert_eq(memcmp(tdx_fvec_at(v, off[i]), want, len), 0, "record %zu", i);
    }
}

Test(filevec, appends_read_back_through_buffer_file_and_release) {
    tdx_fvec v;
    tdx_err err;
    cr_assert_eq(tdx_fvec_open(&v, beside, (size_t)64 << 20, &err), 0, "%s", err.msg);
    /* Enough records that the scratch file's 1 MiB buffer is written out several times. */
    enum { N = 60000 };
    uint64_t *off = malloc(N * sizeof *off);
    cr_assert_not_null(off);
    uint8_t buf[128];
    for (size_t i = 0; i < N; i++) {
        off[i] = tdx_fvec_len(&v);
        size_t n = rec(i, buf);
        cr_assert_eq(tdx_fvec_append(&v, buf, n, &err), 0, "%s", err.msg);
        /* The newest record reads back at once, from the buffer or the file. */
        cr_assert_eq(memcmp(tdx_fvec_at(&v, off[i]), buf, n), 0, "record %zu", i);
    }
    cr_assert_gt(tdx_fvec_len(&v), (uint64_t)2 << 20);
    check_all(&v, off, N);
    cr_assert_eq(tdx_fvec_flush(&v, &err), 0, "%s", err.msg);
    check_all(&v, off, N);
    tdx_fvec_release(&v); /* pages come back from the page cache */
    check_all(&v, off, N);
    tdx_fvec_close(&v);
    free(off);
}

Test(filevec, reservation_is_a_limit) {
    tdx_fvec v;
    tdx_err err;
    cr_assert_eq(tdx_fvec_open(&v, beside, 4096, &err), 0, "%s", err.msg);
    uint8_t buf[1000] = {1};
    for (int i = 0; i < 4; i++) cr_assert_eq(tdx_fvec_append(&v, buf, sizeof buf, &err), 0);
    cr_assert_eq(tdx_fvec_append(&v, buf, 97, &err), -1, "4097 bytes in 4096");
    cr_assert_eq(err.kind, TDX_ENOMEM);
    cr_assert_eq(tdx_fvec_append(&v, buf, 96, &err), 0, "exactly full is allowed");
    cr_assert_eq(tdx_fvec_append(&v, buf, 1, &err), -1);
    cr_assert_eq(tdx_fvec_len(&v), 4096);
    cr_assert_eq(memcmp(tdx_fvec_at(&v, 4000), buf, 96), 0);
    tdx_fvec_close(&v);
}
