/* scratch.c: anonymous scratch files beside the index. */
#include "index/common/scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FLUSH_AT (512u << 10)

int tdx_scratch_open(tdx_scratch *s, const char *beside, tdx_err *err) {
    memset(s, 0, sizeof *s);
    s->fd = -1;
    char *dup = strdup(beside);
    if (!dup) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    const char *dir = dirname(dup);
    s->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (s->fd < 0) { /* no O_TMPFILE here: a named file, removed at once */
        size_t n = strlen(dir) + 32;
        char *path = malloc(n);
        if (path) {
            snprintf(path, n, "%s/.traceidx.XXXXXX", dir);
            s->fd = mkostemp(path, O_CLOEXEC);
            if (s->fd >= 0) unlink(path);
            free(path);
        }
    }
    int e = errno;
    free(dup);
    if (s->fd < 0)
        return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET,
                        "cannot create a scratch file beside the index: %s", strerror(e));
    return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n, tdx_err *err) {
    size_t off = 0;
    while (off < n) {
        ssize_t k = write(fd, p + off, n - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "cannot write the scratch file: %s",
                            k < 0 ? strerror(errno) : "no space");
        off += (size_t)k;
    }
    return 0;
}

int tdx_scratch_flush(tdx_scratch *s, tdx_err *err) {
    if (write_all(s->fd, s->buf.v, s->buf.n, err)) return -1;
    s->buf.n = 0;
    return 0;
}

/* The buffer never holds more than FLUSH_AT bytes (so never grows past it: a build keeps a dozen
 * of these files open at once); a piece that large is written at once. */
int tdx_scratch_put(tdx_scratch *s, const void *p, size_t n, tdx_err *err) {
    if (s->buf.n + n > FLUSH_AT && s->buf.n && tdx_scratch_flush(s, err)) return -1;
    if (n >= FLUSH_AT) {
        if (write_all(s->fd, p, n, err)) return -1;
    } else if (n && tdx_buf_append(&s->buf, p, n)) {
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    }
    s->len += n;
    return 0;
}

int tdx_scratch_read(const tdx_scratch *s, uint64_t off, void *p, size_t n, tdx_err *err) {
    uint8_t *q = p;
    while (n) {
        ssize_t k = pread(s->fd, q, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "cannot read the scratch file back: %s",
                            k < 0 ? strerror(errno) : "short file");
        q += k;
        off += (uint64_t)k;
        n -= (size_t)k;
    }
    return 0;
}

int tdx_scratch_copy(tdx_scratch *s, int (*put)(void *ctx, const void *p, size_t n, tdx_err *err),
                     void *ctx, tdx_err *err) {
    if (tdx_scratch_flush(s, err)) return -1;
    uint8_t *buf = malloc(FLUSH_AT);
    if (!buf) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    int rc = 0;
    for (uint64_t off = 0; off < s->len && !rc; off += FLUSH_AT) {
        size_t want = s->len - off < FLUSH_AT ? (size_t)(s->len - off) : FLUSH_AT;
        rc = tdx_scratch_read(s, off, buf, want, err) || put(ctx, buf, want, err) ? -1 : 0;
    }
    free(buf);
    return rc;
}

void tdx_scratch_close(tdx_scratch *s) {
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    tdx_vec_free(&s->buf);
    s->len = 0;
}
