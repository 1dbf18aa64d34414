/* filevec.h: an append-only byte array kept in a scratch file and read through a shared mapping,
 * so that its pages can be handed back at any time (the next read takes them from the page cache).
 * The index writer keeps its global string table this way: it grows with the trace. */
#ifndef TDX_FILEVEC_H
#define TDX_FILEVEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "index/common/scratch.h"

typedef struct tdx_fvec {
    tdx_scratch file; /* appends are buffered there; flushed bytes are read through map */
    uint8_t *map;     /* MAP_SHARED, read-only, `reserved` bytes of address space */
    size_t reserved;
} tdx_fvec;

/* Creates the file beside `beside` and maps `reserve` bytes of address space for a start (at
 * least a page); appends grow the mapping as the file does. */
int tdx_fvec_open(tdx_fvec *v, const char *beside, size_t reserve, tdx_err *err);
void tdx_fvec_close(tdx_fvec *v);

static inline uint64_t tdx_fvec_len(const tdx_fvec *v) {
    return v->file.len;
}

/* Appends p[0..n) at offset tdx_fvec_len(v). When the mapping is full it is doubled, and may move:
 * so nothing may read through it while an append runs. Fails only when the address space or
 * the scratch file does. */
int tdx_fvec_append(tdx_fvec *v, const void *p, size_t n, tdx_err *err);

/* The bytes at off, for a range that one append wrote: valid until the next append. */
static inline const uint8_t *tdx_fvec_at(const tdx_fvec *v, uint64_t off) {
    uint64_t flushed = v->file.len - v->file.buf.n;
    return off >= flushed ? v->file.buf.v + (off - flushed) : v->map + off;
}

/* Writes out what is buffered: then every byte is read through the mapping (and pointers into
 * it stay valid until the next append or tdx_fvec_close). */
int tdx_fvec_flush(tdx_fvec *v, tdx_err *err);

/* Gives the mapping's resident pages back (safe while other threads read through it). */
void tdx_fvec_release(const tdx_fvec *v);

/* Bytes of file pages the process has mapped and resident (all its file mappings: Linux's
 * /proc/self/statm), or -1 when that is unknown: what a release gives back. */
int64_t tdx_fvec_resident(void);

/* How far a build lets the pages of its string table (the bytes and offsets, and in the first
 * phase the lookup) grow before it gives them back, for a trace of trace_size bytes. */
uint64_t tdx_fvec_budget(uint64_t trace_size);

#endif
