/* test_quote.c: core/quote against outputs of Go's strconv and encoding/json.
 * Expected strings were produced by Go itself (JSON \b and \f as Go >= 1.22 writes them). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quote.h"
#include "core/unicode_tables.h"

/* A literal as (pointer, length) so embedded NULs count. */
#define S(lit) (const uint8_t *)(lit), sizeof(lit) - 1

/* Renders bytes printable for failure messages into dst. */
#define SHOWN 1024
static const char *show(char dst[SHOWN], const void *data, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const uint8_t *p = data;
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < SHOWN; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f) {
            dst[o++] = (char)p[i];
        } else {
            dst[o++] = '<';
            dst[o++] = hex[p[i] >> 4];
            dst[o++] = hex[p[i] & 15];
            dst[o++] = '>';
        }
    }
    dst[o] = '\0';
    return dst;
}

static void expect_bytes(const char *what, const void *in, size_t inn, const tdx_buf *got,
                         const char *want, size_t wantn) {
    char a[SHOWN], b[SHOWN], c[SHOWN];
    /* got->v is NULL while nothing has been appended, and memcmp must not see NULL. */
    cr_expect(got->n == wantn && (wantn == 0 || memcmp(got->v, want, wantn) == 0),
              "%s(%s) = %s, want %s", what, show(a, in, inn), show(b, got->v, got->n),
              show(c, want, wantn));
}

static void check_quote(const uint8_t *s, size_t n, const char *want) {
    tdx_buf b = {0};
    cr_assert_eq(tdx_go_quote(&b, s, n), 0);
    expect_bytes("quote", s, n, &b, want, strlen(want));
    tdx_vec_free(&b);
}

static void check_json(const uint8_t *s, size_t n, const char *want) {
    char shown[SHOWN];
    tdx_buf b = {0};
    cr_assert_eq(tdx_json_quote(&b, s, n), 0);
    expect_bytes("json", s, n, &b, want, strlen(want));
    cr_expect_eq(tdx_json_quote_len(s, n), b.n, "json_quote_len(%s)", show(shown, s, n));
    tdx_vec_free(&b);
}

/* want/wantn: the decoded bytes (may hold NULs). */
static void check_unquote(const char *lit, size_t litn, const char *want, size_t wantn) {
    char shown[SHOWN];
    tdx_buf b = {0};
    const char *why = NULL;
    int rc = tdx_go_unquote(lit, litn, &b, &why);
    cr_expect_eq(rc, 0, "unquote(%s) failed: %s", show(shown, lit, litn), why ? why : "?");
    if (rc == 0) expect_bytes("unquote", lit, litn, &b, want, wantn);
    tdx_vec_free(&b);
}

static void check_unquote_fails(const char *lit, size_t litn) {
    char shown[SHOWN];
    tdx_buf b = {0};
    const char *why = NULL;
    cr_expect_eq(tdx_go_unquote(lit, litn, &b, &why), -1, "unquote(%s) accepted",
                 show(shown, lit, litn));
    cr_expect(why != NULL && strcmp(why, "invalid syntax") == 0, "why = %s", why ? why : "NULL");
    tdx_vec_free(&b);
}

#define QUOTE(lit, want) check_quote(S(lit), want)
#define JSON(lit, want) check_json(S(lit), want)
#define UNQUOTE(lit, want) check_unquote(lit, sizeof(lit) - 1, want, sizeof(want) - 1)
#define UNQUOTE_FAILS(lit) check_unquote_fails(lit, sizeof(lit) - 1)

/* ---- strconv.Quote ---- */

Test(quote, ascii) {
    QUOTE("", "\"\"");
    QUOTE("hello, world", "\"hello, world\"");
    QUOTE(" ~'`{}", "\" ~'`{}\"");
}

Test(quote, quotes_and_backslash) {
    QUOTE("\"", "\"\\\"\"");
    QUOTE("\\", "\"\\\\\"");
    QUOTE("a\"b\\c", "\"a\\\"b\\\\c\"");
}

Test(quote, letter_escapes) {
    QUOTE("\a\b\f\n\r\t\v", "\"\\a\\b\\f\\n\\r\\t\\v\"");
    QUOTE("x\ny", "\"x\\ny\"");
}

