/* test_vgstore.c: index/views/viewgen_store.h: a saved store reloads with the same ids (its stack
 * nodes read in place from the saved bytes), damaged node records are refused, and a reloaded store
 * still grows (it then copies its nodes) with the ids a store never saved would give; a saved
 * frame tree answers in place like the tree it came from, and grows or truncates like it. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "index/views/viewgen_store.h"

/* A store with a few strings and a small tree: chains of depth 1..8 over 3 functions. */
static void fill(tdx_vgstore *s, uint32_t *leaf, size_t nleaf) {
    cr_assert_eq(tdx_vgstore_init(s), 0);
    uint32_t f[3];
    f[0] = tdx_vgstore_intern(s, "main.main", 9);
    f[1] = tdx_vgstore_intern(s, "main.work", 9);
    f[2] = tdx_vgstore_intern(s, "runtime.gopark", 14);
    for (size_t i = 0; i < nleaf; i++) {
        uint32_t node = 0;
        for (size_t d = 0; d <= i % 8; d++)
            node = tdx_vgstore_child(s, node, 0x1000 + 16 * d + (i % 3), f[d % 3], 10 + d);
        leaf[i] = node;
    }
    cr_assert_eq(s->oom, 0);
}

/* fill()'s store with 24 leaves, saved (strings and stack keys, then the nodes). */
static void fill_saved(tdx_vgstore *a, uint32_t leaf[24], tdx_buf *saved, tdx_buf *nodes) {
    fill(a, leaf, 24);
    *saved = *nodes = (tdx_buf){0};
    cr_assert_eq(tdx_vgstore_save(a, saved, nodes), 0);
}

static void same_nodes(const tdx_vgstore *a, const tdx_vgstore *b) {
    cr_assert_eq(tdx_vgstore_nnodes(a), tdx_vgstore_nnodes(b));
    for (uint32_t k = 0; k < tdx_vgstore_nnodes(a); k++) {
        tdx_vgnode x = tdx_vgstore_node(a, k), y = tdx_vgstore_node(b, k);
        cr_expect_eq(x.pc, y.pc, "node %u", k);
        cr_expect_eq(x.line, y.line, "node %u", k);
        cr_expect_eq(x.parent, y.parent, "node %u", k);
        cr_expect_eq(x.func, y.func, "node %u", k);
    }
}

/* The frame names of every node of s (what the build does with the trace's frames). */
static tdx_fnames_w g_nw;
static tdx_buf g_nbuf;
static tdx_fnames g_names;

static void names_for(const tdx_vgstore *s) {
    tdx_fnames_w_free(&g_nw);
    tdx_fnames_w_init(&g_nw);
    for (uint32_t k = 1; k < tdx_vgstore_nnodes(s); k++) {
        tdx_vgnode nd = tdx_vgstore_node(s, k);
        if (!tdx_fnames_w_find(&g_nw, nd.func, nd.line))
            cr_assert_eq(tdx_fnames_w_add(&g_nw, s, nd.func, nd.line), 0);
    }
    g_nbuf.n = 0;
    cr_assert_eq(tdx_fnames_w_finish(&g_nw, &g_nbuf), 0);
    tdx_err err;
    cr_assert_eq(tdx_fnames_load(&g_names, g_nbuf.v, g_nbuf.n, &err), 0, "%s", err.msg);
}

/* fill()'s store a with n leaves, saved into *saved and reloaded into b. */
static void saved_and_reloaded(tdx_vgstore *a, tdx_vgstore *b, uint32_t *leaf, size_t n,
                               tdx_buf *saved) {
    fill(a, leaf, n);
    saved[0] = saved[1] = (tdx_buf){0};
    cr_assert_eq(tdx_vgstore_save(a, &saved[0], &saved[1]), 0);
    tdx_err err;
    cr_assert_eq(tdx_vgstore_load(b, saved[0].v, saved[0].n, NULL, &err), 0, "%s", err.msg);
    cr_expect(b->nodes_absent, "no node is read before load_nodes");
    cr_expect_eq(tdx_vgstore_nnodes(b), tdx_vgstore_nnodes(a), "but their count is known");
    cr_assert_eq(tdx_vgstore_load_nodes(b, saved[1].v, saved[1].n, &err), 0, "%s", err.msg);
}

