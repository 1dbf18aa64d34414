/* atomic_file.h: writing a file so that it is never seen half-written: data goes to a temporary
 * file beside the target, which is fsynced and renamed over it only when complete. */
#ifndef TDX_ATOMIC_FILE_H
#define TDX_ATOMIC_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct tdx_afile {
    int fd;
    char *tmp; /* temporary path (malloc'd) */
    char *dst; /* final path (malloc'd) */
    uint64_t written;
    uint64_t flushed; /* bytes handed to writeback early (see tdx_afile_write) */
    int direct;       /* tdx_afile_open_output on a device or FIFO: written in place, no tmp */
} tdx_afile;

int tdx_afile_open(tdx_afile *f, const char *path, tdx_err *err);
/* For output written front to back (JSON, a converted trace): as tdx_afile_open, except that an
 * existing target that is not a regular file (/dev/null, a FIFO, a pipe named by /dev/fd/N) is
 * opened and written in place, since renaming over it would replace the device or pipe with a
 * file. Only write, commit and abort apply then. */
int tdx_afile_open_output(tdx_afile *f, const char *path, tdx_err *err);
int tdx_afile_write(tdx_afile *f, const void *p, size_t n, tdx_err *err);
/* Writes at an absolute offset (for patching headers); does not move the append position. */
int tdx_afile_pwrite(tdx_afile *f, const void *p, size_t n, uint64_t off, tdx_err *err);
/* Cuts the file back to off bytes (the append position follows). */
int tdx_afile_truncate(tdx_afile *f, uint64_t off, tdx_err *err);
/* fsync, rename over the target, fsync the directory. On failure the temporary file is removed.
 * (Written in place: close only.) */
int tdx_afile_commit(tdx_afile *f, tdx_err *err);
/* Removes the temporary file (safe after a failed or successful commit). */
void tdx_afile_abort(tdx_afile *f);

/* p[0..n) to path, opened with tdx_afile_open_output. */
int tdx_write_file_atomic(const char *path, const void *p, size_t n, tdx_err *err);

#endif
