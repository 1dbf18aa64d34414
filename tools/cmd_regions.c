/* cmd_regions.c: `traceidx regions`: go tool trace's user region page (/userregions) from an
 * index's REGIONS section: regions by type and where they began, with their durations. */
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "core/quote.h"
#include "core/varint.h"
#include "index/format/format.h"
#include "index/format/reader.h"
#include "index/common/extsort.h"
#include "index/analysis/gostats.h"
#include "index/analysis/regstats.h"
#include "tools/regsel.h"
#include "tools/stattable.h"

static const char regions_help[] =
    "usage: traceidx regions INDEX [--json]\n"
    "       traceidx regions INDEX [--type TYPE] [--pc PC] [--latmin DUR] [--latmax DUR]\n"
    "                        [--sort COLUMN] [--json] [--quiet]\n\n"
    "The user regions of a trace (runtime/trace.WithRegion, StartRegion), as go tool trace's\n"
    "\"User-defined regions\" page shows them (/userregions): grouped by type and by the\n"
    "outermost frame of the stack each began with, each group with its count and a histogram\n"
    "of the regions' durations, five buckets a decade.\n\n"
    "  --json  the same as JSON (durations in ns)\n\n"
    "With --type, --pc or a latency bound: the regions they select, one by one, as the page\n"
    "a row's links open shows them (/userregion?type=TYPE&pc=PC&latmin=...): each with its\n"
    "goroutine, its task (blank for the background task) and its total time, and where that\n"
    "time went (execution, scheduler wait, blocking by reason, syscalls, as `goroutines\n"
    "--name` shows goroutines), the longest first; then, for the regions that had any, their\n"
    "time in special ranges such as GC mark assist. All the conditions must hold.\n\n"
    "  --type TYPE     regions of that type ('' for the unnamed one a goroutine inherits)\n"
    "  --pc PC         begun at that frame (the table's \"@ 0x...\"; hexadecimal, 0x optional)\n"
    "  --latmin DUR    that lasted at least DUR (10ms, 1.5s, ...)\n"
    "  --latmax DUR    that lasted at most DUR (the table's histogram rows are such bounds)\n"
    "  --sort COLUMN   order by a column (\"Execution time\", \"Sched wait time\", ...;\n"
    "                  default: \"Total\"), the largest first; ties by goroutine, then in\n"
    "                  the order they ended\n"
    "  --json          the same as JSON (durations in ns; start_ns and end_ns since the\n"
    "                  trace's first event; each region's \"stats\" and \"ranges\" in the\n"
    "                  order of \"columns\" and \"ranges\")\n"
    "  --quiet         no progress on stderr (shown when it is a terminal)\n\n"
    "A region's statistics are its goroutine's over the region, as Go's summary computes them\n"
    "(its goroutine's statistics at its end less those at its begin): a region without a begin\n"
    "has its goroutine's from the start, and one the trace's end closes has them up to the\n"
    "last event. They are computed from every event of the index, so this reads the whole\n"
    "index once (seconds for a large trace). The page's four profiles of the time the\n"
    "selected regions waited are `traceidx pprof net|sync|syscall|sched INDEX --region TYPE`\n"
    "with the same options.\n\n"
    "INDEX may be the trace itself: its TRACE.tidx is used after checking it matches. As in Go,\n"
    "the regions are those of every goroutine in Go's summary: a region not ended runs to its\n"
    "goroutine's end, or to the trace's end (the last Sync) when the goroutine outlives it\n"
    "(except a system goroutine's, which Go leaves out); an end without a begin counts from the\n"
    "trace's first event; a goroutine created within a region is in an unnamed one (type \"\")\n"
    "from its creation, whose stack is its creator's. The table is sorted by type, then PC, as\n"
    "Go sorts it (ties by function, file and line). The build computes it; an index built before\n"
    "traceidx did asks for a rebuild.\n";

typedef struct out {
    tdx_buf o;
    bool json;
    uint64_t i, total;
} out;

static void frame_text(tdx_buf *o, const tdx_rgrow *r) {
    tdx_buf_append(o, r->func.p, r->func.n);
    tdx_buf_printf(o, " @ 0x%" PRIx64 " (", r->pc);
    tdx_buf_append(o, r->file.p, r->file.n);
    tdx_buf_printf(o, ":%" PRIu64 ")", r->line);
}