static void free_all(tdx_vgstore *a, tdx_vgstore *b, tdx_buf *saved) {
    tdx_vgstore_free(b);
    tdx_vgstore_free(a);
    tdx_vec_free(&saved[0]);
    tdx_vec_free(&saved[1]);
}

Test(vgstore, reload_reads_nodes_in_place) {
    tdx_vgstore a, b;
    uint32_t leaf[24];
    tdx_buf saved[2];
    saved_and_reloaded(&a, &b, leaf, 24, saved);
    cr_expect_not_null(b.node_recs, "the nodes are read from the saved bytes");
    cr_expect_eq(b.nodes.n, 1, "only the root is copied");
    same_nodes(&a, &b);
    tdx_str s = tdx_vgstore_str(&b, tdx_vgstore_node(&b, leaf[2]).func);
    cr_expect(s.n == 14 && memcmp(s.p, "runtime.gopark", 14) == 0);
    /* A frame tree over the reloaded store walks the same parents. */
    tdx_vgtree t;
    tdx_vgtree_init(&t, &b);
    uint32_t id = tdx_vgtree_stack(&t, leaf[7]); /* depth 8: frame ids 1..8 */
    cr_expect_eq(id, 8);
    tdx_str func;
    uint64_t line;
    uint32_t parent;
    cr_assert_eq(tdx_vgtree_frame(&t, id, &func, &line, &parent), 0);
    cr_expect_eq(line, 17);
    cr_expect_eq(parent, 7);
    cr_assert_eq(tdx_vgtree_frame(&t, id, NULL, NULL, &parent), 0, "name not asked for");
    cr_expect_eq(parent, 7);
    tdx_vgtree_free(&t);
    free_all(&a, &b, saved);
}

Test(vgstore, reloaded_store_grows_like_the_original) {
    tdx_vgstore a, b;
    uint32_t leaf[24];
    tdx_buf saved[2];
    saved_and_reloaded(&a, &b, leaf, 24, saved);
    /* An existing node is found again, a new one gets the next id in both stores. */
    tdx_vgnode n3 = tdx_vgstore_node(&a, leaf[3]);
    cr_expect_eq(tdx_vgstore_child(&b, n3.parent, n3.pc, n3.func, n3.line), leaf[3]);
    cr_expect_null(b.node_recs, "adding copies the nodes");
    uint32_t na = tdx_vgstore_child(&a, leaf[5], 0x9999, 1, 99);
    uint32_t nb = tdx_vgstore_child(&b, leaf[5], 0x9999, 1, 99);
    cr_expect_eq(na, nb);
    cr_expect_eq(nb, tdx_vgstore_nnodes(&a) - 1);
    cr_expect_eq(b.oom, 0);
    same_nodes(&a, &b);
    free_all(&a, &b, saved);
}