Test(quote, control_bytes) {
    QUOTE("\x00", "\"\\x00\"");
    QUOTE("\x01\x1b\x1f", "\"\\x01\\x1b\\x1f\"");
    QUOTE("\x7f", "\"\\x7f\"");
    QUOTE("a\000b", "\"a\\x00b\"");
}

Test(quote, invalid_utf8) {
    QUOTE("\xff", "\"\\xff\"");
    QUOTE("\x80", "\"\\x80\"");
    QUOTE("a\377b", "\"a\\xffb\"");
    QUOTE("\xc0\x80", "\"\\xc0\\x80\""); /* overlong NUL */
    QUOTE("\xe6\x97", "\"\\xe6\\x97\""); /* truncated 日 */
    QUOTE("\346\227a", "\"\\xe6\\x97a\"");
    QUOTE("\xf0\x9f\x98", "\"\\xf0\\x9f\\x98\"");          /* truncated 😀 */
    QUOTE("\xed\xa0\x80", "\"\\xed\\xa0\\x80\"");          /* encoded surrogate U+D800 */
    QUOTE("\xf4\x90\x80\x80", "\"\\xf4\\x90\\x80\\x80\""); /* U+110000 */
    QUOTE("\xf5\x80\x80\x80", "\"\\xf5\\x80\\x80\\x80\"");
}

Test(quote, printable_non_ascii) {
    QUOTE("\u00e9", "\"\u00e9\"");
    QUOTE("\u65e5\u672c", "\"\u65e5\u672c\"");
    QUOTE("\U0001F600", "\"\U0001F600\"");
    QUOTE("\u263a", "\"\u263a\"");
    QUOTE("\xef\xbf\xbd", "\"\xef\xbf\xbd\""); /* a real U+FFFD is printable */
    QUOTE("\u00a1\u00ae", "\"\u00a1\u00ae\"");
}

Test(quote, non_printable_non_ascii) {
    QUOTE("\u00ad", "\"\\u00ad\"");
    QUOTE("\u200b", "\"\\u200b\"");
    QUOTE("\ue000", "\"\\ue000\"");
    QUOTE("\U000F0000", "\"\\U000f0000\"");
    QUOTE("\U0010FFFF", "\"\\U0010ffff\"");
    QUOTE("\u00a0", "\"\\u00a0\""); /* spaces other than U+0020 are not printable */
    QUOTE("\u3000", "\"\\u3000\"");
    QUOTE("\xc2\x85", "\"\\u0085\""); /* C1 control U+0085: \u, not \x */
    QUOTE("\ufeff", "\"\\ufeff\"");
    QUOTE("\U000E0001", "\"\\U000e0001\"");
    QUOTE("a\u2028b", "\"a\\u2028b\"");
}

Test(quote, appends_to_existing_content) {
    tdx_buf b = {0};
    cr_assert_eq(tdx_buf_append(&b, "x=", 2), 0);
    cr_assert_eq(tdx_go_quote(&b, S("a\n")), 0);
    cr_expect(b.n == 7 && memcmp(b.v, "x=\"a\\n\"", 7) == 0);
    tdx_vec_free(&b);
}

/* ---- IsPrint and DecodeRune ---- */

Test(isprint, samples) {
    cr_expect(tdx_unicode_isprint(' '));
    cr_expect(tdx_unicode_isprint('~'));
    cr_expect(tdx_unicode_isprint('A'));
    cr_expect(!tdx_unicode_isprint(0x1f));
    cr_expect(!tdx_unicode_isprint(0x7f));
    cr_expect(!tdx_unicode_isprint(0x9f));
    cr_expect(!tdx_unicode_isprint(0xa0));
    cr_expect(tdx_unicode_isprint(0xa1));
    cr_expect(!tdx_unicode_isprint(0xad));
    cr_expect(tdx_unicode_isprint(0x263a));
    cr_expect(!tdx_unicode_isprint(0xd800));
    cr_expect(!tdx_unicode_isprint(0xe000));
    cr_expect(tdx_unicode_isprint(0xfffd));
    cr_expect(!tdx_unicode_isprint(0xfffe));
    cr_expect(tdx_unicode_isprint(0x10000));
    cr_expect(tdx_unicode_isprint(0x1f600));
    cr_expect(!tdx_unicode_isprint(0x10ffff));
    cr_expect(!tdx_unicode_isprint(0x110000));
    cr_expect(!tdx_unicode_isprint(0xffffffffu));
}

