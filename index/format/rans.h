/* rans.h: static-model rANS entropy coding for the index's event blocks: per-block frequency
 * tables selected by context, a few independent coder lanes, and a raw bit stream for low bits. */
#ifndef TDX_RANS_H
#define TDX_RANS_H

#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include "core/mem.h"

#define TDX_RANS_LANES 4      /* independent coder states (their decodes overlap in the CPU) */
#define TDX_RANS_MAXBITS 10   /* frequency precision of a table (2^bits slots) at most */
#define TDX_RANS_L (1u << 23) /* lower bound of the coder state; bytes are shifted in below it */

/* ---- encoding ---- */

typedef struct tdx_rans_esym {
    uint32_t x_max;    /* renormalise (emit bytes) while the state is at least this */
    uint32_t rcp_freq; /* fixed-point reciprocal of the frequency (division by multiplication) */
    uint32_t bias;
    uint16_t cmpl_freq; /* 2^bits - freq */
    uint16_t rcp_shift;
} tdx_rans_esym;

typedef struct tdx_rans_etab {
    uint32_t ctx;
    uint32_t total;
    uint32_t count[256];
    tdx_rans_esym sym[256];
    uint8_t bits; /* 0: a single symbol (coding it takes no bits) */
} tdx_rans_etab;

typedef struct tdx_rans_enc {
    uint32_t nctx;
    uint16_t *tab_of;                      /* context -> table index + 1 (0: no table yet) */
    TDX_VEC(tdx_rans_etab) tabs;           /* the block's tables, in first-use order */
    TDX_VEC(uint32_t) tok[TDX_RANS_LANES]; /* per lane: table index << 8 | symbol */
    tdx_buf bits;                          /* the raw bit stream */
    uint64_t acc;
    int nacc;
    int oom;
    tdx_buf tmp;
    uint64_t *xbits; /* optional (statistics): raw bits written per context */
} tdx_rans_enc;

void tdx_rans_enc_init(tdx_rans_enc *e);
void tdx_rans_enc_free(tdx_rans_enc *e);
/* Starts a block whose symbols use contexts 0..nctx-1. Returns 0 or -1 (OOM). */
int tdx_rans_enc_reset(tdx_rans_enc *e, uint32_t nctx);
/* Makes room for `n` more symbols on each lane and `nbits` more raw bits, so that the put
 * functions below need no checks. Returns 0 or -1 (OOM). */
int tdx_rans_enc_reserve(tdx_rans_enc *e, size_t n, size_t nbits);
int tdx_rans_new_tab_(tdx_rans_enc *e, uint32_t ctx);

/* Codes symbol `sym` of context `ctx` on `lane`. */
static inline void tdx_rans_put(tdx_rans_enc *e, int lane, uint32_t ctx, unsigned sym) {
    uint32_t t = e->tab_of[ctx];
    if (__builtin_expect(!t, 0)) {
        if (tdx_rans_new_tab_(e, ctx)) return;
        t = e->tab_of[ctx];
    }
    t--;
    e->tabs.v[t].count[sym & 255]++;
    e->tok[lane].v[e->tok[lane].n++] = t << 8 | (sym & 255);
}

/* Appends the low n bits of v (n <= 64) to the raw bit stream. */
static inline void tdx_rans_putbits(tdx_rans_enc *e, uint64_t v, int n) {
    if (n > 32) {
        tdx_rans_putbits(e, v & 0xffffffffu, 32);
        v >>= 32;
        n -= 32;
    }
    if (!n) return;
    e->acc |= (v & ((1ull << n) - 1)) << e->nacc;
    e->nacc += n;
    if (e->nacc >= 32) {
        if (__builtin_expect(e->bits.n + 4 > e->bits.cap, 0) &&
            tdx_vec_reserve(&e->bits, e->bits.cap * 2 + 4096)) {
            e->oom = -1;
        } else {
            uint8_t *p = e->bits.v + e->bits.n;
            for (int i = 0; i < 4; i++) p[i] = (uint8_t)(e->acc >> (8 * i));
            e->bits.n += 4;
        }
        e->acc >>= 32;
        e->nacc -= 32;
    }
}

/* Appends the block's coded form to out: tables, lanes, bit stream. Returns 0 or -1 (OOM). */
int tdx_rans_enc_finish(tdx_rans_enc *e, tdx_buf *out);

/* Integers: values below 16 are their own symbol; larger ones are classed by their top three
 * bits (the leading one and two more), and the bits below those go to the raw stream. */
static inline void tdx_rans_put_uint(tdx_rans_enc *e, int lane, uint32_t ctx, uint64_t v) {
    if (v < 16) {
        tdx_rans_put(e, lane, ctx, (unsigned)v);
        return;
    }
    int n = 63 - __builtin_clzll(v);
    tdx_rans_put(e, lane, ctx, (unsigned)(16 + (n - 4) * 4 + ((v >> (n - 2)) & 3)));
    tdx_rans_putbits(e, v, n - 2);
    if (e->xbits) e->xbits[ctx] += (uint64_t)(n - 2);
}

