/* cmd_goroutines.c: `traceidx goroutines`, go tool trace's goroutine analysis (the /goroutines
 * and /goroutine?name= pages) as text or JSON, from a trace or an index. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/hmap.h"
#include "core/quote.h"
#include "core/varint.h"
#include "index/gostats.h"
#include "index/extsort.h"
#include "index/gsindex.h"
#include "index/reader.h"

static const char goroutines_help[] =
    "usage: traceidx goroutines TRACE|INDEX [--name NAME [--sort COLUMN]] [--json] [-j N]\n"
    "                           [--spill-budget BYTES] [--quiet]\n\n"
    "Go's goroutine analysis, as go tool trace's \"Goroutine analysis\" pages show it. Without\n"
    "--name: the goroutines grouped by start location (the function each was started with),\n"
    "with their count and total execution time, the largest first (/goroutines). With --name:\n"
    "that group's goroutines one by one (/goroutine?name=NAME), each with its total time and\n"
    "where it went: execution, scheduler wait, blocking by reason, syscalls, and the time it\n"
    "spent in special ranges such as GC mark assist.\n\n"
    "  --name NAME    one group, NAME as the first table shows it ('' for goroutines with no\n"
    "                 stack, which the table calls \"(Inactive, no stack trace sampled)\")\n"
    "  --sort COLUMN  order --name's goroutines by a column of its table, the largest first\n"
    "                 (\"Execution time\", \"Sched wait time\", ...; default: \"Total\")\n"
    "  --json         the same as JSON (durations in ns; times since the trace's first event;\n"
    "                 a goroutine's \"stats\" and \"ranges\" in the order of \"columns\" and\n"
    "                 \"ranges\")\n"
    "  -j N           threads reading a TRACE (default: number of CPUs)\n"
    "  --spill-budget BYTES  memory for the records of goroutines that ended, and for\n"
    "                 --name's rows, before they go to unnamed scratch files in TMPDIR\n"
    "                 (suffixes k, M, G; default 16M each)\n"
    "  --quiet        no progress on stderr (shown when it is a terminal)\n\n"
    "The statistics come from every event, as Go's summary does. An INDEX holds them (its\n"
    "GSTATS section; one built before traceidx stored them, or stored them in their first\n"
    "layout, is read by decoding its events). A TRACE whose TRACE.tidx is beside it and was\n"
    "built from it is answered from that index; any other TRACE is read as validate reads it.\n"
    "A damaged TRACE is an error: go tool trace summarizes the events before the damage, and\n"
    "so does `goroutines` of the index `build --partial` makes. Where go tool trace's order\n"
    "depends on Go map iteration (ties), goroutines go by id and groups by name. Where Go's\n"
    "summary would crash (a range begun on a goroutine after it blocked forever), the event is\n"
    "counted as any other.\n";

#define FIXED_COLS 5
static const char *const fixed_cols[FIXED_COLS] = {"Execution time", "Sched wait time",
                                                   "Syscall execution time", "Block time (syscall)",
                                                   "Unknown time"};

/* ---- collecting ---- */

typedef struct feed {
    tdx_gostats *gs;
    tdx_err err;
    int failed;
} feed;

static int feed_event(void *ctx, const tdx_event *e, const tdx_gen *g) {
    feed *f = ctx;
    if (tdx_gostats_event(f->gs, e, g, &f->err)) return f->failed = 1, -1;
    return 0;
}

static int collect_trace(const char *path, int jobs, bool quiet, tdx_gostats *gs) {
    feed f = {gs, {0}, 0};
    tdx_source src;
    tdx_read_stats st;
    tdx_err err;
    int open_failed;
    int rc = cli_read_trace("goroutines", path, jobs, quiet, feed_event, &f, &src, &st, &err,
                            &open_failed);
    if (open_failed) return -1;
    if (f.failed) {
        cli_report(path, &f.err);
    } else if (rc) {
        cli_report_trace(path, &src, &err);
        /* cmd/trace summarizes what it read before the damage: so does an index of it */
        if (err.kind != TDX_EIO && st.events > 1)
            fprintf(stderr,
                    "traceidx: %s: go tool trace shows the statistics of the %" PRIu64
                    " events read before the damage: `traceidx build --partial %s`, then "
                    "`traceidx goroutines %s.tidx`\n",
                    path, st.events, path, path);
    }
    tdx_source_close(&src);
    return rc || f.failed ? -1 : 0;
}

