/* api.c: libtraceidx's public API (traceidx.h) over the library's own calls: opaque handles,
 * errors as objects the caller frees, strings NUL-terminated for C callers. */
#include "index/api/traceidx.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/regfile.h"
#include "core/varint.h"
#include "index/analysis/gsindex.h"
#include "index/format/format.h"
#include "index/format/reader.h"
#include "index/views/query.h"

const char *traceidx_version(void) {
    return TRACEIDX_VERSION_STRING;
}

/* ---- errors ---- */

struct traceidx_error {
    traceidx_errcode code;
    uint64_t offset;
    char text[640];
};

/* Given out when an error cannot be allocated; traceidx_error_free leaves it alone. */
static traceidx_error out_of_memory = {TRACEIDX_ERR_NOMEM, TRACEIDX_NO_OFFSET, "out of memory"};

const char *traceidx_error_text(const traceidx_error *e) {
    return e ? e->text : "";
}

traceidx_errcode traceidx_error_code(const traceidx_error *e) {
    return e ? e->code : TRACEIDX_OK;
}

uint64_t traceidx_error_offset(const traceidx_error *e) {
    return e ? e->offset : TRACEIDX_NO_OFFSET;
}

const char *traceidx_errcode_name(traceidx_errcode code) {
    static const char *const names[] = {"TRACEIDX_OK",
                                        "TRACEIDX_ERR_IO",
                                        "TRACEIDX_ERR_NOMEM",
                                        "TRACEIDX_ERR_USAGE",
                                        "TRACEIDX_ERR_NOT_FOUND",
                                        "TRACEIDX_ERR_NO_INDEX",
                                        "TRACEIDX_ERR_STALE",
                                        "TRACEIDX_ERR_INDEX",
                                        "TRACEIDX_ERR_FORMAT",
                                        "TRACEIDX_ERR_UNSUPPORTED",
                                        "TRACEIDX_ERR_WRITE"};
    return (unsigned)code < sizeof names / sizeof *names ? names[code] : "?";
}

void traceidx_error_free(traceidx_error *e) {
    if (e != &out_of_memory) free(e);
}

/* Stores a new error in *err (when err is not NULL): "FILE: offset N: message", as the CLI
 * words its reports (file NULL: the message alone). Returns -1. */
static int fail(traceidx_error **err, traceidx_errcode code, const char *file, uint64_t offset,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int fail(traceidx_error **err, traceidx_errcode code, const char *file, uint64_t offset,
                const char *fmt, ...) {
    if (!err) return -1;
    traceidx_error *e = malloc(sizeof *e);
    if (!e) {
        *err = &out_of_memory;
        return -1;
    }
    e->code = code;
    e->offset = offset;
    int n = 0;
    if (file && offset != TRACEIDX_NO_OFFSET)
        n = snprintf(e->text, sizeof e->text, "%s: offset %llu: ", file,
                     (unsigned long long)offset);
    else if (file)
        n = snprintf(e->text, sizeof e->text, "%s: ", file);
    if (n < 0 || (size_t)n >= sizeof e->text) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text + n, sizeof e->text - (size_t)n, fmt, ap);
    va_end(ap);
    *err = e;
    return -1;
}

/* The library's error kinds as the API's codes. */
static traceidx_errcode code_of(int kind) {
    switch (kind) {
    case TDX_EFORMAT:
    case TDX_EVALIDATE:
        return TRACEIDX_ERR_FORMAT;
    case TDX_EUNSUPPORTED:
        return TRACEIDX_ERR_UNSUPPORTED;
    case TDX_EIO:
        return TRACEIDX_ERR_IO;
    case TDX_ENOMEM:
        return TRACEIDX_ERR_NOMEM;
    case TDX_EUSAGE:
        return TRACEIDX_ERR_USAGE;
    default:
        return TRACEIDX_ERR_INDEX;
    }
}

static int fail_with(traceidx_error **err, traceidx_errcode code, const char *file,
                     const tdx_err *e) {
    return fail(err, code, file, e->offset, "%s", e->msg);
}

/* ---- an index ---- */

struct traceidx_index {
    tdx_index ix;
};

