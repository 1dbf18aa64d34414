/* viewgen_store.c: interned strings, the PC-keyed stack prefix tree, per-generation resolution
 * caches and the default viewer frame tree. */
#include "index/views/viewgen_store.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/checksum.h"
#include "core/hmap.h"
#include "core/quote.h"
#include "index/format/format.h"
#include "index/common/viewgen_ser.h"

/* ---- strings ----
 *
 * Ids 0 .. nident-1 are the identity tables' strings (global ids, unique by content); the store's
 * own strings follow, unique among themselves (a separate namespace, so an own string may repeat
 * an identity string's content). Only own strings are hashed. */

static uint32_t str_hash(const void *p, size_t n) {
    return (uint32_t)XXH3_64bits(p, n);
}

static bool str_eq(const tdx_vgstore *s, uint32_t id, const void *p, size_t n) {
    tdx_str t = tdx_vgstore_str(s, id);
    return t.n == n && (n == 0 || memcmp(t.p, p, n) == 0);
}

static int str_rehash(tdx_vgstore *s, size_t cap) {
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    size_t mask = cap - 1;
    for (uint32_t id = s->nident; id < s->strs.n; id++) {
        tdx_str t = s->strs.v[id];
        size_t i = str_hash(t.p, t.n) & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = id + 1;
    }
    free(s->str_slots);
    s->str_slots = slots;
    s->str_mask = mask;
    return 0;
}

static uint32_t str_find(const tdx_vgstore *s, const void *p, size_t n) {
    for (size_t i = str_hash(p, n) & s->str_mask;; i = (i + 1) & s->str_mask) {
        uint32_t v = s->str_slots[i];
        if (!v) return UINT32_MAX;
        if (str_eq(s, v - 1, p, n)) return v - 1;
    }
}

void tdx_vgstore_freeze(tdx_vgstore *s) {
    s->frozen = true;
}

