/* verify.h: the full check behind `info --verify`: every checksum, every event block decoded,
 * the tables recounted, and every saved viewer state restored as a query would restore it. */
#ifndef TDX_VERIFY_H
#define TDX_VERIFY_H

#include <stdint.h>

#include "core/error.h"
#include "index/reader.h"

/* Checks every section and block checksum, decodes every block and the tables (resources,
 * summary), and loads the viewer store and restores every saved viewer state as a query would:
 * bytes altered under matching checksums, or written wrong, fail here rather than in a query.
 * With o->jobs >= 2, that many threads decode the event blocks (the other checks run on the calling
 * thread meanwhile); the error reported is the same for every jobs: the first check in the order
 * above that fails, and of the blocks, the lowest-numbered damaged one. 0 or -1 with err set. */
typedef struct tdx_verify_opts {
    int jobs;
    /* Called on the calling thread now and then with the event blocks decoded so far (NULL:
     * none). */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
} tdx_verify_opts;

int tdx_index_verify(tdx_index *ix, const tdx_verify_opts *o, tdx_err *err);

#endif
