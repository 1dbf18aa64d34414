/* cmd_validate.c: `traceidx validate` and `traceidx dump [--events]`. */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/event.h"
#include "core/reader.h"
#include "core/regfile.h"
#include "index/format/reader.h"

int cmd_dump_raw(const char *path, bool footprint);

static const char validate_help[] =
    "usage: traceidx validate [-j N] [--expect] [--stats] [--quiet] TRACE\n\n"
    "Reads TRACE the way Go's parser does (framing, tables, ordering, state machine) and prints a\n"
    "one-line summary: version, generations, events and time span. A broken trace gets Go's\n"
    "error message with the byte offset, and exit status 1.\n\n"
    "  -j N      worker threads ordering generations in parallel (default: number of CPUs);\n"
    "            the result is identical for every N\n"
    "  --expect  TRACE is a Go test file: exit 0 when the outcome meets its \"-- expect --\"\n"
    "            line (SUCCESS, or FAILURE with a message matching the pattern)\n"
    "  --stats   also print how many generations were ordered speculatively and redone\n"
    "  --quiet   no progress on stderr\n";

static const char dump_help[] =
    "usage: traceidx dump [--events] [-j N] [--quiet] TRACE\n"
    "       traceidx dump --events INDEX\n"
    "       traceidx dump --footprint TRACE\n\n"
    "Without --events: prints TRACE (Go 1.22 or later) in Go's text format, event by event, as\n"
    "Go's raw text writer does (the form `traceidx text2bin` reads back).\n"
    "With --events: prints the ordered events exactly as `go tool trace -d=parsed` does, stacks\n"
    "included; if the trace is broken, a last line \"ERROR: <message>\" follows the events\n"
    "delivered before the error, and the exit status is 1. Given an INDEX, prints the events\n"
    "it holds (the trace's, byte for byte); an index of a damaged trace (build --partial) ends\n"
    "with an ERROR line naming where the damage is, and the exit status is 1.\n"
    "With --footprint: what each event type takes of TRACE (Go 1.22 or later), as `go tool\n"
    "trace -d=footprint` prints it: every wire event (batch headers and tables included) by\n"
    "type, its bytes (each uvarint counted at its shortest), count and shares of the file and\n"
    "of the events, the largest first; every type is listed, those not in the trace with 0.\n\n"
    "  -j N     worker threads for --events (default: number of CPUs; output identical for any N)\n"
    "  --quiet  no progress for --events (shown on stderr when it is a terminal and the output\n"
    "           is not)\n";

typedef struct {
    FILE *f;
    tdx_buf buf;
    int failed;
} printer;

static int print_event(void *ctx, const tdx_event *e, const tdx_gen *g) {
    printer *p = ctx;
    tdx_event_format(&p->buf, e, g);
    tdx_buf_append(&p->buf, "\n", 1);
    if (p->buf.n > (1 << 16)) {
        if (fwrite(p->buf.v, 1, p->buf.n, p->f) != p->buf.n) p->failed = 1;
        p->buf.n = 0;
    }
    return p->failed;
}

static int print_flush(printer *p) {
    if (p->buf.n && fwrite(p->buf.v, 1, p->buf.n, p->f) != p->buf.n) p->failed = 1;
    p->buf.n = 0;
    if (fflush(p->f)) p->failed = 1;
    tdx_vec_free(&p->buf);
    return p->failed;
}

static void usable_note(const tdx_read_stats *st, const tdx_source *src) {
    fprintf(stderr,
            "traceidx: usable before the error: %" PRIu64 " generation%s, %" PRIu64 " events, ",
            st->generations, st->generations == 1 ? "" : "s", st->events);
    uint64_t line = st->bytes < src->size ? tdx_source_line(src, st->bytes) : 0;
    if (line)
        fprintf(stderr, "the text before line %" PRIu64 "\n", line);
    else
        fprintf(stderr, "the first %" PRIu64 " of %zu bytes\n", st->bytes, src->size);
}