Test(vgstore, damaged_node_records_are_refused) {
    tdx_vgstore a, b;
    uint32_t leaf[8];
    fill(&a, leaf, 8);
    tdx_buf saved = {0}, nodes = {0};
    cr_assert_eq(tdx_vgstore_save(&a, &saved, &nodes), 0);
    size_t nn = tdx_vgstore_nnodes(&a);
    uint8_t *last = nodes.v + nodes.n - 24; /* the last node's record: parent, then func */
    tdx_err err;
    uint8_t keep[4];
    memcpy(keep, last + 16, 4);
    uint32_t bad = (uint32_t)nn; /* a parent at or after the node itself */
    memcpy(last + 16, &bad, 4);
    cr_assert_eq(tdx_vgstore_load(&b, saved.v, saved.n, NULL, &err), 0, "%s", err.msg);
    cr_expect_eq(tdx_vgstore_load_nodes(&b, nodes.v, nodes.n, &err), -1);
    cr_expect(strstr(err.msg, "damaged") != NULL, "%s", err.msg);
    memcpy(last + 16, keep, 4);
    bad = 1000; /* no such string */
    memcpy(last + 20, &bad, 4);
    cr_expect_eq(tdx_vgstore_load_nodes(&b, nodes.v, nodes.n, &err), -1);
    cr_expect_eq(tdx_vgstore_load_nodes(&b, nodes.v, nodes.n - 24, &err), -1, "one missing");
    cr_expect(b.nodes_absent);
    /* A tree over a store without its nodes cannot number a new frame: damage, not a crash. */
    tdx_vgtree t;
    tdx_vgtree_init(&t, &b);
    tdx_buf tb = {0};
    cr_assert_eq(tdx_vec_reserve(&tb, 16 + 4 * nn), 0);
    if (!tb.v) return; /* (never: the assertion ended the test; this tells clang-tidy) */
    memset(tb.v, 0, 16 + 4 * nn);
    tdx_le64(tb.v + 8, nn);
    tb.n = 16 + 4 * nn;
    cr_assert_eq(tdx_vgtree_load(&t, tb.v, tb.n, &g_names, &err), 0, "%s", err.msg);
    cr_expect_eq(tdx_vgtree_stack(&t, leaf[3]), 0);
    cr_expect_eq(t.bad, 1);
    tdx_vgtree_free(&t);
    tdx_vec_free(&tb);
    tdx_vgstore_free(&b);
    tdx_vgstore_free(&a);
    tdx_vec_free(&saved);
    tdx_vec_free(&nodes);
}

/* Every frame of a and b alike, and every leaf's frame id. */
static void same_frames(const tdx_vgtree *a, const tdx_vgtree *b, const uint32_t *leaf, size_t n) {
    cr_assert_eq(tdx_vgtree_nframes(a), tdx_vgtree_nframes(b));
    for (uint32_t id = 0; id <= tdx_vgtree_nframes(a) + 1; id++) {
        tdx_str fa = {0}, fb = {0};
        uint64_t la = 0, lb = 0;
        uint32_t pa = 0, pb = 0;
        int ra = tdx_vgtree_frame(a, id, &fa, &la, &pa),
            rb = tdx_vgtree_frame(b, id, &fb, &lb, &pb);
        cr_expect_eq(ra, rb, "frame %u", id);
        if (ra) continue;
        cr_expect(fa.n == fb.n && memcmp(fa.p, fb.p, fa.n) == 0, "frame %u name", id);
        cr_expect_eq(la, lb, "frame %u line", id);
        cr_expect_eq(pa, pb, "frame %u parent", id);
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t ia = tdx_vgtree_stack((tdx_vgtree *)a, leaf[i]);
        uint32_t ib = tdx_vgtree_stack((tdx_vgtree *)b, leaf[i]);
        cr_expect_eq(ia, ib, "leaf %zu", i);
    }
}

/* Tree a numbers the stacks of leaves 0..k-1 (every other one), is saved into *saved and loaded
 * into b over the same store. */
static void tree_saved(tdx_vgstore *s, tdx_vgtree *a, tdx_vgtree *b, const uint32_t *leaf, size_t k,
                       tdx_buf *saved) {
    names_for(s);
    tdx_vgtree_init(a, s);
    for (size_t i = 0; i < k; i += 2) cr_assert_neq(tdx_vgtree_stack(a, leaf[i]), 0);
    *saved = (tdx_buf){0};
    cr_assert_eq(tdx_vgtree_save(a, &g_nw, saved), 0);
    tdx_vgtree_init(b, s);
    tdx_err err;
    cr_assert_eq(tdx_vgtree_load(b, saved->v, saved->n, &g_names, &err), 0, "%s", err.msg);
}

