/* mmu.c: mutator utilization functions and their MMU curve, as Go's internal/trace computes them
 * (MutatorUtilizationV2, MMUCurve): the same arithmetic in the same order, so the same doubles. */
#include "index/analysis/mmu.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

#define MAX_PROCS (1u << 20) /* beyond any runtime's GOMAXPROCS; each P costs a slot */
#define BANDS 1000           /* bands a function is cut into (Go's bandsPerSeries) */

typedef TDX_VEC(tdx_mu) muvec;

typedef struct band {
    double min; /* the lowest utilization in the band */
    double cum; /* the integral up to the band's left edge */
    size_t pos; /* the integrator at the left edge */
} band;

typedef struct series {
    muvec util;
    double *sums; /* sums[j]: the integral up to util[j] */
    band *bands;
    size_t nbands; /* bands + 1 (the last holds the final sum) */
    int64_t band_dur;
} series;

struct tdx_mmu {
    series *s;
    size_t n;
    bool curve; /* sums and bands made */
};

/* ---- the utilization functions ---- */

typedef struct proc {
    int64_t gc; /* > 0: the P does GC work */
    size_t series;
} proc;

/* Go's addUtil: equal values merge; changes at one time stamp keep the lowest. */
static int add_util(muvec *u, int64_t t, double v) {
    if (u->n) {
        tdx_mu *last = &u->v[u->n - 1];
        if (v == last->util) return 0;
        if (t == last->time) {
            if (v < last->util) *last = (tdx_mu){t, v};
            return 0;
        }
    }
    return tdx_vec_push(u, ((tdx_mu){t, v}));
}

static int new_series(tdx_mmu *m, int64_t t) {
    series *s = realloc(m->s, (m->n + 1) * sizeof *s);
    if (!s) return -1;
    m->s = s;
    memset(&s[m->n], 0, sizeof *s);
    return add_util(&s[m->n++].util, t, 1);
}

typedef struct build {
    tdx_mmu *m;
    unsigned flags;
    TDX_VEC(proc) ps;
    int64_t stw;
} build;

static proc *proc_of(build *b, int64_t p) {
    /* Go indexes its P table with the event's P and would fail on any other: ignored here */
    return p >= 0 && (uint64_t)p < b->ps.n ? &b->ps.v[p] : NULL;
}

static void gc_add(build *b, int64_t p, int d) {
    proc *x = proc_of(b, p);
    if (x) x->gc += d;
}

static int set_procs(build *b, int64_t t, uint64_t n) {
    bool per = b->flags & TDX_MMU_PERPROC;
    if (b->ps.n > n) {
        if (per)
            for (size_t i = n; i < b->ps.n; i++)
                if (add_util(&b->m->s[b->ps.v[i].series].util, t, 0)) return -1;
        b->ps.n = (size_t)n;
    }
    while (b->ps.n < n) {
        size_t s = 0;
        if (per || !b->m->n) {
            s = b->m->n;
            if (new_series(b->m, t)) return -1;
        }
        if (tdx_vec_push(&b->ps, ((proc){0, s}))) return -1;
    }
    return 0;
}

static int record(build *b, const tdx_murec *r) {
    unsigned f = b->flags;
    switch (r->kind) {
    case TDX_MU_STW_BEGIN:
    case TDX_MU_STW_END:
        if (f & TDX_MMU_STW) b->stw += r->kind == TDX_MU_STW_BEGIN ? 1 : -1;
        break;
    case TDX_MU_SWEEP_BEGIN:
    case TDX_MU_SWEEP_END:
        if (f & TDX_MMU_SWEEP) gc_add(b, r->p, r->kind == TDX_MU_SWEEP_BEGIN ? 1 : -1);
        break;
    case TDX_MU_ASSIST_BEGIN:
    case TDX_MU_ASSIST_END:
        if (f & TDX_MMU_ASSIST) gc_add(b, r->p, r->kind == TDX_MU_ASSIST_BEGIN ? 1 : -1);
        break;
    case TDX_MU_RUN:
    case TDX_MU_STOP: {
        /* Go's inGC (assisting, with the assist flag) or bgMark (labelled a worker, with the
         * background flag; per P, by a label other than "GC (dedicated)") */
        unsigned bg = f & TDX_MMU_PERPROC ? TDX_MU_WHY_SHARED : TDX_MU_WHY_LABEL;
        if (((f & TDX_MMU_ASSIST) && (r->why & TDX_MU_WHY_ASSIST)) ||
            ((f & TDX_MMU_BACKGROUND) && (r->why & bg)))
            gc_add(b, r->p, r->kind == TDX_MU_RUN ? 1 : -1);
        break;
    }
    case TDX_MU_LABEL:
    case TDX_MU_LABEL_DEDICATED:
        /* per P, dedicated workers do not count: they take the whole P, delaying no goroutine */
        if (!(f & TDX_MMU_BACKGROUND) ||
            ((f & TDX_MMU_PERPROC) && r->kind == TDX_MU_LABEL_DEDICATED))
            break;
        gc_add(b, r->p, 1);
        break;
    default:
        break;
    }
    if (!(f & TDX_MMU_PERPROC)) {
        size_t gcps = 0;
        if (b->stw > 0)
            gcps = b->ps.n;
        else
            for (size_t i = 0; i < b->ps.n; i++) gcps += b->ps.v[i].gc > 0;
        return add_util(&b->m->s[0].util, r->time, 1 - (double)gcps / (double)b->ps.n);
    }
    for (size_t i = 0; i < b->ps.n; i++) {
        const proc *x = &b->ps.v[i];
        if (add_util(&b->m->s[x->series].util, r->time, b->stw > 0 || x->gc > 0 ? 0.0 : 1.0))
            return -1;
    }
    return 0;
}