static bool is_framing_error(const tdx_err *err) {
    static const char *const prefixes[] = {"failed to read full batch", "error reading batch",
                                           "incomplete generation", "expected batch event",
                                           "invalid batch size"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (!strncmp(err->msg, prefixes[i], strlen(prefixes[i]))) return true;
    return false;
}

static int check_expectation(const char *path, const tdx_source *src, int rc, const tdx_err *err) {
    if (!src->has_expect) {
        fprintf(stderr, "traceidx: %s: --expect needs a Go test file with an expect section\n",
                path);
        return TDX_EXIT_FAIL;
    }
    if (!src->expect_failure) {
        if (rc == 0) {
            printf("%s: expectation met: SUCCESS\n", path);
            return TDX_EXIT_OK;
        }
        fprintf(stderr, "traceidx: %s: expected SUCCESS, got error: %s\n", path, err->msg);
        return TDX_EXIT_FAIL;
    }
    if (rc == 0) {
        fprintf(stderr, "traceidx: %s: expected FAILURE matching \"%s\", but the trace is valid\n",
                path, src->expect_pattern);
        return TDX_EXIT_FAIL;
    }
    regex_t re;
    if (regcomp(&re, src->expect_pattern, REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "traceidx: %s: cannot compile the expected pattern \"%s\"\n", path,
                src->expect_pattern);
        return TDX_EXIT_FAIL;
    }
    int m = regexec(&re, err->msg, 0, NULL, 0);
    regfree(&re);
    if (m == 0) {
        printf("%s: expectation met: FAILURE \"%s\": %s\n", path, src->expect_pattern, err->msg);
        return TDX_EXIT_OK;
    }
    fprintf(stderr, "traceidx: %s: expected FAILURE matching \"%s\", got: %s\n", path,
            src->expect_pattern, err->msg);
    return TDX_EXIT_FAIL;
}

int cmd_validate(int argc, char **argv) {
    const char *path = NULL;
    int jobs = tdx_ncpus(), jr;
    bool expect = false, quiet = false, stats = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(validate_help, stdout);
            return TDX_EXIT_OK;
        } else if ((jr = cli_jobs_arg(argc, argv, &i, &jobs)) != 0) {
            if (jr < 0) return cli_usage_error("validate", "-j needs a number from 1 to 1024");
        } else if (!strcmp(argv[i], "--expect")) {
            expect = true;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = true;
        } else if (!strcmp(argv[i], "--stats")) {
            stats = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("validate", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("validate", "unexpected argument %s", argv[i]);
        }
    }
    if (!path) return cli_usage_error("validate", "need a TRACE");
    tdx_source src;
    tdx_read_stats st;
    tdx_err err;
    int open_failed;
    double t0 = cli_now();
    int rc =
        cli_read_trace("validate", path, jobs, quiet, NULL, NULL, &src, &st, &err, &open_failed);
    double secs = cli_now() - t0;
    if (open_failed) return TDX_EXIT_FAIL;
    int exit_code;
    if (expect) {
        exit_code = check_expectation(path, &src, rc, &err);
    } else if (rc) {
        cli_report_trace(path, &src, &err);
        if (is_framing_error(&err)) usable_note(&st, &src);
        exit_code = TDX_EXIT_FAIL;
    } else {
        char span[48];
        cli_duration(span, sizeof span, st.last_time - st.first_time);
        printf("%s: valid go 1.%d trace: %" PRIu64 " generation%s, %" PRIu64 " events, span %s",
               path, st.version, st.generations, st.generations == 1 ? "" : "s", st.events, span);
        if (secs > 0.05)
            printf(" (%.1f MB in %.2f s: %.0f MB/s, %.1fM events/s)", (double)src.size / 1e6, secs,
                   (double)src.size / 1e6 / secs, (double)st.events / 1e6 / secs);
        printf("\n");
        exit_code = TDX_EXIT_OK;
    }
    if (stats)
        printf("%s: %" PRIu64 " generations ordered speculatively, %" PRIu64 " redone%s%s\n", path,
               st.speculated, st.reruns, st.rerun_why ? "; first because of: " : "",
               st.rerun_why ? st.rerun_why : "");
    tdx_source_close(&src);
    return exit_code;
}

/* The events stored in an index, printed exactly as from the trace itself. */
static int dump_index_events(const char *path, printer *pr) {
    tdx_index ix;
    tdx_err err = {0}; /* (a failed print leaves it unset) */
    if (tdx_index_open(&ix, path, &err)) {
        cli_report(path, &err);
        return TDX_EXIT_FAIL;
    }
    int rc = cli_index_events(&ix, print_event, pr, NULL, &err);
    /* An index of a damaged trace ends as the trace's dump does: an ERROR line, exit 1. The
     * index keeps where the damage is, not the parser's words. */
    bool damaged = !rc && ix.partial;
    if (damaged) {
        char off[48];
        cli_damage_where(&ix, off, sizeof off);
        tdx_errf(&err, TDX_EFORMAT, TDX_NO_OFFSET,
                 "the trace is damaged%s; build --partial indexed the events before it "
                 "(dump --events of the trace gives the parser's message)",
                 off);
        rc = tdx_buf_printf(&pr->buf, "ERROR: %s\n", err.msg);
    }
    int failed = print_flush(pr);
    if ((rc && err.kind != TDX_OK) || (damaged && !failed))
        cli_report(path, &err);
    else if (failed || rc)
        fprintf(stderr, "traceidx: write failed: %s\n", strerror(errno));
    tdx_index_close(&ix);
    return rc || failed || damaged ? TDX_EXIT_FAIL : TDX_EXIT_OK;
}

int cmd_dump(int argc, char **argv) {
    const char *path = NULL;
    int jobs = tdx_ncpus(), jr;
    bool events = false, quiet = false, footprint = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(dump_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(argv[i], "--events")) {
            events = true;
        } else if (!strcmp(argv[i], "--footprint")) {
            footprint = true;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = true;
        } else if ((jr = cli_jobs_arg(argc, argv, &i, &jobs)) != 0) {
            if (jr < 0) return cli_usage_error("dump", "-j needs a number from 1 to 1024");
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("dump", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("dump", "unexpected argument %s", argv[i]);
        }
    }
    if (!path) return cli_usage_error("dump", "need a TRACE");
    if (footprint && events)
        return cli_usage_error("dump", "--footprint and --events are two outputs: pick one");
    if (!events) return cmd_dump_raw(path, footprint);
    printer pr = {stdout, {0}, 0};
    if (cli_is_index_file(path)) return dump_index_events(path, &pr);
    tdx_source src;
    tdx_read_stats st;
    tdx_err err;
    int open_failed;
    /* progress lines would land among the events on a terminal */
    quiet = quiet || isatty(STDOUT_FILENO);
    int rc =
        cli_read_trace("dump", path, jobs, quiet, print_event, &pr, &src, &st, &err, &open_failed);
    if (open_failed) return TDX_EXIT_FAIL;
    if (rc && err.kind != TDX_EIO) tdx_buf_printf(&pr.buf, "ERROR: %s\n", err.msg);
    if (print_flush(&pr)) {
        fprintf(stderr, "traceidx: write failed: %s\n", strerror(errno));
        tdx_source_close(&src);
        return TDX_EXIT_FAIL;
    }
    if (rc) cli_report_trace(path, &src, &err);
    tdx_source_close(&src);
    return rc ? TDX_EXIT_FAIL : TDX_EXIT_OK;
}