/* Decodes every event block of an index that has no GSTATS (built before traceidx stored it). */
static int collect_index(const char *path, tdx_index *ix, bool quiet, tdx_gostats *gs) {
    feed f = {gs, {0}, 0};
    tdx_err err = {0};
    cli_progress prog;
    cli_progress_init(&prog, "goroutines", quiet);
    int rc = cli_index_events(ix, feed_event, &f, &prog, &err);
    cli_progress_end(&prog);
    if (rc) cli_report(path, f.failed ? &f.err : &err);
    return rc ? -1 : 0;
}

/* ---- where the statistics come from ---- */

/* Computed from the events (a trace, or an index built before GSTATS), or the index's GSTATS. */
typedef struct source {
    tdx_gostats *gs;
    bool stored;
    tdx_gsindex gx;
    uint64_t group; /* stored: the group being read */
    tdx_str want;   /* computed: the name of the group being read */
} source;

static tdx_str src_str(const source *s, uint32_t id) {
    return s->stored ? tdx_gsindex_str(&s->gx, id) : tdx_gostats_str(s->gs, id);
}

static int member_rewind(source *s, tdx_err *err) {
    return s->stored ? tdx_gsindex_begin(&s->gx, s->group, err) : tdx_gostats_rewind(s->gs, err);
}

/* The group's next goroutine; computed, every goroutine's execution time adds to *all_exec on
 * the way (NULL: not counted). */
static int member_next(source *s, tdx_gostat *g, int64_t *all_exec, tdx_err *err) {
    if (s->stored) return tdx_gsindex_next(&s->gx, g, err);
    int rc;
    while ((rc = tdx_gostats_next(s->gs, g, err)) == 1) {
        if (all_exec) *all_exec = tdx_wadd(*all_exec, g->exec);
        if (!tdx_str_cmp(tdx_gostats_str(s->gs, g->name), s->want)) return 1;
    }
    return rc;
}

/* ---- output helpers ---- */

static tdx_str cstr(const char *s) {
    return (tdx_str){(const uint8_t *)s, (uint32_t)strlen(s)};
}

static void put_json_str(tdx_buf *out, tdx_str s) {
    tdx_json_quote(out, s.p, s.n);
}

static void put_dur(char *buf, size_t cap, int64_t ns) {
    cli_duration(buf, cap, ns);
}

/* ---- the groups (/goroutines) ---- */

typedef struct group {
    uint32_t name;
    uint64_t count;
    int64_t exec;
} group;

static int group_cmp(const void *pa, const void *pb, void *ctx) {
    const group *a = pa, *b = pb;
    return tdx_gostats_group_cmp(ctx, a->name, a->exec, b->name, b->exec);
}

