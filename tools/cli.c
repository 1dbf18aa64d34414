/* cli.c: shared helpers of the traceidx subcommands. */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/gofmt.h"
#include "core/spec.h"

void cli_report(const char *file, const tdx_err *err) {
    if (err->offset != TDX_NO_OFFSET)
        fprintf(stderr, "traceidx: %s: offset %llu: %s\n", file, (unsigned long long)err->offset, err->msg);
    else
        fprintf(stderr, "traceidx: %s: %s\n", file, err->msg);
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "traceidx %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nRun 'traceidx %s --help' for usage.\n", cmd);
    va_end(ap);
    return TDX_EXIT_USAGE;
}

bool cli_is_help(const char *a) { return !strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help"); }

int cli_parse_jobs(const char *s, int *jobs) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 1 || v > 1024) return -1;
    *jobs = (int)v;
    return 0;
}

int cli_open_trace(const char *path, tdx_source *src) {
    tdx_err err;
    if (tdx_source_open_v2(src, path, &err)) {
        cli_report(path, &err);
        return -1;
    }
    return 0;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_init(cli_progress *p, const char *what, bool quiet) {
    memset(p, 0, sizeof *p);
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->start = p->last = cli_now();
    p->what = what;
}

void cli_progress_update(void *ctx, uint64_t done, uint64_t total, uint64_t events) {
    cli_progress *p = ctx;
    if (!p->enabled) return;
    double now = cli_now();
    if (now - p->last < 0.2 && done < total) return;
    p->last = now;
    double el = now - p->start, mb = (double)done / 1e6;
    double rate = el > 0 ? mb / el : 0, evs = el > 0 ? (double)events / el : 0;
    double eta = rate > 0 && total > done ? ((double)(total - done) / 1e6) / rate : 0;
    fprintf(stderr, "\r%s: %.0f/%.0f MB  %.1fM events  %.0f MB/s  %.1fM events/s  ETA %.0fs   ",
            p->what, mb, (double)total / 1e6, (double)events / 1e6, rate, evs / 1e6, eta);
}

void cli_progress_end(cli_progress *p) {
    if (p->enabled) fprintf(stderr, "\r%80s\r", "");
}

void cli_duration(char *buf, size_t cap, int64_t ns) { tdx_go_duration(buf, cap, ns); }
