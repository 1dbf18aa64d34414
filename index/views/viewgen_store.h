/* viewgen_store.h: content-addressed strings and stacks with stable ids (shared by the viewer
 * generator, the summary and the index), and the viewer's stack-frame prefix tree (frame ids). */
#ifndef TDX_VIEWGEN_STORE_H
#define TDX_VIEWGEN_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "core/gen.h"
#include "core/hmap.h"
#include "core/mem.h"
#include "index/format/format.h"

/* ---- the store ----
 *
 * Strings: id 0 is the empty string. A store may take a trace's global tables as its identity
 * (tdx_vgstore_set_ident): their string and stack ids are then the store's without any lookup,
 * and the store's own strings follow them; otherwise equal contents share one id.
 * Stacks: a prefix tree of frames keyed, like Go's viewer tree, by PC under the parent node,
 * starting from the outermost frame. A stack's key is the node of its leaf frame; key 0 is the
 * empty stack. A node records the function (string id) and line of the first stack that created
 * it (real traces map a PC to one function and line).
 *
 * Everything is append-only and depends only on the order of insertions, so ids are stable for a
 * given event sequence and a store can be saved and reloaded (e.g. by the index) and then extended.
 * Allocation failures are sticky: the call returns 0 and `oom` is set. */

typedef struct tdx_vgnode {
    uint64_t pc;
    uint64_t line;
    uint32_t parent; /* node of the caller frame (0 for outermost frames) */
    uint32_t func;   /* string id of the function name */
} tdx_vgnode;

typedef struct tdx_vgstore {
    /* strings by id: 0 is "", then the identity tables' strings (if any), then the store's own */
    TDX_VEC(tdx_str) strs;
    uint32_t nident;
    const tdx_gen *ident; /* tables whose string and stack ids the store maps directly */
    tdx_arena arena;      /* own strings' bytes (never move) */
    uint32_t *str_slots;  /* open addressing over own strings: id + 1, 0 = free */
    size_t str_mask;
    TDX_VEC(tdx_vgnode) nodes; /* node 0 is the root (the empty stack) */
    /* A loaded store reads nodes 1.. in place, from the index's records (TDX_VGNODE_REC bytes
     * each), until something adds a node; nodes then holds only the root. Until its records
     * are given (tdx_vgstore_load_nodes) it knows only their count: nodes_absent. */
    const uint8_t *node_recs;
    size_t nnodes_recs;
    bool nodes_absent;
    const uint8_t *deferred; /* where the absent records are, unchecked (tdx_vgstore_defer_nodes) */
    size_t deferred_len;
    uint64_t deferred_hash;
    bool nodes_bad;       /* the deferred records failed their check */
    uint32_t *node_slots; /* open addressing: node index, 0 = free */
    size_t node_mask;
    TDX_VEC(uint32_t) stack_node; /* identity tables' stack id -> node */
    int oom;
    /* Frozen: lookups only, safe from several threads at once; a string or frame missing from
     * the store returns 0 and is counted (a caller bug: preload everything first). */
    bool frozen;
    _Atomic uint64_t misses;
} tdx_vgstore;

int tdx_vgstore_init(tdx_vgstore *s);
void tdx_vgstore_free(tdx_vgstore *s);

/* Makes the string and stack ids of g (a trace's global tables, unique by content) the store's
 * own: its strings become ids 1 .. n-1 and gen_string/gen_stack on g need no lookup. Only on a
 * fresh store. 0 or -1. */
int tdx_vgstore_set_ident(tdx_vgstore *s, const tdx_gen *g);

/* Id of the string p[0..n) among the store's own strings (inserted when new; a separate
 * namespace from the identity strings). */
uint32_t tdx_vgstore_intern(tdx_vgstore *s, const void *p, size_t n);
static inline tdx_str tdx_vgstore_str(const tdx_vgstore *s, uint32_t id) {
    return id < s->nident ? tdx_gen_str(s->ident, id) : s->strs.v[id];
}
static inline size_t tdx_vgstore_nstrings(const tdx_vgstore *s) {
    return s->strs.n;
}

/* The child of node `parent` for pc (created with func and line when new). */
uint32_t tdx_vgstore_child(tdx_vgstore *s, uint32_t parent, uint64_t pc, uint32_t func,
                           uint64_t line);
/* A saved node: u64 pc, u64 line, u32 parent, u32 func (little-endian). */
enum { TDX_VGNODE_REC = 24 };
static inline tdx_vgnode tdx_vgstore_node(const tdx_vgstore *s, uint32_t node) {
    if (!s->node_recs || node == 0) return s->nodes.v[node];
    const uint8_t *r = s->node_recs + (size_t)(node - 1) * TDX_VGNODE_REC;
    return (tdx_vgnode){tdx_rd64(r), tdx_rd64(r + 8), tdx_rd32(r + 16), tdx_rd32(r + 20)};
}
static inline size_t tdx_vgstore_nnodes(const tdx_vgstore *s) {
    return s->node_recs || s->nodes_absent ? s->nnodes_recs : s->nodes.n;
}

