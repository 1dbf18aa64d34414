/* fuzz_trace.c: a fuzz target over traces in every form traceidx reads (binary, Go's text
 * format, Go test files, Go fuzz corpus files).
 *
 * Any input: no crash, hang or sanitizer report in any command, the same events and errors for
 * any thread count, and Go's text form of a trace (`dump`) a fixed point of `text2bin`. A trace
 * that builds: the same index for -j 1 and -j 2, every event read back from it as the trace
 * gives them, `info --verify` content with it, and every query and analysis from it equal to
 * what the commands compute from the trace itself (the views with and without small checkpoint
 * intervals, windows, goroutine and task views, the goroutine analysis). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

/* Bigger inputs take long to build for what they add (libFuzzer's -max_len stays below). */
#define MAX_INPUT (1u << 20)

static uint64_t mix(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603u; /* FNV-1a: picks ids and windows from the input */
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211u;
    return h;
}

/* `traceidx ARGS...` of the index and the reference command of the trace: the same status, and
 * the same bytes when both succeed. */
static void same(const char *what, int rq, const char *q, int rd, const char *d) {
    if (rq != rd) fz_fail("%s: exit %d from the index, %d from the trace", what, rq, rd);
    if (rq == 0 && !fz_same_file(q, d)) fz_fail("%s: %s differs from %s", what, q, d);
}

static void views(const char *ix, const char *trace, uint64_t h) {
    const char *q = fz_path("q.json"), *d = fz_path("d.json");
    same("proc view", fz_cmd(q, "query", ix, FZ_END), q,
         fz_cmd(d, "viewjson", "--quiet", trace, FZ_END), d);
    same("thread view", fz_cmd(q, "query", ix, "--view", "threads", FZ_END), q,
         fz_cmd(d, "viewjson", "--quiet", "--view", "thread", trace, FZ_END), d);
    char id[24], w[48], r[48];
    /* goroutines and tasks the corpus's traces have, and one chosen by the input */
    uint64_t ids[4] = {1, 2, 3, 4 + h % 61};
    for (int i = 0; i < 4; i++) {
        snprintf(id, sizeof id, "%" PRIu64, ids[i]);
        same("goroutine view", fz_cmd(q, "query", ix, "--goroutine", id, FZ_END), q,
             fz_cmd(d, "viewjson", "--quiet", "--goroutine", id, trace, FZ_END), d);
        snprintf(id, sizeof id, "%" PRIu64, ids[i] - 1);
        same("task view", fz_cmd(q, "query", ix, "--task", id, FZ_END), q,
             fz_cmd(d, "viewjson", "--quiet", "--focustask", id, trace, FZ_END), d);
        same("task goroutine view", fz_cmd(q, "query", ix, "--taskid", id, FZ_END), q,
             fz_cmd(d, "viewjson", "--quiet", "--taskid", id, trace, FZ_END), d);
    }
    /* windows of elapsed ns: the corpus's traces span tens to millions of ns */
    for (int i = 0; i < 3; i++, h = h * 6364136223846793005u + 1442695040888963407u) {
        uint64_t a = (h >> 8) % (i == 2 ? 10000000 : 400), b = a + (h >> 40) % (i ? 5000 : 40);
        snprintf(w, sizeof w, "%" PRIu64 ":%" PRIu64, a, b);
        snprintf(r, sizeof r, "%" PRIu64 ":%" PRIu64, a, b);
        same("window", fz_cmd(q, "query", ix, "--range", r, FZ_END), q,
             fz_cmd(d, "viewjson", "--quiet", "--window", w, trace, FZ_END), d);
        same("thread window", fz_cmd(q, "query", ix, "--range", r, "--view", "threads", FZ_END), q,
             fz_cmd(d, "viewjson", "--quiet", "--window", w, "--view", "thread", trace, FZ_END), d);
    }
}

