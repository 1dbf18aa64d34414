/* tracegen_sched.c: the simulated Go runtime behind tracegen: threads (Ms) with procs (Ps) run
 * goroutines of a busy HTTP service (connection handlers, a worker pool, fan-out children,
 * tickers, log writers, GC workers) under a scheduler modelled on Go's: local and global run
 * queues, work stealing, spinning threads, netpoller, timers, sysmon retaking procs from syscalls,
 * GC cycles with stop-the-world phases, mark assists and sweeping.
 *
 * Threads are stepped in order of their next-step time; one step runs a whole scheduling decision
 * or goroutine time slice and writes its events with that thread's own clock. Whenever a step
 * touches a goroutine or proc that another thread touched last, its event time is pushed past
 * that thread's event, so every cross-thread dependency also goes forward in time, which is what
 * Go's ordering of per-thread batches relies on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tracegen.h"

#define US(x) ((uint64_t)((x)*15.625)) /* microseconds to ticks */
#define MSEC(x) ((uint64_t)((x)*15625.0))
#define GP(i) (&s->gs[i])

/* Distribution tables in 16.16 fixed point: integer multiplies on the hot path. */
static uint32_t ln_tab[1024];  /* exp(0.9 * z) for z at 1024 normal quantiles */
static uint32_t exp_tab[1024]; /* exponential quantiles, mean 1 */

static inline uint64_t lognorm(tg_sim *s, uint64_t median) {
    return ((median * ln_tab[tg_rand(&s->rng) & 1023]) >> 16) + 1;
}
static inline uint64_t expo(tg_sim *s, uint64_t mean) {
    return ((mean * exp_tab[tg_rand(&s->rng) & 1023]) >> 16) + 1;
}

/* Inverse of the standard normal CDF (Acklam's rational approximation; plenty for a workload). */
static double norm_inv(double p) {
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    if (p < 0.02425) {
        double q = sqrt(-2 * log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    if (p > 1 - 0.02425) return -norm_inv(1 - p);
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/* ---- the step heap: threads ordered by the time of their next step ---- */

/* Keys live in the heap (a copy of the thread's clock when queued) so that sifting does not
 * chase pointers; ties go to the lower thread index for determinism. */
static inline bool s_less(const tg_sent *a, const tg_sent *b) {
    return a->clock < b->clock || (a->clock == b->clock && a->mi < b->mi);
}

static void hput(tg_sim *s, uint32_t i, tg_sent e) {
    s->step_heap[i] = e;
    s->ms[e.mi]->hidx = i;
}

static void hup(tg_sim *s, uint32_t i) {
    tg_sent e = s->step_heap[i];
    while (i > 0) {
        uint32_t par = (i - 1) / 2;
        if (!s_less(&e, &s->step_heap[par])) break;
        hput(s, i, s->step_heap[par]);
        i = par;
    }
    hput(s, i, e);
}

static void hdown(tg_sim *s, uint32_t i) {
    tg_sent e = s->step_heap[i];
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, mn = l;
        if (l >= s->nstep) break;
        if (r < s->nstep && s_less(&s->step_heap[r], &s->step_heap[l])) mn = r;
        if (!s_less(&s->step_heap[mn], &e)) break;
        hput(s, i, s->step_heap[mn]);
        i = mn;
    }
    hput(s, i, e);
}

static void m_schedule(tg_sim *s, uint32_t mi) {
    tg_m *m = s->ms[mi];
    tg_sent e = {.clock = m->clock, .mi = mi};
    if (m->hidx != UINT32_MAX) {
        uint32_t i = m->hidx;
        s->step_heap[i] = e;
        hup(s, i);
        hdown(s, m->hidx);
        return;
    }
    m->hidx = s->nstep++;
    s->step_heap[m->hidx] = e;
    hup(s, m->hidx);
}

static void m_unschedule(tg_sim *s, uint32_t mi) {
    tg_m *m = s->ms[mi];
    uint32_t i = m->hidx;
    if (i == UINT32_MAX) return;
    uint32_t last = --s->nstep;
    if (i != last) {
        tg_sent e = s->step_heap[last];
        hput(s, i, e);
        hup(s, i);
        hdown(s, s->ms[e.mi]->hidx);
    }
    m->hidx = UINT32_MAX;
}

/* ---- timers and network readiness: (time, goroutine) queues ---- */

static void h2_push(tg_heap2 *h, uint64_t t, int32_t g) {
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 256;
        h->v = tg_xrealloc(h->v, h->cap * sizeof *h->v);
    }
    uint32_t i = h->n++;
    while (i > 0) {
        uint32_t par = (i - 1) / 2;
        if (h->v[par].t <= t) break;
        h->v[i] = h->v[par];
        i = par;
    }
    h->v[i] = (tg_tent){.t = t, .g = g};
}

static tg_tent h2_pop(tg_heap2 *h) {
    tg_tent top = h->v[0];
    tg_tent e = h->v[--h->n];
    uint32_t i = 0, n = h->n;
    for (;;) {
        uint32_t l = 2 * i + 1, mn = l;
        if (l >= n) break;
        if (l + 1 < n && h->v[l + 1].t < h->v[l].t) mn = l + 1;
        if (h->v[mn].t >= e.t) break;
        h->v[i] = h->v[mn];
        i = mn;
    }
    if (n) h->v[i] = e;
    return top;
}

static void wb_add(tg_wheel *w, uint64_t bk, uint64_t t, int32_t g) {
    uint32_t k = (uint32_t)(bk & (TGW_N - 1));
    tg_wbucket *b = &w->b[k];
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 8;
        b->v = tg_xrealloc(b->v, b->cap * sizeof *b->v);
    }
    b->v[b->n++] = (tg_tent){.t = t, .g = g};
    w->bits[k >> 6] |= 1ull << (k & 63);
}

static void tw_push(tg_wheel *w, uint64_t t, int32_t g) {
    if (!w->b) w->b = tg_xcalloc(TGW_N, sizeof *w->b);
    uint64_t bk = t >> TGW_SHIFT;
    if (bk < w->base) bk = w->base; /* earlier than everything queued: the first bucket */
    w->n++;
    if (bk >= w->base + TGW_N) {
        h2_push(&w->far, t, g);
        return;
    }
    wb_add(w, bk, t, g);
    if (w->min_ok && t < w->min_t) {
        w->min_t = t;
        w->min_b = (uint32_t)(bk & (TGW_N - 1));
        w->min_i = w->b[w->min_b].n - 1;
    }
}

/* Moves base to bucket `bk` and pulls in far entries that are now within the horizon. */
static void tw_advance(tg_wheel *w, uint64_t bk) {
    w->base = bk;
    while (w->far.n && (w->far.v[0].t >> TGW_SHIFT) < w->base + TGW_N) {
        tg_tent e = h2_pop(&w->far);
        uint64_t eb = e.t >> TGW_SHIFT;
        wb_add(w, eb < w->base ? w->base : eb, e.t, e.g);
    }
}

static uint64_t tw_top(tg_wheel *w) {
    if (!w->n) return UINT64_MAX;
    if (w->min_ok) return w->min_t;
    for (;;) {
        /* First non-empty bucket at or after base (around the ring). */
        uint32_t start = (uint32_t)(w->base & (TGW_N - 1));
        uint32_t found = UINT32_MAX;
        for (uint32_t step = 0; step <= TGW_N / 64; step++) {
            uint32_t wi = ((start >> 6) + step) % (TGW_N / 64);
            uint64_t word = w->bits[wi];
            if (step == 0) word &= ~0ull << (start & 63);
            if (word) {
                found = wi * 64 + (uint32_t)__builtin_ctzll(word);
                break;
            }
            if (step == TGW_N / 64 - 1 && (start & 63) == 0) break;
        }
        if (found == UINT32_MAX) { /* only far entries: jump ahead */
            tw_advance(w, w->far.v[0].t >> TGW_SHIFT);
            continue;
        }
        uint64_t bk = w->base + ((found - start) & (TGW_N - 1));
        if (bk != w->base) tw_advance(w, bk);
        tg_wbucket *b = &w->b[found];
        uint32_t mi = 0;
        for (uint32_t i = 1; i < b->n; i++)
            if (b->v[i].t < b->v[mi].t) mi = i;
        w->min_ok = true;
        w->min_t = b->v[mi].t;
        w->min_b = found;
        w->min_i = mi;
        return w->min_t;
    }
}

static int32_t tw_pop(tg_wheel *w) {
    tw_top(w);
    tg_wbucket *b = &w->b[w->min_b];
    int32_t g = b->v[w->min_i].g;
    b->v[w->min_i] = b->v[--b->n];
    if (!b->n) w->bits[w->min_b >> 6] &= ~(1ull << (w->min_b & 63));
    w->n--;
    w->min_ok = false;
    return g;
}

/* ---- goroutines ---- */

static int32_t g_new(tg_sim *s, uint8_t role, uint8_t path) {
    int32_t gi;
    if (s->ngfree) {
        gi = s->gfree[--s->ngfree];
    } else {
        if (s->ngs == s->capgs) {
            s->capgs *= 2;
            s->gs = tg_xrealloc(s->gs, s->capgs * sizeof *s->gs);
            s->gfree = tg_xrealloc(s->gfree, s->capgs * sizeof *s->gfree);
        }
        gi = (int32_t)s->ngs++;
    }
    tg_g *g = GP(gi);
    memset(g, 0, sizeof *g);
    /* Goroutine IDs advance by one per creation; the runtime hands them out in per-P batches of
     * 16, which shows as small jumps. */
    g->goid = s->next_goid++;
    if (tg_chance(&s->rng, TG_P(0.02))) s->next_goid += tg_range(&s->rng, 1, 15);
    g->role = role;
    g->path = path;
    g->variant = (uint8_t)tg_rand(&s->rng);
    g->m = -1;
    g->peer = -1;
    s->live_gs++;
    s->created++;
    return gi;
}

static void g_free(tg_sim *s, int32_t gi) {
    GP(gi)->status = GS_DEAD;
    s->gfree[s->ngfree++] = gi;
    s->live_gs--;
}

/* ---- event timing and the statuses a generation needs before other events ---- */

static uint64_t at_slow(tg_sim *s, uint64_t t) {
    /* An event and the statuses written before it must land in the same generation. */
    if (t < s->gen_next && t + TG_GEN_MARGIN >= s->gen_next) t = s->gen_next;
    if (t >= s->gen_next2)
        tg_die("internal: an event reached two generations ahead (t=%llu)", (unsigned long long)t);
    return t;
}

static inline uint64_t at(tg_sim *s, tg_m *m, uint64_t t) {
    if (t <= m->last_t) t = m->last_t + 1;
    if (t + TG_GEN_MARGIN >= s->gen_next) t = at_slow(s, t);
    return t;
}

