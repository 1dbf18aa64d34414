/* verify.c: `info --verify`. The event blocks are the bulk of the work (a 256 MiB trace's index:
 * about three quarters of it), so they are decoded by every thread, each taking the next block,
 * while the calling thread first restores the viewer states and checks the summary. */
#include "index/build/verify.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checksum.h"
#include "core/varint.h"
#include "index/format/evcodec.h"
#include "index/analysis/goprof.h"
#include "index/analysis/gsindex.h"
#include "index/analysis/muinput.h"
#include "index/analysis/regstats.h"
#include "index/views/query.h"
#include "index/analysis/sumindex.h"
#include "index/views/viewgen.h"
#include "index/views/viewgen_store.h"
#include "index/views/viewsec.h"

/* A restore emits nothing: verify's generators need a sink all the same. */
static int no_sink(void *ctx, const tdx_vev *ev) {
    (void)ctx;
    (void)ev;
    return 0;
}

/* Every checkpoint's state and the final state, restored as a query restores them (their
 * checksums pass for bytes that were altered and re-sealed, or written wrong). */
static int verify_states(tdx_index *ix, uint32_t kind, const uint8_t *dir, uint64_t nck,
                         const uint8_t *data, tdx_vgstore *st, tdx_err *err) {
    tdx_viewgen_opts o;
    tdx_viewgen_opts_default(&o);
    o.view = (int)(kind - TDX_SEC_VIEW_PROC);
    tdx_vgframes fr;
    memset(&fr, 0, sizeof fr);
    for (uint64_t i = 0; i <= nck; i++) {
        const uint8_t *ref = i < nck ? dir + VH_SIZE + i * CK_SIZE + CK_STATE : dir + VH_FINAL;
        uint64_t off = tdx_rd64(ref + BL_OFF), n = tdx_rd64(ref + BL_LEN); /* checked above */
        tdx_viewgen *vg = tdx_viewgen_new(&o, st, &fr, no_sink, NULL);
        if (!vg) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        int rc = tdx_viewgen_restore(vg, data + off, (size_t)n, err);
        /* the final state is the one after the last event: query's check */
        if (!rc && i == nck && !tdx_viewgen_started(vg))
            rc = tdx_errf(err, TDX_EINDEX, TDX_NO_OFFSET, "a final state before any event");
        tdx_viewgen_free(vg);
        if (rc)
            return err->kind == TDX_EINDEX
                       ? tdx_index_corrupt(err, ix->sec[TDX_SEC_VIEWDATA].off + off,
                                           "section VIEWDATA")
                       : -1;
    }
    return 0;
}

/* The view's frame tree, every entry (a query checks those it reads), and the count of the main
 * loop's frames a task query keeps (damage names the view's section, `what`). */
static int verify_tree(tdx_index *ix, uint32_t kind, const char *what, const uint8_t *dir,
                       const uint8_t *data, tdx_vgstore *st, const tdx_fnames *names,
                       tdx_err *err) {
    tdx_vgtree t;
    tdx_vgtree_init(&t, st);
    const uint8_t *tp = data + tdx_rd64(dir + VH_TREE + BL_OFF); /* (bounds checked) */
    int rc = tdx_vgtree_load(&t, tp, (size_t)tdx_rd64(dir + VH_TREE + BL_LEN), names, err);
    if (!rc) rc = tdx_vgtree_check(&t);
    if (!rc && tdx_rd64(dir + VH_NFRAMES_MAIN) > tdx_vgtree_nframes(&t)) rc = -1;
    tdx_vgtree_free(&t);
    if (rc == -2) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return rc ? tdx_index_corrupt(err, ix->sec[kind].off, what) : 0;
}

/* Interval k's long items (as many as the directory says, exactly filling their blob), its
 * crossing list (ordinals ascending, of items from interval k on) and its stop table, read as a
 * query reads them (their hashes are checked): what is wrong, or NULL. */
