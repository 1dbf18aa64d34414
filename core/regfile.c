/* regfile.c: see regfile.h. */
#include "regfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* O_NONBLOCK makes open() return at once on a FIFO with no writer (a regular file ignores it for
 * reads, but it is cleared all the same: the build's io_uring reads use their own descriptor). */
static int open_checked(const char *path, struct stat *st, int *errnum) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        *errnum = errno;
        return -1;
    }
    if (fstat(fd, st) != 0) {
        *errnum = errno;
        close(fd);
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        *errnum = 0;
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        *errnum = errno;
        close(fd);
        return -1;
    }
    return fd;
}

int tdx_open_regular(const char *path, struct stat *st, tdx_err *err) {
    int e;
    int fd = open_checked(path, st, &e);
    if (fd >= 0) return fd;
    if (e == 0) return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "not a regular file");
    return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "cannot open: %s", strerror(e));
}

ssize_t tdx_read_head(const char *path, void *buf, size_t n) {
    struct stat st;
    int e;
    int fd = open_checked(path, &st, &e);
    if (fd < 0) return e ? -e : 0;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            e = errno;
            close(fd);
            return -e;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    close(fd);
    return (ssize_t)got;
}
