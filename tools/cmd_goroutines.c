/* cmd_goroutines.c: `traceidx goroutines`, go tool trace's goroutine analysis (the /goroutines
 * and /goroutine?name= pages) as text or JSON, from a trace or an index. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/hmap.h"
#include "core/quote.h"
#include "core/varint.h"
#include "index/analysis/gostats.h"
#include "index/common/extsort.h"
#include "index/analysis/gsindex.h"
#include "index/format/reader.h"
#include "tools/stattable.h"

static const char goroutines_help[] =
    "usage: traceidx goroutines TRACE|INDEX [--name NAME [--sort COLUMN]] [--json] [-j N]\n"
    "                           [--spill-budget BYTES] [--quiet]\n\n"
    "Go's goroutine analysis, as go tool trace's \"Goroutine analysis\" pages show it. Without\n"
    "--name: the goroutines grouped by start location (the function each was started with),\n"
    "with their count and total execution time, the largest first (/goroutines). With --name:\n"
    "that group's goroutines one by one (/goroutine?name=NAME), each with its total time and\n"
    "where it went: execution, scheduler wait, blocking by reason, syscalls, and the time it\n"
    "spent in special ranges such as GC mark assist.\n\n"
    "  --name NAME    one group, NAME as the first table shows it ('' for goroutines with no\n"
    "                 stack, which the table calls \"(Inactive, no stack trace sampled)\")\n"
    "  --sort COLUMN  order --name's goroutines by a column of its table, the largest first\n"
    "                 (\"Execution time\", \"Sched wait time\", ...; default: \"Total\")\n"
    "  --json         the same as JSON (durations in ns; times since the trace's first event;\n"
    "                 a goroutine's \"stats\" and \"ranges\" in the order of \"columns\" and\n"
    "                 \"ranges\")\n"
    "  -j N           threads reading a TRACE (default: number of CPUs)\n"
    "  --spill-budget BYTES  memory for the records of goroutines that ended, and for\n"
    "                 --name's rows, before they go to unnamed scratch files in TMPDIR\n"
    "                 (suffixes k, M, G; default 16M each)\n"
    "  --quiet        no progress on stderr (shown when it is a terminal)\n\n"
    "The statistics come from every event, as Go's summary does. An INDEX holds them (its\n"
    "GSTATS section; one built before traceidx stored them, or stored them in their first\n"
    "layout, is read by decoding its events). A TRACE whose TRACE.tidx is beside it and was\n"
    "built from it is answered from that index; any other TRACE is read as validate reads it.\n"
    "A damaged TRACE is an error: go tool trace summarizes the events before the damage, and\n"
    "so does `goroutines` of the index `build --partial` makes. Where go tool trace's order\n"
    "depends on Go map iteration (ties), goroutines go by id and groups by name. Where Go's\n"
    "summary would crash (a range begun on a goroutine after it blocked forever), the event is\n"
    "counted as any other.\n";

/* ---- collecting ---- */

typedef struct feed {
    tdx_gostats *gs;
    tdx_err err;
    int failed;
} feed;

static int feed_event(void *ctx, const tdx_event *e, const tdx_gen *g) {
    feed *f = ctx;
    if (tdx_gostats_event(f->gs, e, g, &f->err)) return f->failed = 1, -1;
    return 0;
}

static int collect_trace(const char *path, int jobs, bool quiet, tdx_gostats *gs) {
    feed f = {gs, {0}, 0};
    tdx_source src;
    tdx_read_stats st;
    tdx_err err;
    int open_failed;
    int rc = cli_read_trace("goroutines", path, jobs, quiet, feed_event, &f, &src, &st, &err,
                            &open_failed);
    if (open_failed) return -1;
    if (f.failed) {
        cli_report(path, &f.err);
    } else if (rc) {
        cli_report_trace(path, &src, &err);
        /* cmd/trace summarizes what it read before the damage: so does an index of it */
        if (err.kind != TDX_EIO && st.events > 1)
            fprintf(stderr,
                    "traceidx: %s: go tool trace shows the statistics of the %" PRIu64
                    " events read before the damage: `traceidx build --partial %s`, then "
                    "`traceidx goroutines %s.tidx`\n",
                    path, st.events, path, path);
    }
    tdx_source_close(&src);
    return rc || f.failed ? -1 : 0;
}

/* Decodes every event block of an index that has no GSTATS (built before traceidx stored it). */
static int collect_index(const char *path, tdx_index *ix, bool quiet, tdx_gostats *gs) {
    feed f = {gs, {0}, 0};
    tdx_err err = {0};
    cli_progress prog;
    cli_progress_init(&prog, "goroutines", quiet);
    int rc = cli_index_events(ix, feed_event, &f, &prog, &err);
    cli_progress_end(&prog);
    if (rc) cli_report(path, f.failed ? &f.err : &err);
    return rc ? -1 : 0;
}

