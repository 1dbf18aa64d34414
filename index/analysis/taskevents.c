/* taskevents.c: tasks' events for the /usertask listing. SUMMARY gives a task's begin, end and
 * regions as times; since event times are unique, each is found again in the blocks by its time.
 * Logs are not in SUMMARY (only their count and the first one's time): they are read from the
 * blocks, from the first on, until the count is reached. A batch of tasks is served by one sweep
 * over the blocks, each decoded once: a list's tasks go by duration, so their events lie all
 * over the trace, and a block decoded per event cost a list of 6579 tasks 70 s. */
#include "index/analysis/taskevents.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/hmap.h"
#include "core/quote.h"
#include "index/analysis/sumindex.h"

/* An event SUMMARY names: at `time`, of kind `want`, the seq'th of task `task` in Go's order. */
typedef struct want_ev {
    int64_t time;
    uint32_t task;
    uint8_t kind;
    uint64_t seq;
} want_ev;

/* A task's logs: from the block holding the first, until `left` more are read. */
typedef struct want_logs {
    int64_t first;
    uint32_t task;
    uint64_t left, seq;
} want_logs;

#define SCAN_DONE (TDX_HMAP_EMPTY - 1) /* a task whose logs are all read */

typedef struct sweep {
    tdx_index *ix;
    tdx_taskevents *tasks;
    tdx_err *err;
    uint64_t sum_off;
    TDX_VEC(want_ev) evs;
    TDX_VEC(want_logs) logs;
    tdx_hmap active; /* task id -> index into logs, while its logs are being read */
    size_t nactive;  /* log scans active */
} sweep;

