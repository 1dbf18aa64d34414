/* sumindex.c: the SUMMARY section (layout in docs/index-format.md).
 *
 * Seven tables, each a run of records sorted by key, cut into blocks of at most 256 records (and,
 * for keyed tables, about 16 KiB of values) with a directory entry per block: the block's first
 * key, where it is, its XXH3, and a check hash over the entry itself. A lookup binary-searches the
 * directory (checking each entry it reads), checks the one block it lands on and decodes records
 * from the block's start, so a query reads O(log n + answer) bytes and hashes only what it
 * decodes. Values inside a block are delta-coded against the previous record; nothing crosses a
 * block boundary, but a large task's TASKX comes as several records (pieces) that may.
 *
 * Three dictionaries ("shapes") hold the few distinct (entry function, PC) pairs of goroutines and
 * (type, start stack, end stack) triples of tasks and regions, in order of first use; records
 * refer to them by ordinal. The tables are written in one pass over the sorted records; the
 * numbering of shapes and the coding of blocks can run on a second thread
 * (index/format/blockcoder.h). What no query reads is not stored: the event index of each unblock
 * edge (an index is built from a valid trace, so every edge counts) and the stack of a task's first
 * log (only its time and goroutine orient a task query). */
#include "index/analysis/sumindex.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/checksum.h"
#include "core/hmap.h"
#include "core/varint.h"
#include "index/format/blockcoder.h"
#include "index/format/format.h"
#include "index/format/reader.h"
#include "index/format/rans.h"
#include "index/common/scratch.h"
#include "index/common/viewgen_ser.h"

#define SUM_MAGIC "TDXSUMB3"
#define BLOCK_RECS 256
#define BLOCK_BYTES 16384
#define GREF_MAX 15      /* region goroutines coded as an index into the task's first 15 */
#define PIECE_ITEMS 1024 /* goroutines and regions in a TASKX record (write_taskx) */

enum { T_GOROUTINES, T_EDGES, T_TASKS, T_TASKX, T_GSHAPES, T_TSHAPES, T_RSHAPES, T_COUNT };

/* Header: magic, the summary's scalar fields, one record per table, XXH3 of what precedes. */
enum { TR_NREC = 0, TR_NBLOCKS = 8, TR_DIR = 16, TR_DATA = 24, TR_DATALEN = 32, TR_SIZE = 40 };
enum {
    SH_MAGIC = 0,
    SH_FIELDS = 8,
    SH_NFIELDS = 8,
    SH_TABLES = 72,
    SH_HASH = SH_TABLES + T_COUNT * TR_SIZE,
    SH_SIZE = SH_HASH + 8
};
/* Directory entry: first key, offset in the table's data, length, check, XXH3 of the block. */
enum { DE_KEY = 0, DE_OFF = 8, DE_LEN = 16, DE_CHECK = 20, DE_HASH = 24, DE_SIZE = 32 };

/* Field contexts: every value in a block is coded (rANS, index/format/rans.h) with the table of its
 * field, so each field costs its own entropy instead of a whole varint. */
/* clang-format off */
enum {
    F_KEY,
    F_S_NAME, F_S_A, F_S_B,                                    /* shapes */
    F_G_FLAGS, F_G_SHAPE, F_G_CREATE, F_G_START, F_G_END,      /* GOROUTINES */
    F_E_COUNT, F_E_FIRST, F_E_GAP,                             /* EDGES */
    F_T_FLAGS, F_T_NCHILD, F_T_SHAPE, F_T_START, F_T_SG, F_T_END, F_T_EG, F_T_PARENT,
    F_T_CHILD,                                                 /* TASKS */
    F_X_GRAN, F_X_NLOGS, F_X_LOGT, F_X_LOGG, F_X_NG, F_X_G, F_X_NR, /* TASKX */
    F_R_FLAGS, F_R_REF, F_R_SHAPE, F_R_START, F_R_END, F_R_G, F_R_EG, /* its regions */
    F_COUNT
};
/* clang-format on */

/* TASKX may hold several records of one task (pieces of a large task's record): its key gaps are
 * key - previous key, the others' key - previous key - 1. */
static bool repeats(int t) {
    return t == T_TASKX;
}

static bool dense(int t) {
    return t >= T_GSHAPES;
}

static uint32_t entry_check(int t, uint64_t k, const uint8_t *e) {
    uint8_t x[DE_SIZE];
    memcpy(x, e, DE_SIZE);
    memset(x + DE_CHECK, 0, 4);
    return (uint32_t)XXH3_64bits_withSeed(x, DE_SIZE, (uint64_t)t << 56 ^ k);
}

/* Time deltas are stored divided by the record's granule: GRAN when every one of them is a
 * multiple of it (trace clocks usually tick in 64 ns), else 1. */
#define GRAN 64
static bool on_gran(int64_t d) {
    return d % GRAN == 0;
}
static int64_t ungran(int64_t v, int64_t gran) {
    return (int64_t)((uint64_t)v * (uint64_t)gran);
}

typedef struct shape {
    uint32_t name, a; /* a: start stack (tasks, regions) */
    uint64_t b;       /* end stack (tasks, regions) or PC (goroutines) */
} shape;

/* ==== writer ==== */

/* A table being written. The producer (the pass over the records) owns the record counts and
 * decides where blocks end; the coder (index/format/blockcoder.h, on a thread of its own with -j >=
 * 2) codes each closed block into `data`, and `sink` adds its directory entry there. */
typedef struct tabw {
    int t;
    tdx_bcoder *bc;
    tdx_bcopen *bo; /* the table's stream */
    uint64_t nrec;
    size_t raw;   /* the open block's values' size as varints (what closes a block) */
    uint32_t nin; /* its records (0: no block open) */
    uint64_t key, prev;
    /* the coder's side, read by the producer only after tdx_bcoder_end */
    tdx_buf dir, data;
    uint64_t nblocks;
    uint64_t base;    /* data bytes already moved to the scratch file */
    tdx_scratch file; /* opened when the table outgrows FLUSH_AT (never without `beside`) */
    const char *beside;
} tabw;

#define FLUSH_AT (1u << 20)

/* What the sink and the shapes' map return when they fail (the coder keeps the first): memory
 * exhausted, a block too large to frame, an error reported in the coder's tdx_err. */
enum { TW_NOMEM = -1, TW_TOOBIG = -2, TW_REPORTED = -3 };

/* The coder's sink: the block just coded into data[start..] gets its directory entry; full data
 * moves to the scratch file. */
static int tw_sink(void *ctx, int t, uint64_t key, size_t start, tdx_err *err) {
    tabw *w = &((tabw *)ctx)[t];
    size_t len = w->data.n - start;
    if (len > UINT32_MAX) return TW_TOOBIG;
    uint8_t e[DE_SIZE];
    tdx_le64(e + DE_KEY, key);
    tdx_le64(e + DE_OFF, w->base + start);
    tdx_le32(e + DE_LEN, (uint32_t)len);
    tdx_le64(e + DE_HASH, XXH3_64bits(w->data.v + start, len));
    tdx_le32(e + DE_CHECK, entry_check(w->t, w->nblocks, e));
    if (tdx_buf_append(&w->dir, e, DE_SIZE)) return TW_NOMEM;
    w->nblocks++;
    if (!w->beside || w->data.n < FLUSH_AT) return 0;
    if ((w->file.fd < 0 && tdx_scratch_open(&w->file, w->beside, err)) ||
        tdx_scratch_put(&w->file, w->data.v, w->data.n, err))
        return TW_REPORTED;
    w->base += w->data.n;
    w->data.n = 0;
    return 0;
}

static void tw_close(tabw *w) {
    if (!w->nin) return;
    tdx_bcoder_close(w->bc, w->bo, w->key, w->nin);
    w->nin = 0;
}

static void tw_u(tabw *w, int f, uint64_t v) {
    tdx_bcoder_put(w->bc, w->bo, (uint32_t)f, v);
    w->raw += (size_t)tdx_uvarint_len(v);
}
static void tw_i(tabw *w, int f, int64_t v) {
    tw_u(w, f, tdx_zigzag(v));
}

/* Starts a record with key `key` (ascending); returns true when it opens a block (delta chains
 * restart there). */
static bool tw_record(tabw *w, uint64_t key) {
    if (w->nin == BLOCK_RECS || (w->nin && !dense(w->t) && w->raw >= BLOCK_BYTES)) tw_close(w);
    bool fresh = w->nin == 0;
    if (fresh) {
        w->key = key;
        w->raw = 0;
    } else if (!dense(w->t)) {
        tw_u(w, F_KEY, key - w->prev - !repeats(w->t));
    }
    w->prev = key;
    w->nin++;
    w->nrec++;
    return fresh;
}

/* ---- shape dictionaries ---- */

/* A shape's ordinal is its order of first use in the tables (goroutines by id, tasks by id, then
 * each task's regions): one lookup per record, as the records are written. Ranking them most
 * frequent first cost a pass of its own over every task and saved almost nothing (tracegen
 * traces: 25 KB of a 17.6 MB section at 256 MiB; at 64 MiB the ranked section was 6 KB larger). */
