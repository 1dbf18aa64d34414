/* test_gofmt.c: core/gofmt.h tdx_go_duration against Go's time.Duration.String(). */
#include <criterion/criterion.h>

#include <string.h>

#include "core/gofmt.h"

static void check(int64_t ns, const char *want) {
    char buf[64];
    memset(buf, 'X', sizeof buf);
    int n = tdx_go_duration(buf, 40, ns);
    cr_expect_str_eq(buf, want, "Duration(%lld)", (long long)ns);
    cr_expect_eq(n, (int)strlen(want), "Duration(%lld): length %d, want %zu", (long long)ns, n,
                 strlen(want));
}

static void go_duration__zero_and_sub_microsecond(void) {
    check(0, "0s");
    check(1, "1ns");
    check(12, "12ns");
    check(999, "999ns");
}

static void go_duration__microseconds_use_micro_sign(void) {
    check(1000, "1\xc2\xb5s");
    check(1500, "1.5\xc2\xb5s");
    check(1001, "1.001\xc2\xb5s");
    check(999999, "999.999\xc2\xb5s");
}

static void go_duration__milliseconds(void) {
    check(1000000, "1ms");
    check(1500000, "1.5ms");
    check(1000001, "1.000001ms");
    check(999999999, "999.999999ms");
}

static void go_duration__seconds_minutes_hours(void) {
    check(1000000000, "1s");
    check(2500000000LL, "2.5s");
    check(1000000001, "1.000000001s");
    check(59999999999LL, "59.999999999s");
    check(60000000000LL, "1m0s");
    check(61000000000LL, "1m1s");
    check(120000000000LL, "2m0s");
    check(3599000000000LL, "59m59s");
    check(3600000000000LL, "1h0m0s");
    check(3600500000000LL, "1h0m0.5s");
    check(3723000000000LL, "1h2m3s");
    check(90061001000000LL, "25h1m1.001s");
}

static void go_duration__negative(void) {
    check(-1, "-1ns");
    check(-999, "-999ns");
    check(-1500, "-1.5\xc2\xb5s");
    check(-1500000, "-1.5ms");
    check(-2500000000LL, "-2.5s");
    check(-61000000000LL, "-1m1s");
    check(-3600500000000LL, "-1h0m0.5s");
}

static void go_duration__extremes(void) {
    check(INT64_MAX, "2562047h47m16.854775807s");
    check(INT64_MIN, "-2562047h47m16.854775808s");
    check(INT64_MIN + 1, "-2562047h47m16.854775807s");
}

/* With a small buffer the text is cut and always NUL-terminated; the full length is returned. */
Test(go_duration, truncation) {
    char buf[8];
    memset(buf, 'X', sizeof buf);
    buf[7] = 0;
    cr_expect_eq(tdx_go_duration(buf, 4, 2500000000LL), 4);
    cr_expect_str_eq(buf, "2.5");
    memset(buf, 'X', sizeof buf);
    buf[7] = 0;
    cr_expect_eq(tdx_go_duration(buf, 1, 1500), 6);
    cr_expect_str_eq(buf, "");
    cr_expect_eq(tdx_go_duration(NULL, 0, 3600000000000LL), 6);
}

Test(go_duration, truncation_of_zero) {
    char buf[8];
    memset(buf, 'X', sizeof buf);
    buf[7] = 0;
    cr_expect_eq(tdx_go_duration(buf, 2, 0), 2);
    cr_expect_eq(buf[1], '\0', "cap 2 leaves room for \"0\" and the terminator");
    cr_expect_str_eq(buf, "0");
    memset(buf, 'X', sizeof buf);
    buf[7] = 0;
    cr_expect_eq(tdx_go_duration(buf, 1, 0), 2);
    cr_expect_eq(buf[0], '\0');
    cr_expect_eq(tdx_go_duration(NULL, 0, 0), 2);
}

/* ---- registered tests (grouped to keep the number of forked test processes small) ---- */

Test(go_duration, formats) {
    go_duration__zero_and_sub_microsecond();
    go_duration__microseconds_use_micro_sign();
    go_duration__milliseconds();
    go_duration__seconds_minutes_hours();
    go_duration__negative();
    go_duration__extremes();
}
