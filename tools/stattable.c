/* stattable.c: Go's breakdown tables of execution statistics, for `goroutines --name` and
 * `regions --type`. */
#include "tools/stattable.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/quote.h"
#include "core/varint.h"

#define FIXED_COLS 5
static const char *const fixed_cols[FIXED_COLS] = {"Execution time", "Sched wait time",
                                                   "Syscall execution time", "Block time (syscall)",
                                                   "Unknown time"};
/* a row's fields before its values, in its sorted bytes */
#define HEAD 7

static tdx_str cstr(const char *s) {
    return (tdx_str){(const uint8_t *)s, (uint32_t)strlen(s)};
}

static tdx_str src_str(const cli_stattable *t, uint32_t id) {
    return t->src->str(t->src->ctx, id);
}

static int col_cmp(const void *pa, const void *pb) {
    tdx_str a = *(const tdx_str *)pa, b = *(const tdx_str *)pb;
    tdx_str first = cstr(fixed_cols[0]);
    bool fa = !tdx_str_cmp(a, first), fb = !tdx_str_cmp(b, first);
    if (fa != fb) return fa ? -1 : 1;
    return tdx_str_cmp(a, b);
}

static int rcol_cmp(const void *pa, const void *pb, void *ctx) {
    const cli_stattable *t = ctx;
    return tdx_str_cmp(src_str(t, *(const uint32_t *)pa), src_str(t, *(const uint32_t *)pb));
}

/* The column labelled `label` (columns are sorted: a binary search), or -1. */
static int col_index(const cli_stattable *t, tdx_str label) {
    const tdx_str *hit = bsearch(&label, t->cols.v, t->cols.n, sizeof *t->cols.v, col_cmp);
    return hit ? (int)(hit - t->cols.v) : -1;
}

/* "Block time (reason)" of reason id r, in buf. */
static tdx_str block_label(const cli_stattable *t, uint32_t r, tdx_buf *buf) {
    tdx_str s = src_str(t, r);
    buf->n = 0;
    tdx_buf_printf(buf, "Block time (%.*s)", (int)s.n, (const char *)s.p);
    return (tdx_str){buf->v, (uint32_t)buf->n};
}

void cli_stattable_free(cli_stattable *t) {
    tdx_vec_free(&t->cols);
    tdx_vec_free(&t->rcols);
    tdx_vec_free(&t->names);
    tdx_vec_free(&t->name_off);
    tdx_hmap_free(&t->reason_col);
    tdx_hmap_free(&t->range_pos);
    tdx_vec_free(&t->reasons);
    tdx_xsort_free(t->rows);
    free(t->width[0]);
    free(t->width[1]);
    free(t->vals);
    free(t->rvals);
    tdx_vec_free(&t->pay);
    memset(t, 0, sizeof *t);
}

