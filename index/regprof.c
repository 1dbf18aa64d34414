/* regprof.c: the pprof-style profiles of go tool trace's region pages, over the selected regions'
 * intervals (see regprof.h). */
#include "index/regprof.h"

#include <stdlib.h>
#include <string.h>

#include "core/hmap.h"
#include "core/mem.h"
#include "core/spec.h"
#include "core/varint.h"

typedef struct iv {
    int64_t g, start, end;
} iv;

/* A goroutine with selected regions: its intervals, and the wait being measured. */
typedef struct gwait {
    size_t first, n; /* its intervals in ivs */
    int64_t at;      /* when the wait began */
    uint32_t stack;  /* the stack of the event that began it */
    bool on;
} gwait;

struct tdx_regprof {
    int which;
    TDX_VEC(iv) ivs;
    TDX_VEC(gwait) gs;
    tdx_hmap g_idx; /* goroutine id -> index in gs */
    tdx_goprof sums;
    uint64_t nev;
    int oom;
};

/* The state each profile measures (as goprof.c's). */
static const uint8_t measured[TDX_PROF_COUNT] = {TDX_GO_WAITING, TDX_GO_WAITING, TDX_GO_SYSCALL,
                                                 TDX_GO_RUNNABLE};

tdx_regprof *tdx_regprof_new(int which) {
    if (which < 0 || which >= TDX_PROF_COUNT) return NULL;
    tdx_regprof *p = calloc(1, sizeof *p);
    if (p) p->which = which;
    return p;
}

void tdx_regprof_free(tdx_regprof *p) {
    if (!p) return;
    tdx_vec_free(&p->ivs);
    tdx_vec_free(&p->gs);
    tdx_hmap_free(&p->g_idx);
    tdx_goprof_free(&p->sums);
    free(p);
}

int tdx_regprof_region(tdx_regprof *p, int64_t g, int64_t start, int64_t end) {
    return tdx_vec_push(&p->ivs, ((iv){g, start, end})) ? -1 : 0;
}

static int cmp_iv(const void *a, const void *b) {
    const iv *x = a, *y = b;
    if (x->g != y->g) return x->g < y->g ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

int tdx_regprof_seal(tdx_regprof *p) {
    if (p->ivs.n > 1) qsort(p->ivs.v, p->ivs.n, sizeof *p->ivs.v, cmp_iv);
    size_t out = 0;
    for (size_t i = 0; i < p->ivs.n;) {
        int64_t g = p->ivs.v[i].g, last = 0;
        gwait w = {out, 0, 0, 0, false};
        /* Go keeps a region only if it starts at or after the end of the last kept one (its
         * "last" begins at 0, so a region before time 0 is dropped too) */
        for (; i < p->ivs.n && p->ivs.v[i].g == g; i++) {
            if (last > p->ivs.v[i].start) continue;
            p->ivs.v[out++] = p->ivs.v[i];
            last = p->ivs.v[i].end;
        }
        w.n = out - w.first;
        if (!w.n) continue;
        if (p->gs.n >= UINT32_MAX - 1 || tdx_vec_push(&p->gs, w) ||
            tdx_hmap_put(&p->g_idx, (uint64_t)g, (uint32_t)(p->gs.n - 1)))
            return -1;
    }
    p->ivs.n = out;
    return 0;
}

/* Go's sum of the wait [from, to]'s positive overlaps with the goroutine's intervals (disjoint
 * and sorted: the first that ends after `from` is found by bisection). */
static int64_t overlapping(const tdx_regprof *p, const gwait *w, int64_t from, int64_t to) {
    const iv *v = p->ivs.v + w->first;
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].end <= from)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t sum = 0;
    for (size_t i = lo; i < w->n && v[i].start < to; i++) {
        int64_t o = tdx_wsub(v[i].end < to ? v[i].end : to, v[i].start > from ? v[i].start : from);
        if (o > 0) sum = tdx_wadd(sum, o);
    }
    return sum;
}

/* Whether a transition into the measured state begins a wait: for the blocking profiles, by
 * its reason (GoStop's and GoBlock's string; others have none). */
static bool qualifies(const tdx_regprof *p, const tdx_event *e, const tdx_gen *g) {
    if (p->which > TDX_PROF_SYNC) return true;
    if (e->type != TDX_EV_GO_STOP && e->type != TDX_EV_GO_BLOCK) return false;
    tdx_str r = g ? tdx_gen_str(g, e->str[0]) : (tdx_str){(const uint8_t *)"", 0};
    return (tdx_goprof_reason_bits(r.p, r.n) >> p->which) & 1;
}

int tdx_regprof_event(tdx_regprof *p, const tdx_event *e, const tdx_gen *g) {
    p->nev++;
    if (e->kind != TDX_KIND_STATE_TRANSITION || e->res_kind != TDX_RES_GOROUTINE) return 0;
    uint32_t at = tdx_hmap_get(&p->g_idx, (uint64_t)e->res);
    if (at == TDX_HMAP_EMPTY) return 0; /* no selected region: its waits count nothing */
    gwait *w = &p->gs.v[at];
    uint8_t state = measured[p->which];
    if (!w->on) {
        if (e->to == state && qualifies(p, e, g)) {
            w->on = true;
            w->at = e->time;
            w->stack = e->stack;
        }
        return 0;
    }
    if (e->to == state) return 0;
    w->on = false;
    int64_t ns = overlapping(p, w, w->at, e->time);
    if (ns <= 0) return 0;
    tdx_goprof_add(&p->sums, p->which, 0, w->stack, ns, p->nev);
    return p->sums.oom ? -1 : 0;
}

int tdx_regprof_records(tdx_regprof *p, const tdx_gen *tabs, tdx_goprof_recs *out, tdx_err *err) {
    out->n = 0;
    for (size_t i = 0; i < p->sums.sums.n; i++) {
        const tdx_goprof_sum *s = &p->sums.sums.v[i];
        if (tdx_vec_push(out, ((tdx_goprof_rec){s->stack, s->count, s->ns, s->seq})))
            return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    }
    if (tdx_goprof_merge(out, tabs))
        return tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
    return 0;
}