/* The lookup (ASCII fast path + both tables) must agree with the generator's own count. */
Test(isprint, total_matches_generator) {
    uint32_t count = 0;
    for (uint32_t r = 0; r <= 0x10ffff; r++) count += tdx_unicode_isprint(r) ? 1 : 0;
    cr_expect_eq(count, TDX_UNICODE_PRINT_COUNT, "%u printable, generator counted %u", count,
                 TDX_UNICODE_PRINT_COUNT);
}

static void check_decode(const uint8_t *p, size_t n, uint32_t want, int want_size) {
    char shown[SHOWN];
    int size = -1;
    uint32_t r = tdx_utf8_decode(p, n, &size);
    cr_expect(r == want && size == want_size, "decode(%s) = U+%04X/%d, want U+%04X/%d",
              show(shown, p, n), (unsigned)r, size, (unsigned)want, want_size);
}

#define DECODE(lit, want, size) check_decode(S(lit), want, size)

Test(utf8, decode) {
    DECODE("A", 'A', 1);
    DECODE("\x00", 0, 1);
    DECODE("\u00e9x", 0xe9, 2);
    DECODE("\u65e5", 0x65e5, 3);
    DECODE("\U0001F600", 0x1f600, 4);
    DECODE("\U0010FFFF", 0x10ffff, 4);
    DECODE("\xef\xbf\xbd", 0xfffd, 3);
    DECODE("\xff", 0xfffd, 1);
    DECODE("\x80", 0xfffd, 1);
    DECODE("\xc1\xbf", 0xfffd, 1);     /* overlong */
    DECODE("\xe0\x9f\xbf", 0xfffd, 1); /* overlong */
    DECODE("\xed\xa0\x80", 0xfffd, 1); /* surrogate */
    DECODE("\xed\x9f\xbf", 0xd7ff, 3);
    DECODE("\xf0\x8f\xbf\xbf", 0xfffd, 1); /* overlong */
    DECODE("\xf4\x90\x80\x80", 0xfffd, 1); /* > U+10FFFF */
    DECODE("\xe6\x97", 0xfffd, 1);         /* truncated */
    DECODE("\xf0\x9f\x98", 0xfffd, 1);
    DECODE("\346\227a", 0xfffd, 1);
}

/* ---- strconv.Unquote ---- */

Test(unquote, plain_and_escapes) {
    UNQUOTE("\"\"", "");
    UNQUOTE("\"abc\"", "abc");
    UNQUOTE("\"a'b\"", "a'b");
    UNQUOTE("\"\\a\\b\\f\\n\\r\\t\\v\\\\\\\"\"", "\a\b\f\n\r\t\v\\\"");
    UNQUOTE("\"\\x41\\x4a\\xff\"", "AJ\xff");
    UNQUOTE("\"\\xAb\"", "\xab");
    UNQUOTE("\"\\101\\377\\000\"", "A\xff\x00");
    UNQUOTE("\"\\u00e9\\u0041\"", "\u00e9A");
    UNQUOTE("\"\\u263a\"", "\u263a");
    UNQUOTE("\"\\U0001F600\\U0010ffff\"", "\U0001F600\U0010FFFF");
    UNQUOTE("\"\u65e5\u672c\"", "\u65e5\u672c");
    UNQUOTE("\"a\rb\"", "a\rb"); /* only raw newlines are refused */
}

