/* cmd_build.c: `traceidx build` and `traceidx info`. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/cputime.h"
#include "core/prefetch.h"
#include "core/quote.h"
#include "core/reader.h"
#include "core/regfile.h"
#include "index/views/query.h"
#include "index/format/reader.h"
#include "index/analysis/sumindex.h"
#include "index/build/verify.h"
#include "index/build/viewbuild.h"
#include "index/build/writer.h"

static const char build_help[] =
    "usage: traceidx build TRACE [-o OUT] [-j N] [--quiet] [--verbose] [--partial]\n"
    "                     [--checkpoint-every N] [--sort-budget BYTES] [--string-budget BYTES]\n\n"
    "Reads TRACE once (ordering and validating it exactly as Go's parser does) and writes a\n"
    "compact, checksummed index to OUT (default: TRACE.tidx), atomically: a temporary file beside\n"
    "OUT is synced and renamed over it only when complete. OUT is never overwritten unless it is\n"
    "an index. The index is byte-identical for every -j.\n\n"
    "  -j N       threads (default: number of CPUs): with 2 or more, events are encoded beside\n"
    "             the ordering, and the views' four workers (the proc view; the thread and\n"
    "             goroutine views; Go's summary; its goroutine statistics) share up to 4\n"
    "             threads\n"
    "  --quiet    no progress on stderr (on a terminal, a line per step: 1/3 events ordered\n"
    "             and encoded, 2/3 views, 3/3 summary and the file's last sections; each\n"
    "             with its own ETA)\n"
    "  --verbose  say how the trace was read, what the views stored and where the CPU went:\n"
    "             each thread's, and the critical path (the longest chain of work that\n"
    "             cannot overlap: total CPU over it bounds the speed-up on any number of cores)\n"
    "  --partial  index a damaged trace (one cut short by a crash, say) as go tool trace shows\n"
    "             it: the views and split ranges end at the last complete generation, and the\n"
    "             error is reported as a warning (exit 0). Without it a damaged trace is an\n"
    "             error. `info` tells such an index by its \"partial\" line\n"
    "  --checkpoint-every N  events between the viewer checkpoints queries start from, in\n"
    "             every view (default 32768 in the proc view, 131072 in the thread and\n"
    "             goroutine views, or 4 per goroutine that exists when that is more:\n"
    "             smaller = faster small windows, larger index)\n"
    "  --sort-budget BYTES  memory for each of the external sorts of the views' phase (Go's\n"
    "             summary: goroutines, unblockings, parents, and task parts and regions with\n"
    "             half each; the goroutine view's lane names); beyond it they spill to scratch\n"
    "             files beside OUT (default: a 256th of the trace, 1-4 MiB; the index is\n"
    "             the same for any)\n"
    "  --string-budget BYTES  memory for looking up the trace's strings while its events are\n"
    "             read (log messages make a trace's strings grow with it); beyond it the\n"
    "             strings seen go to a sorted scratch file beside OUT, behind a filter\n"
    "             (default: a 20th of the trace, 4-128 MiB; the index is the same for any)\n"
    "  BYTES is a count with an optional suffix k, M or G (powers of 1024): 65536, 64k, 4MiB\n";

/* Refuses to replace something that is not an index (or a path we cannot inspect). */
static int check_target(const char *out) {
    uint8_t magic[8] = {0};
    ssize_t n = tdx_read_head(out, magic, sizeof magic);
    if (n == -ENOENT) return 0;
    if (n < 0) {
        fprintf(stderr, "traceidx: %s: cannot inspect the output path: %s\n", out,
                strerror((int)-n));
        return -1;
    }
    if (n == 8 && tdx_is_index(magic, 8)) return 0;
    fprintf(stderr,
            "traceidx: %s: exists and is not a traceidx index; refusing to overwrite it "
            "(remove it or choose another -o)\n",
            out);
    return -1;
}

/* The build's three steps each have a progress line of their own, so that an ETA is never read
 * as the whole build's. */
