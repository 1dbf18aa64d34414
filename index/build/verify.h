/* verify.h: the full check behind `info --verify`: every checksum, every event block decoded,
 * the tables recounted, and every saved viewer state restored as a query would restore it. */
#ifndef TDX_VERIFY_H
#define TDX_VERIFY_H

#include <stdint.h>

#include "core/error.h"
#include "index/format/reader.h"

typedef struct tdx_verify_opts {
    int jobs; /* threads that decode the event blocks (below 1: 1) */
    /* Called on the calling thread now and then with the event blocks decoded so far (NULL:
     * none). */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
} tdx_verify_opts;

/* Checks every section checksum and the string, goroutine, proc and thread tables; loads the
 * viewer store, restores every saved viewer state as a query would and checks the summary; then
 * decodes every event block and recounts the tables' events. Bytes altered under matching
 * checksums, or written wrong, fail here rather than in a query. With o->jobs >= 2 the blocks are
 * decoded by that many threads while the calling thread checks the views. The error reported is
 * the same for every jobs: the first check in the order above that fails, and of the blocks, the
 * lowest-numbered damaged one. 0 or -1 with err set. */
int tdx_index_verify(tdx_index *ix, const tdx_verify_opts *o, tdx_err *err);

#endif
