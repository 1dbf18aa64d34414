/* cmd_viewjson.c: `traceidx viewjson`, a developer command that runs the viewer generator
 * directly over a trace (no index) and prints cmd/trace's /jsontrace bytes or its split ranges. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/reader.h"
#include "index/views/jsonout.h"
#include "index/analysis/summary.h"
#include "index/views/viewgen.h"

static const char viewjson_help[] =
    "usage: traceidx viewjson [options] TRACE\n\n"
    "Prints the trace-viewer JSON that `go tool trace` serves at /jsontrace for TRACE, computed\n"
    "directly from the trace (two passes: Go's summary, then the generator), with no index: the\n"
    "reference `traceidx query` is tested against.\n\n"
    "  --view thread    OS-thread-oriented view (also \"threads\"; default: proc-oriented)\n"
    "  --goroutine G    goroutine-oriented view of G (/jsontrace?goid=G)\n"
    "  --focustask T    task T and its subtasks in the proc or thread view (?focustask=T)\n"
    "  --taskid T       goroutine-oriented view of task T with its regions (?taskid=T)\n"
    "  --start S --end E  only the optional events with output index S..E (both inclusive)\n"
    "  --window A:B     traceidx's time window (elapsed ns, inclusive): overlapping slices and\n"
    "                   the counters' values as of A (the reference for `query --range`)\n"
    "  --ranges         print the ranges cmd/trace splits the output into (100 MiB each) as\n"
    "                   JSON, instead of the document (cmd/trace computes them for the default\n"
    "                   proc view)\n"
    "  --ranges-recorded  the same, computed by recording every event and splitting at the end\n"
    "                   (the online default needs the metadata size up front; self-test)\n"
    "  --checkpoint-every N  self-test: every N events, save the generator state, restore it\n"
    "                   into a fresh generator and continue with that one (output must not\n"
    "                   change)\n"
    "  -j N             worker threads for reading (default: number of CPUs)\n"
    "  --quiet          no progress on stderr (shown when it is a terminal and the output is\n"
    "                   not)\n\n"
    "Like cmd/trace, a query naming an unknown goroutine or task prints nothing (the reason goes\n"
    "to stderr, exit status 1). A damaged trace is shown up to its last complete generation.\n";

typedef struct pass1 {
    tdx_summary *sum;
} pass1;

static int sum_event(void *ctx, const tdx_event *e, const tdx_gen *g) {
    pass1 *p = ctx;
    return tdx_summary_event(p->sum, e, g);
}

typedef struct pass2 {
    tdx_viewgen *vg;
    uint64_t n, limit;
    /* checkpoint self-test */
    uint64_t every;
    const tdx_viewgen_opts *opts;
    tdx_vgstore *store;
    const tdx_vgframes *frames;
    tdx_vev_fn sink;
    void *sink_ctx;
    uint64_t checkpoints, bytes;
    bool counters_due; /* --window: counters as of its start, before the first event there */
    int64_t counters_at, t0;
    tdx_rans_enc enc; /* reused by every checkpoint's second save, as the build reuses its own */
} pass2;

/* Replaces p->vg by a fresh generator restored from its checkpoint, and checks that the restored
 * state saves to the same bytes (with the encoder kept from the last checkpoint: what was left
 * in it must not show). */
static int checkpoint_cycle(pass2 *p) {
    tdx_buf a = {0}, b = {0};
    tdx_err err;
    int rc = -1;
    tdx_viewgen *nv = tdx_viewgen_new(p->opts, p->store, p->frames, p->sink, p->sink_ctx);
    if (!nv || tdx_viewgen_save(p->vg, &a)) goto out;
    if (tdx_viewgen_restore(nv, a.v, a.n, &err)) {
        fprintf(stderr, "traceidx: checkpoint restore failed: %s\n", err.msg);
        goto out;
    }
    if (tdx_viewgen_save_pruned(nv, &b, NULL, NULL, &p->enc) || a.n != b.n ||
        memcmp(a.v, b.v, a.n) != 0) {
        fprintf(stderr, "traceidx: checkpoint not reproducible after %" PRIu64 " events\n", p->n);
        goto out;
    }
    p->checkpoints++;
    p->bytes += a.n;
    tdx_viewgen_free(p->vg);
    p->vg = nv;
    nv = NULL;
    rc = 0;
out:
    tdx_viewgen_free(nv);
    tdx_vec_free(&a);
    tdx_vec_free(&b);
    return rc;
}