static void late_g(tg_sim *s, tg_g *g) {
    tg_late l = {.kind = 0,
                 .status = g->status,
                 .active = g->in_assist,
                 .id = g->goid,
                 .m = (g->status == GS_SYSCALL || g->status == GS_RUNNING) ? s->ms[g->m]->tid
                                                                           : TG_NONE,
                 .stack = tg_late_stack(s, g, s->gen)};
    tg_late_add(s, s->gen, &l);
}

/* Writes goroutine g's status if generation gen has not announced it yet: the runtime does this
 * before the first event of each generation that mentions a goroutine. */
static uint64_t go_status(tg_sim *s, tg_m *m, tg_g *g, uint64_t t, uint64_t gen) {
    if (g->seen_gen == gen) return t;
    if (gen > s->gen && g->seen_gen < s->gen) late_g(s, g);
    uint64_t mid =
        (g->status == GS_RUNNING || g->status == GS_SYSCALL) ? s->ms[g->m]->tid : TG_NONE;
    if (tg_late_stack(s, g, gen))
        tg_ev(s, m, t, TDX_EV_GO_STATUS_STACK, 4, g->goid, mid, g->status,
              tg_vstk(s, gen, g->bstk - 1));
    else
        tg_ev(s, m, t, TDX_EV_GO_STATUS, 3, g->goid, mid, g->status, 0);
    t++;
    if (g->in_assist) {
        tg_ev(s, m, t, TDX_EV_GC_MARK_ASSIST_ACTIVE, 1, g->goid, 0, 0, 0);
        t++;
    }
    g->seen_gen = gen;
    g->seq = 0;
    return t;
}

static uint64_t proc_status(tg_sim *s, tg_m *m, uint32_t pi, uint64_t t, uint64_t gen,
                            uint8_t wire) {
    tg_p *p = &s->ps[pi];
    if (p->seen_gen == gen) return t;
    if (gen > s->gen && p->seen_gen < s->gen) {
        tg_late l = {.kind = 1, .status = p->status, .active = p->in_sweep, .id = pi};
        tg_late_add(s, s->gen, &l);
    }
    tg_ev(s, m, t, TDX_EV_PROC_STATUS, 2, pi, wire, 0, 0);
    t++;
    if (p->in_sweep) {
        tg_ev(s, m, t, TDX_EV_GC_SWEEP_ACTIVE, 1, pi, 0, 0, 0);
        t++;
    }
    p->seen_gen = gen;
    p->seq = 0;
    return t;
}

static uint64_t own_status(tg_sim *s, tg_m *m, uint64_t t, uint64_t gen) {
    if (m->p >= 0) t = proc_status(s, m, (uint32_t)m->p, t, gen, s->ps[m->p].status);
    if (m->g >= 0) t = go_status(s, m, GP(m->g), t, gen);
    return t;
}

/* The time of m's next event at or after t, after any statuses of m's own proc and goroutine
 * that the event's generation still needs. */
static inline uint64_t evt(tg_sim *s, tg_m *m, uint64_t t) {
    t = at(s, m, t);
    uint64_t gen = tg_gen_of(s, t);
    if (m->ctx_gen != gen) {
        t = own_status(s, m, t, gen);
        m->ctx_gen = gen;
    }
    return t;
}

/* Next event of m, dt ticks after its clock; advances the clock to it. */
static inline uint64_t ue(tg_sim *s, tg_m *m, uint64_t dt) {
    uint64_t t = evt(s, m, m->clock + dt);
    m->clock = t;
    return t;
}

static inline uint64_t small_dt(tg_sim *s) {
    uint64_t x = tg_rand(&s->rng);
    return 1 + (x & 15) + ((x >> 8) & 7);
}

static inline uint32_t stk(tg_sim *s, uint64_t t, int cat, const tg_g *g) {
    return tg_vstk(s, tg_gen_of(s, t),
                   tg_pick(s, cat, g ? g->path : PATH_RUNTIME, g ? g->variant : 0));
}

static inline uint32_t str(tg_sim *s, uint64_t t, uint32_t si) {
    return tg_str(s, tg_gen_of(s, t), si);
}

static inline bool marking_at(const tg_sim *s, uint64_t t) {
    return s->gc_mark_start && t >= s->gc_mark_start && t < s->gc_mark_end;
}
static inline bool sweeping_at(const tg_sim *s, uint64_t t) {
    return t >= s->gc_sweep_start && t < s->gc_sweep_end;
}

/* Whether proc p should run its dedicated mark worker now (GC wants procs/4 of them). */
static bool want_dedicated(const tg_sim *s, const tg_p *p, uint64_t t) {
    if (!s->gc_marking && !marking_at(s, t)) return false;
    if (!marking_at(s, t) && s->gc_term_claimed) return false;
    if (p->ded_until > t) return false;
    uint32_t n = 0;
    for (int i = 0; i < s->procs; i++) n += s->ps[i].ded_until > t;
    return n < s->gc_dedicated_want;
}

/* ---- run queues ---- */

static uint32_t grq_len(const tg_sim *s) {
    return s->grq_tail - s->grq_head;
}

static void grq_put(tg_sim *s, int32_t gi) {
    if (grq_len(s) == s->grq_cap) {
        uint32_t nc = s->grq_cap * 2;
        int32_t *n = tg_xmalloc(nc * sizeof *n);
        for (uint32_t i = 0; i < s->grq_cap; i++)
            n[i] = s->grq[(s->grq_head + i) & (s->grq_cap - 1)];
        free(s->grq);
        s->grq = n;
        s->grq_tail = s->grq_cap;
        s->grq_head = 0;
        s->grq_cap = nc;
    }
    s->grq[s->grq_tail++ & (s->grq_cap - 1)] = gi;
}

static int32_t grq_get(tg_sim *s) {
    if (s->grq_head == s->grq_tail) return -1;
    return s->grq[s->grq_head++ & (s->grq_cap - 1)];
}

static uint32_t runq_len(const tg_p *p) {
    return p->rq_tail - p->rq_head + (p->runnext >= 0);
}

/* Go's runqput: `next` puts the goroutine in runnext (it runs next, the previous runnext moves
 * to the tail); a full local queue spills half of itself to the global queue. */
static void runq_put(tg_sim *s, tg_p *p, int32_t gi, bool next) {
    if (next) {
        int32_t old = p->runnext;
        p->runnext = gi;
        if (old < 0) return;
        gi = old;
    }
    if (p->rq_tail - p->rq_head == TG_RUNQ)
        for (int i = 0; i < TG_RUNQ / 2; i++) grq_put(s, p->rq[p->rq_head++ % TG_RUNQ]);
    p->rq[p->rq_tail++ % TG_RUNQ] = gi;
}

static int32_t runq_get(tg_p *p) {
    if (p->runnext >= 0) {
        int32_t gi = p->runnext;
        p->runnext = -1;
        return gi;
    }
    if (p->rq_head == p->rq_tail) return -1;
    return p->rq[p->rq_head++ % TG_RUNQ];
}

static bool any_runnable(const tg_sim *s) {
    if (grq_len(s)) return true;
    for (int i = 0; i < s->procs; i++)
        if (runq_len(&s->ps[i])) return true;
    return false;
}

/* ---- threads ---- */

static uint32_t m_new(tg_sim *s) {
    if (s->nms >= s->maxms) tg_die("internal: too many threads");
    tg_m *m = tg_xcalloc(1, sizeof *m);
    m->idx = s->nms;
    m->tid = s->next_tid;
    /* Linux hands out thread IDs in creation order; later threads see other processes' churn. */
    s->next_tid += s->nms < 6 ? 1 : tg_range(&s->rng, 1, 700);
    m->p = m->g = m->wake_p = -1;
    m->hidx = UINT32_MAX;
    m->state = MS_PARKED;
    for (int k = 0; k < 2; k++) m->b[k].data = tg_xmalloc(TG_BUFCAP);
    s->ms[s->nms++] = m;
    return m->idx;
}

/* An idle proc for a thread to acquire: the most recently idled one, as pidleget does. */
static int32_t idle_p(const tg_sim *s) {
    if (!s->nfree_p) return -1;
    int32_t best = -1;
    for (int i = 0; i < s->procs; i++) {
        const tg_p *p = &s->ps[i];
        if (p->status == PS_IDLE && !p->reserved && (best < 0 || p->last_t > s->ps[best].last_t))
            best = i;
    }
    return best;
}

static int32_t take_idle_m(tg_sim *s) {
    if (s->nidle_m) {
        uint32_t k = tg_below(&s->rng, s->nidle_m);
        uint32_t mi = s->idle_m[k];
        s->idle_m[k] = s->idle_m[--s->nidle_m];
        return (int32_t)mi;
    }
    if (s->nms < s->maxms) return (int32_t)m_new(s);
    if (s->netpoll_m >= 0) { /* netpollBreak: the thread blocked in netpoll takes the work */
        int32_t mi = s->netpoll_m;
        s->netpoll_m = -1;
        return mi;
    }
    return -1;
}

/* startm: a thread wakes up and will acquire proc pi (ProcStart) a few microseconds later. */
static void startm(tg_sim *s, int32_t pi, uint64_t t, bool spinning) {
    int32_t mi = take_idle_m(s);
    if (mi < 0) return;
    tg_m *m = s->ms[mi];
    s->ps[pi].reserved = 1;
    s->nfree_p--;
    m->wake_p = pi;
    m->state = MS_WAKE;
    if (spinning) {
        m->spinning = 1;
        s->nspinning++;
    }
    uint64_t w = t + tg_range(&s->rng, US(3), US(40));
    m->clock = w > m->last_t ? w : m->last_t + 1;
    m_schedule(s, (uint32_t)mi);
}

/* wakep: new work and an idle proc, and nobody already looking for work. */
static void wakep(tg_sim *s, uint64_t t) {
    if (s->nspinning) return;
    int32_t pi = idle_p(s);
    if (pi >= 0) startm(s, pi, t, true);
}

/* handoffp: a proc freed from a syscall gets a thread only if there is work for it. */
static void handoff(tg_sim *s, int32_t pi, uint64_t t) {
    if (runq_len(&s->ps[pi]) || grq_len(s) || want_dedicated(s, &s->ps[pi], t))
        startm(s, pi, t, false);
}

static uint64_t next_io(tg_sim *s) {
    uint64_t a = tw_top(&s->timers), b = tw_top(&s->netready);
    return a < b ? a : b;
}

/* A timer or network event was added: the thread blocked in netpoll may have to wake earlier. */
static void poke_netpoll(tg_sim *s, uint64_t t) {
    if (s->netpoll_m < 0) return;
    tg_m *m = s->ms[s->netpoll_m];
    if (t < m->clock) {
        m->clock = t > m->last_t ? t : m->last_t + 1;
        m_schedule(s, m->idx);
    }
}

