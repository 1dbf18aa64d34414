/* stattable.h: the breakdown tables of go tool trace's goroutine and region pages
 * (/goroutine?name=, /userregion): rows of execution statistics, their columns, order and output.
 */
#ifndef CLI_STATTABLE_H
#define CLI_STATTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/mem.h"
#include "index/common/extsort.h"
#include "index/analysis/gostats.h"

/* What a row shows besides its statistics: a goroutine (its id, creation, start and end; 0 when
 * it never ran or never ended), or a region (its goroutine's id, its task and its interval). */
typedef struct cli_statrow {
    int64_t id;
    uint64_t task;
    int64_t creation, start, end, total;
    uint64_t order; /* rows with the same sort value go by this */
    bool has_range; /* a range time sum that is not 0 (Go's HasRangeTime) */
} cli_statrow;

/* The rows, read twice (columns, then values). next: 1 with g (its block and range keys string
 * ids of str) and its row's fields (total and has_range are the table's to set), 0 after the
 * last, -1 with err set. */
typedef struct cli_statsrc {
    int (*rewind)(void *ctx, tdx_err *err);
    int (*next)(void *ctx, tdx_gostat *g, cli_statrow *row, tdx_err *err);
    tdx_str (*str)(const void *ctx, uint32_t id);
    void *ctx;
} cli_statsrc;

/* The table: its columns, then its rows through an external sort (by the sort column, largest
 * first), so that memory does not grow with the rows. */
typedef struct cli_stattable {
    const cli_statsrc *src;
    bool regions;            /* region rows: a Task column, and regions' JSON fields */
    TDX_VEC(tdx_str) cols;   /* Go's order: "Execution time", then by bytes */
    TDX_VEC(uint32_t) rcols; /* range names, by bytes */
    tdx_buf names;           /* the "Block time (reason)" texts */
    TDX_VEC(size_t) name_off;
    tdx_hmap reason_col, range_pos;
    TDX_VEC(uint32_t) reasons;
    int sort_col; /* -1: Total */
    tdx_xsort *rows;
    uint64_t nrows;
    int64_t exec;     /* the rows' execution time */
    size_t *width[2]; /* text: the breakdown's and the special ranges' column widths */
    cli_statrow cur;  /* the row at hand (being added, or read back) */
    int64_t *vals, *rvals;
    tdx_buf pay;
} cli_stattable;

/* Pass 1: the columns (the five fixed ones and every block reason and range name of any row)
 * and the count of rows. 0, or -1 with err set. */
int cli_stattable_columns(cli_stattable *t, const cli_statsrc *src, bool regions, tdx_err *err);
/* Orders the rows by the column labelled `label` ("Total" or "Total time": the total, the
 * default). 0, or -1 when the table has no such column. */
int cli_stattable_sort_by(cli_stattable *t, const char *label);
/* The column labels, quoted and comma-separated, for an error message. */
void cli_stattable_labels(const cli_stattable *t, tdx_buf *o);
/* Pass 2: every row's values into the sort (scratch files beside `beside` past budget bytes);
 * for text, the columns' widths. 0, or -1 with err set. */
int cli_stattable_rows(cli_stattable *t, bool text, const char *beside, size_t budget,
                       tdx_err *err);
/* The breakdown and, when any row has range time, the special ranges, as text. 0; -1 when the
 * output failed (reported); -2 with err set. */
int cli_stattable_text(cli_stattable *t, tdx_buf *o, tdx_err *err);
/* `"columns": [...], "ranges": [...], "KEY": [rows]` (times since t0). Same returns. */
int cli_stattable_json(cli_stattable *t, tdx_buf *o, const char *key, int64_t t0, tdx_err *err);
void cli_stattable_free(cli_stattable *t);

#endif
