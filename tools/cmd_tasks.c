/* cmd_tasks.c: `traceidx tasks`: go tool trace's user task pages (/usertasks, /usertask) from
 * an index's SUMMARY: tasks grouped by type with a histogram of their durations, or one type's
 * tasks, shortest first. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/hmap.h"
#include "core/quote.h"
#include "core/varint.h"
#include "index/common/extsort.h"
#include "index/format/format.h"
#include "index/format/reader.h"
#include "index/analysis/sumindex.h"
#include "index/analysis/taskevents.h"
#include "index/analysis/timehist.h"
#include "index/views/viewgen_store.h"

static const char tasks_help[] =
    "usage: traceidx tasks INDEX [--json]\n"
    "       traceidx tasks INDEX [--type TYPE] [--complete | --incomplete] [--latmin DUR]\n"
    "                            [--latmax DUR] [--logtext TEXT] [--events] [--json]\n"
    "                            [--spill-budget BYTES]\n"
    "       traceidx tasks INDEX --id ID [--json]\n\n"
    "The user tasks of a trace (runtime/trace.NewTask), as go tool trace's \"User-defined\n"
    "tasks\" pages show them. Alone: the task types, each with its count and a histogram of\n"
    "the durations of its complete tasks (both TaskBegin and TaskEnd in the trace), five\n"
    "buckets a decade (/usertasks). With --type or a filter: the tasks it selects, shortest\n"
    "first, each with its start, duration and id (/usertask?type=TYPE&...; the filters are\n"
    "Go's, all of them must hold); `traceidx query INDEX --task ID` then shows one on the\n"
    "timeline. With --id: that task and its events, as /usertask lists them under it: its\n"
    "begin and end, its log messages and its regions' begins and ends, by time, each with the\n"
    "time since the one before and its goroutine.\n\n"
    "  --type TYPE     tasks of one type, as the first table shows it\n"
    "  --complete      only tasks with both their begin and end in the trace\n"
    "  --incomplete    only tasks without\n"
    "  --latmin DUR    only complete tasks that lasted at least DUR (10ms, 1.5s, ...)\n"
    "  --latmax DUR    only complete tasks that lasted at most DUR\n"
    "  --logtext TEXT  only tasks whose type, a region's type, or a log's category or message\n"
    "                  contains TEXT (this reads every event of the index)\n"
    "  --events        each listed task's events under it, as --id shows them\n"
    "  --id ID         one task and its events, by the id the list shows\n"
    "  --json          the same as JSON (times in ns since the trace's first event)\n"
    "  --spill-budget BYTES  memory for the listed tasks before they go to an unnamed scratch\n"
    "                  file in TMPDIR (suffixes k, M, G; default 16M)\n\n"
    "INDEX may be the trace itself: its TRACE.tidx is used after checking it matches. As in Go,\n"
    "a task whose begin or end the trace lacks starts at the trace's first event or ends at its\n"
    "end (the last Sync), is counted but left out of the histogram, and the tasks are those\n"
    "Go's summary holds: every task id a task, region or log event names (0 is the background\n"
    "task, of type \"\"). Unlike go tool trace, tasks of equal duration go by id. Events are\n"
    "described in Go's words, quirks kept: a begin reads 'task \"T\" (D 7, parent 0) begin', a\n"
    "log with a category shows only its message and one without reads 'log (category: ):\n"
    "\"...\"', and a region still open when its goroutine ended ends with that goroutine's\n"
    "transition ('Running -> NotExist'). --id reads a block for each event and the blocks\n"
    "from the task's first log to its last; --events reads the blocks holding the events of\n"
    "every 65536 tasks listed once (all 282,642 requests of the 256 MiB bench trace, 3.6 M\n"
    "events: 22 s of CPU, 135 MB).\n";

/* ---- the tasks ---- */

typedef struct ttype {
    uint32_t name; /* viewer store string id */
    uint64_t count, complete;
    tdx_timehist h;
} ttype;