static void park(tg_sim *s, tg_m *m) {
    if (m->spinning) {
        m->spinning = 0;
        s->nspinning--;
    }
    if (s->netpoll_m < 0) {
        /* The last thread to find nothing blocks in netpoll until the next timer or I/O. */
        s->netpoll_m = (int32_t)m->idx;
        m->state = MS_NETPOLL;
        uint64_t w = next_io(s);
        if (w > UINT64_MAX / 4) w = UINT64_MAX / 4;
        m->clock = w > m->clock ? w : m->clock + 1;
        return;
    }
    m->state = MS_PARKED;
    s->idle_m[s->nidle_m++] = m->idx;
}

/* ---- scheduler events ---- */

static inline uint64_t umax(uint64_t a, uint64_t b) {
    return a > b ? a : b;
}

static void e_proc_start(tg_sim *s, tg_m *m, int32_t pi) {
    tg_p *p = &s->ps[pi];
    if (p->status != PS_IDLE || m->p >= 0)
        tg_die("internal: thread %u starting proc %d in state %u", m->idx, pi, p->status);
    uint64_t t = at(s, m, umax(m->clock, p->last_t + 1));
    uint64_t gen = tg_gen_of(s, t);
    if (m->g >= 0) t = go_status(s, m, GP(m->g), t, gen); /* a goroutine still in its syscall */
    t = proc_status(s, m, (uint32_t)pi, t, gen, PS_IDLE);
    p->seq++;
    tg_ev(s, m, t, TDX_EV_PROC_START, 2, (uint64_t)pi, p->seq, 0, 0);
    p->status = PS_RUNNING;
    s->nfree_p--;
    p->m = (int32_t)m->idx;
    p->last_t = t;
    m->p = pi;
    m->ctx_gen = gen; /* its proc and goroutine are both announced now */
    m->clock = t;
}

static void e_proc_stop(tg_sim *s, tg_m *m) {
    tg_p *p = &s->ps[m->p];
    if (p->m != (int32_t)m->idx)
        tg_die("internal: thread %u stopping proc %d of thread %d", m->idx, m->p, p->m);
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_PROC_STOP, 0, 0, 0, 0, 0);
    p->status = PS_IDLE;
    s->nfree_p++;
    p->m = -1;
    p->last_t = t;
    m->p = -1;
}

/* ProcSteal by thread m of proc pi, which sits in a syscall on its thread (possibly m itself). */
static void e_proc_steal(tg_sim *s, tg_m *m, int32_t pi) {
    tg_p *p = &s->ps[pi];
    if (p->status != PS_SYSCALL || p->m < 0 || s->ms[p->m]->p != pi)
        tg_die("internal: stealing proc %d in state %u", pi, p->status);
    tg_m *v = s->ms[p->m];
    uint64_t t = evt(s, m, umax(m->clock, p->last_t + 1));
    /* First mention of the proc in this generation: the stealer says it was abandoned in a
     * syscall, as the runtime does. */
    t = proc_status(s, m, (uint32_t)pi, t, tg_gen_of(s, t), 4);
    p->seq++;
    s->steals++;
    tg_ev(s, m, t, TDX_EV_PROC_STEAL, 3, (uint64_t)pi, p->seq, v->tid, 0);
    p->status = PS_IDLE;
    s->nfree_p++;
    p->m = -1;
    p->last_t = t;
    v->p = -1;
    v->steal_t = t;
    m->clock = t;
}

/* GoUnblock of waiting goroutine gi by thread m (with or without a proc or goroutine). */
static void unblock_raw(tg_sim *s, tg_m *m, int32_t gi, int cat) {
    tg_g *g = GP(gi);
    if (g->status != GS_WAITING)
        tg_die("internal: unblocking goroutine %llu in state %u", (unsigned long long)g->goid,
               g->status);
    uint64_t t = evt(s, m, umax(m->clock + small_dt(s), g->last_t + 1));
    t = go_status(s, m, g, t, tg_gen_of(s, t));
    g->seq++;
    uint32_t st = cat >= 0 ? stk(s, t, cat, m->g >= 0 ? GP(m->g) : NULL) : 0;
    tg_ev(s, m, t, TDX_EV_GO_UNBLOCK, 3, g->goid, g->seq, st, 0);
    g->status = GS_RUNNABLE;
    g->wake = W_NONE;
    g->last_t = t;
    m->clock = t;
}

/* Unblocks gi and queues it where Go's ready() would: runnext of the waker's proc. */
static void e_unblock(tg_sim *s, tg_m *m, int32_t gi, int cat) {
    unblock_raw(s, m, gi, cat);
    if (m->p >= 0)
        runq_put(s, &s->ps[m->p], gi, true);
    else
        grq_put(s, gi);
    wakep(s, m->clock);
}

static void e_go_start(tg_sim *s, tg_m *m, int32_t gi) {
    tg_g *g = GP(gi);
    if (g->status != GS_RUNNABLE || m->g >= 0 || m->p < 0)
        tg_die("internal: starting goroutine %llu in state %u", (unsigned long long)g->goid,
               g->status);
    uint64_t t = evt(s, m, umax(m->clock + small_dt(s), g->last_t + 1));
    uint64_t gen = tg_gen_of(s, t);
    t = go_status(s, m, g, t, gen);
    g->seq++;
    tg_ev(s, m, t, TDX_EV_GO_START, 2, g->goid, g->seq, 0, 0);
    g->status = GS_RUNNING;
    g->m = (int32_t)m->idx;
    g->last_t = t;
    m->g = gi;
    m->ctx_gen = gen; /* the goroutine's status was just written */
    m->clock = t;
    m->run_t = t;
}

/* ---- ends of a goroutine's time slice ---- */

static void slice_done(tg_sim *s, tg_m *m, uint64_t t) {
    s->busy += t - m->run_t;
    m->g = -1;
    m->state = MS_SCHED;
    m->clock = t + tg_range(&s->rng, 2, 40);
}

static void g_block(tg_sim *s, tg_m *m, uint32_t reason, int cat, int wake, uint64_t wake_t) {
    int32_t gi = m->g;
    tg_g *g = GP(gi);
    uint64_t t = ue(s, m, small_dt(s));
    uint32_t ki = tg_pick(s, cat, g->path, g->variant);
    tg_ev(s, m, t, TDX_EV_GO_BLOCK, 2, str(s, t, reason), tg_vstk(s, tg_gen_of(s, t), ki), 0, 0);
    g->status = GS_WAITING;
    g->bstk = ki + 1;
    g->last_t = t;
    g->m = -1;
    g->wake = (uint8_t)wake;
    switch (wake) {
    case W_TIMER:
        if (wake_t <= t) wake_t = t + 1;
        tw_push(&s->timers, wake_t, gi);
        poke_netpoll(s, wake_t);
        break;
    case W_NET:
        if (wake_t <= t) wake_t = t + 1;
        tw_push(&s->netready, wake_t, gi);
        poke_netpoll(s, wake_t);
        break;
    case W_SIGNAL:
        g->sigcat = (uint8_t)cat;
        if (s->nsignal == s->capsignal) {
            s->capsignal = s->capsignal ? s->capsignal * 2 : 256;
            s->signal_pool = tg_xrealloc(s->signal_pool, s->capsignal * sizeof *s->signal_pool);
        }
        s->signal_pool[s->nsignal++] = gi;
        break;
    default:
        break;
    }
    slice_done(s, m, t);
}

static void g_stop(tg_sim *s, tg_m *m, uint32_t reason, int cat) {
    int32_t gi = m->g;
    tg_g *g = GP(gi);
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_GO_STOP, 2, str(s, t, reason), stk(s, t, cat, g), 0, 0);
    g->status = GS_RUNNABLE;
    g->last_t = t;
    g->m = -1;
    /* Preempted and yielding goroutines go to the global queue. */
    grq_put(s, gi);
    slice_done(s, m, t);
    wakep(s, t);
}

static void g_destroy(tg_sim *s, tg_m *m) {
    int32_t gi = m->g;
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_GO_DESTROY, 0, 0, 0, 0, 0);
    GP(gi)->last_t = t;
    g_free(s, gi);
    slice_done(s, m, t);
}

/* A syscall that blocks: the thread keeps the goroutine; sysmon or the thread itself may take
 * the proc away (mode 1: entersyscallblock hands it off at once; mode 2: self-steal). */
static void g_syscall_block(tg_sim *s, tg_m *m, int cat, uint64_t dur, int mode) {
    tg_g *g = GP(m->g);
    int32_t pi = m->p;
    tg_p *p = &s->ps[pi];
    uint64_t t = ue(s, m, small_dt(s));
    p->seq++;
    s->blocking_syscalls++;
    tg_ev(s, m, t, TDX_EV_GO_SYSCALL_BEGIN, 2, p->seq, stk(s, t, cat, g), 0, 0);
    p->status = PS_SYSCALL;
    p->syscall_t = t;
    p->last_t = t;
    g->status = GS_SYSCALL;
    g->last_t = t;
    if (mode == 1) {
        t = ue(s, m, small_dt(s));
        tg_ev(s, m, t, TDX_EV_PROC_STOP, 0, 0, 0, 0, 0);
        p->status = PS_IDLE;
        s->nfree_p++;
        p->m = -1;
        p->last_t = t;
        m->p = -1;
        m->steal_t = t;
        handoff(s, pi, t);
    } else if (mode == 2) {
        m->clock += small_dt(s);
        e_proc_steal(s, m, pi);
        handoff(s, pi, m->clock);
    }
    m->state = MS_SYSCALL;
    s->busy += m->clock - m->run_t;
    m->clock += dur;
}

/* ---- work inside a time slice ---- */

static void cpu_account(tg_sim *s, tg_m *m, uint64_t dur) {
    /* SIGPROF every 10 ms of CPU time per thread, as setitimer profiling delivers it. */
    m->cpu += dur;
    const uint64_t period = MSEC(10);
    while (m->cpu >= period) {
        m->cpu -= period;
        uint64_t t = m->clock > m->cpu ? m->clock - m->cpu : m->clock;
        if (t < s->gen_start) t = s->gen_start;
        const tg_g *g = m->g >= 0 ? GP(m->g) : NULL;
        uint32_t ki = tg_pick(s, SK_CPU, g ? g->path : PATH_RUNTIME, g ? g->variant : 0);
        tg_cpu_sample(s, t, m->tid, m->p >= 0 ? (uint64_t)m->p : TG_NONE, g ? g->goid : 0, ki);
    }
}

static void gc_start(tg_sim *s, tg_m *m);

