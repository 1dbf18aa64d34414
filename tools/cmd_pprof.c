/* cmd_pprof.c: `traceidx pprof TYPE INDEX`: go tool trace's pprof-style profiles (-pprof=TYPE and
 * the /io, /block, /syscall, /sched pages) from an index's PPROF section, as a pprof file, JSON
 * or a text table of the costliest stacks. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/quote.h"
#include "core/varint.h"
#include "index/common/atomic_file.h"
#include "index/format/format.h"
#include "index/analysis/goprof.h"
#include "index/analysis/pprofout.h"
#include "index/format/reader.h"
#include "index/analysis/regprof.h"
#include "tools/regsel.h"

static const char pprof_help[] =
    "usage: traceidx pprof TYPE INDEX [--name NAME] [-o FILE] [--json | --top N]\n"
    "       traceidx pprof TYPE INDEX [--region TYPE] [--pc PC] [--latmin DUR] [--latmax DUR]\n"
    "                                 [-o FILE] [--json | --top N] [--quiet]\n\n"
    "One of go tool trace's pprof-style profiles, as `go tool trace -pprof=TYPE` writes it: the\n"
    "time goroutines spent waiting, summed by the stack where each wait began.\n\n"
    "  net      network blocking (go tool trace's /io page): blocked with reason \"network\"\n"
    "  sync     synchronization blocking (/block): blocked on a channel, select or sync\n"
    "  syscall  syscalls (/syscall): in a system call\n"
    "  sched    scheduler latency (/sched): runnable, until it runs (the stack of what made\n"
    "           it runnable: its creator, its unblocker, or itself when preempted)\n\n"
    "  --name NAME  only the goroutines of that name (a group of `traceidx goroutines`), as\n"
    "               go tool trace's goroutine page links them (/block?name=NAME...; '' is all\n"
    "               of them, as in Go)\n"
    "  --region TYPE, --pc PC, --latmin DUR, --latmax DUR\n"
    "               only the waits within the regions these select, as `regions --type`\n"
    "               lists them (go tool trace's /regionio, /regionblock, /regionsyscall and\n"
    "               /regionsched pages, which /userregion links to): a wait counts its\n"
    "               overlap with its goroutine's selected regions (nested ones left out, as in\n"
    "               Go). This reads every event of the index twice (seconds for a large trace)\n"
    "  --quiet      no progress on stderr for --region's passes\n"
    "  -o FILE      write to FILE (replaced whole, never left half-written) instead of stdout\n"
    "  --json       the stacks as JSON, the costliest first: each with its count of waits,\n"
    "               their total in ns, and its frames, innermost first\n"
    "  --top N      the N costliest stacks as text\n\n"
    "Without --json or --top the output is a profile for the pprof tools (profile.proto,\n"
    "uncompressed; `go tool pprof FILE` reads it as it reads gzipped ones): sample types\n"
    "contentions/count and delay/nanoseconds, one sample per stack. It is not written to a\n"
    "terminal.\n\n"
    "INDEX may be the trace itself: its TRACE.tidx is used after checking it matches. The\n"
    "profiles are computed when the index is built, as Go computes them: a wait counts from the\n"
    "transition into the state to the one out of it, within the goroutine's life from its first\n"
    "run (so a new goroutine's wait to be first scheduled counts nothing, as in Go); stacks\n"
    "with the same first 128 PCs are one, and a profile's stacks are cut at 128 frames. Where\n"
    "Go's order is a map's, the stacks go by total delay, the largest first.\n";

static int by_delay(const void *a, const void *b) {
    const tdx_goprof_rec *x = a, *y = b;
    if (x->ns != y->ns) return x->ns > y->ns ? -1 : 1;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Frame i of a stack, innermost first, up to Go's 128 (NULL past them). */
static const tdx_frame *frame_at(const tdx_gen *t, uint32_t stack, uint32_t i) {
    if (!stack || stack >= t->stacks.n) return NULL;
    const tdx_stack *st = &t->stacks.v[stack];
    if (i >= st->nframes || i >= TDX_PPROF_MAX_FRAMES) return NULL;
    return &t->frames.v[t->stack_frames.v[st->first + i]];
}

