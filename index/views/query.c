/* query.c: a query restores the generator from the checkpoint nearest before what it asks for,
 * replays the events from there, and ends with the state stored after the last event:
 *
 *  - output-index ranges (proc and thread views): the last checkpoint whose count of optional
 *    events is at most `start`; replay until the count passes `end`;
 *  - time windows [A, B] (goroutine and task views, --range): the last checkpoint before A
 *    (nothing emitted before it can reach A, since the generator never emits times later than
 *    the event it is processing); replay up to the first checkpoint d after B; then the long
 *    items that cross d (events emitted later that start before it); arrows and async slices
 *    are numbered from 1 as a run over the whole trace would number those inside the window.
 *
 * Either way the Finish, task lanes and metadata come from the final state with the query's
 * options, so the document is the one the whole generation would produce. */
#include "index/views/query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checksum.h"
#include "index/format/evcodec.h"
#include "index/format/evpipe.h"
#include "index/format/format.h"
#include "index/analysis/sumindex.h"
#include "index/analysis/summary.h"
#include "index/views/viewgen.h"
#include "index/common/viewgen_ser.h"
#include "index/views/viewgen_store.h"
#include "index/views/viewsec.h"

#define REBUILD "rebuild it with `traceidx build`"

typedef struct qctx {
    tdx_index *ix;
    tdx_err *err;
    tdx_vgstore store;
    tdx_vgtree tree;
    tdx_vgframes frames;
    tdx_summary sum;
    bool have_sum;
    const uint8_t *dir; /* the view's directory */
    uint64_t nck;
    const uint8_t *data; /* VIEWDATA */
    uint64_t datalen;
    uint64_t dir_off; /* file offset of the directory (for messages) */
    char dir_what[48];
    tdx_viewgen_resolved res;
} qctx;

static int damaged(qctx *q, uint64_t off, const char *what) {
    return tdx_errf(q->err, TDX_EINDEX, off,
                    "index %s is corrupt (checksum or structure mismatch): " REBUILD, what);
}

