/* huff.h: a byte-oriented canonical Huffman codec for the index's column streams.
 * Codes are length-limited to 11 bits so decoding is one table lookup per symbol. */
#ifndef TDX_HUFF_H
#define TDX_HUFF_H

#include <stddef.h>
#include <stdint.h>

#include "core/mem.h"

#define TDX_HUFF_MAXLEN 11

/* Appends the encoding of src[0..n) to out: a header (mode byte, code lengths), then the bits.
 * Incompressible or tiny inputs are stored raw. Returns 0 or -1 (OOM). */
int tdx_huff_encode(tdx_buf *out, const uint8_t *src, size_t n);

/* Decodes exactly n bytes from in[0..inlen) into dst. Returns the number of input bytes consumed,
 * or -1 when the input is malformed or too short (never reads or writes out of bounds). */
long tdx_huff_decode(const uint8_t *in, size_t inlen, uint8_t *dst, size_t n);

#endif