/* ---- where the statistics come from ---- */

/* Computed from the events (a trace, or an index built before GSTATS), or the index's GSTATS. */
typedef struct source {
    tdx_gostats *gs;
    bool stored;
    tdx_gsindex gx;
    uint64_t group; /* stored: the group being read */
    tdx_str want;   /* computed: the name of the group being read */
} source;

static tdx_str src_str(const source *s, uint32_t id) {
    return s->stored ? tdx_gsindex_str(&s->gx, id) : tdx_gostats_str(s->gs, id);
}

static int member_rewind(source *s, tdx_err *err) {
    return s->stored ? tdx_gsindex_begin(&s->gx, s->group, err) : tdx_gostats_rewind(s->gs, err);
}

/* The group's next goroutine; computed, every goroutine's execution time adds to *all_exec on
 * the way (NULL: not counted). */
static int member_next(source *s, tdx_gostat *g, int64_t *all_exec, tdx_err *err) {
    if (s->stored) return tdx_gsindex_next(&s->gx, g, err);
    int rc;
    while ((rc = tdx_gostats_next(s->gs, g, err)) == 1) {
        if (all_exec) *all_exec = tdx_wadd(*all_exec, g->exec);
        if (!tdx_str_cmp(tdx_gostats_str(s->gs, g->name), s->want)) return 1;
    }
    return rc;
}

/* ---- output helpers ---- */

static tdx_str cstr(const char *s) {
    return (tdx_str){(const uint8_t *)s, (uint32_t)strlen(s)};
}

static void put_json_str(tdx_buf *out, tdx_str s) {
    tdx_json_quote(out, s.p, s.n);
}

static void put_dur(char *buf, size_t cap, int64_t ns) {
    cli_duration(buf, cap, ns);
}

/* ---- the groups (/goroutines) ---- */

typedef struct group {
    uint32_t name;
    uint64_t count;
    int64_t exec;
} group;

static int group_cmp(const void *pa, const void *pb, void *ctx) {
    const group *a = pa, *b = pb;
    return tdx_gostats_group_cmp(ctx, a->name, a->exec, b->name, b->exec);
}

static int show_groups(source *src, bool json, tdx_err *err) {
    TDX_VEC(group) groups = {0};
    tdx_hmap by_name = {0};
    uint64_t total = 0;
    int64_t exec = 0;
    int rc = 0;
    if (src->stored) { /* the table, in display order already */
        total = src->gx.goroutines;
        exec = src->gx.exec;
        for (uint64_t i = 0; i < src->gx.ngroups && !rc; i++) {
            tdx_gsgroup gr = tdx_gsindex_group(&src->gx, i);
            if (tdx_vec_push(&groups, ((group){gr.name, gr.count, gr.exec})))
                rc = tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        }
    }
    tdx_gostat g;
    while (!src->stored && (rc = tdx_gostats_next(src->gs, &g, err)) == 1) {
        int ins;
        uint32_t *slot = tdx_hmap_upsert(&by_name, g.name, (uint32_t)groups.n, &ins);
        if (!slot || (ins && tdx_vec_push(&groups, ((group){g.name, 0, 0})))) {
            rc = tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
            break;
        }
        group *gr = &groups.v[*slot];
        // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): the push above made groups.v
        gr->count++;
        gr->exec = tdx_wadd(gr->exec, g.exec);
        total++;
        exec = tdx_wadd(exec, g.exec);
    }
    if (rc < 0) goto out;
    if (!src->stored && groups.n) qsort_r(groups.v, groups.n, sizeof *groups.v, group_cmp, src->gs);
    tdx_buf o = {0};
    char d[64];
    if (json) {
        tdx_buf_printf(&o, "{\"goroutines\": %" PRIu64 ", \"exec_ns\": %" PRId64 ", \"groups\": [",
                       total, exec);
        for (size_t i = 0; i < groups.n; i++) {
            tdx_buf_printf(&o, "%s{\"name\": ", i ? ", " : "");
            put_json_str(&o, src_str(src, groups.v[i].name));
            tdx_buf_printf(&o, ", \"count\": %" PRIu64 ", \"exec_ns\": %" PRId64 "}",
                           groups.v[i].count, groups.v[i].exec);
            if (cli_flush_out(&o, false)) break;
        }
        tdx_buf_printf(&o, "]}\n");
    } else {
        size_t w = strlen("Start location");
        for (size_t i = 0; i < groups.n; i++) {
            tdx_str n = src_str(src, groups.v[i].name);
            size_t l = n.n ? cli_text_width((const char *)n.p, n.n)
                           : strlen("(Inactive, no stack trace sampled)");
            if (l > w) w = l;
        }
        put_dur(d, sizeof d, exec);
        tdx_buf_printf(&o, "%" PRIu64 " goroutine%s in %zu group%s, total execution time %s\n\n",
                       total, total == 1 ? "" : "s", groups.n, groups.n == 1 ? "" : "s", d);
        tdx_buf_printf(&o, "%-*s  %10s  %s\n", (int)w, "Start location", "Count",
                       "Total execution time");
        for (size_t i = 0; i < groups.n; i++) {
            tdx_str n = src_str(src, groups.v[i].name);
            put_dur(d, sizeof d, groups.v[i].exec);
            if (n.n)
                cli_pad(&o, (const char *)n.p, n.n, w, false);
            else
                tdx_buf_printf(&o, "%-*s", (int)w, "(Inactive, no stack trace sampled)");
            tdx_buf_printf(&o, "  %10" PRIu64 "  %s\n", groups.v[i].count, d);
            if (cli_flush_out(&o, false)) break;
        }
    }
    if (cli_flush_out(&o, true)) rc = -1;
    tdx_vec_free(&o);
out:
    tdx_vec_free(&groups);
    tdx_hmap_free(&by_name);
    return rc < 0 ? -1 : 0;
}

