/* viewgen_ser.h: the little serialization kit of the viewer-generator checkpoints and the store:
 * uvarints/zigzag varints appended to a tdx_buf, and a bounds-checked reader with a sticky error.
 */
#ifndef TDX_VIEWGEN_SER_H
#define TDX_VIEWGEN_SER_H

#include <stdint.h>
#include <string.h>

#include "core/mem.h"
#include "core/varint.h"

static inline int tdx_ser_i(tdx_buf *b, int64_t v) {
    return tdx_buf_uvarint(b, tdx_zigzag(v));
}
static inline int tdx_ser_bytes(tdx_buf *b, const void *p, size_t n) {
    return tdx_buf_uvarint(b, n) || tdx_buf_append(b, p, n);
}

typedef struct tdx_deser {
    const uint8_t *p, *end;
    int bad;
} tdx_deser;

static inline uint64_t tdx_deser_u(tdx_deser *d) {
    uint64_t v = 0;
    int k = tdx_uvarint(d->p, d->end, &v);
    if (k < 0) {
        d->bad = 1;
        return 0;
    }
    d->p += k;
    return v;
}
static inline int64_t tdx_deser_i(tdx_deser *d) {
    return tdx_unzigzag(tdx_deser_u(d));
}
/* A u32 that must be below `lim`. */
static inline uint32_t tdx_deser_u32(tdx_deser *d, uint64_t lim) {
    uint64_t v = tdx_deser_u(d);
    if (v >= lim) {
        d->bad = 1;
        return 0;
    }
    return (uint32_t)v;
}
static inline const uint8_t *tdx_deser_bytes(tdx_deser *d, size_t *n) {
    uint64_t len = tdx_deser_u(d);
    if (d->bad || len > (uint64_t)(d->end - d->p)) {
        d->bad = 1;
        *n = 0;
        return d->p;
    }
    const uint8_t *q = d->p;
    d->p += len;
    *n = (size_t)len;
    return q;
}

#endif