static int gen_event(void *ctx, const tdx_event *e, const tdx_gen *g) {
    pass2 *p = ctx;
    if (p->n >= p->limit) return 0; /* after the last Sync of a damaged trace */
    if (p->every && p->n && p->n % p->every == 0 && checkpoint_cycle(p)) return -1;
    if (p->counters_due && e->time - p->t0 >= p->counters_at) {
        tdx_viewgen_emit_counters(p->vg, p->counters_at);
        p->counters_due = false;
    }
    p->n++;
    return tdx_viewgen_event(p->vg, e, g);
}

static int write_stdout(void *ctx, const void *p, size_t n) {
    (void)ctx;
    return fwrite(p, 1, n, stdout) == n ? 0 : -1;
}

int cmd_viewjson(int argc, char **argv) {
    const char *path = NULL;
    tdx_viewquery q;
    memset(&q, 0, sizeof q);
    int jobs = tdx_ncpus(), jr;
    bool ranges = false, record = false, quiet = false, has_start = false, has_end = false;
    int64_t start = 0, end = INT64_MAX;
    bool has_window = false;
    int64_t wa = 0, wb = 0;
    uint64_t every = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (cli_is_help(a)) {
            fputs(viewjson_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(a, "--view")) {
            if (!more) return cli_usage_error("viewjson", "--view needs a value");
            /* like cmd/trace: "thread" selects the thread view, anything else is ignored; and
             * query's spelling, "threads" */
            ++i;
            q.thread = !strcmp(argv[i], "thread") || !strcmp(argv[i], "threads");
        } else if (!strcmp(a, "--goroutine") || !strcmp(a, "--focustask") ||
                   !strcmp(a, "--taskid")) {
            uint64_t v;
            if (!more || cli_parse_u64(argv[i + 1], &v))
                return cli_usage_error("viewjson", "%s needs an unsigned decimal id", a);
            i++;
            if (!strcmp(a, "--goroutine"))
                q.has_goid = true, q.goid = v;
            else if (!strcmp(a, "--focustask"))
                q.has_focustask = true, q.focustask = v;
            else
                q.has_taskid = true, q.taskid = v;
        } else if (!strcmp(a, "--start") || !strcmp(a, "--end")) {
            int64_t v;
            if (!more || cli_parse_i64(argv[i + 1], &v))
                return cli_usage_error("viewjson", "%s needs a decimal event index", a);
            i++;
            if (a[2] == 's')
                has_start = true, start = v;
            else
                has_end = true, end = v;
        } else if (!strcmp(a, "--checkpoint-every")) {
            if (!more || cli_parse_u64(argv[++i], &every) || every == 0)
                return cli_usage_error("viewjson", "--checkpoint-every needs a positive count");
        } else if (!strcmp(a, "--window")) {
            char *colon = more ? strchr(argv[i + 1], ':') : NULL;
            if (!colon) return cli_usage_error("viewjson", "--window needs A:B (elapsed ns)");
            *colon = 0;
            if (cli_parse_i64(argv[i + 1], &wa) || cli_parse_i64(colon + 1, &wb))
                return cli_usage_error("viewjson", "--window needs A:B (elapsed ns)");
            i++;
            has_window = true;
        } else if (!strcmp(a, "--ranges")) {
            ranges = true;
        } else if (!strcmp(a, "--ranges-recorded")) {
            ranges = record = true;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if ((jr = cli_jobs_arg(argc, argv, &i, &jobs)) != 0) {
            if (jr < 0) return cli_usage_error("viewjson", "-j needs a number from 1 to 1024");
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("viewjson", "unknown option %s", a);
        } else if (!path) {
            path = a;
        } else {
            return cli_usage_error("viewjson", "unexpected argument %s", a);
        }
    }
    if (!path) return cli_usage_error("viewjson", "need a TRACE");
    quiet = quiet || isatty(STDOUT_FILENO); /* not among the JSON on a terminal */
    if (has_start != has_end) return cli_usage_error("viewjson", "--start and --end go together");
    /* cmd/trace takes the first of goid, focustask, taskid that is present */
    if (q.has_goid) q.has_focustask = q.has_taskid = false;
    if (q.has_focustask) q.has_taskid = false;

    tdx_source src;
    if (cli_open_trace(path, &src)) return TDX_EXIT_FAIL;
    int exit_code = TDX_EXIT_FAIL;
    tdx_vgstore store;
    tdx_summary sum;
    tdx_vgtree tree;
    tdx_viewgen *vg = NULL;
    tdx_viewgen_resolved res;
    memset(&res, 0, sizeof res);
    tdx_jsonw w;
    tdx_jsplit sp;
    bool w_init = false, sp_init = false;
    tdx_err err;
    tdx_err_clear(&err);
    if (tdx_vgstore_init(&store)) {
        fprintf(stderr, "traceidx: out of memory\n");
        tdx_source_close(&src);
        return TDX_EXIT_FAIL;
    }
    tdx_summary_init(&sum, &store);
    tdx_vgtree_init(&tree, &store);

    /* Pass 1: the summary over everything the parser delivers. */
    cli_progress prog;
    cli_progress_init(&prog, "viewjson (summary)", quiet);
    pass1 p1 = {&sum};
    tdx_read_opts o1 = {.jobs = jobs,
                        .emit = sum_event,
                        .emit_ctx = &p1,
                        .progress = cli_progress_update,
                        .progress_ctx = &prog};
    tdx_read_stats st;
    int rc = tdx_read_trace(src.data, src.size, src.version, &o1, &st, &err);
    cli_progress_end(&prog);
    if (sum.oom || store.oom) {
        fprintf(stderr, "traceidx: out of memory\n");
        goto out;
    }
    if (rc) {
        if (sum.valid_events == 0) {
            fprintf(stderr, "traceidx: %s: failed to parse any useful part of the trace: %s\n",
                    path, err.msg);
            goto out;
        }
        fprintf(stderr,
                "traceidx: %s: %s (showing the events up to the last complete "
                "generation)\n",
                path, err.msg);
    }
    if (tdx_viewgen_resolve(&q, &sum, sum.t0, sum.valid_end, sum.valid_events, &res, &err)) {
        fprintf(stderr, "traceidx: %s: %s\n", path, err.msg);
        goto out;
    }
    res.opts.tend = sum.valid_end;
    if (has_window) {
        if (wa > res.opts.wstart) res.opts.wstart = wa;
        if (wb < res.opts.wend) res.opts.wend = wb;
        res.opts.overlap = true;
    }
    tdx_vgframes frames = tdx_vgtree_frames(&tree);
    if (ranges) {
        /* The default proc view's metadata is known from the summary (its largest proc id), so
         * the ranges are cut online; other views record every event and cut at the end. */
        bool dflt = !q.thread && !q.has_goid && !q.has_focustask && !q.has_taskid;
        uint64_t nmeta, meta_bytes;
        if (dflt && !record &&
            tdx_viewgen_proc_meta_size(sum.valid_max_proc, &nmeta, &meta_bytes) == 0)
            tdx_jsplit_init_online(&sp, &frames, TDX_SPLIT_MAX,
                                   tdx_jsplit_required_size(nmeta, meta_bytes));
        else
            tdx_jsplit_init(&sp, &frames, TDX_SPLIT_MAX);
        sp_init = true;
        vg = tdx_viewgen_new(&res.opts, &store, &frames, tdx_jsplit_event, &sp);
    } else {
        static char obuf[1 << 16];
        setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
        if (tdx_jsonw_init(&w, write_stdout, NULL, &frames, start, end)) goto write_failed;
        w_init = true;
        vg = tdx_viewgen_new(&res.opts, &store, &frames, tdx_jsonw_event, &w);
    }
    if (!vg) {
        fprintf(stderr, "traceidx: out of memory\n");
        goto out;
    }

    /* Pass 2: the generator over the events cmd/trace keeps. */
    cli_progress_init(&prog, "viewjson", quiet);
    pass2 p2 = {vg,
                0,
                sum.valid_events,
                every,
                &res.opts,
                &store,
                &frames,
                ranges ? tdx_jsplit_event : tdx_jsonw_event,
                ranges ? (void *)&sp : (void *)&w,
                0,
                0,
                has_window && res.opts.wstart <= res.opts.wend,
                res.opts.wstart,
                sum.t0,
                {0}};
    tdx_read_opts o2 = {.jobs = jobs,
                        .emit = gen_event,
                        .emit_ctx = &p2,
                        .progress = cli_progress_update,
                        .progress_ctx = &prog};
    tdx_err err2;
    /* Judged by p2.n below: the read may fail past the valid part that pass 1 found. */
    (void)tdx_read_trace(src.data, src.size, src.version, &o2, &st, &err2);
    tdx_rans_enc_free(&p2.enc);
    cli_progress_end(&prog);
    vg = p2.vg;
    if (p2.counters_due) tdx_viewgen_emit_counters(vg, p2.counters_at);
    if (p2.n < sum.valid_events || tdx_viewgen_finish(vg)) {
        if (w_init && w.err) goto write_failed;
        fprintf(stderr, "traceidx: %s: generation failed%s%s\n", path,
                p2.n < sum.valid_events ? ": " : "", p2.n < sum.valid_events ? err2.msg : "");
        goto out;
    }
    if (tree.oom || store.oom) {
        fprintf(stderr, "traceidx: out of memory\n");
        goto out;
    }
    if (ranges) {
        tdx_vrange *rs;
        size_t nr;
        tdx_buf b = {0};
        if (tdx_jsplit_finish(&sp, &rs, &nr) || tdx_vranges_json(&b, rs, nr)) {
            free(rs);
            tdx_vec_free(&b);
            fprintf(stderr, "traceidx: out of memory\n");
            goto out;
        }
        free(rs);
        bool ok = fwrite(b.v, 1, b.n, stdout) == b.n;
        tdx_vec_free(&b);
        if (!ok || fflush(stdout)) goto write_failed;
    } else {
        if (tdx_jsonw_finish(&w) || fflush(stdout)) goto write_failed;
    }
    tdx_viewgen_counters cnt = tdx_viewgen_counters_get(vg);
    if (cnt.broken)
        fprintf(stderr,
                "traceidx: %s: warning: %" PRIu64 " goroutine stop%s broke an invariant "
                "of Go's generator (go tool trace would fail here); drawn as far as "
                "the state allows\n",
                path, cnt.broken, cnt.broken == 1 ? "" : "s");
    if (every)
        fprintf(stderr, "traceidx: %" PRIu64 " checkpoints restored, %.1f KB each on average\n",
                p2.checkpoints,
                p2.checkpoints ? (double)p2.bytes / 1024.0 / (double)p2.checkpoints : 0.0);
    exit_code = TDX_EXIT_OK;
    goto out;
write_failed:
    fprintf(stderr, "traceidx: write failed: %s\n", strerror(errno));
out:
    tdx_viewgen_free(vg);
    tdx_viewgen_resolved_free(&res);
    if (w_init) tdx_jsonw_free(&w);
    if (sp_init) tdx_jsplit_free(&sp);
    tdx_vgtree_free(&tree);
    tdx_summary_free(&sum);
    tdx_vgstore_free(&store);
    tdx_source_close(&src);
    return exit_code;
}
