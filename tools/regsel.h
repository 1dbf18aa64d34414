/* regsel.h: the region selection of `regions --type ...` and `pprof --region ...` (go tool
 * trace's /userregion filter): its options, Go's name of it, and the pass that finds them. */
#ifndef CLI_REGSEL_H
#define CLI_REGSEL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/mem.h"
#include "index/analysis/gostats.h"
#include "index/format/reader.h"

typedef struct cli_regsel {
    const char *type; /* NULL: any type */
    bool has_pc;
    uint64_t pc;
    int64_t latmin, latmax; /* -1: no bound */
} cli_regsel;

/* An empty selection (every region). */
void cli_regsel_init(cli_regsel *s);
/* Takes argv[*i] when it is one of the selection's options (type_opt TYPE, --pc PC, --latmin
 * DUR, --latmax DUR), with its value (*i is moved past it): 1; 0 when it is none of them;
 * TDX_EXIT_USAGE + 1 after a usage error of command cmd was printed. */
int cli_regsel_arg(cli_regsel *s, const char *cmd, const char *type_opt, int argc, char **argv,
                   int *i);
/* Whether any option was given. */
bool cli_regsel_any(const cli_regsel *s);
/* Go's name of the filter ("T" @ 0x4a1b2c (latency >= 1ms) ...), appended to o. */
void cli_regsel_name(const cli_regsel *s, tdx_buf *o);
/* One pass over every event of the index: each selected region, as it ends, to fn (the latency
 * bounds applied). *gs (freed by the caller, also on failure) holds the strings the statistics
 * name. 0, or -1 once reported (progress on stderr unless quiet). */
int cli_regsel_pass(tdx_index *ix, const cli_regsel *s, bool quiet, tdx_gostats_region_fn fn,
                    void *ctx, tdx_gostats **gs);

#endif