/* Makes the store read-only (see `frozen`). */
void tdx_vgstore_freeze(tdx_vgstore *s);

/* Serialization (deterministic bytes; identity strings are not written) in two parts: the
 * strings and stack keys into out, the stack nodes' records into nodes. Reloading takes two
 * steps, so that a reader that needs no node (the frame ids it uses are saved with their
 * frames) skips reading them: load into an empty store (ident: the same tables the saved
 * store had, NULL if it had none), then load_nodes before anything reads or adds a node. The
 * records are read in place: their bytes must outlive the store. */
int tdx_vgstore_save(const tdx_vgstore *s, tdx_buf *out, tdx_buf *nodes);
int tdx_vgstore_load(tdx_vgstore *s, const uint8_t *p, size_t n, const tdx_gen *ident,
                     tdx_err *err);
int tdx_vgstore_load_nodes(tdx_vgstore *s, const uint8_t *p, size_t n, tdx_err *err);
/* Or: remembers where the records are and their XXH3 (0: none), and loads them only when
 * tdx_vgstore_need_nodes asks (a frame tree that must number a new frame); a failed check then
 * sets nodes_bad. need_nodes: 0 when the nodes are there, or -1. */
void tdx_vgstore_defer_nodes(tdx_vgstore *s, const uint8_t *p, size_t n, uint64_t hash);
int tdx_vgstore_need_nodes(tdx_vgstore *s);

/* ---- resolving one generation's tables ----
 *
 * A cache from the dense string/stack indexes of the current generation (tdx_gen) to store ids.
 * Its owner must call tdx_vgcache_reset whenever the generation changes (at every Sync event: each
 * generation's events start with one), since generations may reuse the same tdx_gen object. */

typedef struct tdx_vgcache {
    uint32_t epoch;
    TDX_VEC(uint64_t) stacks;  /* (epoch << 32) | key */
    TDX_VEC(uint64_t) strings; /* (epoch << 32) | id */
} tdx_vgcache;

void tdx_vgcache_init(tdx_vgcache *c);
void tdx_vgcache_free(tdx_vgcache *c);
void tdx_vgcache_reset(tdx_vgcache *c);

/* Store key of the stack with dense index `stack` of g (0 for none or when g is NULL). */
uint32_t tdx_vgstore_gen_stack(tdx_vgstore *s, tdx_vgcache *c, const tdx_gen *g, uint32_t stack);
/* Store id of the string with dense index `str` of g (0 for none or when g is NULL). */
uint32_t tdx_vgstore_gen_string(tdx_vgstore *s, tdx_vgcache *c, const tdx_gen *g, uint32_t str);

/* ---- the viewer's frame tree (Go's Emitter.Stack / frame prefix tree) ----
 *
 * The generator gets frame ids only through this interface, so the index can supply a tree whose
 * ids were assigned by an earlier full run. `stack` returns the frame id of the stack with store
 * key `key` (0 for the empty stack), creating the missing frames from the outermost one down to
 * the leaf with consecutive ids (the first id is 1), exactly like Go's buildBranch. `frame`
 * describes an existing frame id (name "<func>:<line>", parent id, 0 for outermost frames) and
 * returns 0, or -1 for an unknown id; func and line may be NULL (the name's string is then not
 * looked up: unpacking it may cost a chunk). */
typedef struct tdx_vgframes {
    void *self;
    uint32_t (*stack)(void *self, uint32_t key);
    int (*frame)(void *self, uint32_t id, tdx_str *func, uint64_t *line, uint32_t *parent);
    /* Optional: starts loading what frame(id) will read, in two stages (0, then 1 a few ids
     * later), so that a run of lookups overlaps its cache misses. */
    void (*prefetch)(void *self, uint32_t id, int stage);
    /* Optional: the frame's name ("<func>:<line>") as its JSON string, quotes included, and its
     * parent; -1 when the tree has no such text (then frame() describes it). */
    int (*name)(void *self, uint32_t id, tdx_str *json, uint32_t *parent);
} tdx_vgframes;

/* ---- frame names (the index's FNAMES section) ----
 *
 * The names frames print, "<func>:<line>", each once, with their JSON text ready to copy: name k
 * (from 1) is a record of TDX_FNAME_REC bytes (u64 line, u64 offset of its text, u32 function
 * as a store string id, u32 text length) after a u64 count, then the texts. The build adds one
 * per frame of the trace's FRAMES table, in that order; saved frame trees refer to them. */
enum { TDX_FNAME_REC = 24 };

typedef struct tdx_fnames_w {
    tdx_hmap first; /* func | line << 32 -> the first name with them */
    tdx_buf recs, text;
    uint64_t n;
    int oom;
} tdx_fnames_w;