int tdx_mmu_new(tdx_mmu **out, tdx_muread *r, unsigned flags, tdx_err *err) {
    *out = NULL;
    build b;
    memset(&b, 0, sizeof b);
    b.flags = flags;
    if (!(b.m = calloc(1, sizeof *b.m))) goto oom;
    int rc;
    tdx_murec rec;
    while ((rc = tdx_muread_next(r, &rec, err)) == 1) {
        if (rec.kind == TDX_MU_PROCS) {
            if (rec.n > MAX_PROCS) {
                tdx_errf(err, TDX_EUNSUPPORTED, TDX_NO_OFFSET,
                         "the trace sets GOMAXPROCS to %" PRIu64 " at %" PRId64
                         " ns: more Ps than traceidx measures (%u)",
                         rec.n, rec.time, MAX_PROCS);
                goto fail;
            }
            if (set_procs(&b, rec.time, rec.n)) goto oom;
        }
        /* nothing counts before the first GOMAXPROCS, nor while it is 0 */
        if (!b.ps.n) continue;
        if (record(&b, &rec)) goto oom;
    }
    if (rc < 0) goto fail;
    /* every function ends with 0 at the last event */
    for (size_t i = 0; i < b.ps.n; i++)
        if (add_util(&b.m->s[b.ps.v[i].series].util, r->last, 0)) goto oom;
    tdx_vec_free(&b.ps);
    if (!b.m->n) {
        tdx_mmu_free(b.m);
        return 0;
    }
    *out = b.m;
    return 0;
oom:
    tdx_errf(err, TDX_ENOMEM, TDX_NO_OFFSET, "out of memory");
fail:
    tdx_vec_free(&b.ps);
    tdx_mmu_free(b.m);
    return -1;
}

void tdx_mmu_free(tdx_mmu *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        tdx_vec_free(&m->s[i].util);
        free(m->s[i].sums);
        free(m->s[i].bands);
    }
    free(m->s);
    free(m);
}

size_t tdx_mmu_nseries(const tdx_mmu *m) {
    return m->n;
}

const tdx_mu *tdx_mmu_series(const tdx_mmu *m, size_t i, size_t *n) {
    *n = m->s[i].util.n;
    return m->s[i].util.v;
}

/* ---- integrating a function ---- */

typedef struct integ {
    const series *s;
    size_t pos; /* the index of the last change at or before the current time */
} integ;

/* The integral from the start to t (t never goes back by more than Go's does). */
static double advance(integ *in, int64_t t) {
    const tdx_mu *u = in->s->util.v;
    size_t n = in->s->util.n, pos = in->pos;
    if (pos + 8 < n && u[pos + 8].time > t) { /* near: a linear scan */
        while (pos + 1 < n && u[pos + 1].time <= t) pos++;
    } else { /* far: binary search for t's first strict successor */
        size_t l = pos, r = n;
        while (l < r) {
            size_t h = (l + r) / 2;
            if (u[h].time <= t)
                l = h + 1;
            else
                r = h;
        }
        pos = l ? l - 1 : 0;
    }
    in->pos = pos;
    double partial = 0;
    if (t != u[pos].time) partial = u[pos].util * (double)(t - u[pos].time);
    return in->s->sums[pos] + partial;
}

/* The first change after t (INT64_MAX: none). */
static int64_t next_change(const integ *in, int64_t t) {
    const tdx_mu *u = in->s->util.v;
    for (size_t i = in->pos; i < in->s->util.n; i++)
        if (u[i].time > t) return u[i].time;
    return INT64_MAX;
}

static void band_time(const series *s, size_t i, int64_t *start, int64_t *end) {
    *start = (int64_t)i * s->band_dur + s->util.v[0].time;
    *end = *start + s->band_dur;
}

