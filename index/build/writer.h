/* writer.h: builds an index file from the ordered event stream: event blocks are encoded as
 * events arrive, tables and summaries are written at the end, atomically (temp file + rename). */
#ifndef TDX_WRITER_H
#define TDX_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/gen.h"
#include "index/format/evcodec.h"

typedef struct tdx_iwriter tdx_iwriter;

/* trace/trace_size: the source trace bytes (for its identity). string_budget: memory for the
 * string table's lookup while events come in (0: the default for the trace's size). */
tdx_iwriter *tdx_iwriter_new(const char *out_path, int version, const uint8_t *trace,
                             size_t trace_size, size_t string_budget, tdx_err *err);

/* Distinct strings, and how often their lookup spilled to its scratch file and read a block back
 * from there (strmap.h); the lookup's figures only until the views' phase frees it. */
void tdx_iwriter_string_stats(const tdx_iwriter *w, uint64_t *strings, uint64_t *spills,
                              uint64_t *reads);

/* Encodes and writes event blocks on a thread of its own from now on, so that the thread that
 * delivers events fills blocks, and codes one itself only when the encoder falls behind.
 * every > 0 (tests): the delivering thread also codes every every-th block, whatever the
 * encoder's queue holds. 0, or -1 (no thread: blocks stay on the caller's thread). */
int tdx_iwriter_async(tdx_iwriter *w, unsigned every);
/* Blocks the delivering thread coded since tdx_iwriter_async (--verbose). */
uint64_t tdx_iwriter_blocks_shared(const tdx_iwriter *w);

/* Where the first phase's CPU went besides ordering and filling blocks (build --verbose): coding
 * a block depends on its events only, so it may go to any core; accounting for a block's
 * goroutines and writing it is a chain of its own (core/cputime.h; ns). Complete once
 * tdx_iwriter_end_events has ended the encoder thread. */
typedef struct tdx_iwriter_cpu {
    int64_t code_ns;       /* coding blocks, on the delivering thread */
    int64_t put_ns;        /* accounting and writing blocks, on the delivering thread */
    int64_t enc_thread_ns; /* the encoder thread's CPU, all of it (0: there was none) */
    int64_t enc_code_ns;   /* of which coding blocks */
} tdx_iwriter_cpu;
void tdx_iwriter_cpu_stats(const tdx_iwriter *w, tdx_iwriter_cpu *c);

/* The tdx_emit_fn and tdx_gen_done_fn to pass to tdx_read_trace. */
int tdx_iwriter_event(void *w, const tdx_event *e, const tdx_gen *g);
int tdx_iwriter_gen_done(void *w, const tdx_gen *g, uint64_t index, uint64_t nevents);

/* ---- the second phase (views), after every event was written ---- */

/* Writes the last partial block (events after the last generation, e.g. the final Sync); call
 * before anything else of this phase. */
int tdx_iwriter_end_events(tdx_iwriter *w, tdx_err *err);

/* The largest proc id of any proc state transition. */
int64_t tdx_iwriter_max_proc(const tdx_iwriter *w);
uint64_t tdx_iwriter_nevents(const tdx_iwriter *w);
/* The events up to and including the last Sync: what cmd/trace shows of a damaged trace. */
uint64_t tdx_iwriter_valid_events(const tdx_iwriter *w);
/* Where the last generation written ends in the trace (bytes): what a damaged trace keeps. */
uint64_t tdx_iwriter_gens_end(const tdx_iwriter *w);
/* Marks the index as made of a damaged trace's valid part (the damage at byte damage_off):
 * call before the views' phase, which is then given tdx_iwriter_valid_events as view_events. */
void tdx_iwriter_set_partial(tdx_iwriter *w, uint64_t damage_off);
size_t tdx_iwriter_nblocks(const tdx_iwriter *w);
/* The global tables in the shape of a generation's tables (the ids events carry). */
const tdx_gen *tdx_iwriter_tables(tdx_iwriter *w);
/* Reads event block b back (out holds TDX_EVBLOCK_EVENTS events); buf and dec are the caller's
 * scratch space (encoded bytes, decoder), so several threads may read at once. */
int tdx_iwriter_read_block(const tdx_iwriter *w, tdx_evdec *dec, size_t b, tdx_buf *buf,
                           tdx_event *out, size_t *n, tdx_err *err);
/* Gives the resident pages of the tables' strings back (safe while other threads read them). */
void tdx_iwriter_release_tables(const tdx_iwriter *w);
/* The size of the trace being indexed. */
size_t tdx_iwriter_trace_size(const tdx_iwriter *w);
/* The global string ids of stop-the-world kinds (the viewer names those ranges after them). */
void tdx_iwriter_stw_strings(const tdx_iwriter *w, const uint32_t **ids, size_t *n);
/* The path of the temporary file being written (scratch files go beside it). */
const char *tdx_iwriter_temp_path(const tdx_iwriter *w);
/* Appends a section of the given kind now (written before the table sections). */
int tdx_iwriter_section(tdx_iwriter *w, uint32_t kind, const void *p, size_t n, tdx_err *err);
/* A section written piece by piece (flagged TDX_SECF_BLOCKED: whoever points into it keeps the
 * hashes of its pieces). No other section may be appended between begin and end. */
int tdx_iwriter_stream_begin(tdx_iwriter *w, uint32_t kind, tdx_err *err);
/* Appends p[0..n); *off gets its offset inside the section. */
int tdx_iwriter_stream_put(tdx_iwriter *w, const void *p, size_t n, uint64_t *off, tdx_err *err);
int tdx_iwriter_stream_end(tdx_iwriter *w, tdx_err *err);
/* Drops everything written since tdx_iwriter_stream_begin and closes the stream. */
int tdx_iwriter_stream_abandon(tdx_iwriter *w, tdx_err *err);

/* The trace's identity hashes (XXH3 of every byte, tdx_trace_sample_hash), when the caller
 * computed them while reading (tdx_read_stats); else finish does, through the trace's pages. */
void tdx_iwriter_set_trace_hash(tdx_iwriter *w, uint64_t h, uint64_t sample);

/* Writes every section and commits the file. The writer is freed either way. */
int tdx_iwriter_finish(tdx_iwriter *w, tdx_err *err);
/* Discards the partial file. */
void tdx_iwriter_abort(tdx_iwriter *w);

/* The first error the event callbacks hit (they can only return non-zero). */
const tdx_err *tdx_iwriter_error(const tdx_iwriter *w);

/* Size in bytes of what has been written so far. */
uint64_t tdx_iwriter_size(const tdx_iwriter *w);

#endif