/* Keys are looked up in hash maps: a crafted index may hold many distinct ones. */
int cli_stattable_columns(cli_stattable *t, const cli_statsrc *src, bool regions, tdx_err *err) {
    memset(t, 0, sizeof *t);
    t->src = src;
    t->regions = regions;
    t->sort_col = -1;
    tdx_gostat g;
    cli_statrow row;
    tdx_buf lab = {0};
    int rc, ins;
    if (src->rewind(src->ctx, err)) return -1;
    while ((rc = src->next(src->ctx, &g, &row, err)) == 1) {
        t->nrows++;
        for (size_t i = 0; i < g.nblock; i++) {
            if (!tdx_hmap_upsert(&t->reason_col, g.block[i].key, 0, &ins)) goto oom;
            if (ins && tdx_vec_push(&t->reasons, g.block[i].key)) goto oom;
        }
        for (size_t i = 0; i < g.nrange; i++) {
            if (!tdx_hmap_upsert(&t->range_pos, g.range[i].key, 0, &ins)) goto oom;
            if (ins && tdx_vec_push(&t->rcols, g.range[i].key)) goto oom;
        }
    }
    if (rc < 0) return -1;
    if (!t->nrows) return 0;
    /* the reason texts live in t->names; their tdx_str made once it stops growing */
    for (size_t k = 0; k < t->reasons.n; k++) {
        tdx_str l = block_label(t, t->reasons.v[k], &lab);
        if (tdx_vec_push(&t->name_off, t->names.n) || tdx_buf_append(&t->names, l.p, l.n)) goto oom;
    }
    tdx_vec_free(&lab);
    for (int i = 0; i < FIXED_COLS; i++)
        if (tdx_vec_push(&t->cols, cstr(fixed_cols[i]))) goto oom;
    for (size_t k = 0; k < t->reasons.n; k++) {
        size_t a = t->name_off.v[k], b = k + 1 < t->reasons.n ? t->name_off.v[k + 1] : t->names.n;
        if (tdx_vec_push(&t->cols, ((tdx_str){t->names.v + a, (uint32_t)(b - a)}))) goto oom;
    }
    /* Go's order, each label once (a reason "syscall" shares Block time (syscall)) */
    qsort(t->cols.v, t->cols.n, sizeof *t->cols.v, col_cmp);
    size_t u = 0;
    for (size_t i = 0; i < t->cols.n; i++)
        if (!u || tdx_str_cmp(t->cols.v[u - 1], t->cols.v[i])) t->cols.v[u++] = t->cols.v[i];
    t->cols.n = u;
    for (size_t k = 0; k < t->reasons.n; k++) {
        size_t a = t->name_off.v[k], b = k + 1 < t->reasons.n ? t->name_off.v[k + 1] : t->names.n;
        int c = col_index(t, (tdx_str){t->names.v + a, (uint32_t)(b - a)});
        if (c < 0 || tdx_hmap_put(&t->reason_col, t->reasons.v[k], (uint32_t)c)) goto oom;
    }
    if (t->rcols.n) qsort_r(t->rcols.v, t->rcols.n, sizeof *t->rcols.v, rcol_cmp, t);
    for (size_t k = 0; k < t->rcols.n; k++)
        if (tdx_hmap_put(&t->range_pos, t->rcols.v[k], (uint32_t)k)) goto oom;
    /* the row at hand (at least one value each, so that calloc never gets 0) */
    if (!(t->vals = calloc(t->cols.n, sizeof *t->vals)) ||
        !(t->rvals = calloc(t->rcols.n + 1, sizeof *t->rvals)))
        goto oom;
    return 0;
oom:
    tdx_vec_free(&lab);
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

int cli_stattable_sort_by(cli_stattable *t, const char *label) {
    t->sort_col = -1;
    if (!label || !strcmp(label, "Total") || !strcmp(label, "Total time")) return 0;
    t->sort_col = col_index(t, cstr(label));
    return t->sort_col < 0 ? -1 : 0;
}

void cli_stattable_labels(const cli_stattable *t, tdx_buf *o) {
    for (size_t c = 0; c < t->cols.n; c++) {
        if (c) tdx_buf_printf(o, ", ");
        tdx_buf_printf(o, "\"%.*s\"", (int)t->cols.v[c].n, (const char *)t->cols.v[c].p);
    }
}

/* One of the two text tables: the breakdown (ranges false) or the special ranges. The first
 * columns name the row: the goroutine, for regions its task, then the total. */
static size_t id_cols(const cli_stattable *t) {
    return t->regions ? 3 : 2;
}

static size_t table_cols(const cli_stattable *t, bool ranges) {
    return id_cols(t) + (ranges ? t->rcols.n : t->cols.n);
}

static tdx_str table_head(const cli_stattable *t, bool ranges, size_t c) {
    static const char *const heads[2][3] = {{"Goroutine", "Total", ""},
                                            {"Goroutine", "Task", "Total"}};
    size_t k = id_cols(t);
    if (c < k) return cstr(heads[t->regions][c]);
    return ranges ? src_str(t, t->rcols.v[c - k]) : t->cols.v[c - k];
}

/* Cell c of the row at hand into buf (64 bytes); false when the table leaves the row out (a
 * row with no range time in the special ranges). */
static bool table_cell(const cli_stattable *t, bool ranges, size_t c, char *buf) {
    if (ranges && !t->cur.has_range) return false;
    size_t k = id_cols(t);
    if (c == 0)
        snprintf(buf, 64, "%" PRId64, t->cur.id);
    else if (c == 1 && t->regions && t->cur.task)
        snprintf(buf, 64, "%" PRIu64, t->cur.task);
    else if (c == 1 && t->regions)
        buf[0] = 0; /* Go leaves the background task (0) blank */
    else if (c == k - 1)
        cli_duration(buf, 64, t->cur.total);
    else
        cli_duration(buf, 64, ranges ? t->rvals[c - k] : t->vals[c - k]);
    return true;
}

/* Widens the text tables' columns to the row at hand's cells: they are formatted twice
 * (measured here, printed later) rather than kept. */
static void measure_row(cli_stattable *t) {
    char cell[64];
    for (int r = 0; r < 2; r++)
        for (size_t c = 0; c < table_cols(t, r) && table_cell(t, r, c, cell); c++)
            if (cli_text_width(cell, strlen(cell)) > t->width[r][c])
                t->width[r][c] = cli_text_width(cell, strlen(cell));
}

int cli_stattable_rows(cli_stattable *t, bool text, const char *beside, size_t budget,
                       tdx_err *err) {
    const cli_statsrc *src = t->src;
    if (!(t->rows = tdx_xsort_new(beside, budget)))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    for (int r = 0; text && r < 2; r++) {
        size_t nc = table_cols(t, r);
        if (!(t->width[r] = calloc(nc, sizeof *t->width[r])))
            return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        /* a long label (a crafted name) is printed whole but does not widen its column */
        for (size_t c = 0; c < nc; c++) {
            tdx_str h = table_head(t, r, c);
            size_t l = cli_text_width((const char *)h.p, h.n);
            t->width[r][c] = l < 48 ? l : 48;
        }
    }
    if (!t->nrows) return 0;
    int ci[FIXED_COLS];
    for (int i = 0; i < FIXED_COLS; i++) ci[i] = col_index(t, cstr(fixed_cols[i]));
    if (src->rewind(src->ctx, err)) return -1;
    tdx_gostat g;
    cli_statrow row;
    int rc;
    while ((rc = src->next(src->ctx, &g, &row, err)) == 1) {
        int64_t *v = t->vals, *rv = t->rvals;
        memset(v, 0, t->cols.n * sizeof *v);
        memset(rv, 0, t->rcols.n * sizeof *rv);
        int64_t fixed[FIXED_COLS] = {g.exec, g.sched, g.syscall, g.syscall_block,
                                     tdx_gostat_unknown(&g)};
        for (int i = 0; i < FIXED_COLS; i++) v[ci[i]] = tdx_wadd(v[ci[i]], fixed[i]);
        /* Go adds each reason's time to its label's value */
        for (size_t i = 0; i < g.nblock; i++) {
            uint32_t c = tdx_hmap_get(&t->reason_col, g.block[i].key);
            if (c < t->cols.n) v[c] = tdx_wadd(v[c], g.block[i].ns);
        }
        int64_t rsum = 0;
        for (size_t i = 0; i < g.nrange; i++) {
            uint32_t k = tdx_hmap_get(&t->range_pos, g.range[i].key);
            rsum = tdx_wadd(rsum, g.range[i].ns);
            if (k < t->rcols.n) rv[k] = tdx_wadd(rv[k], g.range[i].ns);
        }
        row.total = g.total;
        row.has_range = rsum != 0;
        t->cur = row;
        t->exec = tdx_wadd(t->exec, v[ci[0]]);
        if (text) measure_row(t);
        /* the row's bytes: its fields, then its values, as zigzag varints */
        tdx_buf *b = &t->pay;
        b->n = 0;
        int bad = 0;
        int64_t head[HEAD] = {row.id,  (int64_t)row.task, row.creation, row.start,
                              row.end, row.total,         row.has_range};
        for (int i = 0; i < HEAD; i++) bad |= tdx_buf_uvarint(b, tdx_zigzag(head[i]));
        for (size_t c = 0; c < t->cols.n; c++) bad |= tdx_buf_uvarint(b, tdx_zigzag(v[c]));
        for (size_t c = 0; c < t->rcols.n; c++) bad |= tdx_buf_uvarint(b, tdx_zigzag(rv[c]));
        if (bad) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        int64_t key = t->sort_col < 0 ? g.total : v[t->sort_col];
        if (tdx_xsort_add(t->rows, ~((uint64_t)key ^ TDX_XSORT_SIGN), row.order, b->v, b->n, err))
            return -1;
    }
    return rc < 0 ? -1 : 0;
}

/* The next row in display order into t->cur, t->vals and t->rvals: 1, 0 after the last, -1. */
static int next_row(cli_stattable *t, tdx_err *err) {
    tdx_xrec r;
    int rc = tdx_xsort_next(t->rows, &r, err);
    if (rc != 1) return rc;
    const uint8_t *p = r.p, *end = r.p + r.n;
    int64_t head[HEAD] = {0};
    bool bad = false;
    for (size_t i = 0; i < HEAD + t->cols.n + t->rcols.n && !bad; i++) {
        uint64_t u = 0;
        int k = tdx_uvarint(p, end, &u);
        bad = k < 0;
        p += bad ? 0 : k;
        int64_t x = tdx_unzigzag(u);
        if (i < HEAD)
            head[i] = x;
        else if (i < HEAD + t->cols.n)
            t->vals[i - HEAD] = x;
        else
            t->rvals[i - HEAD - t->cols.n] = x;
    }
    if (bad || p != end) return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "a sorted row is damaged");
    t->cur = (cli_statrow){head[0], (uint64_t)head[1], head[2], head[3],
                           head[4], head[5],           0,       head[6] != 0};
    return 1;
}

