/* sumspill.c: the summary's settled records moved to external sorts and folded back by key.
 *
 * What stays in memory after a compaction is what later events can still change: goroutines that
 * have not ended and the regions open on them (with an otherwise empty part for each such
 * region's task, so the task has a part when the region is spilled). A task never settles (a
 * region or log may name it at any time), so each compaction spills every task's part so far;
 * the fold merges the parts in the order they were spilled, as one record over the whole trace
 * would have changed: the last begin or end sets the name, start and end, the first parent set
 * stays, logs add up and goroutines keep their first-seen order. Regions have a sort of their
 * own, by task and creation, so that a task's are read back in order one at a time: the
 * background task of a long trace holds every region outside a task (1.6 M at 4 GiB). */
#include "index/analysis/sumspill.h"

#include <stdlib.h>
#include <string.h>

#include "index/common/viewgen_ser.h"

enum { P_START = 1, P_END = 2, P_PARENT = 4 };

int tdx_sumspill_init(tdx_sumspill *sp, const char *beside, size_t budget) {
    memset(sp, 0, sizeof *sp);
    sp->beside = beside;
    size_t b = beside ? budget : SIZE_MAX;
    /* task parts and their regions were one sort (and its budget) until regions had their own */
    sp->g = tdx_xsort_new(beside, b);
    sp->e = tdx_xsort_new(beside, b);
    sp->t = tdx_xsort_new(beside, beside ? b / 2 : b);
    sp->r = tdx_xsort_new(beside, beside ? b / 2 : b);
    sp->named = tdx_xsort_new(beside, b);
    sp->attach = tdx_xsort_new(beside, b);
    if (sp->g && sp->e && sp->t && sp->r && sp->named && sp->attach) return 0;
    tdx_sumspill_free(sp);
    return -1;
}

void tdx_sumspill_free(tdx_sumspill *sp) {
    tdx_xsort_free(sp->g);
    tdx_xsort_free(sp->e);
    tdx_xsort_free(sp->t);
    tdx_xsort_free(sp->r);
    tdx_xsort_free(sp->named);
    tdx_xsort_free(sp->attach);
    memset(sp, 0, sizeof *sp);
}

static void more_close(tdx_sumfold *f) {
    if (f->more_on) tdx_scratch_close(&f->more);
    f->more_on = false;
    f->nmore = 0;
}

void tdx_sumfold_free(tdx_sumfold *f) {
    more_close(f);
    tdx_vec_free(&f->goroutines);
    tdx_vec_free(&f->children);
    tdx_idset_free(&f->seen);
    f->seen_on = false;
}