/* A store with 24 leaves, tree a over it numbering leaves 0..k-1 (every other one), saved and
 * loaded into b. */
typedef struct trees {
    tdx_vgstore s;
    uint32_t leaf[24];
    tdx_vgtree a, b;
    tdx_buf saved;
} trees;

static void trees_setup(trees *f, size_t k) {
    fill(&f->s, f->leaf, 24);
    tree_saved(&f->s, &f->a, &f->b, f->leaf, k, &f->saved);
}

static void trees_free(trees *f) {
    tdx_vgtree_free(&f->b);
    tdx_vgtree_free(&f->a);
    tdx_vgstore_free(&f->s);
    tdx_vec_free(&f->saved);
}

Test(vgstore, saved_tree_answers_in_place) {
    trees f;
    trees_setup(&f, 16);
    cr_expect_not_null(f.b.saved_recs, "read in place");
    uint32_t numbered[8];
    for (size_t i = 0; i < 8; i++) numbered[i] = f.leaf[2 * i];
    same_frames(&f.a, &f.b, numbered, 8);
    cr_expect_not_null(f.b.saved_recs, "known stacks do not copy the tree");
    /* A saved frame's name is its "func:line" as a JSON string, ready to copy. */
    tdx_vgframes fb = tdx_vgtree_frames(&f.b);
    for (uint32_t id = 1; id <= tdx_vgtree_nframes(&f.b); id++) {
        tdx_str func, json;
        uint64_t line;
        uint32_t p1, p2;
        cr_assert_eq(tdx_vgtree_frame(&f.b, id, &func, &line, &p1), 0);
        cr_assert_eq(fb.name(fb.self, id, &json, &p2), 0);
        char want[64];
        int k = snprintf(want, sizeof want, "\"%.*s:%llu\"", (int)func.n, (const char *)func.p,
                         (unsigned long long)line);
        cr_expect(json.n == (size_t)k && memcmp(json.p, want, (size_t)k) == 0, "frame %u: %.*s", id,
                  (int)json.n, (const char *)json.p);
        cr_expect_eq(p1, p2);
    }
    cr_expect_eq(f.b.node_of.n, 0);
    /* Saving the loaded tree gives the same bytes. */
    tdx_buf again = {0};
    cr_assert_eq(tdx_vgtree_save(&f.b, &g_nw, &again), 0);
    cr_expect(again.n == f.saved.n && memcmp(again.v, f.saved.v, f.saved.n) == 0);
    /* A stack with no frame yet: b copies the tree, then numbers it as a does. */
    same_frames(&f.a, &f.b, f.leaf, 24);
    cr_expect_null(f.b.saved_recs, "a new frame copies the tree");
    cr_expect_eq(f.b.bad, 0);
    tdx_vec_free(&again);
    trees_free(&f);
}

Test(vgstore, saved_tree_truncates_like_the_original) {
    trees f;
    trees_setup(&f, 24);
    uint32_t keep = tdx_vgtree_nframes(&f.a) / 2;
    tdx_vgtree_truncate(&f.a, keep);
    tdx_vgtree_truncate(&f.b, keep);
    cr_expect_eq(tdx_vgtree_nframes(&f.b), keep);
    same_frames(&f.a, &f.b, f.leaf, 24);
    trees_free(&f);
}