static const char *verify_interval(const tdx_index *ix, const uint8_t *dir, uint64_t nck,
                                   uint64_t k, const uint8_t *data) {
    const uint8_t *c = dir + VH_SIZE + k * CK_SIZE;
    tdx_deser d = {data + tdx_rd64(c + CK_ITEMS + BL_OFF), NULL, 0};
    d.end = d.p + tdx_rd64(c + CK_ITEMS + BL_LEN);
    for (uint64_t i = tdx_rd64(c + CK_NITEMS); i > 0; i--) {
        tdx_vev ev[2];
        size_t n;
        if (tdx_viewsec_item(&d, ev, &n)) return "section VIEWDATA (long items)";
    }
    if (d.p != d.end) return "section VIEWDATA (long items)";
    d = (tdx_deser){data + tdx_rd64(c + CK_CROSS + BL_OFF), NULL, 0};
    d.end = d.p + tdx_rd64(c + CK_CROSS + BL_LEN);
    uint64_t count = tdx_deser_u(&d), ord = 0, nitems = tdx_rd64(dir + VH_NITEMS);
    for (uint64_t i = 0; i < count && !d.bad; i++) {
        uint64_t gap = tdx_deser_u(&d);
        if ((i && gap == 0) || gap > nitems - ord) return "section VIEWDATA (long items)";
        ord += gap;
        if (ord < tdx_rd64(c + CK_FIRST_ITEM) || ord >= nitems)
            return "section VIEWDATA (long items)";
    }
    if (d.bad || d.p != d.end) return "section VIEWDATA (long items)";
    uint64_t every = tdx_rd64(dir + VH_STOP_EVERY), m;
    uint64_t ev0 = tdx_rd64(c + CK_EVENT);
    uint64_t next = k + 1 < nck ? tdx_rd64(c + CK_SIZE + CK_EVENT) : ix->meta[M_EVENTS];
    if (!every || !tdx_rd64(c + CK_STOP + BL_LEN)) return NULL;
    if (tdx_viewsec_stop(data + tdx_rd64(c + CK_STOP + BL_OFF), tdx_rd64(c + CK_STOP + BL_LEN),
                         (next - ev0 + every - 1) / every, (int64_t)tdx_rd64(c + CK_TIME), NULL,
                         &m))
        return "section VIEWDATA (stop table)";
    return NULL;
}

/* The names of the goroutines pruned from the final state: groups in id order, each of at most
 * TDX_NAMES_GROUP names with ascending ids from the group's first, as many names as the header
 * says, string ids below nstr. What is wrong, or NULL. */
static const char *verify_names(const uint8_t *dir, const uint8_t *data, uint64_t nstr) {
    uint64_t n = tdx_rd64(dir + VH_NAMES + BL_LEN), names = 0;
    const uint8_t *p = data + tdx_rd64(dir + VH_NAMES + BL_OFF);
    static const char bad[] = "section VIEWDATA (names)";
    if (n == 0) return tdx_rd64(dir + VH_NNAMES) ? bad : NULL;
    if (n < 8) return bad;
    uint64_t ng = tdx_rd64(p);
    if (ng > (n - 8) / 16) return bad;
    const uint8_t *grp = p + 8, *names_at = p + 8 + ng * 16, *end = p + n;
    for (uint64_t g = 0; g < ng; g++) {
        uint64_t off = tdx_rd64(grp + g * 16 + 8);
        int64_t id = (int64_t)tdx_rd64(grp + g * 16);
        uint64_t stop = g + 1 < ng ? tdx_rd64(grp + (g + 1) * 16 + 8) : (uint64_t)(end - names_at);
        if (off > stop || stop > (uint64_t)(end - names_at) ||
            (g && id <= (int64_t)tdx_rd64(grp + (g - 1) * 16)))
            return bad;
        tdx_deser d = {names_at + off, names_at + stop, 0};
        uint64_t cnt = tdx_deser_u(&d);
        if (cnt == 0 || cnt > TDX_NAMES_GROUP) return bad;
        for (uint64_t i = 0; i < cnt && !d.bad; i++) {
            int64_t step = tdx_deser_i(&d);
            if ((i == 0 && step != 0) || (i && step <= 0)) return bad;
            id = (int64_t)((uint64_t)id + (uint64_t)step);
            if ((tdx_deser_u(&d) >> 1) >= nstr) return bad;
            tdx_deser_u32(&d, nstr);
        }
        if (d.bad || d.p != d.end) return bad;
        names += cnt;
    }
    return names == tdx_rd64(dir + VH_NNAMES) ? NULL : bad;
}