static void put_str(tdx_buf *o, const char *s) {
    tdx_buf_append(o, s, strlen(s));
}

/* Output to stdout goes as it is made; to a file, it is written whole at the end. */
static int flush(tdx_buf *o, bool stream) {
    return stream ? cli_flush_out(o, false) : 0;
}

/* A profile's stacks, the costliest first, and its totals. */
typedef struct prof {
    int which;
    const tdx_goprof_rec *r;
    size_t n;
    uint64_t count;
    int64_t ns;         /* (summed as Go sums it, wrapping) */
    const tdx_buf *sel; /* --region's selection in Go's words, or NULL */
    int64_t nregions;   /* the regions it selected */
} prof;

static int show_json(tdx_buf *o, bool stream, const tdx_gen *t, const prof *pf) {
    const tdx_goprof_rec *r = pf->r;
    size_t n = pf->n;
    uint64_t count = pf->count;
    int64_t ns = pf->ns;
    int which = pf->which;
    char b[160];
    snprintf(b, sizeof b,
             "{\"profile\":\"%s\",\"count\":%" PRIu64 ",\"delay_ns\":%" PRId64 ",\"stacks\":[",
             tdx_goprof_name(which), count, ns);
    put_str(o, b);
    for (size_t i = 0; i < n; i++) {
        snprintf(b, sizeof b, "%s\n{\"count\":%" PRIu64 ",\"delay_ns\":%" PRId64 ",\"frames\":[",
                 i ? "," : "", r[i].count, r[i].ns);
        put_str(o, b);
        const tdx_frame *f;
        for (uint32_t k = 0; (f = frame_at(t, r[i].stack, k)) != NULL; k++) {
            tdx_str fn = tdx_gen_str(t, f->func), file = tdx_gen_str(t, f->file);
            put_str(o, k ? ",{\"func\":" : "{\"func\":");
            tdx_json_quote(o, fn.p, fn.n);
            put_str(o, ",\"file\":");
            tdx_json_quote(o, file.p, file.n);
            snprintf(b, sizeof b, ",\"line\":%" PRIu64 ",\"pc\":\"0x%" PRIx64 "\"}", f->line,
                     f->pc);
            put_str(o, b);
        }
        put_str(o, "]}");
        if (flush(o, stream)) return -1;
    }
    put_str(o, "\n]}\n");
    return 0;
}

static const char *const titles[TDX_PROF_COUNT] = {"network blocking", "synchronization blocking",
                                                   "syscalls", "scheduler latency"};

static int show_top(tdx_buf *o, bool stream, const tdx_gen *t, const prof *pf, uint64_t top) {
    const tdx_goprof_rec *r = pf->r;
    size_t n = pf->n;
    uint64_t count = pf->count;
    int64_t ns = pf->ns;
    int which = pf->which;
    char b[256], d[64];
    cli_duration(d, sizeof d, ns);
    snprintf(b, sizeof b, "%s (%s)", titles[which], tdx_goprof_name(which));
    put_str(o, b);
    if (pf->sel) {
        snprintf(b, sizeof b, " within %" PRId64 " region%s ", pf->nregions,
                 pf->nregions == 1 ? "" : "s");
        put_str(o, b);
        tdx_buf_append(o, pf->sel->v, pf->sel->n);
    }
    snprintf(b, sizeof b, ": %" PRIu64 " wait%s, %s in all, over %zu stack%s\n", count,
             count == 1 ? "" : "s", d, n, n == 1 ? "" : "s");
    put_str(o, b);
    for (size_t i = 0; i < n && i < top; i++) {
        cli_duration(d, sizeof d, r[i].ns);
        double pct = ns > 0 ? 100.0 * (double)r[i].ns / (double)ns : 0;
        snprintf(b, sizeof b, "\n#%zu  %s  %.1f%%  %" PRIu64 " wait%s\n", i + 1, d, pct, r[i].count,
                 r[i].count == 1 ? "" : "s");
        put_str(o, b);
        const tdx_frame *f = frame_at(t, r[i].stack, 0);
        if (!f) put_str(o, "    (no stack)\n");
        for (uint32_t k = 0; (f = frame_at(t, r[i].stack, k)) != NULL; k++) {
            tdx_str fn = tdx_gen_str(t, f->func), file = tdx_gen_str(t, f->file);
            put_str(o, "    ");
            tdx_buf_append(o, fn.p, fn.n);
            put_str(o, "\n        ");
            tdx_buf_append(o, file.p, file.n);
            snprintf(b, sizeof b, ":%" PRIu64 "\n", f->line);
            put_str(o, b);
        }
        if (flush(o, stream)) return -1;
    }
    if (n > top) {
        snprintf(b, sizeof b, "\n(%zu more stacks: --top %zu shows them all)\n", n - (size_t)top,
                 n);
        put_str(o, b);
    }
    return 0;
}