void tdx_fnames_w_init(tdx_fnames_w *w);
void tdx_fnames_w_free(tdx_fnames_w *w);
/* Adds the name of function `func` (a string id of s) at `line`; 0 or -1 (out of memory). */
int tdx_fnames_w_add(tdx_fnames_w *w, const tdx_vgstore *s, uint32_t func, uint64_t line);
/* The first name added with func and line (from 1), 0 when none. Read-only: threads may share. */
uint32_t tdx_fnames_w_find(const tdx_fnames_w *w, uint32_t func, uint64_t line);
/* The section's bytes. */
int tdx_fnames_w_finish(const tdx_fnames_w *w, tdx_buf *out);

/* The section read in place (p[0..n) outlives it); entries are checked where they are read. */
typedef struct tdx_fnames {
    const uint8_t *recs, *text;
    uint64_t n, textlen;
} tdx_fnames;

int tdx_fnames_load(tdx_fnames *f, const uint8_t *p, size_t n, tdx_err *err);
/* Checks every name against what the build writes from the trace's frames (tabs, whose string
 * ids are the store's): one name per frame in its order, with its function and line, its text
 * the JSON string of "<func>:<line>", each right after the previous one and the last ending the
 * section. 0; -1 when damaged (*bad: the name, from 1; 0 for the count); -2 out of memory. */
int tdx_fnames_check(const tdx_fnames *f, const tdx_vgstore *s, const tdx_gen *tabs, uint64_t *bad);

/* The default tree: frame ids over the store's nodes (the two trees have the same shape, since
 * both are keyed by PC under the parent).
 *
 * A saved tree (tdx_vgtree_save; the index's layout, docs/index-format.md) is read in place:
 * the frame id of every store node, then per frame id its parent's id and its name (FNAMES). A
 * query looks ids and frames up there without building anything; the first change (a stack with
 * no id yet, a truncation) copies it into id_of/node_of first. Entries are checked where they
 * are read: frame() refuses a damaged record (-1); a damaged id map, found while copying, sets
 * `bad` (and stack() gives 0). */
typedef struct tdx_vgtree {
    tdx_vgstore *store;      /* changed only to read its deferred nodes (tdx_vgstore_need_nodes) */
    TDX_VEC(uint32_t) id_of; /* store node -> frame id (0 = not created yet) */
    TDX_VEC(uint32_t) node_of; /* frame id -> store node (entry 0 unused) */
    const uint8_t *saved_ids;  /* in place: u32 frame id per store node ... */
    const uint8_t *saved_recs; /* ... and TDX_VGFRAME_REC bytes per frame id 1..saved_n */
    uint32_t saved_n;
    size_t saved_nodes;
    tdx_fnames names; /* what saved records name */
    int oom;
    int bad;
} tdx_vgtree;

/* A saved frame: u32 parent frame id, u32 name (FNAMES, from 1). */
enum { TDX_VGFRAME_REC = 8 };

void tdx_vgtree_init(tdx_vgtree *t, tdx_vgstore *store);
void tdx_vgtree_free(tdx_vgtree *t);
uint32_t tdx_vgtree_stack(tdx_vgtree *t, uint32_t key);
int tdx_vgtree_frame(const tdx_vgtree *t, uint32_t id, tdx_str *func, uint64_t *line,
                     uint32_t *parent);
static inline uint32_t tdx_vgtree_nframes(const tdx_vgtree *t) {
    if (t->saved_recs) return t->saved_n;
    return t->node_of.n ? (uint32_t)(t->node_of.n - 1) : 0;
}
/* The interface over t. */
tdx_vgframes tdx_vgtree_frames(tdx_vgtree *t);

/* Serialization of the ids assigned so far (u64 frames F, u64 nodes N, N u32 frame ids, F
 * frame records; a frame's name is the first of `names` with its function and line: 0, -1
 * when out of memory, -2 when a frame has no name there); load into a tree initialized over the
 * same store, which reads p[0..n) and the names in place (they must outlive the tree). */
int tdx_vgtree_save(const tdx_vgtree *t, const tdx_fnames_w *names, tdx_buf *out);
int tdx_vgtree_load(tdx_vgtree *t, const uint8_t *p, size_t n, const tdx_fnames *names,
                    tdx_err *err);
/* Checks every entry of a saved tree (a query checks only those it reads), against the store's
 * nodes (loaded): each frame id names exactly one node, its parent is the id of the node's
 * parent and its name has the node's function and line. 0, -1 when damaged, -2 out of memory. */
int tdx_vgtree_check(const tdx_vgtree *t);
/* Forgets every frame id above n (a task query numbers its task frames after the main loop's). */
void tdx_vgtree_truncate(tdx_vgtree *t, uint32_t n);

#endif
