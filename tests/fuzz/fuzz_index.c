/* fuzz_index.c: a fuzz target over index files: every command that reads one, on any bytes.
 *
 * Linked with trust_all.c, so that the checksums pass whatever the bytes and the parsers behind
 * them (section table, block directory, event blocks, views, summary, strings, analyses) meet
 * arbitrary input. Properties: no crash, hang or sanitizer report; an error is exit status 1;
 * `info --verify` answers the same for any thread count, and an index it accepts answers every
 * command that any intact index of this format answers (those of sections added since, PPROF
 * on, may ask for a rebuild); `pprof` writes a profile exactly when it gives its JSON. */
#include <stdio.h>

#include "harness.h"

#define MAX_INPUT (4u << 20)

/* Commands every index answers (status 0) when it is intact. */
static const char *const answered[][5] = {
    {"info"},
    {"info", "--json"},
    {"ranges", "--json"},
    {"query"},
    {"query", "--view", "threads"},
    {"query", "--range", "0:1000"},
    {"query", "--range", "100:+1us", "--view", "threads"},
    {"query", "--start", "2", "--end", "40"},
    {"goroutines"},
    {"goroutines", "--json"},
    {"tasks", "--json"},
};

/* Commands whose answer depends on what the trace holds (an id, a split range, a name; mmu
 * needs a GOMAXPROCS) or on sections added since the format's version (an index from before
 * them asks to be rebuilt). */
static const char *const asked[][5] = {
    {"dump", "--events"}, /* (an index of a damaged trace ends with its ERROR line: exit 1) */
    {"regions"},
    {"regions", "--latmin", "0", "--json"},
    {"regions", "--type", "", "--sort", "Unknown time"},
    {"mmu", "--json"},
    {"mmu", "--window", "1us"},
    {"query", "--range", "#0"},
    {"query", "--goroutine", "1"},
    {"query", "--goroutine", "3"},
    {"query", "--task", "1"},
    {"query", "--taskid", "1"},
    {"query", "--taskid", "0"},
    {"goroutines", "--name", "main.main"},
    {"goroutines", "--name", "", "--sort", "Execution time"},
    {"tasks", "--type", "task0"},
    {"tasks", "--id", "1"},
    {"tasks", "--id", "0", "--json"},
    {"tasks", "--logtext", "a", "--events"},
    {"tasks", "--complete", "--latmin", "1us", "--events"},
};

static const char *const profiles[] = {"net", "sync", "syscall", "sched"};

static int run(const char *out, const char *const a[5], const char *ix) {
    return fz_cmd(out, a[0], ix, a[1], a[2], a[3], a[4], FZ_END);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > MAX_INPUT) return 0;
    const char *ix = fz_path("in.tidx"), *out = fz_path("out");
    fz_write(ix, data, size);
    int v1 = fz_cmd(NULL, "info", "--verify", "-j", "1", ix, FZ_END);
    int v2 = fz_cmd(NULL, "info", "--verify", "-j", "2", ix, FZ_END);
    if (v1 != v2) fz_fail("info --verify -j 1 exits %d, -j 2 exits %d: %s", v1, v2, ix);
    if (v1 != 0 && v1 != 1) fz_fail("info --verify exits %d", v1);
    for (size_t i = 0; i < sizeof answered / sizeof *answered; i++) {
        int rc = run(out, answered[i], ix);
        if (rc != 0 && rc != 1)
            fz_fail("%s %s exits %d", answered[i][0], answered[i][1] ? answered[i][1] : "", rc);
        if (v1 == 0 && rc != 0)
            fz_fail("an index info --verify accepts: %s %s exits %d", answered[i][0],
                    answered[i][1] ? answered[i][1] : "", rc);
    }
    for (size_t i = 0; i < sizeof asked / sizeof *asked; i++) {
        int rc = run(out, asked[i], ix);
        if (rc != 0 && rc != 1) fz_fail("%s %s exits %d", asked[i][0], asked[i][1], rc);
    }
    for (size_t i = 0; i < sizeof profiles / sizeof *profiles; i++) {
        int rc = fz_cmd(NULL, "pprof", profiles[i], ix, "-o", out, FZ_END);
        int rj = fz_cmd(out, "pprof", profiles[i], ix, "--json", FZ_END);
        if (rc != rj || (rc != 0 && rc != 1))
            fz_fail("pprof %s exits %d, with --json %d (verify %d)", profiles[i], rc, rj, v1);
    }
    /* a region profile reads the events twice: its own errors, the same exits */
    int rr = fz_cmd(out, "pprof", "sync", ix, "--region", "", "--latmin", "0", "--json", FZ_END);
    if (rr != 0 && rr != 1) fz_fail("pprof sync --region exits %d", rr);
    return 0;
}
