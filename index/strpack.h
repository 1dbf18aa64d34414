/* strpack.h: the compressed form of the index's string table (the STRINGS section body):
 * LZ77 within chunks of TDX_STR_CHUNK strings (templated log messages repeat most of their text),
 * rANS-coded; chunks decode independently, so a query unpacks only the strings it touches. */
#ifndef TDX_STRPACK_H
#define TDX_STRPACK_H

#include <stddef.h>
#include <stdint.h>

#include "core/gen.h"
#include "core/mem.h"

/* Appends the packed form of strings 0..n-1 (string i is bytes[off[i], off[i+1])) to out.
 * Returns 0 or -1 (OOM). */
int tdx_strpack_encode(tdx_buf *out, const uint8_t *bytes, const uint64_t *off, uint64_t n);

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