#define STEP_EVENTS "build 1/3 events"
#define STEP_VIEWS "build 2/3 views"
#define STEP_TAIL "build 3/3 summary"

/* Phase 2 reports events; the progress line speaks in trace bytes, so scale. */
typedef struct views_progress {
    cli_progress *p;
    uint64_t trace_size;
    bool quiet;
    bool tail; /* the last step has begun */
} views_progress;

static void views_progress_update(void *ctx, uint64_t done, uint64_t total, uint64_t events) {
    views_progress *vp = ctx;
    uint64_t bytes = total ? (uint64_t)((double)done / (double)total * (double)vp->trace_size) : 0;
    cli_progress_update(vp->p, bytes, vp->trace_size, events);
}

/* Where the build's CPU went (--verbose): each thread's, and per step the whole and the longest
 * chain of work in it that cannot overlap (docs/architecture.md, "Build speed"). The steps run
 * one after another, so the critical path is the sum of their chains; total CPU over it is the
 * most that any number of cores could speed this design up by. */
static double sec(int64_t ns) {
    return (double)ns / 1e9;
}

static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

static void report_cpu(int64_t main_events, int64_t main_all, const tdx_iwriter_cpu *ic,
                       const tdx_viewbuild_stats *vs) {
    int64_t views_threads = 0;
    for (int i = 1; i < TDX_VIEWBUILD_WORKERS; i++) views_threads += vs->cpu_threads_ns[i];
    int64_t total = main_all + ic->enc_thread_ns + views_threads + vs->cpu_coder_thread_ns;
    struct rusage ru;
    double proc = getrusage(RUSAGE_SELF, &ru)
                      ? 0.0
                      : (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    fprintf(stderr, "traceidx: CPU by thread: main %.2f s", sec(main_all));
    if (ic->enc_thread_ns) fprintf(stderr, ", encoder %.2f s", sec(ic->enc_thread_ns));
    for (int i = 1; i < TDX_VIEWBUILD_WORKERS; i++)
        if (vs->cpu_threads_ns[i])
            fprintf(stderr, ", views #%d %.2f s", i, sec(vs->cpu_threads_ns[i]));
    if (vs->cpu_coder_thread_ns)
        fprintf(stderr, ", summary coder %.2f s", sec(vs->cpu_coder_thread_ns));
    fprintf(stderr, "; total %.2f s (process %.2f s)\n", sec(total), proc);
    /* events: ordering, global ids and filling blocks is one chain; accounting for and writing
     * the blocks in order another (the encoder thread's); coding a block can go anywhere */
    int64_t ev = main_events + ic->enc_thread_ns;
    int64_t ev_fill = main_events - ic->code_ns - ic->put_ns;
    int64_t ev_put = ic->put_ns + ic->enc_thread_ns - ic->enc_code_ns;
    int64_t ev_chain = max64(ev_fill, ev_put);
    /* views: each worker's generators are a chain; decoding a block can go anywhere */
    int64_t vw = vs->cpu_decode_ns, vw_chain = 0;
    for (int i = 0; i < TDX_VIEWBUILD_WORKERS; i++) {
        vw += vs->cpu_worker_ns[i];
        vw_chain = max64(vw_chain, vs->cpu_worker_ns[i]);
    }
    /* tail: the merge and the sections on the calling thread, the summary's coder beside it */
    int64_t tl = vs->cpu_tail_ns + vs->cpu_coder_thread_ns;
    int64_t tl_coder = vs->cpu_coder_thread_ns ? vs->cpu_coder_thread_ns : vs->cpu_coder_ns;
    int64_t tl_chain =
        max64(vs->cpu_tail_ns - (vs->cpu_coder_thread_ns ? 0 : vs->cpu_coder_ns), tl_coder);
    /* the rest, one after another on the calling thread: sealing the tables, the views' store,
     * the string table packed, the file synced */
    int64_t rest = max64(total - ev - vw - tl, 0);
    int64_t crit = ev_chain + vw_chain + tl_chain + rest;
    fprintf(stderr,
            "traceidx: CPU by step, all / longest chain: events %.2f/%.2f s, views %.2f/%.2f s, "
            "summary tail %.2f/%.2f s, rest %.2f/%.2f s\n",
            sec(ev), sec(ev_chain), sec(vw), sec(vw_chain), sec(tl), sec(tl_chain), sec(rest),
            sec(rest));
    fprintf(stderr,
            "traceidx: chains: ordering and filling blocks %.2f s, writing them %.2f s, coding "
            "them %.2f s (any core); proc view %.2f s, thread and goroutine views %.2f s, "
            "Go's summary %.2f s, goroutine statistics %.2f s, decoding %.2f s (any core)\n",
            sec(ev_fill), sec(ev_put), sec(ic->code_ns + ic->enc_code_ns),
            sec(vs->cpu_worker_ns[0]), sec(vs->cpu_worker_ns[1]), sec(vs->cpu_worker_ns[2]),
            sec(vs->cpu_worker_ns[3]), sec(vs->cpu_decode_ns));
    fprintf(stderr,
            "traceidx: critical path %.2f s of %.2f s CPU: at most %.2fx faster than one core, on "
            "any number of cores\n",
            sec(crit), sec(total), crit > 0 ? (double)total / (double)crit : 0.0);
}

static void tail_progress_update(void *ctx, uint64_t done, uint64_t total) {
    views_progress *vp = ctx;
    if (!vp->tail) {
        vp->tail = true;
        cli_progress_end(vp->p);
        cli_progress_init(vp->p, STEP_TAIL, vp->quiet);
    }
    cli_progress_fraction(vp->p, done, total, NULL);
}

int cmd_build(int argc, char **argv) {
    const char *path = NULL, *out = NULL;
    int jobs = tdx_ncpus(), jr;
    bool quiet = false, verbose = false, partial = false;
    uint64_t every = 0; /* the defaults */
    uint64_t budget = 0, str_budget = 0;
#ifdef __GLIBC__
    /* Buffers of 256 KiB and more get mappings of their own, so freeing one returns it to the
     * system: glibc's adaptive threshold otherwise keeps freed phase-one tables resident through
     * the build's second phase (1 GiB trace: peak RSS 356 -> 295 MiB). Only the build: a query's
     * short life would pay a fresh mapping's page faults for each large buffer. */
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
#endif
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(build_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(argv[i], "-o")) {
            if (++i >= argc || !*argv[i]) return cli_usage_error("build", "-o needs a file name");
            out = argv[i];
            /* an index is a file (written beside OUT, then renamed): there is no stdout form */
            if (!strcmp(out, "-"))
                return cli_usage_error("build", "-o - : an index is written to a file, not stdout");
        } else if ((jr = cli_jobs_arg(argc, argv, &i, &jobs)) != 0) {
            if (jr < 0) return cli_usage_error("build", "-j needs a number from 1 to 1024");
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = true;
        } else if (!strcmp(argv[i], "--verbose")) {
            verbose = true;
        } else if (!strcmp(argv[i], "--partial")) {
            partial = true;
        } else if (!strcmp(argv[i], "--checkpoint-every")) {
            if (++i >= argc || cli_parse_u64(argv[i], &every) || !every)
                return cli_usage_error("build", "--checkpoint-every needs a positive event count");
        } else if (!strcmp(argv[i], "--sort-budget")) {
            if (++i >= argc || cli_parse_bytes(argv[i], &budget) || !budget || budget > SIZE_MAX)
                return cli_usage_error(
                    "build", "--sort-budget needs a positive byte count (65536, 64k, 4MiB)");
        } else if (!strcmp(argv[i], "--string-budget")) {
            if (++i >= argc || cli_parse_bytes(argv[i], &str_budget) || !str_budget ||
                str_budget > SIZE_MAX)
                return cli_usage_error(
                    "build", "--string-budget needs a positive byte count (65536, 64k, 4MiB)");
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("build", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("build", "unexpected argument %s", argv[i]);
        }
    }
    if (!path) return cli_usage_error("build", "need a TRACE");
    char *defout = NULL;
    if (!out) {
        size_t n = strlen(path) + 6;
        defout = malloc(n);
        if (!defout) return TDX_EXIT_FAIL;
        snprintf(defout, n, "%s.tidx", path);
        out = defout;
    }
    int rc = TDX_EXIT_FAIL;
    tdx_source src;
    if (check_target(out) || cli_open_trace(path, &src)) {
        free(defout);
        return TDX_EXIT_FAIL;
    }
    tdx_err err;
    double t0 = cli_now();
    int64_t cpu0 = tdx_thread_cpu_ns();
    cli_hold_interrupts();
    tdx_iwriter *w =
        tdx_iwriter_new(out, src.version, src.data, src.size, (size_t)str_budget, &err);
    if (!w) {
        cli_report(out, &err);
        goto done;
    }
    cli_remove_on_signal(tdx_iwriter_temp_path(w)); /* an interrupted build leaves no temp file */
    /* With more than one thread, event blocks are encoded beside the in-order delivery. */
    if (jobs > 1 && tdx_iwriter_async(w, 0) && verbose)
        fprintf(stderr, "traceidx: no encoder thread; encoding on the reading thread\n");
    if (verbose)
        fprintf(stderr, "traceidx: reading %s (go 1.%d trace, %zu bytes) with %d thread%s\n", path,
                src.version, src.size, jobs, jobs == 1 ? "" : "s");
    /* io_uring keeps the next reads in flight; TRACEIDX_NO_URING=1 disables it (benchmarks). */
    tdx_prefetch *pf = NULL;
    if (src.kind == TDX_SRC_BINARY && !getenv("TRACEIDX_NO_URING")) {
        tdx_err perr;
        pf = tdx_prefetch_start(path, src.size, &perr);
        if (!pf && verbose)
            fprintf(stderr, "traceidx: %s; reading through the mapping only\n", perr.msg);
    } else if (verbose) {
        fprintf(stderr, "traceidx: io_uring prefetch disabled; reading through the mapping only\n");
    }
    if (pf && verbose) fprintf(stderr, "traceidx: io_uring prefetch on (32 MiB window)\n");
    cli_progress prog;
    cli_progress_init(&prog, STEP_EVENTS, quiet);
    /* The in-order side (tables, block filling, encoding) is phase 1's bottleneck, so generations
     * are ordered on this thread as they stream in: ordering them ahead on workers kept up to
     * three generations' events buffered (1 GiB trace: 501 -> 267 MiB peak, and no slower). */
    tdx_read_opts o = {.jobs = 1,
                       .emit = tdx_iwriter_event,
                       .emit_ctx = w,
                       .gen_done = tdx_iwriter_gen_done,
                       .gen_done_ctx = w,
                       .progress = cli_progress_update,
                       .progress_ctx = &prog,
                       .prefetch = pf,
                       .hash_input = true,
                       .release_input = src.kind == TDX_SRC_BINARY};
    tdx_read_stats st;
    int rrc = tdx_read_trace(src.data, src.size, src.version, &o, &st, &err);
    int64_t cpu_events = tdx_thread_cpu_ns() - cpu0;
    if (pf && verbose)
        fprintf(stderr, "traceidx: io_uring prefetched %.1f MB\n",
                (double)tdx_prefetch_requested(pf) / 1e6);
    tdx_prefetch_stop(pf);
    /* A damaged trace (read error, not the writer's): cmd/trace shows the events up to the last
     * Sync read, if any; so does --partial. */
    uint64_t view_events = 0;
    if (rrc) {
        cli_progress_end(&prog);
        const tdx_err *we = tdx_iwriter_error(w);
        uint64_t valid = tdx_iwriter_valid_events(w);
        bool damaged = we->kind == TDX_OK && (err.kind == TDX_EFORMAT || err.kind == TDX_EVALIDATE);
        if (damaged && partial && valid) {
            cli_report_trace(path, &src, &err);
            /* go tool trace says how much of the trace the damage cost; so do we */
            uint64_t kept = tdx_iwriter_gens_end(w);
            if (kept > src.size) kept = src.size;
            /* Go's summary, and so the index's events, keep every event read before the damage;
             * the views stop earlier. Both counts, so the summary line's does not contradict. */
            uint64_t read = tdx_iwriter_nevents(w);
            fprintf(stderr,
                    "traceidx: %s: warning: the trace is damaged; its views show the %" PRIu64
                    " event%s up to the last complete generation, as go tool trace shows it "
                    "(lost %.2f%% of the trace: %" PRIu64
                    " of %zu bytes); the index keeps all %" PRIu64
                    " event%s read before the damage\n",
                    path, valid, valid == 1 ? "" : "s",
                    src.size ? 100.0 * (double)(src.size - kept) / (double)src.size : 0.0,
                    (uint64_t)(src.size - kept), src.size, read, read == 1 ? "" : "s");
            tdx_iwriter_set_partial(w, err.offset);
            view_events = valid;
        } else {
            if (we->kind == TDX_EUNSUPPORTED) /* something of the trace the index cannot hold */
                cli_report_trace(path, &src, we);
            else if (we->kind != TDX_OK) /* the output's own trouble */
                cli_report(out, we);
            else
                cli_report_trace(path, &src, &err);
            if (damaged && !valid && partial) /* cmd/trace's words for this case */
                fprintf(stderr, "traceidx: %s: failed to parse any useful part of the trace\n",
                        path);
            if (damaged && valid && !partial)
                fprintf(stderr,
                        "traceidx: %s: its %" PRIu64 " event%s up to the last complete generation "
                        "%s intact: `traceidx build --partial` indexes them, as go tool trace "
                        "shows them\n",
                        path, valid, valid == 1 ? "" : "s", valid == 1 ? "is" : "are");
            tdx_iwriter_abort(w);
            goto done;
        }
    }
    cli_progress_end(&prog);
    /* The reader hashed the trace as it passed; after a read error the writer hashes it whole. */
    if (!rrc) tdx_iwriter_set_trace_hash(w, st.input_hash, st.input_sample);
    double t1 = cli_now();
    if (verbose) {
        uint64_t ns, spills, reads;
        tdx_iwriter_string_stats(w, &ns, &spills, &reads);
        fprintf(stderr,
                "traceidx: events ordered and encoded in %.2f s (peak RSS so far %.0f MiB); "
                "%" PRIu64 " distinct strings, their lookup spilled %" PRIu64
                " time%s to its scratch file (%" PRIu64 " blocks read back)\n",
                t1 - t0, cli_peak_rss_mib(), ns, spills, spills == 1 ? "" : "s", reads);
        if (jobs > 1)
            fprintf(stderr,
                    "traceidx: %" PRIu64 " of %zu event blocks coded on the reading thread "
                    "(the encoder thread was behind)\n",
                    tdx_iwriter_blocks_shared(w), tdx_iwriter_nblocks(w));
    }
    /* Phase 2: the viewer generators over the written events (checkpoints, ranges, summary). */
    cli_progress_init(&prog, STEP_VIEWS, quiet);
    views_progress vp = {&prog, src.size, quiet, false};
    tdx_viewbuild_opts vo = {.ckpt_events = every,
                             .jobs = jobs,
                             .sort_budget = (size_t)budget,
                             .view_events = view_events,
                             .progress = views_progress_update,
                             .progress_ctx = &vp,
                             .tail_progress = tail_progress_update,
                             .tail_progress_ctx = &vp};
    tdx_viewbuild_stats vs;
    int vrc = tdx_viewbuild(w, &vo, &vs, &err);
    if (vrc) {
        cli_progress_end(&prog);
        cli_report(out, &err);
        tdx_iwriter_abort(w);
        goto done;
    }
    if (verbose) cli_progress_end(&prog); /* the lines below start on a clear one */
    if (verbose)
        fprintf(stderr,
                "traceidx: views: %" PRIu64 "/%" PRIu64 "/%" PRIu64
                " checkpoints (%.1f MB of state), long items %" PRIu64 "/%" PRIu64 "/%" PRIu64
                " (proc/thread/goroutine), "
                "%" PRIu64 " split range%s%s\n",
                vs.checkpoints[0], vs.checkpoints[1], vs.checkpoints[2],
                (double)vs.state_bytes / 1e6, vs.items[0], vs.items[1], vs.items[2], vs.ranges,
                vs.ranges == 1 ? "" : "s", vs.reruns ? " (redone: a goroutine id was reused)" : "");
    if (verbose)
        fprintf(stderr, "traceidx: views built in %.2f s (peak RSS %.0f MiB)\n", cli_now() - t1,
                cli_peak_rss_mib());
    tdx_iwriter_cpu ic; /* complete: the encoder thread has ended */
    tdx_iwriter_cpu_stats(w, &ic);
    /* The string table is packed and the file synced: seconds on a multi-GB trace. */
    cli_progress_fraction(&prog, 1, 1, "writing the string table, syncing");
    int frc = tdx_iwriter_finish(w, &err);
    cli_progress_end(&prog);
    if (frc) {
        cli_report(out, &err);
        goto done;
    }
    if (verbose) report_cpu(cpu_events, tdx_thread_cpu_ns(), &ic, &vs);
    double secs = cli_now() - t0;
    struct stat s;
    uint64_t isize = stat(out, &s) == 0 ? (uint64_t)s.st_size : 0;
    /* kB below a megabyte: a small trace's index read "0.0 MB". */
    bool kb = isize < 1000000;
    printf("%s: indexed %" PRIu64 " events of %" PRIu64
           " generation%s into %s: %.1f %s, %.3f of the "
           "trace, in %.2f s (%.0f MB/s, %.1fM events/s)\n",
           path, st.events, st.generations, st.generations == 1 ? "" : "s", out,
           (double)isize / (kb ? 1e3 : 1e6), kb ? "kB" : "MB",
           src.size ? (double)isize / (double)src.size : 0.0, secs,
           secs > 0 ? (double)src.size / 1e6 / secs : 0.0,
           secs > 0 ? (double)st.events / 1e6 / secs : 0.0);
    rc = TDX_EXIT_OK;
done:
    cli_remove_on_signal(NULL);
    tdx_source_close(&src);
    free(defout);
    return rc;
}

static const char info_help[] =
    "usage: traceidx info INDEX|TRACE [--json] [--verify [-j N]]\n\n"
    "Describes an index: the trace's version, time span, generations, events by kind,\n"
    "goroutines, procs, threads, split ranges, and the index size and its ratio to the trace.\n"
    "An index of a damaged trace (build --partial) has a \"partial\" line: where the damage is\n"
    "and where the views end. Given a TRACE, uses TRACE.tidx after checking that it still\n"
    "matches the trace.\n\n"
    "  --json    the same as a JSON object\n"
    "  --verify  also check every section and block checksum, decode every event block\n"
    "            (its times against the block directory, the kinds against the totals),\n"
    "            and read every view's blobs, frame tree and saved states, the frame\n"
    "            names, the summary's blocks and the split ranges as a query would: what\n"
    "            a query finds corrupt, it finds\n"
    "  -j N      threads decoding the event blocks for --verify (default: number of CPUs;\n"
    "            the same answer for any N: the first damaged block is the one named)\n";

static void verify_progress(void *ctx, uint64_t done, uint64_t total) {
    cli_progress_fraction(ctx, done, total, NULL);
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    bool json = false, verify = false, jobs_given = false;
    int jobs = tdx_ncpus(), jr;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(info_help, stdout);
            return TDX_EXIT_OK;
        } else if ((jr = cli_jobs_arg(argc, argv, &i, &jobs)) != 0) {
            if (jr < 0) return cli_usage_error("info", "-j needs a number from 1 to 1024");
            jobs_given = true;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--verify")) {
            verify = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("info", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("info", "unexpected argument %s", argv[i]);
        }
    }
    if (!path) return cli_usage_error("info", "need an INDEX");
    if (jobs_given && !verify) return cli_usage_error("info", "-j goes with --verify");
    tdx_index ix;
    tdx_err err;
    if (cli_open_index(path, &ix, true)) return TDX_EXIT_FAIL;
    if (verify) {
        cli_progress prog;
        cli_progress_init(&prog, "verify", false);
        tdx_verify_opts vo = {.jobs = jobs, .progress = verify_progress, .progress_ctx = &prog};
        int vrc = tdx_index_verify(&ix, &vo, &err);
        cli_progress_end(&prog);
        if (vrc) {
            cli_report(path, &err);
            tdx_index_close(&ix);
            return TDX_EXIT_FAIL;
        }
    }
    const uint64_t *m = ix.meta;
    int64_t span = (int64_t)(m[M_LAST_TIME] - m[M_FIRST_TIME]);
    char dur[48];
    cli_duration(dur, sizeof dur, span);
    double ratio = ix.trace_size ? (double)ix.size / (double)ix.trace_size : 0;
    tdx_vrange *rs = NULL;
    size_t nr = 0;
    if (tdx_query_ranges(&ix, &rs, &nr, &err)) {
        cli_report(path, &err);
        tdx_index_close(&ix);
        return TDX_EXIT_FAIL;
    }
    /* A damaged trace's index (build --partial): the views end at the last Sync read. */
    tdx_summary sf;
    memset(&sf, 0, sizeof sf);
    if (ix.partial) {
        if (tdx_sumindex_fields(&ix, &sf, &err)) {
            cli_report(path, &err);
            free(rs);
            tdx_index_close(&ix);
            return TDX_EXIT_FAIL;
        }
    }
    if (json) {
        /* The path as a JSON string: it may hold quotes, backslashes or any byte. */
        tdx_buf qpath = {0};
        if (tdx_json_quote(&qpath, (const uint8_t *)ix.path, strlen(ix.path)) ||
            tdx_buf_append(&qpath, "", 1)) {
            fprintf(stderr, "traceidx: out of memory\n");
            tdx_vec_free(&qpath);
            free(rs);
            tdx_index_close(&ix);
            return TDX_EXIT_FAIL;
        }
        printf("{\"index\":%s,\"format_version\":%u,\"trace_version\":\"go1.%" PRIu64 "\","
               "\"trace_bytes\":%" PRIu64 ",\"index_bytes\":%zu,\"ratio\":%.4f,"
               "\"first_time_ns\":%" PRId64 ",\"last_time_ns\":%" PRId64 ",\"span_ns\":%" PRId64 ","
               "\"generations\":%" PRIu64 ",\"events\":%" PRIu64 ",\"goroutines\":%" PRIu64 ","
               "\"procs\":%" PRIu64 ",\"threads\":%" PRIu64 ",\"strings\":%" PRIu64
               ",\"stacks\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"events_by_kind\":{",
               (const char *)qpath.v, ix.version, m[M_TRACE_VERSION], ix.trace_size, ix.size, ratio,
               (int64_t)m[M_FIRST_TIME], (int64_t)m[M_LAST_TIME], span, m[M_GENERATIONS],
               m[M_EVENTS], m[M_GOROUTINES], m[M_PROCS], m[M_THREADS], m[M_STRINGS], m[M_STACKS],
               m[M_BLOCKS]);
        int first = 1;
        for (int k = 1; k < 15; k++) {
            if (!m[M_KIND0 + k]) continue;
            printf("%s\"%s\":%" PRIu64, first ? "" : ",", tdx_kind_name(k), m[M_KIND0 + k]);
            first = 0;
        }
        printf("},\"ranges\":%zu,\"sections\":{", nr);
        first = 1;
        for (uint32_t k = 1; k < TDX_SEC_COUNT_; k++) {
            if (!ix.sec[k].present) continue;
            printf("%s\"%s\":%" PRIu64, first ? "" : ",", tdx_section_name(k), ix.sec[k].len);
            first = 0;
        }
        printf("}");
        if (ix.partial) {
            char off[24] = "null"; /* the parser's error had no offset */
            if (ix.damage_off != TDX_NO_OFFSET)
                snprintf(off, sizeof off, "%" PRIu64, ix.damage_off);
            printf(",\"partial\":{\"damage_offset\":%s,\"view_events\":%" PRIu64
                   ",\"view_end_ns\":%" PRId64 "}",
                   off, sf.valid_events, sf.valid_end);
        }
        printf("%s}\n", verify ? ",\"verified\":true" : "");
        tdx_vec_free(&qpath);
    } else {
        printf("index:        %s (format version %u%s)\n", ix.path, ix.version,
               verify ? ", all checksums verified" : "");
        printf("trace:        go 1.%" PRIu64 ", %" PRIu64 " bytes\n", m[M_TRACE_VERSION],
               ix.trace_size);
        printf("span:         %s (%" PRId64 " .. %" PRId64 " ns)\n", dur, (int64_t)m[M_FIRST_TIME],
               (int64_t)m[M_LAST_TIME]);
        if (ix.partial) {
            char off[48];
            cli_damage_where(&ix, off, sizeof off);
            printf("partial:      the trace is damaged%s (build --partial): the views and split "
                   "ranges end at its last complete generation, event %" PRIu64 " of %" PRIu64
                   " (%" PRId64 " ns)\n",
                   off, sf.valid_events, m[M_EVENTS], sf.valid_end);
        }
        printf("generations:  %" PRIu64 "\n", m[M_GENERATIONS]);
        printf("events:       %" PRIu64 "\n", m[M_EVENTS]);
        for (int k = 1; k < 15; k++)
            if (m[M_KIND0 + k]) printf("  %-16s %" PRIu64 "\n", tdx_kind_name(k), m[M_KIND0 + k]);
        printf("goroutines:   %" PRIu64 "\nprocs:        %" PRIu64 "\nthreads:      %" PRIu64 "\n",
               m[M_GOROUTINES], m[M_PROCS], m[M_THREADS]);
        printf("tables:       %" PRIu64 " strings, %" PRIu64 " stacks, %" PRIu64 " frames\n",
               m[M_STRINGS], m[M_STACKS], m[M_FRAMES]);
        if (nr) {
            printf("split ranges: %zu (go tool trace's ~100 MiB pieces of the proc view)\n", nr);
            for (size_t i = 0; i < nr; i++)
                printf("  #%-3zu %s (events %" PRId64 "..%" PRId64 ")\n", i, rs[i].name,
                       rs[i].start, rs[i].end);
        } else {
            printf("split ranges: none (go tool trace shows the proc view whole: its JSON fills "
                   "fewer than two 100 MiB ranges)\n");
        }
        printf("index size:   %zu bytes, %.3f of the trace, %" PRIu64 " event blocks\n", ix.size,
               ratio, m[M_BLOCKS]);
        for (uint32_t k = 1; k < TDX_SEC_COUNT_; k++)
            if (ix.sec[k].present && ix.sec[k].len)
                printf("  %-16s %12" PRIu64 " bytes  %.3f of the trace\n", tdx_section_name(k),
                       ix.sec[k].len,
                       ix.trace_size ? (double)ix.sec[k].len / (double)ix.trace_size : 0.0);
    }
    free(rs);
    tdx_index_close(&ix);
    return TDX_EXIT_OK;
}
