/* cmd_query.c: `traceidx query` (viewer JSON of a view, split range, index range or time window)
 * and `traceidx ranges` (the split ranges cmd/trace lists), answered from an index. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/regfile.h"
#include "index/common/atomic_file.h"
#include "index/format/format.h"
#include "index/views/query.h"

static const char query_help[] =
    "usage: traceidx query INDEX [--range START:END | --range '#N' | --start I --end J]\n"
    "                      [--view procs|threads] [--goroutine G] [--task T] [--taskid T]\n"
    "                      [-o FILE] [--verbose]\n\n"
    "Writes the trace-viewer JSON that `go tool trace` serves at /jsontrace, from the index (a\n"
    "TRACE is accepted too: its TRACE.tidx is used after checking it matches). Only the part of\n"
    "the trace the answer needs is read, from the nearest checkpoint on.\n\n"
    "  --range START:END  a time window, in times since the trace's first event as the viewer\n"
    "                   shows them: 1.5s, 1500ms, 1500000us, 1500000000ns, 1m2.5s, or a bare\n"
    "                   integer in ns. END may be +DUR (relative to START); an empty START or END\n"
    "                   means the trace's start or end. The window holds every slice, arrow and\n"
    "                   instant that overlaps it, plus the counters' values as of START; adjacent\n"
    "                   windows stitch. A window after the last event is empty (a note on\n"
    "                   stderr says so).\n"
    "  --range '#N'     the Nth split range (from 0) that `traceidx ranges` lists, exactly as\n"
    "                   go tool trace serves it (indexes into the view's output)\n"
    "  --start I --end J  /jsontrace's start and end: output-event indexes, both inclusive\n"
    "  --view threads   the OS-thread-oriented view (view=thread); default: procs\n"
    "  --goroutine G    the goroutine-oriented view of G and the goroutines that unblocked it,\n"
    "                   over G's lifetime (goid=G)\n"
    "  --task T         task T and its subtasks over the proc (or thread) view (focustask=T)\n"
    "  --taskid T       the goroutine-oriented view of task T's goroutines with its regions\n"
    "                   (taskid=T)\n"
    "  -o FILE          write to FILE (atomically; a device or FIFO in place) instead of\n"
    "                   stdout ('-'); never over a Go trace or an index\n"
    "  --verbose        say on stderr where the replay started and what it read\n\n"
    "Where go tool trace's own order depends on Go map iteration, a fixed order is used (see\n"
    "docs/architecture.md). A goroutine or task the trace does not have is an error.\n";

static const char ranges_help[] =
    "usage: traceidx ranges INDEX [--json]\n\n"
    "Lists the ranges go tool trace splits the proc view into (about 100 MiB of JSON each): the\n"
    "links of its main page. Traces too small to split have none. Each range can be fetched with\n"
    "`traceidx query INDEX --range '#N'`.\n\n"
    "  --json    a JSON array of objects with go tool trace's fields name, start, end (output-\n"
    "            event indexes, both inclusive), startTime, endTime (ns) and bytes (the JSON size\n"
    "            estimate that closed the range)\n";

/* JSON is never written over a trace or an index (the rename would replace them), whether or not
 * this query reads it: -o TRACE is a slip of the finger. */
static int refuse_target(const char *out) {
    uint8_t head[8];
    if (tdx_read_head(out, head, sizeof head) != 8) return 0;
    const char *what = tdx_is_index(head, 8)       ? "a traceidx index"
                       : !memcmp(head, "go 1.", 5) ? "a Go execution trace"
                                                   : NULL;
    if (!what) return 0;
    fprintf(stderr, "traceidx: %s: exists and is %s; refusing to overwrite it with JSON\n", out,
            what);
    return -1;
}

typedef struct sink {
    FILE *f;
    tdx_afile af;
    bool atomic;
    tdx_err err;
} sink;

static int sink_write(void *ctx, const void *p, size_t n) {
    sink *s = ctx;
    if (s->atomic) return tdx_afile_write(&s->af, p, n, &s->err);
    return fwrite(p, 1, n, s->f) == n ? 0 : -1;
}

