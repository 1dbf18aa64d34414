/* viewgen.h: cmd/trace's trace-viewer generator (proc, thread and goroutine views, task modes):
 * turns the ordered event stream into viewer events, with all state checkpointable. */
#ifndef TDX_VIEWGEN_H
#define TDX_VIEWGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/mem.h"
#include "index/views/jsonout.h"
#include "index/format/rans.h"
#include "index/analysis/summary.h"
#include "index/views/viewgen_store.h"

enum tdx_view { TDX_VIEW_PROC = 0, TDX_VIEW_THREAD = 1, TDX_VIEW_GOROUTINE = 2 };

/* Fixed pseudo lanes (Go's trace.FakeP + n). */
/* The colour names cmd/trace gives tasks and regions, by id modulo their number. */
#define TDX_NTASK_COLORS 23
extern const char *const tdx_task_colors[TDX_NTASK_COLORS];

/* The largest proc id the proc view lays out: it names one lane per id up to the largest, and
 * Go's own pseudo lanes start at FakeP (1000000). */
#define TDX_VIEW_MAX_PROC 999999

#define TDX_LANE_TIMERS 1000001ULL
#define TDX_LANE_NETPOLL 1000002ULL
#define TDX_LANE_SYSCALL 1000003ULL
#define TDX_LANE_GC 1000004ULL

/* What to generate (Go's genOpts). Options are not part of a checkpoint: a checkpoint must be
 * restored into a generator created with the same options. */
typedef struct tdx_viewgen_opts {
    int view;              /* enum tdx_view */
    int64_t wstart, wend;  /* time window, elapsed ns, inclusive (default 0 .. INT64_MAX) */
    bool has_filter;       /* goroutine view: only these lanes (goroutine ids) */
    const int64_t *filter; /* (the generator copies it) */
    size_t nfilter;
    int64_t focus; /* goroutine view: the focus goroutine (-1 none; 0 has no effect) */
    /* Task mode: the tasks to draw, in sorted order (indexes into summary->tasks). */
    const tdx_summary *summary;
    const uint32_t *tasks;
    size_t ntasks;
    bool regions; /* draw the tasks' regions (goroutine-oriented task mode) */
    /* Trace end (time of the last event) used for task emission and Finish. 0 = the time of the
     * last event fed to the generator (the normal case). */
    int64_t tend;
    /* traceidx's time windows (not Go's rule): a slice or async slice is kept when it overlaps
     * the window, an arrow when the interval between its ends does. Go keeps a slice only when
     * one of its ends lies inside, and an arrow only when both do. */
    bool overlap;
} tdx_viewgen_opts;

void tdx_viewgen_opts_default(tdx_viewgen_opts *o);

/* /jsontrace's query parameters (section 6.3 of the spec). */
typedef struct tdx_viewquery {
    bool thread; /* view=thread */
    bool has_goid, has_focustask, has_taskid;
    uint64_t goid, focustask, taskid;
} tdx_viewquery;

/* Options for a query, resolved against the summary as cmd/trace does (goroutine window and
 * related goroutines, task lists, focus). t0/tend: times of the first and last event kept.
 * On failure (unknown goroutine or task, ...) cmd/trace writes an empty response; returns -1
 * with the reason in err. Free with tdx_viewgen_resolved_free. */
typedef struct tdx_viewgen_resolved {
    tdx_viewgen_opts opts;
    int64_t *filter;
    uint32_t *tasks;
} tdx_viewgen_resolved;
int tdx_viewgen_resolve(const tdx_viewquery *q, const tdx_summary *s, int64_t t0, int64_t tend,
                        uint64_t nevents, tdx_viewgen_resolved *out, tdx_err *err);
void tdx_viewgen_resolved_free(tdx_viewgen_resolved *r);

typedef struct tdx_viewgen tdx_viewgen;

/* Creates a generator. The store and frame tree must outlive it; events go to sink (metadata
 * events have required = true). */
tdx_viewgen *tdx_viewgen_new(const tdx_viewgen_opts *o, tdx_vgstore *store,
                             const tdx_vgframes *frames, tdx_vev_fn sink, void *sink_ctx);
void tdx_viewgen_free(tdx_viewgen *vg);

/* Feeds one event of the ordered stream (g is NULL for the final Sync). Returns 0, or -1 when the
 * sink failed or memory ran out. */
int tdx_viewgen_event(tdx_viewgen *vg, const tdx_event *e, const tdx_gen *g);

/* After the last event: task/region emission, the view's Finish, then the metadata events. */
int tdx_viewgen_finish(tdx_viewgen *vg);

/* The metadata events of a default proc view (no tasks) whose largest proc id is max_proc:
 * their number and total compact-JSON bytes. With tdx_jsplit_required_size this is cmd/trace's
 * requiredSize, so ranges can be split online (tdx_jsplit_init_online). */
int tdx_viewgen_proc_meta_size(int64_t max_proc, uint64_t *n, uint64_t *bytes);

