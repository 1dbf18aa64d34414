/* rawev.h: the wire events of a Go 1.22+ trace one by one, as Go's raw reader reads them
 * (internal/trace/raw): type, arguments, stack frames and data, with no framing interpretation. */
#ifndef TDX_RAWEV_H
#define TDX_RAWEV_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/spec.h"

typedef struct tdx_rawev {
    unsigned type;
    uint64_t args[TDX_MAX_ARGS]; /* the spec's arguments (tdx_specs[type].nargs) */
    const uint8_t *frames;       /* a stack's args[1] frames: 4 uvarints each, known to decode */
    const uint8_t *data;         /* a string's bytes (has_data), ndata of them */
    uint64_t ndata;
    uint64_t off;   /* file offset of its type byte */
    uint64_t canon; /* Go's EncodedSize: its bytes with every uvarint at its shortest */
} tdx_rawev;

typedef struct tdx_rawreader {
    const uint8_t *data;
    size_t n, pos;
    int version;
} tdx_rawreader;

/* Reads the header of data[0..n). 0, or -1 with err set (not a v2 trace header). */
int tdx_rawreader_init(tdx_rawreader *r, const uint8_t *data, size_t n, tdx_err *err);
/* The next event: 1; 0 at the end of the data; -1 with err set (offset: the bad byte) for an
 * unknown type, a truncated or overlong uvarint, or data running past the end. */
int tdx_rawreader_next(tdx_rawreader *r, tdx_rawev *e, tdx_err *err);

#endif