typedef struct sslot {
    shape s;
    uint32_t id1; /* ordinal + 1 (0: free) */
} sslot;

typedef struct shapeset {
    TDX_VEC(shape) v; /* by ordinal */
    sslot *slots;
    size_t mask;
} shapeset;

static size_t shape_hash(shape s) {
    return (size_t)tdx_hash64(s.b ^ tdx_hash64((uint64_t)s.name << 32 | s.a));
}

static void shapes_free(shapeset *d) {
    tdx_vec_free(&d->v);
    free(d->slots);
}

static int shapes_grow(shapeset *d) {
    size_t cap = d->mask ? (d->mask + 1) * 2 : 256;
    sslot *s = calloc(cap, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; d->slots && i <= d->mask; i++) {
        if (!d->slots[i].id1) continue;
        size_t j = shape_hash(d->slots[i].s) & (cap - 1);
        while (s[j].id1) j = (j + 1) & (cap - 1);
        s[j] = d->slots[i];
    }
    free(d->slots);
    d->slots = s;
    d->mask = cap - 1;
    return 0;
}

/* The ordinal of s, a new one when it is first seen; UINT32_MAX on memory exhaustion. */
static uint32_t shapes_add(shapeset *d, shape s) {
    if ((d->v.n + 1) * 2 > (d->mask ? d->mask + 1 : 0) && shapes_grow(d)) return UINT32_MAX;
    size_t j = shape_hash(s) & d->mask;
    for (; d->slots[j].id1; j = (j + 1) & d->mask) {
        const shape *o = &d->slots[j].s;
        if (o->name == s.name && o->a == s.a && o->b == s.b) return d->slots[j].id1 - 1;
    }
    if (d->v.n >= UINT32_MAX - 1 || tdx_vec_push(&d->v, s)) return UINT32_MAX;
    d->slots[j] = (sslot){s, (uint32_t)d->v.n};
    return (uint32_t)(d->v.n - 1);
}

/* The dictionary, by ordinal (after the tables that use it). */
static void shapes_write(const shapeset *d, tabw *w) {
    for (size_t i = 0; i < d->v.n; i++) {
        const shape *s = &d->v.v[i];
        tw_record(w, i);
        tw_u(w, F_S_NAME, s->name);
        tw_u(w, F_S_A, s->a);
        tw_u(w, F_S_B, s->b);
    }
}

/* ---- the tables ---- */

typedef struct sumw {
    const tdx_summary *s; /* the scalar fields */
    tdx_sumspill *sp;     /* the records */
    tabw t[T_COUNT];
    shapeset gsh, tsh, rsh; /* filled by the coder (shape_map); read after tdx_bcoder_sync */
    tdx_bcoder *bc;
    tdx_sumfold f;
    TDX_VEC(tdx_sumregion) rbuf; /* the regions of the TASKX piece being written */
    int64_t gbuf[PIECE_ITEMS];   /* and its goroutines */
    tdx_xrec at;                 /* attach records: the one looked at next */
    int athave;
    TDX_VEC(uint64_t) ops;
    tdx_err *err;
    tdx_sumindex_progress progress;
    void *progress_ctx;
    uint64_t read0, total; /* records read back before, and to read */
    uint64_t items;        /* goroutines and tasks handled, to report every PROGRESS_EVERY */
} sumw;

#define PROGRESS_EVERY 4096
static void tick(sumw *w) {
    if (w->progress && ++w->items % PROGRESS_EVERY == 0)
        w->progress(w->progress_ctx, w->sp->nread - w->read0, w->total);
}

static shape ev_shape(uint32_t name, const tdx_sumev *a, const tdx_sumev *b) {
    return (shape){name, a->stack, b->stack};
}
static shape g_shape(const tdx_sumgrec *g) {
    return (shape){g->name, 0, g->pc};
}

/* A record's shape goes to the coder as it is, and its ordinal is given there (shape_map), in
 * the order the records were written: the lookups (a cache miss each: 115,027 region shapes at
 * 1 GiB) leave the pass over the records. It counts as SHAPE_RAW bytes towards BLOCK_BYTES. */
#define SHAPE_RAW 2
static void tw_shape(tabw *w, int f, shape s) {
    tdx_bcoder_put2(w->bc, w->bo, (uint32_t)f, (uint64_t)s.name << 32 | s.a, s.b);
    w->raw += SHAPE_RAW;
}

static int shape_map(void *ctx, uint32_t f, uint64_t a, uint64_t b, uint64_t *v) {
    sumw *w = ctx;
    shapeset *d = f == F_G_SHAPE ? &w->gsh : f == F_T_SHAPE ? &w->tsh : &w->rsh;
    uint32_t o = shapes_add(d, (shape){(uint32_t)(a >> 32), (uint32_t)a, b});
    if (o == UINT32_MAX) return TW_NOMEM;
    *v = o;
    return 0;
}

/* GOROUTINES, by id: u = has start | has end << 1 | granule 64 << 2; shape; creation (delta to
 * the previous record's, or to t0), [start - creation], [end - (start or creation)]. */
static int write_goroutines(sumw *w) {
    tabw *tw = &w->t[T_GOROUTINES];
    int64_t prev = 0;
    tdx_sumgrec g;
    int k;
    while ((k = tdx_sumspill_next_g(w->sp, &g, w->err)) == 1) {
        tick(w);
        if (tw_record(tw, (uint64_t)g.id ^ TDX_XSORT_SIGN)) prev = w->s->t0;
        int64_t d[3] = {tdx_wsub(g.creation, prev), g.start ? tdx_wsub(g.start, g.creation) : 0,
                        g.end ? tdx_wsub(g.end, g.start ? g.start : g.creation) : 0};
        int64_t gran = on_gran(d[0]) && on_gran(d[1]) && on_gran(d[2]) ? GRAN : 1;
        tw_u(tw, F_G_FLAGS,
             (uint64_t)(g.start != 0) | (uint64_t)(g.end != 0) << 1 | (uint64_t)(gran > 1) << 2);
        tw_shape(tw, F_G_SHAPE, g_shape(&g));
        tw_i(tw, F_G_CREATE, d[0] / gran);
        if (g.start) tw_i(tw, F_G_START, d[1] / gran);
        if (g.end) tw_i(tw, F_G_END, d[2] / gran);
        prev = g.creation;
    }
    return k < 0 ? -3 : 0;
}

/* EDGES, by operand: operator count, then the distinct operators ascending: the first relative
 * to the operand, the others as gaps - 1. */
static int write_edges(sumw *w) {
    tabw *tw = &w->t[T_EDGES];
    tdx_xrec r;
    int k = tdx_xsort_next(w->sp->e, &r, w->err);
    while (k == 1) {
        uint64_t key = r.k1;
        w->ops.n = 0;
        for (; k == 1 && r.k1 == key; k = tdx_xsort_next(w->sp->e, &r, w->err))
            if ((!w->ops.n || w->ops.v[w->ops.n - 1] != r.k2) && tdx_vec_push(&w->ops, r.k2))
                return -1;
        tw_record(tw, key);
        tw_u(tw, F_E_COUNT, w->ops.n);
        tw_i(tw, F_E_FIRST,
             tdx_wsub((int64_t)(w->ops.v[0] ^ TDX_XSORT_SIGN), (int64_t)(key ^ TDX_XSORT_SIGN)));
        for (size_t i = 1; i < w->ops.n; i++) tw_u(tw, F_E_GAP, w->ops.v[i] - w->ops.v[i - 1] - 1);
    }
    return k < 0 ? -3 : 0;
}

/* TASKS, by id: u = start | end << 1 | parent << 2 | end g differs << 3 | granule 64 << 4;
 * children; shape; [start time and goroutine, deltas to the previous record's event], [end time
 * (to the start), end goroutine (to the start's, when it differs)], [parent id - id], children
 * ids (deltas from the id, in order). */
static void write_task(sumw *w, tabw *tw, const tdx_sumfold *t, int64_t *pt, int64_t *pg) {
    bool sp = t->start.present, ep = t->end.present, par = t->has_parent;
    bool gd = sp && ep && t->end.g != t->start.g;
    int64_t ds = sp ? tdx_wsub(t->start.time, *pt) : 0,
            de = ep ? tdx_wsub(t->end.time, sp ? t->start.time : *pt) : 0;
    int64_t gran = on_gran(ds) && on_gran(de) ? GRAN : 1;
    tw_u(tw, F_T_FLAGS,
         (uint64_t)sp | (uint64_t)ep << 1 | (uint64_t)par << 2 | (uint64_t)gd << 3 |
             (uint64_t)(gran > 1) << 4);
    tw_u(tw, F_T_NCHILD, t->children.n);
    tw_shape(tw, F_T_SHAPE, ev_shape(t->name, &t->start, &t->end));
    if (sp) {
        tw_i(tw, F_T_START, ds / gran);
        tw_i(tw, F_T_SG, tdx_wsub(t->start.g, *pg));
        *pt = t->start.time;
        *pg = t->start.g;
    }
    if (ep) {
        tw_i(tw, F_T_END, de / gran);
        if (!sp || gd) tw_i(tw, F_T_EG, tdx_wsub(t->end.g, *pg));
        if (!sp) {
            *pt = t->end.time;
            *pg = t->end.g;
        }
    }
    if (par) tw_i(tw, F_T_PARENT, tdx_wsub((int64_t)t->parent, (int64_t)t->id));
    int64_t prev = (int64_t)t->id;
    for (size_t k = 0; k < t->children.n; k++) {
        int64_t c = (int64_t)t->children.v[k];
        tw_i(tw, F_T_CHILD, tdx_wsub(c, prev));
        prev = c;
    }
}

