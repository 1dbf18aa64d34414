/* writer.h: builds an index file from the ordered event stream: event blocks are encoded as
 * events arrive, tables and summaries are written at the end, atomically (temp file + rename). */
#ifndef TDX_WRITER_H
#define TDX_WRITER_H

#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/gen.h"

typedef struct tdx_iwriter tdx_iwriter;

/* trace/trace_size: the source trace bytes (for its identity). */
tdx_iwriter *tdx_iwriter_new(const char *out_path, int version, const uint8_t *trace,
                             size_t trace_size, tdx_err *err);

/* The tdx_emit_fn and tdx_gen_done_fn to pass to tdx_read_trace. */
int tdx_iwriter_event(void *w, const tdx_event *e, const tdx_gen *g);
int tdx_iwriter_gen_done(void *w, const tdx_gen *g, uint64_t index, uint64_t nevents);

/* The XXH3 of every trace byte, when the caller computed it while reading (else finish does). */
void tdx_iwriter_set_trace_hash(tdx_iwriter *w, uint64_t h);

/* Writes every section and commits the file. The writer is freed either way. */
int tdx_iwriter_finish(tdx_iwriter *w, tdx_err *err);
/* Discards the partial file. */
void tdx_iwriter_abort(tdx_iwriter *w);

/* The first error the event callbacks hit (they can only return non-zero). */
const tdx_err *tdx_iwriter_error(const tdx_iwriter *w);

/* Size in bytes of what has been written so far. */
uint64_t tdx_iwriter_size(const tdx_iwriter *w);

/* The sampled identity hash of a trace (cheap to recompute when checking for staleness). */
uint64_t tdx_trace_sample_hash(const uint8_t *data, size_t size);

#endif
