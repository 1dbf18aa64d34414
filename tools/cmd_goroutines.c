/* cmd_goroutines.c: `traceidx goroutines`, go tool trace's goroutine analysis (the /goroutines
 * and /goroutine?name= pages) as text or JSON, from a trace or an index. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/hmap.h"
#include "core/quote.h"
#include "core/varint.h"
#include "index/gostats.h"
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
    "  --spill-budget BYTES  memory for the records of goroutines that ended before they go\n"
    "                 to an unnamed scratch file in TMPDIR (suffixes k, M, G; default 16M)\n"
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

/* Writes out and empties buf once it is large; -1 (said on stderr) when stdout refused it. */
static int flush_out(tdx_buf *b, bool final) {
    if (!final && b->n < (1u << 16)) return 0;
    int rc = b->n && fwrite(b->v, 1, b->n, stdout) != b->n ? -1 : 0;
    if (!rc && final && fflush(stdout)) rc = -1;
    if (rc) fprintf(stderr, "traceidx: write failed: %s\n", strerror(errno));
    b->n = 0;
    return rc;
}

/* ---- the groups (/goroutines) ---- */

typedef struct group {
    uint32_t name;
    uint64_t count;
    int64_t exec;
} group;

static int group_cmp(const void *pa, const void *pb, void *ctx) {
    const group *a = pa, *b = pb;
    const tdx_gostats *gs = ctx;
    if (a->exec != b->exec) return a->exec > b->exec ? -1 : 1;
    return tdx_str_cmp(tdx_gostats_str(gs, a->name), tdx_gostats_str(gs, b->name));
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
            if (flush_out(&o, false)) break;
        }
        tdx_buf_printf(&o, "]}\n");
    } else {
        size_t w = strlen("Start location");
        for (size_t i = 0; i < groups.n; i++) {
            tdx_str n = src_str(src, groups.v[i].name);
            size_t l = n.n ? n.n : strlen("(Inactive, no stack trace sampled)");
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
                tdx_buf_printf(&o, "%-*.*s", (int)w, (int)n.n, (const char *)n.p);
            else
                tdx_buf_printf(&o, "%-*s", (int)w, "(Inactive, no stack trace sampled)");
            tdx_buf_printf(&o, "  %10" PRIu64 "  %s\n", groups.v[i].count, d);
            if (flush_out(&o, false)) break;
        }
    }
    if (flush_out(&o, true)) rc = -1;
    tdx_vec_free(&o);
out:
    tdx_vec_free(&groups);
    tdx_hmap_free(&by_name);
    return rc < 0 ? -1 : 0;
}

/* ---- one group (/goroutine?name=) ---- */

typedef struct row {
    int64_t id, creation, start, end, total;
    size_t vals;    /* its column values: vals[vals .. vals + ncols) */
    size_t rvals;   /* its range times: rvals[rvals .. rvals + nrcols) */
    bool has_range; /* a range time sum that is not 0 (Go's HasRangeTime) */
} row;

typedef struct grp {
    TDX_VEC(row) rows;
    TDX_VEC(int64_t) vals;
    TDX_VEC(int64_t) rvals;
    TDX_VEC(tdx_str) cols;   /* Go's order: "Execution time", then by bytes */
    TDX_VEC(uint32_t) rcols; /* range names, by bytes */
    tdx_buf names;           /* the "Block time (reason)" texts */
    TDX_VEC(size_t) name_off;
    int sort_col; /* -1: Total */
} grp;

static int row_cmp(const void *pa, const void *pb, void *ctx) {
    const row *a = pa, *b = pb;
    const grp *G = ctx;
    int64_t x, y;
    if (G->sort_col < 0) {
        x = a->total, y = b->total;
    } else {
        x = G->vals.v[a->vals + (size_t)G->sort_col];
        y = G->vals.v[b->vals + (size_t)G->sort_col];
    }
    if (x != y) return x > y ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

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
    tdx_vec_free(&G->rows);
    tdx_vec_free(&G->vals);
    tdx_vec_free(&G->rvals);
    tdx_vec_free(&G->cols);
    tdx_vec_free(&G->rcols);
    tdx_vec_free(&G->names);
    tdx_vec_free(&G->name_off);
}

/* Reads the group's goroutines: two passes over them (the columns, then the values). Computed
 * statistics give every goroutine's execution time on the first pass; stored ones the header.
 * Keys are looked up in hash maps: a crafted index may hold many distinct ones. */