/* Checks every blob a view directory points to in VIEWDATA and reads the intervals' and the
 * names' as a query would, then (with the store) restores its states. */
static int verify_view(tdx_index *ix, uint32_t kind, tdx_vgstore *st, const tdx_fnames *names,
                       tdx_err *err) {
    uint64_t len, dlen;
    const uint8_t *dir = tdx_index_section(ix, kind, &len, err);
    const uint8_t *data = dir ? tdx_index_section(ix, TDX_SEC_VIEWDATA, &dlen, err) : NULL;
    if (!data) return -1;
    char what[48];
    snprintf(what, sizeof what, "section %s", tdx_section_name(kind));
    uint64_t at;
    if (tdx_viewsec_check_dir(dir, len, (int)(kind - TDX_SEC_VIEW_PROC), ix->meta[M_EVENTS], &at))
        return tdx_index_corrupt(err, ix->sec[kind].off + at, what);
    uint64_t nck = tdx_rd64(dir + VH_NCKPT);
    for (uint64_t i = 0; i < 3 + CK_BLOBS * nck; i++) {
        const uint8_t *ref = i < 3 ? dir + VH_TREE + i * BL_SIZE
                                   : dir + VH_SIZE + ((i - 3) / CK_BLOBS) * CK_SIZE + CK_STATE +
                                         ((i - 3) % CK_BLOBS) * BL_SIZE;
        uint64_t off = tdx_rd64(ref + BL_OFF), n = tdx_rd64(ref + BL_LEN);
        if (off > dlen || n > dlen - off)
            return tdx_index_corrupt(err, ix->sec[kind].off + (uint64_t)(ref - dir), what);
        if (!tdx_checksum_ok(data + off, (size_t)n, tdx_rd64(ref + BL_HASH)))
            return tdx_index_corrupt(err, ix->sec[TDX_SEC_VIEWDATA].off + off, "section VIEWDATA");
    }
    if (st && verify_tree(ix, kind, what, dir, data, st, names, err)) return -1;
    const char *bad = NULL;
    for (uint64_t k = 0; k < nck && !bad; k++) bad = verify_interval(ix, dir, nck, k, data);
    if (!bad) bad = verify_names(dir, data, st ? tdx_vgstore_nstrings(st) : UINT64_MAX);
    if (bad) return tdx_index_corrupt(err, ix->sec[TDX_SEC_VIEWDATA].off, bad);
    return st ? verify_states(ix, kind, dir, nck, data, st, err) : 0;
}

/* The viewer store and its stack nodes as a query loads them (their checksums pass for bytes
 * that were altered and re-sealed, which only this finds); *st is freed on failure. */
static int verify_store(tdx_index *ix, tdx_vgstore *st, tdx_err *err) {
    uint64_t len, nlen;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_VGSTORE, &len, err);
    const uint8_t *np = p ? tdx_index_section(ix, TDX_SEC_VGNODES, &nlen, err) : NULL;
    if (!np) return -1;
    if (tdx_vgstore_load(st, p, (size_t)len, &ix->tabs, err))
        return err->kind == TDX_EINDEX
                   ? tdx_index_corrupt(err, ix->sec[TDX_SEC_VGSTORE].off, "section VGSTORE")
                   : -1;
    int rc = tdx_vgstore_load_nodes(st, np, (size_t)nlen, err);
    if (rc) tdx_vgstore_free(st);
    if (rc && err->kind == TDX_EINDEX)
        return tdx_index_corrupt(err, ix->sec[TDX_SEC_VGNODES].off, "section VGNODES");
    return rc ? -1 : 0;
}