static int show_groups(source *src, bool json, tdx_err *err) {
    TDX_VEC(group) groups = {0};
    tdx_hmap by_name = {0};
    uint64_t total = 0;
    int64_t exec = 0;
    int rc = 0;
    if (src->stored) { /* the table, in display order already */
        total = src->gx.goroutines;
        exec = src->gx.exec;
        for (uint64_t i = 0; i < src->gx.ngroups && !rc; i++) {
            tdx_gsgroup gr = tdx_gsindex_group(&src->gx, i);
            if (tdx_vec_push(&groups, ((group){gr.name, gr.count, gr.exec})))
                rc = tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        }
    }
    tdx_gostat g;
    while (!src->stored && (rc = tdx_gostats_next(src->gs, &g, err)) == 1) {
        int ins;
        uint32_t *slot = tdx_hmap_upsert(&by_name, g.name, (uint32_t)groups.n, &ins);
        if (!slot || (ins && tdx_vec_push(&groups, ((group){g.name, 0, 0})))) {
            rc = tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
            break;
        }
        group *gr = &groups.v[*slot];
        // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): the push above made groups.v
        gr->count++;
        gr->exec = tdx_wadd(gr->exec, g.exec);
        total++;
        exec = tdx_wadd(exec, g.exec);
    }
    if (rc < 0) goto out;
    if (!src->stored && groups.n) qsort_r(groups.v, groups.n, sizeof *groups.v, group_cmp, src->gs);
    tdx_buf o = {0};
    char d[64];
    if (json) {
        tdx_buf_printf(&o, "{\"goroutines\": %" PRIu64 ", \"exec_ns\": %" PRId64 ", \"groups\": [",
                       total, exec);
        for (size_t i = 0; i < groups.n; i++) {
            tdx_buf_printf(&o, "%s{\"name\": ", i ? ", " : "");
            put_json_str(&o, src_str(src, groups.v[i].name));
            tdx_buf_printf(&o, ", \"count\": %" PRIu64 ", \"exec_ns\": %" PRId64 "}",
                           groups.v[i].count, groups.v[i].exec);
            if (cli_flush_out(&o, false)) break;
        }
        tdx_buf_printf(&o, "]}\n");
    } else {
        size_t w = strlen("Start location");
        for (size_t i = 0; i < groups.n; i++) {
            tdx_str n = src_str(src, groups.v[i].name);
            size_t l = n.n ? cli_text_width((const char *)n.p, n.n)
                           : strlen("(Inactive, no stack trace sampled)");
            if (l > w) w = l;
        }
        put_dur(d, sizeof d, exec);
        tdx_buf_printf(&o, "%" PRIu64 " goroutine%s in %zu group%s, total execution time %s\n\n",
                       total, total == 1 ? "" : "s", groups.n, groups.n == 1 ? "" : "s", d);
        tdx_buf_printf(&o, "%-*s  %10s  %s\n", (int)w, "Start location", "Count",
                       "Total execution time");
        for (size_t i = 0; i < groups.n; i++) {
            tdx_str n = src_str(src, groups.v[i].name);
            put_dur(d, sizeof d, groups.v[i].exec);
            if (n.n)
                cli_pad(&o, (const char *)n.p, n.n, w, false);
            else
                tdx_buf_printf(&o, "%-*s", (int)w, "(Inactive, no stack trace sampled)");
            tdx_buf_printf(&o, "  %10" PRIu64 "  %s\n", groups.v[i].count, d);
            if (cli_flush_out(&o, false)) break;
        }
    }
    if (cli_flush_out(&o, true)) rc = -1;
    tdx_vec_free(&o);
out:
    tdx_vec_free(&groups);
    tdx_hmap_free(&by_name);
    return rc < 0 ? -1 : 0;
}

/* ---- one group (/goroutine?name=) ---- */

/* A goroutine of the group, as the tables show it; its column values are the group's `vals`
 * (one per column) and `rvals` (one per range name). */
typedef struct row {
    int64_t id, creation, start, end, total;
    bool has_range; /* a range time sum that is not 0 (Go's HasRangeTime) */
} row;

/* The group: its columns, then its rows through an external sort (by the --sort column, then
 * id), so that memory does not grow with the group (3.2 M goroutines in the 4 GiB bench trace's
 * largest). */
typedef struct grp {
    TDX_VEC(tdx_str) cols;   /* Go's order: "Execution time", then by bytes */
    TDX_VEC(uint32_t) rcols; /* range names, by bytes */
    tdx_buf names;           /* the "Block time (reason)" texts */
    TDX_VEC(size_t) name_off;
    int sort_col; /* -1: Total */
    tdx_xsort *rows;
    uint64_t nrows;
    int64_t exec;     /* the group's execution time */
    size_t *width[2]; /* text: the breakdown's and the special ranges' column widths */
    /* the row at hand (being added, or read back) */
    row cur;
    int64_t *vals, *rvals;
    tdx_buf pay;
} grp;

static int col_cmp(const void *pa, const void *pb) {
    tdx_str a = *(const tdx_str *)pa, b = *(const tdx_str *)pb;
    tdx_str first = cstr(fixed_cols[0]);
    bool fa = !tdx_str_cmp(a, first), fb = !tdx_str_cmp(b, first);
    if (fa != fb) return fa ? -1 : 1;
    return tdx_str_cmp(a, b);
}

static int rcol_cmp(const void *pa, const void *pb, void *ctx) {
    const source *src = ctx;
    return tdx_str_cmp(src_str(src, *(const uint32_t *)pa), src_str(src, *(const uint32_t *)pb));
}

/* The column labelled `label` (columns are sorted: a binary search), or -1. */
static int col_index(const grp *G, tdx_str label) {
    const tdx_str *hit = bsearch(&label, G->cols.v, G->cols.n, sizeof *G->cols.v, col_cmp);
    return hit ? (int)(hit - G->cols.v) : -1;
}

/* "Block time (reason)" of reason id r, in buf. */
static tdx_str block_label(const source *src, uint32_t r, tdx_buf *buf) {
    tdx_str t = src_str(src, r);
    buf->n = 0;
    tdx_buf_printf(buf, "Block time (%.*s)", (int)t.n, (const char *)t.p);
    return (tdx_str){buf->v, (uint32_t)buf->n};
}