static int load_group(source *src, grp *G, int64_t *all_exec, tdx_err *err) {
    tdx_gostat g;
    tdx_buf lab = {0};
    TDX_VEC(uint32_t) reasons = {0};
    tdx_hmap reason_col = {0}, range_pos = {0};
    uint64_t members = 0;
    int rc, ins;
    *all_exec = src->stored ? src->gx.exec : 0;
    if (member_rewind(src, err)) goto fail;
    /* pass 1: the columns (every key any of the group's goroutines has) */
    while ((rc = member_next(src, &g, src->stored ? NULL : all_exec, err)) == 1) {
        members++;
        for (size_t i = 0; i < g.nblock; i++) {
            if (!tdx_hmap_upsert(&reason_col, g.block[i].key, 0, &ins)) goto oom;
            if (ins && tdx_vec_push(&reasons, g.block[i].key)) goto oom;
        }
        for (size_t i = 0; i < g.nrange; i++) {
            if (!tdx_hmap_upsert(&range_pos, g.range[i].key, 0, &ins)) goto oom;
            if (ins && tdx_vec_push(&G->rcols, g.range[i].key)) goto oom;
        }
    }
    if (rc < 0) goto fail;
    if (!members) goto done;
    /* the reason texts live in G->names; their tdx_str made once it stops growing */
    for (size_t k = 0; k < reasons.n; k++) {
        tdx_str l = block_label(src, reasons.v[k], &lab);
        if (tdx_vec_push(&G->name_off, G->names.n) || tdx_buf_append(&G->names, l.p, l.n)) goto oom;
    }
    for (int i = 0; i < FIXED_COLS; i++)
        if (tdx_vec_push(&G->cols, cstr(fixed_cols[i]))) goto oom;
    for (size_t k = 0; k < reasons.n; k++) {
        size_t a = G->name_off.v[k], b = k + 1 < reasons.n ? G->name_off.v[k + 1] : G->names.n;
        if (tdx_vec_push(&G->cols, ((tdx_str){G->names.v + a, (uint32_t)(b - a)}))) goto oom;
    }
    /* Go's order, each label once (a reason "syscall" shares Block time (syscall)) */
    qsort(G->cols.v, G->cols.n, sizeof *G->cols.v, col_cmp);
    size_t u = 0;
    for (size_t i = 0; i < G->cols.n; i++)
        if (!u || tdx_str_cmp(G->cols.v[u - 1], G->cols.v[i])) G->cols.v[u++] = G->cols.v[i];
    G->cols.n = u;
    for (size_t k = 0; k < reasons.n; k++) {
        size_t a = G->name_off.v[k], b = k + 1 < reasons.n ? G->name_off.v[k + 1] : G->names.n;
        int c = col_index(G, (tdx_str){G->names.v + a, (uint32_t)(b - a)});
        if (c < 0 || tdx_hmap_put(&reason_col, reasons.v[k], (uint32_t)c)) goto oom;
    }
    if (G->rcols.n) qsort_r(G->rcols.v, G->rcols.n, sizeof *G->rcols.v, rcol_cmp, src);
    for (size_t k = 0; k < G->rcols.n; k++)
        if (tdx_hmap_put(&range_pos, G->rcols.v[k], (uint32_t)k)) goto oom;
    /* pass 2: the values */
    if (member_rewind(src, err)) goto fail;
    int ci[FIXED_COLS];
    for (int i = 0; i < FIXED_COLS; i++) ci[i] = col_index(G, cstr(fixed_cols[i]));
    while ((rc = member_next(src, &g, NULL, err)) == 1) {
        row r = {g.id, g.creation, g.start, g.end, g.total, G->vals.n, G->rvals.n, false};
        if (tdx_vec_reserve(&G->vals, G->vals.n + G->cols.n) ||
            tdx_vec_reserve(&G->rvals, G->rvals.n + G->rcols.n))
            goto oom;
        int64_t *v = G->vals.v + r.vals;
        int64_t *rv = G->rcols.n ? G->rvals.v + r.rvals : NULL; /* (no ranges: no storage) */
        memset(v, 0, G->cols.n * sizeof *v);
        if (rv) memset(rv, 0, G->rcols.n * sizeof *rv);
        G->vals.n += G->cols.n;
        G->rvals.n += G->rcols.n;
        int64_t fixed[FIXED_COLS] = {g.exec, g.sched, g.syscall, g.syscall_block,
                                     tdx_gostat_unknown(&g)};
        for (int i = 0; i < FIXED_COLS; i++) v[ci[i]] = tdx_wadd(v[ci[i]], fixed[i]);
        /* Go adds each reason's time to its label's value */
        for (size_t i = 0; i < g.nblock; i++) {
            uint32_t c = tdx_hmap_get(&reason_col, g.block[i].key);
            if (c < G->cols.n) v[c] = tdx_wadd(v[c], g.block[i].ns);
        }
        int64_t rsum = 0;
        for (size_t i = 0; i < g.nrange; i++) {
            uint32_t k = tdx_hmap_get(&range_pos, g.range[i].key);
            rsum = tdx_wadd(rsum, g.range[i].ns);
            if (k < G->rcols.n) rv[k] = tdx_wadd(rv[k], g.range[i].ns);
        }
        r.has_range = rsum != 0;
        if (tdx_vec_push(&G->rows, r)) goto oom;
    }
    if (rc < 0) goto fail;
done:
    tdx_vec_free(&reasons);
    tdx_vec_free(&lab);
    tdx_hmap_free(&reason_col);
    tdx_hmap_free(&range_pos);
    return 0;
oom:
    tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
fail:
    tdx_vec_free(&reasons);
    tdx_vec_free(&lab);
    tdx_hmap_free(&reason_col);
    tdx_hmap_free(&range_pos);
    return -1;
}