/* Go decodes a double-quoted literal rune by rune, so a raw invalid byte becomes U+FFFD. */
Test(unquote, raw_invalid_byte_becomes_replacement) {
    UNQUOTE("\"\xff\"", "\xef\xbf\xbd");
    UNQUOTE("\"\xff\\n\"", "\xef\xbf\xbd\n");
    UNQUOTE("\"\xed\xa0\x80\"", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

Test(unquote, back_quoted) {
    UNQUOTE("``", "");
    UNQUOTE("`abc`", "abc");
    UNQUOTE("`a\\nb\"`", "a\\nb\"");
    UNQUOTE("`a\nb`", "a\nb");
    UNQUOTE("`a\r\nb\r`", "a\nb");
    UNQUOTE("`\xff`", "\xff"); /* raw strings are not decoded */
}

Test(unquote, errors) {
    UNQUOTE_FAILS("");
    UNQUOTE_FAILS("\"");
    UNQUOTE_FAILS("`");
    UNQUOTE_FAILS("abc");
    UNQUOTE_FAILS("\"abc");
    UNQUOTE_FAILS("abc\"");
    UNQUOTE_FAILS("`abc\"");
    UNQUOTE_FAILS(" \"abc\"");
    UNQUOTE_FAILS("\"\\q\"");
    UNQUOTE_FAILS("\"\\X41\"");
    UNQUOTE_FAILS("\"\\'\"");
    UNQUOTE_FAILS("\"\\x4\"");
    UNQUOTE_FAILS("\"\\x\"");
    UNQUOTE_FAILS("\"\\xg0\"");
    UNQUOTE_FAILS("\"\\400\"");
    UNQUOTE_FAILS("\"\\12\"");
    UNQUOTE_FAILS("\"\\8\"");
    UNQUOTE_FAILS("\"\\u12\"");
    UNQUOTE_FAILS("\"\\ud800\"");
    UNQUOTE_FAILS("\"\\udfff\"");
    UNQUOTE_FAILS("\"\\U00110000\"");
    UNQUOTE_FAILS("\"a\nb\"");
    UNQUOTE_FAILS("\"a\"b\"");
    UNQUOTE_FAILS("\"\\\"");
    UNQUOTE_FAILS("\"a\\\"");
    UNQUOTE_FAILS("`a`b`");
    /* Rune literals hold exactly one character, and \" belongs to double quotes. */
    UNQUOTE_FAILS("'ab'");
    UNQUOTE_FAILS("''");
    UNQUOTE_FAILS("'\\\"'");
    UNQUOTE_FAILS("'\\x4'");
}

Test(unquote, rune_literals) {
    /* Go's strconv.Unquote accepts a single-quoted character, as the text format's data= does. */
    UNQUOTE("'a'", "a");
    UNQUOTE("'\\''", "'");
    UNQUOTE("'\\n'", "\n");
    UNQUOTE("'\\x41'", "A");
    UNQUOTE("'\\u263a'", "\xe2\x98\xba");
    UNQUOTE("'\xc3\xa9'", "\xc3\xa9");
}

/* xorshift64*: a fixed sequence on every platform, unlike rand(). */
static uint64_t rng_next(uint64_t *st) {
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return *st * 2685821657736338717ull;
}

/* Random strings biased towards the bytes that matter to quoting. */
static size_t random_string(uint64_t *st, uint8_t *dst, size_t cap) {
    static const uint8_t special[] = {'"',  '\\', '\n', '\r', 0,    0x7f, 0x80, 0xbf, 0xc2,
                                      0xe2, 0x80, 0xa8, 0xed, 0xa0, 0xef, 0xf0, 0x9f, 0xf4,
                                      0xff, 'x',  'u',  '<',  '&',  '`',  '\''};
    size_t n = (size_t)(rng_next(st) % cap);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = rng_next(st);
        switch (x % 4) {
        case 0:
            dst[i] = (uint8_t)(x >> 8);
            break;
        case 1:
            dst[i] = (uint8_t)(0x20 + (x >> 8) % 0x5f);
            break;
        default:
            dst[i] = special[(x >> 8) % sizeof special];
            break;
        }
    }
    return n;
}

Test(quote, round_trip_random) {
    char shown[SHOWN];
    uint64_t st = 0x9e3779b97f4a7c15ull;
    uint8_t s[64];
    tdx_buf q = {0}, u = {0};
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = random_string(&st, s, sizeof s);
        q.n = u.n = 0;
        cr_assert_eq(tdx_go_quote(&q, s, n), 0);
        const char *why = NULL;
        int rc = tdx_go_unquote((const char *)q.v, q.n, &u, &why);
        cr_assert_eq(rc, 0, "unquote(%s): %s", show(shown, q.v, q.n), why ? why : "?");
        cr_assert(u.n == n && (n == 0 || memcmp(u.v, s, n) == 0), "round trip of %s",
                  show(shown, s, n));
    }
    tdx_vec_free(&q);
    tdx_vec_free(&u);
}

/* ---- encoding/json ---- */

Test(json, basics) {
    JSON("", "\"\"");
    JSON("abc 'x' `y` ~", "\"abc 'x' `y` ~\"");
    JSON("\"\\", "\"\\\"\\\\\"");
    JSON("\n\r\t", "\"\\n\\r\\t\"");
    JSON("\b\f", "\"\\b\\f\"");
    JSON("\x00\x01\x0b\x1f", "\"\\u0000\\u0001\\u000b\\u001f\"");
    JSON("\x7f", "\"\x7f\""); /* DEL stays raw */
}

