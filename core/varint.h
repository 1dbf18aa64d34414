/* varint.h: unsigned LEB128 ("uvarint") decoding and encoding, bounds-checked.
 * Decoding accepts non-minimal forms and never reads past `end`, as Go's encoding/binary does. */
#ifndef TDX_VARINT_H
#define TDX_VARINT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/mem.h"

enum {
    TDX_VARINT_EOF = -1,        /* no byte at all before end */
    TDX_VARINT_UNEXPECTED = -2, /* the value was cut short by end */
    TDX_VARINT_OVERFLOW = -3,   /* more than 64 bits (10th byte > 1 or an 11th byte) */
};

#define TDX_VARINT_MAX 10

/* Decodes one uvarint at p (p <= end). Returns the number of bytes used (1..10) and stores the
 * value, or returns a negative TDX_VARINT_* code. The one-byte case is kept inline and cheap. */
static inline int tdx_uvarint(const uint8_t *p, const uint8_t *end, uint64_t *out) {
    if (p >= end) return TDX_VARINT_EOF;
    uint8_t b = p[0];
    if (b < 0x80) {
        *out = b;
        return 1;
    }
    uint64_t v = b & 0x7f;
    size_t avail = (size_t)(end - p);
    size_t lim = avail < TDX_VARINT_MAX ? avail : TDX_VARINT_MAX;
    for (size_t i = 1; i < lim; i++) {
        b = p[i];
        if (b < 0x80) {
            if (i == TDX_VARINT_MAX - 1 && b > 1) return TDX_VARINT_OVERFLOW;
            *out = v | ((uint64_t)b << (7 * i));
            return (int)i + 1;
        }
        v |= (uint64_t)(b & 0x7f) << (7 * i);
    }
    return avail >= TDX_VARINT_MAX ? TDX_VARINT_OVERFLOW : TDX_VARINT_UNEXPECTED;
}

/* Decodes a uvarint when at least TDX_VARINT_MAX bytes are readable at p (no bounds checks).
 * Returns the byte after it, or NULL on overflow. One- and two-byte values take a few
 * instructions; longer ones up to 8 bytes are gathered from one 64-bit load instead of a loop
 * over the bytes. */
static inline const uint8_t *tdx_uvarint_fast(const uint8_t *p, uint64_t *out) {
    uint64_t v = p[0];
    if (v < 0x80) {
        *out = v;
        return p + 1;
    }
    uint64_t b1 = p[1];
    if (b1 < 0x80) {
        *out = (v & 0x7f) | (b1 << 7);
        return p + 2;
    }
    uint64_t w;
    memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    uint64_t stop = ~w & 0x8080808080808080ull; /* bytes without continuation */
    if (stop) {
        unsigned len = ((unsigned)__builtin_ctzll(stop) + 1) >> 3; /* 3..8 */
        uint64_t x = w & (stop ^ (stop - 1)) & 0x7f7f7f7f7f7f7f7full;
        x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
        x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
        x = (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
        *out = x;
        return p + len;
    }
    v = w & 0x7f7f7f7f7f7f7f7full;
    v = (v & 0x007f007f007f007full) | ((v & 0x7f007f007f007f00ull) >> 1);
    v = (v & 0x00003fff00003fffull) | ((v & 0x3fff00003fff0000ull) >> 2);
    v = (v & 0x000000000fffffffull) | ((v & 0x0fffffff00000000ull) >> 4);
    for (int i = 8; i < TDX_VARINT_MAX; i++) {
        uint64_t b = p[i];
        if (b < 0x80) {
            if (i == TDX_VARINT_MAX - 1 && b > 1) return NULL;
            *out = v | (b << (7 * i));
            return p + i + 1;
        }
        v |= (b & 0x7f) << (7 * i);
    }
    return NULL;
}

/* Text of a negative tdx_uvarint result, worded as Go's errors ("EOF", "unexpected EOF", ...). */
static inline const char *tdx_varint_strerror(int code) {
    switch (code) {
    case TDX_VARINT_EOF:
        return "EOF";
    case TDX_VARINT_UNEXPECTED:
        return "unexpected EOF";
    default:
        return "binary: varint overflows a 64-bit integer";
    }
}

/* Minimal encoding; returns bytes written (1..10). */
static inline int tdx_put_uvarint(uint8_t *p, uint64_t v) {
    int n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Appends v to b, minimally encoded: 0, or -1 when out of memory. */
static inline int tdx_buf_uvarint(tdx_buf *b, uint64_t v) {
    if (tdx_vec_reserve(b, b->n + TDX_VARINT_MAX)) return -1;
    b->n += (size_t)tdx_put_uvarint(b->v + b->n, v);
    return 0;
}

/* Zigzag: small magnitudes of either sign become small unsigned values. The sign mask is built
 * unsigned (`v >> 63` of a negative value is implementation-defined). */
static inline uint64_t tdx_zigzag(int64_t v) {
    return ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63));
}
static inline int64_t tdx_unzigzag(uint64_t v) {
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Wrapping (two's complement) sum and difference: deltas of any int64 pair round-trip. */
static inline int64_t tdx_wadd(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a + (uint64_t)b);
}
static inline int64_t tdx_wsub(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

static inline int tdx_uvarint_len(uint64_t v) {
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

#endif
