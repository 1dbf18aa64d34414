/* regprof.h: go tool trace's region profiles (/regionio, /regionblock, /regionsyscall,
 * /regionsched): a pprof-style profile whose waits count only within the selected regions. */
#ifndef TDX_REGPROF_H
#define TDX_REGPROF_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/gen.h"
#include "index/analysis/goprof.h"

/* Go measures each wait (goprof.h: from the transition into the profile's state to the one out
 * of it, keyed by the stack of the event that began it) against the selected regions of its
 * goroutine: every region's interval, sorted by start, those inside an earlier kept one left
 * out; a wait counts the sum of its positive overlaps with them.
 *
 * The regions go through an external sort by start, and are then read in step with the events:
 * a goroutine's kept regions are disjoint, so one arriving during a wait closes the previous
 * one's overlap. Memory: the sort's budget, and a few words for each goroutine alive. */
typedef struct tdx_regprof tdx_regprof;

/* A profile (TDX_PROF_*) to compute; the sort spills beyond `budget` bytes to a scratch file
 * beside `beside`. NULL on memory exhaustion or an unknown profile. */
tdx_regprof *tdx_regprof_new(int which, const char *beside, size_t budget);
void tdx_regprof_free(tdx_regprof *p);

/* First, every selected region, in any order: goroutine g's, over [start, end]. 0, or -1 with
 * err set. */
int tdx_regprof_region(tdx_regprof *p, int64_t g, int64_t start, int64_t end, tdx_err *err);
/* Then, once: the regions are sorted. 0, or -1 with err set. */
int tdx_regprof_seal(tdx_regprof *p, tdx_err *err);
/* Then every event, in order (times increasing), with its string and stack tables. 0, or -1
 * with err set. */
int tdx_regprof_event(tdx_regprof *p, const tdx_event *e, const tdx_gen *g, tdx_err *err);
/* The profile: its stacks (ids of the tables the events gave) with their counts and delays,
 * those Go takes as one (tdx_goprof_merge) merged. 0, or -1 with err set. */
int tdx_regprof_records(tdx_regprof *p, const tdx_gen *tabs, tdx_goprof_recs *out, tdx_err *err);

#endif
