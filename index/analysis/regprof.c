/* regprof.c: the pprof-style profiles of go tool trace's region pages, over the selected regions
 * read by start in step with the events (see regprof.h). */
#include "index/analysis/regprof.h"

#include <stdlib.h>
#include <string.h>

#include "core/hmap.h"
#include "core/mem.h"
#include "core/spec.h"
#include "core/varint.h"
#include "index/common/extsort.h"

/* A goroutine's wait and regions, from its first wait or region to its end. */
typedef struct gst {
    int64_t at;     /* when the wait being measured began */
    int64_t acc;    /* its overlap with the regions that arrived (and ended) during it */
    int64_t cs, ce; /* the latest region kept */
    int64_t last;   /* Go's end of the last region kept: a region starting before it is nested */
    uint32_t stack; /* the stack of the event that began the wait */
    uint8_t on, has_cur;
} gst;

struct tdx_regprof {
    int which;
    tdx_xsort *x;
    uint64_t nev;
    bool more; /* (ns, ne, ng) is the next region by start, not arrived yet */
    int64_t ns, ne, ng;
    TDX_VEC(gst) gs;
    TDX_VEC(uint32_t) unused; /* slots of gs free again */
    tdx_hmap g_idx;           /* goroutine id -> slot in gs */
    tdx_goprof sums;
};

tdx_regprof *tdx_regprof_new(int which, const char *beside, size_t budget) {
    if (which < 0 || which >= TDX_PROF_COUNT) return NULL;
    tdx_regprof *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->which = which;
    if (!(p->x = tdx_xsort_new(beside, budget))) {
        free(p);
        return NULL;
    }
    return p;
}

void tdx_regprof_free(tdx_regprof *p) {
    if (!p) return;
    tdx_xsort_free(p->x);
    tdx_vec_free(&p->gs);
    tdx_vec_free(&p->unused);
    tdx_hmap_free(&p->g_idx);
    tdx_goprof_free(&p->sums);
    free(p);
}

static int oom(tdx_err *err) {
    return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
}

int tdx_regprof_region(tdx_regprof *p, int64_t g, int64_t start, int64_t end, tdx_err *err) {
    uint8_t b[8];
    memcpy(b, &g, sizeof b);
    /* by start, then end, as Go sorts each goroutine's regions */
    return tdx_xsort_add(p->x, (uint64_t)start ^ TDX_XSORT_SIGN, (uint64_t)end ^ TDX_XSORT_SIGN, b,
                         sizeof b, err);
}

/* Reads the next region by start into (ns, ne, ng), or clears `more` at the end. */
static int next_region(tdx_regprof *p, tdx_err *err) {
    tdx_xrec r;
    int rc = tdx_xsort_next(p->x, &r, err);
    if (rc < 0) return -1;
    p->more = rc == 1;
    if (!p->more) return 0;
    if (r.n != 8)
        return tdx_errf(err, TDX_EIO, TDX_NO_OFFSET, "region profile: a sorted record is damaged");
    p->ns = (int64_t)(r.k1 ^ TDX_XSORT_SIGN);
    p->ne = (int64_t)(r.k2 ^ TDX_XSORT_SIGN);
    memcpy(&p->ng, r.p, sizeof p->ng);
    return 0;
}

int tdx_regprof_seal(tdx_regprof *p, tdx_err *err) {
    if (tdx_xsort_rewind(p->x, err)) return -1;
    return next_region(p, err);
}

/* Goroutine g's state; with `make`, a new one when it has none (NULL on memory exhaustion). */
static gst *state_of(tdx_regprof *p, int64_t g, bool make) {
    uint32_t at = tdx_hmap_get(&p->g_idx, (uint64_t)g);
    if (at != TDX_HMAP_EMPTY) return &p->gs.v[at];
    if (!make) return NULL;
    bool reuse = p->unused.n > 0;
    if (reuse) {
        at = p->unused.v[p->unused.n - 1];
    } else {
        if (p->gs.n >= UINT32_MAX - 1 || tdx_vec_reserve(&p->gs, p->gs.n + 1)) return NULL;
        at = (uint32_t)p->gs.n;
    }
    if (tdx_hmap_put(&p->g_idx, (uint64_t)g, at)) return NULL;
    if (reuse)
        p->unused.n--;
    else
        p->gs.n++;
    memset(&p->gs.v[at], 0, sizeof p->gs.v[at]);
    return &p->gs.v[at];
}

