/* commands.c: the table of traceidx's subcommands: each one's name, entry point and summary. */
#include <string.h>

#include "cli.h"

static const cli_command commands[] = {
    {"serve", cmd_serve, "go tool trace's web UI, answered from the index (builds it if needed)"},
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

const cli_command *cli_find_command(const char *name) {
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(name, commands[i].name)) return &commands[i];
    return NULL;
}

void cli_list_commands(FILE *f) {
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}