static int64_t row_range(const grp *G, const row *r, size_t c) {
    return G->rvals.v[r->rvals + c];
}

static void put_time(tdx_buf *o, const char *key, int64_t t, int64_t t0, bool never) {
    if (never)
        tdx_buf_printf(o, ", \"%s\": null", key);
    else
        tdx_buf_printf(o, ", \"%s\": %" PRId64, key, tdx_wsub(t, t0));
}

static int group_json(const source *src, const grp *G, tdx_str name, const char *pct) {
    tdx_buf o = {0};
    int64_t t0 = src->stored ? src->gx.t0 : tdx_gostats_first_time(src->gs);
    tdx_buf_printf(&o, "{\"name\": ");
    put_json_str(&o, name);
    tdx_buf_printf(&o, ", \"count\": %zu, \"exec_percent\": \"%s\", \"columns\": [", G->rows.n,
                   pct);
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
    int rc = 0;
    for (size_t i = 0; i < G->rows.n && !rc; i++) {
        const row *r = &G->rows.v[i];
        tdx_buf_printf(&o, "%s\n{\"id\": %" PRId64 ", \"total_ns\": %" PRId64, i ? "," : "", r->id,
                       r->total);
        put_time(&o, "creation_ns", r->creation, t0, false);
        put_time(&o, "start_ns", r->start, t0, r->start == 0);
        put_time(&o, "end_ns", r->end, t0, r->end == 0);
        /* values in the order of "columns" and "ranges" (labels are not repeated per goroutine,
         * and two that print alike, from bytes that are not UTF-8, stay apart) */
        tdx_buf_printf(&o, ", \"stats\": [");
        for (size_t c = 0; c < G->cols.n; c++)
            tdx_buf_printf(&o, "%s%" PRId64, c ? ", " : "", G->vals.v[r->vals + c]);
        tdx_buf_printf(&o, "], \"ranges\": [");
        for (size_t c = 0; c < G->rcols.n; c++)
            tdx_buf_printf(&o, "%s%" PRId64, c ? ", " : "", row_range(G, r, c));
        tdx_buf_printf(&o, "]}");
        rc = flush_out(&o, false);
    }
    tdx_buf_printf(&o, "]}\n");
    if (flush_out(&o, true)) rc = -1;
    tdx_vec_free(&o);
    return rc;
}

/* One of group_text's two tables: the breakdown (ranges false) or the special ranges. */
typedef struct table {
    const source *src;
    const grp *G;
    bool ranges;
} table;

static size_t table_cols(const table *t) {
    return 2 + (t->ranges ? t->G->rcols.n : t->G->cols.n);
}

static tdx_str table_head(const table *t, size_t c) {
    if (c < 2) return cstr(c ? "Total" : "Goroutine");
    return t->ranges ? src_str(t->src, t->G->rcols.v[c - 2]) : t->G->cols.v[c - 2];
}

/* Cell c of row r into buf (64 bytes); false when the table leaves the row out (a goroutine with
 * no range time in the special ranges). */
