/* footprint.c: event bytes and counts by type over Go's raw reader (see footprint.h). */
#include "core/footprint.h"

#include <string.h>
#include <sys/mman.h>

#include "core/rawev.h"

/* Gives back the pages of data[0..upto) (whole pages only). */
static void release_below(const uint8_t *data, size_t upto) {
    uintptr_t pg = 4096, a = ((uintptr_t)data + pg - 1) & ~(pg - 1);
    uintptr_t b = (uintptr_t)(data + upto) & ~(pg - 1);
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): the page rounding needs integers */
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

int tdx_footprint_count(const uint8_t *data, size_t n, bool release, tdx_footprint *fp,
                        tdx_err *err) {
    memset(fp, 0, sizeof *fp);
    tdx_rawreader r;
    if (tdx_rawreader_init(&r, data, n, err)) return -1;
    fp->version = r.version;
    fp->total = n;
    tdx_rawev e;
    int rc;
    size_t given = 0;
    while ((rc = tdx_rawreader_next(&r, &e, err)) == 1) {
        fp->bytes[e.type] += e.canon;
        fp->count[e.type]++;
        fp->events++;
        /* everything behind, each time (see reader.c: a 2 MiB folio near the boundary) */
        if (release && r.pos - given >= (16u << 20)) release_below(data, given = r.pos);
    }
    return rc;
}