/* ---- a region profile (/regionio, ...) ---- */

typedef struct regfeed {
    tdx_regprof *rp;
    uint64_t n;
    tdx_err err;
} regfeed;

static int add_region(void *ctx, const tdx_gostat_region *r, tdx_err *err) {
    regfeed *f = ctx;
    f->n++;
    return tdx_regprof_region(f->rp, r->goroutine, r->start, r->end, err);
}

static int feed_wait(void *ctx, const tdx_event *e, const tdx_gen *g) {
    regfeed *f = ctx;
    return tdx_regprof_event(f->rp, e, g, &f->err);
}

/* Profile `which` within the selected regions: one pass finds them, a second measures the
 * waits. The count of regions selected, or -1 once reported. */
static int64_t region_profile(tdx_index *ix, const cli_regsel *sel, int which, bool quiet,
                              tdx_goprof_recs *recs) {
    char beside[4096];
    cli_scratch_beside(beside, sizeof beside);
    regfeed f = {tdx_regprof_new(which, beside, 16u << 20), 0, {0}};
    tdx_gostats *gs = NULL;
    tdx_err err = {0};
    int64_t rc = -1;
    if (!f.rp) {
        fprintf(stderr, "traceidx: out of memory\n");
        return -1;
    }
    if (cli_regsel_pass(ix, sel, quiet, add_region, &f, &gs)) goto out;
    if (tdx_regprof_seal(f.rp, &err)) {
        cli_report(ix->path, &err);
        goto out;
    }
    cli_progress prog;
    cli_progress_init(&prog, "pprof", quiet);
    int got = cli_index_events(ix, feed_wait, &f, &prog, &err);
    cli_progress_end(&prog);
    if (got) {
        cli_report(ix->path, got < 0 ? &err : &f.err); /* (1: the profile's own error) */
        goto out;
    }
    if (tdx_regprof_records(f.rp, &ix->tabs, recs, &err)) {
        cli_report(ix->path, &err);
        goto out;
    }
    rc = (int64_t)f.n;
out:
    tdx_gostats_free(gs);
    tdx_regprof_free(f.rp);
    return rc;
}