Test(vgstore, damaged_saved_tree) {
    trees f;
    trees_setup(&f, 16);
    uint32_t n = tdx_vgtree_nframes(&f.a);
    size_t nodes = (size_t)tdx_rd64(f.saved.v + 8);
    uint8_t *recs = f.saved.v + 16 + 4 * nodes;
    tdx_err err;
    /* Lengths that do not add up are refused at load. */
    tdx_vgtree_init(&f.b, &f.s);
    cr_expect_eq(tdx_vgtree_load(&f.b, f.saved.v, f.saved.n - 1, &g_names, &err), -1);
    tdx_le64(f.saved.v, n + 1);
    cr_expect_eq(tdx_vgtree_load(&f.b, f.saved.v, f.saved.n, &g_names, &err), -1);
    tdx_le64(f.saved.v, n);
    /* A parent not below the frame, a name that does not exist: that frame is refused. */
    cr_assert_eq(tdx_vgtree_load(&f.b, f.saved.v, f.saved.n, &g_names, &err), 0);
    uint32_t parent;
    tdx_le32(recs + (size_t)(n - 1) * TDX_VGFRAME_REC, n);
    cr_expect_eq(tdx_vgtree_frame(&f.b, n, NULL, NULL, &parent), -1);
    tdx_le32(recs + (size_t)(n - 1) * TDX_VGFRAME_REC, 0);
    tdx_le32(recs + (size_t)(n - 1) * TDX_VGFRAME_REC + 4, 1000);
    tdx_str fn;
    cr_expect_eq(tdx_vgtree_frame(&f.b, n, &fn, NULL, &parent), -1);
    cr_expect_eq(tdx_vgtree_frame(&f.b, 1, &fn, NULL, &parent), 0, "the others still answer");
    /* Two nodes with one frame id: copying the tree (a new stack) finds it. */
    tdx_le32(f.saved.v + 16 + 4 * (size_t)f.leaf[0],
             tdx_rd32(f.saved.v + 16 + 4 * (size_t)f.leaf[2]));
    cr_expect_eq(tdx_vgtree_stack(&f.b, f.leaf[23]), 0, "a stack deeper than any numbered one");
    cr_expect_eq(f.b.bad, 1);
    trees_free(&f);
}

/* tdx_vgtree_check reads every entry: it passes the saved tree and refuses each kind of damage,
 * including those a query reads without noticing (a caller, a name of another frame). */
Test(vgstore, check_reads_every_entry) {
    trees f;
    trees_setup(&f, 16);
    uint32_t n = tdx_vgtree_nframes(&f.a);
    cr_assert_geq(n, 3);
    size_t nodes = (size_t)tdx_rd64(f.saved.v + 8);
    uint8_t *ids = f.saved.v + 16, *recs = f.saved.v + 16 + 4 * nodes;
    tdx_err err;
    cr_assert_eq(tdx_vgtree_check(&f.b), 0);
    tdx_buf good = {0};
    cr_assert_eq(tdx_buf_append(&good, f.saved.v, f.saved.n), 0);
    /* (offset in the saved bytes, new u32) */
    size_t at[5] = {(size_t)(recs - f.saved.v) + (size_t)(n - 1) * TDX_VGFRAME_REC,
                    (size_t)(recs - f.saved.v) + (size_t)(n - 1) * TDX_VGFRAME_REC + 4,
                    (size_t)(recs - f.saved.v) + 4,
                    (size_t)(ids - f.saved.v) + 4 * (size_t)f.leaf[0],
                    (size_t)(ids - f.saved.v) + 4 * (size_t)f.leaf[1]};
    uint32_t parent_n = tdx_rd32(f.saved.v + at[0]), name_n = tdx_rd32(f.saved.v + at[1]);
    uint32_t val[5] = {parent_n ? parent_n - 1 : 1, name_n == 1 ? 2 : 1, 1000,
                       tdx_rd32(f.saved.v + 16 + 4 * (size_t)f.leaf[2]), n};
    for (int i = 0; i < 5; i++) {
        memcpy(f.saved.v, good.v, good.n);
        tdx_le32(f.saved.v + at[i], val[i]);
        tdx_vgtree_free(&f.b);
        tdx_vgtree_init(&f.b, &f.s);
        cr_assert_eq(tdx_vgtree_load(&f.b, f.saved.v, f.saved.n, &g_names, &err), 0);
        cr_expect_eq(tdx_vgtree_check(&f.b), -1, "damage %d passed", i);
    }
    tdx_vec_free(&good);
    trees_free(&f);
}

/* FNAMES as the build writes it from a trace's frames passes; each kind of damage is found at
 * the name it touches. */
