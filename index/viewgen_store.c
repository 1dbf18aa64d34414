/* viewgen_store.c: interned strings, the PC-keyed stack prefix tree, per-generation resolution
 * caches and the default viewer frame tree. */
#include "viewgen_store.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/hmap.h"
#include "viewgen_ser.h"

/* ---- strings ---- */

static uint32_t str_hash(const void *p, size_t n) { return (uint32_t)XXH3_64bits(p, n); }

static bool str_eq(const tdx_vgstore *s, uint32_t id, const void *p, size_t n) {
    tdx_str t = tdx_vgstore_str(s, id);
    return t.n == n && (n == 0 || memcmp(t.p, p, n) == 0);
}

static int str_rehash(tdx_vgstore *s, size_t cap) {
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    size_t mask = cap - 1;
    size_t nstr = tdx_vgstore_nstrings(s);
    for (uint32_t id = 0; id < nstr; id++) {
        tdx_str t = tdx_vgstore_str(s, id);
        size_t i = str_hash(t.p, t.n) & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = id + 1;
    }
    free(s->str_slots);
    s->str_slots = slots;
    s->str_mask = mask;
    return 0;
}

static uint32_t str_add(tdx_vgstore *s, const void *p, size_t n) {
    size_t nstr = tdx_vgstore_nstrings(s);
    if (nstr >= UINT32_MAX - 1 || s->str_data.n + n > UINT32_MAX ||
        tdx_buf_append(&s->str_data, p, n) ||
        tdx_vec_push(&s->str_off, (uint32_t)s->str_data.n)) {
        s->oom = 1;
        return 0;
    }
    return (uint32_t)nstr;
}

uint32_t tdx_vgstore_intern(tdx_vgstore *s, const void *p, size_t n) {
    if (n == 0) return 0;
    size_t nstr = tdx_vgstore_nstrings(s);
    if ((nstr + 1) * 2 > s->str_mask + 1 && str_rehash(s, (s->str_mask + 1) * 2)) {
        s->oom = 1;
        return 0;
    }
    size_t i = str_hash(p, n) & s->str_mask;
    for (;;) {
        uint32_t v = s->str_slots[i];
        if (!v) break;
        if (str_eq(s, v - 1, p, n)) return v - 1;
        i = (i + 1) & s->str_mask;
    }
    uint32_t id = str_add(s, p, n);
    if (id) s->str_slots[i] = id + 1;
    return id;
}

/* ---- stack nodes ---- */

static size_t node_hash(uint32_t parent, uint64_t pc) {
    return (size_t)tdx_hash64(pc ^ tdx_hash64((uint64_t)parent + 0x9e3779b97f4a7c15ULL));
}

static int node_rehash(tdx_vgstore *s, size_t cap) {
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    size_t mask = cap - 1;
    for (uint32_t k = 1; k < s->nodes.n; k++) {
        size_t i = node_hash(s->nodes.v[k].parent, s->nodes.v[k].pc) & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = k;
    }
    free(s->node_slots);
    s->node_slots = slots;
    s->node_mask = mask;
    return 0;
}

uint32_t tdx_vgstore_child(tdx_vgstore *s, uint32_t parent, uint64_t pc, uint32_t func,
                           uint64_t line) {
    if ((s->nodes.n + 1) * 2 > s->node_mask + 1 && node_rehash(s, (s->node_mask + 1) * 2)) {
        s->oom = 1;
        return 0;
    }
    size_t i = node_hash(parent, pc) & s->node_mask;
    for (;;) {
        uint32_t k = s->node_slots[i];
        if (!k) break;
        const tdx_vgnode *nd = &s->nodes.v[k];
        if (nd->pc == pc && nd->parent == parent) return k;
        i = (i + 1) & s->node_mask;
    }
    if (s->nodes.n >= UINT32_MAX - 1) {
        s->oom = 1;
        return 0;
    }
    tdx_vgnode nd = {pc, line, parent, func};
    if (tdx_vec_push(&s->nodes, nd)) {
        s->oom = 1;
        return 0;
    }
    uint32_t k = (uint32_t)(s->nodes.n - 1);
    s->node_slots[i] = k;
    return k;
}