static void heap_alloc(tg_sim *s, tg_m *m) {
    uint64_t t = ue(s, m, 1);
    if (s->heap_drop && t >= s->heap_drop_t) {
        s->heap_alloc -= s->heap_drop;
        s->heap_drop = 0;
    }
    s->heap_alloc += (lognorm(s, 400) + 7) & ~7ull; /* Go's heap figures are multiples of 8 */
    tg_ev(s, m, t, TDX_EV_HEAP_ALLOC, 1, s->heap_alloc, 0, 0, 0);
    if (!s->gc_marking && !s->heap_drop && s->heap_alloc >= s->gc_trigger && t >= s->gc_sweep_end &&
        m->g >= 0 && GP(m->g)->role < R_GCWORKER)
        gc_start(s, m);
}

static void sweep_span(tg_sim *s, tg_m *m, const tg_g *g) {
    tg_p *p = &s->ps[m->p];
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_GC_SWEEP_BEGIN, 1, stk(s, t, SK_SWEEP, g), 0, 0, 0);
    p->in_sweep = 1;
    t = ue(s, m, tg_range(&s->rng, US(0.5), US(12)));
    uint64_t swept = 8192ull << tg_below(&s->rng, 4);
    tg_ev(s, m, t, TDX_EV_GC_SWEEP_END, 2, swept, swept * tg_below(&s->rng, 3) / 4, 0, 0);
    p->in_sweep = 0;
}

static void mark_assist(tg_sim *s, tg_m *m, tg_g *g) {
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_GC_MARK_ASSIST_BEGIN, 1, stk(s, t, SK_ASSIST, g), 0, 0, 0);
    g->in_assist = 1;
    t = ue(s, m, tg_range(&s->rng, US(3), US(80)));
    tg_ev(s, m, t, TDX_EV_GC_MARK_ASSIST_END, 0, 0, 0, 0, 0);
    g->in_assist = 0;
}

static void wake_signal(tg_sim *s, tg_m *m);

/* CPU work for dur ticks: allocations (HeapAlloc), proportional sweeping after a GC, mark
 * assists during one, and the odd unlock that wakes a waiter. */
static void compute(tg_sim *s, tg_m *m, uint64_t dur) {
    uint64_t end = m->clock + dur;
    tg_g *g = GP(m->g);
    for (;;) {
        uint64_t x;
        /* Runs of plain allocations are the bulk of a trace: write them in a tight loop, with
         * the checks of the general path done once per run (same generation, statuses
         * written, no GC decision due, room in the batch). */
        tg_buf *b = &m->b[s->gen & 1];
        if (m->ctx_gen == s->gen && b->gen == s->gen && m->clock >= m->last_t &&
            m->clock + TG_GEN_MARGIN + 2 < s->gen_next) {
            /* Stop before the generation ends, before a pending heap drop applies, and at the
             * trigger only where a GC could start (not while one runs or the heap sweeps). */
            uint64_t lim = s->gen_next - TG_GEN_MARGIN - 2, trig = s->gc_trigger;
            if (s->heap_drop && s->heap_drop_t < lim) lim = s->heap_drop_t;
            if (s->gc_marking || g->role >= R_GCWORKER) {
                trig = UINT64_MAX;
            } else if (m->clock < s->gc_sweep_end) {
                trig = UINT64_MAX;
                if (s->gc_sweep_end < lim) lim = s->gc_sweep_end;
            }
            /* Which other events this run can meet: the GC phase windows are fixed in time, so
             * the run also stops at the next window edge. */
            bool sweep = sweeping_at(s, m->clock), mark = marking_at(s, m->clock);
            const uint64_t edges[4] = {s->gc_sweep_start, s->gc_sweep_end, s->gc_mark_start,
                                       s->gc_mark_end};
            for (int e = 0; e < 4; e++)
                if (edges[e] > m->clock && edges[e] < lim) lim = edges[e];
            uint32_t lo = sweep ? TG_P(0.80) : mark ? TG_P(0.88) : TG_P(0.94);
            uint32_t hi = s->nsignal ? TG_P(0.97) : mark ? TG_P(0.94) : sweep ? TG_P(0.88) : 0;
            uint64_t clock = m->clock, last = b->last_t, heap = s->heap_alloc, n = 0;
            uint8_t *p = b->data + b->len, *plim = b->data + TG_FLUSH_AT;
            for (;;) {
                x = tg_rand(&s->rng); /* gap: bits 0-9, choice: 16-31, size: 32-41 */
                uint64_t gap = ((US(1.2) * exp_tab[x & 1023]) >> 16) + 1;
                if (clock + gap >= end) {
                    x = 0;
                    break;
                }
                uint32_t r = (uint32_t)(x >> 16) & 0xffff;
                if ((r >= lo && r < hi &&
                     (r < TG_P(0.88)   ? sweep
                      : r < TG_P(0.94) ? mark
                                       : 1)) ||
                    clock + gap >= lim || p >= plim || heap >= trig)
                    break;
                uint64_t t = clock + gap + 1;
                heap += (((400 * (uint64_t)ln_tab[(x >> 32) & 1023]) >> 16) + 8) & ~7ull;
                *p++ = TDX_EV_HEAP_ALLOC;
                p = tg_uv(p, t - last);
                p = tg_uv(p, heap);
                last = clock = t;
                n++;
            }
            if (n) {
                b->len = (uint32_t)(p - b->data);
                b->last_t = m->last_t = last;
                s->heap_alloc = heap;
                s->events += n;
            }
            m->clock = clock;
            if (!x) break; /* reached the end of the work */
        } else {
            x = tg_rand(&s->rng);
        }
        /* The general path, for this draw. */
        uint64_t gap = ((US(1.2) * exp_tab[x & 1023]) >> 16) + 1;
        if (m->clock + gap >= end) break;
        m->clock += gap;
        uint32_t r = (uint32_t)(x >> 16) & 0xffff;
        /* NOLINTNEXTLINE(bugprone-branch-clone): most draws skip the phase tests */
        if (r < TG_P(0.80)) {
            heap_alloc(s, m);
        } else if (r < TG_P(0.88) && sweeping_at(s, m->clock)) {
            sweep_span(s, m, g);
        } else if (r < TG_P(0.94) && marking_at(s, m->clock)) {
            mark_assist(s, m, g);
        } else if (r < TG_P(0.97) && s->nsignal) {
            wake_signal(s, m);
        } else {
            heap_alloc(s, m);
        }
    }
    if (m->clock < end) m->clock = end;
    cpu_account(s, m, dur);
}

static void fast_syscall(tg_sim *s, tg_m *m, int cat) {
    tg_g *g = GP(m->g);
    tg_p *p = &s->ps[m->p];
    uint64_t t = ue(s, m, small_dt(s));
    p->seq++;
    tg_ev(s, m, t, TDX_EV_GO_SYSCALL_BEGIN, 2, p->seq, stk(s, t, cat, g), 0, 0);
    /* In the syscall: a generation boundary here makes the End announce Syscall statuses. */
    p->status = PS_SYSCALL;
    g->status = GS_SYSCALL;
    t = ue(s, m, tg_range(&s->rng, US(0.6), US(18)));
    tg_ev(s, m, t, TDX_EV_GO_SYSCALL_END, 0, 0, 0, 0, 0);
    p->status = PS_RUNNING;
    g->status = GS_RUNNING;
}

/* Wakes the longest waiter on a mutex, cond or select (FIFO, like sync.Mutex starvation mode). */
static void wake_signal(tg_sim *s, tg_m *m) {
    int32_t w = s->signal_pool[0];
    memmove(s->signal_pool, s->signal_pool + 1, (s->nsignal - 1) * sizeof *s->signal_pool);
    s->nsignal--;
    /* The waker's stack matches what the waiter blocked on. */
    uint8_t c = GP(w)->sigcat;
    int cat = c == SK_MUTEX ? SK_UNBLOCK_MUTEX : c == SK_COND ? SK_UNBLOCK_COND : SK_UNBLOCK_CHAN;
    e_unblock(s, m, w, cat);
}

static void region_begin(tg_sim *s, tg_m *m, uint8_t name) {
    tg_g *g = GP(m->g);
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_USER_REGION_BEGIN, 3, g->task, str(s, t, name), stk(s, t, SK_REGION, g),
          0);
    if (g->nregions < TG_MAXREGIONS) {
        g->rg_task[g->nregions] = g->task;
        g->rg_name[g->nregions] = name;
    }
    g->nregions++;
}

static void region_end(tg_sim *s, tg_m *m) {
    tg_g *g = GP(m->g);
    if (!g->nregions) return;
    g->nregions--;
    uint8_t k = g->nregions < TG_MAXREGIONS ? g->nregions : TG_MAXREGIONS - 1;
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_USER_REGION_END, 3, g->rg_task[k], str(s, t, g->rg_name[k]),
          stk(s, t, SK_REGIONEND, g), 0);
}

static void task_begin(tg_sim *s, tg_m *m, uint64_t parent, uint32_t name) {
    tg_g *g = GP(m->g);
    uint64_t t = ue(s, m, small_dt(s));
    g->task = s->next_task++;
    tg_ev(s, m, t, TDX_EV_USER_TASK_BEGIN, 4, g->task, parent, str(s, t, name),
          stk(s, t, SK_TASK, g));
}

static void task_end(tg_sim *s, tg_m *m) {
    tg_g *g = GP(m->g);
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_USER_TASK_END, 2, g->task, stk(s, t, SK_TASKEND, g), 0, 0);
    g->task = 0;
}

/* Log messages are built piecewise (printf costs more than the whole event). */
typedef struct msgbuf {
    char b[160];
    int n;
} msgbuf;

static void mb_s(msgbuf *mb, const char *txt) {
    while (*txt && mb->n < (int)sizeof mb->b) mb->b[mb->n++] = *txt++;
}

static void mb_u(msgbuf *mb, uint32_t v) {
    char t[12];
    int k = 0;
    do t[k++] = (char)('0' + v % 10);
    while (v /= 10);
    while (k && mb->n < (int)sizeof mb->b) mb->b[mb->n++] = t[--k];
}

/* UserLog: the runtime writes each message as a fresh string. */
static void user_log(tg_sim *s, tg_m *m, uint32_t key, const msgbuf *mb) {
    tg_g *g = GP(m->g);
    uint64_t t = ue(s, m, small_dt(s));
    uint64_t gen = tg_gen_of(s, t);
    uint32_t v = tg_str_fresh(s, gen, mb->b, (size_t)mb->n);
    tg_ev(s, m, t, TDX_EV_USER_LOG, 4, g->task, str(s, t, key), v, stk(s, t, SK_LOG, g));
}