int traceidx_open(const char *path, unsigned flags, traceidx_index **out, traceidx_error **err) {
    if (!path || !out)
        return fail(err, TRACEIDX_ERR_USAGE, NULL, TRACEIDX_NO_OFFSET,
                    "traceidx_open: path and out must not be NULL");
    traceidx_index *h = calloc(1, sizeof *h);
    if (!h) return fail(err, TRACEIDX_ERR_NOMEM, path, TRACEIDX_NO_OFFSET, "out of memory");
    tdx_err e;
    tdx_err_clear(&e);
    /* An index by its magic; a file that cannot be read is reported by the index's open. */
    uint8_t magic[8] = {0};
    ssize_t got = tdx_read_head(path, magic, sizeof magic);
    if ((got == 8 && tdx_is_index(magic, 8)) || got < 0) {
        if (!tdx_index_open(&h->ix, path, &e)) {
            *out = h;
            return 0;
        }
        free(h);
        return fail_with(err, code_of(e.kind), path, &e);
    }
    char *ipath = NULL;
    int rc = tdx_index_open_beside(&h->ix, path, flags & TRACEIDX_OPEN_FULL_CHECK, &ipath, &e);
    if (!rc) {
        *out = h;
        return 0;
    }
    free(h);
    if (rc == TDX_BESIDE_MISSING)
        fail(err, TRACEIDX_ERR_NO_INDEX, path, TRACEIDX_NO_OFFSET,
             "no index beside it (%s); create it with `traceidx build %s`", ipath, path);
    else
        fail_with(err, rc == TDX_BESIDE_STALE ? TRACEIDX_ERR_STALE : code_of(e.kind),
                  ipath ? ipath : path, &e);
    free(ipath);
    return -1;
}

void traceidx_close(traceidx_index *h) {
    if (!h) return;
    tdx_index_close(&h->ix);
    free(h);
}

const char *traceidx_path(const traceidx_index *h) {
    return h ? h->ix.path : "";
}

void traceidx_get_info(const traceidx_index *h, traceidx_info *out) {
    const uint64_t *m = h->ix.meta;
    memset(out, 0, sizeof *out);
    out->format_version = h->ix.version;
    out->go_version = (uint32_t)m[M_TRACE_VERSION];
    out->trace_bytes = h->ix.trace_size;
    out->index_bytes = h->ix.size;
    out->first_time_ns = (int64_t)m[M_FIRST_TIME];
    out->last_time_ns = (int64_t)m[M_LAST_TIME];
    out->span_ns = (int64_t)(m[M_LAST_TIME] - m[M_FIRST_TIME]);
    out->generations = m[M_GENERATIONS];
    out->events = m[M_EVENTS];
    out->goroutines = m[M_GOROUTINES];
    out->procs = m[M_PROCS];
    out->threads = m[M_THREADS];
    out->partial = h->ix.partial;
}

/* ---- split ranges and queries ---- */

int traceidx_ranges(traceidx_index *h, traceidx_range **out, size_t *n, traceidx_error **err) {
    if (!h || !out || !n)
        return fail(err, TRACEIDX_ERR_USAGE, NULL, TRACEIDX_NO_OFFSET,
                    "traceidx_ranges: ix, out and n must not be NULL");
    *out = NULL;
    *n = 0;
    tdx_vrange *rs;
    size_t nr;
    tdx_err e;
    tdx_err_clear(&e);
    if (tdx_query_ranges(&h->ix, &rs, &nr, &e))
        return fail_with(err, code_of(e.kind), h->ix.path, &e);
    if (!nr) {
        free(rs);
        return 0;
    }
    /* One block: the array, then the names it points at. */
    size_t names = 0;
    for (size_t i = 0; i < nr; i++) names += strnlen(rs[i].name, sizeof rs[i].name) + 1;
    traceidx_range *r = malloc(nr * sizeof *r + names);
    if (!r) {
        free(rs);
        return fail(err, TRACEIDX_ERR_NOMEM, h->ix.path, TRACEIDX_NO_OFFSET, "out of memory");
    }
    char *s = (char *)(r + nr);
    for (size_t i = 0; i < nr; i++) {
        size_t l = strnlen(rs[i].name, sizeof rs[i].name);
        memcpy(s, rs[i].name, l);
        s[l] = 0;
        r[i] = (traceidx_range){
            s, rs[i].start, rs[i].end, rs[i].start_time, rs[i].end_time, rs[i].bytes};
        s += l + 1;
    }
    free(rs);
    *out = r;
    *n = nr;
    return 0;
}

