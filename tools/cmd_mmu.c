/* cmd_mmu.c: `traceidx mmu`: go tool trace's minimum mutator utilization page (/mmu) from an
 * index's MUTIL section: the MMU curve, or the worst windows of one size. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/gofmt.h"
#include "index/format/format.h"
#include "index/analysis/mmu.h"
#include "index/views/query.h"
#include "index/format/reader.h"

static const char mmu_help[] =
    "usage: traceidx mmu INDEX [--include LIST] [--per-goroutine] [--window DUR] [--json]\n"
    "                          [--percentiles]\n\n"
    "The minimum mutator utilization (MMU) of a trace, as go tool trace's page of that name\n"
    "(/mmu) computes it: for windows of a size, the lowest share of the Ps that the program's\n"
    "goroutines (the mutator) had over any one window, the rest taken by the garbage collector.\n"
    "The largest window whose MMU is 0 is the longest pause.\n\n"
    "  --include LIST   what counts as GC work, a comma list of stw (the GC's stop-the-world\n"
    "                   phases), background (its mark workers), assist (mark assists) and sweep\n"
    "                   (incremental sweeping); default stw,background,assist, as Go's page\n"
    "                   starts ('' counts nothing)\n"
    "  --per-goroutine  a P's window counts 0 when the GC took its P at all, and the MMU is\n"
    "                   the lowest over the Ps (Go's \"Per-goroutine\" view; dedicated mark\n"
    "                   workers do not count then, as in Go)\n"
    "  --window DUR     the worst windows of that size (up to 10, disjoint, the lowest first),\n"
    "                   each with the query that shows it; DUR as Go writes durations (10ms,\n"
    "                   1.5s, 250us) or a bare integer of ns\n"
    "  --json           Go's JSON: the curve (/mmu?mode=plot: 100 window sizes on a log scale\n"
    "                   over six decades from 1ns, 1us, 1ms or 1s, the first whose MMU is\n"
    "                   below 0.0001, up to the trace's length), or with --window the worst\n"
    "                   windows (mode=details; their times are the trace's clock, as in Go)\n"
    "  --percentiles    with --json and no --window: the curve with Go's percentile columns\n"
    "                   (flag mut; Go's are the MMU itself, and so are these)\n\n"
    "Without --json, the MMU is shown for windows of 1, 2 and 5 times each power of ten over\n"
    "the same span as Go's curve, but for 1ns (Go's MMU there is 0 for every trace: it\n"
    "measures a window that starts at the trace's end).\n\n"
    "INDEX may be the trace itself: its TRACE.tidx is used after checking it matches. The\n"
    "build records what the utilization is computed from; the curve is computed as Go computes\n"
    "it, in time that follows the trace's GC activity. An index built before traceidx did asks\n"
    "for a rebuild.\n\n"
    "Go's quirk, kept: with background workers counted, a worker's start counts twice (the\n"
    "start, and the label the runtime writes with every start) and its stop once, so a P whose\n"
    "worker ran twice stays in GC to the end, and a function that ends at 0 is cut where it\n"
    "reached 0. --include stw,assist leaves workers out.\n";

static const struct {
    const char *name;
    unsigned flag;
    const char *text;
} includes[] = {{"stw", TDX_MMU_STW, "stop-the-world"},
                {"background", TDX_MMU_BACKGROUND, "background workers"},
                {"assist", TDX_MMU_ASSIST, "mark assists"},
                {"sweep", TDX_MMU_SWEEP, "sweeping"}};
#define NINCLUDES (sizeof includes / sizeof *includes)

static int parse_include(const char *s, unsigned *flags) {
    *flags = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        size_t k = 0;
        for (; k < NINCLUDES; k++)
            if (strlen(includes[k].name) == n && !strncmp(s, includes[k].name, n)) break;
        if (k == NINCLUDES) return -1;
        *flags |= includes[k].flag;
        s += n;
        if (*s == ',' && !*++s) return -1;
    }
    return 0;
}

static void put_float(tdx_buf *o, double v, int form) {
    char b[40];
    tdx_buf_append(o, b, tdx_go_float(b, v, form));
}

static void describe(tdx_buf *o, unsigned flags) {
    tdx_buf_printf(o, "%s; counting ", flags & TDX_MMU_PERPROC ? "per goroutine" : "system");
    int k = 0;
    for (size_t i = 0; i < NINCLUDES; i++)
        if (flags & includes[i].flag) tdx_buf_printf(o, "%s%s", k++ ? ", " : "", includes[i].text);
    if (!k) tdx_buf_printf(o, "nothing as GC");
}

static int mmu_of(tdx_mmu *m, int64_t w, double *v) {
    if (!tdx_mmu_min(m, w, v)) return 0;
    fprintf(stderr, "traceidx: out of memory\n");
    return -1;
}

/* Go's plot span: the first of 1s, 1ms, 1us, 1ns whose MMU is below 0.0001 (or 1ns), and six
 * decades more, at most the functions' span. */
