/* strpack.h: the compressed form of the index's string table (the STRINGS section body):
 * LZ77 within chunks of TDX_STR_CHUNK strings (templated log messages repeat most of their text),
 * rANS-coded; chunks decode independently, so a query unpacks only the strings it touches. */
#ifndef TDX_STRPACK_H
#define TDX_STRPACK_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/gen.h"
#include "core/mem.h"

/* Appends the packed form of strings 0..n-1 (string i is bytes[off[i], off[i+1])) to out.
 * Returns 0 or -1 (OOM). */
int tdx_strpack_encode(tdx_buf *out, const uint8_t *bytes, const uint64_t *off, uint64_t n);

/* Where tdx_strpack_write sends the packed table, in pieces of any size. */
typedef struct tdx_strpack_out {
    int (*put)(void *ctx, const void *p, size_t n, tdx_err *err);
    void *ctx;
    const char *beside;      /* the coded chunks wait in a scratch file there */
    void (*tick)(void *ctx); /* called after every few MiB of strings read (NULL: none) */
    void *tick_ctx;
} tdx_strpack_out;

/* The same bytes as tdx_strpack_encode, streamed: the chunks are coded into a scratch file while
 * their directory (24 bytes per TDX_STR_CHUNK strings) builds up in memory, then the header and
 * the chunks go out. Memory stays bounded however large the table; tick lets the caller give
 * back the pages of strings already read. 0, or -1 with err set. */
int tdx_strpack_write(const uint8_t *bytes, const uint64_t *off, uint64_t n,
                      const tdx_strpack_out *o, tdx_err *err);

/* An open packed table: its chunk directory and data, read in place (nothing is copied). */
typedef struct tdx_strpack {
    const uint8_t *dir;     /* nchunks entries (strpack.c) */
    const uint8_t *p, *end; /* the chunks' coded symbols */
    uint64_t n;             /* strings */
    uint64_t
        nchunks; /* chunk k holds strings [k * TDX_STR_CHUNK, min(n, (k + 1) * TDX_STR_CHUNK)) */
    int stored;  /* mode 0: tdx_strpack_open filled every string already */
} tdx_strpack;

/* Checks the header and chunk directory of p[0..len) (n strings) without touching the chunks;
 * a stored table (mode 0) is checked and unpacked into strs[0..n) at once. Returns 0, or -1
 * when the structure or a checksum is wrong (*oom is set when memory ran out). */
int tdx_strpack_open(tdx_strpack *sp, const uint8_t *p, size_t len, uint64_t n, tdx_str *strs,
                     int *oom);
void tdx_strpack_close(tdx_strpack *sp);

/* Checks chunk k against its checksum, unpacks it into storage from arena a and fills its
 * entries of strs (indexed by string id). Returns 0, or -1 when the chunk is damaged (never
 * reads or writes out of bounds) or memory runs out (*oom set). */
int tdx_strpack_chunk(const tdx_strpack *sp, uint64_t k, tdx_arena *a, tdx_str *strs, int *oom);

/* open + every chunk: strs[0..n) filled. Returns 0 or -1 as above. */
int tdx_strpack_decode(const uint8_t *p, size_t len, uint64_t n, tdx_arena *a, tdx_str *strs,
                       int *oom);

#endif
