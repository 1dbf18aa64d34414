/* sumindex.h: the index's SUMMARY section: Go's trace summary as sorted, blocked tables, so that a
 * goroutine or task query loads (and checksums) only the records it needs. */
#ifndef TDX_SUMINDEX_H
#define TDX_SUMINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/mem.h"
#include "index/analysis/summary.h"
#include "index/analysis/sumspill.h"
#include "index/views/viewgen.h"

/* Receives the section's bytes in order. */
typedef int (*tdx_sumindex_put)(void *ctx, const void *p, size_t n, tdx_err *err);
/* Told how far the writing is: spilled records read back so far, and in all. */
typedef void (*tdx_sumindex_progress)(void *ctx, uint64_t done, uint64_t total);

/* The CPU of the tables' block coder (ns, core/cputime.h): its coding, on whichever thread, and
 * its own thread's whole CPU (0: it had none). */
typedef struct tdx_sumindex_cpu {
    int64_t code_ns, thread_ns;
} tdx_sumindex_cpu;

/* The section (layout in docs/index-format.md) from a summary spilled into sp (its records; s
 * gives the scalar fields), streamed to put. Tables that outgrow memory wait in scratch files
 * beside `beside` (NULL: kept in memory). With `thread`, the tables' blocks are coded on a thread
 * of its own (the bytes are the same). sp is read once; it must not be added to after.
 * progress (NULL: none) is called every few thousand records and once at the end. cpu (NULL:
 * not wanted) is added the coder's CPU. */
int tdx_sumindex_write(tdx_sumspill *sp, const tdx_summary *s, const char *beside, bool thread,
                       tdx_sumindex_put put, void *ctx, tdx_sumindex_progress progress,
                       void *progress_ctx, tdx_sumindex_cpu *cpu, tdx_err *err);
/* The section's bytes for a complete summary held in memory. Fails only on memory exhaustion
 * or a record too large to frame. */
int tdx_sumindex_save(const tdx_summary *s, tdx_buf *out, tdx_err *err);

/* Fills `s`, freshly initialized over the store the index's ids refer to, with exactly what
 * tdx_viewgen_resolve and the generator need for query q: the header fields; for a goroutine,
 * its record and the unblock edges whose operand is it or one of its operators; for a task (focus
 * or goroutine-oriented), the task and its descendants (task indexes renumbered, children in
 * their order, the parent of each as at least a record with its id), and for a goroutine-oriented
 * task query also their logs, goroutine sets and regions. An id the trace does not have is simply
 * absent (resolve reports it). `base` is the section's file offset, for error messages. */
int tdx_sumindex_load(const uint8_t *p, size_t n, uint64_t base, const tdx_viewquery *q,
                      tdx_summary *s, tdx_err *err);

/* Fills `s`, freshly initialized over the store, with the header's fields and task `id` alone
 * (task 0; its children as records with just their id, its parent not filled), with its log
 * count and first log, goroutines and regions; no task when the index has none of that id. */
int tdx_sumindex_load_task(const uint8_t *p, size_t n, uint64_t base, uint64_t id, tdx_summary *s,
                           tdx_err *err);

/* Only the header's fields of ix's SUMMARY (events, first time, the last Sync and the events up
 * to it): where a time window or split range ends. */
struct tdx_index;
int tdx_sumindex_fields(struct tdx_index *ix, tdx_summary *s, tdx_err *err);

/* Calls fn for every task of the summary, by id: its type (a string id of store, the index's
 * viewer store), its TaskBegin and TaskEnd (present or not). A non-zero return from fn stops
 * the walk and is returned. */
typedef int (*tdx_sumindex_task_fn)(void *ctx, uint64_t id, uint32_t name, const tdx_sumev *start,
                                    const tdx_sumev *end, tdx_err *err);
int tdx_sumindex_tasks(const uint8_t *p, size_t n, uint64_t base, const tdx_vgstore *store,
                       tdx_sumindex_task_fn fn, void *ctx, tdx_err *err);

/* Calls fn for every task of the summary, by id, with a summary holding the header's fields and
 * that task alone (task 0, its parent and children not filled): its type, TaskBegin and TaskEnd,
 * log count and first log, goroutines and regions. Memory: the largest task's. A non-zero return
 * from fn stops the walk and is returned. */
typedef int (*tdx_sumindex_whole_fn)(void *ctx, const tdx_summary *s, tdx_err *err);
int tdx_sumindex_walk_tasks(const uint8_t *p, size_t n, uint64_t base, tdx_vgstore *store,
                            tdx_sumindex_whole_fn fn, void *ctx, tdx_err *err);

/* Checks every checksum, the header's fields and the structure of every record; string and
 * stack ids against the viewer store as a query does (NULL: only that they fit 32 bits). */
int tdx_sumindex_verify(const uint8_t *p, size_t n, uint64_t base, const tdx_vgstore *store,
                        tdx_err *err);

#endif
