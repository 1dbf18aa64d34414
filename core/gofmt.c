/* gofmt.c: Go's number formatting. */
#include "gofmt.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Shortest round-trip digits of v > 0 (finite): digits into d (no point), decimal exponent of
 * the first digit into *exp10 (v = d1.d2d3... * 10^exp10). */
static int shortest_digits(double v, char *d, int *exp10) {
    char tmp[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
        if (p < 17 && strtod(tmp, NULL) != v) continue;
        /* tmp = d[.ddd]e[+-]xx */
        int n = 0;
        char *q = tmp;
        for (; *q && *q != 'e'; q++)
            if (*q >= '0' && *q <= '9') d[n++] = *q;
        *exp10 = (int)strtol(q + 1, NULL, 10);
        while (n > 1 && d[n - 1] == '0') n--;
        return n;
    }
    return 0; /* unreachable */
}

size_t tdx_go_float(char *buf, double v, int form) {
    if (v == 0) {
        buf[0] = '0';
        return 1;
    }
    size_t w = 0;
    if (v < 0) {
        buf[w++] = '-';
        v = -v;
    }
    char d[20] = {0};
    int e = 0, n = shortest_digits(v, d, &e);
    bool expo = form == TDX_FLOAT_JSON ? v < 1e-6 || v >= 1e21 : e < -4 || e >= 6;
    if (expo) {
        buf[w++] = d[0];
        if (n > 1) {
            buf[w++] = '.';
            memcpy(buf + w, d + 1, (size_t)n - 1);
            w += (size_t)n - 1;
        }
        /* strconv writes at least two exponent digits; encoding/json drops the 0 of e-0X */
        if (e < 0)
            w += (size_t)sprintf(buf + w, form == TDX_FLOAT_JSON ? "e-%d" : "e-%02d", -e);
        else
            w += (size_t)sprintf(buf + w, "e+%02d", e);
        return w;
    }
    if (e < 0) {
        buf[w++] = '0';
        buf[w++] = '.';
        for (int i = 0; i < -e - 1; i++) buf[w++] = '0';
        memcpy(buf + w, d, (size_t)n);
        return w + (size_t)n;
    }
    if (e + 1 >= n) {
        memcpy(buf + w, d, (size_t)n);
        w += (size_t)n;
        for (int i = 0; i < e + 1 - n; i++) buf[w++] = '0';
        return w;
    }
    memcpy(buf + w, d, (size_t)e + 1);
    w += (size_t)e + 1;
    buf[w++] = '.';
    memcpy(buf + w, d + e + 1, (size_t)(n - e - 1));
    return w + (size_t)(n - e - 1);
}
