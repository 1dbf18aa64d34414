/* viewbuild.h: the second phase of `traceidx build`: runs cmd/trace's viewer generators once over
 * the written events and stores what queries need (split ranges, summary, checkpoints, long items).
 */
#ifndef TDX_VIEWBUILD_H
#define TDX_VIEWBUILD_H

#include <stdint.h>

#include "core/error.h"
#include "index/build/writer.h"

/* Events between checkpoints by default: denser in the proc view, the default of queries. */
#define TDX_CKPT_EVENTS_PROC 32768
#define TDX_CKPT_EVENTS_OTHER 131072
/* Events per entry of the stop tables (proc and thread views; viewsec.h): a sixteenth of the
 * interval, at most this. */
#define TDX_STOP_EVERY_MAX 512
/* Memory of each external sort (5 of them): 4 MiB was as fast as 16 on the 256 MiB bench trace
 * (12.0 vs 12.2 s) and 22 MB lighter. */
/* The default budget of each sort: a 256th of the trace, 1-4 MiB (a small trace's sorts filling
 * their budgets took a 256 MiB trace past its memory target). */
#define TDX_SORT_BUDGET_MIN ((size_t)1 << 20)
#define TDX_SORT_BUDGET_MAX ((size_t)4 << 20)

/* The phase's workers, each a chain of work over every event: the proc view and the splitter;
 * the thread and goroutine views; Go's summary and the MMU's inputs; Go's goroutine statistics,
 * profiles and region table. */
#define TDX_VIEWBUILD_WORKERS 4

typedef struct tdx_viewbuild_opts {
    uint64_t ckpt_events; /* events between checkpoints, every view (0: the defaults above,
                             stretched to 4 events per goroutine that exists) */
    int jobs;             /* threads (at most TDX_VIEWBUILD_WORKERS are used) */
    size_t sort_budget;   /* bytes each of the phase's external sorts keeps in memory
                             (0: the default above) */
    uint64_t view_events; /* events the views see (0: all): a damaged trace's up to its last
                             Sync, as cmd/trace shows them; the summary still sees every one */
    /* Progress, called every few blocks: events done and total. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total, uint64_t events);
    void *progress_ctx;
    /* Progress of the phase's last step, once every event is through (the views' data copied
     * into the index, then the summary's tables sorted and coded: a tenth of the phase on the
     * 1 GiB bench trace): called with done 0 as it starts, then with the summary's records
     * done and total. NULL: none. */
    void (*tail_progress)(void *ctx, uint64_t done, uint64_t total);
    void *tail_progress_ctx;
} tdx_viewbuild_opts;

typedef struct tdx_viewbuild_stats {
    uint64_t checkpoints[3]; /* per view */
    uint64_t items[3];       /* long items per view */
    uint64_t ranges;         /* split ranges */
    uint64_t state_bytes;    /* checkpoint states, all views */
    uint64_t reruns;         /* passes redone because a goroutine id came back after it ended */
    /* CPU, in ns (core/cputime.h; build --verbose), of every pass: each worker's own work, on
     * whichever thread ran it (its generators over every event, then its final records: a
     * chain, since each event's work needs the state the previous one left), decoding the
     * blocks (each block on its own: any core could), the whole CPU of each thread the phase
     * started ([0]: the calling thread's is not counted here), and after the workers, the
     * calling thread's (the views' data copied, the summary merged and written, the last
     * sections) with the summary coder's part of it (on a thread of its own with jobs > 1:
     * coder_thread_ns, its whole CPU). */
    int64_t cpu_worker_ns[TDX_VIEWBUILD_WORKERS];
    int64_t cpu_decode_ns;
    int64_t cpu_threads_ns[TDX_VIEWBUILD_WORKERS];
    int64_t cpu_tail_ns;
    int64_t cpu_coder_ns, cpu_coder_thread_ns;
} tdx_viewbuild_stats;

/* Runs the phase over the events w has written and appends the view sections (VIEWDATA, the
 * three view directories, RANGES, SUMMARY, VGSTORE). 0, or -1 with err set. */
int tdx_viewbuild(tdx_iwriter *w, const tdx_viewbuild_opts *o, tdx_viewbuild_stats *st,
                  tdx_err *err);

#endif