static int on_row(void *ctx, const tdx_rgrow *r) {
    out *w = ctx;
    if (w->json) {
        tdx_buf_printf(&w->o, "%s\n{\"type\": ", w->i ? "," : "");
        tdx_json_quote(&w->o, r->type.p, r->type.n);
        tdx_buf_printf(&w->o, ", \"func\": ");
        tdx_json_quote(&w->o, r->func.p, r->func.n);
        tdx_buf_printf(&w->o, ", \"pc\": \"0x%" PRIx64 "\", \"file\": ", r->pc);
        tdx_json_quote(&w->o, r->file.p, r->file.n);
        tdx_buf_printf(&w->o,
                       ", \"line\": %" PRIu64 ", \"count\": %" PRIu64 ", \"histogram\": ", r->line,
                       r->h.count);
        cli_hist_json(&w->o, &r->h);
        tdx_buf_printf(&w->o, "}");
    } else {
        tdx_buf_printf(&w->o, "\nRegion type ");
        tdx_json_quote(&w->o, r->type.p, r->type.n);
        tdx_buf_printf(&w->o, ": %" PRIu64 " region%s, begun at ", r->h.count,
                       r->h.count == 1 ? "" : "s");
        if (!r->pc && !r->func.n && !r->file.n && !r->line)
            tdx_buf_printf(&w->o, "(no stack)");
        else
            frame_text(&w->o, r);
        tdx_buf_printf(&w->o, "\n  Duration distribution:\n");
        cli_hist_text(&w->o, &r->h);
    }
    w->i++;
    return cli_flush_out(&w->o, false) ? 1 : 0;
}

static int count_row(void *ctx, const tdx_rgrow *r) {
    out *w = ctx;
    w->i++;
    w->total += r->h.count;
    return 0;
}

/* ---- one group's regions (/userregion) ---- */

/* The regions selected, in the order they ended (spilled past a budget). */
typedef struct detail {
    tdx_gostats *gs;
    tdx_xsort *rows;
    uint64_t seq;
    tdx_buf pay;
    tdx_gostat_kvvec kv; /* the maps of the region read back */
} detail;

/* A selected region's bytes: its row's fields, then its statistics as tdx_gostat_encode codes
 * them. */
static int on_region(void *ctx, const tdx_gostat_region *r, tdx_err *err) {
    detail *d = ctx;
    tdx_buf *b = &d->pay;
    b->n = 0;
    if (tdx_buf_uvarint(b, r->task) || tdx_buf_uvarint(b, tdx_zigzag(r->start)) ||
        tdx_buf_uvarint(b, tdx_zigzag(r->end)) || tdx_gostat_encode(b, &r->st))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return tdx_xsort_add(d->rows, d->seq++, 0, b->v, b->n, err);
}

static int detail_rewind(void *ctx, tdx_err *err) {
    return tdx_xsort_rewind(((detail *)ctx)->rows, err);
}

static int detail_next(void *ctx, tdx_gostat *g, cli_statrow *row, tdx_err *err) {
    detail *d = ctx;
    tdx_xrec x;
    int rc = tdx_xsort_next(d->rows, &x, err);
    if (rc != 1) return rc;
    const uint8_t *p = x.p, *end = x.p + x.n;
    uint64_t v[3];
    for (int i = 0; i < 3; i++) {
        int k = tdx_uvarint(p, end, &v[i]);
        if (k < 0) goto bad;
        p += k;
    }
    if (tdx_gostat_decode(&p, end, UINT32_MAX, g, &d->kv) || p != end) goto bad;
    *row = (cli_statrow){
        g->id, v[0], 0, tdx_unzigzag(v[1]), tdx_unzigzag(v[2]), 0, (uint64_t)g->id ^ TDX_XSORT_SIGN,
        false};
    return 1;
bad:
    return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "regions: a selected region's record is damaged");
}

static tdx_str detail_str(const void *ctx, uint32_t id) {
    return tdx_gostats_str(((const detail *)ctx)->gs, id);
}

