/* evcodec.h: the compact encoding of a block of ordered events in the index.
 * Each thread's events are modelled as their own sequence (types, time deltas, context) and the
 * fields are rANS-coded with per-block tables chosen by context; see docs/index-format.md. */
#ifndef TDX_EVCODEC_H
#define TDX_EVCODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/mem.h"
#include "index/format/rans.h"

#define TDX_EVBLOCK_EVENTS 16384 /* events per block (the unit of random access) */

/* Fields, for the size statistics of bench/codec. */
enum {
    TDX_EF_TYPE = 0,
    TDX_EF_TIME,
    TDX_EF_THREAD,
    TDX_EF_CTX,
    TDX_EF_IDS,
    TDX_EF_STACK,
    TDX_EF_STR,
    TDX_EF_VAL,
    TDX_EF_HEADER, /* block header, tables, lane states */
    TDX_EF_COUNT
};

typedef struct tdx_evenc {
    tdx_rans_enc rc;
    void *work; /* per-block scratch (threads, links), grown as needed */
    void *model;
    void *rec; /* encoder-side recency trees */
    uint64_t *xbits;
    size_t work_cap;
    /* Estimated coded bits per field, summed over every block encoded (bench/codec). */
    double stat[TDX_EF_COUNT];
    int stats; /* collect stat[] (costs a pass over the tables per block) */
} tdx_evenc;

void tdx_evenc_init(tdx_evenc *e);
void tdx_evenc_free(tdx_evenc *e);
const char *tdx_evcodec_field_name(int f);

/* Encodes events[0..n) (string and stack ids already global) as one block appended to out.
 * Returns 0 or -1 (OOM). */
int tdx_evenc_block(tdx_evenc *enc, const tdx_event *events, size_t n, tdx_buf *out);

/* A decoder's working memory (rANS tables, model state), kept from one block to the next: a
 * fresh one per block costs its allocations and their page faults every time. One user at a time.
 */
typedef struct tdx_evdec tdx_evdec;
tdx_evdec *tdx_evdec_new(void); /* NULL when out of memory */
void tdx_evdec_free(tdx_evdec *d);
/* Whether d stores decoded events with streaming (non-temporal) stores: for output another thread
 * reads, where ordinary stores first fetch each line from that thread's core. Off by default
 * (output read at once, by the decoding thread, is best left in its cache). */
void tdx_evdec_set_streaming(tdx_evdec *d, bool on);

/* Decodes one block of `len` bytes holding `n` events into out[0..n), with d's memory (d NULL: a
 * temporary one). Returns 0, or -1 when the block is malformed or memory runs out (never reads
 * out of bounds). */
int tdx_evdec_block(tdx_evdec *d, const uint8_t *p, size_t len, size_t n, tdx_event *out);

/* The same, a piece at a time (a reader then works in a small buffer): begin reads the block's
 * header, each next decodes up to max more events into out (*got of them; 0 once all n were
 * given) and, with the last one, checks that the block ends there. The bytes must stay valid
 * until then. Each returns 0, or -1 when the block is malformed or memory runs out; after -1,
 * nothing more comes from the block. */
int tdx_evdec_begin(tdx_evdec *d, const uint8_t *p, size_t len, size_t n);
int tdx_evdec_next(tdx_evdec *d, tdx_event *out, size_t max, size_t *got);

#endif
