/* scratch.h: an anonymous scratch file beside the index being written, for data too large to keep
 * in memory until the end (view blobs, sort runs, summary tables); gone when closed or on exit. */
#ifndef TDX_SCRATCH_H
#define TDX_SCRATCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/mem.h"

typedef struct tdx_scratch {
    int fd;       /* -1 until opened */
    uint64_t len; /* bytes appended so far (buffered ones included) */
    tdx_buf buf;  /* appends not yet written (at most 512 KiB) */
} tdx_scratch;

/* Creates the file in the directory of `beside` (O_TMPFILE, else a named file removed at once). */
int tdx_scratch_open(tdx_scratch *s, const char *beside, tdx_err *err);
/* Appends n bytes at offset s->len. */
int tdx_scratch_put(tdx_scratch *s, const void *p, size_t n, tdx_err *err);
/* Writes out what is buffered, so that reads see every byte appended. */
int tdx_scratch_flush(tdx_scratch *s, tdx_err *err);
/* Reads exactly n bytes at off (flushed bytes only). */
int tdx_scratch_read(const tdx_scratch *s, uint64_t off, void *p, size_t n, tdx_err *err);
/* Passes the whole file, in order, to put (pieces of at most 512 KiB). */
int tdx_scratch_copy(tdx_scratch *s, int (*put)(void *ctx, const void *p, size_t n, tdx_err *err),
                     void *ctx, tdx_err *err);
void tdx_scratch_close(tdx_scratch *s);

#endif