static int nomem(tdx_err *err) {
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

/* ---- spilling ---- */

static int put_ev(tdx_buf *b, const tdx_sumev *e) {
    return tdx_ser_i(b, e->time) | tdx_ser_i(b, e->g) | tdx_buf_uvarint(b, e->stack);
}

/* A task's part: flags, name, [start], [end], [parent id, event], nlogs, [first log],
 * goroutines. Its regions go to the regions' sort, each once it has closed. */
static int put_task(tdx_buf *b, const tdx_summary *s, const tdx_sumtask *t) {
    bool par = t->parent != TDX_SUM_NONE;
    int rc = tdx_buf_uvarint(b, (uint64_t)t->start.present * P_START |
                                    (uint64_t)t->end.present * P_END | (uint64_t)par * P_PARENT) |
             tdx_buf_uvarint(b, t->name);
    if (t->start.present) rc |= put_ev(b, &t->start);
    if (t->end.present) rc |= put_ev(b, &t->end);
    if (par) rc |= tdx_buf_uvarint(b, s->tasks.v[t->parent].id) | tdx_buf_uvarint(b, t->parent_ev);
    rc |= tdx_buf_uvarint(b, t->nlogs);
    if (t->nlogs) rc |= put_ev(b, &t->first_log);
    rc |= tdx_buf_uvarint(b, t->goroutines.n);
    for (size_t k = 0; k < t->goroutines.n; k++) rc |= tdx_ser_i(b, t->goroutines.v[k]);
    return rc ? -1 : 0;
}

/* The regions of task t that are not open (open NULL: all), keyed (task id, seq): read back
 * by task in creation order, however they closed. */
static int put_regions(tdx_sumspill *sp, const tdx_summary *s, const tdx_sumtask *t,
                       const uint8_t *open, tdx_buf *b, tdx_err *err) {
    for (size_t k = 0; k < t->regions.n; k++) {
        if (open && open[t->regions.v[k]]) continue;
        const tdx_sumregion *r = &s->regions.v[t->regions.v[k]];
        b->n = 0;
        if (tdx_buf_uvarint(b, r->name) |
            tdx_buf_uvarint(b, (uint64_t)r->start.present | (uint64_t)r->end.present << 1) |
            (r->start.present ? put_ev(b, &r->start) : 0) |
            (r->end.present ? put_ev(b, &r->end) : 0))
            return nomem(err);
        if (tdx_xsort_add(sp->r, t->id, r->seq, b->v, b->n, err)) return -1;
    }
    return 0;
}

static void pairmap_clear(tdx_pairmap *m) {
    if (m->v) memset(m->v, 0, (m->mask + 1) * sizeof *m->v);
    m->n = 0;
}

static void free_tasks(tdx_summary *s) {
    for (size_t i = 0; i < s->tasks.n; i++) {
        tdx_vec_free(&s->tasks.v[i].children);
        tdx_vec_free(&s->tasks.v[i].regions);
        tdx_vec_free(&s->tasks.v[i].goroutines);
    }
    s->tasks.n = 0;
    tdx_hmap_clear(&s->t_idx);
    pairmap_clear(&s->task_gs);
}

static int put_g(tdx_sumspill *sp, const tdx_sumg *g, uint64_t when, tdx_buf *b, tdx_err *err) {
    b->n = 0;
    if (tdx_ser_i(b, g->creation) | tdx_ser_i(b, g->start) | tdx_ser_i(b, g->end) |
        tdx_buf_uvarint(b, g->name) | tdx_buf_uvarint(b, g->pc))
        return nomem(err);
    return tdx_xsort_add(sp->g, (uint64_t)g->id ^ TDX_XSORT_SIGN, when, b->v, b->n, err);
}

/* Spills every task's part (without the regions marked in `open`), every edge and the
 * goroutines that ended; with open NULL (the end), every region and goroutine. */
static int emit(tdx_sumspill *sp, const tdx_summary *s, const uint8_t *open, tdx_err *err) {
    if (s->oom) return nomem(err);
    uint64_t when = s->nevents;
    tdx_buf b = {0};
    int rc = 0;
    for (size_t i = 0; i < s->tasks.n && !rc; i++) {
        const tdx_sumtask *t = &s->tasks.v[i];
        b.n = 0;
        rc = put_task(&b, s, t) ? nomem(err) : tdx_xsort_add(sp->t, t->id, when, b.v, b.n, err);
        if (!rc) rc = put_regions(sp, s, t, open, &b, err);
        if (!rc && t->parent != TDX_SUM_NONE) {
            uint8_t p[8];
            tdx_le64(p, s->tasks.v[t->parent].id);
            rc = tdx_xsort_add(sp->named, t->id, t->parent_ev, p, sizeof p, err);
        }
    }
    for (size_t i = 0; i < s->edge_a.n && !rc; i++)
        rc = tdx_xsort_add(sp->e, (uint64_t)s->edge_b.v[i] ^ TDX_XSORT_SIGN,
                           (uint64_t)s->edge_a.v[i] ^ TDX_XSORT_SIGN, NULL, 0, err);
    for (size_t i = 0; i < s->gs.n && !rc; i++)
        if (!open || s->gs.v[i].gone) rc = put_g(sp, &s->gs.v[i], when, &b, err);
    tdx_vec_free(&b);
    return rc;
}

int tdx_sumspill_put_all(tdx_sumspill *sp, const tdx_summary *s, tdx_err *err) {
    return emit(sp, s, NULL, err);
}

int tdx_sumspill_compact(tdx_sumspill *sp, tdx_summary *s, tdx_err *err) {
    /* The regions still open on a goroutine that has not ended stay. */
    size_t cap = s->regions.n ? s->regions.n : 1;
    uint8_t *open = calloc(cap, 1);
    uint32_t *remap = malloc(cap * sizeof *remap);
    if (!open || !remap) goto oom;
    for (size_t i = 0; i < s->gs.n; i++)
        for (size_t k = 0; k < s->gs.v[i].active.n; k++)
            if (s->gs.v[i].active.v[k] != TDX_SUM_SYNTH) open[s->gs.v[i].active.v[k]] = 1;
    if (emit(sp, s, open, err)) goto fail;
    s->edge_a.n = s->edge_b.n = s->edge_ev.n = 0;
    pairmap_clear(&s->edges);
    size_t nr = 0;
    for (size_t i = 0; i < s->regions.n; i++)
        if (open[i]) {
            remap[i] = (uint32_t)nr;
            s->regions.v[nr++] = s->regions.v[i];
        }
    s->regions.n = nr;
    /* The goroutines that ended go; the others move down, their open regions renumbered. */
    tdx_hmap_clear(&s->g_idx);
    size_t ng = 0;
    for (size_t i = 0; i < s->gs.n; i++) {
        tdx_sumg *g = &s->gs.v[i];
        if (g->gone) {
            tdx_vec_free(&g->active);
            continue;
        }
        for (size_t k = 0; k < g->active.n; k++)
            if (g->active.v[k] != TDX_SUM_SYNTH) g->active.v[k] = remap[g->active.v[k]];
        s->gs.v[ng] = *g;
        if (tdx_hmap_put(&s->g_idx, (uint64_t)g->id, (uint32_t)ng)) goto oom;
        ng++;
    }
    s->gs.n = ng;
    /* Every task's part went; the open regions start their tasks' next parts. */
    free_tasks(s);
    for (size_t i = 0; i < s->regions.n; i++) {
        uint32_t ti = tdx_summary_task_add(s, s->regions.v[i].task);
        if (ti == TDX_SUM_NONE || tdx_vec_push(&s->tasks.v[ti].regions, (uint32_t)i)) goto oom;
    }
    free(open);
    free(remap);
    return 0;
oom:
    nomem(err);
fail:
    s->oom = 1; /* half compacted: unusable */
    free(open);
    free(remap);
    return -1;
}

/* ---- reading back ---- */

int tdx_sumspill_rewind(tdx_sumspill *sp, tdx_err *err) {
    sp->ghave = sp->thave = sp->rhave = 0;
    return tdx_xsort_rewind(sp->g, err) || tdx_xsort_rewind(sp->e, err) ||
                   tdx_xsort_rewind(sp->t, err) || tdx_xsort_rewind(sp->r, err)
               ? -1
               : 0;
}

/* The record looked at next (its payload stays valid until it is dropped): 1, 0 at the end. */
static int peek(tdx_xsort *x, tdx_xrec *cur, int *have, tdx_err *err) {
    if (!*have) {
        int k = tdx_xsort_next(x, cur, err);
        if (k < 0) return -1;
        *have = k ? 1 : 2;
    }
    return *have == 1;
}

static int damaged(tdx_err *err) {
    return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET,
                    "internal error: a spilled summary record does not decode");
}

