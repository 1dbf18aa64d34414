/* evbuf.c: buffer management for the packed event records (the codec is inline in evbuf.h). */
#include "evbuf.h"

void tdx_evbuf_reset(tdx_evbuf *b, uint64_t base_off) {
    b->bytes.n = 0;
    b->n = 0;
    b->last = 0;
    b->base_off = base_off;
}

void tdx_evbuf_free(tdx_evbuf *b) {
    tdx_vec_free(&b->bytes);
    b->n = 0;
}

int tdx_evbuf_grow_(tdx_evbuf *b) {
    /* Grow by doubling (tdx_vec_grow_); the slack keeps whole-word loads and stores in bounds. */
    return tdx_vec_reserve(&b->bytes, b->bytes.n + TDX_EVB_MAXREC + TDX_EVBUF_SLACK);
}

void tdx_evbuf_iter_init(tdx_evbuf_iter *it, const tdx_evbuf *b) {
    it->p = b->bytes.v;
    it->end = b->bytes.n ? b->bytes.v + b->bytes.n : b->bytes.v; /* (NULL + 0 is undefined) */
    it->last = 0;
    it->base_off = b->base_off;
}
