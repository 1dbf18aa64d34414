/* test_sumspill.c: index/analysis/sumspill.c folds a task's parts back into one and reads its
 * regions back in creation order, however they closed (a region is spilled when it closes). */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "index/analysis/sumspill.h"

/* One task whose nr regions belong to one goroutine; the regions named in open_at[] are still
 * open at the first compaction, so they reach the sorts in a later part than regions made after
 * them. Reads the task back and checks it holds every region once, by seq. */
static void fold_check(size_t nr, size_t open_every, size_t budget) {
    tdx_vgstore store;
    cr_assert_eq(tdx_vgstore_init(&store), 0);
    tdx_summary s;
    cr_assert_eq(tdx_summary_init(&s, &store), 0);
    uint32_t ti = tdx_summary_task_add(&s, 42);
    cr_assert_neq(ti, TDX_SUM_NONE);
    tdx_sumg g;
    memset(&g, 0, sizeof g);
    g.id = 7;
    for (size_t k = 0; k < nr; k++) {
        tdx_sumregion r;
        memset(&r, 0, sizeof r);
        r.seq = 1000 + 3 * k;
        r.task = 42;
        r.name = (uint32_t)(k % 5);
        r.start = (tdx_sumev){(int64_t)(10 * k), 7, (uint32_t)k, true};
        cr_assert_eq(tdx_vec_push(&s.regions, r), 0);
        cr_assert_eq(tdx_vec_push(&s.tasks.v[ti].regions, (uint32_t)k), 0);
        if ((k + 1) % open_every == 0) cr_assert_eq(tdx_vec_push(&g.active, (uint32_t)k), 0);
    }
    cr_assert_eq(tdx_vec_push(&s.gs, g), 0);
    cr_assert_eq(tdx_hmap_put(&s.g_idx, 7, 0), 0);
    tdx_sumspill sp;
    cr_assert_eq(tdx_sumspill_init(&sp, "/tmp/sumspill-test.tidx", budget), 0);
    tdx_err err;
    cr_assert_eq(tdx_sumspill_compact(&sp, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(s.regions.n, nr / open_every, "the open regions stay");
    s.gs.v[0].active.n = 0; /* they close */
    cr_assert_eq(tdx_sumspill_put_all(&sp, &s, &err), 0, "%s", err.msg);
    tdx_sumfold f;
    memset(&f, 0, sizeof f);
    for (int pass = 0; pass < 2; pass++) {
        cr_assert_eq(tdx_sumspill_rewind(&sp, &err), 0, "%s", err.msg);
        cr_assert_eq(tdx_sumspill_next_task(&sp, &f, &err), 1, "%s", err.msg);
        cr_assert_eq(f.id, 42);
        for (size_t k = 0; k < nr; k++) {
            tdx_sumregion rg;
            const tdx_sumregion *r = &rg;
            cr_assert_eq(tdx_sumspill_next_region(&sp, 42, &rg, &err), 1, "region %zu missing", k);
            cr_assert_eq(r->task, 42);
            cr_assert_eq(r->seq, 1000 + 3 * k, "region %zu: seq %llu", k,
                         (unsigned long long)r->seq);
            cr_assert_eq(r->start.stack, (uint32_t)k, "region %zu moved without its fields", k);
            cr_assert_eq(r->name, (uint32_t)(k % 5));
            cr_assert_eq(r->start.time, (int64_t)(10 * k));
        }
        tdx_sumregion rg;
        cr_assert_eq(tdx_sumspill_next_region(&sp, 42, &rg, &err), 0, "a region twice");
        cr_assert_eq(tdx_sumspill_next_task(&sp, &f, &err), 0);
    }
    tdx_sumfold_free(&f);
    tdx_sumspill_free(&sp);
    tdx_summary_free(&s);
    tdx_vgstore_free(&store);
}

Test(sumspill, few_regions_out_of_order) {
    fold_check(50, 7, 1 << 20);
}

/* A large task, as the background task of a long trace is. */
Test(sumspill, many_regions_out_of_order) {
    fold_check(20000, 3, 1 << 20);
    fold_check(9000, 1000, 64 << 10); /* spilled to scratch runs too */
}

Test(sumspill, regions_already_in_order) {
    fold_check(5000, 100000, 1 << 20);
}

/* Sets task `child`'s parent to `parent` at event ev in s's current part. */
static void name_parent(tdx_summary *s, uint64_t child, uint64_t parent, uint64_t ev) {
    uint32_t ci = tdx_summary_task_add(s, child), pi = tdx_summary_task_add(s, parent);
    cr_assert(ci != TDX_SUM_NONE && pi != TDX_SUM_NONE);
    s->tasks.v[ci].parent = pi;
    s->tasks.v[ci].parent_ev = ev;
    cr_assert_eq(tdx_vec_push(&s->tasks.v[pi].children, ci), 0);
}

/* A task's parent named in several parts (its begin, then its end in a later generation; an id
 * begun again): the first stays, so the child is attached once, to that parent, at that event,
 * as the fold has it. Children are listed by parent, then by attaching event. */
Test(sumspill, a_child_is_attached_once_to_its_first_parent) {
    tdx_vgstore store;
    cr_assert_eq(tdx_vgstore_init(&store), 0);
    tdx_summary s;
    cr_assert_eq(tdx_summary_init(&s, &store), 0);
    name_parent(&s, 9, 3, 40);
    name_parent(&s, 5, 3, 20);
    tdx_sumspill sp;
    cr_assert_eq(tdx_sumspill_init(&sp, "/tmp/sumspill-test.tidx", 1 << 20), 0);
    tdx_err err;
    cr_assert_eq(tdx_sumspill_compact(&sp, &s, &err), 0, "%s", err.msg);
    name_parent(&s, 5, 3, 70);  /* its end names the parent again */
    name_parent(&s, 9, 4, 80);  /* begun again under another parent */
    name_parent(&s, 12, 4, 90); /* a child of a parent named only now */
    cr_assert_eq(tdx_sumspill_put_all(&sp, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(tdx_sumspill_attach(&sp, &err), 0, "%s", err.msg);
    cr_assert_eq(tdx_xsort_rewind(sp.attach, &err), 0, "%s", err.msg);
    const uint64_t want[][3] = {{3, 20, 5}, {3, 40, 9}, {4, 90, 12}};
    tdx_xrec r;
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(tdx_xsort_next(sp.attach, &r, &err), 1, "attach record %zu missing", i);
        cr_assert_eq(r.n, 8);
        cr_assert(r.k1 == want[i][0] && r.k2 == want[i][1] && tdx_rd64(r.p) == want[i][2],
                  "attach record %zu: parent %llu event %llu child %llu", i,
                  (unsigned long long)r.k1, (unsigned long long)r.k2,
                  (unsigned long long)tdx_rd64(r.p));
    }
    cr_assert_eq(tdx_xsort_next(sp.attach, &r, &err), 0, "a child attached twice");
    /* the fold keeps the same parents */
    cr_assert_eq(tdx_sumspill_rewind(&sp, &err), 0, "%s", err.msg);
    tdx_sumfold f;
    memset(&f, 0, sizeof f);
    const uint64_t parent_of[][3] = {{3, 0, 0}, {4, 0, 0}, {5, 3, 20}, {9, 3, 40}, {12, 4, 90}};
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(tdx_sumspill_next_task(&sp, &f, &err), 1, "%s", err.msg);
        cr_assert_eq(f.id, parent_of[i][0]);
        cr_assert_eq(f.has_parent, parent_of[i][1] != 0);
        if (f.has_parent)
            cr_assert(f.parent == parent_of[i][1] && f.parent_ev == parent_of[i][2],
                      "task %llu: parent %llu at %llu", (unsigned long long)f.id,
                      (unsigned long long)f.parent, (unsigned long long)f.parent_ev);
    }
    cr_assert_eq(tdx_sumspill_next_task(&sp, &f, &err), 0);
    tdx_sumfold_free(&f);
    tdx_sumspill_free(&sp);
    tdx_summary_free(&s);
    tdx_vgstore_free(&store);
}

/* Adds goroutines [lo, hi) (step 1) to task id's current part. */
static void add_gs(tdx_summary *s, uint64_t id, int64_t lo, int64_t hi) {
    uint32_t ti = tdx_summary_task_add(s, id);
    cr_assert_neq(ti, TDX_SUM_NONE);
    for (int64_t g = lo; g < hi; g++) cr_assert_eq(tdx_vec_push(&s->tasks.v[ti].goroutines, g), 0);
}

/* A task with more goroutines than a fold keeps in memory (as the background task of a long
 * trace has): with a place for scratch files the rest go to one, and either way they read back
 * in first-seen order, each once; the next task starts with none seen. */
static void many_goroutines(const char *beside) {
    tdx_vgstore store;
    cr_assert_eq(tdx_vgstore_init(&store), 0);
    tdx_summary s;
    cr_assert_eq(tdx_summary_init(&s, &store), 0);
    const int64_t n = TDX_SUMFOLD_GMEM + 5000;
    add_gs(&s, 42, 1000, 1000 + n / 2);
    add_gs(&s, 43, 5, 9);
    tdx_sumspill sp;
    cr_assert_eq(tdx_sumspill_init(&sp, beside, 1 << 20), 0);
    tdx_err err;
    cr_assert_eq(tdx_sumspill_compact(&sp, &s, &err), 0, "%s", err.msg);
    add_gs(&s, 42, 1000 + n / 4, 1000 + n); /* half of them seen before */
    add_gs(&s, 43, 1000, 1010);             /* seen in task 42, new here */
    cr_assert_eq(tdx_sumspill_put_all(&sp, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(tdx_sumspill_rewind(&sp, &err), 0, "%s", err.msg);
    tdx_sumfold f;
    memset(&f, 0, sizeof f);
    cr_assert_eq(tdx_sumspill_next_task(&sp, &f, &err), 1, "%s", err.msg);
    cr_assert_eq(f.id, 42);
    cr_assert_eq(tdx_sumfold_ngoroutines(&f), (uint64_t)n);
    cr_assert_eq(f.nmore, beside ? (uint64_t)(n - TDX_SUMFOLD_GMEM) : 0, "%llu in the file",
                 (unsigned long long)f.nmore);
    static int64_t got[TDX_SUMFOLD_GMEM + 5000];
    for (int64_t at = 0; at < n; at += 777) { /* chunks that straddle memory and the file */
        size_t k = (size_t)(n - at < 777 ? n - at : 777);
        cr_assert_eq(tdx_sumfold_goroutines(&f, (uint64_t)at, got + at, k, &err), 0, "%s", err.msg);
    }
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], 1000 + i, "goroutine %lld: %lld", (long long)i, (long long)got[i]);
    cr_assert_eq(tdx_sumspill_next_task(&sp, &f, &err), 1, "%s", err.msg);
    cr_assert_eq(f.id, 43);
    cr_assert_eq(tdx_sumfold_ngoroutines(&f), 14, "task 43: %llu goroutines",
                 (unsigned long long)tdx_sumfold_ngoroutines(&f));
    cr_assert_eq(f.nmore, 0);
    cr_assert_eq(tdx_sumspill_next_task(&sp, &f, &err), 0);
    tdx_sumfold_free(&f);
    tdx_sumspill_free(&sp);
    tdx_summary_free(&s);
    tdx_vgstore_free(&store);
}

Test(sumspill, many_goroutines_go_to_a_file) {
    many_goroutines("/tmp/sumspill-test.tidx");
}

Test(sumspill, many_goroutines_in_memory) {
    many_goroutines(NULL);
}

/* Regions left unread for an earlier task are an inconsistency, not skipped. */
Test(sumspill, a_region_left_behind_is_reported) {
    tdx_vgstore store;
    cr_assert_eq(tdx_vgstore_init(&store), 0);
    tdx_summary s;
    cr_assert_eq(tdx_summary_init(&s, &store), 0);
    uint32_t ti = tdx_summary_task_add(&s, 3);
    tdx_sumregion r;
    memset(&r, 0, sizeof r);
    r.task = 3;
    r.seq = 1;
    cr_assert_eq(tdx_vec_push(&s.regions, r), 0);
    cr_assert_eq(tdx_vec_push(&s.tasks.v[ti].regions, 0), 0);
    tdx_sumspill sp;
    cr_assert_eq(tdx_sumspill_init(&sp, NULL, 0), 0);
    tdx_err err;
    cr_assert_eq(tdx_sumspill_put_all(&sp, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(tdx_sumspill_rewind(&sp, &err), 0, "%s", err.msg);
    tdx_sumregion got;
    cr_assert_eq(tdx_sumspill_next_region(&sp, 2, &got, &err), 0, "task 2 has none");
    cr_assert_eq(tdx_sumspill_next_region(&sp, 4, &got, &err), -2);
    cr_assert_eq(tdx_sumspill_next_region(&sp, 3, &got, &err), 1);
    cr_assert_eq(got.seq, 1);
    cr_assert_eq(tdx_sumspill_next_region(&sp, 3, &got, &err), 0);
    tdx_sumspill_free(&sp);
    tdx_summary_free(&s);
    tdx_vgstore_free(&store);
}