int tdx_vgstore_init(tdx_vgstore *s) {
    memset(s, 0, sizeof *s);
    tdx_vgnode root = {0, 0, 0, 0};
    if (tdx_vec_push(&s->str_off, 0) || tdx_vec_push(&s->str_off, 0) ||
        tdx_vec_push(&s->nodes, root) || str_rehash(s, 64) || node_rehash(s, 256)) {
        tdx_vgstore_free(s);
        return -1;
    }
    return 0;
}

void tdx_vgstore_free(tdx_vgstore *s) {
    tdx_vec_free(&s->str_off);
    tdx_vec_free(&s->str_data);
    tdx_vec_free(&s->nodes);
    free(s->str_slots);
    free(s->node_slots);
    memset(s, 0, sizeof *s);
}

int tdx_vgstore_save(const tdx_vgstore *s, tdx_buf *out) {
    size_t nstr = tdx_vgstore_nstrings(s);
    int rc = tdx_buf_append(out, "TDXVS1", 6) || tdx_ser_u(out, nstr) || tdx_ser_u(out, s->nodes.n);
    for (uint32_t i = 1; i < nstr && !rc; i++) {
        tdx_str t = tdx_vgstore_str(s, i);
        rc = tdx_ser_bytes(out, t.p, t.n);
    }
    for (size_t k = 1; k < s->nodes.n && !rc; k++) {
        const tdx_vgnode *nd = &s->nodes.v[k];
        rc = tdx_ser_u(out, nd->parent) || tdx_ser_u(out, nd->pc) || tdx_ser_u(out, nd->func) ||
             tdx_ser_u(out, nd->line);
    }
    return rc ? -1 : 0;
}

int tdx_vgstore_load(tdx_vgstore *s, const uint8_t *p, size_t n, tdx_err *err) {
    if (tdx_vgstore_init(s)) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    tdx_deser d = {p, p + n, 0};
    if (n < 6 || memcmp(p, "TDXVS1", 6) != 0) d.bad = 1;
    d.p += n < 6 ? n : 6;
    uint64_t nstr = tdx_deser_u(&d), nnodes = tdx_deser_u(&d);
    if (nstr == 0 || nnodes == 0 || nstr > UINT32_MAX || nnodes > UINT32_MAX) d.bad = 1;
    for (uint64_t i = 1; i < nstr && !d.bad; i++) {
        size_t len;
        const uint8_t *q = tdx_deser_bytes(&d, &len);
        if (d.bad) break;
        /* Identical strings cannot occur in a saved store; check to keep ids exact. */
        if (len == 0 || tdx_vgstore_intern(s, q, len) != i) d.bad = 1;
    }
    for (uint64_t k = 1; k < nnodes && !d.bad; k++) {
        uint32_t parent = tdx_deser_u32(&d, k);
        uint64_t pc = tdx_deser_u(&d);
        uint32_t func = tdx_deser_u32(&d, nstr);
        uint64_t line = tdx_deser_u(&d);
        if (d.bad || tdx_vgstore_child(s, parent, pc, func, line) != k) d.bad = 1;
    }
    if (d.bad || s->oom || d.p != d.end) {
        int oom = s->oom;
        tdx_vgstore_free(s);
        return tdx_errf(err, oom ? TDX_ENOMEM : TDX_EINDEX, TDX_NO_OFFSET,
                        oom ? "out of memory" : "damaged string/stack store");
    }
    return 0;
}

/* ---- per-generation caches ---- */

void tdx_vgcache_init(tdx_vgcache *c) {
    memset(c, 0, sizeof *c);
    c->epoch = 1;
}

void tdx_vgcache_free(tdx_vgcache *c) {
    tdx_vec_free(&c->stacks);
    tdx_vec_free(&c->strings);
}

