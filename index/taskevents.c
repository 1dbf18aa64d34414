/* taskevents.c: a task's events for the /usertask listing. SUMMARY gives the task's begin, end
 * and regions as times; since event times are unique, each is found again in the blocks by its
 * time. Logs are not in SUMMARY (only their count and the first one's time): they are read from
 * the blocks, from the first on, until the count is reached. */
#include "index/taskevents.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/quote.h"
#include "index/sumindex.h"

typedef struct finder {
    tdx_index *ix;
    tdx_evdec *dec;
    tdx_event *buf;
    size_t n;
    size_t b; /* the block in buf (SIZE_MAX: none) */
    uint64_t sum_off;
} finder;

static int load(finder *f, size_t b, tdx_err *err) {
    if (b == f->b) return 0;
    f->b = SIZE_MAX;
    if (tdx_index_read_block(f->ix, f->dec, b, f->buf, &f->n, err)) return -1;
    f->b = b;
    return 0;
}

static int damaged(finder *f, tdx_err *err) {
    return tdx_index_corrupt(err, f->sum_off, "SUMMARY (a task's event is not in the blocks)");
}

/* The event at time t; NULL with err set when there is none. */
static const tdx_event *find_at(finder *f, int64_t t, tdx_err *err) {
    size_t b = tdx_index_block_at_time(f->ix, t);
    if (b >= f->ix->nblocks) {
        damaged(f, err);
        return NULL;
    }
    if (load(f, b, err)) return NULL;
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->buf[mid].time < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= f->n || f->buf[lo].time != t) {
        damaged(f, err);
        return NULL;
    }
    return &f->buf[lo];
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

/* The event SUMMARY names at time t, which must be of kind `want` (or, for a region's end, the
 * transition that ended its goroutine). */
static int add_at(finder *f, tdx_taskevents *t, int64_t time, int want, tdx_err *err) {
    const tdx_event *e = find_at(f, time, err);
    if (!e) return -1;
    bool ok =
        e->kind == want || (want == TDX_KIND_REGION_END && e->kind == TDX_KIND_STATE_TRANSITION &&
                            e->res_kind == TDX_RES_GOROUTINE);
    if (want == TDX_KIND_TASK_BEGIN || want == TDX_KIND_TASK_END) ok = ok && e->args[0] == t->id;
    if (!ok) return damaged(f, err);
    tdx_taskrow r = row_of(e, t->rows.n);
    if (tdx_vec_push(&t->rows, r)) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return 0;
}

/* The task's n logs, the first at time `first`. */
static int add_logs(finder *f, tdx_taskevents *t, int64_t first, uint64_t n, tdx_err *err) {
    uint64_t got = 0;
    for (size_t b = tdx_index_block_at_time(f->ix, first); got < n && b < f->ix->nblocks; b++) {
        if (load(f, b, err)) return -1;
        for (size_t i = 0; i < f->n && got < n; i++) {
            const tdx_event *e = &f->buf[i];
            if (e->time < first || e->kind != TDX_KIND_LOG || e->args[0] != t->id) continue;
            tdx_taskrow r = row_of(e, t->rows.n);
            if (tdx_vec_push(&t->rows, r))
                return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
            got++;
        }
        /* a long task's logs: keep only the blocks still to read mapped */
        if ((b + 1) % TDX_RELEASE_EVERY == 0) tdx_index_release_blocks(f->ix, b + 1);
    }
    if (got < n) return damaged(f, err);
    return 0;
}

static int row_cmp(const void *pa, const void *pb) {
    const tdx_taskrow *a = pa, *b = pb;
    if (a->time != b->time) return a->time < b->time ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int tdx_taskevents_read(tdx_index *ix, tdx_vgstore *store, uint64_t id, tdx_taskevents *out,
                        tdx_err *err) {
    memset(out, 0, sizeof *out);
    out->id = id;
    tdx_summary s;
    tdx_summary_init(&s, store);
    finder f = {ix, tdx_evdec_new(), malloc(TDX_EVBLOCK_EVENTS * sizeof(tdx_event)),
                0,  SIZE_MAX,        ix->sec[TDX_SEC_SUMMARY].off};
    int rc = -1;
    if (!f.dec || !f.buf) {
        tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        goto out;
    }
    uint64_t len;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_SUMMARY, &len, err);
    /* a goroutine-oriented task query's load: the task with its regions */
    tdx_viewquery q = {.has_taskid = true, .taskid = id};
    if (!p || tdx_sumindex_load(p, (size_t)len, f.sum_off, &q, &s, err)) goto out;
    uint32_t ti = tdx_summary_task(&s, id);
    if (ti == TDX_SUM_NONE) {
        rc = 1;
        goto out;
    }
    const tdx_sumtask *t = &s.tasks.v[ti];
    out->t0 = s.t0;
    out->name = t->name;
    out->has_start = t->start.present;
    out->has_end = t->end.present;
    out->start = t->start.present ? t->start.time : s.t0;
    out->end = t->end.present ? t->end.time : s.valid_end;
    /* Go's order before its stable sort by time: begin, end, logs, then each region's begin and
     * end, regions in the order the summary recorded them */
    if ((t->start.present && add_at(&f, out, t->start.time, TDX_KIND_TASK_BEGIN, err)) ||
        (t->end.present && add_at(&f, out, t->end.time, TDX_KIND_TASK_END, err)) ||
        (t->nlogs && add_logs(&f, out, t->first_log.time, t->nlogs, err)))
        goto out;
    for (size_t i = 0; i < t->regions.n; i++) {
        const tdx_sumregion *r = &s.regions.v[t->regions.v[i]];
        if ((r->start.present && add_at(&f, out, r->start.time, TDX_KIND_REGION_BEGIN, err)) ||
            (r->end.present && add_at(&f, out, r->end.time, TDX_KIND_REGION_END, err)))
            goto out;
    }
    if (out->rows.n) qsort(out->rows.v, out->rows.n, sizeof *out->rows.v, row_cmp);
    rc = tdx_index_strings_ok(ix, err);
out:
    if (rc < 0) tdx_taskevents_free(out);
    tdx_summary_free(&s);
    tdx_evdec_free(f.dec);
    free(f.buf);
    return rc;
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