int tdx_sumspill_next_g(tdx_sumspill *sp, tdx_sumgrec *g, tdx_err *err) {
    int k = peek(sp->g, &sp->gcur, &sp->ghave, err);
    if (k <= 0) return k;
    uint64_t key = sp->gcur.k1;
    /* Records of one id are in the order spilled: the last is the goroutine's. */
    while ((k = peek(sp->g, &sp->gcur, &sp->ghave, err)) == 1 && sp->gcur.k1 == key) {
        const tdx_xrec *r = &sp->gcur;
        tdx_deser d = {r->p, r->p + r->n, 0};
        g->id = (int64_t)(r->k1 ^ TDX_XSORT_SIGN);
        g->creation = tdx_deser_i(&d);
        g->start = tdx_deser_i(&d);
        g->end = tdx_deser_i(&d);
        g->name = tdx_deser_u32(&d, UINT32_MAX);
        g->pc = tdx_deser_u(&d);
        if (d.bad || d.p != d.end) return damaged(err);
        sp->ghave = 0;
        sp->nread++;
    }
    return k < 0 ? -1 : 1;
}

static void get_ev(tdx_deser *d, tdx_sumev *e) {
    e->time = tdx_deser_i(d);
    e->g = tdx_deser_i(d);
    e->stack = tdx_deser_u32(d, UINT32_MAX);
    e->present = true;
}