uint32_t tdx_vgstore_intern(tdx_vgstore *s, const void *p, size_t n) {
    if (n == 0) return 0;
    if (s->frozen) {
        uint32_t id = str_find(s, p, n);
        if (id != UINT32_MAX) return id;
        s->misses++;
        return 0;
    }
    size_t own = s->strs.n - s->nident;
    if ((own + 1) * 2 > s->str_mask + 1 && str_rehash(s, (s->str_mask + 1) * 2)) {
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
    void *copy = tdx_arena_memdup(&s->arena, p, n);
    if (!copy || s->strs.n >= UINT32_MAX - 1 || n > UINT32_MAX ||
        tdx_vec_push(&s->strs, ((tdx_str){copy, (uint32_t)n}))) {
        s->oom = 1;
        return 0;
    }
    uint32_t id = (uint32_t)(s->strs.n - 1);
    s->str_slots[i] = id + 1;
    return id;
}

/* ---- stack nodes ---- */

static size_t node_hash(uint32_t parent, uint64_t pc) {
    return (size_t)tdx_hash64(pc ^ tdx_hash64((uint64_t)parent + 0x9e3779b97f4a7c15ULL));
}

/* Copies the nodes a loaded store reads in place into its own vector (before adding any). */
static int own_nodes(tdx_vgstore *s) {
    if (s->nodes_absent) return -1;
    if (!s->node_recs) return 0;
    size_t n = s->nnodes_recs;
    if (tdx_vec_reserve(&s->nodes, n)) return -1;
    for (size_t k = 1; k < n; k++) s->nodes.v[k] = tdx_vgstore_node(s, (uint32_t)k);
    s->nodes.n = n;
    s->node_recs = NULL;
    s->nnodes_recs = 0;
    return 0;
}

static int node_rehash(tdx_vgstore *s, size_t cap) {
    if (own_nodes(s)) return -1;
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
    size_t nn = tdx_vgstore_nnodes(s);
    if (!s->node_slots &&
        node_rehash(s, 256 > nn * 2 ? 256 : (size_t)1 << (64 - __builtin_clzll(nn * 2)))) {
        s->oom = 1;
        return 0;
    }
    if (s->frozen) {
        for (size_t i = node_hash(parent, pc) & s->node_mask;; i = (i + 1) & s->node_mask) {
            uint32_t k = s->node_slots[i];
            if (!k) break;
            if (s->nodes.v[k].pc == pc && s->nodes.v[k].parent == parent) return k;
        }
        s->misses++;
        return 0;
    }
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
    s->misses = 0;
    tdx_arena_init(&s->arena);
    tdx_vgnode root = {0, 0, 0, 0};
    if (tdx_vec_push(&s->strs, ((tdx_str){(const uint8_t *)"", 0})) ||
        tdx_vec_push(&s->nodes, root) || str_rehash(s, 64) || node_rehash(s, 256)) {
        tdx_vgstore_free(s);
        return -1;
    }
    return 0;
}

void tdx_vgstore_free(tdx_vgstore *s) {
    tdx_vec_free(&s->strs);
    tdx_vec_free(&s->nodes);
    tdx_vec_free(&s->stack_node);
    tdx_arena_free(&s->arena);
    free(s->str_slots);
    free(s->node_slots);
    s->str_slots = s->node_slots = NULL;
    s->str_mask = s->node_mask = 0;
    s->ident = NULL;
    s->nident = 0;
    s->node_recs = NULL;
    s->nnodes_recs = 0;
    s->nodes_absent = false;
    s->deferred = NULL;
    s->deferred_len = 0;
    s->deferred_hash = 0;
    s->nodes_bad = false;
    s->oom = 0;
    s->frozen = false;
    s->misses = 0;
}

/* The path of stack k of g in the tree (outermost frame first). */
static uint32_t stack_path(tdx_vgstore *s, tdx_vgcache *c, const tdx_gen *g, uint32_t k) {
    const tdx_stack *st = &g->stacks.v[k];
    uint32_t node = 0;
    for (uint32_t i = st->nframes; i-- > 0;) {
        const tdx_frame *f = &g->frames.v[g->stack_frames.v[st->first + i]];
        uint32_t func = tdx_vgstore_gen_string(s, c, g, f->func);
        node = tdx_vgstore_child(s, node, f->pc, func, f->line);
        if (s->oom) return 0;
    }
    return node;
}

int tdx_vgstore_set_ident(tdx_vgstore *s, const tdx_gen *g) {
    if (s->strs.n != 1 || s->nodes.n != 1 || g->strings.n == 0) return -1;
    if (tdx_vec_reserve(&s->strs, g->strings.n) || tdx_vec_reserve(&s->stack_node, g->stacks.n + 1))
        return s->oom = 1, -1;
    s->strs.n = g->strings.n; /* ids below nident are read through ident (tdx_vgstore_str) */
    s->nident = (uint32_t)g->strings.n;
    s->ident = g;
    s->stack_node.n = 0;
    s->stack_node.v[s->stack_node.n++] = 0;
    for (uint32_t k = 1; k < g->stacks.n; k++) {
        uint32_t node = stack_path(s, NULL, g, k);
        if (s->oom) return -1;
        s->stack_node.v[s->stack_node.n++] = node;
    }
    return 0;
}

/* Layout: "TDXVS4", uvarint identity strings, own strings, nodes, identity stacks; the own
 * strings (uvarint length + bytes); per identity stack (from 1) its u32 node. The nodes' part:
 * per node (from 1) TDX_VGNODE_REC bytes, fixed little-endian, read where they are. */

int tdx_vgstore_save(const tdx_vgstore *s, tdx_buf *out, tdx_buf *nodes) {
    size_t nn = tdx_vgstore_nnodes(s);
    int rc = tdx_buf_append(out, "TDXVS4", 6) || tdx_buf_uvarint(out, s->nident) ||
             tdx_buf_uvarint(out, s->strs.n - (s->nident ? s->nident : 1)) ||
             tdx_buf_uvarint(out, nn) || tdx_buf_uvarint(out, s->stack_node.n);
    for (size_t i = s->nident ? s->nident : 1; i < s->strs.n && !rc; i++)
        rc = tdx_ser_bytes(out, s->strs.v[i].p, s->strs.v[i].n);
    if (rc || tdx_vec_reserve(out, out->n + s->stack_node.n * 4) ||
        tdx_vec_reserve(nodes, nodes->n + nn * TDX_VGNODE_REC))
        return -1;
    for (size_t k = 1; k < s->stack_node.n; k++) {
        tdx_le32(out->v + out->n, s->stack_node.v[k]);
        out->n += 4;
    }
    for (size_t k = 1; k < nn; k++) {
        tdx_vgnode nd = tdx_vgstore_node(s, (uint32_t)k);
        uint8_t *r = nodes->v + nodes->n;
        tdx_le64(r, nd.pc);
        tdx_le64(r + 8, nd.line);
        tdx_le32(r + 16, nd.parent);
        tdx_le32(r + 20, nd.func);
        nodes->n += TDX_VGNODE_REC;
    }
    return 0;
}

/* Frees what a failed load built: memory when s->oom, else damage. */
static int load_failed(tdx_vgstore *s, tdx_err *err) {
    int oom = s->oom;
    tdx_vgstore_free(s);
    return tdx_errf(err, oom ? TDX_ENOMEM : TDX_EINDEX, TDX_NO_OFFSET,
                    oom ? "out of memory" : "damaged string/stack store");
}

int tdx_vgstore_load(tdx_vgstore *s, const uint8_t *p, size_t n, const tdx_gen *ident,
                     tdx_err *err) {
    if (tdx_vgstore_init(s)) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    tdx_deser d = {p, p + n, 0};
    if (n < 6 || memcmp(p, "TDXVS4", 6) != 0) d.bad = 1;
    d.p += n < 6 ? n : 6;
    uint64_t nid = tdx_deser_u(&d), nown = tdx_deser_u(&d), nnodes = tdx_deser_u(&d);
    uint64_t nstk = tdx_deser_u(&d);
    if (nid && (!ident || ident->strings.n != nid || ident->stacks.n != nstk)) d.bad = 1;
    if (nown > n || nnodes == 0 || nnodes >= UINT32_MAX || nstk > n / 4 + 1) d.bad = 1;
    if (!d.bad && nid) {
        if (tdx_vec_reserve(&s->strs, nid)) {
            s->oom = 1;
            return load_failed(s, err);
        }
        /* identity strings are read through ident (unpacked on demand), never from strs */
        s->strs.n = nid;
        s->nident = (uint32_t)nid;
        s->ident = ident;
    }
    uint64_t base = s->strs.n;
    for (uint64_t i = 0; i < nown && !d.bad; i++) {
        size_t len;
        const uint8_t *q = tdx_deser_bytes(&d, &len);
        /* own strings are distinct and non-empty: interning them again gives the same ids */
        if (!d.bad && (len == 0 || tdx_vgstore_intern(s, q, len) != base + i)) d.bad = 1;
    }
    if (!d.bad && (size_t)(d.end - d.p) != (size_t)(nstk ? nstk - 1 : 0) * 4) d.bad = 1;
    if (!d.bad && !s->oom && tdx_vec_reserve(&s->stack_node, nstk + 1)) s->oom = 1;
    if (d.bad || s->oom) return load_failed(s, err); /* before the stack table is written */
    /* The node hash is rebuilt only if something adds nodes (queries look stacks up by id). */
    free(s->node_slots);
    s->node_slots = NULL;
    s->node_mask = 0;
    s->nnodes_recs = (size_t)nnodes;
    s->nodes_absent = true;
    s->stack_node.v[s->stack_node.n++] = 0;
    for (uint64_t k = 1; k < nstk && !d.bad; k++, d.p += 4) {
        uint32_t node = tdx_rd32(d.p);
        if (node >= nnodes) d.bad = 1;
        s->stack_node.v[s->stack_node.n++] = node;
    }
    return d.bad || s->oom ? load_failed(s, err) : 0;
}

int tdx_vgstore_load_nodes(tdx_vgstore *s, const uint8_t *p, size_t n, tdx_err *err) {
    if (!s->nodes_absent) return 0;
    size_t nn = s->nnodes_recs;
    bool bad = n / TDX_VGNODE_REC != nn - 1 || n % TDX_VGNODE_REC;
    /* The records stay where they are (the index's mapping outlives the store), checked once:
     * a parent comes before its child, a function is a string. */
    for (size_t k = 1; k < nn && !bad; k++, p += TDX_VGNODE_REC)
        if (tdx_rd32(p + 16) >= k || tdx_rd32(p + 20) >= s->strs.n) bad = true;
    if (bad)
        return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET, "damaged stack nodes of the viewer store");
    s->node_recs = p - (nn - 1) * TDX_VGNODE_REC;
    s->nodes_absent = false;
    return 0;
}

