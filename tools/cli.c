/* cli.c: shared helpers of the traceidx subcommands. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/gofmt.h"
#include "core/regfile.h"
#include "core/spec.h"
#include "index/format/evcodec.h"
#include "index/format/evpipe.h"

void cli_report(const char *file, const tdx_err *err) {
    if (err->offset != TDX_NO_OFFSET)
        fprintf(stderr, "traceidx: %s: offset %llu: %s\n", file, (unsigned long long)err->offset,
                err->msg);
    else
        fprintf(stderr, "traceidx: %s: %s\n", file, err->msg);
}

void cli_report_trace(const char *file, const tdx_source *src, const tdx_err *err) {
    uint64_t line = err->offset != TDX_NO_OFFSET ? tdx_source_line(src, err->offset) : 0;
    if (line)
        fprintf(stderr, "traceidx: %s: line %llu: %s\n", file, (unsigned long long)line, err->msg);
    else if (src->kind == TDX_SRC_FUZZ && err->offset != TDX_NO_OFFSET)
        fprintf(stderr, "traceidx: %s: offset %llu of its []byte value: %s\n", file,
                (unsigned long long)err->offset, err->msg);
    else
        cli_report(file, err);
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

bool cli_is_help(const char *a) {
    return !strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help");
}

int cli_parse_jobs(const char *s, int *jobs) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 1 || v > 1024) return -1;
    *jobs = (int)v;
    return 0;
}

int cli_parse_u64(const char *s, uint64_t *v) {
    char *end;
    errno = 0;
    if (!*s || *s == '-' || *s == '+') return -1;
    unsigned long long x = strtoull(s, &end, 10);
    if (*end || errno) return -1;
    *v = x;
    return 0;
}

int cli_parse_hex(const char *s, uint64_t *v) {
    char *end;
    errno = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
    if (!isxdigit((unsigned char)*s)) return -1;
    unsigned long long x = strtoull(s, &end, 16);
    if (*end || errno) return -1;
    *v = x;
    return 0;
}

int cli_parse_bytes(const char *s, uint64_t *v) {
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9') return -1;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno) return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    default:
        break;
    }
    if (shift) {
        end++;
        if (*end == 'i') end++;
        if (*end == 'B') end++;
    } else if (*end == 'B') {
        end++;
    }
    if (*end || (x && (x << shift) >> shift != x)) return -1;
    *v = (uint64_t)x << shift;
    return 0;
}

int cli_parse_duration(const char *s, int64_t *out) {
    if (!*s) return -1;
    char *end;
    errno = 0;
    long long whole = strtoll(s, &end, 10);
    if (!*end && errno == 0 && s[0] != '+' && s[0] != '-') {
        if (whole < 0) return -1;
        *out = whole;
        return 0;
    }
    double total = 0;
    const char *p = s;
    while (*p) {
        /* Digits with at most one point, as Go takes them (strtod alone would also take an
         * exponent, hex or "inf"). */
        char num[64];
        size_t n = 0, digits = 0, points = 0;
        for (; (p[n] >= '0' && p[n] <= '9') || p[n] == '.'; n++) {
            if (p[n] == '.')
                points++;
            else
                digits++;
        }
        if (!digits || points > 1 || n >= sizeof num) return -1;
        memcpy(num, p, n);
        num[n] = 0;
        errno = 0;
        double v = strtod(num, &end);
        if (*end || errno) return -1;
        p += n;
        double unit;
        if (!strncmp(p, "ns", 2))
            unit = 1, p += 2;
        else if (!strncmp(p, "us", 2))
            unit = 1e3, p += 2;
        else if (!strncmp(p, "\xc2\xb5s", 3) || !strncmp(p, "\xce\xbcs", 3))
            unit = 1e3, p += 3;
        else if (!strncmp(p, "ms", 2))
            unit = 1e6, p += 2;
        else if (*p == 's')
            unit = 1e9, p += 1;
        else if (*p == 'm')
            unit = 60e9, p += 1;
        else if (*p == 'h')
            unit = 3600e9, p += 1;
        else
            return -1;
        total += v * unit;
    }
    if (total < 0 || total > 9.2e18) return -1;
    *out = (int64_t)(total + 0.5);
    return 0;
}

