/* regsel.c: the region selection of go tool trace's /userregion and region profiles. */
#include "tools/regsel.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "core/quote.h"
#include "core/varint.h"

void cli_regsel_init(cli_regsel *s) {
    memset(s, 0, sizeof *s);
    s->latmin = s->latmax = -1;
}

int cli_regsel_arg(cli_regsel *s, const char *cmd, const char *type_opt, int argc, char **argv,
                   int *i) {
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, type_opt)) {
        if (!v) return cli_usage_error(cmd, "%s needs a region type", a) + 1;
        s->type = v;
    } else if (!strcmp(a, "--pc")) {
        if (!v || cli_parse_hex(v, &s->pc))
            return cli_usage_error(cmd, "--pc needs a hexadecimal PC (0x4a1b2c)") + 1;
        s->has_pc = true;
    } else if (!strcmp(a, "--latmin") || !strcmp(a, "--latmax")) {
        if (!v || cli_parse_duration(v, a[6] == 'i' ? &s->latmin : &s->latmax))
            return cli_usage_error(cmd, "%s needs a duration (10ms, 1.5s, ...)", a) + 1;
    } else {
        return 0;
    }
    (*i)++;
    return 1;
}

bool cli_regsel_any(const cli_regsel *s) {
    return s->type || s->has_pc || s->latmin >= 0 || s->latmax >= 0;
}

void cli_regsel_name(const cli_regsel *s, tdx_buf *o) {
    if (s->type) tdx_go_quote(o, (const uint8_t *)s->type, strlen(s->type));
    if (s->has_pc) tdx_buf_printf(o, "%s@ 0x%" PRIx64, o->n ? " " : "", s->pc);
    for (int k = 0; k < 2; k++) {
        int64_t v = k ? s->latmax : s->latmin;
        char d[64];
        if (v < 0) continue;
        cli_duration(d, sizeof d, v);
        tdx_buf_printf(o, "%s(latency %s %s)", o->n ? " " : "", k ? "<=" : ">=", d);
    }
}

typedef struct pass {
    const cli_regsel *s;
    tdx_gostats *gs;
    tdx_gostats_region_fn fn;
    void *ctx;
    const char *path;
} pass;

/* Go's filter measures a region over its interval (regionInterval). */
static int on_region(void *ctx, const tdx_gostat_region *r, tdx_err *err) {
    const pass *p = ctx;
    int64_t lat = tdx_wsub(r->end, r->start);
    if ((p->s->latmin >= 0 && lat < p->s->latmin) || (p->s->latmax >= 0 && lat > p->s->latmax))
        return 0;
    return p->fn(p->ctx, r, err);
}

static int feed_event(void *ctx, const tdx_event *e, const tdx_gen *g) {
    const pass *p = ctx;
    tdx_err err;
    if (tdx_gostats_event(p->gs, e, g, &err)) {
        cli_report(p->path, &err);
        return -1;
    }
    return 0;
}

int cli_regsel_pass(tdx_index *ix, const cli_regsel *s, bool quiet, tdx_gostats_region_fn fn,
                    void *ctx, tdx_gostats **gs) {
    char beside[4096];
    cli_scratch_beside(beside, sizeof beside);
    if (!(*gs = tdx_gostats_new(beside, 16u << 20))) {
        fprintf(stderr, "traceidx: out of memory\n");
        return -1;
    }
    pass p = {s, *gs, fn, ctx, ix->path};
    tdx_gostats_region_detail(*gs, (const uint8_t *)s->type, s->type ? strlen(s->type) : 0,
                              s->type != NULL, s->pc, s->has_pc, on_region, &p);
    tdx_err err = {0};
    cli_progress prog;
    cli_progress_init(&prog, "regions", quiet);
    int got = cli_index_events(ix, feed_event, &p, &prog, &err);
    cli_progress_end(&prog);
    if (got < 0) cli_report(ix->path, &err);
    if (got) return -1;
    if (tdx_gostats_finish(*gs, &err)) {
        cli_report(ix->path, &err);
        return -1;
    }
    return 0;
}
