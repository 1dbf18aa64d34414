/* test_sumindex.c: index/analysis/sumindex.c: random summaries written and loaded back one query at
 * a time (every goroutine and task, ids that do not exist), compared with the complete summary
 * through what the viewer reads of it; then damaged sections (every truncation, flipped bytes)
 * that must give a clean index error, never a crash or a wrong answer. Inputs are exact-size heap
 * copies, so an over-read is caught by AddressSanitizer in the sanitizer build. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "index/analysis/sumindex.h"

/* ---- a deterministic random summary ---- */

static uint64_t rnd(uint64_t *st) {
    *st += 0x9e3779b97f4a7c15ULL;
    uint64_t z = *st;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static uint64_t below(uint64_t *st, uint64_t n) {
    return n ? rnd(st) % n : 0;
}

typedef struct fixture {
    tdx_vgstore store;
    tdx_summary s;
    uint32_t nstr, nnodes;
} fixture;

static tdx_sumev mkev(uint64_t *st, fixture *f, int64_t base, int pct) {
    tdx_sumev e;
    memset(&e, 0, sizeof e);
    if ((int)below(st, 100) >= pct) return e;
    e.present = true;
    e.time = base + (int64_t)below(st, 1000000);
    e.g = below(st, 10) == 0 ? -1 : (int64_t)below(st, 40);
    e.stack = (uint32_t)below(st, f->nnodes);
    return e;
}

static void add_task(tdx_summary *s, uint64_t id) {
    tdx_sumtask t;
    memset(&t, 0, sizeof t);
    t.id = id;
    t.parent = TDX_SUM_NONE;
    cr_assert_eq(tdx_vec_push(&s->tasks, t), 0);
    cr_assert_eq(tdx_hmap_put(&s->t_idx, id, (uint32_t)(s->tasks.n - 1)), 0);
}

static void link_parent(tdx_summary *s, uint32_t child, uint32_t parent) {
    s->tasks.v[child].parent = parent;
    s->tasks.v[child].parent_ev = child; /* links are made in increasing child order */
    cr_assert_eq(tdx_vec_push(&s->tasks.v[parent].children, child), 0);
}

/* ng goroutines, ne edges, nt tasks (task 0 included, with many children and regions when big). */
static void build(fixture *f, uint64_t seed, size_t ng, size_t ne, size_t nt, bool big) {
    uint64_t st = seed;
    cr_assert_eq(tdx_vgstore_init(&f->store), 0);
    const char *names[] = {"main.worker",
                           "runtime.gcBgMarkWorker",
                           "http.request",
                           "db.query",
                           "region/a",
                           "region/b",
                           "",
                           "x"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        tdx_vgstore_intern(&f->store, names[i], strlen(names[i]));
    uint32_t parent = 0;
    for (int i = 0; i < 40; i++) {
        uint32_t fn = tdx_vgstore_intern(&f->store, names[i % 6], strlen(names[i % 6]));
        uint32_t n = tdx_vgstore_child(&f->store, i % 5 ? parent : 0, 0x400000 + (uint64_t)i * 16,
                                       fn, (uint64_t)i);
        parent = n;
    }
    cr_assert(!f->store.oom);
    f->nstr = (uint32_t)tdx_vgstore_nstrings(&f->store);
    f->nnodes = (uint32_t)tdx_vgstore_nnodes(&f->store);
    tdx_summary *s = &f->s;
    tdx_summary_init(s, &f->store);
    s->nevents = 123456;
    s->t0 = 1000000000000 + (int64_t)below(&st, 1000);
    s->last_ts = s->t0 + 99999999;
    s->sync_ts = s->t0 + 5;
    s->valid_events = 123400;
    s->valid_end = s->last_ts - 7;
    s->max_proc = 7;
    s->valid_max_proc = 6;
    /* goroutines: dense small ids, a few huge and negative ones */
    for (size_t i = 0; i < ng; i++) {
        tdx_sumg g;
        memset(&g, 0, sizeof g);
        g.id = i < ng - 3    ? (int64_t)i * 3 + 1
               : i == ng - 3 ? INT64_MAX
               : i == ng - 2 ? -5
                             : INT64_MIN;
        g.creation = below(&st, 8) ? s->t0 + (int64_t)below(&st, 50000000) : 0;
        if (below(&st, 4)) g.start = g.creation + (int64_t)below(&st, 1000) + 1;
        if (below(&st, 3)) g.end = s->t0 + (int64_t)below(&st, 90000000) + 1;
        g.name = (uint32_t)below(&st, f->nstr);
        g.pc = below(&st, 3) ? 0x401000 + below(&st, 4) * 8 : rnd(&st);
        cr_assert_eq(tdx_vec_push(&s->gs, g), 0);
        cr_assert_eq(tdx_hmap_put(&s->g_idx, (uint64_t)g.id, (uint32_t)i), 0);
    }
    /* edges between goroutine ids (and ids without a record) */
    for (size_t i = 0; i < ne; i++) {
        int64_t a = s->gs.v[below(&st, ng)].id,
                b = below(&st, 5) ? s->gs.v[below(&st, ng / 4 + 1)].id : 999999;
        if (below(&st, 20) == 0) a = -1;
        bool dup = false;
        for (size_t k = 0; k < s->edge_a.n && !dup; k++)
            dup = s->edge_a.v[k] == a && s->edge_b.v[k] == b;
        if (dup) continue;
        cr_assert_eq(tdx_vec_push(&s->edge_a, a) | tdx_vec_push(&s->edge_b, b) |
                         tdx_vec_push(&s->edge_ev, i),
                     0);
    }
    /* tasks: 0 (the background task), then a forest; a self-parent and a 2-cycle */
    add_task(s, 0);
    for (size_t i = 1; i < nt; i++) {
        uint64_t id = i == nt - 1 ? UINT64_MAX - 1 : 100 + i * 7 + below(&st, 5);
        if (tdx_hmap_get(&s->t_idx, id) != TDX_HMAP_EMPTY) continue;
        add_task(s, id);
        uint32_t ti = (uint32_t)(s->tasks.n - 1);
        tdx_sumtask *t = &s->tasks.v[ti];
        t->name = (uint32_t)below(&st, f->nstr);
        t->start = mkev(&st, f, s->t0, 90);
        t->end = mkev(&st, f, s->t0 + 500000, 80);
        if (below(&st, 2)) {
            t->nlogs = 1 + below(&st, 5);
            t->first_log = mkev(&st, f, s->t0, 100);
        }
        uint64_t pick = below(&st, 10);
        if (pick < 3 && ti > 1)
            link_parent(s, ti, (uint32_t)(1 + below(&st, ti - 1)));
        else if (pick < 4 || (big && pick < 6))
            link_parent(s, ti, 0);
    }
    uint32_t a = (uint32_t)s->tasks.n;
    add_task(s, 77777);
    add_task(s, 77778);
    link_parent(s, a, a + 1);
    link_parent(s, a + 1, a);
    add_task(s, 88888);
    link_parent(s, a + 2, a + 2);
    s->tasks.v[a + 2].start = mkev(&st, f, s->t0, 100);
    /* goroutine sets and regions */
    for (size_t i = 0; i < s->tasks.n; i++) {
        tdx_sumtask *t = &s->tasks.v[i];
        /* big: the background task's record comes in pieces, some of goroutines only, and
         * its regions name goroutines of earlier pieces */
        size_t ngs = big && i == 0 ? 2500 : below(&st, 4);
        for (size_t k = 0; k < ngs; k++) {
            int64_t g = k == 0 && t->start.present ? t->start.g
                        : k >= 60                  ? (int64_t)k * 7
                        : below(&st, 9)            ? (int64_t)below(&st, 60)
                                                   : -1;
            bool dup = false;
            for (size_t j = 0; j < t->goroutines.n && !dup; j++) dup = t->goroutines.v[j] == g;
            if (!dup) cr_assert_eq(tdx_vec_push(&t->goroutines, g), 0);
        }
        size_t nr = big && i == 0 ? 3000 : big && i == 5 ? 2000 : below(&st, 5);
        for (size_t k = 0; k < nr; k++) {
            tdx_sumregion r;
            memset(&r, 0, sizeof r);
            r.seq = s->regions.n;
            r.task = t->id;
            r.name = (uint32_t)below(&st, f->nstr);
            r.start = mkev(&st, f, s->t0 + (int64_t)k * 1000, 95);
            r.end = r.start.present && below(&st, 4) ? r.start : mkev(&st, f, s->t0 + 400000, 85);
            if (r.end.present && r.start.present)
                r.end.time = r.start.time + (int64_t)below(&st, 5000);
            if (t->goroutines.n && below(&st, 3))
                r.start.g = r.start.present ? t->goroutines.v[below(&st, t->goroutines.n)] : 0;
            cr_assert_eq(tdx_vec_push(&s->regions, r), 0);
            cr_assert_eq(tdx_vec_push(&t->regions, (uint32_t)(s->regions.n - 1)), 0);
        }
    }
}

/* Rounds most times to multiples of 64 ns, as real trace clocks tick (some stay odd). */
static int64_t q64(uint64_t *st, int64_t t) {
    return below(st, 20) ? t & ~(int64_t)63 : t;
}
static void qev(uint64_t *st, tdx_sumev *e) {
    if (e->present) e->time = q64(st, e->time);
}
static void quantize(tdx_summary *s, uint64_t seed) {
    uint64_t st = seed;
    s->t0 &= ~(int64_t)63;
    for (size_t i = 0; i < s->gs.n; i++) {
        tdx_sumg *g = &s->gs.v[i];
        g->creation = q64(&st, g->creation);
        if (g->start) g->start = q64(&st, g->start);
        if (g->end) g->end = q64(&st, g->end);
    }
    for (size_t i = 0; i < s->tasks.n; i++) {
        qev(&st, &s->tasks.v[i].start);
        qev(&st, &s->tasks.v[i].end);
        qev(&st, &s->tasks.v[i].first_log);
    }
    for (size_t i = 0; i < s->regions.n; i++) {
        qev(&st, &s->regions.v[i].start);
        qev(&st, &s->regions.v[i].end);
    }
}

static void fixture_free(fixture *f) {
    tdx_summary_free(&f->s);
    tdx_vgstore_free(&f->store);
}

/* ---- comparison through what the viewer reads ---- */

static bool same_ev(const tdx_sumev *a, const tdx_sumev *b, bool stack) {
    return a->present == b->present && a->time == b->time && a->g == b->g &&
           (!stack || a->stack == b->stack);
}

/* 0: loaded and equal; -1: an error of kind `kind`. Fails the test on a wrong answer. */
static int check_goroutine(const fixture *f, const uint8_t *p, size_t n, int64_t id, int *kind) {
    tdx_summary part;
    tdx_summary_init(&part, (tdx_vgstore *)&f->store);
    tdx_viewquery q = {.has_goid = true, .goid = (uint64_t)id};
    tdx_err err;
    tdx_err_clear(&err);
    int rc = tdx_sumindex_load(p, n, 0, &q, &part, &err);
    *kind = err.kind;
    if (rc == 0) {
        cr_assert_eq(part.t0, f->s.t0);
        cr_assert_eq(part.valid_end, f->s.valid_end);
        cr_assert_eq(part.valid_max_proc, f->s.valid_max_proc);
        const tdx_sumg *want = tdx_summary_goroutine(&f->s, id),
                       *got = tdx_summary_goroutine(&part, id);
        cr_assert_eq(want == NULL, got == NULL, "goroutine %lld found in one only", (long long)id);
        if (want) {
            cr_assert(want->creation == got->creation && want->start == got->start &&
                          want->end == got->end && want->name == got->name && want->pc == got->pc,
                      "goroutine %lld differs", (long long)id);
            int64_t *r1, *r2;
            size_t n1, n2;
            cr_assert_eq(tdx_summary_related(&f->s, id, UINT64_MAX, &r1, &n1), 0);
            cr_assert_eq(tdx_summary_related(&part, id, UINT64_MAX, &r2, &n2), 0);
            cr_assert_eq(n1, n2, "goroutine %lld: %zu related, want %zu", (long long)id, n2, n1);
            for (size_t k = 0; k < n1; k++) cr_assert_eq(r1[k], r2[k]);
            free(r1);
            free(r2);
        }
    }
    tdx_summary_free(&part);
    return rc;
}

static void same_task(const tdx_summary *a, uint32_t x, const tdx_summary *b, uint32_t y,
                      bool extras) {
    const tdx_sumtask *t = &a->tasks.v[x], *u = &b->tasks.v[y];
    cr_assert_eq(t->id, u->id);
    cr_assert_eq(t->name, u->name, "task %llu name", (unsigned long long)t->id);
    cr_assert(same_ev(&t->start, &u->start, true) && same_ev(&t->end, &u->end, true),
              "task %llu events", (unsigned long long)t->id);
    cr_assert_eq(t->parent == TDX_SUM_NONE, u->parent == TDX_SUM_NONE);
    if (t->parent != TDX_SUM_NONE) cr_assert_eq(a->tasks.v[t->parent].id, b->tasks.v[u->parent].id);
    cr_assert_eq(t->children.n, u->children.n);
    for (size_t k = 0; k < t->children.n; k++)
        cr_assert_eq(a->tasks.v[t->children.v[k]].id, b->tasks.v[u->children.v[k]].id);
    if (!extras) return;
    cr_assert_eq(t->nlogs, u->nlogs);
    cr_assert(same_ev(&t->first_log, &u->first_log, false));
    cr_assert_eq(t->goroutines.n, u->goroutines.n);
    for (size_t k = 0; k < t->goroutines.n; k++)
        cr_assert_eq(t->goroutines.v[k], u->goroutines.v[k]);
    cr_assert_eq(t->regions.n, u->regions.n, "task %llu: %zu regions, want %zu",
                 (unsigned long long)t->id, u->regions.n, t->regions.n);
    for (size_t k = 0; k < t->regions.n; k++) {
        const tdx_sumregion *r = &a->regions.v[t->regions.v[k]],
                            *v = &b->regions.v[u->regions.v[k]];
        cr_assert(r->task == v->task && r->name == v->name && same_ev(&r->start, &v->start, true) &&
                      same_ev(&r->end, &v->end, true),
                  "task %llu region %zu differs", (unsigned long long)t->id, k);
    }
}

static int check_task(const fixture *f, const uint8_t *p, size_t n, uint64_t id, bool extras,
                      int *kind) {
    tdx_summary part;
    tdx_summary_init(&part, (tdx_vgstore *)&f->store);
    tdx_viewquery q = {
        .has_focustask = !extras, .has_taskid = extras, .focustask = id, .taskid = id};
    tdx_err err;
    tdx_err_clear(&err);
    int rc = tdx_sumindex_load(p, n, 0, &q, &part, &err);
    *kind = err.kind;
    if (rc == 0) {
        uint32_t x = tdx_summary_task(&f->s, id), y = tdx_summary_task(&part, id);
        cr_assert_eq(x == TDX_SUM_NONE, y == TDX_SUM_NONE, "task %llu found in one only",
                     (unsigned long long)id);
        if (x != TDX_SUM_NONE) {
            uint32_t *l1, *l2;
            size_t n1, n2;
            cr_assert_eq(tdx_summary_task_list(&f->s, x, f->s.t0, f->s.last_ts, &l1, &n1), 0);
            cr_assert_eq(tdx_summary_task_list(&part, y, f->s.t0, f->s.last_ts, &l2, &n2), 0);
            cr_assert_eq(n1, n2, "task %llu: %zu listed, want %zu", (unsigned long long)id, n2, n1);
            for (size_t k = 0; k < n1; k++) same_task(&f->s, l1[k], &part, l2[k], extras);
            free(l1);
            free(l2);
        }
    }
    tdx_summary_free(&part);
    return rc;
}

static uint8_t *save(const fixture *f, size_t *n) {
    tdx_buf b = {0};
    tdx_err err;
    cr_assert_eq(tdx_sumindex_save(&f->s, &b, &err), 0, "save: %s", err.msg);
    uint8_t *p = malloc(b.n);
    cr_assert_not_null(p);
    memcpy(p, b.v, b.n);
    *n = b.n;
    tdx_vec_free(&b);
    return p;
}

/* tdx_sumindex_walk_tasks: every task in id order, each as the complete summary has it. */
typedef struct walked {
    const fixture *f;
    uint64_t n, last;
} walked;

/* Task 0 of s as the complete summary has it: type, events, logs, goroutines, regions. */
static void same_whole(const fixture *f, const tdx_summary *s) {
    uint64_t id = s->tasks.v[0].id;
    uint32_t x = tdx_summary_task(&f->s, id);
    cr_assert_neq(x, TDX_SUM_NONE, "task %llu is not the summary's", (unsigned long long)id);
    cr_assert_eq(s->t0, f->s.t0);
    cr_assert_eq(s->valid_end, f->s.valid_end);
    const tdx_sumtask *t = &f->s.tasks.v[x], *u = &s->tasks.v[0];
    cr_assert_eq(t->name, u->name);
    cr_assert(same_ev(&t->start, &u->start, true) && same_ev(&t->end, &u->end, true));
    cr_assert_eq(t->nlogs, u->nlogs);
    cr_assert(same_ev(&t->first_log, &u->first_log, false));
    cr_assert_eq(t->goroutines.n, u->goroutines.n);
    cr_assert_eq(t->regions.n, u->regions.n, "task %llu: %zu regions, want %zu",
                 (unsigned long long)id, u->regions.n, t->regions.n);
    for (size_t k = 0; k < t->regions.n; k++) {
        const tdx_sumregion *r = &f->s.regions.v[t->regions.v[k]],
                            *v = &s->regions.v[u->regions.v[k]];
        cr_assert(r->name == v->name && same_ev(&r->start, &v->start, true) &&
                      same_ev(&r->end, &v->end, true),
                  "task %llu region %zu differs", (unsigned long long)id, k);
    }
}

static int on_walked(void *ctx, const tdx_summary *s, tdx_err *err) {
    (void)err;
    walked *w = ctx;
    cr_assert_eq(s->tasks.n, 1);
    uint64_t id = s->tasks.v[0].id;
    cr_assert(w->n == 0 || id > w->last, "task %llu after %llu", (unsigned long long)id,
              (unsigned long long)w->last);
    w->last = id;
    w->n++;
    same_whole(w->f, s);
    return 0;
}

/* tdx_sumindex_load_task: each task alone, and no task for an id the summary lacks. */
static void check_load_task(const fixture *f, const uint8_t *p, size_t n) {
    tdx_err err;
    for (size_t i = 0; i <= f->s.tasks.n; i++) {
        tdx_summary one;
        tdx_summary_init(&one, (tdx_vgstore *)&f->store);
        uint64_t id = i < f->s.tasks.n ? f->s.tasks.v[i].id : 99999999;
        cr_assert_eq(tdx_sumindex_load_task(p, n, 0, id, &one, &err), 0, "load: %s", err.msg);
        if (i < f->s.tasks.n) {
            cr_assert_eq(one.tasks.n ? one.tasks.v[0].id : 0, id);
            same_whole(f, &one);
        } else {
            cr_assert_eq(one.tasks.n, 0);
        }
        tdx_summary_free(&one);
    }
}

static void check_walk(const fixture *f, const uint8_t *p, size_t n) {
    walked w = {f, 0, 0};
    tdx_err err;
    cr_assert_eq(tdx_sumindex_walk_tasks(p, n, 0, (tdx_vgstore *)&f->store, on_walked, &w, &err), 0,
                 "walk: %s", err.msg);
    cr_assert_eq(w.n, f->s.tasks.n, "walked %llu tasks of %zu", (unsigned long long)w.n,
                 f->s.tasks.n);
}

static void roundtrip(uint64_t seed, size_t ng, size_t ne, size_t nt, bool big) {
    fixture f;
    build(&f, seed, ng, ne, nt, big);
    if (seed % 2 == 0) quantize(&f.s, seed);
    size_t n;
    uint8_t *p = save(&f, &n);
    tdx_err err;
    cr_assert_eq(tdx_sumindex_verify(p, n, 0, NULL, &err), 0, "verify: %s", err.msg);
    cr_assert_eq(tdx_sumindex_verify(p, n, 0, &f.store, &err), 0, "verify: %s", err.msg);
    int kind;
    for (size_t i = 0; i < f.s.gs.n; i++)
        cr_assert_eq(check_goroutine(&f, p, n, f.s.gs.v[i].id, &kind), 0);
    int64_t missing[] = {0, 2, 999999, -1, INT64_MAX - 1};
    for (size_t i = 0; i < sizeof missing / sizeof *missing; i++)
        cr_assert_eq(check_goroutine(&f, p, n, missing[i], &kind), 0);
    for (size_t i = 0; i < f.s.tasks.n; i++)
        for (int x = 0; x < 2; x++)
            cr_assert_eq(check_task(&f, p, n, f.s.tasks.v[i].id, x, &kind), 0);
    uint64_t tmissing[] = {1, 99, 101, UINT64_MAX, 1ull << 40};
    for (size_t i = 0; i < sizeof tmissing / sizeof *tmissing; i++)
        for (int x = 0; x < 2; x++) cr_assert_eq(check_task(&f, p, n, tmissing[i], x, &kind), 0);
    check_walk(&f, p, n);
    check_load_task(&f, p, n);
    free(p);
    fixture_free(&f);
}

/* With the store, verify checks string and stack ids as a query's load does: a store that lacks
 * most of them (a fresh one) is refused, where without a store the section passes. */
Test(sumindex, verify_checks_ids_against_the_store) {
    fixture f;
    build(&f, 7, 200, 50, 40, false);
    size_t n;
    uint8_t *p = save(&f, &n);
    tdx_vgstore small;
    cr_assert_eq(tdx_vgstore_init(&small), 0);
    cr_assert_lt(tdx_vgstore_nstrings(&small), f.nstr);
    tdx_err err;
    cr_assert_eq(tdx_sumindex_verify(p, n, 0, NULL, &err), 0, "verify: %s", err.msg);
    cr_assert_eq(tdx_sumindex_verify(p, n, 0, &f.store, &err), 0, "verify: %s", err.msg);
    cr_assert_eq(tdx_sumindex_verify(p, n, 0, &small, &err), -1);
    cr_assert_eq(err.kind, TDX_EINDEX);
    tdx_vgstore_free(&small);
    free(p);
    fixture_free(&f);
}

Test(sumindex, roundtrip_small) {
    for (uint64_t seed = 1; seed <= 20; seed++)
        roundtrip(seed, 5 + seed, seed * 3, 4 + seed, false);
}

Test(sumindex, roundtrip_many_blocks) {
    roundtrip(77, 6000, 12000, 3600, true); /* several blocks of 256 records per table */
}

/* What the writer reported: every call, in order. */
typedef struct progress_log {
    uint64_t done[64], total[64];
    size_t n;
} progress_log;

static void log_progress(void *ctx, uint64_t done, uint64_t total) {
    progress_log *l = ctx;
    cr_assert_lt(l->n, 64, "more progress calls than expected");
    l->done[l->n] = done;
    l->total[l->n++] = total;
}

static int put_bytes(void *ctx, const void *p, size_t n, tdx_err *err) {
    (void)err;
    return tdx_buf_append(ctx, p, n);
}

/* Progress counts the records read back (once each): it rises to the total, reached at the end,
 * and asking for it changes no byte of the section. */
Test(sumindex, progress_counts_the_records_read_back) {
    fixture f;
    build(&f, 77, 12000, 12000, 7200, true);
    size_t n;
    uint8_t *want = save(&f, &n);
    tdx_sumspill sp;
    cr_assert_eq(tdx_sumspill_init(&sp, NULL, 0), 0);
    tdx_err err;
    cr_assert_eq(tdx_sumspill_put_all(&sp, &f.s, &err), 0, "%s", err.msg);
    progress_log l = {0};
    tdx_buf b = {0};
    cr_assert_eq(
        tdx_sumindex_write(&sp, &f.s, NULL, false, put_bytes, &b, log_progress, &l, NULL, &err), 0,
        "write: %s", err.msg);
    cr_assert(b.n == n && memcmp(b.v, want, n) == 0, "progress changed the section");
    /* every goroutine, task (one part each here) and region read once: a call every 4096, and
     * the end */
    uint64_t total = (uint64_t)(f.s.gs.n + f.s.tasks.n + f.s.regions.n);
    cr_assert_gt(total, (uint64_t)4 * 4096);
    cr_assert_eq(l.n, total / 4096 + 1);
    for (size_t i = 0; i < l.n; i++) {
        cr_assert_eq(l.total[i], total, "call %zu: total %llu", i, (unsigned long long)l.total[i]);
        cr_assert(i == 0 || l.done[i] > l.done[i - 1], "call %zu: done went back", i);
        cr_assert_leq(l.done[i], total);
    }
    cr_assert_geq(l.done[l.n - 2], total - 4096, "the last tick was far from the end");
    cr_assert_eq(l.done[l.n - 1], total);
    tdx_vec_free(&b);
    tdx_sumspill_free(&sp);
    free(want);
    fixture_free(&f);
}

/* Written beside an index, the sorts spill runs to scratch files (a 64 KiB budget each here), so
 * does the fold the background task's goroutines, and the tables' blocks are coded on a thread;
 * the section is the same as from sorts held in memory coded inline, and gives back what the
 * records say. */
Test(sumindex, spilled_sorts_give_the_same_section) {
    fixture f;
    build(&f, 91, 20000, 2000, 1500, true);
    /* the background task gets more goroutines than the fold holds: the rest go to a file */
    tdx_sumtask *bg = &f.s.tasks.v[0];
    cr_assert_eq(bg->id, 0);
    for (int64_t g = 0; g < TDX_SUMFOLD_GMEM + 3000; g++)
        cr_assert_eq(tdx_vec_push(&bg->goroutines, 1000000 + 3 * g), 0);
    size_t n;
    uint8_t *want = save(&f, &n); /* the log in memory */
    tdx_err err;
    cr_assert_eq(tdx_sumindex_verify(want, n, 0, NULL, &err), 0, "verify: %s", err.msg);
    int kind;
    for (size_t i = 0; i < f.s.gs.n; i += 97)
        cr_assert_eq(check_goroutine(&f, want, n, f.s.gs.v[i].id, &kind), 0);
    cr_assert_eq(check_goroutine(&f, want, n, f.s.gs.v[f.s.gs.n - 1].id, &kind), 0);
    for (size_t i = 0; i < f.s.tasks.n; i++)
        cr_assert_eq(check_task(&f, want, n, f.s.tasks.v[i].id, true, &kind), 0);
    tdx_sumspill sp;
    cr_assert_eq(tdx_sumspill_init(&sp, "/tmp/sumindex-test.tidx", 64 << 10), 0);
    cr_assert_eq(tdx_sumspill_put_all(&sp, &f.s, &err), 0, "%s", err.msg);
    tdx_buf b = {0};
    cr_assert_eq(tdx_sumindex_write(&sp, &f.s, "/tmp/sumindex-test.tidx", true, put_bytes, &b, NULL,
                                    NULL, NULL, &err),
                 0, "write: %s", err.msg);
    cr_assert_gt(tdx_xsort_runs(sp.g), 1, "the goroutines' sort did not spill");
    cr_assert_gt(tdx_xsort_runs(sp.t), 1, "the tasks' sort did not spill");
    cr_assert(b.n == n && memcmp(b.v, want, n) == 0, "the spilled sorts gave other bytes");
    tdx_vec_free(&b);
    tdx_sumspill_free(&sp);
    free(want);
    fixture_free(&f);
}

Test(sumindex, empty_summary) {
    fixture f;
    cr_assert_eq(tdx_vgstore_init(&f.store), 0);
    tdx_summary_init(&f.s, &f.store);
    f.nstr = (uint32_t)tdx_vgstore_nstrings(&f.store);
    f.nnodes = (uint32_t)tdx_vgstore_nnodes(&f.store);
    size_t n;
    uint8_t *p = save(&f, &n);
    tdx_err err;
    cr_assert_eq(tdx_sumindex_verify(p, n, 0, NULL, &err), 0);
    int kind;
    cr_assert_eq(check_goroutine(&f, p, n, 1, &kind), 0);
    cr_assert_eq(check_task(&f, p, n, 0, true, &kind), 0);
    free(p);
    fixture_free(&f);
}

/* ---- damage ---- */

/* Runs every kind of load on a damaged copy: each must succeed with the right answer or fail with
 * an index error. Returns how many failed. */
static int damaged_loads(const fixture *f, const uint8_t *p, size_t n) {
    uint8_t *c = malloc(n ? n : 1);
    cr_assert_not_null(c);
    memcpy(c, p, n);
    int failed = 0, kind;
    int64_t gs[] = {f->s.gs.v[0].id, f->s.gs.v[f->s.gs.n / 2].id, f->s.gs.v[f->s.gs.n - 4].id, 2};
    for (size_t i = 0; i < sizeof gs / sizeof *gs; i++)
        if (check_goroutine(f, c, n, gs[i], &kind)) {
            cr_assert_eq(kind, TDX_EINDEX);
            failed++;
        }
    uint64_t ts[] = {0, f->s.tasks.v[5].id, f->s.tasks.v[f->s.tasks.n / 2].id, 88888, 3};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        for (int x = 0; x < 2; x++)
            if (check_task(f, c, n, ts[i], x, &kind)) {
                cr_assert_eq(kind, TDX_EINDEX);
                failed++;
            }
    walked w = {f, 0, 0};
    tdx_err err;
    tdx_err_clear(&err);
    if (tdx_sumindex_walk_tasks(c, n, 0, (tdx_vgstore *)&f->store, on_walked, &w, &err)) {
        cr_assert_eq(err.kind, TDX_EINDEX, "walk: %s", err.msg);
        failed++;
    }
    free(c);
    return failed;
}

Test(sumindex, truncated) {
    fixture f;
    build(&f, 5, 300, 400, 200, true);
    size_t n;
    uint8_t *p = save(&f, &n);
    for (size_t len = 0; len < n; len += len < 2048 ? 1 : 97) {
        uint8_t *c = malloc(len ? len : 1);
        memcpy(c, p, len);
        tdx_err err;
        cr_assert_eq(tdx_sumindex_verify(c, len, 0, NULL, &err), -1);
        cr_assert_eq(err.kind, TDX_EINDEX);
        free(c);
        cr_assert_eq(damaged_loads(&f, p, len), 15, "a load of %zu of %zu bytes did not fail", len,
                     n);
    }
    free(p);
    fixture_free(&f);
}

Test(sumindex, flipped_bytes) {
    fixture f;
    build(&f, 9, 300, 400, 200, true);
    size_t n;
    uint8_t *p = save(&f, &n);
    uint64_t st = 42;
    /* every byte of the header, then a sample (a flip in a block fails its hash) */
    for (size_t pos = 0; pos < n; pos += pos < 512 ? 1 : 1 + below(&st, 509)) {
        uint8_t *c = malloc(n);
        memcpy(c, p, n);
        c[pos] ^= (uint8_t)(1u << below(&st, 8));
        tdx_err err;
        cr_assert_eq(tdx_sumindex_verify(c, n, 0, NULL, &err), -1, "flip at %zu not detected", pos);
        cr_assert_eq(err.kind, TDX_EINDEX);
        damaged_loads(&f, c, n);
        free(c);
    }
    /* random garbage of every small size */
    for (size_t len = 0; len < 600; len++) {
        uint8_t *c = malloc(len ? len : 1);
        for (size_t i = 0; i < len; i++) c[i] = (uint8_t)rnd(&st);
        if (len >= 8) memcpy(c, p, 8);
        tdx_err err;
        cr_assert_eq(tdx_sumindex_verify(c, len, 0, NULL, &err), -1);
        free(c);
    }
    free(p);
    fixture_free(&f);
}