/* FNAMES loaded into *names (the frame trees refer to it), every name checked against the frame
 * it is made from: a query copies a name's text into stackFrames as it is, so altered text would
 * print (the frame trees name records only). */
static int verify_fnames(tdx_index *ix, const tdx_vgstore *st, tdx_fnames *names, tdx_err *err) {
    uint64_t len, bad;
    const uint8_t *np = tdx_index_section(ix, TDX_SEC_FNAMES, &len, err);
    if (!np) return -1;
    if (tdx_fnames_load(names, np, (size_t)len, err))
        return tdx_index_corrupt(err, ix->sec[TDX_SEC_FNAMES].off, "section FNAMES");
    int rc = tdx_fnames_check(names, st, &ix->tabs, &bad);
    if (rc == -2) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    uint64_t at = bad ? 8 + (bad - 1) * TDX_FNAME_REC : 0;
    return rc ? tdx_index_corrupt(err, ix->sec[TDX_SEC_FNAMES].off + at, "section FNAMES") : 0;
}

/* Decodes a GOROUTINES, PROCS or THREADS table: as many records as META counts, ids strictly
 * ascending (signed), each seen by an event, last time not before the first, nothing after;
 * *events gets the sum of the records' event counts (the caller recounts them from the events).
 * (Nothing else reads these tables yet; first-seen deltas are not checked.) */
static int verify_resources(tdx_index *ix, uint32_t kind, uint64_t want, uint64_t *events,
                            tdx_err *err) {
    uint64_t len;
    const uint8_t *p = tdx_index_section(ix, kind, &len, err);
    if (!p) return -1;
    char what[48];
    snprintf(what, sizeof what, "section %s", tdx_section_name(kind));
    if (len < 8 || tdx_rd64(p) != want) return tdx_index_corrupt(err, ix->sec[kind].off, what);
    const uint8_t *q = p + 8, *end = p + len;
    *events = 0;
    for (uint64_t i = 0; i < want; i++) {
        uint64_t v[4];
        for (int k = 0; k < 4; k++) {
            int r = tdx_uvarint(q, end, &v[k]);
            if (r < 0) return tdx_index_corrupt(err, ix->sec[kind].off + (uint64_t)(q - p), what);
            q += r;
        }
        int64_t did = tdx_unzigzag(v[0]);
        if ((i && did <= 0) || v[1] == 0 || tdx_unzigzag(v[3]) < 0)
            return tdx_index_corrupt(err, ix->sec[kind].off + (uint64_t)(q - p), what);
        *events += v[1];
    }
    if (q != end) return tdx_index_corrupt(err, ix->sec[kind].off + (uint64_t)(q - p), what);
    return 0;
}

/* The events that name a goroutine, a proc and a thread (as the writer counts them: each id an
 * event carries, and a state transition's goroutine or proc when it is not the event's own). */
static void count_resources(const tdx_event *e, uint64_t seen[3]) {
    seen[0] += e->g >= 0;
    seen[1] += e->p >= 0;
    seen[2] += e->m >= 0;
    if (e->kind == TDX_KIND_STATE_TRANSITION && e->res >= 0) {
        if (e->res_kind == TDX_RES_PROC)
            seen[1] += e->res != e->p;
        else
            seen[0] += e->res != e->g;
    }
}

/* The event blocks, shared by the threads that decode them. A damaged block b lowers stop to b,
 * so no thread takes a block after it; every block before it is still decoded by someone, and
 * the lowest damaged block is the one reported whatever the scheduling. */
typedef struct blockscan {
    const tdx_index *ix;
    const tdx_verify_opts *o;
    atomic_size_t next, stop;
    atomic_bool abort;            /* a check on the calling thread failed: no more blocks */
    const struct scanner *caller; /* the calling thread's scanner (it reports progress) */
} blockscan;

typedef struct scanner {
    blockscan *bs;
    uint64_t seen[3];
    uint64_t kinds[15]; /* events of each kind, to be META's */
    size_t bad;         /* the damaged block this scanner found (SIZE_MAX: none) */
    int rc;
    tdx_err err;
    pthread_t th;
} scanner;

