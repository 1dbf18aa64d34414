/* quote.c: Go-compatible string quoting; see quote.h for the exact rules reproduced. */
#include "quote.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "unicode_tables.h"

#define RUNE_ERROR 0xFFFDu
#define MAX_RUNE 0x10FFFFu

static const char hexdigits[] = "0123456789abcdef";
static const char msg_syntax[] = "invalid syntax";
static const char msg_oom[] = "out of memory";

/* Appends s[from..to); skips empty spans so a NULL s with n == 0 is never offset. */
static int append_span(tdx_buf *out, const uint8_t *s, size_t from, size_t to) {
    return from == to ? 0 : tdx_buf_append(out, s + from, to - from);
}

/* ---- UTF-8 ---- */

uint32_t tdx_utf8_decode(const uint8_t *p, size_t n, int *size) {
    uint8_t b0 = p[0];
    if (b0 < 0x80) {
        *size = 1;
        return b0;
    }
    /* The second byte's allowed range excludes overlong forms (E0, F0), surrogates (ED) and
     * values above U+10FFFF (F4); every later byte is a plain continuation byte. */
    size_t need;
    uint32_t r;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b0 < 0xC2 || b0 > 0xF4) goto bad;
    if (b0 < 0xE0) {
        need = 2;
        r = b0 & 0x1Fu;
    } else if (b0 < 0xF0) {
        need = 3;
        r = b0 & 0x0Fu;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else {
        need = 4;
        r = b0 & 0x07u;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    }
    if (n < 2 || p[1] < lo || p[1] > hi) goto bad;
    r = r << 6 | (p[1] & 0x3Fu);
    for (size_t i = 2; i < need; i++) {
        if (i >= n || p[i] < 0x80 || p[i] > 0xBF) goto bad;
        r = r << 6 | (p[i] & 0x3Fu);
    }
    *size = (int)need;
    return r;
bad:
    *size = 1;
    return RUNE_ERROR;
}

/* r must be a valid scalar value; returns the number of bytes written (1..4). */
static size_t utf8_encode(uint8_t *dst, uint32_t r) {
    if (r < 0x80) {
        dst[0] = (uint8_t)r;
        return 1;
    }
    if (r < 0x800) {
        dst[0] = (uint8_t)(0xC0 | r >> 6);
        dst[1] = (uint8_t)(0x80 | (r & 0x3F));
        return 2;
    }
    if (r < 0x10000) {
        dst[0] = (uint8_t)(0xE0 | r >> 12);
        dst[1] = (uint8_t)(0x80 | (r >> 6 & 0x3F));
        dst[2] = (uint8_t)(0x80 | (r & 0x3F));
        return 3;
    }
    dst[0] = (uint8_t)(0xF0 | r >> 18);
    dst[1] = (uint8_t)(0x80 | (r >> 12 & 0x3F));
    dst[2] = (uint8_t)(0x80 | (r >> 6 & 0x3F));
    dst[3] = (uint8_t)(0x80 | (r & 0x3F));
    return 4;
}

/* ---- IsPrint ---- */

/* Two copies of the same search because the tables have different element types. */
static int in_bmp(uint32_t r) {
    size_t lo = 0, hi = sizeof tdx_print_bmp / sizeof tdx_print_bmp[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r < tdx_print_bmp[mid][0]) {
            hi = mid;
        } else if (r > tdx_print_bmp[mid][1]) {
            lo = mid + 1;
        } else {
            return 1;
        }
    }
    return 0;
}

static int in_astral(uint32_t r) {
    size_t lo = 0, hi = sizeof tdx_print_astral / sizeof tdx_print_astral[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r < tdx_print_astral[mid][0]) {
            hi = mid;
        } else if (r > tdx_print_astral[mid][1]) {
            lo = mid + 1;
        } else {
            return 1;
        }
    }
    return 0;
}

int tdx_unicode_isprint(uint32_t r) {
    if (r < 0x80) return r >= 0x20 && r < 0x7F; /* the tables start at U+0080 */
    if (r <= 0xFFFF) return in_bmp(r);
    if (r > MAX_RUNE) return 0;
    return in_astral(r);
}

/* ---- strconv.Quote ---- */

/* Writes "\\" + tag + `digits` lower-case hex digits of v; returns the length. */
static size_t hex_escape(char *dst, char tag, uint32_t v, int digits) {
    dst[0] = '\\';
    dst[1] = tag;
    for (int k = 0; k < digits; k++) dst[2 + k] = hexdigits[(v >> (4 * (digits - 1 - k))) & 0xF];
    return (size_t)digits + 2;
}