/* ---- one group (/goroutine?name=) ---- */

/* The group's goroutines as the table's rows; computed, every goroutine's execution time adds
 * to all_exec on the first pass. */
typedef struct members {
    source *src;
    int64_t all_exec;
    bool count_all;
} members;

static int members_rewind(void *ctx, tdx_err *err) {
    return member_rewind(((members *)ctx)->src, err);
}

static int members_next(void *ctx, tdx_gostat *g, cli_statrow *row, tdx_err *err) {
    members *m = ctx;
    int rc = member_next(m->src, g, m->count_all ? &m->all_exec : NULL, err);
    if (rc == 1)
        *row = (cli_statrow){
            g->id, 0, g->creation, g->start, g->end, 0, (uint64_t)g->id ^ TDX_XSORT_SIGN, false};
    return rc;
}

static tdx_str members_str(const void *ctx, uint32_t id) {
    return src_str(((const members *)ctx)->src, id);
}

static int show_group(source *src, const char *name_arg, const char *sort, bool json,
                      const char *path, const char *beside, size_t budget, tdx_err *err) {
    cli_stattable T;
    memset(&T, 0, sizeof T);
    tdx_str name = cstr(name_arg);
    members m = {src, 0, !src->stored};
    cli_statsrc rows = {members_rewind, members_next, members_str, &m};
    int rc = -1;
    bool found = !src->stored;
    for (uint64_t i = 0; src->stored && i < src->gx.ngroups && !found; i++)
        if (!tdx_str_cmp(tdx_gsindex_str(&src->gx, tdx_gsindex_group(&src->gx, i).name), name))
            src->group = i, found = true;
    src->want = name;
    if (found && cli_stattable_columns(&T, &rows, false, err)) {
        cli_report(path, err);
        goto out;
    }
    m.count_all = false;
    int64_t all_exec = src->stored ? src->gx.exec : m.all_exec;
    if (T.nrows == 0) {
        fprintf(stderr,
                "traceidx: %s: no goroutine starts at \"%s\" ('traceidx goroutines %s' lists the "
                "start locations)\n",
                path, name_arg, path);
        goto out;
    }
    if (cli_stattable_sort_by(&T, sort)) {
        tdx_buf l = {0};
        cli_stattable_labels(&T, &l);
        fprintf(stderr,
                "traceidx: %s: --sort: this group has no column \"%s\"; it has: %.*s and "
                "\"Total\"\n",
                path, sort, (int)l.n, (const char *)l.v);
        tdx_vec_free(&l);
        goto out;
    }
    if (cli_stattable_rows(&T, !json, beside, budget, err)) {
        cli_report(path, err);
        goto out;
    }
    char pct[48] = "";
    if (all_exec > 0) snprintf(pct, sizeof pct, "%.2f%%", (double)T.exec / (double)all_exec * 100);
    tdx_buf o = {0};
    if (json) {
        tdx_buf_printf(&o, "{\"name\": ");
        put_json_str(&o, name);
        tdx_buf_printf(&o, ", \"count\": %" PRIu64 ", \"exec_percent\": \"%s\", ", T.nrows, pct);
        int64_t t0 = src->stored ? src->gx.t0 : tdx_gostats_first_time(src->gs);
        rc = cli_stattable_json(&T, &o, "goroutines", t0, err);
        if (!rc) tdx_buf_printf(&o, "}\n");
    } else {
        if (name.n)
            tdx_buf_printf(&o, "Goroutine start location: %.*s\n", (int)name.n,
                           (const char *)name.p);
        else
            tdx_buf_printf(&o, "Goroutine start location: (Inactive, no stack trace sampled)\n");
        tdx_buf_printf(&o, "Count: %" PRIu64 "\n", T.nrows);
        tdx_buf_printf(&o, "Execution time: %s of total program execution time\n\n", pct);
        rc = cli_stattable_text(&T, &o, err);
    }
    if (!rc && cli_flush_out(&o, true)) rc = -1;
    tdx_vec_free(&o);
    if (rc == -2) cli_report(path, err);
out:
    cli_stattable_free(&T);
    return rc ? -1 : 0;
}

