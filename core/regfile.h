/* regfile.h: opens a path that must be a regular file (a trace or an index) without blocking:
 * a FIFO or a device given by mistake is refused at once instead of waiting for a writer. */
#ifndef TDX_REGFILE_H
#define TDX_REGFILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "error.h"

/* A read-only descriptor of path (close it), its status in *st; -1 with err set ("cannot open",
 * "not a regular file"). */
int tdx_open_regular(const char *path, struct stat *st, tdx_err *err);

/* Reads up to n bytes from the start of path: the count read (0 for anything but a regular
 * file, which is not read), or -errno when it cannot be opened or read. */
ssize_t tdx_read_head(const char *path, void *buf, size_t n);

#endif
