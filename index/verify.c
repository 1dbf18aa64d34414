/* verify.c: `info --verify`. The event blocks are the bulk of the work (a 256 MiB trace's index:
 * about three quarters of it), so they are decoded by every thread, each taking the next block,
 * while the calling thread first restores the viewer states and checks the summary. */
#include "verify.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/varint.h"
#include "index/evcodec.h"
#include "index/sumindex.h"
#include "index/viewgen.h"
#include "index/viewgen_store.h"
#include "index/viewsec.h"

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
        tdx_viewgen_free(vg);
        if (rc)
            return err->kind == TDX_EINDEX
                       ? tdx_index_corrupt(err, ix->sec[TDX_SEC_VIEWDATA].off + off,
                                           "section VIEWDATA")
                       : -1;
    }
    return 0;
}

/* Checks every blob a view directory points to in VIEWDATA, then (with the store) restores its
 * states. */
static int verify_view(tdx_index *ix, uint32_t kind, tdx_vgstore *st, tdx_err *err) {
    uint64_t len, dlen;
    const uint8_t *dir = tdx_index_section(ix, kind, &len, err);
    const uint8_t *data = dir ? tdx_index_section(ix, TDX_SEC_VIEWDATA, &dlen, err) : NULL;
    if (!data) return -1;
    char what[48];
    snprintf(what, sizeof what, "section %s", tdx_section_name(kind));
    if (len < VH_SIZE || (len - VH_SIZE) % CK_SIZE ||
        tdx_rd64(dir + VH_NCKPT) != (len - VH_SIZE) / CK_SIZE)
        return tdx_index_corrupt(err, ix->sec[kind].off, what);
    uint64_t nck = (len - VH_SIZE) / CK_SIZE;
    for (uint64_t i = 0; i < 3 + CK_BLOBS * nck; i++) {
        const uint8_t *ref = i < 3 ? dir + VH_TREE + i * BL_SIZE
                                   : dir + VH_SIZE + ((i - 3) / CK_BLOBS) * CK_SIZE + CK_STATE +
                                         ((i - 3) % CK_BLOBS) * BL_SIZE;
        uint64_t off = tdx_rd64(ref + BL_OFF), n = tdx_rd64(ref + BL_LEN);
        if (off > dlen || n > dlen - off)
            return tdx_index_corrupt(err, ix->sec[kind].off + (uint64_t)(ref - dir), what);
        if (XXH3_64bits(data + off, (size_t)n) != tdx_rd64(ref + BL_HASH))
            return tdx_index_corrupt(err, ix->sec[TDX_SEC_VIEWDATA].off + off, "section VIEWDATA");
    }
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
    size_t bad; /* the damaged block this scanner found (SIZE_MAX: none) */
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
        for (size_t i = 0; i < n; i++) count_resources(&buf[i], s->seen);
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

/* The store, the views' states and the summary: the checks that do not read the event blocks. */
static int verify_views(tdx_index *ix, tdx_err *err) {
    /* The store first: the views' states are restored against it. */
    tdx_vgstore store, *st = NULL;
    if (ix->sec[TDX_SEC_VGSTORE].present) {
        if (verify_store(ix, &store, err)) return -1;
        st = &store;
    }
    int rc = 0;
    for (uint32_t k = TDX_SEC_VIEW_PROC; k <= TDX_SEC_VIEW_GOROUTINE && !rc; k++)
        if (ix->sec[k].present) rc = verify_view(ix, k, st, err);
    if (st) tdx_vgstore_free(st);
    if (rc) return -1;
    if (ix->sec[TDX_SEC_SUMMARY].present) { /* blocked: it checks its own blocks */
        uint64_t len;
        const uint8_t *p = tdx_index_section(ix, TDX_SEC_SUMMARY, &len, err);
        if (!p || tdx_sumindex_verify(p, (size_t)len, ix->sec[TDX_SEC_SUMMARY].off, err)) return -1;
    }
    return 0;
}

int tdx_index_verify(tdx_index *ix, const tdx_verify_opts *o, tdx_err *err) {
    for (uint32_t k = 1; k < TDX_SEC_COUNT_; k++) {
        uint64_t len;
        if (ix->sec[k].present && !tdx_index_section(ix, k, &len, err)) return -1;
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
    uint64_t seen[3] = {0};
    for (int i = 0; i < started; i++)
        for (int k = 0; k < 3; k++) seen[k] += sc[i].seen[k];
    free(sc);
    for (int i = 0; i < 3 && !rc; i++)
        if (seen[i] != res_events[i]) {
            char what[64];
            snprintf(what, sizeof what, "section %s (its event counts)",
                     tdx_section_name(res_sec[i]));
            rc = tdx_index_corrupt(err, ix->sec[res_sec[i]].off, what);
        }
    return rc;
}