static void grp_free(grp *G) {
    tdx_vec_free(&G->cols);
    tdx_vec_free(&G->rcols);
    tdx_vec_free(&G->names);
    tdx_vec_free(&G->name_off);
    tdx_xsort_free(G->rows);
    free(G->width[0]);
    free(G->width[1]);
    free(G->vals);
    free(G->rvals);
    tdx_vec_free(&G->pay);
}

/* Keys are looked up in hash maps: a crafted index may hold many distinct ones. */
typedef struct keymaps {
    tdx_hmap reason_col, range_pos;
    TDX_VEC(uint32_t) reasons;
} keymaps;

static void keymaps_free(keymaps *k) {
    tdx_hmap_free(&k->reason_col);
    tdx_hmap_free(&k->range_pos);
    tdx_vec_free(&k->reasons);
}

/* Pass 1 over the group's goroutines: its columns (every key any of them has), and how many
 * there are. Computed statistics give every goroutine's execution time on the way; stored ones
 * the header. */
static int load_columns(source *src, grp *G, keymaps *K, int64_t *all_exec, tdx_err *err) {
    tdx_gostat g;
    tdx_buf lab = {0};
    int rc, ins;
    *all_exec = src->stored ? src->gx.exec : 0;
    if (member_rewind(src, err)) return -1;
    while ((rc = member_next(src, &g, src->stored ? NULL : all_exec, err)) == 1) {
        G->nrows++;
        for (size_t i = 0; i < g.nblock; i++) {
            if (!tdx_hmap_upsert(&K->reason_col, g.block[i].key, 0, &ins)) goto oom;
            if (ins && tdx_vec_push(&K->reasons, g.block[i].key)) goto oom;
        }
        for (size_t i = 0; i < g.nrange; i++) {
            if (!tdx_hmap_upsert(&K->range_pos, g.range[i].key, 0, &ins)) goto oom;
            if (ins && tdx_vec_push(&G->rcols, g.range[i].key)) goto oom;
        }
    }
    if (rc < 0) return -1;
    if (!G->nrows) return 0;
    /* the reason texts live in G->names; their tdx_str made once it stops growing */
    for (size_t k = 0; k < K->reasons.n; k++) {
        tdx_str l = block_label(src, K->reasons.v[k], &lab);
        if (tdx_vec_push(&G->name_off, G->names.n) || tdx_buf_append(&G->names, l.p, l.n)) goto oom;
    }
    tdx_vec_free(&lab);
    for (int i = 0; i < FIXED_COLS; i++)
        if (tdx_vec_push(&G->cols, cstr(fixed_cols[i]))) goto oom;
    for (size_t k = 0; k < K->reasons.n; k++) {
        size_t a = G->name_off.v[k], b = k + 1 < K->reasons.n ? G->name_off.v[k + 1] : G->names.n;
        if (tdx_vec_push(&G->cols, ((tdx_str){G->names.v + a, (uint32_t)(b - a)}))) goto oom;
    }
    /* Go's order, each label once (a reason "syscall" shares Block time (syscall)) */
    qsort(G->cols.v, G->cols.n, sizeof *G->cols.v, col_cmp);
    size_t u = 0;
    for (size_t i = 0; i < G->cols.n; i++)
        if (!u || tdx_str_cmp(G->cols.v[u - 1], G->cols.v[i])) G->cols.v[u++] = G->cols.v[i];
    G->cols.n = u;
    for (size_t k = 0; k < K->reasons.n; k++) {
        size_t a = G->name_off.v[k], b = k + 1 < K->reasons.n ? G->name_off.v[k + 1] : G->names.n;
        int c = col_index(G, (tdx_str){G->names.v + a, (uint32_t)(b - a)});
        if (c < 0 || tdx_hmap_put(&K->reason_col, K->reasons.v[k], (uint32_t)c)) goto oom;
    }
    if (G->rcols.n) qsort_r(G->rcols.v, G->rcols.n, sizeof *G->rcols.v, rcol_cmp, src);
    for (size_t k = 0; k < G->rcols.n; k++)
        if (tdx_hmap_put(&K->range_pos, G->rcols.v[k], (uint32_t)k)) goto oom;
    /* the row at hand (at least one value each, so that calloc never gets 0) */
    if (!(G->vals = calloc(G->cols.n, sizeof *G->vals)) ||
        !(G->rvals = calloc(G->rcols.n + 1, sizeof *G->rvals)))
        goto oom;
    return 0;
oom:
    tdx_vec_free(&lab);
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

/* One of group_text's two tables: the breakdown (ranges false) or the special ranges. */
static size_t table_cols(const grp *G, bool ranges) {
    return 2 + (ranges ? G->rcols.n : G->cols.n);
}

static tdx_str table_head(const source *src, const grp *G, bool ranges, size_t c) {
    if (c < 2) return cstr(c ? "Total" : "Goroutine");
    return ranges ? src_str(src, G->rcols.v[c - 2]) : G->cols.v[c - 2];
}

/* Cell c of the row at hand into buf (64 bytes); false when the table leaves the row out (a
 * goroutine with no range time in the special ranges). */
static bool table_cell(const grp *G, bool ranges, size_t c, char *buf) {
    if (ranges && !G->cur.has_range) return false;
    if (c == 0)
        snprintf(buf, 64, "%" PRId64, G->cur.id);
    else if (c == 1)
        put_dur(buf, 64, G->cur.total);
    else
        put_dur(buf, 64, ranges ? G->rvals[c - 2] : G->vals[c - 2]);
    return true;
}

/* Widens the text tables' columns to the row at hand's cells: they are formatted twice
 * (measured here, printed later) rather than kept. */
static void measure_row(grp *G) {
    char cell[64];
    for (int t = 0; t < 2; t++)
        for (size_t c = 0; c < table_cols(G, t) && table_cell(G, t, c, cell); c++)
            if (cli_text_width(cell, strlen(cell)) > G->width[t][c])
                G->width[t][c] = cli_text_width(cell, strlen(cell));
}

/* Pass 2: each goroutine's column values, into the sort (keyed by the --sort column, largest
 * first, then by id) and, for text, the columns' widths. */
static int load_rows(source *src, grp *G, keymaps *K, bool text, const char *beside, size_t budget,
                     tdx_err *err) {
    if (!(G->rows = tdx_xsort_new(beside, budget)))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    for (int t = 0; text && t < 2; t++) {
        size_t nc = table_cols(G, t);
        if (!(G->width[t] = calloc(nc, sizeof *G->width[t])))
            return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        /* a long label (a crafted name) is printed whole but does not widen its column */
        for (size_t c = 0; c < nc; c++) {
            tdx_str h = table_head(src, G, t, c);
            size_t l = cli_text_width((const char *)h.p, h.n);
            G->width[t][c] = l < 48 ? l : 48;
        }
    }
    int ci[FIXED_COLS];
    for (int i = 0; i < FIXED_COLS; i++) ci[i] = col_index(G, cstr(fixed_cols[i]));
    if (member_rewind(src, err)) return -1;
    tdx_gostat g;
    int rc;
    while ((rc = member_next(src, &g, NULL, err)) == 1) {
        int64_t *v = G->vals, *rv = G->rvals;
        memset(v, 0, G->cols.n * sizeof *v);
        memset(rv, 0, G->rcols.n * sizeof *rv);
        int64_t fixed[FIXED_COLS] = {g.exec, g.sched, g.syscall, g.syscall_block,
                                     tdx_gostat_unknown(&g)};
        for (int i = 0; i < FIXED_COLS; i++) v[ci[i]] = tdx_wadd(v[ci[i]], fixed[i]);
        /* Go adds each reason's time to its label's value */
        for (size_t i = 0; i < g.nblock; i++) {
            uint32_t c = tdx_hmap_get(&K->reason_col, g.block[i].key);
            if (c < G->cols.n) v[c] = tdx_wadd(v[c], g.block[i].ns);
        }
        int64_t rsum = 0;
        for (size_t i = 0; i < g.nrange; i++) {
            uint32_t k = tdx_hmap_get(&K->range_pos, g.range[i].key);
            rsum = tdx_wadd(rsum, g.range[i].ns);
            if (k < G->rcols.n) rv[k] = tdx_wadd(rv[k], g.range[i].ns);
        }
        G->cur = (row){g.id, g.creation, g.start, g.end, g.total, rsum != 0};
        G->exec = tdx_wadd(G->exec, v[ci[0]]);
        if (text) measure_row(G);
        /* the row's bytes: its fields, then its values, as zigzag varints */
        tdx_buf *b = &G->pay;
        b->n = 0;
        int bad = 0;
        int64_t head[6] = {g.id, g.creation, g.start, g.end, g.total, rsum != 0};
        for (int i = 0; i < 6; i++) bad |= tdx_buf_uvarint(b, tdx_zigzag(head[i]));
        for (size_t c = 0; c < G->cols.n; c++) bad |= tdx_buf_uvarint(b, tdx_zigzag(v[c]));
        for (size_t c = 0; c < G->rcols.n; c++) bad |= tdx_buf_uvarint(b, tdx_zigzag(rv[c]));
        if (bad) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        int64_t key = G->sort_col < 0 ? g.total : v[G->sort_col];
        if (tdx_xsort_add(G->rows, ~((uint64_t)key ^ TDX_XSORT_SIGN),
                          (uint64_t)g.id ^ TDX_XSORT_SIGN, b->v, b->n, err))
            return -1;
    }
    return rc < 0 ? -1 : 0;
}

/* The next row in display order into G->cur, G->vals and G->rvals: 1, 0 after the last, -1. */
static int next_row(grp *G, tdx_err *err) {
    tdx_xrec r;
    int rc = tdx_xsort_next(G->rows, &r, err);
    if (rc != 1) return rc;
    const uint8_t *p = r.p, *end = r.p + r.n;
    int64_t head[6] = {0};
    bool bad = false;
    for (size_t i = 0; i < 6 + G->cols.n + G->rcols.n && !bad; i++) {
        uint64_t u = 0;
        int k = tdx_uvarint(p, end, &u);
        bad = k < 0;
        p += bad ? 0 : k;
        int64_t x = tdx_unzigzag(u);
        if (i < 6)
            head[i] = x;
        else if (i < 6 + G->cols.n)
            G->vals[i - 6] = x;
        else
            G->rvals[i - 6 - G->cols.n] = x;
    }
    if (bad || p != end)
        return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "goroutines: a sorted row is damaged");
    G->cur = (row){head[0], head[1], head[2], head[3], head[4], head[5] != 0};
    return 1;
}