int cmd_query(int argc, char **argv) {
    const char *path = NULL, *out = NULL, *range = NULL;
    tdx_query q;
    memset(&q, 0, sizeof q);
    bool has_start = false, has_end = false, verbose = false, has_view = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (cli_is_help(a)) {
            fputs(query_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(a, "--range")) {
            if (!more) return cli_usage_error("query", "--range needs START:END or '#N'");
            range = argv[++i];
        } else if (!strcmp(a, "--start") || !strcmp(a, "--end")) {
            int64_t v;
            if (!more || cli_parse_i64(argv[i + 1], &v))
                return cli_usage_error("query", "%s needs a decimal event index", a);
            i++;
            if (a[2] == 's')
                has_start = true, q.start = v;
            else
                has_end = true, q.end = v;
        } else if (!strcmp(a, "--view")) {
            if (!more) return cli_usage_error("query", "--view needs procs or threads");
            const char *v = argv[++i];
            has_view = true;
            if (!strcmp(v, "threads") || !strcmp(v, "thread"))
                q.thread = true;
            else if (!strcmp(v, "procs") || !strcmp(v, "proc"))
                q.thread = false;
            else
                return cli_usage_error("query", "--view is procs or threads, not %s", v);
        } else if (!strcmp(a, "--goroutine") || !strcmp(a, "--task") || !strcmp(a, "--taskid")) {
            uint64_t v;
            if (!more || cli_parse_u64(argv[i + 1], &v))
                return cli_usage_error("query", "%s needs an unsigned decimal id", a);
            i++;
            if (!strcmp(a, "--goroutine")) {
                if (q.has_focustask || q.has_taskid)
                    return cli_usage_error("query", "give one of --goroutine, --task, --taskid");
                q.has_goid = true, q.goid = v;
            } else if (!strcmp(a, "--task")) {
                if (q.has_goid || q.has_taskid)
                    return cli_usage_error("query", "give one of --goroutine, --task, --taskid");
                q.has_focustask = true, q.focustask = v;
            } else {
                if (q.has_goid || q.has_focustask)
                    return cli_usage_error("query", "give one of --goroutine, --task, --taskid");
                q.has_taskid = true, q.taskid = v;
            }
        } else if (!strcmp(a, "-o")) {
            if (!more || !*argv[i + 1]) return cli_usage_error("query", "-o needs a file name");
            out = argv[++i];
            if (!strcmp(out, "-")) out = NULL; /* stdout, as text2bin's "-" */
        } else if (!strcmp(a, "--verbose")) {
            verbose = true;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("query", "unknown option %s", a);
        } else if (!path) {
            path = a;
        } else {
            return cli_usage_error("query", "unexpected argument %s", a);
        }
    }
    if (!path) return cli_usage_error("query", "need an INDEX");
    if (has_start != has_end) return cli_usage_error("query", "--start and --end go together");
    if (has_start && range && range[0] == '#')
        return cli_usage_error("query", "--range '#N' already sets --start and --end");
    if (has_start && range)
        return cli_usage_error("query", "give --range or --start and --end, not both");
    if (has_view && (q.has_goid || q.has_taskid))
        return cli_usage_error("query", "--view is for the proc and thread views; --goroutine "
                                        "and --taskid draw the goroutine view");
    q.has_index = has_start;

    tdx_index ix;
    if (cli_open_index(path, &ix, false)) return TDX_EXIT_FAIL;
    if (out && refuse_target(out)) {
        tdx_index_close(&ix);
        return TDX_EXIT_FAIL;
    }
    int rc = TDX_EXIT_FAIL;
    tdx_err err;
    int64_t span = (int64_t)(ix.meta[M_LAST_TIME] - ix.meta[M_FIRST_TIME]);
    if (range && range[0] == '#') {
        uint64_t n;
        tdx_vrange *rs;
        size_t nr;
        if (cli_parse_u64(range + 1, &n)) {
            tdx_index_close(&ix);
            return cli_usage_error("query", "--range '#N' needs a range number, not %s", range);
        }
        if (tdx_query_ranges(&ix, &rs, &nr, &err)) {
            cli_report(path, &err);
            tdx_index_close(&ix);
            return TDX_EXIT_FAIL;
        }
        if (n >= nr) {
            fprintf(stderr,
                    "traceidx: %s: no range #%" PRIu64 ": the trace has %zu split range%s%s\n",
                    path, n, nr, nr == 1 ? "" : "s",
                    nr ? "" : " (go tool trace shows it whole: query without --range)");
            free(rs);
            tdx_index_close(&ix);
            return TDX_EXIT_FAIL;
        }
        q.has_index = true;
        q.start = rs[n].start;
        q.end = rs[n].end;
        free(rs);
    } else if (range) {
        const char *colon = strchr(range, ':');
        if (!colon) {
            tdx_index_close(&ix);
            return cli_usage_error("query", "--range needs START:END or '#N', not %s", range);
        }
        char a[64], b[64];
        size_t na = (size_t)(colon - range), nb = strlen(colon + 1);
        if (na >= sizeof a || nb >= sizeof b) {
            tdx_index_close(&ix);
            return cli_usage_error("query", "--range %s is too long", range);
        }
        memcpy(a, range, na);
        a[na] = 0;
        memcpy(b, colon + 1, nb + 1);
        int64_t s = 0, e = span;
        bool rel = b[0] == '+';
        if ((na && cli_parse_duration(a, &s)) || (nb && cli_parse_duration(b + rel, &e)) ||
            (rel && nb == 1)) {
            tdx_index_close(&ix);
            return cli_usage_error("query",
                                   "cannot read the times in --range %s (use e.g. 1.2s:1.5s, "
                                   "1200ms:+300ms or a number of ns)",
                                   range);
        }
        if (rel) e = e > INT64_MAX - s ? INT64_MAX : s + e; /* "+a long time": to the end */
        if (!nb && e < s) e = s; /* "START:" past the end: the empty window there */
        if (e < s) {
            tdx_index_close(&ix);
            return cli_usage_error("query", "--range %s ends before it starts", range);
        }
        if (s > span) {
            /* Not an error (adjacent windows may be scripted past the end), but an empty
             * answer should not look like an idle stretch of the trace. */
            char d[64];
            cli_duration(d, sizeof d, span);
            fprintf(stderr,
                    "traceidx: note: --range %s starts after the trace's last event (at %s): "
                    "the window is empty\n",
                    range, d);
        }
        q.has_window = true;
        q.wstart = s;
        q.wend = e;
    }

    sink sk;
    memset(&sk, 0, sizeof sk);
    static char obuf[1 << 16];
    if (out) {
        cli_hold_interrupts();
        if (tdx_afile_open_output(&sk.af, out, &err)) {
            cli_remove_on_signal(NULL);
            cli_report(out, &err);
            tdx_index_close(&ix);
            return TDX_EXIT_FAIL;
        }
        sk.atomic = true;
        cli_remove_on_signal(sk.af.tmp);
    } else {
        sk.f = stdout;
        setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    }
    double t0 = cli_now();
    tdx_query_stats st;
    if (tdx_query_run(&ix, &q, sink_write, &sk, &st, &err)) {
        if (err.kind == TDX_EIO && sk.err.kind != TDX_OK)
            cli_report(out, &sk.err);
        else if (err.kind == TDX_EIO)
            fprintf(stderr, "traceidx: write failed: %s\n", strerror(errno));
        else
            cli_report(path, &err);
        goto done;
    }
    if (out) {
        if (tdx_afile_commit(&sk.af, &err)) {
            cli_report(out, &err);
            goto done;
        }
        sk.atomic = false;
    } else if (fflush(stdout)) {
        fprintf(stderr, "traceidx: write failed: %s\n", strerror(errno));
        goto done;
    }
    if (verbose)
        fprintf(stderr,
                "traceidx: query: from checkpoint %" PRIu64 ", replayed %" PRIu64
                " events (%" PRIu64 " after the window skipped), %" PRIu64
                " recorded events, wrote %" PRIu64 " events in %.1f ms\n",
                st.checkpoint, st.replayed, st.skipped, st.long_items, st.written,
                (cli_now() - t0) * 1e3);
    rc = TDX_EXIT_OK;
done:
    cli_remove_on_signal(NULL);
    if (sk.atomic) tdx_afile_abort(&sk.af);
    tdx_index_close(&ix);
    return rc;
}