static int32_t go_create(tg_sim *s, tg_m *m, uint8_t role, uint8_t path) {
    int32_t gi = g_new(s, role, path); /* may move s->gs */
    tg_g *ng = GP(gi), *g = GP(m->g);
    uint64_t t = ue(s, m, small_dt(s));
    uint64_t gen = tg_gen_of(s, t);
    /* stacks are numbered as first used: one per statement, in the order gcc took them */
    uint32_t creator = stk(s, t, SK_CREATE, g);
    tg_ev(s, m, t, TDX_EV_GO_CREATE, 3, ng->goid, tg_stk(s, gen, s->code.newg_stack[path]), creator,
          0);
    ng->status = GS_RUNNABLE;
    ng->seen_gen = gen;
    ng->seq = 0;
    ng->last_t = t;
    runq_put(s, &s->ps[m->p], gi, true);
    wakep(s, t);
    return gi;
}

/* ---- GC ---- */

static void gc_start(tg_sim *s, tg_m *m) {
    tg_g *g = GP(m->g);
    uint64_t t = evt(s, m, umax(m->clock + small_dt(s), s->gc_last_t + 1));
    m->clock = t;
    s->gc_seq++;
    s->gcs++;
    tg_ev(s, m, t, TDX_EV_GC_BEGIN, 2, s->gc_seq, stk(s, t, SK_GCSTART, g), 0, 0);
    s->gc_gen = tg_gen_of(s, t);
    s->gc_last_t = t;
    t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_STW_BEGIN, 2, str(s, t, S_STW_SWEEPTERM), stk(s, t, SK_STW_GC, g), 0, 0);
    /* Stopping the world takes the procs that sit in syscalls. */
    for (int i = 0; i < s->procs; i++)
        if (s->ps[i].status == PS_SYSCALL && s->ps[i].m != (int32_t)m->idx) e_proc_steal(s, m, i);
    m->clock += tg_range(&s->rng, US(8), US(45));
    t = ue(s, m, 1);
    tg_ev(s, m, t, TDX_EV_STW_END, 0, 0, 0, 0, 0);
    uint64_t maxmark = s->gen_len / 3 < MSEC(150) ? s->gen_len / 3 : MSEC(150);
    s->gc_marking = true;
    s->gc_term_claimed = false;
    s->gc_mark_start = t;
    /* The mark worker's slice spans the phase: it must stay well under a generation. */
    uint64_t minmark = maxmark / 2 < MSEC(20) ? maxmark / 2 : MSEC(20);
    s->gc_mark_end = t + tg_range(&s->rng, minmark, maxmark);
    s->gc_dedicated_want = s->procs >= 4 ? (uint32_t)s->procs / 4 : 1;
    for (uint32_t i = 0; i < s->gc_dedicated_want; i++) {
        int32_t pi = idle_p(s);
        if (pi < 0) break;
        startm(s, pi, t, false);
    }
}

/* GCActive: the GC is still running in a new generation (the runtime writes it when it
 * advances; here the terminating mark worker does, with the same sequence numbering). */
static void gc_active(tg_sim *s, tg_m *m) {
    uint64_t t = evt(s, m, umax(m->clock + 1, s->gc_last_t + 1));
    m->clock = t;
    s->gc_seq++;
    tg_ev(s, m, t, TDX_EV_GC_ACTIVE, 1, s->gc_seq, 0, 0, 0);
    s->gc_gen = tg_gen_of(s, t);
    s->gc_last_t = t;
}

static void gc_terminate(tg_sim *s, tg_m *m) {
    tg_g *g = GP(m->g);
    uint64_t t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_STW_BEGIN, 2, str(s, t, S_STW_MARKTERM), stk(s, t, SK_STW_TERM, g), 0, 0);
    t = evt(s, m, umax(m->clock + tg_range(&s->rng, US(5), US(30)), s->gc_last_t + 1));
    m->clock = t;
    s->gc_seq++;
    tg_ev(s, m, t, TDX_EV_GC_END, 1, s->gc_seq, 0, 0, 0);
    s->gc_gen = tg_gen_of(s, t);
    s->gc_last_t = t;
    t = ue(s, m, tg_range(&s->rng, US(10), US(60)));
    tg_ev(s, m, t, TDX_EV_STW_END, 0, 0, 0, 0, 0);
    s->heap_live = s->heap_alloc * tg_range(&s->rng, 45, 62) / 100 & ~7ull;
    s->heap_goal = s->heap_live * 2;
    s->gc_trigger = s->heap_goal - s->heap_goal / 10;
    s->heap_drop = s->heap_alloc - s->heap_live;
    s->heap_drop_t = t;
    t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_HEAP_GOAL, 1, s->heap_goal, 0, 0, 0);
    t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_HEAP_ALLOC, 1, s->heap_live, 0, 0, 0);
    s->gc_marking = false;
    s->gc_sweep_start = t;
    s->gc_sweep_end = t + tg_range(&s->rng, MSEC(10), MSEC(60));
    tg_g *sw = GP(s->sweeper_g);
    if (sw->status == GS_WAITING && sw->wake == W_GC) e_unblock(s, m, s->sweeper_g, -1);
}

static void gc_cpu(tg_sim *s, tg_m *m, uint64_t dur) {
    m->clock += dur;
    cpu_account(s, m, dur);
}

static void run_gcworker(tg_sim *s, tg_m *m, bool dedicated) {
    uint64_t t = ue(s, m, small_dt(s));
    uint32_t lbl = !dedicated ? S_LBL_IDLE : s->procs >= 4 ? S_LBL_DEDICATED : S_LBL_FRACTIONAL;
    tg_ev(s, m, t, TDX_EV_GO_LABEL, 1, str(s, t, lbl), 0, 0, 0);
    if (!dedicated) {
        gc_cpu(s, m, tg_range(&s->rng, US(20), US(300)));
        g_block(s, m, S_SYSWAIT, SK_PARK, W_GC, 0);
        return;
    }
    bool term = s->gc_marking && !s->gc_term_claimed;
    if (term) {
        /* The first dedicated worker finishes the cycle (mark termination). */
        s->gc_term_claimed = true;
        if (s->gc_mark_end < m->clock + US(50)) s->gc_mark_end = m->clock + US(50);
    }
    uint64_t end = s->gc_mark_end > m->clock ? s->gc_mark_end : m->clock + US(20);
    s->ps[m->p].ded_until = end;
    while (m->clock < end) {
        if (term && tg_gen_of(s, m->clock) > s->gc_gen) gc_active(s, m);
        uint64_t c = end - m->clock < MSEC(2) ? end - m->clock : MSEC(2);
        gc_cpu(s, m, c);
    }
    if (term) {
        if (tg_gen_of(s, m->clock) > s->gc_gen) gc_active(s, m);
        gc_terminate(s, m);
    }
    g_block(s, m, S_SYSWAIT, SK_PARK, W_GC, 0);
}

static void run_sweeper(tg_sim *s, tg_m *m) {
    tg_g *g = GP(m->g);
    uint32_t n = (uint32_t)tg_range(&s->rng, 2, 10);
    uint64_t t0 = m->clock;
    for (uint32_t i = 0; i < n; i++) sweep_span(s, m, g);
    cpu_account(s, m, m->clock - t0);
    if (sweeping_at(s, m->clock))
        g_stop(s, m, S_GOSCHED, SK_GOSCHED);
    else
        g_block(s, m, S_SWEEPWAIT, SK_PARK, W_GC, 0);
}

/* ---- the service's goroutines ---- */

enum { HP_NEW, HP_REQ, HP_STEP, HP_BACKEND_DONE, HP_RESP };
enum { IT_NONE, IT_DB, IT_REDIS, IT_OFFLOAD, IT_FANOUT, IT_MUTEX, IT_SLEEP, IT_COND };

/* What a request does between reading it and answering, 3 bits per step. */
static uint32_t make_plan(tg_sim *s) {
    uint32_t items[10];
    int n = 0;
    tg_rng *r = &s->rng;
    if (tg_chance(r, TG_P(0.35))) items[n++] = IT_REDIS;
    if (tg_chance(r, TG_P(0.10))) items[n++] = IT_MUTEX;
    if (tg_chance(r, TG_P(0.55))) items[n++] = IT_DB;
    if (tg_chance(r, TG_P(0.25))) items[n++] = IT_DB;
    if (tg_chance(r, TG_P(0.30))) items[n++] = IT_OFFLOAD;
    if (tg_chance(r, TG_P(0.12))) items[n++] = IT_FANOUT;
    if (tg_chance(r, TG_P(0.07))) items[n++] = IT_COND;
    if (tg_chance(r, TG_P(0.02))) items[n++] = IT_SLEEP;
    uint32_t plan = 0;
    for (int i = n - 1; i >= 0; i--) plan = plan << 3 | items[i];
    return plan;
}

static const char *const methods[] = {"GET", "GET", "GET", "POST", "PUT", "DELETE"};
static const char *const resources[] = {"orders", "items",     "users",    "carts",  "prices",
                                        "stock",  "shipments", "invoices", "search", "sessions"};

static void disk_log(tg_sim *s, tg_m *m) {
    if (!s->ndisk) return;
    int32_t d = s->disk_g[tg_below(&s->rng, s->ndisk)];
    tg_g *dg = GP(d);
    if (dg->status == GS_WAITING && dg->wake == W_PEER)
        e_unblock(s, m, d, SK_UNBLOCK_CHAN);
    else
        dg->pending++;
}

