/* test_varint.c: core/varint.h against Go's encoding/binary uvarint rules (wire-format spec 2.2).
 * Every decode runs on an exact-size heap copy whose last byte is the last input byte, so an
 * over-read past `end` is caught by AddressSanitizer. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "core/varint.h"

/* Decodes bytes[0..n) from an exact-size heap copy. Returns tdx_uvarint's result. */
static int decode_guarded(const uint8_t *bytes, size_t n, uint64_t *out) {
    uint8_t *buf = malloc(n ? n : 1);
    cr_assert_not_null(buf);
    if (n) memcpy(buf, bytes, n);
    int r = tdx_uvarint(buf, buf + n, out);
    free(buf);
    return r;
}

static void expect_value(const uint8_t *bytes, size_t n, uint64_t want, int want_len) {
    uint64_t v = 0xdeadbeef;
    int r = decode_guarded(bytes, n, &v);
    cr_expect_eq(r, want_len, "decode of %zu bytes (first %02x) returned %d, want %d", n,
                 n ? bytes[0] : 0, r, want_len);
    cr_expect_eq(v, want, "decoded %llu, want %llu", (unsigned long long)v,
                 (unsigned long long)want);
}

static void expect_error(const uint8_t *bytes, size_t n, int want) {
    uint64_t v = 0;
    int r = decode_guarded(bytes, n, &v);
    cr_expect_eq(r, want, "decode of %zu bytes returned %d, want %d", n, r, want);
}

#define BYTES(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

static void varint__spec_examples(void) {
    expect_value(BYTES(0x00), 0, 1);
    expect_value(BYTES(0x7f), 127, 1);
    expect_value(BYTES(0x80, 0x01), 128, 2);
    expect_value(BYTES(0xac, 0x02), 300, 2);
    expect_value(BYTES(0x80, 0x80, 0x01), 16384, 3);
    expect_value(BYTES(0xa8, 0xd6, 0xb9, 0x07), 15625000, 4);
    expect_value(BYTES(0x80, 0x94, 0xeb, 0xdc, 0x03), 1000000000, 5);
    expect_value(BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), UINT64_MAX, 10);
}

/* Every length 1..10 at both ends of its range, bytes built by hand here. */
static void varint__every_length(void) {
    for (int k = 1; k <= 10; k++) {
        uint64_t lo = k == 1 ? 0 : (uint64_t)1 << (7 * (k - 1));
        uint64_t hi = k == 10 ? UINT64_MAX : ((uint64_t)1 << (7 * k)) - 1;
        uint64_t vals[2] = {lo, hi};
        for (int w = 0; w < 2; w++) {
            uint8_t b[10];
            uint64_t v = vals[w];
            for (int i = 0; i < k; i++) {
                b[i] = (uint8_t)((v >> (7 * i)) & 0x7f);
                if (i < k - 1) b[i] |= 0x80;
            }
            expect_value(b, (size_t)k, v, k);
            cr_expect_eq(tdx_uvarint_len(v), k, "uvarint_len(%llu)", (unsigned long long)v);
            uint8_t e[10];
            cr_expect_eq(tdx_put_uvarint(e, v), k);
            cr_expect(memcmp(e, b, (size_t)k) == 0, "put_uvarint(%llu) bytes",
                      (unsigned long long)v);
        }
    }
}

static void varint__max_ten_bytes(void) {
    /* 10th byte 0x01: bit 63. */
    expect_value(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01),
                 (uint64_t)1 << 63, 10);
    /* 10th byte 0x00: a padded zero, valid. */
    expect_value(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), 0, 10);
    /* The runtime's padded 10-byte batch size field. */
    expect_value(BYTES(0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), 5, 10);
    expect_value(BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00), UINT64_MAX >> 1,
                 10);
}

static void varint__overflow(void) {
    /* 10th byte > 1. */
    expect_error(BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02),
                 TDX_VARINT_OVERFLOW);
    expect_error(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02),
                 TDX_VARINT_OVERFLOW);
    expect_error(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f),
                 TDX_VARINT_OVERFLOW);
    /* Ten continuation bytes, exactly at the end of input: no 11th byte is read. */
    expect_error(BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
                 TDX_VARINT_OVERFLOW);
    expect_error(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80),
                 TDX_VARINT_OVERFLOW);
    /* Ten continuation bytes followed by a terminator: still an overflow. */
    expect_error(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00),
                 TDX_VARINT_OVERFLOW);
    expect_error(BYTES(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
                 TDX_VARINT_OVERFLOW);
}

static void varint__non_minimal_accepted(void) {
    expect_value(BYTES(0x85, 0x00), 5, 2);
    expect_value(BYTES(0x81, 0x80, 0x00), 1, 3);
    expect_value(BYTES(0x80, 0x00), 0, 2);
    expect_value(BYTES(0xff, 0x80, 0x80, 0x00), 127, 4);
}