/* TASKX, by id, only tasks with logs, goroutines or regions, in pieces of at most PIECE_ITEMS
 * goroutines and regions each (goroutines first, logs in the first): a piece is a record of its
 * own, so neither the writer nor the block coder holds a large task (the background task of a
 * long trace holds every region outside a task) and a reader's blocks stay small. A piece: granule
 * 64 (of every time delta in it, 0 or 1); nlogs, [first log time (to the task's start, else t0)
 * and goroutine (to the start's, else 0)]; goroutines (count, deltas from that goroutine);
 * regions (count; each: start | end << 1 | end g differs << 2, goroutine ref, shape, [start
 * time], [end time], [goroutine], [end goroutine - start goroutine]). Region times are deltas to
 * the previous region's (first: the task's start, else t0), an end to its own start when present;
 * the goroutine ref is 1 + its index in the task's first GREF_MAX goroutines, or 0 for a delta to
 * the previous region's. xw NULL: only whether every time delta is a multiple of gran. */
typedef struct piece {
    bool logs;
    const int64_t *g;
    size_t ng;
    const tdx_sumregion *r;
    size_t nr;
} piece;

static bool put_time(tabw *xw, int f, int64_t d, int64_t gran) {
    if (xw) tw_i(xw, f, d / gran);
    return d % gran == 0;
}

static bool write_piece(sumw *w, tabw *xw, const tdx_sumfold *t, const piece *pc, int64_t gran) {
    int64_t bt = t->start.present ? t->start.time : w->s->t0,
            bg = t->start.present ? t->start.g : 0;
    bool exact = true;
    uint64_t nlogs = pc->logs ? t->nlogs : 0;
    if (xw) tw_u(xw, F_X_GRAN, gran > 1);
    if (xw) tw_u(xw, F_X_NLOGS, nlogs);
    if (nlogs) {
        exact &= put_time(xw, F_X_LOGT, tdx_wsub(t->first_log.time, bt), gran);
        if (xw) tw_i(xw, F_X_LOGG, tdx_wsub(t->first_log.g, bg));
    }
    if (xw) tw_u(xw, F_X_NG, pc->ng);
    int64_t prev = bg;
    for (size_t k = 0; k < pc->ng && xw; k++) {
        tw_i(xw, F_X_G, tdx_wsub(pc->g[k], prev));
        prev = pc->g[k];
    }
    if (xw) tw_u(xw, F_X_NR, pc->nr);
    int64_t pt = bt, pg = bg;
    for (size_t k = 0; k < pc->nr; k++) {
        const tdx_sumregion *r = &pc->r[k];
        bool sp = r->start.present, ep = r->end.present, gd = sp && ep && r->end.g != r->start.g;
        int64_t g = sp ? r->start.g : r->end.g;
        uint64_t ref = 0;
        for (size_t j = 0; j < t->goroutines.n && j < GREF_MAX && (sp || ep); j++)
            if (t->goroutines.v[j] == g) {
                ref = j + 1;
                break;
            }
        if (xw) {
            tw_u(xw, F_R_FLAGS, (uint64_t)sp | (uint64_t)ep << 1 | (uint64_t)gd << 2);
            tw_u(xw, F_R_REF, ref);
            tw_shape(xw, F_R_SHAPE, ev_shape(r->name, &r->start, &r->end));
        }
        if (sp) exact &= put_time(xw, F_R_START, tdx_wsub(r->start.time, pt), gran);
        if (ep)
            exact &= put_time(xw, F_R_END, tdx_wsub(r->end.time, sp ? r->start.time : pt), gran);
        if ((sp || ep) && !ref && xw) tw_i(xw, F_R_G, tdx_wsub(g, pg));
        if (gd && xw) tw_i(xw, F_R_EG, tdx_wsub(r->end.g, r->start.g));
        if (sp || ep) {
            pt = sp ? r->start.time : r->end.time;
            pg = g;
        }
    }
    return exact;
}

/* Task t's TASKX pieces: its goroutines from the fold, its regions read one at a time. */
static int write_taskx(sumw *w, const tdx_sumfold *t) {
    tabw *xw = &w->t[T_TASKX];
    uint64_t gi = 0, ng = tdx_sumfold_ngoroutines(t);
    for (bool first = true;; first = false) {
        piece pc = {first && t->nlogs, w->gbuf, 0, NULL, 0};
        pc.ng = ng - gi < PIECE_ITEMS ? (size_t)(ng - gi) : PIECE_ITEMS;
        if (tdx_sumfold_goroutines(t, gi, w->gbuf, pc.ng, w->err)) return -3;
        w->rbuf.n = 0;
        while (pc.ng + w->rbuf.n < PIECE_ITEMS) {
            tdx_sumregion r;
            int k = tdx_sumspill_next_region(w->sp, t->id, &r, w->err);
            if (k < 0) return k == -2 ? -2 : -3;
            if (!k) break;
            if (tdx_vec_push(&w->rbuf, r)) return -1;
            tick(w);
        }
        pc.r = w->rbuf.v;
        pc.nr = w->rbuf.n;
        if (!pc.logs && !pc.ng && !pc.nr) return 0;
        int64_t gran = write_piece(w, NULL, t, &pc, GRAN) ? GRAN : 1;
        tw_record(xw, t->id);
        write_piece(w, xw, t, &pc, gran);
        gi += pc.ng;
        if (pc.ng + pc.nr < PIECE_ITEMS) return 0;
    }
}

/* The children attached to task id (attach records are by parent, then attaching event). */
static int take_children(sumw *w, tdx_sumfold *f) {
    for (;;) {
        if (!w->athave) {
            int k = tdx_xsort_next(w->sp->attach, &w->at, w->err);
            if (k < 0) return -3;
            w->athave = k ? 1 : 2;
        }
        if (w->athave == 2 || w->at.k1 > f->id) return 0;
        if (w->at.k1 < f->id || w->at.n != 8) return -2; /* a parent without a record */
        if (tdx_vec_push(&f->children, tdx_rd64(w->at.p))) return -1;
        w->athave = 0;
    }
}

static int write_tasks(sumw *w) {
    tabw *tw = &w->t[T_TASKS];
    if (tdx_xsort_rewind(w->sp->attach, w->err)) return -3;
    int64_t pt = 0, pg = 0;
    tdx_sumfold *t = &w->f;
    int k, rc = 0;
    while (!rc && (k = tdx_sumspill_next_task(w->sp, t, w->err)) == 1) {
        tick(w);
        if ((rc = take_children(w, t))) break;
        if (tw_record(tw, t->id)) pt = w->s->t0, pg = 0;
        write_task(w, tw, t, &pt, &pg);
        rc = write_taskx(w, t);
    }
    if (rc) return rc;
    if (k < 0) return -3;
    tdx_sumregion r; /* a region whose task has no record */
    if ((k = tdx_sumspill_next_region(w->sp, UINT64_MAX, &r, w->err))) return k == -1 ? -3 : -2;
    if (!w->athave && tdx_xsort_next(w->sp->attach, &w->at, w->err) == 1) return -2;
    return w->athave == 1 ? -2 : 0;
}

static void sumw_free(sumw *w) {
    tdx_bcoder_free(w->bc); /* first: its thread may still be writing the tables */
    for (int i = 0; i < T_COUNT; i++) {
        tdx_vec_free(&w->t[i].dir);
        tdx_vec_free(&w->t[i].data);
        tdx_scratch_close(&w->t[i].file);
    }
    shapes_free(&w->gsh);
    shapes_free(&w->tsh);
    shapes_free(&w->rsh);
    tdx_sumfold_free(&w->f);
    tdx_vec_free(&w->rbuf);
    tdx_vec_free(&w->ops);
}