int cli_parse_i64(const char *s, int64_t *v) {
    char *end;
    errno = 0;
    if (!*s) return -1;
    long long x = strtoll(s, &end, 10);
    if (*end || errno) return -1;
    *v = x;
    return 0;
}

bool cli_is_index_file(const char *path) {
    uint8_t magic[8];
    return tdx_read_head(path, magic, sizeof magic) == 8 && tdx_is_index(magic, 8);
}

void cli_report_trace_open(const char *path, const tdx_err *err) {
    if (err->kind == TDX_EFORMAT && err->offset == 0 && cli_is_index_file(path)) {
        fprintf(stderr,
                "traceidx: %s: offset 0: a traceidx index, not a Go execution trace "
                "(info, query, ranges and dump --events read an index)\n",
                path);
        return;
    }
    cli_report(path, err);
}

void cli_damage_where(const tdx_index *ix, char *buf, size_t n) {
    buf[0] = '\0';
    if (ix->damage_off != TDX_NO_OFFSET)
        snprintf(buf, n, " at byte offset %" PRIu64, ix->damage_off);
}

int cli_refuse_own_input(const char *out, const char *in) {
    struct stat so, si;
    if (!in || stat(out, &so) || stat(in, &si) || !S_ISREG(so.st_mode) || so.st_dev != si.st_dev ||
        so.st_ino != si.st_ino)
        return 0;
    fprintf(stderr, "traceidx: %s: is the file being read (%s); refusing to overwrite it\n", out,
            in);
    return -1;
}

int cli_open_trace(const char *path, tdx_source *src) {
    tdx_err err;
    if (tdx_source_open_v2(src, path, &err)) {
        cli_report_trace_open(path, &err);
        return -1;
    }
    return 0;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double cli_peak_rss_mib(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) ? 0.0 : (double)ru.ru_maxrss / 1024.0;
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

void cli_progress_fraction(cli_progress *p, uint64_t done, uint64_t total, const char *then) {
    if (!p->enabled) return;
    double now = cli_now();
    if (now - p->last < 0.2 && done < total && done && !then) return;
    p->last = now;
    double f = total ? (double)done / (double)total : 1.0, el = now - p->start;
    if (f > 1) f = 1;
    if (then) {
        fprintf(stderr, "\r%s: %.0f%%  %s%20s", p->what, 100 * f, then, "");
    } else if (f > 0) {
        fprintf(stderr, "\r%s: %.0f%%  ETA %.0fs%20s", p->what, 100 * f, el / f - el, "");
    } else {
        fprintf(stderr, "\r%s: %.0f%%%20s", p->what, 100 * f, "");
    }
}

void cli_progress_end(cli_progress *p) {
    if (p->enabled) fprintf(stderr, "\r%100s\r", "");
}

void cli_scratch_beside(char *buf, size_t n) {
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, n, "%s/traceidx-scratch", tmp && *tmp ? tmp : "/tmp");
}

int cli_flush_out(tdx_buf *b, bool final) {
    if (!final && b->n < (1u << 16)) return 0;
    int rc = b->n && fwrite(b->v, 1, b->n, stdout) != b->n ? -1 : 0;
    if (!rc && final && fflush(stdout)) rc = -1;
    if (rc) fprintf(stderr, "traceidx: write failed: %s\n", strerror(errno));
    b->n = 0;
    return rc;
}

size_t cli_text_width(const char *s, size_t n) {
    size_t w = 0;
    for (size_t i = 0; i < n; i++) w += ((unsigned char)s[i] & 0xc0) != 0x80;
    return w;
}

const uint8_t *cli_index_section(tdx_index *ix, uint32_t kind, const char *what, uint64_t *len) {
    if (kind >= TDX_SEC_COUNT_ || !ix->sec[kind].present) {
        fprintf(stderr,
                "traceidx: %s: the index holds no %s (an earlier traceidx built it): rebuild it "
                "with `traceidx build`\n",
                ix->path, what);
        return NULL;
    }
    tdx_err err;
    tdx_err_clear(&err);
    const uint8_t *p = tdx_index_section(ix, kind, len, &err);
    if (!p) cli_report(ix->path, &err);
    return p;
}