static void put_time(tdx_buf *o, const char *key, int64_t t, int64_t t0, bool never) {
    if (never)
        tdx_buf_printf(o, ", \"%s\": null", key);
    else
        tdx_buf_printf(o, ", \"%s\": %" PRId64, key, tdx_wsub(t, t0));
}

/* The rows, in display order (the sort reads them again from the first). */
static int rows_rewind(grp *G, tdx_err *err) {
    return tdx_xsort_rewind(G->rows, err);
}

static int group_json(const source *src, grp *G, tdx_str name, const char *pct, tdx_err *err) {
    tdx_buf o = {0};
    int64_t t0 = src->stored ? src->gx.t0 : tdx_gostats_first_time(src->gs);
    tdx_buf_printf(&o, "{\"name\": ");
    put_json_str(&o, name);
    tdx_buf_printf(&o, ", \"count\": %" PRIu64 ", \"exec_percent\": \"%s\", \"columns\": [",
                   G->nrows, pct);
    for (size_t c = 0; c < G->cols.n; c++) {
        if (c) tdx_buf_printf(&o, ", ");
        put_json_str(&o, G->cols.v[c]);
    }
    tdx_buf_printf(&o, "], \"ranges\": [");
    for (size_t c = 0; c < G->rcols.n; c++) {
        if (c) tdx_buf_printf(&o, ", ");
        put_json_str(&o, src_str(src, G->rcols.v[c]));
    }
    tdx_buf_printf(&o, "], \"goroutines\": [");
    int rc = rows_rewind(G, err), got = 0;
    for (uint64_t i = 0; !rc && (got = next_row(G, err)) == 1; i++) {
        const row *r = &G->cur;
        tdx_buf_printf(&o, "%s\n{\"id\": %" PRId64 ", \"total_ns\": %" PRId64, i ? "," : "", r->id,
                       r->total);
        put_time(&o, "creation_ns", r->creation, t0, false);
        put_time(&o, "start_ns", r->start, t0, r->start == 0);
        put_time(&o, "end_ns", r->end, t0, r->end == 0);
        /* values in the order of "columns" and "ranges" (labels are not repeated per goroutine,
         * and two that print alike, from bytes that are not UTF-8, stay apart) */
        tdx_buf_printf(&o, ", \"stats\": [");
        for (size_t c = 0; c < G->cols.n; c++)
            tdx_buf_printf(&o, "%s%" PRId64, c ? ", " : "", G->vals[c]);
        tdx_buf_printf(&o, "], \"ranges\": [");
        for (size_t c = 0; c < G->rcols.n; c++)
            tdx_buf_printf(&o, "%s%" PRId64, c ? ", " : "", G->rvals[c]);
        tdx_buf_printf(&o, "]}");
        rc = cli_flush_out(&o, false);
    }
    if (got < 0) rc = -2; /* reported by the caller */
    if (!rc) {
        tdx_buf_printf(&o, "]}\n");
        if (cli_flush_out(&o, true)) rc = -1;
    }
    tdx_vec_free(&o);
    return rc;
}