static int assemble(sumw *w, tdx_sumindex_put put, void *ctx) {
    const tdx_summary *s = w->s;
    uint8_t h[SH_SIZE];
    memset(h, 0, sizeof h);
    /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): the magic has no NUL */
    memcpy(h + SH_MAGIC, SUM_MAGIC, 8);
    uint64_t f[SH_NFIELDS] = {s->nevents,
                              (uint64_t)s->t0,
                              (uint64_t)s->last_ts,
                              (uint64_t)s->sync_ts,
                              s->valid_events,
                              (uint64_t)s->valid_end,
                              (uint64_t)s->max_proc,
                              (uint64_t)s->valid_max_proc};
    for (int i = 0; i < SH_NFIELDS; i++) tdx_le64(h + SH_FIELDS + 8 * (size_t)i, f[i]);
    uint64_t off = SH_SIZE;
    for (int i = 0; i < T_COUNT; i++) {
        uint8_t *r = h + SH_TABLES + (size_t)i * TR_SIZE;
        uint64_t len = w->t[i].base + w->t[i].data.n;
        tdx_le64(r + TR_NREC, w->t[i].nrec);
        tdx_le64(r + TR_NBLOCKS, w->t[i].nblocks);
        tdx_le64(r + TR_DIR, off);
        off += w->t[i].dir.n;
        tdx_le64(r + TR_DATA, off);
        tdx_le64(r + TR_DATALEN, len);
        off += len;
    }
    tdx_le64(h + SH_HASH, XXH3_64bits(h, SH_HASH));
    if (put(ctx, h, sizeof h, w->err)) return -3;
    for (int i = 0; i < T_COUNT; i++) {
        tabw *t = &w->t[i];
        if (put(ctx, t->dir.v, t->dir.n, w->err) ||
            (t->file.fd >= 0 && tdx_scratch_copy(&t->file, put, ctx, w->err)) ||
            put(ctx, t->data.v, t->data.n, w->err))
            return -3;
    }
    return 0;
}

int tdx_sumindex_write(tdx_sumspill *sp, const tdx_summary *s, const char *beside, bool thread,
                       tdx_sumindex_put put, void *ctx, tdx_sumindex_progress progress,
                       void *progress_ctx, tdx_sumindex_cpu *cpu, tdx_err *err) {
    sumw w;
    memset(&w, 0, sizeof w);
    w.s = s;
    w.sp = sp;
    w.err = err;
    w.progress = progress;
    w.progress_ctx = progress_ctx;
    w.total = tdx_xsort_count(sp->g) + tdx_xsort_count(sp->t) + tdx_xsort_count(sp->r);
    w.read0 = sp->nread;
    tdx_buf *out[T_COUNT];
    for (int i = 0; i < T_COUNT; i++) {
        w.t[i].t = i;
        w.t[i].file.fd = -1;
        w.t[i].beside = beside;
        out[i] = &w.t[i].data;
    }
    /* This phase has the machine to itself, and coding and the shapes' lookups were half of it
     * (4 GiB tracegen trace: 16.3 -> 12.2 s with the second thread) */
    w.bc = tdx_bcoder_new(T_COUNT, F_COUNT, out, tw_sink, w.t, thread);
    if (!w.bc) {
        sumw_free(&w);
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    }
    tdx_bcoder_set_map(w.bc, shape_map, &w);
    for (int i = 0; i < T_COUNT; i++) {
        w.t[i].bc = w.bc;
        w.t[i].bo = tdx_bcoder_stream(w.bc, i);
    }
    int rc = tdx_sumspill_attach(sp, err) || tdx_sumspill_rewind(sp, err) ? -3 : 0;
    if (!rc) rc = write_goroutines(&w);
    if (!rc) rc = write_edges(&w);
    if (!rc) rc = write_tasks(&w);
    /* The dictionaries are complete once the coder has every record that names a shape. */
    for (int i = 0; i < T_GSHAPES && !rc; i++) tw_close(&w.t[i]);
    if (!rc && !tdx_bcoder_sync(w.bc)) {
        shapes_write(&w.gsh, &w.t[T_GSHAPES]);
        shapes_write(&w.tsh, &w.t[T_TSHAPES]);
        shapes_write(&w.rsh, &w.t[T_RSHAPES]);
        for (int i = T_GSHAPES; i < T_COUNT; i++) tw_close(&w.t[i]);
    }
    tdx_err cerr;
    int crc = tdx_bcoder_end(w.bc, &cerr); /* the coder's failure, unless the pass failed first */
    if (cpu) {
        int64_t code, th;
        tdx_bcoder_cpu(w.bc, &code, &th);
        cpu->code_ns += code;
        cpu->thread_ns += th;
    }
    if (!rc && crc) {
        rc = crc;
        if (rc == TW_REPORTED) *err = cerr;
    }
    if (!rc) rc = assemble(&w, put, ctx);
    if (!rc && progress) progress(progress_ctx, w.total, w.total);
    sumw_free(&w);
    if (rc == -3) return -1; /* reported */
    if (rc == -2)
        return tdx_errf(
            err, TDX_EINDEX, TDX_NO_OFFSET,
            "internal error: the goroutine/task summary is inconsistent or too large to index");
    if (rc) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return 0;
}

static int put_buf(void *ctx, const void *p, size_t n, tdx_err *err) {
    return tdx_buf_append(ctx, p, n) ? tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory")
                                     : 0;
}

int tdx_sumindex_save(const tdx_summary *s, tdx_buf *out, tdx_err *err) {
    tdx_sumspill sp;
    if (tdx_sumspill_init(&sp, NULL, 0))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    int rc = tdx_sumspill_put_all(&sp, s, err) ||
                     tdx_sumindex_write(&sp, s, NULL, false, put_buf, out, NULL, NULL, NULL, err)
                 ? -1
                 : 0;
    tdx_sumspill_free(&sp);
    return rc;
}

/* ==== reader ==== */

typedef struct tab {
    uint64_t nrec, nblocks, datalen;
    const uint8_t *dir, *data;
    uint8_t *checked; /* bitmap of blocks whose hash matched (allocated on first use) */
} tab;

typedef struct rd {
    const uint8_t *p;
    size_t n;
    uint64_t base;
    tdx_err *err;
    uint64_t nstr, nnodes;
    int64_t t0;
    tab t[T_COUNT];
    tdx_hmap shape_blk[3]; /* dictionary block -> its first slot in shapes */
    TDX_VEC(shape) shapes;
    TDX_VEC(int64_t) ids; /* scratch: children or operators of the record being decoded */
} rd;

static int corrupt(rd *r, const void *at) {
    uint64_t off = (const uint8_t *)at >= r->p && (const uint8_t *)at <= r->p + r->n
                       ? r->base + (uint64_t)((const uint8_t *)at - r->p)
                       : r->base;
    return tdx_errf(r->err, TDX_EINDEX, off,
                    "index section SUMMARY is corrupt (checksum or structure mismatch): rebuild it "
                    "with `traceidx build`");
}