static void lower_stop(blockscan *bs, size_t b) {
    size_t cur = atomic_load(&bs->stop);
    while (b < cur && !atomic_compare_exchange_weak(&bs->stop, &cur, b)) {
    }
}

static void *scan_blocks(void *arg) {
    scanner *s = arg;
    blockscan *bs = s->bs;
    tdx_event *buf = malloc(TDX_EVBLOCK_EVENTS * sizeof *buf);
    tdx_evdec *dec = tdx_evdec_new();
    if (!buf || !dec) {
        s->rc = tdx_errf(&s->err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
        atomic_store(&bs->abort, true);
    }
    while (!s->rc && !atomic_load(&bs->abort)) {
        size_t b = atomic_fetch_add(&bs->next, 1), n;
        if (b >= bs->ix->nblocks || b >= atomic_load(&bs->stop)) break;
        /* The pages of blocks well behind every thread go back (RSS: not the whole index; a
         * thread still reading one only maps it again). */
        if (b % TDX_RELEASE_EVERY == 0 && b >= 2 * TDX_RELEASE_EVERY)
            tdx_index_release_blocks(bs->ix, b - 2 * TDX_RELEASE_EVERY);
        if (tdx_index_read_block(bs->ix, dec, b, buf, &n, &s->err)) {
            s->rc = -1;
            if (s->err.kind == TDX_EINDEX) {
                s->bad = b;
                lower_stop(bs, b);
            } else {
                atomic_store(&bs->abort, true);
            }
            break;
        }
        for (size_t i = 0; i < n; i++) {
            count_resources(&buf[i], s->seen);
            s->kinds[(unsigned)buf[i].kind < 15 ? buf[i].kind : 0]++;
        }
        if (s == bs->caller && bs->o->progress) {
            size_t done = atomic_load(&bs->next);
            bs->o->progress(bs->o->progress_ctx, done < bs->ix->nblocks ? done : bs->ix->nblocks,
                            bs->ix->nblocks);
        }
    }
    tdx_evdec_free(dec);
    free(buf);
    return NULL;
}

/* Which failure verify reports: one that is not damage, then the lowest damaged block. */
static size_t rank(const scanner *s) {
    return s->bad == SIZE_MAX ? 0 : s->bad + 1;
}

/* The summary (blocked: it checks its own blocks), its ids against the store as a query's, and
 * its header's totals, which a query's window ends come from, against META's. */
static int verify_summary(tdx_index *ix, const tdx_vgstore *st, tdx_err *err) {
    uint64_t len;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_SUMMARY, &len, err);
    if (!p || tdx_sumindex_verify(p, (size_t)len, ix->sec[TDX_SEC_SUMMARY].off, st, err)) return -1;
    tdx_summary s;
    tdx_summary_init(&s, NULL);
    int rc = tdx_sumindex_fields(ix, &s, err);
    if (!rc && (s.nevents != ix->meta[M_EVENTS] || (uint64_t)s.t0 != ix->meta[M_FIRST_TIME] ||
                (uint64_t)s.last_ts != ix->meta[M_LAST_TIME]))
        rc = tdx_index_corrupt(err, ix->sec[TDX_SEC_SUMMARY].off, "section SUMMARY (its totals)");
    tdx_summary_free(&s);
    return rc;
}

/* The goroutine analysis: every group's run as `goroutines --name` reads it, and its first and
 * last times against META's. */
static int verify_gstats(tdx_index *ix, tdx_err *err) {
    uint64_t len;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_GSTATS, &len, err);
    uint64_t off = ix->sec[TDX_SEC_GSTATS].off;
    if (!p || tdx_gsindex_verify(p, (size_t)len, off, err)) return -1;
    tdx_gsindex x;
    if (tdx_gsindex_open(&x, p, (size_t)len, off, err)) return -1;
    int rc = tdx_gsindex_check_span(&x, (int64_t)ix->meta[M_FIRST_TIME],
                                    (int64_t)ix->meta[M_LAST_TIME], err);
    tdx_gsindex_free(&x);
    return rc;
}