/* Prints one table, its columns as wide as load_rows measured. */
static int table_text(tdx_buf *o, const source *src, grp *G, bool ranges, tdx_err *err) {
    size_t nc = table_cols(G, ranges);
    const size_t *w = G->width[ranges];
    for (size_t c = 0; c < nc; c++) {
        tdx_str h = table_head(src, G, ranges, c);
        if (c) tdx_buf_printf(o, "  ");
        cli_pad(o, (const char *)h.p, h.n, w[c], c != 0);
    }
    tdx_buf_printf(o, "\n");
    char cell[64];
    int rc = rows_rewind(G, err) ? -2 : 0, got = 0;
    while (!rc && (got = next_row(G, err)) == 1) {
        size_t c = 0;
        for (; c < nc && table_cell(G, ranges, c, cell); c++) {
            if (c) tdx_buf_printf(o, "  ");
            cli_pad(o, cell, strlen(cell), w[c], c != 0);
        }
        if (c) tdx_buf_printf(o, "\n");
        rc = cli_flush_out(o, false);
    }
    return got < 0 ? -2 : rc;
}

static int group_text(const source *src, grp *G, tdx_str name, const char *pct, tdx_err *err) {
    tdx_buf o = {0};
    if (name.n)
        tdx_buf_printf(&o, "Goroutine start location: %.*s\n", (int)name.n, (const char *)name.p);
    else
        tdx_buf_printf(&o, "Goroutine start location: (Inactive, no stack trace sampled)\n");
    tdx_buf_printf(&o, "Count: %" PRIu64 "\n", G->nrows);
    tdx_buf_printf(&o, "Execution time: %s of total program execution time\n\n", pct);
    /* Breakdown: goroutine, total, then the non-overlapping statistics */
    int rc = table_text(&o, src, G, false, err);
    if (!rc && G->rcols.n) {
        tdx_buf_printf(&o, "\nSpecial ranges (they overlap the times above):\n");
        rc = table_text(&o, src, G, true, err);
    }
    if (!rc && cli_flush_out(&o, true)) rc = -1;
    tdx_vec_free(&o);
    return rc;
}