static int nomem(rd *r) {
    return tdx_errf(r->err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

static void rd_free(rd *r) {
    for (int i = 0; i < T_COUNT; i++) free(r->t[i].checked);
    for (int i = 0; i < 3; i++) tdx_hmap_free(&r->shape_blk[i]);
    tdx_vec_free(&r->shapes);
    tdx_vec_free(&r->ids);
}

static int rd_open(rd *r, const uint8_t *p, size_t n, uint64_t base, tdx_err *err) {
    memset(r, 0, sizeof *r);
    r->p = p;
    r->n = n;
    r->base = base;
    r->err = err;
    if (n < SH_SIZE || memcmp(p + SH_MAGIC, SUM_MAGIC, 8) != 0 ||
        !tdx_checksum_ok(p, SH_HASH, tdx_rd64(p + SH_HASH)))
        return corrupt(r, p);
    r->t0 = (int64_t)tdx_rd64(p + SH_FIELDS + 8);
    for (int i = 0; i < T_COUNT; i++) {
        const uint8_t *h = p + SH_TABLES + (size_t)i * TR_SIZE;
        tab *t = &r->t[i];
        t->nrec = tdx_rd64(h + TR_NREC);
        t->nblocks = tdx_rd64(h + TR_NBLOCKS);
        uint64_t dir = tdx_rd64(h + TR_DIR), data = tdx_rd64(h + TR_DATA);
        t->datalen = tdx_rd64(h + TR_DATALEN);
        if (dir > n || t->nblocks > (n - dir) / DE_SIZE || data > n || t->datalen > n - data ||
            t->nrec > t->nblocks * BLOCK_RECS || (t->nrec == 0) != (t->nblocks == 0) ||
            t->nblocks > t->nrec ||
            (dense(i) && t->nblocks != (t->nrec + BLOCK_RECS - 1) / BLOCK_RECS))
            return corrupt(r, h);
        t->dir = p + dir;
        t->data = p + data;
    }
    return 0;
}

/* Block k of table ti, checked: its bytes in *p, *len and its first key. */
static int block(rd *r, int ti, uint64_t k, const uint8_t **p, size_t *len, uint64_t *key) {
    tab *t = &r->t[ti];
    if (k >= t->nblocks) return corrupt(r, t->dir);
    const uint8_t *e = t->dir + k * DE_SIZE;
    if (!tdx_check_equal(entry_check(ti, k, e), tdx_rd32(e + DE_CHECK))) return corrupt(r, e);
    uint64_t off = tdx_rd64(e + DE_OFF), n = tdx_rd32(e + DE_LEN);
    if (off > t->datalen || n > t->datalen - off || n == 0) return corrupt(r, e);
    if (!t->checked && !(t->checked = calloc((size_t)(t->nblocks + 7) / 8, 1))) return nomem(r);
    if (!(t->checked[k / 8] >> (k % 8) & 1)) {
        if (!tdx_checksum_ok(t->data + off, (size_t)n, tdx_rd64(e + DE_HASH)))
            return corrupt(r, t->data + off);
        t->checked[k / 8] |= (uint8_t)(1u << (k % 8));
    }
    *p = t->data + off;
    *len = (size_t)n;
    *key = tdx_rd64(e + DE_KEY);
    return 0;
}

/* The block of keyed table ti where the records with key `want` start (*k = nblocks when none
 * can): the last whose first key is <= want; where keys repeat (TASKX) and a key's records may
 * run on from an earlier block, the last whose first key is < want, or the first. */
static int seek(rd *r, int ti, uint64_t want, uint64_t *k) {
    tab *t = &r->t[ti];
    bool rep = repeats(ti);
    uint64_t lo = 0, hi = t->nblocks;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const uint8_t *e = t->dir + mid * DE_SIZE;
        if (!tdx_check_equal(entry_check(ti, mid, e), tdx_rd32(e + DE_CHECK))) return corrupt(r, e);
        uint64_t key = tdx_rd64(e + DE_KEY);
        if (key < want || (!rep && key == want))
            lo = mid + 1;
        else
            hi = mid;
    }
    *k = lo ? lo - 1 : rep ? 0 : t->nblocks;
    return 0;
}

/* A position inside a block: the key of the record about to be decoded. A block is uvarint
 * records, uvarint values, then the values rANS-coded (index/format/rans.h), each with its field's
 * context. */
typedef struct cur {
    tdx_rans_dec d;
    const uint8_t *at; /* the block (for messages) */
    uint64_t key;
    uint64_t left; /* records not started */
    uint64_t ntok; /* values not read */
    uint64_t gap1; /* added to every key gap: 1, or 0 where a key repeats */
    bool started, dense, bad;
} cur;

static int cur_open(rd *r, int ti, uint64_t k, cur *c) {
    const uint8_t *p = NULL;
    size_t len = 0;
    tdx_rans_dec_init(&c->d);
    c->at = NULL;
    c->key = c->left = c->ntok = 0;
    c->started = c->bad = false;
    c->dense = dense(ti);
    c->gap1 = !repeats(ti);
    if (block(r, ti, k, &p, &len, &c->key)) return -1;
    tdx_deser h = {p, p + len, 0};
    c->at = p;
    c->left = tdx_deser_u(&h);
    c->ntok = tdx_deser_u(&h);
    if (h.bad || c->left == 0 || c->left > BLOCK_RECS ||
        tdx_rans_dec_start(&c->d, F_COUNT, h.p, (size_t)(h.end - h.p)))
        return corrupt(r, p);
    return 0;
}

static void cur_close(cur *c) {
    tdx_rans_dec_free(&c->d);
}

/* Whether every record and value of the block was read, and nothing else was there. */
static bool cur_done(cur *c) {
    return !c->bad && c->left == 0 && c->ntok == 0 && tdx_rans_dec_ok(&c->d);
}

/* The next value, of field f (0 and the block marked bad past its values). */
static uint64_t cu(cur *c, int f) {
    if (c->ntok == 0) {
        c->bad = true;
        return 0;
    }
    c->ntok--;
    uint64_t v = tdx_rans_get_uint(&c->d, f & 3, (uint32_t)f);
    if (c->d.bad) c->bad = true;
    return v;
}
static int64_t ci(cur *c, int f) {
    return tdx_unzigzag(cu(c, f));
}
static uint32_t cu32(cur *c, int f, uint64_t lim) {
    uint64_t v = cu(c, f);
    if (v >= lim) {
        c->bad = true;
        return 0;
    }
    return (uint32_t)v;
}

/* Steps to the next record (false at the block's end). */
static bool cur_next(cur *c) {
    if (c->bad || c->left == 0) return false;
    if (c->started) c->key += c->dense ? 1 : cu(c, F_KEY) + c->gap1;
    c->started = true;
    c->left--;
    return !c->bad;
}

/* Record decoders: each consumes one record at c (setting c->bad on malformed values) and keeps
 * its delta chains in ctx. */
typedef int (*rec_fn)(rd *r, cur *c, void *ctx);

/* Finds the record with key `want` in keyed table ti: every earlier record of its block goes
 * through `skip` (which advances the delta chains in ctx), the record itself through `take`;
 * *found tells whether it exists. */
static int find(rd *r, int ti, uint64_t want, rec_fn skip, rec_fn take, void *ctx, bool *found) {
    *found = false;
    uint64_t k = 0;
    if (seek(r, ti, want, &k)) return -1;
    if (k == r->t[ti].nblocks) return 0;
    cur c;
    int rc = cur_open(r, ti, k, &c);
    while (!rc && cur_next(&c)) {
        if (c.key > want) break;
        if (c.key == want) {
            rc = take(r, &c, ctx);
            if (!rc && !c.bad) *found = true;
            break;
        }
        rc = skip(r, &c, ctx);
    }
    if (!rc && c.bad) rc = corrupt(r, c.at);
    cur_close(&c);
    return rc;
}

/* Every record with key `want` of TASKX, where a key repeats and its records may run on into
 * later blocks: from where seek starts, `skip` the records before them, `take` each of them. */
static int find_all(rd *r, int ti, uint64_t want, rec_fn skip, rec_fn take, void *ctx) {
    tab *t = &r->t[ti];
    uint64_t k0 = 0;
    if (seek(r, ti, want, &k0)) return -1;
    int rc = 0;
    bool past = false;
    for (uint64_t k = k0; k < t->nblocks && !past && !rc; k++) {
        const uint8_t *e = t->dir + k * DE_SIZE;
        if (!tdx_check_equal(entry_check(ti, k, e), tdx_rd32(e + DE_CHECK))) return corrupt(r, e);
        if (tdx_rd64(e + DE_KEY) > want) break;
        cur c;
        rc = cur_open(r, ti, k, &c);
        while (!rc && cur_next(&c)) {
            if ((past = c.key > want)) break;
            rc = (c.key == want ? take : skip)(r, &c, ctx);
        }
        if (!rc && c.bad) rc = corrupt(r, c.at);
        cur_close(&c);
    }
    return rc;
}

/* ---- shapes ---- */

static int shape_block(rd *r, int ti, uint64_t b, uint32_t *slot) {
    tdx_hmap *m = &r->shape_blk[ti - T_GSHAPES];
    uint32_t v = tdx_hmap_get(m, b);
    if (v != TDX_HMAP_EMPTY) {
        *slot = v;
        return 0;
    }
    cur c;
    int rc = cur_open(r, ti, b, &c);
    uint64_t want = c.key < r->t[ti].nrec && r->t[ti].nrec - c.key < BLOCK_RECS
                        ? r->t[ti].nrec - c.key
                        : BLOCK_RECS;
    if (!rc && (c.key != b * BLOCK_RECS || c.left != want)) rc = corrupt(r, c.at);
    size_t first = r->shapes.n;
    if (!rc && first >= UINT32_MAX - BLOCK_RECS) rc = nomem(r);
    for (uint64_t i = 0; i < want && !rc; i++) {
        shape s;
        s.name = cu32(&c, F_S_NAME, r->nstr);
        s.a = cu32(&c, F_S_A, ti == T_GSHAPES ? 1 : r->nnodes);
        s.b = cu(&c, F_S_B);
        if (ti != T_GSHAPES && s.b >= r->nnodes) c.bad = true;
        if (c.bad)
            rc = corrupt(r, c.at);
        else if (tdx_vec_push(&r->shapes, s))
            rc = nomem(r);
    }
    c.left = 0;
    if (!rc && !cur_done(&c)) rc = corrupt(r, c.at);
    cur_close(&c);
    if (rc) return rc;
    if (tdx_hmap_put(m, b, (uint32_t)first)) return nomem(r);
    *slot = (uint32_t)first;
    return 0;
}

static int shape_get(rd *r, int ti, uint64_t k, const void *at, shape *out) {
    if (k >= r->t[ti].nrec) return corrupt(r, at);
    uint32_t slot = 0;
    if (shape_block(r, ti, k / BLOCK_RECS, &slot)) return -1;
    *out = r->shapes.v[slot + k % BLOCK_RECS];
    return 0;
}

/* ---- goroutines ---- */

typedef struct grec {
    int64_t prev; /* creation of the previous record (delta chain) */
    uint64_t shape;
    tdx_sumg g;
} grec;

static int dec_goroutine(rd *r, cur *c, void *ctx) {
    grec *x = ctx;
    uint64_t u = cu(c, F_G_FLAGS);
    x->shape = cu(c, F_G_SHAPE);
    int64_t gran = u & 4 ? GRAN : 1;
    memset(&x->g, 0, sizeof x->g);
    x->g.id = (int64_t)(c->key ^ TDX_XSORT_SIGN);
    x->g.creation = tdx_wadd(x->prev, ungran(ci(c, F_G_CREATE), gran));
    if (u & 1) x->g.start = tdx_wadd(x->g.creation, ungran(ci(c, F_G_START), gran));
    if (u & 2)
        x->g.end = tdx_wadd((u & 1) ? x->g.start : x->g.creation, ungran(ci(c, F_G_END), gran));
    x->prev = x->g.creation;
    /* a stored start or end of 0 would read back as absent: not something the writer makes */
    if (u > 7 || ((u & 1) && x->g.start == 0) || ((u & 2) && x->g.end == 0)) c->bad = true;
    return 0;
}

static int find_goroutine(rd *r, int64_t id, tdx_sumg *out, bool *found) {
    grec x = {.prev = r->t0};
    if (find(r, T_GOROUTINES, (uint64_t)id ^ TDX_XSORT_SIGN, dec_goroutine, dec_goroutine, &x,
             found))
        return -1;
    if (!*found) return 0;
    shape sh;
    if (shape_get(r, T_GSHAPES, x.shape, r->t[T_GOROUTINES].dir, &sh)) return -1;
    *out = x.g;
    out->name = sh.name;
    out->pc = sh.b;
    return 0;
}

/* ---- edges ---- */

/* Decodes a record's operators into r->ids (keep) or just past them. */
static int dec_edges(rd *r, cur *c, bool keep) {
    uint64_t cnt = cu(c, F_E_COUNT);
    if (cnt == 0 || cnt > c->ntok) return c->bad = true, 0;
    int64_t a = tdx_wadd((int64_t)(c->key ^ TDX_XSORT_SIGN), ci(c, F_E_FIRST));
    r->ids.n = 0;
    for (uint64_t i = 0; i < cnt && !c->bad; i++) {
        if (i) a = tdx_wadd(a, (int64_t)(cu(c, F_E_GAP) + 1));
        if (keep && tdx_vec_push(&r->ids, a)) return nomem(r);
    }
    return 0;
}
static int skip_edges(rd *r, cur *c, void *ctx) {
    return dec_edges(r, c, false);
}
static int take_edges(rd *r, cur *c, void *ctx) {
    return dec_edges(r, c, true);
}

/* Appends the edges (operator, operand) of one operand. */
static int add_edges(rd *r, tdx_summary *s, int64_t operand) {
    bool found;
    if (find(r, T_EDGES, (uint64_t)operand ^ TDX_XSORT_SIGN, skip_edges, take_edges, NULL, &found))
        return -1;
    for (size_t i = 0; found && i < r->ids.n; i++)
        if (tdx_vec_push(&s->edge_a, r->ids.v[i]) || tdx_vec_push(&s->edge_b, operand) ||
            tdx_vec_push(&s->edge_ev, 0))
            return nomem(r);
    return 0;
}

/* G's record, and the edges RelatedGoroutinesV2 walks from G: into G and into its operators. */
static int load_goroutine(rd *r, tdx_summary *s, int64_t goid) {
    tdx_sumg g;
    bool found;
    if (find_goroutine(r, goid, &g, &found)) return -1;
    if (!found) return 0;
    if (tdx_vec_push(&s->gs, g) || tdx_hmap_put(&s->g_idx, (uint64_t)goid, (uint32_t)(s->gs.n - 1)))
        return nomem(r);
    if (add_edges(r, s, goid)) return -1;
    size_t nfirst = s->edge_a.n;
    for (size_t i = 0; i < nfirst; i++)
        if (s->edge_a.v[i] != goid && add_edges(r, s, s->edge_a.v[i])) return -1;
    return 0;
}

/* ---- tasks ---- */

typedef struct trec {
    int64_t pt, pg; /* delta chains: the previous record's event time and goroutine */
    uint64_t shape;
    bool has_parent;
    uint64_t parent;
    tdx_sumev start, end;
} trec;

static int dec_task(rd *r, cur *c, trec *x, bool keep) {
    uint64_t u = cu(c, F_T_FLAGS), nch = cu(c, F_T_NCHILD);
    bool sp = u & 1, ep = u & 2, gd = u & 8;
    int64_t gran = u & 16 ? GRAN : 1;
    x->has_parent = u & 4;
    x->shape = cu(c, F_T_SHAPE);
    memset(&x->start, 0, sizeof x->start);
    memset(&x->end, 0, sizeof x->end);
    if (sp) {
        x->pt = x->start.time = tdx_wadd(x->pt, ungran(ci(c, F_T_START), gran));
        x->pg = x->start.g = tdx_wadd(x->pg, ci(c, F_T_SG));
        x->start.present = true;
    }
    if (ep) {
        x->end.time = tdx_wadd(x->pt, ungran(ci(c, F_T_END), gran));
        x->end.g = !sp || gd ? tdx_wadd(x->pg, ci(c, F_T_EG)) : x->pg;
        x->end.present = true;
        if (!sp) x->pt = x->end.time, x->pg = x->end.g;
    }
    if (x->has_parent) x->parent = (uint64_t)tdx_wadd((int64_t)c->key, ci(c, F_T_PARENT));
    if (u > 31 || nch > c->ntok || nch > r->t[T_TASKS].nrec) return c->bad = true, 0;
    r->ids.n = 0;
    int64_t prev = (int64_t)c->key;
    for (uint64_t i = 0; i < nch && !c->bad; i++) {
        prev = tdx_wadd(prev, ci(c, F_T_CHILD));
        if (keep && tdx_vec_push(&r->ids, prev)) return nomem(r);
    }
    return 0;
}
static int skip_task(rd *r, cur *c, void *ctx) {
    return dec_task(r, c, ctx, false);
}
static int take_task(rd *r, cur *c, void *ctx) {
    return dec_task(r, c, ctx, true);
}

/* A TASKX record's regions: into task ti of s, or only read past (s NULL). */
static int dec_regions(rd *r, cur *c, tdx_summary *s, uint32_t ti, int64_t bt, int64_t bg,
                       int64_t gran) {
    uint64_t nr = cu(c, F_X_NR);
    if (nr > c->ntok / 3) return c->bad = true, 0;
    int64_t pt = bt, pg = bg;
    for (uint64_t k = 0; k < nr && !c->bad; k++) {
        uint64_t u = cu(c, F_R_FLAGS), ref = cu(c, F_R_REF), sh = cu(c, F_R_SHAPE);
        bool sp = u & 1, ep = u & 2, gd = u & 4;
        int64_t ts = 0, te = 0, g = 0, eg = 0;
        if (sp) ts = tdx_wadd(pt, ungran(ci(c, F_R_START), gran));
        if (ep) te = tdx_wadd(sp ? ts : pt, ungran(ci(c, F_R_END), gran));
        if ((sp || ep) && !ref) g = tdx_wadd(pg, ci(c, F_R_G));
        if (gd) eg = ci(c, F_R_EG);
        if (c->bad || u > 7 || ref > GREF_MAX || (ref && !(sp || ep)) || (gd && !(sp && ep)))
            return c->bad = true, 0;
        tdx_sumtask *t = s ? &s->tasks.v[ti] : NULL;
        if (ref && t) {
            if (ref > t->goroutines.n) return c->bad = true, 0;
            g = t->goroutines.v[ref - 1];
        }
        if (sp || ep) pt = sp ? ts : te, pg = g;
        if (!t) continue;
        tdx_sumregion reg;
        memset(&reg, 0, sizeof reg);
        reg.task = t->id;
        reg.start.present = sp;
        reg.end.present = ep;
        if (sp) reg.start.time = ts, reg.start.g = g;
        if (ep) reg.end.time = te, reg.end.g = gd ? tdx_wadd(g, eg) : g;
        shape shp;
        memset(&shp, 0, sizeof shp); /* (the analyzer cannot see shape_get set it on success) */
        if (shape_get(r, T_RSHAPES, sh, c->at, &shp)) return -1;
        reg.name = shp.name;
        reg.start.stack = sp ? shp.a : 0;
        reg.end.stack = ep ? (uint32_t)shp.b : 0;
        if ((!sp && shp.a) || (!ep && shp.b)) return c->bad = true, 0;
        if (s->regions.n >= UINT32_MAX - 1 || tdx_vec_push(&s->regions, reg) ||
            tdx_vec_push(&s->tasks.v[ti].regions, (uint32_t)(s->regions.n - 1)))
            return nomem(r);
    }
    return 0;
}

/* A TASKX record goes into task ti of s (whose start is its chains' base), or is read past (s
 * NULL). */
typedef struct xctx {
    tdx_summary *s;
    uint32_t ti;
} xctx;

static int dec_taskx(rd *r, cur *c, tdx_summary *s, uint32_t ti) {
    uint64_t gr = cu(c, F_X_GRAN);
    int64_t gran = gr ? GRAN : 1;
    tdx_sumtask *t = s ? &s->tasks.v[ti] : NULL;
    bool st = t && t->start.present;
    int64_t bt = st ? t->start.time : r->t0, bg = st ? t->start.g : 0;
    uint64_t nlogs = cu(c, F_X_NLOGS);
    int64_t lt = 0, lg = 0;
    if (nlogs) {
        lt = ci(c, F_X_LOGT);
        lg = ci(c, F_X_LOGG);
    }
    if (t) { /* a piece after the first has none */
        t->nlogs += nlogs;
        if (nlogs && !t->first_log.present) {
            t->first_log.time = tdx_wadd(bt, ungran(lt, gran));
            t->first_log.g = tdx_wadd(bg, lg);
            t->first_log.present = true;
        }
    }
    uint64_t ng = cu(c, F_X_NG);
    if (gr > 1 || ng > c->ntok) return c->bad = true, 0;
    int64_t g = bg;
    for (uint64_t i = 0; i < ng && !c->bad; i++) {
        g = tdx_wadd(g, ci(c, F_X_G));
        if (t && tdx_vec_push(&t->goroutines, g)) return nomem(r);
    }
    return c->bad ? 0 : dec_regions(r, c, s, ti, bt, bg, gran);
}

static int skip_taskx(rd *r, cur *c, void *ctx) {
    (void)ctx;
    return dec_taskx(r, c, NULL, 0);
}

static int take_taskx(rd *r, cur *c, void *ctx) {
    xctx *x = ctx;
    return dec_taskx(r, c, x->s, x->ti);
}

static int new_task(rd *r, tdx_summary *s, uint64_t id) {
    tdx_sumtask t;
    memset(&t, 0, sizeof t);
    t.id = id;
    t.parent = TDX_SUM_NONE;
    if (s->tasks.n >= UINT32_MAX - 1 || tdx_vec_push(&s->tasks, t) ||
        tdx_hmap_put(&s->t_idx, id, (uint32_t)(s->tasks.n - 1)))
        return nomem(r);
    return 0;
}

/* A task record's shape: its name and the stacks of its start and end, which it has only with
 * the event (damage at `at` otherwise). */
static int task_shape(rd *r, const trec *x, const uint8_t *at, shape *sh) {
    memset(sh, 0, sizeof *sh); /* (the analyzer cannot see shape_get set it on success) */
    if (shape_get(r, T_TSHAPES, x->shape, at, sh)) return -1;
    if ((!x->start.present && sh->a) || (!x->end.present && sh->b)) return corrupt(r, at);
    return 0;
}

/* Fills task i (already added with its id) from its TASKS record; *found = false when absent.
 * Children not seen yet are added (to be filled in turn); *parent gets the parent id. */
static int fill_task(rd *r, tdx_summary *s, uint32_t i, bool *found, bool *has_parent,
                     uint64_t *parent) {
    trec x = {.pt = r->t0};
    uint64_t id = s->tasks.v[i].id;
    if (find(r, T_TASKS, id, skip_task, take_task, &x, found)) return -1;
    if (!*found) return 0;
    shape sh;
    if (task_shape(r, &x, r->t[T_TASKS].dir, &sh)) return -1;
    tdx_sumtask *t = &s->tasks.v[i];
    t->name = sh.name;
    t->start = x.start;
    t->start.stack = sh.a;
    t->end = x.end;
    t->end.stack = (uint32_t)sh.b;
    *has_parent = x.has_parent;
    *parent = x.parent;
    for (size_t k = 0; k < r->ids.n; k++) {
        uint64_t cid = (uint64_t)r->ids.v[k];
        uint32_t ci = tdx_hmap_get(&s->t_idx, cid);
        if (ci == TDX_HMAP_EMPTY) {
            if (new_task(r, s, cid)) return -1;
            ci = (uint32_t)(s->tasks.n - 1);
        }
        if (tdx_vec_push(&s->tasks.v[i].children, ci)) return nomem(r);
    }
    return 0;
}

/* Task `id`, its descendants (breadth first; the order of the task list comes from the children
 * lists, not from these indexes) and, for parents outside that set, records with just their id. */
static int load_tasks(rd *r, tdx_summary *s, uint64_t id, bool extras) {
    TDX_VEC(uint64_t) parents = {0}; /* per loaded task: parent id, whether it has one */
    int rc = -1;
    if (new_task(r, s, id)) goto out;
    for (size_t i = 0; i < s->tasks.n; i++) {
        bool found = false, hp = false;
        uint64_t pid = 0;
        if (fill_task(r, s, (uint32_t)i, &found, &hp, &pid)) goto out;
        if (!found) {
            if (i == 0) { /* an unknown task: resolve reports it */
                rc = 0;
                tdx_vec_free(&s->tasks.v[0].children);
                s->tasks.n = 0;
                tdx_hmap_clear(&s->t_idx);
                goto out;
            }
            corrupt(r, r->t[T_TASKS].dir); /* a child without a record */
            goto out;
        }
        if (tdx_vec_push(&parents, hp ? pid : 0) || tdx_vec_push(&parents, hp)) {
            nomem(r);
            goto out;
        }
    }
    size_t nloaded = s->tasks.n;
    for (size_t i = 0; i < nloaded; i++) {
        if (!parents.v[2 * i + 1]) continue;
        uint64_t pid = parents.v[2 * i];
        uint32_t pi = tdx_hmap_get(&s->t_idx, pid);
        if (pi == TDX_HMAP_EMPTY) {
            if (new_task(r, s, pid)) goto out;
            pi = (uint32_t)(s->tasks.n - 1);
        }
        s->tasks.v[i].parent = pi;
    }
    for (size_t i = 0; i < nloaded && extras; i++) {
        xctx x = {s, (uint32_t)i};
        if (find_all(r, T_TASKX, s->tasks.v[i].id, skip_taskx, take_taskx, &x)) goto out;
    }
    rc = 0;
out:
    tdx_vec_free(&parents);
    return rc;
}

/* The header's scalar fields; the Sync a query ends at cannot lie past the events. */
static int load_fields(rd *r, tdx_summary *s) {
    const uint8_t *f = r->p + SH_FIELDS;
    s->nevents = tdx_rd64(f);
    s->t0 = (int64_t)tdx_rd64(f + 8);
    s->last_ts = (int64_t)tdx_rd64(f + 16);
    s->sync_ts = (int64_t)tdx_rd64(f + 24);
    s->valid_events = tdx_rd64(f + 32);
    s->valid_end = (int64_t)tdx_rd64(f + 40);
    s->max_proc = (int64_t)tdx_rd64(f + 48);
    s->valid_max_proc = (int64_t)tdx_rd64(f + 56);
    return s->valid_events > s->nevents ? corrupt(r, f + 32) : 0;
}

int tdx_sumindex_fields(tdx_index *ix, tdx_summary *s, tdx_err *err) {
    uint64_t n;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_SUMMARY, &n, err);
    rd r;
    if (!p || rd_open(&r, p, (size_t)n, ix->sec[TDX_SEC_SUMMARY].off, err)) return -1;
    return load_fields(&r, s);
}