static void run_handler(tg_sim *s, tg_m *m) {
    for (;;) {
        tg_g *g = GP(m->g);
        switch (g->phase) {
        case HP_NEW:
            compute(s, m, lognorm(s, US(8)));
            fast_syscall(s, m, SK_SYS_MISC);
            GP(m->g)->phase = HP_REQ;
            g_block(s, m, S_NETWORK, SK_NET_READ, W_NET, m->clock + lognorm(s, US(300)));
            return;
        case HP_REQ: {
            fast_syscall(s, m, SK_SYS_READ);
            task_begin(s, m, 0, tg_chance(&s->rng, TG_P(0.8)) ? S_TASK_HTTP : S_TASK_GRPC);
            region_begin(s, m, S_RG_HANDLER);
            if (tg_chance(&s->rng, TG_P(0.7))) {
                msgbuf mb = {.n = 0};
                mb_s(&mb, methods[tg_below(&s->rng, 6)]);
                mb_s(&mb, " /api/v");
                mb_u(&mb, 1 + tg_below(&s->rng, 2));
                mb_s(&mb, "/");
                mb_s(&mb, resources[tg_below(&s->rng, 10)]);
                mb_s(&mb, "/");
                mb_u(&mb, tg_below(&s->rng, 1000000));
                user_log(s, m, S_LOG_ROUTE, &mb);
            }
            for (uint32_t k = 0; k < s->logs; k++) {
                /* A chatty service: a request id in every line makes each message new. */
                msgbuf mb = {.n = 0};
                mb_s(&mb, "req=");
                mb_u(&mb, tg_below(&s->rng, 1000000000));
                mb_s(&mb, "-");
                mb_u(&mb, (uint32_t)++s->log_seq);
                mb_s(&mb, " user=");
                mb_u(&mb, tg_below(&s->rng, 100000));
                mb_s(&mb, " step=");
                mb_u(&mb, k);
                user_log(s, m, S_LOG_ROUTE, &mb);
            }
            compute(s, m, lognorm(s, US(7)));
            if (tg_chance(&s->rng, TG_P(0.4))) {
                region_begin(s, m, S_RG_AUTH);
                compute(s, m, lognorm(s, US(3)));
                region_end(s, m);
            }
            g = GP(m->g);
            g->plan = make_plan(s);
            g->phase = HP_STEP;
            continue;
        }
        case HP_STEP: {
            if (tg_chance(&s->rng, TG_P(0.004))) {
                g_stop(s, m, S_PREEMPTED, SK_PREEMPT);
                return;
            }
            if (marking_at(s, m->clock) && tg_chance(&s->rng, TG_P(0.02))) {
                /* The assist found no work: park until the GC ends (the range stays open). */
                uint64_t t = ue(s, m, small_dt(s));
                tg_ev(s, m, t, TDX_EV_GC_MARK_ASSIST_BEGIN, 1, stk(s, t, SK_ASSIST, g), 0, 0, 0);
                g->in_assist = 1;
                g_block(s, m, S_ASSISTWAIT, SK_ASSIST_WAIT, W_TIMER,
                        umax(s->gc_mark_end, m->clock) + tg_range(&s->rng, US(5), US(60)));
                return;
            }
            uint32_t it = g->plan & 7;
            g->plan >>= 3;
            switch (it) {
            case IT_DB:
            case IT_REDIS:
                region_begin(s, m, it == IT_DB ? S_RG_DBQUERY : S_RG_REDIS);
                fast_syscall(s, m, SK_SYS_WRITE);
                GP(m->g)->phase = HP_BACKEND_DONE;
                /* one draw per statement: the order of a call's arguments is the compiler's
                 * (this is the order gcc took them in, so traces stay) */
                uint64_t until = m->clock + lognorm(s, it == IT_DB ? US(700) : US(120));
                g_block(s, m, tg_chance(&s->rng, TG_P(0.8)) ? S_NETWORK : S_SELECT, SK_NET_BACKEND,
                        W_NET, until);
                return;
            case IT_OFFLOAD:
                if (s->nidle_workers) {
                    int32_t w = s->idle_workers[--s->nidle_workers];
                    GP(w)->peer = m->g;
                    e_unblock(s, m, w, SK_UNBLOCK_CHAN);
                    g_block(s, m, S_CHANRECV, SK_CHANRECV, W_PEER, 0);
                    return;
                }
                compute(s, m, lognorm(s, US(20)));
                continue;
            case IT_FANOUT: {
                int k = (int)tg_range(&s->rng, 2, 6);
                for (int i = 0; i < k; i++) {
                    int32_t c = go_create(s, m, R_CHILD, PATH_CHILD);
                    GP(c)->peer = m->g;
                }
                GP(m->g)->pending = k;
                g_block(s, m, S_SYNC, SK_WAITGROUP, W_PEER, 0);
                return;
            }
            case IT_MUTEX:
                g_block(s, m, S_SYNC, SK_MUTEX, W_SIGNAL, 0);
                return;
            case IT_SLEEP:
                g_block(s, m, S_SLEEP, SK_SLEEP, W_TIMER, m->clock + lognorm(s, US(400)));
                return;
            case IT_COND:
                if (tg_chance(&s->rng, TG_P(0.5)))
                    g_block(s, m, S_SELECT, SK_SELECT, W_SIGNAL, 0);
                else
                    g_block(s, m, S_COND, SK_COND, W_SIGNAL, 0);
                return;
            default:
                g->phase = HP_RESP;
                continue;
            }
        }
        case HP_BACKEND_DONE:
            fast_syscall(s, m, SK_SYS_READ);
            region_end(s, m);
            if (tg_chance(&s->rng, TG_P(0.25))) {
                msgbuf mb = {.n = 0};
                mb_s(&mb, "rows=");
                mb_u(&mb, tg_below(&s->rng, 200));
                mb_s(&mb, " took=");
                mb_u(&mb, 50 + tg_below(&s->rng, 5000));
                mb_s(&mb, "us");
                user_log(s, m, S_LOG_DB, &mb);
            }
            compute(s, m, lognorm(s, US(5)));
            GP(m->g)->phase = HP_STEP;
            continue;
        case HP_RESP:
            region_begin(s, m, S_RG_MARSHAL);
            compute(s, m, lognorm(s, US(9)));
            while (GP(m->g)->nregions) region_end(s, m);
            if (tg_chance(&s->rng, TG_P(0.15))) disk_log(s, m);
            fast_syscall(s, m, SK_SYS_WRITE);
            task_end(s, m);
            g = GP(m->g);
            if (g->reqs_left) g->reqs_left--;
            if (!g->reqs_left) {
                fast_syscall(s, m, SK_SYS_MISC);
                if (s->conns) s->conns--;
                g_destroy(s, m);
                return;
            }
            g->phase = HP_REQ;
            g_block(s, m, S_NETWORK, SK_NET_READ, W_NET, m->clock + expo(s, s->think_mean));
            return;
        default:
            tg_die("internal: handler phase %u", g->phase);
        }
    }
}

enum { WP_RUN, WP_CONT };

static void run_worker(tg_sim *s, tg_m *m) {
    tg_g *g = GP(m->g);
    if (g->phase == WP_RUN) {
        g->task = g->peer >= 0 ? GP(g->peer)->task : 0;
        region_begin(s, m, S_RG_WORKER);
        g = GP(m->g);
        g->work = tg_chance(&s->rng, TG_P(0.002)) ? tg_range(&s->rng, MSEC(11), MSEC(25))
                                                  : lognorm(s, US(30));
        g->phase = WP_CONT;
    }
    uint64_t slice = g->work < MSEC(10) ? g->work : MSEC(10);
    compute(s, m, slice);
    g = GP(m->g);
    g->work -= slice;
    if (g->work) {
        g_stop(s, m, S_PREEMPTED, SK_PREEMPT);
        return;
    }
    region_end(s, m);
    g = GP(m->g);
    if (g->peer >= 0) {
        int32_t p = g->peer;
        g->peer = -1;
        e_unblock(s, m, p, SK_UNBLOCK_CHAN);
    }
    g = GP(m->g);
    g->task = 0;
    g->phase = WP_RUN;
    s->idle_workers[s->nidle_workers++] = m->g;
    g_block(s, m, S_CHANRECV, SK_CHANRECV, W_PEER, 0);
}

enum { CP_RUN, CP_AFTER };

static void run_child(tg_sim *s, tg_m *m) {
    tg_g *g = GP(m->g);
    if (g->phase == CP_RUN) {
        uint64_t pt = g->peer >= 0 ? GP(g->peer)->task : 0;
        if (pt && tg_chance(&s->rng, TG_P(0.5))) task_begin(s, m, pt, S_TASK_FANOUT);
        region_begin(s, m, S_RG_PART);
        compute(s, m, lognorm(s, US(7)));
        if (tg_chance(&s->rng, TG_P(0.6))) {
            fast_syscall(s, m, SK_SYS_WRITE);
            GP(m->g)->phase = CP_AFTER;
            g_block(s, m, S_NETWORK, SK_NET_BACKEND, W_NET, m->clock + lognorm(s, US(450)));
            return;
        }
    } else {
        fast_syscall(s, m, SK_SYS_READ);
    }
    compute(s, m, lognorm(s, US(3)));
    region_end(s, m);
    if (GP(m->g)->task) task_end(s, m);
    g = GP(m->g);
    if (g->peer >= 0) {
        tg_g *par = GP(g->peer);
        if (--par->pending == 0) e_unblock(s, m, g->peer, SK_UNBLOCK_WG);
    }
    g_destroy(s, m);
}

static void run_ticker(tg_sim *s, tg_m *m) {
    compute(s, m, lognorm(s, US(5)));
    if (tg_chance(&s->rng, TG_P(0.15))) {
        msgbuf mb = {.n = 0};
        mb_s(&mb, "flushed ");
        mb_u(&mb, 100 + tg_below(&s->rng, 5000));
        mb_s(&mb, " series in ");
        mb_u(&mb, tg_below(&s->rng, 900));
        mb_s(&mb, "us");
        user_log(s, m, S_LOG_METRICS, &mb);
    }
    if (s->nsignal && tg_chance(&s->rng, TG_P(0.1))) wake_signal(s, m);
    if (tg_chance(&s->rng, TG_P(0.04))) go_create(s, m, R_CHILD, PATH_CHILD);
    tg_g *g = GP(m->g);
    uint64_t next =
        m->clock + g->period - g->period / 8 + tg_below(&s->rng, (uint32_t)(g->period / 4 + 1));
    if (g->variant & 1)
        g_block(s, m, S_SELECT, SK_SELECT, W_TIMER, next);
    else
        g_block(s, m, S_SLEEP, SK_SLEEP, W_TIMER, next);
}

enum { DP_RUN, DP_WROTE, DP_SYNCED };

static void run_disk(tg_sim *s, tg_m *m) {
    for (;;) {
        tg_g *g = GP(m->g);
        switch (g->phase) {
        case DP_RUN:
            compute(s, m, lognorm(s, US(10)));
            GP(m->g)->phase = DP_WROTE;
            g_syscall_block(s, m, SK_SYS_PWRITE, lognorm(s, US(90)), 0);
            return;
        case DP_WROTE:
            if (tg_chance(&s->rng, TG_P(0.12))) {
                g->phase = DP_SYNCED;
                uint32_t how =
                    tg_chance(&s->rng, TG_P(0.5)) ? 1 : 2; /* (drawn first, as gcc did) */
                g_syscall_block(s, m, SK_SYS_FSYNC, lognorm(s, MSEC(1.5)), how);
                return;
            }
            g->phase = DP_SYNCED;
            continue;
        default:
            g->phase = DP_RUN;
            if (g->pending) {
                g->pending--;
                continue;
            }
            g_block(s, m, S_CHANRECV, SK_CHANRECV, W_PEER, 0);
            return;
        }
    }
}

static void run_accept(tg_sim *s, tg_m *m) {
    /* Accept what queued up (the listen backlog), a few per wake-up like a real accept loop
     * that goes back to the poller when accept returns EAGAIN. */
    uint32_t backlog = s->conns < s->target_conns ? s->target_conns - s->conns : 0;
    uint32_t n = backlog > 8 ? 8 : backlog;
    if (!n && tg_chance(&s->rng, TG_P(0.3))) n = 1;
    for (uint32_t i = 0; i < n; i++) {
        fast_syscall(s, m, SK_SYS_ACCEPT);
        int32_t c = go_create(s, m, R_HANDLER, PATH_HANDLER);
        tg_g *cg = GP(c);
        cg->phase = HP_NEW;
        cg->reqs_left = 1 + (uint32_t)expo(s, 200);
        s->conns++;
    }
    fast_syscall(s, m, SK_SYS_ACCEPT); /* EAGAIN */
    g_block(s, m, S_NETWORK, SK_NET_ACCEPT, W_NET,
            m->clock + (backlog > 8 ? US(50) : expo(s, MSEC(2))));
}