typedef struct walk {
    const tdx_vgstore *store;
    int64_t t0, tend; /* the trace's first event, and its end (cmd/trace's endTime) */
    /* all types, or one */
    TDX_VEC(ttype) types;
    tdx_hmap by_name;
    tdx_str want;           /* --type */
    bool one;               /* a list of tasks (--type or a filter), not the types */
    bool has_type;          /* --type given */
    bool type_seen;         /* a task of that type exists */
    int complete_want;      /* --complete 1, --incomplete 0, else -1 */
    int64_t latmin, latmax; /* -1: none */
    tdx_str text;           /* --logtext (n = 0: none) */
    tdx_hmap log_hits;      /* --logtext: the tasks with a log that contains it */
    tdx_xsort *sorted;      /* the list: its tasks, by duration then id */
    uint64_t n, ncomplete;
    tdx_buf pay;
} walk;

/* cmd/trace's taskInterval: a missing begin is the trace's first event, a missing end its end;
 * *a gets the start, *d the duration. Whether the task is complete. */
static bool span(const walk *w, const tdx_sumev *start, const tdx_sumev *end, int64_t *a,
                 int64_t *d) {
    *a = start->present ? start->time : w->t0;
    *d = tdx_wsub(end->present ? end->time : w->tend, *a);
    return start->present && end->present;
}

static bool contains(tdx_str hay, tdx_str needle) {
    return needle.n <= hay.n && memmem(hay.p, hay.n, needle.p, needle.n) != NULL;
}

/* Go's taskFilter, but for --logtext: type, complete or not, latency (complete tasks only). */
static bool wanted(walk *w, uint32_t name, bool complete, int64_t d) {
    if (w->has_type) {
        if (tdx_str_cmp(tdx_vgstore_str(w->store, name), w->want)) return false;
        w->type_seen = true;
    }
    if (w->complete_want >= 0 && complete != (w->complete_want == 1)) return false;
    if (w->latmin >= 0 && !(complete && d >= w->latmin)) return false;
    if (w->latmax >= 0 && !(complete && d <= w->latmax)) return false;
    return true;
}

static int list_add(walk *w, uint64_t id, int64_t a, int64_t d, bool complete, tdx_err *err) {
    w->n++;
    w->ncomplete += complete;
    w->pay.n = 0;
    if (tdx_buf_uvarint(&w->pay, tdx_zigzag(tdx_wsub(a, w->t0))) ||
        tdx_buf_uvarint(&w->pay, complete))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return tdx_xsort_add(w->sorted, (uint64_t)d ^ TDX_XSORT_SIGN, id, w->pay.v, w->pay.n, err);
}

/* --logtext: Go's taskMatches (the task's type, a region's type, a log's category or message
 * contains the text), for a task with its regions (tdx_sumindex_walk_tasks). */
static int on_whole_task(void *ctx, const tdx_summary *s, tdx_err *err) {
    walk *w = ctx;
    const tdx_sumtask *t = &s->tasks.v[0];
    int64_t a, d;
    bool complete = span(w, &t->start, &t->end, &a, &d);
    if (!wanted(w, t->name, complete, d)) return 0;
    bool hit = tdx_hmap_get(&w->log_hits, t->id) != TDX_HMAP_EMPTY ||
               contains(tdx_vgstore_str(w->store, t->name), w->text);
    for (size_t i = 0; i < t->regions.n && !hit; i++)
        hit = contains(tdx_vgstore_str(w->store, s->regions.v[t->regions.v[i]].name), w->text);
    return hit ? list_add(w, t->id, a, d, complete, err) : 0;
}

static int on_task(void *ctx, uint64_t id, uint32_t name, const tdx_sumev *start,
                   const tdx_sumev *end, tdx_err *err) {
    walk *w = ctx;
    int64_t a, d;
    bool complete = span(w, start, end, &a, &d);
    if (w->one) return wanted(w, name, complete, d) ? list_add(w, id, a, d, complete, err) : 0;
    int ins;
    uint32_t *slot = tdx_hmap_upsert(&w->by_name, name, (uint32_t)w->types.n, &ins);
    ttype fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.name = name;
    if (!slot || (ins && tdx_vec_push(&w->types, fresh)))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    ttype *t = &w->types.v[*slot];
    // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): the push above made types.v
    t->count++;
    w->n++;
    if (complete) {
        t->complete++;
        tdx_timehist_add(&t->h, d);
    }
    return 0;
}

