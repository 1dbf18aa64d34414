/* pprofout.h: a profile of goprof.h in the pprof tools' format (profile.proto, uncompressed; the
 * tools read it as they read gzipped ones), laid out as cmd/trace's BuildProfile lays it out. */
#ifndef TDX_PPROFOUT_H
#define TDX_PPROFOUT_H

#include <stddef.h>

#include "core/gen.h"
#include "core/mem.h"
#include "index/analysis/goprof.h"

/* Go cuts a profile's stacks at this many frames (the PCs it tells stacks apart by). */
#define TDX_PPROF_MAX_FRAMES 128

/* Appends the profile of recs[0..n) (stacks and strings of tabs) to out: sample types
 * contentions/count and delay/nanoseconds, one sample per record in the given order, locations
 * by PC and functions by file and name in the order first met, period trace/count 1.
 * 0, or -1 when memory runs out. */
int tdx_pprof_write(tdx_buf *out, const tdx_gen *tabs, const tdx_goprof_rec *recs, size_t n);

#endif