int tdx_go_quote(tdx_buf *out, const uint8_t *s, size_t n) {
    /* Most strings need no escapes, so reserving n + 2 usually avoids regrowth. */
    if (n > SIZE_MAX - 2 - out->n || tdx_vec_reserve(out, out->n + n + 2)) return -1;
    out->v[out->n++] = '"';
    size_t run = 0, i = 0; /* s[run..i) is pending output copied verbatim */
    while (i < n) {
        uint8_t c = s[i];
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            i++;
            continue;
        }
        int w = 1;
        uint32_t r = c < 0x80 ? c : tdx_utf8_decode(s + i, n - i, &w);
        char esc[10];
        size_t elen;
        if (w == 1 && r == RUNE_ERROR) {
            elen = hex_escape(esc, 'x', c, 2); /* one escape per undecodable byte */
        } else if (r == '"' || r == '\\') {
            esc[0] = '\\';
            esc[1] = (char)r;
            elen = 2;
        } else if (tdx_unicode_isprint(r)) {
            i += (size_t)w;
            continue;
        } else {
            char letter = 0;
            switch (r) {
            case '\a':
                letter = 'a';
                break;
            case '\b':
                letter = 'b';
                break;
            case '\f':
                letter = 'f';
                break;
            case '\n':
                letter = 'n';
                break;
            case '\r':
                letter = 'r';
                break;
            case '\t':
                letter = 't';
                break;
            case '\v':
                letter = 'v';
                break;
            }
            if (letter) {
                esc[0] = '\\';
                esc[1] = letter;
                elen = 2;
            } else if (r < 0x20 || r == 0x7F) {
                elen = hex_escape(esc, 'x', r, 2);
            } else if (r < 0x10000) {
                elen = hex_escape(esc, 'u', r, 4);
            } else {
                elen = hex_escape(esc, 'U', r, 8);
            }
        }
        if (append_span(out, s, run, i) || tdx_buf_append(out, esc, elen)) return -1;
        i += (size_t)w;
        run = i;
    }
    if (append_span(out, s, run, n) || tdx_buf_append(out, "\"", 1)) return -1;
    return 0;
}

/* ---- strconv.Unquote ---- */

static int fail(const char **why, const char *msg) {
    if (why) *why = msg;
    return -1;
}

static int hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Parses exactly `digits` hex digits from p[0..avail); -1 when too few or not hex. */
static int64_t parse_hex(const uint8_t *p, size_t avail, int digits) {
    if (avail < (size_t)digits) return -1;
    int64_t v = 0;
    for (int k = 0; k < digits; k++) {
        int d = hexval(p[k]);
        if (d < 0) return -1;
        v = v << 4 | d;
    }
    return v;
}

static int unquote_raw(const uint8_t *body, size_t len, tdx_buf *out, const char **why) {
    if (memchr(body, '`', len)) return fail(why, msg_syntax);
    if (tdx_vec_reserve(out, out->n + len)) return fail(why, msg_oom);
    /* Go drops carriage returns from raw strings so CRLF sources give LF contents. */
    for (size_t i = 0; i < len; i++)
        if (body[i] != '\r') out->v[out->n++] = body[i];
    return 0;
}

