/* gsindex.h: the index's GSTATS section: Go's goroutine analysis (index/analysis/gostats.h) stored
 * at build time, its groups in display order and each group's goroutines in a checksummed run of
 * its own. */
#ifndef TDX_GSINDEX_H
#define TDX_GSINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/mem.h"
#include "index/analysis/gostats.h"
#include "index/format/rans.h"

/* Receives the section's bytes in order. */
typedef int (*tdx_gsindex_put)(void *ctx, const void *p, size_t n, tdx_err *err);

/* Writes the section (layout in docs/index-format.md) from finished statistics (tdx_gostats_finish;
 * read once more from the first record). Records are regrouped by name through an external sort
 * of `budget` bytes whose runs, and the groups' bytes, wait in scratch files beside `beside`. */
int tdx_gsindex_write(tdx_gostats *s, const char *beside, size_t budget, tdx_gsindex_put put,
                      void *ctx, tdx_err *err);

/* A group of goroutines that share a name (entry function), as the table lists them. */
typedef struct tdx_gsgroup {
    uint32_t name; /* string id (tdx_gsindex_str) */
    uint64_t count;
    int64_t exec;
} tdx_gsgroup;

/* What a run's next record is coded against, writing or reading: the previous record (`any`
 * false: none), the keys of its maps in their order, and the trace's first and last event times. */
typedef struct tdx_gsindex_chain {
    bool any;
    int64_t id, creation;
    uint64_t pc;
    int64_t t0, tlast;
    TDX_VEC(uint32_t) keys[2]; /* block reasons, range names */
} tdx_gsindex_chain;

typedef struct tdx_gsindex {
    const uint8_t *p; /* the section, read in place */
    size_t n;
    uint64_t base; /* its file offset, for error messages */
    uint64_t goroutines;
    int64_t exec, t0, tlast; /* t0, tlast: the trace's first and last event times */
    TDX_VEC(tdx_str) strs;   /* ids 1..; 0 is "" */
    uint64_t ngroups;
    const uint8_t *table, *data;
    size_t ndata;
    /* the run being read */
    const uint8_t *rp, *rend;
    uint64_t left;
    int64_t want_exec, run_exec; /* the group's execution time, and the sum of the run's so far */
    /* its block being read */
    tdx_rans_dec dec;
    const uint8_t *block;  /* where it begins (for messages) */
    uint64_t bleft, vleft; /* its records and values not read yet */
    bool bad;
    tdx_gsindex_chain ch;
    tdx_gostat_kvvec kv;
} tdx_gsindex;

/* Reads the header, strings and group table: their checksum and bounds, the groups' order (each
 * name once), their counts and times against the header's. */
int tdx_gsindex_open(tdx_gsindex *x, const uint8_t *p, size_t n, uint64_t base, tdx_err *err);
void tdx_gsindex_free(tdx_gsindex *x);
tdx_str tdx_gsindex_str(const tdx_gsindex *x, uint32_t id);
/* Group i of the table (groups are in display order: execution time, then name). */
tdx_gsgroup tdx_gsindex_group(const tdx_gsindex *x, uint64_t i);
/* Starts reading group i's goroutines (checking its run's checksum). */
int tdx_gsindex_begin(tdx_gsindex *x, uint64_t i, tdx_err *err);
/* Its next goroutine, by id: 1, 0 after the last, -1 when the run is damaged (structure, ids
 * not ascending, its count or execution time not the table's). */
int tdx_gsindex_next(tdx_gsindex *x, tdx_gostat *out, tdx_err *err);
/* Checks the header's first and last event times against the index's (META's): the times that
 * creation times and totals are coded against. */
int tdx_gsindex_check_span(const tdx_gsindex *x, int64_t t0, int64_t tlast, tdx_err *err);
/* Opens the section and reads every run, as readers check them. */
int tdx_gsindex_verify(const uint8_t *p, size_t n, uint64_t base, tdx_err *err);

#endif