static void run_scavenger(tg_sim *s, tg_m *m) {
    gc_cpu(s, m, lognorm(s, US(30)));
    g_block(s, m, S_SLEEP, SK_SLEEP, W_TIMER, m->clock + tg_range(&s->rng, MSEC(5), MSEC(60)));
}

static void run_g(tg_sim *s, tg_m *m, bool dedicated) {
    tg_g *g = GP(m->g);
    if (g->in_assist) {
        uint64_t t = ue(s, m, small_dt(s));
        tg_ev(s, m, t, TDX_EV_GC_MARK_ASSIST_END, 0, 0, 0, 0, 0);
        g->in_assist = 0;
    }
    switch (g->role) {
    case R_HANDLER:
        run_handler(s, m);
        break;
    case R_WORKER:
        run_worker(s, m);
        break;
    case R_CHILD:
        run_child(s, m);
        break;
    case R_TICKER:
        run_ticker(s, m);
        break;
    case R_DISK:
        run_disk(s, m);
        break;
    case R_ACCEPT:
        run_accept(s, m);
        break;
    case R_GCWORKER:
        run_gcworker(s, m, dedicated);
        break;
    case R_SWEEPER:
        run_sweeper(s, m);
        break;
    case R_SCAVENGER:
        run_scavenger(s, m);
        break;
    default:
        g_block(s, m, S_FOREVER, SK_PARK, W_NONE, 0);
        break;
    }
}

/* ---- scheduler steps ---- */

/* Go's findRunnable for thread m holding a proc: GC work, timers, local and global queues,
 * the netpoller, stealing from other procs, idle-time GC work. */
static int32_t find_runnable(tg_sim *s, tg_m *m, bool *dedicated) {
    tg_p *p = &s->ps[m->p];
    *dedicated = false;
    if (want_dedicated(s, p, m->clock)) {
        tg_g *w = GP(p->gcw);
        if (w->status == GS_WAITING && w->wake == W_GC) {
            unblock_raw(s, m, p->gcw, -1);
            *dedicated = true;
            return p->gcw;
        }
    }
    int fired = 0;
    while (fired < 8 && tw_top(&s->timers) <= m->clock) {
        int32_t gi = tw_pop(&s->timers);
        unblock_raw(s, m, gi, -1);
        runq_put(s, p, gi, false);
        fired++;
    }
    if (fired > 1) wakep(s, m->clock);
    int32_t gi = -1;
    if ((tg_rand(&s->rng) & 63) == 0) gi = grq_get(s); /* fairness, as every 61st schedule */
    if (gi < 0) gi = runq_get(p);
    if (gi < 0) {
        gi = grq_get(s);
        for (int i = 0; gi >= 0 && i < 4 && grq_len(s); i++) runq_put(s, p, grq_get(s), false);
    }
    if (gi >= 0) return gi;
    if (tw_top(&s->netready) <= m->clock) {
        int n = 0;
        while (n < 32 && tw_top(&s->netready) <= m->clock) {
            int32_t r = tw_pop(&s->netready);
            unblock_raw(s, m, r, -1);
            if (gi < 0)
                gi = r;
            else
                runq_put(s, p, r, false);
            n++;
        }
        s->last_netpoll = m->clock;
        if (n > 1) wakep(s, m->clock);
        return gi;
    }
    uint32_t start = tg_below(&s->rng, (uint32_t)s->procs);
    for (int k = 0; k < s->procs; k++) {
        tg_p *v = &s->ps[(start + (uint32_t)k) % (uint32_t)s->procs];
        if (v == p) continue;
        uint32_t n = v->rq_tail - v->rq_head;
        if (!n) {
            if (v->runnext >= 0 && v->status != PS_RUNNING) {
                gi = v->runnext;
                v->runnext = -1;
                return gi;
            }
            continue;
        }
        uint32_t take = (n + 1) / 2;
        gi = v->rq[v->rq_head++ % TG_RUNQ];
        for (uint32_t i = 1; i < take; i++) runq_put(s, p, v->rq[v->rq_head++ % TG_RUNQ], false);
        return gi;
    }
    if (marking_at(s, m->clock) && tg_chance(&s->rng, TG_P(0.5))) {
        tg_g *w = GP(p->gcw);
        if (w->status == GS_WAITING && w->wake == W_GC) {
            unblock_raw(s, m, p->gcw, -1);
            return p->gcw;
        }
    }
    return -1;
}

static void sched_step(tg_sim *s, tg_m *m) {
    bool ded = false;
    int32_t gi = find_runnable(s, m, &ded);
    if (gi < 0) {
        e_proc_stop(s, m);
        park(s, m);
        return;
    }
    if (m->spinning) {
        m->spinning = 0;
        s->nspinning--;
        if (any_runnable(s)) wakep(s, m->clock);
    }
    e_go_start(s, m, gi);
    run_g(s, m, ded);
}

static void wake_step(tg_sim *s, tg_m *m) {
    int32_t pi = m->wake_p;
    m->wake_p = -1;
    s->ps[pi].reserved = 0;
    s->nfree_p++;
    e_proc_start(s, m, pi);
    m->state = MS_SCHED;
    sched_step(s, m);
}

static void syscall_exit(tg_sim *s, tg_m *m) {
    int32_t gi = m->g;
    tg_g *g = GP(gi);
    if (m->p >= 0) { /* nobody took the proc: the fast path */
        tg_p *p = &s->ps[m->p];
        uint64_t t = ue(s, m, 0);
        tg_ev(s, m, t, TDX_EV_GO_SYSCALL_END, 0, 0, 0, 0, 0);
        p->status = PS_RUNNING;
        g->status = GS_RUNNING;
        m->state = MS_SCHED;
        m->run_t = t;
        run_g(s, m, false);
        return;
    }
    /* The proc was stolen or handed off: reacquire an idle one, or queue the goroutine. */
    m->clock = umax(m->clock, m->steal_t + 1);
    int32_t pi = idle_p(s);
    if (pi >= 0) {
        e_proc_start(s, m, pi);
        uint64_t t = ue(s, m, small_dt(s));
        tg_ev(s, m, t, TDX_EV_GO_SYSCALL_END_BLOCKED, 0, 0, 0, 0, 0);
        g->status = GS_RUNNABLE;
        g->last_t = t;
        g->m = -1;
        m->g = -1;
        e_go_start(s, m, gi);
        m->state = MS_SCHED;
        run_g(s, m, false);
        return;
    }
    uint64_t t = ue(s, m, 0);
    tg_ev(s, m, t, TDX_EV_GO_SYSCALL_END_BLOCKED, 0, 0, 0, 0, 0);
    g->status = GS_RUNNABLE;
    g->last_t = t;
    g->m = -1;
    m->g = -1;
    grq_put(s, gi);
    park(s, m);
}

static void netpoll_step(tg_sim *s, tg_m *m) {
    s->netpoll_m = -1;
    if (next_io(s) > m->clock) { /* woken early: block again */
        s->netpoll_m = (int32_t)m->idx;
        uint64_t w = next_io(s);
        m->clock = w > UINT64_MAX / 4 ? UINT64_MAX / 4 : w;
        return;
    }
    int32_t pi = idle_p(s);
    if (pi < 0) { /* every proc is busy: running threads will find the work */
        m->state = MS_PARKED;
        s->idle_m[s->nidle_m++] = m->idx;
        return;
    }
    e_proc_start(s, m, pi);
    m->state = MS_SCHED;
    sched_step(s, m);
}

/* sysmon: retakes procs from syscalls and polls the network when nobody has for 10 ms. */
static void sysmon_step(tg_sim *s, tg_m *m) {
    bool did = false;
    uint64_t now = m->clock;
    for (int i = 0; i < s->procs; i++) {
        tg_p *p = &s->ps[i];
        if (p->status != PS_SYSCALL) continue;
        uint64_t in = now > p->syscall_t ? now - p->syscall_t : 0;
        if (in < US(20)) continue;
        if (!runq_len(p) && (s->nspinning || idle_p(s) >= 0) && in < MSEC(10)) continue;
        e_proc_steal(s, m, i);
        handoff(s, i, m->clock);
        did = true;
    }
    if (now - s->last_netpoll > MSEC(10) && tw_top(&s->netready) <= now) {
        int n = 0;
        while (n < 64 && tw_top(&s->netready) <= m->clock) {
            int32_t gi = tw_pop(&s->netready);
            unblock_raw(s, m, gi, -1);
            grq_put(s, gi);
            n++;
        }
        s->last_netpoll = m->clock;
        wakep(s, m->clock);
        did = true;
    }
    if (did) {
        s->sysmon_delay = US(20);
        s->sysmon_idle = 0;
    } else if (++s->sysmon_idle > 50 && s->sysmon_delay < MSEC(10)) {
        s->sysmon_delay *= 2;
    }
    m->clock = umax(now, m->last_t) + s->sysmon_delay;
}

static void step(tg_sim *s, tg_m *m) {
    switch (m->state) {
    case MS_WAKE:
        wake_step(s, m);
        break;
    case MS_SCHED:
        sched_step(s, m);
        break;
    case MS_SYSCALL:
        syscall_exit(s, m);
        break;
    case MS_NETPOLL:
        netpoll_step(s, m);
        break;
    case MS_SYSMON:
        sysmon_step(s, m);
        break;
    default:
        tg_die("internal: stepping a parked thread");
    }
    if (m->state == MS_PARKED)
        m_unschedule(s, m->idx);
    else
        m_schedule(s, m->idx);
}

/* ---- the process as tracing starts ---- */

static int32_t pre_g(tg_sim *s, uint8_t role, uint8_t path, uint32_t reason_cat, int wake,
                     uint64_t wake_t) {
    int32_t gi = g_new(s, role, path);
    tg_g *g = GP(gi);
    g->status = GS_WAITING;
    g->wake = (uint8_t)wake;
    g->bstk = tg_pick(s, (int)reason_cat, path, g->variant) + 1;
    if (wake == W_TIMER) tw_push(&s->timers, wake_t, gi);
    if (wake == W_NET) tw_push(&s->netready, wake_t, gi);
    return gi;
}