/* The four profiles as `pprof` reads them. */
static int verify_pprof(tdx_index *ix, tdx_err *err) {
    uint64_t len;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_PPROF, &len, err);
    if (!p) return -1;
    tdx_goprof_recs r = {0};
    bool named;
    int rc = tdx_goprof_read(p, (size_t)len, ix->sec[TDX_SEC_PPROF].off, &ix->tabs, -1, NULL, &r,
                             &named, err);
    tdx_vec_free(&r);
    return rc;
}

static int no_row(void *ctx, const tdx_rgrow *row) {
    (void)ctx;
    (void)row;
    return 0;
}

/* The user region table as `regions` reads it. */
static int verify_regions(tdx_index *ix, tdx_err *err) {
    uint64_t len;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_REGIONS, &len, err);
    return p ? tdx_regstats_decode(p, (size_t)len, ix->sec[TDX_SEC_REGIONS].off, no_row, NULL, err)
             : -1;
}

/* The mutator utilization's inputs as `mmu` reads them, ending at META's last event (a partial
 * index's, at its last Sync: within META's span). */
static int verify_mutil(tdx_index *ix, tdx_err *err) {
    uint64_t len, off = ix->sec[TDX_SEC_MUTIL].off;
    const uint8_t *p = tdx_index_section(ix, TDX_SEC_MUTIL, &len, err);
    if (!p) return -1;
    tdx_muread r;
    int rc = tdx_muread_init(&r, p, (size_t)len, off, err);
    int64_t first = (int64_t)ix->meta[M_FIRST_TIME], last = (int64_t)ix->meta[M_LAST_TIME];
    if (!rc && (ix->partial ? r.last < first || r.last > last : r.last != last))
        rc = tdx_index_corrupt(err, off, "section MUTIL");
    tdx_murec rec;
    while (!rc && (rc = tdx_muread_next(&r, &rec, err)) == 1) rc = 0;
    tdx_muread_free(&r);
    return rc;
}

/* The split ranges as `ranges` reads them, within the proc view's output. */
static int verify_ranges(tdx_index *ix, tdx_err *err) {
    tdx_vrange *r;
    size_t n;
    uint64_t len;
    if (tdx_query_ranges(ix, &r, &n, err)) return -1;
    const uint8_t *dir = n ? tdx_index_section(ix, TDX_SEC_VIEW_PROC, &len, err) : NULL;
    int rc = n && !dir ? -1 : 0;
    if (dir && (uint64_t)r[n - 1].end > tdx_rd64(dir + VH_NOPT)) /* (len checked by verify_view) */
        rc = tdx_index_corrupt(err, ix->sec[TDX_SEC_RANGES].off, "section RANGES");
    free(r);
    return rc;
}

/* The store, the views' states and the summary: the checks that do not read the event blocks. */
static int verify_views(tdx_index *ix, tdx_err *err) {
    /* The store first: the views' states are restored against it. */
    tdx_vgstore store, *st = NULL;
    if (ix->sec[TDX_SEC_VGSTORE].present) {
        if (verify_store(ix, &store, err)) return -1;
        st = &store;
    }
    tdx_fnames names;
    memset(&names, 0, sizeof names); /* (no FNAMES: every saved frame's name is missing) */
    int rc = st && ix->sec[TDX_SEC_FNAMES].present ? verify_fnames(ix, st, &names, err) : 0;
    for (uint32_t k = TDX_SEC_VIEW_PROC; k <= TDX_SEC_VIEW_GOROUTINE && !rc; k++)
        if (ix->sec[k].present) rc = verify_view(ix, k, st, &names, err);
    if (!rc && ix->sec[TDX_SEC_SUMMARY].present) rc = verify_summary(ix, st, err);
    if (!rc && ix->sec[TDX_SEC_RANGES].present) rc = verify_ranges(ix, err);
    if (!rc && ix->sec[TDX_SEC_GSTATS].present) rc = verify_gstats(ix, err);
    if (!rc && ix->sec[TDX_SEC_PPROF].present) rc = verify_pprof(ix, err);
    if (!rc && ix->sec[TDX_SEC_REGIONS].present) rc = verify_regions(ix, err);
    if (!rc && ix->sec[TDX_SEC_MUTIL].present) rc = verify_mutil(ix, err);
    if (st) tdx_vgstore_free(st);
    return rc;
}