static int nomem(tdx_err *err) {
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

static int damaged(sweep *w) {
    return tdx_index_corrupt(w->err, w->sum_off, "SUMMARY (a task's event is not in the blocks)");
}

static tdx_taskrow row_of(const tdx_event *e, uint64_t seq) {
    tdx_taskrow r;
    memset(&r, 0, sizeof r);
    r.time = e->time;
    r.kind = e->kind;
    r.seq = seq;
    r.g = e->g;
    if (e->kind == TDX_KIND_STATE_TRANSITION) {
        r.g = e->res;
        r.from = e->from;
        r.to = e->to;
    }
    r.a0 = e->args[0];
    r.a1 = e->args[1];
    r.s0 = e->str[0];
    r.s1 = e->str[1];
    return r;
}

static int want(sweep *w, int64_t time, uint32_t task, int kind, uint64_t seq) {
    want_ev x = {time, task, (uint8_t)kind, seq};
    return tdx_vec_push(&w->evs, x) ? nomem(w->err) : 0;
}

/* Task i's header from its record t in s, and what of it the blocks must give. */
static int plan_from(sweep *w, const tdx_summary *s, const tdx_sumtask *t, uint32_t i) {
    tdx_taskevents *out = &w->tasks[i];
    out->t0 = s->t0;
    out->name = t->name;
    out->has_start = t->start.present;
    out->has_end = t->end.present;
    out->start = t->start.present ? t->start.time : s->t0;
    out->end = t->end.present ? t->end.time : s->valid_end;
    out->found_ = true;
    /* Go's order before its stable sort by time: begin, end, logs, then each region's begin and
     * end, regions in the order the summary recorded them */
    if ((t->start.present && want(w, t->start.time, i, TDX_KIND_TASK_BEGIN, 0)) ||
        (t->end.present && want(w, t->end.time, i, TDX_KIND_TASK_END, 1)))
        return -1;
    uint64_t seq = 2;
    if (t->nlogs) {
        want_logs l = {t->first_log.time, i, t->nlogs, seq};
        if (tdx_vec_push(&w->logs, l)) return nomem(w->err);
        seq += t->nlogs;
    }
    for (size_t k = 0; k < t->regions.n; k++) {
        const tdx_sumregion *r = &s->regions.v[t->regions.v[k]];
        if ((r->start.present && want(w, r->start.time, i, TDX_KIND_REGION_BEGIN, seq)) ||
            (r->end.present && want(w, r->end.time, i, TDX_KIND_REGION_END, seq + 1)))
            return -1;
        seq += 2;
    }
    return 0;
}

/* Task i, loaded alone. */
static int plan_one(sweep *w, tdx_vgstore *store, const uint8_t *p, size_t len, uint32_t i) {
    tdx_summary s;
    tdx_summary_init(&s, store);
    int rc = tdx_sumindex_load_task(p, len, w->sum_off, w->tasks[i].id, &s, w->err);
    if (!rc) {
        uint32_t ti = tdx_summary_task(&s, w->tasks[i].id);
        if (ti != TDX_SUM_NONE) rc = plan_from(w, &s, &s.tasks.v[ti], i);
    }
    tdx_summary_free(&s);
    return rc;
}

/* Many tasks: one walk over every task's record is cheaper than a load each (a load decodes
 * the block of records its task is in). */
typedef struct walkplan {
    sweep *w;
    tdx_hmap slot; /* task id -> index in tasks */
} walkplan;

static int plan_walked(void *ctx, const tdx_summary *s, tdx_err *err) {
    (void)err;
    walkplan *x = ctx;
    uint32_t i = tdx_hmap_get(&x->slot, s->tasks.v[0].id);
    return i == TDX_HMAP_EMPTY ? 0 : plan_from(x->w, s, &s->tasks.v[0], i);
}

#define WALK_FROM 2048 /* tasks in a batch from which a walk beats a load each */

static int plan(sweep *w, tdx_vgstore *store, size_t n) {
    uint64_t len;
    const uint8_t *p = tdx_index_section(w->ix, TDX_SEC_SUMMARY, &len, w->err);
    if (!p) return -1;
    if (n < WALK_FROM) {
        for (size_t i = 0; i < n; i++)
            if (plan_one(w, store, p, (size_t)len, (uint32_t)i)) return -1;
        return 0;
    }
    walkplan x = {w, {0}};
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        if (tdx_hmap_put(&x.slot, w->tasks[i].id, (uint32_t)i)) rc = nomem(w->err);
    if (!rc)
        rc = tdx_sumindex_walk_tasks(p, (size_t)len, w->sum_off, store, plan_walked, &x, w->err);
    tdx_hmap_free(&x.slot);
    return rc;
}

static int ev_cmp(const void *pa, const void *pb) {
    const want_ev *a = pa, *b = pb;
    return a->time < b->time ? -1 : a->time > b->time;
}
static int logs_cmp(const void *pa, const void *pb) {
    const want_logs *a = pa, *b = pb;
    return a->first < b->first ? -1 : a->first > b->first;
}
static int row_cmp(const void *pa, const void *pb) {
    const tdx_taskrow *a = pa, *b = pb;
    if (a->time != b->time) return a->time < b->time ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int add_row(sweep *w, uint32_t task, const tdx_event *e, uint64_t seq) {
    tdx_taskrow r = row_of(e, seq);
    return tdx_vec_push(&w->tasks[task].rows, r) ? nomem(w->err) : 0;
}

/* The wanted events of block b's events buf[0..n), from *ei on. */
static int take_events(sweep *w, const tdx_event *buf, size_t n, size_t *ei) {
    size_t at = 0;
    int64_t last = buf[n - 1].time;
    for (; *ei < w->evs.n && w->evs.v[*ei].time <= last; (*ei)++) {
        const want_ev *x = &w->evs.v[*ei];
        while (at < n && buf[at].time < x->time) at++;
        if (at == n || buf[at].time != x->time) return damaged(w);
        const tdx_event *e = &buf[at];
        bool ok = e->kind == x->kind ||
                  (x->kind == TDX_KIND_REGION_END && e->kind == TDX_KIND_STATE_TRANSITION &&
                   e->res_kind == TDX_RES_GOROUTINE);
        if (x->kind == TDX_KIND_TASK_BEGIN || x->kind == TDX_KIND_TASK_END)
            ok = ok && e->args[0] == w->tasks[x->task].id;
        if (!ok) return damaged(w);
        if (add_row(w, x->task, e, x->seq)) return -1;
    }
    return 0;
}

/* The logs of the active scans among buf[0..n). */
static int take_logs(sweep *w, const tdx_event *buf, size_t n) {
    for (size_t i = 0; i < n && w->nactive; i++) {
        const tdx_event *e = &buf[i];
        if (e->kind != TDX_KIND_LOG) continue;
        uint32_t li = tdx_hmap_get(&w->active, e->args[0]);
        if (li == TDX_HMAP_EMPTY || li == SCAN_DONE) continue;
        want_logs *l = &w->logs.v[li];
        /* a log before the first SUMMARY names is not the task's (a damaged index) */
        if (e->time < l->first) return damaged(w);
        if (add_row(w, l->task, e, l->seq++)) return -1;
        if (--l->left == 0) {
            if (tdx_hmap_put(&w->active, e->args[0], SCAN_DONE)) return nomem(w->err);
            w->nactive--;
        }
    }
    return 0;
}

/* Every wanted event and log, in one pass over the blocks that hold them. */
static int run_sweep(sweep *w) {
    tdx_index *ix = w->ix;
    tdx_evdec *dec = tdx_evdec_new();
    tdx_event *buf = malloc(TDX_EVBLOCK_EVENTS * sizeof *buf);
    int rc = dec && buf ? 0 : nomem(w->err);
    size_t ei = 0, li = 0, released = 0;
    size_t b = 0;
    while (!rc && (ei < w->evs.n || li < w->logs.n || w->nactive)) {
        if (!w->nactive) { /* skip ahead to the next block anything is wanted from */
            int64_t t = INT64_MAX;
            if (ei < w->evs.n) t = w->evs.v[ei].time;
            if (li < w->logs.n && w->logs.v[li].first < t) t = w->logs.v[li].first;
            size_t nb = tdx_index_block_at_time(ix, t);
            if (nb > b) b = nb;
        }
        if (b >= ix->nblocks) {
            rc = damaged(w);
            break;
        }
        size_t n;
        if (tdx_index_read_block(ix, dec, b, buf, &n, w->err)) {
            rc = -1;
            break;
        }
        if (n == 0) {
            b++;
            continue;
        }
        /* the scans of logs that begin in this block */
        for (int64_t last = buf[n - 1].time; li < w->logs.n && w->logs.v[li].first <= last; li++) {
            const want_logs *l = &w->logs.v[li];
            uint64_t id = w->tasks[l->task].id;
            if (tdx_hmap_get(&w->active, id) != TDX_HMAP_EMPTY) { /* one scan a task */
                rc = damaged(w);
                break;
            }
            if (tdx_hmap_put(&w->active, id, (uint32_t)li)) {
                rc = nomem(w->err);
                break;
            }
            w->nactive++;
        }
        if (!rc) rc = take_events(w, buf, n, &ei);
        if (!rc) rc = take_logs(w, buf, n);
        b++;
        /* a long sweep keeps only the blocks still to read mapped */
        if (b >= released + TDX_RELEASE_EVERY) tdx_index_release_blocks(ix, released = b);
    }
    tdx_evdec_free(dec);
    free(buf);
    return rc;
}

int tdx_taskevents_read_all(tdx_index *ix, tdx_vgstore *store, tdx_taskevents *tasks, size_t n,
                            tdx_err *err) {
    sweep w;
    memset(&w, 0, sizeof w);
    w.ix = ix;
    w.tasks = tasks;
    w.err = err;
    w.sum_off = ix->sec[TDX_SEC_SUMMARY].off;
    for (size_t i = 0; i < n; i++) {
        uint64_t id = tasks[i].id;
        memset(&tasks[i], 0, sizeof tasks[i]);
        tasks[i].id = id;
    }
    int rc = n > UINT32_MAX - 2 ? nomem(err) : plan(&w, store, n), missing = 0;
    for (size_t i = 0; i < n && !rc; i++)
        if (!tasks[i].found_) missing = 1;
    if (!rc) {
        if (w.evs.n) qsort(w.evs.v, w.evs.n, sizeof *w.evs.v, ev_cmp);
        if (w.logs.n) qsort(w.logs.v, w.logs.n, sizeof *w.logs.v, logs_cmp);
        rc = run_sweep(&w);
    }
    for (size_t i = 0; i < n && !rc; i++)
        if (tasks[i].rows.n)
            qsort(tasks[i].rows.v, tasks[i].rows.n, sizeof *tasks[i].rows.v, row_cmp);
    if (!rc) rc = tdx_index_strings_ok(ix, err);
    if (rc < 0)
        for (size_t i = 0; i < n; i++) tdx_taskevents_free(&tasks[i]);
    tdx_vec_free(&w.evs);
    tdx_vec_free(&w.logs);
    tdx_hmap_free(&w.active);
    return rc ? rc : missing;
}

int tdx_taskevents_read(tdx_index *ix, tdx_vgstore *store, uint64_t id, tdx_taskevents *out,
                        tdx_err *err) {
    out->id = id;
    return tdx_taskevents_read_all(ix, store, out, 1, err);
}

void tdx_taskevents_free(tdx_taskevents *t) {
    tdx_vec_free(&t->rows);
}

int tdx_taskrow_describe(tdx_buf *out, const tdx_taskrow *r, const tdx_gen *tabs) {
    tdx_str a = tdx_gen_str(tabs, r->s0), b = tdx_gen_str(tabs, r->s1);
    int rc = 0;
    switch (r->kind) {
    case TDX_KIND_STATE_TRANSITION:
        rc = tdx_buf_printf(out, "%s -> %s", tdx_gostate_name(r->from), tdx_gostate_name(r->to));
        break;
    case TDX_KIND_REGION_BEGIN:
    case TDX_KIND_REGION_END:
        rc = tdx_buf_append(out, "region ", 7) || tdx_go_quote(out, a.p, a.n) ||
             tdx_buf_printf(out, r->kind == TDX_KIND_REGION_BEGIN ? " begin" : " end");
        break;
    case TDX_KIND_TASK_BEGIN:
        rc = tdx_buf_append(out, "task ", 5) || tdx_go_quote(out, a.p, a.n) ||
             tdx_buf_printf(out, " (D %" PRIu64 ", parent %" PRIu64 ") begin", r->a0, r->a1);
        break;
    case TDX_KIND_TASK_END:
        rc = tdx_buf_append(out, "task end", 8);
        break;
    case TDX_KIND_LOG:
        /* Go's test is the wrong way round: the category shows only when it is empty */
        if (a.n)
            rc = tdx_buf_append(out, "log ", 4) || tdx_go_quote(out, b.p, b.n);
        else
            rc = tdx_buf_append(out, "log (category: ): ", 18) || tdx_go_quote(out, b.p, b.n);
        break;
    default:
        break;
    }
    return rc ? -1 : 0;
}