/* The rows, in display order (the sort reads them again from the first). */
static int rows_rewind(cli_stattable *t, tdx_err *err) {
    return t->rows ? tdx_xsort_rewind(t->rows, err) : 0;
}

static int rows_next(cli_stattable *t, tdx_err *err) {
    return t->rows ? next_row(t, err) : 0;
}

static void put_time(tdx_buf *o, const char *key, int64_t t, int64_t t0, bool never) {
    if (never)
        tdx_buf_printf(o, ", \"%s\": null", key);
    else
        tdx_buf_printf(o, ", \"%s\": %" PRId64, key, tdx_wsub(t, t0));
}

int cli_stattable_json(cli_stattable *t, tdx_buf *o, const char *key, int64_t t0, tdx_err *err) {
    tdx_buf_printf(o, "\"columns\": [");
    for (size_t c = 0; c < t->cols.n; c++) {
        if (c) tdx_buf_printf(o, ", ");
        tdx_json_quote(o, t->cols.v[c].p, t->cols.v[c].n);
    }
    tdx_buf_printf(o, "], \"ranges\": [");
    for (size_t c = 0; c < t->rcols.n; c++) {
        if (c) tdx_buf_printf(o, ", ");
        tdx_str s = src_str(t, t->rcols.v[c]);
        tdx_json_quote(o, s.p, s.n);
    }
    tdx_buf_printf(o, "], \"%s\": [", key);
    int rc = rows_rewind(t, err) ? -2 : 0, got = 0;
    for (uint64_t i = 0; !rc && (got = rows_next(t, err)) == 1; i++) {
        const cli_statrow *r = &t->cur;
        if (t->regions) {
            tdx_buf_printf(
                o, "%s\n{\"goroutine\": %" PRId64 ", \"task\": %" PRIu64 ", \"total_ns\": %" PRId64,
                i ? "," : "", r->id, r->task, r->total);
            put_time(o, "start_ns", r->start, t0, false);
            put_time(o, "end_ns", r->end, t0, false);
        } else {
            tdx_buf_printf(o, "%s\n{\"id\": %" PRId64 ", \"total_ns\": %" PRId64, i ? "," : "",
                           r->id, r->total);
            put_time(o, "creation_ns", r->creation, t0, false);
            put_time(o, "start_ns", r->start, t0, r->start == 0);
            put_time(o, "end_ns", r->end, t0, r->end == 0);
        }
        /* values in the order of "columns" and "ranges" (labels are not repeated per row, and
         * two that print alike, from bytes that are not UTF-8, stay apart) */
        tdx_buf_printf(o, ", \"stats\": [");
        for (size_t c = 0; c < t->cols.n; c++)
            tdx_buf_printf(o, "%s%" PRId64, c ? ", " : "", t->vals[c]);
        tdx_buf_printf(o, "], \"ranges\": [");
        for (size_t c = 0; c < t->rcols.n; c++)
            tdx_buf_printf(o, "%s%" PRId64, c ? ", " : "", t->rvals[c]);
        tdx_buf_printf(o, "]}");
        rc = cli_flush_out(o, false);
    }
    if (got < 0) rc = -2;
    if (!rc) tdx_buf_printf(o, "]");
    return rc;
}