static void varint__truncation(void) {
    uint64_t v;
    /* Empty input: EOF, also with p == end on a real pointer. */
    uint8_t one = 0x80;
    cr_expect_eq(tdx_uvarint(&one, &one, &v), TDX_VARINT_EOF);
    expect_error(NULL, 0, TDX_VARINT_EOF);
    /* Cut short after at least one byte: unexpected EOF. */
    expect_error(BYTES(0x80), TDX_VARINT_UNEXPECTED);
    expect_error(BYTES(0xff, 0xff), TDX_VARINT_UNEXPECTED);
    expect_error(BYTES(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80),
                 TDX_VARINT_UNEXPECTED);
    for (size_t k = 1; k < 10; k++) {
        uint8_t b[9];
        memset(b, 0x81, sizeof b);
        expect_error(b, k, TDX_VARINT_UNEXPECTED);
    }
}

static void varint__stops_at_terminator(void) {
    /* Trailing bytes are left alone. */
    expect_value(BYTES(0x05, 0xff, 0xff), 5, 1);
    expect_value(BYTES(0xac, 0x02, 0x80), 300, 2);
}

static void varint__strerror_texts(void) {
    cr_expect_str_eq(tdx_varint_strerror(TDX_VARINT_EOF), "EOF");
    cr_expect_str_eq(tdx_varint_strerror(TDX_VARINT_UNEXPECTED), "unexpected EOF");
    cr_expect_str_eq(tdx_varint_strerror(TDX_VARINT_OVERFLOW),
                     "binary: varint overflows a 64-bit integer");
}

Test(varint, uvarint_len) {
    cr_expect_eq(tdx_uvarint_len(0), 1);
    cr_expect_eq(tdx_uvarint_len(127), 1);
    cr_expect_eq(tdx_uvarint_len(128), 2);
    cr_expect_eq(tdx_uvarint_len(16383), 2);
    cr_expect_eq(tdx_uvarint_len(16384), 3);
    cr_expect_eq(tdx_uvarint_len(15625000), 4);
    cr_expect_eq(tdx_uvarint_len(1000000000), 5);
    cr_expect_eq(tdx_uvarint_len(((uint64_t)1 << 63) - 1), 9);
    cr_expect_eq(tdx_uvarint_len((uint64_t)1 << 63), 10);
    cr_expect_eq(tdx_uvarint_len(UINT64_MAX), 10);
}

static uint64_t xs_state = 0x9e3779b97f4a7c15ULL;
static uint64_t xs(void) {
    uint64_t x = xs_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return xs_state = x;
}

/* Random values of every bit width; each decode reads from the tail of an exact 10-byte heap
 * buffer so that any read beyond the encoding's last byte is an ASan error. */
Test(varint, random_round_trip) {
    uint8_t *guard = malloc(TDX_VARINT_MAX);
    cr_assert_not_null(guard);
    for (int i = 0; i < 100000; i++) {
        int bits = (int)(xs() % 65);
        uint64_t v = bits == 64 ? xs() : xs() & (((uint64_t)1 << bits) - 1);
        uint8_t enc[TDX_VARINT_MAX];
        int n = tdx_put_uvarint(enc, v);
        cr_assert(n >= 1 && n <= 10);
        cr_assert_eq(n, tdx_uvarint_len(v));
        if (n > 1) cr_assert(enc[n - 1] != 0, "put_uvarint must be minimal");
        uint8_t *p = guard + TDX_VARINT_MAX - n;
        memcpy(p, enc, (size_t)n);
        uint64_t got = ~v;
        int r = tdx_uvarint(p, guard + TDX_VARINT_MAX, &got);
        cr_assert_eq(r, n, "value %llu: decode length %d, want %d", (unsigned long long)v, r, n);
        cr_assert_eq(got, v);
        /* Every strict prefix is an unexpected EOF (or EOF when empty). */
        if (i % 16 == 0) {
            for (int k = 0; k < n; k++) {
                uint8_t *q = guard + TDX_VARINT_MAX - k;
                memcpy(q, enc, (size_t)k);
                int e = tdx_uvarint(q, guard + TDX_VARINT_MAX, &got);
                cr_assert_eq(e, k == 0 ? TDX_VARINT_EOF : TDX_VARINT_UNEXPECTED);
            }
        }
    }
    free(guard);
}

/* ---- registered tests (grouped to keep the number of forked test processes small) ---- */

Test(varint, decodes_values) {
    varint__spec_examples();
    varint__every_length();
    varint__max_ten_bytes();
    varint__non_minimal_accepted();
    varint__stops_at_terminator();
}

Test(varint, errors) {
    varint__overflow();
    varint__truncation();
    varint__strerror_texts();
}
