/* test_rawev.c: core/rawev.c reads wire events as Go's raw reader does: each type's arguments,
 * frames and data, Go's EncodedSize (uvarints at their shortest), and its errors with the
 * offset of the bad byte; core/footprint.c sums them by type. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "core/footprint.h"
#include "core/rawev.h"

/* A header of version v, then n bytes of events. */
static size_t trace(uint8_t *buf, int v, const uint8_t *ev, size_t n) {
    memset(buf, 0, 16);
    snprintf((char *)buf, 16, "go 1.%d trace", v);
    memcpy(buf + 16, ev, n);
    return 16 + n;
}

Test(rawev, events_and_sizes) {
    /* Stack id=3 nframes=1 {pc=300 func=1 file=2 line=7}; String id=1 "ab"; Frequency 1 as
     * a padded 81 00 */
    static const uint8_t ev[] = {3, 3, 1, 0xac, 0x02, 1, 2, 7, 5, 1, 2, 'a', 'b', 8, 0x81, 0x00};
    uint8_t buf[64];
    size_t n = trace(buf, 22, ev, sizeof ev);
    tdx_rawreader r;
    tdx_rawev e;
    tdx_err err;
    cr_assert_eq(tdx_rawreader_init(&r, buf, n, &err), 0, "%s", err.msg);
    cr_assert_eq(tdx_rawreader_next(&r, &e, &err), 1, "%s", err.msg);
    cr_expect(e.type == 3 && e.args[0] == 3 && e.args[1] == 1 && e.off == 16 && e.canon == 8);
    cr_expect(e.frames == buf + 19);
    cr_assert_eq(tdx_rawreader_next(&r, &e, &err), 1, "%s", err.msg);
    cr_expect(e.type == 5 && e.args[0] == 1 && e.ndata == 2 && memcmp(e.data, "ab", 2) == 0);
    cr_expect_eq(e.canon, 5);
    cr_assert_eq(tdx_rawreader_next(&r, &e, &err), 1, "%s", err.msg);
    cr_expect(e.type == 8 && e.args[0] == 1 && e.canon == 2, "padded: %lu", (unsigned long)e.canon);
    cr_expect_eq(tdx_rawreader_next(&r, &e, &err), 0);

    tdx_footprint fp;
    cr_assert_eq(tdx_footprint_count(buf, n, false, &fp, &err), 0, "%s", err.msg);
    cr_expect(fp.version == 22 && fp.events == 3 && fp.total == n);
    cr_expect(fp.bytes[3] == 8 && fp.bytes[5] == 5 && fp.bytes[8] == 2 && fp.count[8] == 1);
}

/* Each error names the byte it is at. */
static void expect_error(int v, const uint8_t *ev, size_t n, uint64_t off, const char *msg) {
    uint8_t buf[64];
    size_t len = trace(buf, v, ev, n);
    tdx_footprint fp;
    tdx_err err;
    cr_assert_eq(tdx_footprint_count(buf, len, false, &fp, &err), -1);
    cr_expect_eq(err.offset, off, "%s: offset %lu", msg, (unsigned long)err.offset);
    cr_expect(strstr(err.msg, msg) != NULL, "%s", err.msg);
}

Test(rawev, errors) {
    static const uint8_t cut[] = {8, 0x81}, type45[] = {45}, type60[] = {60}, none[] = {0};
    static const uint8_t past[] = {5, 1, 9, 'a'}, frames[] = {3, 3, 2, 1, 1, 1, 1, 1};
    static const uint8_t huge[] = {8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    expect_error(22, cut, sizeof cut, 17, "unexpected EOF");
    expect_error(22, type45, 1, 16, "invalid event type: 45");
    expect_error(23, type45, 1, 16 + 1, "unexpected EOF"); /* (45 is 1.23's: its dt is cut) */
    expect_error(26, type60, 1, 16, "invalid event type: 60");
    expect_error(26, none, 1, 16, "invalid event type: 0");
    expect_error(22, past, sizeof past, 19, "runs past the end");
    expect_error(22, frames, sizeof frames, 16 + 8, "unexpected EOF"); /* the second frame */
    expect_error(22, huge, sizeof huge, 17, "overflow");
}