/* Prints one table, its columns as wide as cli_stattable_rows measured. */
static int table_text(cli_stattable *t, tdx_buf *o, bool ranges, tdx_err *err) {
    size_t nc = table_cols(t, ranges);
    const size_t *w = t->width[ranges];
    for (size_t c = 0; c < nc; c++) {
        tdx_str h = table_head(t, ranges, c);
        if (c) tdx_buf_printf(o, "  ");
        cli_pad(o, (const char *)h.p, h.n, w[c], c != 0);
    }
    tdx_buf_printf(o, "\n");
    char cell[64];
    int rc = rows_rewind(t, err) ? -2 : 0, got = 0;
    while (!rc && (got = rows_next(t, err)) == 1) {
        size_t c = 0;
        for (; c < nc && table_cell(t, ranges, c, cell); c++) {
            if (c) tdx_buf_printf(o, "  ");
            cli_pad(o, cell, strlen(cell), w[c], c != 0);
        }
        if (c) tdx_buf_printf(o, "\n");
        rc = cli_flush_out(o, false);
    }
    return got < 0 ? -2 : rc;
}

int cli_stattable_text(cli_stattable *t, tdx_buf *o, tdx_err *err) {
    int rc = table_text(t, o, false, err);
    if (!rc && t->rcols.n) {
        tdx_buf_printf(o, "\nSpecial ranges (they overlap the times above):\n");
        rc = table_text(t, o, true, err);
    }
    return rc;
}