void traceidx_ranges_free(traceidx_range *ranges) {
    free(ranges);
}

typedef struct sink {
    traceidx_write_fn write;
    void *ctx;
    int rc; /* what the callback returned, when not 0 */
} sink;

static int sink_write(void *ctx, const void *p, size_t n) {
    sink *s = ctx;
    int rc = s->write(s->ctx, p, n);
    if (rc) s->rc = rc;
    return rc ? -1 : 0;
}

int traceidx_query_run(traceidx_index *h, const traceidx_query *q, traceidx_write_fn write,
                       void *ctx, traceidx_error **err) {
    if (!h || !q || !write)
        return fail(err, TRACEIDX_ERR_USAGE, NULL, TRACEIDX_NO_OFFSET,
                    "traceidx_query_run: ix, q and write must not be NULL");
    const char *path = h->ix.path;
    tdx_query tq;
    memset(&tq, 0, sizeof tq);
    tq.thread = q->threads != 0;
    switch (q->focus) {
    case TRACEIDX_FOCUS_NONE:
        break;
    case TRACEIDX_FOCUS_GOROUTINE:
        tq.has_goid = true, tq.goid = q->id;
        break;
    case TRACEIDX_FOCUS_TASK:
        tq.has_focustask = true, tq.focustask = q->id;
        break;
    case TRACEIDX_FOCUS_TASK_GOROUTINES:
        tq.has_taskid = true, tq.taskid = q->id;
        break;
    default:
        return fail(err, TRACEIDX_ERR_USAGE, NULL, TRACEIDX_NO_OFFSET,
                    "traceidx_query_run: unknown focus %d", (int)q->focus);
    }
    if (tq.thread && (tq.has_goid || tq.has_taskid))
        return fail(err, TRACEIDX_ERR_USAGE, NULL, TRACEIDX_NO_OFFSET,
                    "traceidx_query_run: the thread view is for the proc and task views; a "
                    "goroutine or a task's goroutines are drawn in the goroutine view");
    switch (q->part) {
    case TRACEIDX_PART_ALL:
        break;
    case TRACEIDX_PART_SPLIT_RANGE: {
        tdx_vrange *rs;
        size_t nr;
        tdx_err e;
        tdx_err_clear(&e);
        if (q->from < 0)
            return fail(err, TRACEIDX_ERR_USAGE, NULL, TRACEIDX_NO_OFFSET,
                        "traceidx_query_run: split range %lld", (long long)q->from);
        if (tdx_query_ranges(&h->ix, &rs, &nr, &e))
            return fail_with(err, code_of(e.kind), path, &e);
        if ((uint64_t)q->from >= nr) {
            free(rs);
            return fail(err, TRACEIDX_ERR_NOT_FOUND, path, TRACEIDX_NO_OFFSET,
                        "no range #%lld: the trace has %zu split range%s", (long long)q->from, nr,
                        nr == 1 ? "" : "s");
        }
        tq.has_index = true;
        tq.start = rs[q->from].start;
        tq.end = rs[q->from].end;
        free(rs);
        break;
    }
    case TRACEIDX_PART_EVENTS:
        tq.has_index = true, tq.start = q->from, tq.end = q->to;
        break;
    case TRACEIDX_PART_WINDOW:
        if (q->to < q->from)
            return fail(err, TRACEIDX_ERR_USAGE, NULL, TRACEIDX_NO_OFFSET,
                        "traceidx_query_run: the window %lld:%lld ends before it starts",
                        (long long)q->from, (long long)q->to);
        tq.has_window = true, tq.wstart = q->from, tq.wend = q->to;
        break;
    default:
        return fail(err, TRACEIDX_ERR_USAGE, NULL, TRACEIDX_NO_OFFSET,
                    "traceidx_query_run: unknown part %d", (int)q->part);
    }
    sink s = {write, ctx, 0};
    tdx_query_stats st;
    tdx_err e;
    tdx_err_clear(&e);
    if (!tdx_query_run(&h->ix, &tq, sink_write, &s, &st, &e)) return 0;
    if (s.rc)
        return fail(err, TRACEIDX_ERR_WRITE, NULL, TRACEIDX_NO_OFFSET,
                    "the write callback returned %d", s.rc);
    /* The query's own usage errors are a goroutine or task the trace does not have. */
    return fail_with(err, e.kind == TDX_EUSAGE ? TRACEIDX_ERR_NOT_FOUND : code_of(e.kind), path,
                     &e);
}