Test(vgstore, frame_names_checked_against_the_frames) {
    tdx_vgstore s;
    cr_assert_eq(tdx_vgstore_init(&s), 0);
    uint32_t f1 = tdx_vgstore_intern(&s, "main.main", 9), f2 = tdx_vgstore_intern(&s, "a\"<b", 4);
    tdx_gen g;
    memset(&g, 0, sizeof g);
    tdx_frame fr[3] = {{.func = f1, .line = 10}, {.func = f2, .line = 7}, {.func = f1, .line = 12}};
    tdx_fnames_w w;
    tdx_fnames_w_init(&w);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(tdx_vec_push(&g.frames, fr[i]), 0);
        cr_assert_eq(tdx_fnames_w_add(&w, &s, fr[i].func, fr[i].line), 0);
    }
    tdx_buf good = {0}, b = {0};
    cr_assert_eq(tdx_fnames_w_finish(&w, &good), 0);
    cr_assert_eq(tdx_buf_append(&good, "x", 1), 0); /* (a trailing byte, cut below) */
    const size_t text = 8 + 3 * TDX_FNAME_REC;
    cr_assert_eq(memcmp(good.v + text, "\"main.main:10\"\"a\\\"\\u003cb:7\"", 28), 0, "%.*s", 28,
                 (const char *)good.v + text);
    /* (offset, new byte, or -1 for the trailing byte kept; the name that is wrong) */
    struct {
        size_t at;
        int val;
        uint64_t bad;
    } dmg[] = {
        {0, 0, 0},                                /* no damage */
        {text + 1, 'M', 1},                       /* a text's letter */
        {8 + TDX_FNAME_REC, 8, 2},                /* a line */
        {8 + 2 * TDX_FNAME_REC + 16, (int)f2, 3}, /* a function */
        {8 + TDX_FNAME_REC + 8, 15, 2},           /* a text's offset */
        {8 + 2 * TDX_FNAME_REC + 20, 13, 3},      /* a text's length */
        {0, -1, 3},                               /* text after the last */
    };
    tdx_err err;
    for (size_t i = 0; i < sizeof dmg / sizeof *dmg; i++) {
        b.n = 0;
        cr_assert_eq(tdx_buf_append(&b, good.v, good.n - (dmg[i].val == -1 ? 0 : 1)), 0);
        if (i > 0 && dmg[i].val >= 0) b.v[dmg[i].at] = (uint8_t)dmg[i].val;
        tdx_fnames names;
        cr_assert_eq(tdx_fnames_load(&names, b.v, b.n, &err), 0, "%s", err.msg);
        uint64_t bad = 99;
        cr_expect_eq(tdx_fnames_check(&names, &s, &g, &bad), i ? -1 : 0, "damage %zu", i);
        cr_expect_eq(bad, i ? dmg[i].bad : 0, "damage %zu: name %lu", i, (unsigned long)bad);
    }
    /* one frame more than names */
    tdx_fnames names;
    b.n = 0;
    cr_assert_eq(tdx_buf_append(&b, good.v, good.n - 1), 0);
    cr_assert_eq(tdx_fnames_load(&names, b.v, b.n, &err), 0, "%s", err.msg);
    cr_assert_eq(tdx_vec_push(&g.frames, fr[0]), 0);
    uint64_t bad = 99;
    cr_expect_eq(tdx_fnames_check(&names, &s, &g, &bad), -1);
    cr_expect_eq(bad, 0);
    tdx_vec_free(&b);
    tdx_vec_free(&good);
    tdx_vec_free(&g.frames);
    tdx_fnames_w_free(&w);
    tdx_vgstore_free(&s);
}

