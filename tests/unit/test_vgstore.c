/* test_vgstore.c: index/viewgen_store.h: a saved store reloads with the same ids (its stack nodes
 * read in place from the saved bytes), damaged node records are refused, and a reloaded store
 * still grows (it then copies its nodes) with the ids a store never saved would give. */
#include <criterion/criterion.h>

#include <string.h>

#include "index/viewgen_store.h"

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

/* fill()'s store a with n leaves, saved into *saved and reloaded into b. */
static void saved_and_reloaded(tdx_vgstore *a, tdx_vgstore *b, uint32_t *leaf, size_t n,
                               tdx_buf *saved) {
    fill(a, leaf, n);
    *saved = (tdx_buf){0};
    cr_assert_eq(tdx_vgstore_save(a, saved), 0);
    tdx_err err;
    cr_assert_eq(tdx_vgstore_load(b, saved->v, saved->n, NULL, &err), 0, "%s", err.msg);
}

static void free_all(tdx_vgstore *a, tdx_vgstore *b, tdx_buf *saved) {
    tdx_vgstore_free(b);
    tdx_vgstore_free(a);
    tdx_vec_free(saved);
}

Test(vgstore, reload_reads_nodes_in_place) {
    tdx_vgstore a, b;
    uint32_t leaf[24];
    tdx_buf saved;
    saved_and_reloaded(&a, &b, leaf, 24, &saved);
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
    free_all(&a, &b, &saved);
}

Test(vgstore, reloaded_store_grows_like_the_original) {
    tdx_vgstore a, b;
    uint32_t leaf[24];
    tdx_buf saved;
    saved_and_reloaded(&a, &b, leaf, 24, &saved);
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
    free_all(&a, &b, &saved);
}

Test(vgstore, damaged_node_records_are_refused) {
    tdx_vgstore a, b;
    uint32_t leaf[8];
    fill(&a, leaf, 8);
    tdx_buf saved = {0};
    cr_assert_eq(tdx_vgstore_save(&a, &saved), 0);
    size_t nn = tdx_vgstore_nnodes(&a);
    /* The node records end the bytes (no identity stacks): the last node's parent, then func. */
    uint8_t *last = saved.v + saved.n - 24;
    tdx_err err;
    uint8_t keep[4];
    memcpy(keep, last + 16, 4);
    uint32_t bad = (uint32_t)nn; /* a parent at or after the node itself */
    memcpy(last + 16, &bad, 4);
    cr_expect_eq(tdx_vgstore_load(&b, saved.v, saved.n, NULL, &err), -1);
    cr_expect(strstr(err.msg, "damaged") != NULL, "%s", err.msg);
    memcpy(last + 16, keep, 4);
    bad = 1000; /* no such string */
    memcpy(last + 20, &bad, 4);
    cr_expect_eq(tdx_vgstore_load(&b, saved.v, saved.n, NULL, &err), -1);
    tdx_vgstore_free(&a);
    tdx_vec_free(&saved);
}
