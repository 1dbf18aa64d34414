/* evcodec.h: the compact columnar encoding of a block of ordered events in the index.
 * Fields go to separate streams (types, time deltas, threads, context misses, ids, stacks,
 * strings, values, states), each Huffman-coded; see docs/index-format.md. */
#ifndef TDX_EVCODEC_H
#define TDX_EVCODEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/hmap.h"
#include "core/mem.h"

#define TDX_EVBLOCK_EVENTS 16384 /* events per block (the unit of random access) */

enum {
    TDX_ST_TYPE = 0,
    TDX_ST_TIME,
    TDX_ST_TIMEREM,
    TDX_ST_THREAD,
    TDX_ST_CTX,
    TDX_ST_IDS,
    TDX_ST_STACK,
    TDX_ST_STR,
    TDX_ST_VAL,
    TDX_ST_STATE,
    TDX_ST_COUNT
};

typedef struct tdx_evenc {
    tdx_buf st[TDX_ST_COUNT];
    TDX_VEC(tdx_event) ev; /* the block's events, kept until finish (time granule choice) */
} tdx_evenc;

void tdx_evenc_init(tdx_evenc *e);
void tdx_evenc_free(tdx_evenc *e);

/* Encodes events[0..n) (string and stack ids already global) as one block appended to out. */
int tdx_evenc_block(tdx_evenc *enc, const tdx_event *events, size_t n, tdx_buf *out);

/* Decodes one block of `len` bytes holding `n` events into out[0..n). Returns 0, or -1 when the
 * block is malformed (never reads out of bounds). */
int tdx_evdec_block(const uint8_t *p, size_t len, size_t n, tdx_event *out);

#endif