static int unquote_interpreted(const uint8_t *p, size_t end, tdx_buf *out, const char **why) {
    size_t run = 1, i = 1; /* p[run..i) is pending verbatim output; p[end] is the closing quote */
    while (i < end) {
        uint8_t c = p[i];
        if (c == '"' || c == '\n') return fail(why, msg_syntax);
        if (c < 0x80 && c != '\\') {
            i++;
            continue;
        }
        uint8_t enc[4];
        size_t elen, adv;
        if (c >= 0x80) {
            int w;
            tdx_utf8_decode(p + i, end - i, &w);
            if (w > 1) { /* valid multi-byte sequences are copied as they are */
                i += (size_t)w;
                continue;
            }
            /* Go decodes the literal rune by rune, so a stray byte becomes U+FFFD. */
            elen = utf8_encode(enc, RUNE_ERROR);
            adv = 1;
        } else {
            if (i + 1 >= end) return fail(why, msg_syntax);
            uint8_t e = p[i + 1];
            int64_t v;
            adv = 2;
            elen = 1;
            switch (e) {
            case 'a':
                enc[0] = '\a';
                break;
            case 'b':
                enc[0] = '\b';
                break;
            case 'f':
                enc[0] = '\f';
                break;
            case 'n':
                enc[0] = '\n';
                break;
            case 'r':
                enc[0] = '\r';
                break;
            case 't':
                enc[0] = '\t';
                break;
            case 'v':
                enc[0] = '\v';
                break;
            case '\\':
                enc[0] = '\\';
                break;
            case '"':
                enc[0] = '"';
                break;
            case 'x':
                v = parse_hex(p + i + 2, end - (i + 2), 2);
                if (v < 0) return fail(why, msg_syntax);
                enc[0] = (uint8_t)v; /* a byte, not a code point */
                adv = 4;
                break;
            case 'u':
            case 'U': {
                int digits = e == 'u' ? 4 : 8;
                v = parse_hex(p + i + 2, end - (i + 2), digits);
                if (v < 0 || v > MAX_RUNE || (v >= 0xD800 && v <= 0xDFFF))
                    return fail(why, msg_syntax);
                elen = utf8_encode(enc, (uint32_t)v);
                adv = 2 + (size_t)digits;
                break;
            }
            case '0':
            case '1':
            case '2':
            case '3':
            case '4':
            case '5':
            case '6':
            case '7':
                if (end - (i + 1) < 3) return fail(why, msg_syntax);
                v = 0;
                for (size_t k = 1; k <= 3; k++) {
                    uint8_t d = p[i + k];
                    if (d < '0' || d > '7') return fail(why, msg_syntax);
                    v = v * 8 + (d - '0');
                }
                if (v > 255) return fail(why, msg_syntax);
                enc[0] = (uint8_t)v;
                adv = 4;
                break;
            default: /* includes \' which Go allows only in rune literals */
                return fail(why, msg_syntax);
            }
        }
        if (append_span(out, p, run, i) || tdx_buf_append(out, enc, elen))
            return fail(why, msg_oom);
        i += adv;
        run = i;
    }
    if (append_span(out, p, run, end)) return fail(why, msg_oom);
    return 0;
}

/* A single-quoted (rune) literal: exactly one character, an escape or one UTF-8 sequence. */
static int unquote_rune(const uint8_t *in, size_t n, tdx_buf *out, const char **why) {
    if (n == 0 || in[0] == '\n' || in[0] == '\'') return fail(why, msg_syntax);
    if (in[0] != '\\') {
        int size;
        uint32_t r = tdx_utf8_decode(in, n, &size);
        if ((size_t)size != n) return fail(why, msg_syntax);
        uint8_t enc[4];
        size_t k = utf8_encode(enc, r);
        return tdx_buf_append(out, enc, k) ? fail(why, msg_oom) : 0;
    }
    if (n < 2) return fail(why, msg_syntax);
    if (in[1] == '\'' && n == 2) return tdx_buf_append(out, "'", 1) ? fail(why, msg_oom) : 0;
    size_t want;
    switch (in[1]) {
    case 'x':
        want = 4;
        break;
    case 'u':
        want = 6;
        break;
    case 'U':
        want = 10;
        break;
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
        want = 4;
        break;
    case '"':
        return fail(why, msg_syntax); /* only valid in double quotes */
    default:
        want = 2;
        break;
    }
    if (n != want) return fail(why, msg_syntax);
    /* The same escape in a double-quoted literal decodes identically. */
    uint8_t tmp[12];
    tmp[0] = '"';
    memcpy(tmp + 1, in, n);
    tmp[n + 1] = '"';
    return unquote_interpreted(tmp, n + 1, out, why);
}

int tdx_go_unquote(const char *s, size_t n, tdx_buf *out, const char **why) {
    const uint8_t *p = (const uint8_t *)s;
    if (n < 2 || p[0] != p[n - 1]) return fail(why, msg_syntax);
    if (p[0] == '`') return unquote_raw(p + 1, n - 2, out, why);
    if (p[0] == '\'') return unquote_rune(p + 1, n - 2, out, why);
    if (p[0] != '"') return fail(why, msg_syntax);
    return unquote_interpreted(p, n - 1, out, why);
}

/* ---- encoding/json ---- */

/* How Go's encoder writes the sequence at s[i]: returns the escape's length (0 = copy the input
 * bytes as they are) with the escape in esc, and sets *w to the input bytes it covers. Shared by
 * tdx_json_quote and tdx_json_quote_len so the two cannot disagree. */