int cmd_ranges(int argc, char **argv) {
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(ranges_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("ranges", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("ranges", "unexpected argument %s", argv[i]);
        }
    }
    if (!path) return cli_usage_error("ranges", "need an INDEX");
    tdx_index ix;
    if (cli_open_index(path, &ix, false)) return TDX_EXIT_FAIL;
    tdx_err err;
    tdx_vrange *rs;
    size_t n;
    if (tdx_query_ranges(&ix, &rs, &n, &err)) {
        cli_report(path, &err);
        tdx_index_close(&ix);
        return TDX_EXIT_FAIL;
    }
    if (json) {
        printf("[");
        for (size_t i = 0; i < n; i++) {
            printf("%s{\"name\": \"", i ? ", " : "");
            for (const char *c = rs[i].name; *c; c++) {
                if (*c == '"' || *c == '\\') putchar('\\');
                putchar(*c);
            }
            printf("\", \"start\": %" PRId64 ", \"end\": %" PRId64 ", \"startTime\": %" PRId64
                   ", \"endTime\": %" PRId64 ", \"bytes\": %" PRIu64 "}",
                   rs[i].start, rs[i].end, rs[i].start_time, rs[i].end_time, rs[i].bytes);
        }
        printf("]\n");
    } else if (n == 0) {
        printf("%s: not split (go tool trace splits the proc view only when its JSON "
               "fills two 100 MiB ranges or more)\n",
               path);
    } else {
        printf("%-4s %-40s %12s %12s %10s\n", "#", "range", "start", "end", "MiB");
        for (size_t i = 0; i < n; i++)
            printf("%-4zu %-40s %12" PRId64 " %12" PRId64 " %10.1f\n", i, rs[i].name, rs[i].start,
                   rs[i].end, (double)rs[i].bytes / 1048576.0);
    }
    free(rs);
    tdx_index_close(&ix);
    return TDX_EXIT_OK;
}