static int show_detail(tdx_index *ix, const cli_regsel *sel, const char *sort, bool json,
                       bool quiet) {
    char beside[4096];
    cli_scratch_beside(beside, sizeof beside);
    const size_t budget = 16u << 20;
    detail d;
    memset(&d, 0, sizeof d);
    cli_stattable T;
    memset(&T, 0, sizeof T);
    tdx_buf o = {0}, name = {0};
    tdx_err err = {0};
    int rc = -1;
    if (!(d.rows = tdx_xsort_new(beside, budget))) {
        fprintf(stderr, "traceidx: out of memory\n");
        goto out;
    }
    if (cli_regsel_pass(ix, sel, quiet, on_region, &d, &d.gs)) goto out;
    cli_statsrc src = {detail_rewind, detail_next, detail_str, &d};
    if (cli_stattable_columns(&T, &src, true, &err)) goto report;
    cli_regsel_name(sel, &name);
    /* (no region: no column, and nothing to order) */
    if (T.nrows && cli_stattable_sort_by(&T, sort)) {
        tdx_buf l = {0};
        cli_stattable_labels(&T, &l);
        fprintf(stderr,
                "traceidx: %s: --sort: these regions have no column \"%s\"; they have: %.*s and "
                "\"Total\"\n",
                ix->path, sort, (int)l.n, (const char *)l.v);
        tdx_vec_free(&l);
        goto out;
    }
    if (cli_stattable_rows(&T, !json, beside, budget, &err)) goto report;
    if (json) {
        tdx_buf_printf(&o, "{\"filter\": ");
        tdx_json_quote(&o, name.v, name.n);
        tdx_buf_printf(&o, ", \"count\": %" PRIu64 ", ", T.nrows);
        rc = cli_stattable_json(&T, &o, "regions", tdx_gostats_first_time(d.gs), &err);
        if (!rc) tdx_buf_printf(&o, "}\n");
    } else {
        tdx_buf_printf(&o, "Regions: %.*s\nCount: %" PRIu64 "\n", (int)name.n, (const char *)name.v,
                       T.nrows);
        rc = T.nrows ? (tdx_buf_printf(&o, "\n"), cli_stattable_text(&T, &o, &err)) : 0;
    }
    if (!rc && cli_flush_out(&o, true)) rc = -1;
    if (rc == -2) goto report;
    goto out;
report:
    cli_report(ix->path, &err);
    rc = -1;
out:
    cli_stattable_free(&T);
    tdx_vec_free(&o);
    tdx_vec_free(&name);
    tdx_vec_free(&d.pay);
    tdx_vec_free(&d.kv);
    tdx_xsort_free(d.rows);
    tdx_gostats_free(d.gs);
    return rc ? -1 : 0;
}

int cmd_regions(int argc, char **argv) {
    const char *path = NULL;
    const char *sort = NULL;
    bool json = false, quiet = false;
    cli_regsel sel;
    cli_regsel_init(&sel);
    for (int i = 1; i < argc; i++) {
        int took = cli_regsel_arg(&sel, "regions", "--type", argc, argv, &i);
        if (took > 1) return took - 1;
        if (took) continue;
        if (cli_is_help(argv[i])) {
            fputs(regions_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = true;
        } else if (!strcmp(argv[i], "--sort")) {
            if (i + 1 >= argc) return cli_usage_error("regions", "--sort needs a column");
            sort = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("regions", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("regions", "unexpected argument %s", argv[i]);
        }
    }
    if (!path) return cli_usage_error("regions", "need an INDEX");
    bool one = cli_regsel_any(&sel);
    if (sort && !one)
        return cli_usage_error("regions", "--sort orders the regions --type or a filter selects");
    tdx_index ix;
    if (cli_open_index(path, &ix, false)) return TDX_EXIT_FAIL;
    if (one) {
        int drc = show_detail(&ix, &sel, sort, json, quiet);
        tdx_index_close(&ix);
        return drc ? TDX_EXIT_FAIL : TDX_EXIT_OK;
    }
    tdx_err err;
    tdx_err_clear(&err);
    out w;
    memset(&w, 0, sizeof w);
    w.json = json;
    int rc = -1;
    uint64_t len, off = ix.sec[TDX_SEC_REGIONS].off;
    const uint8_t *p = cli_index_section(&ix, TDX_SEC_REGIONS, "region table", &len);
    if (!p) goto out;
    /* Read twice: the totals head the output; the whole section is checked before any row. */
    if (tdx_regstats_decode(p, (size_t)len, off, count_row, &w, &err)) {
        cli_report(ix.path, &err);
        goto out;
    }
    uint64_t groups = w.i;
    w.i = 0;
    if (json)
        tdx_buf_printf(&w.o, "{\"regions\": %" PRIu64 ", \"types\": [", w.total);
    else
        tdx_buf_printf(&w.o, "%" PRIu64 " region%s, %" PRIu64 " type%s by where they began\n",
                       w.total, w.total == 1 ? "" : "s", groups, groups == 1 ? "" : "s");
    int got = tdx_regstats_decode(p, (size_t)len, off, on_row, &w, &err);
    if (got) goto out; /* (checked above: stdout refused it, said) */
    if (json) tdx_buf_printf(&w.o, "]}\n");
    if (cli_flush_out(&w.o, true)) goto out;
    rc = 0;
out:
    tdx_vec_free(&w.o);
    tdx_index_close(&ix);
    return rc ? TDX_EXIT_FAIL : TDX_EXIT_OK;
}