static int show_group(source *src, const char *name_arg, const char *sort, bool json,
                      const char *path, const char *beside, size_t budget, tdx_err *err) {
    grp G;
    memset(&G, 0, sizeof G);
    keymaps K;
    memset(&K, 0, sizeof K);
    tdx_str name = cstr(name_arg);
    int64_t all_exec = 0;
    int rc = -1;
    bool found = !src->stored;
    for (uint64_t i = 0; src->stored && i < src->gx.ngroups && !found; i++)
        if (!tdx_str_cmp(tdx_gsindex_str(&src->gx, tdx_gsindex_group(&src->gx, i).name), name))
            src->group = i, found = true;
    src->want = name;
    if (found && load_columns(src, &G, &K, &all_exec, err)) {
        cli_report(path, err);
        goto out;
    }
    if (G.nrows == 0) {
        fprintf(stderr,
                "traceidx: %s: no goroutine starts at \"%s\" ('traceidx goroutines %s' lists the "
                "start locations)\n",
                path, name_arg, path);
        goto out;
    }
    G.sort_col = -1;
    if (sort && strcmp(sort, "Total") != 0 && strcmp(sort, "Total time") != 0) {
        G.sort_col = col_index(&G, cstr(sort));
        if (G.sort_col < 0) {
            fprintf(stderr, "traceidx: %s: --sort: this group has no column \"%s\"; it has:", path,
                    sort);
            for (size_t c = 0; c < G.cols.n; c++)
                fprintf(stderr, "%s \"%.*s\"", c ? "," : "", (int)G.cols.v[c].n,
                        (const char *)G.cols.v[c].p);
            fprintf(stderr, " and \"Total\"\n");
            goto out;
        }
    }
    if (load_rows(src, &G, &K, !json, beside, budget, err)) {
        cli_report(path, err);
        goto out;
    }
    char pct[48] = "";
    if (all_exec > 0) snprintf(pct, sizeof pct, "%.2f%%", (double)G.exec / (double)all_exec * 100);
    rc = json ? group_json(src, &G, name, pct, err) : group_text(src, &G, name, pct, err);
    if (rc == -2) cli_report(path, err);
out:
    keymaps_free(&K);
    grp_free(&G);
    return rc ? -1 : 0;
}