static void populate(tg_sim *s) {
    uint64_t t0 = s->t0;
    pre_g(s, R_IDLE, PATH_MAIN, SK_CHANRECV, W_NONE, 0); /* main: waits for a signal */
    pre_g(s, R_IDLE, PATH_RUNTIME, SK_PARK, W_NONE, 0);  /* forcegc helper */
    s->sweeper_g = pre_g(s, R_SWEEPER, PATH_RUNTIME, SK_PARK, W_GC, 0);
    pre_g(s, R_SCAVENGER, PATH_RUNTIME, SK_SLEEP, W_TIMER, t0 + MSEC(3));
    pre_g(s, R_IDLE, PATH_RUNTIME, SK_PARK, W_NONE, 0); /* finalizer */
    s->next_goid += 10;
    for (int i = 0; i < s->procs; i++)
        s->ps[i].gcw = pre_g(s, R_GCWORKER, PATH_RUNTIME, SK_PARK, W_GC, 0);
    s->next_goid += 20;
    s->accept_g = pre_g(s, R_ACCEPT, PATH_ACCEPT, SK_NET_ACCEPT, W_NET, t0 + US(200));
    static const uint64_t periods[] = {MSEC(1),  MSEC(2),   MSEC(5),   MSEC(10),  MSEC(25),
                                       MSEC(50), MSEC(100), MSEC(250), MSEC(1000)};
    for (int i = 0; i < 12 + s->procs; i++) {
        uint64_t period = periods[tg_below(&s->rng, sizeof periods / sizeof *periods)];
        int32_t gi = pre_g(s, R_TICKER, PATH_TICKER, SK_SLEEP, W_TIMER,
                           t0 + 1 + tg_below(&s->rng, (uint32_t)period));
        GP(gi)->period = period;
    }
    s->ndisk = 2;
    for (uint32_t i = 0; i < s->ndisk; i++)
        s->disk_g[i] = pre_g(s, R_DISK, PATH_DISK, SK_CHANRECV, W_PEER, 0);
    s->capidle_workers = 8u * (uint32_t)s->procs;
    s->idle_workers = tg_xmalloc(s->capidle_workers * sizeof *s->idle_workers);
    for (int i = 0; i < 4 * s->procs; i++)
        s->idle_workers[s->nidle_workers++] =
            pre_g(s, R_WORKER, PATH_WORKER, SK_CHANRECV, W_PEER, 0);
    static const uint8_t leaked[] = {SK_PARK, SK_SELECT, SK_CHANRECV, SK_COND, SK_CHANSEND};
    for (int i = 0; i < 40; i++) {
        int32_t gi = pre_g(s, R_IDLE, (uint8_t)tg_below(&s->rng, 3), leaked[i % 5], W_NONE, 0);
        GP(gi)->sigcat = leaked[i % 5];
    }
    /* Goroutine IDs are handed out in sequence for the life of the process: a service that has
     * been up for days, creating tens of thousands of goroutines a second, is in the billions.
     * Its connections were opened recently. */
    uint64_t uptime = s->t0 / TG_FREQ;
    s->next_goid += uptime * tg_range(&s->rng, 8000, 20000);
    for (uint32_t i = 0; i < s->target_conns; i++) {
        s->next_goid += tg_below(&s->rng, 40);
        int32_t gi;
        uint32_t r = tg_below(&s->rng, 100);
        if (r < 3) {
            /* Runnable: the request has arrived. */
            gi = g_new(s, R_HANDLER, PATH_HANDLER);
            GP(gi)->status = GS_RUNNABLE;
            grq_put(s, gi);
        } else if (r < 6) {
            /* In the middle of a request that began before tracing (its task and region begin
             * are not in the trace): waiting for the database. */
            gi = pre_g(s, R_HANDLER, PATH_HANDLER, SK_NET_BACKEND, W_NET, t0 + lognorm(s, US(600)));
            tg_g *g = GP(gi);
            g->phase = HP_BACKEND_DONE;
            g->task = s->next_task - 1 - tg_below(&s->rng, 5000);
            g->nregions = 2;
            g->rg_task[0] = g->rg_task[1] = g->task;
            g->rg_name[0] = S_RG_HANDLER;
            g->rg_name[1] = S_RG_DBQUERY;
            g->plan = make_plan(s);
        } else {
            gi = pre_g(s, R_HANDLER, PATH_HANDLER, SK_NET_READ, W_NET, t0 + expo(s, s->think_mean));
        }
        tg_g *g = GP(gi);
        if (g->phase == HP_NEW) g->phase = HP_REQ;
        g->reqs_left = 1 + (uint32_t)expo(s, 200);
        s->conns++;
    }
    /* --idle: connections that stay quiet for the whole trace (keep-alives, websockets), each
     * with a status in every generation and nothing else. Last, so that without them the
     * workload's random draws are what they were. */
    for (uint32_t i = 0; i < s->idle; i++) {
        s->next_goid += tg_below(&s->rng, 40);
        pre_g(s, R_IDLE, PATH_HANDLER, SK_NET_READ, W_NONE, 0);
    }
}

/* runtime/trace.Start, called from the pprof handler: stop the world, announce every proc. */
static void start_trace(tg_sim *s) {
    uint32_t m0 = m_new(s);
    uint32_t smi = m_new(s);
    for (int i = 0; i < 2 * s->procs; i++) m_new(s);
    for (uint32_t i = 2; i < s->nms; i++) s->idle_m[s->nidle_m++] = i;
    tg_m *sm = s->ms[smi];
    sm->state = MS_SYSMON;
    sm->clock = s->t0 + US(20);
    m_schedule(s, smi);

    s->next_goid += tg_range(&s->rng, 100, 5000);
    int32_t tr = g_new(s, R_TRACER, PATH_HANDLER);
    tg_m *m = s->ms[m0];
    tg_g *g = GP(tr);
    g->status = GS_RUNNING;
    g->m = (int32_t)m0;
    m->g = tr;
    m->p = 0;
    m->ctx_gen = 0;
    s->ps[0].status = PS_RUNNING;
    s->nfree_p--;
    s->ps[0].m = (int32_t)m0;
    m->clock = s->t0 + 5;
    m->run_t = m->clock;
    uint64_t t = ue(s, m, 1);
    tg_ev(s, m, t, TDX_EV_PROCS_CHANGE, 2, (uint64_t)s->procs, stk(s, t, SK_PROCS, g), 0, 0);
    t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_STW_BEGIN, 2, str(s, t, S_STW_TRACE), stk(s, t, SK_STW_TRACE, g), 0, 0);
    t = ue(s, m, 2);
    tg_ev(s, m, t, TDX_EV_HEAP_GOAL, 1, s->heap_goal, 0, 0, 0);
    t++;
    for (int i = 1; i < s->procs; i++) t = proc_status(s, m, (uint32_t)i, t + 1, 1, PS_IDLE);
    m->clock = t;
    t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_PROCS_CHANGE, 2, (uint64_t)s->procs, stk(s, t, SK_PROCS, g), 0, 0);
    t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_STW_END, 0, 0, 0, 0, 0);
    t = ue(s, m, small_dt(s));
    tg_ev(s, m, t, TDX_EV_HEAP_ALLOC, 1, s->heap_alloc, 0, 0, 0);
    m->clock += US(20);
    g_block(s, m, S_SLEEP, SK_SLEEP, W_NONE, 0);
    m_schedule(s, m0);
    for (int i = 1; i < s->procs; i++) startm(s, i, m->clock, false);
}

void tg_sim_init(tg_sim *s) {
    for (int i = 0; i < 1024; i++) {
        double q = (i + 0.5) / 1024;
        ln_tab[i] = (uint32_t)(exp(0.9 * norm_inv(q)) * 65536.0);
        exp_tab[i] = (uint32_t)(-log(1 - q) * 65536.0);
    }
    s->rng.s = s->seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
    tg_code_init(s);
    tg_code_seal(s);
    /* Ticks since boot of a machine up for a couple of weeks. */
    s->t0 = 20000000000000ull + tg_rand(&s->rng) % 10000000000000ull;
    s->gen = 1;
    s->gen_start = s->t0;
    s->gen_next = s->t0 + s->gen_len;
    s->gen_next2 = s->gen_next + s->gen_len;
    s->tab[1].gen = 1;
    s->tab[1].first_t = s->t0;
    s->tab[0].gen = 2;
    s->mono0 = s->t0 * 64 + 17;
    s->wall0 = (1740000000ull + tg_below(&s->rng, 30000000)) * 1000000000ull +
               tg_below(&s->rng, 1000000000);

    s->maxms = 3u * (uint32_t)s->procs + 2;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): the elements are pointers */
    s->ms = tg_xcalloc(s->maxms + 1, sizeof *s->ms);
    s->step_heap = tg_xcalloc(s->maxms + 1, sizeof *s->step_heap);
    s->idle_m = tg_xcalloc(s->maxms + 1, sizeof *s->idle_m);
    s->ps = tg_xcalloc((size_t)s->procs, sizeof *s->ps);
    for (int i = 0; i < s->procs; i++) {
        s->ps[i].status = PS_IDLE;
        s->nfree_p++;
        s->ps[i].m = -1;
        s->ps[i].runnext = -1;
    }
    s->capgs = 16384;
    s->gs = tg_xmalloc(s->capgs * sizeof *s->gs);
    s->gfree = tg_xmalloc(s->capgs * sizeof *s->gfree);
    s->grq_cap = 1024;
    s->grq = tg_xmalloc(s->grq_cap * sizeof *s->grq);
    s->netpoll_m = -1;
    s->sysmon_delay = US(20);
    s->next_tid = 1000 + tg_below(&s->rng, 3000000);
    s->next_goid = 1;
    /* Task IDs likewise count every request the process ever traced or served. */
    s->next_task = (s->t0 / TG_FREQ) * tg_range(&s->rng, 10000, 30000);
    s->heap_live =
        ((1600ull << 20) * (uint64_t)s->procs / 8 + tg_below(&s->rng, 400u << 20)) & ~7ull;
    s->heap_goal = s->heap_live * 2;
    s->gc_trigger = s->heap_goal - s->heap_goal / 10;
    s->heap_alloc =
        s->heap_live + ((s->heap_goal - s->heap_live) * tg_below(&s->rng, 80) / 100 & ~7ull);
    s->target_conns = 180u * (uint32_t)s->procs;
    s->think_mean = MSEC(50);
    populate(s);
    s->created = 0; /* count only goroutines created while tracing */
}

void tg_sim_run(tg_sim *s) {
    tg_gen_begin(s);
    start_trace(s);
    uint32_t n = 0;
    for (;;) {
        tg_m *m = s->ms[s->step_heap[0].mi];
        if (m->clock >= s->gen_next) {
            tg_gen_write(s, false);
            if (s->written + tg_pending_bytes(s) >= s->target) break;
            continue;
        }
        step(s, m);
        if ((++n & 127) == 0 && s->written + tg_pending_bytes(s) >= s->target) break;
    }
    tg_gen_write(s, true);
}
