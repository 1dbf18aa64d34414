/* cmd_regions.c: `traceidx regions`: go tool trace's user region page (/userregions) from an
 * index's REGIONS section: regions by type and where they began, with their durations. */
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "core/quote.h"
#include "index/format.h"
#include "index/reader.h"
#include "index/regstats.h"

static const char regions_help[] =
    "usage: traceidx regions INDEX [--json]\n\n"
    "The user regions of a trace (runtime/trace.WithRegion, StartRegion), as go tool trace's\n"
    "\"User-defined regions\" page shows them (/userregions): grouped by type and by the\n"
    "outermost frame of the stack each began with, each group with its count and a histogram\n"
    "of the regions' durations, five buckets a decade.\n\n"
    "  --json  the same as JSON (durations in ns)\n\n"
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

int cmd_regions(int argc, char **argv) {
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(regions_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("regions", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("regions", "unexpected argument %s", argv[i]);
        }
    }
    if (!path) return cli_usage_error("regions", "need an INDEX");
    tdx_index ix;
    if (cli_open_index(path, &ix, false)) return TDX_EXIT_FAIL;
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
