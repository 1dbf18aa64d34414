/* test_mem.c: core/mem.h's growable buffer: tdx_buf_printf appends exactly what snprintf would
 * write, whether the text fits the room already at the end of the buffer (formatted once) or not
 * (the buffer grows and the text is formatted again), to empty and non-empty buffers. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "core/mem.h"

#define BIG 65536
static char xs[BIG], want[4 * BIG];

/* Appends "<tag>:<n x's>" with tdx_buf_printf and checks the whole buffer against the text
 * snprintf builds beside it. */
static void append_and_check(tdx_buf *b, size_t *wn, const char *tag, size_t n) {
    cr_assert(n < BIG && *wn + n + 64 < sizeof want);
    cr_assert_eq(tdx_buf_printf(b, "%s:%.*s", tag, (int)n, xs), 0);
    *wn += (size_t)snprintf(want + *wn, sizeof want - *wn, "%s:%.*s", tag, (int)n, xs);
    cr_assert_eq(b->n, *wn, "%s (%zu): %zu bytes, want %zu", tag, n, b->n, *wn);
    cr_assert(memcmp(b->v, want, *wn) == 0, "%s (%zu): the text differs", tag, n);
}

Test(mem, buf_printf_appends_texts_that_fit_and_texts_that_do_not) {
    memset(xs, 'x', sizeof xs);
    size_t wn = 0;
    tdx_buf b = {0};
    append_and_check(&b, &wn, "short", 3);   /* into an empty buffer */
    append_and_check(&b, &wn, "long", 3000); /* more than the room at the end */
    append_and_check(&b, &wn, "again", 10);  /* into what the growth left */
    /* the text and its NUL exactly filling the room, then one byte more than it */
    for (size_t extra = 0; extra < 2; extra++) {
        cr_assert_eq(tdx_vec_reserve(&b, b.n + 1000), 0);
        size_t room = b.cap - b.n;
        cr_assert(room >= 1000 && room < BIG);
        append_and_check(&b, &wn, "edge", room - 6 + extra); /* "edge:" + n + NUL */
    }
    for (size_t n = 0; n < 300; n += 7) append_and_check(&b, &wn, "run", n);
    tdx_vec_free(&b);
}