static int span(tdx_mmu *m, int64_t *xmin, int64_t *xmax) {
    int64_t x = 1000000000;
    while (x > 1) {
        double v;
        if (mmu_of(m, x, &v)) return -1;
        if (v < 0.0001) break;
        x /= 1000;
    }
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < tdx_mmu_nseries(m); i++) {
        size_t n;
        const tdx_mu *u = tdx_mmu_series(m, i, &n);
        if (u[0].time < lo) lo = u[0].time;
        if (u[n - 1].time > hi) hi = u[n - 1].time;
    }
    *xmin = x;
    *xmax = x * 1000000;
    if (*xmax > hi - lo) *xmax = hi - lo;
    return 0;
}

static int plot_json(tdx_buf *o, tdx_mmu *m, bool percentiles) {
    int64_t xmin, xmax;
    if (span(m, &xmin, &xmax)) return -1;
    double lmin = log((double)xmin), lmax = log((double)xmax);
    tdx_buf_printf(o, "{\"curve\":[");
    for (int i = 0; i < 100; i++) {
        /* (a span of 0 ns gives windows of 0, whose MMU is 0) */
        int64_t w = xmax > 0 ? (int64_t)exp((double)i / 99 * (lmax - lmin) + lmin) : 0;
        double v;
        if (mmu_of(m, w, &v)) return -1;
        tdx_buf_printf(o, "%s[", i ? "," : "");
        put_float(o, (double)w, TDX_FLOAT_JSON);
        for (int k = 0; k < (percentiles ? 4 : 1); k++) {
            tdx_buf_printf(o, ",");
            put_float(o, v, TDX_FLOAT_JSON);
        }
        tdx_buf_printf(o, "]");
    }
    tdx_buf_printf(o, "],\"quantiles\":%s,\"xMax\":%" PRId64 ",\"xMin\":%" PRId64 "}\n",
                   percentiles ? "[0,0.001,0.01,0.05]" : "null", xmax, xmin);
    return 0;
}

static int plot_text(tdx_buf *o, tdx_mmu *m, unsigned flags) {
    int64_t xmin, xmax;
    if (span(m, &xmin, &xmax)) return -1;
    tdx_buf_printf(o, "Minimum mutator utilization (");
    describe(o, flags);
    tdx_buf_printf(o, ")\n%-12s %s\n", "window", "MMU");
    for (int64_t p = xmin; p <= xmax && p > 0; p *= 10)
        for (int k = 0; k < 3; k++) {
            int64_t w = p * (k == 0 ? 1 : k == 1 ? 2 : 5);
            if (w > xmax) break;
            if (w == 1) continue; /* Go's is always 0: it measures a 1 ns window past the end */
            double v;
            if (mmu_of(m, w, &v)) return -1;
            char d[48];
            cli_duration(d, sizeof d, w);
            tdx_buf_printf(o, "%s%*s %.4f\n", d, (int)(12 - cli_text_width(d, strlen(d))), "", v);
        }
    return 0;
}

#define NWORST 10