Test(json, html_escapes) {
    JSON("<a href=\"x\">&amp;</a>",
         "\"\\u003ca href=\\\"x\\\"\\u003e\\u0026amp;\\u003c/a\\u003e\"");
}

Test(json, line_separators) {
    JSON("a\u2028b\u2029", "\"a\\u2028b\\u2029\"");
    JSON("\u2027\u202a", "\"\u2027\u202a\"");
}

Test(json, unicode_raw) {
    JSON("\u00e9\u65e5\u672c\U0001F600", "\"\u00e9\u65e5\u672c\U0001F600\"");
    JSON("\u00ad\u200b\ue000", "\"\u00ad\u200b\ue000\""); /* not printable, still raw */
    JSON("\xef\xbf\xbd", "\"\xef\xbf\xbd\"");
}

Test(json, invalid_utf8) {
    JSON("\xff", "\"\\ufffd\"");
    JSON("a\200b", "\"a\\ufffdb\"");
    JSON("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
    JSON("\xe6\x97", "\"\\ufffd\\ufffd\"");
    JSON("\xf0\x9f\x98!", "\"\\ufffd\\ufffd\\ufffd!\"");
}

Test(json, len_matches_random) {
    char shown[SHOWN];
    uint64_t st = 42;
    uint8_t s[64];
    tdx_buf b = {0};
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = random_string(&st, s, sizeof s);
        b.n = 0;
        cr_assert_eq(tdx_json_quote(&b, s, n), 0);
        cr_assert_eq(tdx_json_quote_len(s, n), b.n, "json_quote_len(%s)", show(shown, s, n));
    }
    tdx_vec_free(&b);
}

/* tdx_json_plain (16 bytes at a time where it can) against the bytes Go's encoder copies: every
 * byte value at every position of strings of 0..48 bytes. */
Test(json, plain_scan) {
    uint8_t s[48];
    for (size_t n = 0; n <= sizeof s; n++) {
        memset(s, 'a', sizeof s);
        cr_assert(tdx_json_plain(s, n), "plain, %zu bytes", n);
        for (size_t at = 0; at < n; at++) {
            for (int c = 0; c < 256; c++) {
                s[at] = (uint8_t)c;
                int want = c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' &&
                           c != '&';
                if (tdx_json_plain(s, n) != want)
                    cr_assert_fail("byte 0x%02x at %zu of %zu: plain %d", c, at, n, !want);
            }
            s[at] = 'a';
        }
    }
}

/* The frame name "<func>:<line>" quoted in one go equals quoting the composed text, escapes and
 * invalid UTF-8 at func's end included. */
Test(json, quote_frame_matches_composed) {
    static const uint8_t alphabet[] = {'a',  'Z',  '.',  '(',  '*',  ')',  '"',
                                       '\\', '<',  '&',  '\n', 0x01, 0xc3, 0xa9,
                                       0xe2, 0x80, 0xa8, 0xf0, 0x9f, 0xff, 0x7f};
    static const uint64_t lines[] = {0, 7, 42, 1234567, UINT64_MAX};
    srand(5);
    tdx_buf a = {0}, b = {0}, composed = {0};
    for (int it = 0; it < 20000; it++) {
        uint8_t f[12];
        size_t n = (size_t)(rand() % 12);
        for (size_t i = 0; i < n; i++) f[i] = alphabet[rand() % (int)sizeof alphabet];
        uint64_t line = lines[rand() % 5];
        char num[24];
        int k = snprintf(num, sizeof num, ":%llu", (unsigned long long)line);
        composed.n = a.n = b.n = 0;
        cr_assert_eq(tdx_buf_append(&composed, f, n) || tdx_buf_append(&composed, num, (size_t)k),
                     0);
        cr_assert_eq(tdx_json_quote(&a, composed.v, composed.n), 0);
        cr_assert_eq(tdx_json_quote_frame(&b, f, n, line), 0);
        expect_bytes("json_quote_frame", composed.v, composed.n, &b, (const char *)a.v, a.n);
    }
    tdx_vec_free(&a);
    tdx_vec_free(&b);
    tdx_vec_free(&composed);
}