void tdx_vgstore_defer_nodes(tdx_vgstore *s, const uint8_t *p, size_t n, uint64_t hash) {
    s->deferred = p;
    s->deferred_len = n;
    s->deferred_hash = hash;
}

int tdx_vgstore_need_nodes(tdx_vgstore *s) {
    if (!s->nodes_absent) return 0;
    tdx_err err;
    if (s->nodes_bad || !s->deferred ||
        (s->deferred_hash && !tdx_checksum_ok(s->deferred, s->deferred_len, s->deferred_hash)) ||
        tdx_vgstore_load_nodes(s, s->deferred, s->deferred_len, &err)) {
        s->nodes_bad = s->deferred != NULL;
        return -1;
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
static uint64_t *cache_slot(void *vec, uint32_t i) {
    TDX_VEC(uint64_t) *v = vec;
    if (i >= v->n) {
        if (tdx_vec_reserve(v, (size_t)i + 1)) return NULL;
        memset(v->v + v->n, 0, ((size_t)i + 1 - v->n) * sizeof *v->v);
        v->n = (size_t)i + 1;
    }
    return &v->v[i];
}

uint32_t tdx_vgstore_gen_string(tdx_vgstore *s, tdx_vgcache *c, const tdx_gen *g, uint32_t str) {
    if (!g || str == 0 || str >= g->strings.n) return 0;
    if (g == s->ident) return str;
    uint64_t *slot = c ? cache_slot(&c->strings, str) : NULL;
    if (slot && (uint32_t)(*slot >> 32) == c->epoch) return (uint32_t)*slot;
    tdx_str t = tdx_gen_str(g, str);
    uint32_t id = tdx_vgstore_intern(s, t.p, t.n);
    if (slot && !s->oom) *slot = ((uint64_t)c->epoch << 32) | id;
    if (c && !slot) s->oom = 1;
    return id;
}

uint32_t tdx_vgstore_gen_stack(tdx_vgstore *s, tdx_vgcache *c, const tdx_gen *g, uint32_t stack) {
    if (!g || stack == 0 || stack >= g->stacks.n) return 0;
    if (g == s->ident) return stack < s->stack_node.n ? s->stack_node.v[stack] : 0;
    uint64_t *slot = cache_slot(&c->stacks, stack);
    if (slot && (uint32_t)(*slot >> 32) == c->epoch) return (uint32_t)*slot;
    uint32_t node = stack_path(s, c, g, stack);
    if (s->oom) return 0;
    /* The string lookups above may have grown c->strings but never c->stacks. */
    slot = cache_slot(&c->stacks, stack);
    if (slot)
        *slot = ((uint64_t)c->epoch << 32) | node;
    else
        s->oom = 1;
    return node;
}

/* ---- frame names ---- */

void tdx_fnames_w_init(tdx_fnames_w *w) {
    memset(w, 0, sizeof *w);
}

void tdx_fnames_w_free(tdx_fnames_w *w) {
    tdx_hmap_free(&w->first);
    tdx_vec_free(&w->recs);
    tdx_vec_free(&w->text);
}

int tdx_fnames_w_add(tdx_fnames_w *w, const tdx_vgstore *s, uint32_t func, uint64_t line) {
    tdx_str f = tdx_vgstore_str(s, func);
    uint64_t off = w->text.n;
    if (tdx_json_quote_frame(&w->text, f.p, f.n, line) ||
        tdx_vec_reserve(&w->recs, w->recs.n + TDX_FNAME_REC))
        return w->oom = 1, -1;
    uint8_t *r = w->recs.v + w->recs.n;
    tdx_le64(r, line);
    tdx_le64(r + 8, off);
    tdx_le32(r + 16, func);
    tdx_le32(r + 20, (uint32_t)(w->text.n - off));
    w->recs.n += TDX_FNAME_REC;
    w->n++;
    if (line <= UINT32_MAX) {
        int inserted;
        uint32_t *v =
            tdx_hmap_upsert(&w->first, (uint64_t)func | line << 32, (uint32_t)w->n, &inserted);
        if (!v) return w->oom = 1, -1;
    }
    return 0;
}

uint32_t tdx_fnames_w_find(const tdx_fnames_w *w, uint32_t func, uint64_t line) {
    if (line <= UINT32_MAX) {
        uint32_t v = tdx_hmap_get(&w->first, (uint64_t)func | line << 32);
        return v == TDX_HMAP_EMPTY ? 0 : v;
    }
    for (uint64_t k = 0; k < w->n; k++) { /* lines past 2^32: not worth a map */
        const uint8_t *r = w->recs.v + k * TDX_FNAME_REC;
        if (tdx_rd64(r) == line && tdx_rd32(r + 16) == func) return (uint32_t)(k + 1);
    }
    return 0;
}

int tdx_fnames_w_finish(const tdx_fnames_w *w, tdx_buf *out) {
    uint8_t x[8];
    tdx_le64(x, w->n);
    return w->oom || tdx_buf_append(out, x, 8) || tdx_buf_append(out, w->recs.v, w->recs.n) ||
                   tdx_buf_append(out, w->text.v, w->text.n)
               ? -1
               : 0;
}

int tdx_fnames_load(tdx_fnames *f, const uint8_t *p, size_t n, tdx_err *err) {
    memset(f, 0, sizeof *f);
    uint64_t k = n >= 8 ? tdx_rd64(p) : 0;
    if (n < 8 || k >= UINT32_MAX || k > (n - 8) / TDX_FNAME_REC)
        return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET, "damaged frame names in the index");
    f->n = k;
    f->recs = p + 8;
    f->text = p + 8 + k * TDX_FNAME_REC;
    f->textlen = n - 8 - k * TDX_FNAME_REC;
    return 0;
}

int tdx_fnames_check(const tdx_fnames *f, const tdx_vgstore *s, const tdx_gen *tabs,
                     uint64_t *bad) {
    *bad = 0;
    if (f->n != tabs->frames.n) return -1;
    tdx_buf want = {0};
    uint64_t at = 0;
    int rc = 0;
    for (uint64_t k = 1; k <= f->n && !rc; k++) {
        const uint8_t *r = f->recs + (k - 1) * TDX_FNAME_REC;
        const tdx_frame *fr = &tabs->frames.v[k - 1];
        uint64_t off = tdx_rd64(r + 8), len = tdx_rd32(r + 20);
        want.n = 0;
        if (tdx_rd32(r + 16) != fr->func || tdx_rd64(r) != fr->line || off != at ||
            len > f->textlen - at || fr->func >= tdx_vgstore_nstrings(s)) {
            rc = -1;
        } else {
            tdx_str fn = tdx_vgstore_str(s, fr->func);
            if (tdx_json_quote_frame(&want, fn.p, fn.n, fr->line))
                rc = -2;
            else if (want.n != len || memcmp(want.v, f->text + off, (size_t)len) != 0)
                rc = -1;
        }
        if (rc == -1) *bad = k;
        at += len;
    }
    if (!rc && at != f->textlen) rc = -1, *bad = f->n;
    tdx_vec_free(&want);
    return rc;
}

/* Name k's record, or NULL when k is no name or its text lies outside the section. */
static const uint8_t *fname(const tdx_fnames *f, uint32_t k) {
    if (k == 0 || k > f->n) return NULL;
    const uint8_t *r = f->recs + (size_t)(k - 1) * TDX_FNAME_REC;
    uint64_t off = tdx_rd64(r + 8), len = tdx_rd32(r + 20);
    return off <= f->textlen && len <= f->textlen - off ? r : NULL;
}

/* ---- the default frame tree ---- */

void tdx_vgtree_init(tdx_vgtree *t, tdx_vgstore *store) {
    memset(t, 0, sizeof *t);
    t->store = store;
}

void tdx_vgtree_free(tdx_vgtree *t) {
    tdx_vec_free(&t->id_of);
    tdx_vec_free(&t->node_of);
}

/* Copies a saved tree into id_of/node_of (before it changes). Every frame id must belong to
 * exactly one node. 0, or -1 (oom or bad set). */
static int materialize(tdx_vgtree *t) {
    if (tdx_vgstore_need_nodes(t->store)) {
        t->bad = 1;
        return -1;
    }
    uint32_t n = t->saved_n;
    size_t nn = tdx_vgstore_nnodes(t->store), want = nn + nn / 2 + 1;
    t->node_of.n = 0;
    t->id_of.n = 0;
    if (tdx_vec_reserve(&t->node_of, (size_t)n + 1) || tdx_vec_reserve(&t->id_of, want)) {
        t->oom = 1;
        return -1;
    }
    memset(t->node_of.v, 0, ((size_t)n + 1) * sizeof *t->node_of.v);
    memset(t->id_of.v, 0, want * sizeof *t->id_of.v);
    t->node_of.n = (size_t)n + 1;
    t->id_of.n = want;
    size_t seen = 0;
    for (size_t node = 1; node < t->saved_nodes; node++) {
        uint32_t id = tdx_rd32(t->saved_ids + 4 * node);
        if (id == 0) continue;
        if (id > n || t->node_of.v[id]) {
            t->bad = 1;
            return -1;
        }
        t->node_of.v[id] = (uint32_t)node;
        t->id_of.v[node] = id;
        seen++;
    }
    if (seen != n) {
        t->bad = 1;
        return -1;
    }
    t->saved_recs = NULL;
    t->saved_ids = NULL;
    return 0;
}

uint32_t tdx_vgtree_stack(tdx_vgtree *t, uint32_t key) {
    if (key == 0) return 0;
    if (t->saved_recs) {
        if (key < t->saved_nodes) {
            uint32_t id = tdx_rd32(t->saved_ids + 4 * (size_t)key);
            if (id && id <= t->saved_n) return id;
        }
        if (materialize(t)) return 0;
    }
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
    for (uint32_t k = key; k && !t->id_of.v[k]; k = tdx_vgstore_node(t->store, k).parent) {
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

/* Saved frame id's record (NULL for no such id) with its parent in *parent; Go numbers a frame
 * after its caller, so a parent id at or above the frame's is damage (and would let a walk up
 * the callers loop): NULL too. */
static const uint8_t *saved_rec(const tdx_vgtree *t, uint32_t id, uint32_t *parent) {
    if (id == 0 || id > t->saved_n) return NULL;
    const uint8_t *r = t->saved_recs + (size_t)(id - 1) * TDX_VGFRAME_REC;
    *parent = tdx_rd32(r);
    return *parent < id ? r : NULL;
}

int tdx_vgtree_frame(const tdx_vgtree *t, uint32_t id, tdx_str *func, uint64_t *line,
                     uint32_t *parent) {
    if (t->saved_recs) {
        const uint8_t *r = saved_rec(t, id, parent);
        if (!r) return -1;
        if (func || line) { /* (walks up the callers need the parent only) */
            const uint8_t *nm = fname(&t->names, tdx_rd32(r + 4));
            if (!nm || tdx_rd32(nm + 16) >= tdx_vgstore_nstrings(t->store)) return -1;
            if (func) *func = tdx_vgstore_str(t->store, tdx_rd32(nm + 16));
            if (line) *line = tdx_rd64(nm);
        }
        return 0;
    }
    if (id == 0 || id >= t->node_of.n) return -1;
    tdx_vgnode nd = tdx_vgstore_node(t->store, t->node_of.v[id]);
    if (func) *func = tdx_vgstore_str(t->store, nd.func);
    if (line) *line = nd.line;
    *parent = nd.parent ? t->id_of.v[nd.parent] : 0;
    return 0;
}

static int tree_name(void *self, uint32_t id, tdx_str *json, uint32_t *parent) {
    const tdx_vgtree *t = self;
    const uint8_t *r = t->saved_recs ? saved_rec(t, id, parent) : NULL;
    const uint8_t *nm = r ? fname(&t->names, tdx_rd32(r + 4)) : NULL;
    if (!nm) return -1;
    *json = (tdx_str){t->names.text + tdx_rd64(nm + 8), tdx_rd32(nm + 20)};
    return 0;
}

static uint32_t tree_stack(void *self, uint32_t key) {
    return tdx_vgtree_stack(self, key);
}
static int tree_frame(void *self, uint32_t id, tdx_str *func, uint64_t *line, uint32_t *parent) {
    return tdx_vgtree_frame(self, id, func, line, parent);
}

static void prefetch_str(const tdx_vgstore *s, uint32_t func) {
    if (func < s->nident) {
        if (func < s->ident->strings.n) __builtin_prefetch(&s->ident->strings.v[func]);
    } else if (func < s->strs.n) {
        __builtin_prefetch(&s->strs.v[func]);
    }
}

/* Stage 0: the frame's record; stage 1 (the record is in cache by then): what it points to (a
 * saved tree: its name's record; a built tree: the parent's frame id and the function name's
 * string slot). */
static void tree_prefetch(void *self, uint32_t id, int stage) {
    const tdx_vgtree *t = self;
    const tdx_vgstore *s = t->store;
    if (t->saved_recs) {
        if (id == 0 || id > t->saved_n) return;
        const uint8_t *r = t->saved_recs + (size_t)(id - 1) * TDX_VGFRAME_REC;
        if (stage == 0) {
            __builtin_prefetch(r);
            return;
        }
        uint32_t k = tdx_rd32(r + 4);
        if (k && k <= t->names.n)
            __builtin_prefetch(t->names.recs + (size_t)(k - 1) * TDX_FNAME_REC);
        return;
    }
    if (id == 0 || id >= t->node_of.n || !s->node_recs) return;
    uint32_t node = t->node_of.v[id];
    if (node == 0 || node >= s->nnodes_recs) return;
    if (stage == 0) {
        __builtin_prefetch(s->node_recs + (size_t)(node - 1) * TDX_VGNODE_REC);
        return;
    }
    tdx_vgnode nd = tdx_vgstore_node(s, node);
    if (nd.parent < t->id_of.n) __builtin_prefetch(&t->id_of.v[nd.parent]);
    prefetch_str(s, nd.func);
}

tdx_vgframes tdx_vgtree_frames(tdx_vgtree *t) {
    return (tdx_vgframes){t, tree_stack, tree_frame, tree_prefetch, tree_name};
}

/* The frame id of store node `node` (0: none). */
static uint32_t id_of_node(const tdx_vgtree *t, size_t node) {
    if (t->saved_recs) return node < t->saved_nodes ? tdx_rd32(t->saved_ids + 4 * node) : 0;
    return node < t->id_of.n ? t->id_of.v[node] : 0;
}

int tdx_vgtree_save(const tdx_vgtree *t, const tdx_fnames_w *names, tdx_buf *out) {
    uint32_t n = tdx_vgtree_nframes(t);
    size_t nn = tdx_vgstore_nnodes(t->store);
    if (tdx_vec_reserve(out, out->n + 16 + 4 * nn + (size_t)TDX_VGFRAME_REC * n)) return -1;
    uint8_t *o = out->v + out->n;
    tdx_le64(o, n);
    tdx_le64(o + 8, nn);
    o += 16;
    for (size_t k = 0; k < nn; k++, o += 4) tdx_le32(o, id_of_node(t, k));
    for (uint32_t id = 1; id <= n; id++, o += TDX_VGFRAME_REC) {
        uint32_t parent, name;
        if (t->saved_recs) {
            const uint8_t *r = t->saved_recs + (size_t)(id - 1) * TDX_VGFRAME_REC;
            parent = tdx_rd32(r);
            name = tdx_rd32(r + 4);
        } else {
            tdx_vgnode nd = tdx_vgstore_node(t->store, t->node_of.v[id]);
            parent = nd.parent ? t->id_of.v[nd.parent] : 0;
            name = tdx_fnames_w_find(names, nd.func, nd.line);
            if (!name) return -2;
        }
        tdx_le32(o, parent);
        tdx_le32(o + 4, name);
    }
    out->n = (size_t)(o - out->v);
    return 0;
}

int tdx_vgtree_load(tdx_vgtree *t, const uint8_t *p, size_t n, const tdx_fnames *names,
                    tdx_err *err) {
    size_t nn = tdx_vgstore_nnodes(t->store);
    if (n < 16) goto bad;
    uint64_t count = tdx_rd64(p), nodes = tdx_rd64(p + 8);
    /* The store may have grown after the tree was saved, never shrunk. */
    if (nodes == 0 || nodes > nn || count >= nodes || count > UINT32_MAX || (n - 16) / 4 < nodes ||
        (n - 16 - 4 * nodes) / TDX_VGFRAME_REC != count || (n - 16 - 4 * nodes) % TDX_VGFRAME_REC)
        goto bad;
    t->node_of.n = 0;
    t->id_of.n = 0;
    t->saved_ids = p + 16;
    t->saved_recs = p + 16 + 4 * nodes;
    t->saved_n = (uint32_t)count;
    t->saved_nodes = (size_t)nodes;
    t->names = *names;
    return 0;
bad:
    return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET, "damaged viewer frame tree in the index");
}

int tdx_vgtree_check(const tdx_vgtree *t) {
    if (!t->saved_recs) return 0;
    uint32_t n = t->saved_n;
    if (t->saved_nodes > tdx_vgstore_nnodes(t->store)) return -1;
    uint32_t *node_of = calloc((size_t)n + 1, sizeof *node_of);
    if (!node_of) return -2;
    size_t seen = 0;
    int rc = 0;
    for (size_t node = 1; node < t->saved_nodes && !rc; node++) {
        uint32_t id = tdx_rd32(t->saved_ids + 4 * node);
        if (id == 0) continue;
        if (id > n || node_of[id])
            rc = -1;
        else
            node_of[id] = (uint32_t)node, seen++;
    }
    if (seen != n || tdx_rd32(t->saved_ids) != 0) rc = -1;
    for (uint32_t id = 1; id <= n && !rc; id++) {
        uint32_t parent;
        const uint8_t *r = saved_rec(t, id, &parent);
        const uint8_t *nm = r ? fname(&t->names, tdx_rd32(r + 4)) : NULL;
        tdx_vgnode nd = tdx_vgstore_node(t->store, node_of[id]);
        uint32_t want =
            nd.parent < t->saved_nodes ? tdx_rd32(t->saved_ids + 4 * (size_t)nd.parent) : 0;
        if (!nm || tdx_rd32(nm + 16) != nd.func || tdx_rd64(nm) != nd.line || parent != want ||
            (nd.parent && !want))
            rc = -1;
    }
    free(node_of);
    return rc;
}

void tdx_vgtree_truncate(tdx_vgtree *t, uint32_t n) {
    if (tdx_vgtree_nframes(t) <= n) return;
    if (t->saved_recs && materialize(t)) return;
    while (tdx_vgtree_nframes(t) > n) {
        uint32_t node = t->node_of.v[--t->node_of.n];
        if (node < t->id_of.n) t->id_of.v[node] = 0;
    }
}
