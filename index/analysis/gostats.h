/* gostats.h: Go's per-goroutine execution statistics (the trace Summarizer's GoroutineExecStats:
 * time running, runnable, blocked by reason, in syscalls, in special ranges), which cmd/trace's
 * goroutine analysis pages (/goroutines, /goroutine) show, over an ordered event stream.
 *
 * Memory follows the goroutines alive: the record of a goroutine that ends (NotExist) goes to an
 * external sort at once, and at the end every id's latest record is read back in id order, as
 * Go's summary map holds it. */
#ifndef TDX_GOSTATS_H
#define TDX_GOSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/event.h"
#include "core/mem.h"

typedef struct tdx_gostats tdx_gostats;

/* A string id of the analysis (names, block reasons, range names) and a duration in ns. */
typedef struct tdx_gostat_kv {
    uint32_t key;
    int64_t ns;
} tdx_gostat_kv;

typedef TDX_VEC(tdx_gostat_kv) tdx_gostat_kvvec;

/* One goroutine's final record (GoroutineSummary without its regions). */
typedef struct tdx_gostat {
    int64_t id;
    uint32_t name; /* entry function (outermost frame of its first transition stack); 0: none */
    uint64_t pc;
    int64_t creation, start, end; /* start, end: 0 when it never ran / never ended */
    int64_t exec, sched, syscall, syscall_block, total;
    /* BlockTimeByReason and RangeTime: every key Go's maps hold, zero values included, in the
     * order first met; valid until the next tdx_gostats_next */
    const tdx_gostat_kv *block, *range;
    size_t nblock, nrange;
} tdx_gostat;

/* A record's bytes, as varints (the records spilled during the build; GSTATS codes its runs
 * otherwise, in gsindex.c). Appends g's bytes (without its name): 0, or -1 on memory exhaustion. */
int tdx_gostat_encode(tdx_buf *b, const tdx_gostat *g);
/* Decodes one record from *p (advanced past it, up to end); its maps go to kv, string ids up
 * to nstr. 0, or -1 when malformed. */
int tdx_gostat_decode(const uint8_t **p, const uint8_t *end, uint64_t nstr, tdx_gostat *g,
                      tdx_gostat_kvvec *kv);

/* Ended goroutines' records beyond `budget` bytes go to a scratch file in the directory of
 * `beside` (NULL: all kept in memory). NULL on memory exhaustion. */
tdx_gostats *tdx_gostats_new(const char *beside, size_t budget);
void tdx_gostats_free(tdx_gostats *s);

/* Feeds every event the reader delivers, in order; g is the event's string and stack tables.
 * 0, or -1 with err set (memory, scratch file). */
int tdx_gostats_event(tdx_gostats *s, const tdx_event *e, const tdx_gen *g, tdx_err *err);

/* Ends the stream (Summarizer.Finalize: goroutines alive are closed at the last event's time)
 * and starts reading the records. 0 or -1. */
int tdx_gostats_finish(tdx_gostats *s, tdx_err *err);
/* The next goroutine by id: 1, 0 after the last, -1 on an error. */
int tdx_gostats_next(tdx_gostats *s, tdx_gostat *out, tdx_err *err);
/* Reads the records again from the first. */
int tdx_gostats_rewind(tdx_gostats *s, tdx_err *err);

/* Also sums go tool trace's pprof-style profiles (goprof.h) and its user region table
 * (regstats.h), before the first event: the profiles' stack ids are the tables' given to
 * tdx_gostats_event, which must then be the same for every event (an index's global tables). */
void tdx_gostats_profile(tdx_gostats *s);
/* The profiles as section PPROF's bytes, once finished: 0, or -1 (memory). */
int tdx_gostats_profiles_encode(const tdx_gostats *s, tdx_buf *out);
/* The region table as section REGIONS' bytes, once finished: 0, or -1 (memory). */
int tdx_gostats_regions_encode(const tdx_gostats *s, tdx_buf *out);

/* One region of the detail query, ended: what go tool trace's /userregion page shows of it. */
typedef struct tdx_gostat_region {
    int64_t goroutine;
    uint64_t task;
    uint32_t type; /* a string id of tdx_gostats_region_str */
    uint64_t pc;   /* of the outermost frame of its begin's stack (0: none) */
    /* its interval, as Go's filter measures it: a region without a begin starts at the first
     * event, one the trace's end closes ends at the last Sync */
    int64_t start, end;
    bool has_start;
    /* its statistics (Go's GoroutineExecStats of the goroutine at its end less those at its
     * begin; one without a begin has the goroutine's whole): exec, sched, syscall,
     * syscall_block, total, block and range, valid during the call */
    tdx_gostat st;
} tdx_gostat_region;

/* 0 to go on; anything else fails the event that ended the region, with err set. */
typedef int (*tdx_gostats_region_fn)(void *ctx, const tdx_gostat_region *r, tdx_err *err);

/* Before the first event: every region of type `type` (when has_type) begun at `pc` (when
 * has_pc) is reported to fn as it ends, in the order they end. Costs a copy of the goroutine's
 * statistics at each such region's begin; other regions cost nothing more. */
void tdx_gostats_region_detail(tdx_gostats *s, const uint8_t *type, size_t ntype, bool has_type,
                               uint64_t pc, bool has_pc, tdx_gostats_region_fn fn, void *ctx);
/* The text of a region type's string id ("" for 0). */
tdx_str tdx_gostats_region_str(const tdx_gostats *s, uint32_t id);

/* The first and the last event's time (0 before any). */
int64_t tdx_gostats_first_time(const tdx_gostats *s);
int64_t tdx_gostats_last_time(const tdx_gostats *s);
/* The string ids in use are 1..this. */
size_t tdx_gostats_nstrings(const tdx_gostats *s);
/* The text of a string id ("" for 0). */
tdx_str tdx_gostats_str(const tdx_gostats *s, uint32_t id);
/* The order of the /goroutines table (groups of goroutines by name): execution time descending,
 * then name by bytes. <0, 0 or >0, as for qsort. */
int tdx_gostats_group_cmp(const tdx_gostats *s, uint32_t name_a, int64_t exec_a, uint32_t name_b,
                          int64_t exec_b);
/* Go's UnknownTime: the total minus the non-overlapping statistics, when positive. */
int64_t tdx_gostat_unknown(const tdx_gostat *g);

#endif
