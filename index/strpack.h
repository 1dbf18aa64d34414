/* strpack.h: the compressed form of the index's string table (the STRINGS section body):
 * LZ77 against the strings before (templated log messages repeat most of their text), with the
 * lengths, literals and matches rANS-coded; the whole table decodes at index open. */
#ifndef TDX_STRPACK_H
#define TDX_STRPACK_H

#include <stddef.h>
#include <stdint.h>

#include "core/gen.h"
#include "core/mem.h"

/* Appends the packed form of strings 0..n-1 (string i is bytes[off[i], off[i+1])) to out.
 * Returns 0 or -1 (OOM). */
int tdx_strpack_encode(tdx_buf *out, const uint8_t *bytes, const uint64_t *off, uint64_t n);

/* Unpacks p[0..len) (all of it) holding n strings into storage from arena a and fills
 * strs[0..n). Returns 0, or -1 when the data is malformed (never reads or writes out of bounds)
 * or memory runs out (*oom set). */
int tdx_strpack_decode(const uint8_t *p, size_t len, uint64_t n, tdx_arena *a, tdx_str *strs,
                       int *oom);

#endif
