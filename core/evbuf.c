/* evbuf.c: packed event records: a presence mask, then only the non-zero fields as varints. */
#include "evbuf.h"

#include <string.h>

#include "varint.h"

void tdx_evbuf_reset(tdx_evbuf *b) {
    b->bytes.n = 0;
    b->n = 0;
    b->last = 0;
}

void tdx_evbuf_free(tdx_evbuf *b) {
    tdx_vec_free(&b->bytes);
    b->n = 0;
}

static inline uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t unzz(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

enum {
    F_ARG0 = 1 << 0, F_ARG1 = 1 << 1, F_ARG2 = 1 << 2, F_ARG3 = 1 << 3,
    F_STACK = 1 << 4, F_TSTACK = 1 << 5, F_STR0 = 1 << 6, F_STR1 = 1 << 7,
    F_RES = 1 << 8, F_OFF = 1 << 9, F_NSEC = 1 << 10,
};

int tdx_evbuf_append(tdx_evbuf *b, const tdx_event *e) {
    if (tdx_vec_reserve(&b->bytes, b->bytes.n + 128)) return -1;
    uint8_t *p = b->bytes.v + b->bytes.n, *start = p;
    unsigned mask = 0;
    for (int i = 0; i < 4; i++)
        if (e->args[i]) mask |= F_ARG0 << i;
    if (e->stack) mask |= F_STACK;
    if (e->tstack) mask |= F_TSTACK;
    if (e->str[0]) mask |= F_STR0;
    if (e->str[1]) mask |= F_STR1;
    if (e->res) mask |= F_RES;
    if (e->off) mask |= F_OFF;
    if (e->sync_nsec) mask |= F_NSEC;
    *p++ = e->type;
    *p++ = e->kind;
    *p++ = (uint8_t)(e->res_kind | (e->has_clock << 2) | (e->has_tstack << 3));
    *p++ = (uint8_t)(e->from | (e->to << 4));
    p += tdx_put_uvarint(p, mask);
    p += tdx_put_uvarint(p, zz((int64_t)((uint64_t)e->time - (uint64_t)b->last)));
    p += tdx_put_uvarint(p, zz(e->m));
    p += tdx_put_uvarint(p, zz(e->p));
    p += tdx_put_uvarint(p, zz(e->g));
    for (int i = 0; i < 4; i++)
        if (mask & (F_ARG0 << i)) p += tdx_put_uvarint(p, e->args[i]);
    if (mask & F_STACK) p += tdx_put_uvarint(p, e->stack);
    if (mask & F_TSTACK) p += tdx_put_uvarint(p, e->tstack);
    if (mask & F_STR0) p += tdx_put_uvarint(p, e->str[0]);
    if (mask & F_STR1) p += tdx_put_uvarint(p, e->str[1]);
    if (mask & F_RES) p += tdx_put_uvarint(p, zz(e->res));
    if (mask & F_OFF) p += tdx_put_uvarint(p, e->off);
    if (mask & F_NSEC) p += tdx_put_uvarint(p, e->sync_nsec);
    b->bytes.n += (size_t)(p - start);
    b->last = e->time;
    b->n++;
    return 0;
}

void tdx_evbuf_iter_init(tdx_evbuf_iter *it, const tdx_evbuf *b) {
    it->p = b->bytes.v;
    it->end = b->bytes.v + b->bytes.n;
    it->last = 0;
}

static uint64_t rd(tdx_evbuf_iter *it) {
    uint64_t v = 0;
    int k = tdx_uvarint(it->p, it->end, &v);
    it->p += k > 0 ? k : 0;
    return v;
}

int tdx_evbuf_next(tdx_evbuf_iter *it, tdx_event *e) {
    if (it->p >= it->end) return 0;
    memset(e, 0, sizeof *e);
    e->type = *it->p++;
    e->kind = *it->p++;
    uint8_t x = *it->p++;
    e->res_kind = x & 3;
    e->has_clock = (x >> 2) & 1;
    e->has_tstack = (x >> 3) & 1;
    x = *it->p++;
    e->from = x & 15;
    e->to = x >> 4;
    unsigned mask = (unsigned)rd(it);
    e->time = (int64_t)((uint64_t)it->last + (uint64_t)unzz(rd(it)));
    it->last = e->time;
    e->m = unzz(rd(it));
    e->p = unzz(rd(it));
    e->g = unzz(rd(it));
    for (int i = 0; i < 4; i++)
        if (mask & (F_ARG0 << i)) e->args[i] = rd(it);
    if (mask & F_STACK) e->stack = (uint32_t)rd(it);
    if (mask & F_TSTACK) e->tstack = (uint32_t)rd(it);
    if (mask & F_STR0) e->str[0] = (uint32_t)rd(it);
    if (mask & F_STR1) e->str[1] = (uint32_t)rd(it);
    if (mask & F_RES) e->res = unzz(rd(it));
    if (mask & F_OFF) e->off = rd(it);
    if (mask & F_NSEC) e->sync_nsec = rd(it);
    return 1;
}
