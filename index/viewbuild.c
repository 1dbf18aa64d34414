/* viewbuild.c: one pass of the proc, thread and goroutine generators (default options) over the
 * index's events, recording per view: checkpoints of the generator every ckpt_events events
 * (pruned to live goroutines), the "long items" (viewer events an interval emits that reach
 * back before the interval's start: the only events a later interval contributes to an earlier
 * window), the state after the last event, and the frame tree. The proc view also feeds the
 * splitter. Layout in viewsec.h and docs/index-format.md. */
#include "viewbuild.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/hmap.h"
#include "core/mem.h"
#include "index/evcodec.h"
#include "index/format.h"
#include "index/jsonout.h"
#include "index/summary.h"
#include "index/vevser.h"
#include "index/viewgen.h"
#include "index/viewgen_ser.h"
#include "index/viewsec.h"

#define NVIEWS 3

typedef struct item_meta {
    uint64_t interval;
    int64_t mintime;
} item_meta;

struct vbuild;

typedef struct vview {
    struct vbuild *b;
    int view;
    tdx_vgtree tree;
    tdx_vgframes frames;
    tdx_viewgen *vg;
    tdx_buf items;       /* the current interval's long items */
    uint64_t nitems_int; /* and their number */
    TDX_VEC(item_meta) meta;
    tdx_buf pend; /* the first half of an arrow or async slice */
    int64_t pend_ts;
    bool has_pend;
    tdx_buf dir;     /* checkpoint records */
    uint8_t cur[CK_SIZE];
    bool have_cur;
    bool finishing;
    tdx_jsplit *split;
    int err;
} vview;

/* A set of goroutine ids: a bitmap for the small dense ids real traces use, a hash above. */
typedef struct idset {
    uint64_t *bits;
    size_t nwords;
    tdx_hmap big;
} idset;

#define IDSET_DENSE (1ull << 27)

typedef struct vbuild {
    tdx_iwriter *w;
    const tdx_gen *tabs;
    tdx_vgstore store;
    tdx_summary sum;
    vview v[NVIEWS];
    tdx_jsplit split;
    tdx_hmap alive;
    idset dead;
    tdx_hmap resurrected; /* ids that came back after ending (second pass: always kept) */
    bool rerun_needed;
    int64_t t0;
    int64_t tk; /* the current interval's start (elapsed) */
    uint64_t k; /* and its index */
    tdx_buf scratch;
    uint64_t state_bytes;
    tdx_err err;
    int failed;
} vbuild;

