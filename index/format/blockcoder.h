/* blockcoder.h: codes blocks of (context, value) pairs with rANS (index/format/rans.h), on a thread
 * of its own when asked, while the caller goes on producing the next blocks' values.
 *
 * Values of several streams (tables) may be interleaved; each stream's blocks are coded in the
 * order they were closed, each into that stream's output buffer, and handed to a sink there. The
 * values wait in chunks from a fixed pool, so memory stays bounded whatever a block's size, and
 * the bytes are the same with or without the thread. */
#ifndef TDX_BLOCKCODER_H
#define TDX_BLOCKCODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/mem.h"

#define TDX_BCODER_STREAMS 8       /* streams at most */
#define TDX_BCODER_CHUNK_VALS 8192 /* values a chunk holds */

/* Works out, on the coder's side, the value to code for a deferred pair (tdx_bcoder_put2) of
 * context cx: 0, or a nonzero code the coder keeps as it keeps a sink's. Called in the order
 * the pairs were put, stream by stream as the blocks are coded. */
typedef int (*tdx_bcoder_map)(void *ctx, uint32_t cx, uint64_t a, uint64_t b, uint64_t *v);

/* Called (on the coder's thread, when there is one) after a block of stream s was appended to
 * out[s] from byte `start`: count of records, count of values, then the coded values. Returns 0,
 * or a nonzero code the coder keeps (the first) and tdx_bcoder_end returns; *err may be set. */
typedef int (*tdx_bcoder_sink)(void *ctx, int s, uint64_t key, size_t start, tdx_err *err);

typedef struct tdx_bcchunk tdx_bcchunk;
typedef struct tdx_bcoder tdx_bcoder;

/* A stream's open chunk: the producer's side of it, which tdx_bcoder_put fills inline. */
typedef struct tdx_bcopen {
    tdx_bcchunk *c; /* NULL: none yet (n == cap == 0) */
    uint64_t *v;
    uint8_t *ctx;
    uint32_t n, cap;
    int s;
} tdx_bcopen;

/* nstreams <= TDX_BCODER_STREAMS; contexts are < nctx <= 128. out[s] receives stream s's blocks
 * (it must outlive the coder). Returns NULL on memory exhaustion or bad arguments. When the thread
 * is asked for but cannot start, chunks are coded as they are handed over (same bytes). */
tdx_bcoder *tdx_bcoder_new(int nstreams, uint32_t nctx, tdx_buf *const *out, tdx_bcoder_sink sink,
                           void *sink_ctx, bool thread);
/* Sets how deferred pairs become values (before the first tdx_bcoder_put2). */
void tdx_bcoder_set_map(tdx_bcoder *c, tdx_bcoder_map map, void *map_ctx);
/* The producer's handle of stream s, valid until the coder is freed. */
tdx_bcopen *tdx_bcoder_stream(tdx_bcoder *c, int s);

/* Internal to the two below: hands a full chunk to the coder and opens another; with `close`,
 * hands the open one (even empty) as the block's last, with its key and record count. */
void tdx_bcoder_submit_(tdx_bcoder *c, tdx_bcopen *o, bool close, uint64_t key, uint64_t nrec);

/* Adds value v of context ctx to the stream's open block (a block opens at its first value). */
static inline void tdx_bcoder_put(tdx_bcoder *c, tdx_bcopen *o, uint32_t ctx, uint64_t v) {
    if (__builtin_expect(o->n == o->cap, 0)) tdx_bcoder_submit_(c, o, false, 0, 0);
    o->v[o->n] = v;
    o->ctx[o->n++] = (uint8_t)ctx;
}

/* Adds the value the map will make of (a, b), which the coder's thread works out: work that
 * needs no answer here moves off the producer's thread. */
static inline void tdx_bcoder_put2(tdx_bcoder *c, tdx_bcopen *o, uint32_t ctx, uint64_t a,
                                   uint64_t b) {
    if (__builtin_expect(o->n + 1 >= o->cap, 0)) tdx_bcoder_submit_(c, o, false, 0, 0);
    o->v[o->n] = a;
    o->ctx[o->n++] = (uint8_t)(ctx | 0x80);
    o->v[o->n] = b;
    o->ctx[o->n++] = 0;
}

/* Ends the stream's open block: `nrec` records, the first with key `key`. */
static inline void tdx_bcoder_close(tdx_bcoder *c, tdx_bcopen *o, uint64_t key, uint64_t nrec) {
    tdx_bcoder_submit_(c, o, true, key, nrec);
}

/* Waits until every chunk handed over is coded (blocks closed so far are sunk, and the map was
 * called for their pairs), so the caller may read what the map and the sink wrote. Returns 0 or
 * the first failure code so far. */
int tdx_bcoder_sync(tdx_bcoder *c);

/* Waits until every closed block is coded and sunk; the thread ends. Returns 0 or the first
 * nonzero code (-1: memory exhaustion; else the sink's or the map's), then with *err (when err is
 * not NULL) copied from the coder's. Values of a block not closed are dropped. A later call
 * returns the same code. */
int tdx_bcoder_end(tdx_bcoder *c, tdx_err *err);
/* Ends it when it was not, and frees it. */
void tdx_bcoder_free(tdx_bcoder *c);

/* The CPU the coder spent coding, wherever it ran, and its thread's whole CPU (0: no thread), in
 * ns (core/cputime.h; build --verbose); complete after tdx_bcoder_end. */
void tdx_bcoder_cpu(const tdx_bcoder *c, int64_t *code_ns, int64_t *thread_ns);

#endif