/* Adds g to the task's goroutines unless there: a scan while they are few, a set of ids after
 * (a bitmap: the background task of the 4 GiB bench trace has 1.6 M goroutines, whose hash set
 * took 64 MiB). Past TDX_SUMFOLD_GMEM they go to a scratch file, when there is a place for one.
 * -1: out of memory, -3: the scratch file failed (reported). */
#define SEEN_SCAN 32
static int seen_add(tdx_sumspill *sp, tdx_sumfold *f, int64_t g, tdx_err *err) {
    int added = 1;
    if (f->goroutines.n < SEEN_SCAN) {
        for (size_t i = 0; i < f->goroutines.n; i++)
            if (f->goroutines.v[i] == g) return 0;
    } else {
        if (!f->seen_on) {
            f->seen_on = true;
            for (size_t i = 0; i < f->goroutines.n; i++)
                if (tdx_idset_add(&f->seen, f->goroutines.v[i], NULL)) return -1;
        }
        if (tdx_idset_add(&f->seen, g, &added)) return -1;
    }
    if (!added) return 0;
    if (f->goroutines.n < TDX_SUMFOLD_GMEM || !sp->beside) return tdx_vec_push(&f->goroutines, g);
    if (!f->more_on) {
        if (tdx_scratch_open(&f->more, sp->beside, err)) return -3;
        f->more_on = true;
    }
    uint8_t b[8];
    tdx_le64(b, (uint64_t)g);
    if (tdx_scratch_put(&f->more, b, sizeof b, err)) return -3;
    f->nmore++;
    return 0;
}

int tdx_sumfold_goroutines(const tdx_sumfold *f, uint64_t from, int64_t *out, size_t n,
                           tdx_err *err) {
    size_t inmem = f->goroutines.n;
    for (; n && from < inmem; n--) *out++ = f->goroutines.v[from++];
    if (!n) return 0;
    if (tdx_scratch_read(&f->more, (from - inmem) * 8, out, n * 8, err)) return -1;
    for (size_t i = 0; i < n; i++) out[i] = (int64_t)tdx_rd64((const uint8_t *)&out[i]);
    return 0;
}

/* 0, -1 out of memory, -2 damaged, -3 reported. */
static int fold_part(tdx_sumspill *sp, tdx_sumfold *f, const tdx_xrec *r, bool first,
                     tdx_err *err) {
    tdx_deser d = {r->p, r->p + r->n, 0};
    uint64_t fl = tdx_deser_u(&d);
    uint32_t name = tdx_deser_u32(&d, UINT32_MAX);
    if (first) f->name = name; /* a task never begun or ended keeps the name 0 */
    if (fl & (P_START | P_END)) f->name = name;
    if (fl & P_START) get_ev(&d, &f->start);
    if (fl & P_END) get_ev(&d, &f->end);
    if (fl & P_PARENT) {
        uint64_t p = tdx_deser_u(&d), pe = tdx_deser_u(&d);
        if (!f->has_parent) {
            f->has_parent = true;
            f->parent = p;
            f->parent_ev = pe;
        }
    }
    uint64_t nlogs = tdx_deser_u(&d);
    if (nlogs) {
        tdx_sumev l;
        get_ev(&d, &l);
        if (!f->nlogs || l.time < f->first_log.time) f->first_log = l;
        f->nlogs += nlogs;
    }
    uint64_t ng = tdx_deser_u(&d);
    for (uint64_t k = 0; k < ng && !d.bad; k++) {
        int rc = seen_add(sp, f, tdx_deser_i(&d), err);
        if (rc) return rc;
    }
    return d.bad || d.p != d.end ? -2 : 0;
}