Test(vgstore, deferred_nodes_load_when_needed) {
    tdx_vgstore a, b;
    uint32_t leaf[24];
    tdx_buf saved, nodes;
    fill_saved(&a, leaf, &saved, &nodes);
    tdx_err err;
    uint64_t h = XXH3_64bits(nodes.v, nodes.n);
    /* A tree over a store whose nodes are deferred numbers a new frame after reading them. */
    tdx_vgtree ta, tb;
    tdx_vgtree_init(&ta, &a);
    cr_assert_neq(tdx_vgtree_stack(&ta, leaf[4]), 0);
    tdx_buf tree = {0};
    names_for(&a);
    cr_assert_eq(tdx_vgtree_save(&ta, &g_nw, &tree), 0);
    cr_assert_eq(tdx_vgstore_load(&b, saved.v, saved.n, NULL, &err), 0, "%s", err.msg);
    tdx_vgstore_defer_nodes(&b, nodes.v, nodes.n, h);
    tdx_vgtree_init(&tb, &b);
    cr_assert_eq(tdx_vgtree_load(&tb, tree.v, tree.n, &g_names, &err), 0, "%s", err.msg);
    cr_expect_eq(tdx_vgtree_stack(&tb, leaf[4]), tdx_vgtree_stack(&ta, leaf[4]));
    cr_expect(b.nodes_absent, "a known stack reads no node");
    cr_expect_eq(tdx_vgtree_stack(&tb, leaf[23]), tdx_vgtree_stack(&ta, leaf[23]));
    cr_expect(!b.nodes_absent && !b.nodes_bad && !tb.bad);
    tdx_vgtree_free(&tb);
    tdx_vgstore_free(&b);
    /* Records that fail their checksum: the tree reports damage instead of a frame. */
    cr_assert_eq(tdx_vgstore_load(&b, saved.v, saved.n, NULL, &err), 0, "%s", err.msg);
    nodes.v[nodes.n / 2] ^= 1;
    tdx_vgstore_defer_nodes(&b, nodes.v, nodes.n, h);
    tdx_vgtree_init(&tb, &b);
    cr_assert_eq(tdx_vgtree_load(&tb, tree.v, tree.n, &g_names, &err), 0, "%s", err.msg);
    cr_expect_eq(tdx_vgtree_stack(&tb, leaf[23]), 0);
    cr_expect(b.nodes_bad && tb.bad);
    tdx_vgtree_free(&tb);
    tdx_vgtree_free(&ta);
    tdx_vgstore_free(&b);
    tdx_vgstore_free(&a);
    tdx_vec_free(&tree);
    tdx_vec_free(&saved);
    tdx_vec_free(&nodes);
}

/* Damaged store bytes are refused (every truncation) or loaded (some flipped bytes still
 * parse), never a crash: each failure path frees what the load had built. The copies are exact
 * size, so an over-read shows in the sanitizer build. */
Test(vgstore, damaged_store_bytes_are_refused) {
    tdx_vgstore a, b;
    uint32_t leaf[24];
    tdx_buf saved, nodes;
    fill_saved(&a, leaf, &saved, &nodes);
    tdx_err err;
    for (size_t m = 0; m < saved.n; m++) {
        uint8_t *p = malloc(m ? m : 1);
        cr_assert_not_null(p);
        memcpy(p, saved.v, m);
        cr_expect_eq(tdx_vgstore_load(&b, p, m, NULL, &err), -1, "%zu of %zu bytes loaded", m,
                     saved.n);
        free(p);
    }
    static const uint8_t flips[] = {0x01, 0x80, 0xff};
    cr_assert_gt(saved.n, 6);
    uint8_t *p = malloc(saved.n);
    cr_assert_not_null(p);
    for (size_t i = 0; i < saved.n; i++)
        for (size_t f = 0; f < sizeof flips; f++) {
            memcpy(p, saved.v, saved.n);
            p[i] ^= flips[f];
            if (tdx_vgstore_load(&b, p, saved.n, NULL, &err) == 0) tdx_vgstore_free(&b);
        }
    free(p);
    tdx_vgstore_free(&a);
    tdx_vec_free(&saved);
    tdx_vec_free(&nodes);
}