int tdx_sumindex_load(const uint8_t *p, size_t n, uint64_t base, const tdx_viewquery *q,
                      tdx_summary *s, tdx_err *err) {
    rd r;
    if (rd_open(&r, p, n, base, err)) return -1;
    r.nstr = tdx_vgstore_nstrings(s->store);
    r.nnodes = tdx_vgstore_nnodes(s->store);
    int rc = load_fields(&r, s);
    if (!rc && q->has_goid)
        rc = load_goroutine(&r, s, (int64_t)q->goid);
    else if (!rc && q->has_focustask)
        rc = load_tasks(&r, s, q->focustask, false);
    else if (!rc && q->has_taskid)
        rc = load_tasks(&r, s, q->taskid, true);
    rd_free(&r);
    return rc;
}

int tdx_sumindex_load_task(const uint8_t *p, size_t n, uint64_t base, uint64_t id, tdx_summary *s,
                           tdx_err *err) {
    rd r;
    if (rd_open(&r, p, n, base, err)) return -1;
    r.nstr = tdx_vgstore_nstrings(s->store);
    r.nnodes = tdx_vgstore_nnodes(s->store);
    bool found = false, hp = false;
    uint64_t pid = 0;
    int rc = load_fields(&r, s);
    if (!rc) rc = new_task(&r, s, id);
    if (!rc) rc = fill_task(&r, s, 0, &found, &hp, &pid);
    if (!rc && found) {
        xctx x = {s, 0};
        rc = find_all(&r, T_TASKX, id, skip_taskx, take_taskx, &x);
    }
    if (!rc && !found) { /* not there (nothing was filled): no task at all */
        s->tasks.n = 0;
        tdx_hmap_clear(&s->t_idx);
    }
    rd_free(&r);
    return rc;
}