static int worst(tdx_buf *o, tdx_mmu *m, tdx_index *ix, const char *path, unsigned flags,
                 int64_t window, bool json) {
    tdx_muwin w[NWORST];
    size_t n;
    if (tdx_mmu_worst(m, window, NWORST, w, &n)) {
        fprintf(stderr, "traceidx: out of memory\n");
        return -1;
    }
    if (json) {
        tdx_vrange *rs = NULL;
        size_t nr = 0;
        tdx_err err;
        tdx_err_clear(&err);
        if (n && tdx_query_ranges(ix, &rs, &nr, &err)) {
            cli_report(ix->path, &err);
            return -1;
        }
        if (!n) tdx_buf_printf(o, "null\n");
        for (size_t i = 0; i < n; i++) {
            /* Go links the first split range ending after the window's time, a trace time
             * compared with elapsed ones (or the last range; none: start=0&end=0) */
            int64_t s = 0, e = 0;
            for (size_t k = 0; k < nr; k++) {
                s = rs[k].start, e = rs[k].end;
                if (rs[k].end_time > w[i].time) break;
            }
            tdx_buf_printf(o, "%s{\"Time\":%" PRId64 ",\"MutatorUtil\":", i ? "," : "[", w[i].time);
            put_float(o, w[i].util, TDX_FLOAT_JSON);
            /* (encoding/json writes & as \u0026) */
            tdx_buf_printf(
                o, ",\"URL\":\"/trace?view=proc\\u0026start=%" PRId64 "\\u0026end=%" PRId64 "#", s,
                e);
            put_float(o, (double)w[i].time / 1e6, TDX_FLOAT_V);
            tdx_buf_printf(o, ":");
            put_float(o, (double)(w[i].time + window) / 1e6, TDX_FLOAT_V);
            tdx_buf_printf(o, "\"}%s", i + 1 == n ? "]\n" : "");
        }
        free(rs);
        return 0;
    }
    char d[48];
    cli_duration(d, sizeof d, window);
    tdx_buf_printf(o, "Lowest mutator utilization in %s windows (", d);
    describe(o, flags);
    tdx_buf_printf(o, "):\n");
    if (!n) tdx_buf_printf(o, "  none: the window is not longer than 0\n");
    int64_t t0 = ix->nblocks ? tdx_index_block_first_time(ix, 0) : 0;
    for (size_t i = 0; i < n; i++) {
        char at[48];
        cli_duration(at, sizeof at, w[i].time - t0);
        int pad = 16 - (int)cli_text_width(at, strlen(at)); /* ("µs" is one column) */
        tdx_buf_printf(o, "  %.3f at %s%*s traceidx query %s --range %" PRId64 ":+%" PRId64 "\n",
                       w[i].util, at, pad > 0 ? pad : 0, "", path, w[i].time - t0, window);
    }
    return 0;
}

int cmd_mmu(int argc, char **argv) {
    const char *path = NULL;
    bool json = false, percentiles = false, has_window = false;
    unsigned flags = TDX_MMU_STW | TDX_MMU_BACKGROUND | TDX_MMU_ASSIST;
    int64_t window = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(mmu_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--percentiles")) {
            percentiles = true;
        } else if (!strcmp(a, "--per-goroutine")) {
            flags |= TDX_MMU_PERPROC;
        } else if (!strcmp(a, "--include") || !strcmp(a, "--window")) {
            if (i + 1 >= argc) return cli_usage_error("mmu", "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--include")) {
                unsigned inc;
                if (parse_include(v, &inc))
                    return cli_usage_error("mmu",
                                           "--include takes a comma list of stw, background, "
                                           "assist, sweep: not '%s'",
                                           v);
                flags = (flags & TDX_MMU_PERPROC) | inc;
            } else {
                if (cli_parse_duration(v, &window) || window <= 0)
                    return cli_usage_error("mmu", "--window takes a duration above 0: not '%s'", v);
                has_window = true;
            }
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("mmu", "unknown option %s", a);
        } else if (!path) {
            path = a;
        } else {
            return cli_usage_error("mmu", "unexpected argument %s", a);
        }
    }
    if (!path) return cli_usage_error("mmu", "need an INDEX");
    if (percentiles && (!json || has_window))
        return cli_usage_error("mmu", "--percentiles goes with --json, without --window");
    tdx_index ix;
    if (cli_open_index(path, &ix, false)) return TDX_EXIT_FAIL;
    tdx_err err;
    tdx_err_clear(&err);
    tdx_buf o = {0};
    tdx_mmu *m = NULL;
    int rc = -1;
    uint64_t len;
    const uint8_t *p = cli_index_section(&ix, TDX_SEC_MUTIL, "mutator utilization", &len);
    if (!p) goto out;
    tdx_muread r;
    int bad = tdx_muread_init(&r, p, (size_t)len, ix.sec[TDX_SEC_MUTIL].off, &err) ||
              tdx_mmu_new(&m, &r, flags, &err);
    tdx_muread_free(&r);
    if (bad) {
        cli_report(ix.path, &err);
        goto out;
    }
    if (!m) {
        fprintf(stderr,
                "traceidx: %s: the trace never gives GOMAXPROCS: there is no utilization to "
                "measure (go tool trace fails here too)\n",
                ix.path);
        goto out;
    }
    if (has_window ? worst(&o, m, &ix, path, flags, window, json)
        : json     ? plot_json(&o, m, percentiles)
                   : plot_text(&o, m, flags))
        goto out;
    if (cli_flush_out(&o, true)) goto out;
    rc = 0;
out:
    tdx_mmu_free(m);
    tdx_vec_free(&o);
    tdx_index_close(&ix);
    return rc ? TDX_EXIT_FAIL : TDX_EXIT_OK;
}