/* ---- goroutine statistics ---- */

struct traceidx_gstats {
    traceidx_index *h;
    tdx_gsindex gx;
    /* the section's strings NUL-terminated, by id (0: "") */
    char **strs;
    size_t nstrs;
    bool reading; /* traceidx_gstats_begin was called */
    traceidx_labeled_ns *kv;
    size_t kv_cap;
};

void traceidx_gstats_close(traceidx_gstats *gs) {
    if (!gs) return;
    for (size_t i = 0; gs->strs && i < gs->nstrs; i++) free(gs->strs[i]);
    free(gs->strs);
    free(gs->kv);
    tdx_gsindex_free(&gs->gx);
    free(gs);
}

/* String id's text, and its length in *len. */
static const char *gs_str(const traceidx_gstats *gs, uint32_t id, size_t *len) {
    tdx_str s = tdx_gsindex_str(&gs->gx, id);
    *len = s.n;
    return id < gs->nstrs ? gs->strs[id] : "";
}

int traceidx_gstats_open(traceidx_index *h, traceidx_gstats **out, traceidx_error **err) {
    if (!h || !out)
        return fail(err, TRACEIDX_ERR_USAGE, NULL, TRACEIDX_NO_OFFSET,
                    "traceidx_gstats_open: ix and out must not be NULL");
    tdx_index *ix = &h->ix;
    if (!ix->sec[TDX_SEC_GSTATS].present)
        return fail(err, TRACEIDX_ERR_INDEX, ix->path, TRACEIDX_NO_OFFSET,
                    "the index holds no goroutine statistics this traceidx reads (an earlier "
                    "one built it): rebuild it with `traceidx build`");
    traceidx_gstats *gs = calloc(1, sizeof *gs);
    if (!gs) return fail(err, TRACEIDX_ERR_NOMEM, ix->path, TRACEIDX_NO_OFFSET, "out of memory");
    gs->h = h;
    tdx_err e;
    tdx_err_clear(&e);
    uint64_t len;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_GSTATS, &len, &e);
    if (!p || tdx_gsindex_open(&gs->gx, p, (size_t)len, ix->sec[TDX_SEC_GSTATS].off, &e) ||
        tdx_gsindex_check_span(&gs->gx, (int64_t)ix->meta[M_FIRST_TIME],
                               (int64_t)ix->meta[M_LAST_TIME], &e)) {
        traceidx_gstats_close(gs);
        return fail_with(err, code_of(e.kind), ix->path, &e);
    }
    size_t nstrs = gs->gx.strs.n + 1;
    if (!(gs->strs = calloc(nstrs, sizeof *gs->strs))) goto oom;
    gs->nstrs = nstrs;
    for (size_t i = 0; i < gs->nstrs; i++) {
        tdx_str s = tdx_gsindex_str(&gs->gx, (uint32_t)i);
        if (!(gs->strs[i] = malloc((size_t)s.n + 1))) goto oom;
        if (s.n) memcpy(gs->strs[i], s.p, s.n);
        gs->strs[i][s.n] = 0;
    }
    *out = gs;
    return 0;
oom:
    traceidx_gstats_close(gs);
    return fail(err, TRACEIDX_ERR_NOMEM, ix->path, TRACEIDX_NO_OFFSET, "out of memory");
}

uint64_t traceidx_gstats_goroutines(const traceidx_gstats *gs) {
    return gs->gx.goroutines;
}

int64_t traceidx_gstats_exec_ns(const traceidx_gstats *gs) {
    return gs->gx.exec;
}

uint64_t traceidx_gstats_ngroups(const traceidx_gstats *gs) {
    return gs->gx.ngroups;
}

int traceidx_gstats_group(const traceidx_gstats *gs, uint64_t i, traceidx_group *out,
                          traceidx_error **err) {
    if (i >= gs->gx.ngroups)
        return fail(err, TRACEIDX_ERR_NOT_FOUND, gs->h->ix.path, TRACEIDX_NO_OFFSET,
                    "no group %llu: the trace has %llu", (unsigned long long)i,
                    (unsigned long long)gs->gx.ngroups);
    tdx_gsgroup g = tdx_gsindex_group(&gs->gx, i);
    out->name = gs_str(gs, g.name, &out->name_len);
    out->count = g.count;
    out->exec_ns = g.exec;
    return 0;
}