static int oom(qctx *q) {
    return tdx_errf(q->err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

/* A blob of VIEWDATA through its reference (bounds and hash checked). */
static int blob(qctx *q, const uint8_t *ref, const uint8_t **p, size_t *n) {
    uint64_t off = tdx_rd64(ref + BL_OFF), len = tdx_rd64(ref + BL_LEN);
    uint64_t base = q->ix->sec[TDX_SEC_VIEWDATA].off;
    *p = NULL; /* set on every path: callers read them only on success, but -O3 cannot tell */
    *n = 0;
    if (off > q->datalen || len > q->datalen - off) return damaged(q, base, "section VIEWDATA");
    if (!tdx_checksum_ok(q->data + off, (size_t)len, tdx_rd64(ref + BL_HASH)))
        return damaged(q, base + off, "section VIEWDATA");
    *p = q->data + off;
    *n = (size_t)len;
    return 0;
}

static const uint8_t *ck(const qctx *q, uint64_t k) {
    return q->dir + VH_SIZE + k * CK_SIZE;
}
static int64_t ck_time(const qctx *q, uint64_t k) {
    return (int64_t)tdx_rd64(ck(q, k) + CK_TIME);
}

/* The viewer store (strings, stack keys; its stack nodes only if load_tree needs them) and
 * VIEWDATA. */
static int load_store(qctx *q) {
    uint64_t len;
    const uint8_t *p = tdx_index_section(q->ix, TDX_SEC_VGSTORE, &len, q->err);
    if (!p) return -1;
    if (tdx_vgstore_load(&q->store, p, (size_t)len, &q->ix->tabs, q->err))
        return q->err->kind == TDX_EINDEX
                   ? damaged(q, q->ix->sec[TDX_SEC_VGSTORE].off, "section VGSTORE")
                   : -1;
    /* The stack nodes are checked and read only if the frame tree numbers a new frame (a task
     * query's own; the saved tree holds every other frame a query prints). */
    const tdx_isection *ns = &q->ix->sec[TDX_SEC_VGNODES];
    if (!ns->present) {
        tdx_index_section(q->ix, TDX_SEC_VGNODES, &len, q->err); /* names the missing section */
        return -1;
    }
    tdx_vgstore_defer_nodes(&q->store, q->ix->data + ns->off, (size_t)ns->len, ns->hash);
    q->data = tdx_index_section(q->ix, TDX_SEC_VIEWDATA, &q->datalen, q->err);
    return q->data ? 0 : -1;
}

/* The view's checkpoint directory (all a replay needs to know which blocks it reads). */
static int load_dir(qctx *q, int view) {
    uint64_t len;
    uint32_t kind = TDX_SEC_VIEW_PROC + (uint32_t)view;
    q->dir = tdx_index_section(q->ix, kind, &len, q->err);
    if (!q->dir) return -1;
    q->dir_off = q->ix->sec[kind].off;
    snprintf(q->dir_what, sizeof q->dir_what, "section %s", tdx_section_name(kind));
    uint64_t at;
    if (tdx_viewsec_check_dir(q->dir, len, view, q->ix->meta[M_EVENTS], &at))
        return damaged(q, q->dir_off + at, q->dir_what);
    q->nck = tdx_rd64(q->dir + VH_NCKPT);
    return 0;
}

/* After the frame tree had to number new frames from the store's nodes (read then): whether
 * either was found damaged (reported). */
static int tree_damaged(qctx *q) {
    if (q->store.nodes_bad) return damaged(q, q->ix->sec[TDX_SEC_VGNODES].off, "section VGNODES");
    return q->tree.bad ? damaged(q, q->dir_off, q->dir_what) : 0;
}

/* The view's frame tree (needs the store). */
static int load_tree(qctx *q, bool tasks) {
    const uint8_t *tp;
    size_t tn;
    uint64_t len;
    const uint8_t *np = tdx_index_section(q->ix, TDX_SEC_FNAMES, &len, q->err);
    if (!np) return -1;
    tdx_fnames names;
    if (tdx_fnames_load(&names, np, (size_t)len, q->err))
        return damaged(q, q->ix->sec[TDX_SEC_FNAMES].off, "section FNAMES");
    if (blob(q, q->dir + VH_TREE, &tp, &tn) || tdx_vgtree_load(&q->tree, tp, tn, &names, q->err))
        return -1;
    if (tasks) {
        uint64_t nm = tdx_rd64(q->dir + VH_NFRAMES_MAIN);
        if (nm > tdx_vgtree_nframes(&q->tree)) return damaged(q, q->dir_off, q->dir_what);
        tdx_vgtree_truncate(&q->tree, (uint32_t)nm);
        if (tree_damaged(q)) return -1;
    }
    q->frames = tdx_vgtree_frames(&q->tree);
    return 0;
}

static int restore(qctx *q, tdx_viewgen *vg, const uint8_t *ref) {
    const uint8_t *p;
    size_t n;
    if (blob(q, ref, &p, &n)) return -1;
    if (tdx_viewgen_restore(vg, p, n, q->err)) {
        if (q->err->kind == TDX_EINDEX)
            return damaged(q, q->ix->sec[TDX_SEC_VIEWDATA].off, "section VIEWDATA");
        return -1;
    }
    return 0;
}

/* ---- replay ---- */

typedef struct replay {
    uint64_t from, to; /* event indexes [from, to) */
    /* stop when the writer's index passes this (index mode) */
    const tdx_jsonw *w;
    int64_t stop_after;
    /* counters as of the window start (window mode with overlap) */
    bool counters_due;
    int64_t counters_at;
    int64_t t0;
    int64_t smin, smax; /* the events whose strings the pipe unpacks ahead */
    /* Early stop (a time window of a default view, stop table of its last interval): once past
     * the window's end, at the first event from stop_ev0 + j * stop_every on whose entry j is
     * past it too (nothing emitted from there on can reach back into the window). */
    uint64_t stop_check; /* the next event that consults the table (UINT64_MAX: none) */
    uint64_t stop_ev0, stop_every;
    int64_t *stop;
    uint64_t nstop;
    int64_t wend;
} replay;

/* a + b, clamped to int64's range (a window's ends are open-ended: INT64_MAX). */
static int64_t add_sat(int64_t a, int64_t b) {
    if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
    return a + b;
}

/* The blocks holding events [from, to), decoded ahead on the pipe's thread from now on. */
static tdx_evpipe *start_pipe(qctx *q, replay *r) {
    tdx_index *ix = q->ix;
    size_t b = 0, last = 0;
    if (r->from < r->to && r->from < ix->meta[M_EVENTS]) {
        b = tdx_index_block_of_event(ix, r->from);
        last = tdx_index_block_of_event(ix, r->to - 1) + 1;
        if (last > ix->nblocks) last = ix->nblocks;
    }
    tdx_evpipe *pipe = tdx_evpipe_start(ix, b, last, r->smin, r->smax);
    if (!pipe) oom(q);
    return pipe;
}

/* Loads the stop table of interval k (the window's last) into r; none when the view has none. */
static int load_stop(qctx *q, replay *r, uint64_t k, uint64_t next_ev) {
    uint64_t every = tdx_rd64(q->dir + VH_STOP_EVERY);
    const uint8_t *p;
    size_t n;
    if (blob(q, ck(q, k) + CK_STOP, &p, &n)) return -1;
    if (!every || !n) return 0;
    uint64_t ev0 = tdx_rd64(ck(q, k) + CK_EVENT), m;
    uint64_t most = (next_ev - ev0 + every - 1) / every; /* entries the interval has */
    int rc = tdx_viewsec_stop(p, n, most, ck_time(q, k), &r->stop, &m);
    if (rc == -2) return oom(q);
    if (rc) return damaged(q, q->ix->sec[TDX_SEC_VIEWDATA].off, "section VIEWDATA (stop table)");
    r->nstop = m;
    r->stop_ev0 = ev0;
    r->stop_every = every;
    r->stop_check = ev0;
    return 0;
}

/* At event idx, past the window's end: whether the replay may stop here (else when to ask
 * again). */
static bool may_stop(replay *r, uint64_t idx) {
    uint64_t j = (idx - r->stop_ev0) / r->stop_every;
    if (j >= r->nstop || r->stop[j] > r->wend) return true;
    r->stop_check = r->stop_ev0 + (j + 1) * r->stop_every;
    return false;
}

/* Feeds events [from, to) from the pipe to the generator. 0, -1 (err set) or -2 (generator). */
static int run_replay(qctx *q, tdx_evpipe *pipe, tdx_viewgen *vg, replay *r, tdx_query_stats *st) {
    tdx_index *ix = q->ix;
    if (r->from >= r->to || r->from >= ix->meta[M_EVENTS]) return 0;
    uint64_t idx = r->from, first;
    int rc = 0;
    const tdx_event *evs;
    size_t n;
    while (idx < r->to && (rc = tdx_evpipe_next(pipe, &evs, &n, &first, q->err)) == 1) {
        if (first + n <= idx) continue; /* before `from` in its block */
        for (size_t i = (size_t)(idx - first); i < n && idx < r->to; i++, idx++) {
            const tdx_event *e = &evs[i];
            if (r->counters_due && tdx_wsub(e->time, r->t0) >= r->counters_at) {
                tdx_viewgen_emit_counters(vg, r->counters_at);
                r->counters_due = false;
            }
            if (idx >= r->stop_check && tdx_wsub(e->time, r->t0) > r->wend && may_stop(r, idx)) {
                st->skipped = r->to - idx;
                return 0;
            }
            st->replayed++;
            if (tdx_viewgen_event(vg, e, &ix->tabs)) return -2;
            if (r->w && r->w->index > r->stop_after) return 0;
        }
    }
    return rc < 0 ? -1 : 0;
}

/* The long items of crossing list d, in emission order. */
static int long_items(qctx *q, tdx_viewgen *vg, uint64_t d, tdx_query_stats *st) {
    const uint8_t *cp;
    size_t cn;
    if (blob(q, ck(q, d) + CK_CROSS, &cp, &cn)) return -1;
    tdx_deser cd = {cp, cp + cn, 0};
    uint64_t count = tdx_deser_u(&cd), ord = 0;
    uint64_t nitems = tdx_rd64(q->dir + VH_NITEMS);
    uint64_t k = d;             /* the interval holding the current ordinal */
    uint64_t open = UINT64_MAX; /* the interval whose items id reads, and its next ordinal */
    uint64_t next = 0;
    tdx_deser id = {NULL, NULL, 0};
    for (uint64_t i = 0; i < count; i++) {
        ord += tdx_deser_u(&cd);
        if (cd.bad || ord >= nitems) goto bad;
        while (k < q->nck &&
               ord >= tdx_rd64(ck(q, k) + CK_FIRST_ITEM) + tdx_rd64(ck(q, k) + CK_NITEMS))
            k++;
        if (k >= q->nck || ord < tdx_rd64(ck(q, k) + CK_FIRST_ITEM)) goto bad;
        if (open != k) {
            const uint8_t *ip;
            size_t in;
            if (blob(q, ck(q, k) + CK_ITEMS, &ip, &in)) return -1;
            id = (tdx_deser){ip, ip + in, 0};
            open = k;
            next = tdx_rd64(ck(q, k) + CK_FIRST_ITEM);
        }
        for (;;) {
            tdx_vev ev[2];
            size_t n;
            if (tdx_viewsec_item(&id, ev, &n)) goto bad;
            if (next++ == ord) {
                tdx_viewgen_emit_item(vg, ev, n);
                st->long_items++;
                break;
            }
        }
    }
    if (cd.p != cd.end) goto bad;
    return 0;
bad:
    return damaged(q, q->ix->sec[TDX_SEC_VIEWDATA].off, "section VIEWDATA (long items)");
}

/* Adds the names of the filter's goroutines that the final state left out. */
static int add_names(qctx *q, tdx_viewgen *vg, const int64_t *ids, size_t nids) {
    const uint8_t *p;
    size_t n;
    if (blob(q, q->dir + VH_NAMES, &p, &n)) return -1;
    if (n == 0) return 0;
    if (n < 8) goto bad;
    uint64_t ng = tdx_rd64(p);
    if (ng > (n - 8) / 16) goto bad;
    const uint8_t *grp = p + 8, *data = p + 8 + ng * 16;
    size_t dlen = n - 8 - (size_t)ng * 16;
    uint64_t nstr = tdx_vgstore_nstrings(&q->store);
    for (size_t i = 0; i < nids; i++) {
        int64_t want = ids[i];
        /* the last group whose first id <= want */
        uint64_t lo = 0, hi = ng;
        while (lo < hi) {
            uint64_t mid = (lo + hi) / 2;
            if ((int64_t)tdx_rd64(grp + mid * 16) <= want)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0) continue;
        const uint8_t *g = grp + (lo - 1) * 16;
        uint64_t off = tdx_rd64(g + 8);
        if (off > dlen) goto bad;
        tdx_deser d = {data + off, data + dlen, 0};
        uint64_t cnt = tdx_deser_u(&d);
        int64_t id = (int64_t)tdx_rd64(g);
        for (uint64_t k = 0; k < cnt && k <= TDX_NAMES_GROUP && !d.bad; k++) {
            id = (int64_t)((uint64_t)id + (uint64_t)tdx_deser_i(&d));
            uint64_t f = tdx_deser_u(&d);
            uint32_t label = tdx_deser_u32(&d, nstr);
            if (d.bad || (f >> 1) >= nstr) goto bad;
            if (id == want) {
                tdx_vgname nm = {id, (uint32_t)(f >> 1), label, (f & 1) != 0};
                if (tdx_viewgen_add_named(vg, &nm)) return oom(q);
                break;
            }
        }
        if (d.bad) goto bad;
    }
    return 0;
bad:
    return damaged(q, q->ix->sec[TDX_SEC_VIEWDATA].off, "section VIEWDATA (names)");
}

/* ---- the query ---- */

static void qctx_free(qctx *q) {
    tdx_viewgen_resolved_free(&q->res);
    tdx_summary_free(&q->sum);
    tdx_vgtree_free(&q->tree);
    tdx_vgstore_free(&q->store);
}

int tdx_query_run(tdx_index *ix, const tdx_query *qq, tdx_write_fn write, void *wctx,
                  tdx_query_stats *st, tdx_err *err) {
    memset(st, 0, sizeof *st);
    qctx q;
    memset(&q, 0, sizeof q);
    q.ix = ix;
    q.err = err;
    tdx_vgtree_init(&q.tree, &q.store);
    tdx_summary_init(&q.sum, &q.store);
    tdx_viewgen *vg = NULL, *fin = NULL;
    tdx_evpipe *pipe = NULL;
    tdx_jsonw w;
    replay r;
    memset(&r, 0, sizeof r);
    bool w_init = false, have_store = false;
    int rc = -1;
    int64_t t0 = (int64_t)ix->meta[M_FIRST_TIME];

    /* Resolve the options as cmd/trace does (the summary only when a goroutine or task is asked).
     */
    tdx_viewquery vq;
    memset(&vq, 0, sizeof vq);
    vq.thread = qq->thread;
    if (qq->has_goid)
        vq.has_goid = true, vq.goid = qq->goid;
    else if (qq->has_focustask)
        vq.has_focustask = true, vq.focustask = qq->focustask;
    else if (qq->has_taskid)
        vq.has_taskid = true, vq.taskid = qq->taskid;
    bool go_window = vq.has_goid || vq.has_focustask || vq.has_taskid;
    if (go_window) {
        if (load_store(&q)) goto out;
        have_store = true;
        uint64_t len;
        const uint8_t *p = tdx_index_section(ix, TDX_SEC_SUMMARY, &len, err);
        if (!p || tdx_sumindex_load(p, (size_t)len, ix->sec[TDX_SEC_SUMMARY].off, &vq, &q.sum, err))
            goto out;
        q.have_sum = true;
    } else if (tdx_sumindex_fields(ix, &q.sum, err)) {
        goto out;
    }
    /* The views end at the last Sync: the trace's end, or a damaged trace's last one read
     * (build --partial), as cmd/trace shows such a trace. */
    int64_t tend = q.sum.valid_end;
    uint64_t nevents = q.sum.valid_events;
    if (tdx_viewgen_resolve(&vq, &q.sum, t0, tend, nevents, &q.res, err)) goto out;
    tdx_viewgen_opts *o = &q.res.opts;
    o->tend = tend;
    bool window = go_window || qq->has_window;
    if (qq->has_window) {
        if (qq->wstart > o->wstart) o->wstart = qq->wstart;
        if (qq->wend < o->wend) o->wend = qq->wend;
        o->overlap = true;
    }
    if (load_dir(&q, o->view)) goto out;
    int64_t S = qq->has_index ? qq->start : 0, E = qq->has_index ? qq->end : INT64_MAX;

    r.t0 = t0;
    r.to = nevents;
    r.stop_check = UINT64_MAX;
    uint64_t c = 0, d = q.nck; /* start checkpoint; d: the one replay stops at (nck: none) */
    if (window) {
        for (uint64_t k = 1; k < q.nck && ck_time(&q, k) < o->wstart; k++) c = k;
        for (uint64_t k = c + 1; k < q.nck; k++)
            if (ck_time(&q, k) > o->wend) {
                d = k;
                break;
            }
        if (d < q.nck) r.to = tdx_rd64(ck(&q, d) + CK_EVENT);
        r.wend = o->wend;
        r.counters_due = qq->has_window && o->wstart <= o->wend;
        r.smin = add_sat(t0, o->wstart);
        r.smax = add_sat(t0, o->wend);
        r.counters_at = o->wstart;
    } else {
        for (uint64_t k = 1; k < q.nck && (int64_t)tdx_rd64(ck(&q, k) + CK_NOPT) <= S; k++) c = k;
        r.stop_after = E;
        r.smin = INT64_MIN;
        r.smax = INT64_MAX;
    }
    r.from = tdx_rd64(ck(&q, c) + CK_EVENT);
    st->checkpoint = c;
    /* The first blocks decode while the store, frame tree and checkpoint load. */
    if (!(pipe = start_pipe(&q, &r))) goto out;
    if (!have_store && load_store(&q)) goto out;
    /* The stop tables hold what the default options emit: a goroutine or task view's options
     * emit more. */
    if (window && !go_window && load_stop(&q, &r, d < q.nck ? d - 1 : q.nck - 1, r.to)) goto out;
    if (load_tree(&q, o->ntasks > 0)) goto out;
    if (tdx_jsonw_init(&w, write, wctx, &q.frames, S, E)) {
        oom(&q);
        goto out;
    }
    w_init = true;
    if (!window) r.w = &w;
    vg = tdx_viewgen_new(o, &q.store, &q.frames, tdx_jsonw_event, &w);
    if (!vg) {
        oom(&q);
        goto out;
    }
    if (restore(&q, vg, ck(&q, c) + CK_STATE)) goto out;
    if (window)
        tdx_viewgen_counters_set(vg, 0, 0);
    else {
        w.index = (int64_t)tdx_rd64(ck(&q, c) + CK_NOPT);
        tdx_viewgen_set_quiet(vg, &w.index, w.start);
    }
    int rr = run_replay(&q, pipe, vg, &r, st);
    tdx_evpipe_stop(pipe); /* an index range may stop before the blocks decoded ahead */
    pipe = NULL;
    if (rr == -2) goto gen_failed;
    if (rr) goto out;
    if (r.counters_due) tdx_viewgen_emit_counters(vg, r.counters_at);
    if (window && d < q.nck && long_items(&q, vg, d, st)) goto out;

    /* The end: Finish, tasks and metadata from the state after the last event. */
    fin = tdx_viewgen_new(o, &q.store, &q.frames, tdx_jsonw_event, &w);
    if (!fin) {
        oom(&q);
        goto out;
    }
    if (restore(&q, fin, q.dir + VH_FINAL)) goto out;
    if (!tdx_viewgen_started(fin)) { /* (the state after the last event) */
        damaged(&q, q.ix->sec[TDX_SEC_VIEWDATA].off, "section VIEWDATA");
        goto out;
    }
    if (window) {
        tdx_viewgen_counters cnt = tdx_viewgen_counters_get(vg);
        tdx_viewgen_counters_set(fin, cnt.arrow_seq, cnt.async_seq);
    }
    if (o->view == TDX_VIEW_GOROUTINE && o->has_filter && add_names(&q, fin, o->filter, o->nfilter))
        goto out;
    if (tdx_viewgen_finish(fin)) goto gen_failed;
    if (tree_damaged(&q)) goto out;
    if (q.tree.oom || q.store.oom) {
        oom(&q);
        goto out;
    }
    if (tdx_jsonw_finish(&w)) goto write_failed;
    st->written = w.written;
    rc = tdx_index_strings_ok(ix, err); /* a string that failed to unpack was printed as "" */
    goto out;
gen_failed:
    if (w.err) goto write_failed;
    oom(&q);
    goto out;
write_failed:
    tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "write failed");
out:
    free(r.stop);
    tdx_evpipe_stop(pipe);
    tdx_viewgen_free(vg);
    tdx_viewgen_free(fin);
    if (w_init) tdx_jsonw_free(&w);
    qctx_free(&q);
    return rc;
}

int tdx_query_ranges(tdx_index *ix, tdx_vrange **out, size_t *nout, tdx_err *err) {
    *out = NULL;
    *nout = 0;
    uint64_t len;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_RANGES, &len, err);
    if (!p) return -1;
    uint64_t off = ix->sec[TDX_SEC_RANGES].off;
    if (len < 8) goto bad;
    uint64_t n = tdx_rd64(p);
    if (n > len / 48) goto bad;
    tdx_vrange *r = calloc(n ? n : 1, sizeof *r);
    if (!r) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    size_t pos = 8;
    for (uint64_t i = 0; i < n; i++) {
        if (len - pos < 48) {
            free(r);
            goto bad;
        }
        const uint8_t *x = p + pos;
        r[i].start = (int64_t)tdx_rd64(x);
        r[i].end = (int64_t)tdx_rd64(x + 8);
        r[i].start_time = (int64_t)tdx_rd64(x + 16);
        r[i].end_time = (int64_t)tdx_rd64(x + 24);
        r[i].bytes = tdx_rd64(x + 32);
        uint64_t nl = tdx_rd64(x + 40);
        pos += 48;
        if (nl >= sizeof r[i].name || nl > len - pos) {
            free(r);
            goto bad;
        }
        memcpy(r[i].name, p + pos, (size_t)nl);
        r[i].name[nl] = 0;
        pos += (size_t)nl;
        /* cmd/trace's ranges follow on from each other, the next starting at the previous end */
        if (r[i].start != (i ? r[i - 1].end : 0) || r[i].end <= r[i].start || nl == 0) {
            free(r);
            goto bad;
        }
    }
    if (pos != len || n == 1) { /* (fewer than two ranges are none) */
        free(r);
        goto bad;
    }
    if (n == 0) {
        free(r);
        return 0;
    }
    *out = r;
    *nout = (size_t)n;
    return 0;
bad:
    return tdx_errf(err, TDX_EINDEX, off,
                    "index section RANGES is corrupt (structure mismatch): " REBUILD);
}