static void analyses(const char *ix, const char *trace, bool intact) {
    const char *q = fz_path("q.txt"), *d = fz_path("d.txt");
    if (intact) /* (of a damaged trace, only the index has Go's summary) */
        same("goroutine analysis", fz_cmd(q, "goroutines", ix, "--json", FZ_END), q,
             fz_cmd(d, "goroutines", trace, "--json", "--quiet", FZ_END), d);
    /* the rest is read from the index alone: no crash, and an answer (mmu's may be that the
     * trace has no GOMAXPROCS to measure against: exit 1) */
    static const char *const cmds[][5] = {
        {"info", "--json"},
        {"ranges"},
        {"tasks"},
        {"tasks", "--json"},
        {"tasks", "--id", "1", "--json"},
        {"tasks", "--logtext", "a", "--events"},
        {"tasks", "--incomplete", "--events"},
        {"regions", "--json"},
        {"regions", "--latmin", "0", "--json"},
        {"regions", "--type", "", "--sort", "Unknown time"},
        {"mmu"},
        {"mmu", "--json"},
        {"mmu", "--window", "1us", "--json"},
        {"pprof", "net", "--json"},
        {"pprof", "sync", "--top", "5"},
        {"pprof", "syscall", "--json"},
        {"pprof", "sched", "--json"},
        {"pprof", "sync", "--region", "", "--json"},
        {"pprof", "sched", "--latmin", "0", "--json"},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        int rc =
            cmds[i][1] && strcmp(cmds[i][0], "pprof") == 0
                ? fz_cmd(q, "pprof", cmds[i][1], ix, cmds[i][2], cmds[i][3], cmds[i][4], FZ_END)
                : fz_cmd(q, cmds[i][0], ix, cmds[i][1], cmds[i][2], cmds[i][3], cmds[i][4], FZ_END);
        /* (mmu may find no GOMAXPROCS; tasks --id, no task 1) */
        if (rc != 0 && (rc != 1 || (strcmp(cmds[i][0], "mmu") != 0 &&
                                    strcmp(cmds[i][1] ? cmds[i][1] : "", "--id") != 0)))
            fz_fail("%s %s of a fresh index: exit %d", cmds[i][0], ix, rc);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > MAX_INPUT) return 0;
    const char *trace = fz_path("in.trace");
    fz_write(trace, data, size);
    uint64_t h = mix(data, size);

    /* The events and the error, whatever the thread count. */
    const char *e1 = fz_path("events1.txt"), *e2 = fz_path("events2.txt");
    int d1 = fz_cmd(e1, "dump", "--events", "--quiet", "-j", "1", trace, FZ_END);
    int d2 = fz_cmd(e2, "dump", "--events", "--quiet", "-j", "2", trace, FZ_END);
    if (d1 != d2 || !fz_same_file(e1, e2))
        fz_fail("dump --events -j 1 and -j 2 differ (exit %d, %d): %s %s", d1, d2, e1, e2);
    int v1 = fz_cmd(NULL, "validate", "--quiet", "-j", "1", trace, FZ_END);
    if ((v1 == 0) != (d1 == 0)) fz_fail("validate exits %d where dump --events exits %d", v1, d1);

    /* Go's text form of a current trace is a fixed point: written back by text2bin and dumped
     * again, it is the same text. (Not the same events: the text holds a varint's value, not
     * its bytes, and a batch's size as its header gave it; a trace with a longer than needed
     * varint reads back with its batch sizes off.) */
    const char *txt = fz_path("dump.txt"), *bin = fz_path("back.trace");
    if (d1 == 0 && fz_cmd(txt, "dump", "--quiet", trace, FZ_END) == 0) {
        const char *txt2 = fz_path("dump2.txt");
        if (fz_cmd(NULL, "text2bin", txt, "-o", bin, FZ_END) != 0)
            fz_fail("text2bin refuses dump's text: %s", txt);
        int t2 = fz_cmd(txt2, "dump", "--quiet", bin, FZ_END);
        if (t2 != 0 || !fz_same_file(txt, txt2))
            fz_fail("dump's text read back and dumped differs (exit %d): %s %s", t2, txt, txt2);
    }

    /* The footprint reads the trace as dump's text form does: both succeed or both fail. */
    int raw = fz_cmd(NULL, "dump", "--quiet", trace, FZ_END);
    int fp = fz_cmd(NULL, "dump", "--footprint", trace, FZ_END);
    if (raw != fp) fz_fail("dump exits %d, dump --footprint %d", raw, fp);

    /* The index, whatever the thread count; a damaged trace with --partial. */
    const char *a = fz_path("a.tidx"), *b = fz_path("b.tidx"), *c = fz_path("c.tidx");
    fz_remove(a);
    fz_remove(b);
    fz_remove(c);
    const char *partial = d1 ? "--partial" : "--quiet";
    int b1 = fz_cmd(NULL, "build", "--quiet", partial, "-j", "1", "-o", a, trace, FZ_END);
    int b2 = fz_cmd(NULL, "build", "--quiet", partial, "-j", "2", "-o", b, trace, FZ_END);
    if (b1 != b2) fz_fail("build -j 1 exits %d, -j 2 exits %d", b1, b2);
    if (b1 != 0) {
        if (d1 == 0) fz_fail("a trace that validates does not build (exit %d)", b1);
        return 0;
    }
    if (!fz_same_file(a, b)) fz_fail("build -j 1 and -j 2 differ: %s %s", a, b);
    if (fz_cmd(NULL, "info", "--verify", "-j", "2", a, FZ_END) != 0)
        fz_fail("info --verify refuses a fresh index: %s", a);
    if (d1 == 0) {
        const char *ei = fz_path("events-ix.txt");
        if (fz_cmd(ei, "dump", "--events", a, FZ_END) != 0 || !fz_same_file(ei, e1))
            fz_fail("the index's events differ from the trace's: %s %s", ei, e1);
    }
    views(a, trace, h);
    analyses(a, trace, d1 == 0);

    /* Checkpoints every few events: the same answers from many more restored states. */
    char every[8];
    snprintf(every, sizeof every, "%u", 1 + (unsigned)(h >> 56) % 16);
    if (fz_cmd(NULL, "build", "--quiet", partial, "-j", "2", "--checkpoint-every", every, "-o", c,
               trace, FZ_END) != 0)
        fz_fail("build --checkpoint-every %s fails where the default builds", every);
    views(c, trace, h >> 3);
    return 0;
}