void cli_hist_text(tdx_buf *o, const tdx_timehist *h) {
    if (!h->count) return;
    uint64_t most = 0;
    for (int b = 0; b < TDX_HIST_BUCKETS; b++)
        if (h->bucket[b] > most) most = h->bucket[b];
    char d[64];
    for (int b = h->min; b <= h->max + 1; b++) {
        cli_duration(d, sizeof d, tdx_timehist_bucket_min(b));
        tdx_buf_printf(o, "  ");
        cli_pad(o, d, strlen(d), 12, true);
        if (b <= h->max) {
            int bar = most ? (int)(h->bucket[b] * 40 / most) : 0; /* (a crafted index: 0) */
            tdx_buf_printf(o, "  %.*s%*s  %" PRIu64, bar,
                           "########################################", 40 - bar, "", h->bucket[b]);
        }
        tdx_buf_printf(o, "\n");
    }
}

void cli_hist_json(tdx_buf *o, const tdx_timehist *h) {
    tdx_buf_printf(o, "[");
    for (int b = h->min; h->count && b <= h->max; b++)
        tdx_buf_printf(
            o, "%s{\"min_ns\": %" PRId64 ", \"max_ns\": %" PRId64 ", \"count\": %" PRIu64 "}",
            b > h->min ? ", " : "", tdx_timehist_bucket_min(b), tdx_timehist_bucket_min(b + 1),
            h->bucket[b]);
    tdx_buf_printf(o, "]");
}

void cli_pad(tdx_buf *o, const char *s, size_t n, size_t width, bool right_align) {
    size_t w = cli_text_width(s, n);
    int fill = w < width ? (int)(width - w) : 0;
    if (right_align) tdx_buf_printf(o, "%*s", fill, "");
    tdx_buf_append(o, s, n);
    if (!right_align) tdx_buf_printf(o, "%*s", fill, "");
}

void cli_duration(char *buf, size_t cap, int64_t ns) {
    tdx_go_duration(buf, cap, ns);
}

int cli_jobs_arg(int argc, char **argv, int *i, int *jobs) {
    const char *a = argv[*i];
    if (strncmp(a, "-j", 2) != 0) return 0;
    const char *v = a[2] ? a + 2 : (*i + 1 < argc ? argv[++*i] : "");
    return cli_parse_jobs(v, jobs) ? -1 : 1;
}

int cli_open_index(const char *path, tdx_index *ix, bool full_check) {
    tdx_err err;
    uint8_t magic[8] = {0};
    ssize_t got = tdx_read_head(path, magic, sizeof magic);
    bool is_index = got == 8 && tdx_is_index(magic, 8);
    if (is_index || got < 0) {
        if (tdx_index_open(ix, path, &err)) {
            cli_report(path, &err);
            return -1;
        }
        return 0;
    }
    /* A trace: use the index beside it, after checking it still describes this trace. */
    char *ipath = NULL;
    int rc = tdx_index_open_beside(ix, path, full_check, &ipath, &err);
    if (!rc) return 0;
    if (rc == TDX_BESIDE_MISSING)
        fprintf(stderr,
                "traceidx: %s: no index beside it (%s); create it with `traceidx build %s`\n", path,
                ipath, path);
    else
        cli_report(ipath ? ipath : path, &err);
    free(ipath);
    return -1;
}

int cli_index_beside(const char *path, tdx_index *ix) {
    char *ipath = NULL;
    tdx_err err;
    int rc = tdx_index_open_beside(ix, path, false, &ipath, &err);
    if (!rc) return 1;
    if (ipath && rc != TDX_BESIDE_MISSING)
        fprintf(stderr, "traceidx: %s: not using it (%s); reading %s instead\n", ipath, err.msg,
                path);
    free(ipath);
    return 0;
}

/* ---- interrupted writes ---- */

/* The CLI's process state: a signal handler can reach nothing else. */
static char victim[PATH_MAX];
static volatile sig_atomic_t victim_set;
static bool held; /* cli_hold_interrupts: the mask to restore is held_mask */
static sigset_t held_mask;
/* What removes the file: the interruptions, then the crash signals. */
static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