int traceidx_gstats_find_group(const traceidx_gstats *gs, const char *name, size_t name_len,
                               uint64_t *i, traceidx_error **err) {
    for (uint64_t k = 0; k < gs->gx.ngroups; k++) {
        tdx_str s = tdx_gsindex_str(&gs->gx, tdx_gsindex_group(&gs->gx, k).name);
        if (s.n == name_len && (!name_len || !memcmp(s.p, name, name_len))) {
            *i = k;
            return 0;
        }
    }
    return fail(err, TRACEIDX_ERR_NOT_FOUND, gs->h->ix.path, TRACEIDX_NO_OFFSET,
                "no goroutine starts at \"%.*s\"", (int)(name_len > 200 ? 200 : name_len),
                name_len ? name : "");
}

int traceidx_gstats_begin(traceidx_gstats *gs, uint64_t i, traceidx_error **err) {
    gs->reading = false;
    if (i >= gs->gx.ngroups)
        return fail(err, TRACEIDX_ERR_NOT_FOUND, gs->h->ix.path, TRACEIDX_NO_OFFSET,
                    "no group %llu: the trace has %llu", (unsigned long long)i,
                    (unsigned long long)gs->gx.ngroups);
    tdx_err e;
    tdx_err_clear(&e);
    if (tdx_gsindex_begin(&gs->gx, i, &e))
        return fail_with(err, code_of(e.kind), gs->h->ix.path, &e);
    gs->reading = true;
    return 0;
}

/* Labels n durations of kv into gs->kv from index `at` on. */
static void label(traceidx_gstats *gs, size_t at, const tdx_gostat_kv *kv, size_t n) {
    for (size_t i = 0; i < n; i++) {
        traceidx_labeled_ns *l = &gs->kv[at + i];
        l->label = gs_str(gs, kv[i].key, &l->label_len);
        l->ns = kv[i].ns;
    }
}

int traceidx_gstats_next(traceidx_gstats *gs, traceidx_goroutine *out, traceidx_error **err) {
    if (!gs->reading)
        return fail(err, TRACEIDX_ERR_USAGE, NULL, TRACEIDX_NO_OFFSET,
                    "traceidx_gstats_next: call traceidx_gstats_begin first");
    tdx_gostat g;
    tdx_err e;
    tdx_err_clear(&e);
    int rc = tdx_gsindex_next(&gs->gx, &g, &e);
    if (rc < 0) {
        gs->reading = false;
        return fail_with(err, code_of(e.kind), gs->h->ix.path, &e);
    }
    if (rc == 0) return 0;
    size_t need = g.nblock + g.nrange;
    if (need > gs->kv_cap) {
        size_t cap = need < 16 ? 16 : need;
        traceidx_labeled_ns *kv = realloc(gs->kv, cap * sizeof *kv);
        if (!kv)
            return fail(err, TRACEIDX_ERR_NOMEM, gs->h->ix.path, TRACEIDX_NO_OFFSET,
                        "out of memory");
        gs->kv = kv;
        gs->kv_cap = cap;
    }
    label(gs, 0, g.block, g.nblock);
    label(gs, g.nblock, g.range, g.nrange);
    int64_t t0 = gs->gx.t0;
    memset(out, 0, sizeof *out);
    out->id = g.id;
    out->name = gs_str(gs, g.name, &out->name_len);
    out->pc = g.pc;
    out->creation_ns = tdx_wsub(g.creation, t0);
    out->started = g.start != 0;
    out->ended = g.end != 0;
    out->start_ns = out->started ? tdx_wsub(g.start, t0) : 0;
    out->end_ns = out->ended ? tdx_wsub(g.end, t0) : 0;
    out->total_ns = g.total;
    out->exec_ns = g.exec;
    out->sched_wait_ns = g.sched;
    out->syscall_ns = g.syscall;
    out->syscall_block_ns = g.syscall_block;
    out->unknown_ns = tdx_gostat_unknown(&g);
    out->block = gs->kv;
    out->nblock = g.nblock;
    out->ranges = gs->kv + g.nblock;
    out->nranges = g.nrange;
    return 1;
}
