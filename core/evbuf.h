/* evbuf.h: a compact encoding of ordered events, holding a generation's output while workers run
 * ahead of the in-order consumer.
 *
 * The in-order thread decodes every buffered event, so decoding must cost a small fraction of
 * ordering (the varint encoding used before cost about as much as ordering the event). A record is
 * one 64-bit header word, its fields, and for the few events that need them a 16-bit word and the
 * rare fields:
 *
 *   header  bits  0-7 type, 8-15 kind, 16-23 flags (below), 24-31 from | to << 4,
 *                 32-61 a 3-bit width code for each common field, 62 rare fields follow
 *   common  time (delta from the previous event), m + 1, p + 1, g + 1 (TDX_NO_ID becomes 0),
 *           args[0..2], stack, str[0], off (relative to the generation's first byte)
 *   rare    16-bit word of width codes, then args[3], str[1], tstack, res (zigzag), sync_nsec
 *
 * A width code c stores a value in 0, 1, 2, 3, 4, 5, 6 or 8 bytes, little-endian. Both directions
 * are branch-free per field: a field is stored or loaded as a whole 64-bit word and masked to its
 * width, so the buffer keeps TDX_EVBUF_SLACK bytes of room past its end. res and tstack are
 * usually another field's value (args[0], p, g; stack) and are then only referred to.
 * About 25-30 bytes per event. */
#ifndef TDX_EVBUF_H
#define TDX_EVBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "event.h"
#include "mem.h"
#include "varint.h"

typedef struct tdx_evbuf {
    tdx_buf bytes;
    uint64_t n;        /* events */
    int64_t last;      /* time of the last appended event (delta base) */
    uint64_t base_off; /* offsets are stored relative to this (the generation's first byte) */
} tdx_evbuf;

enum { TDX_EVB_MAXREC = 8 + 2 + 15 * 8, TDX_EVBUF_SLACK = 8 };

void tdx_evbuf_reset(tdx_evbuf *b, uint64_t base_off);
void tdx_evbuf_free(tdx_evbuf *b);
/* Makes room for a record of the largest size; returns 0 or -1 (out of memory). */
int tdx_evbuf_grow_(tdx_evbuf *b);

/* flags byte */
enum {
    TDX_EVB_RES_KIND = 3,          /* res_kind */
    TDX_EVB_RES_SRC_SHIFT = 2,     /* 2 bits: res is 0 / args[0] / p / g; 0 with rare: stored */
    TDX_EVB_TSTACK_STACK = 1 << 4, /* tstack equals stack */
    TDX_EVB_CLOCK = 1 << 5,
    TDX_EVB_HAS_TSTACK = 1 << 6,
    TDX_EVB_HAS_OFF = 1 << 7,
};

static inline void tdx_evb_st64(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}
static inline uint64_t tdx_evb_ld64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Width code of v (the bytes it needs, 7 standing for 8). */
static inline unsigned tdx_evb_code(uint64_t v) {
    unsigned n = (unsigned)(71 - __builtin_clzll(v | 1)) >> 3; /* 1..8 */
    n -= n >> 3;                                               /* 8 -> 7 */
    return v ? n : 0;
}

/* Bytes per width code. */
static const uint8_t tdx_evb_len[8] = {0, 1, 2, 3, 4, 5, 6, 8};

/* Stores field k (value v) at p and records its width code in codes (unrolled by hand: a loop over
 * an array of the fields went through memory and cost twice as much). */
#define TDX_EVB_PUT(codes, k, v)                                                                   \
    do {                                                                                           \
        uint64_t v_ = (v);                                                                         \
        unsigned c_ = tdx_evb_code(v_);                                                            \
        tdx_evb_st64(p, v_);                                                                       \
        p += tdx_evb_len[c_];                                                                      \
        codes |= (uint64_t)c_ << (3 * (k));                                                        \
    } while (0)

/* Appends e; returns 0, or -1 when memory is exhausted. */
static inline int tdx_evbuf_append(tdx_evbuf *b, const tdx_event *e) {
    if (b->bytes.cap - b->bytes.n < TDX_EVB_MAXREC + TDX_EVBUF_SLACK && tdx_evbuf_grow_(b))
        return -1;
    uint8_t *start = b->bytes.v + b->bytes.n, *p = start + 8;
    uint64_t codes = 0;
    TDX_EVB_PUT(codes, 0, (uint64_t)e->time - (uint64_t)b->last);
    TDX_EVB_PUT(codes, 1, (uint64_t)e->m + 1);
    TDX_EVB_PUT(codes, 2, (uint64_t)e->p + 1);
    TDX_EVB_PUT(codes, 3, (uint64_t)e->g + 1);
    TDX_EVB_PUT(codes, 4, e->args[0]);
    TDX_EVB_PUT(codes, 5, e->args[1]);
    TDX_EVB_PUT(codes, 6, e->args[2]);
    TDX_EVB_PUT(codes, 7, e->stack);
    TDX_EVB_PUT(codes, 8, e->str[0]);
    TDX_EVB_PUT(codes, 9, e->off - b->base_off);
    /* res and tstack by reference when they repeat another field (most transitions). */
    unsigned src = e->res == 0                     ? 0
                   : e->res == (int64_t)e->args[0] ? 1
                   : e->res == e->p                ? 2
                   : e->res == e->g                ? 3
                                                   : 0;
    uint64_t res = src == 0 ? tdx_zigzag(e->res) : 0;
    unsigned tsame = e->tstack != 0 && e->tstack == e->stack;
    uint32_t tstack = tsame ? 0 : e->tstack;
    if ((e->args[3] | e->str[1] | tstack | res | e->sync_nsec) != 0) {
        uint8_t *rw = p;
        uint64_t rc = 0;
        p += 2;
        TDX_EVB_PUT(rc, 0, e->args[3]);
        TDX_EVB_PUT(rc, 1, e->str[1]);
        TDX_EVB_PUT(rc, 2, tstack);
        TDX_EVB_PUT(rc, 3, res);
        TDX_EVB_PUT(rc, 4, e->sync_nsec);
        rw[0] = (uint8_t)rc;
        rw[1] = (uint8_t)(rc >> 8);
        codes |= 1ull << 30;
    }
    uint64_t flags = (uint64_t)e->res_kind | (uint64_t)src << TDX_EVB_RES_SRC_SHIFT |
                     (tsame ? TDX_EVB_TSTACK_STACK : 0) | (e->has_clock ? TDX_EVB_CLOCK : 0) |
                     (e->has_tstack ? TDX_EVB_HAS_TSTACK : 0) | (e->off ? TDX_EVB_HAS_OFF : 0);
    uint64_t hdr = (uint64_t)e->type | (uint64_t)e->kind << 8 | flags << 16 |
                   (uint64_t)(e->from | e->to << 4) << 24 | codes << 32;
    tdx_evb_st64(start, hdr);
    b->bytes.n += (size_t)(p - start);
    b->last = e->time;
    b->n++;
    return 0;
}
#undef TDX_EVB_PUT