static int type_cmp(const void *pa, const void *pb, void *ctx) {
    const walk *w = ctx;
    return tdx_str_cmp(tdx_vgstore_str(w->store, ((const ttype *)pa)->name),
                       tdx_vgstore_str(w->store, ((const ttype *)pb)->name));
}

/* ---- output ---- */

/* The types table: 0, or 1 when stdout refused it (said on stderr). */
static int show_types(walk *w, bool json) {
    if (w->types.n) qsort_r(w->types.v, w->types.n, sizeof *w->types.v, type_cmp, w);
    tdx_buf o = {0};
    int rc = 0;
    if (json) {
        tdx_buf_printf(&o, "{\"tasks\": %" PRIu64 ", \"types\": [", w->n);
        for (size_t i = 0; i < w->types.n; i++) {
            const ttype *t = &w->types.v[i];
            tdx_buf_printf(&o, "%s\n{\"type\": ", i ? "," : "");
            tdx_str name = tdx_vgstore_str(w->store, t->name);
            tdx_json_quote(&o, name.p, name.n);
            tdx_buf_printf(&o,
                           ", \"count\": %" PRIu64 ", \"complete\": %" PRIu64 ", \"histogram\": ",
                           t->count, t->complete);
            cli_hist_json(&o, &t->h);
            tdx_buf_printf(&o, "}");
            if ((rc = cli_flush_out(&o, false))) break;
        }
        tdx_buf_printf(&o, "]}\n");
    } else {
        tdx_buf_printf(&o, "%" PRIu64 " task%s of %zu type%s\n", w->n, w->n == 1 ? "" : "s",
                       w->types.n, w->types.n == 1 ? "" : "s");
        for (size_t i = 0; i < w->types.n; i++) {
            const ttype *t = &w->types.v[i];
            tdx_str name = tdx_vgstore_str(w->store, t->name);
            tdx_buf_printf(&o, "\nTask type ");
            tdx_json_quote(&o, name.p, name.n);
            tdx_buf_printf(&o, ": %" PRIu64 " task%s, %" PRIu64 " complete\n", t->count,
                           t->count == 1 ? "" : "s", t->complete);
            if (!t->h.count) continue;
            tdx_buf_printf(&o, "  Duration distribution (complete tasks):\n");
            cli_hist_text(&o, &t->h);
            if ((rc = cli_flush_out(&o, false))) break;
        }
    }
    if (!rc) rc = cli_flush_out(&o, true);
    tdx_vec_free(&o);
    return rc ? 1 : 0;
}

/* Go's elapsed(): "%.9f" seconds, with a sub-second value's leading zeros blanked. */
static void elapsed_text(tdx_buf *o, int64_t ns) {
    char b[48];
    int n = snprintf(b, sizeof b, "%s%" PRIu64 ".%09" PRIu64, ns < 0 ? "-" : "",
                     (ns < 0 ? -(uint64_t)ns : (uint64_t)ns) / 1000000000u,
                     (ns < 0 ? -(uint64_t)ns : (uint64_t)ns) % 1000000000u);
    if (ns >= 0 && ns < 1000000000) {
        char *dot = strchr(b, '.');
        for (char *q = b; q < dot; q++) *q = ' ';
        for (char *q = dot + 1; *q == '0'; q++) *q = ' ';
    }
    cli_pad(o, b, (size_t)n, 14, true);
}

/* Seconds since the trace's first event with 9 decimals (Go's "%2.9f"), from the integer. */
static void when_text(char *b, size_t cap, int64_t ns) {
    uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
    snprintf(b, cap, "%s%" PRIu64 ".%09" PRIu64, ns < 0 ? "-" : "", a / 1000000000u,
             a % 1000000000u);
}