void tdx_vgcache_reset(tdx_vgcache *c) {
    if (++c->epoch == 0) { /* wrapped: forget every entry for real */
        c->stacks.n = c->strings.n = 0;
        c->epoch = 1;
    }
}

/* The slot of index i in a cache vector, grown (with invalid entries) as needed. */
static uint64_t *cache_slot(tdx_vgcache *c, void *vec, uint32_t i) {
    TDX_VEC(uint64_t) *v = vec;
    (void)c;
    if (i >= v->n) {
        if (tdx_vec_reserve(v, (size_t)i + 1)) return NULL;
        memset(v->v + v->n, 0, ((size_t)i + 1 - v->n) * sizeof *v->v);
        v->n = (size_t)i + 1;
    }
    return &v->v[i];
}

uint32_t tdx_vgstore_gen_string(tdx_vgstore *s, tdx_vgcache *c, const tdx_gen *g, uint32_t str) {
    if (!g || str == 0 || str >= g->strings.n) return 0;
    uint64_t *slot = cache_slot(c, &c->strings, str);
    if (slot && (uint32_t)(*slot >> 32) == c->epoch) return (uint32_t)*slot;
    tdx_str t = g->strings.v[str];
    uint32_t id = tdx_vgstore_intern(s, t.p, t.n);
    if (slot && !s->oom) *slot = ((uint64_t)c->epoch << 32) | id;
    if (!slot) s->oom = 1;
    return id;
}

uint32_t tdx_vgstore_gen_stack(tdx_vgstore *s, tdx_vgcache *c, const tdx_gen *g, uint32_t stack) {
    if (!g || stack == 0 || stack >= g->stacks.n) return 0;
    uint64_t *slot = cache_slot(c, &c->stacks, stack);
    if (slot && (uint32_t)(*slot >> 32) == c->epoch) return (uint32_t)*slot;
    const tdx_stack *st = &g->stacks.v[stack];
    uint32_t node = 0;
    for (uint32_t i = st->nframes; i-- > 0;) { /* outermost (last) frame first */
        const tdx_frame *f = &g->frames.v[g->stack_frames.v[st->first + i]];
        uint32_t func = tdx_vgstore_gen_string(s, c, g, f->func);
        node = tdx_vgstore_child(s, node, f->pc, func, f->line);
        if (s->oom) return 0;
    }
    /* The string lookups above may have grown c->strings but never c->stacks. */
    slot = cache_slot(c, &c->stacks, stack);
    if (slot) *slot = ((uint64_t)c->epoch << 32) | node;
    else s->oom = 1;
    return node;
}

/* ---- the default frame tree ---- */

void tdx_vgtree_init(tdx_vgtree *t, const tdx_vgstore *store) {
    memset(t, 0, sizeof *t);
    t->store = store;
}

void tdx_vgtree_free(tdx_vgtree *t) {
    tdx_vec_free(&t->id_of);
    tdx_vec_free(&t->node_of);
}

