/* traceidx.c: the command-line entry point; dispatches to the subcommands. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: traceidx <command> [arguments]\n\n"
               "traceidx indexes Go execution traces (Go 1.22-1.26, and Go 1.11-1.21 converted\n"
               "as current Go converts them) so that any time range turns into trace-viewer JSON\n"
               "quickly. TRACE arguments may be binary traces, Go's text format, Go test files\n"
               "(.test) or Go fuzz corpus files.\n\ncommands:\n");
    cli_list_commands(f);
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
    const cli_command *c = cli_find_command(name);
    if (c) {
        char *hargv[] = {(char *)name, "--help", NULL};
        return stdout_done(help ? c->run(2, hargv) : c->run(argc - 1, argv + 1));
    }
    if (help) argv[1] = (char *)name;
    fprintf(stderr, "traceidx: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return TDX_EXIT_USAGE;
}