static size_t json_escape(const uint8_t *s, size_t n, size_t i, char esc[6], size_t *w) {
    uint8_t c = s[i];
    *w = 1;
    if (c >= 0x80) {
        int size;
        uint32_t r = tdx_utf8_decode(s + i, n - i, &size);
        if (size == 1) return hex_escape(esc, 'u', RUNE_ERROR, 4);
        *w = (size_t)size;
        /* Legal JSON, but line terminators in JavaScript source; Go escapes them. */
        if (r == 0x2028 || r == 0x2029) return hex_escape(esc, 'u', r, 4);
        return 0;
    }
    char short_esc = 0;
    switch (c) {
    case '"':
        short_esc = '"';
        break;
    case '\\':
        short_esc = '\\';
        break;
    case '\b':
        short_esc = 'b';
        break;
    case '\f':
        short_esc = 'f';
        break;
    case '\n':
        short_esc = 'n';
        break;
    case '\r':
        short_esc = 'r';
        break;
    case '\t':
        short_esc = 't';
        break;
    case '<':
    case '>':
    case '&': /* HTML-safe: never let JSON close a <script> */
        return hex_escape(esc, 'u', c, 4);
    default:
        if (c < 0x20) return hex_escape(esc, 'u', c, 4);
        return 0; /* DEL included: Go leaves 0x7f raw */
    }
    esc[0] = '\\';
    esc[1] = short_esc;
    return 2;
}

static int json_plain(uint8_t c) {
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&';
}

/* Names are mostly longer than 16 bytes: SSE2 (x86-64's baseline) checks 16 at a time, the
 * last 16 overlapping. */
bool tdx_json_plain(const uint8_t *s, size_t n) {
#ifdef __SSE2__
    if (n >= 16) {
        const __m128i lo = _mm_set1_epi8(0x20), q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'),
                      amp = _mm_set1_epi8('&'), lt = _mm_set1_epi8('<'), gt = _mm_set1_epi8('>');
        for (size_t i = 0;; i += 16) {
            if (i + 16 > n) i = n - 16;
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            /* signed: bytes >= 0x80 are negative, so below 0x20 too */
            __m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, lo),
                                       _mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs)));
            bad = _mm_or_si128(
                bad, _mm_or_si128(_mm_cmpeq_epi8(v, amp),
                                  _mm_or_si128(_mm_cmpeq_epi8(v, lt), _mm_cmpeq_epi8(v, gt))));
            if (_mm_movemask_epi8(bad)) return false;
            if (i + 16 == n) return true;
        }
    }
#endif
    for (size_t i = 0; i < n; i++)
        if (!json_plain(s[i])) return false;
    return true;
}

size_t tdx_json_quote_len(const uint8_t *s, size_t n) {
    size_t len = 2, i = 0;
    while (i < n) {
        if (json_plain(s[i])) {
            len++;
            i++;
            continue;
        }
        char esc[6];
        size_t w, elen = json_escape(s, n, i, esc, &w);
        len += elen ? elen : w;
        i += w;
    }
    return len;
}

int tdx_json_quote(tdx_buf *out, const uint8_t *s, size_t n) {
    if (n > SIZE_MAX - 2 - out->n || tdx_vec_reserve(out, out->n + n + 2)) return -1;
    out->v[out->n++] = '"';
    size_t run = 0, i = 0; /* s[run..i) is pending verbatim output */
    while (i < n) {
        if (json_plain(s[i])) {
            i++;
            continue;
        }
        char esc[6];
        size_t w, elen = json_escape(s, n, i, esc, &w);
        if (elen) {
            if (append_span(out, s, run, i) || tdx_buf_append(out, esc, elen)) return -1;
            run = i + w;
        }
        i += w;
    }
    if (append_span(out, s, run, n) || tdx_buf_append(out, "\"", 1)) return -1;
    return 0;
}

int tdx_json_quote_frame(tdx_buf *out, const uint8_t *func, size_t n, uint64_t line) {
    char num[24];
    int k = snprintf(num, sizeof num, ":%" PRIu64 "\"", line);
    /* ':' and digits are plain ASCII: the name's quoting ends where func's would, and the line
     * goes inside the closing quote (an invalid UTF-8 byte is replaced alone, so the bytes that
     * follow cannot change func's part). */
    if (tdx_json_quote(out, func, n) || tdx_vec_reserve(out, out->n + (size_t)k)) return -1;
    memcpy(out->v + out->n - 1, num, (size_t)k);
    out->n += (size_t)k - 1;
    return 0;
}