static int make_curve(tdx_mmu *m) {
    if (m->curve) return 0;
    for (size_t k = 0; k < m->n; k++) {
        series *s = &m->s[k];
        size_t n = s->util.n;
        if (!(s->sums = malloc(n * sizeof *s->sums))) return -1;
        tdx_mu prev = {0, 0};
        double sum = 0;
        for (size_t j = 0; j < n; j++) {
            sum += prev.util * (double)(s->util.v[j].time - prev.time);
            s->sums[j] = sum;
            prev = s->util.v[j];
        }
        size_t nb = n < BANDS ? n : BANDS;
        int64_t dur = s->util.v[n - 1].time - s->util.v[0].time;
        s->band_dur = (dur + (int64_t)nb - 1) / (int64_t)nb;
        if (s->band_dur < 1) s->band_dur = 1;
        s->nbands = nb + 1;
        if (!(s->bands = malloc(s->nbands * sizeof *s->bands))) return -1;
        integ left = {s, 0};
        for (size_t i = 0; i < s->nbands; i++) {
            int64_t start, end;
            band_time(s, i, &start, &end);
            double cum = advance(&left, start), min = 1.0;
            for (size_t j = left.pos; j < n && s->util.v[j].time < end; j++)
                min = fmin(min, s->util.v[j].util);
            s->bands[i] = (band){min, cum, left.pos};
        }
    }
    m->curve = true;
    return 0;
}

/* ---- the windowed minimum ---- */

/* A band's lower bound on the mean utilization of the windows that start in it. */
typedef struct bandu {
    size_t series, i;
    double bound;
} bandu;

/* container/heap's sift-down and sift-up, with the order Go's heaps use, so that equal keys
 * come out in the same order as in Go. */
typedef bool (*less_fn)(const void *h, size_t i, size_t j);

static bool bandu_less(const void *h, size_t i, size_t j) {
    const bandu *b = h;
    return b[i].bound < b[j].bound;
}

static bool win_less(const void *h, size_t i, size_t j) { /* the best window on top */
    const tdx_muwin *w = h;
    if (w[i].util != w[j].util) return w[i].util > w[j].util;
    return w[i].time > w[j].time;
}

static void swap_el(void *h, size_t size, size_t i, size_t j) {
    unsigned char tmp[32], *a = (unsigned char *)h + i * size, *b = (unsigned char *)h + j * size;
    memcpy(tmp, a, size);
    memcpy(a, b, size);
    memcpy(b, tmp, size);
}

static bool heap_down(void *h, size_t size, less_fn less, size_t i0, size_t n) {
    size_t i = i0;
    for (;;) {
        size_t j1 = 2 * i + 1;
        if (j1 >= n) break;
        size_t j = j1;
        if (j1 + 1 < n && less(h, j1 + 1, j1)) j = j1 + 1;
        if (!less(h, j, i)) break;
        swap_el(h, size, i, j);
        i = j;
    }
    return i > i0;
}

static void heap_up(void *h, size_t size, less_fn less, size_t j) {
    while (j > 0) {
        size_t i = (j - 1) / 2;
        if (!less(h, j, i)) break;
        swap_el(h, size, i, j);
        j = i;
    }
}

/* Go's accumulator, without the distribution (which Go's MUD never fills: see tdx_mmu_min). */
typedef struct acc {
    double mmu, bound;
    size_t nworst;
    tdx_muwin *w; /* a heap of up to nworst windows */
    size_t nw;
} acc;

/* Adds the window at t; true when nothing further can change the result. */
static bool add_mu(acc *a, int64_t t, double mu, int64_t window) {
    if (mu < a->mmu) a->mmu = mu;
    a->bound = a->mmu;
    if (!a->nworst) return mu == 0;
    if (a->nw < a->nworst || mu < a->w[0].util) {
        bool keep = false;
        for (size_t i = 0; i < a->nw; i++) {
            const tdx_muwin *u = &a->w[i];
            if (t + window > u->time && u->time + window > t) {
                if (u->util <= mu) {
                    keep = true; /* the earlier, worse window stays */
                } else {         /* container/heap's Remove */
                    size_t n = a->nw - 1;
                    if (n != i) {
                        swap_el(a->w, sizeof *a->w, i, n);
                        if (!heap_down(a->w, sizeof *a->w, win_less, i, n))
                            heap_up(a->w, sizeof *a->w, win_less, i);
                    }
                    a->nw--;
                }
                break;
            }
        }
        if (!keep) {
            a->w[a->nw++] = (tdx_muwin){t, mu}; /* room for nworst + 1 */
            heap_up(a->w, sizeof *a->w, win_less, a->nw - 1);
            if (a->nw > a->nworst) { /* Pop */
                swap_el(a->w, sizeof *a->w, 0, a->nw - 1);
                heap_down(a->w, sizeof *a->w, win_less, 0, a->nw - 1);
                a->nw--;
            }
        }
    }
    if (a->nw < a->nworst)
        a->bound = 1.0;
    else
        a->bound = fmax(a->bound, a->w[0].util);
    return a->nw == a->nworst && a->w[0].util == 0;
}

