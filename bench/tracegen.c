/* tracegen.c: `tracegen` writes a synthetic but valid Go execution trace (format v2, Go 1.22-1.26)
 * of a busy Go HTTP service, of about a requested size, deterministically from a seed. The model
 * lives in tracegen_sched.c (runtime and workload), tracegen_emit.c (batches, generations) and
 * tracegen_code.c (functions, stacks, strings). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tracegen.h"

static const char usage_text[] =
    "usage: tracegen --size SIZE [--seed N] [--version 22|23|25|26] [--procs P] -o FILE\n\n"
    "Writes a valid Go execution trace of about SIZE bytes that looks like a busy Go service:\n"
    "GOMAXPROCS P (default 8) and 2-3 times as many threads, thousands of goroutines created,\n"
    "blocked (channels, select, mutexes, network, sleep, GC assists) and destroyed, netpoller,\n"
    "timer and sysmon wake-ups, fast and blocking syscalls with procs stolen, GC cycles with\n"
    "stop-the-world phases, assists and sweeping, user tasks, regions and logs, CPU samples and\n"
    "deep stacks. A generation per traced second (about 20 MB each). The output depends only on\n"
    "SIZE, seed, version, procs, generation length, idle goroutines and extra logs.\n\n"
    "  --size SIZE     bytes, with an optional suffix k, M, G (or KiB, MiB, GiB): powers of 1024;\n"
    "                  the trace stops at the first scheduling step past it (the first\n"
    "                  generation's tables make about 0.5 MB the smallest trace)\n"
    "  --seed N        workload seed (default 1)\n"
    "  --version V     trace format: 22, 23, 25 or 26 (Go 1.22 ... 1.26; default 25)\n"
    "  --procs P       GOMAXPROCS, 1-256 (default 8)\n"
    "  --gen-ms MS     traced milliseconds per generation, 25-10000 (default 1000; short\n"
    "                  generations give small test traces several of them)\n"
    "  --idle N        N more goroutines parked in network reads for the whole trace, as a\n"
    "                  server's idle connections: a status event each in every generation\n"
    "                  (default 0)\n"
    "  --logs N        N more trace.Log lines per request, each with a message of its own (a\n"
    "                  request id), as a chatty service writes them: strings that grow with\n"
    "                  the trace (0-64, default 0)\n"
    "  -o FILE         output; written to a temporary file in the same directory, then renamed\n"
    "  --quiet         no summary on stderr\n";

static int parse_size(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v <= 0) return -1;
    uint64_t mul = 1;
    if (*end) {
        switch (*end) {
        case 'k':
        case 'K':
            mul = 1ull << 10;
            break;
        case 'm':
        case 'M':
            mul = 1ull << 20;
            break;
        case 'g':
        case 'G':
            mul = 1ull << 30;
            break;
        case 'b':
        case 'B':
            mul = 1;
            break;
        default:
            return -1;
        }
        end++;
        if (*end == 'i' || *end == 'I') end++;
        if (*end == 'b' || *end == 'B') end++;
        if (*end) return -1;
    }
    double b = v * (double)mul;
    if (b < 1 || b > 1e15) return -1;
    *out = (uint64_t)b;
    return 0;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    uint64_t size = 0;
    long seed = 1, version = 25, procs = 8, gen_ms = 1000, idle = 0, logs = 0;
    const char *out = NULL;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (strcmp(a, "--size") != 0 && strcmp(a, "--seed") != 0 &&
                   strcmp(a, "--version") != 0 && strcmp(a, "--procs") != 0 &&
                   strcmp(a, "--gen-ms") != 0 && strcmp(a, "--idle") != 0 &&
                   strcmp(a, "--logs") != 0 && strcmp(a, "-o") != 0 && strcmp(a, "--output") != 0) {
            fprintf(stderr, "tracegen: unknown argument %s (see --help)\n", a);
            return 2;
        } else if (!v) {
            fprintf(stderr, "tracegen: %s needs a value (see --help)\n", a);
            return 2;
        } else if (!strcmp(a, "--size")) {
            if (parse_size(v, &size)) {
                fprintf(stderr, "tracegen: bad --size %s\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--seed")) {
            if (parse_int(v, 0, 0x7fffffffL, &seed)) {
                fprintf(stderr, "tracegen: bad --seed %s\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--version")) {
            if (parse_int(v, 22, 26, &version) || version == 24) {
                fprintf(stderr, "tracegen: --version must be 22, 23, 25 or 26\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--procs")) {
            if (parse_int(v, 1, 256, &procs)) {
                fprintf(stderr, "tracegen: --procs must be 1-256\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--gen-ms")) {
            if (parse_int(v, 25, 10000, &gen_ms)) {
                fprintf(stderr, "tracegen: --gen-ms must be 25-10000\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--idle")) {
            if (parse_int(v, 0, 10000000, &idle)) {
                fprintf(stderr, "tracegen: --idle must be 0-10000000\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--logs")) {
            if (parse_int(v, 0, 64, &logs)) {
                fprintf(stderr, "tracegen: --logs must be 0-64\n");
                return 2;
            }
            i++;
        } else { /* -o or --output: unknown arguments were rejected above */
            out = v;
            i++;
        }
    }
    if (!size || !out) {
        fprintf(stderr, "tracegen: --size and -o are required (see --help)\n");
        return 2;
    }

    static tg_sim sim;
    tg_sim *s = &sim;
    s->version = (int)version;
    s->procs = (int)procs;
    s->seed = (uint64_t)seed;
    s->target = size;
    s->gen_len = (uint64_t)gen_ms * TG_MS;
    s->idle = (uint32_t)idle;
    s->logs = (uint32_t)logs;

    /* Write next to the destination, then rename: readers never see a partial trace. */
    size_t tl = strlen(out) + 32;
    char *tmp = tg_xmalloc(tl);
    snprintf(tmp, tl, "%s.tmp.%ld", out, (long)getpid());
    s->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0644);
    if (s->fd < 0 && errno == EINVAL) /* no direct I/O here (tmpfs) */
        s->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (s->fd < 0) tg_die("%s: %s", tmp, strerror(errno));

    double t0 = now_sec();
    char hdr[17];
    snprintf(hdr, sizeof hdr, "go 1.%02ld trace", version);
    memset(hdr + 13, 0, 3);
    s->outcap = 8u << 20;
    tg_out_start(s);
    tg_out_write(s, hdr, 16);
    tg_sim_init(s);
    tg_sim_run(s);
    tg_out_finish(s);
    if (close(s->fd)) {
        unlink(tmp);
        tg_die("%s: %s", tmp, strerror(errno));
    }
    if (rename(tmp, out)) {
        int e = errno;
        unlink(tmp);
        tg_die("rename %s: %s", out, strerror(e));
    }
    double dt = now_sec() - t0;
    if (!quiet)
        fprintf(stderr,
                "tracegen: %s: %" PRIu64 " bytes, go 1.%ld, %" PRIu64 " generations, %" PRIu64
                " events, %u threads, %" PRIu64 " goroutines created, %.2f s traced; "
                "%.2f s, %.0f MB/s\n",
                out, s->written, version, s->gens_written, s->events, s->nms, s->created,
                (double)(s->end_t - s->t0) / TG_FREQ, dt, s->written / dt / 1e6);
    if (getenv("TRACEGEN_DEBUG")) {
        double traced = (double)(s->end_t - s->t0) / TG_FREQ;
        fprintf(stderr,
                "tracegen: debug: %.1f MB/traced s, proc utilisation %.0f%%, %" PRIu64
                " goroutines created, %" PRIu64 " live, %" PRIu64 " GCs, %" PRIu64
                " steals, %" PRIu64 " blocking syscalls, %u threads\n",
                s->written / traced / 1e6, 100.0 * s->busy / TG_FREQ / traced / s->procs,
                s->created, (uint64_t)s->live_gs, s->gcs, s->steals, s->blocking_syscalls, s->nms);
    }
    free(tmp);
    return 0;
}
