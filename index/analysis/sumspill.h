/* sumspill.h: Go's summary of a trace too large to hold: at each generation boundary the records
 * that are settled (ended goroutines, closed regions, every task's part so far) move to external
 * sorts, and at the end they are read back by key, each task's parts folded into one. */
#ifndef TDX_SUMSPILL_H
#define TDX_SUMSPILL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "core/hmap.h"
#include "core/idset.h"
#include "core/mem.h"
#include "index/common/extsort.h"
#include "index/common/scratch.h"
#include "index/analysis/summary.h"

typedef struct tdx_sumspill {
    tdx_xsort *g; /* goroutine records, by (id, when spilled): the last one counts */
    tdx_xsort *e; /* unblock edges, by (operand, operator), repeats included */
    tdx_xsort *t; /* task parts, by (id, when spilled) */
    tdx_xsort *r; /* regions, by (task id, seq): each once, when it has closed or at the end */
    /* (child, event that set its parent) -> parent, from every part that names one; and
     * (parent, that event) -> child, the first of each child's (tdx_sumspill_attach) */
    tdx_xsort *named, *attach;
    const char *beside;        /* where scratch files go (NULL: nowhere, all in memory) */
    tdx_xrec gcur, tcur, rcur; /* reading: the record looked at next */
    int ghave, thave, rhave;   /* 0: none fetched, 1: *cur is it, 2: the end */
    uint64_t nread;            /* goroutine records, task parts and regions read back (progress) */
} tdx_sumspill;

/* The sorts keep up to `budget` bytes each in memory (task parts and regions half each); their
 * scratch files go beside `beside` (NULL: never spill, for in-memory use). Fails only on memory
 * exhaustion. */
int tdx_sumspill_init(tdx_sumspill *sp, const char *beside, size_t budget);
void tdx_sumspill_free(tdx_sumspill *sp);

/* Moves what is settled out of s, between two events (at a generation boundary, so memory is
 * bounded by a generation). The summary stays usable; its goroutine and task indexes change. */
int tdx_sumspill_compact(tdx_sumspill *sp, tdx_summary *s, tdx_err *err);
/* Spills everything s holds (at the end of the trace), leaving s as it is. */
int tdx_sumspill_put_all(tdx_sumspill *sp, const tdx_summary *s, tdx_err *err);

/* A goroutine record read back. */
typedef struct tdx_sumgrec {
    int64_t id, creation, start, end;
    uint32_t name;
    uint64_t pc;
} tdx_sumgrec;

/* The latest record of each goroutine, by id: 1, 0 at the end, -1 on error. Call
 * tdx_sumspill_rewind first (and again to read once more). */
int tdx_sumspill_next_g(tdx_sumspill *sp, tdx_sumgrec *g, tdx_err *err);

/* One task, all its parts folded as one summary over the whole trace would have it (but for its
 * regions, read one at a time: tdx_sumspill_next_region). */
typedef struct tdx_sumfold {
    uint64_t id;
    uint32_t name;
    bool has_parent;
    uint64_t parent, parent_ev; /* parent task id, and the event that set it */
    tdx_sumev start, end, first_log;
    uint64_t nlogs;
    TDX_VEC(int64_t) goroutines; /* first-seen order: all, or the first TDX_SUMFOLD_GMEM */
    uint64_t nmore;              /* and the rest, in `more` (8 bytes each) */
    tdx_scratch more;            /* open while more_on */
    bool more_on;
    TDX_VEC(uint64_t) children; /* ids in the order attached (filled by the caller) */
    tdx_idset seen;             /* scratch: the goroutines, once they are many */
    bool seen_on;
} tdx_sumfold;

/* The goroutines a fold holds in memory when its spill has a place for scratch files (the
 * background task of a long trace has every goroutine that entered a region outside a task). */
#define TDX_SUMFOLD_GMEM 65536

void tdx_sumfold_free(tdx_sumfold *f);
static inline uint64_t tdx_sumfold_ngoroutines(const tdx_sumfold *f) {
    return f->goroutines.n + f->nmore;
}
/* Copies the task's goroutines [from, from + n) (first-seen order; within the count) to out. */
int tdx_sumfold_goroutines(const tdx_sumfold *f, uint64_t from, int64_t *out, size_t n,
                           tdx_err *err);
/* The next task by id: 1, 0 at the end, -1 on error (a damaged part is an internal error). */
int tdx_sumspill_next_task(tdx_sumspill *sp, tdx_sumfold *f, tdx_err *err);
/* The next region of task `task` (tasks are read in ascending id, and each one's regions in
 * creation order, so a large task never has to be held): 1, 0 when it has no more, -1 on error,
 * -2 when a region of an earlier task was left unread. */
int tdx_sumspill_next_region(tdx_sumspill *sp, uint64_t task, tdx_sumregion *r, tdx_err *err);

/* Ends the input of every sort and restarts reading goroutines and tasks. */
int tdx_sumspill_rewind(tdx_sumspill *sp, tdx_err *err);

/* Makes `attach` (once, after the last spill): a child's parent is the one named first, as the
 * fold keeps it, and the parts of a task are spilled in event order, so it is the one set at the
 * least event. Then `attach` lists each parent's children in the order they were attached
 * without a pass over the tasks. */
int tdx_sumspill_attach(tdx_sumspill *sp, tdx_err *err);

#endif
