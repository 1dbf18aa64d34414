/* prefetch.h: keeps reads of the trace region the workers will parse next in flight with
 * io_uring, so a cold file streams from disk while earlier generations are decoded. */
#ifndef TDX_PREFETCH_H
#define TDX_PREFETCH_H

#include <stdint.h>

#include "error.h"

typedef struct tdx_prefetch tdx_prefetch;

/* Opens path for prefetching [0, size). Returns NULL when io_uring is unavailable (err says why:
 * e.g. ENOSYS or EPERM in containers); callers then fall back to plain mmap faults. */
tdx_prefetch *tdx_prefetch_start(const char *path, uint64_t size, tdx_err *err);

/* The consumer has reached byte pos: reap finished reads and keep the window ahead of pos
 * filled. Cheap; call it often. */
void tdx_prefetch_advance(tdx_prefetch *pf, uint64_t pos);

/* Bytes requested so far (for --verbose). */
uint64_t tdx_prefetch_requested(const tdx_prefetch *pf);

void tdx_prefetch_stop(tdx_prefetch *pf);

#endif
