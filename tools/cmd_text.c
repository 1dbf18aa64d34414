/* cmd_text.c: `traceidx text2bin`, and the raw forms of `traceidx dump` (the text format, and
 * --footprint). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/footprint.h"
#include "core/pdqsort.h"
#include "core/spec.h"
#include "core/textfmt.h"
#include "index/common/atomic_file.h"

static const char text2bin_help[] =
    "usage: traceidx text2bin IN -o OUT\n\n"
    "Converts a trace in Go's text format into the binary wire format, byte for byte as Go's\n"
    "test harness does. IN may be a plain text trace (starting with \"Trace Go1.N\") or a Go test\n"
    "file with \"-- expect --\" and \"-- trace --\" sections. OUT is written atomically (a\n"
    "device or FIFO in place); \"-\" is standard output.\n";

int cmd_text2bin(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(text2bin_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(argv[i], "-o")) {
            if (++i >= argc || !*argv[i])
                return cli_usage_error("text2bin", "-o needs a file name");
            out = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("text2bin", "unknown option %s", argv[i]);
        } else if (!in) {
            in = argv[i];
        } else {
            return cli_usage_error("text2bin", "unexpected argument %s", argv[i]);
        }
    }
    if (!in || !out) return cli_usage_error("text2bin", "need IN and -o OUT");
    tdx_source src;
    tdx_err err;
    if (tdx_source_open(&src, in, &err)) {
        cli_report_trace_open(in, &err);
        return TDX_EXIT_FAIL;
    }
    if (src.kind == TDX_SRC_BINARY) {
        /* Neither text nor fuzz file: a binary trace, or something else the header check names. */
        int version;
        if (tdx_header_parse(src.data, src.size, &version, &err))
            cli_report_trace_open(in, &err);
        else
            fprintf(stderr, "traceidx: %s: already a binary trace\n", in);
        tdx_source_close(&src);
        return TDX_EXIT_FAIL;
    }
    if (strcmp(out, "-") != 0 && cli_refuse_own_input(out, in)) {
        tdx_source_close(&src);
        return TDX_EXIT_FAIL;
    }
    int rc = TDX_EXIT_OK;
    if (!strcmp(out, "-")) {
        if (fwrite(src.data, 1, src.size, stdout) != src.size || fflush(stdout)) {
            fprintf(stderr, "traceidx: write failed: %s\n", strerror(errno));
            rc = TDX_EXIT_FAIL;
        }
    } else {
        /* Written and renamed in one call: an interruption waits until the file is in place or
         * removed. */
        cli_hold_interrupts();
        int wrc = tdx_write_file_atomic(out, src.data, src.size, &err);
        cli_remove_on_signal(NULL);
        if (wrc) {
            cli_report(out, &err);
            rc = TDX_EXIT_FAIL;
        }
    }
    tdx_source_close(&src);
    return rc;
}

/* ---- dump --footprint: go tool trace -d=footprint ---- */

/* Go's %.2f of a share, NaN spelled as Go spells it. */
static void pct(char *b, size_t n, double v) {
    if (v != v)
        snprintf(b, n, "NaN%%");
    else
        snprintf(b, n, "%.2f%%", v);
}

/* The table as Go's tabwriter (minwidth 3, padding 2, spaces) lays it out: every type, the
 * largest first, in the order Go's unstable sort leaves equal ones. */
static int print_footprint(const tdx_footprint *fp, FILE *f) {
    enum { ROWS = 2 + 256, COLS = 5, CELL = 32 };
    char cells[ROWS][COLS][CELL]; /* (41 kB) */
    int64_t keys[256];
    uint32_t types[256];
    for (uint32_t t = 0; t < 256; t++) keys[t] = -(int64_t)fp->bytes[t], types[t] = t;
    tdx_pdqsort(keys, types, 256);
    static const char *const head[2][COLS] = {{"Event", "Bytes", "%", "Count", "%"},
                                              {"-", "-", "-", "-", "-"}};
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < COLS; c++) snprintf(cells[r][c], CELL, "%s", head[r][c]);
    unsigned known = tdx_spec_count(fp->version);
    for (int i = 0; i < 256; i++) {
        uint32_t t = types[i];
        char(*row)[CELL] = cells[2 + i];
        const char *name = t < known && tdx_specs[t].name ? tdx_specs[t].name : "";
        if (t >= known)
            snprintf(row[0], CELL, "<unknown (%u)>", t);
        else
            snprintf(row[0], CELL, "%s", name);
        snprintf(row[1], CELL, "%" PRIu64, fp->bytes[t]);
        pct(row[2], CELL, (double)fp->bytes[t] / (double)fp->total * 100);
        snprintf(row[3], CELL, "%" PRIu64, fp->count[t]);
        pct(row[4], CELL, (double)fp->count[t] / (double)fp->events * 100);
    }
    size_t width[COLS - 1];
    for (int c = 0; c < COLS - 1; c++) {
        width[c] = 3;
        for (int r = 0; r < ROWS; r++)
            if (strlen(cells[r][c]) + 2 > width[c]) width[c] = strlen(cells[r][c]) + 2;
    }
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS - 1; c++) fprintf(f, "%-*s", (int)width[c], cells[r][c]);
        fprintf(f, "%s\n", cells[r][COLS - 1]);
    }
    return ferror(f) ? -1 : 0;
}

int cmd_dump_raw(const char *path, bool footprint);

int cmd_dump_raw(const char *path, bool footprint) {
    tdx_source src;
    tdx_err err;
    if (tdx_source_open(&src, path, &err)) {
        cli_report_trace_open(path, &err);
        return TDX_EXIT_FAIL;
    }
    int version;
    if (src.kind == TDX_SRC_BINARY && !tdx_header_parse(src.data, src.size, &version, &err) &&
        tdx_version_is_v1(version)) {
        /* Go's text format has no form for the old events: say where they can be read. */
        fprintf(stderr,
                "traceidx: %s: a Go 1.%d trace: dump prints the wire events of Go 1.22 and later "
                "traces only; dump --events reads this one\n",
                path, version);
        tdx_source_close(&src);
        return TDX_EXIT_FAIL;
    }
    int rc = TDX_EXIT_OK;
    int failed;
    if (footprint) {
        tdx_footprint fp;
        failed = tdx_footprint_count(src.data, src.size, src.kind == TDX_SRC_BINARY, &fp, &err);
        if (!failed && print_footprint(&fp, stdout)) failed = 1;
    } else {
        failed = tdx_binary_to_text(src.data, src.size, stdout, &err);
    }
    if (failed < 0) {
        fflush(stdout);
        cli_report_trace_open(path, &err);
        rc = TDX_EXIT_FAIL;
    } else if (failed || fflush(stdout)) {
        fprintf(stderr, "traceidx: write failed: %s\n", strerror(errno));
        rc = TDX_EXIT_FAIL;
    }
    tdx_source_close(&src);
    return rc;
}
