/* viewsec.c: the checks and readers of a view's directory and of its blobs that query and verify
 * share, so that `info --verify` refuses exactly what a query would. */
#include "index/views/viewsec.h"

#include <stdlib.h>

#include "core/varint.h"
#include "index/format/format.h"
#include "index/views/vevser.h"

int tdx_viewsec_check_dir(const uint8_t *dir, uint64_t len, int view, uint64_t nevents,
                          uint64_t *at) {
    *at = 0;
    if (len < VH_SIZE) return -1;
    uint64_t nck = tdx_rd64(dir + VH_NCKPT), items = 0;
    if (tdx_rd64(dir + VH_VIEW) != (uint64_t)view || nck == 0 || nck > (len - VH_SIZE) / CK_SIZE ||
        VH_SIZE + nck * CK_SIZE != len)
        return -1;
    for (uint64_t k = 0; k < nck; k++) {
        const uint8_t *c = dir + VH_SIZE + k * CK_SIZE, *p = c - CK_SIZE;
        *at = VH_SIZE + k * CK_SIZE;
        if (k && (tdx_rd64(c + CK_EVENT) <= tdx_rd64(p + CK_EVENT) ||
                  (int64_t)tdx_rd64(c + CK_TIME) < (int64_t)tdx_rd64(p + CK_TIME) ||
                  tdx_rd64(c + CK_NOPT) < tdx_rd64(p + CK_NOPT)))
            return -1;
        /* A count of output events fits the signed index the writer steps, with room to grow. */
        if (tdx_rd64(c + CK_EVENT) > nevents || tdx_rd64(c + CK_NOPT) > INT64_MAX / 2) return -1;
        uint64_t n = tdx_rd64(c + CK_NITEMS);
        if (tdx_rd64(c + CK_FIRST_ITEM) != items || n > UINT64_MAX - items) return -1;
        items += n;
    }
    *at = VH_NITEMS;
    return items == tdx_rd64(dir + VH_NITEMS) ? 0 : -1;
}

int tdx_viewsec_item(tdx_deser *d, tdx_vev ev[2], size_t *n) {
    uint64_t k = tdx_deser_u(d);
    if (d->bad || k < 1 || k > 2) return -1;
    for (uint64_t j = 0; j < k; j++)
        if (tdx_vev_load(d, &ev[j])) return -1;
    *n = (size_t)k;
    return 0;
}

int tdx_viewsec_stop(const uint8_t *p, size_t n, uint64_t most, int64_t t0, int64_t **out,
                     uint64_t *m) {
    tdx_deser d = {p, p + n, 0};
    *m = tdx_deser_u(&d);
    if (out) *out = NULL;
    if (d.bad || *m > most || *m > n) return -1; /* (an entry takes a byte at least) */
    if (out && *m && !(*out = malloc((size_t)*m * sizeof **out))) return -2;
    uint64_t t = (uint64_t)t0;
    for (uint64_t j = 0; j < *m; j++) {
        t += j ? tdx_deser_u(&d) : (uint64_t)tdx_deser_i(&d);
        if (out) (*out)[j] = (int64_t)t;
    }
    if (!d.bad && d.p == d.end) return 0;
    if (out) {
        free(*out);
        *out = NULL;
    }
    return -1;
}