/* Go's overlap of a region [s, e] with a wait [from, to], counted only when positive. */
static int64_t overlap(int64_t s, int64_t e, int64_t from, int64_t to) {
    int64_t o = tdx_goprof_overlap(s, e, from, to);
    return o > 0 ? o : 0;
}

/* The region (ns, ne) of ng starts: nested in the last one kept, or now the latest. The one it
 * replaces ends before it starts, so before any wait still to end: a wait under way takes its
 * overlap now. */
static int arrive(tdx_regprof *p, tdx_err *err) {
    gst *s = state_of(p, p->ng, true);
    if (!s) return oom(err);
    if (s->last > p->ns) return 0; /* (Go's last starts at 0: so is a region before time 0) */
    s->last = p->ne;
    if (s->on && s->has_cur) s->acc = tdx_wadd(s->acc, overlap(s->cs, s->ce, s->at, INT64_MAX));
    s->cs = p->ns;
    s->ce = p->ne;
    s->has_cur = 1;
    return 0;
}

/* Whether a transition into the measured state begins a wait: for the blocking profiles, by
 * its reason (GoStop's and GoBlock's string; others have none). */
static bool qualifies(const tdx_regprof *p, const tdx_event *e, const tdx_gen *g) {
    if (p->which > TDX_PROF_SYNC) return true;
    if (e->type != TDX_EV_GO_STOP && e->type != TDX_EV_GO_BLOCK) return false;
    tdx_str r = g ? tdx_gen_str(g, e->str[0]) : (tdx_str){(const uint8_t *)"", 0};
    return (tdx_goprof_reason_bits(r.p, r.n) >> p->which) & 1;
}

/* A goroutine that ended has no wait, and its id's next goroutine has none of its regions. */
static int forget(tdx_regprof *p, int64_t g, tdx_err *err) {
    uint32_t at = tdx_hmap_get(&p->g_idx, (uint64_t)g);
    if (at == TDX_HMAP_EMPTY) return 0;
    tdx_hmap_del(&p->g_idx, (uint64_t)g);
    return tdx_vec_push(&p->unused, at) ? oom(err) : 0;
}

int tdx_regprof_event(tdx_regprof *p, const tdx_event *e, const tdx_gen *g, tdx_err *err) {
    p->nev++;
    /* (a region starting at the event's time overlaps a wait it ends by nothing) */
    while (p->more && p->ns < e->time)
        if (arrive(p, err) || next_region(p, err)) return -1;
    if (e->kind != TDX_KIND_STATE_TRANSITION || e->res_kind != TDX_RES_GOROUTINE) return 0;
    uint8_t state = tdx_goprof_state(p->which);
    gst *s = state_of(p, e->res, false);
    if (!s || !s->on) {
        if (e->to == state && qualifies(p, e, g)) {
            if (!s && !(s = state_of(p, e->res, true))) return oom(err);
            s->on = 1;
            s->at = e->time;
            s->acc = 0;
            s->stack = e->stack;
        }
        return e->to == TDX_GO_NOTEXIST ? forget(p, e->res, err) : 0;
    }
    if (e->to == state) return 0;
    s->on = 0;
    int64_t ns = s->acc;
    if (s->has_cur) ns = tdx_wadd(ns, overlap(s->cs, s->ce, s->at, e->time));
    if (ns > 0) {
        tdx_goprof_add(&p->sums, p->which, 0, s->stack, ns, p->nev);
        if (p->sums.oom) return oom(err);
    }
    return e->to == TDX_GO_NOTEXIST ? forget(p, e->res, err) : 0;
}

int tdx_regprof_records(tdx_regprof *p, const tdx_gen *tabs, tdx_goprof_recs *out, tdx_err *err) {
    out->n = 0;
    for (size_t i = 0; i < p->sums.sums.n; i++) {
        const tdx_goprof_sum *s = &p->sums.sums.v[i];
        if (tdx_vec_push(out, ((tdx_goprof_rec){s->stack, s->count, s->ns, s->seq})))
            return oom(err);
    }
    return tdx_goprof_merge(out, tabs) ? oom(err) : 0;
}