typedef struct tdx_evbuf_iter {
    const uint8_t *p, *end;
    int64_t last;
    uint64_t base_off;
} tdx_evbuf_iter;

void tdx_evbuf_iter_init(tdx_evbuf_iter *it, const tdx_evbuf *b);

/* Value mask and bytes per width code (code 0 loads the next field's bytes: they must mask to 0).
 */
static const uint64_t tdx_evb_mask[8] = {0,           0xff,          0xffff,          0xffffff,
                                         0xffffffffu, 0xffffffffffu, 0xffffffffffffu, UINT64_MAX};

static inline uint64_t tdx_evb_get(const uint8_t **p, uint64_t codes, int k) {
    unsigned c = (unsigned)(codes >> (3 * k)) & 7;
    uint64_t v = tdx_evb_ld64(*p) & tdx_evb_mask[c];
    *p += tdx_evb_len[c];
    return v;
}

/* Decodes the next event into *e (every field written); returns 1, or 0 at the end. */
static inline int tdx_evbuf_next(tdx_evbuf_iter *it, tdx_event *e) {
    const uint8_t *p = it->p;
    if (p >= it->end) return 0;
    uint64_t hdr = tdx_evb_ld64(p), codes = hdr >> 32;
    unsigned flags = (unsigned)(hdr >> 16) & 0xff, ft = (unsigned)(hdr >> 24) & 0xff;
    p += 8;
    e->type = (uint8_t)hdr;
    e->kind = (uint8_t)(hdr >> 8);
    e->res_kind = flags & TDX_EVB_RES_KIND;
    e->has_clock = (flags & TDX_EVB_CLOCK) != 0;
    e->has_tstack = (flags & TDX_EVB_HAS_TSTACK) != 0;
    e->from = ft & 15;
    e->to = (uint8_t)(ft >> 4);
    e->time = (int64_t)((uint64_t)it->last + tdx_evb_get(&p, codes, 0));
    it->last = e->time;
    e->m = (int64_t)(tdx_evb_get(&p, codes, 1) - 1);
    e->p = (int64_t)(tdx_evb_get(&p, codes, 2) - 1);
    e->g = (int64_t)(tdx_evb_get(&p, codes, 3) - 1);
    e->args[0] = tdx_evb_get(&p, codes, 4);
    e->args[1] = tdx_evb_get(&p, codes, 5);
    e->args[2] = tdx_evb_get(&p, codes, 6);
    e->stack = (uint32_t)tdx_evb_get(&p, codes, 7);
    e->str[0] = (uint32_t)tdx_evb_get(&p, codes, 8);
    uint64_t off = tdx_evb_get(&p, codes, 9) + it->base_off;
    e->off = flags & TDX_EVB_HAS_OFF ? off : 0;
    uint64_t res = 0;
    e->args[3] = 0;
    e->str[1] = 0;
    e->tstack = 0;
    e->sync_nsec = 0;
    if (codes & (1ull << 30)) {
        uint64_t rc = (uint64_t)p[0] | (uint64_t)p[1] << 8;
        p += 2;
        e->args[3] = tdx_evb_get(&p, rc, 0);
        e->str[1] = (uint32_t)tdx_evb_get(&p, rc, 1);
        e->tstack = (uint32_t)tdx_evb_get(&p, rc, 2);
        res = tdx_evb_get(&p, rc, 3);
        e->sync_nsec = tdx_evb_get(&p, rc, 4);
    }
    if (flags & TDX_EVB_TSTACK_STACK) e->tstack = e->stack;
    switch ((flags >> TDX_EVB_RES_SRC_SHIFT) & 3) {
    case 0:
        e->res = tdx_unzigzag(res);
        break;
    case 1:
        e->res = (int64_t)e->args[0];
        break;
    case 2:
        e->res = e->p;
        break;
    default:
        e->res = e->g;
        break;
    }
    it->p = p;
    return 1;
}

#endif
