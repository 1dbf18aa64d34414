/* traceidx.c: the command-line entry point; dispatches to the subcommands. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} commands[] = {
    {"build", cmd_build, "index a trace into a compact, checksummed file (TRACE.tidx)"},
    {"query", cmd_query, "viewer JSON of a time window, split range or view, from an index"},
    {"ranges", cmd_ranges, "list the split ranges go tool trace would offer"},
    {"goroutines", cmd_goroutines,
     "go tool trace's goroutine analysis: where goroutines' time went"},
    {"tasks", cmd_tasks, "go tool trace's user tasks: types, duration histograms, slowest"},
    {"regions", cmd_regions, "go tool trace's user regions: by type and start, histograms"},
    {"mmu", cmd_mmu, "go tool trace's minimum mutator utilization: the GC's worst windows"},
    {"pprof", cmd_pprof, "go tool trace's pprof-style profiles: net, sync, syscall, sched"},
    {"info", cmd_info, "describe an index: span, generations, events, goroutines, size"},
    {"validate", cmd_validate, "check a trace the way Go's parser does and summarise it"},
    {"dump", cmd_dump, "print a trace in Go's text format, or its ordered events (--events)"},
    {"text2bin", cmd_text2bin, "convert a text trace or Go test file to a binary trace"},
    {"viewjson", cmd_viewjson, "print go tool trace's viewer JSON (or split ranges) for a trace"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: traceidx <command> [arguments]\n\n"
               "traceidx indexes Go execution traces (Go 1.22-1.26, and Go 1.11-1.21 converted\n"
               "as current Go converts them) so that any time range turns into trace-viewer JSON\n"
               "quickly. TRACE arguments may be binary traces, Go's text format, Go test files\n"
               "(.test) or Go fuzz corpus files.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'traceidx <command> --help' for a command's options.\n");
}

/* Output that did not reach stdout (a full disk, a closed pipe's EPIPE) is a failure, whatever
 * the command: exit's own flush would drop the error. */
static int stdout_done(int rc) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
    if (rc == TDX_EXIT_OK) fprintf(stderr, "traceidx: write failed: %s\n", strerror(errno));
    return rc == TDX_EXIT_OK ? TDX_EXIT_FAIL : rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return TDX_EXIT_USAGE;
    }
    /* "help CMD" is "CMD --help" (each command prints its own). */
    bool help = cli_is_help(argv[1]);
    const char *name = help && argc > 2 ? argv[2] : argv[1];
    if (help && argc <= 2) {
        usage(stdout);
        return stdout_done(TDX_EXIT_OK);
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(name, commands[i].name)) {
            char *hargv[] = {(char *)name, "--help", NULL};
            return stdout_done(help ? commands[i].run(2, hargv)
                                    : commands[i].run(argc - 1, argv + 1));
        }
    if (help) argv[1] = (char *)name;
    fprintf(stderr, "traceidx: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return TDX_EXIT_USAGE;
}