static void remove_victim(int sig) {
    if (victim_set) unlink(victim); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

void cli_hold_interrupts(void) {
    /* The crash signals too: one sent (kill -BUS) while the file is new waits for the handler
     * like the others; a real fault while held still ends the process, as it would have. */
    sigset_t s;
    sigemptyset(&s);
    for (size_t i = 0; i < sizeof caught / sizeof *caught; i++) sigaddset(&s, caught[i]);
    if (!held && pthread_sigmask(SIG_BLOCK, &s, &held_mask) == 0) held = true;
}

static void install_handlers(void) {
    static bool installed;
    if (installed) return;
    installed = true;
    for (size_t i = 0; i < sizeof caught / sizeof *caught; i++) {
        struct sigaction sa;
        /* A signal ignored from the start (nohup, a shell's background job) stays ignored. A crash
         * signal someone else handles (a sanitizer's report) stays theirs. SIGBUS is what a trace
         * truncated under its mapping gives. */
        bool crash = caught[i] != SIGINT && caught[i] != SIGTERM && caught[i] != SIGHUP;
        if (sigaction(caught[i], NULL, &sa) == 0 &&
            (sa.sa_handler == SIG_IGN || (crash && sa.sa_handler != SIG_DFL)))
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = remove_victim;
        sigemptyset(&sa.sa_mask);
        sigaction(caught[i], &sa, NULL);
    }
}

void cli_remove_on_signal(const char *path) {
    victim_set = 0;
    if (path && strlen(path) < sizeof victim) {
        memcpy(victim, path, strlen(path) + 1);
        victim_set = 1;
        install_handlers();
    }
    /* An interruption held since before the file existed is delivered now, to the handler. */
    if (held) {
        held = false;
        pthread_sigmask(SIG_SETMASK, &held_mask, NULL);
    }
}

int cli_read_trace(const char *cmd, const char *path, int jobs, bool quiet, tdx_emit_fn emit,
                   void *ectx, tdx_source *src, tdx_read_stats *st, tdx_err *err,
                   int *open_failed) {
    *open_failed = 0;
    if (cli_open_trace(path, src)) {
        *open_failed = 1;
        return -1;
    }
    cli_progress prog;
    cli_progress_init(&prog, cmd, quiet);
    tdx_read_opts o = {.jobs = jobs,
                       .emit = emit,
                       .emit_ctx = ectx,
                       .progress = cli_progress_update,
                       .progress_ctx = &prog,
                       .release_input = src->kind == TDX_SRC_BINARY};
    int rc = tdx_read_trace(src->data, src->size, src->version, &o, st, err);
    cli_progress_end(&prog);
    return rc;
}

int cli_index_events(tdx_index *ix, tdx_emit_fn emit, void *ctx, cli_progress *prog, tdx_err *err) {
    /* The blocks decode on a second thread, one ahead of the consumer (evpipe.h): decoding was
     * a fifth of such a pass (regions --type of the 256 MiB bench index: 5.2 -> 4.0 s). */
    tdx_evpipe *p = tdx_evpipe_start_blocks(ix);
    if (!p) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    uint64_t total = ix->nblocks ? tdx_index_block_first_event(ix, ix->nblocks - 1) +
                                       tdx_index_block_nevents(ix, ix->nblocks - 1)
                                 : 0;
    int rc = 0;
    size_t pieces = 0;
    for (;;) {
        const tdx_event *evs;
        size_t n;
        uint64_t first;
        int got = tdx_evpipe_next(p, &evs, &n, &first, err);
        if (got <= 0) {
            rc = got;
            break;
        }
        for (size_t i = 0; i < n && !rc; i++)
            if (emit(ctx, &evs[i], &ix->tabs)) rc = 1;
        if (rc) break;
        if (prog && ++pieces % TDX_RELEASE_EVERY == 0)
            cli_progress_fraction(prog, first + n, total, NULL);
    }
    tdx_evpipe_stop(p);
    if (!rc && tdx_index_strings_ok(ix, err)) rc = -1;
    return rc;
}