/* ---- decoding ---- */

typedef struct tdx_rans_dtab {
    const uint32_t *slot; /* 2^bits entries: symbol | freq << 8 | (slot - start) << 20 */
    uint32_t mask;
    uint8_t bits;
    uint8_t sym0;   /* bits == 0: the table's only symbol */
    uint8_t absent; /* no such table in the block: using it marks the block bad */
} tdx_rans_dtab;

typedef struct tdx_rans_lane {
    uint32_t x;
    const uint8_t *p, *end;
} tdx_rans_lane;

typedef struct tdx_rans_dec {
    uint16_t *idx; /* per context: its table in tabs_ (0: absent) */
    uint32_t nctx;
    tdx_rans_lane lane[TDX_RANS_LANES];
    const uint8_t *bits; /* raw bit stream */
    size_t bpos, blen;
    uint64_t acc;
    int nacc;
    int bad;
    TDX_VEC(uint32_t) slots;
    TDX_VEC(tdx_rans_dtab) tabs_;
} tdx_rans_dec;

void tdx_rans_dec_init(tdx_rans_dec *d);
void tdx_rans_dec_free(tdx_rans_dec *d);
/* Reads the tables, lanes and bit stream of a block from p[0..len) (everything up to the end).
 * Returns 0, or -1 when they are malformed (or on OOM). */
int tdx_rans_dec_start(tdx_rans_dec *d, uint32_t nctx, const uint8_t *p, size_t len);
/* Whether every lane and the bit stream were consumed exactly and nothing was malformed. */
int tdx_rans_dec_ok(const tdx_rans_dec *d);

static inline unsigned tdx_rans_get(tdx_rans_dec *d, int lane, uint32_t ctx) {
    const tdx_rans_dtab *t = &d->tabs_.v[d->idx[ctx]];
    if (t->bits == 0) {
        d->bad |= t->absent;
        return t->sym0;
    }
    tdx_rans_lane *l = &d->lane[lane];
    uint32_t x = l->x;
    uint32_t e = t->slot[x & t->mask];
    x = ((e >> 8) & 0xfff) * (x >> t->bits) + (e >> 20);
    if (__builtin_expect(l->end - l->p >= 2, 1)) {
        /* Without a branch on the data: from x >= 2^23, a step leaves x >= 2^13 (bits <= 10), so
         * at most two bytes come in; both are loaded and the ones needed shifted in. */
        unsigned n = (unsigned)(x < TDX_RANS_L) + (unsigned)(x < (TDX_RANS_L >> 8));
        uint32_t two = (uint32_t)l->p[0] << 8 | l->p[1];
        x = x << (8 * n) | two >> (16 - 8 * n);
        l->p += n;
    } else {
        while (x < TDX_RANS_L) {
            if (l->p >= l->end) {
                d->bad = 1;
                x = TDX_RANS_L;
                break;
            }
            x = x << 8 | *l->p++;
        }
    }
    l->x = x;
    return e & 255;
}

void tdx_rans_refill_slow_(tdx_rans_dec *d, int n);

/* The next n raw bits (n <= 64); zeros (and the block marked bad) past the end. */
static inline uint64_t tdx_rans_getbits(tdx_rans_dec *d, int n) {
    if (n > 32) {
        uint64_t lo = tdx_rans_getbits(d, 32);
        return lo | tdx_rans_getbits(d, n - 32) << 32;
    }
    if (d->nacc < n) {
        if (__builtin_expect(d->bpos + 8 <= d->blen, 1)) {
            /* Top up to at least 56 bits with one unaligned little-endian load. The bits loaded
             * beyond the whole bytes counted are the stream's next bits: loading them again
             * later ORs equal bits. */
            uint64_t x;
            memcpy(&x, d->bits + d->bpos, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            x = __builtin_bswap64(x);
#endif
            d->acc |= x << d->nacc;
            int take = (63 - d->nacc) >> 3;
            d->bpos += (size_t)take;
            d->nacc += take * 8;
        } else {
            tdx_rans_refill_slow_(d, n);
        }
    }
    uint64_t v = d->acc & ((1ull << n) - 1);
    d->acc >>= n;
    d->nacc -= n;
    return v;
}

/* The integer tdx_rans_put_uint coded. */
static inline uint64_t tdx_rans_get_uint(tdx_rans_dec *d, int lane, uint32_t ctx) {
    unsigned c = tdx_rans_get(d, lane, ctx);
    if (c < 16) return c;
    int n = (int)(c - 16) / 4 + 4;
    return (uint64_t)(4 | (c & 3)) << (n - 2) | tdx_rans_getbits(d, n - 2);
}

#endif