/* A task's events: JSON objects (after `lead`), or the text table's rows. */
static int put_rows(tdx_buf *o, tdx_index *ix, const tdx_taskevents *t, bool json, const char *lead,
                    tdx_err *err) {
    tdx_buf what = {0};
    char when[48];
    int rc = 0;
    int64_t last = t->t0;
    for (size_t i = 0; i < t->rows.n && !rc; i++) {
        const tdx_taskrow *r = &t->rows.v[i];
        what.n = 0;
        if (tdx_taskrow_describe(&what, r, &ix->tabs)) {
            rc = tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
            break;
        }
        int64_t since = tdx_wsub(r->time, t->t0), gap = tdx_wsub(r->time, last);
        last = r->time;
        if (json) {
            tdx_buf_printf(o,
                           "%s%s{\"time_ns\": %" PRId64 ", \"elapsed_ns\": %" PRId64
                           ", \"goroutine\": %" PRId64 ", \"event\": ",
                           i ? "," : "", lead, since, gap, r->g);
            tdx_json_quote(o, what.v, what.n);
            tdx_buf_printf(o, "}");
        } else {
            when_text(when, sizeof when, since);
            cli_pad(o, when, strlen(when), 14, true);
            tdx_buf_printf(o, "  ");
            elapsed_text(o, gap);
            tdx_buf_printf(o, "  %10" PRId64 "  ", r->g);
            tdx_buf_append(o, what.v, what.n);
            tdx_buf_printf(o, "\n");
        }
        if (cli_flush_out(o, false)) rc = 1;
    }
    tdx_vec_free(&what);
    return rc;
}

/* The end of a listing that ran to rc: the strings it named checked, the JSON closed, the
 * output flushed (and freed). */
static int finish(tdx_buf *o, tdx_index *ix, bool json, int rc, tdx_err *err) {
    if (!rc && tdx_index_strings_ok(ix, err)) rc = -1;
    if (!rc) {
        if (json) tdx_buf_printf(o, "]}\n");
        if (cli_flush_out(o, true)) rc = 1;
    }
    tdx_vec_free(o);
    return rc;
}

/* --id: the task's line, then its events. */
static int show_task(tdx_index *ix, const tdx_vgstore *store, const tdx_taskevents *t, bool json,
                     const char *index_path, tdx_err *err) {
    tdx_buf o = {0};
    char when[48], d[64];
    bool complete = t->has_start && t->has_end;
    int64_t dur = tdx_wsub(t->end, t->start);
    tdx_str name = tdx_vgstore_str(store, t->name);
    when_text(when, sizeof when, tdx_wsub(t->start, t->t0));
    cli_duration(d, sizeof d, dur);
    if (json) {
        tdx_buf_printf(&o, "{\"id\": %" PRIu64 ", \"type\": ", t->id);
        tdx_json_quote(&o, name.p, name.n);
        tdx_buf_printf(&o,
                       ", \"start_ns\": %" PRId64 ", \"duration_ns\": %" PRId64
                       ", \"complete\": %s, \"events\": [",
                       tdx_wsub(t->start, t->t0), dur, complete ? "true" : "false");
    } else {
        tdx_buf_printf(&o, "Task %" PRIu64 " of type ", t->id);
        tdx_json_quote(&o, name.p, name.n);
        tdx_buf_printf(&o,
                       " (%s): from %ss for %s, %zu event%s (`traceidx query %s --task %" PRIu64
                       "` shows it on the timeline)\n\n%14s  %14s  %10s  %s\n",
                       complete ? "complete" : "incomplete", when, d, t->rows.n,
                       t->rows.n == 1 ? "" : "s", index_path, t->id, "When", "Elapsed", "Goroutine",
                       "Events");
    }
    return finish(&o, ix, json, put_rows(&o, ix, t, json, "\n", err), err);
}

/* The list (--type or a filter), shortest first; with `events` each task's events under it.
 * `name` is Go's name of the filter. */