int cmd_pprof(int argc, char **argv) {
    const char *type = NULL, *path = NULL, *out = NULL, *name = NULL;
    bool json = false, has_top = false, quiet = false;
    uint64_t top = 0;
    cli_regsel sel;
    cli_regsel_init(&sel);
    for (int i = 1; i < argc; i++) {
        int took = cli_regsel_arg(&sel, "pprof", "--region", argc, argv, &i);
        if (took > 1) return took - 1;
        if (took) continue;
        if (cli_is_help(argv[i])) {
            fputs(pprof_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(argv[i], "--name")) {
            if (i + 1 >= argc) return cli_usage_error("pprof", "--name needs a value");
            name = argv[++i];
        } else if (!strcmp(argv[i], "-o")) {
            if (i + 1 >= argc) return cli_usage_error("pprof", "-o needs a file");
            out = argv[++i];
        } else if (!strcmp(argv[i], "--top")) {
            if (i + 1 >= argc || cli_parse_u64(argv[i + 1], &top) || top == 0)
                return cli_usage_error("pprof", "--top needs a count of 1 or more");
            has_top = true;
            i++;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("pprof", "unknown option %s", argv[i]);
        } else if (!type) {
            type = argv[i];
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("pprof", "unexpected argument %s", argv[i]);
        }
    }
    if (!type || !path)
        return cli_usage_error("pprof", "need a TYPE (net, sync, syscall, sched) and an INDEX");
    int which = tdx_goprof_parse(type);
    if (which < 0)
        return cli_usage_error("pprof", "unknown profile \"%s\": net, sync, syscall or sched",
                               type);
    if (json && has_top)
        return cli_usage_error("pprof", "--json and --top are two outputs: pick one");
    bool regions = cli_regsel_any(&sel);
    if (regions && name)
        return cli_usage_error("pprof", "--name selects goroutines, --region and its bounds "
                                        "regions: pick one");
    bool to_file = out && strcmp(out, "-") != 0;
    if (!to_file && !json && !has_top && isatty(STDOUT_FILENO))
        return cli_usage_error("pprof", "a pprof file is not for a terminal: give -o FILE, or "
                                        "--top N for a table");
    if (to_file && cli_refuse_own_input(out, path)) return TDX_EXIT_FAIL;
    tdx_index ix;
    if (cli_open_index(path, &ix, false)) return TDX_EXIT_FAIL;
    if (to_file && cli_refuse_own_input(out, ix.path)) {
        tdx_index_close(&ix);
        return TDX_EXIT_FAIL;
    }
    tdx_err err;
    tdx_err_clear(&err);
    tdx_goprof_recs recs = {0};
    tdx_buf o = {0}, selname = {0};
    int rc = -1;
    uint64_t len;
    bool named = true;
    int64_t nregions = 0;
    if (regions) {
        nregions = region_profile(&ix, &sel, which, quiet, &recs);
        if (nregions < 0) goto out;
        cli_regsel_name(&sel, &selname);
        if (nregions == 0)
            fprintf(stderr, "traceidx: %s: no region is selected; the profile is empty\n", ix.path);
    } else {
        const uint8_t *p = cli_index_section(&ix, TDX_SEC_PPROF, "profiles", &len);
        if (!p) goto out;
        tdx_str want = {(const uint8_t *)(name ? name : ""), name ? (uint32_t)strlen(name) : 0};
        if (tdx_goprof_read(p, (size_t)len, ix.sec[TDX_SEC_PPROF].off, &ix.tabs, which, &want,
                            &recs, &named, &err))
            goto report;
    }
    if (!named)
        fprintf(stderr,
                "traceidx: %s: no goroutine named \"%s\" waited (`traceidx goroutines %s` lists "
                "the names); the profile is empty\n",
                ix.path, name, path);
    if (recs.n > 1) qsort(recs.v, recs.n, sizeof *recs.v, by_delay);
    prof pf = {which, recs.v, recs.n, 0, 0, regions ? &selname : NULL, nregions};
    for (size_t i = 0; i < recs.n; i++)
        pf.count += recs.v[i].count, pf.ns = tdx_wadd(pf.ns, recs.v[i].ns);
    int got = 0;
    if (json) {
        got = show_json(&o, !to_file, &ix.tabs, &pf);
    } else if (has_top) {
        got = show_top(&o, !to_file, &ix.tabs, &pf, top);
    } else if (tdx_pprof_write(&o, &ix.tabs, recs.v, recs.n)) {
        tdx_errf(&err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        goto report;
    }
    if (got) goto out; /* (stdout refused it: said) */
    if (tdx_index_strings_ok(&ix, &err)) goto report;
    if (to_file) {
        if (tdx_write_file_atomic(out, o.v, o.n, &err)) {
            cli_report(out, &err);
            goto out;
        }
    } else if (cli_flush_out(&o, true)) {
        goto out;
    }
    rc = 0;
    goto out;
report:
    cli_report(ix.path, &err);
out:
    tdx_vec_free(&recs);
    tdx_vec_free(&o);
    tdx_vec_free(&selname);
    tdx_index_close(&ix);
    return rc ? TDX_EXIT_FAIL : TDX_EXIT_OK;
}
