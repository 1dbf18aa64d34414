/* gofmt.c: Go's number formatting. */
#include "gofmt.h"

#include <string.h>

/* Writes the fraction of v/10^prec right-aligned before buf[w] without trailing zeros; returns the
 * new start and stores v/10^prec in *rest (Go's fmtFrac). */
static size_t frac(char *buf, size_t w, uint64_t v, int prec, uint64_t *rest) {
    int print = 0;
    for (int i = 0; i < prec; i++) {
        int digit = (int)(v % 10);
        print = print || digit != 0;
        if (print) buf[--w] = (char)('0' + digit);
        v /= 10;
    }
    if (print) buf[--w] = '.';
    *rest = v;
    return w;
}

static size_t integer(char *buf, size_t w, uint64_t v) {
    if (v == 0) {
        buf[--w] = '0';
        return w;
    }
    while (v > 0) {
        buf[--w] = (char)('0' + v % 10);
        v /= 10;
    }
    return w;
}

int tdx_go_duration(char *out, size_t cap, int64_t d) {
    char buf[40];
    size_t w = sizeof buf;
    uint64_t u = (uint64_t)d;
    int neg = d < 0;
    if (neg) u = -u;
    if (u < 1000000000ULL) {
        int prec = 0;
        buf[--w] = 's';
        if (u == 0) {
            buf[--w] = '0';
        } else if (u < 1000ULL) {
            buf[--w] = 'n';
        } else if (u < 1000000ULL) {
            prec = 3;
            buf[--w] = (char)0xb5; /* U+00B5 MICRO SIGN in UTF-8 */
            buf[--w] = (char)0xc2;
        } else {
            prec = 6;
            buf[--w] = 'm';
        }
        if (u) {
            w = frac(buf, w, u, prec, &u);
            w = integer(buf, w, u);
        }
    } else {
        buf[--w] = 's';
        w = frac(buf, w, u, 9, &u);
        w = integer(buf, w, u % 60);
        u /= 60;
        if (u > 0) {
            buf[--w] = 'm';
            w = integer(buf, w, u % 60);
            u /= 60;
            if (u > 0) {
                buf[--w] = 'h';
                w = integer(buf, w, u);
            }
        }
    }
    if (neg) buf[--w] = '-';
    size_t n = sizeof buf - w;
    if (cap) {
        size_t k = n < cap - 1 ? n : cap - 1;
        memcpy(out, buf + w, k);
        out[k] = 0;
    }
    return (int)n;
}
