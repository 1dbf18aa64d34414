/* prefetch.c: io_uring reads into one scratch buffer (its contents are discarded: the point is
 * that the kernel's page cache holds the data when the mapping touches it). */
#include "prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    CHUNK = 4 << 20, /* one read */
    SLOTS = 8,       /* reads in flight at most: a 32 MiB window */
};

struct tdx_prefetch {
    struct io_uring ring;
    int fd;
    uint64_t size, next; /* next byte to request */
    int inflight;
    /* Every read lands in the same CHUNK bytes: what they hold is never looked at, so reads in
     * flight may overwrite each other; one buffer per read cost 28 MiB more of resident memory. */
    uint8_t *buf;
    uint64_t requested;
};

tdx_prefetch *tdx_prefetch_start(const char *path, uint64_t size, tdx_err *err) {
    tdx_prefetch *pf = calloc(1, sizeof *pf);
    if (!pf) {
        tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        return NULL;
    }
    pf->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (pf->fd < 0) {
        tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "cannot open for prefetching: %s", strerror(errno));
        free(pf);
        return NULL;
    }
    int rc = io_uring_queue_init(SLOTS * 2, &pf->ring, 0);
    if (rc < 0) {
        tdx_errf(err, TDX_EUNSUPPORTED, TDX_NO_OFFSET, "io_uring unavailable (%s)", strerror(-rc));
        close(pf->fd);
        free(pf);
        return NULL;
    }
    if (posix_memalign((void **)&pf->buf, 4096, CHUNK)) {
        io_uring_queue_exit(&pf->ring);
        close(pf->fd);
        free(pf);
        tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        return NULL;
    }
    pf->size = size;
    tdx_prefetch_advance(pf, 0);
    return pf;
}

static void reap(tdx_prefetch *pf, int wait) {
    struct io_uring_cqe *cqe;
    while (pf->inflight > 0) {
        int rc = wait ? io_uring_wait_cqe(&pf->ring, &cqe) : io_uring_peek_cqe(&pf->ring, &cqe);
        if (rc < 0) break;
        io_uring_cqe_seen(&pf->ring, cqe);
        pf->inflight--;
        wait = 0;
    }
}

void tdx_prefetch_advance(tdx_prefetch *pf, uint64_t pos) {
    if (!pf) return;
    reap(pf, 0);
    if (pf->next < pos) pf->next = pos - pos % 4096; /* never fall behind the consumer */
    int submitted = 0;
    while (pf->inflight < SLOTS && pf->next < pf->size &&
           pf->next < pos + (uint64_t)SLOTS * CHUNK) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&pf->ring);
        if (!sqe) break;
        uint64_t n = pf->size - pf->next < CHUNK ? pf->size - pf->next : CHUNK;
        io_uring_prep_read(sqe, pf->fd, pf->buf, (unsigned)n, pf->next);
        pf->next += n;
        pf->requested += n;
        pf->inflight++;
        submitted++;
    }
    if (submitted) io_uring_submit(&pf->ring);
}

uint64_t tdx_prefetch_requested(const tdx_prefetch *pf) {
    return pf ? pf->requested : 0;
}

void tdx_prefetch_stop(tdx_prefetch *pf) {
    if (!pf) return;
    reap(pf, 1);
    while (pf->inflight > 0) reap(pf, 1);
    io_uring_queue_exit(&pf->ring);
    close(pf->fd);
    free(pf->buf);
    free(pf);
}