int tdx_sumspill_next_task(tdx_sumspill *sp, tdx_sumfold *f, tdx_err *err) {
    int k = peek(sp->t, &sp->tcur, &sp->thave, err);
    if (k <= 0) return k;
    f->id = sp->tcur.k1;
    f->name = 0;
    f->has_parent = false;
    f->parent = f->parent_ev = 0;
    memset(&f->start, 0, sizeof f->start);
    memset(&f->end, 0, sizeof f->end);
    memset(&f->first_log, 0, sizeof f->first_log);
    f->nlogs = 0;
    /* emptied id by id: clearing the whole bitmap per task would cost (but once a task had so
     * many that some went to the file) */
    if (f->seen_on && f->nmore)
        tdx_idset_free(&f->seen);
    else if (f->seen_on)
        for (size_t i = 0; i < f->goroutines.n; i++) tdx_idset_del(&f->seen, f->goroutines.v[i]);
    f->seen_on = false;
    more_close(f);
    f->goroutines.n = f->children.n = 0;
    bool first = true;
    while ((k = peek(sp->t, &sp->tcur, &sp->thave, err)) == 1 && sp->tcur.k1 == f->id) {
        int rc = fold_part(sp, f, &sp->tcur, first, err);
        if (rc == -1) return nomem(err);
        if (rc == -2) return damaged(err);
        if (rc) return -1;
        first = false;
        sp->thave = 0;
        sp->nread++;
    }
    if (k < 0 || (f->more_on && tdx_scratch_flush(&f->more, err))) return -1;
    return 1;
}

int tdx_sumspill_next_region(tdx_sumspill *sp, uint64_t task, tdx_sumregion *r, tdx_err *err) {
    int k = peek(sp->r, &sp->rcur, &sp->rhave, err);
    if (k <= 0 || sp->rcur.k1 > task) return k < 0 ? -1 : 0;
    if (sp->rcur.k1 < task) return -2;
    tdx_deser d = {sp->rcur.p, sp->rcur.p + sp->rcur.n, 0};
    memset(r, 0, sizeof *r);
    r->task = task;
    r->seq = sp->rcur.k2;
    r->name = tdx_deser_u32(&d, UINT32_MAX);
    uint64_t fl = tdx_deser_u(&d);
    if (fl & 1) get_ev(&d, &r->start);
    if (fl & 2) get_ev(&d, &r->end);
    if (d.bad || d.p != d.end || fl > 3) return damaged(err);
    sp->rhave = 0;
    sp->nread++;
    return 1;
}

int tdx_sumspill_attach(tdx_sumspill *sp, tdx_err *err) {
    if (tdx_xsort_rewind(sp->named, err)) return -1;
    tdx_xrec r;
    uint64_t child = 0;
    bool any = false;
    int k;
    while ((k = tdx_xsort_next(sp->named, &r, err)) == 1) {
        if (any && r.k1 == child) continue; /* named again later: the first stays */
        if (r.n != 8) return damaged(err);
        any = true;
        child = r.k1;
        uint8_t c[8];
        tdx_le64(c, child);
        if (tdx_xsort_add(sp->attach, tdx_rd64(r.p), r.k2, c, sizeof c, err)) return -1;
    }
    return k < 0 ? -1 : 0;
}