static int oom(vbuild *b) {
    if (!b->failed) tdx_errf(&b->err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    b->failed = 1;
    return -1;
}

/* ---- id sets ---- */

static int idset_add(idset *s, int64_t id) {
    if (id >= 0 && (uint64_t)id < IDSET_DENSE) {
        size_t w = (size_t)id >> 6;
        if (w >= s->nwords) {
            size_t n = w + 1 + w / 2;
            uint64_t *nb = realloc(s->bits, n * sizeof *nb);
            if (!nb) return -1;
            memset(nb + s->nwords, 0, (n - s->nwords) * sizeof *nb);
            s->bits = nb;
            s->nwords = n;
        }
        s->bits[w] |= 1ull << (id & 63);
        return 0;
    }
    return tdx_hmap_put(&s->big, (uint64_t)id, 1);
}

static bool idset_has(const idset *s, int64_t id) {
    if (id >= 0 && (uint64_t)id < IDSET_DENSE) {
        size_t w = (size_t)id >> 6;
        return w < s->nwords && (s->bits[w] >> (id & 63) & 1);
    }
    return tdx_hmap_get(&s->big, (uint64_t)id) != TDX_HMAP_EMPTY;
}

static void idset_free(idset *s) {
    free(s->bits);
    tdx_hmap_free(&s->big);
    memset(s, 0, sizeof *s);
}

static bool keep_goroutine(void *ctx, int64_t id) {
    const vbuild *b = ctx;
    return tdx_hmap_get(&b->alive, (uint64_t)id) != TDX_HMAP_EMPTY ||
           tdx_hmap_get(&b->resurrected, (uint64_t)id) != TDX_HMAP_EMPTY;
}

/* ---- blobs ---- */

static int put_blob(vbuild *b, const void *p, size_t n, uint8_t *ref) {
    uint64_t off;
    if (tdx_iwriter_stream_put(b->w, p, n, &off, &b->err)) {
        b->failed = 1;
        return -1;
    }
    tdx_le64(ref + BL_OFF, off);
    tdx_le64(ref + BL_LEN, n);
    tdx_le64(ref + BL_HASH, XXH3_64bits(p, n));
    return 0;
}

/* ---- recording what the generators emit ---- */

static int rec_item(vview *v, const tdx_vev *ev, int64_t mintime) {
    vbuild *b = v->b;
    if (mintime >= b->tk) return 0;
    item_meta m = {b->k, mintime};
    if (tdx_vec_push(&v->meta, m)) return -1;
    v->nitems_int++;
    if (v->has_pend) {
        v->has_pend = false;
        return tdx_ser_u(&v->items, 2) || tdx_buf_append(&v->items, v->pend.v, v->pend.n) ||
                       tdx_vev_save(&v->items, ev, &b->store)
                   ? -1
                   : 0;
    }
    return tdx_ser_u(&v->items, 1) || tdx_vev_save(&v->items, ev, &b->store) ? -1 : 0;
}

static int rec_event(void *ctx, const tdx_vev *ev) {
    vview *v = ctx;
    if (v->split && tdx_jsplit_event(v->split, ev)) return v->err = 1, -1;
    if (ev->required || v->finishing) return 0;
    int rc = 0;
    switch (ev->ph) {
    case 's':
    case 'b':
        v->pend.n = 0;
        rc = tdx_vev_save(&v->pend, ev, &v->b->store);
        v->pend_ts = ev->ts;
        v->has_pend = true;
        break;
    case 't':
    case 'e':
        if (!v->has_pend) return v->err = 1, -1; /* the generator always emits pairs */
        rc = rec_item(v, ev, ev->ts < v->pend_ts ? ev->ts : v->pend_ts);
        v->has_pend = false;
        break;
    case 'X': {
        int64_t end = (int64_t)((uint64_t)ev->ts + (uint64_t)ev->dur);
        rc = rec_item(v, ev, end < ev->ts ? end : ev->ts);
        break;
    }
    default: rc = rec_item(v, ev, ev->ts); break;
    }
    if (rc) v->err = 1;
    return rc;
}

/* Closes interval k of every view (its long items) and opens checkpoint k + 1 at event `idx`. */
static int close_interval(vbuild *b) {
    for (int i = 0; i < NVIEWS; i++) {
        vview *v = &b->v[i];
        if (!v->have_cur) continue;
        tdx_le64(v->cur + CK_NITEMS, v->nitems_int);
        if (put_blob(b, v->items.v, v->items.n, v->cur + CK_ITEMS)) return -1;
        if (tdx_buf_append(&v->dir, v->cur, CK_SIZE)) return oom(b);
        v->items.n = 0;
        v->nitems_int = 0;
        v->have_cur = false;
    }
    return 0;
}

static int checkpoint(vbuild *b, uint64_t idx, int64_t elapsed, uint64_t k) {
    if (close_interval(b)) return -1;
    b->k = k;
    b->tk = elapsed;
    for (int i = 0; i < NVIEWS; i++) {
        vview *v = &b->v[i];
        memset(v->cur, 0, sizeof v->cur);
        tdx_le64(v->cur + CK_EVENT, idx);
        tdx_le64(v->cur + CK_TIME, (uint64_t)elapsed);
        tdx_le64(v->cur + CK_NOPT, tdx_viewgen_counters_get(v->vg).optional);
        tdx_le64(v->cur + CK_FIRST_ITEM, v->meta.n);
        b->scratch.n = 0;
        if (tdx_viewgen_save_pruned(v->vg, &b->scratch, keep_goroutine, b)) return oom(b);
        b->state_bytes += b->scratch.n;
        if (put_blob(b, b->scratch.v, b->scratch.n, v->cur + CK_STATE)) return -1;
        v->have_cur = true;
    }
    return 0;
}

/* Goroutines that exist: pruning keeps them; an id coming back after it ended means the pass
 * must be redone keeping that id (Go's generator reuses its old state). */
static int track(vbuild *b, const tdx_event *e) {
    if (e->kind != TDX_KIND_STATE_TRANSITION || e->res_kind != TDX_RES_GOROUTINE) return 0;
    int64_t id = e->res;
    if (e->to == TDX_GO_NOTEXIST) {
        tdx_hmap_del(&b->alive, (uint64_t)id);
        return idset_add(&b->dead, id) ? oom(b) : 0;
    }
    if (idset_has(&b->dead, id) && tdx_hmap_get(&b->resurrected, (uint64_t)id) == TDX_HMAP_EMPTY) {
        b->rerun_needed = true;
        if (tdx_hmap_put(&b->resurrected, (uint64_t)id, 1)) return oom(b);
    }
    return tdx_hmap_put(&b->alive, (uint64_t)id, 1) ? oom(b) : 0;
}

/* ---- the final records ---- */

static int names_blob(vbuild *b, vview *v, uint8_t *ref, uint64_t *count) {
    tdx_vgname *nm;
    size_t n;
    if (tdx_viewgen_names(v->vg, keep_goroutine, b, &nm, &n)) return oom(b);
    size_t ng = (n + TDX_NAMES_GROUP - 1) / TDX_NAMES_GROUP;
    tdx_buf data = {0}, out = {0};
    uint8_t x[8];
    int rc = 0;
    tdx_le64(x, ng);
    rc |= tdx_buf_append(&out, x, 8);
    for (size_t gi = 0; gi < ng && !rc; gi++) {
        size_t a = gi * TDX_NAMES_GROUP, e = a + TDX_NAMES_GROUP < n ? a + TDX_NAMES_GROUP : n;
        tdx_le64(x, (uint64_t)nm[a].id);
        rc |= tdx_buf_append(&out, x, 8);
        tdx_le64(x, data.n);
        rc |= tdx_buf_append(&out, x, 8);
        rc |= tdx_ser_u(&data, e - a);
        int64_t prev = nm[a].id;
        for (size_t i = a; i < e && !rc; i++) {
            rc |= tdx_ser_i(&data, (int64_t)((uint64_t)nm[i].id - (uint64_t)prev));
            prev = nm[i].id;
            rc |= tdx_ser_u(&data, (uint64_t)nm[i].func << 1 | nm[i].named);
            rc |= tdx_ser_u(&data, nm[i].label);
        }
    }
    rc |= tdx_buf_append(&out, data.v, data.n);
    free(nm);
    tdx_vec_free(&data);
    if (rc) {
        tdx_vec_free(&out);
        return oom(b);
    }
    *count = n;
    rc = put_blob(b, out.v, out.n, ref);
    tdx_vec_free(&out);
    return rc;
}

/* The crossing lists: for checkpoint d, the long items emitted in intervals >= d that start
 * before T_d (a window ending before T_d needs exactly those from the rest of the trace). */
static int cross_blobs(vbuild *b, vview *v) {
    size_t nck = v->dir.n / CK_SIZE;
    uint64_t *cnt = calloc(nck + 1, sizeof *cnt);
    if (!cnt) return oom(b);
    int64_t *T = malloc((nck ? nck : 1) * sizeof *T);
    if (!T) {
        free(cnt);
        return oom(b);
    }
    for (size_t d = 0; d < nck; d++) T[d] = (int64_t)tdx_rd64(v->dir.v + d * CK_SIZE + CK_TIME);
    /* first checkpoint with T > m (times are non-decreasing) */
#define FIRST_AFTER(m, out)                                                                       \
    do {                                                                                          \
        size_t lo_ = 0, hi_ = nck;                                                                \
        while (lo_ < hi_) {                                                                       \
            size_t mid_ = (lo_ + hi_) / 2;                                                        \
            if (T[mid_] > (m)) hi_ = mid_;                                                        \
            else lo_ = mid_ + 1;                                                                  \
        }                                                                                         \
        (out) = lo_;                                                                              \
    } while (0)
    for (size_t j = 0; j < v->meta.n; j++) {
        size_t lo;
        FIRST_AFTER(v->meta.v[j].mintime, lo);
        for (size_t d = lo; d <= v->meta.v[j].interval && d < nck; d++) cnt[d]++;
    }
    int rc = 0;
    tdx_buf *lists = calloc(nck ? nck : 1, sizeof *lists);
    uint64_t *last = calloc(nck ? nck : 1, sizeof *last);
    if (!lists || !last) rc = oom(b);
    for (size_t d = 0; d < nck && !rc; d++)
        if (tdx_ser_u(&lists[d], cnt[d])) rc = oom(b);
    for (size_t j = 0; j < v->meta.n && !rc; j++) {
        size_t lo;
        FIRST_AFTER(v->meta.v[j].mintime, lo);
        for (size_t d = lo; d <= v->meta.v[j].interval && d < nck && !rc; d++) {
            if (tdx_ser_u(&lists[d], j - last[d])) rc = oom(b);
            last[d] = j;
        }
    }
#undef FIRST_AFTER
    for (size_t d = 0; d < nck && !rc; d++)
        rc = put_blob(b, lists[d].v, lists[d].n, v->dir.v + d * CK_SIZE + CK_CROSS);
    for (size_t d = 0; lists && d < nck; d++) tdx_vec_free(&lists[d]);
    free(lists);
    free(last);
    free(cnt);
    free(T);
    return rc;
}

static int finish_views(vbuild *b, uint8_t hdr[NVIEWS][VH_SIZE]) {
    if (close_interval(b)) return -1;
    for (int i = 0; i < NVIEWS; i++) {
        vview *v = &b->v[i];
        uint8_t *h = hdr[i];
        memset(h, 0, VH_SIZE);
        tdx_le64(h + VH_VIEW, (uint64_t)v->view);
        tdx_le64(h + VH_NCKPT, v->dir.n / CK_SIZE);
        tdx_le64(h + VH_NITEMS, v->meta.n);
        b->scratch.n = 0;
        if (tdx_viewgen_save_pruned(v->vg, &b->scratch, keep_goroutine, b)) return oom(b);
        if (put_blob(b, b->scratch.v, b->scratch.n, h + VH_FINAL)) return -1;
        uint64_t nn = 0;
        if (v->view == TDX_VIEW_GOROUTINE) {
            if (names_blob(b, v, h + VH_NAMES, &nn)) return -1;
        } else if (put_blob(b, NULL, 0, h + VH_NAMES)) {
            return -1;
        }
        tdx_le64(h + VH_NNAMES, nn);
        tdx_le64(h + VH_NFRAMES_MAIN, tdx_vgtree_nframes(&v->tree));
        v->finishing = true;
        if (tdx_viewgen_finish(v->vg) || v->err || v->tree.oom) return oom(b);
        tdx_le64(h + VH_NOPT, tdx_viewgen_counters_get(v->vg).optional);
        b->scratch.n = 0;
        if (tdx_vgtree_save(&v->tree, &b->scratch)) return oom(b);
        if (put_blob(b, b->scratch.v, b->scratch.n, h + VH_TREE)) return -1;
        if (cross_blobs(b, v)) return -1;
    }
    return 0;
}

/* ---- the pass ---- */

static void vbuild_free(vbuild *b) {
    for (int i = 0; i < NVIEWS; i++) {
        vview *v = &b->v[i];
        tdx_viewgen_free(v->vg);
        tdx_vgtree_free(&v->tree);
        tdx_vec_free(&v->items);
        tdx_vec_free(&v->meta);
        tdx_vec_free(&v->pend);
        tdx_vec_free(&v->dir);
    }
    tdx_jsplit_free(&b->split);
    tdx_summary_free(&b->sum);
    tdx_vgstore_free(&b->store);
    tdx_hmap_free(&b->alive);
    idset_free(&b->dead);
    tdx_vec_free(&b->scratch);
}

static int vbuild_init(vbuild *b, tdx_iwriter *w) {
    b->w = w;
    if (tdx_iwriter_end_events(w, &b->err)) return b->failed = 1, -1;
    b->tabs = tdx_iwriter_tables(w);
    if (!b->tabs) {
        b->err = *tdx_iwriter_error(w);
        b->failed = 1;
        return -1;
    }
    if (tdx_vgstore_init(&b->store)) return oom(b);
    tdx_summary_init(&b->sum, &b->store);
    uint64_t nmeta, meta_bytes;
    for (int i = 0; i < NVIEWS; i++) {
        vview *v = &b->v[i];
        v->b = b;
        v->view = i;
        tdx_vgtree_init(&v->tree, &b->store);
        v->frames = tdx_vgtree_frames(&v->tree);
        tdx_viewgen_opts o;
        tdx_viewgen_opts_default(&o);
        o.view = i;
        v->vg = tdx_viewgen_new(&o, &b->store, &v->frames, rec_event, v);
        if (!v->vg) return oom(b);
    }
    /* The proc view's metadata depends only on its largest proc id, so the ranges are cut online
     * (cmd/trace's splitter, measured exactly as it measures). */
    if (tdx_viewgen_proc_meta_size(tdx_iwriter_max_proc(w), &nmeta, &meta_bytes)) return oom(b);
    tdx_jsplit_init_online(&b->split, &b->v[TDX_VIEW_PROC].frames, TDX_SPLIT_MAX,
                           tdx_jsplit_required_size(nmeta, meta_bytes));
    b->v[TDX_VIEW_PROC].split = &b->split;
    return 0;
}

static int put_sections(vbuild *b, uint8_t hdr[NVIEWS][VH_SIZE], tdx_viewbuild_stats *st) {
    tdx_iwriter *w = b->w;
    for (int i = 0; i < NVIEWS; i++) {
        vview *v = &b->v[i];
        tdx_buf d = {0};
        if (tdx_buf_append(&d, hdr[i], VH_SIZE) || tdx_buf_append(&d, v->dir.v, v->dir.n)) {
            tdx_vec_free(&d);
            return oom(b);
        }
        int rc = tdx_iwriter_section(w, TDX_SEC_VIEW_PROC + (uint32_t)i, d.v, d.n, &b->err);
        tdx_vec_free(&d);
        if (rc) return b->failed = 1, -1;
        st->items[i] = v->meta.n;
    }
    /* RANGES: u64 count, then per range: start, end, start time, end time, bytes (u64 each) and
     * the name (u64 length + bytes). */
    tdx_vrange *rs = NULL;
    size_t nr = 0;
    if (tdx_jsplit_finish(&b->split, &rs, &nr)) {
        free(rs);
        tdx_errf(&b->err, TDX_EINDEX, TDX_NO_OFFSET,
                 "internal error: the proc view's metadata differs from its size estimate");
        return b->failed = 1, -1;
    }
    tdx_buf r = {0};
    uint8_t x[8];
    tdx_le64(x, nr);
    int rc = tdx_buf_append(&r, x, 8);
    for (size_t i = 0; i < nr && !rc; i++) {
        uint64_t f[6] = {(uint64_t)rs[i].start, (uint64_t)rs[i].end, (uint64_t)rs[i].start_time,
                         (uint64_t)rs[i].end_time, rs[i].bytes, strlen(rs[i].name)};
        for (int k = 0; k < 6 && !rc; k++) {
            tdx_le64(x, f[k]);
            rc = tdx_buf_append(&r, x, 8);
        }
        if (!rc) rc = tdx_buf_append(&r, rs[i].name, f[5]);
    }
    free(rs);
    st->ranges = nr;
    if (rc || tdx_iwriter_section(w, TDX_SEC_RANGES, r.v, r.n, &b->err)) {
        tdx_vec_free(&r);
        return rc ? oom(b) : (b->failed = 1, -1);
    }
    r.n = 0;
    if (tdx_summary_save(&b->sum, &r) || b->sum.oom) {
        tdx_vec_free(&r);
        return oom(b);
    }
    if (tdx_iwriter_section(w, TDX_SEC_SUMMARY, r.v, r.n, &b->err)) {
        tdx_vec_free(&r);
        return b->failed = 1, -1;
    }
    r.n = 0;
    if (tdx_vgstore_save(&b->store, &r) || b->store.oom) {
        tdx_vec_free(&r);
        return oom(b);
    }
    rc = tdx_iwriter_section(w, TDX_SEC_VGSTORE, r.v, r.n, &b->err);
    tdx_vec_free(&r);
    if (rc) return b->failed = 1, -1;
    return 0;
}

static int run(vbuild *b, const tdx_viewbuild_opts *o, tdx_viewbuild_stats *st) {
    tdx_iwriter *w = b->w;
    uint64_t every = o->ckpt_events ? o->ckpt_events : TDX_CKPT_EVENTS_DEFAULT;
    size_t nblocks = tdx_iwriter_nblocks(w);
    uint64_t total = tdx_iwriter_nevents(w);
    tdx_event *evs = malloc(TDX_EVBLOCK_EVENTS * sizeof *evs);
    if (!evs) return oom(b);
    if (tdx_iwriter_stream_begin(w, TDX_SEC_VIEWDATA, &b->err)) {
        free(evs);
        return b->failed = 1, -1;
    }
    uint64_t idx = 0, k = 0;
    int rc = 0;
    for (size_t bi = 0; bi < nblocks && !rc; bi++) {
        size_t n;
        if (tdx_iwriter_read_block(w, bi, evs, &n, &b->err)) {
            rc = -1;
            b->failed = 1;
            break;
        }
        for (size_t i = 0; i < n && !rc; i++, idx++) {
            const tdx_event *e = &evs[i];
            if (idx == 0) b->t0 = e->time;
            if (idx % every == 0) rc = checkpoint(b, idx, e->time - b->t0, k++);
            if (!rc && tdx_summary_event(&b->sum, e, b->tabs)) rc = oom(b);
            if (!rc) rc = track(b, e);
            for (int vi = 0; vi < NVIEWS && !rc; vi++)
                if (tdx_viewgen_event(b->v[vi].vg, e, b->tabs)) rc = oom(b);
        }
        if (o->progress && (bi % 16 == 15 || bi + 1 == nblocks))
            o->progress(o->progress_ctx, idx, total, idx);
    }
    free(evs);
    if (rc) return -1;
    if (b->rerun_needed) return 1;
    uint8_t hdr[NVIEWS][VH_SIZE];
    if (finish_views(b, hdr)) return -1;
    if (tdx_iwriter_stream_end(w, &b->err)) return b->failed = 1, -1;
    st->checkpoints = k;
    st->state_bytes = b->state_bytes;
    return put_sections(b, hdr, st);
}

int tdx_viewbuild(tdx_iwriter *w, const tdx_viewbuild_opts *o, tdx_viewbuild_stats *st,
                  tdx_err *err) {
    memset(st, 0, sizeof *st);
    tdx_hmap resurrected = {0};
    for (;;) {
        vbuild *b = calloc(1, sizeof *b);
        if (!b) {
            tdx_hmap_free(&resurrected);
            return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        }
        b->resurrected = resurrected;
        int rc = vbuild_init(b, w);
        if (!rc) rc = run(b, o, st);
        resurrected = b->resurrected;
        if (rc < 0) *err = b->err;
        vbuild_free(b);
        free(b);
        if (rc <= 0 || st->reruns) {
            tdx_hmap_free(&resurrected);
            if (rc > 0) return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET, "internal error: view pass did not settle");
            return rc;
        }
        /* A goroutine id came back after it ended: redo the pass keeping those ids. The data
         * written so far stays in the file but is not referenced (the stream restarts). */
        st->reruns++;
        if (tdx_iwriter_stream_abandon(w, err)) {
            tdx_hmap_free(&resurrected);
            return -1;
        }
    }
}