int cmd_goroutines(int argc, char **argv) {
    const char *path = NULL, *name = NULL, *sort = NULL;
    int jobs = tdx_ncpus(), jr;
    bool json = false, quiet = false;
    uint64_t budget = 16u << 20;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(goroutines_help, stdout);
            return TDX_EXIT_OK;
        } else if ((jr = cli_jobs_arg(argc, argv, &i, &jobs)) != 0) {
            if (jr < 0) return cli_usage_error("goroutines", "-j needs a number from 1 to 1024");
        } else if (!strcmp(argv[i], "--name") || !strcmp(argv[i], "--sort")) {
            if (i + 1 >= argc) return cli_usage_error("goroutines", "%s needs a value", argv[i]);
            *(argv[i][2] == 'n' ? &name : &sort) = argv[i + 1];
            i++;
        } else if (!strcmp(argv[i], "--spill-budget")) {
            if (i + 1 >= argc || cli_parse_bytes(argv[i + 1], &budget) || budget > SIZE_MAX / 2)
                return cli_usage_error("goroutines", "--spill-budget needs a byte count");
            i++;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("goroutines", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("goroutines", "unexpected argument %s", argv[i]);
        }
    }
    if (!path) return cli_usage_error("goroutines", "need a TRACE or an INDEX");
    if (sort && !name) return cli_usage_error("goroutines", "--sort orders --name's table");
    source src;
    memset(&src, 0, sizeof src);
    tdx_index ix;
    bool have_ix = false;
    tdx_err err;
    tdx_err_clear(&err);
    int rc = 0;
    /* A trace whose index is beside it is answered from the index (in milliseconds). */
    bool is_ix = cli_is_index_file(path);
    if (is_ix || cli_index_beside(path, &ix)) {
        if (is_ix && cli_open_index(path, &ix, false)) return TDX_EXIT_FAIL;
        have_ix = true;
        if (ix.partial) {
            char off[48];
            cli_damage_where(&ix, off, sizeof off);
            fprintf(stderr,
                    "traceidx: %s: the trace is damaged%s; these are the statistics of the "
                    "events before it, as go tool trace would show them\n",
                    path, off);
        }
        uint64_t len;
        const uint8_t *p;
        if (ix.sec[TDX_SEC_GSTATS].present) {
            src.stored = true;
            if (!(p = tdx_index_section(&ix, TDX_SEC_GSTATS, &len, &err)) ||
                tdx_gsindex_open(&src.gx, p, (size_t)len, ix.sec[TDX_SEC_GSTATS].off, &err) ||
                tdx_gsindex_check_span(&src.gx, (int64_t)ix.meta[M_FIRST_TIME],
                                       (int64_t)ix.meta[M_LAST_TIME], &err)) {
                cli_report(path, &err);
                rc = -1;
            }
        } else {
            fprintf(stderr,
                    "traceidx: %s: the index holds no goroutine statistics this traceidx reads "
                    "(an earlier one built it); computing them from its events (a new build "
                    "has them at once)\n",
                    path);
        }
    }
    /* Ended goroutines' records, and --name's rows, past the budget go to unnamed scratch
     * files in TMPDIR. */
    char beside[4096];
    cli_scratch_beside(beside, sizeof beside);
    if (!rc && !src.stored) {
        if (!(src.gs = tdx_gostats_new(beside, (size_t)budget))) {
            fprintf(stderr, "traceidx: out of memory\n");
            rc = -1;
        } else {
            rc = have_ix ? collect_index(path, &ix, quiet, src.gs)
                         : collect_trace(path, jobs, quiet, src.gs);
            if (!rc && tdx_gostats_finish(src.gs, &err)) {
                cli_report(path, &err);
                rc = -1;
            }
        }
    }
    if (!rc) {
        if (name) {
            rc = show_group(&src, name, sort, json, path, beside, (size_t)budget, &err);
        } else if (show_groups(&src, json, &err)) {
            if (err.kind != TDX_OK) cli_report(path, &err);
            rc = -1;
        }
    }
    tdx_gostats_free(src.gs);
    tdx_gsindex_free(&src.gx);
    if (have_ix) tdx_index_close(&ix);
    return rc ? TDX_EXIT_FAIL : TDX_EXIT_OK;
}
