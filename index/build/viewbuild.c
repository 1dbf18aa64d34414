/* viewbuild.c: one pass of the proc, thread and goroutine generators (default options) over the
 * index's events, recording per view: checkpoints of the generator every ckpt_events events
 * (live goroutines only), the "long items" (viewer events an interval emits that reach back
 * before the interval's start: the only events a later interval contributes to an earlier
 * window), the state after the last event, and the frame tree. The proc view also feeds the
 * splitter, and Go's summary is computed beside it. Layout in viewsec.h and
 * docs/index-format.md.
 *
 * Four workers share the work, each a chain of its own over every event (the proc view and the
 * splitter; the thread and goroutine views; Go's summary and the MMU's inputs; Go's goroutine
 * statistics, profiles and region table). They run on up to -j threads, those sharing a
 * thread taking turns block by block. Each block is decoded once, by whichever worker gets to
 * it first, into a small ring all read (decoding is ~95 ns an event, a fifth of the phase).
 * Each writes its blobs to a scratch file of its own; the scratch files are appended to
 * VIEWDATA in worker order, so the index bytes do not depend on -j. The store of strings and
 * stacks is filled before the workers start and frozen, so they only read it and every id is
 * the same whatever the scheduling. */
#include "index/build/viewbuild.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/cputime.h"
#include "core/hmap.h"
#include "core/idset.h"
#include "core/mem.h"
#include "core/spec.h"
#include "index/format/evcodec.h"
#include "index/common/filevec.h"
#include "index/format/format.h"
#include "index/analysis/gostats.h"
#include "index/analysis/gsindex.h"
#include "index/views/jsonout.h"
#include "index/analysis/muinput.h"
#include "index/common/scratch.h"
#include "index/analysis/sumindex.h"
#include "index/analysis/sumspill.h"
#include "index/analysis/summary.h"
#include "index/views/vevser.h"
#include "index/views/viewgen.h"
#include "index/common/viewgen_ser.h"
#include "index/views/viewsec.h"

#define NVIEWS 3
#define NWORKERS TDX_VIEWBUILD_WORKERS
/* The workers, in the order their blobs go to VIEWDATA. */
enum { W_PROC, W_THREADS, W_SUMMARY, W_GOSTATS };

/* A long item's interval and earliest time (u64, i64 LE): in a scratch file, since there is one
 * per long item (1.9 M at 4 GiB); read back once at the end, META_READ at a time. */
#define META_SIZE 16
#define META_FLUSH (64u << 10)
#define META_READ 4096

struct worker;

typedef struct vview {
    struct worker *w;
    int view;
    tdx_vgtree tree;
    tdx_vgframes frames;
    tdx_viewgen *vg;
    tdx_buf items;       /* the current interval's long items */
    uint64_t nitems_int; /* and their number */
    tdx_scratch meta;    /* every long item's META_SIZE record, in order (fd -1 until one) */
    uint64_t nmeta;
    tdx_buf pend; /* the first half of an arrow or async slice */
    int64_t pend_ts;
    bool has_pend;
    tdx_buf dir; /* checkpoint records */
    /* Stop table of the current interval (proc and thread views): per entry, the least time
     * an event emitted from there reaches back to, before the suffix minimum is taken. */
    int64_t *stop;
    size_t nstop;
    tdx_buf stopbuf;
    uint8_t cur[CK_SIZE];
    bool have_cur;
    bool finishing;
    tdx_jsplit *split;
    uint8_t hdr[VH_SIZE];
    /* goroutine view: names of the goroutines forgotten, by id (an external sort: one per
     * goroutine that ended, so it grows with the trace) */
    tdx_xsort *dropped;
    int err;
} vview;

/* Decoded blocks every worker reads: block b lives in slot b % RING_SLOTS until all are done
 * with it. Whichever worker needs a block nobody has claimed yet decodes it, and a worker
 * whose block is still being decoded by another decodes the next one meanwhile, so the
 * decoding (a fifth of the phase) goes to whichever thread has time: the workers' own work is
 * uneven. */
#define RING_SLOTS 4
typedef struct ring {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    tdx_event *slot[RING_SLOTS];
    size_t n[RING_SLOTS];
    size_t blk[RING_SLOTS]; /* the block a slot holds or is being filled with */
    bool ready[RING_SLOTS]; /* and whether it is decoded */
    size_t claimed;         /* blocks [0, claimed) are decoded or being decoded */
    size_t nblocks;
    size_t pos[NWORKERS]; /* the block each worker is on (done with every earlier one) */
    bool stop;            /* a worker failed: nobody waits any more */
    bool single;          /* every worker on one thread: nobody may wait */
} ring;

/* What the workers share, read-only while they run. */
typedef struct shared {
    tdx_iwriter *iw;
    const tdx_gen *tabs;
    tdx_vgstore store;
    tdx_fnames_w names; /* every global frame's name, before the passes (read-only in them) */
    const tdx_viewbuild_opts *opts;
    uint64_t every[NVIEWS];      /* events between a view's checkpoints (at least) */
    bool per_goroutine;          /* the defaults: intervals also grow with the goroutines */
    const tdx_hmap *resurrected; /* ids that come back after ending: never forgotten */
    size_t sort_budget;          /* memory of each external sort */
    int64_t str_budget;          /* what the string table's mapped pages may grow by */
    uint64_t total;
    uint64_t view_events; /* the events the views see */
    pthread_mutex_t progress_mu;
    uint64_t done[NWORKERS];
    tdx_sumindex_cpu coder_cpu;
} shared;

typedef struct worker {
    shared *sh;
    ring *ring;
    bool peer_failed; /* stopped because the other worker failed (its error is the one) */
    int index;
    int nviews;
    vview v[2];
    bool summary; /* W_SUMMARY: Go's summary and the MMU's inputs */
    tdx_summary sum;
    tdx_sumspill spill;
    tdx_muin mu;      /* the mutator utilization's inputs (MUTIL) */
    tdx_gostats *gst; /* W_GOSTATS: Go's goroutine analysis (GSTATS, PPROF, REGIONS) */
    tdx_jsplit split;
    bool has_split;
    tdx_hmap alive;
    tdx_idset dead;
    tdx_hmap found; /* ids seen coming back (this pass must be redone keeping them) */
    int64_t t0, tk; /* first event's time; the current interval's start (elapsed) */
    uint64_t k;     /* the current interval */
    /* the stop-table entry of the event being processed, and its events before it */
    uint64_t stop_j, stop_pos, stop_every;
    uint64_t nck;
    uint64_t idx;     /* events processed */
    uint64_t every;   /* events between checkpoints (its views' intervals are equal: the thread
                         and goroutine views share a worker and a default) */
    uint64_t next_ck; /* the event the next checkpoint is taken before */
    tdx_buf scratch, blockbuf;
    tdx_rans_enc ckenc; /* codes the checkpoints (viewgen.h: its memory is reused) */
    /* for the blocks this worker decodes (made when it first does): with other threads reading
     * them, stored around the cache; on one thread, each is read at once from the cache */
    tdx_evdec *dec;
    tdx_scratch file; /* the scratch file of blobs */
    uint64_t state_bytes;
    int64_t mapped; /* file pages resident after the last release of the strings (worker 0) */
    /* CPU (tdx_viewbuild_stats): this worker's own and its decoding */
    int64_t cpu_own, cpu_decode;
    tdx_err err;
    int failed;
} worker;

