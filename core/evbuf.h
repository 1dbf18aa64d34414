/* evbuf.h: a compact byte encoding of ordered events, used to hold a generation's output while
 * workers run ahead of the in-order consumer (about a sixth of a tdx_event per event). */
#ifndef TDX_EVBUF_H
#define TDX_EVBUF_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "mem.h"

typedef struct tdx_evbuf {
    tdx_buf bytes;
    uint64_t n;     /* events */
    int64_t last;   /* time of the last appended event (delta base) */
} tdx_evbuf;

void tdx_evbuf_reset(tdx_evbuf *b);
void tdx_evbuf_free(tdx_evbuf *b);
int tdx_evbuf_append(tdx_evbuf *b, const tdx_event *e);

typedef struct tdx_evbuf_iter {
    const uint8_t *p, *end;
    int64_t last;
} tdx_evbuf_iter;

void tdx_evbuf_iter_init(tdx_evbuf_iter *it, const tdx_evbuf *b);
/* Decodes the next event; returns 1, or 0 at the end. */
int tdx_evbuf_next(tdx_evbuf_iter *it, tdx_event *e);

#endif