static int show_list(walk *w, tdx_index *ix, tdx_vgstore *store, bool json, bool events,
                     const char *name, const char *index_path, tdx_err *err) {
    tdx_buf o = {0};
    char d[64];
    bool only_type =
        w->has_type && w->complete_want < 0 && w->latmin < 0 && w->latmax < 0 && !w->text.n;
    if (json) {
        tdx_buf_printf(&o, "{");
        if (w->has_type) {
            tdx_buf_printf(&o, "\"type\": ");
            tdx_json_quote(&o, w->want.p, w->want.n);
            tdx_buf_printf(&o, ", ");
        }
        if (!only_type) {
            tdx_buf_printf(&o, "\"filter\": ");
            tdx_json_quote(&o, (const uint8_t *)name, strlen(name));
            tdx_buf_printf(&o, ", ");
        }
        tdx_buf_printf(&o, "\"count\": %" PRIu64 ", \"complete\": %" PRIu64 ", \"tasks\": [", w->n,
                       w->ncomplete);
    } else {
        if (only_type) {
            tdx_buf_printf(&o, "Tasks of type ");
            tdx_json_quote(&o, w->want.p, w->want.n);
        } else {
            tdx_buf_printf(&o, "Tasks %s", name);
        }
        tdx_buf_printf(&o,
                       ": %" PRIu64 ", %" PRIu64 " complete (`traceidx query %s --task ID` "
                       "shows one on the timeline)\n\n%14s  %14s  %12s  %s\n",
                       w->n, w->ncomplete, index_path, "When", "Duration", "Task", "State");
        if (events)
            tdx_buf_printf(&o, "%14s  %14s  %10s  %s\n\n", "When", "Elapsed", "Goroutine",
                           "Events");
    }
    /* the tasks a batch at a time: with --events, one sweep over the blocks serves a batch */
    enum { BATCH = 65536 };
    typedef struct item {
        uint64_t id;
        int64_t since, dur;
        bool complete;
    } item;
    item *items = malloc(BATCH * sizeof *items);
    tdx_taskevents *te = events ? calloc(BATCH, sizeof *te) : NULL;
    int rc = items && (te || !events) ? tdx_xsort_rewind(w->sorted, err)
                                      : tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    int got = 1;
    tdx_xrec r;
    for (uint64_t i = 0; !rc && got == 1;) {
        size_t nb = 0;
        while (nb < BATCH && (got = tdx_xsort_next(w->sorted, &r, err)) == 1) {
            const uint8_t *p = r.p, *end = r.p + r.n;
            uint64_t start = 0, complete = 0;
            int k = tdx_uvarint(p, end, &start);
            if (k < 0 || tdx_uvarint(p + k, end, &complete) < 0) {
                rc = tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "tasks: a sorted record is damaged");
                break;
            }
            items[nb++] =
                (item){r.k2, tdx_unzigzag(start), (int64_t)(r.k1 ^ TDX_XSORT_SIGN), complete != 0};
        }
        if (rc || got < 0) break;
        if (events && nb) {
            for (size_t k = 0; k < nb; k++) te[k].id = items[k].id;
            int e = tdx_taskevents_read_all(ix, store, te, nb, err);
            if (e > 0) { /* SUMMARY listed it: its record must be there */
                for (size_t k = 0; k < nb; k++) tdx_taskevents_free(&te[k]);
                e = tdx_index_corrupt(err, ix->sec[TDX_SEC_SUMMARY].off, "SUMMARY");
            }
            if (e < 0) {
                rc = -1;
                break;
            }
        }
        for (size_t k = 0; k < nb; k++, i++) {
            const item *x = &items[k];
            if (!rc && json) {
                tdx_buf_printf(&o,
                               "%s\n{\"id\": %" PRIu64 ", \"start_ns\": %" PRId64
                               ", \"duration_ns\": %" PRId64 ", \"complete\": %s",
                               i ? "," : "", x->id, x->since, x->dur,
                               x->complete ? "true" : "false");
            } else if (!rc) {
                cli_duration(d, sizeof d, x->dur);
                /* Go's "%2.9fs": seconds since the trace's first event */
                char when[48];
                when_text(when, sizeof when, x->since);
                cli_pad(&o, when, strlen(when), 13, true);
                tdx_buf_printf(&o, "s  ");
                cli_pad(&o, d, strlen(d), 14, true);
                tdx_buf_printf(&o, "  %12" PRIu64 "  %s\n", x->id,
                               x->complete ? "complete" : "incomplete");
            }
            if (events) {
                if (!rc) {
                    if (json) tdx_buf_printf(&o, ", \"events\": [");
                    rc = put_rows(&o, ix, &te[k], json, "\n ", err);
                    tdx_buf_printf(&o, json ? "]" : "\n");
                }
                tdx_taskevents_free(&te[k]);
            }
            if (!rc && json) tdx_buf_printf(&o, "}");
            if (!rc && cli_flush_out(&o, false)) rc = 1;
        }
    }
    free(items);
    free(te);
    return finish(&o, ix, json, got < 0 ? -1 : rc, err);
}