static int oom(worker *w) {
    if (!w->failed) tdx_errf(&w->err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    w->failed = 1;
    return -1;
}

static bool resurrected(const worker *w, int64_t id) {
    return tdx_hmap_get(w->sh->resurrected, (uint64_t)id) != TDX_HMAP_EMPTY;
}

static bool keep_goroutine(void *ctx, int64_t id) {
    const worker *w = ctx;
    return tdx_hmap_get(&w->alive, (uint64_t)id) != TDX_HMAP_EMPTY || resurrected(w, id);
}

/* ---- the scratch file of blobs ---- */

static int scratch_failed(worker *w) {
    w->failed = 1;
    return -1;
}

static int put_blob(worker *w, const void *p, size_t n, uint8_t *ref) {
    tdx_le64(ref + BL_OFF, w->file.len);
    tdx_le64(ref + BL_LEN, n);
    tdx_le64(ref + BL_HASH, XXH3_64bits(p, n));
    return tdx_scratch_put(&w->file, p, n, &w->err) ? scratch_failed(w) : 0;
}

/* ---- the summary ---- */

/* Settled summary records leave memory at each generation boundary (index/analysis/sumspill.c). */
static int summarize(worker *w, const tdx_event *e) {
    if (e->kind == TDX_KIND_SYNC && w->sum.nevents &&
        tdx_sumspill_compact(&w->spill, &w->sum, &w->err)) {
        w->failed = 1;
        return -1;
    }
    return tdx_summary_event(&w->sum, e, w->sh->tabs) ? oom(w) : 0;
}

/* Go's summary and goroutine statistics see every event; the MMU's inputs, as the views, those
 * of a damaged trace up to its last Sync (nv of the n). */
static int analyze(worker *w, const tdx_event *evs, size_t nv, size_t n) {
    const tdx_gen *tabs = w->sh->tabs;
    if (w->gst) {
        for (size_t i = 0; i < n; i++)
            if (tdx_gostats_event(w->gst, &evs[i], tabs, &w->err)) {
                w->failed = 1;
                return -1;
            }
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (summarize(w, &evs[i])) return -1;
        if (i < nv && tdx_muin_event(&w->mu, &evs[i], tabs, &w->err)) {
            w->failed = 1;
            return -1;
        }
    }
    return 0;
}

/* ---- recording what the generators emit ---- */

/* The output index quiet generators see: below 1 always (worker_init). */
static const int64_t never_kept = 0;

static int rec_item(vview *v, const tdx_vev *ev, int64_t mintime) {
    worker *w = v->w;
    if (mintime >= w->tk) return 0;
    uint8_t m[META_SIZE];
    tdx_le64(m, w->k);
    tdx_le64(m + 8, (uint64_t)mintime);
    if ((v->meta.fd < 0 && tdx_scratch_open(&v->meta, tdx_iwriter_temp_path(w->sh->iw), &w->err)) ||
        tdx_scratch_put(&v->meta, m, sizeof m, &w->err) ||
        (v->meta.buf.n >= META_FLUSH && tdx_scratch_flush(&v->meta, &w->err))) {
        w->failed = 1; /* reported */
        return -1;
    }
    v->nmeta++;
    v->nitems_int++;
    if (v->has_pend) {
        v->has_pend = false;
        return tdx_buf_uvarint(&v->items, 2) || tdx_buf_append(&v->items, v->pend.v, v->pend.n) ||
                       tdx_vev_save(&v->items, ev)
                   ? -1
                   : 0;
    }
    return tdx_buf_uvarint(&v->items, 1) || tdx_vev_save(&v->items, ev) ? -1 : 0;
}

/* An emitted event's earliest time (a slice's ends can be in either order) into the stop table. */
static void stop_note(vview *v, const tdx_vev *ev) {
    const worker *w = v->w;
    int64_t t = ev->ts;
    if (ev->ph == 'X') {
        int64_t end = (int64_t)((uint64_t)ev->ts + (uint64_t)ev->dur);
        if (end < t) t = end;
    }
    if (w->stop_j < v->nstop && t < v->stop[w->stop_j]) v->stop[w->stop_j] = t;
}

/* The current interval's stop table (viewsec.h) as a blob; the table starts over. */
static int stop_blob(worker *w, vview *v) {
    tdx_buf *b = &v->stopbuf;
    b->n = 0;
    if (!v->stop) return put_blob(w, NULL, 0, v->cur + CK_STOP);
    int64_t low = INT64_MAX;
    for (size_t j = v->nstop; j-- > 0;) {
        if (v->stop[j] < low) low = v->stop[j];
        v->stop[j] = low;
    }
    uint64_t m = 0;
    while (m < v->nstop && v->stop[m] != INT64_MAX) m++;
    int rc = tdx_buf_uvarint(b, m);
    for (uint64_t j = 0; j < m && !rc; j++)
        rc = j ? tdx_buf_uvarint(b, (uint64_t)v->stop[j] - (uint64_t)v->stop[j - 1])
               : tdx_ser_i(b, (int64_t)((uint64_t)v->stop[0] - (uint64_t)w->tk));
    for (size_t j = 0; j < v->nstop; j++) v->stop[j] = INT64_MAX;
    if (rc) return oom(w);
    return put_blob(w, b->v, b->n, v->cur + CK_STOP);
}

static int rec_event(void *ctx, const tdx_vev *ev) {
    vview *v = ctx;
    if (v->split && tdx_jsplit_event(v->split, ev)) return v->err = 1, -1;
    if (ev->required || v->finishing) return 0;
    if (v->stop) stop_note(v, ev);
    int rc = 0;
    switch (ev->ph) {
    case 's':
    case 'b':
        v->pend.n = 0;
        rc = tdx_vev_save(&v->pend, ev);
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
    default:
        rc = rec_item(v, ev, ev->ts);
        break;
    }
    if (rc) v->err = 1;
    return rc;
}

/* Closes the current interval of the worker's views (their long items). */
static int close_interval(worker *w) {
    for (int i = 0; i < w->nviews; i++) {
        vview *v = &w->v[i];
        if (!v->have_cur) continue;
        tdx_le64(v->cur + CK_NITEMS, v->nitems_int);
        if (put_blob(w, v->items.v, v->items.n, v->cur + CK_ITEMS) || stop_blob(w, v)) return -1;
        if (tdx_buf_append(&v->dir, v->cur, CK_SIZE)) return oom(w);
        v->items.n = 0;
        v->nitems_int = 0;
        v->have_cur = false;
    }
    return 0;
}

/* A checkpoint saves every goroutine that exists, so a trace with hundreds of thousands of
 * them (a server's idle connections) would spend its time saving the same goroutines: with the
 * default spacing, an interval is also at least CK_EVENTS_PER_G events per goroutine, which
 * keeps the saving to a small share of the phase. A query restores the checkpoint's goroutines
 * anyway, so its replay of at most one interval stays in proportion. A spacing asked for
 * (--checkpoint-every) is kept as it is. */
#define CK_EVENTS_PER_G 4

/* Where the interval starting at idx ends, and stop tables long enough for it. */
static int plan_interval(worker *w, uint64_t idx) {
    uint64_t len = w->every, by_g = CK_EVENTS_PER_G * (uint64_t)w->alive.n;
    if (w->sh->per_goroutine && by_g > len) len = by_g;
    /* No interval reaches past the views' last event: a --checkpoint-every near 2^64 would
     * wrap idx + len, and the stop tables would be sized for events that never come. */
    uint64_t left = w->sh->view_events > idx ? w->sh->view_events - idx : 1;
    if (len > left) len = left;
    w->next_ck = idx + len;
    for (int i = 0; i < w->nviews; i++) {
        vview *v = &w->v[i];
        size_t need = (size_t)((len + w->stop_every - 1) / w->stop_every);
        if (!v->stop || need <= v->nstop) continue;
        int64_t *p = realloc(v->stop, need * sizeof *p);
        if (!p) return oom(w);
        for (size_t j = v->nstop; j < need; j++) p[j] = INT64_MAX;
        v->stop = p;
        v->nstop = need;
    }
    return 0;
}

static int checkpoint(worker *w, uint64_t idx, int64_t elapsed) {
    if (close_interval(w) || plan_interval(w, idx)) return -1;
    w->k = w->nck++;
    w->stop_j = w->stop_pos = 0;
    w->tk = elapsed;
    for (int i = 0; i < w->nviews; i++) {
        vview *v = &w->v[i];
        memset(v->cur, 0, sizeof v->cur);
        tdx_le64(v->cur + CK_EVENT, idx);
        tdx_le64(v->cur + CK_TIME, (uint64_t)elapsed);
        tdx_le64(v->cur + CK_NOPT, tdx_viewgen_counters_get(v->vg).optional);
        tdx_le64(v->cur + CK_FIRST_ITEM, v->nmeta);
        w->scratch.n = 0;
        if (tdx_viewgen_save_pruned(v->vg, &w->scratch, keep_goroutine, w, &w->ckenc))
            return oom(w);
        w->state_bytes += w->scratch.n;
        if (put_blob(w, w->scratch.v, w->scratch.n, v->cur + CK_STATE)) return -1;
        v->have_cur = true;
    }
    return 0;
}

/* Files a forgotten goroutine's lane name under its id (sorted when the names are written). */
static int drop_name(worker *w, vview *v, const tdx_vgname *nm) {
    if (!v->dropped &&
        !(v->dropped = tdx_xsort_new(tdx_iwriter_temp_path(w->sh->iw), w->sh->sort_budget)))
        return oom(w);
    uint8_t p[9];
    tdx_le32(p, nm->func);
    tdx_le32(p + 4, nm->label);
    p[8] = nm->named;
    if (tdx_xsort_add(v->dropped, (uint64_t)nm->id ^ TDX_XSORT_SIGN, 0, p, sizeof p, &w->err)) {
        w->failed = 1;
        return -1;
    }
    return 0;
}

/* Goroutines that exist: checkpoints keep them. An ended goroutine is forgotten by the
 * generators; an id coming back after it ended means the pass must be redone keeping that id
 * (Go's generator reuses the old state). Runs after the views saw the event. */
static int track(worker *w, const tdx_event *e) {
    if (e->kind != TDX_KIND_STATE_TRANSITION || e->res_kind != TDX_RES_GOROUTINE) return 0;
    int64_t id = e->res;
    if (e->to == TDX_GO_NOTEXIST) {
        tdx_hmap_del(&w->alive, (uint64_t)id);
        if (resurrected(w, id)) return 0;
        if (tdx_idset_add(&w->dead, id, NULL)) return oom(w);
        for (int i = 0; i < w->nviews; i++) {
            tdx_vgname nm;
            vview *v = &w->v[i];
            if (tdx_viewgen_drop(v->vg, id, &nm) && v->view == TDX_VIEW_GOROUTINE &&
                drop_name(w, v, &nm))
                return -1;
        }
        return 0;
    }
    if (tdx_idset_has(&w->dead, id) && !resurrected(w, id) &&
        tdx_hmap_put(&w->found, (uint64_t)id, 1))
        return oom(w);
    return tdx_hmap_put(&w->alive, (uint64_t)id, 1) ? oom(w) : 0;
}

/* ---- the final records ---- */

/* The lane names of the goroutines the final state leaves out (forgotten or pruned). */
static int names_blob(worker *w, vview *v, uint8_t *ref, uint64_t *count) {
    tdx_vgname *pr;
    size_t npr;
    if (tdx_viewgen_names(v->vg, keep_goroutine, w, &pr, &npr)) return oom(w);
    for (size_t i = 0; i < npr; i++)
        if (drop_name(w, v, &pr[i])) {
            free(pr);
            return -1;
        }
    free(pr);
    uint64_t n = v->dropped ? tdx_xsort_count(v->dropped) : 0;
    if (n && tdx_xsort_rewind(v->dropped, &w->err)) {
        w->failed = 1;
        return -1;
    }
    uint64_t ng = (n + TDX_NAMES_GROUP - 1) / TDX_NAMES_GROUP;
    tdx_buf data = {0}, out = {0};
    uint8_t x[8];
    int rc = 0, k = 1;
    tdx_le64(x, ng);
    rc |= tdx_buf_append(&out, x, 8);
    int64_t prev = 0;
    uint64_t i = 0;
    for (; i < n && !rc; i++) {
        tdx_xrec r;
        if ((k = tdx_xsort_next(v->dropped, &r, &w->err)) != 1 || r.n != 9) break;
        int64_t id = (int64_t)(r.k1 ^ TDX_XSORT_SIGN);
        if (i % TDX_NAMES_GROUP == 0) { /* a group: its first id, its data offset, its size */
            tdx_le64(x, (uint64_t)id);
            rc |= tdx_buf_append(&out, x, 8);
            tdx_le64(x, data.n);
            rc |= tdx_buf_append(&out, x, 8);
            rc |= tdx_buf_uvarint(&data, n - i < TDX_NAMES_GROUP ? n - i : TDX_NAMES_GROUP);
            prev = id;
        }
        rc |= tdx_ser_i(&data, (int64_t)((uint64_t)id - (uint64_t)prev));
        prev = id;
        rc |= tdx_buf_uvarint(&data, (uint64_t)tdx_rd32(r.p) << 1 | r.p[8]);
        rc |= tdx_buf_uvarint(&data, tdx_rd32(r.p + 4));
    }
    if (!rc && i != n) { /* the sort failed (err says why) or returned a bad record */
        tdx_vec_free(&data);
        tdx_vec_free(&out);
        if (k >= 0)
            tdx_errf(&w->err, TDX_EINDEX, TDX_NO_OFFSET, "internal error: a lane name was lost");
        w->failed = 1;
        return -1;
    }
    rc |= tdx_buf_append(&out, data.v, data.n);
    tdx_vec_free(&data);
    if (rc) {
        tdx_vec_free(&out);
        return oom(w);
    }
    *count = n;
    rc = put_blob(w, out.v, out.n, ref);
    tdx_vec_free(&out);
    return rc;
}

/* The first checkpoint whose time is after m (times are non-decreasing). */
static size_t first_after(const int64_t *T, size_t n, int64_t m) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (T[mid] > m)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The crossing lists: for checkpoint d, the long items emitted in intervals >= d that start
 * before T_d (a window ending before T_d needs exactly those from the rest of the trace). */
static int cross_blobs(worker *w, vview *v) {
    size_t nck = v->dir.n / CK_SIZE;
    int64_t *T = malloc((nck ? nck : 1) * sizeof *T);
    tdx_buf *lists = calloc(nck ? nck : 1, sizeof *lists);
    uint64_t *cnt = calloc(nck ? nck : 1, sizeof *cnt), *last = calloc(nck ? nck : 1, sizeof *last);
    if (!T || !lists || !cnt || !last) {
        free(lists);
        free(last);
        free(cnt);
        free(T);
        return oom(w);
    }
    int rc = 0;
    for (size_t d = 0; d < nck; d++) T[d] = (int64_t)tdx_rd64(v->dir.v + d * CK_SIZE + CK_TIME);
    if (v->nmeta && tdx_scratch_flush(&v->meta, &w->err)) rc = scratch_failed(w);
    /* one read of the items: each list's gaps, then its count goes in front */
    uint8_t buf[META_READ * META_SIZE];
    for (uint64_t j0 = 0; j0 < v->nmeta && !rc; j0 += META_READ) {
        size_t n = v->nmeta - j0 < META_READ ? (size_t)(v->nmeta - j0) : META_READ;
        if (tdx_scratch_read(&v->meta, j0 * META_SIZE, buf, n * META_SIZE, &w->err)) {
            rc = scratch_failed(w);
            break;
        }
        for (size_t i = 0; i < n && !rc; i++) {
            uint64_t j = j0 + i, interval = tdx_rd64(buf + i * META_SIZE);
            int64_t mintime = (int64_t)tdx_rd64(buf + i * META_SIZE + 8);
            for (size_t d = first_after(T, nck, mintime); d <= interval && d < nck && !rc; d++) {
                if (tdx_buf_uvarint(&lists[d], j - last[d])) rc = oom(w);
                last[d] = j;
                cnt[d]++;
            }
        }
    }
    tdx_buf blob = {0};
    for (size_t d = 0; d < nck && !rc; d++) {
        blob.n = 0;
        if (tdx_buf_uvarint(&blob, cnt[d]) || tdx_buf_append(&blob, lists[d].v, lists[d].n)) {
            rc = oom(w);
            break;
        }
        tdx_vec_free(&lists[d]);
        rc = put_blob(w, blob.v, blob.n, v->dir.v + d * CK_SIZE + CK_CROSS);
    }
    tdx_vec_free(&blob);
    for (size_t d = 0; d < nck; d++) tdx_vec_free(&lists[d]);
    free(lists);
    free(last);
    free(cnt);
    free(T);
    return rc;
}

static int finish_views(worker *w) {
    if (close_interval(w)) return -1;
    for (int i = 0; i < w->nviews; i++) {
        vview *v = &w->v[i];
        uint8_t *h = v->hdr;
        memset(h, 0, VH_SIZE);
        tdx_le64(h + VH_VIEW, (uint64_t)v->view);
        tdx_le64(h + VH_NCKPT, v->dir.n / CK_SIZE);
        tdx_le64(h + VH_NITEMS, v->nmeta);
        w->scratch.n = 0;
        if (tdx_viewgen_save_final(v->vg, &w->scratch, keep_goroutine, w, &w->ckenc)) return oom(w);
        if (put_blob(w, w->scratch.v, w->scratch.n, h + VH_FINAL)) return -1;
        uint64_t nn = 0;
        if (v->view == TDX_VIEW_GOROUTINE) {
            if (names_blob(w, v, h + VH_NAMES, &nn)) return -1;
        } else if (put_blob(w, NULL, 0, h + VH_NAMES)) {
            return -1;
        }
        tdx_le64(h + VH_NNAMES, nn);
        tdx_le64(h + VH_STOP_EVERY, v->stop ? w->stop_every : 0);
        tdx_le64(h + VH_NFRAMES_MAIN, tdx_vgtree_nframes(&v->tree));
        v->finishing = true;
        if (tdx_viewgen_finish(v->vg) || v->err || v->tree.oom) return oom(w);
        tdx_le64(h + VH_NOPT, tdx_viewgen_counters_get(v->vg).optional);
        w->scratch.n = 0;
        int rc = tdx_vgtree_save(&v->tree, &w->sh->names, &w->scratch);
        if (rc == -2) {
            if (!w->failed)
                tdx_errf(
                    &w->err, TDX_EINDEX, TDX_NO_OFFSET,
                    "internal error: a frame of the view has no name among the trace's frames");
            w->failed = 1;
            return -1;
        }
        if (rc) return oom(w);
        if (put_blob(w, w->scratch.v, w->scratch.n, h + VH_TREE)) return -1;
        if (cross_blobs(w, v)) return -1;
    }
    return tdx_scratch_flush(&w->file, &w->err) ? scratch_failed(w) : 0;
}

/* ---- a worker's pass ---- */

static void progress(worker *w, uint64_t done) {
    shared *sh = w->sh;
    if (!sh->opts->progress) return;
    pthread_mutex_lock(&sh->progress_mu);
    sh->done[w->index] = done;
    uint64_t sum = 0;
    for (int i = 0; i < NWORKERS; i++) sum += sh->done[i];
    sh->opts->progress(sh->opts->progress_ctx, sum, sh->total * NWORKERS, sum / NWORKERS);
    pthread_mutex_unlock(&sh->progress_mu);
}

static void ring_stop(ring *r) {
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* The events of block bi, from the ring (decoded here if nobody has yet). */
static int get_block(worker *w, size_t bi, const tdx_event **evs, size_t *n) {
    ring *r = w->ring;
    pthread_mutex_lock(&r->mu);
    r->pos[w->index] = bi; /* the slots of earlier blocks may be free now */
    pthread_cond_broadcast(&r->cv);
    for (;;) {
        if (r->stop) {
            pthread_mutex_unlock(&r->mu);
            w->failed = 1;
            w->peer_failed = true;
            return -1;
        }
        size_t s = bi % RING_SLOTS;
        if (bi < r->claimed && r->blk[s] == bi && r->ready[s]) {
            *evs = r->slot[s];
            *n = r->n[s];
            pthread_mutex_unlock(&r->mu);
            return 0;
        }
        size_t lo = r->pos[0];
        for (int k = 1; k < NWORKERS; k++)
            if (r->pos[k] < lo) lo = r->pos[k];
        size_t c = r->claimed;
        if (c < r->nblocks && c < lo + RING_SLOTS) {
            size_t cs = c % RING_SLOTS;
            r->claimed++;
            r->blk[cs] = c;
            r->ready[cs] = false;
            pthread_mutex_unlock(&r->mu);
            size_t got = 0;
            int64_t t0 = tdx_thread_cpu_ns();
            int rc = 0;
            if (!w->dec) { /* (workers that always follow another on its thread never decode) */
                if ((w->dec = tdx_evdec_new()))
                    tdx_evdec_set_streaming(w->dec, !r->single);
                else
                    rc = tdx_errf(&w->err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
            }
            if (!rc)
                rc = tdx_iwriter_read_block(w->sh->iw, w->dec, c, &w->blockbuf, r->slot[cs], &got,
                                            &w->err);
            w->cpu_decode += tdx_thread_cpu_ns() - t0;
            pthread_mutex_lock(&r->mu);
            if (rc) {
                r->stop = true;
                pthread_cond_broadcast(&r->cv);
                pthread_mutex_unlock(&r->mu);
                w->failed = 1;
                return -1;
            }
            r->n[cs] = got;
            r->ready[cs] = true;
            pthread_cond_broadcast(&r->cv);
            continue;
        }
        if (r->single) { /* cannot happen: the workers on one thread are a block apart at most */
            r->stop = true;
            pthread_mutex_unlock(&r->mu);
            tdx_errf(&w->err, TDX_EINDEX, TDX_NO_OFFSET, "internal error: the block ring stalled");
            w->failed = 1;
            return -1;
        }
        pthread_cond_wait(&r->cv, &r->mu);
    }
}

/* The string table's pages go back to the page cache (a later read takes them from there) once
 * the process's mapped file pages grew by the budget since the last release. Log messages are
 * often drawn from a pool spread over the table, whose pages fault in again after each release:
 * giving them back every 16 blocks, as before, cost the 4 GiB bench trace's views 152-184 s against
 * 128 s now (the phase's RSS 194 -> 278 MiB, below the build's peak). Where the size cannot be
 * read, still every 16 blocks. */
static void release_strings(worker *w) {
    int64_t now = tdx_fvec_resident();
    if (now >= 0 && w->mapped >= 0 && now - w->mapped < w->sh->str_budget) return;
    tdx_iwriter_release_tables(w->sh->iw);
    w->mapped = tdx_fvec_resident();
}

/* Runs w's generators over block bi's n events. */
static int worker_block(worker *w, size_t bi, size_t nblocks, const tdx_event *evs, size_t n) {
    shared *sh = w->sh;
    int rc = 0;
    uint64_t idx = w->idx;
    /* The views read events [0, nv); past a damaged trace's last Sync only Go's analyses do. */
    uint64_t left = idx < sh->view_events ? sh->view_events - idx : 0;
    size_t nv = left < n ? (size_t)left : n;
    if (!w->nviews) {
        rc = analyze(w, evs, nv, n);
        w->idx = idx + n;
        if (bi % 16 == 15 || bi + 1 == nblocks) progress(w, w->idx);
        return rc;
    }
    for (size_t i = 0; i < nv && !rc; i++, idx++) {
        const tdx_event *e = &evs[i];
        if (idx == 0) w->t0 = e->time;
        if (idx == w->next_ck) {
            rc = checkpoint(w, idx, e->time - w->t0);
        } else if (++w->stop_pos == w->stop_every) { /* (no division per emitted event) */
            w->stop_j++;
            w->stop_pos = 0;
        }
        for (int vi = 0; vi < w->nviews && !rc; vi++)
            if (tdx_viewgen_event(w->v[vi].vg, e, sh->tabs)) rc = oom(w);
        if (!rc) rc = track(w, e);
    }
    idx += n - nv;
    w->idx = idx;
    if (bi % 16 == 15 || bi + 1 == nblocks) progress(w, idx);
    if (w->index == 0 && bi % 16 == 15) release_strings(w);
    return rc;
}

/* After the last block (or a failure, rc -1): 0, 1 when the pass must be redone, or -1. */
static int worker_end(worker *w, int rc) {
    /* A failure frees the other worker; success needs no last release (nothing is decoded after
     * the last block). */
    if (rc) ring_stop(w->ring);
    if (rc) return -1;
    if (w->found.n) return 1; /* the pass will be redone: no need to finish */
    int64_t t0 = tdx_thread_cpu_ns();
    rc = finish_views(w);
    w->cpu_own += tdx_thread_cpu_ns() - t0;
    return rc;
}

/* worker_block, its CPU counted as the worker's own. */
static int worker_block_timed(worker *w, size_t bi, size_t nblocks, const tdx_event *evs,
                              size_t n) {
    int64_t t0 = tdx_thread_cpu_ns();
    int rc = worker_block(w, bi, nblocks, evs, n);
    w->cpu_own += tdx_thread_cpu_ns() - t0;
    return rc;
}

/* The workers one thread runs, taking turns block by block, so that each block is decoded once
 * for all of them (into the ring, by the first; the others never wait for it). */
typedef struct group {
    worker *w[NWORKERS];
    int n;
    int64_t cpu; /* the thread's whole CPU (a thread of its own) */
} group;

static void group_run(group *g) {
    size_t nblocks = tdx_iwriter_nblocks(g->w[0]->sh->iw);
    int rc[NWORKERS] = {0}, live = g->n;
    for (size_t bi = 0; bi < nblocks && live; bi++) {
        for (int k = 0; k < g->n; k++) {
            if (rc[k]) continue;
            worker *w = g->w[k];
            size_t n;
            const tdx_event *evs;
            rc[k] = get_block(w, bi, &evs, &n) ? -1 : worker_block_timed(w, bi, nblocks, evs, n);
            if (rc[k]) {
                ring_stop(w->ring); /* the others stop at their next block */
                live--;
            }
        }
    }
    for (int k = 0; k < g->n; k++)
        if (worker_end(g->w[k], rc[k]) < 0 && !g->w[k]->failed) oom(g->w[k]);
}

/* A group on a thread of its own, whose whole CPU is noted. */
static void *group_thread(void *arg) {
    group *g = arg;
    group_run(g);
    g->cpu = tdx_thread_cpu_ns();
    return NULL;
}

/* Frees what the views held once their records are written. */
static void views_free(worker *w) {
    for (int i = 0; i < w->nviews; i++) {
        vview *v = &w->v[i];
        tdx_viewgen_free(v->vg);
        v->vg = NULL;
        tdx_vgtree_free(&v->tree);
        tdx_vec_free(&v->items);
        tdx_scratch_close(&v->meta);
        tdx_vec_free(&v->pend);
        tdx_vec_free(&v->dir);
        free(v->stop);
        v->stop = NULL;
        tdx_vec_free(&v->stopbuf);
        tdx_xsort_free(v->dropped);
        v->dropped = NULL;
    }
    if (w->has_split) tdx_jsplit_free(&w->split);
    w->has_split = false;
}

static void worker_free(worker *w) {
    views_free(w);
    if (w->summary) {
        tdx_summary_free(&w->sum);
        tdx_sumspill_free(&w->spill);
        tdx_muin_free(&w->mu);
    }
    tdx_gostats_free(w->gst);
    tdx_hmap_free(&w->alive);
    tdx_hmap_free(&w->found);
    tdx_idset_free(&w->dead);
    tdx_vec_free(&w->scratch);
    tdx_vec_free(&w->blockbuf);
    tdx_rans_enc_free(&w->ckenc);
    tdx_evdec_free(w->dec);
    tdx_scratch_close(&w->file);
}

static int worker_init(worker *w, shared *sh, int index) {
    memset(w, 0, sizeof *w);
    tdx_rans_enc_init(&w->ckenc);
    w->sh = sh;
    w->index = index;
    w->file.fd = -1;
    if (index == 0) w->mapped = tdx_fvec_resident(); /* only worker 0 gives strings back */
    static const int views[NWORKERS][2] = {
        {TDX_VIEW_PROC, -1}, {TDX_VIEW_THREAD, TDX_VIEW_GOROUTINE}, {-1, -1}, {-1, -1}};
    if (index == W_SUMMARY) {
        w->summary = true;
        tdx_summary_init(&w->sum, &sh->store);
        tdx_muin_init(&w->mu, tdx_iwriter_temp_path(sh->iw));
        if (tdx_sumspill_init(&w->spill, tdx_iwriter_temp_path(sh->iw), sh->sort_budget))
            return oom(w);
    } else if (index == W_GOSTATS) {
        if (!(w->gst = tdx_gostats_new(tdx_iwriter_temp_path(sh->iw), sh->sort_budget)))
            return oom(w);
        tdx_gostats_profile(w->gst); /* stack ids: the index's (sh->tabs) */
    }
    for (int i = 0; i < 2 && views[index][i] >= 0; i++) {
        vview *v = &w->v[w->nviews++];
        v->w = w;
        v->meta.fd = -1;
        v->view = views[index][i];
        w->every = sh->every[v->view];
        tdx_vgtree_init(&v->tree, &sh->store);
        v->frames = tdx_vgtree_frames(&v->tree);
        tdx_viewgen_opts o;
        tdx_viewgen_opts_default(&o);
        o.view = v->view;
        v->vg = tdx_viewgen_new(&o, &sh->store, &v->frames, rec_event, v);
        if (!v->vg) return oom(w);
        /* Only the splitter measures what an instant says: elsewhere rec_event keeps nothing of
         * one (it starts at or after its interval's checkpoint, so it is never a long item), and
         * the generator may leave log texts unread. At 4 GiB, reading them (through the string
         * table's given-back pages) was 7-10% of this phase (perf). */
        if (v->view != TDX_VIEW_PROC) tdx_viewgen_set_quiet(v->vg, &never_kept, 1);
        /* Time windows use the proc and thread views (the goroutine view's are Go's own). */
        if (v->view != TDX_VIEW_GOROUTINE) {
            w->stop_every = w->every / 16;
            if (w->stop_every > TDX_STOP_EVERY_MAX) w->stop_every = TDX_STOP_EVERY_MAX;
            if (!w->stop_every) w->stop_every = 1;
            uint64_t first = w->every < sh->view_events ? w->every : sh->view_events;
            v->nstop = (size_t)(first / w->stop_every + 1); /* plan_interval grows it */
            if (!(v->stop = malloc(v->nstop * sizeof *v->stop))) return oom(w);
            for (size_t j = 0; j < v->nstop; j++) v->stop[j] = INT64_MAX;
        }
        if (v->view == TDX_VIEW_PROC) {
            /* The proc view's metadata depends only on its largest proc id, so the ranges are
             * cut online (cmd/trace's splitter, measuring exactly as it measures). */
            uint64_t nmeta, meta_bytes;
            if (tdx_viewgen_proc_meta_size(tdx_iwriter_max_proc(sh->iw), &nmeta, &meta_bytes))
                return oom(w);
            tdx_jsplit_init_online(&w->split, &v->frames, TDX_SPLIT_MAX,
                                   tdx_jsplit_required_size(nmeta, meta_bytes));
            w->has_split = true;
            v->split = &w->split;
        }
    }
    return tdx_scratch_open(&w->file, tdx_iwriter_temp_path(sh->iw), &w->err) ? scratch_failed(w)
                                                                              : 0;
}

/* ---- the phase ---- */

/* Every string and stack the pass can look up, in a fixed order, before the store is frozen:
 * the global tables (ids shared with the index), stop-the-world range names, the generator's
 * constant names. */
static int preload(shared *sh) {
    tdx_vgstore *st = &sh->store;
    if (tdx_vgstore_init(st)) return -1;
    if (tdx_vgstore_set_ident(st, sh->tabs)) return -1;
    static const char *const names[] = {"syscall", "GC mark assist", "GC concurrent mark phase",
                                        "GC incremental sweep"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        tdx_vgstore_intern(st, names[i], strlen(names[i]));
    const uint32_t *stw;
    size_t nstw;
    tdx_iwriter_stw_strings(sh->iw, &stw, &nstw);
    for (size_t i = 0; i < nstw; i++) {
        tdx_event e;
        memset(&e, 0, sizeof e);
        e.type = TDX_EV_STW_BEGIN;
        e.str[0] = stw[i];
        char buf[1200];
        int n = tdx_range_name(&e, sh->tabs, buf, sizeof buf);
        if (n < 0) n = 0;
        if ((size_t)n >= sizeof buf) n = (int)sizeof buf - 1;
        tdx_vgstore_intern(st, buf, (size_t)n);
    }
    if (st->oom) return -1;
    tdx_vgstore_freeze(st);
    /* The names frames print, one per global frame (ident string ids are the store's). */
    tdx_fnames_w_init(&sh->names);
    for (size_t i = 0; i < sh->tabs->frames.n; i++)
        if (tdx_fnames_w_add(&sh->names, st, sh->tabs->frames.v[i].func,
                             sh->tabs->frames.v[i].line))
            return -1;
    return 0;
}

static int put_stream(void *iw, const void *p, size_t n, tdx_err *err) {
    uint64_t at;
    return tdx_iwriter_stream_put(iw, p, n, &at, err);
}

/* Appends the workers' scratch files to VIEWDATA and rebases their blob references. */
static int append_data(shared *sh, worker *ws, tdx_err *err) {
    tdx_iwriter *iw = sh->iw;
    if (tdx_iwriter_stream_begin(iw, TDX_SEC_VIEWDATA, err)) return -1;
    uint64_t base = 0;
    for (int wi = 0; wi < NWORKERS; wi++) {
        worker *w = &ws[wi];
        if (tdx_scratch_copy(&w->file, put_stream, iw, err)) return -1;
        for (int i = 0; i < w->nviews; i++) {
            vview *v = &w->v[i];
            uint8_t *refs[3] = {v->hdr + VH_TREE, v->hdr + VH_FINAL, v->hdr + VH_NAMES};
            for (int r = 0; r < 3; r++)
                tdx_le64(refs[r] + BL_OFF, tdx_rd64(refs[r] + BL_OFF) + base);
            for (size_t d = 0; d < v->dir.n / CK_SIZE; d++)
                for (int r = 0; r < CK_BLOBS; r++) {
                    uint8_t *ref = v->dir.v + d * CK_SIZE + CK_STATE + (size_t)r * BL_SIZE;
                    tdx_le64(ref + BL_OFF, tdx_rd64(ref + BL_OFF) + base);
                }
        }
        base += w->file.len;
    }
    return tdx_iwriter_stream_end(iw, err);
}

static int put_sections(shared *sh, worker *ws, tdx_viewbuild_stats *st, tdx_err *err) {
    tdx_iwriter *iw = sh->iw;
    vview *byview[NVIEWS] = {0};
    for (int wi = 0; wi < NWORKERS; wi++)
        for (int i = 0; i < ws[wi].nviews; i++) byview[ws[wi].v[i].view] = &ws[wi].v[i];
    for (int i = 0; i < NVIEWS; i++) {
        vview *v = byview[i];
        if (!v) /* the workers share out all the views between them */
            return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET, "internal error: view %d not built", i);
        tdx_buf d = {0};
        if (tdx_buf_append(&d, v->hdr, VH_SIZE) || tdx_buf_append(&d, v->dir.v, v->dir.n)) {
            tdx_vec_free(&d);
            return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        }
        int rc = tdx_iwriter_section(iw, TDX_SEC_VIEW_PROC + (uint32_t)i, d.v, d.n, err);
        tdx_vec_free(&d);
        if (rc) return -1;
        st->items[i] = v->nmeta;
    }
    worker *w0 = &ws[W_PROC], *wsum = &ws[W_SUMMARY], *wg = &ws[W_GOSTATS];
    /* RANGES: u64 count, then per range: start, end, start time, end time, bytes (u64 each) and
     * the name (u64 length + bytes). */
    tdx_vrange *rs = NULL;
    size_t nr = 0;
    if (tdx_jsplit_finish(&w0->split, &rs, &nr)) {
        free(rs);
        return tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET,
                        "internal error: the proc view's metadata differs from its size estimate");
    }
    tdx_buf r = {0}, nodes = {0};
    uint8_t x[8];
    tdx_le64(x, nr);
    int rc = tdx_buf_append(&r, x, 8);
    for (size_t i = 0; i < nr && !rc; i++) {
        uint64_t f[6] = {(uint64_t)rs[i].start,    (uint64_t)rs[i].end, (uint64_t)rs[i].start_time,
                         (uint64_t)rs[i].end_time, rs[i].bytes,         strlen(rs[i].name)};
        for (int k = 0; k < 6 && !rc; k++) {
            tdx_le64(x, f[k]);
            rc = tdx_buf_append(&r, x, 8);
        }
        if (!rc) rc = tdx_buf_append(&r, rs[i].name, f[5]);
    }
    free(rs);
    st->ranges = nr;
    if (rc) goto oom;
    if (tdx_iwriter_section(iw, TDX_SEC_RANGES, r.v, r.n, err)) goto fail;
    /* The generators' state is not needed any more: free it before the summary is sorted and
     * coded, the phase's last peak. */
    for (int wi = 0; wi < NWORKERS; wi++) views_free(&ws[wi]);
    /* So are the strings the views read (4 GiB trace: 125 MiB of their pages still mapped). */
    tdx_iwriter_release_tables(iw);
    /* SUMMARY is blocked: a query checks only the blocks it reads (index/analysis/sumindex.c). */
    r.n = 0;
    if (wsum->sum.oom) goto oom;
    if (tdx_sumspill_put_all(&wsum->spill, &wsum->sum, err)) goto fail;
    tdx_summary_free(&wsum->sum); /* all of it is in the sorts now; the writer needs only t0 */
    if (tdx_iwriter_stream_begin(iw, TDX_SEC_SUMMARY, err) ||
        tdx_sumindex_write(&wsum->spill, &wsum->sum, tdx_iwriter_temp_path(iw), sh->opts->jobs > 1,
                           put_stream, iw, sh->opts->tail_progress, sh->opts->tail_progress_ctx,
                           &sh->coder_cpu, err) ||
        tdx_iwriter_stream_end(iw, err))
        goto fail;
    /* GSTATS: the goroutine analysis, regrouped by name (index/analysis/gsindex.c). */
    if (tdx_gostats_finish(wg->gst, err) || tdx_iwriter_stream_begin(iw, TDX_SEC_GSTATS, err) ||
        tdx_gsindex_write(wg->gst, tdx_iwriter_temp_path(iw), sh->sort_budget, put_stream, iw,
                          err) ||
        tdx_iwriter_stream_end(iw, err))
        goto fail;
    /* PPROF: the four profiles, summed per stack as the events went by (index/analysis/goprof.c).
     */
    r.n = 0;
    if (tdx_gostats_profiles_encode(wg->gst, &r)) goto oom;
    if (tdx_iwriter_section(iw, TDX_SEC_PPROF, r.v, r.n, err)) goto fail;
    /* REGIONS: the user region table (index/analysis/regstats.c). */
    r.n = 0;
    if (tdx_gostats_regions_encode(wg->gst, &r)) goto oom;
    if (tdx_iwriter_section(iw, TDX_SEC_REGIONS, r.v, r.n, err)) goto fail;
    /* MUTIL: what the mutator utilization is computed from (index/analysis/muinput.c). */
    if (tdx_iwriter_stream_begin(iw, TDX_SEC_MUTIL, err) ||
        tdx_muin_write(&wsum->mu, put_stream, iw, err) || tdx_iwriter_stream_end(iw, err))
        goto fail;
    r.n = 0;
    if (tdx_vgstore_save(&sh->store, &r, &nodes)) goto oom;
    if (tdx_iwriter_section(iw, TDX_SEC_VGSTORE, r.v, r.n, err) ||
        tdx_iwriter_section(iw, TDX_SEC_VGNODES, nodes.v, nodes.n, err))
        goto fail;
    r.n = 0;
    if (tdx_fnames_w_finish(&sh->names, &r)) goto oom;
    if (tdx_iwriter_section(iw, TDX_SEC_FNAMES, r.v, r.n, err)) goto fail;
    tdx_vec_free(&nodes);
    tdx_vec_free(&r);
    return 0;
oom:
    tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
fail:
    tdx_vec_free(&nodes);
    tdx_vec_free(&r);
    return -1;
}

/* One pass; returns 1 when it must be redone keeping the ids it added to *found. */
static int pass(shared *sh, int jobs, tdx_hmap *found, tdx_viewbuild_stats *st, tdx_err *err) {
    worker ws[NWORKERS];
    int rc = 0, inited = 0;
    for (; inited < NWORKERS && !rc; inited++)
        if (worker_init(&ws[inited], sh, inited)) {
            *err = ws[inited].err;
            rc = -1;
        }
    ring rg;
    memset(&rg, 0, sizeof rg);
    for (int i = 0; i < RING_SLOTS && !rc; i++)
        if (!(rg.slot[i] = malloc(TDX_EVBLOCK_EVENTS * sizeof *rg.slot[i])))
            rc = tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    pthread_mutex_init(&rg.mu, NULL);
    pthread_cond_init(&rg.cv, NULL);
    for (int i = 0; i < inited; i++) ws[i].ring = &rg;
    rg.nblocks = tdx_iwriter_nblocks(sh->iw);
    group gs[NWORKERS];
    memset(gs, 0, sizeof gs);
    int started = 1;
    if (!rc) {
        /* The thread of each worker, for 1-4 threads. With two, the thread and goroutine views
         * have one to themselves: about half the phase with the decoding it leaves to them
         * (and the analyses allocate on the calling thread, as they did before there were
         * four workers: the phase's peak RSS stays the same). */
        static const int on[NWORKERS][NWORKERS] = {
            {0, 0, 0, 0}, {0, 1, 0, 0}, {0, 1, 2, 2}, {0, 1, 2, 3}};
        int nt = jobs < 1 ? 1 : jobs > NWORKERS ? NWORKERS : jobs;
        for (int i = 0; i < NWORKERS; i++) {
            group *g = &gs[on[nt - 1][i]];
            g->w[g->n++] = &ws[i];
        }
        pthread_t th[NWORKERS];
        for (; started < nt; started++)
            if (pthread_create(&th[started], NULL, group_thread, &gs[started])) break;
        for (int i = started; i < nt; i++) /* threads that could not start: this one runs theirs */
            for (int k = 0; k < gs[i].n; k++) gs[0].w[gs[0].n++] = gs[i].w[k];
        if (started == 1) rg.single = true; /* no other thread exists: nobody may wait */
        group_run(&gs[0]);
        for (int i = 1; i < started; i++) pthread_join(th[i], NULL);
        /* the error is the one of a worker that did not stop only because another did */
        for (int i = 0; i < NWORKERS && !rc; i++)
            if (ws[i].failed && !ws[i].peer_failed) {
                *err = ws[i].err;
                rc = -1;
            }
    }
    pthread_mutex_destroy(&rg.mu);
    pthread_cond_destroy(&rg.cv);
    for (int i = 0; i < RING_SLOTS; i++) free(rg.slot[i]);
    if (!rc && sh->store.misses)
        rc = tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET,
                      "internal error: the viewer store missed %llu lookups",
                      (unsigned long long)sh->store.misses);
    if (!rc) {
        for (int i = 0; i < NWORKERS; i++)
            for (size_t k = 0; ws[i].found.n && k <= ws[i].found.mask; k++)
                if (ws[i].found.vals[k] != TDX_HMAP_EMPTY &&
                    tdx_hmap_put(found, ws[i].found.keys[k], 1))
                    rc = tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        if (!rc && found->n) rc = 1;
    }
    for (int i = 0; i < inited; i++) {
        st->cpu_worker_ns[i] += ws[i].cpu_own;
        st->cpu_decode_ns += ws[i].cpu_decode;
    }
    for (int i = 1; i < started; i++) st->cpu_threads_ns[i] += gs[i].cpu;
    if (!rc) {
        st->state_bytes = 0;
        for (int i = 0; i < NWORKERS; i++) {
            for (int k = 0; k < ws[i].nviews; k++) st->checkpoints[ws[i].v[k].view] = ws[i].nck;
            st->state_bytes += ws[i].state_bytes;
        }
        if (sh->opts->tail_progress) sh->opts->tail_progress(sh->opts->tail_progress_ctx, 0, 1);
        int64_t t0 = tdx_thread_cpu_ns();
        sh->coder_cpu = (tdx_sumindex_cpu){0, 0};
        rc = append_data(sh, ws, err);
        if (!rc) rc = put_sections(sh, ws, st, err);
        st->cpu_tail_ns += tdx_thread_cpu_ns() - t0;
        st->cpu_coder_ns += sh->coder_cpu.code_ns;
        st->cpu_coder_thread_ns += sh->coder_cpu.thread_ns;
    }
    for (int i = 0; i < inited; i++) worker_free(&ws[i]);
    return rc;
}

int tdx_viewbuild(tdx_iwriter *iw, const tdx_viewbuild_opts *o, tdx_viewbuild_stats *st,
                  tdx_err *err) {
    memset(st, 0, sizeof *st);
    if (tdx_iwriter_end_events(iw, err)) return -1;
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.iw = iw;
    sh.opts = o;
    for (int i = 0; i < NVIEWS; i++)
        sh.every[i] = o->ckpt_events       ? o->ckpt_events
                      : i == TDX_VIEW_PROC ? TDX_CKPT_EVENTS_PROC
                                           : TDX_CKPT_EVENTS_OTHER;
    sh.per_goroutine = !o->ckpt_events;
    sh.total = tdx_iwriter_nevents(iw);
    sh.view_events = o->view_events && o->view_events < sh.total ? o->view_events : sh.total;
    uint64_t tsize = tdx_iwriter_trace_size(iw), sb = tsize / 256;
    sb = sb < TDX_SORT_BUDGET_MIN   ? TDX_SORT_BUDGET_MIN
         : sb > TDX_SORT_BUDGET_MAX ? TDX_SORT_BUDGET_MAX
                                    : sb;
    sh.sort_budget = o->sort_budget ? o->sort_budget : (size_t)sb;
    sh.str_budget = (int64_t)tdx_fvec_budget(tdx_iwriter_trace_size(iw));
    sh.tabs = tdx_iwriter_tables(iw);
    if (!sh.tabs) {
        *err = *tdx_iwriter_error(iw);
        return -1;
    }
    if (preload(&sh)) {
        tdx_fnames_w_free(&sh.names);
        tdx_vgstore_free(&sh.store);
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    }
    pthread_mutex_init(&sh.progress_mu, NULL);
    tdx_hmap keep = {0}, found = {0};
    sh.resurrected = &keep;
    int rc;
    for (;;) {
        rc = pass(&sh, o->jobs, &found, st, err);
        if (rc <= 0) break;
        if (st->reruns) {
            rc = tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET,
                          "internal error: the view pass did not settle");
            break;
        }
        /* A goroutine id came back after it ended: redo the pass keeping those ids. */
        st->reruns++;
        rc = 0;
        for (size_t k = 0; k <= found.mask && !rc; k++)
            if (found.vals[k] != TDX_HMAP_EMPTY && tdx_hmap_put(&keep, found.keys[k], 1))
                rc = tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        tdx_hmap_clear(&found);
        if (rc) break;
    }
    tdx_hmap_free(&keep);
    tdx_hmap_free(&found);
    pthread_mutex_destroy(&sh.progress_mu);
    tdx_fnames_w_free(&sh.names);
    tdx_vgstore_free(&sh.store);
    return rc;
}