/* ---- the task table, whole ---- */

/* Every TASKS record in id order, through rec with its key, decoded record (events with their
 * stacks) and shape; a non-zero return from rec stops the loop and is returned. */
typedef int (*task_rec_fn)(rd *r, void *ctx, uint64_t id, const trec *x, const shape *sh);

static int each_task(rd *r, task_rec_fn rec, void *ctx) {
    tab *t = &r->t[T_TASKS];
    uint64_t nrec = 0;
    int rc = 0;
    for (uint64_t k = 0; k < t->nblocks && !rc; k++) {
        cur c;
        rc = cur_open(r, T_TASKS, k, &c);
        trec x = {.pt = r->t0}; /* delta chains restart with each block */
        while (!rc && cur_next(&c)) {
            if (dec_task(r, &c, &x, false) || c.bad) {
                rc = c.bad ? corrupt(r, c.at) : -1;
                break;
            }
            shape sh;
            if ((rc = task_shape(r, &x, c.at, &sh))) break;
            x.start.stack = sh.a;
            x.end.stack = (uint32_t)sh.b;
            nrec++;
            rc = rec(r, ctx, c.key, &x, &sh);
        }
        if (!rc && !cur_done(&c)) rc = corrupt(r, c.at);
        cur_close(&c);
    }
    if (!rc && nrec != t->nrec) rc = corrupt(r, r->p + SH_TABLES + (size_t)T_TASKS * TR_SIZE);
    return rc;
}