static size_t band_utils(const series *s, size_t si, int64_t window, bandu *out) {
    int64_t bd = s->band_dur;
    int64_t minb = (window + bd - 1) / bd, maxb = (window + 2 * (bd - 1)) / bd;
    int64_t tail = window % bd;
    int64_t nu = (int64_t)s->nbands - maxb + 1;
    if (nu < 0 || minb < 1) nu = 0; /* (minb < 1 only for an empty window, which Go rejects) */
    for (int64_t i = 0; i < nu; i++) {
        double util = 0;
        double l = s->bands[i].min, r1 = s->bands[i + minb - 1].min,
               r2 = s->bands[i + maxb - 1].min;
        double minband = fmin(l, fmin(r1, r2));
        if (minb == 1) {
            util += minband * (double)window;
        } else {
            util += minband * (double)bd;
            double mid = 0.0;
            if (minband == l)
                mid = fmin(r1, r2);
            else if (minband == r1)
                mid = fmin(l, r2);
            else if (minband == r2)
                mid = fmin(l, r1);
            util += mid * (double)tail;
        }
        if (minb > 2) util += s->bands[i + minb - 1].cum - s->bands[i + 1].cum;
        out[i] = (bandu){si, (size_t)i, util / (double)window};
    }
    return (size_t)nu;
}

/* The exact minimum for the windows that start in band bi. */
static void band_mmu(const series *s, size_t bi, int64_t window, acc *a) {
    integ left = {s, s->bands[bi].pos}, right = left;
    int64_t t, end;
    band_time(s, bi, &t, &end);
    int64_t util_end = s->util.v[s->util.n - 1].time - window;
    if (util_end < end) end = util_end;
    for (;;) {
        double r = advance(&right, t + window), l = advance(&left, t);
        double mu = (r - l) / (double)window;
        if (add_mu(a, t, mu, window)) break;
        if (t == end) break;
        /* the windowed mean moves by at most 1/window per ns */
        int64_t min_t = t + (int64_t)((mu - a->bound) * (double)window);
        int64_t t1 = next_change(&left, t), t2 = next_change(&right, t + window) - window;
        t = t1 < t2 ? t1 : t2;
        if (t < min_t) t = min_t;
        if (t >= end) t = end;
    }
}

static int run(tdx_mmu *m, int64_t window, acc *a) {
    if (window <= 0) {
        a->mmu = 0;
        return 0;
    }
    if (make_curve(m)) return -1;
    size_t total = 0;
    for (size_t k = 0; k < m->n; k++) total += m->s[k].nbands;
    bandu *h = malloc((total ? total : 1) * sizeof *h);
    int64_t *wins = malloc((m->n ? m->n : 1) * sizeof *wins);
    if (!h || !wins) {
        free(h);
        free(wins);
        return -1;
    }
    size_t nh = 0;
    for (size_t k = 0; k < m->n; k++) {
        const series *s = &m->s[k];
        int64_t max = s->util.v[s->util.n - 1].time - s->util.v[0].time;
        wins[k] = window > max ? max : window;
        nh += band_utils(s, k, wins[k], h + nh);
    }
    for (size_t i = nh / 2; i-- > 0;) heap_down(h, sizeof *h, bandu_less, i, nh);
    while (nh && h[0].bound < a->bound) {
        band_mmu(&m->s[h[0].series], h[0].i, wins[h[0].series], a);
        swap_el(h, sizeof *h, 0, nh - 1);
        heap_down(h, sizeof *h, bandu_less, 0, nh - 1);
        nh--;
    }
    free(h);
    free(wins);
    return 0;
}

int tdx_mmu_min(tdx_mmu *m, int64_t window, double *out) {
    acc a = {1.0, 1.0, 0, NULL, 0};
    int rc = run(m, window, &a);
    *out = a.mmu;
    return rc;
}

static int cmp_win(const void *x, const void *y) {
    const tdx_muwin *a = x, *b = y;
    if (a->util != b->util) return a->util < b->util ? -1 : 1;
    return (a->time > b->time) - (a->time < b->time);
}

int tdx_mmu_worst(tdx_mmu *m, int64_t window, size_t n, tdx_muwin *out, size_t *got) {
    *got = 0;
    acc a = {1.0, 1.0, n, NULL, 0};
    if (!n) return 0;
    if (!(a.w = malloc((n + 1) * sizeof *a.w))) return -1;
    if (run(m, window, &a)) {
        free(a.w);
        return -1;
    }
    qsort(a.w, a.nw, sizeof *a.w, cmp_win);
    memcpy(out, a.w, a.nw * sizeof *a.w);
    *got = a.nw;
    free(a.w);
    return 0;
}