int tdx_index_verify(tdx_index *ix, const tdx_verify_opts *o, tdx_err *err) {
    for (uint32_t k = 1; k < TDX_SEC_COUNT_; k++) {
        uint64_t len;
        /* Every index of this format has the sections up to FNAMES (queries need them; an
         * absent one says to rebuild); those added since (GSTATS on) are optional. */
        if ((ix->sec[k].present || k <= TDX_SEC_FNAMES) && !tdx_index_section(ix, k, &len, err))
            return -1;
    }
    if (tdx_index_strings_all(ix, err)) return -1;
    static const uint32_t res_sec[3] = {TDX_SEC_GOROUTINES, TDX_SEC_PROCS, TDX_SEC_THREADS};
    static const int res_meta[3] = {M_GOROUTINES, M_PROCS, M_THREADS};
    uint64_t res_events[3];
    for (int i = 0; i < 3; i++)
        if (verify_resources(ix, res_sec[i], ix->meta[res_meta[i]], &res_events[i], err)) return -1;

    /* From here on the index is only read (the sections' checksums are checked and the strings
     * unpacked), so the helpers decode blocks while this thread checks the views. */
    int jobs = o->jobs < 1 ? 1 : o->jobs;
    if ((size_t)jobs > ix->nblocks) jobs = ix->nblocks > 1 ? (int)ix->nblocks : 1;
    blockscan bs = {.ix = ix, .o = o};
    atomic_init(&bs.next, 0);
    atomic_init(&bs.stop, SIZE_MAX);
    atomic_init(&bs.abort, false);
    scanner *sc = calloc((size_t)jobs, sizeof *sc);
    if (!sc) return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    bs.caller = &sc[0];
    int started = 1;
    for (int i = 0; i < jobs; i++) {
        sc[i].bs = &bs;
        sc[i].bad = SIZE_MAX;
    }
    for (; started < jobs; started++) /* a thread that cannot start leaves its share to the rest */
        if (pthread_create(&sc[started].th, NULL, scan_blocks, &sc[started])) break;
    if (o->progress) o->progress(o->progress_ctx, 0, ix->nblocks);
    int rc = verify_views(ix, err);
    if (rc)
        atomic_store(&bs.abort, true);
    else
        scan_blocks(&sc[0]);
    for (int i = 1; i < started; i++) pthread_join(sc[i].th, NULL);
    if (!rc) {
        /* A failure other than damage (memory) first, else the lowest damaged block. */
        const scanner *worst = NULL;
        for (int i = 0; i < started; i++)
            if (sc[i].rc && (!worst || rank(&sc[i]) < rank(worst))) worst = &sc[i];
        if (worst) {
            *err = worst->err;
            rc = -1;
        }
    }
    uint64_t seen[3] = {0}, kinds[15] = {0};
    for (int i = 0; i < started; i++) {
        for (int k = 0; k < 3; k++) seen[k] += sc[i].seen[k];
        for (int k = 0; k < 15; k++) kinds[k] += sc[i].kinds[k];
    }
    free(sc);
    for (int k = 0; k < 15 && !rc; k++)
        if (kinds[k] != ix->meta[M_KIND0 + k])
            rc = tdx_index_corrupt(err, ix->sec[TDX_SEC_META].off,
                                   "section META (its events of each kind)");
    for (int i = 0; i < 3 && !rc; i++)
        if (seen[i] != res_events[i]) {
            char what[64];
            snprintf(what, sizeof what, "section %s (its event counts)",
                     tdx_section_name(res_sec[i]));
            rc = tdx_index_corrupt(err, ix->sec[res_sec[i]].off, what);
        }
    return rc;
}