uint32_t tdx_vgtree_stack(tdx_vgtree *t, uint32_t key) {
    if (key == 0) return 0;
    if (key < t->id_of.n && t->id_of.v[key]) return t->id_of.v[key];
    size_t nn = tdx_vgstore_nnodes(t->store);
    if (key >= nn) return 0;
    if (t->id_of.n < nn) {
        size_t want = nn + nn / 2;
        if (tdx_vec_reserve(&t->id_of, want)) {
            t->oom = 1;
            return 0;
        }
        memset(t->id_of.v + t->id_of.n, 0, (want - t->id_of.n) * sizeof *t->id_of.v);
        t->id_of.n = want;
    }
    if (t->node_of.n == 0 && tdx_vec_push(&t->node_of, 0)) {
        t->oom = 1;
        return 0;
    }
    /* Find the deepest ancestor that already has an id, then number the path below it from the
     * outermost missing frame down to the leaf (Go creates missing children top-down). */
    uint32_t path[64], *ext = NULL;
    size_t np = 0, cap = 64;
    uint32_t *pp = path;
    for (uint32_t k = key; k && !t->id_of.v[k]; k = tdx_vgstore_node(t->store, k)->parent) {
        if (np == cap) {
            uint32_t *nx = realloc(ext, cap * 2 * sizeof *nx);
            if (!nx) {
                free(ext);
                t->oom = 1;
                return 0;
            }
            if (!ext) memcpy(nx, path, sizeof path);
            ext = nx;
            pp = ext;
            cap *= 2;
        }
        pp[np++] = k;
    }
    if (tdx_vec_reserve(&t->node_of, t->node_of.n + np)) {
        free(ext);
        t->oom = 1;
        return 0;
    }
    while (np > 0) {
        uint32_t k = pp[--np];
        t->id_of.v[k] = (uint32_t)t->node_of.n;
        t->node_of.v[t->node_of.n++] = k;
    }
    free(ext);
    return t->id_of.v[key];
}

int tdx_vgtree_frame(const tdx_vgtree *t, uint32_t id, tdx_str *func, uint64_t *line,
                     uint32_t *parent) {
    if (id == 0 || id >= t->node_of.n) return -1;
    const tdx_vgnode *nd = tdx_vgstore_node(t->store, t->node_of.v[id]);
    *func = tdx_vgstore_str(t->store, nd->func);
    *line = nd->line;
    *parent = nd->parent ? t->id_of.v[nd->parent] : 0;
    return 0;
}

static uint32_t tree_stack(void *self, uint32_t key) { return tdx_vgtree_stack(self, key); }
static int tree_frame(void *self, uint32_t id, tdx_str *func, uint64_t *line, uint32_t *parent) {
    return tdx_vgtree_frame(self, id, func, line, parent);
}

tdx_vgframes tdx_vgtree_frames(tdx_vgtree *t) {
    return (tdx_vgframes){t, tree_stack, tree_frame};
}

int tdx_vgtree_save(const tdx_vgtree *t, tdx_buf *out) {
    /* The frame ids in order: each one's store node (frame id i is node_of[i]). */
    uint32_t n = tdx_vgtree_nframes(t);
    int rc = tdx_ser_u(out, n);
    for (uint32_t i = 1; i <= n && !rc; i++) rc = tdx_ser_u(out, t->node_of.v[i]);
    return rc ? -1 : 0;
}

int tdx_vgtree_load(tdx_vgtree *t, const uint8_t *p, size_t n, tdx_err *err) {
    tdx_deser d = {p, p + n, 0};
    uint64_t count = tdx_deser_u(&d);
    size_t nn = tdx_vgstore_nnodes(t->store);
    if (d.bad || count >= nn + 1 || count > n) goto bad;
    t->node_of.n = 0;
    t->id_of.n = 0;
    if (tdx_vec_reserve(&t->node_of, count + 1) || tdx_vec_reserve(&t->id_of, nn + nn / 2 + 1))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    t->id_of.n = nn + nn / 2 + 1;
    memset(t->id_of.v, 0, t->id_of.n * sizeof *t->id_of.v);
    t->node_of.v[t->node_of.n++] = 0;
    for (uint64_t i = 1; i <= count; i++) {
        uint32_t node = tdx_deser_u32(&d, nn);
        if (d.bad || node == 0 || t->id_of.v[node]) goto bad;
        t->node_of.v[t->node_of.n++] = node;
        t->id_of.v[node] = (uint32_t)i;
    }
    if (d.p != d.end) goto bad;
    return 0;
bad:
    return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET, "damaged viewer frame tree in the index");
}

void tdx_vgtree_truncate(tdx_vgtree *t, uint32_t n) {
    while (tdx_vgtree_nframes(t) > n) {
        uint32_t node = t->node_of.v[--t->node_of.n];
        if (node < t->id_of.n) t->id_of.v[node] = 0;
    }
}
