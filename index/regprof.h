/* regprof.h: go tool trace's region profiles (/regionio, /regionblock, /regionsyscall,
 * /regionsched): a pprof-style profile whose waits count only within the selected regions. */
#ifndef TDX_REGPROF_H
#define TDX_REGPROF_H

#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/gen.h"
#include "index/goprof.h"

/* Go measures each wait (goprof.h: from the transition into the profile's state to the one out
 * of it, keyed by the stack of the event that began it) against the selected regions of its
 * goroutine: every region's interval, sorted by start, those inside an earlier kept one left
 * out; a wait counts the sum of its positive overlaps with them. Memory: the selected regions,
 * and a wait being measured for each goroutine that has one. */
typedef struct tdx_regprof tdx_regprof;

/* A profile (TDX_PROF_*) to compute. NULL on memory exhaustion. */
tdx_regprof *tdx_regprof_new(int which);
void tdx_regprof_free(tdx_regprof *p);

/* First, every selected region: goroutine g's, over [start, end]. 0, or -1 (memory). */
int tdx_regprof_region(tdx_regprof *p, int64_t g, int64_t start, int64_t end);
/* Then, once: the regions become each goroutine's outermost intervals. 0, or -1 (memory). */
int tdx_regprof_seal(tdx_regprof *p);
/* Then every event, in order, with its string and stack tables. 0, or -1 (memory). */
int tdx_regprof_event(tdx_regprof *p, const tdx_event *e, const tdx_gen *g);
/* The profile: its stacks (ids of the tables the events gave) with their counts and delays,
 * those Go takes as one (tdx_goprof_merge) merged. 0, or -1 with err set. */
int tdx_regprof_records(tdx_regprof *p, const tdx_gen *tabs, tdx_goprof_recs *out, tdx_err *err);

#endif