int cmd_goroutines(int argc, char **argv) {
    const char *path = NULL, *name = NULL, *sort = NULL;
    int jobs = tdx_ncpus(), jr;
    bool json = false, quiet = false;
    uint64_t budget = 16u << 20;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(goroutines_help, stdout);
            return TDX_EXIT_OK;
        } else if ((jr = cli_jobs_arg(argc, argv, &i, &jobs)) != 0) {
            if (jr < 0) return cli_usage_error("goroutines", "-j needs a number from 1 to 1024");
        } else if (!strcmp(argv[i], "--name") || !strcmp(argv[i], "--sort")) {
            if (i + 1 >= argc) return cli_usage_error("goroutines", "%s needs a value", argv[i]);
            *(argv[i][2] == 'n' ? &name : &sort) = argv[i + 1];
            i++;
        } else if (!strcmp(argv[i], "--spill-budget")) {
            if (i + 1 >= argc || cli_parse_bytes(argv[i + 1], &budget) || budget > SIZE_MAX / 2)
                return cli_usage_error("goroutines", "--spill-budget needs a byte count");
            i++;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("goroutines", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("goroutines", "unexpected argument %s", argv[i]);
        }
    }
    if (!path) return cli_usage_error("goroutines", "need a TRACE or an INDEX");
    if (sort && !name) return cli_usage_error("goroutines", "--sort orders --name's table");
    source src;
    memset(&src, 0, sizeof src);
    tdx_index ix;
    bool have_ix = false;
    tdx_err err;
    tdx_err_clear(&err);
    int rc = 0;
    /* A trace whose index is beside it is answered from the index (in milliseconds). */
    bool is_ix = cli_is_index_file(path);
    if (is_ix || cli_index_beside(path, &ix)) {
        if (is_ix && cli_open_index(path, &ix, false)) return TDX_EXIT_FAIL;
        have_ix = true;
        if (ix.partial) {
            char off[48];
            cli_damage_where(&ix, off, sizeof off);
            fprintf(stderr,
                    "traceidx: %s: the trace is damaged%s; these are the statistics of the "
                    "events before it, as go tool trace would show them\n",
                    path, off);
        }
        uint64_t len;
        const uint8_t *p;
        if (ix.sec[TDX_SEC_GSTATS].present) {
            src.stored = true;
            if (!(p = tdx_index_section(&ix, TDX_SEC_GSTATS, &len, &err)) ||
                tdx_gsindex_open(&src.gx, p, (size_t)len, ix.sec[TDX_SEC_GSTATS].off, &err) ||
                tdx_gsindex_check_span(&src.gx, (int64_t)ix.meta[M_FIRST_TIME],
                                       (int64_t)ix.meta[M_LAST_TIME], &err)) {
                cli_report(path, &err);
                rc = -1;
            }
        } else {
            fprintf(stderr,
                    "traceidx: %s: the index holds no goroutine statistics this traceidx reads "
                    "(an earlier one built it); computing them from its events (a new build "
                    "has them at once)\n",
                    path);
        }
    }
    /* Ended goroutines' records, and --name's rows, past the budget go to unnamed scratch
     * files in TMPDIR. */
    char beside[4096];
    cli_scratch_beside(beside, sizeof beside);
    if (!rc && !src.stored) {
        if (!(src.gs = tdx_gostats_new(beside, (size_t)budget))) {
            fprintf(stderr, "traceidx: out of memory\n");
            rc = -1;
        } else {
            rc = have_ix ? collect_index(path, &ix, quiet, src.gs)
                         : collect_trace(path, jobs, quiet, src.gs);
            if (!rc && tdx_gostats_finish(src.gs, &err)) {
                cli_report(path, &err);
                rc = -1;
            }
        }
    }
    if (!rc) {
        if (name) {
            rc = show_group(&src, name, sort, json, path, beside, (size_t)budget, &err);
        } else if (show_groups(&src, json, &err)) {
            if (err.kind != TDX_OK) cli_report(path, &err);
            rc = -1;
        }
    }
    tdx_gostats_free(src.gs);
    tdx_gsindex_free(&src.gx);
    if (have_ix) tdx_index_close(&ix);
    return rc ? TDX_EXIT_FAIL : TDX_EXIT_OK;
}