/* Counters: optional events emitted so far (the output index of the next one), the last
 * flow-arrow and async-slice ids used, and how often the trace broke an invariant that makes Go's
 * generator panic (spec 4.17; e.g. old-format go119-annotations): there this generator skips
 * what cannot be drawn (a stop without a lane draws nothing; a range that never started is
 * not drawn) and carries on. */
typedef struct tdx_viewgen_counters {
    uint64_t optional;
    uint64_t arrow_seq;
    uint64_t async_seq;
    uint64_t broken; /* stops of non-running goroutines or unstarted ranges (Go panics there) */
} tdx_viewgen_counters;
tdx_viewgen_counters tdx_viewgen_counters_get(const tdx_viewgen *vg);

/* Checkpoints: the complete generation state between two events (deterministic bytes; stacks and
 * strings are store ids, so the same store, or an extension of it, must be used to restore).
 * Restore into a generator created with the same options that has not been fed yet. */
int tdx_viewgen_save(const tdx_viewgen *vg, tdx_buf *out);
/* The same, keeping only the goroutines keep(ctx, id) accepts: goroutines that no longer exist
 * never draw again, so a checkpoint mid-trace can leave them out (Finish needs them: save the
 * final state unpruned). enc: an encoder to code with, whose memory is kept for the caller's
 * next save (NULL: one of its own, freed before it returns). A build saves thousands of
 * checkpoints: a fresh encoder each time grew ~150 KB of tables, which free then gave back to
 * the system (brk and TLB flushes on both cores: a quarter of a 256 MiB build's system time). */
int tdx_viewgen_save_pruned(const tdx_viewgen *vg, tdx_buf *out, bool (*keep)(void *, int64_t),
                            void *ctx, tdx_rans_enc *enc);
/* The same for a state only Finish will use (the index's final states): in the proc and thread
 * views it also leaves out the goroutines that are not executing, which Finish does not draw
 * (a server's idle connections: a window query restores this state, and restoring them was
 * half its time). */
int tdx_viewgen_save_final(const tdx_viewgen *vg, tdx_buf *out, bool (*keep)(void *, int64_t),
                           void *ctx, tdx_rans_enc *enc);
/* Overrides the flow-arrow and async-slice sequence numbers (a windowed query restored from a
 * checkpoint counts only what its own window emitted). */
void tdx_viewgen_counters_set(tdx_viewgen *vg, uint64_t arrow_seq, uint64_t async_seq);

/* Tells the generator that its sink drops optional events while *next_index (the output index
 * the next event gets) is below first_kept, so that it may leave out what only they would show
 * (the text of user logs). next_index NULL: no such sink (the default). */
void tdx_viewgen_set_quiet(tdx_viewgen *vg, const int64_t *next_index, int64_t first_kept);
/* A saved state is never of a finished generator (damage otherwise). */
int tdx_viewgen_restore(tdx_viewgen *vg, const uint8_t *p, size_t n, tdx_err *err);
/* Whether vg has seen an event (restored or fed): a final state always has, the state before
 * the first event has not. */
bool tdx_viewgen_started(const tdx_viewgen *vg);

/* ---- serving windows from the index ---- */

/* Emits a viewer event recorded from a full run with default options (n = 1, or n = 2 for the
 * two halves of a flow arrow or async slice), applying this generator's window and filter as
 * the emitter primitive that made it would, and numbering arrows and async slices from this
 * generator's counters. */
void tdx_viewgen_emit_item(tdx_viewgen *vg, const tdx_vev *ev, size_t n);

/* Emits the Goroutines, Threads (proc and thread views) and Heap counters with their current
 * values at elapsed time ts (a window's values as of its start); counters never set are skipped. */
void tdx_viewgen_emit_counters(tdx_viewgen *vg, int64_t ts);

/* The lane-name state of a goroutine (gState.name()'s inputs). */
typedef struct tdx_vgname {
    int64_t id;
    uint32_t func, label; /* store string ids */
    bool named;
} tdx_vgname;

/* The names of the goroutines keep(ctx, id) rejects, sorted by id (*out malloc'd). A pruned
 * checkpoint leaves them out; a goroutine view needs them for its lane names at Finish. */
int tdx_viewgen_names(const tdx_viewgen *vg, bool (*keep)(void *, int64_t), void *ctx,
                      tdx_vgname **out, size_t *n);
/* Forgets goroutine id (after it ended: nothing of it is drawn again unless the id comes back,
 * when Go's generator would reuse the old state; the caller must rule that out). Fills *name
 * and returns 1 when there was a state to forget, 0 when not (or when it is still on a lane). */
int tdx_viewgen_drop(tdx_viewgen *vg, int64_t id, tdx_vgname *name);
/* Adds a goroutine that no longer exists, with its name, unless the generator knows it. */
int tdx_viewgen_add_named(tdx_viewgen *vg, const tdx_vgname *name);

#endif
