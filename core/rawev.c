/* rawev.c: Go's raw reader over wire bytes (see rawev.h). */
#include "core/rawev.h"

#include <inttypes.h>
#include <string.h>

#include "core/source.h"
#include "core/varint.h"

int tdx_rawreader_init(tdx_rawreader *r, const uint8_t *data, size_t n, tdx_err *err) {
    memset(r, 0, sizeof *r);
    if (tdx_header_parse(data, n, &r->version, err)) return -1;
    r->data = data;
    r->n = n;
    r->pos = TDX_HEADER_SIZE;
    return 0;
}

/* One uvarint at r->pos into *v, its shortest size added to *canon. */
static int get(tdx_rawreader *r, uint64_t *v, uint64_t *canon, tdx_err *err) {
    int k = tdx_uvarint(r->data + r->pos, r->data + r->n, v);
    if (k < 0)
        return tdx_errf(err, TDX_EFORMAT, r->pos, "%s",
                        k == TDX_VARINT_OVERFLOW ? tdx_varint_strerror(k) : "unexpected EOF");
    r->pos += (size_t)k;
    *canon += (uint64_t)tdx_uvarint_len(*v);
    return 0;
}

int tdx_rawreader_next(tdx_rawreader *r, tdx_rawev *e, tdx_err *err) {
    if (r->pos >= r->n) return 0;
    memset(e, 0, sizeof *e);
    e->off = r->pos;
    e->type = r->data[r->pos++];
    e->canon = 1;
    if (!tdx_spec_in_version(r->version, e->type))
        return tdx_errf(err, TDX_EFORMAT, e->off, "invalid event type: %u", e->type);
    const tdx_evspec *sp = &tdx_specs[e->type];
    for (int i = 0; i < sp->nargs; i++)
        if (get(r, &e->args[i], &e->canon, err)) return -1;
    if (sp->is_stack) {
        e->frames = r->data + r->pos;
        uint64_t v;
        /* (each uvarint takes a byte at least: the loop ends with the data) */
        for (uint64_t fr = 0; fr < e->args[1]; fr++)
            for (int i = 0; i < 4; i++)
                if (get(r, &v, &e->canon, err)) return -1;
    }
    if (sp->has_data) {
        if (get(r, &e->ndata, &e->canon, err)) return -1;
        if (e->ndata > r->n - r->pos)
            return tdx_errf(err, TDX_EFORMAT, r->pos,
                            "unexpected EOF: data of %" PRIu64
                            " bytes runs past the end of the file",
                            e->ndata);
        e->data = r->data + r->pos;
        r->pos += (size_t)e->ndata;
        e->canon += e->ndata;
    }
    return 1;
}