typedef struct task_cb {
    tdx_sumindex_task_fn fn;
    void *ctx;
    tdx_err *err;
} task_cb;

static int task_rec(rd *r, void *ctx, uint64_t id, const trec *x, const shape *sh) {
    (void)r;
    task_cb *cb = ctx;
    return cb->fn(cb->ctx, id, sh->name, &x->start, &x->end, cb->err);
}

int tdx_sumindex_tasks(const uint8_t *p, size_t n, uint64_t base, const tdx_vgstore *store,
                       tdx_sumindex_task_fn fn, void *ctx, tdx_err *err) {
    rd r;
    if (rd_open(&r, p, n, base, err)) return -1;
    r.nstr = tdx_vgstore_nstrings(store);
    r.nnodes = tdx_vgstore_nnodes(store);
    task_cb cb = {fn, ctx, err};
    int rc = each_task(&r, task_rec, &cb);
    rd_free(&r);
    return rc;
}

/* ---- every task, whole ---- */

/* TASKX read alongside TASKS: the record about to be decoded (have), its block k. */
typedef struct xwalk {
    rd *r;
    cur c;
    uint64_t k;
    bool open, have;
} xwalk;

/* Steps to TASKX's next record, opening the next block at a block's end. */
static int xwalk_next(xwalk *w) {
    tab *t = &w->r->t[T_TASKX];
    w->have = false;
    for (;;) {
        if (w->open) {
            if (cur_next(&w->c)) return w->have = true, 0;
            bool done = cur_done(&w->c);
            cur_close(&w->c);
            w->open = false;
            if (!done) return corrupt(w->r, w->c.at);
            w->k++;
        }
        if (w->k >= t->nblocks) return 0;
        if (cur_open(w->r, T_TASKX, w->k, &w->c)) {
            cur_close(&w->c);
            return -1;
        }
        w->open = true;
    }
}

/* TASKS and TASKX in step (both by task id): every TASKX record must follow its task's. */
typedef struct walk {
    xwalk x;
    tdx_summary s; /* the task at hand */
    tdx_sumindex_whole_fn fn;
    void *ctx;
    tdx_err *err;
} walk;

static int walk_rec(rd *r, void *ctx, uint64_t id, const trec *x, const shape *sh) {
    walk *w = ctx;
    tdx_vgstore *store = w->s.store;
    tdx_summary_free(&w->s);
    tdx_summary_init(&w->s, store);
    int rc = load_fields(r, &w->s);
    if (rc || (rc = new_task(r, &w->s, id))) return rc;
    tdx_sumtask *task = &w->s.tasks.v[0];
    task->name = sh->name;
    task->start = x->start;
    task->end = x->end;
    /* a TASKX record of a task TASKS lacks: damage */
    if (w->x.have && w->x.c.key < id) return corrupt(r, w->x.c.at);
    xctx xc = {&w->s, 0};
    while (!rc && w->x.have && w->x.c.key == id) {
        rc = take_taskx(r, &w->x.c, &xc);
        if (!rc && w->x.c.bad) rc = corrupt(r, w->x.c.at);
        if (!rc) rc = xwalk_next(&w->x);
    }
    return rc ? rc : w->fn(w->ctx, &w->s, w->err);
}

static int walk_tasks(rd *r, tdx_vgstore *store, tdx_sumindex_whole_fn fn, void *ctx,
                      tdx_err *err) {
    walk w;
    memset(&w, 0, sizeof w);
    w.x.r = r;
    w.fn = fn;
    w.ctx = ctx;
    w.err = err;
    tdx_summary_init(&w.s, store);
    int rc = xwalk_next(&w.x);
    if (!rc) rc = each_task(r, walk_rec, &w);
    if (!rc && w.x.have) rc = corrupt(r, w.x.c.at);
    if (w.x.open) cur_close(&w.x.c);
    tdx_summary_free(&w.s);
    return rc;
}

int tdx_sumindex_walk_tasks(const uint8_t *p, size_t n, uint64_t base, tdx_vgstore *store,
                            tdx_sumindex_whole_fn fn, void *ctx, tdx_err *err) {
    rd r;
    if (rd_open(&r, p, n, base, err)) return -1;
    r.nstr = tdx_vgstore_nstrings(store);
    r.nnodes = tdx_vgstore_nnodes(store);
    int rc = walk_tasks(&r, store, fn, ctx, err);
    rd_free(&r);
    return rc;
}

static int walk_nothing(void *ctx, const tdx_summary *s, tdx_err *err) {
    (void)ctx, (void)s, (void)err;
    return 0;
}

/* ---- verification ---- */

/* A task's pieces are checked together (a region's goroutine ref may name a goroutine of an
 * earlier piece), holding no more of them than the refs can name. */
static int verify_taskx(rd *r, cur *c, tdx_summary *s) {
    if (!s->tasks.n || s->tasks.v[s->tasks.n - 1].id != c->key) {
        tdx_summary_free(s);
        tdx_summary_init(s, s->store);
        if (new_task(r, s, c->key)) return -1;
    }
    xctx x = {s, (uint32_t)(s->tasks.n - 1)};
    int rc = take_taskx(r, c, &x);
    tdx_sumtask *t = &s->tasks.v[x.ti];
    if (t->goroutines.n > GREF_MAX) t->goroutines.n = GREF_MAX;
    t->regions.n = s->regions.n = 0;
    return rc;
}

static int verify_record(rd *r, int ti, cur *c, grec *g, trec *t, tdx_summary *scratch) {
    switch (ti) {
    case T_GOROUTINES: {
        dec_goroutine(r, c, g);
        shape sh;
        return c->bad ? 0 : shape_get(r, T_GSHAPES, g->shape, c->at, &sh);
    }
    case T_EDGES:
        return skip_edges(r, c, NULL);
    case T_TASKS: {
        if (dec_task(r, c, t, false)) return -1;
        shape sh;
        return c->bad ? 0 : task_shape(r, t, c->at, &sh);
    }
    default:
        return verify_taskx(r, c, scratch);
    }
}

/* Whether `key` may not follow `last` in table ti. */
static bool before(int ti, uint64_t key, uint64_t last) {
    return repeats(ti) ? key < last : key <= last;
}

static int verify_table(rd *r, int ti, tdx_summary *scratch) {
    tab *t = &r->t[ti];
    uint64_t nrec = 0, last = 0;
    for (uint64_t k = 0; k < t->nblocks; k++) {
        if (dense(ti)) { /* shape_get decodes and checks the whole block */
            shape sh;
            if (shape_get(r, ti, k * BLOCK_RECS, t->dir + k * DE_SIZE, &sh)) return -1;
            uint64_t left = t->nrec - k * BLOCK_RECS;
            nrec += left < BLOCK_RECS ? left : BLOCK_RECS;
            continue;
        }
        cur c;
        int rc = cur_open(r, ti, k, &c);
        if (!rc && k && before(ti, c.key, last)) rc = corrupt(r, t->dir + k * DE_SIZE);
        grec g = {.prev = r->t0};
        trec tr = {.pt = r->t0};
        uint64_t inblock = 0;
        while (!rc && cur_next(&c)) {
            if (inblock && before(ti, c.key, last)) c.bad = true;
            if (c.bad) break;
            if ((rc = verify_record(r, ti, &c, &g, &tr, scratch))) break;
            nrec++;
            inblock++;
            last = c.key;
        }
        if (!rc && !cur_done(&c)) rc = corrupt(r, c.at);
        cur_close(&c);
        if (rc) return rc;
        if (repeats(ti)) continue; /* verify_taskx frees a task's once it has them all */
        tdx_summary_free(scratch);
        tdx_summary_init(scratch, scratch->store);
    }
    return nrec == t->nrec ? 0 : corrupt(r, r->p + SH_TABLES + (size_t)ti * TR_SIZE);
}

int tdx_sumindex_verify(const uint8_t *p, size_t n, uint64_t base, const tdx_vgstore *store,
                        tdx_err *err) {
    rd r;
    if (rd_open(&r, p, n, base, err)) return -1;
    r.nstr = store ? tdx_vgstore_nstrings(store) : (uint64_t)UINT32_MAX + 1;
    r.nnodes = store ? tdx_vgstore_nnodes(store) : (uint64_t)UINT32_MAX + 1;
    tdx_summary scratch;
    tdx_summary_init(&scratch, NULL);
    int rc = load_fields(&r, &scratch);
    for (int i = 0; i < T_COUNT && !rc; i++) rc = verify_table(&r, i, &scratch);
    tdx_summary_free(&scratch);
    /* and that every TASKX record is a task's that TASKS has, as `tasks --logtext` reads them */
    if (!rc) rc = walk_tasks(&r, NULL, walk_nothing, NULL, err);
    rd_free(&r);
    return rc;
}