static bool table_cell(const table *t, const row *r, size_t c, char *buf) {
    if (t->ranges && !r->has_range) return false;
    if (c == 0)
        snprintf(buf, 64, "%" PRId64, r->id);
    else if (c == 1)
        put_dur(buf, 64, r->total);
    else
        put_dur(buf, 64, t->ranges ? row_range(t->G, r, c - 2) : t->G->vals.v[r->vals + c - 2]);
    return true;
}

/* Prints the table with columns as wide as their widest cell: the cells are formatted twice
 * (measured, then printed) rather than kept, so memory does not grow with the rows. */
static int table_text(tdx_buf *o, const table *t) {
    size_t nc = table_cols(t);
    size_t *w = calloc(nc, sizeof *w);
    if (!w) return -1;
    char cell[64];
    /* a long label (a crafted name) is printed whole but does not widen its column */
    for (size_t c = 0; c < nc; c++) w[c] = table_head(t, c).n < 48 ? table_head(t, c).n : 48;
    for (size_t i = 0; i < t->G->rows.n; i++)
        for (size_t c = 0; c < nc && table_cell(t, &t->G->rows.v[i], c, cell); c++)
            if (strlen(cell) > w[c]) w[c] = strlen(cell);
    for (size_t c = 0; c < nc; c++) {
        tdx_str h = table_head(t, c);
        tdx_buf_printf(o, c ? "  %*.*s" : "%-*.*s", (int)w[c], (int)h.n, (const char *)h.p);
    }
    tdx_buf_printf(o, "\n");
    int rc = 0;
    for (size_t i = 0; i < t->G->rows.n && !rc; i++) {
        size_t c = 0;
        for (; c < nc && table_cell(t, &t->G->rows.v[i], c, cell); c++)
            tdx_buf_printf(o, c ? "  %*s" : "%-*s", (int)w[c], cell);
        if (c) tdx_buf_printf(o, "\n");
        rc = flush_out(o, false);
    }
    free(w);
    return rc;
}

static int group_text(const source *src, const grp *G, tdx_str name, const char *pct) {
    tdx_buf o = {0};
    if (name.n)
        tdx_buf_printf(&o, "Goroutine start location: %.*s\n", (int)name.n, (const char *)name.p);
    else
        tdx_buf_printf(&o, "Goroutine start location: (Inactive, no stack trace sampled)\n");
    tdx_buf_printf(&o, "Count: %zu\n", G->rows.n);
    tdx_buf_printf(&o, "Execution time: %s of total program execution time\n\n", pct);
    /* Breakdown: goroutine, total, then the non-overlapping statistics */
    table t = {src, G, false};
    int rc = table_text(&o, &t);
    if (!rc && G->rcols.n) {
        tdx_buf_printf(&o, "\nSpecial ranges (they overlap the times above):\n");
        t.ranges = true;
        rc = table_text(&o, &t);
    }
    if (flush_out(&o, true)) rc = -1;
    tdx_vec_free(&o);
    return rc;
}

static int show_group(source *src, const char *name_arg, const char *sort, bool json,
                      const char *path, tdx_err *err) {
    grp G;
    memset(&G, 0, sizeof G);
    tdx_str name = cstr(name_arg);
    int64_t all_exec;
    int rc = -1;
    bool found = !src->stored;
    for (uint64_t i = 0; src->stored && i < src->gx.ngroups && !found; i++)
        if (!tdx_str_cmp(tdx_gsindex_str(&src->gx, tdx_gsindex_group(&src->gx, i).name), name))
            src->group = i, found = true;
    src->want = name;
    if (found && load_group(src, &G, &all_exec, err)) {
        cli_report(path, err);
        goto out;
    }
    if (G.rows.n == 0) {
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
    qsort_r(G.rows.v, G.rows.n, sizeof *G.rows.v, row_cmp, &G);
    int64_t exec = 0;
    for (size_t i = 0; i < G.rows.n; i++) exec = tdx_wadd(exec, G.vals.v[G.rows.v[i].vals]);
    char pct[48] = "";
    if (all_exec > 0) snprintf(pct, sizeof pct, "%.2f%%", (double)exec / (double)all_exec * 100);
    rc = json ? group_json(src, &G, name, pct) : group_text(src, &G, name, pct);
out:
    grp_free(&G);
    return rc;
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
    if (!rc && !src.stored) {
        /* Ended goroutines' records past the budget go to an unnamed scratch file in TMPDIR. */
        const char *tmp = getenv("TMPDIR");
        char beside[4096];
        snprintf(beside, sizeof beside, "%s/traceidx-scratch", tmp && *tmp ? tmp : "/tmp");
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
            rc = show_group(&src, name, sort, json, path, &err);
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