/* --logtext: the tasks that have a log whose category or message contains the text. */
typedef struct logscan {
    walk *w;
    int oom;
} logscan;

static int scan_log(void *ctx, const tdx_event *e, const tdx_gen *g) {
    logscan *l = ctx;
    if (e->kind != TDX_KIND_LOG) return 0;
    if (!contains(tdx_gen_str(g, e->str[0]), l->w->text) &&
        !contains(tdx_gen_str(g, e->str[1]), l->w->text))
        return 0;
    if (tdx_hmap_put(&l->w->log_hits, e->args[0], 0)) return l->oom = 1;
    return 0;
}

int cmd_tasks(int argc, char **argv) {
    const char *path = NULL, *type = NULL, *text = NULL;
    bool json = false, has_id = false, events = false;
    int complete_want = -1;
    int64_t latmin = -1, latmax = -1;
    uint64_t budget = 16u << 20, id = 0;
    for (int i = 1; i < argc; i++) {
        bool more = i + 1 < argc;
        if (cli_is_help(argv[i])) {
            fputs(tasks_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(argv[i], "--type")) {
            if (!more) return cli_usage_error("tasks", "--type needs a value");
            type = argv[++i];
        } else if (!strcmp(argv[i], "--id")) {
            if (!more || cli_parse_u64(argv[i + 1], &id))
                return cli_usage_error("tasks", "--id needs a task id");
            has_id = true;
            i++;
        } else if (!strcmp(argv[i], "--complete") || !strcmp(argv[i], "--incomplete")) {
            int want = !strcmp(argv[i], "--complete");
            if (complete_want >= 0 && complete_want != want)
                return cli_usage_error("tasks", "--complete and --incomplete: one or the other");
            complete_want = want;
        } else if (!strcmp(argv[i], "--latmin") || !strcmp(argv[i], "--latmax")) {
            int64_t *v = !strcmp(argv[i], "--latmin") ? &latmin : &latmax;
            if (!more || cli_parse_duration(argv[i + 1], v))
                return cli_usage_error("tasks", "%s needs a duration (10ms, 1.5s, ...)", argv[i]);
            i++;
        } else if (!strcmp(argv[i], "--logtext")) {
            if (!more || !argv[i + 1][0]) return cli_usage_error("tasks", "--logtext needs a text");
            text = argv[++i];
        } else if (!strcmp(argv[i], "--events")) {
            events = true;
        } else if (!strcmp(argv[i], "--spill-budget")) {
            if (!more || cli_parse_bytes(argv[i + 1], &budget) || budget > SIZE_MAX / 2)
                return cli_usage_error("tasks", "--spill-budget needs a byte count");
            i++;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("tasks", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("tasks", "unexpected argument %s", argv[i]);
        }
    }
    if (!path) return cli_usage_error("tasks", "need an INDEX");
    bool list = type || complete_want >= 0 || latmin >= 0 || latmax >= 0 || text;
    if (has_id && list)
        return cli_usage_error("tasks", "--id is one task: no --type or filter beside it");
    if (events && !list && !has_id)
        return cli_usage_error("tasks", "--events lists the events of --type's or a filter's "
                                        "tasks (--id: one task's)");
    /* Go's name of the filter: its conditions, joined by commas */
    tdx_buf name = {0};
    if (type) {
        tdx_go_quote(&name, (const uint8_t *)type, strlen(type));
    }
    if (complete_want >= 0)
        tdx_buf_printf(&name, "%s%s", name.n ? "," : "", complete_want ? "complete" : "incomplete");
    for (int k = 0; k < 2; k++) {
        int64_t v = k ? latmax : latmin;
        char d[64];
        if (v < 0) continue;
        cli_duration(d, sizeof d, v);
        tdx_buf_printf(&name, "%slatency %s %s", name.n ? "," : "", k ? "<=" : ">=", d);
    }
    if (text) {
        tdx_buf_printf(&name, "%slog contains ", name.n ? "," : "");
        tdx_go_quote(&name, (const uint8_t *)text, strlen(text));
    }
    tdx_buf_append(&name, "", 1);
    tdx_index ix;
    if (cli_open_index(path, &ix, false)) {
        tdx_vec_free(&name);
        return TDX_EXIT_FAIL;
    }
    tdx_err err;
    tdx_err_clear(&err);
    tdx_vgstore store; /* tdx_vgstore_load initializes it */
    memset(&store, 0, sizeof store);
    walk w;
    memset(&w, 0, sizeof w);
    w.store = &store;
    int rc = -1;
    uint64_t len, slen;
    const uint8_t *sp = tdx_index_section(&ix, TDX_SEC_SUMMARY, &slen, &err);
    const uint8_t *p = sp ? tdx_index_section(&ix, TDX_SEC_VGSTORE, &len, &err) : NULL;
    tdx_summary fields;
    memset(&fields, 0, sizeof fields);
    if (!p || tdx_vgstore_load(&store, p, (size_t)len, &ix.tabs, &err) ||
        tdx_sumindex_fields(&ix, &fields, &err))
        goto report;
    if (has_id) {
        tdx_taskevents te;
        int got = tdx_taskevents_read(&ix, &store, id, &te, &err);
        if (got < 0) goto report;
        if (got > 0) {
            fprintf(stderr,
                    "traceidx: %s: no task %" PRIu64 " ('traceidx tasks %s' lists the types)\n",
                    ix.path, id, path);
            goto out;
        }
        got = show_task(&ix, &store, &te, json, path, &err);
        tdx_taskevents_free(&te);
        if (got < 0) goto report;
        rc = got ? -1 : 0;
        goto out;
    }
    w.t0 = fields.t0;
    w.tend = fields.valid_end;
    /* the list's tasks past the budget go to an unnamed scratch file in TMPDIR (the sort keeps
     * this path until it is freed) */
    char beside[4096];
    cli_scratch_beside(beside, sizeof beside);
    if (list) {
        w.one = true;
        w.has_type = type != NULL;
        if (type) w.want = (tdx_str){(const uint8_t *)type, (uint32_t)strlen(type)};
        w.complete_want = complete_want;
        w.latmin = latmin;
        w.latmax = latmax;
        if (!(w.sorted = tdx_xsort_new(beside, (size_t)budget))) {
            tdx_errf(&err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
            goto report;
        }
    }
    if (text) {
        /* the logs are in the blocks only: one pass over them, then every task with its
         * regions */
        w.text = (tdx_str){(const uint8_t *)text, (uint32_t)strlen(text)};
        logscan ls = {&w, 0};
        cli_progress prog;
        cli_progress_init(&prog, "tasks --logtext", false);
        int got = cli_index_events(&ix, scan_log, &ls, &prog, &err);
        cli_progress_end(&prog);
        if (ls.oom) tdx_errf(&err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        if (got || ls.oom ||
            tdx_sumindex_walk_tasks(sp, (size_t)slen, ix.sec[TDX_SEC_SUMMARY].off, &store,
                                    on_whole_task, &w, &err))
            goto report;
    } else if (tdx_sumindex_tasks(sp, (size_t)slen, ix.sec[TDX_SEC_SUMMARY].off, &store, on_task,
                                  &w, &err)) {
        goto report;
    }
    if (tdx_index_strings_ok(&ix, &err)) goto report;
    if (type && !w.type_seen) {
        fprintf(stderr,
                "traceidx: %s: no task of type \"%s\" ('traceidx tasks %s' lists the types)\n",
                ix.path, type, path);
        goto out;
    }
    int got = list ? show_list(&w, &ix, &store, json, events, (const char *)name.v, path, &err)
                   : show_types(&w, json);
    if (got < 0) goto report;
    rc = got ? -1 : 0;
    goto out;
report:
    cli_report(ix.path, &err);
out:
    tdx_vec_free(&name);
    tdx_vec_free(&w.types);
    tdx_hmap_free(&w.by_name);
    tdx_hmap_free(&w.log_hits);
    tdx_vec_free(&w.pay);
    tdx_xsort_free(w.sorted);
    tdx_vgstore_free(&store);
    tdx_index_close(&ix);
    return rc ? TDX_EXIT_FAIL : TDX_EXIT_OK;
}
